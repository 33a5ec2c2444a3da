/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_hdr.c -- the replica header (v2: two crash-atomic slots):
 * slot encoder and strict decoder, the choice between the slots, every
 * torn image of an update (T29), a version 1 header read and upgraded,
 * the one update function's persist and its failure, the position
 * records (24 bytes at 3968 and 4000, the live one named by POSW1) and
 * their switch, and pmrep_replica_read_info on real files.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/testhook.h"
#include "common/wire.h"
#include "repl/media/replica_hdr.h"

#define DATA (1u << 20)
#define S1 REPLICA_HDR_SLOT_OFF(1)

/* a slot's state (the position's writer is not in a slot: 0 0) */
static struct replica_hdr
sample(void)
{
	struct replica_hdr h = { .data_size = DATA, .generation = 7,
		.owner = 0x1122334455667788ull, .run_gen = 6,
		.run_owner = 0x99, .claim_floor = 3ull << 40,
		.flags = PMREP_REPLICA_F_CONSISTENT, .seq = 5,
		.set_size = 3, .set_quorum = 2 };
	for (int i = 0; i < PMREP_UUID_SIZE; i++) {
		h.uuid[i] = (uint8_t)(0xa0 + i);
		h.replica_id[i] = (uint8_t)(0x10 + i);
	}
	return h;
}

/* the fields a slot holds are the same */
static bool
same_slot(const struct replica_hdr *a, const struct replica_hdr *b)
{
	return memcmp(a->uuid, b->uuid, PMREP_UUID_SIZE) == 0 &&
		memcmp(a->replica_id, b->replica_id, PMREP_UUID_SIZE) == 0 &&
		a->data_size == b->data_size && a->generation == b->generation &&
		a->owner == b->owner && a->run_gen == b->run_gen &&
		a->run_owner == b->run_owner && a->claim_floor == b->claim_floor &&
		a->flags == b->flags && a->seq == b->seq &&
		a->set_size == b->set_size && a->set_quorum == b->set_quorum;
}

/* the persistent state of two headers is the same: the slot, and the
 * live position record's writer */
static bool
same_state(const struct replica_hdr *a, const struct replica_hdr *b)
{
	return same_slot(a, b) && a->pos_gen == b->pos_gen &&
		a->pos_owner == b->pos_owner;
}

/* a position record at `off` of the block */
static void
put_rec(uint8_t *blk, size_t off, uint64_t psn, uint64_t gen, uint64_t owner)
{
	pmrep_put_le64(blk + off, psn);
	pmrep_put_le64(blk + off + 8, gen);
	pmrep_put_le64(blk + off + 16, owner);
}

/* the position record at `off` holds (psn, gen, owner) */
static void
assert_rec(const uint8_t *blk, size_t off, uint64_t psn, uint64_t gen,
		uint64_t owner)
{
	assert_int_equal(pmrep_get_le64(blk + off), psn);
	assert_int_equal(pmrep_get_le64(blk + off + 8), gen);
	assert_int_equal(pmrep_get_le64(blk + off + 16), owner);
}

/* re-seal a modified slot so that only the intended fault remains */
static void
reseal(uint8_t *b)
{
	pmrep_put_le64(b + 120, replica_fletcher64(b, 120));
}

/* a version 1 header slot, as pmrep before protocol v2 wrote it */
static void
v1_encode(const struct replica_hdr *h, uint64_t attach_id, uint8_t *out)
{
	memset(out, 0, REPLICA_HDR_ENC_SIZE);
	memcpy(out, "PMREPRPL", 8);
	pmrep_put_le16(out + 8, 1);
	pmrep_put_le16(out + 10, 128);
	pmrep_put_le32(out + 12, h->flags);
	memcpy(out + 16, h->uuid, PMREP_UUID_SIZE);
	pmrep_put_le64(out + 32, PMREP_REPLICA_DATA_OFFSET);
	pmrep_put_le64(out + 40, h->data_size);
	pmrep_put_le64(out + 48, h->generation);
	pmrep_put_le64(out + 56, attach_id);
	reseal(out);
}

/* a header block holding `h` in slot `slot` (the other slot zero) */
static void
block_with(uint8_t *blk, const struct replica_hdr *h, unsigned slot)
{
	memset(blk, 0, REPLICA_HDR_BLOCK);
	replica_hdr_encode(h, blk + REPLICA_HDR_SLOT_OFF(slot));
}

static void
slot_roundtrip_keeps_every_field_at_fixed_offsets(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t b[REPLICA_HDR_ENC_SIZE], b0[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b0);
	/* the position's writer is no slot field: the encoding ignores it */
	in.pos_gen = 0x5555;
	in.pos_owner = 0x7777;
	replica_hdr_encode(&in, b);
	assert_memory_equal(b, b0, sizeof(b));
	in.pos_gen = in.pos_owner = 0;
	assert_memory_equal(b, "PMREPRP2", 8);
	assert_int_equal(pmrep_get_le16(b + 8), 2);
	assert_int_equal(pmrep_get_le16(b + 10), 128);
	assert_int_equal(pmrep_get_le32(b + 12), PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(pmrep_get_le64(b + 16), 5);
	assert_int_equal(b[24], 0xa0);
	assert_int_equal(b[40], 0x10);
	assert_int_equal(pmrep_get_le64(b + 56), 4096);
	assert_int_equal(pmrep_get_le64(b + 64), DATA);
	assert_int_equal(pmrep_get_le64(b + 72), 7);
	assert_int_equal(pmrep_get_le64(b + 80), 0x1122334455667788ull);
	assert_int_equal(pmrep_get_le64(b + 88), 6);		/* run generation */
	assert_int_equal(pmrep_get_le16(b + 96), 3);
	assert_int_equal(pmrep_get_le16(b + 98), 2);
	assert_int_equal(pmrep_get_le64(b + 100), 0x99);	/* run owner */
	assert_int_equal(pmrep_get_le64(b + 108), 3ull << 40);	/* claim floor */
	for (int i = 116; i < 120; i++)
		assert_int_equal(b[i], 0);
	assert_int_equal(pmrep_get_le64(b + 120), replica_fletcher64(b, 120));
	memset(&out, 0, sizeof(out));
	assert_int_equal(replica_slot_decode(b, &out, false), 0);
	assert_true(same_state(&in, &out));
	assert_int_equal(out.version, 2);
	assert_int_equal(out.run_gen, 6);
	assert_int_equal(out.run_owner, 0x99);
	assert_int_equal(out.claim_floor, 3ull << 40);
	/* a slot alone names no position writer */
	assert_int_equal(out.pos_gen, 0);
	assert_int_equal(out.pos_owner, 0);

	/* wide values in every run field, and the position's flags
	 * (TRACKED 8, POSW1 16, PRIMARY 32, RUN_CLOSED 64) */
	assert_int_equal(REPLICA_F_TRACKED, 8);
	assert_int_equal(REPLICA_F_POSW1, 16);
	assert_int_equal(REPLICA_F_PRIMARY, 32);
	assert_int_equal(REPLICA_F_RUN_CLOSED, 64);
	struct replica_hdr wide = sample();
	wide.run_gen = 0x8182838485868788ull;
	wide.run_owner = 0x9192939495969798ull;
	wide.claim_floor = 0xa1a2a3a4a5a6a7a8ull;
	wide.flags = PMREP_REPLICA_F_CONSISTENT | PMREP_REPLICA_F_REMOVED |
		PMREP_REPLICA_F_PROMOTED | REPLICA_F_TRACKED | REPLICA_F_POSW1 |
		REPLICA_F_PRIMARY | REPLICA_F_RUN_CLOSED;
	replica_hdr_encode(&wide, b);
	assert_int_equal(pmrep_get_le32(b + 12), 0x7f);
	assert_int_equal(pmrep_get_le64(b + 88), 0x8182838485868788ull);
	assert_int_equal(pmrep_get_le64(b + 100), 0x9192939495969798ull);
	assert_int_equal(pmrep_get_le64(b + 108), 0xa1a2a3a4a5a6a7a8ull);
	/* the neighbours are untouched */
	assert_int_equal(pmrep_get_le16(b + 96), 3);
	assert_int_equal(pmrep_get_le16(b + 98), 2);
	for (int i = 116; i < 120; i++)
		assert_int_equal(b[i], 0);
	memset(&out, 0, sizeof(out));
	assert_int_equal(replica_slot_decode(b, &out, false), 0);
	assert_true(same_state(&wide, &out));
	/* RUN_CLOSED alone */
	wide = sample();
	wide.flags = REPLICA_F_RUN_CLOSED;
	replica_hdr_encode(&wide, b);
	assert_int_equal(pmrep_get_le32(b + 12), 0x40);
	assert_int_equal(replica_slot_decode(b, &out, false), 0);
	assert_int_equal(out.flags, REPLICA_F_RUN_CLOSED);
	/* no run (0 0) and no claim floor */
	wide = sample();
	wide.run_gen = wide.run_owner = wide.claim_floor = 0;
	replica_hdr_encode(&wide, b);
	for (int i = 100; i < 120; i++)
		assert_int_equal(b[i], 0);
	assert_int_equal(pmrep_get_le64(b + 88), 0);
	assert_int_equal(replica_slot_decode(b, &out, false), 0);
	assert_true(same_state(&wide, &out));
	replica_hdr_encode(&in, b);

	uint8_t blk[REPLICA_HDR_BLOCK];
	block_with(blk, &in, 1);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk),
			PMREP_REPLICA_DATA_OFFSET + DATA, &out), 0);
	assert_true(same_state(&in, &out));	/* records zero: no position */
	assert_int_equal(out.slot, 1);
	/* file size 0: not checked */
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), 0);

	/* the position records: 24 bytes each (persist sequence, generation,
	 * owner) at 3968 and 4000, outside both slots, in the block */
	assert_int_equal(REPLICA_PSN_OFF, 3968);
	assert_int_equal(REPLICA_PSN1_OFF, 4000);
	assert_int_equal(REPLICA_POS_REC, 24);
	assert_true(REPLICA_PSN_OFF + REPLICA_POS_REC <= REPLICA_PSN1_OFF);
	assert_true(REPLICA_PSN1_OFF + REPLICA_POS_REC <= REPLICA_HDR_BLOCK);
	assert_true(REPLICA_PSN_OFF >= S1 + REPLICA_HDR_ENC_SIZE);
	put_rec(blk, REPLICA_PSN_OFF, 0x10, 0x8182838485868788ull,
			0x9192939495969798ull);
	put_rec(blk, REPLICA_PSN1_OFF, 0x20, 0xa1a2a3a4a5a6a7a8ull,
			0xb1b2b3b4b5b6b7b8ull);
	/* POSW1 clear: the record at 3968 is live */
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), 0);
	assert_true(same_slot(&in, &out));	/* the run is the slot's */
	assert_int_equal(out.pos_gen, 0x8182838485868788ull);
	assert_int_equal(out.pos_owner, 0x9192939495969798ull);
	assert_int_equal(replica_pos_psn(blk, &out), 0x10);
	assert_int_equal(out.run_gen, 6);
	assert_int_equal(out.run_owner, 0x99);
	/* POSW1 set: the record at 4000 */
	struct replica_hdr w1 = in;
	w1.flags |= REPLICA_F_POSW1;
	replica_hdr_encode(&w1, blk + S1);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), 0);
	assert_true(same_slot(&w1, &out));
	assert_int_equal(out.pos_gen, 0xa1a2a3a4a5a6a7a8ull);
	assert_int_equal(out.pos_owner, 0xb1b2b3b4b5b6b7b8ull);
	assert_int_equal(replica_pos_psn(blk, &out), 0x20);
	/* the records' bytes are no slot's: every value decodes */
	memset(blk + REPLICA_PSN_OFF, 0xff, REPLICA_HDR_BLOCK - REPLICA_PSN_OFF);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), 0);
	assert_int_equal(out.pos_gen, UINT64_MAX);
	assert_int_equal(out.pos_owner, UINT64_MAX);
	assert_true(same_slot(&w1, &out));
}

static void
decoder_takes_the_valid_slot_with_the_higher_sequence(void **state)
{
	(void)state;
	struct replica_hdr a = sample(), b = sample(), out;
	b.seq = 6;
	b.generation = 8;
	uint8_t blk[REPLICA_HDR_BLOCK];
	memset(blk, 0, sizeof(blk));
	replica_hdr_encode(&a, blk);
	replica_hdr_encode(&b, blk + S1);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), 0);
	assert_int_equal(out.slot, 1);
	assert_int_equal(out.generation, 8);
	/* the same, the other way round */
	replica_hdr_encode(&b, blk);
	replica_hdr_encode(&a, blk + S1);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), 0);
	assert_int_equal(out.slot, 0);
	assert_int_equal(out.seq, 6);
	/* the newer slot torn (checksum): the older one stands */
	blk[70] ^= 1;
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), 0);
	assert_int_equal(out.slot, 1);
	assert_int_equal(out.seq, 5);
	/* both invalid */
	blk[S1 + 3] ^= 0x20;
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), PMREP_E_MALFORMED);
	memset(blk, 0, sizeof(blk));	/* a zeroed, never formatted file */
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), PMREP_E_MALFORMED);
	/* a block shorter than 4 KiB */
	block_with(blk, &a, 0);
	assert_int_equal(replica_hdr_decode(blk, REPLICA_HDR_BLOCK - 1, 0, &out), PMREP_E_MALFORMED);
	assert_int_equal(replica_hdr_decode(blk, 128, 0, &out), PMREP_E_MALFORMED);
	assert_int_equal(replica_hdr_decode(NULL, sizeof(blk), 0, &out), PMREP_E_MALFORMED);
}

/*
 * T29 (/work/shared/cases/T29-metadata-crash-atomic.md): an update is
 * one 128-byte slot, 16 8-byte units, persisted in one go; a crash may
 * keep any subset of its units. Every such image must decode to the old
 * state or to the new one -- never to a mixture, never to nothing. Three
 * starting points: the slot written over held nothing (first update), an
 * older state (steady state: seq n-1 under seq n+1), a v1 header (the
 * upgrade writes the slot at 2048). The update also switches the live
 * position record (POSW1): the records are written before it and stay
 * put, so the image names the old record or the new one with its slot --
 * a torn slot never pairs one slot's run with the other's position.
 */
static void
T29_every_torn_header_update_decodes_to_the_old_or_the_new_state(void **state)
{
	(void)state;
	static uint8_t blk[REPLICA_HDR_BLOCK], img[REPLICA_HDR_BLOCK];
	for (int scenario = 0; scenario < 3; scenario++) {
		struct replica_hdr old = sample(), older = sample(), cur, next;
		memset(blk, 0, sizeof(blk));
		put_rec(blk, REPLICA_PSN_OFF, (3ull << 40) | 5, 6, 0x99);
		put_rec(blk, REPLICA_PSN1_OFF, (9ull << 40) | 1, 11,
				0xabcdef01ull);
		if (scenario == 2) {
			old.flags = PMREP_REPLICA_F_CONSISTENT;
			v1_encode(&old, 0xabcdull, blk);
		} else {
			replica_hdr_encode(&old, blk);		/* seq 5 at 0 */
			if (scenario == 1) {
				older.seq = 4;
				older.generation = 6;
				older.owner = 0x55;
				older.flags = 0;
				replica_hdr_encode(&older, blk + S1);
			}
		}
		assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &cur), 0);
		assert_int_equal(cur.slot, 0);
		/* the old position: record 0's writer (a v1 header has none) */
		assert_int_equal(cur.pos_gen, scenario == 2 ? 0 : 6);
		assert_int_equal(cur.pos_owner, scenario == 2 ? 0 : 0x99);
		struct replica_hdr before = cur;
		/* the update: a claim (other uuid, generation, owner, flags) */
		next = cur;
		memset(next.uuid, 0xcc, PMREP_UUID_SIZE);
		memset(next.replica_id, 0x77, PMREP_UUID_SIZE);
		next.generation = 12;
		next.owner = 0xfeedfaceull;
		next.flags = REPLICA_F_TRACKED | REPLICA_F_POSW1;
		next.run_gen = 12;
		next.run_owner = 0xfeedfaceull;
		next.claim_floor = 9ull << 40;
		/* what the block says with that slot: record 1's writer */
		next.pos_gen = 11;
		next.pos_owner = 0xabcdef01ull;
		next.slot = 1;
		next.seq = cur.seq + 1;
		uint8_t enc[REPLICA_HDR_ENC_SIZE];
		replica_hdr_encode(&next, enc);

		unsigned n_old = 0, n_new = 0;
		for (unsigned mask = 0; mask < (1u << REPLICA_HDR_UNITS); mask++) {
			memcpy(img, blk, sizeof(img));
			for (unsigned u = 0; u < REPLICA_HDR_UNITS; u++)
				if (mask & (1u << u))
					memcpy(img + S1 + 8 * u, enc + 8 * u, 8);
			struct replica_hdr got;
			assert_int_equal(replica_hdr_decode(img, sizeof(img), 0, &got), 0);
			if (same_state(&got, &before)) {
				n_old++;
				assert_int_equal(replica_pos_psn(img, &got),
						(3ull << 40) | 5);
			} else {
				assert_true(same_state(&got, &next));
				n_new++;
				assert_int_equal(replica_pos_psn(img, &got),
						(9ull << 40) | 1);
			}
		}
		/* only the whole slot publishes the new state: the images
		 * that hold every unit of it (units the slot held already
		 * with the same bytes may or may not be rewritten) */
		unsigned same = 0;
		for (unsigned u = 0; u < REPLICA_HDR_UNITS; u++)
			same += memcmp(blk + S1 + 8 * u, enc + 8 * u, 8) == 0;
		assert_true(same < REPLICA_HDR_UNITS - 4);	/* sequence, checksum, claim differ */
		assert_int_equal(n_new, 1u << same);
		assert_int_equal(n_old, (1u << REPLICA_HDR_UNITS) - n_new);
	}
}

static void
v1_header_reads_as_sequence_0_and_upgrades_into_the_slot_at_2048(void **state)
{
	(void)state;
	char path[] = "/dev/shm/pmrep-test-repl-hdr-v1-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct replica_hdr in = sample(), got;
	uint8_t v1[REPLICA_HDR_ENC_SIZE];
	v1_encode(&in, 0x4242ull, v1);
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + DATA), 0);
	assert_int_equal(pwrite(fd, v1, sizeof(v1), 0), (ssize_t)sizeof(v1));
	close(fd);

	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	assert_int_equal(info.seq, 0);
	assert_int_equal(info.owner, 0x4242);
	assert_int_equal(info.generation, 7);
	assert_int_equal(info.flags, PMREP_REPLICA_F_CONSISTENT);
	uint8_t zero[PMREP_UUID_SIZE] = { 0 };
	assert_memory_equal(info.replica_id, zero, PMREP_UUID_SIZE);
	assert_memory_equal(info.uuid, in.uuid, PMREP_UUID_SIZE);

	struct pmrep_pmem *pmem = NULL;
	assert_int_equal(pmrep_pmem_open(path, 0, 0, PMREP_PMEM_GRANULARITY_PAGE, &pmem), 0);
	uint8_t *base = pmrep_pmem_get_address(pmem);
	assert_int_equal(replica_hdr_decode(base, pmrep_pmem_get_size(pmem),
			pmrep_pmem_get_size(pmem), &got), 0);
	assert_int_equal(got.version, 1);
	assert_int_equal(got.slot, 0);
	assert_int_equal(got.seq, 0);
	struct replica_hdr next = got;
	memset(next.replica_id, 0x99, PMREP_UUID_SIZE);
	next.flags = 0;
	assert_int_equal(replica_hdr_write(pmem, base, &got, &next), 0);
	assert_int_equal(got.slot, 1);
	assert_int_equal(got.seq, 1);
	assert_int_equal(got.version, 2);
	/* the v1 slot is untouched: valid until the new one is */
	assert_memory_equal(base, v1, sizeof(v1));
	assert_memory_equal(base + S1, "PMREPRP2", 8);
	/* a second update goes back to slot 0, over the v1 slot */
	next = got;
	next.flags = PMREP_REPLICA_F_CONSISTENT;
	assert_int_equal(replica_hdr_write(pmem, base, &got, &next), 0);
	assert_int_equal(got.slot, 0);
	assert_int_equal(got.seq, 2);
	assert_memory_equal(base, "PMREPRP2", 8);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);

	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	assert_int_equal(info.seq, 2);
	assert_int_equal(info.flags, PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(info.owner, 0x4242);
	assert_int_equal(info.replica_id[0], 0x99);
	unlink(path);
}

static int persist_calls;
static const void *persist_ptr;
static size_t persist_len;
static int persist_result;

static int
persist_hook(struct pmrep_pmem *pmem, const void *ptr, size_t len)
{
	(void)pmem;
	persist_calls++;
	persist_ptr = ptr;
	persist_len = len;
	return persist_result;
}

static void
header_write_persists_exactly_the_new_slot_and_keeps_state_on_failure(void **state)
{
	(void)state;
	char path[] = "/dev/shm/pmrep-test-repl-hdr-w-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct replica_hdr in = sample(), cur;
	uint8_t blk[REPLICA_HDR_BLOCK];
	block_with(blk, &in, 0);
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + DATA), 0);
	assert_int_equal(pwrite(fd, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));
	close(fd);
	struct pmrep_pmem *pmem = NULL;
	assert_int_equal(pmrep_pmem_open(path, 0, 0, PMREP_PMEM_GRANULARITY_PAGE, &pmem), 0);
	uint8_t *base = pmrep_pmem_get_address(pmem);
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &cur), 0);

	pmrep_test_hooks.pmem_persist = persist_hook;
	persist_calls = 0;
	persist_result = 0;
	struct replica_hdr next = cur;
	next.generation = 8;
	assert_int_equal(replica_hdr_write(pmem, base, &cur, &next), 0);
	assert_int_equal(persist_calls, 1);
	assert_ptr_equal(persist_ptr, base + S1);
	assert_int_equal(persist_len, REPLICA_HDR_ENC_SIZE);
	assert_int_equal(cur.seq, 6);
	assert_int_equal(cur.generation, 8);

	/* a failed persist: its error, and the state stays the old one */
	persist_result = PMREP_E_PROVIDER;
	struct replica_hdr before = cur;
	next = cur;
	next.generation = 9;
	assert_int_equal(replica_hdr_write(pmem, base, &cur, &next), PMREP_E_PROVIDER);
	assert_int_equal(persist_calls, 2);
	assert_ptr_equal(persist_ptr, base);
	assert_true(same_state(&cur, &before));
	assert_int_equal(cur.slot, 1);
	pmrep_test_hooks.pmem_persist = NULL;
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	unlink(path);
}

/* every persist, in order, and the header block as it was at the call
 * (what a crash right after the store, before the flush, could leave) */
#define LOGN 8
static struct {
	const void *ptr;
	size_t len;
	uint8_t blk[REPLICA_HDR_BLOCK];
} plog[LOGN];
static unsigned plog_n;
static const uint8_t *plog_base;
static int plog_fail_at = -1;	/* that call fails (PMREP_E_PROVIDER) */

static int
log_hook(struct pmrep_pmem *pmem, const void *ptr, size_t len)
{
	(void)pmem;
	unsigned i = plog_n++;
	if (i < LOGN) {
		plog[i].ptr = ptr;
		plog[i].len = len;
		memcpy(plog[i].blk, plog_base, REPLICA_HDR_BLOCK);
	}
	return (int)i == plog_fail_at ? PMREP_E_PROVIDER : 0;
}

/* the header as the block at a logged persist decodes */
static struct replica_hdr
at_call(unsigned i, uint64_t *psn)
{
	struct replica_hdr h;
	assert_int_equal(replica_hdr_decode(plog[i].blk, REPLICA_HDR_BLOCK, 0, &h), 0);
	*psn = replica_pos_psn(plog[i].blk, &h);
	return h;
}

/*
 * the position: the same writer raises the live record's sequence (one
 * 8-byte persist, never down; its generation and owner untouched);
 * another writer takes the whole record not live (24 bytes, persisted),
 * then one slot write names it (POSW1) -- the old position stands until
 * that slot is durable; a failed persist of the record leaves the old
 * position and writes no slot. The run (run generation, run owner, claim
 * floor) is never the position's business.
 */
static void
position_record_raises_the_live_word_or_switches_words_for_a_new_writer(void **state)
{
	(void)state;
	char path[] = "/dev/shm/pmrep-test-repl-hdr-pos-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct replica_hdr in = sample(), cur, got;
	in.flags = REPLICA_F_TRACKED;
	uint64_t f = in.claim_floor;
	uint8_t blk[REPLICA_HDR_BLOCK];
	block_with(blk, &in, 0);
	put_rec(blk, REPLICA_PSN_OFF, f | 10, 6, 0x99);
	/* the record not live holds rubbish: the switch writes all of it */
	memset(blk + REPLICA_PSN1_OFF, 0xee, REPLICA_POS_REC);
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + DATA), 0);
	assert_int_equal(pwrite(fd, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));
	close(fd);
	struct pmrep_pmem *pmem = NULL;
	assert_int_equal(pmrep_pmem_open(path, 0, 0, PMREP_PMEM_GRANULARITY_PAGE, &pmem), 0);
	uint8_t *base = pmrep_pmem_get_address(pmem);
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &cur), 0);
	assert_int_equal(cur.pos_gen, 6);
	assert_int_equal(cur.pos_owner, 0x99);
	assert_int_equal(replica_pos_psn(base, &cur), f | 10);
	assert_int_equal(replica_psn_get(base), f | 10);

	pmrep_test_hooks.pmem_persist = log_hook;
	plog_base = base;
	plog_n = 0;
	plog_fail_at = -1;
	/* the same writer (6, 0x99): the live sequence goes up, one persist
	 * of its 8 bytes; the record's writer stays */
	assert_int_equal(replica_pos_record(pmem, base, &cur, 6, 0x99, f | 11), 0);
	assert_int_equal(plog_n, 1);
	assert_ptr_equal(plog[0].ptr, base + REPLICA_PSN_OFF);
	assert_int_equal(plog[0].len, 8);
	assert_rec(base, REPLICA_PSN_OFF, f | 11, 6, 0x99);
	assert_int_equal(replica_pos_psn(base, &cur), f | 11);
	assert_int_equal(cur.seq, 5);		/* no slot write */
	/* not above it: nothing */
	assert_int_equal(replica_pos_record(pmem, base, &cur, 6, 0x99, f | 11), 0);
	assert_int_equal(replica_pos_record(pmem, base, &cur, 6, 0x99, f | 3), 0);
	/* no sequence: nothing */
	assert_int_equal(replica_pos_record(pmem, base, &cur, 9, 0x42, 0), 0);
	assert_int_equal(plog_n, 1);
	assert_int_equal(replica_pos_psn(base, &cur), f | 11);
	assert_int_equal(cur.pos_gen, 6);

	/* another writer (7, 0x1122...): the whole second record first,
	 * then the slot naming it (POSW1) -- two persists, in that order */
	uint64_t f2 = 4ull << 40;
	assert_int_equal(replica_pos_record(pmem, base, &cur, 7,
			0x1122334455667788ull, f2 | 1), 0);
	assert_int_equal(plog_n, 3);
	assert_ptr_equal(plog[1].ptr, base + REPLICA_PSN1_OFF);
	assert_int_equal(plog[1].len, REPLICA_POS_REC);
	assert_ptr_equal(plog[2].ptr, base + S1);
	assert_int_equal(plog[2].len, REPLICA_HDR_ENC_SIZE);
	/* at the record's persist the record is whole and the slot still
	 * names the old one: the old position stands */
	assert_rec(plog[1].blk, REPLICA_PSN1_OFF, f2 | 1, 7, 0x1122334455667788ull);
	uint64_t psn;
	got = at_call(1, &psn);
	assert_int_equal(got.seq, 5);
	assert_int_equal(got.pos_gen, 6);
	assert_int_equal(got.pos_owner, 0x99);
	assert_int_equal(psn, f | 11);
	/* at the slot's persist: the new position, whole */
	got = at_call(2, &psn);
	assert_int_equal(got.seq, 6);
	assert_int_equal(got.pos_gen, 7);
	assert_int_equal(got.pos_owner, 0x1122334455667788ull);
	assert_int_equal(psn, f2 | 1);
	assert_int_equal(cur.seq, 6);
	assert_int_equal(cur.slot, 1);
	assert_int_equal(cur.pos_gen, 7);
	assert_int_equal(cur.pos_owner, 0x1122334455667788ull);
	/* the run, the claim and the flags but POSW1 are not its business */
	assert_int_equal(cur.run_gen, 6);
	assert_int_equal(cur.run_owner, 0x99);
	assert_int_equal(cur.claim_floor, in.claim_floor);
	assert_int_equal(cur.generation, in.generation);
	assert_int_equal(cur.owner, in.owner);
	assert_int_equal(cur.flags, REPLICA_F_TRACKED | REPLICA_F_POSW1);
	assert_int_equal(replica_pos_psn(base, &cur), f2 | 1);
	/* the first record keeps the old writer's position, all of it */
	assert_rec(base, REPLICA_PSN_OFF, f | 11, 6, 0x99);
	assert_int_equal(replica_psn_get(base), f | 11);
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &got), 0);
	assert_true(same_state(&got, &cur));
	assert_int_equal(replica_pos_psn(base, &got), f2 | 1);
	/* that writer again: the second record's sequence goes up (8 bytes) */
	assert_int_equal(replica_pos_record(pmem, base, &cur, 7,
			0x1122334455667788ull, f2 | 2), 0);
	assert_int_equal(plog_n, 4);
	assert_ptr_equal(plog[3].ptr, base + REPLICA_PSN1_OFF);
	assert_int_equal(plog[3].len, 8);
	assert_rec(base, REPLICA_PSN1_OFF, f2 | 2, 7, 0x1122334455667788ull);
	assert_int_equal(replica_pos_psn(base, &cur), f2 | 2);
	assert_int_equal(replica_psn_get(base), f | 11);
	/* a third writer, same generation, other owner: back to the first
	 * record, whole, then the slot at 0 */
	assert_int_equal(replica_pos_record(pmem, base, &cur, 7, 0x55, f2 | 7), 0);
	assert_int_equal(plog_n, 6);
	assert_ptr_equal(plog[4].ptr, base + REPLICA_PSN_OFF);
	assert_int_equal(plog[4].len, REPLICA_POS_REC);
	assert_ptr_equal(plog[5].ptr, base);
	assert_int_equal(plog[5].len, REPLICA_HDR_ENC_SIZE);
	got = at_call(4, &psn);
	assert_int_equal(got.pos_owner, 0x1122334455667788ull);
	assert_int_equal(psn, f2 | 2);
	assert_int_equal(cur.flags, REPLICA_F_TRACKED);
	assert_int_equal(cur.pos_gen, 7);
	assert_int_equal(cur.pos_owner, 0x55);
	assert_rec(base, REPLICA_PSN_OFF, f2 | 7, 7, 0x55);
	assert_rec(base, REPLICA_PSN1_OFF, f2 | 2, 7, 0x1122334455667788ull);
	assert_int_equal(replica_psn_get(base), f2 | 7);
	assert_int_equal(replica_pos_psn(base, &cur), f2 | 7);
	/* another generation, same owner: a switch too */
	assert_int_equal(replica_pos_record(pmem, base, &cur, 8, 0x55, 5ull << 40), 0);
	assert_int_equal(plog_n, 8);
	assert_ptr_equal(plog[6].ptr, base + REPLICA_PSN1_OFF);
	assert_int_equal(plog[6].len, REPLICA_POS_REC);
	assert_rec(base, REPLICA_PSN1_OFF, 5ull << 40, 8, 0x55);
	assert_int_equal(cur.flags, REPLICA_F_TRACKED | REPLICA_F_POSW1);
	assert_int_equal(cur.pos_gen, 8);

	/* a failed persist of the record not live: its error, the slot is
	 * not written, the old position stands */
	struct replica_hdr before = cur;
	plog_n = 0;
	plog_fail_at = 0;
	assert_int_equal(replica_pos_record(pmem, base, &cur, 9, 0x66, 6ull << 40),
			PMREP_E_PROVIDER);
	assert_int_equal(plog_n, 1);
	assert_ptr_equal(plog[0].ptr, base + REPLICA_PSN_OFF);
	assert_int_equal(plog[0].len, REPLICA_POS_REC);
	assert_true(same_state(&cur, &before));
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &got), 0);
	assert_true(same_state(&got, &before));
	assert_int_equal(got.pos_gen, 8);
	assert_int_equal(got.pos_owner, 0x55);
	assert_int_equal(replica_pos_psn(base, &got), 5ull << 40);
	/* a failed slot write after the record: the old position stands */
	plog_n = 0;
	plog_fail_at = 1;
	assert_int_equal(replica_pos_record(pmem, base, &cur, 9, 0x66, 6ull << 40),
			PMREP_E_PROVIDER);
	assert_int_equal(plog_n, 2);
	assert_ptr_equal(plog[1].ptr, base + REPLICA_HDR_SLOT_OFF(cur.slot ^ 1u));
	assert_true(same_state(&cur, &before));
	assert_int_equal(replica_pos_psn(base, &cur), 5ull << 40);
	plog_fail_at = -1;
	pmrep_test_hooks.pmem_persist = NULL;
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	unlink(path);
}

/*
 * a CLOSE's mark: the position and the flags (CONSISTENT, RUN_CLOSED) in
 * one slot write at most; the run fields stay
 */
static void
position_record_flags_sets_the_mark_in_the_one_slot_write(void **state)
{
	(void)state;
	char path[] = "/dev/shm/pmrep-test-repl-hdr-posf-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct replica_hdr in = sample(), cur, got;
	in.flags = REPLICA_F_TRACKED;
	uint64_t f = in.claim_floor;
	uint8_t blk[REPLICA_HDR_BLOCK];
	block_with(blk, &in, 0);
	put_rec(blk, REPLICA_PSN_OFF, f | 4, 6, 0x99);
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + DATA), 0);
	assert_int_equal(pwrite(fd, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));
	close(fd);
	struct pmrep_pmem *pmem = NULL;
	assert_int_equal(pmrep_pmem_open(path, 0, 0, PMREP_PMEM_GRANULARITY_PAGE, &pmem), 0);
	uint8_t *base = pmrep_pmem_get_address(pmem);
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &cur), 0);
	pmrep_test_hooks.pmem_persist = log_hook;
	plog_base = base;
	plog_n = 0;
	plog_fail_at = -1;
	const uint32_t mark = PMREP_REPLICA_F_CONSISTENT | REPLICA_F_RUN_CLOSED;

	/* the same writer: the sequence (8 bytes), then one slot write with
	 * the mark */
	assert_int_equal(replica_pos_record_flags(pmem, base, &cur, 6, 0x99,
			f | 9, mark), 0);
	assert_int_equal(plog_n, 2);
	assert_ptr_equal(plog[0].ptr, base + REPLICA_PSN_OFF);
	assert_int_equal(plog[0].len, 8);
	assert_ptr_equal(plog[1].ptr, base + S1);
	assert_int_equal(cur.seq, 6);
	assert_int_equal(cur.flags, REPLICA_F_TRACKED | mark);
	assert_int_equal(cur.run_gen, 6);
	assert_int_equal(cur.run_owner, 0x99);
	assert_int_equal(cur.claim_floor, f);
	assert_rec(base, REPLICA_PSN_OFF, f | 9, 6, 0x99);
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &got), 0);
	assert_true(same_state(&got, &cur));
	/* again, nothing new: nothing written */
	assert_int_equal(replica_pos_record_flags(pmem, base, &cur, 6, 0x99,
			f | 9, mark), 0);
	assert_int_equal(replica_pos_record_flags(pmem, base, &cur, 6, 0x99,
			0, mark), 0);
	assert_int_equal(plog_n, 2);
	assert_int_equal(cur.seq, 6);

	/* no sequence (a run without a step), a new flag: the slot only */
	struct replica_hdr n0 = cur;
	n0.flags &= ~mark;
	assert_int_equal(replica_hdr_write(pmem, base, &cur, &n0), 0);
	plog_n = 0;
	assert_int_equal(replica_pos_record_flags(pmem, base, &cur, 7, 0x77,
			0, mark), 0);
	assert_int_equal(plog_n, 1);
	assert_int_equal(plog[0].len, REPLICA_HDR_ENC_SIZE);
	assert_int_equal(cur.flags, REPLICA_F_TRACKED | mark);
	assert_int_equal(cur.pos_gen, 6);	/* the position stays */
	assert_int_equal(cur.pos_owner, 0x99);
	assert_int_equal(replica_pos_psn(base, &cur), f | 9);

	/* another writer's mark: the whole record, then ONE slot write with
	 * the switch and the mark together (the slot sequence goes up by
	 * one) */
	n0 = cur;
	n0.flags &= ~mark;
	assert_int_equal(replica_hdr_write(pmem, base, &cur, &n0), 0);
	uint64_t seq0 = cur.seq;
	plog_n = 0;
	assert_int_equal(replica_pos_record_flags(pmem, base, &cur, 7, 0x77,
			(5ull << 40) | 3, mark), 0);
	assert_int_equal(plog_n, 2);
	assert_ptr_equal(plog[0].ptr, base + REPLICA_PSN1_OFF);
	assert_int_equal(plog[0].len, REPLICA_POS_REC);
	assert_int_equal(plog[1].len, REPLICA_HDR_ENC_SIZE);
	assert_int_equal(cur.seq, seq0 + 1);
	assert_int_equal(cur.flags, REPLICA_F_TRACKED | REPLICA_F_POSW1 | mark);
	assert_int_equal(cur.pos_gen, 7);
	assert_int_equal(cur.pos_owner, 0x77);
	assert_int_equal(cur.run_gen, 6);	/* the run is the claim's */
	assert_int_equal(cur.run_owner, 0x99);
	assert_int_equal(cur.claim_floor, f);
	assert_rec(base, REPLICA_PSN1_OFF, (5ull << 40) | 3, 7, 0x77);
	assert_rec(base, REPLICA_PSN_OFF, f | 9, 6, 0x99);
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &got), 0);
	assert_true(same_state(&got, &cur));
	pmrep_test_hooks.pmem_persist = NULL;
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	unlink(path);
}

static void
slot_bad_magic_version_checksum_reserved_layout_are_malformed(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t b[REPLICA_HDR_ENC_SIZE];

#define BAD(stmt) do { replica_hdr_encode(&in, b); stmt; reseal(b); \
	assert_int_equal(replica_slot_decode(b, &out, true), PMREP_E_MALFORMED); } while (0)
	BAD(b[3] ^= 0x20);			/* magic */
	BAD(b[7] = 'L');			/* a v1 magic on a v2 layout */
	BAD(pmrep_put_le16(b + 8, 1));		/* version 1 with magic v2 */
	BAD(pmrep_put_le16(b + 8, 3));		/* unknown version */
	BAD(pmrep_put_le16(b + 10, 64));	/* slot length */
	BAD(b[13] |= 0x01);			/* the first one past INCOMPLETE */
	BAD(b[13] |= 0x02);			/* unknown flag */
	BAD(b[15] |= 0x80);
	BAD(pmrep_put_le64(b + 56, 8192));	/* data offset */
	BAD(pmrep_put_le64(b + 64, 0));		/* data size 0 */
	BAD(pmrep_put_le64(b + 64, UINT64_MAX));	/* data size overflows */
	BAD(pmrep_put_le16(b + 96, 9));		/* set size above 8 */
	BAD(pmrep_put_le16(b + 98, 4));		/* quorum above the set size */
	BAD(pmrep_put_le16(b + 96, 0));		/* a quorum without a set */
	for (int i = 116; i < 120; i++)
		BAD(b[i] = 1);			/* reserved (only 116..119 now) */
#undef BAD
	/* every flipped bit after the magic fails the checksum (or more) */
	replica_hdr_encode(&in, b);
	for (size_t i = 8; i < sizeof(b); i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1u << bit);
			assert_int_equal(replica_slot_decode(b, &out, true),
					PMREP_E_MALFORMED);
			b[i] ^= (uint8_t)(1u << bit);
		}
	}
	assert_int_equal(replica_slot_decode(b, &out, true), 0);
	/* RUN_CLOSED (64) is known: it decodes */
	replica_hdr_encode(&in, b);
	b[12] |= 0x40;
	reseal(b);
	assert_int_equal(replica_slot_decode(b, &out, true), 0);
	assert_int_equal(out.flags, PMREP_REPLICA_F_CONSISTENT | REPLICA_F_RUN_CLOSED);
	/* bytes 88..95 are the run generation, 100..107 the run owner,
	 * 108..115 the claim floor: any value decodes (resealed), into that
	 * field only */
	for (int i = 88; i < 116; i++) {
		if (i >= 96 && i < 100)
			continue;		/* the membership */
		replica_hdr_encode(&in, b);
		b[i] = 0xff;
		reseal(b);
		memset(&out, 0, sizeof(out));
		assert_int_equal(replica_slot_decode(b, &out, true), 0);
		assert_int_equal(out.pos_gen, 0);
		assert_int_equal(out.pos_owner, 0);
		if (i < 96) {
			assert_int_not_equal(out.run_gen, in.run_gen);
			assert_int_equal(out.run_owner, in.run_owner);
			assert_int_equal(out.claim_floor, in.claim_floor);
		} else if (i < 108) {
			assert_int_equal(out.run_gen, in.run_gen);
			assert_int_not_equal(out.run_owner, in.run_owner);
			assert_int_equal(out.claim_floor, in.claim_floor);
		} else {
			assert_int_equal(out.run_gen, in.run_gen);
			assert_int_equal(out.run_owner, in.run_owner);
			assert_int_not_equal(out.claim_floor, in.claim_floor);
		}
	}
	replica_hdr_encode(&in, b);
	assert_int_equal(replica_slot_decode(b, &out, true), 0);
	/* a v1 slot: its own reserved bytes */
	v1_encode(&in, 1, b);
	assert_int_equal(replica_slot_decode(b, &out, true), 0);
	assert_int_equal(out.version, 1);
	/* a v1 header has no run and no claim floor */
	assert_int_equal(out.run_gen, 0);
	assert_int_equal(out.run_owner, 0);
	assert_int_equal(out.claim_floor, 0);
	/* ... nor the RUN_CLOSED flag (v1 knows the public flags only) */
	b[12] |= 0x40;
	reseal(b);
	assert_int_equal(replica_slot_decode(b, &out, true), PMREP_E_MALFORMED);
	v1_encode(&in, 1, b);
	b[100] = 1;
	reseal(b);
	assert_int_equal(replica_slot_decode(b, &out, true), PMREP_E_MALFORMED);
	/* a v1 slot at 2048 is not a header (only v2 writes that slot) */
	uint8_t blk[REPLICA_HDR_BLOCK];
	memset(blk, 0, sizeof(blk));
	v1_encode(&in, 1, blk + S1);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), PMREP_E_MALFORMED);
	/* a v1 header in its block: no position writer, whatever the bytes
	 * past its persist sequence word hold */
	memset(blk, 0, sizeof(blk));
	v1_encode(&in, 1, blk);
	put_rec(blk, REPLICA_PSN_OFF, 77, 0x1234, 0x5678);
	put_rec(blk, REPLICA_PSN1_OFF, 88, 0x4321, 0x8765);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), 0);
	assert_int_equal(out.version, 1);
	assert_int_equal(out.pos_gen, 0);
	assert_int_equal(out.pos_owner, 0);
	assert_int_equal(replica_pos_psn(blk, &out), 77);
}

static void
hdr_size_mismatch_with_the_file_is_range(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t blk[REPLICA_HDR_BLOCK];
	block_with(blk, &in, 0);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), DATA, &out), PMREP_E_RANGE);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk),
			PMREP_REPLICA_DATA_OFFSET + DATA + 4096, &out), PMREP_E_RANGE);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk),
			PMREP_REPLICA_DATA_OFFSET + DATA - 1, &out), PMREP_E_RANGE);
}

static void
read_info_reads_a_formatted_file_and_rejects_others(void **state)
{
	(void)state;
	char path[] = "/dev/shm/pmrep-test-repl-hdr-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct replica_hdr in = sample();
	uint8_t blk[REPLICA_HDR_BLOCK];
	block_with(blk, &in, 1);
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + DATA), 0);
	/* the first position record's persist sequence, outside the slots */
	put_rec(blk, REPLICA_PSN_OFF, 123, 8, 0x66);
	assert_int_equal(pwrite(fd, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));

	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	assert_memory_equal(info.uuid, in.uuid, PMREP_UUID_SIZE);
	assert_memory_equal(info.replica_id, in.replica_id, PMREP_UUID_SIZE);
	assert_int_equal(info.data_offset, PMREP_REPLICA_DATA_OFFSET);
	assert_int_equal(info.data_size, DATA);
	assert_int_equal(info.generation, 7);
	assert_int_equal(info.flags, PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(info.owner, 0x1122334455667788ull);
	assert_int_equal(info.seq, 5);
	assert_int_equal(info.last_persist_seq, 123);
	/* POSW1: the second record (4000) is the live one */
	assert_int_equal(REPLICA_PSN1_OFF, REPLICA_PSN_OFF + 32);
	put_rec(blk, REPLICA_PSN1_OFF, 456, 9, 0x77);
	assert_int_equal(pwrite(fd, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	assert_int_equal(info.last_persist_seq, 123);
	struct replica_hdr w1 = in;
	w1.flags |= REPLICA_F_POSW1;
	w1.seq = 6;
	replica_hdr_encode(&w1, blk);	/* the newer slot, at 0 */
	assert_int_equal(pwrite(fd, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	assert_int_equal(info.seq, 6);
	assert_int_equal(info.flags, PMREP_REPLICA_F_CONSISTENT | REPLICA_F_POSW1);
	assert_int_equal(info.last_persist_seq, 456);

	/* a file one page longer than the header says */
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + DATA + 4096), 0);
	assert_int_equal(pmrep_replica_read_info(path, &info), PMREP_E_RANGE);
	/* a file of 100 bytes */
	assert_int_equal(ftruncate(fd, 100), 0);
	assert_int_equal(pmrep_replica_read_info(path, &info), PMREP_E_MALFORMED);
	/* an empty file */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pmrep_replica_read_info(path, &info), PMREP_E_MALFORMED);
	close(fd);
	unlink(path);

	assert_int_equal(pmrep_replica_read_info(path, &info), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOENT);
	assert_int_equal(pmrep_replica_read_info(NULL, &info), PMREP_E_INVAL);
	assert_int_equal(pmrep_replica_read_info(path, NULL), PMREP_E_INVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slot_roundtrip_keeps_every_field_at_fixed_offsets),
		cmocka_unit_test(decoder_takes_the_valid_slot_with_the_higher_sequence),
		cmocka_unit_test(T29_every_torn_header_update_decodes_to_the_old_or_the_new_state),
		cmocka_unit_test(v1_header_reads_as_sequence_0_and_upgrades_into_the_slot_at_2048),
		cmocka_unit_test(header_write_persists_exactly_the_new_slot_and_keeps_state_on_failure),
		cmocka_unit_test(position_record_raises_the_live_word_or_switches_words_for_a_new_writer),
		cmocka_unit_test(position_record_flags_sets_the_mark_in_the_one_slot_write),
		cmocka_unit_test(slot_bad_magic_version_checksum_reserved_layout_are_malformed),
		cmocka_unit_test(hdr_size_mismatch_with_the_file_is_range),
		cmocka_unit_test(read_info_reads_a_formatted_file_and_rejects_others),
	};
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
