/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_cq.c -- completion queues and completion channels of the tcp
 * provider, with verbs' notification model: a CQ is armed; its first
 * completion after arming puts one event on its channel (an eventfd) and
 * disarms it; taking the event (cq_wait / conn_wait / comp_channel_wait)
 * re-arms it. The channel's fd is readable exactly while it holds an
 * event not yet taken, so an epoll loop that takes events until none is
 * left and then polls the CQ empty never spins and never loses a wakeup.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "tcp.h"
#include "transport/common.h"

int
tcp_eventfd(void)
{
	return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void
tcp_eventfd_signal(int fd)
{
	uint64_t one = 1;
	/* only EAGAIN (counter saturated) can fail: still readable then */
	ssize_t r = write(fd, &one, sizeof(one));
	(void) r;
}

void
tcp_eventfd_drain(int fd)
{
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v));
	(void) r;
}

/* the channel's fd is readable exactly while signaled (ch->lock held) */
static void
chan_signal_locked(struct tcp_chan *ch)
{
	if (!ch->signaled) {
		ch->signaled = true;
		tcp_eventfd_signal(ch->fd);
	}
}

static void
chan_drain_locked(struct tcp_chan *ch)
{
	if (ch->signaled) {
		ch->signaled = false;
		tcp_eventfd_drain(ch->fd);
	}
}

int
tcp_chan_init(struct tcp_chan *ch)
{
	ch->fd = tcp_eventfd();
	if (ch->fd < 0)
		return PMREP_ERR_PROVIDER(errno, "eventfd");
	pthread_mutex_init(&ch->lock, NULL);
	ch->signaled = false;
	ch->fired = ch->fired_tail = NULL;
	return 0;
}

void
tcp_chan_fini(struct tcp_chan *ch)
{
	pthread_mutex_destroy(&ch->lock);
	close(ch->fd);
}

/* take the oldest fired CQ off the channel and re-arm it (ch->lock held) */
static struct tcp_cq *
chan_take_locked(struct tcp_chan *ch)
{
	struct tcp_cq *c = ch->fired;
	if (c != NULL) {
		ch->fired = c->fired_next;
		if (ch->fired == NULL)
			ch->fired_tail = NULL;
		c->fired_next = NULL;
		c->fired = false;
		c->armed = true;
	}
	if (ch->fired == NULL)
		chan_drain_locked(ch);
	return c;
}

int
tcp_chan_wait(struct tcp_chan *ch, int timeout_ms, struct tcp_cq **cq)
{
	long long deadline = timeout_ms < 0 ? -1 : pmrep_now_ms() + timeout_ms;
	for (;;) {
		pthread_mutex_lock(&ch->lock);
		struct tcp_cq *c = chan_take_locked(ch);
		pthread_mutex_unlock(&ch->lock);
		if (c != NULL) {
			*cq = c;
			return 0;
		}
		if (timeout_ms == 0)
			return PMREP_E_NO_COMPLETION;
		int left = tcp_poll_ms(deadline, pmrep_now_ms());
		if (left == 0)
			return PMREP_E_TIMEOUT;
		int ret = pmrep_fd_wait_readable(ch->fd, left);
		if (ret)
			return ret;
	}
}

int
tcp_cq_new(struct pmrep_peer *peer, struct pmrep_conn *conn, bool is_rcq,
		uint32_t size, struct tcp_chan *shared, struct tcp_cq **cq_ptr)
{
	struct tcp_cq *cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		goto err_nomem;
	cq->cap = size ? size : 1;
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	if (cq->ring == NULL)
		goto err_free;
	if (shared == NULL) {
		int ret = tcp_chan_init(&cq->own_chan);
		if (ret) {
			free(cq->ring);
			free(cq);
			return ret;
		}
		cq->chan = &cq->own_chan;
	} else {
		cq->chan = shared;
	}
	pthread_mutex_init(&cq->lock, NULL);
	cq->armed = true;
	cq->base.peer = peer;
	cq->base.conn = conn;
	cq->base.is_rcq = is_rcq;
	cq->base.shared_channel = shared != NULL;
	cq->base.fd = cq->chan->fd;
	*cq_ptr = cq;
	return 0;

err_free:
	free(cq);
err_nomem:
	PMREP_LOG_ERR("out of memory for a completion queue");
	return PMREP_E_NOMEM;
}

void
tcp_cq_delete(struct tcp_cq *cq)
{
	if (cq == NULL)
		return;
	struct tcp_chan *ch = cq->chan;
	pthread_mutex_lock(&ch->lock);
	if (cq->fired) {
		struct tcp_cq **pp = &ch->fired, *prev = NULL;
		while (*pp != cq) {
			prev = *pp;
			pp = &(*pp)->fired_next;
		}
		*pp = cq->fired_next;
		if (ch->fired_tail == cq)
			ch->fired_tail = prev;
		if (ch->fired == NULL)
			chan_drain_locked(ch);
	}
	pthread_mutex_unlock(&ch->lock);
	if (ch == &cq->own_chan)
		tcp_chan_fini(ch);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
}

bool
tcp_cq_push(struct tcp_cq *cq, const struct pmrep_completion *c, int n)
{
	pthread_mutex_lock(&cq->lock);
	if (cq->count + (uint32_t)n > cq->cap) {
		uint32_t cap = cq->cap;
		while (cq->count + (uint32_t)n > cap)
			cap *= 2;
		struct pmrep_completion *r = malloc(cap * sizeof(*r));
		if (r == NULL) {
			pthread_mutex_unlock(&cq->lock);
			return false;
		}
		for (uint32_t i = 0; i < cq->count; i++)
			r[i] = cq->ring[(cq->head + i) % cq->cap];
		free(cq->ring);
		cq->ring = r;
		cq->cap = cap;
		cq->head = 0;
	}
	for (int i = 0; i < n; i++)
		cq->ring[(cq->head + cq->count++) % cq->cap] = c[i];
	pthread_mutex_unlock(&cq->lock);

	struct tcp_chan *ch = cq->chan;
	pthread_mutex_lock(&ch->lock);
	if (cq->armed) {
		cq->armed = false;
		cq->fired = true;
		if (ch->fired_tail)
			ch->fired_tail->fired_next = cq;
		else
			ch->fired = cq;
		ch->fired_tail = cq;
		if (!cq->quiet)
			chan_signal_locked(ch);
	}
	pthread_mutex_unlock(&ch->lock);
	return true;
}

/* the conn whose progress this CQ's wait may drive (fast path): a conn's
 * CQ on its own channel; NULL for an SRQ's CQ or a shared channel */
static struct tcp_conn *
fast_conn(const struct tcp_cq *cq)
{
	if (cq->base.conn == NULL || cq->chan != &cq->own_chan)
		return NULL;
	return tcp_conn(cq->base.conn);
}

/* take the CQ's event if it fired (own channel); true: taken, re-armed */
static bool
take_own_event(struct tcp_cq *cq)
{
	pthread_mutex_lock(&cq->chan->lock);
	bool fired = cq->fired;
	if (fired)
		(void) chan_take_locked(cq->chan);
	pthread_mutex_unlock(&cq->chan->lock);
	return fired;
}

void
tcp_cq_quiet_begin(struct tcp_cq *cq)
{
	pthread_mutex_lock(&cq->chan->lock);
	cq->quiet = true;
	pthread_mutex_unlock(&cq->chan->lock);
}

bool
tcp_cq_quiet_end(struct tcp_cq *cq)
{
	pthread_mutex_lock(&cq->chan->lock);
	cq->quiet = false;
	bool fired = cq->fired;
	if (fired)	/* own channel: this CQ is all it holds */
		(void) chan_take_locked(cq->chan);
	pthread_mutex_unlock(&cq->chan->lock);
	return fired;
}

/*
 * The fast wait: run the conn's progress in this thread while no other
 * thread does, and sleep on the CQ's channel and the conn's socket at
 * once, so a completion arriving on the socket costs no hand-off from
 * the progress thread. Whoever runs the turn, the event lands on the
 * channel; this returns when it is there.
 */
static int
cq_wait_fast(struct tcp_cq *cq, struct tcp_conn *c, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? -1 : pmrep_now_ms() + timeout_ms;
	/* the first turn only sends and looks at the clock: right after a
	 * post the answer cannot be in yet, a recv would only say EAGAIN --
	 * unless this is the only turn (timeout 0): a thread that polls with
	 * 0 in a loop must receive, or it would hold the turn against the
	 * progress thread without ever taking the answers in */
	bool readable = timeout_ms == 0;
	for (;;) {
		if (take_own_event(cq))
			return 0;
		int sock = -1;
		short events = 0;
		bool taken = false;
		if (tcp_fast_turn(c, true, readable, &sock, &events, cq,
				&taken) && taken)
			return 0;
		readable = true;
		int left = tcp_poll_ms(deadline, pmrep_now_ms());
		if (left == 0)
			return PMREP_E_TIMEOUT;
		struct pollfd p[2] = {
			{ .fd = cq->chan->fd, .events = POLLIN },
			{ .fd = sock, .events = events },
		};
		/* while this thread sleeps on the socket, the progress
		 * thread need not (see tcp_conn.app_waiters) */
		bool on_sock = sock >= 0 && events;
		if (on_sock)
			atomic_fetch_add(&c->app_waiters, 1);
		int n = poll(p, on_sock ? 2 : 1, left);
		int err = errno;
		if (on_sock)
			atomic_fetch_sub(&c->app_waiters, 1);
		if (n < 0 && err != EINTR)
			return PMREP_ERR_PROVIDER(err, "poll");
	}
}

/*
 * The fast wait over several CQs (pmrep_cq_wait_any): one turn per conn,
 * then one poll over every channel and every socket whose turn this
 * thread could run; whatever fired is taken.
 */
int
tcp_cq_wait_any(struct pmrep_cq *const *cqs, int n, int timeout_ms)
{
	struct tcp_cq *q[PMREP_CQ_WAIT_ANY_MAX];
	for (int i = 0; i < n; i++) {
		q[i] = (struct tcp_cq *)cqs[i];
		if (q[i]->base.conn != NULL)
			tcp_conn_release_held(tcp_conn(q[i]->base.conn));
	}
	long long deadline = timeout_ms < 0 ? -1 : pmrep_now_ms() + timeout_ms;
	bool readable = timeout_ms == 0;	/* as in cq_wait_fast */
	for (;;) {
		bool got = false;
		for (int i = 0; i < n; i++)
			got |= take_own_event(q[i]);
		if (got)
			return 0;
		struct pollfd p[2 * PMREP_CQ_WAIT_ANY_MAX];
		struct tcp_conn *on_sock[PMREP_CQ_WAIT_ANY_MAX];
		int np = 0, ns = 0;
		for (int i = 0; i < n; i++) {
			p[np++] = (struct pollfd){ .fd = q[i]->chan->fd,
				.events = POLLIN };
			struct tcp_conn *c = fast_conn(q[i]);
			bool seen = false;	/* a conn's CQ and RCQ: one turn */
			for (int k = 0; k < i && c != NULL; k++)
				seen |= fast_conn(q[k]) == c;
			if (c == NULL || seen)
				continue;
			int sock = -1;
			short events = 0;
			bool taken = false;
			if (tcp_fast_turn(c, true, readable, &sock, &events, q[i],
					&taken)) {
				got |= taken;
				if (sock >= 0 && events) {
					p[np++] = (struct pollfd){ .fd = sock,
						.events = events };
					on_sock[ns++] = c;
				}
			}
		}
		if (got)
			return 0;
		readable = true;
		int left = tcp_poll_ms(deadline, pmrep_now_ms());
		if (left == 0)
			return PMREP_E_TIMEOUT;
		for (int k = 0; k < ns; k++)
			atomic_fetch_add(&on_sock[k]->app_waiters, 1);
		int r = poll(p, (nfds_t)np, left);
		int err = errno;
		for (int k = 0; k < ns; k++)
			atomic_fetch_sub(&on_sock[k]->app_waiters, 1);
		if (r < 0 && err != EINTR)
			return PMREP_ERR_PROVIDER(err, "poll");
	}
}

int
tcp_cq_wait(struct pmrep_cq *cq_base, int timeout_ms)
{
	struct tcp_cq *cq = (struct tcp_cq *)cq_base;
	if (cq->base.conn != NULL)
		tcp_conn_release_held(tcp_conn(cq->base.conn));
	struct tcp_conn *c = fast_conn(cq);
	if (c != NULL)
		return cq_wait_fast(cq, c, timeout_ms);
	int ret = pmrep_fd_wait_readable(cq->chan->fd, timeout_ms);
	if (ret)
		return ret;
	pthread_mutex_lock(&cq->chan->lock);
	/* the own channel holds at most this CQ; a wakeup that finds it
	 * already taken (or the CQ empty) is fine: re-armed either way */
	(void) chan_take_locked(cq->chan);
	cq->armed = true;
	pthread_mutex_unlock(&cq->chan->lock);
	return 0;
}

int
tcp_cq_get_completions(struct pmrep_cq *cq_base, struct pmrep_completion *out,
		int max, int *n)
{
	struct tcp_cq *cq = (struct tcp_cq *)cq_base;
	if (cq->base.conn != NULL)
		tcp_conn_release_held(tcp_conn(cq->base.conn));
	pthread_mutex_lock(&cq->lock);
	uint32_t k = cq->count < (uint32_t)max ? cq->count : (uint32_t)max;
	for (uint32_t i = 0; i < k; i++)
		out[i] = cq->ring[(cq->head + i) % cq->cap];
	cq->head = (cq->head + k) % cq->cap;
	cq->count -= k;
	pthread_mutex_unlock(&cq->lock);
	*n = (int)k;
	return k ? 0 : PMREP_E_NO_COMPLETION;
}

int
tcp_comp_channel_new(struct pmrep_peer *peer, struct pmrep_comp_channel **ch_ptr)
{
	struct tcp_comp_channel *ch = calloc(1, sizeof(*ch));
	if (ch == NULL) {
		PMREP_LOG_ERR("out of memory for a completion channel");
		return PMREP_E_NOMEM;
	}
	int ret = tcp_chan_init(&ch->chan);
	if (ret) {
		free(ch);
		return ret;
	}
	ch->base.peer = peer;
	ch->base.fd = ch->chan.fd;
	atomic_init(&ch->base.ncqs, 0);
	*ch_ptr = &ch->base;
	return 0;
}

int
tcp_comp_channel_delete(struct pmrep_comp_channel *ch_base)
{
	struct tcp_comp_channel *ch = (struct tcp_comp_channel *)ch_base;
	if (atomic_load(&ch->base.ncqs) != 0)
		return PMREP_E_BUSY;
	tcp_chan_fini(&ch->chan);
	free(ch);
	return 0;
}

int
tcp_comp_channel_wait(struct pmrep_comp_channel *ch_base, int timeout_ms,
		struct pmrep_cq **cq, struct pmrep_conn **conn)
{
	struct tcp_comp_channel *ch = (struct tcp_comp_channel *)ch_base;
	struct tcp_cq *c;
	int ret = tcp_chan_wait(&ch->chan, timeout_ms, &c);
	if (ret)
		return ret;
	*cq = &c->base;
	*conn = c->base.conn;
	return 0;
}

int
tcp_conn_wait(struct pmrep_conn *conn_base, int timeout_ms,
		struct pmrep_cq **cq, bool *is_rcq)
{
	struct tcp_conn *c = tcp_conn(conn_base);
	tcp_conn_release_held(c);
	if (c->own_chan == NULL) {
		/* a pmrep_comp_channel carries other conns' events too */
		PMREP_LOG_ERR("the conn's CQs are on a pmrep_comp_channel: use pmrep_comp_channel_wait");
		return PMREP_E_SHARED_CHANNEL;
	}
	struct tcp_cq *q;
	int ret = tcp_chan_wait(c->own_chan, timeout_ms, &q);
	if (ret)
		return ret;
	*cq = &q->base;
	*is_rcq = q->base.is_rcq;
	return 0;
}
