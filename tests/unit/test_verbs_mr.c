/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_mr.c -- memory registration: access flags from the usage,
 * fsdax memory (T10: ODP + prefetch, else an explicit error naming the
 * alternatives), a writable page-cache file mapping (T11: EFAULT, the same
 * explicit error), and every failure of reg / dereg.
 */
#include "test_verbs_util.h"

#define MR_SIZE 4096

static void
mr_access_follows_usage(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct verbs_peer *vp = verbs_peer(peer);

	/* the device only reads a write / send source */
	assert_int_equal(verbs_mr_access(vp, PMREP_MR_USAGE_WRITE_SRC), 0);
	assert_int_equal(verbs_mr_access(vp, PMREP_MR_USAGE_SEND), 0);
	/* the device writes a read destination / receive buffer */
	assert_int_equal(verbs_mr_access(vp, PMREP_MR_USAGE_READ_DST),
			IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(verbs_mr_access(vp, PMREP_MR_USAGE_RECV),
			IBV_ACCESS_LOCAL_WRITE);
	/* a remote peer reads it: reads and read-based flushes */
	assert_int_equal(verbs_mr_access(vp, PMREP_MR_USAGE_READ_SRC),
			IBV_ACCESS_REMOTE_READ);
	assert_int_equal(verbs_mr_access(vp,
			PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY),
			IBV_ACCESS_REMOTE_READ);
	assert_int_equal(verbs_mr_access(vp,
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT),
			IBV_ACCESS_REMOTE_READ);
	/* remote write needs local write (verbs rule) */
	assert_int_equal(verbs_mr_access(vp, PMREP_MR_USAGE_WRITE_DST),
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(pmrep_peer_delete(&peer), 0);

	/* with native atomic write a write target takes atomics too */
	mock_dev_set_atomic_write(true);
	peer = tv_peer();
	vp = verbs_peer(peer);
	assert_int_equal(verbs_mr_access(vp, PMREP_MR_USAGE_WRITE_DST),
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
mr_reg_every_usage_registers_and_describes_itself(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	for (int usage = 1; usage <= PMREP_MR_USAGE_ALL; usage++) {
		struct pmrep_mr_local *mr = tv_mr(peer, MR_SIZE, usage);
		struct ibv_mr *imr = mock_mr_last();
		assert_int_equal(mr->rkey, imr->rkey);
		assert_int_equal(mr->raddr, (uintptr_t)mr->ptr);
		assert_int_equal(mr->usage, usage);
		assert_int_equal(mr->size, MR_SIZE);
		assert_int_equal(verbs_mr_lkey(mr), imr->lkey);
		struct pmrep_mr_remote *r = tv_remote(mr);
		assert_int_equal(r->provider, PMREP_PROVIDER_VERBS);
		assert_int_equal(r->rkey, imr->rkey);
		assert_int_equal(pmrep_mr_remote_delete(&r), 0);
		tv_mr_free(mr);
	}
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t10_fsdax_without_odp_is_nosupp_naming_cause_and_alternatives(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	static char fsdax[MR_SIZE];
	mock_mr_set_unpinnable(fsdax, sizeof(fsdax));
	struct pmrep_mr_local *mr = NULL;
	assert_int_equal(pmrep_mr_reg(peer, fsdax, sizeof(fsdax),
			PMREP_MR_USAGE_WRITE_DST, &mr), PMREP_E_NOSUPP);
	assert_null(mr);
	assert_int_equal(pmrep_err_errno(), EOPNOTSUPP);
	assert_true(tv_logged("fsdax"));
	assert_true(tv_logged("on-demand paging"));
	assert_true(tv_logged("device DAX"));
	assert_true(tv_logged("/dev/shm"));
	assert_true(tv_logged("hugetlbfs"));
	assert_true(tv_logged("anonymous memory"));
	/* no on-demand attempt on a device without ODP */
	assert_int_equal(mock_calls("ibv_reg_mr"), 2 /* sink + this */);
	assert_int_equal(mock_live(MOCK_MR), 1 /* the flush sink */);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t10_fsdax_with_odp_registers_on_demand_and_prefetches(void **state)
{
	(void) state;
	mock_dev_set_odp(true);
	struct pmrep_peer *peer = tv_peer();
	static char fsdax[MR_SIZE];
	mock_mr_set_unpinnable(fsdax, sizeof(fsdax));
	unsigned before = mock_calls("ibv_reg_mr");
	struct pmrep_mr_local *mr = NULL;
	assert_int_equal(pmrep_mr_reg(peer, fsdax, sizeof(fsdax),
			PMREP_MR_USAGE_WRITE_DST | PMREP_MR_USAGE_READ_SRC,
			&mr), 0);
	assert_int_equal(mock_calls("ibv_reg_mr") - before, 2);
	assert_int_equal(mock_calls("ibv_advise_mr"), 1);
	assert_true(((struct verbs_mr *)mr)->odp);
	assert_int_equal(pmrep_mr_dereg(&mr), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t10_odp_prefetch_failure_only_warns(void **state)
{
	(void) state;
	mock_dev_set_odp(true);
	struct pmrep_peer *peer = tv_peer();
	static char fsdax[MR_SIZE];
	mock_mr_set_unpinnable(fsdax, sizeof(fsdax));
	mock_fail("ibv_advise_mr", 1, EOPNOTSUPP);
	struct pmrep_mr_local *mr = NULL;
	assert_int_equal(pmrep_mr_reg(peer, fsdax, sizeof(fsdax),
			PMREP_MR_USAGE_WRITE_DST, &mr), 0);
	assert_true(tv_logged("ibv_advise_mr"));
	assert_int_equal(pmrep_mr_dereg(&mr), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t10_odp_registration_failure_is_provider_error(void **state)
{
	(void) state;
	mock_dev_set_odp(true);
	struct pmrep_peer *peer = tv_peer();
	static char fsdax[MR_SIZE];
	mock_mr_set_unpinnable(fsdax, sizeof(fsdax));
	mock_fail("ibv_reg_mr", 2, ENOMEM);	/* the on-demand attempt */
	struct pmrep_mr_local *mr = NULL;
	assert_int_equal(pmrep_mr_reg(peer, fsdax, sizeof(fsdax),
			PMREP_MR_USAGE_WRITE_DST, &mr), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOMEM);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t11_page_cache_file_efault_is_nosupp_naming_cause_and_alternatives(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = NULL;
	static char file_map[MR_SIZE];
	/* what a recent kernel says to a long-term writable pin of ext4 */
	mock_fail("ibv_reg_mr", 1, EFAULT);
	assert_int_equal(pmrep_mr_reg(peer, file_map, sizeof(file_map),
			PMREP_MR_USAGE_WRITE_DST, &mr), PMREP_E_NOSUPP);
	assert_int_equal(pmrep_err_errno(), EFAULT);
	assert_true(tv_logged("page-cache"));
	assert_true(tv_logged("device DAX"));
	assert_true(tv_logged("/dev/shm"));
	assert_true(tv_logged("hugetlbfs"));
	assert_true(tv_logged("anonymous memory"));
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
t11_page_cache_file_with_odp_registers_on_demand(void **state)
{
	(void) state;
	mock_dev_set_odp(true);
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = NULL;
	static char file_map[MR_SIZE];
	mock_fail("ibv_reg_mr", 1, EFAULT);
	assert_int_equal(pmrep_mr_reg(peer, file_map, sizeof(file_map),
			PMREP_MR_USAGE_WRITE_DST, &mr), 0);
	assert_true(((struct verbs_mr *)mr)->odp);
	assert_int_equal(pmrep_mr_dereg(&mr), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
efault_on_a_region_nobody_writes_is_provider_error(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = NULL;
	static char buf[MR_SIZE];
	mock_fail("ibv_reg_mr", 1, EFAULT);
	assert_int_equal(pmrep_mr_reg(peer, buf, sizeof(buf),
			PMREP_MR_USAGE_WRITE_SRC, &mr), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EFAULT);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

static void
mr_reg_other_failure_is_provider_error_with_errno(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = NULL;
	static char buf[MR_SIZE];
	mock_fail("ibv_reg_mr", 1, ENOMEM);
	assert_int_equal(pmrep_mr_reg(peer, buf, sizeof(buf),
			PMREP_MR_USAGE_ALL, &mr), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOMEM);
	assert_true(tv_logged("ibv_reg_mr"));
	mock_fail("calloc", 1, ENOMEM);
	assert_int_equal(pmrep_mr_reg(peer, buf, sizeof(buf),
			PMREP_MR_USAGE_ALL, &mr), PMREP_E_NOMEM);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

struct mr_state {
	struct pmrep_peer *peer;
	struct pmrep_mr_local *mr;
	char *buf;
};

static int
scenario_mr_reg(void *st)
{
	struct mr_state *s = st;
	return pmrep_mr_reg(s->peer, s->buf, MR_SIZE, PMREP_MR_USAGE_ALL,
			&s->mr);
}

static void
cleanup_mr(void *st, int ret)
{
	struct mr_state *s = st;
	if (ret == 0)
		assert_int_equal(pmrep_mr_dereg(&s->mr), 0);
	assert_null(s->mr);
}

static void
mr_reg_each_failure_returns_error_and_leaks_nothing(void **state)
{
	(void) state;
	static char buf[MR_SIZE];
	struct mr_state s = { tv_peer(), NULL, buf };
	assert_true(mock_run_each_failure(scenario_mr_reg, cleanup_mr, &s) >= 2);
	/* and on fsdax with ODP: the prefetch may fail, nothing else */
	mock_dev_set_odp(true);
	assert_int_equal(pmrep_peer_delete(&s.peer), 0);
	s.peer = tv_peer();
	mock_mr_set_unpinnable(buf, sizeof(buf));
	static const char *const tolerated[] = { "ibv_advise_mr", NULL };
	struct mock_each_opts o = { .tolerated = tolerated };
	assert_true(mock_run_each_failure_opts(scenario_mr_reg, cleanup_mr, &s,
			&o) >= 3);
	assert_int_equal(pmrep_peer_delete(&s.peer), 0);
}

static void
mr_dereg_failure_is_provider_error_and_frees(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, MR_SIZE, PMREP_MR_USAGE_ALL);
	void *p = mr->ptr;
	struct ibv_mr *imr = mock_mr_last();
	mock_fail("ibv_dereg_mr", 1, EBUSY);
	assert_int_equal(pmrep_mr_dereg(&mr), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EBUSY);
	assert_null(mr);
	free(p);
	/* the device kept it (as real verbs would): release it by hand */
	assert_int_equal(ibv_dereg_mr(imr), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(mr_access_follows_usage),
		T(mr_reg_every_usage_registers_and_describes_itself),
		T(t10_fsdax_without_odp_is_nosupp_naming_cause_and_alternatives),
		T(t10_fsdax_with_odp_registers_on_demand_and_prefetches),
		T(t10_odp_prefetch_failure_only_warns),
		T(t10_odp_registration_failure_is_provider_error),
		T(t11_page_cache_file_efault_is_nosupp_naming_cause_and_alternatives),
		T(t11_page_cache_file_with_odp_registers_on_demand),
		T(efault_on_a_region_nobody_writes_is_provider_error),
		T(mr_reg_other_failure_is_provider_error_with_errno),
		T(mr_reg_each_failure_returns_error_and_leaks_nothing),
		T(mr_dereg_failure_is_provider_error_and_frees),
#undef T
	};
	return cmocka_run_group_tests_name("verbs mr", tests, NULL, NULL);
}
