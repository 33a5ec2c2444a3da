/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_rx.c -- the receive side of a turn: the socket read into the
 * receive buffer (a large payload's rest straight into its place), the
 * frames parsed from it and each dispatched -- a request to the target
 * side (tcp_target.c), an ACK, READ_RESP or NAK to the request of ours
 * it answers, DISCONNECT to the close -- then its payload delivered and
 * the frame's end taken (a write or a send acknowledged and its receive
 * completed, a read's data in). It stops at a cap, a stall, READ
 * responses unsent or too many owed, and says so (rx_more, rx_gated,
 * rx_full).
 */
#include <errno.h>
#include <string.h>

#include "tcp_progress.h"
#include "transport/common.h"

#define RX_ITER_MAX 64		/* recv calls per loop turn */

/* ------------------------------------------- responses to our requests */

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

/* ------------------------------------------------------------- receive */

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
			tcp_cqe_recv(c, &c->rx_recv,
					PMREP_OP_RECV_RDMA_WITH_IMM,
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

/* take and apply what has arrived, up to a cap (see tcp_rx_progress) */
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
void
tcp_rx_progress(struct tcp_conn *c)
{
	rx_frames(c);
	(void) tcp_pend_run(c);
}
