/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replica_hdr.h -- the replica header: the one encoder and decoder of the
 * bytes a replica file / device DAX starts with (two crash-atomic slots in
 * its first PMREP_REPLICA_DATA_OFFSET bytes), and the one function that
 * writes an update of it.
 */
#ifndef PMREP_REPL_REPLICA_HDR_H
#define PMREP_REPL_REPLICA_HDR_H

#include <pmrep/repl.h>

/* bytes of one encoded slot */
#define REPLICA_HDR_ENC_SIZE 128
/* the header block: both slots live in it; the data area follows */
#define REPLICA_HDR_BLOCK PMREP_REPLICA_DATA_OFFSET
/* where slot i starts */
#define REPLICA_HDR_SLOTS 2
#define REPLICA_HDR_SLOT_OFF(i) ((size_t)(i) * 2048u)
/* the slot's 8-byte units (the failure-atomic unit of a store) */
#define REPLICA_HDR_UNITS (REPLICA_HDR_ENC_SIZE / 8)

struct replica_hdr {
	uint8_t uuid[PMREP_UUID_SIZE];	/* all zero: unclaimed */
	uint8_t replica_id[PMREP_UUID_SIZE]; /* all zero: none yet (v1) */
	uint64_t data_size;		/* bytes after PMREP_REPLICA_DATA_OFFSET */
	uint64_t generation;
	uint64_t owner;			/* primary id of the last committed attach */
	/* the last writer's run that claimed it (PROTOCOL.md "Position"):
	 * its generation, primary id and first persist sequence (its epoch
	 * << REPL_PSN_EPOCH_SHIFT); 0 0 0: none. A promotion's fence keeps
	 * them (it raises `generation`, names itself `owner`). */
	uint64_t run_gen;
	uint64_t run_owner;
	uint64_t claim_floor;
	/* the copy's position, from the live position record (decoded from
	 * the whole block only; a slot alone leaves them 0): the writer
	 * whose steps it holds, its generation and primary id (0 0: none
	 * recorded); the sequence is replica_pos_psn's. A COMMIT never
	 * changes them; replica_slot_decode leaves them as they were. */
	uint64_t pos_gen;
	uint64_t pos_owner;
	uint32_t flags;			/* PMREP_REPLICA_F_*, REPLICA_F_* */
	/* the membership of the writer that claimed it (PROTOCOL.md
	 * "Membership"): the replicas it mirrors to (0: not recorded) and
	 * its quorum (0: all) */
	unsigned set_size, set_quorum;
	/* where the state came from (decode) / went to (write) */
	uint64_t seq;			/* the slot's sequence; a v1 header: 0 */
	unsigned slot;			/* 0 or 1: the slot holding it */
	unsigned version;		/* 1 or 2: the slot's format */
};

/* write the REPLICA_HDR_ENC_SIZE-byte v2 encoding of `h` (with h->seq) to
 * `out` */
void replica_hdr_encode(const struct replica_hdr *h, uint8_t *out);

/*
 * decode one slot (REPLICA_HDR_ENC_SIZE bytes at `buf`, v1 or v2) into *h
 * (h->slot is left alone). Returns 0 or PMREP_E_MALFORMED (bad magic,
 * unknown version, bad slot length or data offset, bad checksum,
 * reserved bits / bytes set, data size 0 or too large). `quiet`: no log
 * line (the caller judges an invalid slot).
 */
int replica_slot_decode(const uint8_t *buf, struct replica_hdr *h, bool quiet);

/*
 * decode the header block (`len` bytes at `buf`, at least
 * REPLICA_HDR_BLOCK) into *h: the valid slot with the higher sequence (on
 * a tie, slot 0); an invalid slot is ignored when the other one is valid.
 * `file_size` > 0: also check that the header and its data area fill
 * exactly that many bytes.
 * PMREP_E_MALFORMED: truncated, or neither slot is valid (logged with slot
 * 0's reason). PMREP_E_RANGE: data size does not match file_size.
 */
int replica_hdr_decode(const uint8_t *buf, size_t len, uint64_t file_size,
		struct replica_hdr *h);

/*
 * the one update of a replica header mapped at `base` (the start of the
 * replica's mapping `pmem`): encode `next` into the slot NOT holding
 * *cur (the newest state) with sequence cur->seq + 1, store it, then
 * persist exactly that slot with pmrep_pmem_persist. On success *cur =
 * *next with the new slot, sequence and version 2. On failure *cur is left
 * as it was and pmrep_pmem_persist's error returned (PMREP_E_PROVIDER:
 * what reached the media is unknown; the old slot is still whole).
 * Not thread-safe per header.
 */
int replica_hdr_write(struct pmrep_pmem *pmem, uint8_t *base,
		struct replica_hdr *cur, const struct replica_hdr *next);

/*
 * The position records (PROTOCOL.md "Position"): two of REPLICA_POS_REC
 * bytes in the header block, outside both slots, at REPLICA_PSN_OFF and
 * REPLICA_PSN1_OFF: u64 persist sequence, u64 generation, u64 owner (of
 * the writer whose steps the copy holds through that sequence; record
 * 0's sequence is where headers of before positions kept their persist
 * sequence word). The slot's POSW1 says which one is live. Written by
 * the copy's target (and a writer's own log by its mirror) only.
 */
#define REPLICA_PSN_OFF 3968u
#define REPLICA_PSN1_OFF 4000u
#define REPLICA_POS_REC 24u
/* slot flags of the position (internal; beside PMREP_REPLICA_F_*): the
 * claiming run records a position at every step (per-step sequence on),
 * and the live position record is the second */
#define REPLICA_F_TRACKED (1u << 3)
#define REPLICA_F_POSW1 (1u << 4)
/* a writer's own log, claimed by its running mirror: it holds every step
 * of the claim's run (cleared by the mirror's clean close) */
#define REPLICA_F_PRIMARY (1u << 5)
/* the run ended with a clean close at the position: complete as of it
 * (set with CONSISTENT by CLOSE; a writer's COMMIT clears it, a fence
 * keeps it) */
#define REPLICA_F_RUN_CLOSED (1u << 6)
/* a promotion's catch-up is copying another copy into this one: it
 * vouches for nothing, and may hold no more than its position, until
 * the copy is complete and its position is the source's */
#define REPLICA_F_INCOMPLETE (1u << 7)
/* a persist sequence: epoch (the writer's run) in the high bits, step
 * number in the low REPL_PSN_EPOCH_SHIFT bits */
#define REPL_PSN_EPOCH_SHIFT 40
#define REPL_PSN_RUN_END(floor) ((floor) | ((1ull << REPL_PSN_EPOCH_SHIFT) - 1))

/* the live position record's persist sequence, of the header block at
 * `base` (h: its decoded header, which says which record is live) */
uint64_t replica_pos_psn(const uint8_t *base, const struct replica_hdr *h);

/*
 * record that the copy at `base` holds, durably, the steps of writer
 * (gen, owner) through `psn` (the caller made the step's data durable
 * first; psn 0: no position to record). Same writer as the live
 * record's: its sequence is raised (one 8-byte store, persisted; a psn
 * not above it changes nothing). Another writer: the record not live
 * takes the whole position (persisted), then one slot write names it
 * live (replica_hdr_write): a crash in between leaves the old position
 * whole. `set_flags` are set in the header in that same slot write (a
 * slot write of their own when no switch is needed; none when nothing
 * changes): a CLOSE's consistent mark keeps the header sequence the
 * writer's record expects. *cur is updated. Errors: pmrep_pmem_persist's
 * (what reached the media is unknown; the old position stands until the
 * slot write is durable).
 */
int replica_pos_record_flags(struct pmrep_pmem *pmem, uint8_t *base,
		struct replica_hdr *cur, uint64_t gen, uint64_t owner,
		uint64_t psn, uint32_t set_flags);
/* replica_pos_record_flags with no flags */
int replica_pos_record(struct pmrep_pmem *pmem, uint8_t *base,
		struct replica_hdr *cur, uint64_t gen, uint64_t owner,
		uint64_t psn);

/*
 * the copy at `base` now holds what the copy whose position is `src`
 * held (a promotion's catch-up copied it): its position becomes src's,
 * written whole into the record not live, then one slot write makes it
 * live with src's run and run flags and INCOMPLETE cleared. *cur is
 * updated. Errors: pmrep_pmem_persist's (the old state stands).
 */
int replica_pos_adopt(struct pmrep_pmem *pmem, uint8_t *base,
		struct replica_hdr *cur, const struct pmrep_replica_position *src);

/* record 0's persist sequence (a version 1 or a pre-position header: the
 * persist sequence word) */
uint64_t replica_psn_get(const uint8_t *base);
/* store `psn` into record 0's sequence and persist it
 * (pmrep_pmem_persist's error) */
int replica_psn_write(struct pmrep_pmem *pmem, uint8_t *base, uint64_t psn);

/* true when `len` bytes at `p` are all zero */
bool replica_all_zero(const uint8_t *p, size_t len);
/* true when the uuid (or replica id) is all zero */
bool replica_uuid_is_nil(const uint8_t *uuid);

/* Fletcher-64 over 32-bit little-endian words (len a multiple of 4) */
uint64_t replica_fletcher64(const uint8_t *buf, size_t len);

#endif /* PMREP_REPL_REPLICA_HDR_H */
