/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_faults.c -- the transport's answers to network and device
 * faults, one case each: an error completion ends the
 * connection (T21), the local ACK timeout and retry count follow the
 * configured timeout (T23), GPSPM receives before accept and bounded RNR
 * retries (T27), and a native FLUSH of 4 GiB or more split below the
 * wire's 32-bit length.
 * Past ~800 lines: one program for the fault cases; they share mock fixtures.
 */
#include "test_verbs_util.h"

static void
expect_event(struct pmrep_conn *conn, enum pmrep_conn_event want)
{
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, want);
}

static void
expect_no_event(struct pmrep_conn *conn)
{
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), PMREP_E_NO_EVENT);
}

/* poll `cq` dry into c[] (at most max); how many */
static int
poll_all(struct pmrep_cq *cq, struct pmrep_completion *c, int max)
{
	int got = 0, n = 0;
	while (got < max && pmrep_cq_get_completions(cq, c + got, max - got,
			&n) == 0)
		got += n;
	return got;
}

/* ------------------------------------------------------------ T21 */

/*
 * Three writes; the first meets a wrong rkey: it completes with a remote
 * access error, the two behind it are flushed. No CM or async event comes.
 * Polling the error makes the conn LOST at once (its fd wakes, exactly one
 * LOST), and every later post is refused without reaching the device.
 */
static void
T21_error_completion_makes_the_conn_lost_and_later_posts_fail(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	for (uintptr_t i = 1; i <= 3; i++)
		assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0,
				64, PMREP_F_COMPLETION_ALWAYS, (void *)i), 0);
	assert_int_equal(mock_qp_complete_sends(f.vc->qp, 1,
			IBV_WC_REM_ACCESS_ERR), 1);
	assert_int_equal(mock_qp_state(f.vc->qp), IBV_QPS_ERR);
	int efd = -1;
	assert_int_equal(pmrep_conn_get_event_fd(f.conn, &efd), 0);
	assert_false(tv_readable(efd, 0));	/* nothing from rdma_cm */

	struct pmrep_completion c[8];
	assert_int_equal(poll_all(f.conn->cq, c, 8), 3);
	assert_int_equal(c[0].status, PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_ptr_equal(c[0].op_context, (void *)1);
	assert_int_equal(c[1].status, PMREP_WC_FLUSHED);
	assert_int_equal(c[2].status, PMREP_WC_FLUSHED);
	assert_true(tv_logged("the QP is in the error state, the connection is lost"));

	/* lost at once: the fd is readable, posts are refused now */
	assert_true(tv_readable(efd, 0));
	size_t sends = mock_send_count(), recvs = mock_recv_count();
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)4), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_send(f.conn, f.local, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, (void *)5), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_flush(f.conn, f.remote, 0, 64,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			(void *)6), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 64, (void *)7),
			PMREP_E_CONN_LOST);
	assert_int_equal(mock_send_count(), sends);
	assert_int_equal(mock_recv_count(), recvs);
	assert_int_equal(poll_all(f.conn->cq, c, 8), 0);

	/* exactly one terminal event, then nothing (and the fd is quiet) */
	expect_event(f.conn, PMREP_CONN_LOST);
	expect_no_event(f.conn);
	assert_false(tv_readable(efd, 0));
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	assert_int_equal(mock_send_count(), sends);
	tv_post_fx_close(&f);
}

/* an unsignalled write's error is reported too, and ends the conn */
static void
T21_unsignalled_request_error_ends_the_conn_too(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 64,
			PMREP_F_COMPLETION_ON_ERROR, (void *)1), 0);
	assert_int_equal(mock_qp_complete_sends(f.vc->qp, 1,
			IBV_WC_REM_ACCESS_ERR), 1);
	struct pmrep_completion c[4];
	assert_int_equal(poll_all(f.conn->cq, c, 4), 1);
	assert_int_equal(c[0].status, PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 64,
			PMREP_F_COMPLETION_ON_ERROR, NULL), PMREP_E_CONN_LOST);
	expect_event(f.conn, PMREP_CONN_LOST);
	expect_no_event(f.conn);
	tv_post_fx_close(&f);
}

/* the acceptor's side: a receive's error (its QP in error) ends it too */
static void
T21_passive_receive_error_makes_the_conn_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn *conn = tv_passive(ep, NULL);
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	assert_int_equal(pmrep_recv(conn, mr, 0, 64, (void *)1), 0);
	assert_int_equal(pmrep_recv(conn, mr, 64, 64, (void *)2), 0);
	/* a SEND larger than the receive: LOC_LEN_ERR, the QP in error */
	uint8_t big[128] = { 0 };
	mock_qp_recv(tv_vconn(conn)->qp, big, sizeof(big));
	struct pmrep_cq *rcq = conn->rcq ? conn->rcq : conn->cq;
	struct pmrep_completion c[4];
	int n = poll_all(rcq, c, 4);
	assert_true(n >= 1);
	assert_int_equal(c[0].status, PMREP_WC_LOCAL_LENGTH_ERROR);
	assert_int_equal(pmrep_recv(conn, mr, 0, 64, NULL), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_send(conn, mr, 0, 8, PMREP_F_COMPLETION_ALWAYS,
			NULL), PMREP_E_CONN_LOST);
	expect_event(conn, PMREP_CONN_LOST);
	expect_no_event(conn);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* flush errors of our own disconnect keep its CLOSED: never a LOST */
static void
T21_flushes_after_a_local_disconnect_stay_closed(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	for (uintptr_t i = 1; i <= 2; i++)
		assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0,
				64, PMREP_F_COMPLETION_ALWAYS, (void *)i), 0);
	assert_int_equal(pmrep_conn_disconnect(f.conn), 0);
	struct pmrep_completion c[4];
	assert_int_equal(poll_all(f.conn->cq, c, 4), 2);
	assert_int_equal(c[0].status, PMREP_WC_FLUSHED);
	expect_event(f.conn, PMREP_CONN_CLOSED);
	expect_no_event(f.conn);
	tv_post_fx_close(&f);
}

/* ------------------------------------------------------------ T23 */

static struct pmrep_conn_cfg *
timeout_cfg(int timeout_ms, unsigned retries, int backoff_ms)
{
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, timeout_ms), 0);
	assert_int_equal(pmrep_conn_cfg_set_connect_retries(cfg, retries,
			backoff_ms), 0);
	return cfg;
}

/* one recorded ACK timeout option: level, name, one byte of value */
static void
assert_ack_option(const struct mock_cm_option *o, uint8_t exp)
{
	assert_int_equal(o->level, RDMA_OPTION_ID);
	assert_int_equal(o->optname, RDMA_OPTION_ID_ACK_TIMEOUT);
	assert_int_equal(o->optlen, 1);
	assert_int_equal(o->value[0], exp);
}

/*
 * Active side: the first id's ACK timeout is set before rdma_connect; two
 * attempts are refused (nothing listens yet): each retry makes a new id,
 * and each of them gets its ACK timeout before its rdma_connect. Passive
 * side: set on the request's id before rdma_accept. The conn shows the
 * timing it uses.
 */
static void
T23_ack_timeout_is_set_before_connect_and_on_every_retry_id(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = timeout_cfg(1000, 5, 10);
	struct pmrep_conn_req *req = tv_req(peer, cfg);
	assert_int_equal(mock_cm_option_count(), 0);	/* nothing yet */
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
	struct mock_cm_event_spec est = {
		.type = RDMA_CM_EVENT_ESTABLISHED, .set_param = true,
		.param = { .responder_resources = 16, .initiator_depth = 16,
			.retry_count = 6, .rnr_retry_count = 6 },
	};
	uint8_t f[4];
	est.pdata = f;
	est.len = tv_frame(f, NULL, 0);
	mock_cm_react_ex("rdma_connect", &est);

	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	const struct mock_cm_call *c = mock_cm_last("rdma_connect");
	assert_int_equal(c->count, 1);
	assert_true(c->ack_timeout_set);
	assert_int_equal(c->ack_timeout, 15);
	assert_int_equal(mock_cm_option_count(), 1);
	const struct mock_cm_option *o0 = mock_cm_option(0);
	assert_ack_option(o0, 15);
	assert_ptr_equal(o0->id, c->id);
	assert_true(o0->seq < c->seq);
	unsigned first_connect_seq = c->seq;

	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, 3000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	c = mock_cm_last("rdma_connect");
	assert_int_equal(c->count, 3);
	/* every one of the three connects found its id's timeout set */
	assert_int_equal(c->count_with_ack_timeout, 3);
	assert_int_equal(mock_cm_option_count(), 3);
	for (size_t i = 0; i < 3; i++)
		assert_ack_option(mock_cm_option(i), 15);
	const struct mock_cm_option *o2 = mock_cm_option(2);
	assert_ptr_equal(o2->id, tv_vconn(conn)->id);
	assert_ptr_equal(o2->id, c->id);
	assert_true(mock_cm_option(1)->seq > first_connect_seq);
	assert_true(o2->seq > mock_cm_option(1)->seq);
	assert_true(o2->seq < c->seq);
	/* the retry count follows from the same timeout */
	assert_int_equal(c->param.retry_count, 6);

	struct pmrep_conn_rc_timing t;
	assert_int_equal(pmrep_conn_get_rc_timing(conn, &t), 0);
	assert_int_equal(t.ack_timeout_exp, 15);
	assert_int_equal(t.ack_timeout_us, 134218);	/* 4.096 us * 2^15 */
	assert_int_equal(t.retry_count, 6);
	assert_int_equal(t.rnr_retry_count, 6);		/* the REP's */
	assert_int_equal(t.detect_us, 7 * 134218ULL);
	assert_true(t.detect_us <= 1000 * 1000);
	assert_int_equal(pmrep_conn_get_rc_timing(conn, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);

	/* passive: the request's id, before rdma_accept; its own timeout */
	cfg = timeout_cfg(100, 0, 1);
	struct pmrep_ep *ep = tv_listen(peer);
	struct mock_cm_event_spec rq = {
		.set_param = true,
		.param = { .responder_resources = 16, .initiator_depth = 16,
			.retry_count = 4, .rnr_retry_count = 6 },
	};
	uint8_t g[4];
	rq.pdata = g;
	rq.len = tv_frame(g, NULL, 0);
	mock_cm_queue_conn_request_ex(tv_ep_id(ep), &rq);
	assert_int_equal(pmrep_ep_next_conn_req(ep, cfg, &req), 0);
	size_t before = mock_cm_option_count();
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	c = mock_cm_last("rdma_accept");
	assert_int_equal(mock_cm_option_count(), before + 1);
	const struct mock_cm_option *op = mock_cm_option(before);
	assert_ack_option(op, 12);	/* 100 ms: 16.8 ms per retransmission */
	assert_ptr_equal(op->id, c->id);
	assert_true(op->seq < c->seq);
	assert_true(c->ack_timeout_set);
	assert_int_equal(pmrep_conn_get_rc_timing(conn, &t), 0);
	assert_int_equal(t.ack_timeout_exp, 12);
	assert_int_equal(t.retry_count, 4);	/* the initiator's */
	assert_int_equal(t.rnr_retry_count, 6);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* rdma_set_option failing: the connect fails, nothing is sent, no leak */
static void
T23_ack_timeout_failure_fails_the_connect(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_req *req = tv_req(peer, NULL);
	mock_fail("rdma_set_option", 1, ENOSYS);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn),
			PMREP_E_PROVIDER);
	assert_null(conn);
	assert_int_equal(mock_calls("rdma_connect"), 0);
	assert_true(tv_logged("RDMA_OPTION_ID_ACK_TIMEOUT"));
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/*
 * The formula: the largest exponent whose 4.096 us * 2^exp fits T / 4,
 * never 0 ("never retransmit"), at most 31; retries floor(T / t) - 1 in
 * 1..7, so (retries + 1) * t <= T. The conn sends what it derives.
 */
static void
T23_exponent_follows_the_configured_timeout_and_is_never_zero(void **state)
{
	(void) state;
	static const struct { int ms; unsigned exp, retry; } known[] = {
		{ 1, 5, 6 },		/* 131 us */
		{ 10, 9, 3 },		/* 2.1 ms */
		{ 100, 12, 4 },		/* 16.8 ms */
		{ 1000, 15, 6 },	/* 134 ms */
		{ 5000, 18, 3 },	/* 1.07 s */
		{ 60000, 21, 5 },	/* 8.6 s */
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		struct pmrep_conn_rc_timing t;
		verbs_rc_timing(known[i].ms, &t);
		assert_int_equal(t.ack_timeout_exp, known[i].exp);
		assert_int_equal(t.retry_count, known[i].retry);
	}
	int sweep[] = { 1, 2, 3, 7, 10, 33, 250, 999, 1000, 1001, 4321,
		30000, 86400000, 0x7fffffff };
	for (size_t i = 0; i < sizeof(sweep) / sizeof(sweep[0]); i++) {
		struct pmrep_conn_rc_timing t;
		uint64_t total_ns = (uint64_t)sweep[i] * 1000000ULL;
		verbs_rc_timing(sweep[i], &t);
		assert_true(t.ack_timeout_exp >= 1);
		assert_true(t.ack_timeout_exp <= 31);
		uint64_t ns = 4096ULL << t.ack_timeout_exp;
		assert_int_equal(t.ack_timeout_us, (ns + 999) / 1000);
		assert_true(t.retry_count >= 1 && t.retry_count <= 7);
		if (t.ack_timeout_exp < 31) {
			assert_true(ns <= total_ns / 4);
			assert_true((ns << 1) > total_ns / 4);	/* the largest */
			assert_true(ns * (t.retry_count + 1) <= total_ns);
			assert_int_equal(t.retry_count, total_ns / ns - 1);
		}
		assert_int_equal(t.detect_us,
				t.ack_timeout_us * (t.retry_count + 1));
	}
	/* the conn sends what it derives: 5000 ms -> exponent 18, 3 retries */
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = timeout_cfg(5000, 0, 1);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	const struct mock_cm_call *c = mock_cm_last("rdma_connect");
	assert_int_equal(c->ack_timeout, 18);
	assert_int_equal(c->param.retry_count, 3);
	assert_int_equal(mock_cm_option(mock_cm_option_count() - 1)->value[0],
			18);
	assert_int_not_equal(mock_cm_option(0)->value[0], 0);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------------ T27 */

/*
 * GPSPM: the target's receives for persist requests are posted on the
 * request's QP before rdma_accept -- the initiator may send the moment it
 * sees ESTABLISHED. The initiator's own receives (for the responses) are
 * on its QP before rdma_connect, also on a retry's new QP.
 */
static void
T27_gpspm_receives_are_posted_before_accept_and_connect(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_req *req = tv_passive_req(ep, NULL, NULL, 0);
	for (uintptr_t i = 0; i < 4; i++)
		assert_int_equal(pmrep_conn_req_recv(req, mr, i * 64, 64,
				(void *)(i + 1)), 0);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	const struct mock_cm_call *c = mock_cm_last("rdma_accept");
	assert_int_equal(c->count, 1);
	assert_int_equal(c->qp_rq_used, 4);
	/* a persist request that arrives at once finds its receive */
	mock_qp_recv(tv_vconn(conn)->qp, "persist", 7);
	struct pmrep_completion wc[4];
	struct pmrep_cq *rcq = conn->rcq ? conn->rcq : conn->cq;
	assert_int_equal(poll_all(rcq, wc, 4), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_ptr_equal(wc[0].op_context, (void *)1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);

	/* active: before rdma_connect, and again before a retry's connect */
	struct pmrep_conn_cfg *cfg = timeout_cfg(1000, 2, 5);
	req = tv_req(peer, cfg);
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 64, (void *)0xa), 0);
	assert_int_equal(pmrep_conn_req_recv(req, mr, 64, 64, (void *)0xb), 0);
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
	uint8_t f[4];
	uint8_t flen = tv_frame(f, NULL, 0);
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_ESTABLISHED, 0, f, flen);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	assert_int_equal(mock_cm_last("rdma_connect")->qp_rq_used, 2);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, 3000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	c = mock_cm_last("rdma_connect");
	assert_int_equal(c->count, 2);
	assert_int_equal(c->qp_rq_used, 2);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/*
 * RNR retries are bounded on both sides (6; 7 would mean forever, and an
 * unbounded detection time); a peer granting 7 is named in the log.
 */
static void
T27_rnr_retries_are_bounded_on_connect_and_accept(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	/* the mock's default ESTABLISHED param grants 7: logged */
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	const struct mock_cm_call *c = mock_cm_last("rdma_connect");
	assert_int_equal(c->param.rnr_retry_count, 6);
	assert_true(tv_logged("the acceptor grants unbounded RNR retries (7)"));
	struct pmrep_conn_rc_timing t;
	assert_int_equal(pmrep_conn_get_rc_timing(conn, &t), 0);
	assert_int_equal(t.rnr_retry_count, 7);	/* as granted, shown */
	assert_int_equal(pmrep_conn_delete(&conn), 0);

	struct pmrep_ep *ep = tv_listen(peer);
	conn = tv_passive(ep, NULL);
	c = mock_cm_last("rdma_accept");
	assert_int_equal(c->param.rnr_retry_count, 6);
	assert_true(c->param.rnr_retry_count < 7);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/*
 * A persist request finds no receive for longer than the RNR retries
 * last: its SEND completes with IBV_WC_RNR_RETRY_EXC_ERR. That is an error
 * completion like any other: reported with the request's context, the
 * conn LOST at once (the mirror fails the replica and reconnects), never
 * a hang or a silent drop.
 */
static void
T27_rnr_retry_exceeded_is_an_error_completion_that_fails_the_conn(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	assert_int_equal(pmrep_send(f.conn, f.local, 0, 32,
			PMREP_F_COMPLETION_ALWAYS, (void *)0x27), 0);
	assert_int_equal(pmrep_send(f.conn, f.local, 32, 32,
			PMREP_F_COMPLETION_ON_ERROR, (void *)0x28), 0);
	assert_int_equal(mock_qp_complete_sends(f.vc->qp, 1,
			IBV_WC_RNR_RETRY_EXC_ERR), 1);
	struct pmrep_completion c[4];
	assert_int_equal(poll_all(f.conn->cq, c, 4), 2);
	assert_int_equal(c[0].status, PMREP_WC_RNR_RETRY_EXCEEDED);
	assert_ptr_equal(c[0].op_context, (void *)0x27);
	assert_int_equal(c[0].op, PMREP_OP_SEND);
	assert_int_equal(c[1].status, PMREP_WC_FLUSHED);
	assert_ptr_equal(c[1].op_context, (void *)0x28);
	int efd = -1;
	assert_int_equal(pmrep_conn_get_event_fd(f.conn, &efd), 0);
	assert_true(tv_readable(efd, 0));
	assert_int_equal(pmrep_send(f.conn, f.local, 0, 32,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	expect_event(f.conn, PMREP_CONN_LOST);
	expect_no_event(f.conn);
	tv_post_fx_close(&f);
}

/* ------------------------------------------- FLUSH of 4 GiB or more */

#define GiB (1ULL << 30)

/* pieces of a split: each below 2^32, in order, contiguous, covering it */
static void
assert_pieces(uint64_t raddr, uint64_t len, const struct verbs_flush_piece *p,
		unsigned n)
{
	uint64_t at = raddr;
	for (unsigned k = 0; k < n; k++) {
		assert_int_equal(p[k].raddr, at);
		assert_true(p[k].len > 0);
		assert_true(p[k].len < (1ULL << 32));
		if (k + 1 < n)
			assert_int_equal(p[k].len, VERBS_FLUSH_PIECE_MAX);
		at += p[k].len;
	}
	assert_int_equal(at, raddr + len);
}

static void
FLUSH_of_4_GiB_or_more_splits_into_contiguous_pieces_below_2_32(void **state)
{
	(void) state;
	static const struct { uint64_t len; unsigned n; } cases[] = {
		{ 1, 1 }, { 4096, 1 }, { VERBS_FLUSH_PIECE_MAX, 1 },
		{ VERBS_FLUSH_PIECE_MAX + 1, 2 }, { (1ULL << 32) - 1, 2 },
		{ 1ULL << 32, 2 }, { (1ULL << 32) + 1, 2 }, { 5 * GiB, 2 },
		{ 8 * GiB, 3 }, { 16 * VERBS_FLUSH_PIECE_MAX, 16 },
	};
	const uint64_t raddr = 0x7f0000000123ULL;	/* not page aligned */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct verbs_flush_piece p[VERBS_FLUSH_PIECES_MAX];
		unsigned n = verbs_flush_split(raddr, cases[i].len, p,
				VERBS_FLUSH_PIECES_MAX);
		assert_int_equal(n, cases[i].n);
		assert_pieces(raddr, cases[i].len, p, n);
	}
	/* more pieces than allowed: none written past the array, 0 */
	struct verbs_flush_piece p[3];
	memset(p, 0xee, sizeof(p));
	assert_int_equal(verbs_flush_split(raddr, 2 * VERBS_FLUSH_PIECE_MAX
			+ 1, p, 2), 0);
	assert_int_equal(verbs_flush_split(raddr, VERBS_FLUSH_PIECES_MAX *
			VERBS_FLUSH_PIECE_MAX + 1, p, VERBS_FLUSH_PIECES_MAX), 0);
	for (size_t i = 0; i < sizeof(p); i++)
		assert_int_equal(((const uint8_t *)p)[i], 0xee);
}

/*
 * The send ring reports a split request once: its earlier pieces never,
 * an error one of them met comes with the last piece's completion (the
 * device reports the flushed last piece with WR_FLUSH_ERR), and a request
 * behind it keeps its own status.
 */
static void
FLUSH_split_request_completes_once_with_the_first_error(void **state)
{
	(void) state;
	struct verbs_sq_ring ring;
	assert_int_equal(verbs_sq_ring_init(&ring, 8), 0);
	uint64_t id[4];
	for (int round = 0; round < 2; round++) {
		for (int k = 0; k < 3; k++) {
			assert_int_equal(verbs_sq_ring_get(&ring, PMREP_OP_FLUSH,
					(void *)0xf1, &id[k]), 0);
			if (k < 2)
				verbs_sq_ring_set_piece(&ring, id[k]);
		}
		assert_int_equal(verbs_sq_ring_get(&ring, PMREP_OP_WRITE,
				(void *)0x33, &id[3]), 0);
		const void *ctx = NULL;
		enum pmrep_op op = PMREP_OP_READ;
		int st = -1;
		if (round == 0) {
			/* success: only the last piece is signalled */
			assert_int_equal(verbs_sq_ring_complete_wc(&ring, id[2],
					IBV_WC_SUCCESS, &ctx, &op, &st), 1);
			assert_ptr_equal(ctx, (void *)0xf1);
			assert_int_equal(op, PMREP_OP_FLUSH);
			assert_int_equal(st, IBV_WC_SUCCESS);
			assert_int_equal(verbs_sq_ring_complete_wc(&ring, id[3],
					IBV_WC_SUCCESS, &ctx, &op, &st), 1);
			assert_ptr_equal(ctx, (void *)0x33);
		} else {
			assert_int_equal(verbs_sq_ring_complete_wc(&ring, id[0],
					IBV_WC_REM_ACCESS_ERR, &ctx, &op, &st), 0);
			assert_int_equal(verbs_sq_ring_complete_wc(&ring, id[1],
					IBV_WC_WR_FLUSH_ERR, &ctx, &op, &st), 0);
			assert_int_equal(verbs_sq_ring_complete_wc(&ring, id[2],
					IBV_WC_WR_FLUSH_ERR, &ctx, &op, &st), 1);
			assert_ptr_equal(ctx, (void *)0xf1);
			assert_int_equal(st, IBV_WC_REM_ACCESS_ERR);
			assert_int_equal(verbs_sq_ring_complete_wc(&ring, id[3],
					IBV_WC_WR_FLUSH_ERR, &ctx, &op, &st), 1);
			assert_ptr_equal(ctx, (void *)0x33);
			assert_int_equal(st, IBV_WC_WR_FLUSH_ERR);
		}
		assert_int_equal(verbs_sq_ring_outstanding(&ring), 0);
		/* a slot used again is no piece and carries no old error */
		assert_int_equal(verbs_sq_ring_complete_wc(&ring, id[3],
				IBV_WC_SUCCESS, &ctx, &op, &st), -1);
	}
	verbs_sq_ring_fini(&ring);
}

#ifdef PMREP_HAVE_IBV_WR_FLUSH
/* a remote region of `size` bytes (only its descriptor says so) */
static struct pmrep_mr_remote *
big_remote(struct tv_post_fx *f, uint64_t size)
{
	struct pmrep_mr_remote *r = tv_remote(f->target);
	r->size = size;
	return r;
}

/*
 * Against the mocked ibv_wr_flush: a 5 GiB native FLUSH is posted as two
 * flushes, each below 2^32, contiguous, covering the range, in one
 * ibv_wr_complete, only the last signalled; one completion reports it.
 */
static void
FLUSH_native_5_GiB_is_two_ibv_wr_flush_pieces_below_2_32(void **state)
{
	(void) state;
	mock_dev_set_flush(true, true);
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	enum pmrep_flush_method m;
	assert_int_equal(pmrep_conn_get_flush_method(f.conn, &m), 0);
	assert_int_equal(m, PMREP_FLUSH_METHOD_NATIVE);
	struct pmrep_mr_remote *big = big_remote(&f, 8 * GiB);
	unsigned completes = mock_calls("ibv_wr_complete");
	const uint64_t off = 0x1000, len = 5 * GiB;
	assert_int_equal(pmrep_flush(f.conn, big, off, len,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)0x5), 0);
	assert_int_equal(mock_calls("ibv_wr_complete"), completes + 1);
	assert_int_equal(mock_send_count(), 2);
	uint64_t at = big->raddr + off;
	for (size_t i = 0; i < 2; i++) {
		const struct mock_wr *w = mock_send_wr(i);
		assert_true(w->via_wr_api);
		assert_int_equal(w->opcode, IBV_WR_FLUSH);
		assert_int_equal(w->flush_type, IBV_FLUSH_PERSISTENT);
		assert_int_equal(w->flush_level, IBV_FLUSH_RANGE);
		assert_int_equal(w->rkey, big->rkey);
		assert_int_equal(w->remote_addr, at);
		assert_true(w->flush_len > 0 && w->flush_len < (1ULL << 32));
		assert_int_equal(w->flush_len, w->length);	/* not cut */
		assert_int_equal(!!(w->send_flags & IBV_SEND_SIGNALED),
				i == 1);
		at += w->flush_len;
	}
	assert_int_equal(at, big->raddr + off + len);
	assert_int_equal(mock_qp_complete_sends(f.vc->qp, -1, IBV_WC_SUCCESS),
			2);
	struct pmrep_completion c[4];
	assert_int_equal(poll_all(f.conn->cq, c, 4), 1);
	assert_ptr_equal(c[0].op_context, (void *)0x5);
	assert_int_equal(c[0].op, PMREP_OP_FLUSH);
	assert_int_equal(c[0].status, PMREP_WC_SUCCESS);

	/* the first piece fails: one completion, with its status */
	mock_wr_log_clear();
	assert_int_equal(pmrep_flush(f.conn, big, 0, len,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ON_ERROR,
			(void *)0x6), 0);
	assert_int_equal(mock_send_count(), 2);
	assert_int_equal(mock_qp_complete_sends(f.vc->qp, 1,
			IBV_WC_REM_ACCESS_ERR), 1);
	assert_int_equal(poll_all(f.conn->cq, c, 4), 1);
	assert_ptr_equal(c[0].op_context, (void *)0x6);
	assert_int_equal(c[0].status, PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_int_equal(poll_all(f.conn->cq, c, 4), 0);
	expect_event(f.conn, PMREP_CONN_LOST);		/* T21 */
	assert_int_equal(pmrep_mr_remote_delete(&big), 0);
	tv_post_fx_close(&f);
}

/* a split flush takes all its slots or none: a short send queue is AGAIN */
static void
FLUSH_split_needs_a_slot_per_piece_or_posts_nothing(void **state)
{
	(void) state;
	mock_dev_set_flush(true, true);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 2), 0);
	struct tv_post_fx f;
	tv_post_fx_open(&f, cfg);
	struct pmrep_mr_remote *big = big_remote(&f, 16 * GiB);
	assert_int_equal(pmrep_flush(f.conn, big, 0, 9 * GiB,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			NULL), PMREP_E_AGAIN);	/* 3 pieces, 2 slots */
	assert_int_equal(mock_send_count(), 0);
	assert_int_equal(verbs_sq_ring_outstanding(&f.vc->sq), 0);
	assert_int_equal(pmrep_flush(f.conn, big, 0, 5 * GiB,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)9), 0);	/* 2 pieces fit */
	assert_int_equal(mock_send_count(), 2);
	assert_int_equal(verbs_sq_ring_outstanding(&f.vc->sq), 2);
	assert_int_equal(pmrep_mr_remote_delete(&big), 0);
	tv_post_fx_close(&f);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

/* more than VERBS_FLUSH_PIECES_MAX pieces: one flush of the whole MR */
static void
FLUSH_beyond_the_piece_limit_flushes_the_whole_mr(void **state)
{
	(void) state;
	mock_dev_set_flush(true, true);
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	uint64_t len = VERBS_FLUSH_PIECES_MAX * VERBS_FLUSH_PIECE_MAX + 1;
	struct pmrep_mr_remote *big = big_remote(&f, len);
	assert_int_equal(pmrep_flush(f.conn, big, 0, len,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)0x7), 0);
	assert_int_equal(mock_send_count(), 1);
	const struct mock_wr *w = mock_send_last();
	assert_int_equal(w->opcode, IBV_WR_FLUSH);
	assert_int_equal(w->flush_level, IBV_FLUSH_MR);
	assert_true(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(pmrep_mr_remote_delete(&big), 0);
	tv_post_fx_close(&f);
}
#endif /* PMREP_HAVE_IBV_WR_FLUSH */


/* ------------------------------------------------------------ idle check */

/* a conn whose cfg timeout is `ms` (tick: ms / 4) */
static void
idle_fx_open(struct tv_post_fx *f, int ms)
{
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, ms), 0);
	tv_post_fx_open(f, cfg);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

/* wait for the event fd (the tick wakes it), then run the conn's events */
static void
run_tick(struct tv_post_fx *f, int ms)
{
	int efd = -1;
	assert_int_equal(pmrep_conn_get_event_fd(f->conn, &efd), 0);
	assert_true(tv_readable(efd, ms));
	expect_no_event(f->conn);
}

/*
 * An idle conn: each tick of its timer (T/4) posts one heartbeat -- a
 * signalled zero-length RDMA WRITE, no SGE, no address, no rkey -- while
 * the send queue is empty, none while one is outstanding or the
 * application's requests are; its completion never reaches the user.
 */
static void
IDLE_heartbeat_is_a_zero_length_write_posted_only_when_the_queue_is_empty(
		void **state)
{
	(void) state;
	struct tv_post_fx f;
	idle_fx_open(&f, 200);
	run_tick(&f, 1000);
	assert_int_equal(mock_send_count(), 1);
	const struct mock_wr *w = mock_send_last();
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(w->num_sge, 0);
	assert_int_equal(w->length, 0);
	assert_int_equal(w->remote_addr, 0);
	assert_int_equal(w->rkey, 0);
	assert_true(w->send_flags & IBV_SEND_SIGNALED);
	/* outstanding (not completed yet): the next tick posts nothing */
	run_tick(&f, 1000);
	assert_int_equal(mock_send_count(), 1);
	/* it completes: nothing for the user, and the conn is fine */
	assert_int_equal(mock_qp_complete_sends(f.vc->qp, 1, IBV_WC_SUCCESS),
			1);
	struct pmrep_completion c[4];
	assert_int_equal(poll_all(f.conn->cq, c, 4), 0);
	/* an application request in flight: no heartbeat beside it */
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)9), 0);
	run_tick(&f, 1000);
	assert_int_equal(mock_send_count(), 2);
	assert_int_equal(mock_qp_complete_sends(f.vc->qp, 1, IBV_WC_SUCCESS),
			1);
	assert_int_equal(poll_all(f.conn->cq, c, 4), 1);
	assert_ptr_equal(c[0].op_context, (void *)9);
	/* idle again: the next tick sends the next heartbeat */
	run_tick(&f, 1000);
	assert_int_equal(mock_send_count(), 3);
	assert_int_equal(mock_send_last()->num_sge, 0);
	tv_post_fx_close(&f);
}

/*
 * A dead peer of an idle conn: the heartbeat's retries run out and the QP
 * goes to error, and nobody polls the CQ. The next tick finds the QP in
 * error and the conn reports LOST by itself; posts are refused.
 */
static void
IDLE_qp_in_error_found_by_the_tick_makes_the_conn_lost_unpolled(void **state)
{
	(void) state;
	struct tv_post_fx f;
	idle_fx_open(&f, 200);
	run_tick(&f, 1000);
	assert_int_equal(mock_send_count(), 1);
	/* the retries of the heartbeat ran out: the QP is in error now,
	 * the error completion waits in the CQ, unpolled */
	mock_qp_set_state(f.vc->qp, IBV_QPS_ERR);
	int efd = -1;
	assert_int_equal(pmrep_conn_get_event_fd(f.conn, &efd), 0);
	assert_true(tv_readable(efd, 1000));
	expect_event(f.conn, PMREP_CONN_LOST);
	assert_true(tv_logged("found by the idle check"));
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	tv_post_fx_close(&f);
}

/* the heartbeat's own error completion, when polled, ends the conn (T21)
 * and is not shown to the user (it has no context of theirs) */
static void
IDLE_heartbeat_error_completion_ends_the_conn_and_is_not_reported(
		void **state)
{
	(void) state;
	struct tv_post_fx f;
	idle_fx_open(&f, 200);
	run_tick(&f, 1000);
	assert_int_equal(mock_send_count(), 1);
	assert_int_equal(mock_qp_complete_sends(f.vc->qp, 1,
			IBV_WC_RETRY_EXC_ERR), 1);
	struct pmrep_completion c[4];
	assert_int_equal(poll_all(f.conn->cq, c, 4), 0);
	expect_event(f.conn, PMREP_CONN_LOST);
	expect_no_event(f.conn);
	tv_post_fx_close(&f);
}

/*
 * The verbs provider's one mapping of rdma-core's work completion status
 * onto pmrep's (verbs_cq.c): every status rdma-core defines, against the
 * expectation written out here independently of the table; a value beyond
 * them is a general error. Then end to end through the mocked CQ: the
 * completion carries pmrep's status and the original in provider_status.
 */
static void
WC_status_every_ibv_status_maps_to_pmrep_and_keeps_the_original(void **state)
{
	(void) state;
	static const struct {
		int ibv;
		enum pmrep_wc_status want;
	} exp[] = {
		{ IBV_WC_SUCCESS, PMREP_WC_SUCCESS },
		{ IBV_WC_LOC_LEN_ERR, PMREP_WC_LOCAL_LENGTH_ERROR },
		{ IBV_WC_LOC_QP_OP_ERR, PMREP_WC_GENERAL_ERROR },
		{ IBV_WC_LOC_EEC_OP_ERR, PMREP_WC_GENERAL_ERROR },
		{ IBV_WC_LOC_PROT_ERR, PMREP_WC_LOCAL_PROTECTION_ERROR },
		{ IBV_WC_WR_FLUSH_ERR, PMREP_WC_FLUSHED },
		{ IBV_WC_MW_BIND_ERR, PMREP_WC_LOCAL_PROTECTION_ERROR },
		{ IBV_WC_BAD_RESP_ERR, PMREP_WC_GENERAL_ERROR },
		{ IBV_WC_LOC_ACCESS_ERR, PMREP_WC_LOCAL_PROTECTION_ERROR },
		{ IBV_WC_REM_INV_REQ_ERR, PMREP_WC_REMOTE_INVALID_REQUEST },
		{ IBV_WC_REM_ACCESS_ERR, PMREP_WC_REMOTE_ACCESS_ERROR },
		{ IBV_WC_REM_OP_ERR, PMREP_WC_REMOTE_OPERATION_ERROR },
		{ IBV_WC_RETRY_EXC_ERR, PMREP_WC_RETRY_EXCEEDED },
		{ IBV_WC_RNR_RETRY_EXC_ERR, PMREP_WC_RNR_RETRY_EXCEEDED },
		{ IBV_WC_LOC_RDD_VIOL_ERR, PMREP_WC_GENERAL_ERROR },
		{ IBV_WC_REM_INV_RD_REQ_ERR, PMREP_WC_REMOTE_INVALID_REQUEST },
		{ IBV_WC_REM_ABORT_ERR, PMREP_WC_REMOTE_OPERATION_ERROR },
		{ IBV_WC_INV_EECN_ERR, PMREP_WC_GENERAL_ERROR },
		{ IBV_WC_INV_EEC_STATE_ERR, PMREP_WC_GENERAL_ERROR },
		{ IBV_WC_FATAL_ERR, PMREP_WC_GENERAL_ERROR },
		{ IBV_WC_RESP_TIMEOUT_ERR, PMREP_WC_TIMEOUT },
		{ IBV_WC_GENERAL_ERR, PMREP_WC_GENERAL_ERROR },
		{ IBV_WC_TM_ERR, PMREP_WC_GENERAL_ERROR },
		{ IBV_WC_TM_RNDV_INCOMPLETE, PMREP_WC_GENERAL_ERROR },
	};
	size_t n = sizeof(exp) / sizeof(exp[0]);
	assert_int_equal(n, IBV_WC_TM_RNDV_INCOMPLETE + 1);	/* all of them */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(exp[i].ibv, (int)i);
		assert_int_equal(verbs_wc_status(exp[i].ibv), exp[i].want);
	}
	assert_int_equal(verbs_wc_status(IBV_WC_TM_RNDV_INCOMPLETE + 1),
			PMREP_WC_GENERAL_ERROR);
	assert_int_equal(verbs_wc_status(-1), PMREP_WC_GENERAL_ERROR);

	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)2), 0);
	assert_int_equal(mock_qp_complete_sends(f.vc->qp, 1,
			IBV_WC_RESP_TIMEOUT_ERR), 1);
	struct pmrep_completion c[4];
	assert_int_equal(poll_all(f.conn->cq, c, 4), 2);
	assert_ptr_equal(c[0].op_context, (void *)1);
	assert_int_equal(c[0].status, PMREP_WC_TIMEOUT);
	assert_int_equal(c[0].provider_status, IBV_WC_RESP_TIMEOUT_ERR);
	assert_ptr_equal(c[1].op_context, (void *)2);
	assert_int_equal(c[1].status, PMREP_WC_FLUSHED);
	assert_int_equal(c[1].provider_status, IBV_WC_WR_FLUSH_ERR);
	assert_string_equal(pmrep_wc_status_str(c[0].status), "response timeout");
	tv_post_fx_close(&f);
}

/* pmrep_wc_status_str: a distinct string for every value, never NULL */
static void
WC_status_str_names_every_value_and_an_unknown_one(void **state)
{
	(void) state;
	const char *unknown = pmrep_wc_status_str((enum pmrep_wc_status)99);
	assert_string_equal(unknown, "unknown completion status");
	for (int i = PMREP_WC_SUCCESS; i <= PMREP_WC_GENERAL_ERROR; i++) {
		const char *a = pmrep_wc_status_str((enum pmrep_wc_status)i);
		assert_non_null(a);
		assert_string_not_equal(a, unknown);
		for (int j = PMREP_WC_SUCCESS; j < i; j++)
			assert_string_not_equal(a,
					pmrep_wc_status_str((enum pmrep_wc_status)j));
	}
	assert_string_equal(pmrep_wc_status_str(PMREP_WC_SUCCESS), "success");
	assert_string_equal(pmrep_wc_status_str(PMREP_WC_FLUSHED),
			"flushed (the conn is in error or disconnected)");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(T21_error_completion_makes_the_conn_lost_and_later_posts_fail),
		T(T21_unsignalled_request_error_ends_the_conn_too),
		T(T21_passive_receive_error_makes_the_conn_lost),
		T(T21_flushes_after_a_local_disconnect_stay_closed),
		T(T23_ack_timeout_is_set_before_connect_and_on_every_retry_id),
		T(T23_ack_timeout_failure_fails_the_connect),
		T(T23_exponent_follows_the_configured_timeout_and_is_never_zero),
		T(T27_gpspm_receives_are_posted_before_accept_and_connect),
		T(T27_rnr_retries_are_bounded_on_connect_and_accept),
		T(T27_rnr_retry_exceeded_is_an_error_completion_that_fails_the_conn),
		T(IDLE_heartbeat_is_a_zero_length_write_posted_only_when_the_queue_is_empty),
		T(IDLE_qp_in_error_found_by_the_tick_makes_the_conn_lost_unpolled),
		T(IDLE_heartbeat_error_completion_ends_the_conn_and_is_not_reported),
		T(FLUSH_of_4_GiB_or_more_splits_into_contiguous_pieces_below_2_32),
		T(FLUSH_split_request_completes_once_with_the_first_error),
		T(WC_status_every_ibv_status_maps_to_pmrep_and_keeps_the_original),
		cmocka_unit_test(WC_status_str_names_every_value_and_an_unknown_one),
#ifdef PMREP_HAVE_IBV_WR_FLUSH
		T(FLUSH_native_5_GiB_is_two_ibv_wr_flush_pieces_below_2_32),
		T(FLUSH_split_needs_a_slot_per_piece_or_posts_nothing),
		T(FLUSH_beyond_the_piece_limit_flushes_the_whole_mr),
#endif
#undef T
	};
	return cmocka_run_group_tests_name("verbs faults", tests, NULL, NULL);
}
