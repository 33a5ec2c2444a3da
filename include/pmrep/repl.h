/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/repl.h -- the replication layer, one header per object, all
 * included here: <pmrep/key.h> (the pre-shared keys), <pmrep/replica.h>
 * (the replica header that a replica's file starts with, and the pmrep
 * log), <pmrep/mirror.h> (the mirror, which makes pmrep_mirror_persist()
 * mean "durable here and on every replica the policy requires"),
 * <pmrep/target.h> (the replica target that serves one replica file or
 * device DAX to a mirror, and the listener that serves several) and
 * <pmrep/failover.h> (positions, queries, promotion, recovery).
 *
 * Conventions (all functions): return 0 or a negative PMREP_E_* code, and
 * every error is also logged (pmrep_err_msg() has the line); sizes,
 * offsets and lengths are bytes; time limits are milliseconds, and every
 * call that can wait takes one (no call waits without a limit);
 * constructors are x_new(…, &out), destructors x_delete(&p) accept
 * *p == NULL and set *p = NULL.
 * Thread safety: one object may be used by one thread at a time; different
 * objects may be used concurrently. Functions that say "thread-safe" may be
 * called from any thread at any time.
 */
#ifndef PMREP_REPL_H
#define PMREP_REPL_H

#include <pmrep/base.h>
#include <pmrep/pmem.h>
#include <pmrep/key.h>
#include <pmrep/replica.h>
#include <pmrep/mirror.h>
#include <pmrep/target.h>
#include <pmrep/failover.h>

#endif /* PMREP_REPL_H */
