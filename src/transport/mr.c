/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mr.c -- local memory regions (registration through the provider) and
 * remote memory regions, with the one encoder / decoder of the MR
 * descriptor.
 *
 * MR descriptor, PMREP_MR_DESC_SIZE (32) bytes, little-endian:
 *   0  u16 magic 0x524d ("MR")
 *   2  u8  version (1)
 *   3  u8  provider (enum pmrep_provider)
 *   4  u32 rkey
 *   8  u64 address the remote side names
 *  16  u64 size in bytes (> 0, address + size must not overflow)
 *  24  u16 usage (PMREP_MR_USAGE_* bits)
 *  26  u16 reserved (0)
 *  28  u32 reserved (0)
 */
#include <stdlib.h>

#include "common.h"
#include "common/wire.h"

#define MR_DESC_MAGIC 0x524d
#define MR_DESC_VERSION 1

int
pmrep_mr_reg(struct pmrep_peer *peer, void *ptr, size_t size, int usage,
		struct pmrep_mr_local **mr_ptr)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(ptr);
	PMREP_CHECK_ARG(mr_ptr);
	if (size == 0) {
		PMREP_LOG_ERR("cannot register a region of 0 bytes");
		return PMREP_E_INVAL;
	}
	if ((usage & PMREP_MR_USAGE_ALL) == 0 ||
			(usage & ~(PMREP_MR_USAGE_ALL | PMREP_MR_USAGE_MW_BIND)) != 0) {
		PMREP_LOG_ERR("invalid MR usage 0x%x", (unsigned)usage);
		return PMREP_E_INVAL;
	}
	int ret = peer->ops->mr_reg(peer, ptr, size, usage, mr_ptr);
	if (ret)
		return ret;
	pmrep_peer_ref(peer);
	return 0;
}

int
pmrep_mr_set_persist_fn(struct pmrep_mr_local *mr, pmrep_persist_fn *persist,
		void *ctx)
{
	PMREP_CHECK_ARG(mr);
	PMREP_CHECK_ARG(persist);
	mr->persist = persist;
	mr->persist_ctx = ctx;
	return 0;
}

int
pmrep_mr_dereg(struct pmrep_mr_local **mr_ptr)
{
	PMREP_CHECK_ARG(mr_ptr);
	struct pmrep_mr_local *mr = *mr_ptr;
	if (mr == NULL)
		return 0;
	*mr_ptr = NULL;
	struct pmrep_peer *peer = mr->peer;
	int ret = peer->ops->mr_dereg(mr);
	pmrep_peer_unref(peer);
	return ret;
}

int
pmrep_mr_get_ptr(const struct pmrep_mr_local *mr, void **ptr)
{
	PMREP_CHECK_ARG(mr);
	PMREP_CHECK_ARG(ptr);
	*ptr = mr->ptr;
	return 0;
}

int
pmrep_mr_get_size(const struct pmrep_mr_local *mr, size_t *size)
{
	PMREP_CHECK_ARG(mr);
	PMREP_CHECK_ARG(size);
	*size = mr->size;
	return 0;
}

int
pmrep_mr_get_usage(const struct pmrep_mr_local *mr, int *usage)
{
	PMREP_CHECK_ARG(mr);
	PMREP_CHECK_ARG(usage);
	*usage = mr->usage;
	return 0;
}

int
pmrep_mr_get_descriptor(const struct pmrep_mr_local *mr, void *desc)
{
	PMREP_CHECK_ARG(mr);
	PMREP_CHECK_ARG(desc);
	if (mr->usage & PMREP_MR_USAGE_MW_BIND) {
		PMREP_LOG_ERR("the MR is reached only through memory windows (PMREP_MR_USAGE_MW_BIND): its own rkey grants nothing; use pmrep_mw_get_descriptor");
		return PMREP_E_INVAL;
	}
	pmrep_mr_desc_encode(mr->peer->provider, mr->rkey, mr->raddr, mr->size,
			mr->usage, desc);
	return 0;
}

void
pmrep_mr_desc_encode(enum pmrep_provider provider, uint32_t rkey,
		uint64_t raddr, uint64_t size, int usage, void *desc)
{
	uint8_t *d = desc;
	pmrep_put_le16(d, MR_DESC_MAGIC);
	d[2] = MR_DESC_VERSION;
	d[3] = (uint8_t)provider;
	pmrep_put_le32(d + 4, rkey);
	pmrep_put_le64(d + 8, raddr);
	pmrep_put_le64(d + 16, size);
	pmrep_put_le16(d + 24, (uint16_t)(usage & PMREP_MR_USAGE_ALL));
	pmrep_put_le16(d + 26, 0);
	pmrep_put_le32(d + 28, 0);
}

int
pmrep_mr_remote_from_descriptor(const void *desc, size_t size,
		struct pmrep_mr_remote **mr_ptr)
{
	PMREP_CHECK_ARG(desc);
	PMREP_CHECK_ARG(mr_ptr);
	const uint8_t *d = desc;

	if (size < PMREP_MR_DESC_SIZE) {
		PMREP_LOG_ERR("MR descriptor too short: %zu < %d bytes", size,
				PMREP_MR_DESC_SIZE);
		return PMREP_E_MALFORMED;
	}
	if (pmrep_get_le16(d) != MR_DESC_MAGIC || d[2] != MR_DESC_VERSION) {
		PMREP_LOG_ERR("MR descriptor: bad magic 0x%04x or version %u",
				pmrep_get_le16(d), d[2]);
		return PMREP_E_MALFORMED;
	}
	if (d[3] != PMREP_PROVIDER_VERBS && d[3] != PMREP_PROVIDER_TCP) {
		PMREP_LOG_ERR("MR descriptor: unknown provider %u", d[3]);
		return PMREP_E_MALFORMED;
	}
	uint64_t raddr = pmrep_get_le64(d + 8);
	uint64_t len = pmrep_get_le64(d + 16);
	uint16_t usage = pmrep_get_le16(d + 24);
	if (len == 0 || raddr + len < raddr) {
		PMREP_LOG_ERR("MR descriptor: bad range 0x%llx + %llu",
				(unsigned long long)raddr,
				(unsigned long long)len);
		return PMREP_E_MALFORMED;
	}
	if (usage == 0 || (usage & ~PMREP_MR_USAGE_ALL) != 0 ||
			pmrep_get_le16(d + 26) != 0 ||
			pmrep_get_le32(d + 28) != 0) {
		PMREP_LOG_ERR("MR descriptor: bad usage 0x%x or reserved bits set",
				usage);
		return PMREP_E_MALFORMED;
	}
	struct pmrep_mr_remote *mr = malloc(sizeof(*mr));
	if (mr == NULL) {
		PMREP_LOG_ERR("out of memory for a remote MR");
		return PMREP_E_NOMEM;
	}
	mr->provider = (enum pmrep_provider)d[3];
	mr->rkey = pmrep_get_le32(d + 4);
	mr->raddr = raddr;
	mr->size = len;
	mr->usage = usage;
	*mr_ptr = mr;
	return 0;
}

int
pmrep_mr_remote_delete(struct pmrep_mr_remote **mr_ptr)
{
	PMREP_CHECK_ARG(mr_ptr);
	free(*mr_ptr);
	*mr_ptr = NULL;
	return 0;
}

int
pmrep_mr_remote_get_size(const struct pmrep_mr_remote *mr, size_t *size)
{
	PMREP_CHECK_ARG(mr);
	PMREP_CHECK_ARG(size);
	*size = (size_t)mr->size;
	return 0;
}

int
pmrep_mr_remote_get_flush_type(const struct pmrep_mr_remote *mr,
		int *flush_type)
{
	PMREP_CHECK_ARG(mr);
	PMREP_CHECK_ARG(flush_type);
	*flush_type = mr->usage & (PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT);
	return 0;
}

int
pmrep_check_recv_dst(const struct pmrep_mr_local *dst, size_t offset,
		size_t len)
{
	if (!(dst->usage & PMREP_MR_USAGE_RECV)) {
		PMREP_LOG_ERR("the MR was not registered with PMREP_MR_USAGE_RECV");
		return PMREP_E_INVAL;
	}
	if (!pmrep_range_ok(dst->size, offset, len)) {
		PMREP_LOG_ERR("receive of %zu bytes at %zu is outside the %zu-byte MR",
				len, offset, dst->size);
		return PMREP_E_RANGE;
	}
	return 0;
}
