/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_peer.c -- the verbs peer on the mocked device: capabilities
 * probed once, the async fd, every failure of creation and deletion, and
 * async events (read without blocking, acknowledged, acted on: the
 * affected connections report LOST).
 */
#include <fcntl.h>

#include "test_verbs_util.h"

static void
peer_new_on_plain_device_has_no_caps(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	uint32_t caps = 0xff;
	enum pmrep_provider prov = PMREP_PROVIDER_TCP;
	assert_int_equal(pmrep_peer_get_caps(peer, &caps), 0);
	assert_int_equal(caps, 0);
	assert_int_equal(pmrep_peer_get_provider(peer, &prov), 0);
	assert_int_equal(prov, PMREP_PROVIDER_VERBS);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
	assert_null(peer);
}

static void
peer_new_probes_odp_and_native_atomic_write(void **state)
{
	(void) state;
	mock_dev_set_odp(true);
	mock_dev_set_atomic_write(true);
	mock_dev_set_flush(true, true);
	struct pmrep_peer *peer = tv_peer();
	uint32_t caps = 0;
	assert_int_equal(pmrep_peer_get_caps(peer, &caps), 0);
	assert_true(caps & PMREP_CAP_ODP);
	assert_true(caps & PMREP_CAP_NATIVE_ATOMIC_WRITE);
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	assert_true(caps & PMREP_CAP_NATIVE_FLUSH);
#else
	/* the device can, but this libibverbs cannot post it: not a cap */
	assert_false(caps & PMREP_CAP_NATIVE_FLUSH);
#endif
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
peer_caps_are_probed_once_at_creation(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	unsigned probes = mock_calls("ibv_query_device_ex");
	/* the device changes afterwards: the peer keeps what it probed */
	mock_dev_set_odp(true);
	uint32_t caps = 0xff;
	assert_int_equal(pmrep_peer_get_caps(peer, &caps), 0);
	assert_int_equal(caps, 0);
	assert_int_equal(mock_calls("ibv_query_device_ex"), probes);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
peer_odp_without_rc_read_write_is_not_odp(void **state)
{
	(void) state;
	mock_dev_set_odp(true);
	mock_dev_attr()->odp_caps.per_transport_caps.rc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
	struct pmrep_peer *peer = tv_peer();
	uint32_t caps = 0;
	assert_int_equal(pmrep_peer_get_caps(peer, &caps), 0);
	assert_false(caps & PMREP_CAP_ODP);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
peer_async_fd_is_nonblocking_and_cloexec(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	int fd = -1;
	assert_int_equal(pmrep_peer_get_async_fd(peer, &fd), 0);
	assert_int_equal(fd, mock_cm_context()->async_fd);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static int
scenario_peer_new(void *st)
{
	return pmrep_peer_new(mock_cm_context(), (struct pmrep_peer **)st);
}

static void
cleanup_peer(void *st, int ret)
{
	struct pmrep_peer **peer = st;
	if (ret == 0)
		assert_int_equal(pmrep_peer_delete(peer), 0);
	else
		assert_null(*peer);
	*peer = NULL;
}

static void
peer_new_each_failure_returns_error_and_leaks_nothing(void **state)
{
	(void) state;
	struct pmrep_peer *peer = NULL;
	int n = mock_run_each_failure(scenario_peer_new, cleanup_peer, &peer);
	assert_true(n >= 4);	/* calloc x2, query, alloc_pd, reg_mr */
}

static void
peer_new_query_failure_is_provider_error_with_errno(void **state)
{
	(void) state;
	struct pmrep_peer *peer = NULL;
	mock_fail("ibv_query_device_ex", 1, EIO);
	assert_int_equal(pmrep_peer_new(mock_cm_context(), &peer),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_null(peer);
}

static void
peer_new_alloc_pd_failure_is_provider_error_with_errno(void **state)
{
	(void) state;
	struct pmrep_peer *peer = NULL;
	mock_fail("ibv_alloc_pd", 1, ENOMEM);
	assert_int_equal(pmrep_peer_new(mock_cm_context(), &peer),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOMEM);
	assert_true(tv_logged("ibv_alloc_pd"));
}

static void
peer_new_out_of_memory_is_nomem(void **state)
{
	(void) state;
	struct pmrep_peer *peer = NULL;
	mock_fail("calloc", 1, ENOMEM);
	assert_int_equal(pmrep_peer_new(mock_cm_context(), &peer),
			PMREP_E_NOMEM);
	mock_fail("calloc", 2, ENOMEM);	/* the flush sink */
	assert_int_equal(pmrep_peer_new(mock_cm_context(), &peer),
			PMREP_E_NOMEM);
	assert_int_equal(mock_live(MOCK_PD), 0);
}

static void
peer_delete_with_objects_is_busy(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_SEND);
	assert_int_equal(pmrep_peer_delete(&peer), PMREP_E_BUSY);
	assert_non_null(peer);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
peer_delete_dealloc_pd_failure_is_provider_and_frees_peer(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	mock_fail("ibv_dealloc_pd", 1, EBUSY);
	assert_int_equal(pmrep_peer_delete(&peer), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EBUSY);
	assert_null(peer);
}

static void
peer_delete_dereg_failure_is_provider_error_and_frees_peer(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	mock_fail("ibv_dereg_mr", 1, EIO);
	assert_int_equal(pmrep_peer_delete(&peer), PMREP_E_PROVIDER);
	assert_null(peer);
	/* the first failure is the one reported */
	assert_int_equal(pmrep_err_errno(), EIO);
	/* as with real verbs, the PD still holding the MR cannot go either:
	 * release both by hand so the leak check sees a clean device */
	struct ibv_pd *pd = mock_pd_last();
	assert_int_equal(ibv_dereg_mr(mock_mr_last()), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

/* ------------------------------------------------------------ async events */

static void
async_event_none_pending_is_none_without_blocking(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	enum pmrep_async_event ev = PMREP_ASYNC_OTHER;
	assert_int_equal(pmrep_peer_handle_async_event(peer, &ev), 0);
	assert_int_equal(ev, PMREP_ASYNC_NONE);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
async_event_read_failure_is_provider_error(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	enum pmrep_async_event ev;
	mock_fail("ibv_get_async_event", 1, EIO);
	assert_int_equal(pmrep_peer_handle_async_event(peer, &ev),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
async_port_events_are_reported_and_acknowledged(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	int fd;
	assert_int_equal(pmrep_peer_get_async_fd(peer, &fd), 0);
	mock_async_port(mock_cm_context(), IBV_EVENT_PORT_ERR, 1);
	mock_async_port(mock_cm_context(), IBV_EVENT_PORT_ACTIVE, 1);
	mock_async_port(mock_cm_context(), IBV_EVENT_LID_CHANGE, 1);
	assert_true(tv_readable(fd, 0));
	enum pmrep_async_event ev;
	assert_int_equal(pmrep_peer_handle_async_event(peer, &ev), 0);
	assert_int_equal(ev, PMREP_ASYNC_PORT_ERROR);
	assert_int_equal(pmrep_peer_handle_async_event(peer, &ev), 0);
	assert_int_equal(ev, PMREP_ASYNC_PORT_ACTIVE);
	assert_int_equal(pmrep_peer_handle_async_event(peer, &ev), 0);
	assert_int_equal(ev, PMREP_ASYNC_OTHER);
	assert_int_equal(mock_unacked_async_events(), 0);
	assert_false(tv_readable(fd, 0));
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
async_qp_fatal_makes_only_that_conn_report_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *a = tv_active(peer, NULL, NULL, 0);
	struct pmrep_conn *b = tv_active(peer, NULL, NULL, 0);
	int efd;
	assert_int_equal(pmrep_conn_get_event_fd(a, &efd), 0);
	assert_false(tv_readable(efd, 0));

	mock_async_qp(tv_vconn(a)->qp, IBV_EVENT_QP_FATAL);
	enum pmrep_async_event aev;
	assert_int_equal(pmrep_peer_handle_async_event(peer, &aev), 0);
	assert_int_equal(aev, PMREP_ASYNC_QP_FATAL);
	assert_int_equal(mock_unacked_async_events(), 0);
	/* the conn's event fd wakes its owner */
	assert_true(tv_readable(efd, 0));
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(a, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_next_event(a, &ev), PMREP_E_NO_EVENT);
	assert_false(tv_readable(efd, 0));
	assert_int_equal(pmrep_conn_next_event(b, &ev), PMREP_E_NO_EVENT);

	assert_int_equal(pmrep_conn_delete(&a), 0);
	assert_int_equal(pmrep_conn_delete(&b), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
async_cq_error_makes_the_conns_on_that_cq_report_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(cfg, 8), 0);
	struct pmrep_conn *a = tv_active(peer, cfg, NULL, 0);
	struct pmrep_conn *b = tv_active(peer, cfg, NULL, 0);

	mock_async_cq(tv_vconn(a)->rcq->cq, IBV_EVENT_CQ_ERR);
	enum pmrep_async_event aev;
	assert_int_equal(pmrep_peer_handle_async_event(peer, &aev), 0);
	assert_int_equal(aev, PMREP_ASYNC_CQ_ERROR);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(a, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_next_event(b, &ev), PMREP_E_NO_EVENT);

	assert_int_equal(pmrep_conn_delete(&a), 0);
	assert_int_equal(pmrep_conn_delete(&b), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
async_device_fatal_makes_every_conn_report_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *a = tv_active(peer, NULL, NULL, 0);
	struct pmrep_conn *b = tv_active(peer, NULL, NULL, 0);

	mock_async_device(mock_cm_context(), IBV_EVENT_DEVICE_FATAL);
	enum pmrep_async_event aev;
	assert_int_equal(pmrep_peer_handle_async_event(peer, &aev), 0);
	assert_int_equal(aev, PMREP_ASYNC_DEVICE_FATAL);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(a, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_next_event(b, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);

	assert_int_equal(pmrep_conn_delete(&a), 0);
	assert_int_equal(pmrep_conn_delete(&b), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
async_event_of_a_deleted_conn_is_acknowledged_and_harmless(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *a = tv_active(peer, NULL, NULL, 0);
	assert_int_equal(pmrep_conn_delete(&a), 0);
	/* the device reports on a QP nobody owns any more */
	mock_async_port(mock_cm_context(), IBV_EVENT_SM_CHANGE, 1);
	enum pmrep_async_event aev;
	assert_int_equal(pmrep_peer_handle_async_event(peer, &aev), 0);
	assert_int_equal(aev, PMREP_ASYNC_OTHER);
	assert_int_equal(mock_unacked_async_events(), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
async_event_read_by_one_peer_reaches_conns_of_every_peer_on_the_device(void **state)
{
	(void) state;
	struct pmrep_peer *reader = tv_peer();
	struct pmrep_peer *owner = tv_peer();	/* same ibv_context */
	struct pmrep_conn *conn = tv_active(owner, NULL, NULL, 0);
	mock_async_qp(tv_vconn(conn)->qp, IBV_EVENT_QP_FATAL);
	enum pmrep_async_event aev;
	assert_int_equal(pmrep_peer_handle_async_event(reader, &aev), 0);
	assert_int_equal(aev, PMREP_ASYNC_QP_FATAL);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&owner), 0);
	assert_int_equal(pmrep_peer_delete(&reader), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(peer_new_on_plain_device_has_no_caps),
		T(peer_new_probes_odp_and_native_atomic_write),
		T(peer_caps_are_probed_once_at_creation),
		T(peer_odp_without_rc_read_write_is_not_odp),
		T(peer_async_fd_is_nonblocking_and_cloexec),
		T(peer_new_each_failure_returns_error_and_leaks_nothing),
		T(peer_new_query_failure_is_provider_error_with_errno),
		T(peer_new_alloc_pd_failure_is_provider_error_with_errno),
		T(peer_new_out_of_memory_is_nomem),
		T(peer_delete_with_objects_is_busy),
		T(peer_delete_dealloc_pd_failure_is_provider_and_frees_peer),
		T(peer_delete_dereg_failure_is_provider_error_and_frees_peer),
		T(async_event_none_pending_is_none_without_blocking),
		T(async_event_read_failure_is_provider_error),
		T(async_port_events_are_reported_and_acknowledged),
		T(async_qp_fatal_makes_only_that_conn_report_lost),
		T(async_cq_error_makes_the_conns_on_that_cq_report_lost),
		T(async_device_fatal_makes_every_conn_report_lost),
		T(async_event_of_a_deleted_conn_is_acknowledged_and_harmless),
		T(async_event_read_by_one_peer_reaches_conns_of_every_peer_on_the_device),
#undef T
	};
	return cmocka_run_group_tests_name("verbs peer", tests, NULL, NULL);
}
