/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_mirror.c -- the replication layer end to end, over the
 * provider under test (PMREP_TEST_PROVIDER: tcp on loopback here, verbs on
 * rxe in the soft-RoCE guest, tests/vm): a mirror on a local pmem file,
 * replica targets in a thread of this process or in a child process (this
 * binary re-executed with --target, so that it can be frozen and killed).
 * Proves: a persisted range is byte-exact in the replica (native, APM,
 * GPSPM, staging); wrong key / size / UUID / generation and malformed
 * handshakes are refused with their error codes and nothing hangs; T20: a
 * target that stops answering or dies during a persist makes the persist
 * fail, never succeed, and the range is resynced after the target returns;
 * quorum keeps going on a replica loss where "all" fails. Verbs only, in
 * the guest: a replica on device DAX (direct, APM), T10 on file-system DAX
 * and T11 on a page-cache file (staging, GPSPM).
 * Past ~800 lines: one program end to end; its cases share the target fixtures.
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
#include "repl_hello.h"
#include "repl_target.h"

#define SIZE (1u << 20)
#define REGION 4096u

static const uint8_t key[32] = "test-key-0123456789-abcdefghijkl";
static const uint8_t uuid_a[PMREP_UUID_SIZE] = { 0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t uuid_b[PMREP_UUID_SIZE] = { 0xbb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128];

/* ------------------------------------------------ target in a thread */

struct tgt {
	struct pmrep_target *t;
	pthread_t th;
	atomic_bool stop;
	char port[8];
};

/*
 * Targets live here, not on a test's stack: cmocka leaves a failed test
 * by longjmp, and the teardown must still find (and stop) the thread that
 * serves it -- else it goes on with a dead stack frame's pointers.
 */
#define NTGT 3
static struct tgt tgts[NTGT];

static void *
tgt_loop(void *arg)
{
	struct tgt *g = arg;
	while (!atomic_load(&g->stop))
		(void) pmrep_target_process(g->t, 20);
	return NULL;
}

struct tgt_opts {
	bool staging;		/* force the staging buffer */
	bool direct_write;	/* declare direct write to pmem */
	int timeout_ms;		/* 0: 3000 */
	bool no_tls;		/* tcp: a plaintext target (default TLS) */
};

/* a target on `path` (created with `size` data bytes unless it holds a
 * replica), served from a thread of this process on the test address */
static int
tgt_start_path(struct tgt **gp, const char *path, uint64_t size,
		const struct tgt_opts *o)
{
	struct tgt *g = NULL;
	for (int i = 0; i < NTGT && g == NULL; i++)
		if (tgts[i].t == NULL)
			g = &tgts[i];
	assert_non_null(g);
	struct pmrep_target_cfg *cfg;
	memset(g, 0, sizeof(*g));
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, size, true), 0);
	assert_int_equal(pmrep_target_cfg_set_address(cfg, func_addr(), "0"), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_target_cfg_set_staging(cfg, o->staging), 0);
	assert_int_equal(pmrep_target_cfg_set_direct_write_to_pmem(cfg,
			o->direct_write), 0);
	assert_int_equal(pmrep_target_cfg_set_timeout(cfg,
			o->timeout_ms ? o->timeout_ms : 3000 * func_slow()), 0);
	if (o->no_tls)
		assert_int_equal(pmrep_target_cfg_set_tls(cfg, false), 0);
	int ret = pmrep_target_new(cfg, &g->t);
	pmrep_target_cfg_delete(&cfg);
	if (ret)
		return ret;
	uint16_t port;
	assert_int_equal(pmrep_target_get_port(g->t, &port), 0);
	snprintf(g->port, sizeof(g->port), "%u", port);
	assert_int_equal(pthread_create(&g->th, NULL, tgt_loop, g), 0);
	*gp = g;
	return 0;
}

/* a target on the file `name` in the test directory */
static int
tgt_start(struct tgt **gp, const char *name, uint64_t size, bool staging,
		int timeout_ms)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct tgt_opts o = { .staging = staging, .timeout_ms = timeout_ms };
	return tgt_start_path(gp, path, size, &o);
}

static void
tgt_stop(struct tgt *g)
{
	if (g == NULL || g->t == NULL)
		return;
	atomic_store(&g->stop, true);
	pthread_join(g->th, NULL);
	assert_int_equal(pmrep_target_delete(&g->t), 0);
}

/* --------------------------------------- target in a child process */

/* a child (repl_target.h) serving the file "replica" in the test
 * directory, declaring direct write to pmem or not */
static void
child_start(struct func_child *c, const char *port, bool direct_write)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/replica", dir);
	const struct func_child_cfg cfg = { .path = path, .size = SIZE,
		.key = key, .key_len = sizeof(key),
		.direct_write = direct_write };
	func_child_start(c, &cfg, port);
}

/* ----------------------------------------------------------- helpers */

static struct pmrep_pmem *
local_open(const char *name, size_t size)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct pmrep_pmem *p = NULL;
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, size,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	return p;
}

static struct pmrep_mirror_cfg *
mcfg(const char *port, const uint8_t *uuid, uint64_t gen)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, gen), 0);
	assert_int_equal(pmrep_mirror_cfg_set_region_size(c, REGION), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 3000 * func_slow()), 0);
	return c;
}

static void
fill(struct pmrep_pmem *p, size_t off, size_t len, unsigned seed)
{
	uint8_t *b = (uint8_t *)pmrep_pmem_get_address(p) + off;
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* the replica file `name` (in the test directory) equals the local mapping */
static void
assert_replica_equals(struct pmrep_pmem *local, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	func_assert_replica_equals(local, path);
}

/*
 * The method a mirror gets for a target that registered its mapping
 * itself: native flush where the initiator's peer has it (tcp; verbs with
 * RDMA FLUSH), else APM where the target declares direct write to pmem,
 * else GPSPM.
 */
#define METHOD_NATIVE_OR_GPSPM ((enum pmrep_mirror_method)100)

static enum pmrep_mirror_method
direct_method(bool direct_write)
{
	struct pmrep_peer *peer = func_peer(false);
	uint32_t caps = 0;
	assert_int_equal(pmrep_peer_get_caps(peer, &caps), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
	/* native RDMA FLUSH needs the target's region registered for
	 * persistent flush, which some devices grant only on persistent
	 * memory (rxe refuses it for RAM such as /dev/shm): then GPSPM */
	if (caps & PMREP_CAP_NATIVE_FLUSH)
		return METHOD_NATIVE_OR_GPSPM;
	return direct_write ? PMREP_MIRROR_METHOD_APM : PMREP_MIRROR_METHOD_GPSPM;
}

/* the method in use is `want` (or one of the two METHOD_NATIVE_OR_GPSPM means) */
static void
assert_method(enum pmrep_mirror_method got, enum pmrep_mirror_method want)
{
	if (want == METHOD_NATIVE_OR_GPSPM) {
		if (got != PMREP_MIRROR_METHOD_NATIVE && got != PMREP_MIRROR_METHOD_GPSPM)
			fail_msg("method %s, expected native or gpspm",
					pmrep_mirror_method_str(got));
		return;
	}
	assert_int_equal(got, want);
}

static enum pmrep_mirror_method
method_of(struct pmrep_mirror *m, unsigned i)
{
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
	return st.method;
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-repl-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	/* what a failed test left running */
	for (int i = 0; i < NTGT; i++)
		if (tgts[i].t != NULL)
			tgt_stop(&tgts[i]);
	func_child_kill_all();
	return func_rm_rf(dir);
}

/* ------------------------------------------------------------- tests */

/*
 * a mirror of a fresh local mapping of `size` bytes to a target on `rpath`:
 * the full resync, 50 scattered persists and the last byte are byte-exact
 * in the replica before the mirror ends, and it is marked consistent after
 */
static void
persist_roundtrip_at(const char *rpath, uint64_t size, const struct tgt_opts *o,
		bool force_gpspm, enum pmrep_target_mode want_mode,
		enum pmrep_mirror_method want)
{
	struct tgt *g;
	assert_int_equal(tgt_start_path(&g, rpath, size, o), 0);
	enum pmrep_target_mode mode;
	assert_int_equal(pmrep_target_get_mode(g->t, &mode), 0);
	assert_int_equal(mode, want_mode);

	struct pmrep_pmem *local = local_open("local", size);
	fill(local, 0, size, 1);	/* written before the mirror: full resync */
	struct pmrep_mirror_cfg *c = mcfg(g->port, uuid_a, 1);
	assert_int_equal(pmrep_mirror_cfg_set_force_gpspm(c, force_gpspm), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	enum pmrep_mirror_method got = method_of(m, 0);
	assert_method(got, want);
	want = got;	/* what the target counts below depends on it */
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.lag_bytes, 0);
	assert_int_equal(st.resync_bytes, size);	/* a fresh replica: all of it */

	for (unsigned i = 0; i < 50; i++) {
		size_t off = (i * 12345u) % (SIZE - 3000);
		off += (size_t)(size - SIZE) / 50 * i;	/* spread over all of it */
		fill(local, off, 3000, 100 + i);
		assert_int_equal(pmrep_mirror_persist(m, off, 3000, 3000), 0);
	}
	fill(local, size - 1, 1, 99);
	assert_int_equal(pmrep_mirror_persist(m, size - 1, 1, 3000), 0);
	assert_int_equal(pmrep_mirror_persist(m, size, 1, 3000), PMREP_E_RANGE);
	assert_int_equal(pmrep_mirror_persist(m, 0, 0, 3000), 0);
	/* the data is there before the mirror says goodbye */
	func_assert_replica_equals(local, rpath);
	struct pmrep_target_stats ts;
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.sessions_accepted, 1);
	if (want == PMREP_MIRROR_METHOD_GPSPM)
		assert_true(ts.persist_requests >= 51);
	else
		assert_int_equal(ts.persist_requests, 0);

	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_null(m);
	tgt_stop(g);

	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(rpath, &info), 0);
	assert_memory_equal(info.uuid, uuid_a, PMREP_UUID_SIZE);
	assert_int_equal(info.data_size, size);
	assert_int_equal(info.generation, 1);
	/* the position's internal bits (PROTOCOL.md "Position") aside */
	assert_int_equal(info.flags & 7u, PMREP_REPLICA_F_CONSISTENT);
	func_assert_replica_equals(local, rpath);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/* the same on the file "replica" in the test directory (tmpfs) */
static void
persist_roundtrip(const struct tgt_opts *o, bool force_gpspm,
		enum pmrep_mirror_method want)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/replica", dir);
	persist_roundtrip_at(path, SIZE, o, force_gpspm, o->staging ?
			PMREP_TARGET_MODE_STAGING : PMREP_TARGET_MODE_DIRECT,
			want);
}

/* tcp: native flush; verbs: GPSPM, since the target declares no direct
 * write to pmem (and rdma-core 44 has no RDMA FLUSH) */
static void
direct_target_persist_is_byte_exact(void **state)
{
	(void)state;
	struct tgt_opts o = { 0 };
	persist_roundtrip(&o, false, direct_method(false));
}

/* verbs: APM (a read after the writes); tcp: native all the same */
static void
direct_write_target_persist_is_byte_exact_with_apm(void **state)
{
	(void)state;
	struct tgt_opts o = { .direct_write = true };
	persist_roundtrip(&o, false, direct_method(true));
}

static void
staging_target_serves_gpspm_byte_exact(void **state)
{
	(void)state;
	struct tgt_opts o = { .staging = true, .direct_write = true };
	persist_roundtrip(&o, false, PMREP_MIRROR_METHOD_GPSPM);
}

static void
forced_gpspm_on_a_direct_target_is_byte_exact(void **state)
{
	(void)state;
	struct tgt_opts o = { .direct_write = true };
	persist_roundtrip(&o, true, PMREP_MIRROR_METHOD_GPSPM);
}

/* ------------------------------------------ verbs: where the replica lives */

/* a directory the guest provides for a case (PMEM_MOUNT ...), else skip */
static const char *
verbs_env_or_skip(const char *var)
{
	if (func_is_tcp())
		skip();
	const char *v = getenv(var);
	if (v == NULL || v[0] == '\0') {
		print_message("%s is not set (not in the soft-RoCE guest?): skipped\n", var);
		skip();
	}
	return v;
}

/*
 * verbs: a replica on device DAX. Its mapping is registered as it is
 * (the kernel pins device-DAX pages), so the target serves it directly;
 * it declares direct write to pmem, so the mirror confirms by APM. The
 * device's header block is wiped first: "create" formats a device DAX only
 * when it was never formatted. The whole device is the replica: the full
 * resync copies all of it (the guest's device DAX is 32 MiB,
 * VM_DEVDAX_SIZE in tests/vm/run-in-vm.sh: over rxe under TCG that copy
 * takes seconds, 512 MiB took two minutes).
 */
static void
devdax_replica_is_served_direct_and_byte_exact(void **state)
{
	(void)state;
	const char *dev = verbs_env_or_skip("PMEM_DEVDAX");
	struct pmrep_pmem *d = NULL;
	assert_int_equal(pmrep_pmem_open(dev, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&d), 0);
	assert_true(pmrep_pmem_is_devdax(d));
	size_t devsize = pmrep_pmem_get_size(d);
	assert_true(devsize > PMREP_REPLICA_DATA_OFFSET + SIZE);
	pmrep_pmem_get_memset_fn(d)(pmrep_pmem_get_address(d), 0,
			PMREP_REPLICA_DATA_OFFSET, 0);
	assert_int_equal(pmrep_pmem_close(&d), 0);

	struct tgt_opts o = { .direct_write = true };
	persist_roundtrip_at(dev, devsize - PMREP_REPLICA_DATA_OFFSET, &o,
			false, PMREP_TARGET_MODE_DIRECT, direct_method(true));
}

/*
 * T10, verbs: a replica file on file-system DAX (ext4 -o dax). rxe has no
 * ODP, so the kernel refuses to register the mapping (EOPNOTSUPP); the
 * target falls back to its staging buffer, and the mirror uses GPSPM even
 * though the target declares direct write to pmem. Byte-exact all the same.
 */
static void
t10_fsdax_replica_falls_back_to_staging_gpspm(void **state)
{
	(void)state;
	const char *mnt = verbs_env_or_skip("PMEM_MOUNT");
	char path[256];
	snprintf(path, sizeof(path), "%s/pmrep-test-repl-t10.%d", mnt, (int)getpid());
	unlink(path);
	struct tgt_opts o = { .direct_write = true };
	persist_roundtrip_at(path, SIZE, &o, false, PMREP_TARGET_MODE_STAGING,
			PMREP_MIRROR_METHOD_GPSPM);
	assert_int_equal(unlink(path), 0);
}

/*
 * T11, verbs: a replica file on a page-cache file system (here the build
 * directory, which the guest shares over 9p with cache=mmap). The device
 * would write into pages pinned at registration that nothing marks dirty,
 * so persist (msync) would not write them back: kernels from 6.5 on refuse
 * the registration (EFAULT), and Debian 12's 6.1 accepts it -- and then
 * the file did not hold what the mirror had been told was durable. The
 * target must not try: staging and GPSPM on every kernel, byte-exact.
 */
static void
t11_page_cache_replica_falls_back_to_staging_gpspm(void **state)
{
	(void)state;
	/* tcp: the target stores with the CPU, which dirties the pages:
	 * served directly (in the build directory of this host) */
	if (!func_is_tcp())
		(void) verbs_env_or_skip("IN_VM");
	char cwd[200], path[256];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(path, sizeof(path), "%s/pmrep-test-repl-t11.%d", cwd, (int)getpid());
	unlink(path);
	struct tgt_opts o = { .direct_write = true };
	if (func_is_tcp())
		persist_roundtrip_at(path, SIZE, &o, false,
				PMREP_TARGET_MODE_DIRECT, direct_method(true));
	else
		persist_roundtrip_at(path, SIZE, &o, false,
				PMREP_TARGET_MODE_STAGING,
				PMREP_MIRROR_METHOD_GPSPM);
	assert_int_equal(unlink(path), 0);
}

/*
 * T11, the initiator's side: the local mapping is a file in a page cache
 * (the build directory; 9p with cache=mmap in the guest). The device only
 * reads it, so the mirror must register it read-only: a writable pin of a
 * page-cache mapping is refused from Linux 6.5 on (EFAULT).
 */
static void
t11_page_cache_local_mapping_is_mirrored(void **state)
{
	(void)state;
	if (!func_is_tcp())
		(void) verbs_env_or_skip("IN_VM");
	char cwd[200], path[256];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(path, sizeof(path), "%s/pmrep-test-local-t11.%d", cwd, (int)getpid());
	unlink(path);
	struct pmrep_pmem *local = NULL;
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	struct tgt *g;
	assert_int_equal(tgt_start(&g, "replica", SIZE, false, 3000), 0);
	fill(local, 0, SIZE, 11);
	struct pmrep_mirror_cfg *c = mcfg(g->port, uuid_a, 1);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	for (unsigned i = 0; i < 20; i++) {
		size_t off = (i * 54321u) % (SIZE - 5000);
		fill(local, off, 5000, 200 + i);
		assert_int_equal(pmrep_mirror_persist(m, off, 5000, 3000), 0);
	}
	assert_replica_equals(local, "replica");
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	tgt_stop(g);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
	assert_int_equal(unlink(path), 0);
	/* and the mirror's record next to it (the default state path) */
	char spath[300];
	snprintf(spath, sizeof(spath), "%s.pmrep-state", path);
	assert_int_equal(unlink(spath), 0);
}

static void
consistent_replica_of_the_same_generation_needs_no_resync(void **state)
{
	(void)state;
	struct tgt *g;
	assert_int_equal(tgt_start(&g, "replica", SIZE, false, 3000), 0);
	struct pmrep_pmem *local = local_open("local", SIZE);
	fill(local, 0, SIZE, 3);
	struct pmrep_mirror_cfg *c = mcfg(g->port, uuid_a, 4);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);

	/* the same generation again: nothing to copy */
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.resync_bytes, 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);

	/* a newer local generation: all of it compared by digests (the
	 * replica's bytes are not trusted), nothing differs to copy */
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, 5), 0);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.resync_compared, SIZE);
	assert_int_equal(st.resync_bytes, 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	tgt_stop(g);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
expect_refusal(const char *port, struct pmrep_pmem *local,
		struct pmrep_mirror_cfg *c, int want)
{
	(void)port;
	struct pmrep_mirror *m = NULL;
	long long t0 = time(NULL);
	assert_int_equal(pmrep_mirror_new(local, c, &m), want);
	assert_null(m);
	assert_true(time(NULL) - t0 < 10);
}

static void
wrong_key_is_refused_with_auth(void **state)
{
	(void)state;
	struct tgt *g;
	assert_int_equal(tgt_start(&g, "replica", SIZE, false, 3000), 0);
	struct pmrep_pmem *local = local_open("local", SIZE);
	struct pmrep_mirror_cfg *c = mcfg(g->port, uuid_a, 1);
	uint8_t bad[32];
	memcpy(bad, key, sizeof(bad));
	bad[0] ^= 1;
	assert_int_equal(pmrep_mirror_cfg_set_key(c, bad, sizeof(bad)), 0);
	/* tcp: the TLS handshake (a PSK derived from the key) fails first */
	int want = func_is_tcp() ? PMREP_E_TLS : PMREP_E_AUTH;
	expect_refusal(g->port, local, c, want);
	struct pmrep_target_stats ts;
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.sessions_accepted, 0);
	assert_int_equal(ts.sessions_refused, 1);
	assert_int_equal(ts.last_refusal, want);
	/* the refused initiator did not claim the replica */
	tgt_stop(g);
	char path[256];
	snprintf(path, sizeof(path), "%s/replica", dir);
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	uint8_t nil[PMREP_UUID_SIZE] = { 0 };
	assert_memory_equal(info.uuid, nil, PMREP_UUID_SIZE);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
wrong_size_is_refused_with_range(void **state)
{
	(void)state;
	struct tgt *g;
	assert_int_equal(tgt_start(&g, "replica", SIZE, false, 3000), 0);
	struct pmrep_pmem *local = local_open("local", SIZE / 2);
	struct pmrep_mirror_cfg *c = mcfg(g->port, uuid_a, 1);
	expect_refusal(g->port, local, c, PMREP_E_RANGE);
	struct pmrep_target_stats ts;
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.last_refusal, PMREP_E_RANGE);
	tgt_stop(g);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
other_replica_set_and_newer_generation_are_refused(void **state)
{
	(void)state;
	struct tgt *g;
	assert_int_equal(tgt_start(&g, "replica", SIZE, false, 3000), 0);
	struct pmrep_pmem *local = local_open("local", SIZE);
	struct pmrep_mirror_cfg *c = mcfg(g->port, uuid_a, 3);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);	/* claims it */
	assert_int_equal(pmrep_mirror_delete(&m), 0);

	/* the mapping's record (its default state file) is of uuid_a and
	 * generation 3: it refuses first, the target sees nothing */
	struct pmrep_mirror_cfg *cb = mcfg(g->port, uuid_b, 3);
	expect_refusal(g->port, local, cb, PMREP_E_MISMATCH);
	struct pmrep_mirror_cfg *old = mcfg(g->port, uuid_a, 2);
	expect_refusal(g->port, local, old, PMREP_E_STATE);
	struct pmrep_target_stats ts;
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.sessions_refused, 0);

	/* without a record file: the target refuses */
	assert_int_equal(pmrep_mirror_cfg_set_state_path(cb, NULL), 0);
	assert_int_equal(pmrep_mirror_cfg_set_state_path(old, NULL), 0);
	expect_refusal(g->port, local, cb, PMREP_E_MISMATCH);
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.last_refusal, PMREP_E_MISMATCH);

	expect_refusal(g->port, local, old, PMREP_E_STATE);
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.last_refusal, PMREP_E_STATE);
	assert_int_equal(ts.sessions_accepted, 1);
	assert_int_equal(ts.sessions_refused, 2);
	tgt_stop(g);
	pmrep_mirror_cfg_delete(&c);
	pmrep_mirror_cfg_delete(&cb);
	pmrep_mirror_cfg_delete(&old);
	pmrep_pmem_close(&local);
}

/* a raw transport connection to the target with `pdata` */
static int
raw_connect(const char *port, const void *pdata, uint8_t len,
		struct pmrep_peer **peer, struct pmrep_conn **conn,
		enum pmrep_conn_event *ev)
{
	struct pmrep_conn_req *req;
	*peer = func_peer(false);
	assert_int_equal(pmrep_conn_req_new(*peer, func_addr(), port, NULL, &req), 0);
	struct pmrep_conn_private_data pd = { pdata, len };
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, conn), 0);
	return pmrep_conn_wait_event(*conn, 3000, ev);
}

static void
malformed_handshakes_are_refused_and_nothing_hangs(void **state)
{
	(void)state;
	struct tgt *g;
	/* raw plaintext transport conns: a plaintext target (TLS refuses
	 * them before any HELLO is read: test_repl_tls.c) */
	char path[256];
	snprintf(path, sizeof(path), "%s/replica", dir);
	struct tgt_opts o = { .timeout_ms = 500, .no_tls = true };
	assert_int_equal(tgt_start_path(&g, path, SIZE, &o), 0);
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;
	enum pmrep_conn_event ev;
	struct pmrep_target_stats ts;

	/* 1: private data that is no HELLO: rejected at connect */
	uint8_t junk[24];
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(raw_connect(g->port, junk, sizeof(junk), &peer, &conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_REJECTED);
	pmrep_conn_delete(&conn);
	pmrep_peer_delete(&peer);
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.last_refusal, PMREP_E_MALFORMED);
	assert_int_equal(ts.sessions_refused, 1);

	/* 2: no private data at all */
	assert_int_equal(raw_connect(g->port, NULL, 0, &peer, &conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_REJECTED);
	pmrep_conn_delete(&conn);
	pmrep_peer_delete(&peer);

	/* 2b: a well-formed v2 HELLO without an admission proof (keyless):
	 * rejected at the connection request */
	uint8_t hello[FUNC_HELLO_LEN];
	func_repl_hello(hello, NULL, 0, 0, NULL, 0, NULL);
	assert_int_equal(raw_connect(g->port, hello, sizeof(hello), &peer, &conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_REJECTED);
	pmrep_conn_delete(&conn);
	pmrep_peer_delete(&peer);
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.last_refusal, PMREP_E_AUTH);
	assert_int_equal(ts.sessions_started, 0);

	/* 3: a valid HELLO (v2, key id 0, no selector, the proof of our
	 * key), then a garbage message instead of AUTH: the target answers
	 * REFUSE(malformed) and closes */
	func_repl_hello(hello, key, sizeof(key), 0, NULL, func_admit_window(0), NULL);
	assert_int_equal(raw_connect(g->port, hello, sizeof(hello), &peer, &conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	static uint8_t buf[256];
	struct pmrep_mr_local *mr;
	assert_int_equal(pmrep_mr_reg(peer, buf, sizeof(buf),
			PMREP_MR_USAGE_SEND | PMREP_MR_USAGE_RECV, &mr), 0);
	assert_int_equal(pmrep_recv(conn, mr, 128, 128, NULL), 0);
	memset(buf, 0xee, 40);
	assert_int_equal(pmrep_send(conn, mr, 0, 40, PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	struct pmrep_cq *cq;
	assert_int_equal(pmrep_conn_get_cq(conn, &cq), 0);
	bool got_refuse = false;
	for (int i = 0; i < 100 && !got_refuse; i++) {
		struct pmrep_completion cmp;
		int n = 0;
		if (pmrep_cq_get_completions(cq, &cmp, 1, &n) == 0 && n == 1 &&
				cmp.op == PMREP_OP_RECV && cmp.status == PMREP_WC_SUCCESS) {
			/* REFUSE: type 3, status 2 (malformed) */
			assert_int_equal(buf[128 + 3], 3);
			assert_int_equal(buf[128 + 4], 2);
			got_refuse = true;
		} else {
			(void) pmrep_cq_wait(cq, 20);
		}
	}
	assert_true(got_refuse);
	assert_int_equal(pmrep_conn_wait_event(conn, 3000, &ev), 0);
	assert_true(ev == PMREP_CONN_CLOSED || ev == PMREP_CONN_LOST);
	pmrep_conn_delete(&conn);
	pmrep_mr_dereg(&mr);
	pmrep_peer_delete(&peer);
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.last_refusal, PMREP_E_MALFORMED);

	/* 4: a valid HELLO (a fresh nonce: the last one's copy would be a
	 * replay) and then silence: dropped after the timeout */
	func_repl_hello(hello, key, sizeof(key), 0, NULL, func_admit_window(0), NULL);
	assert_int_equal(raw_connect(g->port, hello, sizeof(hello), &peer, &conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_wait_event(conn, 5000, &ev), 0);
	assert_true(ev == PMREP_CONN_CLOSED || ev == PMREP_CONN_LOST);
	pmrep_conn_delete(&conn);
	pmrep_peer_delete(&peer);
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	assert_int_equal(ts.last_refusal, PMREP_E_TIMEOUT);
	assert_int_equal(ts.sessions_accepted, 0);
	tgt_stop(g);
}

struct killer {
	struct func_child *c;
	int delay_ms;
};

static void *
kill_later(void *arg)
{
	struct killer *k = arg;
	struct timespec ts = { k->delay_ms / 1000, (k->delay_ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	func_child_kill(k->c, SIGKILL);
	return NULL;
}

/* T20: the flush step never confirms (target frozen, then killed during
 * the persist): the persist fails, the range is out of sync, and after the
 * target is back a reconnect copies exactly that */
static void
t20_target_killed_mid_persist_fails_and_is_resynced(void **state)
{
	(void)state;
	struct func_child c = { 0 };
	child_start(&c, "0", false);
	struct pmrep_pmem *local = local_open("local", SIZE);
	fill(local, 0, SIZE, 7);
	struct pmrep_mirror_cfg *cf = mcfg(c.port, uuid_a, 1);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, cf, &m), 0);
	for (unsigned i = 0; i < 10; i++) {
		fill(local, i * 8192, 8192, 20 + i);
		assert_int_equal(pmrep_mirror_persist(m, i * 8192, 8192, 3000), 0);
	}

	/* frozen target: the persist times out, never succeeds */
	func_child_freeze(&c);
	fill(local, 100 * REGION, 2 * REGION, 40);
	assert_int_equal(pmrep_mirror_persist(m, 100 * REGION, 2 * REGION, 300),
			PMREP_E_TIMEOUT);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_equal(st.last_error, PMREP_E_TIMEOUT);
	assert_int_equal(st.lag_bytes, 2 * REGION);
	func_child_thaw(&c);
	func_child_kill(&c, SIGKILL);

	/* a new target on the same file and port, killed while a persist
	 * waits for its flush step */
	char port[16];
	snprintf(port, sizeof(port), "%s", c.port);
	child_start(&c, port, false);
	int ret = PMREP_E_AGAIN;
	for (int i = 0; i < 100 && ret != 0; i++) {
		ret = pmrep_mirror_reconnect(m, 3000);
		if (ret)
			usleep(50000);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.resync_bytes, SIZE + 2 * REGION);	/* full, then exactly the lag */
	assert_replica_equals(local, "replica");

	func_child_freeze(&c);
	pthread_t th;
	struct killer k = { &c, 200 };
	assert_int_equal(pthread_create(&th, NULL, kill_later, &k), 0);
	fill(local, 200 * REGION, REGION, 50);
	ret = pmrep_mirror_persist(m, 200 * REGION, REGION, 5000);
	pthread_join(th, NULL);
	assert_true(ret == PMREP_E_CONN_LOST || ret == PMREP_E_TIMEOUT);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_equal(st.lag_bytes, REGION);
	/* while it is gone, every persist fails and adds to the lag */
	fill(local, 250 * REGION, 10, 60);
	assert_int_equal(pmrep_mirror_persist(m, 250 * REGION, 10, 1000), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.lag_bytes, 2 * REGION);

	child_start(&c, port, false);
	ret = PMREP_E_AGAIN;
	for (int i = 0; i < 100 && ret != 0; i++) {
		ret = pmrep_mirror_reconnect(m, 3000);
		if (ret)
			usleep(50000);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.lag_bytes, 0);
	assert_int_equal(st.resyncs, 3);
	assert_int_equal(st.resync_bytes, SIZE + 2 * REGION + 2 * REGION);
	assert_replica_equals(local, "replica");
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c, SIGTERM);
	assert_replica_equals(local, "replica");
	pmrep_mirror_cfg_delete(&cf);
	pmrep_pmem_close(&local);
}

/*
 * T20 with a target that declares direct write to pmem: verbs confirms by
 * APM, a read the device answers without the target process (a frozen
 * target still confirms, rightly: the bytes are in its memory), tcp by
 * native flush. Once the target is dead a persist fails, never succeeds,
 * and the range is all a reconnect copies.
 */
static void
t20_direct_write_target_killed_fails_the_persist_and_is_resynced(void **state)
{
	(void)state;
	struct func_child c = { 0 };
	child_start(&c, "0", true);
	struct pmrep_pmem *local = local_open("local", SIZE);
	fill(local, 0, SIZE, 8);
	struct pmrep_mirror_cfg *cf = mcfg(c.port, uuid_a, 1);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, cf, &m), 0);
	assert_method(method_of(m, 0), direct_method(true));
	for (unsigned i = 0; i < 10; i++) {
		fill(local, i * 8192, 8192, 30 + i);
		assert_int_equal(pmrep_mirror_persist(m, i * 8192, 8192, 3000), 0);
	}
	char port[16];
	snprintf(port, sizeof(port), "%s", c.port);
	func_child_kill(&c, SIGKILL);
	fill(local, 150 * REGION, REGION, 80);
	int ret = pmrep_mirror_persist(m, 150 * REGION, REGION, 5000);
	assert_true(ret == PMREP_E_CONN_LOST || ret == PMREP_E_TIMEOUT);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_equal(st.lag_bytes, REGION);

	child_start(&c, port, true);
	ret = PMREP_E_AGAIN;
	for (int i = 0; i < 100 && ret != 0; i++) {
		ret = pmrep_mirror_reconnect(m, 3000);
		if (ret)
			usleep(50000);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_method(st.method, direct_method(true));
	assert_int_equal(st.lag_bytes, 0);
	assert_int_equal(st.resync_bytes, SIZE + REGION);	/* full, then the lost range */
	assert_replica_equals(local, "replica");
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&c, SIGTERM);
	assert_replica_equals(local, "replica");
	pmrep_mirror_cfg_delete(&cf);
	pmrep_pmem_close(&local);
}

static void
quorum_survives_a_replica_loss_where_all_fails(void **state)
{
	(void)state;
	struct tgt *g1, *g2;
	assert_int_equal(tgt_start(&g1, "r1", SIZE, false, 3000), 0);
	assert_int_equal(tgt_start(&g2, "r2", SIZE, true, 3000), 0);
	struct pmrep_pmem *local = local_open("local", SIZE);
	struct pmrep_mirror_cfg *c = mcfg(g1->port, uuid_a, 1);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), g2->port), 0);

	/* all: a lost replica fails the persist */
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	assert_method(method_of(m, 0), direct_method(false));
	assert_int_equal(method_of(m, 1), PMREP_MIRROR_METHOD_GPSPM);
	fill(local, 0, 4096, 1);
	assert_int_equal(pmrep_mirror_persist(m, 0, 4096, 3000), 0);
	tgt_stop(g2);
	fill(local, 4096, 4096, 2);
	assert_int_not_equal(pmrep_mirror_persist(m, 4096, 4096, 3000), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_equal(st.lag_bytes, 4096);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(pmrep_mirror_delete(&m), 0);

	/* quorum 1 of 2: keeps going degraded */
	assert_int_equal(pmrep_mirror_cfg_set_quorum(c, 1), 0);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);	/* r2 is down */
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	for (unsigned i = 0; i < 5; i++) {
		fill(local, i * 4096, 4096, 10 + i);
		assert_int_equal(pmrep_mirror_persist(m, i * 4096, 4096, 3000), 0);
	}
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	tgt_stop(g1);
	assert_replica_equals(local, "r1");
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/*
 * a replica that cannot be reached when the mirror starts, and of which
 * the mirror's record knows nothing, may lack everything: its lag is the
 * whole data size (it used to read 0), and stays so until an attach
 */
static void
replica_unreachable_at_new_shows_all_of_it_as_lag(void **state)
{
	(void)state;
	struct tgt *g1, *g2;
	assert_int_equal(tgt_start(&g1, "u1", SIZE, false, 3000), 0);
	assert_int_equal(tgt_start(&g2, "u2", SIZE, false, 3000), 0);
	char port2[16];
	snprintf(port2, sizeof(port2), "%s", g2->port);
	tgt_stop(g2);			/* nobody listens there now */
	struct pmrep_pmem *local = local_open("ulocal", SIZE);	/* no record yet */
	struct pmrep_mirror_cfg *c = mcfg(g1->port, uuid_a, 1);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(), port2), 0);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(c, 1), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_equal(st.lag_bytes, SIZE);
	fill(local, 0, 4096, 7);
	assert_int_equal(pmrep_mirror_persist(m, 0, 4096, 3000), 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 1, &st), 0);
	assert_int_equal(st.lag_bytes, SIZE);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.lag_bytes, 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	tgt_stop(g1);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

int
main(int argc, char *argv[])
{
	func_child_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(direct_target_persist_is_byte_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(direct_write_target_persist_is_byte_exact_with_apm, setup, teardown),
		cmocka_unit_test_setup_teardown(staging_target_serves_gpspm_byte_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(forced_gpspm_on_a_direct_target_is_byte_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(devdax_replica_is_served_direct_and_byte_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(t10_fsdax_replica_falls_back_to_staging_gpspm, setup, teardown),
		cmocka_unit_test_setup_teardown(t11_page_cache_replica_falls_back_to_staging_gpspm, setup, teardown),
		cmocka_unit_test_setup_teardown(t11_page_cache_local_mapping_is_mirrored, setup, teardown),
		cmocka_unit_test_setup_teardown(consistent_replica_of_the_same_generation_needs_no_resync, setup, teardown),
		cmocka_unit_test_setup_teardown(wrong_key_is_refused_with_auth, setup, teardown),
		cmocka_unit_test_setup_teardown(wrong_size_is_refused_with_range, setup, teardown),
		cmocka_unit_test_setup_teardown(other_replica_set_and_newer_generation_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(malformed_handshakes_are_refused_and_nothing_hangs, setup, teardown),
		cmocka_unit_test_setup_teardown(t20_target_killed_mid_persist_fails_and_is_resynced, setup, teardown),
		cmocka_unit_test_setup_teardown(t20_direct_write_target_killed_fails_the_persist_and_is_resynced, setup, teardown),
		cmocka_unit_test_setup_teardown(quorum_survives_a_replica_loss_where_all_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(replica_unreachable_at_new_shows_all_of_it_as_lag, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
