/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_progress.c -- the progress thread of a tcp connection and its
 * turn: the thread's life (the connect phase on the active side, then
 * turns with one poll between them until delete, the socket let go at
 * the end), one turn under conn->prog_lock (receive and apply, complete
 * in order, send, timers), the wait planned after it, and the fast path
 * that runs a turn in an application thread (tcp_fast_turn). The parts
 * of a turn live beside it, shared through tcp_progress.h: tcp_connect.c
 * (connect with retries), tcp_rx.c (receive), tcp_target.c (the target
 * side of every op), tcp_tx.c (batched send), tcp_live.c (liveness),
 * tcp_complete.c (completions, the error state, the conn's end).
 *
 * Protocol in one paragraph: each side numbers its requests 0, 1, 2 … (seq
 * = the post count). The target applies requests strictly in order and
 * answers with cumulative ACKs (one per batch of frames received), a
 * READ_RESP per read and a NAK for a request that failed. A request that
 * needs a receive (SEND, WRITE with immediate) when none is posted stalls
 * the target's input for up to the initiator's receiver-not-ready budget
 * (its cfg timeout), then fails with PMREP_WC_RNR_RETRY_EXCEEDED. After a NAK
 * both sides are in the error state, as a verbs QP: every request and
 * receive not yet completed is flushed (PMREP_WC_FLUSHED) and every
 * later frame but DISCONNECT is ignored. Socket errors, EOF without
 * DISCONNECT and protocol violations end the conn with LOST; the oldest
 * request in flight then completes with PMREP_WC_RETRY_EXCEEDED. So does a
 * wire version 2 peer that sent nothing for the liveness period (it
 * heartbeats: see tcp_live.c and README.md).
 */
#include <poll.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tcp_progress.h"
#include "transport/common.h"

/* drain the doorbell: true when delete asks us to return; *disconnect
 * when the app asked for a disconnect since the last look */
bool
tcp_doorbell(struct tcp_conn *c, bool *disconnect)
{
	tcp_eventfd_drain(c->wake_fd);
	pthread_mutex_lock(&c->lock);
	c->kicked = false;
	bool stop = c->stop;
	*disconnect = *disconnect || c->disconnect_req;
	c->disconnect_req = false;
	pthread_mutex_unlock(&c->lock);
	return stop;
}

static void
begin_disconnect(struct tcp_conn *c)
{
	if (c->state != TCP_CONN_DEAD && c->state != TCP_CONN_CLOSING)
		tcp_start_closing(c, false);
}

static void
close_dead_socket(struct tcp_conn *c)
{
	if (c->sock_dead >= 0) {
		close(c->sock_dead);
		c->sock_dead = -1;
	}
}

/* delete: say goodbye if the stream allows it, then let go of the socket */
static void
shutdown_socket(struct tcp_conn *c)
{
	if (c->sock < 0)
		return;
	bool mid_frame = c->tx_count > 0 && (c->tx[c->tx_first].hoff > 0);
	if (c->state == TCP_CONN_OPEN && !mid_frame) {
		if (c->tls)
			tcp_tls_send_now(c->tls, TCP_WIRE_DISCONNECT, 0);
		else
			tcp_sock_send_now(c->sock, TCP_WIRE_DISCONNECT, 0);
	}
	tcp_tls_free(c->tls);
	c->tls = NULL;
	tcp_sock_close_gently(c->sock);
	c->sock = -1;
}

/* the conn's timers: closing, the silent peer (liveness) */
static void
timers(struct tcp_conn *c, long long now)
{
	if (c->state == TCP_CONN_CLOSING && now >= c->closing_deadline)
		tcp_finish(c, PMREP_CONN_CLOSED);
	tcp_live_paused(c, now);
	long long silent = tcp_live_deadline(c);
	if (silent >= 0 && now >= silent) {
		if (c->wire_version >= 2)
			PMREP_LOG_ERR("connection lost: nothing from the peer for %lld ms (liveness period %lld ms: its heartbeat stopped)",
					now - c->last_rx_ms,
					tcp_live_period(c->base.cfg.timeout_ms));
		else
			PMREP_LOG_ERR("connection lost: no answer from the peer for %lld ms with requests in flight",
					now - c->last_rx_ms);
		tcp_finish(c, PMREP_CONN_LOST);
	}
}

/* one progress turn (caller holds prog_lock): receive (when `readable`
 * or work was left), complete, send, timers */
static void
turn(struct tcp_conn *c, bool readable)
{
	struct tcp_peer *p = tcp_peer(c->base.peer);
	if (c->qp_error)
		tcp_flush_all(c, PMREP_WC_FLUSHED);	/* late posts */

	pthread_rwlock_rdlock(&p->mem_lock);
	if (c->sock >= 0 && !c->rx_gated && !c->rx_full &&
			(readable || c->rx_more))
		tcp_rx_progress(c);
	tcp_sq_complete(c);
	c->tx_more = false;
	if (c->sock >= 0)
		tcp_tx_progress(c);
	if (c->rx_gated && !tcp_reads_unsent(c)) {
		c->rx_gated = false;
		c->rx_more = true;	/* the waiting request goes on */
	}
	if (c->rx_full && c->resp_count <= TCP_RESP_MAX / 2) {
		c->rx_full = false;
		c->rx_more = true;	/* the waiting READ goes on */
	}
	pthread_rwlock_unlock(&p->mem_lock);
	tcp_cqes_flush(c);
	if (c->cq_overrun && c->state != TCP_CONN_DEAD) {
		PMREP_LOG_ERR("connection lost: completions could not be queued (the CQ overran)");
		tcp_finish(c, PMREP_CONN_LOST);
	}
	timers(c, pmrep_now_ms());
}

/*
 * What to wait for after a turn: socket events, a deadline (-1: none) and
 * whether to look again at once. The deadline is the earliest of the
 * liveness deadline, our next heartbeat, a stall, closing. A v1 conn
 * with nothing in flight still wakes every request-timeout period, so
 * that a request an application thread sends meanwhile (without ringing
 * the doorbell) is timed within two periods.
 */
static void
wait_plan(const struct tcp_conn *c, long long now, short *events,
		long long *deadline, bool *zero)
{
	long long d = tcp_live_deadline(c);
	if (d < 0 && c->state == TCP_CONN_OPEN && !c->qp_error)
		d = now + tcp_request_period(c);
	long long hb = tcp_heartbeat_deadline(c);
	if (hb >= 0 && (d < 0 || hb < d))
		d = hb;
	if (c->stalled && (d < 0 || c->stall_deadline < d))
		d = c->stall_deadline;
	if (c->state == TCP_CONN_CLOSING && (d < 0 || c->closing_deadline < d))
		d = c->closing_deadline;
	bool paused = c->stalled || c->rx_gated || c->rx_full;
	short ev = 0;
	if (c->sock >= 0) {
		if (!paused)
			ev |= POLLIN;
		if (c->tx_blocked)
			ev |= POLLOUT;
	}
	*events = ev;
	*deadline = d;
	*zero = (c->rx_more && !paused) || (c->tx_more && c->sock >= 0);
}

bool
tcp_fast_turn(struct tcp_conn *c, bool wait, bool readable, int *sock,
		short *events, struct tcp_cq *take, bool *taken)
{
	if (wait)
		pthread_mutex_lock(&c->prog_lock);
	else if (pthread_mutex_trylock(&c->prog_lock) != 0)
		return false;
	if (c->state != TCP_CONN_OPEN) {
		pthread_mutex_unlock(&c->prog_lock);
		return false;
	}
	if (take != NULL)
		tcp_cq_quiet_begin(take);
	turn(c, readable);
	if (take != NULL)
		*taken = tcp_cq_quiet_end(take);
	short ev;
	long long d;
	bool zero;
	wait_plan(c, pmrep_now_ms(), &ev, &d, &zero);
	/* a deaf thread looks again within TCP_DEAF_MS by itself */
	short missing = (short)(ev & ~c->thr_events & ~(c->thr_deaf ? POLLIN : 0));
	if (zero || c->sock != c->thr_sock || c->sock_dead >= 0 || missing ||
			(d >= 0 && (c->thr_deadline < 0 || d < c->thr_deadline))) {
		pthread_mutex_lock(&c->lock);
		tcp_conn_kick_locked(c);
		pthread_mutex_unlock(&c->lock);
	}
	if (sock != NULL)
		*sock = c->sock;
	if (events != NULL)
		*events = ev & POLLIN;
	pthread_mutex_unlock(&c->prog_lock);
	return true;
}

void *
tcp_progress_main(void *arg)
{
	struct tcp_conn *c = arg;

	pthread_mutex_lock(&c->prog_lock);
	if (c->active) {
		/* no application turn runs before the conn is open */
		pthread_mutex_unlock(&c->prog_lock);
		enum pmrep_conn_event ev = tcp_connect_phase(c);
		tcp_tls_wipe_cfg(&c->base.cfg);	/* no more attempts: the PSK goes */
		pthread_mutex_lock(&c->prog_lock);
		if (ev == PMREP_CONN_ESTABLISHED) {
			c->state = TCP_CONN_OPEN;
			tcp_live_start(c);
			tcp_push_event(c, ev);
		} else if (ev != PMREP_CONN_UNDEFINED) {
			tcp_finish(c, ev);
		}
	} else {
		tcp_sock_tune(c->sock, c->base.cfg.timeout_ms);
		c->accept_queued = true;
	}

	/* the first turn looks at everything: the handshake may have left
	 * frames in the receive buffer */
	bool rang = true, readable = true;
	for (;;) {
		bool disc = false;
		if (rang && tcp_doorbell(c, &disc))
			break;
		if (disc)
			begin_disconnect(c);
		turn(c, readable);
		close_dead_socket(c);

		long long now = pmrep_now_ms(), deadline;
		short events;
		bool zero;
		wait_plan(c, now, &events, &deadline, &zero);
		int timeout = zero ? 0 : tcp_poll_ms(deadline, now);
		/* an application thread in a fast wait watches the socket */
		c->thr_deaf = (events & POLLIN) &&
			atomic_load(&c->app_waiters) > 0;
		if (c->thr_deaf) {
			events &= (short)~POLLIN;
			if (timeout < 0 || timeout > TCP_DEAF_MS)
				timeout = TCP_DEAF_MS;
		}
		struct pollfd pfd[2] = {
			{ .fd = c->wake_fd, .events = POLLIN },
			{ .fd = c->sock, .events = events },
		};
		c->thr_sock = c->sock;
		c->thr_events = events;
		c->thr_deadline = deadline;
		pthread_mutex_unlock(&c->prog_lock);
		int n = poll(pfd, c->thr_sock >= 0 ? 2 : 1, timeout);
		pthread_mutex_lock(&c->prog_lock);
		rang = n > 0 && pfd[0].revents != 0;
		readable = n > 0 && pfd[1].fd >= 0 && (pfd[1].revents &
				(POLLIN | POLLERR | POLLHUP));
	}

	shutdown_socket(c);
	close_dead_socket(c);
	c->state = TCP_CONN_DEAD;
	tcp_enter_error(c, PMREP_WC_FLUSHED);
	tcp_flush_all(c, PMREP_WC_FLUSHED);
	tcp_cqes_flush(c);
	pthread_mutex_unlock(&c->prog_lock);
	return NULL;
}
