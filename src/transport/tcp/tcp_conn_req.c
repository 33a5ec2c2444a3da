/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_conn_req.c -- connection requests of the tcp provider: the active
 * side's (a resolved address; nothing is sent until connect) and the
 * common part of the passive side's (tcp_ep.c hands those out). Both
 * hold the receives posted before the connection exists.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcp.h"

int
tcp_conn_req_init(struct tcp_conn_req *req, struct pmrep_peer *peer,
		const struct pmrep_conn_cfg *cfg, bool passive)
{
	req->base.peer = peer;
	req->base.cfg = *cfg;
	req->base.passive = passive;
	req->sock = -1;
	return tcp_rq_init(&req->rq, cfg->rq_size);
}

int
tcp_conn_req_new(struct pmrep_peer *peer, const char *addr, const char *port,
		const struct pmrep_conn_cfg *cfg, struct pmrep_conn_req **req_ptr)
{
	struct tcp_conn_req *req = calloc(1, sizeof(*req));
	if (req == NULL) {
		PMREP_LOG_ERR("out of memory for a connection request");
		return PMREP_E_NOMEM;
	}
	if (tcp_sock_resolve(addr, port, false, &req->addr, &req->addrlen)) {
		free(req);
		return PMREP_E_UNREACHABLE;
	}
	int ret = tcp_conn_req_init(req, peer, cfg, false);
	if (ret) {
		free(req);
		return ret;
	}
	*req_ptr = &req->base;
	return 0;
}

int
tcp_conn_req_recv(struct pmrep_conn_req *req_base, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context)
{
	struct tcp_conn_req *req = (struct tcp_conn_req *)req_base;
	if (req->base.cfg.srq != NULL) {
		PMREP_LOG_ERR("the connection will use an SRQ: post receives with pmrep_srq_recv");
		return PMREP_E_INVAL;
	}
	return tcp_rq_put(&req->rq, dst, offset, len, op_context);
}

int
tcp_conn_req_delete(struct pmrep_conn_req *req_base)
{
	struct tcp_conn_req *req = (struct tcp_conn_req *)req_base;
	if (req->sock >= 0) {
		/* an explicit reject: the initiator reports REJECTED, no
		 * retry; or, asked for (pmrep_conn_req_reject), one it
		 * retries until its deadline */
		const uint8_t why = req->base.reject_retry ?
			TCP_WIRE_REJ_NOT_LISTENING : TCP_WIRE_REJ_APP;
		if (req->tls)
			tcp_tls_send_now(req->tls, TCP_WIRE_REJECT, why);
		else
			tcp_sock_send_now(req->sock, TCP_WIRE_REJECT, why);
		tcp_sock_close_gently(req->sock);
	}
	tcp_tls_free(req->tls);
	tcp_tls_wipe_cfg(&req->base.cfg);
	tcp_rq_fini(&req->rq);
	free(req);
	return 0;
}

int
tcp_conn_req_connect(struct pmrep_conn_req *req_base,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn)
{
	return tcp_conn_from_req((struct tcp_conn_req *)req_base, pdata, conn);
}
