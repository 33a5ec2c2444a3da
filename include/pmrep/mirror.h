/* SPDX-License-Identifier: BSD-3-Clause */
/* Past ~800 lines: the mirror's whole API, a man page per function. */
/*
 * pmrep/mirror.h -- the mirror, which makes pmrep_mirror_persist() mean
 * "durable here and on every replica the policy requires": its
 * configuration; synchronous, vectored and asynchronous persists; the
 * replicas' states, events and status; its membership at run time; its
 * metrics.
 *
 * The conventions of <pmrep/repl.h> apply.
 */
#ifndef PMREP_MIRROR_H
#define PMREP_MIRROR_H

#include <pmrep/base.h>
#include <pmrep/pmem.h>
#include <pmrep/key.h>
#include <pmrep/replica.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ mirror */

struct pmrep_mirror_cfg;
struct pmrep_mirror;

/* at most this many replicas per mirror */
#define PMREP_MIRROR_MAX_REPLICAS 8
/* persist steps a mirror keeps in flight at most (pmrep_mirror_cfg_set_window) */
#define PMREP_MIRROR_WINDOW_MAX 64

/*
 * pmrep_mirror_cfg_new -- a mirror configuration: no replicas, no key, nil
 * UUID, generation 1, quorum 0 (= all replicas), region size 64 KiB,
 * timeout 5000 ms, GPSPM not forced.
 * Errors: PMREP_E_INVAL (NULL), PMREP_E_NOMEM.
 */
PMREP_API int pmrep_mirror_cfg_new(struct pmrep_mirror_cfg **cfg_ptr);
/* pmrep_mirror_cfg_delete -- free it, wiping the key (NULL ok). Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_mirror_cfg_delete(struct pmrep_mirror_cfg **cfg_ptr);
/*
 * pmrep_mirror_cfg_add_replica -- add a replica target at `addr`:`port`
 * (copied). Replicas are numbered 0, 1, … in the order added.
 * Errors: PMREP_E_INVAL (NULL; more than PMREP_MIRROR_MAX_REPLICAS),
 * PMREP_E_NOMEM.
 */
PMREP_API int pmrep_mirror_cfg_add_replica(struct pmrep_mirror_cfg *cfg,
		const char *addr, const char *port);
/*
 * pmrep_mirror_cfg_set_replica_name -- the name of the replica to ask
 * replica `index`'s endpoint for (the HELLO's selector): a pmrep-target
 * serving several replicas on one port (pmrep_listener_add_target, a
 * [replica NAME] of its config) serves the one of that name; NULL or ""
 * (default): none, the endpoint's only replica. An endpoint that serves
 * no replica of that name refuses the attach after the key check: the
 * replica fails with PMREP_E_INVAL, logged "refused: no such replica on
 * this target" (a pmrep-target of one replica: unless the name is its
 * path's basename).
 * Errors: PMREP_E_INVAL (NULL cfg, no replica `index`, a name that is not
 * 1..20 letters, digits, '.', '_', '-').
 */
PMREP_API int pmrep_mirror_cfg_set_replica_name(struct pmrep_mirror_cfg *cfg,
		unsigned index, const char *name);
/* pmrep_mirror_cfg_set_key -- the pre-shared key (copied). Required.
 * Errors: PMREP_E_INVAL (NULL, len outside PMREP_KEY_MIN..PMREP_KEY_MAX). */
PMREP_API int pmrep_mirror_cfg_set_key(struct pmrep_mirror_cfg *cfg,
		const uint8_t *key, size_t len);
/*
 * pmrep_mirror_cfg_set_key_id -- the id of the key (sent in the HELLO: the
 * target checks the admission proof and the MACs with its key of that id;
 * one it does not hold rejects the connection request). Default 0: none
 * named, whichever of the target's keys the proof verifies with (with TLS
 * on tcp: the one whose fingerprint the TLS identity carries --
 * docs/PROTOCOL.md "The tcp channel").
 * Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_mirror_cfg_set_key_id(struct pmrep_mirror_cfg *cfg,
		uint32_t key_id);
/*
 * pmrep_mirror_cfg_set_tls -- on the tcp provider, run every replica's
 * connection inside TLS 1.3 with a PSK derived from the key (default:
 * on, see docs/PROTOCOL.md "The tcp channel"); false: plaintext tcp (only
 * the HMAC handshake guards the session). Local configuration: a mirror
 * with TLS refuses a plaintext target and vice versa (PMREP_E_TLS). No
 * effect on verbs (no TLS there: use IPsec / MACsec).
 * Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_mirror_cfg_set_tls(struct pmrep_mirror_cfg *cfg, bool on);
/*
 * pmrep_mirror_cfg_set_uuid -- the replica set's UUID (16 bytes, not all
 * zero; required). A replica whose header names another UUID is refused;
 * an unclaimed replica takes this one.
 * Errors: PMREP_E_INVAL (NULL, all-zero UUID).
 */
PMREP_API int pmrep_mirror_cfg_set_uuid(struct pmrep_mirror_cfg *cfg,
		const uint8_t uuid[PMREP_UUID_SIZE]);
/*
 * pmrep_mirror_cfg_set_generation -- the generation of the local data
 * (>= 1, default 1). The application raises it whenever the local mapping
 * changed without a mirror on it; a replica of an older generation is
 * resynced in full, a replica of a newer one is refused (PMREP_E_STATE).
 * Errors: PMREP_E_INVAL (NULL, 0).
 */
PMREP_API int pmrep_mirror_cfg_set_generation(struct pmrep_mirror_cfg *cfg,
		uint64_t generation);
/*
 * pmrep_mirror_cfg_set_quorum -- 0 (default): every replica must confirm
 * each persist; k in 1..n: persist succeeds once k replicas confirmed, and
 * the mirror keeps going degraded while at least k are in sync.
 * Errors: PMREP_E_INVAL (NULL, k > PMREP_MIRROR_MAX_REPLICAS; k above the
 * replica count is reported by pmrep_mirror_new).
 */
PMREP_API int pmrep_mirror_cfg_set_quorum(struct pmrep_mirror_cfg *cfg,
		unsigned k);
/*
 * pmrep_mirror_cfg_set_region_size -- the granularity in bytes of the
 * out-of-sync bitmap kept per replica (a power of two, 4 KiB .. 1 GiB;
 * default 64 KiB). Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_mirror_cfg_set_region_size(struct pmrep_mirror_cfg *cfg,
		uint64_t region_size);
/*
 * pmrep_mirror_cfg_set_timeout -- limit in ms for connecting to and
 * handshaking with one replica (pmrep_mirror_new, pmrep_mirror_reconnect).
 * Errors: PMREP_E_INVAL (NULL, timeout_ms <= 0).
 */
PMREP_API int pmrep_mirror_cfg_set_timeout(struct pmrep_mirror_cfg *cfg,
		int timeout_ms);
/*
 * pmrep_mirror_cfg_set_background_recovery -- true (default): each
 * replica has a thread of its own, started by pmrep_mirror_new and ended
 * by pmrep_mirror_delete (its signals blocked; named "pmrep-recN"), that
 * reconnects it once it failed -- after its back-off -- re-authenticates,
 * resyncs it while the application's persists go on (at the cfg resync
 * rate) and hands it back, IN_SYNC, once nothing is left to copy and no
 * chunk is in flight; the application's threads never wait for a replica
 * the policy does not require. The threads open no fd the application
 * sees; they signal the mirror's fd on every state change
 * (pmrep_mirror_get_event). false: no thread; pmrep_mirror_new attaches
 * the replicas one after another in the caller's thread and a failed
 * replica is reconnected and resynced only by pmrep_mirror_reconnect, in
 * the caller's (deterministic: what the fault-injection harness uses).
 * Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_mirror_cfg_set_background_recovery(
		struct pmrep_mirror_cfg *cfg, bool on);
/*
 * pmrep_mirror_cfg_set_backoff -- the wait between a failed replica's
 * attempts to attach, in ms: `min_ms` after the first failure, doubling
 * per failure up to `max_ms` (default 100 .. 5000); a successful attach
 * resets it. Status: backoff_ms, next_retry_ms. pmrep_mirror_reconnect
 * makes every failed replica due at once.
 * Errors: PMREP_E_INVAL (NULL, min_ms <= 0, max_ms < min_ms).
 */
PMREP_API int pmrep_mirror_cfg_set_backoff(struct pmrep_mirror_cfg *cfg,
		int min_ms, int max_ms);
/*
 * pmrep_mirror_cfg_set_resync_rate -- at most `bytes_per_s` bytes per
 * second copied by a replica's resync (0, default: as fast as it goes),
 * so that it leaves room for the application's persists; at a low rate
 * the chunks are smaller (about four per second). Errors: PMREP_E_INVAL
 * (NULL).
 */
PMREP_API int pmrep_mirror_cfg_set_resync_rate(struct pmrep_mirror_cfg *cfg,
		uint64_t bytes_per_s);
/*
 * pmrep_mirror_cfg_set_resync_min_rate -- the least net progress, in bytes
 * per second, that a replica's resync keeps while the application's
 * persists go on, at the price of slowing those persists down. The net
 * progress is the out-of-sync bytes the resync removes per second -- what
 * it copies less what persists mark out of sync again meanwhile -- over
 * the last 400 ms (during its first 200 ms it counts as below). A persist
 * into regions the resync has copied already (or is copying) is posted to
 * that replica too when its ring has room; when it has none, the persist
 * is posted without it and marks those regions out of sync again, to be
 * copied whole once more (pmrep_mirror_cfg_set_region_size: a 4 KiB
 * persist can cost a 64 KiB copy), so a writer faster than the replica
 * can add work to the resync faster than it removes it, and the resync
 * never ends. While the net progress is below the minimum, such a persist
 * waits for room instead
 * -- it and every persist submitted after it stay queued, for all
 * replicas, until the replica confirms what it was sent: the writer goes
 * at that replica's pace. At or above the minimum it is posted without
 * that replica, as with no minimum. A persist waits at most half of its
 * time (its caller's limit, or the cfg timeout for an asynchronous one),
 * then is posted so; it stops waiting at once when that replica fails or
 * is in sync, and never waits without background recovery
 * (pmrep_mirror_cfg_set_background_recovery). With a cfg resync rate
 * (pmrep_mirror_cfg_set_resync_rate) the minimum is at most half of it.
 * Default 16 MiB/s: a resync of 1 GiB then takes about a minute at worst
 * under a writer that never pauses, and a writer is held back only while
 * it leaves the resync less than about a seventh of a 1 Gbit/s link (and
 * only when the replica's ring is full, when it writes faster than the
 * replica confirms already). 0: no minimum -- a writer faster than the
 * replica being resynced may keep it out of sync for good. Not
 * thread-safe against other use of the same cfg; pmrep_mirror_new takes
 * the value. Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_mirror_cfg_set_resync_min_rate(
		struct pmrep_mirror_cfg *cfg, uint64_t bytes_per_s);
/*
 * pmrep_mirror_cfg_set_resync_digests -- `on` (default): before copying,
 * a resync of a replica of this set whose history the mirror's record
 * does not cover (a FULL decision: an older generation, another
 * primary's claim, no record; or at least half of the data out of sync)
 * compares the out-of-sync regions by digests (SHA-256 computed on both
 * ends; docs/PROTOCOL.md "Mirror, resync by digests") and copies only the
 * regions that differ -- after a failover, the survivors and the old
 * primary get back to identical without a full copy. Off: those regions
 * are copied without comparing. Comparing costs both ends a read and a
 * hash of what they compare (about 0.5-2 GB/s per core) and saves the
 * network the regions that are equal: on a link faster than the hash
 * with replicas that mostly differ, off is faster. Status:
 * resync_compared. Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_mirror_cfg_set_resync_digests(struct pmrep_mirror_cfg *cfg,
		bool on);
/*
 * pmrep_mirror_cfg_set_create_timeout -- how long pmrep_mirror_new may
 * take, ms (-1, default: no limit; each connect and each resync chunk is
 * still bounded by the cfg timeout). With background recovery,
 * pmrep_mirror_new returns as soon as the policy's k replicas are in sync
 * (the others go on attaching and resyncing in the background) and fails
 * with PMREP_E_TIMEOUT when they are not by then; without it, the limit
 * bounds the resyncs of the replicas attached one after another.
 * Errors: PMREP_E_INVAL (NULL, below -1).
 */
PMREP_API int pmrep_mirror_cfg_set_create_timeout(struct pmrep_mirror_cfg *cfg,
		int timeout_ms);
/*
 * pmrep_mirror_cfg_set_window -- persist steps the mirror keeps in flight
 * at most: 1..PMREP_MIRROR_WINDOW_MAX (default 16). Persist requests
 * (pmrep_mirror_persist_async, and pmrep_mirror_persist behind them) are
 * posted back to back to every in-sync replica while fewer steps than
 * this are not complete; further requests wait in submission order, and
 * waiting ones whose ranges overlap or adjoin are posted as one step
 * (group commit). 1: one step at a time.
 * Errors: PMREP_E_INVAL (NULL, 0, above PMREP_MIRROR_WINDOW_MAX).
 */
PMREP_API int pmrep_mirror_cfg_set_window(struct pmrep_mirror_cfg *cfg,
		unsigned steps);
/*
 * pmrep_mirror_cfg_set_max_lag -- with a quorum k below the replica
 * count, a persist completes once k replicas confirmed it; the others
 * keep confirming behind. A replica that trails by more than `bytes`
 * (the ranges of complete persists it has not confirmed yet), or by
 * 256 steps (GPSPM: 128), is turned out of sync instead (FAILED
 * with PMREP_E_TIMEOUT, those ranges kept for its resync: "pull ahead").
 * Default 64 MiB; 0: a replica must never trail. Without a quorum
 * ("all") no persist completes without every replica: no replica trails.
 * Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_mirror_cfg_set_max_lag(struct pmrep_mirror_cfg *cfg,
		uint64_t bytes);
/*
 * pmrep_mirror_cfg_set_fence_count -- pmrep_mirror_new returns only once
 * `count` replicas (besides the policy's k in sync) committed an attach
 * of this mirror: each durably holds its generation and refuses every
 * older writer from then on. A promoted primary sets n - k + 1 (n
 * replicas, quorum k; "all": 1) -- with fewer, the old primary could still
 * find k replicas that never saw the new generation and complete a
 * persist (docs/FAILOVER.md). A replica counts from its COMMIT_REPLY on,
 * in sync or still resyncing; the call fails (the first failed replica's
 * error) once too few can, or at the create timeout (PMREP_E_TIMEOUT).
 * Default 0: no count beyond k. Errors: PMREP_E_INVAL (NULL, above
 * PMREP_MIRROR_MAX_REPLICAS; pmrep_mirror_new: above the replica count).
 */
PMREP_API int pmrep_mirror_cfg_set_fence_count(struct pmrep_mirror_cfg *cfg,
		unsigned count);
/*
 * pmrep_mirror_cfg_set_persist_seq -- `on`: every replica in sync durably
 * records the position of every persist step it holds (docs/PROTOCOL.md
 * "Position"): the step's persist sequence -- this run's epoch (above
 * every earlier run of the record or of the log's header; no clock) and
 * the step's number -- with the writer's generation and primary id. A step
 * counts as confirmed by a replica only once that replica recorded its
 * position after the step's bytes were durable, so every completed
 * persist's position is recorded on the k replicas (all, or the quorum)
 * that confirmed it, and the most current copy can be named from the
 * copies alone after a crash (pmrep compare, pmrep promote). The
 * mechanism is GPSPM for every method: the writes go one-sided as before,
 * the persist request that follows them makes the target persist the
 * range, record the position (8 bytes of the replica's header block) and
 * persist it before its reply; native flush and APM are not used (their
 * one-sided completions cannot order a later write after durability).
 * Its cost: the target's CPU per persist step, and on a page-cache
 * replica a second msync (pmrep-bench --mirror-psn). Off (the default): a
 * position is recorded at a clean close only, and after a crash the
 * copies of that run cannot be told apart unless the writer's log (or a
 * clean close) is among the copies read. A COMMIT never changes a
 * replica's position. `pmrep status`, pmrep_replica_read_position /
 * pmrep_replica_query_position show it.
 */
PMREP_API int pmrep_mirror_cfg_set_persist_seq(struct pmrep_mirror_cfg *cfg,
		bool on);
/*
 * pmrep_mirror_cfg_set_force_gpspm -- use GPSPM (persist request answered
 * by the target) even where native flush or APM is available.
 * Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_mirror_cfg_set_force_gpspm(struct pmrep_mirror_cfg *cfg,
		bool force);
/*
 * pmrep_mirror_cfg_set_state_path -- where the mirror keeps its record
 * (docs/PROTOCOL.md "Mirror state file"): its primary id, per replica
 * slot the replica it last attached and the regions that replica may
 * miss, and the activity log of the regions written lately. With the
 * record in a file, a mirror started again after a crash or a clean stop
 * resyncs only what the record holds (the activity log's regions -- it is
 * cleared lazily, once more than 64 regions are marked, so a crash
 * resyncs up to about 64 regions, 4 MiB at the default region size; while
 * asynchronous persists stay queued it is not cleared, so more may be
 * marked -- and what a replica missed) instead of the whole mapping. Bytes stored
 * into the mapping but never passed to a persist are not resynced:
 * re-persist what your recovery keeps. The file (mode 0600, 4 KiB plus
 * 9 bitmaps of data size / region size / 8 bytes, each rounded up to 4
 * KiB) is created by pmrep_mirror_new when it does not
 * exist; it belongs to one mapping, replica-set UUID and region size.
 * Keep it next to the mapping, on storage at least as durable.
 * `path` NULL: keep the record in memory only -- each pmrep_mirror_new
 * then draws a new primary id: a replica not left consistent by a clean
 * pmrep_mirror_delete is another primary's open claim, refused at the
 * same generation (PMREP_E_SPLIT_BRAIN: raise the generation, once the
 * writer that left it is known to be stopped) and resynced in full at a
 * higher one.
 * Default (never called): `<mapping path>.pmrep-state` when the mapping
 * is of a regular file; in memory for a device DAX (logged at NOTICE:
 * restarts then resync in full unless a state path is set). The price
 * of a persistent record on the persist path: one persist of the record
 * (8 bytes of the activity log) the first time a region is written after
 * the log was last cleared, and one clear per 64 newly
 * written regions; none for a region already in the log.
 * `path` is copied. Errors: PMREP_E_INVAL (cfg NULL, path empty),
 * PMREP_E_NOMEM. Not thread-safe against other use of the same cfg.
 */
PMREP_API int pmrep_mirror_cfg_set_state_path(struct pmrep_mirror_cfg *cfg,
		const char *path);

/* How a replica's persistence is confirmed, chosen per replica. */
enum pmrep_mirror_method {
	PMREP_MIRROR_METHOD_NONE = 0,	/* not connected (yet) */
	PMREP_MIRROR_METHOD_NATIVE,	/* write + native PERSISTENT flush */
	PMREP_MIRROR_METHOD_APM,	/* write + read-after-write (direct write to pmem) */
	PMREP_MIRROR_METHOD_GPSPM,	/* write + persist request answered by the target */
};

/* State of one replica. */
enum pmrep_replica_state {
	PMREP_REPLICA_CONNECTED = 0,	/* handshake done, resync not started */
	PMREP_REPLICA_SYNCING,		/* copying its out-of-sync regions */
	PMREP_REPLICA_IN_SYNC,		/* confirms every persist */
	PMREP_REPLICA_DEGRADED,		/* connected but behind (out-of-sync regions left) */
	PMREP_REPLICA_FAILED,		/* not connected: lost, refused or unreachable */
	/* in sync, but has not confirmed every persist that completed
	 * without it yet (a quorum below the replica count): it confirms
	 * behind, lag_bytes of them, and is IN_SYNC again once it caught up
	 * -- or FAILED, its lag out of sync, when it trails by more than the
	 * cfg lag (pmrep_mirror_cfg_set_max_lag) */
	PMREP_REPLICA_BEHIND,
	/* its slot is free: removed by pmrep_mirror_remove_replica (the
	 * index is given again by pmrep_mirror_add_replica) */
	PMREP_REPLICA_REMOVED,
};

/* One replica's status (pmrep_mirror_get_replica_status). */
struct pmrep_replica_status {
	enum pmrep_replica_state state;
	enum pmrep_mirror_method method;
	uint64_t lag_bytes;	/* bytes of its out-of-sync regions, plus
				 * (BEHIND) those of completed persists it has
				 * not confirmed yet; the data size while the
				 * mirror has no record of this replica (not
				 * attached since its record began) */
	int last_error;		/* PMREP_E_* of its last failure, 0 if none */
	uint64_t resyncs;	/* resyncs completed (full or incremental) */
	uint64_t resync_bytes;	/* bytes copied by those resyncs */
	/* the resync in progress (SYNCING; all 0 otherwise): */
	uint64_t resync_done;	/* bytes copied so far */
	uint64_t resync_total;	/* bytes it has to copy: what was out of sync
				 * when it began, plus what persists marked
				 * since (resync_total - resync_done is left) */
	uint64_t resync_rate;	/* bytes per second so far (0: too early) */
	int64_t resync_eta_ms;	/* ms left at that rate; -1 unknown */
	/* reconnecting (FAILED): */
	int backoff_ms;		/* the current back-off between attempts, ms:
				 * doubles per failed attempt from the cfg
				 * minimum to its maximum, 0 after a successful
				 * attach */
	int64_t next_retry_ms;	/* ms until the next attempt (0: due now or
				 * under way; -1: not FAILED) */
	uint64_t resync_compared; /* bytes compared by digests before copying
				 * (docs/PROTOCOL.md "Mirror, resync by
				 * digests": a full resync of a replica of
				 * this set copies only what differs), over
				 * all its resyncs */
};

/*
 * One state change of a replica (pmrep_mirror_get_event): FAILED (with
 * the error), SYNCING (a resync began), IN_SYNC (it is identical and
 * confirms persists again), CONNECTED, DEGRADED.
 */
struct pmrep_mirror_event {
	unsigned replica;		/* its index */
	enum pmrep_replica_state from, to;
	int error;			/* to FAILED: why (PMREP_E_*); else 0 */
	unsigned lost;			/* events dropped before this one (more
					 * than 256 not taken) */
};

/*
 * pmrep_mirror_new -- mirror the open mapping `pmem` (all of it) to the
 * replicas of `cfg`: register the mapping, connect to each replica with a
 * limit of the cfg timeout, authenticate with the key (the target proves it
 * too), check the replica header, choose each replica's method, decide
 * each replica's resync (docs/PROTOCOL.md "Mirror, attach": in full when
 * the replica is unclaimed, of another set or an older generation, or when
 * the mirror's record does not cover it; incremental when the record names
 * this replica (its replica id), its header holds this generation, no
 * other mirror claimed it since (its owner is our primary id) and its
 * header is the one the record left it with (its slot sequence: an old
 * copy of the replica file restored is resynced in full), or -- with
 * a record kept in memory only -- when the record has no entry for it and
 * it was left consistent at this generation), make the record cover it (out-of-sync
 * marks, replica id), then commit the attach (the target writes its claim
 * only then) and resync. `pmem` must stay open until the mirror is deleted.
 * First the mirror's record is opened (pmrep_mirror_cfg_set_state_path:
 * created, or loaded -- the regions of persists a crash left in flight
 * become out of sync for every replica); a record file of another
 * replica set or region size (PMREP_E_INVAL), of another data size
 * (PMREP_E_RANGE) or of a newer generation (PMREP_E_STATE) fails the
 * call before any replica is contacted and is left as it was; an older
 * generation in it is raised to the cfg's.
 * Succeeds when the policy is met (every replica in sync; with a quorum k,
 * at least k). With background recovery (the default,
 * pmrep_mirror_cfg_set_background_recovery) each replica is attached by
 * its own thread, all at once, and the call returns as soon as k are in
 * sync: the others go on attaching and resyncing in the background (their
 * state changes come as events on the mirror's fd); it fails when fewer
 * than k can be in sync (every other replica failed its first attempt;
 * the first one's error) or at the cfg create timeout (PMREP_E_TIMEOUT).
 * Without it, the replicas are attached one after another in this thread.
 * Replicas that could not be reached are FAILED (and retried after their
 * back-off, in the background);
 * what they miss is what the record holds for them (all of it when the
 * record has no entry for them: their lag is the data size), and their
 * attach decides their resync by the rules above.
 * Errors: PMREP_E_INVAL (NULL, no replica, no key, nil UUID, quorum above
 * the replica count; the record's region size differs),
 * PMREP_E_MISMATCH (the record file is another replica set's),
 * PMREP_E_MALFORMED (the record file holds no valid record),
 * PMREP_E_BUSY (another mirror has the record file open),
 * PMREP_E_PROVIDER (the record file cannot be created, opened or
 * written: pmrep_err_errno(); or a replica's target failed -- e.g. it is
 * poisoned by a failed persist -- its status says "the target failed"),
 * PMREP_E_AUTH (a replica refused our key -- at the connection request:
 * the HELLO's admission proof did not verify, i.e. a wrong key, a key id
 * the target does not hold, or clocks more than 30 s apart; or at AUTH --
 * or failed to prove its own), PMREP_E_RANGE (its data size differs from the mapping's),
 * PMREP_E_MISMATCH (it belongs to another replica set: UUID), PMREP_E_STATE
 * (it holds a newer generation; or the mapping is a pmrep log whose header
 * records a set of more replicas than the cfg names -- docs/PROTOCOL.md
 * "Membership": remove the others at run time first, or raise the
 * generation -- nothing written), PMREP_E_SPLIT_BRAIN (another primary
 * claimed it at this generation and did not close it -- docs/PROTOCOL.md
 * "Split brain": fence that primary, then use a higher generation),
 * PMREP_E_MALFORMED (a malformed handshake),
 * PMREP_E_UNREACHABLE (also: the target had no room for another handshake
 * -- its slots held by handshakes and attached mirrors, or two handshakes
 * of our address pending -- a refusal to retry, e.g. with
 * pmrep_mirror_reconnect) / PMREP_E_TIMEOUT (also: on tcp the target's
 * port took the connection and nothing answered within the timeout -- a
 * hung or stopped target, "connected, but no answer") /
 * PMREP_E_CONN_LOST (transport), PMREP_E_NOMEM; with several failures, the
 * first replica's. When the policy is not met, pmrep_err_msg() is
 * "mirror: I of N replicas in sync, K required; " followed by that first
 * failed replica's reason, e.g. "replica 0 (192.0.2.1:7204) refused us:
 * authentication failed (wrong key)", and pmrep_err_errno() its errno.
 * Thread-safe for different mappings.
 */
PMREP_API int pmrep_mirror_new(struct pmrep_pmem *pmem,
		const struct pmrep_mirror_cfg *cfg, struct pmrep_mirror **mirror_ptr);
/*
 * pmrep_mirror_delete -- finish: the recovery threads end within about
 * 100 ms (a connect or handshake under way, a resync's wait: each ends at
 * its next wait slice; the replica stays out of sync, resynced by the next
 * mirror on the record), the
 * persist pipeline is drained (within the cfg timeout), each replica in
 * sync is told to mark its
 * header consistent for this generation (bounded by the cfg timeout), then
 * the record's activity log is cleared (with nothing in flight, what it
 * covered is in the replicas or in their out-of-sync sets), every
 * connection is closed and everything freed; *mirror_ptr is NULL after.
 * Errors: PMREP_E_INVAL (NULL); PMREP_E_PROVIDER (the record could not
 * be written: the next mirror on it resyncs the regions it still holds).
 * Other failures on the way are logged; the mirror is freed anyway.
 */
PMREP_API int pmrep_mirror_delete(struct pmrep_mirror **mirror_ptr);
/*
 * pmrep_mirror_persist -- make `length` bytes at `offset` of the mapping
 * durable locally and on the replicas, and wait up to timeout_ms (-1: no
 * limit) for it. The request joins the mirror's persist pipeline behind
 * every request submitted before it (docs/PROTOCOL.md "Mirror, persist
 * pipeline"): it is posted -- write and persist step, method per replica
 * -- to every in-sync replica once the window has room (alone, or with
 * the adjacent requests waiting with it), persisted locally meanwhile,
 * and complete once the policy's replicas confirmed it: every replica, or
 * with a quorum k the first k -- a replica that is not needed never
 * delays it; the others confirm behind (BEHIND in their status). A
 * replica whose write or persist step fails, errs or does not confirm by
 * the deadline is FAILED, and what it has not confirmed (with everything
 * it misses later) is kept in its out-of-sync bitmap for a resync. A
 * replica that is not in sync gets the range added to its bitmap -- or,
 * while it is being resynced and the range is copied there already, the
 * range posted too (not counted for the policy), so that the resync ends.
 * Before anything is posted, the range's regions are recorded in the
 * activity log of the mirror's record (durable when the record is a file;
 * a region already there costs nothing).
 * Returns 0 only when the local persist is done and the replicas the
 * policy requires confirmed durability of the range (and of every request
 * submitted before it: completions are in submission order); never on an
 * error or a timeout. `length` 0 is a no-op.
 * Errors: PMREP_E_INVAL (NULL), PMREP_E_RANGE (outside the mapping),
 * PMREP_E_PROVIDER (the record could not be written -- then nothing was
 * posted or persisted -- or the local persist failed: pmrep_err_errno()),
 * PMREP_E_CONN_LOST (a required replica failed or is not in sync; with a
 * quorum: fewer than k can confirm), PMREP_E_TIMEOUT (not confirmed by
 * the policy's replicas within timeout_ms; the request stays in the
 * pipeline, posted in order, and a replica that does not confirm it in
 * time is failed -- also returned at once by later persists while a
 * replica that failed by timing out is not reconnected, so "slow" and
 * "gone" read alike until pmrep_mirror_reconnect; the replica's status
 * has its last_error), PMREP_E_NOMEM. After an error other than
 * PMREP_E_PROVIDER the bytes are durable locally. The bytes must not
 * change until the call returns.
 * Not thread-safe: one thread at a time, as every call on this mirror.
 */
PMREP_API int pmrep_mirror_persist(struct pmrep_mirror *mirror, size_t offset,
		size_t length, int timeout_ms);
/* One range of a mapping (pmrep_mirror_persistv): bytes. */
struct pmrep_range {
	size_t offset;		/* bytes from the mapping's start */
	size_t length;		/* bytes; 0: nothing (skipped) */
};
/* ranges one pmrep_mirror_persistv / pmrep_mirror_persistv_async takes at most */
#define PMREP_MIRROR_PERSISTV_MAX 64

/*
 * pmrep_mirror_persistv -- pmrep_mirror_persist of the `n` ranges at `ranges`
 * of the mapping as one step: durable locally and on the replicas the
 * policy requires, waiting up to timeout_ms (-1: no limit). The vector is
 * one request of the persist pipeline and one step on the wire: its ranges
 * are written to every in-sync replica back to back, each followed by its
 * persist step (native flush / APM read / GPSPM persist request, the
 * replica's method; no new message: docs/PROTOCOL.md "Mirror, persist
 * pipeline", "Vectored persists"), and a replica confirms the step only
 * when every range is durable there; the caller waits once for all of
 * them. With pmrep_mirror_cfg_set_persist_seq the step has one persist
 * sequence: the position advances by one step per call, and a replica
 * records it only after every range is durable there. The ranges are
 * checked before anything is done: one outside the mapping fails the call
 * (PMREP_E_RANGE) with nothing marked, persisted or posted. Ranges may be
 * given in any order; overlapping and adjoining ones are merged (a
 * vector that merges into one range is exactly pmrep_mirror_persist of
 * it, and may be posted in one step with the adjacent requests waiting
 * with it); zero-length ranges are skipped (all of them: a no-op, 0).
 * `ranges` is read during the call only (the caller keeps it).
 * Cost: each merged range is one entry of a replica's ring (its writes and
 * its persist step), so a vector is posted only once every in-sync
 * replica has room for all of them besides the steps in flight -- 64
 * entries on a GPSPM replica (there a full vector waits for the one
 * before it), 256 otherwise; a replica short of room for trailing
 * completed steps is pulled ahead as for any persist.
 * Returns 0 only when the local persists of all ranges are done and the
 * replicas the policy requires confirmed every range (and every request
 * submitted before it); never on an error or a timeout.
 * Errors: PMREP_E_INVAL (mirror or ranges NULL, n == 0 or n above
 * PMREP_MIRROR_PERSISTV_MAX, timeout_ms below -1), PMREP_E_RANGE (a range
 * outside the mapping: nothing done), and otherwise those of
 * pmrep_mirror_persist, for the vector as a whole (PMREP_E_PROVIDER:
 * the record could not be written -- nothing persisted or posted -- or a
 * local persist failed; PMREP_E_CONN_LOST; PMREP_E_TIMEOUT, the step
 * staying in the pipeline; PMREP_E_NOMEM). After an error other than
 * PMREP_E_PROVIDER, PMREP_E_INVAL, PMREP_E_RANGE or PMREP_E_NOMEM every
 * range is durable locally. The bytes must not change until the call
 * returns.
 * Not thread-safe: one thread at a time, as every call on this mirror.
 * No fd is taken or kept.
 */
PMREP_API int pmrep_mirror_persistv(struct pmrep_mirror *mirror,
		const struct pmrep_range *ranges, unsigned n, int timeout_ms);
/*
 * pmrep_mirror_reconnect -- bring every replica back in sync now, within
 * timeout_ms (-1: no limit). With background recovery: every FAILED
 * replica's attempt is due at once (its back-off skipped this time), and
 * the call waits until every replica is in sync -- the replicas' own
 * threads connect, handshake and resync them. Without it: for each FAILED replica past its
 * back-off, connect and handshake again (cfg timeout), then copy its
 * out-of-sync regions (all of them if the replica was changed by someone
 * else meanwhile), in this thread, within timeout_ms for the whole call;
 * a replica still failing stays FAILED with a doubling back-off (cfg,
 * default 100 ms .. 5 s). Returns 0 when every replica is now in sync.
 * Errors: PMREP_E_INVAL (NULL), PMREP_E_AGAIN (some replica is still in
 * back-off, or, in the background, still being attached or resynced when
 * the time ran out), or a failing replica's last error (as
 * pmrep_mirror_new).
 */
PMREP_API int pmrep_mirror_reconnect(struct pmrep_mirror *mirror,
		int timeout_ms);
/*
 * Asynchronous persists. pmrep_mirror_persist_async() makes a range
 * durable locally and submits it to the mirror's persist pipeline without
 * waiting for the replicas; pmrep_mirror_poll() hands out each request's
 * outcome exactly once, in submission order; pmrep_mirror_get_fd() is the
 * one fd to wait on. Up to the cfg window (pmrep_mirror_cfg_set_window,
 * default 16) of steps are in flight, posted back to back; requests that
 * wait for room and whose ranges overlap or adjoin the one before them
 * are coalesced into one step (one write + persist step per replica). A
 * request is complete when its step and every older one are (with a
 * quorum k: confirmed by k replicas; the others confirm behind, or are
 * turned out of sync past the cfg max lag). A replica that does not
 * confirm a step within the cfg timeout (pmrep_mirror_cfg_set_timeout)
 * from its post is FAILED with PMREP_E_TIMEOUT. pmrep_mirror_persist()
 * queues behind the asynchronous requests, pmrep_mirror_reconnect()
 * takes what is in flight first, and pmrep_mirror_delete() drains the
 * pipeline within the cfg timeout; delete drops completions not polled
 * (the ranges of requests still queued stay out of sync for every
 * replica: a later mirror on the same record resyncs them).
 * The bytes of a request must not change until its completion is
 * polled: the replicas read them from the mapping while it is in flight
 * (a range changed meanwhile must be persisted again).
 */

/* One finished asynchronous persist (pmrep_mirror_poll). */
struct pmrep_mirror_completion {
	void *ctx;		/* as given to pmrep_mirror_persist_async */
	int result;		/* 0 or a PMREP_E_* code, as pmrep_mirror_persist */
	size_t offset;		/* bytes: the request's range */
	size_t length;
};

/*
 * pmrep_mirror_persist_async -- make `length` bytes at `offset` of the
 * mapping durable locally (before returning) and post them to every
 * in-sync replica (now, or -- the window full -- once it has room,
 * coalesced with the adjacent requests waiting with it), without waiting
 * for a confirmation. The
 * outcome comes once from pmrep_mirror_poll with `ctx`: result 0 only when
 * the range is durable locally and every replica the policy requires
 * confirmed it durable (never on an error or a timeout); otherwise
 * PMREP_E_CONN_LOST (a required replica failed or is not in sync; quorum:
 * fewer than k confirmed), PMREP_E_TIMEOUT (not confirmed within the
 * cfg timeout) or PMREP_E_PROVIDER (the local persist failed, or the
 * mirror's record could not be written before the post: then nothing
 * was posted), and the range is kept out of sync for the replicas that
 * missed it (pmrep_mirror_reconnect). `length` 0 completes at once with
 * result 0.
 * Errors of the call itself (then no completion will come): PMREP_E_INVAL
 * (mirror NULL), PMREP_E_RANGE (outside the mapping), PMREP_E_AGAIN
 * (65536 requests outstanding, completions included: poll first),
 * PMREP_E_PROVIDER (the mirror's record could not be written: nothing
 * was persisted or posted), PMREP_E_NOMEM.
 * Not thread-safe: like every call on this mirror, one thread at a time.
 */
PMREP_API int pmrep_mirror_persist_async(struct pmrep_mirror *mirror,
		size_t offset, size_t length, void *ctx);
/*
 * pmrep_mirror_persistv_async -- pmrep_mirror_persist_async of the `n`
 * ranges at `ranges` as one step (see pmrep_mirror_persistv): all are made
 * durable locally before the return and the vector is submitted as one
 * request of the pipeline, completed in submission order with the
 * single-range requests around it. Its outcome comes once from
 * pmrep_mirror_poll with `ctx`, its offset and length being the span of
 * the vector's merged ranges (lowest offset to highest end; 0 and 0 when
 * every range is empty): result 0 only when every range is durable
 * locally and every replica the policy requires confirmed all of them;
 * otherwise the results of pmrep_mirror_persist_async. `ranges` is copied
 * (the caller keeps it); the bytes of every range must not change until
 * the completion is polled.
 * Errors of the call itself (then no completion will come, and nothing
 * was marked, persisted or posted): PMREP_E_INVAL (mirror or ranges NULL,
 * n == 0 or above PMREP_MIRROR_PERSISTV_MAX), PMREP_E_RANGE (a range
 * outside the mapping), PMREP_E_AGAIN (65536 requests outstanding:
 * poll first), PMREP_E_PROVIDER (the mirror's record could not be
 * written), PMREP_E_NOMEM.
 * Not thread-safe: like every call on this mirror, one thread at a time.
 * No fd is taken or kept.
 */
PMREP_API int pmrep_mirror_persistv_async(struct pmrep_mirror *mirror,
		const struct pmrep_range *ranges, unsigned n, void *ctx);
/*
 * pmrep_mirror_get_fd -- the mirror's one fd for asynchronous persists: an
 * epoll fd (O_NONBLOCK | O_CLOEXEC) that is readable when
 * pmrep_mirror_poll has work (a replica's completion or connection event,
 * the earliest deadline of what is in flight, completions waiting to be
 * polled) and while a replica state change waits to be taken with
 * pmrep_mirror_get_event: take those too (in the same wakeup), or the fd
 * stays readable and a loop waiting on it never sleeps (pmrep_mirror_poll
 * logs a warning once when it keeps finding nothing but them). Put it in
 * your poll / epoll / select set; a wakeup may find nothing to hand out. The same fd for the mirror's whole life, whatever
 * replicas (re)connect; owned by the mirror: never close it (it is closed
 * by pmrep_mirror_delete). Errors: PMREP_E_INVAL (NULL).
 * Thread-safe (the fd may be waited on from any thread).
 */
PMREP_API int pmrep_mirror_get_fd(const struct pmrep_mirror *mirror, int *fd);
/*
 * pmrep_mirror_get_event -- take the oldest replica state change not
 * taken yet (*ev): a replica FAILED (ev->error says why), began a resync
 * (SYNCING), is IN_SYNC again, ... The mirror's fd (pmrep_mirror_get_fd)
 * is readable while one waits, so an application learns of a dead
 * replica without polling its status. The mirror keeps the last 256; an
 * event after dropped ones says how many (ev->lost).
 * Returns 0 with *ev, PMREP_E_AGAIN when none waits.
 * Errors: PMREP_E_INVAL (NULL). Thread-safe.
 */
PMREP_API int pmrep_mirror_get_event(struct pmrep_mirror *mirror,
		struct pmrep_mirror_event *ev);
/*
 * pmrep_mirror_poll -- without waiting: take the replicas' completions,
 * complete the steps the policy's replicas confirmed (and fail those that
 * can no longer be, or whose replicas are past their deadline), post the
 * waiting requests the window allows, and write up to `max` finished
 * requests to `out`, in submission order (*n of them; 0 is not an error). Every
 * request of pmrep_mirror_persist_async that returned 0 is handed out
 * exactly once. A connection lost while idle fails its replica here.
 * Errors: PMREP_E_INVAL (NULL, max <= 0).
 * Not thread-safe: one thread at a time, as every call on this mirror.
 */
PMREP_API int pmrep_mirror_poll(struct pmrep_mirror *mirror,
		struct pmrep_mirror_completion *out, int max, int *n);
/*
 * pmrep_mirror_get_persist_seq -- *psn: the persist sequence of the newest
 * completed persist (pmrep_mirror_cfg_set_persist_seq; 0 before the
 * first, and always 0 when it is off). Every replica that confirmed that
 * persist holds at least this sequence in its header. Thread-safe.
 * Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_mirror_get_persist_seq(const struct pmrep_mirror *mirror,
		uint64_t *psn);
/*
 * pmrep_mirror_get_replica_count -- the replica slots of the mirror: the
 * cfg's replicas plus those added at run time, removed ones included
 * (their state is PMREP_REPLICA_REMOVED); valid indices are below it.
 * Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_mirror_get_replica_count(const struct pmrep_mirror *mirror,
		unsigned *count);

/*
 * Membership at run time (docs/PROTOCOL.md "Membership"). The mirror's
 * membership is its set size n (the replicas it mirrors to, not the
 * removed ones) and its quorum k (0: all). Every replica header it claims
 * records them, and a change is recorded on every in-sync replica before
 * it takes effect, so that pmrep_mirror_promote, which fences the
 * largest n - k + 1 it reads, fences enough replicas whatever changed.
 * Each call below first finishes what is queued and in flight (as
 * pmrep_mirror_delete does), then sends the new membership to every
 * in-sync replica (MEMBERS: the target records it in its header,
 * crash-atomic) and waits for their answers; a replica that does not
 * answer by the deadline is failed (out of sync; its next attach records
 * the membership then). A change that raises the fencing count takes
 * effect only when k of the old membership's replicas (its quorum, or
 * under "all" every one) recorded it; otherwise the headers that took it
 * get the old one back and the call fails. A replica being resynced
 * keeps the old membership in its header until its next attach (the
 * in-sync ones suffice: docs/PROTOCOL.md). `timeout_ms` bounds each
 * call (-1: no limit). A membership change is not kept by the mirror's
 * record: the next pmrep_mirror_new takes its replicas and quorum from
 * its cfg -- for a pmrep log, it refuses a cfg naming fewer replicas than
 * the log's header records (PMREP_E_STATE: remove them at run time first,
 * or raise the generation), and a cfg that needs more fencing waits for
 * k of the old replicas to record it (the fence count). Keep the cfg's
 * replicas in index order: a slot's record is matched by index (a replica
 * in a slot its record does not cover is compared in full, by digests).
 * The application's persists wait while a change is made (they are not
 * accepted concurrently). Not thread-safe: one thread at a time, as every
 * call on this mirror.
 */
/*
 * pmrep_mirror_add_replica -- add the replica target at `addr`:`port`
 * (`name`: its selector as pmrep_mirror_cfg_set_replica_name; NULL or
 * "": none) to the running mirror, with the cfg's key, TLS and timeouts.
 * It takes the lowest free index (*index, may be NULL): a removed one, or
 * the next. It joins: its recovery attaches it (its COMMIT records the
 * new membership), compares (by digests) and copies the data, and hands
 * it to the data path IN_SYNC, while the application's persists go on
 * (the call returns before that: pmrep_mirror_get_replica_status, and
 * the events, say when);
 * until that first IN_SYNC it is not required by the "all" policy, from
 * then on it is a replica like the others. Under a quorum k it counts in
 * n from the call on (the fencing count grows at once) and confirms
 * persists from its first IN_SYNC. Without background recovery it is
 * attached by pmrep_mirror_reconnect. Its events come on the mirror's
 * fd (FAILED -> SYNCING -> IN_SYNC). The name is matched as given: the
 * same replica under another address or name (a pmrep-target of one
 * replica answers to its path's basename too) is refused at its attach
 * (its replica id is another slot's) -- remove it again. A replica that
 * never attached (a wrong address or name, a target that never answers)
 * can be removed as it is.
 * Errors: PMREP_E_INVAL (NULL, empty address or port, a bad name, no free
 * index: PMREP_MIRROR_MAX_REPLICAS slots in use, the same address, port
 * and name as a replica of the mirror), PMREP_E_TIMEOUT (what
 * was in flight, or the in-sync replicas' answers, not done within
 * timeout_ms: nothing changed), PMREP_E_CONN_LOST (fewer than the
 * policy's replicas recorded the new membership: nothing changed),
 * PMREP_E_NOMEM, PMREP_E_PROVIDER (its recovery thread could not start).
 */
PMREP_API int pmrep_mirror_add_replica(struct pmrep_mirror *mirror,
		const char *addr, const char *port, const char *name,
		int timeout_ms, unsigned *index);
/*
 * pmrep_mirror_remove_replica -- remove replica `index` from the running
 * mirror: tell it first (it must be in sync: its header gets
 * PMREP_REPLICA_F_REMOVED, and a promotion neither counts it as fenced
 * nor promotes it), record the smaller membership on the other in-sync
 * replicas, then stop its recovery, disconnect it and clear its slot
 * of the mirror's record (crash-atomic). Its header is not marked
 * consistent (the set goes on without it: a consistent mark would call
 * an old copy complete; pmrep verify tells whether it still equals the
 * primary). Its state becomes
 * PMREP_REPLICA_REMOVED (an event) and the index is free for
 * pmrep_mirror_add_replica. The last replica cannot be removed, nor one
 * that would leave fewer replicas than the quorum (lower it first). A
 * replica added at run time that never committed an attach holds nothing
 * of the set and is removed without being told.
 * Errors: PMREP_E_INVAL (NULL, no such index, removed already, the last
 * replica that is not joining, the quorum above the replicas left that
 * are not joining), PMREP_E_STATE (it is not in sync, or did not answer:
 * it cannot be told it leaves, and a promotion could count it as fenced
 * or promote it while this mirror goes on without it; let it resync
 * first), PMREP_E_TIMEOUT, PMREP_E_CONN_LOST (as for
 * pmrep_mirror_add_replica: nothing changed).
 */
PMREP_API int pmrep_mirror_remove_replica(struct pmrep_mirror *mirror,
		unsigned index, int timeout_ms);
/*
 * pmrep_mirror_set_quorum -- change the running mirror's quorum to k
 * (0: all; else 1..n, n the replicas not removed). A lower k makes the
 * fencing count n - k + 1 grow, and is recorded on the in-sync replicas
 * before any persist completes with fewer confirmations. The replicas in
 * sync now must be at least the new policy's count.
 * Errors: PMREP_E_INVAL (NULL, k above n), PMREP_E_STATE (fewer replicas
 * in sync than the new policy requires, or than the old one's k when the
 * fencing count grows: nothing changed),
 * PMREP_E_TIMEOUT, PMREP_E_CONN_LOST (as for pmrep_mirror_add_replica).
 */
PMREP_API int pmrep_mirror_set_quorum(struct pmrep_mirror *mirror, unsigned k,
		int timeout_ms);
/*
 * pmrep_mirror_get_membership -- the running mirror's membership: *mb's
 * set_size (replicas not removed, joining ones included) and quorum (0:
 * all), as its replicas' headers record it.
 * Errors: PMREP_E_INVAL (NULL). Thread-safe.
 */
PMREP_API int pmrep_mirror_get_membership(const struct pmrep_mirror *mirror,
		struct pmrep_replica_membership *mb);
/*
 * pmrep_mirror_get_replica_status -- the status of replica `index`
 * (0-based, in the order added): its state (BEHIND: in sync but trailing
 * completed persists), method, lag, last error, resyncs, the resync in
 * progress (bytes done / total, rate, ETA) and its reconnect back-off.
 * Errors: PMREP_E_INVAL (NULL, index out of range). Thread-safe (a
 * snapshot under the mirror's lock).
 */
PMREP_API int pmrep_mirror_get_replica_status(const struct pmrep_mirror *mirror,
		unsigned index, struct pmrep_replica_status *status);
/* pmrep_mirror_method_str -- a static name ("native", "APM", "GPSPM", "none"). Thread-safe. */
PMREP_API const char *pmrep_mirror_method_str(enum pmrep_mirror_method method);
/* pmrep_replica_state_str -- a static name ("in sync", "failed", ...). Thread-safe. */
PMREP_API const char *pmrep_replica_state_str(enum pmrep_replica_state state);
/*
 * pmrep_mirror_get_metrics -- the mirror's metrics as text in the
 * Prometheus text exposition format 0.0.4 (docs/METRICS.md names every
 * metric): for the application to serve on its own /metrics endpoint or
 * write for node_exporter's textfile collector; pmrep opens no listener.
 * Every line ends with '\n'; each metric family has its "# HELP" and
 * "# TYPE" lines before its samples; every sample carries the label
 * set="<the replica set's UUID, 32 lowercase hex digits>", and the
 * replicas' also replica="<index>", address="<ADDR:PORT>" and
 * name="<selector, or empty>". What it holds: the replicas' states (one
 * gauge per replica and state, 1 for its state), lag in bytes, the
 * resync in progress (bytes done and to do, bytes per second), resyncs
 * and their bytes, failures by error; the persist requests whose outcome
 * is final, by result ("ok", or the PMREP_E_* code in lower case without
 * the prefix: "timeout", "conn_lost", "provider", ...), their bytes, and
 * a histogram of their latency from submission to outcome in seconds
 * (fixed buckets 50 µs .. 5 s, cumulative, with _sum and _count).
 * Counters count from pmrep_mirror_new (a new mirror starts from 0).
 * A persist request of length 0 is not counted. A pmrep_mirror_persist
 * that returned PMREP_E_TIMEOUT is counted once its step is decided, with
 * the pipeline's outcome.
 * The text is written to buf (len bytes) with a terminating NUL;
 * *needed (may be NULL) receives the bytes it needs, the NUL included,
 * also when buf is too small. buf may be NULL with len 0 (ask the size
 * first); the size can grow between two calls (counters get longer, a
 * replica is added): give some room, or call again on PMREP_E_RANGE.
 * Errors: PMREP_E_INVAL (mirror NULL, buf NULL with len > 0),
 * PMREP_E_RANGE (len is below *needed: buf holds an unspecified prefix),
 * PMREP_E_NOMEM. Thread-safe (a snapshot under the mirror's lock, as
 * pmrep_mirror_get_replica_status): may be called from any thread while
 * another uses the mirror.
 */
PMREP_API int pmrep_mirror_get_metrics(const struct pmrep_mirror *mirror,
		char *buf, size_t len, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif /* PMREP_MIRROR_H */
