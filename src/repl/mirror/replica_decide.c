/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replica_decide.c -- the resync an attach needs (docs/PROTOCOL.md
 * "Mirror, attach"): full or incremental, from the header the ACCEPT
 * reports and what the mirror's record says of that slot.
 */
#include <string.h>

#include "common/testhook.h"
#include "mirror_int.h"
#include "mirror_state.h"

/*
 * the resync an attach needs, from the header H in ACCEPT
 * (docs/PROTOCOL.md "Mirror, attach"); *why says which rule decided
 */
enum repl_resync
replica_decide_resync(struct replica *r, const struct repl_accept *acc,
		const char **why)
{
	struct pmrep_mirror *m = r->m;
	bool fresh = (acc->target_flags & REPL_TF_FRESH) ||
		replica_uuid_is_nil(acc->uuid);
	bool same_gen = acc->generation == m->cfg.generation;
	bool ours = acc->owner == mstate_primary_id(m->state);
	bool consistent = (acc->hdr_flags & PMREP_REPLICA_F_CONSISTENT) != 0;

	if (pmrep_test_hooks.repl_commit_before_confirm) {
		/* the v1 rule the harness must catch: the owner field was
		 * written before our record covered the replica */
		if (!fresh && same_gen && (ours || consistent)) {
			*why = "v1 rule (test hook): same generation, owner ours or consistent";
			return REPL_RESYNC_INCREMENTAL;
		}
		*why = "v1 rule (test hook)";
		return REPL_RESYNC_FULL;
	}
	if (fresh) {
		*why = "the replica is unclaimed";
		return REPL_RESYNC_FULL;
	}
	if (memcmp(acc->uuid, m->cfg.uuid, PMREP_UUID_SIZE) != 0) {
		*why = "the replica holds another set";
		return REPL_RESYNC_FULL;
	}
	if (acc->generation < m->cfg.generation) {
		*why = "the replica holds an older generation";
		return REPL_RESYNC_FULL;
	}
	const uint8_t *rec = mstate_rec_id(m->state, r->idx);
	bool rec_match = !replica_uuid_is_nil(acc->replica_id) &&
		memcmp(rec, acc->replica_id, PMREP_UUID_SIZE) == 0;
	/*
	 * incremental only when our record vouches for this replica: it
	 * names its replica id and no other mirror committed an attach
	 * since (the owner is still our primary id -- a clean close of ours
	 * keeps it). A replica another mirror claimed, even one it left
	 * consistent, may hold that mirror's data: full.
	 */
	bool same_hdr = acc->hdr_seq == mstate_rec_seq(m->state, r->idx);
	if (rec_match && same_gen && ours && !same_hdr) {
		/* the replica our record names, but not the header we left
		 * it with: restored from an old copy (same replica id, older
		 * data), or written by someone else since */
		*why = "our record's replica, but its header is not the one we left it with (restored from an old copy, or written since by another)";
		return REPL_RESYNC_FULL;
	}
	if (rec_match && same_gen && ours) {
		*why = consistent ? "our record covers this replica (we left it consistent)" :
			"our record covers this replica (its owner is our primary id)";
		return REPL_RESYNC_INCREMENTAL;
	}
	/*
	 * a record kept in memory knows nothing of earlier runs: a replica
	 * left consistent at this generation is trusted as a complete copy
	 * (a (set UUID, generation) pair names one history of the data),
	 * and only the marks made since this mirror started are copied. A
	 * record file vouches only for what it recorded: no entry, full.
	 */
	if (replica_uuid_is_nil(rec) && consistent && same_gen &&
			!mstate_is_persistent(m->state)) {
		*why = "no record of this replica (the record is in memory only), consistent, same generation: trusted as a complete copy, the marks since this mirror started are copied";
		return REPL_RESYNC_INCREMENTAL;
	}
	*why = rec_match ? "our record's replica, but another mirror claimed it since" :
		!replica_uuid_is_nil(rec) ? "our record names another replica in this slot" :
		consistent ? "our record file has no entry for this replica (left consistent by a mirror this record does not know)" :
		"no record of this replica and it is not consistent";
	return REPL_RESYNC_FULL;
}

