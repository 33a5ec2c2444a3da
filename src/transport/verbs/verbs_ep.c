/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_ep.c -- the listening endpoint: one rdma_cm id and one event
 * channel. A connection request event is copied (private data included)
 * and acknowledged before its id moves to a channel of its own: the move
 * blocks while an event of that id is unacknowledged (T05). A request
 * taken holds only that id and channel: its CQs and QP are made when it is
 * used -- its first receive, its accept (verbs_conn_req.c) -- so one
 * refused or deleted unused never had any.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "verbs_internal.h"

static int ep_listen_locked(struct verbs_peer *peer, const char *addr,
		const char *port, struct pmrep_ep **ep_ptr);

int
verbs_ep_listen(struct pmrep_peer *base, const char *addr, const char *port,
		struct pmrep_ep **ep_ptr)
{
	struct verbs_peer *peer = verbs_peer(base);

	verbs_dev_rdlock(peer);
	int ret = atomic_load(&peer->removed) ?
		verbs_peer_gone(peer, "pmrep_ep_listen") :
		ep_listen_locked(peer, addr, port, ep_ptr);
	verbs_dev_unlock(peer);
	return ret;
}

static int
ep_listen_locked(struct verbs_peer *peer, const char *addr, const char *port,
		struct pmrep_ep **ep_ptr)
{
	struct pmrep_peer *base = &peer->base;
	struct addrinfo *ai = NULL;
	int ret;

	ret = verbs_getaddrinfo(addr, port, true, &ai);
	if (ret)
		return ret;
	struct verbs_ep *ep = calloc(1, sizeof(*ep));
	if (ep == NULL) {
		PMREP_LOG_ERR("out of memory for an endpoint");
		ret = PMREP_E_NOMEM;
		goto err_free_ai;
	}
	ep->evch = rdma_create_event_channel();
	if (ep->evch == NULL) {
		ret = PMREP_ERR_PROVIDER(errno, "rdma_create_event_channel");
		goto err_free_ep;
	}
	ret = verbs_fd_set_flags(ep->evch->fd, "fcntl(rdma_cm channel)");
	if (ret)
		goto err_destroy_channel;
	if (rdma_create_id(ep->evch, &ep->id, ep, RDMA_PS_TCP)) {
		ret = PMREP_ERR_PROVIDER(errno, "rdma_create_id");
		goto err_destroy_channel;
	}
	if (rdma_bind_addr(ep->id, ai->ai_addr)) {
		ret = PMREP_ERR_PROVIDER(errno, "rdma_bind_addr");
		goto err_destroy_id;
	}
	/* a wildcard address binds no device; a specific one must be ours */
	if (ep->id->verbs != NULL && ep->id->verbs != peer->ctx) {
		PMREP_LOG_ERR("%s belongs to another RDMA device than the peer's",
				addr);
		ret = PMREP_E_INVAL;
		goto err_destroy_id;
	}
	if (rdma_listen(ep->id, VERBS_LISTEN_BACKLOG)) {
		ret = PMREP_ERR_PROVIDER(errno, "rdma_listen");
		goto err_destroy_id;
	}
	freeaddrinfo(ai);
	ep->base.peer = base;
	ep->base.fd = ep->evch->fd;
	ep->base.port = ntohs(rdma_get_src_port(ep->id));
	verbs_peer_add_ep(peer, ep);
	*ep_ptr = &ep->base;
	return 0;

err_destroy_id:
	(void) rdma_destroy_id(ep->id);
err_destroy_channel:
	rdma_destroy_event_channel(ep->evch);
err_free_ep:
	free(ep);
err_free_ai:
	freeaddrinfo(ai);
	return ret;
}

/* refuse a request whose event is already acknowledged, free its id */
static void
refuse(struct rdma_cm_id *id, bool final)
{
	if (rdma_reject(id, final ? verbs_reject_marker : NULL,
			final ? VERBS_REJECT_MARKER_SIZE : 0))
		PMREP_LOG_INFO("rdma_reject: %s", strerror(errno));
	if (rdma_destroy_id(id))
		PMREP_LOG_INFO("rdma_destroy_id: %s", strerror(errno));
}

void
verbs_ep_release(struct verbs_ep *ep)
{
	struct verbs_cm_event ev;

	if (ep->id == NULL)
		return;
	/* requests queued: their ids are on the device too */
	while (verbs_cm_event_take(ep->evch, &ev) == 0) {
		if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST)
			refuse(ev.id, false);
	}
	if (rdma_destroy_id(ep->id))
		PMREP_LOG_WARN("rdma_destroy_id(listener) on a removed device: %s",
				strerror(errno));
	ep->id = NULL;
	PMREP_LOG_ERR("endpoint on port %u lost: its RDMA device was removed",
			(unsigned)ep->base.port);
}

int
verbs_ep_shutdown(struct pmrep_ep *base)
{
	struct verbs_ep *ep = (struct verbs_ep *)base;
	struct verbs_peer *peer = verbs_peer(ep->base.peer);
	struct verbs_cm_event ev;
	int ret = 0, err;

	verbs_peer_del_ep(peer, ep);
	if (ep->id == NULL) {
		/* released with its removed device (T22): the channel is left */
		while (verbs_cm_event_take(ep->evch, &ev) == 0)
			;
		rdma_destroy_event_channel(ep->evch);
		free(ep);
		return 0;
	}

	/* requests nobody took: refused as if nothing listened (the
	 * initiator may retry against a restarted endpoint) */
	while ((err = verbs_cm_event_take(ep->evch, &ev)) == 0) {
		if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST)
			refuse(ev.id, false);
	}
	if (err != PMREP_E_NO_EVENT)
		ret = err;
	if (rdma_destroy_id(ep->id)) {
		if (ret == 0)
			ret = PMREP_ERR_PROVIDER(errno, "rdma_destroy_id");
		/* the id still uses the channel: leave both */
	} else {
		rdma_destroy_event_channel(ep->evch);
	}
	free(ep);
	return ret;
}

/* the request as a passive conn_req with its own channel and id; its CQs
 * and QP come when it is used (verbs_conn_req_queues) */
static int
req_build(struct verbs_ep *ep, const struct pmrep_conn_cfg *cfg,
		const struct verbs_cm_event *ev, const uint8_t *pdata,
		uint8_t pdata_len, struct pmrep_conn_req **req_ptr)
{
	struct verbs_peer *peer = verbs_peer(ep->base.peer);
	int ret;

	struct verbs_conn_req *req = calloc(1, sizeof(*req));
	if (req == NULL) {
		PMREP_LOG_ERR("out of memory for a connection request");
		ret = PMREP_E_NOMEM;
		goto err_refuse;
	}
	struct verbs_conn *conn = verbs_conn_alloc(peer, cfg, true);
	if (conn == NULL) {
		PMREP_LOG_ERR("out of memory for a connection");
		ret = PMREP_E_NOMEM;
		goto err_free_req;
	}
	conn->resp_res = ev->responder_resources;
	conn->init_depth = ev->initiator_depth;
	conn->req_retry = ev->retry_count;
	conn->req_rnr_retry = ev->rnr_retry_count;
	conn->evch = rdma_create_event_channel();
	if (conn->evch == NULL) {
		ret = PMREP_ERR_PROVIDER(errno, "rdma_create_event_channel");
		goto err_destroy_conn;
	}
	ret = verbs_fd_set_flags(conn->evch->fd, "fcntl(rdma_cm channel)");
	if (ret)
		goto err_destroy_conn;
	/* the request event was acknowledged when it was taken: the move
	 * cannot block */
	if (rdma_migrate_id(ev->id, conn->evch)) {
		ret = PMREP_ERR_PROVIDER(errno, "rdma_migrate_id");
		goto err_destroy_conn;
	}
	conn->id = ev->id;
	conn->id->context = conn;
	/* no CQ, no QP yet: the application may still refuse the request
	 * (a flood of requests without the admission proof costs no device
	 * object); made by its first receive or its accept */
	verbs_conn_queues_defer(conn);

	req->conn = conn;
	req->base.peer = &peer->base;
	req->base.cfg = *cfg;
	req->base.passive = true;
	req->base.pdata_len = pdata_len;
	memcpy(req->base.pdata, pdata, pdata_len);
	const struct sockaddr *sa = rdma_get_peer_addr(conn->id);
	if (sa != NULL && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6))
		memcpy(&req->base.src, sa, sa->sa_family == AF_INET ?
				sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	*req_ptr = &req->base;
	return 0;

err_destroy_conn:
	/* a local failure, not the application's no: no marker */
	if (conn->id == NULL) {
		refuse(ev->id, false);
	} else if (rdma_reject(conn->id, NULL, 0)) {
		PMREP_LOG_INFO("rdma_reject: %s", strerror(errno));
	}
	(void) verbs_conn_destroy(conn);
	free(req);
	return ret;
err_free_req:
	free(req);
err_refuse:
	refuse(ev->id, false);
	return ret;
}

static int next_conn_req_locked(struct verbs_ep *ep,
		const struct pmrep_conn_cfg *cfg, struct pmrep_conn_req **req_ptr,
		bool *removal);

int
verbs_ep_next_conn_req(struct pmrep_ep *base, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req_ptr)
{
	struct verbs_ep *ep = (struct verbs_ep *)base;
	struct verbs_peer *peer = verbs_peer(ep->base.peer);
	bool removal = false;

	verbs_dev_rdlock(peer);
	int ret = atomic_load(&peer->removed) || ep->id == NULL ?
		PMREP_E_DEVICE_REMOVED :
		next_conn_req_locked(ep, cfg, req_ptr, &removal);
	verbs_dev_unlock(peer);
	if (removal) {
		/* the listener's id saw DEVICE_REMOVAL (T22) */
		verbs_device_removed(peer,
				"RDMA_CM_EVENT_DEVICE_REMOVAL on a listener");
		ret = PMREP_E_DEVICE_REMOVED;
	}
	if (ret == PMREP_E_DEVICE_REMOVED)
		PMREP_LOG_ERR("endpoint on port %u: its RDMA device was removed; shut it down and listen on a new peer",
				(unsigned)ep->base.port);
	return ret;
}

static int
next_conn_req_locked(struct verbs_ep *ep, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req_ptr, bool *removal)
{
	struct verbs_peer *peer = verbs_peer(ep->base.peer);
	struct verbs_cm_event ev;

	for (;;) {
		int ret = verbs_cm_event_take(ep->evch, &ev);
		if (ret)
			return ret;	/* PMREP_E_NO_EVENT or _PROVIDER */
		if (ev.type != RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (ev.type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
				*removal = true;
				return PMREP_E_DEVICE_REMOVED;
			} else
				PMREP_LOG_INFO("endpoint: ignoring %s (status %d)",
						rdma_event_str(ev.type),
						ev.status);
			continue;
		}
		uint8_t pdata[PMREP_PDATA_ACCEPT_MAX];
		uint8_t len = 0;
		if (verbs_pdata_decode(ev.pdata_len ? ev.pdata : NULL,
				ev.pdata_len, ev.flow_control,
				PMREP_PDATA_CONNECT_MAX, pdata, &len)) {
			/* not pmrep's framing: retrying cannot help */
			refuse(ev.id, true);
			return PMREP_E_MALFORMED;
		}
		if (ev.id->verbs != peer->ctx) {
			PMREP_LOG_ERR("a connection request arrived on another RDMA device than the peer's: refused");
			refuse(ev.id, false);
			continue;
		}
		return req_build(ep, cfg, &ev, pdata, len, req_ptr);
	}
}
