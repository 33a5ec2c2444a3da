/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_srq.c -- a shared receive queue with its own receive CQ: a target
 * serving many initiators posts its receives once, here.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs_internal.h"

int
verbs_srq_new(struct pmrep_peer *base, uint32_t rq_size, uint32_t rcq_size,
		struct pmrep_srq **srq_ptr)
{
	struct verbs_peer *peer = verbs_peer(base);
	int ret;

	if (atomic_load(&peer->removed))
		return verbs_peer_gone(peer, "pmrep_srq_new");
	struct verbs_srq *srq = calloc(1, sizeof(*srq));
	if (srq == NULL) {
		PMREP_LOG_ERR("out of memory for an SRQ");
		return PMREP_E_NOMEM;
	}
	ret = verbs_rq_table_init(&srq->table, rq_size);
	if (ret)
		goto err_free;
	/* every posted receive completes on this CQ: it must hold them all */
	uint32_t cqe = rcq_size > rq_size ? rcq_size : rq_size;
	ret = verbs_cq_new(peer, (int)cqe, NULL, NULL, &srq->rcq);
	if (ret)
		goto err_fini_table;
	struct ibv_srq_init_attr attr = {
		.srq_context = srq,
		.attr = { .max_wr = rq_size, .max_sge = 1 },
	};
	srq->srq = ibv_create_srq(peer->pd, &attr);
	if (srq->srq == NULL) {
		ret = PMREP_ERR_PROVIDER(errno, "ibv_create_srq");
		goto err_delete_cq;
	}
	srq->rcq->rq = &srq->table;
	srq->rcq->base.is_rcq = true;
	srq->base.peer = base;
	srq->base.rcq = &srq->rcq->base;
	atomic_init(&srq->base.nconns, 0);
	verbs_peer_add_srq(peer, srq);
	*srq_ptr = &srq->base;
	return 0;

err_delete_cq:
	(void) verbs_cq_delete(srq->rcq);
err_fini_table:
	verbs_rq_table_fini(&srq->table);
err_free:
	free(srq);
	return ret;
}

int
verbs_srq_delete(struct pmrep_srq *base)
{
	struct verbs_srq *srq = (struct verbs_srq *)base;
	struct verbs_peer *peer = verbs_peer(base->peer);
	int ret = 0, err;

	verbs_dev_rdlock(peer);
	verbs_peer_del_srq(peer, srq);
	/* NULL: released with its removed device (T22) */
	if (srq->srq != NULL) {
		err = ibv_destroy_srq(srq->srq);
		if (err)
			ret = PMREP_ERR_PROVIDER(err, "ibv_destroy_srq");
	}
	err = verbs_cq_delete(srq->rcq);
	verbs_dev_unlock(peer);
	if (err && ret == 0)
		ret = err;
	verbs_rq_table_fini(&srq->table);
	free(srq);
	return ret;
}

int
verbs_srq_post_recv(struct verbs_srq *srq, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context)
{
	struct ibv_recv_wr *bad;
	struct ibv_sge sge = {
		.addr = (uintptr_t)dst->ptr + offset,
		.length = (uint32_t)len,
		.lkey = verbs_mr_lkey(dst),
	};
	struct ibv_recv_wr wr = {
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
	};
	int ret = verbs_rq_table_get(&srq->table, op_context, &wr.wr_id);
	if (ret)
		return ret;
	int err = ibv_post_srq_recv(srq->srq, &wr, &bad);
	if (err) {
		verbs_rq_table_put(&srq->table, wr.wr_id);
		if (err == ENOMEM)
			return PMREP_E_AGAIN;
		return PMREP_ERR_PROVIDER(err, "ibv_post_srq_recv");
	}
	return 0;
}

int
verbs_srq_recv(struct pmrep_srq *srq, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context)
{
	struct verbs_peer *peer = verbs_peer(srq->peer);
	verbs_dev_rdlock(peer);
	int ret = atomic_load(&peer->removed) ?
		verbs_peer_gone(peer, "pmrep_srq_recv") :
		verbs_srq_post_recv((struct verbs_srq *)srq, dst, offset, len,
			op_context);
	verbs_dev_unlock(peer);
	return ret;
}
