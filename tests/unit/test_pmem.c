/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_pmem.c -- the pmem layer on real files through the real libpmem2:
 * field case T12 (tmpfs offers PAGE granularity only), creating and
 * opening files, every error path the OS produces for real, the mapping's
 * functions, deep flush and the getters.
 *
 * msync(2) is interposed (counted, then passed on) to see that persisting
 * a PAGE-granularity mapping really is an msync (pmrep's own since T28:
 * libpmem2's aborts the process when msync fails; test_pmem_persist_fail.c
 * has the failures).
 *
 * Optional, skipped when unset: PMREP_TEST_DEVDAX=/dev/daxX.Y maps a real
 * device DAX; PMREP_TEST_FSDAX_DIR=<dir on a DAX-mounted fs> maps an fsdax
 * file with CACHE_LINE granularity.
 * Past ~800 lines: one program for the pmem layer; cases share file fixtures.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <linux/capability.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <cmocka.h>
#include <libpmem2.h>

#include <pmrep/pmem.h>
#include <pmrep/transport.h>

#include "test_pmem_util.h"

/* ---- msync interposer: counts calls and remembers the last range */

static int msync_calls;
static uintptr_t msync_last_addr;
static size_t msync_last_len;

/* exported (tests build with hidden visibility) so libpmem2 binds to it */
__attribute__((visibility("default"))) int
msync(void *addr, size_t len, int flags)
{
	static int (*real_msync)(void *, size_t, int);

	if (real_msync == NULL)
		*(void **)&real_msync = dlsym(RTLD_NEXT, "msync");
	msync_calls++;
	msync_last_addr = (uintptr_t)addr;
	msync_last_len = len;
	return real_msync(addr, len, flags);
}

/* ---- fixtures */

/* made by the test, removed by group_teardown even when the test fails */
static char disk_dir[64];
static char disk_path[96];

static void
disk_dir_remove(void)
{
	if (disk_dir[0] == '\0')
		return;
	(void)unlink(disk_path);
	(void)rmdir(disk_dir);
	disk_dir[0] = '\0';
}

/* disk_path_make -- the file disk_path in a new directory in /var/tmp (a
 * disk file system: its msync writes back); false (disk_dir "") when it
 * cannot be made or /var/tmp is in memory too */
static bool
disk_path_make(void)
{
	snprintf(disk_dir, sizeof(disk_dir), "/var/tmp/pmrep-test-pmem-XXXXXX");
	if (mkdtemp(disk_dir) == NULL) {
		disk_dir[0] = '\0';
		return false;
	}
	snprintf(disk_path, sizeof(disk_path), "%s/f", disk_dir);
	if (tp_is_tmpfs(disk_dir)) {
		disk_dir_remove();
		return false;
	}
	return true;
}

static int
group_setup(void **state)
{
	(void)state;
	return tp_dir_create("test_pmem");
}

static int
group_teardown(void **state)
{
	(void)state;
	tp_dir_remove();
	disk_dir_remove();
	return 0;
}

static int
setup(void **state)
{
	(void)state;
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

#define SZ (4 * TP_PAGE)

/* ---- field case T12: tmpfs (/dev/shm) offers PAGE granularity only */

static void
t12_cache_line_on_tmpfs_fails_with_granularity_error(void **state)
{
	(void)state;
	if (!tp_is_tmpfs(tp_dir))
		skip();
	const char *path = tp_path("t12_cl");
	struct pmrep_pmem *p = (struct pmrep_pmem *)(uintptr_t)1;

	int ret = pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_CACHE_LINE, &p);
	assert_int_equal(ret, PMREP_E_GRANULARITY);
	assert_int_not_equal(ret, PMREP_E_PMEM);
	assert_null(p);
	/* libpmem2's own message is passed through */
	assert_true(strlen(pmem2_errormsg()) > 0);
	assert_non_null(strstr(pmrep_err_msg(), pmem2_errormsg()));
	assert_non_null(strstr(pmrep_err_msg(),
			"cannot offer the required store granularity CACHE_LINE"));
	assert_string_equal(tp_log_last[PMREP_LOG_ERROR], pmrep_err_msg());
	assert_int_equal(pmrep_err_errno(), 0);
	/* the file this call created is gone again */
	assert_false(tp_exists(path));
	/* the code has its own description */
	assert_string_equal(pmrep_err_to_str(ret),
			"granularity not supported by the mapping");
}

static void
t12_byte_on_tmpfs_fails_with_granularity_error(void **state)
{
	(void)state;
	if (!tp_is_tmpfs(tp_dir))
		skip();
	const char *path = tp_path("t12_byte");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_BYTE, &p), PMREP_E_GRANULARITY);
	assert_null(p);
	assert_non_null(strstr(pmrep_err_msg(), pmem2_errormsg()));
	assert_false(tp_exists(path));
}

static void
t12_cache_line_on_existing_tmpfs_file_keeps_the_file(void **state)
{
	(void)state;
	if (!tp_is_tmpfs(tp_dir))
		skip();
	const char *path = tp_path("t12_existing");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(tp_make_file(path, SZ, 7), 0);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_CACHE_LINE, &p),
			PMREP_E_GRANULARITY);
	assert_null(p);
	/* not created by this call: neither removed nor changed */
	assert_true(tp_file_has_pattern(path, SZ, 7));

	/* PAGE then works on the same file and sees the same bytes */
	assert_int_equal(pmrep_pmem_open(path, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(pmrep_pmem_get_granularity(p),
			PMREP_PMEM_GRANULARITY_PAGE);
	const unsigned char *a = pmrep_pmem_get_address(p);
	for (size_t i = 0; i < SZ; i++)
		assert_int_equal(a[i], (unsigned char)((7 + i) % 251));
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

static void
t12_page_on_tmpfs_maps_with_page_and_persists_without_msync(void **state)
{
	(void)state;
	if (!tp_is_tmpfs(tp_dir))
		skip();
	const char *path = tp_path("t12_page");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_non_null(p);
	assert_string_equal(pmrep_err_msg(), "");
	assert_int_equal(pmrep_pmem_get_granularity(p),
			PMREP_PMEM_GRANULARITY_PAGE);
	assert_int_equal(pmrep_pmem_get_size(p), SZ);
	assert_false(pmrep_pmem_is_devdax(p));
	assert_string_equal(pmrep_pmem_get_path(p), path);
	assert_non_null(strstr(tp_log_last[PMREP_LOG_INFO], "granularity PAGE"));

	unsigned char *a = pmrep_pmem_get_address(p);
	assert_non_null(a);
	assert_int_equal((uintptr_t)a % TP_PAGE, 0);

	pmrep_pmem_persist_fn *persist = pmrep_pmem_get_persist_fn(p);
	assert_non_null(persist);
	assert_ptr_equal(persist, pmrep_pmem_get_persist_fn(p));

	memset(a + TP_PAGE + 100, 0xab, 200);
	int before = msync_calls;
	persist(a + TP_PAGE + 100, 200);
	/* a file in memory has nothing to write back: no msync, by the
	 * getter's function and by pmrep_pmem_persist */
	assert_int_equal(msync_calls, before);
	assert_int_equal(pmrep_pmem_persist(p, a + TP_PAGE + 100, 200), 0);
	assert_int_equal(msync_calls, before);
	assert_non_null(strstr(tp_log_last[PMREP_LOG_INFO], "file in memory"));

	assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_null(p);
	assert_true(tp_exists(path));
}

static void
page_on_disk_fs_persists_with_one_msync_of_its_pages(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;

	if (!disk_path_make())
		skip();
	assert_int_equal(pmrep_pmem_open(disk_path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_null(strstr(tp_log_last[PMREP_LOG_INFO], "in memory"));
	unsigned char *a = pmrep_pmem_get_address(p);
	pmrep_pmem_persist_fn *persist = pmrep_pmem_get_persist_fn(p);

	memset(a + TP_PAGE + 100, 0xab, 200);
	int before = msync_calls;
	persist(a + TP_PAGE + 100, 200);
	/* the PAGE persist is one msync of the page(s) holding it */
	assert_int_equal(msync_calls, before + 1);
	assert_int_equal(msync_last_addr, (uintptr_t)(a + TP_PAGE));
	assert_true(msync_last_len >= 300 && msync_last_len <= TP_PAGE);
	assert_int_equal(pmrep_pmem_persist(p, a + TP_PAGE + 100, 200), 0);
	assert_int_equal(msync_calls, before + 2);

	assert_int_equal(pmrep_pmem_close(&p), 0);
	disk_dir_remove();
}

static void
t12_page_write_persist_close_reopen_keeps_data(void **state)
{
	(void)state;
	if (!tp_is_tmpfs(tp_dir))
		skip();
	const char *path = tp_path("t12_reopen");
	struct pmrep_pmem *p = NULL;
	static const char msg[] = "pmrep T12: durable through a reopen";

	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	unsigned char *a = pmrep_pmem_get_address(p);
	/* a fresh file reads as zeros */
	for (size_t i = 0; i < SZ; i++)
		assert_int_equal(a[i], 0);
	memcpy(a + 10, msg, sizeof(msg));
	pmrep_pmem_get_persist_fn(p)(a + 10, sizeof(msg));
	pmrep_pmem_get_memcpy_fn(p)(a + SZ - sizeof(msg), msg, sizeof(msg), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);

	/* reopen: whole file (size 0), then with the exact size */
	assert_int_equal(pmrep_pmem_open(path, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(pmrep_pmem_get_size(p), SZ);
	a = pmrep_pmem_get_address(p);
	assert_memory_equal(a + 10, msg, sizeof(msg));
	assert_memory_equal(a + SZ - sizeof(msg), msg, sizeof(msg));
	assert_int_equal(a[9], 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);

	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_memory_equal((char *)pmrep_pmem_get_address(p) + 10, msg,
			sizeof(msg));
	assert_int_equal(pmrep_pmem_close(&p), 0);

	/* and the file itself holds it, read with plain read(2) */
	char buf[sizeof(msg)];
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, sizeof(buf), 10), sizeof(buf));
	close(fd);
	assert_memory_equal(buf, msg, sizeof(msg));
}

/* ---- creating */

static void
create_makes_zeroed_file_of_size_with_mode_0600(void **state)
{
	(void)state;
	const char *path = tp_path("new");
	struct pmrep_pmem *p = NULL;
	mode_t old = umask(022);

	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE |
			PMREP_PMEM_EXCL, 3 * TP_PAGE,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	umask(old);
	assert_non_null(strstr(tp_log_last[PMREP_LOG_INFO], "created"));
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 3 * TP_PAGE);
	/* posix_fallocate reserved the blocks */
	assert_true((long long)st.st_blocks * 512 >= 3LL * TP_PAGE);
	assert_int_equal(pmrep_pmem_get_size(p), 3 * TP_PAGE);
	const unsigned char *a = pmrep_pmem_get_address(p);
	for (size_t i = 0; i < 3 * TP_PAGE; i++)
		assert_int_equal(a[i], 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

static void
create_unaligned_size_maps_exactly_that_size(void **state)
{
	(void)state;
	const char *path = tp_path("odd");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, 5000,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(pmrep_pmem_get_size(p), 5000);
	assert_int_equal(tp_file_size(path), 5000);
	unsigned char *a = pmrep_pmem_get_address(p);
	pmrep_pmem_get_memset_fn(p)(a + 4990, 0x5a, 10, 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);

	assert_int_equal(pmrep_pmem_open(path, 0, 5000,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	a = pmrep_pmem_get_address(p);
	for (int i = 4990; i < 5000; i++)
		assert_int_equal(a[i], 0x5a);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

static void
create_on_existing_file_of_same_size_opens_it_unchanged(void **state)
{
	(void)state;
	const char *path = tp_path("exists");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(tp_make_file(path, SZ, 3), 0);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_null(strstr(tp_log_last[PMREP_LOG_INFO], "created"));
	assert_int_equal(((unsigned char *)pmrep_pmem_get_address(p))[1], 4);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_true(tp_file_has_pattern(path, SZ, 3));
}

static void
create_excl_on_existing_file_fails_eexist(void **state)
{
	(void)state;
	const char *path = tp_path("excl");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(tp_make_file(path, SZ, 5), 0);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE |
			PMREP_PMEM_EXCL, SZ, PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_PROVIDER);
	assert_null(p);
	assert_int_equal(pmrep_err_errno(), EEXIST);
	assert_non_null(strstr(pmrep_err_msg(), path));
	assert_true(tp_file_has_pattern(path, SZ, 5));
}

static void
create_through_dangling_symlink_fails_eexist(void **state)
{
	(void)state;
	const char *link = tp_path_n(0, "dangling");
	const char *target = tp_path_n(1, "nowhere");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(pmrep_pmem_open(link, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_null(p);
	assert_int_equal(pmrep_err_errno(), EEXIST);
	assert_false(tp_exists(target));
	assert_true(tp_exists(link));
}

static void
open_through_symlink_maps_the_target(void **state)
{
	(void)state;
	const char *link = tp_path_n(0, "link");
	const char *target = tp_path_n(1, "target");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(tp_make_file(target, SZ, 9), 0);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(pmrep_pmem_open(link, 0, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(((unsigned char *)pmrep_pmem_get_address(p))[0], 9);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

static void
create_beyond_free_space_fails_and_removes_file(void **state)
{
	(void)state;
	const char *path = tp_path("huge");
	struct pmrep_pmem *p = NULL;

	/* 1 PiB: more than this tmpfs (or any test machine) can hold; a
	 * tmpfs without a size limit would try to allocate it all: skip */
	struct statfs sf;
	assert_int_equal(statfs(tp_dir, &sf), 0);
	if (sf.f_blocks == 0 ||
			(double)sf.f_blocks * (double)sf.f_bsize >= 0x1p50)
		skip();
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE,
			(size_t)1 << 50, PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_PROVIDER);
	assert_null(p);
	int e = pmrep_err_errno();
	assert_true(e == ENOSPC || e == EFBIG);
	assert_non_null(strstr(pmrep_err_msg(), "posix_fallocate"));
	assert_false(tp_exists(path));
}

/* ---- opening: OS errors */

static void
open_missing_file_without_create_fails_enoent(void **state)
{
	(void)state;
	const char *path = tp_path("missing");
	struct pmrep_pmem *p = (struct pmrep_pmem *)(uintptr_t)1;

	assert_int_equal(pmrep_pmem_open(path, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_null(p);
	assert_int_equal(pmrep_err_errno(), ENOENT);
	assert_non_null(strstr(pmrep_err_msg(), path));
	assert_non_null(strstr(pmrep_err_msg(), "No such file"));
	assert_false(tp_exists(path));

	/* with a size as well */
	assert_int_equal(pmrep_pmem_open(path, 0, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOENT);
	assert_false(tp_exists(path));
}

static void
open_bad_paths_fail_with_their_errno(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;
	const char *missing_parent = tp_path("no/such/dir/file");

	assert_int_equal(pmrep_pmem_open(missing_parent, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOENT);

	assert_int_equal(pmrep_pmem_open("", PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOENT);

	char longname[NAME_MAX + 20];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(pmrep_pmem_open(tp_path(longname), PMREP_PMEM_CREATE,
			SZ, PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENAMETOOLONG);

	/* a file used as a directory */
	assert_int_equal(tp_make_file(tp_path("plain"), SZ, 0), 0);
	assert_int_equal(pmrep_pmem_open(tp_path("plain/x"), PMREP_PMEM_CREATE,
			SZ, PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOTDIR);
	assert_null(p);
}

static void
open_directory_fails_eisdir(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;

	assert_int_equal(pmrep_pmem_open(tp_dir, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EISDIR);
	assert_null(p);

	assert_int_equal(pmrep_pmem_open(tp_dir, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EISDIR);

	assert_int_equal(pmrep_pmem_open("/", 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EISDIR);
	assert_null(p);
}

/* raise or lower CAP_DAC_OVERRIDE in this thread's effective set */
static int
dac_override(bool on)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data) != 0)
		return -1;
	if (on)
		data[0].effective |= data[0].permitted &
			(1u << CAP_DAC_OVERRIDE);
	else
		data[0].effective &= ~(1u << CAP_DAC_OVERRIDE);
	return (int)syscall(SYS_capset, &hdr, data);
}

static void
open_read_only_file_fails_eacces(void **state)
{
	(void)state;
	const char *path = tp_path("readonly");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(tp_make_file(path, SZ, 1), 0);
	assert_int_equal(chmod(path, 0444), 0);
	/* root would open it anyway: drop the capability that allows that */
	if (dac_override(false) != 0)
		skip();
	int fd = open(path, O_RDWR);
	if (fd >= 0) {
		close(fd);
		dac_override(true);
		skip(); /* still writable: cannot produce the case here */
	}

	int ret = pmrep_pmem_open(path, 0, 0, PMREP_PMEM_GRANULARITY_PAGE, &p);
	int err = pmrep_err_errno();
	int ret_create = pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p);
	int err_create = pmrep_err_errno();
	dac_override(true);

	assert_int_equal(ret, PMREP_E_PROVIDER);
	assert_int_equal(err, EACCES);
	assert_int_equal(ret_create, PMREP_E_PROVIDER);
	assert_int_equal(err_create, EACCES);
	assert_null(p);
	assert_true(tp_file_has_pattern(path, SZ, 1));
}

static void
open_fifo_fails_inval(void **state)
{
	(void)state;
	const char *path = tp_path("fifo");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(pmrep_pmem_open(path, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_null(p);
	assert_non_null(strstr(pmrep_err_msg(),
			"neither a regular file nor a device DAX"));
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_true(tp_exists(path));
}

static void
open_socket_fails_enxio(void **state)
{
	(void)state;
	const char *path = tp_path("sock");
	struct pmrep_pmem *p = NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(pmrep_pmem_open(path, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENXIO);
	assert_null(p);
	close(s);
}

static void
open_char_device_not_devdax_fails_inval(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;

	assert_int_equal(pmrep_pmem_open("/dev/null", 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_null(p);
	assert_non_null(strstr(pmrep_err_msg(),
			"not a regular file or a device DAX"));
	assert_non_null(strstr(pmrep_err_msg(), "pmem2_source_from_fd"));
	/* and /dev/null is still there */
	assert_true(tp_exists("/dev/null"));
}

/* ---- opening: sizes */

static void
open_size_mismatch_fails_range_and_keeps_file(void **state)
{
	(void)state;
	const char *path = tp_path("mismatch");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(tp_make_file(path, SZ, 11), 0);

	/* larger than the file */
	assert_int_equal(pmrep_pmem_open(path, 0, 2 * SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	assert_null(p);
	assert_non_null(strstr(pmrep_err_msg(), "size mismatch"));
	/* smaller than the file: pmrep never maps a part */
	assert_int_equal(pmrep_pmem_open(path, 0, SZ - TP_PAGE,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	/* the same with PMREP_PMEM_CREATE: the file exists, never resized */
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ + 1,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	assert_int_equal(pmrep_err_errno(), 0);
	assert_null(p);
	assert_true(tp_file_has_pattern(path, SZ, 11));
}

static void
open_empty_file_fails_range(void **state)
{
	(void)state;
	const char *path = tp_path("empty");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(tp_make_file(path, 0, 0), 0);
	assert_int_equal(pmrep_pmem_open(path, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	assert_null(p);
	assert_non_null(strstr(pmrep_err_msg(), "empty"));
	/* too small for a size asked for, with or without CREATE */
	assert_int_equal(pmrep_pmem_open(path, 0, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	assert_null(p);
	assert_int_equal(tp_file_size(path), 0);
}

static void
open_one_byte_file_maps_one_byte(void **state)
{
	(void)state;
	const char *path = tp_path("tiny");
	struct pmrep_pmem *p = NULL;

	assert_int_equal(tp_make_file(path, 1, 42), 0);
	assert_int_equal(pmrep_pmem_open(path, 0, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(pmrep_pmem_get_size(p), 1);
	assert_int_equal(*(unsigned char *)pmrep_pmem_get_address(p), 42);
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, 1), 0);
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, 2), PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

/* ---- argument checks */

static void
open_invalid_arguments_fail_inval(void **state)
{
	(void)state;
	const char *path = tp_path("args");
	struct pmrep_pmem *p;

	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, NULL), PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "pmem_ptr"));

	p = (struct pmrep_pmem *)(uintptr_t)1;
	assert_int_equal(pmrep_pmem_open(NULL, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_null(p);
	assert_non_null(strstr(pmrep_err_msg(), "path"));

	p = (struct pmrep_pmem *)(uintptr_t)1;
	assert_int_equal(pmrep_pmem_open(path, 1u << 2, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_null(p);
	assert_int_equal(pmrep_pmem_open(path, 0x80000000u | PMREP_PMEM_CREATE,
			SZ, PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "flags"));

	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_EXCL, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "EXCL"));

	/* zero size with CREATE */
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, 0,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "size 0"));
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE |
			PMREP_PMEM_EXCL, 0, PMREP_PMEM_GRANULARITY_PAGE, &p),
			PMREP_E_INVAL);

	/* sizes no file offset can hold */
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE_MAX,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);
	assert_int_equal(pmrep_pmem_open(path, 0, (size_t)INT64_MAX + 1,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_INVAL);

	/* granularities that are not one */
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			(enum pmrep_pmem_granularity)3, &p), PMREP_E_INVAL);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			(enum pmrep_pmem_granularity)-1, &p), PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "granularity"));

	assert_null(p);
	assert_int_equal(pmrep_err_errno(), 0);
	/* nothing was created by any of these */
	assert_false(tp_exists(path));
}

/* ---- closing */

static void
close_null_and_double_close(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;

	assert_int_equal(pmrep_pmem_close(NULL), PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "pmem_ptr"));
	/* a successful close keeps the cause of the error before it: close
	 * runs on error paths, which must not lose their reason */
	assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_non_null(strstr(pmrep_err_msg(), "pmem_ptr"));

	assert_int_equal(pmrep_pmem_open(tp_path("c"), PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_null(p);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

/* the mapping owns its fd: open + close leaves no fd behind */
static int
count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (d == NULL)
		return -1;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

static void
close_releases_fd_and_mapping(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;
	int fds = count_open_fds();

	assert_int_equal(pmrep_pmem_open(tp_path("fd"), PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(count_open_fds(), fds + 1);
	void *a = pmrep_pmem_get_address(p);
	/* mapped now ... */
	unsigned char vec[4];
	assert_int_equal(mincore(a, SZ, vec), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_int_equal(count_open_fds(), fds);
	/* ... and no longer */
	assert_int_equal(mincore(a, SZ, vec), -1);
	assert_int_equal(errno, ENOMEM);

	/* failed opens leave no fd either */
	assert_int_equal(tp_make_file(tp_path("fd2"), SZ, 0), 0);
	assert_int_equal(pmrep_pmem_open(tp_path("fd2"), 0, 1,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_open(tp_path("fd2"), 0, 0,
			PMREP_PMEM_GRANULARITY_CACHE_LINE, &p),
			tp_is_tmpfs(tp_dir) ? PMREP_E_GRANULARITY : 0);
	if (p != NULL)
		assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_int_equal(count_open_fds(), fds);
}

/* ---- the mapping's functions */

static void
mapping_functions_copy_set_move_flush_and_drain(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;

	/* a disk file: its persist is an msync (a file in memory makes none) */
	if (!disk_path_make())
		skip();
	const char *path = disk_path;

	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	char *a = pmrep_pmem_get_address(p);
	pmrep_pmem_memcpy_fn *cpy = pmrep_pmem_get_memcpy_fn(p);
	pmrep_pmem_memmove_fn *mv = pmrep_pmem_get_memmove_fn(p);
	pmrep_pmem_memset_fn *set = pmrep_pmem_get_memset_fn(p);
	pmrep_pmem_flush_fn *flush = pmrep_pmem_get_flush_fn(p);
	pmrep_pmem_drain_fn *drain = pmrep_pmem_get_drain_fn(p);
	assert_non_null(cpy);
	assert_non_null(mv);
	assert_non_null(set);
	assert_non_null(flush);
	assert_non_null(drain);

	/* copy and persist */
	int before = msync_calls;
	assert_ptr_equal(cpy(a, "abcdef", 6, 0), a);
	assert_memory_equal(a, "abcdef", 6);
	assert_true(msync_calls > before);

	/* several copies without drain, one drain */
	cpy(a + 100, "one", 3, PMREP_PMEM_F_NODRAIN);
	cpy(a + 200, "two", 3, PMREP_PMEM_F_NODRAIN | PMREP_PMEM_F_TEMPORAL);
	drain();
	assert_memory_equal(a + 100, "one", 3);
	assert_memory_equal(a + 200, "two", 3);

	/* no flush at all: the caller flushes and drains */
	before = msync_calls;
	cpy(a + TP_PAGE * 2, "late", 4, PMREP_PMEM_F_NOFLUSH);
	assert_int_equal(msync_calls, before);
	flush(a + TP_PAGE * 2, 4);
	drain();
	assert_true(msync_calls > before);

	/* overlapping move */
	mv(a + 2, a, 6, 0);
	assert_memory_equal(a, "ababcdef", 8);

	/* set, with the non-temporal hint */
	assert_ptr_equal(set(a + 300, 'z', 64, PMREP_PMEM_F_NONTEMPORAL), a + 300);
	for (int i = 0; i < 64; i++)
		assert_int_equal(a[300 + i], 'z');
	assert_int_equal(pmrep_pmem_close(&p), 0);

	/* all of it is in the file */
	char buf[8];
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 8, 0), 8);
	assert_memory_equal(buf, "ababcdef", 8);
	assert_int_equal(pread(fd, buf, 4, TP_PAGE * 2), 4);
	assert_memory_equal(buf, "late", 4);
	close(fd);
	disk_dir_remove();
}

static void
persist_cb_fits_the_transport_persist_fn(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;

	/* the adapter, not the void getter, has the transport's shape */
	_Static_assert(__builtin_types_compatible_p(
			__typeof__(&pmrep_pmem_persist_cb), pmrep_persist_fn *),
			"persist fn types");
	_Static_assert(!__builtin_types_compatible_p(pmrep_pmem_persist_fn *,
			pmrep_persist_fn *), "the void getter is not it");
	if (!disk_path_make())
		skip();
	assert_int_equal(pmrep_pmem_open(disk_path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	/* assignable without a cast: what pmrep_mr_set_persist_fn takes */
	pmrep_persist_fn *fn = pmrep_pmem_persist_cb;
	char *a = pmrep_pmem_get_address(p);
	a[0] = 1;
	int before = msync_calls;
	assert_int_equal(fn(p, a, 1), 0);
	assert_int_equal(msync_calls, before + 1);
	assert_int_equal(msync_last_addr, (uintptr_t)a);
	/* its range is checked against the mapping in ctx */
	assert_int_equal(fn(p, a + SZ, 1), PMREP_E_INVAL);
	assert_int_equal(fn(NULL, a, 1), PMREP_E_INVAL);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	disk_dir_remove();
}

/* ---- deep flush */

static void
deep_flush_on_tmpfs_succeeds_and_checks_range(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;

	assert_int_equal(pmrep_pmem_open(tp_path("deep"), PMREP_PMEM_CREATE,
			SZ, PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, SZ), 0);
	assert_int_equal(pmrep_pmem_deep_flush(p, TP_PAGE + 1, 10), 0);
	assert_int_equal(pmrep_pmem_deep_flush(p, SZ - 1, 1), 0);
	assert_int_equal(pmrep_pmem_deep_flush(p, SZ, 0), 0);
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, 0), 0);
	assert_string_equal(pmrep_err_msg(), "");

	assert_int_equal(pmrep_pmem_deep_flush(p, 0, SZ + 1), PMREP_E_RANGE);
	assert_non_null(strstr(pmrep_err_msg(), "outside the mapping"));
	assert_int_equal(pmrep_pmem_deep_flush(p, SZ, 1), PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_deep_flush(p, SZ + 1, 0), PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_deep_flush(p, 1, SIZE_MAX), PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_deep_flush(p, SIZE_MAX, 2), PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_deep_flush(NULL, 0, 1), PMREP_E_INVAL);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

/* ---- getters */

static void
getters_on_null_return_neutral_values_and_log(void **state)
{
	(void)state;

	assert_null(pmrep_pmem_get_address(NULL));
	assert_non_null(strstr(pmrep_err_msg(), "pmrep_pmem_get_address"));
	assert_int_equal(pmrep_pmem_get_size(NULL), 0);
	assert_int_equal(pmrep_pmem_get_granularity(NULL),
			PMREP_PMEM_GRANULARITY_PAGE);
	assert_string_equal(pmrep_pmem_get_path(NULL), "");
	assert_false(pmrep_pmem_is_devdax(NULL));
	assert_null(pmrep_pmem_get_persist_fn(NULL));
	assert_null(pmrep_pmem_get_flush_fn(NULL));
	assert_null(pmrep_pmem_get_drain_fn(NULL));
	assert_null(pmrep_pmem_get_memcpy_fn(NULL));
	assert_null(pmrep_pmem_get_memmove_fn(NULL));
	assert_null(pmrep_pmem_get_memset_fn(NULL));
	assert_non_null(strstr(pmrep_err_msg(), "pmrep_pmem_get_memset_fn"));
	assert_int_equal(tp_log_count[PMREP_LOG_ERROR], 11);
	assert_int_equal(pmrep_err_errno(), 0);
}

static void
granularity_names(void **state)
{
	(void)state;
	assert_string_equal(pmrep_pmem_granularity_to_str(
			PMREP_PMEM_GRANULARITY_PAGE), "PAGE");
	assert_string_equal(pmrep_pmem_granularity_to_str(
			PMREP_PMEM_GRANULARITY_CACHE_LINE), "CACHE_LINE");
	assert_string_equal(pmrep_pmem_granularity_to_str(
			PMREP_PMEM_GRANULARITY_BYTE), "BYTE");
	assert_string_equal(pmrep_pmem_granularity_to_str(
			(enum pmrep_pmem_granularity)9), "unknown");
	/* 0 is the default that works everywhere */
	assert_int_equal(PMREP_PMEM_GRANULARITY_PAGE, 0);
}

/* ---- a file system that is not tmpfs (no DAX either: PAGE only) */

static void
cache_line_on_non_dax_disk_fs_fails_with_granularity_error(void **state)
{
	(void)state;
	struct pmrep_pmem *p = NULL;

	if (!disk_path_make())
		skip();
	int ret = pmrep_pmem_open(disk_path, PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_CACHE_LINE, &p);
	if (ret == 0) {
		/* a DAX-mounted /var/tmp: then it really offers it */
		assert_true(pmrep_pmem_get_granularity(p) >=
				PMREP_PMEM_GRANULARITY_CACHE_LINE);
		assert_int_equal(pmrep_pmem_close(&p), 0);
	} else {
		assert_int_equal(ret, PMREP_E_GRANULARITY);
		assert_non_null(strstr(pmrep_err_msg(), pmem2_errormsg()));
		assert_false(tp_exists(disk_path));
		assert_int_equal(pmrep_pmem_open(disk_path, PMREP_PMEM_CREATE,
				SZ, PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
		assert_int_equal(pmrep_pmem_get_granularity(p),
				PMREP_PMEM_GRANULARITY_PAGE);
		memset(pmrep_pmem_get_address(p), 1, 10);
		int before = msync_calls;
		pmrep_pmem_get_persist_fn(p)(pmrep_pmem_get_address(p), 10);
		assert_int_equal(msync_calls, before + 1);
		assert_int_equal(pmrep_pmem_deep_flush(p, 0, SZ), 0);
		assert_int_equal(pmrep_pmem_close(&p), 0);
	}
	disk_dir_remove();
}

/* ---- threads: different mappings opened, used and closed concurrently */

#define THREADS 4
#define ROUNDS 8

static void *
thread_open_use_close(void *arg)
{
	int id = (int)(intptr_t)arg;
	char path[256];
	intptr_t bad = 0;

	snprintf(path, sizeof(path), "%s/thread%d", tp_dir, id);
	for (int r = 0; r < ROUNDS && !bad; r++) {
		struct pmrep_pmem *p = NULL;
		if (pmrep_pmem_open(path, PMREP_PMEM_CREATE, SZ,
				PMREP_PMEM_GRANULARITY_PAGE, &p) != 0) {
			bad = 1;
			break;
		}
		unsigned char *a = pmrep_pmem_get_address(p);
		if (a[r] != (r ? (unsigned char)(id + r - 1) : 0))
			bad = 2;
		pmrep_pmem_get_memset_fn(p)(a + r + 1, id + r, 1, 0);
		a[r + 1] = (unsigned char)(id + r);
		/* errors are thread-local: this one stays in this thread */
		if (pmrep_pmem_deep_flush(p, SZ, 1) != PMREP_E_RANGE ||
				strstr(pmrep_err_msg(), path) == NULL)
			bad = 3;
		if (pmrep_pmem_close(&p) != 0)
			bad = 4;
	}
	return (void *)bad;
}

static void
different_mappings_in_parallel_threads(void **state)
{
	(void)state;
	pthread_t t[THREADS];

	tp_log_restore(); /* the capturing sink is not thread-safe */
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	struct pmrep_pmem *none = NULL;
	assert_int_equal(pmrep_pmem_close(&none), 0); /* clears the error */
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL,
				thread_open_use_close, (void *)(intptr_t)i), 0);
	for (int i = 0; i < THREADS; i++) {
		void *res;
		assert_int_equal(pthread_join(t[i], &res), 0);
		assert_int_equal((intptr_t)res, 0);
	}
	assert_string_equal(pmrep_err_msg(), "");
}

/* ---- optional real hardware, named by the environment */

static void
devdax_from_env_maps_the_whole_device(void **state)
{
	(void)state;
	const char *dev = getenv("PMREP_TEST_DEVDAX");
	struct pmrep_pmem *p = NULL;

	if (dev == NULL || dev[0] == '\0')
		skip();
	assert_int_equal(pmrep_pmem_open(dev, 0, 0,
			PMREP_PMEM_GRANULARITY_CACHE_LINE, &p), 0);
	assert_true(pmrep_pmem_is_devdax(p));
	assert_true(pmrep_pmem_get_size(p) > 0);
	assert_true(pmrep_pmem_get_granularity(p) >=
			PMREP_PMEM_GRANULARITY_CACHE_LINE);
	size_t size = pmrep_pmem_get_size(p);
	char *a = pmrep_pmem_get_address(p);
	char saved = a[0];
	pmrep_pmem_get_memcpy_fn(p)(a, "x", 1, 0);
	pmrep_pmem_get_memcpy_fn(p)(a, &saved, 1, 0);
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, 64), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	/* its own size: any other fails */
	assert_int_equal(pmrep_pmem_open(dev, PMREP_PMEM_CREATE, size + 4096,
			PMREP_PMEM_GRANULARITY_PAGE, &p), PMREP_E_RANGE);
	assert_int_equal(pmrep_pmem_open(dev, PMREP_PMEM_CREATE, size,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

static void
fsdax_from_env_offers_cache_line(void **state)
{
	(void)state;
	const char *dir = getenv("PMREP_TEST_FSDAX_DIR");
	char path[512];
	struct pmrep_pmem *p = NULL;

	if (dir == NULL || dir[0] == '\0')
		skip();
	snprintf(path, sizeof(path), "%s/pmrep-test-pmem-fsdax", dir);
	unlink(path);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE |
			PMREP_PMEM_EXCL, 2 << 20,
			PMREP_PMEM_GRANULARITY_CACHE_LINE, &p), 0);
	assert_false(pmrep_pmem_is_devdax(p));
	assert_true(pmrep_pmem_get_granularity(p) >=
			PMREP_PMEM_GRANULARITY_CACHE_LINE);
	char *a = pmrep_pmem_get_address(p);
	memcpy(a, "fsdax", 5);
	pmrep_pmem_get_persist_fn(p)(a, 5);
	assert_int_equal(pmrep_pmem_deep_flush(p, 0, 5), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(t12_cache_line_on_tmpfs_fails_with_granularity_error),
		T(t12_byte_on_tmpfs_fails_with_granularity_error),
		T(t12_cache_line_on_existing_tmpfs_file_keeps_the_file),
		T(t12_page_on_tmpfs_maps_with_page_and_persists_without_msync),
		T(page_on_disk_fs_persists_with_one_msync_of_its_pages),
		T(t12_page_write_persist_close_reopen_keeps_data),
		T(create_makes_zeroed_file_of_size_with_mode_0600),
		T(create_unaligned_size_maps_exactly_that_size),
		T(create_on_existing_file_of_same_size_opens_it_unchanged),
		T(create_excl_on_existing_file_fails_eexist),
		T(create_through_dangling_symlink_fails_eexist),
		T(open_through_symlink_maps_the_target),
		T(create_beyond_free_space_fails_and_removes_file),
		T(open_missing_file_without_create_fails_enoent),
		T(open_bad_paths_fail_with_their_errno),
		T(open_directory_fails_eisdir),
		T(open_read_only_file_fails_eacces),
		T(open_fifo_fails_inval),
		T(open_socket_fails_enxio),
		T(open_char_device_not_devdax_fails_inval),
		T(open_size_mismatch_fails_range_and_keeps_file),
		T(open_empty_file_fails_range),
		T(open_one_byte_file_maps_one_byte),
		T(open_invalid_arguments_fail_inval),
		T(close_null_and_double_close),
		T(close_releases_fd_and_mapping),
		T(mapping_functions_copy_set_move_flush_and_drain),
		T(persist_cb_fits_the_transport_persist_fn),
		T(deep_flush_on_tmpfs_succeeds_and_checks_range),
		T(getters_on_null_return_neutral_values_and_log),
		T(granularity_names),
		T(cache_line_on_non_dax_disk_fs_fails_with_granularity_error),
		T(different_mappings_in_parallel_threads),
		T(devdax_from_env_maps_the_whole_device),
		T(fsdax_from_env_offers_cache_line),
#undef T
	};
	return cmocka_run_group_tests_name("pmem", tests, group_setup,
			group_teardown);
}
