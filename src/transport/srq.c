/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq.c -- the shared receive queue, with its own receive CQ, for a target
 * that serves many initiators.
 */
#include "common.h"

int
pmrep_srq_new(struct pmrep_peer *peer, uint32_t rq_size, uint32_t rcq_size,
		struct pmrep_srq **srq_ptr)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(srq_ptr);
	if (rq_size == 0 || rq_size > 65536 || rcq_size > 65536) {
		PMREP_LOG_ERR("SRQ sizes must be 1..65536 (rcq 0..65536), got %u, %u",
				rq_size, rcq_size);
		return PMREP_E_INVAL;
	}
	if (rcq_size == 0)
		rcq_size = rq_size;
	int ret = peer->ops->srq_new(peer, rq_size, rcq_size, srq_ptr);
	if (ret)
		return ret;
	pmrep_peer_ref(peer);
	return 0;
}

int
pmrep_srq_delete(struct pmrep_srq **srq_ptr)
{
	PMREP_CHECK_ARG(srq_ptr);
	struct pmrep_srq *srq = *srq_ptr;
	if (srq == NULL)
		return 0;
	int n = atomic_load(&srq->nconns);
	if (n != 0) {
		PMREP_LOG_ERR("%d conn(s) still use the SRQ", n);
		return PMREP_E_BUSY;
	}
	*srq_ptr = NULL;
	struct pmrep_peer *peer = srq->peer;
	int ret = peer->ops->srq_delete(srq);
	pmrep_peer_unref(peer);
	return ret;
}

int
pmrep_srq_get_rcq(const struct pmrep_srq *srq, struct pmrep_cq **rcq)
{
	PMREP_CHECK_ARG(srq);
	PMREP_CHECK_ARG(rcq);
	*rcq = srq->rcq;
	return 0;
}

int
pmrep_srq_recv(struct pmrep_srq *srq, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context)
{
	PMREP_CHECK_ARG(srq);
	PMREP_CHECK_ARG(dst);
	int ret = pmrep_check_recv_dst(dst, offset, len);
	if (ret)
		return ret;
	return srq->peer->ops->srq_recv(srq, dst, offset, len, op_context);
}
