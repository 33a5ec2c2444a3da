/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_faults.c -- the transport fixes issue 11's network and device
 * faults called for, one case each: an error completion ends the
 * connection (T21), the local ACK timeout and retry count follow the
 * configured timeout (T23), GPSPM receives before accept and bounded RNR
 * retries (T27), and a native FLUSH of 4 GiB or more split below the
 * wire's 32-bit length.
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
	assert_int_equal(c[0].status, IBV_WC_REM_ACCESS_ERR);
	assert_ptr_equal(c[0].op_context, (void *)1);
	assert_int_equal(c[1].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[2].status, IBV_WC_WR_FLUSH_ERR);
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
	assert_int_equal(c[0].status, IBV_WC_REM_ACCESS_ERR);
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
	assert_int_equal(c[0].status, IBV_WC_LOC_LEN_ERR);
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
	assert_int_equal(c[0].status, IBV_WC_WR_FLUSH_ERR);
	expect_event(f.conn, PMREP_CONN_CLOSED);
	expect_no_event(f.conn);
	tv_post_fx_close(&f);
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
#undef T
	};
	return cmocka_run_group_tests_name("verbs faults", tests, NULL, NULL);
}
