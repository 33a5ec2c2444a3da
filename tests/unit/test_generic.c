/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_generic.c -- the generic transport layer on a fake provider:
 * descriptors (peer cfg, MR), conn cfg limits, argument / range / usage /
 * state checks of every op, the exactly-once terminal event, the flush
 * method rule (T14), private data limits (T06), error strings and logging.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "transport/provider.h"
#include "transport/common.h"

/* ------------------------------------------------------ the fake provider */

static struct pmrep_op_args last_post;
static int posts;
static int post_ret;
static enum pmrep_conn_event next_events[8];
static int n_next_events;
static int connect_calls;

static int
fake_post(const struct pmrep_op_args *a)
{
	last_post = *a;
	posts++;
	return post_ret;
}

static int
fake_next_event(struct pmrep_conn *conn, enum pmrep_conn_event *ev)
{
	(void) conn;
	if (n_next_events == 0)
		return PMREP_E_NO_EVENT;
	*ev = next_events[0];
	memmove(next_events, next_events + 1,
			sizeof(next_events[0]) * (size_t)--n_next_events);
	return 0;
}

static int
fake_mr_reg(struct pmrep_peer *peer, void *ptr, size_t size, int usage,
		struct pmrep_mr_local **mr)
{
	struct pmrep_mr_local *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	m->peer = peer;
	m->ptr = ptr;
	m->size = size;
	m->usage = usage;
	m->raddr = (uintptr_t)ptr;
	m->rkey = 0x1234;
	*mr = m;
	return 0;
}

static int
fake_mr_dereg(struct pmrep_mr_local *mr)
{
	free(mr);
	return 0;
}

static int
fake_conn_req_connect(struct pmrep_conn_req *req,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn)
{
	(void) pdata;
	connect_calls++;
	struct pmrep_conn *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	c->peer = req->peer;
	c->event_fd = -1;
	c->comp_fd = -1;
	free(req);
	*conn = c;
	return 0;
}

static int
fake_conn_req_delete(struct pmrep_conn_req *req)
{
	free(req);
	return 0;
}

static int
fake_conn_delete(struct pmrep_conn *conn)
{
	free(conn);
	return 0;
}

static int
fake_peer_delete(struct pmrep_peer *peer)
{
	free(peer);
	return 0;
}

static const struct pmrep_provider_ops fake_ops = {
	.peer_delete = fake_peer_delete,
	.mr_reg = fake_mr_reg,
	.mr_dereg = fake_mr_dereg,
	.conn_req_connect = fake_conn_req_connect,
	.conn_req_delete = fake_conn_req_delete,
	.conn_next_event = fake_next_event,
	.conn_delete = fake_conn_delete,
	.post = fake_post,
};

struct fixture {
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;
	struct pmrep_mr_local *mr;
	struct pmrep_mr_remote *rmr;
	char buf[4096];
};

static struct pmrep_conn_req *
fake_req(struct pmrep_peer *peer, bool passive)
{
	struct pmrep_conn_req *req = calloc(1, sizeof(*req));
	assert_non_null(req);
	req->peer = peer;
	req->passive = passive;
	pmrep_peer_ref(peer);
	return req;
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->peer = calloc(1, sizeof(*f->peer));
	assert_non_null(f->peer);
	f->peer->ops = &fake_ops;
	f->peer->provider = PMREP_PROVIDER_TCP;
	f->peer->async_fd = -1;

	assert_int_equal(pmrep_mr_reg(f->peer, f->buf, sizeof(f->buf),
			PMREP_MR_USAGE_ALL, &f->mr), 0);
	uint8_t desc[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mr_get_descriptor(f->mr, desc), 0);
	assert_int_equal(pmrep_mr_remote_from_descriptor(desc, sizeof(desc),
			&f->rmr), 0);

	struct pmrep_conn_req *req = fake_req(f->peer, false);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &f->conn), 0);
	assert_null(req);
	posts = 0;
	post_ret = 0;
	n_next_events = 0;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(pmrep_conn_delete(&f->conn), 0);
	assert_int_equal(pmrep_mr_remote_delete(&f->rmr), 0);
	assert_int_equal(pmrep_mr_dereg(&f->mr), 0);
	assert_int_equal(pmrep_peer_delete(&f->peer), 0);
	free(f);
	return 0;
}

/* ---------------------------------------------------------- descriptors */

static void
peer_cfg_descriptor_round_trips_direct_write_flag(void **state)
{
	(void) state;
	for (int v = 0; v < 2; v++) {
		struct pmrep_peer_cfg *cfg, *back;
		uint8_t desc[PMREP_PEER_CFG_DESC_SIZE];
		bool dw = !v;
		assert_int_equal(pmrep_peer_cfg_new(&cfg), 0);
		assert_int_equal(pmrep_peer_cfg_set_direct_write_to_pmem(cfg, v), 0);
		assert_int_equal(pmrep_peer_cfg_get_descriptor(cfg, desc), 0);
		assert_int_equal(desc[0], 0x50);	/* little-endian magic */
		assert_int_equal(desc[1], 0x43);
		assert_int_equal(pmrep_peer_cfg_from_descriptor(desc, sizeof(desc), &back), 0);
		assert_int_equal(pmrep_peer_cfg_get_direct_write_to_pmem(back, &dw), 0);
		assert_int_equal(dw, v);
		assert_int_equal(pmrep_peer_cfg_delete(&cfg), 0);
		assert_int_equal(pmrep_peer_cfg_delete(&back), 0);
		assert_null(back);
	}
}

static void
t06_malformed_peer_cfg_descriptors_are_rejected(void **state)
{
	(void) state;
	struct pmrep_peer_cfg *cfg, *back = NULL;
	uint8_t good[PMREP_PEER_CFG_DESC_SIZE], bad[PMREP_PEER_CFG_DESC_SIZE];
	assert_int_equal(pmrep_peer_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_peer_cfg_get_descriptor(cfg, good), 0);
	assert_int_equal(pmrep_peer_cfg_delete(&cfg), 0);

	for (size_t len = 0; len < sizeof(good); len++)
		assert_int_equal(pmrep_peer_cfg_from_descriptor(good, len, &back),
				PMREP_E_MALFORMED);
	for (size_t i = 0; i < sizeof(good); i++) {
		memcpy(bad, good, sizeof(bad));
		bad[i] ^= (i == 3) ? 0x80 : 0x01;	/* flags: a reserved bit */
		assert_int_equal(pmrep_peer_cfg_from_descriptor(bad, sizeof(bad), &back),
				PMREP_E_MALFORMED);
	}
	assert_null(back);
	assert_int_equal(pmrep_peer_cfg_from_descriptor(NULL, 8, &back), PMREP_E_INVAL);
}

static void
mr_descriptor_round_trips_address_size_rkey_usage(void **state)
{
	struct fixture *f = *state;
	size_t size = 0;
	int ft = 0;
	assert_int_equal(f->rmr->raddr, (uintptr_t)f->buf);
	assert_int_equal(f->rmr->rkey, 0x1234);
	assert_int_equal(f->rmr->usage, PMREP_MR_USAGE_ALL);
	assert_int_equal(f->rmr->provider, PMREP_PROVIDER_TCP);
	assert_int_equal(pmrep_mr_remote_get_size(f->rmr, &size), 0);
	assert_int_equal(size, sizeof(f->buf));
	assert_int_equal(pmrep_mr_remote_get_flush_type(f->rmr, &ft), 0);
	assert_int_equal(ft, PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT);
}

static void
t06_malformed_mr_descriptors_are_rejected(void **state)
{
	struct fixture *f = *state;
	uint8_t good[PMREP_MR_DESC_SIZE], bad[PMREP_MR_DESC_SIZE];
	struct pmrep_mr_remote *r = NULL;
	assert_int_equal(pmrep_mr_get_descriptor(f->mr, good), 0);

	assert_int_equal(pmrep_mr_remote_from_descriptor(good, sizeof(good) - 1, &r),
			PMREP_E_MALFORMED);
	memcpy(bad, good, sizeof(bad)); bad[0] ^= 1;		/* magic */
	assert_int_equal(pmrep_mr_remote_from_descriptor(bad, sizeof(bad), &r), PMREP_E_MALFORMED);
	memcpy(bad, good, sizeof(bad)); bad[2] = 9;		/* version */
	assert_int_equal(pmrep_mr_remote_from_descriptor(bad, sizeof(bad), &r), PMREP_E_MALFORMED);
	memcpy(bad, good, sizeof(bad)); bad[3] = 7;		/* provider */
	assert_int_equal(pmrep_mr_remote_from_descriptor(bad, sizeof(bad), &r), PMREP_E_MALFORMED);
	memcpy(bad, good, sizeof(bad)); memset(bad + 16, 0, 8);	/* size 0 */
	assert_int_equal(pmrep_mr_remote_from_descriptor(bad, sizeof(bad), &r), PMREP_E_MALFORMED);
	memcpy(bad, good, sizeof(bad)); memset(bad + 8, 0xff, 8); /* addr + size overflows */
	assert_int_equal(pmrep_mr_remote_from_descriptor(bad, sizeof(bad), &r), PMREP_E_MALFORMED);
	memcpy(bad, good, sizeof(bad)); bad[25] = 0x01;		/* unknown usage bit */
	assert_int_equal(pmrep_mr_remote_from_descriptor(bad, sizeof(bad), &r), PMREP_E_MALFORMED);
	memcpy(bad, good, sizeof(bad)); bad[30] = 0x01;		/* reserved */
	assert_int_equal(pmrep_mr_remote_from_descriptor(bad, sizeof(bad), &r), PMREP_E_MALFORMED);
	assert_null(r);
}

/* -------------------------------------------------------------- conn cfg */

static void
conn_cfg_rejects_out_of_range_values_and_keeps_old_ones(void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg;
	uint32_t v;
	int t;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_get_timeout(cfg, &t), 0);
	assert_int_equal(t, 1000);
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, -5), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 250), 0);
	assert_int_equal(pmrep_conn_cfg_get_timeout(cfg, &t), 0);
	assert_int_equal(t, 250);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 65537), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 64), 0);
	assert_int_equal(pmrep_conn_cfg_get_sq_size(cfg, &v), 0);
	assert_int_equal(v, 64);
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(cfg, 0), 0);	/* 0 = no RCQ */
	assert_int_equal(pmrep_conn_cfg_set_rq_size(cfg, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_get_rq_size(cfg, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(pmrep_conn_cfg_set_connect_retries(cfg, 3, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_set_connect_retries(cfg, 3, 50), 0);
	assert_int_equal(pmrep_conn_cfg_set_timeout(NULL, 5), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_null(cfg);
}

/* ------------------------------------------------------------------ ops */

static void
write_checks_flags_usage_and_ranges_before_posting(void **state)
{
	struct fixture *f = *state;
	size_t n = sizeof(f->buf);
	assert_int_equal(pmrep_write(f->conn, f->rmr, 0, f->mr, 0, 16, 0, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_write(f->conn, f->rmr, 0, f->mr, 0, 16,
			PMREP_F_COMPLETION_ALWAYS | PMREP_F_COMPLETION_ON_ERROR, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_write(f->conn, f->rmr, 0, f->mr, 0, 0,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_write(f->conn, f->rmr, n - 8, f->mr, 0, 16,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_RANGE);
	assert_int_equal(pmrep_write(f->conn, f->rmr, 0, f->mr, n - 8, 16,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_RANGE);
	assert_int_equal(pmrep_write(f->conn, f->rmr, SIZE_MAX, f->mr, 0, 16,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_RANGE);
	assert_int_equal(pmrep_write(f->conn, f->rmr, 16, f->mr, 0, SIZE_MAX,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_RANGE);
	assert_int_equal(pmrep_write(NULL, f->rmr, 0, f->mr, 0, 16,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_INVAL);
	assert_int_equal(posts, 0);

	int ctx;
	assert_int_equal(pmrep_write_with_imm(f->conn, f->rmr, 100, f->mr, 8, 64, 0xabcd,
			PMREP_F_COMPLETION_ALWAYS, &ctx), 0);
	assert_int_equal(posts, 1);
	assert_int_equal(last_post.op, PMREP_OP_WRITE);
	assert_int_equal(last_post.remote_offset, 100);
	assert_int_equal(last_post.local_offset, 8);
	assert_int_equal(last_post.len, 64);
	assert_true(last_post.with_imm);
	assert_int_equal(last_post.imm, 0xabcd);
	assert_true(last_post.signaled);
	assert_ptr_equal(last_post.op_context, &ctx);
}

static void
read_needs_read_dst_usage_on_the_local_mr(void **state)
{
	struct fixture *f = *state;
	struct pmrep_mr_local *ro;
	assert_int_equal(pmrep_mr_reg(f->peer, f->buf, 64, PMREP_MR_USAGE_WRITE_SRC, &ro), 0);
	assert_int_equal(pmrep_read(f->conn, ro, 0, f->rmr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_INVAL);
	assert_int_equal(posts, 0);
	assert_int_equal(pmrep_read(f->conn, f->mr, 0, f->rmr, 0, 8,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(last_post.op, PMREP_OP_READ);
	assert_false(last_post.signaled);
	assert_int_equal(pmrep_mr_dereg(&ro), 0);
}

static void
remote_mr_of_another_provider_is_refused(void **state)
{
	struct fixture *f = *state;
	f->rmr->provider = PMREP_PROVIDER_VERBS;
	assert_int_equal(pmrep_write(f->conn, f->rmr, 0, f->mr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_INVAL);
	f->rmr->provider = PMREP_PROVIDER_TCP;
	assert_int_equal(posts, 0);
}

static void
atomic_write_needs_8_byte_aligned_remote_address(void **state)
{
	struct fixture *f = *state;
	uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	/* buf is at least 8-byte aligned in the fixture struct */
	assert_int_equal(pmrep_atomic_write(f->conn, f->rmr, 4, v,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_atomic_write(f->conn, f->rmr, sizeof(f->buf) - 4, v,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_RANGE);
	assert_int_equal(posts, 0);
	assert_int_equal(pmrep_atomic_write(f->conn, f->rmr, 8, v,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	assert_int_equal(last_post.op, PMREP_OP_ATOMIC_WRITE);
	assert_memory_equal(last_post.atomic_value, v, 8);
	assert_int_equal(last_post.len, 8);
}

static void
t14_persistent_flush_is_never_downgraded(void **state)
{
	struct fixture *f = *state;
	enum pmrep_flush_method m;
	struct pmrep_peer_cfg *pc;

	/* no native flush, remote did not declare direct write to pmem */
	f->peer->caps = 0;
	pmrep_conn_update_flush_method(f->conn);
	assert_int_equal(pmrep_conn_get_flush_method(f->conn, &m), 0);
	assert_int_equal(m, PMREP_FLUSH_METHOD_NONE);
	assert_int_equal(pmrep_flush(f->conn, f->rmr, 0, 64, PMREP_FLUSH_TYPE_PERSISTENT,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_NOSUPP);
	assert_int_equal(posts, 0);
	/* VISIBILITY still works and is posted as VISIBILITY */
	assert_int_equal(pmrep_flush(f->conn, f->rmr, 0, 64, PMREP_FLUSH_TYPE_VISIBILITY,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	assert_int_equal(last_post.flush_type, PMREP_FLUSH_TYPE_VISIBILITY);

	/* remote declares direct write to pmem: APM */
	assert_int_equal(pmrep_peer_cfg_new(&pc), 0);
	assert_int_equal(pmrep_peer_cfg_set_direct_write_to_pmem(pc, true), 0);
	assert_int_equal(pmrep_conn_apply_remote_peer_cfg(f->conn, pc), 0);
	assert_int_equal(pmrep_conn_get_flush_method(f->conn, &m), 0);
	assert_int_equal(m, PMREP_FLUSH_METHOD_APM);
	assert_int_equal(pmrep_flush(f->conn, f->rmr, 0, 64, PMREP_FLUSH_TYPE_PERSISTENT,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	assert_int_equal(last_post.flush_type, PMREP_FLUSH_TYPE_PERSISTENT);
	/* APM into a region not registered for persistent flush: refused */
	f->rmr->usage &= ~PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT;
	posts = 0;
	assert_int_equal(pmrep_flush(f->conn, f->rmr, 0, 64, PMREP_FLUSH_TYPE_PERSISTENT,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_NOSUPP);
	assert_int_equal(posts, 0);

	/* native flush capability wins; the target checks the MR itself */
	f->peer->caps = PMREP_CAP_NATIVE_FLUSH;
	assert_int_equal(pmrep_conn_apply_remote_peer_cfg(f->conn, pc), 0);
	assert_int_equal(pmrep_conn_get_flush_method(f->conn, &m), 0);
	assert_int_equal(m, PMREP_FLUSH_METHOD_NATIVE);
	assert_int_equal(pmrep_flush(f->conn, f->rmr, 0, 64, PMREP_FLUSH_TYPE_PERSISTENT,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	assert_int_equal(posts, 1);
	assert_int_equal(pmrep_flush(f->conn, f->rmr, 0, 64, 7,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_cfg_delete(&pc), 0);
}

static void
send_and_recv_check_usage_and_allow_an_empty_send(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(pmrep_send(f->conn, NULL, 0, 0, PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	assert_int_equal(last_post.op, PMREP_OP_SEND);
	assert_null(last_post.local);
	assert_int_equal(pmrep_send(f->conn, NULL, 0, 4, PMREP_F_COMPLETION_ALWAYS, NULL),
			PMREP_E_INVAL);
	assert_int_equal(pmrep_recv(f->conn, NULL, 0, 4, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_recv(f->conn, f->mr, 4090, 8, NULL), PMREP_E_RANGE);
	assert_int_equal(pmrep_recv(f->conn, f->mr, 0, 8, NULL), 0);
	assert_int_equal(last_post.op, PMREP_OP_RECV);
	assert_true(last_post.signaled);
}

static void
terminal_event_is_reported_exactly_once_and_ops_then_fail(void **state)
{
	struct fixture *f = *state;
	enum pmrep_conn_event ev;
	next_events[0] = PMREP_CONN_ESTABLISHED;
	next_events[1] = PMREP_CONN_LOST;
	next_events[2] = PMREP_CONN_CLOSED;	/* a provider's duplicate */
	n_next_events = 3;
	assert_int_equal(pmrep_conn_next_event(f->conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_next_event(f->conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_next_event(f->conn, &ev), PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_conn_wait_event(f->conn, 1000, &ev), PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_write(f->conn, f->rmr, 0, f->mr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	assert_int_equal(posts, 0);
	assert_string_equal(pmrep_conn_event_str(PMREP_CONN_LOST), "LOST");
	assert_string_equal(pmrep_conn_event_str(99), "UNDEFINED");
}

static void
t06_private_data_limits_are_checked_before_the_provider(void **state)
{
	struct fixture *f = *state;
	uint8_t big[200] = { 0 };
	struct pmrep_conn *c = NULL;
	struct pmrep_conn_req *req = fake_req(f->peer, false);
	struct pmrep_conn_private_data pd = { big, PMREP_PDATA_CONNECT_MAX + 1 };
	connect_calls = 0;
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &c), PMREP_E_INVAL);
	assert_non_null(req);		/* not consumed */
	assert_int_equal(connect_calls, 0);
	pd.len = PMREP_PDATA_CONNECT_MAX;
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &c), 0);
	assert_null(req);
	assert_int_equal(connect_calls, 1);
	assert_int_equal(pmrep_conn_delete(&c), 0);

	req = fake_req(f->peer, true);	/* accept: up to 196 */
	pd.len = PMREP_PDATA_ACCEPT_MAX + 1;
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &c), PMREP_E_INVAL);
	pd.len = PMREP_PDATA_ACCEPT_MAX;
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &c), 0);
	assert_int_equal(pmrep_conn_delete(&c), 0);

	/* a length with no buffer */
	req = fake_req(f->peer, false);
	pd.ptr = NULL;
	pd.len = 4;
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &c), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_null(req);
}

static void
peer_delete_is_refused_while_objects_remain(void **state)
{
	struct fixture *f = *state;
	struct pmrep_peer *p = f->peer;
	assert_int_equal(pmrep_peer_delete(&p), PMREP_E_BUSY);
	assert_ptr_equal(p, f->peer);
}

/* ------------------------------------------------------- errors and logs */

static int log_calls;
static enum pmrep_log_level log_level;
static char log_msg[256];

static void
log_sink(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg)
{
	(void) file; (void) line; (void) func;
	assert_ptr_equal(arg, &log_calls);
	log_calls++;
	log_level = level;
	snprintf(log_msg, sizeof(log_msg), "%s", msg);
}

static void
errors_are_logged_to_the_user_function_and_kept_as_message(void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg;
	assert_int_equal(pmrep_log_set_function(log_sink, &log_calls), 0);
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	log_calls = 0;
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, -1), PMREP_E_INVAL);
	assert_int_equal(log_calls, 1);
	assert_int_equal(log_level, PMREP_LOG_ERROR);
	assert_non_null(strstr(log_msg, "timeout"));
	assert_string_equal(pmrep_err_msg(), log_msg);

	/* below the threshold: not delivered, still remembered */
	assert_int_equal(pmrep_log_set_threshold(PMREP_LOG_DISABLED), 0);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 0), PMREP_E_INVAL);
	assert_int_equal(log_calls, 1);
	assert_non_null(strstr(pmrep_err_msg(), "sq_size"));
	assert_int_equal(pmrep_log_set_threshold(PMREP_LOG_DEBUG + 1), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_get_threshold(), PMREP_LOG_DISABLED);
	assert_int_equal(pmrep_log_set_threshold(PMREP_LOG_WARNING), 0);
	assert_int_equal(pmrep_log_set_function(NULL, NULL), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

static void
provider_errno_is_kept_and_every_code_has_a_string(void **state)
{
	(void) state;
	assert_int_equal(PMREP_ERR_PROVIDER(113, "rdma_connect"), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), 113);
	assert_non_null(strstr(pmrep_err_msg(), "rdma_connect"));
	for (int e = PMREP_E_MISMATCH; e <= PMREP_E_UNKNOWN; e++)
		assert_string_not_equal(pmrep_err_to_str(e), "unknown error code");
	assert_string_equal(pmrep_err_to_str(-1), "unknown error code");
	assert_string_equal(pmrep_err_to_str(0), "success");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(peer_cfg_descriptor_round_trips_direct_write_flag),
		cmocka_unit_test(t06_malformed_peer_cfg_descriptors_are_rejected),
		cmocka_unit_test_setup_teardown(mr_descriptor_round_trips_address_size_rkey_usage, setup, teardown),
		cmocka_unit_test_setup_teardown(t06_malformed_mr_descriptors_are_rejected, setup, teardown),
		cmocka_unit_test(conn_cfg_rejects_out_of_range_values_and_keeps_old_ones),
		cmocka_unit_test_setup_teardown(write_checks_flags_usage_and_ranges_before_posting, setup, teardown),
		cmocka_unit_test_setup_teardown(read_needs_read_dst_usage_on_the_local_mr, setup, teardown),
		cmocka_unit_test_setup_teardown(remote_mr_of_another_provider_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(atomic_write_needs_8_byte_aligned_remote_address, setup, teardown),
		cmocka_unit_test_setup_teardown(t14_persistent_flush_is_never_downgraded, setup, teardown),
		cmocka_unit_test_setup_teardown(send_and_recv_check_usage_and_allow_an_empty_send, setup, teardown),
		cmocka_unit_test_setup_teardown(terminal_event_is_reported_exactly_once_and_ops_then_fail, setup, teardown),
		cmocka_unit_test_setup_teardown(t06_private_data_limits_are_checked_before_the_provider, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_delete_is_refused_while_objects_remain, setup, teardown),
		cmocka_unit_test(errors_are_logged_to_the_user_function_and_kept_as_message),
		cmocka_unit_test(provider_errno_is_kept_and_every_code_has_a_string),
	};
	return cmocka_run_group_tests_name("generic transport", tests, NULL, NULL);
}
