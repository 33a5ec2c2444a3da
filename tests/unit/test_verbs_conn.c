/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_conn.c -- the active side and the connection state machine:
 * request creation (resolution bounded by the cfg timeout), connect,
 * private data (T06), every rdma_cm event in every state acknowledged and
 * mapped (T04), exactly one terminal event, connect retries with backoff
 * (T17), disconnect, and deletion with requests in flight (T08).
 * Past ~800 lines: one program for the state machine; cases share mocks.
 */
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <sys/epoll.h>

#include "test_verbs_util.h"

static long long
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct rdma_cm_id *
cm_id(struct pmrep_conn *conn)
{
	return tv_vconn(conn)->id;
}

/* a connected-but-not-established active conn */
static struct pmrep_conn *
connecting(struct pmrep_peer *peer, const struct pmrep_conn_cfg *cfg)
{
	struct pmrep_conn_req *req = tv_req(peer, cfg);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	assert_null(req);
	return conn;
}

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

/* ------------------------------------------------------------ requests */

static void
conn_req_new_resolves_within_timeout_and_sends_nothing(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 321), 0);
	struct pmrep_conn_req *req = tv_req(peer, cfg);
	assert_int_equal(mock_cm_last("rdma_resolve_addr")->timeout_ms, 321);
	assert_true(mock_cm_last("rdma_resolve_route")->timeout_ms <= 321);
	assert_int_equal(mock_calls("rdma_connect"), 0);
	assert_int_equal(mock_live(MOCK_QP), 1);
	assert_int_equal(mock_unacked_cm_events(), 0);
	/* the request's id is on a channel of its own (not the default) */
	assert_ptr_equal(tv_vreq(req)->id->channel, tv_vreq(req)->evch);
	struct mock_qp_info qi;
	mock_qp_info(mock_qp_last(), &qi);
	assert_true(qi.cap.max_inline_data >= 8);
	assert_false(qi.sq_sig_all);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_null(req);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
conn_req_new_unresolvable_address_is_unreachable(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_req *req = NULL;
	mock_cm_set_reachable(false);
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, NULL, &req),
			PMREP_E_UNREACHABLE);
	assert_int_equal(pmrep_err_errno(), ENODEV);
	assert_null(req);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
conn_req_new_route_error_is_unreachable(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_req *req = NULL;
	mock_cm_react("rdma_resolve_route", RDMA_CM_EVENT_ROUTE_ERROR,
			-EHOSTUNREACH, NULL, 0);
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, NULL, &req),
			PMREP_E_UNREACHABLE);
	assert_int_equal(pmrep_err_errno(), EHOSTUNREACH);
	assert_int_equal(mock_live(MOCK_CM_ID), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
conn_req_new_silent_resolution_times_out_as_unreachable(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 50), 0);
	mock_cm_set_auto("rdma_resolve_addr", MOCK_CM_NO_EVENT);
	struct pmrep_conn_req *req = NULL;
	long long t0 = now_ms();
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, cfg, &req),
			PMREP_E_UNREACHABLE);
	long long took = now_ms() - t0;
	assert_true(took >= 50 && took < 1000);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
conn_req_new_unexpected_events_while_resolving_are_acked_and_skipped(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_req *req = NULL;
	mock_cm_react("rdma_resolve_addr", RDMA_CM_EVENT_ADDR_CHANGE, 0,
			NULL, 0);
	/* the id then resolves as usual (the reaction replaced the event:
	 * queue the real one ourselves on the next resolve) */
	mock_cm_set_auto("rdma_resolve_addr", MOCK_CM_NO_EVENT);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 50), 0);
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, cfg, &req),
			PMREP_E_UNREACHABLE);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
conn_req_new_resolve_call_failures_map_by_cause(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_req *req = NULL;
	/* no device / route: unreachable, like a later ROUTE_ERROR */
	mock_fail("rdma_resolve_route", 1, ENODEV);
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, NULL, &req),
			PMREP_E_UNREACHABLE);
	assert_int_equal(pmrep_err_errno(), ENODEV);
	mock_fail("rdma_resolve_addr", 1, EHOSTUNREACH);
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, NULL, &req),
			PMREP_E_UNREACHABLE);
	/* anything else is the provider's */
	mock_fail("rdma_resolve_addr", 1, ENOMEM);
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, NULL, &req),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOMEM);
	assert_int_equal(mock_live(MOCK_CM_ID), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
conn_req_new_bad_service_is_inval(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, "no-such-service-x",
			NULL, &req), PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

struct req_state {
	struct pmrep_peer *peer;
	struct pmrep_conn_cfg *cfg;
	struct pmrep_conn_req *req;
	struct pmrep_conn *conn;
	struct pmrep_mr_local *mr;
};

static int
scenario_req_new(void *st)
{
	struct req_state *s = st;
	return pmrep_conn_req_new(s->peer, TV_ADDR, TV_PORT, s->cfg, &s->req);
}

static void
cleanup_req(void *st, int ret)
{
	struct req_state *s = st;
	if (ret == 0)
		assert_int_equal(pmrep_conn_req_delete(&s->req), 0);
	assert_null(s->req);
}

static void
conn_req_new_each_failure_returns_error_and_leaks_nothing(void **state)
{
	(void) state;
	struct req_state s = { .peer = tv_peer(), .cfg = tv_cfg() };
	/* every shape of queues: own channels, RCQ, shared channel */
	assert_true(mock_run_each_failure(scenario_req_new, cleanup_req, &s) > 8);
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(s.cfg, 4), 0);
	assert_true(mock_run_each_failure(scenario_req_new, cleanup_req, &s) > 8);
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(s.cfg, true), 0);
	assert_true(mock_run_each_failure(scenario_req_new, cleanup_req, &s) > 8);
	assert_int_equal(pmrep_conn_cfg_delete(&s.cfg), 0);
	assert_int_equal(pmrep_peer_delete(&s.peer), 0);
}

static int
scenario_connect(void *st)
{
	struct req_state *s = st;
	int ret = pmrep_conn_req_new(s->peer, TV_ADDR, TV_PORT, s->cfg, &s->req);
	if (ret)
		return ret;
	ret = pmrep_conn_req_recv(s->req, s->mr, 0, 16, NULL);
	if (ret) {
		(void) pmrep_conn_req_delete(&s->req);
		return ret;
	}
	return pmrep_conn_req_connect(&s->req, NULL, &s->conn);
}

static void
cleanup_connect(void *st, int ret)
{
	struct req_state *s = st;
	assert_null(s->req);	/* consumed on every path */
	if (ret == 0)
		assert_int_equal(pmrep_conn_delete(&s->conn), 0);
	assert_null(s->conn);
}

static void
conn_req_connect_each_failure_consumes_req_and_leaks_nothing(void **state)
{
	(void) state;
	struct req_state s = { .peer = tv_peer(), .cfg = tv_cfg() };
	s.mr = tv_mr(s.peer, 64, PMREP_MR_USAGE_RECV);
	assert_true(mock_run_each_failure(scenario_connect, cleanup_connect,
			&s) > 10);
	tv_mr_free(s.mr);
	assert_int_equal(pmrep_conn_cfg_delete(&s.cfg), 0);
	assert_int_equal(pmrep_peer_delete(&s.peer), 0);
}

static void
conn_event_fd_is_nonblocking_cloexec_and_quiet_when_idle(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = connecting(peer, NULL);
	int fd;
	assert_int_equal(pmrep_conn_get_event_fd(conn, &fd), 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_false(tv_readable(fd, 0));
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	assert_true(tv_readable(fd, 0));
	expect_event(conn, PMREP_CONN_ESTABLISHED);
	assert_false(tv_readable(fd, 0));
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------------ T06 */

static void
t06_57_bytes_is_inval_before_any_rdma_cm_call(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_req *req = tv_req(peer, NULL);
	uint8_t big[57] = { 0 };
	struct pmrep_conn_private_data pd = { big, sizeof(big) };
	struct pmrep_conn *conn = NULL;
	unsigned calls = mock_calls("rdma_connect");
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &conn),
			PMREP_E_INVAL);
	assert_non_null(req);	/* not consumed */
	assert_int_equal(mock_calls("rdma_connect"), calls);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t06_connect_private_data_is_framed_with_its_true_length(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	const struct mock_cm_call *c;
	uint8_t data[56];
	for (int i = 0; i < 56; i++)
		data[i] = (uint8_t)(i + 1);
	data[2] = 0;	/* a trailing zero is data, not padding */

	static const uint8_t lens[] = { 0, 3, 55, 56 };
	for (size_t i = 0; i < sizeof(lens); i++) {
		struct pmrep_conn_req *req = tv_req(peer, NULL);
		struct pmrep_conn_private_data pd = { data, lens[i] };
		struct pmrep_conn *conn = NULL;
		assert_int_equal(pmrep_conn_req_connect(&req, &pd, &conn), 0);
		c = mock_cm_last("rdma_connect");
		assert_true(c->has_param);
		if (lens[i] == 0) {
			assert_int_equal(c->pdata_len, 0);
		} else if (lens[i] < 56) {
			assert_int_equal(c->param.flow_control, 0);
			assert_int_equal(c->pdata_len, lens[i] + 1);
			assert_int_equal(c->pdata[0], lens[i]);
			assert_memory_equal(c->pdata + 1, data, lens[i]);
		} else {
			assert_int_equal(c->param.flow_control, 1);
			assert_int_equal(c->pdata_len, 56);
			assert_memory_equal(c->pdata, data, 56);
		}
		/* the connection parameters pmrep asks for */
		/* T23: the default 1000 ms timeout gives exponent 15
		 * (134 ms per retransmission) and 6 retries */
		assert_int_equal(c->param.retry_count, 6);
		assert_true(c->param.rnr_retry_count > 0);
		assert_true(c->param.rnr_retry_count < 7);
		assert_true(c->param.initiator_depth > 0);
		assert_int_equal(pmrep_conn_delete(&conn), 0);
	}
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t06_private_data_decoding_round_trips_every_length(void **state)
{
	(void) state;
	uint8_t data[PMREP_PDATA_ACCEPT_MAX], out[PMREP_PDATA_ACCEPT_MAX];
	for (int i = 0; i < PMREP_PDATA_ACCEPT_MAX; i++)
		data[i] = (uint8_t)(i % 3 ? i : 0);
	static const unsigned maxes[] = { PMREP_PDATA_CONNECT_MAX,
		PMREP_PDATA_ACCEPT_MAX };
	for (int m = 0; m < 2; m++) {
		for (unsigned len = 0; len <= maxes[m]; len++) {
			struct pmrep_conn_private_data pd = { data, (uint8_t)len };
			struct verbs_pdata enc;
			verbs_pdata_encode(&pd, maxes[m], &enc);
			/* the receiver gets the whole area, zero padded */
			uint8_t wire[PMREP_PDATA_ACCEPT_MAX] = { 0 };
			memcpy(wire, enc.buf, enc.len);
			uint8_t got = 0xff;
			assert_int_equal(verbs_pdata_decode(wire, maxes[m],
					enc.flow_control, maxes[m], out, &got), 0);
			assert_int_equal(got, len);
			assert_memory_equal(out, data, len);
		}
	}
	uint8_t got;
	/* nothing at all, and bad frames */
	assert_int_equal(verbs_pdata_decode(NULL, 0, 0, 56, out, &got), 0);
	assert_int_equal(got, 0);
	uint8_t bad[56] = { 56 };
	assert_int_equal(verbs_pdata_decode(bad, 56, 0, 56, out, &got),
			PMREP_E_MALFORMED);
	uint8_t shorter[4] = { 9 };
	assert_int_equal(verbs_pdata_decode(shorter, 4, 0, 56, out, &got),
			PMREP_E_MALFORMED);
	assert_int_equal(verbs_pdata_decode(shorter, 4, 1, 56, out, &got),
			PMREP_E_MALFORMED);
}

static void
t06_no_private_data_from_acceptor_is_len_0_not_zeroes(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = connecting(peer, NULL);
	/* the REP area arrives as 196 zero bytes */
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	expect_event(conn, PMREP_CONN_ESTABLISHED);
	struct pmrep_conn_private_data pd = { (void *)1, 9 };
	assert_int_equal(pmrep_conn_get_private_data(conn, &pd), 0);
	assert_int_equal(pd.len, 0);
	assert_null(pd.ptr);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t06_private_data_read_after_ack_is_pmreps_own_copy(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	const uint8_t desc[5] = { 'd', 'e', 's', 'c', 0 };
	struct pmrep_conn *conn = tv_active(peer, NULL, desc, sizeof(desc));
	assert_int_equal(mock_unacked_cm_events(), 0);	/* buffer freed */
	struct pmrep_conn_private_data pd;
	assert_int_equal(pmrep_conn_get_private_data(conn, &pd), 0);
	assert_int_equal(pd.len, 5);
	assert_memory_equal(pd.ptr, desc, 5);
	assert_ptr_equal(pd.ptr, conn->pdata);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t06_malformed_accept_private_data_drops_the_connection(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = connecting(peer, NULL);
	const uint8_t bad[1] = { 250 };	/* a length byte beyond 195 */
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_ESTABLISHED, 0, bad, 1);
	expect_event(conn, PMREP_CONN_LOST);
	assert_int_equal(mock_cm_last("rdma_disconnect")->count, 1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------------ T04 */

static void
t04_explicit_reject_then_delete_acks_everything_and_returns(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = connecting(peer, NULL);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_CONSUMER_DEFINED, verbs_reject_marker,
			VERBS_REJECT_MARKER_SIZE);
	expect_event(conn, PMREP_CONN_REJECTED);
	assert_int_equal(mock_unacked_cm_events(), 0);
	expect_no_event(conn);
	long long t0 = now_ms();
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_true(now_ms() - t0 < 500);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t04_every_failure_event_is_acked_and_unreachable(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	static const enum rdma_cm_event_type evs[] = {
		RDMA_CM_EVENT_REJECTED, RDMA_CM_EVENT_UNREACHABLE,
		RDMA_CM_EVENT_ADDR_ERROR, RDMA_CM_EVENT_ROUTE_ERROR,
		RDMA_CM_EVENT_CONNECT_ERROR,
	};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		struct pmrep_conn *conn = connecting(peer, NULL);
		mock_cm_queue_event(cm_id(conn), evs[i],
				evs[i] == RDMA_CM_EVENT_REJECTED ?
				MOCK_REJ_INVALID_SERVICE_ID : -ETIMEDOUT,
				NULL, 0);
		expect_event(conn, PMREP_CONN_UNREACHABLE);
		assert_int_equal(mock_unacked_cm_events(), 0);
		expect_no_event(conn);
		assert_int_equal(pmrep_conn_delete(&conn), 0);
		assert_int_equal(mock_live(MOCK_CM_ID), 0);
	}
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t04_events_after_the_terminal_one_leave_the_fd_quiet_and_delete_fast(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	int fd;
	assert_int_equal(pmrep_conn_get_event_fd(conn, &fd), 0);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	expect_event(conn, PMREP_CONN_CLOSED);
	/* more events: nobody will ever read them, the fd must not spin */
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, 0);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DEVICE_REMOVAL, 0, NULL, 0);
	assert_false(tv_readable(fd, 50));
	expect_no_event(conn);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ---------------------------------------------------- state machine */

static void
established_ignores_unexpected_and_duplicate_events(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	static const enum rdma_cm_event_type evs[] = {
		RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ROUTE_RESOLVED,
		RDMA_CM_EVENT_CONNECT_RESPONSE, RDMA_CM_EVENT_ESTABLISHED,
		RDMA_CM_EVENT_MULTICAST_JOIN, RDMA_CM_EVENT_MULTICAST_ERROR,
		RDMA_CM_EVENT_ADDR_CHANGE, RDMA_CM_EVENT_TIMEWAIT_EXIT,
		(enum rdma_cm_event_type)99,
	};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		mock_cm_queue_event(cm_id(conn), evs[i], 0, NULL, 0);
	expect_no_event(conn);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(mock_cm_pending(tv_vconn(conn)->evch), 0);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	expect_event(conn, PMREP_CONN_CLOSED);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
connecting_ignores_unexpected_events(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = connecting(peer, NULL);
	static const enum rdma_cm_event_type evs[] = {
		RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ROUTE_RESOLVED,
		RDMA_CM_EVENT_CONNECT_RESPONSE, RDMA_CM_EVENT_ADDR_CHANGE,
		RDMA_CM_EVENT_TIMEWAIT_EXIT, RDMA_CM_EVENT_MULTICAST_JOIN,
	};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		mock_cm_queue_event(cm_id(conn), evs[i], 0, NULL, 0);
	expect_no_event(conn);
	assert_int_equal(mock_unacked_cm_events(), 0);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	expect_event(conn, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
failure_events_after_established_are_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	static const enum rdma_cm_event_type evs[] = {
		RDMA_CM_EVENT_REJECTED, RDMA_CM_EVENT_UNREACHABLE,
		RDMA_CM_EVENT_ADDR_ERROR, RDMA_CM_EVENT_ROUTE_ERROR,
		RDMA_CM_EVENT_CONNECT_ERROR,
		/* DEVICE_REMOVAL releases the QP itself: T22_* */
	};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
		mock_cm_queue_event(cm_id(conn), evs[i], 0, NULL, 0);
		expect_event(conn, PMREP_CONN_LOST);
		/* posted requests complete now, flushed */
		assert_int_equal(mock_qp_state(tv_vconn(conn)->qp), IBV_QPS_ERR);
		assert_int_equal(pmrep_conn_delete(&conn), 0);
	}
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
device_removal_or_disconnect_while_connecting_is_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = connecting(peer, NULL);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	expect_event(conn, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	/* last: a removal releases the peer's device (T22) */
	conn = connecting(peer, NULL);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
			NULL, 0);
	expect_event(conn, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
exactly_one_terminal_event_even_when_more_follow(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
			NULL, 0);
	mock_async_qp(tv_vconn(conn)->qp, IBV_EVENT_QP_FATAL);
	enum pmrep_async_event aev;
	assert_int_equal(pmrep_peer_handle_async_event(peer, &aev), 0);
	/* the provider alone, without the generic guard */
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_verbs_ops.conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_verbs_ops.conn_next_event(conn, &ev),
			PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_verbs_ops.conn_next_event(conn, &ev),
			PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
next_event_read_failure_is_provider_error(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = connecting(peer, NULL);
	mock_fail("rdma_get_cm_event", 1, EIO);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	expect_event(conn, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------- disconnect */

static void
disconnect_then_disconnected_is_closed(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	mock_cm_react("rdma_disconnect", RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	assert_int_equal(pmrep_conn_disconnect(conn), 0);
	assert_int_equal(mock_cm_last("rdma_disconnect")->count, 1);
	/* a second call is harmless */
	assert_int_equal(pmrep_conn_disconnect(conn), 0);
	expect_event(conn, PMREP_CONN_CLOSED);
	assert_int_equal(pmrep_conn_disconnect(conn), 0);
	assert_int_equal(mock_cm_last("rdma_disconnect")->count, 1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
peer_disconnect_is_answered_and_closed(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	expect_event(conn, PMREP_CONN_CLOSED);
	/* the peer's DREQ gets its DREP */
	assert_int_equal(mock_cm_last("rdma_disconnect")->count, 1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
disconnect_failure_is_provider_error(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	mock_fail("rdma_disconnect", 1, EIO);
	assert_int_equal(pmrep_conn_disconnect(conn), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
disconnect_before_established_reports_closed_and_wakes_the_fd(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = connecting(peer, NULL);
	int fd;
	assert_int_equal(pmrep_conn_get_event_fd(conn, &fd), 0);
	assert_int_equal(pmrep_conn_disconnect(conn), 0);
	assert_true(tv_readable(fd, 0));
	/* an ESTABLISHED that raced it does not win */
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	expect_event(conn, PMREP_CONN_CLOSED);
	expect_no_event(conn);
	assert_false(tv_readable(fd, 0));
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------------ T17 */

static struct pmrep_conn_cfg *
retry_cfg(unsigned retries, int backoff, int timeout)
{
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_connect_retries(cfg, retries,
			backoff), 0);
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, timeout), 0);
	return cfg;
}

static void
t17_connect_before_listen_retries_with_backoff_then_connects(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = retry_cfg(5, 20, 1000);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	struct pmrep_conn_req *req = tv_req(peer, cfg);
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 32, (void *)0xa), 0);
	assert_int_equal(pmrep_conn_req_recv(req, mr, 32, 32, (void *)0xb), 0);
	/* nothing listens: the kernel's REJ, no pmrep marker (x2) */
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	struct pmrep_conn *conn = NULL;
	long long t0 = now_ms();
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), PMREP_E_NO_EVENT);
	assert_int_equal(tv_vconn(conn)->state, VERBS_ST_BACKOFF);
	assert_int_equal(tv_vconn(conn)->backoff_ms, 40);	/* doubled */
	assert_null(tv_vconn(conn)->id);
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(pmrep_conn_wait_event(conn, 2000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	long long took = now_ms() - t0;
	assert_true(took >= 20 + 40);	/* both backoffs waited */
	assert_int_equal(mock_calls("rdma_connect"), 3);
	assert_int_equal(mock_calls("rdma_resolve_addr"), 3);
	assert_int_equal(mock_live(MOCK_QP), 1);
	assert_int_equal(mock_live(MOCK_CM_ID), 1);
	assert_int_equal(mock_unacked_cm_events(), 0);

	/* the pre-posted receives were posted again on the new QP, once */
	struct ibv_qp *qp = tv_vconn(conn)->qp;
	assert_int_equal(mock_qp_rq_used(qp), 2);
	mock_qp_recv(qp, "hello", 5);
	struct pmrep_completion c[4];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(conn->cq, c, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c[0].op_context, (void *)0xa);
	assert_int_equal(c[0].status, PMREP_WC_SUCCESS);
	assert_int_equal(c[0].byte_len, 5);
	assert_int_equal(pmrep_cq_get_completions(conn->cq, c, 4, &n),
			PMREP_E_NO_COMPLETION);

	assert_int_equal(pmrep_conn_delete(&conn), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t17_stale_flushes_of_a_failed_attempt_never_reach_the_user(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = retry_cfg(1, 1, 1000);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	struct pmrep_conn_req *req = tv_req(peer, cfg);
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 64, (void *)0xa), 0);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	/* librdmacm moves the QP to error on REJECTED: the receive is
	 * flushed onto the conn's CQ */
	mock_qp_set_state(tv_vconn(conn)->qp, IBV_QPS_ERR);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, 2000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	struct pmrep_completion c;
	int n;
	assert_int_equal(pmrep_cq_get_completions(conn->cq, &c, 1, &n),
			PMREP_E_NO_COMPLETION);
	assert_int_equal(mock_qp_rq_used(tv_vconn(conn)->qp), 1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t17_retries_exhausted_report_unreachable(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = retry_cfg(2, 1, 1000);
	mock_cm_set_auto("rdma_connect", RDMA_CM_EVENT_REJECTED);
	struct pmrep_conn *conn = connecting(peer, cfg);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, 2000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_UNREACHABLE);
	assert_int_equal(mock_calls("rdma_connect"), 3);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(pmrep_conn_wait_event(conn, 100, &ev),
			PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t17_explicit_reject_is_final_without_retry(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = retry_cfg(5, 1, 1000);
	struct pmrep_conn *conn = connecting(peer, cfg);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_CONSUMER_DEFINED, verbs_reject_marker,
			VERBS_REJECT_MARKER_SIZE);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, 500, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_REJECTED);
	assert_int_equal(mock_calls("rdma_connect"), 1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t17_silent_peer_is_unreachable_within_timeout_times_attempts(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	/* 3 attempts of at most 40 ms each, backoffs included */
	struct pmrep_conn_cfg *cfg = retry_cfg(2, 30, 40);
	struct pmrep_conn *conn = connecting(peer, cfg);
	long long t0 = now_ms();
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, 5000, &ev), 0);
	long long took = now_ms() - t0;
	assert_int_equal(ev, PMREP_CONN_UNREACHABLE);
	assert_true(took <= 120 * 11 / 10 + 20);
	assert_true(mock_calls("rdma_connect") >= 2);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t17_retry_resolution_failures_count_as_attempts(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = retry_cfg(2, 1, 1000);
	struct pmrep_conn *conn = connecting(peer, cfg);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT,
			NULL, 0);
	/* retry 1: the address does not resolve; retry 2: the route */
	mock_cm_react("rdma_resolve_addr", RDMA_CM_EVENT_ADDR_ERROR,
			-EHOSTUNREACH, NULL, 0);
	mock_cm_react("rdma_resolve_route", RDMA_CM_EVENT_ROUTE_ERROR,
			-EHOSTUNREACH, NULL, 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, 2000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_UNREACHABLE);
	assert_int_equal(mock_calls("rdma_resolve_addr"), 3);
	assert_int_equal(mock_calls("rdma_connect"), 1);
	assert_int_equal(mock_live(MOCK_CM_ID), 0);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t17_rdma_failures_during_a_retry_count_as_attempts(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	static const char *const fns[] = {
		"rdma_create_id", "rdma_resolve_addr", "rdma_resolve_route",
		"rdma_create_qp_ex", "rdma_connect",
	};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		struct pmrep_conn_cfg *cfg = retry_cfg(2, 1, 1000);
		struct pmrep_conn *conn = connecting(peer, cfg);
		mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_REJECTED,
				MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
		mock_fail(fns[i], 1, ENOMEM);
		mock_cm_react("rdma_connect", RDMA_CM_EVENT_ESTABLISHED, 0,
				NULL, 0);
		enum pmrep_conn_event ev;
		assert_int_equal(pmrep_conn_wait_event(conn, 2000, &ev), 0);
		assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
		assert_int_equal(mock_unacked_cm_events(), 0);
		assert_int_equal(pmrep_conn_delete(&conn), 0);
		assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
		assert_int_equal(mock_live(MOCK_QP), 0);
		assert_int_equal(mock_live(MOCK_CM_ID), 0);
		mock_fail_clear();
		mock_cm_set_auto("rdma_connect", MOCK_CM_NO_EVENT);
	}
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t17_delete_during_backoff_is_clean(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = retry_cfg(3, 1000, 1000);
	struct pmrep_conn *conn = connecting(peer, cfg);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
	expect_no_event(conn);
	assert_int_equal(tv_vconn(conn)->state, VERBS_ST_BACKOFF);
	/* a disconnect while backing off: CLOSED, no further attempt */
	assert_int_equal(pmrep_conn_disconnect(conn), 0);
	expect_event(conn, PMREP_CONN_CLOSED);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(mock_calls("rdma_connect"), 1);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------------ T08 */

static void
t08_every_posted_request_ends_with_exactly_one_outcome(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 80), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, 80), 0);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	struct pmrep_mr_local *src = tv_mr(peer, 64 * 4096,
			PMREP_MR_USAGE_WRITE_SRC);
	struct pmrep_mr_local *dst = tv_mr(peer, 64 * 4096,
			PMREP_MR_USAGE_WRITE_DST |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT);
	struct pmrep_mr_remote *rdst = tv_remote(dst);
	struct pmrep_peer_cfg *pc;
	assert_int_equal(pmrep_peer_cfg_new(&pc), 0);
	assert_int_equal(pmrep_peer_cfg_set_direct_write_to_pmem(pc, true), 0);
	assert_int_equal(pmrep_conn_apply_remote_peer_cfg(conn, pc), 0);

	for (uintptr_t i = 0; i < 64; i++)
		assert_int_equal(pmrep_write(conn, rdst, i * 4096, src, i * 4096,
				4096, PMREP_F_COMPLETION_ALWAYS, (void *)(i + 1)), 0);
	assert_int_equal(pmrep_flush(conn, rdst, 0, 64 * 4096,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)1000), 0);
	/* 10 land, then the peer dies */
	assert_int_equal(mock_qp_complete_sends(tv_vconn(conn)->qp, 10,
			IBV_WC_SUCCESS), 10);
	mock_async_qp(tv_vconn(conn)->qp, IBV_EVENT_QP_FATAL);
	enum pmrep_async_event aev;
	assert_int_equal(pmrep_peer_handle_async_event(peer, &aev), 0);
	expect_event(conn, PMREP_CONN_LOST);

	int seen[1001] = { 0 };
	int outcomes = 0, n;
	bool err_seen = false;
	struct pmrep_completion c[16];
	while (pmrep_cq_get_completions(conn->cq, c, 16, &n) == 0) {
		for (int i = 0; i < n; i++) {
			uintptr_t k = (uintptr_t)c[i].op_context;
			assert_true(k >= 1 && k <= 1000);
			seen[k]++;
			outcomes++;
			if (c[i].status != PMREP_WC_SUCCESS)
				err_seen = true;
			else
				assert_false(err_seen);
			if (k == 1000)
				assert_int_not_equal(c[i].status,
						PMREP_WC_SUCCESS);
		}
	}
	assert_int_equal(outcomes, 65);
	for (int k = 1; k <= 64; k++)
		assert_int_equal(seen[k], 1);
	assert_int_equal(seen[1000], 1);

	long long t0 = now_ms();
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_true(now_ms() - t0 < 500);
	assert_int_equal(pmrep_peer_cfg_delete(&pc), 0);
	assert_int_equal(pmrep_mr_remote_delete(&rdst), 0);
	tv_mr_free(src);
	tv_mr_free(dst);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t08_delete_with_requests_in_flight_flushes_then_destroys(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	struct pmrep_mr_remote *r = tv_remote(mr);
	for (int i = 0; i < 5; i++)
		assert_int_equal(pmrep_write(conn, r, 0, mr, 0, 64,
				PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_recv(conn, mr, 0, 64, NULL), 0);
	unsigned modifies = mock_calls("ibv_modify_qp");
	long long t0 = now_ms();
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_true(now_ms() - t0 < 500);
	assert_true(mock_calls("ibv_modify_qp") > modifies);
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(pmrep_mr_remote_delete(&r), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t08_delete_is_bounded_even_if_the_device_never_delivers_flushes(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 60), 0);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	struct pmrep_mr_remote *r = tv_remote(mr);
	assert_int_equal(pmrep_write(conn, r, 0, mr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	/* the device's CQ never gives anything back */
	mock_fail_always("ibv_poll_cq", EIO);
	long long t0 = now_ms();
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	long long took = now_ms() - t0;
	assert_true(took >= 60 && took < 1000);
	assert_true(tv_logged("flushed completions"));
	mock_fail_clear();
	assert_int_equal(pmrep_mr_remote_delete(&r), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
delete_idle_conn_does_not_wait(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	unsigned polls = mock_calls("ibv_poll_cq");
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(mock_calls("ibv_poll_cq"), polls);
	/* an orderly goodbye to the peer */
	assert_int_equal(mock_cm_last("rdma_disconnect")->count, 1);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static int
count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

static void
conn_fd_failures_consume_the_request_and_leak_no_fd(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	static const struct {
		const char *fn;
		unsigned nth;
	} cases[] = {
		{ "epoll_create1", 1 }, { "timerfd_create", 1 },
		{ "eventfd", 1 }, { "epoll_ctl", 1 }, { "epoll_ctl", 2 },
		{ "epoll_ctl", 3 }, { "timerfd_settime", 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int before = count_fds();
		struct pmrep_conn_req *req = tv_req(peer, NULL);
		struct pmrep_conn *conn = NULL;
		mock_extra_fail(cases[i].fn, cases[i].nth, EMFILE);
		assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn),
				PMREP_E_PROVIDER);
		assert_int_equal(pmrep_err_errno(), EMFILE);
		assert_true(tv_logged(cases[i].fn));
		assert_null(req);
		assert_null(conn);
		assert_int_equal(mock_live(MOCK_QP), 0);
		assert_int_equal(mock_live(MOCK_CM_ID), 0);
		assert_int_equal(count_fds(), before);
		mock_extra_clear();
	}
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t17_timer_failure_while_retrying_is_lost_not_a_hang(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_connect_retries(cfg, 3, 10), 0);
	struct pmrep_conn *conn = connecting(peer, cfg);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
	mock_extra_fail("timerfd_settime", 1, EINVAL);
	expect_event(conn, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t08_cq_wait_sees_the_peers_disconnect_and_flushes_what_is_posted(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	struct pmrep_mr_remote *r = tv_remote(mr);
	for (uintptr_t i = 1; i <= 3; i++)
		assert_int_equal(pmrep_write(conn, r, 0, mr, 0, 64,
				PMREP_F_COMPLETION_ALWAYS, (void *)i), 0);
	/* the peer process dies: its kernel sends a DREQ; the application
	 * waits on its CQ only, nobody reads conn events yet */
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	struct pmrep_cq *cq = conn->cq;
	assert_int_equal(pmrep_cq_wait(cq, 1000), 0);
	struct pmrep_completion c[4];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(cq, c, 4, &n), 0);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++) {
		assert_ptr_equal(c[i].op_context, (void *)(uintptr_t)(i + 1));
		assert_int_equal(c[i].status, PMREP_WC_FLUSHED);
	}
	/* the event was kept for its owner: reported once, fd then quiet */
	int fd;
	assert_int_equal(pmrep_conn_get_event_fd(conn, &fd), 0);
	assert_true(tv_readable(fd, 0));
	expect_event(conn, PMREP_CONN_CLOSED);
	expect_no_event(conn);
	assert_false(tv_readable(fd, 0));
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_mr_remote_delete(&r), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
events_decided_during_a_cq_wait_are_reported_in_order_once(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	struct pmrep_conn_req *req = tv_req(peer, NULL);
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 64, (void *)7), 0);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_CONNECT_ERROR, 0,
			NULL, 0);
	/* the flushed receive wakes the CQ wait */
	assert_int_equal(pmrep_cq_wait(conn->cq, 1000), 0);
	struct pmrep_completion c;
	int n;
	assert_int_equal(pmrep_cq_get_completions(conn->cq, &c, 1, &n), 0);
	assert_ptr_equal(c.op_context, (void *)7);
	assert_int_equal(c.status, PMREP_WC_FLUSHED);
	expect_event(conn, PMREP_CONN_ESTABLISHED);
	expect_event(conn, PMREP_CONN_LOST);
	expect_no_event(conn);
	/* a later wait does not spin on the conn's fd */
	long long t0 = now_ms();
	assert_int_equal(pmrep_cq_wait(conn->cq, 50), PMREP_E_TIMEOUT);
	assert_true(now_ms() - t0 >= 50);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
cq_wait_times_out_and_keeps_conn_events_for_next_event(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = connecting(peer, NULL);
	/* nothing on the CQ, nothing on the conn */
	assert_int_equal(pmrep_cq_wait(conn->cq, 0), PMREP_E_TIMEOUT);
	assert_int_equal(pmrep_cq_wait(conn->cq, 20), PMREP_E_TIMEOUT);
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	assert_int_equal(pmrep_cq_wait(conn->cq, 20), PMREP_E_TIMEOUT);
	expect_event(conn, PMREP_CONN_ESTABLISHED);
	expect_no_event(conn);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
local_disconnect_reports_closed_without_waiting_for_the_peer(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	int fd;
	assert_int_equal(pmrep_conn_get_event_fd(conn, &fd), 0);
	/* the peer never answers the DREQ */
	assert_int_equal(pmrep_conn_disconnect(conn), 0);
	assert_true(tv_readable(fd, 0));
	expect_event(conn, PMREP_CONN_CLOSED);
	/* its late DISCONNECTED changes nothing */
	mock_cm_queue_event(cm_id(conn), RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	expect_no_event(conn);
	assert_false(tv_readable(fd, 0));
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(conn_req_new_resolves_within_timeout_and_sends_nothing),
		T(conn_req_new_unresolvable_address_is_unreachable),
		T(conn_req_new_route_error_is_unreachable),
		T(conn_req_new_silent_resolution_times_out_as_unreachable),
		T(conn_req_new_unexpected_events_while_resolving_are_acked_and_skipped),
		T(conn_req_new_resolve_call_failures_map_by_cause),
		T(conn_req_new_bad_service_is_inval),
		T(conn_req_new_each_failure_returns_error_and_leaks_nothing),
		T(conn_req_connect_each_failure_consumes_req_and_leaks_nothing),
		T(conn_event_fd_is_nonblocking_cloexec_and_quiet_when_idle),
		T(t06_57_bytes_is_inval_before_any_rdma_cm_call),
		T(t06_connect_private_data_is_framed_with_its_true_length),
		T(t06_private_data_decoding_round_trips_every_length),
		T(t06_no_private_data_from_acceptor_is_len_0_not_zeroes),
		T(t06_private_data_read_after_ack_is_pmreps_own_copy),
		T(t06_malformed_accept_private_data_drops_the_connection),
		T(t04_explicit_reject_then_delete_acks_everything_and_returns),
		T(t04_every_failure_event_is_acked_and_unreachable),
		T(t04_events_after_the_terminal_one_leave_the_fd_quiet_and_delete_fast),
		T(established_ignores_unexpected_and_duplicate_events),
		T(connecting_ignores_unexpected_events),
		T(failure_events_after_established_are_lost),
		T(device_removal_or_disconnect_while_connecting_is_lost),
		T(exactly_one_terminal_event_even_when_more_follow),
		T(next_event_read_failure_is_provider_error),
		T(disconnect_then_disconnected_is_closed),
		T(peer_disconnect_is_answered_and_closed),
		T(disconnect_failure_is_provider_error),
		T(disconnect_before_established_reports_closed_and_wakes_the_fd),
		T(t17_connect_before_listen_retries_with_backoff_then_connects),
		T(t17_stale_flushes_of_a_failed_attempt_never_reach_the_user),
		T(t17_retries_exhausted_report_unreachable),
		T(t17_explicit_reject_is_final_without_retry),
		T(t17_silent_peer_is_unreachable_within_timeout_times_attempts),
		T(t17_retry_resolution_failures_count_as_attempts),
		T(t17_rdma_failures_during_a_retry_count_as_attempts),
		T(t17_delete_during_backoff_is_clean),
		T(t08_every_posted_request_ends_with_exactly_one_outcome),
		T(t08_delete_with_requests_in_flight_flushes_then_destroys),
		T(t08_delete_is_bounded_even_if_the_device_never_delivers_flushes),
		T(delete_idle_conn_does_not_wait),
		T(conn_fd_failures_consume_the_request_and_leak_no_fd),
		T(t17_timer_failure_while_retrying_is_lost_not_a_hang),
		T(t08_cq_wait_sees_the_peers_disconnect_and_flushes_what_is_posted),
		T(events_decided_during_a_cq_wait_are_reported_in_order_once),
		T(cq_wait_times_out_and_keeps_conn_events_for_next_event),
		T(local_disconnect_reports_closed_without_waiting_for_the_peer),
#undef T
	};
	return cmocka_run_group_tests_name("verbs conn", tests, NULL, NULL);
}
