/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn_req.c -- connection requests: created on the active side, handed
 * out by an endpoint on the passive side; consumed by connect / accept or
 * dropped (a passive drop is an explicit reject).
 */
#include <string.h>

#include "common.h"

int
pmrep_conn_req_new(struct pmrep_peer *peer, const char *addr, const char *port,
		const struct pmrep_conn_cfg *cfg, struct pmrep_conn_req **req_ptr)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(addr);
	PMREP_CHECK_ARG(port);
	PMREP_CHECK_ARG(req_ptr);
	if (cfg == NULL)
		cfg = &pmrep_conn_cfg_default;
	if (cfg->tls && peer->provider != PMREP_PROVIDER_TCP) {
		PMREP_LOG_ERR("TLS is a tcp provider setting: on verbs protect the wire with IPsec / MACsec (RoCE's ICRC is not authentication)");
		return PMREP_E_NOSUPP;
	}
	int ret = peer->ops->conn_req_new(peer, addr, port, cfg, req_ptr);
	if (ret)
		return ret;
	pmrep_peer_ref(peer);
	return 0;
}

int
pmrep_conn_req_recv(struct pmrep_conn_req *req, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context)
{
	PMREP_CHECK_ARG(req);
	PMREP_CHECK_ARG(dst);
	int ret = pmrep_check_recv_dst(dst, offset, len);
	if (ret)
		return ret;
	return req->peer->ops->conn_req_recv(req, dst, offset, len, op_context);
}

int
pmrep_conn_req_get_private_data(const struct pmrep_conn_req *req,
		struct pmrep_conn_private_data *pdata)
{
	PMREP_CHECK_ARG(req);
	PMREP_CHECK_ARG(pdata);
	pdata->len = req->pdata_len;
	pdata->ptr = req->pdata_len ? req->pdata : NULL;
	return 0;
}

int
pmrep_conn_req_get_src_addr(const struct pmrep_conn_req *req,
		struct sockaddr_storage *addr)
{
	PMREP_CHECK_ARG(req);
	PMREP_CHECK_ARG(addr);
	if (!req->passive) {
		PMREP_LOG_ERR("the source address is the passive side's to ask");
		return PMREP_E_INVAL;
	}
	if (req->src.ss_family == AF_UNSPEC) {
		memset(addr, 0, sizeof(*addr));
		return PMREP_E_NOSUPP;
	}
	*addr = req->src;
	return 0;
}

int
pmrep_conn_req_get_tls_identity(const struct pmrep_conn_req *req,
		const char **identity, const char **local)
{
	PMREP_CHECK_ARG(req);
	PMREP_CHECK_ARG(identity);
	if (!req->passive) {
		PMREP_LOG_ERR("the TLS identity is the passive side's to ask");
		return PMREP_E_INVAL;
	}
	*identity = req->tls_identity;
	if (local != NULL)
		*local = req->tls_local;
	return req->tls_identity[0] ? 0 : PMREP_E_NOSUPP;
}

int
pmrep_conn_req_connect(struct pmrep_conn_req **req_ptr,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn_ptr)
{
	PMREP_CHECK_ARG(req_ptr);
	PMREP_CHECK_ARG(*req_ptr);
	PMREP_CHECK_ARG(conn_ptr);
	struct pmrep_conn_req *req = *req_ptr;

	if (pdata != NULL && pdata->len > 0) {
		unsigned max = req->passive ? PMREP_PDATA_ACCEPT_MAX :
			PMREP_PDATA_CONNECT_MAX;
		if (pdata->ptr == NULL) {
			PMREP_LOG_ERR("private data of %u bytes with a NULL pointer",
					pdata->len);
			return PMREP_E_INVAL;
		}
		if (pdata->len > max) {
			PMREP_LOG_ERR("private data of %u bytes: at most %u bytes on %s",
					pdata->len, max,
					req->passive ? "accept" : "connect");
			return PMREP_E_INVAL;
		}
	}
	struct pmrep_peer *peer = req->peer;
	*req_ptr = NULL;
	int ret = peer->ops->conn_req_connect(req, pdata, conn_ptr);
	if (ret) {
		pmrep_peer_unref(peer);	/* the request is gone */
		return ret;
	}
	pmrep_conn_update_flush_method(*conn_ptr);
	return 0;	/* the conn inherits the request's reference */
}

int
pmrep_conn_req_reject(struct pmrep_conn_req **req_ptr, bool retry)
{
	PMREP_CHECK_ARG(req_ptr);
	PMREP_CHECK_ARG(*req_ptr);
	if (!(*req_ptr)->passive) {
		PMREP_LOG_ERR("only a passive request can be rejected");
		return PMREP_E_INVAL;
	}
	(*req_ptr)->reject_retry = retry;
	return pmrep_conn_req_delete(req_ptr);
}

int
pmrep_conn_req_delete(struct pmrep_conn_req **req_ptr)
{
	PMREP_CHECK_ARG(req_ptr);
	struct pmrep_conn_req *req = *req_ptr;
	if (req == NULL)
		return 0;
	*req_ptr = NULL;
	struct pmrep_peer *peer = req->peer;
	int ret = peer->ops->conn_req_delete(req);
	pmrep_peer_unref(peer);
	return ret;
}
