/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_devrm.c -- T22: the RDMA device goes away and comes back.
 * A DEVICE_REMOVAL on a conn's id, on a listener's id, an
 * IBV_EVENT_DEVICE_FATAL, a removal only a conn delete finds, or a device
 * gone from the device list: every verbs object pmrep holds on the device
 * is released at once (every create has its destroy in the mocks'
 * counters, librdmacm is asked to drop its context), while the pmrep
 * objects stay and report the loss (conns LOST, posts and CQ calls
 * PMREP_E_CONN_LOST, new work PMREP_E_DEVICE_REMOVED); freeing them later
 * destroys nothing twice; and a new peer on the device (back again) works.
 */
#include <sys/stat.h>

#include "test_verbs_util.h"

/* does fd refer to /dev/null? */
static bool
is_dev_null(int fd)
{
	struct stat st, null;
	return fstat(fd, &st) == 0 && stat("/dev/null", &null) == 0 &&
		S_ISCHR(st.st_mode) && st.st_rdev == null.st_rdev;
}

static void
expect_event(struct pmrep_conn *conn, enum pmrep_conn_event want)
{
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, want);
}

/* every kind of object a peer can hold on its device */
struct world {
	struct pmrep_peer *peer;
	struct pmrep_mr_local *mr;
	struct pmrep_mr_remote *remote;
	struct pmrep_comp_channel *ch;
	struct pmrep_srq *srq;
	struct pmrep_conn_cfg *shared_cfg;	/* CQs on ch, receives on srq */
	struct pmrep_conn_cfg *own_cfg;		/* its own shared channel */
	struct pmrep_ep *ep;
	struct pmrep_conn *active;		/* CQs on their own channels */
	struct pmrep_conn *passive;		/* on ch and srq */
	struct pmrep_conn *own;			/* own shared channel */
};

static const char *const destroys[] = {
	"ibv_destroy_qp", "ibv_destroy_cq", "ibv_destroy_comp_channel",
	"ibv_destroy_srq", "ibv_dereg_mr", "ibv_dealloc_pd", "rdma_destroy_id",
};
#define NDESTROYS (sizeof(destroys) / sizeof(destroys[0]))

static void
count_destroys(unsigned *out)
{
	for (size_t i = 0; i < NDESTROYS; i++)
		out[i] = mock_calls(destroys[i]);
}

static void
world_open(struct world *w)
{
	memset(w, 0, sizeof(*w));
	w->peer = tv_peer();
	w->mr = tv_mr(w->peer, 8192, PMREP_MR_USAGE_ALL);
	w->remote = tv_remote(w->mr);
	assert_int_equal(pmrep_comp_channel_new(w->peer, &w->ch), 0);
	assert_int_equal(pmrep_srq_new(w->peer, 16, 16, &w->srq), 0);
	w->shared_cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_comp_channel(w->shared_cfg, w->ch), 0);
	assert_int_equal(pmrep_conn_cfg_set_srq(w->shared_cfg, w->srq), 0);
	w->own_cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(w->own_cfg,
			true), 0);
	w->ep = tv_listen(w->peer);
	w->passive = tv_passive(w->ep, w->shared_cfg);
	w->active = tv_active(w->peer, NULL, NULL, 0);
	w->own = tv_active(w->peer, w->own_cfg, NULL, 0);
	assert_int_equal(pmrep_srq_recv(w->srq, w->mr, 0, 64, (void *)1), 0);
	/* something in flight */
	assert_int_equal(pmrep_write(w->active, w->remote, 0, w->mr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)2), 0);
	assert_int_equal(mock_live(MOCK_QP), 3);
	assert_int_equal(mock_live(MOCK_SRQ), 1);
	assert_int_equal(mock_live(MOCK_CQ), 4);	/* 3 conns + the SRQ's */
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 4);
	assert_int_equal(mock_live(MOCK_PD), 1);
	assert_int_equal(mock_live(MOCK_MR), 2);	/* ours + the flush sink */
	assert_int_equal(mock_live(MOCK_CM_ID), 4);	/* listener + 3 conns */
}

/* nothing of the device is left: every create has had its destroy
 * (get_devices_before: rdma_get_devices calls before the removal) */
static void
assert_device_released(const struct world *w, unsigned get_devices_before,
		int cm_channels)
{
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
	assert_int_equal(mock_live(MOCK_SRQ), 0);
	assert_int_equal(mock_live(MOCK_MR), 0);
	assert_int_equal(mock_live(MOCK_PD), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 0);
	assert_int_equal(mock_unacked_cm_events(), 0);
	/* no rdma_get_devices: it would open a dying device again */
	assert_int_equal(mock_calls("rdma_get_devices"), get_devices_before);
	/* the context is the application's (pmrep_peer_new): untouched */
	assert_false(is_dev_null(mock_cm_context()->async_fd));
	/* the rdma_cm channels (not the device's) stay for the objects */
	assert_int_equal(mock_live(MOCK_CM_CHANNEL), cm_channels);
	bool removed = false;
	assert_int_equal(pmrep_peer_get_device_removed(w->peer, &removed), 0);
	assert_true(removed);
	int fd = 0;
	assert_int_equal(pmrep_peer_get_async_fd(w->peer, &fd), 0);
	assert_int_equal(fd, -1);
}

/* the objects stay and report the loss */
static void
assert_reports_loss(struct world *w)
{
	/* each conn: exactly one LOST, then nothing */
	struct pmrep_conn *conns[] = { w->active, w->passive, w->own };
	for (size_t i = 0; i < 3; i++) {
		enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
		int ret = pmrep_conn_next_event(conns[i], &ev);
		if (ret == 0)
			assert_int_equal(ev, PMREP_CONN_LOST);
		else	/* the one whose event triggered it reported already */
			assert_int_equal(ret, PMREP_E_NO_EVENT);
		assert_int_equal(pmrep_conn_next_event(conns[i], &ev),
				PMREP_E_NO_EVENT);
	}
	/* posts, receives and CQ calls: the connection is lost */
	assert_int_equal(pmrep_write(w->active, w->remote, 0, w->mr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_send(w->passive, w->mr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_recv(w->own, w->mr, 0, 8, NULL),
			PMREP_E_CONN_LOST);
	struct pmrep_cq *cq = NULL;
	assert_int_equal(pmrep_conn_get_cq(w->active, &cq), 0);
	struct pmrep_completion c;
	int n = -1;
	assert_int_equal(pmrep_cq_get_completions(cq, &c, 1, &n),
			PMREP_E_CONN_LOST);
	assert_int_equal(n, 0);
	assert_int_equal(pmrep_cq_wait(cq, 10), PMREP_E_CONN_LOST);
	struct pmrep_cq *got = NULL;
	struct pmrep_conn *gconn = NULL;
	assert_int_equal(pmrep_comp_channel_wait(w->ch, 10, &got, &gconn),
			PMREP_E_CONN_LOST);
	bool is_rcq = false;
	assert_int_equal(pmrep_conn_wait(w->own, 10, &got, &is_rcq),
			PMREP_E_CONN_LOST);
	/* new work on the peer: the device was removed */
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(w->peer, TV_ADDR, TV_PORT, NULL,
			&req), PMREP_E_DEVICE_REMOVED);
	struct pmrep_mr_local *mr2 = NULL;
	char buf[64];
	assert_int_equal(pmrep_mr_reg(w->peer, buf, sizeof(buf),
			PMREP_MR_USAGE_ALL, &mr2), PMREP_E_DEVICE_REMOVED);
	struct pmrep_ep *ep2 = NULL;
	assert_int_equal(pmrep_ep_listen(w->peer, TV_LISTEN, "0", &ep2),
			PMREP_E_DEVICE_REMOVED);
	assert_int_equal(pmrep_ep_next_conn_req(w->ep, NULL, &req),
			PMREP_E_DEVICE_REMOVED);
	assert_int_equal(pmrep_srq_recv(w->srq, w->mr, 0, 64, NULL),
			PMREP_E_DEVICE_REMOVED);
	struct pmrep_srq *srq2 = NULL;
	assert_int_equal(pmrep_srq_new(w->peer, 4, 4, &srq2),
			PMREP_E_DEVICE_REMOVED);
	struct pmrep_comp_channel *ch2 = NULL;
	assert_int_equal(pmrep_comp_channel_new(w->peer, &ch2),
			PMREP_E_DEVICE_REMOVED);
	enum pmrep_async_event aev;
	assert_int_equal(pmrep_peer_handle_async_event(w->peer, &aev),
			PMREP_E_DEVICE_REMOVED);
}

/* the application frees its handles: fine, and nothing destroyed twice */
static void
world_close(struct world *w)
{
	unsigned before[NDESTROYS], after[NDESTROYS];
	count_destroys(before);
	assert_int_equal(pmrep_conn_delete(&w->active), 0);
	assert_int_equal(pmrep_conn_delete(&w->passive), 0);
	assert_int_equal(pmrep_conn_delete(&w->own), 0);
	assert_int_equal(pmrep_ep_shutdown(&w->ep), 0);
	assert_int_equal(pmrep_srq_delete(&w->srq), 0);
	assert_int_equal(pmrep_comp_channel_delete(&w->ch), 0);
	assert_int_equal(pmrep_mr_remote_delete(&w->remote), 0);
	tv_mr_free(w->mr);
	assert_int_equal(pmrep_conn_cfg_delete(&w->shared_cfg), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&w->own_cfg), 0);
	assert_int_equal(pmrep_peer_delete(&w->peer), 0);
	count_destroys(after);
	for (size_t i = 0; i < NDESTROYS; i++) {
		if (after[i] != before[i])
			fail_msg("%s called %u more time(s) after the release",
					destroys[i], after[i] - before[i]);
	}
	assert_int_equal(mock_live(MOCK_CM_CHANNEL), 0);
}

/* ------------------------------------------------------------ T22 */

static void
T22_removal_on_a_conn_id_releases_every_verbs_object(void **state)
{
	(void) state;
	struct world w;
	world_open(&w);
	unsigned gd = mock_calls("rdma_get_devices");
	mock_cm_queue_event(tv_vconn(w.active)->id,
			RDMA_CM_EVENT_DEVICE_REMOVAL, 0, NULL, 0);
	expect_event(w.active, PMREP_CONN_LOST);
	assert_device_released(&w, gd, 4);
	assert_true(tv_logged("removed"));
	assert_reports_loss(&w);
	world_close(&w);
}

static void
T22_removal_on_a_listener_id_releases_every_verbs_object(void **state)
{
	(void) state;
	struct world w;
	world_open(&w);
	unsigned gd = mock_calls("rdma_get_devices");
	/* a request nobody took yet goes too (its id is on the device) */
	mock_cm_queue_event(tv_ep_id(w.ep), RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
			NULL, 0);
	mock_cm_queue_conn_request(tv_ep_id(w.ep), NULL, 0);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_ep_next_conn_req(w.ep, NULL, &req),
			PMREP_E_DEVICE_REMOVED);
	assert_null(req);
	assert_device_released(&w, gd, 4);
	assert_reports_loss(&w);
	world_close(&w);
}

static void
T22_device_fatal_async_event_releases_every_verbs_object(void **state)
{
	(void) state;
	struct world w;
	world_open(&w);
	unsigned gd = mock_calls("rdma_get_devices");
	mock_async_device(mock_cm_context(), IBV_EVENT_DEVICE_FATAL);
	enum pmrep_async_event aev = PMREP_ASYNC_NONE;
	assert_int_equal(pmrep_peer_handle_async_event(w.peer, &aev), 0);
	assert_int_equal(aev, PMREP_ASYNC_DEVICE_FATAL);
	assert_int_equal(mock_unacked_async_events(), 0);
	assert_device_released(&w, gd, 4);
	assert_reports_loss(&w);
	world_close(&w);
}

/* the event is on a conn deleted unread (a mirror drops a failed replica's
 * conn at once): the delete tells the peer */
static void
T22_removal_found_by_conn_delete_releases_the_rest(void **state)
{
	(void) state;
	struct world w;
	world_open(&w);
	unsigned gd = mock_calls("rdma_get_devices");
	mock_cm_queue_event(tv_vconn(w.own)->id,
			RDMA_CM_EVENT_DEVICE_REMOVAL, 0, NULL, 0);
	assert_int_equal(pmrep_conn_delete(&w.own), 0);
	assert_device_released(&w, gd, 3);	/* own's channel went with it */
	assert_int_equal(pmrep_write(w.active, w.remote, 0, w.mr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	expect_event(w.active, PMREP_CONN_LOST);
	expect_event(w.passive, PMREP_CONN_LOST);
	w.own = NULL;
	world_close(&w);
}

/* nothing told us, but the device left the device list: the next
 * connection attempt finds it gone */
static void
T22_device_gone_from_the_list_is_found_by_a_connect(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_ALL);
	mock_cm_set_reachable(false);
	/* still listed: an unreachable address is just that */
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 50), 0);
	struct pmrep_conn_req *req = NULL;
	assert_int_not_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, cfg,
			&req), 0);
	bool removed = true;
	assert_int_equal(pmrep_peer_get_device_removed(peer, &removed), 0);
	assert_false(removed);
	assert_int_equal(mock_live(MOCK_PD), 1);
	/* gone from the list */
	mock_dev_set_count(0);
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, cfg,
			&req), PMREP_E_DEVICE_REMOVED);
	assert_int_equal(pmrep_peer_get_device_removed(peer, &removed), 0);
	assert_true(removed);
	assert_int_equal(mock_live(MOCK_PD), 0);
	assert_int_equal(mock_live(MOCK_MR), 0);
	assert_int_equal(mock_live(MOCK_CM_ID), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* the device is back: a new peer, endpoint and conns work as before */
static void
T22_device_back_a_new_peer_ep_and_conn_work(void **state)
{
	(void) state;
	struct world w;
	world_open(&w);
	mock_cm_queue_event(tv_vconn(w.passive)->id,
			RDMA_CM_EVENT_DEVICE_REMOVAL, 0, NULL, 0);
	expect_event(w.passive, PMREP_CONN_LOST);
	world_close(&w);
	/* back: everything anew, on the same address and port */
	world_open(&w);
	mock_set_auto_complete(true);
	assert_int_equal(pmrep_write(w.own, w.remote, 0, w.mr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)9), 0);
	struct pmrep_cq *cq = NULL;
	assert_int_equal(pmrep_conn_get_cq(w.own, &cq), 0);
	struct pmrep_completion c;
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(cq, &c, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c.op_context, (void *)9);
	assert_int_equal(c.status, PMREP_WC_SUCCESS);
	bool removed = true;
	assert_int_equal(pmrep_peer_get_device_removed(w.peer, &removed), 0);
	assert_false(removed);
	/* an orderly end this time: the device's objects go with them */
	unsigned qp_destroys = mock_calls("ibv_destroy_qp");
	assert_int_equal(pmrep_conn_delete(&w.active), 0);
	assert_int_equal(pmrep_conn_delete(&w.passive), 0);
	assert_int_equal(pmrep_conn_delete(&w.own), 0);
	assert_int_equal(mock_calls("ibv_destroy_qp"), qp_destroys + 3);
	assert_int_equal(pmrep_ep_shutdown(&w.ep), 0);
	assert_int_equal(pmrep_srq_delete(&w.srq), 0);
	assert_int_equal(pmrep_comp_channel_delete(&w.ch), 0);
	assert_int_equal(pmrep_mr_remote_delete(&w.remote), 0);
	tv_mr_free(w.mr);
	assert_int_equal(pmrep_conn_cfg_delete(&w.shared_cfg), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&w.own_cfg), 0);
	assert_int_equal(pmrep_peer_delete(&w.peer), 0);
}

/* two peers share librdmacm's context: one removal releases both */
static void
T22_every_peer_on_the_device_is_released(void **state)
{
	(void) state;
	struct pmrep_peer *a = tv_peer(), *b = tv_peer();
	struct pmrep_mr_local *ma = tv_mr(a, 64, PMREP_MR_USAGE_ALL);
	struct pmrep_mr_local *mb = tv_mr(b, 64, PMREP_MR_USAGE_ALL);
	struct pmrep_conn *ca = tv_active(a, NULL, NULL, 0);
	struct pmrep_conn *cb = tv_active(b, NULL, NULL, 0);
	mock_cm_queue_event(tv_vconn(ca)->id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0,
			NULL, 0);
	expect_event(ca, PMREP_CONN_LOST);
	expect_event(cb, PMREP_CONN_LOST);
	assert_int_equal(mock_live(MOCK_PD), 0);
	assert_int_equal(mock_live(MOCK_MR), 0);
	assert_int_equal(mock_live(MOCK_QP), 0);
	assert_int_equal(pmrep_conn_delete(&ca), 0);
	assert_int_equal(pmrep_conn_delete(&cb), 0);
	tv_mr_free(ma);
	tv_mr_free(mb);
	assert_int_equal(pmrep_peer_delete(&a), 0);
	assert_int_equal(pmrep_peer_delete(&b), 0);
}

/* a peer on librdmacm's own context (pmrep_peer_open): once pmrep let go
 * of everything on it, the context's fds no longer hold the device (the
 * kernel waits for those files); librdmacm closes them later */
static void
T22_librdmacm_context_lets_go_of_the_device_files(void **state)
{
	(void) state;
	struct pmrep_peer *peer = NULL;
	assert_int_equal(pmrep_peer_open(TV_ADDR, false, &peer), 0);
	enum pmrep_provider prov;
	assert_int_equal(pmrep_peer_get_provider(peer, &prov), 0);
	assert_int_equal(prov, PMREP_PROVIDER_VERBS);
	struct ibv_context *ctx = mock_cm_context();
	int async_fd = ctx->async_fd;
	assert_false(is_dev_null(async_fd));
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_ALL);
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	mock_cm_queue_event(tv_vconn(conn)->id, RDMA_CM_EVENT_DEVICE_REMOVAL,
			0, NULL, 0);
	expect_event(conn, PMREP_CONN_LOST);
	assert_int_equal(mock_live(MOCK_PD), 0);
	assert_int_equal(mock_live(MOCK_QP), 0);
	/* the same fd numbers, now /dev/null */
	assert_int_equal(ctx->async_fd, async_fd);
	assert_true(is_dev_null(ctx->async_fd));
	/* (the mock's command fd is /dev/null from the start) */
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(T22_removal_on_a_conn_id_releases_every_verbs_object),
		T(T22_removal_on_a_listener_id_releases_every_verbs_object),
		T(T22_device_fatal_async_event_releases_every_verbs_object),
		T(T22_removal_found_by_conn_delete_releases_the_rest),
		T(T22_device_gone_from_the_list_is_found_by_a_connect),
		T(T22_device_back_a_new_peer_ep_and_conn_work),
		T(T22_every_peer_on_the_device_is_released),
		T(T22_librdmacm_context_lets_go_of_the_device_files),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
