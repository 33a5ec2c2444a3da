/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cq_wait_any.c -- pmrep_cq_wait_any over the CQs of several conns
 * (what the mirror waits on with several replicas pending): it returns
 * when any of them has an event, takes every event it saw, times out
 * when none comes, and refuses bad arguments. tcp and verbs (verbs takes
 * the generic path: poll over the channels' fds).
 */
#include <stdlib.h>
#include <string.h>

#include "func.h"

#define NCONN 3
#define REGION 65536
#define T 10000

struct fx {
	struct func_pair p;
	struct func_mrs m;
	struct pmrep_conn *cconn[NCONN], *sconn[NCONN];	/* [0]: p's own */
	struct pmrep_cq *cq[NCONN];
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	func_pair_open(&f->p, NULL);
	func_mrs_reg(&f->m, &f->p, REGION, PMREP_MR_USAGE_ALL);
	f->cconn[0] = f->p.cconn;
	f->sconn[0] = f->p.sconn;
	for (int i = 1; i < NCONN; i++)
		func_connect(&f->p, NULL, NULL, &f->cconn[i], &f->sconn[i]);
	for (int i = 0; i < NCONN; i++)
		f->cq[i] = func_cq(f->cconn[i]);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	for (int i = 1; i < NCONN; i++) {
		assert_int_equal(pmrep_conn_delete(&f->cconn[i]), 0);
		assert_int_equal(pmrep_conn_delete(&f->sconn[i]), 0);
	}
	func_pair_close_all(&f->p, &f->m);
	free(f);
	return 0;
}

/* a write + a signalled VISIBILITY flush on conn i, ctx i + 1 */
static void
post_persist(struct fx *f, int i)
{
	size_t off = (size_t)i * 4096;
	func_pattern(f->m.cbuf + off, 512, (unsigned)i + 1);
	assert_int_equal(pmrep_write(f->cconn[i], f->m.srmt, off, f->m.cmr,
			off, 512, PMREP_F_COMPLETION_ON_ERROR | PMREP_F_MORE,
			NULL), 0);
	assert_int_equal(pmrep_flush(f->cconn[i], f->m.srmt, off, 512,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			(void *)(uintptr_t)(i + 1)), 0);
}

/* take conn i's completions now (non-blocking): how many */
static int
take(struct fx *f, int i, struct pmrep_completion *c)
{
	int n = 0;
	int ret = pmrep_cq_get_completions(f->cq[i], c, 1, &n);
	if (ret == PMREP_E_NO_COMPLETION)
		return 0;
	assert_int_equal(ret, 0);
	return n;
}

static void
returns_when_the_one_busy_conn_completes(void **state)
{
	struct fx *f = *state;
	for (int busy = 0; busy < NCONN; busy++) {
		post_persist(f, busy);
		struct pmrep_completion c;
		int got = 0;
		long long t0 = func_now_ms();
		while (got == 0) {
			int ret = pmrep_cq_wait_any(f->cq, NCONN, T);
			assert_int_equal(ret, 0);
			for (int i = 0; i < NCONN; i++) {
				int k = take(f, i, &c);
				if (k == 0)
					continue;
				/* only the busy conn had anything to complete */
				assert_int_equal(i, busy);
				got += k;
			}
			assert_true(func_now_ms() - t0 < T);
		}
		assert_int_equal(got, 1);
		assert_int_equal(c.status, PMREP_WC_SUCCESS);
		assert_int_equal((uintptr_t)c.op_context, (uintptr_t)busy + 1);
		size_t off = (size_t)busy * 4096;
		assert_memory_equal(f->m.sbuf + off, f->m.cbuf + off, 512);
	}
}

static void
all_conns_busy_every_completion_arrives_once(void **state)
{
	struct fx *f = *state;
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < NCONN; i++)
			post_persist(f, i);
		bool seen[NCONN] = { false };
		int left = NCONN;
		long long t0 = func_now_ms();
		while (left > 0) {
			int ret = pmrep_cq_wait_any(f->cq, NCONN, T);
			assert_true(ret == 0);
			for (int i = 0; i < NCONN; i++) {
				struct pmrep_completion c;
				while (take(f, i, &c) == 1) {
					assert_int_equal(c.status, PMREP_WC_SUCCESS);
					assert_int_equal((uintptr_t)c.op_context,
							(uintptr_t)i + 1);
					assert_false(seen[i]);
					seen[i] = true;
					left--;
				}
			}
			assert_true(func_now_ms() - t0 < T);
		}
	}
}

static void
nothing_posted_times_out_and_events_already_taken_do_not_count(void **state)
{
	struct fx *f = *state;
	long long t0 = func_now_ms();
	assert_int_equal(pmrep_cq_wait_any(f->cq, NCONN, 100), PMREP_E_TIMEOUT);
	long long took = func_now_ms() - t0;
	assert_true(took >= 90);
	assert_true(took < 5000 * func_slow());
	assert_int_equal(pmrep_cq_wait_any(f->cq, NCONN, 0), PMREP_E_TIMEOUT);

	/* one completion: one event; taken, it is not seen again */
	post_persist(f, 1);
	assert_int_equal(pmrep_cq_wait_any(f->cq, NCONN, T), 0);
	struct pmrep_completion c;
	long long t1 = func_now_ms();
	while (take(f, 1, &c) == 0) {
		assert_true(func_now_ms() - t1 < T);
		(void) pmrep_cq_wait_any(f->cq, NCONN, 50);
	}
	assert_int_equal(pmrep_cq_wait_any(f->cq, NCONN, 50), PMREP_E_TIMEOUT);
}

static void
bad_arguments_are_refused(void **state)
{
	struct fx *f = *state;
	assert_int_equal(pmrep_cq_wait_any(NULL, 1, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_cq_wait_any(f->cq, 0, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_cq_wait_any(f->cq, -1, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_cq_wait_any(f->cq, PMREP_CQ_WAIT_ANY_MAX + 1, 0),
			PMREP_E_INVAL);
	struct pmrep_cq *with_null[2] = { f->cq[0], NULL };
	assert_int_equal(pmrep_cq_wait_any(with_null, 2, 0), PMREP_E_INVAL);

	/* a conn whose CQs share one channel: wait on the conn instead */
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(cfg, true), 0);
	struct pmrep_conn *cc = NULL, *sc = NULL;
	func_connect(&f->p, cfg, NULL, &cc, &sc);
	struct pmrep_cq *shared = NULL;
	assert_int_equal(pmrep_conn_get_cq(cc, &shared), 0);
	struct pmrep_cq *mixed[2] = { f->cq[0], shared };
	assert_int_equal(pmrep_cq_wait_any(mixed, 2, 0), PMREP_E_SHARED_CHANNEL);
	assert_int_equal(pmrep_conn_delete(&cc), 0);
	assert_int_equal(pmrep_conn_delete(&sc), 0);
	pmrep_conn_cfg_delete(&cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(returns_when_the_one_busy_conn_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(all_conns_busy_every_completion_arrives_once, setup, teardown),
		cmocka_unit_test_setup_teardown(nothing_posted_times_out_and_events_already_taken_do_not_count, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_arguments_are_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
