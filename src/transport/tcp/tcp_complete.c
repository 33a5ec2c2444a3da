/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_complete.c -- what becomes of a conn's requests and receives:
 * completions gathered in a turn and pushed to the CQs (completions
 * before an event), the send queue completed in posting order, the error
 * state (everything without an outcome flushed, as a verbs QP in error),
 * a loss, and the conn's end (the socket given up, one terminal event)
 * or an orderly close begun.
 */
#include <string.h>

#include "tcp_progress.h"
#include "transport/common.h"

/* ------------------------------------------------------------ completions */

/* a CQ that cannot take a completion (out of memory to grow it) is a
 * verbs CQ overrun: the conn cannot go on (T26) -- the turn ends it
 * (turn() in tcp_progress.c), since a request whose completion is gone
 * would otherwise be waited for forever */
void
tcp_cqes_flush(struct tcp_conn *c)
{
	if (c->nscqe && !tcp_cq_push(c->cq, c->scqe, c->nscqe)) {
		PMREP_LOG_ERR("out of memory: %d completions lost", c->nscqe);
		c->cq_overrun = true;
	}
	c->nscqe = 0;
	if (c->nrcqe && !tcp_cq_push(c->recv_cq, c->rcqe, c->nrcqe)) {
		PMREP_LOG_ERR("out of memory: %d completions lost", c->nrcqe);
		c->cq_overrun = true;
	}
	c->nrcqe = 0;
}

static void
cqe_send(struct tcp_conn *c, const struct tcp_wr *wr, enum pmrep_wc_status st)
{
	if (st == PMREP_WC_SUCCESS && !wr->signaled)
		return;
	if (c->nscqe == TCP_CQE_BATCH)
		tcp_cqes_flush(c);
	struct pmrep_completion *e = &c->scqe[c->nscqe++];
	memset(e, 0, sizeof(*e));
	e->op_context = (void *)wr->ctx;
	e->op = wr->op;
	e->status = st;
	e->byte_len = (uint32_t)wr->len;
}

void
tcp_cqe_recv(struct tcp_conn *c, const struct tcp_recv *r, enum pmrep_op op,
		enum pmrep_wc_status st, uint32_t len, bool has_imm, uint32_t imm)
{
	if (c->nrcqe == TCP_CQE_BATCH)
		tcp_cqes_flush(c);
	struct pmrep_completion *e = &c->rcqe[c->nrcqe++];
	memset(e, 0, sizeof(*e));
	e->op_context = (void *)r->ctx;
	e->op = op;
	e->status = st;
	e->byte_len = len;
	e->has_imm = has_imm;
	e->imm = imm;
}

void
tcp_push_event(struct tcp_conn *c, enum pmrep_conn_event ev)
{
	tcp_cqes_flush(c);	/* completions first, then the event */
	pthread_mutex_lock(&c->lock);
	tcp_conn_push_event_locked(c, ev);
	pthread_mutex_unlock(&c->lock);
}

/* ------------------------------------------------------- send queue state */

uint32_t
tcp_sq_tail(struct tcp_conn *c)
{
	pthread_mutex_lock(&c->lock);
	uint32_t t = c->sq_tail;
	pthread_mutex_unlock(&c->lock);
	return t;
}

static void
sq_set_head(struct tcp_conn *c, uint32_t head)
{
	pthread_mutex_lock(&c->lock);
	c->sq_head = head;
	pthread_mutex_unlock(&c->lock);
}

/* complete, in posting order, every request whose outcome is known */
void
tcp_sq_complete(struct tcp_conn *c)
{
	uint32_t h = c->sq_head;
	while (h != c->sq_tx) {
		struct tcp_wr *wr = tcp_sq_wr(c, h);
		if (wr->type == TCP_WIRE_READ ? !wr->done :
				(int32_t)(h - c->sq_acked) >= 0)
			break;
		cqe_send(c, wr, wr->status);
		h++;
	}
	if (h != c->sq_head)
		sq_set_head(c, h);
}

/* ---------------------------------------------- the error state, the end */

/*
 * Complete every request and receive that has no outcome yet: known ones
 * with theirs, the first unknown one (if it was sent) with `first`, the
 * rest with PMREP_WC_FLUSHED. Also what the app posts later: the loop
 * calls this on every turn while the conn is in the error state.
 */
void
tcp_flush_all(struct tcp_conn *c, enum pmrep_wc_status first)
{
	uint32_t tail = tcp_sq_tail(c);
	uint32_t h = c->sq_head;
	for (; h != tail; h++) {
		struct tcp_wr *wr = tcp_sq_wr(c, h);
		bool known = wr->type == TCP_WIRE_READ ? wr->done :
			(int32_t)(h - c->sq_acked) < 0 &&
			(int32_t)(h - c->sq_tx) < 0;
		if (known) {
			cqe_send(c, wr, wr->status);
			continue;
		}
		bool sent = (int32_t)(h - c->sq_tx) < 0;
		cqe_send(c, wr, sent && first != PMREP_WC_FLUSHED ? first :
				PMREP_WC_FLUSHED);
		if (sent)
			first = PMREP_WC_FLUSHED;
	}
	c->sq_tx = c->sq_acked = tail;
	sq_set_head(c, tail);

	if (c->rx_has_recv) {
		tcp_cqe_recv(c, &c->rx_recv, PMREP_OP_RECV, PMREP_WC_FLUSHED, 0,
				false, 0);
		c->rx_has_recv = false;
	}
	if (c->srq == NULL) {	/* an SRQ's receives outlive the conn */
		struct tcp_recv r;
		pthread_mutex_lock(&c->lock);
		while (tcp_rq_take(&c->rq, &r))
			tcp_cqe_recv(c, &r, PMREP_OP_RECV, PMREP_WC_FLUSHED, 0,
					false, 0);
		pthread_mutex_unlock(&c->lock);
	}
}

/* the conn failed (as a verbs QP moving to the error state) */
void
tcp_enter_error(struct tcp_conn *c, enum pmrep_wc_status first)
{
	if (c->qp_error)
		return;
	c->qp_error = true;
	tcp_sq_complete(c);
	tcp_flush_all(c, first);
	if (c->rx_in_payload)
		c->rx_dst = NULL;	/* the rest of this payload is dropped */
	c->rx_ignore = true;
	c->stalled = false;
	c->resp_count = 0;
	c->ack_dirty = false;
	c->pend.active = false;	/* nobody will be told it persisted */
	pthread_mutex_lock(&c->lock);
	c->app_wake = true;	/* a receive posted now must be flushed */
	c->rnr_waiting = false;
	pthread_mutex_unlock(&c->lock);
}

/*
 * A request failed on the wire (a NAK sent or received): as a verbs RC QP
 * in the error state (T21), the conn is lost at once -- one LOST event,
 * later posts and receives refused with PMREP_E_CONN_LOST (tcp_post) --
 * not merely flushing until the application disconnects. The socket
 * stays until the application deletes or disconnects the conn, so what
 * was owed before the failure (the NAK itself) still goes out.
 */
void
tcp_enter_lost(struct tcp_conn *c, const char *why)
{
	tcp_enter_error(c, PMREP_WC_FLUSHED);
	pthread_mutex_lock(&c->lock);
	c->failed = true;
	pthread_mutex_unlock(&c->lock);
	if (c->terminal_queued)
		return;
	PMREP_LOG_WARN("connection lost: %s", why);
	c->terminal_queued = true;
	tcp_push_event(c, PMREP_CONN_LOST);
}

/* the socket ended: it leaves the conn now; the thread closes the fd
 * after its turn (a turn run by an application thread must not close
 * what the thread's poll is watching: the number could be reused) */
static void
close_socket(struct tcp_conn *c)
{
	if (c->sock < 0)
		return;
	c->sock_dead = c->sock;
	c->sock = -1;
	tcp_tls_free(c->tls);	/* TLS: the session goes with it */
	c->tls = NULL;
}

/* the end: the socket goes, everything is flushed, one terminal event */
void
tcp_finish(struct tcp_conn *c, enum pmrep_conn_event ev)
{
	if (c->state == TCP_CONN_DEAD)
		return;
	close_socket(c);
	c->state = TCP_CONN_DEAD;
	tcp_enter_error(c, ev == PMREP_CONN_LOST ? PMREP_WC_RETRY_EXCEEDED :
			PMREP_WC_FLUSHED);
	tcp_flush_all(c, PMREP_WC_FLUSHED);
	if (!c->terminal_queued) {
		c->terminal_queued = true;
		tcp_push_event(c, ev);
	}
}

/* the socket ended (EOF or an error): orderly if we were closing anyway */
void
tcp_sock_ended(struct tcp_conn *c, int err)
{
	if (c->state == TCP_CONN_CLOSING) {
		tcp_finish(c, PMREP_CONN_CLOSED);
		return;
	}
	if (err)
		PMREP_LOG_WARN("connection lost: %s", strerror(err));
	else
		PMREP_LOG_WARN("connection lost: the peer closed without disconnecting");
	tcp_finish(c, PMREP_CONN_LOST);
}

void
tcp_protocol_error(struct tcp_conn *c, const char *what)
{
	PMREP_LOG_ERR("tcp protocol violation by the peer: %s", what);
	tcp_finish(c, PMREP_CONN_LOST);
}

/*
 * An orderly close: flush what is in flight, send DISCONNECT, and end
 * (CLOSED) when the peer's DISCONNECT or EOF arrives -- or, answering the
 * peer's, once ours is out -- or after the cfg timeout at the latest.
 */
void
tcp_start_closing(struct tcp_conn *c, bool answering)
{
	tcp_enter_error(c, PMREP_WC_FLUSHED);
	c->state = TCP_CONN_CLOSING;
	c->disconnect_queued = true;
	c->close_when_sent = answering;
	c->closing_deadline = pmrep_now_ms() + c->base.cfg.timeout_ms;
}
