/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_mw.c -- memory windows: a type 2 window (ibv_alloc_mw(pd,
 * IBV_MW_TYPE_2)) bound to one conn's QP by an IBV_WR_BIND_MW posted on
 * that QP. An rkey of an MR is valid on every QP of its protection domain;
 * a type 2 window's only on the QP it was bound through (rxe compares the
 * window's QP with the one a request arrives on; measured on the guest's
 * rxe, 6.1 and 6.12, by tests/vm/mw_probe.c), so a region registered with
 * PMREP_MR_USAGE_MW_BIND (no remote access of its own) is reachable only
 * by the remote side of that conn, only while the window lives.
 *
 * The bind is unsignalled and ordered on the SQ before whatever the
 * caller posts next (the target's ACCEPT carrying the window's
 * descriptor), so the remote side can use the key as soon as it has it.
 * Its key: the window's current rkey with the low 8 bits stepped
 * (ibv_inc_rkey): the kernel keeps the upper 24 (the index), the consumer
 * owns the low 8.
 *
 * Invalidation: ibv_dealloc_mw, which invalidates a bound window
 * whatever the state of its QP (alive, in the error state, disconnected)
 * and needs no send-queue slot. Measured on rxe (tests/vm/mw_probe.c):
 * after it returns, a READ through the window's rkey on its own QP meets a
 * remote access error.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs_internal.h"

/* what the window gives for `usage` (a subset of the region's) */
static unsigned
window_access(const struct verbs_peer *peer, int usage)
{
	unsigned access = 0;
	/* a remote READ, and the reads of a VISIBILITY / APM flush */
	if (usage & (PMREP_MR_USAGE_READ_SRC |
			PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT))
		access |= IBV_ACCESS_REMOTE_READ;
	if (usage & PMREP_MR_USAGE_WRITE_DST) {
		access |= IBV_ACCESS_REMOTE_WRITE;
		if (peer->base.caps & PMREP_CAP_NATIVE_ATOMIC_WRITE)
			access |= IBV_ACCESS_REMOTE_ATOMIC;
	}
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	if (peer->base.caps & PMREP_CAP_NATIVE_FLUSH) {
		if (usage & PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY)
			access |= IBV_ACCESS_FLUSH_GLOBAL;
		if (usage & PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT)
			access |= IBV_ACCESS_FLUSH_PERSISTENT;
	}
#endif
	return access;
}

static void
unregister(struct verbs_peer *peer, struct verbs_mw *w)
{
	pthread_mutex_lock(&peer->lock);
	if (w->reg_prev)
		w->reg_prev->reg_next = w->reg_next;
	else if (peer->mws == w)
		peer->mws = w->reg_next;
	if (w->reg_next)
		w->reg_next->reg_prev = w->reg_prev;
	w->reg_next = w->reg_prev = NULL;
	pthread_mutex_unlock(&peer->lock);
}

int
verbs_mw_bind(struct pmrep_conn *base, struct pmrep_mr_local *mr, int usage,
		struct pmrep_mw **mw_ptr)
{
	struct verbs_conn *conn = (struct verbs_conn *)base;
	struct verbs_peer *peer = conn->peer;
	struct verbs_mr *vmr = (struct verbs_mr *)mr;
	int ret;

	struct verbs_mw *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		PMREP_LOG_ERR("out of memory for a memory window");
		return PMREP_E_NOMEM;
	}
	verbs_dev_rdlock(peer);
	if (atomic_load(&peer->removed) || vmr->mr == NULL) {
		ret = verbs_peer_gone(peer, "pmrep_mw_bind");
		goto err_unlock;
	}
	w->mw = ibv_alloc_mw(peer->pd, IBV_MW_TYPE_2);
	if (w->mw == NULL) {
		int err = errno ? errno : ENOMEM;
		if (err == EOPNOTSUPP || err == ENOSYS) {
			pmrep_err_set_errno(err);
			PMREP_LOG_ERR("ibv_alloc_mw(type 2): %s: the device has no type 2 memory windows",
					strerror(err));
			ret = PMREP_E_NOSUPP;
		} else {
			ret = PMREP_ERR_PROVIDER(err, "ibv_alloc_mw(type 2)");
		}
		goto err_unlock;
	}
	uint32_t rkey = ibv_inc_rkey(w->mw->rkey);
	pthread_mutex_lock(&peer->lock);
	w->reg_next = peer->mws;
	if (peer->mws)
		peer->mws->reg_prev = w;
	peer->mws = w;
	pthread_mutex_unlock(&peer->lock);
	ret = verbs_post_bind_mw(conn, w->mw, vmr->mr,
			(uint64_t)(uintptr_t)mr->ptr, mr->size, rkey,
			window_access(peer, usage));
	if (ret)
		goto err_dealloc;
	verbs_dev_unlock(peer);
	w->base.rkey = rkey;
	*mw_ptr = &w->base;
	return 0;

err_dealloc:
	unregister(peer, w);
	if (ibv_dealloc_mw(w->mw))
		PMREP_LOG_WARN("ibv_dealloc_mw of an unbound window failed");
err_unlock:
	verbs_dev_unlock(peer);
	free(w);
	return ret;
}

int
verbs_mw_invalidate(struct pmrep_mw *base)
{
	struct verbs_mw *w = (struct verbs_mw *)base;
	struct verbs_peer *peer = verbs_peer(base->peer);
	int ret = 0;

	verbs_dev_rdlock(peer);
	unregister(peer, w);
	/* NULL: released with its removed device (T22) */
	if (w->mw != NULL) {
		int err = ibv_dealloc_mw(w->mw);
		if (err)
			ret = PMREP_ERR_PROVIDER(err, "ibv_dealloc_mw");
	}
	w->mw = NULL;
	verbs_dev_unlock(peer);
	return ret;
}
