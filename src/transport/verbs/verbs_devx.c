/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_devx.c -- the optional DEVX event channel of a verbs peer (mlx5
 * devices): created at the first subscribe, read without blocking, destroyed
 * by peer delete. pmrep does not interpret the device's event numbers; it
 * acts only when the kernel reports that events were lost (EOVERFLOW): the
 * ports are queried again and, when one is not up, every connection on the
 * device is marked lost.
 */
#include <errno.h>
#include <string.h>
#include <infiniband/mlx5dv.h>

#include "verbs_internal.h"

/*
 * Guards every peer's devx_ch (made lazily, possibly by another thread than
 * the one reading events). Lock order: Devx_lock, then the peers' locks
 * (verbs_peer_mark_device_lost) -- the latter is taken only after this one
 * is released.
 */
static pthread_mutex_t Devx_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * What one event read may need: the cookie header and the event data (the
 * kernel refuses a buffer smaller than the header plus a 64-byte event
 * queue entry with EINVAL; the rest is headroom).
 */
#define DEVX_EVENT_BUF 256

static const char *
dev_name(const struct verbs_peer *peer)
{
	return peer->ctx->device ? ibv_get_device_name(peer->ctx->device) : "?";
}

/* PMREP_E_NOSUPP (logged) unless the device is an mlx5 one */
static int
check_mlx5(const struct verbs_peer *peer)
{
	if (peer->ctx->device == NULL || !mlx5dv_is_supported(peer->ctx->device)) {
		PMREP_LOG_ERR("DEVX device events: %s is not an mlx5 device "
				"(mlx5dv_is_supported is false): not supported",
				dev_name(peer));
		return PMREP_E_NOSUPP;
	}
	return 0;
}

/* make the channel (lock held) */
static int
channel_new(struct verbs_peer *peer, struct mlx5dv_devx_event_channel **out)
{
	/* no MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA: every
	 * event is delivered with its data and in order, and a lost one is
	 * reported (EOVERFLOW) rather than merged away */
	struct mlx5dv_devx_event_channel *ch =
		mlx5dv_devx_create_event_channel(peer->ctx, 0);
	if (ch == NULL) {
		int err = errno;
		if (err == EOPNOTSUPP || err == EPROTONOSUPPORT) {
			PMREP_LOG_ERR("DEVX device events: %s offers no DEVX "
					"(mlx5dv_devx_create_event_channel: %s): "
					"not supported", dev_name(peer),
					strerror(err));
			return PMREP_E_NOSUPP;
		}
		return PMREP_ERR_PROVIDER(err, "mlx5dv_devx_create_event_channel");
	}
	int ret = verbs_fd_set_flags(ch->fd, "fcntl(DEVX event channel fd)");
	if (ret) {
		mlx5dv_devx_destroy_event_channel(ch);
		return ret;
	}
	*out = ch;
	return 0;
}

int
verbs_devx_subscribe(struct pmrep_peer *base, const uint16_t *event_types,
		size_t n, uint64_t cookie)
{
	struct verbs_peer *peer = verbs_peer(base);
	uint16_t types[PMREP_DEVX_SUBSCRIBE_MAX];
	bool created = false;
	int ret;

	ret = check_mlx5(peer);
	if (ret)
		return ret;
	/* the generic layer checked 1 <= n <= PMREP_DEVX_SUBSCRIBE_MAX */
	memcpy(types, event_types, n * sizeof(types[0]));

	pthread_mutex_lock(&Devx_lock);
	if (peer->devx_ch == NULL) {
		ret = channel_new(peer, &peer->devx_ch);
		if (ret)
			goto out;
		created = true;
	}
	/* events_sz is the size of the array in bytes; obj NULL: the
	 * unaffiliated events of the device */
	if (mlx5dv_devx_subscribe_devx_event(peer->devx_ch, NULL,
			(uint16_t)(n * sizeof(types[0])), types, cookie)) {
		int err = errno;
		if (err == EINVAL)
			PMREP_LOG_ERR("DEVX subscribe on %s refused (EINVAL): the "
					"context must be opened with "
					"MLX5DV_CONTEXT_FLAGS_DEVX and the device "
					"must offer every event type asked for",
					dev_name(peer));
		ret = PMREP_ERR_PROVIDER(err, "mlx5dv_devx_subscribe_devx_event");
		if (created) {
			mlx5dv_devx_destroy_event_channel(peer->devx_ch);
			peer->devx_ch = NULL;
		}
		goto out;
	}
	PMREP_LOG_INFO("DEVX: subscribed to %zu event type(s) on %s, cookie %llu",
			n, dev_name(peer), (unsigned long long)cookie);
out:
	pthread_mutex_unlock(&Devx_lock);
	return ret;
}

/* the channel, or PMREP_E_NOSUPP / PMREP_E_STATE (logged) */
static int
channel_get(const struct verbs_peer *peer, struct mlx5dv_devx_event_channel **ch)
{
	pthread_mutex_lock(&Devx_lock);
	*ch = peer->devx_ch;
	pthread_mutex_unlock(&Devx_lock);
	if (*ch != NULL)
		return 0;
	int ret = check_mlx5(peer);
	if (ret)
		return ret;
	PMREP_LOG_ERR("DEVX device events: no channel yet "
			"(call pmrep_peer_devx_subscribe first)");
	return PMREP_E_STATE;
}

int
verbs_devx_get_fd(const struct pmrep_peer *base, int *fd)
{
	struct mlx5dv_devx_event_channel *ch;
	int ret = channel_get((const struct verbs_peer *)base, &ch);
	if (ret)
		return ret;
	*fd = ch->fd;
	return 0;
}

static bool
port_up(enum ibv_port_state st)
{
	return st == IBV_PORT_ACTIVE || st == IBV_PORT_ACTIVE_DEFER;
}

/*
 * Events were lost: whatever they said about the ports, the ports' state
 * now tells. A port that is down, or whose state cannot be read, fails
 * every connection on the device (which port a conn uses is not known
 * here). PMREP_E_PROVIDER when a query failed.
 */
static int
recheck_ports(struct verbs_peer *peer)
{
	unsigned nports = peer->nports ? peer->nports : 1;
	int ret = 0;
	char why[96] = "";

	for (unsigned p = 1; p <= nports; p++) {
		struct ibv_port_attr attr;
		memset(&attr, 0, sizeof(attr));
		errno = 0;
		int err = ibv_query_port(peer->ctx, (uint8_t)p, &attr);
		if (err) {
			int e = err > 0 ? err : errno;
			if (ret == 0)
				ret = PMREP_ERR_PROVIDER(e, "ibv_query_port");
			if (why[0] == '\0')
				snprintf(why, sizeof(why), "DEVX events lost and "
						"port %u state unknown", p);
			continue;
		}
		if (!port_up(attr.state) && why[0] == '\0')
			snprintf(why, sizeof(why), "DEVX events lost and port %u "
					"is %s", p, ibv_port_state_str(attr.state));
	}
	if (why[0] != '\0')
		verbs_peer_mark_device_lost(peer, why);
	else
		PMREP_LOG_WARN("DEVX events lost on %s: every port is up",
				dev_name(peer));
	return ret;
}

int
verbs_devx_handle_event(struct pmrep_peer *base, enum pmrep_async_event *event,
		uint64_t *cookie)
{
	struct verbs_peer *peer = verbs_peer(base);
	struct mlx5dv_devx_event_channel *ch;
	union {
		struct mlx5dv_devx_async_event_hdr hdr;
		uint8_t raw[DEVX_EVENT_BUF];
	} buf;

	*event = PMREP_ASYNC_NONE;
	*cookie = 0;
	int ret = channel_get(peer, &ch);
	if (ret)
		return ret;
	ssize_t got = mlx5dv_devx_get_event(ch, &buf.hdr, sizeof(buf));
	if (got < 0) {
		int err = errno;
		if (err == EAGAIN || err == EWOULDBLOCK)
			return 0;
		if (err == EOVERFLOW) {
			*event = PMREP_ASYNC_EVENTS_LOST;
			return recheck_ports(peer);
		}
		return PMREP_ERR_PROVIDER(err, "mlx5dv_devx_get_event");
	}
	if ((size_t)got < sizeof(buf.hdr)) {
		PMREP_LOG_ERR("mlx5dv_devx_get_event: %zd bytes, shorter than "
				"its header", got);
		return PMREP_ERR_PROVIDER(EPROTO, "mlx5dv_devx_get_event");
	}
	*event = PMREP_ASYNC_OTHER;
	*cookie = buf.hdr.cookie;
	PMREP_LOG_INFO("DEVX event on %s, cookie %llu", dev_name(peer),
			(unsigned long long)buf.hdr.cookie);
	return 0;
}

void
verbs_devx_destroy(struct verbs_peer *peer)
{
	pthread_mutex_lock(&Devx_lock);
	if (peer->devx_ch != NULL) {
		mlx5dv_devx_destroy_event_channel(peer->devx_ch);
		peer->devx_ch = NULL;
	}
	pthread_mutex_unlock(&Devx_lock);
}
