/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_conn.c -- the verbs connection: its queues and fds, the total state
 * machine behind pmrep_conn_next_event (every rdma_cm event in every state,
 * connect retries with backoff on a timerfd), disconnect, the shared-channel
 * wait, and the bounded teardown.
 *
 * The event fd is an epoll set of three fds, so that one fd wakes the user
 * for everything the state machine may act on: the conn's own rdma_cm
 * channel, a timerfd (connect attempt limit, retry backoff) and an eventfd
 * that async events (any thread) and local decisions write to.
 *
 * State machine (active: initiator, passive: acceptor; "retry" = tear down
 * id + QP, arm the backoff, or report UNREACHABLE when no retry is left;
 * "ignore" = acknowledged, logged, nothing else). Events of an id other than
 * the current one are ignored. Before any CM event: a lost mark (an async
 * event, or an error completion of the QP: verbs_conn_wc_error, T21) ->
 * LOST; a local disconnect (pmrep_conn_disconnect, in any state) -> CLOSED
 * at once, without waiting for the peer's DREP, which only comes when the
 * remote application looks at its own events.
 *
 * The machine runs in next_event and also in a CQ wait that sees input on
 * the conn's fd (verbs_conn_pump): what it decides there is kept, in
 * order, for next_event. So a peer that disconnects (or dies: its kernel
 * sends the DREQ) moves our QP to error and flushes what is posted even
 * while the application only waits for completions (T08).
 *
 * event \ state     RESOLVING_ADDR/ROUTE  CONNECTING             ESTABLISHED  DISCONNECTING BACKOFF
 * ADDR_RESOLVED     (addr) resolve route  ignore                 ignore       ignore        ignore
 * ROUTE_RESOLVED    (route) QP, connect   ignore                 ignore       ignore        ignore
 * ADDR/ROUTE_ERROR  retry                 act: retry, pas: LOST  LOST         LOST          ignore
 * UNREACHABLE       retry                 act: retry, pas: LOST  LOST         LOST          ignore
 * CONNECT_ERROR     retry                 act: retry, pas: LOST  LOST         LOST          ignore
 * REJECTED          retry                 act: marker ? REJECTED LOST         LOST          ignore
 *                                         : retry; pas: LOST
 * ESTABLISHED       ignore                ESTABLISHED            ignore (dup) ignore        ignore
 * DISCONNECTED      ignore                LOST                   CLOSED (DREP CLOSED        ignore
 *                                                                  answered)
 * DEVICE_REMOVAL    LOST                  LOST                   LOST         LOST          LOST
 * CONNECT_REQUEST, CONNECT_RESPONSE, MULTICAST_*, ADDR_CHANGE,
 * TIMEWAIT_EXIT, unknown                  ignore everywhere
 * timer             retry                 act: retry, pas: LOST  ignore       ignore        new id,
 *                                                                                           resolve addr
 * (ESTABLISHED, active side: the acceptor's private data is decoded; if it
 * is malformed: disconnect, LOST.) A terminal event moves the QP to error,
 * so that every posted request completes now. After it (TERMINAL) nothing
 * is reported again and the rdma_cm fd leaves the epoll set; every event
 * read is acknowledged before next_event returns, on every path.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include "verbs_internal.h"
#include "transport/common.h"

#define DRAIN_POLL_SLEEP_NS 1000000	/* 1 ms between empty polls */

static const char *const state_names[] = {
	[VERBS_ST_NEW] = "NEW",
	[VERBS_ST_RESOLVING_ADDR] = "RESOLVING_ADDR",
	[VERBS_ST_RESOLVING_ROUTE] = "RESOLVING_ROUTE",
	[VERBS_ST_CONNECTING] = "CONNECTING",
	[VERBS_ST_BACKOFF] = "BACKOFF",
	[VERBS_ST_ESTABLISHED] = "ESTABLISHED",
	[VERBS_ST_DISCONNECTING] = "DISCONNECTING",
	[VERBS_ST_TERMINAL] = "TERMINAL",
};

const char *
verbs_conn_state_str(enum verbs_conn_state st)
{
	if ((unsigned)st >= sizeof(state_names) / sizeof(state_names[0]))
		return "?";
	return state_names[st];
}

/* ------------------------------------------------------------ building */

struct verbs_conn *
verbs_conn_alloc(struct verbs_peer *peer, const struct pmrep_conn_cfg *cfg,
		bool passive)
{
	struct verbs_conn *conn = calloc(1, sizeof(*conn));
	if (conn == NULL)
		return NULL;
	/* (cannot fail on Linux with default attributes) */
	if (pthread_mutex_init(&conn->sm_lock, NULL)) {
		free(conn);
		return NULL;
	}
	if (pthread_mutex_init(&conn->hold.lock, NULL)) {
		(void) pthread_mutex_destroy(&conn->sm_lock);
		free(conn);
		return NULL;
	}
	atomic_init(&conn->hold.pending, 0);
	conn->peer = peer;
	conn->passive = passive;
	conn->state = VERBS_ST_NEW;
	conn->base.peer = &peer->base;
	conn->base.cfg = *cfg;
	conn->base.event_fd = -1;
	conn->base.comp_fd = -1;
	conn->base.flush_method = PMREP_FLUSH_METHOD_NONE;
	conn->epfd = -1;
	conn->timerfd = -1;
	conn->notifyfd = -1;
	atomic_init(&conn->lost, false);
	atomic_init(&conn->dev_removal_seen, false);
	return conn;
}

static int
max_u32(uint32_t a, uint32_t b)
{
	return (int)(a > b ? a : b);
}

/* release what verbs_conn_queues_new acquired, in reverse order */
static int
queues_delete(struct verbs_conn *conn)
{
	int ret = 0, err;

	free(conn->prepost);
	conn->prepost = NULL;
	if (conn->rcq) {
		err = verbs_cq_delete(conn->rcq);
		conn->rcq = NULL;
		if (err && ret == 0)
			ret = err;
	}
	if (conn->cq) {
		err = verbs_cq_delete(conn->cq);
		conn->cq = NULL;
		if (err && ret == 0)
			ret = err;
	}
	conn->base.cq = NULL;
	conn->base.rcq = NULL;
	if (conn->rings_ready) {
		verbs_rq_table_fini(&conn->rq);
		verbs_sq_ring_fini(&conn->sq);
		conn->rings_ready = false;
	}
	if (conn->own_shared_ch) {
		err = ibv_destroy_comp_channel(conn->own_shared_ch);
		conn->own_shared_ch = NULL;
		if (err && ret == 0)
			ret = PMREP_ERR_PROVIDER(err, "ibv_destroy_comp_channel");
	}
	if (conn->srq) {
		atomic_fetch_sub(&conn->srq->base.nconns, 1);
		conn->srq = NULL;
	}
	conn->ext_ch = NULL;
	conn->base.comp_fd = -1;
	return ret;
}

int
verbs_conn_queues_new(struct verbs_conn *conn)
{
	const struct pmrep_conn_cfg *cfg = &conn->base.cfg;
	struct ibv_comp_channel *shared = NULL;
	int ret;

	if (cfg->srq) {
		conn->srq = (struct verbs_srq *)cfg->srq;
		atomic_fetch_add(&conn->srq->base.nconns, 1);
	}
	if (cfg->comp_channel) {
		conn->ext_ch = (struct verbs_comp_channel *)cfg->comp_channel;
		shared = conn->ext_ch->ch;
	} else if (cfg->shared_comp_channel) {
		conn->own_shared_ch = ibv_create_comp_channel(conn->peer->ctx);
		if (conn->own_shared_ch == NULL) {
			ret = PMREP_ERR_PROVIDER(errno, "ibv_create_comp_channel");
			goto err;
		}
		ret = verbs_fd_set_flags(conn->own_shared_ch->fd,
				"fcntl(completion channel)");
		if (ret)
			goto err;
		shared = conn->own_shared_ch;
	}

	ret = verbs_sq_ring_init(&conn->sq, cfg->sq_size);
	if (ret)
		goto err;
	ret = verbs_rq_table_init(&conn->rq, cfg->rq_size);
	if (ret) {
		verbs_sq_ring_fini(&conn->sq);
		goto err;
	}
	conn->rings_ready = true;

	bool own_rcq = cfg->rcq_size > 0 && conn->srq == NULL;
	/*
	 * A QP moved to error flushes every outstanding request, signalled
	 * or not, into its CQs: size them so that this can never overrun
	 * (+1: conn delete's drain marker).
	 */
	int cqe = max_u32(cfg->cq_size, cfg->sq_size + 1);
	if (!own_rcq && conn->srq == NULL)
		cqe += (int)cfg->rq_size + 1;
	ret = verbs_cq_new(conn->peer, cqe, shared, conn->ext_ch, &conn->cq);
	if (ret)
		goto err;
	conn->cq->base.conn = &conn->base;
	conn->cq->sq = &conn->sq;
	conn->cq->rq = (!own_rcq && conn->srq == NULL) ? &conn->rq : NULL;
	conn->cq->filter_qp = true;
	if (own_rcq) {
		ret = verbs_cq_new(conn->peer,
				max_u32(cfg->rcq_size, cfg->rq_size + 1),
				shared, conn->ext_ch, &conn->rcq);
		if (ret)
			goto err;
		conn->rcq->base.conn = &conn->base;
		conn->rcq->base.is_rcq = true;
		conn->rcq->rq = &conn->rq;
		conn->rcq->filter_qp = true;
	}
	if (!conn->passive && conn->srq == NULL) {
		conn->prepost = calloc(cfg->rq_size, sizeof(*conn->prepost));
		if (conn->prepost == NULL) {
			PMREP_LOG_ERR("out of memory for %u pre-posted receives",
					cfg->rq_size);
			ret = PMREP_E_NOMEM;
			goto err;
		}
	}
	conn->base.cq = &conn->cq->base;
	conn->base.rcq = conn->rcq ? &conn->rcq->base : NULL;
	conn->base.comp_fd = shared ? shared->fd : -1;
	return 0;

err:
	(void) queues_delete(conn);
	return ret;
}

static void
cqs_set_qp(struct verbs_conn *conn, uint32_t qp_num)
{
	if (conn->cq)
		conn->cq->qp_num = qp_num;
	if (conn->rcq)
		conn->rcq->qp_num = qp_num;
}

int
verbs_conn_qp_new(struct verbs_conn *conn)
{
	const struct pmrep_conn_cfg *cfg = &conn->base.cfg;
	uint32_t caps = conn->peer->base.caps;
	struct ibv_qp_init_attr_ex attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_context = conn;
	attr.send_cq = conn->cq->cq;
	attr.recv_cq = conn->srq ? conn->srq->rcq->cq :
		conn->rcq ? conn->rcq->cq : conn->cq->cq;
	attr.srq = conn->srq ? conn->srq->srq : NULL;
	/* +1: room for conn delete's drain marker */
	attr.cap.max_send_wr = cfg->sq_size + 1;
	attr.cap.max_recv_wr = conn->srq ? 0 : cfg->rq_size + 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = VERBS_MAX_INLINE;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 0;
	attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr.pd = conn->peer->pd;
	bool ex = (caps & (PMREP_CAP_NATIVE_ATOMIC_WRITE |
			PMREP_CAP_NATIVE_FLUSH)) != 0;
	if (ex) {
		attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		attr.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
			IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			IBV_QP_EX_WITH_RDMA_READ;
		if (caps & PMREP_CAP_NATIVE_ATOMIC_WRITE)
			attr.send_ops_flags |= IBV_QP_EX_WITH_ATOMIC_WRITE;
#ifdef PMREP_HAVE_IBV_WR_FLUSH
		if (caps & PMREP_CAP_NATIVE_FLUSH)
			attr.send_ops_flags |= IBV_QP_EX_WITH_FLUSH;
#endif
	}
	if (rdma_create_qp_ex(conn->id, &attr))
		return PMREP_ERR_PROVIDER(errno, "rdma_create_qp_ex");
	conn->qp = conn->id->qp;
	if (ex) {
		conn->qpx = ibv_qp_to_qp_ex(conn->qp);
		if (conn->qpx == NULL) {
			int ret = PMREP_ERR_PROVIDER(errno ? errno : EOPNOTSUPP,
					"ibv_qp_to_qp_ex");
			(void) ibv_destroy_qp(conn->qp);
			conn->id->qp = NULL;
			conn->qp = NULL;
			return ret;
		}
	}
	cqs_set_qp(conn, conn->qp->qp_num);
	return 0;
}

#ifdef PMREP_HAVE_IBV_WR_FLUSH
/*
 * A flush arriving at a QP without the flush access bits fails with
 * "remote invalid request". rdma_cm sets the access flags itself on the
 * way to RTR, so they are added once the QP is in RTS: the passive side
 * right after rdma_accept (the initiator may post a flush as soon as it
 * sees ESTABLISHED, before our ESTABLISHED event is read), the active side
 * at ESTABLISHED.
 */
static int
qp_allow_flush(struct verbs_conn *conn)
{
	if (!(conn->peer->base.caps & PMREP_CAP_NATIVE_FLUSH))
		return 0;
	struct ibv_qp_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		IBV_ACCESS_FLUSH_GLOBAL | IBV_ACCESS_FLUSH_PERSISTENT;
	int err = ibv_modify_qp(conn->qp, &attr, IBV_QP_ACCESS_FLAGS);
	if (err)
		return PMREP_ERR_PROVIDER(err, "ibv_modify_qp(flush access)");
	return 0;
}
#else
static int
qp_allow_flush(struct verbs_conn *conn)
{
	(void) conn;
	return 0;
}
#endif

int
verbs_conn_fds_new(struct verbs_conn *conn)
{
	int ret;

	conn->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (conn->epfd < 0)
		return PMREP_ERR_PROVIDER(errno, "epoll_create1");
	ret = verbs_fd_set_flags(conn->epfd, "fcntl(epoll fd)");
	if (ret)
		goto err_close_ep;
	conn->timerfd = timerfd_create(CLOCK_MONOTONIC,
			TFD_NONBLOCK | TFD_CLOEXEC);
	if (conn->timerfd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, "timerfd_create");
		goto err_close_ep;
	}
	conn->notifyfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (conn->notifyfd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, "eventfd");
		goto err_close_timer;
	}
	int fds[3] = { conn->evch->fd, conn->timerfd, conn->notifyfd };
	for (int i = 0; i < 3; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[i] };
		if (epoll_ctl(conn->epfd, EPOLL_CTL_ADD, fds[i], &ev)) {
			ret = PMREP_ERR_PROVIDER(errno, "epoll_ctl(ADD)");
			goto err_close_notify;
		}
	}
	conn->cm_fd_watched = true;
	conn->base.event_fd = conn->epfd;
	return 0;

err_close_notify:
	(void) close(conn->notifyfd);
	conn->notifyfd = -1;
err_close_timer:
	(void) close(conn->timerfd);
	conn->timerfd = -1;
err_close_ep:
	(void) close(conn->epfd);
	conn->epfd = -1;
	return ret;
}

/* ------------------------------------------------- RC timing (T23) */

/* 4.096 us * 2^exp in ns */
static uint64_t
ack_timeout_ns(unsigned exp)
{
	return 4096ULL << exp;
}

void
verbs_rc_timing(int timeout_ms, struct pmrep_conn_rc_timing *t)
{
	uint64_t total_ns = (uint64_t)(timeout_ms > 0 ? timeout_ms : 1) *
		1000000ULL;
	unsigned exp = VERBS_ACK_TIMEOUT_EXP_MIN;
	while (exp < VERBS_ACK_TIMEOUT_EXP_MAX &&
			ack_timeout_ns(exp + 1) <= total_ns / 4)
		exp++;
	uint64_t tries = total_ns / ack_timeout_ns(exp);
	uint64_t retry = tries > 1 ? tries - 1 : 1;
	if (retry > 7)
		retry = 7;
	memset(t, 0, sizeof(*t));
	t->ack_timeout_exp = exp;
	t->ack_timeout_us = (ack_timeout_ns(exp) + 999) / 1000;
	t->retry_count = (unsigned)retry;
	t->rnr_retry_count = VERBS_RNR_RETRY_COUNT;
	t->detect_us = t->ack_timeout_us * (retry + 1);
}

int
verbs_conn_set_ack_timeout(struct verbs_conn *conn)
{
	struct pmrep_conn_rc_timing t;
	verbs_rc_timing(conn->base.cfg.timeout_ms, &t);
	if (conn->passive) {
		/* the initiator's REQ decides both for our QP */
		t.retry_count = conn->req_retry;
		t.rnr_retry_count = conn->req_rnr_retry;
		t.detect_us = t.ack_timeout_us * (t.retry_count + 1ULL);
	}
	uint8_t exp = (uint8_t)t.ack_timeout_exp;
	if (rdma_set_option(conn->id, RDMA_OPTION_ID,
			RDMA_OPTION_ID_ACK_TIMEOUT, &exp, sizeof(exp)))
		return PMREP_ERR_PROVIDER(errno,
				"rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)");
	if (!conn->base.has_rc_timing)
		PMREP_LOG_DBG("local ACK timeout exponent %u (%llu us per retransmission), %u retries: a dead peer is detected in about %llu us",
				t.ack_timeout_exp,
				(unsigned long long)t.ack_timeout_us,
				t.retry_count, (unsigned long long)t.detect_us);
	if (conn->passive && t.rnr_retry_count == VERBS_RNR_RETRY_INFINITE)
		PMREP_LOG_WARN("the initiator asks for unbounded RNR retries (7): a peer that never posts a receive is never detected");
	conn->base.rc_timing = t;
	conn->base.has_rc_timing = true;
	return 0;
}

void
verbs_conn_param(const struct verbs_conn *conn, struct rdma_conn_param *param)
{
	memset(param, 0, sizeof(*param));
	param->private_data = conn->my_pdata.len ? conn->my_pdata.buf : NULL;
	param->private_data_len = conn->my_pdata.len;
	param->flow_control = conn->my_pdata.flow_control;
	/* the initiator's decides both QPs' (rdma_accept ignores it) */
	param->retry_count = (uint8_t)conn->base.rc_timing.retry_count;
	param->rnr_retry_count = VERBS_RNR_RETRY_COUNT;
	if (conn->passive) {
		/* at most what the initiator asked for, and what we have */
		param->responder_resources =
			conn->resp_res < conn->peer->max_rd_atom ?
			conn->resp_res : conn->peer->max_rd_atom;
		param->initiator_depth =
			conn->init_depth < conn->peer->max_init_rd_atom ?
			conn->init_depth : conn->peer->max_init_rd_atom;
	} else {
		param->responder_resources = conn->peer->max_rd_atom;
		param->initiator_depth = conn->peer->max_init_rd_atom;
	}
}

static int
post_recv_locked(struct verbs_conn *conn, uint64_t addr, uint32_t len,
		uint32_t lkey, const void *op_context);

int
verbs_conn_post_recv(struct verbs_conn *conn, uint64_t addr, uint32_t len,
		uint32_t lkey, const void *op_context)
{
	if (conn->state == VERBS_ST_ESTABLISHED)
		return post_recv_locked(conn, addr, len, lkey, op_context);
	/* before ESTABLISHED a retry (maybe in a CQ wait's pump, on another
	 * thread) replaces the QP and re-posts the kept receives */
	pthread_mutex_lock(&conn->sm_lock);
	int ret = post_recv_locked(conn, addr, len, lkey, op_context);
	pthread_mutex_unlock(&conn->sm_lock);
	return ret;
}

/* post one receive (sm_lock held, or the conn is ESTABLISHED) */
static int
post_recv_locked(struct verbs_conn *conn, uint64_t addr, uint32_t len,
		uint32_t lkey, const void *op_context)
{
	/* before ESTABLISHED the active side keeps a copy: a retry re-posts */
	bool keep = conn->prepost != NULL;
	if (keep && conn->nprepost == conn->base.cfg.rq_size) {
		PMREP_LOG_ERR("receive queue full (%u receives posted)",
				conn->nprepost);
		return PMREP_E_AGAIN;
	}
	if (conn->qp != NULL) {
		struct ibv_recv_wr *bad;
		struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
		struct ibv_recv_wr wr = {
			.sg_list = &sge, .num_sge = len ? 1 : 0,
		};
		int ret = verbs_rq_table_get(&conn->rq, op_context, &wr.wr_id);
		if (ret)
			return ret;
		int err = ibv_post_recv(conn->qp, &wr, &bad);
		if (err) {
			verbs_rq_table_put(&conn->rq, wr.wr_id);
			if (err == ENOMEM)
				return PMREP_E_AGAIN;
			return PMREP_ERR_PROVIDER(err, "ibv_post_recv");
		}
	} else if (!keep) {
		PMREP_LOG_ERR("the connection has no QP now");
		return PMREP_E_STATE;
	}
	if (keep) {
		struct verbs_prepost *p = &conn->prepost[conn->nprepost++];
		p->addr = addr;
		p->len = len;
		p->lkey = lkey;
		p->op_context = op_context;
	}
	return 0;
}

/* ----------------------------------------------------------- teardown */

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

static int
qp_destroy(struct verbs_conn *conn)
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
static void
cqs_drop_stale(struct verbs_conn *conn)
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
		err = qp_destroy(conn);
		if (err && ret == 0)
			ret = err;
	}
	/* CQs before their channels (verbs_cq_delete, queues_delete) */
	err = queues_delete(conn);
	if (err && ret == 0)
		ret = err;
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

static void go_terminal(struct verbs_conn *conn);
static void notify_raise(struct verbs_conn *conn);

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
		go_terminal(conn);
	}
	if (conn->npending)
		notify_raise(conn);
	/* what PMREP_F_MORE holds can never be posted now */
	pthread_mutex_lock(&conn->hold.lock);
	conn->hold.n = 0;
	conn->hold.native = false;
	atomic_store(&conn->hold.pending, 0);
	pthread_mutex_unlock(&conn->hold.lock);
	if (conn->qp != NULL && qp_destroy(conn))
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
 * the terminal event (its QP was moved to error by go_terminal), or while
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

/* -------------------------------------------------------- state machine */

static int
timer_arm(struct verbs_conn *conn, int ms)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = ms / 1000;
	its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
	if (ms <= 0)
		its.it_value.tv_nsec = 1;	/* 0 would disarm it */
	if (timerfd_settime(conn->timerfd, 0, &its, NULL))
		return PMREP_ERR_PROVIDER(errno, "timerfd_settime");
	return 0;
}

static void
timer_disarm(struct verbs_conn *conn)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	(void) timerfd_settime(conn->timerfd, 0, &its, NULL);
}

static bool
timer_expired(struct verbs_conn *conn)
{
	uint64_t n;
	return read(conn->timerfd, &n, sizeof(n)) == (ssize_t)sizeof(n) && n;
}

static void
notify_clear(struct verbs_conn *conn)
{
	uint64_t n;
	(void) read(conn->notifyfd, &n, sizeof(n));
}

static void
notify_raise(struct verbs_conn *conn)
{
	uint64_t one = 1;
	(void) write(conn->notifyfd, &one, sizeof(one));
}

/* the one way to a terminal event: quiet every fd of the set */
static void
go_terminal(struct verbs_conn *conn)
{
	conn->state = VERBS_ST_TERMINAL;
	timer_disarm(conn);
	notify_clear(conn);
	/* nothing moves on this QP any more: whatever is posted completes
	 * now (flushed), not after the transport's retries run out (T08) */
	if (conn->qp) {
		struct ibv_qp_attr attr;
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_ERR;
		int err = ibv_modify_qp(conn->qp, &attr, IBV_QP_STATE);
		if (err)
			PMREP_LOG_INFO("ibv_modify_qp(ERR): %s", strerror(err));
	}
	if (conn->cm_fd_watched) {
		(void) epoll_ctl(conn->epfd, EPOLL_CTL_DEL, conn->evch->fd, NULL);
		conn->cm_fd_watched = false;
	}
}

/* what one step of the machine decided */
struct step {
	bool report;
	enum pmrep_conn_event event;
};

static void
step_report(struct step *s, enum pmrep_conn_event ev)
{
	s->report = true;
	s->event = ev;
}

/*
 * Each attempt (resolution, connect) is limited by the cfg timeout, and
 * all of them with their backoffs by timeout x (retries + 1): a peer that
 * never answers is reported UNREACHABLE within that (T17).
 */
static int
attempt_limit(const struct verbs_conn *conn)
{
	long long left = conn->deadline_ms - pmrep_now_ms();
	int t = conn->base.cfg.timeout_ms;
	return left < t ? (left > 0 ? (int)left : 0) : t;
}

/* give up the current attempt's id and QP */
static void
attempt_teardown(struct verbs_conn *conn)
{
	if (conn->qp) {
		if (qp_destroy(conn))
			PMREP_LOG_WARN("a failed attempt's QP did not go away cleanly");
		/* what the old QP left (flushed pre-posted receives) is
		 * stale: the receives are posted again on the next QP */
		cqs_drop_stale(conn);
	}
	cqs_set_qp(conn, 0);
	if (conn->rings_ready) {
		verbs_sq_ring_reset(&conn->sq);
		verbs_rq_table_reset(&conn->rq);
	}
	if (conn->id) {
		if (rdma_destroy_id(conn->id)) {
			PMREP_LOG_WARN("rdma_destroy_id: %s", strerror(errno));
			conn->evch_pinned = true;
		}
		conn->id = NULL;
	}
}

/* the attempt failed: back off and retry, or report UNREACHABLE */
static void
attempt_failed(struct verbs_conn *conn, const char *why, struct step *s)
{
	attempt_teardown(conn);
	long long left = conn->deadline_ms - pmrep_now_ms();
	if (conn->retries_left == 0 || left <= 0) {
		PMREP_LOG_ERR("connection attempt failed (%s) and %s: unreachable",
				why, conn->retries_left ? "the time is up" :
				"no retry is left");
		step_report(s, PMREP_CONN_UNREACHABLE);
		return;
	}
	conn->retries_left--;
	int wait = conn->backoff_ms < left ? conn->backoff_ms : (int)left;
	PMREP_LOG_INFO("connection attempt failed (%s): retrying in %d ms (%u more)",
			why, wait, conn->retries_left);
	if (timer_arm(conn, wait)) {
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	conn->backoff_ms = conn->backoff_ms * 2 > VERBS_BACKOFF_CAP_MS ?
		VERBS_BACKOFF_CAP_MS : conn->backoff_ms * 2;
	conn->state = VERBS_ST_BACKOFF;
}

/* backoff over: a new id on the same channel, resolving again */
static void
attempt_start(struct verbs_conn *conn, struct step *s)
{
	if (rdma_create_id(conn->evch, &conn->id, conn, RDMA_PS_TCP)) {
		conn->id = NULL;
		(void) PMREP_ERR_PROVIDER(errno, "rdma_create_id");
		attempt_failed(conn, "rdma_create_id", s);
		return;
	}
	if (rdma_resolve_addr(conn->id, NULL, (struct sockaddr *)&conn->dst,
			conn->base.cfg.timeout_ms)) {
		(void) PMREP_ERR_PROVIDER(errno, "rdma_resolve_addr");
		attempt_failed(conn, "rdma_resolve_addr", s);
		return;
	}
	if (timer_arm(conn, attempt_limit(conn))) {
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	conn->state = VERBS_ST_RESOLVING_ADDR;
}

/* route known: QP, the receives posted before, connect */
static void
attempt_connect(struct verbs_conn *conn, struct step *s)
{
	struct rdma_conn_param param;

	if (conn->id->verbs != conn->peer->ctx) {
		PMREP_LOG_ERR("the address now resolves through another RDMA device");
		attempt_teardown(conn);
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	if (verbs_conn_qp_new(conn)) {
		attempt_failed(conn, "rdma_create_qp_ex", s);
		return;
	}
	uint32_t n = conn->nprepost;
	conn->nprepost = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct verbs_prepost p = conn->prepost[i];
		if (post_recv_locked(conn, p.addr, p.len, p.lkey,
				p.op_context)) {
			attempt_failed(conn, "ibv_post_recv", s);
			return;
		}
	}
	/* a new id: its ACK timeout again (T23) */
	if (verbs_conn_set_ack_timeout(conn)) {
		attempt_failed(conn, "rdma_set_option", s);
		return;
	}
	verbs_conn_param(conn, &param);
	if (rdma_connect(conn->id, &param)) {
		(void) PMREP_ERR_PROVIDER(errno, "rdma_connect");
		attempt_failed(conn, "rdma_connect", s);
		return;
	}
	if (timer_arm(conn, attempt_limit(conn))) {
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	conn->state = VERBS_ST_CONNECTING;
}

static bool
resolving(const struct verbs_conn *conn)
{
	return conn->state == VERBS_ST_RESOLVING_ADDR ||
		conn->state == VERBS_ST_RESOLVING_ROUTE;
}

static bool
up(const struct verbs_conn *conn)
{
	return conn->state == VERBS_ST_ESTABLISHED ||
		conn->state == VERBS_ST_DISCONNECTING;
}

/*
 * Idle detection: an RC QP notices a dead peer only when something it
 * sent goes unacknowledged, so an idle conn would never notice. While
 * ESTABLISHED, the conn's timer ticks every VERBS_TICK_DIV-th of the cfg
 * timeout T. A tick
 *  - asks the QP's state: in error (the retries of something posted ran
 *    out, unseen because nobody polled the CQ yet) -> LOST;
 *  - when the send queue is empty, posts a heartbeat: a signalled
 *    zero-length RDMA WRITE with no address and no rkey (a zero-byte
 *    RDMA op needs neither: IBA C9-88), which the peer's RNIC
 *    acknowledges without its application; its completion is never
 *    reported (verbs_cq.c), an error one fails the conn (T21).
 * So a dead peer of an idle conn is declared lost within T/4 (the next
 * tick) + T (the heartbeat's retransmissions, T23) + T/4 (the tick that
 * finds the QP in error) = 1.5 T -- whether or not the application polls
 * the CQ, as long as it runs the conn's events (the event fd, an epoll set
 * holding the timerfd, wakes it for each tick; next_event returns
 * PMREP_E_NO_EVENT for a quiet one).
 */
static int
tick_period_ms(const struct verbs_conn *conn)
{
	int t = conn->base.cfg.timeout_ms / VERBS_TICK_DIV;
	return t > 0 ? t : 1;
}

/* (sm_lock held: the device's lock only if free -- lock order is
 * dev_lock before sm_lock; a release in progress ends the conn anyway) */
static void
on_tick(struct verbs_conn *conn, struct step *s)
{
	(void) timer_arm(conn, tick_period_ms(conn));
	if (pthread_rwlock_tryrdlock(&conn->peer->dev_lock))
		return;
	bool lost = false;
	if (!atomic_load(&conn->peer->removed) && conn->qp != NULL) {
		struct ibv_qp_attr attr;
		struct ibv_qp_init_attr init;
		if (ibv_query_qp(conn->qp, &attr, IBV_QP_STATE, &init) == 0 &&
				(attr.qp_state == IBV_QPS_ERR ||
				attr.qp_state == IBV_QPS_SQE)) {
			PMREP_LOG_ERR("QP %u is in the error state (found by the idle check): the connection is lost",
					conn->qp->qp_num);
			lost = true;
		} else if (verbs_sq_ring_outstanding(&conn->sq) == 0) {
			(void) verbs_post_heartbeat(conn);
		}
	}
	verbs_dev_unlock(conn->peer);
	if (lost)
		step_report(s, PMREP_CONN_LOST);
}

/* the connection came up: ESTABLISHED (active: with the accept's data) */
static void
on_established(struct verbs_conn *conn, const struct verbs_cm_event *ev,
		struct step *s)
{
	if (!conn->passive) {
		uint8_t len = 0;
		if (verbs_pdata_decode(ev->pdata_len ? ev->pdata : NULL,
				ev->pdata_len, ev->flow_control,
				PMREP_PDATA_ACCEPT_MAX, conn->base.pdata, &len)) {
			PMREP_LOG_ERR("the accepting side sent malformed private data: dropping the connection");
			(void) rdma_disconnect(conn->id);
			step_report(s, PMREP_CONN_LOST);
			return;
		}
		conn->base.pdata_len = len;
		/* the acceptor's REP decides our QP's RNR retries */
		conn->base.rc_timing.rnr_retry_count = ev->rnr_retry_count;
		if (ev->rnr_retry_count == VERBS_RNR_RETRY_INFINITE)
			PMREP_LOG_WARN("the acceptor grants unbounded RNR retries (7): a peer that never posts a receive is never detected");
		/* no retry from here on */
		free(conn->prepost);
		conn->prepost = NULL;
		conn->nprepost = 0;
	}
	timer_disarm(conn);
	if (!conn->passive && qp_allow_flush(conn)) {
		(void) rdma_disconnect(conn->id);
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	conn->state = VERBS_ST_ESTABLISHED;
	/* from now on the timer is the idle check's (on_tick) */
	(void) timer_arm(conn, tick_period_ms(conn));
	step_report(s, PMREP_CONN_ESTABLISHED);
}

/* an attempt-level failure: retry (active, before ESTABLISHED) or LOST */
static void
on_failure(struct verbs_conn *conn, const struct verbs_cm_event *ev,
		struct step *s)
{
	if (resolving(conn) || conn->state == VERBS_ST_CONNECTING) {
		if (conn->passive)
			step_report(s, PMREP_CONN_LOST);
		else
			attempt_failed(conn, rdma_event_str(ev->type), s);
	} else if (up(conn)) {
		step_report(s, PMREP_CONN_LOST);
	}
	/* NEW / BACKOFF: no id of ours could have sent it: ignore */
}

static void
ignore(const struct verbs_conn *conn, const struct verbs_cm_event *ev)
{
	PMREP_LOG_INFO("ignoring %s (status %d) in state %s",
			rdma_event_str(ev->type), ev->status,
			verbs_conn_state_str(conn->state));
}

static void
on_cm_event(struct verbs_conn *conn, const struct verbs_cm_event *ev,
		struct step *s)
{
	if (conn->id == NULL || ev->id != conn->id) {
		/* an earlier attempt's id (already destroyed) */
		ignore(conn, ev);
		return;
	}
	PMREP_LOG_DBG("%s (status %d) in state %s", rdma_event_str(ev->type),
			ev->status, verbs_conn_state_str(conn->state));
	switch (ev->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (conn->state != VERBS_ST_RESOLVING_ADDR) {
			ignore(conn, ev);
			return;
		}
		if (rdma_resolve_route(conn->id, conn->base.cfg.timeout_ms)) {
			(void) PMREP_ERR_PROVIDER(errno, "rdma_resolve_route");
			attempt_failed(conn, "rdma_resolve_route", s);
			return;
		}
		conn->state = VERBS_ST_RESOLVING_ROUTE;
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (conn->state != VERBS_ST_RESOLVING_ROUTE) {
			ignore(conn, ev);
			return;
		}
		attempt_connect(conn, s);
		return;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		PMREP_LOG_INFO("%s (status %d)", rdma_event_str(ev->type),
				ev->status);
		on_failure(conn, ev, s);
		return;
	case RDMA_CM_EVENT_REJECTED:
		if (conn->state == VERBS_ST_CONNECTING && !conn->passive &&
				verbs_reject_is_explicit(ev->pdata,
					ev->pdata_len)) {
			PMREP_LOG_ERR("the passive side rejected the connection");
			step_report(s, PMREP_CONN_REJECTED);
			return;
		}
		PMREP_LOG_INFO("REJECTED (status %d) without pmrep's marker: nothing listens there (yet)",
				ev->status);
		on_failure(conn, ev, s);
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (conn->state != VERBS_ST_CONNECTING) {
			ignore(conn, ev);
			return;
		}
		on_established(conn, ev, s);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (conn->state == VERBS_ST_ESTABLISHED) {
			/* the peer's DREQ: answer it, or its side waits for
			 * the DREQ to time out before it sees DISCONNECTED */
			if (rdma_disconnect(conn->id))
				PMREP_LOG_INFO("rdma_disconnect: %s",
						strerror(errno));
			step_report(s, PMREP_CONN_CLOSED);
		} else if (conn->state == VERBS_ST_DISCONNECTING) {
			step_report(s, PMREP_CONN_CLOSED);
		} else if (conn->state == VERBS_ST_CONNECTING) {
			step_report(s, PMREP_CONN_LOST);
		} else {
			ignore(conn, ev);
		}
		return;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* the caller releases the device once sm_lock is dropped */
		PMREP_LOG_ERR("the RDMA device was removed");
		atomic_store(&conn->dev_removal_seen, true);
		step_report(s, PMREP_CONN_LOST);
		return;
	default:
		/* CONNECT_REQUEST, CONNECT_RESPONSE, MULTICAST_*, ADDR_CHANGE,
		 * TIMEWAIT_EXIT and whatever a newer librdmacm adds */
		ignore(conn, ev);
		return;
	}
}

static void
on_timer(struct verbs_conn *conn, struct step *s)
{
	switch (conn->state) {
	case VERBS_ST_BACKOFF:
		attempt_start(conn, s);
		return;
	case VERBS_ST_RESOLVING_ADDR:
	case VERBS_ST_RESOLVING_ROUTE:
		attempt_failed(conn, "resolution timed out", s);
		return;
	case VERBS_ST_CONNECTING:
		PMREP_LOG_INFO("connect did not complete in %d ms",
				conn->base.cfg.timeout_ms);
		if (conn->passive)
			step_report(s, PMREP_CONN_LOST);
		else
			attempt_failed(conn, "connect timed out", s);
		return;
	case VERBS_ST_ESTABLISHED:
		on_tick(conn, s);
		return;
	default:
		return;	/* a stale expiry */
	}
}

int
verbs_conn_start(struct verbs_conn *conn)
{
	struct rdma_conn_param param;
	int ret;

	ret = verbs_conn_fds_new(conn);
	if (ret)
		return ret;
	/* each side its own id's local ACK timeout, before connect / accept */
	ret = verbs_conn_set_ack_timeout(conn);
	if (ret)
		return ret;
	verbs_conn_param(conn, &param);
	if (conn->passive) {
		if (rdma_accept(conn->id, &param))
			return PMREP_ERR_PROVIDER(errno, "rdma_accept");
		ret = qp_allow_flush(conn);
		if (ret)
			return ret;
	} else {
		conn->retries_left = conn->base.cfg.connect_retries;
		conn->backoff_ms = conn->base.cfg.retry_backoff_ms > 0 ?
			conn->base.cfg.retry_backoff_ms : 1;
		conn->deadline_ms = pmrep_now_ms() +
			(long long)conn->base.cfg.timeout_ms *
			((long long)conn->retries_left + 1);
		if (rdma_connect(conn->id, &param))
			return PMREP_ERR_PROVIDER(errno, "rdma_connect");
	}
	/* connect (and accept: until the initiator's RTU) within the cfg
	 * timeout */
	ret = timer_arm(conn, conn->base.cfg.timeout_ms);
	if (ret)
		return ret;
	conn->state = VERBS_ST_CONNECTING;
	verbs_peer_register_conn(conn->peer, conn);
	return 0;
}

/*
 * One step of the machine (sm_lock held): what the state machine makes of
 * its input -- the async lost mark, a local close, CM events, the timer --
 * up to the first event to report. 0 with s->report set, or
 * PMREP_E_NO_EVENT, or PMREP_E_PROVIDER (reading the CM channel failed).
 */
static int
sm_step(struct verbs_conn *conn, struct step *s)
{
	notify_clear(conn);
	if (atomic_load(&conn->lost)) {
		step_report(s, PMREP_CONN_LOST);
		return 0;
	}
	if (conn->local_close) {
		step_report(s, PMREP_CONN_CLOSED);
		return 0;
	}
	/* CM events first: an ESTABLISHED that is there beats a timeout */
	for (;;) {
		struct verbs_cm_event ev;
		int ret = verbs_cm_event_take(conn->evch, &ev);
		if (ret == PMREP_E_NO_EVENT)
			break;
		if (ret)
			return ret;
		on_cm_event(conn, &ev, s);
		if (s->report)
			return 0;
	}
	if (timer_expired(conn)) {
		on_timer(conn, s);
		if (s->report)
			return 0;
	}
	return PMREP_E_NO_EVENT;
}

/* an event is decided: a terminal one ends the machine at once */
static void
sm_decided(struct verbs_conn *conn, enum pmrep_conn_event ev)
{
	if (ev != PMREP_CONN_ESTABLISHED)
		go_terminal(conn);
}

/*
 * The conn's id saw DEVICE_REMOVAL: release the device (T22) now, holding
 * no lock (every caller of the state machine: next_event, the pump).
 */
static void
device_removal_due(struct verbs_conn *conn)
{
	if (atomic_load(&conn->dev_removal_seen) &&
			!atomic_load(&conn->peer->removed))
		verbs_device_removed(conn->peer,
				"RDMA_CM_EVENT_DEVICE_REMOVAL on a connection");
}

bool
verbs_conn_pump(struct verbs_conn *conn)
{
	if (pthread_mutex_trylock(&conn->sm_lock))
		return false;	/* its owner is at it right now */
	while (conn->npending < VERBS_PENDING_MAX &&
			conn->state != VERBS_ST_TERMINAL) {
		struct step s = { false, PMREP_CONN_UNDEFINED };
		if (sm_step(conn, &s) || !s.report)
			break;
		conn->pending[conn->npending++] = s.event;
		sm_decided(conn, s.event);
	}
	/* the event fd stays readable until next_event reports them */
	if (conn->npending)
		notify_raise(conn);
	pthread_mutex_unlock(&conn->sm_lock);
	device_removal_due(conn);
	return true;
}

bool
verbs_conn_watchable(const struct verbs_conn *conn)
{
	return conn->state != VERBS_ST_TERMINAL && conn->npending == 0;
}

int
verbs_conn_next_event(struct pmrep_conn *base, enum pmrep_conn_event *event)
{
	struct verbs_conn *conn = (struct verbs_conn *)base;
	struct step s = { false, PMREP_CONN_UNDEFINED };
	int ret = 0;

	pthread_mutex_lock(&conn->sm_lock);
	if (conn->npending) {
		/* decided while a CQ wait pumped the machine */
		*event = conn->pending[0];
		conn->npending--;
		memmove(conn->pending, conn->pending + 1,
				sizeof(conn->pending[0]) * conn->npending);
		if (conn->npending)
			notify_raise(conn);
		else
			notify_clear(conn);
		goto out;
	}
	if (conn->state == VERBS_ST_TERMINAL) {
		ret = PMREP_E_NO_EVENT;
		goto out;
	}
	ret = sm_step(conn, &s);
	if (ret == 0) {
		*event = s.event;
		sm_decided(conn, s.event);
	}
out:
	pthread_mutex_unlock(&conn->sm_lock);
	device_removal_due(conn);
	return ret;
}

int
verbs_conn_disconnect(struct pmrep_conn *base)
{
	struct verbs_conn *conn = (struct verbs_conn *)base;
	/* what PMREP_F_MORE holds goes out before the DREQ (on a QP already
	 * in error: flushed, so it still ends with a completion) */
	int held = verbs_hold_post(conn, "the connection is disconnected");
	int ret = 0;

	pthread_mutex_lock(&conn->sm_lock);
	switch (conn->state) {
	case VERBS_ST_ESTABLISHED:
		/* moves the QP to error and sends the DREQ. CLOSED is reported
		 * now: waiting for the peer's DREP would tie our event to the
		 * remote application's next look at its own events */
		if (rdma_disconnect(conn->id)) {
			ret = PMREP_ERR_PROVIDER(errno, "rdma_disconnect");
			break;
		}
		conn->state = VERBS_ST_DISCONNECTING;
		conn->local_close = true;
		notify_raise(conn);
		break;
	case VERBS_ST_DISCONNECTING:
	case VERBS_ST_TERMINAL:
		break;
	default:
		/* not up yet: stop trying and report CLOSED */
		if (conn->state == VERBS_ST_CONNECTING && conn->id &&
				rdma_disconnect(conn->id))
			PMREP_LOG_INFO("rdma_disconnect before ESTABLISHED: %s",
					strerror(errno));
		timer_disarm(conn);
		conn->local_close = true;
		notify_raise(conn);
		break;
	}
	pthread_mutex_unlock(&conn->sm_lock);
	return ret ? ret : held;
}

int
verbs_conn_wait(struct pmrep_conn *base, int timeout_ms, struct pmrep_cq **cq,
		bool *is_rcq)
{
	struct verbs_conn *conn = (struct verbs_conn *)base;

	if (atomic_load(&conn->peer->removed)) {
		PMREP_LOG_ERR("the connection is lost: its RDMA device was removed");
		return PMREP_E_CONN_LOST;
	}
	if (conn->own_shared_ch == NULL) {
		/* a pmrep_comp_channel carries other conns' events too */
		PMREP_LOG_ERR("the conn's CQs are on a pmrep_comp_channel: use pmrep_comp_channel_wait");
		return PMREP_E_SHARED_CHANNEL;
	}
	int ret = verbs_hold_post(conn, "the conn waits for completions");
	if (ret)
		return ret;
	struct verbs_cq *got = NULL;
	ret = verbs_wait_cq_event(conn->peer, conn->own_shared_ch, conn,
			timeout_ms, &got);
	if (ret == PMREP_E_TIMEOUT && timeout_ms == 0)
		return PMREP_E_NO_COMPLETION;
	if (ret)
		return ret;
	*cq = &got->base;
	*is_rcq = got->base.is_rcq;
	return 0;
}
