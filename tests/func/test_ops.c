/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ops.c -- every operation at 1, 64, 1024, 1025, 4096, 64 KiB and
 * 1 MiB, byte-exact and touching nothing beside its range; completions in
 * posting order; unsignalled requests; a flush covers every earlier write;
 * requests flagged PMREP_F_MORE complete with the request that ends the
 * batch (or once the CQ is polled); a PERSISTENT flush calls the region's
 * persist function (tcp); a peer that floods READs and never takes the
 * responses is pushed back on by TCP flow control instead of growing the
 * target's memory (tcp).
 * Past ~800 lines: one program for every operation; its cases share fixtures.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "func.h"

#define REGION (2 * FUNC_SIZE_MAX + 8192)
#define GUARD 0xa5
#define T 10000		/* ms for one op, however large */

struct fx {
	struct func_pair p;
	struct pmrep_conn_cfg *cfg;
	struct func_mrs m;
	/* shorthands for m's fields */
	uint8_t *cbuf, *sbuf;
	struct pmrep_mr_local *cmr, *smr;
	struct pmrep_mr_remote *srmt;
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	assert_int_equal(pmrep_conn_cfg_new(&f->cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(f->cfg, 1024), 0);
	assert_int_equal(pmrep_conn_cfg_set_rq_size(f->cfg, 64), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(f->cfg, 1024), 0);
	struct func_opts o = { .ccfg = f->cfg, .scfg = f->cfg };
	func_pair_open(&f->p, &o);
	func_mrs_reg(&f->m, &f->p, REGION, PMREP_MR_USAGE_ALL);
	f->cbuf = f->m.cbuf;
	f->sbuf = f->m.sbuf;
	f->cmr = f->m.cmr;
	f->smr = f->m.smr;
	f->srmt = f->m.srmt;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	func_pair_close_all(&f->p, &f->m);
	pmrep_conn_cfg_delete(&f->cfg);
	free(f);
	return 0;
}

static void
expect_ok(struct pmrep_cq *cq, enum pmrep_op op, uintptr_t ctx)
{
	struct pmrep_completion c = func_wait_one(cq, T);
	if (c.status != PMREP_WC_SUCCESS)
		fail_msg("ctx %lu: %s", (unsigned long)(uintptr_t)c.op_context,
				pmrep_wc_status_str(c.status));
	assert_int_equal((uintptr_t)c.op_context, ctx);
	assert_int_equal(c.op, op);
}

/* the bytes around [off, off + len) still hold the guard pattern */
static void
expect_guards(const uint8_t *buf, size_t off, size_t len)
{
	assert_int_equal(buf[off - 1], GUARD);
	assert_int_equal(buf[off + len], GUARD);
}

static size_t
dst_off(int i)
{
	return 4096 + 7 + (size_t)i * 13;	/* odd, never page aligned */
}

static void
write_is_byte_exact_at_every_size(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	for (int i = 0; i < FUNC_NSIZES; i++) {
		size_t len = func_sizes[i], off = dst_off(i), src = 3;
		memset(f->sbuf, GUARD, REGION);
		func_pattern(f->cbuf + src, len, (unsigned)i + 1);
		assert_int_equal(pmrep_write(f->p.cconn, f->srmt, off, f->cmr,
				src, len, PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1)), 0);
		assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, off, len,
				PMREP_FLUSH_TYPE_VISIBILITY,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(100 + i)), 0);
		expect_ok(cq, PMREP_OP_WRITE, (uintptr_t)i + 1);
		expect_ok(cq, PMREP_OP_FLUSH, 100 + (uintptr_t)i);
		assert_memory_equal(f->sbuf + off, f->cbuf + src, len);
		expect_guards(f->sbuf, off, len);
	}
}

static void
read_is_byte_exact_at_every_size(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	for (int i = 0; i < FUNC_NSIZES; i++) {
		size_t len = func_sizes[i], off = dst_off(i), src = 5 + (size_t)i;
		memset(f->cbuf, GUARD, REGION);
		func_pattern(f->sbuf + src, len, (unsigned)i + 50);
		assert_int_equal(pmrep_read(f->p.cconn, f->cmr, off, f->srmt,
				src, len, PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1)), 0);
		expect_ok(cq, PMREP_OP_READ, (uintptr_t)i + 1);
		assert_memory_equal(f->cbuf + off, f->sbuf + src, len);
		expect_guards(f->cbuf, off, len);
	}
}

static void
send_and_recv(struct fx *f, bool imm)
{
	struct pmrep_cq *ccq = func_cq(f->p.cconn);
	struct pmrep_cq *srcq = func_rcq(f->p.sconn);
	for (int i = 0; i < FUNC_NSIZES; i++) {
		size_t len = func_sizes[i], off = dst_off(i), src = 11;
		memset(f->sbuf, GUARD, REGION);
		func_pattern(f->cbuf + src, len, (unsigned)i + 7);
		/* a receive of exactly the message's size */
		assert_int_equal(pmrep_recv(f->p.sconn, f->smr, off, len,
				(void *)(uintptr_t)(200 + i)), 0);
		uint32_t value = 0xc0ffee00u + (uint32_t)i;
		int ret = imm ? pmrep_send_with_imm(f->p.cconn, f->cmr, src,
				len, value, PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1)) :
			pmrep_send(f->p.cconn, f->cmr, src, len,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1));
		assert_int_equal(ret, 0);
		expect_ok(ccq, PMREP_OP_SEND, (uintptr_t)i + 1);
		struct pmrep_completion r = func_wait_one(srcq, T);
		assert_int_equal(r.status, PMREP_WC_SUCCESS);
		assert_int_equal(r.op, PMREP_OP_RECV);
		assert_int_equal((uintptr_t)r.op_context, 200 + (uintptr_t)i);
		assert_int_equal(r.byte_len, len);
		assert_int_equal(r.has_imm, imm);
		if (imm)
			assert_int_equal(r.imm, value);
		assert_memory_equal(f->sbuf + off, f->cbuf + src, len);
		expect_guards(f->sbuf, off, len);
	}
}

static void
send_recv_is_byte_exact_at_every_size(void **state)
{
	send_and_recv(*state, false);
}

static void
send_with_imm_delivers_imm_and_bytes_at_every_size(void **state)
{
	send_and_recv(*state, true);
}

static void
write_with_imm_completes_a_recv_with_imm_at_every_size(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *ccq = func_cq(f->p.cconn);
	struct pmrep_cq *srcq = func_rcq(f->p.sconn);
	for (int i = 0; i < FUNC_NSIZES; i++) {
		size_t len = func_sizes[i], off = dst_off(i), src = 1;
		memset(f->sbuf, GUARD, REGION);
		func_pattern(f->cbuf + src, len, (unsigned)i + 21);
		/* the receive's own buffer is not written by a write+imm */
		assert_int_equal(pmrep_recv(f->p.sconn, f->smr, 0, 16,
				(void *)(uintptr_t)(300 + i)), 0);
		uint32_t value = 0x5eed0000u + (uint32_t)i;
		assert_int_equal(pmrep_write_with_imm(f->p.cconn, f->srmt, off,
				f->cmr, src, len, value,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1)), 0);
		expect_ok(ccq, PMREP_OP_WRITE, (uintptr_t)i + 1);
		struct pmrep_completion r = func_wait_one(srcq, T);
		assert_int_equal(r.status, PMREP_WC_SUCCESS);
		assert_int_equal(r.op, PMREP_OP_RECV_RDMA_WITH_IMM);
		assert_int_equal((uintptr_t)r.op_context, 300 + (uintptr_t)i);
		assert_int_equal(r.byte_len, len);
		assert_true(r.has_imm);
		assert_int_equal(r.imm, value);
		assert_memory_equal(f->sbuf + off, f->cbuf + src, len);
		expect_guards(f->sbuf, off, len);
		assert_int_equal(f->sbuf[0], GUARD);
	}
}

static void
atomic_write_stores_exactly_8_bytes(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	const size_t offs[] = { 8, 4096, 65536 - 8, FUNC_SIZE_MAX + 64 };
	memset(f->sbuf, GUARD, REGION);
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint8_t v[8];
		func_pattern(v, 8, i + 99);
		assert_int_equal(pmrep_atomic_write(f->p.cconn, f->srmt,
				offs[i], v, PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1)), 0);
		expect_ok(cq, PMREP_OP_ATOMIC_WRITE, i + 1);
		assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, offs[i], 8,
				PMREP_FLUSH_TYPE_VISIBILITY,
				PMREP_F_COMPLETION_ALWAYS, (void *)99), 0);
		expect_ok(cq, PMREP_OP_FLUSH, 99);
		assert_memory_equal(f->sbuf + offs[i], v, 8);
		expect_guards(f->sbuf, offs[i], 8);
	}
	/* an unaligned atomic write is refused before anything is posted */
	uint8_t v[8] = { 0 };
	assert_int_equal(pmrep_atomic_write(f->p.cconn, f->srmt, 4, v,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_INVAL);
}

/* ----------------------------------------------------------- flushes */

static const void *persist_ptr;
static size_t persist_len;
static int persist_calls;

static int
record_persist(void *ctx, const void *ptr, size_t size)
{
	(void) ctx;
	persist_ptr = ptr;
	persist_len = size;
	persist_calls++;
	return 0;
}

static bool
persistent_flush_supported(struct fx *f)
{
	enum pmrep_flush_method m;
	assert_int_equal(pmrep_conn_get_flush_method(f->p.cconn, &m), 0);
	if (func_is_tcp())
		assert_int_equal(m, PMREP_FLUSH_METHOD_NATIVE);
	/* tests/vm/native-flush.sh: libibverbs with ibv_wr_flush on a
	 * device with RDMA FLUSH must give verbs conns the native method */
	const char *want = getenv("PMREP_TEST_EXPECT_NATIVE_FLUSH");
	if (!func_is_tcp() && want != NULL && strcmp(want, "1") == 0)
		assert_int_equal(m, PMREP_FLUSH_METHOD_NATIVE);
	if (m == PMREP_FLUSH_METHOD_NATIVE && !func_is_tcp()) {
		/* native RDMA FLUSH PERSISTENT goes only into memory the
		 * device grants persistent-flush access to (rxe: persistent
		 * memory); our malloc'd region is advertised VISIBILITY only.
		 * The refusal: test_access T14; success: test_pmem_mr devdax */
		int ft = 0;
		assert_int_equal(pmrep_mr_remote_get_flush_type(f->srmt, &ft), 0);
		assert_true(ft & PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY);
		if (!(ft & PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT))
			return false;
	}
	if (m != PMREP_FLUSH_METHOD_NONE)
		return true;
	/* T14: never a silent downgrade to VISIBILITY */
	assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, 0, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			NULL), PMREP_E_NOSUPP);
	return false;
}

static void
flush_visibility_and_persistent_complete_at_every_size(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	bool persistent = persistent_flush_supported(f);
	for (int i = 0; i < FUNC_NSIZES; i++) {
		size_t len = func_sizes[i], off = dst_off(i);
		func_pattern(f->cbuf, len, (unsigned)i + 3);
		assert_int_equal(pmrep_write(f->p.cconn, f->srmt, off, f->cmr,
				0, len, PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
		assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, off, len,
				PMREP_FLUSH_TYPE_VISIBILITY,
				PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
		expect_ok(cq, PMREP_OP_FLUSH, 1);
		if (persistent) {
			assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, off,
					len, PMREP_FLUSH_TYPE_PERSISTENT,
					PMREP_F_COMPLETION_ALWAYS, (void *)2), 0);
			expect_ok(cq, PMREP_OP_FLUSH, 2);
		}
		assert_memory_equal(f->sbuf + off, f->cbuf, len);
	}
}

static void
flush_persistent_calls_the_regions_persist_fn_on_its_range_tcp(void **state)
{
	FUNC_TCP_ONLY();
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	assert_int_equal(pmrep_mr_set_persist_fn(f->smr, record_persist, NULL), 0);
	for (int i = 0; i < FUNC_NSIZES; i++) {
		size_t len = func_sizes[i], off = dst_off(i);
		persist_calls = 0;
		persist_ptr = NULL;
		persist_len = 0;
		func_pattern(f->cbuf, len, (unsigned)i + 8);
		assert_int_equal(pmrep_write(f->p.cconn, f->srmt, off, f->cmr,
				0, len, PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
		/* VISIBILITY does not persist */
		assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, off, len,
				PMREP_FLUSH_TYPE_VISIBILITY,
				PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
		expect_ok(cq, PMREP_OP_FLUSH, 1);
		assert_int_equal(persist_calls, 0);
		assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, off, len,
				PMREP_FLUSH_TYPE_PERSISTENT,
				PMREP_F_COMPLETION_ALWAYS, (void *)2), 0);
		expect_ok(cq, PMREP_OP_FLUSH, 2);
		/* called before the completion, once, on exactly the range,
		 * with the bytes already in place */
		assert_int_equal(persist_calls, 1);
		assert_ptr_equal(persist_ptr, f->sbuf + off);
		assert_int_equal(persist_len, len);
		assert_memory_equal(f->sbuf + off, f->cbuf, len);
	}
}

static void
flush_persistent_without_persist_fn_msyncs_a_file_mapping_tcp(void **state)
{
	FUNC_TCP_ONLY();
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	char path[] = "/tmp/pmrep-func-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	const size_t size = 3 * 4096;
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	uint8_t *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			fd, 0);
	assert_true(map != MAP_FAILED);
	struct pmrep_mr_local *mr = NULL;
	assert_int_equal(pmrep_mr_reg(f->p.speer, map, size,
			PMREP_MR_USAGE_ALL, &mr), 0);
	struct pmrep_mr_remote *rmt = func_remote(mr);

	/* a range across a page boundary, not aligned at either end */
	func_pattern(f->cbuf, 5000, 77);
	assert_int_equal(pmrep_write(f->p.cconn, rmt, 100, f->cmr, 0, 5000,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_flush(f->p.cconn, rmt, 100, 5000,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)3), 0);
	expect_ok(cq, PMREP_OP_FLUSH, 3);
	uint8_t back[5000];
	assert_int_equal(pread(fd, back, sizeof(back), 100), (ssize_t)sizeof(back));
	assert_memory_equal(back, f->cbuf, sizeof(back));

	assert_int_equal(pmrep_mr_remote_delete(&rmt), 0);
	assert_int_equal(pmrep_mr_dereg(&mr), 0);
	munmap(map, size);
	close(fd);
}

/* every persist call of the target, in order (tcp: recorded in the
 * target's progress thread, read here after the completions) */
#define MAX_CALLS 256
static struct { const uint8_t *ptr; size_t len; } calls[MAX_CALLS];
static int ncalls;

static int
record_persist_calls(void *ctx, const void *ptr, size_t size)
{
	(void) ctx;
	if (ncalls < MAX_CALLS)
		calls[ncalls] = (typeof(calls[0])){ ptr, size };
	ncalls++;
	return 0;
}

static void
pipelined_persistent_flushes_each_cover_their_range_tcp(void **state)
{
	FUNC_TCP_ONLY();
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	const int n = 64;
	const size_t len = 512;
	ncalls = 0;
	assert_int_equal(pmrep_mr_set_persist_fn(f->smr, record_persist_calls, NULL), 0);
	func_pattern(f->cbuf, (size_t)n * len, 99);
	/* all posted before the first completion is looked at: the target
	 * takes many of them per receive and may persist them together */
	for (int i = 0; i < n; i++) {
		size_t off = (size_t)i * len;
		assert_int_equal(pmrep_write(f->p.cconn, f->srmt, off, f->cmr,
				off, len, PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
		assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, off, len,
				PMREP_FLUSH_TYPE_PERSISTENT,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1)), 0);
	}
	for (int i = 0; i < n; i++)
		expect_ok(cq, PMREP_OP_FLUSH, (uintptr_t)i + 1);
	/* at least one call, at most one per flush, and every flush's range
	 * inside a call made with its bytes in place */
	assert_true(ncalls >= 1 && ncalls <= n);
	for (int i = 0; i < n; i++) {
		const uint8_t *a = f->sbuf + (size_t)i * len;
		bool covered = false;
		for (int k = 0; k < ncalls; k++)
			if (calls[k].ptr <= a && a + len <= calls[k].ptr + calls[k].len)
				covered = true;
		if (!covered)
			fail_msg("flush %d (offset %zu) acknowledged without a persist of its range",
					i, (size_t)i * len);
	}
	assert_memory_equal(f->sbuf, f->cbuf, (size_t)n * len);
	print_message("%d flushes, %d persist calls\n", n, ncalls);
}

static void
failed_persist_fails_a_flush_and_never_acks_one_tcp(void **state)
{
	FUNC_TCP_ONLY();
	/* the msync of an unmapped page is the point; memcheck flags it */
	if (getenv("PMREP_TEST_UNDER_VALGRIND") != NULL)
		skip();
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	/* two pages registered; the second is then unmapped, so msync of any
	 * range that reaches it fails (ENOMEM) */
	const size_t pg = 4096;
	uint8_t *map = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	struct pmrep_mr_local *mr = NULL;
	assert_int_equal(pmrep_mr_reg(f->p.speer, map, 2 * pg,
			PMREP_MR_USAGE_ALL, &mr), 0);
	struct pmrep_mr_remote *rmt = func_remote(mr);
	assert_int_equal(munmap(map + pg, pg), 0);

	func_pattern(f->cbuf, 256, 5);
	/* flush 1: a good range of page 0; flush 2: adjacent, in page 1
	 * (nothing written there: only its persist fails). Taken in one
	 * receive they are persisted as one range, which fails: flush 1 then
	 * fails too. Taken apart, flush 1 succeeds. Flush 2 never does. */
	assert_int_equal(pmrep_write(f->p.cconn, rmt, pg - 256, f->cmr, 0, 256,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_flush(f->p.cconn, rmt, pg - 256, 256,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)1), 0);
	assert_int_equal(pmrep_flush(f->p.cconn, rmt, pg, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)2), 0);
	struct pmrep_completion c1 = func_wait_one(cq, T);
	struct pmrep_completion c2 = func_wait_one(cq, T);
	assert_int_equal((uintptr_t)c1.op_context, 1);
	assert_int_equal((uintptr_t)c2.op_context, 2);
	if (c1.status == PMREP_WC_SUCCESS) {
		assert_int_equal(c2.status, PMREP_WC_REMOTE_OPERATION_ERROR);
	} else {
		assert_int_equal(c1.status, PMREP_WC_REMOTE_OPERATION_ERROR);
		assert_int_equal(c2.status, PMREP_WC_FLUSHED);
	}
	print_message("flush 1: %s, flush 2: %s\n", pmrep_wc_status_str(c1.status),
			pmrep_wc_status_str(c2.status));

	assert_int_equal(pmrep_mr_remote_delete(&rmt), 0);
	assert_int_equal(pmrep_mr_dereg(&mr), 0);
	munmap(map, pg);
}

/* T28: a persist function that reports a failure (the target's mapping
 * could not be written back): the flush is refused, never acknowledged,
 * and the function got the context it was registered with */
static void *failing_ctx_seen;
static atomic_int failing_calls;

static int
failing_persist(void *ctx, const void *ptr, size_t size)
{
	(void) ptr;
	(void) size;
	failing_ctx_seen = ctx;
	atomic_fetch_add(&failing_calls, 1);
	return PMREP_E_PROVIDER;
}

static void
persist_fn_failure_refuses_the_flush_never_acks_it_tcp(void **state)
{
	FUNC_TCP_ONLY();
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	static int my_ctx;
	failing_ctx_seen = NULL;
	atomic_store(&failing_calls, 0);
	assert_int_equal(pmrep_mr_set_persist_fn(f->smr, failing_persist,
			&my_ctx), 0);
	func_pattern(f->cbuf, 512, 28);
	assert_int_equal(pmrep_write(f->p.cconn, f->srmt, 0, f->cmr, 0, 512,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, 0, 512,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)2), 0);
	/* the failed flush's NAK may be back before this post: then the
	 * conn is lost already and the post is refused (T21), else it is
	 * accepted and flushed */
	int r3 = pmrep_flush(f->p.cconn, f->srmt, 0, 512,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			(void *)3);
	assert_true(r3 == 0 || r3 == PMREP_E_CONN_LOST);
	/* the write itself was applied and may be acknowledged; the flush
	 * is a remote operation error; what follows is flushed */
	struct pmrep_completion c = func_wait_one(cq, T);
	if ((uintptr_t)c.op_context == 1) {
		assert_int_equal(c.status, PMREP_WC_SUCCESS);
		c = func_wait_one(cq, T);
	}
	assert_int_equal((uintptr_t)c.op_context, 2);
	assert_int_equal(c.status, PMREP_WC_REMOTE_OPERATION_ERROR);
	if (r3 == 0) {
		c = func_wait_one(cq, T);
		assert_int_equal((uintptr_t)c.op_context, 3);
		assert_int_equal(c.status, PMREP_WC_FLUSHED);
	}
	func_expect_no_completion(cq, 50);
	assert_int_equal(atomic_load(&failing_calls), 1);
	assert_ptr_equal(failing_ctx_seen, &my_ctx);
	/* the bytes are there; only their durability was denied */
	assert_memory_equal(f->sbuf, f->cbuf, 512);
}

static void
flush_after_many_writes_covers_them_all(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	const int n = 1000;
	memset(f->sbuf, 0, REGION);
	func_pattern(f->cbuf, (size_t)n * 64, 1234);
	/* many small unsignalled writes, each its own request */
	for (int i = 0; i < n; i++)
		assert_int_equal(pmrep_write(f->p.cconn, f->srmt,
				(size_t)i * 64, f->cmr, (size_t)i * 64, 64,
				PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, 0, (size_t)n * 64,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			(void *)7), 0);
	expect_ok(cq, PMREP_OP_FLUSH, 7);
	/* the flush's completion alone, and every write in place */
	func_expect_no_completion(cq, 50);
	assert_memory_equal(f->sbuf, f->cbuf, (size_t)n * 64);
}

/*
 * PMREP_F_MORE: verbs holds the writes and posts them with the flush (one
 * doorbell), tcp sends them at once; either way they complete, in order,
 * byte-exact. A batch left open (the last request flagged MORE too) still
 * completes once the application polls / waits on the CQ.
 */
static void
writes_flagged_more_complete_with_the_flush_that_ends_the_batch(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	const size_t a = 4096 + 3, la = 1000, b = 20000 + 5, lb = 70000;
	memset(f->sbuf, GUARD, REGION);
	func_pattern(f->cbuf, la + lb, 4242);
	assert_int_equal(pmrep_write(f->p.cconn, f->srmt, a, f->cmr, 0, la,
			PMREP_F_COMPLETION_ON_ERROR | PMREP_F_MORE, NULL), 0);
	assert_int_equal(pmrep_write(f->p.cconn, f->srmt, b, f->cmr, la, lb,
			PMREP_F_COMPLETION_ALWAYS | PMREP_F_MORE, (void *)1), 0);
	assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, a, b + lb - a,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			(void *)2), 0);
	expect_ok(cq, PMREP_OP_WRITE, 1);
	expect_ok(cq, PMREP_OP_FLUSH, 2);
	func_expect_no_completion(cq, 50);
	assert_memory_equal(f->sbuf + a, f->cbuf, la);
	assert_memory_equal(f->sbuf + b, f->cbuf + la, lb);
	expect_guards(f->sbuf, a, la);
	expect_guards(f->sbuf, b, lb);

	/* read both back, the last read still flagged MORE: the CQ wait
	 * posts it */
	uint8_t *back = f->cbuf + FUNC_SIZE_MAX;
	memset(back, 0, la + lb);
	assert_int_equal(pmrep_read(f->p.cconn, f->cmr, FUNC_SIZE_MAX, f->srmt,
			a, la, PMREP_F_COMPLETION_ON_ERROR | PMREP_F_MORE, NULL),
			0);
	assert_int_equal(pmrep_read(f->p.cconn, f->cmr, FUNC_SIZE_MAX + la,
			f->srmt, b, lb, PMREP_F_COMPLETION_ALWAYS | PMREP_F_MORE,
			(void *)3), 0);
	expect_ok(cq, PMREP_OP_READ, 3);
	assert_memory_equal(back, f->cbuf, la + lb);

	/* MORE is a hint, not a completion flag */
	assert_int_equal(pmrep_write(f->p.cconn, f->srmt, a, f->cmr, 0, la,
			PMREP_F_MORE, NULL), PMREP_E_INVAL);
}

static void
completions_arrive_in_posting_order(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *ccq = func_cq(f->p.cconn);
	int flags = PMREP_F_COMPLETION_ALWAYS;
	uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	func_pattern(f->cbuf, 8192, 5);
	func_pattern(f->sbuf + 65536, 4096, 6);
	assert_int_equal(pmrep_recv(f->p.sconn, f->smr, 200000, 64, NULL), 0);
	assert_int_equal(pmrep_write(f->p.cconn, f->srmt, 0, f->cmr, 0, 4096,
			flags, (void *)1), 0);
	assert_int_equal(pmrep_read(f->p.cconn, f->cmr, 100000, f->srmt,
			65536, 4096, flags, (void *)2), 0);
	assert_int_equal(pmrep_atomic_write(f->p.cconn, f->srmt, 8192, v,
			flags, (void *)3), 0);
	assert_int_equal(pmrep_write(f->p.cconn, f->srmt, 4096, f->cmr, 4096,
			4096, flags, (void *)4), 0);
	assert_int_equal(pmrep_flush(f->p.cconn, f->srmt, 0, 8200,
			PMREP_FLUSH_TYPE_VISIBILITY, flags, (void *)5), 0);
	assert_int_equal(pmrep_send(f->p.cconn, f->cmr, 0, 64, flags,
			(void *)6), 0);
	struct pmrep_completion c[6];
	assert_int_equal(func_collect(ccq, c, 6, T * func_slow()), 6);
	const enum pmrep_op ops[] = { PMREP_OP_WRITE, PMREP_OP_READ,
		PMREP_OP_ATOMIC_WRITE, PMREP_OP_WRITE, PMREP_OP_FLUSH,
		PMREP_OP_SEND };
	for (int i = 0; i < 6; i++) {
		assert_int_equal(c[i].status, PMREP_WC_SUCCESS);
		assert_int_equal((uintptr_t)c[i].op_context, (uintptr_t)i + 1);
		assert_int_equal(c[i].op, ops[i]);
	}
	assert_memory_equal(f->sbuf, f->cbuf, 8192);
	assert_memory_equal(f->cbuf + 100000, f->sbuf + 65536, 4096);
	assert_memory_equal(f->sbuf + 8192, v, 8);
	struct pmrep_completion r = func_wait_one(func_rcq(f->p.sconn), T);
	assert_int_equal(r.status, PMREP_WC_SUCCESS);
	assert_int_equal(r.byte_len, 64);
}

static void
read_sees_the_writes_posted_before_it_and_none_after_tcp(void **state)
{
	FUNC_TCP_ONLY();	/* verbs promises this only with a fence */
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	const size_t len = 65536, x = 8192;
	func_pattern(f->sbuf + x, len, 1000);
	for (unsigned i = 0; i < 30; i++) {
		uint8_t *before = f->cbuf + FUNC_SIZE_MAX;
		uint8_t *after = before + len;
		uint8_t *src = f->cbuf;
		uint8_t expect_before[65536];
		memcpy(expect_before, f->sbuf + x, len);
		func_pattern(src, len, 2000 + i);
		int fl = PMREP_F_COMPLETION_ALWAYS;
		assert_int_equal(pmrep_read(f->p.cconn, f->cmr, FUNC_SIZE_MAX,
				f->srmt, x, len, fl, (void *)1), 0);
		assert_int_equal(pmrep_write(f->p.cconn, f->srmt, x, f->cmr, 0,
				len, fl, (void *)2), 0);
		assert_int_equal(pmrep_read(f->p.cconn, f->cmr,
				FUNC_SIZE_MAX + len, f->srmt, x, len, fl,
				(void *)3), 0);
		expect_ok(cq, PMREP_OP_READ, 1);
		expect_ok(cq, PMREP_OP_WRITE, 2);
		expect_ok(cq, PMREP_OP_READ, 3);
		assert_memory_equal(before, expect_before, len);
		assert_memory_equal(after, src, len);
	}
}

static void
unsignalled_success_gives_no_completion(void **state)
{
	struct fx *f = *state;
	struct pmrep_cq *cq = func_cq(f->p.cconn);
	for (int i = 0; i < 5; i++)
		assert_int_equal(pmrep_write(f->p.cconn, f->srmt, 0, f->cmr, 0,
				64, PMREP_F_COMPLETION_ON_ERROR, (void *)9), 0);
	assert_int_equal(pmrep_read(f->p.cconn, f->cmr, 64, f->srmt, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)10), 0);
	expect_ok(cq, PMREP_OP_READ, 10);
	func_expect_no_completion(cq, 100);
}

/* more responses owed at once than one turn of the target's progress
 * thread sends (16 sendmsg x 64 frames): the rest goes out too, without
 * waiting for more input (which never comes: the initiator waits). The
 * target is held on a SEND without a receive while 4000 READs arrive
 * behind it, then given the receive: it owes them all at once. */
static void
many_small_reads_owed_at_once_all_complete_tcp(void **state)
{
	FUNC_TCP_ONLY();	/* the stall is how tcp waits for a receive */
	struct fx *f = *state;
	const int n = 4000;
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, (uint32_t)n + 1), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, 64), 0);
	/* the initiator's receiver-not-ready budget: ample */
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 20000), 0);
	struct pmrep_conn *cc = NULL, *sc = NULL;
	func_connect(&f->p, cfg, cfg, &cc, &sc);
	func_pattern(f->sbuf, (size_t)n * 8, 99);
	memset(f->cbuf + 65536, 0, (size_t)n * 8);

	assert_int_equal(pmrep_send(cc, f->cmr, 0, 8, PMREP_F_COMPLETION_ALWAYS,
			(void *)8), 0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(pmrep_read(cc, f->cmr, 65536 + (size_t)i * 8,
				f->srmt, (size_t)i * 8, 8, i == n - 1 ?
				PMREP_F_COMPLETION_ALWAYS :
				PMREP_F_COMPLETION_ON_ERROR, (void *)9), 0);
		if (i % 500 == 499)	/* batches: each one kicks the thread */
			usleep(20000);
	}
	usleep(100000);
	assert_int_equal(pmrep_recv(sc, f->smr, REGION - 64, 64, NULL), 0);
	/* far less than the initiator's request timeout (8 x 20 s) */
	struct pmrep_completion c[2];
	assert_int_equal(func_collect(func_cq(cc), c, 2, 3000 * func_slow()), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(c[i].status, PMREP_WC_SUCCESS);
		assert_int_equal((uintptr_t)c[i].op_context, 8 + i);
	}
	assert_memory_equal(f->cbuf + 65536, f->sbuf, (size_t)n * 8);
	assert_int_equal(pmrep_conn_delete(&cc), 0);
	assert_int_equal(pmrep_conn_delete(&sc), 0);
	pmrep_conn_cfg_delete(&cfg);
}

/* --------------------------------------- a READ flood from a raw peer (tcp) */

#define FLOOD_LIMIT (160ull << 20)	/* bytes of READ frames the peer may push */

static uint32_t
get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		(uint32_t)p[3] << 24;
}

static void
read_exactly(int s, uint8_t *b, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = recv(s, b + got, len - got, 0);
		assert_true(n > 0);
		got += (size_t)n;
	}
}

static void
read_flood_is_pushed_back_not_queued_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct func_pair p;
	func_pair_listen(&p);
	uint8_t *sbuf = func_alloc(4096);
	struct pmrep_mr_local *smr = NULL;
	assert_int_equal(pmrep_mr_reg(p.speer, sbuf, 4096,
			PMREP_MR_USAGE_READ_SRC, &smr), 0);
	uint8_t desc[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mr_get_descriptor(smr, desc), 0);
	uint32_t rkey = get_le32(desc + 4);	/* docs/DESIGN.md */
	uint64_t raddr = get_le32(desc + 8) | (uint64_t)get_le32(desc + 12) << 32;

	/* a peer that has the rkey: HELLO (tcp_wire.h), then ACCEPT back */
	int s = func_raw_connect(p.port);
	uint8_t b[64 * 1024];
	memset(b, 0, 24);
	b[0] = 1;
	func_put_le32(b + 8, 0x54524d50);
	func_put_le16(b + 12, 1);
	func_put_le32(b + 16, 1000);
	assert_int_equal(send(s, b, 24, 0), 24);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.sconn), 0);
	read_exactly(s, b, 16);
	assert_int_equal(b[0], 2);	/* ACCEPT */
	func_expect_event(p.sconn, PMREP_CONN_ESTABLISHED, T * func_slow());

	/* READs of 8 bytes, 32 bytes each, as fast as the socket takes them,
	 * never reading a response: the target stops reading once it owes
	 * too many, so the kernel buffers fill and the flood blocks. Before,
	 * it queued every response: unbounded memory. (A slow run, under
	 * valgrind, may instead meet the target's TCP_USER_TIMEOUT: 5 s of
	 * a peer that reads nothing ends the conn, also a stop.) */
	assert_int_equal(fcntl(s, F_SETFL, O_NONBLOCK), 0);
	uint64_t sent = 0;
	uint32_t seq = 0;
	size_t off = sizeof(b), end = sizeof(b);
	bool blocked = false, reset = false;
	while (!blocked && !reset && sent < FLOOD_LIMIT) {
		if (off == end) {
			for (size_t i = 0; i < sizeof(b); i += 32) {
				memset(b + i, 0, 32);
				b[i] = 17;	/* READ */
				func_put_le32(b + i + 8, seq++);
				func_put_le32(b + i + 12, rkey);
				func_put_le64(b + i + 16, raddr);
				func_put_le64(b + i + 24, 8);
			}
			off = 0;
		}
		ssize_t n = send(s, b + off, end - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			sent += (uint64_t)n;
			continue;
		}
		assert_true(n < 0);
		if (errno == ECONNRESET || errno == EPIPE) {
			reset = true;
			break;
		}
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK ||
				errno == EINTR);
		struct pollfd pfd = { .fd = s, .events = POLLOUT };
		if (poll(&pfd, 1, 1000 * func_slow()) == 0)
			blocked = true;	/* nobody reads any more */
	}
	if (sent >= FLOOD_LIMIT)
		fail_msg("the target took %llu MiB of READs without pushing back",
				(unsigned long long)(sent >> 20));
	printf("%s after %llu KiB (%u READs)\n", blocked ? "pushed back" :
			"reset", (unsigned long long)(sent >> 10), seq);

	/* the peer goes away: the target's conn ends, once */
	close(s);
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	assert_int_equal(pmrep_conn_wait_event(p.sconn, T * func_slow(), &ev), 0);
	assert_true(ev == PMREP_CONN_LOST || ev == PMREP_CONN_CLOSED);
	assert_int_equal(pmrep_conn_delete(&p.sconn), 0);
	assert_int_equal(pmrep_mr_dereg(&smr), 0);
	free(sbuf);
	func_pair_close(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(write_is_byte_exact_at_every_size, setup, teardown),
		cmocka_unit_test_setup_teardown(read_is_byte_exact_at_every_size, setup, teardown),
		cmocka_unit_test_setup_teardown(send_recv_is_byte_exact_at_every_size, setup, teardown),
		cmocka_unit_test_setup_teardown(send_with_imm_delivers_imm_and_bytes_at_every_size, setup, teardown),
		cmocka_unit_test_setup_teardown(write_with_imm_completes_a_recv_with_imm_at_every_size, setup, teardown),
		cmocka_unit_test_setup_teardown(atomic_write_stores_exactly_8_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_visibility_and_persistent_complete_at_every_size, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_persistent_calls_the_regions_persist_fn_on_its_range_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_persistent_without_persist_fn_msyncs_a_file_mapping_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(pipelined_persistent_flushes_each_cover_their_range_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(failed_persist_fails_a_flush_and_never_acks_one_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(persist_fn_failure_refuses_the_flush_never_acks_it_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_after_many_writes_covers_them_all, setup, teardown),
		cmocka_unit_test_setup_teardown(writes_flagged_more_complete_with_the_flush_that_ends_the_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(completions_arrive_in_posting_order, setup, teardown),
		cmocka_unit_test_setup_teardown(read_sees_the_writes_posted_before_it_and_none_after_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(unsignalled_success_gives_no_completion, setup, teardown),
		cmocka_unit_test_setup_teardown(many_small_reads_owed_at_once_all_complete_tcp, setup, teardown),
		cmocka_unit_test(read_flood_is_pushed_back_not_queued_tcp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
