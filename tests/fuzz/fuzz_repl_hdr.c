/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_repl_hdr.c -- libFuzzer target of the replica header decoder
 * (src/repl/replica_hdr.c). Any bytes are decoded as the first bytes of a
 * replica, without and with a file size; a header the decoder accepts must
 * re-encode to exactly its first REPLICA_HDR_ENC_SIZE bytes (one encoding
 * per header), and a file size accepted must be header + data area.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pmrep/base.h>

#include "repl/replica_hdr.h"

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
	if (size < REPLICA_HDR_ENC_SIZE || h.data_size == 0)
		abort();
	if (file_size != 0 &&
			file_size != PMREP_REPLICA_DATA_OFFSET + h.data_size)
		abort();
	if ((h.flags & ~PMREP_REPLICA_F_CONSISTENT) != 0)
		abort();
	uint8_t again[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&h, again);
	if (memcmp(again, data, REPLICA_HDR_ENC_SIZE) != 0)
		abort();
	/* and the re-encoding decodes to the same header */
	struct replica_hdr h2;
	memset(&h2, 0x5a, sizeof(h2));
	if (replica_hdr_decode(again, sizeof(again), 0, &h2) != 0 ||
			memcmp(h.uuid, h2.uuid, sizeof(h.uuid)) != 0 ||
			h.data_size != h2.data_size ||
			h.generation != h2.generation ||
			h.attach_id != h2.attach_id || h.flags != h2.flags)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check(data, size, 0);
	/* a file of the size the header names, and one byte off */
	if (size >= 48) {
		uint64_t ds = (uint64_t)data[40] | (uint64_t)data[41] << 8 |
			(uint64_t)data[42] << 16 | (uint64_t)data[43] << 24 |
			(uint64_t)data[44] << 32 | (uint64_t)data[45] << 40 |
			(uint64_t)data[46] << 48 | (uint64_t)data[47] << 56;
		check(data, size, ds + PMREP_REPLICA_DATA_OFFSET);
		check(data, size, ds + PMREP_REPLICA_DATA_OFFSET + 1);
	}
	return 0;
}
