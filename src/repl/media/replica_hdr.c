/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replica_hdr.c -- the replica header's one encoder and decoder, its one
 * crash-atomic update, and pmrep_replica_read_info.
 *
 * The header block is the replica's first PMREP_REPLICA_DATA_OFFSET (4096)
 * bytes; it holds two slots of REPLICA_HDR_ENC_SIZE (128) bytes, at
 * offsets 0 and 2048 (different cache lines and 8-byte units); the rest
 * is zero but for the persist sequence word at 3968 (replica_hdr.h). A
 * reader takes the valid slot with the higher sequence; an
 * update writes the other slot with sequence + 1 and persists it, so a
 * torn update leaves that slot invalid (checksum) or whole, and the old
 * one stands until the new one is durable.
 *
 * Slot, version 2, little-endian:
 *    0  u8[8] magic "PMREPRP2"
 *    8  u16 version (2)
 *   10  u16 slot length (128)
 *   12  u32 flags (PMREP_REPLICA_F_*: CONSISTENT 1, REMOVED 2, PROMOTED 4; others
 *       reserved, 0)
 *   16  u64 slot sequence
 *   24  u8[16] replica-set UUID (all zero: unclaimed)
 *   40  u8[16] replica id (drawn when the replica is formatted)
 *   56  u64 data offset (4096)
 *   64  u64 data size in bytes (> 0)
 *   72  u64 generation
 *   80  u64 owner (primary id of the last committed attach)
 *   88  u64 run generation: of the last writer's run that claimed it
 *       (PROTOCOL.md "Position"; a fence keeps it; 0: none)
 *   96  u16 set size: the replicas the claiming writer mirrors to (its
 *       membership, PROTOCOL.md "Membership"; 0: not recorded)
 *   98  u16 set quorum (0: all; at most the set size)
 *  100  u64 run owner: that writer's primary id
 *  108  u64 claim floor: the first persist sequence of that run (0: none)
 *  116  u8[4] reserved (0)
 *  120  u64 checksum: Fletcher-64 of bytes 0..119
 *
 * Flags 8 (TRACKED: the run records a position at every step), 16
 * (POSW1: the live position record is the second), 32 (PRIMARY: a
 * writer's own log while its mirror runs) and 64 (RUN_CLOSED: the run
 * ended with a clean close at the position) are the position's.
 * Position records at 3968 and 4000 of the block: u64 persist sequence,
 * u64 generation, u64 owner of the writer whose steps the copy holds.
 *
 * Slot, version 1 (read only; one slot at offset 0): magic "PMREPRPL",
 * 8 u16 version (1), 10 u16 length (128), 12 u32 flags, 16 u8[16] UUID,
 * 32 u64 data offset, 40 u64 data size, 48 u64 generation, 56 u64 attach
 * id (read as the owner), 64 u8[56] reserved, 120 u64 checksum. It reads
 * as sequence 0 with no replica id, so the first update goes to the slot
 * at 2048 and the v1 slot stays valid until the new one is.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/wire.h"
#include "position.h"
#include "replica_hdr.h"

static const uint8_t magic_v2[8] = { 'P', 'M', 'R', 'E', 'P', 'R', 'P', '2' };
static const uint8_t magic_v1[8] = { 'P', 'M', 'R', 'E', 'P', 'R', 'P', 'L' };
#define HDR_CSUM_OFF 120
#define HDR_FLAGS_KNOWN (PMREP_REPLICA_F_CONSISTENT | PMREP_REPLICA_F_REMOVED | \
		PMREP_REPLICA_F_PROMOTED | REPLICA_F_TRACKED | REPLICA_F_POSW1 | \
		REPLICA_F_PRIMARY | REPLICA_F_RUN_CLOSED | REPLICA_F_INCOMPLETE)

uint64_t
replica_fletcher64(const uint8_t *buf, size_t len)
{
	uint32_t lo = 0, hi = 0;
	for (size_t i = 0; i + 4 <= len; i += 4) {
		lo += pmrep_get_le32(buf + i);
		hi += lo;
	}
	return ((uint64_t)hi << 32) | lo;
}

bool
replica_all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0)
			return false;
	return true;
}

bool
replica_uuid_is_nil(const uint8_t *uuid)
{
	return replica_all_zero(uuid, PMREP_UUID_SIZE);
}

void
replica_hdr_encode(const struct replica_hdr *h, uint8_t *out)
{
	memset(out, 0, REPLICA_HDR_ENC_SIZE);
	memcpy(out, magic_v2, sizeof(magic_v2));
	pmrep_put_le16(out + 8, 2);
	pmrep_put_le16(out + 10, REPLICA_HDR_ENC_SIZE);
	pmrep_put_le32(out + 12, h->flags);
	pmrep_put_le64(out + 16, h->seq);
	memcpy(out + 24, h->uuid, PMREP_UUID_SIZE);
	memcpy(out + 40, h->replica_id, PMREP_UUID_SIZE);
	pmrep_put_le64(out + 56, PMREP_REPLICA_DATA_OFFSET);
	pmrep_put_le64(out + 64, h->data_size);
	pmrep_put_le64(out + 72, h->generation);
	pmrep_put_le64(out + 80, h->owner);
	pmrep_put_le64(out + 88, h->run_gen);
	pmrep_put_le16(out + 96, (uint16_t)h->set_size);
	pmrep_put_le16(out + 98, (uint16_t)h->set_quorum);
	pmrep_put_le64(out + 100, h->run_owner);
	pmrep_put_le64(out + 108, h->claim_floor);
	pmrep_put_le64(out + HDR_CSUM_OFF, replica_fletcher64(out, HDR_CSUM_OFF));
}

#define SLOT_ERR(...) do { \
	if (!quiet) \
		PMREP_LOG_ERR(__VA_ARGS__); \
	return PMREP_E_MALFORMED; \
} while (0)

int
replica_slot_decode(const uint8_t *buf, struct replica_hdr *h, bool quiet)
{
	unsigned version;
	if (memcmp(buf, magic_v2, sizeof(magic_v2)) == 0)
		version = 2;
	else if (memcmp(buf, magic_v1, sizeof(magic_v1)) == 0)
		version = 1;
	else
		SLOT_ERR("replica header: bad magic (not a pmrep replica)");
	if (pmrep_get_le16(buf + 8) != version)
		SLOT_ERR("replica header: unknown version %u",
				pmrep_get_le16(buf + 8));
	uint64_t csum = pmrep_get_le64(buf + HDR_CSUM_OFF);
	if (csum != replica_fletcher64(buf, HDR_CSUM_OFF))
		SLOT_ERR("replica header: bad checksum 0x%016llx",
				(unsigned long long)csum);
	size_t off_doff = version == 2 ? 56 : 32;
	size_t off_size = version == 2 ? 64 : 40;
	size_t res_from = version == 2 ? 116 : 64;
	if (pmrep_get_le16(buf + 10) != REPLICA_HDR_ENC_SIZE ||
			pmrep_get_le64(buf + off_doff) != PMREP_REPLICA_DATA_OFFSET)
		SLOT_ERR("replica header: bad header length %u or data offset %llu",
				pmrep_get_le16(buf + 10),
				(unsigned long long)pmrep_get_le64(buf + off_doff));
	uint32_t flags = pmrep_get_le32(buf + 12);
	/* a version 1 slot knows the public flags only */
	uint32_t known = version == 2 ? HDR_FLAGS_KNOWN :
		(PMREP_REPLICA_F_CONSISTENT | PMREP_REPLICA_F_REMOVED |
		 PMREP_REPLICA_F_PROMOTED);
	if ((flags & ~known) != 0)
		SLOT_ERR("replica header: unknown flags 0x%x", flags);
	for (size_t i = res_from; i < HDR_CSUM_OFF; i++)
		if (buf[i] != 0)
			SLOT_ERR("replica header: reserved byte %zu set", i);
	uint64_t data_size = pmrep_get_le64(buf + off_size);
	if (data_size == 0 || data_size > UINT64_MAX - PMREP_REPLICA_DATA_OFFSET)
		SLOT_ERR("replica header: bad data size %llu",
				(unsigned long long)data_size);
	h->version = version;
	h->flags = flags;
	h->data_size = data_size;
	if (version == 2) {
		h->seq = pmrep_get_le64(buf + 16);
		memcpy(h->uuid, buf + 24, PMREP_UUID_SIZE);
		memcpy(h->replica_id, buf + 40, PMREP_UUID_SIZE);
		h->generation = pmrep_get_le64(buf + 72);
		h->owner = pmrep_get_le64(buf + 80);
		h->run_gen = pmrep_get_le64(buf + 88);
		h->set_size = pmrep_get_le16(buf + 96);
		h->set_quorum = pmrep_get_le16(buf + 98);
		h->run_owner = pmrep_get_le64(buf + 100);
		h->claim_floor = pmrep_get_le64(buf + 108);
		if (h->set_size > PMREP_MIRROR_MAX_REPLICAS ||
				h->set_quorum > h->set_size)
			SLOT_ERR("replica header: set size %u, quorum %u",
					h->set_size, h->set_quorum);
	} else {
		h->seq = 0;
		memcpy(h->uuid, buf + 16, PMREP_UUID_SIZE);
		memset(h->replica_id, 0, PMREP_UUID_SIZE);
		h->generation = pmrep_get_le64(buf + 48);
		h->owner = pmrep_get_le64(buf + 56);
		h->run_gen = h->run_owner = h->claim_floor = 0;
		h->set_size = h->set_quorum = 0;
	}
	return 0;
}

int
replica_hdr_decode(const uint8_t *buf, size_t len, uint64_t file_size,
		struct replica_hdr *h)
{
	if (buf == NULL || len < REPLICA_HDR_BLOCK) {
		PMREP_LOG_ERR("replica header truncated: %zu < %d bytes",
				buf == NULL ? 0 : len, REPLICA_HDR_BLOCK);
		return PMREP_E_MALFORMED;
	}
	struct replica_hdr s[REPLICA_HDR_SLOTS];
	bool ok[REPLICA_HDR_SLOTS];
	for (unsigned i = 0; i < REPLICA_HDR_SLOTS; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		ok[i] = replica_slot_decode(buf + REPLICA_HDR_SLOT_OFF(i),
				&s[i], true) == 0;
		s[i].slot = i;
	}
	/* a v1 slot is only ever at 0: the slot at 2048 is written by v2 */
	if (ok[1] && s[1].version != 2)
		ok[1] = false;
	if (!ok[0] && !ok[1]) {
		/* say why slot 0 is bad (the one a v1 or fresh header has) */
		(void) replica_slot_decode(buf, &s[0], false);
		PMREP_LOG_ERR("replica header: neither of its two slots is valid");
		return PMREP_E_MALFORMED;
	}
	unsigned pick = !ok[0] ? 1 : !ok[1] ? 0 : (s[1].seq > s[0].seq ? 1 : 0);
	uint64_t data_size = s[pick].data_size;
	if (file_size != 0 && file_size != PMREP_REPLICA_DATA_OFFSET + data_size) {
		PMREP_LOG_ERR("replica header says %llu data bytes, but the replica holds %llu (expected %llu)",
				(unsigned long long)data_size,
				(unsigned long long)(file_size > PMREP_REPLICA_DATA_OFFSET ?
					file_size - PMREP_REPLICA_DATA_OFFSET : 0),
				(unsigned long long)data_size);
		return PMREP_E_RANGE;
	}
	*h = s[pick];
	/* the live position record's writer */
	size_t rec = (h->flags & REPLICA_F_POSW1) ? REPLICA_PSN1_OFF :
		REPLICA_PSN_OFF;
	h->pos_gen = h->version == 2 ? pmrep_get_le64(buf + rec + 8) : 0;
	h->pos_owner = h->version == 2 ? pmrep_get_le64(buf + rec + 16) : 0;
	return 0;
}

int
replica_hdr_write(struct pmrep_pmem *pmem, uint8_t *base,
		struct replica_hdr *cur, const struct replica_hdr *next)
{
	struct replica_hdr n = *next;
	n.slot = cur->slot ^ 1u;
	n.seq = cur->seq + 1;
	n.version = 2;
	uint8_t enc[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&n, enc);
	uint8_t *dst = base + REPLICA_HDR_SLOT_OFF(n.slot);
	memcpy(dst, enc, sizeof(enc));
	int ret = pmrep_pmem_persist(pmem, dst, sizeof(enc));
	if (ret) {
		PMREP_LOG_ERR("replica header: persisting its slot %u (sequence %llu) failed: %s",
				n.slot, (unsigned long long)n.seq,
				pmrep_err_to_str(ret));
		return ret;
	}
	*cur = n;
	return 0;
}

uint64_t
replica_psn_get(const uint8_t *base)
{
	uint64_t v;
	memcpy(&v, base + REPLICA_PSN_OFF, sizeof(v));
	return le64toh(v);
}

int
replica_psn_write(struct pmrep_pmem *pmem, uint8_t *base, uint64_t psn)
{
	uint64_t *w = (uint64_t *)(void *)(base + REPLICA_PSN_OFF);
	__atomic_store_n(w, htole64(psn), __ATOMIC_RELEASE);
	return pmrep_pmem_persist(pmem, w, sizeof(*w));
}

static uint64_t
word_get(const uint8_t *base, size_t off)
{
	uint64_t v;
	memcpy(&v, base + off, sizeof(v));
	return le64toh(v);
}

static int
word_write(struct pmrep_pmem *pmem, uint8_t *base, size_t off, uint64_t v)
{
	uint64_t *w = (uint64_t *)(void *)(base + off);
	__atomic_store_n(w, htole64(v), __ATOMIC_RELEASE);
	return pmrep_pmem_persist(pmem, w, sizeof(*w));
}

static size_t
live_off(const struct replica_hdr *h)
{
	return (h->flags & REPLICA_F_POSW1) ? REPLICA_PSN1_OFF : REPLICA_PSN_OFF;
}

uint64_t
replica_pos_psn(const uint8_t *base, const struct replica_hdr *h)
{
	return word_get(base, live_off(h));
}

int
replica_pos_record(struct pmrep_pmem *pmem, uint8_t *base,
		struct replica_hdr *cur, uint64_t gen, uint64_t owner,
		uint64_t psn)
{
	return replica_pos_record_flags(pmem, base, cur, gen, owner, psn, 0);
}

int
replica_pos_record_flags(struct pmrep_pmem *pmem, uint8_t *base,
		struct replica_hdr *cur, uint64_t gen, uint64_t owner,
		uint64_t psn, uint32_t set_flags)
{
	struct replica_hdr next = *cur;
	next.flags |= set_flags;
	int ret;
	if (psn == 0) {
		/* no position to record */
	} else if (cur->pos_gen == gen && cur->pos_owner == owner) {
		if (psn > word_get(base, live_off(cur))) {
			ret = word_write(pmem, base, live_off(cur), psn);
			if (ret)
				return ret;
		}
	} else {
		/* another writer's history: the record not live first, then
		 * the slot that makes it live (the old position stands until
		 * then) */
		size_t other = live_off(cur) == REPLICA_PSN_OFF ?
			REPLICA_PSN1_OFF : REPLICA_PSN_OFF;
		uint8_t *r = base + other;
		pmrep_put_le64(r, psn);
		pmrep_put_le64(r + 8, gen);
		pmrep_put_le64(r + 16, owner);
		ret = pmrep_pmem_persist(pmem, r, REPLICA_POS_REC);
		if (ret)
			return ret;
		next.pos_gen = gen;
		next.pos_owner = owner;
		next.flags ^= REPLICA_F_POSW1;
	}
	if (next.flags == cur->flags && next.pos_gen == cur->pos_gen &&
			next.pos_owner == cur->pos_owner)
		return 0;
	/* one slot write: the switch and the flags together */
	return replica_hdr_write(pmem, base, cur, &next);
}

int
replica_pos_adopt(struct pmrep_pmem *pmem, uint8_t *base,
		struct replica_hdr *cur, const struct pmrep_replica_position *src)
{
	size_t other = live_off(cur) == REPLICA_PSN_OFF ?
		REPLICA_PSN1_OFF : REPLICA_PSN_OFF;
	uint8_t *r = base + other;
	pmrep_put_le64(r, src->seq);
	pmrep_put_le64(r + 8, src->generation);
	pmrep_put_le64(r + 16, src->owner);
	int ret = pmrep_pmem_persist(pmem, r, REPLICA_POS_REC);
	if (ret)
		return ret;
	struct replica_hdr next = *cur;
	next.pos_gen = src->generation;
	next.pos_owner = src->owner;
	next.run_gen = src->run_generation;
	next.run_owner = src->run_owner;
	next.claim_floor = src->run_floor;
	uint32_t run_flags = REPLICA_F_TRACKED | REPLICA_F_PRIMARY |
		REPLICA_F_RUN_CLOSED;
	next.flags &= ~(run_flags | REPLICA_F_INCOMPLETE);
	next.flags |= src->flags & run_flags;
	next.flags ^= REPLICA_F_POSW1;
	return replica_hdr_write(pmem, base, cur, &next);
}

/* read the header at `path` into *info and (NULL: not wanted) *mb */
static int
read_hdr(const char *path, struct pmrep_replica_info *info,
		struct pmrep_replica_membership *mb,
		struct pmrep_replica_position *pos)
{
	pmrep_err_clear();

	struct stat st;
	if (stat(path, &st) != 0)
		return PMREP_ERR_PROVIDER(errno, path);

	int ret;
	struct replica_hdr h;
	uint64_t psn = 0;
	if (S_ISCHR(st.st_mode)) {
		/* device DAX: no read(2), only mmap, so map it */
		struct pmrep_pmem *pmem = NULL;
		ret = pmrep_pmem_open(path, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
				&pmem);
		if (ret)
			return ret;
		ret = replica_hdr_decode(pmrep_pmem_get_address(pmem),
				pmrep_pmem_get_size(pmem), pmrep_pmem_get_size(pmem),
				&h);
		if (ret == 0) {
			psn = replica_pos_psn(pmrep_pmem_get_address(pmem), &h);
			if (pos != NULL)
				repl_position_from_hdr(pos, &h,
						pmrep_pmem_get_address(pmem));
		}
		(void) pmrep_pmem_close(&pmem);
	} else if (!S_ISREG(st.st_mode)) {
		/* a FIFO would block the open / read forever; a directory or
		 * a socket holds no header */
		PMREP_LOG_ERR("%s: neither a regular file nor a device DAX",
				path);
		return PMREP_E_INVAL;
	} else {
		uint8_t buf[REPLICA_HDR_BLOCK];
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			return PMREP_ERR_PROVIDER(errno, path);
		ssize_t n = pread(fd, buf, sizeof(buf), 0);
		if (n < 0)
			ret = PMREP_ERR_PROVIDER(errno, "pread");
		else if (st.st_size == 0)
			ret = replica_hdr_decode(buf, 0, 0, &h);
		else
			ret = replica_hdr_decode(buf, (size_t)n,
					(uint64_t)st.st_size, &h);
		if (ret == 0) {
			psn = replica_pos_psn(buf, &h);
			if (pos != NULL)
				repl_position_from_hdr(pos, &h, buf);
		}
		close(fd);
	}
	if (ret)
		return ret;
	memcpy(info->uuid, h.uuid, PMREP_UUID_SIZE);
	info->data_offset = PMREP_REPLICA_DATA_OFFSET;
	info->data_size = h.data_size;
	info->generation = h.generation;
	info->flags = h.flags;
	memcpy(info->replica_id, h.replica_id, PMREP_UUID_SIZE);
	info->owner = h.owner;
	info->seq = h.seq;
	info->last_persist_seq = psn;
	if (mb != NULL)
		*mb = (struct pmrep_replica_membership){ .set_size = h.set_size,
			.quorum = h.set_quorum };
	return 0;
}

int
pmrep_replica_read_info(const char *path, struct pmrep_replica_info *info)
{
	if (path == NULL || info == NULL) {
		PMREP_LOG_ERR("invalid argument: %s is NULL",
				path == NULL ? "path" : "info");
		return PMREP_E_INVAL;
	}
	return read_hdr(path, info, NULL, NULL);
}

int
pmrep_replica_read_membership(const char *path,
		struct pmrep_replica_membership *mb)
{
	if (path == NULL || mb == NULL) {
		PMREP_LOG_ERR("invalid argument: %s is NULL",
				path == NULL ? "path" : "mb");
		return PMREP_E_INVAL;
	}
	struct pmrep_replica_info info;
	return read_hdr(path, &info, mb, NULL);
}

int
pmrep_replica_read_position(const char *path,
		struct pmrep_replica_position *pos)
{
	if (path == NULL || pos == NULL) {
		PMREP_LOG_ERR("invalid argument: %s is NULL",
				path == NULL ? "path" : "pos");
		return PMREP_E_INVAL;
	}
	struct pmrep_replica_info info;
	return read_hdr(path, &info, NULL, pos);
}
