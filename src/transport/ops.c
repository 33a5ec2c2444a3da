/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ops.c -- the posting operations. Every op is checked here once (conn
 * state, flags, usage, ranges, alignment, flush method) and then handed
 * to the provider's one post() entry as a struct pmrep_op_args.
 */
#include <string.h>

#include "common.h"

/* exactly one completion flag, optionally PMREP_F_MORE, nothing else */
static int
check_flags(int flags, bool *signaled, bool *more)
{
	int completion = flags & ~PMREP_F_MORE;

	if (completion == PMREP_F_COMPLETION_ALWAYS) {
		*signaled = true;
	} else if (completion == PMREP_F_COMPLETION_ON_ERROR) {
		*signaled = false;
	} else {
		PMREP_LOG_ERR("flags must be PMREP_F_COMPLETION_ALWAYS or "
				"PMREP_F_COMPLETION_ON_ERROR, optionally with "
				"PMREP_F_MORE; got 0x%x", (unsigned)flags);
		return PMREP_E_INVAL;
	}
	*more = (flags & PMREP_F_MORE) != 0;
	return 0;
}

static int
check_local(const struct pmrep_conn *conn, const struct pmrep_mr_local *mr,
		size_t offset, size_t len, int usage, const char *what)
{
	if (mr->peer != conn->peer) {
		PMREP_LOG_ERR("%s: the local MR belongs to another peer", what);
		return PMREP_E_INVAL;
	}
	if (!(mr->usage & usage)) {
		PMREP_LOG_ERR("%s: the local MR lacks usage 0x%x (has 0x%x)",
				what, (unsigned)usage, (unsigned)mr->usage);
		return PMREP_E_INVAL;
	}
	if (!pmrep_range_ok(mr->size, offset, len)) {
		PMREP_LOG_ERR("%s: %zu bytes at offset %zu outside the %zu-byte local MR",
				what, len, offset, mr->size);
		return PMREP_E_RANGE;
	}
	return 0;
}

static int
check_remote(const struct pmrep_conn *conn, const struct pmrep_mr_remote *mr,
		size_t offset, size_t len, const char *what)
{
	if (mr->provider != conn->peer->provider) {
		PMREP_LOG_ERR("%s: the remote MR is of another provider (%d, conn %d)",
				what, (int)mr->provider, (int)conn->peer->provider);
		return PMREP_E_INVAL;
	}
	if (!pmrep_range_ok(mr->size, offset, len)) {
		PMREP_LOG_ERR("%s: %zu bytes at offset %zu outside the %llu-byte remote MR",
				what, len, offset, (unsigned long long)mr->size);
		return PMREP_E_RANGE;
	}
	return 0;
}

static int
check_conn(const struct pmrep_conn *conn, const char *what)
{
	if (atomic_load_explicit(&conn->terminal, memory_order_acquire)) {
		PMREP_LOG_ERR("%s: the connection is closed or lost", what);
		return PMREP_E_CONN_LOST;
	}
	return 0;
}

/* the last checks every op shares (flags, conn state), then the post */
static int
submit(struct pmrep_op_args *a, int flags, const char *what)
{
	/* a receive takes no flags (it is always reported, never held) */
	int ret = a->op == PMREP_OP_RECV ? 0 :
		check_flags(flags, &a->signaled, &a->more);
	if (ret)
		return ret;
	ret = check_conn(a->conn, what);
	if (ret)
		return ret;
	return a->conn->peer->ops->post(a);
}

static int
post_rw(struct pmrep_op_args *a, int flags)
{
	const char *what = a->op == PMREP_OP_READ ? "read" : "write";

	PMREP_CHECK_ARG(a->conn);
	PMREP_CHECK_ARG(a->local);
	PMREP_CHECK_ARG(a->remote);
	if (a->len == 0) {
		PMREP_LOG_ERR("%s: length 0", what);
		return PMREP_E_INVAL;
	}
	int ret = check_local(a->conn, a->local, a->local_offset, a->len,
			a->op == PMREP_OP_READ ? PMREP_MR_USAGE_READ_DST :
			PMREP_MR_USAGE_WRITE_SRC, what);
	if (ret)
		return ret;
	ret = check_remote(a->conn, a->remote, a->remote_offset, a->len, what);
	if (ret)
		return ret;
	return submit(a, flags, what);
}

int
pmrep_read(struct pmrep_conn *conn, struct pmrep_mr_local *dst,
		size_t dst_offset, const struct pmrep_mr_remote *src,
		size_t src_offset, size_t len, int flags, const void *op_context)
{
	struct pmrep_op_args a = { .conn = conn, .op = PMREP_OP_READ,
		.local = dst, .local_offset = dst_offset, .remote = src,
		.remote_offset = src_offset, .len = len,
		.op_context = op_context };
	return post_rw(&a, flags);
}

int
pmrep_write(struct pmrep_conn *conn, const struct pmrep_mr_remote *dst,
		size_t dst_offset, const struct pmrep_mr_local *src,
		size_t src_offset, size_t len, int flags, const void *op_context)
{
	struct pmrep_op_args a = { .conn = conn, .op = PMREP_OP_WRITE,
		.local = (struct pmrep_mr_local *)src, .local_offset = src_offset,
		.remote = dst, .remote_offset = dst_offset, .len = len,
		.op_context = op_context };
	return post_rw(&a, flags);
}

int
pmrep_write_with_imm(struct pmrep_conn *conn, const struct pmrep_mr_remote *dst,
		size_t dst_offset, const struct pmrep_mr_local *src,
		size_t src_offset, size_t len, uint32_t imm, int flags,
		const void *op_context)
{
	struct pmrep_op_args a = { .conn = conn, .op = PMREP_OP_WRITE,
		.local = (struct pmrep_mr_local *)src, .local_offset = src_offset,
		.remote = dst, .remote_offset = dst_offset, .len = len,
		.with_imm = true, .imm = imm, .op_context = op_context };
	return post_rw(&a, flags);
}

int
pmrep_atomic_write(struct pmrep_conn *conn, const struct pmrep_mr_remote *dst,
		size_t dst_offset, const uint8_t src[8], int flags,
		const void *op_context)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(dst);
	PMREP_CHECK_ARG(src);
	int ret = check_remote(conn, dst, dst_offset, 8, "atomic write");
	if (ret)
		return ret;
	if ((dst->raddr + dst_offset) % 8 != 0) {
		PMREP_LOG_ERR("atomic write: remote address 0x%llx is not 8-byte aligned",
				(unsigned long long)(dst->raddr + dst_offset));
		return PMREP_E_INVAL;
	}
	struct pmrep_op_args a = { .conn = conn, .op = PMREP_OP_ATOMIC_WRITE,
		.remote = dst, .remote_offset = dst_offset, .len = 8,
		.op_context = op_context };
	memcpy(a.atomic_value, src, 8);
	return submit(&a, flags, "atomic write");
}

int
pmrep_flush(struct pmrep_conn *conn, const struct pmrep_mr_remote *dst,
		size_t dst_offset, size_t len, enum pmrep_flush_type type,
		int flags, const void *op_context)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(dst);
	if (type != PMREP_FLUSH_TYPE_VISIBILITY &&
			type != PMREP_FLUSH_TYPE_PERSISTENT) {
		PMREP_LOG_ERR("flush: unknown type %d", (int)type);
		return PMREP_E_INVAL;
	}
	if (len == 0) {
		PMREP_LOG_ERR("flush: length 0");
		return PMREP_E_INVAL;
	}
	int ret = check_remote(conn, dst, dst_offset, len, "flush");
	if (ret)
		return ret;
	if (type == PMREP_FLUSH_TYPE_PERSISTENT) {
		switch (conn->flush_method) {
		case PMREP_FLUSH_METHOD_NATIVE:
			/* the target checks the MR's flush access itself */
			break;
		case PMREP_FLUSH_METHOD_APM:
			if (!(dst->usage & PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT)) {
				PMREP_LOG_ERR("flush: the remote MR was not registered for persistent flush");
				return PMREP_E_NOSUPP;
			}
			break;
		default:
			PMREP_LOG_ERR("flush: PERSISTENT is not supported on this connection "
					"(no native RDMA FLUSH and the remote peer did not declare "
					"direct write to pmem); use a persist request (GPSPM)");
			return PMREP_E_NOSUPP;
		}
	}
	struct pmrep_op_args a = { .conn = conn, .op = PMREP_OP_FLUSH,
		.remote = dst, .remote_offset = dst_offset, .len = len,
		.flush_type = type, .op_context = op_context };
	return submit(&a, flags, "flush");
}

static int
post_msg(struct pmrep_op_args *a, int flags)
{
	const char *what = a->op == PMREP_OP_RECV ? "recv" : "send";

	PMREP_CHECK_ARG(a->conn);
	if (a->op == PMREP_OP_RECV) {
		a->signaled = true;
		if (a->local == NULL) {
			PMREP_LOG_ERR("recv: dst is NULL");
			return PMREP_E_INVAL;
		}
	}
	/* a send may carry no payload (e.g. only an immediate) */
	if (a->local != NULL) {
		int ret = check_local(a->conn, a->local, a->local_offset, a->len,
				a->op == PMREP_OP_RECV ? PMREP_MR_USAGE_RECV :
				PMREP_MR_USAGE_SEND, what);
		if (ret)
			return ret;
	} else if (a->len != 0) {
		PMREP_LOG_ERR("%s: %zu bytes with no MR", what, a->len);
		return PMREP_E_INVAL;
	}
	return submit(a, flags, what);
}

int
pmrep_send(struct pmrep_conn *conn, const struct pmrep_mr_local *src,
		size_t offset, size_t len, int flags, const void *op_context)
{
	struct pmrep_op_args a = { .conn = conn, .op = PMREP_OP_SEND,
		.local = (struct pmrep_mr_local *)src, .local_offset = offset,
		.len = len, .op_context = op_context };
	return post_msg(&a, flags);
}

int
pmrep_send_with_imm(struct pmrep_conn *conn, const struct pmrep_mr_local *src,
		size_t offset, size_t len, uint32_t imm, int flags,
		const void *op_context)
{
	struct pmrep_op_args a = { .conn = conn, .op = PMREP_OP_SEND,
		.local = (struct pmrep_mr_local *)src, .local_offset = offset,
		.len = len, .with_imm = true, .imm = imm,
		.op_context = op_context };
	return post_msg(&a, flags);
}

int
pmrep_recv(struct pmrep_conn *conn, struct pmrep_mr_local *dst, size_t offset,
		size_t len, const void *op_context)
{
	struct pmrep_op_args a = { .conn = conn, .op = PMREP_OP_RECV,
		.local = dst, .local_offset = offset, .len = len,
		.op_context = op_context };
	return post_msg(&a, PMREP_F_COMPLETION_ALWAYS);
}
