/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_srq.c -- the shared receive queue and its receive CQ:
 * creation and every failure, receives posted and completed with their
 * context across conns, a full queue, deletion while conns use it.
 */
#include "test_verbs_util.h"

struct srq_state {
	struct pmrep_peer *peer;
	struct pmrep_srq *srq;
};

static int
scenario_srq_new(void *st)
{
	struct srq_state *s = st;
	return pmrep_srq_new(s->peer, 16, 0, &s->srq);
}

static void
cleanup_srq(void *st, int ret)
{
	struct srq_state *s = st;
	if (ret == 0)
		assert_int_equal(pmrep_srq_delete(&s->srq), 0);
	assert_null(s->srq);
}

static void
srq_new_each_failure_returns_error_and_leaks_nothing(void **state)
{
	(void) state;
	struct srq_state s = { tv_peer(), NULL };
	assert_true(mock_run_each_failure(scenario_srq_new, cleanup_srq, &s)
			>= 6);
	assert_int_equal(pmrep_peer_delete(&s.peer), 0);
}

static void
srq_receives_complete_on_its_rcq_with_their_context(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_srq *srq = NULL;
	assert_int_equal(pmrep_srq_new(peer, 4, 0, &srq), 0);
	struct pmrep_cq *rcq = NULL;
	assert_int_equal(pmrep_srq_get_rcq(srq, &rcq), 0);
	assert_non_null(rcq);
	assert_null(rcq->conn);
	assert_true(rcq->is_rcq);
	int fd;
	assert_int_equal(pmrep_cq_get_fd(rcq, &fd), 0);

	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_srq(cfg, srq), 0);
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn *a = tv_passive(ep, cfg);
	struct pmrep_conn *b = tv_passive(ep, cfg);
	struct pmrep_mr_local *mr = tv_mr(peer, 256, PMREP_MR_USAGE_RECV);
	for (uintptr_t i = 0; i < 4; i++)
		assert_int_equal(pmrep_srq_recv(srq, mr, i * 64, 64,
				(void *)(i + 1)), 0);
	assert_int_equal(pmrep_srq_recv(srq, mr, 0, 64, NULL), PMREP_E_AGAIN);
	/* out of order across conns */
	mock_qp_recv(tv_vconn(b)->qp, "bb", 2);
	mock_qp_recv(tv_vconn(a)->qp, "aaa", 3);
	assert_true(tv_readable(fd, 0));
	assert_int_equal(pmrep_cq_wait(rcq, 0), 0);
	struct pmrep_completion c[4];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(rcq, c, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_ptr_equal(c[0].op_context, (void *)1);
	assert_int_equal(c[0].byte_len, 2);
	assert_ptr_equal(c[1].op_context, (void *)2);
	assert_int_equal(c[1].byte_len, 3);
	/* two slots free again */
	assert_int_equal(pmrep_srq_recv(srq, mr, 0, 64, (void *)5), 0);
	assert_int_equal(pmrep_srq_recv(srq, mr, 0, 64, (void *)6), 0);

	/* busy while a conn uses it */
	assert_int_equal(pmrep_conn_delete(&a), 0);
	struct pmrep_srq *keep = srq;
	assert_int_equal(pmrep_srq_delete(&srq), PMREP_E_BUSY);
	assert_ptr_equal(srq, keep);
	assert_int_equal(pmrep_conn_delete(&b), 0);
	assert_int_equal(pmrep_srq_delete(&srq), 0);
	assert_null(srq);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
srq_rcq_is_at_least_as_deep_as_the_srq(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_srq *srq = NULL;
	/* a smaller RCQ would overrun when every receive completes */
	assert_int_equal(pmrep_srq_new(peer, 32, 4, &srq), 0);
	assert_true(((struct verbs_srq *)srq)->rcq->cq->cqe >= 32);
	assert_int_equal(pmrep_srq_delete(&srq), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
srq_post_failure_is_provider_error_and_frees_its_slot(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_srq *srq = NULL;
	assert_int_equal(pmrep_srq_new(peer, 1, 0, &srq), 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	mock_fail("ibv_post_srq_recv", 1, EINVAL);
	assert_int_equal(pmrep_srq_recv(srq, mr, 0, 64, NULL),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EINVAL);
	mock_fail("ibv_post_srq_recv", 1, ENOMEM);
	assert_int_equal(pmrep_srq_recv(srq, mr, 0, 64, NULL), PMREP_E_AGAIN);
	assert_int_equal(pmrep_srq_recv(srq, mr, 0, 64, NULL), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_srq_delete(&srq), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
srq_delete_failure_is_provider_error(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_srq *srq = NULL;
	assert_int_equal(pmrep_srq_new(peer, 4, 0, &srq), 0);
	mock_fail("ibv_destroy_srq", 1, EIO);
	assert_int_equal(pmrep_srq_delete(&srq), PMREP_E_PROVIDER);
	assert_null(srq);
	assert_int_equal(pmrep_err_errno(), EIO);
	/* its CQ went regardless */
	assert_int_equal(mock_live(MOCK_CQ), 0);
	/* the SRQ stays with the device and holds the PD; the peer goes */
	assert_int_equal(pmrep_peer_delete(&peer), PMREP_E_PROVIDER);
	assert_null(peer);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(srq_new_each_failure_returns_error_and_leaks_nothing),
		T(srq_receives_complete_on_its_rcq_with_their_context),
		T(srq_rcq_is_at_least_as_deep_as_the_srq),
		T(srq_post_failure_is_provider_error_and_frees_its_slot),
		cmocka_unit_test_setup_teardown(
			srq_delete_failure_is_provider_error, tv_setup, NULL),
#undef T
	};
	return cmocka_run_group_tests_name("verbs srq", tests, NULL, NULL);
}
