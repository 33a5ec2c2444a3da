/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_conn_end.c -- how a verbs connection ends: marked lost (an async
 * event, or an error completion of its QP: T21), the bounded teardown
 * (the QP moved to error and drained, at most the cfg timeout: T08; then
 * QP, CQs, channels, id, event channel, fds) behind pmrep_conn_delete,
 * and the release of a conn whose device was removed (T22). The conn's
 * objects are made in verbs_conn.c, its state machine is verbs_conn_sm.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "verbs_internal.h"
#include "transport/common.h"

#define DRAIN_POLL_SLEEP_NS 1000000	/* 1 ms between empty polls */

static void
sleep_ns(long ns)
{
	struct timespec ts = { 0, ns };
	(void) nanosleep(&ts, NULL);
}

/*
 * Poll a CQ dry, dropping every completion (the conn is going away, or it
 * belongs to an earlier attempt's QP) but keeping the books: a request
 * that completed is no longer outstanding. Notes the drain markers seen.
 */
static void
drain_poll(struct verbs_cq *cq, bool *sq_seen, bool *rq_seen)
{
	struct ibv_wc wc[16];
	const void *ctx;
	enum pmrep_op op;
	int n;

	while ((n = ibv_poll_cq(cq->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			uint64_t id = wc[i].wr_id;
			if (id == VERBS_WR_DRAIN)
				*sq_seen = true;
			else if (id == (VERBS_WR_DRAIN | VERBS_WR_RECV))
				*rq_seen = true;
			else if ((id & VERBS_WR_RECV) && cq->rq)
				(void) verbs_rq_table_complete(cq->rq, id, &ctx);
			else if (!(id & VERBS_WR_RECV) && cq->sq)
				(void) verbs_sq_ring_complete(cq->sq, id, &ctx,
						&op);
		}
	}
}

/*
 * Requests in flight (T08): move the QP to error, so that each of them
 * completes (in error) exactly once, and wait -- at most the cfg timeout --
 * for a marker posted behind them on each queue. The device may never
 * deliver the flushed completions: the wait is bounded regardless.
 * The receive queue is also drained when every receive has completed:
 * rxe (6.1) does not complete a receive posted to a QP that is already in
 * error, e.g. after the peer disconnected.
 */
static void
qp_drain(struct verbs_conn *conn)
{
	bool sq_busy = conn->rings_ready && verbs_sq_ring_outstanding(&conn->sq);
	bool rq_busy = conn->rings_ready && conn->srq == NULL &&
		verbs_rq_table_outstanding(&conn->rq);
	if (!sq_busy && !rq_busy)
		return;

	struct ibv_qp_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_ERR;
	int err = ibv_modify_qp(conn->qp, &attr, IBV_QP_STATE);
	if (err) {
		PMREP_LOG_WARN("ibv_modify_qp(ERR): %s: not draining",
				strerror(err));
		return;
	}
	bool sq_seen = !sq_busy, rq_seen = !rq_busy;
	if (sq_busy) {
		/* zero-length write: harmless even if it were executed */
		struct ibv_send_wr *bad, wr;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = VERBS_WR_DRAIN;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (ibv_post_send(conn->qp, &wr, &bad))
			sq_seen = true;
	}
	if (rq_busy) {
		struct ibv_recv_wr *bad, wr;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = VERBS_WR_DRAIN | VERBS_WR_RECV;
		if (ibv_post_recv(conn->qp, &wr, &bad))
			rq_seen = true;
	}
	long long deadline = pmrep_now_ms() + conn->base.cfg.timeout_ms;
	for (;;) {
		drain_poll(conn->cq, &sq_seen, &rq_seen);
		if (conn->rcq)
			drain_poll(conn->rcq, &sq_seen, &rq_seen);
		if (!rq_seen && verbs_rq_table_outstanding(&conn->rq) == 0)
			rq_seen = true;
		if (sq_seen && rq_seen)
			return;
		if (pmrep_now_ms() >= deadline) {
			PMREP_LOG_WARN("the device delivered no flushed completions in %d ms (send queue %s, receive queue %s); destroying the QP anyway",
					conn->base.cfg.timeout_ms,
					sq_seen ? "drained" : "not drained",
					rq_seen ? "drained" : "not drained");
			return;
		}
		sleep_ns(DRAIN_POLL_SLEEP_NS);
	}
}

int
verbs_conn_qp_destroy(struct verbs_conn *conn)
{
	int ret = 0;
	if (conn->qp == NULL)
		return 0;
	int err = ibv_destroy_qp(conn->qp);
	if (err)
		ret = PMREP_ERR_PROVIDER(err, "ibv_destroy_qp");
	if (conn->id)
		conn->id->qp = NULL;
	conn->qp = NULL;
	conn->qpx = NULL;
	return ret;
}

/* drop everything an earlier QP left on the conn's CQs */
void
verbs_conn_cqs_drop_stale(struct verbs_conn *conn)
{
	bool a = false, b = false;
	if (conn->cq)
		drain_poll(conn->cq, &a, &b);
	if (conn->rcq)
		drain_poll(conn->rcq, &a, &b);
}

int
verbs_conn_destroy(struct verbs_conn *conn)
{
	int ret = 0, err;

	if (conn->registered)
		verbs_peer_unregister_conn(conn->peer, conn);
	if (conn->qp) {
		qp_drain(conn);
		err = verbs_conn_qp_destroy(conn);
		if (err && ret == 0)
			ret = err;
	}
	/* CQs before their channels (verbs_cq_delete,
	 * verbs_conn_queues_delete) */
	err = verbs_conn_queues_delete(conn);
	if (err && ret == 0)
		ret = err;
	verbs_conn_queues_unpin(conn);
	/* no event is ever held unacknowledged: this does not block (T04) */
	bool id_gone = !conn->evch_pinned;
	if (conn->id) {
		if (rdma_destroy_id(conn->id)) {
			if (ret == 0)
				ret = PMREP_ERR_PROVIDER(errno, "rdma_destroy_id");
			id_gone = false;
		}
		conn->id = NULL;
	}
	/* an id that would not go still uses its channel: leave both */
	if (conn->evch && id_gone) {
		rdma_destroy_event_channel(conn->evch);
		conn->evch = NULL;
	}
	if (conn->notifyfd >= 0)
		(void) close(conn->notifyfd);
	if (conn->timerfd >= 0)
		(void) close(conn->timerfd);
	if (conn->epfd >= 0)
		(void) close(conn->epfd);
	(void) pthread_mutex_destroy(&conn->hold.lock);
	(void) pthread_mutex_destroy(&conn->sm_lock);
	free(conn);
	return ret;
}

int
verbs_conn_delete(struct pmrep_conn *base)
{
	struct verbs_conn *conn = (struct verbs_conn *)base;

	/* unregister first: an async event handler must not find it while
	 * its QP / CQs go away */
	verbs_peer_unregister_conn(conn->peer, conn);
	/* what PMREP_F_MORE holds goes out first, so that it ends like every
	 * posted request (drained below); a failure is logged (and those
	 * requests are dropped): the conn goes away regardless */
	(void) verbs_hold_post(conn, "the connection is deleted");
	/* an orderly goodbye to the peer; moves the QP to error as well */
	if (conn->state == VERBS_ST_ESTABLISHED && conn->id &&
			rdma_disconnect(conn->id))
		PMREP_LOG_INFO("rdma_disconnect: %s", strerror(errno));
	/* a DEVICE_REMOVAL nobody read yet still tells the peer (T22):
	 * deleting the conn must not hide that the device is gone */
	struct verbs_peer *peer = conn->peer;
	bool removal = atomic_load(&conn->dev_removal_seen);
	if (!removal && conn->evch != NULL && !conn->dev_released) {
		struct verbs_cm_event ev;
		while (verbs_cm_event_take(conn->evch, &ev) == 0) {
			if (ev.type == RDMA_CM_EVENT_DEVICE_REMOVAL)
				removal = true;
		}
	}
	int ret = verbs_conn_destroy(conn);
	if (removal && !atomic_load(&peer->removed))
		verbs_device_removed(peer,
				"RDMA_CM_EVENT_DEVICE_REMOVAL on a deleted connection");
	return ret;
}

void
verbs_conn_release(struct verbs_conn *conn)
{
	pthread_mutex_lock(&conn->sm_lock);
	if (conn->dev_released) {
		pthread_mutex_unlock(&conn->sm_lock);
		return;
	}
	conn->dev_released = true;
	atomic_store(&conn->lost, true);
	if (conn->state != VERBS_ST_TERMINAL) {
		/* its one terminal event, for next_event to report */
		if (conn->npending < VERBS_PENDING_MAX)
			conn->pending[conn->npending++] = PMREP_CONN_LOST;
		verbs_conn_go_terminal(conn);
	}
	if (conn->npending)
		verbs_conn_notify_raise(conn);
	/* what PMREP_F_MORE holds can never be posted now */
	pthread_mutex_lock(&conn->hold.lock);
	conn->hold.n = 0;
	conn->hold.native = false;
	atomic_store(&conn->hold.pending, 0);
	pthread_mutex_unlock(&conn->hold.lock);
	if (conn->qp != NULL && verbs_conn_qp_destroy(conn))
		PMREP_LOG_WARN("ibv_destroy_qp on a removed device failed");
	if (conn->cq != NULL)
		verbs_cq_release(conn->cq);
	if (conn->rcq != NULL)
		verbs_cq_release(conn->rcq);
	if (conn->own_shared_ch != NULL) {
		int err = ibv_destroy_comp_channel(conn->own_shared_ch);
		if (err)
			PMREP_LOG_WARN("ibv_destroy_comp_channel on a removed device: %s",
					strerror(err));
		conn->own_shared_ch = NULL;
	}
	conn->base.comp_fd = -1;
	if (conn->id != NULL) {
		if (rdma_destroy_id(conn->id)) {
			PMREP_LOG_WARN("rdma_destroy_id on a removed device: %s",
					strerror(errno));
			conn->evch_pinned = true;
		}
		conn->id = NULL;
	}
	pthread_mutex_unlock(&conn->sm_lock);
}

void
verbs_conn_mark_lost(struct verbs_conn *conn, const char *why)
{
	uint64_t one = 1;
	PMREP_LOG_WARN("connection lost: %s", why);
	atomic_store(&conn->lost, true);
	if (conn->notifyfd >= 0 &&
			write(conn->notifyfd, &one, sizeof(one)) < 0 &&
			errno != EAGAIN)
		PMREP_LOG_ERR("write(eventfd): %s", strerror(errno));
}

/*
 * An error completion of the conn's current QP (T21, T27): on an RC QP
 * every error completion -- a remote access error (a wrong rkey), the
 * transport's or RNR retries exhausted, a local protection error, or a
 * flush error of a QP that went to error by itself -- means the QP is in
 * the error state now, and no rdma_cm event and no async event may ever
 * follow: nothing would report the connection's end. So it is lost, at
 * once: later posts are refused (verbs_post: PMREP_E_CONN_LOST) and the
 * event fd wakes for the one LOST that next_event reports. Not when the
 * end is ours or already decided: after a local disconnect (CLOSED), after
 * the terminal event (its QP was moved to error by verbs_conn_go_terminal), or while
 * an active conn still tries to connect (a failed attempt is retried;
 * what its QP flushed is stale). Called by whoever polls the CQ (any
 * thread); the state is read without sm_lock, as in verbs_post: a step of
 * the machine in flight decides the same terminal event first.
 */
void
verbs_conn_wc_error(struct verbs_conn *conn, const struct ibv_wc *wc)
{
	enum verbs_conn_state st = conn->state;
	bool live = st == VERBS_ST_ESTABLISHED ||
		(conn->passive && st == VERBS_ST_CONNECTING);
	if (!live || conn->local_close || atomic_load(&conn->lost))
		return;
	PMREP_LOG_ERR("QP %u: a %s completed with \"%s\" (vendor error 0x%x): the QP is in the error state, the connection is lost",
			wc->qp_num, (wc->wr_id & VERBS_WR_RECV) ? "receive" :
			"send-queue request", ibv_wc_status_str(wc->status),
			wc->vendor_err);
	verbs_conn_mark_lost(conn, ibv_wc_status_str(wc->status));
}
