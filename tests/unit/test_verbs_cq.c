/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_cq.c -- completion queues and completion channels: events
 * acknowledged on the CQ they name (T01), a channel that refuses to go
 * while a CQ is attached and stays usable (T02), the completion fd in epoll
 * (T03: two completions, a spurious wakeup, no spin), waits and their
 * errors, and completions as pmrep reports them.
 */
#include <fcntl.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "test_verbs_util.h"

static struct pmrep_conn_cfg *
cfg_shared(uint32_t rcq_size)
{
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(cfg, true), 0);
	if (rcq_size)
		assert_int_equal(pmrep_conn_cfg_set_rcq_size(cfg, rcq_size), 0);
	return cfg;
}

static struct ibv_cq *
icq(struct pmrep_cq *cq)
{
	return ((struct verbs_cq *)cq)->cq;
}

/* a receive completion for the oldest receive posted on the conn */
static void
arrive(struct pmrep_conn *conn, uint32_t len)
{
	static const char data[64];
	mock_qp_recv(tv_vconn(conn)->qp, data, len);
}

/* --------------------------------------------------------------- T01 */

static void
t01_event_is_acked_on_the_cq_it_names_not_the_last_used(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = cfg_shared(8);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	struct pmrep_cq *cq, *rcq;
	assert_int_equal(pmrep_conn_get_cq(conn, &cq), 0);
	assert_int_equal(pmrep_conn_get_rcq(conn, &rcq), 0);
	assert_non_null(rcq);

	/* the send CQ was "used last"; the completion lands on the RCQ */
	mock_cq_event(icq(cq));
	struct pmrep_cq *got = NULL;
	bool is_rcq = true;
	assert_int_equal(pmrep_conn_wait(conn, 0, &got, &is_rcq), 0);
	assert_ptr_equal(got, cq);
	assert_false(is_rcq);
	assert_int_equal(pmrep_recv(conn, mr, 0, 64, (void *)0x1), 0);
	arrive(conn, 10);
	assert_int_equal(pmrep_conn_wait(conn, 0, &got, &is_rcq), 0);
	assert_ptr_equal(got, rcq);
	assert_true(is_rcq);
	assert_int_equal(mock_cq_unacked(icq(cq)), 0);
	assert_int_equal(mock_cq_unacked(icq(rcq)), 0);
	assert_true(mock_cq_armed(icq(rcq)));
	struct pmrep_completion c;
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(rcq, &c, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c.op_context, (void *)0x1);
	assert_int_equal(c.byte_len, 10);

	/* closing: the mock dies if destroy_cq meets an unacked event */
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t01_flush_errors_raising_events_while_closing_do_not_block(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = cfg_shared(8);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	/* receives in flight: teardown moves the QP to error, their flush
	 * completions land on the armed RCQ and raise one more event */
	for (int i = 0; i < 4; i++)
		assert_int_equal(pmrep_recv(conn, mr, 0, 64, NULL), 0);
	struct ibv_comp_channel *ch = tv_vconn(conn)->own_shared_ch;
	assert_int_equal(mock_comp_channel_pending(ch), 0);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(mock_unacked_cq_events(), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t01_shared_channel_wait_returns_the_cq_and_conn_of_the_event(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_comp_channel *ch = NULL;
	assert_int_equal(pmrep_comp_channel_new(peer, &ch), 0);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_comp_channel(cfg, ch), 0);
	struct pmrep_conn *a = tv_active(peer, cfg, NULL, 0);
	struct pmrep_conn *b = tv_active(peer, cfg, NULL, 0);
	int fd;
	assert_int_equal(pmrep_conn_get_completion_fd(b, &fd), 0);
	assert_int_equal(fd, ch->fd);

	mock_cq_event(icq(b->cq));
	struct pmrep_cq *cq = NULL;
	struct pmrep_conn *who = NULL;
	assert_int_equal(pmrep_comp_channel_wait(ch, 1000, &cq, &who), 0);
	assert_ptr_equal(cq, b->cq);
	assert_ptr_equal(who, b);
	assert_int_equal(mock_cq_unacked(icq(b->cq)), 0);
	assert_int_equal(mock_cq_unacked(icq(a->cq)), 0);
	assert_true(mock_cq_armed(icq(b->cq)));
	/* nothing pending: a non-blocking check says so */
	assert_int_equal(pmrep_comp_channel_wait(ch, 0, &cq, &who),
			PMREP_E_NO_COMPLETION);
	assert_int_equal(pmrep_comp_channel_wait(ch, 20, &cq, &who),
			PMREP_E_TIMEOUT);
	/* a conn on a pmrep_comp_channel cannot wait by itself */
	bool is_rcq;
	assert_int_equal(pmrep_conn_wait(a, 0, &cq, &is_rcq),
			PMREP_E_SHARED_CHANNEL);

	assert_int_equal(pmrep_conn_delete(&a), 0);
	assert_int_equal(pmrep_conn_delete(&b), 0);
	assert_int_equal(pmrep_comp_channel_delete(&ch), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* --------------------------------------------------------------- T02 */

static void
t02_comp_channel_delete_busy_while_cq_attached(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_comp_channel *ch = NULL;
	assert_int_equal(pmrep_comp_channel_new(peer, &ch), 0);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_comp_channel(cfg, ch), 0);
	struct pmrep_conn *a = tv_active(peer, cfg, NULL, 0);
	struct pmrep_conn *b = tv_active(peer, cfg, NULL, 0);

	assert_int_equal(pmrep_conn_delete(&a), 0);
	struct pmrep_comp_channel *keep = ch;
	assert_int_equal(pmrep_comp_channel_delete(&ch), PMREP_E_BUSY);
	assert_ptr_equal(ch, keep);
	/* still usable */
	mock_cq_event(icq(b->cq));
	struct pmrep_cq *cq;
	struct pmrep_conn *who;
	assert_int_equal(pmrep_comp_channel_wait(ch, 0, &cq, &who), 0);
	assert_ptr_equal(who, b);

	assert_int_equal(pmrep_conn_delete(&b), 0);
	assert_int_equal(pmrep_comp_channel_delete(&ch), 0);
	assert_null(ch);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t02_destroy_returning_positive_ebusy_maps_to_busy_channel_kept(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_comp_channel *ch = NULL;
	assert_int_equal(pmrep_comp_channel_new(peer, &ch), 0);
	/* a CQ on the channel that pmrep's count does not know of: only
	 * ibv_destroy_comp_channel itself can refuse (EBUSY, positive) */
	struct verbs_comp_channel *vch = (struct verbs_comp_channel *)ch;
	struct ibv_cq *foreign = ibv_create_cq(mock_cm_context(), 4, NULL,
			vch->ch, 0);
	assert_non_null(foreign);
	assert_int_equal(pmrep_verbs_ops.comp_channel_delete(ch), PMREP_E_BUSY);
	assert_int_equal(pmrep_err_errno(), EBUSY);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 1);
	assert_int_equal(ibv_destroy_cq(foreign), 0);
	assert_int_equal(pmrep_comp_channel_delete(&ch), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t02_conn_teardown_destroys_cqs_before_their_channel(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	/* own channel per CQ, and a shared own channel: both orders checked
	 * by the mock (a channel destroy with a CQ attached is EBUSY, which
	 * would leak it) */
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(cfg, 4), 0);
	struct pmrep_conn *a = tv_active(peer, cfg, NULL, 0);
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(cfg, true), 0);
	struct pmrep_conn *b = tv_active(peer, cfg, NULL, 0);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 3);
	assert_int_equal(pmrep_conn_delete(&a), 0);
	assert_int_equal(pmrep_conn_delete(&b), 0);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t02_injected_destroy_failure_in_teardown_leaks_and_double_frees_nothing(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = cfg_shared(4);
	static const char *const fns[] = {
		"ibv_destroy_qp", "ibv_destroy_cq", "ibv_destroy_comp_channel",
		"rdma_destroy_id",
	};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		for (unsigned nth = 1; nth <= 2; nth++) {
			struct pmrep_conn *c = tv_active(peer, cfg, NULL, 0);
			mock_fail(fns[i], nth, EIO);
			int ret = pmrep_conn_delete(&c);
			assert_null(c);
			if (mock_fail_pending() == 0)
				assert_int_equal(ret, PMREP_E_PROVIDER);
			mock_fail_clear();
		}
	}
	/* what a failed destroy left behind stays with the device, as with
	 * real verbs; the test's teardown does not count those */
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	/* the PD is held by the leftovers: it stays too, the peer goes */
	assert_int_equal(pmrep_peer_delete(&peer), PMREP_E_PROVIDER);
	assert_null(peer);
}

static void
comp_channel_new_each_failure_leaks_nothing(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_comp_channel *ch = NULL;
	mock_fail("ibv_create_comp_channel", 1, ENOMEM);
	assert_int_equal(pmrep_comp_channel_new(peer, &ch), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOMEM);
	mock_fail("calloc", 1, ENOMEM);
	assert_int_equal(pmrep_comp_channel_new(peer, &ch), PMREP_E_NOMEM);
	assert_null(ch);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
	assert_int_equal(pmrep_comp_channel_new(peer, &ch), 0);
	int fd;
	assert_int_equal(pmrep_comp_channel_get_fd(ch, &fd), 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	mock_fail("ibv_destroy_comp_channel", 1, EIO);
	assert_int_equal(pmrep_comp_channel_delete(&ch), PMREP_E_PROVIDER);
	assert_null(ch);
	/* the channel belongs to the device context, not the PD */
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
comp_channel_wait_get_event_failure_is_provider_error(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_comp_channel *ch = NULL;
	assert_int_equal(pmrep_comp_channel_new(peer, &ch), 0);
	struct pmrep_cq *cq;
	struct pmrep_conn *who;
	mock_fail("ibv_get_cq_event", 1, EIO);
	assert_int_equal(pmrep_comp_channel_wait(ch, 0, &cq, &who),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_int_equal(pmrep_comp_channel_delete(&ch), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* --------------------------------------------------------------- T03 */

static void
t03_epoll_two_completions_then_no_spin(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	struct pmrep_cq *cq;
	assert_int_equal(pmrep_conn_get_cq(conn, &cq), 0);
	int fd;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e = { .events = EPOLLIN };
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e), 0);

	assert_int_equal(pmrep_recv(conn, mr, 0, 64, (void *)1), 0);
	assert_int_equal(pmrep_recv(conn, mr, 0, 64, (void *)2), 0);
	/* both complete before the handler runs */
	arrive(conn, 1);
	arrive(conn, 2);
	assert_int_equal(epoll_wait(ep, &e, 1, 1000), 1);
	/* the handler: events until none, then the CQ until empty */
	int events = 0, seen = 0, n;
	while (pmrep_cq_wait(cq, 0) == 0)
		events++;
	struct pmrep_completion c[4];
	while (pmrep_cq_get_completions(cq, c, 4, &n) == 0)
		seen += n;
	assert_true(events >= 1);
	assert_int_equal(seen, 2);
	assert_int_equal(mock_unacked_cq_events(), 0);
	assert_true(mock_cq_armed(icq(cq)));
	/* no busy loop */
	assert_int_equal(epoll_wait(ep, &e, 1, 100), 0);

	close(ep);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t03_completion_taken_synchronously_between_epoll_waits_is_not_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	struct pmrep_cq *cq;
	assert_int_equal(pmrep_conn_get_cq(conn, &cq), 0);
	int fd;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);

	assert_int_equal(pmrep_recv(conn, mr, 0, 64, (void *)1), 0);
	assert_int_equal(pmrep_recv(conn, mr, 0, 64, (void *)2), 0);
	arrive(conn, 1);
	/* a synchronous caller takes the first one without waiting */
	struct pmrep_completion c[4];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(cq, c, 4, &n), 0);
	assert_int_equal(n, 1);
	/* its event is still pending: the wakeup finds an empty CQ, which
	 * is not an error */
	assert_true(tv_readable(fd, 0));
	assert_int_equal(pmrep_cq_wait(cq, 0), 0);
	assert_int_equal(pmrep_cq_get_completions(cq, c, 4, &n),
			PMREP_E_NO_COMPLETION);
	assert_false(tv_readable(fd, 0));
	/* the second one, after the re-arm, wakes the fd again */
	arrive(conn, 2);
	assert_true(tv_readable(fd, 100));
	assert_int_equal(pmrep_cq_wait(cq, 0), 0);
	assert_int_equal(pmrep_cq_get_completions(cq, c, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c[0].op_context, (void *)2);

	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t03_spurious_wakeup_with_empty_cq_is_not_an_error(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	struct pmrep_cq *cq;
	assert_int_equal(pmrep_conn_get_cq(conn, &cq), 0);
	int fd;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
	mock_cq_event(icq(cq));	/* allowed by the verbs spec */
	assert_true(tv_readable(fd, 0));
	assert_int_equal(pmrep_cq_wait(cq, 1000), 0);
	struct pmrep_completion c;
	int n = 5;
	assert_int_equal(pmrep_cq_get_completions(cq, &c, 1, &n),
			PMREP_E_NO_COMPLETION);
	assert_int_equal(n, 0);
	assert_false(tv_readable(fd, 100));
	assert_int_equal(pmrep_cq_wait(cq, 0), PMREP_E_TIMEOUT);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------- waits, errors */

static void
cq_wait_on_shared_channel_says_wait_on_the_conn(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = cfg_shared(0);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	struct pmrep_cq *cq;
	assert_int_equal(pmrep_conn_get_cq(conn, &cq), 0);
	assert_int_equal(pmrep_cq_wait(cq, 0), PMREP_E_SHARED_CHANNEL);
	int fd;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), PMREP_E_SHARED_CHANNEL);
	assert_int_equal(pmrep_conn_get_completion_fd(conn, &fd), 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	bool is_rcq;
	assert_int_equal(pmrep_conn_wait(conn, 0, &cq, &is_rcq),
			PMREP_E_NO_COMPLETION);
	assert_int_equal(pmrep_conn_wait(conn, 10, &cq, &is_rcq),
			PMREP_E_TIMEOUT);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
conn_without_shared_channel_has_no_completion_fd(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	int fd;
	assert_int_equal(pmrep_conn_get_completion_fd(conn, &fd),
			PMREP_E_NOT_SHARED_CHNL);
	struct pmrep_cq *cq, *rcq = (void *)1;
	bool is_rcq;
	assert_int_equal(pmrep_conn_wait(conn, 0, &cq, &is_rcq),
			PMREP_E_NOT_SHARED_CHNL);
	assert_int_equal(pmrep_conn_get_rcq(conn, &rcq), 0);
	assert_null(rcq);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
cq_wait_failures_are_provider_errors(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	struct pmrep_cq *cq;
	assert_int_equal(pmrep_conn_get_cq(conn, &cq), 0);
	mock_cq_event(icq(cq));
	mock_fail("ibv_get_cq_event", 1, EIO);
	assert_int_equal(pmrep_cq_wait(cq, 0), PMREP_E_PROVIDER);
	/* the re-arm fails: the event was acknowledged all the same */
	mock_fail("ibv_req_notify_cq", 1, EIO);
	assert_int_equal(pmrep_cq_wait(cq, 0), PMREP_E_PROVIDER);
	assert_int_equal(mock_unacked_cq_events(), 0);
	mock_fail("ibv_poll_cq", 1, EIO);
	struct pmrep_completion c;
	int n;
	assert_int_equal(pmrep_cq_get_completions(cq, &c, 1, &n),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
completions_beyond_one_poll_batch_are_all_returned(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_rq_size(cfg, 40), 0);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_RECV);
	for (uintptr_t i = 0; i < 40; i++)
		assert_int_equal(pmrep_recv(conn, mr, 0, 64, (void *)i), 0);
	for (int i = 0; i < 40; i++)
		arrive(conn, 8);
	struct pmrep_completion c[64];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(conn->cq, c, 64, &n), 0);
	assert_int_equal(n, 40);
	for (int i = 0; i < 40; i++) {
		assert_ptr_equal(c[i].op_context, (void *)(uintptr_t)i);
		assert_int_equal(c[i].op, PMREP_OP_RECV);
	}
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(t01_event_is_acked_on_the_cq_it_names_not_the_last_used),
		T(t01_flush_errors_raising_events_while_closing_do_not_block),
		T(t01_shared_channel_wait_returns_the_cq_and_conn_of_the_event),
		T(t02_comp_channel_delete_busy_while_cq_attached),
		T(t02_destroy_returning_positive_ebusy_maps_to_busy_channel_kept),
		T(t02_conn_teardown_destroys_cqs_before_their_channel),
		cmocka_unit_test_setup_teardown(
			t02_injected_destroy_failure_in_teardown_leaks_and_double_frees_nothing,
			tv_setup, NULL),
		cmocka_unit_test_setup_teardown(
			comp_channel_new_each_failure_leaks_nothing,
			tv_setup, NULL),
		T(comp_channel_wait_get_event_failure_is_provider_error),
		T(t03_epoll_two_completions_then_no_spin),
		T(t03_completion_taken_synchronously_between_epoll_waits_is_not_lost),
		T(t03_spurious_wakeup_with_empty_cq_is_not_an_error),
		T(cq_wait_on_shared_channel_says_wait_on_the_conn),
		T(conn_without_shared_channel_has_no_completion_fd),
		T(cq_wait_failures_are_provider_errors),
		T(completions_beyond_one_poll_batch_are_all_returned),
#undef T
	};
	return cmocka_run_group_tests_name("verbs cq", tests, NULL, NULL);
}
