/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_peer_death.c -- every posted request ends with exactly one outcome
 * when the peer dies or the conn ends (T08): the target process is
 * stopped, 32 signalled 4 KiB writes go out, it is killed (kill -9), 32
 * more writes and a flush are posted: 65 outcomes, none lost, none
 * duplicated, only errors after the first error, never success for the
 * flush; the conn reports its end once; deleting is bounded. The same
 * accounting for a local disconnect with requests in flight, and for a
 * delete while the target is frozen.
 *
 * T24 (half-open tcp) and idle detection: a frozen peer is
 * lost within the liveness period L = max(cfg timeout, 500 ms) of its
 * last byte (its heartbeat comes every L / 4), with requests in flight or
 * idle; a live idle peer never is; an endpoint serves the live connection
 * attempt before the abandoned ones its accept queue kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pmrep/verbs.h>

#include "func.h"

#define NWRITES 64
#define WSIZE 4096
#define T 5000

/* the tcp provider's liveness period of a cfg timeout (tcp.h) */
#define LIVE(t) ((t) < 500 ? 500 : (t))
/*
 * The slack on it: the LOST is declared at the progress thread's (or a
 * waiting application thread's) first turn after last byte + L, and that
 * thread sleeps exactly until then: one wake-up and one turn, well under
 * 100 ms on an idle machine. 1000 ms (x func_slow) keeps a loaded one
 * from failing the test; a constant request timeout (the old 8 x T, or
 * the kernel's 15 minutes) is far outside it.
 */
#define SLACK_MS 1000

/* ------------------------------------------------ the target process */

/* no cmocka in the child: a failed check exits with the line number */
#define CHILD_CHECK(x) do { if (!(x)) _exit(100 + (__LINE__ % 100)); } while (0)

struct hello_msg {
	char port[16];
	uint8_t desc[PMREP_MR_DESC_SIZE];
};

static void
target_main(int wfd)
{
	struct pmrep_peer *peer = NULL;
	if (func_is_tcp()) {
		CHILD_CHECK(pmrep_peer_new_tcp(&peer) == 0);
	} else {
		struct ibv_context *ctx = NULL;
		CHILD_CHECK(pmrep_utils_get_ibv_context(func_addr(), true,
				&ctx) == 0);
		CHILD_CHECK(pmrep_peer_new(ctx, &peer) == 0);
	}
	size_t size = NWRITES * WSIZE;
	void *buf = NULL;
	CHILD_CHECK(posix_memalign(&buf, 4096, size) == 0);
	struct pmrep_mr_local *mr = NULL;
	CHILD_CHECK(pmrep_mr_reg(peer, buf, size, PMREP_MR_USAGE_ALL, &mr) == 0);
	struct pmrep_ep *ep = NULL;
	CHILD_CHECK(pmrep_ep_listen(peer, func_addr(), "0", &ep) == 0);
	uint16_t port;
	CHILD_CHECK(pmrep_ep_get_port(ep, &port) == 0);
	struct hello_msg h;
	memset(&h, 0, sizeof(h));
	snprintf(h.port, sizeof(h.port), "%u", port);
	CHILD_CHECK(pmrep_mr_get_descriptor(mr, h.desc) == 0);
	CHILD_CHECK(write(wfd, &h, sizeof(h)) == (ssize_t)sizeof(h));

	struct pmrep_conn_req *req = NULL;
	CHILD_CHECK(pmrep_ep_wait_conn_req(ep, NULL, 10000, &req) == 0);
	struct pmrep_conn *conn = NULL;
	CHILD_CHECK(pmrep_conn_req_connect(&req, NULL, &conn) == 0);
	enum pmrep_conn_event ev;
	CHILD_CHECK(pmrep_conn_wait_event(conn, 10000, &ev) == 0);
	CHILD_CHECK(ev == PMREP_CONN_ESTABLISHED);
	CHILD_CHECK(write(wfd, "E", 1) == 1);
	for (;;)
		pause();	/* until killed */
}

struct victim {
	pid_t pid;
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;
	struct pmrep_mr_remote *rmt;
	struct pmrep_mr_local *mr;
	uint8_t *buf;
};

static void
read_exactly(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		assert_int_equal(poll(&pfd, 1, 10000 * func_slow()), 1);
		ssize_t n = read(fd, p, len);
		if (n <= 0)
			fail_msg("the target process died early");
		p += n;
		len -= (size_t)n;
	}
}

/* a target process and a connection to it (cfg timeout_ms) */
static void
victim_start_with(struct victim *v, int timeout_ms)
{
	memset(v, 0, sizeof(*v));
	int pfd[2];
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	fflush(NULL);
	v->pid = fork();
	assert_true(v->pid >= 0);
	if (v->pid == 0) {
		close(pfd[0]);
		target_main(pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	struct hello_msg h;
	read_exactly(pfd[0], &h, sizeof(h));

	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 2 * NWRITES), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, 2 * NWRITES), 0);
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, timeout_ms), 0);
	v->peer = func_peer(false);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(v->peer, func_addr(), h.port, cfg,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &v->conn), 0);
	func_expect_event(v->conn, PMREP_CONN_ESTABLISHED, T * func_slow());
	char e;
	read_exactly(pfd[0], &e, 1);
	close(pfd[0]);
	pmrep_conn_cfg_delete(&cfg);

	assert_int_equal(pmrep_mr_remote_from_descriptor(h.desc, sizeof(h.desc),
			&v->rmt), 0);
	v->buf = func_alloc(NWRITES * WSIZE);
	func_pattern(v->buf, NWRITES * WSIZE, 8);
	assert_int_equal(pmrep_mr_reg(v->peer, v->buf, NWRITES * WSIZE,
			PMREP_MR_USAGE_ALL, &v->mr), 0);
}

static void
victim_start(struct victim *v)
{
	victim_start_with(v, 1000);
}

/* SIGSTOP, and wait until it took effect: kill() alone returns before
 * the target's threads have stopped */
static void
victim_freeze(struct victim *v)
{
	kill(v->pid, SIGSTOP);
	int st;
	assert_int_equal(waitpid(v->pid, &st, WUNTRACED), v->pid);
	assert_true(WIFSTOPPED(st));
}

static void
victim_kill(struct victim *v)
{
	if (v->pid <= 0)
		return;
	kill(v->pid, SIGKILL);
	int st;
	assert_int_equal(waitpid(v->pid, &st, 0), v->pid);
	/* it died of our signal, not of a failed check of its own */
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	v->pid = 0;
}

static void
victim_end(struct victim *v)
{
	victim_kill(v);
	assert_int_equal(pmrep_conn_delete(&v->conn), 0);
	assert_int_equal(pmrep_mr_dereg(&v->mr), 0);
	assert_int_equal(pmrep_mr_remote_delete(&v->rmt), 0);
	assert_int_equal(pmrep_peer_delete(&v->peer), 0);
	free(v->buf);
}

static void
post_writes(struct pmrep_conn *conn, const struct pmrep_mr_remote *rmt,
		struct pmrep_mr_local *mr, int first, int n)
{
	for (int i = first; i < first + n; i++)
		assert_int_equal(pmrep_write(conn, rmt, (size_t)i * WSIZE, mr,
				(size_t)i * WSIZE, WSIZE,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1)), 0);
}

static void
post_flush(struct pmrep_conn *conn, const struct pmrep_mr_remote *rmt,
		uintptr_t ctx)
{
	enum pmrep_flush_method m;
	assert_int_equal(pmrep_conn_get_flush_method(conn, &m), 0);
	assert_int_equal(pmrep_flush(conn, rmt, 0, NWRITES * WSIZE,
			m == PMREP_FLUSH_METHOD_NONE ? PMREP_FLUSH_TYPE_VISIBILITY :
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)ctx), 0);
}

/*
 * Take the n outcomes of contexts 1..n: each exactly once, none after,
 * success only before the first error. Returns how many succeeded.
 */
static int
expect_one_outcome_each(struct pmrep_cq *cq, int n)
{
	struct pmrep_completion c[NWRITES + 2];
	int got = func_collect(cq, c, n, 20000 * func_slow());
	if (got != n)
		fail_msg("%d outcomes of %d requests", got, n);
	func_expect_no_completion(cq, 200);
	bool seen[NWRITES + 2] = { false };
	int ok = 0;
	bool failed = false;
	for (int i = 0; i < n; i++) {
		uintptr_t ctx = (uintptr_t)c[i].op_context;
		assert_true(ctx >= 1 && ctx <= (uintptr_t)n);
		if (seen[ctx])
			fail_msg("request %lu completed twice", (unsigned long)ctx);
		seen[ctx] = true;
		if (c[i].status == PMREP_WC_SUCCESS) {
			if (failed)
				fail_msg("request %lu succeeded after an error",
						(unsigned long)ctx);
			ok++;
		} else {
			failed = true;
		}
	}
	return ok;
}

static void
expect_end_once(struct pmrep_conn *conn, bool tcp_lost)
{
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	assert_int_equal(pmrep_conn_wait_event(conn, 10000 * func_slow(), &ev), 0);
	if (tcp_lost && func_is_tcp())
		assert_int_equal(ev, PMREP_CONN_LOST);
	else
		assert_true(ev == PMREP_CONN_LOST || ev == PMREP_CONN_CLOSED);
	assert_int_equal(pmrep_conn_next_event(conn, &ev), PMREP_E_NO_EVENT);
}

static void
T08_peer_killed_mid_stream_every_request_has_exactly_one_outcome(void **state)
{
	(void) state;
	struct victim v;
	victim_start(&v);
	struct pmrep_cq *cq = func_cq(v.conn);

	victim_freeze(&v);	/* its progress stops: writes stay in flight */
	post_writes(v.conn, v.rmt, v.mr, 0, NWRITES / 2);
	victim_kill(&v);
	post_writes(v.conn, v.rmt, v.mr, NWRITES / 2, NWRITES / 2);
	post_flush(v.conn, v.rmt, NWRITES + 1);

	int ok = expect_one_outcome_each(cq, NWRITES + 1);
	assert_true(ok <= NWRITES);	/* the flush never succeeded */
	if (func_is_tcp())
		assert_int_equal(ok, 0);	/* the target never ran again */
	expect_end_once(v.conn, true);

	long long t0 = func_now_ms();
	victim_end(&v);
	assert_true(func_now_ms() - t0 < 2000 * func_slow());
}

static void
T08_delete_with_requests_in_flight_to_a_frozen_peer_is_bounded(void **state)
{
	(void) state;
	struct victim v;
	victim_start(&v);
	victim_freeze(&v);
	post_writes(v.conn, v.rmt, v.mr, 0, NWRITES);
	post_flush(v.conn, v.rmt, NWRITES + 1);
	long long t0 = func_now_ms();
	/* bounded by the cfg timeout (1 s), never by the frozen peer */
	assert_int_equal(pmrep_conn_delete(&v.conn), 0);
	assert_true(func_now_ms() - t0 < 2000 * func_slow());
	victim_end(&v);
}

static void
T08_disconnect_with_writes_and_a_flush_in_flight_gives_each_one_outcome(
		void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 2 * NWRITES), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, 2 * NWRITES), 0);
	struct func_opts o = { .ccfg = cfg };
	struct func_pair p;
	struct func_mrs m;
	func_pair_open(&p, &o);
	func_mrs_reg(&m, &p, NWRITES * WSIZE, PMREP_MR_USAGE_ALL);
	post_writes(p.cconn, m.srmt, m.cmr, 0, NWRITES);
	post_flush(p.cconn, m.srmt, NWRITES + 1);
	assert_int_equal(pmrep_conn_disconnect(p.cconn), 0);
	(void) expect_one_outcome_each(func_cq(p.cconn), NWRITES + 1);
	func_expect_event(p.cconn, PMREP_CONN_CLOSED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_CLOSED, T * func_slow());
	func_pair_close_all(&p, &m);
	pmrep_conn_cfg_delete(&cfg);
}

static void
T08_frozen_peer_is_lost_after_the_request_timeout_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();	/* a frozen verbs target still answers RDMA */
	struct victim v;
	victim_start_with(&v, 250);	/* liveness: max(250, 500) ms */
	victim_freeze(&v);
	long long t0 = func_now_ms();
	post_writes(v.conn, v.rmt, v.mr, 0, 2);
	post_flush(v.conn, v.rmt, 3);
	struct pmrep_cq *cq = func_cq(v.conn);
	struct pmrep_completion c[3];
	assert_int_equal(func_collect(cq, c, 3, 10000 * func_slow()), 3);
	long long took = func_now_ms() - t0;
	assert_true(took >= LIVE(250) / 2);
	assert_true(took < (LIVE(250) + SLACK_MS) * func_slow());
	/* the oldest ran out of retries, as on verbs; the rest are flushed */
	assert_int_equal((uintptr_t)c[0].op_context, 1);
	assert_int_equal(c[0].status, PMREP_WC_RETRY_EXCEEDED);
	for (int i = 1; i < 3; i++) {
		assert_int_equal((uintptr_t)c[i].op_context, (uintptr_t)i + 1);
		assert_int_equal(c[i].status, PMREP_WC_FLUSHED);
	}
	expect_end_once(v.conn, true);
	victim_end(&v);
}

/*
 * The same, but the application only watches the CQ's fd (an epoll-style
 * loop: never pmrep_cq_wait, which on tcp may run the conn's progress in
 * the caller). The requests went out from the posting thread, unseen by
 * the progress thread's wait: it must still time them out by itself.
 */
static void
T08_frozen_peer_is_lost_while_the_app_only_polls_the_cq_fd_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct victim v;
	victim_start_with(&v, 250);	/* liveness: max(250, 500) ms */
	usleep(300 * 1000);	/* the progress thread is asleep by now */
	victim_freeze(&v);
	long long t0 = func_now_ms();
	post_writes(v.conn, v.rmt, v.mr, 0, 1);
	post_flush(v.conn, v.rmt, 2);
	struct pmrep_cq *cq = func_cq(v.conn);
	int fd = -1;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
	struct pmrep_completion c[2];
	int got = 0;
	while (got < 2 && func_now_ms() - t0 < 10000 * func_slow()) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		(void) poll(&p, 1, 200);
		int k = 0;
		if (pmrep_cq_get_completions(cq, c + got, 2 - got, &k) == 0)
			got += k;
	}
	long long took = func_now_ms() - t0;
	assert_int_equal(got, 2);
	assert_true(took >= LIVE(250) / 2);
	/* the thread's wait ends at the liveness deadline by itself */
	assert_true(took < (LIVE(250) + SLACK_MS) * func_slow());
	assert_int_equal((uintptr_t)c[0].op_context, 1);
	assert_int_equal(c[0].status, PMREP_WC_RETRY_EXCEEDED);
	assert_int_equal((uintptr_t)c[1].op_context, 2);
	assert_int_equal(c[1].status, PMREP_WC_FLUSHED);
	expect_end_once(v.conn, true);
	victim_end(&v);
}

/* ------------------------------------------------------------- T24 */

/*
 * The peer is frozen (SIGSTOP: its kernel keeps acknowledging, so TCP
 * alone never notices) with 32 writes and a flush in flight: all of them
 * complete with an error within the liveness period of the conn's own
 * cfg timeout (+ slack), the oldest with RETRY_EXC, the others flushed;
 * LOST once; a later post is refused; delete is bounded. Run for two
 * timeouts far apart: the deadline follows the configured timeout (the
 * larger one's lower bound is above the smaller one's upper bound).
 */
static void
T24_frozen_peer_with_requests_in_flight_is_lost_within_the_timeout(
		void **state)
{
	(void) state;
	FUNC_TCP_ONLY();	/* a frozen verbs target still answers RDMA */
	const int timeouts[] = { 600, 4000 };
	for (unsigned k = 0; k < 2; k++) {
		int to = timeouts[k];
		struct victim v;
		victim_start_with(&v, to);
		usleep(200 * 1000);	/* a few heartbeats: the conn is idle */
		victim_freeze(&v);
		long long t0 = func_now_ms();
		post_writes(v.conn, v.rmt, v.mr, 0, NWRITES / 2);
		post_flush(v.conn, v.rmt, NWRITES / 2 + 1);
		struct pmrep_cq *cq = func_cq(v.conn);
		struct pmrep_completion c[NWRITES / 2 + 1];
		int n = NWRITES / 2 + 1;
		assert_int_equal(func_collect(cq, c, n,
				(LIVE(to) + 10000) * func_slow()), n);
		long long took = func_now_ms() - t0;
		if (took < LIVE(to) / 2 ||
				took > (LIVE(to) + SLACK_MS) * func_slow())
			fail_msg("timeout %d ms: the requests ended after %lld ms",
					to, took);
		assert_int_equal((uintptr_t)c[0].op_context, 1);
		assert_int_equal(c[0].status, PMREP_WC_RETRY_EXCEEDED);
		for (int i = 1; i < n; i++) {
			assert_int_equal((uintptr_t)c[i].op_context,
					(uintptr_t)i + 1);
			assert_int_equal(c[i].status, PMREP_WC_FLUSHED);
		}
		func_expect_no_completion(cq, 100);
		expect_end_once(v.conn, true);
		assert_int_equal(pmrep_write(v.conn, v.rmt, 0, v.mr, 0, 64,
				PMREP_F_COMPLETION_ALWAYS, NULL),
				PMREP_E_CONN_LOST);
		long long t1 = func_now_ms();
		assert_int_equal(pmrep_conn_delete(&v.conn), 0);
		assert_true(func_now_ms() - t1 < 2000 * func_slow());
		victim_end(&v);
	}
}

/*
 * Idle detection: nothing in flight, the peer frozen. The conn is LOST
 * within the liveness period of its cfg timeout (+ slack) all the same:
 * the peer's heartbeats stopped. No completion appears (none was owed).
 */
static void
idle_conn_to_a_frozen_peer_is_lost_within_the_timeout(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();	/* verbs: its own heartbeat, not this provider's */
	const int to = 1000;
	struct victim v;
	victim_start_with(&v, to);
	usleep(300 * 1000);
	victim_freeze(&v);
	long long t0 = func_now_ms();
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	assert_int_equal(pmrep_conn_wait_event(v.conn,
			(LIVE(to) + 10000) * func_slow(), &ev), 0);
	long long took = func_now_ms() - t0;
	assert_int_equal(ev, PMREP_CONN_LOST);
	if (took < LIVE(to) / 2 || took > (LIVE(to) + SLACK_MS) * func_slow())
		fail_msg("the idle conn was lost after %lld ms", took);
	assert_int_equal(pmrep_conn_next_event(v.conn, &ev), PMREP_E_NO_EVENT);
	func_expect_no_completion(func_cq(v.conn), 0);
	assert_int_equal(pmrep_write(v.conn, v.rmt, 0, v.mr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	victim_end(&v);
}

/*
 * ... and the heartbeat keeps a live idle conn alive: 8 liveness periods
 * without a request, both sides in their own process, no event, and a
 * persist then succeeds.
 */
static void
idle_conn_to_a_live_peer_stays_established(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	const int to = 250;	/* liveness max(250, 500): heartbeats every 125 ms */
	struct victim v;
	victim_start_with(&v, to);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(v.conn, 8 * LIVE(to), &ev),
			PMREP_E_TIMEOUT);
	post_writes(v.conn, v.rmt, v.mr, 0, 1);
	post_flush(v.conn, v.rmt, 2);
	struct pmrep_completion c[2];
	assert_int_equal(func_collect(func_cq(v.conn), c, 2, T * func_slow()), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal((uintptr_t)c[i].op_context, (uintptr_t)i + 1);
		assert_int_equal(c[i].status, PMREP_WC_SUCCESS);
	}
	assert_int_equal(pmrep_conn_next_event(v.conn, &ev), PMREP_E_NO_EVENT);
	victim_end(&v);
}

/*
 * The reconnect after a freeze: while the target's application does not
 * accept (frozen, busy), its kernel completes connection attempts into
 * the accept queue, and initiators give up on them (cfg timeout, no
 * retries: UNREACHABLE, their sockets closed). 70 of them -- more than
 * the endpoint's 64 pending slots -- then one live attempt. The first
 * request the endpoint hands out is the live one (its private data), at
 * once; the abandoned ones are never handed out.
 */
static void
T24_live_attempt_behind_abandoned_ones_is_served_first(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();	/* rdma_cm has no such queue */
	enum { NDEAD = 70 };
	struct func_pair p;
	func_pair_listen(&p);
	struct pmrep_conn_cfg *dcfg = NULL, *lcfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&dcfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_timeout(dcfg, 200), 0);
	assert_int_equal(pmrep_conn_cfg_set_connect_retries(dcfg, 0, 10), 0);
	assert_int_equal(pmrep_conn_cfg_new(&lcfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_timeout(lcfg, 5000), 0);
	assert_int_equal(pmrep_conn_cfg_set_connect_retries(lcfg, 0, 10), 0);

	static struct pmrep_conn *dead[NDEAD];
	uint8_t dpd[4] = { 'd', 'e', 'a', 'd' }, lpd[4] = { 'l', 'i', 'v', 'e' };
	struct pmrep_conn_private_data dp = { dpd, 4 }, lp = { lpd, 4 };
	for (int i = 0; i < NDEAD; i++) {
		struct pmrep_conn_req *req = NULL;
		assert_int_equal(pmrep_conn_req_new(p.cpeer, func_addr(), p.port,
				dcfg, &req), 0);
		assert_int_equal(pmrep_conn_req_connect(&req, &dp, &dead[i]), 0);
	}
	for (int i = 0; i < NDEAD; i++)
		func_expect_event(dead[i], PMREP_CONN_UNREACHABLE,
				T * func_slow());
	struct pmrep_conn_req *req = NULL;
	struct pmrep_conn *live = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, func_addr(), p.port, lcfg,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, &lp, &live), 0);
	usleep(100 * 1000);	/* its HELLO is in the queue too */

	long long t0 = func_now_ms();
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&req), 0);
	struct pmrep_conn_private_data got;
	assert_int_equal(pmrep_conn_req_get_private_data(req, &got), 0);
	assert_int_equal(got.len, 4);
	assert_memory_equal(got.ptr, lpd, 4);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.sconn), 0);
	func_expect_event(live, PMREP_CONN_ESTABLISHED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	/* served from the queue at once, not after the abandoned ones */
	assert_true(func_now_ms() - t0 < 1000 * func_slow());
	/* and nothing else is waiting: every abandoned attempt was dropped */
	assert_int_equal(pmrep_ep_next_conn_req(p.ep, NULL, &req),
			PMREP_E_NO_EVENT);

	for (int i = 0; i < NDEAD; i++)
		assert_int_equal(pmrep_conn_delete(&dead[i]), 0);
	p.cconn = live;
	func_pair_close_all(&p, NULL);
	pmrep_conn_cfg_delete(&dcfg);
	pmrep_conn_cfg_delete(&lcfg);
}

/* ------------------------------------- wire version 1 peers (tcp_wire.h) */

static void
raw_read(int s, uint8_t *b, size_t len)
{
	size_t got = 0;
	while (got < len) {
		struct pollfd pfd = { .fd = s, .events = POLLIN };
		assert_int_equal(poll(&pfd, 1, T * func_slow()), 1);
		ssize_t n = recv(s, b + got, len - got, 0);
		assert_true(n > 0);
		got += (size_t)n;
	}
}

/*
 * Version 2 keeps version 1 peers: a v1 initiator gets ACCEPT(version 1)
 * from a v2 endpoint; a v2 initiator refused with REJECT(version) by a
 * v1 listener offers 1 at once and connects. Neither side expects a
 * heartbeat from the v1 peer: two liveness periods idle, no event.
 */
static void
wire_v1_peers_connect_both_ways_and_are_not_held_to_the_heartbeat(
		void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	/* a v1 initiator (raw) to our endpoint */
	struct func_pair p;
	func_pair_listen(&p);
	int s = func_raw_connect(p.port);
	uint8_t b[64];
	memset(b, 0, 24);
	b[0] = 1;				/* HELLO */
	func_put_le32(b + 8, 0x54524d50);
	func_put_le16(b + 12, 1);		/* version 1 */
	func_put_le32(b + 16, 1000);
	assert_int_equal(send(s, b, 24, 0), 24);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.sconn), 0);
	raw_read(s, b, 16);
	assert_int_equal(b[0], 2);		/* ACCEPT */
	assert_int_equal(b[8] | b[9] << 8, 1);	/* of version 1 */
	func_expect_event(p.sconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(p.sconn, 2 * LIVE(1000), &ev),
			PMREP_E_TIMEOUT);
	close(s);
	func_expect_event(p.sconn, PMREP_CONN_LOST, T * func_slow());
	func_pair_close_all(&p, NULL);

	/* our initiator to a v1 listener (raw) */
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t alen = sizeof(a);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	char port[16];
	snprintf(port, sizeof(port), "%u", ntohs(a.sin_port));
	struct pmrep_peer *peer = func_peer(false);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_new(peer, "127.0.0.1", port, NULL,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	raw_read(s, b, 24);
	assert_int_equal(b[0], 1);
	assert_int_equal(b[12] | b[13] << 8, 2);	/* offered: 2 */
	memset(b, 0, 16);
	b[0] = 3;				/* REJECT(version) */
	func_put_le32(b + 8, 4);
	assert_int_equal(send(s, b, 16, 0), 16);
	close(s);
	s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	raw_read(s, b, 24);
	assert_int_equal(b[12] | b[13] << 8, 1);	/* now 1, at once */
	memset(b, 0, 16);
	b[0] = 2;				/* ACCEPT, version 1 */
	func_put_le16(b + 8, 1);
	func_put_le32(b + 12, 1000);
	assert_int_equal(send(s, b, 16, 0), 16);
	func_expect_event(conn, PMREP_CONN_ESTABLISHED, T * func_slow());
	assert_int_equal(pmrep_conn_wait_event(conn, 2 * LIVE(1000), &ev),
			PMREP_E_TIMEOUT);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	close(s);
	close(l);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

int
main(void)
{
	/* a broken pipe to a dead child must not kill the test */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(T08_peer_killed_mid_stream_every_request_has_exactly_one_outcome),
		cmocka_unit_test(T08_delete_with_requests_in_flight_to_a_frozen_peer_is_bounded),
		cmocka_unit_test(T08_disconnect_with_writes_and_a_flush_in_flight_gives_each_one_outcome),
		cmocka_unit_test(T08_frozen_peer_is_lost_after_the_request_timeout_tcp),
		cmocka_unit_test(T08_frozen_peer_is_lost_while_the_app_only_polls_the_cq_fd_tcp),
		cmocka_unit_test(T24_frozen_peer_with_requests_in_flight_is_lost_within_the_timeout),
		cmocka_unit_test(idle_conn_to_a_frozen_peer_is_lost_within_the_timeout),
		cmocka_unit_test(idle_conn_to_a_live_peer_stays_established),
		cmocka_unit_test(T24_live_attempt_behind_abandoned_ones_is_served_first),
		cmocka_unit_test(wire_v1_peers_connect_both_ways_and_are_not_held_to_the_heartbeat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
