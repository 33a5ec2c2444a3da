/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_fastpath.c -- the tcp provider's application-thread fast
 * path (progress turns run by a posting or CQ-waiting thread, the quiet
 * channel, the progress thread's deaf wait), PMREP_F_MORE and the
 * coalesced PERSISTENT flushes of a target, driven from several threads
 * at once: every request ends exactly once, in posting order, byte-exact,
 * and a flush completes only after the target's persist function ran
 * over bytes that already held the flushed write; no wakeup is lost,
 * whichever thread (or epoll loop) waits.
 *
 * Covered: a posting thread with a waiting thread (pmrep_cq_wait, a
 * pmrep_cq_wait(0) spin, poll on the CQ's fd); two threads waiting on one
 * CQ; an epoll loop mixed with pmrep_cq_wait; the remote side's writes,
 * reads and sends on the same conn meanwhile; signals interrupting the
 * wait; MORE batches left open (released by a CQ poll, by the 16th held
 * request, by a disconnect); the target killed inside its persist or
 * frozen during one long wait; dereg of a held write's source; 32 conns
 * waited from one thread; a local or remote disconnect while posting and
 * waiting (unsignalled requests too); an input stalled on a missing
 * receive during the wait; pmrep_cq_wait_any over conns whose own
 * threads post. tcp only: these are the tcp provider's paths.
 * Past ~800 lines: one program for the fast path; cases share thread fixtures.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "func.h"

#define T 5000			/* ms: one completion, however loaded */
#define SLOT 2048		/* a persist's slot in the regions */
#define NSLOTS 64
#define REGION (SLOT * NSLOTS)
#define SQ 32			/* send queue: 16 persists in flight */

/* ----------------------------------------------- the target's persist fn */

/*
 * Each write puts its persist number (+ 1) in the first 8 bytes of its
 * slot. The target's persist function records, for every slot start it
 * covers, the number it found there: a flush that completes must find
 * its own number recorded (its persist ran after its write landed).
 */
static uint8_t *g_sbuf;
static _Atomic uint64_t g_persisted[NSLOTS];
static atomic_int g_persist_calls;

static int
record_persist(void *ctx, const void *ptr, size_t size)
{
	(void) ctx;
	atomic_fetch_add(&g_persist_calls, 1);
	if (g_sbuf == NULL)
		return 0;
	const uint8_t *p = ptr;
	if (p < g_sbuf || p + size > g_sbuf + REGION)
		return 0;
	size_t first = (size_t)(p - g_sbuf + SLOT - 1) / SLOT;
	for (size_t s = first; s < NSLOTS && s * SLOT < (size_t)(p - g_sbuf) + size;
			s++) {
		uint64_t tag;
		memcpy(&tag, g_sbuf + s * SLOT, 8);
		atomic_store(&g_persisted[s], tag);
	}
	return 0;
}

/* ------------------------------------------------------------- fixture */

struct fx {
	struct func_pair p;
	struct pmrep_conn_cfg *cfg;
	struct func_mrs m;
};

static struct pmrep_conn_cfg *
make_cfg(uint32_t sq, uint32_t rq)
{
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, sq), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, 2 * sq), 0);
	assert_int_equal(pmrep_conn_cfg_set_rq_size(cfg, rq), 0);
	return cfg;
}

static int
setup(void **state)
{
	*state = NULL;
	if (!func_is_tcp())
		return 0;	/* every test here skips */
	struct fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->cfg = make_cfg(SQ, 64);
	struct func_opts o = { .ccfg = f->cfg, .scfg = f->cfg };
	func_pair_open(&f->p, &o);
	func_mrs_reg(&f->m, &f->p, REGION, PMREP_MR_USAGE_ALL);
	g_sbuf = f->m.sbuf;
	for (int i = 0; i < NSLOTS; i++)
		atomic_store(&g_persisted[i], 0);
	atomic_store(&g_persist_calls, 0);
	if (func_is_tcp())
		assert_int_equal(pmrep_mr_set_persist_fn(f->m.smr,
				record_persist, NULL), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	if (f == NULL)
		return 0;
	g_sbuf = NULL;
	func_pair_close_all(&f->p, &f->m);
	pmrep_conn_cfg_delete(&f->cfg);
	free(f);
	return 0;
}

/* ------------------------------------------------- a stream of persists */

/* persist i: a write of wlen(i) bytes into slot i % NSLOTS, then a
 * PERSISTENT flush of it; contexts 2i + 1 (write) and 2i + 2 (flush) */
static size_t
wlen(int i)
{
	static const size_t l[] = { 64, 8, 1024, 200, SLOT, 4096 - 8, 9 };
	size_t n = l[(unsigned)i % 7];
	return n > SLOT ? SLOT : n;
}

static enum pmrep_flush_type
persistent_or_visible(struct pmrep_conn *conn)
{
	enum pmrep_flush_method m;
	assert_int_equal(pmrep_conn_get_flush_method(conn, &m), 0);
	return m == PMREP_FLUSH_METHOD_NONE ? PMREP_FLUSH_TYPE_VISIBILITY :
		PMREP_FLUSH_TYPE_PERSISTENT;
}

static void
fill_slot(uint8_t *buf, int i)
{
	uint8_t *s = buf + (size_t)(i % NSLOTS) * SLOT;
	func_pattern(s, wlen(i), (unsigned)i + 7);
	uint64_t tag = (uint64_t)i + 1;
	if (wlen(i) >= 8)
		memcpy(s, &tag, 8);
}

/* post persist i; more: the write flagged PMREP_F_MORE */
static void
post_persist(struct pmrep_conn *conn, struct func_mrs *m, int i, bool more,
		enum pmrep_flush_type type)
{
	size_t off = (size_t)(i % NSLOTS) * SLOT;
	int wf = PMREP_F_COMPLETION_ALWAYS | (more ? PMREP_F_MORE : 0);
	int ret;
	while ((ret = pmrep_write(conn, m->srmt, off, m->cmr, off, wlen(i), wf,
			(void *)(uintptr_t)(2 * i + 1))) == PMREP_E_AGAIN)
		sched_yield();
	assert_int_equal(ret, 0);
	while ((ret = pmrep_flush(conn, m->srmt, off, wlen(i), type,
			PMREP_F_COMPLETION_ALWAYS,
			(void *)(uintptr_t)(2 * i + 2))) == PMREP_E_AGAIN)
		sched_yield();
	assert_int_equal(ret, 0);
}

/* completion c must be the next one in order (*next: the context it
 * must carry); a flush's bytes are at the target and were persisted */
static void
check_in_order(const struct pmrep_completion *c, uintptr_t *next,
		struct func_mrs *m, bool check_persist)
{
	uintptr_t ctx = (uintptr_t)c->op_context;
	if (ctx != *next)
		fail_msg("completion ctx %lu, expected %lu (status %s)",
				(unsigned long)ctx, (unsigned long)*next,
				pmrep_wc_status_str(c->status));
	if (c->status != PMREP_WC_SUCCESS)
		fail_msg("ctx %lu: %s", (unsigned long)ctx,
				pmrep_wc_status_str(c->status));
	int i = (int)((ctx - 1) / 2);
	if (ctx % 2 == 1) {
		assert_int_equal(c->op, PMREP_OP_WRITE);
	} else {
		assert_int_equal(c->op, PMREP_OP_FLUSH);
		size_t off = (size_t)(i % NSLOTS) * SLOT;
		uint8_t want[SLOT];
		memset(want, 0, sizeof(want));
		func_pattern(want, wlen(i), (unsigned)i + 7);
		uint64_t tag = (uint64_t)i + 1;
		if (wlen(i) >= 8)
			memcpy(want, &tag, 8);
		if (memcmp(m->sbuf + off, want, wlen(i)) != 0)
			fail_msg("persist %d: the target's bytes differ", i);
		if (check_persist && func_is_tcp() && wlen(i) >= 8) {
			uint64_t got = atomic_load(&g_persisted[i % NSLOTS]);
			if (got != tag)
				fail_msg("persist %d completed, but the target's persist function saw tag %llu in its slot",
						i, (unsigned long long)got);
		}
	}
	(*next)++;
}

/* -------------------------------------------- 1. a poster and a waiter */

struct stream {
	struct pmrep_conn *conn;
	struct pmrep_cq *cq;
	struct func_mrs *m;
	int n;				/* persists */
	int mode;			/* how the waiter waits */
	atomic_int done;		/* persists completed (flush seen) */
	atomic_bool failed;
	atomic_int posted;
	enum pmrep_flush_type type;
	char why[256];
};

static void *
poster_main(void *arg)
{
	struct stream *s = arg;
	for (int i = 0; i < s->n && !atomic_load(&s->failed); i++) {
		/* at most SQ / 2 persists in flight; a slot is refilled only
		 * after its last persist completed */
		long long t0 = func_now_ms();
		while (i - atomic_load(&s->done) >= SQ / 2) {
			if (atomic_load(&s->failed))
				return NULL;
			if (func_now_ms() - t0 > 4 * T) {
				snprintf(s->why, sizeof(s->why),
						"persist %d: no credit for %d ms (done %d)",
						i, 4 * T, atomic_load(&s->done));
				atomic_store(&s->failed, true);
				return NULL;
			}
			sched_yield();
		}
		fill_slot(s->m->cbuf, i);
		post_persist(s->conn, s->m, i, i % 3 == 1, s->type);
		atomic_store(&s->posted, i + 1);
	}
	return NULL;
}

/* take every completion of the stream on this thread; mode 0: wait
 * with pmrep_cq_wait (100 ms), 1: with pmrep_cq_wait(0) spinning, 2:
 * with poll on the CQ's fd and pmrep_cq_wait(0) to take the event */
static void
take_stream(struct stream *s)
{
	uintptr_t next = 1;
	long long last = func_now_ms();
	int fd = -1;
	assert_int_equal(pmrep_cq_get_fd(s->cq, &fd), 0);
	while (next <= (uintptr_t)2 * s->n) {
		struct pmrep_completion c[16];
		int k = 0;
		int ret = pmrep_cq_get_completions(s->cq, c, 16, &k);
		if (ret == 0) {
			for (int j = 0; j < k; j++) {
				check_in_order(&c[j], &next, s->m, true);
				if (next % 2 == 1)
					atomic_fetch_add(&s->done, 1);
			}
			last = func_now_ms();
			continue;
		}
		assert_int_equal(ret, PMREP_E_NO_COMPLETION);
		if (func_now_ms() - last > T * func_slow()) {
			atomic_store(&s->failed, true);
			fail_msg("no completion for %d ms: next ctx %lu, %d posted, mode %d",
					T * func_slow(), (unsigned long)next,
					atomic_load(&s->posted), s->mode);
		}
		if (s->mode == 0) {
			ret = pmrep_cq_wait(s->cq, 100);
			if (ret != PMREP_E_TIMEOUT)
				assert_int_equal(ret, 0);
		} else if (s->mode == 1) {
			ret = pmrep_cq_wait(s->cq, 0);
			if (ret != PMREP_E_TIMEOUT)
				assert_int_equal(ret, 0);
		} else {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int n = poll(&p, 1, 100);
			assert_true(n >= 0);
			while ((ret = pmrep_cq_wait(s->cq, 0)) == 0)
				;
			assert_int_equal(ret, PMREP_E_TIMEOUT);
		}
	}
}

static void
run_stream(struct fx *f, int n, int mode)
{
	struct stream s;
	memset(&s, 0, sizeof(s));
	s.conn = f->p.cconn;
	s.cq = func_cq(f->p.cconn);
	s.m = &f->m;
	s.n = n;
	s.mode = mode;
	s.type = persistent_or_visible(f->p.cconn);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, poster_main, &s), 0);
	take_stream(&s);
	pthread_join(t, NULL);
	if (atomic_load(&s.failed))
		fail_msg("%s", s.why);
	assert_int_equal(atomic_load(&s.done), n);
	func_expect_no_completion(s.cq, 50);
	if (getenv("FUNC_VERBOSE"))
		print_message("%d persists, %d persist calls at the target\n",
				n, atomic_load(&g_persist_calls));
	if (func_is_tcp())	/* coalesced, never more than one each */
		assert_true(atomic_load(&g_persist_calls) <= n);
}

static void
poster_thread_and_cq_wait_thread_every_persist_once_in_order(void **state)
{
	FUNC_TCP_ONLY();
	run_stream(*state, 3000, 0);
}

static void
poster_thread_and_cq_wait_zero_spinning_thread(void **state)
{
	FUNC_TCP_ONLY();
	run_stream(*state, 3000, 1);
}

static void
poster_thread_and_fd_poll_thread(void **state)
{
	FUNC_TCP_ONLY();
	run_stream(*state, 3000, 2);
}

/* ------------------------------- 2. two threads wait on the same CQ */

struct waiter {
	struct stream *s;
	int idx;
	atomic_int *taken;		/* completions taken by all */
	bool *seen;			/* per ctx */
	pthread_mutex_t *lock;
	int got;
	char why[256];
	bool failed;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct stream *s = w->s;
	long long last = func_now_ms();
	while (atomic_load(w->taken) < 2 * s->n) {
		struct pmrep_completion c[4];
		int k = 0;
		int ret = pmrep_cq_get_completions(s->cq, c, 4, &k);
		if (ret == 0) {
			pthread_mutex_lock(w->lock);
			for (int j = 0; j < k; j++) {
				uintptr_t ctx = (uintptr_t)c[j].op_context;
				if (ctx < 1 || ctx > (uintptr_t)2 * s->n ||
						w->seen[ctx] ||
						c[j].status != PMREP_WC_SUCCESS) {
					snprintf(w->why, sizeof(w->why),
							"bad completion ctx %lu (%s, seen %d)",
							(unsigned long)ctx,
							pmrep_wc_status_str(c[j].status),
							ctx >= 1 && ctx <= (uintptr_t)2 * s->n ?
							w->seen[ctx] : -1);
					w->failed = true;
					atomic_store(&s->failed, true);
					pthread_mutex_unlock(w->lock);
					return NULL;
				}
				w->seen[ctx] = true;
			}
			/* done: persists whose write and flush both came */
			int d = atomic_load(&s->done);
			while (d < s->n && w->seen[2 * d + 1] && w->seen[2 * d + 2])
				d++;
			atomic_store(&s->done, d);
			pthread_mutex_unlock(w->lock);
			atomic_fetch_add(w->taken, k);
			w->got += k;
			last = func_now_ms();
			continue;
		}
		if (ret != PMREP_E_NO_COMPLETION) {
			snprintf(w->why, sizeof(w->why), "get_completions: %s",
					pmrep_err_to_str(ret));
			w->failed = true;
			return NULL;
		}
		/* the other waiter may hold the last event for a while; the
		 * set as a whole must make progress */
		if (func_now_ms() - last > 3 * T * func_slow()) {
			snprintf(w->why, sizeof(w->why),
					"waiter %d: nothing for %d ms (%d of %d taken, %d posted)",
					w->idx, 3 * T * func_slow(),
					atomic_load(w->taken), 2 * s->n,
					atomic_load(&s->posted));
			w->failed = true;
			atomic_store(&s->failed, true);
			return NULL;
		}
		ret = pmrep_cq_wait(s->cq, 20);
		if (ret != 0 && ret != PMREP_E_TIMEOUT) {
			snprintf(w->why, sizeof(w->why), "cq_wait: %s",
					pmrep_err_to_str(ret));
			w->failed = true;
			atomic_store(&s->failed, true);
			return NULL;
		}
	}
	return NULL;
}

static void
two_threads_wait_on_one_cq_while_a_third_posts(void **state)
{
	FUNC_TCP_ONLY();
	struct fx *f = *state;
	const int n = 3000;
	struct stream s;
	memset(&s, 0, sizeof(s));
	s.conn = f->p.cconn;
	s.cq = func_cq(f->p.cconn);
	s.m = &f->m;
	s.n = n;
	s.type = persistent_or_visible(f->p.cconn);
	bool *seen = calloc((size_t)2 * n + 2, sizeof(bool));
	assert_non_null(seen);
	atomic_int taken;
	atomic_init(&taken, 0);
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct waiter w[2];
	pthread_t tw[2], tp;
	for (int i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].s = &s;
		w[i].idx = i;
		w[i].taken = &taken;
		w[i].seen = seen;
		w[i].lock = &lock;
		assert_int_equal(pthread_create(&tw[i], NULL, waiter_main,
				&w[i]), 0);
	}
	assert_int_equal(pthread_create(&tp, NULL, poster_main, &s), 0);
	pthread_join(tp, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(tw[i], NULL);
	for (int i = 0; i < 2; i++)
		if (w[i].failed)
			fail_msg("%s", w[i].why);
	if (atomic_load(&s.failed))
		fail_msg("%s", s.why);
	assert_int_equal(atomic_load(&taken), 2 * n);
	for (int i = 1; i <= 2 * n; i++)
		assert_true(seen[i]);
	func_expect_no_completion(s.cq, 50);
	free(seen);
}

/* ----------------------- 3. epoll on the CQ's fd, mixed with cq_wait */

static int
epoll_on(int fd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	assert_true(ep >= 0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	return ep;
}

/* take every event (re-arming), then everything in the CQ */
static int
drain(struct pmrep_cq *cq, struct pmrep_completion *c, int max)
{
	int ret;
	while ((ret = pmrep_cq_wait(cq, 0)) == 0)
		;
	assert_int_equal(ret, PMREP_E_TIMEOUT);
	int got = 0;
	while (got < max) {
		int k = 0;
		ret = pmrep_cq_get_completions(cq, c + got, max - got, &k);
		if (ret == PMREP_E_NO_COMPLETION)
			break;
		assert_int_equal(ret, 0);
		got += k;
	}
	return got;
}

static void
epoll_loop_mixed_with_cq_wait_loses_no_wakeup(void **state)
{
	FUNC_TCP_ONLY();
	struct fx *f = *state;
	struct pmrep_conn *conn = f->p.cconn;
	struct pmrep_cq *cq = func_cq(conn);
	enum pmrep_flush_type type = persistent_or_visible(conn);
	int fd = -1;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
	int ep = epoll_on(fd);
	uintptr_t next = 1;
	for (int i = 0; i < 1500; i++) {
		fill_slot(f->m.cbuf, i);
		/* the flush only: rounds differ in what they wait with */
		post_persist(conn, &f->m, i, i % 2 == 0, type);
		int have = 0;
		struct pmrep_completion c[8];
		if (i % 3 == 0) {
			/* synchronous: the fast wait, then straight on to an
			 * epoll round (the thread may still be deaf) */
			long long t0 = func_now_ms();
			while (have < 2) {
				if (func_now_ms() - t0 > T * func_slow())
					fail_msg("round %d: cq_wait found %d of 2",
							i, have);
				int ret = pmrep_cq_wait(cq, T);
				if (ret != 0)
					fail_msg("round %d: cq_wait: %s", i,
							pmrep_err_to_str(ret));
				int k = 0;
				ret = pmrep_cq_get_completions(cq, c + have,
						8 - have, &k);
				if (ret == 0)
					have += k;
			}
		} else {
			long long t0 = func_now_ms();
			while (have < 2) {
				int left = (int)(T * func_slow() -
						(func_now_ms() - t0));
				struct epoll_event ev;
				int n = left > 0 ? epoll_wait(ep, &ev, 1, left) : 0;
				if (n == 0)
					fail_msg("round %d: no wakeup within %d ms (%d of 2 completions)",
							i, T * func_slow(), have);
				assert_int_equal(n, 1);
				have += drain(cq, c + have, 8 - have);
			}
		}
		assert_int_equal(have, 2);
		for (int j = 0; j < have; j++)
			check_in_order(&c[j], &next, &f->m, true);
	}
	close(ep);
}

/* -------------------- 4. the remote side works on this conn meanwhile */

struct remote_writer {
	struct pmrep_conn *conn;	/* the server's conn */
	struct pmrep_cq *cq;
	struct pmrep_mr_local *smr;	/* the server's source */
	struct pmrep_mr_remote *crmt;	/* the client's region */
	uint8_t *sbuf, *cbuf;
	int n;
	atomic_bool stop;
	char why[256];
	bool failed;
	int sends;			/* of the n, this many are sends */
};

/* the server's thread: writes (and sends) into the client and waits for
 * them on its own CQ with pmrep_cq_wait, in order */
static void *
remote_main(void *arg)
{
	struct remote_writer *r = arg;
	uintptr_t next = 1;
	int posted = 0;
	long long last = func_now_ms();
	while ((int)next <= r->n) {
		while (posted < r->n && posted - (int)(next - 1) < 8) {
			int i = posted;
			size_t off = REGION + (size_t)(i % 8) * 512;
			int ret;
			if (i % 4 == 3) {
				ret = pmrep_send(r->conn, r->smr, off, 300,
						PMREP_F_COMPLETION_ALWAYS,
						(void *)(uintptr_t)(i + 1));
			} else if (i % 4 == 1) {
				/* the client's constant quarter, read back */
				ret = pmrep_read(r->conn, r->smr, off + REGION / 4,
						r->crmt, off + REGION / 4, 512,
						PMREP_F_COMPLETION_ALWAYS,
						(void *)(uintptr_t)(i + 1));
			} else {
				ret = pmrep_write(r->conn, r->crmt, off, r->smr,
						off, 512,
						PMREP_F_COMPLETION_ALWAYS,
						(void *)(uintptr_t)(i + 1));
			}
			if (ret == PMREP_E_AGAIN)
				break;
			if (ret != 0) {
				snprintf(r->why, sizeof(r->why), "post %d: %s",
						i, pmrep_err_to_str(ret));
				r->failed = true;
				return NULL;
			}
			posted++;
		}
		struct pmrep_completion c[8];
		int k = 0;
		int ret = pmrep_cq_get_completions(r->cq, c, 8, &k);
		if (ret == 0) {
			for (int j = 0; j < k; j++) {
				if ((uintptr_t)c[j].op_context != next ||
						c[j].status != PMREP_WC_SUCCESS) {
					snprintf(r->why, sizeof(r->why),
							"remote: ctx %lu (want %lu): %s",
							(unsigned long)(uintptr_t)c[j].op_context,
							(unsigned long)next,
							pmrep_wc_status_str(c[j].status));
					r->failed = true;
					return NULL;
				}
				int i = (int)next - 1;
				size_t off = REGION + REGION / 4 +
					(size_t)(i % 8) * 512;
				if (i % 4 == 1 && memcmp(r->sbuf + off,
						r->cbuf + off, 512) != 0) {
					snprintf(r->why, sizeof(r->why),
							"remote: read %d returned other bytes",
							i);
					r->failed = true;
					return NULL;
				}
				next++;
			}
			last = func_now_ms();
			continue;
		}
		if (func_now_ms() - last > T * func_slow()) {
			snprintf(r->why, sizeof(r->why),
					"remote: nothing for %d ms at ctx %lu",
					T * func_slow(), (unsigned long)next);
			r->failed = true;
			return NULL;
		}
		(void) pmrep_cq_wait(r->cq, 50);
	}
	return NULL;
}

static void
both_directions_on_one_conn_while_this_side_waits_in_cq_wait(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	/* regions twice as large: the upper half is the server's traffic */
	struct pmrep_conn_cfg *cfg = make_cfg(SQ, 64);
	struct func_opts o = { .ccfg = cfg, .scfg = cfg };
	struct func_pair p;
	func_pair_open(&p, &o);
	struct func_mrs m;
	func_mrs_reg(&m, &p, 2 * REGION, PMREP_MR_USAGE_ALL);
	g_sbuf = m.sbuf;
	for (int i = 0; i < NSLOTS; i++)
		atomic_store(&g_persisted[i], 0);
	if (func_is_tcp())
		assert_int_equal(pmrep_mr_set_persist_fn(m.smr, record_persist, NULL),
				0);
	struct pmrep_mr_remote *crmt = func_remote(m.cmr);
	func_pattern(m.sbuf + REGION, REGION, 99);
	func_pattern(m.cbuf + REGION + REGION / 4, 4096, 77);

	/* the client receives the server's sends into its upper half too
	 * (on its own CQ: no RCQ), posted ahead */
	const int nremote = 2000;
	int nsends = nremote / 4;
	int recv_posted = 0;
	for (; recv_posted < 48; recv_posted++)
		assert_int_equal(pmrep_recv(p.cconn, m.cmr,
				REGION + REGION / 2 + (size_t)(recv_posted % 8) * 512,
				512, (void *)(uintptr_t)(1000000 + recv_posted)),
				0);

	struct remote_writer r;
	memset(&r, 0, sizeof(r));
	r.conn = p.sconn;
	r.cq = func_cq(p.sconn);
	r.smr = m.smr;
	r.crmt = crmt;
	r.sbuf = m.sbuf;
	r.cbuf = m.cbuf;
	r.n = nremote;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, remote_main, &r), 0);

	/* this side: persists, each waited for with pmrep_cq_wait; the
	 * server's sends land as receive completions among them */
	struct pmrep_cq *cq = func_cq(p.cconn);
	enum pmrep_flush_type type = persistent_or_visible(p.cconn);
	uintptr_t next = 1;
	int recvs = 0;
	uint32_t recv_next = 1000000;
	for (int i = 0; i < 1500; i++) {
		fill_slot(m.cbuf, i);
		post_persist(p.cconn, &m, i, i % 2 == 1, type);
		long long t0 = func_now_ms();
		uintptr_t want = next + 2;
		while (next < want) {
			if (func_now_ms() - t0 > T * func_slow())
				fail_msg("persist %d: not complete in %d ms",
						i, T * func_slow());
			struct pmrep_completion c[8];
			int k = 0;
			if (pmrep_cq_get_completions(cq, c, 8, &k) != 0) {
				int ret = pmrep_cq_wait(cq, 100);
				if (ret != 0 && ret != PMREP_E_TIMEOUT)
					fail_msg("cq_wait: %s",
							pmrep_err_to_str(ret));
				continue;
			}
			for (int j = 0; j < k; j++) {
				uintptr_t ctx = (uintptr_t)c[j].op_context;
				if (ctx >= 1000000) {
					assert_int_equal(c[j].status,
							PMREP_WC_SUCCESS);
					assert_int_equal(c[j].op, PMREP_OP_RECV);
					assert_int_equal(ctx, recv_next);
					assert_int_equal(c[j].byte_len, 300);
					recv_next++;
					recvs++;
					assert_int_equal(pmrep_recv(p.cconn, m.cmr,
						REGION + REGION / 2 +
						(size_t)(recv_posted % 8) * 512,
						512, (void *)(uintptr_t)
						(1000000 + recv_posted)), 0);
					recv_posted++;
					continue;
				}
				check_in_order(&c[j], &next, &m, true);
			}
		}
	}
	/* this side no longer waits: the remote's traffic must still go
	 * through (the progress thread is not left deaf) */
	long long t0 = func_now_ms();
	while (recvs < nsends) {
		if (func_now_ms() - t0 > 4 * T * func_slow())
			fail_msg("%d of %d sends received", recvs, nsends);
		struct pmrep_completion c[8];
		int k = 0;
		int fd = -1;
		assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
		if (pmrep_cq_get_completions(cq, c, 8, &k) != 0) {
			/* only the fd: no turn run by this thread */
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			(void) poll(&pf, 1, 50);
			continue;
		}
		for (int j = 0; j < k; j++) {
			uintptr_t ctx = (uintptr_t)c[j].op_context;
			assert_true(ctx >= 1000000);
			assert_int_equal(c[j].status, PMREP_WC_SUCCESS);
			assert_int_equal(ctx, recv_next);
			recv_next++;
			recvs++;
			assert_int_equal(pmrep_recv(p.cconn, m.cmr,
					REGION + REGION / 2 +
					(size_t)(recv_posted % 8) * 512, 512,
					(void *)(uintptr_t)(1000000 + recv_posted)),
					0);
			recv_posted++;
		}
	}
	pthread_join(t, NULL);
	if (r.failed)
		fail_msg("%s", r.why);
	/* the server's last writes are in the client's upper half */
	for (int s = 0; s < 8; s++) {
		if (s % 2 == 1)
			continue;	/* the reads' and sends' slots */
		size_t off = REGION + (size_t)s * 512;
		assert_memory_equal(m.cbuf + off, m.sbuf + off, 512);
	}
	assert_int_equal(recvs, nsends);
	g_sbuf = NULL;
	assert_int_equal(pmrep_mr_remote_delete(&crmt), 0);
	func_pair_close_all(&p, &m);
	pmrep_conn_cfg_delete(&cfg);
}

/* --------------- 4b. signals interrupt the waiting thread's poll */

static atomic_int g_signals;

static void
on_usr1(int sig)
{
	(void) sig;
	atomic_fetch_add(&g_signals, 1);
}

struct signaler {
	pthread_t target;
	atomic_bool stop;
};

static void *
signaler_main(void *arg)
{
	struct signaler *g = arg;
	while (!atomic_load(&g->stop)) {
		pthread_kill(g->target, SIGUSR1);
		usleep(100);
	}
	return NULL;
}

static void
signals_storm_the_thread_in_cq_wait(void **state)
{
	FUNC_TCP_ONLY();
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART: poll says EINTR */
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	atomic_store(&g_signals, 0);
	struct signaler g = { .target = pthread_self() };
	atomic_init(&g.stop, false);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, signaler_main, &g), 0);
	run_stream(*state, 2000, 0);
	atomic_store(&g.stop, true);
	pthread_join(t, NULL);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
	assert_true(atomic_load(&g_signals) > 0);
}

/* ------------------------------------------------ 5. PMREP_F_MORE */

/* the next n completions, waiting only on the CQ's fd with epoll (no
 * pmrep call before the fd says so), then the handler's drain */
static int
epoll_collect(struct pmrep_cq *cq, int ep, struct pmrep_completion *c, int n,
		int ms)
{
	long long t0 = func_now_ms();
	int got = 0;
	while (got < n) {
		int left = (int)(ms - (func_now_ms() - t0));
		struct epoll_event ev;
		int k = left > 0 ? epoll_wait(ep, &ev, 1, left) : 0;
		if (k == 0)
			break;
		assert_int_equal(k, 1);
		got += drain(cq, c + got, n - got);
	}
	return got;
}

static struct pmrep_conn_cfg *
slow_thread_cfg(void)
{
	/* a long cfg timeout: the idle progress thread sleeps 8 x 10 s, so
	 * nothing but the documented releases sends a held request */
	struct pmrep_conn_cfg *cfg = make_cfg(64, 16);
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 10000), 0);
	return cfg;
}

static void
more_batch_left_open_is_released_by_get_completions_alone(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct pmrep_conn_cfg *cfg = slow_thread_cfg();
	struct func_opts o = { .ccfg = cfg, .scfg = cfg };
	struct func_pair p;
	func_pair_open(&p, &o);
	struct func_mrs m;
	func_mrs_reg(&m, &p, REGION, PMREP_MR_USAGE_ALL);
	struct pmrep_cq *cq = func_cq(p.cconn);
	int fd = -1;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
	int ep = epoll_on(fd);
	enum pmrep_flush_type type = persistent_or_visible(p.cconn);
	usleep(50 * 1000);	/* the progress thread is asleep */

	for (int round = 0; round < 20; round++) {
		int i = round;
		fill_slot(m.cbuf, i);
		size_t off = (size_t)(i % NSLOTS) * SLOT;
		assert_int_equal(pmrep_write(p.cconn, m.srmt, off, m.cmr, off,
				wlen(i), PMREP_F_COMPLETION_ALWAYS | PMREP_F_MORE,
				(void *)(uintptr_t)(2 * i + 1)), 0);
		assert_int_equal(pmrep_flush(p.cconn, m.srmt, off, wlen(i),
				type, PMREP_F_COMPLETION_ALWAYS | PMREP_F_MORE,
				(void *)(uintptr_t)(2 * i + 2)), 0);
		/* one poll of the CQ: the safety net sends the batch */
		struct pmrep_completion c[4];
		int k = 0;
		int ret = pmrep_cq_get_completions(cq, c, 4, &k);
		if (ret != PMREP_E_NO_COMPLETION)
			assert_int_equal(ret, 0);
		int got = k;
		got += epoll_collect(cq, ep, c + got, 2 - got, T * func_slow());
		if (got != 2)
			fail_msg("round %d: %d of 2 completions after the CQ poll released the batch",
					round, got);
		uintptr_t next = (uintptr_t)(2 * i + 1);
		for (int j = 0; j < 2; j++)
			check_in_order(&c[j], &next, &m, false);
	}
	close(ep);
	func_pair_close_all(&p, &m);
	pmrep_conn_cfg_delete(&cfg);
}

static void
sixteen_held_requests_post_themselves_and_disconnect_releases_the_rest(
		void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct pmrep_conn_cfg *cfg = slow_thread_cfg();
	struct func_opts o = { .ccfg = cfg, .scfg = cfg };
	struct func_pair p;
	func_pair_open(&p, &o);
	struct func_mrs m;
	func_mrs_reg(&m, &p, REGION, PMREP_MR_USAGE_ALL);
	struct pmrep_cq *cq = func_cq(p.cconn);
	int fd = -1;
	assert_int_equal(pmrep_cq_get_fd(cq, &fd), 0);
	int ep = epoll_on(fd);
	func_pattern(m.cbuf, REGION, 5);
	usleep(50 * 1000);

	/* the 16th held request posts the chain: no pmrep call after it */
	for (int i = 0; i < PMREP_MORE_MAX; i++)
		assert_int_equal(pmrep_write(p.cconn, m.srmt, (size_t)i * SLOT,
				m.cmr, (size_t)i * SLOT, SLOT,
				PMREP_F_COMPLETION_ALWAYS | PMREP_F_MORE,
				(void *)(uintptr_t)(i + 1)), 0);
	struct pmrep_completion c[64];
	int got = epoll_collect(cq, ep, c, PMREP_MORE_MAX, T * func_slow());
	if (got != PMREP_MORE_MAX)
		fail_msg("%d of %d completions once the chain was full", got,
				PMREP_MORE_MAX);
	for (int i = 0; i < PMREP_MORE_MAX; i++) {
		assert_int_equal((uintptr_t)c[i].op_context, (uintptr_t)i + 1);
		assert_int_equal(c[i].status, PMREP_WC_SUCCESS);
	}
	assert_memory_equal(m.sbuf, m.cbuf, PMREP_MORE_MAX * SLOT);

	/* 5 more, held; a disconnect gives each its one outcome */
	for (int i = 0; i < 5; i++)
		assert_int_equal(pmrep_write(p.cconn, m.srmt, (size_t)i * SLOT,
				m.cmr, (size_t)i * SLOT, 64,
				PMREP_F_COMPLETION_ALWAYS | PMREP_F_MORE,
				(void *)(uintptr_t)(100 + i)), 0);
	assert_int_equal(pmrep_conn_disconnect(p.cconn), 0);
	got = epoll_collect(cq, ep, c, 5, T * func_slow());
	if (got != 5)
		fail_msg("%d of 5 held requests ended after the disconnect", got);
	bool failed = false;
	for (int i = 0; i < 5; i++) {
		assert_int_equal((uintptr_t)c[i].op_context, (uintptr_t)100 + i);
		if (c[i].status != PMREP_WC_SUCCESS) {
			assert_int_equal(c[i].status, PMREP_WC_FLUSHED);
			failed = true;
		} else {
			assert_false(failed);
		}
	}
	func_expect_no_completion(cq, 200);
	func_expect_event(p.cconn, PMREP_CONN_CLOSED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_CLOSED, T * func_slow());
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(p.cconn, &ev), PMREP_E_NO_EVENT);
	close(ep);
	func_pair_close_all(&p, &m);
	pmrep_conn_cfg_delete(&cfg);
}

/* -------------------- 6. pmrep_cq_wait(0) spinning in the posting thread */

static void
post_and_spin_on_cq_wait_zero_in_one_thread(void **state)
{
	FUNC_TCP_ONLY();
	struct fx *f = *state;
	struct pmrep_conn *conn = f->p.cconn;
	struct pmrep_cq *cq = func_cq(conn);
	enum pmrep_flush_type type = persistent_or_visible(conn);
	uintptr_t next = 1;
	int posted = 0;
	const int n = 3000;
	long long last = func_now_ms();
	while (next <= (uintptr_t)2 * n) {
		/* up to 8 persists in flight, posted between the spins */
		while (posted < n && posted - (int)((next - 1) / 2) < 8) {
			fill_slot(f->m.cbuf, posted);
			post_persist(conn, &f->m, posted, posted % 2 == 0, type);
			posted++;
		}
		int ret = pmrep_cq_wait(cq, 0);
		if (ret != PMREP_E_TIMEOUT)
			assert_int_equal(ret, 0);
		struct pmrep_completion c[16];
		int k = 0;
		if (pmrep_cq_get_completions(cq, c, 16, &k) == 0) {
			for (int j = 0; j < k; j++)
				check_in_order(&c[j], &next, &f->m, true);
			last = func_now_ms();
		} else if (func_now_ms() - last > T * func_slow()) {
			fail_msg("spinning: nothing for %d ms at ctx %lu (%d posted)",
					T * func_slow(), (unsigned long)next,
					posted);
		}
	}
}

/* ------------------------- 7. the target dies inside a persist */

struct child_hello {
	char port[16];
	uint8_t desc[PMREP_MR_DESC_SIZE];
};

static int g_child_fd = -1;

/* the child's persist function: say so, then hang (until killed) */
static int
hanging_persist(void *ctx, const void *ptr, size_t size)
{
	(void) ctx;
	(void) ptr;
	(void) size;
	if (write(g_child_fd, "P", 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

#define CHILD_OK(x) do { if (!(x)) _exit(10 + (__LINE__ % 100)); } while (0)

static void
child_target(int wfd, bool hang)
{
	g_child_fd = wfd;
	struct pmrep_peer *peer = NULL;
	CHILD_OK(pmrep_peer_new_tcp(&peer) == 0);
	void *buf = NULL;
	CHILD_OK(posix_memalign(&buf, 4096, REGION) == 0);
	memset(buf, 0, REGION);
	struct pmrep_mr_local *mr = NULL;
	CHILD_OK(pmrep_mr_reg(peer, buf, REGION, PMREP_MR_USAGE_ALL, &mr) == 0);
	if (hang)
		CHILD_OK(pmrep_mr_set_persist_fn(mr, hanging_persist, NULL) == 0);
	struct pmrep_ep *ep = NULL;
	CHILD_OK(pmrep_ep_listen(peer, "127.0.0.1", "0", &ep) == 0);
	uint16_t port = 0;
	CHILD_OK(pmrep_ep_get_port(ep, &port) == 0);
	struct child_hello h;
	memset(&h, 0, sizeof(h));
	snprintf(h.port, sizeof(h.port), "%u", port);
	CHILD_OK(pmrep_mr_get_descriptor(mr, h.desc) == 0);
	CHILD_OK(write(wfd, &h, sizeof(h)) == (ssize_t)sizeof(h));
	struct pmrep_conn_req *req = NULL;
	CHILD_OK(pmrep_ep_wait_conn_req(ep, NULL, 10000, &req) == 0);
	struct pmrep_conn *conn = NULL;
	CHILD_OK(pmrep_conn_req_connect(&req, NULL, &conn) == 0);
	for (;;)
		pause();
}

static void
read_all(int fd, void *buf, size_t len)
{
	uint8_t *b = buf;
	while (len > 0) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		assert_int_equal(poll(&pf, 1, 10000 * func_slow()), 1);
		ssize_t n = read(fd, b, len);
		if (n <= 0)
			fail_msg("the target process ended early");
		b += n;
		len -= (size_t)n;
	}
}

/* fork a child running child_target (`hang`: its persist never returns);
 * its hello read from *rfd (kept open: the child's end of the pipe) */
static pid_t
child_start(bool hang, int *rfd, struct child_hello *h)
{
	int pfd[2];
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		child_target(pfd[1], hang);
		_exit(0);
	}
	close(pfd[1]);
	read_all(pfd[0], h, sizeof(*h));
	*rfd = pfd[0];
	return pid;
}

/* a child target (child_start) and this process's conn to it, with a
 * local region of REGION bytes and the child's region as remote */
struct child_conn {
	pid_t pid;
	int rfd;
	struct pmrep_peer *peer;
	struct pmrep_conn_cfg *cfg;
	struct pmrep_conn *conn;
	struct pmrep_mr_remote *rmt;
	uint8_t *buf;
	struct pmrep_mr_local *mr;
	struct pmrep_cq *cq;
};

/* timeout_ms: the conn's cfg timeout (0: make_cfg's) */
static void
child_conn_open(struct child_conn *cc, bool hang, int timeout_ms)
{
	struct child_hello h;
	cc->pid = child_start(hang, &cc->rfd, &h);
	cc->peer = func_peer(false);
	cc->cfg = make_cfg(SQ, 8);
	if (timeout_ms > 0)
		assert_int_equal(pmrep_conn_cfg_set_timeout(cc->cfg,
				timeout_ms), 0);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(cc->peer, "127.0.0.1", h.port,
			cc->cfg, &req), 0);
	cc->conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &cc->conn), 0);
	func_expect_event(cc->conn, PMREP_CONN_ESTABLISHED, T * func_slow());
	cc->rmt = NULL;
	assert_int_equal(pmrep_mr_remote_from_descriptor(h.desc,
			sizeof(h.desc), &cc->rmt), 0);
	cc->buf = func_alloc(REGION);
	cc->mr = NULL;
	assert_int_equal(pmrep_mr_reg(cc->peer, cc->buf, REGION,
			PMREP_MR_USAGE_ALL, &cc->mr), 0);
	cc->cq = func_cq(cc->conn);
}

/* everything but the child (the caller reaps it) */
static void
child_conn_close(struct child_conn *cc)
{
	close(cc->rfd);
	assert_int_equal(pmrep_conn_delete(&cc->conn), 0);
	assert_int_equal(pmrep_mr_dereg(&cc->mr), 0);
	assert_int_equal(pmrep_mr_remote_delete(&cc->rmt), 0);
	pmrep_conn_cfg_delete(&cc->cfg);
	assert_int_equal(pmrep_peer_delete(&cc->peer), 0);
	free(cc->buf);
}

struct killer {
	int rfd;
	pid_t pid;
	long long killed_at;
	bool saw_persist;
};

static void *
killer_main(void *arg)
{
	struct killer *k = arg;
	char b;
	struct pollfd pf = { .fd = k->rfd, .events = POLLIN };
	if (poll(&pf, 1, 10000 * func_slow()) == 1 && read(k->rfd, &b, 1) == 1)
		k->saw_persist = b == 'P';
	usleep(100 * 1000);	/* the application is asleep in its wait */
	k->killed_at = func_now_ms();
	kill(k->pid, SIGKILL);
	return NULL;
}

static void
target_killed_inside_its_persist_while_the_app_is_in_cq_wait_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();	/* the persist function runs at a tcp target */
	for (int round = 0; round < 3; round++) {
		struct child_conn cc;
		child_conn_open(&cc, true, 0);
		pid_t pid = cc.pid;
		struct pmrep_conn *conn = cc.conn;
		struct pmrep_mr_remote *rmt = cc.rmt;
		struct pmrep_mr_local *mr = cc.mr;
		struct pmrep_cq *cq = cc.cq;

		struct killer k = { .rfd = cc.rfd, .pid = pid };
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, killer_main, &k), 0);
		/* round 1: two persists; else one */
		int nreq = round == 1 ? 4 : 2;
		for (int i = 0; i < nreq; i += 2) {
			assert_int_equal(pmrep_write(conn, rmt, (size_t)i * 64,
					mr, 0, 64, PMREP_F_COMPLETION_ALWAYS |
					(round == 2 ? PMREP_F_MORE : 0),
					(void *)(uintptr_t)(i + 1)), 0);
			assert_int_equal(pmrep_flush(conn, rmt, (size_t)i * 64,
					64, PMREP_FLUSH_TYPE_PERSISTENT,
					PMREP_F_COMPLETION_ALWAYS,
					(void *)(uintptr_t)(i + 2)), 0);
		}
		/* wait, in this thread, through the kill */
		struct pmrep_completion c[8];
		int got = 0;
		long long t0 = func_now_ms();
		while (got < nreq && func_now_ms() - t0 < 15000 * func_slow()) {
			int ret = pmrep_cq_wait(cq, 15000 * func_slow());
			if (ret != 0 && ret != PMREP_E_TIMEOUT)
				fail_msg("cq_wait: %s", pmrep_err_to_str(ret));
			int n = 0;
			if (pmrep_cq_get_completions(cq, c + got, 8 - got, &n) == 0)
				got += n;
		}
		long long done = func_now_ms();
		pthread_join(t, NULL);
		assert_true(k.saw_persist);
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		if (got != nreq)
			fail_msg("round %d: %d of %d outcomes", round, got, nreq);
		/* prompt: the socket's end wakes the waiting thread */
		if (done - k.killed_at > 2000 * func_slow())
			fail_msg("round %d: the wait returned %lld ms after the kill",
					round, done - k.killed_at);
		bool failed = false;
		for (int i = 0; i < nreq; i++) {
			assert_int_equal((uintptr_t)c[i].op_context,
					(uintptr_t)i + 1);
			if (c[i].status == PMREP_WC_SUCCESS) {
				assert_false(failed);
				/* a flush never succeeds: its persist hung */
				assert_int_equal(i % 2, 0);
			} else {
				failed = true;
			}
		}
		assert_true(failed);
		func_expect_no_completion(cq, 100);
		func_expect_event(conn, PMREP_CONN_LOST, T * func_slow());
		enum pmrep_conn_event ev;
		assert_int_equal(pmrep_conn_next_event(conn, &ev),
				PMREP_E_NO_EVENT);
		child_conn_close(&cc);
	}
}

/* a frozen target (SIGSTOP: its kernel still acknowledges) while the
 * application sleeps in one long pmrep_cq_wait: the request timeout
 * (8 x 250 ms, at least 2 s) ends it, whoever runs the timers */
static void
frozen_target_ends_one_long_cq_wait_with_the_request_timeout_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();	/* a frozen verbs target still answers RDMA */
	struct child_conn cc;
	child_conn_open(&cc, false, 250);
	pid_t pid = cc.pid;
	struct pmrep_conn *conn = cc.conn;
	struct pmrep_mr_remote *rmt = cc.rmt;
	struct pmrep_mr_local *mr = cc.mr;
	struct pmrep_cq *cq = cc.cq;
	/* one persist that completes: the conn works */
	assert_int_equal(pmrep_write(conn, rmt, 0, mr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	assert_int_equal(pmrep_flush(conn, rmt, 0, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)2), 0);
	struct pmrep_completion c[4];
	assert_int_equal(func_collect(cq, c, 2, T * func_slow()), 2);
	assert_int_equal(c[0].status, PMREP_WC_SUCCESS);
	assert_int_equal(c[1].status, PMREP_WC_SUCCESS);

	/* an event may still be pending from those two: take it, so that
	 * the wait below is woken by nothing but the end */
	int r0;
	while ((r0 = pmrep_cq_wait(cq, 0)) == 0)
		;
	assert_int_equal(r0, PMREP_E_TIMEOUT);
	func_expect_no_completion(cq, 0);

	kill(pid, SIGSTOP);
	int st;
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
	long long t0 = func_now_ms();
	assert_int_equal(pmrep_write(conn, rmt, 0, mr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS | PMREP_F_MORE, (void *)3), 0);
	assert_int_equal(pmrep_flush(conn, rmt, 0, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)4), 0);
	/* ONE wait, far longer than the request timeout */
	int ret = pmrep_cq_wait(cq, 20000 * func_slow());
	long long took = func_now_ms() - t0;
	assert_int_equal(ret, 0);
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(cq, c, 4, &n), 0);
	if (n < 2)	/* the rest follows at once */
		n += func_collect(cq, c + n, 2 - n, T * func_slow());
	assert_int_equal(n, 2);
	if (took > 4500 * func_slow())
		fail_msg("the wait returned after %lld ms", took);
	assert_int_equal((uintptr_t)c[0].op_context, 3);
	assert_int_equal(c[0].status, PMREP_WC_RETRY_EXCEEDED);
	assert_int_equal((uintptr_t)c[1].op_context, 4);
	assert_int_equal(c[1].status, PMREP_WC_FLUSHED);
	func_expect_event(conn, PMREP_CONN_LOST, T * func_slow());
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), PMREP_E_NO_EVENT);

	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	child_conn_close(&cc);
}

/* ------------------ 8. dereg of a source while its writes are held */

static void
dereg_of_a_held_writes_source_never_touches_it_and_ends_each_once_tcp(
		void **state)
{
	(void) state;
	FUNC_TCP_ONLY();	/* on verbs this is the application's bug */
	for (int round = 0; round < 6; round++) {
		struct pmrep_conn_cfg *cfg = make_cfg(64, 8);
		struct func_opts o = { .ccfg = cfg, .scfg = cfg };
		struct func_pair p;
		func_pair_open(&p, &o);
		struct func_mrs m;
		func_mrs_reg(&m, &p, REGION, PMREP_MR_USAGE_ALL);
		size_t big = (size_t)1 << 20;
		uint8_t *src = mmap(NULL, big, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(src != MAP_FAILED);
		memset(src, 0x5a, big);
		struct pmrep_mr_local *smr2 = NULL;
		assert_int_equal(pmrep_mr_reg(p.cpeer, src, big,
				PMREP_MR_USAGE_ALL, &smr2), 0);
		func_pattern(m.cbuf, REGION, 3);
		struct pmrep_cq *cq = func_cq(p.cconn);
		int n = 0;
		/* writes from the stable region, then from the doomed one,
		 * held (round odd) or sent at once (round even) */
		int more = round % 2 ? PMREP_F_MORE : 0;
		for (int i = 0; i < 4; i++, n++)
			assert_int_equal(pmrep_write(p.cconn, m.srmt,
					(size_t)i * 64, m.cmr, (size_t)i * 64,
					64, PMREP_F_COMPLETION_ALWAYS | more,
					(void *)(uintptr_t)(n + 1)), 0);
		size_t wl = round < 2 ? 64 : round < 4 ? SLOT : REGION / 2;
		for (int i = 0; i < 4; i++, n++)
			assert_int_equal(pmrep_write(p.cconn, m.srmt,
					REGION / 2 - (i == 0 ? 0 : 0),
					smr2, (size_t)i * wl, wl > REGION / 2 ?
					REGION / 2 : wl,
					PMREP_F_COMPLETION_ALWAYS | more,
					(void *)(uintptr_t)(n + 1)), 0);
		assert_int_equal(pmrep_mr_dereg(&smr2), 0);
		assert_int_equal(munmap(src, big), 0);	/* touched: SIGSEGV */
		assert_int_equal(pmrep_flush(p.cconn, m.srmt, 0, REGION,
				PMREP_FLUSH_TYPE_VISIBILITY,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(n + 1)), 0);
		n++;
		struct pmrep_completion c[16];
		int got = func_collect(cq, c, n, 2 * T * func_slow());
		if (got != n)
			fail_msg("round %d: %d of %d outcomes", round, got, n);
		func_expect_no_completion(cq, 100);
		bool failed = false;
		for (int i = 0; i < n; i++) {
			assert_int_equal((uintptr_t)c[i].op_context,
					(uintptr_t)i + 1);
			if (getenv("FUNC_VERBOSE"))
				print_message("round %d req %d: %s\n", round,
						i + 1,
						pmrep_wc_status_str(c[i].status));
			if (c[i].status == PMREP_WC_SUCCESS)
				assert_false(failed);
			else
				failed = true;
		}
		/* the first 4 came from a region nobody touched: a success
		 * among them landed */
		for (int i = 0; i < 4; i++)
			if (c[i].status == PMREP_WC_SUCCESS &&
					memcmp(m.sbuf + i * 64, m.cbuf + i * 64, 64))
				fail_msg("round %d: write %d succeeded, its bytes are not at the target",
						round, i + 1);
		func_pair_close_all(&p, &m);
		pmrep_conn_cfg_delete(&cfg);
	}
}

/* -------------------- 9. many conns, one thread waits on each in turn */

static void
many_conns_waited_round_robin_from_one_thread(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	enum { NC = 32, ROUNDS = 60 };
	struct pmrep_conn_cfg *cfg = make_cfg(8, 4);
	struct func_pair p;
	func_pair_listen(&p);
	struct pmrep_conn *cc[NC], *sc[NC];
	for (int i = 0; i < NC; i++)
		func_connect(&p, cfg, cfg, &cc[i], &sc[i]);
	struct func_mrs m;
	/* one region pair for all: conn i owns slot i */
	func_mrs_reg(&m, &p, REGION, PMREP_MR_USAGE_ALL);
	g_sbuf = m.sbuf;
	for (int i = 0; i < NSLOTS; i++)
		atomic_store(&g_persisted[i], 0);
	if (func_is_tcp())
		assert_int_equal(pmrep_mr_set_persist_fn(m.smr, record_persist, NULL),
				0);
	enum pmrep_flush_type type = persistent_or_visible(cc[0]);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < NC; i++) {
			/* persist number r * NSLOTS + i lives in slot i */
			int k = r * NSLOTS + i;
			fill_slot(m.cbuf, k);
			post_persist(cc[i], &m, k, (r + i) % 2 == 0, type);
		}
		for (int j = 0; j < NC; j++) {
			int i = (j * 7 + r) % NC;	/* a varying order */
			int k = r * NSLOTS + i;
			uintptr_t next = (uintptr_t)(2 * k + 1);
			struct pmrep_cq *cq = func_cq(cc[i]);
			long long t0 = func_now_ms();
			while (next < (uintptr_t)(2 * k + 3)) {
				if (func_now_ms() - t0 > T * func_slow())
					fail_msg("round %d conn %d: no completion in %d ms",
							r, i, T * func_slow());
				struct pmrep_completion c[4];
				int n = 0;
				if (pmrep_cq_get_completions(cq, c, 4, &n) == 0) {
					for (int q = 0; q < n; q++)
						check_in_order(&c[q], &next, &m,
								true);
					continue;
				}
				int ret = pmrep_cq_wait(cq, T);
				if (ret != 0)
					fail_msg("round %d conn %d: cq_wait %s",
							r, i, pmrep_err_to_str(ret));
			}
		}
	}
	g_sbuf = NULL;
	for (int i = 0; i < NC; i++) {
		assert_int_equal(pmrep_conn_delete(&cc[i]), 0);
		assert_int_equal(pmrep_conn_delete(&sc[i]), 0);
	}
	func_mrs_dereg(&m);
	func_pair_close(&p);
	pmrep_conn_cfg_delete(&cfg);
}

/* ----- 10. a disconnect while one thread posts and another waits */

struct racer {
	struct pmrep_conn *conn;
	struct func_mrs *m;
	atomic_int accepted;		/* posts that returned 0 */
	atomic_int ended;		/* their completions taken */
	atomic_bool stop;
	atomic_int refused_with;
};

/* every 5th request is unsignalled: a completion only on error */
#define UNSIGNALED(ctx) ((ctx) % 5 == 0)

static void *
racer_post_main(void *arg)
{
	struct racer *r = arg;
	int i = 0;
	while (!atomic_load(&r->stop)) {
		if (atomic_load(&r->accepted) - atomic_load(&r->ended) >= 16) {
			sched_yield();	/* the queue is full */
			continue;
		}
		int ret = pmrep_write(r->conn, r->m->srmt, (size_t)(i % 16) * 64,
				r->m->cmr, 0, 64, (UNSIGNALED(i + 1) ?
				PMREP_F_COMPLETION_ON_ERROR :
				PMREP_F_COMPLETION_ALWAYS) |
				(i % 3 == 0 ? PMREP_F_MORE : 0),
				(void *)(uintptr_t)(i + 1));
		if (ret == PMREP_E_AGAIN) {
			sched_yield();
			continue;
		}
		if (ret != 0) {
			atomic_store(&r->refused_with, ret);
			break;
		}
		atomic_fetch_add(&r->accepted, 1);
		i++;
	}
	return NULL;
}

/* round even: this side disconnects; odd: the remote side does */
static void
disconnect_while_posting_and_waiting_each_request_once(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	for (int round = 0; round < 12; round++) {
		bool remote = round % 2 == 1;
		struct pmrep_conn_cfg *cfg = make_cfg(16, 4);
		struct func_opts o = { .ccfg = cfg, .scfg = cfg };
		struct func_pair p;
		func_pair_open(&p, &o);
		struct func_mrs m;
		func_mrs_reg(&m, &p, REGION, PMREP_MR_USAGE_ALL);
		struct racer r;
		memset(&r, 0, sizeof(r));
		r.conn = p.cconn;
		r.m = &m;
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, racer_post_main, &r), 0);
		struct pmrep_cq *cq = func_cq(p.cconn);
		bool *seen = calloc(1u << 20, 1);
		assert_non_null(seen);
		int got = 0, errs = 0;
		long long t0 = func_now_ms();
		bool disc = false, joined = false;
		long long last = func_now_ms();
		for (;;) {
			if (!disc && func_now_ms() - t0 > 20 + (round / 2) * 15) {
				assert_int_equal(pmrep_conn_disconnect(remote ?
						p.sconn : p.cconn), 0);
				disc = true;
			}
			struct pmrep_completion c[16];
			int k = 0;
			if (pmrep_cq_get_completions(cq, c, 16, &k) == 0) {
				for (int j = 0; j < k; j++) {
					uintptr_t ctx = (uintptr_t)c[j].op_context;
					assert_true(ctx >= 1 && ctx < (1u << 20));
					if (seen[ctx])
						fail_msg("ctx %lu twice", (unsigned long)ctx);
					seen[ctx] = true;
					/* in order: ctx is the post number; a
					 * gap only for unsignalled successes,
					 * before the first error */
					int nx = atomic_load(&r.ended) + 1;
					for (int q = nx; q < (int)ctx; q++) {
						if (!UNSIGNALED(q) || errs > 0)
							fail_msg("round %d: ctx %lu before ctx %d",
									round,
									(unsigned long)ctx, q);
					}
					if (UNSIGNALED(ctx))
						assert_int_not_equal(c[j].status,
								PMREP_WC_SUCCESS);
					if (c[j].status != PMREP_WC_SUCCESS) {
						assert_int_equal(c[j].status,
								PMREP_WC_FLUSHED);
						errs++;
					} else {
						assert_int_equal(errs, 0);
					}
					got++;
					atomic_store(&r.ended, (int)ctx);
				}
				last = func_now_ms();
				continue;
			}
			if (remote && !joined && errs > 0) {
				/* the end reached this side: stop the poster
				 * (events are read on the posting thread's
				 * turn only: one thread per conn) */
				atomic_store(&r.stop, true);
				pthread_join(t, NULL);
				joined = true;
				last = func_now_ms();
			}
			if (joined || atomic_load(&r.refused_with) != 0) {
				int e = atomic_load(&r.ended);
				int a = atomic_load(&r.accepted);
				if (e == a)
					break;
				/* the rest: unsignalled successes only,
				 * which say nothing */
				bool silent = errs == 0;
				for (int q = e + 1; q <= a; q++)
					silent = silent && UNSIGNALED(q);
				if (silent && func_now_ms() - last > 300)
					break;
			}
			if (func_now_ms() - last > T * func_slow())
				fail_msg("round %d: %d of %d accepted requests ended (refused %s)",
						round, atomic_load(&r.ended),
						atomic_load(&r.accepted),
						pmrep_err_to_str(atomic_load(&r.refused_with)));
			int ret = pmrep_cq_wait(cq, 20);
			if (ret != 0 && ret != PMREP_E_TIMEOUT)
				fail_msg("cq_wait: %s", pmrep_err_to_str(ret));
		}
		if (!joined) {
			atomic_store(&r.stop, true);
			pthread_join(t, NULL);
		}
		if (!remote)
			assert_int_equal(atomic_load(&r.refused_with),
					PMREP_E_CONN_LOST);
		func_expect_no_completion(cq, 100);
		func_expect_event(p.cconn, PMREP_CONN_CLOSED, T * func_slow());
		/* after the end: refused */
		assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, 64,
				PMREP_F_COMPLETION_ALWAYS, (void *)1),
				PMREP_E_CONN_LOST);
		func_expect_event(p.sconn, PMREP_CONN_CLOSED, T * func_slow());
		enum pmrep_conn_event ev;
		assert_int_equal(pmrep_conn_next_event(p.cconn, &ev),
				PMREP_E_NO_EVENT);
		free(seen);
		func_pair_close_all(&p, &m);
		pmrep_conn_cfg_delete(&cfg);
	}
}

/* ---- 11. this side's input stalls (a send, no receive) while it waits */

struct late_recv {
	struct pmrep_conn *conn;
	struct pmrep_mr_local *mr;
	int delay_ms;
};

static void *
late_recv_main(void *arg)
{
	struct late_recv *l = arg;
	usleep((useconds_t)l->delay_ms * 1000);
	assert_int_equal(pmrep_recv(l->conn, l->mr, REGION - 1024, 1024,
			(void *)(uintptr_t)777777), 0);
	return NULL;
}

static void
stalled_input_resumes_when_a_receive_is_posted_during_cq_wait(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	for (int round = 0; round < 4; round++) {
		/* the server's budget (its cfg timeout) outlasts the stall */
		struct pmrep_conn_cfg *cfg = make_cfg(SQ, 8);
		assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 3000), 0);
		struct func_opts o = { .ccfg = cfg, .scfg = cfg };
		struct func_pair p;
		func_pair_open(&p, &o);
		struct func_mrs m;
		func_mrs_reg(&m, &p, REGION, PMREP_MR_USAGE_ALL);
		func_pattern(m.sbuf + REGION - 4096, 1000, 31);
		/* the server sends; the client has no receive posted: its
		 * input stops at this SEND, ACKs to its own writes behind it */
		assert_int_equal(pmrep_send(p.sconn, m.smr, REGION - 4096, 1000,
				PMREP_F_COMPLETION_ALWAYS, (void *)(uintptr_t)5),
				0);
		usleep(20 * 1000);
		struct late_recv l = { .conn = p.cconn, .mr = m.cmr,
			.delay_ms = 50 + round * 100 };
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, late_recv_main, &l), 0);
		struct pmrep_cq *cq = func_cq(p.cconn);
		enum pmrep_flush_type type = persistent_or_visible(p.cconn);
		uintptr_t next = 1;
		bool recvd = false;
		for (int i = 0; i < 20; i++) {
			fill_slot(m.cbuf, i);
			post_persist(p.cconn, &m, i, i % 2 == 0, type);
			long long t0 = func_now_ms();
			while (next < (uintptr_t)(2 * i + 3)) {
				if (func_now_ms() - t0 > T * func_slow())
					fail_msg("round %d persist %d: not done in %d ms",
							round, i, T * func_slow());
				struct pmrep_completion c[4];
				int k = 0;
				if (pmrep_cq_get_completions(cq, c, 4, &k) != 0) {
					int ret = pmrep_cq_wait(cq, T);
					if (ret != 0 && ret != PMREP_E_TIMEOUT)
						fail_msg("cq_wait %s",
							pmrep_err_to_str(ret));
					continue;
				}
				for (int j = 0; j < k; j++) {
					if ((uintptr_t)c[j].op_context == 777777) {
						assert_false(recvd);
						assert_int_equal(c[j].status,
								PMREP_WC_SUCCESS);
						assert_int_equal(c[j].byte_len, 1000);
						assert_memory_equal(m.cbuf + REGION - 1024,
								m.sbuf + REGION - 4096,
								1000);
						recvd = true;
						continue;
					}
					check_in_order(&c[j], &next, &m, false);
				}
			}
		}
		pthread_join(t, NULL);
		if (!recvd) {
			struct pmrep_completion c = func_wait_one(cq, T);
			assert_int_equal((uintptr_t)c.op_context, 777777);
			assert_int_equal(c.status, PMREP_WC_SUCCESS);
		}
		struct pmrep_completion c = func_wait_one(func_cq(p.sconn), T);
		assert_int_equal((uintptr_t)c.op_context, 5);
		assert_int_equal(c.status, PMREP_WC_SUCCESS);
		func_pair_close_all(&p, &m);
		pmrep_conn_cfg_delete(&cfg);
	}
}

/* ---- 12. pmrep_cq_wait_any over conns whose threads post meanwhile */

#define ANY_NC 4

struct any_poster {
	struct pmrep_conn *conn;
	struct func_mrs *m;
	int idx, n;			/* conn idx posts persists idx, idx + NC, ... */
	atomic_int done;
	atomic_bool stop;
	enum pmrep_flush_type type;
};

static void *
any_poster_main(void *arg)
{
	struct any_poster *a = arg;
	for (int k = 0; k < a->n && !atomic_load(&a->stop); k++) {
		while (k - atomic_load(&a->done) >= SQ / 2 &&
				!atomic_load(&a->stop))
			sched_yield();
		int g = k * ANY_NC + a->idx;
		fill_slot(a->m->cbuf, g);
		post_persist(a->conn, a->m, g, k % 2 == 0, a->type);
	}
	return NULL;
}

static void
cq_wait_any_over_conns_posted_from_their_own_threads(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	const int n = 600;	/* persists per conn */
	struct pmrep_conn_cfg *cfg = make_cfg(SQ, 4);
	struct func_pair p;
	func_pair_listen(&p);
	struct pmrep_conn *cc[ANY_NC], *sc[ANY_NC];
	for (int i = 0; i < ANY_NC; i++)
		func_connect(&p, cfg, cfg, &cc[i], &sc[i]);
	struct func_mrs m;
	func_mrs_reg(&m, &p, REGION, PMREP_MR_USAGE_ALL);
	g_sbuf = m.sbuf;
	for (int i = 0; i < NSLOTS; i++)
		atomic_store(&g_persisted[i], 0);
	assert_int_equal(pmrep_mr_set_persist_fn(m.smr, record_persist, NULL), 0);
	struct any_poster a[ANY_NC];
	pthread_t t[ANY_NC];
	struct pmrep_cq *cqs[ANY_NC];
	uintptr_t next[ANY_NC];
	int k_of[ANY_NC];
	for (int i = 0; i < ANY_NC; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].conn = cc[i];
		a[i].m = &m;
		a[i].idx = i;
		a[i].n = n;
		a[i].type = persistent_or_visible(cc[i]);
		cqs[i] = func_cq(cc[i]);
		next[i] = (uintptr_t)(2 * i + 1);
		k_of[i] = 0;
		assert_int_equal(pthread_create(&t[i], NULL, any_poster_main,
				&a[i]), 0);
	}
	int total = 0;
	long long last = func_now_ms();
	while (total < ANY_NC * n) {
		int ret = pmrep_cq_wait_any(cqs, ANY_NC, 100);
		if (ret != 0 && ret != PMREP_E_TIMEOUT)
			fail_msg("cq_wait_any: %s", pmrep_err_to_str(ret));
		bool any = false;
		for (int i = 0; i < ANY_NC; i++) {
			struct pmrep_completion c[16];
			int k = 0;
			if (pmrep_cq_get_completions(cqs[i], c, 16, &k) != 0)
				continue;
			any = true;
			for (int j = 0; j < k; j++) {
				bool flush = (uintptr_t)c[j].op_context % 2 == 0;
				check_in_order(&c[j], &next[i], &m, true);
				if (flush) {
					/* conn i's next persist */
					k_of[i]++;
					next[i] = (uintptr_t)(2 * (k_of[i] *
						ANY_NC + i) + 1);
					atomic_fetch_add(&a[i].done, 1);
					total++;
				}
			}
		}
		if (any) {
			last = func_now_ms();
		} else if (func_now_ms() - last > T * func_slow()) {
			for (int i = 0; i < ANY_NC; i++)
				atomic_store(&a[i].stop, true);
			for (int i = 0; i < ANY_NC; i++)
				pthread_join(t[i], NULL);
			fail_msg("cq_wait_any: nothing for %d ms, %d of %d persists",
					T * func_slow(), total, ANY_NC * n);
		}
	}
	for (int i = 0; i < ANY_NC; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < ANY_NC; i++)
		func_expect_no_completion(cqs[i], 20);
	g_sbuf = NULL;
	for (int i = 0; i < ANY_NC; i++) {
		assert_int_equal(pmrep_conn_delete(&cc[i]), 0);
		assert_int_equal(pmrep_conn_delete(&sc[i]), 0);
	}
	func_mrs_dereg(&m);
	func_pair_close(&p);
	pmrep_conn_cfg_delete(&cfg);
}

/* ---------------------------------------------------------------- main */

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(poster_thread_and_cq_wait_thread_every_persist_once_in_order,
				setup, teardown),
		cmocka_unit_test_setup_teardown(poster_thread_and_cq_wait_zero_spinning_thread,
				setup, teardown),
		cmocka_unit_test_setup_teardown(poster_thread_and_fd_poll_thread,
				setup, teardown),
		cmocka_unit_test_setup_teardown(two_threads_wait_on_one_cq_while_a_third_posts,
				setup, teardown),
		cmocka_unit_test_setup_teardown(epoll_loop_mixed_with_cq_wait_loses_no_wakeup,
				setup, teardown),
		cmocka_unit_test(both_directions_on_one_conn_while_this_side_waits_in_cq_wait),
		cmocka_unit_test_setup_teardown(signals_storm_the_thread_in_cq_wait,
				setup, teardown),
		cmocka_unit_test(more_batch_left_open_is_released_by_get_completions_alone),
		cmocka_unit_test(sixteen_held_requests_post_themselves_and_disconnect_releases_the_rest),
		cmocka_unit_test_setup_teardown(post_and_spin_on_cq_wait_zero_in_one_thread,
				setup, teardown),
		cmocka_unit_test(target_killed_inside_its_persist_while_the_app_is_in_cq_wait_tcp),
		cmocka_unit_test(frozen_target_ends_one_long_cq_wait_with_the_request_timeout_tcp),
		cmocka_unit_test(dereg_of_a_held_writes_source_never_touches_it_and_ends_each_once_tcp),
		cmocka_unit_test(many_conns_waited_round_robin_from_one_thread),
		cmocka_unit_test(disconnect_while_posting_and_waiting_each_request_once),
		cmocka_unit_test(stalled_input_resumes_when_a_receive_is_posted_during_cq_wait),
		cmocka_unit_test(cq_wait_any_over_conns_posted_from_their_own_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
