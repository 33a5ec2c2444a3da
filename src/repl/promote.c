/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * promote.c -- pmrep_mirror_promote: a replica's file, opened in place as
 * a log, becomes the primary of its set (docs/FAILOVER.md, PROTOCOL.md
 * "Promotion"). The checks ask the replicas read-only and write nothing;
 * the fencing is a mirror of the new generation that returns once enough
 * replicas committed it, then closes cleanly, handing its sessions over
 * to the application's mirror.
 */
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "mirror_int.h"
#include "mirror_state.h"
#include "pmem/pmem_view.h"
#include "query.h"

#define PROMOTE_FLAGS (PMREP_PROMOTE_FORCE_STALE | PMREP_PROMOTE_FORCE_FENCE | \
		PMREP_PROMOTE_WAIT_SYNC | PMREP_PROMOTE_DRY_RUN)

/* is `a` (generation, persist sequence) more current than `b`? */
static bool
more_current(uint64_t a_gen, uint64_t a_psn, uint64_t b_gen, uint64_t b_psn)
{
	return a_gen > b_gen || (a_gen == b_gen && a_psn > b_psn);
}

/* the digest passes of the fenced replicas finished (or they failed), or
 * the deadline: the record then holds only the regions that differ, and
 * the application's mirror copies those and no more */
static void
wait_digests(struct pmrep_mirror *m, long long deadline)
{
	for (;;) {
		bool busy = false;
		mirror_lock(m);
		for (unsigned i = 0; i < m->n; i++) {
			const struct replica *r = &m->r[i];
			if (r->fenced && r->state != PMREP_REPLICA_FAILED &&
					(r->digest || r->digesting))
				busy = true;
		}
		mirror_unlock(m);
		if (!busy || repl_left_ms(deadline) == 0)
			return;
		usleep(2000);
	}
}

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
	if (cfg->n == 0 || cfg->key_len == 0) {
		PMREP_LOG_ERR("promote: the cfg needs the set's other replicas and a key");
		return PMREP_E_INVAL;
	}
	const char *path = pmrep_pmem_get_path(log);
	uint8_t *whole = pmem_whole_address(log);
	if (whole == pmrep_pmem_get_address(log)) {
		PMREP_LOG_ERR("promote: %s is not a pmrep log (open it with pmrep_log_open)",
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
	uint64_t own_psn = replica_pos_psn(whole, &own);
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
		return PMREP_E_STATE;
	}

	res->last_persist_seq = own_psn;
	res->old_generation = own.generation;

	/* (2) ask every replica, read-only */
	bool reached[PMREP_MIRROR_MAX_REPLICAS] = { false };
	uint64_t best_gen = own.generation, best_psn = own_psn;
	for (unsigned i = 0; i < cfg->n; i++) {
		struct pmrep_replica_info info;
		struct pmrep_replica_membership mb;
		int q = repl_query_named(cfg->r[i].addr, cfg->r[i].port,
				cfg->r[i].selector[0] ? cfg->r[i].selector : NULL,
				cfg->key, cfg->key_len, cfg->timeout_ms, &info, &mb);
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
		if (info.flags & PMREP_REPLICA_F_REMOVED) {
			/* not one the old primary's persists need: fencing it
			 * fences nothing (its next attach makes it a member) */
			PMREP_LOG(PMREP_LOG_NOTICE, "promote: replica %u (%s:%s) was removed from the set: not counted as fenced",
					i, cfg->r[i].addr, cfg->r[i].port);
			continue;
		}
		if (fresh) {
			/* of no set yet: the old primary completed no
			 * persist on it (it commits before it counts) */
			PMREP_LOG(PMREP_LOG_NOTICE, "promote: replica %u (%s:%s) is fresh: not counted as fenced",
					i, cfg->r[i].addr, cfg->r[i].port);
			continue;
		}
		reached[i] = true;
		res->reached++;
		take_membership(res, mb.set_size, mb.quorum, cfg->r[i].addr);
		if (info.generation > res->old_generation)
			res->old_generation = info.generation;
		if (more_current(info.generation, info.last_persist_seq,
				best_gen, best_psn)) {
			best_gen = info.generation;
			best_psn = info.last_persist_seq;
			res->more_current = (int)i;
		}
	}

	/* (3) the refusals: nothing written yet */
	if (res->more_current >= 0) {
		unsigned i = (unsigned)res->more_current;
		if (!(flags & PMREP_PROMOTE_FORCE_STALE)) {
			PMREP_LOG_ERR("promote: refused: replica %u (%s:%s) is more current (generation %llu, persist sequence %llu) than %s (generation %llu, persist sequence %llu): promote that one",
					i, cfg->r[i].addr, cfg->r[i].port,
					(unsigned long long)best_gen,
					(unsigned long long)best_psn, path,
					(unsigned long long)own.generation,
					(unsigned long long)own_psn);
			return PMREP_E_STATE;
		}
		PMREP_LOG_WARN("promote: forced: replica %u (%s:%s) is more current; its newer writes will be overwritten",
				i, cfg->r[i].addr, cfg->r[i].port);
	}
	unsigned f = res->needed - 1;
	if (f > res->reached) {
		if (!(flags & PMREP_PROMOTE_FORCE_FENCE)) {
			PMREP_LOG_ERR("promote: refused: %u of the set's %u replicas reached (this node included), %u needed to fence the old primary (n - k + 1 with quorum %u): it could still complete a persist",
					res->reached + 1, res->set_size, res->needed,
					res->set_quorum ? res->set_quorum : res->set_size);
			return PMREP_E_UNREACHABLE;
		}
		PMREP_LOG_WARN("promote: forced: %u of %u replicas to fence reached; the old primary may still complete a persist",
				res->reached, f);
		f = res->reached;
	}

	if (flags & PMREP_PROMOTE_DRY_RUN)
		return 0;

	/* (4)-(5): the mirror's new() records the generation in the log's
	 * header first (mirror_log_claim), then returns once f replicas
	 * committed it */
	struct pmrep_mirror_cfg c = *cfg;
	memcpy(c.uuid, own.uuid, PMREP_UUID_SIZE);
	c.generation = res->old_generation + 1;
	c.fence_count = f;
	c.fence_only = true;
	c.fence_set_size = res->set_size;
	c.fence_set_quorum = res->set_quorum;
	c.manual_recovery = false;
	struct pmrep_mirror *m = NULL;
	res->generation = c.generation;
	ret = pmrep_mirror_new(log, &c, &m);
	if (ret) {
		PMREP_LOG_ERR("promote: fencing at generation %llu failed: %s",
				(unsigned long long)c.generation, pmrep_err_to_str(ret));
		return ret;
	}
	res->primary_id = mstate_primary_id(m->state);
	if (flags & PMREP_PROMOTE_WAIT_SYNC)
		ret = wait_reached_in_sync(m, reached,
				repl_deadline(cfg->create_timeout_ms));
	else
		wait_digests(m, repl_deadline(cfg->create_timeout_ms));
	res->fenced = mirror_fenced_count(m);
	/* (6) a clean close: the sessions are handed over */
	int dret = pmrep_mirror_delete(&m);
	if (ret == 0)
		ret = dret;
	if (ret) {
		PMREP_LOG_ERR("promote: generation %llu recorded, %u replicas fenced; then: %s",
				(unsigned long long)res->generation, res->fenced,
				pmrep_err_to_str(ret));
		return ret;
	}
	PMREP_LOG(PMREP_LOG_NOTICE, "promote: %s is the primary at generation %llu (primary %016llx): %u of %u replicas reached, %u fenced (%u needed besides this node)",
			path, (unsigned long long)res->generation,
			(unsigned long long)res->primary_id, res->reached, cfg->n,
			res->fenced, res->needed - 1);
	return 0;
}
