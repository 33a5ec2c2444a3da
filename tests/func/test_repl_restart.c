/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_restart.c -- the fault "restarts forget": a mirror started
 * again on the same log must not resync the whole mapping when its record
 * (the mirror state file) says what may differ. Over the provider under
 * test, with the replica target in a child process (repl_target.h).
 *
 * A writer child mirrors a log of SIZE bytes with 4 KiB persists, one
 * after the other, publishing in shared memory which block it is storing,
 * which one it passed to pmrep_mirror_persist and how many completed. The
 * test kills it with SIGKILL mid-stream (seeded: PMREP_TEST_SEED replays)
 * and starts a new mirror on the same log and state file:
 *  - crash_in_a_stream_of_persists_resyncs_only_the_activity_log: the
 *    resync copies at most (MSTATE_AL_LIMIT + 1) regions plus one: the
 *    activity log holds at most MSTATE_AL_LIMIT regions after a lazy
 *    clear, plus the regions of the one persist in flight (one, as the
 *    blocks are aligned; the margin of one more region allows a persist
 *    that straddles a region boundary). Then the replica equals the log
 *    byte for byte: at once everywhere but the one block whose persist
 *    did not return -- stored in the log, and if the kill came before
 *    the persist's mark was durable, in no record: that block holds its
 *    old or its new content; the restarted application persists it
 *    again, as a log's recovery does with its unacknowledged tail -- and
 *    after that everywhere. Before the restart the test scribbles over
 *    the replica's copy of every region the state file's activity log
 *    holds (what "no trace" allows a crash to leave there): only the
 *    record's fold of that log makes the replica equal again;
 *  - clean_restart_resyncs_nothing: a mirror deleted cleanly and started
 *    again copies nothing;
 *  - crash_without_the_state_file_compares_in_full: a crash (a shorter
 *    stream; the activity log overflowed all the same) with the state file
 *    deleted before the restart: the writer is another primary now, refused
 *    at the same generation (split brain); at the next one it resyncs all
 *    of the data -- the record is what makes the difference.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

/* 256 regions: the resync bound (66) is a quarter of them, and the longest
 * stream before a kill (~3500 blocks) stays within one pass of the log;
 * small, as four full resyncs of it cross rxe under TCG in the guest */
#define SIZE (16u << 20)
#define REGION (64u << 10)
#define BLOCK 4096u
#define NBLK (SIZE / BLOCK)
#define AL_LIMIT 64		/* MSTATE_AL_LIMIT (src/repl/mirror/mirror_state.h) */
#define RESYNC_BOUND ((uint64_t)(AL_LIMIT + 1 + 1) * REGION)

static const uint8_t key[32] = "test-key-0123456789-abcdefghijkl";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x5e, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128];
static char lpath[192], spath[224], rpath[192];
static struct func_child tgt;
static pid_t writer = 0;

/* what the writer child publishes */
struct progress {
	atomic_int ready;	/* 1: its mirror is up; < 0: it failed (step) */
	atomic_long storing;	/* the block being stored (-1: none yet) */
	atomic_long persisting;	/* the block passed to persist (-1: none) */
	atomic_long done;	/* persists that returned 0 */
	atomic_int err;		/* a persist's error */
};
static struct progress *prog;
static char prog_path[96];	/* the file it lives in, shared across exec */
/* this binary, read from /proc/self/exe at start (under valgrind the
 * link names the test, while exec of /proc/self/exe would run valgrind's
 * tool itself) */
static char self_exe[4096];
static const char *unlink_at_exit_path;

static void
unlink_at_exit(void)
{
	if (unlink_at_exit_path)
		(void) unlink(unlink_at_exit_path);
}

/* map the progress record of `path` (created by the parent) */
static int
prog_map(const char *path, bool create)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0600);
	if (fd < 0)
		return -1;
	if (create && ftruncate(fd, sizeof(*prog)) != 0) {
		close(fd);
		return -1;
	}
	prog = mmap(NULL, sizeof(*prog), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return prog == MAP_FAILED ? -1 : 0;
}

/* ----------------------------------------------------------- helpers */

/* the content of block k of the stream (k >= NBLK overwrites k - NBLK) */
static void
block_fill(uint8_t *b, long k)
{
	for (size_t i = 0; i < BLOCK; i += 8) {
		uint64_t v = ((uint64_t)k << 32) ^ (i * 0x9e3779b97f4a7c15ull);
		memcpy(b + i, &v, 8);
	}
}

/* the generation mcfg gives (a restart without the record raises it) */
static uint64_t gen = 1;

static struct pmrep_mirror_cfg *
mcfg(void)
{
	struct pmrep_mirror_cfg *c = NULL;
	if (pmrep_mirror_cfg_new(&c) != 0)
		return NULL;
	if (pmrep_mirror_cfg_add_replica(c, func_addr(), tgt.port) != 0 ||
			pmrep_mirror_cfg_set_key(c, key, sizeof(key)) != 0 ||
			pmrep_mirror_cfg_set_uuid(c, uuid) != 0 ||
			pmrep_mirror_cfg_set_region_size(c, REGION) != 0 ||
			pmrep_mirror_cfg_set_generation(c, gen) != 0 ||
			pmrep_mirror_cfg_set_timeout(c, 5000 * func_slow()) != 0 ||
			pmrep_mirror_cfg_set_state_path(c, spath) != 0)
		pmrep_mirror_cfg_delete(&c);
	return c;
}

/* the writer child: never returns */
static void
writer_main(void)
{
	struct pmrep_pmem *log = NULL;
	struct pmrep_mirror_cfg *c = mcfg();
	struct pmrep_mirror *m = NULL;
	if (c == NULL) {
		atomic_store(&prog->ready, -1);
		_exit(1);
	}
	if (pmrep_pmem_open(lpath, 0, SIZE, PMREP_PMEM_GRANULARITY_PAGE, &log) != 0) {
		atomic_store(&prog->ready, -2);
		_exit(1);
	}
	int ret = pmrep_mirror_new(log, c, &m);
	if (ret != 0) {
		/* why, for the parent's failure message (the log is off) */
		fprintf(stderr, "writer: pmrep_mirror_new: %s: %s\n",
				pmrep_err_to_str(ret), pmrep_err_msg());
		atomic_store(&prog->ready, -3);
		_exit(1);
	}
	uint8_t *base = pmrep_pmem_get_address(log);
	atomic_store(&prog->ready, 1);
	for (long k = 0;; k++) {
		size_t off = (size_t)(k % NBLK) * BLOCK;
		atomic_store(&prog->storing, k);
		block_fill(base + off, k);
		atomic_store(&prog->persisting, k);
		int ret = pmrep_mirror_persist(m, off, BLOCK, 5000 * func_slow());
		if (ret) {
			atomic_store(&prog->err, ret);
			_exit(1);
		}
		atomic_store(&prog->done, k + 1);
	}
}

static void
writer_start(void)
{
	atomic_store(&prog->ready, 0);
	atomic_store(&prog->storing, -1);
	atomic_store(&prog->persisting, -1);
	atomic_store(&prog->done, 0);
	atomic_store(&prog->err, 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* a fresh process, not a fork that runs on: a process that
		 * inherited this one's rdma-core state (librdmacm opens the
		 * devices once per process) is refused by the kernel
		 * (ibv_post_send: EACCES on rxe) once this one used verbs */
		execl(self_exe, self_exe, "--restart-writer", dir, tgt.port,
				prog_path, (char *)NULL);
		_exit(127);
	}
	writer = pid;
}

/* wait until the writer completed `n` persists; it must be running */
static void
writer_wait_done(long n)
{
	long long end = func_now_ms() + 120000LL * func_slow();
	while (atomic_load(&prog->done) < n) {
		int st;
		if (waitpid(writer, &st, WNOHANG) == writer) {
			writer = 0;
			fail_msg("the writer ended (status %#x, ready %d, persist error %d)",
					st, atomic_load(&prog->ready),
					atomic_load(&prog->err));
		}
		if (func_now_ms() > end)
			fail_msg("the writer completed %ld of %ld persists in time",
					atomic_load(&prog->done), n);
		usleep(1000);
	}
}

static void
writer_kill(void)
{
	if (writer <= 0)
		return;
	(void) kill(writer, SIGKILL);
	int st = 0;
	pid_t w;
	while ((w = waitpid(writer, &st, 0)) < 0 && errno == EINTR)
		;
	assert_int_equal(w, writer);
	writer = 0;
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
}

static unsigned
seed_get(void)
{
	const char *s = getenv("PMREP_TEST_SEED");
	unsigned seed = s != NULL ? (unsigned)strtoul(s, NULL, 0) :
		(unsigned)time(NULL) ^ (unsigned)getpid();
	print_message("seed %u (PMREP_TEST_SEED replays it)\n", seed);
	return seed;
}

/*
 * a stream, a SIGKILL after at least `min` completed persists (2000: about
 * 125 regions, the activity log was cleared lazily at least once; 1100:
 * about 69, it overflowed) and a random moment more (up to `spread` more
 * persists, then up to 3 ms); returns the block whose persist did not
 * return (-1: none): stored, and maybe not yet recorded (the kill may come
 * before the persist's mark of the activity log is durable). Each persist
 * is a round trip: in the soft-RoCE guest (TCG) 3 to 10 ms, most of the
 * test's time.
 */
static long
crash_in_a_stream(unsigned *seed, long min, long spread)
{
	writer_start();
	writer_wait_done(min + (long)(rand_r(seed) % (unsigned)spread));
	usleep((useconds_t)(rand_r(seed) % 3000));
	writer_kill();
	long storing = atomic_load(&prog->storing);
	long persisting = atomic_load(&prog->persisting);
	long done = atomic_load(&prog->done);
	print_message("killed: storing %ld, persisting %ld, %ld completed\n",
			storing, persisting, done);
	assert_true(done >= min);
	assert_true(storing == done || storing == done - 1);
	return done <= storing ? storing : -1;
}

/* a new mirror on the log; its replica 0's status */
static struct pmrep_mirror *
restart(struct pmrep_pmem **log, struct pmrep_mirror_cfg **c,
		struct pmrep_replica_status *st)
{
	assert_int_equal(pmrep_pmem_open(lpath, 0, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, log), 0);
	*c = mcfg();
	assert_non_null(*c);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(*log, *c, &m), 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, st), 0);
	assert_int_equal(st->state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st->lag_bytes, 0);
	assert_int_equal(st->resyncs, 1);
	return m;
}

/* the replica equals the log except that block `skip` of the stream may
 * hold its content before that block was written */
static void
assert_equal_but(struct pmrep_pmem *log, long skip)
{
	uint8_t *rep = func_replica_read(rpath, SIZE);
	const uint8_t *loc = pmrep_pmem_get_address(log);
	size_t so = skip >= 0 ? (size_t)(skip % NBLK) * BLOCK : SIZE;
	for (size_t off = 0; off < SIZE; off += BLOCK) {
		if (memcmp(rep + off, loc + off, BLOCK) == 0)
			continue;
		if (off != so)
			fail_msg("block at %zu differs in the replica", off);
		uint8_t old[BLOCK] = { 0 };
		if (skip >= NBLK)
			block_fill(old, skip - NBLK);
		if (memcmp(rep + off, old, BLOCK) != 0)
			fail_msg("block %ld (at %zu) in the replica is neither its old nor its new content",
					skip, off);
	}
	free(rep);
}

/*
 * what "no trace" allows after a crash: the replica may hold anything in
 * the regions the record durably holds in its activity log (a write in
 * flight may have reached it torn). Scribble over each of them in the
 * replica file, so that only a resync of all of them makes it equal the
 * log again. The log (bit r % 64 of word r / 64 at offset 4096 of the
 * state file) is read as src/repl/mirror/mirror_state.c lays it out. Returns how
 * many regions were scribbled over.
 */
static unsigned
scribble_the_activity_log_regions(void)
{
	const unsigned nreg = SIZE / REGION;
	uint64_t al[(SIZE / REGION + 63) / 64];
	int fd = open(spath, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, al, sizeof(al), 4096), (ssize_t)sizeof(al));
	close(fd);
	fd = open(rpath, O_WRONLY);
	assert_true(fd >= 0);
	static uint8_t junk[REGION];
	memset(junk, 0xa5, sizeof(junk));
	unsigned n = 0;
	for (unsigned r = 0; r < nreg; r++) {
		if (!((al[r / 64] >> (r % 64)) & 1))
			continue;
		assert_int_equal(pwrite(fd, junk, REGION,
				PMREP_REPLICA_DATA_OFFSET + (off_t)r * REGION),
				(ssize_t)REGION);
		n++;
	}
	close(fd);
	assert_true(n <= AL_LIMIT + 2);
	return n;
}

/* ------------------------------------------------------------- tests */

static void
crash_in_a_stream_of_persists_resyncs_only_the_activity_log(void **state)
{
	(void)state;
	unsigned seed = seed_get();
	long tail = crash_in_a_stream(&seed, 2000, 1500);
	unsigned scribbled = scribble_the_activity_log_regions();

	struct pmrep_pmem *log = NULL;
	struct pmrep_mirror_cfg *c = NULL;
	struct pmrep_replica_status st;
	struct pmrep_mirror *m = restart(&log, &c, &st);
	print_message("restart resynced %llu bytes of %u (bound %llu; %u regions of the activity log scribbled over)\n",
			(unsigned long long)st.resync_bytes, SIZE,
			(unsigned long long)RESYNC_BOUND, scribbled);
	assert_true(st.resync_bytes <= RESYNC_BOUND);
	assert_true(st.resync_bytes >= (uint64_t)scribbled * REGION);
	assert_true(st.resync_bytes % REGION == 0);
	assert_equal_but(log, tail);
	if (tail >= 0)	/* the application's recovery: its unacknowledged block again */
		assert_int_equal(pmrep_mirror_persist(m,
				(size_t)(tail % NBLK) * BLOCK, BLOCK, 5000), 0);
	func_assert_replica_equals(log, rpath);
	/* and the completed persists are in the log as written */
	uint8_t want[BLOCK];
	long done = atomic_load(&prog->done);
	for (long k = done - 1; k >= 0 && k >= done - NBLK; k -= 97) {
		block_fill(want, k);
		assert_memory_equal((uint8_t *)pmrep_pmem_get_address(log) +
				(size_t)(k % NBLK) * BLOCK, want, BLOCK);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&log), 0);
}

static void
clean_restart_resyncs_nothing(void **state)
{
	(void)state;
	struct pmrep_pmem *log = NULL;
	struct pmrep_mirror_cfg *c = NULL;
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_pmem_open(lpath, 0, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &log), 0);
	c = mcfg();
	assert_non_null(c);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(log, c, &m), 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.resync_bytes, SIZE);	/* a fresh replica */
	uint8_t *base = pmrep_pmem_get_address(log);
	/* 1500 persists at spread blocks: 108 of the 256 regions, more
	 * than the activity log holds (64): it overflowed */
	for (long k = 0; k < 1500; k++) {
		size_t off = (size_t)((k * 7919) % NBLK) * BLOCK;
		block_fill(base + off, k);
		assert_int_equal(pmrep_mirror_persist(m, off, BLOCK, 5000), 0);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	pmrep_mirror_cfg_delete(&c);

	c = mcfg();
	assert_non_null(c);
	assert_int_equal(pmrep_mirror_new(log, c, &m), 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.lag_bytes, 0);
	assert_int_equal(st.resync_bytes, 0);
	func_assert_replica_equals(log, rpath);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&log), 0);
}

static void
crash_without_the_state_file_compares_in_full(void **state)
{
	(void)state;
	unsigned seed = seed_get();
	/* shorter than the first test's: what counts here is the lost
	 * record, not the activity log's clears (it overflowed all the same) */
	long tail = crash_in_a_stream(&seed, 1100, 400);
	assert_int_equal(unlink(spath), 0);	/* the record is lost */

	/* without it the writer is another primary (a new primary id): at
	 * the generation the crashed one left the replica claimed at, not
	 * closed, that is split brain -- refused; the way out is the next
	 * generation, and that attach resyncs everything */
	struct pmrep_pmem *log = NULL;
	assert_int_equal(pmrep_pmem_open(lpath, 0, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &log), 0);
	struct pmrep_mirror_cfg *c = mcfg();
	assert_non_null(c);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(log, c, &m), PMREP_E_SPLIT_BRAIN);
	assert_null(m);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	(void) unlink(spath);	/* the refused mirror's new record */
	gen = 2;
	struct pmrep_replica_status st;
	m = restart(&log, &c, &st);
	/* all of it compared by digests, what differs copied */
	assert_int_equal(st.resync_compared, SIZE);
	assert_true(st.resync_bytes < SIZE);
	func_assert_replica_equals(log, rpath);
	(void)tail;
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	gen = 1;
}

static int
setup(void **state)
{
	(void)state;
	gen = 1;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-restart-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(lpath, sizeof(lpath), "%s/log", dir);
	snprintf(spath, sizeof(spath), "%s/log.pmrep-state", dir);
	snprintf(rpath, sizeof(rpath), "%s/replica", dir);
	struct pmrep_pmem *log = NULL;
	if (pmrep_pmem_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &log) != 0)
		return -1;
	(void) pmrep_pmem_close(&log);
	const struct func_child_cfg cfg = { .path = rpath, .size = SIZE,
		.key = key, .key_len = sizeof(key) };
	func_child_start(&tgt, &cfg, "0");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (writer > 0) {
		(void) kill(writer, SIGKILL);
		(void) waitpid(writer, NULL, 0);
		writer = 0;
	}
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
	if (argc == 5 && strcmp(argv[1], "--restart-writer") == 0) {
		/* the writer child, re-executed: dir, target port, progress */
		snprintf(dir, sizeof(dir), "%s", argv[2]);
		snprintf(lpath, sizeof(lpath), "%s/log", dir);
		snprintf(spath, sizeof(spath), "%s/log.pmrep-state", dir);
		snprintf(tgt.port, sizeof(tgt.port), "%s", argv[3]);
		if (prog_map(argv[4], false) != 0)
			_exit(126);
		writer_main();
	}
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 1;
	self_exe[n] = '\0';
	snprintf(prog_path, sizeof(prog_path), "/dev/shm/pmrep-test-restart-prog-%d",
			(int)getpid());
	if (prog_map(prog_path, true) != 0)
		return 1;
	unlink_at_exit_path = prog_path;
	atexit(unlink_at_exit);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(crash_in_a_stream_of_persists_resyncs_only_the_activity_log, setup, teardown),
		cmocka_unit_test_setup_teardown(clean_restart_resyncs_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(crash_without_the_state_file_compares_in_full, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
