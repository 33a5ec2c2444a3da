/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_log.c -- one on-media layout for every node (issue 14 item 1):
 * a pmrep log file (pmrep_log_open) is the replica layout; the application
 * maps its data area in place and mirrors from it, and pmrep-target serves
 * the same file as a replica. After a "failover" by hand the old replica's
 * file is the new log, and the old log is served as a replica of it --
 * no copy out of either file. Both users take the file's flock: a log in
 * use is refused to a target and the other way round.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (1u << 20)

static const uint8_t key[32] = "test-key-log-0123456789-abcdefgh";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x10, 0x9a, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128], path_a[256], path_b[256];
static struct func_child child;

static void
pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 12));
}

/* a mirror of `local` to the child's target at `generation`: persist it
 * all, then a clean delete (the replica is left consistent) */
static void
mirror_all(struct pmrep_pmem *local, uint64_t generation)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), child.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, generation), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 5000 * func_slow()), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 5000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&c), 0);
}

static void
serve(const char *path)
{
	struct func_child_cfg cfg = { .path = path, .size = SIZE,
		.key = key, .key_len = sizeof(key) };
	func_child_start(&child, &cfg, "0");
}

static void
a_log_is_mirrored_from_in_place_and_the_replica_becomes_the_log(void **state)
{
	(void)state;
	/* node A: the application's log, created and written in place */
	struct pmrep_pmem *a = NULL;
	assert_int_equal(pmrep_log_open(path_a, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &a), 0);
	assert_int_equal(pmrep_pmem_get_size(a), SIZE);
	uint8_t *da = pmrep_pmem_get_address(a);
	pattern(da, SIZE, 1);
	/* its header is the replica layout: unclaimed, of the data size */
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path_a, &info), 0);
	assert_int_equal(info.data_size, SIZE);
	assert_int_equal(info.generation, 0);
	/* node B serves a replica of it, generation 1 */
	serve(path_b);
	mirror_all(a, 1);
	func_child_kill(&child, SIGTERM);
	func_assert_replica_equals(a, path_b);
	/* the data area starts at the header block's end: the bytes of the
	 * file at PMREP_REPLICA_DATA_OFFSET are the mapping's first bytes */
	assert_int_equal(pmrep_pmem_persist(a, da, 64), 0);
	int fd = open(path_a, O_RDONLY);
	assert_true(fd >= 0);
	uint8_t head[64];
	assert_int_equal(pread(fd, head, sizeof(head), PMREP_REPLICA_DATA_OFFSET),
			(ssize_t)sizeof(head));
	close(fd);
	assert_memory_equal(head, da, sizeof(head));
	assert_int_equal(pmrep_pmem_close(&a), 0);

	/* failover by hand: B's replica is opened in place as the log --
	 * what A mirrored is there, no copy out of the file */
	struct pmrep_pmem *b = NULL;
	assert_int_equal(pmrep_log_open(path_b, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &b), 0);
	assert_int_equal(pmrep_pmem_get_size(b), SIZE);
	uint8_t *want = malloc(SIZE);
	assert_non_null(want);
	pattern(want, SIZE, 1);
	assert_memory_equal(pmrep_pmem_get_address(b), want, SIZE);
	assert_int_equal(pmrep_replica_read_info(path_b, &info), 0);
	assert_int_equal(info.generation, 1);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	/* the new primary writes and mirrors to the old log's file, now
	 * served as a replica (generation 2) */
	pattern(pmrep_pmem_get_address(b), SIZE / 2, 2);
	serve(path_a);
	mirror_all(b, 2);
	func_child_kill(&child, SIGTERM);
	func_assert_replica_equals(b, path_a);
	assert_int_equal(pmrep_replica_read_info(path_a, &info), 0);
	assert_int_equal(info.generation, 2);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(pmrep_pmem_close(&b), 0);
	free(want);
}

static void
a_log_in_use_and_a_served_replica_exclude_each_other(void **state)
{
	(void)state;
	struct pmrep_pmem *a = NULL;
	assert_int_equal(pmrep_log_open(path_a, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &a), 0);
	/* a second open of the log in use, and a target for it */
	struct pmrep_pmem *again = NULL;
	assert_int_equal(pmrep_log_open(path_a, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &again), PMREP_E_BUSY);
	assert_null(again);
	struct pmrep_target_cfg *tc;
	assert_int_equal(pmrep_target_cfg_new(&tc), 0);
	assert_int_equal(pmrep_target_cfg_set_path(tc, path_a), 0);
	assert_int_equal(pmrep_target_cfg_add_key(tc, 0, key, sizeof(key)), 0);
	struct pmrep_target *t = NULL;
	assert_int_equal(pmrep_target_new(tc, &t), PMREP_E_BUSY);
	assert_null(t);
	assert_int_equal(pmrep_pmem_close(&a), 0);
	/* the log closed, a target serves it; then the log is refused */
	assert_int_equal(pmrep_target_new(tc, &t), 0);
	assert_int_equal(pmrep_log_open(path_a, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &again), PMREP_E_BUSY);
	assert_int_equal(pmrep_target_delete(&t), 0);
	assert_int_equal(pmrep_log_open(path_a, 0, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &again), 0);
	assert_int_equal(pmrep_pmem_close(&again), 0);
	assert_int_equal(pmrep_target_cfg_delete(&tc), 0);
}

static void
log_open_refuses_what_is_not_a_log_and_leaves_nothing_behind(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;
	/* a plain file: no pmrep header */
	char plain[300];
	snprintf(plain, sizeof(plain), "%s/plain", dir);
	assert_int_equal(pmrep_pmem_open(plain, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	memset(pmrep_pmem_get_address(p), 0x5a, 4096);
	assert_int_equal(pmrep_pmem_persist(p, pmrep_pmem_get_address(p), 4096), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_int_equal(pmrep_log_open(plain, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_MALFORMED);
	assert_null(p);
	/* a log of another data size than asked for */
	assert_int_equal(pmrep_log_open(path_a, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_int_equal(pmrep_log_open(path_a, 0, SIZE / 2,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	/* EXCL on an existing one; CREATE with size 0; none at all */
	assert_int_equal(pmrep_log_open(path_a, PMREP_PMEM_CREATE |
			PMREP_PMEM_EXCL, SIZE, PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EEXIST);
	assert_int_equal(pmrep_log_open(path_b, PMREP_PMEM_CREATE, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_open(path_b, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOENT);
	/* a file of the header block alone: no data area */
	int fd = open(path_b, O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET), 0);
	close(fd);
	assert_int_equal(pmrep_log_open(path_b, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	assert_int_equal(access(path_b, F_OK), 0);	/* not ours: kept */
	assert_int_equal(unlink(path_b), 0);
	assert_int_equal(pmrep_log_open(NULL, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
}

/* the mirror's own log header: claimed for its generation and primary
 * id, consistent after a clean delete; a log another primary left claimed
 * at the same generation (a replica opened in place) is split brain until
 * the generation is raised */
static void
the_primary_s_log_header_says_what_it_is_and_fences_a_stale_claim(void **state)
{
	(void)state;
	struct pmrep_pmem *a = NULL;
	assert_int_equal(pmrep_log_open(path_a, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &a), 0);
	pattern(pmrep_pmem_get_address(a), SIZE, 5);
	serve(path_b);
	mirror_all(a, 1);
	struct pmrep_replica_info ia, ib;
	assert_int_equal(pmrep_replica_read_info(path_a, &ia), 0);
	assert_int_equal(pmrep_replica_read_info(path_b, &ib), 0);
	assert_memory_equal(ia.uuid, uuid, PMREP_UUID_SIZE);
	assert_int_equal(ia.generation, 1);
	assert_int_equal(ia.owner, ib.owner);	/* the same primary */
	assert_true(ia.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(pmrep_pmem_close(&a), 0);

	/* B's replica claimed by a mirror that never closes (its target is
	 * killed under it): then opened in place, mirrored by another
	 * primary (its own record) at that same generation: refused */
	struct pmrep_pmem *p2 = NULL;
	char c_path[300];
	snprintf(c_path, sizeof(c_path), "%s/c.log", dir);
	assert_int_equal(pmrep_log_open(path_a, 0, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &a), 0);
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), child.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 2000 * func_slow()), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(a, c, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 5000 * func_slow()), 0);
	func_child_kill(&child, SIGKILL);
	(void) pmrep_mirror_delete(&m);
	assert_int_equal(pmrep_pmem_close(&a), 0);
	assert_int_equal(pmrep_replica_read_info(path_b, &ib), 0);
	assert_false(ib.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(pmrep_log_open(path_b, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p2), 0);
	serve(c_path);
	struct pmrep_mirror_cfg *c2;
	assert_int_equal(pmrep_mirror_cfg_new(&c2), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c2, func_addr(), child.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c2, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c2, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(c2, 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c2, 2000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_new(p2, c2, &m), PMREP_E_SPLIT_BRAIN);
	assert_null(m);
	/* nothing written: the header as the crashed primary left it */
	struct pmrep_replica_info again;
	assert_int_equal(pmrep_replica_read_info(path_b, &again), 0);
	assert_int_equal(again.seq, ib.seq);
	/* the way out: the next generation */
	assert_int_equal(pmrep_mirror_cfg_set_generation(c2, 2), 0);
	assert_int_equal(pmrep_mirror_new(p2, c2, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 5000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_replica_read_info(path_b, &again), 0);
	assert_int_equal(again.generation, 2);
	assert_true(again.flags & PMREP_REPLICA_F_CONSISTENT);
	/* and an older generation than the log's: refused */
	assert_int_equal(pmrep_mirror_cfg_set_generation(c2, 1), 0);
	assert_int_equal(pmrep_mirror_new(p2, c2, &m), PMREP_E_STATE);
	func_child_kill(&child, SIGTERM);
	assert_int_equal(pmrep_pmem_close(&p2), 0);
	pmrep_mirror_cfg_delete(&c);
	pmrep_mirror_cfg_delete(&c2);
}

/* the whole header block of a log file (both slots and the position) */
static void
read_header_block(const char *path, uint8_t *buf)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, PMREP_REPLICA_DATA_OFFSET, 0),
			(ssize_t)PMREP_REPLICA_DATA_OFFSET);
	close(fd);
}

/* a refused pmrep_mirror_new leaves the log's header as it was: the claim
 * it wrote before its replicas attached is taken back (a log closed
 * cleanly stays consistent, not a crashed writer's) */
static void
a_refused_mirror_new_leaves_the_log_header_as_it_was(void **state)
{
	(void)state;
	struct pmrep_pmem *a = NULL;
	assert_int_equal(pmrep_log_open(path_a, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &a), 0);
	pattern(pmrep_pmem_get_address(a), SIZE, 3);
	serve(path_b);
	mirror_all(a, 1);	/* claimed at 1, then closed cleanly */
	func_child_kill(&child, SIGTERM);
	uint8_t *before = malloc(PMREP_REPLICA_DATA_OFFSET);
	uint8_t *after = malloc(PMREP_REPLICA_DATA_OFFSET);
	assert_non_null(before);
	assert_non_null(after);
	assert_int_equal(pmrep_pmem_persist(a, pmrep_pmem_get_address(a), 1), 0);
	read_header_block(path_a, before);

	/* its replica is not there: refused within the create timeout */
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), child.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 300), 0);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 500), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_not_equal(pmrep_mirror_new(a, c, &m), 0);
	assert_null(m);
	read_header_block(path_a, after);
	assert_memory_equal(before, after, PMREP_REPLICA_DATA_OFFSET);
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path_a, &info), 0);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(pmrep_mirror_cfg_delete(&c), 0);
	assert_int_equal(pmrep_pmem_close(&a), 0);
	free(before);
	free(after);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-log-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path_a, sizeof(path_a), "%s/a.log", dir);
	snprintf(path_b, sizeof(path_b), "%s/b.log", dir);
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
		cmocka_unit_test_setup_teardown(a_log_is_mirrored_from_in_place_and_the_replica_becomes_the_log, setup, teardown),
		cmocka_unit_test_setup_teardown(a_log_in_use_and_a_served_replica_exclude_each_other, setup, teardown),
		cmocka_unit_test_setup_teardown(log_open_refuses_what_is_not_a_log_and_leaves_nothing_behind, setup, teardown),
		cmocka_unit_test_setup_teardown(the_primary_s_log_header_says_what_it_is_and_fences_a_stale_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(a_refused_mirror_new_leaves_the_log_header_as_it_was, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
