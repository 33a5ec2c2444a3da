/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_device.c -- device removal (T22): the registries of a peer's
 * objects and the release of everything a peer holds on its device.
 *
 * An RDMA device that goes away (`rdma link delete`, a hot-unplug) is
 * removed by the kernel only once every process has let go of it: for a
 * device without "disassociate" (rxe, siw) the kernel waits until every
 * uverbs file of it is closed -- the context, and each completion
 * channel. pmrep learns of the removal from an rdma_cm DEVICE_REMOVAL
 * event (on a conn's id or a listener's id) or IBV_EVENT_DEVICE_FATAL on
 * the context's async fd, and then releases at once every verbs object
 * of every peer on that device (verbs_device_removed, in verbs_peer.c):
 * per conn its QP, CQs, completion channels and id (verbs_conn_release);
 * per listener its id and the requests queued on it; SRQs, shared
 * completion channels, MRs, the flush sink, the PD and the DEVX channel.
 * The pmrep objects themselves stay: each reports the loss on use
 * (conns: LOST, posts and CQ calls PMREP_E_CONN_LOST; the peer and its
 * endpoints, SRQs, channels: PMREP_E_DEVICE_REMOVED) and is freed by its
 * owner's delete as usual, which destroys nothing twice.
 * The peers' contexts belong to librdmacm (pmrep_peer_open) or to the
 * application (pmrep_peer_new): pmrep opens none itself. librdmacm's
 * context would outlive the release (see verbs_cm_ctx_let_go): the
 * release ends by making it let go of the device's files. An
 * application's context is the application's to close.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_internal.h"

/*
 * librdmacm's context of a removed device: pmrep released everything it
 * had on it, but librdmacm closes its context only when it re-reads the
 * device list and finds the device gone -- and it gives up re-reading
 * when the list is empty (a single-device host: the removed device was
 * the only one), while reading it at the wrong moment (rdma_get_devices)
 * opens the dying device again. The kernel waits for the device's files
 * to be closed: so replace both of the context's fds (its command fd and
 * async event fd) by /dev/null, which lets go of the device's files at
 * once while the fd numbers stay taken: librdmacm closes them (and frees
 * the context) whenever it next syncs, harmlessly. Only for contexts
 * librdmacm handed out; an application's own context is its to close.
 */
void
verbs_cm_ctx_let_go(struct ibv_context *ctx, const char *name)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0) {
		PMREP_LOG_ERR("open(/dev/null): %s: librdmacm's context of %s stays open (the device's removal waits for this process)",
				strerror(errno), name);
		return;
	}
	int fds[2] = { ctx->cmd_fd, ctx->async_fd };
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0 && dup3(null, fds[i], O_CLOEXEC) < 0)
			PMREP_LOG_ERR("dup3(/dev/null, %d): %s: librdmacm's context of %s stays open",
					fds[i], strerror(errno), name);
	}
	(void) close(null);
	PMREP_LOG(PMREP_LOG_NOTICE, "RDMA device %s: librdmacm's context let go of (its fds now /dev/null)",
			name);
}

#define REG_ADD(head, obj) do {					\
	(obj)->reg_prev = NULL;					\
	(obj)->reg_next = (head);				\
	if ((head) != NULL)					\
		(head)->reg_prev = (obj);			\
	(head) = (obj);						\
} while (0)

#define REG_DEL(head, obj) do {					\
	if ((obj)->reg_prev != NULL)				\
		(obj)->reg_prev->reg_next = (obj)->reg_next;	\
	else if ((head) == (obj))				\
		(head) = (obj)->reg_next;			\
	if ((obj)->reg_next != NULL)				\
		(obj)->reg_next->reg_prev = (obj)->reg_prev;	\
	(obj)->reg_next = (obj)->reg_prev = NULL;		\
} while (0)

void
verbs_peer_add_mr(struct verbs_peer *peer, struct verbs_mr *mr)
{
	pthread_mutex_lock(&peer->lock);
	REG_ADD(peer->mrs, mr);
	pthread_mutex_unlock(&peer->lock);
}

void
verbs_peer_del_mr(struct verbs_peer *peer, struct verbs_mr *mr)
{
	pthread_mutex_lock(&peer->lock);
	REG_DEL(peer->mrs, mr);
	pthread_mutex_unlock(&peer->lock);
}

void
verbs_peer_add_ep(struct verbs_peer *peer, struct verbs_ep *ep)
{
	pthread_mutex_lock(&peer->lock);
	REG_ADD(peer->eps, ep);
	pthread_mutex_unlock(&peer->lock);
}

void
verbs_peer_del_ep(struct verbs_peer *peer, struct verbs_ep *ep)
{
	pthread_mutex_lock(&peer->lock);
	REG_DEL(peer->eps, ep);
	pthread_mutex_unlock(&peer->lock);
}

void
verbs_peer_add_srq(struct verbs_peer *peer, struct verbs_srq *srq)
{
	pthread_mutex_lock(&peer->lock);
	REG_ADD(peer->srqs, srq);
	pthread_mutex_unlock(&peer->lock);
}

void
verbs_peer_del_srq(struct verbs_peer *peer, struct verbs_srq *srq)
{
	pthread_mutex_lock(&peer->lock);
	REG_DEL(peer->srqs, srq);
	pthread_mutex_unlock(&peer->lock);
}

void
verbs_peer_add_chan(struct verbs_peer *peer, struct verbs_comp_channel *ch)
{
	pthread_mutex_lock(&peer->lock);
	REG_ADD(peer->chans, ch);
	pthread_mutex_unlock(&peer->lock);
}

void
verbs_peer_del_chan(struct verbs_peer *peer, struct verbs_comp_channel *ch)
{
	pthread_mutex_lock(&peer->lock);
	REG_DEL(peer->chans, ch);
	pthread_mutex_unlock(&peer->lock);
}

int
verbs_peer_gone(const struct verbs_peer *peer, const char *what)
{
	(void) peer;
	PMREP_LOG_ERR("%s: the peer's RDMA device was removed; delete this peer's objects and open a new peer",
			what);
	return PMREP_E_DEVICE_REMOVED;
}

bool
verbs_device_listed(const struct verbs_peer *peer)
{
	/* libibverbs' list (librdmacm's rdma_get_devices would open every
	 * device it lists, a dying one too) */
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (list == NULL)
		return true;	/* unsure */
	bool found = false;
	for (int i = 0; i < n && list[i] != NULL; i++) {
		if (peer->ctx != NULL && list[i] == peer->ctx->device)
			found = true;
	}
	ibv_free_device_list(list);
	return found;
}

void
verbs_cq_release(struct verbs_cq *cq)
{
	if (cq->cq != NULL) {
		/* a waiter on a shared channel holds its lock while it takes
		 * and re-arms an event of this CQ */
		if (cq->ext != NULL)
			pthread_mutex_lock(&cq->ext->lock);
		int err = ibv_destroy_cq(cq->cq);
		if (cq->ext != NULL)
			pthread_mutex_unlock(&cq->ext->lock);
		if (err)
			PMREP_LOG_WARN("ibv_destroy_cq on a removed device: %s",
					strerror(err));
		cq->cq = NULL;
	}
	if (cq->own_channel && cq->channel != NULL) {
		int err = ibv_destroy_comp_channel(cq->channel);
		if (err)
			PMREP_LOG_WARN("ibv_destroy_comp_channel on a removed device: %s",
					strerror(err));
	}
	if (cq->own_channel)
		cq->channel = NULL;
	cq->base.fd = -1;
}

/*
 * Everything `p` holds on its device, children first: conns and
 * listeners (their CQs leave the shared channels), SRQs, channels, MRs,
 * the sink, the PD. dev_lock is held for writing.
 */
void
verbs_peer_release_locked(struct verbs_peer *p)
{
	int err;

	pthread_mutex_lock(&p->lock);
	/*
	 * Windows first: a bound window holds its QP (rxe: destroying the
	 * QP waits for it, seconds per QP in the guest) and its region (a
	 * region with a bound window does not deregister).
	 */
	for (struct verbs_mw *w = p->mws; w != NULL; w = w->reg_next) {
		if (w->mw != NULL) {
			err = ibv_dealloc_mw(w->mw);
			if (err)
				PMREP_LOG_WARN("ibv_dealloc_mw on a removed device: %s",
						strerror(err));
			w->mw = NULL;
		}
	}
	for (struct verbs_conn *c = p->conns; c != NULL; c = c->reg_next)
		verbs_conn_release(c);
	for (struct verbs_ep *e = p->eps; e != NULL; e = e->reg_next)
		verbs_ep_release(e);
	for (struct verbs_srq *s = p->srqs; s != NULL; s = s->reg_next) {
		if (s->srq != NULL) {
			err = ibv_destroy_srq(s->srq);
			if (err)
				PMREP_LOG_WARN("ibv_destroy_srq on a removed device: %s",
						strerror(err));
			s->srq = NULL;
		}
		verbs_cq_release(s->rcq);
	}
	for (struct verbs_comp_channel *ch = p->chans; ch; ch = ch->reg_next) {
		if (ch->ch != NULL) {
			err = ibv_destroy_comp_channel(ch->ch);
			if (err)
				PMREP_LOG_WARN("ibv_destroy_comp_channel on a removed device: %s",
						strerror(err));
			ch->ch = NULL;
		}
		ch->base.fd = -1;
	}
	for (struct verbs_mr *mr = p->mrs; mr != NULL; mr = mr->reg_next) {
		if (mr->mr != NULL) {
			err = ibv_dereg_mr(mr->mr);
			if (err)
				PMREP_LOG_WARN("ibv_dereg_mr on a removed device: %s",
						strerror(err));
			mr->mr = NULL;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (p->sink_mr != NULL) {
		err = ibv_dereg_mr(p->sink_mr);
		if (err)
			PMREP_LOG_WARN("ibv_dereg_mr(flush sink) on a removed device: %s",
					strerror(err));
		p->sink_mr = NULL;
	}
	if (p->pd != NULL) {
		err = ibv_dealloc_pd(p->pd);
		if (err)
			PMREP_LOG_WARN("ibv_dealloc_pd on a removed device: %s",
					strerror(err));
		p->pd = NULL;
	}
	verbs_devx_destroy(p);
	/* the async fd is the context's: librdmacm closes it */
	p->base.async_fd = -1;
	p->ctx = NULL;
	atomic_store(&p->removed, true);
	atomic_store(&p->base.device_removed, true);
}
