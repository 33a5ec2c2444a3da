/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_descriptors.c -- libFuzzer target of the two descriptors that
 * travel in the replication handshake: the MR descriptor
 * (pmrep_mr_remote_from_descriptor) and the peer configuration descriptor
 * (pmrep_peer_cfg_from_descriptor). The same bytes go to both; whatever a
 * decoder accepts must re-encode with the library's own encoder
 * (pmrep_mr_get_descriptor of a local MR holding the decoded fields,
 * pmrep_peer_cfg_get_descriptor) to exactly the bytes it read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pmrep/transport.h>

#include "transport/provider.h"

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
check_mr(const uint8_t *data, size_t size)
{
	struct pmrep_mr_remote *rmr = NULL;
	int r = pmrep_mr_remote_from_descriptor(data, size, &rmr);
	if (r == PMREP_E_MALFORMED) {
		if (rmr != NULL)
			abort();
		return;
	}
	if (r != 0 || rmr == NULL || size < PMREP_MR_DESC_SIZE)
		abort();
	if (rmr->size == 0 || rmr->raddr + rmr->size < rmr->raddr ||
			rmr->usage == 0 || (rmr->usage & ~PMREP_MR_USAGE_ALL) != 0)
		abort();
	/* a local MR that names the same region, encoded by the library */
	struct pmrep_peer peer;
	memset(&peer, 0, sizeof(peer));
	peer.provider = rmr->provider;
	struct pmrep_mr_local mr;
	memset(&mr, 0, sizeof(mr));
	mr.peer = &peer;
	mr.size = (size_t)rmr->size;
	mr.usage = rmr->usage;
	mr.raddr = rmr->raddr;
	mr.rkey = rmr->rkey;
	uint8_t again[PMREP_MR_DESC_SIZE];
	if (pmrep_mr_get_descriptor(&mr, again) != 0 ||
			memcmp(again, data, PMREP_MR_DESC_SIZE) != 0)
		abort();
	size_t got = 0;
	int ft = -1;
	if (pmrep_mr_remote_get_size(rmr, &got) != 0 || got != rmr->size ||
			pmrep_mr_remote_get_flush_type(rmr, &ft) != 0 ||
			(ft & ~rmr->usage) != 0)
		abort();
	if (pmrep_mr_remote_delete(&rmr) != 0 || rmr != NULL)
		abort();
}

static void
check_peer_cfg(const uint8_t *data, size_t size)
{
	struct pmrep_peer_cfg *cfg = NULL;
	int r = pmrep_peer_cfg_from_descriptor(data, size, &cfg);
	if (r == PMREP_E_MALFORMED) {
		if (cfg != NULL)
			abort();
		return;
	}
	if (r != 0 || cfg == NULL || size < PMREP_PEER_CFG_DESC_SIZE)
		abort();
	uint8_t again[PMREP_PEER_CFG_DESC_SIZE];
	if (pmrep_peer_cfg_get_descriptor(cfg, again) != 0 ||
			memcmp(again, data, PMREP_PEER_CFG_DESC_SIZE) != 0)
		abort();
	if (pmrep_peer_cfg_delete(&cfg) != 0 || cfg != NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_mr(data, size);
	check_peer_cfg(data, size);
	return 0;
}
