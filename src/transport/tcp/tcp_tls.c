/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_tls.c -- the tcp provider's byte stream inside TLS 1.3 with an
 * external PSK (OpenSSL libssl). One SSL object per socket; it does not
 * own the socket (the conn / endpoint closes it as before).
 *
 * Where it sits: between the frames and the socket. The connection
 * handshake (HELLO / ACCEPT) and every frame after it are TLS application
 * data; nothing of pmrep's own goes in the clear. The active side runs the
 * TLS handshake in its connect attempt (the progress thread, before the
 * conn is open: no application turn runs yet), the passive side in
 * pmrep_ep_next_conn_req (the endpoint's pending sockets, driven by the
 * endpoint fd's readiness). After that every SSL_read / SSL_write happens
 * in a progress turn, i.e. under conn->prog_lock (whether the progress
 * thread or an application thread runs the turn): one SSL object is never
 * used by two threads at once.
 *
 * Non-blocking: the socket stays O_NONBLOCK; a BIO of our own does the
 * socket calls (send with MSG_NOSIGNAL: application threads run turns and
 * must never get SIGPIPE; recv), so WANT_READ / WANT_WRITE map to the
 * provider's EAGAIN. Writes: the frames of a batch are gathered into a
 * staging buffer (at most TLS_STAGE bytes) that SSL_write encrypts; once
 * handed to SSL_write the bytes count as sent (the caller's batch moves
 * on: an MR may be deregistered meanwhile, the copy is ours), and until
 * the staging buffer is fully written (SSL_write retried with the same
 * buffer, as OpenSSL requires after WANT_WRITE) the next write returns
 * EAGAIN and tcp_tls_tx_pending() is true (the conn waits for POLLOUT).
 * Reads (with read-ahead: one recv takes all the socket holds, up to
 * TLS_STAGE bytes): SSL_read until the caller's buffer is full or OpenSSL
 * holds nothing more, decrypted or not (SSL_has_pending), so a short
 * read means what is left is in the kernel's socket buffer, where poll
 * sees it; a full one makes the conn read again (rx_more), as with its
 * own receive buffer.
 *
 * Key exchange psk_dhe_ke only (SSL_OP_ALLOW_NO_DHE_KEX is never set);
 * no session tickets (no resumption PSKs), no 0-RTT, no certificates: a
 * client that offers no PSK we know fails the handshake.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "tcp.h"
#include "transport/common.h"

#define TLS_STAGE (64 * 1024)		/* plaintext bytes per SSL_write */
#define TLS_OBUF (TLS_STAGE + 4096)	/* its records (and slack) per send */
#define TLS_SUITES "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"

struct tcp_tls {
	SSL *ssl;
	int fd;
	bool server;
	uint64_t wire_out;		/* bytes the session sent */
	bool done;			/* handshake complete */
	atomic_int *cause;		/* the conn's: PMREP_E_TLS on failure */
	/* client */
	uint8_t psk[PMREP_TLS_PSK_MAX];
	size_t psk_len;
	char identity[PMREP_TLS_IDENTITY_MAX + 1];
	/* server */
	pmrep_tls_psk_find_fn *find;
	void *find_arg;
	char local[INET6_ADDRSTRLEN + 8];
	struct tcp_ch_cache *ch;	/* the endpoint's (replays) */
	size_t rx_unproven;		/* bytes read before the binder verified */
	bool proven;			/* binder verified, ClientHello fresh */
	/* write staging */
	uint8_t *wbuf;
	size_t wlen;
	/* the records OpenSSL wrote, sent with one send() per SSL_write (not
	 * one per 16 KiB record: each would wake the peer); [ooff, olen) */
	uint8_t *obuf;
	size_t ooff, olen;
	bool hs_ok;			/* SSL_do_handshake returned 1 */
};

static SSL_CTX *ctx_client, *ctx_server;
static BIO_METHOD *bio_meth;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------------ BIO */

/* send what the output buffer holds: 0 all out, -1 with errno (EAGAIN:
 * the rest stays for POLLOUT) */
static int
obuf_flush(struct tcp_tls *t)
{
	while (t->ooff < t->olen) {
		ssize_t n = send(t->fd, t->obuf + t->ooff, t->olen - t->ooff,
				MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			t->ooff += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EWOULDBLOCK)
			errno = EAGAIN;
		if (n == 0)
			errno = EPIPE;
		return -1;
	}
	t->ooff = t->olen = 0;
	return 0;
}

/* OpenSSL's records go to the output buffer; a full one is sent first */
static int
bio_write(BIO *b, const char *buf, int len)
{
	struct tcp_tls *t = BIO_get_data(b);
	BIO_clear_retry_flags(b);
	if (t->obuf == NULL && (t->obuf = malloc(TLS_OBUF)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	if (t->olen + (size_t)len > TLS_OBUF) {
		if (obuf_flush(t) != 0) {
			if (errno == EAGAIN)
				BIO_set_retry_write(b);
			return -1;
		}
		if ((size_t)len > TLS_OBUF)
			len = TLS_OBUF;	/* OpenSSL writes the rest next */
	}
	memcpy(t->obuf + t->olen, buf, (size_t)len);
	t->olen += (size_t)len;
	t->wire_out += (uint64_t)len;
	return len;
}

static int
bio_read(BIO *b, char *buf, int len)
{
	struct tcp_tls *t = BIO_get_data(b);
	BIO_clear_retry_flags(b);
	/* a server reads at most TCP_TLS_CH_MAX bytes of a client that has
	 * proven nothing yet: what OpenSSL parses before the binder check is
	 * bounded (a ClientHello is one record of a few hundred bytes) */
	bool capped = t->server && !t->proven;
	if (capped) {
		if (t->rx_unproven >= TCP_TLS_CH_MAX) {
			PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: a client sent more than %d bytes before its PSK binder verified: refused",
					TCP_TLS_CH_MAX);
			errno = EMSGSIZE;
			return -1;
		}
		if ((size_t)len > TCP_TLS_CH_MAX - t->rx_unproven)
			len = (int)(TCP_TLS_CH_MAX - t->rx_unproven);
	}
	for (;;) {
		ssize_t n = recv(t->fd, buf, (size_t)len, MSG_DONTWAIT);
		if (n >= 0) {
			if (capped)
				t->rx_unproven += (size_t)n;
			return (int)n;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			BIO_set_retry_read(b);
		return -1;
	}
}

static long
bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void) num;
	(void) ptr;
	if (cmd != BIO_CTRL_FLUSH)
		return 0;
	struct tcp_tls *t = BIO_get_data(b);
	BIO_clear_retry_flags(b);
	if (obuf_flush(t) == 0)
		return 1;
	if (errno == EAGAIN)
		BIO_set_retry_write(b);
	return 0;
}

static int
bio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

/* ------------------------------------------------------------ PSK glue */

/* a TLS 1.3 session carrying `psk` for TLS_AES_128_GCM_SHA256 (hash
 * SHA-256: any SHA-256 suite may be negotiated with it) */
static SSL_SESSION *
psk_session(SSL *ssl, const uint8_t *psk, size_t len)
{
	static const unsigned char aes128gcm[2] = { 0x13, 0x01 };
	const SSL_CIPHER *cipher = SSL_CIPHER_find(ssl, aes128gcm);
	SSL_SESSION *s = SSL_SESSION_new();
	if (cipher == NULL || s == NULL)
		goto err;
	if (!SSL_SESSION_set1_master_key(s, psk, len) ||
			!SSL_SESSION_set_cipher(s, cipher) ||
			!SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION))
		goto err;
	return s;
err:
	SSL_SESSION_free(s);
	PMREP_LOG_ERR("TLS: cannot make the PSK session");
	return NULL;
}

static int
use_session_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id,
		size_t *idlen, SSL_SESSION **sess)
{
	struct tcp_tls *t = SSL_get_app_data(ssl);
	*sess = NULL;
	/* after a HelloRetryRequest the hash is fixed: ours is SHA-256 */
	if (md != NULL && EVP_MD_get_type(md) != NID_sha256)
		return 1;
	SSL_SESSION *s = psk_session(ssl, t->psk, t->psk_len);
	if (s == NULL)
		return 0;
	*id = (const unsigned char *)t->identity;
	*idlen = strlen(t->identity);
	*sess = s;
	return 1;
}

static int
find_session_cb(SSL *ssl, const unsigned char *identity, size_t identity_len,
		SSL_SESSION **sess)
{
	struct tcp_tls *t = SSL_get_app_data(ssl);
	*sess = NULL;
	if (identity_len > PMREP_TLS_IDENTITY_MAX ||
			memchr(identity, '\0', identity_len) != NULL) {
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused a PSK identity of %zu bytes (at most %d, no NUL)",
				identity_len, PMREP_TLS_IDENTITY_MAX);
		return 0;
	}
	uint8_t psk[PMREP_TLS_PSK_MAX];
	size_t len = 0;
	int r = t->find(t->find_arg, identity, identity_len, t->local, psk,
			&len);
	if (r != 0 || len < PMREP_TLS_PSK_MIN || len > PMREP_TLS_PSK_MAX) {
		OPENSSL_cleanse(psk, sizeof(psk));
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: the client's PSK identity (%zu bytes) is not accepted here (%s)",
				identity_len, t->local);
		return 0;	/* the handshake fails */
	}
	SSL_SESSION *s = psk_session(ssl, psk, len);
	OPENSSL_cleanse(psk, sizeof(psk));
	if (s == NULL)
		return 0;
	/* the identity accepted (find refuses longer ones and NULs): the
	 * application's to check against what the request selects */
	memcpy(t->identity, identity, identity_len);
	t->identity[identity_len] = '\0';
	*sess = s;
	return 1;
}

/* the entry of `random` when it is live, else -1; *free_at: a free slot
 * on its probe path (-1: none) */
static int
ch_cache_find(const struct tcp_ch_cache *c, const uint8_t random[32],
		long long now, int *free_at)
{
	unsigned h = ((unsigned)random[0] | (unsigned)random[1] << 8 |
			(unsigned)random[2] << 16) % TCP_CH_SLOTS;
	*free_at = -1;
	for (unsigned i = 0; i < TCP_CH_PROBE; i++) {
		unsigned k = (h + i) % TCP_CH_SLOTS;
		bool live = c->e[k].until > now;
		if (live && memcmp(c->e[k].random, random, 32) == 0)
			return (int)k;
		if (!live && *free_at < 0)
			*free_at = (int)k;
	}
	return -1;
}

bool
tcp_ch_cache_seen(const struct tcp_ch_cache *c, const uint8_t random[32],
		long long now)
{
	int free_at;
	return ch_cache_find(c, random, now, &free_at) >= 0;
}

int
tcp_ch_cache_add(struct tcp_ch_cache *c, const uint8_t random[32],
		long long now)
{
	int free_at;
	if (ch_cache_find(c, random, now, &free_at) >= 0)
		return 1;
	if (free_at < 0)
		return -1;
	memcpy(c->e[free_at].random, random, 32);
	c->e[free_at].until = now + TCP_CH_KEEP_MS;
	return 0;
}

/*
 * The server's first look at a ClientHello, before any PSK or binder
 * work: one whose random was proven here before is a replayed capture
 * (refused at once, for the cost of a look-up).
 */
static int
client_hello_cb(SSL *ssl, int *al, void *arg)
{
	(void) arg;
	struct tcp_tls *t = SSL_get_app_data(ssl);
	const unsigned char *random = NULL;
	if (SSL_client_hello_get0_random(ssl, &random) != 32) {
		*al = SSL_AD_DECODE_ERROR;
		return SSL_CLIENT_HELLO_ERROR;
	}
	if (t->ch != NULL && tcp_ch_cache_seen(t->ch, random, pmrep_now_ms())) {
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused a ClientHello seen before here (a replayed capture)");
		*al = SSL_AD_HANDSHAKE_FAILURE;
		return SSL_CLIENT_HELLO_ERROR;
	}
	return SSL_CLIENT_HELLO_SUCCESS;
}

/*
 * The server wrote its flight: OpenSSL accepted the ClientHello's PSK,
 * so its binder verified. Its random goes into the endpoint's cache; it
 * proves the key unless the random is there already (a copy processed
 * in the same turn) or the cache has no room. 0 proven, PMREP_E_TLS not.
 */
static int
ch_prove(struct tcp_tls *t)
{
	uint8_t random[32];
	if (SSL_get_client_random(t->ssl, random, sizeof(random)) != sizeof(random))
		return PMREP_E_TLS;
	int added = t->ch != NULL ? tcp_ch_cache_add(t->ch, random,
			pmrep_now_ms()) : 0;
	if (added != 0) {
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused a ClientHello %s",
				added < 0 ? "while the ClientHello cache is full of live entries (busy)" :
				"seen before here (a replayed capture)");
		return PMREP_E_TLS;
	}
	t->proven = true;
	return 0;
}

/* ------------------------------------------------------------ contexts */

static SSL_CTX *
ctx_make(bool server)
{
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() :
			TLS_client_method());
	if (ctx == NULL)
		return NULL;
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
			!SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) ||
			!SSL_CTX_set_ciphersuites(ctx, TLS_SUITES)) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	/* no tickets, no resumption, no 0-RTT; never psk_ke (no DHE) */
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	SSL_CTX_clear_options(ctx, SSL_OP_ALLOW_NO_DHE_KEX);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_max_early_data(ctx, 0);
	/* non-blocking: a non-application record makes SSL_read return */
	SSL_CTX_clear_mode(ctx, SSL_MODE_AUTO_RETRY);
	/* read-ahead: one recv takes what the socket holds (not a record
	 * header and then its body); tcp_tls_recv returns short only when
	 * OpenSSL holds nothing more, so poll still sees what is left */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, TLS_STAGE);
	if (server) {
		(void) SSL_CTX_set_num_tickets(ctx, 0);
		SSL_CTX_set_psk_find_session_callback(ctx, find_session_cb);
		SSL_CTX_set_client_hello_cb(ctx, client_hello_cb, NULL);
	} else {
		SSL_CTX_set_psk_use_session_callback(ctx, use_session_cb);
	}
	return ctx;
}

static void
ctx_init(void)
{
	bio_meth = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
			"pmrep tcp socket");
	if (bio_meth == NULL || !BIO_meth_set_write(bio_meth, bio_write) ||
			!BIO_meth_set_read(bio_meth, bio_read) ||
			!BIO_meth_set_ctrl(bio_meth, bio_ctrl) ||
			!BIO_meth_set_create(bio_meth, bio_create))
		return;
	ctx_client = ctx_make(false);
	ctx_server = ctx_make(true);
}

/* ------------------------------------------------------------- errors */

/*
 * The failure of an SSL call that returned `r`: 0 the stream ended (EOF,
 * close_notify, or an EOF without it: as a plain socket's end), -1 a
 * socket error (errno), PMREP_E_TLS a TLS failure: a bad record (its
 * authentication tag did not verify: tampering), an alert, a handshake
 * that failed; logged, recorded as the conn's cause, errno = EPROTO.
 */
static int
tls_failure(struct tcp_tls *t, int r, const char *what)
{
	int e = SSL_get_error(t->ssl, r);
	unsigned long code = ERR_peek_error();
	if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SSL &&
			ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
		ERR_clear_error();
		errno = ECONNRESET;
		return 0;
	}
	if (e == SSL_ERROR_SYSCALL) {
		ERR_clear_error();
		if (errno == 0)
			errno = ECONNRESET;
		return -1;
	}
	char buf[256] = "unknown TLS error";
	if (code != 0)
		ERR_error_string_n(code, buf, sizeof(buf));
	ERR_clear_error();
	if (t->done)
		PMREP_LOG_ERR("TLS: %s: record authentication failed or protocol error (%s): the session ends",
				what, buf);
	else if (t->server)
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: handshake failed (%s): the client did not speak TLS, or offered a PSK identity / key not accepted here",
				buf);
	else
		PMREP_LOG_ERR("TLS: handshake failed (%s): the listener does not speak TLS, or does not accept our PSK (wrong key / identity)",
				buf);
	if (t->cause != NULL)
		atomic_store(t->cause, PMREP_E_TLS);
	errno = EPROTO;
	return PMREP_E_TLS;
}

/* ----------------------------------------------------------- the API */

int
tcp_tls_new(const struct pmrep_conn_cfg *cfg, int fd, bool server,
		struct tcp_tls **out)
{
	(void) pthread_once(&ctx_once, ctx_init);
	SSL_CTX *ctx = server ? ctx_server : ctx_client;
	if (ctx == NULL) {
		PMREP_LOG_ERR("TLS: OpenSSL could not make a TLS 1.3 context");
		return PMREP_E_TLS;
	}
	if (server ? cfg->tls_find == NULL : cfg->tls_psk_len == 0) {
		PMREP_LOG_ERR("TLS: on, but no %s configured",
				server ? "PSK find function (pmrep_conn_cfg_set_tls_psk_find)" :
				"PSK (pmrep_conn_cfg_set_tls_psk)");
		return PMREP_E_INVAL;
	}
	struct tcp_tls *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		PMREP_LOG_ERR("out of memory for a TLS session");
		return PMREP_E_NOMEM;
	}
	t->fd = fd;
	t->server = server;
	if (server) {
		t->find = cfg->tls_find;
		t->find_arg = cfg->tls_find_arg;
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		char host[INET6_ADDRSTRLEN] = "?";
		unsigned port = 0;
		bool v6 = false;
		if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
			if (ss.ss_family == AF_INET6) {
				struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
				/* an IPv4 client of a dual-stack listener dialed
				 * the IPv4 address: name it so */
				if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
					(void) inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12],
							host, sizeof(host));
				} else {
					(void) inet_ntop(AF_INET6, &a->sin6_addr, host,
							sizeof(host));
					v6 = true;
				}
				port = ntohs(a->sin6_port);
			} else {
				struct sockaddr_in *a = (struct sockaddr_in *)&ss;
				(void) inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
				port = ntohs(a->sin_port);
			}
		}
		snprintf(t->local, sizeof(t->local), v6 ? "[%s]:%u" : "%s:%u",
				host, port);
	} else {
		memcpy(t->psk, cfg->tls_psk, cfg->tls_psk_len);
		t->psk_len = cfg->tls_psk_len;
		memcpy(t->identity, cfg->tls_identity, sizeof(t->identity));
	}
	t->ssl = SSL_new(ctx);
	BIO *bio = bio_meth ? BIO_new(bio_meth) : NULL;
	if (t->ssl == NULL || bio == NULL) {
		BIO_free(bio);
		PMREP_LOG_ERR("TLS: out of memory for an SSL object");
		tcp_tls_free(t);
		return PMREP_E_NOMEM;
	}
	BIO_set_data(bio, t);
	SSL_set_bio(t->ssl, bio, bio);	/* the SSL owns the BIO, not the fd */
	SSL_set_app_data(t->ssl, t);
	if (server)
		SSL_set_accept_state(t->ssl);
	else
		SSL_set_connect_state(t->ssl);
	*out = t;
	return 0;
}

void
tcp_tls_names(const struct tcp_tls *t, char *identity, size_t id_len,
		char *local, size_t local_len)
{
	snprintf(identity, id_len, "%s", t->server && t->done ? t->identity : "");
	snprintf(local, local_len, "%s", t->server ? t->local : "");
}

void
tcp_tls_set_ch_cache(struct tcp_tls *t, struct tcp_ch_cache *ch)
{
	t->ch = ch;
}

bool
tcp_tls_proven(const struct tcp_tls *t)
{
	return t->server && t->proven;
}

void
tcp_tls_set_cause(struct tcp_tls *t, atomic_int *cause)
{
	t->cause = cause;
}

int
tcp_tls_handshake(struct tcp_tls *t, short *events)
{
	if (t->done)
		return 1;
	ERR_clear_error();
	int r = t->hs_ok ? 1 : SSL_do_handshake(t->ssl);
	int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(t->ssl, r);
	if (t->server && !t->proven && t->wire_out > 0 &&
			(e == SSL_ERROR_NONE || e == SSL_ERROR_WANT_READ ||
			 e == SSL_ERROR_WANT_WRITE) && ch_prove(t) != 0) {
		if (t->cause != NULL)
			atomic_store(t->cause, PMREP_E_TLS);
		t->olen = t->ooff = 0;	/* what is not sent of its flight: not */
		errno = EPROTO;
		return PMREP_E_TLS;
	}
	int saved = errno;
	/* what it wrote goes out first (an alert too, on a failure) */
	bool out_blocked = obuf_flush(t) != 0;
	bool out_failed = out_blocked && errno != EAGAIN;
	errno = saved;
	if (e == SSL_ERROR_NONE) {
		t->hs_ok = true;
		if (out_failed)
			return PMREP_E_CONN_LOST;
		if (out_blocked) {
			*events = POLLOUT;
			return 0;
		}
		t->done = true;
		/* the client's PSK is not needed any more */
		OPENSSL_cleanse(t->psk, sizeof(t->psk));
		return 1;
	}
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		if (out_failed)
			return PMREP_E_CONN_LOST;
		*events = e == SSL_ERROR_WANT_WRITE || out_blocked ? POLLOUT :
			POLLIN;
		return 0;
	}
	/* an end or a socket error mid-handshake: the caller retries or
	 * drops it like any connection failure */
	if (tls_failure(t, r, "handshake") != PMREP_E_TLS)
		return PMREP_E_CONN_LOST;
	if (t->server && t->wire_out == 0) {
		/* OpenSSL sends no alert for a first record that is not TLS
		 * at all: say it (a plaintext TLS alert, fatal,
		 * handshake_failure), so a plaintext pmrep client knows it
		 * met a TLS listener instead of retrying into a timeout */
		static const uint8_t alert[7] = { 21, 3, 3, 0, 2, 2, 40 };
		ssize_t n = send(t->fd, alert, sizeof(alert),
				MSG_NOSIGNAL | MSG_DONTWAIT);
		(void) n;
	}
	return PMREP_E_TLS;
}

bool
tcp_tls_done(const struct tcp_tls *t)
{
	return t->done;
}

ssize_t
tcp_tls_recv(struct tcp_tls *t, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		size_t n = 0;
		ERR_clear_error();
		int r = SSL_read_ex(t->ssl, (uint8_t *)buf + got, len - got, &n);
		if (r == 1) {
			got += n;
			if (!SSL_has_pending(t->ssl))
				break;
			continue;
		}
		int e = SSL_get_error(t->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			if (got > 0)
				break;
			errno = EAGAIN;
			return -1;
		}
		if (got > 0)
			break;	/* the failure shows on the next call */
		int f = tls_failure(t, r, "receive");
		int saved = errno;
		(void) obuf_flush(t);	/* OpenSSL's alert, best effort */
		errno = saved;
		return f == 0 ? 0 : -1;
	}
	if (t->olen > t->ooff) {
		/* OpenSSL answered something (a key update): send it */
		int saved = errno;
		(void) obuf_flush(t);
		errno = saved;
	}
	return (ssize_t)got;
}

/* push out what is taken: the output buffer, then the staging buffer
 * (SSL_write into the output buffer), then that: 0 nothing left, -1 with
 * errno (EAGAIN: the rest waits for POLLOUT) */
static int
stage_flush(struct tcp_tls *t)
{
	if (obuf_flush(t) != 0)
		return -1;
	if (t->wlen == 0)
		return 0;
	size_t n = 0;
	ERR_clear_error();
	int r = SSL_write_ex(t->ssl, t->wbuf, t->wlen, &n);
	if (r == 1) {
		t->wlen = 0;
		return obuf_flush(t);
	}
	int e = SSL_get_error(t->ssl, r);
	if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
		errno = EAGAIN;
		return -1;
	}
	if (tls_failure(t, r, "send") == 0)
		errno = EPIPE;
	return -1;
}

int
tcp_tls_flush(struct tcp_tls *t)
{
	if (stage_flush(t) == 0)
		return 0;
	return errno == EAGAIN ? 1 : -1;
}

bool
tcp_tls_tx_pending(const struct tcp_tls *t)
{
	return t->wlen > 0 || t->olen > t->ooff;
}

ssize_t
tcp_tls_sendv(struct tcp_tls *t, const struct iovec *iov, int iovcnt)
{
	if (stage_flush(t) != 0)
		return -1;
	if (t->wbuf == NULL) {
		t->wbuf = malloc(TLS_STAGE);
		if (t->wbuf == NULL) {
			PMREP_LOG_ERR("out of memory for a TLS send buffer");
			errno = ENOMEM;
			return -1;
		}
	}
	size_t k = 0;
	for (int i = 0; i < iovcnt && k < TLS_STAGE; i++) {
		size_t n = iov[i].iov_len < TLS_STAGE - k ? iov[i].iov_len :
			TLS_STAGE - k;
		memcpy(t->wbuf + k, iov[i].iov_base, n);
		k += n;
	}
	t->wlen = k;
	/* handed over: the bytes are ours now, whatever the socket says */
	if (stage_flush(t) != 0 && errno != EAGAIN)
		return -1;
	return (ssize_t)k;
}

int
tcp_tls_write_all(struct tcp_tls *t, const void *buf, size_t len,
		long long deadline_ms)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t n = tcp_tls_sendv(t, &iov, 1);
	if (n < 0 && errno != EAGAIN)
		return -errno;
	if (n >= 0 && (size_t)n < len)
		return -EMSGSIZE;	/* the callers' frames are small */
	if (n < 0) {
		/* nothing staged yet (an earlier record is stuck): not ours */
		return -EAGAIN;
	}
	while (tcp_tls_tx_pending(t)) {
		if (stage_flush(t) == 0)
			break;
		if (errno != EAGAIN)
			return -errno;
		int left = tcp_poll_ms(deadline_ms, pmrep_now_ms());
		if (left == 0)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = t->fd, .events = POLLOUT };
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

void
tcp_tls_send_now(struct tcp_tls *t, uint8_t type, uint32_t status)
{
	if (!t->done || tcp_tls_tx_pending(t))
		return;	/* no session yet, or mid-record: nothing can go */
	struct tcp_frame f;
	memset(&f, 0, sizeof(f));
	f.type = type;
	f.status = status;
	uint8_t hdr[TCP_WIRE_HDR_MAX];
	size_t n = tcp_wire_encode(&f, hdr);
	size_t w = 0;
	ERR_clear_error();
	if (SSL_write_ex(t->ssl, hdr, n, &w) == 1)
		(void) obuf_flush(t);
	ERR_clear_error();
}

void
tcp_tls_free(struct tcp_tls *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl);
	free(t->wbuf);
	free(t->obuf);
	OPENSSL_cleanse(t, sizeof(*t));
	free(t);
}

void
tcp_tls_wipe_cfg(struct pmrep_conn_cfg *cfg)
{
	OPENSSL_cleanse(cfg->tls_psk, sizeof(cfg->tls_psk));
	cfg->tls_psk_len = 0;
}
