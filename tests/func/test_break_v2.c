/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_v2.c -- protocol v2 against a careless operator and bad luck
 * (tcp provider only; the targets run in threads of this process):
 *  - two mirrors on one log: the second is refused (PMREP_E_BUSY), the
 *    first goes on;
 *  - the mirror state file truncated, or replaced by another set's: the
 *    mirror is refused with the reason, the replica header is left as it
 *    was;
 *  - a mirror restarted with a newer generation resyncs in full (and the
 *    replicas then hold the new one); with an older one, or another region
 *    size, it is refused;
 *  - a mirror restarted with its replicas in another order: each slot's
 *    record names the other replica, both are resynced in full -- never
 *    trusted with the other one's out-of-sync set;
 *  - on a tiny file system (a tmpfs mounted in a private mount namespace
 *    of a child; skipped when the test cannot mount): a new state file on
 *    a full file system is refused with ENOSPC, and a read-only state file
 *    with its reason, neither killing the writer; a sparse state file (a
 *    copy that kept holes) on a full file system used to kill the writer
 *    with SIGBUS at the first store into a hole -- it is now given its
 *    blocks when opened, or refused with ENOSPC (src/repl/mirror/mirror_state.c);
 *  - two mirrors starting at once on one log: the one that created the
 *    state file but lost the race for its lock used to unlink it -- the
 *    other mirror's record, lost at that one's restart. A racer thread
 *    (inotify) opens and locks the file as soon as it is created; the
 *    file must still be there when the creating mirror was refused BUSY
 *    (src/repl/mirror/mirror_state.c).
 *
 * Found and fixed later: a replica file restored from an old copy (same
 * replica id, older data, left consistent) was resynced incrementally and
 * reported in sync while it held the old data; the record now keeps the
 * header sequence it left each replica with (rec_seq), and another one
 * means a full resync. A state file deleted after a run a replica missed
 * (left consistent before): a new record file vouches for no replica, so
 * that one is resynced in full.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (256u << 10)

static const uint8_t key[32] = "break-v2-operator-key-0123456789";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x0b, 0xe2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

struct tgt {
	struct pmrep_target *t;
	pthread_t th;
	atomic_bool stop;
	bool running;
	char port[8];
	char path[160];
};

struct ctx {
	char dir[64];
	char logpath[128];
	char statepath[160];
	struct pmrep_pmem *log;
	struct tgt g[2];
};

static void *
tgt_loop(void *arg)
{
	struct tgt *g = arg;
	while (!atomic_load(&g->stop))
		(void) pmrep_target_process(g->t, 20);
	return NULL;
}

/* serve `path` (created when missing) on a new port: 0, else a failure
 * (no cmocka assertion: the forked child below uses it too) */
static int
tgt_start_rc(struct tgt *g, const char *path)
{
	if (path != g->path)
		snprintf(g->path, sizeof(g->path), "%s", path);
	struct pmrep_target_cfg *cfg;
	if (pmrep_target_cfg_new(&cfg) != 0)
		return -1;
	int ret = pmrep_target_cfg_set_path(cfg, path);
	if (ret == 0)
		ret = pmrep_target_cfg_set_data_size(cfg, SIZE, true);
	if (ret == 0)
		ret = pmrep_target_cfg_set_key(cfg, key, sizeof(key));
	if (ret == 0)
		ret = pmrep_target_cfg_set_timeout(cfg, 2000 * func_slow());
	if (ret == 0)
		ret = pmrep_target_new(cfg, &g->t);
	(void) pmrep_target_cfg_delete(&cfg);
	if (ret)
		return ret;
	uint16_t port = 0;
	(void) pmrep_target_get_port(g->t, &port);
	snprintf(g->port, sizeof(g->port), "%u", port);
	atomic_store(&g->stop, false);
	if (pthread_create(&g->th, NULL, tgt_loop, g) != 0) {
		(void) pmrep_target_delete(&g->t);
		return -1;
	}
	g->running = true;
	return 0;
}

static void
tgt_start(struct tgt *g, const char *path)
{
	assert_int_equal(tgt_start_rc(g, path), 0);
}

static void
tgt_stop(struct tgt *g)
{
	if (!g->running)
		return;
	atomic_store(&g->stop, true);
	pthread_join(g->th, NULL);
	(void) pmrep_target_delete(&g->t);
	g->running = false;
}

static int
setup(void **state)
{
	if (!func_is_tcp())
		return 0;
	struct ctx *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	snprintf(c->dir, sizeof(c->dir), "/dev/shm/pmrep-test-bv2f-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	snprintf(c->logpath, sizeof(c->logpath), "%s/log", c->dir);
	snprintf(c->statepath, sizeof(c->statepath), "%s.pmrep-state", c->logpath);
	assert_int_equal(pmrep_pmem_open(c->logpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &c->log), 0);
	func_pattern(pmrep_pmem_get_address(c->log), SIZE, 1);
	char path[160];
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/replica%d", c->dir, i);
		tgt_start(&c->g[i], path);
	}
	*state = c;
	return 0;
}

static int
teardown(void **state)
{
	struct ctx *c = *state;
	if (c == NULL)
		return 0;
	for (int i = 0; i < 2; i++)
		tgt_stop(&c->g[i]);
	(void) pmrep_pmem_close(&c->log);
	(void) func_rm_rf(c->dir);
	free(c);
	return 0;
}

/* a mirror cfg of replicas `order` (indices into c->g), n of them */
static struct pmrep_mirror_cfg *
mcfg(struct ctx *c, const int *order, int n, uint64_t gen, uint64_t region)
{
	struct pmrep_mirror_cfg *m;
	assert_int_equal(pmrep_mirror_cfg_new(&m), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(pmrep_mirror_cfg_add_replica(m, "127.0.0.1",
				c->g[order[i]].port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(m, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(m, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(m, gen), 0);
	assert_int_equal(pmrep_mirror_cfg_set_region_size(m, region), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(m, 3000 * func_slow()), 0);
	return m;
}

static const int order01[2] = { 0, 1 };
static const int order10[2] = { 1, 0 };

/* pmrep_mirror_new of replicas `order`: its code; *mp the mirror */
static int
mirror_try(struct ctx *c, const int *order, int n, uint64_t gen,
		uint64_t region, struct pmrep_mirror **mp)
{
	struct pmrep_mirror_cfg *cfg = mcfg(c, order, n, gen, region);
	*mp = NULL;
	int ret = pmrep_mirror_new(c->log, cfg, mp);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	return ret;
}

/* a mirror of both replicas persists all of the log and ends cleanly */
static void
mirror_round(struct ctx *c, const int *order, uint64_t gen, unsigned seed)
{
	struct pmrep_mirror *m;
	assert_int_equal(mirror_try(c, order, 2, gen, 64u << 10, &m), 0);
	func_pattern(pmrep_pmem_get_address(c->log), SIZE, seed);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	for (int i = 0; i < 2; i++)
		func_assert_replica_equals(c->log, c->g[i].path);
}

static void
hdr_block(const char *path, uint8_t blk[4096])
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, blk, 4096, 0), 4096);
	close(fd);
}

/* ------------------------------------------------------------ tests */

static void
two_mirrors_on_one_log_the_second_is_refused_busy(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	struct pmrep_mirror *m1, *m2;
	assert_int_equal(mirror_try(c, order01, 2, 1, 64u << 10, &m1), 0);
	assert_int_equal(mirror_try(c, order01, 2, 1, 64u << 10, &m2), PMREP_E_BUSY);
	assert_null(m2);
	assert_non_null(strstr(pmrep_err_msg(), "in use by another mirror"));
	/* the first one was not disturbed: still in sync, persists */
	for (unsigned i = 0; i < 2; i++) {
		struct pmrep_replica_status st;
		assert_int_equal(pmrep_mirror_get_replica_status(m1, i, &st), 0);
		assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	}
	assert_int_equal(pmrep_mirror_persist(m1, 0, SIZE, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&m1), 0);
	for (int i = 0; i < 2; i++)
		func_assert_replica_equals(c->log, c->g[i].path);
}

static void
truncated_or_foreign_state_file_is_refused_and_the_replicas_left_alone(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_round(c, order01, 1, 2);
	static uint8_t h0[2][4096], h1[4096];
	for (int i = 0; i < 2; i++)
		hdr_block(c->g[i].path, h0[i]);
	struct stat sb;
	assert_int_equal(stat(c->statepath, &sb), 0);
	char saved[200];
	snprintf(saved, sizeof(saved), "%s/state.saved", c->dir);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "cp %s %s", c->statepath, saved);
	assert_int_equal(system(cmd), 0);

	/* truncated: inside the metadata, past it (bitmaps cut), to zero */
	off_t cuts[] = { 100, 4096, sb.st_size - 4096, 0 };
	for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
		assert_int_equal(truncate(c->statepath, cuts[k]), 0);
		struct pmrep_mirror *m;
		int ret = mirror_try(c, order01, 2, 1, 64u << 10, &m);
		assert_int_not_equal(ret, 0);
		assert_null(m);
		assert_non_null(strstr(pmrep_err_msg(), "mirror state file"));
		for (int i = 0; i < 2; i++) {
			hdr_block(c->g[i].path, h1);
			assert_memory_equal(h0[i], h1, sizeof(h1));
		}
		snprintf(cmd, sizeof(cmd), "cp %s %s", saved, c->statepath);
		assert_int_equal(system(cmd), 0);
	}

	/* another set's record in its place: refused, left as it was */
	struct pmrep_mirror_cfg *cfg = mcfg(c, order01, 2, 1, 64u << 10);
	uint8_t other[PMREP_UUID_SIZE];
	memcpy(other, uuid, sizeof(other));
	other[15] ^= 0x80;
	assert_int_equal(pmrep_mirror_cfg_set_uuid(cfg, other), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(c->log, cfg, &m), PMREP_E_MISMATCH);
	assert_non_null(strstr(pmrep_err_msg(), "belongs to replica set"));
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	snprintf(cmd, sizeof(cmd), "cmp -s %s %s", saved, c->statepath);
	assert_int_equal(system(cmd), 0);

	/* and the saved record still works: nothing to copy */
	assert_int_equal(mirror_try(c, order01, 2, 1, 64u << 10, &m), 0);
	for (unsigned i = 0; i < 2; i++) {
		struct pmrep_replica_status st;
		assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
		assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
		assert_int_equal(st.resync_bytes, 0);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
}

static void
restart_with_another_generation_or_region_size(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_round(c, order01, 2, 3);
	struct pmrep_mirror *m;
	/* an older generation than the record's: refused */
	assert_int_equal(mirror_try(c, order01, 2, 1, 64u << 10, &m), PMREP_E_STATE);
	assert_null(m);
	/* another region size: refused, with both sizes */
	assert_int_equal(mirror_try(c, order01, 2, 2, 4096, &m), PMREP_E_INVAL);
	assert_null(m);
	assert_non_null(strstr(pmrep_err_msg(), "region size"));
	/* a newer one: the replicas (generation 2) are compared in full */
	assert_int_equal(mirror_try(c, order01, 2, 3, 64u << 10, &m), 0);
	for (unsigned i = 0; i < 2; i++) {
		struct pmrep_replica_status st;
		assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
		assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
		assert_int_equal(st.resync_compared, SIZE);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	for (int i = 0; i < 2; i++) {
		struct pmrep_replica_info info;
		assert_int_equal(pmrep_replica_read_info(c->g[i].path, &info), 0);
		assert_int_equal(info.generation, 3);
		assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	}
	/* and the generation-2 mirror is now refused by the replicas too
	 * (the record says 3: refused before) */
	assert_int_equal(mirror_try(c, order01, 2, 2, 64u << 10, &m), PMREP_E_STATE);
}

static void
replicas_in_another_order_are_resynced_in_full(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_round(c, order01, 1, 4);
	/* replica 1 misses writes: its target is down for them */
	struct pmrep_mirror_cfg *cfg = mcfg(c, order01, 2, 1, 64u << 10);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(cfg, 1), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(c->log, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	/* new returned once either was in sync (k = 1): replica 0 must be
	 * before replica 1's target goes */
	long long until = func_now_ms() + 10000LL * func_slow();
	for (;;) {
		struct pmrep_replica_status s0;
		assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &s0), 0);
		if (s0.state == PMREP_REPLICA_IN_SYNC)
			break;
		assert_true(func_now_ms() < until);
		usleep(2000);
	}
	char path1[160];
	snprintf(path1, sizeof(path1), "%s", c->g[1].path);
	tgt_stop(&c->g[1]);
	memset(pmrep_pmem_get_address(c->log), 0xa5, 65536);
	assert_int_equal(pmrep_mirror_persist(m, 0, 65536, 3000 * func_slow()), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	tgt_start(&c->g[1], path1);

	/* the same record, the replicas named in the other order: slot 0's
	 * record (replica 0's id, nothing out of sync) must not be taken for
	 * replica 1, which misses the writes above */
	assert_int_equal(mirror_try(c, order10, 2, 1, 64u << 10, &m), 0);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
		assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
		/* neither record trusted: each compared in full */
		assert_int_equal(st.resync_compared, SIZE);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	for (int i = 0; i < 2; i++)
		func_assert_replica_equals(c->log, c->g[i].path);
}

/* another "mirror" that opens and locks the state file the moment it is
 * created -- between the creating mirror's open and its flock */
struct racer {
	const char *dir, *name;
	int ifd;
	int fd;			/* the locked state file, -1: lost the race */
	atomic_bool ready;
};

static void *
racer_main(void *arg)
{
	struct racer *r = arg;
	char buf[4096] __attribute__((aligned(8)));
	atomic_store(&r->ready, true);
	for (;;) {
		ssize_t n = read(r->ifd, buf, sizeof(buf));
		if (n <= 0)
			return NULL;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			if (ev->len && strcmp(ev->name, r->name) == 0) {
				char path[200];
				snprintf(path, sizeof(path), "%s/%s", r->dir, r->name);
				int fd = open(path, O_RDWR);
				if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
					r->fd = fd;
				} else if (fd >= 0) {
					close(fd);
				}
				return NULL;
			}
			p += sizeof(*ev) + ev->len;
		}
	}
}

static void
state_file_created_by_a_racing_mirror_is_not_removed_under_it(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	int won = 0;
	for (int attempt = 0; attempt < 20 && won == 0; attempt++) {
		unlink(c->statepath);
		struct racer r = { .dir = c->dir, .name = "log.pmrep-state", .fd = -1 };
		r.ifd = inotify_init1(IN_CLOEXEC);
		assert_true(r.ifd >= 0);
		assert_true(inotify_add_watch(r.ifd, c->dir, IN_CREATE) >= 0);
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, racer_main, &r), 0);
		while (!atomic_load(&r.ready))
			sched_yield();
		struct pmrep_mirror *m;
		int ret = mirror_try(c, order01, 2, 1, 64u << 10, &m);
		close(r.ifd);	/* ends the racer's read if it saw nothing */
		pthread_join(th, NULL);
		if (ret == 0) {
			/* the mirror locked it first: try again */
			assert_int_equal(r.fd, -1);
			assert_int_equal(pmrep_mirror_delete(&m), 0);
			continue;
		}
		if (r.fd < 0)
			continue;
		/* the racer holds the lock: the mirror was refused as busy,
		 * and the file the racer holds must still be there (it used
		 * to be unlinked: the other mirror's record, gone at its
		 * restart) */
		won++;
		assert_int_equal(ret, PMREP_E_BUSY);
		struct stat a, b;
		assert_int_equal(fstat(r.fd, &a), 0);
		assert_int_equal(stat(c->statepath, &b), 0);
		assert_int_equal(a.st_ino, b.st_ino);
		close(r.fd);
	}
	if (won == 0)
		skip();	/* the race was never won here */
}

/* the operator deletes the record after a run that one replica missed:
 * the new record file vouches for nothing, so that replica, still marked
 * consistent from before, is resynced in full (it was taken as in sync) */
static void
state_file_deleted_while_a_replica_lagged_is_not_trusted(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_round(c, order01, 1, 7);	/* both consistent */
	/* replica 1 is down for a whole run of the writer */
	char path1[160];
	snprintf(path1, sizeof(path1), "%s", c->g[1].path);
	tgt_stop(&c->g[1]);
	struct pmrep_mirror_cfg *cfg = mcfg(c, order01, 2, 1, 64u << 10);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(cfg, 1), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(c->log, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	func_pattern(pmrep_pmem_get_address(c->log), SIZE, 8);
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	/* the operator deletes the record */
	assert_int_equal(unlink(c->statepath), 0);
	tgt_start(&c->g[1], path1);
	assert_int_equal(mirror_try(c, order01, 2, 1, 64u << 10, &m), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	bool in_sync = st.state == PMREP_REPLICA_IN_SYNC;
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	if (in_sync)
		func_assert_replica_equals(c->log, path1);
}

/*
 * two histories under one (set UUID, generation) -- a second log, a test
 * copy: the later mirror's COMMIT fences the earlier one and leaves the
 * replica consistent with ITS data. The first mirror's restart must not
 * take that replica as covered by its record (its owner is another
 * mirror): full resync, and the replica holds the first log again.
 */
static void
replica_claimed_by_another_mirror_of_the_same_set_is_resynced_in_full(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_round(c, order01, 1, 21);	/* ours: both consistent */
	char other[160];
	snprintf(other, sizeof(other), "%s/otherlog", c->dir);
	struct pmrep_pmem *olog;
	assert_int_equal(pmrep_pmem_open(other, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &olog), 0);
	func_pattern(pmrep_pmem_get_address(olog), SIZE, 22);
	struct pmrep_mirror_cfg *cfg = mcfg(c, order01, 1, 1, 64u << 10);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(olog, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	func_assert_replica_equals(olog, c->g[0].path);	/* the other's data */
	(void) pmrep_pmem_close(&olog);

	assert_int_equal(mirror_try(c, order01, 2, 1, 64u << 10, &m), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.resync_bytes, SIZE);	/* in full */
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	assert_int_equal(st.resync_bytes, 0);		/* still ours */
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	for (int i = 0; i < 2; i++)
		func_assert_replica_equals(c->log, c->g[i].path);
}

/*
 * a brand-new log (and so a new record file) under the set UUID and
 * generation of replicas another log left consistent: the new record
 * vouches for none of them, so they are resynced in full (they were taken
 * as complete copies: 0 bytes copied, then DIFFERENT)
 */
static void
new_record_file_does_not_trust_a_consistent_replica_it_never_saw(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_round(c, order01, 1, 31);	/* consistent with the log */
	char fresh[160];
	snprintf(fresh, sizeof(fresh), "%s/freshlog", c->dir);
	struct pmrep_pmem *flog;
	assert_int_equal(pmrep_pmem_open(fresh, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &flog), 0);
	func_pattern(pmrep_pmem_get_address(flog), SIZE, 32);
	struct pmrep_mirror_cfg *cfg = mcfg(c, order01, 2, 1, 64u << 10);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(flog, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	struct pmrep_replica_status st;
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
		assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
		assert_int_equal(st.resync_bytes, SIZE);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	for (int i = 0; i < 2; i++)
		func_assert_replica_equals(flog, c->g[i].path);
	(void) pmrep_pmem_close(&flog);
}

/* a replica file restored from an old copy (same replica id, older data
 * and an older header): the record keeps the header sequence it left the
 * replica with, so the old copy is resynced in full, never taken as in
 * sync (it was, with the old data) */
static void
replica_restored_from_an_old_copy_is_not_reported_in_sync(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	mirror_round(c, order01, 1, 5);
	/* the operator backs replica 1 up (consistent, clean) ... */
	char saved[200], cmd[512];
	snprintf(saved, sizeof(saved), "%s/replica1.saved", c->dir);
	tgt_stop(&c->g[1]);
	snprintf(cmd, sizeof(cmd), "cp %s %s", c->g[1].path, saved);
	assert_int_equal(system(cmd), 0);
	tgt_start(&c->g[1], c->g[1].path);
	/* ... the writer goes on ... */
	mirror_round(c, order01, 1, 6);
	/* ... and the backup is restored over replica 1 */
	char path1[160];
	snprintf(path1, sizeof(path1), "%s", c->g[1].path);
	tgt_stop(&c->g[1]);
	snprintf(cmd, sizeof(cmd), "cp %s %s", saved, path1);
	assert_int_equal(system(cmd), 0);
	tgt_start(&c->g[1], path1);
	struct pmrep_mirror *m;
	assert_int_equal(mirror_try(c, order01, 2, 1, 64u << 10, &m), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.resync_bytes, SIZE);	/* in full */
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.resync_bytes, 0);		/* the other one: nothing */
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_assert_replica_equals(c->log, path1);
}


/* ------------------------------------------ a tiny file system (child) */

/* the mirror's state file at `state` (on the tiny file system) for c's
 * log and replicas: pmrep_mirror_new's code (the mirror is deleted) */
static int
mirror_with_state(struct ctx *c, const char *state)
{
	struct pmrep_mirror_cfg *cfg = mcfg(c, order01, 2, 1, 64u << 10);
	assert_int_equal(pmrep_mirror_cfg_set_state_path(cfg, state), 0);
	struct pmrep_mirror *m = NULL;
	int ret = pmrep_mirror_new(c->log, cfg, &m);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	if (ret == 0) {
		ret = pmrep_mirror_persist(m, 0, SIZE, 3000 * func_slow());
		int r2 = pmrep_mirror_delete(&m);
		if (ret == 0)
			ret = r2;
	}
	return ret;
}

static void
fill_fs(const char *mnt)
{
	char fill[200];
	snprintf(fill, sizeof(fill), "%s/fill", mnt);
	int f = open(fill, O_CREAT | O_WRONLY, 0600);
	assert_true(f >= 0);
	static uint8_t zero[4096];
	while (write(f, zero, sizeof(zero)) > 0)
		;
	close(f);
}

enum fs_case { FS_NEW_FULL, FS_SPARSE_FULL, FS_READ_ONLY };

/* the child's part: 0 = as expected, 77 = cannot mount here, else a step */
static int
fs_child(struct ctx *c, enum fs_case k)
{
	if (unshare(CLONE_NEWNS) != 0 ||
			mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0)
		return 77;
	char mnt[] = "/tmp/pmrep-test-bv2-fs-XXXXXX";
	if (mkdtemp(mnt) == NULL)
		return 2;
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=256k") != 0) {
		rmdir(mnt);
		return 77;
	}
	int ret = 3;
	char st[200];
	snprintf(st, sizeof(st), "%s/state", mnt);
	/* the targets are started here: a child of a process with threads
	 * has only this one */
	char path[160];
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/replica%d", c->dir, i);
		if (tgt_start_rc(&c->g[i], path) != 0)
			return 12;
	}
	if (pmrep_pmem_open(c->logpath, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&c->log) != 0)
		return 13;
	int r;
	switch (k) {
	case FS_NEW_FULL:
		fill_fs(mnt);
		r = mirror_with_state(c, st);
		if (r != PMREP_E_PROVIDER || pmrep_err_errno() != ENOSPC) {
			print_error("new state file on a full fs: %d %s\n", r, pmrep_err_msg());
			ret = 4;
			break;
		}
		ret = access(st, F_OK) == 0 ? 5 : 0;	/* nothing left behind */
		break;
	case FS_SPARSE_FULL: {
		/* a record made as usual, then copied keeping only its
		 * first page (the slots) and holes for the rest */
		if (mirror_with_state(c, st) != 0) {
			ret = 6;
			break;
		}
		struct stat sb;
		uint8_t slots[4096];
		int fd = open(st, O_RDONLY);
		if (fd < 0 || fstat(fd, &sb) != 0 ||
				pread(fd, slots, sizeof(slots), 0) != (ssize_t)sizeof(slots)) {
			ret = 7;
			break;
		}
		close(fd);
		unlink(st);
		fd = open(st, O_CREAT | O_RDWR, 0600);
		if (fd < 0 || pwrite(fd, slots, sizeof(slots), 0) != (ssize_t)sizeof(slots) ||
				ftruncate(fd, sb.st_size) != 0) {
			ret = 8;
			break;
		}
		close(fd);
		fill_fs(mnt);
		r = mirror_with_state(c, st);
		/* refused for want of room (or given the room and fine) --
		 * not a SIGBUS */
		if (r == 0 || (r == PMREP_E_PROVIDER && pmrep_err_errno() == ENOSPC)) {
			ret = 0;
		} else {
			print_error("sparse state file on a full fs: %d %s\n", r, pmrep_err_msg());
			ret = 9;
		}
		break;
	}
	case FS_READ_ONLY:
		if (mirror_with_state(c, st) != 0) {
			ret = 10;
			break;
		}
		if (mount("tmpfs", mnt, "tmpfs", MS_REMOUNT | MS_RDONLY, NULL) != 0) {
			ret = 77;
			break;
		}
		r = mirror_with_state(c, st);
		if (r == 0 || strstr(pmrep_err_msg(), "mirror state file") == NULL) {
			print_error("read-only state file: %d %s\n", r, pmrep_err_msg());
			ret = 11;
			break;
		}
		ret = 0;
		break;
	}
	for (int i = 0; i < 2; i++)
		tgt_stop(&c->g[i]);
	(void) pmrep_pmem_close(&c->log);
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
	return ret;
}

static void
fs_case(void **state, enum fs_case k)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	/* the child makes its own targets and mapping */
	for (int i = 0; i < 2; i++)
		tgt_stop(&c->g[i]);
	(void) pmrep_pmem_close(&c->log);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* a fault kills the child (cmocka's handlers would go on
		 * running the other tests in it) */
		signal(SIGBUS, SIG_DFL);
		signal(SIGSEGV, SIG_DFL);
		_exit(fs_child(c, k));
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		print_error("the writer was killed by signal %d (%s)\n",
				WTERMSIG(st), strsignal(WTERMSIG(st)));
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip();	/* cannot mount a small file system here */
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void
new_state_file_on_a_full_file_system_is_refused_with_enospc(void **state)
{
	fs_case(state, FS_NEW_FULL);
}

static void
sparse_state_file_on_a_full_file_system_does_not_kill_the_writer(void **state)
{
	fs_case(state, FS_SPARSE_FULL);
}

static void
read_only_state_file_is_refused_with_its_reason(void **state)
{
	fs_case(state, FS_READ_ONLY);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(two_mirrors_on_one_log_the_second_is_refused_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(truncated_or_foreign_state_file_is_refused_and_the_replicas_left_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(restart_with_another_generation_or_region_size, setup, teardown),
		cmocka_unit_test_setup_teardown(replicas_in_another_order_are_resynced_in_full, setup, teardown),
		cmocka_unit_test_setup_teardown(state_file_created_by_a_racing_mirror_is_not_removed_under_it, setup, teardown),
		cmocka_unit_test_setup_teardown(new_state_file_on_a_full_file_system_is_refused_with_enospc, setup, teardown),
		cmocka_unit_test_setup_teardown(sparse_state_file_on_a_full_file_system_does_not_kill_the_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(read_only_state_file_is_refused_with_its_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(state_file_deleted_while_a_replica_lagged_is_not_trusted, setup, teardown),
		cmocka_unit_test_setup_teardown(replica_claimed_by_another_mirror_of_the_same_set_is_resynced_in_full, setup, teardown),
		cmocka_unit_test_setup_teardown(new_record_file_does_not_trust_a_consistent_replica_it_never_saw, setup, teardown),
		cmocka_unit_test_setup_teardown(replica_restored_from_an_old_copy_is_not_reported_in_sync, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
