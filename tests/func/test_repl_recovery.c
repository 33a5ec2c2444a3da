/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_recovery.c -- background recovery of a mirror's replicas over
 * the provider under test (tcp on loopback here, verbs on rxe in the
 * guest): each replica's own thread reconnects a failed replica, resyncs it
 * while the application's persists go on, and hands it back in sync
 * (docs/DESIGN.md "The mirror's threads"). Two replica targets in child
 * processes, killed, restarted or frozen like a host.
 * Proves:
 *  - a killed replica is back IN_SYNC and byte-exact with no call of the
 *    application's but persists and polls; its state changes come as
 *    events on the mirror fd, in order (FAILED with the error, SYNCING,
 *    IN_SYNC), the fd readable while one waits (it may be readable for
 *    other work too: completions, a deadline);
 *  - the back-off is the cfg's (doubling from min to max, in status) and
 *    a successful attach resets it;
 *  - a full resync interleaves with persists all over the data (many into
 *    the chunk in flight) at the cfg resync rate, shows its progress, and
 *    ends byte-exact;
 *  - pmrep_mirror_new returns once k replicas are in sync, with the other
 *    one's first attempt still under way (never failed yet), and the
 *    writer's persists never wait for it.
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
#define BIG (16u << 20)
#define REGION 4096u

static const uint8_t key[32] = "test-key-0123456789-abcdefghijkl";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xc9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128];
static char path1[256], path2[256];
static struct func_child c1, c2;
static struct func_child_cfg cfg1, cfg2;

static void
targets_start(uint64_t size, bool second)
{
	snprintf(path1, sizeof(path1), "%s/r1", dir);
	snprintf(path2, sizeof(path2), "%s/r2", dir);
	cfg1 = (struct func_child_cfg){ .path = path1, .size = size,
		.key = key, .key_len = sizeof(key) };
	cfg2 = (struct func_child_cfg){ .path = path2, .size = size,
		.key = key, .key_len = sizeof(key), .staging = true };
	func_child_start(&c1, &cfg1, "0");
	if (second)
		func_child_start(&c2, &cfg2, "0");
}

static struct pmrep_pmem *
local_open(uint64_t size)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/log", dir);
	struct pmrep_pmem *p = NULL;
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, size,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	return p;
}

static struct pmrep_mirror_cfg *
mcfg(const char *port2, unsigned quorum, int timeout_ms)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), c1.port), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), port2), 0);
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

/* persist something and poll until replica i is in state `want` */
static void
write_until(struct pmrep_mirror *m, struct pmrep_pmem *local, unsigned i,
		enum pmrep_replica_state want, int timeout_ms, unsigned *seed)
{
	long long deadline = func_now_ms() + (long long)timeout_ms * func_slow();
	size_t size = pmrep_pmem_get_size(local);
	while (status(m, i).state != want) {
		assert_true(func_now_ms() < deadline);
		size_t off = (size_t)rand_r(seed) % (size - 4096);
		fill(local, off, 512, rand_r(seed) & 0xff);
		assert_int_equal(pmrep_mirror_persist(m, off, 512,
				5000 * func_slow()), 0);
		struct pmrep_mirror_completion cc[4];
		int n;
		assert_int_equal(pmrep_mirror_poll(m, cc, 4, &n), 0);
		usleep(2000);
	}
}

/* ------------------------------------------------------------- tests */

static void
a_killed_replica_comes_back_in_sync_by_itself_with_events(void **state)
{
	(void)state;
	targets_start(SIZE, true);
	struct pmrep_pmem *local = local_open(SIZE);
	struct pmrep_mirror_cfg *c = mcfg(c2.port, 1, 3000 * func_slow());
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 20, 200), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	unsigned seed = 99;
	/* new returned at the first in sync: both, before anything */
	write_until(m, local, 0, PMREP_REPLICA_IN_SYNC, 20000, &seed);
	write_until(m, local, 1, PMREP_REPLICA_IN_SYNC, 20000, &seed);
	/* the events of the start: drained */
	struct pmrep_mirror_event ev;
	while (pmrep_mirror_get_event(m, &ev) == 0)
		;
	assert_int_equal(pmrep_mirror_get_event(m, &ev), PMREP_E_AGAIN);
	int fd;
	assert_int_equal(pmrep_mirror_get_fd(m, &fd), 0);
	struct pollfd p = { fd, POLLIN, 0 };

	char port2[16];
	snprintf(port2, sizeof(port2), "%s", c2.port);
	func_child_kill(&c2, SIGKILL);
	write_until(m, local, 1, PMREP_REPLICA_FAILED, 20000, &seed);
	/* the fd says an event waits */
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_int_equal(pmrep_mirror_get_event(m, &ev), 0);
	assert_int_equal(ev.replica, 1);
	assert_int_equal(ev.from, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(ev.to, PMREP_REPLICA_FAILED);
	assert_int_not_equal(ev.error, 0);
	assert_int_equal(ev.lost, 0);

	/* back on its port: no reconnect call, persists and polls only */
	func_child_start(&c2, &cfg2, port2);
	write_until(m, local, 1, PMREP_REPLICA_IN_SYNC, 30000, &seed);
	/* what came meanwhile, for replica 1: failed attempts, then
	 * CONNECTED, SYNCING, IN_SYNC -- the last three in this order */
	enum pmrep_replica_state seen[64];
	unsigned ns = 0;
	while (pmrep_mirror_get_event(m, &ev) == 0)
		if (ev.replica == 1 && ns < 64)
			seen[ns++] = ev.to;
	assert_true(ns >= 3);
	assert_int_equal(seen[ns - 1], PMREP_REPLICA_IN_SYNC);
	assert_int_equal(seen[ns - 2], PMREP_REPLICA_SYNCING);
	assert_int_equal(seen[ns - 3], PMREP_REPLICA_CONNECTED);
	struct pmrep_replica_status st = status(m, 1);
	assert_int_equal(st.backoff_ms, 0);	/* reset by the attach */
	assert_int_equal(st.next_retry_ms, -1);
	assert_int_equal(st.lag_bytes, 0);
	assert_int_equal(st.resyncs, 2);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c1, SIGTERM);
	func_child_kill(&c2, SIGTERM);
	func_assert_replica_equals(local, path1);
	func_assert_replica_equals(local, path2);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
the_back_off_doubles_to_its_max_and_shows_in_status(void **state)
{
	(void)state;
	targets_start(SIZE, true);
	struct pmrep_pmem *local = local_open(SIZE);
	struct pmrep_mirror_cfg *c = mcfg(c2.port, 1, 3000 * func_slow());
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 0, 10), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 50, 20), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 25, 400), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	unsigned seed = 7;
	write_until(m, local, 0, PMREP_REPLICA_IN_SYNC, 20000, &seed);
	write_until(m, local, 1, PMREP_REPLICA_IN_SYNC, 20000, &seed);
	func_child_kill(&c2, SIGKILL);	/* refused at once from now on */
	write_until(m, local, 1, PMREP_REPLICA_FAILED, 20000, &seed);
	/* every value seen is one of 25, 50, 100, 200, 400; 400 is reached */
	long long deadline = func_now_ms() + 20000LL * func_slow();
	int last = 0;
	for (;;) {
		struct pmrep_replica_status st = status(m, 1);
		assert_int_equal(st.state, PMREP_REPLICA_FAILED);
		assert_true(st.backoff_ms == 25 || st.backoff_ms == 50 ||
				st.backoff_ms == 100 || st.backoff_ms == 200 ||
				st.backoff_ms == 400);
		assert_true(st.backoff_ms >= last);
		assert_true(st.next_retry_ms >= 0 && st.next_retry_ms <= 400);
		last = st.backoff_ms;
		if (last == 400)
			break;
		assert_true(func_now_ms() < deadline);
		usleep(5000);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c1, SIGTERM);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
a_full_resync_interleaves_with_persists_and_ends_identical(void **state)
{
	(void)state;
	targets_start(BIG, false);
	/* r2's port: taken and let go, so that it is refused until r2 starts */
	func_child_start(&c2, &(struct func_child_cfg){ .path = path2,
			.size = BIG, .key = key, .key_len = sizeof(key),
			.staging = true }, "0");
	char port2[16];
	snprintf(port2, sizeof(port2), "%s", c2.port);
	func_child_kill(&c2, SIGKILL);
	assert_int_equal(unlink(path2), 0);	/* a fresh replica: full resync */
	struct pmrep_pmem *local = local_open(BIG);
	for (size_t off = 0; off < BIG; off += 4096)
		fill(local, off, 4096, (int)(off >> 12) & 0xff);
	struct pmrep_mirror_cfg *c = mcfg(port2, 1, 3000 * func_slow());
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 20, 100), 0);
	/* about 2 s for the 16 MiB, in 128 KiB chunks, 4 in flight (under valgrind, whose
	 * persists are ten times slower, ten times longer) */
	assert_int_equal(pmrep_mirror_cfg_set_resync_rate(c,
			(8u << 20) / (unsigned)func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 60000), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	assert_int_not_equal(status(m, 1).state, PMREP_REPLICA_IN_SYNC);
	func_child_start(&c2, &cfg2, port2);
	unsigned seed = 31337;
	write_until(m, local, 1, PMREP_REPLICA_SYNCING, 20000, &seed);
	/* persists all over the data while it resyncs; its progress */
	long long deadline = func_now_ms() + 60000LL * func_slow();
	bool progress_seen = false;
	unsigned during = 0;
	for (;;) {
		struct pmrep_replica_status st = status(m, 1);
		/* in sync (BEHIND: in sync, confirming behind the quorum) */
		if (st.state == PMREP_REPLICA_IN_SYNC ||
				st.state == PMREP_REPLICA_BEHIND)
			break;
		assert_int_equal(st.state, PMREP_REPLICA_SYNCING);
		assert_true(st.resync_done <= st.resync_total);
		assert_true(st.resync_total - st.resync_done <= BIG);
		if (st.resync_done > 0 && st.resync_rate > 0 &&
				st.resync_eta_ms >= 0)
			progress_seen = true;
		assert_true(func_now_ms() < deadline);
		/* persists all over, faster than the 8 MiB/s resync: it
		 * converges all the same -- a persist into a region copied
		 * already goes to the replica too (after the chunks, on its
		 * QP); one into a region not copied yet only marks it */
		for (int k = 0; k < 8; k++) {
			size_t off = (size_t)rand_r(&seed) % (BIG - 8192);
			size_t len = 1 + (size_t)rand_r(&seed) % 8192;
			fill(local, off, len, rand_r(&seed) & 0xff);
			assert_int_equal(pmrep_mirror_persist(m, off, len,
					5000 * func_slow()), 0);
			during++;
		}
		usleep(1000);
	}
	assert_true(progress_seen);
	/* persists went on while it resynced (many: each loop turn does 8) */
	assert_true(during >= 16);
	wait_in_sync:;
	struct pmrep_replica_status st = status(m, 1);
	if (st.state == PMREP_REPLICA_BEHIND) {
		/* its last confirmations are on their way */
		assert_true(func_now_ms() < deadline);
		struct pmrep_mirror_completion cc[4];
		int n;
		assert_int_equal(pmrep_mirror_poll(m, cc, 4, &n), 0);
		usleep(1000);
		goto wait_in_sync;
	}
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.lag_bytes, 0);
	/* all of it, and little more: what was copied stayed copied */
	assert_true(st.resync_bytes >= BIG);
	print_message("resync copied %llu bytes of %u, %u persists meanwhile\n",
			(unsigned long long)st.resync_bytes, BIG, during);
	/* the regions of the chunk in flight a persist hits, and those a
	 * persist could not be posted to, are copied again: a bounded
	 * share; a resync that re-copied everything persists touch would
	 * not end while the writer is faster than its rate */
	assert_true(st.resync_bytes < 2ull * BIG);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c1, SIGTERM);
	func_child_kill(&c2, SIGTERM);
	func_assert_replica_equals(local, path1);
	func_assert_replica_equals(local, path2);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
new_returns_at_k_in_sync_while_the_other_is_still_tried(void **state)
{
	(void)state;
	targets_start(SIZE, true);
	func_child_freeze(&c2);		/* its connect hangs: no answer */
	struct pmrep_pmem *local = local_open(SIZE);
	struct pmrep_mirror_cfg *c = mcfg(c2.port, 1, 60000);
	/* a failed first attempt would show a back-off of a minute */
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 60000, 60000), 0);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 30000 * func_slow()), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct pmrep_replica_status st = status(m, 1);
	/* its first attempt is still under way: never failed */
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_equal(st.backoff_ms, 0);
	assert_int_equal(st.next_retry_ms, 0);
	assert_int_equal(status(m, 0).state, PMREP_REPLICA_IN_SYNC);
	/* the writer does not wait for it: each persist well within 2 s */
	for (unsigned i = 0; i < 50; i++) {
		fill(local, i * 4096, 4096, 0x30 + (int)i);
		assert_int_equal(pmrep_mirror_persist(m, i * 4096, 4096,
				2000 * func_slow()), 0);
	}
	assert_int_equal(status(m, 1).lag_bytes, SIZE);	/* never attached */
	func_child_thaw(&c2);
	unsigned seed = 5;
	write_until(m, local, 1, PMREP_REPLICA_IN_SYNC, 60000, &seed);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c1, SIGTERM);
	func_child_kill(&c2, SIGTERM);
	func_assert_replica_equals(local, path1);
	func_assert_replica_equals(local, path2);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/* a delete while a recovery thread is attaching to a frozen target (its
 * attempt bounded by a cfg timeout of a minute) ends that attempt at its
 * next wait slice instead of waiting the minute out; the replica it held
 * stays out of sync and is resynced by the next mirror */
static void
delete_does_not_wait_out_an_attach_to_a_frozen_target(void **state)
{
	(void)state;
	targets_start(SIZE, true);
	struct pmrep_pmem *local = local_open(SIZE);
	struct pmrep_mirror_cfg *c = mcfg(c2.port, 1, 60000 * func_slow());
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 20, 100), 0);
	struct pmrep_mirror *m = NULL;
	/* both in sync first (new returns at k = 1), then the second frozen
	 * and failed: its recovery dials it and hangs in the handshake */
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	unsigned seed = 77;
	/* both: new returned once either was (the other may still resync) */
	write_until(m, local, 0, PMREP_REPLICA_IN_SYNC, 30000, &seed);
	write_until(m, local, 1, PMREP_REPLICA_IN_SYNC, 30000, &seed);
	func_child_kill(&c2, SIGKILL);	/* its conns reset: failed at once */
	write_until(m, local, 1, PMREP_REPLICA_FAILED, 30000, &seed);
	func_child_start(&c2, &cfg2, c2.port);
	func_child_freeze(&c2);		/* listening, never answering */
	/* let the back-off (at most 100 ms) pass: the attempt is under way */
	long long until = func_now_ms() + 1000;
	while (func_now_ms() < until) {
		fill(local, 0, 4096, 0x41);
		assert_int_equal(pmrep_mirror_persist(m, 0, 4096,
				5000 * func_slow()), 0);
		usleep(10000);
	}
	struct pmrep_replica_status st = status(m, 1);
	assert_int_not_equal(st.state, PMREP_REPLICA_IN_SYNC);
	long long t0 = func_now_ms();
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	long long took = func_now_ms() - t0;
	print_message("delete took %lld ms with replica 1's attach under way (cfg timeout %d ms)\n",
			took, 60000 * func_slow());
	/* a functional bound, far from the minute it used to wait */
	assert_true(took < 20000LL * func_slow());
	func_child_kill(&c1, SIGTERM);
	func_child_kill(&c2, SIGKILL);
	func_assert_replica_equals(local, path1);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-recovery-XXXXXX");
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
		cmocka_unit_test_setup_teardown(a_killed_replica_comes_back_in_sync_by_itself_with_events, setup, teardown),
		cmocka_unit_test_setup_teardown(the_back_off_doubles_to_its_max_and_shows_in_status, setup, teardown),
		cmocka_unit_test_setup_teardown(a_full_resync_interleaves_with_persists_and_ends_identical, setup, teardown),
		cmocka_unit_test_setup_teardown(new_returns_at_k_in_sync_while_the_other_is_still_tried, setup, teardown),
		cmocka_unit_test_setup_teardown(delete_does_not_wait_out_an_attach_to_a_frozen_target, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
