/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_psn.c -- the persist sequence
 * (pmrep_mirror_cfg_set_persist_seq): every replica durably records the
 * sequence of the newest persist it holds, so that after the primary is
 * gone the most current replica can be named from the replicas alone.
 *  - each completed persist's sequence is on every replica that confirmed
 *    it (all), and it only grows;
 *  - under quorum 1 of 2 with one replica frozen mid-stream and both
 *    targets then killed (no clean close anywhere), the replica showing
 *    the higher sequence holds every completed persist, and the other one
 *    shows less: the sequences tell which replica to promote;
 *  - a new attach clears it (the next mirror's sequences are its own, and
 *    larger: they begin at the record's high-water mark, not at the clock);
 *    off (the default) nothing is recorded.
 */
#include <fcntl.h>
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

#define SIZE (1u << 20)
#define REC 4096u

static const uint8_t key[32] = "test-key-psn-0123456789-abcdefgh";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x95, 0x11, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128], lpath[256], path[2][256];
static struct func_child tg[2];

static void
serve(unsigned i)
{
	struct func_child_cfg cfg = { .path = path[i], .size = SIZE,
		.key = key, .key_len = sizeof(key) };
	func_child_start(&tg[i], &cfg, "0");
}

static struct pmrep_mirror_cfg *
mcfg(unsigned n, unsigned quorum, bool psn)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(),
				tg[i].port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(c, quorum), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 2000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 50, 200), 0);
	if (psn)
		assert_int_equal(pmrep_mirror_cfg_set_persist_seq(c, true), 0);
	return c;
}

static uint64_t
psn_of(unsigned i)
{
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path[i], &info), 0);
	return info.last_persist_seq;
}

static uint64_t
mirror_psn(struct pmrep_mirror *m)
{
	uint64_t psn = 1;
	assert_int_equal(pmrep_mirror_get_persist_seq(m, &psn), 0);
	return psn;
}

/* record k: REC bytes at k * REC, its pattern */
static void
record(struct pmrep_pmem *local, unsigned k, unsigned round)
{
	uint8_t *p = (uint8_t *)pmrep_pmem_get_address(local) + (size_t)k * REC;
	for (unsigned i = 0; i < REC; i++)
		p[i] = (uint8_t)(k * 7 + i * 13 + round);
}

static void
every_completed_persist_s_sequence_is_on_the_replicas_that_confirmed_it(void **state)
{
	(void)state;
	serve(0);
	serve(1);
	struct pmrep_pmem *local = NULL;
	assert_int_equal(pmrep_pmem_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	struct pmrep_mirror_cfg *c = mcfg(2, 0, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	/* the mechanism: GPSPM on every replica */
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.method, PMREP_MIRROR_METHOD_GPSPM);
	assert_int_equal(mirror_psn(m), 0);	/* nothing completed yet */
	uint64_t prev = 0;
	for (unsigned k = 0; k < 32; k++) {
		record(local, k, 1);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
		uint64_t psn = mirror_psn(m);
		assert_true(psn > prev);
		/* "all": both confirmed it, both hold its sequence durably */
		assert_true(psn_of(0) >= psn);
		assert_true(psn_of(1) >= psn);
		prev = psn;
	}
	/* a clean close keeps the position (the newest step) and marks
	 * the copy complete as of it; the next mirror's attach (a COMMIT)
	 * never changes a copy's position (PROTOCOL.md "Position"); its
	 * steps are of the next epoch -- the record's high-water mark, no
	 * clock -- so they compare above every step of the first run */
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	uint64_t before = psn_of(0);
	assert_true(before >= prev);
	assert_int_equal(psn_of(1), before);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	assert_int_equal(psn_of(0), before);
	assert_int_equal(psn_of(1), before);
	record(local, 40, 2);
	assert_int_equal(pmrep_mirror_persist(m, 40 * REC, REC, 5000 * func_slow()), 0);
	assert_true(mirror_psn(m) > before);
	assert_int_equal(mirror_psn(m) >> 40, (before >> 40) + 1);
	assert_true(psn_of(0) >= mirror_psn(m));
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	pmrep_mirror_cfg_delete(&c);

	/* per-step sequence off (the default): no step records one, the
	 * methods are not forced; the clean close records the newest */
	uint64_t closed = psn_of(0);
	c = mcfg(2, 0, false);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	record(local, 41, 3);
	assert_int_equal(pmrep_mirror_persist(m, 41 * REC, REC, 5000 * func_slow()), 0);
	assert_int_equal(mirror_psn(m), 0);
	assert_int_equal(psn_of(0), closed);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(psn_of(0) >> 40, (closed >> 40) + 1);
	pmrep_mirror_cfg_delete(&c);
	func_child_kill(&tg[0], SIGTERM);
	func_child_kill(&tg[1], SIGTERM);
	assert_int_equal(pmrep_pmem_close(&local), 0);
}

static void
the_higher_sequence_names_the_replica_that_holds_every_completed_persist(void **state)
{
	(void)state;
	serve(0);
	serve(1);
	struct pmrep_pmem *local = NULL;
	assert_int_equal(pmrep_pmem_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	struct pmrep_mirror_cfg *c = mcfg(2, 1, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	for (unsigned k = 0; k < 64; k++) {
		record(local, k, 1);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	uint64_t shared = mirror_psn(m);
	/* both confirmed all of it (quorum 1 completes at the first) */
	func_mirror_wait_in_sync(m, 2);
	/* replica 1 stops answering: quorum 1 goes on with replica 0 */
	func_child_freeze(&tg[1]);
	for (unsigned k = 64; k < 128; k++) {
		record(local, k, 1);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	uint64_t last = mirror_psn(m);
	assert_true(last > shared);
	/* the primary and both targets are gone, nothing closed cleanly */
	func_child_kill(&tg[0], SIGKILL);
	func_child_kill(&tg[1], SIGKILL);
	(void) pmrep_mirror_delete(&m);
	pmrep_mirror_cfg_delete(&c);
	uint64_t p0 = psn_of(0), p1 = psn_of(1);
	print_message("persist sequences: last completed %llu, replica 0 %llu, replica 1 %llu\n",
			(unsigned long long)last, (unsigned long long)p0,
			(unsigned long long)p1);
	/* the most current one by its sequence holds every completed
	 * persist; the frozen one shows less */
	assert_true(p0 >= last);
	assert_true(p1 < last);
	assert_true(p1 >= shared);	/* it confirmed those before the freeze */
	uint8_t *r0 = func_replica_read(path[0], SIZE);
	assert_memory_equal(r0, pmrep_pmem_get_address(local), 128 * REC);
	free(r0);
	assert_int_equal(pmrep_pmem_close(&local), 0);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-psn-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(lpath, sizeof(lpath), "%s/log", dir);
	snprintf(path[0], sizeof(path[0]), "%s/r0", dir);
	snprintf(path[1], sizeof(path[1]), "%s/r1", dir);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	func_child_kill_all();
	return func_rm_rf(dir);
}

/*
 * the writer's log restored from an old copy (a backup of run 1) while
 * the replicas hold run 2's persists: the next run must not overwrite
 * them with the older log (a full resync would): the attach refuses the
 * replicas more current than the log (PROTOCOL.md "Position"), and their
 * data stays as run 2 left it
 */
static void
a_log_restored_from_an_old_copy_does_not_overwrite_newer_replicas(void **state)
{
	(void)state;
	serve(0);
	serve(1);
	struct pmrep_pmem *log = NULL;
	assert_int_equal(pmrep_log_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &log), 0);
	struct pmrep_mirror_cfg *c = mcfg(2, 0, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(log, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	for (unsigned k = 0; k < 8; k++) {
		record(log, k, 1);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	/* the backup of run 1's log (header and data) */
	size_t whole = SIZE + PMREP_REPLICA_DATA_OFFSET;
	uint8_t *backup = malloc(whole);
	assert_non_null(backup);
	int fd = open(lpath, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, backup, whole, 0), (ssize_t)whole);
	close(fd);
	/* run 2 */
	assert_int_equal(pmrep_log_open(lpath, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	assert_int_equal(pmrep_mirror_new(log, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	for (unsigned k = 0; k < 8; k++) {
		record(log, k, 2);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	uint8_t *run2 = malloc(SIZE);
	assert_non_null(run2);
	memcpy(run2, pmrep_pmem_get_address(log), SIZE);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	/* the log restored from the backup; run 3 on it */
	func_write_file(lpath, backup, whole);
	assert_int_equal(pmrep_log_open(lpath, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 1500 * func_slow()), 0);
	int ret = pmrep_mirror_new(log, c, &m);
	if (ret == 0) {
		/* started: no replica may be in sync with the old log */
		struct pmrep_replica_status st;
		for (unsigned i = 0; i < 2; i++) {
			assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
			assert_int_not_equal(st.state, PMREP_REPLICA_IN_SYNC);
		}
		(void) pmrep_mirror_delete(&m);
	}
	assert_int_equal(pmrep_pmem_close(&log), 0);
	func_child_kill(&tg[0], SIGTERM);
	func_child_kill(&tg[1], SIGTERM);
	for (unsigned i = 0; i < 2; i++) {
		uint8_t *r = func_replica_read(path[i], SIZE);
		assert_memory_equal(r, run2, SIZE);
		free(r);
	}
	free(run2);
	free(backup);
	pmrep_mirror_cfg_delete(&c);
}

int
main(int argc, char *argv[])
{
	func_child_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_completed_persist_s_sequence_is_on_the_replicas_that_confirmed_it, setup, teardown),
		cmocka_unit_test_setup_teardown(the_higher_sequence_names_the_replica_that_holds_every_completed_persist, setup, teardown),
		cmocka_unit_test_setup_teardown(a_log_restored_from_an_old_copy_does_not_overwrite_newer_replicas, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
