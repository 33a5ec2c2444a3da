/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peer.c -- the generic peer: choosing a provider, capability getters,
 * async events and deletion. The provider's peer_new fills in the rest.
 */
#include <stdlib.h>
#include <string.h>

#include <pmrep/verbs.h>

#include "common.h"
#include "common/testhook.h"

int
pmrep_peer_new(struct ibv_context *ibv_ctx, struct pmrep_peer **peer_ptr)
{
	PMREP_CHECK_ARG(ibv_ctx);
	PMREP_CHECK_ARG(peer_ptr);
	return pmrep_verbs_peer_new(ibv_ctx, peer_ptr);
}

int
pmrep_peer_new_tcp(struct pmrep_peer **peer_ptr)
{
	PMREP_CHECK_ARG(peer_ptr);
	return pmrep_tcp_peer_new(peer_ptr);
}

int
pmrep_peer_open(const char *addr, bool is_local, struct pmrep_peer **peer_ptr)
{
	PMREP_CHECK_ARG(addr);
	PMREP_CHECK_ARG(peer_ptr);

	if (pmrep_test_hooks.peer_open)
		return pmrep_test_hooks.peer_open(addr, is_local, peer_ptr);
	const char *force = getenv("PMREP_PROVIDER");
	if (force != NULL && force[0] != '\0' && strcmp(force, "verbs") != 0 &&
			strcmp(force, "tcp") != 0) {
		PMREP_LOG_ERR("PMREP_PROVIDER=%s: expected \"verbs\" or \"tcp\"",
				force);
		return PMREP_E_INVAL;
	}
	if (force != NULL && strcmp(force, "tcp") == 0)
		return pmrep_tcp_peer_new(peer_ptr);

	struct ibv_context *ibv_ctx = NULL;
	int ret = pmrep_utils_get_ibv_context(addr, is_local, &ibv_ctx);
	if (ret == 0)
		return pmrep_verbs_peer_new_cm(ibv_ctx, peer_ptr);

	if (force != NULL && strcmp(force, "verbs") == 0) {
		PMREP_LOG_ERR("PMREP_PROVIDER=verbs but no RDMA device %s %s",
				is_local ? "owns" : "reaches", addr);
		return PMREP_E_NOSUPP;
	}
	PMREP_LOG_INFO("no RDMA device for %s: using the tcp provider", addr);
	pmrep_err_clear();
	return pmrep_tcp_peer_new(peer_ptr);
}

int
pmrep_peer_open_verbs(const char *addr, bool is_local,
		struct pmrep_peer **peer_ptr)
{
	PMREP_CHECK_ARG(addr);
	PMREP_CHECK_ARG(peer_ptr);
	struct ibv_context *ibv_ctx = NULL;
	int ret = pmrep_utils_get_ibv_context(addr, is_local, &ibv_ctx);
	if (ret)
		return ret;
	return pmrep_verbs_peer_new_cm(ibv_ctx, peer_ptr);
}

int
pmrep_peer_delete(struct pmrep_peer **peer_ptr)
{
	PMREP_CHECK_ARG(peer_ptr);
	struct pmrep_peer *peer = *peer_ptr;
	if (peer == NULL)
		return 0;
	int n = atomic_load(&peer->nobjects);
	if (n != 0) {
		PMREP_LOG_ERR("peer still used by %d object(s): delete them first",
				n);
		return PMREP_E_BUSY;
	}
	*peer_ptr = NULL;
	return peer->ops->peer_delete(peer);
}

int
pmrep_peer_get_provider(const struct pmrep_peer *peer,
		enum pmrep_provider *provider)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(provider);
	*provider = peer->provider;
	return 0;
}

int
pmrep_peer_get_caps(const struct pmrep_peer *peer, uint32_t *caps)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(caps);
	*caps = peer->caps;
	return 0;
}

int
pmrep_peer_get_device_removed(const struct pmrep_peer *peer, bool *removed)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(removed);
	*removed = atomic_load(&peer->device_removed);
	return 0;
}

int
pmrep_peer_get_async_fd(const struct pmrep_peer *peer, int *fd)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(fd);
	*fd = peer->async_fd;
	return 0;
}

int
pmrep_peer_handle_async_event(struct pmrep_peer *peer,
		enum pmrep_async_event *event)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(event);
	*event = PMREP_ASYNC_NONE;
	return peer->ops->peer_handle_async_event(peer, event);
}

/* the provider has no DEVX events (its op is NULL) */
static int
devx_nosupp(void)
{
	PMREP_LOG_ERR("DEVX device events: this peer's provider has none "
			"(mlx5 devices of the verbs provider only)");
	return PMREP_E_NOSUPP;
}

int
pmrep_peer_devx_subscribe(struct pmrep_peer *peer, const uint16_t *event_types,
		size_t n, uint64_t cookie)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(event_types);
	if (n == 0 || n > PMREP_DEVX_SUBSCRIBE_MAX) {
		PMREP_LOG_ERR("DEVX subscribe: %zu event types (1..%d)", n,
				PMREP_DEVX_SUBSCRIBE_MAX);
		return PMREP_E_INVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (event_types[i] > 255) {
			PMREP_LOG_ERR("DEVX subscribe: event number %u > 255",
					(unsigned)event_types[i]);
			return PMREP_E_INVAL;
		}
	}
	if (peer->ops->peer_devx_subscribe == NULL)
		return devx_nosupp();
	return peer->ops->peer_devx_subscribe(peer, event_types, n, cookie);
}

int
pmrep_peer_get_devx_fd(const struct pmrep_peer *peer, int *fd)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(fd);
	if (peer->ops->peer_get_devx_fd == NULL)
		return devx_nosupp();
	return peer->ops->peer_get_devx_fd(peer, fd);
}

int
pmrep_peer_handle_devx_event(struct pmrep_peer *peer,
		enum pmrep_async_event *event, uint64_t *cookie)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(event);
	PMREP_CHECK_ARG(cookie);
	*event = PMREP_ASYNC_NONE;
	*cookie = 0;
	if (peer->ops->peer_handle_devx_event == NULL)
		return devx_nosupp();
	return peer->ops->peer_handle_devx_event(peer, event, cookie);
}
