/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testhook.h -- the seams through which the deterministic fault-injection
 * harness (tests/sim) runs pmrep's real code in one simulated world: a
 * virtual clock, the one blocking wait of the transport, the provider a
 * peer gets, and every persist of a pmem mapping (so the harness can keep
 * a durable shadow of each mapping and crash a process at any persistent
 * write). All NULL in production: the library then reads CLOCK_MONOTONIC,
 * polls, picks verbs / tcp and persists through libpmem2 / msync.
 * Internal: not exported from libpmrep.so (the harness links the objects).
 * Set them before any pmrep object exists, from one thread.
 */
#ifndef PMREP_COMMON_TESTHOOK_H
#define PMREP_COMMON_TESTHOOK_H

#include <stdbool.h>
#include <stddef.h>

struct pmrep_peer;
struct pmrep_pmem;

struct pmrep_test_hooks {
	/* the clock of every deadline, in ms (pmrep_now_ms) */
	long long (*now_ms)(void);
	/* the wall clock of the admission proof's time window, in ms since
	 * the epoch (repl_wall_ms; CLOCK_REALTIME when NULL) */
	long long (*wall_ms)(void);
	/* wait until `fd` is readable or timeout_ms (-1: none) passed:
	 * 0, PMREP_E_TIMEOUT or an error (pmrep_fd_wait_readable) */
	int (*fd_wait)(int fd, int timeout_ms);
	/* the provider a peer is opened with (pmrep_peer_open) */
	int (*peer_open)(const char *addr, bool is_local,
			struct pmrep_peer **peer);
	/* called by pmrep_pmem_persist before the range is persisted; a
	 * nonzero return is that persist's failure (a PMREP_E_* code) */
	int (*pmem_persist)(struct pmrep_pmem *pmem, const void *ptr,
			size_t len);
	/*
	 * the broken order protocol v2 replaced, for showing that the
	 * harness catches it: the target writes its claim when it accepts
	 * AUTH (before the mirror confirmed), and the mirror takes "owner ==
	 * our primary id" as proof that its record covers the replica
	 */
	bool repl_commit_before_confirm;
	/*
	 * the order promote had before failover v2, for showing that the
	 * harness (tests/sim/sim_failover.c) catches it: pmrep_mirror_promote
	 * decides from its read-only pass, then fences and does not decide
	 * again (a writer still alive moves the positions in between)
	 */
	bool repl_promote_decide_before_fence;
};

extern struct pmrep_test_hooks pmrep_test_hooks;

#endif /* PMREP_COMMON_TESTHOOK_H */
