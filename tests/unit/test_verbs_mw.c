/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_mw.c -- memory windows on the mocked device: the region of
 * PMREP_MR_USAGE_MW_BIND has no remote access of its own; a bind is one
 * unsignalled IBV_WR_BIND_MW of a type 2 window on the conn's QP (taking
 * one send-queue slot until a later completion), its key the window's with
 * the consumer byte stepped; alloc and post failures leave nothing behind;
 * a bind the device refuses fails the conn without a completion the user
 * would see; invalidation deallocates the window also on a lost conn; a
 * dealloc failure is reported and the window freed; deleting the conn
 * deallocates what is left.
 */
#include "test_verbs_util.h"

#define WIN (PMREP_MR_USAGE_READ_SRC | PMREP_MR_USAGE_WRITE_DST | \
		PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY)

struct fx {
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;
	struct verbs_conn *vc;
	struct pmrep_mr_local *region, *msg;
};

static void
fx_open(struct fx *f)
{
	f->peer = tv_peer();
	f->conn = tv_active(f->peer, NULL, NULL, 0);
	f->vc = tv_vconn(f->conn);
	f->region = tv_mr(f->peer, 8192, WIN | PMREP_MR_USAGE_MW_BIND);
	f->msg = tv_mr(f->peer, 4096, PMREP_MR_USAGE_ALL);
	mock_wr_log_clear();
}

static void
fx_close(struct fx *f)
{
	assert_int_equal(pmrep_conn_delete(&f->conn), 0);
	tv_mr_free(f->region);
	tv_mr_free(f->msg);
	assert_int_equal(pmrep_peer_delete(&f->peer), 0);
}

static void
region_for_windows_has_no_remote_access_of_its_own(void **state)
{
	(void) state;
	struct fx f;
	fx_open(&f);
	int a = verbs_mr_access(verbs_peer(f.peer), WIN | PMREP_MR_USAGE_MW_BIND);
	assert_int_equal(a & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_ATOMIC), 0);
	assert_true(a & IBV_ACCESS_MW_BIND);
	assert_true(a & IBV_ACCESS_LOCAL_WRITE);
	/* without MW_BIND the same usage is remote read + write */
	a = verbs_mr_access(verbs_peer(f.peer), WIN);
	assert_true(a & IBV_ACCESS_REMOTE_READ);
	assert_true(a & IBV_ACCESS_REMOTE_WRITE);
	uint8_t d[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mr_get_descriptor(f.region, d), PMREP_E_INVAL);
	fx_close(&f);
}

static void
bind_is_one_unsignalled_bind_mw_on_the_conns_qp(void **state)
{
	(void) state;
	struct fx f;
	fx_open(&f);
	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &mw), 0);
	assert_int_equal(mock_live(MOCK_MW), 1);
	struct ibv_mw *imw = mock_mw_last();
	assert_int_equal(imw->type, IBV_MW_TYPE_2);
	assert_int_equal(mock_send_count(), 1);
	const struct mock_wr *w = mock_send_last();
	assert_int_equal(w->opcode, IBV_WR_BIND_MW);
	assert_ptr_equal(w->qp, f.vc->qp);
	assert_false(w->send_flags & IBV_SEND_SIGNALED);
	assert_ptr_equal(w->mw, imw);
	assert_false(w->bind_err);
	assert_int_equal(w->remote_addr, (uintptr_t)f.region->ptr);
	assert_int_equal(w->length, 8192);
	assert_int_equal(w->mw_access & (IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_WRITE),
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	assert_true(mock_mw_bound(imw));
	/* the key: the window's index, the consumer byte stepped */
	assert_int_equal(w->rkey & 0xff, 1);
	assert_int_equal(mock_mw_rkey(imw), w->rkey);
	uint8_t d[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mw_get_descriptor(mw, d), 0);
	assert_int_equal(d[4] | d[5] << 8 | d[6] << 16 | (uint32_t)d[7] << 24,
			w->rkey);
	/* one send-queue slot, freed by the next completion of the conn */
	assert_int_equal(verbs_sq_ring_outstanding(&f.vc->sq), 1);
	assert_int_equal(pmrep_send(f.conn, f.msg, 0, 16,
			PMREP_F_COMPLETION_ALWAYS, (void *)5), 0);
	assert_int_equal(verbs_sq_ring_outstanding(&f.vc->sq), 2);
	mock_qp_complete_sends(f.vc->qp, -1, IBV_WC_SUCCESS);
	struct pmrep_completion c[2];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 2, &n), 0);
	assert_int_equal(n, 1);		/* the bind is never reported */
	assert_ptr_equal(c[0].op_context, (void *)5);
	assert_int_equal(verbs_sq_ring_outstanding(&f.vc->sq), 0);

	assert_int_equal(pmrep_mw_invalidate(&mw), 0);
	assert_int_equal(mock_calls("ibv_dealloc_mw"), 1);
	assert_int_equal(mock_live(MOCK_MW), 0);
	fx_close(&f);
}

static void
alloc_failure_leaves_nothing(void **state)
{
	(void) state;
	struct fx f;
	fx_open(&f);
	struct pmrep_mw *mw = NULL;
	mock_fail("ibv_alloc_mw", 1, ENOMEM);
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &mw), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOMEM);
	mock_fail("ibv_alloc_mw", 1, EOPNOTSUPP);
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &mw), PMREP_E_NOSUPP);
	assert_true(tv_logged("no type 2 memory windows"));
	assert_null(mw);
	assert_int_equal(mock_send_count(), 0);
	assert_int_equal(mock_live(MOCK_MW), 0);
	assert_int_equal(verbs_sq_ring_outstanding(&f.vc->sq), 0);
	fx_close(&f);
}

static void
post_failure_deallocates_the_window_and_gives_the_slot_back(void **state)
{
	(void) state;
	struct fx f;
	fx_open(&f);
	struct pmrep_mw *mw = NULL;
	mock_fail("ibv_post_send", 1, EINVAL);
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &mw), PMREP_E_PROVIDER);
	assert_null(mw);
	assert_int_equal(mock_live(MOCK_MW), 0);
	assert_int_equal(verbs_sq_ring_outstanding(&f.vc->sq), 0);
	/* a full send queue: AGAIN, nothing kept */
	mock_fail("ibv_post_send", 1, ENOMEM);
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &mw), PMREP_E_AGAIN);
	assert_int_equal(mock_live(MOCK_MW), 0);
	assert_int_equal(verbs_sq_ring_outstanding(&f.vc->sq), 0);
	/* and then it works */
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &mw), 0);
	assert_int_equal(pmrep_mw_invalidate(&mw), 0);
	fx_close(&f);
}

static void
bind_the_device_refuses_fails_the_conn_unreported(void **state)
{
	(void) state;
	struct fx f;
	fx_open(&f);
	/* a region the device never allowed windows on (no MW_BIND at
	 * ibv_reg_mr): what a bind over it meets */
	struct ibv_mw *imw = ibv_alloc_mw(verbs_peer(f.peer)->pd, IBV_MW_TYPE_2);
	assert_non_null(imw);
	struct verbs_mr *plain = (struct verbs_mr *)f.msg;
	verbs_dev_rdlock(verbs_peer(f.peer));
	assert_int_equal(verbs_post_bind_mw(f.vc, imw, plain->mr,
			(uintptr_t)f.msg->ptr, 4096, ibv_inc_rkey(imw->rkey),
			IBV_ACCESS_REMOTE_READ), 0);
	verbs_dev_unlock(verbs_peer(f.peer));
	assert_true(mock_send_last()->bind_err);
	assert_false(mock_mw_bound(imw));
	struct pmrep_completion c;
	int n = 0;
	(void) pmrep_cq_get_completions(f.conn->cq, &c, 1, &n);
	assert_int_equal(n, 0);
	assert_true(tv_logged("refused a memory window bind"));
	/* the conn is lost: a real bind is refused now */
	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &mw), PMREP_E_CONN_LOST);
	assert_int_equal(ibv_dealloc_mw(imw), 0);
	assert_int_equal(mock_live(MOCK_MW), 0);
	fx_close(&f);
}

static void
invalidate_on_a_lost_conn_deallocates(void **state)
{
	(void) state;
	struct fx f;
	fx_open(&f);
	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &mw), 0);
	struct ibv_mw *imw = mock_mw_last();
	/* a request fails: the QP is in error, the conn lost (T21) */
	assert_int_equal(pmrep_send(f.conn, f.msg, 0, 16,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	mock_qp_complete_sends(f.vc->qp, -1, IBV_WC_RETRY_EXC_ERR);
	struct pmrep_completion c[2];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 2, &n), 0);
	assert_true(atomic_load(&f.vc->lost));
	assert_true(mock_mw_bound(imw));
	assert_int_equal(pmrep_mw_invalidate(&mw), 0);
	assert_int_equal(mock_calls("ibv_dealloc_mw"), 1);
	assert_int_equal(mock_live(MOCK_MW), 0);
	fx_close(&f);
}

static void
dealloc_failure_is_reported_and_the_window_freed(void **state)
{
	(void) state;
	struct fx f;
	fx_open(&f);
	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &mw), 0);
	struct ibv_mw *imw = mock_mw_last();
	mock_fail("ibv_dealloc_mw", 1, EIO);
	assert_int_equal(pmrep_mw_invalidate(&mw), PMREP_E_PROVIDER);
	assert_null(mw);
	assert_int_equal(pmrep_err_errno(), EIO);
	/* the conn holds nothing of it any more: delete works */
	assert_int_equal(pmrep_conn_delete(&f.conn), 0);
	/* the device kept the window (bound: its region would not
	 * deregister, EBUSY); the test lets go of it */
	assert_true(mock_mw_bound(imw));
	assert_int_equal(ibv_dealloc_mw(imw), 0);
	fx_close(&f);
}

static void
conn_delete_deallocates_the_windows_left(void **state)
{
	(void) state;
	struct fx f;
	fx_open(&f);
	struct pmrep_mw *a = NULL, *b = NULL;
	assert_int_equal(pmrep_mw_bind(f.conn, f.region, WIN, &a), 0);
	assert_int_equal(pmrep_mw_bind(f.conn, f.region,
			PMREP_MR_USAGE_READ_SRC, &b), 0);
	assert_int_equal(mock_live(MOCK_MW), 2);
	assert_int_equal(pmrep_conn_delete(&f.conn), 0);
	assert_int_equal(mock_live(MOCK_MW), 0);
	uint8_t d[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mw_get_descriptor(a, d), PMREP_E_STATE);
	assert_int_equal(pmrep_mw_invalidate(&a), 0);
	assert_int_equal(pmrep_mw_invalidate(&b), 0);
	assert_int_equal(mock_calls("ibv_dealloc_mw"), 2);
	/* no window is bound to the region now: it deregisters */
	fx_close(&f);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
	const struct CMUnitTest tests[] = {
		T(region_for_windows_has_no_remote_access_of_its_own),
		T(bind_is_one_unsignalled_bind_mw_on_the_conns_qp),
		T(alloc_failure_leaves_nothing),
		T(post_failure_deallocates_the_window_and_gives_the_slot_back),
		T(bind_the_device_refuses_fails_the_conn_unreported),
		T(invalidate_on_a_lost_conn_deallocates),
		T(dealloc_failure_is_reported_and_the_window_freed),
		T(conn_delete_deallocates_the_windows_left),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
