/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_devx.c -- the DEVX event channel of a verbs peer on the mocked
 * device (tests/unit/mocks/mock_mlx5.c): not supported off mlx5 or without
 * DEVX, made at the first subscribe, its fd, events with their cookie,
 * EAGAIN, EOVERFLOW (the ports are queried again; a port that is down fails
 * the connections), every failure in turn, destroyed by peer delete, and
 * the tcp provider.
 */
#include <fcntl.h>
#include <infiniband/mlx5dv.h>

#include "test_verbs_util.h"

/* tests/unit/mocks/mock_mlx5.c */
void mock_mlx5_reset(void);
void mock_mlx5_set_supported(bool on);
void mock_mlx5_set_devx(bool on);
int mock_mlx5_live_channels(void);
struct mlx5dv_devx_event_channel *mock_mlx5_channel_last(void);
unsigned mock_mlx5_subscriptions(struct mlx5dv_devx_event_channel *ch);
bool mock_mlx5_subscribed(struct mlx5dv_devx_event_channel *ch, uint16_t type,
		uint64_t *cookie);
int mock_mlx5_raise(struct ibv_context *ctx, uint16_t type, const void *data,
		size_t len);
void mock_mlx5_queue_overflow(struct mlx5dv_devx_event_channel *ch);
int mock_mlx5_pending(struct mlx5dv_devx_event_channel *ch);

/* device event numbers (the values do not matter to pmrep) */
#define EV_PORT_CHANGE 0x09
#define EV_INTERNAL_ERROR 0x08
#define EV_GENERAL 0x0a

static const uint16_t Port_events[] = { EV_PORT_CHANGE, EV_INTERNAL_ERROR };

static int
setup(void **state)
{
	mock_mlx5_reset();
	return tv_setup(state);
}

static int
teardown(void **state)
{
	assert_int_equal(mock_mlx5_live_channels(), 0);
	mock_mlx5_reset();
	return tv_teardown(state);
}

/* an mlx5 peer subscribed to Port_events with `cookie` */
static struct pmrep_peer *
devx_peer(uint64_t cookie)
{
	mock_mlx5_set_supported(true);
	struct pmrep_peer *peer = tv_peer();
	assert_int_equal(pmrep_peer_devx_subscribe(peer, Port_events, 2, cookie),
			0);
	return peer;
}

static void
handle(struct pmrep_peer *peer, enum pmrep_async_event want_ev,
		uint64_t want_cookie)
{
	enum pmrep_async_event ev = PMREP_ASYNC_PORT_ACTIVE;
	uint64_t cookie = 0xdead;
	assert_int_equal(pmrep_peer_handle_devx_event(peer, &ev, &cookie), 0);
	assert_int_equal(ev, want_ev);
	assert_int_equal(cookie, want_cookie);
}

/* ------------------------------------------------------------ not mlx5 */

static void
non_mlx5_device_is_nosupp_with_a_log_line(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();	/* mock_rxe0: not mlx5 */
	assert_int_equal(pmrep_peer_devx_subscribe(peer, Port_events, 2, 1),
			PMREP_E_NOSUPP);
	assert_true(tv_logged("not an mlx5 device"));
	int fd = 7;
	assert_int_equal(pmrep_peer_get_devx_fd(peer, &fd), PMREP_E_NOSUPP);
	enum pmrep_async_event ev;
	uint64_t cookie;
	assert_int_equal(pmrep_peer_handle_devx_event(peer, &ev, &cookie),
			PMREP_E_NOSUPP);
	/* no mlx5dv call beyond the check (the mock would fail loudly) */
	assert_int_equal(mock_calls("mlx5dv_devx_create_event_channel"), 0);
	assert_int_equal(mock_mlx5_live_channels(), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
mlx5_without_devx_is_nosupp_with_a_log_line(void **state)
{
	(void) state;
	mock_mlx5_set_supported(true);
	struct pmrep_peer *peer = tv_peer();
	const int errs[] = { EOPNOTSUPP, EPROTONOSUPPORT };
	for (size_t i = 0; i < 2; i++) {
		tv_log_capture();
		mock_fail("mlx5dv_devx_create_event_channel", 1, errs[i]);
		assert_int_equal(pmrep_peer_devx_subscribe(peer, Port_events, 2,
				1), PMREP_E_NOSUPP);
		assert_true(tv_logged("offers no DEVX"));
		assert_int_equal(mock_mlx5_live_channels(), 0);
	}
	int fd;
	assert_int_equal(pmrep_peer_get_devx_fd(peer, &fd), PMREP_E_STATE);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------------ subscribe */

static void
subscribe_makes_one_channel_at_the_first_call(void **state)
{
	(void) state;
	mock_mlx5_set_supported(true);
	struct pmrep_peer *peer = tv_peer();
	int fd;
	enum pmrep_async_event ev;
	uint64_t cookie;
	/* nothing before the first subscribe */
	assert_int_equal(pmrep_peer_get_devx_fd(peer, &fd), PMREP_E_STATE);
	assert_int_equal(pmrep_peer_handle_devx_event(peer, &ev, &cookie),
			PMREP_E_STATE);
	assert_int_equal(mock_mlx5_live_channels(), 0);

	assert_int_equal(pmrep_peer_devx_subscribe(peer, Port_events, 2, 42), 0);
	assert_int_equal(mock_mlx5_live_channels(), 1);
	struct mlx5dv_devx_event_channel *ch = mock_mlx5_channel_last();
	assert_int_equal(mock_mlx5_subscriptions(ch), 2);
	uint64_t c = 0;
	assert_true(mock_mlx5_subscribed(ch, EV_PORT_CHANGE, &c));
	assert_int_equal(c, 42);
	assert_true(mock_mlx5_subscribed(ch, EV_INTERNAL_ERROR, &c));
	assert_int_equal(c, 42);

	/* a second subscribe adds to the same channel */
	const uint16_t general = EV_GENERAL;
	assert_int_equal(pmrep_peer_devx_subscribe(peer, &general, 1, 7), 0);
	assert_int_equal(mock_calls("mlx5dv_devx_create_event_channel"), 1);
	assert_int_equal(mock_mlx5_live_channels(), 1);
	assert_int_equal(mock_mlx5_subscriptions(ch), 3);
	assert_true(mock_mlx5_subscribed(ch, EV_GENERAL, &c));
	assert_int_equal(c, 7);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
subscribe_invalid_arguments_are_inval(void **state)
{
	(void) state;
	mock_mlx5_set_supported(true);
	struct pmrep_peer *peer = tv_peer();
	uint16_t many[PMREP_DEVX_SUBSCRIBE_MAX + 1] = { 0 };
	const uint16_t big = 256;
	assert_int_equal(pmrep_peer_devx_subscribe(NULL, Port_events, 2, 0),
			PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_devx_subscribe(peer, NULL, 2, 0),
			PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_devx_subscribe(peer, Port_events, 0, 0),
			PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_devx_subscribe(peer, many,
			PMREP_DEVX_SUBSCRIBE_MAX + 1, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_devx_subscribe(peer, &big, 1, 0),
			PMREP_E_INVAL);
	assert_int_equal(mock_mlx5_live_channels(), 0);
	/* the maximum is accepted */
	assert_int_equal(pmrep_peer_devx_subscribe(peer, many,
			PMREP_DEVX_SUBSCRIBE_MAX, 0), 0);
	int fd;
	assert_int_equal(pmrep_peer_get_devx_fd(NULL, &fd), PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_get_devx_fd(peer, NULL), PMREP_E_INVAL);
	enum pmrep_async_event ev;
	uint64_t cookie;
	assert_int_equal(pmrep_peer_handle_devx_event(peer, NULL, &cookie),
			PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_handle_devx_event(peer, &ev, NULL),
			PMREP_E_INVAL);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
subscribe_on_a_context_without_devx_is_provider_einval_and_leaks_nothing(
		void **state)
{
	(void) state;
	mock_mlx5_set_supported(true);
	mock_mlx5_set_devx(false);	/* librdmacm's context: no DEVX uid */
	struct pmrep_peer *peer = tv_peer();
	assert_int_equal(pmrep_peer_devx_subscribe(peer, Port_events, 2, 1),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EINVAL);
	assert_true(tv_logged("MLX5DV_CONTEXT_FLAGS_DEVX"));
	/* the channel this call made is gone again */
	assert_int_equal(mock_mlx5_live_channels(), 0);
	int fd;
	assert_int_equal(pmrep_peer_get_devx_fd(peer, &fd), PMREP_E_STATE);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
subscribe_failure_keeps_the_earlier_channel(void **state)
{
	(void) state;
	struct pmrep_peer *peer = devx_peer(1);
	struct mlx5dv_devx_event_channel *ch = mock_mlx5_channel_last();
	const uint16_t general = EV_GENERAL;
	mock_fail("mlx5dv_devx_subscribe_devx_event", 1, EIO);
	assert_int_equal(pmrep_peer_devx_subscribe(peer, &general, 1, 2),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_int_equal(mock_mlx5_live_channels(), 1);
	assert_int_equal(mock_mlx5_subscriptions(ch), 2);
	/* and it still delivers */
	assert_int_equal(mock_mlx5_raise(mock_cm_context(), EV_PORT_CHANGE,
			NULL, 0), 1);
	handle(peer, PMREP_ASYNC_OTHER, 1);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------------------ fd */

static void
fd_is_nonblocking_cloexec_and_readable_while_an_event_is_queued(void **state)
{
	(void) state;
	struct pmrep_peer *peer = devx_peer(42);
	int fd = -1;
	assert_int_equal(pmrep_peer_get_devx_fd(peer, &fd), 0);
	assert_int_equal(fd, mock_mlx5_channel_last()->fd);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_false(tv_readable(fd, 0));

	assert_int_equal(mock_mlx5_raise(mock_cm_context(), EV_PORT_CHANGE,
			"\x00\x09\x00\x01", 4), 1);
	assert_true(tv_readable(fd, 0));
	handle(peer, PMREP_ASYNC_OTHER, 42);
	assert_false(tv_readable(fd, 0));

	/* an events-lost notice wakes it too */
	mock_mlx5_queue_overflow(mock_mlx5_channel_last());
	assert_true(tv_readable(fd, 0));
	handle(peer, PMREP_ASYNC_EVENTS_LOST, 0);
	assert_false(tv_readable(fd, 0));
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* -------------------------------------------------------------- events */

static void
events_come_with_the_cookie_of_their_subscription(void **state)
{
	(void) state;
	struct pmrep_peer *peer = devx_peer(42);
	const uint16_t general = EV_GENERAL;
	assert_int_equal(pmrep_peer_devx_subscribe(peer, &general, 1,
			UINT64_MAX), 0);
	/* events of a type nobody subscribed to are not delivered */
	assert_int_equal(mock_mlx5_raise(mock_cm_context(), 0x13, NULL, 0), 0);
	assert_int_equal(mock_mlx5_raise(mock_cm_context(), EV_GENERAL, NULL,
			0), 1);
	assert_int_equal(mock_mlx5_raise(mock_cm_context(), EV_INTERNAL_ERROR,
			NULL, 0), 1);
	handle(peer, PMREP_ASYNC_OTHER, UINT64_MAX);
	handle(peer, PMREP_ASYNC_OTHER, 42);
	handle(peer, PMREP_ASYNC_NONE, 0);
	assert_int_equal(mock_calls("mlx5dv_devx_get_event"), 3);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
eagain_is_none_without_blocking(void **state)
{
	(void) state;
	struct pmrep_peer *peer = devx_peer(1);
	/* the mock fails loudly if the fd were blocking */
	handle(peer, PMREP_ASYNC_NONE, 0);
	handle(peer, PMREP_ASYNC_NONE, 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
get_event_failure_is_provider_error_with_errno(void **state)
{
	(void) state;
	struct pmrep_peer *peer = devx_peer(1);
	assert_int_equal(mock_mlx5_raise(mock_cm_context(), EV_PORT_CHANGE,
			NULL, 0), 1);
	mock_fail("mlx5dv_devx_get_event", 1, EIO);
	enum pmrep_async_event ev = PMREP_ASYNC_OTHER;
	uint64_t cookie = 5;
	assert_int_equal(pmrep_peer_handle_devx_event(peer, &ev, &cookie),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_true(tv_logged("mlx5dv_devx_get_event"));
	/* the event is still there */
	handle(peer, PMREP_ASYNC_OTHER, 1);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
overflow_with_ports_up_is_events_lost_and_conns_stay(void **state)
{
	(void) state;
	struct pmrep_peer *peer = devx_peer(1);
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	unsigned queries = mock_calls("ibv_query_port");
	mock_mlx5_queue_overflow(mock_mlx5_channel_last());
	handle(peer, PMREP_ASYNC_EVENTS_LOST, 0);
	assert_int_equal(mock_calls("ibv_query_port"), queries + 1);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
overflow_with_a_port_down_makes_every_conn_report_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = devx_peer(1);
	struct pmrep_peer *other = tv_peer();	/* same device */
	struct pmrep_conn *a = tv_active(peer, NULL, NULL, 0);
	struct pmrep_conn *b = tv_active(other, NULL, NULL, 0);
	int efd;
	assert_int_equal(pmrep_conn_get_event_fd(a, &efd), 0);
	assert_false(tv_readable(efd, 0));

	mock_port_attr()->state = IBV_PORT_DOWN;
	unsigned queries = mock_calls("ibv_query_port");
	mock_mlx5_queue_overflow(mock_mlx5_channel_last());
	handle(peer, PMREP_ASYNC_EVENTS_LOST, 0);
	assert_int_equal(mock_calls("ibv_query_port"), queries + 1);
	assert_true(tv_readable(efd, 0));
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(a, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_next_event(b, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);

	assert_int_equal(pmrep_conn_delete(&a), 0);
	assert_int_equal(pmrep_conn_delete(&b), 0);
	assert_int_equal(pmrep_peer_delete(&other), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
overflow_with_a_failing_port_query_is_provider_and_conns_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = devx_peer(1);
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	mock_mlx5_queue_overflow(mock_mlx5_channel_last());
	mock_fail("ibv_query_port", 1, EIO);
	enum pmrep_async_event aev = PMREP_ASYNC_NONE;
	uint64_t cookie = 5;
	assert_int_equal(pmrep_peer_handle_devx_event(peer, &aev, &cookie),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_int_equal(aev, PMREP_ASYNC_EVENTS_LOST);
	assert_int_equal(cookie, 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ------------------------------------------------------- each failure */

struct each_st {
	struct pmrep_peer *peer;
};

/* everything the DEVX path calls, on a fresh peer */
static int
scenario_devx(void *arg)
{
	struct each_st *st = arg;
	enum pmrep_async_event ev;
	uint64_t cookie;
	int fd;
	int ret = pmrep_peer_new(mock_cm_context(), &st->peer);
	if (ret)
		return ret;
	ret = pmrep_peer_devx_subscribe(st->peer, Port_events, 2, 42);
	if (ret)
		return ret;
	ret = pmrep_peer_get_devx_fd(st->peer, &fd);
	if (ret)
		return ret;
	mock_mlx5_raise(mock_cm_context(), EV_PORT_CHANGE, NULL, 0);
	ret = pmrep_peer_handle_devx_event(st->peer, &ev, &cookie);
	if (ret)
		return ret;
	if (ev != PMREP_ASYNC_OTHER || cookie != 42)
		return PMREP_E_UNKNOWN;
	mock_mlx5_queue_overflow(mock_mlx5_channel_last());
	ret = pmrep_peer_handle_devx_event(st->peer, &ev, &cookie);
	if (ret)
		return ret;
	return ev == PMREP_ASYNC_EVENTS_LOST ? 0 : PMREP_E_UNKNOWN;
}

static void
cleanup_devx(void *arg, int ret)
{
	struct each_st *st = arg;
	const char *failed = mock_each_failed_fn();
	/* a failing mlx5dv call (creation included: ENOMEM is no "no DEVX"
	 * answer) or port query is a provider error */
	if (ret != 0 && failed != NULL && (strncmp(failed, "mlx5dv_", 7) == 0 ||
			strcmp(failed, "ibv_query_port") == 0))
		assert_int_equal(ret, PMREP_E_PROVIDER);
	if (st->peer != NULL)
		assert_int_equal(pmrep_peer_delete(&st->peer), 0);
	assert_int_equal(mock_mlx5_live_channels(), 0);
}

static void
each_failure_returns_the_documented_error_and_leaks_nothing(void **state)
{
	(void) state;
	mock_mlx5_set_supported(true);
	struct each_st st = { NULL };
	int n = mock_run_each_failure(scenario_devx, cleanup_devx, &st);
	/* peer: calloc x2, query, alloc_pd, reg_mr; devx: create, subscribe,
	 * get_event x2, query_port */
	assert_true(n >= 10);
	assert_null(st.peer);
}

/* ------------------------------------------------------------ teardown */

static void
peer_delete_destroys_the_channel(void **state)
{
	(void) state;
	struct pmrep_peer *peer = devx_peer(1);
	/* queued, never read: goes with the channel */
	assert_int_equal(mock_mlx5_raise(mock_cm_context(), EV_PORT_CHANGE,
			NULL, 0), 1);
	assert_int_equal(mock_mlx5_live_channels(), 1);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
	assert_null(peer);
	assert_int_equal(mock_mlx5_live_channels(), 0);
	assert_int_equal(mock_calls("mlx5dv_devx_destroy_event_channel"), 1);
}

static void
peer_delete_without_a_channel_calls_no_mlx5dv(void **state)
{
	(void) state;
	mock_mlx5_set_supported(true);
	struct pmrep_peer *peer = tv_peer();
	assert_int_equal(pmrep_peer_delete(&peer), 0);
	assert_int_equal(mock_calls("mlx5dv_devx_destroy_event_channel"), 0);
}

/* ------------------------------------------------------------------ tcp */

static void
tcp_peer_is_nosupp(void **state)
{
	(void) state;
	struct pmrep_peer *peer = NULL;
	assert_int_equal(pmrep_peer_new_tcp(&peer), 0);
	assert_int_equal(pmrep_peer_devx_subscribe(peer, Port_events, 2, 1),
			PMREP_E_NOSUPP);
	assert_true(tv_logged("DEVX"));
	int fd;
	assert_int_equal(pmrep_peer_get_devx_fd(peer, &fd), PMREP_E_NOSUPP);
	enum pmrep_async_event ev;
	uint64_t cookie;
	assert_int_equal(pmrep_peer_handle_devx_event(peer, &ev, &cookie),
			PMREP_E_NOSUPP);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
	assert_int_equal(mock_calls("mlx5dv_is_supported"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(non_mlx5_device_is_nosupp_with_a_log_line),
		T(mlx5_without_devx_is_nosupp_with_a_log_line),
		T(subscribe_makes_one_channel_at_the_first_call),
		T(subscribe_invalid_arguments_are_inval),
		T(subscribe_on_a_context_without_devx_is_provider_einval_and_leaks_nothing),
		T(subscribe_failure_keeps_the_earlier_channel),
		T(fd_is_nonblocking_cloexec_and_readable_while_an_event_is_queued),
		T(events_come_with_the_cookie_of_their_subscription),
		T(eagain_is_none_without_blocking),
		T(get_event_failure_is_provider_error_with_errno),
		T(overflow_with_ports_up_is_events_lost_and_conns_stay),
		T(overflow_with_a_port_down_makes_every_conn_report_lost),
		T(overflow_with_a_failing_port_query_is_provider_and_conns_lost),
		T(each_failure_returns_the_documented_error_and_leaks_nothing),
		T(peer_delete_destroys_the_channel),
		T(peer_delete_without_a_channel_calls_no_mlx5dv),
		T(tcp_peer_is_nosupp),
#undef T
	};
	return cmocka_run_group_tests_name("verbs devx", tests, NULL, NULL);
}
