/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_tx.c -- the transmit side of a turn: the batch of frames (at most
 * TCP_TX_FRAMES of them, TCP_TX_BATCH_BYTES of payload) filled in
 * protocol order -- ACCEPT, ACK, the responses owed, our requests,
 * DISCONNECT, else the heartbeat -- and handed to the kernel with one
 * sendmsg (or one TLS write) without copying a payload; a frame's end
 * (the ACCEPT's: the conn is open); and a deregistration's fix-up of
 * what is in flight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "tcp_progress.h"
#include "transport/common.h"

#define TX_ITER_MAX 16		/* sendmsg calls per loop turn */

static struct tcp_txf *
tx_add(struct tcp_conn *c, const struct tcp_frame *f)
{
	struct tcp_txf *t = &c->tx[(c->tx_first + c->tx_count++) % TCP_TX_FRAMES];
	memset(t, 0, sizeof(*t));
	t->hdr_len = (uint8_t)tcp_wire_encode(f, t->hdr);
	return t;
}

/* a request from the send queue as a frame; false: could not (conn ended) */
static bool
tx_request(struct tcp_conn *c, uint32_t seq, uint64_t *bytes)
{
	struct tcp_wr *wr = tcp_sq_wr(c, seq);
	struct tcp_frame f;
	memset(&f, 0, sizeof(f));
	f.type = wr->type;
	f.seq = seq;
	f.rkey = wr->rkey;
	f.raddr = wr->raddr;
	bool payload = false;
	switch (wr->type) {
	case TCP_WIRE_WRITE:
	case TCP_WIRE_SEND:
		if (wr->with_imm) {
			f.flags = TCP_WIRE_F_IMM;
			f.imm = wr->imm;
		}
		f.payload_len = (uint32_t)wr->len;
		payload = wr->len > 0;
		break;
	case TCP_WIRE_READ:
		f.len = wr->len;
		break;
	case TCP_WIRE_ATOMIC_WRITE:
		memcpy(f.value, wr->value, 8);
		break;
	case TCP_WIRE_FLUSH:
		f.len = wr->len;
		f.flush_type = wr->flush_type;
		break;
	}
	if (payload && tcp_mr_find(tcp_peer(c->base.peer), wr->lkey) == NULL) {
		PMREP_LOG_ERR("a source MR was deregistered with a request posted");
		tcp_finish(c, PMREP_CONN_LOST);
		return false;
	}
	struct tcp_txf *t = tx_add(c, &f);
	if (payload) {
		t->key = wr->lkey;
		t->payload = wr->lptr;
		t->payload_len = wr->len;
		*bytes += wr->len;
	}
	return true;
}

/* queue frames into the transmit batch, in protocol order */
static void
tx_fill(struct tcp_conn *c)
{
	uint64_t bytes = 0;
	uint32_t tail = tcp_sq_tail(c);
	while (c->tx_count < TCP_TX_FRAMES && bytes < TCP_TX_BATCH_BYTES &&
			c->sock >= 0) {
		struct tcp_frame f;
		memset(&f, 0, sizeof(f));
		if (c->accept_queued) {
			c->accept_queued = false;
			f.type = TCP_WIRE_ACCEPT;
			f.version = c->wire_version;	/* the lower of the two */
			f.rnr_ms = (uint32_t)c->base.cfg.timeout_ms;
			f.payload_len = c->my_pdata_len;
			struct tcp_txf *t = tx_add(c, &f);
			t->payload = c->my_pdata;
			t->payload_len = c->my_pdata_len;
		} else if (c->ack_dirty) {
			c->ack_dirty = false;
			f.type = TCP_WIRE_ACK;
			f.seq = c->ack_seq;
			c->ack_sent = c->ack_seq;
			tx_add(c, &f);
		} else if (c->resp_count > 0) {
			struct tcp_resp *r = &c->resp[c->resp_head];
			c->resp_head = (c->resp_head + 1) % c->resp_cap;
			c->resp_count--;
			f.type = r->type;
			f.seq = r->seq;
			f.status = r->status;
			if (r->type == TCP_WIRE_READ_RESP &&
					tcp_mr_find(tcp_peer(c->base.peer),
						r->key) == NULL) {
				/* deregistered before we got to send it */
				f.type = TCP_WIRE_NAK;
				f.status = TCP_WIRE_NAK_REM_ACCESS;
				tx_add(c, &f);
				tcp_enter_lost(c, "a read of a deregistered region");
				continue;
			}
			if (r->type == TCP_WIRE_READ_RESP)
				f.payload_len = (uint32_t)r->len;
			struct tcp_txf *t = tx_add(c, &f);
			if (r->type == TCP_WIRE_READ_RESP && r->len > 0) {
				t->key = r->key;
				t->payload = r->ptr;
				t->payload_len = r->len;
				bytes += r->len;
			}
		} else if (!c->qp_error && c->state == TCP_CONN_OPEN &&
				c->sq_tx != tail) {
			if (!tx_request(c, c->sq_tx, &bytes))
				return;
			/* v1: the request timeout's clock starts (v2: the
			 * peer's silence is timed whatever we send) */
			if (c->wire_version < 2 && c->sq_head == c->sq_tx)
				c->last_rx_ms = pmrep_now_ms();
			c->sq_tx++;
		} else if (c->disconnect_queued) {
			c->disconnect_queued = false;
			f.type = TCP_WIRE_DISCONNECT;
			tx_add(c, &f);
		} else if (c->tx_count == 0 && tcp_heartbeat_due(c, pmrep_now_ms())) {
			/* the heartbeat: our last ACK again, a no-op to
			 * every peer (v1 too: an ACK of requests completed
			 * already, or of none, -1, is ignored) */
			f.type = TCP_WIRE_ACK;
			f.seq = c->ack_sent;
			tx_add(c, &f);
			break;
		} else {
			break;
		}
	}
}

static void
tx_frame_sent(struct tcp_conn *c, struct tcp_txf *t)
{
	if (t->hdr[0] == TCP_WIRE_ACCEPT && c->state == TCP_CONN_CONNECTING) {
		c->state = TCP_CONN_OPEN;
		tcp_live_start(c);
		tcp_push_event(c, PMREP_CONN_ESTABLISHED);
	}
	free(t->owned);
	t->owned = NULL;
	c->tx_first = (c->tx_first + 1) % TCP_TX_FRAMES;
	c->tx_count--;
}

static void
tx_advance(struct tcp_conn *c, size_t n)
{
	while (c->tx_count > 0) {
		struct tcp_txf *t = &c->tx[c->tx_first];
		size_t h = (size_t)(t->hdr_len - t->hoff);
		size_t k = h < n ? h : n;
		t->hoff = (uint8_t)(t->hoff + k);
		n -= k;
		uint64_t p = t->payload_len - t->poff;
		k = p < n ? (size_t)p : n;
		t->poff += k;
		n -= k;
		if (t->hoff < t->hdr_len || t->poff < t->payload_len)
			return;
		tx_frame_sent(c, t);
	}
}

/* send what can be sent without blocking (caller holds mem_lock);
 * c->tx_more: stopped at the cap with the socket still taking bytes, so
 * there may be more to send and nothing else would wake the loop for it */
void
tcp_tx_progress(struct tcp_conn *c)
{
	int calls;
	c->tx_more = false;
	for (calls = 0; calls < TX_ITER_MAX && c->sock >= 0; calls++) {
		if (c->mem_lost) {
			PMREP_LOG_ERR("out of memory saving a deregistered MR's bytes in flight");
			tcp_finish(c, PMREP_CONN_LOST);
			return;
		}
		tx_fill(c);
		if (c->tx_count == 0 || c->sock < 0) {
			c->tx_blocked = false;
			/* TLS: a record taken but not in the kernel yet */
			int f = c->sock >= 0 && c->tls ? tcp_tls_flush(c->tls) : 0;
			if (f < 0)
				tcp_sock_ended(c, errno);
			c->tx_blocked = f > 0;
			break;
		}
		struct iovec iov[2 * TCP_TX_FRAMES];
		int k = 0;
		for (unsigned i = 0; i < c->tx_count; i++) {
			struct tcp_txf *t = &c->tx[(c->tx_first + i) % TCP_TX_FRAMES];
			if (t->hoff < t->hdr_len) {
				iov[k].iov_base = t->hdr + t->hoff;
				iov[k++].iov_len = (size_t)(t->hdr_len - t->hoff);
			}
			if (t->poff < t->payload_len) {
				iov[k].iov_base = t->payload + t->poff;
				iov[k++].iov_len = (size_t)(t->payload_len - t->poff);
			}
		}
		struct msghdr msg;
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.msg_iovlen = (size_t)k;
		ssize_t n = c->tls ? tcp_tls_sendv(c->tls, iov, k) :
			sendmsg(c->sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->tx_blocked = true;
				return;
			}
			tcp_sock_ended(c, errno);
			return;
		}
		if (n > 0)
			c->last_tx_ms = pmrep_now_ms();
		tx_advance(c, (size_t)n);
		c->tx_blocked = c->tx_count > 0 ||
			(c->tls && tcp_tls_tx_pending(c->tls));
	}
	if (calls == TX_ITER_MAX && !c->tx_blocked && c->sock >= 0)
		c->tx_more = true;
	if (c->close_when_sent && c->tx_count == 0 &&
			!c->disconnect_queued && c->sock >= 0 &&
			!(c->tls && tcp_tls_tx_pending(c->tls)))
		tcp_finish(c, PMREP_CONN_CLOSED);	/* our DISCONNECT answer is out */
}

void
tcp_progress_forget_mr(struct tcp_conn *c, const struct tcp_mr *mr)
{
	uint32_t key = mr->base.rkey;
	for (unsigned i = 0; i < c->tx_count; i++) {
		struct tcp_txf *t = &c->tx[(c->tx_first + i) % TCP_TX_FRAMES];
		if (t->key != key)
			continue;
		/* the frame is committed to the stream: send a snapshot of
		 * what is left, as if it had been read before the dereg */
		uint64_t rest = t->payload_len - t->poff;
		uint8_t *copy = rest ? malloc(rest) : NULL;
		if (rest && copy == NULL) {
			c->mem_lost = true;
			t->payload = NULL;
			t->payload_len = t->poff;
			t->key = 0;
			continue;
		}
		if (rest)
			memcpy(copy, t->payload + t->poff, rest);
		t->payload = copy;
		t->payload_len = rest;
		t->poff = 0;
		t->owned = copy;
		t->key = 0;
	}
	if (c->rx_in_payload && c->rx_dst != NULL && c->rx_key == key) {
		c->rx_dst = NULL;
		c->rx_status = PMREP_WC_REMOTE_ACCESS_ERROR;
	}
}
