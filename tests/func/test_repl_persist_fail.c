/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_persist_fail.c -- field case T28 (a failed msync is an error,
 * never an abort or a success) at the replication level, over the
 * provider under test.
 *
 * msync(2) is defined in this executable, so every msync of the process
 * reaches it -- the pmem layer's, libpmem2's and the tcp provider's --
 * in the test process and in its target children (this binary
 * re-executed with --target, tests/func/common/repl_target.c):
 *  - in a target child, msync fails with EIO for as long as the file
 *    named by PMREP_TEST_MSYNC_EIO_IF exists (the test creates it "from
 *    some moment on"; the child reads the variable at start);
 *  - in the test process, while `local_eio` is set.
 * Otherwise the call goes to the kernel.
 *
 * What is asserted:
 *  - target side (direct mode, where the tcp provider persists the
 *    mirror's writes through the mapping and NAKs the flush; and with a
 *    staging buffer, GPSPM, where the target answers PERSIST with
 *    INTERNAL): the mirror's pmrep_mirror_persist returns an error, never
 *    0; the target child is still running afterwards (waitpid WNOHANG: no
 *    SIGABRT, no exit); a reconnecting mirror's COMMIT is refused (the
 *    replica is poisoned), also once msync works again (a later success
 *    is no proof), and the replica's header block is byte-identical
 *    before and after each refusal; a read-only query still answers;
 *  - initiator side: the mirror's own mapping's msync fails ->
 *    pmrep_mirror_persist returns PMREP_E_PROVIDER, and keeps returning
 *    it once msync works again (the mapping is poisoned).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (1u << 20)
#define EIO_ENV "PMREP_TEST_MSYNC_EIO_IF"

static const uint8_t key[32] = "t28-test-key-0123456789-abcdefgh";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x28, 1, 2, 3, 4, 5, 6, 7,
	8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128];
static char rpath[256];		/* the replica */
static char lpath[256];		/* the mirror's local file */
/* the scratch directory is in memory (a guest's /var/tmp is tmpfs): pmrep
 * makes no msync there, so nothing here can be made to fail: skipped */
static bool dir_in_memory;

static char trigger[256];	/* exists: the target child's msync fails */

/* a test's objects, freed by the teardown also when it fails half way */
static struct pmrep_pmem *local;
static struct pmrep_mirror_cfg *cfg;
static struct pmrep_mirror *m;

/* ---- msync interposer */

/* in a target child: the trigger file's path (from EIO_ENV), else "" */
static char child_trigger[256];
/* in the test process: fail with EIO while set */
static atomic_int local_eio;
static atomic_int local_calls;

/* exported: libpmem2 and the library must bind to this one */
__attribute__((visibility("default"))) int
msync(void *addr, size_t len, int flags)
{
	if (child_trigger[0] != '\0' && access(child_trigger, F_OK) == 0) {
		errno = EIO;
		return -1;
	}
	atomic_fetch_add(&local_calls, 1);
	if (atomic_load(&local_eio)) {
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_msync, addr, len, flags);
}

/* ---- the library's log lines, kept to look for a refusal */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 16];
static size_t log_len;

static void
log_keep(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg)
{
	(void)file;
	(void)line;
	(void)func;
	(void)arg;
	pthread_mutex_lock(&log_lock);
	int n = snprintf(log_text + log_len, sizeof(log_text) - log_len,
			"%d %s\n", (int)level, msg);
	if (n > 0 && (size_t)n < sizeof(log_text) - log_len)
		log_len += (size_t)n;
	pthread_mutex_unlock(&log_lock);
	if (getenv("PMREP_TEST_VERBOSE"))
		fprintf(stderr, "pmrep %d: %s\n", (int)level, msg);
}

static void
log_clear(void)
{
	pthread_mutex_lock(&log_lock);
	log_len = 0;
	log_text[0] = '\0';
	pthread_mutex_unlock(&log_lock);
}

static bool
log_has(const char *s)
{
	pthread_mutex_lock(&log_lock);
	bool hit = strstr(log_text, s) != NULL;
	pthread_mutex_unlock(&log_lock);
	return hit;
}

/* ---- helpers */

static void
hdr_block(uint8_t *blk)
{
	int fd = open(rpath, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, blk, PMREP_REPLICA_DATA_OFFSET, 0),
			PMREP_REPLICA_DATA_OFFSET);
	close(fd);
}

/* the target child runs: not ended, not stopped by a signal */
static void
assert_child_running(struct func_child *c)
{
	pid_t pid = atomic_load(&c->pid);
	assert_true(pid > 0);
	int st = 0;
	pid_t w = waitpid(pid, &st, WNOHANG);
	if (w == pid) {
		if (WIFSIGNALED(st))
			fail_msg("the target child died of signal %d%s", WTERMSIG(st),
					WTERMSIG(st) == SIGABRT ? " (SIGABRT: an abort)" : "");
		fail_msg("the target child exited with %d", WEXITSTATUS(st));
	}
	assert_int_equal(w, 0);
}

static void
trigger_set(bool on)
{
	if (on) {
		int fd = open(trigger, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		assert_true(fd >= 0);
		close(fd);
	} else {
		assert_int_equal(unlink(trigger), 0);
	}
}

/* the mirror's local file (PAGE: persisted by msync), a pattern in it,
 * mirrored to the child's target and in sync: `local`, `cfg`, `m` */
static uint8_t *
mirror_open(const struct func_child *c)
{
	assert_int_equal(pmrep_pmem_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	assert_int_equal(pmrep_pmem_get_granularity(local),
			PMREP_PMEM_GRANULARITY_PAGE);
	uint8_t *base = pmrep_pmem_get_address(local);
	func_pattern(base, SIZE, 28);
	assert_int_equal(pmrep_mirror_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, func_addr(), c->port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(cfg, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(cfg, 2000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_new(local, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 5000 * func_slow()), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	return base;
}

/* delete the mirror, its cfg and the local mapping (whatever is open) */
static void
mirror_close(void)
{
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_pmem_close(&local), 0);
}

/* pmrep_mirror_reconnect of `m` past its back-off: the first answer that is
 * not PMREP_E_AGAIN */
static int
reconnect(void)
{
	long long t0 = func_now_ms();
	for (;;) {
		int ret = pmrep_mirror_reconnect(m, 2000 * func_slow());
		if (ret != PMREP_E_AGAIN)
			return ret;
		assert_true(func_now_ms() - t0 < 20000 * func_slow());
		usleep(20000);
	}
}

/* a reconnect of `m` whose COMMIT the poisoned target refuses; nothing of the
 * header changes, the child runs on */
static void
reconnect_is_refused(struct func_child *c, const uint8_t *h0)
{
	static uint8_t h[PMREP_REPLICA_DATA_OFFSET];
	log_clear();
	int ret = reconnect();
	assert_int_not_equal(ret, 0);
	if (!log_has("refused our COMMIT: the target failed"))
		fail_msg("the reconnect failed (%s) but not by a refused COMMIT:\n%s",
				pmrep_err_to_str(ret), log_text);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	hdr_block(h);
	assert_memory_equal(h, h0, PMREP_REPLICA_DATA_OFFSET);
	assert_child_running(c);
}

/* ---- the target's msync fails */

static void
target_msync_eio(bool staging)
{
	struct func_child c = { 0 };
	struct func_child_cfg cc = { .path = rpath, .size = SIZE, .key = key,
		.key_len = sizeof(key), .staging = staging };
	func_child_start(&c, &cc, "0");
	uint8_t *base = mirror_open(&c);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	if (staging)
		assert_int_equal(st.method, PMREP_MIRROR_METHOD_GPSPM);
	else if (st.method != PMREP_MIRROR_METHOD_GPSPM && !func_is_tcp())
		skip();	/* a verbs flush does not reach the target's msync */
	static uint8_t h0[PMREP_REPLICA_DATA_OFFSET], h[PMREP_REPLICA_DATA_OFFSET];
	hdr_block(h0);

	/* from now on the target's msync fails */
	trigger_set(true);
	memset(base + 8192, 0x5a, 4096);
	log_clear();
	int ret = pmrep_mirror_persist(m, 8192, 4096, 5000 * func_slow());
	assert_int_not_equal(ret, 0);
	assert_int_equal(ret, PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_not_equal(st.last_error, 0);
	assert_true(st.lag_bytes >= 4096);
	/* the target lives on: nothing aborted */
	usleep(100000);
	assert_child_running(&c);
	hdr_block(h);
	assert_memory_equal(h, h0, sizeof(h0));

	/* the replica is poisoned: a reconnecting mirror's COMMIT is
	 * refused, the header is left as it was */
	reconnect_is_refused(&c, h0);
	/* a later successful msync is no proof: still refused */
	trigger_set(false);
	reconnect_is_refused(&c, h0);
	/* and persists fail on (the replica is out of sync) */
	assert_int_not_equal(pmrep_mirror_persist(m, 0, 4096, 2000 * func_slow()), 0);

	/* a read-only query still answers, and changes nothing */
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_query(func_addr(), c.port, key,
			sizeof(key), 5000 * func_slow(), &info), 0);
	assert_memory_equal(info.uuid, uuid, PMREP_UUID_SIZE);
	assert_false(info.flags & PMREP_REPLICA_F_CONSISTENT);
	hdr_block(h);
	assert_memory_equal(h, h0, sizeof(h0));

	/* the delete does not mark a failed replica consistent */
	mirror_close();
	hdr_block(h);
	assert_memory_equal(h, h0, sizeof(h0));
	assert_child_running(&c);
	func_child_kill(&c, SIGKILL);
}

static void
T28_target_msync_eio_direct_fails_the_persist_and_poisons_the_replica(void **state)
{
	if (dir_in_memory)
		skip();
	(void)state;
	FUNC_TCP_ONLY();	/* the tcp provider persists a direct flush through msync */
	target_msync_eio(false);
}

static void
T28_target_msync_eio_staging_fails_the_persist_and_poisons_the_replica(void **state)
{
	if (dir_in_memory)
		skip();
	(void)state;
	target_msync_eio(true);
}

/* ---- the mirror's own msync fails */

static void
T28_mirror_local_msync_eio_fails_the_persist(void **state)
{
	if (dir_in_memory)
		skip();
	(void)state;
	struct func_child c = { 0 };
	struct func_child_cfg cc = { .path = rpath, .size = SIZE, .key = key,
		.key_len = sizeof(key) };
	func_child_start(&c, &cc, "0");
	uint8_t *base = mirror_open(&c);

	memset(base, 0xa5, 4096);
	atomic_store(&local_calls, 0);
	atomic_store(&local_eio, 1);
	int ret = pmrep_mirror_persist(m, 0, 4096, 5000 * func_slow());
	atomic_store(&local_eio, 0);
	assert_true(atomic_load(&local_calls) >= 1);	/* msync was asked */
	assert_int_equal(ret, PMREP_E_PROVIDER);
	assert_true(pmrep_pmem_is_poisoned(local));
	/* msync works again, but the mapping is poisoned: no later persist
	 * can vouch for the earlier bytes */
	ret = pmrep_mirror_persist(m, 0, 4096, 5000 * func_slow());
	assert_int_equal(ret, PMREP_E_PROVIDER);
	assert_child_running(&c);

	mirror_close();
	func_child_kill(&c, SIGKILL);
}

/* ---- fixtures */

static int
setup(void **state)
{
	(void)state;
	/* a disk file system: a file in memory (tmpfs) has nothing to write
	 * back and pmrep makes no msync of it */
	snprintf(dir, sizeof(dir), "/var/tmp/pmrep-test-pfail-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(rpath, sizeof(rpath), "%s/replica", dir);
	snprintf(lpath, sizeof(lpath), "%s/local", dir);
	snprintf(trigger, sizeof(trigger), "%s/msync-eio", dir);
	/* the target children read it at start */
	setenv(EIO_ENV, trigger, 1);
	atomic_store(&local_eio, 0);
	log_clear();
	{
		struct statfs sf;
		dir_in_memory = statfs(dir, &sf) == 0 &&
			sf.f_type == 0x01021994 /* TMPFS_MAGIC */;
	}
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	atomic_store(&local_eio, 0);
	(void) pmrep_mirror_delete(&m);
	(void) pmrep_mirror_cfg_delete(&cfg);
	(void) pmrep_pmem_close(&local);
	func_child_kill_all();
	unsetenv(EIO_ENV);
	return func_rm_rf(dir);
}

int
main(int argc, char *argv[])
{
	if (argc >= 2 && strcmp(argv[1], "--target") == 0) {
		const char *t = getenv(EIO_ENV);
		if (t != NULL)
			snprintf(child_trigger, sizeof(child_trigger), "%s", t);
	}
	func_child_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	pmrep_log_set_function(log_keep, NULL);
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_INFO);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(T28_target_msync_eio_direct_fails_the_persist_and_poisons_the_replica, setup, teardown),
		cmocka_unit_test_setup_teardown(T28_target_msync_eio_staging_fails_the_persist_and_poisons_the_replica, setup, teardown),
		cmocka_unit_test_setup_teardown(T28_mirror_local_msync_eio_fails_the_persist, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
