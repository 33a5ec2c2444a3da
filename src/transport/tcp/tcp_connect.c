/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_connect.c -- the active side's connect phase, run by the progress
 * thread before the conn is open (no application turn exists yet): an
 * attempt is a non-blocking TCP connect, the TLS handshake when the cfg
 * has it, our HELLO and the passive side's ACCEPT or REJECT; refused,
 * reset and unanswered attempts are retried with a doubling backoff
 * within the cfg's budget (README.md "Connect"). Every wait also watches
 * the doorbell, so a delete or a disconnect stops it.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "tcp_progress.h"
#include "transport/common.h"

enum wait_result { WAIT_READY, WAIT_TIMEOUT, WAIT_STOP };

/* wait for `events` on fd (fd < 0: only for the deadline) or a stop */
static enum wait_result
wait_fd(struct tcp_conn *c, int fd, short events, long long deadline,
		bool *disconnect)
{
	for (;;) {
		if (tcp_doorbell(c, disconnect) || *disconnect)
			return WAIT_STOP;
		int left = tcp_poll_ms(deadline, pmrep_now_ms());
		if (left == 0)
			return WAIT_TIMEOUT;
		struct pollfd p[2] = {
			{ .fd = c->wake_fd, .events = POLLIN },
			{ .fd = fd, .events = events },
		};
		int r = poll(p, fd >= 0 ? 2 : 1, left);
		if (r > 0 && fd >= 0 && p[1].revents)
			return WAIT_READY;
	}
}

/* ATT_DOWNGRADE: REJECT(version) from a version 1 listener: offer 1 now */
enum attempt { ATT_OK, ATT_RETRY, ATT_REJECTED, ATT_STOP, ATT_DOWNGRADE };

/* one TCP connect + HELLO / ACCEPT exchange, bounded by `end`; *mute:
 * the TCP connection was made but nothing answered by `end` (a listener
 * that hangs, is stopped, or speaks nothing: not the same as refused) */
static enum attempt
connect_attempt(struct tcp_conn *c, long long end, int *why, bool *disc,
		bool *mute)
{
	*mute = false;
	int s = socket(c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
			SOCK_CLOEXEC, 0);
	if (s < 0) {
		*why = errno;
		return ATT_RETRY;
	}
	enum attempt res = ATT_RETRY;
	struct tcp_tls *tls = NULL;	/* TLS on: the socket's session */
	if (connect(s, (struct sockaddr *)&c->addr, c->addrlen) != 0) {
		if (errno != EINPROGRESS) {
			*why = errno;
			goto out_close;
		}
		enum wait_result w = wait_fd(c, s, POLLOUT, end, disc);
		if (w != WAIT_READY) {
			*why = ETIMEDOUT;
			res = w == WAIT_STOP ? ATT_STOP : ATT_RETRY;
			goto out_close;
		}
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			err = errno;
		if (err) {
			*why = err;
			goto out_close;
		}
	}
	tcp_sock_tune(s, c->base.cfg.timeout_ms);
	bool answered = false;	/* any byte back from the listener */

	/* TLS on: the session first, all of pmrep's bytes inside it */
	if (c->base.cfg.tls) {
		int t = tcp_tls_new(&c->base.cfg, s, false, &tls);
		if (t) {
			atomic_store(&c->base.cause, t);
			res = ATT_REJECTED;
			goto out_close;
		}
		tcp_tls_set_cause(tls, &c->base.cause);
		short ev = 0;
		while ((t = tcp_tls_handshake(tls, &ev)) == 0) {
			enum wait_result w = wait_fd(c, s, ev, end, disc);
			if (w != WAIT_READY) {
				*why = ETIMEDOUT;
				/* the server's first flight never came */
				*mute = w != WAIT_STOP && ev == POLLIN &&
					!answered;
				res = w == WAIT_STOP ? ATT_STOP : ATT_RETRY;
				goto out_close;
			}
			answered |= ev == POLLIN;
		}
		if (t < 0) {
			*why = t == PMREP_E_TLS ? EPROTO : ECONNRESET;
			if (t == PMREP_E_TLS)
				res = ATT_REJECTED;	/* final: not a transient */
			goto out_close;
		}
	}

	uint8_t hello[TCP_WIRE_HDR_MAX + TCP_WIRE_HELLO_PDATA_MAX];
	struct tcp_frame f;
	memset(&f, 0, sizeof(f));
	f.type = TCP_WIRE_HELLO;
	f.magic = TCP_WIRE_MAGIC;
	f.version = c->wire_version;
	f.rnr_ms = (uint32_t)c->base.cfg.timeout_ms;
	f.payload_len = c->my_pdata_len;
	size_t n = tcp_wire_encode(&f, hello);
	memcpy(hello + n, c->my_pdata, c->my_pdata_len);
	int r = tls ? tcp_tls_write_all(tls, hello, n + c->my_pdata_len, end) :
		tcp_sock_write_all(s, hello, n + c->my_pdata_len, end);
	if (r) {
		*why = -r;
		goto out_close;
	}

	/* the reply; frames the passive side sends right after ACCEPT stay
	 * in the receive buffer for the main loop */
	c->rx_start = c->rx_end = 0;
	for (;;) {
		int h = tcp_wire_decode(c->rxbuf, c->rx_end, &f);
		if (h == TCP_WIRE_MALFORMED || (h > 0 &&
				f.type != TCP_WIRE_ACCEPT &&
				f.type != TCP_WIRE_REJECT)) {
			*why = EPROTO;
			/* a TLS record (alert 21, handshake 22) to our plaintext */
			if (tls == NULL && (c->rxbuf[0] == 21 || c->rxbuf[0] == 22)) {
				PMREP_LOG_ERR("TLS: the listener speaks TLS and this end is configured without it: refused");
				atomic_store(&c->base.cause, PMREP_E_TLS);
				res = ATT_REJECTED;
				goto out_close;
			}
			PMREP_LOG_WARN("connect: the listener does not speak pmrep tcp");
			goto out_close;
		}
		if (h > 0 && f.type == TCP_WIRE_REJECT) {
			*why = ECONNREFUSED;
			if (f.status == TCP_WIRE_REJ_NOT_LISTENING)
				goto out_close;
			if (f.status == TCP_WIRE_REJ_VERSION &&
					c->wire_version > 1) {
				/* a version 1 listener: offer 1, at once */
				PMREP_LOG_WARN("connect: the passive side speaks tcp wire version 1: connecting with it (it sends no heartbeat: an idle conn to it does not notice its death)");
				c->wire_version = 1;
				res = ATT_DOWNGRADE;
				goto out_close;
			}
			PMREP_LOG_ERR("connect: rejected by the passive side (%s)",
					f.status == TCP_WIRE_REJ_APP ?
					"by the application" :
					f.status == TCP_WIRE_REJ_VERSION ?
					"protocol version" : "malformed HELLO");
			res = ATT_REJECTED;
			goto out_close;
		}
		if (h > 0 && c->rx_end >= (size_t)h + f.payload_len) {
			if (f.version < 1 || f.version > c->wire_version) {
				PMREP_LOG_ERR("connect: accepted with protocol version %u (we offered %u)",
						f.version, c->wire_version);
				res = ATT_REJECTED;
				goto out_close;
			}
			c->wire_version = f.version;
			c->base.pdata_len = (uint8_t)f.payload_len;
			memcpy(c->base.pdata, c->rxbuf + h, f.payload_len);
			c->peer_rnr_ms = f.rnr_ms;
			c->rx_start = (size_t)h + f.payload_len;
			c->sock = s;
			c->tls = tls;
			return ATT_OK;
		}
		ssize_t got = tls ? tcp_tls_recv(tls, c->rxbuf + c->rx_end,
				TCP_RX_BUF_SIZE - c->rx_end) :
			recv(s, c->rxbuf + c->rx_end,
				TCP_RX_BUF_SIZE - c->rx_end, 0);
		if (got > 0) {
			c->rx_end += (size_t)got;
			answered = true;
			continue;
		}
		if (got < 0 && errno == EINTR)
			continue;
		if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
			*why = got == 0 ? ECONNRESET : errno;
			if (got < 0 && errno == EPROTO)
				res = ATT_REJECTED;	/* TLS failed (logged) */
			goto out_close;
		}
		enum wait_result w = wait_fd(c, s, POLLIN, end, disc);
		if (w != WAIT_READY) {
			*why = ETIMEDOUT;
			*mute = w != WAIT_STOP && !answered;
			res = w == WAIT_STOP ? ATT_STOP : ATT_RETRY;
			goto out_close;
		}
	}

out_close:
	tcp_tls_free(tls);
	close(s);
	c->rx_start = c->rx_end = 0;
	return res;
}

/*
 * Connect with retries: refused, reset, unanswered attempts are retried
 * up to cfg.connect_retries more times, waiting retry_backoff_ms doubled
 * each time (capped at 2 s). Each attempt takes at most timeout_ms, and
 * all of them with their backoffs at most timeout_ms * (retries + 1),
 * counted from pmrep_conn_req_connect. Returns the event to report, or
 * UNDEFINED when stopped.
 */
enum pmrep_conn_event
tcp_connect_phase(struct tcp_conn *c)
{
	const struct pmrep_conn_cfg *cfg = &c->base.cfg;
	unsigned left = cfg->connect_retries;
	long long start = c->connect_start;
	long long budget_end = start + (long long)cfg->timeout_ms *
		((long long)left + 1);
	long long backoff = cfg->retry_backoff_ms;
	int why = 0;
	bool disc = false, mute = false;

	for (;;) {
		long long now = pmrep_now_ms();
		long long end = now + cfg->timeout_ms;
		if (end > budget_end)
			end = budget_end;
		switch (connect_attempt(c, end, &why, &disc, &mute)) {
		case ATT_OK:
			return PMREP_CONN_ESTABLISHED;
		case ATT_REJECTED:
			return PMREP_CONN_REJECTED;
		case ATT_STOP:
			return disc ? PMREP_CONN_CLOSED : PMREP_CONN_UNDEFINED;
		case ATT_DOWNGRADE:
			continue;	/* once: wire_version is 1 now */
		case ATT_RETRY:
			break;
		}
		now = pmrep_now_ms();
		if (left == 0 || now >= budget_end)
			break;
		left--;
		long long wake = now + backoff;
		if (wake > budget_end)
			wake = budget_end;
		if (wait_fd(c, -1, 0, wake, &disc) == WAIT_STOP)
			return disc ? PMREP_CONN_CLOSED : PMREP_CONN_UNDEFINED;
		if (pmrep_now_ms() >= budget_end)
			break;
		backoff = backoff * 2 > TCP_BACKOFF_CAP_MS ? TCP_BACKOFF_CAP_MS :
			backoff * 2;
	}
	if (mute) {
		/* the last attempt connected and heard nothing: named, so
		 * that a hung listener does not read as "nobody there" */
		atomic_store(&c->base.cause, PMREP_E_TIMEOUT);
		PMREP_LOG_ERR("connect: connected, but no answer within %d ms (attempt %u, %lld ms in all): the listener accepts connections and does not reply",
				cfg->timeout_ms, cfg->connect_retries - left + 1,
				pmrep_now_ms() - start);
		return PMREP_CONN_UNREACHABLE;
	}
	PMREP_LOG_ERR("connect: unreachable after %u attempt(s) in %lld ms: %s",
			cfg->connect_retries - left + 1, pmrep_now_ms() - start,
			strerror(why));
	return PMREP_CONN_UNREACHABLE;
}
