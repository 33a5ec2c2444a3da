/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rig.h -- what rig-writer and rig-check share: the log's layout, the
 * record (its contents are a function of its sequence number alone, so the
 * checker can tell a right record from a wrong one without the source) and
 * CLOCK_MONOTONIC in milliseconds (the nemesis stamps its faults with the
 * same clock: network namespaces share it).
 *
 * Log file (the mirror's source; a replica holds the same image after its
 * PMREP_REPLICA_DATA_OFFSET-byte header), little-endian (x86):
 *   0    "PMREPRIG"        8  u32 version (1)   12 u32 record size
 *   16   uuid[16] (the replica set)             32 u64 generation
 *   40   u64 slots (records that fit)           48 u64 FNV-1a of bytes 0..47
 *   4096 slot 0, 4096 + record size: slot 1, ...
 * Record (record size bytes, a multiple of 8, >= 32):
 *   0 u64 seq (1, 2, ...)   8 u64 slot   16 payload (PRNG seeded by seq)
 *   size - 8: u64 FNV-1a of bytes 0 .. size - 9
 * The writer puts record `seq` in slot seq - 1: every record has its own
 * slot, the log never wraps.
 * Epoch: a writer at generation g writes records of epoch g - 1 (the
 * payload's seed mixes it in; epoch 0, generation 1, is the record as it
 * always was). After a failover the new primary's writer resumes after
 * the records its log holds: had it been promoted stale, its records in
 * the slots the lost records held differ from them, and the checker sees
 * the loss. A history line of epoch e > 0 carries it as a fourth field.
 * With --pmrep-log the log above is the data area of a pmrep log (the
 * replica layout: its PMREP_REPLICA_DATA_OFFSET-byte pmrep header first).
 */
#ifndef PMREP_RIG_H
#define PMREP_RIG_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#define RIG_HDR_SIZE 4096
#define RIG_MAGIC "PMREPRIG"
#define RIG_MIN_REC 32
#define RIG_MAX_REC 65536

static inline uint64_t
rig_fnv(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static inline uint64_t
rig_get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline void
rig_put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* splitmix64: the payload's generator */
static inline uint64_t
rig_mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* fill `rec` (size bytes) with record `seq` of `epoch` in `slot` */
static inline void
rig_record_make_epoch(uint8_t *rec, size_t size, uint64_t seq, uint64_t slot,
		uint64_t epoch)
{
	uint64_t s = seq * 0x2545f4914f6cdd1dull + epoch * 0x9e3779b97f4a7c15ull;
	rig_put64(rec, seq);
	rig_put64(rec + 8, slot);
	for (size_t off = 16; off < size - 8; off += 8)
		rig_put64(rec + off, rig_mix(&s));
	rig_put64(rec + size - 8, rig_fnv(rec, size - 8));
}

/* record `seq` of epoch 0 (generation 1) */
static inline void
rig_record_make(uint8_t *rec, size_t size, uint64_t seq, uint64_t slot)
{
	rig_record_make_epoch(rec, size, seq, slot, 0);
}

/* does slot `slot` hold a whole record of some epoch (its seq and its
 * checksum right)? */
static inline int
rig_record_valid(const uint8_t *rec, size_t size, uint64_t slot)
{
	return rig_get64(rec) == slot + 1 && rig_get64(rec + 8) == slot &&
		rig_get64(rec + size - 8) == rig_fnv(rec, size - 8);
}

/* milliseconds of CLOCK_MONOTONIC (with a fraction) */
static inline double
rig_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#endif /* PMREP_RIG_H */
