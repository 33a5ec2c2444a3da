/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_live.c -- liveness (README.md "Liveness"): when a silent peer is
 * lost, when our heartbeat is due, and the silence clock while our own
 * input is paused. The turn's timers and the thread's wait plan ask it
 * (tcp_progress.c), the transmit batch sends the heartbeat.
 */
#include <sys/ioctl.h>

#include "tcp_progress.h"
#include "transport/common.h"

/*
 * A v2 peer sends at least every quarter of our liveness period L (its
 * heartbeat), so nothing from it for L means it is gone: frozen, wedged,
 * blackholed, its host dead -- idle or with requests in flight. A v1
 * peer does not heartbeat: lost when requests are in flight and nothing
 * arrived for TCP_V1_REQUEST_FACTOR x the cfg timeout (at least
 * TCP_REQUEST_TIMEOUT_MIN_MS), as before. -1: no deadline.
 */
long long
tcp_request_period(const struct tcp_conn *c)
{
	long long t = TCP_V1_REQUEST_FACTOR * (long long)c->base.cfg.timeout_ms;
	return t < TCP_REQUEST_TIMEOUT_MIN_MS ? TCP_REQUEST_TIMEOUT_MIN_MS : t;
}

long long
tcp_live_deadline(const struct tcp_conn *c)
{
	if (c->state != TCP_CONN_OPEN)
		return -1;
	if (c->wire_version >= 2)
		return c->last_rx_ms + tcp_live_period(c->base.cfg.timeout_ms);
	if (c->qp_error || c->sq_head == c->sq_tx)
		return -1;
	return c->last_rx_ms + tcp_request_period(c);
}

/* our heartbeat: after a quarter of the peer's liveness period (its cfg
 * timeout came in its HELLO / ACCEPT) without sending; sent to v1 peers
 * too (harmless); -1: none due (not open, or bytes wait for POLLOUT) */
long long
tcp_heartbeat_deadline(const struct tcp_conn *c)
{
	if (c->state != TCP_CONN_OPEN || c->sock < 0 || c->tx_count > 0)
		return -1;
	long long h = tcp_live_period(c->peer_rnr_ms) / TCP_HEARTBEAT_DIV;
	return c->last_tx_ms + h;
}

bool
tcp_heartbeat_due(const struct tcp_conn *c, long long now)
{
	long long d = tcp_heartbeat_deadline(c);
	return d >= 0 && now >= d;
}

/*
 * Our input is paused (a request waits for a receive, for reads to go
 * out, for owed responses to drain): what the peer sent meanwhile waits
 * in the socket, unread, so the silence clock must not run on our
 * account. A stall for a receive is bounded by the peer's own budget:
 * the clock is held. The other pauses wait for our output: bytes newly
 * queued in the socket show the peer alive; none for L (the peer frozen,
 * or both sides stuck on each other) is a loss.
 */
void
tcp_live_paused(struct tcp_conn *c, long long now)
{
	if (c->sock < 0)
		return;
	if (c->stalled) {
		c->last_rx_ms = now;
		return;
	}
	if (!c->rx_gated && !c->rx_full) {
		c->rx_queued = -1;
		return;
	}
	int q = 0;
	if (ioctl(c->sock, FIONREAD, &q) == 0 && q != c->rx_queued) {
		c->rx_queued = q;
		c->last_rx_ms = now;
	}
}

/* the conn is open: both clocks start */
void
tcp_live_start(struct tcp_conn *c)
{
	c->last_rx_ms = c->last_tx_ms = pmrep_now_ms();
}
