/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_access.c -- the target checks every one-sided request against its
 * registered regions: a dead rkey, bytes outside the region, a missing
 * access right (write, read, persistent flush: T14) each complete with
 * PMREP_WC_REMOTE_ACCESS_ERROR, touch nothing, move the conn to the error state
 * (later requests: PMREP_WC_FLUSHED), and the conn still disconnects
 * in order.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "func.h"

#define SIZE 8192
#define T 5000

/*
 * T21: the error put the initiator's QP in the error state, so the conn
 * is lost at once: it reports LOST by itself, and what is posted now is
 * refused (not accepted and then flushed). On tcp the target, which sent
 * the NAK, is in the error state as well and lost too (a verbs target's
 * QP goes to error as well, but only a completion it polls would say so).
 */
static void
expect_error_state_then_close(struct func_pair *p, struct func_mrs *m)
{
	func_expect_event(p->cconn, PMREP_CONN_LOST, T * func_slow());
	assert_int_equal(pmrep_write(p->cconn, m->srmt, 0, m->cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)77), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_recv(p->cconn, m->cmr, 0, 64, (void *)78),
			PMREP_E_CONN_LOST);
	if (func_is_tcp())
		func_expect_event(p->sconn, PMREP_CONN_LOST, T * func_slow());
	func_pair_close_all(p, m);
}

static void
expect_access_error(struct pmrep_cq *cq, uintptr_t ctx)
{
	struct pmrep_completion c = func_wait_one(cq, T);
	assert_int_equal((uintptr_t)c.op_context, ctx);
	if (c.status != PMREP_WC_REMOTE_ACCESS_ERROR)
		fail_msg("expected a remote access error, got %s",
				pmrep_wc_status_str(c.status));
}

static void
write_with_a_dead_rkey_is_a_remote_access_error(void **state)
{
	(void) state;
	struct func_pair p;
	struct func_mrs m;
	func_pair_open(&p, NULL);
	func_mrs_reg(&m, &p, SIZE, PMREP_MR_USAGE_ALL);
	/* the server deregisters; the client still has the old rkey */
	assert_int_equal(pmrep_mr_dereg(&m.smr), 0);
	memset(m.sbuf, 0x11, SIZE);
	func_pattern(m.cbuf, 64, 1);
	assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	expect_access_error(func_cq(p.cconn), 1);
	for (size_t i = 0; i < SIZE; i++)
		assert_int_equal(m.sbuf[i], 0x11);
	/* a fresh MR for the error-state check; the old one is gone */
	assert_int_equal(pmrep_mr_reg(p.speer, m.sbuf, SIZE, PMREP_MR_USAGE_ALL,
			&m.smr), 0);
	expect_error_state_then_close(&p, &m);
}

/* a remote view that claims `size` bytes: the descriptor's size field
 * (offset 16, u64 little-endian, docs/DESIGN.md) rewritten */
static struct pmrep_mr_remote *
remote_claiming(const struct pmrep_mr_local *mr, uint64_t size)
{
	uint8_t desc[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mr_get_descriptor(mr, desc), 0);
	func_put_le64(desc + 16, size);
	struct pmrep_mr_remote *r = NULL;
	assert_int_equal(pmrep_mr_remote_from_descriptor(desc, sizeof(desc),
			&r), 0);
	size_t got = 0;
	assert_int_equal(pmrep_mr_remote_get_size(r, &got), 0);
	assert_int_equal(got, size);
	return r;
}

static void
access_beyond_the_region_is_a_remote_access_error(void **state)
{
	(void) state;
	/* op: 0 write past the end, 1 write straddling the end, 2 read past
	 * the end, 3 atomic write past the end, 4 flush past the end */
	for (int op = 0; op < 5; op++) {
		struct func_pair p;
		struct func_mrs m;
		func_pair_open(&p, NULL);
		/* the server registers only the first half of its buffer */
		func_mrs_reg(&m, &p, SIZE, PMREP_MR_USAGE_ALL);
		assert_int_equal(pmrep_mr_dereg(&m.smr), 0);
		assert_int_equal(pmrep_mr_remote_delete(&m.srmt), 0);
		assert_int_equal(pmrep_mr_reg(p.speer, m.sbuf, SIZE / 2,
				PMREP_MR_USAGE_ALL, &m.smr), 0);
		struct pmrep_mr_remote *big = remote_claiming(m.smr, SIZE);
		m.srmt = func_remote(m.smr);
		memset(m.sbuf, 0x22, SIZE);
		func_pattern(m.cbuf, SIZE, 2);
		int ret = 0;
		int f = PMREP_F_COMPLETION_ALWAYS;
		uint8_t v[8] = { 9, 9, 9, 9, 9, 9, 9, 9 };
		switch (op) {
		case 0:
			ret = pmrep_write(p.cconn, big, SIZE / 2, m.cmr, 0, 64,
					f, (void *)1);
			break;
		case 1:
			ret = pmrep_write(p.cconn, big, SIZE / 2 - 8, m.cmr, 0,
					64, f, (void *)1);
			break;
		case 2:
			ret = pmrep_read(p.cconn, m.cmr, 0, big, SIZE / 2 + 64,
					64, f, (void *)1);
			break;
		case 3:
			ret = pmrep_atomic_write(p.cconn, big, SIZE / 2 + 8, v,
					f, (void *)1);
			break;
		case 4:
			ret = pmrep_flush(p.cconn, big, SIZE / 2 - 64, 128,
					PMREP_FLUSH_TYPE_VISIBILITY, f, (void *)1);
			break;
		}
		assert_int_equal(ret, 0);
		expect_access_error(func_cq(p.cconn), 1);
		/* nothing written anywhere, in or beyond the region */
		for (size_t i = 0; i < SIZE; i++)
			if (m.sbuf[i] != 0x22)
				fail_msg("op %d wrote byte %zu", op, i);
		assert_int_equal(pmrep_mr_remote_delete(&big), 0);
		expect_error_state_then_close(&p, &m);
	}
}

static void
write_without_write_access_is_a_remote_access_error(void **state)
{
	(void) state;
	struct func_pair p;
	struct func_mrs m;
	func_pair_open(&p, NULL);
	func_mrs_reg(&m, &p, SIZE, PMREP_MR_USAGE_ALL &
			~PMREP_MR_USAGE_WRITE_DST);
	memset(m.sbuf, 0x33, SIZE);
	assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	expect_access_error(func_cq(p.cconn), 1);
	assert_int_equal(m.sbuf[0], 0x33);
	expect_error_state_then_close(&p, &m);
}

static void
read_without_read_access_is_a_remote_access_error(void **state)
{
	(void) state;
	struct func_pair p;
	struct func_mrs m;
	func_pair_open(&p, NULL);
	/* no flush usage either: verbs grants remote read for flushes (APM
	 * reads) */
	func_mrs_reg(&m, &p, SIZE, PMREP_MR_USAGE_ALL &
			~(PMREP_MR_USAGE_READ_SRC |
			PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT));
	memset(m.cbuf, 0x44, SIZE);
	func_pattern(m.sbuf, SIZE, 4);
	assert_int_equal(pmrep_read(p.cconn, m.cmr, 0, m.srmt, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	expect_access_error(func_cq(p.cconn), 1);
	assert_int_equal(m.cbuf[0], 0x44);
	expect_error_state_then_close(&p, &m);
}

static void
T14_persistent_flush_into_a_region_without_persistent_usage_never_succeeds(
		void **state)
{
	(void) state;
	struct func_pair p;
	struct func_mrs m;
	func_pair_open(&p, NULL);
	func_mrs_reg(&m, &p, SIZE, PMREP_MR_USAGE_ALL &
			~PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT);
	int ft = -1;
	assert_int_equal(pmrep_mr_remote_get_flush_type(m.srmt, &ft), 0);
	assert_int_equal(ft, PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY);
	enum pmrep_flush_method method;
	assert_int_equal(pmrep_conn_get_flush_method(p.cconn, &method), 0);
	if (func_is_tcp())
		assert_int_equal(method, PMREP_FLUSH_METHOD_NATIVE);
	/* tests/vm/native-flush.sh: verbs must flush natively there (the
	 * access error below then comes from a real RDMA FLUSH: the region
	 * grants remote read, so a read-after-write would have succeeded) */
	const char *want = getenv("PMREP_TEST_EXPECT_NATIVE_FLUSH");
	if (!func_is_tcp() && want != NULL && strcmp(want, "1") == 0)
		assert_int_equal(method, PMREP_FLUSH_METHOD_NATIVE);

	assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, 64,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	int ret = pmrep_flush(p.cconn, m.srmt, 0, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)1);
	if (method != PMREP_FLUSH_METHOD_NATIVE) {
		/* APM / none: refused before anything is posted */
		assert_int_equal(ret, PMREP_E_NOSUPP);
		func_pair_close_all(&p, &m);
		return;
	}
	/* native: the target refuses it */
	assert_int_equal(ret, 0);
	expect_access_error(func_cq(p.cconn), 1);
	expect_error_state_then_close(&p, &m);
}

static void
access_error_flushes_the_targets_posted_receives_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct func_pair p;
	struct func_mrs m;
	func_pair_open(&p, NULL);
	func_mrs_reg(&m, &p, SIZE, PMREP_MR_USAGE_ALL &
			~PMREP_MR_USAGE_WRITE_DST);
	assert_int_equal(pmrep_recv(p.sconn, m.smr, 0, 64, (void *)5), 0);
	assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	expect_access_error(func_cq(p.cconn), 1);
	/* both sides are in the error state, as both verbs QPs would be */
	struct pmrep_completion c = func_wait_one(func_rcq(p.sconn), T);
	assert_int_equal((uintptr_t)c.op_context, 5);
	assert_int_equal(c.status, PMREP_WC_FLUSHED);
	expect_error_state_then_close(&p, &m);
}

static bool
status_in(enum pmrep_wc_status st, const enum pmrep_wc_status *set, int n)
{
	for (int i = 0; i < n; i++)
		if (st == set[i])
			return true;
	return false;
}

/*
 * The application deregisters and unmaps a region while 1 MiB goes into
 * it and out of it (target side), or out of its source (initiator side):
 * once pmrep_mr_dereg returns, pmrep never touches the region again (an
 * unmapped page would fault), and every request still ends once.
 */
static void
dereg_with_traffic_in_flight_never_touches_the_region_after_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();	/* on verbs this is the application's bug */
	const size_t big = 1u << 20;
	for (int i = 0; i < 12; i++) {
		bool target_side = i % 2 == 0;
		struct func_pair p;
		func_pair_open(&p, NULL);
		uint8_t *cbuf = mmap(NULL, big, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint8_t *sbuf = mmap(NULL, big, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(cbuf != MAP_FAILED && sbuf != MAP_FAILED);
		struct pmrep_mr_local *cmr = NULL, *smr = NULL;
		assert_int_equal(pmrep_mr_reg(p.cpeer, cbuf, big,
				PMREP_MR_USAGE_ALL, &cmr), 0);
		assert_int_equal(pmrep_mr_reg(p.speer, sbuf, big,
				PMREP_MR_USAGE_ALL, &smr), 0);
		struct pmrep_mr_remote *rmt = func_remote(smr);

		assert_int_equal(pmrep_write(p.cconn, rmt, 0, cmr, 0, big,
				PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
		assert_int_equal(pmrep_read(p.cconn, cmr, 0, rmt, 0, big,
				PMREP_F_COMPLETION_ALWAYS, (void *)2), 0);
		usleep((useconds_t)(i / 2) * 300);
		if (target_side) {
			assert_int_equal(pmrep_mr_dereg(&smr), 0);
			assert_int_equal(munmap(sbuf, big), 0);
			sbuf = NULL;
		} else {
			/* the read's destination too: both directions */
			assert_int_equal(pmrep_mr_dereg(&cmr), 0);
			assert_int_equal(munmap(cbuf, big), 0);
			cbuf = NULL;
		}
		const enum pmrep_wc_status ok[] = { PMREP_WC_SUCCESS,
			PMREP_WC_REMOTE_ACCESS_ERROR, PMREP_WC_FLUSHED,
			PMREP_WC_RETRY_EXCEEDED };
		struct pmrep_completion c[2];
		assert_int_equal(func_collect(func_cq(p.cconn), c, 2,
				T * func_slow()), 2);
		for (int k = 0; k < 2; k++) {
			assert_int_equal((uintptr_t)c[k].op_context,
					(uintptr_t)k + 1);
			if (getenv("FUNC_VERBOSE"))
				print_message("round %d req %d: %s\n", i, k + 1,
						pmrep_wc_status_str(c[k].status));
			if (!status_in(c[k].status, ok, 4))
				fail_msg("round %d: %s", i,
						pmrep_wc_status_str(c[k].status));
		}
		assert_int_equal(pmrep_conn_delete(&p.cconn), 0);
		assert_int_equal(pmrep_conn_delete(&p.sconn), 0);
		assert_int_equal(pmrep_mr_remote_delete(&rmt), 0);
		assert_int_equal(pmrep_mr_dereg(&cmr), 0);
		assert_int_equal(pmrep_mr_dereg(&smr), 0);
		if (cbuf)
			munmap(cbuf, big);
		if (sbuf)
			munmap(sbuf, big);
		func_pair_close(&p);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(write_with_a_dead_rkey_is_a_remote_access_error),
		cmocka_unit_test(access_beyond_the_region_is_a_remote_access_error),
		cmocka_unit_test(write_without_write_access_is_a_remote_access_error),
		cmocka_unit_test(read_without_read_access_is_a_remote_access_error),
		cmocka_unit_test(T14_persistent_flush_into_a_region_without_persistent_usage_never_succeeds),
		cmocka_unit_test(access_error_flushes_the_targets_posted_receives_tcp),
		cmocka_unit_test(dereg_with_traffic_in_flight_never_touches_the_region_after_tcp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
