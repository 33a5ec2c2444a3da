/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_log.c -- the header of the mirror's own log, when its mapping is
 * a pmrep log (pmrep_log_open): the same header every replica has, so that
 * the primary's file says what it is -- claimed at the mirror's generation
 * by its primary id while it mirrors, marked consistent (with the newest
 * persist sequence) by a clean delete -- and a log that was another
 * primary's replica is not taken over at that primary's generation.
 */
#include <string.h>

#include "common/log.h"
#include "mirror_int.h"
#include "mirror_state.h"
#include "pmem/pmem_view.h"
#include "repl/media/position.h"

int
mirror_log_claim(struct pmrep_mirror *m)
{
	uint8_t *whole = pmem_whole_address(m->pmem);
	if (whole == m->base)
		return 0;	/* a plain mapping: no header of ours */
	size_t size = pmem_whole_size(m->pmem);
	const char *path = pmrep_pmem_get_path(m->pmem);
	struct replica_hdr h;
	int ret = replica_hdr_decode(whole, size, size, &h);
	if (ret) {
		PMREP_LOG_ERR("mirror: the header of its log %s is not valid", path);
		return ret;
	}
	uint64_t id = mstate_primary_id(m->state);
	bool claimed = !replica_uuid_is_nil(h.uuid);
	if (claimed && memcmp(h.uuid, m->cfg.uuid, PMREP_UUID_SIZE) != 0) {
		PMREP_LOG_ERR("mirror: its log %s belongs to another replica set", path);
		return PMREP_E_MISMATCH;
	}
	if (claimed && h.generation > m->cfg.generation) {
		PMREP_LOG_ERR("mirror: its log %s is at generation %llu, newer than the mirror's %llu",
				path, (unsigned long long)h.generation,
				(unsigned long long)m->cfg.generation);
		return PMREP_E_STATE;
	}
	if (claimed && h.generation == m->cfg.generation && h.owner != 0 &&
			h.owner != id && !(h.flags & PMREP_REPLICA_F_CONSISTENT)) {
		PMREP_LOG_ERR("mirror: its log %s was claimed at generation %llu by primary %016llx, which did not close it (a replica opened in place?): split brain -- a promoted log mirrors at a higher generation",
				path, (unsigned long long)h.generation,
				(unsigned long long)h.owner);
		return PMREP_E_SPLIT_BRAIN;
	}
	/*
	 * The replicas the log's membership counts that this cfg cannot
	 * name (a promoted log: the old set less this node): they keep that
	 * membership, and one of them could be promoted without this
	 * mirror's replicas (PROTOCOL.md "Membership", across a restart).
	 * Remove them at run time first; a generation above the log's says
	 * the caller has seen to them.
	 */
	bool promoted = claimed && (h.flags & PMREP_REPLICA_F_PROMOTED);
	if (claimed && !m->cfg.fence_only && h.set_size != 0 &&
			m->cfg.n + (promoted ? 1u : 0u) < h.set_size &&
			m->cfg.generation <= h.generation) {
		PMREP_LOG_ERR("mirror: its log %s records a set of %u replicas%s; this cfg names %u: the ones left out keep that membership and could be promoted without this mirror's replicas -- remove them at run time first (pmrep_mirror_remove_replica), or, once they are gone for good, raise the generation",
				path, h.set_size, promoted ?
				" (this node one of them, promoted)" : "",
				m->cfg.n);
		return PMREP_E_STATE;
	}
	/* this run's epoch is above every one this log's header knows of
	 * (its position and its last claim, of this generation): a run of
	 * another record on this log (a restart without its state file, a
	 * promoted replica's file) begins above what it holds */
	uint64_t seen = h.claim_floor;
	uint64_t lpsn = replica_pos_psn(whole, &h);
	if (h.pos_gen == m->cfg.generation && lpsn > seen)
		seen = lpsn;
	if (claimed && h.generation == m->cfg.generation && seen != 0 &&
			repl_psn_epoch_floor(seen) > m->psn_base)
		m->psn_base = repl_psn_epoch_floor(seen);
	repl_position_from_hdr(&m->log_pos, &h, whole);
	struct replica_hdr next = h;
	memcpy(next.uuid, m->cfg.uuid, PMREP_UUID_SIZE);
	next.generation = m->cfg.generation;
	next.owner = id;
	/* a membership that needs more fencing than the one recorded is
	 * recorded here only once new() saw enough replicas commit it */
	unsigned k_new = m->cfg.quorum ? m->cfg.quorum : m->cfg.n;
	unsigned k_old = h.set_quorum ? h.set_quorum : h.set_size;
	m->prev_size = claimed ? h.set_size : 0;
	m->prev_quorum = h.set_quorum;
	m->members_grow = m->prev_size != 0 && !m->cfg.fence_only &&
		m->cfg.n - k_new > m->prev_size - k_old;
	/* a promotion's mirror records no membership of its own here: the
	 * application's mirror that follows compares its cfg with the old
	 * primary's */
	bool keep = m->members_grow || m->cfg.fence_only;
	next.set_size = keep ? h.set_size : m->cfg.n;
	next.set_quorum = keep ? h.set_quorum : m->cfg.quorum;
	next.flags &= ~(PMREP_REPLICA_F_CONSISTENT | PMREP_REPLICA_F_REMOVED |
			PMREP_REPLICA_F_PROMOTED | REPLICA_F_TRACKED |
			REPLICA_F_RUN_CLOSED);
	next.run_gen = m->cfg.generation;
	next.run_owner = id;
	/* the writer's own log holds every step of its run (PROTOCOL.md
	 * "Position": complete through its run's end until it closes) */
	next.flags |= REPLICA_F_PRIMARY;
	if (m->cfg.persist_seq)
		next.flags |= REPLICA_F_TRACKED;
	next.claim_floor = m->psn_base;
	if (m->cfg.fence_only)
		next.flags |= PMREP_REPLICA_F_PROMOTED;
	struct replica_hdr cur = h;
	m->log_undo_slot = h.slot ^ 1u;
	memcpy(m->log_undo, whole + REPLICA_HDR_SLOT_OFF(m->log_undo_slot),
			REPLICA_HDR_ENC_SIZE);
	ret = replica_hdr_write(m->pmem, whole, &cur, &next);
	if (ret) {
		PMREP_LOG_ERR("mirror: the claim of its log %s could not be written (%s)",
				path, pmrep_err_to_str(ret));
		return ret;
	}
	m->log_hdr = cur;
	m->log = true;
	PMREP_LOG_INFO("mirror: its log %s claimed at generation %llu as primary %016llx",
			path, (unsigned long long)next.generation,
			(unsigned long long)id);
	return 0;
}

void
mirror_log_unclaim(struct pmrep_mirror *m)
{
	if (!m->log)
		return;
	m->log = false;
	uint8_t *whole = pmem_whole_address(m->pmem);
	uint8_t *slot = whole + REPLICA_HDR_SLOT_OFF(m->log_undo_slot);
	memcpy(slot, m->log_undo, REPLICA_HDR_ENC_SIZE);
	int ret = pmrep_pmem_persist(m->pmem, slot, REPLICA_HDR_ENC_SIZE);
	if (ret)
		PMREP_LOG_WARN("mirror: the claim of its log %s could not be taken back (%s): it reads as claimed by a writer that did not close it",
				pmrep_pmem_get_path(m->pmem), pmrep_err_to_str(ret));
	else
		PMREP_LOG_INFO("mirror: the claim of its log %s taken back (the mirror was refused)",
				pmrep_pmem_get_path(m->pmem));
}

int
mirror_log_members(struct pmrep_mirror *m, unsigned set_size, unsigned quorum)
{
	if (!m->log)
		return 0;
	struct replica_hdr next = m->log_hdr;
	next.set_size = set_size;
	next.set_quorum = quorum;
	int ret = replica_hdr_write(m->pmem, pmem_whole_address(m->pmem),
			&m->log_hdr, &next);
	if (ret)
		PMREP_LOG_ERR("mirror: the membership could not be recorded in its log %s (%s)",
				pmrep_pmem_get_path(m->pmem), pmrep_err_to_str(ret));
	return ret;
}

void
mirror_log_close(struct pmrep_mirror *m)
{
	if (!m->log)
		return;
	uint8_t *whole = pmem_whole_address(m->pmem);
	const char *path = pmrep_pmem_get_path(m->pmem);
	/* the position of the newest step (every one issued is durable
	 * here), then the mark: complete as of that position */
	m->log_hdr.flags &= ~REPLICA_F_PRIMARY;	/* written with the mark */
	int ret = replica_pos_record_flags(m->pmem, whole, &m->log_hdr,
			m->cfg.generation, mstate_primary_id(m->state),
			mirror_newest_psn(m),
			PMREP_REPLICA_F_CONSISTENT | REPLICA_F_RUN_CLOSED);
	if (ret)
		PMREP_LOG_WARN("mirror: its log %s could not be marked consistent (%s)",
				path, pmrep_err_to_str(ret));
	m->log = false;
}

int
mirror_log_attach_check(struct pmrep_mirror *m, unsigned idx, const char *addr,
		const char *port, const struct repl_accept *acc)
{
	if (!m->log || (acc->target_flags & REPL_TF_FRESH) ||
			memcmp(acc->uuid, m->cfg.uuid, PMREP_UUID_SIZE) != 0)
		return 0;
	/* a log of no set yet starts a history (the set's UUID and
	 * generation say which: README "one history per set and
	 * generation") */
	if (m->log_pos.flags & PMREP_POSITION_F_FRESH)
		return 0;
	/* the log must hold every completed persist the replica may hold */
	struct pmrep_replica_position two[2] = { m->log_pos };
	repl_position_from_accept(&two[1], acc);
	/* a replica that holds steps of this very run (it fell out and
	 * comes back): this log, the run's own, holds every step the run
	 * issued -- m->log_pos is the log's position before the run began */
	if (two[1].generation == m->cfg.generation &&
			two[1].owner == mstate_primary_id(m->state) &&
			two[1].seq >= m->psn_base)
		return 0;
	unsigned best = 0;
	bool complete[2];
	int c = pmrep_position_decide(two, 2, &best, NULL, complete);
	if (c == 0 && complete[0])
		return 0;
	char ps[320];
	repl_position_str(&two[1], ps, sizeof(ps));
	PMREP_LOG_ERR("replica %u (%s:%s): not attached: it may hold persists this mirror's log %s lacks (%s): promote it, or let this node catch up from it (pmrep promote)",
			idx, addr, port, pmrep_pmem_get_path(m->pmem), ps);
	return c == PMREP_E_SPLIT_BRAIN ? PMREP_E_SPLIT_BRAIN : PMREP_E_STATE;
}
