/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_v2_target.c -- the replica target of protocol v2 attacked by an
 * initiator that holds the key but misbehaves, in one process over the
 * tcp provider: the real target (pmrep_target, in a thread) and a fake
 * initiator on the library's channel (src/repl/wire/chan.c) and codec
 * (src/repl/wire/msg.c) that sends whatever a test wants, in any order, with
 * any status, in short and oversized slots. After each attack the test
 * looks at the replica header as the file holds it (byte for byte) and
 * checks that the target still serves a real mirror.
 *
 * Found here (fixed in src/repl/target/target.c):
 *  - after CLOSE (header marked consistent) the session stayed ACTIVE:
 *    its PERSIST requests were still served and its RDMA writes still
 *    landed, so the data changed under a header that says "a clean close
 *    left a complete copy" -- which a later mirror without a record of
 *    the replica (or with the same primary id) trusts for an incremental
 *    resync. CLOSE now ends the session once CLOSE_REPLY is sent.
 *  - a QUERY session's ACCEPT carried the same writable MR descriptor as
 *    an attach's: a read-only session could RDMA-write the data area of
 *    a replica while a mirror was ACTIVE on it, with no COMMIT and no
 *    fencing. A QUERY now gets the descriptor of a READ_SRC-only
 *    registration of the same memory. (Not fixed: write access is still
 *    not bound to a session -- an ATTACHING session holds the writable
 *    descriptor before its COMMIT, and on tcp any connection of the
 *    target's peer may use any rkey it knows.)
 *
 *  - QUERY sessions have no deadline and were never evicted: four of
 *    them (a hung status tool, or a key holder) locked every mirror out
 *    of the target for as long as they stayed connected. A new connection
 *    request now closes the oldest query when no other slot can be freed.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "common/wire.h"
#include "repl/wire/auth.h"
#include "repl/wire/chan.h"
#include "repl/wire/msg.h"
#include "repl/media/replica_hdr.h"
#include "transport/provider.h"

#define SIZE (256u << 10)
#define TGT_TIMEOUT 1000
/* the fake writer's claim floor (its run: epoch 1) */
#define FLOOR (1ull << 40)

static const uint8_t key[32] = "break-v2-key-0123456789-abcdefgh";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xb2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

struct ctx {
	char dir[64];
	char rpath[128];
	struct pmrep_pmem *src;
	struct pmrep_target *t;
	pthread_t th;
	atomic_bool stop;
	char port[8];
};

static void *
loop(void *arg)
{
	struct ctx *c = arg;
	while (!atomic_load(&c->stop))
		(void) pmrep_target_process(c->t, 20);
	return NULL;
}

static int
setup(void **state)
{
	setenv("PMREP_PROVIDER", "tcp", 1);
	struct ctx *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	snprintf(c->dir, sizeof(c->dir), "/dev/shm/pmrep-test-bv2-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/source", c->dir);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &c->src), 0);
	memset(pmrep_pmem_get_address(c->src), 0x3c, SIZE);
	snprintf(c->rpath, sizeof(c->rpath), "%s/replica", c->dir);
	struct pmrep_target_cfg *cfg;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, c->rpath), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, SIZE, true), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_target_cfg_set_tls(cfg, false), 0);
	assert_int_equal(pmrep_target_cfg_set_timeout(cfg, TGT_TIMEOUT), 0);
	assert_int_equal(pmrep_target_new(cfg, &c->t), 0);
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);
	enum pmrep_target_mode mode;
	assert_int_equal(pmrep_target_get_mode(c->t, &mode), 0);
	assert_int_equal(mode, PMREP_TARGET_MODE_DIRECT);
	uint16_t port;
	assert_int_equal(pmrep_target_get_port(c->t, &port), 0);
	snprintf(c->port, sizeof(c->port), "%u", port);
	atomic_store(&c->stop, false);
	assert_int_equal(pthread_create(&c->th, NULL, loop, c), 0);
	*state = c;
	return 0;
}

static int
teardown(void **state)
{
	struct ctx *c = *state;
	atomic_store(&c->stop, true);
	pthread_join(c->th, NULL);
	(void) pmrep_target_delete(&c->t);
	(void) pmrep_pmem_close(&c->src);
	char path[128];
	snprintf(path, sizeof(path), "%s/source", c->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/source.pmrep-state", c->dir);
	unlink(path);
	unlink(c->rpath);
	rmdir(c->dir);
	free(c);
	return 0;
}

/* ------------------------------------------------------- the replica */

static void
read_hdr(struct ctx *c, uint8_t blk[4096])
{
	int fd = open(c->rpath, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, blk, 4096, 0), 4096);
	close(fd);
}

static struct pmrep_replica_info
info(struct ctx *c)
{
	struct pmrep_replica_info i;
	assert_int_equal(pmrep_replica_read_info(c->rpath, &i), 0);
	return i;
}

/* the target's thread has taken whatever was sent */
static void
settle(void)
{
	usleep(100 * 1000);
}

/* ------------------------------------------------------ a real mirror */

/* the real mirror's primary id (its state file keeps it): a fake
 * initiator that attaches at the same generation and leaves the replica
 * claimed uses it, or the real mirror's next attach is split brain */
static uint64_t mine;

static struct pmrep_mirror *
mirror_open(struct ctx *c, int expect)
{
	struct pmrep_mirror_cfg *cfg;
	assert_int_equal(pmrep_mirror_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", c->port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_tls(cfg, false), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(cfg, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(cfg, 3000), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(c->src, cfg, &m), expect);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	if (m != NULL)
		mine = info(c).owner;	/* its attach committed: its id */
	return m;
}

/* a mirror attaches, persists, closes cleanly: the target serves */
static void
mirror_works(struct ctx *c)
{
	struct pmrep_mirror *m = mirror_open(c, 0);
	assert_non_null(m);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_true(info(c).flags & PMREP_REPLICA_F_CONSISTENT);
}

/* ------------------------------------------------- a fake initiator */

struct ini {
	struct pmrep_peer *peer;
	struct repl_chan ch;
	struct pmrep_conn *conn;
	uint8_t ni[REPL_NONCE_SIZE], nt[REPL_NONCE_SIZE];
	uint64_t seq;
	struct repl_accept acc;
	struct pmrep_mr_remote *rmr;
	uint8_t *buf;
	struct pmrep_mr_local *lmr;
};

static void
ini_open(struct ctx *c, struct ini *x)
{
	memset(x, 0, sizeof(*x));
	assert_int_equal(pmrep_peer_open("127.0.0.1", false, &x->peer), 0);
	assert_int_equal(repl_chan_init(&x->ch, x->peer), 0);
	/* plaintext: the target here runs without TLS (test_repl_tls.c) */
	assert_int_equal(repl_chan_dial(&x->ch, x->peer, "127.0.0.1", c->port,
			repl_deadline(3000), 1234, 16, 32, "fake",
			&(struct repl_tls){ false, key, sizeof(key), 0, NULL }, &x->conn,
			x->ni, x->nt), 0);
	/* the conn's own timeout is the one given, not what was left of
	 * the dial's deadline (its liveness period follows from it) */
	assert_int_equal(x->conn->cfg.timeout_ms, 1234);
	x->seq = 100;
}

/* true when the connection ended (the target closed the session) within
 * `ms` */
static bool
ini_gone(struct ini *x, int ms)
{
	long long end = repl_now_ms() + ms;
	while (repl_now_ms() < end) {
		enum repl_chan_ev ev;
		struct repl_msg m;
		if (repl_chan_next(&x->ch, &ev, &m) != 0)
			return true;
		if (repl_chan_check_conn(&x->ch) != 0)
			return true;
		(void) repl_chan_wait_cq(&x->ch, 10);
	}
	return false;
}

static void
ini_close(struct ini *x)
{
	if (x->conn) {
		(void) pmrep_conn_disconnect(x->conn);
		(void) pmrep_conn_delete(&x->conn);
	}
	(void) pmrep_mr_remote_delete(&x->rmr);
	(void) pmrep_mr_dereg(&x->lmr);
	free(x->buf);
	repl_chan_fini(&x->ch);
	(void) pmrep_peer_delete(&x->peer);
}

/* the next message within 2 s: its type (0: none, or the conn ended) */
static int
ini_recv(struct ini *x, struct repl_msg *r)
{
	int ret = repl_chan_wait_msg(&x->ch, repl_deadline(2000), r);
	return ret ? 0 : (int)r->type;
}

/* send `m` (its seq is set), then the reply's type (0: none) */
static int
ini_req(struct ini *x, struct repl_msg *m, struct repl_msg *r)
{
	m->seq = x->seq++;
	assert_int_equal(repl_chan_send(&x->ch, m), 0);
	return ini_recv(x, r);
}

/* AUTH with our key: the reply's type; an ACCEPT is kept in x->acc */
static int
ini_auth(struct ini *x, uint64_t gen, uint64_t primary, enum repl_intent intent,
		struct repl_msg *r)
{
	struct repl_msg m = { .type = REPL_MSG_AUTH };
	memcpy(m.u.auth.uuid, uuid, PMREP_UUID_SIZE);
	m.u.auth.data_size = SIZE;
	m.u.auth.generation = gen;
	m.u.auth.primary_id = primary;
	m.u.auth.intent = intent;
	assert_int_equal(repl_auth_mac(key, sizeof(key), x->ni, x->nt,
			&m.u.auth, m.u.auth.mac), 0);
	int t = ini_req(x, &m, r);
	if (t == REPL_MSG_ACCEPT)
		x->acc = r->u.accept;
	return t;
}

static int
ini_commit(struct ini *x, const uint8_t *rid, uint64_t gen, uint64_t primary,
		struct repl_msg *r)
{
	struct repl_msg m = { .type = REPL_MSG_COMMIT };
	memcpy(m.u.commit.replica_id, rid, PMREP_UUID_SIZE);
	m.u.commit.generation = gen;
	m.u.commit.primary_id = primary;
	m.u.commit.resync = REPL_RESYNC_FULL;
	m.u.commit.members = (struct repl_members){ .set_size = 1 };
	/* a writer's attach: its run's first persist sequence */
	m.u.commit.claim_floor = FLOOR;
	return ini_req(x, &m, r);
}

/* a COMMIT of `resync` with claim floor `floor` and COMMIT flags `flags` */
static int
ini_commit_as(struct ini *x, uint64_t gen, uint64_t primary,
		enum repl_resync resync, uint64_t floor, uint32_t flags,
		struct repl_msg *r)
{
	struct repl_msg m = { .type = REPL_MSG_COMMIT };
	memcpy(m.u.commit.replica_id, x->acc.replica_id, PMREP_UUID_SIZE);
	m.u.commit.generation = gen;
	m.u.commit.primary_id = primary;
	m.u.commit.resync = resync;
	m.u.commit.members = (struct repl_members){ .set_size = 1 };
	m.u.commit.claim_floor = floor;
	m.u.commit.flags = flags;
	return ini_req(x, &m, r);
}

static int
ini_persist_psn(struct ini *x, uint64_t off, uint64_t len, uint64_t psn,
		struct repl_msg *r)
{
	struct repl_msg m = { .type = REPL_MSG_PERSIST,
		.u.persist = { .offset = off, .length = len, .psn = psn } };
	return ini_req(x, &m, r);
}

static int
ini_close_psn(struct ini *x, uint64_t psn, struct repl_msg *r)
{
	struct repl_msg m = { .type = REPL_MSG_CLOSE, .u.close_psn = psn };
	return ini_req(x, &m, r);
}

static int
ini_persist(struct ini *x, uint64_t off, uint64_t len, struct repl_msg *r)
{
	struct repl_msg m = { .type = REPL_MSG_PERSIST,
		.u.persist = { .offset = off, .length = len } };
	return ini_req(x, &m, r);
}

static int
ini_simple(struct ini *x, enum repl_msg_type type, struct repl_msg *r)
{
	struct repl_msg m = { .type = type };
	return ini_req(x, &m, r);
}

/* a fake that is ACTIVE: AUTH, ACCEPT, COMMIT, COMMIT_REPLY(OK) */
static void
ini_attach(struct ctx *c, struct ini *x, uint64_t primary)
{
	struct repl_msg r;
	ini_open(c, x);
	assert_int_equal(ini_auth(x, 1, primary, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	assert_int_equal(ini_commit(x, x->acc.replica_id, 1, primary, &r),
			REPL_MSG_COMMIT_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
}

/* RDMA-write `len` bytes of `byte` at `off` of the data area through the
 * descriptor of the session's ACCEPT, and make them visible: 0, or the
 * first error (the write was refused, or the connection ended) */
static int
ini_write(struct ini *x, uint64_t off, size_t len, uint8_t byte)
{
	if (x->rmr == NULL) {
		assert_int_equal(pmrep_mr_remote_from_descriptor(x->acc.mr_desc,
				PMREP_MR_DESC_SIZE, &x->rmr), 0);
		x->buf = aligned_alloc(4096, 65536);
		assert_non_null(x->buf);
		assert_int_equal(pmrep_mr_reg(x->peer, x->buf, 65536,
				PMREP_MR_USAGE_WRITE_SRC, &x->lmr), 0);
	}
	memset(x->buf, byte, len);
	int ret = pmrep_write(x->conn, x->rmr, (size_t)off, x->lmr, 0, len,
			PMREP_F_COMPLETION_ON_ERROR, (void *)CTX_WRITE);
	if (ret)
		return ret;
	ret = pmrep_flush(x->conn, x->rmr, (size_t)off, len,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			(void *)CTX_FLUSH);
	if (ret)
		return ret;
	long long end = repl_now_ms() + 2000;
	while (repl_now_ms() < end) {
		enum repl_chan_ev ev;
		struct repl_msg m;
		ret = repl_chan_next(&x->ch, &ev, &m);
		if (ret)
			return ret;
		if (ev == REPL_CHAN_FLUSH)
			return 0;
		(void) repl_chan_wait_cq(&x->ch, 10);
	}
	return PMREP_E_TIMEOUT;
}

/* ------------------------------------------------------------ tests */

static void
commit_before_auth_is_refused_and_writes_nothing(void **state)
{
	struct ctx *c = *state;
	mirror_works(c);
	struct pmrep_replica_info i0 = info(c);
	static uint8_t h0[4096], h1[4096];
	read_hdr(c, h0);
	struct ini x;
	struct repl_msg r;
	ini_open(c, &x);
	assert_int_equal(ini_commit(&x, i0.replica_id, 1, 77, &r), REPL_MSG_REFUSE);
	assert_int_equal(r.status, REPL_ST_MALFORMED);
	assert_true(ini_gone(&x, 2000));
	ini_close(&x);
	settle();
	read_hdr(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	mirror_works(c);
}

static void
commit_unlike_its_auth_is_refused_and_writes_nothing(void **state)
{
	struct ctx *c = *state;
	mirror_works(c);
	struct pmrep_replica_info i0 = info(c);
	static uint8_t h0[4096], h1[4096];
	read_hdr(c, h0);
	uint8_t other[PMREP_UUID_SIZE];
	memcpy(other, i0.replica_id, sizeof(other));
	other[0] ^= 1;
	/* AUTH (generation 2, primary 77); COMMIT naming: another replica
	 * id; a lower generation; a higher one; another primary id */
	struct { const uint8_t *rid; uint64_t gen, primary; } bad[] = {
		{ other, 2, 77 }, { i0.replica_id, 1, 77 },
		{ i0.replica_id, 3, 77 }, { i0.replica_id, 2, 78 },
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct ini x;
		struct repl_msg r;
		ini_open(c, &x);
		assert_int_equal(ini_auth(&x, 2, 77, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
		assert_int_equal(ini_commit(&x, bad[k].rid, bad[k].gen,
				bad[k].primary, &r), REPL_MSG_REFUSE);
		assert_int_equal(r.status, REPL_ST_STATE);
		assert_true(ini_gone(&x, 2000));
		ini_close(&x);
		settle();
		read_hdr(c, h1);
		assert_memory_equal(h0, h1, sizeof(h0));
	}
	mirror_works(c);
}

static void
auth_replayed_from_another_session_is_refused(void **state)
{
	struct ctx *c = *state;
	mirror_works(c);
	static uint8_t h0[4096], h1[4096];
	read_hdr(c, h0);
	/* a recorded AUTH of one session ... */
	struct ini a, b;
	struct repl_msg r;
	ini_open(c, &a);
	struct repl_msg m = { .type = REPL_MSG_AUTH };
	memcpy(m.u.auth.uuid, uuid, PMREP_UUID_SIZE);
	m.u.auth.data_size = SIZE;
	m.u.auth.generation = 1;
	m.u.auth.primary_id = 77;
	m.u.auth.intent = REPL_INTENT_ATTACH;
	assert_int_equal(repl_auth_mac(key, sizeof(key), a.ni, a.nt,
			&m.u.auth, m.u.auth.mac), 0);
	ini_close(&a);
	/* ... sent in another: its MAC binds the other nonces */
	ini_open(c, &b);
	assert_int_equal(ini_req(&b, &m, &r), REPL_MSG_REFUSE);
	assert_int_equal(r.status, REPL_ST_AUTH);
	ini_close(&b);
	settle();
	read_hdr(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
}

static void
persist_and_close_before_commit_are_refused_and_the_commit_still_works(void **state)
{
	struct ctx *c = *state;
	mirror_works(c);
	struct pmrep_replica_info i0 = info(c);
	static uint8_t h0[4096], h1[4096];
	read_hdr(c, h0);
	struct ini x;
	struct repl_msg r;
	ini_open(c, &x);
	assert_int_equal(ini_auth(&x, 1, mine, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	assert_int_equal(ini_persist(&x, 0, 4096, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_STATE);
	assert_int_equal(ini_simple(&x, REPL_MSG_CLOSE, &r), REPL_MSG_CLOSE_REPLY);
	assert_int_equal(r.status, REPL_ST_STATE);
	settle();
	read_hdr(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	/* reordered: the COMMIT after them still commits */
	assert_int_equal(ini_commit(&x, i0.replica_id, 1, mine, &r), REPL_MSG_COMMIT_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	struct pmrep_replica_info i1 = info(c);
	assert_int_equal(i1.seq, i0.seq + 1);
	assert_int_equal(i1.owner, mine);
	assert_false(i1.flags & PMREP_REPLICA_F_CONSISTENT);
	/* a second COMMIT: STATE, nothing written */
	assert_int_equal(ini_commit(&x, i0.replica_id, 1, mine, &r), REPL_MSG_COMMIT_REPLY);
	assert_int_equal(r.status, REPL_ST_STATE);
	assert_int_equal(info(c).seq, i1.seq);
	/* a PERSIST now works */
	assert_int_equal(ini_persist(&x, 0, 4096, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	ini_close(&x);
	settle();
	mirror_works(c);
}

static void
persist_outside_the_data_area_is_refused_and_the_session_goes_on(void **state)
{
	struct ctx *c = *state;
	struct ini x;
	struct repl_msg r;
	mirror_works(c);	/* learns the real mirror's id */
	ini_attach(c, &x, mine);
	struct { uint64_t off, len; } bad[] = {
		{ SIZE, 1 }, { 0, SIZE + 1ull }, { SIZE - 1, 2 },
		{ UINT64_MAX, 1 }, { UINT64_MAX - 4095, 8192 }, { 4096, UINT64_MAX },
		{ (uint64_t)SIZE + 1, 0 }, { 1ull << 63, 1ull << 63 },
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		assert_int_equal(ini_persist(&x, bad[k].off, bad[k].len, &r),
				REPL_MSG_PERSIST_REPLY);
		assert_int_equal(r.status, REPL_ST_RANGE);
	}
	/* the edges that are inside */
	assert_int_equal(ini_persist(&x, SIZE, 0, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	assert_int_equal(ini_persist(&x, SIZE - 1, 1, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	assert_int_equal(ini_persist(&x, 0, SIZE, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	/* duplicated: each copy answered */
	struct repl_msg m = { .type = REPL_MSG_PERSIST, .seq = 5000,
		.u.persist = { .offset = 0, .length = 4096 } };
	assert_int_equal(repl_chan_send(&x.ch, &m), 0);
	assert_int_equal(repl_chan_send(&x.ch, &m), 0);
	assert_int_equal(ini_recv(&x, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.seq, 5000);
	assert_int_equal(ini_recv(&x, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.seq, 5000);
	ini_close(&x);
	settle();
	mirror_works(c);
}

static void
query_session_cannot_commit_persist_or_close_nor_end_an_active_mirror(void **state)
{
	struct ctx *c = *state;
	struct pmrep_mirror *m = mirror_open(c, 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000), 0);
	struct pmrep_replica_info i0 = info(c);
	static uint8_t h0[4096], h1[4096];
	read_hdr(c, h0);
	/* queries with our set and with the nil set, at our generation and
	 * at a higher one, with the mirror's own primary id or another */
	for (int k = 0; k < 2; k++) {
		struct ini x;
		struct repl_msg r;
		ini_open(c, &x);
		assert_int_equal(ini_auth(&x, 1 + (uint64_t)k, i0.owner,
				REPL_INTENT_QUERY, &r), REPL_MSG_ACCEPT);
		assert_int_equal(ini_commit(&x, i0.replica_id, 1 + (uint64_t)k,
				i0.owner, &r), REPL_MSG_COMMIT_REPLY);
		assert_int_equal(r.status, REPL_ST_STATE);
		assert_int_equal(ini_persist(&x, 0, 4096, &r), REPL_MSG_PERSIST_REPLY);
		assert_int_equal(r.status, REPL_ST_STATE);
		assert_int_equal(ini_simple(&x, REPL_MSG_CLOSE, &r), REPL_MSG_CLOSE_REPLY);
		assert_int_equal(r.status, REPL_ST_STATE);
		/* a second AUTH in the query: a protocol error, its end */
		assert_int_equal(ini_auth(&x, 1, 1, REPL_INTENT_ATTACH, &r), 0);
		ini_close(&x);
		settle();
		read_hdr(c, h1);
		assert_memory_equal(h0, h1, sizeof(h0));
		/* the mirror's session was not touched */
		assert_int_equal(pmrep_mirror_persist(m, 0, 4096, 3000), 0);
		struct pmrep_replica_status st;
		assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
		assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
}

/* open a session of `kind` (0 WAIT_AUTH, 1 ATTACHING, 2 ACTIVE, 3 QUERY) */
static void
session_in(struct ctx *c, struct ini *x, int kind)
{
	struct repl_msg r;
	if (kind == 2) {
		ini_attach(c, x, mine);
		return;
	}
	ini_open(c, x);
	if (kind == 1)
		assert_int_equal(ini_auth(x, 1, mine, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	else if (kind == 3)
		assert_int_equal(ini_auth(x, 1, 55, REPL_INTENT_QUERY, &r), REPL_MSG_ACCEPT);
}

/* send raw bytes in the first send slot of x's channel */
static void
raw_send(struct ini *x, const uint8_t *b, size_t len)
{
	uint8_t *slot = x->ch.buf + (size_t)CHAN_NRECV * REPL_MSG_SLOT;
	memcpy(slot, b, len);
	assert_int_equal(pmrep_send(x->conn, x->ch.mr, (size_t)CHAN_NRECV * REPL_MSG_SLOT,
			len, PMREP_F_COMPLETION_ON_ERROR, (void *)CTX_WRITE), 0);
}

static void
every_message_type_and_status_in_every_state_writes_nothing_it_must_not(void **state)
{
	struct ctx *c = *state;
	static uint8_t h0[4096], h1[4096];
	static const uint16_t statuses[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0xffff };
	mirror_works(c);	/* learns the real mirror's id */
	for (int kind = 0; kind < 4; kind++) {
		for (uint8_t type = 0; type <= 10; type++) {
			for (size_t k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++) {
				struct ini x;
				session_in(c, &x, kind);
				read_hdr(c, h0);
				/* the type's exact body length, all zero (an
				 * AUTH / COMMIT body of zeros does not decode:
				 * intent, resync kind 0) */
				uint8_t b[REPL_MSG_SLOT] = { 0 };
				struct repl_msg m = { .type = (enum repl_msg_type)type, .seq = 9 };
				size_t len = repl_msg_encode(&m, b);
				b[3] = type;
				b[4] = (uint8_t)statuses[k];
				b[5] = (uint8_t)(statuses[k] >> 8);
				raw_send(&x, b, len);
				struct repl_msg r;
				/* a header write comes before the reply or the
				 * end of the session that ini_recv waits for */
				int rt = ini_recv(&x, &r);
				ini_close(&x);
				read_hdr(c, h1);
				/* only a CLOSE of an ACTIVE session writes
				 * (the consistent mark) */
				if (kind == 2 && type == REPL_MSG_CLOSE && statuses[k] <= REPL_ST_MAX_) {
					assert_int_equal(rt, REPL_MSG_CLOSE_REPLY);
					assert_int_equal(r.status, REPL_ST_OK);
					assert_true(info(c).flags & PMREP_REPLICA_F_CONSISTENT);
				} else {
					assert_memory_equal(h0, h1, sizeof(h0));
				}
			}
		}
	}
	mirror_works(c);
}

static void
short_and_oversized_messages_end_only_their_session(void **state)
{
	struct ctx *c = *state;
	struct pmrep_mirror *m = mirror_open(c, 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000), 0);
	static uint8_t h0[4096], h1[4096];
	read_hdr(c, h0);
	/* a PERSIST cut at every length below its own, one of 300 bytes
	 * (more than the 256-byte slot), one of 256 with a body length
	 * claiming more */
	size_t lens[] = { 0, 1, 15, 16, 17, 31, 300, 256, 1024 };
	for (int kind = 0; kind < 4; kind++) {
		if (kind == 2)
			continue;	/* an ACTIVE attach would fence the mirror */
		for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
			struct ini x;
			session_in(c, &x, kind);
			uint8_t b[1024] = { 0 };
			struct repl_msg pm = { .type = REPL_MSG_PERSIST, .seq = 3,
				.u.persist = { .offset = 0, .length = 4096 } };
			(void) repl_msg_encode(&pm, b);
			if (lens[k] == 256)
				b[6] = 0xf0;	/* body length 240 */
			if (lens[k] > 0)
				raw_send(&x, b, lens[k]);
			struct repl_msg r;
			int rt = ini_recv(&x, &r);
			/* an answer, if any, is a refusal: never an OK */
			if (rt == REPL_MSG_PERSIST_REPLY)
				assert_int_not_equal(r.status, REPL_ST_OK);
			ini_close(&x);
		}
	}
	settle();
	read_hdr(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	assert_int_equal(pmrep_mirror_persist(m, 0, 4096, 3000), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
}

static void
attaching_flood_leaves_the_active_mirror_alone_and_expires(void **state)
{
	struct ctx *c = *state;
	struct pmrep_mirror *m = mirror_open(c, 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000), 0);
	static uint8_t h0[4096], h1[4096];
	read_hdr(c, h0);
	/* another primary at the same generation, the replica claimed and
	 * not closed: split brain, refused at AUTH */
	struct ini x[3];
	struct repl_msg r;
	ini_open(c, &x[0]);
	assert_int_equal(ini_auth(&x[0], 1, 900, REPL_INTENT_ATTACH, &r),
			REPL_MSG_REFUSE);
	assert_int_equal(r.status, REPL_ST_SPLIT_BRAIN);
	ini_close(&x[0]);
	/* every other slot ATTACHING (the same primary's reconnects),
	 * never committing */
	for (int i = 0; i < 3; i++) {
		ini_open(c, &x[i]);
		assert_int_equal(ini_auth(&x[i], 1, mine,
				REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	}
	/* the active mirror goes on */
	for (int k = 0; k < 5; k++)
		assert_int_equal(pmrep_mirror_persist(m, 0, 4096, 3000), 0);
	/* the flood expires at the target's ATTACHING deadline; nothing was
	 * written for it */
	for (int i = 0; i < 3; i++) {
		assert_true(ini_gone(&x[i], 3 * TGT_TIMEOUT));
		ini_close(&x[i]);
	}
	read_hdr(c, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	assert_int_equal(pmrep_mirror_persist(m, 0, 4096, 3000), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	mirror_works(c);
}

static void
close_ends_the_session_so_no_write_follows_the_consistent_mark(void **state)
{
	struct ctx *c = *state;
	struct ini x;
	struct repl_msg r;
	ini_attach(c, &x, mine);
	assert_int_equal(ini_write(&x, 0, 4096, 0x11), 0);
	assert_int_equal(ini_persist(&x, 0, 4096, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	assert_int_equal(ini_simple(&x, REPL_MSG_CLOSE, &r), REPL_MSG_CLOSE_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	struct pmrep_replica_info i1 = info(c);
	assert_true(i1.flags & PMREP_REPLICA_F_CONSISTENT);
	uint8_t *before = malloc(8192);
	int fd = open(c->rpath, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, before, 8192, PMREP_REPLICA_DATA_OFFSET), 8192);
	/* after the consistent mark: the session has ended -- no PERSIST is
	 * served and no write lands */
	settle();
	(void) ini_write(&x, 4096, 4096, 0x22);
	struct repl_msg pm = { .type = REPL_MSG_PERSIST,
		.u.persist = { .offset = 4096, .length = 4096 } };
	int rt = ini_req(&x, &pm, &r);
	if (rt == REPL_MSG_PERSIST_REPLY)
		assert_int_not_equal(r.status, REPL_ST_OK);
	uint8_t *after = malloc(8192);
	assert_int_equal(pread(fd, after, 8192, PMREP_REPLICA_DATA_OFFSET), 8192);
	close(fd);
	assert_memory_equal(before, after, 8192);
	struct pmrep_replica_info i2 = info(c);
	assert_int_equal(i2.seq, i1.seq);
	assert_true(i2.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_true(ini_gone(&x, 2000));
	free(before);
	free(after);
	ini_close(&x);
	mirror_works(c);
}

static void
query_session_cannot_write_the_data_of_an_active_mirror(void **state)
{
	struct ctx *c = *state;
	struct pmrep_mirror *m = mirror_open(c, 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000), 0);
	struct ini x;
	struct repl_msg r;
	ini_open(c, &x);
	assert_int_equal(ini_auth(&x, 1, 1, REPL_INTENT_QUERY, &r), REPL_MSG_ACCEPT);
	/* a read-only session: its write must be refused ... */
	int ret = ini_write(&x, 0, 4096, 0x66);
	ini_close(&x);
	/* ... and the replica still holds the log's bytes */
	uint8_t *rep = malloc(4096);
	int fd = open(c->rpath, O_RDONLY);
	assert_int_equal(pread(fd, rep, 4096, PMREP_REPLICA_DATA_OFFSET), 4096);
	close(fd);
	assert_int_not_equal(ret, 0);
	assert_memory_equal(rep, pmrep_pmem_get_address(c->src), 4096);
	free(rep);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
}

/* the header as the file holds it (its block into `blk`), decoded */
static struct replica_hdr
hdr_of(struct ctx *c, uint8_t blk[4096])
{
	read_hdr(c, blk);
	struct replica_hdr h;
	assert_int_equal(replica_hdr_decode(blk, 4096, 0, &h), 0);
	return h;
}

/* the position record at `off` of `blk` holds (psn, gen, owner) */
static void
assert_rec(const uint8_t *blk, size_t off, uint64_t psn, uint64_t gen,
		uint64_t owner)
{
	assert_int_equal(pmrep_get_le64(blk + off), psn);
	assert_int_equal(pmrep_get_le64(blk + off + 8), gen);
	assert_int_equal(pmrep_get_le64(blk + off + 16), owner);
}

/* the two position records of two blocks are the same, byte for byte */
static void
assert_recs_kept(const uint8_t *a, const uint8_t *b)
{
	assert_memory_equal(a + REPLICA_PSN_OFF, b + REPLICA_PSN_OFF,
			REPLICA_PSN1_OFF + REPLICA_POS_REC - REPLICA_PSN_OFF);
}

/*
 * the COMMIT rules of protocol 3, sent raw to an ATTACHING session: a
 * FENCE with a claim floor, a FULL or INCREMENTAL without one, unknown
 * COMMIT flags, reserved bytes, the 40-byte COMMIT of protocol 2, a
 * message header of version 2. Each ends the session (it does not
 * decode) and writes nothing: the header block, position words included,
 * is the same byte for byte.
 */
static void
commit_breaking_the_claim_floor_flags_or_reserved_rules_writes_nothing(void **state)
{
	struct ctx *c = *state;
	mirror_works(c);
	static uint8_t h0[4096], h1[4096];
	read_hdr(c, h0);
	for (int k = 0; k < 12; k++) {
		struct ini x;
		struct repl_msg r;
		ini_open(c, &x);
		assert_int_equal(ini_auth(&x, 1, mine, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
		struct repl_msg m = { .type = REPL_MSG_COMMIT, .seq = x.seq++ };
		memcpy(m.u.commit.replica_id, x.acc.replica_id, PMREP_UUID_SIZE);
		m.u.commit.generation = 1;
		m.u.commit.primary_id = mine;
		m.u.commit.resync = REPL_RESYNC_FULL;
		m.u.commit.members = (struct repl_members){ .set_size = 1 };
		m.u.commit.claim_floor = FLOOR;
		uint8_t b[REPL_MSG_SLOT];
		size_t len = repl_msg_encode(&m, b);
		assert_int_equal(len, REPL_MSG_HDR_SIZE + 56);
		uint8_t *body = b + REPL_MSG_HDR_SIZE;
		switch (k) {
		case 0:		/* a FENCE with a floor */
			pmrep_put_le32(body + 32, REPL_RESYNC_FENCE);
			break;
		case 1:		/* a FULL without one */
			pmrep_put_le64(body + 40, 0);
			break;
		case 2:		/* an INCREMENTAL without one */
			pmrep_put_le32(body + 32, REPL_RESYNC_INCREMENTAL);
			pmrep_put_le64(body + 40, 0);
			break;
		case 3:		/* an unknown COMMIT flag */
			pmrep_put_le32(body + 48, REPL_COMMIT_F_TRACKED | 2u);
			break;
		case 4:
			pmrep_put_le32(body + 48, 1u << 31);
			break;
		case 5: case 6: case 7: case 8:	/* reserved 52..55 */
			body[52 + (k - 5)] = 1;
			break;
		case 9:		/* protocol 2's COMMIT: 40 bytes */
			pmrep_put_le16(b + 6, 40);
			len = REPL_MSG_HDR_SIZE + 40;
			break;
		case 10:	/* a message header of version 2 */
			b[2] = 2;
			break;
		case 11:	/* resync kind 4 */
			pmrep_put_le32(body + 32, 4);
			break;
		}
		raw_send(&x, b, len);
		int rt = ini_recv(&x, &r);
		if (rt != 0)
			assert_int_not_equal(r.status, REPL_ST_OK);
		assert_int_not_equal(rt, REPL_MSG_COMMIT_REPLY);
		assert_true(ini_gone(&x, 2000));
		ini_close(&x);
		settle();
		read_hdr(c, h1);
		assert_memory_equal(h0, h1, sizeof(h0));
	}
	mirror_works(c);
}

/*
 * the position and the run (PROTOCOL.md "Position"): a COMMIT never
 * moves the position -- not the records, not which one is live; ACCEPT
 * and COMMIT_REPLY report it; only a step (PERSIST with a persist
 * sequence, CLOSE with the newest) of the claiming writer moves it, and a
 * new writer's first step writes the whole record not live, then the slot
 * names it. A writer's COMMIT names its run (run generation, run owner,
 * claim floor, TRACKED per its flags) and clears RUN_CLOSED; its CLOSE
 * sets CONSISTENT and RUN_CLOSED. A promotion's FENCE raises the
 * generation and names its owner but keeps the run, the claim floor,
 * TRACKED and RUN_CLOSED; its PERSIST is refused and its CLOSE writes
 * nothing.
 */
static void
commit_never_changes_the_position_only_the_writers_steps_do(void **state)
{
	struct ctx *c = *state;
	struct ini x;
	struct repl_msg r;
	static uint8_t blk[4096], prev[4096];
	const uint64_t A = 0x4141, B = 0x4242, C = 0x4343;
	const uint64_t F2 = 2ull << 40, F4 = 4ull << 40;
	const uint32_t MARK = PMREP_REPLICA_F_CONSISTENT | REPLICA_F_RUN_CLOSED;
	/* writer A (generation 1): a fresh replica has no position, no run */
	ini_open(c, &x);
	assert_int_equal(ini_auth(&x, 1, A, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	assert_int_equal(x.acc.pos_gen, 0);
	assert_int_equal(x.acc.pos_owner, 0);
	assert_int_equal(x.acc.last_persist_seq, 0);
	assert_int_equal(x.acc.claim_floor, 0);
	assert_int_equal(x.acc.run_gen, 0);
	assert_int_equal(x.acc.run_owner, 0);
	assert_false(x.acc.hdr_flags & REPLICA_F_RUN_CLOSED);
	assert_int_equal(ini_commit_as(&x, 1, A, REPL_RESYNC_FULL, FLOOR,
			REPL_COMMIT_F_TRACKED, &r), REPL_MSG_COMMIT_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	assert_int_equal(r.u.position.gen, 0);
	assert_int_equal(r.u.position.owner, 0);
	assert_int_equal(r.u.position.psn, 0);
	struct replica_hdr h = hdr_of(c, blk);
	assert_int_equal(h.generation, 1);
	assert_int_equal(h.owner, A);
	assert_int_equal(h.run_gen, 1);
	assert_int_equal(h.run_owner, A);
	assert_int_equal(h.claim_floor, FLOOR);
	assert_true(h.flags & REPLICA_F_TRACKED);
	assert_false(h.flags & REPLICA_F_POSW1);
	assert_false(h.flags & REPLICA_F_RUN_CLOSED);
	assert_int_equal(h.pos_gen, 0);
	assert_int_equal(h.pos_owner, 0);
	assert_rec(blk, REPLICA_PSN_OFF, 0, 0, 0);
	assert_rec(blk, REPLICA_PSN1_OFF, 0, 0, 0);
	/* A's steps: the position is A's, through its newest step; its
	 * first step took the record not live (4000), whole */
	assert_int_equal(ini_persist_psn(&x, 0, 4096, FLOOR | 1, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	h = hdr_of(c, blk);
	assert_true(h.flags & REPLICA_F_POSW1);
	assert_rec(blk, REPLICA_PSN1_OFF, FLOOR | 1, 1, A);
	assert_rec(blk, REPLICA_PSN_OFF, 0, 0, 0);
	assert_int_equal(ini_persist_psn(&x, 0, 4096, FLOOR | 5, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	/* never down */
	assert_int_equal(ini_persist_psn(&x, 0, 4096, FLOOR | 3, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	struct replica_hdr h1 = h;
	h = hdr_of(c, blk);
	assert_int_equal(h.seq, h1.seq);	/* the same writer: no slot write */
	assert_int_equal(h.pos_gen, 1);
	assert_int_equal(h.pos_owner, A);
	assert_true(h.flags & REPLICA_F_POSW1);
	assert_rec(blk, REPLICA_PSN1_OFF, FLOOR | 5, 1, A);
	assert_int_equal(replica_pos_psn(blk, &h), FLOOR | 5);
	assert_int_equal(info(c).last_persist_seq, FLOOR | 5);
	/* the run is the COMMIT's, not the steps' */
	assert_int_equal(h.run_gen, 1);
	assert_int_equal(h.run_owner, A);
	assert_int_equal(h.claim_floor, FLOOR);
	/* A's CLOSE: CONSISTENT and RUN_CLOSED, with its newest step, in one
	 * slot write */
	assert_int_equal(ini_close_psn(&x, FLOOR | 6, &r), REPL_MSG_CLOSE_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	ini_close(&x);
	settle();
	struct replica_hdr ha = hdr_of(c, blk);
	assert_int_equal(ha.seq, h.seq + 1);
	assert_int_equal(ha.flags & MARK, MARK);
	assert_true(ha.flags & REPLICA_F_TRACKED);
	assert_int_equal(ha.pos_gen, 1);
	assert_int_equal(ha.pos_owner, A);
	assert_int_equal(ha.run_gen, 1);
	assert_int_equal(ha.run_owner, A);
	assert_int_equal(ha.claim_floor, FLOOR);
	assert_rec(blk, REPLICA_PSN1_OFF, FLOOR | 6, 1, A);
	assert_int_equal(info(c).last_persist_seq, FLOOR | 6);
	memcpy(prev, blk, sizeof(prev));

	/* writer B (generation 2): ACCEPT reports A's position and run, the
	 * COMMIT keeps the position -- records and POSW1 -- and says so in
	 * COMMIT_REPLY; it names B's run, untracked, not closed */
	ini_open(c, &x);
	assert_int_equal(ini_auth(&x, 2, B, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	assert_int_equal(x.acc.pos_gen, 1);
	assert_int_equal(x.acc.pos_owner, A);
	assert_int_equal(x.acc.last_persist_seq, FLOOR | 6);
	assert_int_equal(x.acc.claim_floor, FLOOR);
	assert_int_equal(x.acc.run_gen, 1);
	assert_int_equal(x.acc.run_owner, A);
	assert_int_equal(x.acc.hdr_flags, ha.flags);
	assert_true(x.acc.hdr_flags & REPLICA_F_RUN_CLOSED);
	assert_int_equal(ini_commit_as(&x, 2, B, REPL_RESYNC_INCREMENTAL, F2, 0, &r),
			REPL_MSG_COMMIT_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	assert_int_equal(r.u.position.gen, 1);
	assert_int_equal(r.u.position.owner, A);
	assert_int_equal(r.u.position.psn, FLOOR | 6);
	h = hdr_of(c, blk);
	assert_int_equal(h.seq, ha.seq + 1);
	assert_int_equal(h.generation, 2);
	assert_int_equal(h.owner, B);
	assert_int_equal(h.run_gen, 2);
	assert_int_equal(h.run_owner, B);
	assert_int_equal(h.claim_floor, F2);
	assert_false(h.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_false(h.flags & REPLICA_F_RUN_CLOSED);	/* a writer's COMMIT */
	assert_false(h.flags & REPLICA_F_TRACKED);	/* B's COMMIT: untracked */
	assert_int_equal(h.flags & REPLICA_F_POSW1, ha.flags & REPLICA_F_POSW1);
	assert_int_equal(h.pos_gen, 1);
	assert_int_equal(h.pos_owner, A);
	assert_recs_kept(blk, prev);
	assert_int_equal(info(c).last_persist_seq, FLOOR | 6);
	/* B's first step: the whole record not live (3968), then the slot
	 * names B and it; A's record is kept */
	assert_int_equal(ini_persist_psn(&x, 0, 4096, F2 | 1, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	struct replica_hdr hc = h;
	h = hdr_of(c, blk);
	assert_int_equal(h.seq, hc.seq + 1);
	assert_int_equal(h.pos_gen, 2);
	assert_int_equal(h.pos_owner, B);
	assert_false(h.flags & REPLICA_F_POSW1);
	assert_rec(blk, REPLICA_PSN_OFF, F2 | 1, 2, B);
	assert_rec(blk, REPLICA_PSN1_OFF, FLOOR | 6, 1, A);
	assert_int_equal(h.run_gen, 2);
	assert_int_equal(h.run_owner, B);
	assert_int_equal(h.claim_floor, F2);
	assert_int_equal(info(c).last_persist_seq, F2 | 1);
	/* a PERSIST without a persist sequence moves nothing */
	memcpy(prev, blk, sizeof(prev));
	assert_int_equal(ini_persist_psn(&x, 0, 4096, 0, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	hdr_of(c, blk);
	assert_memory_equal(blk, prev, sizeof(blk));
	/* B's CLOSE: its run closed */
	assert_int_equal(ini_close_psn(&x, F2 | 2, &r), REPL_MSG_CLOSE_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	ini_close(&x);
	settle();
	struct replica_hdr hb = hdr_of(c, blk);
	assert_int_equal(hb.flags & MARK, MARK);
	assert_false(hb.flags & REPLICA_F_TRACKED);
	assert_rec(blk, REPLICA_PSN_OFF, F2 | 2, 2, B);
	assert_rec(blk, REPLICA_PSN1_OFF, FLOOR | 6, 1, A);
	memcpy(prev, blk, sizeof(prev));

	/* a promotion's FENCE (generation 3, by A): the generation is
	 * raised and A named owner; the position stays B's, and the run --
	 * B's run, its claim floor, untracked, closed -- is kept */
	ini_open(c, &x);
	assert_int_equal(ini_auth(&x, 3, A, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	assert_int_equal(x.acc.pos_gen, 2);
	assert_int_equal(x.acc.pos_owner, B);
	assert_int_equal(x.acc.last_persist_seq, F2 | 2);
	assert_int_equal(x.acc.claim_floor, F2);
	assert_int_equal(x.acc.run_gen, 2);
	assert_int_equal(x.acc.run_owner, B);
	assert_int_equal(x.acc.hdr_flags, hb.flags);
	assert_int_equal(ini_commit_as(&x, 3, A, REPL_RESYNC_FENCE, 0, 0, &r),
			REPL_MSG_COMMIT_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	assert_int_equal(r.u.position.gen, 2);
	assert_int_equal(r.u.position.owner, B);
	assert_int_equal(r.u.position.psn, F2 | 2);
	struct replica_hdr hf = hdr_of(c, blk);
	assert_int_equal(hf.seq, hb.seq + 1);
	assert_int_equal(hf.generation, 3);
	assert_int_equal(hf.owner, A);
	assert_int_equal(hf.run_gen, 2);
	assert_int_equal(hf.run_owner, B);
	assert_int_equal(hf.claim_floor, F2);
	assert_true(hf.flags & REPLICA_F_RUN_CLOSED);
	assert_false(hf.flags & REPLICA_F_TRACKED);
	assert_false(hf.flags & PMREP_REPLICA_F_CONSISTENT);	/* a claim */
	assert_int_equal(hf.pos_gen, 2);
	assert_int_equal(hf.pos_owner, B);
	assert_int_equal(hf.flags & REPLICA_F_POSW1, hb.flags & REPLICA_F_POSW1);
	assert_recs_kept(blk, prev);
	memcpy(prev, blk, sizeof(prev));
	/* its PERSIST is refused (with or without a persist sequence) and
	 * writes nothing */
	assert_int_equal(ini_persist_psn(&x, 0, 4096, (3ull << 40) | 1, &r),
			REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_STATE);
	assert_int_equal(ini_persist_psn(&x, 0, 4096, 0, &r), REPL_MSG_PERSIST_REPLY);
	assert_int_equal(r.status, REPL_ST_STATE);
	settle();
	hdr_of(c, blk);
	assert_memory_equal(blk, prev, sizeof(blk));
	/* its CLOSE is answered OK, writes nothing (no position, no
	 * CONSISTENT) and ends the session */
	assert_int_equal(ini_close_psn(&x, (3ull << 40) | 9, &r), REPL_MSG_CLOSE_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	assert_true(ini_gone(&x, 2000));
	ini_close(&x);
	settle();
	hf = hdr_of(c, blk);
	assert_memory_equal(blk, prev, sizeof(blk));
	assert_false(hf.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(hf.pos_gen, 2);
	assert_int_equal(hf.pos_owner, B);
	assert_int_equal(info(c).last_persist_seq, F2 | 2);
	/* a CLOSE without a persist sequence: the same */
	ini_open(c, &x);
	assert_int_equal(ini_auth(&x, 3, A, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	assert_int_equal(ini_commit_as(&x, 3, A, REPL_RESYNC_FENCE, 0, 0, &r),
			REPL_MSG_COMMIT_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	hf = hdr_of(c, blk);
	memcpy(prev, blk, sizeof(prev));
	assert_int_equal(ini_close_psn(&x, 0, &r), REPL_MSG_CLOSE_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	ini_close(&x);
	settle();
	hdr_of(c, blk);
	assert_memory_equal(blk, prev, sizeof(blk));
	assert_true(hf.flags & REPLICA_F_RUN_CLOSED);
	assert_int_equal(hf.run_gen, 2);

	/* writer C (generation 4), tracked: a writer's COMMIT after the
	 * fence names its run and clears RUN_CLOSED; the position stays */
	ini_open(c, &x);
	assert_int_equal(ini_auth(&x, 4, C, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	assert_int_equal(x.acc.run_gen, 2);
	assert_int_equal(x.acc.run_owner, B);
	assert_int_equal(x.acc.claim_floor, F2);
	assert_int_equal(x.acc.generation, 3);
	assert_int_equal(x.acc.owner, A);
	assert_true(x.acc.hdr_flags & REPLICA_F_RUN_CLOSED);
	assert_int_equal(ini_commit_as(&x, 4, C, REPL_RESYNC_INCREMENTAL, F4,
			REPL_COMMIT_F_TRACKED, &r), REPL_MSG_COMMIT_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	assert_int_equal(r.u.position.gen, 2);
	assert_int_equal(r.u.position.owner, B);
	assert_int_equal(r.u.position.psn, F2 | 2);
	struct replica_hdr h4 = hdr_of(c, blk);
	assert_int_equal(h4.generation, 4);
	assert_int_equal(h4.owner, C);
	assert_int_equal(h4.run_gen, 4);
	assert_int_equal(h4.run_owner, C);
	assert_int_equal(h4.claim_floor, F4);
	assert_true(h4.flags & REPLICA_F_TRACKED);
	assert_false(h4.flags & REPLICA_F_RUN_CLOSED);
	assert_int_equal(h4.pos_gen, 2);
	assert_int_equal(h4.pos_owner, B);
	assert_recs_kept(blk, prev);
	ini_close(&x);	/* no CLOSE: its run not closed */
	settle();
	memcpy(prev, blk, sizeof(prev));

	/* a second FENCE (generation 5): TRACKED set and RUN_CLOSED clear
	 * are kept as well */
	ini_open(c, &x);
	assert_int_equal(ini_auth(&x, 5, B, REPL_INTENT_ATTACH, &r), REPL_MSG_ACCEPT);
	assert_int_equal(ini_commit_as(&x, 5, B, REPL_RESYNC_FENCE, 0, 0, &r),
			REPL_MSG_COMMIT_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	hf = hdr_of(c, blk);
	assert_int_equal(hf.generation, 5);
	assert_int_equal(hf.owner, B);
	assert_int_equal(hf.run_gen, 4);
	assert_int_equal(hf.run_owner, C);
	assert_int_equal(hf.claim_floor, F4);
	assert_true(hf.flags & REPLICA_F_TRACKED);
	assert_false(hf.flags & REPLICA_F_RUN_CLOSED);
	assert_recs_kept(blk, prev);
	memcpy(prev, blk, sizeof(prev));
	assert_int_equal(ini_close_psn(&x, (5ull << 40) | 1, &r), REPL_MSG_CLOSE_REPLY);
	assert_int_equal(r.status, REPL_ST_OK);
	ini_close(&x);
	settle();
	hdr_of(c, blk);
	assert_memory_equal(blk, prev, sizeof(blk));
}

/* four read-only queries that stay connected fill every session slot: a
 * mirror still gets in (the oldest query is closed for it) */
static void
idle_query_sessions_cannot_lock_a_mirror_out(void **state)
{
	struct ctx *c = *state;
	struct ini x[4];
	struct repl_msg r;
	for (int i = 0; i < 4; i++) {
		ini_open(c, &x[i]);
		assert_int_equal(ini_auth(&x[i], 1, 1, REPL_INTENT_QUERY, &r), REPL_MSG_ACCEPT);
	}
	usleep(3 * TGT_TIMEOUT * 1000);
	struct pmrep_mirror *m = mirror_open(c, 0);
	(void) pmrep_mirror_delete(&m);
	for (int i = 0; i < 4; i++)
		ini_close(&x[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(commit_before_auth_is_refused_and_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(commit_breaking_the_claim_floor_flags_or_reserved_rules_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(commit_never_changes_the_position_only_the_writers_steps_do, setup, teardown),
		cmocka_unit_test_setup_teardown(commit_unlike_its_auth_is_refused_and_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(auth_replayed_from_another_session_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(persist_and_close_before_commit_are_refused_and_the_commit_still_works, setup, teardown),
		cmocka_unit_test_setup_teardown(persist_outside_the_data_area_is_refused_and_the_session_goes_on, setup, teardown),
		cmocka_unit_test_setup_teardown(query_session_cannot_commit_persist_or_close_nor_end_an_active_mirror, setup, teardown),
		cmocka_unit_test_setup_teardown(every_message_type_and_status_in_every_state_writes_nothing_it_must_not, setup, teardown),
		cmocka_unit_test_setup_teardown(short_and_oversized_messages_end_only_their_session, setup, teardown),
		cmocka_unit_test_setup_teardown(attaching_flood_leaves_the_active_mirror_alone_and_expires, setup, teardown),
		cmocka_unit_test_setup_teardown(close_ends_the_session_so_no_write_follows_the_consistent_mark, setup, teardown),
		cmocka_unit_test_setup_teardown(query_session_cannot_write_the_data_of_an_active_mirror, setup, teardown),
		cmocka_unit_test_setup_teardown(idle_query_sessions_cannot_lock_a_mirror_out, setup, teardown),
	};
	pmrep_log_set_threshold(getenv("TEST_LOG") ? PMREP_LOG_INFO : PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
