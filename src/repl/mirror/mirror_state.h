/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_state.h -- the mirror's record (docs/PROTOCOL.md "record"): its
 * primary id, per replica slot the replica id of the last attach it
 * committed (rec_id) and the out-of-sync set OOS[i], and the activity log
 * AL. Persistent in the mirror state file when one is configured, else in
 * memory for the mirror's life; the same calls either way.
 */
#ifndef PMREP_REPL_MIRROR_STATE_H
#define PMREP_REPL_MIRROR_STATE_H

#include <pmrep/repl.h>

#include "bitmap.h"

struct mirror_state;

/*
 * open the record: `path` NULL -- in memory, a fresh random primary id, no
 * rec_id, empty sets. Otherwise create the state file (mode 0600, its size
 * computed from data_size and region_size, a random primary id) or load
 * it; a loaded record folds AL into every OOS[i] (the writes a crash may
 * have left in flight; the slots with a rec_id need it, for the others it
 * costs at most a redundant copy), makes that durable and clears AL,
 * before it is used. A file of another set UUID (PMREP_E_INVAL), data size
 * (PMREP_E_RANGE), region size (PMREP_E_INVAL) or a newer generation
 * (PMREP_E_STATE) is refused, logged with both values, and left as it
 * was. An older generation is raised to `generation` (crash-atomic).
 * The file is locked (flock) while open: PMREP_E_BUSY when another
 * mirror holds it. Errors also: PMREP_E_MALFORMED (no valid slot; a file
 * size that does not fit its record), PMREP_E_INVAL (bad sizes), PMREP_E_NOMEM, the pmem
 * layer's (opening, creating, persisting: PMREP_E_PROVIDER ...). A file
 * this call created is removed again when it fails.
 */
int mstate_open(const char *path, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, uint64_t data_size, uint64_t region_size,
		struct mirror_state **st_ptr);
/* unmap / free (NULL ok); nothing is written */
void mstate_close(struct mirror_state **st_ptr);

/* persistent or in memory */
bool mstate_is_persistent(const struct mirror_state *st);
uint64_t mstate_primary_id(const struct mirror_state *st);

/* replica slot i's record: 16 bytes, all zero when there is none */
const uint8_t *mstate_rec_id(const struct mirror_state *st, unsigned i);
/* record slot i's replica id (crash-atomic, durable on return) */
int mstate_set_rec_id(struct mirror_state *st, unsigned i,
		const uint8_t id[PMREP_UUID_SIZE]);
/*
 * slot i's rec_seq: the header slot sequence its replica holds after the
 * last header write of ours it was sent (a COMMIT's claim, a CLOSE's
 * mark). A replica whose header has another sequence is not the one the
 * record covers -- restored from an old copy, or written by another --
 * and is resynced in full.
 */
uint64_t mstate_rec_seq(const struct mirror_state *st, unsigned i);
/* record slot i's replica id and rec_seq in one crash-atomic update
 * (durable on return; no write when both are as recorded) */
int mstate_set_rec(struct mirror_state *st, unsigned i,
		const uint8_t id[PMREP_UUID_SIZE], uint64_t seq);

/*
 * OOS[i], as the bitmap the mirror marks and clears (its words are in the
 * state file when persistent: a store there is the record's update, made
 * durable by mstate_oos_persist or before the AL bit covering it clears)
 */
struct repl_bitmap *mstate_oos(struct mirror_state *st, unsigned i);
/* make OOS[i]'s words covering [off, off + len) durable */
int mstate_oos_persist(struct mirror_state *st, unsigned i, uint64_t off,
		uint64_t len);

/* mark AL for [off, off + len): durable on return (before any write of
 * the range is posted); PMREP_E_PROVIDER when the persist failed */
int mstate_al_mark(struct mirror_state *st, uint64_t off, uint64_t len);
/*
 * clear AL when more than MSTATE_AL_LIMIT regions are marked, or `force`:
 * first the OOS[i] words of the marked regions are made durable, then AL's
 * bits are cleared and persisted. Call only with no persist step in flight.
 */
/* the persist sequence high-water mark: every sequence a mirror of this
 * record gave is below it (0: none recorded); set it durably (an in-memory
 * record: in memory) -- 0 or the slot write's error */
uint64_t mstate_psn_hw(const struct mirror_state *st);
int mstate_set_psn_hw(struct mirror_state *st, uint64_t hw);

#define MSTATE_AL_LIMIT 64
int mstate_al_clear(struct mirror_state *st, bool force);

/* persists of the record so far (bench: record writes per 1000 persists) */
uint64_t mstate_writes(const struct mirror_state *st);

#endif /* PMREP_REPL_MIRROR_STATE_H */
