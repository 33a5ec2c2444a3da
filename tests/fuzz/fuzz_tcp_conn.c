/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tcp_conn.c -- libFuzzer target of a live tcp connection's receive
 * side. Per input: a plain socket connects to a pmrep endpoint with a
 * valid HELLO, the application accepts (two receives pre-posted) and
 * posts one request of each kind toward the socket (seq 0..5), then the
 * input is streamed in as the peer's frames, the socket half-closes, and
 * the conn must come to its end (LOST / CLOSED) within a bound, with
 * every completion delivered and nothing touched outside the region.
 *
 * To let the fuzzer reach valid accesses, the harness rewrites the rkey
 * of a request frame that reads 0xaaaaaaaa into the region's rkey, and a
 * raddr whose high half reads 0xbbbbbbbb into region + its low half.
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

#include <pmrep/transport.h>
#include "common/wire.h"
#include "transport/tcp/tcp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define REGION (64 * 1024)
#define GUARD 4096	/* untouchable bytes on both sides of the region */
#define END_MS 5000

static struct pmrep_peer *peer;
static struct pmrep_ep *ep;
static char port[16];
static uint8_t *mem;		/* guard | region | guard */
static uint8_t *region;
static struct pmrep_mr_local *mr;
static uint32_t rkey;			/* mr's, from its descriptor */
static struct pmrep_mr_remote *rmt;	/* "the socket's" region: never valid */
static struct pmrep_conn_cfg *cfg;

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "%s:%d: %s (errno %d)\n", \
	__FILE__, __LINE__, #x, errno); abort(); } } while (0)

static int
persist_nothing(void *ctx, const void *ptr, size_t len)
{
	(void) ctx;
	/* the target calls it only inside the region */
	CHECK((const uint8_t *)ptr >= region &&
			(const uint8_t *)ptr + len <= region + REGION);
	return 0;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	CHECK(pmrep_peer_new_tcp(&peer) == 0);
	mem = calloc(1, REGION + 2 * GUARD);
	CHECK(mem != NULL);
	region = mem + GUARD;
	CHECK(pmrep_mr_reg(peer, region, REGION, PMREP_MR_USAGE_ALL, &mr) == 0);
	CHECK(pmrep_mr_set_persist_fn(mr, persist_nothing, NULL) == 0);
	uint8_t desc[PMREP_MR_DESC_SIZE];
	CHECK(pmrep_mr_get_descriptor(mr, desc) == 0);
	rkey = pmrep_get_le32(desc + 4);
	CHECK(pmrep_ep_listen(peer, "127.0.0.1", "0", &ep) == 0);
	uint16_t p;
	CHECK(pmrep_ep_get_port(ep, &p) == 0);
	snprintf(port, sizeof(port), "%u", p);

	uint8_t d[PMREP_MR_DESC_SIZE] = { 0 };
	pmrep_put_le16(d, 0x524d);
	d[2] = 1;
	d[3] = PMREP_PROVIDER_TCP;
	pmrep_put_le32(d + 4, 0x1234);
	pmrep_put_le64(d + 8, 0x100000);
	pmrep_put_le64(d + 16, 1 << 20);
	pmrep_put_le16(d + 24, PMREP_MR_USAGE_ALL);
	CHECK(pmrep_mr_remote_from_descriptor(d, sizeof(d), &rmt) == 0);

	CHECK(pmrep_conn_cfg_new(&cfg) == 0);
	CHECK(pmrep_conn_cfg_set_timeout(cfg, 50) == 0);
	CHECK(pmrep_conn_cfg_set_sq_size(cfg, 16) == 0);
	CHECK(pmrep_conn_cfg_set_cq_size(cfg, 64) == 0);
	return 0;
}

/* the documented offsets of rkey and raddr in request headers */
static void
fix_up(uint8_t *b, size_t size)
{
	size_t off = 0;
	while (off < size) {
		struct tcp_frame f;
		int r = tcp_wire_decode(b + off, size - off, &f);
		if (r <= 0)
			return;
		if (f.type >= TCP_WIRE_WRITE && f.type <= TCP_WIRE_FLUSH) {
			if (f.rkey == 0xaaaaaaaau)
				pmrep_put_le32(b + off + 12, rkey);
			if ((f.raddr >> 32) == 0xbbbbbbbbu)
				pmrep_put_le64(b + off + 16, (uintptr_t)region +
						(f.raddr & 0xffffffffu));
		}
		off += (size_t)r;
		if (f.payload_len > size - off)
			return;
		off += f.payload_len;
	}
}

/* libFuzzer's -timeout alarm (SIGALRM) interrupts blocking calls */
static void
connect_eintr(int s, const struct sockaddr_in *a)
{
	if (connect(s, (const struct sockaddr *)a, sizeof(*a)) == 0)
		return;
	CHECK(errno == EINTR);
	/* the connect goes on: wait for it to finish */
	struct pollfd p = { .fd = s, .events = POLLOUT };
	while (poll(&p, 1, END_MS) < 0)
		CHECK(errno == EINTR);
	int err = -1;
	socklen_t len = sizeof(err);
	CHECK(getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0);
}

static void
drain(int s)
{
	uint8_t sink[65536];
	while (recv(s, sink, sizeof(sink), MSG_DONTWAIT) > 0)
		;
}

/* write all of buf, reading (and dropping) what the conn sends meanwhile */
static void
send_all(int s, const uint8_t *buf, size_t len)
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
			return;		/* the conn gave up on us: fine */
		if (!(p.revents & POLLOUT))
			continue;
		ssize_t n = send(s, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static int
take_completions(struct pmrep_conn *conn)
{
	struct pmrep_cq *cq = NULL;
	CHECK(pmrep_conn_get_cq(conn, &cq) == 0);
	struct pmrep_completion c[16];
	int n, total = 0;
	while (pmrep_cq_get_completions(cq, c, 16, &n) == 0)
		total += n;
	return total;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *in = malloc(size ? size : 1);
	CHECK(in != NULL);
	memcpy(in, data, size);
	fix_up(in, size);

	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s >= 0);
	/* our half-close leaves the socket in TIME_WAIT: spread them over
	 * the 127/8 sources, each with its own ephemeral ports */
	static unsigned runs;
	struct sockaddr_in src = { .sin_family = AF_INET };
	src.sin_addr.s_addr = htonl(0x7f000001u + (runs++ % 250) * 256);
	CHECK(bind(s, (struct sockaddr *)&src, sizeof(src)) == 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)atoi(port));
	connect_eintr(s, &a);
	struct tcp_frame h;
	memset(&h, 0, sizeof(h));
	h.type = TCP_WIRE_HELLO;
	h.magic = TCP_WIRE_MAGIC;
	h.version = TCP_WIRE_VERSION;
	h.rnr_ms = 0;		/* a send without a receive fails at once */
	uint8_t hb[TCP_WIRE_HDR_MAX];
	size_t hn = tcp_wire_encode(&h, hb);
	send_all(s, hb, hn);

	struct pmrep_conn_req *req = NULL;
	CHECK(pmrep_ep_wait_conn_req(ep, cfg, END_MS, &req) == 0);
	CHECK(pmrep_conn_req_recv(req, mr, 0, 256, (void *)100) == 0);
	CHECK(pmrep_conn_req_recv(req, mr, 256, 16, (void *)101) == 0);
	struct pmrep_conn *conn = NULL;
	CHECK(pmrep_conn_req_connect(&req, NULL, &conn) == 0);
	enum pmrep_conn_event ev;
	CHECK(pmrep_conn_wait_event(conn, END_MS, &ev) == 0);
	CHECK(ev == PMREP_CONN_ESTABLISHED);

	/* requests toward the socket: seq 0..5 for ACK / READ_RESP / NAK */
	const int f = PMREP_F_COMPLETION_ALWAYS;
	uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	int posted = 0;
	posted += pmrep_write(conn, rmt, 0, mr, 0, 64, f, (void *)1) == 0;
	posted += pmrep_read(conn, mr, 1024, rmt, 0, 128, f, (void *)2) == 0;
	posted += pmrep_send(conn, mr, 0, 32, f, (void *)3) == 0;
	posted += pmrep_atomic_write(conn, rmt, 8, v, f, (void *)4) == 0;
	posted += pmrep_flush(conn, rmt, 0, 64, PMREP_FLUSH_TYPE_PERSISTENT, f,
			(void *)5) == 0;
	posted += pmrep_write_with_imm(conn, rmt, 0, mr, 0, 16, 7, f,
			(void *)6) == 0;
	CHECK(posted == 6);

	send_all(s, in, size);
	shutdown(s, SHUT_WR);

	/* the end comes, once, in bounded time */
	int ret;
	ev = PMREP_CONN_UNDEFINED;
	for (int i = 0; i < END_MS / 10; i++) {
		drain(s);
		ret = pmrep_conn_wait_event(conn, 10, &ev);
		if (ret == 0 && ev != PMREP_CONN_ESTABLISHED)
			break;
		CHECK(ret == PMREP_E_TIMEOUT);
	}
	CHECK(ev == PMREP_CONN_LOST || ev == PMREP_CONN_CLOSED);
	CHECK(pmrep_conn_next_event(conn, &ev) == PMREP_E_NO_EVENT);
	/* every request and receive ended with one outcome (the conn's end
	 * flushed what the input left open) */
	int got = take_completions(conn);
	CHECK(got == 6 + 2);
	CHECK(pmrep_conn_delete(&conn) == 0);
	close(s);

	/* nothing outside the region was touched */
	for (size_t i = 0; i < GUARD; i++)
		CHECK(mem[i] == 0 && mem[GUARD + REGION + i] == 0);
	free(in);
	return 0;
}
