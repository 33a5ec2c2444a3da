/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ep.c -- the endpoint: listening, handing out connection requests,
 * shutdown.
 */
#include "common.h"

int
pmrep_ep_listen(struct pmrep_peer *peer, const char *addr, const char *port,
		struct pmrep_ep **ep_ptr)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(addr);
	PMREP_CHECK_ARG(port);
	PMREP_CHECK_ARG(ep_ptr);
	int ret = peer->ops->ep_listen(peer, addr, port, ep_ptr);
	if (ret)
		return ret;
	pmrep_peer_ref(peer);
	return 0;
}

int
pmrep_ep_shutdown(struct pmrep_ep **ep_ptr)
{
	PMREP_CHECK_ARG(ep_ptr);
	struct pmrep_ep *ep = *ep_ptr;
	if (ep == NULL)
		return 0;
	*ep_ptr = NULL;
	struct pmrep_peer *peer = ep->peer;
	int ret = peer->ops->ep_shutdown(ep);
	pmrep_peer_unref(peer);
	return ret;
}

int
pmrep_ep_get_fd(const struct pmrep_ep *ep, int *fd)
{
	PMREP_CHECK_ARG(ep);
	PMREP_CHECK_ARG(fd);
	*fd = ep->fd;
	return 0;
}

int
pmrep_ep_get_port(const struct pmrep_ep *ep, uint16_t *port)
{
	PMREP_CHECK_ARG(ep);
	PMREP_CHECK_ARG(port);
	*port = ep->port;
	return 0;
}

int
pmrep_ep_next_conn_req(struct pmrep_ep *ep, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req_ptr)
{
	PMREP_CHECK_ARG(ep);
	PMREP_CHECK_ARG(req_ptr);
	if (cfg == NULL)
		cfg = &pmrep_conn_cfg_default;
	if (cfg->tls && ep->peer->provider != PMREP_PROVIDER_TCP) {
		PMREP_LOG_ERR("TLS is a tcp provider setting: on verbs protect the wire with IPsec / MACsec (RoCE's ICRC is not authentication)");
		return PMREP_E_NOSUPP;
	}
	int ret = ep->peer->ops->ep_next_conn_req(ep, cfg, req_ptr);
	if (ret)
		return ret;
	pmrep_peer_ref(ep->peer);
	return 0;
}

struct next_req_args {
	struct pmrep_ep *ep;
	const struct pmrep_conn_cfg *cfg;
	struct pmrep_conn_req **req_ptr;
};

static int
try_next_conn_req(void *arg)
{
	struct next_req_args *a = arg;
	return pmrep_ep_next_conn_req(a->ep, a->cfg, a->req_ptr);
}

int
pmrep_ep_wait_conn_req(struct pmrep_ep *ep, const struct pmrep_conn_cfg *cfg,
		int timeout_ms, struct pmrep_conn_req **req_ptr)
{
	PMREP_CHECK_ARG(ep);
	PMREP_CHECK_ARG(req_ptr);
	struct next_req_args a = { ep, cfg, req_ptr };
	return pmrep_wait_for(ep->fd, timeout_ms, try_next_conn_req, &a);
}
