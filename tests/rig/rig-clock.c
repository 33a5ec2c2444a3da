/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rig-clock -- print CLOCK_MONOTONIC in milliseconds (three decimals), the
 * clock rig-writer stamps its events with: the nemesis stamps its faults
 * with it (network namespaces share CLOCK_MONOTONIC).
 */
#include <stdio.h>

#include "rig.h"

int
main(void)
{
	printf("%.3f\n", rig_now_ms());
	return 0;
}
