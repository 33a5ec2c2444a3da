/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmem_persist.c -- persisting a mapping. CACHE_LINE and BYTE mappings
 * persist with libpmem2's functions (cache flushes and fences, which cannot
 * fail). A PAGE mapping never persists through libpmem2: its page
 * persist / flush / memcpy / memmove / memset end the process with SIGABRT
 * when msync fails (libpmem2 1.12; drain and the NOFLUSH copies do not
 * msync). pmrep msyncs the page-aligned range itself (page_writeback),
 * reports a failure and *poisons* the mapping: Linux reports a write-back
 * error once, so a later msync that succeeds says nothing about the bytes
 * whose write-back failed before. Every later pmrep_pmem_persist of a
 * poisoned mapping fails. The void functions the getters hand out cannot
 * return the failure: they log it and poison every open mapping the range
 * overlaps, found in a registry of the open PAGE mappings (reg_*).
 *
 * A file in memory (tmpfs, ramfs: /dev/shm) is PAGE granularity too, but
 * it has no storage to write back to: msync of it does nothing but cost a
 * system call (the kernel's fsync of tmpfs is a no-op). Its persistence
 * domain is the memory itself, so pmrep does not msync it (in_memory).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* GNU strerror_r */
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/testhook.h"
#include "pmem_int.h"

/* the open PAGE-granularity mappings, for the void functions to find the
 * mapping a failed range belongs to */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pmrep_pmem *reg_head;

static uintptr_t
page_size(void)
{
	static atomic_uintptr_t cached;
	uintptr_t pg = atomic_load_explicit(&cached, memory_order_relaxed);

	if (pg == 0) {
		long v = sysconf(_SC_PAGESIZE);
		pg = v > 0 ? (uintptr_t)v : 4096;
		atomic_store_explicit(&cached, pg, memory_order_relaxed);
	}
	return pg;
}

/*
 * page_writeback -- msync(MS_SYNC) the pages holding [ptr, ptr + len):
 * 0, or the errno of the failure. EINTR is no write-back error: retried.
 */
static int
page_writeback(const void *ptr, size_t len)
{
	uintptr_t start = (uintptr_t)ptr & ~(page_size() - 1);
	size_t n = len + ((uintptr_t)ptr - start);
	int ret;

	do {
		ret = msync((void *)start, n, MS_SYNC);
	} while (ret != 0 && errno == EINTR);
	return ret == 0 ? 0 : errno;
}

/* poison -- the first failed write-back's errno stays; true if it was new */
static bool
poison(struct pmrep_pmem *p, int err)
{
	int none = 0;

	return atomic_compare_exchange_strong(&p->poison, &none,
			err != 0 ? err : EIO);
}

void
pmem_reg_add(struct pmrep_pmem *p)
{
	pthread_mutex_lock(&reg_lock);
	p->reg_next = reg_head;
	reg_head = p;
	p->registered = true;
	pthread_mutex_unlock(&reg_lock);
}

void
pmem_reg_remove(struct pmrep_pmem *p)
{
	if (!p->registered)
		return;
	pthread_mutex_lock(&reg_lock);
	for (struct pmrep_pmem **pp = &reg_head; *pp != NULL;
			pp = &(*pp)->reg_next) {
		if (*pp == p) {
			*pp = p->reg_next;
			break;
		}
	}
	p->registered = false;
	pthread_mutex_unlock(&reg_lock);
}

/*
 * page_persist -- the persist (and flush) function handed out for PAGE
 * mappings: like libpmem2's, but a failed msync is logged and poisons
 * every open mapping the range overlaps instead of aborting. errno is
 * left as it was (the caller sees no failure through it).
 */
static void
page_persist(const void *ptr, size_t len)
{
	int saved = errno;
	int err = page_writeback(ptr, len);

	if (err != 0) {
		char buf[128];
		uintptr_t a = (uintptr_t)ptr;
		int found = 0;

		pthread_mutex_lock(&reg_lock);
		for (struct pmrep_pmem *p = reg_head; p != NULL;
				p = p->reg_next) {
			uintptr_t base = (uintptr_t)p->addr;
			if (a < base + p->size && base < a + len) {
				(void) poison(p, err);
				found++;
				PMREP_LOG_ERR("%s: msync of %zu bytes at offset "
						"%zu failed: %s (errno %d); the "
						"mapping is poisoned: every later "
						"pmrep_pmem_persist of it fails",
						p->path, len, (size_t)(a - base),
						strerror_r(err, buf, sizeof(buf)),
						err);
			}
		}
		pthread_mutex_unlock(&reg_lock);
		if (found == 0)
			PMREP_LOG_ERR("msync of %zu bytes at %p failed: %s "
					"(errno %d), outside every open mapping",
					len, ptr,
					strerror_r(err, buf, sizeof(buf)), err);
		pmrep_err_set_errno(err);
	}
	errno = saved;
}

/* the persist of a file in memory: the stores are in its persistence
 * domain once made (the compiler must not move them past the call) */
static void
memory_persist(const void *ptr, size_t len)
{
	(void) ptr;
	(void) len;
	atomic_thread_fence(memory_order_seq_cst);
}

/* copies into a file in memory: libc's */
static void *
memory_memmove(void *pmemdest, const void *src, size_t len, unsigned flags)
{
	(void) flags;
	return memmove(pmemdest, src, len);
}

static void *
memory_memset(void *pmemdest, int c, size_t len, unsigned flags)
{
	(void) flags;
	return memset(pmemdest, c, len);
}

/* file_in_memory -- fd is a file of tmpfs or ramfs (no backing store) */
static bool
file_in_memory(int fd)
{
	struct statfs sf;

	if (fd < 0 || fstatfs(fd, &sf) != 0)
		return false;
	return sf.f_type == 0x01021994 /* TMPFS_MAGIC */ ||
		sf.f_type == (typeof(sf.f_type))0x858458f6 /* RAMFS_MAGIC */;
}

/* PAGE copies: libc's copy, then page_persist unless NOFLUSH */
static void *
page_memmove(void *pmemdest, const void *src, size_t len, unsigned flags)
{
	memmove(pmemdest, src, len);
	if (!(flags & PMREP_PMEM_F_NOFLUSH))
		page_persist(pmemdest, len);
	return pmemdest;
}

static void *
page_memset(void *pmemdest, int c, size_t len, unsigned flags)
{
	memset(pmemdest, c, len);
	if (!(flags & PMREP_PMEM_F_NOFLUSH))
		page_persist(pmemdest, len);
	return pmemdest;
}

/* a PAGE mapping's functions: written back (msync), or in memory */
struct page_fns {
	pmem2_persist_fn persist;
	pmem2_memmove_fn move;
	pmem2_memset_fn set;
};

static const struct page_fns written_back = { page_persist, page_memmove,
	page_memset };
static const struct page_fns in_memory = { memory_persist, memory_memmove,
	memory_memset };

void
pmem_page_fns(struct pmrep_pmem *p)
{
	/* libpmem2's abort when msync fails: pmrep's own instead */
	p->in_memory = !p->devdax && file_in_memory(p->fd);
	const struct page_fns *f = p->in_memory ? &in_memory : &written_back;
	p->persist = f->persist;
	p->flush = f->persist;
	p->memcpy_fn = f->move;
	p->memmove_fn = f->move;
	p->memset_fn = f->set;
}

int
pmrep_pmem_persist(struct pmrep_pmem *pmem, const void *ptr, size_t len)
{
	if (pmem == NULL || ptr == NULL) {
		pmrep_err_set_errno(0);
		PMREP_LOG_ERR("invalid argument: pmem or ptr is NULL");
		return PMREP_E_INVAL;
	}
	uintptr_t a = (uintptr_t)ptr, base = (uintptr_t)pmem->addr;
	if (a < base || a - base > pmem->size || len > pmem->size - (a - base)) {
		pmrep_err_set_errno(0);
		PMREP_LOG_ERR("%s: persist of %zu bytes at %p: outside the "
				"%zu-byte mapping at %p", pmem->path, len, ptr,
				pmem->size, pmem->addr);
		return PMREP_E_INVAL;
	}
	if (len != 0 && pmrep_test_hooks.pmem_persist) {
		int ret = pmrep_test_hooks.pmem_persist(pmem, ptr, len);
		if (ret)
			return ret;
	}
	if (pmem->granularity != PMREP_PMEM_GRANULARITY_PAGE) {
		if (len != 0)
			pmem->persist(ptr, len);	/* cannot fail */
		return 0;
	}

	char buf[128];
	int err = len != 0 && !pmem->in_memory ?
		page_writeback(ptr, len) : 0;
	if (err != 0) {
		bool first = poison(pmem, err);
		pmrep_err_set_errno(err);
		PMREP_LOG_ERR("%s: msync of %zu bytes at offset %zu failed: %s "
				"(errno %d)%s", pmem->path, len,
				(size_t)(a - base),
				strerror_r(err, buf, sizeof(buf)), err,
				first ? "; the mapping is poisoned: every later "
				"persist of it fails" : "");
		return PMREP_E_PROVIDER;
	}
	int earlier = atomic_load(&pmem->poison);
	if (earlier != 0) {
		/* a write-back error is reported once: this msync's success
		 * does not cover the bytes whose write-back failed before */
		pmrep_err_set_errno(EIO);
		PMREP_LOG_ERR("%s: persist of %zu bytes at offset %zu refused: "
				"an earlier write-back of this mapping failed "
				"(%s, errno %d), so nothing written to it can be "
				"called durable any more", pmem->path, len,
				(size_t)(a - base),
				strerror_r(earlier, buf, sizeof(buf)), earlier);
		return PMREP_E_PROVIDER;
	}
	return 0;
}

int
pmrep_pmem_persist_cb(void *ctx, const void *ptr, size_t size)
{
	return pmrep_pmem_persist(ctx, ptr, size);
}

bool
pmrep_pmem_is_poisoned(const struct pmrep_pmem *pmem)
{
	if (!pmem_getter_arg_ok(pmem, __func__))
		return false;
	return atomic_load(&((struct pmrep_pmem *)(uintptr_t)pmem)->poison)
		!= 0;
}
