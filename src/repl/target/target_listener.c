/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_listener.c -- one endpoint serving several replicas: a listener
 * owns the peer, the listening endpoint (its conn cfg with the TLS PSK
 * look-up over every replica's keys) and an epoll fd holding the
 * endpoint's fd and each replica's own epoll fd. Each replica is a
 * struct pmrep_target (target.c) on the listener's list, with its own
 * replica file, lock, registration, keys, session slots, admission state
 * (replay cache, per-source bound) and counters.
 *
 * A connection request is dispatched by its HELLO's selector to the
 * replica of that name (an empty selector: the one replica when there is
 * one) and admitted there as a target of its own admits it. A selector
 * naming no replica: the request goes to a replica whose key verifies its
 * admission proof, whose AUTH is then refused NO_REPLICA (the mirror gets
 * a REFUSE naming the cause, only after proving a key); no replica's key:
 * rejected at once, counted in the listener's stats.
 *
 * No replica stalls another: everything runs in pmrep_listener_process
 * (single-threaded), and nothing of one replica's work waits on a
 * connection -- a handshake that stalls holds that replica's slot until
 * its deadline, a refused attach ends that session, a poisoned replica
 * answers INTERNAL and only it. What does block is the kernel's part of
 * a persist (msync / a cache flush of the replica's mapping): a replica on
 * a device that hangs there holds up the thread, and so every replica of
 * that listener (docs/DESIGN.md: serve such a device from a process of
 * its own).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "target_int.h"

#define RELISTEN_PERIOD_MS 100

int
pmrep_listener_new(const struct pmrep_target_cfg *cfg,
		struct pmrep_listener **listener_ptr)
{
	if (cfg == NULL || listener_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: cfg or listener_ptr is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_listener *l = calloc(1, sizeof(*l));
	if (l == NULL) {
		PMREP_LOG_ERR("out of memory for a listener");
		return PMREP_E_NOMEM;
	}
	l->epfd = -1;
	int ret = pmrep_target_cfg_new(&l->cfg);
	if (ret)
		goto err;
	/* only what is the endpoint's: address, port, timeout, TLS */
	if ((ret = pmrep_target_cfg_set_address(l->cfg, cfg->addr, cfg->port)))
		goto err;
	l->cfg->timeout_ms = cfg->timeout_ms;
	l->cfg->no_tls = cfg->no_tls;
	memcpy(l->cfg->tls_names, cfg->tls_names, sizeof(cfg->tls_names));
	l->cfg->ntls_names = cfg->ntls_names;
	ret = pmrep_peer_open(l->cfg->addr, true, &l->peer);
	if (ret)
		goto err;
	ret = pmrep_conn_cfg_new(&l->conn_cfg);
	if (ret)
		goto err;
	(void) pmrep_conn_cfg_set_timeout(l->conn_cfg, l->cfg->timeout_ms);
	(void) pmrep_conn_cfg_set_sq_size(l->conn_cfg, CHAN_NSEND + 4);
	(void) pmrep_conn_cfg_set_rq_size(l->conn_cfg, CHAN_NRECV);
	(void) pmrep_conn_cfg_set_cq_size(l->conn_cfg, CHAN_NSEND + CHAN_NRECV + 8);
	/* the chain's head: the endpoint's TLS names, no key; each replica
	 * links its own keys and names behind it (listener_relink) */
	static const unsigned no_keys = 0;
	l->tls = (struct repl_tls_target){ NULL, &no_keys,
		(const char (*)[REPL_TLS_NAME_MAX])l->cfg->tls_names,
		l->cfg->ntls_names, NULL };
	enum pmrep_provider prov;
	if (!l->cfg->no_tls && pmrep_peer_get_provider(l->peer, &prov) == 0 &&
			prov == PMREP_PROVIDER_TCP)
		(void) pmrep_conn_cfg_set_tls_psk_find(l->conn_cfg,
				repl_tls_target_find, &l->tls);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, "epoll_create1");
		goto err;
	}
	ret = pmrep_ep_listen(l->peer, l->cfg->addr, l->cfg->port, &l->ep);
	if (ret)
		goto err;
	int fd;
	(void) pmrep_ep_get_fd(l->ep, &fd);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "epoll_ctl");
		goto err;
	}
	(void) pmrep_ep_get_port(l->ep, &l->port);
	PMREP_LOG(PMREP_LOG_NOTICE, "listening on %s:%u for replicas",
			l->cfg->addr, (unsigned)l->port);
	*listener_ptr = l;
	return 0;
err:
	(void) pmrep_ep_shutdown(&l->ep);
	if (l->epfd >= 0)
		close(l->epfd);
	(void) pmrep_conn_cfg_delete(&l->conn_cfg);
	(void) pmrep_peer_delete(&l->peer);
	(void) pmrep_target_cfg_delete(&l->cfg);
	free(l);
	return ret;
}

int
pmrep_listener_delete(struct pmrep_listener **listener_ptr)
{
	if (listener_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: listener_ptr is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_listener *l = *listener_ptr;
	if (l == NULL)
		return 0;
	while (l->targets != NULL) {
		struct pmrep_target *t = l->targets;
		(void) pmrep_target_delete(&t);
	}
	(void) pmrep_ep_shutdown(&l->ep);
	close(l->epfd);
	(void) pmrep_conn_cfg_delete(&l->conn_cfg);
	int ret = pmrep_peer_delete(&l->peer);
	if (ret)
		PMREP_LOG_ERR("deleting the listener's peer: %s",
				pmrep_err_to_str(ret));
	(void) pmrep_target_cfg_delete(&l->cfg);
	free(l);
	*listener_ptr = NULL;
	return 0;
}

/* the TLS look-up's chain: the head, then every replica's keys */
static void
listener_relink(struct pmrep_listener *l)
{
	struct repl_tls_target *prev = &l->tls;
	for (struct pmrep_target *t = l->targets; t != NULL; t = t->next) {
		t->tls = (struct repl_tls_target){ t->cfg.keys, &t->cfg.nkeys,
			(const char (*)[REPL_TLS_NAME_MAX])t->cfg.tls_names,
			t->cfg.ntls_names, NULL };
		prev->next = &t->tls;
		prev = &t->tls;
	}
	prev->next = NULL;
}

static struct pmrep_target *
listener_find(const struct pmrep_listener *l, const char *name)
{
	for (struct pmrep_target *t = l->targets; t != NULL; t = t->next)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

int
pmrep_listener_add_target(struct pmrep_listener *l, const char *name,
		const struct pmrep_target_cfg *cfg, struct pmrep_target **target_ptr)
{
	if (l == NULL || cfg == NULL) {
		PMREP_LOG_ERR("invalid argument: listener or cfg is NULL");
		return PMREP_E_INVAL;
	}
	int ret = repl_selector_check(name, "replica name");
	if (ret)
		return ret;
	if (listener_find(l, name) != NULL) {
		PMREP_LOG_ERR("replica name \"%s\" is taken on this listener",
				name);
		return PMREP_E_INVAL;
	}
	if (l->ep_lost) {
		PMREP_LOG_ERR("replica \"%s\": the listener's RDMA device is gone; add it once it listens again",
				name);
		return PMREP_E_STATE;
	}
	struct pmrep_target *t = NULL;
	ret = target_open(cfg, &t);
	if (ret)
		return ret;
	t->listener = l;	/* from here: the peer is borrowed */
	ret = target_attach_peer(t, l->peer);
	if (ret)
		goto err;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = t };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, t->epfd, &ev) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "epoll_ctl");
		goto err;
	}
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->port = l->port;
	t->cfg.timeout_ms = cfg->timeout_ms;
	struct pmrep_target **tail = &l->targets;
	while (*tail != NULL)
		tail = &(*tail)->next;
	*tail = t;
	l->ntargets++;
	listener_relink(l);
	PMREP_LOG(PMREP_LOG_NOTICE, "serving replica \"%s\": %s (%llu data bytes, %s mode) on %s:%u",
			name, t->cfg.path, (unsigned long long)t->hdr.data_size,
			t->staging ? "staging" : "direct", l->cfg->addr,
			(unsigned)l->port);
	if (target_ptr != NULL)
		*target_ptr = t;
	return 0;
err:
	target_free(t);
	return ret;
}

/* off the listener's list and its epoll set (pmrep_target_delete) */
void
listener_detach(struct pmrep_listener *l, struct pmrep_target *t)
{
	for (struct pmrep_target **p = &l->targets; *p != NULL; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			l->ntargets--;
			break;
		}
	}
	t->next = NULL;
	if (t->epfd >= 0)
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, t->epfd, NULL);
	listener_relink(l);
}

void
listener_no_replica_detail(const struct pmrep_listener *l,
		const char *selector, char *buf, size_t len)
{
	size_t off = (size_t)snprintf(buf, len, selector[0] ?
			"this endpoint serves no replica named \"%s\"; it serves" :
			"the initiator named no replica%s; this endpoint serves several:",
			selector);
	for (const struct pmrep_target *t = l ? l->targets : NULL;
			t != NULL && off < len; t = t->next)
		off += (size_t)snprintf(buf + off, len - off, " \"%s\"", t->name);
}

/* a connection request on the endpoint: to the replica its selector
 * names (see the file's comment) */
static void
listener_dispatch(struct pmrep_listener *l, struct pmrep_conn_req *req)
{
	struct pmrep_conn_private_data pd;
	struct repl_pdata hello;
	(void) pmrep_conn_req_get_private_data(req, &pd);
	if (repl_pdata_decode(pd.ptr, pd.len, REPL_PDATA_HELLO, &hello) != 0) {
		l->stats.requests_refused++;
		PMREP_LOG_ERR("connection request refused: no valid pmrep HELLO (protocol version %d) in its private data",
				REPL_PROTO_VERSION);
		(void) pmrep_conn_req_delete(&req);
		return;
	}
	struct pmrep_target *t = hello.selector[0] ?
		listener_find(l, hello.selector) :
		l->ntargets == 1 ? l->targets : NULL;
	if (t != NULL) {
		l->stats.requests_dispatched++;
		target_accept(t, req, &hello, false);
		return;
	}
	/* no such replica: tell a key holder so (at its AUTH, by the
	 * replica whose key its proof verifies with), reject anyone else */
	uint32_t now_w = repl_admit_window(repl_wall_ms());
	for (t = l->targets; t != NULL; t = t->next) {
		unsigned k;
		if (repl_admit_check(t->cfg.keys, t->cfg.nkeys, now_w,
				hello.key_id, hello.nonce, hello.selector,
				hello.proof, &k) == REPL_ADMIT_OK)
			break;
	}
	l->stats.requests_no_replica++;
	if (t != NULL) {
		target_accept(t, req, &hello, true);
		return;
	}
	l->stats.requests_refused++;
	struct repl_src src;
	char a[64];
	repl_src_of(req, &src);
	PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "connection request from %s refused: its selector \"%s\" names no replica here, and no replica's key verifies its admission proof",
			repl_src_str(&src, a, sizeof(a)), hello.selector);
	(void) pmrep_conn_req_reject(&req, false);
}

/* T22: the device went: every replica's sessions and registrations, the
 * endpoint and the peer; listened on again (and every replica registered
 * again) once it is back */
static void
listener_lost(struct pmrep_listener *l)
{
	PMREP_LOG(PMREP_LOG_NOTICE, "endpoint %s:%u lost: its RDMA device was removed; listening again when it is back",
			l->cfg->addr, (unsigned)l->port);
	for (struct pmrep_target *t = l->targets; t != NULL; t = t->next) {
		target_drop_device(t);
		t->ep_lost = true;
		t->peer = NULL;
	}
	(void) pmrep_ep_shutdown(&l->ep);
	(void) pmrep_peer_delete(&l->peer);
	l->ep_lost = true;
	l->relisten_at = repl_now_ms();
}

static void
listener_relisten(struct pmrep_listener *l)
{
	if (repl_now_ms() < l->relisten_at)
		return;
	l->relisten_at = repl_now_ms() + RELISTEN_PERIOD_MS;
	if (l->peer == NULL &&
			repl_peer_open(l->cfg->addr, true, true, &l->peer) != 0)
		return;		/* not back yet */
	char port[8];
	snprintf(port, sizeof(port), "%u", (unsigned)l->port);
	int ret = pmrep_ep_listen(l->peer, l->cfg->addr, port, &l->ep);
	if (ret) {
		PMREP_LOG_INFO("cannot listen again yet: %s", pmrep_err_to_str(ret));
		(void) pmrep_peer_delete(&l->peer);
		return;
	}
	int fd;
	(void) pmrep_ep_get_fd(l->ep, &fd);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	(void) epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
	l->ep_lost = false;
	PMREP_LOG(PMREP_LOG_NOTICE, "listening again on %s:%u: the RDMA device is back",
			l->cfg->addr, (unsigned)l->port);
}

/* a replica not registered since the device came back: again (each on
 * its own: one that fails is tried at the next turn, the others serve) */
static void
listener_reregister(struct pmrep_listener *l)
{
	for (struct pmrep_target *t = l->targets; t != NULL; t = t->next) {
		if (!t->ep_lost)
			continue;
		t->peer = l->peer;
		int ret = target_register_data(t);
		if (ret) {
			PMREP_LOG_INFO("replica \"%s\": cannot register it again yet: %s",
					t->name, pmrep_err_to_str(ret));
			continue;
		}
		t->ep_lost = false;
	}
}

int
pmrep_listener_process(struct pmrep_listener *l, int timeout_ms)
{
	if (l == NULL) {
		PMREP_LOG_ERR("invalid argument: listener is NULL");
		return PMREP_E_INVAL;
	}
	int ret = repl_timeout_check(timeout_ms, "pmrep_listener_process");
	if (ret)
		return ret;
	if (!l->ep_lost && repl_peer_removed(l->peer))
		listener_lost(l);
	if (l->ep_lost)
		listener_relisten(l);
	if (!l->ep_lost)
		listener_reregister(l);
	int left = timeout_ms;
	if (l->ep_lost && (left < 0 || left > RELISTEN_PERIOD_MS))
		left = RELISTEN_PERIOD_MS;
	for (struct pmrep_target *t = l->targets; t != NULL; t = t->next)
		left = target_wait_limit(t, left);
	struct epoll_event evs[16];
	int n;
	do {
		n = epoll_wait(l->epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])),
				left);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return PMREP_ERR_PROVIDER(errno, "epoll_wait");
	for (int i = 0; i < n; i++) {
		if (evs[i].data.ptr != NULL)
			continue;	/* a replica's: served below */
		/* at most REPL_EP_LOOKS per turn: the replicas' sessions
		 * get theirs under a flood too (see target_handle) */
		for (int k = 0; l->ep != NULL && k < REPL_EP_LOOKS; k++) {
			struct pmrep_conn_req *req = NULL;
			ret = pmrep_ep_next_conn_req(l->ep, l->conn_cfg, &req);
			if (ret == PMREP_E_NO_EVENT)
				break;
			if (ret == PMREP_E_MALFORMED || ret == PMREP_E_TLS) {
				l->stats.requests_refused++;
				continue;
			}
			if (ret == PMREP_E_DEVICE_REMOVED) {
				listener_lost(l);
				break;
			}
			if (ret) {
				PMREP_LOG_ERR("taking a connection request: %s",
						pmrep_err_to_str(ret));
				break;
			}
			listener_dispatch(l, req);
		}
	}
	/* every replica: its messages and its deadlines, each on its own */
	for (struct pmrep_target *t = l->targets; t != NULL; t = t->next)
		target_serve(t);
	return n == 0 ? PMREP_E_TIMEOUT : 0;
}

int
pmrep_listener_get_fd(const struct pmrep_listener *l, int *fd)
{
	if (l == NULL || fd == NULL) {
		PMREP_LOG_ERR("invalid argument: listener or fd is NULL");
		return PMREP_E_INVAL;
	}
	*fd = l->epfd;
	return 0;
}

int
pmrep_listener_get_port(const struct pmrep_listener *l, uint16_t *port)
{
	if (l == NULL || port == NULL) {
		PMREP_LOG_ERR("invalid argument: listener or port is NULL");
		return PMREP_E_INVAL;
	}
	*port = l->port;
	return 0;
}

int
pmrep_listener_get_stats(const struct pmrep_listener *l,
		struct pmrep_listener_stats *stats)
{
	if (l == NULL || stats == NULL) {
		PMREP_LOG_ERR("invalid argument: listener or stats is NULL");
		return PMREP_E_INVAL;
	}
	*stats = l->stats;
	stats->replicas = l->ntargets;
	return 0;
}

int
pmrep_listener_find_target(const struct pmrep_listener *l, const char *name,
		struct pmrep_target **target_ptr)
{
	if (l == NULL || name == NULL || target_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: listener, name or target_ptr is NULL");
		return PMREP_E_INVAL;
	}
	*target_ptr = listener_find(l, name);
	return *target_ptr ? 0 : PMREP_E_NO_EVENT;
}

int
pmrep_listener_next_target(const struct pmrep_listener *l,
		const struct pmrep_target *prev, struct pmrep_target **next_ptr)
{
	if (l == NULL || next_ptr == NULL ||
			(prev != NULL && prev->listener != l)) {
		PMREP_LOG_ERR("invalid argument: listener or next_ptr is NULL, or prev is not the listener's");
		return PMREP_E_INVAL;
	}
	*next_ptr = prev ? prev->next : l->targets;
	return *next_ptr ? 0 : PMREP_E_NO_EVENT;
}

int
pmrep_target_get_name(const struct pmrep_target *target, const char **name)
{
	if (target == NULL || name == NULL) {
		PMREP_LOG_ERR("invalid argument: target or name is NULL");
		return PMREP_E_INVAL;
	}
	*name = target->name;
	return 0;
}
