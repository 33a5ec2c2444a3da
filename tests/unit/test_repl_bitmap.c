/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_bitmap.c -- the out-of-sync region bitmap: marking ranges
 * that straddle regions, runs, clearing, and the lag in bytes with a
 * short last region.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pmrep/base.h>
#include "repl/mirror/bitmap.h"

#define R 4096u

static void
mark_covers_every_region_a_range_touches(void **state)
{
	(void)state;
	struct repl_bitmap b;
	assert_int_equal(repl_bitmap_init(&b, 10 * R, R), 0);
	repl_bitmap_mark(&b, R - 1, 2);		/* straddles regions 0 and 1 */
	assert_true(repl_bitmap_test(&b, 0));
	assert_true(repl_bitmap_test(&b, 1));
	assert_false(repl_bitmap_test(&b, 2));
	assert_int_equal(b.nset, 2);
	repl_bitmap_mark(&b, 0, 1);		/* again: counted once */
	assert_int_equal(b.nset, 2);
	repl_bitmap_mark(&b, 5 * R, 0);		/* empty range: nothing */
	assert_int_equal(b.nset, 2);
	repl_bitmap_mark(&b, 9 * R, 100 * R);	/* clamped to the end */
	assert_true(repl_bitmap_test(&b, 9));
	assert_int_equal(b.nset, 3);
	repl_bitmap_fini(&b);
}

static void
runs_are_found_in_order_and_capped(void **state)
{
	(void)state;
	struct repl_bitmap b;
	size_t first, n;
	assert_int_equal(repl_bitmap_init(&b, 200 * R, R), 0);
	assert_false(repl_bitmap_next_run(&b, 0, 100, &first, &n));
	repl_bitmap_mark(&b, 3 * R, 4 * R);	/* 3..6 */
	repl_bitmap_mark(&b, 130 * R, R);	/* 130, past a whole empty word */
	assert_true(repl_bitmap_next_run(&b, 0, 100, &first, &n));
	assert_int_equal(first, 3);
	assert_int_equal(n, 4);
	assert_true(repl_bitmap_next_run(&b, 0, 2, &first, &n));
	assert_int_equal(n, 2);
	assert_true(repl_bitmap_next_run(&b, 7, 100, &first, &n));
	assert_int_equal(first, 130);
	assert_int_equal(n, 1);
	repl_bitmap_clear_regions(&b, 3, 4);
	repl_bitmap_clear_regions(&b, 130, 1);
	assert_int_equal(b.nset, 0);
	assert_false(repl_bitmap_next_run(&b, 0, 100, &first, &n));
	repl_bitmap_fini(&b);
}

static void
lag_counts_the_short_last_region_by_its_size(void **state)
{
	(void)state;
	struct repl_bitmap b;
	assert_int_equal(repl_bitmap_init(&b, 3 * R + 100, R), 0);
	assert_int_equal(b.nregions, 4);
	assert_int_equal(repl_bitmap_dirty_bytes(&b), 0);
	repl_bitmap_mark(&b, 0, 1);
	assert_int_equal(repl_bitmap_dirty_bytes(&b), R);
	repl_bitmap_mark_all(&b);
	assert_int_equal(repl_bitmap_dirty_bytes(&b), 3 * R + 100);
	uint64_t off, len;
	repl_bitmap_range(&b, 2, 2, &off, &len);
	assert_int_equal(off, 2 * R);
	assert_int_equal(len, R + 100);
	repl_bitmap_fini(&b);
}

static void
init_refuses_a_region_size_not_a_power_of_two(void **state)
{
	(void)state;
	struct repl_bitmap b;
	assert_int_equal(repl_bitmap_init(&b, 10 * R, 3000), PMREP_E_INVAL);
	assert_int_equal(repl_bitmap_init(&b, 0, R), PMREP_E_INVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mark_covers_every_region_a_range_touches),
		cmocka_unit_test(runs_are_found_in_order_and_capped),
		cmocka_unit_test(lag_counts_the_short_last_region_by_its_size),
		cmocka_unit_test(init_refuses_a_region_size_not_a_power_of_two),
	};
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
