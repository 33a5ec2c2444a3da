/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_conn.c -- the tcp connection object: built from a consumed request
 * (its CQs, channels, queues, fds and progress thread), its events, and
 * what the application thread does to it (post, disconnect, delete). The
 * thread itself lives in tcp_progress.c (its parts: tcp_progress.h).
 *
 * fds: event_fd (eventfd, readable while an event is queued), wake_fd
 * (the thread's doorbell, internal), the CQs' channel fds (tcp_cq.c), the
 * socket (owned by the thread). All are closed by tcp_conn_delete.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcp.h"
#include "transport/common.h"

void
tcp_conn_kick_locked(struct tcp_conn *c)
{
	if (!c->kicked) {
		c->kicked = true;
		tcp_eventfd_signal(c->wake_fd);
	}
}

void
tcp_conn_push_event_locked(struct tcp_conn *c, enum pmrep_conn_event ev)
{
	if (c->nevents == TCP_EVENTS_MAX) {
		PMREP_LOG_ERR("connection event %s dropped: queue full",
				pmrep_conn_event_str(ev));
		return;
	}
	c->events[c->nevents++] = ev;
	if (ev == PMREP_CONN_ESTABLISHED)
		c->established = true;
	else
		c->app_wake = true;	/* later receives must be flushed */
	if (!c->event_signaled) {
		c->event_signaled = true;
		tcp_eventfd_signal(c->base.event_fd);
	}
}

int
tcp_conn_next_event(struct pmrep_conn *conn, enum pmrep_conn_event *event)
{
	struct tcp_conn *c = tcp_conn(conn);
	int ret = 0;
	pthread_mutex_lock(&c->lock);
	if (c->nevents == 0) {
		ret = PMREP_E_NO_EVENT;
	} else {
		*event = c->events[0];
		memmove(c->events, c->events + 1,
				sizeof(c->events[0]) * (size_t)--c->nevents);
	}
	/* the fd stays readable exactly while an event is queued */
	if (c->nevents == 0 && c->event_signaled) {
		c->event_signaled = false;
		tcp_eventfd_drain(c->base.event_fd);
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int
tcp_conn_disconnect(struct pmrep_conn *conn)
{
	struct tcp_conn *c = tcp_conn(conn);
	pthread_mutex_lock(&c->lock);
	c->disconnect_req = true;
	c->disconnecting = true;
	tcp_conn_kick_locked(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static void
conn_free(struct tcp_conn *c)
{
	struct tcp_peer *p = tcp_peer(c->base.peer);
	pthread_rwlock_wrlock(&p->mem_lock);
	struct tcp_conn **pp = &p->conns;
	while (*pp != NULL && *pp != c)
		pp = &(*pp)->peer_next;
	if (*pp == c)
		*pp = c->peer_next;
	pthread_rwlock_unlock(&p->mem_lock);

	if (c->srq != NULL)
		tcp_srq_detach(c->srq, c);
	if (c->comp_channel != NULL)
		atomic_fetch_sub(&c->comp_channel->base.ncqs, c->rcq ? 2 : 1);
	tcp_cq_delete(c->rcq);
	tcp_cq_delete(c->cq);
	if (c->own_chan != NULL) {
		tcp_chan_fini(c->own_chan);
		free(c->own_chan);
	}
	for (unsigned i = 0; i < c->tx_count; i++)
		free(c->tx[(c->tx_first + i) % TCP_TX_FRAMES].owned);
	tcp_tls_free(c->tls);
	tcp_tls_wipe_cfg(&c->base.cfg);
	if (c->sock >= 0)
		close(c->sock);
	if (c->sock_dead >= 0)
		close(c->sock_dead);
	if (c->base.event_fd >= 0)
		close(c->base.event_fd);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->prog_lock);
	tcp_rq_fini(&c->rq);
	free(c->resp);
	free(c->rxbuf);
	free(c->sq);
	free(c);
}

/* the CQs (and the conn's own channel when the cfg asks for one) */
static int
make_cqs(struct tcp_conn *c)
{
	const struct pmrep_conn_cfg *cfg = &c->base.cfg;
	struct tcp_comp_channel *ch = (struct tcp_comp_channel *)cfg->comp_channel;
	struct tcp_chan *shared = NULL;
	if (ch != NULL) {
		shared = &ch->chan;
	} else if (cfg->shared_comp_channel) {
		c->own_chan = malloc(sizeof(*c->own_chan));
		if (c->own_chan == NULL) {
			PMREP_LOG_ERR("out of memory for a completion channel");
			return PMREP_E_NOMEM;
		}
		int ret = tcp_chan_init(c->own_chan);
		if (ret) {
			free(c->own_chan);
			c->own_chan = NULL;
			return ret;
		}
		shared = c->own_chan;
	}
	if (shared != NULL)
		c->base.comp_fd = shared->fd;

	int ret = tcp_cq_new(c->base.peer, &c->base, false, cfg->cq_size,
			shared, &c->cq);
	if (ret)
		return ret;
	if (cfg->rcq_size > 0) {
		ret = tcp_cq_new(c->base.peer, &c->base, true, cfg->rcq_size,
				shared, &c->rcq);
		if (ret)
			return ret;
	}
	c->base.cq = &c->cq->base;
	c->base.rcq = c->rcq ? &c->rcq->base : NULL;
	if (ch != NULL) {	/* counted from here on: conn_free uncounts */
		c->comp_channel = ch;
		atomic_fetch_add(&ch->base.ncqs, c->rcq ? 2 : 1);
	}
	return 0;
}

int
tcp_conn_from_req(struct tcp_conn_req *req,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn_ptr)
{
	int ret = PMREP_E_NOMEM;
	struct tcp_conn *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		PMREP_LOG_ERR("out of memory for a connection");
		tcp_conn_req_delete(&req->base);
		return PMREP_E_NOMEM;
	}
	c->base.peer = req->base.peer;
	c->base.cfg = req->base.cfg;
	c->base.comp_fd = -1;
	c->base.flush_method = PMREP_FLUSH_METHOD_NATIVE;
	c->sock = c->sock_dead = c->thr_sock = -1;
	c->thr_deadline = -1;
	c->wake_fd = -1;
	c->active = !req->base.passive;
	c->addr = req->addr;
	c->addrlen = req->addrlen;
	c->peer_rnr_ms = req->peer_rnr_ms;
	/* active: offer ours; passive: the lower of ours and the HELLO's */
	c->wire_version = req->base.passive && req->peer_version <
		TCP_WIRE_VERSION ? req->peer_version : TCP_WIRE_VERSION;
	c->ack_sent = UINT32_MAX;	/* "all before request 0": a no-op */
	c->rx_queued = -1;
	c->state = TCP_CONN_CONNECTING;
	c->connect_start = pmrep_now_ms();	/* the retry budget starts now */
	if (pdata != NULL && pdata->len > 0) {
		memcpy(c->my_pdata, pdata->ptr, pdata->len);
		c->my_pdata_len = pdata->len;
	}
	/* passive: the initiator's private data, already our copy */
	c->base.pdata_len = req->base.pdata_len;
	memcpy(c->base.pdata, req->base.pdata, req->base.pdata_len);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->prog_lock, NULL);
	atomic_init(&c->app_waiters, 0);
	/* the receives posted on the request move over */
	c->rq = req->rq;
	req->rq.ring = NULL;

	c->base.event_fd = tcp_eventfd();
	c->wake_fd = tcp_eventfd();
	if (c->base.event_fd < 0 || c->wake_fd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, "eventfd");
		goto err;
	}
	c->sq_size = c->base.cfg.sq_size;
	c->sq_mask = tcp_pow2(c->sq_size) - 1;
	c->sq = calloc((size_t)c->sq_mask + 1, sizeof(*c->sq));
	c->rxbuf = malloc(TCP_RX_BUF_SIZE);
	if (c->sq == NULL || c->rxbuf == NULL) {
		PMREP_LOG_ERR("out of memory for a connection's queues");
		goto err;
	}
	ret = make_cqs(c);
	if (ret)
		goto err;
	if (c->base.cfg.srq != NULL) {
		c->srq = (struct tcp_srq *)c->base.cfg.srq;
		c->recv_cq = (struct tcp_cq *)c->srq->base.rcq;
		tcp_srq_attach(c->srq, c);
	} else {
		c->recv_cq = c->rcq ? c->rcq : c->cq;
	}

	struct tcp_peer *p = tcp_peer(c->base.peer);
	pthread_rwlock_wrlock(&p->mem_lock);
	c->peer_next = p->conns;
	p->conns = c;
	pthread_rwlock_unlock(&p->mem_lock);

	c->sock = req->sock;	/* passive: the accepted socket */
	req->sock = -1;
	c->tls = req->tls;	/* ... and its TLS session */
	req->tls = NULL;
	if (c->tls)
		tcp_tls_set_cause(c->tls, &c->base.cause);

	/* the thread takes no signals meant for the application */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = pthread_create(&c->thread, NULL, tcp_progress_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err == 0)	/* its own name, not its creator's (ps, perf) */
		(void) pthread_setname_np(c->thread, "pmrep-tcp");
	if (err) {
		ret = PMREP_ERR_PROVIDER(err, "pthread_create");
		req->sock = c->sock;	/* rejected below */
		c->sock = -1;
		req->tls = c->tls;
		c->tls = NULL;
		goto err;
	}
	tcp_conn_req_delete(&req->base);
	*conn_ptr = &c->base;
	return 0;

err:
	conn_free(c);
	tcp_conn_req_delete(&req->base);
	return ret;
}

int
tcp_conn_delete(struct pmrep_conn *conn)
{
	struct tcp_conn *c = tcp_conn(conn);
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	tcp_conn_kick_locked(c);
	pthread_mutex_unlock(&c->lock);
	/* the thread flushes every request on its way out: each one posted
	 * ends with exactly one completion, bounded in time */
	pthread_join(c->thread, NULL);
	conn_free(c);
	return 0;
}

static const uint8_t wire_type[] = {
	[PMREP_OP_READ] = TCP_WIRE_READ,
	[PMREP_OP_WRITE] = TCP_WIRE_WRITE,
	[PMREP_OP_ATOMIC_WRITE] = TCP_WIRE_ATOMIC_WRITE,
	[PMREP_OP_FLUSH] = TCP_WIRE_FLUSH,
	[PMREP_OP_SEND] = TCP_WIRE_SEND,
};

/* send what is queued from this thread (a turn), or have the progress
 * thread do it when it is in a turn itself */
static void
send_now(struct tcp_conn *c)
{
	if (tcp_fast_turn(c, false, false, NULL, NULL, NULL, NULL))
		return;
	pthread_mutex_lock(&c->lock);
	tcp_conn_kick_locked(c);
	pthread_mutex_unlock(&c->lock);
}

int
tcp_post(const struct pmrep_op_args *a)
{
	struct tcp_conn *c = tcp_conn(a->conn);
	int ret = 0;

	if (a->op == PMREP_OP_RECV) {
		if (c->srq != NULL) {
			PMREP_LOG_ERR("recv: the connection uses an SRQ: post with pmrep_srq_recv");
			return PMREP_E_INVAL;
		}
		pthread_mutex_lock(&c->lock);
		if (c->failed) {
			pthread_mutex_unlock(&c->lock);
			PMREP_LOG_ERR("the connection is lost (a request failed: its queues are in the error state): receive refused");
			return PMREP_E_CONN_LOST;
		}
		ret = tcp_rq_put(&c->rq, a->local, a->local_offset, a->len,
				a->op_context);
		if (ret == 0 && (c->rnr_waiting || c->app_wake))
			tcp_conn_kick_locked(c);
		pthread_mutex_unlock(&c->lock);
		return ret;
	}
	if (a->op != PMREP_OP_FLUSH && a->len > TCP_WIRE_DATA_MAX) {
		PMREP_LOG_ERR("%zu bytes in one request: at most %u", a->len,
				TCP_WIRE_DATA_MAX);
		return PMREP_E_INVAL;
	}

	pthread_mutex_lock(&c->lock);
	if (c->failed) {
		pthread_mutex_unlock(&c->lock);
		PMREP_LOG_ERR("the connection is lost (a request failed: its queues are in the error state): post refused");
		return PMREP_E_CONN_LOST;
	}
	if (c->disconnecting || !c->established) {
		bool lost = c->disconnecting || c->app_wake;
		pthread_mutex_unlock(&c->lock);
		PMREP_LOG_ERR("the connection is %s", lost ?
				"being disconnected or has ended" :
				"not established yet (receives may be posted)");
		return lost ? PMREP_E_CONN_LOST : PMREP_E_STATE;
	}
	if (c->sq_tail - c->sq_head >= c->sq_size) {
		pthread_mutex_unlock(&c->lock);
		PMREP_LOG_ERR("send queue full (%u requests in flight)",
				c->sq_size);
		return PMREP_E_AGAIN;
	}
	struct tcp_wr *wr = &c->sq[c->sq_tail & c->sq_mask];
	memset(wr, 0, sizeof(*wr));
	wr->type = wire_type[a->op];
	wr->op = a->op;
	wr->status = PMREP_WC_SUCCESS;
	wr->signaled = a->signaled;
	wr->ctx = a->op_context;
	wr->len = a->len;
	wr->with_imm = a->with_imm;
	wr->imm = a->imm;
	if (a->local != NULL) {
		wr->lkey = a->local->rkey;
		wr->lptr = (uint8_t *)a->local->ptr + a->local_offset;
	}
	if (a->remote != NULL) {
		wr->rkey = a->remote->rkey;
		wr->raddr = a->remote->raddr + a->remote_offset;
	}
	memcpy(wr->value, a->atomic_value, 8);
	wr->flush_type = (uint8_t)a->flush_type;
	c->sq_tail++;
	/* PMREP_F_MORE: held (queued, nobody woken) until the batch ends */
	if (a->more && ++c->held < PMREP_MORE_MAX) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	/* the requests of this batch (a full MORE chain counts itself) */
	unsigned batch = a->more ? c->held : c->held + 1;
	c->held = 0;
	/* a short queue (a persist: write + flush, with or without MORE)
	 * goes out from this thread at once; a deeper one is batched by the
	 * progress thread (one sendmsg for many frames) */
	bool fast = c->sq_tail - c->sq_head <= TCP_FAST_POST_MAX + batch - 1;
	if (!fast)
		tcp_conn_kick_locked(c);
	pthread_mutex_unlock(&c->lock);
	if (fast)
		send_now(c);
	return 0;
}

void
tcp_conn_release_held(struct tcp_conn *c)
{
	pthread_mutex_lock(&c->lock);
	bool held = c->held > 0;
	c->held = 0;
	pthread_mutex_unlock(&c->lock);
	if (held)
		send_now(c);
}
