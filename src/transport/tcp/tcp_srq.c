/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_srq.c -- receive queues: the ring of posted receives every conn,
 * request and SRQ keeps, and the shared receive queue, which many conns'
 * progress threads take receives from.
 */
#include <stdlib.h>

#include "tcp.h"

int
tcp_rq_init(struct tcp_rq *rq, uint32_t size)
{
	uint32_t slots = tcp_pow2(size ? size : 1);
	rq->ring = calloc(slots, sizeof(*rq->ring));
	rq->size = size;
	rq->mask = slots - 1;
	rq->head = rq->tail = 0;
	if (rq->ring == NULL) {
		PMREP_LOG_ERR("out of memory for a receive queue of %u", size);
		return PMREP_E_NOMEM;
	}
	return 0;
}

void
tcp_rq_fini(struct tcp_rq *rq)
{
	free(rq->ring);
	rq->ring = NULL;
}

int
tcp_rq_put(struct tcp_rq *rq, const struct pmrep_mr_local *mr, size_t offset,
		size_t len, const void *ctx)
{
	if (rq->tail - rq->head >= rq->size) {
		PMREP_LOG_ERR("receive queue full (%u receives posted)", rq->size);
		return PMREP_E_AGAIN;
	}
	struct tcp_recv *r = &rq->ring[rq->tail & rq->mask];
	r->key = mr->rkey;
	r->ptr = (uint8_t *)mr->ptr + offset;
	r->len = len;
	r->ctx = ctx;
	rq->tail++;
	return 0;
}

bool
tcp_rq_take(struct tcp_rq *rq, struct tcp_recv *out)
{
	if (rq->tail == rq->head)
		return false;
	*out = rq->ring[rq->head & rq->mask];
	rq->head++;
	return true;
}

int
tcp_srq_new(struct pmrep_peer *peer, uint32_t rq_size, uint32_t rcq_size,
		struct pmrep_srq **srq_ptr)
{
	struct tcp_srq *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		PMREP_LOG_ERR("out of memory for an SRQ");
		return PMREP_E_NOMEM;
	}
	int ret = tcp_rq_init(&s->rq, rq_size);
	if (ret)
		goto err_free;
	struct tcp_cq *rcq;
	ret = tcp_cq_new(peer, NULL, true, rcq_size, NULL, &rcq);
	if (ret)
		goto err_rq;
	pthread_mutex_init(&s->lock, NULL);
	s->base.peer = peer;
	s->base.rcq = &rcq->base;
	atomic_init(&s->base.nconns, 0);
	*srq_ptr = &s->base;
	return 0;

err_rq:
	tcp_rq_fini(&s->rq);
err_free:
	free(s);
	return ret;
}

int
tcp_srq_delete(struct pmrep_srq *srq)
{
	struct tcp_srq *s = (struct tcp_srq *)srq;
	/* receives still posted have no conn to complete on: they go away
	 * with the queue, as on verbs */
	tcp_cq_delete((struct tcp_cq *)s->base.rcq);
	tcp_rq_fini(&s->rq);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return 0;
}

int
tcp_srq_recv(struct pmrep_srq *srq, struct pmrep_mr_local *dst, size_t offset,
		size_t len, const void *op_context)
{
	struct tcp_srq *s = (struct tcp_srq *)srq;
	pthread_mutex_lock(&s->lock);
	int ret = tcp_rq_put(&s->rq, dst, offset, len, op_context);
	if (ret == 0) {
		/* a conn whose thread waits for a receive takes it now */
		for (struct tcp_conn *c = s->conns; c; c = c->srq_next) {
			pthread_mutex_lock(&c->lock);
			if (c->rnr_waiting)
				tcp_conn_kick_locked(c);
			pthread_mutex_unlock(&c->lock);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void
tcp_srq_attach(struct tcp_srq *s, struct tcp_conn *c)
{
	pthread_mutex_lock(&s->lock);
	c->srq_next = s->conns;
	s->conns = c;
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_add(&s->base.nconns, 1);
}

void
tcp_srq_detach(struct tcp_srq *s, struct tcp_conn *c)
{
	pthread_mutex_lock(&s->lock);
	struct tcp_conn **pp = &s->conns;
	while (*pp != c)
		pp = &(*pp)->srq_next;
	*pp = c->srq_next;
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_sub(&s->base.nconns, 1);
}

bool
tcp_srq_take(struct tcp_srq *s, struct tcp_recv *out)
{
	pthread_mutex_lock(&s->lock);
	bool ok = tcp_rq_take(&s->rq, out);
	pthread_mutex_unlock(&s->lock);
	return ok;
}
