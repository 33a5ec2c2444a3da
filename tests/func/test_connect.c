/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_connect.c -- establishing and ending connections: a client that
 * starts before the server listens gets through bounded retries (T17); an
 * address that never answers fails with UNREACHABLE within the documented
 * timeout x (retries + 1), +10 % (T17) -- on tcp, where the listener took
 * the connection and never answered, with the named cause PMREP_E_TIMEOUT
 * ("connected, but no answer": a hung target); a refused connect without
 * retries is UNREACHABLE, with no cause; an explicit reject is REJECTED and final; disconnect and
 * delete report CLOSED exactly once on both sides; requests left at an
 * endpoint that shuts down are refused; sockets that connect and never
 * send a HELLO neither lock a real client out of an endpoint (tcp) nor
 * stay longer than the handshake timeout.
 */
#include <poll.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "func.h"

#define T 5000

/* a port nothing listens on (now), from a listener opened and closed */
static void
free_port(struct pmrep_peer *peer, char *buf, size_t len)
{
	struct pmrep_ep *ep = NULL;
	assert_int_equal(pmrep_ep_listen(peer, func_addr(), "0", &ep), 0);
	uint16_t port;
	assert_int_equal(pmrep_ep_get_port(ep, &port), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	snprintf(buf, len, "%u", port);
}

static struct pmrep_conn_cfg *
cfg_retries(int timeout_ms, unsigned retries, int backoff_ms)
{
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, timeout_ms), 0);
	assert_int_equal(pmrep_conn_cfg_set_connect_retries(cfg, retries,
			backoff_ms), 0);
	return cfg;
}

static void
T17_client_started_500ms_before_the_listener_gets_through_with_retries(
		void **state)
{
	(void) state;
	struct pmrep_peer *speer = func_peer(true), *cpeer = func_peer(false);
	char port[16];
	free_port(speer, port, sizeof(port));
	struct pmrep_conn_cfg *cfg = cfg_retries(1000, 10, 100);

	long long t0 = func_now_ms();
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(cpeer, func_addr(), port, cfg,
			&req), 0);
	struct pmrep_conn *cc = NULL, *sc = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &cc), 0);
	/* nothing listens yet: no event for 500 ms (the client retries) */
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	assert_int_equal(pmrep_conn_wait_event(cc, 500, &ev), PMREP_E_TIMEOUT);

	struct pmrep_ep *ep = NULL;
	assert_int_equal(pmrep_ep_listen(speer, func_addr(), port, &ep), 0);
	bool c_up = false, s_up = false;
	long long end = func_now_ms() + 10000 * func_slow();
	while (!(c_up && s_up) && func_now_ms() < end) {
		if (sc == NULL) {
			int ret = pmrep_ep_wait_conn_req(ep, NULL, 20, &req);
			if (ret == 0)
				assert_int_equal(pmrep_conn_req_connect(&req,
						NULL, &sc), 0);
			else
				assert_int_equal(ret, PMREP_E_TIMEOUT);
		}
		if (!c_up && pmrep_conn_wait_event(cc, 20, &ev) == 0) {
			assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
			c_up = true;
		}
		if (sc != NULL && !s_up && pmrep_conn_wait_event(sc, 20, &ev) == 0) {
			assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
			s_up = true;
		}
	}
	assert_true(c_up && s_up);
	assert_true(func_now_ms() - t0 >= 500);

	assert_int_equal(pmrep_conn_delete(&cc), 0);
	assert_int_equal(pmrep_conn_delete(&sc), 0);
	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	assert_int_equal(pmrep_peer_delete(&cpeer), 0);
	assert_int_equal(pmrep_peer_delete(&speer), 0);
	pmrep_conn_cfg_delete(&cfg);
}

static void
T17_never_answering_address_is_unreachable_within_timeout_times_retries(
		void **state)
{
	(void) state;
	const int timeout = 300;
	const unsigned retries = 3;
	struct pmrep_peer *cpeer = func_peer(false);
	struct pmrep_conn_cfg *cfg = cfg_retries(timeout, retries, 50);
	char port[16] = "7204";
	const char *addr;
	int silent = -1;
	if (func_is_tcp()) {
		silent = func_mute_listener(port, sizeof(port));
		addr = func_addr();
	} else {
		/* an address in the rxe subnet where nobody lives */
		addr = getenv("RXE_DEAD_IP") ? getenv("RXE_DEAD_IP") :
			"10.11.12.99";
	}
	/* transport.h: each attempt within the timeout, all of them with
	 * their backoffs within timeout x (retries + 1) */
	long long budget = (long long)timeout * (retries + 1);
	long long bound = budget * 11 / 10 * func_slow();

	long long t0 = func_now_ms();
	struct pmrep_conn_req *req = NULL;
	int ret = pmrep_conn_req_new(cpeer, addr, port, cfg, &req);
	if (ret == 0) {
		struct pmrep_conn *cc = NULL;
		assert_int_equal(pmrep_conn_req_connect(&req, NULL, &cc), 0);
		func_expect_event(cc, PMREP_CONN_UNREACHABLE, (int)bound + 1000);
		long long took = func_now_ms() - t0;
		if (took > bound)
			fail_msg("UNREACHABLE after %lld ms, bound %lld ms", took,
					bound);
		if (func_is_tcp())	/* it did wait for answers */
			assert_true(took >= budget * 9 / 10);
		/* tcp: connected, never answered -- not "nobody there" */
		int cause = -1;
		assert_int_equal(pmrep_conn_get_failure(cc, &cause), 0);
		assert_int_equal(cause, func_is_tcp() ? PMREP_E_TIMEOUT : 0);
		enum pmrep_conn_event ev;
		assert_int_equal(pmrep_conn_next_event(cc, &ev),
				PMREP_E_NO_EVENT);
		assert_int_equal(pmrep_conn_delete(&cc), 0);
	} else {
		/* verbs may already fail resolving the address: same code */
		assert_int_equal(ret, PMREP_E_UNREACHABLE);
		assert_true(func_now_ms() - t0 <= bound);
	}
	if (silent >= 0)
		close(silent);
	assert_int_equal(pmrep_peer_delete(&cpeer), 0);
	pmrep_conn_cfg_delete(&cfg);
}

static void
refused_connect_without_retries_is_unreachable_at_once(void **state)
{
	(void) state;
	struct pmrep_peer *cpeer = func_peer(false);
	char port[16];
	free_port(cpeer, port, sizeof(port));
	long long t0 = func_now_ms();
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(cpeer, func_addr(), port, NULL,
			&req), 0);
	struct pmrep_conn *cc = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &cc), 0);
	func_expect_event(cc, PMREP_CONN_UNREACHABLE, T * func_slow());
	/* refused is an answer: no waiting for the 1 s timeout */
	assert_true(func_now_ms() - t0 < 1000 * func_slow());
	int cause = -1;
	assert_int_equal(pmrep_conn_get_failure(cc, &cause), 0);
	assert_int_equal(cause, 0);	/* not a silent listener's TIMEOUT */
	/* posting on a conn that reported its end */
	uint8_t buf[64];
	struct pmrep_mr_local *mr = NULL;
	assert_int_equal(pmrep_mr_reg(cpeer, buf, sizeof(buf),
			PMREP_MR_USAGE_ALL, &mr), 0);
	assert_int_equal(pmrep_send(cc, mr, 0, 8, PMREP_F_COMPLETION_ALWAYS,
			NULL), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_mr_dereg(&mr), 0);
	assert_int_equal(pmrep_conn_delete(&cc), 0);
	assert_int_equal(pmrep_peer_delete(&cpeer), 0);
}

static void
explicit_reject_is_rejected_and_final_with_retries_left(void **state)
{
	(void) state;
	struct func_pair p;
	func_pair_listen(&p);
	struct pmrep_conn_cfg *cfg = cfg_retries(1000, 5, 50);

	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, func_addr(), p.port, cfg,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.cconn), 0);
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&req), 0);
	assert_int_equal(pmrep_conn_req_delete(&req), 0);	/* reject */
	assert_null(req);
	func_expect_event(p.cconn, PMREP_CONN_REJECTED, T * func_slow());
	/* final: the client does not come back */
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, 500, &req),
			PMREP_E_TIMEOUT);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(p.cconn, &ev), PMREP_E_NO_EVENT);
	func_pair_close(&p);
	pmrep_conn_cfg_delete(&cfg);
}

static void
disconnect_reports_closed_exactly_once_on_both_sides(void **state)
{
	(void) state;
	struct func_pair p;
	struct func_mrs m;
	func_pair_open(&p, NULL);
	func_mrs_reg(&m, &p, 4096, PMREP_MR_USAGE_ALL);
	assert_int_equal(pmrep_conn_disconnect(p.cconn), 0);
	func_expect_event(p.cconn, PMREP_CONN_CLOSED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_CLOSED, T * func_slow());
	enum pmrep_conn_event ev;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pmrep_conn_next_event(p.cconn, &ev),
				PMREP_E_NO_EVENT);
		assert_int_equal(pmrep_conn_next_event(p.sconn, &ev),
				PMREP_E_NO_EVENT);
	}
	assert_int_equal(pmrep_conn_wait_event(p.cconn, 100, &ev),
			PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	func_pair_close_all(&p, &m);
}

static void
posting_before_established_is_state_and_after_disconnect_is_conn_lost(
		void **state)
{
	(void) state;
	struct func_pair p;
	func_pair_listen(&p);
	struct func_mrs m;
	func_mrs_reg(&m, &p, 4096, PMREP_MR_USAGE_ALL);

	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, func_addr(), p.port, NULL,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.cconn), 0);
	/* the server has not accepted: requests wait, receives may go */
	assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_STATE);
	assert_int_equal(pmrep_recv(p.cconn, m.cmr, 0, 64, (void *)9), 0);
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.sconn), 0);
	func_expect_event(p.cconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	/* the early receive is there: it takes the server's message */
	assert_int_equal(pmrep_send(p.sconn, m.smr, 0, 10,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	struct pmrep_completion c = func_wait_one(func_rcq(p.cconn), T);
	assert_int_equal((uintptr_t)c.op_context, 9);
	assert_int_equal(c.status, PMREP_WC_SUCCESS);
	assert_int_equal(c.byte_len, 10);

	/* disconnecting: no new request, before and after CLOSED is taken */
	assert_int_equal(pmrep_conn_disconnect(p.cconn), 0);
	assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	func_expect_event(p.cconn, PMREP_CONN_CLOSED, T * func_slow());
	assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	func_expect_event(p.sconn, PMREP_CONN_CLOSED, T * func_slow());
	func_pair_close_all(&p, &m);
}

static void
delete_without_disconnect_reports_closed_to_the_peer(void **state)
{
	(void) state;
	struct func_pair p;
	func_pair_open(&p, NULL);
	assert_int_equal(pmrep_conn_delete(&p.cconn), 0);
	func_expect_event(p.sconn, PMREP_CONN_CLOSED, T * func_slow());
	func_pair_close(&p);
}

static void
request_left_at_a_shut_down_endpoint_is_refused(void **state)
{
	(void) state;
	struct func_pair p;
	func_pair_listen(&p);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, func_addr(), p.port, NULL,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.cconn), 0);
	/* let the request reach the endpoint, which never takes it */
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(p.cconn, 200, &ev),
			PMREP_E_TIMEOUT);
	assert_int_equal(pmrep_ep_shutdown(&p.ep), 0);
	/* "not listening": with no retry left, unreachable */
	func_expect_event(p.cconn, PMREP_CONN_UNREACHABLE, T * func_slow());
	func_pair_close(&p);
}

/* ------------------------------------- idle sockets at an endpoint (tcp) */

#define NIDLE (64 + 16)	/* more than the endpoint's pending table (64) */

static void
open_idle(int *fds, int n, const char *port)
{
	for (int i = 0; i < n; i++)
		fds[i] = func_raw_connect(port);
}

static void
close_idle(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* the endpoint takes in what is waiting; none of it is a request */
static void
ep_take_in(struct pmrep_ep *ep, const struct pmrep_conn_cfg *cfg)
{
	struct pmrep_conn_req *req = NULL;
	for (int i = 0; i < 3; i++)
		assert_int_equal(pmrep_ep_next_conn_req(ep, cfg, &req),
				PMREP_E_NO_EVENT);
	assert_null(req);
}

static void
idle_sockets_do_not_lock_a_real_client_out_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct func_pair p;
	func_pair_listen(&p);
	int idle[NIDLE], late[NIDLE];

	/* more silent connections than the endpoint holds, already taken
	 * in when the real client comes: it still gets in, with no retry
	 * (the default cfg), well within its 1 s handshake timeout */
	open_idle(idle, NIDLE, p.port);
	ep_take_in(p.ep, NULL);
	long long t0 = func_now_ms();
	func_connect(&p, NULL, NULL, &p.cconn, &p.sconn);
	long long took = func_now_ms() - t0;
	if (took > 1000 * func_slow())
		fail_msg("ESTABLISHED after %lld ms", took);
	assert_int_equal(pmrep_conn_delete(&p.cconn), 0);
	assert_int_equal(pmrep_conn_delete(&p.sconn), 0);

	/* a real client whose HELLO is in, then a flood of silent ones
	 * before the application looks: the flood does not push the real
	 * request out */
	struct pmrep_conn_cfg *ccfg = cfg_retries(T * func_slow(), 0, 100);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, func_addr(), p.port, ccfg,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.cconn), 0);
	usleep(200000 * (useconds_t)func_slow());	/* its HELLO arrives */
	open_idle(late, NIDLE, p.port);
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.sconn), 0);
	func_expect_event(p.cconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_ESTABLISHED, T * func_slow());

	close_idle(idle, NIDLE);
	close_idle(late, NIDLE);
	pmrep_conn_cfg_delete(&ccfg);
	func_pair_close(&p);
}

/* a silent connection from `from` (an address of 127/8) to port */
static int
raw_connect_from(const char *port, const char *from)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct sockaddr_in b = { .sin_family = AF_INET };
	assert_int_equal(inet_pton(AF_INET, from, &b.sin_addr), 1);
	assert_int_equal(bind(s, (struct sockaddr *)&b, sizeof(b)), 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)atoi(port));
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

/* something (the endpoint's REJECT, or its close) arrived on fd */
static bool
was_dropped(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	return poll(&pf, 1, 50 * func_slow()) > 0;
}

static void
silent_sockets_of_one_address_make_room_before_anothers_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct func_pair p;
	func_pair_listen(&p);
	int flood[NIDLE], late[NIDLE];

	/* the table full of silent sockets from 127.0.0.2, then one from
	 * 127.0.0.1 still in its handshake (silent too), then as many again
	 * from 127.0.0.2: each newcomer evicts one of 127.0.0.2's, never
	 * the one of 127.0.0.1 -- oldest-first eviction would have dropped
	 * it once the first 64 were gone */
	for (int i = 0; i < 64; i++)
		flood[i] = raw_connect_from(p.port, "127.0.0.2");
	ep_take_in(p.ep, NULL);
	int mine = raw_connect_from(p.port, "127.0.0.1");
	ep_take_in(p.ep, NULL);
	for (int i = 0; i < NIDLE; i++) {
		late[i] = raw_connect_from(p.port, "127.0.0.2");
		if (i % 8 == 7)
			ep_take_in(p.ep, NULL);
	}
	ep_take_in(p.ep, NULL);
	assert_false(was_dropped(mine));
	/* the flood's oldest went */
	assert_true(was_dropped(flood[0]));
	assert_true(was_dropped(flood[63]));

	close(mine);
	close_idle(flood, 64);
	close_idle(late, NIDLE);
	func_pair_close(&p);
}

static void
idle_socket_is_dropped_at_the_handshake_timeout_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	const int timeout = 200;
	struct func_pair p;
	func_pair_listen(&p);
	struct pmrep_conn_cfg *scfg = cfg_retries(timeout, 0, 100);
	int s = func_raw_connect(p.port);
	long long t0 = func_now_ms();
	ep_take_in(p.ep, scfg);

	/* the application keeps looking; the silent socket is closed
	 * (EOF for it) once the handshake timeout has passed */
	long long end = t0 + 3000LL * func_slow();
	bool gone = false;
	while (!gone && func_now_ms() < end) {
		struct pmrep_conn_req *req = NULL;
		assert_int_equal(pmrep_ep_next_conn_req(p.ep, scfg, &req),
				PMREP_E_NO_EVENT);
		uint8_t b;
		ssize_t n = recv(s, &b, 1, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			gone = true;
		else
			usleep(10000);
	}
	long long took = func_now_ms() - t0;
	if (!gone)
		fail_msg("a silent socket still held after %lld ms (timeout %d ms)",
				took, timeout);
	assert_true(took >= timeout - 10);
	close(s);
	pmrep_conn_cfg_delete(&scfg);
	func_pair_close(&p);
}

/*
 * the expiry needs no other activity: after one look the application
 * only waits on the endpoint fd (as pmrep-target's loop does); the fd
 * turns readable once the silent socket's handshake timeout has passed,
 * and the one look that follows drops it (EOF for it). Before the
 * endpoint's timer, the fd stayed quiet and the socket was held for as
 * long as no other connection arrived.
 */
static void
idle_socket_expires_without_other_activity_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	const int timeout = 200;
	struct func_pair p;
	func_pair_listen(&p);
	struct pmrep_conn_cfg *scfg = cfg_retries(timeout, 0, 100);
	int s = func_raw_connect(p.port);
	long long t0 = func_now_ms();
	ep_take_in(p.ep, scfg);
	int efd = -1;
	assert_int_equal(pmrep_ep_get_fd(p.ep, &efd), 0);
	struct pollfd pf = { .fd = efd, .events = POLLIN };
	int n = poll(&pf, 1, 5000 * func_slow());
	long long took = func_now_ms() - t0;
	if (n != 1)
		fail_msg("the endpoint fd stayed quiet for %lld ms with a silent socket past its %d ms timeout",
				took, timeout);
	assert_true(took >= timeout - 10);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_ep_next_conn_req(p.ep, scfg, &req),
			PMREP_E_NO_EVENT);
	uint8_t b;
	ssize_t r = recv(s, &b, 1, MSG_DONTWAIT);
	assert_true(r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK));
	/* nothing waits any more: the fd is quiet again (the timer
	 * disarmed, not firing on and on) */
	assert_int_equal(poll(&pf, 1, 300), 0);
	close(s);
	pmrep_conn_cfg_delete(&scfg);
	func_pair_close(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(T17_client_started_500ms_before_the_listener_gets_through_with_retries),
		cmocka_unit_test(T17_never_answering_address_is_unreachable_within_timeout_times_retries),
		cmocka_unit_test(refused_connect_without_retries_is_unreachable_at_once),
		cmocka_unit_test(explicit_reject_is_rejected_and_final_with_retries_left),
		cmocka_unit_test(disconnect_reports_closed_exactly_once_on_both_sides),
		cmocka_unit_test(posting_before_established_is_state_and_after_disconnect_is_conn_lost),
		cmocka_unit_test(delete_without_disconnect_reports_closed_to_the_peer),
		cmocka_unit_test(request_left_at_a_shut_down_endpoint_is_refused),
		cmocka_unit_test(idle_sockets_do_not_lock_a_real_client_out_tcp),
		cmocka_unit_test(silent_sockets_of_one_address_make_room_before_anothers_tcp),
		cmocka_unit_test(idle_socket_is_dropped_at_the_handshake_timeout_tcp),
		cmocka_unit_test(idle_socket_expires_without_other_activity_tcp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
