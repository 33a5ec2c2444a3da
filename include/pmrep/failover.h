/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/failover.h -- failing over (docs/FAILOVER.md): a copy's position
 * (which persists it holds) and the one decision of which copy is
 * newest, the read-only query of a replica's target, the promotion of a
 * replica to primary and the recovery of a lost local file from a
 * replica.
 *
 * The conventions of <pmrep/repl.h> apply.
 */
#ifndef PMREP_FAILOVER_H
#define PMREP_FAILOVER_H

#include <pmrep/base.h>
#include <pmrep/pmem.h>
#include <pmrep/key.h>
#include <pmrep/replica.h>
#include <pmrep/mirror.h>

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------------- positions */

/*
 * What a copy says of its position (docs/PROTOCOL.md "Position"): which
 * writer's steps it holds and how far, and what the last writer's run
 * that claimed it leaves it able to vouch for. Read from a replica's or a
 * log's header (pmrep_replica_read_position) or asked of its target
 * (pmrep_replica_query_position); ranked by pmrep_position_decide.
 */
struct pmrep_replica_membership;

struct pmrep_replica_position {
	uint64_t generation;	/* of the writer whose steps it holds (0: none recorded) */
	uint64_t owner;		/* that writer's primary id */
	uint64_t seq;		/* persist sequence of the newest of them it holds through */
	uint64_t run_generation; /* the last writer's run that claimed it (0: none) */
	uint64_t run_owner;	/* that run's primary id */
	uint64_t run_floor;	/* that run's first persist sequence */
	uint64_t fence_generation; /* the header's generation (sessions below are refused) */
	uint32_t flags;		/* PMREP_POSITION_F_* */
	uint32_t reserved0;	/* zero */
	uint64_t reserved[4];	/* zero; room to grow */
};
/* the header is marked consistent (PMREP_REPLICA_F_CONSISTENT) */
#define PMREP_POSITION_F_CONSISTENT (1u << 0)
/* removed from its set by its writer (PMREP_REPLICA_F_REMOVED): not a copy of the set */
#define PMREP_POSITION_F_REMOVED (1u << 1)
/* the run records a position at every step (per-step sequence on) */
#define PMREP_POSITION_F_TRACKED (1u << 3)
/* a writer's own log while its mirror runs: it holds every step of its run */
#define PMREP_POSITION_F_PRIMARY (1u << 5)
/* the run ended with a clean close at the position: complete as of it */
#define PMREP_POSITION_F_RUN_CLOSED (1u << 6)
/* a promotion's catch-up is copying another copy into it: it vouches
 * for nothing until the copy is complete */
#define PMREP_POSITION_F_INCOMPLETE (1u << 7)
/* never claimed: no copy of any set */
#define PMREP_POSITION_F_FRESH (1u << 16)

/*
 * pmrep_replica_read_position -- the position the header of a replica's
 * or a pmrep log's file `path` (a regular file or a device DAX) records.
 * Nothing is written. Thread-safe.
 * Errors: PMREP_E_INVAL (NULL argument; not a regular file nor a device
 * DAX), PMREP_E_MALFORMED (not a valid header), PMREP_E_RANGE (its data
 * size does not match the file's), PMREP_E_PROVIDER (stat / open / read
 * failed: pmrep_err_errno()).
 */
PMREP_API int pmrep_replica_read_position(const char *path,
		struct pmrep_replica_position *pos);

/*
 * pmrep_replica_query_position -- the same, asked read-only of the target
 * at addr:port serving replica `name` (NULL or "": its one replica), with
 * the pre-shared key (key_len bytes), within timeout_ms (> 0); in the same
 * one session, *info and *mb (each may be NULL: not wanted) receive the
 * header as pmrep_replica_query_membership gives it. Nothing is written on
 * the target; no session of it is touched. Thread-safe.
 * Errors: PMREP_E_INVAL (pos NULL), and those of pmrep_replica_query_named.
 */
PMREP_API int pmrep_replica_query_position(const char *addr, const char *port,
		const char *name, const uint8_t *key, size_t key_len,
		int timeout_ms, struct pmrep_replica_position *pos,
		struct pmrep_replica_info *info,
		struct pmrep_replica_membership *mb);

/*
 * pmrep_position_decide -- the one decision of which copy is newest, that
 * compare, promote and recover share (docs/PROTOCOL.md "Position", "The
 * decision"): among the n positions of copies of one set (fresh and
 * removed ones are skipped), a copy is *complete* when it vouches for
 * everything any of them may hold of a completed persist. A copy vouches
 * for its position when its run closed cleanly there, or when its run
 * records positions per step and it reached that run; a writer's own log
 * vouches for its whole run. A copy may hold up to what it vouches for,
 * or -- claimed by a run without per-step positions that did not close --
 * up to that run's end (a clean close of another copy of the run ends it
 * there). Read n - k + 1 copies (k of n: the quorum the headers record),
 * fenced when a writer may be alive, for the answer to cover every
 * completed persist.
 * On 0, *best is the complete copy that vouches for the most (among equal
 * ones, the lowest index); complete (n entries, may be NULL) says which
 * copies are complete; *conflict (may be NULL) is n.
 * Errors (nothing is written; *conflict, when not NULL, names a copy that
 * may hold more than the others vouch for):
 *  - PMREP_E_INVAL: NULL pos or best, or n == 0;
 *  - PMREP_E_SPLIT_BRAIN: two writers' positions of one generation and
 *    epoch, which do not compare ("cannot tell");
 *  - PMREP_E_STATE: no copy is complete ("cannot tell": reach that copy,
 *    or another that vouches for it), also when no copy of a set is among
 *    them (all fresh or removed; *conflict is then n).
 * Thread-safe (a pure function).
 */
PMREP_API int pmrep_position_decide(const struct pmrep_replica_position *pos,
		unsigned n, unsigned *best, unsigned *conflict, bool *complete);

/*
 * pmrep_position_compare -- how copy a stands to copy b: 1 (a is more
 * current: b may lack what a vouches for), -1 (b is), 0 (neither vouches
 * for more than the other may hold) or PMREP_E_SPLIT_BRAIN (they do not
 * compare). PMREP_E_INVAL: a NULL argument. Thread-safe.
 */
PMREP_API int pmrep_position_compare(const struct pmrep_replica_position *a,
		const struct pmrep_replica_position *b);

/* ------------------------------------------------------------------ query */

/*
 * pmrep_replica_query -- ask the replica target at `addr`:`port` what its
 * replica header says, over the network, read-only: connect, authenticate
 * with `key` (`key_len` bytes; the target proves it holds the key too) and
 * ask with intent QUERY for whatever replica set and generation the
 * replica holds, then disconnect. *info receives the header as the target
 * holds it now: set UUID (all zero: unclaimed), data offset and data size
 * in bytes, generation, flags (PMREP_REPLICA_F_CONSISTENT), replica id,
 * owner (primary id of the last committed attach), header slot sequence,
 * last persist sequence -- the fields pmrep_replica_read_info reads from
 * the file on the replica's host. `timeout_ms` bounds the whole call (-1:
 * no limit).
 *
 * Nothing changes, whatever the outcome: the target writes nothing for a
 * query (the header stays byte-identical; a header marked consistent
 * stays so), and a query never ends or takes over an ATTACHING or ACTIVE
 * session, so a running mirror attached to the replica goes on persisting
 * (a query takes one of the target's session slots while it runs; when
 * every slot is taken, its connection request -- like any -- may evict a
 * handshaking, closing or older query session). A mirror that attaches
 * meanwhile ends the query's session.
 *
 * Errors: PMREP_E_INVAL (NULL argument, empty address, key length outside
 * PMREP_KEY_MIN..PMREP_KEY_MAX, a port that is not 1..65535, timeout_ms
 * below -1), PMREP_E_AUTH (the target refused our key -- at the connection
 * request, by its admission proof: a wrong key, clocks more than 30 s
 * apart; the query names key id 0, so any key the target holds is right --
 * or failed to prove it holds it), PMREP_E_UNREACHABLE (nobody listens
 * there, or the target had no room: every session slot held by
 * handshakes or attached mirrors, or two handshakes of our address
 * pending), PMREP_E_TIMEOUT (no answer within
 * timeout_ms), PMREP_E_CONN_LOST (the connection ended during the
 * handshake), PMREP_E_MALFORMED (the target's answer or its region
 * descriptor did not decode: not a pmrep protocol 2 target), PMREP_E_RANGE
 * (a target refused the data size of "any": one that predates this
 * call), PMREP_E_PROVIDER (the target failed, e.g. it could not compute
 * its MAC; or the transport or the random generator failed:
 * pmrep_err_errno()), PMREP_E_NOMEM. pmrep_err_msg() names the replica and
 * the reason.
 * Thread-safe (each call has its own connection).
 */
PMREP_API int pmrep_replica_query(const char *addr, const char *port,
		const uint8_t *key, size_t key_len, int timeout_ms,
		struct pmrep_replica_info *info);
/*
 * pmrep_replica_query_named -- pmrep_replica_query of the replica served
 * under `name` at `addr`:`port` (an endpoint of several replicas:
 * pmrep-target --config, pmrep_listener_add_target); name NULL or "" is
 * pmrep_replica_query. An endpoint that serves no replica of that name
 * refuses it (PMREP_E_INVAL, pmrep_err_msg() "no such replica on this
 * target"). Errors: those of pmrep_replica_query; PMREP_E_INVAL also for a
 * name that is not 1..20 letters, digits, '.', '_', '-'.
 * Thread-safe (each call has its own connection).
 */
PMREP_API int pmrep_replica_query_named(const char *addr, const char *port,
		const char *name, const uint8_t *key, size_t key_len,
		int timeout_ms, struct pmrep_replica_info *info);
/*
 * pmrep_replica_query_membership -- pmrep_replica_query_named, and also
 * the membership the replica's header records (*mb; see
 * pmrep_replica_read_membership), in the same read-only session. `info`
 * may be NULL. Errors: those of pmrep_replica_query_named; PMREP_E_INVAL
 * also for a NULL mb. Thread-safe (each call has its own connection).
 */
PMREP_API int pmrep_replica_query_membership(const char *addr,
		const char *port, const char *name, const uint8_t *key,
		size_t key_len, int timeout_ms, struct pmrep_replica_info *info,
		struct pmrep_replica_membership *mb);

/*
 * pmrep_repl_set_tls_default -- whether pmrep_replica_query and
 * pmrep_mirror_recover (which take no cfg) use TLS on the tcp provider
 * (default true), as pmrep_mirror_cfg_set_tls does for a mirror.
 * Returns 0. Thread-safe (an atomic store); affects later calls.
 */
PMREP_API int pmrep_repl_set_tls_default(bool on);
/* ---------------------------------------------------------------- promote */

/* Flags of pmrep_mirror_promote */
/* promote even when a replica reached is more current than this log */
#define PMREP_PROMOTE_FORCE_STALE (1u << 0)
/* promote even when fewer than n - k + 1 replicas of the set can be fenced */
#define PMREP_PROMOTE_FORCE_FENCE (1u << 1)
/* return only once every replica reached is in sync with this log */
#define PMREP_PROMOTE_WAIT_SYNC (1u << 2)
/* the checks only (steps 1-3 below): is this node safe to promote? */
#define PMREP_PROMOTE_DRY_RUN (1u << 3)
/* refuse instead of catching up when a fenced copy is more current (by
 * default this node copies that copy first, then is promoted) */
#define PMREP_PROMOTE_NO_CATCH_UP (1u << 4)

/* What pmrep_mirror_promote found and did. */
struct pmrep_promote_result {
	uint64_t old_generation;	/* the newest generation seen: this log's and
					 * the reached replicas' */
	uint64_t generation;		/* the new one, recorded in this log's header
					 * (0: refused, or a dry run: nothing written) */
	uint64_t primary_id;		/* this node's primary id (its mirror record) */
	uint64_t last_persist_seq;	/* this log's header held this sequence */
	unsigned needed;		/* n - k + 1: this node and the replicas to fence */
	unsigned reached;		/* replicas of the cfg that answered the query */
	unsigned fenced;		/* replicas of the cfg that hold the new
					 * generation (committed it) */
	int more_current;		/* -1, or the cfg index of a replica reached that
					 * is more current than this log */
	/* the membership `needed` was computed from: the one of the
	 * arguments or the largest n - k + 1 the headers read recorded
	 * (this log's and the reached replicas'), whichever needs more */
	uint32_t set_size;
	uint32_t set_quorum;		/* 0: all */
	/* why it was refused (PMREP_PROMOTE_REFUSED_*; 0: not refused). A
	 * refusal after the fence leaves `generation` set: the copies
	 * fenced hold it, with no writer */
	uint32_t refused;
	/* 1: this log caught up first -- it copied the more current copy
	 * `more_current` names (PMREP_PROMOTE_NO_CATCH_UP: refused instead) */
	uint32_t caught_up;
	uint8_t reserved[48];		/* zero; room to grow */
};
/* a reached copy is more current than this log (more_current names it) */
#define PMREP_PROMOTE_REFUSED_STALE 1u
/* which copy is newest cannot be told (a copy may hold persists no
 * reachable copy vouches for, or two writers of one generation) */
#define PMREP_PROMOTE_REFUSED_CANNOT_TELL 2u
/* fewer than n - k + 1 copies could be fenced */
#define PMREP_PROMOTE_REFUSED_FENCE 3u
/* this log was removed from its set */
#define PMREP_PROMOTE_REFUSED_REMOVED 4u

/*
 * pmrep_mirror_promote -- make this node's file the primary of its replica
 * set after the primary failed (docs/FAILOVER.md): `log` is the file
 * opened in place with pmrep_log_open (which takes the lock the node's own
 * pmrep-target held: stop that target first, or pmrep_log_open fails with
 * PMREP_E_BUSY); `cfg` names the set's other replicas (pmrep_mirror_cfg_*:
 * replicas, key, TLS, timeouts; its UUID may be left unset -- the log's
 * header gives it -- and its generation is ignored) in the order the new
 * primary's mirror will use them. `set_size` (n) is the number of
 * replicas the failed primary wrote to, this node included (0: the cfg's
 * replicas plus this node; a cfg without replicas promotes a set of one:
 * the only replica of a primary gone for good, n = 1 -- unless the
 * headers record a larger set, which then refuses it); `set_quorum` (k) the quorum it wrote under
 * (0: all, k = n). With fewer than n - k + 1 replicas holding the new
 * generation, the old primary could still find k that never saw it and
 * complete a persist; this node counts as one (its own header holds the
 * new generation and its target no longer serves the file). The
 * membership the headers record (struct pmrep_replica_membership: each
 * writer records its own, and a change at run time is recorded before
 * it takes effect) counts too: the largest n - k + 1 among the
 * arguments', this log's header's and the reached replicas' is needed
 * (res->set_size and res->set_quorum name it), so that a set grown or a
 * quorum lowered at run time is fenced as it is, whatever the caller
 * remembered.
 *
 * Fence, then decide (docs/PROTOCOL.md "Promotion", "Position"), in order:
 * (1) read this log's header and ask every replica of the cfg read-only
 * (QUERY) for its generation and the membership it records; fewer than
 * n - k + 1 answering: PMREP_E_UNREACHABLE, nothing written (unless
 * PMREP_PROMOTE_FORCE_FENCE). With PMREP_PROMOTE_DRY_RUN, decide (4)
 * over the positions so read and return, writing nothing (a pre-check:
 * a live old primary can still move them; 0: this node is the most
 * current). (2) open the record (the cfg's state path, or the log's
 * default: a device DAX without one is refused) and record the new
 * generation (the newest seen + 1) with its primary id in the log's
 * header, crash-atomically, its position kept. (3) fence every replica
 * that answered: it commits the new generation (COMMIT kind FENCE),
 * closing every other session first -- the old primary's writes are
 * refused there from then on -- and reports its position as of that
 * fence; fewer than n - k + 1 copies fenced (this node included):
 * PMREP_E_UNREACHABLE (unless PMREP_PROMOTE_FORCE_FENCE). (4) decide
 * among the fenced copies only (pmrep_position_decide): this node is
 * promoted when it holds every persist any of them may hold. When a
 * fenced copy does and this node does not, this node catches up first:
 * it is marked incomplete durably, copies that replica (read-only, a
 * session a later fence closes; bounded by the create timeout, or a
 * minute when none is set), and takes its position (res->caught_up,
 * res->more_current names it); a copy that fails leaves this node
 * incomplete (a re-run catches up again) and returns the copy's error.
 * PMREP_PROMOTE_NO_CATCH_UP refuses instead (PMREP_E_STATE,
 * res->refused PMREP_PROMOTE_REFUSED_STALE). No copy complete, or two
 * writers of one generation: PMREP_E_STATE / PMREP_E_SPLIT_BRAIN
 * (PMREP_PROMOTE_REFUSED_CANNOT_TELL). PMREP_PROMOTE_FORCE_STALE promotes
 * this node anyway (the persists only another copy holds are
 * overwritten). (5) with PMREP_PROMOTE_WAIT_SYNC, a mirror at the new
 * generation resyncs the fenced replicas from this log and closes
 * cleanly before the return. The caller then creates its own mirror on
 * `log` with the same cfg and res->generation (and the same state file:
 * the primary id is its record's), which resyncs what is left, by
 * digests.
 *
 * A refusal in (1) leaves every file as it was. A refusal or failure
 * after (2) leaves the raised generation in the log's header and on the
 * replicas fenced, with no writer: fencing is not undone, positions are
 * never changed by it; call again (it raises the generation once more),
 * or promote the copy res->more_current names. *res is filled as far as
 * the call got (res->refused says why it refused).
 * Errors: PMREP_E_INVAL (NULL argument, unknown flags, a cfg with
 * replicas and no key, a mapping that is not a pmrep log, a log that belongs
 * to no replica set (never claimed), k > n, no mirror state file),
 * PMREP_E_MISMATCH (a cfg UUID or a replica reached of another set),
 * PMREP_E_STATE (a more current copy with PMREP_PROMOTE_NO_CATCH_UP or in
 * a dry run, no copy complete, or this log's header says its primary
 * removed it from the set -- PMREP_REPLICA_F_REMOVED -- unless
 * PMREP_PROMOTE_FORCE_STALE; a reached replica so marked is not fenced),
 * PMREP_E_SPLIT_BRAIN (positions that do not compare; or a replica
 * fenced at the new generation by a concurrent promotion),
 * PMREP_E_UNREACHABLE (too few replicas to fence, above), the catch-up's
 * copy errors (pmrep_mirror_recover's), and pmrep_mirror_new's errors for
 * step (5). pmrep_err_msg() names the replica and the reason. Not
 * thread-safe for one `log`; the caller owns `log` (no fd is kept).
 */
PMREP_API int pmrep_mirror_promote(struct pmrep_pmem *log,
		const struct pmrep_mirror_cfg *cfg, unsigned set_size,
		unsigned set_quorum, unsigned flags,
		struct pmrep_promote_result *res);

/* ---------------------------------------------------------------- recover */

/* Flag of pmrep_mirror_recover: also take a replica whose header is not
 * marked consistent (see below). */
#define PMREP_RECOVER_ALLOW_INCONSISTENT (1u << 0)
/* the caller read n - k + 1 copies of the set (the membership the headers
 * record) and ranked this one the most current (pmrep_position_decide):
 * without it a replica whose header records a quorum (k < n) is refused,
 * since a later run may have completed persists without it */
#define PMREP_RECOVER_SET_DECIDED (1u << 1)

/*
 * pmrep_mirror_recover -- rebuild the local mapping `pmem` (all of it) from
 * the replica target at `addr`:`port`: connect and authenticate with `key`
 * (`key_len` bytes) like a mirror, naming replica set `uuid` at
 * `generation`, check what the replica held, then RDMA-read its whole data
 * area into the mapping and persist the mapping. The replica (data and
 * header) is never written. *info (may be NULL) receives the replica's
 * header as the target reported it (uuid, data offset and size in bytes,
 * generation, flags, replica id, owner, slot sequence, last persist
 * sequence) whenever the target answered with ACCEPT (after a REFUSE
 * *info is not written), also when it is then refused as
 * a source.
 *
 * A replica is taken as a source only when it belongs to `uuid`, holds
 * exactly `generation` (an older one is refused: it lacks the changes that
 * made the newer generation; a newer one is refused by the target), was
 * claimed by a mirror (not fresh), has the mapping's size, serves its
 * mapping directly (not through a staging buffer, whose memory is not the
 * replica), and is marked consistent (left so by a clean mirror shutdown)
 * -- or `flags` has PMREP_RECOVER_ALLOW_INCONSISTENT: then the replica
 * holds every persist it confirmed, which under the "all" policy is every
 * persist the mirror acknowledged, but under a quorum it may have been
 * behind; the caller's own checks (checksums) must decide. A consistent
 * mark says "complete as of its position" only: under a quorum (the
 * header records k < n) a later run of the primary may have completed
 * persists without this replica, so it is refused unless `flags` has
 * PMREP_RECOVER_SET_DECIDED (the caller ranked n - k + 1 copies: pmrep
 * recover with several --replica); a replica removed from its set is
 * refused.
 * Recover asks the target read-only (a QUERY session): the target answers
 * with its header as it is and never writes it for a query, so the
 * replica's header is left byte-identical, whatever the outcome. A query
 * does not end a running mirror's session; but the data read while a
 * mirror writes the replica is not a consistent copy: recover only from a
 * replica no mirror is using.
 *
 * `timeout_ms` bounds the whole call (-1: no limit). Refusals happen
 * before any byte of the mapping is written; after a failure during the
 * copy the mapping holds part of the replica's data.
 * Errors: PMREP_E_INVAL (NULL argument, bad key length, nil UUID,
 * generation 0, unknown flags, bad port or timeout), PMREP_E_MISMATCH (the
 * replica belongs to another replica set), PMREP_E_STATE (the replica holds an older or a
 * newer generation, is fresh, removed, not marked consistent without
 * the flag, or of a quorum set without PMREP_RECOVER_SET_DECIDED), PMREP_E_RANGE (its data size differs from the mapping's),
 * PMREP_E_NOSUPP (it serves through a staging buffer), PMREP_E_AUTH,
 * PMREP_E_MALFORMED, PMREP_E_UNREACHABLE / PMREP_E_TIMEOUT /
 * PMREP_E_CONN_LOST (transport; as for pmrep_replica_query), PMREP_E_NOMEM,
 * PMREP_E_PROVIDER (persisting the mapping failed: pmrep_err_errno(), e.g.
 * EIO; the mapping is then poisoned, see pmrep_pmem_persist).
 * Thread-safe for different mappings.
 */
PMREP_API int pmrep_mirror_recover(struct pmrep_pmem *pmem, const char *addr,
		const char *port, const uint8_t *key, size_t key_len,
		const uint8_t uuid[PMREP_UUID_SIZE], uint64_t generation,
		unsigned flags, int timeout_ms, struct pmrep_replica_info *info);

#ifdef __cplusplus
}
#endif
#endif /* PMREP_FAILOVER_H */
