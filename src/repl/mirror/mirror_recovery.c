/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_recovery.c -- who drives a replica's recovery (docs/DESIGN.md "The
 * mirror's threads"): with background recovery (the default) each replica has
 * a thread of its own that reconnects it after its back-off, re-authenticates,
 * resyncs it while the application's persists go on, and hands it back to the
 * data path once it is identical; without it, pmrep_mirror_reconnect does the
 * same in the caller's thread. Also the mirror's lock, its state-change events
 * and the eventfd that signals them.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "mirror_int.h"

/* ---------------------------------------------------- lock and events */

int
mirror_sync_init(struct pmrep_mirror *m)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	if (pthread_mutexattr_init(&ma) != 0)
		return PMREP_E_NOMEM;
	(void) pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	int e = pthread_mutex_init(&m->lock, &ma);
	(void) pthread_mutexattr_destroy(&ma);
	if (e != 0)
		return PMREP_ERR_PROVIDER(e, "pthread_mutex_init");
	if (pthread_condattr_init(&ca) != 0) {
		(void) pthread_mutex_destroy(&m->lock);
		return PMREP_E_NOMEM;
	}
	(void) pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	e = pthread_cond_init(&m->cond, &ca);
	(void) pthread_condattr_destroy(&ca);
	if (e != 0) {
		(void) pthread_mutex_destroy(&m->lock);
		return PMREP_ERR_PROVIDER(e, "pthread_cond_init");
	}
	return 0;
}

void
mirror_sync_fini(struct pmrep_mirror *m)
{
	(void) pthread_cond_destroy(&m->cond);
	(void) pthread_mutex_destroy(&m->lock);
}

void
mirror_signal(struct pmrep_mirror *m)
{
	/* a system call only when it changes (m->lock serializes) */
	uint64_t v;
	bool want = m->done.n > 0 || m->ev_n > 0 || m->hold_wake;
	if (want == m->efd_up)
		return;
	if (want) {
		v = 1;
		(void) !write(m->efd, &v, sizeof(v));
	} else {
		(void) !read(m->efd, &v, sizeof(v));
	}
	m->efd_up = want;
}

void
mirror_event(struct pmrep_mirror *m, unsigned idx,
		enum pmrep_replica_state from, enum pmrep_replica_state to, int err)
{
	if (m->ev_n == MIRROR_EVENTS) {
		/* the oldest goes; the one after it says so */
		m->ev_head = (m->ev_head + 1) % MIRROR_EVENTS;
		m->ev_n--;
		m->ev[m->ev_head].lost++;
	}
	struct pmrep_mirror_event *e = &m->ev[(m->ev_head + m->ev_n) % MIRROR_EVENTS];
	*e = (struct pmrep_mirror_event){ .replica = idx, .from = from,
		.to = to, .error = to == PMREP_REPLICA_FAILED ? err : 0 };
	m->ev_n++;
	/* an error made it FAILED (an added replica's first state, FAILED
	 * while it attaches, is none) */
	if (to == PMREP_REPLICA_FAILED && from != PMREP_REPLICA_FAILED &&
			err != 0 && idx < PMREP_MIRROR_MAX_REPLICAS)
		m->r[idx].failures[metrics_err_index(err)]++;
	if (m->efd >= 0)
		mirror_signal(m);
	(void) pthread_cond_broadcast(&m->cond);
}

int
pmrep_mirror_get_event(struct pmrep_mirror *m, struct pmrep_mirror_event *ev)
{
	CHECK_ARG(m);
	CHECK_ARG(ev);
	mirror_lock(m);
	if (m->ev_n == 0) {
		mirror_unlock(m);
		return PMREP_E_AGAIN;
	}
	*ev = m->ev[m->ev_head];
	m->ev_head = (m->ev_head + 1) % MIRROR_EVENTS;
	m->ev_n--;
	mirror_signal(m);
	mirror_unlock(m);
	return 0;
}

/* ------------------------------------------------------- hand-overs */

/* add the replica's CQ and event fds to the mirror's epoll fd */
static void
epoll_add(struct replica *r)
{
	int fds[2];
	if (r->m->epfd < 0 || r->conn == NULL ||
			repl_chan_fds(&r->ch, &fds[0], &fds[1]) != 0)
		return;
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = r };
		if (epoll_ctl(r->m->epfd, EPOLL_CTL_ADD, fds[i], &ev) != 0 &&
				errno != EEXIST)
			PMREP_LOG_WARN("replica %u: epoll_ctl: %s", r->idx,
					strerror(errno));
	}
}

bool
mirror_recovery_handback(struct replica *r)
{
	if (r->oos->nset != 0 || r->chunks != 0 || r->conn == NULL)
		return false;
	/* a replica added at run time is one of the policy's from now on */
	r->joining = false;
	replica_set_state(r, PMREP_REPLICA_IN_SYNC);
	r->resyncs++;
	r->resync_bytes += r->rs_done;
	r->last_error = 0;
	if (r->rs_holds > 0)
		PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s) in sync: %llu bytes copied; below the resync minimum rate, the writer waited for its ring %llu times, %lld ms in all",
				r->idx, r->addr, r->port,
				(unsigned long long)r->rs_done,
				(unsigned long long)r->rs_holds, r->rs_held_ms);
	else
		PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s) in sync: %llu bytes copied",
				r->idx, r->addr, r->port,
				(unsigned long long)r->rs_done);
	r->rs_done = 0;
	epoll_add(r);
	atomic_store(&r->owner, OWN_DATA);
	return true;
}

void
mirror_recovery_kick(struct replica *r)
{
	atomic_store(&r->owner, OWN_RECOVERY);
	(void) pthread_cond_broadcast(&r->m->cond);
}

/* ------------------------------------------------- recovery threads */

/* wait on the mirror's cond until `deadline_ms` (monotonic; -1: none) */
static void
cond_wait_until(struct pmrep_mirror *m, long long deadline_ms)
{
	if (deadline_ms < 0) {
		(void) pthread_cond_wait(&m->cond, &m->lock);
		return;
	}
	struct timespec ts = { .tv_sec = deadline_ms / 1000,
		.tv_nsec = (deadline_ms % 1000) * 1000000 };
	(void) pthread_cond_timedwait(&m->cond, &m->lock, &ts);
}

/* one attempt: attach (connect, handshake, resync) or resume a resync */
static void
recover_once(struct replica *r)
{
	pmrep_err_clear();
	if (r->state == PMREP_REPLICA_FAILED)
		(void) replica_attach(r, repl_deadline(r->m->cfg.timeout_ms), -1);
	else
		(void) replica_resync(r, -1);
}

static void *
recovery_main(void *arg)
{
	struct replica *r = arg;
	struct pmrep_mirror *m = r->m;
	mirror_lock(m);
	while (!atomic_load(&m->stopping) && !atomic_load(&r->stop)) {
		if (atomic_load(&r->owner) != OWN_RECOVERY) {
			cond_wait_until(m, -1);
			continue;
		}
		if (r->state == PMREP_REPLICA_FAILED &&
				repl_now_ms() < r->next_try) {
			cond_wait_until(m, r->next_try);
			continue;
		}
		mirror_unlock(m);
		recover_once(r);
		mirror_lock(m);
		r->tried = true;
		(void) pthread_cond_broadcast(&m->cond);
	}
	mirror_unlock(m);
	return NULL;
}

int
mirror_recovery_start_one(struct replica *r)
{
	/* the application's signals go to its own threads */
	sigset_t all, old;
	sigfillset(&all);
	(void) pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&r->stop, false);
	int e = pthread_create(&r->th, NULL, recovery_main, r);
	if (e == 0) {
		r->th_started = true;
		char name[16];
		snprintf(name, sizeof(name), "pmrep-rec%u",
				r->idx % PMREP_MIRROR_MAX_REPLICAS);
		(void) pthread_setname_np(r->th, name);
	}
	(void) pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0)
		return PMREP_ERR_PROVIDER(e, "pthread_create (a replica's recovery thread)");
	return 0;
}

int
mirror_recovery_start(struct pmrep_mirror *m)
{
	for (unsigned i = 0; i < m->n; i++) {
		int ret = mirror_recovery_start_one(&m->r[i]);
		if (ret)
			return ret;
	}
	return 0;
}

void
mirror_recovery_stop_one(struct replica *r)
{
	/* its attach or resync ends at its next wait slice (the replica
	 * it held is failed) */
	atomic_store(&r->stop, true);
	atomic_store(&r->cancel, true);
	mirror_lock(r->m);
	(void) pthread_cond_broadcast(&r->m->cond);
	mirror_unlock(r->m);
	if (r->th_started) {
		(void) pthread_join(r->th, NULL);
		r->th_started = false;
	}
	atomic_store(&r->cancel, false);
}

void
mirror_recovery_stop(struct pmrep_mirror *m)
{
	atomic_store(&m->stopping, true);
	/* a thread mid-attach (a frozen target: up to the cfg timeout) or
	 * mid-resync ends at its next wait slice; the replica it held is
	 * failed (out of sync), resynced by the next mirror */
	for (unsigned i = 0; i < m->n; i++)
		atomic_store(&m->r[i].cancel, true);
	mirror_lock(m);
	(void) pthread_cond_broadcast(&m->cond);
	mirror_unlock(m);
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->th_started) {
			(void) pthread_join(r->th, NULL);
			r->th_started = false;
		}
	}
	/* the delete's own exchanges (CLOSE) wait on these chans */
	for (unsigned i = 0; i < m->n; i++)
		atomic_store(&m->r[i].cancel, false);
}

/*
 * pmrep_mirror_new's wait with background recovery: until the policy's k
 * replicas are in sync (0), or every replica was tried and fewer than k can
 * be (the first failed one's error), or the create timeout passed
 * (PMREP_E_TIMEOUT). *first: the first replica that failed, if any.
 */
int
mirror_recovery_wait_new(struct pmrep_mirror *m, long long deadline,
		const struct replica **first)
{
	unsigned k = m->cfg.fence_only ? 0 : mirror_required(m);
	unsigned f = m->cfg.fence_count;
	int ret = 0;
	*first = NULL;
	mirror_lock(m);
	for (;;) {
		unsigned in_sync = 0, lost = 0, fenced = 0, unfenced_lost = 0;
		*first = NULL;
		for (unsigned i = 0; i < m->n; i++) {
			const struct replica *r = &m->r[i];
			fenced += r->fenced;
			if (r->state == PMREP_REPLICA_IN_SYNC &&
					atomic_load(&r->owner) == OWN_DATA) {
				in_sync++;
			} else if (r->tried && r->state == PMREP_REPLICA_FAILED) {
				lost++;
				unfenced_lost += !r->fenced;
				if (*first == NULL)
					*first = r;
			}
		}
		if (in_sync >= k && fenced >= f)
			break;
		if (m->n - lost < k || m->n - unfenced_lost < f) {
			ret = (*first)->last_error ? (*first)->last_error :
				PMREP_E_CONN_LOST;
			break;
		}
		if (repl_left_ms(deadline) == 0) {
			ret = PMREP_E_TIMEOUT;
			break;
		}
		cond_wait_until(m, deadline);
	}
	mirror_unlock(m);
	return ret;
}

/*
 * pmrep_mirror_reconnect with background recovery: every FAILED replica is
 * due now; wait until all are in sync or `deadline`
 */
int
mirror_recovery_wait_all(struct pmrep_mirror *m, long long deadline)
{
	mirror_lock(m);
	long long now = repl_now_ms();
	for (unsigned i = 0; i < m->n; i++)
		if (m->r[i].state == PMREP_REPLICA_FAILED)
			m->r[i].next_try = now;
	(void) pthread_cond_broadcast(&m->cond);
	int ret;
	for (;;) {
		const struct replica *bad = NULL;
		for (unsigned i = 0; i < m->n && bad == NULL; i++)
			if (atomic_load(&m->r[i].owner) != OWN_DATA &&
					!m->r[i].removed)
				bad = &m->r[i];
		if (bad == NULL) {
			ret = 0;
			break;
		}
		if (repl_left_ms(deadline) == 0) {
			ret = bad->state == PMREP_REPLICA_FAILED && bad->last_error ?
				bad->last_error : PMREP_E_AGAIN;
			break;
		}
		cond_wait_until(m, deadline < 0 ? repl_now_ms() + 1000 : deadline);
	}
	mirror_unlock(m);
	return ret;
}
