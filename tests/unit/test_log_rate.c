/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_log_rate.c -- PMREP_LOG_RATELIMITED (src/common/log.h): a site a
 * peer can trigger at will writes at most one line per period, and the
 * next line written counts the ones that were not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/testhook.h"

static long long clock_ms = 1000000;
static long long
fake_now(void)
{
	return clock_ms;
}

static int lines;
static char last[512];
static void
sink(enum pmrep_log_level level, const char *file, int line, const char *func,
		const char *msg, void *arg)
{
	(void)level; (void)file; (void)line; (void)func; (void)arg;
	lines++;
	snprintf(last, sizeof(last), "%s", msg);
}

/* one site, called from here: its static state is this site's */
static void
flood_site(int n)
{
	PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "refused request %d", n);
}

static void
one_line_per_period_and_the_next_one_counts_the_rest(void **state)
{
	(void)state;
	pmrep_test_hooks.now_ms = fake_now;
	assert_int_equal(pmrep_log_set_function(sink, NULL), 0);

	for (int i = 0; i < 100; i++)
		flood_site(i);
	assert_int_equal(lines, 1);
	assert_string_equal(last, "refused request 0");
	/* still within the period: nothing */
	clock_ms += PMREP_LOG_RATE_PERIOD_MS - 1;
	flood_site(100);
	assert_int_equal(lines, 1);
	/* the period is over: one line, naming the 100 not written */
	clock_ms += 1;
	flood_site(101);
	assert_int_equal(lines, 2);
	assert_non_null(strstr(last, "refused request 101"));
	assert_non_null(strstr(last, "and 100 more such lines not written since the last"));
	/* a quiet period, then one: no count */
	clock_ms += 10 * PMREP_LOG_RATE_PERIOD_MS;
	flood_site(102);
	assert_int_equal(lines, 3);
	assert_string_equal(last, "refused request 102");

	assert_int_equal(pmrep_log_set_function(NULL, NULL), 0);
	pmrep_test_hooks.now_ms = NULL;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_line_per_period_and_the_next_one_counts_the_rest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
