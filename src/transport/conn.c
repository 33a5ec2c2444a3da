/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.c -- the generic connection: the exactly-once terminal event, the
 * flush method, private data, fds, deletion.
 */
#include "common.h"

static const char *const event_names[] = {
	[PMREP_CONN_ESTABLISHED] = "ESTABLISHED",
	[PMREP_CONN_CLOSED] = "CLOSED",
	[PMREP_CONN_LOST] = "LOST",
	[PMREP_CONN_REJECTED] = "REJECTED",
	[PMREP_CONN_UNREACHABLE] = "UNREACHABLE",
};

const char *
pmrep_conn_event_str(enum pmrep_conn_event ev)
{
	if (ev < PMREP_CONN_ESTABLISHED || ev > PMREP_CONN_UNREACHABLE)
		return "UNDEFINED";
	return event_names[ev];
}

void
pmrep_conn_update_flush_method(struct pmrep_conn *conn)
{
	if (conn->peer->caps & PMREP_CAP_NATIVE_FLUSH)
		conn->flush_method = PMREP_FLUSH_METHOD_NATIVE;
	else if (conn->remote_direct_write_to_pmem)
		conn->flush_method = PMREP_FLUSH_METHOD_APM;
	else
		conn->flush_method = PMREP_FLUSH_METHOD_NONE;
}

int
pmrep_conn_next_event(struct pmrep_conn *conn, enum pmrep_conn_event *event)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(event);
	*event = PMREP_CONN_UNDEFINED;
	if (atomic_load_explicit(&conn->terminal, memory_order_acquire))
		return PMREP_E_NO_EVENT;
	int ret = conn->peer->ops->conn_next_event(conn, event);
	if (ret)
		return ret;
	if (*event != PMREP_CONN_ESTABLISHED)
		atomic_store_explicit(&conn->terminal, true,
				memory_order_release);
	return 0;
}

struct next_event_args {
	struct pmrep_conn *conn;
	enum pmrep_conn_event *event;
};

static int
try_next_event(void *arg)
{
	struct next_event_args *a = arg;
	return pmrep_conn_next_event(a->conn, a->event);
}

int
pmrep_conn_wait_event(struct pmrep_conn *conn, int timeout_ms,
		enum pmrep_conn_event *event)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(event);
	if (atomic_load_explicit(&conn->terminal, memory_order_acquire)) {
		*event = PMREP_CONN_UNDEFINED;
		return PMREP_E_NO_EVENT; /* nothing will ever come */
	}
	struct next_event_args a = { conn, event };
	return pmrep_wait_for(conn->event_fd, timeout_ms, try_next_event, &a);
}

int
pmrep_conn_get_event_fd(const struct pmrep_conn *conn, int *fd)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(fd);
	*fd = conn->event_fd;
	return 0;
}

int
pmrep_conn_get_completion_fd(const struct pmrep_conn *conn, int *fd)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(fd);
	if (conn->comp_fd < 0) {
		PMREP_LOG_ERR("the conn has no shared completion channel: use the CQ's fd");
		return PMREP_E_NOT_SHARED_CHNL;
	}
	*fd = conn->comp_fd;
	return 0;
}

int
pmrep_conn_get_cq(const struct pmrep_conn *conn, struct pmrep_cq **cq)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(cq);
	*cq = conn->cq;
	return 0;
}

int
pmrep_conn_get_rcq(const struct pmrep_conn *conn, struct pmrep_cq **rcq)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(rcq);
	*rcq = conn->rcq;
	return 0;
}

int
pmrep_conn_wait(struct pmrep_conn *conn, int timeout_ms, struct pmrep_cq **cq,
		bool *is_rcq)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(cq);
	/* (a removed device's conn has none any more: its provider says so) */
	if (conn->comp_fd < 0 && !atomic_load(&conn->peer->device_removed)) {
		PMREP_LOG_ERR("pmrep_conn_wait needs a shared completion channel");
		return PMREP_E_NOT_SHARED_CHNL;
	}
	bool rcq = false;
	int ret = conn->peer->ops->conn_wait(conn, timeout_ms, cq, &rcq);
	if (ret == 0 && is_rcq != NULL)
		*is_rcq = rcq;
	return ret;
}

int
pmrep_conn_get_private_data(const struct pmrep_conn *conn,
		struct pmrep_conn_private_data *pdata)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(pdata);
	pdata->len = conn->pdata_len;
	pdata->ptr = conn->pdata_len ? conn->pdata : NULL;
	return 0;
}

int
pmrep_conn_get_failure(const struct pmrep_conn *conn, int *cause)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(cause);
	*cause = atomic_load(&((struct pmrep_conn *)conn)->cause);
	return 0;
}

int
pmrep_conn_apply_remote_peer_cfg(struct pmrep_conn *conn,
		const struct pmrep_peer_cfg *cfg)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(cfg);
	bool dw = false;
	(void) pmrep_peer_cfg_get_direct_write_to_pmem(cfg, &dw);
	conn->remote_direct_write_to_pmem = dw;
	pmrep_conn_update_flush_method(conn);
	return 0;
}

int
pmrep_conn_get_flush_method(const struct pmrep_conn *conn,
		enum pmrep_flush_method *method)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(method);
	*method = conn->flush_method;
	return 0;
}

int
pmrep_conn_get_rc_timing(const struct pmrep_conn *conn,
		struct pmrep_conn_rc_timing *timing)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(timing);
	if (!conn->has_rc_timing) {
		PMREP_LOG_ERR("the conn's provider has no RC retransmission timing");
		return PMREP_E_NOSUPP;
	}
	*timing = conn->rc_timing;
	return 0;
}

int
pmrep_conn_get_provider(const struct pmrep_conn *conn,
		enum pmrep_provider *provider)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(provider);
	*provider = conn->peer->provider;
	return 0;
}

int
pmrep_conn_disconnect(struct pmrep_conn *conn)
{
	PMREP_CHECK_ARG(conn);
	return conn->peer->ops->conn_disconnect(conn);
}

int
pmrep_conn_delete(struct pmrep_conn **conn_ptr)
{
	PMREP_CHECK_ARG(conn_ptr);
	struct pmrep_conn *conn = *conn_ptr;
	if (conn == NULL)
		return 0;
	*conn_ptr = NULL;
	struct pmrep_peer *peer = conn->peer;
	pmrep_mw_conn_deleted(conn);
	int ret = peer->ops->conn_delete(conn);
	pmrep_peer_unref(peer);
	return ret;
}
