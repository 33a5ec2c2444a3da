/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_peer.c -- the verbs peer: its protection domain, the capabilities
 * probed once at creation, the device's async events (read without
 * blocking, acted on, acknowledged) and the registry of conns those events
 * may concern. Also the provider's ops table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "verbs_internal.h"
#include "transport/common.h"

const struct pmrep_provider_ops pmrep_verbs_ops = {
	.peer_delete = verbs_peer_delete,
	.peer_handle_async_event = verbs_peer_handle_async_event,
	.peer_devx_subscribe = verbs_devx_subscribe,
	.peer_get_devx_fd = verbs_devx_get_fd,
	.peer_handle_devx_event = verbs_devx_handle_event,
	.mr_reg = verbs_mr_reg,
	.mr_dereg = verbs_mr_dereg,
	.comp_channel_new = verbs_comp_channel_new,
	.comp_channel_delete = verbs_comp_channel_delete,
	.comp_channel_wait = verbs_comp_channel_wait,
	.srq_new = verbs_srq_new,
	.srq_delete = verbs_srq_delete,
	.srq_recv = verbs_srq_recv,
	.ep_listen = verbs_ep_listen,
	.ep_shutdown = verbs_ep_shutdown,
	.ep_next_conn_req = verbs_ep_next_conn_req,
	.conn_req_new = verbs_conn_req_new,
	.conn_req_recv = verbs_conn_req_recv,
	.conn_req_connect = verbs_conn_req_connect,
	.conn_req_delete = verbs_conn_req_delete,
	.conn_next_event = verbs_conn_next_event,
	.conn_wait = verbs_conn_wait,
	.conn_disconnect = verbs_conn_disconnect,
	.conn_delete = verbs_conn_delete,
	.cq_wait = verbs_cq_wait,
	.cq_get_completions = verbs_cq_get_completions,
	.post = verbs_post,
	.mw_bind = verbs_mw_bind,
	.mw_invalidate = verbs_mw_invalidate,
};

/*
 * Every verbs peer of the process: an async event is read by whichever peer
 * its owner asks, but concerns the conns of every peer on that device
 * (peers may share an ibv_context -- librdmacm hands out one per device).
 * Lock order: Peers_lock, then a peer's lock.
 */
static pthread_mutex_t Peers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct verbs_peer *Peers;

static void
peers_add(struct verbs_peer *peer)
{
	pthread_mutex_lock(&Peers_lock);
	peer->next = Peers;
	Peers = peer;
	pthread_mutex_unlock(&Peers_lock);
}

static void
peers_remove(struct verbs_peer *peer)
{
	pthread_mutex_lock(&Peers_lock);
	for (struct verbs_peer **pp = &Peers; *pp; pp = &(*pp)->next) {
		if (*pp == peer) {
			*pp = peer->next;
			break;
		}
	}
	pthread_mutex_unlock(&Peers_lock);
}

static uint8_t
clamp_u8(int v)
{
	return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/*
 * The PMREP_CAP_* bits of a device. ODP must cover what a remote peer
 * does to a region registered on demand: RC write and read.
 */
static uint32_t
caps_from_attr(const struct ibv_device_attr_ex *attr)
{
	uint32_t caps = 0;
	const uint32_t rc_need = IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ;

	if ((attr->odp_caps.general_caps & IBV_ODP_SUPPORT) &&
			(attr->odp_caps.per_transport_caps.rc_odp_caps & rc_need)
			== rc_need)
		caps |= PMREP_CAP_ODP;
	if (attr->device_cap_flags_ex & VERBS_DEV_CAP_ATOMIC_WRITE)
		caps |= PMREP_CAP_NATIVE_ATOMIC_WRITE;
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	/* usable only when this libibverbs can post it */
	if (attr->device_cap_flags_ex & VERBS_DEV_CAP_FLUSH_PERSISTENT)
		caps |= PMREP_CAP_NATIVE_FLUSH;
#endif
	return caps;
}

int
pmrep_verbs_peer_new_cm(struct ibv_context *ibv_ctx, struct pmrep_peer **peer_ptr)
{
	int ret = pmrep_verbs_peer_new(ibv_ctx, peer_ptr);
	if (ret == 0)
		verbs_peer(*peer_ptr)->cm_ctx = true;
	return ret;
}

int
pmrep_verbs_peer_new(struct ibv_context *ibv_ctx, struct pmrep_peer **peer_ptr)
{
	struct ibv_device_attr_ex attr;
	int ret;

	struct verbs_peer *peer = calloc(1, sizeof(*peer));
	if (peer == NULL) {
		PMREP_LOG_ERR("out of memory for a verbs peer");
		return PMREP_E_NOMEM;
	}
	memset(&attr, 0, sizeof(attr));
	errno = 0;
	ret = ibv_query_device_ex(ibv_ctx, NULL, &attr);
	if (ret) {
		ret = PMREP_ERR_PROVIDER(ret > 0 ? ret : errno,
				"ibv_query_device_ex");
		goto err_free;
	}
	peer->pd = ibv_alloc_pd(ibv_ctx);
	if (peer->pd == NULL) {
		ret = PMREP_ERR_PROVIDER(errno, "ibv_alloc_pd");
		goto err_free;
	}
	peer->sink = calloc(1, sizeof(*peer->sink));
	if (peer->sink == NULL) {
		PMREP_LOG_ERR("out of memory for the flush sink");
		ret = PMREP_E_NOMEM;
		goto err_dealloc_pd;
	}
	peer->sink_mr = ibv_reg_mr(peer->pd, peer->sink, sizeof(*peer->sink),
			IBV_ACCESS_LOCAL_WRITE);
	if (peer->sink_mr == NULL) {
		ret = PMREP_ERR_PROVIDER(errno, "ibv_reg_mr(flush sink)");
		goto err_free_sink;
	}
	/* the async fd belongs to the ibv_context; we only make it epoll-able */
	ret = verbs_fd_set_flags(ibv_ctx->async_fd, "fcntl(async fd)");
	if (ret)
		goto err_dereg_sink;
	ret = pthread_mutex_init(&peer->lock, NULL);
	if (ret) {
		ret = PMREP_ERR_PROVIDER(ret, "pthread_mutex_init");
		goto err_dereg_sink;
	}
	ret = pthread_rwlock_init(&peer->dev_lock, NULL);
	if (ret) {
		(void) pthread_mutex_destroy(&peer->lock);
		ret = PMREP_ERR_PROVIDER(ret, "pthread_rwlock_init");
		goto err_dereg_sink;
	}
	atomic_init(&peer->removed, false);

	peer->ctx = ibv_ctx;
	peer->max_rd_atom = clamp_u8(attr.orig_attr.max_qp_rd_atom);
	peer->max_init_rd_atom = clamp_u8(attr.orig_attr.max_qp_init_rd_atom);
	peer->nports = attr.orig_attr.phys_port_cnt;
	peer->base.ops = &pmrep_verbs_ops;
	peer->base.provider = PMREP_PROVIDER_VERBS;
	peer->base.caps = caps_from_attr(&attr);
	peer->base.async_fd = ibv_ctx->async_fd;
	atomic_init(&peer->base.nobjects, 0);
	atomic_init(&peer->base.device_removed, false);
	peers_add(peer);
	PMREP_LOG_INFO("verbs peer on %s: caps%s%s%s",
			ibv_ctx->device ? ibv_get_device_name(ibv_ctx->device) : "?",
			(peer->base.caps & PMREP_CAP_ODP) ? " odp" : "",
			(peer->base.caps & PMREP_CAP_NATIVE_ATOMIC_WRITE) ?
				" atomic-write" : "",
			(peer->base.caps & PMREP_CAP_NATIVE_FLUSH) ? " flush" : "");
	*peer_ptr = &peer->base;
	return 0;

err_dereg_sink:
	(void) ibv_dereg_mr(peer->sink_mr);
err_free_sink:
	free(peer->sink);
err_dealloc_pd:
	(void) ibv_dealloc_pd(peer->pd);
err_free:
	free(peer);
	return ret;
}

int
verbs_peer_delete(struct pmrep_peer *base)
{
	struct verbs_peer *peer = verbs_peer(base);
	int ret = 0, err;

	peers_remove(peer);
	verbs_devx_destroy(peer);
	/* a removed device's objects are gone already (T22) */
	if (peer->sink_mr != NULL) {
		err = ibv_dereg_mr(peer->sink_mr);
		if (err)
			ret = PMREP_ERR_PROVIDER(err, "ibv_dereg_mr(flush sink)");
	}
	if (peer->pd != NULL) {
		err = ibv_dealloc_pd(peer->pd);
		if (err && ret == 0)
			ret = PMREP_ERR_PROVIDER(err, "ibv_dealloc_pd");
	}
	(void) pthread_rwlock_destroy(&peer->dev_lock);
	(void) pthread_mutex_destroy(&peer->lock);
	free(peer->sink);
	free(peer);
	return ret;
}

void
verbs_peer_register_conn(struct verbs_peer *peer, struct verbs_conn *conn)
{
	pthread_mutex_lock(&peer->lock);
	conn->reg_prev = NULL;
	conn->reg_next = peer->conns;
	if (peer->conns)
		peer->conns->reg_prev = conn;
	peer->conns = conn;
	conn->registered = true;
	pthread_mutex_unlock(&peer->lock);
}

void
verbs_peer_unregister_conn(struct verbs_peer *peer, struct verbs_conn *conn)
{
	pthread_mutex_lock(&peer->lock);
	if (conn->registered) {
		if (conn->reg_prev)
			conn->reg_prev->reg_next = conn->reg_next;
		else
			peer->conns = conn->reg_next;
		if (conn->reg_next)
			conn->reg_next->reg_prev = conn->reg_prev;
		conn->registered = false;
	}
	pthread_mutex_unlock(&peer->lock);
}

/* does the async event's object belong to this conn? */
static bool
conn_affected(const struct verbs_conn *conn, const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		return conn->qp != NULL && conn->qp == ev->element.qp;
	case IBV_EVENT_CQ_ERR:
		return (conn->cq && conn->cq->cq == ev->element.cq) ||
			(conn->rcq && conn->rcq->cq == ev->element.cq) ||
			(conn->srq && conn->srq->rcq->cq == ev->element.cq);
	case IBV_EVENT_SRQ_ERR:
		return conn->srq != NULL && conn->srq->srq == ev->element.srq;
	case IBV_EVENT_DEVICE_FATAL:
		return true;
	default:
		return false;
	}
}

/*
 * Mark every conn the event concerns as lost, on every peer of the device.
 * The registries are locked while the event is still unacknowledged: a conn
 * unregisters before it destroys its QP / CQs, and destroying an object
 * with an unacknowledged event waits for the acknowledgement, so nothing
 * found here goes away under us.
 */
static void
mark_affected(struct verbs_peer *peer, const struct ibv_async_event *ev)
{
	pthread_mutex_lock(&Peers_lock);
	if (peer->ctx == NULL) {
		pthread_mutex_unlock(&Peers_lock);
		return;
	}
	for (struct verbs_peer *p = Peers; p != NULL; p = p->next) {
		if (p->ctx != peer->ctx)
			continue;
		pthread_mutex_lock(&p->lock);
		for (struct verbs_conn *c = p->conns; c; c = c->reg_next) {
			if (conn_affected(c, ev))
				verbs_conn_mark_lost(c,
					ibv_event_type_str(ev->event_type));
		}
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_unlock(&Peers_lock);
}

void
verbs_peer_mark_device_lost(struct verbs_peer *peer, const char *why)
{
	pthread_mutex_lock(&Peers_lock);
	if (peer->ctx == NULL) {
		pthread_mutex_unlock(&Peers_lock);
		return;
	}
	for (struct verbs_peer *p = Peers; p != NULL; p = p->next) {
		if (p->ctx != peer->ctx)
			continue;
		pthread_mutex_lock(&p->lock);
		for (struct verbs_conn *c = p->conns; c; c = c->reg_next)
			verbs_conn_mark_lost(c, why);
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_unlock(&Peers_lock);
}

void
verbs_device_removed(struct verbs_peer *peer, const char *why)
{
	pthread_mutex_lock(&Peers_lock);
	struct ibv_context *ctx = peer->ctx;
	if (ctx == NULL) {
		/* released already (by another conn, endpoint or event) */
		pthread_mutex_unlock(&Peers_lock);
		return;
	}
	long long t0 = pmrep_now_ms();
	char name[IBV_SYSFS_NAME_MAX] = "?";
	if (ctx->device != NULL)
		snprintf(name, sizeof(name), "%s",
				ibv_get_device_name(ctx->device));
	PMREP_LOG_ERR("RDMA device %s removed (%s): releasing every object on it",
			name, why);
	unsigned n = 0;
	bool cm_ctx = false;
	for (struct verbs_peer *p = Peers; p != NULL; p = p->next) {
		if (p->ctx != ctx)
			continue;
		cm_ctx = cm_ctx || p->cm_ctx;
		pthread_rwlock_wrlock(&p->dev_lock);
		verbs_peer_release_locked(p);
		pthread_rwlock_unlock(&p->dev_lock);
		n++;
	}
	/* librdmacm's context: nothing of pmrep is on it any more */
	if (cm_ctx)
		verbs_cm_ctx_let_go(ctx, name);
	pthread_mutex_unlock(&Peers_lock);
	PMREP_LOG(PMREP_LOG_NOTICE, "RDMA device %s: %u peer(s) released their objects in %lld ms",
			name, n, pmrep_now_ms() - t0);
}

/*
 * An SRQ's receive CQ belongs to no conn: the completion names the QP.
 * Under the registry's lock: a conn unregisters before its QP goes away.
 */
void
verbs_peer_wc_error(struct verbs_peer *peer, const struct ibv_wc *wc)
{
	pthread_mutex_lock(&peer->lock);
	for (struct verbs_conn *c = peer->conns; c; c = c->reg_next) {
		if (c->qp != NULL && c->qp->qp_num == wc->qp_num) {
			verbs_conn_wc_error(c, wc);
			break;
		}
	}
	pthread_mutex_unlock(&peer->lock);
}

int
verbs_peer_handle_async_event(struct pmrep_peer *base,
		enum pmrep_async_event *event)
{
	struct verbs_peer *peer = verbs_peer(base);
	struct ibv_async_event ev;

	*event = PMREP_ASYNC_NONE;
	if (atomic_load(&peer->removed))
		return verbs_peer_gone(peer, "pmrep_peer_handle_async_event");
	if (ibv_get_async_event(peer->ctx, &ev)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return PMREP_ERR_PROVIDER(errno, "ibv_get_async_event");
	}
	switch (ev.event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		*event = PMREP_ASYNC_QP_FATAL;
		break;
	case IBV_EVENT_CQ_ERR:
		*event = PMREP_ASYNC_CQ_ERROR;
		break;
	case IBV_EVENT_DEVICE_FATAL:
		*event = PMREP_ASYNC_DEVICE_FATAL;
		break;
	case IBV_EVENT_PORT_ACTIVE:
		*event = PMREP_ASYNC_PORT_ACTIVE;
		break;
	case IBV_EVENT_PORT_ERR:
		*event = PMREP_ASYNC_PORT_ERROR;
		break;
	default:
		*event = PMREP_ASYNC_OTHER;
		break;
	}
	mark_affected(peer, &ev);
	if (*event == PMREP_ASYNC_OTHER)
		PMREP_LOG_INFO("async event: %s",
				ibv_event_type_str(ev.event_type));
	else
		PMREP_LOG_WARN("async event: %s",
				ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	/* the device is unusable for good: let go of it (T22) */
	if (*event == PMREP_ASYNC_DEVICE_FATAL)
		verbs_device_removed(peer, "IBV_EVENT_DEVICE_FATAL");
	return 0;
}
