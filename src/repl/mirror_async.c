/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_async.c -- asynchronous persists: a queue, one batch in flight, done
 * list, and the one fd to wait on.
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
#include <unistd.h>

#include "common/log.h"
#include "mirror_int.h"

/* ---------------------------------------------- asynchronous persists */

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

/* arm (deadline >= 0) or disarm (-1) the batch timer */
static void
timer_set(struct pmrep_mirror *m, long long deadline)
{
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

/* the eventfd is readable exactly while completions wait to be polled */
static void
done_signal(struct pmrep_mirror *m)
{
	uint64_t v;
	if (m->done.n > 0) {
		v = 1;
		(void) !write(m->efd, &v, sizeof(v));
	} else {
		(void) !read(m->efd, &v, sizeof(v));
	}
}

/*
 * post the next batch: the first queued request and every queued request
 * whose range overlaps or adjoins the batch's growing range, as one
 * write + persist step per in-sync replica. Replicas not in sync get the
 * range in their bitmap (they cannot confirm it).
 */
static void
batch_start(struct pmrep_mirror *m)
{
	if (m->batch_active || m->queue.n == 0)
		return;
	struct async_req *q = list_pop(&m->queue);
	uint64_t lo = q->off, hi = q->off + q->len;
	list_push(&m->batch, q);
	bool grew = true;
	while (grew) {
		grew = false;
		struct async_req **pp = &m->queue.head, *prev = NULL;
		while (*pp) {
			q = *pp;
			if (q->off <= hi && q->off + q->len >= lo) {
				*pp = q->next;
				if (m->queue.tail == q)
					m->queue.tail = prev;
				m->queue.n--;
				if (q->off < lo)
					lo = q->off;
				if (q->off + q->len > hi)
					hi = q->off + q->len;
				list_push(&m->batch, q);
				grew = true;
				continue;
			}
			prev = q;
			pp = &q->next;
		}
	}
	m->b_off = lo;
	m->b_len = hi - lo;
	/* the record covers the range before any of it is posted */
	int ret = mstate_al_mark(m->state, lo, hi - lo);
	if (ret) {
		PMREP_LOG_ERR("asynchronous persist of %llu bytes at %llu (%zu requests): the mirror's record could not be written (%s): nothing posted",
				(unsigned long long)(hi - lo),
				(unsigned long long)lo, m->batch.n,
				pmrep_err_to_str(ret));
		while ((q = list_pop(&m->batch)) != NULL) {
			q->result = ret;
			list_push(&m->done, q);
		}
		return;
	}
	m->batch_active = true;
	m->b_deadline = repl_deadline(m->cfg.timeout_ms);
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->state != PMREP_REPLICA_IN_SYNC) {
			repl_bitmap_mark(r->oos, lo, hi - lo);
			continue;
		}
		ret = replica_post_range(r, lo, hi - lo);
		if (ret)
			replica_fail(r, ret, lo, hi - lo);
	}
	timer_set(m, m->b_deadline);
}


/*
 * take the completions of the batch in flight without waiting; when no
 * replica is pending any more (confirmed, failed, or timed out at the
 * batch deadline) complete each of its requests with the batch's result
 */
static void
batch_check(struct pmrep_mirror *m)
{
	if (!m->batch_active)
		return;
	bool pending = false;
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (!r->pending)
			continue;
		int ret = replica_progress(r);
		if (ret) {
			replica_fail(r, ret, r->p_off, r->p_len);
			continue;
		}
		if (r->pending && repl_left_ms(m->b_deadline) == 0)
			replica_fail(r, PMREP_E_TIMEOUT, r->p_off, r->p_len);
		if (r->pending)
			pending = true;
	}
	if (pending)
		return;
	int result = mirror_step_result(m);
	if (result)
		PMREP_LOG_ERR("asynchronous persist of %llu bytes at %llu (%zu requests): %s",
				(unsigned long long)m->b_len,
				(unsigned long long)m->b_off, m->batch.n,
				pmrep_err_to_str(result));
	/* nothing in flight now */
	int clr = mirror_al_clear(m);
	if (result == 0)
		result = clr;
	struct async_req *q;
	while ((q = list_pop(&m->batch)) != NULL) {
		q->result = q->local_err ? q->local_err : result;
		list_push(&m->done, q);
	}
	m->batch_active = false;
	timer_set(m, -1);
}

/*
 * the lazy clear of the activity log, with no step in flight: only while
 * nothing is queued either -- a queued request is persisted locally and
 * its regions were marked when it was submitted; they stay marked until
 * it is posted and confirmed
 */
int
mirror_al_clear(struct pmrep_mirror *m)
{
	if (m->queue.n != 0)
		return 0;
	return mstate_al_clear(m->state, false);
}

/* complete what can be completed and post what can be posted */
void
mirror_async_advance(struct pmrep_mirror *m)
{
	for (;;) {
		batch_check(m);
		if (m->batch_active || m->queue.n == 0)
			break;
		batch_start(m);
	}
	done_signal(m);
}

/* before a synchronous step: finish the batch in flight (by `deadline`) */
void
mirror_batch_drain(struct pmrep_mirror *m, long long deadline)
{
	if (!m->batch_active)
		return;
	long long d = m->b_deadline;
	if (deadline >= 0 && deadline < d)
		d = deadline;
	mirror_wait_pending(m, d);
	batch_check(m);		/* nothing is pending: completes it */
}
/* ---------------------------------------------- asynchronous interface */

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
	if (m->queue.n + m->batch.n + m->done.n >= ASYNC_MAX) {
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
	q->ctx = ctx;
	if (length == 0) {
		list_push(&m->done, q);		/* nothing to make durable */
		done_signal(m);
		return 0;
	}
	/* the record covers the range before it is persisted here: what is
	 * durable locally and not confirmed by a replica is always in AL or
	 * in that replica's OOS */
	int ret = mstate_al_mark(m->state, offset, length);
	if (ret) {
		PMREP_LOG_ERR("asynchronous persist of %zu bytes at %zu: the mirror's record could not be written (%s)",
				length, offset, pmrep_err_to_str(ret));
		free(q);
		return ret;
	}
	if (pmrep_pmem_persist(m->pmem, m->base + offset, length) != 0) {
		/* posted all the same (the replicas get what the mapping
		 * holds), but its outcome is this failure */
		PMREP_LOG_ERR("asynchronous persist of %zu bytes at %zu: the local persist failed",
				length, offset);
		q->local_err = PMREP_E_PROVIDER;
	}
	list_push(&m->queue, q);
	mirror_async_advance(m);
	return 0;
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
	uint64_t v;
	(void) !read(m->tfd, &v, sizeof(v));
	(void) !read(m->efd, &v, sizeof(v));
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->conn == NULL)
			continue;
		/* take the CQ's event and re-arm before draining it, so that
		 * a completion arriving meanwhile fires again */
		repl_chan_ack_cq(&r->ch);
		if (!r->pending) {
			/* an idle connection's end: fail the replica now so
			 * that its event fd leaves the epoll set */
			int ret = repl_chan_check_conn(&r->ch);
			if (ret)
				replica_fail(r, ret, 0, 0);
		}
	}
	mirror_async_advance(m);
	while (*n < max && m->done.n > 0) {
		struct async_req *q = list_pop(&m->done);
		out[*n].ctx = q->ctx;
		out[*n].result = q->result;
		out[*n].offset = (size_t)q->off;
		out[*n].length = (size_t)q->len;
		(*n)++;
		free(q);
	}
	done_signal(m);
	return 0;
}
