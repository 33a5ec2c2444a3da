/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_epoll.c -- every fd pmrep hands out in an epoll loop (T03): a
 * completion fd that signalled for two completions is drained to EAGAIN
 * and then stays quiet; a completion taken by a synchronous call between
 * two epoll_waits loses no later wakeup; a wakeup that finds the CQ empty
 * is not an error; a conn's shared channel (CQ + RCQ) and a channel shared
 * by two conns name the CQ and conn; conn event fds and endpoint fds
 * signal and go quiet. Every fd is O_NONBLOCK | O_CLOEXEC.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "func.h"

#define SIZE 65536
#define T 5000

static int
epoll_with(int fd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	assert_true(ep >= 0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	return ep;
}

static int
epoll_ready(int ep, int ms)
{
	struct epoll_event ev;
	int n = epoll_wait(ep, &ev, 1, ms);
	assert_true(n >= 0);
	return n;
}

/* the handler: take every event (until EAGAIN: TIMEOUT), re-arming the
 * CQ, then poll it empty; returns how many completions it found */
static int
handle(struct pmrep_cq *cq, struct pmrep_completion *out, int max)
{
	int ret;
	while ((ret = pmrep_cq_wait(cq, 0)) == 0)
		;
	assert_int_equal(ret, PMREP_E_TIMEOUT);
	int got = 0;
	for (;;) {
		int n = 0;
		ret = pmrep_cq_get_completions(cq, out + got, max - got, &n);
		if (ret == PMREP_E_NO_COMPLETION)
			break;
		assert_int_equal(ret, 0);
		got += n;
		assert_true(got < max);
	}
	return got;
}

struct fx {
	struct func_pair p;
	struct func_mrs m;
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	func_pair_open(&f->p, NULL);
	func_mrs_reg(&f->m, &f->p, SIZE, PMREP_MR_USAGE_ALL);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	func_pair_close_all(&f->p, &f->m);
	free(f);
	return 0;
}

static void
write_signalled(struct fx *f, uintptr_t ctx)
{
	assert_int_equal(pmrep_write(f->p.cconn, f->m.srmt, 0, f->m.cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)ctx), 0);
}

static void
T03_two_completions_before_the_handler_are_both_seen_and_the_fd_goes_quiet(
		void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	int fd = -1;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
	int ep = epoll_with(fd);
	assert_int_equal(epoll_ready(ep, 0), 0);

	write_signalled(f, 1);
	write_signalled(f, 2);
	assert_int_equal(epoll_ready(ep, T), 1);
	usleep(100000);		/* both complete before the handler runs */
	struct pmrep_completion c[8];
	int n = handle(cq, c, 8);
	if (n < 2) {		/* a slow provider: one more round */
		assert_int_equal(epoll_ready(ep, T), 1);
		n += handle(cq, c + n, 8 - n);
	}
	assert_int_equal(n, 2);
	assert_int_equal((uintptr_t)c[0].op_context, 1);
	assert_int_equal((uintptr_t)c[1].op_context, 2);
	assert_int_equal(c[0].status, PMREP_WC_SUCCESS);
	assert_int_equal(c[1].status, PMREP_WC_SUCCESS);
	/* no busy loop: nothing more to say */
	assert_int_equal(epoll_ready(ep, 100), 0);
	close(ep);
}

static void
T03_completion_taken_synchronously_between_epoll_waits_loses_no_wakeup(
		void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	int fd = -1;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
	int ep = epoll_with(fd);
	struct pmrep_completion c[8];

	write_signalled(f, 1);
	assert_int_equal(epoll_ready(ep, T), 1);
	assert_int_equal(handle(cq, c, 8), 1);

	/* a synchronous caller takes the next one without epoll */
	write_signalled(f, 2);
	struct pmrep_completion s = func_wait_one(cq, T);
	assert_int_equal((uintptr_t)s.op_context, 2);

	/* the one after must still wake the loop (maybe after one empty
	 * wakeup left over from the synchronous take) */
	write_signalled(f, 3);
	bool seen = false;
	for (int round = 0; round < 2 && !seen; round++) {
		assert_int_equal(epoll_ready(ep, T), 1);
		int n = handle(cq, c, 8);
		for (int i = 0; i < n; i++) {
			assert_int_equal((uintptr_t)c[i].op_context, 3);
			seen = true;
		}
	}
	assert_true(seen);
	assert_int_equal(epoll_ready(ep, 100), 0);
	close(ep);
}

static void
T03_wakeup_with_an_empty_cq_is_not_an_error(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	int fd = -1;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
	int ep = epoll_with(fd);

	write_signalled(f, 1);
	assert_int_equal(epoll_ready(ep, T), 1);
	/* someone polls the CQ without taking the event */
	struct pmrep_completion c = func_wait_one(cq, T);
	assert_int_equal((uintptr_t)c.op_context, 1);
	assert_int_equal(epoll_ready(ep, 0), 1);	/* the event is still there */
	/* the handler finds an empty CQ: fine, and then quiet */
	assert_int_equal(pmrep_cq_wait(cq, 0), 0);
	int n = -1;
	assert_int_equal(pmrep_cq_get_completions(cq, &c, 1, &n),
			PMREP_E_NO_COMPLETION);
	assert_int_equal(n, 0);
	assert_int_equal(epoll_ready(ep, 100), 0);
	close(ep);
}

static void
shared_channel_of_a_conn_serves_its_cq_and_rcq(void **state)
{
	struct fx *f = *state;
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(cfg, true), 0);
	assert_int_equal(pmrep_conn_cfg_set_rcq_size(cfg, 8), 0);
	struct pmrep_conn *cc = NULL, *sc = NULL;
	func_connect(&f->p, cfg, NULL, &cc, &sc);

	struct pmrep_cq *cq = func_cq(cc), *rcq = NULL;
	assert_int_equal(pmrep_conn_get_rcq(cc, &rcq), 0);
	assert_non_null(rcq);
	int fd = -1;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), PMREP_E_SHARED_CHANNEL);
	assert_int_equal(pmrep_cq_wait(rcq, 0), PMREP_E_SHARED_CHANNEL);
	assert_int_equal(pmrep_conn_get_completion_fd(sc, &fd),
			PMREP_E_NOT_SHARED_CHNL);
	assert_int_equal(pmrep_conn_get_completion_fd(cc, &fd), 0);
	struct pmrep_cq *got = NULL;
	assert_int_equal(pmrep_conn_wait(cc, 0, &got, NULL),
			PMREP_E_NO_COMPLETION);
	int ep = epoll_with(fd);

	/* a receive on the RCQ and a write on the CQ, one fd for both */
	assert_int_equal(pmrep_recv(cc, f->m.cmr, 4096, 64, (void *)10), 0);
	assert_int_equal(pmrep_send(sc, f->m.smr, 0, 32,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_write(cc, f->m.srmt, 0, f->m.cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)20), 0);
	bool recv_seen = false, write_seen = false;
	long long end = func_now_ms() + T * func_slow();
	while (!(recv_seen && write_seen) && func_now_ms() < end) {
		if (epoll_ready(ep, 100) == 0)
			continue;
		bool is_rcq = false;
		int ret;
		while ((ret = pmrep_conn_wait(cc, 0, &got, &is_rcq)) == 0) {
			assert_true(got == (is_rcq ? rcq : cq));
			struct pmrep_completion c;
			int n;
			while (pmrep_cq_get_completions(got, &c, 1, &n) == 0) {
				if (is_rcq) {
					assert_int_equal((uintptr_t)c.op_context, 10);
					assert_int_equal(c.op, PMREP_OP_RECV);
					assert_int_equal(c.byte_len, 32);
					recv_seen = true;
				} else {
					assert_int_equal((uintptr_t)c.op_context, 20);
					write_seen = true;
				}
			}
		}
		assert_int_equal(ret, PMREP_E_NO_COMPLETION);
	}
	assert_true(recv_seen && write_seen);
	assert_int_equal(epoll_ready(ep, 100), 0);
	close(ep);
	assert_int_equal(pmrep_conn_delete(&cc), 0);
	assert_int_equal(pmrep_conn_delete(&sc), 0);
	pmrep_conn_cfg_delete(&cfg);
}

static void
comp_channel_shared_by_two_conns_names_each_conn(void **state)
{
	struct fx *f = *state;
	struct pmrep_comp_channel *ch = NULL;
	assert_int_equal(pmrep_comp_channel_new(f->p.cpeer, &ch), 0);
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_comp_channel(cfg, ch), 0);
	struct pmrep_conn *cc[2], *sc[2];
	for (int k = 0; k < 2; k++)
		func_connect(&f->p, cfg, NULL, &cc[k], &sc[k]);
	int chfd = -1, cfd = -1;
	assert_int_equal(pmrep_comp_channel_get_fd(ch, &chfd), 0);
	assert_int_equal(pmrep_conn_get_completion_fd(cc[0], &cfd), 0);
	assert_int_equal(cfd, chfd);
	int ep = epoll_with(chfd);

	for (int k = 0; k < 2; k++)
		assert_int_equal(pmrep_write(cc[k], f->m.srmt, 0, f->m.cmr, 0,
				64, PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(k + 1)), 0);
	bool seen[2] = { false, false };
	long long end = func_now_ms() + T * func_slow();
	while (!(seen[0] && seen[1]) && func_now_ms() < end) {
		if (epoll_ready(ep, 100) == 0)
			continue;
		struct pmrep_cq *cq = NULL;
		struct pmrep_conn *conn = NULL;
		int ret;
		while ((ret = pmrep_comp_channel_wait(ch, 0, &cq, &conn)) == 0) {
			int k = conn == cc[0] ? 0 : 1;
			assert_true(conn == cc[k]);
			assert_true(cq == func_cq(cc[k]));
			struct pmrep_completion c;
			int n;
			while (pmrep_cq_get_completions(cq, &c, 1, &n) == 0) {
				assert_int_equal((uintptr_t)c.op_context,
						(uintptr_t)k + 1);
				seen[k] = true;
			}
		}
		assert_int_equal(ret, PMREP_E_NO_COMPLETION);
	}
	assert_true(seen[0] && seen[1]);
	assert_int_equal(epoll_ready(ep, 100), 0);

	/* the channel carries both conns' events: a conn cannot wait on it */
	struct pmrep_cq *any = NULL;
	assert_int_equal(pmrep_conn_wait(cc[0], 0, &any, NULL),
			PMREP_E_SHARED_CHANNEL);

	/* attached CQs keep the channel; it stays valid and usable */
	struct pmrep_comp_channel *keep = ch;
	assert_int_equal(pmrep_comp_channel_delete(&keep), PMREP_E_BUSY);
	assert_ptr_equal(keep, ch);
	assert_int_equal(pmrep_write(cc[1], f->m.srmt, 0, f->m.cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)3), 0);
	struct pmrep_cq *cq = NULL;
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_comp_channel_wait(ch, T * func_slow(), &cq,
			&conn), 0);
	assert_true(conn == cc[1]);
	struct pmrep_completion c = func_wait_one(cq, T);
	assert_int_equal((uintptr_t)c.op_context, 3);

	close(ep);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(pmrep_conn_delete(&cc[k]), 0);
		assert_int_equal(pmrep_conn_delete(&sc[k]), 0);
	}
	assert_int_equal(pmrep_comp_channel_delete(&ch), 0);
	assert_null(ch);
	pmrep_conn_cfg_delete(&cfg);
}

static void
conn_event_fd_signals_the_terminal_event_once_and_goes_quiet(void **state)
{
	struct fx *f = *state;
	int fd = -1;
	assert_int_equal(pmrep_conn_get_event_fd(f->p.cconn, &fd), 0);
	int ep = epoll_with(fd);
	/* ESTABLISHED was taken: nothing pending now */
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(f->p.cconn, &ev),
			PMREP_E_NO_EVENT);
	assert_int_equal(epoll_ready(ep, 100), 0);

	assert_int_equal(pmrep_conn_disconnect(f->p.sconn), 0);
	bool closed = false;
	long long end = func_now_ms() + T * func_slow();
	while (!closed && func_now_ms() < end) {
		if (epoll_ready(ep, 100) == 0)
			continue;
		int ret;
		while ((ret = pmrep_conn_next_event(f->p.cconn, &ev)) == 0) {
			assert_int_equal(ev, PMREP_CONN_CLOSED);
			assert_false(closed);
			closed = true;
		}
		assert_int_equal(ret, PMREP_E_NO_EVENT);
	}
	assert_true(closed);
	assert_int_equal(epoll_ready(ep, 100), 0);
	assert_int_equal(pmrep_conn_next_event(f->p.cconn, &ev),
			PMREP_E_NO_EVENT);
	func_expect_event(f->p.sconn, PMREP_CONN_CLOSED, T * func_slow());
	close(ep);
}

static void
endpoint_fd_signals_a_connection_request(void **state)
{
	struct fx *f = *state;
	int fd = -1;
	assert_int_equal(pmrep_ep_get_fd(f->p.ep, &fd), 0);
	int ep = epoll_with(fd);
	struct pmrep_conn_req *sreq = NULL, *creq = NULL;
	assert_int_equal(pmrep_ep_next_conn_req(f->p.ep, NULL, &sreq),
			PMREP_E_NO_EVENT);
	assert_int_equal(epoll_ready(ep, 100), 0);

	assert_int_equal(pmrep_conn_req_new(f->p.cpeer, func_addr(), f->p.port,
			NULL, &creq), 0);
	struct pmrep_conn *cc = NULL, *sc = NULL;
	assert_int_equal(pmrep_conn_req_connect(&creq, NULL, &cc), 0);
	long long end = func_now_ms() + T * func_slow();
	while (sreq == NULL && func_now_ms() < end) {
		if (epoll_ready(ep, 100) == 0)
			continue;
		int ret = pmrep_ep_next_conn_req(f->p.ep, NULL, &sreq);
		assert_true(ret == 0 || ret == PMREP_E_NO_EVENT);
	}
	assert_non_null(sreq);
	assert_int_equal(pmrep_conn_req_connect(&sreq, NULL, &sc), 0);
	func_expect_event(cc, PMREP_CONN_ESTABLISHED, T * func_slow());
	func_expect_event(sc, PMREP_CONN_ESTABLISHED, T * func_slow());
	assert_int_equal(epoll_ready(ep, 100), 0);
	close(ep);
	assert_int_equal(pmrep_conn_delete(&cc), 0);
	assert_int_equal(pmrep_conn_delete(&sc), 0);
}

static void
expect_nonblock_cloexec(int fd, const char *what)
{
	int fl = fcntl(fd, F_GETFL);
	int fdf = fcntl(fd, F_GETFD);
	if (fl < 0 || !(fl & O_NONBLOCK) || fdf < 0 || !(fdf & FD_CLOEXEC))
		fail_msg("%s fd %d: flags 0x%x, fd flags 0x%x", what, fd, fl, fdf);
}

static void
every_fd_is_nonblocking_and_close_on_exec(void **state)
{
	struct fx *f = *state;
	int fd;
	assert_int_equal(pmrep_cq_get_fd(func_cq(f->p.cconn), &fd), 0);
	expect_nonblock_cloexec(fd, "cq");
	assert_int_equal(pmrep_conn_get_event_fd(f->p.cconn, &fd), 0);
	expect_nonblock_cloexec(fd, "conn event (active)");
	assert_int_equal(pmrep_conn_get_event_fd(f->p.sconn, &fd), 0);
	expect_nonblock_cloexec(fd, "conn event (passive)");
	assert_int_equal(pmrep_ep_get_fd(f->p.ep, &fd), 0);
	expect_nonblock_cloexec(fd, "endpoint");
	assert_int_equal(pmrep_peer_get_async_fd(f->p.cpeer, &fd), 0);
	expect_nonblock_cloexec(fd, "peer async");
	struct pmrep_comp_channel *ch = NULL;
	assert_int_equal(pmrep_comp_channel_new(f->p.cpeer, &ch), 0);
	assert_int_equal(pmrep_comp_channel_get_fd(ch, &fd), 0);
	expect_nonblock_cloexec(fd, "comp channel");
	assert_int_equal(pmrep_comp_channel_delete(&ch), 0);
	struct pmrep_srq *srq = NULL;
	assert_int_equal(pmrep_srq_new(f->p.speer, 4, 0, &srq), 0);
	struct pmrep_cq *rcq = NULL;
	assert_int_equal(pmrep_srq_get_rcq(srq, &rcq), 0);
	assert_int_equal(pmrep_cq_get_fd(rcq, &fd), 0);
	expect_nonblock_cloexec(fd, "srq rcq");
	assert_int_equal(pmrep_srq_delete(&srq), 0);
}

int
main(void)
{
#define T_(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T_(T03_two_completions_before_the_handler_are_both_seen_and_the_fd_goes_quiet),
		T_(T03_completion_taken_synchronously_between_epoll_waits_loses_no_wakeup),
		T_(T03_wakeup_with_an_empty_cq_is_not_an_error),
		T_(shared_channel_of_a_conn_serves_its_cq_and_rcq),
		T_(comp_channel_shared_by_two_conns_names_each_conn),
		T_(conn_event_fd_signals_the_terminal_event_once_and_goes_quiet),
		T_(endpoint_fd_signals_a_connection_request),
		T_(every_fd_is_nonblocking_and_close_on_exec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
