/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmem.c -- the pmem layer: open / create a file or device DAX, map it
 * through libpmem2 (source -> config -> map) and hand out the mapping's
 * address, size, effective granularity and persistence functions.
 *
 * Persisting a mapping (and why a PAGE mapping never persists through
 * libpmem2): pmem_persist.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* GNU strerror_r */
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/types.h>
#include <unistd.h>

#include <libpmem2.h>

#include <pmrep/pmem.h>

#include "../common/log.h"
#include "../common/testhook.h"
#include "pmem_alloc.h"
#include "pmem_int.h"
#include "pmem_view.h"

/* pmrep's public flags are libpmem2's, value for value */
_Static_assert(PMREP_PMEM_F_NODRAIN == PMEM2_F_MEM_NODRAIN, "flag value");
_Static_assert(PMREP_PMEM_F_NONTEMPORAL == PMEM2_F_MEM_NONTEMPORAL,
		"flag value");
_Static_assert(PMREP_PMEM_F_TEMPORAL == PMEM2_F_MEM_TEMPORAL, "flag value");
_Static_assert(PMREP_PMEM_F_WC == PMEM2_F_MEM_WC, "flag value");
_Static_assert(PMREP_PMEM_F_WB == PMEM2_F_MEM_WB, "flag value");
_Static_assert(PMREP_PMEM_F_NOFLUSH == PMEM2_F_MEM_NOFLUSH, "flag value");
_Static_assert(sizeof(off_t) == sizeof(int64_t), "64-bit file offsets");

#define OPEN_FLAGS_ALL (PMREP_PMEM_CREATE | PMREP_PMEM_EXCL)
#define NEW_FILE_MODE (S_IRUSR | S_IWUSR)
/* open-or-create races (another process creating / removing the path) */
#define OPEN_ATTEMPTS 4



__attribute__((weak)) void *
pmrep_pmem_zalloc(size_t size)
{
	return calloc(1, size);
}

static bool
gran_valid(enum pmrep_pmem_granularity g)
{
	return g == PMREP_PMEM_GRANULARITY_PAGE ||
		g == PMREP_PMEM_GRANULARITY_CACHE_LINE ||
		g == PMREP_PMEM_GRANULARITY_BYTE;
}

static enum pmem2_granularity
gran_to_pmem2(enum pmrep_pmem_granularity g)
{
	switch (g) {
	case PMREP_PMEM_GRANULARITY_BYTE:
		return PMEM2_GRANULARITY_BYTE;
	case PMREP_PMEM_GRANULARITY_CACHE_LINE:
		return PMEM2_GRANULARITY_CACHE_LINE;
	case PMREP_PMEM_GRANULARITY_PAGE:
	default:
		return PMEM2_GRANULARITY_PAGE;
	}
}

static enum pmrep_pmem_granularity
gran_from_pmem2(enum pmem2_granularity g)
{
	switch (g) {
	case PMEM2_GRANULARITY_BYTE:
		return PMREP_PMEM_GRANULARITY_BYTE;
	case PMEM2_GRANULARITY_CACHE_LINE:
		return PMREP_PMEM_GRANULARITY_CACHE_LINE;
	case PMEM2_GRANULARITY_PAGE:
	default:
		/* anything unexpected is treated as the safest: PAGE */
		return PMREP_PMEM_GRANULARITY_PAGE;
	}
}

const char *
pmrep_pmem_granularity_to_str(enum pmrep_pmem_granularity granularity)
{
	switch (granularity) {
	case PMREP_PMEM_GRANULARITY_PAGE:
		return "PAGE";
	case PMREP_PMEM_GRANULARITY_CACHE_LINE:
		return "CACHE_LINE";
	case PMREP_PMEM_GRANULARITY_BYTE:
		return "BYTE";
	default:
		return "unknown";
	}
}

static int
err_inval(const char *what)
{
	PMREP_LOG_ERR("invalid argument: %s", what);
	return PMREP_E_INVAL;
}

/* libpmem2 returns -errno for OS failures and PMEM2_E_* (<= -100000) else */
static int
pmem2_errno(int ret)
{
	return (ret < 0 && ret > PMEM2_E_UNKNOWN) ? -ret : 0;
}

/*
 * pmem2_failed -- record and log a failure `ret` of the libpmem2 call
 * `what` on `path`, passing libpmem2's message through, and return the
 * pmrep code for it.
 */
static int
pmem2_failed(int ret, const char *path, const char *what)
{
	int err = pmem2_errno(ret);

	pmrep_err_set_errno(err);

	if (ret == -ENOMEM) {
		PMREP_LOG_ERR("%s: %s: out of memory: %s", path, what,
				pmem2_errormsg());
		return PMREP_E_NOMEM;
	}
	if (ret == PMEM2_E_INVALID_FILE_TYPE) {
		/* libpmem2 1.12 sets no message for this one */
		PMREP_LOG_ERR("%s: %s: not a regular file or a device DAX "
				"(libpmem2 error %d)", path, what, ret);
		return PMREP_E_INVAL;
	}
	if (ret == PMEM2_E_GRANULARITY_NOT_SUPPORTED) {
		PMREP_LOG_ERR("%s: %s: the mapping cannot offer the required "
				"store granularity: %s (libpmem2 error %d)",
				path, what, pmem2_errormsg(), ret);
		return PMREP_E_GRANULARITY;
	}
	PMREP_LOG_ERR("%s: %s failed: %s (libpmem2 error %d)", path, what,
			pmem2_errormsg(), ret);
	return PMREP_E_PMEM;
}

/*
 * os_failed -- record and log the failure `err` (an errno) of the libc
 * call `what` on `path`; return PMREP_E_PROVIDER.
 */
static int
os_failed(int err, const char *path, const char *what)
{
	char buf[128];

	pmrep_err_set_errno(err);
	PMREP_LOG_ERR("%s: %s: %s (errno %d)", path, what,
			strerror_r(err, buf, sizeof(buf)), err);
	return PMREP_E_PROVIDER;
}

/*
 * open_path -- open `path` read-write; with PMREP_PMEM_CREATE create it
 * when missing and tell so through *created.
 */
static int
open_path(const char *path, unsigned flags, bool rdonly, int *fd_out,
		bool *created)
{
	const int base = (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOCTTY;
	int fd = -1;

	*created = false;
	for (int i = 0; i < OPEN_ATTEMPTS; i++) {
		if (!(flags & PMREP_PMEM_EXCL)) {
			fd = open(path, base);
			if (fd >= 0)
				break;
			if (errno != ENOENT || !(flags & PMREP_PMEM_CREATE))
				break;
		}
		fd = open(path, base | O_CREAT | O_EXCL, NEW_FILE_MODE);
		if (fd >= 0) {
			*created = true;
			break;
		}
		/* created by someone else meanwhile: open it as it is */
		if (errno != EEXIST || (flags & PMREP_PMEM_EXCL))
			break;
	}
	if (fd < 0)
		return os_failed(errno, path, "open");
	*fd_out = fd;
	return 0;
}

static void
pmem_free(struct pmrep_pmem *p, bool unlink_path)
{
	pmem_reg_remove(p);
	if (p->map != NULL && pmem2_map_delete(&p->map) != 0)
		PMREP_LOG_WARN("%s: pmem2_map_delete: %s", p->path,
				pmem2_errormsg());
	pmem2_source_delete(&p->src);
	if (p->fd >= 0)
		close(p->fd);
	if (unlink_path && unlink(p->path) != 0) {
		char buf[128];

		PMREP_LOG_WARN("%s: cannot remove the file created: %s",
				p->path, strerror_r(errno, buf, sizeof(buf)));
	}
	free(p->path);
	free(p);
}

/* map_source -- configure and map p->src, then fill in p's copies */
static int
map_source(struct pmrep_pmem *p, enum pmrep_pmem_granularity required)
{
	struct pmem2_config *cfg = NULL;
	int ret;

	ret = pmem2_config_new(&cfg);
	if (ret != 0)
		return pmem2_failed(ret, p->path, "pmem2_config_new");
	if (p->rdonly) {
		ret = pmem2_config_set_protection(cfg, PMEM2_PROT_READ);
		if (ret != 0) {
			ret = pmem2_failed(ret, p->path,
					"pmem2_config_set_protection");
			goto out;
		}
	}

	ret = pmem2_config_set_required_store_granularity(cfg,
			gran_to_pmem2(required));
	if (ret != 0) {
		ret = pmem2_failed(ret, p->path,
				"pmem2_config_set_required_store_granularity");
		goto out;
	}

	ret = pmem2_map_new(&p->map, cfg, p->src);
	if (ret == PMEM2_E_GRANULARITY_NOT_SUPPORTED) {
		p->map = NULL;
		pmrep_err_set_errno(0);
		PMREP_LOG_ERR("%s: the mapping cannot offer the required store "
				"granularity %s (%s always works): %s "
				"(libpmem2 error %d)", p->path,
				pmrep_pmem_granularity_to_str(required),
				pmrep_pmem_granularity_to_str(
				PMREP_PMEM_GRANULARITY_PAGE),
				pmem2_errormsg(), ret);
		ret = PMREP_E_GRANULARITY;
		goto out;
	}
	if (ret != 0) {
		p->map = NULL;
		ret = pmem2_failed(ret, p->path, "pmem2_map_new");
		goto out;
	}

	p->addr = pmem2_map_get_address(p->map);
	p->size = pmem2_map_get_size(p->map);
	p->granularity = gran_from_pmem2(
			pmem2_map_get_store_granularity(p->map));
	p->persist = pmem2_get_persist_fn(p->map);
	p->flush = pmem2_get_flush_fn(p->map);
	p->drain = pmem2_get_drain_fn(p->map);
	p->memcpy_fn = pmem2_get_memcpy_fn(p->map);
	p->memmove_fn = pmem2_get_memmove_fn(p->map);
	p->memset_fn = pmem2_get_memset_fn(p->map);
	if (p->granularity == PMREP_PMEM_GRANULARITY_PAGE)
		pmem_page_fns(p);
out:
	pmem2_config_delete(&cfg);
	return ret;
}

static int pmem_open(const char *path, unsigned flags, size_t size,
		enum pmrep_pmem_granularity required, bool rdonly,
		struct pmrep_pmem **pmem_ptr);

int
pmrep_pmem_open(const char *path, unsigned flags, size_t size,
		enum pmrep_pmem_granularity required,
		struct pmrep_pmem **pmem_ptr)
{
	return pmem_open(path, flags, size, required, false, pmem_ptr);
}

/* rdonly: the file opened O_RDONLY and mapped PROT_READ (no CREATE) */
static int
pmem_open(const char *path, unsigned flags, size_t size,
		enum pmrep_pmem_granularity required, bool rdonly,
		struct pmrep_pmem **pmem_ptr)
{
	struct pmrep_pmem *p;
	struct stat st;
	bool created = false;
	size_t src_size = 0;
	int ret;

	pmrep_err_clear();

	if (pmem_ptr == NULL)
		return err_inval("pmem_ptr is NULL");
	*pmem_ptr = NULL;
	if (path == NULL)
		return err_inval("path is NULL");
	if (flags & ~OPEN_FLAGS_ALL)
		return err_inval("unknown bits in flags");
	if ((flags & PMREP_PMEM_EXCL) && !(flags & PMREP_PMEM_CREATE))
		return err_inval("PMREP_PMEM_EXCL without PMREP_PMEM_CREATE");
	if (rdonly && (flags & PMREP_PMEM_CREATE))
		return err_inval("PMREP_PMEM_CREATE on a read-only open");
	if ((flags & PMREP_PMEM_CREATE) && size == 0)
		return err_inval("PMREP_PMEM_CREATE with size 0");
	if ((uintmax_t)size > (uintmax_t)INT64_MAX)
		return err_inval("size beyond the largest file offset");
	if (!gran_valid(required))
		return err_inval("required granularity is not a "
				"pmrep_pmem_granularity");

	p = pmrep_pmem_zalloc(sizeof(*p));
	if (p == NULL) {
		PMREP_LOG_ERR("%s: out of memory", path);
		pmrep_err_set_errno(ENOMEM);
		return PMREP_E_NOMEM;
	}
	p->fd = -1;
	p->rdonly = rdonly;

	size_t path_len = strlen(path);
	p->path = pmrep_pmem_zalloc(path_len + 1);
	if (p->path == NULL) {
		free(p);
		PMREP_LOG_ERR("%s: out of memory", path);
		pmrep_err_set_errno(ENOMEM);
		return PMREP_E_NOMEM;
	}
	memcpy(p->path, path, path_len + 1);

	ret = open_path(path, flags, rdonly, &p->fd, &created);
	if (ret != 0)
		goto fail;

	if (fstat(p->fd, &st) != 0) {
		ret = os_failed(errno, path, "fstat");
		goto fail;
	}
	if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
		PMREP_LOG_ERR("%s: neither a regular file nor a device DAX",
				path);
		ret = PMREP_E_INVAL;
		goto fail;
	}
	p->devdax = S_ISCHR(st.st_mode);

	if (created) {
		ret = posix_fallocate(p->fd, 0, (off_t)size);
		if (ret != 0) {
			ret = os_failed(ret, path, "posix_fallocate of the new "
					"file");
			goto fail;
		}
	}

	ret = pmem2_source_from_fd(&p->src, p->fd);
	if (ret != 0) {
		p->src = NULL;
		ret = pmem2_failed(ret, path, "pmem2_source_from_fd");
		goto fail;
	}
	ret = pmem2_source_size(p->src, &src_size);
	if (ret != 0) {
		ret = pmem2_failed(ret, path, "pmem2_source_size");
		goto fail;
	}
	if (src_size == 0) {
		PMREP_LOG_ERR("%s: the file is empty (0 bytes): nothing to map",
				path);
		ret = PMREP_E_RANGE;
		goto fail;
	}
	if (size != 0 && size != src_size) {
		PMREP_LOG_ERR("%s: size mismatch: the %s has %zu bytes, "
				"%zu were asked for", path,
				p->devdax ? "device" : "file", src_size, size);
		ret = PMREP_E_RANGE;
		goto fail;
	}

	ret = map_source(p, required);
	if (ret != 0)
		goto fail;

	PMREP_LOG_INFO("%s: mapped %zu bytes at %p (%s%s), granularity %s "
			"(required %s)", path, p->size, p->addr,
			p->devdax ? "device DAX" : p->in_memory ?
			"file in memory, no write-back" : "file",
			created ? ", created" : "",
			pmrep_pmem_granularity_to_str(p->granularity),
			pmrep_pmem_granularity_to_str(required));
	if (p->granularity == PMREP_PMEM_GRANULARITY_PAGE)
		pmem_reg_add(p);
	p->created = created;
	*pmem_ptr = p;
	return 0;

fail:
	pmem_free(p, created);
	return ret;
}

int
pmem_view_open(const char *path, unsigned flags, size_t file_size,
		enum pmrep_pmem_granularity required, size_t view_off, bool lock,
		bool rdonly, struct pmrep_pmem **pmem_ptr)
{
	int ret = pmem_open(path, flags, file_size, required, rdonly, pmem_ptr);
	if (ret)
		return ret;
	struct pmrep_pmem *p = *pmem_ptr;
	if (view_off == 0 || view_off % 4096 != 0 || view_off >= p->size) {
		PMREP_LOG_ERR("%s: %zu bytes: too small for a %zu-byte header and data",
				path, p->size, view_off);
		ret = PMREP_E_RANGE;
		goto fail;
	}
	if (lock && flock(p->fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		if (err == EWOULDBLOCK) {
			pmrep_err_set_errno(err);
			PMREP_LOG_ERR("%s is in use: a pmrep-target serves it, or another process has it open as a log",
					path);
			ret = PMREP_E_BUSY;
		} else {
			ret = os_failed(err, path, "flock");
		}
		goto fail;
	}
	p->view_off = view_off;
	return 0;
fail:
	*pmem_ptr = NULL;
	pmem_free(p, p->created);	/* a file this open created goes again */
	return ret;
}

void *
pmem_whole_address(const struct pmrep_pmem *pmem)
{
	return pmem->addr;
}

size_t
pmem_whole_size(const struct pmrep_pmem *pmem)
{
	return pmem->size;
}

bool
pmem_created(const struct pmrep_pmem *pmem)
{
	return pmem->created;
}

bool
pmem_rdonly(const struct pmrep_pmem *pmem)
{
	return pmem->rdonly;
}

int
pmrep_pmem_close(struct pmrep_pmem **pmem_ptr)
{
	int ret = 0;

	/* no pmrep_err_clear(): close runs on error paths, keep their cause */
	if (pmem_ptr == NULL)
		return err_inval("pmem_ptr is NULL");

	struct pmrep_pmem *p = *pmem_ptr;
	if (p == NULL)
		return 0;

	int r = pmem2_map_delete(&p->map);
	if (r != 0) {
		ret = pmem2_failed(r, p->path, "pmem2_map_delete");
		/* cannot be retried: forget the mapping, release the rest */
		p->map = NULL;
	}
	pmem_free(p, false);
	*pmem_ptr = NULL;
	return ret;
}

/* deep flush is best effort: these mean "not available here" */
static bool
deep_flush_unsupported(int ret)
{
	return ret == PMEM2_E_NOSUPP || ret == PMEM2_E_DAX_REGION_NOT_FOUND ||
		ret == -ENOTSUP || ret == -EOPNOTSUPP;
}

int
pmrep_pmem_deep_flush(struct pmrep_pmem *pmem, size_t offset, size_t len)
{
	pmrep_err_clear();
	if (pmem == NULL)
		return err_inval("pmem is NULL");
	size_t vsize = pmem->size - pmem->view_off;
	if (offset > vsize || len > vsize - offset) {
		PMREP_LOG_ERR("%s: deep flush of %zu bytes at offset %zu: "
				"outside the mapping of %zu bytes", pmem->path,
				len, offset, vsize);
		return PMREP_E_RANGE;
	}
	if (len == 0)
		return 0;

	int ret = pmem2_deep_flush(pmem->map, (char *)pmem->addr +
			pmem->view_off + offset, len);
	if (ret == 0)
		return 0;
	if (deep_flush_unsupported(ret)) {
		PMREP_LOG_INFO("%s: deep flush not supported here, skipped: "
				"%s (libpmem2 error %d)", pmem->path,
				pmem2_errormsg(), ret);
		return 0;
	}
	return pmem2_failed(ret, pmem->path, "pmem2_deep_flush");
}

/* ------------------------------------------------------------- getters */

bool
pmem_getter_arg_ok(const struct pmrep_pmem *pmem, const char *func)
{
	if (pmem != NULL)
		return true;
	PMREP_LOG(PMREP_LOG_ERROR, "invalid argument: pmem is NULL (%s)", func);
	pmrep_err_set_errno(0);
	return false;
}

void *
pmrep_pmem_get_address(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ?
		(char *)pmem->addr + pmem->view_off : NULL;
}

size_t
pmrep_pmem_get_size(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->size - pmem->view_off : 0;
}

enum pmrep_pmem_granularity
pmrep_pmem_get_granularity(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->granularity :
		PMREP_PMEM_GRANULARITY_PAGE;
}

const char *
pmrep_pmem_get_path(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->path : "";
}

bool
pmrep_pmem_is_devdax(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->devdax : false;
}

pmrep_pmem_persist_fn *
pmrep_pmem_get_persist_fn(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->persist : NULL;
}

pmrep_pmem_flush_fn *
pmrep_pmem_get_flush_fn(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->flush : NULL;
}

pmrep_pmem_drain_fn *
pmrep_pmem_get_drain_fn(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->drain : NULL;
}

pmrep_pmem_memcpy_fn *
pmrep_pmem_get_memcpy_fn(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->memcpy_fn : NULL;
}

pmrep_pmem_memmove_fn *
pmrep_pmem_get_memmove_fn(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->memmove_fn : NULL;
}

pmrep_pmem_memset_fn *
pmrep_pmem_get_memset_fn(const struct pmrep_pmem *pmem)
{
	return pmem_getter_arg_ok(pmem, __func__) ? pmem->memset_fn : NULL;
}
