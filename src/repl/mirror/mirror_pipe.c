/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_pipe.c -- the persist pipeline (docs/PROTOCOL.md "Mirror, persist
 * pipeline"): requests queue in submission order; a step carries the queue's
 * first request and the requests right behind it whose ranges overlap or
 * adjoin, posted back to back to every in-sync replica, up to the window of
 * steps not complete. A step is complete when the policy's k replicas
 * confirmed it (or can no longer: then it failed); steps retire -- their
 * requests complete -- in submission order. A replica that is not required
 * keeps confirming behind (its ring), and is turned out of sync once it trails
 * by more than the cfg lag or its ring is full (pull ahead).
 * Past ~800 lines: the pipeline, the resync's hold and the poll / wait calls
 * share its state; splitting them by responsibility is the next change here.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "mirror_int.h"

/* polls in a row that find only untaken events before that is logged */
#define POLL_EVENTS_UNTAKEN 1000

/* ------------------------------------------------------------- lists */

static void
list_push(struct req_list *l, struct async_req *q)
{
	q->next = NULL;
	if (l->tail)
		l->tail->next = q;
	else
		l->head = q;
	l->tail = q;
	l->n++;
}

static struct async_req *
list_pop(struct req_list *l)
{
	struct async_req *q = l->head;
	if (q) {
		l->head = q->next;
		if (l->head == NULL)
			l->tail = NULL;
		l->n--;
	}
	return q;
}

void
req_list_free(struct req_list *l)
{
	struct async_req *q;
	while ((q = list_pop(l)) != NULL)
		free(q);
}

/* arm (deadline >= 0) or disarm (-1) the timer of the mirror's fd; a
 * system call only when the deadline changes (it did for every request:
 * 6 % of a pipelined persist's cycles) */
static void
timer_set(struct pmrep_mirror *m, long long deadline)
{
	if (m->timer_set && m->timer_at == deadline)
		return;
	m->timer_set = true;
	m->timer_at = deadline;
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	if (deadline >= 0) {
		/* an absolute time: CLOCK_MONOTONIC like repl_now_ms(); +1
		 * ms so that it never fires before the deadline has passed */
		long long ms = deadline + 1;
		its.it_value.tv_sec = ms / 1000;
		its.it_value.tv_nsec = (ms % 1000) * 1000000;
	}
	(void) timerfd_settime(m->tfd, deadline >= 0 ? TFD_TIMER_ABSTIME : 0,
			&its, NULL);
}

/* ------------------------------------------------------------- steps */

static struct step *
step_at(struct pmrep_mirror *m, unsigned i)
{
	return &m->steps[(m->s_head + i) % PIPE_RING];
}

static struct step *
step_find(struct pmrep_mirror *m, uint64_t seq)
{
	for (unsigned i = 0; i < m->s_n; i++)
		if (step_at(m, i)->seq == seq)
			return step_at(m, i);
	return NULL;
}

bool
mirror_step_complete(const struct pmrep_mirror *m, uint64_t seq)
{
	struct step *st = step_find((struct pmrep_mirror *)m, seq);
	return st == NULL || st->complete;
}

static unsigned
bits(uint32_t v)
{
	return (unsigned)__builtin_popcount(v);
}

/* the replicas still holding a complete step trail it: their lag */
static void
step_mark_laggards(struct pmrep_mirror *m, const struct step *st)
{
	uint32_t behind = st->posted & ~st->acked & ~st->failed;
	for (unsigned i = 0; i < m->n; i++) {
		if (!(behind & (1u << i)))
			continue;
		struct replica *r = &m->r[i];
		for (unsigned j = 0; j < r->r_n; j++) {
			struct inflight *e = replica_ring_at(r, j);
			if (e->is_step && e->seq == st->seq && !e->lagging) {
				e->lagging = true;
				r->lag_inflight += e->len;
			}
		}
	}
}

/* is the step decided? k confirmations, or fewer than k still possible */
static void
step_settle(struct pmrep_mirror *m, struct step *st)
{
	if (st->complete)
		return;
	unsigned k = st->required;
	unsigned acked = bits(st->acked);
	unsigned alive = bits(st->posted & ~st->acked & ~st->failed);
	if (acked >= k) {
		st->result = 0;
	} else if (acked + alive < k) {
		/* "slow" and "gone" read alike until it is reconnected: a
		 * replica missing for having timed out makes it a timeout */
		bool timed_out = st->timed_out;
		for (unsigned i = 0; i < m->n; i++)
			if (!(st->posted & (1u << i)) &&
					m->r[i].last_error == PMREP_E_TIMEOUT &&
					m->r[i].state != PMREP_REPLICA_IN_SYNC)
				timed_out = true;
		st->result = timed_out ? PMREP_E_TIMEOUT : PMREP_E_CONN_LOST;
		PMREP_LOG_ERR("persist of %llu bytes at %llu: %u of %u replicas confirmed, %u required (%s)",
				(unsigned long long)st->len,
				(unsigned long long)st->off, acked,
				mirror_set_size(m), k,
				pmrep_err_to_str(st->result));
	} else {
		return;
	}
	st->complete = true;
	if (st->result == 0 && m->psn_base + st->seq > m->psn_done)
		m->psn_done = m->psn_base + st->seq;
	/* a failed step completed nothing: who confirms it later trails
	 * no completed persist */
	if (st->result == 0)
		step_mark_laggards(m, st);
}

void
mirror_step_ack(struct pmrep_mirror *m, uint64_t seq, unsigned idx)
{
	struct step *st = step_find(m, seq);
	if (st == NULL)
		return;
	st->acked |= 1u << idx;
	step_settle(m, st);
}

void
mirror_step_fail(struct pmrep_mirror *m, uint64_t seq, unsigned idx, int err)
{
	struct step *st = step_find(m, seq);
	if (st == NULL)
		return;
	st->failed |= 1u << idx;
	if (err == PMREP_E_TIMEOUT)
		st->timed_out = true;
	step_settle(m, st);
}

long long
mirror_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* a request's outcome is final (m->lock held): counted for the metrics */
static void
req_finish(struct pmrep_mirror *m, struct async_req *q, int result)
{
	q->result = q->local_err ? q->local_err : result;
	q->done = true;
	if (q->result == 0) {
		m->mx.persists_ok++;
		m->mx.persist_bytes += q->len;
	} else {
		m->mx.persists_failed[metrics_err_index(q->result)]++;
	}
	long long d = mirror_now_ns() - q->t0_ns;
	metrics_hist_observe(&m->mx.lat, d > 0 ? (uint64_t)d : 0);
	if (q->orphan)
		free(q);
	else if (!q->sync)
		list_push(&m->done, q);
}

/* complete steps leave the ring oldest first, completing their requests */
static void
pipe_retire(struct pmrep_mirror *m)
{
	while (m->s_n > 0 && step_at(m, 0)->complete) {
		struct step *st = step_at(m, 0);
		while (m->flight.head != NULL && m->flight.head->step == st->seq)
			req_finish(m, list_pop(&m->flight), st->result);
		m->s_head = (m->s_head + 1) % PIPE_RING;
		m->s_n--;
	}
}

static unsigned
steps_open(struct pmrep_mirror *m)
{
	unsigned n = 0;
	for (unsigned i = 0; i < m->s_n; i++)
		n += !step_at(m, i)->complete;
	return n;
}

/*
 * when the replicas must confirm a request's step: the caller's own limit
 * (a synchronous persist: -1 none), or for an asynchronous request or one
 * whose caller gave up, the cfg timeout from now
 */
static long long
req_deadline(const struct pmrep_mirror *m, const struct async_req *q)
{
	if (q->sync && !q->orphan && (q->deadline < 0 ||
			repl_left_ms(q->deadline) > 0))
		return q->deadline;
	return repl_deadline(m->cfg.timeout_ms);
}

static long long
earlier(long long a, long long b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/* what a persist does for a replica its recovery is resyncing */
enum sync_post {
	SP_MARK,	/* marks its regions: copied later */
	SP_POST,	/* is posted to it as well */
	SP_FULL,	/* would be posted, but its ring has no room */
};

/* region `reg` is one of a resync chunk in flight (m->lock held) */
static bool
in_chunk(const struct replica *r, size_t reg)
{
	for (unsigned i = 0; i < r->chunks; i++) {
		const struct rs_chunk *c = &r->fl[(r->fl_head + i) % RESYNC_DEPTH];
		if (reg >= c->first && reg < c->first + c->n)
			return true;
	}
	return false;
}

/*
 * a replica its recovery is resyncing, connected, not comparing digests,
 * with every region of [lo, hi) copied already (not out of sync) or being
 * copied (in a resync chunk in flight: the persist is posted after the
 * chunk on the same QP and lands after it, so the chunk's confirmation
 * clears the region all the same): a persist there is posted to it as well
 * when its ring has room (m->lock held). A region out of sync in no chunk
 * is copied later: the persist marks it.
 */
static enum sync_post
syncing_post(struct replica *r, uint64_t lo, uint64_t hi, unsigned entries)
{
	if (r->state != PMREP_REPLICA_SYNCING || r->conn == NULL ||
			r->rmr == NULL || !r->chan_ready || r->digesting)
		return SP_MARK;
	uint64_t rs = r->oos->region_size;
	for (uint64_t reg = lo / rs; reg <= (hi - 1) / rs; reg++)
		if (repl_bitmap_test(r->oos, (size_t)reg) &&
				!in_chunk(r, (size_t)reg))
			return SP_MARK;
	/* room left for the resync's own chunks (else marked: copied
	 * later, or the step waits: pipe_hold) */
	return replica_sync_room(r, entries) ? SP_POST : SP_FULL;
}

static bool
syncing_and_copied(struct replica *r, uint64_t lo, uint64_t hi,
		unsigned entries)
{
	return syncing_post(r, lo, hi, entries) == SP_POST;
}

/* bytes one step carries at most (replica_post_range) */
#define STEP_MAX ((uint64_t)(POST_WRS - 1) << 30)

/* a vector fits the room pipe_room() leaves for the steps in flight */
_Static_assert(PMREP_MIRROR_PERSISTV_MAX <= PMREP_MIRROR_WINDOW_MAX,
		"a vector's ranges fit a GPSPM replica's open entries");

/* a request's ranges: its vector, or its one range */
static const struct pmrep_range *
req_ranges(const struct async_req *q, struct pmrep_range *one, unsigned *n)
{
	if (q->nv > 0) {
		*n = q->nv;
		return q->v;
	}
	one->offset = (size_t)q->off;
	one->length = (size_t)q->len;
	*n = 1;
	return one;
}

/* a vector's ranges: all copied to a replica being resynced (SP_POST or,
 * without room, SP_FULL), or SP_MARK */
static enum sync_post
syncing_post_req(struct replica *r, const struct async_req *q)
{
	struct pmrep_range one;
	unsigned n;
	const struct pmrep_range *v = req_ranges(q, &one, &n);
	enum sync_post sp = SP_POST;
	for (unsigned i = 0; i < n; i++) {
		enum sync_post x = syncing_post(r, v[i].offset,
				v[i].offset + v[i].length, n);
		if (x == SP_MARK)
			return SP_MARK;
		if (x == SP_FULL)
			sp = SP_FULL;
	}
	return sp;
}

static bool
syncing_and_copied_req(struct replica *r, const struct async_req *q)
{
	return syncing_post_req(r, q) == SP_POST;
}

/* what a replica the step is not posted to misses: out of sync (and the
 * part of a resync chunk in flight: marked again after it) */
static void
mark_missed(struct replica *r, uint64_t lo, uint64_t hi)
{
	repl_bitmap_mark(r->oos, lo, hi - lo);
	uint64_t clo = r->chunk_lo, chi = r->chunk_hi;
	if (r->chunks != 0 && lo < chi && clo < hi)
		repl_bitmap_mark(&r->redirty, lo > clo ? lo : clo,
				(hi < chi ? hi : chi) - (lo > clo ? lo : clo));
}

/*
 * room for a step of `entries` ring entries on every in-sync replica of
 * the data path: its entries of steps not complete (not lagging) and
 * this step's at most as many as one entry per step fills at the largest
 * window -- GPSPM: PMREP_MIRROR_WINDOW_MAX, half the target's receives,
 * so that the target's replies whose send it has not reaped yet never
 * exhaust its send slots; else the ring. False: wait for the steps in
 * flight (only a vector can need that: one entry per step stays within
 * it by the window). A replica short of room because it trails
 * completed steps is pulled ahead when the post finds no room.
 */
static bool
pipe_room(struct pmrep_mirror *m, unsigned entries)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->removed || atomic_load(&r->owner) != OWN_DATA ||
				r->state != PMREP_REPLICA_IN_SYNC)
			continue;
		unsigned cap = r->method == PMREP_MIRROR_METHOD_GPSPM ?
			PMREP_MIRROR_WINDOW_MAX : PIPE_RING;
		if (r->r_n + entries <= cap)
			continue;
		unsigned open = 0;
		for (unsigned j = 0; j < r->r_n; j++)
			open += !replica_ring_at(r, j)->lagging;
		if (open + entries > cap)
			return false;
	}
	return true;
}

/* ------------------------------------------- the resync minimum's hold */

/*
 * the minimum net progress of a resync (pmrep_mirror_cfg_set_resync_min_rate;
 * 0: none), at most half the cfg resync rate when one is set -- the copies
 * are paced at that rate, and their net progress only approaches it
 */
static uint64_t
resync_min(const struct pmrep_mirror *m)
{
	uint64_t min = m->cfg.resync_min_rate;
	if (m->cfg.resync_rate > 0 && min > m->cfg.resync_rate / 2)
		min = m->cfg.resync_rate / 2;
	return min;
}

/*
 * how long a request may wait for a replica being resynced: until half of
 * its time is gone -- the caller's limit for a synchronous persist, else
 * the cfg timeout, from its submission -- so that the replicas it needs
 * still have the other half to confirm it
 */
static long long
req_hold_until(const struct pmrep_mirror *m, const struct async_req *q)
{
	long long limit = q->sync && !q->orphan && q->deadline >= 0 ?
		q->deadline : q->t0_ms + m->cfg.timeout_ms;
	return q->t0_ms + (limit - q->t0_ms) / 2;
}

/* the step that waited is posted: what its wait cost, per replica */
static void
hold_end(struct pmrep_mirror *m, long long now)
{
	if (m->hold_t0 < 0)
		return;
	for (unsigned i = 0; i < m->n; i++)
		if (m->hold_who & (1u << i))
			m->r[i].rs_held_ms += now - m->hold_t0;
	m->hold_t0 = -1;
	m->hold_who = 0;
}

/*
 * Does the next step wait (docs/PROTOCOL.md "Mirror, resync step")? It
 * does while, for a replica being resynced, every region of its ranges is
 * copied already, the replica's ring has no room for it, and that resync's
 * net progress is below the minimum (or not known yet): posted without
 * that replica it would mark those regions out of sync again, and a writer
 * faster than the replica would add work to the resync faster than it
 * removes it. It waits until the replica's recovery takes confirmations
 * and frees room (mirror_hold_wake), the replica leaves SYNCING (its
 * event), the progress is at the minimum again, or `until` -- then it is
 * posted as without a minimum. Only with background recovery: the replica
 * being resynced must be driven by a thread of its own meanwhile.
 */
static bool
pipe_hold(struct pmrep_mirror *m, const struct async_req *vec, uint64_t lo,
		uint64_t hi, long long until)
{
	uint64_t min = resync_min(m);
	if (min == 0 || !mirror_background(m))
		return false;
	long long now = repl_now_ms();
	if (now >= until) {
		if (m->hold_t0 >= 0)
			PMREP_LOG_RATELIMITED(PMREP_LOG_WARNING, "mirror: a persist waited %lld ms for a replica being resynced, half of its time: posted without it, its regions are copied again",
					now - m->hold_t0);
		return false;
	}
	uint32_t mask = 0;
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->removed || (atomic_load(&r->owner) == OWN_DATA &&
				r->state == PMREP_REPLICA_IN_SYNC))
			continue;
		enum sync_post sp = vec != NULL ? syncing_post_req(r, vec) :
			syncing_post(r, lo, hi, 1);
		if (sp != SP_FULL)
			continue;
		uint64_t net = 0;
		if (replica_net_rate(r, now, &net) && net >= min)
			continue;
		mask |= 1u << i;
	}
	if (mask == 0)
		return false;
	if (m->hold_t0 < 0)
		m->hold_t0 = now;
	for (unsigned i = 0; i < m->n; i++)
		if ((mask & (1u << i)) && !(m->hold_who & (1u << i)))
			m->r[i].rs_holds++;
	m->hold_who |= mask;
	m->hold_mask = mask;
	m->hold_entries = vec != NULL ? vec->nv : 1;
	m->hold_until = until;
	m->held = true;
	return true;
}

void
mirror_hold_wake(struct replica *r)
{
	struct pmrep_mirror *m = r->m;
	if (!(m->hold_mask & (1u << r->idx)) ||
			!replica_sync_room(r, m->hold_entries))
		return;
	m->hold_mask &= ~(1u << r->idx);
	m->hold_wake = true;
	mirror_signal(m);
	(void) pthread_cond_broadcast(&m->cond);
}

/* post the next step from the queue; false when none can be posted */
static bool
pipe_post_one(struct pmrep_mirror *m)
{
	m->held = false;
	if (m->queue.n == 0 || m->s_n == PIPE_RING || steps_open(m) >= m->window)
		return false;
	const struct async_req *vec = m->queue.head->nv > 0 ? m->queue.head : NULL;
	if (!pipe_room(m, vec ? vec->nv : 1))
		return false;
	/* the step: the queue's first request and, group commit, the
	 * requests right behind it that overlap or adjoin (a vector is a
	 * step of its own) */
	struct async_req *q = m->queue.head;
	uint64_t lo = q->off, hi = q->off + q->len;
	long long hold_until = req_hold_until(m, q);
	unsigned take = 1;
	while (vec == NULL && (q = q->next) != NULL && q->nv == 0 &&
			q->off <= hi && q->off + q->len >= lo) {
		uint64_t nlo = q->off < lo ? q->off : lo;
		uint64_t nhi = q->off + q->len > hi ? q->off + q->len : hi;
		if (nhi - nlo > STEP_MAX)
			break;
		lo = nlo;
		hi = nhi;
		long long u = req_hold_until(m, q);
		if (u < hold_until)
			hold_until = u;
		take++;
	}
	if (pipe_hold(m, vec, lo, hi, hold_until))
		return false;
	hold_end(m, repl_now_ms());
	long long deadline = -1;
	struct req_list mine = { 0 };
	for (unsigned i = 0; i < take; i++) {
		q = list_pop(&m->queue);
		deadline = i == 0 ? req_deadline(m, q) :
			earlier(deadline, req_deadline(m, q));
		list_push(&mine, q);
	}
	struct step *st = step_at(m, m->s_n);
	*st = (struct step){ .seq = mirror_next_seq(m), .off = lo, .len = hi - lo,
		.deadline = deadline, .required = mirror_required(m) };
	m->s_n++;
	m->psn_last = m->psn_base + st->seq;
	while ((q = list_pop(&mine)) != NULL) {
		q->step = st->seq;
		list_push(&m->flight, q);
	}
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->removed)
			continue;
		if (atomic_load(&r->owner) != OWN_DATA ||
				r->state != PMREP_REPLICA_IN_SYNC) {
			/* being resynced, and the range is copied already:
			 * it goes there too, after the chunks on the same QP,
			 * so that it stays copied (the resync converges);
			 * its recovery takes the confirmation (not counted) */
			if (vec == NULL && syncing_and_copied(r, lo, hi, 1) &&
					replica_post_range(r, lo, hi - lo, st->seq,
						false, deadline) == 0) {
				replica_ring_at(r, r->r_n - 1)->al = true;
				continue;
			}
			if (vec != NULL && syncing_and_copied_req(r, vec) &&
					replica_post_vec(r, vec->v, vec->nv,
						st->seq, false, true, deadline) == 0)
				continue;
			/* else its recovery copies it; the regions of the
			 * chunks in flight it marks stay marked after them */
			if (vec == NULL)
				mark_missed(r, lo, hi);
			else
				for (unsigned j = 0; j < vec->nv; j++)
					mark_missed(r, vec->v[j].offset,
						vec->v[j].offset + vec->v[j].length);
			continue;
		}
		int ret = vec == NULL ?
			replica_post_range(r, lo, hi - lo, st->seq, true, deadline) :
			replica_post_vec(r, vec->v, vec->nv, st->seq, true, false,
					deadline);
		if (ret == PMREP_E_AGAIN) {
			/* its ring is full of steps the others confirmed */
			PMREP_LOG_WARN("replica %u (%s:%s) is %u steps behind: out of sync from here (pull ahead), resynced when it is reconnected",
					r->idx, r->addr, r->port, r->r_n);
			ret = PMREP_E_TIMEOUT;
		}
		if (ret) {
			/* the ranges not posted: out of sync too (the posted
			 * ones are, as its ring is abandoned) */
			if (vec != NULL)
				for (unsigned j = 0; j < vec->nv; j++)
					repl_bitmap_mark(r->oos, vec->v[j].offset,
							vec->v[j].length);
			replica_fail(r, ret, lo, vec ? 0 : hi - lo);
			continue;
		}
		st->posted |= 1u << i;
	}
	step_settle(m, st);
	return true;
}

/* replicas that trail the completed steps by more than the cfg lag */
static void
pipe_pull_ahead(struct pmrep_mirror *m)
{
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (atomic_load(&r->owner) != OWN_DATA || r->r_n == 0 ||
				r->lag_inflight <= m->max_lag)
			continue;
		PMREP_LOG_WARN("replica %u (%s:%s) trails the confirmed persists by %llu bytes (lag limit %llu): out of sync from here (pull ahead), resynced when it is reconnected",
				r->idx, r->addr, r->port,
				(unsigned long long)r->lag_inflight,
				(unsigned long long)m->max_lag);
		replica_fail(r, PMREP_E_TIMEOUT, 0, 0);
	}
}

/* nothing of a step is in flight on any replica */
bool
mirror_pipe_idle(struct pmrep_mirror *m)
{
	if (m->queue.n != 0 || m->s_n != 0)
		return false;
	/* steps, and persists posted to a replica being resynced (its
	 * recovery changes its ring under m->lock, which the caller holds) */
	for (unsigned i = 0; i < m->n; i++)
		for (unsigned j = 0; j < m->r[i].r_n; j++) {
			const struct inflight *e = replica_ring_at(&m->r[i], j);
			if (e->is_step || e->al)
				return false;
		}
	return true;
}

/*
 * the lazy clear of the activity log, with nothing in flight: a queued
 * request is persisted locally and its regions were marked when it was
 * submitted; a step a replica has not confirmed -- even one complete
 * without it -- is neither on it nor in its OOS yet
 */
int
mirror_al_clear(struct pmrep_mirror *m)
{
	if (!mirror_pipe_idle(m))
		return 0;
	return mstate_al_clear(m->state, false);
}

void
mirror_pipe_advance(struct pmrep_mirror *m)
{
	long long next = -1;
	/* nothing here waits: the recovery threads wait for it briefly */
	mirror_lock(m);
	m->hold_wake = false;	/* looked at now */
	for (;;) {
		for (unsigned i = 0; i < m->n; i++) {
			struct replica *r = &m->r[i];
			if (atomic_load(&r->owner) != OWN_DATA || r->r_n == 0 ||
					r->conn == NULL)
				continue;
			int ret = replica_progress(r);
			if (ret) {
				replica_fail(r, ret, 0, 0);
				continue;
			}
			if (r->r_n > 0 &&
					repl_left_ms(replica_ring_at(r, 0)->deadline) == 0) {
				PMREP_LOG_ERR("replica %u (%s:%s) did not confirm a persist of %llu bytes at %llu in time",
						r->idx, r->addr, r->port,
						(unsigned long long)replica_ring_at(r, 0)->len,
						(unsigned long long)replica_ring_at(r, 0)->off);
				replica_fail(r, PMREP_E_TIMEOUT, 0, 0);
			}
		}
		pipe_pull_ahead(m);
		pipe_retire(m);
		bool posted = false;
		while (pipe_post_one(m))
			posted = true;
		if (!posted)
			break;
	}
	(void) mirror_al_clear(m);
	for (unsigned i = 0; i < m->n; i++)
		if (atomic_load(&m->r[i].owner) == OWN_DATA && m->r[i].r_n > 0)
			next = earlier(next, replica_ring_at(&m->r[i], 0)->deadline);
	/* a step that waits for a replica being resynced waits so long at
	 * most (the room its recovery frees wakes the fd before) */
	if (m->held)
		next = earlier(next, m->hold_until);
	timer_set(m, next);
	mirror_signal(m);
	mirror_unlock(m);
}

int
mirror_pipe_submit(struct pmrep_mirror *m, struct async_req *q)
{
#if defined(PMREP_TEST_SLOW_PERSIST_US) && PMREP_TEST_SLOW_PERSIST_US > 0
	/* exists only to prove the bench stage's regression guard
	 * (bench/guard.sh) fails on a slower mirror: a test build's
	 * -DPMREP_TEST_SLOW_PERSIST_US=N spins N us per persist and
	 * persist_async request; not in any real build */
	for (long long end = mirror_now_ns() + PMREP_TEST_SLOW_PERSIST_US * 1000ll;
			mirror_now_ns() < end;)
		;
#endif
	/* the record covers the range before it is persisted here or
	 * posted: what is durable locally and not confirmed by a replica is
	 * always in AL or in that replica's OOS */
	q->t0_ns = mirror_now_ns();
	q->t0_ms = repl_now_ms();
	mirror_lock(m);
	struct pmrep_range one;
	unsigned n;
	const struct pmrep_range *v = req_ranges(q, &one, &n);
	int ret = 0;
	for (unsigned i = 0; i < n && ret == 0; i++)
		ret = mstate_al_mark(m->state, v[i].offset, v[i].length);
	if (ret == 0)
		list_push(&m->queue, q);
	mirror_unlock(m);
	if (ret)
		PMREP_LOG_ERR("persist of %llu bytes at %llu: the mirror's record could not be written (%s): nothing persisted or posted",
				(unsigned long long)q->len,
				(unsigned long long)q->off, pmrep_err_to_str(ret));
	return ret;
}

/* wait on the mirror's cond up to `ms` (m->lock held; CLOCK_MONOTONIC,
 * as the cond is made) */
static void
cond_wait_ms(struct pmrep_mirror *m, int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long long ns = ts.tv_nsec + (long long)ms * 1000000ll;
	ts.tv_sec += (time_t)(ns / 1000000000ll);
	ts.tv_nsec = (long)(ns % 1000000000ll);
	(void) pthread_cond_timedwait(&m->cond, &m->lock, &ts);
}

/* while a step waits: how often the waiter looks again at most, and how
 * long it waits on the data path's completions before it looks at the
 * hold (what frees the room is another thread's) */
#define HOLD_SLICE_MS 50
#define HOLD_CQ_SLICE_MS 2

int
mirror_pipe_wait(struct pmrep_mirror *m, int slice_ms)
{
	mirror_lock(m);
	bool held = m->held;
	long long until = m->hold_until;
	mirror_unlock(m);
	if (!held)
		return mirror_wait_any(m, slice_ms);
	long long left = until - repl_now_ms();
	int ms = slice_ms < 0 || slice_ms > HOLD_SLICE_MS ? HOLD_SLICE_MS : slice_ms;
	if (left < ms)
		ms = left > 1 ? (int)left : 1;
	/* completions of the steps in flight first, briefly */
	int nw = mirror_wait_any(m, ms < HOLD_CQ_SLICE_MS ? ms : HOLD_CQ_SLICE_MS);
	if (nw > 0)
		return nw;
	/* then the wake: room, an event, a broadcast of any kind */
	mirror_lock(m);
	if (m->held && !m->hold_wake)
		cond_wait_ms(m, ms);
	mirror_unlock(m);
	return 1;
}

void
mirror_pipe_drain(struct pmrep_mirror *m, long long deadline)
{
	mirror_pipe_advance(m);
	while (!mirror_pipe_idle(m)) {
		int left = repl_left_ms(deadline);
		if (left == 0)
			break;
		int nw = mirror_pipe_wait(m, left);
		mirror_pipe_advance(m);
		if (nw == 0 && !mirror_pipe_idle(m))
			break;	/* what is left no replica of the data path holds */
	}
}

/* ---------------------------------------------------------- vectors */

static int
range_cmp(const void *a, const void *b)
{
	const struct pmrep_range *x = a, *y = b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int
mirror_req_vec(const struct pmrep_mirror *m, const struct pmrep_range *v,
		unsigned n, struct async_req **out)
{
	CHECK_ARG(v);
	if (n == 0 || n > PMREP_MIRROR_PERSISTV_MAX) {
		PMREP_LOG_ERR("a vectored persist takes 1 to %u ranges, got %u",
				PMREP_MIRROR_PERSISTV_MAX, n);
		return PMREP_E_INVAL;
	}
	for (unsigned i = 0; i < n; i++)
		if (v[i].offset > m->size || v[i].length > m->size - v[i].offset) {
			PMREP_LOG_ERR("vectored persist: range %u (%zu bytes at %zu) is outside the %zu-byte mapping: nothing persisted",
					i, v[i].length, v[i].offset, m->size);
			return PMREP_E_RANGE;
		}
	struct async_req *q = calloc(1, sizeof(*q) + n * sizeof(q->v[0]));
	if (q == NULL) {
		PMREP_LOG_ERR("out of memory for a vectored persist");
		return PMREP_E_NOMEM;
	}
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		if (v[i].length > 0)
			q->v[k++] = v[i];
	qsort(q->v, k, sizeof(q->v[0]), range_cmp);
	/* overlapping and adjoining ranges merge (a range stays within
	 * what one post carries) */
	unsigned w = 0;
	for (unsigned i = 0; i < k; i++) {
		struct pmrep_range *p = w > 0 ? &q->v[w - 1] : NULL;
		uint64_t end = (uint64_t)q->v[i].offset + q->v[i].length;
		if (p != NULL && q->v[i].offset <= p->offset + p->length) {
			uint64_t pend = (uint64_t)p->offset + p->length;
			uint64_t nend = end > pend ? end : pend;
			if (nend - p->offset <= STEP_MAX) {
				p->length = (size_t)(nend - p->offset);
				continue;
			}
		}
		q->v[w++] = q->v[i];
	}
	if (w > 0) {
		q->off = q->v[0].offset;
		q->len = (uint64_t)q->v[w - 1].offset + q->v[w - 1].length - q->off;
	}
	/* one range (or none): a plain request */
	q->nv = w > 1 ? w : 0;
	q->deadline = -1;
	*out = q;
	return 0;
}

int
mirror_req_persist_local(struct pmrep_mirror *m, const struct async_req *q)
{
	struct pmrep_range one;
	unsigned n;
	const struct pmrep_range *v = req_ranges(q, &one, &n);
	int first = 0;
	for (unsigned i = 0; i < n; i++) {
		if (v[i].length == 0)
			continue;
		int ret = pmrep_pmem_persist(m->pmem, m->base + v[i].offset,
				v[i].length);
		if (ret && first == 0)
			first = ret;
	}
	return first;
}

/* ---------------------------------------------- asynchronous interface */

/* submit an asynchronous request (freed here on an error) */
static int
async_submit(struct pmrep_mirror *m, struct async_req *q, void *ctx)
{
	q->ctx = ctx;
	if (q->len == 0) {
		q->done = true;
		mirror_lock(m);
		list_push(&m->done, q);		/* nothing to make durable */
		mirror_signal(m);
		mirror_unlock(m);
		return 0;
	}
	int ret = mirror_pipe_submit(m, q);
	if (ret) {
		free(q);
		return ret;
	}
	if (mirror_req_persist_local(m, q) != 0) {
		/* posted all the same (the replicas get what the mapping
		 * holds), but its outcome is this failure */
		PMREP_LOG_ERR("asynchronous persist of %llu bytes at %llu%s: the local persist failed",
				(unsigned long long)q->len,
				(unsigned long long)q->off,
				q->nv > 0 ? " (a vector's span)" : "");
		q->local_err = PMREP_E_PROVIDER;
	}
	mirror_pipe_advance(m);
	return 0;
}

int
pmrep_mirror_persist_async(struct pmrep_mirror *m, size_t offset,
		size_t length, void *ctx)
{
	CHECK_ARG(m);
	if (offset > m->size || length > m->size - offset) {
		PMREP_LOG_ERR("persist of %zu bytes at %zu is outside the %zu-byte mapping",
				length, offset, m->size);
		return PMREP_E_RANGE;
	}
	if (m->queue.n + m->flight.n + m->done.n >= ASYNC_MAX) {
		PMREP_LOG_ERR("%d asynchronous persists outstanding: poll their completions first",
				ASYNC_MAX);
		return PMREP_E_AGAIN;
	}
	struct async_req *q = calloc(1, sizeof(*q));
	if (q == NULL) {
		PMREP_LOG_ERR("out of memory for an asynchronous persist");
		return PMREP_E_NOMEM;
	}
	q->off = offset;
	q->len = length;
	q->deadline = -1;
	return async_submit(m, q, ctx);
}

int
pmrep_mirror_persistv_async(struct pmrep_mirror *m,
		const struct pmrep_range *ranges, unsigned n, void *ctx)
{
	CHECK_ARG(m);
	struct async_req *q;
	int ret = mirror_req_vec(m, ranges, n, &q);
	if (ret)
		return ret;
	if (m->queue.n + m->flight.n + m->done.n >= ASYNC_MAX) {
		free(q);
		PMREP_LOG_ERR("%d asynchronous persists outstanding: poll their completions first",
				ASYNC_MAX);
		return PMREP_E_AGAIN;
	}
	return async_submit(m, q, ctx);
}

int
pmrep_mirror_get_fd(const struct pmrep_mirror *m, int *fd)
{
	CHECK_ARG(m);
	CHECK_ARG(fd);
	*fd = m->epfd;
	return 0;
}

int
pmrep_mirror_poll(struct pmrep_mirror *m, struct pmrep_mirror_completion *out,
		int max, int *n)
{
	CHECK_ARG(m);
	CHECK_ARG(out);
	CHECK_ARG(n);
	if (max <= 0) {
		PMREP_LOG_ERR("pmrep_mirror_poll: max must be > 0, got %d", max);
		return PMREP_E_INVAL;
	}
	*n = 0;
	mirror_lock(m);
	/* the timer's expiry is consumed once its deadline has passed: a
	 * read of the timerfd before that would be a system call per poll
	 * that finds nothing */
	if (m->timer_set && m->timer_at >= 0 &&
			repl_now_ms() > m->timer_at) {
		uint64_t v;
		(void) !read(m->tfd, &v, sizeof(v));
	}
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (atomic_load(&r->owner) != OWN_DATA || r->conn == NULL)
			continue;
		/* take the CQ's event and re-arm before draining it, so that
		 * a completion arriving meanwhile fires again */
		repl_chan_ack_cq(&r->ch);
		if (r->r_n == 0) {
			/* an idle connection's end: fail the replica now so
			 * that its event fd leaves the epoll set */
			int ret = repl_chan_check_conn(&r->ch);
			if (ret)
				replica_fail(r, ret, 0, 0);
		}
	}
	mirror_pipe_advance(m);
	while (*n < max && m->done.n > 0) {
		struct async_req *q = list_pop(&m->done);
		out[*n].ctx = q->ctx;
		out[*n].result = q->result;
		out[*n].offset = (size_t)q->off;
		out[*n].length = (size_t)q->len;
		(*n)++;
		free(q);
	}
	/* events left untaken keep the fd readable: say so once to a caller
	 * that polls on and on for nothing (it is spinning on the fd) */
	if (*n == 0 && m->ev_n > 0) {
		if (++m->ev_idle_polls == POLL_EVENTS_UNTAKEN && !m->ev_warned) {
			m->ev_warned = true;
			PMREP_LOG_WARN("mirror: %u polls in a row found only replica state changes waiting (%u): the mirror's fd stays readable until they are taken with pmrep_mirror_get_event -- a loop that waits on the fd without taking them never sleeps",
					m->ev_idle_polls, m->ev_n);
		}
	} else {
		m->ev_idle_polls = 0;
	}
	mirror_signal(m);
	mirror_unlock(m);
	return 0;
}
