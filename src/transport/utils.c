/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * utils.c -- find the RDMA device (ibv_context) behind an IP address with a
 * short-lived rdma_cm id; used by pmrep_peer_open to choose a provider.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <pmrep/verbs.h>

#include "common.h"

#define RESOLVE_TIMEOUT_MS 1000

static int
resolve_remote(struct rdma_event_channel *ch, struct rdma_cm_id *id,
		struct sockaddr *dst)
{
	if (rdma_resolve_addr(id, NULL, dst, RESOLVE_TIMEOUT_MS))
		return PMREP_ERR_PROVIDER(errno, "rdma_resolve_addr");

	int flags = fcntl(ch->fd, F_GETFL);
	if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return PMREP_ERR_PROVIDER(errno, "fcntl(O_NONBLOCK)");
	int ret = pmrep_fd_wait_readable(ch->fd, RESOLVE_TIMEOUT_MS + 100);
	if (ret)
		return ret == PMREP_E_TIMEOUT ? PMREP_E_NOSUPP : ret;

	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev))
		return PMREP_ERR_PROVIDER(errno, "rdma_get_cm_event");
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status;
	if (rdma_ack_cm_event(ev))
		return PMREP_ERR_PROVIDER(errno, "rdma_ack_cm_event");
	if (type != RDMA_CM_EVENT_ADDR_RESOLVED) {
		PMREP_LOG_INFO("address resolution: %s (status %d)",
				rdma_event_str(type), status);
		return PMREP_E_NOSUPP;
	}
	return 0;
}

int
pmrep_utils_get_ibv_context(const char *addr, bool is_local,
		struct ibv_context **ibv_ctx)
{
	PMREP_CHECK_ARG(addr);
	PMREP_CHECK_ARG(ibv_ctx);

	struct addrinfo hints, *ai = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_flags = is_local ? AI_PASSIVE : 0;
	int gai = getaddrinfo(addr, NULL, &hints, &ai);
	if (gai != 0) {
		PMREP_LOG_ERR("getaddrinfo(%s): %s", addr, gai_strerror(gai));
		return PMREP_E_INVAL;
	}

	int ret;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	if (ch == NULL) {
		/* ENODEV / ENOENT: this kernel has no rdma_cm at all */
		pmrep_err_set_errno(errno);
		PMREP_LOG_INFO("rdma_create_event_channel: %s: no RDMA here",
				strerror(errno));
		ret = PMREP_E_NOSUPP;
		goto err_free_ai;
	}
	struct rdma_cm_id *id;
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		ret = PMREP_ERR_PROVIDER(errno, "rdma_create_id");
		goto err_destroy_ch;
	}
	if (is_local) {
		if (rdma_bind_addr(id, ai->ai_addr)) {
			pmrep_err_set_errno(errno);
			PMREP_LOG_INFO("rdma_bind_addr(%s): %s", addr,
					strerror(errno));
			ret = PMREP_E_NOSUPP;
			goto err_destroy_id;
		}
	} else {
		ret = resolve_remote(ch, id, ai->ai_addr);
		if (ret)
			goto err_destroy_id;
	}
	if (id->verbs == NULL) {
		PMREP_LOG_INFO("no RDMA device %s %s", is_local ? "owns" : "reaches",
				addr);
		ret = PMREP_E_NOSUPP;
		goto err_destroy_id;
	}
	*ibv_ctx = id->verbs;
	ret = 0;

err_destroy_id:
	(void) rdma_destroy_id(id);
err_destroy_ch:
	rdma_destroy_event_channel(ch);
err_free_ai:
	freeaddrinfo(ai);
	return ret;
}
