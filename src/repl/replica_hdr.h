/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replica_hdr.h -- the replica header: the one encoder and decoder of the
 * bytes a replica file / device DAX starts with.
 */
#ifndef PMREP_REPL_REPLICA_HDR_H
#define PMREP_REPL_REPLICA_HDR_H

#include <pmrep/repl.h>

/* bytes of the encoded header (the rest of the first 4 KiB is zero) */
#define REPLICA_HDR_ENC_SIZE 128

struct replica_hdr {
	uint8_t uuid[PMREP_UUID_SIZE];	/* all zero: unclaimed */
	uint64_t data_size;		/* bytes after PMREP_REPLICA_DATA_OFFSET */
	uint64_t generation;
	uint64_t attach_id;		/* session id of the last mirror attached */
	uint32_t flags;			/* PMREP_REPLICA_F_* */
};

/* write the REPLICA_HDR_ENC_SIZE-byte encoding of `h` to `out` */
void replica_hdr_encode(const struct replica_hdr *h, uint8_t *out);

/*
 * decode `len` bytes at `buf` into *h. `file_size` > 0: also check that the
 * header and its data area fill exactly that many bytes.
 * PMREP_E_MALFORMED: truncated, bad magic, unknown version, bad header
 * length or data offset, bad checksum, reserved bits / bytes set.
 * PMREP_E_RANGE: data size does not match file_size.
 */
int replica_hdr_decode(const uint8_t *buf, size_t len, uint64_t file_size,
		struct replica_hdr *h);

/* true when the uuid is all zero */
bool replica_uuid_is_nil(const uint8_t *uuid);

/* Fletcher-64 over 32-bit little-endian words (len a multiple of 4) */
uint64_t replica_fletcher64(const uint8_t *buf, size_t len);

#endif /* PMREP_REPL_REPLICA_HDR_H */
