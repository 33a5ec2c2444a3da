/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_pmem_mr.c -- memory regions over libpmem2 mappings, on the
 * provider under test: a /dev/shm file (T11) and a device DAX (when
 * PMEM_DEVDAX names one, as in the soft-RoCE guest) take remote writes and
 * a persistent flush, and the bytes are there after the writer is gone and
 * the mapping was made again; a file on an fsdax mount (PMEM_MOUNT) is
 * either registered on demand (ODP) or refused with PMREP_E_NOSUPP and a
 * message naming the alternatives (T10), never a crash or a hang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmrep/pmem.h>

#include "func.h"

#define T 5000
#define LEN (256 * 1024)
#define OFF 4096

static const int server_usage = PMREP_MR_USAGE_WRITE_DST |
	PMREP_MR_USAGE_READ_SRC | PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY |
	PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT;

/* tests/vm/native-flush.sh sets it: verbs must flush natively there */
static void
expect_native_where_required(enum pmrep_flush_method method)
{
	const char *want = getenv("PMREP_TEST_EXPECT_NATIVE_FLUSH");
	if (!func_is_tcp() && want != NULL && strcmp(want, "1") == 0)
		assert_int_equal(method, PMREP_FLUSH_METHOD_NATIVE);
}

/* the client writes LEN pattern bytes at OFF of the server's mapping and
 * flushes them PERSISTENT; one signalled completion must say success.
 * Native RDMA FLUSH (verbs) into memory the device refuses persistent-flush
 * access to (rxe: anything but persistent memory): the region is advertised
 * VISIBILITY only and the flush must fail with a remote access error, never
 * succeed; returns false then */
static bool
write_and_persist(struct pmrep_pmem *pmem, unsigned seed)
{
	struct func_pair p;
	func_pair_open(&p, NULL);

	struct pmrep_mr_local *smr;
	assert_int_equal(pmrep_mr_reg(p.speer, pmrep_pmem_get_address(pmem),
			pmrep_pmem_get_size(pmem), server_usage, &smr), 0);
	assert_int_equal(pmrep_mr_set_persist_fn(smr, pmrep_pmem_persist_cb,
			pmem), 0);
	struct pmrep_mr_remote *rmt = func_remote(smr);

	uint8_t *src = func_alloc(LEN);
	func_pattern(src, LEN, seed);
	struct pmrep_mr_local *cmr;
	assert_int_equal(pmrep_mr_reg(p.cpeer, src, LEN,
			PMREP_MR_USAGE_WRITE_SRC, &cmr), 0);

	/* the replica side declares direct write to pmem (the guest's
	 * emulated NVDIMM has no DDIO in the way): APM where no native flush */
	struct pmrep_peer_cfg *pc;
	assert_int_equal(pmrep_peer_cfg_new(&pc), 0);
	assert_int_equal(pmrep_peer_cfg_set_direct_write_to_pmem(pc, true), 0);
	assert_int_equal(pmrep_conn_apply_remote_peer_cfg(p.cconn, pc), 0);
	assert_int_equal(pmrep_peer_cfg_delete(&pc), 0);
	enum pmrep_flush_method method;
	assert_int_equal(pmrep_conn_get_flush_method(p.cconn, &method), 0);
	assert_int_not_equal(method, PMREP_FLUSH_METHOD_NONE);
	expect_native_where_required(method);
	int ft = 0;
	assert_int_equal(pmrep_mr_remote_get_flush_type(rmt, &ft), 0);
	bool refused = !func_is_tcp() && method == PMREP_FLUSH_METHOD_NATIVE &&
		!(ft & PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT);

	assert_int_equal(pmrep_write(p.cconn, rmt, OFF, cmr, 0, LEN,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_flush(p.cconn, rmt, OFF, LEN,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)0x5a), 0);
	struct pmrep_completion c = func_wait_one(func_cq(p.cconn), T * func_slow());
	assert_int_equal((uintptr_t)c.op_context, 0x5a);
	if (refused && c.status != PMREP_WC_REMOTE_ACCESS_ERROR)
		fail_msg("native persistent flush into memory without persistent-flush access: "
				"expected a remote access error, got %s", pmrep_wc_status_str(c.status));
	if (!refused && c.status != PMREP_WC_SUCCESS)
		fail_msg("persistent flush: %s", pmrep_wc_status_str(c.status));

	if (refused) {
		/* the error completion put the QP in error: the conn is
		 * lost at once (T21); the target's QP is in error too, and
		 * nothing tells it but a completion it would poll */
		func_expect_event(p.cconn, PMREP_CONN_LOST, T * func_slow());
	} else {
		assert_int_equal(pmrep_conn_disconnect(p.cconn), 0);
		func_expect_event(p.cconn, PMREP_CONN_CLOSED, T * func_slow());
		func_expect_event(p.sconn, PMREP_CONN_CLOSED, T * func_slow());
	}
	assert_int_equal(pmrep_conn_delete(&p.cconn), 0);
	assert_int_equal(pmrep_conn_delete(&p.sconn), 0);
	assert_int_equal(pmrep_mr_remote_delete(&rmt), 0);
	assert_int_equal(pmrep_mr_dereg(&cmr), 0);
	assert_int_equal(pmrep_mr_dereg(&smr), 0);
	func_pair_close(&p);
	free(src);
	return !refused;
}

/* map `path` again and find the pattern of `seed` at OFF */
static void
expect_pattern_after_remap(const char *path, unsigned seed)
{
	struct pmrep_pmem *pmem;
	assert_int_equal(pmrep_pmem_open(path, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &pmem), 0);
	uint8_t *want = func_alloc(LEN);
	func_pattern(want, LEN, seed);
	assert_memory_equal((uint8_t *)pmrep_pmem_get_address(pmem) + OFF,
			want, LEN);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	free(want);
}

static void
t11_dev_shm_file_takes_remote_write_and_persist_and_keeps_it(void **state)
{
	(void) state;
	char path[64];
	snprintf(path, sizeof(path), "/dev/shm/pmrep-mr-%d", (int)getpid());
	struct pmrep_pmem *pmem;
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE | PMREP_PMEM_EXCL,
			2 << 20, PMREP_PMEM_GRANULARITY_PAGE, &pmem), 0);
	/* false: native flush, and /dev/shm is no persistent memory */
	bool persisted = write_and_persist(pmem, 11);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	if (persisted)
		expect_pattern_after_remap(path, 11);
	unlink(path);
}

static void
devdax_takes_remote_write_and_persist_and_keeps_it_after_the_writer(void **state)
{
	(void) state;
	const char *dev = getenv("PMEM_DEVDAX");
	if (dev == NULL || dev[0] == '\0')
		skip();	/* no device DAX here (the soft-RoCE guest has one) */
	struct pmrep_pmem *pmem;
	assert_int_equal(pmrep_pmem_open(dev, 0, 0,
			PMREP_PMEM_GRANULARITY_CACHE_LINE, &pmem), 0);
	assert_true(pmrep_pmem_is_devdax(pmem));
	assert_true(write_and_persist(pmem, 23));
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	expect_pattern_after_remap(dev, 23);
}

/*
 * Native RDMA FLUSH for real (verbs with ibv_wr_flush on a device that has
 * it, e.g. rxe on Linux >= 6.2: tests/vm/native-flush.sh): write + FLUSH
 * PERSISTENT + ATOMIC WRITE + FLUSH PERSISTENT into a device DAX region,
 * completions in order and successful, the bytes in place. Skipped where
 * the method is not NATIVE.
 */
static void
native_write_flush_atomic_write_flush_into_devdax(void **state)
{
	(void) state;
	const char *dev = getenv("PMEM_DEVDAX");
	if (func_is_tcp() || dev == NULL || dev[0] == '\0')
		skip();
	struct func_pair p;
	func_pair_open(&p, NULL);
	enum pmrep_flush_method method;
	assert_int_equal(pmrep_conn_get_flush_method(p.cconn, &method), 0);
	expect_native_where_required(method);
	if (method != PMREP_FLUSH_METHOD_NATIVE) {
		func_pair_close_all(&p, NULL);
		skip();
	}
	struct pmrep_pmem *pmem;
	assert_int_equal(pmrep_pmem_open(dev, 0, 0,
			PMREP_PMEM_GRANULARITY_CACHE_LINE, &pmem), 0);
	uint8_t *dax = pmrep_pmem_get_address(pmem);
	struct pmrep_mr_local *smr;
	assert_int_equal(pmrep_mr_reg(p.speer, dax, pmrep_pmem_get_size(pmem),
			server_usage, &smr), 0);
	struct pmrep_mr_remote *rmt = func_remote(smr);
	int ft = 0;
	assert_int_equal(pmrep_mr_remote_get_flush_type(rmt, &ft), 0);
	assert_int_equal(ft, PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT);

	uint8_t *src = func_alloc(LEN);
	func_pattern(src, LEN, 31);
	struct pmrep_mr_local *cmr;
	assert_int_equal(pmrep_mr_reg(p.cpeer, src, LEN,
			PMREP_MR_USAGE_WRITE_SRC, &cmr), 0);
	memset(dax + OFF, 0, LEN + 8);
	const uint8_t v[8] = { 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18 };
	const int always = PMREP_F_COMPLETION_ALWAYS;
	assert_int_equal(pmrep_write(p.cconn, rmt, OFF, cmr, 0, LEN,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_flush(p.cconn, rmt, OFF, LEN,
			PMREP_FLUSH_TYPE_PERSISTENT, always, (void *)1), 0);
	assert_int_equal(pmrep_atomic_write(p.cconn, rmt, OFF + LEN, v,
			always, (void *)2), 0);
	assert_int_equal(pmrep_flush(p.cconn, rmt, OFF + LEN, 8,
			PMREP_FLUSH_TYPE_PERSISTENT, always, (void *)3), 0);
	struct pmrep_completion c[3];
	assert_int_equal(func_collect(func_cq(p.cconn), c, 3, T * func_slow()), 3);
	const enum pmrep_op ops[] = { PMREP_OP_FLUSH, PMREP_OP_ATOMIC_WRITE,
		PMREP_OP_FLUSH };
	for (int i = 0; i < 3; i++) {
		if (c[i].status != PMREP_WC_SUCCESS)
			fail_msg("completion %d: %s", i + 1,
					pmrep_wc_status_str(c[i].status));
		assert_int_equal((uintptr_t)c[i].op_context, (uintptr_t)i + 1);
		assert_int_equal(c[i].op, ops[i]);
	}
	assert_memory_equal(dax + OFF, src, LEN);
	assert_memory_equal(dax + OFF + LEN, v, 8);

	assert_int_equal(pmrep_conn_disconnect(p.cconn), 0);
	func_expect_event(p.cconn, PMREP_CONN_CLOSED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_CLOSED, T * func_slow());
	assert_int_equal(pmrep_conn_delete(&p.cconn), 0);
	assert_int_equal(pmrep_conn_delete(&p.sconn), 0);
	assert_int_equal(pmrep_mr_remote_delete(&rmt), 0);
	assert_int_equal(pmrep_mr_dereg(&cmr), 0);
	assert_int_equal(pmrep_mr_dereg(&smr), 0);
	func_pair_close(&p);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	expect_pattern_after_remap(dev, 31);
	free(src);
}

static char last_error[512];

static void
keep_errors(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg)
{
	(void) file; (void) line; (void) func; (void) arg;
	if (level <= PMREP_LOG_ERROR)
		snprintf(last_error, sizeof(last_error), "%s", msg);
}

static void
t10_fsdax_file_is_registered_on_demand_or_refused_naming_alternatives(void **state)
{
	(void) state;
	const char *mnt = getenv("PMEM_MOUNT");
	if (func_is_tcp() || mnt == NULL || mnt[0] == '\0')
		skip();	/* verbs on an fsdax mount: the soft-RoCE guest */
	char path[256];
	snprintf(path, sizeof(path), "%s/pmrep-mr-%d", mnt, (int)getpid());
	struct pmrep_pmem *pmem;
	/* CACHE_LINE succeeds only on real DAX: the mount is what it claims */
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE | PMREP_PMEM_EXCL,
			2 << 20, PMREP_PMEM_GRANULARITY_CACHE_LINE, &pmem), 0);

	struct pmrep_peer *peer = func_peer(true);
	uint32_t caps = 0;
	assert_int_equal(pmrep_peer_get_caps(peer, &caps), 0);
	struct pmrep_mr_local *mr = NULL;
	last_error[0] = '\0';
	assert_int_equal(pmrep_log_set_function(keep_errors, NULL), 0);
	int ret = pmrep_mr_reg(peer, pmrep_pmem_get_address(pmem),
			pmrep_pmem_get_size(pmem), server_usage, &mr);
	assert_int_equal(pmrep_log_set_function(NULL, NULL), 0);
	if (caps & PMREP_CAP_ODP) {
		assert_int_equal(ret, 0);
		assert_int_equal(pmrep_mr_dereg(&mr), 0);
	} else {
		assert_int_equal(ret, PMREP_E_NOSUPP);
		assert_null(mr);
		/* the message names the cause and what to use instead */
		if (strstr(last_error, "/dev/dax") == NULL ||
				strstr(last_error, "/dev/shm") == NULL)
			fail_msg("unhelpful error: \"%s\"", last_error);
	}
	assert_int_equal(pmrep_peer_delete(&peer), 0);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t11_dev_shm_file_takes_remote_write_and_persist_and_keeps_it),
		cmocka_unit_test(devdax_takes_remote_write_and_persist_and_keeps_it_after_the_writer),
		cmocka_unit_test(native_write_flush_atomic_write_flush_into_devdax),
		cmocka_unit_test(t10_fsdax_file_is_registered_on_demand_or_refused_naming_alternatives),
	};
	return cmocka_run_group_tests_name("pmem MRs", tests, NULL, NULL);
}
