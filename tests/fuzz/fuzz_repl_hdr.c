/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_repl_hdr.c -- libFuzzer target of the replica header decoder
 * (src/repl/media/replica_hdr.c). Any bytes are decoded as the first bytes of a
 * replica, without and with a file size; a header the decoder accepts must
 * re-encode to exactly its chosen slot's REPLICA_HDR_ENC_SIZE bytes (one encoding
 * per header), and a file size accepted must be header + data area.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pmrep/base.h>

#include "common/wire.h"
#include "repl/media/replica_hdr.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	(void) pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return 0;
}

static void
check(const uint8_t *data, size_t size, uint64_t file_size)
{
	struct replica_hdr h;
	memset(&h, 0xa5, sizeof(h));
	int r = replica_hdr_decode(data, size, file_size, &h);
	if (r == PMREP_E_MALFORMED || r == PMREP_E_RANGE)
		return;
	if (r != 0)
		abort();	/* no other error exists */
	if (size < REPLICA_HDR_BLOCK || h.data_size == 0 || h.slot > 1 ||
			(h.version != 1 && h.version != 2) ||
			(h.version == 1 && (h.slot != 0 || h.seq != 0)))
		abort();
	if (file_size != 0 &&
			file_size != PMREP_REPLICA_DATA_OFFSET + h.data_size)
		abort();
	/* the flags a slot may hold (a v1 slot the public ones only) */
	uint32_t known = PMREP_REPLICA_F_CONSISTENT | PMREP_REPLICA_F_REMOVED |
		PMREP_REPLICA_F_PROMOTED;
	if (h.version == 2)
		known |= REPLICA_F_TRACKED | REPLICA_F_POSW1 | REPLICA_F_PRIMARY |
			REPLICA_F_RUN_CLOSED | REPLICA_F_INCOMPLETE;
	if ((h.flags & ~known) != 0)
		abort();
	/* the position is the live record's (none in a v1 header) */
	size_t rec = (h.flags & REPLICA_F_POSW1) ? REPLICA_PSN1_OFF : REPLICA_PSN_OFF;
	if (h.version == 2 ? (h.pos_gen != pmrep_get_le64(data + rec + 8) ||
			h.pos_owner != pmrep_get_le64(data + rec + 16) ||
			replica_pos_psn(data, &h) != pmrep_get_le64(data + rec)) :
			(h.pos_gen != 0 || h.pos_owner != 0))
		abort();
	const uint8_t *slot = data + REPLICA_HDR_SLOT_OFF(h.slot);
	/* the chosen slot decodes alone to the same state */
	struct replica_hdr s;
	memset(&s, 0x5a, sizeof(s));
	if (replica_slot_decode(slot, &s, true) != 0 || s.seq != h.seq ||
			memcmp(s.uuid, h.uuid, sizeof(h.uuid)) != 0 ||
			memcmp(s.replica_id, h.replica_id, sizeof(h.replica_id)) != 0 ||
			s.data_size != h.data_size || s.generation != h.generation ||
			s.owner != h.owner || s.flags != h.flags)
		abort();
	/* the other slot, when valid (and v2), holds no higher sequence */
	const uint8_t *other = data + REPLICA_HDR_SLOT_OFF(h.slot ^ 1u);
	struct replica_hdr o;
	if (replica_slot_decode(other, &o, true) == 0 && o.version == 2 &&
			(o.seq > h.seq || (o.seq == h.seq && h.slot == 1)))
		abort();
	/* a v2 slot re-encodes to exactly its bytes */
	if (h.version == 2) {
		uint8_t again[REPLICA_HDR_ENC_SIZE];
		replica_hdr_encode(&h, again);
		if (memcmp(again, slot, REPLICA_HDR_ENC_SIZE) != 0)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check(data, size, 0);
	/* a file of the size the header names, and one byte off */
	struct replica_hdr h;
	if (replica_hdr_decode(data, size, 0, &h) == 0) {
		check(data, size, h.data_size + PMREP_REPLICA_DATA_OFFSET);
		check(data, size, h.data_size + PMREP_REPLICA_DATA_OFFSET + 1);
	}
	return 0;
}
