/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_position.c -- pmrep_position_compare: a copy is never more current
 * than itself (a writer's own log vouches for its whole run, more than
 * the position it may hold of a completed persist), while against a
 * replica of its run that it is ahead of it still is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <pmrep/repl.h>

/* a tracked run of generation 3 by primary 0x77 from sequence 1 << 40,
 * recorded through `seq` */
static struct pmrep_replica_position
tracked(uint64_t seq, uint32_t flags)
{
	struct pmrep_replica_position p;
	memset(&p, 0, sizeof(p));
	p.generation = 3;
	p.owner = 0x77;
	p.seq = seq;
	p.run_generation = 3;
	p.run_owner = 0x77;
	p.run_floor = 1ull << 40;
	p.fence_generation = 3;
	p.flags = PMREP_POSITION_F_TRACKED | flags;
	return p;
}

static void
a_copy_is_as_current_as_itself(void **state)
{
	(void)state;
	/* a dead writer's own log, a replica of its run, a clean close */
	struct pmrep_replica_position w = tracked((1ull << 40) + 10,
			PMREP_POSITION_F_PRIMARY);
	struct pmrep_replica_position r = tracked((1ull << 40) + 10, 0);
	struct pmrep_replica_position c = tracked((1ull << 40) + 10,
			PMREP_POSITION_F_RUN_CLOSED | PMREP_POSITION_F_CONSISTENT);
	assert_int_equal(pmrep_position_compare(&w, &w), 0);
	struct pmrep_replica_position w2 = w;
	assert_int_equal(pmrep_position_compare(&w, &w2), 0);
	assert_int_equal(pmrep_position_compare(&r, &r), 0);
	assert_int_equal(pmrep_position_compare(&c, &c), 0);
}

static void
the_writer_s_log_is_still_ahead_of_its_replica(void **state)
{
	(void)state;
	struct pmrep_replica_position w = tracked((1ull << 40) + 10,
			PMREP_POSITION_F_PRIMARY);
	struct pmrep_replica_position r = tracked((1ull << 40) + 4, 0);
	assert_int_equal(pmrep_position_compare(&w, &r), 1);
	assert_int_equal(pmrep_position_compare(&r, &w), -1);
	assert_int_equal(pmrep_position_compare(NULL, &w), PMREP_E_INVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_copy_is_as_current_as_itself),
		cmocka_unit_test(the_writer_s_log_is_still_ahead_of_its_replica),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
