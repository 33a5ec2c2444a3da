/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mock_core.c -- the mocks' common machinery: lock, loud failures, the
 * registry of mocked functions, failure injection (by name and "each call
 * in turn"), object lists, readable-while-pending eventfds, reset and leak
 * checks.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <cmocka.h>

#include "mock_int.h"

/* ---------------------------------------------------------------- lock */

static pthread_mutex_t Lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static _Thread_local int Lock_depth;

void
mock_lock(void)
{
	pthread_mutex_lock(&Lock);
	Lock_depth++;
}

void
mock_unlock(void)
{
	Lock_depth--;
	pthread_mutex_unlock(&Lock);
}

/* ------------------------------------------------------------ registry */

static const struct {
	const char *name;
	int err;
	int cls;
} Funcs[MF_COUNT] = {
#define MOCK_X_TAB(id, nm, e, c) [MF_##id] = { nm, e, c },
	MOCK_FUNCS(MOCK_X_TAB)
#undef MOCK_X_TAB
};

#define CLS_NONE 0
#define CLS_CALL 1
#define CLS_DESTROY 2
#define CLS_ALLOC 3

static unsigned Calls[MF_COUNT];

const char *
mock_fn_name(enum mock_fn fn)
{
	if (fn == MF_ANY_ALLOC)
		return "alloc";
	return (unsigned)fn < MF_COUNT ? Funcs[fn].name : "?";
}

static int
fn_lookup(const char *name)
{
	if (name == NULL)
		return -1;
	if (strcmp(name, "alloc") == 0)
		return MF_ANY_ALLOC;
	if (strcmp(name, "ibv_reg_mr_iova") == 0 ||
			strcmp(name, "ibv_reg_mr_iova2") == 0)
		return MF_IBV_REG_MR;
	for (int i = 0; i < MF_COUNT; i++)
		if (strcmp(Funcs[i].name, name) == 0)
			return i;
	return -1;
}

/* ---------------------------------------------------------- schedules */

#define MAX_SCHED 64

struct sched {
	bool active;
	bool always;
	bool has_rc;
	int fn;			/* enum mock_fn or MF_ANY_ALLOC */
	unsigned countdown;
	int err;
	int rc;
};

static struct sched Sched[MAX_SCHED];
int mock_alloc_sched;

static void
sched_recount_alloc(void)
{
	int n = 0;

	for (int i = 0; i < MAX_SCHED; i++)
		if (Sched[i].active && (Sched[i].fn == MF_ANY_ALLOC ||
				Funcs[Sched[i].fn].cls == CLS_ALLOC))
			n++;
	__atomic_store_n(&mock_alloc_sched, n, __ATOMIC_SEQ_CST);
}

static void
sched_add(const char *fn, unsigned nth, bool always, int err, bool has_rc,
		int rc)
{
	int f = fn_lookup(fn);

	if (f < 0)
		mock_die("mock_fail: unknown function \"%s\"", fn ? fn : "(null)");
	if (f != MF_ANY_ALLOC && Funcs[f].cls == CLS_NONE)
		mock_die("mock_fail: %s cannot fail (it returns no error)", fn);
	if (!always && nth == 0)
		mock_die("mock_fail(\"%s\"): nth must be >= 1", fn);
	for (int i = 0; i < MAX_SCHED; i++) {
		if (Sched[i].active)
			continue;
		Sched[i] = (struct sched){ .active = true, .always = always,
			.has_rc = has_rc, .fn = f, .countdown = nth,
			.err = err, .rc = rc };
		sched_recount_alloc();
		return;
	}
	mock_die("mock_fail: more than %d failures scheduled", MAX_SCHED);
}

void
mock_fail(const char *fn, unsigned nth, int err)
{
	MOCK_LOCK();
	sched_add(fn, nth, false, err, false, 0);
	MOCK_UNLOCK();
}

void
mock_fail_always(const char *fn, int err)
{
	MOCK_LOCK();
	sched_add(fn, 0, true, err, false, 0);
	MOCK_UNLOCK();
}

void
mock_fail_rc(const char *fn, unsigned nth, int rc, int err)
{
	MOCK_LOCK();
	sched_add(fn, nth, false, err, true, rc);
	MOCK_UNLOCK();
}

void
mock_fail_clear(void)
{
	MOCK_LOCK();
	memset(Sched, 0, sizeof(Sched));
	sched_recount_alloc();
	MOCK_UNLOCK();
}

static void
sched_clear_oneshots(void)
{
	for (int i = 0; i < MAX_SCHED; i++)
		if (!Sched[i].always)
			Sched[i].active = false;
	sched_recount_alloc();
}

int
mock_fail_pending(void)
{
	int n = 0;

	MOCK_LOCK();
	for (int i = 0; i < MAX_SCHED; i++)
		if (Sched[i].active && !Sched[i].always)
			n++;
	MOCK_UNLOCK();
	return n;
}

unsigned
mock_calls(const char *fn)
{
	unsigned n;

	MOCK_LOCK();
	int f = fn_lookup(fn);
	if (f < 0 || f == MF_ANY_ALLOC)
		mock_die("mock_calls: unknown function \"%s\"", fn ? fn : "(null)");
	n = Calls[f];
	MOCK_UNLOCK();
	return n;
}

/* ------------------------------------------------------------ run each */

static struct {
	bool active;		/* inside mock_run_each_failure */
	bool armed;		/* counting calls (scenario running) */
	unsigned k;		/* iteration (0 = warm-up / baseline) */
	unsigned ncalls;	/* failable calls seen in this run */
	unsigned fail_at;	/* fail the call with this index (0: none) */
	int failed_fn;		/* -1: none yet */
	bool no_allocs;
	bool fail_destroys;
} Each = { .failed_fn = -1 };

int mock_alloc_armed;

int
mock_enter(enum mock_fn fn, int *rc)
{
	int err = 0;
	int cls = Funcs[fn].cls;

	Calls[fn]++;
	for (int i = 0; i < MAX_SCHED; i++) {
		struct sched *s = &Sched[i];

		if (!s->active)
			continue;
		if (s->fn != (int)fn && !(s->fn == MF_ANY_ALLOC && cls == CLS_ALLOC))
			continue;
		if (s->always) {
			if (!err) {
				err = s->err;
				if (s->has_rc)
					*rc = s->rc;
			}
			continue;
		}
		if (--s->countdown == 0) {
			s->active = false;
			if (!err) {
				err = s->err;
				if (s->has_rc)
					*rc = s->rc;
			}
			sched_recount_alloc();
		}
	}

	if (Each.armed && cls != CLS_NONE &&
			(cls != CLS_DESTROY || Each.fail_destroys) &&
			(cls != CLS_ALLOC || !Each.no_allocs)) {
		Each.ncalls++;
		if (Each.fail_at != 0 && Each.ncalls == Each.fail_at) {
			Each.failed_fn = (int)fn;
			if (!err)
				err = Funcs[fn].err;
		}
	}
	return err;
}

unsigned
mock_each_iteration(void)
{
	return Each.k;
}

const char *
mock_each_failed_fn(void)
{
	return Each.failed_fn < 0 ? NULL : Funcs[Each.failed_fn].name;
}

/* ------------------------------------------------------------- loud fail */

static char Die_msg[2048];

void
mock_die(const char *fmt, ...)
{
	va_list ap;
	size_t off = 0;

	/* stop every injection first: cmocka and the test go on normally */
	Each.armed = false;
	Each.active = false;
	__atomic_store_n(&mock_alloc_armed, 0, __ATOMIC_SEQ_CST);
	mock_alloc_track_end();

	if (Each.k > 0 || Each.failed_fn >= 0)
		off = (size_t)snprintf(Die_msg, sizeof(Die_msg),
				"[mock run %u, failing %s] ", Each.k,
				Each.failed_fn < 0 ? "nothing" :
				Funcs[Each.failed_fn].name);
	if (off >= sizeof(Die_msg))
		off = 0;
	va_start(ap, fmt);
	vsnprintf(Die_msg + off, sizeof(Die_msg) - off, fmt, ap);
	va_end(ap);
	/* cmocka prints it too ("ASSERT: ..." / "Expected assertion ...");
	 * this line also reaches a log when the test aborts otherwise */
	if (!global_expecting_assert) {
		fprintf(stderr, "MOCK FAILURE: %s\n", Die_msg);
		fflush(stderr);
	}

	while (Lock_depth > 0)
		mock_unlock();
	mock_assert(0, Die_msg, __FILE__, __LINE__);
	abort(); /* not reached: mock_assert longjmps */
}

/* ------------------------------------------------------------ own memory */

extern void *__real_malloc(size_t size);
extern void *__real_calloc(size_t n, size_t size);
extern void *__real_realloc(void *p, size_t size);
extern void __real_free(void *p);

void *
mock_alloc(size_t size)
{
	void *p = __real_calloc(1, size ? size : 1);

	if (p == NULL)
		mock_die("mock: out of memory (%zu bytes)", size);
	return p;
}

void *
mock_realloc(void *p, size_t size)
{
	void *q = __real_realloc(p, size ? size : 1);

	if (q == NULL)
		mock_die("mock: out of memory (%zu bytes)", size);
	return q;
}

void
mock_free(void *p)
{
	__real_free(p);
}

/* --------------------------------------------------------------- objects */

static struct mock_obj *Lists[MOCK_KIND_COUNT];
static uint64_t Serial;

static const char *const Kind_names[MOCK_KIND_COUNT] = {
	[MOCK_DEVICE_LIST] = "device list",
	[MOCK_CONTEXT] = "context",
	[MOCK_PD] = "pd",
	[MOCK_MR] = "mr",
	[MOCK_COMP_CHANNEL] = "comp channel",
	[MOCK_CQ] = "cq",
	[MOCK_QP] = "qp",
	[MOCK_SRQ] = "srq",
	[MOCK_CM_CHANNEL] = "cm event channel",
	[MOCK_CM_ID] = "cm id",
	[MOCK_ADDRINFO] = "rdma_addrinfo",
	[MOCK_CM_DEVICE_LIST] = "cm device list",
	[MOCK_MW] = "mw",
};

const char *
mock_kind_name(enum mock_kind kind)
{
	return (unsigned)kind < MOCK_KIND_COUNT ? Kind_names[kind] : "?";
}

void
mock_obj_add(struct mock_obj *o, enum mock_kind kind)
{
	o->kind = kind;
	o->magic = MOCK_MAGIC;
	o->serial = ++Serial;
	o->prev = NULL;
	o->next = Lists[kind];
	if (o->next)
		o->next->prev = o;
	Lists[kind] = o;
}

void
mock_obj_del(struct mock_obj *o)
{
	if (o->prev)
		o->prev->next = o->next;
	else
		Lists[o->kind] = o->next;
	if (o->next)
		o->next->prev = o->prev;
	o->next = o->prev = NULL;
	o->magic = MOCK_DEAD;
}

struct mock_obj *
mock_obj_head(enum mock_kind kind)
{
	return Lists[kind];
}

/* implemented by the parts: the user-visible pointer of an object */
extern void *mock_verbs_user_ptr(struct mock_obj *o);
extern void *mock_cm_user_ptr(struct mock_obj *o);

void *
mock_obj_user(struct mock_obj *o)
{
	switch (o->kind) {
	case MOCK_CM_CHANNEL:
	case MOCK_CM_ID:
	case MOCK_ADDRINFO:
	case MOCK_CM_DEVICE_LIST:
		return mock_cm_user_ptr(o);
	default:
		return mock_verbs_user_ptr(o);
	}
}

struct mock_obj *
mock_obj_find(enum mock_kind kind, const void *ptr)
{
	if (ptr == NULL)
		return NULL;
	for (struct mock_obj *o = Lists[kind]; o; o = o->next)
		if (mock_obj_user(o) == ptr)
			return o;
	return NULL;
}

struct mock_obj *
mock_obj_get(enum mock_kind kind, const void *ptr, const char *fn)
{
	struct mock_obj *o = mock_obj_find(kind, ptr);

	if (o == NULL)
		mock_die("%s: %s %p is NULL, destroyed or was never created",
				fn, Kind_names[kind], ptr);
	return o;
}

static int
live_count(enum mock_kind kind)
{
	int n = 0;

	for (struct mock_obj *o = Lists[kind]; o; o = o->next)
		if (!o->internal && !o->hidden && !o->destroy_failed)
			n++;
	return n;
}

int
mock_live(enum mock_kind kind)
{
	int n;

	MOCK_LOCK();
	if ((unsigned)kind >= MOCK_KIND_COUNT)
		mock_die("mock_live: bad kind %d", (int)kind);
	n = live_count(kind);
	MOCK_UNLOCK();
	return n;
}

int
mock_unacked_cm_events(void)
{
	MOCK_LOCK();
	int n = mock_cm_unacked_total();
	MOCK_UNLOCK();
	return n;
}

int
mock_unacked_cq_events(void)
{
	MOCK_LOCK();
	int n = mock_verbs_unacked_cq();
	MOCK_UNLOCK();
	return n;
}

int
mock_unacked_async_events(void)
{
	MOCK_LOCK();
	int n = mock_verbs_unacked_async();
	MOCK_UNLOCK();
	return n;
}

/* ---------------------------------------------------------------- fdq */

void
mock_fdq_open(struct mock_fdq *q)
{
	/* blocking on purpose: the mock checks whether the code under test
	 * set O_NONBLOCK before it reads events */
	q->fd = eventfd(0, EFD_CLOEXEC);
	if (q->fd < 0)
		mock_die("mock: eventfd: %s", strerror(errno));
	q->pending = 0;
}

void
mock_fdq_inc(struct mock_fdq *q)
{
	if (q->pending++ == 0) {
		uint64_t one = 1;

		if (write(q->fd, &one, sizeof(one)) != sizeof(one))
			mock_die("mock: cannot signal fd %d (closed by the "
					"code under test?): %s", q->fd,
					strerror(errno));
	}
}

void
mock_fdq_dec(struct mock_fdq *q)
{
	if (q->pending <= 0)
		mock_die("mock: internal: fd %d pending underflow", q->fd);
	if (--q->pending == 0) {
		uint64_t v;

		/* the counter is > 0, so this never blocks */
		if (read(q->fd, &v, sizeof(v)) != sizeof(v))
			mock_die("mock: cannot drain fd %d (closed or read by "
					"the code under test?): %s", q->fd,
					strerror(errno));
	}
}

void
mock_fdq_close(struct mock_fdq *q, const char *what)
{
	if (q->fd < 0)
		return;
	int fd = q->fd;

	q->fd = -1;
	q->pending = 0;
	if (close(fd) != 0 && errno == EBADF)
		mock_die("mock: the fd %d of a %s was already closed -- the code "
				"under test must never close rdma-core's fds", fd,
				what);
}

bool
mock_fd_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		mock_die("mock: fd %d is not open (closed by the code under "
				"test?)", fd);
	return (fl & O_NONBLOCK) != 0;
}

/* --------------------------------------------------------- reset, leaks */

void
mock_reset(void)
{
	MOCK_LOCK();
	Each = (typeof(Each)){ .failed_fn = -1 };
	__atomic_store_n(&mock_alloc_armed, 0, __ATOMIC_SEQ_CST);
	mock_cm_reset();
	mock_verbs_reset();
	mock_alloc_reset();
	memset(Sched, 0, sizeof(Sched));
	sched_recount_alloc();
	memset(Calls, 0, sizeof(Calls));
	MOCK_UNLOCK();
}

void
mock_release_failed_destroys(void)
{
	MOCK_LOCK();
	mock_cm_release_failed();
	mock_verbs_release_failed();
	MOCK_UNLOCK();
}

struct snapshot {
	int live[MOCK_KIND_COUNT];
	int unacked_cm, unacked_cq, unacked_async;
};

static void
snap(struct snapshot *s)
{
	for (int k = 0; k < MOCK_KIND_COUNT; k++)
		s->live[k] = live_count((enum mock_kind)k);
	s->unacked_cm = mock_cm_unacked_total();
	s->unacked_cq = mock_verbs_unacked_cq();
	s->unacked_async = mock_verbs_unacked_async();
}

/* describe what grew from `before` to now into buf; 0 if nothing */
static int
snap_diff(const struct snapshot *before, char *buf, size_t size,
		bool objects)
{
	struct snapshot now;
	size_t off = 0;
	int bad = 0;

	snap(&now);
	buf[0] = '\0';
#define APPEND(...) do { \
		int n_ = snprintf(buf + off, size - off, __VA_ARGS__); \
		if (n_ > 0 && (size_t)n_ < size - off) off += (size_t)n_; \
	} while (0)
	if (objects) {
		for (int k = 0; k < MOCK_KIND_COUNT; k++) {
			if (now.live[k] > before->live[k]) {
				APPEND("%s%d live %s", bad ? ", " : "",
						now.live[k] - before->live[k],
						Kind_names[k]);
				bad++;
			}
		}
	}
	if (now.unacked_cm > before->unacked_cm) {
		APPEND("%s%d unacked CM events", bad ? ", " : "",
				now.unacked_cm - before->unacked_cm);
		bad++;
	}
	if (now.unacked_cq > before->unacked_cq) {
		APPEND("%s%d unacked CQ events", bad ? ", " : "",
				now.unacked_cq - before->unacked_cq);
		bad++;
	}
	if (now.unacked_async > before->unacked_async) {
		APPEND("%s%d unacked async events", bad ? ", " : "",
				now.unacked_async - before->unacked_async);
		bad++;
	}
#undef APPEND
	return bad;
}

void
mock_assert_no_leaks(void)
{
	struct snapshot zero;
	char buf[1024];

	MOCK_LOCK();
	memset(&zero, 0, sizeof(zero));
	if (snap_diff(&zero, buf, sizeof(buf), true))
		mock_die("leaked: %s", buf);
	MOCK_UNLOCK();
}

int
mock_test_setup(void **state)
{
	(void)state;
	mock_reset();
	return 0;
}

int
mock_test_teardown(void **state)
{
	(void)state;
	mock_assert_no_leaks();
	mock_reset();
	return 0;
}

/* ------------------------------------------------------ run each failure */

static bool
tolerated(const struct mock_each_opts *o, const char *name)
{
	if (o->allow_success)
		return true;
	if (o->tolerated == NULL || name == NULL)
		return false;
	for (const char *const *t = o->tolerated; *t; t++) {
		if (strcmp(*t, name) == 0)
			return true;
		if (strcmp(*t, "alloc") == 0 && fn_lookup(name) >= 0 &&
				Funcs[fn_lookup(name)].cls == CLS_ALLOC)
			return true;
	}
	return false;
}

/* one run: returns the scenario's result; lock NOT held on entry */
static int
one_run(mock_scenario_fn *scenario, mock_cleanup_fn *cleanup, void *state,
		unsigned k, unsigned fail_at, bool count, bool verbose,
		const struct mock_each_opts *o, unsigned *ncalls)
{
	struct snapshot before;
	char buf[1024], abuf[1024];
	int ret;

	MOCK_LOCK();
	snap(&before);
	Each.k = k;
	Each.ncalls = 0;
	Each.fail_at = fail_at;
	Each.failed_fn = -1;
	Each.armed = count;
	if (count) {
		mock_alloc_track_begin();
		/* allocations go through mock_enter (tracked; counted and
		 * failed unless no_allocs, which mock_enter checks) */
		__atomic_store_n(&mock_alloc_armed, 1, __ATOMIC_SEQ_CST);
	}
	MOCK_UNLOCK();

	ret = scenario(state);

	MOCK_LOCK();
	Each.armed = false;
	__atomic_store_n(&mock_alloc_armed, 0, __ATOMIC_SEQ_CST);
	mock_alloc_track_end();
	*ncalls = Each.ncalls;
	const char *failed = mock_each_failed_fn();
	if (verbose)
		fprintf(stderr, "mock run %u: failing call %u (%s) -> %d\n", k,
				fail_at, failed ? failed : "not reached", ret);
	MOCK_UNLOCK();

	cleanup(state, ret);

	MOCK_LOCK();
	if (k == 0 && ret != 0)
		mock_die("mock_run_each_failure: the scenario fails (%d) with "
				"nothing injected", ret);
	if (k > 0 && failed != NULL && ret == 0 && !tolerated(o, failed))
		mock_die("mock_run_each_failure: call %u (%s) failed, but the "
				"scenario returned 0", fail_at, failed);
	bool check_objects = !(failed != NULL && o->fail_destroys &&
			Funcs[Each.failed_fn].cls == CLS_DESTROY);
	if (snap_diff(&before, buf, sizeof(buf), check_objects))
		mock_die("mock_run_each_failure: call %u (%s) failed: leaked %s",
				fail_at, failed ? failed : "none", buf);
	if (count) {
		size_t n = mock_alloc_tracked_live(abuf, sizeof(abuf));

		if (n > 0)
			mock_die("mock_run_each_failure: call %u (%s) failed: "
					"%zu allocation(s) not freed: %s", fail_at,
					failed ? failed : "none", n, abuf);
		mock_alloc_track_clear();
	}
	/* drop the scripted input the run did not consume */
	mock_cm_discard_pending();
	mock_verbs_discard_pending();
	sched_clear_oneshots();
	MOCK_UNLOCK();
	return ret;
}

int
mock_run_each_failure_opts(mock_scenario_fn *scenario,
		mock_cleanup_fn *cleanup, void *state,
		const struct mock_each_opts *opts)
{
	struct mock_each_opts o = opts ? *opts : (struct mock_each_opts){ 0 };
	const char *env = getenv("MOCK_VERBOSE");
	bool verbose = o.verbose || (env && strcmp(env, "1") == 0);
	unsigned n = 0, dummy;

	if (scenario == NULL || cleanup == NULL)
		mock_die("mock_run_each_failure: NULL scenario or cleanup");

	MOCK_LOCK();
	if (Each.active)
		mock_die("mock_run_each_failure: nested call");
	Each.active = true;
	Each.no_allocs = o.no_allocs;
	Each.fail_destroys = o.fail_destroys;
	sched_clear_oneshots();
	MOCK_UNLOCK();

	/* warm-up: nothing counted, lazily made globals settle */
	one_run(scenario, cleanup, state, 0, 0, false, verbose, &o, &dummy);
	/* baseline: count */
	one_run(scenario, cleanup, state, 0, 0, true, verbose, &o, &n);
	if (verbose)
		fprintf(stderr, "mock_run_each_failure: %u failable calls\n", n);

	for (unsigned k = 1; k <= n; k++)
		one_run(scenario, cleanup, state, k, k, true, verbose, &o,
				&dummy);

	MOCK_LOCK();
	Each = (typeof(Each)){ .failed_fn = -1 };
	MOCK_UNLOCK();
	return (int)n;
}

int
mock_run_each_failure(mock_scenario_fn *scenario, mock_cleanup_fn *cleanup,
		void *state)
{
	return mock_run_each_failure_opts(scenario, cleanup, state, NULL);
}
