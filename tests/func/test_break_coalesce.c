/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_coalesce.c -- the tcp target persists the flushes of one
 * receive batch together; it must not persist bytes no flush named. Two
 * PERSISTENT flushes that each succeed alone, a page apart, sent in one
 * batch: a union across the (unmapped) page between them would make msync
 * fail and NAK a flush that alone succeeds (it did, when flushes up to
 * 4 KiB apart were joined).
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "func.h"

static void
persist_pair(struct func_pair *p, struct pmrep_mr_remote *rmt,
		struct pmrep_mr_local *cmr, size_t off, int more, uintptr_t ctx)
{
	assert_int_equal(pmrep_write(p->cconn, rmt, off, cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS | PMREP_F_MORE, (void *)ctx), 0);
	assert_int_equal(pmrep_flush(p->cconn, rmt, off, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS | more,
			(void *)(ctx + 1)), 0);
}

static void
flushes_that_succeed_alone_succeed_in_one_batch_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct func_pair p;
	func_pair_open(&p, NULL);
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *s = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(s != MAP_FAILED);
	struct pmrep_mr_local *smr = NULL, *cmr = NULL;
	assert_int_equal(pmrep_mr_reg(p.speer, s, 3 * pg, PMREP_MR_USAGE_ALL,
			&smr), 0);
	/* no persist function: the target msyncs. The middle page goes. */
	assert_int_equal(munmap(s + pg, pg), 0);
	uint8_t *c = func_alloc(4096);
	assert_int_equal(pmrep_mr_reg(p.cpeer, c, 4096, PMREP_MR_USAGE_ALL,
			&cmr), 0);
	struct pmrep_mr_remote *rmt = func_remote(smr);
	struct pmrep_cq *cq = func_cq(p.cconn);
	struct pmrep_completion cc[4];

	/* the last 64 bytes of page 0, the first 64 of page 2: alone, each
	 * persist succeeds */
	persist_pair(&p, rmt, cmr, pg - 64, 0, 1);
	assert_int_equal(func_collect(cq, cc, 2, 5000), 2);
	assert_int_equal(cc[1].status, PMREP_WC_SUCCESS);
	persist_pair(&p, rmt, cmr, 2 * pg, 0, 3);
	assert_int_equal(func_collect(cq, cc, 2, 5000), 2);
	assert_int_equal(cc[1].status, PMREP_WC_SUCCESS);

	/* the same two in one batch (one sendmsg, one receive batch) */
	persist_pair(&p, rmt, cmr, pg - 64, PMREP_F_MORE, 5);
	persist_pair(&p, rmt, cmr, 2 * pg, 0, 7);
	assert_int_equal(func_collect(cq, cc, 4, 5000), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal((uintptr_t)cc[i].op_context, (uintptr_t)5 + i);
		if (cc[i].status != PMREP_WC_SUCCESS)
			fail_msg("ctx %d: %s (alone it succeeded)", 5 + i,
					pmrep_wc_status_str(cc[i].status));
	}
	assert_int_equal(pmrep_conn_delete(&p.cconn), 0);
	assert_int_equal(pmrep_conn_delete(&p.sconn), 0);
	assert_int_equal(pmrep_mr_remote_delete(&rmt), 0);
	assert_int_equal(pmrep_mr_dereg(&smr), 0);
	assert_int_equal(pmrep_mr_dereg(&cmr), 0);
	munmap(s, pg);
	munmap(s + 2 * pg, pg);
	free(c);
	func_pair_close(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flushes_that_succeed_alone_succeed_in_one_batch_tcp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
