/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_vec.c -- the pieces of a vectored persist and of a read-only
 * log that run without a replica:
 *  - mirror_req_vec (src/repl/mirror/mirror_pipe.c): a vector is checked whole
 *    (a count of 0 or above PMREP_MIRROR_PERSISTV_MAX, a NULL: INVAL; any
 *    range outside the mapping: RANGE, with nothing allocated), its empty
 *    ranges dropped, the rest sorted and overlapping or adjoining ones
 *    merged; one range left is a plain request (nv 0), none a request of
 *    length 0; the span is the merged ranges' span; an allocation failure
 *    is NOMEM;
 *  - pmrep_log_open with PMREP_LOG_RDONLY of a file of mode 0444 (the
 *    open is O_RDONLY; run as root the mode is not checked -- that the
 *    mapping is read-only, test_repl_log_ro shows by a store's fault) and
 *    the header read from the handle, while the file stays byte-identical.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/base.h>
#include <pmrep/repl.h>
#include "mocks.h"
#include "repl/mirror/mirror_int.h"

#define MSIZE (1u << 20)

static struct pmrep_mirror m = { .size = MSIZE };

static struct async_req *
vec_ok(const struct pmrep_range *v, unsigned n)
{
	struct async_req *q = NULL;
	assert_int_equal(mirror_req_vec(&m, v, n, &q), 0);
	assert_non_null(q);
	return q;
}

static void
a_vector_is_checked_whole(void **state)
{
	(void)state;
	struct pmrep_range v[PMREP_MIRROR_PERSISTV_MAX + 1];
	for (unsigned i = 0; i < PMREP_MIRROR_PERSISTV_MAX + 1; i++)
		v[i] = (struct pmrep_range){ (size_t)i * 8192, 100 };
	struct async_req *q = (struct async_req *)(uintptr_t)1;
	assert_int_equal(mirror_req_vec(&m, v, 0, &q), PMREP_E_INVAL);
	assert_int_equal(mirror_req_vec(&m, v, PMREP_MIRROR_PERSISTV_MAX + 1, &q),
			PMREP_E_INVAL);
	assert_int_equal(mirror_req_vec(&m, NULL, 1, &q), PMREP_E_INVAL);
	/* one bad range anywhere: RANGE */
	const struct pmrep_range bad[] = { { MSIZE, 1 }, { MSIZE - 1, 2 },
		{ MSIZE + 1, 0 }, { 1, SIZE_MAX }, { SIZE_MAX, 1 } };
	for (unsigned b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
		for (unsigned at = 0; at < 3; at++) {
			struct pmrep_range w[3] = { { 0, 10 }, { 100, 10 }, { 200, 10 } };
			w[at] = bad[b];
			assert_int_equal(mirror_req_vec(&m, w, 3, &q), PMREP_E_RANGE);
		}
	/* nothing was handed out */
	assert_ptr_equal(q, (struct async_req *)(uintptr_t)1);
	/* the edges are in */
	const struct pmrep_range edge[] = { { MSIZE - 1, 1 }, { 0, 1 }, { MSIZE, 0 } };
	q = vec_ok(edge, 3);
	assert_int_equal(q->nv, 2);
	assert_int_equal(q->off, 0);
	assert_int_equal(q->len, MSIZE);
	free(q);
	/* the allocation fails: NOMEM */
	mock_fail("calloc", 1, ENOMEM);
	q = NULL;
	assert_int_equal(mirror_req_vec(&m, edge, 2, &q), PMREP_E_NOMEM);
	assert_null(q);
}

static void
ranges_are_sorted_and_merged(void **state)
{
	(void)state;
	/* out of order; 300..400 overlaps 350..500, 500..600 adjoins it;
	 * 1000..1010 alone; the empty ones go */
	const struct pmrep_range v[] = {
		{ 1000, 10 }, { 500, 100 }, { 7, 0 }, { 300, 100 }, { 350, 150 },
		{ 4096, 0 }, { 20, 5 },
	};
	struct async_req *q = vec_ok(v, 7);
	assert_int_equal(q->nv, 3);
	assert_int_equal(q->v[0].offset, 20);
	assert_int_equal(q->v[0].length, 5);
	assert_int_equal(q->v[1].offset, 300);
	assert_int_equal(q->v[1].length, 300);
	assert_int_equal(q->v[2].offset, 1000);
	assert_int_equal(q->v[2].length, 10);
	assert_int_equal(q->off, 20);
	assert_int_equal(q->len, 990);
	assert_int_equal(q->deadline, -1);
	assert_int_equal(q->step, 0);
	free(q);
	/* a range inside another */
	const struct pmrep_range in[] = { { 100, 1000 }, { 200, 10 }, { 5000, 1 } };
	q = vec_ok(in, 3);
	assert_int_equal(q->nv, 2);
	assert_int_equal(q->v[0].offset, 100);
	assert_int_equal(q->v[0].length, 1000);
	free(q);
	/* all merge into one: a plain request of that range */
	const struct pmrep_range one[] = { { 4096, 4096 }, { 0, 4096 }, { 8192, 1 } };
	q = vec_ok(one, 3);
	assert_int_equal(q->nv, 0);
	assert_int_equal(q->off, 0);
	assert_int_equal(q->len, 8193);
	free(q);
	/* all empty: length 0 (a no-op for the callers) */
	const struct pmrep_range none[] = { { 5, 0 }, { MSIZE, 0 } };
	q = vec_ok(none, 2);
	assert_int_equal(q->nv, 0);
	assert_int_equal(q->len, 0);
	free(q);
	/* 64 disjoint ranges stay 64 */
	struct pmrep_range many[PMREP_MIRROR_PERSISTV_MAX];
	for (unsigned i = 0; i < PMREP_MIRROR_PERSISTV_MAX; i++)
		many[i] = (struct pmrep_range){
			(size_t)(PMREP_MIRROR_PERSISTV_MAX - 1 - i) * 100, 50 };
	q = vec_ok(many, PMREP_MIRROR_PERSISTV_MAX);
	assert_int_equal(q->nv, PMREP_MIRROR_PERSISTV_MAX);
	for (unsigned i = 0; i < PMREP_MIRROR_PERSISTV_MAX; i++)
		assert_int_equal(q->v[i].offset, (size_t)i * 100);
	free(q);
}

static char dir[64], path[128];

static void
a_read_only_open_needs_no_write_permission(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-vec-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/log", dir);
	struct pmrep_pmem *log = NULL;
	assert_int_equal(pmrep_log_open(path, PMREP_PMEM_CREATE, MSIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &log), 0);
	memset(pmrep_pmem_get_address(log), 0x3c, 4096);
	assert_int_equal(pmrep_pmem_persist(log, pmrep_pmem_get_address(log),
			4096), 0);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	assert_int_equal(chmod(path, 0444), 0);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	uint8_t *before = malloc(MSIZE + 4096), *after = malloc(MSIZE + 4096);
	assert_non_null(before);
	assert_non_null(after);
	assert_int_equal(pread(fd, before, MSIZE + 4096, 0), MSIZE + 4096);
	assert_int_equal(pmrep_log_open(path, PMREP_LOG_RDONLY, MSIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &log), 0);
	const uint8_t *d = pmrep_pmem_get_address(log);
	assert_int_equal(d[0], 0x3c);
	assert_int_equal(d[4095], 0x3c);
	assert_int_equal(d[4096], 0);
	uint8_t u[PMREP_UUID_SIZE], nil[PMREP_UUID_SIZE] = { 0 };
	uint64_t g = 7;
	assert_int_equal(pmrep_log_get_uuid(log, u), 0);
	assert_memory_equal(u, nil, sizeof(u));
	assert_int_equal(pmrep_log_get_generation(log, &g), 0);
	assert_int_equal(g, 0);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	assert_int_equal(pread(fd, after, MSIZE + 4096, 0), MSIZE + 4096);
	assert_memory_equal(after, before, MSIZE + 4096);
	close(fd);
	free(before);
	free(after);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_vector_is_checked_whole),
		cmocka_unit_test(ranges_are_sorted_and_merged),
		cmocka_unit_test(a_read_only_open_needs_no_write_permission),
	};
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
