/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chan.c -- the message channel of a replication connection (see chan.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "auth.h"
#include "admission.h"
#include "chan.h"

#define NSLOTS (CHAN_NRECV + CHAN_NSEND)

int
repl_port_check(const char *port, bool allow_zero)
{
	unsigned long v = 0;
	size_t n = 0;
	if (port != NULL) {
		for (; port[n] >= '0' && port[n] <= '9' && n < 6; n++)
			v = v * 10 + (unsigned long)(port[n] - '0');
	}
	if (port == NULL || n == 0 || port[n] != '\0' || v > 65535 ||
			(v == 0 && !allow_zero)) {
		PMREP_LOG_ERR("invalid port \"%s\": must be a decimal number %s..65535",
				port ? port : "(null)", allow_zero ? "0" : "1");
		return PMREP_E_INVAL;
	}
	return 0;
}

int
repl_timeout_check(int timeout_ms, const char *what)
{
	if (timeout_ms < -1) {
		PMREP_LOG_ERR("%s: timeout %d ms: must be -1 (no limit) or >= 0",
				what, timeout_ms);
		return PMREP_E_INVAL;
	}
	return 0;
}

long long pmrep_now_ms(void);	/* common/clock.c */

long long
repl_now_ms(void)
{
	return pmrep_now_ms();
}

long long
repl_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : repl_now_ms() + timeout_ms;
}

int
repl_left_ms(long long deadline)
{
	if (deadline < 0)
		return -1;
	long long d = deadline - repl_now_ms();
	return d <= 0 ? 0 : (d > 1000000000 ? 1000000000 : (int)d);
}

int
repl_peer_open(const char *addr, bool is_local, bool verbs,
		struct pmrep_peer **peer)
{
	if (!verbs)
		return pmrep_peer_open(addr, is_local, peer);
	int ret = pmrep_peer_open_verbs(addr, is_local, peer);
	if (ret == PMREP_E_NOSUPP) {
		PMREP_LOG_INFO("no RDMA device %s %s (yet): waiting for it",
				is_local ? "owns" : "reaches", addr);
		return PMREP_E_DEVICE_REMOVED;
	}
	return ret;
}

bool
repl_peer_removed(const struct pmrep_peer *peer)
{
	bool removed = false;
	return peer != NULL &&
		pmrep_peer_get_device_removed(peer, &removed) == 0 && removed;
}

int
repl_chan_init(struct repl_chan *ch, struct pmrep_peer *peer)
{
	memset(ch, 0, sizeof(*ch));
	ch->buf = calloc(NSLOTS, REPL_MSG_SLOT);
	if (ch->buf == NULL) {
		PMREP_LOG_ERR("out of memory for message slots");
		return PMREP_E_NOMEM;
	}
	int ret = pmrep_mr_reg(peer, ch->buf, NSLOTS * REPL_MSG_SLOT,
			PMREP_MR_USAGE_SEND | PMREP_MR_USAGE_RECV, &ch->mr);
	if (ret) {
		free(ch->buf);
		ch->buf = NULL;
	}
	return ret;
}

void
repl_chan_fini(struct repl_chan *ch)
{
	(void) pmrep_mr_dereg(&ch->mr);
	free(ch->buf);
	ch->buf = NULL;
}

int
repl_chan_post_recvs(struct repl_chan *ch, struct pmrep_conn_req *req)
{
	for (uintptr_t i = 0; i < CHAN_NRECV; i++) {
		int ret = pmrep_conn_req_recv(req, ch->mr, i * REPL_MSG_SLOT,
				REPL_MSG_SLOT, (void *)(CTX_RECV0 + i));
		if (ret)
			return ret;
	}
	return 0;
}

int
repl_chan_attach(struct repl_chan *ch, struct pmrep_conn *conn)
{
	ch->conn = conn;
	memset(ch->send_busy, 0, sizeof(ch->send_busy));
	ch->sends_in_flight = 0;
	ch->lost = false;
	return pmrep_conn_get_cq(conn, &ch->cq);
}

void
repl_chan_detach(struct repl_chan *ch)
{
	ch->conn = NULL;
	ch->cq = NULL;
	memset(ch->send_busy, 0, sizeof(ch->send_busy));
	ch->sends_in_flight = 0;
}

int
repl_chan_send(struct repl_chan *ch, const struct repl_msg *m)
{
	unsigned slot;
	return repl_chan_send_at(ch, m, &slot);
}

int
repl_chan_send_at(struct repl_chan *ch, const struct repl_msg *m,
		unsigned *slot)
{
	unsigned i;
	for (i = 0; i < CHAN_NSEND; i++)
		if (!ch->send_busy[i])
			break;
	if (i == CHAN_NSEND) {
		PMREP_LOG_ERR("every message send slot is in flight");
		return PMREP_E_AGAIN;
	}
	size_t off = (size_t)(CHAN_NRECV + i) * REPL_MSG_SLOT;
	size_t len = repl_msg_encode(m, ch->buf + off);
	int ret = pmrep_send(ch->conn, ch->mr, off, len,
			PMREP_F_COMPLETION_ALWAYS, (void *)(CTX_SEND0 + i));
	if (ret)
		return ret;
	ch->send_busy[i] = true;
	ch->sends_in_flight++;
	*slot = i;
	return 0;
}

int
repl_chan_next(struct repl_chan *ch, enum repl_chan_ev *ev, struct repl_msg *msg)
{
	*ev = REPL_CHAN_NONE;
	for (;;) {
		struct pmrep_completion c;
		int n = 0;
		int ret = pmrep_cq_get_completions(ch->cq, &c, 1, &n);
		if (ret == PMREP_E_NO_COMPLETION || (ret == 0 && n == 0))
			return 0;
		if (ret)
			return ret;
		uintptr_t ctx = (uintptr_t)c.op_context;
		if (c.status != PMREP_WC_SUCCESS) {
			const char *what = ctx == CTX_WRITE ? "write" :
				ctx == CTX_FLUSH ? "flush" :
				ctx >= CTX_SEND0 ? "send" :
				ctx >= CTX_RECV0 ? "receive" : "operation";
			/* flushed: the QP went to error because the
			 * connection ended (the peer's disconnect, ours):
			 * the conn event says why, this is no news */
			if (c.status == PMREP_WC_FLUSHED)
				PMREP_LOG_INFO("%s flushed: the connection is going down",
						what);
			else
				PMREP_LOG_ERR("%s completed with error status %d (%s, provider status %u): the connection is unusable",
						what, (int)c.status,
						pmrep_wc_status_str(c.status), c.provider_status);
			return PMREP_E_CONN_LOST;
		}
		if (ctx >= CTX_SEND0 && ctx < CTX_SEND0 + CHAN_NSEND) {
			unsigned i = (unsigned)(ctx - CTX_SEND0);
			if (ch->send_busy[i]) {
				ch->send_busy[i] = false;
				ch->sends_in_flight--;
			}
			continue;
		}
		if (ctx >= CTX_RECV0 && ctx < CTX_RECV0 + CHAN_NRECV) {
			size_t off = (size_t)(ctx - CTX_RECV0) * REPL_MSG_SLOT;
			ret = repl_msg_decode(ch->buf + off,
					c.byte_len > REPL_MSG_SLOT ? REPL_MSG_SLOT : c.byte_len,
					msg);
			int r2 = pmrep_recv(ch->conn, ch->mr, off, REPL_MSG_SLOT,
					(void *)ctx);
			if (ret)
				return ret;
			if (r2)
				return r2;
			*ev = REPL_CHAN_MSG;
			return 0;
		}
		if (ctx == CTX_FLUSH) {
			*ev = REPL_CHAN_FLUSH;
			return 0;
		}
		/* a signalled write: nothing to do */
	}
}

int
repl_chan_fds(const struct repl_chan *ch, int *cq_fd, int *event_fd)
{
	int ret = pmrep_cq_get_fd(ch->cq, cq_fd);
	if (ret)
		return ret;
	return pmrep_conn_get_event_fd(ch->conn, event_fd);
}

void
repl_chan_ack_cq(struct repl_chan *ch)
{
	/* 0 ms: consume the event the poll saw and re-arm; TIMEOUT (a
	 * spurious wakeup) is fine */
	(void) pmrep_cq_wait(ch->cq, 0);
}

int
repl_chan_wait_cq(struct repl_chan *ch, int timeout_ms)
{
	return pmrep_cq_wait(ch->cq, timeout_ms);
}

bool
repl_chan_canceled(const struct repl_chan *ch)
{
	return ch->cancel != NULL && atomic_load(ch->cancel);
}

int
repl_chan_wait_slice(struct repl_chan *ch, long long deadline)
{
	if (repl_chan_canceled(ch))
		return PMREP_E_STATE;
	int left = repl_left_ms(deadline);
	if (left == 0)
		return PMREP_E_TIMEOUT;
	if (left < 0 || left > REPL_WAIT_SLICE_MS)
		left = REPL_WAIT_SLICE_MS;
	int ret = repl_chan_wait_cq(ch, left);
	return ret == PMREP_E_TIMEOUT ? 0 : ret;
}

int
repl_chan_wait_msg(struct repl_chan *ch, long long deadline,
		struct repl_msg *msg)
{
	for (;;) {
		enum repl_chan_ev ev;
		int ret = repl_chan_next(ch, &ev, msg);
		if (ret)
			return ret;
		if (ev == REPL_CHAN_MSG)
			return 0;
		if (ev != REPL_CHAN_NONE)
			continue;	/* a flush completion: not waited for */
		ret = repl_chan_check_conn(ch);
		if (ret)
			return ret;
		ret = repl_chan_wait_slice(ch, deadline);
		if (ret)
			return ret;
	}
}

void
repl_chan_conn_due(struct repl_chan *ch)
{
	ch->conn_due = true;
}

int
repl_chan_check_conn_lazy(struct repl_chan *ch)
{
	if (ch->lost)
		return PMREP_E_CONN_LOST;
	long long now = repl_now_ms();
	if (!ch->conn_due && now - ch->conn_checked_ms < REPL_CONN_CHECK_MS)
		return 0;
	ch->conn_due = false;
	ch->conn_checked_ms = now;
	return repl_chan_check_conn(ch);
}

int
repl_chan_check_conn(struct repl_chan *ch)
{
	if (ch->lost)
		return PMREP_E_CONN_LOST;
	for (;;) {
		enum pmrep_conn_event ev;
		int ret = pmrep_conn_next_event(ch->conn, &ev);
		if (ret == PMREP_E_NO_EVENT)
			return 0;
		if (ret)
			return ret;
		if (ev != PMREP_CONN_ESTABLISHED) {
			/* an orderly end is the caller's news to judge (a
			 * mirror failing a replica says so itself) */
			if (ev == PMREP_CONN_CLOSED)
				PMREP_LOG_INFO("connection %s",
						pmrep_conn_event_str(ev));
			else
				PMREP_LOG_ERR("connection %s",
						pmrep_conn_event_str(ev));
			ch->lost = true;
			return PMREP_E_CONN_LOST;
		}
	}
}

int
repl_chan_dial(struct repl_chan *ch, struct pmrep_peer *peer,
		const char *addr, const char *port, long long deadline,
		int conn_timeout_ms, uint32_t sq_size, uint32_t cq_size,
		const char *who, const struct repl_tls *tls,
		struct pmrep_conn **conn, uint8_t nonce_i[REPL_NONCE_SIZE],
		uint8_t nonce_t[REPL_NONCE_SIZE])
{
	const long long dial_start = repl_now_ms();
	struct pmrep_conn_cfg *ccfg = NULL;
	struct pmrep_conn_req *req = NULL;
	int ret = pmrep_conn_cfg_new(&ccfg);
	if (ret)
		return ret;
	/* the conn's own timeout (its liveness period; on verbs its ACK
	 * timeout and retries) is the caller's configured one, never what
	 * is left of this dial's deadline: a dial late in a step would
	 * make a conn that declares a live peer dead after a few ms */
	(void) pmrep_conn_cfg_set_timeout(ccfg, conn_timeout_ms > 0 ?
			conn_timeout_ms : REPL_CONN_TIMEOUT_DEFAULT_MS);
	(void) pmrep_conn_cfg_set_sq_size(ccfg, sq_size);
	(void) pmrep_conn_cfg_set_rq_size(ccfg, CHAN_NRECV);
	(void) pmrep_conn_cfg_set_cq_size(ccfg, cq_size);
	/* no transport retries, ever: a retry resends this HELLO verbatim,
	 * and after a lost ACCEPT the target's replay cache refuses its
	 * nonce (PMREP_E_AUTH) -- every retry is a new dial here, with a
	 * fresh nonce and proof (test_repl_keys: a lost ACCEPT) */
	(void) pmrep_conn_cfg_set_connect_retries(ccfg, 0, 100);
	ret = repl_tls_client_cfg(ccfg, peer, tls, addr, port);
	if (ret)
		goto out;

	ret = pmrep_conn_req_new(peer, addr, port, ccfg, &req);
	if (ret)
		goto out;
	ret = repl_chan_post_recvs(ch, req);
	if (ret)
		goto out;
	ret = repl_random(nonce_i, REPL_NONCE_SIZE);
	if (ret)
		goto out;
	/* our key's id, the selector (empty: the target's one replica),
	 * and the admission proof: we hold the key, now */
	const uint32_t key_id = tls->key_id;
	struct repl_pdata hello = { .type = REPL_PDATA_HELLO, .key_id = key_id };
	if (tls->selector != NULL)
		snprintf(hello.selector, sizeof(hello.selector), "%s",
				tls->selector);
	memcpy(hello.nonce, nonce_i, REPL_NONCE_SIZE);
	ret = repl_admit_proof(tls->key, tls->key_len,
			repl_admit_window(repl_wall_ms()), key_id, nonce_i,
			hello.selector, hello.proof);
	if (ret)
		goto out;
	uint8_t enc[REPL_PDATA_SIZE];
	struct pmrep_conn_private_data pd = { enc,
		(uint8_t)repl_pdata_encode(&hello, enc) };
	ret = pmrep_conn_req_connect(&req, &pd, conn);
	if (ret)
		goto out;
	(void) repl_chan_attach(ch, *conn);

	enum pmrep_conn_event ev;
	/* in slices, so that a cancel ends it */
	for (;;) {
		int left = repl_left_ms(deadline);
		int slice = left < 0 || left > REPL_WAIT_SLICE_MS ?
			REPL_WAIT_SLICE_MS : (left ? left : 1);
		ret = pmrep_conn_wait_event(*conn, slice, &ev);
		if (ret != PMREP_E_TIMEOUT || (left >= 0 && left <= slice))
			break;
		if (repl_chan_canceled(ch)) {
			ret = PMREP_E_STATE;
			PMREP_LOG_INFO("%s (%s:%s): connection attempt ended: the mirror is closing",
					who, addr, port);
			break;
		}
	}
	if (ret == PMREP_E_TIMEOUT)
		/* a refused connect ends at once (UNREACHABLE, below):
		 * what is still silent at the deadline was taken and not
		 * answered, or went nowhere */
		PMREP_LOG_ERR("%s (%s:%s): no answer to the connection request within %lld ms (is the pmrep-target there hung or stopped? nobody listening would have refused it at once)",
				who, addr, port, repl_now_ms() - dial_start);
	if (ret)
		goto out;
	int cause = 0;
	if (ev != PMREP_CONN_ESTABLISHED)
		(void) pmrep_conn_get_failure(*conn, &cause);
	if (ev == PMREP_CONN_REJECTED && cause == 0) {
		/* a pmrep target rejects a connection request finally only
		 * at admission: the proof of our key did not verify (a
		 * retryable refusal -- no room -- is UNREACHABLE: the
		 * caller's next dial carries a fresh nonce) */
		ch->lost = true;
		ret = PMREP_E_AUTH;
		PMREP_LOG_ERR("%s (%s:%s): authentication failed (wrong key) at admission: the target rejected the connection request (a wrong key, a key id %u it does not hold, clocks more than %d s apart, or not a pmrep target of protocol version %d)",
				who, addr, port, key_id, REPL_ADMIT_WINDOW_S,
				REPL_PROTO_VERSION);
		goto out;
	}
	if (ev == PMREP_CONN_UNREACHABLE && cause == PMREP_E_TIMEOUT) {
		/* TCP connected, no answer: a hung or stopped target (or
		 * another service on the port), not "nobody listens" */
		ch->lost = true;
		ret = PMREP_E_TIMEOUT;
		PMREP_LOG_ERR("%s (%s:%s): connected, but no answer within %d ms (is the pmrep-target there hung or stopped, or is another service on that port?)",
				who, addr, port, conn_timeout_ms > 0 ?
				conn_timeout_ms : REPL_CONN_TIMEOUT_DEFAULT_MS);
		goto out;
	}
	if (ev != PMREP_CONN_ESTABLISHED) {
		ch->lost = true;
		ret = ev == PMREP_CONN_UNREACHABLE ? PMREP_E_UNREACHABLE :
			PMREP_E_CONN_LOST;
		if (cause)
			ret = cause;	/* PMREP_E_TLS: named, logged */
		PMREP_LOG_ERR("%s (%s:%s): connection %s%s", who, addr, port,
				pmrep_conn_event_str(ev),
				ev == PMREP_CONN_UNREACHABLE ?
				" (is a pmrep-target listening there?)" : "");
		goto out;
	}
	struct pmrep_conn_private_data in;
	struct repl_pdata chal;
	(void) pmrep_conn_get_private_data(*conn, &in);
	ret = repl_pdata_decode(in.ptr, in.len, REPL_PDATA_CHALLENGE, &chal);
	if (ret == 0)
		memcpy(nonce_t, chal.nonce, REPL_NONCE_SIZE);
out:
	if (req)
		(void) pmrep_conn_req_delete(&req);
	(void) pmrep_conn_cfg_delete(&ccfg);
	return ret;
}
