/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_cq.c -- completion queues: creation on a channel of their own or a
 * shared one, the wait (acknowledge on the CQ the event names, re-arm, so
 * that destroying never blocks and no wakeup is lost), and turning work
 * completions into pmrep completions.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"
#include "transport/common.h"

/* work completions taken from the device per ibv_poll_cq call */
#define POLL_BATCH 16

int
verbs_cq_new(struct verbs_peer *peer, int size, struct ibv_comp_channel *shared,
		struct verbs_comp_channel *ext, struct verbs_cq **cq_ptr)
{
	int ret;

	struct verbs_cq *cq = calloc(1, sizeof(*cq));
	if (cq == NULL) {
		PMREP_LOG_ERR("out of memory for a CQ");
		return PMREP_E_NOMEM;
	}
	if (shared != NULL) {
		cq->channel = shared;
	} else {
		cq->channel = ibv_create_comp_channel(peer->ctx);
		if (cq->channel == NULL) {
			ret = PMREP_ERR_PROVIDER(errno, "ibv_create_comp_channel");
			goto err_free;
		}
		cq->own_channel = true;
		ret = verbs_fd_set_flags(cq->channel->fd,
				"fcntl(completion channel)");
		if (ret)
			goto err_destroy_channel;
	}
	/* cq_context: the wait finds its verbs_cq from the event */
	cq->cq = ibv_create_cq(peer->ctx, size, cq, cq->channel, 0);
	if (cq->cq == NULL) {
		ret = PMREP_ERR_PROVIDER(errno, "ibv_create_cq");
		goto err_destroy_channel;
	}
	/*
	 * Every completion the CQ's queues can hold at once must fit (T26):
	 * the caller asked for the sum of what they may post. The device may
	 * round up; one that grants fewer entries than asked would overrun
	 * (IBV_EVENT_CQ_ERR, a dead CQ) when the queues are full: refused.
	 */
	if (cq->cq->cqe < size) {
		PMREP_LOG_ERR("ibv_create_cq: the device gave the CQ %d entries, %d are needed (the sum of the queues it serves): refused, it could overrun",
				cq->cq->cqe, size);
		pmrep_err_set_errno(ENOSPC);
		ret = PMREP_E_PROVIDER;
		goto err_destroy_cq;
	}
	atomic_init(&cq->stale, 0);
	cq->cqe = cq->cq->cqe;
	/* armed from the start: the first completion raises an event */
	ret = ibv_req_notify_cq(cq->cq, 0);
	if (ret) {
		ret = PMREP_ERR_PROVIDER(ret, "ibv_req_notify_cq");
		goto err_destroy_cq;
	}
	cq->ext = ext;
	if (ext != NULL)
		atomic_fetch_add(&ext->base.ncqs, 1);
	cq->base.peer = &peer->base;
	cq->base.conn = NULL;
	cq->base.is_rcq = false;
	cq->base.shared_channel = shared != NULL;
	cq->base.fd = cq->channel->fd;
	*cq_ptr = cq;
	return 0;

err_destroy_cq:
	(void) ibv_destroy_cq(cq->cq);
err_destroy_channel:
	if (cq->own_channel)
		(void) ibv_destroy_comp_channel(cq->channel);
err_free:
	free(cq);
	return ret;
}

int
verbs_cq_delete(struct verbs_cq *cq)
{
	int ret = 0, err;

	/* a waiter on a shared channel must not hold an event of this CQ
	 * (or be about to re-arm it) while it goes away */
	if (cq->ext != NULL)
		pthread_mutex_lock(&cq->ext->lock);
	/* NULL: released with its removed device (T22) */
	err = cq->cq != NULL ? ibv_destroy_cq(cq->cq) : 0;
	if (cq->ext != NULL) {
		pthread_mutex_unlock(&cq->ext->lock);
		atomic_fetch_sub(&cq->ext->base.ncqs, 1);
	}
	if (err)
		ret = PMREP_ERR_PROVIDER(err, "ibv_destroy_cq");
	/* the channel after its CQ: destroying it first would be EBUSY */
	if (cq->own_channel && cq->channel != NULL) {
		err = ibv_destroy_comp_channel(cq->channel);
		if (err && ret == 0)
			ret = PMREP_ERR_PROVIDER(err, "ibv_destroy_comp_channel");
	}
	free(cq);
	return ret;
}

int
verbs_channel_take_event(struct ibv_comp_channel *ch, pthread_mutex_t *lock,
		struct verbs_cq **cq_ptr)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int ret = 0;

	if (lock)
		pthread_mutex_lock(lock);
	if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			ret = PMREP_E_NO_EVENT;
		else
			ret = PMREP_ERR_PROVIDER(errno, "ibv_get_cq_event");
		goto out;
	}
	/* acknowledge on the CQ the event names, never on a guess (T01) */
	ibv_ack_cq_events(ev_cq, 1);
	/* re-arm before the caller polls: a completion that lands after
	 * this raises a new event, one that landed before is polled */
	int err = ibv_req_notify_cq(ev_cq, 0);
	if (err) {
		ret = PMREP_ERR_PROVIDER(err, "ibv_req_notify_cq");
		goto out;
	}
	*cq_ptr = ev_ctx;
out:
	if (lock)
		pthread_mutex_unlock(lock);
	return ret;
}

int
verbs_wait_cq_event(struct verbs_peer *peer, struct ibv_comp_channel *ch,
		struct verbs_conn *conn, int timeout_ms, struct verbs_cq **got)
{
	long long deadline = timeout_ms < 0 ? -1 : pmrep_now_ms() + timeout_ms;

	for (;;) {
		/* T22: the channel goes away with a removed device */
		verbs_dev_rdlock(peer);
		if (atomic_load(&peer->removed)) {
			verbs_dev_unlock(peer);
			return PMREP_E_CONN_LOST;
		}
		int ch_fd = ch->fd;
		int ret = verbs_channel_take_event(ch, NULL, got);
		verbs_dev_unlock(peer);
		if (ret != PMREP_E_NO_EVENT)
			return ret;
		int left = -1;
		if (deadline >= 0) {
			long long d = deadline - pmrep_now_ms();
			left = d > 0 ? (int)d : 0;
		}
		/* the conn's fd too: a peer's disconnect flushes the QP */
		struct pollfd fds[2] = {
			{ .fd = ch_fd, .events = POLLIN },
			{ .fd = conn ? conn->epfd : -1, .events = POLLIN },
		};
		nfds_t n = conn != NULL && verbs_conn_watchable(conn) ? 2 : 1;
		ret = poll(fds, n, left);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return PMREP_ERR_PROVIDER(errno, "poll");
		}
		if (ret == 0)
			return PMREP_E_TIMEOUT;
		if (n == 2 && (fds[1].revents & POLLIN))
			(void) verbs_conn_pump(conn);
		if (!(fds[0].revents & POLLIN) && deadline >= 0 &&
				pmrep_now_ms() >= deadline) {
			verbs_dev_rdlock(peer);
			ret = atomic_load(&peer->removed) ? PMREP_E_CONN_LOST :
				verbs_channel_take_event(ch, NULL, got);
			verbs_dev_unlock(peer);
			return ret == PMREP_E_NO_EVENT ? PMREP_E_TIMEOUT : ret;
		}
	}
}

int
verbs_cq_wait(struct pmrep_cq *base, int timeout_ms)
{
	struct verbs_cq *cq = (struct verbs_cq *)base;
	struct verbs_cq *got = NULL;

	/* a request held by PMREP_F_MORE would never complete: post it */
	if (cq->base.conn != NULL) {
		int ret = verbs_hold_post((struct verbs_conn *)cq->base.conn,
				"a wait for its completions");
		if (ret)
			return ret;
	}
	/* the CQ's own channel: any event on it is this CQ's */
	return verbs_wait_cq_event(verbs_peer(cq->base.peer), cq->channel,
			(struct verbs_conn *)cq->base.conn, timeout_ms, &got);
}

static void
stale_drop(struct verbs_cq *cq, const struct ibv_wc *wc)
{
	unsigned long long n = atomic_fetch_add(&cq->stale, 1) + 1;
	PMREP_LOG_DBG("QP %u: dropping a completion of an earlier incarnation (wr_id 0x%llx, generation %u, status %d; %llu dropped on this CQ)",
			wc->qp_num, (unsigned long long)wc->wr_id,
			VERBS_WR_GEN(wc->wr_id), (int)wc->status, n);
}

/*
 * Before anything acts on the completion (an error one marks the conn
 * lost): does its wr_id carry another generation than the queue it names
 * has now? Then it is an earlier incarnation's: counted, dropped.
 */
static bool
wc_stale(struct verbs_cq *cq, const struct ibv_wc *wc)
{
	bool stale;
	if (wc->wr_id & VERBS_WR_RECV)
		stale = cq->rq != NULL &&
			!verbs_rq_table_current(cq->rq, wc->wr_id);
	else
		stale = cq->sq != NULL &&
			!verbs_sq_ring_current(cq->sq, wc->wr_id);
	if (stale)
		stale_drop(cq, wc);
	return stale;
}

/*
 * rdma-core's work completion status in pmrep's terms: the one table the
 * verbs provider maps through (docs/DESIGN.md "Completions"). A status
 * not listed (RD-only codes, tag matching, ones newer rdma-core adds) is
 * PMREP_WC_GENERAL_ERROR; the completion keeps the original in
 * provider_status either way.
 */
static const struct {
	enum ibv_wc_status ibv;
	enum pmrep_wc_status pmrep;
} wc_status_map[] = {
	{ IBV_WC_SUCCESS,		PMREP_WC_SUCCESS },
	{ IBV_WC_WR_FLUSH_ERR,		PMREP_WC_FLUSHED },
	{ IBV_WC_LOC_LEN_ERR,		PMREP_WC_LOCAL_LENGTH_ERROR },
	{ IBV_WC_LOC_PROT_ERR,		PMREP_WC_LOCAL_PROTECTION_ERROR },
	{ IBV_WC_LOC_ACCESS_ERR,	PMREP_WC_LOCAL_PROTECTION_ERROR },
	{ IBV_WC_MW_BIND_ERR,		PMREP_WC_LOCAL_PROTECTION_ERROR },
	{ IBV_WC_REM_ACCESS_ERR,	PMREP_WC_REMOTE_ACCESS_ERROR },
	{ IBV_WC_REM_INV_REQ_ERR,	PMREP_WC_REMOTE_INVALID_REQUEST },
	{ IBV_WC_REM_INV_RD_REQ_ERR,	PMREP_WC_REMOTE_INVALID_REQUEST },
	{ IBV_WC_REM_OP_ERR,		PMREP_WC_REMOTE_OPERATION_ERROR },
	{ IBV_WC_REM_ABORT_ERR,		PMREP_WC_REMOTE_OPERATION_ERROR },
	{ IBV_WC_RETRY_EXC_ERR,		PMREP_WC_RETRY_EXCEEDED },
	{ IBV_WC_RNR_RETRY_EXC_ERR,	PMREP_WC_RNR_RETRY_EXCEEDED },
	{ IBV_WC_RESP_TIMEOUT_ERR,	PMREP_WC_TIMEOUT },
};

enum pmrep_wc_status
verbs_wc_status(int ibv_status)
{
	for (size_t i = 0; i < sizeof(wc_status_map) / sizeof(wc_status_map[0]); i++)
		if ((int)wc_status_map[i].ibv == ibv_status)
			return wc_status_map[i].pmrep;
	return PMREP_WC_GENERAL_ERROR;
}

/* a work completion as a pmrep completion; false: not for the user */
static bool
convert(struct verbs_cq *cq, const struct ibv_wc *wc,
		struct pmrep_completion *out)
{
	if (wc->wr_id & VERBS_WR_DRAIN)
		return false;
	if (cq->filter_qp && wc->qp_num != cq->qp_num) {
		atomic_fetch_add(&cq->stale, 1);
		PMREP_LOG_DBG("dropping a completion of an earlier QP %u (now %u)",
				wc->qp_num, cq->qp_num);
		return false;
	}
	/* an earlier incarnation's (the same QP number, maybe): it acts on
	 * nothing -- neither a slot nor the conn's state (T25) */
	if (wc_stale(cq, wc))
		return false;
	/* an error completion: the QP is in error, the conn ends (T21) */
	if (wc->status != IBV_WC_SUCCESS) {
		if (cq->base.conn != NULL)
			verbs_conn_wc_error((struct verbs_conn *)cq->base.conn,
					wc);
		else
			verbs_peer_wc_error(verbs_peer(cq->base.peer), wc);
	}
	memset(out, 0, sizeof(*out));
	out->status = verbs_wc_status((int)wc->status);
	out->provider_status = (uint32_t)wc->status;
	if (wc->wr_id & VERBS_WR_RECV) {
		const void *ctx = NULL;
		int r = cq->rq == NULL ? VERBS_WR_UNKNOWN :
			verbs_rq_table_complete(cq->rq, wc->wr_id, &ctx);
		if (r == VERBS_WR_STALE) {
			stale_drop(cq, wc);
			return false;
		}
		if (r != VERBS_WR_DONE) {
			PMREP_LOG_ERR("a receive completion with unknown wr_id 0x%llx",
					(unsigned long long)wc->wr_id);
			return false;
		}
		out->op_context = (void *)ctx;
		out->op = PMREP_OP_RECV;
		if (wc->status != IBV_WC_SUCCESS)
			return true;	/* only status and context are defined */
		if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
			out->op = PMREP_OP_RECV_RDMA_WITH_IMM;
	} else {
		const void *ctx = NULL;
		enum pmrep_op op = PMREP_OP_WRITE;
		int status = (int)wc->status;
		int r = cq->sq == NULL ? VERBS_WR_UNKNOWN :
			verbs_sq_ring_complete_wc(cq->sq, wc->wr_id, status,
					&ctx, &op, &status);
		if (r == VERBS_WR_STALE) {
			stale_drop(cq, wc);
			return false;
		}
		if (r < 0) {
			PMREP_LOG_ERR("a send completion with unknown wr_id 0x%llx",
					(unsigned long long)wc->wr_id);
			return false;
		}
		if (r == 0)
			return false;	/* a split flush's earlier piece */
		if (ctx == &verbs_heartbeat_ctx || ctx == &verbs_mw_bind_ctx) {
			if (ctx == &verbs_mw_bind_ctx && wc->status != IBV_WC_SUCCESS)
				PMREP_LOG_ERR("QP %u: the device refused a memory window bind: %s",
						wc->qp_num, ibv_wc_status_str(wc->status));
			return false;	/* the idle check's / a bind's own (an
					 * error one failed the conn above) */
		}
		out->op_context = (void *)ctx;
		out->op = op;
		out->status = verbs_wc_status(status);
		out->provider_status = (uint32_t)status;
		if (wc->status != IBV_WC_SUCCESS)
			return true;
	}
	out->byte_len = wc->byte_len;
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		out->has_imm = true;
		out->imm = be32toh(wc->imm_data);
	}
	return true;
}

/*
 * The device refused to poll the CQ: it is in error (an overrun, a CQ_ERR)
 * and will deliver nothing more. Every conn it serves is lost now, with a
 * clear reason, rather than waiting for completions that never come (T26).
 */
static void
cq_failed(struct verbs_cq *cq, int err)
{
	char why[160];
	snprintf(why, sizeof(why), "polling its %s failed (%s): the CQ is in error (overrun?) and delivers nothing more",
			cq->base.is_rcq ? "receive CQ" : "CQ", strerror(err));
	if (cq->base.conn != NULL) {
		PMREP_LOG_ERR("%s", why);
		verbs_conn_mark_lost((struct verbs_conn *)cq->base.conn, why);
		return;
	}
	/* an SRQ's receive CQ: every conn on that SRQ */
	struct verbs_peer *peer = verbs_peer(cq->base.peer);
	PMREP_LOG_ERR("SRQ: %s", why);
	pthread_mutex_lock(&peer->lock);
	for (struct verbs_conn *c = peer->conns; c; c = c->reg_next)
		if (c->srq != NULL && c->srq->rcq == cq)
			verbs_conn_mark_lost(c, why);
	pthread_mutex_unlock(&peer->lock);
}

int
verbs_cq_get_completions(struct pmrep_cq *base, struct pmrep_completion *out,
		int max, int *n)
{
	struct verbs_cq *cq = (struct verbs_cq *)base;
	struct ibv_wc wc[POLL_BATCH];
	int got = 0;

	/* a request held by PMREP_F_MORE would never complete: post it */
	if (cq->base.conn != NULL) {
		int ret = verbs_hold_post((struct verbs_conn *)cq->base.conn,
				"a poll for its completions");
		if (ret) {
			*n = 0;
			return ret;
		}
	}
	/* T22: the CQ goes away with a removed device */
	struct verbs_peer *peer = verbs_peer(cq->base.peer);
	verbs_dev_rdlock(peer);
	if (atomic_load(&peer->removed)) {
		verbs_dev_unlock(peer);
		*n = 0;
		PMREP_LOG_ERR("the CQ's RDMA device was removed");
		return PMREP_E_CONN_LOST;
	}
	while (got < max) {
		int want = max - got < POLL_BATCH ? max - got : POLL_BATCH;
		errno = 0;
		int ret = ibv_poll_cq(cq->cq, want, wc);
		if (ret < 0) {
			verbs_dev_unlock(peer);
			*n = got;
			/* ibv_poll_cq gives no errno; some providers set it */
			int err = errno ? errno : EIO;
			cq_failed(cq, err);
			return PMREP_ERR_PROVIDER(err, "ibv_poll_cq");
		}
		for (int i = 0; i < ret; i++) {
			if (convert(cq, &wc[i], &out[got]))
				got++;
		}
		if (ret < want)
			break;	/* the CQ is empty */
	}
	verbs_dev_unlock(peer);
	*n = got;
	return got ? 0 : PMREP_E_NO_COMPLETION;
}
