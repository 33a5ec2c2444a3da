/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_pmem_inject.c -- the pmem layer's failure paths that real files
 * cannot produce: allocation failures (pmrep's own, through the
 * pmrep_pmem_zalloc seam, and libpmem2's -ENOMEM), other libpmem2
 * failures, an unmap that fails on close, deep flush "not supported" and
 * failing, and the granularities libpmem2 is asked for and reports.
 *
 * The pmem2_* functions below are defined in this executable, so the pmem
 * layer's objects (linked in) call them; each passes the call on to the
 * real libpmem2 (dlsym RTLD_NEXT) unless a failure is armed for it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <libpmem2.h>

#include <pmrep/pmem.h>

#include "pmem/pmem_alloc.h"
#include "test_pmem_util.h"

#define SZ (2 * TP_PAGE)

#define REAL(name) ({ \
	static __typeof__(&name) real_; \
	if (real_ == NULL) \
		*(void **)&real_ = dlsym(RTLD_NEXT, #name); \
	real_; \
})

/* ---- allocation seam: fail the n-th call (1-based) after arming */

static int zalloc_calls;
static int zalloc_fail_at;

void *
pmrep_pmem_zalloc(size_t size)
{
	zalloc_calls++;
	if (zalloc_fail_at != 0 && zalloc_calls == zalloc_fail_at)
		return NULL;
	return calloc(1, size);
}

/* ---- libpmem2 interposers */

enum hook {
	H_CONFIG_NEW,
	H_SET_GRAN,
	H_SOURCE_FROM_FD,
	H_SOURCE_SIZE,
	H_MAP_NEW,
	H_MAP_DELETE,
	H_DEEP_FLUSH,
	H_GET_GRAN,
	H_COUNT,
};

static int hook_calls[H_COUNT];
static int hook_fail[H_COUNT]; /* the code to return, 0 = pass on */

static enum pmem2_granularity last_required;
static void *last_deep_ptr;
static size_t last_deep_size;
static bool force_gran;
static enum pmem2_granularity forced_gran;

static int
armed(enum hook h)
{
	hook_calls[h]++;
	int code = hook_fail[h];
	hook_fail[h] = 0;
	return code;
}

int
pmem2_config_new(struct pmem2_config **cfg)
{
	int code = armed(H_CONFIG_NEW);
	if (code != 0) {
		*cfg = NULL;
		return code;
	}
	return REAL(pmem2_config_new)(cfg);
}

int
pmem2_config_set_required_store_granularity(struct pmem2_config *cfg,
		enum pmem2_granularity g)
{
	last_required = g;
	int code = armed(H_SET_GRAN);
	if (code != 0)
		return code;
	return REAL(pmem2_config_set_required_store_granularity)(cfg, g);
}

int
pmem2_source_from_fd(struct pmem2_source **src, int fd)
{
	int code = armed(H_SOURCE_FROM_FD);
	if (code != 0) {
		*src = NULL;
		return code;
	}
	return REAL(pmem2_source_from_fd)(src, fd);
}

int
pmem2_source_size(const struct pmem2_source *src, size_t *size)
{
	int code = armed(H_SOURCE_SIZE);
	if (code != 0)
		return code;
	return REAL(pmem2_source_size)(src, size);
}

int
pmem2_map_new(struct pmem2_map **map_ptr, const struct pmem2_config *cfg,
		const struct pmem2_source *src)
{
	int code = armed(H_MAP_NEW);
	if (code != 0) {
		*map_ptr = NULL;
		return code;
	}
	return REAL(pmem2_map_new)(map_ptr, cfg, src);
}

/* an armed failure still unmaps (no leak), then reports the failure */
int
pmem2_map_delete(struct pmem2_map **map_ptr)
{
	int code = armed(H_MAP_DELETE);
	int ret = REAL(pmem2_map_delete)(map_ptr);
	return code != 0 ? code : ret;
}

int
pmem2_deep_flush(struct pmem2_map *map, void *ptr, size_t size)
{
	last_deep_ptr = ptr;
	last_deep_size = size;
	int code = armed(H_DEEP_FLUSH);
	if (code != 0)
		return code;
	return REAL(pmem2_deep_flush)(map, ptr, size);
}

enum pmem2_granularity
pmem2_map_get_store_granularity(struct pmem2_map *map)
{
	hook_calls[H_GET_GRAN]++;
	if (force_gran)
		return forced_gran;
	return REAL(pmem2_map_get_store_granularity)(map);
}

/* ---- fixtures */

static int
group_setup(void **state)
{
	(void)state;
	return tp_dir_create("test_pmem_inject");
}

static int
group_teardown(void **state)
{
	(void)state;
	tp_dir_remove();
	return 0;
}

static int
setup(void **state)
{
	(void)state;
	memset(hook_calls, 0, sizeof(hook_calls));
	memset(hook_fail, 0, sizeof(hook_fail));
	zalloc_calls = 0;
	zalloc_fail_at = 0;
	force_gran = false;
	tp_log_capture();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	tp_log_restore();
	tp_dir_empty();
	return 0;
}

/* the interposers must be the ones the pmem layer calls */
static void
require_interposition(void)
{
	struct pmrep_pmem *p = NULL;

	if (pmrep_pmem_open(tp_path("probe"), PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p) != 0)
		fail_msg("cannot open a probe mapping: %s", pmrep_err_msg());
	pmrep_pmem_close(&p);
	unlink(tp_path("probe"));
	if (zalloc_calls == 0 || hook_calls[H_MAP_NEW] == 0)
		skip(); /* linked so that the hooks are not reached */
	memset(hook_calls, 0, sizeof(hook_calls));
	zalloc_calls = 0;
}

static int
open_new(const char *name, enum pmrep_pmem_granularity g,
		struct pmrep_pmem **p)
{
	return pmrep_pmem_open(tp_path(name), PMREP_PMEM_CREATE, SZ, g, p);
}

/* ---- pmrep's own allocations */

static void
alloc_of_the_mapping_fails_nomem_before_touching_the_path(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = (struct pmrep_pmem *)(uintptr_t)1;

	zalloc_fail_at = 1;
	assert_int_equal(open_new("a1", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_NOMEM);
	assert_null(p);
	assert_int_equal(pmrep_err_errno(), ENOMEM);
	assert_non_null(strstr(pmrep_err_msg(), "out of memory"));
	assert_false(tp_exists(tp_path("a1")));
	assert_int_equal(hook_calls[H_SOURCE_FROM_FD], 0);
}

static void
alloc_of_the_path_copy_fails_nomem(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;

	zalloc_fail_at = 2;
	assert_int_equal(open_new("a2", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_NOMEM);
	assert_null(p);
	assert_int_equal(zalloc_calls, 2);
	assert_false(tp_exists(tp_path("a2")));
}

/* every allocation, pmrep's and libpmem2's, failing in turn */
static void
every_allocation_failure_is_clean(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;

	/* pmrep's: fail the 1st, 2nd ... until an open needs no more */
	int n;
	for (n = 1; n < 16; n++) {
		zalloc_calls = 0;
		zalloc_fail_at = n;
		int ret = open_new("every", PMREP_PMEM_GRANULARITY_PAGE, &p);
		if (ret == 0)
			break;
		assert_int_equal(ret, PMREP_E_NOMEM);
		assert_null(p);
		assert_false(tp_exists(tp_path("every")));
	}
	assert_int_equal(n, 3); /* two allocations: the mapping, the path */
	assert_int_equal(pmrep_pmem_close(&p), 0);
	unlink(tp_path("every"));
	zalloc_fail_at = 0;

	/* libpmem2's: each call that allocates returns -ENOMEM */
	static const enum hook allocating[] = {
		H_SOURCE_FROM_FD, H_CONFIG_NEW, H_MAP_NEW,
	};
	for (size_t i = 0; i < sizeof(allocating) / sizeof(allocating[0]);
			i++) {
		hook_fail[allocating[i]] = -ENOMEM;
		assert_int_equal(open_new("every", PMREP_PMEM_GRANULARITY_PAGE,
				&p), PMREP_E_NOMEM);
		assert_null(p);
		assert_int_equal(pmrep_err_errno(), ENOMEM);
		assert_non_null(strstr(pmrep_err_msg(), "out of memory"));
		/* the file this call created is removed again */
		assert_false(tp_exists(tp_path("every")));
	}

	/* an existing file survives it */
	assert_int_equal(tp_make_file(tp_path("kept"), SZ, 4), 0);
	hook_fail[H_MAP_NEW] = -ENOMEM;
	assert_int_equal(pmrep_pmem_open(tp_path("kept"), PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_NOMEM);
	assert_true(tp_file_has_pattern(tp_path("kept"), SZ, 4));
}

/* ---- other libpmem2 failures */

static void
map_new_failure_is_pmem_error_with_code_and_errno(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;

	hook_fail[H_MAP_NEW] = PMEM2_E_MAP_RANGE;
	assert_int_equal(open_new("m1", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_PMEM);
	assert_null(p);
	assert_non_null(strstr(pmrep_err_msg(), "pmem2_map_new failed"));
	assert_non_null(strstr(pmrep_err_msg(), "libpmem2 error -100006"));
	assert_int_equal(pmrep_err_errno(), 0);
	assert_false(tp_exists(tp_path("m1")));

	/* an OS error behind it: its errno is recorded */
	hook_fail[H_MAP_NEW] = -EAGAIN;
	assert_int_equal(open_new("m1", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_PMEM);
	assert_int_equal(pmrep_err_errno(), EAGAIN);
	assert_false(tp_exists(tp_path("m1")));

	/* granularity refused is its own code, whatever the file system */
	hook_fail[H_MAP_NEW] = PMEM2_E_GRANULARITY_NOT_SUPPORTED;
	assert_int_equal(open_new("m1", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_GRANULARITY);
	assert_non_null(strstr(pmrep_err_msg(),
			"cannot offer the required store granularity PAGE"));
	assert_non_null(strstr(pmrep_err_msg(), "PAGE always works"));
}

static void
source_failures_are_reported(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;

	hook_fail[H_SOURCE_FROM_FD] = PMEM2_E_INVALID_FILE_HANDLE;
	assert_int_equal(open_new("s1", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_PMEM);
	assert_non_null(strstr(pmrep_err_msg(), "pmem2_source_from_fd"));
	assert_false(tp_exists(tp_path("s1")));

	hook_fail[H_SOURCE_FROM_FD] = PMEM2_E_INVALID_FILE_TYPE;
	assert_int_equal(open_new("s1", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "not a regular file"));

	hook_fail[H_SOURCE_SIZE] = -EIO;
	assert_int_equal(open_new("s1", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_PMEM);
	assert_non_null(strstr(pmrep_err_msg(), "pmem2_source_size"));
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_null(p);
	assert_false(tp_exists(tp_path("s1")));
	assert_int_equal(hook_calls[H_MAP_NEW], 0);
}

static void
config_failures_are_reported(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;

	hook_fail[H_CONFIG_NEW] = PMEM2_E_UNKNOWN;
	assert_int_equal(open_new("c1", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_PMEM);
	assert_non_null(strstr(pmrep_err_msg(), "pmem2_config_new"));

	hook_fail[H_SET_GRAN] = PMEM2_E_GRANULARITY_NOT_SUPPORTED;
	assert_int_equal(open_new("c1", PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_GRANULARITY);
	assert_non_null(strstr(pmrep_err_msg(),
			"pmem2_config_set_required_store_granularity"));
	assert_int_equal(hook_calls[H_MAP_NEW], 0);
	assert_null(p);
	assert_false(tp_exists(tp_path("c1")));
}

/* ---- granularity: asked for and reported */

static void
required_granularity_is_passed_to_libpmem2(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;

	assert_int_equal(open_new("g", PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(last_required, PMEM2_GRANULARITY_PAGE);
	assert_int_equal(pmrep_pmem_close(&p), 0);

	/* finer ones are refused on tmpfs, but were asked for as such */
	(void)open_new("g", PMREP_PMEM_GRANULARITY_CACHE_LINE, &p);
	assert_int_equal(last_required, PMEM2_GRANULARITY_CACHE_LINE);
	if (p != NULL)
		assert_int_equal(pmrep_pmem_close(&p), 0);
	(void)open_new("g", PMREP_PMEM_GRANULARITY_BYTE, &p);
	assert_int_equal(last_required, PMEM2_GRANULARITY_BYTE);
	if (p != NULL)
		assert_int_equal(pmrep_pmem_close(&p), 0);
}

static void
effective_granularity_is_what_libpmem2_reports(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;
	static const struct {
		enum pmem2_granularity pmem2;
		enum pmrep_pmem_granularity pmrep;
		const char *name;
	} cases[] = {
		{ PMEM2_GRANULARITY_BYTE, PMREP_PMEM_GRANULARITY_BYTE, "BYTE" },
		{ PMEM2_GRANULARITY_CACHE_LINE,
			PMREP_PMEM_GRANULARITY_CACHE_LINE, "CACHE_LINE" },
		{ PMEM2_GRANULARITY_PAGE, PMREP_PMEM_GRANULARITY_PAGE, "PAGE" },
		/* a value this pmrep does not know: the safe one, PAGE */
		{ (enum pmem2_granularity)7, PMREP_PMEM_GRANULARITY_PAGE,
			"PAGE" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		force_gran = true;
		forced_gran = cases[i].pmem2;
		assert_int_equal(open_new("eff", PMREP_PMEM_GRANULARITY_PAGE,
				&p), 0);
		assert_int_equal(pmrep_pmem_get_granularity(p), cases[i].pmrep);
		char want[64];
		snprintf(want, sizeof(want), "granularity %s (required PAGE)",
				cases[i].name);
		assert_non_null(strstr(tp_log_last[PMREP_LOG_INFO], want));
		force_gran = false;
		assert_int_equal(pmrep_pmem_close(&p), 0);
	}
}

/* ---- close */

static void
close_reports_failed_unmap_and_still_releases_everything(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;

	assert_int_equal(open_new("cl", PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	hook_fail[H_MAP_DELETE] = PMEM2_E_MAPPING_NOT_FOUND;
	assert_int_equal(pmrep_pmem_close(&p), PMREP_E_PMEM);
	assert_null(p);
	assert_non_null(strstr(pmrep_err_msg(), "pmem2_map_delete"));
	assert_int_equal(hook_calls[H_MAP_DELETE], 1);
	/* the file is not touched by close */
	assert_int_equal(tp_file_size(tp_path("cl")), SZ);
	/* and a second close of the (now NULL) pointer is a no-op */
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

/* ---- deep flush */

static void
deep_flush_not_supported_returns_0_and_logs_info(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;
	static const int unsupported[] = {
		PMEM2_E_NOSUPP, PMEM2_E_DAX_REGION_NOT_FOUND, -ENOTSUP,
		-EOPNOTSUPP,
	};

	assert_int_equal(open_new("df", PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	char *a = pmrep_pmem_get_address(p);
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]);
			i++) {
		int infos = tp_log_count[PMREP_LOG_INFO];
		hook_fail[H_DEEP_FLUSH] = unsupported[i];
		assert_int_equal(pmrep_pmem_deep_flush(p, TP_PAGE, 10), 0);
		assert_ptr_equal(last_deep_ptr, a + TP_PAGE);
		assert_int_equal(last_deep_size, 10);
		assert_int_equal(tp_log_count[PMREP_LOG_INFO], infos + 1);
		assert_non_null(strstr(tp_log_last[PMREP_LOG_INFO],
				"deep flush not supported"));
		/* not an error: nothing recorded */
		assert_string_equal(pmrep_err_msg(), "");
		assert_int_equal(pmrep_err_errno(), 0);
	}
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

static void
deep_flush_failure_is_pmem_error(void **state)
{
	(void)state;
	require_interposition();
	struct pmrep_pmem *p = NULL;

	assert_int_equal(open_new("dff", PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	hook_fail[H_DEEP_FLUSH] = -EIO;
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, SZ), PMREP_E_PMEM);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_non_null(strstr(pmrep_err_msg(), "pmem2_deep_flush"));
	assert_ptr_equal(last_deep_ptr, pmrep_pmem_get_address(p));
	assert_int_equal(last_deep_size, SZ);

	hook_fail[H_DEEP_FLUSH] = PMEM2_E_DEEP_FLUSH_RANGE;
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, 1), PMREP_E_PMEM);
	assert_int_equal(pmrep_err_errno(), 0);

	/* range errors never reach libpmem2 */
	int calls = hook_calls[H_DEEP_FLUSH];
	assert_int_equal(pmrep_pmem_deep_flush(p, 1, SZ), PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, 0), 0);
	assert_int_equal(hook_calls[H_DEEP_FLUSH], calls);

	/* and afterwards it works again */
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, SZ), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(alloc_of_the_mapping_fails_nomem_before_touching_the_path),
		T(alloc_of_the_path_copy_fails_nomem),
		T(every_allocation_failure_is_clean),
		T(map_new_failure_is_pmem_error_with_code_and_errno),
		T(source_failures_are_reported),
		T(config_failures_are_reported),
		T(required_granularity_is_passed_to_libpmem2),
		T(effective_granularity_is_what_libpmem2_reports),
		T(close_reports_failed_unmap_and_still_releases_everything),
		T(deep_flush_not_supported_returns_0_and_logs_info),
		T(deep_flush_failure_is_pmem_error),
#undef T
	};
	return cmocka_run_group_tests_name("pmem_inject", tests, group_setup,
			group_teardown);
}
