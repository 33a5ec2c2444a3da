/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_progress.h -- what the files of a conn's progress thread share:
 * tcp_progress.c (the thread and its turn), tcp_connect.c, tcp_rx.c,
 * tcp_target.c, tcp_tx.c, tcp_live.c and tcp_complete.c, each saying in
 * its top comment what it owns. The rest of the provider knows the
 * thread only by tcp.h: tcp_progress_main, tcp_fast_turn,
 * tcp_progress_forget_mr.
 *
 * Everything here is called in a progress turn, under conn->prog_lock,
 * unless its comment says otherwise.
 */
#ifndef PMREP_TCP_PROGRESS_H
#define PMREP_TCP_PROGRESS_H

#include "tcp.h"

/* ------------------------------ tcp_progress.c: the thread and its turn */

/* drain the doorbell: true when delete asks the thread to return;
 * *disconnect set when the application asked for one since the last
 * look (the connect phase too, without prog_lock) */
bool tcp_doorbell(struct tcp_conn *c, bool *disconnect);

/* ---------------------------------------------- tcp_connect.c: connect */

/* the active side's attempts with retries, run by the thread before the
 * conn is open (prog_lock not held: no application turn runs yet); the
 * event to report: ESTABLISHED (c->sock and c->tls set, the ACCEPT
 * taken, frames after it left in the receive buffer), REJECTED,
 * UNREACHABLE, CLOSED (a disconnect stopped it) or UNDEFINED (a delete
 * did) */
enum pmrep_conn_event tcp_connect_phase(struct tcp_conn *c);

/* ------------------------------------------- tcp_rx.c: the receive side */

/* take and apply what has arrived, up to a cap (caller holds mem_lock),
 * and persist the batch's flushes before the ACK answering for them can
 * go out; c->rx_more: stopped with work left (a cap, a stall) */
void tcp_rx_progress(struct tcp_conn *c);

/* ------------------------------- tcp_target.c: the target side of ops */

/* what a frame's header leaves the receive side to do */
enum tcp_hdr_result {
	TCP_HDR_GO,	/* go on: its payload (if any), kept or dropped */
	TCP_HDR_STALL,	/* waits for a receive: the header is retried */
	TCP_HDR_GATED,	/* waits for the READ responses to go out */
	TCP_HDR_FULL,	/* a READ waits: TCP_RESP_MAX responses owed */
	TCP_HDR_DEAD,	/* the conn ended */
};

/* a request from the peer (caller holds mem_lock): checked against our
 * regions and started (its payload's destination, a response, an ACK)
 * or refused with a NAK */
enum tcp_hdr_result tcp_on_request(struct tcp_conn *c,
		const struct tcp_frame *f);
/* refuse request `seq` with `status`: the NAK queued behind what is
 * owed, then both sides fail */
void tcp_nak(struct tcp_conn *c, uint32_t seq, enum pmrep_wc_status status);
/* acknowledge every request up to `seq` (held while a persist is
 * pending) */
void tcp_ack(struct tcp_conn *c, uint32_t seq);
/* run the pending persist (tcp_conn.pend), then its ACK; false: it
 * failed (NAKed: the conn is in the error state) */
bool tcp_pend_run(struct tcp_conn *c);
/* may a READ_RESP be unsent still (a later request must wait for it)? */
bool tcp_reads_unsent(struct tcp_conn *c);

/* ------------------------------------------ tcp_tx.c: the transmit side */

/* fill the batch and send what can go without blocking (caller holds
 * mem_lock); c->tx_more: stopped at the cap with the socket still
 * taking bytes, look again soon */
void tcp_tx_progress(struct tcp_conn *c);

/* ------------------------------------------------ tcp_live.c: liveness */

/* a v1 peer's silence with requests in flight that is a loss:
 * TCP_V1_REQUEST_FACTOR x the cfg timeout, at least
 * TCP_REQUEST_TIMEOUT_MIN_MS */
long long tcp_request_period(const struct tcp_conn *c);
/* when the silent peer is lost (-1: no deadline) */
long long tcp_live_deadline(const struct tcp_conn *c);
/* when our heartbeat is due (-1: none) */
long long tcp_heartbeat_deadline(const struct tcp_conn *c);
bool tcp_heartbeat_due(const struct tcp_conn *c, long long now);
/* our input is paused: the silence clock held, or bytes newly queued in
 * the socket counted as life */
void tcp_live_paused(struct tcp_conn *c, long long now);
/* the conn is open: both clocks start */
void tcp_live_start(struct tcp_conn *c);

/* ------------------------------------ tcp_complete.c: outcomes, the end */

/* push the completions gathered so far to the CQs (a CQ that cannot
 * take them sets cq_overrun: the turn ends the conn) */
void tcp_cqes_flush(struct tcp_conn *c);
/* gather a receive's completion */
void tcp_cqe_recv(struct tcp_conn *c, const struct tcp_recv *r,
		enum pmrep_op op, enum pmrep_wc_status st, uint32_t len,
		bool has_imm, uint32_t imm);
/* queue a connection event, after the completions gathered */
void tcp_push_event(struct tcp_conn *c, enum pmrep_conn_event ev);

/* the send queue's tail (what the application posted), read under
 * conn->lock */
uint32_t tcp_sq_tail(struct tcp_conn *c);
/* the request numbered `seq` */
static inline struct tcp_wr *
tcp_sq_wr(struct tcp_conn *c, uint32_t seq)
{
	return &c->sq[seq & c->sq_mask];
}
/* complete, in posting order, every request whose outcome is known */
void tcp_sq_complete(struct tcp_conn *c);

/* complete everything without an outcome: the first request sent with
 * `first`, the rest flushed */
void tcp_flush_all(struct tcp_conn *c, enum pmrep_wc_status first);
/* the error state, as a verbs QP's */
void tcp_enter_error(struct tcp_conn *c, enum pmrep_wc_status first);
/* a request failed on the wire: the error state and one LOST event; the
 * socket stays (what is owed still goes out) */
void tcp_enter_lost(struct tcp_conn *c, const char *why);
/* the end: the socket leaves the conn, everything is flushed, one
 * terminal event `ev` */
void tcp_finish(struct tcp_conn *c, enum pmrep_conn_event ev);
/* the socket ended (EOF: err 0, or errno err) */
void tcp_sock_ended(struct tcp_conn *c, int err);
/* the peer broke the protocol: LOST */
void tcp_protocol_error(struct tcp_conn *c, const char *what);
/* an orderly close: DISCONNECT out, CLOSED on the peer's answer (or,
 * `answering` the peer's, once ours is out), at the cfg timeout at the
 * latest */
void tcp_start_closing(struct tcp_conn *c, bool answering);

#endif /* PMREP_TCP_PROGRESS_H */
