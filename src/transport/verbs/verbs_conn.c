/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_conn.c -- the verbs connection's objects: allocation, its queues
 * (CQs, QP, receive table, send ring) and fds, the RC timing it asks for
 * (T23), and posting receives. How it ends -- marked lost (the error
 * completion that ends it: T21), the bounded teardown (drain, destroy,
 * release on a device removal) -- is in verbs_conn_end.c; the state
 * machine behind pmrep_conn_next_event, disconnect and the waits in
 * verbs_conn_sm.c.
 *
 * The event fd is an epoll set of three fds, so that one fd wakes the user
 * for everything the state machine may act on: the conn's own rdma_cm
 * channel, a timerfd (connect attempt limit, retry backoff; once
 * established, the idle check's tick) and an eventfd that async events
 * (any thread) and local decisions write to.
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

int
verbs_conn_queues_delete(struct verbs_conn *conn)
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
	(void) verbs_conn_queues_delete(conn);
	return ret;
}

/* ------------------------------------- a passive request's late queues */

void
verbs_conn_queues_defer(struct verbs_conn *conn)
{
	const struct pmrep_conn_cfg *cfg = &conn->base.cfg;

	if (cfg->srq)
		atomic_fetch_add(&cfg->srq->nconns, 1);
	if (cfg->comp_channel)
		atomic_fetch_add(&cfg->comp_channel->ncqs, 1);
	conn->cfg_pinned = true;
	conn->lazy_queues = true;
}

void
verbs_conn_queues_unpin(struct verbs_conn *conn)
{
	const struct pmrep_conn_cfg *cfg = &conn->base.cfg;

	if (!conn->cfg_pinned)
		return;
	if (cfg->srq)
		atomic_fetch_sub(&cfg->srq->nconns, 1);
	if (cfg->comp_channel)
		atomic_fetch_sub(&cfg->comp_channel->ncqs, 1);
	conn->cfg_pinned = false;
}

int
verbs_conn_req_queues(struct verbs_conn *conn, const char *what)
{
	if (!conn->lazy_queues)
		return 0;
	int ret = verbs_conn_queues_new(conn);
	if (ret == 0) {
		ret = verbs_conn_qp_new(conn);
		if (ret)
			(void) verbs_conn_queues_delete(conn);
	}
	if (ret) {
		PMREP_LOG_ERR("%s: cannot make the connection request's CQs and QP (%s); none of them is left",
				what, pmrep_err_to_str(ret));
		return ret;
	}
	/* the queues hold the SRQ and the channel themselves now */
	verbs_conn_queues_unpin(conn);
	conn->lazy_queues = false;
	return 0;
}

void
verbs_conn_cqs_set_qp(struct verbs_conn *conn, uint32_t qp_num)
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
	verbs_conn_cqs_set_qp(conn, conn->qp->qp_num);
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
int
verbs_conn_qp_allow_flush(struct verbs_conn *conn)
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
int
verbs_conn_qp_allow_flush(struct verbs_conn *conn)
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

int
verbs_conn_post_recv(struct verbs_conn *conn, uint64_t addr, uint32_t len,
		uint32_t lkey, const void *op_context)
{
	if (conn->state == VERBS_ST_ESTABLISHED)
		return verbs_conn_post_recv_locked(conn, addr, len, lkey, op_context);
	/* before ESTABLISHED a retry (maybe in a CQ wait's pump, on another
	 * thread) replaces the QP and re-posts the kept receives */
	pthread_mutex_lock(&conn->sm_lock);
	int ret = verbs_conn_post_recv_locked(conn, addr, len, lkey, op_context);
	pthread_mutex_unlock(&conn->sm_lock);
	return ret;
}

/* post one receive (sm_lock held, or the conn is ESTABLISHED) */
int
verbs_conn_post_recv_locked(struct verbs_conn *conn, uint64_t addr, uint32_t len,
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
