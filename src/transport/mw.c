/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mw.c -- memory windows: remote access to a region registered with
 * PMREP_MR_USAGE_MW_BIND, given to the remote side of one conn (verbs: a
 * type 2 window bound to the conn's QP, verbs_mw.c; tcp: a window key of
 * that conn alone, tcp_mw.c). The generic layer checks the arguments,
 * keeps every conn's list of the windows bound to it (so that deleting a
 * conn invalidates what is left: no window outlives its conn's access
 * path) and frees the window.
 *
 * Lock: one process-wide mutex over every conn's window list, held across
 * the provider's invalidate, so a window is invalidated exactly once, by
 * whichever of pmrep_mw_invalidate and pmrep_conn_delete comes first.
 * Binds and invalidates are per session (rare): one lock costs nothing.
 * Lock order: Mw_lock, then the provider's locks.
 */
#include <pthread.h>
#include <stdlib.h>

#include "common.h"

#define MW_REMOTE_USAGE (PMREP_MR_USAGE_READ_SRC | PMREP_MR_USAGE_WRITE_DST | \
		PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY | \
		PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT)

static pthread_mutex_t Mw_lock = PTHREAD_MUTEX_INITIALIZER;

static void
unlink_locked(struct pmrep_mw *mw)
{
	struct pmrep_conn *conn = mw->conn;
	if (mw->prev)
		mw->prev->next = mw->next;
	else
		conn->mws = mw->next;
	if (mw->next)
		mw->next->prev = mw->prev;
	mw->next = mw->prev = NULL;
	mw->conn = NULL;
}

int
pmrep_mw_bind(struct pmrep_conn *conn, struct pmrep_mr_local *mr, int usage,
		struct pmrep_mw **mw_ptr)
{
	PMREP_CHECK_ARG(conn);
	PMREP_CHECK_ARG(mr);
	PMREP_CHECK_ARG(mw_ptr);
	if (usage == 0 || (usage & ~MW_REMOTE_USAGE) != 0) {
		PMREP_LOG_ERR("invalid window usage 0x%x (READ_SRC, WRITE_DST, FLUSH_TYPE_* only)",
				(unsigned)usage);
		return PMREP_E_INVAL;
	}
	if (!(mr->usage & PMREP_MR_USAGE_MW_BIND)) {
		PMREP_LOG_ERR("a window needs an MR registered with PMREP_MR_USAGE_MW_BIND (usage 0x%x)",
				(unsigned)mr->usage);
		return PMREP_E_INVAL;
	}
	if ((usage & ~mr->usage) != 0) {
		PMREP_LOG_ERR("window usage 0x%x is not the MR's (0x%x)",
				(unsigned)usage, (unsigned)mr->usage);
		return PMREP_E_INVAL;
	}
	if (mr->peer != conn->peer) {
		PMREP_LOG_ERR("the MR and the conn belong to different peers");
		return PMREP_E_INVAL;
	}
	struct pmrep_peer *peer = conn->peer;
	if (peer->ops->mw_bind == NULL) {
		PMREP_LOG_ERR("this provider has no memory windows");
		return PMREP_E_NOSUPP;
	}
	if (atomic_load(&conn->terminal)) {
		PMREP_LOG_ERR("cannot bind a window to a lost or closed conn");
		return PMREP_E_CONN_LOST;
	}
	struct pmrep_mw *mw = NULL;
	pthread_mutex_lock(&Mw_lock);
	int ret = peer->ops->mw_bind(conn, mr, usage, &mw);
	if (ret == 0) {
		mw->peer = peer;
		mw->conn = conn;
		mw->mr = mr;
		mw->usage = usage;
		mw->prev = NULL;
		mw->next = conn->mws;
		if (conn->mws)
			conn->mws->prev = mw;
		conn->mws = mw;
		pmrep_peer_ref(peer);
	}
	pthread_mutex_unlock(&Mw_lock);
	if (ret)
		return ret;
	PMREP_LOG_DBG("window rkey 0x%x (usage 0x%x) bound over %zu bytes",
			mw->rkey, (unsigned)usage, mr->size);
	*mw_ptr = mw;
	return 0;
}

int
pmrep_mw_get_descriptor(const struct pmrep_mw *mw, void *desc)
{
	PMREP_CHECK_ARG(mw);
	PMREP_CHECK_ARG(desc);
	pthread_mutex_lock(&Mw_lock);
	bool gone = mw->conn == NULL;
	pthread_mutex_unlock(&Mw_lock);
	if (gone) {
		PMREP_LOG_ERR("the window was invalidated when its conn was deleted");
		return PMREP_E_STATE;
	}
	const struct pmrep_mr_local *mr = mw->mr;
	pmrep_mr_desc_encode(mw->peer->provider, mw->rkey, mr->raddr, mr->size,
			mw->usage, desc);
	return 0;
}

int
pmrep_mw_invalidate(struct pmrep_mw **mw_ptr)
{
	PMREP_CHECK_ARG(mw_ptr);
	struct pmrep_mw *mw = *mw_ptr;
	if (mw == NULL)
		return 0;
	*mw_ptr = NULL;
	struct pmrep_peer *peer = mw->peer;
	int ret = 0;
	pthread_mutex_lock(&Mw_lock);
	if (mw->conn != NULL) {
		ret = peer->ops->mw_invalidate(mw);
		unlink_locked(mw);
	}
	pthread_mutex_unlock(&Mw_lock);
	PMREP_LOG_DBG("window rkey 0x%x invalidated", mw->rkey);
	free(mw);
	pmrep_peer_unref(peer);
	return ret;
}

void
pmrep_mw_conn_deleted(struct pmrep_conn *conn)
{
	pthread_mutex_lock(&Mw_lock);
	while (conn->mws != NULL) {
		struct pmrep_mw *mw = conn->mws;
		PMREP_LOG_INFO("conn deleted with window rkey 0x%x still bound: invalidated now",
				mw->rkey);
		(void) conn->peer->ops->mw_invalidate(mw);
		unlink_locked(mw);
	}
	pthread_mutex_unlock(&Mw_lock);
}
