/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_mw.c -- memory windows of the tcp provider and the check every
 * remote READ / WRITE / ATOMIC WRITE / FLUSH goes through.
 *
 * A window is a random 32-bit key (getrandom; unique in the peer among
 * regions and windows, never 0) bound to one conn: the conn's list of
 * windows is the only place it is looked up, so a request arriving on any
 * other conn that names it finds nothing and meets the remote access
 * error of an unknown key. A region registered with PMREP_MR_USAGE_MW_BIND
 * is reachable through its windows only; its own key (also its lkey)
 * grants no remote access. A region without it keeps the plain transport
 * rule (its own key, any conn of the peer).
 *
 * Invalidation takes the peer's memory lock for writing: no progress turn
 * (which holds it for reading while it applies requests) is inside the
 * window then, and afterwards none can find it. A remote write of the
 * window's region that is mid-payload on that conn lands nowhere and
 * fails the conn (tcp_progress_forget_mr, as a deregistration does). A
 * READ accepted before the invalidation is still answered: a response
 * already committed to the stream with a snapshot of the bytes at
 * invalidation, one still queued with the bytes when it is sent (the
 * region is still registered). No request arriving afterwards passes.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "tcp.h"

bool
tcp_key_in_use(struct tcp_peer *p, uint32_t key)
{
	if (tcp_mr_find(p, key) != NULL)
		return true;
	for (struct tcp_conn *c = p->conns; c; c = c->peer_next)
		for (struct tcp_mw *w = c->mws; w; w = w->cnext)
			if (w->base.rkey == key)
				return true;
	return false;
}

static int
random_key(uint32_t *key)
{
	ssize_t n = getrandom(key, sizeof(*key), 0);
	if (n != (ssize_t)sizeof(*key))
		return PMREP_ERR_PROVIDER(n < 0 ? errno : EIO, "getrandom");
	return 0;
}

int
tcp_mw_bind(struct pmrep_conn *conn, struct pmrep_mr_local *mr, int usage,
		struct pmrep_mw **mw_ptr)
{
	struct tcp_conn *c = (struct tcp_conn *)conn;
	struct tcp_peer *p = tcp_peer(conn->peer);

	pthread_mutex_lock(&c->lock);
	bool usable = c->established && !c->failed && !c->disconnecting;
	pthread_mutex_unlock(&c->lock);
	if (!usable) {
		PMREP_LOG_ERR("cannot bind a window: the conn is not connected (or lost)");
		return PMREP_E_CONN_LOST;
	}
	struct tcp_mw *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		PMREP_LOG_ERR("out of memory for a memory window");
		return PMREP_E_NOMEM;
	}
	w->mr = (struct tcp_mr *)mr;
	w->conn = c;
	w->base.usage = usage;
	pthread_rwlock_wrlock(&p->mem_lock);
	uint32_t key;
	int ret;
	do {
		ret = random_key(&key);
	} while (ret == 0 && (key == 0 || tcp_key_in_use(p, key)));
	if (ret == 0) {
		w->base.rkey = key;
		w->cnext = c->mws;
		c->mws = w;
	}
	pthread_rwlock_unlock(&p->mem_lock);
	if (ret) {
		free(w);
		return ret;
	}
	*mw_ptr = &w->base;
	return 0;
}

int
tcp_mw_invalidate(struct pmrep_mw *mw)
{
	struct tcp_mw *w = (struct tcp_mw *)mw;
	struct tcp_conn *c = w->conn;
	struct tcp_peer *p = tcp_peer(mw->peer);

	pthread_rwlock_wrlock(&p->mem_lock);
	struct tcp_mw **pp = &c->mws;
	while (*pp != NULL && *pp != w)
		pp = &(*pp)->cnext;
	if (*pp == w)
		*pp = w->cnext;
	w->cnext = NULL;
	/* what of the region is in flight on this conn: no write lands */
	tcp_progress_forget_mr(c, w->mr);
	pthread_rwlock_unlock(&p->mem_lock);
	return 0;
}

static const char *
usage_str(int usage)
{
	switch (usage) {
	case PMREP_MR_USAGE_READ_SRC: return "READ";
	case PMREP_MR_USAGE_WRITE_DST: return "WRITE";
	default: return "FLUSH";
	}
}

enum pmrep_wc_status
tcp_remote_check(struct tcp_conn *c, uint32_t rkey, uint64_t raddr,
		uint64_t len, int usage, struct tcp_mr **mr_ptr)
{
	*mr_ptr = NULL;
	for (struct tcp_mw *w = c->mws; w; w = w->cnext) {
		if (w->base.rkey != rkey)
			continue;
		if ((w->base.usage & usage) != usage) {
			PMREP_LOG_ERR("remote %s refused: window rkey 0x%x of this conn does not give it (usage 0x%x)",
					usage_str(usage), rkey,
					(unsigned)w->base.usage);
			return PMREP_WC_REMOTE_ACCESS_ERROR;
		}
		enum pmrep_wc_status st = tcp_mr_check(&w->mr->base, raddr, len,
				usage);
		if (st == PMREP_WC_SUCCESS)
			*mr_ptr = w->mr;
		else
			PMREP_LOG_ERR("remote %s refused: %llu bytes at 0x%llx are outside window rkey 0x%x",
					usage_str(usage),
					(unsigned long long)len,
					(unsigned long long)raddr, rkey);
		return st;
	}
	struct tcp_mr *mr = tcp_mr_find(tcp_peer(c->base.peer), rkey);
	if (mr != NULL && (mr->base.usage & PMREP_MR_USAGE_MW_BIND)) {
		PMREP_LOG_ERR("remote %s refused: rkey 0x%x is a region reached through memory windows only",
				usage_str(usage), rkey);
		return PMREP_WC_REMOTE_ACCESS_ERROR;
	}
	if (mr == NULL) {
		PMREP_LOG_ERR("remote %s refused: rkey 0x%x is neither a window of this conn nor a region",
				usage_str(usage), rkey);
		return PMREP_WC_REMOTE_ACCESS_ERROR;
	}
	enum pmrep_wc_status st = tcp_mr_check(&mr->base, raddr, len, usage);
	if (st == PMREP_WC_SUCCESS)
		*mr_ptr = mr;
	return st;
}
