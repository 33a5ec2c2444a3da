/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mock_cm.c -- the mocked librdmacm: event channels (real eventfds), ids
 * with a small connection state machine, scriptable events with private
 * data, reactions to calls, address info and device lists.
 * Past ~800 lines: the mocked library's whole surface the unit tests use.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_int.h"

/* ------------------------------------------------------------ structures */

enum id_state {
	ID_IDLE,
	ID_BOUND,
	ID_ADDR_QUERY,
	ID_ADDR_RESOLVED,
	ID_ROUTE_QUERY,
	ID_ROUTE_RESOLVED,
	ID_CONNECT,
	ID_LISTEN,
	ID_REQ_PENDING,		/* passive: conn request not answered yet */
	ID_ACCEPTED,
	ID_REJECTED,
	ID_CONNECTED,
	ID_DISCONNECT,
};

struct mock_cmch {
	struct mock_obj o;
	struct rdma_event_channel ch;
	struct mock_fdq q;
	struct cmev *head, *tail;	/* queued, not got */
};

struct mock_cmid;

struct cmev {
	struct rdma_cm_event ev;	/* first: the pointer handed out */
	struct cmev *next;
	struct mock_cmid *target;	/* ev.id's object */
	struct mock_cmid *owner;	/* whose unacked count it is (listener
					 * for CONNECT_REQUEST) */
	uint8_t *pdata;
};

struct mock_cmid {
	struct mock_obj o;
	struct rdma_cm_id id;
	struct mock_cmch *ch;
	bool own_ch;			/* created with channel NULL (sync) */
	int unacked;
	enum id_state state;
	bool bound;
	bool active;			/* rdma_connect called */
	bool has_cm;			/* connect / accept / reject sent */
	bool passive;			/* from a CONNECT_REQUEST */
	struct mock_cmid *listener;	/* passive: its listener (identity) */
	bool ack_timeout_set;		/* RDMA_OPTION_ID_ACK_TIMEOUT */
	uint8_t ack_timeout;
};

struct mock_ai {
	struct mock_obj o;
	struct rdma_addrinfo ai;
	struct sockaddr_storage addr;
};

struct mock_cmdl {
	struct mock_obj o;
	struct ibv_context **list;
};

/* ---------------------------------------------------------------- state */

static struct cmev *Delivered;	/* got, not acked */
static bool Padding = true;
static bool Reachable = true;
static uint16_t Next_port = 49152;
static uint16_t Next_peer_port = 40000;

enum react_fn {
	R_RESOLVE_ADDR,
	R_RESOLVE_ROUTE,
	R_CONNECT,
	R_ACCEPT,
	R_DISCONNECT,
	R_LISTEN,
	R_REJECT,
	R_COUNT
};

static const char *const React_names[R_COUNT] = {
	"rdma_resolve_addr", "rdma_resolve_route", "rdma_connect",
	"rdma_accept", "rdma_disconnect", "rdma_listen", "rdma_reject",
};

static enum rdma_cm_event_type Auto[R_COUNT];

struct reaction {
	int fn;
	enum rdma_cm_event_type type;
	int status;
	uint8_t len;
	uint8_t pdata[256];
	bool has_param;
	struct rdma_conn_param param;
};

#define MAX_REACT 32
static struct reaction React[MAX_REACT];
static int Nreact;

enum rec_fn {
	C_CONNECT,
	C_ACCEPT,
	C_REJECT,
	C_DISCONNECT,
	C_RESOLVE_ADDR,
	C_RESOLVE_ROUTE,
	C_BIND_ADDR,
	C_LISTEN,
	C_MIGRATE_ID,
	C_COUNT
};

static const char *const Rec_names[C_COUNT] = {
	"rdma_connect", "rdma_accept", "rdma_reject", "rdma_disconnect",
	"rdma_resolve_addr", "rdma_resolve_route", "rdma_bind_addr",
	"rdma_listen", "rdma_migrate_id",
};

static struct mock_cm_call Rec[C_COUNT];
/* order of recorded calls (rec, rdma_set_option), from 1 */
static unsigned Seq;
static struct mock_cm_option Opts[MOCK_CM_MAX_OPTIONS];
static size_t Nopts;

static void
react_defaults(void)
{
	for (int i = 0; i < R_COUNT; i++)
		Auto[i] = MOCK_CM_NO_EVENT;
	Auto[R_RESOLVE_ADDR] = RDMA_CM_EVENT_ADDR_RESOLVED;
	Auto[R_RESOLVE_ROUTE] = RDMA_CM_EVENT_ROUTE_RESOLVED;
	Nreact = 0;
}

__attribute__((constructor)) static void
mock_cm_init(void)
{
	react_defaults();
}

/* ---------------------------------------------------------- user pointer */

void *mock_cm_user_ptr(struct mock_obj *o);

void *
mock_cm_user_ptr(struct mock_obj *o)
{
	switch (o->kind) {
	case MOCK_CM_CHANNEL:
		return &((struct mock_cmch *)o)->ch;
	case MOCK_CM_ID:
		return &((struct mock_cmid *)o)->id;
	case MOCK_ADDRINFO:
		return &((struct mock_ai *)o)->ai;
	case MOCK_CM_DEVICE_LIST:
		return ((struct mock_cmdl *)o)->list;
	default:
		return NULL;
	}
}

static struct mock_cmch *
ch_get(struct rdma_event_channel *ch, const char *fn)
{
	return (struct mock_cmch *)(void *)mock_obj_get(MOCK_CM_CHANNEL, ch, fn);
}

static struct mock_cmid *
id_get(struct rdma_cm_id *id, const char *fn)
{
	struct mock_cmid *m =
		(struct mock_cmid *)(void *)mock_obj_get(MOCK_CM_ID, id, fn);

	if (m->o.hidden)
		mock_die("%s: id %p was never handed out (its CONNECT_REQUEST "
				"event was not got)", fn, (void *)id);
	return m;
}

/* ------------------------------------------------------------ recording */

static struct mock_cm_call *
rec(enum rec_fn f, struct mock_cmid *m)
{
	struct mock_cm_call *r = &Rec[f];
	unsigned count = r->count + 1;
	unsigned with_ack = r->count_with_ack_timeout + m->ack_timeout_set;

	memset(r, 0, sizeof(*r));
	r->count = count;
	r->count_with_ack_timeout = with_ack;
	r->ack_timeout_set = m->ack_timeout_set;
	r->ack_timeout = m->ack_timeout;
	r->id = &m->id;
	r->seq = ++Seq;
	r->qp_rq_used = m->id.qp ? mock_qp_rq_used(m->id.qp) : -1;
	return r;
}

static void
rec_param(struct mock_cm_call *r, const struct rdma_conn_param *p)
{
	if (p == NULL)
		return;
	r->has_param = true;
	r->param = *p;
	r->param.private_data = NULL;
	r->pdata_len = p->private_data ? p->private_data_len : 0;
	if (r->pdata_len)
		memcpy(r->pdata, p->private_data, r->pdata_len);
}

const struct mock_cm_call *
mock_cm_last(const char *fn)
{
	MOCK_LOCK();
	for (int i = 0; i < C_COUNT; i++) {
		if (fn && strcmp(fn, Rec_names[i]) == 0) {
			MOCK_UNLOCK();
			return &Rec[i];
		}
	}
	mock_die("mock_cm_last: \"%s\" is not recorded", fn ? fn : "(null)");
}

size_t
mock_cm_option_count(void)
{
	MOCK_LOCK();
	size_t n = Nopts;
	MOCK_UNLOCK();
	return n;
}

const struct mock_cm_option *
mock_cm_option(size_t i)
{
	MOCK_LOCK();
	if (i >= Nopts)
		mock_die("mock_cm_option(%zu): only %zu recorded", i, Nopts);
	const struct mock_cm_option *o = &Opts[i];
	MOCK_UNLOCK();
	return o;
}

/* --------------------------------------------------------------- events */

static unsigned
wire_len(enum rdma_cm_event_type type, const struct mock_cmid *target,
		uint8_t len)
{
	if (!Padding)
		return len;
	switch (type) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return MOCK_PDATA_REQ;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		return MOCK_PDATA_REP;
	case RDMA_CM_EVENT_ESTABLISHED:
		return target->active ? MOCK_PDATA_REP : len;
	case RDMA_CM_EVENT_REJECTED:
		return MOCK_PDATA_REJ;
	default:
		return len;
	}
}

static void
sa_set_local(struct sockaddr_storage *ss, int family, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		inet_pton(AF_INET6, "2001:db8::1", &s6->sin6_addr);
		s6->sin6_port = htons(port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(0xc0000201); /* 192.0.2.1 */
		s4->sin_port = htons(port);
	}
}

static uint16_t
sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
	return 0;
}

static void
sa_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)(void *)sa)->sin6_port = htons(port);
	else if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)(void *)sa)->sin_port = htons(port);
}

static bool
sa_wildcard(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr ==
			htonl(INADDR_ANY);
	return true;
}

static size_t
sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		sizeof(struct sockaddr_in);
}

static void
id_set_device(struct mock_cmid *m)
{
	m->id.verbs = mock_cm_ibv_ctx();
	m->id.port_num = 1;
	m->id.pd = mock_cm_default_pd();
}

/* kernel-side effects of an event being generated */
static void
event_effects_queue(struct mock_cmid *m, enum rdma_cm_event_type type)
{
	struct sockaddr *src = &m->id.route.addr.src_addr;

	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		m->state = ID_ADDR_RESOLVED;
		id_set_device(m);
		if (src->sa_family == AF_UNSPEC || sa_wildcard(src)) {
			uint16_t port = src->sa_family ? sa_port(src) : 0;
			int fam = m->id.route.addr.dst_addr.sa_family;

			sa_set_local(&m->id.route.addr.src_storage, fam,
					port ? port : Next_port++);
			m->bound = true;
		}
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
		m->state = m->bound ? ID_BOUND : ID_IDLE;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		m->state = ID_ROUTE_RESOLVED;
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		m->state = ID_ADDR_RESOLVED;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		m->state = ID_CONNECTED;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		m->state = ID_DISCONNECT;
		break;
	default:
		break;
	}
}

static struct cmev *
cm_queue(struct mock_cmid *target, struct mock_cmid *owner,
		struct mock_cmid *listener, enum rdma_cm_event_type type,
		int status, const void *pdata, uint8_t len,
		const struct rdma_conn_param *param)
{
	struct mock_cmch *ch = owner->ch;
	unsigned wire = wire_len(type, target, len);

	if (len > wire)
		mock_die("mock_cm_queue_event: %u bytes of private data, but a "
				"%s carries at most %u on IB/RoCE", len,
				rdma_event_str(type), wire);
	if (len && pdata == NULL)
		mock_die("mock_cm_queue_event: NULL pdata with len %u", len);

	struct cmev *e = mock_alloc(sizeof(*e));

	e->target = target;
	e->owner = owner;
	if (wire) {
		e->pdata = mock_alloc(wire);	/* zero padded */
		if (len)
			memcpy(e->pdata, pdata, len);
	}
	e->ev.id = &target->id;
	e->ev.listen_id = listener ? &listener->id : NULL;
	e->ev.event = type;
	e->ev.status = status;
	e->ev.param.conn.private_data = e->pdata;
	e->ev.param.conn.private_data_len = (uint8_t)wire;
	if (type == RDMA_CM_EVENT_CONNECT_REQUEST ||
			type == RDMA_CM_EVENT_ESTABLISHED ||
			type == RDMA_CM_EVENT_CONNECT_RESPONSE) {
		e->ev.param.conn.responder_resources = 16;
		e->ev.param.conn.initiator_depth = 16;
		e->ev.param.conn.retry_count = 7;
		e->ev.param.conn.rnr_retry_count = 7;
		e->ev.param.conn.qp_num = 0x99;
	}
	if (param) {
		e->ev.param.conn = *param;
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)wire;
	}
	event_effects_queue(target, type);
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	mock_fdq_inc(&ch->q);
	return e;
}

static void id_free(struct mock_cmid *m);

static void
ev_free(struct cmev *e)
{
	mock_free(e->pdata);
	mock_free(e);
}

/* drop queued (not got) events matching `m` (NULL: all) from ch; hidden
 * conn-request ids they carry go with them */
static void
ch_drop(struct mock_cmch *ch, struct mock_cmid *m)
{
	struct cmev **pp = &ch->head;

	ch->tail = NULL;
	while (*pp) {
		struct cmev *e = *pp;

		if (m == NULL || e->target == m || e->owner == m) {
			*pp = e->next;
			mock_fdq_dec(&ch->q);
			if (e->target->o.hidden && e->target != m)
				id_free(e->target);
			ev_free(e);
		} else {
			ch->tail = e;
			pp = &e->next;
		}
	}
}

void
mock_cm_queue_event_ex(struct rdma_cm_id *id,
		const struct mock_cm_event_spec *spec)
{
	MOCK_LOCK();
	struct mock_cmid *m =
		(struct mock_cmid *)(void *)mock_obj_get(MOCK_CM_ID, id,
				"mock_cm_queue_event");
	if (spec == NULL)
		mock_die("mock_cm_queue_event_ex: NULL spec");
	if (spec->type == RDMA_CM_EVENT_CONNECT_REQUEST)
		mock_die("mock_cm_queue_event: use mock_cm_queue_conn_request");
	cm_queue(m, m, NULL, spec->type, spec->status, spec->pdata, spec->len,
			spec->set_param ? &spec->param : NULL);
	MOCK_UNLOCK();
}

void
mock_cm_queue_event(struct rdma_cm_id *id, enum rdma_cm_event_type type,
		int status, const void *pdata, uint8_t len)
{
	struct mock_cm_event_spec spec = { .type = type, .status = status,
		.pdata = pdata, .len = len };

	mock_cm_queue_event_ex(id, &spec);
}

static struct mock_cmid *
id_new(struct mock_cmch *ch, void *context, enum rdma_port_space ps,
		enum ibv_qp_type qpt)
{
	struct mock_cmid *m = mock_alloc(sizeof(*m));

	m->ch = ch;
	m->id.channel = &ch->ch;
	m->id.context = context;
	m->id.ps = ps;
	m->id.qp_type = qpt;
	mock_obj_add(&m->o, MOCK_CM_ID);
	return m;
}

struct rdma_cm_id *
mock_cm_queue_conn_request(struct rdma_cm_id *listen_id, const void *pdata,
		uint8_t len)
{
	struct mock_cm_event_spec spec = {
		.type = RDMA_CM_EVENT_CONNECT_REQUEST, .pdata = pdata, .len = len };

	return mock_cm_queue_conn_request_ex(listen_id, &spec);
}

struct rdma_cm_id *
mock_cm_queue_conn_request_ex(struct rdma_cm_id *listen_id,
		const struct mock_cm_event_spec *spec)
{
	const void *pdata = spec->pdata;
	uint8_t len = spec->len;
	const struct rdma_conn_param *param = spec->set_param ?
		&spec->param : NULL;

	MOCK_LOCK();
	struct mock_cmid *l = id_get(listen_id, "mock_cm_queue_conn_request");
	if (l->state != ID_LISTEN)
		mock_die("mock_cm_queue_conn_request: the id is not listening "
				"(rdma_listen)");
	struct mock_cmid *c = id_new(l->ch, l->id.context, l->id.ps,
			l->id.qp_type);

	c->o.hidden = true;
	c->passive = true;
	c->listener = l;
	c->state = ID_REQ_PENDING;
	c->bound = true;
	id_set_device(c);
	memcpy(&c->id.route.addr.src_storage, &l->id.route.addr.src_storage,
			sizeof(struct sockaddr_storage));
	struct sockaddr *src = &c->id.route.addr.src_addr;

	if (sa_wildcard(src))
		sa_set_local(&c->id.route.addr.src_storage,
				src->sa_family == AF_INET6 ? AF_INET6 : AF_INET,
				sa_port(src));
	sa_set_local(&c->id.route.addr.dst_storage, src->sa_family,
			Next_peer_port++);
	/* the peer is .2 / ::2 */
	if (src->sa_family == AF_INET6)
		c->id.route.addr.dst_sin6.sin6_addr.s6_addr[15] = 2;
	else
		c->id.route.addr.dst_sin.sin_addr.s_addr = htonl(0xc0000202);
	cm_queue(c, l, l, RDMA_CM_EVENT_CONNECT_REQUEST, 0, pdata, len, param);
	MOCK_UNLOCK();
	return &c->id;
}

static int
react_index(const char *fn)
{
	for (int i = 0; fn && i < R_COUNT; i++)
		if (strcmp(fn, React_names[i]) == 0)
			return i;
	mock_die("mock_cm: \"%s\" has no reactions", fn ? fn : "(null)");
}

void
mock_cm_set_auto(const char *fn, enum rdma_cm_event_type type)
{
	MOCK_LOCK();
	Auto[react_index(fn)] = type;
	MOCK_UNLOCK();
}

void
mock_cm_react_ex(const char *fn, const struct mock_cm_event_spec *spec)
{
	MOCK_LOCK();
	int f = react_index(fn);

	if (Nreact == MAX_REACT)
		mock_die("mock_cm_react: more than %d reactions queued", MAX_REACT);
	if (spec->len && spec->pdata == NULL)
		mock_die("mock_cm_react: NULL pdata with len %u", spec->len);
	struct reaction *r = &React[Nreact++];

	memset(r, 0, sizeof(*r));
	r->fn = f;
	r->type = spec->type;
	r->status = spec->status;
	r->len = spec->len;
	if (spec->len)
		memcpy(r->pdata, spec->pdata, spec->len);
	r->has_param = spec->set_param;
	r->param = spec->param;
	MOCK_UNLOCK();
}

void
mock_cm_react(const char *fn, enum rdma_cm_event_type type, int status,
		const void *pdata, uint8_t len)
{
	struct mock_cm_event_spec spec = { .type = type, .status = status,
		.pdata = pdata, .len = len };

	mock_cm_react_ex(fn, &spec);
}

static void
react(enum react_fn f, struct mock_cmid *m)
{
	for (int i = 0; i < Nreact; i++) {
		if (React[i].fn != (int)f)
			continue;
		struct reaction r = React[i];

		memmove(&React[i], &React[i + 1],
				(size_t)(Nreact - i - 1) * sizeof(React[0]));
		Nreact--;
		if (r.type != MOCK_CM_NO_EVENT)
			cm_queue(m, m, NULL, r.type, r.status, r.pdata, r.len,
					r.has_param ? &r.param : NULL);
		return;
	}
	if (f == R_RESOLVE_ADDR && !Reachable &&
			Auto[f] == RDMA_CM_EVENT_ADDR_RESOLVED) {
		cm_queue(m, m, NULL, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV, NULL, 0,
				NULL);
		return;
	}
	if (Auto[f] != MOCK_CM_NO_EVENT)
		cm_queue(m, m, NULL, Auto[f], 0, NULL, 0, NULL);
}

void
mock_cm_set_pdata_padding(bool on)
{
	MOCK_LOCK();
	Padding = on;
	MOCK_UNLOCK();
}

void
mock_cm_set_reachable(bool on)
{
	MOCK_LOCK();
	Reachable = on;
	MOCK_UNLOCK();
}

int
mock_cm_pending(struct rdma_event_channel *ch)
{
	MOCK_LOCK();
	int n = ch_get(ch, "mock_cm_pending")->q.pending;
	MOCK_UNLOCK();
	return n;
}

int
mock_cm_unacked(struct rdma_cm_id *id)
{
	MOCK_LOCK();
	int n = ((struct mock_cmid *)(void *)mock_obj_get(MOCK_CM_ID, id,
				"mock_cm_unacked"))->unacked;
	MOCK_UNLOCK();
	return n;
}

int
mock_cm_unacked_total(void)
{
	int n = 0;

	for (struct cmev *e = Delivered; e; e = e->next)
		n++;
	return n;
}

/* ------------------------------------------------------------- channels */

static struct mock_cmch *
ch_new(bool internal)
{
	struct mock_cmch *c = mock_alloc(sizeof(*c));

	mock_fdq_open(&c->q);
	c->ch.fd = c->q.fd;
	c->o.internal = internal;
	mock_obj_add(&c->o, MOCK_CM_CHANNEL);
	return c;
}

static void
ch_free(struct mock_cmch *c)
{
	ch_drop(c, NULL);
	mock_fdq_close(&c->q, "CM event channel");
	mock_obj_del(&c->o);
	mock_free(c);
}

struct rdma_event_channel *
rdma_create_event_channel(void)
{
	int rc = 0;

	MOCK_LOCK();
	int err = mock_enter(MF_RDMA_CREATE_EVENT_CHANNEL, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	struct rdma_event_channel *ch = &ch_new(false)->ch;
	MOCK_UNLOCK();
	return ch;
}

void
rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cmch *c = ch_get(channel, "rdma_destroy_event_channel");
	mock_enter(MF_RDMA_DESTROY_EVENT_CHANNEL, &rc);
	int ids = 0;

	for (struct mock_obj *o = mock_obj_head(MOCK_CM_ID); o; o = o->next)
		if (!o->hidden && ((struct mock_cmid *)o)->ch == c)
			ids++;
	if (ids)
		mock_die("rdma_destroy_event_channel: %d id(s) still use this "
				"channel (destroy or migrate them first)", ids);
	for (struct cmev *e = Delivered; e; e = e->next)
		if (e->owner->ch == c)
			mock_die("rdma_destroy_event_channel: an event got from "
					"it is not acknowledged");
	ch_free(c);
	MOCK_UNLOCK();
}

/* ----------------------------------------------------------------- ids */

int
rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		void *context, enum rdma_port_space ps)
{
	int rc = -1;
	struct mock_cmch *c = NULL;

	MOCK_LOCK();
	if (channel)
		c = ch_get(channel, "rdma_create_id");
	if (id == NULL)
		mock_die("rdma_create_id: NULL id");
	int err = mock_enter(MF_RDMA_CREATE_ID, &rc);
	enum ibv_qp_type qpt = IBV_QPT_RC;

	if (!err) {
		switch (ps) {
		case RDMA_PS_TCP:
		case RDMA_PS_IB:
			qpt = IBV_QPT_RC;
			break;
		case RDMA_PS_UDP:
		case RDMA_PS_IPOIB:
			qpt = IBV_QPT_UD;
			break;
		default:
			err = EINVAL;
			rc = -1;
		}
	}
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	bool own = c == NULL;

	if (own)
		c = ch_new(true);
	struct mock_cmid *m = id_new(c, context, ps, qpt);

	m->own_ch = own;
	*id = &m->id;
	MOCK_UNLOCK();
	return 0;
}

static void
id_free(struct mock_cmid *m)
{
	mock_qp_forget_cm_id(&m->id);
	if (m->own_ch)
		ch_free(m->ch);
	mock_obj_del(&m->o);
	mock_free(m);
}

int
rdma_destroy_id(struct rdma_cm_id *id)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_destroy_id");
	if (m->unacked)
		mock_die("rdma_destroy_id: %d event(s) of this id are not "
				"acknowledged (rdma_ack_cm_event): the real call "
				"blocks forever", m->unacked);
	int err = mock_enter(MF_RDMA_DESTROY_ID, &rc);
	if (err) {
		m->o.destroy_failed = true;
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	/* the kernel drops the id's queued events (and the requests queued
	 * on a listener, with their new ids) */
	ch_drop(m->ch, m);
	/* passive ids whose listener goes away keep working */
	for (struct mock_obj *o = mock_obj_head(MOCK_CM_ID); o; o = o->next)
		if (((struct mock_cmid *)o)->listener == m)
			((struct mock_cmid *)o)->listener = NULL;
	id_free(m);
	MOCK_UNLOCK();
	return 0;
}

int
rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	int rc = -1;
	struct mock_cmch *c = NULL;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_migrate_id");
	if (channel)
		c = ch_get(channel, "rdma_migrate_id");
	if (m->unacked)
		mock_die("rdma_migrate_id: %d event(s) of this id are not "
				"acknowledged: the real call blocks until they are",
				m->unacked);
	int err = mock_enter(MF_RDMA_MIGRATE_ID, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	struct mock_cm_call *r = rec(C_MIGRATE_ID, m);

	(void)r;
	struct mock_cmch *old = m->ch;
	bool own = c == NULL;

	if (own)
		c = ch_new(true);
	/* move the id's queued events, in order */
	struct cmev **pp = &old->head;
	struct cmev *moved = NULL, **mt = &moved;

	old->tail = NULL;
	while (*pp) {
		struct cmev *e = *pp;

		if (e->target == m || e->owner == m) {
			*pp = e->next;
			mock_fdq_dec(&old->q);
			e->next = NULL;
			*mt = e;
			mt = &e->next;
		} else {
			old->tail = e;
			pp = &e->next;
		}
	}
	for (struct cmev *e = moved, *n; e; e = n) {
		n = e->next;
		e->next = NULL;
		if (c->tail)
			c->tail->next = e;
		else
			c->head = e;
		c->tail = e;
		mock_fdq_inc(&c->q);
	}
	/* hidden ids of moved requests live on the new channel too */
	for (struct cmev *e = c->head; e; e = e->next)
		if (e->owner == m && e->target != m) {
			e->target->ch = c;
			e->target->id.channel = &c->ch;
		}
	m->ch = c;
	m->id.channel = &c->ch;
	if (m->own_ch)
		ch_free(old);
	m->own_ch = own;
	MOCK_UNLOCK();
	return 0;
}

static bool
port_in_use(const struct sockaddr *sa, uint16_t port, struct mock_cmid *self)
{
	for (struct mock_obj *o = mock_obj_head(MOCK_CM_ID); o; o = o->next) {
		struct mock_cmid *m = (struct mock_cmid *)o;
		const struct sockaddr *s = &m->id.route.addr.src_addr;

		if (m == self || !m->bound || m->passive)
			continue;
		if (s->sa_family != sa->sa_family || sa_port(s) != port)
			continue;
		if (sa_wildcard(s) || sa_wildcard(sa) ||
				memcmp(s, sa, sa_len(sa)) == 0)
			return true;
	}
	return false;
}

static int
do_bind(struct mock_cmid *m, const struct sockaddr *addr)
{
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return EAFNOSUPPORT;
	if (m->bound)
		return EINVAL;
	uint16_t port = sa_port(addr);

	if (port && port_in_use(addr, port, m))
		return EADDRINUSE;
	if (!sa_wildcard(addr) && !Reachable)
		return ENODEV;
	memset(&m->id.route.addr.src_storage, 0, sizeof(struct sockaddr_storage));
	memcpy(&m->id.route.addr.src_storage, addr, sa_len(addr));
	if (port == 0)
		sa_set_port(&m->id.route.addr.src_addr, Next_port++);
	if (!sa_wildcard(addr))
		id_set_device(m);
	m->bound = true;
	if (m->state == ID_IDLE)
		m->state = ID_BOUND;
	return 0;
}

int
rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_bind_addr");
	int err = mock_enter(MF_RDMA_BIND_ADDR, &rc);
	if (!err && addr == NULL)
		err = EINVAL;
	if (!err)
		err = do_bind(m, addr);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	struct mock_cm_call *r = rec(C_BIND_ADDR, m);

	memcpy(&r->addr, addr, sa_len(addr));
	MOCK_UNLOCK();
	return 0;
}

int
rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		struct sockaddr *dst_addr, int timeout_ms)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_resolve_addr");
	int err = mock_enter(MF_RDMA_RESOLVE_ADDR, &rc);
	if (!err && (dst_addr == NULL || (dst_addr->sa_family != AF_INET &&
			dst_addr->sa_family != AF_INET6)))
		err = EINVAL;
	if (!err && m->state != ID_IDLE && m->state != ID_BOUND)
		err = EINVAL;
	if (!err && src_addr && !m->bound)
		err = do_bind(m, src_addr);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	memset(&m->id.route.addr.dst_storage, 0, sizeof(struct sockaddr_storage));
	memcpy(&m->id.route.addr.dst_storage, dst_addr, sa_len(dst_addr));
	m->state = ID_ADDR_QUERY;
	struct mock_cm_call *r = rec(C_RESOLVE_ADDR, m);

	r->timeout_ms = timeout_ms;
	memcpy(&r->addr, dst_addr, sa_len(dst_addr));
	react(R_RESOLVE_ADDR, m);
	MOCK_UNLOCK();
	return 0;
}

int
rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_resolve_route");
	int err = mock_enter(MF_RDMA_RESOLVE_ROUTE, &rc);
	if (!err && m->state != ID_ADDR_RESOLVED)
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	m->state = ID_ROUTE_QUERY;
	rec(C_RESOLVE_ROUTE, m)->timeout_ms = timeout_ms;
	react(R_RESOLVE_ROUTE, m);
	MOCK_UNLOCK();
	return 0;
}

int
rdma_listen(struct rdma_cm_id *id, int backlog)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_listen");
	int err = mock_enter(MF_RDMA_LISTEN, &rc);
	if (!err && m->state != ID_IDLE && m->state != ID_BOUND)
		err = EINVAL;
	if (!err && !m->bound) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		err = do_bind(m, (struct sockaddr *)&any);
	}
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	m->state = ID_LISTEN;
	rec(C_LISTEN, m)->backlog = backlog;
	react(R_LISTEN, m);
	MOCK_UNLOCK();
	return 0;
}

__be16
rdma_get_src_port(struct rdma_cm_id *id)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_get_src_port");
	mock_enter(MF_RDMA_GET_SRC_PORT, &rc);
	__be16 p = htons(sa_port(&m->id.route.addr.src_addr));
	MOCK_UNLOCK();
	return p;
}

__be16
rdma_get_dst_port(struct rdma_cm_id *id)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_get_dst_port");
	mock_enter(MF_RDMA_GET_DST_PORT, &rc);
	__be16 p = htons(sa_port(&m->id.route.addr.dst_addr));
	MOCK_UNLOCK();
	return p;
}

/* ------------------------------------------------------------------ QP */

static int
create_qp_common(struct mock_cmid *m, struct ibv_pd *pd,
		struct ibv_qp_init_attr_ex *ax, bool ex, const char *fn)
{
	if (m->id.verbs == NULL)
		return EINVAL;
	if (m->id.qp != NULL)
		return EINVAL;
	if (pd == NULL)
		pd = mock_cm_default_pd();
	if (mock_obj_find(MOCK_PD, pd) == NULL)
		mock_die("%s: pd %p is NULL, destroyed or was never created", fn,
				(void *)pd);
	if (pd->context != m->id.verbs)
		return EINVAL;
	if (ax->send_cq == NULL || ax->recv_cq == NULL)
		mock_die("%s: a NULL send_cq / recv_cq (librdmacm makes its own "
				"CQs then) is not mocked", fn);
	ax->pd = pd;
	ax->comp_mask |= IBV_QP_INIT_ATTR_PD;
	if (ax->qp_type == 0)
		ax->qp_type = m->id.qp_type;
	struct ibv_qp *qp = mock_qp_create_int(pd, ax, ex, &m->id,
			IBV_QPS_INIT);

	if (qp == NULL)
		return errno;
	m->id.qp = qp;
	return 0;
}

int
rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		struct ibv_qp_init_attr *qp_init_attr)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_create_qp");
	if (qp_init_attr == NULL)
		mock_die("rdma_create_qp: NULL qp_init_attr");
	int err = mock_enter(MF_RDMA_CREATE_QP, &rc);
	if (!err) {
		struct ibv_qp_init_attr_ex ax = { 0 };

		ax.qp_context = qp_init_attr->qp_context;
		ax.send_cq = qp_init_attr->send_cq;
		ax.recv_cq = qp_init_attr->recv_cq;
		ax.srq = qp_init_attr->srq;
		ax.cap = qp_init_attr->cap;
		ax.qp_type = qp_init_attr->qp_type;
		ax.sq_sig_all = qp_init_attr->sq_sig_all;
		err = create_qp_common(m, pd, &ax, false, "rdma_create_qp");
		if (!err)
			qp_init_attr->cap = ax.cap;
	}
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	MOCK_UNLOCK();
	return 0;
}

int
rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_create_qp_ex");
	if (attr == NULL)
		mock_die("rdma_create_qp_ex: NULL attr");
	int err = mock_enter(MF_RDMA_CREATE_QP_EX, &rc);
	if (!err)
		err = create_qp_common(m, (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ?
				attr->pd : NULL, attr, true, "rdma_create_qp_ex");
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	MOCK_UNLOCK();
	return 0;
}

void
rdma_destroy_qp(struct rdma_cm_id *id)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_destroy_qp");
	mock_enter(MF_RDMA_DESTROY_QP, &rc);
	if (m->id.qp) {
		mock_qp_destroy_int(m->id.qp, "rdma_destroy_qp");
		m->id.qp = NULL;
	}
	MOCK_UNLOCK();
}

/* ---------------------------------------------------------- connections */

static int
check_param(struct mock_cmid *m, const struct rdma_conn_param *p,
		unsigned max_pdata)
{
	const struct ibv_device_attr *a = &mock_dev_attr_int()->orig_attr;

	if (p == NULL)
		return m->id.qp ? 0 : EINVAL;
	if (p->private_data_len && p->private_data == NULL)
		return EINVAL;
	if (Padding && p->private_data && p->private_data_len > max_pdata)
		return EINVAL;
	if (p->responder_resources != RDMA_MAX_RESP_RES &&
			p->responder_resources > a->max_qp_rd_atom)
		return EINVAL;
	if (p->initiator_depth != RDMA_MAX_INIT_DEPTH &&
			p->initiator_depth > a->max_qp_init_rd_atom)
		return EINVAL;
	return 0;
}

int
rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_connect");
	int err = mock_enter(MF_RDMA_CONNECT, &rc);
	if (!err && m->state != ID_ROUTE_RESOLVED)
		err = EINVAL;
	if (!err)
		err = check_param(m, conn_param, MOCK_PDATA_REQ);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	m->state = ID_CONNECT;
	m->active = true;
	m->has_cm = true;
	rec_param(rec(C_CONNECT, m), conn_param);
	react(R_CONNECT, m);
	MOCK_UNLOCK();
	return 0;
}

int
rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_accept");
	int err = mock_enter(MF_RDMA_ACCEPT, &rc);
	if (!err && (!m->passive || m->state != ID_REQ_PENDING))
		err = EINVAL;
	if (!err)
		err = check_param(m, conn_param, MOCK_PDATA_REP);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	if (m->id.qp)
		mock_qp_to_state(m->id.qp, IBV_QPS_RTS);
	m->state = ID_ACCEPTED;
	m->has_cm = true;
	rec_param(rec(C_ACCEPT, m), conn_param);
	react(R_ACCEPT, m);
	MOCK_UNLOCK();
	return 0;
}

int
rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_reject");
	int err = mock_enter(MF_RDMA_REJECT, &rc);
	if (!err && (!m->passive || m->state != ID_REQ_PENDING))
		err = EINVAL;
	if (!err && private_data_len && private_data == NULL)
		err = EINVAL;
	if (!err && Padding && private_data && private_data_len > MOCK_PDATA_REJ)
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	m->state = ID_REJECTED;
	m->has_cm = true;
	struct mock_cm_call *r = rec(C_REJECT, m);

	r->pdata_len = private_data ? private_data_len : 0;
	if (r->pdata_len)
		memcpy(r->pdata, private_data, r->pdata_len);
	react(R_REJECT, m);
	MOCK_UNLOCK();
	return 0;
}

int
rdma_disconnect(struct rdma_cm_id *id)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_disconnect");
	int err = mock_enter(MF_RDMA_DISCONNECT, &rc);
	if (!err && !m->has_cm)
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	/* librdmacm moves an IB / RoCE QP to the error state first */
	if (m->id.qp)
		mock_qp_to_state(m->id.qp, IBV_QPS_ERR);
	m->state = ID_DISCONNECT;
	rec(C_DISCONNECT, m);
	react(R_DISCONNECT, m);
	MOCK_UNLOCK();
	return 0;
}

int
rdma_establish(struct rdma_cm_id *id)
{
	int rc = -1;

	MOCK_LOCK();
	id_get(id, "rdma_establish");
	int err = mock_enter(MF_RDMA_ESTABLISH, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	MOCK_UNLOCK();
	return 0;
}

int
rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		size_t optlen)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_set_option");
	int err = mock_enter(MF_RDMA_SET_OPTION, &rc);
	if (!err && (optval == NULL || optlen == 0))
		err = EINVAL;
	/* the kernel (ucma_set_option): level RDMA_OPTION_IB knows only
	 * RDMA_OPTION_IB_PATH (not modelled here) -- any other option at
	 * that level, e.g. an ACK timeout asked at the wrong level, is
	 * ENOSYS; the ACK timeout is RDMA_OPTION_ID's, one byte */
	if (!err && level == RDMA_OPTION_IB)
		err = ENOSYS;
	if (!err && level == RDMA_OPTION_ID &&
			optname == RDMA_OPTION_ID_ACK_TIMEOUT &&
			optlen != sizeof(uint8_t))
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	if (Nopts == MOCK_CM_MAX_OPTIONS)
		mock_die("rdma_set_option: more than %d calls since reset",
				MOCK_CM_MAX_OPTIONS);
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT) {
		m->ack_timeout_set = true;
		m->ack_timeout = *(const uint8_t *)optval;
	}
	struct mock_cm_option *o = &Opts[Nopts++];
	memset(o, 0, sizeof(*o));
	o->seq = ++Seq;
	o->id = &m->id;
	o->level = level;
	o->optname = optname;
	o->optlen = optlen;
	memcpy(o->value, optval, optlen < sizeof(o->value) ? optlen :
			sizeof(o->value));
	MOCK_UNLOCK();
	return 0;
}

int
rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		int *qp_attr_mask)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmid *m = id_get(id, "rdma_init_qp_attr");
	int err = mock_enter(MF_RDMA_INIT_QP_ATTR, &rc);
	if (!err && (qp_attr == NULL || qp_attr_mask == NULL || !m->id.verbs))
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	memset(qp_attr, 0, sizeof(*qp_attr));
	qp_attr->qp_state = IBV_QPS_INIT;
	qp_attr->port_num = 1;
	qp_attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ;
	*qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
		IBV_QP_PORT;
	MOCK_UNLOCK();
	return 0;
}

/* --------------------------------------------------------- get / ack */

int
rdma_get_cm_event(struct rdma_event_channel *channel,
		struct rdma_cm_event **event)
{
	int rc = -1;

	MOCK_LOCK();
	struct mock_cmch *c = ch_get(channel, "rdma_get_cm_event");
	if (event == NULL)
		mock_die("rdma_get_cm_event: NULL event");
	int err = mock_enter(MF_RDMA_GET_CM_EVENT, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	if (c->head == NULL) {
		if (!mock_fd_nonblocking(c->q.fd))
			mock_die("rdma_get_cm_event: no event queued and the "
					"channel fd is blocking: the real call "
					"would block forever");
		errno = EAGAIN;
		MOCK_UNLOCK();
		return -1;
	}
	struct cmev *e = c->head;

	c->head = e->next;
	if (c->head == NULL)
		c->tail = NULL;
	mock_fdq_dec(&c->q);
	e->next = Delivered;
	Delivered = e;
	e->owner->unacked++;
	/* librdmacm's own work when an event is read */
	if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST)
		e->target->o.hidden = false;
	if (e->ev.event == RDMA_CM_EVENT_ESTABLISHED && e->target->active &&
			e->target->id.qp &&
			mock_qp_state(e->target->id.qp) != IBV_QPS_ERR)
		mock_qp_to_state(e->target->id.qp, IBV_QPS_RTS);
	*event = &e->ev;
	MOCK_UNLOCK();
	return 0;
}

int
rdma_ack_cm_event(struct rdma_cm_event *event)
{
	int rc = 0;

	MOCK_LOCK();
	mock_enter(MF_RDMA_ACK_CM_EVENT, &rc);
	if (event == NULL) {
		errno = EINVAL;
		MOCK_UNLOCK();
		return -1;
	}
	struct cmev **pp = &Delivered;

	while (*pp && &(*pp)->ev != event)
		pp = &(*pp)->next;
	if (*pp == NULL)
		mock_die("rdma_ack_cm_event: event %p was never got or is "
				"acked twice", (void *)event);
	struct cmev *e = *pp;

	*pp = e->next;
	e->owner->unacked--;
	ev_free(e);
	MOCK_UNLOCK();
	return 0;
}

/* ----------------------------------------------------------- addrinfo */

int
rdma_getaddrinfo(const char *node, const char *service,
		const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	int rc = -1;

	MOCK_LOCK();
	if (res == NULL)
		mock_die("rdma_getaddrinfo: NULL res");
	int err = mock_enter(MF_RDMA_GETADDRINFO, &rc);
	if (!err && !node && !service && !hints)
		err = EINVAL;
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return rc;
	}
	struct addrinfo h = { 0 }, *ai = NULL;

	h.ai_socktype = SOCK_STREAM;
	h.ai_protocol = IPPROTO_TCP;
	if (hints) {
		if (hints->ai_flags & RAI_PASSIVE)
			h.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			h.ai_flags |= AI_NUMERICHOST;
		h.ai_family = hints->ai_family;
	}
	int g = getaddrinfo(node, service, &h, &ai);

	if (g != 0) {
		/* rdma-core 44 returns -1 with errno = the (negative) EAI code */
		errno = g;
		MOCK_UNLOCK();
		return -1;
	}
	struct mock_ai *m = mock_alloc(sizeof(*m));

	memcpy(&m->addr, ai->ai_addr, ai->ai_addrlen);
	m->ai.ai_family = ai->ai_family;
	m->ai.ai_qp_type = IBV_QPT_RC;
	m->ai.ai_port_space = RDMA_PS_TCP;
	if (hints && (hints->ai_flags & RAI_PASSIVE)) {
		m->ai.ai_flags = RAI_PASSIVE;
		m->ai.ai_src_addr = (struct sockaddr *)&m->addr;
		m->ai.ai_src_len = ai->ai_addrlen;
	} else {
		m->ai.ai_dst_addr = (struct sockaddr *)&m->addr;
		m->ai.ai_dst_len = ai->ai_addrlen;
	}
	freeaddrinfo(ai);
	mock_obj_add(&m->o, MOCK_ADDRINFO);
	*res = &m->ai;
	MOCK_UNLOCK();
	return 0;
}

void
rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	int rc = 0;

	MOCK_LOCK();
	mock_enter(MF_RDMA_FREEADDRINFO, &rc);
	while (res) {
		struct mock_ai *m = (struct mock_ai *)(void *)mock_obj_get(
				MOCK_ADDRINFO, res, "rdma_freeaddrinfo");

		res = res->ai_next;
		mock_obj_del(&m->o);
		mock_free(m);
	}
	MOCK_UNLOCK();
}

/* ------------------------------------------------------------ devices */

struct ibv_context **
rdma_get_devices(int *num_devices)
{
	int rc = 0;

	MOCK_LOCK();
	int err = mock_enter(MF_RDMA_GET_DEVICES, &rc);
	if (err) {
		errno = err;
		MOCK_UNLOCK();
		return NULL;
	}
	int n = mock_dev_count_int() > 0 ? 1 : 0;
	struct mock_cmdl *l = mock_alloc(sizeof(*l));

	l->list = mock_alloc((size_t)(n + 1) * sizeof(*l->list));
	if (n)
		l->list[0] = mock_cm_ibv_ctx();
	mock_obj_add(&l->o, MOCK_CM_DEVICE_LIST);
	if (num_devices)
		*num_devices = n;
	struct ibv_context **ret = l->list;
	MOCK_UNLOCK();
	return ret;
}

void
rdma_free_devices(struct ibv_context **list)
{
	int rc = 0;

	MOCK_LOCK();
	struct mock_cmdl *l = (struct mock_cmdl *)(void *)mock_obj_get(
			MOCK_CM_DEVICE_LIST, list, "rdma_free_devices");
	mock_enter(MF_RDMA_FREE_DEVICES, &rc);
	mock_obj_del(&l->o);
	mock_free(l->list);
	mock_free(l);
	MOCK_UNLOCK();
}

/* ---------------------------------------------------------- reset etc. */

void
mock_cm_release_failed(void)
{
	for (;;) {
		struct mock_obj *o = mock_obj_head(MOCK_CM_ID);

		while (o && !o->destroy_failed)
			o = o->next;
		if (o == NULL)
			break;
		struct mock_cmid *m = (struct mock_cmid *)o;

		ch_drop(m->ch, m);
		id_free(m);
	}
}

void
mock_cm_discard_pending(void)
{
	for (struct mock_obj *o = mock_obj_head(MOCK_CM_CHANNEL); o; o = o->next)
		ch_drop((struct mock_cmch *)o, NULL);
	Nreact = 0;
}

void
mock_cm_reset(void)
{
	struct mock_obj *o;

	while (Delivered) {
		struct cmev *e = Delivered;

		Delivered = e->next;
		ev_free(e);
	}
	for (o = mock_obj_head(MOCK_CM_CHANNEL); o; o = o->next)
		ch_drop((struct mock_cmch *)o, NULL);
	while ((o = mock_obj_head(MOCK_CM_ID)) != NULL) {
		struct mock_cmid *m = (struct mock_cmid *)o;

		m->own_ch = false;	/* channels are freed below */
		id_free(m);
	}
	while ((o = mock_obj_head(MOCK_CM_CHANNEL)) != NULL)
		ch_free((struct mock_cmch *)o);
	while ((o = mock_obj_head(MOCK_ADDRINFO)) != NULL) {
		mock_obj_del(o);
		mock_free(o);
	}
	while ((o = mock_obj_head(MOCK_CM_DEVICE_LIST)) != NULL) {
		struct mock_cmdl *l = (struct mock_cmdl *)o;

		mock_obj_del(o);
		mock_free(l->list);
		mock_free(l);
	}
	memset(Rec, 0, sizeof(Rec));
	Seq = 0;
	Nopts = 0;
	react_defaults();
	Padding = true;
	Reachable = true;
	Next_port = 49152;
	Next_peer_port = 40000;
}
