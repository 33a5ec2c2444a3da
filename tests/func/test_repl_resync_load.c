/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_resync_load.c -- a resync under a writer that keeps going
 * (pmrep_mirror_cfg_set_resync_min_rate; docs/PROTOCOL.md "Mirror, resync
 * step"), over the provider under test, two replica targets A and B in
 * child processes. Quorum 1 of 2; the writer persists asynchronously,
 * window 16, 4 KiB at slots spread over the mapping, at a rate relative to
 * what this machine does: measured first with both replicas in sync, then
 * paced at 60 % of it.
 *
 * The replica being resynced is slower than the writer, as on a loaded
 * host: while it resyncs (1 MiB or more left), its target is stopped
 * (SIGSTOP) until the writer has submitted three times what a replica's
 * ring holds (256 entries), or for 300 ms, then runs as long again; and its
 * resync is paced at 16 MiB/s (pmrep_mirror_cfg_set_resync_rate: the 16 MiB
 * mapping in a second of copying; unpaced, on loopback, it copied the
 * whole mapping between two stops and ended before the minimum too). The
 * minimum is then 8 MiB/s (the default's 16, at most half the resync
 * rate). Before the minimum, the persists into regions already copied that
 * found the replica's ring full marked their 64 KiB regions out of sync
 * again -- at every stop, nearly all of those copied -- and the resync
 * never ended: PMREP_TEST_RESYNC_MIN_RATE=0 runs the first test with no
 * minimum, as before it existed, and it fails (B still SYNCING at the
 * bound, most of the mapping out of sync), as long as the writer submits
 * more than about 2000 persists a second while B is resynced.
 *
 * Proves:
 *  - replica B, its target killed and restarted while the writer keeps
 *    going, comes back IN_SYNC within a bound (10 s); the writer's rate
 *    during its resync is printed beside its rate before;
 *  - then A's target is killed (SIGKILL) and the writer's persists are
 *    still acknowledged, by B alone (quorum 1 of 2), none fails, and every
 *    acknowledged write is in B's replica file;
 *  - a persist that waits for the room of a replica being resynced (its
 *    target frozen) is posted at once when that replica fails (its target
 *    killed), long before half of its time;
 *  - one whose replica neither confirms nor fails waits half of its time
 *    at most: the writer gets no error for it, and goes on.
 */
#include <fcntl.h>
#include <inttypes.h>
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

#define SIZE (16u << 20)	/* the mapping: 256 regions of 64 KiB */
#define SLOT 4096u
#define WINDOW 16u
#define RING 256u		/* entries a replica's ring holds (PIPE_RING) */

static const uint8_t key[32] = "test-key-0123456789-abcdefghijkl";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xc7, 0x5e, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128];
static char path_a[256], path_b[256];
static struct func_child ca, cb;
static struct func_child_cfg cfg_a, cfg_b;

static void
targets_start(void)
{
	snprintf(path_a, sizeof(path_a), "%s/a", dir);
	snprintf(path_b, sizeof(path_b), "%s/b", dir);
	cfg_a = (struct func_child_cfg){ .path = path_a, .size = SIZE,
		.key = key, .key_len = sizeof(key) };
	cfg_b = cfg_a;
	cfg_b.path = path_b;
	func_child_start(&ca, &cfg_a, "0");
	func_child_start(&cb, &cfg_b, "0");
}

static long long
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* ---------------------------------------------------------- the writer */

/*
 * Asynchronous persists of one 4 KiB slot each, at random slots, never a
 * slot that is in flight; a slot holds its write's sequence number in its
 * first 8 bytes and the number's low byte in the others. Paced at `rate`
 * persists a second (0: as fast as it goes), at most WINDOW outstanding.
 */
struct writer {
	struct pmrep_mirror *m;
	uint8_t *base;
	size_t nslots;
	uint64_t *acked;	/* per slot: its last acknowledged write (0: none) */
	uint64_t *pending;	/* per slot: its write in flight (0: none) */
	long long *t_sub;	/* per slot: when that one was submitted, ns */
	uint64_t seq;		/* the last submitted */
	unsigned out;		/* outstanding */
	unsigned seed;
	double rate;		/* persists/s, 0: unpaced, < 0: paused */
	long long pace_t0;	/* ns: the pacing's origin */
	uint64_t pace_n;	/* submitted since */
	uint64_t ok, failed;	/* completions */
	int first_err;
	long long t_last;	/* ns: the last completion */
	long long max_gap;	/* ns: the longest time without one (max_gap_on) */
	bool max_gap_on;
	long long max_lat;	/* ns: the slowest acknowledged persist */
	int fd;
	/*
	 * a stalling replica (stall_pid > 0): its target is stopped
	 * (SIGSTOP) while the replica is SYNCING with STALL_LEFT bytes or
	 * more out of sync, each time until the writer submitted STALL_N
	 * persists -- it outruns the replica's ring -- or STALL_MAX_MS
	 * passed, then runs (SIGCONT) as long again
	 */
	pid_t stall_pid;
	unsigned stall_idx;
	bool stopped;
	long long stall_t;	/* ms: stopped or continued then */
	long long run_ms;	/* how long it runs now */
	uint64_t stall_seq;	/* w->seq when stopped */
	unsigned stalls;
};

#define STALL_N (3 * RING)
#define STALL_MAX_MS 300
#define STALL_MIN_MS 20
/* a stopped replica confirms nothing: a resync with this much left cannot
 * end while its target is stopped; one in sync is never stopped (stopped
 * this long it would be pulled ahead, its ring full) */
#define STALL_LEFT (1u << 20)

static void
writer_init(struct writer *w, struct pmrep_mirror *m, struct pmrep_pmem *local)
{
	memset(w, 0, sizeof(*w));
	w->m = m;
	w->base = pmrep_pmem_get_address(local);
	w->nslots = pmrep_pmem_get_size(local) / SLOT;
	w->acked = calloc(w->nslots, sizeof(uint64_t));
	w->pending = calloc(w->nslots, sizeof(uint64_t));
	w->t_sub = calloc(w->nslots, sizeof(long long));
	assert_non_null(w->acked);
	assert_non_null(w->pending);
	assert_non_null(w->t_sub);
	w->seed = 4242;
	w->t_last = now_ns();
	assert_int_equal(pmrep_mirror_get_fd(m, &w->fd), 0);
}

static void
writer_fini(struct writer *w)
{
	free(w->acked);
	free(w->pending);
	free(w->t_sub);
}

static void
writer_pace(struct writer *w, double rate)
{
	w->rate = rate;
	w->pace_t0 = now_ns();
	w->pace_n = 0;
}

static void
submit_one(struct writer *w)
{
	size_t slot;
	do
		slot = (size_t)rand_r(&w->seed) % w->nslots;
	while (w->pending[slot] != 0);
	uint64_t s = ++w->seq;
	uint8_t *p = w->base + slot * SLOT;
	memset(p + 8, (int)(s & 0xff), SLOT - 8);
	memcpy(p, &s, 8);
	w->pending[slot] = s;
	w->t_sub[slot] = now_ns();
	assert_int_equal(pmrep_mirror_persist_async(w->m, slot * SLOT, SLOT,
			(void *)(uintptr_t)(slot + 1)), 0);
	w->out++;
	w->pace_n++;
}

static void
stall_turn(struct writer *w)
{
	long long now = func_now_ms();
	if (w->stopped) {
		if (w->seq - w->stall_seq < STALL_N &&
				now - w->stall_t < STALL_MAX_MS)
			return;
		(void) kill(w->stall_pid, SIGCONT);
		w->stopped = false;
		w->run_ms = now - w->stall_t;
		if (w->run_ms < STALL_MIN_MS)
			w->run_ms = STALL_MIN_MS;
		w->stall_t = now;
		return;
	}
	if (now - w->stall_t < w->run_ms)
		return;
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(w->m, w->stall_idx, &st), 0);
	if (st.state != PMREP_REPLICA_SYNCING || st.lag_bytes < STALL_LEFT)
		return;
	assert_int_equal(kill(w->stall_pid, SIGSTOP), 0);
	w->stopped = true;
	w->stall_t = now;
	w->stall_seq = w->seq;
	w->stalls++;
}

static void
stall_start(struct writer *w, unsigned idx, pid_t pid)
{
	w->stall_pid = pid;
	w->stall_idx = idx;
	w->stopped = false;
	w->stall_t = 0;
	w->run_ms = 0;
	w->stalls = 0;
}

static void
stall_stop(struct writer *w)
{
	if (w->stall_pid > 0 && w->stopped)
		(void) kill(w->stall_pid, SIGCONT);
	w->stall_pid = 0;
	w->stopped = false;
}

/* one turn: submit what the pace allows, take completions, wait a little */
static void
writer_turn(struct writer *w)
{
	if (w->stall_pid > 0)
		stall_turn(w);
	long long now = now_ns();
	uint64_t due = w->rate < 0 ? 0 : UINT64_MAX;
	if (w->rate > 0) {
		due = (uint64_t)((double)(now - w->pace_t0) * w->rate / 1e9);
		if (due > w->pace_n + WINDOW)	/* no burst to catch up */
			w->pace_n = due - WINDOW;
	}
	while (w->out < WINDOW && w->pace_n < due)
		submit_one(w);
	struct pmrep_mirror_completion c[WINDOW];
	int n = 0;
	assert_int_equal(pmrep_mirror_poll(w->m, c, WINDOW, &n), 0);
	/* the state changes, taken (the fd stays readable while one waits;
	 * the test reads the states from the status) */
	struct pmrep_mirror_event ev;
	while (pmrep_mirror_get_event(w->m, &ev) == 0)
		;
	now = now_ns();
	for (int i = 0; i < n; i++) {
		size_t slot = (size_t)(uintptr_t)c[i].ctx - 1;
		assert_true(slot < w->nslots);
		assert_int_not_equal(w->pending[slot], 0);
		if (c[i].result == 0) {
			w->acked[slot] = w->pending[slot];
			w->ok++;
			if (now - w->t_sub[slot] > w->max_lat)
				w->max_lat = now - w->t_sub[slot];
		} else if (w->failed++ == 0) {
			w->first_err = c[i].result;
		}
		w->pending[slot] = 0;
		w->out--;
	}
	if (n > 0) {
		if (w->max_gap_on && now - w->t_last > w->max_gap)
			w->max_gap = now - w->t_last;
		w->t_last = now;
		return;
	}
	/* nothing came: wait for the fd, or until the next persist is due */
	int ms = 5;
	if (w->rate > 0 && w->out < WINDOW) {
		double next = (double)(w->pace_n + 1) * 1e9 / w->rate;
		long long wait = w->pace_t0 + (long long)next - now_ns();
		ms = wait <= 0 ? 0 : (int)(wait / 1000000) + 1;
		if (ms > 5)
			ms = 5;
	}
	struct pollfd p = { w->fd, POLLIN, 0 };
	(void) poll(&p, 1, ms);
}

static void
writer_for(struct writer *w, int ms)
{
	long long until = func_now_ms() + ms;
	while (func_now_ms() < until)
		writer_turn(w);
}

/* persists acknowledged per second over `ms` of writing */
static double
writer_rate_for(struct writer *w, int ms)
{
	uint64_t ok0 = w->ok;
	long long t0 = now_ns();
	writer_for(w, ms);
	return (double)(w->ok - ok0) * 1e9 / (double)(now_ns() - t0);
}

static enum pmrep_replica_state
state_of(struct pmrep_mirror *m, unsigned i)
{
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
	return st.state;
}

/* write until replica i is in `want` (BEHIND counts as IN_SYNC) or `ms`
 * passed: the ms it took, -1 when it was not */
static long long
writer_until(struct writer *w, unsigned i, enum pmrep_replica_state want,
		long long ms)
{
	long long t0 = func_now_ms();
	for (;;) {
		enum pmrep_replica_state st = state_of(w->m, i);
		if (st == want || (want == PMREP_REPLICA_IN_SYNC &&
				st == PMREP_REPLICA_BEHIND))
			return func_now_ms() - t0;
		if (func_now_ms() - t0 > ms)
			return -1;
		writer_turn(w);
	}
}

/* every outstanding persist completed */
static void
writer_drain(struct writer *w)
{
	long long until = func_now_ms() + 30000LL * func_slow();
	w->rate = -1;		/* paused: nothing more due */
	while (w->out > 0) {
		assert_true(func_now_ms() < until);
		writer_turn(w);
	}
}

/* ------------------------------------------------------------- setup */

/* the resync rate: a resync of the whole mapping takes a second of copying */
#define RESYNC_RATE (16u << 20)

static struct pmrep_mirror_cfg *
mcfg(int timeout_ms)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), ca.port), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), cb.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(c, 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_window(c, WINDOW), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, timeout_ms), 0);
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 20, 100), 0);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 30000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_resync_rate(c, RESYNC_RATE), 0);
	/* a stopped target's process confirms nothing on tcp; on verbs its
	 * device still confirms one-sided writes and flushes: there GPSPM
	 * (the target's process answers each persist) */
	if (!func_is_tcp())
		assert_int_equal(pmrep_mirror_cfg_set_force_gpspm(c, true), 0);
	return c;
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

/*
 * write until replica i has been in sync (IN_SYNC or BEHIND) for `ms` on
 * end: the times it left IN_SYNC meanwhile. Under quorum 1 a replica that
 * trails by a ring's worth of steps is pulled ahead (FAILED, resynced):
 * on a loaded machine either may be, while both are in sync; a fault is
 * injected only with the other one in sync.
 */
static unsigned
writer_in_sync_for(struct writer *w, unsigned i, int ms)
{
	long long until = func_now_ms() + 30000LL * func_slow();
	long long since = func_now_ms();
	unsigned again = 0;
	for (;;) {
		enum pmrep_replica_state st = state_of(w->m, i);
		bool in = st == PMREP_REPLICA_IN_SYNC || st == PMREP_REPLICA_BEHIND;
		if (!in && since >= 0)
			again++;
		if (!in)
			since = -1;
		else if (since < 0)
			since = func_now_ms();
		if (in && func_now_ms() - since >= ms)
			return again;
		if (func_now_ms() > until)
			fail_msg("replica %u not in sync for %d ms on end within %lld ms",
					i, ms, 30000LL * func_slow());
		writer_turn(w);
	}
}

/*
 * both replicas in sync, the writer's unpaced rate measured (*max), then
 * paced at 60 % of it: its rate so (persists/s)
 */
static double
start_paced(struct writer *w, double *max)
{
	(void) writer_in_sync_for(w, 0, 0);
	(void) writer_in_sync_for(w, 1, 0);
	writer_for(w, 300);
	*max = writer_rate_for(w, 1000);
	writer_pace(w, *max * 0.6);
	return writer_rate_for(w, 500);
}

/* B's target killed (A in sync), the writer going on for `outage_ms`,
 * then B's target restarted on its port with the file it left */
static void
b_outage(struct writer *w, int outage_ms)
{
	char port[16];
	snprintf(port, sizeof(port), "%s", cb.port);
	(void) writer_in_sync_for(w, 1, 0);
	(void) writer_in_sync_for(w, 0, 200);
	func_child_kill(&cb, SIGKILL);
	assert_true(writer_until(w, 1, PMREP_REPLICA_FAILED, 10000LL * func_slow()) >= 0);
	writer_for(w, outage_ms);
	func_child_start(&cb, &cfg_b, port);
}

/* ------------------------------------------------------------- tests */

static void
a_resync_under_a_writer_converges_and_the_survivor_holds_every_acknowledged_write(void **state)
{
	(void)state;
	targets_start();
	struct pmrep_pmem *local = local_open();
	struct pmrep_mirror_cfg *c = mcfg(5000 * func_slow());
	/* PMREP_TEST_RESYNC_MIN_RATE: another minimum (0: none, as before
	 * it existed: this test then fails) */
	const char *mr = getenv("PMREP_TEST_RESYNC_MIN_RATE");
	if (mr != NULL && mr[0] != '\0')
		assert_int_equal(pmrep_mirror_cfg_set_resync_min_rate(c,
				strtoull(mr, NULL, 0)), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct writer w;
	writer_init(&w, m, local);
	double max, before = start_paced(&w, &max);
	/* B slower than the writer while it resyncs: its target stalls */
	b_outage(&w, 1000);
	stall_start(&w, 1, atomic_load(&cb.pid));
	long long bound = 10000LL * func_slow();
	long long t0 = func_now_ms();
	long long to_syncing = writer_until(&w, 1, PMREP_REPLICA_SYNCING, bound);
	uint64_t ok0 = w.ok;
	long long t1 = func_now_ms();
	long long to_in_sync = to_syncing < 0 ? -1 :
		writer_until(&w, 1, PMREP_REPLICA_IN_SYNC, bound - (t1 - t0));
	double during = (double)(w.ok - ok0) * 1000.0 / (double)(func_now_ms() - t1 + 1);
	unsigned stalls = w.stalls;
	stall_stop(&w);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	print_message("writer: %.0f persists/s unpaced, %.0f paced (60 %%), %.0f while B resynced "
			"(its target stopped %u times); B: SYNCING %lld ms after its restart, IN_SYNC %lld ms "
			"after that (bound %lld ms in all); now %s, %" PRIu64 " bytes out of sync, %" PRIu64
			" copied by its resyncs\n",
			max, before, during, stalls, to_syncing, to_in_sync, bound,
			pmrep_replica_state_str(st.state), st.lag_bytes,
			st.resync_bytes);
	if (to_syncing < 0 || to_in_sync < 0)
		fail_msg("replica B not back IN_SYNC within %lld ms of its restart", bound);
	assert_int_equal(w.failed, 0);

	/*
	 * A's target killed once B has been in sync for 300 ms: the steps in
	 * flight at B's hand-back, posted while it was being resynced, count
	 * on A only. (Under quorum 1 a replica that trails by a ring's worth
	 * of steps is pulled ahead -- on a loaded machine either may be, B
	 * too: then it is resynced again, and A waits for it.)
	 */
	unsigned again = writer_in_sync_for(&w, 1, 300);
	assert_int_equal(w.failed, 0);
	func_child_kill(&ca, SIGKILL);
	uint64_t ok1 = w.ok;
	writer_for(&w, 1000);
	writer_drain(&w);
	print_message("after A's kill (B out of sync again %u times before it): %" PRIu64 " persists acknowledged in 1 s, %" PRIu64 " failed (the first: %s)\n",
			again, w.ok - ok1, w.failed,
			w.failed ? pmrep_err_to_str(w.first_err) : "none");
	assert_int_equal(w.failed, 0);
	assert_true(w.ok - ok1 >= 50);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&cb, SIGTERM);

	/* every acknowledged write is in B's replica file */
	uint8_t *rb = func_replica_read(path_b, SIZE);
	uint64_t checked = 0;
	for (size_t s = 0; s < w.nslots; s++) {
		if (w.acked[s] == 0)
			continue;
		const uint8_t *p = rb + s * SLOT;
		uint64_t v;
		memcpy(&v, p, 8);
		if (v != w.acked[s])
			fail_msg("slot %zu: B holds write %" PRIu64 ", write %" PRIu64 " was acknowledged last",
					s, v, w.acked[s]);
		for (size_t k = 8; k < SLOT; k++)
			if (p[k] != (uint8_t)(v & 0xff))
				fail_msg("slot %zu: byte %zu is not write %" PRIu64 "'s",
						s, k, v);
		checked++;
	}
	free(rb);
	assert_true(checked > 0);
	/* nothing failed: B holds all of it */
	func_assert_replica_equals(local, path_b);
	writer_fini(&w);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/*
 * B's target killed while the writer pauses but for FREEZE_MISSED
 * persists, and restarted: B misses some regions only (at most 96 of 256:
 * its resync copies them without comparing digests), and its target is
 * frozen once B is SYNCING (a stopped replica confirms nothing: its resync
 * cannot end). Then the writer goes on: its persists into the regions B did
 * not miss go to B too until its ring is full, then wait.
 */
#define FREEZE_MISSED 96

static void
freeze_b_while_syncing(struct writer *w, double rate)
{
	char port[16];
	snprintf(port, sizeof(port), "%s", cb.port);
	(void) writer_in_sync_for(w, 1, 0);
	(void) writer_in_sync_for(w, 0, 200);
	writer_drain(w);	/* and nothing more due */
	/* B confirmed everything (not BEHIND: what it trails would go out
	 * of sync with it) */
	long long until = func_now_ms() + 10000LL * func_slow();
	while (state_of(w->m, 1) != PMREP_REPLICA_IN_SYNC) {
		assert_true(func_now_ms() < until);
		writer_turn(w);
	}
	func_child_kill(&cb, SIGKILL);
	assert_true(writer_until(w, 1, PMREP_REPLICA_FAILED, 10000LL * func_slow()) >= 0);
	for (unsigned i = 0; i < FREEZE_MISSED; i++)
		submit_one(w);
	writer_drain(w);
	func_child_start(&cb, &cfg_b, port);
	assert_true(writer_until(w, 1, PMREP_REPLICA_SYNCING, 10000LL * func_slow()) >= 0);
	func_child_freeze(&cb);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(w->m, 1, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_SYNCING);
	assert_true(st.lag_bytes < SIZE / 2);
	writer_pace(w, rate);
	w->max_gap = 0;
	w->max_gap_on = true;
	w->t_last = now_ns();
}

static void
a_waiting_persist_goes_on_at_once_when_the_replica_fails(void **state)
{
	(void)state;
	targets_start();
	struct pmrep_pmem *local = local_open();
	/* half of the cfg timeout: 10 s */
	struct pmrep_mirror_cfg *c = mcfg(20000 * func_slow());
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct writer w;
	writer_init(&w, m, local);
	double max;
	(void) start_paced(&w, &max);
	freeze_b_while_syncing(&w, max * 0.6);
	/* the writer waits: nothing completes for a while */
	long long t0 = func_now_ms();
	while (func_now_ms() - t0 < 3000LL * func_slow() &&
			(now_ns() - w.t_last) / 1000000 < 500)
		writer_turn(&w);
	long long stuck = (now_ns() - w.t_last) / 1000000;
	assert_int_equal(state_of(m, 1), PMREP_REPLICA_SYNCING);
	/* B's target killed: its conn resets, B fails, the writer goes on */
	func_child_kill(&cb, SIGKILL);
	long long t_kill = now_ns();
	uint64_t ok0 = w.ok;
	while (w.ok == ok0 && now_ns() - t_kill < 10000000000ll * func_slow())
		writer_turn(&w);
	long long resumed = (now_ns() - t_kill) / 1000000;
	writer_for(&w, 300);
	print_message("B frozen while SYNCING: the writer waited %lld ms (half its time: %d); "
			"B killed: the next persist acknowledged %lld ms later; %" PRIu64 " failed (the first: %s)\n",
			stuck, 10000 * func_slow(), resumed, w.failed,
			w.failed ? pmrep_err_to_str(w.first_err) : "none");
	assert_true(stuck >= 500);
	assert_true(resumed < 2000LL * func_slow());
	assert_int_equal(w.failed, 0);
	writer_drain(&w);
	assert_int_equal(w.failed, 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	writer_fini(&w);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
a_persist_waits_half_of_its_time_at_most(void **state)
{
	(void)state;
	targets_start();
	struct pmrep_pmem *local = local_open();
	/* half of the cfg timeout: 1 s; B, frozen, fails at 2 s */
	int timeout_ms = 2000 * func_slow();
	struct pmrep_mirror_cfg *c = mcfg(timeout_ms);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct writer w;
	writer_init(&w, m, local);
	double max;
	(void) start_paced(&w, &max);
	freeze_b_while_syncing(&w, max * 0.6);
	uint64_t ok0 = w.ok;
	w.max_lat = 0;
	/* past the hold's bound, and past B's failure (its oldest entry
	 * unconfirmed for the cfg timeout) */
	int frozen_ms = timeout_ms + timeout_ms / 2 + 500;
	writer_for(&w, frozen_ms);
	func_child_kill(&cb, SIGKILL);
	writer_drain(&w);
	print_message("B frozen while SYNCING for %d ms: %" PRIu64 " persists acknowledged, %" PRIu64
			" failed, the slowest in %lld ms, the longest time without a completion %lld ms (cfg timeout %d ms)\n",
			frozen_ms, w.ok - ok0, w.failed, w.max_lat / 1000000,
			w.max_gap / 1000000, timeout_ms);
	assert_int_equal(w.failed, 0);
	assert_true(w.ok - ok0 > 0);
	/* it waited (B's ring was full: the minimum held it) ... */
	assert_true(w.max_lat / 1000000 >= timeout_ms / 4);
	/* ... half of its time, and the rest of a wait slice at most */
	assert_true(w.max_lat / 1000000 < timeout_ms / 2 + 500LL * func_slow());
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	writer_fini(&w);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-resync-load-XXXXXX");
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
		cmocka_unit_test_setup_teardown(a_resync_under_a_writer_converges_and_the_survivor_holds_every_acknowledged_write, setup, teardown),
		cmocka_unit_test_setup_teardown(a_waiting_persist_goes_on_at_once_when_the_replica_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(a_persist_waits_half_of_its_time_at_most, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
