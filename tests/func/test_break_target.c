/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_target.c -- a replica target under attack from raw sockets
 * on loopback (tcp provider only), and the limits of the waits:
 *  - connections that send a valid HELLO (its format is public) and then
 *    nothing used to take every session slot, so that a real initiator was
 *    rejected (final) until they timed out; now the oldest unauthenticated
 *    session makes room, and the mirror gets in;
 *  - garbage, truncated and oversized frames, bad fields and disconnects
 *    at every step of the handshake leave the target serving;
 *  - a wait below -1 ms is refused at once (it used to mean "forever");
 *  - a sparse replica on a full file system is refused at start: it used
 *    to be served, and the first write into a hole killed the target with
 *    SIGBUS;
 *  - a second target on the same replica (another port) used to start and
 *    serve it, so two mirrors could write one replica: it is refused with
 *    PMREP_E_BUSY until the first is deleted;
 *  - an initiator that authenticates and then vanishes (its ACCEPT lost),
 *    or whose AUTH is refused, or that only queries, leaves the replica's
 *    header byte-identical: protocol v1 wrote the claim before sending
 *    ACCEPT, so a lost ACCEPT changed the header; v2 writes it on COMMIT;
 *  - a mirror that cannot start says why: pmrep_err_msg() used to be only
 *    "mirror: 0 of 1 replicas in sync, 1 required"; it now ends with the
 *    first failed replica's reason (wrong key, nobody listening, sizes).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_hello.h"

#define SIZE (256u << 10)

static const uint8_t key[32] = "break-key-0123456789-abcdefghijk";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xbe, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

struct tgt {
	struct pmrep_target *t;
	pthread_t th;
	bool running;
	atomic_bool stop;
	uint16_t port;
	char sport[8];
};

struct ctx {
	char dir[64];
	struct tgt g;
	struct pmrep_pmem *src;
};

static void *
tgt_loop(void *arg)
{
	struct tgt *g = arg;
	while (!atomic_load(&g->stop))
		(void) pmrep_target_process(g->t, 20);
	return NULL;
}

static void
tgt_new(struct ctx *c, int timeout_ms)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	struct pmrep_target_cfg *cfg;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, SIZE, true), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	/* the fake initiators speak plaintext tcp (TLS: test_repl_tls.c) */
	assert_int_equal(pmrep_target_cfg_set_tls(cfg, false), 0);
	assert_int_equal(pmrep_target_cfg_set_timeout(cfg, timeout_ms), 0);
	assert_int_equal(pmrep_target_new(cfg, &c->g.t), 0);
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_target_get_port(c->g.t, &c->g.port), 0);
	snprintf(c->g.sport, sizeof(c->g.sport), "%u", c->g.port);
}

static void
tgt_run(struct ctx *c)
{
	atomic_store(&c->g.stop, false);
	assert_int_equal(pthread_create(&c->g.th, NULL, tgt_loop, &c->g), 0);
	c->g.running = true;
}

static void
tgt_halt(struct ctx *c)
{
	if (!c->g.running)
		return;
	atomic_store(&c->g.stop, true);
	pthread_join(c->g.th, NULL);
	c->g.running = false;
}

static int
setup(void **state)
{
	if (!func_is_tcp())
		return 0;
	struct ctx *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	snprintf(c->dir, sizeof(c->dir), "/dev/shm/pmrep-test-break-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/source", c->dir);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &c->src), 0);
	func_pattern(pmrep_pmem_get_address(c->src), SIZE, 7);
	*state = c;
	return 0;
}

static void slow_loop_stop(uint16_t port);

static int
teardown(void **state)
{
	struct ctx *c = *state;
	if (c == NULL)
		return 0;
	slow_loop_stop(c->g.port);	/* a test that failed with it running */
	tgt_halt(c);
	(void) pmrep_target_delete(&c->g.t);
	(void) pmrep_pmem_close(&c->src);
	/* source, replica and the mirrors' state files */
	(void) func_rm_rf(c->dir);
	free(c);
	return 0;
}

static struct pmrep_mirror_cfg *
mcfg(const char *port)
{
	struct pmrep_mirror_cfg *m;
	assert_int_equal(pmrep_mirror_cfg_new(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(m, "127.0.0.1", port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(m, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_tls(m, false), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(m, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(m, 3000 * func_slow()), 0);
	return m;
}

/* a mirror attaches, persists everything and is deleted cleanly */
static void
mirror_works(struct ctx *c)
{
	struct pmrep_mirror_cfg *cfg = mcfg(c->g.sport);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(c->src, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
}

/* ---------------------------------------------------------- raw sockets */

/* a TCP connection to the target from source address `from` (NULL: any;
 * every 127/8 address is loopback) */
static int
raw_connect_from(uint16_t port, const char *from)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	if (from != NULL) {
		struct sockaddr_in b = { .sin_family = AF_INET };
		assert_int_equal(inet_pton(AF_INET, from, &b.sin_addr), 1);
		assert_int_equal(bind(s, (struct sockaddr *)&b, sizeof(b)), 0);
	}
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

static int
raw_connect(uint16_t port)
{
	return raw_connect_from(port, NULL);
}

static void
raw_send(int s, const void *buf, size_t len)
{
	assert_int_equal(send(s, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* read exactly len bytes within timeout_ms; the count read */
static size_t
raw_recv(int s, uint8_t *buf, size_t len, int timeout_ms)
{
	size_t got = 0;
	long long end = func_now_ms() + timeout_ms;
	while (got < len) {
		long long left = end - func_now_ms();
		struct pollfd p = { .fd = s, .events = POLLIN };
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t n = recv(s, buf + got, len - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* tcp HELLO frame (24 bytes) carrying `pdata` */
static size_t
tcp_hello(uint8_t *out, const uint8_t *pdata, uint32_t plen, uint32_t plen_field)
{
	memset(out, 0, 24);
	out[0] = 1;				/* HELLO */
	func_put_le32(out + 4, plen_field);
	func_put_le32(out + 8, 0x54524d50);	/* "PMRT" */
	func_put_le16(out + 12, 1);		/* version */
	func_put_le32(out + 16, 5000);		/* rnr ms */
	memcpy(out + 24, pdata, plen);
	return 24 + plen;
}

/* the replication layer's HELLO private data (protocol v3: 56 bytes;
 * key id 0, empty replica selector, a fresh nonce and the admission proof
 * of our key now) */
#define HELLO_LEN FUNC_HELLO_LEN
static void
repl_hello(uint8_t *out)
{
	func_repl_hello(out, key, sizeof(key), 0, NULL, func_admit_window(0),
			NULL);
}

/* connect from `from` and send the HELLO `pd`: the tcp frame type that
 * came back (2 ACCEPT: a session waits for our AUTH; 3 REJECT, its reason
 * in *reason; 0 nothing). The socket stays open in *sock. */
static int
hello_from(uint16_t port, const char *from, const uint8_t *pd, int *sock,
		uint32_t *reason)
{
	uint8_t f[24 + HELLO_LEN], r[16 + 24];
	size_t n = tcp_hello(f, pd, HELLO_LEN, HELLO_LEN);
	*sock = raw_connect_from(port, from);
	raw_send(*sock, f, n);
	size_t got = raw_recv(*sock, r, 16, 3000 * func_slow());
	if (got < 16)
		return 0;
	if (r[0] == 3 && reason)
		*reason = (uint32_t)r[8] | (uint32_t)r[9] << 8 |
			(uint32_t)r[10] << 16 | (uint32_t)r[11] << 24;
	if (r[0] == 2)	/* and its CHALLENGE */
		(void) raw_recv(*sock, r + 16, 24, 3000 * func_slow());
	return r[0];
}

/* connect and send a valid HELLO (the admission proof of our key); true
 * when the target accepted it (an ACCEPT frame, type 2, came back): a
 * session now waits for our AUTH */
static bool
silent_session(uint16_t port, int *sock)
{
	uint8_t pd[HELLO_LEN];
	repl_hello(pd);
	return hello_from(port, NULL, pd, sock, NULL) == 2;
}

/* ------------------------------------------- a fake initiator (transport) */

/*
 * an initiator written from docs/PROTOCOL.md and the byte layouts in
 * src/repl/wire/msg.c's head comment, on the public transport API: HELLO,
 * AUTH, whatever the test wants next. The library's own initiator would
 * always COMMIT; this one can stop anywhere.
 */
struct fake {
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;
	struct pmrep_mr_local *mr;
	struct pmrep_cq *cq;
	uint8_t buf[512];	/* 0..255: the receive slot; 256..: send */
	uint8_t nonce_i[16], nonce_t[16];
	uint64_t seq;
};

/* connect with the private data `hello`; the connection's first event */
static enum pmrep_conn_event
hello_event(uint16_t port, const uint8_t *hello)
{
	char sport[8];
	snprintf(sport, sizeof(sport), "%u", port);
	struct pmrep_peer *peer = func_peer(false);
	struct pmrep_conn_req *req;
	struct pmrep_conn *conn;
	assert_int_equal(pmrep_conn_req_new(peer, "127.0.0.1", sport, NULL, &req), 0);
	struct pmrep_conn_private_data pd = { hello, HELLO_LEN };
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &conn), 0);
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	assert_int_equal(pmrep_conn_wait_event(conn, 5000 * func_slow(), &ev), 0);
	(void) pmrep_conn_disconnect(conn);
	(void) pmrep_conn_delete(&conn);
	(void) pmrep_peer_delete(&peer);
	return ev;
}

static void
fake_connect(struct fake *f, uint16_t port, uint32_t key_id, const char *selector)
{
	memset(f, 0, sizeof(*f));
	uint8_t hello[HELLO_LEN];
	func_repl_hello(hello, key, sizeof(key), key_id, selector,
			func_admit_window(0), f->nonce_i);
	char sport[8];
	snprintf(sport, sizeof(sport), "%u", port);
	f->peer = func_peer(false);
	struct pmrep_conn_req *req;
	assert_int_equal(pmrep_conn_req_new(f->peer, "127.0.0.1", sport, NULL, &req), 0);
	struct pmrep_conn_private_data pd = { hello, sizeof(hello) };
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &f->conn), 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(f->conn, 3000 * func_slow(), &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	struct pmrep_conn_private_data ch;
	assert_int_equal(pmrep_conn_get_private_data(f->conn, &ch), 0);
	assert_true(ch.len >= 24);
	const uint8_t *c = ch.ptr;
	assert_int_equal(c[2], 3);	/* CHALLENGE, version 3 */
	assert_int_equal(c[3], 2);
	memcpy(f->nonce_t, c + 8, 16);
	assert_int_equal(pmrep_mr_reg(f->peer, f->buf, sizeof(f->buf),
			PMREP_MR_USAGE_SEND | PMREP_MR_USAGE_RECV, &f->mr), 0);
	assert_int_equal(pmrep_conn_get_cq(f->conn, &f->cq), 0);
	assert_int_equal(pmrep_recv(f->conn, f->mr, 0, 256, NULL), 0);
	f->seq = 1;
}

static void
fake_close(struct fake *f)
{
	(void) pmrep_conn_disconnect(f->conn);
	(void) pmrep_conn_delete(&f->conn);
	(void) pmrep_mr_dereg(&f->mr);
	(void) pmrep_peer_delete(&f->peer);
}

/* send `blen` body bytes at buf + 256 + 16 as a message of `type` */
static void
fake_send(struct fake *f, uint8_t type, uint16_t blen)
{
	uint8_t *m = f->buf + 256;
	func_put_le16(m, 0x4d52);
	m[2] = 3;	/* protocol version 3 */
	m[3] = type;
	func_put_le16(m + 4, 0);
	func_put_le16(m + 6, blen);
	func_put_le64(m + 8, f->seq++);
	assert_int_equal(pmrep_send(f->conn, f->mr, 256, 16u + blen,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
}

/* the next message received: its type, *status; its body at buf + 16.
 * 0: none within the limit, or the connection ended */
static int
fake_recv(struct fake *f, int *status)
{
	long long end = func_now_ms() + 3000 * func_slow();
	while (func_now_ms() < end) {
		struct pmrep_completion cmp;
		int n = 0;
		if (pmrep_cq_get_completions(f->cq, &cmp, 1, &n) == 0 && n == 1) {
			if (cmp.status != PMREP_WC_SUCCESS)
				return 0;
			if (cmp.op != PMREP_OP_RECV)
				continue;
			*status = f->buf[4] | f->buf[5] << 8;
			int type = f->buf[3];
			assert_int_equal(pmrep_recv(f->conn, f->mr, 0, 256, NULL), 0);
			return type;
		}
		(void) pmrep_cq_wait(f->cq, 20);
	}
	return 0;
}

/* AUTH (type 1) for `gen` with `k`; the reply's type (ACCEPT 2, REFUSE 3) */
static int
fake_auth(struct fake *f, const uint8_t *k, size_t klen, uint64_t gen,
		uint32_t intent, int *status)
{
	uint8_t *b = f->buf + 256 + 16;
	memset(b, 0, 80);
	memcpy(b + 32, uuid, PMREP_UUID_SIZE);
	func_put_le64(b + 48, SIZE);
	func_put_le64(b + 56, gen);
	func_put_le64(b + 64, 0x5eed0000ull + gen);
	func_put_le32(b + 72, intent);
	static const char label[] = "pmrep-repl-v2 initiator";
	uint8_t in[sizeof(label) + 32 + 48];
	memcpy(in, label, sizeof(label));
	memcpy(in + sizeof(label), f->nonce_t, 16);
	memcpy(in + sizeof(label) + 16, f->nonce_i, 16);
	memcpy(in + sizeof(label) + 32, b + 32, 48);
	unsigned mlen = 32;
	assert_non_null(HMAC(EVP_sha256(), k, (int)klen, in, sizeof(in), b, &mlen));
	fake_send(f, 1, 80);
	return fake_recv(f, status);
}

/* the replica's first 4 KiB as its file holds them now */
static void
read_hdr_block(struct ctx *c, uint8_t *blk)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, blk, 4096, 0), 4096);
	close(fd);
}

/* a little-endian field of n bytes */
static uint64_t
get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* the header slot of sequence `seq` in the block (v2: at 0 or 2048) */
static const uint8_t *
slot_of(const uint8_t *blk, uint64_t seq)
{
	for (int i = 0; i < 2; i++) {
		const uint8_t *sl = blk + 2048 * i;
		if (memcmp(sl, "PMREPRP2", 8) == 0 && get_le(sl + 16, 8) == seq)
			return sl;
	}
	fail_msg("no header slot of sequence %llu", (unsigned long long)seq);
	return NULL;
}

/* the live position record (24 bytes: persist sequence, generation,
 * owner) of the block whose newest slot is `sl`: at 4000 when the slot's
 * POSW1 (16) is set, else at 3968 */
static const uint8_t *
live_rec_of(const uint8_t *blk, const uint8_t *sl)
{
	return blk + ((get_le(sl + 12, 4) & 16) ? 4000 : 3968);
}

/* a COMMIT body (56 bytes, protocol 3) at buf + 256 + 16: replica id,
 * generation, primary id, resync kind, a set of 1, claim floor, flags */
#define FLOOR (1ull << 40)
static void
commit_body(struct fake *f, const uint8_t *rid, uint64_t gen, uint64_t primary,
		uint32_t kind, uint64_t floor, uint32_t flags)
{
	uint8_t *b = f->buf + 256 + 16;
	memset(b, 0, 56);
	memcpy(b, rid, PMREP_UUID_SIZE);
	func_put_le64(b + 16, gen);
	func_put_le64(b + 24, primary);
	func_put_le32(b + 32, kind);
	func_put_le(b + 36, 1, 2);		/* a set of 1 */
	func_put_le64(b + 40, floor);
	func_put_le32(b + 48, flags);
}

/* give the target's thread time to take the end of a session */
static void
settle(void)
{
	long long end = func_now_ms() + 200 * func_slow();
	while (func_now_ms() < end)
		(void) poll(NULL, 0, 20);
}

static void
lost_accept_leaves_the_replica_header_unchanged(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	tgt_new(c, 1000);
	tgt_run(c);
	/* a claimed replica, left consistent by a clean mirror */
	mirror_works(c);
	static uint8_t h0[4096], h1[4096];
	read_hdr_block(c, h0);
	struct pmrep_replica_info info;
	char path[128];
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(info.generation, 1);

	/* HELLO, AUTH with the right key, ACCEPT -- and gone */
	struct fake f;
	int st = -1;
	fake_connect(&f, c->g.port, 0, NULL);
	assert_int_equal(fake_auth(&f, key, sizeof(key), 1, 1, &st), 2);
	assert_int_equal(st, 0);
	/* ACCEPT tells the header as it is: generation 1, consistent (the
	 * run closed), the replica id the file holds, its position (the live
	 * record: persist sequence, generation, owner), the claim floor and
	 * the run that claimed it (the slot's run generation and owner) */
	const uint8_t *sl0 = slot_of(h0, info.seq);
	const uint8_t *rec0 = live_rec_of(h0, sl0);
	assert_int_equal(get_le(f.buf + 6, 2), 192);	/* ACCEPT body */
	assert_memory_equal(f.buf + 16 + 88, info.replica_id, PMREP_UUID_SIZE);
	assert_int_equal(f.buf[16 + 104], 1);
	assert_int_equal(get_le(f.buf + 16 + 120, 8), info.seq);
	assert_int_equal(get_le(f.buf + 16 + 128, 8), info.last_persist_seq);
	assert_int_equal(get_le(f.buf + 16 + 136, 4), get_le(sl0 + 12, 4));
	assert_true(f.buf[16 + 136] & PMREP_REPLICA_F_CONSISTENT);
	assert_true(f.buf[16 + 136] & 64);			/* RUN_CLOSED */
	assert_int_equal(get_le(f.buf + 16 + 148, 4), 0);	/* reserved */
	assert_int_equal(get_le(f.buf + 16 + 128, 8), get_le(rec0, 8));
	assert_int_equal(get_le(f.buf + 16 + 152, 8), get_le(rec0 + 8, 8));
	assert_int_equal(get_le(f.buf + 16 + 160, 8), get_le(rec0 + 16, 8));
	assert_int_equal(get_le(f.buf + 16 + 168, 8), get_le(sl0 + 108, 8));
	assert_int_equal(get_le(f.buf + 16 + 176, 8), get_le(sl0 + 88, 8));
	assert_int_equal(get_le(f.buf + 16 + 184, 8), get_le(sl0 + 100, 8));
	/* the real mirror's attach gave a claim floor, and named its run
	 * (generation 1, its primary id); its steps and its clean close made
	 * the position its own */
	assert_int_not_equal(get_le(sl0 + 108, 8), 0);
	assert_int_equal(get_le(sl0 + 88, 8), 1);
	assert_int_equal(get_le(sl0 + 100, 8), info.owner);
	assert_int_equal(get_le(rec0 + 8, 8), 1);
	assert_int_equal(get_le(rec0 + 16, 8), info.owner);
	assert_int_not_equal(get_le(rec0, 8), 0);
	uint64_t acc_pos_gen = get_le(f.buf + 16 + 152, 8);
	uint64_t acc_pos_owner = get_le(f.buf + 16 + 160, 8);
	uint64_t acc_psn = get_le(f.buf + 16 + 128, 8);
	fake_close(&f);
	settle();
	read_hdr_block(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));

	/* ACCEPT received, then silence past the target's handshake limit
	 * (no COMMIT): nothing written */
	fake_connect(&f, c->g.port, 0, NULL);
	assert_int_equal(fake_auth(&f, key, sizeof(key), 1, 1, &st), 2);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(f.conn, 5000 * func_slow(), &ev), 0);
	assert_true(ev == PMREP_CONN_CLOSED || ev == PMREP_CONN_LOST);
	fake_close(&f);
	read_hdr_block(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));

	/* a QUERY: ACCEPT, then COMMIT / CLOSE refused with STATE (8) */
	fake_connect(&f, c->g.port, 0, NULL);
	assert_int_equal(fake_auth(&f, key, sizeof(key), 1, 2, &st), 2);
	uint8_t *b = f.buf + 256 + 16;
	commit_body(&f, info.replica_id, 1, 0x5eed0001ull, 1 /* FULL */, FLOOR, 1);
	fake_send(&f, 8, 56);			/* COMMIT */
	assert_int_equal(fake_recv(&f, &st), 9);	/* COMMIT_REPLY */
	assert_int_equal(st, 8);
	assert_int_equal(get_le(f.buf + 6, 2), 24);	/* its body */
	memset(b, 0, 8);
	func_put_le64(b, FLOOR | 7);		/* the newest step's psn */
	fake_send(&f, 6, 8);			/* CLOSE */
	assert_int_equal(fake_recv(&f, &st), 7);	/* CLOSE_REPLY */
	assert_int_equal(st, 8);
	fake_close(&f);
	settle();
	read_hdr_block(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));

	/* ATTACH, ACCEPT, a COMMIT naming another replica id: refused,
	 * nothing written */
	fake_connect(&f, c->g.port, 0, NULL);
	assert_int_equal(fake_auth(&f, key, sizeof(key), 1, 1, &st), 2);
	uint8_t other[PMREP_UUID_SIZE];
	memset(other, 0x42, sizeof(other));
	commit_body(&f, other, 1, 0x5eed0001ull, 2, FLOOR, 0);
	fake_send(&f, 8, 56);
	assert_int_equal(fake_recv(&f, &st), 3);	/* REFUSE */
	assert_int_equal(st, 8);
	fake_close(&f);
	settle();
	read_hdr_block(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));

	/* COMMITs breaking protocol 3's rules do not decode: the session
	 * ends, nothing written -- a protocol 2 COMMIT (40 bytes), a FENCE
	 * with a claim floor, an INCREMENTAL without one, an unknown COMMIT
	 * flag, a reserved byte set */
	for (int k = 0; k < 5; k++) {
		fake_connect(&f, c->g.port, 0, NULL);
		assert_int_equal(fake_auth(&f, key, sizeof(key), 1, 1, &st), 2);
		commit_body(&f, info.replica_id, 1, 0x5eed0001ull, 2, FLOOR, 0);
		uint16_t blen = 56;
		if (k == 0)
			blen = 40;
		else if (k == 1)
			func_put_le32(b + 32, 3);	/* FENCE */
		else if (k == 2)
			func_put_le64(b + 40, 0);
		else if (k == 3)
			func_put_le32(b + 48, 2);
		else
			b[55] = 1;
		fake_send(&f, 8, blen);
		assert_int_not_equal(fake_recv(&f, &st), 9);
		fake_close(&f);
		settle();
		read_hdr_block(c, h1);
		assert_memory_equal(h0, h1, sizeof(h0));
	}

	/* and the right COMMIT is what writes the claim */
	fake_connect(&f, c->g.port, 0, NULL);
	assert_int_equal(fake_auth(&f, key, sizeof(key), 1, 1, &st), 2);
	commit_body(&f, info.replica_id, 1, 0x5eed0001ull, 2, 3ull << 40, 1);
	fake_send(&f, 8, 56);
	assert_int_equal(fake_recv(&f, &st), 9);
	assert_int_equal(st, 0);
	/* COMMIT_REPLY: the position as of the claim -- the one ACCEPT told */
	assert_int_equal(get_le(f.buf + 6, 2), 24);
	assert_int_equal(get_le(f.buf + 16, 8), acc_pos_gen);
	assert_int_equal(get_le(f.buf + 16 + 8, 8), acc_pos_owner);
	assert_int_equal(get_le(f.buf + 16 + 16, 8), acc_psn);
	fake_close(&f);
	struct pmrep_replica_info now;
	assert_int_equal(pmrep_replica_read_info(path, &now), 0);
	assert_false(now.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(now.owner, 0x5eed0001ull);
	assert_int_equal(now.seq, info.seq + 1);
	assert_memory_equal(now.replica_id, info.replica_id, PMREP_UUID_SIZE);
	/* a COMMIT never changes the position: both position records
	 * (3968 and 4000, 24 bytes each) and which one is live are as they
	 * were; the run (its generation and owner), the claim floor and
	 * TRACKED are the COMMIT's, and the new run is not closed */
	assert_int_equal(now.last_persist_seq, info.last_persist_seq);
	static uint8_t h2[4096];
	read_hdr_block(c, h2);
	assert_memory_equal(h2 + 3968, h0 + 3968, 4000 + 24 - 3968);
	const uint8_t *sl2 = slot_of(h2, now.seq);
	assert_int_equal(get_le(sl2 + 88, 8), 1);		/* run generation */
	assert_int_equal(get_le(sl2 + 100, 8), 0x5eed0001ull);	/* run owner */
	assert_int_equal(get_le(sl2 + 108, 8), 3ull << 40);
	assert_true(get_le(sl2 + 12, 4) & 8);			/* TRACKED */
	assert_int_equal(get_le(sl2 + 12, 4) & 16, get_le(sl0 + 12, 4) & 16);	/* POSW1 */
	assert_false(get_le(sl2 + 12, 4) & 64);			/* RUN_CLOSED */
	assert_int_equal(get_le(sl2 + 116, 4), 0);		/* reserved */
	assert_true(live_rec_of(h2, sl2) == h2 + (rec0 - h0));

	/* the fake primary left its claim open: the real mirror, another
	 * primary at the same generation, is refused (split brain); at the
	 * next generation the target serves it */
	struct pmrep_mirror_cfg *cfg = mcfg(c->g.sport);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(c->src, cfg, &m), PMREP_E_SPLIT_BRAIN);
	assert_null(m);
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	assert_int_equal(info.seq, now.seq);	/* refused: nothing written */
	assert_int_equal(pmrep_mirror_cfg_set_generation(cfg, 2), 0);
	assert_int_equal(pmrep_mirror_new(c->src, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	tgt_halt(c);
}

static void
refused_auth_leaves_the_replica_header_unchanged(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	tgt_new(c, 1000);
	tgt_run(c);
	/* generation 2 on the replica */
	struct pmrep_mirror_cfg *cfg = mcfg(c->g.sport);
	assert_int_equal(pmrep_mirror_cfg_set_generation(cfg, 2), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(c->src, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	static uint8_t h0[4096], h1[4096];
	read_hdr_block(c, h0);

	struct fake f;
	int st = -1;
	/* the wrong key: REFUSE(AUTH = 1) */
	uint8_t wrong[sizeof(key)];
	memcpy(wrong, key, sizeof(key));
	wrong[0] ^= 1;
	fake_connect(&f, c->g.port, 0, NULL);
	assert_int_equal(fake_auth(&f, wrong, sizeof(wrong), 2, 1, &st), 3);
	assert_int_equal(st, 1);
	fake_close(&f);
	/* the right key, an older generation than the replica's (the
	 * replica holds a newer one): REFUSE(GENERATION = 5) */
	fake_connect(&f, c->g.port, 0, NULL);
	assert_int_equal(fake_auth(&f, key, sizeof(key), 1, 1, &st), 3);
	assert_int_equal(st, 5);
	fake_close(&f);
	/* a key id the target does not have: rejected at the connection
	 * request (its admission proof names a key the target lacks) */
	uint8_t hello[HELLO_LEN];
	func_repl_hello(hello, key, sizeof(key), 1, NULL, func_admit_window(0),
			NULL);
	assert_int_equal(hello_event(c->g.port, hello), PMREP_CONN_REJECTED);
	/* a protocol 2 HELLO (right key and proof, version 2): rejected */
	func_repl_hello(hello, key, sizeof(key), 0, NULL, func_admit_window(0),
			NULL);
	hello[2] = 2;
	assert_int_equal(hello_event(c->g.port, hello), PMREP_CONN_REJECTED);
	/* a selector naming another replica: REFUSE(NO_REPLICA = 9) */
	fake_connect(&f, c->g.port, 0, "other-replica");
	assert_int_equal(fake_auth(&f, key, sizeof(key), 2, 1, &st), 3);
	assert_int_equal(st, 9);
	fake_close(&f);
	/* ... and naming this one (the basename of its path): ACCEPT */
	fake_connect(&f, c->g.port, 0, "replica");
	assert_int_equal(fake_auth(&f, key, sizeof(key), 2, 2, &st), 2);
	fake_close(&f);
	settle();
	read_hdr_block(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));

	tgt_halt(c);
	struct pmrep_target_stats ts;
	assert_int_equal(pmrep_target_get_stats(c->g.t, &ts), 0);
	assert_true(ts.sessions_refused >= 4);
}

/* ------------------------------------------------------------------ tests */

/* tcp REJECT reasons (src/transport/tcp/tcp_wire.h) */
#define REJ_APP 1		/* final */
#define REJ_NOT_LISTENING 3	/* retry */

/*
 * (a) keyless, wrong-proof, stale and replayed HELLOs are rejected at the
 * connection request: no session slot is ever taken for them (the target's
 * sessions_started stays 0 and no slot is in use), each is counted; a
 * valid one is admitted once, and its verbatim copy is a replay.
 */
static void
hello_without_a_valid_proof_is_rejected_before_a_session_exists(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	tgt_new(c, 30000);
	tgt_run(c);
	uint8_t pd[HELLO_LEN], wrong[sizeof(key)];
	memcpy(wrong, key, sizeof(key));
	wrong[5] ^= 0x40;
	int socks[8], n = 0;
	uint32_t reason = 0;
	/* keyless: the proof all zero */
	func_repl_hello(pd, NULL, 0, 0, NULL, 0, NULL);
	assert_int_equal(hello_from(c->g.port, NULL, pd, &socks[n++], &reason), 3);
	assert_int_equal(reason, REJ_APP);
	/* a proof made with another key */
	func_repl_hello(pd, wrong, sizeof(wrong), 0, NULL, func_admit_window(0), NULL);
	assert_int_equal(hello_from(c->g.port, NULL, pd, &socks[n++], &reason), 3);
	/* the right key, windows 2 away (the clocks 60 s apart) */
	func_repl_hello(pd, key, sizeof(key), 0, NULL, func_admit_window(-2), NULL);
	assert_int_equal(hello_from(c->g.port, NULL, pd, &socks[n++], &reason), 3);
	func_repl_hello(pd, key, sizeof(key), 0, NULL, func_admit_window(2), NULL);
	assert_int_equal(hello_from(c->g.port, NULL, pd, &socks[n++], &reason), 3);
	/* one bit of the MAC flipped */
	func_repl_hello(pd, key, sizeof(key), 0, NULL, func_admit_window(0), NULL);
	pd[50] ^= 1;
	assert_int_equal(hello_from(c->g.port, NULL, pd, &socks[n++], &reason), 3);
	/* the proof bound to the selector: another selector than proved */
	func_repl_hello(pd, key, sizeof(key), 0, NULL, func_admit_window(0), NULL);
	memcpy(pd + 24, "replica", 7);
	assert_int_equal(hello_from(c->g.port, NULL, pd, &socks[n++], &reason), 3);
	settle();
	struct pmrep_target_stats ts;
	assert_int_equal(pmrep_target_get_stats(c->g.t, &ts), 0);
	assert_int_equal(ts.sessions_started, 0);
	assert_int_equal(ts.sessions_in_use, 0);
	assert_int_equal(ts.admission_refused, 6);
	assert_int_equal(ts.last_refusal, PMREP_E_AUTH);

	/* a valid proof, the window before ours (accepted: w-1): admitted */
	func_repl_hello(pd, key, sizeof(key), 0, NULL, func_admit_window(-1), NULL);
	assert_int_equal(hello_from(c->g.port, NULL, pd, &socks[n++], &reason), 2);
	/* the same HELLO again (a replay of what was on the wire) */
	assert_int_equal(hello_from(c->g.port, NULL, pd, &socks[n++], &reason), 3);
	assert_int_equal(reason, REJ_APP);
	settle();
	assert_int_equal(pmrep_target_get_stats(c->g.t, &ts), 0);
	assert_int_equal(ts.sessions_started, 1);
	assert_int_equal(ts.sessions_in_use, 1);
	assert_int_equal(ts.admission_refused, 7);
	assert_int_equal(ts.admission_replayed, 1);
	tgt_halt(c);
	for (int i = 0; i < n; i++)
		close(socks[i]);
}

/*
 * (c) a same-source flood: from 127.0.0.2, TCP connections that never
 * send a HELLO, keyless HELLOs, and valid HELLOs that then stay silent
 * (key holders mid-handshake, up to the per-source bound of 2: the third
 * is refused for now). A mirror from 127.0.0.1 attaches at once (these
 * sessions used to be evicted by newcomers, and a full endpoint used to
 * refuse the mirror). Nothing mid-handshake is displaced by a newcomer
 * (the mirror's COMMIT then fences every other session, as always).
 */
static void
a_same_source_flood_does_not_lock_out_another_source(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	/* a long handshake limit: the silent sessions would hold their
	 * slots for all of this test */
	tgt_new(c, 30000);
	tgt_run(c);
	const char *src = "127.0.0.2";
	int socks[64], n = 0;
	uint8_t pd[HELLO_LEN];
	uint32_t reason = 0;
	/* valid connects that say nothing */
	for (int i = 0; i < 10; i++)
		socks[n++] = raw_connect_from(c->g.port, src);
	/* keyless HELLOs */
	for (int i = 0; i < 20; i++) {
		func_repl_hello(pd, NULL, 0, 0, NULL, 0, NULL);
		assert_int_equal(hello_from(c->g.port, src, pd, &socks[n++], &reason), 3);
		assert_int_equal(reason, REJ_APP);
	}
	/* key holders that stop after their HELLO: two admitted, then the
	 * per-source bound (a rejection the initiator retries) */
	for (int i = 0; i < 2; i++) {
		repl_hello(pd);
		assert_int_equal(hello_from(c->g.port, src, pd, &socks[n++], NULL), 2);
	}
	for (int i = 0; i < 3; i++) {
		repl_hello(pd);
		assert_int_equal(hello_from(c->g.port, src, pd, &socks[n++], &reason), 3);
		assert_int_equal(reason, REJ_NOT_LISTENING);
	}
	struct pmrep_target_stats st;
	assert_int_equal(pmrep_target_get_stats(c->g.t, &st), 0);
	assert_int_equal(st.sessions_in_use, 2);

	long long t0 = func_now_ms();
	mirror_works(c);
	/* in, at once: not after the silent sessions' 30 s */
	assert_true(func_now_ms() - t0 < 10000 * func_slow());

	tgt_halt(c);
	assert_int_equal(pmrep_target_get_stats(c->g.t, &st), 0);
	assert_int_equal(st.sessions_accepted, 1);
	assert_int_equal(st.sessions_started, 3);
	assert_int_equal(st.admission_busy, 3);
	assert_int_equal(st.admission_refused, 23);
	for (int i = 0; i < n; i++)
		close(socks[i]);
}

static void
garbage_and_broken_handshakes_leave_the_target_serving(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	tgt_new(c, 1000);
	tgt_run(c);
	uint8_t pd[HELLO_LEN], f[24 + HELLO_LEN], junk[512];
	repl_hello(pd);
	func_pattern(junk, sizeof(junk), 3);

	/* not a pmrep frame at all */
	int s = raw_connect(c->g.port);
	raw_send(s, junk, sizeof(junk));
	close(s);
	/* a HELLO claiming a 4 GiB payload */
	size_t n = tcp_hello(f, pd, sizeof(pd), UINT32_MAX);
	s = raw_connect(c->g.port);
	raw_send(s, f, n);
	close(s);
	/* every request that must count as refused is kept open until the
	 * end: a HELLO whose sender already closed is an abandoned attempt
	 * the endpoint may drop unseen (T24), never a refusal */
	int held[6];
	/* HELLO with a bad magic, a bad version, reserved bits */
	for (int k = 0; k < 3; k++) {
		n = tcp_hello(f, pd, sizeof(pd), sizeof(pd));
		if (k == 0)
			f[8] ^= 0xff;
		else if (k == 1)
			func_put_le16(f + 12, 3);	/* tcp speaks 1, 2 */
		else
			f[2] = 1;
		held[3 + k] = s = raw_connect(c->g.port);
		raw_send(s, f, n);
	}
	/* well-formed tcp HELLOs the replication refuses */
	/* a valid tcp HELLO whose private data is not the replication's */
	uint8_t bad[HELLO_LEN];
	memcpy(bad, pd, sizeof(bad));
	bad[3] = 2;
	n = tcp_hello(f, bad, sizeof(bad), sizeof(bad));
	held[0] = s = raw_connect(c->g.port);
	raw_send(s, f, n);
	/* a protocol v1 HELLO (24 bytes, version 1) */
	memcpy(bad, pd, sizeof(bad));
	bad[2] = 1;
	n = tcp_hello(f, bad, 24, 24);
	held[1] = s = raw_connect(c->g.port);
	raw_send(s, f, n);
	/* a too short private data */
	n = tcp_hello(f, pd, 10, 10);
	held[2] = s = raw_connect(c->g.port);
	raw_send(s, f, n);
	/* every prefix of a valid HELLO, then the connection goes */
	n = tcp_hello(f, pd, sizeof(pd), sizeof(pd));
	for (size_t cut = 0; cut < n; cut++) {
		s = raw_connect(c->g.port);
		if (cut)
			raw_send(s, f, cut);
		close(s);
	}
	/* accepted, then garbage instead of AUTH, then gone */
	assert_true(silent_session(c->g.port, &s));
	raw_send(s, junk, 100);
	close(s);
	/* accepted, then a SEND frame with a 2 GiB payload claim */
	assert_true(silent_session(c->g.port, &s));
	uint8_t send[16] = { 20 };
	func_put_le32(send + 4, 1u << 31);
	raw_send(s, send, sizeof(send));
	close(s);

	/* the target has taken the garbage in (on a loaded machine it may
	 * lag: a HELLO while the held ones still count as pending from this
	 * address finds no room, UNREACHABLE, and fails the mirror's only
	 * first attempt) */
	struct pmrep_target_stats st;
	long long until = func_now_ms() + 10000LL * func_slow();
	tgt_halt(c);	/* its turns in this thread meanwhile */
	for (;;) {
		assert_int_equal(pmrep_target_get_stats(c->g.t, &st), 0);
		if (st.sessions_refused >= 6)
			break;
		assert_true(func_now_ms() < until);
		(void) pmrep_target_process(c->g.t, 20);
	}
	tgt_run(c);
	mirror_works(c);
	tgt_halt(c);
	for (int k = 0; k < 6; k++)
		close(held[k]);
	assert_int_equal(pmrep_target_get_stats(c->g.t, &st), 0);
	assert_int_equal(st.sessions_accepted, 1);
	assert_true(st.sessions_refused >= 6);
}

static void
waits_below_minus_1_ms_are_refused_at_once(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	tgt_new(c, 3000);
	long long t0 = func_now_ms();
	/* -5 used to reach epoll_wait as "forever" */
	assert_int_equal(pmrep_target_process(c->g.t, -5), PMREP_E_INVAL);
	assert_int_equal(pmrep_target_process(c->g.t, INT32_MIN), PMREP_E_INVAL);
	assert_true(func_now_ms() - t0 < 1000);
	assert_int_equal(pmrep_target_process(c->g.t, 0), PMREP_E_TIMEOUT);

	tgt_run(c);
	struct pmrep_mirror_cfg *cfg = mcfg(c->g.sport);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(c->src, cfg, &m), 0);
	t0 = func_now_ms();
	assert_int_equal(pmrep_mirror_persist(m, 0, 4096, -2), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_reconnect(m, -100), PMREP_E_INVAL);
	assert_true(func_now_ms() - t0 < 1000);
	/* the refused calls changed nothing: the replica is still in sync */
	struct pmrep_replica_status rs;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &rs), 0);
	assert_int_equal(rs.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(pmrep_mirror_persist(m, 0, 4096, -1), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
}

/* the child of the test below: 0 when the target refused the replica
 * with ENOSPC, 77 when it cannot mount (no CAP_SYS_ADMIN), else a step */
static int
sparse_child(const char *good)
{
	if (unshare(CLONE_NEWNS) != 0 ||
			mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0)
		return 77;
	char mnt[] = "/tmp/pmrep-test-break-fs-XXXXXX";
	if (mkdtemp(mnt) == NULL)
		return 2;
	int ret = 3;
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") != 0) {
		rmdir(mnt);
		return 77;
	}
	/* a valid header (from a replica made by the target), then a hole
	 * of SIZE bytes: more than the file system has */
	char path[128], fill[128];
	snprintf(path, sizeof(path), "%s/replica", mnt);
	snprintf(fill, sizeof(fill), "%s/fill", mnt);
	uint8_t hdr[4096];
	int in = open(good, O_RDONLY);
	int out = open(path, O_CREAT | O_RDWR, 0600);
	if (in < 0 || out < 0 || read(in, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
			write(out, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
			ftruncate(out, PMREP_REPLICA_DATA_OFFSET + 4 * SIZE) != 0)
		goto out;
	close(in);
	close(out);
	/* fill the file system */
	int f = open(fill, O_CREAT | O_WRONLY, 0600);
	static uint8_t zero[65536];
	while (f >= 0 && write(f, zero, sizeof(zero)) > 0)
		;
	if (f >= 0)
		close(f);

	ret = 4;
	struct pmrep_target_cfg *cfg;
	struct pmrep_target *t = NULL;
	if (pmrep_target_cfg_new(&cfg) ||
			pmrep_target_cfg_set_path(cfg, path) ||
			pmrep_target_cfg_set_key(cfg, key, sizeof(key)) ||
			pmrep_target_cfg_set_tls(cfg, false))
		goto out;
	int r = pmrep_target_new(cfg, &t);
	pmrep_target_cfg_delete(&cfg);
	if (r == 0) {
		/* served: a write into a hole would now raise SIGBUS */
		pmrep_target_delete(&t);
		ret = 5;
	} else if (r == PMREP_E_PROVIDER && pmrep_err_errno() == ENOSPC &&
			strstr(pmrep_err_msg(), "replica") != NULL) {
		ret = 0;
	} else {
		ret = 6;
	}
out:
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
	return ret;
}

static void
sparse_replica_on_a_full_file_system_is_refused_at_start(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	/* a good replica of 4 * SIZE data bytes, for its header */
	char path[128];
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	struct pmrep_target_cfg *cfg;
	struct pmrep_target *t = NULL;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, 4 * SIZE, true), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	/* the fake initiators speak plaintext tcp (TLS: test_repl_tls.c) */
	assert_int_equal(pmrep_target_cfg_set_tls(cfg, false), 0);
	assert_int_equal(pmrep_target_new(cfg, &t), 0);
	assert_int_equal(pmrep_target_delete(&t), 0);
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(sparse_child(path));
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip();	/* cannot mount a small file system here */
	assert_int_equal(WEXITSTATUS(st), 0);
}


/* a target for c's replica on any port: its pmrep_target_new result */
static int
tgt_try(struct ctx *c, struct pmrep_target **t)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	struct pmrep_target_cfg *cfg;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, SIZE, true), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	/* the fake initiators speak plaintext tcp (TLS: test_repl_tls.c) */
	assert_int_equal(pmrep_target_cfg_set_tls(cfg, false), 0);
	int ret = pmrep_target_new(cfg, t);
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);
	return ret;
}

/* the child of the test below: 0 when its target was refused as busy */
static int
busy_child(struct ctx *c)
{
	struct pmrep_target *t = NULL;
	int ret = tgt_try(c, &t);
	if (ret == 0) {
		pmrep_target_delete(&t);
		return 1;
	}
	return ret == PMREP_E_BUSY ? 0 : 2;
}

static void
second_target_on_one_replica_is_refused_until_the_first_is_deleted(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	tgt_new(c, 3000);
	char path[128], expect[200];
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	snprintf(expect, sizeof(expect),
			"replica %s is already served by another target", path);

	/* in this process, on another port: refused */
	struct pmrep_target *t2 = NULL;
	assert_int_equal(tgt_try(c, &t2), PMREP_E_BUSY);
	assert_null(t2);
	assert_non_null(strstr(pmrep_err_msg(), expect));
	/* in another process: the same */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(busy_child(c));
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);

	/* the first one still serves */
	tgt_run(c);
	mirror_works(c);
	tgt_halt(c);
	/* the header is the one the mirror left */
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_memory_equal(info.uuid, uuid, PMREP_UUID_SIZE);

	/* once the first is deleted, a new target serves the replica */
	assert_int_equal(pmrep_target_delete(&c->g.t), 0);
	assert_int_equal(tgt_try(c, &c->g.t), 0);
	assert_int_equal(pmrep_target_get_port(c->g.t, &c->g.port), 0);
	snprintf(c->g.sport, sizeof(c->g.sport), "%u", c->g.port);
	tgt_run(c);
	mirror_works(c);
}

/* a target loop whose waits are long (20 s): it wakes only for what
 * happens on the target's fds, its own deadlines included */
struct slow_loop {
	struct pmrep_target *t;
	atomic_bool stop;
	atomic_int calls;
	pthread_t th;
};

static struct slow_loop *slow_running;

static void *
slow_loop_run(void *arg)
{
	struct slow_loop *l = arg;
	while (!atomic_load(&l->stop)) {
		atomic_fetch_add(&l->calls, 1);
		(void) pmrep_target_process(l->t, 20000);
	}
	return NULL;
}

/* stop the running slow loop, if any: the flag, then a connection to
 * wake its wait */
static void
slow_loop_stop(uint16_t port)
{
	struct slow_loop *l = slow_running;
	if (l == NULL)
		return;
	slow_running = NULL;
	atomic_store(&l->stop, true);
	int s = raw_connect(port);
	pthread_join(l->th, NULL);
	close(s);
}

/* wait until `s` reads EOF (or a reset): the ms it took, -1: not within
 * limit_ms */
static long long
eof_within(int s, int limit_ms)
{
	long long t0 = func_now_ms();
	for (;;) {
		long long left = t0 + limit_ms - func_now_ms();
		struct pollfd p = { .fd = s, .events = POLLIN };
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		uint8_t b[64];
		ssize_t n = recv(s, b, sizeof(b), 0);
		if (n <= 0)
			return func_now_ms() - t0;
	}
}

/*
 * Idle sockets are closed at the handshake timeout (300 ms) while nothing
 * else happens on the target: a TCP connection that never sends its HELLO
 * (the endpoint's pending table, 64 slots, drops it at its deadline -- not
 * only when it needs room or another request comes in), and a session
 * admitted by a valid HELLO that never sends its AUTH. The target's loop
 * waits 20 s a call: each close comes from a wait bounded by the earliest
 * deadline, so it takes about the timeout, and the loop is called a few
 * times only.
 */
static void
idle_pre_auth_sockets_are_closed_at_the_handshake_timeout(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	const int timeout = 300;
	tgt_new(c, timeout);
	static struct slow_loop l;
	memset(&l, 0, sizeof(l));
	l.t = c->g.t;
	assert_int_equal(pthread_create(&l.th, NULL, slow_loop_run, &l), 0);
	slow_running = &l;

	/* a TCP connection, not a byte sent */
	int s = raw_connect(c->g.port);
	long long took = eof_within(s, 5000 * func_slow());
	close(s);
	fprintf(stderr, "a silent socket: EOF after %lld ms (timeout %d ms), %d target loop calls\n",
			took, timeout, atomic_load(&l.calls));
	if (took < 0)
		fail_msg("a socket that sent nothing is still open after %d ms (handshake timeout %d ms)",
				5000 * func_slow(), timeout);
	assert_true(took >= timeout * 9 / 10);
	assert_true(atomic_load(&l.calls) <= 4);

	/* a valid HELLO, admitted (ACCEPT), then no AUTH */
	int before = atomic_load(&l.calls);
	assert_true(silent_session(c->g.port, &s));
	took = eof_within(s, 5000 * func_slow());
	close(s);
	fprintf(stderr, "a session without AUTH: EOF after %lld ms, %d target loop calls\n",
			took, atomic_load(&l.calls) - before);
	assert_true(took >= 0);
	assert_true(atomic_load(&l.calls) - before <= 4);

	slow_loop_stop(c->g.port);
	struct pmrep_target_stats ts;
	assert_int_equal(pmrep_target_get_stats(c->g.t, &ts), 0);
	assert_int_equal(ts.sessions_started, 1);
	assert_int_equal(ts.sessions_in_use, 0);
	assert_int_equal(ts.last_refusal, PMREP_E_TIMEOUT);	/* no AUTH in time */
}

/* pmrep_mirror_new with `k` (key) to 127.0.0.1:`port`: the code; `msg`
 * gets pmrep_err_msg() */
static int
mirror_fails(struct pmrep_pmem *src, const char *port, const uint8_t *k,
		char *msg, size_t msg_len)
{
	struct pmrep_mirror_cfg *cfg = mcfg(port);
	assert_int_equal(pmrep_mirror_cfg_set_key(cfg, k, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_tls(cfg, false), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(cfg, 2000 * func_slow()), 0);
	struct pmrep_mirror *m = NULL;
	int ret = pmrep_mirror_new(src, cfg, &m);
	snprintf(msg, msg_len, "%s", pmrep_err_msg());
	assert_null(m);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	return ret;
}

static void
mirror_new_failure_message_names_the_first_replicas_reason(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	tgt_new(c, 3000);
	tgt_run(c);
	char msg[600], who[64];
	snprintf(who, sizeof(who), "replica 0 (127.0.0.1:%s)", c->g.sport);

	/* a wrong key */
	uint8_t wrong[sizeof(key)];
	memcpy(wrong, key, sizeof(key));
	wrong[0] ^= 1;
	assert_int_equal(mirror_fails(c->src, c->g.sport, wrong, msg, sizeof(msg)),
			PMREP_E_AUTH);
	assert_non_null(strstr(msg, "mirror: 0 of 1 replicas in sync, 1 required; "));
	assert_non_null(strstr(msg, who));
	assert_non_null(strstr(msg, "authentication failed (wrong key)"));

	/* a mapping of another size: the mirror's size is named */
	char path[128];
	struct pmrep_pmem *small = NULL;
	snprintf(path, sizeof(path), "%s/small", c->dir);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE / 2,
			PMREP_PMEM_GRANULARITY_PAGE, &small), 0);
	assert_int_equal(mirror_fails(small, c->g.sport, key, msg, sizeof(msg)),
			PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_close(&small), 0);
	unlink(path);
	char sizes[64];
	snprintf(sizes, sizeof(sizes), "this mirror's mapping is %u bytes", SIZE / 2);
	assert_non_null(strstr(msg, "1 required; "));
	assert_non_null(strstr(msg, "data size differs from the replica's"));
	assert_non_null(strstr(msg, sizes));

	/* another replica set, by its own code and message (it read
	 * "invalid argument"): the mapping's record names the set first */
	static const uint8_t other[PMREP_UUID_SIZE] = { 0x07, 0x7e };
	mirror_works(c);	/* the replica is the set `uuid`'s now */
	struct pmrep_mirror_cfg *oc = mcfg(c->g.sport);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(oc, other), 0);
	struct pmrep_mirror *om = NULL;
	assert_int_equal(pmrep_mirror_new(c->src, oc, &om), PMREP_E_MISMATCH);
	assert_non_null(strstr(pmrep_err_msg(), "belongs to replica set be0102"));
	/* no record: the target refuses, naming both sets in its log */
	assert_int_equal(pmrep_mirror_cfg_set_state_path(oc, NULL), 0);
	assert_int_equal(pmrep_mirror_new(c->src, oc, &om), PMREP_E_MISMATCH);
	snprintf(msg, sizeof(msg), "%s", pmrep_err_msg());
	assert_null(om);
	assert_int_equal(pmrep_mirror_cfg_delete(&oc), 0);
	assert_non_null(strstr(msg, who));
	assert_non_null(strstr(msg, "refused us: replica-set UUID mismatch"));
	assert_string_equal(pmrep_err_to_str(PMREP_E_MISMATCH),
			"replica-set UUID mismatch: it belongs to another replica set");
	struct pmrep_target_stats ts;
	assert_int_equal(pmrep_target_get_stats(c->g.t, &ts), 0);
	assert_int_equal(ts.last_refusal, PMREP_E_MISMATCH);

	/* a port that takes the TCP connection and never answers (a hung
	 * or stopped target): TIMEOUT, "no answer" -- not UNREACHABLE's
	 * "is a pmrep-target listening there?" (the conn's own cause:
	 * test_connect) */
	char mport[8], mwho[64];
	int mute = func_mute_listener(mport, sizeof(mport));
	snprintf(mwho, sizeof(mwho), "replica 0 (127.0.0.1:%s)", mport);
	oc = mcfg(mport);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(oc, 400 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_new(c->src, oc, &om), PMREP_E_TIMEOUT);
	snprintf(msg, sizeof(msg), "%s", pmrep_err_msg());
	assert_int_equal(pmrep_mirror_cfg_delete(&oc), 0);
	close(mute);
	fprintf(stderr, "a mute port: %s\n", msg);
	assert_non_null(strstr(msg, mwho));
	/* the dial's deadline and the conn's own attempt end together:
	 * whichever reports first words it */
	if (strstr(msg, "no answer to the connection request within") == NULL &&
			strstr(msg, "connected, but no answer within") == NULL)
		fail_msg("a mute port reads: %s", msg);
	assert_null(strstr(msg, "is a pmrep-target listening there?"));

	/* nobody listening: the hint */
	tgt_halt(c);
	assert_int_equal(pmrep_target_delete(&c->g.t), 0);
	assert_int_equal(mirror_fails(c->src, c->g.sport, key, msg, sizeof(msg)),
			PMREP_E_UNREACHABLE);
	assert_non_null(strstr(msg, "1 required; "));
	assert_non_null(strstr(msg, who));
	assert_non_null(strstr(msg, "is a pmrep-target listening there?"));
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(hello_without_a_valid_proof_is_rejected_before_a_session_exists, setup, teardown),
		cmocka_unit_test_setup_teardown(a_same_source_flood_does_not_lock_out_another_source, setup, teardown),
		cmocka_unit_test_setup_teardown(garbage_and_broken_handshakes_leave_the_target_serving, setup, teardown),
		cmocka_unit_test_setup_teardown(waits_below_minus_1_ms_are_refused_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(sparse_replica_on_a_full_file_system_is_refused_at_start, setup, teardown),
		cmocka_unit_test_setup_teardown(second_target_on_one_replica_is_refused_until_the_first_is_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(mirror_new_failure_message_names_the_first_replicas_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(idle_pre_auth_sockets_are_closed_at_the_handshake_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(lost_accept_leaves_the_replica_header_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_auth_leaves_the_replica_header_unchanged, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
