/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_persistv.c -- vectored persists (pmrep_mirror_persistv,
 * pmrep_mirror_persistv_async) over the provider under test (tcp on
 * loopback here).
 * Proves:
 *  - scattered ranges of one vector land byte-identical on the replica,
 *    read from its file after each call, by every method (the replica's
 *    default, GPSPM, GPSPM through a staging buffer), and the whole
 *    mapping equals the replica at the end;
 *  - a vector with one range outside the mapping returns PMREP_E_RANGE
 *    and writes nothing: the replica's bytes and the position unchanged,
 *    none of its ranges posted (not even the good ones); bad counts are
 *    PMREP_E_INVAL; a vector of empty ranges is a no-op;
 *  - the position advances by exactly one step per vector
 *    (pmrep_mirror_get_persist_seq and the replica's header,
 *    pmrep_replica_read_position), whatever its number of ranges;
 *  - asynchronous vectors complete exactly once, in submission order with
 *    the single-range requests around them, each with 0 and its span; with
 *    the target frozen while full vectors queue (GPSPM: 64 entries each
 *    against 128 credits) they wait for room instead of failing the
 *    replica, which stays in sync;
 *  - under quorum 1 of 2 with one replica frozen, full vectors complete by
 *    the other; the frozen one is pulled ahead, not waited for, and is
 *    resynced to equal the mapping once thawed.
 */
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (2u << 20)

static const uint8_t key[32] = "test-key-persistv-0123456789-abc";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x77, 0x17, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128], lpath[256], rpath[256];
static struct func_child tg;

static void
serve(bool staging)
{
	struct func_child_cfg cfg = { .path = rpath, .size = SIZE,
		.key = key, .key_len = sizeof(key), .staging = staging };
	func_child_start(&tg, &cfg, "0");
}

static struct pmrep_mirror_cfg *
mcfg(bool gpspm, bool psn)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), tg.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_region_size(c, 4096), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 5000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_force_gpspm(c, gpspm), 0);
	if (psn)
		assert_int_equal(pmrep_mirror_cfg_set_persist_seq(c, true), 0);
	return c;
}

static struct pmrep_pmem *
local_open(void)
{
	struct pmrep_pmem *p = NULL;
	assert_int_equal(pmrep_pmem_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	return p;
}

static uint64_t
mirror_psn(struct pmrep_mirror *m)
{
	uint64_t psn = 1;
	assert_int_equal(pmrep_mirror_get_persist_seq(m, &psn), 0);
	return psn;
}

/* n scattered ranges (random offsets and lengths, some overlapping, in
 * no order), filled with new bytes in the mapping */
static void
scatter(uint8_t *base, struct pmrep_range *v, unsigned n, unsigned *rs)
{
	for (unsigned i = 0; i < n; i++) {
		v[i].length = 1 + (size_t)rand_r(rs) % 3000;
		v[i].offset = (size_t)rand_r(rs) % (SIZE - v[i].length);
		for (size_t j = 0; j < v[i].length; j++)
			base[v[i].offset + j] = (uint8_t)rand_r(rs);
	}
}

/* every range of v holds on the replica what the mapping holds */
static void
assert_ranges_on_replica(const uint8_t *base, const struct pmrep_range *v,
		unsigned n)
{
	uint8_t *r = func_replica_read(rpath, SIZE);
	for (unsigned i = 0; i < n; i++)
		assert_memory_equal(r + v[i].offset, base + v[i].offset,
				v[i].length);
	free(r);
}

static void
scattered(bool staging, bool gpspm)
{
	serve(staging);
	struct pmrep_pmem *local = local_open();
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(gpspm, false);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	print_message("staging %d, forced GPSPM %d: method %s\n", staging,
			gpspm, pmrep_mirror_method_str(st.method));
	unsigned rs = 4242u + staging * 2 + gpspm;
	struct pmrep_range v[PMREP_MIRROR_PERSISTV_MAX];
	for (unsigned round = 0; round < 40; round++) {
		unsigned n = 1 + round % PMREP_MIRROR_PERSISTV_MAX;
		if (round == 39)
			n = PMREP_MIRROR_PERSISTV_MAX;
		scatter(base, v, n, &rs);
		assert_int_equal(pmrep_mirror_persistv(m, v, n,
				5000 * func_slow()), 0);
		assert_ranges_on_replica(base, v, n);
	}
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	func_assert_replica_equals(local, rpath);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&tg, SIGTERM);
	func_assert_replica_equals(local, rpath);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	assert_int_equal(unlink(lpath), 0);
	assert_int_equal(unlink(rpath), 0);
	char spath[300];
	snprintf(spath, sizeof(spath), "%s.pmrep-state", lpath);
	(void) unlink(spath);
}

static void
scattered_ranges_land_byte_identical_on_the_replica(void **state)
{
	(void)state;
	scattered(false, false);	/* the replica's own method */
	scattered(false, true);		/* GPSPM: a persist request per range */
	scattered(true, true);		/* GPSPM through the staging buffer */
}

static void
a_vector_with_one_bad_range_writes_nothing(void **state)
{
	(void)state;
	serve(false);
	struct pmrep_pmem *local = local_open();
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(false, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct pmrep_range v[PMREP_MIRROR_PERSISTV_MAX + 1];
	unsigned rs = 99;
	/* something on the replica first */
	scatter(base, v, 8, &rs);
	assert_int_equal(pmrep_mirror_persistv(m, v, 8, 5000 * func_slow()), 0);
	uint64_t psn = mirror_psn(m);
	struct pmrep_replica_position pos0, pos1;
	assert_int_equal(pmrep_replica_read_position(rpath, &pos0), 0);
	uint8_t *before = func_replica_read(rpath, SIZE);

	/* new bytes in good ranges, and one range past the end: in the
	 * middle, or last, or just one byte too long */
	scatter(base, v, 10, &rs);
	const struct pmrep_range bad[] = {
		{ SIZE, 1 }, { SIZE - 10, 11 }, { SIZE + 4096, 0 },
		{ 0, (size_t)-1 },
	};
	for (unsigned b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
		struct pmrep_range w[11];
		memcpy(w, v, sizeof(w[0]) * 10);
		unsigned at = b % 2 ? 10 : 4;
		if (at == 10) {
			w[10] = bad[b];
		} else {
			w[10] = w[4];
			w[4] = bad[b];
		}
		assert_int_equal(pmrep_mirror_persistv(m, w, 11,
				5000 * func_slow()), PMREP_E_RANGE);
		assert_int_equal(pmrep_mirror_persistv_async(m, w, 11, NULL),
				PMREP_E_RANGE);
	}
	/* counts and NULLs */
	assert_int_equal(pmrep_mirror_persistv(m, v, 0, 1000), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_persistv(m, v, PMREP_MIRROR_PERSISTV_MAX + 1,
			1000), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_persistv(m, NULL, 1, 1000), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_persistv(NULL, v, 1, 1000), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_persistv(m, v, 1, -2), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_persistv_async(m, v, 0, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_persistv_async(m, v,
			PMREP_MIRROR_PERSISTV_MAX + 1, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_persistv_async(m, NULL, 1, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_persistv_async(NULL, v, 1, NULL), PMREP_E_INVAL);
	/* nothing came of any of them: no step, no byte on the replica,
	 * no completion */
	struct pmrep_mirror_completion comp[2];
	int got = -1;
	assert_int_equal(pmrep_mirror_poll(m, comp, 2, &got), 0);
	assert_int_equal(got, 0);
	assert_int_equal(mirror_psn(m), psn);
	assert_int_equal(pmrep_replica_read_position(rpath, &pos1), 0);
	assert_int_equal(pos1.seq, pos0.seq);
	uint8_t *after = func_replica_read(rpath, SIZE);
	assert_memory_equal(after, before, SIZE);
	free(after);

	/* empty ranges only: a no-op (no step), sync and async */
	const struct pmrep_range empty[3] = { { 0, 0 }, { 100, 0 }, { SIZE, 0 } };
	assert_int_equal(pmrep_mirror_persistv(m, empty, 3, 1000), 0);
	assert_int_equal(pmrep_mirror_persistv_async(m, empty, 3, (void *)7), 0);
	assert_int_equal(pmrep_mirror_poll(m, comp, 2, &got), 0);
	assert_int_equal(got, 1);
	assert_ptr_equal(comp[0].ctx, (void *)7);
	assert_int_equal(comp[0].result, 0);
	assert_int_equal(comp[0].length, 0);
	assert_int_equal(mirror_psn(m), psn);

	/* the good ranges alone go through */
	assert_int_equal(pmrep_mirror_persistv(m, v, 10, 5000 * func_slow()), 0);
	assert_int_equal(mirror_psn(m), psn + 1);
	assert_ranges_on_replica(base, v, 10);
	free(before);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&tg, SIGTERM);
	func_assert_replica_equals(local, rpath);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
}

static void
the_position_advances_by_one_step_per_vector(void **state)
{
	(void)state;
	serve(false);
	struct pmrep_pmem *local = local_open();
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(false, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct pmrep_range v[PMREP_MIRROR_PERSISTV_MAX];
	unsigned rs = 5;
	/* a first persist: the position's base */
	memset(base, 1, 64);
	assert_int_equal(pmrep_mirror_persist(m, 0, 64, 5000 * func_slow()), 0);
	uint64_t psn = mirror_psn(m);
	assert_true(psn > 0);
	const unsigned counts[] = { 2, 3, 17, PMREP_MIRROR_PERSISTV_MAX, 1, 40 };
	for (unsigned i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		scatter(base, v, counts[i], &rs);
		assert_int_equal(pmrep_mirror_persistv(m, v, counts[i],
				5000 * func_slow()), 0);
		assert_int_equal(mirror_psn(m), psn + 1);
		psn++;
		struct pmrep_replica_position pos;
		assert_int_equal(pmrep_replica_read_position(rpath, &pos), 0);
		assert_int_equal(pos.seq, psn);
		assert_ranges_on_replica(base, v, counts[i]);
		/* and a single persist after it: one more */
		memset(base + 100, (int)i, 10);
		assert_int_equal(pmrep_mirror_persist(m, 100, 10, 5000 * func_slow()), 0);
		assert_int_equal(mirror_psn(m), ++psn);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&tg, SIGTERM);
	func_assert_replica_equals(local, rpath);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
}

#define NASYNC 300

/* poll until `want` completions came, checking submission order */
static void
collect_in_order(struct pmrep_mirror *m, int want, int *next,
		const size_t *span_off, const size_t *span_len)
{
	int fd;
	assert_int_equal(pmrep_mirror_get_fd(m, &fd), 0);
	long long deadline = func_now_ms() + 20000LL * func_slow();
	int got = 0;
	while (got < want) {
		struct pmrep_mirror_completion c[16];
		int n = -1;
		assert_int_equal(pmrep_mirror_poll(m, c, 16, &n), 0);
		for (int i = 0; i < n; i++) {
			int id = (int)(intptr_t)c[i].ctx;
			assert_int_equal(id, *next);
			assert_int_equal(c[i].result, 0);
			assert_int_equal(c[i].offset, span_off[id]);
			assert_int_equal(c[i].length, span_len[id]);
			(*next)++;
			got++;
		}
		if (n > 0)
			continue;
		assert_true(func_now_ms() < deadline);
		struct pollfd p = { fd, POLLIN, 0 };
		(void) poll(&p, 1, 100);
	}
}

static void
async(bool gpspm, bool freeze)
{
	serve(false);
	struct pmrep_pmem *local = local_open();
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(gpspm, false);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 1);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	uint64_t resyncs = st.resyncs;
	size_t *so = calloc(NASYNC, sizeof(size_t)), *sl = calloc(NASYNC, sizeof(size_t));
	assert_non_null(so);
	assert_non_null(sl);
	unsigned rs = 31 + gpspm;
	int next = 0, submitted = 0;
	if (freeze)
		func_child_freeze(&tg);
	while (submitted < NASYNC) {
		int id = submitted;
		if (id % 3 == 0) {
			size_t off = (size_t)rand_r(&rs) % (SIZE - 512);
			memset(base + off, id & 0xff, 512);
			so[id] = off;
			sl[id] = 512;
			assert_int_equal(pmrep_mirror_persist_async(m, off, 512,
					(void *)(intptr_t)id), 0);
		} else {
			struct pmrep_range v[PMREP_MIRROR_PERSISTV_MAX];
			/* full vectors while frozen: they must wait for room */
			unsigned n = freeze ? PMREP_MIRROR_PERSISTV_MAX :
				2 + (unsigned)rand_r(&rs) % (PMREP_MIRROR_PERSISTV_MAX - 1);
			/* disjoint, not adjoining: n ranges stay n entries */
			for (unsigned i = 0; i < n; i++) {
				v[i].offset = (size_t)i * (SIZE / PMREP_MIRROR_PERSISTV_MAX) +
					(size_t)rand_r(&rs) % 4096;
				v[i].length = 1 + (size_t)rand_r(&rs) % 2048;
				memset(base + v[i].offset, (id + (int)i) & 0xff,
						v[i].length);
			}
			so[id] = v[0].offset;
			sl[id] = v[n - 1].offset + v[n - 1].length - v[0].offset;
			/* handed over in reverse: the span is the same */
			for (unsigned i = 0; i < n / 2; i++) {
				struct pmrep_range t = v[i];
				v[i] = v[n - 1 - i];
				v[n - 1 - i] = t;
			}
			assert_int_equal(pmrep_mirror_persistv_async(m, v, n,
					(void *)(intptr_t)id), 0);
		}
		submitted++;
		if (id % 50 == 49 && !freeze) {
			/* a synchronous vector behind them all */
			struct pmrep_range w[2] = { { SIZE - 4096, 100 }, { 0, 100 } };
			memset(base + SIZE - 4096, id & 0xff, 100);
			memset(base, id & 0xff, 100);
			assert_int_equal(pmrep_mirror_persistv(m, w, 2,
					5000 * func_slow()), 0);
		}
		if (!freeze && submitted - next >= 64)
			collect_in_order(m, 1, &next, so, sl);
	}
	if (freeze) {
		/* a while frozen: nothing completes, the replica stays */
		struct pmrep_mirror_completion cc[4];
		int n = -1;
		usleep(200 * 1000);
		assert_int_equal(pmrep_mirror_poll(m, cc, 4, &n), 0);
		assert_int_equal(n, 0);
		func_child_thaw(&tg);
	}
	collect_in_order(m, NASYNC - next, &next, so, sl);
	assert_int_equal(next, NASYNC);
	/* never failed, never resynced */
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.resyncs, resyncs);
	func_assert_replica_equals(local, rpath);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&tg, SIGTERM);
	func_assert_replica_equals(local, rpath);
	free(so);
	free(sl);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	assert_int_equal(unlink(lpath), 0);
	assert_int_equal(unlink(rpath), 0);
	char spath[300];
	snprintf(spath, sizeof(spath), "%s.pmrep-state", lpath);
	(void) unlink(spath);
}

static void
async_vectors_complete_in_order_with_single_persists(void **state)
{
	(void)state;
	async(false, false);
	async(true, false);
	async(true, true);	/* GPSPM, full vectors queued while frozen */
}

/*
 * quorum 1 of 2, GPSPM, one replica frozen: full vectors keep completing
 * with 0 by the other one, the frozen one trails and is pulled ahead (its
 * ring cannot take the next vector) instead of holding the pipeline; once
 * thawed it is resynced and equals the mapping
 */
static void
a_frozen_replica_under_a_quorum_does_not_hold_vectors_back(void **state)
{
	(void)state;
	char rpath2[300];
	snprintf(rpath2, sizeof(rpath2), "%s/replica2", dir);
	struct func_child tg2 = { 0 };
	struct func_child_cfg cfg2 = { .path = rpath2, .size = SIZE,
		.key = key, .key_len = sizeof(key) };
	serve(false);
	func_child_start(&tg2, &cfg2, "0");
	struct pmrep_pmem *local = local_open();
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(true, false);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), tg2.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(c, 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 50, 200), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	func_child_freeze(&tg2);
	unsigned rs = 606;
	struct pmrep_range v[PMREP_MIRROR_PERSISTV_MAX];
	for (unsigned round = 0; round < 20; round++) {
		for (unsigned i = 0; i < PMREP_MIRROR_PERSISTV_MAX; i++) {
			v[i].offset = (size_t)i * (SIZE / PMREP_MIRROR_PERSISTV_MAX) +
				(size_t)rand_r(&rs) % 4096;
			v[i].length = 1 + (size_t)rand_r(&rs) % 1024;
			memset(base + v[i].offset, (int)(round + i), v[i].length);
		}
		assert_int_equal(pmrep_mirror_persistv(m, v,
				PMREP_MIRROR_PERSISTV_MAX, 5000 * func_slow()), 0);
		assert_ranges_on_replica(base, v, PMREP_MIRROR_PERSISTV_MAX);
	}
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	assert_int_not_equal(st.state, PMREP_REPLICA_IN_SYNC);
	print_message("the frozen replica: %s (%s)\n",
			pmrep_replica_state_str(st.state),
			pmrep_err_to_str(st.last_error));
	func_child_thaw(&tg2);
	func_mirror_wait_in_sync(m, 2);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&tg, SIGTERM);
	func_child_kill(&tg2, SIGTERM);
	func_assert_replica_equals(local, rpath);
	func_assert_replica_equals(local, rpath2);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-persistv-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(lpath, sizeof(lpath), "%s/log", dir);
	snprintf(rpath, sizeof(rpath), "%s/replica", dir);
	return 0;
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
		cmocka_unit_test_setup_teardown(scattered_ranges_land_byte_identical_on_the_replica, setup, teardown),
		cmocka_unit_test_setup_teardown(a_vector_with_one_bad_range_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(the_position_advances_by_one_step_per_vector, setup, teardown),
		cmocka_unit_test_setup_teardown(async_vectors_complete_in_order_with_single_persists, setup, teardown),
		cmocka_unit_test_setup_teardown(a_frozen_replica_under_a_quorum_does_not_hold_vectors_back, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
