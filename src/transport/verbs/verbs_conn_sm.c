/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_conn_sm.c -- the verbs connection's total state machine behind
 * pmrep_conn_next_event (every rdma_cm event in every state, connect
 * retries with backoff on a timerfd, the idle check once established),
 * disconnect, and the shared-channel wait. The conn's objects are in
 * verbs_conn.c, its teardown in verbs_conn_end.c.
 *
 * State machine (active: initiator, passive: acceptor; "retry" = tear down
 * id + QP, arm the backoff, or report UNREACHABLE when no retry is left;
 * "ignore" = acknowledged, logged, nothing else). Events of an id other than
 * the current one are ignored. Before any CM event: a lost mark (an async
 * event, or an error completion of the QP: verbs_conn_wc_error, T21) ->
 * LOST; a local disconnect (pmrep_conn_disconnect, in any state) -> CLOSED
 * at once, without waiting for the peer's DREP, which only comes when the
 * remote application looks at its own events.
 *
 * The machine runs in next_event and also in a CQ wait that sees input on
 * the conn's fd (verbs_conn_pump): what it decides there is kept, in
 * order, for next_event. So a peer that disconnects (or dies: its kernel
 * sends the DREQ) moves our QP to error and flushes what is posted even
 * while the application only waits for completions (T08).
 *
 * event \ state     RESOLVING_ADDR/ROUTE  CONNECTING             ESTABLISHED  DISCONNECTING BACKOFF
 * ADDR_RESOLVED     (addr) resolve route  ignore                 ignore       ignore        ignore
 * ROUTE_RESOLVED    (route) QP, connect   ignore                 ignore       ignore        ignore
 * ADDR/ROUTE_ERROR  retry                 act: retry, pas: LOST  LOST         LOST          ignore
 * UNREACHABLE       retry                 act: retry, pas: LOST  LOST         LOST          ignore
 * CONNECT_ERROR     retry                 act: retry, pas: LOST  LOST         LOST          ignore
 * REJECTED          retry                 act: marker ? REJECTED LOST         LOST          ignore
 *                                         : retry; pas: LOST
 * ESTABLISHED       ignore                ESTABLISHED            ignore (dup) ignore        ignore
 * DISCONNECTED      ignore                LOST                   CLOSED (DREP CLOSED        ignore
 *                                                                  answered)
 * DEVICE_REMOVAL    LOST                  LOST                   LOST         LOST          LOST
 * CONNECT_REQUEST, CONNECT_RESPONSE, MULTICAST_*, ADDR_CHANGE,
 * TIMEWAIT_EXIT, unknown                  ignore everywhere
 * timer             retry                 act: retry, pas: LOST  idle check   ignore        new id,
 *                                                                                           resolve addr
 * (ESTABLISHED, active side: the acceptor's private data is decoded; if it
 * is malformed: disconnect, LOST.) A terminal event moves the QP to error,
 * so that every posted request completes now. After it (TERMINAL) nothing
 * is reported again and the rdma_cm fd leaves the epoll set; every event
 * read is acknowledged before next_event returns, on every path.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include "verbs_internal.h"
#include "transport/common.h"

/* -------------------------------------------------------- state machine */

static int
timer_arm(struct verbs_conn *conn, int ms)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = ms / 1000;
	its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
	if (ms <= 0)
		its.it_value.tv_nsec = 1;	/* 0 would disarm it */
	if (timerfd_settime(conn->timerfd, 0, &its, NULL))
		return PMREP_ERR_PROVIDER(errno, "timerfd_settime");
	return 0;
}

static void
timer_disarm(struct verbs_conn *conn)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	(void) timerfd_settime(conn->timerfd, 0, &its, NULL);
}

static bool
timer_expired(struct verbs_conn *conn)
{
	uint64_t n;
	return read(conn->timerfd, &n, sizeof(n)) == (ssize_t)sizeof(n) && n;
}

static void
notify_clear(struct verbs_conn *conn)
{
	uint64_t n;
	/* EAGAIN: nothing was raised; any other failure leaves it readable,
	 * which only costs a spurious wakeup */
	if (read(conn->notifyfd, &n, sizeof(n)) < 0)
		return;
}

void
verbs_conn_notify_raise(struct verbs_conn *conn)
{
	uint64_t one = 1;
	/* EAGAIN: the counter is at its maximum, raised already */
	if (write(conn->notifyfd, &one, sizeof(one)) < 0)
		return;
}

/* the one way to a terminal event: quiet every fd of the set */
void
verbs_conn_go_terminal(struct verbs_conn *conn)
{
	conn->state = VERBS_ST_TERMINAL;
	timer_disarm(conn);
	notify_clear(conn);
	/* nothing moves on this QP any more: whatever is posted completes
	 * now (flushed), not after the transport's retries run out (T08) */
	if (conn->qp) {
		struct ibv_qp_attr attr;
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_ERR;
		int err = ibv_modify_qp(conn->qp, &attr, IBV_QP_STATE);
		if (err)
			PMREP_LOG_INFO("ibv_modify_qp(ERR): %s", strerror(err));
	}
	if (conn->cm_fd_watched) {
		(void) epoll_ctl(conn->epfd, EPOLL_CTL_DEL, conn->evch->fd, NULL);
		conn->cm_fd_watched = false;
	}
}

/* what one step of the machine decided */
struct step {
	bool report;
	enum pmrep_conn_event event;
};

static void
step_report(struct step *s, enum pmrep_conn_event ev)
{
	s->report = true;
	s->event = ev;
}

/*
 * Each attempt (resolution, connect) is limited by the cfg timeout, and
 * all of them with their backoffs by timeout x (retries + 1): a peer that
 * never answers is reported UNREACHABLE within that (T17).
 */
static int
attempt_limit(const struct verbs_conn *conn)
{
	long long left = conn->deadline_ms - pmrep_now_ms();
	int t = conn->base.cfg.timeout_ms;
	return left < t ? (left > 0 ? (int)left : 0) : t;
}

/* give up the current attempt's id and QP */
static void
attempt_teardown(struct verbs_conn *conn)
{
	if (conn->qp) {
		if (verbs_conn_qp_destroy(conn))
			PMREP_LOG_WARN("a failed attempt's QP did not go away cleanly");
		/* what the old QP left (flushed pre-posted receives) is
		 * stale: the receives are posted again on the next QP */
		verbs_conn_cqs_drop_stale(conn);
	}
	verbs_conn_cqs_set_qp(conn, 0);
	if (conn->rings_ready) {
		verbs_sq_ring_reset(&conn->sq);
		verbs_rq_table_reset(&conn->rq);
	}
	if (conn->id) {
		if (rdma_destroy_id(conn->id)) {
			PMREP_LOG_WARN("rdma_destroy_id: %s", strerror(errno));
			conn->evch_pinned = true;
		}
		conn->id = NULL;
	}
}

/* the attempt failed: back off and retry, or report UNREACHABLE */
static void
attempt_failed(struct verbs_conn *conn, const char *why, struct step *s)
{
	attempt_teardown(conn);
	long long left = conn->deadline_ms - pmrep_now_ms();
	if (conn->retries_left == 0 || left <= 0) {
		PMREP_LOG_ERR("connection attempt failed (%s) and %s: unreachable",
				why, conn->retries_left ? "the time is up" :
				"no retry is left");
		step_report(s, PMREP_CONN_UNREACHABLE);
		return;
	}
	conn->retries_left--;
	int wait = conn->backoff_ms < left ? conn->backoff_ms : (int)left;
	PMREP_LOG_INFO("connection attempt failed (%s): retrying in %d ms (%u more)",
			why, wait, conn->retries_left);
	if (timer_arm(conn, wait)) {
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	conn->backoff_ms = conn->backoff_ms * 2 > VERBS_BACKOFF_CAP_MS ?
		VERBS_BACKOFF_CAP_MS : conn->backoff_ms * 2;
	conn->state = VERBS_ST_BACKOFF;
}

/* backoff over: a new id on the same channel, resolving again */
static void
attempt_start(struct verbs_conn *conn, struct step *s)
{
	if (rdma_create_id(conn->evch, &conn->id, conn, RDMA_PS_TCP)) {
		conn->id = NULL;
		(void) PMREP_ERR_PROVIDER(errno, "rdma_create_id");
		attempt_failed(conn, "rdma_create_id", s);
		return;
	}
	if (rdma_resolve_addr(conn->id, NULL, (struct sockaddr *)&conn->dst,
			conn->base.cfg.timeout_ms)) {
		(void) PMREP_ERR_PROVIDER(errno, "rdma_resolve_addr");
		attempt_failed(conn, "rdma_resolve_addr", s);
		return;
	}
	if (timer_arm(conn, attempt_limit(conn))) {
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	conn->state = VERBS_ST_RESOLVING_ADDR;
}

/* route known: QP, the receives posted before, connect */
static void
attempt_connect(struct verbs_conn *conn, struct step *s)
{
	struct rdma_conn_param param;

	if (conn->id->verbs != conn->peer->ctx) {
		PMREP_LOG_ERR("the address now resolves through another RDMA device");
		attempt_teardown(conn);
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	if (verbs_conn_qp_new(conn)) {
		attempt_failed(conn, "rdma_create_qp_ex", s);
		return;
	}
	uint32_t n = conn->nprepost;
	conn->nprepost = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct verbs_prepost p = conn->prepost[i];
		if (verbs_conn_post_recv_locked(conn, p.addr, p.len, p.lkey,
				p.op_context)) {
			attempt_failed(conn, "ibv_post_recv", s);
			return;
		}
	}
	/* a new id: its ACK timeout again (T23) */
	if (verbs_conn_set_ack_timeout(conn)) {
		attempt_failed(conn, "rdma_set_option", s);
		return;
	}
	verbs_conn_param(conn, &param);
	if (rdma_connect(conn->id, &param)) {
		(void) PMREP_ERR_PROVIDER(errno, "rdma_connect");
		attempt_failed(conn, "rdma_connect", s);
		return;
	}
	if (timer_arm(conn, attempt_limit(conn))) {
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	conn->state = VERBS_ST_CONNECTING;
}

static bool
resolving(const struct verbs_conn *conn)
{
	return conn->state == VERBS_ST_RESOLVING_ADDR ||
		conn->state == VERBS_ST_RESOLVING_ROUTE;
}

static bool
up(const struct verbs_conn *conn)
{
	return conn->state == VERBS_ST_ESTABLISHED ||
		conn->state == VERBS_ST_DISCONNECTING;
}

/*
 * Idle detection: an RC QP notices a dead peer only when something it
 * sent goes unacknowledged, so an idle conn would never notice. While
 * ESTABLISHED, the conn's timer ticks every VERBS_TICK_DIV-th of the cfg
 * timeout T. A tick
 *  - asks the QP's state: in error (the retries of something posted ran
 *    out, unseen because nobody polled the CQ yet) -> LOST;
 *  - when the send queue is empty, posts a heartbeat: a signalled
 *    zero-length RDMA WRITE with no address and no rkey (a zero-byte
 *    RDMA op needs neither: IBA C9-88), which the peer's RNIC
 *    acknowledges without its application; its completion is never
 *    reported (verbs_cq.c), an error one fails the conn (T21).
 * So a dead peer of an idle conn is declared lost within T/4 (the next
 * tick) + T (the heartbeat's retransmissions, T23) + T/4 (the tick that
 * finds the QP in error) = 1.5 T -- whether or not the application polls
 * the CQ, as long as it runs the conn's events (the event fd, an epoll set
 * holding the timerfd, wakes it for each tick; next_event returns
 * PMREP_E_NO_EVENT for a quiet one).
 */
static int
tick_period_ms(const struct verbs_conn *conn)
{
	int t = conn->base.cfg.timeout_ms / VERBS_TICK_DIV;
	return t > 0 ? t : 1;
}

/* (sm_lock held: the device's lock only if free -- lock order is
 * dev_lock before sm_lock; a release in progress ends the conn anyway) */
static void
on_tick(struct verbs_conn *conn, struct step *s)
{
	(void) timer_arm(conn, tick_period_ms(conn));
	if (pthread_rwlock_tryrdlock(&conn->peer->dev_lock))
		return;
	bool lost = false;
	if (!atomic_load(&conn->peer->removed) && conn->qp != NULL) {
		struct ibv_qp_attr attr;
		struct ibv_qp_init_attr init;
		if (ibv_query_qp(conn->qp, &attr, IBV_QP_STATE, &init) == 0 &&
				(attr.qp_state == IBV_QPS_ERR ||
				attr.qp_state == IBV_QPS_SQE)) {
			PMREP_LOG_ERR("QP %u is in the error state (found by the idle check): the connection is lost",
					conn->qp->qp_num);
			lost = true;
		} else if (verbs_sq_ring_outstanding(&conn->sq) == 0) {
			(void) verbs_post_heartbeat(conn);
		}
	}
	verbs_dev_unlock(conn->peer);
	if (lost)
		step_report(s, PMREP_CONN_LOST);
}

/* the connection came up: ESTABLISHED (active: with the accept's data) */
static void
on_established(struct verbs_conn *conn, const struct verbs_cm_event *ev,
		struct step *s)
{
	if (!conn->passive) {
		uint8_t len = 0;
		if (verbs_pdata_decode(ev->pdata_len ? ev->pdata : NULL,
				ev->pdata_len, ev->flow_control,
				PMREP_PDATA_ACCEPT_MAX, conn->base.pdata, &len)) {
			PMREP_LOG_ERR("the accepting side sent malformed private data: dropping the connection");
			(void) rdma_disconnect(conn->id);
			step_report(s, PMREP_CONN_LOST);
			return;
		}
		conn->base.pdata_len = len;
		/* the acceptor's REP decides our QP's RNR retries */
		conn->base.rc_timing.rnr_retry_count = ev->rnr_retry_count;
		if (ev->rnr_retry_count == VERBS_RNR_RETRY_INFINITE)
			PMREP_LOG_WARN("the acceptor grants unbounded RNR retries (7): a peer that never posts a receive is never detected");
		/* no retry from here on */
		free(conn->prepost);
		conn->prepost = NULL;
		conn->nprepost = 0;
	}
	timer_disarm(conn);
	if (!conn->passive && verbs_conn_qp_allow_flush(conn)) {
		(void) rdma_disconnect(conn->id);
		step_report(s, PMREP_CONN_LOST);
		return;
	}
	conn->state = VERBS_ST_ESTABLISHED;
	/* from now on the timer is the idle check's (on_tick) */
	(void) timer_arm(conn, tick_period_ms(conn));
	step_report(s, PMREP_CONN_ESTABLISHED);
}

/* an attempt-level failure: retry (active, before ESTABLISHED) or LOST */
static void
on_failure(struct verbs_conn *conn, const struct verbs_cm_event *ev,
		struct step *s)
{
	if (resolving(conn) || conn->state == VERBS_ST_CONNECTING) {
		if (conn->passive)
			step_report(s, PMREP_CONN_LOST);
		else
			attempt_failed(conn, rdma_event_str(ev->type), s);
	} else if (up(conn)) {
		step_report(s, PMREP_CONN_LOST);
	}
	/* NEW / BACKOFF: no id of ours could have sent it: ignore */
}

static void
ignore(const struct verbs_conn *conn, const struct verbs_cm_event *ev)
{
	PMREP_LOG_INFO("ignoring %s (status %d) in state %s",
			rdma_event_str(ev->type), ev->status,
			verbs_conn_state_str(conn->state));
}

static void
on_cm_event(struct verbs_conn *conn, const struct verbs_cm_event *ev,
		struct step *s)
{
	if (conn->id == NULL || ev->id != conn->id) {
		/* an earlier attempt's id (already destroyed) */
		ignore(conn, ev);
		return;
	}
	PMREP_LOG_DBG("%s (status %d) in state %s", rdma_event_str(ev->type),
			ev->status, verbs_conn_state_str(conn->state));
	switch (ev->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (conn->state != VERBS_ST_RESOLVING_ADDR) {
			ignore(conn, ev);
			return;
		}
		if (rdma_resolve_route(conn->id, conn->base.cfg.timeout_ms)) {
			(void) PMREP_ERR_PROVIDER(errno, "rdma_resolve_route");
			attempt_failed(conn, "rdma_resolve_route", s);
			return;
		}
		conn->state = VERBS_ST_RESOLVING_ROUTE;
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (conn->state != VERBS_ST_RESOLVING_ROUTE) {
			ignore(conn, ev);
			return;
		}
		attempt_connect(conn, s);
		return;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		PMREP_LOG_INFO("%s (status %d)", rdma_event_str(ev->type),
				ev->status);
		on_failure(conn, ev, s);
		return;
	case RDMA_CM_EVENT_REJECTED:
		if (conn->state == VERBS_ST_CONNECTING && !conn->passive &&
				verbs_reject_is_explicit(ev->pdata,
					ev->pdata_len)) {
			PMREP_LOG_ERR("the passive side rejected the connection");
			step_report(s, PMREP_CONN_REJECTED);
			return;
		}
		PMREP_LOG_INFO("REJECTED (status %d) without pmrep's marker: nothing listens there (yet)",
				ev->status);
		on_failure(conn, ev, s);
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (conn->state != VERBS_ST_CONNECTING) {
			ignore(conn, ev);
			return;
		}
		on_established(conn, ev, s);
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (conn->state == VERBS_ST_ESTABLISHED) {
			/* the peer's DREQ: answer it, or its side waits for
			 * the DREQ to time out before it sees DISCONNECTED */
			if (rdma_disconnect(conn->id))
				PMREP_LOG_INFO("rdma_disconnect: %s",
						strerror(errno));
			step_report(s, PMREP_CONN_CLOSED);
		} else if (conn->state == VERBS_ST_DISCONNECTING) {
			step_report(s, PMREP_CONN_CLOSED);
		} else if (conn->state == VERBS_ST_CONNECTING) {
			step_report(s, PMREP_CONN_LOST);
		} else {
			ignore(conn, ev);
		}
		return;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* the caller releases the device once sm_lock is dropped */
		PMREP_LOG_ERR("the RDMA device was removed");
		atomic_store(&conn->dev_removal_seen, true);
		step_report(s, PMREP_CONN_LOST);
		return;
	default:
		/* CONNECT_REQUEST, CONNECT_RESPONSE, MULTICAST_*, ADDR_CHANGE,
		 * TIMEWAIT_EXIT and whatever a newer librdmacm adds */
		ignore(conn, ev);
		return;
	}
}

static void
on_timer(struct verbs_conn *conn, struct step *s)
{
	switch (conn->state) {
	case VERBS_ST_BACKOFF:
		attempt_start(conn, s);
		return;
	case VERBS_ST_RESOLVING_ADDR:
	case VERBS_ST_RESOLVING_ROUTE:
		attempt_failed(conn, "resolution timed out", s);
		return;
	case VERBS_ST_CONNECTING:
		PMREP_LOG_INFO("connect did not complete in %d ms",
				conn->base.cfg.timeout_ms);
		if (conn->passive)
			step_report(s, PMREP_CONN_LOST);
		else
			attempt_failed(conn, "connect timed out", s);
		return;
	case VERBS_ST_ESTABLISHED:
		on_tick(conn, s);
		return;
	default:
		return;	/* a stale expiry */
	}
}

int
verbs_conn_start(struct verbs_conn *conn)
{
	struct rdma_conn_param param;
	int ret;

	ret = verbs_conn_fds_new(conn);
	if (ret)
		return ret;
	/* each side its own id's local ACK timeout, before connect / accept */
	ret = verbs_conn_set_ack_timeout(conn);
	if (ret)
		return ret;
	verbs_conn_param(conn, &param);
	if (conn->passive) {
		if (rdma_accept(conn->id, &param))
			return PMREP_ERR_PROVIDER(errno, "rdma_accept");
		ret = verbs_conn_qp_allow_flush(conn);
		if (ret)
			return ret;
	} else {
		conn->retries_left = conn->base.cfg.connect_retries;
		conn->backoff_ms = conn->base.cfg.retry_backoff_ms > 0 ?
			conn->base.cfg.retry_backoff_ms : 1;
		conn->deadline_ms = pmrep_now_ms() +
			(long long)conn->base.cfg.timeout_ms *
			((long long)conn->retries_left + 1);
		if (rdma_connect(conn->id, &param))
			return PMREP_ERR_PROVIDER(errno, "rdma_connect");
	}
	/* connect (and accept: until the initiator's RTU) within the cfg
	 * timeout */
	ret = timer_arm(conn, conn->base.cfg.timeout_ms);
	if (ret)
		return ret;
	conn->state = VERBS_ST_CONNECTING;
	verbs_peer_register_conn(conn->peer, conn);
	return 0;
}

/*
 * One step of the machine (sm_lock held): what the state machine makes of
 * its input -- the async lost mark, a local close, CM events, the timer --
 * up to the first event to report. 0 with s->report set, or
 * PMREP_E_NO_EVENT, or PMREP_E_PROVIDER (reading the CM channel failed).
 */
static int
sm_step(struct verbs_conn *conn, struct step *s)
{
	notify_clear(conn);
	if (atomic_load(&conn->lost)) {
		step_report(s, PMREP_CONN_LOST);
		return 0;
	}
	if (conn->local_close) {
		step_report(s, PMREP_CONN_CLOSED);
		return 0;
	}
	/* CM events first: an ESTABLISHED that is there beats a timeout */
	for (;;) {
		struct verbs_cm_event ev;
		int ret = verbs_cm_event_take(conn->evch, &ev);
		if (ret == PMREP_E_NO_EVENT)
			break;
		if (ret)
			return ret;
		on_cm_event(conn, &ev, s);
		if (s->report)
			return 0;
	}
	if (timer_expired(conn)) {
		on_timer(conn, s);
		if (s->report)
			return 0;
	}
	return PMREP_E_NO_EVENT;
}

/* an event is decided: a terminal one ends the machine at once */
static void
sm_decided(struct verbs_conn *conn, enum pmrep_conn_event ev)
{
	if (ev != PMREP_CONN_ESTABLISHED)
		verbs_conn_go_terminal(conn);
}

/*
 * The conn's id saw DEVICE_REMOVAL: release the device (T22) now, holding
 * no lock (every caller of the state machine: next_event, the pump).
 */
static void
device_removal_due(struct verbs_conn *conn)
{
	if (atomic_load(&conn->dev_removal_seen) &&
			!atomic_load(&conn->peer->removed))
		verbs_device_removed(conn->peer,
				"RDMA_CM_EVENT_DEVICE_REMOVAL on a connection");
}

bool
verbs_conn_pump(struct verbs_conn *conn)
{
	if (pthread_mutex_trylock(&conn->sm_lock))
		return false;	/* its owner is at it right now */
	while (conn->npending < VERBS_PENDING_MAX &&
			conn->state != VERBS_ST_TERMINAL) {
		struct step s = { false, PMREP_CONN_UNDEFINED };
		if (sm_step(conn, &s) || !s.report)
			break;
		conn->pending[conn->npending++] = s.event;
		sm_decided(conn, s.event);
	}
	/* the event fd stays readable until next_event reports them */
	if (conn->npending)
		verbs_conn_notify_raise(conn);
	pthread_mutex_unlock(&conn->sm_lock);
	device_removal_due(conn);
	return true;
}

bool
verbs_conn_watchable(const struct verbs_conn *conn)
{
	return conn->state != VERBS_ST_TERMINAL && conn->npending == 0;
}

int
verbs_conn_next_event(struct pmrep_conn *base, enum pmrep_conn_event *event)
{
	struct verbs_conn *conn = (struct verbs_conn *)base;
	struct step s = { false, PMREP_CONN_UNDEFINED };
	int ret = 0;

	pthread_mutex_lock(&conn->sm_lock);
	if (conn->npending) {
		/* decided while a CQ wait pumped the machine */
		*event = conn->pending[0];
		conn->npending--;
		memmove(conn->pending, conn->pending + 1,
				sizeof(conn->pending[0]) * conn->npending);
		if (conn->npending)
			verbs_conn_notify_raise(conn);
		else
			notify_clear(conn);
		goto out;
	}
	if (conn->state == VERBS_ST_TERMINAL) {
		ret = PMREP_E_NO_EVENT;
		goto out;
	}
	ret = sm_step(conn, &s);
	if (ret == 0) {
		*event = s.event;
		sm_decided(conn, s.event);
	}
out:
	pthread_mutex_unlock(&conn->sm_lock);
	device_removal_due(conn);
	return ret;
}

int
verbs_conn_disconnect(struct pmrep_conn *base)
{
	struct verbs_conn *conn = (struct verbs_conn *)base;
	/* what PMREP_F_MORE holds goes out before the DREQ (on a QP already
	 * in error: flushed, so it still ends with a completion) */
	int held = verbs_hold_post(conn, "the connection is disconnected");
	int ret = 0;

	pthread_mutex_lock(&conn->sm_lock);
	switch (conn->state) {
	case VERBS_ST_ESTABLISHED:
		/* moves the QP to error and sends the DREQ. CLOSED is reported
		 * now: waiting for the peer's DREP would tie our event to the
		 * remote application's next look at its own events */
		if (rdma_disconnect(conn->id)) {
			ret = PMREP_ERR_PROVIDER(errno, "rdma_disconnect");
			break;
		}
		conn->state = VERBS_ST_DISCONNECTING;
		conn->local_close = true;
		verbs_conn_notify_raise(conn);
		break;
	case VERBS_ST_DISCONNECTING:
	case VERBS_ST_TERMINAL:
		break;
	default:
		/* not up yet: stop trying and report CLOSED */
		if (conn->state == VERBS_ST_CONNECTING && conn->id &&
				rdma_disconnect(conn->id))
			PMREP_LOG_INFO("rdma_disconnect before ESTABLISHED: %s",
					strerror(errno));
		timer_disarm(conn);
		conn->local_close = true;
		verbs_conn_notify_raise(conn);
		break;
	}
	pthread_mutex_unlock(&conn->sm_lock);
	return ret ? ret : held;
}

int
verbs_conn_wait(struct pmrep_conn *base, int timeout_ms, struct pmrep_cq **cq,
		bool *is_rcq)
{
	struct verbs_conn *conn = (struct verbs_conn *)base;

	if (atomic_load(&conn->peer->removed)) {
		PMREP_LOG_ERR("the connection is lost: its RDMA device was removed");
		return PMREP_E_CONN_LOST;
	}
	if (conn->own_shared_ch == NULL) {
		/* a pmrep_comp_channel carries other conns' events too */
		PMREP_LOG_ERR("the conn's CQs are on a pmrep_comp_channel: use pmrep_comp_channel_wait");
		return PMREP_E_SHARED_CHANNEL;
	}
	int ret = verbs_hold_post(conn, "the conn waits for completions");
	if (ret)
		return ret;
	struct verbs_cq *got = NULL;
	ret = verbs_wait_cq_event(conn->peer, conn->own_shared_ch, conn,
			timeout_ms, &got);
	if (ret == PMREP_E_TIMEOUT && timeout_ms == 0)
		return PMREP_E_NO_COMPLETION;
	if (ret)
		return ret;
	*cq = &got->base;
	*is_rcq = got->base.is_rcq;
	return 0;
}
