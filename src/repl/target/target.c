/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target.c -- the replica target: one replica file / device DAX opened
 * through the pmem layer, its data area registered for remote writes (or a
 * staging buffer when registration is refused), an endpoint, and the
 * sessions of initiators: handshake (challenge-response with the
 * pre-shared key, header checks), the two-phase attach (ACCEPT writes
 * nothing; the claim is written on COMMIT, after every other session was
 * closed), then GPSPM persist requests and the closing mark; or a
 * read-only QUERY. Session states: FREE -> WAIT_AUTH -> (AUTH, intent
 * ATTACH) ATTACHING -> (COMMIT, claim durable) ACTIVE -> (CLOSE, header
 * marked consistent) CLOSING; (intent QUERY) QUERY; refusals and failed
 * persists go through CLOSING to FREE
 * (docs/PROTOCOL.md "State machines"). Every persist goes through
 * pmrep_pmem_persist; one that fails poisons the target: from then on
 * every COMMIT, PERSIST and CLOSE is answered INTERNAL. So does a failed
 * persist of a direct-mode flush, which the transport does through the
 * mapping (target_poisoned asks the pmem layer). A QUERY session writes
 * nothing and closes no other session.
 * Single-threaded: everything happens in pmrep_target_process, driven by
 * one epoll fd. A target holds an exclusive flock on its replica for its
 * life: one target per replica.
 * A target is either its own endpoint (pmrep_target_new) or one replica
 * of a listener (target_listener.c: pmrep_listener_add_target), which
 * owns the peer and the endpoint, hands it the connection requests its
 * selector names (target_accept) and lets it serve its sessions
 * (target_serve) in pmrep_listener_process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "target_int.h"

/* ----------------------------------------------------------- sessions */

static void
epoll_add(struct pmrep_target *t, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };
	/* a provider may hand out one fd for both CQ and events: EEXIST */
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno != EEXIST)
		PMREP_LOG_ERR("epoll_ctl ADD fd %d: %s", fd, strerror(errno));
}

/* end the session's access to the replica: its window (if any) is
 * invalidated; from here on nothing of the data area is reachable through
 * the session, though its conn may still carry a last reply */
void
target_session_revoke(struct pmrep_target *t, struct session *s)
{
	if (s->mw == NULL)
		return;
	int ret = pmrep_mw_invalidate(&s->mw);
	if (ret)
		PMREP_LOG_ERR("session %d: invalidating its memory window: %s",
				(int)(s - t->s), pmrep_err_to_str(ret));
}

static void
session_close(struct pmrep_target *t, struct session *s, const char *why)
{
	if (s->state == S_FREE)
		return;
	/* the line (and the event) about this session, whichever the
	 * thread's context is */
	char ctx[PMREP_LOG_CTX_MAX];
	snprintf(ctx, sizeof(ctx), "%s", pmrep_log_ctx_get());
	target_info_log_ctx(s);
	PMREP_LOG_INFO("closed: %s (slot %d)", why, (int)(s - t->s));
	target_info_closed(t, s, why);
	pmrep_log_ctx_set(ctx);
	/* first: nothing of the replica is reachable through it any more */
	target_session_revoke(t, s);
	if (s->conn) {
		int cq_fd, ev_fd;
		if (repl_chan_fds(&s->ch, &cq_fd, &ev_fd) == 0) {
			epoll_ctl(t->epfd, EPOLL_CTL_DEL, cq_fd, NULL);
			epoll_ctl(t->epfd, EPOLL_CTL_DEL, ev_fd, NULL);
		}
		(void) pmrep_conn_disconnect(s->conn);
		(void) pmrep_conn_delete(&s->conn);
	}
	repl_chan_fini(&s->ch);
	memset(s, 0, sizeof(*s));
}

void
target_count_refusal(struct pmrep_target *t, enum metrics_refusal why, int err)
{
	t->stats.sessions_refused++;
	t->stats.last_refusal = err;
	if ((unsigned)why < MR_N_)
		t->mx.refusals[why]++;
}

/* the metrics' reason of a REFUSE status */
static enum metrics_refusal
refusal_of_status(enum repl_status st)
{
	switch (st) {
	case REPL_ST_AUTH: return MR_AUTH;
	case REPL_ST_MALFORMED: return MR_MALFORMED;
	case REPL_ST_SIZE: return MR_SIZE;
	case REPL_ST_UUID: return MR_UUID;
	case REPL_ST_GENERATION: return MR_STALE_GENERATION;
	case REPL_ST_RANGE: return MR_RANGE;
	case REPL_ST_STATE: return MR_STATE;
	case REPL_ST_NO_REPLICA: return MR_NO_REPLICA;
	case REPL_ST_SPLIT_BRAIN: return MR_SPLIT_BRAIN;
	case REPL_ST_INTERNAL:
	case REPL_ST_OK:
	default: return MR_INTERNAL;
	}
}

void
target_refuse(struct pmrep_target *t, struct session *s, enum repl_status st,
		const char *detail)
{
	target_count_refusal(t, refusal_of_status(st), repl_status_to_err(st));
	PMREP_LOG_ERR("initiator refused: %s%s%s", repl_status_str(st),
			detail ? ": " : "", detail ? detail : "");
	struct repl_msg m = { .type = REPL_MSG_REFUSE, .status = st };
	target_session_revoke(t, s);	/* a refused session reaches nothing */
	if (repl_chan_send(&s->ch, &m) != 0) {
		session_close(t, s, "refused");
		return;
	}
	s->state = S_CLOSING;
	s->deadline = repl_deadline(t->cfg.timeout_ms);
}

/* send the last reply `r` of a session, then close it (when sent or at
 * the deadline) */
void
target_reply_and_close(struct pmrep_target *t, struct session *s,
		const struct repl_msg *r)
{
	target_session_revoke(t, s);	/* CLOSING: nothing lands any more */
	if (repl_chan_send(&s->ch, r) != 0) {
		session_close(t, s, "cannot send the last reply");
		return;
	}
	s->state = S_CLOSING;
	s->deadline = repl_deadline(t->cfg.timeout_ms);
}

void
target_session_close(struct pmrep_target *t, struct session *s,
		const char *why)
{
	session_close(t, s, why);
}

/* a connection request whose HELLO decoded, on the target's endpoint or
 * dispatched to this replica by its listener (no_replica: its selector
 * names none of the listener's; its AUTH is refused NO_REPLICA) */
void
target_accept(struct pmrep_target *t, struct pmrep_conn_req *req,
		const struct repl_pdata *hello_in, bool no_replica)
{
	const struct repl_pdata hello = *hello_in;
	/* admission (admission.c): the proof, the replay cache, a slot that
	 * displaces no handshake, the per-source bound -- before anything
	 * of a session exists */
	struct session *s = target_admit(t, &req, &hello);
	if (s == NULL)
		return;
	target_info_begin(t, s, req);	/* its id and peer; the log context */
	memcpy(s->nonce_i, hello.nonce, REPL_NONCE_SIZE);
	memcpy(s->selector, hello.selector, sizeof(s->selector));
	s->no_replica = no_replica;
	struct repl_pdata chal = { .type = REPL_PDATA_CHALLENGE };
	uint8_t enc[REPL_PDATA_SIZE];
	int ret = repl_random(s->nonce_t, REPL_NONCE_SIZE);
	if (ret)
		goto reject;
	memcpy(chal.nonce, s->nonce_t, REPL_NONCE_SIZE);
	size_t enc_len = repl_pdata_encode(&chal, enc);
	ret = repl_chan_init(&s->ch, t->peer);
	if (ret)
		goto reject;
	ret = repl_chan_post_recvs(&s->ch, req);
	if (ret)
		goto fini;
	struct pmrep_conn_private_data out = { enc, (uint8_t)enc_len };
	ret = pmrep_conn_req_connect(&req, &out, &s->conn);
	if (ret)
		goto fini;
	(void) repl_chan_attach(&s->ch, s->conn);
	int cq_fd, ev_fd;
	if (repl_chan_fds(&s->ch, &cq_fd, &ev_fd) == 0) {
		epoll_add(t, cq_fd, (uint64_t)(s - t->s));
		epoll_add(t, ev_fd, (uint64_t)(s - t->s));
	}
	s->state = S_WAIT_AUTH;
	s->deadline = repl_deadline(t->cfg.timeout_ms);
	t->stats.sessions_started++;
	PMREP_LOG_INFO("session %d: accepted a connection (admission proof of key id %u), waiting for AUTH",
			(int)(s - t->s), s->key_id);
	target_info_note(t, s);
	target_info_log_ctx(NULL);
	return;
fini:
	repl_chan_fini(&s->ch);
reject:
	PMREP_LOG_ERR("cannot accept a connection: %s", pmrep_err_to_str(ret));
	if (req)	/* our failure, not the initiator's: it may retry */
		(void) pmrep_conn_req_reject(&req, true);
	memset(s, 0, sizeof(*s));
	target_info_log_ctx(NULL);
}

/* a connection request on a target's own endpoint */
static void
accept_one(struct pmrep_target *t, struct pmrep_conn_req *req)
{
	struct pmrep_conn_private_data pd;
	struct repl_pdata hello;
	(void) pmrep_conn_req_get_private_data(req, &pd);
	if (repl_pdata_decode(pd.ptr, pd.len, REPL_PDATA_HELLO, &hello) != 0) {
		target_count_refusal(t, MR_MALFORMED, PMREP_E_MALFORMED);
		PMREP_LOG_ERR("connection request refused: no valid pmrep HELLO (protocol version %d) in its private data",
				REPL_PROTO_VERSION);
		(void) pmrep_conn_req_delete(&req);
		return;
	}
	target_accept(t, req, &hello, false);
}

/* the name a HELLO's selector must give: the replica path's basename */
const char *
target_replica_name(const struct pmrep_target *t)
{
	const char *slash = strrchr(t->cfg.path, '/');
	return slash ? slash + 1 : t->cfg.path;
}

/* the claim of session `s` at `generation`: set UUID, generation, owner,
 * CONSISTENT cleared (the data may change from now on) */

/* ------------------------------------------------------------- target */

/* a target with its replica open (and locked), no network part yet */
int
target_open(const struct pmrep_target_cfg *cfg, struct pmrep_target **target_ptr)
{
	if (cfg->path == NULL || cfg->nkeys == 0) {
		PMREP_LOG_ERR("a target needs a path and a key");
		return PMREP_E_INVAL;
	}
	struct pmrep_target *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		PMREP_LOG_ERR("out of memory for a target");
		return PMREP_E_NOMEM;
	}
	t->epfd = -1;
	t->lock_fd = -1;
	t->cfg = *cfg;
	t->cfg.path = strdup(cfg->path);
	t->cfg.addr = strdup(cfg->addr);
	t->cfg.port = strdup(cfg->port);
	if (!t->cfg.path || !t->cfg.addr || !t->cfg.port) {
		PMREP_LOG_ERR("out of memory for a target");
		target_free(t);
		return PMREP_E_NOMEM;
	}
	snprintf(t->name, sizeof(t->name), "%s", target_replica_name(t));
	int ret = target_open_replica(t);
	if (ret) {
		target_free(t);
		return ret;
	}
	*target_ptr = t;
	return 0;
}

/* the target's network part on `peer` (its own, or a listener's): the
 * descriptor of its peer cfg, the data area's registration, its epfd */
int
target_attach_peer(struct pmrep_target *t, struct pmrep_peer *peer)
{
	t->peer = peer;
	int ret = pmrep_peer_cfg_new(&t->peer_cfg);
	if (ret)
		return ret;
	(void) pmrep_peer_cfg_set_direct_write_to_pmem(t->peer_cfg,
			t->cfg.direct_write_to_pmem);
	ret = target_register_data(t);
	if (ret)
		return ret;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0)
		return PMREP_ERR_PROVIDER(errno, "epoll_create1");
	return 0;
}

/* free what target_open and target_attach_peer made (sessions closed,
 * not on a listener's list any more); a failed start removes the file it
 * created (target_close_pmem_keep_error) */
void
target_free(struct pmrep_target *t)
{
	if (t->epfd >= 0)
		close(t->epfd);
	(void) pmrep_mr_dereg(&t->data_mr);
	if (t->staging)
		munmap(t->staging, (size_t)t->hdr.data_size);
	(void) pmrep_conn_cfg_delete(&t->conn_cfg);
	(void) pmrep_peer_cfg_delete(&t->peer_cfg);
	if (t->listener == NULL && t->peer != NULL) {
		int ret = pmrep_peer_delete(&t->peer);
		if (ret)
			PMREP_LOG_ERR("deleting the target's peer: %s",
					pmrep_err_to_str(ret));
	}
	if (t->pmem != NULL)
		target_close_pmem_keep_error(t);
	target_unlock_replica(t);
	free(t->cfg.path);
	free(t->cfg.addr);
	free(t->cfg.port);
	repl_wipe(t->cfg.keys, sizeof(t->cfg.keys));
	free(t);
}

int
pmrep_target_new(const struct pmrep_target_cfg *cfg,
		struct pmrep_target **target_ptr)
{
	if (cfg == NULL || target_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: cfg or target_ptr is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_target *t = NULL;
	int ret = target_open(cfg, &t);
	if (ret)
		return ret;
	struct pmrep_peer *peer = NULL;
	ret = pmrep_peer_open(t->cfg.addr, true, &peer);
	if (ret)
		goto err;
	ret = target_attach_peer(t, peer);
	if (ret)
		goto err;
	ret = pmrep_conn_cfg_new(&t->conn_cfg);
	if (ret)
		goto err;
	(void) pmrep_conn_cfg_set_timeout(t->conn_cfg, t->cfg.timeout_ms);
	/* every reply in flight, and the receives kept posted */
	(void) pmrep_conn_cfg_set_sq_size(t->conn_cfg, CHAN_NSEND + 4);
	(void) pmrep_conn_cfg_set_rq_size(t->conn_cfg, CHAN_NRECV);
	(void) pmrep_conn_cfg_set_cq_size(t->conn_cfg, CHAN_NSEND + CHAN_NRECV + 8);
	/* tcp: TLS 1.3 with a PSK derived from the key (tls_psk.c) */
	enum pmrep_provider prov;
	if (!t->cfg.no_tls && t->cfg.nkeys > 0 &&
			pmrep_peer_get_provider(t->peer, &prov) == 0 &&
			prov == PMREP_PROVIDER_TCP) {
		t->tls = (struct repl_tls_target){ t->cfg.keys, &t->cfg.nkeys,
			(const char (*)[REPL_TLS_NAME_MAX])t->cfg.tls_names,
			t->cfg.ntls_names, NULL };
		(void) pmrep_conn_cfg_set_tls_psk_find(t->conn_cfg,
				repl_tls_target_find, &t->tls);
	}
	ret = pmrep_ep_listen(t->peer, t->cfg.addr, t->cfg.port, &t->ep);
	if (ret)
		goto err;
	int fd;
	(void) pmrep_ep_get_fd(t->ep, &fd);
	epoll_add(t, fd, TAG_EP);
	uint16_t port = 0;
	(void) pmrep_ep_get_port(t->ep, &port);
	t->port = port;
	PMREP_LOG(PMREP_LOG_NOTICE, "serving %s (%llu data bytes, %s mode) on %s:%u",
			t->cfg.path, (unsigned long long)t->hdr.data_size,
			t->staging ? "staging" : "direct", t->cfg.addr, port);
	*target_ptr = t;
	return 0;
err:
	if (t->peer == NULL)
		t->peer = peer;
	target_free(t);
	return ret;
}

int
pmrep_target_delete(struct pmrep_target **target_ptr)
{
	if (target_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: target_ptr is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_target *t = *target_ptr;
	if (t == NULL)
		return 0;
	if (t->listener != NULL)
		listener_detach(t->listener, t);	/* t->listener stays */
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++)
		session_close(t, &t->s[i], t->listener ?
				"the replica is removed from its listener" :
				"the target is shutting down");
	(void) pmrep_ep_shutdown(&t->ep);
	if (t->listener)
		PMREP_LOG(PMREP_LOG_NOTICE, "replica \"%s\" (%s) no longer served",
				t->name, t->cfg.path);
	/* the file existed by now: target_free removes nothing */
	t->created = false;
	target_free(t);
	*target_ptr = NULL;
	return 0;
}

int
pmrep_target_get_fd(const struct pmrep_target *target, int *fd)
{
	if (target == NULL || fd == NULL) {
		PMREP_LOG_ERR("invalid argument: target or fd is NULL");
		return PMREP_E_INVAL;
	}
	*fd = target->epfd;
	return 0;
}

int
pmrep_target_get_port(const struct pmrep_target *target, uint16_t *port)
{
	if (target == NULL || port == NULL) {
		PMREP_LOG_ERR("invalid argument: target or port is NULL");
		return PMREP_E_INVAL;
	}
	if (target->ep == NULL) {
		/* lost with its RDMA device: listened on again when back */
		*port = target->port;
		return 0;
	}
	return pmrep_ep_get_port(target->ep, port);
}

int
pmrep_target_get_mode(const struct pmrep_target *target,
		enum pmrep_target_mode *mode)
{
	if (target == NULL || mode == NULL) {
		PMREP_LOG_ERR("invalid argument: target or mode is NULL");
		return PMREP_E_INVAL;
	}
	*mode = target->mode;
	return 0;
}

int
pmrep_target_get_stats(const struct pmrep_target *target,
		struct pmrep_target_stats *stats)
{
	if (target == NULL || stats == NULL) {
		PMREP_LOG_ERR("invalid argument: target or stats is NULL");
		return PMREP_E_INVAL;
	}
	*stats = target->stats;
	stats->sessions_in_use = 0;
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++)
		if (target->s[i].state != S_FREE)
			stats->sessions_in_use++;
	return 0;
}

int
pmrep_target_add_key(struct pmrep_target *target, uint32_t key_id,
		const uint8_t *key, size_t len)
{
	if (target == NULL) {
		PMREP_LOG_ERR("invalid argument: target is NULL");
		return PMREP_E_INVAL;
	}
	int ret = repl_keys_add(target->cfg.keys, &target->cfg.nkeys, key_id,
			key, len);
	if (ret == 0)
		PMREP_LOG(PMREP_LOG_NOTICE, "key id %u added (%u keys held)",
				key_id, target->cfg.nkeys);
	return ret;
}

int
pmrep_target_remove_key(struct pmrep_target *target, uint32_t key_id)
{
	if (target == NULL) {
		PMREP_LOG_ERR("invalid argument: target is NULL");
		return PMREP_E_INVAL;
	}
	if (target->cfg.nkeys == 1 &&
			repl_keys_find(target->cfg.keys, 1, key_id) == 0) {
		PMREP_LOG_ERR("key id %u is the target's last key: add another first",
				key_id);
		return PMREP_E_STATE;
	}
	int ret = repl_keys_remove(target->cfg.keys, &target->cfg.nkeys, key_id);
	if (ret == 0)
		PMREP_LOG(PMREP_LOG_NOTICE, "key id %u removed (%u keys held)",
				key_id, target->cfg.nkeys);
	return ret;
}

/* ------------------------------------------- device removal (T22) */

#define RELISTEN_PERIOD_MS 100

/* the device went: every session, the endpoint (its own), the MRs */
void
target_drop_device(struct pmrep_target *t)
{
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++)
		session_close(t, &t->s[i], "the RDMA device was removed");
	(void) pmrep_ep_shutdown(&t->ep);
	(void) pmrep_mr_dereg(&t->data_mr);
	if (t->staging)
		munmap(t->staging, (size_t)t->hdr.data_size);
	t->staging = NULL;
}

/*
 * The endpoint's RDMA device was removed: the transport released every
 * verbs object already; free the dead pmrep objects (sessions, endpoint,
 * MRs, peer) and try to listen again every RELISTEN_PERIOD_MS.
 */
static void
target_endpoint_lost(struct pmrep_target *t)
{
	PMREP_LOG(PMREP_LOG_NOTICE, "endpoint %s:%u lost: its RDMA device was removed; listening again when it is back",
			t->cfg.addr, (unsigned)t->port);
	target_drop_device(t);
	int ret = pmrep_peer_delete(&t->peer);
	if (ret)
		PMREP_LOG_ERR("deleting the target's peer: %s", pmrep_err_to_str(ret));
	t->ep_lost = true;
	t->relisten_at = repl_now_ms();
}

/* a new peer, registrations and endpoint on the device, once it is back */
static void
target_relisten(struct pmrep_target *t)
{
	if (repl_now_ms() < t->relisten_at)
		return;
	t->relisten_at = repl_now_ms() + RELISTEN_PERIOD_MS;
	int ret = repl_peer_open(t->cfg.addr, true, true, &t->peer);
	if (ret)
		return;		/* not back yet */
	ret = target_register_data(t);
	if (ret)
		goto err_peer;
	char port[8];
	snprintf(port, sizeof(port), "%u", (unsigned)t->port);
	ret = pmrep_ep_listen(t->peer, t->cfg.addr, port, &t->ep);
	if (ret)
		goto err_mr;
	int fd;
	(void) pmrep_ep_get_fd(t->ep, &fd);
	epoll_add(t, fd, TAG_EP);
	t->ep_lost = false;
	PMREP_LOG(PMREP_LOG_NOTICE, "listening again on %s:%u (%s mode): the RDMA device is back",
			t->cfg.addr, (unsigned)t->port,
			t->staging ? "staging" : "direct");
	return;
err_mr:
	(void) pmrep_mr_dereg(&t->data_mr);
	if (t->staging)
		munmap(t->staging, (size_t)t->hdr.data_size);
	t->staging = NULL;
err_peer:
	PMREP_LOG_INFO("cannot listen again yet: %s", pmrep_err_to_str(ret));
	(void) pmrep_peer_delete(&t->peer);
}

/* the earliest session deadline, or `limit` */
int
target_wait_limit(const struct pmrep_target *t, int timeout_ms)
{
	int left = timeout_ms;
	if (t->ep_lost && (left < 0 || left > RELISTEN_PERIOD_MS))
		left = RELISTEN_PERIOD_MS;
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++) {
		const struct session *s = &t->s[i];
		if (s->state != S_WAIT_AUTH && s->state != S_ATTACHING &&
				s->state != S_CLOSING)
			continue;
		int l = repl_left_ms(s->deadline);
		if (left < 0 || l < left)
			left = l;
	}
	return left;
}

/* the events `evs[0..n)` of the target's epfd: connection requests on
 * its own endpoint, its sessions' messages; then every session's deadline.
 * Never waits: a session whose initiator stalls holds its slot until its
 * deadline, nothing else */
static void
target_handle(struct pmrep_target *t, const struct epoll_event *evs, int n)
{
	bool busy[TARGET_MAX_SESSIONS] = { false };
	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 == TAG_EP) {
			/* at most REPL_EP_LOOKS per turn: under a flood the
			 * endpoint never runs dry, and the sessions below (a
			 * key holder's AUTH) must get their turn too */
			for (int k = 0; t->ep != NULL && k < REPL_EP_LOOKS; k++) {
				struct pmrep_conn_req *req = NULL;
				int ret = pmrep_ep_next_conn_req(t->ep, t->conn_cfg, &req);
				if (ret == PMREP_E_NO_EVENT)
					break;
				if (ret == PMREP_E_MALFORMED || ret == PMREP_E_TLS) {
					target_count_refusal(t, ret == PMREP_E_TLS ?
							MR_TLS : MR_MALFORMED, ret);
					continue;
				}
				if (ret == PMREP_E_DEVICE_REMOVED) {
					target_endpoint_lost(t);
					break;
				}
				if (ret) {
					PMREP_LOG_ERR("taking a connection request: %s",
							pmrep_err_to_str(ret));
					break;
				}
				accept_one(t, req);
			}
		} else if (evs[i].data.u64 < TARGET_MAX_SESSIONS) {
			busy[evs[i].data.u64] = true;
		}
	}
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++) {
		struct session *s = &t->s[i];
		target_info_log_ctx(s);	/* its lines carry its id and peer */
		if (s->state == S_FREE)
			continue;
		if (busy[i])
			target_session_progress(t, s);
		if (s->state == S_FREE)
			continue;
		if ((s->state == S_WAIT_AUTH || s->state == S_ATTACHING ||
				s->state == S_CLOSING) &&
				repl_left_ms(s->deadline) == 0) {
			if (s->state == S_WAIT_AUTH) {
				target_count_refusal(t, MR_TIMEOUT, PMREP_E_TIMEOUT);
				PMREP_LOG_ERR("initiator refused: no valid AUTH within %d ms",
						t->cfg.timeout_ms);
			} else if (s->state == S_ATTACHING) {
				PMREP_LOG_ERR("session %d: no COMMIT within %d ms of ACCEPT; nothing was written",
						i, t->cfg.timeout_ms);
			}
			session_close(t, s, "handshake timed out");
		}
	}
	target_info_log_ctx(NULL);
}

/* a listener's replica: whatever its sessions have, without waiting */
void
target_serve(struct pmrep_target *t)
{
	struct epoll_event evs[2 * TARGET_MAX_SESSIONS + 1];
	int n;
	do {
		n = epoll_wait(t->epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])), 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		PMREP_LOG_ERR("replica \"%s\": epoll_wait: %s", t->name,
				strerror(errno));
		n = 0;
	}
	target_handle(t, evs, n);
}

int
pmrep_target_process(struct pmrep_target *t, int timeout_ms)
{
	if (t == NULL) {
		PMREP_LOG_ERR("invalid argument: target is NULL");
		return PMREP_E_INVAL;
	}
	if (t->listener != NULL) {
		PMREP_LOG_ERR("replica \"%s\" is served by its listener: call pmrep_listener_process",
				t->name);
		return PMREP_E_STATE;
	}
	int ret = repl_timeout_check(timeout_ms, "pmrep_target_process");
	if (ret)
		return ret;
	/* T22: the device went (whoever noticed) or may be back */
	if (!t->ep_lost && repl_peer_removed(t->peer))
		target_endpoint_lost(t);
	if (t->ep_lost)
		target_relisten(t);
	struct epoll_event evs[2 * TARGET_MAX_SESSIONS + 1];
	int n;
	do {
		n = epoll_wait(t->epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])),
				target_wait_limit(t, timeout_ms));
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return PMREP_ERR_PROVIDER(errno, "epoll_wait");
	target_handle(t, evs, n);
	return n == 0 ? PMREP_E_TIMEOUT : 0;
}
