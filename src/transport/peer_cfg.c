/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peer_cfg.c -- the peer configuration and its wire descriptor.
 *
 * Descriptor, PMREP_PEER_CFG_DESC_SIZE (8) bytes, little-endian:
 *   0  u16 magic 0x4350 ("PC")
 *   2  u8  version (1)
 *   3  u8  flags: bit 0 direct write to pmem; other bits reserved (0)
 *   4  u32 reserved (0)
 */
#include <stdlib.h>

#include "common.h"
#include "common/wire.h"

#define PEER_CFG_MAGIC 0x4350
#define PEER_CFG_VERSION 1
#define PEER_CFG_F_DIRECT_WRITE_TO_PMEM 0x01

struct pmrep_peer_cfg {
	bool direct_write_to_pmem;
};

int
pmrep_peer_cfg_new(struct pmrep_peer_cfg **cfg_ptr)
{
	PMREP_CHECK_ARG(cfg_ptr);
	struct pmrep_peer_cfg *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		PMREP_LOG_ERR("out of memory for a peer configuration");
		return PMREP_E_NOMEM;
	}
	*cfg_ptr = cfg;
	return 0;
}

int
pmrep_peer_cfg_delete(struct pmrep_peer_cfg **cfg_ptr)
{
	PMREP_CHECK_ARG(cfg_ptr);
	free(*cfg_ptr);
	*cfg_ptr = NULL;
	return 0;
}

int
pmrep_peer_cfg_set_direct_write_to_pmem(struct pmrep_peer_cfg *cfg,
		bool supported)
{
	PMREP_CHECK_ARG(cfg);
	cfg->direct_write_to_pmem = supported;
	return 0;
}

int
pmrep_peer_cfg_get_direct_write_to_pmem(const struct pmrep_peer_cfg *cfg,
		bool *supported)
{
	PMREP_CHECK_ARG(cfg);
	PMREP_CHECK_ARG(supported);
	*supported = cfg->direct_write_to_pmem;
	return 0;
}

int
pmrep_peer_cfg_get_descriptor(const struct pmrep_peer_cfg *cfg, void *desc)
{
	PMREP_CHECK_ARG(cfg);
	PMREP_CHECK_ARG(desc);
	uint8_t *d = desc;
	pmrep_put_le16(d, PEER_CFG_MAGIC);
	d[2] = PEER_CFG_VERSION;
	d[3] = cfg->direct_write_to_pmem ? PEER_CFG_F_DIRECT_WRITE_TO_PMEM : 0;
	pmrep_put_le32(d + 4, 0);
	return 0;
}

int
pmrep_peer_cfg_from_descriptor(const void *desc, size_t size,
		struct pmrep_peer_cfg **cfg_ptr)
{
	PMREP_CHECK_ARG(desc);
	PMREP_CHECK_ARG(cfg_ptr);
	const uint8_t *d = desc;

	if (size < PMREP_PEER_CFG_DESC_SIZE) {
		PMREP_LOG_ERR("peer configuration descriptor too short: %zu < %d bytes",
				size, PMREP_PEER_CFG_DESC_SIZE);
		return PMREP_E_MALFORMED;
	}
	if (pmrep_get_le16(d) != PEER_CFG_MAGIC) {
		PMREP_LOG_ERR("peer configuration descriptor: bad magic 0x%04x",
				pmrep_get_le16(d));
		return PMREP_E_MALFORMED;
	}
	if (d[2] != PEER_CFG_VERSION) {
		PMREP_LOG_ERR("peer configuration descriptor: unknown version %u",
				d[2]);
		return PMREP_E_MALFORMED;
	}
	if ((d[3] & ~PEER_CFG_F_DIRECT_WRITE_TO_PMEM) != 0 ||
			pmrep_get_le32(d + 4) != 0) {
		PMREP_LOG_ERR("peer configuration descriptor: reserved bits set");
		return PMREP_E_MALFORMED;
	}
	int ret = pmrep_peer_cfg_new(cfg_ptr);
	if (ret)
		return ret;
	(*cfg_ptr)->direct_write_to_pmem =
		(d[3] & PEER_CFG_F_DIRECT_WRITE_TO_PMEM) != 0;
	return 0;
}
