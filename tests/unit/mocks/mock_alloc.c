/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mock_alloc.c -- allocation wrappers (-Wl,--wrap=malloc,... on the unit
 * tests' link, see tests/CMakeLists.txt): pmrep's objects and the test's
 * code call these instead of libc's, so the k-th allocation can fail and
 * allocations made during a scenario run can be checked for leaks.
 * Shared libraries (cmocka, libpmem2, libc itself) are not affected.
 *
 * Nothing is counted or failed unless injection is armed (a scheduled
 * allocation failure, or a mock_run_each_failure run), so the fast path is
 * one atomic load. free() looks the pointer up in the tracking table only
 * while the table holds something.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_int.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_reallocarray(void *p, size_t n, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t size);
void *__real_aligned_alloc(size_t align, size_t size);
void __real_free(void *p);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_reallocarray(void *p, size_t n, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
void __wrap_free(void *p);

/* ------------------------------------------------------------- tracking */

struct tracked {
	void *p;
	void *caller;
	size_t size;
};

static struct tracked *Tab;
static size_t Tab_n, Tab_cap;
static int Tab_used;		/* Tab_n > 0, readable without the lock */
static bool Tracking;		/* record new allocations */

void
mock_alloc_track_begin(void)
{
	Tracking = true;
}

void
mock_alloc_track_end(void)
{
	Tracking = false;
}

void
mock_alloc_track_clear(void)
{
	Tab_n = 0;
	__atomic_store_n(&Tab_used, 0, __ATOMIC_SEQ_CST);
}

void
mock_alloc_reset(void)
{
	Tracking = false;
	mock_alloc_track_clear();
	__real_free(Tab);
	Tab = NULL;
	Tab_cap = 0;
}

size_t
mock_alloc_tracked_live(char *buf, size_t bufsize)
{
	size_t off = 0;

	if (bufsize)
		buf[0] = '\0';
	for (size_t i = 0; i < Tab_n && i < 8; i++) {
		Dl_info dl;
		const char *obj = "?";
		uintptr_t rel = (uintptr_t)Tab[i].caller;

		/* "file+offset": addr2line -f -e file offset names the caller */
		if (dladdr(Tab[i].caller, &dl) && dl.dli_fname) {
			const char *slash = strrchr(dl.dli_fname, '/');

			obj = slash ? slash + 1 : dl.dli_fname;
			rel -= (uintptr_t)dl.dli_fbase;
		}
		int n = snprintf(buf + off, bufsize - off,
				"%s%zu bytes allocated from %s+0x%zx",
				i ? "; " : "", Tab[i].size, obj, (size_t)rel);
		if (n > 0 && (size_t)n < bufsize - off)
			off += (size_t)n;
	}
	return Tab_n;
}

static void
track_add(void *p, size_t size, void *caller)
{
	if (p == NULL)
		return;
	if (Tab_n == Tab_cap) {
		size_t cap = Tab_cap ? Tab_cap * 2 : 256;
		struct tracked *t = __real_realloc(Tab, cap * sizeof(*t));

		if (t == NULL)
			mock_die("mock: out of memory tracking allocations");
		Tab = t;
		Tab_cap = cap;
	}
	Tab[Tab_n++] = (struct tracked){ p, caller, size };
	__atomic_store_n(&Tab_used, 1, __ATOMIC_SEQ_CST);
}

/* remove p if tracked; returns true if it was */
static bool
track_del(void *p)
{
	for (size_t i = Tab_n; i-- > 0;) {
		if (Tab[i].p == p) {
			Tab[i] = Tab[--Tab_n];
			if (Tab_n == 0)
				__atomic_store_n(&Tab_used, 0, __ATOMIC_SEQ_CST);
			return true;
		}
	}
	return false;
}

/* --------------------------------------------------------------- gate */

static inline bool
armed(void)
{
	return __atomic_load_n(&mock_alloc_armed, __ATOMIC_RELAXED) ||
		__atomic_load_n(&mock_alloc_sched, __ATOMIC_RELAXED);
}

/* lock held: 0 = go on, else the errno to fail with */
static int
gate(enum mock_fn fn)
{
	int rc = 0;

	return mock_enter(fn, &rc);
}

/* ----------------------------------------------------------- wrappers */

void *
__wrap_malloc(size_t size)
{
	if (!armed())
		return __real_malloc(size);
	void *caller = __builtin_return_address(0);

	MOCK_LOCK();
	int err = gate(MF_ALLOC_MALLOC);
	void *p = NULL;

	if (err)
		errno = err;
	else {
		p = __real_malloc(size);
		if (Tracking)
			track_add(p, size, caller);
	}
	MOCK_UNLOCK();
	return p;
}

void *
__wrap_calloc(size_t n, size_t size)
{
	if (!armed())
		return __real_calloc(n, size);
	void *caller = __builtin_return_address(0);

	MOCK_LOCK();
	int err = gate(MF_ALLOC_CALLOC);
	void *p = NULL;

	if (err)
		errno = err;
	else {
		p = __real_calloc(n, size);
		if (Tracking)
			track_add(p, n * size, caller);
	}
	MOCK_UNLOCK();
	return p;
}

static void *
realloc_common(enum mock_fn fn, void *old, size_t n, size_t size,
		void *caller)
{
	if (!armed() && !__atomic_load_n(&Tab_used, __ATOMIC_RELAXED))
		return fn == MF_ALLOC_REALLOC ? __real_realloc(old, size) :
			__real_reallocarray(old, n, size);

	MOCK_LOCK();
	int err = armed() ? gate(fn) : 0;
	void *p = NULL;

	if (err) {
		errno = err;	/* `old` stays valid, as with a real failure */
	} else {
		p = fn == MF_ALLOC_REALLOC ? __real_realloc(old, size) :
			__real_reallocarray(old, n, size);
		if (p != NULL) {
			bool was = old != NULL && track_del(old);

			if (was || (old == NULL && Tracking))
				track_add(p, fn == MF_ALLOC_REALLOC ? size :
						n * size, caller);
		}
	}
	MOCK_UNLOCK();
	return p;
}

void *
__wrap_realloc(void *p, size_t size)
{
	return realloc_common(MF_ALLOC_REALLOC, p, 1, size,
			__builtin_return_address(0));
}

void *
__wrap_reallocarray(void *p, size_t n, size_t size)
{
	return realloc_common(MF_ALLOC_REALLOCARRAY, p, n, size,
			__builtin_return_address(0));
}

char *
__wrap_strdup(const char *s)
{
	if (!armed())
		return __real_strdup(s);
	void *caller = __builtin_return_address(0);

	MOCK_LOCK();
	int err = gate(MF_ALLOC_STRDUP);
	char *p = NULL;

	if (err)
		errno = err;
	else {
		p = __real_strdup(s);
		if (Tracking && p)
			track_add(p, strlen(p) + 1, caller);
	}
	MOCK_UNLOCK();
	return p;
}

char *
__wrap_strndup(const char *s, size_t n)
{
	if (!armed())
		return __real_strndup(s, n);
	void *caller = __builtin_return_address(0);

	MOCK_LOCK();
	int err = gate(MF_ALLOC_STRNDUP);
	char *p = NULL;

	if (err)
		errno = err;
	else {
		p = __real_strndup(s, n);
		if (Tracking && p)
			track_add(p, strlen(p) + 1, caller);
	}
	MOCK_UNLOCK();
	return p;
}

int
__wrap_posix_memalign(void **out, size_t align, size_t size)
{
	if (!armed())
		return __real_posix_memalign(out, align, size);
	void *caller = __builtin_return_address(0);

	MOCK_LOCK();
	int err = gate(MF_ALLOC_POSIX_MEMALIGN);
	int ret = err;

	if (!err) {
		ret = __real_posix_memalign(out, align, size);
		if (ret == 0 && Tracking)
			track_add(*out, size, caller);
	}
	MOCK_UNLOCK();
	return ret;
}

void *
__wrap_aligned_alloc(size_t align, size_t size)
{
	if (!armed())
		return __real_aligned_alloc(align, size);
	void *caller = __builtin_return_address(0);

	MOCK_LOCK();
	int err = gate(MF_ALLOC_ALIGNED_ALLOC);
	void *p = NULL;

	if (err)
		errno = err;
	else {
		p = __real_aligned_alloc(align, size);
		if (Tracking)
			track_add(p, size, caller);
	}
	MOCK_UNLOCK();
	return p;
}

void
__wrap_free(void *p)
{
	if (p != NULL && __atomic_load_n(&Tab_used, __ATOMIC_RELAXED)) {
		MOCK_LOCK();
		track_del(p);
		MOCK_UNLOCK();
	}
	__real_free(p);
}
