/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_progress.c -- the progress thread of a tcp connection: connecting
 * (active side, with retries and backoff), sending frames in batches,
 * receiving and applying frames (the target side of one-sided ops, the
 * receiving side of sends), completing requests in posting order, and the
 * connection's end (disconnect, peer death, delete).
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
 * heartbeats: see "liveness" below and README.md).
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tcp_progress.h"
#include "transport/common.h"

#define RX_ITER_MAX 64		/* recv calls per loop turn */

/* is `seq` a request we sent that has not completed yet? */
static bool
sq_in_flight(const struct tcp_conn *c, uint32_t seq)
{
	return seq - c->sq_head < c->sq_tx - c->sq_head;
}

static void
acked_through(struct tcp_conn *c, uint32_t seq)
{
	/* every request before seq + 1 reached the target and was applied */
	if ((int32_t)(seq + 1 - c->sq_acked) > 0)
		c->sq_acked = seq + 1;
}

static void
close_dead_socket(struct tcp_conn *c)
{
	if (c->sock_dead >= 0) {
		close(c->sock_dead);
		c->sock_dead = -1;
	}
}

/* ---------------------------------------------------------- responses */

/* a NAK's code (checked by the decoder) as the initiator's status */
static enum pmrep_wc_status
nak_status(uint32_t code)
{
	switch (code) {
	case TCP_WIRE_NAK_REM_INV_REQ:
		return PMREP_WC_REMOTE_INVALID_REQUEST;
	case TCP_WIRE_NAK_REM_ACCESS:
		return PMREP_WC_REMOTE_ACCESS_ERROR;
	case TCP_WIRE_NAK_RNR_RETRY:
		return PMREP_WC_RNR_RETRY_EXCEEDED;
	default:
		return PMREP_WC_REMOTE_OPERATION_ERROR;
	}
}

/* ------------------------------------------------------------- receive */

/* a response to one of our requests */
static enum tcp_hdr_result
on_response(struct tcp_conn *c, const struct tcp_frame *f)
{
	if (!sq_in_flight(c, f->seq)) {
		if (f->type == TCP_WIRE_ACK && (int32_t)(f->seq - c->sq_head) < 0)
			return TCP_HDR_GO;	/* about requests completed already */
		tcp_protocol_error(c, "response to no request in flight");
		return TCP_HDR_DEAD;
	}
	struct tcp_wr *wr = tcp_sq_wr(c, f->seq);
	switch (f->type) {
	case TCP_WIRE_ACK:
		acked_through(c, f->seq);
		break;
	case TCP_WIRE_READ_RESP:
		if (wr->type != TCP_WIRE_READ || wr->done ||
				f->payload_len != wr->len) {
			tcp_protocol_error(c, "read response does not match its read");
			return TCP_HDR_DEAD;
		}
		acked_through(c, f->seq - 1);	/* applied in order */
		if (tcp_mr_find(tcp_peer(c->base.peer), wr->lkey) == NULL) {
			PMREP_LOG_ERR("read: the destination MR was deregistered with the read in flight");
			tcp_finish(c, PMREP_CONN_LOST);
			return TCP_HDR_DEAD;
		}
		c->rx_dst = wr->lptr;
		c->rx_key = wr->lkey;
		break;
	case TCP_WIRE_NAK:
		wr->status = nak_status(f->status);
		PMREP_LOG_ERR("the target failed request %u: %s", f->seq,
				pmrep_wc_status_str(wr->status));
		wr->done = true;
		acked_through(c, f->seq);
		tcp_sq_complete(c);
		tcp_enter_lost(c, pmrep_wc_status_str(wr->status));
		break;
	}
	return TCP_HDR_GO;
}

static void
on_disconnect(struct tcp_conn *c)
{
	if (c->state == TCP_CONN_CLOSING)
		tcp_finish(c, PMREP_CONN_CLOSED);	/* the answer to ours */
	else
		tcp_start_closing(c, true);
}

static enum tcp_hdr_result
on_header(struct tcp_conn *c, const struct tcp_frame *f)
{
	c->rx_dst = NULL;
	c->rx_ignore = false;
	c->rx_status = PMREP_WC_SUCCESS;
	if (f->type == TCP_WIRE_DISCONNECT) {
		on_disconnect(c);
		return c->state == TCP_CONN_DEAD ? TCP_HDR_DEAD : TCP_HDR_GO;
	}
	if (c->qp_error || c->state != TCP_CONN_OPEN) {
		if (c->state == TCP_CONN_CONNECTING) {
			tcp_protocol_error(c, "frame before the handshake finished");
			return TCP_HDR_DEAD;
		}
		c->rx_ignore = true;	/* parsed and dropped */
		return TCP_HDR_GO;
	}
	switch (f->type) {
	case TCP_WIRE_WRITE:
	case TCP_WIRE_READ:
	case TCP_WIRE_ATOMIC_WRITE:
	case TCP_WIRE_FLUSH:
	case TCP_WIRE_SEND:
		return tcp_on_request(c, f);
	case TCP_WIRE_ACK:
	case TCP_WIRE_READ_RESP:
	case TCP_WIRE_NAK:
		return on_response(c, f);
	default:
		tcp_protocol_error(c, "handshake frame on an open connection");
		return TCP_HDR_DEAD;
	}
}

/* the whole frame (header and payload) has arrived */
static void
on_frame_done(struct tcp_conn *c)
{
	const struct tcp_frame *f = &c->rxf;
	bool request = f->type >= TCP_WIRE_WRITE && f->type <= TCP_WIRE_SEND;
	if (request)
		c->rx_expect++;
	if (c->rx_ignore || c->qp_error)
		return;

	switch (f->type) {
	case TCP_WIRE_WRITE:
		if (c->rx_status != PMREP_WC_SUCCESS) {
			tcp_nak(c, f->seq, c->rx_status);	/* MR gone meanwhile */
			return;
		}
		tcp_ack(c, f->seq);
		if (f->flags & TCP_WIRE_F_IMM) {
			tcp_cqe_recv(c, &c->rx_recv, PMREP_OP_RECV_RDMA_WITH_IMM,
					PMREP_WC_SUCCESS, f->payload_len, true,
					f->imm);
			c->rx_has_recv = false;
		}
		break;
	case TCP_WIRE_SEND:
		if (c->rx_status != PMREP_WC_SUCCESS) {
			tcp_cqe_recv(c, &c->rx_recv, PMREP_OP_RECV,
					PMREP_WC_LOCAL_PROTECTION_ERROR, 0, false, 0);
			c->rx_has_recv = false;
			tcp_nak(c, f->seq, PMREP_WC_REMOTE_OPERATION_ERROR);
			return;
		}
		tcp_ack(c, f->seq);
		tcp_cqe_recv(c, &c->rx_recv, PMREP_OP_RECV, PMREP_WC_SUCCESS,
				f->payload_len, (f->flags & TCP_WIRE_F_IMM) != 0,
				f->imm);
		c->rx_has_recv = false;
		break;
	case TCP_WIRE_READ_RESP: {
		if (c->rx_status != PMREP_WC_SUCCESS) {
			PMREP_LOG_ERR("read: the destination MR was deregistered with the read in flight");
			tcp_finish(c, PMREP_CONN_LOST);
			return;
		}
		struct tcp_wr *wr = tcp_sq_wr(c, f->seq);
		wr->done = true;
		wr->status = PMREP_WC_SUCCESS;
		break;
	}
	default:
		break;
	}
}

/* recv into buf; > 0 bytes, 0 would block, -1 the socket ended (handled).
 * A short read means the socket is empty for now: c->rx_drained, so the
 * next look waits for poll instead of costing a recv that says EAGAIN. */
static ssize_t
rx_recv(struct tcp_conn *c, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = c->tls ? tcp_tls_recv(c->tls, buf, len) :
			recv(c->sock, buf, len, 0);
		if (n > 0) {
			c->rx_drained = (size_t)n < len;
			c->last_rx_ms = pmrep_now_ms();
			return n;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->rx_drained = true;
			return 0;
		}
		tcp_sock_ended(c, n < 0 ? errno : 0);
		return -1;
	}
}

/* fill the receive buffer; > 0 got bytes, 0 would block, -1 ended */
static ssize_t
rx_fill(struct tcp_conn *c)
{
	if (c->rx_start == c->rx_end) {
		c->rx_start = c->rx_end = 0;
	} else if (c->rx_start > 0) {
		memmove(c->rxbuf, c->rxbuf + c->rx_start,
				c->rx_end - c->rx_start);
		c->rx_end -= c->rx_start;
		c->rx_start = 0;
	}
	ssize_t n = rx_recv(c, c->rxbuf + c->rx_end, TCP_RX_BUF_SIZE - c->rx_end);
	if (n > 0)
		c->rx_end += (size_t)n;
	return n;
}

/* take and apply what has arrived, up to a cap (see rx_progress) */
static void
rx_frames(struct tcp_conn *c)
{
	int calls = 0;
	c->rx_drained = false;	/* poll said readable, or work was left */
	c->rx_more = false;
	while (c->sock >= 0) {
		if (calls == RX_ITER_MAX) {
			c->rx_more = true;	/* let the transmit side run */
			return;
		}
		if (c->rx_in_payload) {
			size_t have = c->rx_end - c->rx_start;
			if (have > 0) {
				size_t k = have < c->rx_left ? have :
					(size_t)c->rx_left;
				if (c->rx_dst) {
					memcpy(c->rx_dst, c->rxbuf + c->rx_start, k);
					c->rx_dst += k;
				}
				c->rx_start += k;
				c->rx_left -= k;
			} else if (c->rx_drained) {
				return;
			} else if (c->rx_dst && c->rx_left >= TCP_RX_DIRECT_MIN) {
				/* a large rest goes straight to its place */
				ssize_t n = rx_recv(c, c->rx_dst, c->rx_left);
				calls++;
				if (n <= 0)
					return;
				c->rx_dst += n;
				c->rx_left -= (uint64_t)n;
			} else {
				ssize_t n = rx_fill(c);
				calls++;
				if (n <= 0)
					return;
			}
			if (c->rx_left == 0) {
				c->rx_in_payload = false;
				on_frame_done(c);
			}
			continue;
		}

		int r = tcp_wire_decode(c->rxbuf + c->rx_start,
				c->rx_end - c->rx_start, &c->rxf);
		if (r == TCP_WIRE_MALFORMED) {
			tcp_protocol_error(c, "malformed frame");
			return;
		}
		if (r == TCP_WIRE_NEED_MORE) {
			if (c->rx_drained)
				return;
			ssize_t n = rx_fill(c);
			calls++;
			if (n <= 0)
				return;
			continue;
		}
		enum tcp_hdr_result h = on_header(c, &c->rxf);
		if (h == TCP_HDR_DEAD)
			return;
		if (h == TCP_HDR_STALL) {
			c->rx_more = true;	/* header stays; retried later */
			return;
		}
		if (h == TCP_HDR_GATED) {
			c->rx_gated = true;	/* until the reads are out */
			return;
		}
		if (h == TCP_HDR_FULL) {
			c->rx_full = true;	/* until responses went out */
			return;
		}
		c->rx_start += (size_t)r;
		if (c->rxf.payload_len > 0) {
			c->rx_in_payload = true;
			c->rx_left = c->rxf.payload_len;
		} else {
			on_frame_done(c);
		}
	}
}

/* take and apply everything that has arrived (caller holds mem_lock);
 * c->rx_more: stopped with work left (a cap, a stall), look again soon.
 * The flushes of the batch are persisted before it returns, i.e. before
 * the ACK that answers for them can be sent. */
static void
rx_progress(struct tcp_conn *c)
{
	rx_frames(c);
	(void) tcp_pend_run(c);
}

/* ----------------------------------------------------------- main loop */

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
		rx_progress(c);
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
