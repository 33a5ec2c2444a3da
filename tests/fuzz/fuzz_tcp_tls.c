/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tcp_tls.c -- libFuzzer target of the TLS 1.3 session layer under
 * the tcp provider's frames (src/transport/tcp/tcp_tls.c), server side.
 * The first input byte picks where the rest goes:
 *   0: raw bytes to a TLS endpoint before any handshake (a ClientHello or
 *      anything else): pmrep_ep_next_conn_req must never hand out a
 *      request (no PSK, no session), and must drop the socket in bounded
 *      time without crashing;
 *   1: a real client completes the handshake (the harness's own OpenSSL
 *      client with the PSK) and a valid HELLO inside TLS, the application
 *      accepts; then the rest goes raw onto the socket (forged, truncated,
 *      garbage TLS records under the session): the conn must end (LOST /
 *      CLOSED) in bounded time, its cause 0 or PMREP_E_TLS;
 *   2: as 1, but the rest goes through the session (valid records whose
 *      plaintext is fuzzed frames): the conn ends the same way.
 * The end of the input half-closes the socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <pmrep/transport.h>
#include "transport/tcp/tcp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define END_MS 5000

static struct pmrep_peer *peer;
static struct pmrep_ep *ep;
static char port[16];
static struct pmrep_conn_cfg *cfg;
static SSL_CTX *cctx;
static const uint8_t psk[32] = "fuzz-psk-0123456789-abcdefghijkl";
static const char identity[] = "fuzz client";

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", \
	__FILE__, __LINE__, #x, errno); abort(); } } while (0)

static int
find(void *arg, const uint8_t *id, size_t len, const char *local,
		uint8_t *out, size_t *out_len)
{
	(void) arg;
	(void) local;
	if (len != strlen(identity) || memcmp(id, identity, len) != 0)
		return -1;
	memcpy(out, psk, sizeof(psk));
	*out_len = sizeof(psk);
	return 0;
}

/* the harness's client: offers the PSK for TLS_AES_128_GCM_SHA256 */
static int
use_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
		SSL_SESSION **sess)
{
	static const unsigned char suite[2] = { 0x13, 0x01 };
	*sess = NULL;
	if (md != NULL && EVP_MD_get_type(md) != NID_sha256)
		return 1;
	SSL_SESSION *s = SSL_SESSION_new();
	CHECK(s != NULL);
	CHECK(SSL_SESSION_set1_master_key(s, psk, sizeof(psk)));
	CHECK(SSL_SESSION_set_cipher(s, SSL_CIPHER_find(ssl, suite)));
	CHECK(SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION));
	*id = (const unsigned char *)identity;
	*idlen = strlen(identity);
	*sess = s;
	return 1;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	pmrep_log_set_threshold(getenv("PMREP_FUZZ_LOG") ? PMREP_LOG_DEBUG :
			PMREP_LOG_DISABLED);
	CHECK(pmrep_peer_new_tcp(&peer) == 0);
	CHECK(pmrep_ep_listen(peer, "127.0.0.1", "0", &ep) == 0);
	uint16_t p;
	CHECK(pmrep_ep_get_port(ep, &p) == 0);
	snprintf(port, sizeof(port), "%u", p);
	CHECK(pmrep_conn_cfg_new(&cfg) == 0);
	/* the handshake of a pending socket (and its HELLO) must finish
	 * within this, under ASan too; the conn's liveness is its 500 ms floor */
	CHECK(pmrep_conn_cfg_set_timeout(cfg, 1000) == 0);
	CHECK(pmrep_conn_cfg_set_tls_psk_find(cfg, find, NULL) == 0);
	cctx = SSL_CTX_new(TLS_client_method());
	CHECK(cctx != NULL);
	CHECK(SSL_CTX_set_min_proto_version(cctx, TLS1_3_VERSION));
	SSL_CTX_set_psk_use_session_callback(cctx, use_cb);
	return 0;
}

static void
drain(int s)
{
	uint8_t sink[65536];
	while (recv(s, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
}

/* write all of buf raw (non-blocking socket), dropping what comes back */
static void
send_raw(int s, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		struct pollfd p = { .fd = s, .events = POLLOUT | POLLIN };
		int r = poll(&p, 1, END_MS);
		if (r < 0 && errno == EINTR)
			continue;
		CHECK(r == 1);
		if (p.revents & POLLIN)
			drain(s);
		if (p.revents & (POLLERR | POLLHUP))
			return;
		if (!(p.revents & POLLOUT))
			continue;
		ssize_t n = send(s, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static int
dial(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	CHECK(s >= 0);
	/* half-closes leave TIME_WAIT: spread over the 127/8 sources */
	static unsigned runs;
	struct sockaddr_in src = { .sin_family = AF_INET };
	src.sin_addr.s_addr = htonl(0x7f000001u + (runs++ % 250) * 256);
	CHECK(bind(s, (struct sockaddr *)&src, sizeof(src)) == 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)atoi(port));
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		CHECK(errno == EINPROGRESS || errno == EINTR);
		struct pollfd p = { .fd = s, .events = POLLOUT };
		while (poll(&p, 1, END_MS) < 0)
			CHECK(errno == EINTR);
	}
	return s;
}

/* mode 0: bytes before any handshake never make a request */
static void
before_handshake(const uint8_t *in, size_t size)
{
	int s = dial();
	send_raw(s, in, size);
	shutdown(s, SHUT_WR);
	for (int i = 0; i < END_MS / 5; i++) {
		struct pmrep_conn_req *req = NULL;
		int r = pmrep_ep_next_conn_req(ep, cfg, &req);
		CHECK(r != 0);		/* nobody holds the PSK: never a request */
		uint8_t b[4096];
		ssize_t n = recv(s, b, sizeof(b), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			close(s);
			return;	/* the endpoint dropped it */
		}
		struct pollfd p = { .fd = s, .events = POLLIN };
		(void) poll(&p, 1, 5);
	}
	CHECK(!"the endpoint kept a socket that sent garbage");
}

/* modes 1, 2: a session, an accepted conn, then the input */
static void
after_handshake(const uint8_t *in, size_t size, bool raw)
{
	int s = dial();
	SSL *ssl = SSL_new(cctx);
	CHECK(ssl != NULL && SSL_set_fd(ssl, s));
	SSL_set_connect_state(ssl);
	struct pmrep_conn_req *req = NULL;
	int r = 0, steps = 0;
	/* both ends of the handshake in this thread, in turns */
	while ((r = SSL_do_handshake(ssl)) != 1) {
		int e = SSL_get_error(ssl, r);
		CHECK(e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE);
		CHECK(pmrep_ep_next_conn_req(ep, cfg, &req) == PMREP_E_NO_EVENT);
		struct pollfd p = { .fd = s, .events = POLLIN };
		(void) poll(&p, 1, 5);
		CHECK(++steps < END_MS / 5);
	}
	struct tcp_frame h;
	memset(&h, 0, sizeof(h));
	h.type = TCP_WIRE_HELLO;
	h.magic = TCP_WIRE_MAGIC;
	h.version = TCP_WIRE_VERSION;
	uint8_t hb[TCP_WIRE_HDR_MAX];
	size_t hn = tcp_wire_encode(&h, hb);
	size_t w = 0;
	while (SSL_write_ex(ssl, hb, hn, &w) != 1) {
		CHECK(++steps < END_MS / 5);
		(void) pmrep_ep_next_conn_req(ep, cfg, &req);
		struct pollfd p = { .fd = s, .events = POLLOUT };
		(void) poll(&p, 1, 5);
	}
	for (;;) {
		r = pmrep_ep_next_conn_req(ep, cfg, &req);
		if (r == 0)
			break;
		CHECK(r == PMREP_E_NO_EVENT);
		CHECK(++steps < END_MS / 5);
		struct pollfd p = { .fd = s, .events = POLLIN };
		(void) poll(&p, 1, 5);
	}
	struct pmrep_conn *conn = NULL;
	CHECK(pmrep_conn_req_connect(&req, NULL, &conn) == 0);

	if (raw) {
		send_raw(s, in, size);
	} else {
		for (size_t off = 0; off < size; ) {
			size_t n = 0;
			if (SSL_write_ex(ssl, in + off, size - off, &n) == 1) {
				off += n;
				continue;
			}
			int e = SSL_get_error(ssl, 0);
			if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ)
				break;	/* the conn ended: fine */
			drain(s);
			struct pollfd p = { .fd = s, .events = POLLOUT };
			(void) poll(&p, 1, 5);
			CHECK(++steps < 4 * END_MS);
		}
	}
	shutdown(s, SHUT_WR);

	/* the end comes, once, in bounded time */
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	for (int i = 0; i < END_MS / 10; i++) {
		drain(s);
		int ret = pmrep_conn_wait_event(conn, 10, &ev);
		if (ret == 0 && ev != PMREP_CONN_ESTABLISHED)
			break;
		CHECK(ret == 0 || ret == PMREP_E_TIMEOUT);
	}
	CHECK(ev == PMREP_CONN_LOST || ev == PMREP_CONN_CLOSED);
	int cause = -1;
	CHECK(pmrep_conn_get_failure(conn, &cause) == 0);
	CHECK(cause == 0 || cause == PMREP_E_TLS);
	CHECK(pmrep_conn_delete(&conn) == 0);
	SSL_free(ssl);
	ERR_clear_error();
	close(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case 0:
		before_handshake(data + 1, size - 1);
		break;
	case 1:
		after_handshake(data + 1, size - 1, true);
		break;
	default:
		after_handshake(data + 1, size - 1, false);
		break;
	}
	return 0;
}
