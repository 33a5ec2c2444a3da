/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * promote.c -- pmrep_mirror_promote: a replica's file, opened in place as
 * a log, becomes the primary of its set (docs/FAILOVER.md, PROTOCOL.md
 * "Promotion"). Fence, then decide: every replica reached commits the new
 * generation (a FENCE: no writer behind it; every other session closed
 * first) and reports its position as of that fence; only then are the
 * positions of the fenced copies ranked (position.c). A dry run asks
 * read-only and ranks what it read (a pre-check, like Raft's PreVote).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/testhook.h"
#include "repl/mirror/mirror_int.h"
#include "repl/mirror/mirror_state.h"
#include "pmem/pmem_view.h"
#include "repl/media/position.h"
#include "query.h"
#include "recover.h"

/* a catch-up's bound when the cfg sets no creation timeout (ms) */
#define CATCH_UP_TIMEOUT_MS 60000
#define PROMOTE_FLAGS (PMREP_PROMOTE_FORCE_STALE | PMREP_PROMOTE_FORCE_FENCE | \
		PMREP_PROMOTE_WAIT_SYNC | PMREP_PROMOTE_DRY_RUN | \
		PMREP_PROMOTE_NO_CATCH_UP)

/* every replica of `m` that answered the query in sync, or the deadline */
static int
wait_reached_in_sync(struct pmrep_mirror *m, const bool *reached,
		long long deadline)
{
	for (;;) {
		bool all = true;
		for (unsigned i = 0; i < m->n; i++) {
			struct pmrep_replica_status st;
			int ret = pmrep_mirror_get_replica_status(m, i, &st);
			if (ret)
				return ret;
			if (reached[i] && st.state != PMREP_REPLICA_IN_SYNC &&
					st.state != PMREP_REPLICA_BEHIND)
				all = false;
		}
		if (all)
			return 0;
		if (repl_left_ms(deadline) == 0)
			return PMREP_E_TIMEOUT;
		usleep(5000);
	}
}

/*
 * a header's membership (set size 0: none recorded): when it needs more
 * fencing than what res holds, it is the one (logged: the caller's
 * arguments, or an older header, said less)
 */
static void
take_membership(struct pmrep_promote_result *res, unsigned n, unsigned k,
		const char *where)
{
	if (n == 0)
		return;
	unsigned need = n - (k ? k : n) + 1;
	if (need <= res->needed)
		return;
	PMREP_LOG(PMREP_LOG_NOTICE, "promote: %s records a set of %u replicas with quorum %u: %u to fence (was %u)",
			where, n, k ? k : n, need, res->needed);
	res->needed = need;
	res->set_size = n;
	res->set_quorum = k;
}

/* what one replica of the cfg said (read-only, or as of its fence) */
struct copy {
	bool reached;		/* answered (a copy of the set: not fresh,
				 * not removed, not one counted already) */
	bool fenced;		/* committed the new generation */
	struct pmrep_replica_position pos;
	uint8_t replica_id[PMREP_UUID_SIZE];
};

/* is `id` this log's or a copy's before cp[upto]? (one replica named by
 * two addresses counts once) */
static bool
seen_id(const uint8_t *id, const uint8_t *own_id, const struct copy *cp,
		unsigned upto)
{
	if (memcmp(id, own_id, PMREP_UUID_SIZE) == 0)
		return true;
	for (unsigned j = 0; j < upto; j++)
		if (cp[j].reached &&
				memcmp(id, cp[j].replica_id, PMREP_UUID_SIZE) == 0)
			return true;
	return false;
}

/* the record's path: the cfg's, or the log's default */
static int
record_path(struct pmrep_pmem *log, const struct pmrep_mirror_cfg *cfg,
		char *buf, size_t len)
{
	if (cfg->state_path_set && cfg->state_path != NULL) {
		snprintf(buf, len, "%s", cfg->state_path);
		return 0;
	}
	if (cfg->state_path_set || pmrep_pmem_is_devdax(log)) {
		PMREP_LOG_ERR("promote: %s has no mirror state file (a record in memory): the new primary's mirror must commit as the primary that fenced; set a state path (pmrep_mirror_cfg_set_state_path)",
				pmrep_pmem_get_path(log));
		return PMREP_E_INVAL;
	}
	snprintf(buf, len, "%s.pmrep-state", pmrep_pmem_get_path(log));
	return 0;
}

/*
 * fence replica i: AUTH (attach) at `gen` as primary `pid`, and -- a copy
 * of the set, not removed -- COMMIT(FENCE): the target closes every other
 * session, then records the generation; its reply is the position as of
 * that fence. A fresh or removed replica is left as it was (no COMMIT).
 */
static int
fence_one(const struct pmrep_mirror_cfg *cfg, unsigned i,
		const uint8_t uuid[PMREP_UUID_SIZE], uint64_t gen, uint64_t pid,
		uint64_t data_size, const uint8_t *own_id,
		struct pmrep_promote_result *res, struct copy *cps)
{
	struct copy *cp = &cps[i];
	const char *addr = cfg->r[i].addr, *port = cfg->r[i].port;
	long long deadline = repl_deadline(cfg->timeout_ms);
	struct pmrep_peer *peer = NULL;
	struct pmrep_conn *conn = NULL;
	struct repl_chan ch;
	bool chan_ready = false;
	struct repl_accept acc;
	int ret = pmrep_peer_open(addr, false, &peer);
	if (ret)
		return ret;
	ret = repl_chan_init(&ch, peer);
	if (ret)
		goto out;
	chan_ready = true;
	ret = repl_session_open(&ch, peer, addr, port,
			cfg->r[i].selector[0] ? cfg->r[i].selector : NULL,
			cfg->key, cfg->key_len, uuid, gen, data_size,
			REPL_INTENT_ATTACH, pid, deadline, cfg->timeout_ms,
			"promote", &conn, &acc);
	if (ret)
		goto out;
	repl_position_from_accept(&cp->pos, &acc);
	if (cp->pos.flags & (PMREP_POSITION_F_FRESH | PMREP_POSITION_F_REMOVED)) {
		PMREP_LOG(PMREP_LOG_NOTICE, "promote: replica %u (%s:%s) is %s: not fenced, not counted",
				i, addr, port, (cp->pos.flags & PMREP_POSITION_F_FRESH) ?
				"fresh (of no set yet: the old primary completed no persist on it)" :
				"removed from the set");
		goto out;
	}
	if (seen_id(acc.replica_id, own_id, cps, i)) {
		PMREP_LOG(PMREP_LOG_NOTICE, "promote: replica %u (%s:%s) is a copy already counted (the same replica id under another address): counted once",
				i, addr, port);
		goto out;
	}
	memcpy(cp->replica_id, acc.replica_id, PMREP_UUID_SIZE);
	cp->reached = true;
	/* the count to fence, re-read from the header this fence reads:
	 * a membership changed since the read-only pass counts */
	take_membership(res, acc.set_size, acc.set_quorum, addr);
	struct repl_msg msg = { .type = REPL_MSG_COMMIT, .seq = 2 };
	memcpy(msg.u.commit.replica_id, acc.replica_id, PMREP_UUID_SIZE);
	msg.u.commit.generation = gen;
	msg.u.commit.primary_id = pid;
	msg.u.commit.resync = REPL_RESYNC_FENCE;
	/* the old set's membership: a later promotion fences as much */
	msg.u.commit.members.set_size = res->set_size;
	msg.u.commit.members.set_quorum = res->set_quorum;
	ret = repl_chan_send(&ch, &msg);
	struct repl_msg reply;
	if (ret == 0)
		ret = repl_chan_wait_msg(&ch, deadline, &reply);
	if (ret)
		goto out;
	if (reply.type == REPL_MSG_REFUSE || reply.status != REPL_ST_OK ||
			reply.type != REPL_MSG_COMMIT_REPLY || reply.seq != msg.seq) {
		PMREP_LOG_ERR("promote: replica %u (%s:%s) did not commit the fence: %s",
				i, addr, port, repl_status_str(reply.status));
		ret = reply.status != REPL_ST_OK ?
			repl_status_to_err(reply.status) : PMREP_E_MALFORMED;
		goto out;
	}
	/* the position as of the fence: no writer below it moves it now.
	 * A position above the fence, or behind what ACCEPT reported of
	 * the same writer, is a target that lies: not counted */
	const struct repl_position *rp = &reply.u.position;
	if (rp->gen > gen || rp->gen < cp->pos.generation ||
			(rp->gen == cp->pos.generation &&
			 rp->owner == cp->pos.owner && rp->psn < cp->pos.seq)) {
		PMREP_LOG_ERR("promote: replica %u (%s:%s) reported a position as of its fence (generation %llu, sequence %llu) that cannot follow its ACCEPT's (generation %llu, sequence %llu) under fence generation %llu: not counted",
				i, addr, port, (unsigned long long)rp->gen,
				(unsigned long long)rp->psn,
				(unsigned long long)cp->pos.generation,
				(unsigned long long)cp->pos.seq,
				(unsigned long long)gen);
		ret = PMREP_E_MALFORMED;
		goto out;
	}
	cp->pos.generation = reply.u.position.gen;
	cp->pos.owner = reply.u.position.owner;
	cp->pos.seq = reply.u.position.psn;
	cp->pos.fence_generation = gen;
	cp->fenced = true;
	char ps[320];
	repl_position_str(&cp->pos, ps, sizeof(ps));
	PMREP_LOG(PMREP_LOG_NOTICE, "promote: replica %u (%s:%s) fenced at generation %llu: %s",
			i, addr, port, (unsigned long long)gen, ps);
out:
	repl_session_end(&conn, chan_ready ? &ch : NULL, &peer);
	return ret;
}

/* this node's log fenced the same way: the generation and this primary,
 * its position and last run kept */
static int
fence_own(struct pmrep_pmem *log, uint8_t *whole, struct replica_hdr *own,
		uint64_t gen, uint64_t pid)
{
	struct replica_hdr next = *own;
	next.generation = gen;
	next.owner = pid;
	if (next.flags & PMREP_REPLICA_F_CONSISTENT)
		next.flags |= REPLICA_F_RUN_CLOSED;
	next.flags &= ~(PMREP_REPLICA_F_CONSISTENT | PMREP_REPLICA_F_REMOVED);
	/* the membership it records is still the old primary's */
	next.flags |= PMREP_REPLICA_F_PROMOTED;
	int ret = replica_hdr_write(log, whole, own, &next);
	if (ret)
		PMREP_LOG_ERR("promote: the fence of %s could not be written (%s)",
				pmrep_pmem_get_path(log), pmrep_err_to_str(ret));
	return ret;
}

/*
 * catch up: this node copies replica i (complete, fenced at `gen`: no
 * writer moves it) before it is promoted. First marked INCOMPLETE
 * durably (it vouches for nothing meanwhile: a crash here leaves a node a
 * re-run catches up again); the copy goes through a QUERY session, which
 * a later fence closes; then it adopts i's position. Nothing is resynced
 * towards any replica before that. Errors: the copy's (the node stays
 * INCOMPLETE), the header writes'.
 */
static int
catch_up(struct pmrep_pmem *log, uint8_t *whole, struct replica_hdr *own,
		const struct pmrep_mirror_cfg *cfg, unsigned i,
		const struct pmrep_replica_position *src, uint64_t gen)
{
	const char *path = pmrep_pmem_get_path(log);
	struct replica_hdr next = *own;
	next.flags |= REPLICA_F_INCOMPLETE;
	int ret = replica_hdr_write(log, whole, own, &next);
	if (ret)
		return ret;
	char ps[320];
	repl_position_str(src, ps, sizeof(ps));
	PMREP_LOG(PMREP_LOG_NOTICE, "promote: %s catches up from replica %u (%s:%s), more current (%s): marked incomplete until the copy is done",
			path, i, cfg->r[i].addr, cfg->r[i].port, ps);
	/* bounded: the creation timeout, or (none set) a minute -- a
	 * source that does not answer must not hold the promotion */
	int tmo = cfg->create_timeout_ms > 0 ? cfg->create_timeout_ms :
		CATCH_UP_TIMEOUT_MS;
	struct pmrep_replica_info info;
	ret = repl_recover_named(log, cfg->r[i].addr, cfg->r[i].port,
			cfg->r[i].selector[0] ? cfg->r[i].selector : NULL,
			cfg->key, cfg->key_len, own->uuid, gen,
			PMREP_RECOVER_ALLOW_INCONSISTENT | PMREP_RECOVER_SET_DECIDED,
			tmo, &info);
	if (ret) {
		PMREP_LOG_ERR("promote: the catch-up from replica %u (%s:%s) failed (%s): %s stays incomplete; re-run the promotion (it copies again from the most current copy it fences), or promote that replica",
				i, cfg->r[i].addr, cfg->r[i].port,
				pmrep_err_to_str(ret), path);
		return ret;
	}
	ret = replica_pos_adopt(log, whole, own, src);
	if (ret == 0)
		PMREP_LOG(PMREP_LOG_NOTICE, "promote: %s caught up: it holds what replica %u held as of the fence",
				path, i);
	return ret;
}

/*
 * rank this node (copy 0) and the replicas in `cp` that count (fenced,
 * or -- a dry run -- reached): 0 when this node is as current as the
 * best; else the refusal, with res->more_current / *who set
 */
static int
decide(const struct pmrep_replica_position *own, const struct copy *cp,
		unsigned n, bool dry, struct pmrep_promote_result *res,
		unsigned *who)
{
	struct pmrep_replica_position all[PMREP_MIRROR_MAX_REPLICAS + 1];
	unsigned idx[PMREP_MIRROR_MAX_REPLICAS + 1], m = 0;
	all[m] = *own;
	idx[m++] = n;	/* this node */
	for (unsigned i = 0; i < n; i++) {
		if (cp[i].reached && (dry || cp[i].fenced)) {
			all[m] = cp[i].pos;
			idx[m++] = i;
		}
	}
	unsigned best = 0, conflict = m;
	bool complete[PMREP_MIRROR_MAX_REPLICAS + 1];
	int ret = pmrep_position_decide(all, m, &best, &conflict, complete);
	if (ret) {
		*who = conflict < m ? idx[conflict] : n;
		return ret;
	}
	if (complete[0])
		return 0;
	res->more_current = (int)idx[best];
	*who = idx[best];
	return PMREP_E_STATE;
}

/* the refusal a decision's error is */
static uint32_t
refusal(int ret, const struct pmrep_promote_result *res)
{
	if (ret == 0)
		return 0;
	if (ret == PMREP_E_UNREACHABLE)
		return PMREP_PROMOTE_REFUSED_FENCE;
	if (ret == PMREP_E_STATE && res->more_current >= 0)
		return PMREP_PROMOTE_REFUSED_STALE;
	return PMREP_PROMOTE_REFUSED_CANNOT_TELL;
}

int
pmrep_mirror_promote(struct pmrep_pmem *log, const struct pmrep_mirror_cfg *cfg,
		unsigned set_size, unsigned set_quorum, unsigned flags,
		struct pmrep_promote_result *res)
{
	CHECK_ARG(log);
	CHECK_ARG(cfg);
	CHECK_ARG(res);
	memset(res, 0, sizeof(*res));
	res->more_current = -1;
	if (flags & ~PROMOTE_FLAGS) {
		PMREP_LOG_ERR("promote: unknown flags 0x%x", flags & ~PROMOTE_FLAGS);
		return PMREP_E_INVAL;
	}
	if (cfg->n > 0 && cfg->key_len == 0) {
		/* no replicas: a set of one (its headers' membership decides) */
		PMREP_LOG_ERR("promote: the cfg names replicas but no key");
		return PMREP_E_INVAL;
	}
	const char *path = pmrep_pmem_get_path(log);
	uint8_t *whole = pmem_whole_address(log);
	if (whole == pmrep_pmem_get_address(log)) {
		PMREP_LOG_ERR("promote: %s is not a pmrep log (open it with pmrep_log_open)",
				path);
		return PMREP_E_INVAL;
	}
	if (pmem_rdonly(log)) {
		PMREP_LOG_ERR("promote: %s is opened read-only (PMREP_LOG_RDONLY): a promotion writes its header",
				path);
		return PMREP_E_INVAL;
	}
	size_t size = pmem_whole_size(log);
	struct replica_hdr own;
	int ret = replica_hdr_decode(whole, size, size, &own);
	if (ret) {
		PMREP_LOG_ERR("promote: the header of %s is not valid", path);
		return ret;
	}
	if (replica_uuid_is_nil(own.uuid)) {
		PMREP_LOG_ERR("promote: %s belongs to no replica set (never claimed): nothing to promote",
				path);
		return PMREP_E_INVAL;
	}
	if (!replica_uuid_is_nil(cfg->uuid) &&
			memcmp(cfg->uuid, own.uuid, PMREP_UUID_SIZE) != 0) {
		PMREP_LOG_ERR("promote: %s belongs to another replica set than the cfg's UUID",
				path);
		return PMREP_E_MISMATCH;
	}
	unsigned n = set_size ? set_size : cfg->n + 1;
	unsigned k = set_quorum ? set_quorum : n;
	if (k > n) {
		PMREP_LOG_ERR("promote: a quorum of %u above the set's %u replicas", k, n);
		return PMREP_E_INVAL;
	}
	struct pmrep_replica_position own_pos;
	repl_position_from_hdr(&own_pos, &own, whole);
	/* the fencing count: the arguments', or the largest a header
	 * records (this log's now, the replicas' below) */
	res->needed = n - k + 1;
	res->set_size = n;
	res->set_quorum = k == n ? 0 : k;
	take_membership(res, own.set_size, own.set_quorum, path);
	if ((own.flags & PMREP_REPLICA_F_REMOVED) &&
			!(flags & PMREP_PROMOTE_FORCE_STALE)) {
		PMREP_LOG_ERR("promote: refused: %s was removed from its set by its primary (pmrep_mirror_remove_replica): the set went on without it; promote a replica of the set (--force-stale: this one anyway)",
				path);
		res->refused = PMREP_PROMOTE_REFUSED_REMOVED;
		return PMREP_E_STATE;
	}
	res->last_persist_seq = own_pos.seq;
	res->old_generation = own.generation;

	/* (1) read-only: the newest generation and the memberships the
	 * headers record (nothing decided from positions read so: they
	 * may still move until the fence) */
	struct copy cp[PMREP_MIRROR_MAX_REPLICAS];
	memset(cp, 0, sizeof(cp));
	for (unsigned i = 0; i < cfg->n; i++) {
		struct pmrep_replica_info info;
		struct pmrep_replica_membership mb;
		int q = repl_query_named(cfg->r[i].addr, cfg->r[i].port,
				cfg->r[i].selector[0] ? cfg->r[i].selector : NULL,
				cfg->key, cfg->key_len, cfg->timeout_ms, &info, &mb,
				&cp[i].pos);
		if (q) {
			PMREP_LOG_WARN("promote: replica %u (%s:%s) not reached: %s",
					i, cfg->r[i].addr, cfg->r[i].port,
					pmrep_err_to_str(q));
			continue;
		}
		bool fresh = replica_uuid_is_nil(info.uuid);
		if (!fresh && memcmp(info.uuid, own.uuid, PMREP_UUID_SIZE) != 0) {
			PMREP_LOG_ERR("promote: replica %u (%s:%s) belongs to another replica set",
					i, cfg->r[i].addr, cfg->r[i].port);
			return PMREP_E_MISMATCH;
		}
		if (fresh || (info.flags & PMREP_REPLICA_F_REMOVED))
			continue;
		if (seen_id(info.replica_id, own.replica_id, cp, i)) {
			PMREP_LOG(PMREP_LOG_NOTICE, "promote: replica %u (%s:%s) is a copy already counted (the same replica id under another address): counted once",
					i, cfg->r[i].addr, cfg->r[i].port);
			continue;
		}
		memcpy(cp[i].replica_id, info.replica_id, PMREP_UUID_SIZE);
		cp[i].reached = true;
		res->reached++;
		take_membership(res, mb.set_size, mb.quorum, cfg->r[i].addr);
		if (info.generation > res->old_generation)
			res->old_generation = info.generation;
	}
	unsigned who = cfg->n;
	if (flags & PMREP_PROMOTE_DRY_RUN) {
		/* the pre-check: what a promotion would find if nothing moved
		 * meanwhile (a live old primary can still move it) */
		ret = res->needed - 1 > res->reached &&
			!(flags & PMREP_PROMOTE_FORCE_FENCE) ? PMREP_E_UNREACHABLE :
			decide(&own_pos, cp, cfg->n, true, res, &who);
		if (ret == PMREP_E_STATE && res->more_current < 0)
			res->more_current = who < cfg->n ? (int)who : -1;
		if (ret && (flags & PMREP_PROMOTE_FORCE_STALE) &&
				ret != PMREP_E_UNREACHABLE)
			ret = 0;
		res->refused = refusal(ret, res);
		PMREP_LOG(ret ? PMREP_LOG_ERROR : PMREP_LOG_NOTICE, "promote: dry run: %s (%u of %u replicas reached, %u needed besides this node)",
				ret == 0 ? "this node may be promoted" :
				ret == PMREP_E_UNREACHABLE ? "too few replicas to fence" :
				"another copy is more current, or which one cannot be told",
				res->reached, cfg->n, res->needed - 1);
		return ret;
	}
	if (res->needed - 1 > res->reached && !(flags & PMREP_PROMOTE_FORCE_FENCE)) {
		/* nothing written yet: fewer than needed answered at all */
		PMREP_LOG_ERR("promote: refused: %u of the set's %u replicas reached (this node included), %u needed to fence the old primary (n - k + 1 with quorum %u): it could still complete a persist",
				res->reached + 1, res->set_size, res->needed,
				res->set_quorum ? res->set_quorum : res->set_size);
		res->refused = PMREP_PROMOTE_REFUSED_FENCE;
		return PMREP_E_UNREACHABLE;
	}

	if (pmrep_test_hooks.repl_promote_decide_before_fence &&
			!(flags & PMREP_PROMOTE_FORCE_STALE)) {
		/* test hook (tests/sim): the old order -- decided before the
		 * fence, not again after it */
		ret = decide(&own_pos, cp, cfg->n, true, res, &who);
		if (ret) {
			res->refused = refusal(ret, res);
			return ret;
		}
		flags |= PMREP_PROMOTE_FORCE_STALE;
	}

	/* (2) fence: this node's log, then every replica reached; the count
	 * needed is re-read from each fenced header */
	char rpath[4096];
	ret = record_path(log, cfg, rpath, sizeof(rpath));
	if (ret)
		return ret;
	uint64_t gen = res->old_generation + 1;
	struct mirror_state *st = NULL;
	ret = mstate_open(rpath, own.uuid, gen, own.data_size, cfg->region_size,
			&st);
	if (ret) {
		PMREP_LOG_ERR("promote: cannot open its record %s (%s)", rpath,
				pmrep_err_to_str(ret));
		return ret;
	}
	uint64_t pid = mstate_primary_id(st);
	mstate_close(&st);
	res->primary_id = pid;
	ret = fence_own(log, whole, &own, gen, pid);
	if (ret)
		return ret;
	res->generation = gen;
	PMREP_LOG(PMREP_LOG_NOTICE, "promote: %s fenced at generation %llu as primary %016llx; fencing the replicas",
			path, (unsigned long long)gen, (unsigned long long)pid);
	res->reached = 0;
	for (unsigned i = 0; i < cfg->n; i++) {
		if (!cp[i].reached)
			continue;	/* the read-only pass did not reach it */
		memset(&cp[i], 0, sizeof(cp[i]));
		int q = fence_one(cfg, i, own.uuid, gen, pid, own.data_size,
				own.replica_id, res, cp);
		struct copy f = cp[i];
		if (q) {
			PMREP_LOG_WARN("promote: replica %u (%s:%s) not fenced: %s",
					i, cfg->r[i].addr, cfg->r[i].port,
					pmrep_err_to_str(q));
			continue;
		}
		if (f.reached)
			res->reached++;
		if (f.fenced)
			res->fenced++;
	}
	if (res->fenced + 1 < res->needed) {
		if (!(flags & PMREP_PROMOTE_FORCE_FENCE)) {
			PMREP_LOG_ERR("promote: refused: %u of the %u copies needed fenced (this node included; n - k + 1 with quorum %u): the old primary could still complete a persist. The copies fenced stay fenced at generation %llu with no writer: re-run when more replicas are reachable",
					res->fenced + 1, res->needed,
					res->set_quorum ? res->set_quorum : res->set_size,
					(unsigned long long)gen);
			res->refused = PMREP_PROMOTE_REFUSED_FENCE;
			return PMREP_E_UNREACHABLE;
		}
		PMREP_LOG_WARN("promote: forced: %u of %u copies to fence fenced; the old primary may still complete a persist",
				res->fenced + 1, res->needed);
	}

	/* (3) decide, among the fenced copies only, as of their fence; a
	 * more current one is copied first (catch-up) unless refused so */
	ret = decide(&own_pos, cp, cfg->n, false, res, &who);
	if (ret && res->more_current >= 0 &&
			!(flags & (PMREP_PROMOTE_NO_CATCH_UP |
				PMREP_PROMOTE_FORCE_STALE))) {
		unsigned x = (unsigned)res->more_current;
		ret = catch_up(log, whole, &own, cfg, x, &cp[x].pos, gen);
		if (ret) {
			res->refused = PMREP_PROMOTE_REFUSED_STALE;
			return ret;
		}
		res->caught_up = 1;
		res->last_persist_seq = cp[x].pos.seq;
	}
	if (ret) {
		const char *wa = who < cfg->n ? cfg->r[who].addr : path;
		const char *wp = who < cfg->n ? cfg->r[who].port : "";
		if (!(flags & PMREP_PROMOTE_FORCE_STALE)) {
			if (res->more_current >= 0)
				PMREP_LOG_ERR("promote: refused: replica %u (%s:%s) is more current than %s: promote that one (the set stays fenced at generation %llu, with no writer, until then)",
						who, wa, wp, path,
						(unsigned long long)gen);
			else
				PMREP_LOG_ERR("promote: refused: which copy is newest cannot be told: %s%s%s may hold persists no reachable copy vouches for (its run did not close and recorded no position per step, or two writers of one generation); reach a copy that vouches for it (the set stays fenced at generation %llu, with no writer)",
						wa, wp[0] ? ":" : "", wp,
						(unsigned long long)gen);
			res->refused = refusal(ret, res);
			return ret;
		}
		PMREP_LOG_WARN("promote: forced: %s%s%s may hold persists %s lacks; they will be overwritten",
				wa, wp[0] ? ":" : "", wp, path);
	}

	/* (4) optionally: the replicas resynced from this node before
	 * returning (the application's mirror at the new generation on
	 * the same record does it otherwise) */
	if (flags & PMREP_PROMOTE_WAIT_SYNC) {
		bool reached[PMREP_MIRROR_MAX_REPLICAS] = { false };
		for (unsigned i = 0; i < cfg->n; i++)
			reached[i] = cp[i].fenced;
		struct pmrep_mirror_cfg c = *cfg;
		memcpy(c.uuid, own.uuid, PMREP_UUID_SIZE);
		c.generation = gen;
		c.fence_count = 0;
		c.fence_only = true;
		c.fence_set_size = res->set_size;
		c.fence_set_quorum = res->set_quorum;
		c.manual_recovery = false;
		struct pmrep_mirror *m = NULL;
		ret = pmrep_mirror_new(log, &c, &m);
		if (ret == 0) {
			ret = wait_reached_in_sync(m, reached,
					repl_deadline(cfg->create_timeout_ms));
			int dret = pmrep_mirror_delete(&m);
			if (ret == 0)
				ret = dret;
		}
		if (ret) {
			PMREP_LOG_ERR("promote: generation %llu recorded, %u replicas fenced; the resync then: %s",
					(unsigned long long)gen, res->fenced,
					pmrep_err_to_str(ret));
			return ret;
		}
	}
	PMREP_LOG(PMREP_LOG_NOTICE, "promote: %s is the primary at generation %llu (primary %016llx): %u of %u replicas reached, %u fenced (%u needed besides this node)",
			path, (unsigned long long)gen, (unsigned long long)pid,
			res->reached, cfg->n, res->fenced, res->needed - 1);
	return 0;
}
