/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_cfg.c -- bad values given to the replication layer's
 * configuration, found by trying to break it: each is refused with
 * PMREP_E_INVAL and a log line, none wraps around.
 *  - a data size so large that data size + 4096 wraps (pmrep-target
 *    --size -1 used to serve a 4095-byte file as 2^64 - 1 data bytes,
 *    registering the whole address space above the mapping);
 *  - ports outside 0..65535 or not decimal ("70000" used to listen on
 *    4464), and port 0 for a replica to connect to;
 *  - the same replica twice in a mirror (each attach took the target from
 *    the other: every persist failed).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pmrep/repl.h>

static void
target_data_size_that_would_wrap_the_file_size_is_refused(void **state)
{
	(void)state;
	struct pmrep_target_cfg *cfg = NULL;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	/* 2^64 - 1 (what "--size -1" parsed to): 4096 + it wraps to 4095 */
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, UINT64_MAX, true),
			PMREP_E_INVAL);
	/* 2^64 - 4096: the file size would wrap to 0 */
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg,
			UINT64_MAX - PMREP_REPLICA_DATA_OFFSET + 1, true),
			PMREP_E_INVAL);
	/* one byte more than a file (off_t) can hold with its header */
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg,
			(uint64_t)INT64_MAX - PMREP_REPLICA_DATA_OFFSET + 1, false),
			PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "data size"));
	/* the largest a file can hold still configures (and 0 without create) */
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg,
			(uint64_t)INT64_MAX - PMREP_REPLICA_DATA_OFFSET, true), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, 0, false), 0);
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);
}

static void
target_port_outside_0_to_65535_or_not_decimal_is_refused(void **state)
{
	(void)state;
	struct pmrep_target_cfg *cfg = NULL;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	static const char *const bad[] = {
		"70000", "65536", "99999", "-1", "", "abc", "7204x", " 7204",
		"+7204", "0x10", "1000000000000000000000",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(pmrep_target_cfg_set_address(cfg, "127.0.0.1",
				bad[i]), PMREP_E_INVAL);
		assert_non_null(strstr(pmrep_err_msg(), "port"));
	}
	assert_int_equal(pmrep_target_cfg_set_address(cfg, "", "7204"),
			PMREP_E_INVAL);
	/* 0 is "any free port" for a listener; 65535 is the last one */
	assert_int_equal(pmrep_target_cfg_set_address(cfg, "127.0.0.1", "0"), 0);
	assert_int_equal(pmrep_target_cfg_set_address(cfg, "127.0.0.1", "65535"), 0);
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);
}

static void
mirror_replica_port_must_be_1_to_65535(void **state)
{
	(void)state;
	struct pmrep_mirror_cfg *cfg = NULL;
	assert_int_equal(pmrep_mirror_cfg_new(&cfg), 0);
	static const char *const bad[] = { "0", "70000", "-1", "", "x", "72 04" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1",
				bad[i]), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "", "7204"),
			PMREP_E_INVAL);
	/* none of the refused ones took a slot */
	char port[8];
	for (int i = 0; i < PMREP_MIRROR_MAX_REPLICAS; i++) {
		snprintf(port, sizeof(port), "%d", 7204 + i);
		assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1",
				port), 0);
	}
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", "7300"),
			PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
}

static void
mirror_same_replica_twice_is_refused(void **state)
{
	(void)state;
	/* the second attach took the target from the first on every
	 * (re)connect: mirror_new succeeded, every persist failed */
	struct pmrep_mirror_cfg *cfg = NULL;
	assert_int_equal(pmrep_mirror_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", "7204"), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", "7204"),
			PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "already"));
	/* another port or host is another replica */
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", "7205"), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.2", "7204"), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(target_data_size_that_would_wrap_the_file_size_is_refused),
		cmocka_unit_test(target_port_outside_0_to_65535_or_not_decimal_is_refused),
		cmocka_unit_test(mirror_replica_port_must_be_1_to_65535),
		cmocka_unit_test(mirror_same_replica_twice_is_refused),
	};
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
