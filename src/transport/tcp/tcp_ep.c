/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_ep.c -- the tcp endpoint: a listening socket plus the accepted
 * sockets whose HELLO has not fully arrived. Its fd (pmrep_ep_get_fd) is
 * an epoll set of all of them, so it is readable when a request may be
 * complete, and pmrep_ep_next_conn_req never blocks: it accepts what is
 * waiting, reads what has arrived and hands out the first complete HELLO.
 *
 * Sockets that connect and say nothing must not lock real initiators
 * out: a pending socket whose HELLO has not arrived is dropped at the
 * handshake timeout (the cfg timeout, at most TCP_PENDING_EXPIRE_MS),
 * expired ones are dropped before anything new is accepted, and with
 * the table full a socket still waiting for its HELLO makes room for the
 * newcomer (REJECT(not listening), with TLS on a close: a real initiator
 * retries). Proof outranks silence: the victim is a *silent* socket
 * (nothing received, nothing queued in the kernel now) if there is one,
 * else one that sent bytes but proved nothing -- with TLS on, its
 * ClientHello looked at first, so a key holder's accepted in a burst
 * behind it is not dropped unread; a TLS socket whose ClientHello's PSK
 * binder verified and was new here (tcp_tls_proven) and a socket whose
 * first frame is in (for the application) are never evicted. Within a tier,
 * the oldest of the source that holds the most (an IPv4 address, an IPv6
 * /64), so one source evicts its own attempts first. No SSL object is
 * made for a socket before its first bytes are queued: a silent socket
 * costs its fd and its table entry only.
 *
 * The expiry needs no other activity: a timerfd in the epoll set is armed
 * for the earliest deadline of a socket still waiting for its HELLO (with
 * the handshake limit of the application's last look), so the endpoint fd
 * turns readable then, and the application's next look drops it.
 */
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "tcp.h"
#include "transport/common.h"

#define HELLO_HDR 24

struct tcp_pending {
	int fd;
	struct tcp_tls *tls;	/* TLS on: the session (handshake first) */
	bool pollout;		/* the handshake waits to write */
	bool settled;		/* the first frame is decided: for the app */
	bool heard;		/* bytes were queued for it (not silent) */
	size_t got;
	long long since;
	struct sockaddr_storage src;	/* the initiator's address (port ignored) */
	uint8_t buf[HELLO_HDR + TCP_WIRE_HELLO_PDATA_MAX];
};

/* bytes queued in the kernel for fd (0: none, or unknown) */
static int
queued(int fd)
{
	int n = 0;
	return ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

enum tier { TIER_SILENT, TIER_UNPROVEN, TIER_KEEP };

uint64_t
tcp_source_key(const struct sockaddr_storage *a, int *family)
{
	uint64_t k = 0;
	*family = a->ss_family == AF_INET || a->ss_family == AF_INET6 ?
		a->ss_family : 0;
	if (a->ss_family == AF_INET6) {
		const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(x)) {
			/* an IPv4 client of a dual-stack listener: its address */
			*family = AF_INET;
			memcpy(&k, &x->s6_addr[12], 4);
		} else {
			memcpy(&k, x, 8);
		}
	} else if (a->ss_family == AF_INET) {
		memcpy(&k, &((const struct sockaddr_in *)a)->sin_addr, 4);
	}
	return k;
}

struct cand {
	int family;
	uint64_t key;
	long long since;
	unsigned i;
};

static int
cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->since < y->since ? -1 : x->since > y->since;
}

static enum tier
pending_tier(const struct tcp_pending *p)
{
	if (p->settled || (p->tls != NULL && tcp_tls_proven(p->tls)))
		return TIER_KEEP;
	if (p->got == 0 && p->tls == NULL && !p->heard)
		return TIER_SILENT;
	return TIER_UNPROVEN;
}

int
tcp_ep_listen(struct pmrep_peer *peer, const char *addr, const char *port,
		struct pmrep_ep **ep_ptr)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	if (tcp_sock_resolve(addr, port, true, &ss, &sslen))
		return PMREP_E_INVAL;

	int ret = PMREP_E_NOMEM;
	struct tcp_ep *ep = calloc(1, sizeof(*ep));
	if (ep == NULL) {
		PMREP_LOG_ERR("out of memory for an endpoint");
		return ret;
	}
	ep->pending = calloc(TCP_PENDING_MAX, sizeof(*ep->pending));
	if (ep->pending == NULL) {
		PMREP_LOG_ERR("out of memory for an endpoint");
		goto err_free_ep;
	}

	ep->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
			SOCK_CLOEXEC, 0);
	if (ep->lfd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, "socket");
		goto err_free_pending;
	}
	int one = 1;
	(void) setsockopt(ep->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ep->lfd, (struct sockaddr *)&ss, sslen) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "bind");
		goto err_close_lfd;
	}
	/* the kernel's queue first: a long one (net.core.somaxconn caps it),
	 * drained at every look; with net.ipv4.tcp_syncookies (1, Linux's
	 * default) a full SYN queue answers with cookies instead of
	 * dropping a key holder's SYN (a dropped SYN costs ~1 s) */
	if (listen(ep->lfd, TCP_LISTEN_BACKLOG) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "listen");
		goto err_close_lfd;
	}
	sslen = sizeof(ss);
	if (getsockname(ep->lfd, (struct sockaddr *)&ss, &sslen) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "getsockname");
		goto err_close_lfd;
	}
	ep->base.port = ntohs(ss.ss_family == AF_INET6 ?
			((struct sockaddr_in6 *)&ss)->sin6_port :
			((struct sockaddr_in *)&ss)->sin_port);

	ep->base.fd = epoll_create1(EPOLL_CLOEXEC);
	if (ep->base.fd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, "epoll_create1");
		goto err_close_lfd;
	}
	ep->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ep->tfd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, "timerfd_create");
		goto err_close_epfd;
	}
	ep->limit_ms = TCP_PENDING_EXPIRE_MS;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = ep->lfd };
	struct epoll_event tev = { .events = EPOLLIN, .data.fd = ep->tfd };
	if (fcntl(ep->base.fd, F_SETFL, O_NONBLOCK) != 0 ||
			epoll_ctl(ep->base.fd, EPOLL_CTL_ADD, ep->lfd, &ev) != 0 ||
			epoll_ctl(ep->base.fd, EPOLL_CTL_ADD, ep->tfd, &tev) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "epoll_ctl");
		goto err_close_tfd;
	}
	ep->base.peer = peer;
	*ep_ptr = &ep->base;
	return 0;

err_close_tfd:
	close(ep->tfd);
err_close_epfd:
	close(ep->base.fd);
err_close_lfd:
	close(ep->lfd);
err_free_pending:
	free(ep->pending);
err_free_ep:
	free(ep);
	return ret;
}

static void
pending_drop(struct tcp_ep *ep, unsigned i, uint32_t reject_reason)
{
	struct tcp_pending *p = &ep->pending[i];
	if (reject_reason && p->tls)
		tcp_tls_send_now(p->tls, TCP_WIRE_REJECT, reject_reason);
	else if (reject_reason)
		tcp_sock_send_now(p->fd, TCP_WIRE_REJECT, reject_reason);
	tcp_tls_free(p->tls);
	p->tls = NULL;
	(void) epoll_ctl(ep->base.fd, EPOLL_CTL_DEL, p->fd, NULL);
	tcp_sock_close_gently(p->fd);
	ep->pending[i] = ep->pending[--ep->npending];
}

int
tcp_ep_shutdown(struct pmrep_ep *ep_base)
{
	struct tcp_ep *ep = (struct tcp_ep *)ep_base;
	/* requests not taken yet: "not listening", so initiators that retry
	 * find the next listener */
	while (ep->npending > 0)
		pending_drop(ep, ep->npending - 1, TCP_WIRE_REJ_NOT_LISTENING);
	close(ep->tfd);
	close(ep->base.fd);
	close(ep->lfd);
	free(ep->pending);
	free(ep->ch);
	free(ep);
	return 0;
}

enum hello_state { HELLO_MORE, HELLO_GONE, HELLO_BAD, HELLO_VERSION, HELLO_OK };

/* read what has arrived of p's HELLO, never past its end */
static enum hello_state
hello_read(struct tcp_pending *p, struct tcp_frame *f)
{
	if (p->tls && !tcp_tls_done(p->tls))
		return HELLO_MORE;	/* still in its TLS handshake */
	for (;;) {
		size_t want = HELLO_HDR;
		/* the first frame must be a HELLO: decided on its first byte,
		 * before a longer header of another type is waited for */
		if (p->got > 0 && p->buf[0] != TCP_WIRE_HELLO)
			goto bad;
		if (p->got >= HELLO_HDR) {
			if (tcp_wire_decode(p->buf, p->got, f) != HELLO_HDR)
				goto bad;
			want = HELLO_HDR + f->payload_len;
		}
		if (p->got == want) {
			p->settled = true;
			/* every version up to ours: the conn speaks the lower */
			return f->version >= 1 && f->version <= TCP_WIRE_VERSION ?
				HELLO_OK : HELLO_VERSION;
		}
		ssize_t n = p->tls ? tcp_tls_recv(p->tls, p->buf + p->got,
				want - p->got) :
			recv(p->fd, p->buf + p->got, want - p->got, 0);
		if (n > 0) {
			p->got += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return HELLO_MORE;
		return HELLO_GONE;	/* EOF or error: the initiator left */
	}
bad:
	p->settled = true;
	return HELLO_BAD;
}

/*
 * Has the initiator of a pending socket given up (FIN or RST in)? An
 * initiator sends nothing after its HELLO until it has our ACCEPT and
 * never shuts down its sending half while it waits, so an end of its
 * stream (POLLRDHUP, seen behind unread HELLO bytes too) means it
 * closed: a connection attempt abandoned while this side was frozen or
 * busy (its accept queue keeps such attempts). Serving one would cost
 * the application a conn that is lost at once, ahead of the live one.
 */
static bool
pending_gone(const struct tcp_pending *p)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLRDHUP };
	return poll(&pfd, 1, 0) > 0 &&
		(pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* drop every pending socket whose initiator gave up; how many */
static unsigned
pending_reap(struct tcp_ep *ep)
{
	unsigned n = 0;
	for (unsigned i = 0; i < ep->npending; ) {
		if (pending_gone(&ep->pending[i])) {
			pending_drop(ep, i, 0);
			n++;
		} else {
			i++;
		}
	}
	return n;
}

/* how long a socket may wait for its HELLO: the handshake timeout */
static long long
pending_limit_ms(const struct pmrep_conn_cfg *cfg)
{
	return cfg->timeout_ms < TCP_PENDING_EXPIRE_MS ? cfg->timeout_ms :
		TCP_PENDING_EXPIRE_MS;
}

/* drop every socket whose HELLO did not arrive in time */
static void
pending_expire(struct tcp_ep *ep, long long now, long long limit)
{
	for (unsigned i = 0; i < ep->npending; ) {
		struct tcp_pending *p = &ep->pending[i];
		if (!p->settled && now - p->since >= limit)
			pending_drop(ep, i, 0);
		else
			i++;
	}
}

/*
 * Arm the timer for the earliest expiry of a socket still waiting for its
 * HELLO, or disarm it (none). Re-arming also clears a past expiry, so the
 * endpoint fd is readable for the timer only once its deadline passed.
 */
static void
pending_arm(struct tcp_ep *ep, long long now)
{
	long long first = -1;
	for (unsigned i = 0; i < ep->npending; i++) {
		const struct tcp_pending *p = &ep->pending[i];
		if (!p->settled && (first < 0 || p->since < first))
			first = p->since;
	}
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	if (first >= 0) {
		long long left = first + ep->limit_ms - now;
		if (left <= 0)
			its.it_value.tv_nsec = 1;	/* due: fire at once */
		else {
			its.it_value.tv_sec = (time_t)(left / 1000);
			its.it_value.tv_nsec = (long)(left % 1000) * 1000000;
		}
	}
	if (timerfd_settime(ep->tfd, 0, &its, NULL) != 0)
		PMREP_LOG_RATELIMITED(PMREP_LOG_WARNING, "endpoint: timerfd_settime: %s (silent sockets then expire on the next connection attempt only)",
				strerror(errno));
}

static int pending_tls(struct tcp_ep *ep, struct tcp_pending *p,
		const struct pmrep_conn_cfg *cfg);

/*
 * The table is full: make room for a newcomer by dropping a socket still
 * waiting for its HELLO -- a silent one first, else one that proved
 * nothing (see the file's comment), within the tier the oldest of the
 * source that holds the most of the tier (looked at once more first: one
 * that has its HELLO in now, or with TLS on whose ClientHello proves the
 * key now, stays). False when every socket is kept. With TLS on the
 * victim is closed without a frame: a plaintext REJECT would read to a
 * TLS client as a TLS failure (final), a close as a reset (retryable).
 */
static bool
pending_evict(struct tcp_ep *ep, const struct pmrep_conn_cfg *cfg)
{
	for (;;) {
		enum tier tier[TCP_PENDING_MAX];
		enum tier low = TIER_KEEP;
		for (unsigned i = 0; i < ep->npending; i++) {
			tier[i] = pending_tier(&ep->pending[i]);
			if (tier[i] < low)
				low = tier[i];
		}
		if (low == TIER_KEEP)
			return false;
		/* the tier's sockets by source, O(n log n): a flood keeps
		 * the table full, so this runs once per connect it makes */
		struct cand c[TCP_PENDING_MAX];
		unsigned nc = 0;
		for (unsigned i = 0; i < ep->npending; i++)
			if (tier[i] == low) {
				c[nc].key = tcp_source_key(&ep->pending[i].src,
						&c[nc].family);
				c[nc].since = ep->pending[i].since;
				c[nc++].i = i;
			}
		qsort(c, nc, sizeof(c[0]), cand_cmp);
		unsigned oldest = c[0].i, most = 0;
		for (unsigned g = 0; g < nc; ) {
			unsigned e = g;
			while (e < nc && c[e].key == c[g].key &&
					c[e].family == c[g].family)
				e++;
			/* sorted by age within the source: c[g] its oldest */
			if (e - g > most || (e - g == most &&
					c[g].since < ep->pending[oldest].since)) {
				most = e - g;
				oldest = c[g].i;
			}
			g = e;
		}
		/* a silent victim with bytes queued now is heard: the
		 * next one (one ioctl per eviction, not one per socket) */
		if (low == TIER_SILENT && queued(ep->pending[oldest].fd) > 0) {
			ep->pending[oldest].heard = true;
			continue;
		}
		if (cfg->tls) {
			/* its ClientHello, if in, before it goes (never read
			 * as a plaintext HELLO: that would settle it as a
			 * malformed one): a key holder's proves and stays */
			int t = low == TIER_UNPROVEN ?
				pending_tls(ep, &ep->pending[oldest], cfg) : 0;
			if (t == 1 || (t == 0 && pending_tier(&ep->pending[oldest]) == TIER_KEEP))
				continue;
			pending_drop(ep, oldest, 0);
			return true;
		}
		struct tcp_frame f;
		switch (hello_read(&ep->pending[oldest], &f)) {
		case HELLO_MORE:
			pending_drop(ep, oldest, TCP_WIRE_REJ_NOT_LISTENING);
			return true;
		case HELLO_GONE:
			pending_drop(ep, oldest, 0);
			return true;
		default:
			continue;	/* settled now: the next one */
		}
	}
}

/*
 * Accept what is waiting, at most TCP_ACCEPT_BATCH; returns how many idle
 * sockets made room. Bounded: a flood that arrives faster than this end
 * accepts (and looks at the victims) would otherwise keep this loop going
 * and the sockets already in the table -- a key holder's, half through
 * its handshake -- would not get their turn; the listening socket stays
 * readable, so the next look goes on with the queue.
 */
static unsigned
accept_waiting(struct tcp_ep *ep, const struct pmrep_conn_cfg *cfg)
{
	unsigned evicted = 0;
	for (unsigned n = 0; n < TCP_ACCEPT_BATCH; n++) {
		struct sockaddr_storage src;
		socklen_t sl = sizeof(src);
		int fd = accept4(ep->lfd, (struct sockaddr *)&src, &sl,
				SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				PMREP_LOG_WARN("accept4: %s", strerror(errno));
			return evicted;
		}
		/* full: first the attempts whose initiators gave up, then
		 * the oldest silent one */
		if (ep->npending == TCP_PENDING_MAX && pending_reap(ep) == 0 &&
				pending_evict(ep, cfg))
			evicted++;
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
		if (ep->npending == TCP_PENDING_MAX ||
				epoll_ctl(ep->base.fd, EPOLL_CTL_ADD, fd, &ev)) {
			/* every slot holds a request for the application (or
			 * no epoll entry): this one retries */
			PMREP_LOG_RATELIMITED(PMREP_LOG_WARNING, "endpoint: %u requests pending, refusing one",
					ep->npending);
			if (!cfg->tls)	/* a TLS client: a close (see above) */
				tcp_sock_send_now(fd, TCP_WIRE_REJECT,
						TCP_WIRE_REJ_NOT_LISTENING);
			tcp_sock_close_gently(fd);
			continue;
		}
		struct tcp_pending *p = &ep->pending[ep->npending++];
		p->fd = fd;
		p->tls = NULL;
		p->pollout = false;
		p->settled = false;
		p->heard = false;
		p->got = 0;
		p->since = pmrep_now_ms();
		p->src = src;
	}
	return evicted;
}

/*
 * TLS on (cfg): run p's handshake as far as the socket allows. 1: done
 * (or TLS off: go on with the HELLO), 0: not yet (the endpoint fd fires
 * when it may go on: EPOLLOUT added while it waits to write),
 * PMREP_E_TLS: failed (logged; the app hears it), PMREP_E_CONN_LOST: the
 * client left, PMREP_E_NOMEM / PMREP_E_INVAL: no session could be made.
 */
static int
pending_tls(struct tcp_ep *ep, struct tcp_pending *p,
		const struct pmrep_conn_cfg *cfg)
{
	if (p->tls == NULL) {
		if (!cfg->tls || p->got > 0)
			return 1;
		if (!p->heard && queued(p->fd) == 0)
			return 0;	/* nothing to read: no SSL object yet */
		p->heard = true;
		if (ep->ch == NULL && (ep->ch = calloc(1, sizeof(*ep->ch))) == NULL) {
			PMREP_LOG_ERR("out of memory for the endpoint's ClientHello cache");
			return PMREP_E_NOMEM;
		}
		int r = tcp_tls_new(cfg, p->fd, true, &p->tls);
		if (r)
			return r;
		tcp_tls_set_ch_cache(p->tls, ep->ch);
	}
	if (tcp_tls_done(p->tls))
		return 1;
	short ev = POLLIN;
	int r = tcp_tls_handshake(p->tls, &ev);
	bool out = r == 0 && ev == POLLOUT;
	if (out != p->pollout) {
		struct epoll_event e = { .events = EPOLLIN | (out ? EPOLLOUT : 0),
			.data.fd = p->fd };
		(void) epoll_ctl(ep->base.fd, EPOLL_CTL_MOD, p->fd, &e);
		p->pollout = out;
	}
	return r;
}

static int
next_conn_req(struct tcp_ep *ep, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req_ptr)
{
	long long limit = pending_limit_ms(cfg);
	ep->limit_ms = limit;
	/* expired sockets go before newcomers are looked at */
	pending_expire(ep, pmrep_now_ms(), limit);
	unsigned evicted = accept_waiting(ep, cfg);
	if (evicted > 0)
		PMREP_LOG_RATELIMITED(PMREP_LOG_WARNING, "endpoint: pending table full (%u): dropped %u connection(s) that sent no HELLO",
				TCP_PENDING_MAX, evicted);

	/* every socket gets its turn in every look: ending a look at the
	 * first refusal let a flood of failing handshakes keep a key
	 * holder's socket further on in the table from being looked at.
	 * The refusals are counted and handed out one per look after it
	 * (when no request is ready), at most TCP_PENDING_MAX of each kind
	 * waiting: the rest are logged only. */
	for (unsigned i = 0; i < ep->npending; ) {
		struct tcp_pending *p = &ep->pending[i];
		struct tcp_frame f;
		int t = pending_tls(ep, p, cfg);
		if (t == 0) {
			i++;
			continue;
		}
		if (t < 0) {
			pending_drop(ep, i, 0);
			if (t == PMREP_E_NOMEM || t == PMREP_E_INVAL)
				return t;
			if (t == PMREP_E_TLS && ep->refused_tls < TCP_PENDING_MAX)
				ep->refused_tls++;
			continue;
		}
		switch (hello_read(p, &f)) {
		case HELLO_MORE:
			i++;
			continue;
		case HELLO_GONE:
			pending_drop(ep, i, 0);
			continue;
		case HELLO_BAD:
			PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "connection request with a malformed HELLO: rejected");
			pending_drop(ep, i, TCP_WIRE_REJ_MALFORMED);
			if (ep->refused_malformed < TCP_PENDING_MAX)
				ep->refused_malformed++;
			continue;
		case HELLO_VERSION:
			PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "connection request of protocol version %u (this is %u): rejected",
					f.version, TCP_WIRE_VERSION);
			pending_drop(ep, i, TCP_WIRE_REJ_VERSION);
			if (ep->refused_malformed < TCP_PENDING_MAX)
				ep->refused_malformed++;
			continue;
		case HELLO_OK:
			break;
		}
		if (pending_gone(p)) {
			/* abandoned: never handed out before a live one */
			pending_drop(ep, i, 0);
			continue;
		}

		struct tcp_conn_req *req = calloc(1, sizeof(*req));
		if (req == NULL) {
			PMREP_LOG_ERR("out of memory for a connection request");
			return PMREP_E_NOMEM;	/* the HELLO stays for a retry */
		}
		int ret = tcp_conn_req_init(req, ep->base.peer, cfg, true);
		if (ret) {
			free(req);
			return ret;
		}
		req->base.pdata_len = (uint8_t)f.payload_len;
		memcpy(req->base.pdata, p->buf + HELLO_HDR, f.payload_len);
		req->peer_rnr_ms = f.rnr_ms;
		req->peer_version = f.version;
		req->sock = p->fd;
		req->base.src = p->src;	/* from accept4 */
		req->tls = p->tls;
		if (p->tls != NULL)
			tcp_tls_names(p->tls, req->base.tls_identity,
					sizeof(req->base.tls_identity),
					req->base.tls_local,
					sizeof(req->base.tls_local));
		p->tls = NULL;
		(void) epoll_ctl(ep->base.fd, EPOLL_CTL_DEL, p->fd, NULL);
		ep->pending[i] = ep->pending[--ep->npending];
		*req_ptr = &req->base;
		return 0;
	}
	if (ep->refused_malformed > 0) {
		ep->refused_malformed--;
		return PMREP_E_MALFORMED;
	}
	if (ep->refused_tls > 0) {
		ep->refused_tls--;
		return PMREP_E_TLS;
	}
	return PMREP_E_NO_EVENT;
}

int
tcp_ep_next_conn_req(struct pmrep_ep *ep_base, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req_ptr)
{
	struct tcp_ep *ep = (struct tcp_ep *)ep_base;
	int ret = next_conn_req(ep, cfg, req_ptr);
	/* whatever the outcome: the timer for what still waits */
	pending_arm(ep, pmrep_now_ms());
	return ret;
}
