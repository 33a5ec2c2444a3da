/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sim_provider.c -- a transport provider (src/transport/provider.h) whose
 * wire is the harness's packet queues. Semantics follow the tcp provider
 * and RC verbs, as the repl layer relies on them:
 *
 * - a connection is two ends with an id each; every post of an end becomes
 *   a packet on that end's outbound queue, delivered in order (RC); which
 *   end's queue goes next is the scheduler's choice (sim_world.c);
 * - connect: a CONNECT packet (with the initiator's private data) to the
 *   listener of the port; the listener hands out a passive request; its
 *   accept sends an ACCEPT packet (private data) back, which makes the
 *   initiator's end ESTABLISHED; a passive drop is REJECTED, no listener
 *   UNREACHABLE;
 * - write: the bytes land in the remote MR (by rkey and address) when the
 *   packet is delivered; a send needs a posted receive at the other end
 *   (else it waits, as an RNR retry does); a PERSISTENT flush calls the
 *   remote MR's persist function (none set: the write counts as durable);
 *   the sender's completion (signalled ones; errors always) is made at
 *   delivery;
 * - a dropped packet stalls its direction (RC retransmits, never skips):
 *   nothing behind it is delivered until the connection ends;
 * - a lost connection (a cut) ends both ends: LOST once each, every
 *   outstanding request and receive completed with PMREP_WC_FLUSHED,
 *   queued packets dropped; a local disconnect is CLOSED at once locally
 *   and at the other end when its DISCONNECT packet (behind what was
 *   queued before it) arrives.
 * CQ and event fds are real eventfds, readable while an event is pending,
 * so the target's epoll works; every wait runs the world (sim_wait).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/log.h"
#include "repl/wire/msg.h"
#include "sim.h"

enum sim_pkt_kind {
	PK_CONNECT = 1,
	PK_ACCEPT,
	PK_WRITE,
	PK_FLUSH,
	PK_SEND,
	PK_DISCONNECT,
	PK_READ,	/* sim_failover.c's recover: the bytes are taken at delivery */
};

static const char *const pk_names[] = { "?", "CONNECT", "ACCEPT", "WRITE",
	"FLUSH", "SEND", "DISCONNECT", "READ" };

struct sim_pkt {
	struct sim_pkt *next;
	enum sim_pkt_kind kind;
	uint8_t *data;
	size_t len;
	uint64_t raddr;
	uint32_t rkey;
	enum pmrep_flush_type ftype;
	enum pmrep_op op;
	bool signaled;
	bool orphan;		/* the sender was already told (flushed) */
	const void *ctx;
	long long release;
	uint16_t port;		/* CONNECT */
	uint8_t pdata_len;
	uint8_t pdata[PMREP_PDATA_ACCEPT_MAX];
	struct pmrep_mr_local *rdst;	/* READ: where the bytes go */
	size_t rdst_off;
};

struct sim_recv {
	struct pmrep_mr_local *mr;
	size_t off, len;
	const void *ctx;
};

#define MAX_RECV 160	/* >= the channel's receives (CHAN_NRECV) */
#define MAX_EV 4

struct sim_cq {
	struct pmrep_cq base;
	struct pmrep_completion *c;
	size_t head, n, cap;
	bool event;
};

struct sim_end {
	struct pmrep_conn base;
	uint64_t id, peer_id;
	unsigned proc;
	bool local_closed;	/* no more posts; the queue drains */
	bool dead;		/* nothing more to or from it */
	bool deleted;		/* the conn was deleted: freed once drained */
	bool terminal_queued;
	unsigned tag;		/* sim_set_conn_tag when it was made */
	enum pmrep_conn_event ev[MAX_EV];
	int nev;
	struct sim_cq cq;
	struct sim_recv recvs[MAX_RECV];
	int nrecv;
	struct sim_pkt *qh, *qt;
	struct sim_pkt *limbo;	/* taken off the wire, never acknowledged */
};

struct sim_peer {
	struct pmrep_peer base;
	unsigned proc;
};

struct sim_mr {
	struct pmrep_mr_local base;
	unsigned proc;
	int in_file;		/* maps a followed file: -1 not known yet, 0, 1 */
};

struct sim_req {
	struct pmrep_conn_req base;
	unsigned proc;
	uint16_t port;			/* active */
	uint64_t active_id;		/* passive */
	struct sim_recv recvs[MAX_RECV];
	int nrecv;
	struct sim_req *next;
};

struct sim_ep {
	struct pmrep_ep base;
	unsigned proc;
	struct sim_req *pending, *pending_tail;
};

#define MAX_MRS 4096
#define MAX_EPS 16
#define SIM_MW_KEY_BASE 0x40000000u

/*
 * A memory window: a key that reaches its region only in packets that
 * arrive at the end it is bound to (verbs' type 2 window on the QP, tcp's
 * window of the conn), while it is in P.mws. A region registered with
 * PMREP_MR_USAGE_MW_BIND is not reachable by its own key.
 */
struct sim_mw {
	struct pmrep_mw base;
	struct sim_mr *mr;
	uint64_t end_id;		/* the end (conn) it is bound to */
	struct sim_mw *next;
};

static struct {
	struct sim_end **ends;		/* by id */
	uint64_t nends, cap;
	struct sim_mr *mrs[MAX_MRS];	/* by rkey */
	uint32_t next_rkey;
	struct sim_ep *eps[MAX_EPS];
	uint64_t activity;
	sim_landing_fn landing;		/* the harness's check of landing writes */
	unsigned tag;			/* of the ends made from now on */
	struct sim_mw *mws;		/* windows not invalidated */
	uint32_t next_mw_key;		/* window keys: SIM_MW_KEY_BASE.., never reused */
} P;

uint64_t sim_activity(void) { return P.activity; }
void sim_activity_bump(void) { P.activity++; }

static void
fd_signal(int fd)
{
	uint64_t v = 1;
	(void) !write(fd, &v, sizeof(v));
}

static void
fd_drain(int fd)
{
	uint64_t v;
	(void) !read(fd, &v, sizeof(v));
}

static struct sim_end *
end_get(uint64_t id)
{
	return id > 0 && id < P.nends ? P.ends[id] : NULL;
}

static void
push_cqe(struct sim_end *e, const void *ctx, enum pmrep_op op,
		enum pmrep_wc_status st, uint32_t byte_len)
{
	if (e->deleted)
		return;
	struct sim_cq *cq = &e->cq;
	if (cq->n == cq->cap) {
		size_t nc = cq->cap ? cq->cap * 2 : 16;
		struct pmrep_completion *c = malloc(nc * sizeof(*c));
		if (c == NULL)
			abort();	/* the harness, not the library */
		for (size_t i = 0; i < cq->n; i++)
			c[i] = cq->c[(cq->head + i) % cq->cap];
		free(cq->c);
		cq->c = c;
		cq->cap = nc;
		cq->head = 0;
	}
	struct pmrep_completion *x = &cq->c[(cq->head + cq->n) % cq->cap];
	memset(x, 0, sizeof(*x));
	x->op_context = (void *)ctx;
	x->op = op;
	x->status = st;
	x->byte_len = byte_len;
	cq->n++;
	cq->event = true;
	fd_signal(cq->base.fd);
	P.activity++;
}

static void
push_event(struct sim_end *e, enum pmrep_conn_event ev)
{
	if (e->deleted || e->nev == MAX_EV)
		return;
	if (ev != PMREP_CONN_ESTABLISHED) {
		if (e->terminal_queued)
			return;
		e->terminal_queued = true;
	}
	e->ev[e->nev++] = ev;
	fd_signal(e->base.event_fd);
	P.activity++;
}

static void
pkt_free(struct sim_pkt *p)
{
	free(p->data);
	free(p);
}

static void
end_free(struct sim_end *e)
{
	P.ends[e->id] = NULL;
	struct sim_pkt *p;
	while ((p = e->qh) != NULL) {
		e->qh = p->next;
		pkt_free(p);
	}
	while ((p = e->limbo) != NULL) {
		e->limbo = p->next;
		pkt_free(p);
	}
	close(e->base.event_fd);
	close(e->cq.base.fd);
	free(e->cq.c);
	free(e);
}

/* every request and receive of `e` not completed yet: FLUSH_ERR */
static void
end_flush(struct sim_end *e)
{
	for (struct sim_pkt *p = e->qh; p; p = p->next) {
		if (p->orphan || p->kind == PK_DISCONNECT)
			continue;
		if (p->kind != PK_CONNECT && p->kind != PK_ACCEPT)
			push_cqe(e, p->ctx, p->op, PMREP_WC_FLUSHED, 0);
		p->orphan = true;
	}
	for (int i = 0; i < e->nrecv; i++)
		push_cqe(e, e->recvs[i].ctx, PMREP_OP_RECV, PMREP_WC_FLUSHED, 0);
	e->nrecv = 0;
	struct sim_pkt *p;
	while ((p = e->limbo) != NULL) {
		e->limbo = p->next;
		push_cqe(e, p->ctx, p->op, PMREP_WC_FLUSHED, 0);
		pkt_free(p);
	}
}

static void
end_maybe_free(struct sim_end *e)
{
	if (e->deleted && e->qh == NULL)
		end_free(e);
}

/* the end is gone: `ev` once, everything flushed, its queue dropped */
static void
end_kill(struct sim_end *e, enum pmrep_conn_event ev)
{
	if (e->dead)
		return;
	e->dead = e->local_closed = true;
	end_flush(e);
	struct sim_pkt *p;
	while ((p = e->qh) != NULL) {
		e->qh = p->next;
		pkt_free(p);
	}
	e->qt = NULL;
	push_event(e, ev);
	P.activity++;
}

static void
cut_pair(struct sim_end *e)
{
	struct sim_end *o = end_get(e->peer_id);
	end_kill(e, PMREP_CONN_LOST);
	if (o)
		end_kill(o, PMREP_CONN_LOST);
	end_maybe_free(e);
	if (o)
		end_maybe_free(o);
}

static void
enqueue(struct sim_end *e, struct sim_pkt *p)
{
	p->next = NULL;
	p->release = sim_now();
	if (e->qt)
		e->qt->next = p;
	else
		e->qh = p;
	e->qt = p;
	P.activity++;
}

static struct sim_pkt *
pkt_new(enum sim_pkt_kind kind)
{
	struct sim_pkt *p = calloc(1, sizeof(*p));
	if (p == NULL)
		abort();
	p->kind = kind;
	/* control packets have no completion of their own */
	p->orphan = kind == PK_CONNECT || kind == PK_ACCEPT ||
		kind == PK_DISCONNECT;
	return p;
}

static struct sim_end *
end_new(struct pmrep_peer *peer, const struct pmrep_conn_cfg *cfg,
		unsigned proc)
{
	struct sim_end *e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	if (P.nends == P.cap) {
		uint64_t nc = P.cap ? P.cap * 2 : 64;
		struct sim_end **n = realloc(P.ends, nc * sizeof(*n));
		if (n == NULL) {
			free(e);
			return NULL;
		}
		memset(n + P.cap, 0, (nc - P.cap) * sizeof(*n));
		P.ends = n;
		P.cap = nc;
	}
	if (P.nends == 0)
		P.nends = 1;	/* id 0: none */
	e->id = P.nends++;
	P.ends[e->id] = e;
	e->proc = proc;
	e->tag = P.tag;
	e->base.peer = peer;
	e->base.cfg = *cfg;
	e->base.event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	e->base.comp_fd = -1;
	e->cq.base.peer = peer;
	e->cq.base.conn = &e->base;
	e->cq.base.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	e->base.cq = &e->cq.base;
	atomic_init(&e->base.terminal, false);
	return e;
}

/* ------------------------------------------------------------- peer */

int
sim_peer_open(const char *addr, bool is_local, struct pmrep_peer **peer)
{
	(void) addr;
	(void) is_local;
	struct sim_peer *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return PMREP_E_NOMEM;
	p->base.ops = &sim_provider_ops;
	p->base.provider = PMREP_PROVIDER_TCP;	/* descriptors decode as tcp */
	extern bool sim_cfg_native_flush(void);
	p->base.caps = sim_cfg_native_flush() ? PMREP_CAP_NATIVE_FLUSH : 0;
	p->base.async_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	atomic_init(&p->base.nobjects, 0);
	p->proc = sim_current_proc();
	*peer = &p->base;
	return 0;
}

static int
s_peer_delete(struct pmrep_peer *peer)
{
	close(peer->async_fd);
	free(peer);
	return 0;
}

static int
s_peer_handle_async_event(struct pmrep_peer *peer, enum pmrep_async_event *ev)
{
	(void) peer;
	*ev = PMREP_ASYNC_NONE;
	return PMREP_E_NO_EVENT;
}

static unsigned
peer_proc(const struct pmrep_peer *peer)
{
	return ((const struct sim_peer *)peer)->proc;
}

/* --------------------------------------------------------------- MR */

static int
s_mr_reg(struct pmrep_peer *peer, void *ptr, size_t size, int usage,
		struct pmrep_mr_local **mr)
{
	if (P.next_rkey == 0)
		P.next_rkey = 1;
	if (P.next_rkey >= MAX_MRS) {
		/* reuse a free slot */
		uint32_t k;
		for (k = 1; k < MAX_MRS && P.mrs[k]; k++)
			;
		if (k == MAX_MRS)
			return PMREP_E_NOMEM;
		P.next_rkey = k;
	}
	struct sim_mr *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return PMREP_E_NOMEM;
	m->base.peer = peer;
	m->base.ptr = ptr;
	m->base.size = size;
	m->base.usage = usage;
	m->base.raddr = (uint64_t)(uintptr_t)ptr;
	m->base.rkey = P.next_rkey;
	m->proc = peer_proc(peer);
	m->in_file = -1;
	P.mrs[P.next_rkey] = m;
	P.next_rkey++;
	*mr = &m->base;
	return 0;
}

static int
s_mr_dereg(struct pmrep_mr_local *mr)
{
	if (mr->rkey < MAX_MRS && P.mrs[mr->rkey] == (struct sim_mr *)mr)
		P.mrs[mr->rkey] = NULL;
	free(mr);
	return 0;
}

static int
s_nosupp(const char *what)
{
	PMREP_LOG_ERR("sim provider: %s is not simulated", what);
	return PMREP_E_NOSUPP;
}

static int
s_comp_channel_new(struct pmrep_peer *peer, struct pmrep_comp_channel **ch)
{
	(void) peer;
	(void) ch;
	return s_nosupp("a shared completion channel");
}

static int
s_comp_channel_delete(struct pmrep_comp_channel *ch)
{
	free(ch);
	return 0;
}

static int
s_comp_channel_wait(struct pmrep_comp_channel *ch, int t, struct pmrep_cq **cq,
		struct pmrep_conn **conn)
{
	(void) ch; (void) t; (void) cq; (void) conn;
	return s_nosupp("a shared completion channel");
}

static int
s_srq_new(struct pmrep_peer *peer, uint32_t a, uint32_t b, struct pmrep_srq **s)
{
	(void) peer; (void) a; (void) b; (void) s;
	return s_nosupp("an SRQ");
}

static int
s_srq_delete(struct pmrep_srq *srq)
{
	free(srq);
	return 0;
}

static int
s_srq_recv(struct pmrep_srq *srq, struct pmrep_mr_local *dst, size_t o,
		size_t l, const void *c)
{
	(void) srq; (void) dst; (void) o; (void) l; (void) c;
	return s_nosupp("an SRQ");
}

/* ------------------------------------------------------------ ep */

static int
s_ep_listen(struct pmrep_peer *peer, const char *addr, const char *port,
		struct pmrep_ep **ep)
{
	(void) addr;
	unsigned long v = strtoul(port, NULL, 10);
	int slot = -1;
	for (int i = 0; i < MAX_EPS; i++) {
		if (P.eps[i] && P.eps[i]->base.port == v) {
			PMREP_LOG_ERR("sim: port %lu is taken", v);
			return PMREP_E_PROVIDER;
		}
		if (!P.eps[i] && slot < 0)
			slot = i;
	}
	if (slot < 0 || v == 0 || v > 65535)
		return s_nosupp("this listener (give it a port of its own)");
	struct sim_ep *e = calloc(1, sizeof(*e));
	if (e == NULL)
		return PMREP_E_NOMEM;
	e->base.peer = peer;
	e->base.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	e->base.port = (uint16_t)v;
	e->proc = peer_proc(peer);
	P.eps[slot] = e;
	*ep = &e->base;
	return 0;
}

static void
reject_active(uint64_t id, enum pmrep_conn_event ev)
{
	struct sim_end *a = end_get(id);
	if (a) {
		end_kill(a, ev);
		end_maybe_free(a);
	}
}

static int
s_ep_shutdown(struct pmrep_ep *ep)
{
	struct sim_ep *e = (struct sim_ep *)ep;
	for (int i = 0; i < MAX_EPS; i++)
		if (P.eps[i] == e)
			P.eps[i] = NULL;
	struct sim_req *r;
	while ((r = e->pending) != NULL) {
		e->pending = r->next;
		reject_active(r->active_id, PMREP_CONN_REJECTED);
		free(r);
	}
	close(e->base.fd);
	free(e);
	return 0;
}

static int
s_ep_next_conn_req(struct pmrep_ep *ep, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req)
{
	struct sim_ep *e = (struct sim_ep *)ep;
	struct sim_req *r = e->pending;
	if (r == NULL) {
		fd_drain(e->base.fd);
		return PMREP_E_NO_EVENT;
	}
	e->pending = r->next;
	if (e->pending == NULL) {
		e->pending_tail = NULL;
		fd_drain(e->base.fd);
	}
	r->next = NULL;
	r->base.cfg = *cfg;
	*req = &r->base;
	return 0;
}

/* --------------------------------------------------------- conn req */

static int
s_conn_req_new(struct pmrep_peer *peer, const char *addr, const char *port,
		const struct pmrep_conn_cfg *cfg, struct pmrep_conn_req **req)
{
	(void) addr;
	struct sim_req *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return PMREP_E_NOMEM;
	r->base.peer = peer;
	r->base.cfg = *cfg;
	r->base.passive = false;
	r->proc = peer_proc(peer);
	r->port = (uint16_t)strtoul(port, NULL, 10);
	*req = &r->base;
	return 0;
}

static int
add_recv(struct sim_recv *recvs, int *n, struct pmrep_mr_local *dst,
		size_t off, size_t len, const void *ctx)
{
	if (*n == MAX_RECV) {
		PMREP_LOG_ERR("sim: receive queue full");
		return PMREP_E_AGAIN;
	}
	recvs[*n] = (struct sim_recv){ dst, off, len, ctx };
	(*n)++;
	return 0;
}

static int
s_conn_req_recv(struct pmrep_conn_req *req, struct pmrep_mr_local *dst,
		size_t off, size_t len, const void *ctx)
{
	struct sim_req *r = (struct sim_req *)req;
	return add_recv(r->recvs, &r->nrecv, dst, off, len, ctx);
}

static int
s_conn_req_connect(struct pmrep_conn_req *req,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn)
{
	struct sim_req *r = (struct sim_req *)req;
	struct sim_end *e = end_new(req->peer, &req->cfg, r->proc);
	if (e == NULL) {
		free(r);
		return PMREP_E_NOMEM;
	}
	memcpy(e->recvs, r->recvs, sizeof(r->recvs));
	e->nrecv = r->nrecv;
	struct sim_pkt *p = pkt_new(req->passive ? PK_ACCEPT : PK_CONNECT);
	if (pdata && pdata->len) {
		p->pdata_len = pdata->len;
		memcpy(p->pdata, pdata->ptr, pdata->len);
	}
	if (req->passive) {
		e->peer_id = r->active_id;
		/* the initiator's private data, as the conn holds it */
		e->base.pdata_len = req->pdata_len;
		memcpy(e->base.pdata, req->pdata, req->pdata_len);
		push_event(e, PMREP_CONN_ESTABLISHED);
	} else {
		p->port = r->port;
	}
	enqueue(e, p);
	if (sim_proc_crashed(e->proc))
		end_kill(e, PMREP_CONN_LOST);
	free(r);
	*conn = &e->base;
	return 0;
}

static int
s_conn_req_delete(struct pmrep_conn_req *req)
{
	struct sim_req *r = (struct sim_req *)req;
	if (req->passive)
		reject_active(r->active_id, PMREP_CONN_REJECTED);
	free(r);
	return 0;
}

/* ------------------------------------------------------------- conn */

static int
s_conn_next_event(struct pmrep_conn *conn, enum pmrep_conn_event *ev)
{
	struct sim_end *e = (struct sim_end *)conn;
	if (e->nev == 0) {
		fd_drain(e->base.event_fd);
		return PMREP_E_NO_EVENT;
	}
	*ev = e->ev[0];
	memmove(e->ev, e->ev + 1, (size_t)(e->nev - 1) * sizeof(e->ev[0]));
	e->nev--;
	if (e->nev == 0)
		fd_drain(e->base.event_fd);
	return 0;
}

static int
s_conn_wait(struct pmrep_conn *conn, int t, struct pmrep_cq **cq, bool *rcq)
{
	(void) conn; (void) t; (void) cq; (void) rcq;
	return s_nosupp("pmrep_conn_wait (a shared channel)");
}

static int
s_conn_disconnect(struct pmrep_conn *conn)
{
	struct sim_end *e = (struct sim_end *)conn;
	if (e->local_closed)
		return 0;
	e->local_closed = true;
	end_flush(e);
	push_event(e, PMREP_CONN_CLOSED);
	enqueue(e, pkt_new(PK_DISCONNECT));
	return 0;
}

static int
s_conn_delete(struct pmrep_conn *conn)
{
	struct sim_end *e = (struct sim_end *)conn;
	if (!e->local_closed)
		(void) s_conn_disconnect(conn);
	e->deleted = true;
	e->nev = 0;
	end_maybe_free(e);
	return 0;
}

/* --------------------------------------------------------------- CQ */

static bool
cq_ready(void *arg)
{
	return ((struct sim_cq *)arg)->event;
}

static void
cq_consume(struct sim_cq *cq)
{
	cq->event = false;
	fd_drain(cq->base.fd);
}

static int
s_cq_wait(struct pmrep_cq *cq, int timeout_ms)
{
	struct sim_cq *c = (struct sim_cq *)cq;
	int ret = sim_wait(cq_ready, c, timeout_ms);
	if (ret == 0)
		cq_consume(c);
	return ret;
}

struct any_arg {
	struct pmrep_cq *const *cqs;
	int n;
};

static bool
any_ready(void *arg)
{
	struct any_arg *a = arg;
	for (int i = 0; i < a->n; i++)
		if (((struct sim_cq *)a->cqs[i])->event)
			return true;
	return false;
}

static int
s_cq_wait_any(struct pmrep_cq *const *cqs, int n, int timeout_ms)
{
	struct any_arg a = { cqs, n };
	int ret = sim_wait(any_ready, &a, timeout_ms);
	if (ret)
		return ret;
	for (int i = 0; i < n; i++) {
		struct sim_cq *c = (struct sim_cq *)cqs[i];
		if (c->event)
			cq_consume(c);
	}
	return 0;
}

static int
s_cq_get_completions(struct pmrep_cq *cq, struct pmrep_completion *out,
		int max, int *n)
{
	struct sim_cq *c = (struct sim_cq *)cq;
	*n = 0;
	while (*n < max && c->n > 0) {
		out[(*n)++] = c->c[c->head];
		c->head = (c->head + 1) % c->cap;
		c->n--;
	}
	return *n ? 0 : PMREP_E_NO_COMPLETION;
}

/* ------------------------------------------------------------- post */

static int
s_post(const struct pmrep_op_args *a)
{
	struct sim_end *e = (struct sim_end *)a->conn;
	if (e->local_closed || sim_proc_crashed(e->proc)) {
		/* a QP in error: every request completes flushed */
		push_cqe(e, a->op_context, a->op, PMREP_WC_FLUSHED, 0);
		return 0;
	}
	struct sim_pkt *p;
	switch (a->op) {
	case PMREP_OP_RECV:
		return add_recv(e->recvs, &e->nrecv, a->local, a->local_offset,
				a->len, a->op_context);
	case PMREP_OP_WRITE:
	case PMREP_OP_SEND:
		if (a->with_imm)
			return s_nosupp("an immediate");
		p = pkt_new(a->op == PMREP_OP_WRITE ? PK_WRITE : PK_SEND);
		p->len = a->len;
		if (a->len) {
			p->data = malloc(a->len);
			if (p->data == NULL)
				abort();
			memcpy(p->data, (uint8_t *)a->local->ptr + a->local_offset,
					a->len);
		}
		if (a->remote) {
			p->raddr = a->remote->raddr + a->remote_offset;
			p->rkey = a->remote->rkey;
		}
		break;
	case PMREP_OP_FLUSH:
		p = pkt_new(PK_FLUSH);
		p->raddr = a->remote->raddr + a->remote_offset;
		p->rkey = a->remote->rkey;
		p->len = a->len;
		p->ftype = a->flush_type;
		break;
	case PMREP_OP_READ:
		p = pkt_new(PK_READ);
		p->raddr = a->remote->raddr + a->remote_offset;
		p->rkey = a->remote->rkey;
		p->len = a->len;
		p->rdst = a->local;
		p->rdst_off = a->local_offset;
		break;
	default:
		return s_nosupp("this operation (atomic write)");
	}
	p->op = a->op;
	p->signaled = a->signaled;
	p->ctx = a->op_context;
	enqueue(e, p);
	return 0;
}

/* ------------------------------------------------------- delivery */

static bool
head_deliverable(struct sim_end *s, long long now)
{
	struct sim_pkt *p = s->qh;
	if (p == NULL || p->release > now)
		return false;
	if (p->kind == PK_SEND) {
		struct sim_end *d = end_get(s->peer_id);
		if (d && !d->local_closed && d->nrecv == 0)
			return false;	/* receiver not ready: RNR retry */
	}
	return true;
}

/*
 * the region a packet arriving at end `at` reaches with `rkey` for `usage`
 * (a window of that end with the usage, or a region by its own key
 * without MW_BIND), or NULL
 */
static struct sim_mr *
mr_find(uint32_t rkey, uint64_t addr, size_t len, uint64_t at, int usage)
{
	struct sim_mr *m = NULL;
	if (rkey >= SIM_MW_KEY_BASE) {
		for (struct sim_mw *w = P.mws; w; w = w->next) {
			if (w->base.rkey != rkey)
				continue;
			if (w->end_id == at && (w->base.usage & usage) == usage)
				m = w->mr;
			break;
		}
	} else if (rkey < MAX_MRS && P.mrs[rkey] &&
			!(P.mrs[rkey]->base.usage & PMREP_MR_USAGE_MW_BIND)) {
		m = P.mrs[rkey];
	}
	if (m == NULL)
		return NULL;
	if (addr < m->base.raddr || addr - m->base.raddr > m->base.size ||
			len > m->base.size - (addr - m->base.raddr))
		return NULL;
	return m;
}

static void
sender_done(struct sim_end *s, struct sim_pkt *p, bool ack)
{
	if (!ack) {
		if (p->orphan) {
			pkt_free(p);
		} else {
			p->next = s->limbo;	/* never acknowledged */
			s->limbo = p;
		}
		return;
	}
	if (!p->orphan && p->signaled)
		push_cqe(s, p->ctx, p->op, PMREP_WC_SUCCESS, 0);
	pkt_free(p);
}

static int
msg_type_of(const struct sim_pkt *p)
{
	struct repl_msg m;
	if (p->kind != PK_SEND || repl_msg_decode(p->data, p->len, &m) != 0)
		return 0;
	return (int)m.type;
}

/*
 * the effect of packet `p` (already off the queue of `s`) at its
 * destination. Returns false when the sender must not be acknowledged
 * (the destination is gone, or the connection broke meanwhile).
 */
static bool
apply(struct sim_end *s, struct sim_pkt *p)
{
	struct sim_end *d = end_get(s->peer_id);
	switch (p->kind) {
	case PK_CONNECT: {
		struct sim_ep *ep = NULL;
		for (int i = 0; i < MAX_EPS; i++)
			if (P.eps[i] && P.eps[i]->base.port == p->port)
				ep = P.eps[i];
		if (ep == NULL || sim_proc_crashed(ep->proc)) {
			end_kill(s, PMREP_CONN_UNREACHABLE);
			return false;
		}
		struct sim_req *r = calloc(1, sizeof(*r));
		if (r == NULL)
			abort();
		r->base.peer = ep->base.peer;
		r->base.passive = true;
		r->base.pdata_len = p->pdata_len;
		memcpy(r->base.pdata, p->pdata, p->pdata_len);
		r->proc = ep->proc;
		r->active_id = s->id;
		if (ep->pending_tail)
			ep->pending_tail->next = r;
		else
			ep->pending = r;
		ep->pending_tail = r;
		fd_signal(ep->base.fd);
		P.activity++;
		return true;
	}
	case PK_ACCEPT:
		if (d == NULL || d->local_closed) {
			end_kill(s, PMREP_CONN_LOST);	/* the initiator left */
			return false;
		}
		d->peer_id = s->id;
		d->base.pdata_len = p->pdata_len;
		memcpy(d->base.pdata, p->pdata, p->pdata_len);
		push_event(d, PMREP_CONN_ESTABLISHED);
		return true;
	case PK_DISCONNECT:
		if (d) {
			end_kill(d, PMREP_CONN_CLOSED);
			end_maybe_free(d);
		}
		s->dead = true;
		return true;
	default:
		break;
	}
	if (d == NULL || d->local_closed)
		return false;
	if (p->kind == PK_SEND) {
		struct sim_recv rv = d->recvs[0];
		memmove(d->recvs, d->recvs + 1,
				(size_t)(d->nrecv - 1) * sizeof(d->recvs[0]));
		d->nrecv--;
		if (p->len > rv.len) {
			push_cqe(d, rv.ctx, PMREP_OP_RECV, PMREP_WC_LOCAL_LENGTH_ERROR, 0);
			cut_pair(s);
			return false;
		}
		if (p->len)
			memcpy((uint8_t *)rv.mr->ptr + rv.off, p->data, p->len);
		push_cqe(d, rv.ctx, PMREP_OP_RECV, PMREP_WC_SUCCESS,
				(uint32_t)p->len);
		return true;
	}
	if (p->kind == PK_READ) {
		struct sim_mr *m = mr_find(p->rkey, p->raddr, p->len, d->id,
				PMREP_MR_USAGE_READ_SRC);
		if (m == NULL || m->proc != d->proc) {
			push_cqe(s, p->ctx, p->op, PMREP_WC_REMOTE_ACCESS_ERROR, 0);
			p->orphan = true;
			cut_pair(s);
			return false;
		}
		memcpy((uint8_t *)p->rdst->ptr + p->rdst_off,
				(void *)(uintptr_t)p->raddr, p->len);
		P.activity++;
		return true;
	}
	int usage = p->kind == PK_WRITE ? PMREP_MR_USAGE_WRITE_DST :
		p->ftype == PMREP_FLUSH_TYPE_PERSISTENT ?
		PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT :
		PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY;
	struct sim_mr *m = mr_find(p->rkey, p->raddr, p->len, d->id, usage);
	if (m == NULL || m->proc != d->proc) {
		push_cqe(s, p->ctx, p->op, PMREP_WC_REMOTE_ACCESS_ERROR, 0);
		p->orphan = true;
		cut_pair(s);
		return false;
	}
	if (p->kind == PK_WRITE) {
		if (m->in_file < 0)
			m->in_file = sim_file_of_addr(m->proc, m->base.ptr) != NULL;
		if (m->in_file && P.landing && p->len) {
			struct sim_file *f = sim_file_of_addr(m->proc,
					(void *)(uintptr_t)p->raddr);
			if (f)
				P.landing(m->proc, s->id, s->tag, f,
						(size_t)(p->raddr -
						(uint64_t)(uintptr_t)f->pmem_base),
						p->data, p->len);
		}
		memcpy((void *)(uintptr_t)p->raddr, p->data, p->len);
		P.activity++;
		return true;
	}
	/* flush */
	if (p->ftype == PMREP_FLUSH_TYPE_PERSISTENT) {
		if (sim_remote_persist_event(m->proc, (void *)(uintptr_t)p->raddr,
				p->len))
			return false;	/* the target crashed at it */
		if (m->base.persist && m->base.persist(m->base.persist_ctx,
				(void *)(uintptr_t)p->raddr, p->len) != 0) {
			/* the persist failed: NAK, never an ACK (as tcp) */
			push_cqe(s, p->ctx, p->op, PMREP_WC_REMOTE_OPERATION_ERROR, 0);
			p->orphan = true;
			cut_pair(s);
			return false;
		}
	}
	return true;
}

bool
sim_prov_deliver_one(struct sim_rng *rng, bool faults,
		enum sim_fault (*fault_for)(uint64_t idx, void *arg), void *arg)
{
	long long now = sim_now();
	struct sim_end *cand[256];
	unsigned nc = 0;
	for (uint64_t id = 1; id < P.nends && nc < 256; id++) {
		struct sim_end *e = P.ends[id];
		if (e && head_deliverable(e, now))
			cand[nc++] = e;
	}
	if (nc == 0)
		return false;
	struct sim_end *s = cand[nc > 1 ? sim_rng_below(rng, nc) : 0];
	struct sim_pkt *p = s->qh;
	uint64_t idx = sim_deliveries();
	enum sim_fault f = faults ? fault_for(idx, arg) : SIM_F_NONE;

	struct sim_end *d = end_get(s->peer_id);
	struct sim_delivery rec = { .from_proc = s->proc,
		.to_proc = d ? d->proc : SIM_MAX_PROCS, .kind = (int)p->kind,
		.msg_type = msg_type_of(p), .conn = s->peer_id, .src_conn = s->id,
		.src_tag = s->tag, .fault = f };
	if (p->kind == PK_CONNECT) {
		rec.to_proc = SIM_MAX_PROCS;
		for (int i = 0; i < MAX_EPS; i++)
			if (P.eps[i] && P.eps[i]->base.port == p->port)
				rec.to_proc = P.eps[i]->proc;
	}
	sim_record_delivery(&rec);
	sim_log("deliver #%llu %s%s%s %u->%u len %zu%s%s",
			(unsigned long long)idx, pk_names[p->kind],
			rec.msg_type ? " msg " : "",
			rec.msg_type ? (rec.msg_type == 1 ? "AUTH" :
				rec.msg_type == 2 ? "ACCEPT" :
				rec.msg_type == 3 ? "REFUSE" :
				rec.msg_type == 4 ? "PERSIST" :
				rec.msg_type == 5 ? "PERSIST_REPLY" :
				rec.msg_type == 6 ? "CLOSE" :
				rec.msg_type == 7 ? "CLOSE_REPLY" : "other") : "",
			s->proc, rec.to_proc, p->len, f ? " FAULT " : "",
			f ? sim_fault_str(f) : "");
	P.activity++;

	if (f == SIM_F_DELAY) {
		extern int sim_cfg_delay_ms(void);
		p->release = now + sim_cfg_delay_ms();
		return true;
	}
	if (f == SIM_F_DROP) {
		/* RC never skips a packet: a lost one stalls its direction
		 * (retries that never get through) until the connection
		 * ends; what follows it waits behind it */
		p->release = LLONG_MAX;
		return true;
	}
	/* off the queue */
	s->qh = p->next;
	if (s->qh == NULL)
		s->qt = NULL;
	p->next = NULL;
	uint64_t sid = s->id;

	if (f == SIM_F_CUT_AT) {
		sender_done(s, p, false);
		cut_pair(s);
		return true;
	}
	bool ack = apply(s, p);
	s = end_get(sid);	/* a kill may have freed it */
	if (s == NULL) {
		pkt_free(p);
		return true;
	}
	if (f == SIM_F_DUP && ack && p->kind == PK_SEND) {
		struct sim_end *d2 = end_get(s->peer_id);
		if (d2 && !d2->local_closed && d2->nrecv > 0) {
			(void) apply(s, p);
			s = end_get(sid);
			if (s == NULL) {
				pkt_free(p);
				return true;
			}
		}
	}
	if (f == SIM_F_CUT_AFTER) {
		sender_done(s, p, false);
		cut_pair(s);
		return true;
	}
	if (s->dead && p->kind != PK_DISCONNECT) {
		/* the connection ended meanwhile: flushed */
		if (!p->orphan)
			push_cqe(s, p->ctx, p->op, PMREP_WC_FLUSHED, 0);
		pkt_free(p);
		end_maybe_free(s);
		return true;
	}
	sender_done(s, p, ack);
	end_maybe_free(s);
	return true;
}

long long
sim_prov_next_release(void)
{
	long long now = sim_now(), best = -1;
	for (uint64_t id = 1; id < P.nends; id++) {
		struct sim_end *e = P.ends[id];
		if (e && e->qh && e->qh->release > now &&
				e->qh->release != LLONG_MAX &&
				(best < 0 || e->qh->release < best))
			best = e->qh->release;
	}
	return best;
}

void
sim_prov_cut_proc(unsigned proc)
{
	for (uint64_t id = 1; id < P.nends; id++) {
		struct sim_end *e = P.ends[id];
		if (e && e->proc == proc && !e->dead)
			cut_pair(e);
	}
}

bool
sim_prov_idle(void)
{
	for (uint64_t id = 1; id < P.nends; id++)
		if (P.ends[id] && P.ends[id]->qh)
			return false;
	return true;
}

void sim_set_landing_hook(sim_landing_fn fn) { P.landing = fn; }
void sim_set_conn_tag(unsigned tag) { P.tag = tag; }

void
sim_prov_reset(void)
{
	sim_landing_fn landing = P.landing;
	for (uint64_t id = 1; id < P.nends; id++)
		if (P.ends[id])
			end_free(P.ends[id]);
	free(P.ends);
	for (int i = 0; i < MAX_EPS; i++) {
		if (P.eps[i]) {
			close(P.eps[i]->base.fd);
			free(P.eps[i]);
		}
	}
	memset(&P, 0, sizeof(P));
	P.landing = landing;	/* the harness's, for every schedule */
}

/* ------------------------------------------------------------ windows */

static int
s_mw_bind(struct pmrep_conn *conn, struct pmrep_mr_local *mr, int usage,
		struct pmrep_mw **mw)
{
	struct sim_end *e = (struct sim_end *)conn;
	if (e->dead || e->local_closed)
		return PMREP_E_CONN_LOST;
	struct sim_mw *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return PMREP_E_NOMEM;
	if (P.next_mw_key < SIM_MW_KEY_BASE)
		P.next_mw_key = SIM_MW_KEY_BASE;
	w->base.rkey = P.next_mw_key++;
	w->base.usage = usage;
	w->mr = (struct sim_mr *)mr;
	w->end_id = e->id;
	w->next = P.mws;
	P.mws = w;
	*mw = &w->base;
	return 0;
}

static int
s_mw_invalidate(struct pmrep_mw *mw)
{
	for (struct sim_mw **pp = &P.mws; *pp; pp = &(*pp)->next) {
		if (*pp == (struct sim_mw *)mw) {
			*pp = (*pp)->next;
			break;
		}
	}
	return 0;
}

const struct pmrep_provider_ops sim_provider_ops = {
	.peer_delete = s_peer_delete,
	.peer_handle_async_event = s_peer_handle_async_event,
	.mr_reg = s_mr_reg,
	.mr_dereg = s_mr_dereg,
	.comp_channel_new = s_comp_channel_new,
	.comp_channel_delete = s_comp_channel_delete,
	.comp_channel_wait = s_comp_channel_wait,
	.srq_new = s_srq_new,
	.srq_delete = s_srq_delete,
	.srq_recv = s_srq_recv,
	.ep_listen = s_ep_listen,
	.ep_shutdown = s_ep_shutdown,
	.ep_next_conn_req = s_ep_next_conn_req,
	.conn_req_new = s_conn_req_new,
	.conn_req_recv = s_conn_req_recv,
	.conn_req_connect = s_conn_req_connect,
	.conn_req_delete = s_conn_req_delete,
	.conn_next_event = s_conn_next_event,
	.conn_wait = s_conn_wait,
	.conn_disconnect = s_conn_disconnect,
	.conn_delete = s_conn_delete,
	.cq_wait = s_cq_wait,
	.cq_wait_any = s_cq_wait_any,
	.cq_get_completions = s_cq_get_completions,
	.post = s_post,
	.mw_bind = s_mw_bind,
	.mw_invalidate = s_mw_invalidate,
};
