/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replica.c -- one replica of a mirror, its state machine: connect and
 * handshake, choose the method, resync its out-of-sync regions, fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/testhook.h"
#include "mirror_int.h"

/* -------------------------------------------------- replica connection */

/* add the replica's CQ and event fds to the mirror's epoll fd, or remove
 * them (before the conn that owns them is deleted) */
static void
epoll_update(struct replica *r, int op)
{
	int fds[2];
	if (r->m->epfd < 0 || r->conn == NULL ||
			repl_chan_fds(&r->ch, &fds[0], &fds[1]) != 0)
		return;
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = r };
		if (epoll_ctl(r->m->epfd, op, fds[i], &ev) != 0 &&
				op == EPOLL_CTL_ADD)
			PMREP_LOG_WARN("replica %u: epoll_ctl: %s", r->idx,
					strerror(errno));
	}
}

/*
 * its unconfirmed ring entries: out of sync, and their steps lose this
 * replica (err: why)
 */
static void
ring_abandon(struct replica *r, int err)
{
	while (r->r_n > 0) {
		struct inflight *e = replica_ring_at(r, 0);
		uint64_t seq = e->seq;
		bool is_step = e->is_step;
		repl_bitmap_mark(r->oos, e->off, e->len);
		r->r_head = (r->r_head + 1) % PIPE_RING;
		r->r_n--;
		if (is_step)
			mirror_step_fail(r->m, seq, r->idx, err);
	}
	r->lag_inflight = 0;
}

/* tear the connection down; the bitmap is kept (and holds what was in
 * flight) */
void
replica_disconnect(struct replica *r)
{
	ring_abandon(r, PMREP_E_CONN_LOST);
	if (r->conn) {
		epoll_update(r, EPOLL_CTL_DEL);
		(void) pmrep_conn_disconnect(r->conn);
		(void) pmrep_conn_delete(&r->conn);
	}
	repl_chan_detach(&r->ch);
	(void) pmrep_mr_remote_delete(&r->rmr);
	mirror_lock(r->m);	/* status reads it */
	r->method = PMREP_MIRROR_METHOD_NONE;
	mirror_unlock(r->m);
}

/*
 * Its peer's RDMA device was removed (T22): the peer, the mapping's
 * registration and the channel are dead objects. Free them (nothing is
 * destroyed twice); the next connect makes new ones, on the verbs
 * provider only. The conn is gone already (replica_disconnect).
 */
void
replica_drop_peer(struct replica *r)
{
	PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s): the RDMA device was removed; a new peer is made when it is back",
			r->idx, r->addr, r->port);
	replica_disconnect(r);
	if (r->chan_ready) {
		repl_chan_fini(&r->ch);
		r->chan_ready = false;
	}
	(void) pmrep_mr_dereg(&r->src);
	int ret = pmrep_peer_delete(&r->peer);
	if (ret)
		PMREP_LOG_ERR("replica %u: deleting its peer: %s", r->idx,
				pmrep_err_to_str(ret));
	r->peer = NULL;
	r->verbs_only = true;
}

void
replica_set_state(struct replica *r, enum pmrep_replica_state st)
{
	mirror_lock(r->m);
	enum pmrep_replica_state from = r->state;
	r->state = st;
	if (from != st)
		mirror_event(r->m, r->idx, from, st, r->last_error);
	mirror_unlock(r->m);
}

void
replica_backoff(struct replica *r)
{
	const struct pmrep_mirror_cfg *c = &r->m->cfg;
	int lo = c->backoff_min_ms > 0 ? c->backoff_min_ms : BACKOFF_MIN_MS;
	int hi = c->backoff_max_ms > 0 ? c->backoff_max_ms : BACKOFF_MAX_MS;
	if (hi < lo)
		hi = lo;
	r->backoff_ms = r->backoff_ms == 0 ? lo :
		(r->backoff_ms > hi / 2 ? hi : r->backoff_ms * 2);
	r->next_try = repl_now_ms() + r->backoff_ms;
}

/* the replica is lost: [off, off + len), what its ring held and all it
 * misses from now on are out of sync; its recovery takes it over */
void
replica_fail(struct replica *r, int err, uint64_t off, uint64_t len)
{
	mirror_lock(r->m);
	repl_bitmap_mark(r->oos, off, len);
	bool was = r->state != PMREP_REPLICA_FAILED;
	r->last_error = err;
	replica_set_state(r, PMREP_REPLICA_FAILED);
	ring_abandon(r, err);
	r->chunks = 0;
	r->chunk_lo = r->chunk_hi = 0;
	if (r->redirty_ready)
		repl_bitmap_clear_regions(&r->redirty, 0, r->redirty.nregions);
	if (was && atomic_load(&r->cancel))
		PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s): its recovery ended by the mirror's delete; %llu bytes out of sync",
				r->idx, r->addr, r->port,
				(unsigned long long)repl_bitmap_dirty_bytes(r->oos));
	else if (was)
		PMREP_LOG_ERR("replica %u (%s:%s) failed: %s; %llu bytes out of sync",
				r->idx, r->addr, r->port, pmrep_err_to_str(err),
				(unsigned long long)repl_bitmap_dirty_bytes(r->oos));
	mirror_unlock(r->m);
	replica_disconnect(r);
	mirror_lock(r->m);
	replica_backoff(r);
	mirror_recovery_kick(r);
	mirror_unlock(r->m);
}

/* wait for one message on the replica's channel until `deadline` */
int
replica_wait_msg(struct replica *r, long long deadline, struct repl_msg *msg)
{
	return repl_chan_wait_msg(&r->ch, deadline, msg);
}

static enum pmrep_mirror_method
choose_method(struct replica *r, uint32_t target_flags)
{
	if (r->m->cfg.force_gpspm || r->m->cfg.persist_seq ||
			(target_flags & REPL_TF_STAGING))
		return PMREP_MIRROR_METHOD_GPSPM;
	int ft = 0;
	(void) pmrep_mr_remote_get_flush_type(r->rmr, &ft);
	if (!(ft & PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT))
		return PMREP_MIRROR_METHOD_GPSPM;
	enum pmrep_flush_method fm = PMREP_FLUSH_METHOD_NONE;
	(void) pmrep_conn_get_flush_method(r->conn, &fm);
	if (fm == PMREP_FLUSH_METHOD_NATIVE)
		return PMREP_MIRROR_METHOD_NATIVE;
	if (fm == PMREP_FLUSH_METHOD_APM)
		return PMREP_MIRROR_METHOD_APM;
	return PMREP_MIRROR_METHOD_GPSPM;
}

/* remember why attaching failed: the thread's last error message (this
 * replica's, when its attach began with pmrep_err_clear), else the code */
static void
note_why(struct replica *r, int err)
{
	const char *msg = pmrep_err_msg();
	snprintf(r->why, sizeof(r->why), "%s",
			msg[0] ? msg : pmrep_err_to_str(err));
	r->why_errno = pmrep_err_errno();
}

/*
 * after a verified ACCEPT: decide the resync, make the record cover it
 * (OOS all for a full one, durable; rec_id), then COMMIT and wait for
 * COMMIT_REPLY(OK) by `deadline`. Only then is the replica CONNECTED.
 * On failure the marks made stay (the attach fails).
 */
static int
replica_commit(struct replica *r, const struct repl_accept *acc,
		long long deadline)
{
	struct pmrep_mirror *m = r->m;
	const char *why = "";
	int ret;
	/* the record is shared with the data path and the other replicas'
	 * recovery */
	mirror_lock(m);
	if (mirror_slot_taken(r, acc->replica_id)) {
		mirror_unlock(m);
		return PMREP_E_INVAL;
	}
	ret = mirror_log_attach_check(m, r->idx, r->addr, r->port, acc);
	if (ret) {
		mirror_unlock(m);
		return ret;
	}
	enum repl_resync kind = replica_decide_resync(r, acc, &why);
	/* a replica of our set with a history we do not know (or whose
	 * full resync an earlier mirror of our record began and did not
	 * finish: half of it or more still out of sync): compared by
	 * digests first, only what differs is copied */
	bool ours_set = !(acc->target_flags & REPL_TF_FRESH) &&
		!replica_uuid_is_nil(acc->uuid) &&
		memcmp(acc->uuid, m->cfg.uuid, PMREP_UUID_SIZE) == 0;
	r->digest = ours_set && !m->cfg.no_digests &&
		(kind == REPL_RESYNC_FULL ||
		 repl_bitmap_dirty_bytes(r->oos) >= m->size / 2);
	PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s): resync %s: %s",
			r->idx, r->addr, r->port,
			kind == REPL_RESYNC_FULL ?
				(r->digest ? "full, by digests" : "full") :
				(r->digest ? "incremental, by digests" :
				 "incremental"), why);
	if (kind == REPL_RESYNC_FULL) {
		repl_bitmap_mark_all(r->oos);
		ret = mstate_oos_persist(m->state, r->idx, 0, m->size);
		if (ret) {
			mirror_unlock(m);
			PMREP_LOG_ERR("replica %u: cannot make its out-of-sync record durable: %s",
					r->idx, pmrep_err_to_str(ret));
			return ret;
		}
	}
	/* the replica, and the header sequence its claim will have (the
	 * target writes it into the other slot: sequence + 1) */
	ret = mstate_set_rec(m->state, r->idx, acc->replica_id, acc->hdr_seq + 1);
	mirror_unlock(m);
	if (ret) {
		PMREP_LOG_ERR("replica %u: cannot record its replica id: %s",
				r->idx, pmrep_err_to_str(ret));
		return ret;
	}
	struct repl_msg msg = { .type = REPL_MSG_COMMIT, .seq = mirror_next_seq(m) };
	memcpy(msg.u.commit.replica_id, acc->replica_id, PMREP_UUID_SIZE);
	msg.u.commit.generation = m->cfg.generation;
	msg.u.commit.primary_id = mstate_primary_id(m->state);
	msg.u.commit.resync = kind;
	/* this run's epoch: the copy may hold its steps from here on */
	msg.u.commit.claim_floor = m->psn_base;
	msg.u.commit.flags = m->cfg.persist_seq ? REPL_COMMIT_F_TRACKED : 0;
	/* the membership as it is at this commit (a change made meanwhile
	 * is recorded on the in-sync replicas; this one gets it at its next
	 * attach: PROTOCOL.md "Membership") */
	mirror_lock(m);
	mirror_membership(m, &msg.u.commit.members);
	mirror_unlock(m);
	ret = repl_chan_send(&r->ch, &msg);
	if (ret)
		return ret;
	struct repl_msg reply;
	ret = replica_wait_msg(r, deadline, &reply);
	if (ret) {
		PMREP_LOG_ERR("replica %u (%s:%s): no COMMIT_REPLY: %s",
				r->idx, r->addr, r->port, pmrep_err_to_str(ret));
		return ret;
	}
	if (reply.type == REPL_MSG_REFUSE ||
			(reply.type == REPL_MSG_COMMIT_REPLY &&
			 reply.status != REPL_ST_OK)) {
		PMREP_LOG_ERR("replica %u (%s:%s) refused our COMMIT: %s",
				r->idx, r->addr, r->port,
				repl_status_str(reply.status));
		/* a refusal is never an attach, whatever its status says */
		ret = repl_status_to_err(reply.status);
		return ret ? ret : PMREP_E_MALFORMED;
	}
	if (reply.type != REPL_MSG_COMMIT_REPLY || reply.seq != msg.seq) {
		PMREP_LOG_ERR("replica %u: expected COMMIT_REPLY to %llu, got message type %d (sequence %llu)",
				r->idx, (unsigned long long)msg.seq, (int)reply.type,
				(unsigned long long)reply.seq);
		return PMREP_E_MALFORMED;
	}
	mirror_lock(m);
	r->unknown = false;
	r->backoff_ms = 0;	/* a successful attach resets the back-off */
	/* it holds our generation's claim now; where the count stands for
	 * the old set (a promotion's fencing, a membership that grew across
	 * a restart) only a replica that was of it counts: a fresh one, or
	 * one its primary removed, fences nothing the old set could use */
	bool member = !(acc->target_flags & REPL_TF_FRESH) &&
		!replica_uuid_is_nil(acc->uuid) &&
		memcmp(acc->uuid, m->cfg.uuid, PMREP_UUID_SIZE) == 0 &&
		!(acc->hdr_flags & PMREP_REPLICA_F_REMOVED);
	r->fenced = member || !(m->cfg.fence_only || m->members_grow);
	r->committed = true;
	/* its first recorded position is another writer's: that step's
	 * target writes the header once (replica_io.c ring_pop) */
	r->pos_switch = m->cfg.persist_seq &&
		(reply.u.position.gen != m->cfg.generation ||
		 reply.u.position.owner != mstate_primary_id(m->state));
	replica_set_state(r, PMREP_REPLICA_CONNECTED);
	mirror_unlock(m);
	PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s) attached: method %s, resync %s of %llu bytes",
			r->idx, r->addr, r->port, pmrep_mirror_method_str(r->method),
			kind == REPL_RESYNC_FULL ? "full" : "incremental",
			(unsigned long long)repl_bitmap_dirty_bytes(r->oos));
	return 0;
}

/* connect, authenticate both ways, check the header; on success the
 * replica is CONNECTED and its bitmap holds what must be resynced */
static int
replica_connect(struct replica *r, long long deadline)
{
	struct pmrep_mirror *m = r->m;
	struct pmrep_peer_cfg *pcfg = NULL;
	int ret;

	r->why[0] = '\0';

	/* T22: the peer's RDMA device was removed, and with it the peer's
	 * MRs and channel: start over on a new peer once it is back */
	if (repl_peer_removed(r->peer))
		replica_drop_peer(r);
	if (r->peer == NULL) {
		ret = repl_peer_open(r->addr, false, r->verbs_only, &r->peer);
		if (ret)
			return ret;
	}
	if (r->src == NULL) {
		/* the device only reads it: a read-only registration, which
		 * a page-cache file allows (a writable pin of one is refused
		 * from Linux 6.5 on: T11) */
		ret = pmrep_mr_reg(r->peer, m->base, m->size,
				PMREP_MR_USAGE_WRITE_SRC, &r->src);
		if (ret) {
			PMREP_LOG_ERR("cannot register the local mapping for replica %u: %s",
					r->idx, pmrep_err_to_str(ret));
			return ret;
		}
	}
	if (!r->chan_ready) {
		ret = repl_chan_init(&r->ch, r->peer);
		if (ret)
			return ret;
		r->chan_ready = true;
	}
	r->ch.cancel = &r->cancel;
	char who[32];
	snprintf(who, sizeof(who), "replica %u", r->idx);
	uint8_t nonce_i[REPL_NONCE_SIZE], nonce_t[REPL_NONCE_SIZE];
	struct repl_tls tls = { !r->m->cfg.no_tls, r->m->cfg.key,
		r->m->cfg.key_len, r->m->cfg.key_id,
		r->m->cfg.r[r->idx].selector };
	ret = repl_chan_dial(&r->ch, r->peer, r->addr, r->port, deadline,
			r->m->cfg.timeout_ms, MIRROR_SQ_SIZE,
			MIRROR_CQ_SIZE, who, &tls, &r->conn, nonce_i, nonce_t);
	/* its fds join the mirror's epoll set when it is handed to the
	 * data path (mirror_recovery_handback) */
	if (ret) {
		if (r->conn != NULL)
			goto fail;
		goto out;
	}

	struct repl_msg msg = { .type = REPL_MSG_AUTH, .seq = mirror_next_seq(m) };
	memcpy(msg.u.auth.uuid, m->cfg.uuid, PMREP_UUID_SIZE);
	msg.u.auth.data_size = m->size;
	msg.u.auth.generation = m->cfg.generation;
	msg.u.auth.primary_id = mstate_primary_id(m->state);
	msg.u.auth.intent = REPL_INTENT_ATTACH;
	ret = repl_auth_mac(m->cfg.key, m->cfg.key_len, nonce_i, nonce_t,
			&msg.u.auth, msg.u.auth.mac);
	if (ret)
		goto fail;
	ret = repl_chan_send(&r->ch, &msg);
	if (ret)
		goto fail;
	struct repl_msg reply;
	ret = replica_wait_msg(r, deadline, &reply);
	if (ret)
		goto fail;
	if (reply.type == REPL_MSG_REFUSE) {
		ret = repl_status_to_err(reply.status);
		if (ret == 0)
			ret = PMREP_E_MALFORMED;	/* a refusal is never an attach */
		/* the REFUSE carries no sizes: ours, and where the replica's
		 * is (its target logs both) */
		if (reply.status == REPL_ST_SIZE)
			PMREP_LOG_ERR("replica %u (%s:%s) refused us: %s: this mirror's mapping is %zu bytes (a replica file of %zu), the replica's data size is another (its target's log has it; `pmrep status REPLICA` on its host)",
					r->idx, r->addr, r->port,
					repl_status_str(reply.status), m->size,
					m->size + (size_t)PMREP_REPLICA_DATA_OFFSET);
		else
			PMREP_LOG_ERR("replica %u (%s:%s) refused us: %s", r->idx,
					r->addr, r->port,
					repl_status_str(reply.status));
		goto fail;
	}
	if (reply.type != REPL_MSG_ACCEPT) {
		PMREP_LOG_ERR("replica %u: expected ACCEPT, got message type %d",
				r->idx, (int)reply.type);
		ret = PMREP_E_MALFORMED;
		goto fail;
	}
	const struct repl_accept *acc = &reply.u.accept;
	uint8_t mac[REPL_MAC_SIZE];
	ret = repl_accept_mac(m->cfg.key, m->cfg.key_len, nonce_i, nonce_t,
			acc, mac);
	if (ret)
		goto fail;
	if (!repl_mac_equal(mac, acc->mac)) {
		PMREP_LOG_ERR("replica %u (%s:%s) failed to prove it holds the key",
				r->idx, r->addr, r->port);
		ret = PMREP_E_AUTH;
		goto fail;
	}
	/* an honest target refuses an AUTH below its header's generation
	 * (GENERATION); one that describes a newer header anyway is broken,
	 * and a mirror of an older generation must not overwrite it */
	if (!(acc->target_flags & REPL_TF_FRESH) &&
			!replica_uuid_is_nil(acc->uuid) &&
			memcmp(acc->uuid, m->cfg.uuid, PMREP_UUID_SIZE) == 0 &&
			acc->generation > m->cfg.generation) {
		PMREP_LOG_ERR("replica %u (%s:%s) accepted us but holds generation %llu, newer than ours (%llu): not attached",
				r->idx, r->addr, r->port,
				(unsigned long long)acc->generation,
				(unsigned long long)m->cfg.generation);
		ret = PMREP_E_STATE;
		goto fail;
	}
	/* the target's split-brain rule, checked here too: a target that
	 * lets us in anyway must not be overwritten */
	if (!(acc->target_flags & REPL_TF_FRESH) &&
			!replica_uuid_is_nil(acc->uuid) &&
			memcmp(acc->uuid, m->cfg.uuid, PMREP_UUID_SIZE) == 0 &&
			acc->generation == m->cfg.generation && acc->owner != 0 &&
			acc->owner != mstate_primary_id(m->state) &&
			!(acc->hdr_flags & PMREP_REPLICA_F_CONSISTENT)) {
		PMREP_LOG_ERR("replica %u (%s:%s) is claimed at generation %llu by primary %016llx, which did not close it: split brain, not attached (fence that primary, then use generation %llu)",
				r->idx, r->addr, r->port,
				(unsigned long long)acc->generation,
				(unsigned long long)acc->owner,
				(unsigned long long)m->cfg.generation + 1);
		ret = PMREP_E_SPLIT_BRAIN;
		goto fail;
	}
	ret = pmrep_mr_remote_from_descriptor(acc->mr_desc, PMREP_MR_DESC_SIZE,
			&r->rmr);
	if (ret)
		goto fail;
	size_t rsize = 0;
	(void) pmrep_mr_remote_get_size(r->rmr, &rsize);
	if (rsize != m->size) {
		PMREP_LOG_ERR("replica %u offers %zu bytes, the mapping has %zu",
				r->idx, rsize, m->size);
		ret = PMREP_E_RANGE;
		goto fail;
	}
	ret = pmrep_peer_cfg_from_descriptor(acc->peer_cfg,
			PMREP_PEER_CFG_DESC_SIZE, &pcfg);
	if (ret)
		goto fail;
	(void) pmrep_conn_apply_remote_peer_cfg(r->conn, pcfg);
	enum pmrep_mirror_method method = choose_method(r, acc->target_flags);
	mirror_lock(m);		/* status reads it */
	r->method = method;
	mirror_unlock(m);

	ret = replica_commit(r, acc, deadline);
	if (ret)
		goto fail;
	goto out;
fail:
	note_why(r, ret);	/* before the teardown may log over it */
	replica_disconnect(r);
out:
	if (ret && r->why[0] == '\0')
		note_why(r, ret);
	(void) pmrep_peer_cfg_delete(&pcfg);
	return ret;
}

/* a resync progress line at most every RESYNC_LOG_MS */
#define RESYNC_LOG_MS 5000

static void
resync_log(struct replica *r, bool force)
{
	long long now = repl_now_ms();
	if (!force && now - r->rs_log_ms < RESYNC_LOG_MS)
		return;
	r->rs_log_ms = now;
	uint64_t left = repl_bitmap_dirty_bytes(r->oos);
	long long ms = now - r->rs_start_ms;
	uint64_t rate = ms > 0 ? r->rs_done * 1000 / (uint64_t)ms : 0;
	PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s): resync %llu of %llu MiB, %llu MiB/s, about %llu s left",
			r->idx, r->addr, r->port,
			(unsigned long long)(r->rs_done >> 20),
			(unsigned long long)((r->rs_done + left) >> 20),
			(unsigned long long)(rate >> 20),
			(unsigned long long)(rate ? left / rate : 0));
}

/* a sample of the out-of-sync bytes for the net progress, when the last
 * one is old enough (m->lock held) */
static void
net_take(struct replica *r, long long now)
{
	const long long every = RESYNC_NET_WINDOW_MS / RESYNC_NET_SAMPLES;
	if (r->rs_net_n > 0) {
		unsigned last = (r->rs_net_head + r->rs_net_n - 1) % RESYNC_NET_SAMPLES;
		if (now - r->rs_net[last].t < every)
			return;
	}
	if (r->rs_net_n == RESYNC_NET_SAMPLES) {
		r->rs_net_head = (r->rs_net_head + 1) % RESYNC_NET_SAMPLES;
		r->rs_net_n--;
	}
	unsigned i = (r->rs_net_head + r->rs_net_n) % RESYNC_NET_SAMPLES;
	r->rs_net[i].t = now;
	r->rs_net[i].dirty = repl_bitmap_dirty_bytes(r->oos);
	r->rs_net_n++;
}

/* the samples begin again (m->lock held) */
static void
net_reset(struct replica *r, long long now)
{
	r->rs_net_head = r->rs_net_n = 0;
	net_take(r, now);
}

/*
 * out-of-sync bytes removed per second: from the oldest sample within the
 * last RESYNC_NET_WINDOW_MS to now (when nobody sampled for longer than
 * that -- the resync stalled -- from the newest one, further back); not
 * known before half the window has samples (m->lock held)
 */
bool
replica_net_rate(struct replica *r, long long now, uint64_t *rate)
{
	net_take(r, now);
	if (r->rs_net_n == 0)
		return false;
	unsigned k = 0;
	while (k + 1 < r->rs_net_n &&
			now - r->rs_net[(r->rs_net_head + k) % RESYNC_NET_SAMPLES].t >
			RESYNC_NET_WINDOW_MS)
		k++;
	const struct rs_net_sample *s =
		&r->rs_net[(r->rs_net_head + k) % RESYNC_NET_SAMPLES];
	long long ms = now - s->t;
	if (ms < RESYNC_NET_WINDOW_MS / 2)
		return false;
	uint64_t dirty = repl_bitmap_dirty_bytes(r->oos);
	*rate = s->dirty > dirty ? (s->dirty - dirty) * 1000 / (uint64_t)ms : 0;
	return true;
}

/* the cfg resync rate: wait until the bytes copied so far are due (in
 * slices, taking the confirmations of the persists posted here meanwhile,
 * so that they do not fill its ring, and so that pmrep_mirror_delete is
 * not held up); false: stopping, or the replica failed */
static bool
resync_pace(struct replica *r)
{
	uint64_t rate = r->m->cfg.resync_rate;
	if (rate == 0)
		return !atomic_load(&r->m->stopping);
	long long due = r->rs_start_ms + (long long)(r->rs_done * 1000 / rate);
	while (!atomic_load(&r->m->stopping)) {
		long long left = due - repl_now_ms();
		if (left <= 0)
			return true;
		mirror_lock(r->m);
		int ret = replica_progress(r);
		mirror_unlock(r->m);
		if (ret) {
			replica_fail(r, ret, 0, 0);
			return false;
		}
		/* woken by the next completion: a writer fast enough fills
		 * the ring within milliseconds (then its persists only mark,
		 * and what they mark is copied again) */
		ret = repl_chan_wait_slice(&r->ch, repl_now_ms() +
				(left > 20 ? 20 : left));
		if (ret == PMREP_E_TIMEOUT) {
			repl_chan_conn_due(&r->ch);
		} else if (ret) {
			replica_fail(r, ret, 0, 0);
			return false;
		}
	}
	return false;
}

/* post the chunk of regions [first, first + n) (m->lock held) */
static int
chunk_post(struct replica *r, struct rs_chunk *c, size_t first, size_t n,
		long long deadline)
{
	struct pmrep_mirror *m = r->m;
	c->first = first;
	c->n = n;
	repl_bitmap_range(r->oos, first, n, &c->off, &c->len);
	c->step = repl_deadline(m->cfg.timeout_ms);
	if (deadline >= 0 && deadline < c->step)
		c->step = deadline;
	c->seq = mirror_next_seq(m);
	/* what persists marked here before it is read now: not a change
	 * behind the copy's back */
	repl_bitmap_clear_regions(&r->redirty, first, n);
	if (r->chunks == 0)
		r->chunk_lo = c->off;
	r->chunk_hi = c->off + c->len;
	r->chunks++;
	return replica_post_range(r, c->off, c->len, c->seq, false, c->step);
}

/* chunk `c` is confirmed: clear what no persist marked again meanwhile, and
 * make that durable (m->lock held) */
static void
chunk_done(struct replica *r, const struct rs_chunk *c, const struct rs_chunk *next)
{
	for (size_t i = c->first; i < c->first + c->n;) {
		size_t j = i;
		while (j < c->first + c->n && !repl_bitmap_test(&r->redirty, j))
			j++;
		if (j > i)
			repl_bitmap_clear_regions(r->oos, i, j - i);
		i = j + 1;
	}
	repl_bitmap_clear_regions(&r->redirty, c->first, c->n);
	r->chunks--;
	if (r->chunks == 0)
		r->chunk_lo = r->chunk_hi = 0;
	else
		r->chunk_lo = next->off;
	/* the copy is confirmed: make the clear durable too, or a crash
	 * after a long resync would copy it all again (a failure here costs
	 * only that: the marks stay) */
	if (mstate_oos_persist(r->m->state, r->idx, c->off, c->len) != 0)
		PMREP_LOG_WARN("replica %u: the record of its resync could not be persisted (%s); a restart may copy those regions again",
				r->idx, pmrep_err_msg());
	r->rs_done += c->len;
	net_take(r, repl_now_ms());
	resync_log(r, false);
}

/*
 * copy the replica's out-of-sync regions until none is left and no chunk is
 * in flight, then hand it to the data path IN_SYNC. Up to RESYNC_DEPTH
 * chunks are in flight on the replica's QP, posted in increasing offset
 * order within a pass over the bitmap (a new pass begins once none is in
 * flight), confirmed in that order. The application's persists go on
 * meanwhile and mark what they change in the bitmap: a mark into the span
 * of the chunks in flight keeps its regions out of sync (copied again), so
 * that what a chunk read before the change is never taken for the change.
 * Each chunk is bounded by the cfg timeout; when `deadline` passes (or the
 * mirror is deleted) with regions left, the chunks in flight are waited
 * for and the replica stays connected but DEGRADED (resumed by its
 * recovery).
 */
int
replica_resync(struct replica *r, long long deadline)
{
	struct pmrep_mirror *m = r->m;
	size_t max = (size_t)(RESYNC_CHUNK / r->oos->region_size);
	if (max == 0)
		max = 1;
	if (m->cfg.resync_rate > 0 && m->cfg.resync_rate / 4 < RESYNC_CHUNK) {
		/* smaller chunks at a low rate: about 4 per second */
		size_t k = (size_t)(m->cfg.resync_rate / 4 / r->oos->region_size);
		max = k > 0 ? (k < max ? k : max) : 1;
	}
	mirror_lock(m);
	replica_set_state(r, PMREP_REPLICA_SYNCING);
	r->rs_done = 0;
	r->rs_start_ms = r->rs_log_ms = repl_now_ms();
	r->chunks = 0;
	r->chunk_lo = r->chunk_hi = 0;
	r->fl_head = 0;
	r->rs_holds = 0;
	r->rs_held_ms = 0;
	bool digest = r->digest;
	net_reset(r, r->rs_start_ms);
	mirror_unlock(m);
	if (digest) {
		int ret = replica_digest_pass(r, deadline);
		if (ret)
			return ret;
		/* its net progress is the copy's (what the digests cleared
		 * is not what the minimum rate is about) */
		mirror_lock(m);
		net_reset(r, repl_now_ms());
		mirror_unlock(m);
	}
	size_t from = 0;
	for (;;) {
		size_t first, n;
		bool found = false;
		mirror_lock(m);
		bool stop = repl_left_ms(deadline) == 0 || atomic_load(&m->stopping);
		if (r->chunks == 0) {
			found = repl_bitmap_next_run(r->oos, from, max, &first, &n);
			if (!found && from > 0) {
				from = 0;	/* marks made behind the cursor */
				found = repl_bitmap_next_run(r->oos, from, max,
						&first, &n);
			}
			if (!found) {
				/* nothing left, no chunk in flight: identical */
				bool done = mirror_recovery_handback(r);
				mirror_unlock(m);
				return done ? 0 : PMREP_E_CONN_LOST;
			}
			if (stop) {
				r->last_error = PMREP_E_TIMEOUT;
				replica_set_state(r, PMREP_REPLICA_DEGRADED);
				PMREP_LOG_WARN("replica %u: resync paused, %llu bytes still out of sync",
						r->idx, (unsigned long long)repl_bitmap_dirty_bytes(r->oos));
				mirror_unlock(m);
				return PMREP_E_TIMEOUT;
			}
		} else if (!stop && r->chunks < RESYNC_DEPTH) {
			/* no wrap while chunks are in flight: a chunk never
			 * holds regions of another */
			found = repl_bitmap_next_run(r->oos, from, max, &first, &n);
		}
		if (found) {
			struct rs_chunk *c = &r->fl[(r->fl_head + r->chunks) % RESYNC_DEPTH];
			int ret = chunk_post(r, c, first, n, deadline);
			mirror_unlock(m);
			if (ret) {
				replica_fail(r, ret, c->off, c->len);
				return ret;
			}
			from = first + n;
			continue;
		}
		mirror_unlock(m);
		/* the oldest chunk's confirmation (confirmed in order) */
		struct rs_chunk *c = &r->fl[r->fl_head];
		int ret = replica_wait_seq(r, c->seq, c->step);	/* fails it on error */
		if (ret)
			return ret;
		mirror_lock(m);
		r->fl_head = (r->fl_head + 1) % RESYNC_DEPTH;
		chunk_done(r, c, &r->fl[r->fl_head]);
		mirror_unlock(m);
		if (!resync_pace(r)) {
			if (r->state == PMREP_REPLICA_FAILED)
				return r->last_error;
			/* stopping: the next turns wait for the chunks in
			 * flight, then pause */
		}
	}
}

/* connect (bounded by `connect_deadline`), then resync (by `deadline`) */
int
replica_attach(struct replica *r, long long connect_deadline, long long deadline)
{
	int ret = replica_connect(r, connect_deadline);
	if (ret) {
		mirror_lock(r->m);
		r->last_error = ret;
		replica_set_state(r, PMREP_REPLICA_FAILED);
		replica_backoff(r);
		mirror_unlock(r->m);
		return ret;
	}
	ret = replica_resync(r, deadline);
	if (ret)
		note_why(r, ret);
	return ret;
}
