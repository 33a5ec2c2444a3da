/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recover.h -- pmrep_mirror_recover for a named replica of an endpoint
 * serving several (its selector), shared with a promotion's catch-up
 * (promote.c).
 */
#ifndef PMREP_REPL_RECOVER_H
#define PMREP_REPL_RECOVER_H

#include <pmrep/repl.h>

/* pmrep_mirror_recover of replica `selector` (NULL or "": the target's
 * one replica) */
int repl_recover_named(struct pmrep_pmem *pmem, const char *addr,
		const char *port, const char *selector, const uint8_t *key,
		size_t key_len, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, unsigned flags, int timeout_ms,
		struct pmrep_replica_info *info);

#endif /* PMREP_REPL_RECOVER_H */
