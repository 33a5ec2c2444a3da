/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_access.c -- issue 12, part 1: the replica is reachable only
 * through the memory window of an authenticated session, from that
 * session's conn, while the session lives (tcp provider, loopback).
 *
 *  - keyless access: a client that connects, sends a HELLO and no AUTH
 *    (it holds no key), then RDMA-READs, WRITEs and FLUSHes the replica
 *    with the descriptor a real session was given (taken "off the wire"):
 *    each is a remote access error; the replica file is byte-identical
 *    and stays marked consistent. Before issue 12 all three succeeded;
 *  - a session's descriptor is dead once the session ended: another
 *    authenticated session's conn is refused with it, while its own
 *    window (a different key) works;
 *  - a QUERY session's window is read-only: it reads, its write is
 *    refused, the file is unchanged.
 * (The region's own key is covered by test_mw: it is not observable from
 * outside the target, which is the point.)
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "repl_hello.h"
#include "func.h"

#define SIZE (256u << 10)
#define INTENT_ATTACH 1
#define INTENT_QUERY 2
#define MSG_ACCEPT 2

static const uint8_t key[32] = "access-key-0123456789-abcdefghij";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xac, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

struct ctx {
	char dir[64];
	struct pmrep_target *t;
	pthread_t th;
	atomic_bool stop;
	uint16_t port;
	char sport[8];
	struct pmrep_pmem *src;
};

static void *
tgt_loop(void *arg)
{
	struct ctx *c = arg;
	while (!atomic_load(&c->stop))
		(void) pmrep_target_process(c->t, 20);
	return NULL;
}

static int
setup(void **state)
{
	if (!func_is_tcp())
		return 0;
	struct ctx *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	snprintf(c->dir, sizeof(c->dir), "/dev/shm/pmrep-test-access-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/source", c->dir);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &c->src), 0);
	func_pattern(pmrep_pmem_get_address(c->src), SIZE, 9);
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	struct pmrep_target_cfg *cfg;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, SIZE, true), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	/* plaintext tcp: the fake initiator below speaks the frames itself
	 * (with TLS the keyless client would not even reach the target) */
	assert_int_equal(pmrep_target_cfg_set_tls(cfg, false), 0);
	assert_int_equal(pmrep_target_cfg_set_timeout(cfg, 5000 * func_slow()), 0);
	assert_int_equal(pmrep_target_new(cfg, &c->t), 0);
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_target_get_port(c->t, &c->port), 0);
	snprintf(c->sport, sizeof(c->sport), "%u", c->port);
	assert_int_equal(pthread_create(&c->th, NULL, tgt_loop, c), 0);
	*state = c;
	return 0;
}

static int
teardown(void **state)
{
	struct ctx *c = *state;
	if (c == NULL)
		return 0;
	atomic_store(&c->stop, true);
	pthread_join(c->th, NULL);
	(void) pmrep_target_delete(&c->t);
	(void) pmrep_pmem_close(&c->src);
	(void) func_rm_rf(c->dir);
	free(c);
	return 0;
}

/* a mirror attaches, persists everything and closes: the replica is
 * consistent */
static void
mirror_works(struct ctx *c)
{
	struct pmrep_mirror_cfg *m;
	assert_int_equal(pmrep_mirror_cfg_new(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(m, "127.0.0.1", c->sport), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(m, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_tls(m, false), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(m, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(m, 3000 * func_slow()), 0);
	struct pmrep_mirror *mi = NULL;
	assert_int_equal(pmrep_mirror_new(c->src, m, &mi), 0);
	assert_int_equal(pmrep_mirror_persist(mi, 0, SIZE, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&mi), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&m), 0);
}

/* the whole replica file */
static uint8_t *
read_file(struct ctx *c, size_t *len)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t *b = malloc((size_t)st.st_size);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return b;
}

static bool
consistent(struct ctx *c)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	return (info.flags & PMREP_REPLICA_F_CONSISTENT) != 0;
}

static void
settle(void)
{
	long long end = func_now_ms() + 200 * func_slow();
	while (func_now_ms() < end)
		(void) poll(NULL, 0, 20);
}

/* ------------------------------------ an initiator on the transport API */

/*
 * written from docs/PROTOCOL.md and src/repl/wire/msg.c's byte layouts: HELLO
 * (no key needed), then AUTH only when the test says so. buf: 0..255 the
 * receive slot, 256..511 the send slot; data: a region for RDMA.
 */
struct fake {
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;
	struct pmrep_mr_local *mr, *dmr;
	struct pmrep_cq *cq;
	uint8_t buf[512];
	uint8_t data[4096];
	uint8_t nonce_i[16], nonce_t[16];
	uint64_t seq;
};

/* connect with a HELLO (key id 0, no selector); false when the target
 * did not let the conn up (a refused HELLO: no conn exists then) */
static bool
fake_connect(struct fake *f, uint16_t port)
{
	memset(f, 0, sizeof(*f));
	/* with a valid admission proof (docs/PROTOCOL.md "Admission"): the
	 * conn comes up, and the session is in WAIT_AUTH until an AUTH --
	 * the window check, not admission, is what is tested here */
	uint8_t hello[FUNC_HELLO_LEN];
	func_repl_hello(hello, key, sizeof(key), 0, NULL, func_admit_window(0),
			f->nonce_i);
	char sport[8];
	snprintf(sport, sizeof(sport), "%u", port);
	f->peer = func_peer(false);
	struct pmrep_conn_req *req;
	assert_int_equal(pmrep_conn_req_new(f->peer, "127.0.0.1", sport, NULL, &req), 0);
	struct pmrep_conn_private_data pd = { hello, sizeof(hello) };
	if (pmrep_conn_req_connect(&req, &pd, &f->conn) != 0)
		return false;
	enum pmrep_conn_event ev;
	if (pmrep_conn_wait_event(f->conn, 3000 * func_slow(), &ev) != 0 ||
			ev != PMREP_CONN_ESTABLISHED)
		return false;
	struct pmrep_conn_private_data ch;
	assert_int_equal(pmrep_conn_get_private_data(f->conn, &ch), 0);
	assert_true(ch.len >= 24);
	memcpy(f->nonce_t, (const uint8_t *)ch.ptr + 8, 16);
	assert_int_equal(pmrep_mr_reg(f->peer, f->buf, sizeof(f->buf),
			PMREP_MR_USAGE_SEND | PMREP_MR_USAGE_RECV, &f->mr), 0);
	assert_int_equal(pmrep_mr_reg(f->peer, f->data, sizeof(f->data),
			PMREP_MR_USAGE_READ_DST | PMREP_MR_USAGE_WRITE_SRC, &f->dmr), 0);
	assert_int_equal(pmrep_conn_get_cq(f->conn, &f->cq), 0);
	assert_int_equal(pmrep_recv(f->conn, f->mr, 0, 256, NULL), 0);
	f->seq = 1;
	return true;
}

static void
fake_close(struct fake *f)
{
	if (f->conn)
		(void) pmrep_conn_disconnect(f->conn);
	(void) pmrep_conn_delete(&f->conn);
	(void) pmrep_mr_dereg(&f->mr);
	(void) pmrep_mr_dereg(&f->dmr);
	(void) pmrep_peer_delete(&f->peer);
}

/* the next completion: its status (*op, *ctx); -1 none in time */
static int
fake_next(struct fake *f, enum pmrep_op *op, uintptr_t *ctx)
{
	/* set on every return: a caller's fail_msg() is not noreturn to gcc
	 * -O2, which otherwise sees ctx read after the timeout return */
	*op = PMREP_OP_RECV;
	*ctx = 0;
	long long end = func_now_ms() + 5000 * func_slow();
	while (func_now_ms() < end) {
		struct pmrep_completion cmp;
		int n = 0;
		if (pmrep_cq_get_completions(f->cq, &cmp, 1, &n) == 0 && n == 1) {
			*op = cmp.op;
			*ctx = (uintptr_t)cmp.op_context;
			return (int)cmp.status;
		}
		(void) pmrep_cq_wait(f->cq, 20);
	}
	return -1;
}

/* AUTH with our key for generation 1 and `intent`; the reply's type */
static int
fake_auth(struct fake *f, uint32_t intent)
{
	uint8_t *m = f->buf + 256, *b = m + 16;
	memset(b, 0, 80);
	memcpy(b + 32, uuid, PMREP_UUID_SIZE);
	func_put_le64(b + 48, SIZE);
	func_put_le64(b + 56, 1);
	func_put_le64(b + 64, 0x5eed0001ull);
	func_put_le32(b + 72, intent);
	static const char label[] = "pmrep-repl-v2 initiator";
	uint8_t in[sizeof(label) + 32 + 48];
	memcpy(in, label, sizeof(label));
	memcpy(in + sizeof(label), f->nonce_t, 16);
	memcpy(in + sizeof(label) + 16, f->nonce_i, 16);
	memcpy(in + sizeof(label) + 32, b + 32, 48);
	unsigned mlen = 32;
	assert_non_null(HMAC(EVP_sha256(), key, sizeof(key), in, sizeof(in), b, &mlen));
	func_put_le16(m, 0x4d52);
	m[2] = 3;	/* protocol version 3 */
	m[3] = 1;	/* AUTH */
	func_put_le16(m + 4, 0);
	func_put_le16(m + 6, 80);
	func_put_le64(m + 8, f->seq++);
	assert_int_equal(pmrep_send(f->conn, f->mr, 256, 16 + 80,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	for (;;) {
		enum pmrep_op op;
		uintptr_t ctx;
		int st = fake_next(f, &op, &ctx);
		if (st != 0)
			return 0;
		if (op == PMREP_OP_RECV)
			return f->buf[3];
	}
}

/* the ACCEPT's region descriptor (body offset 32) */
static struct pmrep_mr_remote *
accepted_region(struct fake *f, uint8_t *desc)
{
	memcpy(desc, f->buf + 16 + 32, PMREP_MR_DESC_SIZE);
	struct pmrep_mr_remote *r = NULL;
	assert_int_equal(pmrep_mr_remote_from_descriptor(desc, PMREP_MR_DESC_SIZE, &r), 0);
	return r;
}

enum rop { R_READ, R_WRITE, R_FLUSH };
static const char *const Rop_name[] = { "READ", "WRITE", "FLUSH" };

/* one one-sided request of `f` through `r`: its completion status */
static int
remote_op(struct fake *f, enum rop o, const struct pmrep_mr_remote *r)
{
	int ret;
	uintptr_t want = 100 + (uintptr_t)o;
	switch (o) {
	case R_READ:
		memset(f->data, 0, 256);
		ret = pmrep_read(f->conn, f->dmr, 0, r, 0, 256,
				PMREP_F_COMPLETION_ALWAYS, (void *)want);
		break;
	case R_WRITE:
		memset(f->data, 'T', 256);
		ret = pmrep_write(f->conn, r, 0, f->dmr, 0, 256,
				PMREP_F_COMPLETION_ALWAYS, (void *)want);
		break;
	default:
		ret = pmrep_flush(f->conn, r, 0, SIZE, PMREP_FLUSH_TYPE_PERSISTENT,
				PMREP_F_COMPLETION_ALWAYS, (void *)want);
		break;
	}
	assert_int_equal(ret, 0);
	for (;;) {
		enum pmrep_op op;
		uintptr_t ctx;
		int st = fake_next(f, &op, &ctx);
		if (st < 0)
			fail_msg("%s: no completion", Rop_name[o]);
		if (ctx == want)
			return st;
	}
}

static void
expect_refused(struct fake *f, enum rop o, const struct pmrep_mr_remote *r)
{
	int st = remote_op(f, o, r);
	if (st != PMREP_WC_REMOTE_ACCESS_ERROR)
		fail_msg("%s through a foreign descriptor: expected a remote access error, got %s",
				Rop_name[o], pmrep_wc_status_str((enum pmrep_wc_status)st));
}

/* ------------------------------------------------------------------ tests */

static void
keyless_client_cannot_read_write_or_flush_the_replica(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_works(c);
	assert_true(consistent(c));
	size_t len0, len1;
	uint8_t *f0 = read_file(c, &len0);

	/* a real session's descriptor, seen on the wire; the session stays */
	struct fake s;
	assert_true(fake_connect(&s, c->port));
	assert_int_equal(fake_auth(&s, INTENT_ATTACH), MSG_ACCEPT);
	uint8_t desc[PMREP_MR_DESC_SIZE];
	struct pmrep_mr_remote *r = accepted_region(&s, desc);

	/* each request on a fresh keyless conn (an error ends the conn) */
	for (int o = R_READ; o <= R_FLUSH; o++) {
		struct fake k;
		if (!fake_connect(&k, c->port)) {
			/* the HELLO itself was refused (no key proof): no
			 * conn, nothing reachable -- also an outcome */
			fake_close(&k);
			continue;
		}
		expect_refused(&k, (enum rop)o, r);
		if (o == R_READ)
			for (int i = 0; i < 256; i++)
				assert_int_equal(k.data[i], 0);
		fake_close(&k);
	}
	settle();
	/* the real session's own conn does reach it (the descriptor was
	 * live all along): a read of what the mirror wrote */
	assert_int_equal(remote_op(&s, R_READ, r), PMREP_WC_SUCCESS);
	assert_memory_equal(s.data, pmrep_pmem_get_address(c->src), 256);
	fake_close(&s);
	assert_int_equal(pmrep_mr_remote_delete(&r), 0);
	settle();

	uint8_t *f1 = read_file(c, &len1);
	assert_int_equal(len0, len1);
	assert_memory_equal(f0, f1, len0);
	assert_true(consistent(c));
	free(f0);
	free(f1);
	mirror_works(c);	/* and the target still serves */
}

static void
ended_session_descriptor_is_dead_on_another_session(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_works(c);
	size_t len0, len1;
	uint8_t *f0 = read_file(c, &len0);

	struct fake a;
	assert_true(fake_connect(&a, c->port));
	assert_int_equal(fake_auth(&a, INTENT_ATTACH), MSG_ACCEPT);
	uint8_t da[PMREP_MR_DESC_SIZE], db[PMREP_MR_DESC_SIZE];
	struct pmrep_mr_remote *ra = accepted_region(&a, da);
	assert_int_equal(remote_op(&a, R_READ, ra), PMREP_WC_SUCCESS);
	fake_close(&a);
	settle();

	struct fake b;
	assert_true(fake_connect(&b, c->port));
	assert_int_equal(fake_auth(&b, INTENT_ATTACH), MSG_ACCEPT);
	struct pmrep_mr_remote *rb = accepted_region(&b, db);
	/* a window of its own: another key, same region */
	assert_memory_not_equal(da + 4, db + 4, 4);
	assert_memory_equal(da + 8, db + 8, 16);
	assert_int_equal(remote_op(&b, R_READ, rb), PMREP_WC_SUCCESS);
	/* the ended session's window, on a live authenticated conn */
	expect_refused(&b, R_WRITE, ra);
	fake_close(&b);
	settle();

	uint8_t *f1 = read_file(c, &len1);
	assert_int_equal(len0, len1);
	assert_memory_equal(f0, f1, len0);
	assert_true(consistent(c));
	free(f0);
	free(f1);
	assert_int_equal(pmrep_mr_remote_delete(&ra), 0);
	assert_int_equal(pmrep_mr_remote_delete(&rb), 0);
}

static void
query_session_window_is_read_only(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_works(c);
	size_t len0, len1;
	uint8_t *f0 = read_file(c, &len0);

	struct fake q;
	assert_true(fake_connect(&q, c->port));
	assert_int_equal(fake_auth(&q, INTENT_QUERY), MSG_ACCEPT);
	uint8_t d[PMREP_MR_DESC_SIZE];
	struct pmrep_mr_remote *r = accepted_region(&q, d);
	/* its usage: READ_SRC only */
	assert_int_equal(d[24] | d[25] << 8, PMREP_MR_USAGE_READ_SRC);
	assert_int_equal(remote_op(&q, R_READ, r), PMREP_WC_SUCCESS);
	assert_memory_equal(q.data, pmrep_pmem_get_address(c->src), 256);
	expect_refused(&q, R_WRITE, r);
	fake_close(&q);
	settle();

	uint8_t *f1 = read_file(c, &len1);
	assert_int_equal(len0, len1);
	assert_memory_equal(f0, f1, len0);
	assert_true(consistent(c));
	free(f0);
	free(f1);
	assert_int_equal(pmrep_mr_remote_delete(&r), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(keyless_client_cannot_read_write_or_flush_the_replica,
				setup, teardown),
		cmocka_unit_test_setup_teardown(ended_session_descriptor_is_dead_on_another_session,
				setup, teardown),
		cmocka_unit_test_setup_teardown(query_session_window_is_read_only,
				setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
