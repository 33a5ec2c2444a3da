/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_peer.c -- the tcp peer, its memory regions (a table keyed by rkey,
 * which is also the lkey) and the provider's ops table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "tcp.h"

int
pmrep_tcp_peer_new(struct pmrep_peer **peer_ptr)
{
	struct tcp_peer *p = calloc(1, sizeof(*p));
	if (p == NULL) {
		PMREP_LOG_ERR("out of memory for a tcp peer");
		return PMREP_E_NOMEM;
	}
	int ret;
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	/* dereg must not starve behind a stream of progress-thread readers */
	pthread_rwlockattr_setkind_np(&attr,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	int err = pthread_rwlock_init(&p->mem_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	if (err) {
		ret = PMREP_ERR_PROVIDER(err, "pthread_rwlock_init");
		goto err_free;
	}
	p->base.async_fd = tcp_eventfd();
	if (p->base.async_fd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, "eventfd");
		goto err_lock;
	}
	/* a random first key: an rkey from an earlier run names nothing */
	if (getrandom(&p->next_key, sizeof(p->next_key), GRND_NONBLOCK) !=
			sizeof(p->next_key))
		p->next_key = (uint32_t)time(NULL) * 2654435761u;
	p->base.ops = &pmrep_tcp_ops;
	p->base.provider = PMREP_PROVIDER_TCP;
	p->base.caps = PMREP_CAP_NATIVE_ATOMIC_WRITE | PMREP_CAP_NATIVE_FLUSH;
	atomic_init(&p->base.nobjects, 0);
	*peer_ptr = &p->base;
	return 0;

err_lock:
	pthread_rwlock_destroy(&p->mem_lock);
err_free:
	free(p);
	return ret;
}

static int
tcp_peer_delete(struct pmrep_peer *peer)
{
	struct tcp_peer *p = tcp_peer(peer);
	close(p->base.async_fd);
	pthread_rwlock_destroy(&p->mem_lock);
	free(p);
	return 0;
}

static int
tcp_peer_handle_async_event(struct pmrep_peer *peer,
		enum pmrep_async_event *event)
{
	(void) peer;
	*event = PMREP_ASYNC_NONE;	/* no device, nothing asynchronous */
	return 0;
}

/* ------------------------------------------------------------------- MRs */

static unsigned
bucket(uint32_t key)
{
	return (key * 2654435761u) >> 24;	/* TCP_MR_BUCKETS == 256 */
}

struct tcp_mr *
tcp_mr_find(struct tcp_peer *peer, uint32_t key)
{
	for (struct tcp_mr *m = peer->mr_hash[bucket(key)]; m; m = m->hnext)
		if (m->base.rkey == key)
			return m;
	return NULL;
}

enum pmrep_wc_status
tcp_mr_check(const struct pmrep_mr_local *mr, uint64_t raddr, uint64_t len,
		int usage)
{
	if (mr == NULL || (mr->usage & usage) != usage)
		return PMREP_WC_REMOTE_ACCESS_ERROR;
	if (raddr < mr->raddr)
		return PMREP_WC_REMOTE_ACCESS_ERROR;
	uint64_t off = raddr - mr->raddr;
	if (off > mr->size || len > mr->size - off)
		return PMREP_WC_REMOTE_ACCESS_ERROR;
	return PMREP_WC_SUCCESS;
}

static int
tcp_mr_reg(struct pmrep_peer *peer, void *ptr, size_t size, int usage,
		struct pmrep_mr_local **mr_ptr)
{
	struct tcp_peer *p = tcp_peer(peer);
	struct tcp_mr *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		PMREP_LOG_ERR("out of memory for a memory region");
		return PMREP_E_NOMEM;
	}
	m->base.peer = peer;
	m->base.ptr = ptr;
	m->base.size = size;
	m->base.usage = usage;
	m->base.raddr = (uintptr_t)ptr;

	pthread_rwlock_wrlock(&p->mem_lock);
	do {
		m->base.rkey = p->next_key++;
	} while (m->base.rkey == 0 || tcp_key_in_use(p, m->base.rkey));
	unsigned b = bucket(m->base.rkey);
	m->hnext = p->mr_hash[b];
	p->mr_hash[b] = m;
	pthread_rwlock_unlock(&p->mem_lock);

	*mr_ptr = &m->base;
	return 0;
}

static int
tcp_mr_dereg(struct pmrep_mr_local *mr)
{
	struct tcp_mr *m = (struct tcp_mr *)mr;
	struct tcp_peer *p = tcp_peer(mr->peer);

	/* once we hold the lock for writing no thread is inside the region;
	 * afterwards none can find it */
	pthread_rwlock_wrlock(&p->mem_lock);
	struct tcp_mr **pp = &p->mr_hash[bucket(mr->rkey)];
	while (*pp != m)
		pp = &(*pp)->hnext;
	*pp = m->hnext;
	for (struct tcp_conn *c = p->conns; c; c = c->peer_next)
		tcp_progress_forget_mr(c, m);
	pthread_rwlock_unlock(&p->mem_lock);
	free(m);
	return 0;
}

const struct pmrep_provider_ops pmrep_tcp_ops = {
	.peer_delete = tcp_peer_delete,
	.peer_handle_async_event = tcp_peer_handle_async_event,
	.mr_reg = tcp_mr_reg,
	.mr_dereg = tcp_mr_dereg,
	.comp_channel_new = tcp_comp_channel_new,
	.comp_channel_delete = tcp_comp_channel_delete,
	.comp_channel_wait = tcp_comp_channel_wait,
	.srq_new = tcp_srq_new,
	.srq_delete = tcp_srq_delete,
	.srq_recv = tcp_srq_recv,
	.ep_listen = tcp_ep_listen,
	.ep_shutdown = tcp_ep_shutdown,
	.ep_next_conn_req = tcp_ep_next_conn_req,
	.conn_req_new = tcp_conn_req_new,
	.conn_req_recv = tcp_conn_req_recv,
	.conn_req_connect = tcp_conn_req_connect,
	.conn_req_delete = tcp_conn_req_delete,
	.conn_next_event = tcp_conn_next_event,
	.conn_wait = tcp_conn_wait,
	.conn_disconnect = tcp_conn_disconnect,
	.conn_delete = tcp_conn_delete,
	.cq_wait = tcp_cq_wait,
	.cq_wait_any = tcp_cq_wait_any,
	.cq_get_completions = tcp_cq_get_completions,
	.post = tcp_post,
	.mw_bind = tcp_mw_bind,
	.mw_invalidate = tcp_mw_invalidate,
};
