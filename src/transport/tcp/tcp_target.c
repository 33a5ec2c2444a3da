/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_target.c -- the target side of every op: a request from the peer
 * is checked (rkey, range, access: tcp_remote_check) and applied in
 * order -- a write's destination set, a read's response queued, an
 * atomic write stored, a flush fenced or, PERSISTENT, persisted (the
 * flushes of one receive batch into one region joined into one call:
 * tcp_conn.pend), a send or a write with immediate given a receive or
 * stalled for one up to the peer's receiver-not-ready budget -- and
 * answered: cumulative ACKs (held while a persist is pending), READ
 * responses (at most TCP_RESP_MAX owed), a NAK that fails the conn.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcp_progress.h"
#include "transport/common.h"

/* ---------------------------------------------------------- responses */

static bool
resp_push(struct tcp_conn *c, const struct tcp_resp *r)
{
	if (c->resp_count == c->resp_cap) {
		/* READs stop at TCP_RESP_MAX (TCP_HDR_FULL); one NAK may
		 * follow */
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

/* the target refuses request `seq`: tell the initiator, then both fail */
void
tcp_nak(struct tcp_conn *c, uint32_t seq, enum pmrep_wc_status status)
{
	/* earlier flushes first: if their persist fails, that is the NAK */
	if (!tcp_pend_run(c))
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

void
tcp_ack(struct tcp_conn *c, uint32_t seq)
{
	if (c->pend.active) {
		c->pend.ack_seq = seq;	/* held until the persist is done */
		return;
	}
	c->ack_seq = seq;
	c->ack_dirty = true;
}

/* ------------------------------------------------------------ requests */

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

/*
 * A READ's data is copied when its response is handed to the kernel. A
 * later request that may change memory (anything but another READ) waits
 * for that, so a read never sees a write posted after it: the order of
 * posting is the order of effect.
 */
bool
tcp_reads_unsent(struct tcp_conn *c)
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
	tcp_nak(c, f->seq, PMREP_WC_RNR_RETRY_EXCEEDED);
	return false;
}

/* ------------------------------------------------------------- persist */

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
bool
tcp_pend_run(struct tcp_conn *c)
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
			tcp_nak(c, c->pend.first_seq, PMREP_WC_REMOTE_OPERATION_ERROR);
			return false;
		}
	} else if (persist_default(c->pend.start, len) != 0) {
		PMREP_LOG_ERR("flush: msync of %llu bytes failed: %s",
				(unsigned long long)len, strerror(errno));
		tcp_nak(c, c->pend.first_seq, PMREP_WC_REMOTE_OPERATION_ERROR);
		return false;
	}
	tcp_ack(c, c->pend.ack_seq);
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
	if (!tcp_pend_run(c))
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

/* --------------------------------------------------------------- apply */

/* a request from the peer: validate it against our MRs and start it */
enum tcp_hdr_result
tcp_on_request(struct tcp_conn *c, const struct tcp_frame *f)
{
	struct tcp_peer *p = tcp_peer(c->base.peer);
	if (f->seq != c->rx_expect) {
		tcp_protocol_error(c, "request out of sequence");
		return TCP_HDR_DEAD;
	}
	if (f->type != TCP_WIRE_READ && tcp_reads_unsent(c))
		return TCP_HDR_GATED;
	/* only plain writes and flushes may pass a pending persist: anything
	 * else answers (a READ_RESP acknowledges what precedes it) or shows
	 * the target's application something (a receive completion) */
	if (c->pend.active && f->type != TCP_WIRE_FLUSH &&
			!(f->type == TCP_WIRE_WRITE && !(f->flags & TCP_WIRE_F_IMM)) &&
			!tcp_pend_run(c)) {
		c->rx_ignore = true;
		return TCP_HDR_GO;
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
			return c->qp_error ? TCP_HDR_GO : TCP_HDR_STALL;
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
			return TCP_HDR_FULL;
		struct tcp_resp r = { .type = TCP_WIRE_READ_RESP,
			.seq = f->seq, .key = mr->base.rkey, .len = f->len,
			.ptr = (uint8_t *)mr->base.ptr +
				(f->raddr - mr->base.raddr) };
		if (!resp_push(c, &r))
			return TCP_HDR_DEAD;
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
		tcp_ack(c, f->seq);
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
				return TCP_HDR_GO;
			}
			break;
		}
		tcp_ack(c, f->seq);
		break;
	}
	case TCP_WIRE_SEND:
		if (!c->rx_has_recv && !need_recv(c, f))
			return c->qp_error ? TCP_HDR_GO : TCP_HDR_STALL;
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
		return TCP_HDR_GO;
	if (st != PMREP_WC_SUCCESS) {
		c->rx_dst = NULL;
		tcp_nak(c, f->seq, st);
	}
	return TCP_HDR_GO;
}
