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

static bool
resp_push(struct tcp_conn *c, const struct tcp_resp *r)
{
	if (c->resp_count == c->resp_cap) {
		/* READs stop at TCP_RESP_MAX (HDR_FULL); one NAK may follow */
		uint32_t cap = c->resp_cap ? c->resp_cap * 2 : 16;
		if (cap > TCP_RESP_MAX + 1)
			cap = TCP_RESP_MAX + 1;
		if (cap <= c->resp_count) {
			PMREP_LOG_ERR("%u responses owed: a bug", c->resp_count);
			tcp_finish(c, PMREP_CONN_LOST);
			return false;
		}
		struct tcp_resp *n = malloc(cap * sizeof(*n));
		if (n == NULL) {
			PMREP_LOG_ERR("out of memory for a response");
			tcp_finish(c, PMREP_CONN_LOST);
			return false;
		}
		for (uint32_t i = 0; i < c->resp_count; i++)
			n[i] = c->resp[(c->resp_head + i) % c->resp_cap];
		free(c->resp);
		c->resp = n;
		c->resp_cap = cap;
		c->resp_head = 0;
	}
	c->resp[(c->resp_head + c->resp_count++) % c->resp_cap] = *r;
	return true;
}

static bool pend_run(struct tcp_conn *c);

/* a status as the NAK code that carries it (tcp_wire.h); the target
 * only NAKs with these four */
static uint32_t
nak_code(enum pmrep_wc_status status)
{
	switch (status) {
	case PMREP_WC_REMOTE_INVALID_REQUEST:
		return TCP_WIRE_NAK_REM_INV_REQ;
	case PMREP_WC_REMOTE_ACCESS_ERROR:
		return TCP_WIRE_NAK_REM_ACCESS;
	case PMREP_WC_RNR_RETRY_EXCEEDED:
		return TCP_WIRE_NAK_RNR_RETRY;
	default:
		return TCP_WIRE_NAK_REM_OP;
	}
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

/* the target refuses request `seq`: tell the initiator, then both fail */
static void
nak(struct tcp_conn *c, uint32_t seq, enum pmrep_wc_status status)
{
	/* earlier flushes first: if their persist fails, that is the NAK */
	if (!pend_run(c))
		return;
	struct tcp_resp r = { .type = TCP_WIRE_NAK, .seq = seq,
		.status = nak_code(status) };
	if (!resp_push(c, &r))
		return;
	/* responses owed before the NAK still go out (the initiator takes
	 * them in order); nothing after it */
	uint32_t keep = c->resp_count;
	bool ack = c->ack_dirty;
	tcp_enter_lost(c, "a request of the peer failed here");
	c->resp_count = keep;
	c->ack_dirty = ack;
}

static void
ack(struct tcp_conn *c, uint32_t seq)
{
	if (c->pend.active) {
		c->pend.ack_seq = seq;	/* held until the persist is done */
		return;
	}
	c->ack_seq = seq;
	c->ack_dirty = true;
}

/* ------------------------------------------------------------- receive */

static bool
take_recv(struct tcp_conn *c, struct tcp_recv *r)
{
	if (c->srq != NULL)
		return tcp_srq_take(c->srq, r);
	pthread_mutex_lock(&c->lock);
	bool ok = tcp_rq_take(&c->rq, r);
	pthread_mutex_unlock(&c->lock);
	return ok;
}

static void
set_rnr_waiting(struct tcp_conn *c, bool waiting)
{
	pthread_mutex_lock(&c->lock);
	c->rnr_waiting = waiting;
	pthread_mutex_unlock(&c->lock);
}

enum hdr_result { HDR_GO, HDR_STALL, HDR_GATED, HDR_FULL, HDR_DEAD };

/*
 * A READ's data is copied when its response is handed to the kernel. A
 * later request that may change memory (anything but another READ) waits
 * for that, so a read never sees a write posted after it: the order of
 * posting is the order of effect.
 */
static bool
reads_unsent(struct tcp_conn *c)
{
	if (!c->read_gate)
		return false;
	for (uint32_t i = 0; i < c->resp_count; i++)
		if (c->resp[(c->resp_head + i) % c->resp_cap].type ==
				TCP_WIRE_READ_RESP)
			return true;
	for (unsigned i = 0; i < c->tx_count; i++)
		if (c->tx[(c->tx_first + i) % TCP_TX_FRAMES].hdr[0] ==
				TCP_WIRE_READ_RESP)
			return true;
	c->read_gate = false;
	return false;
}

/*
 * A receive for the request at the head of the input: true with c->rx_recv
 * set; false when the request must wait (stalled) or failed with
 * RNR_RETRY_EXC (the budget ran out).
 */
static bool
need_recv(struct tcp_conn *c, const struct tcp_frame *f)
{
	/* announce the wait before looking, so a receive posted in between
	 * kicks us (see tcp_srq_recv / tcp_post) */
	if (!c->stalled)
		set_rnr_waiting(c, true);
	if (take_recv(c, &c->rx_recv)) {
		set_rnr_waiting(c, false);
		c->stalled = false;
		c->rx_has_recv = true;
		return true;
	}
	long long now = pmrep_now_ms();
	if (!c->stalled) {
		c->stalled = true;
		c->stall_deadline = now + c->peer_rnr_ms;
		return false;
	}
	if (now < c->stall_deadline)
		return false;
	PMREP_LOG_ERR("no receive posted for %u ms: the peer's %s fails (RNR)",
			c->peer_rnr_ms, f->type == TCP_WIRE_SEND ? "send" :
			"write with immediate");
	set_rnr_waiting(c, false);
	c->stalled = false;
	nak(c, f->seq, PMREP_WC_RNR_RETRY_EXCEEDED);
	return false;
}

static int
persist_default(void *ptr, uint64_t len)
{
	static long page;
	if (page == 0)
		page = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)ptr & ~(uintptr_t)(page - 1);
	uintptr_t end = (uintptr_t)ptr + len;
	return msync((void *)start, end - start, MS_SYNC);
}

/*
 * Run the pending persist (see tcp_conn.pend). Flushes are applied in
 * order, so persisting their union once after the batch is what
 * persisting each in turn would give; the ACK that answers for them (and
 * for any plain write after them) is held until then. On failure the
 * oldest flush of the group is NAKed: the initiator completes it with
 * PMREP_WC_REMOTE_OPERATION_ERROR and everything after it with a flush error, so no
 * flush is ever acknowledged without its persist. false: failed (the
 * conn is in the error state).
 */
static bool
pend_run(struct tcp_conn *c)
{
	if (!c->pend.active)
		return true;
	c->pend.active = false;
	uint64_t len = (uint64_t)(c->pend.end - c->pend.start);
	if (c->pend.fn != NULL) {
		int ret = c->pend.fn(c->pend.ctx, c->pend.start, len);
		if (ret != 0) {
			PMREP_LOG_ERR("flush: the region's persist function "
					"failed on %llu bytes (%d: %s): the flush "
					"is refused, never acknowledged",
					(unsigned long long)len, ret,
					pmrep_err_to_str(ret));
			nak(c, c->pend.first_seq, PMREP_WC_REMOTE_OPERATION_ERROR);
			return false;
		}
	} else if (persist_default(c->pend.start, len) != 0) {
		PMREP_LOG_ERR("flush: msync of %llu bytes failed: %s",
				(unsigned long long)len, strerror(errno));
		nak(c, c->pend.first_seq, PMREP_WC_REMOTE_OPERATION_ERROR);
		return false;
	}
	ack(c, c->pend.ack_seq);
	return true;
}

/* one more PERSISTENT flush of [addr, addr + len) in `mr`: joins the
 * pending one when the two ranges overlap or touch -- never across a gap,
 * so the union holds only bytes some flush named (a gap could be memory
 * the persist fails on, e.g. an unmapped page: a false error) */
static void
pend_add(struct tcp_conn *c, const struct tcp_mr *mr, uint8_t *addr,
		uint64_t len, uint32_t seq)
{
	if (c->pend.active && c->pend.key == mr->base.rkey &&
			c->pend.fn == mr->base.persist &&
			c->pend.ctx == mr->base.persist_ctx &&
			addr <= c->pend.end && addr + len >= c->pend.start) {
		if (addr < c->pend.start)
			c->pend.start = addr;
		if (addr + len > c->pend.end)
			c->pend.end = addr + len;
		c->pend.ack_seq = seq;
		return;
	}
	if (!pend_run(c))
		return;
	c->pend.active = true;
	c->pend.key = mr->base.rkey;
	c->pend.fn = mr->base.persist;
	c->pend.ctx = mr->base.persist_ctx;
	c->pend.start = addr;
	c->pend.end = addr + len;
	c->pend.first_seq = seq;
	c->pend.ack_seq = seq;
}

/* a request from the peer: validate it against our MRs and start it */
static enum hdr_result
on_request(struct tcp_conn *c, const struct tcp_frame *f)
{
	struct tcp_peer *p = tcp_peer(c->base.peer);
	if (f->seq != c->rx_expect) {
		tcp_protocol_error(c, "request out of sequence");
		return HDR_DEAD;
	}
	if (f->type != TCP_WIRE_READ && reads_unsent(c))
		return HDR_GATED;
	/* only plain writes and flushes may pass a pending persist: anything
	 * else answers (a READ_RESP acknowledges what precedes it) or shows
	 * the target's application something (a receive completion) */
	if (c->pend.active && f->type != TCP_WIRE_FLUSH &&
			!(f->type == TCP_WIRE_WRITE && !(f->flags & TCP_WIRE_F_IMM)) &&
			!pend_run(c)) {
		c->rx_ignore = true;
		return HDR_GO;
	}
	struct tcp_mr *mr = NULL;
	enum pmrep_wc_status st = PMREP_WC_SUCCESS;
	uint8_t *addr = NULL;

	switch (f->type) {
	case TCP_WIRE_WRITE:
		st = tcp_remote_check(c, f->rkey, f->raddr, f->payload_len,
				PMREP_MR_USAGE_WRITE_DST, &mr);
		if (st != PMREP_WC_SUCCESS)
			break;
		if ((f->flags & TCP_WIRE_F_IMM) && !c->rx_has_recv &&
				!need_recv(c, f))
			return c->qp_error ? HDR_GO : HDR_STALL;
		c->rx_dst = (uint8_t *)mr->base.ptr + (f->raddr - mr->base.raddr);
		c->rx_key = mr->base.rkey;
		break;
	case TCP_WIRE_READ:
		st = tcp_remote_check(c, f->rkey, f->raddr, f->len,
				PMREP_MR_USAGE_READ_SRC, &mr);
		if (st != PMREP_WC_SUCCESS)
			break;
		/* a peer that floods READs and does not take the responses
		 * is held back by not reading, not by queueing without end */
		if (c->resp_count >= TCP_RESP_MAX)
			return HDR_FULL;
		struct tcp_resp r = { .type = TCP_WIRE_READ_RESP,
			.seq = f->seq, .key = mr->base.rkey, .len = f->len,
			.ptr = (uint8_t *)mr->base.ptr +
				(f->raddr - mr->base.raddr) };
		if (!resp_push(c, &r))
			return HDR_DEAD;
		c->read_gate = true;
		break;
	case TCP_WIRE_ATOMIC_WRITE:
		st = tcp_remote_check(c, f->rkey, f->raddr, 8,
				PMREP_MR_USAGE_WRITE_DST, &mr);
		if (st != PMREP_WC_SUCCESS)
			break;
		if (f->raddr % 8 != 0) {
			st = PMREP_WC_REMOTE_INVALID_REQUEST;
			break;
		}
		addr = (uint8_t *)mr->base.ptr + (f->raddr - mr->base.raddr);
		uint64_t v;
		memcpy(&v, f->value, 8);
		/* all 8 bytes at once: a reader sees the old or the new value */
		__atomic_store_n((uint64_t *)(void *)addr, v, __ATOMIC_RELEASE);
		ack(c, f->seq);
		break;
	case TCP_WIRE_FLUSH: {
		int usage = f->flush_type == PMREP_FLUSH_TYPE_PERSISTENT ?
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT :
			PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY;
		st = tcp_remote_check(c, f->rkey, f->raddr, f->len, usage,
				&mr);
		if (st != PMREP_WC_SUCCESS)
			break;
		/* every earlier write of this conn is in memory already: they
		 * were applied in order before this frame was read */
		atomic_thread_fence(memory_order_seq_cst);
		if (f->flush_type == PMREP_FLUSH_TYPE_PERSISTENT && f->len > 0) {
			addr = (uint8_t *)mr->base.ptr +
				(f->raddr - mr->base.raddr);
			pend_add(c, mr, addr, f->len, f->seq);
			if (c->qp_error) {	/* an earlier persist failed */
				c->rx_ignore = true;
				return HDR_GO;
			}
			break;
		}
		ack(c, f->seq);
		break;
	}
	case TCP_WIRE_SEND:
		if (!c->rx_has_recv && !need_recv(c, f))
			return c->qp_error ? HDR_GO : HDR_STALL;
		if (f->payload_len > c->rx_recv.len) {
			PMREP_LOG_ERR("a %u-byte message for a %llu-byte receive",
					f->payload_len,
					(unsigned long long)c->rx_recv.len);
			tcp_cqe_recv(c, &c->rx_recv, PMREP_OP_RECV,
					PMREP_WC_LOCAL_LENGTH_ERROR, 0, false, 0);
			c->rx_has_recv = false;
			st = PMREP_WC_REMOTE_INVALID_REQUEST;
			break;
		}
		if (f->payload_len > 0 && tcp_mr_find(p, c->rx_recv.key) == NULL) {
			tcp_cqe_recv(c, &c->rx_recv, PMREP_OP_RECV,
					PMREP_WC_LOCAL_PROTECTION_ERROR, 0, false, 0);
			c->rx_has_recv = false;
			st = PMREP_WC_REMOTE_OPERATION_ERROR;
			break;
		}
		c->rx_dst = c->rx_recv.ptr;
		c->rx_key = c->rx_recv.key;
		break;
	}
	if (c->qp_error)	/* an RNR failure above */
		return HDR_GO;
	if (st != PMREP_WC_SUCCESS) {
		c->rx_dst = NULL;
		nak(c, f->seq, st);
	}
	return HDR_GO;
}

/* a response to one of our requests */
static enum hdr_result
on_response(struct tcp_conn *c, const struct tcp_frame *f)
{
	if (!sq_in_flight(c, f->seq)) {
		if (f->type == TCP_WIRE_ACK && (int32_t)(f->seq - c->sq_head) < 0)
			return HDR_GO;	/* about requests completed already */
		tcp_protocol_error(c, "response to no request in flight");
		return HDR_DEAD;
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
			return HDR_DEAD;
		}
		acked_through(c, f->seq - 1);	/* applied in order */
		if (tcp_mr_find(tcp_peer(c->base.peer), wr->lkey) == NULL) {
			PMREP_LOG_ERR("read: the destination MR was deregistered with the read in flight");
			tcp_finish(c, PMREP_CONN_LOST);
			return HDR_DEAD;
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
	return HDR_GO;
}

static void
on_disconnect(struct tcp_conn *c)
{
	if (c->state == TCP_CONN_CLOSING)
		tcp_finish(c, PMREP_CONN_CLOSED);	/* the answer to ours */
	else
		tcp_start_closing(c, true);
}

static enum hdr_result
on_header(struct tcp_conn *c, const struct tcp_frame *f)
{
	c->rx_dst = NULL;
	c->rx_ignore = false;
	c->rx_status = PMREP_WC_SUCCESS;
	if (f->type == TCP_WIRE_DISCONNECT) {
		on_disconnect(c);
		return c->state == TCP_CONN_DEAD ? HDR_DEAD : HDR_GO;
	}
	if (c->qp_error || c->state != TCP_CONN_OPEN) {
		if (c->state == TCP_CONN_CONNECTING) {
			tcp_protocol_error(c, "frame before the handshake finished");
			return HDR_DEAD;
		}
		c->rx_ignore = true;	/* parsed and dropped */
		return HDR_GO;
	}
	switch (f->type) {
	case TCP_WIRE_WRITE:
	case TCP_WIRE_READ:
	case TCP_WIRE_ATOMIC_WRITE:
	case TCP_WIRE_FLUSH:
	case TCP_WIRE_SEND:
		return on_request(c, f);
	case TCP_WIRE_ACK:
	case TCP_WIRE_READ_RESP:
	case TCP_WIRE_NAK:
		return on_response(c, f);
	default:
		tcp_protocol_error(c, "handshake frame on an open connection");
		return HDR_DEAD;
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
			nak(c, f->seq, c->rx_status);	/* MR gone meanwhile */
			return;
		}
		ack(c, f->seq);
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
			nak(c, f->seq, PMREP_WC_REMOTE_OPERATION_ERROR);
			return;
		}
		ack(c, f->seq);
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
		enum hdr_result h = on_header(c, &c->rxf);
		if (h == HDR_DEAD)
			return;
		if (h == HDR_STALL) {
			c->rx_more = true;	/* header stays; retried later */
			return;
		}
		if (h == HDR_GATED) {
			c->rx_gated = true;	/* until the reads are out */
			return;
		}
		if (h == HDR_FULL) {
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
	(void) pend_run(c);
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
	if (c->rx_gated && !reads_unsent(c)) {
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
