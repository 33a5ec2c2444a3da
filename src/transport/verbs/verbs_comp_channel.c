/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_comp_channel.c -- a completion channel that the CQs of many
 * connections share: one fd to wait on, the event acknowledged on the CQ it
 * names, and a destroy that refuses (and keeps the channel usable) while a
 * CQ is still attached.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs_internal.h"
#include "transport/common.h"

int
verbs_comp_channel_new(struct pmrep_peer *base, struct pmrep_comp_channel **ch_ptr)
{
	struct verbs_peer *peer = verbs_peer(base);
	int ret;

	if (atomic_load(&peer->removed))
		return verbs_peer_gone(peer, "pmrep_comp_channel_new");
	struct verbs_comp_channel *ch = calloc(1, sizeof(*ch));
	if (ch == NULL) {
		PMREP_LOG_ERR("out of memory for a completion channel");
		return PMREP_E_NOMEM;
	}
	ch->ch = ibv_create_comp_channel(peer->ctx);
	if (ch->ch == NULL) {
		ret = PMREP_ERR_PROVIDER(errno, "ibv_create_comp_channel");
		goto err_free;
	}
	ret = verbs_fd_set_flags(ch->ch->fd, "fcntl(completion channel)");
	if (ret)
		goto err_destroy;
	ret = pthread_mutex_init(&ch->lock, NULL);
	if (ret) {
		ret = PMREP_ERR_PROVIDER(ret, "pthread_mutex_init");
		goto err_destroy;
	}
	ch->base.peer = base;
	ch->base.fd = ch->ch->fd;
	atomic_init(&ch->base.ncqs, 0);
	verbs_peer_add_chan(peer, ch);
	*ch_ptr = &ch->base;
	return 0;

err_destroy:
	(void) ibv_destroy_comp_channel(ch->ch);
err_free:
	free(ch);
	return ret;
}

int
verbs_comp_channel_delete(struct pmrep_comp_channel *base)
{
	struct verbs_comp_channel *ch = (struct verbs_comp_channel *)base;
	struct verbs_peer *peer = verbs_peer(base->peer);

	verbs_dev_rdlock(peer);
	/* NULL: released with its removed device (T22) */
	/* returns the errno itself (a positive value), not -1 (T02) */
	int err = ch->ch != NULL ? ibv_destroy_comp_channel(ch->ch) : 0;
	if (err != EBUSY)
		verbs_peer_del_chan(peer, ch);
	verbs_dev_unlock(peer);
	if (err == EBUSY) {
		pmrep_err_set_errno(err);
		PMREP_LOG_ERR("ibv_destroy_comp_channel: a CQ is still attached; the channel stays usable");
		return PMREP_E_BUSY;
	}
	int ret = 0;
	if (err)
		ret = PMREP_ERR_PROVIDER(err, "ibv_destroy_comp_channel");
	(void) pthread_mutex_destroy(&ch->lock);
	free(ch);
	return ret;
}

struct take_args {
	struct verbs_comp_channel *ch;
	struct verbs_cq *got;
};

static int
try_take(void *arg)
{
	struct take_args *a = arg;
	struct verbs_peer *peer = verbs_peer(a->ch->base.peer);
	verbs_dev_rdlock(peer);
	int ret = atomic_load(&peer->removed) ? PMREP_E_CONN_LOST :
		verbs_channel_take_event(a->ch->ch, &a->ch->lock, &a->got);
	verbs_dev_unlock(peer);
	return ret;
}

int
verbs_comp_channel_wait(struct pmrep_comp_channel *base, int timeout_ms,
		struct pmrep_cq **cq, struct pmrep_conn **conn)
{
	struct verbs_comp_channel *ch = (struct verbs_comp_channel *)base;
	struct take_args a = { ch, NULL };
	struct verbs_peer *peer = verbs_peer(base->peer);

	verbs_dev_rdlock(peer);
	int fd = ch->ch != NULL ? ch->ch->fd : -1;
	verbs_dev_unlock(peer);
	if (fd < 0) {
		PMREP_LOG_ERR("the completion channel's RDMA device was removed");
		return PMREP_E_CONN_LOST;
	}
	int ret = pmrep_wait_for(fd, timeout_ms, try_take, &a);
	if (ret == PMREP_E_TIMEOUT && timeout_ms == 0)
		return PMREP_E_NO_COMPLETION;
	if (ret)
		return ret;
	*cq = &a.got->base;
	*conn = a.got->base.conn;
	return 0;
}
