/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_async.c -- asynchronous persists of a mirror over the
 * provider under test (PMREP_TEST_PROVIDER: tcp on loopback here, verbs on
 * rxe in the soft-RoCE guest, tests/vm): pmrep_mirror_persist_async,
 * pmrep_mirror_get_fd, pmrep_mirror_poll.
 * Proves: many requests in flight (overlapping, adjacent, scattered,
 * mixed with synchronous persists) all complete exactly once with 0 and
 * the replica is byte-exact; adjacent requests are coalesced into fewer
 * posts (GPSPM: counted by the target); the fd is one epoll fd,
 * non-blocking and close-on-exec, the same for the mirror's life; a
 * target frozen and then killed with requests in flight makes every one
 * of them complete exactly once with an error, never 0, and after a
 * restart and reconnect asynchronous persists succeed again.
 */
#include <fcntl.h>
#include <poll.h>
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (4u << 20)
#define REGION 4096u

static const uint8_t key[32] = "test-key-0123456789-abcdefghijkl";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xa5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128];

/* ------------------------------------------------ target in a thread */

static struct {
	struct pmrep_target *t;
	pthread_t th;
	atomic_bool stop;
	atomic_bool pause, paused;	/* hold the loop (its stats are then ours) */
	char port[8];
} tgt;

static void *
tgt_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&tgt.stop)) {
		if (atomic_load(&tgt.pause)) {
			atomic_store(&tgt.paused, true);
			usleep(1000);
			continue;
		}
		atomic_store(&tgt.paused, false);
		(void) pmrep_target_process(tgt.t, 20);
	}
	return NULL;
}

/* hold (true) or release (false) the target's loop; returns when held */
static void
tgt_pause(bool pause)
{
	atomic_store(&tgt.pause, pause);
	while (pause && !atomic_load(&tgt.paused))
		usleep(1000);
}

static void
tgt_start(bool staging)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/replica", dir);
	struct pmrep_target_cfg *cfg;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, SIZE, true), 0);
	assert_int_equal(pmrep_target_cfg_set_address(cfg, func_addr(), "0"), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_target_cfg_set_staging(cfg, staging), 0);
	assert_int_equal(pmrep_target_new(cfg, &tgt.t), 0);
	pmrep_target_cfg_delete(&cfg);
	uint16_t port;
	assert_int_equal(pmrep_target_get_port(tgt.t, &port), 0);
	snprintf(tgt.port, sizeof(tgt.port), "%u", port);
	atomic_store(&tgt.stop, false);
	atomic_store(&tgt.pause, false);
	atomic_store(&tgt.paused, false);
	assert_int_equal(pthread_create(&tgt.th, NULL, tgt_loop, NULL), 0);
}

static void
tgt_stop(void)
{
	if (tgt.t == NULL)
		return;
	atomic_store(&tgt.stop, true);
	pthread_join(tgt.th, NULL);
	pmrep_target_delete(&tgt.t);
}

/* ----------------------------------------------------------- helpers */

static struct pmrep_pmem *
local_open(void)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/log", dir);
	struct pmrep_pmem *p = NULL;
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	return p;
}

static struct pmrep_mirror_cfg *
mcfg(const char *port, bool gpspm)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_region_size(c, REGION), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_force_gpspm(c, gpspm), 0);
	return c;
}

static void
assert_replica_equals(struct pmrep_pmem *local)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/replica", dir);
	func_assert_replica_equals(local, path);
}

/*
 * wait on the mirror's fd and poll until `want` completions came (each
 * counted in seen[ctx - 1]) or timeout_ms passed; returns how many came
 */
static int
collect(struct pmrep_mirror *m, int *seen, int *results, int nctx, int want,
		int timeout_ms)
{
	int fd;
	assert_int_equal(pmrep_mirror_get_fd(m, &fd), 0);
	long long deadline = func_now_ms() + (long long)timeout_ms * func_slow();
	int got = 0;
	while (got < want) {
		struct pmrep_mirror_completion c[16];
		int n = -1;
		assert_int_equal(pmrep_mirror_poll(m, c, 16, &n), 0);
		assert_true(n >= 0 && n <= 16);
		for (int i = 0; i < n; i++) {
			intptr_t id = (intptr_t)c[i].ctx;
			assert_true(id >= 1 && id <= nctx);
			seen[id - 1]++;
			results[id - 1] = c[i].result;
			got++;
		}
		if (n > 0)
			continue;
		long long left = deadline - func_now_ms();
		if (left <= 0)
			break;
		struct pollfd p = { fd, POLLIN, 0 };
		(void) poll(&p, 1, (int)(left > 200 ? 200 : left));
	}
	return got;
}

/* ------------------------------------------------------------- tests */

#define NREQ 3000

static void
many_in_flight_all_complete_with_0_and_byte_exact(void **state)
{
	(void)state;
	tgt_start(false);
	struct pmrep_pmem *local = local_open();
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(tgt.port, false);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);

	int fd = -1, fd2 = -2;
	assert_int_equal(pmrep_mirror_get_fd(m, &fd), 0);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);

	int *seen = calloc(NREQ, sizeof(int));
	int *results = calloc(NREQ, sizeof(int));
	assert_non_null(seen);
	assert_non_null(results);
	unsigned rs = 12345;
	int submitted = 0, got = 0;
	size_t append = 0;
	while (submitted < NREQ) {
		/* a mix: log appends (adjacent), rewrites of the same bytes
		 * (overlapping), scattered pages */
		size_t off, len;
		switch (submitted % 3) {
		case 0:
			len = 1 + (size_t)rand_r(&rs) % 700;
			if (append + len > SIZE / 2)
				append = 0;
			off = append;
			append += len;
			break;
		case 1:
			off = (size_t)rand_r(&rs) % (SIZE / 2 - 4096);
			len = 1 + (size_t)rand_r(&rs) % 4096;
			break;
		default:
			off = SIZE / 2 + ((size_t)rand_r(&rs) % (SIZE / 2 / 4096)) * 4096;
			len = 64;
			break;
		}
		for (size_t i = 0; i < len; i++)
			base[off + i] = (uint8_t)rand_r(&rs);
		int ret = pmrep_mirror_persist_async(m, off, len,
				(void *)(intptr_t)(submitted + 1));
		assert_int_equal(ret, 0);
		submitted++;
		if (submitted % 500 == 0) {
			/* a synchronous persist in the middle of it all */
			memset(base + SIZE - 4096, submitted & 0xff, 4096);
			assert_int_equal(pmrep_mirror_persist(m, SIZE - 4096,
					4096, 3000 * func_slow()), 0);
		}
		/* keep up to 256 in flight */
		if (submitted - got >= 256)
			got += collect(m, seen, results, NREQ, 1, 5000);
	}
	got += collect(m, seen, results, NREQ, NREQ - got, 10000);
	assert_int_equal(got, NREQ);
	for (int i = 0; i < NREQ; i++) {
		assert_int_equal(seen[i], 1);
		assert_int_equal(results[i], 0);
	}
	/* nothing more comes */
	struct pmrep_mirror_completion extra[4];
	int n = -1;
	assert_int_equal(pmrep_mirror_poll(m, extra, 4, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(pmrep_mirror_get_fd(m, &fd2), 0);
	assert_int_equal(fd, fd2);
	/* length 0 completes at once with 0; bad arguments are refused */
	assert_int_equal(pmrep_mirror_persist_async(m, 0, 0, (void *)(intptr_t)1), 0);
	assert_int_equal(pmrep_mirror_poll(m, extra, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(extra[0].result, 0);
	assert_int_equal(pmrep_mirror_persist_async(m, SIZE, 1, NULL), PMREP_E_RANGE);
	assert_int_equal(pmrep_mirror_persist_async(NULL, 0, 1, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_poll(m, extra, 0, &n), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_get_fd(NULL, &fd2), PMREP_E_INVAL);

	assert_replica_equals(local);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	tgt_stop();
	assert_replica_equals(local);
	free(seen);
	free(results);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

#define NAPPEND 1000

/*
 * with a window of W steps, the first W requests are posted one by one
 * while the target is held; the other NAPPEND - W wait, and being
 * adjacent, go as one step once the window has room: W + 1 posts
 */
static void
coalesced_posts(unsigned window)
{
	tgt_start(true);	/* staging: GPSPM, one persist request per post */
	struct pmrep_pmem *local = local_open();
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(tgt.port, true);
	assert_int_equal(pmrep_mirror_cfg_set_window(c, window), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct pmrep_target_stats before, after;
	/* held: the first post waits for its reply while the others queue */
	tgt_pause(true);
	assert_int_equal(pmrep_target_get_stats(tgt.t, &before), 0);

	int *seen = calloc(NAPPEND, sizeof(int));
	int *results = calloc(NAPPEND, sizeof(int));
	assert_non_null(seen);
	assert_non_null(results);
	for (int i = 0; i < NAPPEND; i++) {
		memset(base + (size_t)i * 100, i & 0xff, 100);
		assert_int_equal(pmrep_mirror_persist_async(m, (size_t)i * 100,
				100, (void *)(intptr_t)(i + 1)), 0);
	}
	tgt_pause(false);
	assert_int_equal(collect(m, seen, results, NAPPEND, NAPPEND, 10000),
			NAPPEND);
	for (int i = 0; i < NAPPEND; i++) {
		assert_int_equal(seen[i], 1);
		assert_int_equal(results[i], 0);
	}
	tgt_pause(true);
	assert_int_equal(pmrep_target_get_stats(tgt.t, &after), 0);
	tgt_pause(false);
	uint64_t posts = after.persist_requests - before.persist_requests;
	print_message("%d adjacent requests, window %u: %llu posts\n", NAPPEND,
			window, (unsigned long long)posts);
	assert_int_equal(posts, window + 1);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	tgt_stop();
	assert_replica_equals(local);
	free(seen);
	free(results);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
adjacent_requests_are_coalesced_into_fewer_posts(void **state)
{
	(void)state;
	coalesced_posts(1);
	coalesced_posts(16);	/* the default window */
	coalesced_posts(PMREP_MIRROR_WINDOW_MAX);
}

#define NKILL 400

static void
target_killed_with_requests_in_flight_fails_each_exactly_once(void **state)
{
	(void)state;
	char rpath[256];
	snprintf(rpath, sizeof(rpath), "%s/replica", dir);
	const struct func_child_cfg ccfg = { .path = rpath, .size = SIZE,
		.key = key, .key_len = sizeof(key) };
	struct func_child child = { 0 };
	char port[16];
	func_child_start(&child, &ccfg, "0");
	snprintf(port, sizeof(port), "%s", child.port);
	struct pmrep_pmem *local = local_open();
	uint8_t *base = pmrep_pmem_get_address(local);
	/*
	 * The freeze below must withhold every confirmation. tcp: whatever
	 * method, the target's process answers (native flush included).
	 * verbs: a frozen target's device still serves RDMA without the
	 * process -- writes, the read of APM, a native flush -- and such a
	 * confirmation would be right (the bytes are in its memory); only
	 * GPSPM waits for the process. So verbs forces GPSPM here.
	 */
	struct pmrep_mirror_cfg *c = mcfg(port, !func_is_tcp());
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	if (!func_is_tcp()) {
		struct pmrep_replica_status st;
		assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
		assert_int_equal(st.method, PMREP_MIRROR_METHOD_GPSPM);
	}

	int *seen = calloc(NKILL, sizeof(int));
	int *results = calloc(NKILL, sizeof(int));
	assert_non_null(seen);
	assert_non_null(results);
	/* frozen: nothing it would answer can be a confirmation */
	func_child_freeze(&child);
	unsigned rs = 777;
	for (int i = 0; i < NKILL; i++) {
		size_t off = (size_t)rand_r(&rs) % (SIZE - 8192);
		size_t len = 1 + (size_t)rand_r(&rs) % 8192;
		memset(base + off, i & 0xff, len);
		assert_int_equal(pmrep_mirror_persist_async(m, off, len,
				(void *)(intptr_t)(i + 1)), 0);
		if (i == NKILL / 2) {
			/* some polled while frozen: nothing completes with 0 */
			int got = collect(m, seen, results, NKILL, NKILL, 50);
			for (int j = 0; j < NKILL; j++)
				if (seen[j])
					assert_int_not_equal(results[j], 0);
			(void)got;
		}
	}
	func_child_kill(&child, SIGKILL);
	int total = 0;
	for (int j = 0; j < NKILL; j++)
		total += seen[j];
	total += collect(m, seen, results, NKILL, NKILL - total, 15000);
	assert_int_equal(total, NKILL);
	for (int i = 0; i < NKILL; i++) {
		assert_int_equal(seen[i], 1);
		assert_int_not_equal(results[i], 0);
		assert_true(results[i] == PMREP_E_CONN_LOST ||
				results[i] == PMREP_E_TIMEOUT);
	}
	struct pmrep_mirror_completion extra[4];
	int n = -1;
	assert_int_equal(pmrep_mirror_poll(m, extra, 4, &n), 0);
	assert_int_equal(n, 0);

	/* back: restart on the same file and port, resync, persist again */
	func_child_start(&child, &ccfg, port);
	assert_string_equal(child.port, port);
	long long deadline = func_now_ms() + 20000LL * func_slow();
	int ret;
	while ((ret = pmrep_mirror_reconnect(m, 3000 * func_slow())) != 0) {
		assert_true(func_now_ms() < deadline);
		usleep(10000);
	}
	memset(seen, 0, NKILL * sizeof(int));
	for (int i = 0; i < 100; i++) {
		memset(base + (size_t)i * 512, 0x5a ^ i, 512);
		assert_int_equal(pmrep_mirror_persist_async(m, (size_t)i * 512,
				512, (void *)(intptr_t)(i + 1)), 0);
	}
	assert_int_equal(collect(m, seen, results, NKILL, 100, 10000), 100);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(seen[i], 1);
		assert_int_equal(results[i], 0);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&child, SIGKILL);
	assert_replica_equals(local);
	free(seen);
	free(results);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/* the warnings logged (a sink for one test) */
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char warn_text[8192];
static size_t warn_len;

static void
warn_keep(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg)
{
	(void)file;
	(void)line;
	(void)func;
	(void)arg;
	if (level > PMREP_LOG_WARNING)
		return;
	pthread_mutex_lock(&warn_lock);
	int n = snprintf(warn_text + warn_len, sizeof(warn_text) - warn_len,
			"%s\n", msg);
	if (n > 0 && (size_t)n < sizeof(warn_text) - warn_len)
		warn_len += (size_t)n;
	pthread_mutex_unlock(&warn_lock);
}

static unsigned
count_of(const char *hay, const char *needle)
{
	unsigned k = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		k++;
	return k;
}

/* a replica state change left untaken keeps the mirror's fd readable (a
 * loop waiting on it never sleeps); polls that find nothing else say so,
 * once; taken, the fd is quiet again */
static void
untaken_events_keep_the_fd_readable_and_polls_say_so_once(void **state)
{
	(void)state;
	tgt_start(false);
	struct pmrep_pmem *local = local_open();
	struct pmrep_mirror_cfg *c = mcfg(tgt.port, false);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	int fd;
	assert_int_equal(pmrep_mirror_get_fd(m, &fd), 0);
	warn_len = 0;
	warn_text[0] = '\0';
	pmrep_log_set_function(warn_keep, NULL);
	pmrep_log_set_threshold(PMREP_LOG_WARNING);
	struct pmrep_mirror_completion out[4];
	for (int i = 0; i < 2500; i++) {
		int n = -1;
		assert_int_equal(pmrep_mirror_poll(m, out, 4, &n), 0);
		assert_int_equal(n, 0);
	}
	/* the replica's IN_SYNC of the attach waits: the fd is readable */
	struct pollfd p = { fd, POLLIN, 0 };
	assert_int_equal(poll(&p, 1, 0), 1);
	pthread_mutex_lock(&warn_lock);
	unsigned said = count_of(warn_text, "pmrep_mirror_get_event");
	pthread_mutex_unlock(&warn_lock);
	assert_int_equal(said, 1);
	struct pmrep_mirror_event ev;
	unsigned taken = 0;
	while (pmrep_mirror_get_event(m, &ev) == 0)
		taken++;
	assert_true(taken >= 1);
	int n = -1;
	assert_int_equal(pmrep_mirror_poll(m, out, 4, &n), 0);
	p.revents = 0;
	assert_int_equal(poll(&p, 1, 0), 0);
	pmrep_log_set_function(NULL, NULL);
	pmrep_log_set_threshold(getenv("PMREP_LOG_LEVEL") ? PMREP_LOG_INFO :
			PMREP_LOG_DISABLED);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-async-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	tgt_stop();
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
		cmocka_unit_test_setup_teardown(many_in_flight_all_complete_with_0_and_byte_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(untaken_events_keep_the_fd_readable_and_polls_say_so_once, setup, teardown),
		cmocka_unit_test_setup_teardown(adjacent_requests_are_coalesced_into_fewer_posts, setup, teardown),
		cmocka_unit_test_setup_teardown(target_killed_with_requests_in_flight_fails_each_exactly_once, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
