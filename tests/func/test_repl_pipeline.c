/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_pipeline.c -- the mirror's persist pipeline over the provider
 * under test (tcp on loopback here, verbs on rxe in the guest), with two
 * replica targets in child processes, one of which is frozen (SIGSTOP)
 * the way a stalled host is (docs/PROTOCOL.md "Mirror, persist pipeline").
 * Proves:
 *  - quorum 1 of 2: persists complete at the first confirmation while the
 *    other replica is frozen -- each returns 0 well inside its limit,
 *    which a wait for the frozen one could not -- and the frozen one is
 *    reported BEHIND (never "in sync") with exactly the bytes it has not
 *    confirmed as its lag; thawed, it catches up, IN_SYNC with lag 0, and
 *    both replicas are byte-exact;
 *  - pull ahead: past the cfg lag the frozen replica is FAILED (timeout)
 *    with what it missed out of sync, not piled up; reconnected, it is
 *    resynced (exactly those bytes) and byte-exact;
 *  - under "all" a frozen replica fails the persist by its limit (never 0)
 *    and the next persists at once;
 *  - many requests in flight complete in submission order.
 * The frozen replica serves GPSPM (staging): a frozen verbs target's
 * device would still answer RDMA flushes without its process.
 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (4u << 20)
#define REGION 4096u
#define STEP 4096u

static const uint8_t key[32] = "test-key-0123456789-abcdefghijkl";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xb7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128];
static char path1[256], path2[256];
static struct func_child c1, c2;

/* r1 direct (any method), r2 staging (GPSPM: withheld while frozen) */
static void
targets_start(void)
{
	snprintf(path1, sizeof(path1), "%s/r1", dir);
	snprintf(path2, sizeof(path2), "%s/r2", dir);
	const struct func_child_cfg a = { .path = path1, .size = SIZE,
		.key = key, .key_len = sizeof(key) };
	const struct func_child_cfg b = { .path = path2, .size = SIZE,
		.key = key, .key_len = sizeof(key), .staging = true };
	func_child_start(&c1, &a, "0");
	func_child_start(&c2, &b, "0");
}

static struct pmrep_pmem *
local_open(void)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/log", dir);
	struct pmrep_pmem *p = NULL;
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	return p;
}

static struct pmrep_mirror_cfg *
mcfg(unsigned quorum, int timeout_ms)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), c1.port), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), c2.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_region_size(c, REGION), 0);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(c, quorum), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, timeout_ms), 0);
	return c;
}

static struct pmrep_replica_status
status(struct pmrep_mirror *m, unsigned i)
{
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
	return st;
}

static void
fill(struct pmrep_pmem *local, size_t off, size_t len, int v)
{
	memset((uint8_t *)pmrep_pmem_get_address(local) + off, v, len);
}

/* poll the mirror (its fd) until replica i is in state `want` */
static void
wait_state(struct pmrep_mirror *m, unsigned i, enum pmrep_replica_state want,
		int timeout_ms)
{
	int fd;
	assert_int_equal(pmrep_mirror_get_fd(m, &fd), 0);
	long long deadline = func_now_ms() + (long long)timeout_ms * func_slow();
	for (;;) {
		struct pmrep_mirror_completion c[8];
		int n;
		assert_int_equal(pmrep_mirror_poll(m, c, 8, &n), 0);
		if (status(m, i).state == want)
			return;
		assert_true(func_now_ms() < deadline);
		struct pollfd p = { fd, POLLIN, 0 };
		(void) poll(&p, 1, 50);
	}
}

/* ------------------------------------------------------------- tests */

#define NQ 20

static void
quorum_completes_at_k_while_a_frozen_replica_confirms_behind(void **state)
{
	(void)state;
	targets_start();
	struct pmrep_pmem *local = local_open();
	/* a long cfg timeout: the frozen replica is not failed for it */
	struct pmrep_mirror_cfg *c = mcfg(1, 60000);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	/* new returns once k are in sync: the other may still be resyncing */
	wait_state(m, 0, PMREP_REPLICA_IN_SYNC, 20000);
	wait_state(m, 1, PMREP_REPLICA_IN_SYNC, 20000);
	assert_int_equal(status(m, 1).method, PMREP_MIRROR_METHOD_GPSPM);
	func_child_freeze(&c2);
	/* each persist may wait 20 s: one that waited for the frozen
	 * replica would return PMREP_E_TIMEOUT, not 0 */
	for (unsigned i = 0; i < NQ; i++) {
		fill(local, i * STEP, STEP, 0x40 + (int)i);
		assert_int_equal(pmrep_mirror_persist(m, i * STEP, STEP,
				20000 * func_slow()), 0);
	}
	struct pmrep_replica_status st = status(m, 1);
	assert_int_equal(st.state, PMREP_REPLICA_BEHIND);
	assert_int_equal(st.lag_bytes, NQ * STEP);
	assert_int_equal(st.last_error, 0);
	st = status(m, 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.lag_bytes, 0);
	assert_string_equal(pmrep_replica_state_str(PMREP_REPLICA_BEHIND),
			"behind");

	func_child_thaw(&c2);
	wait_state(m, 0, PMREP_REPLICA_IN_SYNC, 20000);
	wait_state(m, 1, PMREP_REPLICA_IN_SYNC, 20000);
	assert_int_equal(status(m, 1).lag_bytes, 0);
	assert_int_equal(status(m, 1).last_error, 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c1, SIGTERM);
	func_child_kill(&c2, SIGTERM);
	func_assert_replica_equals(local, path1);
	func_assert_replica_equals(local, path2);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

#define NLAG 8

static void
a_replica_past_the_max_lag_is_pulled_ahead_and_resynced(void **state)
{
	(void)state;
	targets_start();
	struct pmrep_pmem *local = local_open();
	struct pmrep_mirror_cfg *c = mcfg(1, 60000);
	assert_int_equal(pmrep_mirror_cfg_set_max_lag(c, 4 * STEP), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	wait_state(m, 0, PMREP_REPLICA_IN_SYNC, 20000);
	wait_state(m, 1, PMREP_REPLICA_IN_SYNC, 20000);
	func_child_freeze(&c2);
	for (unsigned i = 0; i < NLAG; i++) {
		fill(local, i * STEP, STEP, 0x60 + (int)i);
		assert_int_equal(pmrep_mirror_persist(m, i * STEP, STEP,
				20000 * func_slow()), 0);
		struct pmrep_replica_status st = status(m, 1);
		if (i < 4) {
			/* up to the limit it trails */
			assert_int_equal(st.state, PMREP_REPLICA_BEHIND);
			assert_int_equal(st.lag_bytes, (i + 1) * STEP);
		} else {
			/* past it: out of sync, every byte it missed kept */
			assert_int_equal(st.state, PMREP_REPLICA_FAILED);
			assert_int_equal(st.last_error, PMREP_E_TIMEOUT);
			assert_int_equal(st.lag_bytes, (i + 1) * STEP);
		}
	}
	assert_int_equal(status(m, 0).state, PMREP_REPLICA_IN_SYNC);
	func_child_thaw(&c2);
	long long deadline = func_now_ms() + 20000LL * func_slow();
	int ret;
	while ((ret = pmrep_mirror_reconnect(m, 5000 * func_slow())) != 0) {
		assert_true(ret == PMREP_E_AGAIN || ret == PMREP_E_UNREACHABLE ||
				ret == PMREP_E_TIMEOUT);
		assert_true(func_now_ms() < deadline);
		usleep(20000);
	}
	struct pmrep_replica_status st = status(m, 1);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.lag_bytes, 0);
	/* the full resync at attach, then exactly what it missed */
	assert_int_equal(st.resync_bytes, SIZE + NLAG * STEP);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c1, SIGTERM);
	func_child_kill(&c2, SIGTERM);
	func_assert_replica_equals(local, path1);
	func_assert_replica_equals(local, path2);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
under_all_a_frozen_replica_fails_the_persist_by_its_limit(void **state)
{
	(void)state;
	targets_start();
	struct pmrep_pmem *local = local_open();
	struct pmrep_mirror_cfg *c = mcfg(0, 60000);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_child_freeze(&c2);
	fill(local, 0, STEP, 0x11);
	assert_int_equal(pmrep_mirror_persist(m, 0, STEP, 300), PMREP_E_TIMEOUT);
	struct pmrep_replica_status st = status(m, 1);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_equal(st.last_error, PMREP_E_TIMEOUT);
	assert_int_equal(st.lag_bytes, STEP);
	assert_int_equal(status(m, 0).state, PMREP_REPLICA_IN_SYNC);
	/* not reconnected: "slow" and "gone" read alike, at once */
	fill(local, STEP, STEP, 0x12);
	assert_int_equal(pmrep_mirror_persist(m, STEP, STEP, -1), PMREP_E_TIMEOUT);
	assert_int_equal(status(m, 1).lag_bytes, 2 * STEP);
	func_child_thaw(&c2);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c1, SIGTERM);
	func_child_kill(&c2, SIGTERM);
	func_assert_replica_equals(local, path1);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

#define NORD 2000

static void
many_in_flight_complete_in_submission_order(void **state)
{
	(void)state;
	targets_start();
	struct pmrep_pmem *local = local_open();
	struct pmrep_mirror_cfg *c = mcfg(0, 10000);
	assert_int_equal(pmrep_mirror_cfg_set_window(c, PMREP_MIRROR_WINDOW_MAX), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	int fd;
	assert_int_equal(pmrep_mirror_get_fd(m, &fd), 0);
	unsigned rs = 4242;
	intptr_t next = 1;	/* the ctx the next completion must carry */
	for (int i = 0; i < NORD; i++) {
		/* scattered, some overlapping: not one step */
		size_t off = (size_t)rand_r(&rs) % (SIZE - 8192);
		size_t len = 1 + (size_t)rand_r(&rs) % 4096;
		fill(local, off, len, i & 0xff);
		assert_int_equal(pmrep_mirror_persist_async(m, off, len,
				(void *)(intptr_t)(i + 1)), 0);
		if (i % 7 == 0) {
			/* a synchronous one among them, in the same order */
			assert_int_equal(pmrep_mirror_persist(m, off, len,
					10000 * func_slow()), 0);
		}
		struct pmrep_mirror_completion cc[16];
		int n;
		assert_int_equal(pmrep_mirror_poll(m, cc, 16, &n), 0);
		for (int j = 0; j < n; j++) {
			assert_int_equal((intptr_t)cc[j].ctx, next);
			assert_int_equal(cc[j].result, 0);
			next++;
		}
	}
	long long deadline = func_now_ms() + 20000LL * func_slow();
	while (next <= NORD) {
		struct pmrep_mirror_completion cc[16];
		int n;
		assert_int_equal(pmrep_mirror_poll(m, cc, 16, &n), 0);
		for (int j = 0; j < n; j++) {
			assert_int_equal((intptr_t)cc[j].ctx, next);
			assert_int_equal(cc[j].result, 0);
			next++;
		}
		if (n == 0) {
			assert_true(func_now_ms() < deadline);
			struct pollfd p = { fd, POLLIN, 0 };
			(void) poll(&p, 1, 50);
		}
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c1, SIGTERM);
	func_child_kill(&c2, SIGTERM);
	func_assert_replica_equals(local, path1);
	func_assert_replica_equals(local, path2);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

#define NMID 3000
#define MREC 512u

/*
 * Under "all", a replica killed with a full window in flight: every request
 * completes once; one that completed with 0 is on the killed replica's file
 * as the kill left it (read before anything touches it again: no false
 * success), and the replica's lag covers every record that is not (its
 * first unconfirmed range on); restarted, it is resynced byte-exact.
 * Records never overlap (a log), so each one's bytes say which it is.
 */
static void
a_replica_killed_mid_pipeline_holds_every_success_and_lags_the_rest(void **state)
{
	(void)state;
	targets_start();
	/* r2 direct as well: killed, not frozen */
	func_child_kill(&c2, SIGKILL);
	const struct func_child_cfg b = { .path = path2, .size = SIZE,
		.key = key, .key_len = sizeof(key) };
	func_child_start(&c2, &b, "0");
	struct pmrep_pmem *local = local_open();
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(0, 10000);
	assert_int_equal(pmrep_mirror_cfg_set_window(c, PMREP_MIRROR_WINDOW_MAX), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	int *res = calloc(NMID, sizeof(int));
	int *seen = calloc(NMID, sizeof(int));
	assert_non_null(res);
	assert_non_null(seen);
	int got = 0;
	char port2[16];
	snprintf(port2, sizeof(port2), "%s", c2.port);
	for (int i = 0; i < NMID; i++) {
		memset(base + (size_t)i * MREC, 1 + (i % 251), MREC);
		assert_int_equal(pmrep_mirror_persist_async(m, (size_t)i * MREC,
				MREC, (void *)(intptr_t)(i + 1)), 0);
		if (i == NMID / 2)
			func_child_kill(&c2, SIGKILL);	/* mid-stream */
		struct pmrep_mirror_completion cc[64];
		int n;
		assert_int_equal(pmrep_mirror_poll(m, cc, 64, &n), 0);
		for (int j = 0; j < n; j++) {
			intptr_t id = (intptr_t)cc[j].ctx;
			seen[id - 1]++;
			res[id - 1] = cc[j].result;
			got++;
		}
	}
	long long deadline = func_now_ms() + 30000LL * func_slow();
	int fd;
	assert_int_equal(pmrep_mirror_get_fd(m, &fd), 0);
	while (got < NMID) {
		assert_true(func_now_ms() < deadline);
		struct pmrep_mirror_completion cc[64];
		int n;
		assert_int_equal(pmrep_mirror_poll(m, cc, 64, &n), 0);
		for (int j = 0; j < n; j++) {
			intptr_t id = (intptr_t)cc[j].ctx;
			seen[id - 1]++;
			res[id - 1] = cc[j].result;
			got++;
		}
		if (n == 0) {
			struct pollfd p = { fd, POLLIN, 0 };
			(void) poll(&p, 1, 50);
		}
	}
	/* the killed replica's file as the kill left it */
	uint8_t *r2 = func_replica_read(path2, SIZE);
	assert_non_null(r2);
	int ok = 0, failed = 0;
	uint64_t missing = 0;
	for (int i = 0; i < NMID; i++) {
		assert_int_equal(seen[i], 1);
		bool on_r2 = true;
		for (unsigned k = 0; k < MREC; k++)
			if (r2[(size_t)i * MREC + k] != 1 + (i % 251))
				on_r2 = false;
		if (res[i] == 0) {
			ok++;
			assert_true(on_r2);	/* never a false success */
		} else {
			failed++;
			assert_true(res[i] == PMREP_E_CONN_LOST ||
					res[i] == PMREP_E_TIMEOUT);
		}
		if (!on_r2)
			missing += MREC;
	}
	free(r2);
	print_message("%d of %d requests succeeded before the kill (the others failed)\n",
			ok, NMID);
	assert_true(ok > 0);
	assert_true(failed > 0);
	struct pmrep_replica_status st = status(m, 1);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	/* what it lacks is in its lag (regions of 4 KiB: 8 records each) */
	assert_true(st.lag_bytes >= missing);
	/* back: the mirror's recovery resyncs it */
	func_child_start(&c2, &b, port2);
	long long d2 = func_now_ms() + 30000LL * func_slow();
	int ret;
	while ((ret = pmrep_mirror_reconnect(m, 5000 * func_slow())) != 0)
		assert_true(func_now_ms() < d2);
	assert_int_equal(status(m, 1).state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c1, SIGTERM);
	func_child_kill(&c2, SIGTERM);
	func_assert_replica_equals(local, path1);
	func_assert_replica_equals(local, path2);
	free(res);
	free(seen);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-pipe-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	func_child_kill_all();
	return func_rm_rf(dir);
}

int
main(int argc, char *argv[])
{
	func_child_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(quorum_completes_at_k_while_a_frozen_replica_confirms_behind, setup, teardown),
		cmocka_unit_test_setup_teardown(a_replica_past_the_max_lag_is_pulled_ahead_and_resynced, setup, teardown),
		cmocka_unit_test_setup_teardown(under_all_a_frozen_replica_fails_the_persist_by_its_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(many_in_flight_complete_in_submission_order, setup, teardown),
		cmocka_unit_test_setup_teardown(a_replica_killed_mid_pipeline_holds_every_success_and_lags_the_rest, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
