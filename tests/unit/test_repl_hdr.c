/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_hdr.c -- the replica header (v2: two crash-atomic slots):
 * slot encoder and strict decoder, the choice between the slots, every
 * torn image of an update (T29), a version 1 header read and upgraded,
 * the one update function's persist and its failure, and
 * pmrep_replica_read_info on real files.
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
#include "repl/replica_hdr.h"

#define DATA (1u << 20)
#define S1 REPLICA_HDR_SLOT_OFF(1)

static struct replica_hdr
sample(void)
{
	struct replica_hdr h = { .data_size = DATA, .generation = 7,
		.owner = 0x1122334455667788ull, .pos_gen = 6,
		.pos_owner = 0x99, .claim_floor = 3ull << 40,
		.flags = PMREP_REPLICA_F_CONSISTENT, .seq = 5,
		.set_size = 3, .set_quorum = 2 };
	for (int i = 0; i < PMREP_UUID_SIZE; i++) {
		h.uuid[i] = (uint8_t)(0xa0 + i);
		h.replica_id[i] = (uint8_t)(0x10 + i);
	}
	return h;
}

/* the persistent fields of two states are the same */
static bool
same_state(const struct replica_hdr *a, const struct replica_hdr *b)
{
	return memcmp(a->uuid, b->uuid, PMREP_UUID_SIZE) == 0 &&
		memcmp(a->replica_id, b->replica_id, PMREP_UUID_SIZE) == 0 &&
		a->data_size == b->data_size && a->generation == b->generation &&
		a->owner == b->owner && a->pos_gen == b->pos_gen &&
		a->pos_owner == b->pos_owner && a->claim_floor == b->claim_floor &&
		a->flags == b->flags && a->seq == b->seq &&
		a->set_size == b->set_size && a->set_quorum == b->set_quorum;
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
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b);
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
	assert_int_equal(pmrep_get_le64(b + 88), 6);		/* position generation */
	assert_int_equal(pmrep_get_le16(b + 96), 3);
	assert_int_equal(pmrep_get_le16(b + 98), 2);
	assert_int_equal(pmrep_get_le64(b + 100), 0x99);	/* position owner */
	assert_int_equal(pmrep_get_le64(b + 108), 3ull << 40);	/* claim floor */
	for (int i = 116; i < 120; i++)
		assert_int_equal(b[i], 0);
	assert_int_equal(pmrep_get_le64(b + 120), replica_fletcher64(b, 120));
	memset(&out, 0, sizeof(out));
	assert_int_equal(replica_slot_decode(b, &out, false), 0);
	assert_true(same_state(&in, &out));
	assert_int_equal(out.version, 2);
	assert_int_equal(out.pos_gen, 6);
	assert_int_equal(out.pos_owner, 0x99);
	assert_int_equal(out.claim_floor, 3ull << 40);

	/* wide values in every position field, and the position's flags
	 * (TRACKED 8, POSW1 16, PRIMARY 32) */
	assert_int_equal(REPLICA_F_TRACKED, 8);
	assert_int_equal(REPLICA_F_POSW1, 16);
	assert_int_equal(REPLICA_F_PRIMARY, 32);
	struct replica_hdr wide = sample();
	wide.pos_gen = 0x8182838485868788ull;
	wide.pos_owner = 0x9192939495969798ull;
	wide.claim_floor = 0xa1a2a3a4a5a6a7a8ull;
	wide.flags = PMREP_REPLICA_F_CONSISTENT | PMREP_REPLICA_F_REMOVED |
		PMREP_REPLICA_F_PROMOTED | REPLICA_F_TRACKED | REPLICA_F_POSW1 |
		REPLICA_F_PRIMARY;
	replica_hdr_encode(&wide, b);
	assert_int_equal(pmrep_get_le32(b + 12), 0x3f);
	assert_int_equal(pmrep_get_le64(b + 88), 0x8182838485868788ull);
	assert_int_equal(pmrep_get_le64(b + 100), 0x9192939495969798ull);
	assert_int_equal(pmrep_get_le64(b + 108), 0xa1a2a3a4a5a6a7a8ull);
	/* the neighbours are untouched */
	assert_int_equal(pmrep_get_le16(b + 96), 3);
	assert_int_equal(pmrep_get_le16(b + 98), 2);
	for (int i = 116; i < 120; i++)
		assert_int_equal(b[i], 0);
	assert_int_equal(replica_slot_decode(b, &out, false), 0);
	assert_true(same_state(&wide, &out));
	/* no position (0 0) and no claim floor */
	wide = sample();
	wide.pos_gen = wide.pos_owner = wide.claim_floor = 0;
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
	assert_true(same_state(&in, &out));
	assert_int_equal(out.slot, 1);
	/* file size 0: not checked */
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), 0);
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
 * upgrade writes the slot at 2048).
 */
static void
T29_every_torn_header_update_decodes_to_the_old_or_the_new_state(void **state)
{
	(void)state;
	static uint8_t blk[REPLICA_HDR_BLOCK], img[REPLICA_HDR_BLOCK];
	for (int scenario = 0; scenario < 3; scenario++) {
		struct replica_hdr old = sample(), older = sample(), cur, next;
		memset(blk, 0, sizeof(blk));
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
		struct replica_hdr before = cur;
		/* the update: a claim (other uuid, generation, owner, flags) */
		next = cur;
		memset(next.uuid, 0xcc, PMREP_UUID_SIZE);
		memset(next.replica_id, 0x77, PMREP_UUID_SIZE);
		next.generation = 12;
		next.owner = 0xfeedfaceull;
		next.flags = REPLICA_F_TRACKED | REPLICA_F_POSW1;
		next.pos_gen = 11;
		next.pos_owner = 0xabcdef01ull;
		next.claim_floor = 9ull << 40;
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
			} else {
				assert_true(same_state(&got, &next));
				n_new++;
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

/*
 * the position: the same writer raises the live word (one 8-byte
 * persist, never down); another writer takes the word not live, then the
 * slot names it and that word; a failed persist leaves the old position
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
	uint8_t blk[REPLICA_HDR_BLOCK];
	block_with(blk, &in, 0);
	uint64_t w = htole64(in.claim_floor | 10);
	memcpy(blk + REPLICA_PSN_OFF, &w, sizeof(w));
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + DATA), 0);
	assert_int_equal(pwrite(fd, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));
	close(fd);
	struct pmrep_pmem *pmem = NULL;
	assert_int_equal(pmrep_pmem_open(path, 0, 0, PMREP_PMEM_GRANULARITY_PAGE, &pmem), 0);
	uint8_t *base = pmrep_pmem_get_address(pmem);
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &cur), 0);
	assert_int_equal(replica_pos_psn(base, &cur), in.claim_floor | 10);
	assert_int_equal(replica_psn_get(base), in.claim_floor | 10);

	pmrep_test_hooks.pmem_persist = persist_hook;
	persist_calls = 0;
	persist_result = 0;
	/* the same writer (6, 0x99): the live word goes up, one persist */
	uint64_t f = in.claim_floor;
	assert_int_equal(replica_pos_record(pmem, base, &cur, 6, 0x99, f | 11), 0);
	assert_int_equal(persist_calls, 1);
	assert_ptr_equal(persist_ptr, base + REPLICA_PSN_OFF);
	assert_int_equal(persist_len, 8);
	assert_int_equal(replica_pos_psn(base, &cur), f | 11);
	assert_int_equal(cur.seq, 5);		/* no slot write */
	/* not above it: nothing */
	assert_int_equal(replica_pos_record(pmem, base, &cur, 6, 0x99, f | 11), 0);
	assert_int_equal(replica_pos_record(pmem, base, &cur, 6, 0x99, f | 3), 0);
	assert_int_equal(persist_calls, 1);
	assert_int_equal(replica_pos_psn(base, &cur), f | 11);

	/* another writer (7, 0x1122...): the second word first, then the
	 * slot naming it (POSW1) -- two persists, in that order */
	uint64_t f2 = 4ull << 40;
	assert_int_equal(replica_pos_record(pmem, base, &cur, 7,
			0x1122334455667788ull, f2 | 1), 0);
	assert_int_equal(persist_calls, 3);
	assert_ptr_equal(persist_ptr, base + S1);
	assert_int_equal(persist_len, REPLICA_HDR_ENC_SIZE);
	assert_int_equal(cur.seq, 6);
	assert_int_equal(cur.pos_gen, 7);
	assert_int_equal(cur.pos_owner, 0x1122334455667788ull);
	assert_int_equal(cur.claim_floor, in.claim_floor);	/* not its business */
	assert_int_equal(cur.generation, in.generation);
	assert_int_equal(cur.owner, in.owner);
	assert_int_equal(cur.flags, REPLICA_F_TRACKED | REPLICA_F_POSW1);
	assert_int_equal(replica_pos_psn(base, &cur), f2 | 1);
	/* the first word keeps the old writer's position */
	assert_int_equal(replica_psn_get(base), f | 11);
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &got), 0);
	assert_true(same_state(&got, &cur));
	assert_int_equal(replica_pos_psn(base, &got), f2 | 1);
	/* that writer again: the second word goes up */
	assert_int_equal(replica_pos_record(pmem, base, &cur, 7,
			0x1122334455667788ull, f2 | 2), 0);
	assert_int_equal(persist_calls, 4);
	assert_ptr_equal(persist_ptr, base + REPLICA_PSN1_OFF);
	assert_int_equal(replica_pos_psn(base, &cur), f2 | 2);
	assert_int_equal(replica_psn_get(base), f | 11);
	/* a third writer, same generation, other owner: back to the first word */
	assert_int_equal(replica_pos_record(pmem, base, &cur, 7, 0x55, f2 | 7), 0);
	assert_int_equal(persist_calls, 6);
	assert_int_equal(cur.flags, REPLICA_F_TRACKED);
	assert_int_equal(replica_psn_get(base), f2 | 7);
	assert_int_equal(replica_pos_psn(base, &cur), f2 | 7);

	/* a failed persist of the word not live: its error, the slot is not
	 * written, the old position stands */
	struct replica_hdr before = cur;
	persist_result = PMREP_E_PROVIDER;
	assert_int_equal(replica_pos_record(pmem, base, &cur, 8, 0x66, 5ull << 40),
			PMREP_E_PROVIDER);
	assert_int_equal(persist_calls, 7);
	assert_ptr_equal(persist_ptr, base + REPLICA_PSN1_OFF);
	assert_true(same_state(&cur, &before));
	assert_int_equal(replica_hdr_decode(base, REPLICA_HDR_BLOCK, 0, &got), 0);
	assert_true(same_state(&got, &before));
	assert_int_equal(replica_pos_psn(base, &got), f2 | 7);
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
	BAD(b[12] |= 0x80);			/* unknown flag */
	BAD(b[12] |= 0x40);			/* the first one past PRIMARY */
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
	/* bytes 100..115 are the position owner and the claim floor now:
	 * any value decodes (resealed) */
	for (int i = 100; i < 116; i++) {
		replica_hdr_encode(&in, b);
		b[i] = 0xff;
		reseal(b);
		assert_int_equal(replica_slot_decode(b, &out, true), 0);
		assert_int_equal(out.pos_gen, in.pos_gen);
		if (i < 108)
			assert_int_not_equal(out.pos_owner, in.pos_owner);
		else
			assert_int_not_equal(out.claim_floor, in.claim_floor);
	}
	replica_hdr_encode(&in, b);
	assert_int_equal(replica_slot_decode(b, &out, true), 0);
	/* a v1 slot: its own reserved bytes */
	v1_encode(&in, 1, b);
	assert_int_equal(replica_slot_decode(b, &out, true), 0);
	assert_int_equal(out.version, 1);
	/* a v1 header has no position and no claim floor */
	assert_int_equal(out.pos_gen, 0);
	assert_int_equal(out.pos_owner, 0);
	assert_int_equal(out.claim_floor, 0);
	b[100] = 1;
	reseal(b);
	assert_int_equal(replica_slot_decode(b, &out, true), PMREP_E_MALFORMED);
	/* a v1 slot at 2048 is not a header (only v2 writes that slot) */
	uint8_t blk[REPLICA_HDR_BLOCK];
	memset(blk, 0, sizeof(blk));
	v1_encode(&in, 1, blk + S1);
	assert_int_equal(replica_hdr_decode(blk, sizeof(blk), 0, &out), PMREP_E_MALFORMED);
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
	/* the persist sequence word, outside the slots (the slot's own
	 * field is not what is reported) */
	uint64_t w = htole64(123);
	memcpy(blk + REPLICA_PSN_OFF, &w, sizeof(w));
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
	/* POSW1: the second word (3976) is the live one */
	assert_int_equal(REPLICA_PSN1_OFF, REPLICA_PSN_OFF + 8);
	w = htole64(456);
	memcpy(blk + REPLICA_PSN1_OFF, &w, sizeof(w));
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
		cmocka_unit_test(slot_bad_magic_version_checksum_reserved_layout_are_malformed),
		cmocka_unit_test(hdr_size_mismatch_with_the_file_is_range),
		cmocka_unit_test(read_info_reads_a_formatted_file_and_rejects_others),
	};
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
