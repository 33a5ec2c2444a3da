/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_kill.c -- a replica target killed with SIGKILL at random
 * moments under a stream of persists, over the provider under test
 * (PMREP_TEST_PROVIDER: tcp on loopback here, verbs on rxe in the
 * soft-RoCE guest, tests/vm). Whatever the method, a killed target
 * confirms nothing: its process, and with it its QPs and MRs, is gone
 * once it is reaped (verbs included: the device serves nothing of it).
 *
 * The target is a child process (this binary re-executed with --target).
 * The initiator appends checksummed records to a local pmem log and
 * persists each one; a record is acknowledged only when persist returned 0.
 * A killer thread SIGKILLs the target at a seeded random moment (the seed
 * is printed; PMREP_TEST_SEED replays it), reaps it with waitpid and says
 * so; the stream then sees a persist fail, restarts the target on the
 * same file and port, pmrep_mirror_reconnect()s until the replica is in
 * sync, persists the failed record again and goes on. At least KILLS
 * times, within 60 s. Then:
 *  - no persist that began after the target was reaped and before it was
 *    restarted returned 0 (checked live and again from the records);
 *  - every failed persist happened while a kill was under way;
 *  - every acknowledged record is byte-exact in the replica file and its
 *    checksum holds there; and the whole data area equals the log.
 */
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (16u << 20)
#define REGION 4096u
#define KILLS 24		/* >= 20 */
#define BUDGET_MS 60000
#define REC_MAGIC 0x52454331u	/* "REC1" */
#define REC_HDR 24
#define REC_MIN 32
#define REC_MAX 1024
#define MAX_RECS (SIZE / REC_MIN)

static const uint8_t key[32] = "test-key-0123456789-abcdefghijkl";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xc1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128];

/* the target child (running while its pid is not 0) and its config */
static struct func_child child;
static struct func_child_cfg child_cfg;
static char rpath[256];

/* ------------------------------------------------------- the killer */

struct killer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool armed;		/* a kill is scheduled (or under way) */
	bool quit;
	int delay_us;		/* of the scheduled kill */
	long long kill_sent_ms;	/* of the last kill */
	long long reaped_ms;	/* the target of the last kill is gone */
	atomic_bool sent;	/* kill() is about to be / was sent */
	atomic_bool reaped;	/* ... and waitpid returned */
	int kills;
};

static void *
killer_main(void *arg)
{
	struct killer *k = arg;
	pthread_mutex_lock(&k->lock);
	for (;;) {
		while (!k->armed && !k->quit)
			pthread_cond_wait(&k->cond, &k->lock);
		if (k->quit)
			break;
		int delay = k->delay_us;
		pthread_mutex_unlock(&k->lock);
		usleep((useconds_t)delay);
		atomic_store(&k->sent, true);
		long long t0 = func_now_ms();
		func_child_kill(&child, SIGKILL);
		long long t1 = func_now_ms();
		pthread_mutex_lock(&k->lock);
		k->kill_sent_ms = t0;
		k->reaped_ms = t1;
		k->kills++;
		k->armed = false;
		atomic_store(&k->reaped, true);
		pthread_cond_broadcast(&k->cond);
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

static void
killer_arm(struct killer *k, int delay_us)
{
	pthread_mutex_lock(&k->lock);
	atomic_store(&k->sent, false);
	atomic_store(&k->reaped, false);
	k->delay_us = delay_us;
	k->armed = true;
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);
}

/* wait until the armed kill was done */
static void
killer_wait(struct killer *k)
{
	pthread_mutex_lock(&k->lock);
	while (k->armed)
		pthread_cond_wait(&k->cond, &k->lock);
	pthread_mutex_unlock(&k->lock);
}

/* ---------------------------------------------------------- records */

struct rec {
	uint64_t off, len;
	long long start_ms;	/* persist began */
	int ret;		/* what it returned */
	bool reaped_before;	/* the target was known dead when it began */
};

struct outage {
	long long reaped_ms, restarted_ms;
};

static uint64_t
fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void
put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void
put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* a record: u32 magic, u32 length, u64 sequence, u64 FNV-1a of the
 * payload, payload */
static void
rec_write(uint8_t *p, size_t len, uint64_t seq, unsigned *rs)
{
	put32(p, REC_MAGIC);
	put32(p + 4, (uint32_t)len);
	put64(p + 8, seq);
	for (size_t i = REC_HDR; i < len; i++)
		p[i] = (uint8_t)rand_r(rs);
	put64(p + 16, fnv1a(p + REC_HDR, len - REC_HDR));
}

static bool
rec_valid(const uint8_t *p, size_t len, uint64_t seq)
{
	uint32_t magic, l;
	uint64_t s, sum;
	memcpy(&magic, p, 4);
	memcpy(&l, p + 4, 4);
	memcpy(&s, p + 8, 8);
	memcpy(&sum, p + 16, 8);
	return magic == REC_MAGIC && l == len && s == seq &&
		sum == fnv1a(p + REC_HDR, len - REC_HDR);
}

/* -------------------------------------------------------------- test */

static void
reconnect_until_in_sync(struct pmrep_mirror *m, long long deadline)
{
	for (;;) {
		int ret = pmrep_mirror_reconnect(m, 3000 * func_slow());
		if (ret == 0)
			return;
		assert_true(func_now_ms() < deadline);
		usleep(5000);
	}
}

static void
sigkill_at_random_points_keeps_every_acknowledged_record(void **state)
{
	(void)state;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	const char *env = getenv("PMREP_TEST_SEED");
	if (env != NULL && env[0] != '\0')
		seed = (unsigned)strtoul(env, NULL, 0);
	printf("test_repl_kill: seed %u (PMREP_TEST_SEED=%u replays it)\n",
			seed, seed);
	fflush(stdout);
	unsigned rs = seed;
	long long t_begin = func_now_ms();
	long long deadline = t_begin + (long long)BUDGET_MS * func_slow();

	char port[16];
	func_child_start(&child, &child_cfg, "0");
	snprintf(port, sizeof(port), "%s", child.port);

	char lpath[256];
	snprintf(lpath, sizeof(lpath), "%s/log", dir);
	struct pmrep_pmem *local = NULL;
	assert_int_equal(pmrep_pmem_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	uint8_t *base = pmrep_pmem_get_address(local);

	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_region_size(c, REGION), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 3000 * func_slow()), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);

	struct rec *recs = calloc(MAX_RECS, sizeof(*recs));
	struct outage *outs = calloc(KILLS + 1, sizeof(*outs));
	assert_non_null(recs);
	assert_non_null(outs);
	size_t nrec = 0, nacked = 0, nfailed = 0;
	int nout = 0;

	struct killer k = { .lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, killer_main, &k), 0);
	/* kills 0.5 .. 30 ms after the stream (re)starts: mostly in the
	 * middle of a persist, sometimes between two */
	killer_arm(&k, 500 + (int)(rand_r(&rs) % 30000));

	uint64_t off = 0;
	uint64_t seq = 0;
	while (nout < KILLS) {
		assert_true(func_now_ms() < deadline);
		size_t len = REC_MIN + (size_t)rand_r(&rs) % (REC_MAX - REC_MIN + 1);
		assert_true(off + len <= SIZE);	/* sized for far more */
		assert_true(nrec < MAX_RECS);
		rec_write(base + off, len, seq, &rs);
		struct rec *r = &recs[nrec++];
		r->off = off;
		r->len = len;
		r->reaped_before = atomic_load(&k.reaped);
		r->start_ms = func_now_ms();
		r->ret = pmrep_mirror_persist(m, (size_t)off, len,
				2000 * func_slow());
		if (r->ret == 0) {
			/* never 0 with the target known to be gone */
			assert_false(r->reaped_before);
			nacked++;
			off += len;
			seq++;
			continue;
		}
		nfailed++;
		/* a failure only because of the kill under way */
		assert_true(atomic_load(&k.sent));
		killer_wait(&k);
		/* the target is reaped: a persist now must fail too */
		assert_true(nrec < MAX_RECS);
		struct rec *r2 = &recs[nrec++];
		*r2 = *r;
		r2->reaped_before = true;
		r2->start_ms = func_now_ms();
		r2->ret = pmrep_mirror_persist(m, (size_t)off, len,
				2000 * func_slow());
		assert_int_not_equal(r2->ret, 0);
		outs[nout].reaped_ms = k.reaped_ms;
		/* restart on the same file and port; resync; the stream
		 * retries the record (it is the same one, seq unchanged) */
		func_child_start(&child, &child_cfg, port);
		assert_string_equal(child.port, port);
		outs[nout].restarted_ms = func_now_ms();
		nout++;
		reconnect_until_in_sync(m, deadline);
		if (nout < KILLS)
			killer_arm(&k, 500 + (int)(rand_r(&rs) % 30000));
	}
	/* a last stretch with no kill */
	for (int i = 0; i < 50; i++) {
		size_t len = REC_MIN + (size_t)rand_r(&rs) % (REC_MAX - REC_MIN + 1);
		assert_true(off + len <= SIZE);
		rec_write(base + off, len, seq, &rs);
		struct rec *r = &recs[nrec++];
		r->off = off;
		r->len = len;
		r->start_ms = func_now_ms();
		r->ret = pmrep_mirror_persist(m, (size_t)off, len, 2000 * func_slow());
		assert_int_equal(r->ret, 0);
		nacked++;
		off += len;
		seq++;
	}
	pthread_mutex_lock(&k.lock);
	k.quit = true;
	pthread_cond_broadcast(&k.cond);
	pthread_mutex_unlock(&k.lock);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(k.kills, KILLS);

	/* from the records: no success began inside an outage */
	for (size_t i = 0; i < nrec; i++) {
		if (recs[i].ret != 0)
			continue;
		for (int j = 0; j < nout; j++)
			assert_false(recs[i].start_ms > outs[j].reaped_ms &&
					recs[i].start_ms < outs[j].restarted_ms);
	}
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_true(st.resyncs >= (uint64_t)KILLS);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&child, SIGKILL);

	/* every acknowledged record, byte-exact and valid in the replica */
	uint8_t *rep = func_replica_read(rpath, SIZE);
	uint64_t s = 0;
	for (size_t i = 0; i < nrec; i++) {
		if (recs[i].ret != 0)
			continue;
		const struct rec *r = &recs[i];
		assert_true(rec_valid(rep + r->off, r->len, s));
		assert_memory_equal(rep + r->off, base + r->off, r->len);
		s++;
	}
	assert_int_equal(s, nacked);
	assert_memory_equal(rep, base, SIZE);
	printf("test_repl_kill: %d kills, %zu records acknowledged, %zu persists failed, %llu ms\n",
			nout, nacked, nfailed,
			(unsigned long long)(func_now_ms() - t_begin));
	free(rep);
	free(recs);
	free(outs);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-kill-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(rpath, sizeof(rpath), "%s/replica", dir);
	child_cfg = (struct func_child_cfg){ .path = rpath, .size = SIZE,
		.key = key, .key_len = sizeof(key) };
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
		cmocka_unit_test_setup_teardown(sigkill_at_random_points_keeps_every_acknowledged_record, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
