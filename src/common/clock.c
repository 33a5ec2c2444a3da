/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.c -- the test hooks' storage and the one clock every pmrep
 * deadline is measured with (CLOCK_MONOTONIC unless a test replaced it).
 */
#include <time.h>

#include "testhook.h"

struct pmrep_test_hooks pmrep_test_hooks;

long long
pmrep_now_ms(void)
{
	if (pmrep_test_hooks.now_ms)
		return pmrep_test_hooks.now_ms();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
