/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_conn_req.c -- connection requests. Active side: the conn's own
 * rdma_cm event channel and id, address and route resolved within the cfg
 * timeout, CQs and QP; nothing sent. Passive side: built by the endpoint
 * (verbs_ep.c) with its id and channel only; its CQs and QP are made when
 * it is used -- the first receive posted on it (not one on the cfg's SRQ,
 * which needs no QP), or its accept -- and the call that needed them
 * reports their failure. Connect / accept turns the request into the
 * conn; dropping a passive request rejects it with pmrep's marker (final
 * for the initiator) and destroys whatever it has: its id, maybe nothing
 * else.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"
#include "transport/common.h"

/* wait for `want` (or `fail`) on the conn's channel before the deadline */
static int
resolve_step(struct verbs_conn *conn, enum rdma_cm_event_type want,
		enum rdma_cm_event_type fail, long long deadline)
{
	struct verbs_cm_event ev;

	for (;;) {
		int ret = verbs_cm_event_wait(conn->evch, deadline, &ev);
		if (ret == PMREP_E_TIMEOUT) {
			PMREP_LOG_ERR("%s did not arrive within %d ms",
					rdma_event_str(want),
					conn->base.cfg.timeout_ms);
			return PMREP_E_UNREACHABLE;
		}
		if (ret)
			return ret;
		if (ev.type == want)
			return 0;
		if (ev.type == fail) {
			pmrep_err_set_errno(ev.status < 0 ? -ev.status : 0);
			PMREP_LOG_ERR("%s (status %d)", rdma_event_str(ev.type),
					ev.status);
			return PMREP_E_UNREACHABLE;
		}
		PMREP_LOG_INFO("ignoring %s while waiting for %s",
				rdma_event_str(ev.type), rdma_event_str(want));
	}
}

/*
 * A resolve call failing at once: no device or route for the address is
 * "unreachable" like a failure reported later by an event; anything else
 * (no memory, a bad id) is the provider's.
 */
static int
resolve_failed(const char *what)
{
	int err = errno;
	switch (err) {
	case ENODEV:
	case ENETUNREACH:
	case EHOSTUNREACH:
	case EADDRNOTAVAIL:
	case ETIMEDOUT:
		pmrep_err_set_errno(err);
		PMREP_LOG_ERR("%s: %s", what, strerror(err));
		return PMREP_E_UNREACHABLE;
	default:
		return PMREP_ERR_PROVIDER(err, what);
	}
}

int
verbs_conn_resolve(struct verbs_conn *conn)
{
	int timeout = conn->base.cfg.timeout_ms;
	long long deadline = pmrep_now_ms() + timeout;
	int ret;

	if (rdma_resolve_addr(conn->id, NULL, (struct sockaddr *)&conn->dst,
			timeout))
		return resolve_failed("rdma_resolve_addr");
	ret = resolve_step(conn, RDMA_CM_EVENT_ADDR_RESOLVED,
			RDMA_CM_EVENT_ADDR_ERROR, deadline);
	if (ret)
		return ret;
	if (conn->id->verbs != conn->peer->ctx) {
		PMREP_LOG_ERR("the address is reached through another RDMA device than the peer's");
		return PMREP_E_INVAL;
	}
	long long left = deadline - pmrep_now_ms();
	if (rdma_resolve_route(conn->id, left > 0 ? (int)left : 1))
		return resolve_failed("rdma_resolve_route");
	return resolve_step(conn, RDMA_CM_EVENT_ROUTE_RESOLVED,
			RDMA_CM_EVENT_ROUTE_ERROR, deadline);
}

int
verbs_conn_req_new(struct pmrep_peer *base, const char *addr, const char *port,
		const struct pmrep_conn_cfg *cfg, struct pmrep_conn_req **req_ptr)
{
	struct verbs_peer *peer = verbs_peer(base);
	struct addrinfo *ai = NULL;
	int ret;

	if (atomic_load(&peer->removed))
		return verbs_peer_gone(peer, "pmrep_conn_req_new");
	ret = verbs_getaddrinfo(addr, port, false, &ai);
	if (ret)
		return ret;
	struct verbs_conn_req *req = calloc(1, sizeof(*req));
	if (req == NULL) {
		PMREP_LOG_ERR("out of memory for a connection request");
		ret = PMREP_E_NOMEM;
		goto err_free_ai;
	}
	struct verbs_conn *conn = verbs_conn_alloc(peer, cfg, false);
	if (conn == NULL) {
		PMREP_LOG_ERR("out of memory for a connection");
		ret = PMREP_E_NOMEM;
		goto err_free_req;
	}
	memcpy(&conn->dst, ai->ai_addr, ai->ai_addrlen);
	/* the conn's own channel from the start: its events never pass
	 * through anyone else's (T05) */
	conn->evch = rdma_create_event_channel();
	if (conn->evch == NULL) {
		ret = PMREP_ERR_PROVIDER(errno, "rdma_create_event_channel");
		goto err_destroy_conn;
	}
	ret = verbs_fd_set_flags(conn->evch->fd, "fcntl(rdma_cm channel)");
	if (ret)
		goto err_destroy_conn;
	if (rdma_create_id(conn->evch, &conn->id, conn, RDMA_PS_TCP)) {
		conn->id = NULL;
		ret = PMREP_ERR_PROVIDER(errno, "rdma_create_id");
		goto err_destroy_conn;
	}
	ret = verbs_conn_resolve(conn);
	if (ret) {
		/* no route any more: maybe the peer's device is gone and
		 * nothing told us (its conns were deleted unread) -- T22 */
		if (!verbs_device_listed(peer)) {
			(void) verbs_conn_destroy(conn);
			conn = NULL;
			verbs_device_removed(peer,
				"the device left the device list");
			ret = verbs_peer_gone(peer, "pmrep_conn_req_new");
		}
		goto err_destroy_conn;
	}
	/* the queues on the device: not while it is being released */
	verbs_dev_rdlock(peer);
	if (atomic_load(&peer->removed)) {
		verbs_dev_unlock(peer);
		ret = verbs_peer_gone(peer, "pmrep_conn_req_new");
		goto err_destroy_conn;
	}
	ret = verbs_conn_queues_new(conn);
	if (ret == 0)
		ret = verbs_conn_qp_new(conn);
	verbs_dev_unlock(peer);
	if (ret)
		goto err_destroy_conn;

	freeaddrinfo(ai);
	req->conn = conn;
	req->base.peer = base;
	req->base.cfg = *cfg;
	req->base.passive = false;
	req->base.pdata_len = 0;
	*req_ptr = &req->base;
	return 0;

	/* verbs_conn_destroy undoes exactly what exists, in reverse order */
err_destroy_conn:
	if (conn != NULL)
		(void) verbs_conn_destroy(conn);
err_free_req:
	free(req);
err_free_ai:
	freeaddrinfo(ai);
	return ret;
}

int
verbs_conn_req_recv(struct pmrep_conn_req *base, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context)
{
	struct verbs_conn *conn = ((struct verbs_conn_req *)base)->conn;

	if (len > UINT32_MAX) {
		PMREP_LOG_ERR("a receive of %zu bytes: at most 4 GiB - 1", len);
		return PMREP_E_INVAL;
	}
	int ret;
	/* the cfg's: a deferred request has no conn->srq yet */
	struct verbs_srq *srq = (struct verbs_srq *)conn->base.cfg.srq;
	verbs_dev_rdlock(conn->peer);
	if (atomic_load(&conn->peer->removed))
		ret = verbs_peer_gone(conn->peer, "pmrep_conn_req_recv");
	else if (srq)
		ret = verbs_srq_post_recv(srq, dst, offset, len, op_context);
	else if ((ret = verbs_conn_req_queues(conn,
			"pmrep_conn_req_recv")) == 0)
		ret = verbs_conn_post_recv(conn, (uintptr_t)dst->ptr + offset,
				(uint32_t)len, verbs_mr_lkey(dst), op_context);
	verbs_dev_unlock(conn->peer);
	return ret;
}

int
verbs_conn_req_connect(struct pmrep_conn_req *base,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn_ptr)
{
	struct verbs_conn_req *req = (struct verbs_conn_req *)base;
	struct verbs_conn *conn = req->conn;
	bool passive = req->base.passive;
	int ret;

	/* passive: the conn reports the initiator's private data */
	conn->base.pdata_len = req->base.pdata_len;
	memcpy(conn->base.pdata, req->base.pdata, req->base.pdata_len);
	free(req);		/* consumed on every path */

	verbs_pdata_encode(pdata, passive ? PMREP_PDATA_ACCEPT_MAX :
			PMREP_PDATA_CONNECT_MAX, &conn->my_pdata);
	verbs_dev_rdlock(conn->peer);
	if (atomic_load(&conn->peer->removed))
		ret = verbs_peer_gone(conn->peer, "pmrep_conn_req_connect");
	else if ((ret = verbs_conn_req_queues(conn,
			"pmrep_conn_req_connect")) == 0)
		ret = verbs_conn_start(conn);
	verbs_dev_unlock(conn->peer);
	if (ret) {
		/* the initiator may retry: this is no explicit reject */
		if (passive && rdma_reject(conn->id, NULL, 0))
			PMREP_LOG_INFO("rdma_reject: %s", strerror(errno));
		(void) verbs_conn_destroy(conn);
		return ret;
	}
	*conn_ptr = &conn->base;
	return 0;
}

int
verbs_conn_req_delete(struct pmrep_conn_req *base)
{
	struct verbs_conn_req *req = (struct verbs_conn_req *)base;
	struct verbs_conn *conn = req->conn;
	struct verbs_peer *peer = conn->peer;
	int ret = 0;

	/* a DEVICE_REMOVAL on the request's own channel, unread: deleting
	 * the request must not hide that the device is gone (T22); its id
	 * can send no reject then */
	bool removal = false;
	if (req->base.passive && conn->evch != NULL &&
			!atomic_load(&peer->removed)) {
		struct verbs_cm_event ev;
		while (verbs_cm_event_take(conn->evch, &ev) == 0) {
			if (ev.type == RDMA_CM_EVENT_DEVICE_REMOVAL)
				removal = true;
		}
	}
	/* a refusal by the application: final for the initiator (with the
	 * marker), or one it retries (without: pmrep_conn_req_reject) */
	if (req->base.passive && !removal && rdma_reject(conn->id,
			req->base.reject_retry ? NULL : verbs_reject_marker,
			req->base.reject_retry ? 0 : VERBS_REJECT_MARKER_SIZE))
		ret = PMREP_ERR_PROVIDER(errno, "rdma_reject");
	/* a request never used has no CQ and no QP: only its id goes */
	int err = verbs_conn_destroy(conn);
	if (err && ret == 0)
		ret = err;
	free(req);
	if (removal && !atomic_load(&peer->removed))
		verbs_device_removed(peer,
				"RDMA_CM_EVENT_DEVICE_REMOVAL on a deleted connection request");
	return ret;
}
