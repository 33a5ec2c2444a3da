/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_verbs_stub.c -- the fuzz targets build the generic layer and the
 * tcp provider only; the verbs provider's entry points are stubbed.
 */
#include "transport/provider.h"

const struct pmrep_provider_ops pmrep_verbs_ops;

int
pmrep_verbs_peer_new(struct ibv_context *ibv_ctx, struct pmrep_peer **peer)
{
	(void) ibv_ctx;
	(void) peer;
	return PMREP_E_NOSUPP;
}

int
pmrep_verbs_peer_new_cm(struct ibv_context *ibv_ctx, struct pmrep_peer **peer)
{
	(void) ibv_ctx;
	(void) peer;
	return PMREP_E_NOSUPP;
}
