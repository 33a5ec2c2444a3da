/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mock_verbs.c -- the mocked libibverbs: devices, contexts (each inside a
 * real struct verbs_context), PDs, MRs, completion channels, CQs, QPs (with
 * the ibv_qp_ex / ibv_wr_* table), SRQs and async events.
 * Past ~800 lines: the mocked library's whole surface the unit tests use.
 */
#include <endian.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmrep_config.h"
#include "mock_int.h"

/* ------------------------------------------------------------ structures */

#define MAX_DEVS 4

struct mock_dev {
	struct ibv_device dev;
	uint64_t guid;
};

struct async_rec {
	struct async_rec *next;
	struct ibv_async_event ev;
	struct mock_ctx *ctx;
	enum mock_kind ekind;		/* MOCK_QP / MOCK_CQ / MOCK_SRQ, or -1 */
	struct mock_obj *eobj;
};

struct mock_ctx {
	struct mock_obj o;
	int dev_index;
	int cmd_fd;
	struct mock_fdq async_q;
	struct async_rec *ahead, *atail;	/* queued, not got */
	struct verbs_context vctx;
};

struct mock_devlist {
	struct mock_obj o;
	struct ibv_device **list;
};

struct mock_pd {
	struct mock_obj o;
	struct ibv_pd pd;
	int users;
};

struct mock_mr {
	struct mock_obj o;
	struct ibv_mr mr;
	struct mock_pd *pd;
	unsigned int access;
	uint64_t iova;
	int mws;		/* windows bound to it: dereg is EBUSY */
};

struct mock_mw {
	struct mock_obj o;
	struct ibv_mw mw;
	struct mock_pd *pd;
	struct mock_mr *mr;	/* bound to (NULL: not bound) */
	const void *qp;		/* type 2: the QP it was bound through */
};

struct cq_ev {
	struct cq_ev *next;
	struct mock_cq *cq;
};

struct mock_cc {
	struct mock_obj o;
	struct ibv_comp_channel ch;
	struct mock_fdq q;
	struct cq_ev *head, *tail;
};

struct wce {
	struct ibv_wc wc;
	uint64_t qp_serial;		/* frees SQ slots of this QP... */
	uint64_t sq_seq;		/* ...up to this sequence number */
	bool frees_sq;
};

struct mock_cq {
	struct mock_obj o;
	struct ibv_cq cq;
	struct mock_cc *cc;
	struct wce *ring;
	int cap, head, count;
	bool armed;
	unsigned got, acked;
	int users;
	unsigned overruns;
	unsigned async_unacked;
};

struct swr {
	uint64_t seq;
	uint64_t wr_id;
	bool signaled;
	bool done;
	enum ibv_wc_opcode wc_op;
	uint32_t byte_len;
	bool bad_lkey;
};

struct rwr {
	uint64_t wr_id;
	int num_sge;
	struct ibv_sge sge[MOCK_MAX_SGE];
};

struct rq {
	struct rwr *v;
	int n, cap;
};

struct mock_srq {
	struct mock_obj o;
	struct ibv_srq srq;
	struct mock_pd *pd;
	struct rq rq;
	uint32_t max_wr, max_sge, limit;
	int users;
	unsigned async_unacked;
};

struct mock_qp {
	struct mock_obj o;
	struct ibv_qp_ex qpx;		/* qpx.qp_base is the user's ibv_qp */
	bool is_ex;
	uint64_t send_ops_flags;
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	struct mock_pd *pd;
	struct mock_cq *scq, *rcq;
	struct mock_srq *srq;
	struct rdma_cm_id *cm_id;
	struct swr *sq;
	int sq_n;
	uint64_t seq;
	struct rq rq;
	/* ibv_wr_* batch */
	bool in_batch;
	struct mock_wr *batch;
	int batch_n, batch_cap;
	unsigned async_unacked;
};

/* ---------------------------------------------------------------- state */

static struct mock_dev Devs[MAX_DEVS];
static int Ndevs = 1;
static struct ibv_device_attr_ex Dev_attr;
static struct ibv_port_attr Port_attr;
static uint32_t Max_inline = 256;
static int Cq_grant_max = 0;	/* 0: a CQ gets the entries it asks for */
static int Cq_last_requested = 0;
static bool Auto_complete;
static uint32_t Next_key;
static uint32_t Next_qpn;
static struct mock_ctx *Cm_ctx;
static struct ibv_pd *Cm_pd;
static struct async_rec *Async_got;	/* got, not acked */

struct range {
	uintptr_t start, end;
};
static struct range Unpinnable[8];
static int Nunpinnable;

static struct mock_wr *Sends, *Recvs;
static size_t Nsends, Nrecvs, Capsends, Caprecvs;

static void defaults(void);

/* ---------------------------------------------------------- user pointer */

void *mock_verbs_user_ptr(struct mock_obj *o);

void *
mock_verbs_user_ptr(struct mock_obj *o)
{
	switch (o->kind) {
	case MOCK_DEVICE_LIST:
		return ((struct mock_devlist *)o)->list;
	case MOCK_CONTEXT:
		return &((struct mock_ctx *)o)->vctx.context;
	case MOCK_PD:
		return &((struct mock_pd *)o)->pd;
	case MOCK_MR:
		return &((struct mock_mr *)o)->mr;
	case MOCK_COMP_CHANNEL:
		return &((struct mock_cc *)o)->ch;
	case MOCK_CQ:
		return &((struct mock_cq *)o)->cq;
	case MOCK_QP:
		return &((struct mock_qp *)o)->qpx.qp_base;
	case MOCK_SRQ:
		return &((struct mock_srq *)o)->srq;
	case MOCK_MW:
		return &((struct mock_mw *)o)->mw;
	default:
		return NULL;
	}
}

#define GET(kind, type, ptr, fn) \
	((type *)(void *)mock_obj_get(kind, ptr, fn))

struct mock_ctx *
mock_ctx_get(struct ibv_context *ctx, const char *fn)
{
	return GET(MOCK_CONTEXT, struct mock_ctx, ctx, fn);
}

static struct mock_pd *
pd_get(struct ibv_pd *pd, const char *fn)
{
	return GET(MOCK_PD, struct mock_pd, pd, fn);
}

static struct mock_cq *
cq_get(struct ibv_cq *cq, const char *fn)
{
	return GET(MOCK_CQ, struct mock_cq, cq, fn);
}

static struct mock_qp *
qp_get(struct ibv_qp *qp, const char *fn)
{
	return GET(MOCK_QP, struct mock_qp, qp, fn);
}

static struct mock_srq *
srq_get(struct ibv_srq *srq, const char *fn)
{
	return GET(MOCK_SRQ, struct mock_srq, srq, fn);
}

static struct mock_qp *
qpx_get(struct ibv_qp_ex *qpx, const char *fn)
{
	return qp_get(qpx ? &qpx->qp_base : NULL, fn);
}

static struct mock_qp *
qp_by_serial(uint64_t serial)
{
	for (struct mock_obj *o = mock_obj_head(MOCK_QP); o; o = o->next)
		if (o->serial == serial)
			return (struct mock_qp *)o;
	return NULL;
}

/* ------------------------------------------------------------- WR log */

static struct mock_wr *
log_add(bool recv)
{
	struct mock_wr **v = recv ? &Recvs : &Sends;
	size_t *n = recv ? &Nrecvs : &Nsends;
	size_t *cap = recv ? &Caprecvs : &Capsends;

	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*v = mock_realloc(*v, *cap * sizeof(**v));
	}
	memset(&(*v)[*n], 0, sizeof(**v));
	return &(*v)[(*n)++];
}

size_t
mock_send_count(void)
{
	MOCK_LOCK();
	size_t n = Nsends;
	MOCK_UNLOCK();
	return n;
}

const struct mock_wr *
mock_send_wr(size_t i)
{
	MOCK_LOCK();
	if (i >= Nsends)
		mock_die("mock_send_wr(%zu): only %zu send WRs posted", i, Nsends);
	const struct mock_wr *w = &Sends[i];
	MOCK_UNLOCK();
	return w;
}

const struct mock_wr *
mock_send_last(void)
{
	MOCK_LOCK();
	if (Nsends == 0)
		mock_die("mock_send_last: no send WR posted");
	const struct mock_wr *w = &Sends[Nsends - 1];
	MOCK_UNLOCK();
	return w;
}

size_t
mock_recv_count(void)
{
	MOCK_LOCK();
	size_t n = Nrecvs;
	MOCK_UNLOCK();
	return n;
}

const struct mock_wr *
mock_recv_wr(size_t i)
{
	MOCK_LOCK();
	if (i >= Nrecvs)
		mock_die("mock_recv_wr(%zu): only %zu receive WRs posted", i,
				Nrecvs);
	const struct mock_wr *w = &Recvs[i];
	MOCK_UNLOCK();
	return w;
}

const struct mock_wr *
mock_recv_last(void)
{
	MOCK_LOCK();
	if (Nrecvs == 0)
		mock_die("mock_recv_last: no receive WR posted");
	const struct mock_wr *w = &Recvs[Nrecvs - 1];
	MOCK_UNLOCK();
	return w;
}

void
mock_wr_log_clear(void)
{
	MOCK_LOCK();
	Nsends = Nrecvs = 0;
	MOCK_UNLOCK();
}

/* ------------------------------------------------------------ async */

static void
async_queue(struct mock_ctx *c, enum ibv_event_type type,
		enum mock_kind ekind, struct mock_obj *eobj, int port)
{
	struct async_rec *r = mock_alloc(sizeof(*r));

	r->ev.event_type = type;
	r->ctx = c;
	r->ekind = ekind;
	r->eobj = eobj;
	switch ((int)ekind) {
	case MOCK_QP:
		r->ev.element.qp = mock_obj_user(eobj);
		break;
	case MOCK_CQ:
		r->ev.element.cq = mock_obj_user(eobj);
		break;
	case MOCK_SRQ:
		r->ev.element.srq = mock_obj_user(eobj);
		break;
	default:
		r->ev.element.port_num = port;
		break;
	}
	if (c->atail)
		c->atail->next = r;
	else
		c->ahead = r;
	c->atail = r;
	mock_fdq_inc(&c->async_q);
}

static unsigned *
async_counter(struct mock_obj *o)
{
	switch (o->kind) {
	case MOCK_QP:
		return &((struct mock_qp *)o)->async_unacked;
	case MOCK_CQ:
		return &((struct mock_cq *)o)->async_unacked;
	case MOCK_SRQ:
		return &((struct mock_srq *)o)->async_unacked;
	default:
		return NULL;
	}
}

/* drop queued (not got) async events of an object being destroyed */
static void
async_drop_for(struct mock_ctx *c, struct mock_obj *o)
{
	struct async_rec **pp = &c->ahead;

	c->atail = NULL;
	while (*pp) {
		struct async_rec *r = *pp;

		if (o == NULL || r->eobj == o) {
			*pp = r->next;
			mock_fdq_dec(&c->async_q);
			mock_free(r);
		} else {
			c->atail = r;
			pp = &r->next;
		}
	}
}

int
mock_verbs_unacked_async(void)
{
	int n = 0;

	for (struct async_rec *r = Async_got; r; r = r->next)
		n++;
	return n;
}

int
ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_ctx *c = mock_ctx_get(context, "ibv_get_async_event");
	if (event == NULL)
		mock_die("ibv_get_async_event: NULL event");
	int err = mock_enter(MF_IBV_GET_ASYNC_EVENT, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	if (c->ahead == NULL) {
		if (!mock_fd_nonblocking(c->async_q.fd))
			mock_die("ibv_get_async_event: no event queued and the "
					"async_fd is blocking: the real call would "
					"block forever");
		errno = EAGAIN;
		MOCK_UNLOCK();
		return -1;
	}
	struct async_rec *r = c->ahead;
	c->ahead = r->next;
	if (c->ahead == NULL)
		c->atail = NULL;
	mock_fdq_dec(&c->async_q);
	r->next = Async_got;
	Async_got = r;
	if (r->eobj) {
		unsigned *cnt = async_counter(r->eobj);
		if (cnt)
			(*cnt)++;
	}
	*event = r->ev;
	MOCK_UNLOCK();
	return 0;
}

void
ibv_ack_async_event(struct ibv_async_event *event)
{
	int rc = 0;

	MOCK_LOCK();
	if (event == NULL)
		mock_die("ibv_ack_async_event: NULL event");
	mock_enter(MF_IBV_ACK_ASYNC_EVENT, &rc);
	/* oldest matching got event (the list is newest first) */
	struct async_rec **match = NULL;
	for (struct async_rec **pp = &Async_got; *pp; pp = &(*pp)->next) {
		struct async_rec *r = *pp;

		if (r->ev.event_type == event->event_type &&
				memcmp(&r->ev.element, &event->element,
					sizeof(event->element)) == 0)
			match = pp;
	}
	if (match == NULL)
		mock_die("ibv_ack_async_event: %s was never got or is acked "
				"twice", ibv_event_type_str(event->event_type));
	struct async_rec *r = *match;
	*match = r->next;
	if (r->eobj) {
		unsigned *cnt = async_counter(r->eobj);
		if (cnt)
			(*cnt)--;
	}
	mock_free(r);
	MOCK_UNLOCK();
}

static void
check_async_unacked(struct mock_obj *o, unsigned n, const char *fn)
{
	if (n)
		mock_die("%s: %u async event(s) on this %s are not "
				"acknowledged: the real call blocks forever", fn,
				n, mock_kind_name(o->kind));
}

void
mock_async_qp(struct ibv_qp *qp, enum ibv_event_type type)
{
	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "mock_async_qp");
	async_queue(mock_ctx_get(qp->context, "mock_async_qp"), type, MOCK_QP,
			&q->o, 0);
	if (type == IBV_EVENT_QP_FATAL)
		mock_qp_to_state(qp, IBV_QPS_ERR);
	MOCK_UNLOCK();
}

void
mock_async_cq(struct ibv_cq *cq, enum ibv_event_type type)
{
	MOCK_LOCK();
	struct mock_cq *c = cq_get(cq, "mock_async_cq");
	async_queue(mock_ctx_get(cq->context, "mock_async_cq"), type, MOCK_CQ,
			&c->o, 0);
	MOCK_UNLOCK();
}

void
mock_async_srq(struct ibv_srq *srq, enum ibv_event_type type)
{
	MOCK_LOCK();
	struct mock_srq *s = srq_get(srq, "mock_async_srq");
	async_queue(mock_ctx_get(srq->context, "mock_async_srq"), type,
			MOCK_SRQ, &s->o, 0);
	MOCK_UNLOCK();
}

void
mock_async_port(struct ibv_context *ctx, enum ibv_event_type type, int port)
{
	MOCK_LOCK();
	async_queue(mock_ctx_get(ctx, "mock_async_port"), type,
			(enum mock_kind)-1, NULL, port);
	MOCK_UNLOCK();
}

void
mock_async_device(struct ibv_context *ctx, enum ibv_event_type type)
{
	MOCK_LOCK();
	async_queue(mock_ctx_get(ctx, "mock_async_device"), type,
			(enum mock_kind)-1, NULL, 0);
	MOCK_UNLOCK();
}

int
mock_async_pending(struct ibv_context *ctx)
{
	MOCK_LOCK();
	int n = mock_ctx_get(ctx, "mock_async_pending")->async_q.pending;
	MOCK_UNLOCK();
	return n;
}

/* -------------------------------------------------------------- CQ core */

static void
cq_notify(struct mock_cq *cq)
{
	cq->armed = false;
	if (cq->cc == NULL)
		return;
	struct cq_ev *e = mock_alloc(sizeof(*e));

	e->cq = cq;
	if (cq->cc->tail)
		cq->cc->tail->next = e;
	else
		cq->cc->head = e;
	cq->cc->tail = e;
	mock_fdq_inc(&cq->cc->q);
}

static void
cq_push(struct mock_cq *cq, const struct wce *e)
{
	if (cq->count == cq->cap) {
		cq->overruns++;
		async_queue(mock_container_of(cq->cq.context, struct mock_ctx,
					vctx.context), IBV_EVENT_CQ_ERR, MOCK_CQ,
				&cq->o, 0);
		return;
	}
	cq->ring[(cq->head + cq->count) % cq->cap] = *e;
	cq->count++;
	if (cq->armed)
		cq_notify(cq);
}

/* drop queued CQ events of `cq` (or all, cq NULL) from a channel */
static void
cc_drop_for(struct mock_cc *cc, struct mock_cq *cq)
{
	struct cq_ev **pp = &cc->head;

	cc->tail = NULL;
	while (*pp) {
		struct cq_ev *e = *pp;

		if (cq == NULL || e->cq == cq) {
			*pp = e->next;
			mock_fdq_dec(&cc->q);
			mock_free(e);
		} else {
			cc->tail = e;
			pp = &e->next;
		}
	}
}

int
mock_verbs_unacked_cq(void)
{
	int n = 0;

	for (struct mock_obj *o = mock_obj_head(MOCK_CQ); o; o = o->next) {
		struct mock_cq *c = (struct mock_cq *)o;
		n += (int)(c->got - c->acked);
	}
	return n;
}

/* ------------------------------------------------------------- QP core */

static enum ibv_wc_opcode
wc_opcode_of(enum ibv_wr_opcode op)
{
	switch ((int)op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
		return IBV_WC_SEND;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	case IBV_WR_FLUSH:
		return IBV_WC_FLUSH;
#endif
	default:
		return MOCK_WC_OPCODE_UNDEFINED;
	}
}

static void qp_to_state(struct mock_qp *q, enum ibv_qp_state st);

/* complete the i-th SQ entry with `status` */
static void
sq_complete(struct mock_qp *q, int i, enum ibv_wc_status status)
{
	struct swr *s = &q->sq[i];

	s->done = true;
	if (status == IBV_WC_SUCCESS && !s->signaled)
		return;
	struct wce e = { 0 };

	e.wc.wr_id = s->wr_id;
	e.wc.status = status;
	e.wc.opcode = status == IBV_WC_SUCCESS ? s->wc_op :
		MOCK_WC_OPCODE_UNDEFINED;
	e.wc.byte_len = s->byte_len;
	e.wc.qp_num = q->qpx.qp_base.qp_num;
	e.wc.vendor_err = status == IBV_WC_SUCCESS ? 0 : 0x1234;
	e.qp_serial = q->o.serial;
	e.sq_seq = s->seq;
	e.frees_sq = true;
	cq_push(q->scq, &e);
}

static void
qp_flush(struct mock_qp *q)
{
	for (int i = 0; i < q->sq_n; i++)
		if (!q->sq[i].done)
			sq_complete(q, i, IBV_WC_WR_FLUSH_ERR);
	if (q->srq == NULL) {
		for (int i = 0; i < q->rq.n; i++) {
			struct wce e = { 0 };

			e.wc.wr_id = q->rq.v[i].wr_id;
			e.wc.status = IBV_WC_WR_FLUSH_ERR;
			e.wc.opcode = MOCK_WC_OPCODE_UNDEFINED;
			e.wc.qp_num = q->qpx.qp_base.qp_num;
			cq_push(q->rcq, &e);
		}
		q->rq.n = 0;
	}
}

static void
qp_to_state(struct mock_qp *q, enum ibv_qp_state st)
{
	q->qpx.qp_base.state = st;
	if (st == IBV_QPS_ERR)
		qp_flush(q);
	else if (st == IBV_QPS_RESET) {
		q->sq_n = 0;
		if (q->srq == NULL)
			q->rq.n = 0;
	}
}

void
mock_qp_to_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	qp_to_state(qp_get(qp, "mock_qp_to_state"), state);
}

/* after a polled WC: free SQ slots of its QP up to its sequence number */
static void
sq_release(const struct wce *e)
{
	if (!e->frees_sq)
		return;
	struct mock_qp *q = qp_by_serial(e->qp_serial);

	if (q == NULL)
		return;
	int k = 0;

	while (k < q->sq_n && q->sq[k].seq <= e->sq_seq && q->sq[k].done)
		k++;
	if (k) {
		memmove(q->sq, q->sq + k, (size_t)(q->sq_n - k) * sizeof(*q->sq));
		q->sq_n -= k;
	}
}

/* ---------------------------------------------------------- MR lookup */

static struct mock_mr *
mr_by_lkey(uint32_t lkey)
{
	for (struct mock_obj *o = mock_obj_head(MOCK_MR); o; o = o->next) {
		struct mock_mr *m = (struct mock_mr *)o;

		if (m->mr.lkey == lkey)
			return m;
	}
	return NULL;
}

/* is the SGE inside a live MR of `pd` with that lkey (and local write if
 * the data lands in it)? */
static bool
sge_ok(struct mock_pd *pd, const struct ibv_sge *sge, bool local_write)
{
	struct mock_mr *m = mr_by_lkey(sge->lkey);

	if (m == NULL || m->pd != pd || m->o.destroy_failed)
		return false;
	uintptr_t a = (uintptr_t)m->mr.addr;

	if (sge->addr < a || sge->addr + sge->length > a + m->mr.length ||
			sge->addr + sge->length < sge->addr)
		return false;
	if (local_write && !(m->access & IBV_ACCESS_LOCAL_WRITE))
		return false;
	return true;
}

static void
copy_out(struct mock_wr *w, const struct ibv_sge *sge, int n)
{
	for (int i = 0; i < n && w->data_len < MOCK_WR_DATA_MAX; i++) {
		uint32_t room = MOCK_WR_DATA_MAX - w->data_len;
		uint32_t len = sge[i].length < room ? sge[i].length : room;

		memcpy(w->data + w->data_len, (void *)(uintptr_t)sge[i].addr, len);
		w->data_len += len;
	}
}

static bool
opcode_sends_data(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
		op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
		op == IBV_WR_SEND_WITH_INV || op == IBV_WR_ATOMIC_WRITE;
}

/*
 * Check a send WR (already in `w`, with SGEs / inline data) against the QP;
 * sets w->length, w->bad_lkey and the data copy. Returns 0 or an errno.
 */
static int
send_wr_check(struct mock_qp *q, struct mock_wr *w, bool data_copied)
{
	bool inl = (w->send_flags & IBV_SEND_INLINE) != 0;

	if (w->num_sge < 0 || (uint32_t)w->num_sge > q->cap.max_send_sge ||
			w->num_sge > MOCK_MAX_SGE)
		return EINVAL;
	if (!data_copied) {
		w->length = 0;
		for (int i = 0; i < w->num_sge; i++)
			w->length += w->sge[i].length;
	}
	if (inl && w->length > q->cap.max_inline_data)
		return EINVAL;
	if (!inl && !data_copied) {
		bool lw = w->opcode == IBV_WR_RDMA_READ ||
			w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;

		for (int i = 0; i < w->num_sge; i++)
			if (!sge_ok(q->pd, &w->sge[i], lw))
				w->bad_lkey = true;
	}
	if (!data_copied && opcode_sends_data(w->opcode) &&
			(inl || !w->bad_lkey))
		copy_out(w, w->sge, w->num_sge);
	return 0;
}

/* post one checked send WR: append to the SQ and the log */
static void
send_wr_post(struct mock_qp *q, const struct mock_wr *w)
{
	struct mock_wr *l = log_add(false);

	*l = *w;
	struct swr *s = &q->sq[q->sq_n++];

	memset(s, 0, sizeof(*s));
	s->seq = ++q->seq;
	s->wr_id = w->wr_id;
	s->signaled = q->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
	s->wc_op = wc_opcode_of(w->opcode);
	s->byte_len = w->length;
	s->bad_lkey = w->bad_lkey;
	if (q->qpx.qp_base.state == IBV_QPS_ERR) {
		sq_complete(q, q->sq_n - 1, IBV_WC_WR_FLUSH_ERR);
	} else if (w->bind_err) {
		/* a refused bind is an error completion even unsignalled */
		s->signaled = true;
		sq_complete(q, q->sq_n - 1, IBV_WC_MW_BIND_ERR);
		qp_to_state(q, IBV_QPS_ERR);
	} else if (Auto_complete) {
		if (s->bad_lkey) {
			sq_complete(q, q->sq_n - 1, IBV_WC_LOC_PROT_ERR);
			qp_to_state(q, IBV_QPS_ERR);
		} else {
			sq_complete(q, q->sq_n - 1, IBV_WC_SUCCESS);
		}
	}
}

static void
fill_from_send_wr(struct mock_qp *q, struct mock_wr *w,
		const struct ibv_send_wr *wr)
{
	memset(w, 0, sizeof(*w));
	w->qp = &q->qpx.qp_base;
	w->qp_num = q->qpx.qp_base.qp_num;
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->num_sge = wr->num_sge;
	for (int i = 0; i < wr->num_sge && i < MOCK_MAX_SGE; i++)
		w->sge[i] = wr->sg_list[i];
	switch ((int)wr->opcode) {
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_SEND_WITH_IMM:
		w->has_imm = true;
		w->imm = be32toh(wr->imm_data);
		break;
	default:
		break;
	}
	switch ((int)wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_WRITE:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		break;
	default:
		break;
	}
}

static void mw_bind_wr(struct mock_qp *q, struct mock_wr *w,
		const struct ibv_send_wr *wr);

static int
mock_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		struct ibv_send_wr **bad_wr)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "ibv_post_send");
	if (bad_wr == NULL)
		mock_die("ibv_post_send: NULL bad_wr");
	*bad_wr = NULL;
	int err = mock_enter(MF_IBV_POST_SEND, &rc);
	if (err) {
		*bad_wr = wr;
		MOCK_UNLOCK();
		return err;
	}
	for (; wr; wr = wr->next) {
		struct mock_wr w;

		if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD &&
				qp->state != IBV_QPS_ERR)
			err = EINVAL;
		else if ((uint32_t)q->sq_n >= q->cap.max_send_wr)
			err = ENOMEM;
		else if (wr->num_sge > 0 && wr->sg_list == NULL)
			err = EINVAL;
		if (!err) {
			fill_from_send_wr(q, &w, wr);
			err = send_wr_check(q, &w, false);
		}
		if (err) {
			*bad_wr = wr;
			break;
		}
		if (wr->opcode == IBV_WR_BIND_MW &&
				qp->state != IBV_QPS_ERR)
			mw_bind_wr(q, &w, wr);
		send_wr_post(q, &w);
	}
	MOCK_UNLOCK();
	return err;
}

static int
rq_post(struct rq *rq, uint32_t max_wr, uint32_t max_sge, struct mock_pd *pd,
		struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr,
		struct mock_qp *q, struct mock_srq *s)
{
	for (; wr; wr = wr->next) {
		if ((uint32_t)rq->n >= max_wr) {
			*bad_wr = wr;
			return ENOMEM;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge ||
				wr->num_sge > MOCK_MAX_SGE ||
				(wr->num_sge > 0 && wr->sg_list == NULL)) {
			*bad_wr = wr;
			return EINVAL;
		}
		if (rq->n == rq->cap) {
			rq->cap = rq->cap ? rq->cap * 2 : 16;
			rq->v = mock_realloc(rq->v, (size_t)rq->cap * sizeof(*rq->v));
		}
		struct rwr *r = &rq->v[rq->n++];
		struct mock_wr *l = log_add(true);

		memset(r, 0, sizeof(*r));
		r->wr_id = wr->wr_id;
		r->num_sge = wr->num_sge;
		l->is_recv = true;
		l->wr_id = wr->wr_id;
		l->num_sge = wr->num_sge;
		if (q) {
			l->qp = &q->qpx.qp_base;
			l->qp_num = q->qpx.qp_base.qp_num;
		}
		if (s)
			l->srq = &s->srq;
		for (int i = 0; i < wr->num_sge; i++) {
			r->sge[i] = l->sge[i] = wr->sg_list[i];
			l->length += wr->sg_list[i].length;
			if (!sge_ok(pd, &wr->sg_list[i], true))
				l->bad_lkey = true;
		}
		if (q && q->qpx.qp_base.state == IBV_QPS_ERR)
			qp_flush(q);
	}
	return 0;
}

static int
mock_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "ibv_post_recv");
	if (bad_wr == NULL)
		mock_die("ibv_post_recv: NULL bad_wr");
	*bad_wr = NULL;
	int err = mock_enter(MF_IBV_POST_RECV, &rc);
	if (!err && (q->srq != NULL || qp->state == IBV_QPS_RESET))
		err = EINVAL;
	if (err) {
		*bad_wr = wr;
		MOCK_UNLOCK();
		return err;
	}
	err = rq_post(&q->rq, q->cap.max_recv_wr, q->cap.max_recv_sge, q->pd,
			wr, bad_wr, q, NULL);
	MOCK_UNLOCK();
	return err;
}

static int
mock_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad_wr)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_srq *s = srq_get(srq, "ibv_post_srq_recv");
	if (bad_wr == NULL)
		mock_die("ibv_post_srq_recv: NULL bad_wr");
	*bad_wr = NULL;
	int err = mock_enter(MF_IBV_POST_SRQ_RECV, &rc);
	if (err) {
		*bad_wr = wr;
		MOCK_UNLOCK();
		return err;
	}
	err = rq_post(&s->rq, s->max_wr, s->max_sge, s->pd, wr, bad_wr, NULL, s);
	MOCK_UNLOCK();
	return err;
}

/* ------------------------------------------------------------- poll etc. */

static int
mock_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cq *c = cq_get(cq, "ibv_poll_cq");
	int err = mock_enter(MF_IBV_POLL_CQ, &rc);
	if (err) {
		MOCK_UNLOCK();
		return -err;
	}
	if (num_entries < 0 || (num_entries > 0 && wc == NULL))
		mock_die("ibv_poll_cq: bad arguments (%d, %p)", num_entries,
				(void *)wc);
	int n = 0;

	while (n < num_entries && c->count > 0) {
		struct wce e = c->ring[c->head];

		c->head = (c->head + 1) % c->cap;
		c->count--;
		wc[n++] = e.wc;
		sq_release(&e);
	}
	MOCK_UNLOCK();
	return n;
}

static int
mock_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	int rc = 0;

	(void)solicited_only;
	MOCK_LOCK();
	struct mock_cq *c = cq_get(cq, "ibv_req_notify_cq");
	int err = mock_enter(MF_IBV_REQ_NOTIFY_CQ, &rc);
	if (!err)
		c->armed = true;
	MOCK_UNLOCK();
	return err;
}

static uint32_t Next_mw_key = 0x7700;

static struct ibv_mw *
mock_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_pd *p = (struct mock_pd *)mock_obj_get(MOCK_PD, pd,
			"ibv_alloc_mw");
	int err = mock_enter(MF_IBV_ALLOC_MW, &rc);
	if (!err && type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct mock_mw *m = mock_alloc(sizeof(*m));

	memset(m, 0, sizeof(*m));
	m->pd = p;
	m->mw.context = pd->context;
	m->mw.pd = pd;
	m->mw.type = type;
	/* the index in the upper 24 bits, the consumer's key byte 0 */
	m->mw.rkey = Next_mw_key << 8;
	Next_mw_key++;
	mock_obj_add(&m->o, MOCK_MW);
	m->mw.handle = (uint32_t)m->o.serial;
	p->users++;
	MOCK_UNLOCK();
	return &m->mw;
}

static int
mock_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b)
{
	(void)qp;
	(void)mw;
	(void)b;
	mock_die("ibv_bind_mw is not mocked");
}

static void
mw_unbind(struct mock_mw *m)
{
	if (m->mr)
		m->mr->mws--;
	m->mr = NULL;
	m->qp = NULL;
}

/* dealloc invalidates a bound window whatever its QP's state */
static int
mock_dealloc_mw(struct ibv_mw *mw)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_mw *m = (struct mock_mw *)mock_obj_get(MOCK_MW, mw,
			"ibv_dealloc_mw");
	int err = mock_enter(MF_IBV_DEALLOC_MW, &rc);
	if (err) {
		m->o.destroy_failed = true;
	} else {
		mw_unbind(m);
		m->pd->users--;
		mock_obj_del(&m->o);
		mock_free(m);
	}
	MOCK_UNLOCK();
	return err;
}

/* IBV_WR_BIND_MW posted on `q` (lock held): accept it or mark bind_err */
static void
mw_bind_wr(struct mock_qp *q, struct mock_wr *w, const struct ibv_send_wr *wr)
{
	struct mock_mw *m = (struct mock_mw *)mock_obj_find(MOCK_MW,
			wr->bind_mw.mw);
	struct mock_mr *r = (struct mock_mr *)mock_obj_find(MOCK_MR,
			wr->bind_mw.bind_info.mr);
	w->mw = wr->bind_mw.mw;
	w->rkey = wr->bind_mw.rkey;
	w->remote_addr = wr->bind_mw.bind_info.addr;
	w->length = (uint32_t)wr->bind_mw.bind_info.length;
	w->mw_access = wr->bind_mw.bind_info.mw_access_flags;
	if (m == NULL)
		mock_die("ibv_post_send(BIND_MW): not a live window");
	if (r == NULL || !(r->access & IBV_ACCESS_MW_BIND) ||
			r->pd != q->pd || m->pd != q->pd ||
			((w->mw_access & IBV_ACCESS_REMOTE_WRITE) &&
			 !(r->access & IBV_ACCESS_LOCAL_WRITE)) ||
			(wr->bind_mw.rkey & ~0xffu) != (m->mw.rkey & ~0xffu)) {
		w->bind_err = true;
		return;
	}
	mw_unbind(m);
	m->mr = r;
	m->qp = &q->qpx.qp_base;
	r->mws++;
	m->mw.rkey = wr->bind_mw.rkey;
}

uint32_t
mock_mw_rkey(const struct ibv_mw *mw)
{
	MOCK_LOCK();
	struct mock_mw *m = (struct mock_mw *)mock_obj_find(MOCK_MW, mw);
	uint32_t k = m ? m->mw.rkey : 0;
	MOCK_UNLOCK();
	return k;
}

bool
mock_mw_bound(const struct ibv_mw *mw)
{
	MOCK_LOCK();
	struct mock_mw *m = (struct mock_mw *)mock_obj_find(MOCK_MW, mw);
	bool b = m && m->mr;
	MOCK_UNLOCK();
	return b;
}

/* ---------------------------------------------- verbs_context extensions */

static int
mock_query_device_ex(struct ibv_context *context,
		const struct ibv_query_device_ex_input *input,
		struct ibv_device_attr_ex *attr, size_t attr_size)
{
	int rc = 0;

	(void)input;
	MOCK_LOCK();
	mock_ctx_get(context, "ibv_query_device_ex");
	if (attr == NULL)
		mock_die("ibv_query_device_ex: NULL attr");
	int err = mock_enter(MF_IBV_QUERY_DEVICE_EX, &rc);
	if (!err) {
		memset(attr, 0, attr_size);
		memcpy(attr, &Dev_attr, attr_size < sizeof(Dev_attr) ?
				attr_size : sizeof(Dev_attr));
	}
	MOCK_UNLOCK();
	return err;
}

static int
mock_query_port(struct ibv_context *context, uint8_t port_num,
		struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	int rc = 0;

	MOCK_LOCK();
	mock_ctx_get(context, "ibv_query_port");
	if (port_attr == NULL)
		mock_die("ibv_query_port: NULL port_attr");
	int err = mock_enter(MF_IBV_QUERY_PORT, &rc);
	if (!err && (port_num < 1 ||
			port_num > Dev_attr.orig_attr.phys_port_cnt))
		err = EINVAL;
	if (!err) {
		memset(port_attr, 0, port_attr_len);
		memcpy(port_attr, &Port_attr, port_attr_len < sizeof(Port_attr) ?
				port_attr_len : sizeof(Port_attr));
	}
	MOCK_UNLOCK();
	return err;
}

static int
mock_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges)
{
	int rc = 0;

	(void)advice;
	(void)flags;
	MOCK_LOCK();
	struct mock_pd *p = pd_get(pd, "ibv_advise_mr");
	int err = mock_enter(MF_IBV_ADVISE_MR, &rc);
	if (!err && !(Dev_attr.odp_caps.general_caps & IBV_ODP_SUPPORT))
		err = EOPNOTSUPP;
	if (!err && (num_sges == 0 || sg_list == NULL))
		err = EINVAL;
	for (uint32_t i = 0; !err && i < num_sges; i++) {
		struct mock_mr *m = mr_by_lkey(sg_list[i].lkey);

		if (m == NULL || m->pd != p || !(m->access & IBV_ACCESS_ON_DEMAND) ||
				!sge_ok(p, &sg_list[i], false))
			err = EINVAL;
	}
	MOCK_UNLOCK();
	return err;
}

static struct ibv_qp *mock_create_qp_ex_op(struct ibv_context *context,
		struct ibv_qp_init_attr_ex *attr);

/* ------------------------------------------------------------ devices */

static void
defaults(void)
{
	memset(Devs, 0, sizeof(Devs));
	for (int i = 0; i < MAX_DEVS; i++) {
		struct ibv_device *d = &Devs[i].dev;

		d->node_type = IBV_NODE_CA;
		d->transport_type = IBV_TRANSPORT_IB;
		snprintf(d->name, sizeof(d->name), "mock_rxe%d", i);
		snprintf(d->dev_name, sizeof(d->dev_name), "uverbs%d", i);
		snprintf(d->dev_path, sizeof(d->dev_path),
				"/sys/class/infiniband_verbs/uverbs%d", i);
		snprintf(d->ibdev_path, sizeof(d->ibdev_path),
				"/sys/class/infiniband/mock_rxe%d", i);
		Devs[i].guid = 0x0200000000000a00ULL + (uint64_t)i;
	}
	Ndevs = 1;

	memset(&Dev_attr, 0, sizeof(Dev_attr));
	struct ibv_device_attr *a = &Dev_attr.orig_attr;

	snprintf(a->fw_ver, sizeof(a->fw_ver), "1.0.0");
	a->node_guid = htobe64(Devs[0].guid);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = 0xffffff;
	a->max_qp = 0x10000;
	a->max_qp_wr = 0x4000;
	a->device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
		IBV_DEVICE_AUTO_PATH_MIG | IBV_DEVICE_CHANGE_PHY_PORT |
		IBV_DEVICE_UD_AV_PORT_ENFORCE | IBV_DEVICE_PORT_ACTIVE_EVENT |
		IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
		IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_MEM_MGT_EXTENSIONS;
	a->max_sge = MOCK_MAX_SGE;
	a->max_sge_rd = MOCK_MAX_SGE;
	a->max_cq = 0x4000;
	a->max_cqe = 0x7fff;
	a->max_mr = 0x10000;
	a->max_pd = 0x8000;
	a->max_qp_rd_atom = 128;
	a->max_res_rd_atom = 0x10000;
	a->max_qp_init_rd_atom = 128;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_srq = 0x1000;
	a->max_srq_wr = 0x4000;
	a->max_srq_sge = MOCK_MAX_SGE;
	a->max_pkeys = 64;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
	Dev_attr.device_cap_flags_ex = a->device_cap_flags;

	memset(&Port_attr, 0, sizeof(Port_attr));
	Port_attr.state = IBV_PORT_ACTIVE;
	Port_attr.max_mtu = IBV_MTU_4096;
	Port_attr.active_mtu = IBV_MTU_1024;
	Port_attr.gid_tbl_len = 1024;
	Port_attr.max_msg_sz = 0x800000;
	Port_attr.pkey_tbl_len = 64;
	Port_attr.active_width = 1;
	Port_attr.active_speed = 1;
	Port_attr.phys_state = 5;
	Port_attr.link_layer = IBV_LINK_LAYER_ETHERNET;

	Max_inline = 256;
	Cq_grant_max = 0;
	Cq_last_requested = 0;
	Auto_complete = false;
	Next_key = 0x1000;
	Next_qpn = 0x11;
	Nunpinnable = 0;
}

__attribute__((constructor)) static void
mock_verbs_init(void)
{
	defaults();
}

const struct ibv_device_attr_ex *
mock_dev_attr_int(void)
{
	return &Dev_attr;
}

int
mock_dev_count_int(void)
{
	return Ndevs;
}

void
mock_dev_set_odp(bool on)
{
	MOCK_LOCK();
	Dev_attr.odp_caps.general_caps = on ? IBV_ODP_SUPPORT : 0;
	Dev_attr.odp_caps.per_transport_caps.rc_odp_caps = on ?
		(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		 IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV) : 0;
	MOCK_UNLOCK();
}

void
mock_dev_set_atomic_write(bool on)
{
	MOCK_LOCK();
	if (on)
		Dev_attr.device_cap_flags_ex |= MOCK_DEVICE_ATOMIC_WRITE;
	else
		Dev_attr.device_cap_flags_ex &= ~MOCK_DEVICE_ATOMIC_WRITE;
	MOCK_UNLOCK();
}

void
mock_dev_set_flush(bool global, bool persistent)
{
	MOCK_LOCK();
	Dev_attr.device_cap_flags_ex &= ~(MOCK_DEVICE_FLUSH_GLOBAL |
			MOCK_DEVICE_FLUSH_PERSISTENT);
	if (global)
		Dev_attr.device_cap_flags_ex |= MOCK_DEVICE_FLUSH_GLOBAL;
	if (persistent)
		Dev_attr.device_cap_flags_ex |= MOCK_DEVICE_FLUSH_PERSISTENT;
	MOCK_UNLOCK();
}

struct ibv_device_attr_ex *
mock_dev_attr(void)
{
	return &Dev_attr;
}

struct ibv_port_attr *
mock_port_attr(void)
{
	return &Port_attr;
}

void
mock_dev_set_count(int n)
{
	MOCK_LOCK();
	if (n < 0 || n > MAX_DEVS)
		mock_die("mock_dev_set_count(%d): 0..%d", n, MAX_DEVS);
	Ndevs = n;
	MOCK_UNLOCK();
}

void
mock_cq_set_grant_max(int max_cqe)
{
	MOCK_LOCK();
	Cq_grant_max = max_cqe;
	MOCK_UNLOCK();
}

int
mock_cq_last_requested(void)
{
	MOCK_LOCK();
	int n = Cq_last_requested;
	MOCK_UNLOCK();
	return n;
}

void
mock_dev_set_max_inline(uint32_t max_inline)
{
	MOCK_LOCK();
	Max_inline = max_inline;
	MOCK_UNLOCK();
}

void
mock_mr_set_unpinnable(const void *addr, size_t len)
{
	MOCK_LOCK();
	if (Nunpinnable == (int)(sizeof(Unpinnable) / sizeof(Unpinnable[0])))
		mock_die("mock_mr_set_unpinnable: too many ranges");
	Unpinnable[Nunpinnable++] = (struct range){ (uintptr_t)addr,
		(uintptr_t)addr + len };
	MOCK_UNLOCK();
}

void
mock_set_auto_complete(bool on)
{
	MOCK_LOCK();
	Auto_complete = on;
	MOCK_UNLOCK();
}

struct ibv_device **
ibv_get_device_list(int *num_devices)
{
	int rc = 0;

	MOCK_LOCK();
	int err = mock_enter(MF_IBV_GET_DEVICE_LIST, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct mock_devlist *l = mock_alloc(sizeof(*l));

	l->list = mock_alloc((size_t)(Ndevs + 1) * sizeof(*l->list));
	for (int i = 0; i < Ndevs; i++)
		l->list[i] = &Devs[i].dev;
	mock_obj_add(&l->o, MOCK_DEVICE_LIST);
	if (num_devices)
		*num_devices = Ndevs;
	struct ibv_device **ret = l->list;
	MOCK_UNLOCK();
	return ret;
}

static void
devlist_free(struct mock_devlist *l)
{
	mock_obj_del(&l->o);
	mock_free(l->list);
	mock_free(l);
}

void
ibv_free_device_list(struct ibv_device **list)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_devlist *l = GET(MOCK_DEVICE_LIST, struct mock_devlist,
			list, "ibv_free_device_list");
	mock_enter(MF_IBV_FREE_DEVICE_LIST, &rc);
	devlist_free(l);
	MOCK_UNLOCK();
}

static int
dev_index(struct ibv_device *device, const char *fn)
{
	for (int i = 0; i < MAX_DEVS; i++)
		if (device == &Devs[i].dev)
			return i;
	mock_die("%s: %p is not a device of ibv_get_device_list", fn,
			(void *)device);
}

const char *
ibv_get_device_name(struct ibv_device *device)
{
	int rc = 0;

	MOCK_LOCK();
	int i = dev_index(device, "ibv_get_device_name");
	mock_enter(MF_IBV_GET_DEVICE_NAME, &rc);
	MOCK_UNLOCK();
	return Devs[i].dev.name;
}

__be64
ibv_get_device_guid(struct ibv_device *device)
{
	int rc = 0;

	MOCK_LOCK();
	int i = dev_index(device, "ibv_get_device_guid");
	mock_enter(MF_IBV_GET_DEVICE_GUID, &rc);
	MOCK_UNLOCK();
	return htobe64(Devs[i].guid);
}

static struct mock_ctx *
ctx_new(int index, bool internal)
{
	struct mock_ctx *c = mock_alloc(sizeof(*c));
	struct ibv_context *x = &c->vctx.context;

	c->dev_index = index;
	mock_fdq_open(&c->async_q);
	c->cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (c->cmd_fd < 0)
		mock_die("mock: open /dev/null: %s", strerror(errno));
	c->vctx.sz = sizeof(struct verbs_context);
	c->vctx.query_port = mock_query_port;
	c->vctx.advise_mr = mock_advise_mr;
	c->vctx.query_device_ex = mock_query_device_ex;
	c->vctx.create_qp_ex = mock_create_qp_ex_op;
	x->device = &Devs[index].dev;
	x->cmd_fd = c->cmd_fd;
	x->async_fd = c->async_q.fd;
	x->num_comp_vectors = 4;
	x->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&x->mutex, NULL);
	x->ops.poll_cq = mock_poll_cq;
	x->ops.req_notify_cq = mock_req_notify_cq;
	x->ops.post_send = mock_post_send;
	x->ops.post_recv = mock_post_recv;
	x->ops.post_srq_recv = mock_post_srq_recv;
	x->ops.alloc_mw = mock_alloc_mw;
	x->ops.bind_mw = mock_bind_mw;
	x->ops.dealloc_mw = mock_dealloc_mw;
	c->o.internal = internal;
	mock_obj_add(&c->o, MOCK_CONTEXT);
	return c;
}

static void
ctx_free(struct mock_ctx *c)
{
	async_drop_for(c, NULL);
	/* got, unacked events of this context: forget them */
	for (struct async_rec **pp = &Async_got; *pp;) {
		struct async_rec *r = *pp;

		if (r->ctx == c) {
			*pp = r->next;
			mock_free(r);
		} else {
			pp = &r->next;
		}
	}
	mock_fdq_close(&c->async_q, "context's async_fd");
	if (c->cmd_fd >= 0)
		close(c->cmd_fd);
	pthread_mutex_destroy(&c->vctx.context.mutex);
	mock_obj_del(&c->o);
	mock_free(c);
}

struct ibv_context *
ibv_open_device(struct ibv_device *device)
{
	int rc = 0;

	MOCK_LOCK();
	int i = dev_index(device, "ibv_open_device");
	int err = mock_enter(MF_IBV_OPEN_DEVICE, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	if (i >= Ndevs) {
		errno = ENODEV;
		MOCK_UNLOCK();
		return NULL;
	}
	struct ibv_context *ret = &ctx_new(i, false)->vctx.context;
	MOCK_UNLOCK();
	return ret;
}

int
ibv_close_device(struct ibv_context *context)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_ctx *c = mock_ctx_get(context, "ibv_close_device");
	if (c->o.internal)
		mock_die("ibv_close_device: this context belongs to librdmacm "
				"(id->verbs / rdma_get_devices): never close it");
	int err = mock_enter(MF_IBV_CLOSE_DEVICE, &rc);
	if (err) {
		c->o.destroy_failed = true;
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	ctx_free(c);
	MOCK_UNLOCK();
	return 0;
}

struct mock_ctx *
mock_cm_ctx(void)
{
	if (Cm_ctx == NULL)
		Cm_ctx = ctx_new(0, true);
	return Cm_ctx;
}

struct ibv_context *
mock_cm_ibv_ctx(void)
{
	return &mock_cm_ctx()->vctx.context;
}

struct ibv_context *
mock_cm_context(void)
{
	MOCK_LOCK();
	struct ibv_context *c = &mock_cm_ctx()->vctx.context;
	MOCK_UNLOCK();
	return c;
}

int
ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	int rc = 0;

	MOCK_LOCK();
	mock_ctx_get(context, "ibv_query_device");
	if (attr == NULL)
		mock_die("ibv_query_device: NULL attr");
	int err = mock_enter(MF_IBV_QUERY_DEVICE, &rc);
	if (!err)
		*attr = Dev_attr.orig_attr;
	MOCK_UNLOCK();
	return err;
}

/* the exported symbol behind the ibv_query_port macro's legacy path */
int (ibv_query_port)(struct ibv_context *context, uint8_t port_num,
		struct _compat_ibv_port_attr *port_attr);

int (ibv_query_port)(struct ibv_context *context, uint8_t port_num,
		struct _compat_ibv_port_attr *port_attr)
{
	/* the compat struct is a prefix of struct ibv_port_attr */
	return mock_query_port(context, port_num,
			(struct ibv_port_attr *)(void *)port_attr,
			offsetof(struct ibv_port_attr, link_layer));
}

int
ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
		union ibv_gid *gid)
{
	int rc = 0;

	MOCK_LOCK();
	mock_ctx_get(context, "ibv_query_gid");
	int err = mock_enter(MF_IBV_QUERY_GID, &rc);
	if (!err && (port_num < 1 || port_num > Dev_attr.orig_attr.phys_port_cnt ||
			index < 0 || index >= Port_attr.gid_tbl_len))
		err = EINVAL;
	if (!err) {
		/* ::ffff:192.0.2.1 (a RoCE v2 GID of the documentation net) */
		static const uint8_t g[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			0xff, 0xff, 192, 0, 2, 1 };
		memcpy(gid->raw, g, sizeof(g));
	}
	MOCK_UNLOCK();
	if (err)
		errno = err;
	return err ? -1 : 0;
}

int
ibv_fork_init(void)
{
	int rc = 0;

	MOCK_LOCK();
	int err = mock_enter(MF_IBV_FORK_INIT, &rc);
	MOCK_UNLOCK();
	return err;
}

/* ------------------------------------------------------------------- PD */

struct ibv_pd *
ibv_alloc_pd(struct ibv_context *context)
{
	int rc = 0;

	MOCK_LOCK();
	mock_ctx_get(context, "ibv_alloc_pd");
	int err = mock_enter(MF_IBV_ALLOC_PD, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct mock_pd *p = mock_alloc(sizeof(*p));

	p->pd.context = context;
	mock_obj_add(&p->o, MOCK_PD);
	p->pd.handle = (uint32_t)p->o.serial;
	MOCK_UNLOCK();
	return &p->pd;
}

int
ibv_dealloc_pd(struct ibv_pd *pd)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_pd *p = pd_get(pd, "ibv_dealloc_pd");
	int err = mock_enter(MF_IBV_DEALLOC_PD, &rc);
	if (err) {
		p->o.destroy_failed = true;
	} else if (p->users > 0) {
		err = EBUSY;
	} else {
		mock_obj_del(&p->o);
		mock_free(p);
	}
	MOCK_UNLOCK();
	return err;
}

struct ibv_pd *
mock_cm_default_pd(void)
{
	if (Cm_pd == NULL) {
		struct mock_pd *p = mock_alloc(sizeof(*p));

		p->pd.context = &mock_cm_ctx()->vctx.context;
		p->o.internal = true;
		mock_obj_add(&p->o, MOCK_PD);
		Cm_pd = &p->pd;
	}
	return Cm_pd;
}

/* ------------------------------------------------------------------- MR */

static struct ibv_mr *
reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		unsigned int access, const char *fn)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_pd *p = pd_get(pd, fn);
	int err = mock_enter(MF_IBV_REG_MR, &rc);
	if (!err && length == 0)
		err = EINVAL;
	if (!err && addr == NULL)
		err = EFAULT;
	if (!err && (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
			!(access & IBV_ACCESS_LOCAL_WRITE))
		err = EINVAL;
	if (!err && (access & IBV_ACCESS_ON_DEMAND) &&
			!(Dev_attr.odp_caps.general_caps & IBV_ODP_SUPPORT))
		err = EOPNOTSUPP;
	/* rdma-core >= 45 IBV_ACCESS_FLUSH_GLOBAL / _PERSISTENT need the
	 * device capability (the kernel checks) */
	if (!err && (access & MOCK_ACCESS_FLUSH_GLOBAL) &&
			!(Dev_attr.device_cap_flags_ex & MOCK_DEVICE_FLUSH_GLOBAL))
		err = EOPNOTSUPP;
	if (!err && (access & MOCK_ACCESS_FLUSH_PERSISTENT) &&
			!(Dev_attr.device_cap_flags_ex & MOCK_DEVICE_FLUSH_PERSISTENT))
		err = EOPNOTSUPP;
	if (!err && !(access & IBV_ACCESS_ON_DEMAND)) {
		uintptr_t s = (uintptr_t)addr, e = s + length;

		for (int i = 0; i < Nunpinnable; i++)
			if (s < Unpinnable[i].end && Unpinnable[i].start < e)
				err = EOPNOTSUPP;
	}
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct mock_mr *m = mock_alloc(sizeof(*m));

	m->pd = p;
	m->access = access;
	m->iova = iova;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.lkey = Next_key;
	m->mr.rkey = Next_key + 1;	/* different from lkey on purpose */
	Next_key += 0x100;
	mock_obj_add(&m->o, MOCK_MR);
	m->mr.handle = (uint32_t)m->o.serial;
	p->users++;
	MOCK_UNLOCK();
	return &m->mr;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
		int access);
struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length,
		uint64_t iova, int access);

struct ibv_mr *
(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned)access,
			"ibv_reg_mr");
}

struct ibv_mr *
(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		int access)
{
	return reg_mr(pd, addr, length, iova, (unsigned)access,
			"ibv_reg_mr_iova");
}

struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
		unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access, "ibv_reg_mr_iova2");
}

int
ibv_dereg_mr(struct ibv_mr *mr)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_mr *m = GET(MOCK_MR, struct mock_mr, mr, "ibv_dereg_mr");
	int err = mock_enter(MF_IBV_DEREG_MR, &rc);
	if (!err && m->mws > 0) {
		/* windows are bound to it: the device refuses (it stays) */
		m->o.destroy_failed = true;
		MOCK_UNLOCK();
		return EBUSY;
	}
	if (err) {
		m->o.destroy_failed = true;
	} else {
		m->pd->users--;
		mock_obj_del(&m->o);
		mock_free(m);
	}
	MOCK_UNLOCK();
	return err;
}

/* ------------------------------------------------------- comp channel */

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	int rc = 0;

	MOCK_LOCK();
	mock_ctx_get(context, "ibv_create_comp_channel");
	int err = mock_enter(MF_IBV_CREATE_COMP_CHANNEL, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct mock_cc *cc = mock_alloc(sizeof(*cc));

	mock_fdq_open(&cc->q);
	cc->ch.context = context;
	cc->ch.fd = cc->q.fd;
	cc->ch.refcnt = 0;
	mock_obj_add(&cc->o, MOCK_COMP_CHANNEL);
	MOCK_UNLOCK();
	return &cc->ch;
}

static void
cc_free(struct mock_cc *cc)
{
	cc_drop_for(cc, NULL);
	mock_fdq_close(&cc->q, "completion channel");
	mock_obj_del(&cc->o);
	mock_free(cc);
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cc *cc = GET(MOCK_COMP_CHANNEL, struct mock_cc, channel,
			"ibv_destroy_comp_channel");
	int err = mock_enter(MF_IBV_DESTROY_COMP_CHANNEL, &rc);
	if (err) {
		cc->o.destroy_failed = true;
	} else if (cc->ch.refcnt > 0) {
		err = EBUSY;	/* positive, as rdma-core returns it */
	} else {
		cc_free(cc);
	}
	MOCK_UNLOCK();
	return err;
}

int
mock_comp_channel_pending(struct ibv_comp_channel *ch)
{
	MOCK_LOCK();
	struct mock_cc *cc = GET(MOCK_COMP_CHANNEL, struct mock_cc, ch,
			"mock_comp_channel_pending");
	int n = cc->q.pending;
	MOCK_UNLOCK();
	return n;
}

/* ------------------------------------------------------------------- CQ */

struct ibv_cq *
ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
		struct ibv_comp_channel *channel, int comp_vector)
{
	int rc = 0;
	struct mock_cc *cc = NULL;

	MOCK_LOCK();
	mock_ctx_get(context, "ibv_create_cq");
	if (channel)
		cc = GET(MOCK_COMP_CHANNEL, struct mock_cc, channel,
				"ibv_create_cq");
	int err = mock_enter(MF_IBV_CREATE_CQ, &rc);
	if (!err && (cqe < 1 || cqe > Dev_attr.orig_attr.max_cqe))
		err = EINVAL;
	if (!err && (comp_vector < 0 || comp_vector >= context->num_comp_vectors))
		err = EINVAL;
	if (!err && cc && cc->ch.context != context)
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct mock_cq *c = mock_alloc(sizeof(*c));

	Cq_last_requested = cqe;
	if (Cq_grant_max > 0 && cqe > Cq_grant_max)
		cqe = Cq_grant_max;	/* a device that grants less */
	c->cap = cqe;
	c->ring = mock_alloc((size_t)cqe * sizeof(*c->ring));
	c->cc = cc;
	c->cq.context = context;
	c->cq.channel = channel;
	c->cq.cq_context = cq_context;
	c->cq.cqe = cqe;
	pthread_mutex_init(&c->cq.mutex, NULL);
	pthread_cond_init(&c->cq.cond, NULL);
	if (cc)
		cc->ch.refcnt++;
	mock_obj_add(&c->o, MOCK_CQ);
	c->cq.handle = (uint32_t)c->o.serial;
	MOCK_UNLOCK();
	return &c->cq;
}

static void
cq_free(struct mock_cq *c)
{
	if (c->cc) {
		cc_drop_for(c->cc, c);
		c->cc->ch.refcnt--;
	}
	async_drop_for(mock_container_of(c->cq.context, struct mock_ctx,
				vctx.context), &c->o);
	pthread_mutex_destroy(&c->cq.mutex);
	pthread_cond_destroy(&c->cq.cond);
	mock_obj_del(&c->o);
	mock_free(c->ring);
	mock_free(c);
}

int
ibv_destroy_cq(struct ibv_cq *cq)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cq *c = cq_get(cq, "ibv_destroy_cq");
	if (c->got != c->acked)
		mock_die("ibv_destroy_cq: %u completion event(s) got with "
				"ibv_get_cq_event are not acknowledged "
				"(ibv_ack_cq_events): the real call blocks forever",
				c->got - c->acked);
	check_async_unacked(&c->o, c->async_unacked, "ibv_destroy_cq");
	int err = mock_enter(MF_IBV_DESTROY_CQ, &rc);
	if (err) {
		c->o.destroy_failed = true;
	} else if (c->users > 0) {
		err = EBUSY;
	} else {
		cq_free(c);
	}
	MOCK_UNLOCK();
	return err;
}

int
ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cq *c = cq_get(cq, "ibv_resize_cq");
	int err = mock_enter(MF_IBV_RESIZE_CQ, &rc);
	if (!err && (cqe < 1 || cqe < c->count ||
			cqe > Dev_attr.orig_attr.max_cqe))
		err = EINVAL;
	if (!err) {
		struct wce *r = mock_alloc((size_t)cqe * sizeof(*r));

		for (int i = 0; i < c->count; i++)
			r[i] = c->ring[(c->head + i) % c->cap];
		mock_free(c->ring);
		c->ring = r;
		c->head = 0;
		c->cap = cqe;
		c->cq.cqe = cqe;
	}
	MOCK_UNLOCK();
	return err;
}

int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		void **cq_context)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cc *cc = GET(MOCK_COMP_CHANNEL, struct mock_cc, channel,
			"ibv_get_cq_event");
	if (cq == NULL || cq_context == NULL)
		mock_die("ibv_get_cq_event: NULL cq or cq_context");
	int err = mock_enter(MF_IBV_GET_CQ_EVENT, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	if (cc->head == NULL) {
		if (!mock_fd_nonblocking(cc->q.fd))
			mock_die("ibv_get_cq_event: no event queued and the "
					"channel fd is blocking: the real call "
					"would block forever");
		errno = EAGAIN;
		MOCK_UNLOCK();
		return -1;
	}
	struct cq_ev *e = cc->head;

	cc->head = e->next;
	if (cc->head == NULL)
		cc->tail = NULL;
	mock_fdq_dec(&cc->q);
	e->cq->got++;
	*cq = &e->cq->cq;
	*cq_context = e->cq->cq.cq_context;
	mock_free(e);
	MOCK_UNLOCK();
	return 0;
}

void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cq *c = cq_get(cq, "ibv_ack_cq_events");
	mock_enter(MF_IBV_ACK_CQ_EVENTS, &rc);
	if (nevents > c->got - c->acked)
		mock_die("ibv_ack_cq_events: acking %u event(s) but only %u "
				"got and unacked: the real destroy would then "
				"block forever", nevents, c->got - c->acked);
	c->acked += nevents;
	c->cq.comp_events_completed += nevents;
	MOCK_UNLOCK();
}

void
mock_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	MOCK_LOCK();
	struct mock_cq *c = cq_get(cq, "mock_cq_push");
	struct wce e = { .wc = *wc };

	cq_push(c, &e);
	MOCK_UNLOCK();
}

void
mock_cq_push_wc(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status status,
		enum ibv_wc_opcode opcode, uint32_t byte_len)
{
	struct ibv_wc wc = { 0 };

	wc.wr_id = wr_id;
	wc.status = status;
	wc.opcode = opcode;
	wc.byte_len = byte_len;
	mock_cq_push(cq, &wc);
}

void
mock_cq_event(struct ibv_cq *cq)
{
	MOCK_LOCK();
	struct mock_cq *c = cq_get(cq, "mock_cq_event");
	if (c->cc == NULL)
		mock_die("mock_cq_event: the CQ has no completion channel");
	cq_notify(c);
	MOCK_UNLOCK();
}

int
mock_cq_depth(struct ibv_cq *cq)
{
	MOCK_LOCK();
	int n = cq_get(cq, "mock_cq_depth")->count;
	MOCK_UNLOCK();
	return n;
}

bool
mock_cq_armed(struct ibv_cq *cq)
{
	MOCK_LOCK();
	bool a = cq_get(cq, "mock_cq_armed")->armed;
	MOCK_UNLOCK();
	return a;
}

unsigned
mock_cq_unacked(struct ibv_cq *cq)
{
	MOCK_LOCK();
	struct mock_cq *c = cq_get(cq, "mock_cq_unacked");
	unsigned n = c->got - c->acked;
	MOCK_UNLOCK();
	return n;
}

unsigned
mock_cq_overruns(struct ibv_cq *cq)
{
	MOCK_LOCK();
	unsigned n = cq_get(cq, "mock_cq_overruns")->overruns;
	MOCK_UNLOCK();
	return n;
}

/* ------------------------------------------------------------------ SRQ */

struct ibv_srq *
ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_pd *p = pd_get(pd, "ibv_create_srq");
	if (attr == NULL)
		mock_die("ibv_create_srq: NULL attr");
	int err = mock_enter(MF_IBV_CREATE_SRQ, &rc);
	if (!err && (attr->attr.max_wr < 1 ||
			attr->attr.max_wr > (uint32_t)Dev_attr.orig_attr.max_srq_wr ||
			attr->attr.max_sge > (uint32_t)Dev_attr.orig_attr.max_srq_sge))
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct mock_srq *s = mock_alloc(sizeof(*s));

	s->pd = p;
	s->max_wr = attr->attr.max_wr;
	s->max_sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
	s->limit = attr->attr.srq_limit;
	s->srq.context = pd->context;
	s->srq.srq_context = attr->srq_context;
	s->srq.pd = pd;
	pthread_mutex_init(&s->srq.mutex, NULL);
	pthread_cond_init(&s->srq.cond, NULL);
	p->users++;
	mock_obj_add(&s->o, MOCK_SRQ);
	s->srq.handle = (uint32_t)s->o.serial;
	MOCK_UNLOCK();
	return &s->srq;
}

int
ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_srq *s = srq_get(srq, "ibv_modify_srq");
	int err = mock_enter(MF_IBV_MODIFY_SRQ, &rc);
	if (!err && (mask & IBV_SRQ_MAX_WR)) {
		if (attr->max_wr < (uint32_t)s->rq.n ||
				attr->max_wr > (uint32_t)Dev_attr.orig_attr.max_srq_wr)
			err = EINVAL;
		else
			s->max_wr = attr->max_wr;
	}
	if (!err && (mask & IBV_SRQ_LIMIT))
		s->limit = attr->srq_limit;
	MOCK_UNLOCK();
	return err;
}

int
ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_srq *s = srq_get(srq, "ibv_query_srq");
	int err = mock_enter(MF_IBV_QUERY_SRQ, &rc);
	if (!err) {
		attr->max_wr = s->max_wr;
		attr->max_sge = s->max_sge;
		attr->srq_limit = s->limit;
	}
	MOCK_UNLOCK();
	return err;
}

static void
srq_free(struct mock_srq *s)
{
	async_drop_for(mock_container_of(s->srq.context, struct mock_ctx,
				vctx.context), &s->o);
	s->pd->users--;
	pthread_mutex_destroy(&s->srq.mutex);
	pthread_cond_destroy(&s->srq.cond);
	mock_obj_del(&s->o);
	mock_free(s->rq.v);
	mock_free(s);
}

int
ibv_destroy_srq(struct ibv_srq *srq)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_srq *s = srq_get(srq, "ibv_destroy_srq");
	check_async_unacked(&s->o, s->async_unacked, "ibv_destroy_srq");
	int err = mock_enter(MF_IBV_DESTROY_SRQ, &rc);
	if (err) {
		s->o.destroy_failed = true;
	} else if (s->users > 0) {
		err = EBUSY;
	} else {
		srq_free(s);
	}
	MOCK_UNLOCK();
	return err;
}

int
mock_srq_used(struct ibv_srq *srq)
{
	MOCK_LOCK();
	int n = srq_get(srq, "mock_srq_used")->rq.n;
	MOCK_UNLOCK();
	return n;
}

/* ----------------------------------------------------------- wr_* table */

static struct mock_wr *
batch_cur(struct mock_qp *q, const char *fn)
{
	if (!q->in_batch)
		mock_die("%s: called outside ibv_wr_start .. ibv_wr_complete", fn);
	if (q->batch_n == 0)
		mock_die("%s: no work request started (call an ibv_wr_<op> "
				"first)", fn);
	return &q->batch[q->batch_n - 1];
}

static struct mock_wr *
batch_new(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op, uint64_t flag,
		const char *fn)
{
	struct mock_qp *q = qpx_get(qpx, fn);

	if (!q->is_ex)
		mock_die("%s: the QP was not created with send_ops_flags", fn);
	if (!(q->send_ops_flags & flag))
		mock_die("%s: the QP's send_ops_flags lack this operation", fn);
	if (!q->in_batch)
		mock_die("%s: called outside ibv_wr_start .. ibv_wr_complete", fn);
	if (q->batch_n == q->batch_cap) {
		q->batch_cap = q->batch_cap ? q->batch_cap * 2 : 8;
		q->batch = mock_realloc(q->batch,
				(size_t)q->batch_cap * sizeof(*q->batch));
	}
	struct mock_wr *w = &q->batch[q->batch_n++];

	memset(w, 0, sizeof(*w));
	w->qp = &q->qpx.qp_base;
	w->qp_num = q->qpx.qp_base.qp_num;
	w->via_wr_api = true;
	w->wr_id = qpx->wr_id;
	w->send_flags = qpx->wr_flags;
	w->opcode = op;
	return w;
}

static void
wr_start(struct ibv_qp_ex *qpx)
{
	MOCK_LOCK();
	struct mock_qp *q = qpx_get(qpx, "ibv_wr_start");
	if (q->in_batch)
		mock_die("ibv_wr_start: already started (missing "
				"ibv_wr_complete / ibv_wr_abort)");
	q->in_batch = true;
	q->batch_n = 0;
	MOCK_UNLOCK();
}

static int
wr_complete(struct ibv_qp_ex *qpx)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_qp *q = qpx_get(qpx, "ibv_wr_complete");
	if (!q->in_batch)
		mock_die("ibv_wr_complete: no ibv_wr_start");
	q->in_batch = false;
	int err = mock_enter(MF_IBV_WR_COMPLETE, &rc);
	if (!err && (uint32_t)(q->sq_n + q->batch_n) > q->cap.max_send_wr)
		err = ENOMEM;
	for (int i = 0; !err && i < q->batch_n; i++)
		err = send_wr_check(q, &q->batch[i], true);
	if (!err && q->qpx.qp_base.state != IBV_QPS_RTS &&
			q->qpx.qp_base.state != IBV_QPS_SQD &&
			q->qpx.qp_base.state != IBV_QPS_ERR)
		err = EINVAL;
	for (int i = 0; !err && i < q->batch_n; i++)
		send_wr_post(q, &q->batch[i]);
	q->batch_n = 0;
	MOCK_UNLOCK();
	return err;
}

static void
wr_abort(struct ibv_qp_ex *qpx)
{
	MOCK_LOCK();
	struct mock_qp *q = qpx_get(qpx, "ibv_wr_abort");
	if (!q->in_batch)
		mock_die("ibv_wr_abort: no ibv_wr_start");
	q->in_batch = false;
	q->batch_n = 0;
	MOCK_UNLOCK();
}

static void
wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	MOCK_LOCK();
	struct mock_wr *w = batch_new(qpx, IBV_WR_RDMA_WRITE,
			IBV_QP_EX_WITH_RDMA_WRITE, "ibv_wr_rdma_write");
	w->rkey = rkey;
	w->remote_addr = raddr;
	MOCK_UNLOCK();
}

static void
wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
		__be32 imm)
{
	MOCK_LOCK();
	struct mock_wr *w = batch_new(qpx, IBV_WR_RDMA_WRITE_WITH_IMM,
			IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, "ibv_wr_rdma_write_imm");
	w->rkey = rkey;
	w->remote_addr = raddr;
	w->has_imm = true;
	w->imm = be32toh(imm);
	MOCK_UNLOCK();
}

static void
wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr)
{
	MOCK_LOCK();
	struct mock_wr *w = batch_new(qpx, IBV_WR_RDMA_READ,
			IBV_QP_EX_WITH_RDMA_READ, "ibv_wr_rdma_read");
	w->rkey = rkey;
	w->remote_addr = raddr;
	MOCK_UNLOCK();
}

static void
wr_send(struct ibv_qp_ex *qpx)
{
	MOCK_LOCK();
	batch_new(qpx, IBV_WR_SEND, IBV_QP_EX_WITH_SEND, "ibv_wr_send");
	MOCK_UNLOCK();
}

static void
wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	MOCK_LOCK();
	struct mock_wr *w = batch_new(qpx, IBV_WR_SEND_WITH_IMM,
			IBV_QP_EX_WITH_SEND_WITH_IMM, "ibv_wr_send_imm");
	w->has_imm = true;
	w->imm = be32toh(imm);
	MOCK_UNLOCK();
}

static void
wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
		uint64_t compare, uint64_t swap)
{
	MOCK_LOCK();
	struct mock_wr *w = batch_new(qpx, IBV_WR_ATOMIC_CMP_AND_SWP,
			IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, "ibv_wr_atomic_cmp_swp");
	w->rkey = rkey;
	w->remote_addr = raddr;
	w->compare_add = compare;
	w->swap = swap;
	MOCK_UNLOCK();
}

static void
wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
		uint64_t add)
{
	MOCK_LOCK();
	struct mock_wr *w = batch_new(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD,
			IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
			"ibv_wr_atomic_fetch_add");
	w->rkey = rkey;
	w->remote_addr = raddr;
	w->compare_add = add;
	MOCK_UNLOCK();
}

static void
wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
		const void *atomic_wr)
{
	MOCK_LOCK();
	struct mock_wr *w = batch_new(qpx, IBV_WR_ATOMIC_WRITE,
			IBV_QP_EX_WITH_ATOMIC_WRITE, "ibv_wr_atomic_write");
	if (atomic_wr == NULL)
		mock_die("ibv_wr_atomic_write: NULL data");
	w->rkey = rkey;
	w->remote_addr = raddr;
	memcpy(w->data, atomic_wr, 8);
	w->data_len = 8;
	w->length = 8;
	MOCK_UNLOCK();
}

#ifdef PMREP_HAVE_IBV_WR_FLUSH
static void
wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr, size_t len,
		uint8_t type, uint8_t level)
{
	MOCK_LOCK();
	struct mock_wr *w = batch_new(qpx, IBV_WR_FLUSH, IBV_QP_EX_WITH_FLUSH,
			"ibv_wr_flush");
	w->rkey = rkey;
	w->remote_addr = raddr;
	w->length = (uint32_t)len;
	w->flush_len = len;
	w->flush_type = type;
	w->flush_level = level;
	MOCK_UNLOCK();
}
#endif

static void
wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t len)
{
	MOCK_LOCK();
	struct mock_qp *q = qpx_get(qpx, "ibv_wr_set_sge");
	struct mock_wr *w = batch_cur(q, "ibv_wr_set_sge");
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	bool lw = w->opcode == IBV_WR_RDMA_READ ||
		w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;

	w->num_sge = 1;
	w->sge[0] = sge;
	w->length = len;
	w->data_len = 0;
	if (!sge_ok(q->pd, &sge, lw))
		w->bad_lkey = true;
	else if (opcode_sends_data(w->opcode))
		copy_out(w, &sge, 1);
	MOCK_UNLOCK();
}

static void
wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num, const struct ibv_sge *sg)
{
	MOCK_LOCK();
	struct mock_qp *q = qpx_get(qpx, "ibv_wr_set_sge_list");
	struct mock_wr *w = batch_cur(q, "ibv_wr_set_sge_list");

	if (num > MOCK_MAX_SGE || num > q->cap.max_send_sge)
		mock_die("ibv_wr_set_sge_list: %zu SGEs, the QP allows %u", num,
				q->cap.max_send_sge);
	w->num_sge = (int)num;
	w->length = 0;
	w->data_len = 0;
	for (size_t i = 0; i < num; i++) {
		w->sge[i] = sg[i];
		w->length += sg[i].length;
		if (!sge_ok(q->pd, &sg[i], w->opcode == IBV_WR_RDMA_READ))
			w->bad_lkey = true;
	}
	if (!w->bad_lkey && opcode_sends_data(w->opcode))
		copy_out(w, sg, (int)num);
	MOCK_UNLOCK();
}

static void
wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	MOCK_LOCK();
	struct mock_qp *q = qpx_get(qpx, "ibv_wr_set_inline_data");
	struct mock_wr *w = batch_cur(q, "ibv_wr_set_inline_data");

	if (length > q->cap.max_inline_data)
		mock_die("ibv_wr_set_inline_data: %zu bytes, the QP's "
				"max_inline_data is %u", length,
				q->cap.max_inline_data);
	w->send_flags |= IBV_SEND_INLINE;
	w->num_sge = 0;
	w->length = (uint32_t)length;
	w->data_len = length < MOCK_WR_DATA_MAX ? (uint32_t)length :
		MOCK_WR_DATA_MAX;
	memcpy(w->data, addr, w->data_len);
	MOCK_UNLOCK();
}

static void
wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num,
		const struct ibv_data_buf *bufs)
{
	MOCK_LOCK();
	struct mock_qp *q = qpx_get(qpx, "ibv_wr_set_inline_data_list");
	struct mock_wr *w = batch_cur(q, "ibv_wr_set_inline_data_list");
	size_t total = 0;

	w->send_flags |= IBV_SEND_INLINE;
	w->num_sge = 0;
	w->data_len = 0;
	for (size_t i = 0; i < num; i++) {
		total += bufs[i].length;
		uint32_t room = MOCK_WR_DATA_MAX - w->data_len;
		uint32_t n = bufs[i].length < room ? (uint32_t)bufs[i].length : room;

		memcpy(w->data + w->data_len, bufs[i].addr, n);
		w->data_len += n;
	}
	if (total > q->cap.max_inline_data)
		mock_die("ibv_wr_set_inline_data_list: %zu bytes, the QP's "
				"max_inline_data is %u", total,
				q->cap.max_inline_data);
	w->length = (uint32_t)total;
	MOCK_UNLOCK();
}

static void
wr_unsupported(const char *fn)
{
	mock_die("%s is not mocked (pmrep has no use for it)", fn);
}

static void
wr_bind_mw(struct ibv_qp_ex *qp, struct ibv_mw *mw, uint32_t rkey,
		const struct ibv_mw_bind_info *info)
{
	(void)qp; (void)mw; (void)rkey; (void)info;
	wr_unsupported("ibv_wr_bind_mw");
}

static void
wr_local_inv(struct ibv_qp_ex *qp, uint32_t rkey)
{
	(void)qp; (void)rkey;
	wr_unsupported("ibv_wr_local_inv");
}

static void
wr_send_inv(struct ibv_qp_ex *qp, uint32_t rkey)
{
	(void)qp; (void)rkey;
	wr_unsupported("ibv_wr_send_inv");
}

static void
wr_send_tso(struct ibv_qp_ex *qp, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)qp; (void)hdr; (void)hdr_sz; (void)mss;
	wr_unsupported("ibv_wr_send_tso");
}

static void
wr_set_ud_addr(struct ibv_qp_ex *qp, struct ibv_ah *ah, uint32_t qpn,
		uint32_t qkey)
{
	(void)qp; (void)ah; (void)qpn; (void)qkey;
	wr_unsupported("ibv_wr_set_ud_addr");
}

static void
wr_set_xrc_srqn(struct ibv_qp_ex *qp, uint32_t srqn)
{
	(void)qp; (void)srqn;
	wr_unsupported("ibv_wr_set_xrc_srqn");
}

/* ------------------------------------------------------------------- QP */

static uint64_t
supported_send_ops(void)
{
	uint64_t f = IBV_QP_EX_WITH_RDMA_WRITE |
		IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
		IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
		IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

	if (Dev_attr.device_cap_flags_ex & MOCK_DEVICE_ATOMIC_WRITE)
		f |= IBV_QP_EX_WITH_ATOMIC_WRITE;
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	if (Dev_attr.device_cap_flags_ex &
			(MOCK_DEVICE_FLUSH_GLOBAL | MOCK_DEVICE_FLUSH_PERSISTENT))
		f |= IBV_QP_EX_WITH_FLUSH;
#endif
	return f;
}

struct ibv_qp *
mock_qp_create_int(struct ibv_pd *pd, struct ibv_qp_init_attr_ex *attr,
		bool ex, struct rdma_cm_id *id, enum ibv_qp_state initial)
{
	struct mock_pd *p = pd_get(pd, "create qp");
	struct mock_cq *scq = NULL, *rcq = NULL;
	struct mock_srq *srq = NULL;
	const struct ibv_device_attr *a = &Dev_attr.orig_attr;

	if (attr->send_cq)
		scq = cq_get(attr->send_cq, "create qp (send_cq)");
	if (attr->recv_cq)
		rcq = cq_get(attr->recv_cq, "create qp (recv_cq)");
	if (attr->srq)
		srq = srq_get(attr->srq, "create qp (srq)");
	if (scq == NULL || rcq == NULL ||
			scq->cq.context != pd->context ||
			rcq->cq.context != pd->context ||
			(srq && srq->srq.context != pd->context)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
			attr->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cap.max_send_wr > (uint32_t)a->max_qp_wr ||
			(!srq && attr->cap.max_recv_wr > (uint32_t)a->max_qp_wr) ||
			attr->cap.max_send_sge > (uint32_t)a->max_sge ||
			attr->cap.max_recv_sge > (uint32_t)a->max_sge ||
			attr->cap.max_inline_data > Max_inline) {
		errno = EINVAL;
		return NULL;
	}
	bool want_ex = ex && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);

	if (want_ex && (attr->send_ops_flags & ~supported_send_ops())) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	struct mock_qp *q = mock_alloc(sizeof(*q));
	struct ibv_qp *qp = &q->qpx.qp_base;

	q->pd = p;
	q->scq = scq;
	q->rcq = rcq;
	q->srq = srq;
	q->cm_id = id;
	q->cap = attr->cap;
	if (srq) {
		q->cap.max_recv_wr = 0;
		q->cap.max_recv_sge = 0;
	}
	if (q->cap.max_send_sge == 0)
		q->cap.max_send_sge = 1;
	if (!srq && q->cap.max_recv_sge == 0)
		q->cap.max_recv_sge = 1;
	q->sq_sig_all = attr->sq_sig_all != 0;
	q->is_ex = want_ex;
	q->send_ops_flags = want_ex ? attr->send_ops_flags : 0;
	q->sq = mock_alloc((size_t)(q->cap.max_send_wr + 1) * sizeof(*q->sq));
	qp->context = pd->context;
	qp->qp_context = attr->qp_context;
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->qp_num = Next_qpn++;
	qp->state = initial;
	qp->qp_type = attr->qp_type;
	pthread_mutex_init(&qp->mutex, NULL);
	pthread_cond_init(&qp->cond, NULL);
	if (want_ex) {
		struct ibv_qp_ex *x = &q->qpx;

		x->comp_mask = 0;
		x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
		x->wr_atomic_fetch_add = wr_atomic_fetch_add;
		x->wr_bind_mw = wr_bind_mw;
		x->wr_local_inv = wr_local_inv;
		x->wr_rdma_read = wr_rdma_read;
		x->wr_rdma_write = wr_rdma_write;
		x->wr_rdma_write_imm = wr_rdma_write_imm;
		x->wr_send = wr_send;
		x->wr_send_imm = wr_send_imm;
		x->wr_send_inv = wr_send_inv;
		x->wr_send_tso = wr_send_tso;
		x->wr_set_ud_addr = wr_set_ud_addr;
		x->wr_set_xrc_srqn = wr_set_xrc_srqn;
		x->wr_set_inline_data = wr_set_inline_data;
		x->wr_set_inline_data_list = wr_set_inline_data_list;
		x->wr_set_sge = wr_set_sge;
		x->wr_set_sge_list = wr_set_sge_list;
		x->wr_start = wr_start;
		x->wr_complete = wr_complete;
		x->wr_abort = wr_abort;
		x->wr_atomic_write = wr_atomic_write;
#ifdef PMREP_HAVE_IBV_WR_FLUSH
		x->wr_flush = wr_flush;
#endif
	}
	/* the granted capabilities, as the real create writes them back */
	attr->cap = q->cap;
	scq->users++;
	rcq->users++;
	if (srq)
		srq->users++;
	p->users++;
	mock_obj_add(&q->o, MOCK_QP);
	qp->handle = (uint32_t)q->o.serial;
	return qp;
}

static void
qp_free(struct mock_qp *q)
{
	struct ibv_qp *qp = &q->qpx.qp_base;

	async_drop_for(mock_container_of(qp->context, struct mock_ctx,
				vctx.context), &q->o);
	q->scq->users--;
	q->rcq->users--;
	if (q->srq)
		q->srq->users--;
	q->pd->users--;
	pthread_mutex_destroy(&qp->mutex);
	pthread_cond_destroy(&qp->cond);
	mock_obj_del(&q->o);
	mock_free(q->sq);
	mock_free(q->rq.v);
	mock_free(q->batch);
	mock_free(q);
}

int
mock_qp_destroy_int(struct ibv_qp *qp, const char *fn)
{
	struct mock_qp *q = qp_get(qp, fn);

	check_async_unacked(&q->o, q->async_unacked, fn);
	qp_free(q);
	return 0;
}

void
mock_qp_forget_cm_id(struct rdma_cm_id *id)
{
	for (struct mock_obj *o = mock_obj_head(MOCK_QP); o; o = o->next) {
		struct mock_qp *q = (struct mock_qp *)o;

		if (q->cm_id == id)
			q->cm_id = NULL;
	}
}

struct ibv_qp *
ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	int rc = 0;

	MOCK_LOCK();
	pd_get(pd, "ibv_create_qp");
	if (attr == NULL)
		mock_die("ibv_create_qp: NULL attr");
	int err = mock_enter(MF_IBV_CREATE_QP, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct ibv_qp_init_attr_ex ax = { 0 };

	ax.qp_context = attr->qp_context;
	ax.send_cq = attr->send_cq;
	ax.recv_cq = attr->recv_cq;
	ax.srq = attr->srq;
	ax.cap = attr->cap;
	ax.qp_type = attr->qp_type;
	ax.sq_sig_all = attr->sq_sig_all;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	struct ibv_qp *qp = mock_qp_create_int(pd, &ax, false, NULL,
			IBV_QPS_RESET);
	if (qp)
		attr->cap = ax.cap;
	MOCK_UNLOCK();
	return qp;
}

static struct ibv_qp *
mock_create_qp_ex_op(struct ibv_context *context,
		struct ibv_qp_init_attr_ex *attr)
{
	int rc = 0;

	MOCK_LOCK();
	mock_ctx_get(context, "ibv_create_qp_ex");
	if (attr == NULL)
		mock_die("ibv_create_qp_ex: NULL attr");
	int err = mock_enter(MF_IBV_CREATE_QP_EX, &rc);
	if (!err && (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
			attr->pd->context != context))
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct ibv_qp *qp = mock_qp_create_int(attr->pd, attr, true, NULL,
			IBV_QPS_RESET);
	MOCK_UNLOCK();
	return qp;
}

int
ibv_destroy_qp(struct ibv_qp *qp)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "ibv_destroy_qp");
	check_async_unacked(&q->o, q->async_unacked, "ibv_destroy_qp");
	int err = mock_enter(MF_IBV_DESTROY_QP, &rc);
	if (err)
		q->o.destroy_failed = true;
	else
		qp_free(q);
	MOCK_UNLOCK();
	return err;
}

struct ibv_qp_ex *
ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "ibv_qp_to_qp_ex");
	mock_enter(MF_IBV_QP_TO_QP_EX, &rc);
	struct ibv_qp_ex *x = q->is_ex ? &q->qpx : NULL;
	MOCK_UNLOCK();
	return x;
}

static bool
transition_ok(enum ibv_qp_state from, enum ibv_qp_state to)
{
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
		return true;
	switch (from) {
	case IBV_QPS_RESET:
		return to == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		return to == IBV_QPS_INIT || to == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		return to == IBV_QPS_RTS;
	case IBV_QPS_RTS:
		return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
	case IBV_QPS_SQD:
		return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
	case IBV_QPS_SQE:
		return to == IBV_QPS_RTS;
	default:
		return false;
	}
}

int
ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "ibv_modify_qp");
	if (attr == NULL)
		mock_die("ibv_modify_qp: NULL attr");
	int err = mock_enter(MF_IBV_MODIFY_QP, &rc);
	if (!err && (attr_mask & IBV_QP_CUR_STATE) &&
			attr->cur_qp_state != qp->state)
		err = EINVAL;
	if (!err && (attr_mask & IBV_QP_STATE) &&
			!transition_ok(qp->state, attr->qp_state))
		err = EINVAL;
	if (!err && (attr_mask & IBV_QP_CAP))
		err = EINVAL;
	if (!err && (attr_mask & IBV_QP_STATE))
		qp_to_state(q, attr->qp_state);
	MOCK_UNLOCK();
	return err;
}

int
ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		struct ibv_qp_init_attr *init_attr)
{
	int rc = 0;

	(void)attr_mask;
	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "ibv_query_qp");
	if (attr == NULL || init_attr == NULL)
		mock_die("ibv_query_qp: NULL attr or init_attr");
	int err = mock_enter(MF_IBV_QUERY_QP, &rc);
	if (!err) {
		memset(attr, 0, sizeof(*attr));
		memset(init_attr, 0, sizeof(*init_attr));
		attr->qp_state = qp->state;
		attr->cur_qp_state = qp->state;
		attr->path_mtu = Port_attr.active_mtu;
		attr->cap = q->cap;
		attr->port_num = 1;
		attr->max_rd_atomic = 16;
		attr->max_dest_rd_atomic = 16;
		attr->timeout = 14;
		attr->retry_cnt = 7;
		attr->rnr_retry = 7;
		init_attr->qp_context = qp->qp_context;
		init_attr->send_cq = qp->send_cq;
		init_attr->recv_cq = qp->recv_cq;
		init_attr->srq = qp->srq;
		init_attr->cap = q->cap;
		init_attr->qp_type = qp->qp_type;
		init_attr->sq_sig_all = q->sq_sig_all;
	}
	MOCK_UNLOCK();
	return err;
}

/* ----------------------------------------------------- QP test helpers */

int
mock_qp_complete_sends(struct ibv_qp *qp, int n, enum ibv_wc_status status)
{
	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "mock_qp_complete_sends");
	int done = 0;

	for (int i = 0; i < q->sq_n && (n < 0 || done < n); i++) {
		if (q->sq[i].done)
			continue;
		enum ibv_wc_status st = status;

		if (st == IBV_WC_SUCCESS && q->sq[i].bad_lkey)
			st = IBV_WC_LOC_PROT_ERR;
		sq_complete(q, i, st);
		done++;
		if (st != IBV_WC_SUCCESS && st != IBV_WC_WR_FLUSH_ERR) {
			qp_to_state(q, IBV_QPS_ERR);
			break;
		}
	}
	MOCK_UNLOCK();
	return done;
}

static void
recv_common(struct ibv_qp *qp, const void *data, uint32_t len, bool has_imm,
		uint32_t imm, bool rdma_write, const char *fn)
{
	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, fn);
	struct rq *rq = q->srq ? &q->srq->rq : &q->rq;
	struct mock_pd *pd = q->srq ? q->srq->pd : q->pd;

	if (rq->n == 0)
		mock_die("%s: no receive posted on the %s (the real sender "
				"would get RNR retries)", fn, q->srq ? "SRQ" : "QP");
	struct rwr r = rq->v[0];

	memmove(rq->v, rq->v + 1, (size_t)(rq->n - 1) * sizeof(*rq->v));
	rq->n--;

	struct wce e = { 0 };

	e.wc.wr_id = r.wr_id;
	e.wc.qp_num = qp->qp_num;
	e.wc.byte_len = len;
	e.wc.opcode = rdma_write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	e.wc.status = IBV_WC_SUCCESS;
	if (has_imm) {
		e.wc.wc_flags = IBV_WC_WITH_IMM;
		e.wc.imm_data = htobe32(imm);
	}
	if (!rdma_write) {
		uint32_t room = 0;
		bool ok = true;

		for (int i = 0; i < r.num_sge; i++) {
			room += r.sge[i].length;
			if (!sge_ok(pd, &r.sge[i], true))
				ok = false;
		}
		if (!ok) {
			e.wc.status = IBV_WC_LOC_PROT_ERR;
		} else if (len > room) {
			e.wc.status = IBV_WC_LOC_LEN_ERR;
		} else {
			const uint8_t *src = data;
			uint32_t left = len;

			for (int i = 0; i < r.num_sge && left; i++) {
				uint32_t n = r.sge[i].length < left ?
					r.sge[i].length : left;

				if (src)
					memcpy((void *)(uintptr_t)r.sge[i].addr,
							src, n);
				if (src)
					src += n;
				left -= n;
			}
		}
		if (e.wc.status != IBV_WC_SUCCESS) {
			e.wc.opcode = MOCK_WC_OPCODE_UNDEFINED;
			e.wc.wc_flags = 0;
		}
	}
	cq_push(q->rcq, &e);
	if (e.wc.status != IBV_WC_SUCCESS)
		qp_to_state(q, IBV_QPS_ERR);
	MOCK_UNLOCK();
}

void
mock_qp_recv(struct ibv_qp *qp, const void *data, uint32_t len)
{
	recv_common(qp, data, len, false, 0, false, "mock_qp_recv");
}

void
mock_qp_recv_imm(struct ibv_qp *qp, const void *data, uint32_t len,
		uint32_t imm, bool rdma_write)
{
	recv_common(qp, data, len, true, imm, rdma_write, "mock_qp_recv_imm");
}

void
mock_qp_set_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	MOCK_LOCK();
	qp_to_state(qp_get(qp, "mock_qp_set_state"), state);
	MOCK_UNLOCK();
}

enum ibv_qp_state
mock_qp_state(struct ibv_qp *qp)
{
	MOCK_LOCK();
	enum ibv_qp_state s = qp_get(qp, "mock_qp_state")->qpx.qp_base.state;
	MOCK_UNLOCK();
	return s;
}

int
mock_qp_sq_used(struct ibv_qp *qp)
{
	MOCK_LOCK();
	int n = qp_get(qp, "mock_qp_sq_used")->sq_n;
	MOCK_UNLOCK();
	return n;
}

int
mock_qp_outstanding_sends(struct ibv_qp *qp)
{
	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "mock_qp_outstanding_sends");
	int n = 0;

	for (int i = 0; i < q->sq_n; i++)
		if (!q->sq[i].done)
			n++;
	MOCK_UNLOCK();
	return n;
}

int
mock_qp_rq_used(struct ibv_qp *qp)
{
	MOCK_LOCK();
	int n = qp_get(qp, "mock_qp_rq_used")->rq.n;
	MOCK_UNLOCK();
	return n;
}

void
mock_qp_info(struct ibv_qp *qp, struct mock_qp_info *info)
{
	MOCK_LOCK();
	struct mock_qp *q = qp_get(qp, "mock_qp_info");

	memset(info, 0, sizeof(*info));
	info->cap = q->cap;
	info->sq_sig_all = q->sq_sig_all;
	info->is_ex = q->is_ex;
	info->send_ops_flags = q->send_ops_flags;
	info->send_cq = qp->send_cq;
	info->recv_cq = qp->recv_cq;
	info->srq = qp->srq;
	info->pd = qp->pd;
	info->cm_id = q->cm_id;
	MOCK_UNLOCK();
}

/* ------------------------------------------------------- last created */

static void *
last_of(enum mock_kind kind)
{
	MOCK_LOCK();
	void *p = NULL;

	for (struct mock_obj *o = mock_obj_head(kind); o; o = o->next)
		if (!o->internal && !o->hidden) {
			p = mock_obj_user(o);
			break;
		}
	MOCK_UNLOCK();
	return p;
}

struct ibv_context *mock_ctx_last(void) { return last_of(MOCK_CONTEXT); }
struct ibv_pd *mock_pd_last(void) { return last_of(MOCK_PD); }
struct ibv_mr *mock_mr_last(void) { return last_of(MOCK_MR); }
struct ibv_mw *mock_mw_last(void) { return last_of(MOCK_MW); }
struct ibv_comp_channel *mock_comp_channel_last(void) { return last_of(MOCK_COMP_CHANNEL); }
struct ibv_cq *mock_cq_last(void) { return last_of(MOCK_CQ); }
struct ibv_qp *mock_qp_last(void) { return last_of(MOCK_QP); }
struct ibv_srq *mock_srq_last(void) { return last_of(MOCK_SRQ); }
struct rdma_event_channel *mock_cm_channel_last(void) { return last_of(MOCK_CM_CHANNEL); }
struct rdma_cm_id *mock_cm_id_last(void) { return last_of(MOCK_CM_ID); }

/* ---------------------------------------------------------- reset etc. */

static struct mock_obj *
first_failed(enum mock_kind kind)
{
	for (struct mock_obj *o = mock_obj_head(kind); o; o = o->next)
		if (o->destroy_failed)
			return o;
	return NULL;
}

void
mock_verbs_release_failed(void)
{
	struct mock_obj *o;

	while ((o = first_failed(MOCK_QP)) != NULL) {
		((struct mock_qp *)o)->async_unacked = 0;
		qp_free((struct mock_qp *)o);
	}
	while ((o = first_failed(MOCK_SRQ)) != NULL)
		srq_free((struct mock_srq *)o);
	while ((o = first_failed(MOCK_CQ)) != NULL) {
		struct mock_cq *c = (struct mock_cq *)o;

		/* what used it is gone or failed too */
		c->users = 0;
		c->acked = c->got;
		c->async_unacked = 0;
		cq_free(c);
	}
	while ((o = first_failed(MOCK_COMP_CHANNEL)) != NULL) {
		struct mock_cc *cc = (struct mock_cc *)o;

		if (cc->ch.refcnt == 0)
			cc_free(cc);
		else
			o->destroy_failed = false; /* a live CQ still holds it */
	}
	while ((o = first_failed(MOCK_MW)) != NULL) {
		mw_unbind((struct mock_mw *)o);
		((struct mock_mw *)o)->pd->users--;
		mock_obj_del(o);
		mock_free(o);
	}
	while ((o = first_failed(MOCK_MR)) != NULL) {
		((struct mock_mr *)o)->pd->users--;
		mock_obj_del(o);
		mock_free(o);
	}
	while ((o = first_failed(MOCK_PD)) != NULL) {
		if (((struct mock_pd *)o)->users == 0) {
			mock_obj_del(o);
			mock_free(o);
		} else {
			o->destroy_failed = false;
		}
	}
	while ((o = first_failed(MOCK_CONTEXT)) != NULL)
		ctx_free((struct mock_ctx *)o);
}

void
mock_verbs_discard_pending(void)
{
	for (struct mock_obj *o = mock_obj_head(MOCK_CONTEXT); o; o = o->next)
		async_drop_for((struct mock_ctx *)o, NULL);
	for (struct mock_obj *o = mock_obj_head(MOCK_COMP_CHANNEL); o; o = o->next)
		cc_drop_for((struct mock_cc *)o, NULL);
	for (struct mock_obj *o = mock_obj_head(MOCK_CQ); o; o = o->next)
		((struct mock_cq *)o)->count = 0;
}

void
mock_verbs_reset(void)
{
	struct mock_obj *o;

	while ((o = mock_obj_head(MOCK_QP)) != NULL) {
		((struct mock_qp *)o)->async_unacked = 0;
		qp_free((struct mock_qp *)o);
	}
	while ((o = mock_obj_head(MOCK_SRQ)) != NULL) {
		struct mock_srq *s = (struct mock_srq *)o;

		mock_obj_del(o);
		pthread_mutex_destroy(&s->srq.mutex);
		pthread_cond_destroy(&s->srq.cond);
		mock_free(s->rq.v);
		mock_free(s);
	}
	while ((o = mock_obj_head(MOCK_CQ)) != NULL)
		cq_free((struct mock_cq *)o);
	while ((o = mock_obj_head(MOCK_COMP_CHANNEL)) != NULL)
		cc_free((struct mock_cc *)o);
	while ((o = mock_obj_head(MOCK_MW)) != NULL) {
		mock_obj_del(o);
		mock_free(o);
	}
	while ((o = mock_obj_head(MOCK_MR)) != NULL) {
		mock_obj_del(o);
		mock_free(o);
	}
	while ((o = mock_obj_head(MOCK_PD)) != NULL) {
		mock_obj_del(o);
		mock_free(o);
	}
	while ((o = mock_obj_head(MOCK_CONTEXT)) != NULL)
		ctx_free((struct mock_ctx *)o);
	while ((o = mock_obj_head(MOCK_DEVICE_LIST)) != NULL)
		devlist_free((struct mock_devlist *)o);
	while (Async_got) {
		struct async_rec *r = Async_got;

		Async_got = r->next;
		mock_free(r);
	}
	Cm_ctx = NULL;
	Cm_pd = NULL;
	mock_free(Sends);
	mock_free(Recvs);
	Sends = Recvs = NULL;
	Nsends = Nrecvs = Capsends = Caprecvs = 0;
	defaults();
}
