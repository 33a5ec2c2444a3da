/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_ops.c -- posting: read, write (+imm), atomic write, flush,
 * send (+imm), recv; one work request each (a native FLUSH of 4 GiB or
 * more: contiguous pieces below 2^32, see VERBS_FLUSH_PIECE_MAX), held by
 * PMREP_F_MORE and posted with the next request behind one doorbell. A conn
 * whose QP is known to be in error (an error completion, T21; an async
 * event) refuses every post with PMREP_E_CONN_LOST.
 *
 * Flush, VISIBILITY: a signalled RDMA READ of the flushed range's last byte
 * into the peer's sink. Not a 0-length read: the IB spec lets a responder
 * answer a 0-length read without touching memory, so nothing orders it
 * behind the writes' data reaching memory; a 1-byte read must fetch the
 * data, and RC delivers it only after every earlier write on the QP was
 * placed. The range's own byte keeps the read within what the rkey
 * allows.
 * Flush, PERSISTENT: NATIVE -- RDMA FLUSH (ibv_wr_flush, rdma-core >= 45);
 * APM -- the same read (the remote peer declared that placed data is
 * persistent: "appliance persistency method"), so the writes posted before
 * it on this QP and this read go out behind one doorbell-ordered queue and
 * its one completion reports them all; NONE -- PMREP_E_NOSUPP, never a
 * silent downgrade (the generic layer checks first; we check again since a
 * wrong flush would be a lie about durability).
 *
 * PMREP_F_MORE: every send-queue request goes through conn->hold. A request
 * flagged MORE takes its ring slot and is copied there (its SGE and inline
 * bytes with it); the next request without MORE, the VERBS_HOLD_MAX-th held
 * one, or verbs_hold_post (disconnect, delete, the CQ calls) posts the
 * chain: one ibv_post_send of the linked WRs, or -- when a native ATOMIC
 * WRITE / FLUSH is in it, which only the extended QP API can post -- every
 * entry replayed through ibv_wr_* between one ibv_wr_start and its
 * ibv_wr_complete, within that one call (a provider holds the QP's lock in
 * between). A request without MORE and nothing held takes the same path
 * with a chain of one. When the post fails, the entries from the one the
 * device refused on (ibv_post_send's bad_wr; all of them for
 * ibv_wr_complete, which posts all or none) give their slots back -- they
 * are the last ones taken, so the ring stays the SQ's mirror -- and are
 * logged: they never complete.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "verbs_internal.h"

static int
post_failed(int err, const char *what)
{
	if (err == ENOMEM)
		return PMREP_E_AGAIN;	/* the SQ is full */
	return PMREP_ERR_PROVIDER(err, what);
}

static const char *
op_str(uint8_t op)
{
	switch (op) {
	case PMREP_OP_READ: return "read";
	case PMREP_OP_WRITE: return "write";
	case PMREP_OP_ATOMIC_WRITE: return "atomic write";
	case PMREP_OP_FLUSH: return "flush";
	case PMREP_OP_SEND: return "send";
	default: return "request";
	}
}

/* ------------------------------------------------------- the held chain */

static void
hold_clear(struct verbs_hold *h)
{
	h->n = 0;
	h->native = false;
	atomic_store_explicit(&h->pending, 0, memory_order_relaxed);
}

/*
 * h->wr[from..n-1] were not posted: give their slots back (the last ones
 * taken) and name them -- except the last `own` ones: the calling op's own
 * request (a split flush: its pieces), whose return value says so.
 */
static void
hold_drop(struct verbs_conn *conn, unsigned from, unsigned own,
		const char *why)
{
	struct verbs_hold *h = &conn->hold;
	if (from >= h->n)
		return;
	verbs_sq_ring_unget(&conn->sq, h->n - from);
	unsigned end = own < h->n ? h->n - own : 0;
	for (unsigned i = from; i < end; i++)
		PMREP_LOG_ERR("held request %u of %u (%s, op_context %p) was not posted (%s): it will not complete",
				i + 1, h->n, op_str(h->wr[i].op),
				h->wr[i].op_context, why);
}

/*
 * The chain through the extended QP API: every entry replayed between one
 * ibv_wr_start and its ibv_wr_complete (all posted, or none). Returns the
 * errno of ibv_wr_complete.
 */
static int
hold_post_wr_api(struct verbs_conn *conn)
{
	struct verbs_hold *h = &conn->hold;
	struct ibv_qp_ex *qpx = conn->qpx;

	ibv_wr_start(qpx);
	for (unsigned i = 0; i < h->n; i++) {
		struct verbs_held_wr *e = &h->wr[i];
		uint32_t rkey = e->wr.wr.rdma.rkey;
		uint64_t raddr = e->wr.wr.rdma.remote_addr;

		qpx->wr_id = e->wr.wr_id;
		qpx->wr_flags = e->wr.send_flags;
		switch ((enum verbs_held_kind)e->kind) {
		case VERBS_HELD_ATOMIC_WRITE:
			ibv_wr_atomic_write(qpx, rkey, raddr, e->data);
			continue;
		case VERBS_HELD_FLUSH:
#ifdef PMREP_HAVE_IBV_WR_FLUSH
			ibv_wr_flush(qpx, rkey, raddr, e->flush_len,
					IBV_FLUSH_PERSISTENT, e->flush_level);
			continue;
#else
			break;	/* never held without ibv_wr_flush */
#endif
		case VERBS_HELD_SEND_WR:
			switch (e->wr.opcode) {
			case IBV_WR_RDMA_WRITE:
				ibv_wr_rdma_write(qpx, rkey, raddr);
				break;
			case IBV_WR_RDMA_WRITE_WITH_IMM:
				ibv_wr_rdma_write_imm(qpx, rkey, raddr,
						e->wr.imm_data);
				break;
			case IBV_WR_RDMA_READ:
				ibv_wr_rdma_read(qpx, rkey, raddr);
				break;
			case IBV_WR_SEND:
				ibv_wr_send(qpx);
				break;
			case IBV_WR_SEND_WITH_IMM:
				ibv_wr_send_imm(qpx, e->wr.imm_data);
				break;
			default:
				goto unknown;
			}
			if (e->wr.send_flags & IBV_SEND_INLINE)
				ibv_wr_set_inline_data(qpx, e->data,
						e->sge.length);
			else if (e->wr.num_sge)
				ibv_wr_set_sge(qpx, e->sge.lkey, e->sge.addr,
						e->sge.length);
			else
				ibv_wr_set_sge_list(qpx, 0, NULL);
			continue;
		}
unknown:
		ibv_wr_abort(qpx);
		PMREP_LOG_ERR("held request %u: kind %u opcode %d cannot be replayed",
				i + 1, (unsigned)e->kind, (int)e->wr.opcode);
		return EINVAL;
	}
	return ibv_wr_complete(qpx);
}

/*
 * Post everything held (hold.lock held): one doorbell. own: the last `own`
 * entries are the calling op's own request.
 */
static int
hold_post_locked(struct verbs_conn *conn, unsigned own)
{
	struct verbs_hold *h = &conn->hold;
	unsigned n = h->n;
	if (n == 0)
		return 0;
	if (conn->qp == NULL) {
		hold_drop(conn, 0, own, "the connection has no QP");
		hold_clear(h);
		PMREP_LOG_ERR("the connection has no QP now");
		return PMREP_E_STATE;
	}

	const char *what;
	unsigned posted = n;
	int err;
	if (h->native) {
		what = "ibv_wr_complete";
		err = hold_post_wr_api(conn);
		if (err)
			posted = 0;
	} else {
		struct ibv_send_wr *bad = NULL;
		what = "ibv_post_send";
		err = ibv_post_send(conn->qp, &h->wr[0].wr, &bad);
		if (err) {
			posted = n;
			for (unsigned i = 0; i < n; i++) {
				if (bad == &h->wr[i].wr) {
					posted = i;
					break;
				}
			}
			if (posted == n) {
				/* rdma-core always names it; if not, assume
				 * nothing went: no slot is handed out twice */
				PMREP_LOG_WARN("ibv_post_send failed without naming the refused request: taking none as posted");
				posted = 0;
			}
		}
	}
	if (err) {
		if (n > 1)
			PMREP_LOG_ERR("%s of %u held requests failed at request %u: %s",
					what, n, posted + 1, strerror(err));
		hold_drop(conn, posted, own, what);
		hold_clear(h);
		return post_failed(err, what);
	}
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	if (h->native && !conn->native_flush_posted) {
		for (unsigned i = 0; i < n; i++) {
			if (h->wr[i].kind == VERBS_HELD_FLUSH) {
				conn->native_flush_posted = true;
				PMREP_LOG_DBG("QP %u: first native flush posted (ibv_wr_flush PERSISTENT, range)",
						conn->qp->qp_num);
				break;
			}
		}
	}
#endif
	hold_clear(h);
	return 0;
}

/*
 * Take the request's slots (one per entry: a split flush has several),
 * add its entries to the chain (their own copy of the SGE and inline
 * bytes) and post the chain unless MORE holds it (and it is not full).
 * A request that does not get all its slots leaves the chain as it was.
 */
static int
hold_add(struct verbs_conn *conn, const struct verbs_held_wr *req,
		unsigned nreq, bool more)
{
	struct verbs_hold *h = &conn->hold;
	int ret;

	pthread_mutex_lock(&h->lock);
	if (h->n + nreq > VERBS_HOLD_CAP) {
		/* (never: a chain is posted at VERBS_HOLD_MAX entries) */
		ret = hold_post_locked(conn, 0);
		if (ret) {
			pthread_mutex_unlock(&h->lock);
			return ret;
		}
	}
	uint64_t wr_id[VERBS_FLUSH_PIECES_MAX];
	for (unsigned k = 0; k < nreq; k++) {
		ret = verbs_sq_ring_get(&conn->sq, (enum pmrep_op)req[k].op,
				req[k].op_context, &wr_id[k]);
		if (ret) {
			verbs_sq_ring_unget(&conn->sq, k);
			pthread_mutex_unlock(&h->lock);
			return ret;
		}
		if (req[k].piece)
			verbs_sq_ring_set_piece(&conn->sq, wr_id[k]);
	}
	for (unsigned k = 0; k < nreq; k++) {
		struct verbs_held_wr *e = &h->wr[h->n];
		*e = req[k];
		e->wr.wr_id = wr_id[k];
		e->wr.next = NULL;
		e->wr.sg_list = e->wr.num_sge ? &e->sge : NULL;
		if (e->wr.send_flags & IBV_SEND_INLINE)
			e->sge.addr = (uintptr_t)e->data;
		if (h->n > 0)
			h->wr[h->n - 1].wr.next = &e->wr;
		h->n++;
		if (e->kind != VERBS_HELD_SEND_WR)
			h->native = true;
	}
	if (more && h->n < VERBS_HOLD_MAX) {
		atomic_store_explicit(&h->pending, h->n, memory_order_relaxed);
		pthread_mutex_unlock(&h->lock);
		return 0;
	}
	if (more)
		PMREP_LOG_DBG("QP %u: %u requests held: posting them",
				conn->qp->qp_num, h->n);
	ret = hold_post_locked(conn, nreq);
	pthread_mutex_unlock(&h->lock);
	return ret;
}

int
verbs_hold_post(struct verbs_conn *conn, const char *why)
{
	struct verbs_hold *h = &conn->hold;

	/* the CQ calls' fast path: nothing held (a request being held on
	 * another thread right now is posted by the next call) */
	if (atomic_load_explicit(&h->pending, memory_order_relaxed) == 0)
		return 0;
	/* T22: a removed device's release drops what is held */
	verbs_dev_rdlock(conn->peer);
	pthread_mutex_lock(&h->lock);
	if (h->n)
		PMREP_LOG_DBG("posting %u held request(s): %s", h->n, why);
	int ret = hold_post_locked(conn, 0);
	pthread_mutex_unlock(&h->lock);
	verbs_dev_unlock(conn->peer);
	return ret;
}

/* ------------------------------------------------------- the requests */

static void
prep_atomic_write(struct verbs_conn *conn, const struct pmrep_op_args *a,
		struct verbs_held_wr *r)
{
	memcpy(r->data, a->atomic_value, 8);
	if (conn->qpx != NULL &&
			(conn->peer->base.caps & PMREP_CAP_NATIVE_ATOMIC_WRITE)) {
		r->kind = VERBS_HELD_ATOMIC_WRITE;
		return;
	}
	/*
	 * No native ATOMIC WRITE: an 8-byte aligned write carried inline in
	 * one packet; the fence keeps it behind every earlier read so that
	 * it cannot pass what it is meant to publish. The bytes are the held
	 * entry's copy (hold_add points the SGE at it).
	 */
	r->sge.length = 8;
	r->sge.lkey = 0;
	r->wr.num_sge = 1;
	r->wr.opcode = IBV_WR_RDMA_WRITE;
	r->wr.send_flags |= IBV_SEND_INLINE | IBV_SEND_FENCE;
}

/* read-after-write: the last byte of the range into the sink */
static void
prep_read_flush(struct verbs_conn *conn, const struct pmrep_op_args *a,
		struct verbs_held_wr *r)
{
	r->sge.addr = (uintptr_t)conn->peer->sink;
	r->sge.length = 1;
	r->sge.lkey = conn->peer->sink_mr->lkey;
	r->wr.num_sge = 1;
	r->wr.opcode = IBV_WR_RDMA_READ;
	r->wr.wr.rdma.remote_addr = a->remote->raddr + a->remote_offset +
		(a->len ? a->len - 1 : 0);
}

static int
prep_flush(struct verbs_conn *conn, const struct pmrep_op_args *a,
		struct verbs_held_wr *r)
{
	if (a->flush_type == PMREP_FLUSH_TYPE_VISIBILITY) {
		prep_read_flush(conn, a, r);
		return 0;
	}

	switch (conn->base.flush_method) {
	case PMREP_FLUSH_METHOD_NATIVE:
#ifdef PMREP_HAVE_IBV_WR_FLUSH
		if (conn->qpx != NULL) {
			r->kind = VERBS_HELD_FLUSH;
			r->flush_level = IBV_FLUSH_RANGE;
			r->flush_len = a->len;
			return 0;
		}
#endif
		PMREP_LOG_ERR("flush: native RDMA FLUSH is not available on this QP");
		return PMREP_E_NOSUPP;
	case PMREP_FLUSH_METHOD_APM:
		if (!conn->base.remote_direct_write_to_pmem) {
			PMREP_LOG_ERR("flush: APM needs the remote peer to declare direct write to pmem");
			return PMREP_E_NOSUPP;
		}
		prep_read_flush(conn, a, r);
		return 0;
	default:
		PMREP_LOG_ERR("flush: PERSISTENT is not supported on this connection (no native RDMA FLUSH, "
				"no direct write to pmem at the remote peer)");
		return PMREP_E_NOSUPP;
	}
}

/*
 * A native FLUSH whose length does not fit the wire's 32 bits: contiguous
 * pieces below 2^32, all in one chain (one doorbell, all or none), only
 * the last signalled as the request asked; the earlier ones never report
 * (verbs_sq_ring_complete_wc). Too many pieces: one flush of the whole MR.
 */
static int
post_split_flush(struct verbs_conn *conn, const struct verbs_held_wr *r,
		bool more)
{
	struct verbs_flush_piece p[VERBS_FLUSH_PIECES_MAX];
	struct verbs_held_wr pieces[VERBS_FLUSH_PIECES_MAX];
	uint64_t raddr = r->wr.wr.rdma.remote_addr;
	unsigned n = verbs_flush_split(raddr, r->flush_len, p,
			VERBS_FLUSH_PIECES_MAX);
	if (n == 0) {
#ifdef PMREP_HAVE_IBV_WR_FLUSH
		PMREP_LOG_INFO("flush of %llu bytes: more than %u pieces of %llu; flushing the whole MR instead",
				(unsigned long long)r->flush_len,
				VERBS_FLUSH_PIECES_MAX,
				(unsigned long long)VERBS_FLUSH_PIECE_MAX);
		struct verbs_held_wr whole = *r;
		whole.flush_level = IBV_FLUSH_MR;
		whole.flush_len = 0;
		return hold_add(conn, &whole, 1, more);
#else
		return PMREP_E_NOSUPP;	/* (never: no native flush held) */
#endif
	}
	for (unsigned k = 0; k < n; k++) {
		pieces[k] = *r;
		pieces[k].wr.wr.rdma.remote_addr = p[k].raddr;
		pieces[k].flush_len = p[k].len;
		pieces[k].piece = k + 1 < n;
		if (pieces[k].piece)
			pieces[k].wr.send_flags &= ~(unsigned)IBV_SEND_SIGNALED;
	}
	PMREP_LOG_DBG("flush of %llu bytes at 0x%llx: %u pieces",
			(unsigned long long)r->flush_len,
			(unsigned long long)raddr, n);
	return hold_add(conn, pieces, n, more);
}

static int post_locked(const struct pmrep_op_args *a);

/*
 * Every post runs under the peer's dev_lock (read): a removed device's
 * release (T22) waits for it, and a post after the release is refused.
 * The state machine's catch-up runs before: it may release the device.
 */
int
verbs_post(const struct pmrep_op_args *a)
{
	struct verbs_conn *conn = (struct verbs_conn *)a->conn;

	if (a->op != PMREP_OP_RECV && conn->state == VERBS_ST_CONNECTING &&
			!atomic_load(&conn->lost))
		(void) verbs_conn_pump(conn);
	verbs_dev_rdlock(conn->peer);
	int ret;
	if (atomic_load(&conn->peer->removed)) {
		PMREP_LOG_ERR("the connection is lost: its RDMA device was removed (%s refused)",
				op_str((uint8_t)a->op));
		ret = PMREP_E_CONN_LOST;
	} else {
		ret = post_locked(a);
	}
	verbs_dev_unlock(conn->peer);
	return ret;
}

static int
post_locked(const struct pmrep_op_args *a)
{
	struct verbs_conn *conn = (struct verbs_conn *)a->conn;

	if (a->len > UINT32_MAX && a->op != PMREP_OP_FLUSH) {
		PMREP_LOG_ERR("%zu bytes in one request: at most 4 GiB - 1",
				a->len);
		return PMREP_E_INVAL;
	}
	if (a->op == PMREP_OP_RECV) {
		if (atomic_load(&conn->lost)) {
			PMREP_LOG_ERR("the connection is lost (its QP is in the error state): receive refused");
			return PMREP_E_CONN_LOST;
		}
		if (conn->srq)
			return verbs_srq_post_recv(conn->srq, a->local,
					a->local_offset, a->len, a->op_context);
		return verbs_conn_post_recv(conn,
				(uintptr_t)a->local->ptr + a->local_offset,
				(uint32_t)a->len, verbs_mr_lkey(a->local),
				a->op_context);
	}
	/* an error completion put the QP in error (T21), or an async event
	 * said it is gone: nothing posted now could complete but flushed */
	if (atomic_load(&conn->lost)) {
		PMREP_LOG_ERR("the connection is lost (its QP is in the error state): %s refused",
				op_str((uint8_t)a->op));
		return PMREP_E_CONN_LOST;
	}
	/* a message may arrive before this side read its ESTABLISHED event:
	 * the state machine caught up with what the CM already said
	 * (verbs_post, before taking dev_lock) */
	/* the passive side's QP is in RTS once rdma_accept returned (the
	 * initiator's RTU, i.e. ESTABLISHED here, may still be in flight):
	 * it may answer what it received */
	bool ready = conn->state == VERBS_ST_ESTABLISHED ||
		(conn->passive && conn->state == VERBS_ST_CONNECTING);
	if (!ready || conn->qp == NULL) {
		PMREP_LOG_ERR("the connection is not established (%s)",
				verbs_conn_state_str(conn->state));
		return conn->state == VERBS_ST_TERMINAL ||
			conn->state == VERBS_ST_DISCONNECTING ?
			PMREP_E_CONN_LOST : PMREP_E_STATE;
	}

	struct verbs_held_wr r;
	memset(&r, 0, sizeof(r));
	r.kind = VERBS_HELD_SEND_WR;
	r.op = (uint8_t)a->op;
	r.op_context = a->op_context;
	r.wr.send_flags = a->signaled ? IBV_SEND_SIGNALED : 0;
	if (a->local != NULL && a->len > 0) {
		r.sge.addr = (uintptr_t)a->local->ptr + a->local_offset;
		r.sge.length = (uint32_t)a->len;
		r.sge.lkey = verbs_mr_lkey(a->local);
		r.wr.num_sge = 1;
	}
	if (a->remote != NULL) {
		r.wr.wr.rdma.remote_addr = a->remote->raddr + a->remote_offset;
		r.wr.wr.rdma.rkey = a->remote->rkey;
	}

	switch (a->op) {
	case PMREP_OP_READ:
		r.wr.opcode = IBV_WR_RDMA_READ;
		break;
	case PMREP_OP_WRITE:
		if (a->with_imm) {
			r.wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			r.wr.imm_data = htobe32(a->imm);
		} else {
			r.wr.opcode = IBV_WR_RDMA_WRITE;
		}
		break;
	case PMREP_OP_SEND:
		if (a->with_imm) {
			r.wr.opcode = IBV_WR_SEND_WITH_IMM;
			r.wr.imm_data = htobe32(a->imm);
		} else {
			r.wr.opcode = IBV_WR_SEND;
		}
		break;
	case PMREP_OP_ATOMIC_WRITE:
		prep_atomic_write(conn, a, &r);
		break;
	case PMREP_OP_FLUSH: {
		int ret = prep_flush(conn, a, &r);
		if (ret)
			return ret;
		if (r.kind == VERBS_HELD_FLUSH &&
				r.flush_len > VERBS_FLUSH_PIECE_MAX)
			return post_split_flush(conn, &r, a->more);
		break;
	}
	default:
		PMREP_LOG_ERR("unknown op %d", (int)a->op);
		return PMREP_E_INVAL;
	}
	return hold_add(conn, &r, 1, a->more);
}

/* a window bind's op_context: like the heartbeat's, never reported */
const char verbs_mw_bind_ctx;

/*
 * Post an IBV_WR_BIND_MW of `mw` over [addr, addr + len) of `mr` with the
 * new key `rkey` and `access` (verbs_mw.c; caller holds dev_lock for
 * reading). Unsignalled: its send-queue slot is freed by the next
 * completion of the conn (RC completes the SQ in order); an error
 * completion of it fails the conn (T21) and is not reported. Whatever
 * PMREP_F_MORE holds is posted first, so the bind is behind every request
 * posted before it and ahead of every one after.
 */
int
verbs_post_bind_mw(struct verbs_conn *conn, struct ibv_mw *mw,
		struct ibv_mr *mr, uint64_t addr, uint64_t len, uint32_t rkey,
		unsigned access)
{
	if (atomic_load(&conn->lost)) {
		PMREP_LOG_ERR("the connection is lost (its QP is in the error state): window bind refused");
		return PMREP_E_CONN_LOST;
	}
	bool ready = conn->state == VERBS_ST_ESTABLISHED ||
		(conn->passive && conn->state == VERBS_ST_CONNECTING);
	if (!ready || conn->qp == NULL) {
		PMREP_LOG_ERR("cannot bind a window: the connection is not established (%s)",
				verbs_conn_state_str(conn->state));
		return PMREP_E_CONN_LOST;
	}
	struct verbs_hold *h = &conn->hold;
	pthread_mutex_lock(&h->lock);
	int ret = hold_post_locked(conn, 0);
	if (ret) {
		pthread_mutex_unlock(&h->lock);
		return ret;
	}
	uint64_t wr_id;
	ret = verbs_sq_ring_get(&conn->sq, PMREP_OP_SEND, &verbs_mw_bind_ctx,
			&wr_id);
	if (ret) {
		pthread_mutex_unlock(&h->lock);
		return ret;
	}
	struct verbs_held_wr *e = &h->wr[0];
	memset(e, 0, sizeof(*e));
	e->kind = VERBS_HELD_SEND_WR;
	e->op = (uint8_t)PMREP_OP_SEND;
	e->op_context = &verbs_mw_bind_ctx;
	e->wr.wr_id = wr_id;
	e->wr.opcode = IBV_WR_BIND_MW;
	e->wr.send_flags = 0;
	e->wr.bind_mw.mw = mw;
	e->wr.bind_mw.rkey = rkey;
	e->wr.bind_mw.bind_info.mr = mr;
	e->wr.bind_mw.bind_info.addr = addr;
	e->wr.bind_mw.bind_info.length = len;
	e->wr.bind_mw.bind_info.mw_access_flags = access;
	h->n = 1;
	h->native = false;
	ret = hold_post_locked(conn, 1);
	pthread_mutex_unlock(&h->lock);
	if (ret)
		PMREP_LOG_ERR("QP %u: the window bind could not be posted",
				conn->qp->qp_num);
	return ret;
}

/* the heartbeat's op_context: its completion is dropped (verbs_cq.c) */
const char verbs_heartbeat_ctx;

int
verbs_post_heartbeat(struct verbs_conn *conn)
{
	struct verbs_held_wr r;
	memset(&r, 0, sizeof(r));
	r.kind = VERBS_HELD_SEND_WR;
	r.op = (uint8_t)PMREP_OP_WRITE;
	r.op_context = &verbs_heartbeat_ctx;
	r.wr.opcode = IBV_WR_RDMA_WRITE;
	r.wr.send_flags = IBV_SEND_SIGNALED;
	/* no SGE, no remote address, no rkey: zero bytes (IBA C9-88) */
	return hold_add(conn, &r, 1, false);
}
