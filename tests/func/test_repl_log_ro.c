/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_log_ro.c -- looking at a pmrep log without claiming it
 * (pmrep_log_open with PMREP_LOG_RDONLY) and the open log's set UUID and
 * generation from its handle (pmrep_log_get_uuid, pmrep_log_get_generation).
 * Proves:
 *  - while the node's own pmrep-target serves the file (a replica of a
 *    running set), a read-only open succeeds, sees the data, the set UUID
 *    and the generation, and writes nothing: the file's bytes (header
 *    included) and its mtime and ctime are unchanged after the open, the
 *    reads and the close; the target goes on serving (a writable open is
 *    still refused, PMREP_E_BUSY, and a mirror attaches and persists);
 *  - the handle reads the header as it is at each call and the mapping
 *    the bytes as they land: a writer's attach at a higher generation
 *    and its persists show through the open read-only mapping;
 *  - a log open for writing (its mirror running) is opened read-only as
 *    well; a writable handle answers the same UUID and generation;
 *  - a never-claimed log answers a nil UUID and generation 0;
 *  - the mapping is read-only: a store faults;
 *  - refusals: RDONLY with CREATE or EXCL, a file that is not a log, a
 *    plain mapping asked for its UUID, NULLs; the read-only mapping is
 *    refused by pmrep_mirror_new, pmrep_mirror_recover and
 *    pmrep_mirror_promote (PMREP_E_INVAL), and nothing is written.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (1u << 20)

static const uint8_t key[32] = "test-key-logro-0123456789-abcdef";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x20, 0x7c, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t nil[PMREP_UUID_SIZE];
static char dir[128], path_a[256], path_b[256];
static struct func_child child;

static void
pattern(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 12));
}

static struct pmrep_mirror_cfg *
mcfg(uint64_t generation)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), child.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, generation), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 5000 * func_slow()), 0);
	return c;
}

static void
serve(const char *path)
{
	struct func_child_cfg cfg = { .path = path, .size = SIZE,
		.key = key, .key_len = sizeof(key) };
	func_child_start(&child, &cfg, "0");
}

/* the whole file (header and data area), to free() */
static uint8_t *
read_all(const char *path)
{
	uint8_t *buf = malloc(SIZE + PMREP_REPLICA_DATA_OFFSET);
	assert_non_null(buf);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	size_t got = 0;
	while (got < SIZE + PMREP_REPLICA_DATA_OFFSET) {
		ssize_t n = read(fd, buf + got, SIZE + PMREP_REPLICA_DATA_OFFSET - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	close(fd);
	return buf;
}

static void
assert_uuid_gen(const struct pmrep_pmem *log, const uint8_t *want,
		uint64_t gen)
{
	uint8_t got[PMREP_UUID_SIZE];
	memset(got, 0xee, sizeof(got));
	uint64_t g = 12345;
	assert_int_equal(pmrep_log_get_uuid(log, got), 0);
	assert_memory_equal(got, want, PMREP_UUID_SIZE);
	assert_int_equal(pmrep_log_get_generation(log, &g), 0);
	assert_int_equal(g, gen);
}

static void
a_read_only_open_sees_a_served_log_and_writes_nothing(void **state)
{
	(void)state;
	/* node A's log, mirrored (generation 1) to node B's log, which
	 * B's own target serves as a replica */
	struct pmrep_pmem *a = NULL;
	assert_int_equal(pmrep_log_open(path_a, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &a), 0);
	uint8_t *da = pmrep_pmem_get_address(a);
	pattern(da, SIZE, 1);
	serve(path_b);
	struct pmrep_mirror_cfg *c = mcfg(1);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(a, c, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 5000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	/* the writable handle of A answers too (no second open) */
	assert_uuid_gen(a, uuid, 1);

	/* B is served: look at it, read-only */
	uint8_t *before = read_all(path_b);
	struct stat st0, st1;
	assert_int_equal(stat(path_b, &st0), 0);
	usleep(20 * 1000);	/* a write now would show in the times */
	struct pmrep_pmem *ro = NULL;
	assert_int_equal(pmrep_log_open(path_b, PMREP_LOG_RDONLY, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &ro), 0);
	assert_non_null(ro);
	assert_int_equal(pmrep_pmem_get_size(ro), SIZE);
	assert_memory_equal(pmrep_pmem_get_address(ro), da, SIZE);
	assert_uuid_gen(ro, uuid, 1);
	/* the target still holds the file: a writable open is refused */
	struct pmrep_pmem *rw = NULL;
	assert_int_equal(pmrep_log_open(path_b, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &rw), PMREP_E_BUSY);
	assert_null(rw);
	/* nothing writes through the read-only mapping */
	assert_int_equal(pmrep_mirror_new(ro, c, &m), PMREP_E_INVAL);
	assert_null(m);
	assert_int_equal(pmrep_mirror_recover(ro, func_addr(), child.port, key,
			sizeof(key), uuid, 1, 0, 1000, NULL), PMREP_E_INVAL);
	struct pmrep_promote_result res;
	assert_int_equal(pmrep_mirror_promote(ro, c, 0, 0,
			PMREP_PROMOTE_DRY_RUN, &res), PMREP_E_INVAL);
	assert_int_equal(pmrep_pmem_persist(ro, pmrep_pmem_get_address(ro),
			SIZE), 0);
	/* the mapping is PROT_READ: a store faults (in a child; not under
	 * valgrind, whose report of the child's fault would read as an
	 * error in the log) */
	fflush(NULL);
	pid_t pid = func_slow() > 1 ? -2 : fork();
	assert_true(pid >= 0 || pid == -2);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);	/* not cmocka's handler */
		signal(SIGBUS, SIG_DFL);
		((volatile uint8_t *)pmrep_pmem_get_address(ro))[100] = 0x5a;
		_exit(0);
	}
	int wst = 0;
	if (pid > 0) {
		assert_int_equal(waitpid(pid, &wst, 0), pid);
		/* killed by the fault (under ASan: its report, then an exit) */
		assert_false(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	}
	/* a second read-only look at the same time */
	struct pmrep_pmem *ro2 = NULL;
	assert_int_equal(pmrep_log_open(path_b, PMREP_LOG_RDONLY, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &ro2), 0);
	assert_uuid_gen(ro2, uuid, 1);
	assert_int_equal(pmrep_pmem_close(&ro2), 0);
	assert_int_equal(pmrep_pmem_close(&ro), 0);
	uint8_t *after = read_all(path_b);
	assert_memory_equal(after, before, SIZE + PMREP_REPLICA_DATA_OFFSET);
	assert_int_equal(stat(path_b, &st1), 0);
	assert_int_equal(st1.st_mtim.tv_sec, st0.st_mtim.tv_sec);
	assert_int_equal(st1.st_mtim.tv_nsec, st0.st_mtim.tv_nsec);
	assert_int_equal(st1.st_ctim.tv_sec, st0.st_ctim.tv_sec);
	assert_int_equal(st1.st_ctim.tv_nsec, st0.st_ctim.tv_nsec);
	assert_int_equal(st1.st_size, st0.st_size);
	free(after);

	/* open again, and the writer comes back at generation 2 while it is
	 * open: its attach and its persists show through the handle */
	assert_int_equal(pmrep_log_open(path_b, PMREP_LOG_RDONLY, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &ro), 0);
	pmrep_mirror_cfg_delete(&c);
	c = mcfg(2);
	assert_int_equal(pmrep_mirror_new(a, c, &m), 0);
	func_mirror_wait_in_sync(m, 1);
	assert_uuid_gen(ro, uuid, 2);
	assert_uuid_gen(a, uuid, 2);
	/* A's log, open for writing with its mirror running: opened
	 * read-only too (no lock taken), the same answers */
	struct pmrep_pmem *roa = NULL;
	assert_int_equal(pmrep_log_open(path_a, PMREP_LOG_RDONLY, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &roa), 0);
	assert_uuid_gen(roa, uuid, 2);
	pattern(da, 4096, 9);
	assert_int_equal(pmrep_mirror_persist(m, 0, 4096, 5000 * func_slow()), 0);
	assert_memory_equal(pmrep_pmem_get_address(ro), da, SIZE);
	assert_memory_equal(pmrep_pmem_get_address(roa), da, SIZE);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_pmem_close(&roa), 0);
	assert_int_equal(pmrep_pmem_close(&ro), 0);
	/* the looks claimed nothing: B's header is the writer's */
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path_b, &info), 0);
	assert_int_equal(info.generation, 2);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	func_child_kill(&child, SIGTERM);
	free(before);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&a), 0);
}

static void
an_unclaimed_log_and_the_refusals(void **state)
{
	(void)state;
	struct pmrep_pmem *a = NULL, *ro = NULL;
	assert_int_equal(pmrep_log_open(path_a, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &a), 0);
	assert_uuid_gen(a, nil, 0);
	assert_int_equal(pmrep_pmem_close(&a), 0);
	uint8_t *before = read_all(path_a);
	assert_int_equal(pmrep_log_open(path_a, PMREP_LOG_RDONLY, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &ro), 0);
	assert_uuid_gen(ro, nil, 0);
	/* the size asked for must be the header's */
	struct pmrep_pmem *ro2 = NULL;
	assert_int_equal(pmrep_log_open(path_a, PMREP_LOG_RDONLY, SIZE / 2,
			PMREP_PMEM_GRANULARITY_PAGE, &ro2), PMREP_E_RANGE);
	assert_null(ro2);
	assert_int_equal(pmrep_pmem_close(&ro), 0);
	uint8_t *after = read_all(path_a);
	assert_memory_equal(after, before, SIZE + PMREP_REPLICA_DATA_OFFSET);
	free(after);
	free(before);

	/* refusals */
	assert_int_equal(pmrep_log_open(path_a, PMREP_LOG_RDONLY | PMREP_PMEM_CREATE,
			SIZE, PMREP_PMEM_GRANULARITY_PAGE, &ro), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_open(path_a, PMREP_LOG_RDONLY | PMREP_PMEM_CREATE |
			PMREP_PMEM_EXCL, SIZE, PMREP_PMEM_GRANULARITY_PAGE, &ro),
			PMREP_E_INVAL);
	assert_int_equal(pmrep_log_open(path_a, 1u << 20, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &ro), PMREP_E_INVAL);
	assert_null(ro);
	char nothere[300];
	snprintf(nothere, sizeof(nothere), "%s/nothere", dir);
	assert_int_not_equal(pmrep_log_open(nothere, PMREP_LOG_RDONLY, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &ro), 0);
	assert_int_equal(access(nothere, F_OK), -1);
	/* a plain file is no log: refused read-only as for writing */
	uint8_t *zero = calloc(1, SIZE);
	assert_non_null(zero);
	func_write_file(path_b, zero, SIZE);
	free(zero);
	assert_int_equal(pmrep_log_open(path_b, PMREP_LOG_RDONLY, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &ro), PMREP_E_MALFORMED);
	assert_null(ro);
	/* pmrep_pmem_open knows no PMREP_LOG_RDONLY */
	struct pmrep_pmem *plain = NULL;
	assert_int_equal(pmrep_pmem_open(path_b, PMREP_LOG_RDONLY, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &plain), PMREP_E_INVAL);
	/* a plain mapping has no header of a log */
	assert_int_equal(pmrep_pmem_open(path_b, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &plain), 0);
	uint8_t u[PMREP_UUID_SIZE];
	uint64_t g;
	assert_int_equal(pmrep_log_get_uuid(plain, u), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_get_generation(plain, &g), PMREP_E_INVAL);
	assert_int_equal(pmrep_pmem_close(&plain), 0);
	assert_int_equal(pmrep_log_open(path_a, PMREP_LOG_RDONLY, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &ro), 0);
	assert_int_equal(pmrep_log_get_uuid(NULL, u), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_get_uuid(ro, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_get_generation(NULL, &g), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_get_generation(ro, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_pmem_close(&ro), 0);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-logro-XXXXXX");
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
		cmocka_unit_test_setup_teardown(a_read_only_open_sees_a_served_log_and_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(an_unclaimed_log_and_the_refusals, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
