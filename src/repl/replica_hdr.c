/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replica_hdr.c -- the replica header's one encoder and decoder, and
 * pmrep_replica_read_info.
 *
 * Layout, REPLICA_HDR_ENC_SIZE (128) bytes at offset 0 of the replica,
 * little-endian; the data area starts at PMREP_REPLICA_DATA_OFFSET (4096):
 *    0  u8[8] magic "PMREPRPL"
 *    8  u16 version (1)
 *   10  u16 header length (128)
 *   12  u32 flags (PMREP_REPLICA_F_*; others reserved, 0)
 *   16  u8[16] replica-set UUID (all zero: unclaimed)
 *   32  u64 data offset (4096)
 *   40  u64 data size in bytes (> 0)
 *   48  u64 generation
 *   56  u64 attach id (session id of the last mirror that attached)
 *   64  u8[56] reserved (0)
 *  120  u64 checksum: Fletcher-64 of bytes 0..119
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/wire.h"
#include "replica_hdr.h"

static const uint8_t hdr_magic[8] = { 'P', 'M', 'R', 'E', 'P', 'R', 'P', 'L' };
#define HDR_VERSION 1
#define HDR_CSUM_OFF 120
#define HDR_FLAGS_KNOWN PMREP_REPLICA_F_CONSISTENT

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
replica_uuid_is_nil(const uint8_t *uuid)
{
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		if (uuid[i] != 0)
			return false;
	return true;
}

void
replica_hdr_encode(const struct replica_hdr *h, uint8_t *out)
{
	memset(out, 0, REPLICA_HDR_ENC_SIZE);
	memcpy(out, hdr_magic, sizeof(hdr_magic));
	pmrep_put_le16(out + 8, HDR_VERSION);
	pmrep_put_le16(out + 10, REPLICA_HDR_ENC_SIZE);
	pmrep_put_le32(out + 12, h->flags);
	memcpy(out + 16, h->uuid, PMREP_UUID_SIZE);
	pmrep_put_le64(out + 32, PMREP_REPLICA_DATA_OFFSET);
	pmrep_put_le64(out + 40, h->data_size);
	pmrep_put_le64(out + 48, h->generation);
	pmrep_put_le64(out + 56, h->attach_id);
	pmrep_put_le64(out + HDR_CSUM_OFF, replica_fletcher64(out, HDR_CSUM_OFF));
}

int
replica_hdr_decode(const uint8_t *buf, size_t len, uint64_t file_size,
		struct replica_hdr *h)
{
	if (len < REPLICA_HDR_ENC_SIZE) {
		PMREP_LOG_ERR("replica header truncated: %zu < %d bytes", len,
				REPLICA_HDR_ENC_SIZE);
		return PMREP_E_MALFORMED;
	}
	if (memcmp(buf, hdr_magic, sizeof(hdr_magic)) != 0) {
		PMREP_LOG_ERR("replica header: bad magic (not a pmrep replica)");
		return PMREP_E_MALFORMED;
	}
	if (pmrep_get_le16(buf + 8) != HDR_VERSION) {
		PMREP_LOG_ERR("replica header: unknown version %u",
				pmrep_get_le16(buf + 8));
		return PMREP_E_MALFORMED;
	}
	uint64_t csum = pmrep_get_le64(buf + HDR_CSUM_OFF);
	if (csum != replica_fletcher64(buf, HDR_CSUM_OFF)) {
		PMREP_LOG_ERR("replica header: bad checksum 0x%016llx",
				(unsigned long long)csum);
		return PMREP_E_MALFORMED;
	}
	uint32_t flags = pmrep_get_le32(buf + 12);
	if (pmrep_get_le16(buf + 10) != REPLICA_HDR_ENC_SIZE ||
			pmrep_get_le64(buf + 32) != PMREP_REPLICA_DATA_OFFSET) {
		PMREP_LOG_ERR("replica header: bad header length %u or data offset %llu",
				pmrep_get_le16(buf + 10),
				(unsigned long long)pmrep_get_le64(buf + 32));
		return PMREP_E_MALFORMED;
	}
	if ((flags & ~HDR_FLAGS_KNOWN) != 0) {
		PMREP_LOG_ERR("replica header: unknown flags 0x%x", flags);
		return PMREP_E_MALFORMED;
	}
	for (int i = 64; i < HDR_CSUM_OFF; i++) {
		if (buf[i] != 0) {
			PMREP_LOG_ERR("replica header: reserved byte %d set", i);
			return PMREP_E_MALFORMED;
		}
	}
	uint64_t data_size = pmrep_get_le64(buf + 40);
	if (data_size == 0 || data_size > UINT64_MAX - PMREP_REPLICA_DATA_OFFSET) {
		PMREP_LOG_ERR("replica header: bad data size %llu",
				(unsigned long long)data_size);
		return PMREP_E_MALFORMED;
	}
	if (file_size != 0 && file_size != PMREP_REPLICA_DATA_OFFSET + data_size) {
		PMREP_LOG_ERR("replica header says %llu data bytes, but the replica holds %llu (expected %llu)",
				(unsigned long long)data_size,
				(unsigned long long)(file_size > PMREP_REPLICA_DATA_OFFSET ?
					file_size - PMREP_REPLICA_DATA_OFFSET : 0),
				(unsigned long long)data_size);
		return PMREP_E_RANGE;
	}
	memcpy(h->uuid, buf + 16, PMREP_UUID_SIZE);
	h->data_size = data_size;
	h->generation = pmrep_get_le64(buf + 48);
	h->attach_id = pmrep_get_le64(buf + 56);
	h->flags = flags;
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
	pmrep_err_clear();

	struct stat st;
	if (stat(path, &st) != 0)
		return PMREP_ERR_PROVIDER(errno, path);

	int ret;
	struct replica_hdr h;
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
		(void) pmrep_pmem_close(&pmem);
	} else if (!S_ISREG(st.st_mode)) {
		/* a FIFO would block the open / read forever; a directory or
		 * a socket holds no header */
		PMREP_LOG_ERR("%s: neither a regular file nor a device DAX",
				path);
		return PMREP_E_INVAL;
	} else {
		uint8_t buf[REPLICA_HDR_ENC_SIZE];
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
		close(fd);
	}
	if (ret)
		return ret;
	memcpy(info->uuid, h.uuid, PMREP_UUID_SIZE);
	info->data_offset = PMREP_REPLICA_DATA_OFFSET;
	info->data_size = h.data_size;
	info->generation = h.generation;
	info->flags = h.flags;
	return 0;
}
