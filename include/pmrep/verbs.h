/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/verbs.h -- the part of the transport API that takes or returns
 * rdma-core types: making a verbs peer on an ibv_context the application
 * opened itself (e.g. with mlx5dv_open_device for DEVX), and finding the
 * ibv_context behind an IP address.
 *
 * Neither <pmrep.h> nor <pmrep/transport.h> includes this header, so an
 * application that uses only addresses (pmrep_peer_open, the tcp
 * provider, the replication API) compiles without the libibverbs /
 * librdmacm development headers. Include it, after <pmrep.h> or
 * <pmrep/transport.h>, only when you hand pmrep an ibv_context; you then
 * need libibverbs' headers (pkg-config --cflags libibverbs).
 *
 * The conventions of <pmrep/transport.h> apply.
 */
#ifndef PMREP_VERBS_H
#define PMREP_VERBS_H

#include <stdbool.h>

#include <infiniband/verbs.h>
#include <pmrep/transport.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * pmrep_utils_get_ibv_context -- find the RDMA device that owns the local
 * IP address `addr` (is_local = true) or that routes to the remote IP
 * address `addr` (is_local = false) and return its ibv_context, which is
 * owned by librdmacm (do not close it). Resolves through a temporary
 * rdma_cm id and event channel, both destroyed before return.
 * Errors: PMREP_E_INVAL (NULL argument), PMREP_E_NOSUPP (no RDMA device
 * owns/reaches the address), PMREP_E_PROVIDER (an rdma_cm call failed:
 * pmrep_err_errno()), PMREP_E_NOMEM.
 * Thread-safe.
 */
PMREP_API int pmrep_utils_get_ibv_context(const char *addr, bool is_local,
		struct ibv_context **ibv_ctx);

/*
 * pmrep_peer_new -- a verbs peer on `ibv_ctx`: allocates a protection
 * domain, probes capabilities (ODP, native atomic write, native flush) and
 * opens the device's async-event fd. `ibv_ctx` stays owned by the caller
 * and must outlive the peer.
 * Errors: PMREP_E_INVAL, PMREP_E_PROVIDER (ibv_alloc_pd / ibv_query_device_ex
 * failed), PMREP_E_NOMEM.
 * Thread-safety: as every constructor (transport.h): the new peer is the
 * caller's; different contexts may be used concurrently.
 */
PMREP_API int pmrep_peer_new(struct ibv_context *ibv_ctx,
		struct pmrep_peer **peer_ptr);

#ifdef __cplusplus
}
#endif
#endif /* PMREP_VERBS_H */
