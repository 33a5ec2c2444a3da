/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/pmem.h -- the pmem layer: a mapping of a persistent-memory file
 * (fsdax), a plain file (e.g. on tmpfs such as /dev/shm) or a device DAX
 * character device, made through libpmem2, together with the functions
 * that make stores to it durable (persist, flush, drain, memcpy ...).
 *
 * Conventions (all functions):
 * - functions returning int return 0 or a negative PMREP_E_* code, and
 *   every error is also logged; pmrep_err_msg() then holds the message
 *   (libpmem2's own message included where libpmem2 reported the error)
 *   and pmrep_err_errno() the errno behind it (0 if there was none);
 * - sizes, offsets and lengths are in bytes;
 * - a mapping owns the file descriptor it opened and closes it in
 *   pmrep_pmem_close(); no fd is ever handed to the caller.
 * Thread safety: opening and closing different mappings from different
 * threads is safe. Once open, a mapping is immutable but for its poison
 * flag (atomic; see pmrep_pmem_persist): its getters and the
 * functions they return may be called from any number of threads at once,
 * on disjoint or overlapping ranges (ordering of overlapping stores is the
 * caller's business). pmrep_pmem_close() must not run concurrently with any
 * other use of the same mapping.
 */
#ifndef PMREP_PMEM_H
#define PMREP_PMEM_H

#include <pmrep/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open mapping of a pmem file, fsdax / tmpfs file or devdax device. */
struct pmrep_pmem;

/*
 * Store granularity: the unit in which stores become durable, from the
 * coarsest to the finest. A mapping whose effective granularity is X
 * satisfies a requirement of X or anything coarser.
 * - PAGE: durability needs an msync-like call over whole pages (any file
 *   system, tmpfs included). The value 0: the default, works everywhere.
 * - CACHE_LINE: cache lines must be flushed (CLWB/CLFLUSHOPT + fence);
 *   fsdax files mapped with MAP_SYNC and devdax.
 * - BYTE: the CPU caches are in the persistence domain (eADR); only a
 *   fence is needed.
 */
enum pmrep_pmem_granularity {
	PMREP_PMEM_GRANULARITY_PAGE = 0,
	PMREP_PMEM_GRANULARITY_CACHE_LINE = 1,
	PMREP_PMEM_GRANULARITY_BYTE = 2,
};

/* Flags of pmrep_pmem_open (OR them). */
/* Create a regular file of `size` bytes if `path` does not exist. */
#define PMREP_PMEM_CREATE	(1u << 0)
/* With PMREP_PMEM_CREATE: fail if `path` already exists. */
#define PMREP_PMEM_EXCL		(1u << 1)

/*
 * Flags of the functions returned by pmrep_pmem_get_memcpy_fn /
 * _get_memmove_fn / _get_memset_fn (OR them; 0 = copy and persist). They
 * are libpmem2's PMEM2_F_MEM_* flags, with the same values and meaning:
 * NODRAIN skips the final drain, NOFLUSH skips flush and drain (then the
 * caller must persist), the others are hints on how to copy.
 */
#define PMREP_PMEM_F_NODRAIN		(1u << 0)
#define PMREP_PMEM_F_NONTEMPORAL	(1u << 1)
#define PMREP_PMEM_F_TEMPORAL		(1u << 2)
#define PMREP_PMEM_F_WC			(1u << 3)
#define PMREP_PMEM_F_WB			(1u << 4)
#define PMREP_PMEM_F_NOFLUSH		(1u << 5)

/*
 * Function types of a mapping (libpmem2's shapes). They return no result:
 * a failure of the write-back behind them (msync, PAGE granularity only)
 * is logged and poisons the mapping (see pmrep_pmem_persist) but cannot
 * reach the caller. Whoever must know whether the bytes are durable calls
 * pmrep_pmem_persist(), whose result says so. pmrep_pmem_persist_fn is
 * NOT the transport's pmrep_persist_fn (that one returns a result and
 * takes a context): give pmrep_mr_set_persist_fn() pmrep_pmem_persist_cb
 * with the mapping as its context.
 * All of them may be called only on ranges inside the mapping they came
 * from, and only while it is open. They are thread-safe.
 */
/* Make `size` bytes at `ptr` durable (flush + drain). */
typedef void pmrep_pmem_persist_fn(const void *ptr, size_t size);
/* Start writing back `size` bytes at `ptr`; durable after a drain. */
typedef void pmrep_pmem_flush_fn(const void *ptr, size_t size);
/* Wait until all earlier flushes of this thread are durable. */
typedef void pmrep_pmem_drain_fn(void);
/* memcpy / memmove / memset into the mapping, persisting per `flags`. */
typedef void *pmrep_pmem_memcpy_fn(void *pmemdest, const void *src,
		size_t len, unsigned flags);
typedef void *pmrep_pmem_memmove_fn(void *pmemdest, const void *src,
		size_t len, unsigned flags);
typedef void *pmrep_pmem_memset_fn(void *pmemdest, int c, size_t len,
		unsigned flags);

/*
 * pmrep_pmem_open -- open (and with PMREP_PMEM_CREATE create) `path` and
 * map all of it, shared and read-write, through libpmem2.
 *
 * `path`: a regular file (on fsdax, tmpfs or any file system) or a device
 * DAX character device (/dev/daxX.Y). It is opened O_RDWR | O_CLOEXEC; the
 * mapping owns that fd and closes it in pmrep_pmem_close().
 *
 * `flags`: 0, PMREP_PMEM_CREATE, or PMREP_PMEM_CREATE | PMREP_PMEM_EXCL.
 * - PMREP_PMEM_CREATE: when `path` does not exist, create a regular file
 *   with mode 0600 (less the umask) and allocate `size` bytes for it with
 *   posix_fallocate (so it reads as zeros and the space is reserved). If
 *   opening fails after the file was created, the file is removed again.
 *   When `path` exists it is opened as without the flag. A dangling
 *   symbolic link is not followed to create its target (EEXIST, below).
 * - PMREP_PMEM_EXCL: fail with PMREP_E_PROVIDER / EEXIST if `path` exists.
 *
 * `size` (bytes): with PMREP_PMEM_CREATE it must be > 0 (the size of a new
 * file). Without it, 0 means "the whole file / device". Whenever `size` is
 * > 0 and the path already exists, the file's (or the device's) size must
 * equal `size`: pmrep never resizes an existing file and never maps part
 * of one. A device DAX's size is the device's own.
 *
 * `required`: the coarsest granularity the caller can live with
 * (PMREP_PMEM_GRANULARITY_PAGE, the default 0, is always met). The mapping
 * may be finer; pmrep_pmem_get_granularity() reports its effective one.
 *
 * `pmem_ptr`: receives the mapping; left NULL on error.
 *
 * Errors (*pmem_ptr is NULL after each; nothing is left open or created):
 * - PMREP_E_INVAL: `path` or `pmem_ptr` is NULL; unknown bits in `flags`;
 *   PMREP_PMEM_EXCL without PMREP_PMEM_CREATE; PMREP_PMEM_CREATE with
 *   `size` == 0; `size` larger than the largest file offset; `required` is
 *   not a pmrep_pmem_granularity; `path` is neither a regular file nor a
 *   device DAX: a FIFO, a block device, a character device other than
 *   device DAX (directories and sockets fail to open: EISDIR / ENXIO);
 * - PMREP_E_PROVIDER: open(2), fstat(2) or posix_fallocate(3) failed;
 *   pmrep_err_errno() is its errno: ENOENT (no such path and no
 *   PMREP_PMEM_CREATE, or a missing parent directory), ENOTDIR, EISDIR
 *   (a directory), EACCES / EROFS (cannot be opened for writing), EEXIST
 *   (PMREP_PMEM_EXCL and it exists; or a dangling symbolic link with
 *   PMREP_PMEM_CREATE), ENXIO (a socket), ENOSPC / EFBIG (no room for
 *   `size` bytes), ENAMETOOLONG, ...;
 * - PMREP_E_RANGE: `size` > 0 differs from the existing file's / device's
 *   size, or `size` is 0 and the existing file is empty;
 * - PMREP_E_GRANULARITY: the mapping cannot offer `required` (e.g.
 *   CACHE_LINE on tmpfs or on a file system without DAX); pmrep_err_msg()
 *   has libpmem2's explanation. Retry with a coarser requirement;
 * - PMREP_E_NOMEM: out of memory (here or in libpmem2); pmrep_err_errno()
 *   is ENOMEM;
 * - PMREP_E_PMEM: another libpmem2 failure; pmrep_err_msg() has
 *   libpmem2's message and pmrep_err_errno() its errno if it had one.
 *
 * Thread-safe (for different `pmem_ptr`s).
 */
PMREP_API int pmrep_pmem_open(const char *path, unsigned flags, size_t size,
		enum pmrep_pmem_granularity required,
		struct pmrep_pmem **pmem_ptr);

/*
 * pmrep_pmem_close -- unmap, close the fd the mapping owns and free it;
 * then set *pmem_ptr = NULL. *pmem_ptr == NULL is a no-op returning 0.
 * Closing does not persist anything: persist what must be durable first
 * (with PAGE granularity the kernel still writes dirty pages back later,
 * as for any shared file mapping, but nothing waits for that).
 * Errors: PMREP_E_INVAL (`pmem_ptr` is NULL), PMREP_E_PMEM (libpmem2
 * could not unmap; everything else is released all the same and
 * *pmem_ptr is set to NULL).
 * Not thread-safe against other use of the same mapping.
 */
PMREP_API int pmrep_pmem_close(struct pmrep_pmem **pmem_ptr);

/*
 * pmrep_pmem_deep_flush -- best-effort flush of `len` bytes at `offset`
 * into the most reliable persistence domain the platform offers (e.g. the
 * memory controller's write-pending queues on an ADR platform), on top of
 * what persist does; expensive, use sparingly. Where libpmem2 reports deep
 * flush as not supported here, this logs at INFO and returns 0.
 * `len` == 0 is a no-op.
 * Errors: PMREP_E_INVAL (`pmem` NULL), PMREP_E_RANGE (`offset` + `len`
 * outside the mapping), PMREP_E_PMEM (libpmem2 failed, e.g. msync:
 * pmrep_err_errno() / pmrep_err_msg()).
 * Thread-safe.
 */
PMREP_API int pmrep_pmem_deep_flush(struct pmrep_pmem *pmem, size_t offset,
		size_t len);

/*
 * Getters. They never fail for an open mapping and are thread-safe. For a
 * NULL `pmem` they log an error (pmrep_err_msg()) and return NULL / 0 /
 * PMREP_PMEM_GRANULARITY_PAGE / "" as their type suggests.
 */
/* pmrep_pmem_get_address -- the first byte of the mapping. */
PMREP_API void *pmrep_pmem_get_address(const struct pmrep_pmem *pmem);
/* pmrep_pmem_get_size -- the mapping's length in bytes (> 0). */
PMREP_API size_t pmrep_pmem_get_size(const struct pmrep_pmem *pmem);
/* pmrep_pmem_get_granularity -- the effective store granularity. */
PMREP_API enum pmrep_pmem_granularity pmrep_pmem_get_granularity(
		const struct pmrep_pmem *pmem);
/* pmrep_pmem_get_path -- the path it was opened with (owned by the mapping). */
PMREP_API const char *pmrep_pmem_get_path(const struct pmrep_pmem *pmem);
/* pmrep_pmem_is_devdax -- true when the mapping is of a device DAX. */
PMREP_API bool pmrep_pmem_is_devdax(const struct pmrep_pmem *pmem);

/*
 * pmrep_pmem_persist -- make `len` bytes at `ptr` (inside this mapping)
 * durable, and say whether that worked. This is the call pmrep itself
 * persists with; it never aborts or exits the process (libpmem2's
 * page-granularity functions abort() when msync fails; pmrep does not use
 * them for that).
 * - PAGE granularity: an msync(MS_SYNC) of the pages holding the range,
 *   made by pmrep and checked.
 * - CACHE_LINE / BYTE: libpmem2's cache flush + fence (cannot fail).
 * Poisoning (PAGE): when a write-back fails, the mapping is *poisoned*
 * for as long as it is open. Linux reports a write-back error once: a
 * later msync that succeeds is no proof that the bytes whose write-back
 * failed reached the media. So from then on every pmrep_pmem_persist of
 * this mapping (any range, also `len` == 0) fails with PMREP_E_PROVIDER
 * and errno EIO, even where msync itself now succeeds (it is still made,
 * best effort). Only closing and opening the file again (and checking or
 * rewriting its contents: its earlier state is unknown) clears it.
 * The test hook (testhook.h) is consulted first, as before.
 * `len` == 0: nothing to persist; 0 unless the mapping is poisoned.
 * Errors: PMREP_E_INVAL (NULL, or the range is not inside the mapping),
 * PMREP_E_PROVIDER (this write-back failed: pmrep_err_errno() has msync's
 * errno, e.g. EIO, and the mapping is now poisoned; or an earlier one
 * failed: the mapping is poisoned and pmrep_err_errno() is EIO).
 * Every error is logged. Thread-safe.
 */
PMREP_API int pmrep_pmem_persist(struct pmrep_pmem *pmem, const void *ptr,
		size_t len);

/*
 * pmrep_pmem_persist_cb -- pmrep_pmem_persist(ctx, ptr, size), in the
 * shape of the transport's pmrep_persist_fn (include/pmrep/transport.h):
 * a replica target registers a mapping with
 *	pmrep_mr_set_persist_fn(mr, pmrep_pmem_persist_cb, pmem);
 * `ctx` must be the struct pmrep_pmem * the region lies in, open while
 * the region is registered. Returns what pmrep_pmem_persist returns (0 or
 * a negative PMREP_E_* code). Thread-safe.
 */
PMREP_API int pmrep_pmem_persist_cb(void *ctx, const void *ptr, size_t size);

/*
 * pmrep_pmem_is_poisoned -- true when a write-back of this mapping has
 * failed since it was opened (see pmrep_pmem_persist): nothing written to
 * it can be called durable any more. False for NULL (logged).
 * Thread-safe.
 */
PMREP_API bool pmrep_pmem_is_poisoned(const struct pmrep_pmem *pmem);

/*
 * The getters below hand out the mapping's functions for its effective
 * granularity. CACHE_LINE / BYTE: libpmem2's (cache-line flushes,
 * fences). PAGE: pmrep's own, never libpmem2's (whose persist, flush,
 * memcpy, memmove and memset abort() the process when msync fails):
 * persist and flush are a checked msync of the pages holding the range,
 * the copies are libc's followed by that persist (none with
 * PMREP_PMEM_F_NOFLUSH), drain does nothing (libpmem2's no-op). A failed
 * msync in them is logged (PMREP_LOG_ERR) and poisons every open mapping
 * the range overlaps; the caller is not told. Callers that need to know
 * whether bytes are durable call pmrep_pmem_persist() instead (or after).
 * The same mapping always yields the same functions; they are valid while
 * the mapping is open and may be called from any thread.
 * Given NULL, each logs an error and returns NULL.
 */

/* pmrep_pmem_get_persist_fn -- flush + drain of a range; no result (see above). */
PMREP_API pmrep_pmem_persist_fn *pmrep_pmem_get_persist_fn(
		const struct pmrep_pmem *pmem);
/* pmrep_pmem_get_flush_fn -- start writing back a range; durable after a drain. */
PMREP_API pmrep_pmem_flush_fn *pmrep_pmem_get_flush_fn(
		const struct pmrep_pmem *pmem);
/* pmrep_pmem_get_drain_fn -- wait until this thread's earlier flushes are durable. */
PMREP_API pmrep_pmem_drain_fn *pmrep_pmem_get_drain_fn(
		const struct pmrep_pmem *pmem);
/* pmrep_pmem_get_memcpy_fn -- memcpy into the mapping, persisting per PMREP_PMEM_F_* flags. */
PMREP_API pmrep_pmem_memcpy_fn *pmrep_pmem_get_memcpy_fn(
		const struct pmrep_pmem *pmem);
/* pmrep_pmem_get_memmove_fn -- memmove into the mapping, persisting per flags. */
PMREP_API pmrep_pmem_memmove_fn *pmrep_pmem_get_memmove_fn(
		const struct pmrep_pmem *pmem);
/* pmrep_pmem_get_memset_fn -- memset in the mapping, persisting per flags. */
PMREP_API pmrep_pmem_memset_fn *pmrep_pmem_get_memset_fn(
		const struct pmrep_pmem *pmem);

/*
 * pmrep_pmem_granularity_to_str -- "PAGE", "CACHE_LINE", "BYTE", or
 * "unknown" for any other value. Static strings. Thread-safe.
 */
PMREP_API const char *pmrep_pmem_granularity_to_str(
		enum pmrep_pmem_granularity granularity);

#ifdef __cplusplus
}
#endif
#endif /* PMREP_PMEM_H */
