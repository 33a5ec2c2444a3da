/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chan.h -- the message channel both ends of a replication connection
 * use: a registered buffer of receive and send slots, receives kept
 * posted, sends tracked until they complete, and one function that turns
 * the conn's completions into events (a message, a flush done, an error).
 */
#ifndef PMREP_REPL_CHAN_H
#define PMREP_REPL_CHAN_H

#include <stdatomic.h>

#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "msg.h"
#include "tls_psk.h"

/* a conn's own timeout (pmrep_conn_cfg_set_timeout) when its caller has
 * no limit (-1): the transport's liveness period and, on verbs, its ACK
 * timeout and retries follow from it */
#define REPL_CONN_TIMEOUT_DEFAULT_MS 5000

/*
 * message slots per channel: an initiator has at most REPL_GPSPM_CREDITS
 * GPSPM persist requests outstanding plus a few control messages, so a
 * target keeps CHAN_NRECV receives posted and CHAN_NSEND replies in
 * flight (docs/PROTOCOL.md "Message credits")
 */
#define REPL_GPSPM_CREDITS 128
#define CHAN_NRECV (REPL_GPSPM_CREDITS + 4)
#define CHAN_NSEND (REPL_GPSPM_CREDITS + 4)

/* op contexts of the conn's completions */
#define CTX_WRITE	((uintptr_t)1)
#define CTX_FLUSH	((uintptr_t)2)
#define CTX_RECV0	((uintptr_t)0x100)
#define CTX_SEND0	((uintptr_t)0x200)

struct repl_chan {
	struct pmrep_conn *conn;	/* not owned */
	struct pmrep_cq *cq;
	uint8_t *buf;			/* CHAN_NRECV + CHAN_NSEND slots */
	struct pmrep_mr_local *mr;
	bool send_busy[CHAN_NSEND];
	unsigned sends_in_flight;
	bool lost;			/* a terminal conn event was seen */
	long long conn_checked_ms;	/* repl_chan_check_conn_lazy */
	bool conn_due;
	/* not owned, may be NULL: once true, the dial's and the slices'
	 * waits end with PMREP_E_STATE (a mirror's delete ends a recovery
	 * mid-attach without waiting out its timeout) */
	const atomic_bool *cancel;
};

enum repl_chan_ev {
	REPL_CHAN_NONE = 0,	/* nothing (more) now */
	REPL_CHAN_MSG,		/* *msg holds a decoded message */
	REPL_CHAN_FLUSH,	/* a signalled flush completed successfully */
};

/*
 * A peer for `addr` (pmrep_peer_open's is_local). verbs: the verbs
 * provider only, never the tcp fallback -- a peer made again after its
 * RDMA device was removed (T22) waits for the device instead of
 * switching providers; PMREP_E_DEVICE_REMOVED while no RDMA device owns /
 * reaches the address. Else pmrep_peer_open.
 */
int repl_peer_open(const char *addr, bool is_local, bool verbs,
		struct pmrep_peer **peer);
/* is the peer's RDMA device removed (T22)? */
bool repl_peer_removed(const struct pmrep_peer *peer);

/* allocate and register the slots on `peer`. PMREP_E_NOMEM, transport errors */
int repl_chan_init(struct repl_chan *ch, struct pmrep_peer *peer);
void repl_chan_fini(struct repl_chan *ch);
/* post every receive slot on a connection request (before connect / accept) */
int repl_chan_post_recvs(struct repl_chan *ch, struct pmrep_conn_req *req);
/* bind to the conn the request became */
int repl_chan_attach(struct repl_chan *ch, struct pmrep_conn *conn);
/* forget the conn (after it was deleted) */
void repl_chan_detach(struct repl_chan *ch);
/*
 * The initiator's half of connecting to a replica target, shared by the
 * mirror and recover: a conn request of `sq_size` / `cq_size` entries with
 * the channel's receives posted, a HELLO carrying a fresh nonce (kept in
 * nonce_i), ESTABLISHED by `deadline`, the conn's own timeout
 * conn_timeout_ms (the caller's configured timeout, not what is left of
 * the deadline; <= 0: REPL_CONN_TIMEOUT_DEFAULT_MS), and the target's CHALLENGE (its
 * nonce in nonce_t). *conn is set as soon as the connect was issued (the
 * caller deletes it on every path) and attached to `ch`. `tls` (never
 * NULL) names the key, its id and whether the channel runs inside TLS
 * 1.3 on tcp (tls_psk.h). The HELLO names the key id and carries the
 * admission proof made with the key (admission.h) at the wall clock's
 * window now: a target rejects a request without a valid one before
 * anything of a session exists. Every call draws a new nonce (and proof);
 * the transport never retries within a call (its retry would resend this
 * HELLO verbatim: a replay, refused, after a lost ACCEPT).
 * Errors: the transport's; for a terminal event instead of ESTABLISHED
 * (logged with `who`): PMREP_E_TLS (tcp with TLS on: the handshake failed
 * -- a wrong key, a plaintext target, a handshake not meant for this
 * target -- or the target is TLS and we are not), PMREP_E_AUTH (REJECTED
 * otherwise: a pmrep target rejects finally only at admission -- wrong
 * key, unknown key id, clocks apart), PMREP_E_UNREACHABLE (nobody
 * listens, or the target's retryable refusal: no room), PMREP_E_TIMEOUT
 * (the deadline passed; or tcp connected and nothing answered within
 * conn_timeout_ms: a hung or stopped target),
 * PMREP_E_CONN_LOST; PMREP_E_MALFORMED (a bad CHALLENGE), those of
 * repl_admit_proof.
 */
int repl_chan_dial(struct repl_chan *ch, struct pmrep_peer *peer,
		const char *addr, const char *port, long long deadline,
		int conn_timeout_ms, uint32_t sq_size, uint32_t cq_size,
		const char *who, const struct repl_tls *tls,
		struct pmrep_conn **conn, uint8_t nonce_i[REPL_NONCE_SIZE],
		uint8_t nonce_t[REPL_NONCE_SIZE]);
/* encode and send `m` (signalled). PMREP_E_AGAIN: every send slot busy */
int repl_chan_send(struct repl_chan *ch, const struct repl_msg *m);
/*
 * The same, telling which send slot carries it (*slot, on success): the
 * slot is busy until the send's own completion is taken (repl_chan_next),
 * never freed by the peer's answer -- which may be polled first (T26).
 */
int repl_chan_send_at(struct repl_chan *ch, const struct repl_msg *m,
		unsigned *slot);
/* has the send in `slot` (repl_chan_send_at) completed? */
static inline bool
repl_chan_send_done(const struct repl_chan *ch, unsigned slot)
{
	return slot >= CHAN_NSEND || !ch->send_busy[slot];
}
/*
 * take completions until one is an event for the caller: *ev is
 * REPL_CHAN_NONE when the CQ is empty. Errors: PMREP_E_CONN_LOST (an error
 * completion: the connection is unusable; logged with the op and status),
 * PMREP_E_MALFORMED (a message failed to decode), transport errors.
 */
int repl_chan_next(struct repl_chan *ch, enum repl_chan_ev *ev,
		struct repl_msg *msg);
/* the fds to poll for this channel: its CQ's and its conn's event fd */
int repl_chan_fds(const struct repl_chan *ch, int *cq_fd, int *event_fd);
/* after poll said the CQ fd is readable: acknowledge and re-arm */
void repl_chan_ack_cq(struct repl_chan *ch);
/*
 * wait up to timeout_ms for the CQ's next event (taken, re-armed) through
 * the transport's own CQ wait, which may drive the conn in this thread
 * (tcp); conn events are not watched meanwhile (a conn that ends flushes
 * its requests onto the CQ). 0, or PMREP_E_TIMEOUT, or another error.
 */
int repl_chan_wait_cq(struct repl_chan *ch, int timeout_ms);
/*
 * wait for the CQ's next event until `deadline`, at most
 * REPL_WAIT_SLICE_MS (so that the caller looks at its conn's events in
 * between): 0 (an event, or the slice ran out), PMREP_E_TIMEOUT once the
 * deadline passed, or another error. Through the transport's wait only,
 * so the fault-injection harness controls every wait.
 */
#define REPL_WAIT_SLICE_MS 100
/* has ch->cancel been set? */
bool repl_chan_canceled(const struct repl_chan *ch);
int repl_chan_wait_slice(struct repl_chan *ch, long long deadline);
/*
 * wait for the next message until `deadline`: 0 with *msg, or
 * PMREP_E_TIMEOUT, PMREP_E_CONN_LOST (a terminal conn event or an error
 * completion), PMREP_E_MALFORMED (it did not decode), transport errors.
 * Flush completions that arrive meanwhile are dropped.
 */
int repl_chan_wait_msg(struct repl_chan *ch, long long deadline,
		struct repl_msg *msg);
/* the channel's CQ (for pmrep_cq_wait_any over several channels) */
static inline struct pmrep_cq *
repl_chan_cq(const struct repl_chan *ch)
{
	return ch->cq;
}
/*
 * repl_chan_check_conn, but only when it is due: the conn's event fd was
 * seen readable (repl_chan_conn_due), a wait ran out, or
 * REPL_CONN_CHECK_MS passed since the last look. For the data path: a
 * conn that ends also fails its requests on the CQ, so the persist that
 * waits learns it from its completion; the events need not be read (three
 * system calls on verbs) on every step.
 */
#define REPL_CONN_CHECK_MS 100
int repl_chan_check_conn_lazy(struct repl_chan *ch);
void repl_chan_conn_due(struct repl_chan *ch);
/*
 * after poll said the event fd is readable: read conn events;
 * PMREP_E_CONN_LOST when a terminal one came, else 0.
 */
int repl_chan_check_conn(struct repl_chan *ch);

/*
 * a port given as text: decimal digits only, 0..65535, and not 0 unless
 * `allow_zero` (a listener's "any free port"). PMREP_E_INVAL (logged)
 * otherwise, so that "70000" does not silently become port 4464.
 */
int repl_port_check(const char *port, bool allow_zero);

/* a wait limit: -1 (none) or >= 0 ms; PMREP_E_INVAL (logged) otherwise */
int repl_timeout_check(int timeout_ms, const char *what);

/* CLOCK_MONOTONIC in ms, and the ms left until `deadline` (-1: none) */
long long repl_now_ms(void);
int repl_left_ms(long long deadline);
long long repl_deadline(int timeout_ms);

#endif /* PMREP_REPL_CHAN_H */
