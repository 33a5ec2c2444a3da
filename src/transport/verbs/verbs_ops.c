/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_ops.c -- posting: read, write (+imm), atomic write, flush,
 * send (+imm), recv; one work request each.
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

/* one ibv_post_send of a prepared WR, with its slot in the ring */
static int
post_send(struct verbs_conn *conn, struct ibv_send_wr *wr, enum pmrep_op op,
		const void *op_context)
{
	struct ibv_send_wr *bad;
	int ret = verbs_sq_ring_get(&conn->sq, op, op_context, &wr->wr_id);
	if (ret)
		return ret;
	int err = ibv_post_send(conn->qp, wr, &bad);
	if (err) {
		verbs_sq_ring_unget(&conn->sq);
		return post_failed(err, "ibv_post_send");
	}
	return 0;
}

static int
post_atomic_write(struct verbs_conn *conn, const struct pmrep_op_args *a)
{
	uint64_t raddr = a->remote->raddr + a->remote_offset;
	int flags = a->signaled ? IBV_SEND_SIGNALED : 0;

	if (conn->qpx != NULL &&
			(conn->peer->base.caps & PMREP_CAP_NATIVE_ATOMIC_WRITE)) {
		uint64_t wr_id;
		int ret = verbs_sq_ring_get(&conn->sq, PMREP_OP_ATOMIC_WRITE,
				a->op_context, &wr_id);
		if (ret)
			return ret;
		ibv_wr_start(conn->qpx);
		conn->qpx->wr_id = wr_id;
		conn->qpx->wr_flags = (unsigned)flags;
		ibv_wr_atomic_write(conn->qpx, a->remote->rkey, raddr,
				a->atomic_value);
		int err = ibv_wr_complete(conn->qpx);
		if (err) {
			verbs_sq_ring_unget(&conn->sq);
			return post_failed(err, "ibv_wr_complete(atomic write)");
		}
		return 0;
	}
	/*
	 * No native ATOMIC WRITE: an 8-byte aligned write carried inline in
	 * one packet; the fence keeps it behind every earlier read so that
	 * it cannot pass what it is meant to publish.
	 */
	struct ibv_sge sge = {
		.addr = (uintptr_t)a->atomic_value, .length = 8, .lkey = 0,
	};
	struct ibv_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = (unsigned)flags | IBV_SEND_INLINE | IBV_SEND_FENCE;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = a->remote->rkey;
	return post_send(conn, &wr, PMREP_OP_ATOMIC_WRITE, a->op_context);
}

#ifdef PMREP_HAVE_IBV_WR_FLUSH
static int
post_native_flush(struct verbs_conn *conn, const struct pmrep_op_args *a)
{
	uint64_t wr_id;
	int ret = verbs_sq_ring_get(&conn->sq, PMREP_OP_FLUSH, a->op_context,
			&wr_id);
	if (ret)
		return ret;
	ibv_wr_start(conn->qpx);
	conn->qpx->wr_id = wr_id;
	conn->qpx->wr_flags = a->signaled ? IBV_SEND_SIGNALED : 0;
	ibv_wr_flush(conn->qpx, a->remote->rkey,
			a->remote->raddr + a->remote_offset, a->len,
			IBV_FLUSH_PERSISTENT, IBV_FLUSH_RANGE);
	int err = ibv_wr_complete(conn->qpx);
	if (err) {
		verbs_sq_ring_unget(&conn->sq);
		return post_failed(err, "ibv_wr_complete(flush)");
	}
	if (!conn->native_flush_posted) {
		conn->native_flush_posted = true;
		PMREP_LOG_DBG("QP %u: first native flush posted (ibv_wr_flush PERSISTENT, range)",
				conn->qp->qp_num);
	}
	return 0;
}
#endif

/* read-after-write: the last byte of the range into the sink */
static int
post_read_flush(struct verbs_conn *conn, const struct pmrep_op_args *a)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)conn->peer->sink,
		.length = 1,
		.lkey = conn->peer->sink_mr->lkey,
	};
	struct ibv_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = a->signaled ? IBV_SEND_SIGNALED : 0;
	wr.wr.rdma.remote_addr = a->remote->raddr + a->remote_offset +
		(a->len ? a->len - 1 : 0);
	wr.wr.rdma.rkey = a->remote->rkey;
	return post_send(conn, &wr, PMREP_OP_FLUSH, a->op_context);
}

static int
post_flush(struct verbs_conn *conn, const struct pmrep_op_args *a)
{
	if (a->flush_type == PMREP_FLUSH_TYPE_VISIBILITY)
		return post_read_flush(conn, a);

	switch (conn->base.flush_method) {
	case PMREP_FLUSH_METHOD_NATIVE:
#ifdef PMREP_HAVE_IBV_WR_FLUSH
		if (conn->qpx != NULL)
			return post_native_flush(conn, a);
#endif
		PMREP_LOG_ERR("flush: native RDMA FLUSH is not available on this QP");
		return PMREP_E_NOSUPP;
	case PMREP_FLUSH_METHOD_APM:
		if (!conn->base.remote_direct_write_to_pmem) {
			PMREP_LOG_ERR("flush: APM needs the remote peer to declare direct write to pmem");
			return PMREP_E_NOSUPP;
		}
		return post_read_flush(conn, a);
	default:
		PMREP_LOG_ERR("flush: PERSISTENT is not supported on this connection (no native RDMA FLUSH, "
				"no direct write to pmem at the remote peer)");
		return PMREP_E_NOSUPP;
	}
}

int
verbs_post(const struct pmrep_op_args *a)
{
	struct verbs_conn *conn = (struct verbs_conn *)a->conn;

	if (a->len > UINT32_MAX && a->op != PMREP_OP_FLUSH) {
		PMREP_LOG_ERR("%zu bytes in one request: at most 4 GiB - 1",
				a->len);
		return PMREP_E_INVAL;
	}
	if (a->op == PMREP_OP_RECV) {
		if (conn->srq)
			return verbs_srq_post_recv(conn->srq, a->local,
					a->local_offset, a->len, a->op_context);
		return verbs_conn_post_recv(conn,
				(uintptr_t)a->local->ptr + a->local_offset,
				(uint32_t)a->len, verbs_mr_lkey(a->local),
				a->op_context);
	}
	/* a message may arrive before this side read its ESTABLISHED event:
	 * let the state machine catch up with what the CM already said */
	if (conn->state == VERBS_ST_CONNECTING)
		(void) verbs_conn_pump(conn);
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

	struct ibv_sge sge;
	struct ibv_send_wr wr;
	memset(&wr, 0, sizeof(wr));
	wr.send_flags = a->signaled ? IBV_SEND_SIGNALED : 0;
	if (a->local != NULL && a->len > 0) {
		sge.addr = (uintptr_t)a->local->ptr + a->local_offset;
		sge.length = (uint32_t)a->len;
		sge.lkey = verbs_mr_lkey(a->local);
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	if (a->remote != NULL) {
		wr.wr.rdma.remote_addr = a->remote->raddr + a->remote_offset;
		wr.wr.rdma.rkey = a->remote->rkey;
	}

	switch (a->op) {
	case PMREP_OP_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		return post_send(conn, &wr, PMREP_OP_READ, a->op_context);
	case PMREP_OP_WRITE:
		if (a->with_imm) {
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htobe32(a->imm);
		} else {
			wr.opcode = IBV_WR_RDMA_WRITE;
		}
		return post_send(conn, &wr, PMREP_OP_WRITE, a->op_context);
	case PMREP_OP_SEND:
		if (a->with_imm) {
			wr.opcode = IBV_WR_SEND_WITH_IMM;
			wr.imm_data = htobe32(a->imm);
		} else {
			wr.opcode = IBV_WR_SEND;
		}
		return post_send(conn, &wr, PMREP_OP_SEND, a->op_context);
	case PMREP_OP_ATOMIC_WRITE:
		return post_atomic_write(conn, a);
	case PMREP_OP_FLUSH:
		return post_flush(conn, a);
	default:
		PMREP_LOG_ERR("unknown op %d", (int)a->op);
		return PMREP_E_INVAL;
	}
}
