/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_ep.c -- the passive side: listening, taking connection
 * requests (T05: the request event is acknowledged before the id moves to
 * its own channel; T06: the initiator's private data, malformed ones
 * refused), accepting, explicit reject (final for the initiator), shutdown.
 * Past ~800 lines: one program for the passive side; cases share mock fixtures.
 */
#include <fcntl.h>

#include "test_verbs_util.h"

static void
expect_event(struct pmrep_conn *conn, enum pmrep_conn_event want)
{
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, want);
}

static void
ep_listen_binds_listens_and_reports_the_port(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = NULL;
	assert_int_equal(pmrep_ep_listen(peer, TV_LISTEN, "7204", &ep), 0);
	uint16_t port = 0;
	assert_int_equal(pmrep_ep_get_port(ep, &port), 0);
	assert_int_equal(port, 7204);
	assert_true(mock_cm_last("rdma_listen")->backlog > 0);
	int fd;
	assert_int_equal(pmrep_ep_get_fd(ep, &fd), 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_false(tv_readable(fd, 0));
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_null(ep);
	/* port 0: any free port, reported */
	ep = tv_listen(peer);
	assert_int_equal(pmrep_ep_get_port(ep, &port), 0);
	assert_int_not_equal(port, 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
ep_listen_address_in_use_is_provider_error_with_errno(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *a = NULL, *b = NULL;
	assert_int_equal(pmrep_ep_listen(peer, TV_LISTEN, "7300", &a), 0);
	assert_int_equal(pmrep_ep_listen(peer, TV_LISTEN, "7300", &b),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EADDRINUSE);
	assert_null(b);
	assert_int_equal(pmrep_ep_shutdown(&a), 0);
	assert_int_equal(pmrep_ep_listen(peer, "not an address", "1", &b),
			PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

struct ep_state {
	struct pmrep_peer *peer;
	struct pmrep_ep *ep;
	struct pmrep_conn_req *req;
	struct pmrep_conn *conn;
	struct pmrep_conn_cfg *cfg;
	struct pmrep_mr_local *mr;
};

static int
scenario_listen(void *st)
{
	struct ep_state *s = st;
	return pmrep_ep_listen(s->peer, TV_LISTEN, "0", &s->ep);
}

static void
cleanup_listen(void *st, int ret)
{
	struct ep_state *s = st;
	if (ret == 0)
		assert_int_equal(pmrep_ep_shutdown(&s->ep), 0);
	assert_null(s->ep);
}

static void
ep_listen_each_failure_returns_error_and_leaks_nothing(void **state)
{
	(void) state;
	struct ep_state s = { .peer = tv_peer() };
	assert_true(mock_run_each_failure(scenario_listen, cleanup_listen, &s)
			>= 5);
	assert_int_equal(pmrep_peer_delete(&s.peer), 0);
}

static void
ep_shutdown_destroy_failure_is_provider_error(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	mock_fail("rdma_destroy_id", 1, EIO);
	assert_int_equal(pmrep_ep_shutdown(&ep), PMREP_E_PROVIDER);
	assert_null(ep);
	/* the id and its channel stay with the device; the peer goes */
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------------ T05 */

static void
t05_request_acked_before_its_id_moves_to_its_own_channel(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	int epfd;
	assert_int_equal(pmrep_ep_get_fd(ep, &epfd), 0);
	uint8_t f[8];
	uint8_t flen = tv_frame(f, "hi", 2);
	struct rdma_cm_id *id = mock_cm_queue_conn_request(tv_ep_id(ep), f,
			flen);
	assert_true(tv_readable(epfd, 0));
	struct pmrep_conn_req *req = NULL;
	/* the mock dies if rdma_migrate_id meets an unacked event */
	assert_int_equal(pmrep_ep_next_conn_req(ep, NULL, &req), 0);
	assert_int_equal(mock_cm_last("rdma_migrate_id")->count, 1);
	assert_ptr_equal(mock_cm_last("rdma_migrate_id")->id, id);
	struct verbs_conn *vc = tv_vreq(req);
	assert_ptr_equal(vc->id, id);
	assert_ptr_equal(id->channel, vc->evch);
	assert_ptr_not_equal(id->channel->fd, epfd);
	assert_false(tv_readable(epfd, 0));

	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	assert_int_equal(mock_cm_last("rdma_accept")->count, 1);
	/* ESTABLISHED arrives on the conn's channel, not the endpoint's */
	mock_cm_queue_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	int cfd;
	assert_int_equal(pmrep_conn_get_event_fd(conn, &cfd), 0);
	assert_true(tv_readable(cfd, 0));
	assert_false(tv_readable(epfd, 0));
	expect_event(conn, PMREP_CONN_ESTABLISHED);
	/* the passive conn reports the initiator's private data */
	struct pmrep_conn_private_data pd;
	assert_int_equal(pmrep_conn_get_private_data(conn, &pd), 0);
	assert_int_equal(pd.len, 2);
	assert_memory_equal(pd.ptr, "hi", 2);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
accept_takes_at_most_what_the_initiator_asked_for(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_req *req = tv_passive_req(ep, NULL, NULL, 0);
	uint8_t acc[PMREP_PDATA_ACCEPT_MAX];
	memset(acc, 7, sizeof(acc));
	struct pmrep_conn_private_data pd = { acc, sizeof(acc) };
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &conn), 0);
	const struct mock_cm_call *c = mock_cm_last("rdma_accept");
	/* the mock's request asks for 16 / 16 */
	assert_true(c->param.responder_resources <= 16);
	assert_true(c->param.initiator_depth <= 16);
	assert_true(c->param.rnr_retry_count > 0);
	/* a full 196-byte accept: unframed, flagged */
	assert_int_equal(c->pdata_len, PMREP_PDATA_ACCEPT_MAX);
	assert_int_equal(c->param.flow_control, 1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
accepted_conn_without_established_in_time_is_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 30), 0);
	struct pmrep_conn_req *req = tv_passive_req(ep, cfg, NULL, 0);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, 1000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
passive_failure_events_before_established_are_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	static const enum rdma_cm_event_type evs[] = {
		RDMA_CM_EVENT_REJECTED, RDMA_CM_EVENT_CONNECT_ERROR,
		RDMA_CM_EVENT_UNREACHABLE, RDMA_CM_EVENT_DISCONNECTED,
	};
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		struct pmrep_conn_req *req = tv_passive_req(ep, NULL, NULL, 0);
		struct pmrep_conn *conn = NULL;
		assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
		mock_cm_queue_event(tv_vconn(conn)->id, evs[i], 0, NULL, 0);
		expect_event(conn, PMREP_CONN_LOST);
		assert_int_equal(mock_unacked_cm_events(), 0);
		assert_int_equal(pmrep_conn_delete(&conn), 0);
	}
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------------ T06 */

static void
t06_initiator_private_data_has_its_true_length(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_private_data pd;

	/* none: the 56-byte area arrives zero filled */
	mock_cm_queue_conn_request(tv_ep_id(ep), NULL, 0);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_ep_next_conn_req(ep, NULL, &req), 0);
	assert_int_equal(pmrep_conn_req_get_private_data(req, &pd), 0);
	assert_int_equal(pd.len, 0);
	assert_null(pd.ptr);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);

	/* 3 bytes ending in 0: the 0 is data */
	const uint8_t three[3] = { 1, 2, 0 };
	req = tv_passive_req(ep, NULL, three, 3);
	assert_int_equal(mock_unacked_cm_events(), 0);	/* buffer freed */
	assert_int_equal(pmrep_conn_req_get_private_data(req, &pd), 0);
	assert_int_equal(pd.len, 3);
	assert_memory_equal(pd.ptr, three, 3);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t06_malformed_request_is_refused_with_the_final_marker(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	/* a length byte that cannot be: 200 bytes in a 56-byte area */
	const uint8_t bad[4] = { 200, 1, 2, 3 };
	mock_cm_queue_conn_request(tv_ep_id(ep), bad, sizeof(bad));
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_ep_next_conn_req(ep, NULL, &req),
			PMREP_E_MALFORMED);
	assert_null(req);
	const struct mock_cm_call *c = mock_cm_last("rdma_reject");
	assert_int_equal(c->pdata_len, VERBS_REJECT_MARKER_SIZE);
	assert_memory_equal(c->pdata, verbs_reject_marker,
			VERBS_REJECT_MARKER_SIZE);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 1);	/* the listener */
	/* the endpoint goes on */
	req = tv_passive_req(ep, NULL, NULL, 0);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ---------------------------------------------------- requests, errors */

static void
next_conn_req_nothing_pending_is_no_event(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_ep_next_conn_req(ep, NULL, &req),
			PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_ep_wait_conn_req(ep, NULL, 20, &req),
			PMREP_E_TIMEOUT);
	/* other events on the listener are acknowledged and skipped */
	mock_cm_queue_event(tv_ep_id(ep), RDMA_CM_EVENT_ADDR_CHANGE, 0, NULL, 0);
	assert_int_equal(pmrep_ep_next_conn_req(ep, NULL, &req),
			PMREP_E_NO_EVENT);
	assert_int_equal(mock_unacked_cm_events(), 0);
	mock_fail("rdma_get_cm_event", 1, EIO);
	assert_int_equal(pmrep_ep_next_conn_req(ep, NULL, &req),
			PMREP_E_PROVIDER);
	/* the listener's device goes: the endpoint is lost (T22_*) */
	mock_cm_queue_event(tv_ep_id(ep), RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
			NULL, 0);
	assert_int_equal(pmrep_ep_next_conn_req(ep, NULL, &req),
			PMREP_E_DEVICE_REMOVED);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_true(tv_logged("removed"));
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static int
scenario_next_req(void *st)
{
	struct ep_state *s = st;
	mock_cm_queue_conn_request(tv_ep_id(s->ep), NULL, 0);
	return pmrep_ep_next_conn_req(s->ep, s->cfg, &s->req);
}

static void
cleanup_next_req(void *st, int ret)
{
	struct ep_state *s = st;
	if (ret == 0)
		assert_int_equal(pmrep_conn_req_delete(&s->req), 0);
	assert_null(s->req);
	/* whatever happened, the request's id is gone */
	assert_int_equal(mock_live(MOCK_CM_ID), 1);
}

static void
next_conn_req_each_failure_refuses_and_leaks_nothing(void **state)
{
	(void) state;
	struct ep_state s = { .peer = tv_peer() };
	s.ep = tv_listen(s.peer);
	s.cfg = tv_cfg();
	/* the refusal of a request we could not build is best effort */
	static const char *const tolerated[] = { NULL };
	struct mock_each_opts o = { .tolerated = tolerated };
	/* the request alone: its allocations, channel, id move (its CQs
	 * and QP come later: lazy_* below) */
	assert_true(mock_run_each_failure_opts(scenario_next_req,
			cleanup_next_req, &s, &o) >= 4);
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(s.cfg, 4), 0);
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(s.cfg, true), 0);
	assert_true(mock_run_each_failure_opts(scenario_next_req,
			cleanup_next_req, &s, &o) >= 4);
	assert_int_equal(mock_calls("rdma_create_qp_ex"), 0);
	assert_int_equal(mock_calls("ibv_create_cq"), 0);
	assert_int_equal(mock_calls("ibv_create_comp_channel"), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&s.cfg), 0);
	assert_int_equal(pmrep_ep_shutdown(&s.ep), 0);
	assert_int_equal(pmrep_peer_delete(&s.peer), 0);
}

static int
scenario_accept(void *st)
{
	struct ep_state *s = st;
	mock_cm_queue_conn_request(tv_ep_id(s->ep), NULL, 0);
	int ret = pmrep_ep_next_conn_req(s->ep, NULL, &s->req);
	if (ret)
		return ret;
	return pmrep_conn_req_connect(&s->req, NULL, &s->conn);
}

static void
cleanup_accept(void *st, int ret)
{
	struct ep_state *s = st;
	assert_null(s->req);
	if (ret == 0)
		assert_int_equal(pmrep_conn_delete(&s->conn), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 1);
}

static void
accept_each_failure_consumes_the_request_and_leaks_nothing(void **state)
{
	(void) state;
	struct ep_state s = { .peer = tv_peer() };
	s.ep = tv_listen(s.peer);
	assert_true(mock_run_each_failure(scenario_accept, cleanup_accept, &s)
			> 10);
	assert_int_equal(pmrep_ep_shutdown(&s.ep), 0);
	assert_int_equal(pmrep_peer_delete(&s.peer), 0);
}

static void
accept_failure_refuses_without_marker_so_the_initiator_may_retry(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_req *req = tv_passive_req(ep, NULL, NULL, 0);
	struct pmrep_conn *conn = NULL;
	mock_fail("rdma_accept", 1, EIO);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn),
			PMREP_E_PROVIDER);
	assert_null(req);
	assert_null(conn);
	assert_int_equal(pmrep_err_errno(), EIO);
	/* (the mock's reject refuses an id whose accept failed: fine) */
	assert_int_equal(mock_live(MOCK_CM_ID), 1);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------ explicit reject, shutdown */

static void
passive_req_delete_rejects_with_the_final_marker(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_req *req = tv_passive_req(ep, NULL, NULL, 0);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_null(req);
	const struct mock_cm_call *c = mock_cm_last("rdma_reject");
	assert_int_equal(c->count, 1);
	assert_int_equal(c->pdata_len, VERBS_REJECT_MARKER_SIZE);
	assert_memory_equal(c->pdata, verbs_reject_marker,
			VERBS_REJECT_MARKER_SIZE);
	/* the initiator's side recognises it */
	assert_true(verbs_reject_is_explicit(c->pdata, c->pdata_len));
	uint8_t padded[148] = { 0 };
	memcpy(padded, c->pdata, c->pdata_len);
	assert_true(verbs_reject_is_explicit(padded, sizeof(padded)));
	assert_false(verbs_reject_is_explicit(padded + 1, 100));
	assert_false(verbs_reject_is_explicit(NULL, 0));
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 1);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
passive_req_delete_reject_failure_is_provider_and_frees(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_req *req = tv_passive_req(ep, NULL, NULL, 0);
	mock_fail("rdma_reject", 1, EIO);
	assert_int_equal(pmrep_conn_req_delete(&req), PMREP_E_PROVIDER);
	assert_null(req);
	assert_int_equal(mock_live(MOCK_CM_ID), 1);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
ep_shutdown_refuses_pending_requests_without_marker(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	mock_cm_queue_conn_request(tv_ep_id(ep), NULL, 0);
	mock_cm_queue_conn_request(tv_ep_id(ep), NULL, 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	const struct mock_cm_call *c = mock_cm_last("rdma_reject");
	assert_int_equal(c->count, 2);
	assert_int_equal(c->pdata_len, 0);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
srq_conn_uses_the_srq_and_its_rcq(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_srq *srq = NULL;
	assert_int_equal(pmrep_srq_new(peer, 8, 0, &srq), 0);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_srq(cfg, srq), 0);
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn *conn = tv_passive(ep, cfg);
	struct mock_qp_info qi;
	mock_qp_info(tv_vconn(conn)->qp, &qi);
	assert_ptr_equal(qi.srq, ((struct verbs_srq *)srq)->srq);
	assert_ptr_equal(qi.recv_cq, ((struct verbs_srq *)srq)->rcq->cq);
	/* the SRQ is in use */
	struct pmrep_srq *keep = srq;
	assert_int_equal(pmrep_srq_delete(&srq), PMREP_E_BUSY);
	srq = keep;
	/* a receive posted on the conn goes to the SRQ */
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	assert_int_equal(pmrep_recv(conn, mr, 0, 64, (void *)0x5), 0);
	assert_int_equal(mock_srq_used(((struct verbs_srq *)srq)->srq), 1);
	mock_qp_recv(tv_vconn(conn)->qp, "abc", 3);
	struct pmrep_cq *rcq;
	assert_int_equal(pmrep_srq_get_rcq(srq, &rcq), 0);
	struct pmrep_completion c;
	int n;
	assert_int_equal(pmrep_cq_get_completions(rcq, &c, 1, &n), 0);
	assert_ptr_equal(c.op_context, (void *)0x5);
	assert_int_equal(c.byte_len, 3);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_srq_delete(&srq), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------- lazy queues */

/* what a passive request's queues cost on the device, so far */
struct made {
	unsigned qps, cqs, chans;
};

static struct made
made_now(void)
{
	struct made m = {
		mock_calls("rdma_create_qp_ex") + mock_calls("rdma_create_qp") +
			mock_calls("ibv_create_qp") + mock_calls("ibv_create_qp_ex"),
		mock_calls("ibv_create_cq"),
		mock_calls("ibv_create_comp_channel"),
	};
	return m;
}

static void
assert_made(struct made since, unsigned qps, unsigned cqs, unsigned chans)
{
	struct made now = made_now();
	assert_int_equal(now.qps - since.qps, qps);
	assert_int_equal(now.cqs - since.cqs, cqs);
	assert_int_equal(now.chans - since.chans, chans);
}

/*
 * A request refused (final or retry) or deleted unused never had a CQ or
 * a QP: a flood of requests without the admission proof costs the device
 * nothing but the ids, each destroyed with its refusal.
 */
static void
lazy_refused_or_deleted_request_makes_no_cq_and_no_qp(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_ep *ep = tv_listen(peer);
	/* the cfg asks for everything a conn can own: RCQ, own channel */
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(cfg, 4), 0);
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(cfg, true), 0);
	struct made m0 = made_now();
	for (int i = 0; i < 48; i++) {
		struct pmrep_conn_req *req = tv_passive_req(ep, cfg, "x", 1);
		assert_int_equal(mock_live(MOCK_QP), 0);
		assert_int_equal(mock_live(MOCK_CQ), 0);
		assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
		assert_int_equal(mock_live(MOCK_CM_ID), 2);
		assert_null(tv_vreq(req)->qp);
		assert_null(tv_vreq(req)->cq);
		switch (i % 3) {
		case 0:		/* deleted: final */
			assert_int_equal(pmrep_conn_req_delete(&req), 0);
			assert_int_equal(mock_cm_last("rdma_reject")->pdata_len,
					VERBS_REJECT_MARKER_SIZE);
			break;
		case 1:		/* rejected: final */
			assert_int_equal(pmrep_conn_req_reject(&req, false), 0);
			assert_int_equal(mock_cm_last("rdma_reject")->pdata_len,
					VERBS_REJECT_MARKER_SIZE);
			break;
		default:	/* rejected: the initiator may retry */
			assert_int_equal(pmrep_conn_req_reject(&req, true), 0);
			assert_int_equal(mock_cm_last("rdma_reject")->pdata_len, 0);
			break;
		}
		assert_null(req);
		assert_int_equal(mock_live(MOCK_CM_ID), 1);	/* the listener */
	}
	assert_int_equal(mock_cm_last("rdma_reject")->count, 48);
	assert_made(m0, 0, 0, 0);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/*
 * Receives posted on the request (T27), then the accept: the first
 * receive makes the CQs and the QP, exactly once, sized by the cfg; the
 * accept uses them (the receives are on the QP before rdma_accept, the ACK
 * timeout set before it: T23). A request accepted without a receive makes
 * them at the accept.
 */
static void
lazy_receives_then_accept_make_exactly_one_qp(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 7), 0);
	assert_int_equal(pmrep_conn_cfg_set_rq_size(cfg, 5), 0);
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(cfg, 6), 0);
	struct made m0 = made_now();
	struct pmrep_conn_req *req = tv_passive_req(ep, cfg, NULL, 0);
	assert_made(m0, 0, 0, 0);
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 64, (void *)1), 0);
	/* QP, CQ + RCQ, each CQ on a completion channel of its own */
	assert_made(m0, 1, 2, 2);
	assert_int_equal(mock_live(MOCK_QP), 1);
	struct mock_qp_info qi;
	mock_qp_info(tv_vreq(req)->qp, &qi);
	assert_int_equal(qi.cap.max_send_wr, 8);	/* sq_size + 1 */
	assert_int_equal(qi.cap.max_recv_wr, 6);	/* rq_size + 1 */
	assert_ptr_equal(qi.cm_id, tv_vreq(req)->id);
	assert_ptr_equal(qi.recv_cq, tv_vreq(req)->rcq->cq);
	for (uintptr_t i = 1; i < 4; i++)
		assert_int_equal(pmrep_conn_req_recv(req, mr, i * 64, 64,
				(void *)(i + 1)), 0);
	assert_made(m0, 1, 2, 2);
	size_t opts = mock_cm_option_count();
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	assert_made(m0, 1, 2, 2);		/* the accept made nothing */
	const struct mock_cm_call *c = mock_cm_last("rdma_accept");
	assert_int_equal(c->count, 1);
	assert_int_equal(c->qp_rq_used, 4);
	assert_true(c->ack_timeout_set);
	assert_int_equal(mock_cm_option_count(), opts + 1);
	assert_true(mock_cm_option(opts)->seq < c->seq);
	/* the receives posted on the request complete on the conn's RCQ */
	mock_qp_recv(tv_vconn(conn)->qp, "AUTH", 4);
	struct pmrep_completion wc;
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(conn->rcq, &wc, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(wc.op_context, (void *)1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);

	/* no receive: the accept makes them */
	m0 = made_now();
	req = tv_passive_req(ep, NULL, NULL, 0);
	assert_made(m0, 0, 0, 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	assert_made(m0, 1, 1, 1);		/* QP, one CQ (no RCQ) */
	assert_int_equal(mock_cm_last("rdma_accept")->qp_rq_used, 0);
	mock_cm_queue_event(tv_vconn(conn)->id, RDMA_CM_EVENT_ESTABLISHED, 0,
			NULL, 0);
	expect_event(conn, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/*
 * The lazy creation failing: the call that needed it reports the
 * creation's error with a line naming that call, nothing of the queues is
 * left, and the request stays a request (a receive: usable again, then
 * deletable; the accept: consumed and refused without the marker, as any
 * failed accept).
 */
static void
lazy_creation_failure_is_reported_by_the_call_and_leaks_nothing(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(cfg, 4), 0);
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(cfg, true), 0);

	/* the QP, at the first receive */
	struct pmrep_conn_req *req = tv_passive_req(ep, cfg, NULL, 0);
	mock_fail("rdma_create_qp_ex", 1, ENOMEM);
	tv_log_capture();
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 64, NULL),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOMEM);
	assert_true(tv_logged("rdma_create_qp_ex"));
	assert_true(tv_logged("pmrep_conn_req_recv: cannot make"));
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
	assert_null(tv_vreq(req)->qp);
	assert_null(tv_vreq(req)->cq);
	assert_null(tv_vreq(req)->rcq);
	assert_true(tv_vreq(req)->lazy_queues);
	/* tried again: made now */
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 64, NULL), 0);
	assert_int_equal(mock_live(MOCK_QP), 1);
	assert_int_equal(mock_live(MOCK_CQ), 2);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 1);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 1);

	/* the RCQ, at the first receive; then deleted: final */
	req = tv_passive_req(ep, cfg, NULL, 0);
	mock_fail("ibv_create_cq", 2, ENOMEM);
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 64, NULL),
			PMREP_E_PROVIDER);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
	unsigned rejects = mock_cm_last("rdma_reject")->count;
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_int_equal(mock_cm_last("rdma_reject")->count, rejects + 1);
	assert_int_equal(mock_cm_last("rdma_reject")->pdata_len,
			VERBS_REJECT_MARKER_SIZE);
	assert_int_equal(mock_live(MOCK_CM_ID), 1);

	/* the QP, at the accept: consumed, refused without the marker */
	req = tv_passive_req(ep, cfg, NULL, 0);
	mock_fail("rdma_create_qp_ex", 1, EINVAL);
	tv_log_capture();
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn),
			PMREP_E_PROVIDER);
	assert_null(req);
	assert_null(conn);
	assert_int_equal(pmrep_err_errno(), EINVAL);
	assert_true(tv_logged("pmrep_conn_req_connect: cannot make"));
	assert_int_equal(mock_cm_last("rdma_reject")->pdata_len, 0);
	assert_int_equal(mock_calls("rdma_accept"), 0);
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 1);
	assert_int_equal(mock_unacked_cm_events(), 0);

	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* every failure of take + receive + accept: an error and no leak */
static int
scenario_lazy(void *st)
{
	struct ep_state *s = st;
	mock_cm_queue_conn_request(tv_ep_id(s->ep), NULL, 0);
	int ret = pmrep_ep_next_conn_req(s->ep, s->cfg, &s->req);
	if (ret)
		return ret;
	ret = pmrep_conn_req_recv(s->req, s->mr, 0, 64, NULL);
	if (ret)
		return ret;
	return pmrep_conn_req_connect(&s->req, NULL, &s->conn);
}

static void
cleanup_lazy(void *st, int ret)
{
	struct ep_state *s = st;
	if (s->req != NULL)	/* the receive failed */
		assert_int_equal(pmrep_conn_req_delete(&s->req), 0);
	if (ret == 0)
		assert_int_equal(pmrep_conn_delete(&s->conn), 0);
	assert_null(s->conn);
	assert_int_equal(mock_live(MOCK_CM_ID), 1);
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
}

static void
lazy_each_failure_of_receive_and_accept_leaks_nothing(void **state)
{
	(void) state;
	struct ep_state s = { .peer = tv_peer() };
	s.ep = tv_listen(s.peer);
	s.cfg = tv_cfg();
	s.mr = tv_mr(s.peer, 4096, PMREP_MR_USAGE_ALL);
	assert_true(mock_run_each_failure(scenario_lazy, cleanup_lazy, &s)
			> 10);
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(s.cfg, 4), 0);
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(s.cfg, true), 0);
	assert_true(mock_run_each_failure(scenario_lazy, cleanup_lazy, &s)
			> 12);
	tv_mr_free(s.mr);
	assert_int_equal(pmrep_conn_cfg_delete(&s.cfg), 0);
	assert_int_equal(pmrep_ep_shutdown(&s.ep), 0);
	assert_int_equal(pmrep_peer_delete(&s.peer), 0);
}

/*
 * The SRQ case: a receive posted on the request goes to the SRQ and needs
 * no QP; the accept makes the QP on the SRQ. The request holds the SRQ and
 * the pmrep_comp_channel of its cfg from the start, as its queues would
 * (deleting them is BUSY), and lets go when it is refused.
 */
static void
lazy_srq_and_comp_channel_are_held_by_the_request(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	struct pmrep_srq *srq = NULL;
	assert_int_equal(pmrep_srq_new(peer, 8, 8, &srq), 0);
	struct pmrep_comp_channel *ch = NULL;
	assert_int_equal(pmrep_comp_channel_new(peer, &ch), 0);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_srq(cfg, srq), 0);
	assert_int_equal(pmrep_conn_cfg_set_comp_channel(cfg, ch), 0);
	struct pmrep_ep *ep = tv_listen(peer);
	struct made m0 = made_now();

	struct pmrep_conn_req *req = tv_passive_req(ep, cfg, NULL, 0);
	struct pmrep_srq *srq_keep = srq;
	struct pmrep_comp_channel *ch_keep = ch;
	assert_int_equal(pmrep_srq_delete(&srq), PMREP_E_BUSY);
	srq = srq_keep;
	assert_int_equal(pmrep_comp_channel_delete(&ch), PMREP_E_BUSY);
	ch = ch_keep;
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 64, (void *)7), 0);
	assert_int_equal(mock_srq_used(((struct verbs_srq *)srq)->srq), 1);
	assert_made(m0, 0, 0, 0);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_made(m0, 0, 0, 0);
	assert_int_equal(atomic_load(&srq->nconns), 0);
	assert_int_equal(atomic_load(&ch->ncqs), 0);

	/* accepted: the QP on the SRQ, the CQ on the channel */
	req = tv_passive_req(ep, cfg, NULL, 0);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	assert_made(m0, 1, 1, 0);
	struct mock_qp_info qi;
	mock_qp_info(tv_vconn(conn)->qp, &qi);
	assert_ptr_equal(qi.srq, ((struct verbs_srq *)srq)->srq);
	assert_int_equal(atomic_load(&srq->nconns), 1);
	assert_int_equal(atomic_load(&ch->ncqs), 1);
	mock_qp_recv(tv_vconn(conn)->qp, "abc", 3);
	struct pmrep_cq *rcq;
	assert_int_equal(pmrep_srq_get_rcq(srq, &rcq), 0);
	struct pmrep_completion c;
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(rcq, &c, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c.op_context, (void *)7);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(atomic_load(&srq->nconns), 0);
	assert_int_equal(atomic_load(&ch->ncqs), 0);
	assert_int_equal(pmrep_srq_delete(&srq), 0);
	assert_int_equal(pmrep_comp_channel_delete(&ch), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/*
 * T22 with a request that has no QP yet: the device goes (found on the
 * listener) while the application holds it. Its receive and its accept
 * report the removal and make nothing; its delete destroys its id and
 * nothing twice. A removal only on the request's own id, unread, is found
 * by its delete, which releases the device.
 */
static void
lazy_request_without_qp_and_device_removal(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	struct pmrep_ep *ep = tv_listen(peer);
	struct made m0 = made_now();
	struct pmrep_conn_req *a = tv_passive_req(ep, NULL, NULL, 0);
	struct pmrep_conn_req *b = tv_passive_req(ep, NULL, NULL, 0);
	mock_cm_queue_event(tv_ep_id(ep), RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
			NULL, 0);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_ep_next_conn_req(ep, NULL, &req),
			PMREP_E_DEVICE_REMOVED);
	assert_int_equal(mock_live(MOCK_PD), 0);
	assert_int_equal(mock_live(MOCK_MR), 0);
	assert_int_equal(pmrep_conn_req_recv(a, mr, 0, 64, NULL),
			PMREP_E_DEVICE_REMOVED);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&b, NULL, &conn),
			PMREP_E_DEVICE_REMOVED);
	assert_null(b);
	assert_null(conn);
	assert_made(m0, 0, 0, 0);
	unsigned destroys = mock_calls("rdma_destroy_id");
	assert_int_equal(pmrep_conn_req_delete(&a), 0);
	assert_int_equal(mock_calls("rdma_destroy_id"), destroys + 1);
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 0);

	/* the removal on the request's own id: its delete finds it */
	peer = tv_peer();
	ep = tv_listen(peer);
	req = tv_passive_req(ep, NULL, NULL, 0);
	mock_cm_queue_event(tv_vreq(req)->id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
			NULL, 0);
	tv_log_capture();
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	assert_true(tv_logged("deleted connection request"));
	bool removed = false;
	assert_int_equal(pmrep_peer_get_device_removed(peer, &removed), 0);
	assert_true(removed);
	assert_int_equal(mock_live(MOCK_PD), 0);
	assert_int_equal(mock_unacked_cm_events(), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* TLS is a tcp setting: a verbs request or endpoint with it is refused
 * (IPsec / MACsec protect RDMA), before anything is made */
static int
no_psk(void *arg, const uint8_t *id, size_t len, const char *local,
		uint8_t *psk, size_t *psk_len)
{
	(void) arg; (void) id; (void) len; (void) local; (void) psk; (void) psk_len;
	return -1;
}

static void
tls_cfg_is_refused_on_verbs(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	static const uint8_t psk[32] = "verbs-has-no-tls-0123456789abcde";
	assert_int_equal(pmrep_conn_cfg_set_tls_psk(cfg, "x", psk, sizeof(psk)), 0);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, cfg, &req),
			PMREP_E_NOSUPP);
	assert_null(req);
	assert_true(tv_logged("IPsec"));
	assert_int_equal(pmrep_conn_cfg_clear_tls(cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_tls_psk_find(cfg, no_psk, NULL), 0);
	struct pmrep_ep *ep = tv_listen(peer);
	assert_int_equal(pmrep_ep_next_conn_req(ep, cfg, &req), PMREP_E_NOSUPP);
	assert_null(req);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(ep_listen_binds_listens_and_reports_the_port),
		T(ep_listen_address_in_use_is_provider_error_with_errno),
		T(ep_listen_each_failure_returns_error_and_leaks_nothing),
		cmocka_unit_test_setup_teardown(
			ep_shutdown_destroy_failure_is_provider_error,
			tv_setup, NULL),
		T(t05_request_acked_before_its_id_moves_to_its_own_channel),
		T(accept_takes_at_most_what_the_initiator_asked_for),
		T(accepted_conn_without_established_in_time_is_lost),
		T(passive_failure_events_before_established_are_lost),
		T(t06_initiator_private_data_has_its_true_length),
		T(t06_malformed_request_is_refused_with_the_final_marker),
		T(next_conn_req_nothing_pending_is_no_event),
		T(tls_cfg_is_refused_on_verbs),
		T(next_conn_req_each_failure_refuses_and_leaks_nothing),
		T(lazy_refused_or_deleted_request_makes_no_cq_and_no_qp),
		T(lazy_receives_then_accept_make_exactly_one_qp),
		T(lazy_creation_failure_is_reported_by_the_call_and_leaks_nothing),
		T(lazy_each_failure_of_receive_and_accept_leaks_nothing),
		T(lazy_srq_and_comp_channel_are_held_by_the_request),
		T(lazy_request_without_qp_and_device_removal),
		T(accept_each_failure_consumes_the_request_and_leaks_nothing),
		T(accept_failure_refuses_without_marker_so_the_initiator_may_retry),
		T(passive_req_delete_rejects_with_the_final_marker),
		T(passive_req_delete_reject_failure_is_provider_and_frees),
		T(ep_shutdown_refuses_pending_requests_without_marker),
		T(srq_conn_uses_the_srq_and_its_rcq),
#undef T
	};
	return cmocka_run_group_tests_name("verbs ep", tests, NULL, NULL);
}
