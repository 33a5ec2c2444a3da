/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_session.c -- one session's replication protocol on the target
 * (docs/PROTOCOL.md "Persistent writes, in order", "State machines"): AUTH
 * (the header checks, split brain, the intent), COMMIT (fencing the other
 * sessions, the claim), then PERSIST (GPSPM, the persist sequence), DIGEST
 * (a resync by digests) and CLOSE (the consistent mark) of an ACTIVE
 * session, and the session's progress turn. The target's lifecycle, its
 * endpoint and its event loop are target.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target_int.h"

/*
 * the claim: the set, the generation (the fence), the owner, the writer's
 * run (its claim floor; a fence has none) and membership -- never the
 * position (PROTOCOL.md "Position": a COMMIT does not move a copy; its
 * position moves only with the steps it holds, replica_pos_record)
 */
static int
write_claim(struct pmrep_target *t, const struct session *s,
		const struct repl_commit *c)
{
	struct replica_hdr next = t->hdr;
	memcpy(next.uuid, s->uuid, PMREP_UUID_SIZE);
	next.generation = c->generation;
	next.owner = s->primary_id;
	next.set_size = c->members.set_size;
	next.set_quorum = c->members.set_quorum;
	/* a fence keeps what the last run left: a clean close's mark as
	 * RUN_CLOSED (complete as of the position), a writer's log as one */
	if (c->resync == REPL_RESYNC_FENCE &&
			(next.flags & PMREP_REPLICA_F_CONSISTENT))
		next.flags |= REPLICA_F_RUN_CLOSED;
	next.flags &= ~(PMREP_REPLICA_F_CONSISTENT | PMREP_REPLICA_F_REMOVED |
			PMREP_REPLICA_F_PROMOTED);
	if (c->resync != REPL_RESYNC_FENCE) {
		next.flags &= ~REPLICA_F_PRIMARY;
		/* a writer's run begins here; a fence keeps the last run's
		 * identity (what the copy may hold is a fact of that run) */
		next.run_gen = c->generation;
		next.run_owner = s->primary_id;
		next.claim_floor = c->claim_floor;
		next.flags &= ~(REPLICA_F_TRACKED | REPLICA_F_RUN_CLOSED |
				REPLICA_F_INCOMPLETE);
		if (c->flags & REPL_COMMIT_F_TRACKED)
			next.flags |= REPLICA_F_TRACKED;
	}
	return target_hdr_update(t, &next);
}

/* the copy's position now (COMMIT_REPLY) */
static void
position_of(const struct pmrep_target *t, struct repl_position *p)
{
	p->gen = t->hdr.pos_gen;
	p->owner = t->hdr.pos_owner;
	p->psn = replica_pos_psn(t->base, &t->hdr);
}

/* fencing: end every session but `keep` (their connections end before the
 * caller writes the claim) */
static void
close_others(struct pmrep_target *t, struct session *keep, const char *why)
{
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++) {
		struct session *o = &t->s[i];
		if (o == keep || o->state == S_FREE)
			continue;
		/* a writer's session: say who supersedes it */
		if (o->state == S_ATTACHING || o->state == S_ACTIVE) {
			if (o->primary_id == keep->primary_id &&
					o->generation == keep->generation)
				PMREP_LOG(PMREP_LOG_NOTICE, "session %d takes over session %d of the same primary %016llx (generation %llu): its reconnect",
						(int)(keep - t->s), i,
						(unsigned long long)o->primary_id,
						(unsigned long long)o->generation);
			else
				PMREP_LOG(PMREP_LOG_NOTICE, "session %d (primary %016llx, generation %llu) fences session %d (primary %016llx, generation %llu)",
						(int)(keep - t->s),
						(unsigned long long)keep->primary_id,
						(unsigned long long)keep->generation, i,
						(unsigned long long)o->primary_id,
						(unsigned long long)o->generation);
		}
		target_session_close(t, o, why);
	}
}

/*
 * split brain: the header is claimed at `generation` by another primary
 * whose last session did not close it cleanly (not CONSISTENT): that
 * primary may still be writing, or crashed with writes only it knows of.
 * Two primaries of one generation are never both served; the way out is a
 * higher generation (a promotion raises it, after fencing the other one).
 * A clean close (CONSISTENT) is a hand-over: another primary may take the
 * replica over at the same generation (a full resync).
 */
static bool
split_brain(const struct pmrep_target *t, uint64_t generation,
		uint64_t primary_id, char *detail, size_t len)
{
	const struct replica_hdr *h = &t->hdr;
	if (replica_uuid_is_nil(h->uuid) || h->generation != generation ||
			h->owner == 0 || h->owner == primary_id ||
			(h->flags & PMREP_REPLICA_F_CONSISTENT))
		return false;
	snprintf(detail, len, "the replica is claimed at generation %llu by primary %016llx, which did not close it; primary %016llx asks at the same generation (fence the other one, then attach at generation %llu)",
			(unsigned long long)generation,
			(unsigned long long)h->owner,
			(unsigned long long)primary_id,
			(unsigned long long)generation + 1);
	return true;
}

static void
on_auth(struct pmrep_target *t, struct session *s, const struct repl_msg *m)
{
	if (m->type != REPL_MSG_AUTH) {
		target_refuse(t, s, REPL_ST_MALFORMED, "expected AUTH first");
		return;
	}
	const struct repl_auth *a = &m->u.auth;
	char detail[200];
	/* the key the admission proof verified with (by its id: it may
	 * have been removed since) */
	int k = repl_keys_find(t->cfg.keys, t->cfg.nkeys, s->key_id);
	if (k < 0) {
		snprintf(detail, sizeof(detail), "key id %u was removed after the connection request was admitted",
				s->key_id);
		target_refuse(t, s, REPL_ST_AUTH, detail);
		return;
	}
	const struct repl_key *key = &t->cfg.keys[k];
	uint8_t mac[REPL_MAC_SIZE];
	if (repl_auth_mac(key->key, key->len, s->nonce_i, s->nonce_t,
			a, mac) != 0) {
		target_refuse(t, s, REPL_ST_INTERNAL, "cannot compute the HMAC");
		return;
	}
	if (!repl_mac_equal(mac, a->mac)) {
		target_refuse(t, s, REPL_ST_AUTH, "the initiator does not hold our key");
		return;
	}
	if (s->no_replica) {
		listener_no_replica_detail(t->listener, s->selector, detail,
				sizeof(detail));
		target_refuse(t, s, REPL_ST_NO_REPLICA, detail);
		return;
	}
	/* a listener's replica: dispatched by its selector already */
	if (t->listener == NULL && s->selector[0] != '\0' &&
			strcmp(s->selector, target_replica_name(t)) != 0) {
		snprintf(detail, sizeof(detail), "the initiator asked for \"%s\", this target serves \"%s\"",
				s->selector, target_replica_name(t));
		target_refuse(t, s, REPL_ST_NO_REPLICA, detail);
		return;
	}
	bool query = a->intent == REPL_INTENT_QUERY;
	/* a query may name data size 0: "whatever the replica holds" (its
	 * size is the ACCEPT's region descriptor's) */
	if (!(query && a->data_size == 0) && a->data_size != t->hdr.data_size) {
		snprintf(detail, sizeof(detail), "initiator has %llu data bytes, the replica %llu",
				(unsigned long long)a->data_size,
				(unsigned long long)t->hdr.data_size);
		target_refuse(t, s, REPL_ST_SIZE, detail);
		return;
	}
	bool fresh = replica_uuid_is_nil(t->hdr.uuid);
	/* a query may name the nil set: "whatever set it belongs to" */
	bool any_set = query && replica_uuid_is_nil(a->uuid);
	if (!any_set && (replica_uuid_is_nil(a->uuid) ||
			(!fresh && memcmp(a->uuid, t->hdr.uuid, PMREP_UUID_SIZE) != 0))) {
		char rh[2 * PMREP_UUID_SIZE + 1], ah[2 * PMREP_UUID_SIZE + 1];
		snprintf(detail, sizeof(detail), "the initiator names set %s, the replica belongs to %s",
				repl_uuid_hex(a->uuid, ah), fresh ? "none yet" :
				repl_uuid_hex(t->hdr.uuid, rh));
		target_refuse(t, s, REPL_ST_UUID, detail);
		return;
	}
	if (!any_set && !fresh && t->hdr.generation > a->generation) {
		snprintf(detail, sizeof(detail), "replica generation %llu, initiator %llu",
				(unsigned long long)t->hdr.generation,
				(unsigned long long)a->generation);
		target_refuse(t, s, REPL_ST_GENERATION, detail);
		return;
	}
	if (!query && split_brain(t, a->generation, a->primary_id, detail,
			sizeof(detail))) {
		target_refuse(t, s, REPL_ST_SPLIT_BRAIN, detail);
		return;
	}
	memcpy(s->uuid, a->uuid, PMREP_UUID_SIZE);
	s->generation = a->generation;
	s->primary_id = a->primary_id;

	struct repl_msg r = { .type = REPL_MSG_ACCEPT, .seq = m->seq };
	struct repl_accept *acc = &r.u.accept;
	/*
	 * The session's own access to the data area: a memory window bound
	 * to its conn (a QUERY: read only), posted on the conn before the
	 * ACCEPT that carries its descriptor. Nothing else reaches the data
	 * region: it is registered for windows only.
	 */
	int wusage = query ? PMREP_MR_USAGE_READ_SRC :
		t->data_mr_usage & (PMREP_MR_USAGE_READ_SRC |
				PMREP_MR_USAGE_WRITE_DST |
				PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY |
				PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT);
	int ret = pmrep_mw_bind(s->conn, t->data_mr, wusage, &s->mw);
	if (ret) {
		snprintf(detail, sizeof(detail), "cannot bind a memory window for the session: %s",
				pmrep_err_to_str(ret));
		target_refuse(t, s, REPL_ST_INTERNAL, detail);
		return;
	}
	(void) pmrep_mw_get_descriptor(s->mw, acc->mr_desc);
	(void) pmrep_peer_cfg_get_descriptor(t->peer_cfg, acc->peer_cfg);
	/* the header as it is now */
	memcpy(acc->uuid, t->hdr.uuid, PMREP_UUID_SIZE);
	memcpy(acc->replica_id, t->hdr.replica_id, PMREP_UUID_SIZE);
	acc->generation = t->hdr.generation;
	acc->owner = t->hdr.owner;
	acc->hdr_seq = t->hdr.seq;
	acc->last_persist_seq = replica_pos_psn(t->base, &t->hdr);
	acc->pos_gen = t->hdr.pos_gen;
	acc->pos_owner = t->hdr.pos_owner;
	acc->claim_floor = t->hdr.claim_floor;
	acc->run_gen = t->hdr.run_gen;
	acc->run_owner = t->hdr.run_owner;
	acc->hdr_flags = t->hdr.flags;
	acc->set_size = t->hdr.set_size;
	acc->set_quorum = t->hdr.set_quorum;
	acc->target_flags = (t->staging ? REPL_TF_STAGING : 0) |
		(fresh ? REPL_TF_FRESH : 0);
	if (repl_accept_mac(key->key, key->len, s->nonce_i, s->nonce_t,
			acc, acc->mac) != 0) {
		target_refuse(t, s, REPL_ST_INTERNAL, "cannot compute the HMAC");
		return;
	}
	if (!query && pmrep_test_hooks.repl_commit_before_confirm) {
		/* the broken v1 order, for the harness to catch: the claim
		 * is durable before the mirror's record covers it */
		close_others(t, s, "taken over by a new initiator");
		struct repl_commit early = { .generation = a->generation,
			.members = { .set_size = t->hdr.set_size,
				.set_quorum = t->hdr.set_quorum },
			.claim_floor = t->hdr.claim_floor };
		int ret = target_poisoned(t) ? PMREP_E_STATE :
			write_claim(t, s, &early);
		if (ret) {
			if (!t->poisoned)
				target_poison(t, ret, "the header's claim");
			target_refuse(t, s, REPL_ST_INTERNAL, "the claim could not be written");
			return;
		}
	}
	if (repl_chan_send(&s->ch, &r) != 0) {
		target_session_close(t, s, "cannot send ACCEPT");
		return;
	}
	t->stats.sessions_accepted++;
	if (query) {
		s->state = S_QUERY;
		PMREP_LOG_INFO("session %d: initiator authenticated for a read-only query",
				(int)(s - t->s));
		return;
	}
	s->state = S_ATTACHING;
	s->deadline = repl_deadline(t->cfg.timeout_ms);
	PMREP_LOG_INFO("session %d: initiator authenticated (generation %llu%s, %s mode), waiting for COMMIT",
			(int)(s - t->s), (unsigned long long)a->generation,
			fresh ? ", fresh replica" : "",
			t->staging ? "staging" : "direct");
}

static void
on_commit(struct pmrep_target *t, struct session *s, const struct repl_msg *m)
{
	const struct repl_commit *c = &m->u.commit;
	struct repl_msg r = { .type = REPL_MSG_COMMIT_REPLY, .seq = m->seq };
	char detail[200];
	if (target_poisoned(t)) {
		PMREP_LOG_ERR("session %d: COMMIT refused: the target is poisoned by an earlier failed persist",
				(int)(s - t->s));
		r.status = REPL_ST_INTERNAL;
		target_reply_and_close(t, s, &r);
		return;
	}
	if (memcmp(c->replica_id, t->hdr.replica_id, PMREP_UUID_SIZE) != 0) {
		target_refuse(t, s, REPL_ST_STATE, "COMMIT names another replica id than ours");
		return;
	}
	if (c->generation != s->generation || c->primary_id != s->primary_id) {
		target_refuse(t, s, REPL_ST_STATE, "COMMIT's generation or primary id differs from its AUTH's");
		return;
	}
	bool fresh = replica_uuid_is_nil(t->hdr.uuid);
	if (!fresh && c->generation < t->hdr.generation) {
		snprintf(detail, sizeof(detail), "replica generation %llu, COMMIT %llu",
				(unsigned long long)t->hdr.generation,
				(unsigned long long)c->generation);
		target_refuse(t, s, REPL_ST_GENERATION, detail);
		return;
	}
	if (!fresh && memcmp(s->uuid, t->hdr.uuid, PMREP_UUID_SIZE) != 0) {
		target_refuse(t, s, REPL_ST_UUID, "at COMMIT");
		return;
	}
	if (split_brain(t, c->generation, c->primary_id, detail, sizeof(detail))) {
		target_refuse(t, s, REPL_ST_SPLIT_BRAIN, detail);
		return;
	}
	/* fencing: no other session may write once the claim is durable */
	close_others(t, s, "fenced: another initiator committed an attach");
	int ret = write_claim(t, s, c);
	if (ret) {
		target_poison(t, ret, "writing the header's claim");
		r.status = REPL_ST_INTERNAL;
		target_reply_and_close(t, s, &r);
		return;
	}
	/* the position as of the fence: no other session can move it now */
	position_of(t, &r.u.position);
	s->fence = c->resync == REPL_RESYNC_FENCE;
	if (repl_chan_send(&s->ch, &r) != 0) {
		target_session_close(t, s, "cannot send COMMIT_REPLY");
		return;
	}
	s->state = S_ACTIVE;
	PMREP_LOG(PMREP_LOG_NOTICE, "session %d: attach committed (generation %llu, owner %016llx, %s resync, %s mode)",
			(int)(s - t->s), (unsigned long long)c->generation,
			(unsigned long long)c->primary_id,
			c->resync == REPL_RESYNC_FULL ? "full" :
			c->resync == REPL_RESYNC_FENCE ? "no (a fence)" : "incremental",
			t->staging ? "staging" : "direct");
}

/* the reply type of a request; 0 for a message that is no request */
static enum repl_msg_type
reply_type(enum repl_msg_type t)
{
	switch (t) {
	case REPL_MSG_COMMIT: return REPL_MSG_COMMIT_REPLY;
	case REPL_MSG_PERSIST: return REPL_MSG_PERSIST_REPLY;
	case REPL_MSG_CLOSE: return REPL_MSG_CLOSE_REPLY;
	case REPL_MSG_DIGEST: return REPL_MSG_DIGEST_REPLY;
	case REPL_MSG_MEMBERS: return REPL_MSG_MEMBERS_REPLY;
	default: return (enum repl_msg_type)0;
	}
}

/* ATTACHING (before COMMIT) and QUERY: a request that is not allowed
 * here is answered STATE; anything else ends the session */
static void
on_not_allowed(struct pmrep_target *t, struct session *s,
		const struct repl_msg *m)
{
	enum repl_msg_type rt = reply_type(m->type);
	if (rt == 0) {
		PMREP_LOG_ERR("session %d: unexpected message type %d",
				(int)(s - t->s), (int)m->type);
		target_session_close(t, s, "protocol error");
		return;
	}
	PMREP_LOG_ERR("session %d: message type %d refused: %s",
			(int)(s - t->s), (int)m->type, s->state == S_QUERY ?
			"a read-only query session" : "no COMMIT yet");
	struct repl_msg r = { .type = rt, .status = REPL_ST_STATE, .seq = m->seq };
	if (repl_chan_send(&s->ch, &r) != 0)
		target_session_close(t, s, "cannot reply");
}

static void
on_active(struct pmrep_target *t, struct session *s, const struct repl_msg *m)
{
	struct repl_msg r = { .seq = m->seq };
	int ret = 0;
	long long t0_ns = target_info_now_ns();
	switch (m->type) {
	case REPL_MSG_PERSIST: {
		uint64_t off = m->u.persist.offset, len = m->u.persist.length;
		r.type = REPL_MSG_PERSIST_REPLY;
		if (target_poisoned(t)) {
			r.status = REPL_ST_INTERNAL;
		} else if (s->fence) {
			/* a promotion's fence has no writer behind it: it
			 * moves neither the data nor the position */
			PMREP_LOG_ERR("session %d: a PERSIST on a fencing session (COMMIT kind FENCE) is refused",
					(int)(s - t->s));
			r.status = REPL_ST_STATE;
		} else if (off > t->hdr.data_size || len > t->hdr.data_size - off) {
			PMREP_LOG_ERR("persist request of %llu bytes at %llu is outside the %llu-byte data area",
					(unsigned long long)len, (unsigned long long)off,
					(unsigned long long)t->hdr.data_size);
			r.status = REPL_ST_RANGE;
		} else if (len > 0) {
			if (t->staging)
				memcpy(t->data + off, t->staging + off, (size_t)len);
			ret = pmrep_pmem_persist(t->pmem, t->data + off, (size_t)len);
			if (ret) {
				target_poison(t, ret, "a persist request");
				r.status = REPL_ST_INTERNAL;
			} else {
				t->stats.persist_requests++;
			}
		}
		/* the range is durable: record the step's persist sequence
		 * (only ever upwards), durably, before the reply */
		uint64_t psn = m->u.persist.psn;
		if (r.status == REPL_ST_OK && psn != 0) {
			ret = replica_pos_record(t->pmem, t->base, &t->hdr,
					s->generation, s->primary_id, psn);
			if (ret) {
				target_poison(t, ret, "recording the position");
				r.status = REPL_ST_INTERNAL;
			}
		}
		if (r.status == REPL_ST_OK) {
			target_info_persist(s, len, t0_ns);
			long long d = target_info_now_ns() - t0_ns;
			t->mx.persist_bytes += len;
			metrics_hist_observe(&t->mx.lat, d > 0 ? (uint64_t)d : 0);
		}
		break;
	}
	case REPL_MSG_CLOSE: {
		r.type = REPL_MSG_CLOSE_REPLY;
		if (target_poisoned(t)) {
			r.status = REPL_ST_INTERNAL;
			break;
		}
		/* no write of this session can land after the mark: its
		 * window goes first */
		target_session_revoke(t, s);
		/* the mark says "complete as of this position": the writer's
		 * newest step, which this in-sync replica holds (PROTOCOL.md
		 * "Position"); recorded first */
		/* a fence's session vouches for nothing: its CLOSE marks
		 * nothing (the copy is what the last run left) */
		ret = s->fence ? 0 :
			replica_pos_record_flags(t->pmem, t->base, &t->hdr,
				s->generation, s->primary_id, m->u.close_psn,
				PMREP_REPLICA_F_CONSISTENT | REPLICA_F_RUN_CLOSED);
		if (ret) {
			target_poison(t, ret, "marking the header consistent");
			r.status = REPL_ST_INTERNAL;
			break;
		}
		if (s->fence)
			PMREP_LOG(PMREP_LOG_NOTICE, "session %d: a fence's CLOSE: nothing marked; the session ends with CLOSE_REPLY",
					(int)(s - t->s));
		else
			PMREP_LOG(PMREP_LOG_NOTICE, "session %d: replica marked consistent at generation %llu; the session ends with CLOSE_REPLY",
					(int)(s - t->s), (unsigned long long)t->hdr.generation);
		/* the mark says "a clean close left a complete copy": no
		 * PERSIST may be served and no write may land after it, so
		 * the session ends here (CLOSING: closed once the reply is
		 * sent) */
		target_reply_and_close(t, s, &r);
		return;
	}
	case REPL_MSG_DIGEST:
		/* a resync's comparison: the digests of the durable data
		 * (staging: what persists copied in), nothing written */
		r.type = REPL_MSG_DIGEST_REPLY;
		r.status = target_poisoned(t) ? REPL_ST_INTERNAL :
			repl_digest_answer(t->data, t->hdr.data_size,
					&m->u.digest, &r.u.digest_reply);
		break;
	case REPL_MSG_MEMBERS: {
		/* the writer's membership changed (PROTOCOL.md "Membership"):
		 * recorded in the header, crash-atomic, before the reply */
		r.type = REPL_MSG_MEMBERS_REPLY;
		if (target_poisoned(t)) {
			r.status = REPL_ST_INTERNAL;
			break;
		}
		struct replica_hdr next = t->hdr;
		next.set_size = m->u.members.set_size;
		next.set_quorum = m->u.members.set_quorum;
		if (m->u.members.removed)
			next.flags |= PMREP_REPLICA_F_REMOVED;
		else
			next.flags &= ~PMREP_REPLICA_F_REMOVED;
		ret = target_hdr_update(t, &next);
		if (ret) {
			target_poison(t, ret, "recording the membership");
			r.status = REPL_ST_INTERNAL;
			break;
		}
		PMREP_LOG(PMREP_LOG_NOTICE, "session %d: membership recorded: %u replicas, quorum %s%u%s",
				(int)(s - t->s), next.set_size,
				next.set_quorum ? "" : "all = ",
				next.set_quorum ? next.set_quorum : next.set_size,
				m->u.members.removed ?
				"; this replica was removed from the set" : "");
		break;
	}
	case REPL_MSG_COMMIT:
		/* committed already */
		on_not_allowed(t, s, m);
		return;
	default:
		PMREP_LOG_ERR("session %d: unexpected message type %d",
				(int)(s - t->s), (int)m->type);
		target_session_close(t, s, "protocol error");
		return;
	}
	if (r.status == REPL_ST_INTERNAL) {
		PMREP_LOG_ERR("session %d: %s answered INTERNAL (the target is poisoned); closing the session",
				(int)(s - t->s), m->type == REPL_MSG_CLOSE ? "CLOSE" :
				m->type == REPL_MSG_DIGEST ? "DIGEST" :
				m->type == REPL_MSG_MEMBERS ? "MEMBERS" : "PERSIST");
		target_reply_and_close(t, s, &r);
		return;
	}
	if (repl_chan_send(&s->ch, &r) != 0)
		target_session_close(t, s, "cannot reply");
}

/* the session's connection ended (`what`): after its last reply (a clean
 * CLOSE, a refusal) that is how it ends, logged INFO "closed"; an attached
 * mirror's that ends without CLOSE was lost: WARNING */
static void
session_ended(struct pmrep_target *t, struct session *s, const char *what)
{
	if (s->state == S_ACTIVE)
		PMREP_LOG_WARN("connection lost while attached (no CLOSE): %s", what);
	target_session_close(t, s, s->state == S_CLOSING ?
			"the initiator disconnected after the last reply" : what);
}

void
target_session_progress(struct pmrep_target *t, struct session *s)
{
	repl_chan_ack_cq(&s->ch);
	for (;;) {
		enum repl_chan_ev ev;
		struct repl_msg m;
		int ret = repl_chan_next(&s->ch, &ev, &m);
		if (ret == PMREP_E_MALFORMED && s->state == S_WAIT_AUTH) {
			target_refuse(t, s, REPL_ST_MALFORMED, "AUTH did not decode");
			return;
		}
		if (ret) {
			session_ended(t, s, pmrep_err_to_str(ret));
			return;
		}
		if (ev == REPL_CHAN_NONE)
			break;
		if (ev != REPL_CHAN_MSG)
			continue;
		switch (s->state) {
		case S_WAIT_AUTH:
			on_auth(t, s, &m);
			break;
		case S_ATTACHING:
			if (m.type == REPL_MSG_COMMIT)
				on_commit(t, s, &m);
			else
				on_not_allowed(t, s, &m);
			break;
		case S_QUERY:
			on_not_allowed(t, s, &m);
			break;
		case S_ACTIVE:
			on_active(t, s, &m);
			break;
		default:
			break;	/* S_CLOSING: ignore whatever still comes */
		}
		/* a COMMIT closed other sessions, maybe not this one */
		if (s->state == S_FREE)
			return;
		target_info_note(t, s);
	}
	if (s->state == S_CLOSING && s->ch.sends_in_flight == 0) {
		target_session_close(t, s, "closed after its last reply");
		return;
	}
	if (repl_chan_check_conn(&s->ch) != 0)
		session_ended(t, s, s->state == S_ACTIVE || s->state == S_QUERY ?
				"the initiator disconnected" :
				"the connection ended during the handshake");
}
