/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/target.h -- the replica target, which serves one replica file or
 * device DAX to a mirror, and the listener, which serves several on one
 * endpoint: their configuration, processing, keys, sessions, events,
 * statistics and metrics.
 *
 * The conventions of <pmrep/repl.h> apply.
 */
#ifndef PMREP_TARGET_H
#define PMREP_TARGET_H

#include <pmrep/base.h>
#include <pmrep/key.h>
#include <pmrep/replica.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ target */

struct pmrep_target_cfg;
struct pmrep_target;

/*
 * pmrep_target_cfg_new -- a target configuration: no path, no key, address
 * "127.0.0.1", port "0" (any free port), data size 0 (whatever the existing
 * file holds), no create, direct write to pmem false, staging not forced,
 * timeout 5000 ms.
 * Errors: PMREP_E_INVAL (NULL), PMREP_E_NOMEM.
 */
PMREP_API int pmrep_target_cfg_new(struct pmrep_target_cfg **cfg_ptr);
/* pmrep_target_cfg_delete -- free it, wiping the key (NULL ok). Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_target_cfg_delete(struct pmrep_target_cfg **cfg_ptr);
/*
 * pmrep_target_cfg_set_path -- the replica: a file (pmem on fsdax, tmpfs,
 * any file system) or a device DAX; copied. Errors: PMREP_E_INVAL (NULL or
 * empty), PMREP_E_NOMEM.
 */
PMREP_API int pmrep_target_cfg_set_path(struct pmrep_target_cfg *cfg,
		const char *path);
/*
 * pmrep_target_cfg_set_data_size -- the data area's size in bytes (the
 * file is PMREP_REPLICA_DATA_OFFSET bytes larger). With `create`, a missing
 * file is created and formatted with a fresh (unclaimed) header and a
 * random replica id, and so is a device DAX whose first 4 KiB are all zero
 * (a device always exists); an existing file must hold a header with this
 * data size (a version 1 header is served; its replica id is drawn at
 * start and written with its first header update). 0 (default, only
 * without create): whatever the existing header says.
 * Errors: PMREP_E_INVAL (NULL; create with size 0).
 */
PMREP_API int pmrep_target_cfg_set_data_size(struct pmrep_target_cfg *cfg,
		uint64_t data_size, bool create);
/*
 * pmrep_target_cfg_set_address -- the IP address and port to listen on
 * (port "0": any free port, see pmrep_target_get_port); copied.
 * Errors: PMREP_E_INVAL (NULL), PMREP_E_NOMEM.
 */
PMREP_API int pmrep_target_cfg_set_address(struct pmrep_target_cfg *cfg,
		const char *addr, const char *port);
/*
 * pmrep_target_cfg_set_key -- the pre-shared key (`len` bytes, copied)
 * initiators must prove they hold: the key of id 0
 * (pmrep_target_cfg_add_key). A key is required.
 * Errors: PMREP_E_INVAL (NULL, len outside PMREP_KEY_MIN..PMREP_KEY_MAX),
 * PMREP_E_RANGE (PMREP_TARGET_MAX_KEYS other keys held).
 */
PMREP_API int pmrep_target_cfg_set_key(struct pmrep_target_cfg *cfg,
		const uint8_t *key, size_t len);
/* at most this many keys per target (rotation: old and new at once) */
#define PMREP_TARGET_MAX_KEYS 4
/*
 * pmrep_target_cfg_add_key -- a key with id `key_id` (`len` bytes, copied):
 * a HELLO naming key id `key_id` is checked with it (its admission proof,
 * AUTH and ACCEPT MACs); one naming key id 0 with each key in turn (the
 * admission proof, with TLS the identity's key fingerprint, tells which).
 * A key with that id is replaced. pmrep_target_cfg_set_key(cfg, k, l) is
 * pmrep_target_cfg_add_key(cfg, 0, k, l). Errors: PMREP_E_INVAL (NULL, len
 * outside PMREP_KEY_MIN..PMREP_KEY_MAX), PMREP_E_RANGE (PMREP_TARGET_MAX_KEYS
 * keys held already).
 */
PMREP_API int pmrep_target_cfg_add_key(struct pmrep_target_cfg *cfg,
		uint32_t key_id, const uint8_t *key, size_t len);
/*
 * pmrep_target_cfg_remove_key -- forget (and wipe) the key with id `key_id`.
 * Errors: PMREP_E_INVAL (NULL; no key with that id).
 */
PMREP_API int pmrep_target_cfg_remove_key(struct pmrep_target_cfg *cfg,
		uint32_t key_id);
/*
 * pmrep_target_cfg_set_tls -- on the tcp provider, accept only initiators
 * that speak TLS 1.3 with a PSK derived from the key, their identity
 * naming the initiator role, the key id and this target's address as they
 * dialed it (default: on; false: plaintext only). Local configuration: a
 * TLS target refuses plaintext initiators and vice versa (the refusal is
 * counted in the stats with PMREP_E_TLS). No effect on verbs.
 * Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_target_cfg_set_tls(struct pmrep_target_cfg *cfg, bool on);
/*
 * pmrep_target_cfg_add_tls_name -- one more "host:port" (numeric;
 * "[addr]:port" for IPv6) initiators may dial to reach this target, e.g. a
 * relay's or a NAT's address. Without it only the address the connection
 * arrived at is accepted: an initiator's handshake meant for another
 * target (reflected or redirected to this one) is refused. At most 8.
 * Errors: PMREP_E_INVAL (NULL, empty, longer than 63 bytes, 8 already).
 */
PMREP_API int pmrep_target_cfg_add_tls_name(struct pmrep_target_cfg *cfg,
		const char *name);
/*
 * pmrep_target_cfg_set_direct_write_to_pmem -- the operator declares that
 * RDMA writes reaching this node's memory are persistent (no DDIO, eADR /
 * ADR platform set up for it). pmrep cannot detect this. Default false.
 * Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_target_cfg_set_direct_write_to_pmem(
		struct pmrep_target_cfg *cfg, bool direct);
/*
 * pmrep_target_cfg_set_staging -- serve through a staging buffer even when
 * the mapping could be registered (for tests and for platforms where
 * registering the mapping is unwise). Default false: staging only when
 * registration is refused. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_target_cfg_set_staging(struct pmrep_target_cfg *cfg,
		bool force);
/*
 * pmrep_target_cfg_set_timeout -- limit in ms for an initiator to complete
 * the handshake, and for each connection's transport operations.
 * Errors: PMREP_E_INVAL (NULL, timeout_ms <= 0).
 */
PMREP_API int pmrep_target_cfg_set_timeout(struct pmrep_target_cfg *cfg,
		int timeout_ms);

/* How a target serves its replica (pmrep_target_get_mode). */
enum pmrep_target_mode {
	/* the mapping itself is registered: writes land in it */
	PMREP_TARGET_MODE_DIRECT = 0,
	/* writes land in a registered staging buffer as big as the data area;
	 * a persist request copies the range into the mapping and persists
	 * it (the mirror then uses GPSPM) */
	PMREP_TARGET_MODE_STAGING = 1,
};

/*
 * pmrep_target_new -- open (and, per cfg, create and format) the replica
 * through the pmem layer, check its header, register its data area for
 * remote writes (else fall back to a staging buffer, logged at WARNING with
 * the reason), and listen on the configured address. The cfg is copied.
 * A verbs target serves a file on a page-cache file system (ext4, xfs …)
 * through the staging buffer even where the kernel would pin it: the
 * device's writes into pinned page-cache pages are not seen by msync on
 * every kernel. tmpfs, hugetlbfs, DAX files and device DAX register
 * directly.
 * One target per replica: the target holds an exclusive advisory lock
 * (flock) on the replica file or device from here until
 * pmrep_target_delete, so a second target on the same replica -- in another
 * process or in this one, on any port -- is refused before it writes
 * anything, and two mirrors can never write one replica through two
 * targets. Only pmrep targets take the lock: other programs that write the
 * file are not stopped by it.
 * On any failure a replica file this call created (cfg's create, the file
 * missing) is removed again; a file that existed is left as it was.
 * Errors: PMREP_E_INVAL (NULL, no path, no key), PMREP_E_BUSY (another
 * target serves this replica: pmrep_err_msg() says "replica PATH is already
 * served by another target", pmrep_err_errno() is EWOULDBLOCK),
 * PMREP_E_MALFORMED (the existing file's header is damaged), PMREP_E_RANGE
 * (its data size differs from the configured one), the errors of
 * pmrep_pmem_open (path: PMREP_E_PROVIDER with ENOENT for a missing file
 * without create; PMREP_E_RANGE when an existing file's size is not the
 * configured data size + PMREP_REPLICA_DATA_OFFSET -- create never resizes
 * one), pmrep_peer_open and pmrep_ep_listen (address: PMREP_E_PROVIDER with
 * EADDRINUSE ...), PMREP_E_NOMEM. pmrep_err_msg() names the cause.
 */
PMREP_API int pmrep_target_new(const struct pmrep_target_cfg *cfg,
		struct pmrep_target **target_ptr);
/*
 * pmrep_target_delete -- close every session, stop listening, deregister,
 * unmap, release the replica's lock (another target may serve it from
 * now on) and free. Errors: PMREP_E_INVAL (target_ptr NULL); failures of
 * the underlying deletes are logged and the target is freed anyway.
 */
PMREP_API int pmrep_target_delete(struct pmrep_target **target_ptr);
/*
 * pmrep_target_get_fd -- an epoll fd that is readable whenever the target
 * has work (a connection request, a connection event, a message). Put it
 * in your poll loop and call pmrep_target_process(target, 0) when it is
 * readable. Owned by the target: never close it. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_target_get_fd(const struct pmrep_target *target, int *fd);
/*
 * pmrep_target_process -- wait up to timeout_ms (0: do not wait; -1: no
 * limit; a handshaking or closing session's deadline may end the wait
 * earlier, with PMREP_E_TIMEOUT after that session is dropped) for work
 * and do all that is pending: accept and authenticate
 * initiators, commit attaches, answer persist requests and closing marks,
 * answer read-only queries, drop failed or timed-out sessions.
 * The replica header is written only for a COMMIT (the claim: set UUID,
 * generation, owner = the mirror's primary id, consistent mark cleared;
 * every other session is closed first) and a CLOSE (the consistent mark),
 * each crash-atomically (two slots); never for an AUTH, a refusal or a
 * query. An initiator must send AUTH within the cfg timeout of connecting
 * and COMMIT within the cfg timeout of the ACCEPT, else its session is
 * dropped. Every persist goes through pmrep_pmem_persist; when one fails,
 * the target is poisoned for its life: that and every later COMMIT,
 * PERSIST and CLOSE is answered "the target failed" and its session
 * closed (a later successful write-back is no proof for the earlier data;
 * restart the target and let the mirror resync the replica).
 * A connection request is admitted before anything of a session exists
 * only with a valid admission proof of one of the target's keys, a nonce
 * not seen within the proof's span, at most 2 handshakes pending from its
 * source address, and a free slot (a handshake in progress is never
 * displaced; docs/PROTOCOL.md "Admission"): otherwise the transport
 * rejects it, counted in pmrep_target_stats and logged at most once a
 * second. A refused initiator is not an error of this call (it is logged).
 * Errors: PMREP_E_INVAL, PMREP_E_TIMEOUT (nothing happened in time; not a
 * failure), PMREP_E_PROVIDER (waiting failed).
 */
PMREP_API int pmrep_target_process(struct pmrep_target *target, int timeout_ms);
/*
 * pmrep_target_add_key -- key rotation on a running target: add (or
 * replace) the key with id `key_id` (`len` bytes, copied). The next
 * connection request is checked against the keys held then. Call from the
 * thread that calls pmrep_target_process. Errors: PMREP_E_INVAL (NULL, len
 * outside PMREP_KEY_MIN..PMREP_KEY_MAX), PMREP_E_RANGE
 * (PMREP_TARGET_MAX_KEYS held).
 */
PMREP_API int pmrep_target_add_key(struct pmrep_target *target,
		uint32_t key_id, const uint8_t *key, size_t len);
/*
 * pmrep_target_remove_key -- remove the key with id `key_id` (wiped) from
 * a running target: a session admitted with it and not yet authenticated
 * is refused at its AUTH; attached sessions stay. Call from the thread
 * that calls pmrep_target_process. Errors: PMREP_E_INVAL (NULL, no key
 * with that id), PMREP_E_STATE (removing the last key).
 */
PMREP_API int pmrep_target_remove_key(struct pmrep_target *target,
		uint32_t key_id);
/* pmrep_target_get_port -- the port it listens on (host order). Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_target_get_port(const struct pmrep_target *target,
		uint16_t *port);
/* pmrep_target_get_mode -- how it serves (DIRECT or STAGING). Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_target_get_mode(const struct pmrep_target *target,
		enum pmrep_target_mode *mode);

/* Counters of a target (pmrep_target_get_stats). */
struct pmrep_target_stats {
	uint64_t sessions_accepted;	/* initiators that passed the handshake (ACCEPT sent: attaches and queries) */
	uint64_t sessions_refused;	/* handshakes refused (auth, size, uuid, malformed, timeout) */
	uint64_t persist_requests;	/* GPSPM persist requests answered */
	int last_refusal;		/* PMREP_E_* of the last refusal, 0 if none */
	/* connection requests rejected before any session existed (also
	 * counted in sessions_refused): no / a wrong / a stale admission
	 * proof, an unknown key id, a replay, the endpoint full of
	 * handshakes and attached mirrors, or the per-source bound */
	uint64_t admission_refused;
	uint64_t admission_replayed;	/* of those: a proof seen before */
	uint64_t admission_busy;	/* of those: no slot, or the per-source bound */
	uint64_t sessions_started;	/* connection requests admitted: a session slot and a connection */
	unsigned sessions_in_use;	/* session slots taken now (any state but free) */
};
/* pmrep_target_get_stats -- its counters. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_target_get_stats(const struct pmrep_target *target,
		struct pmrep_target_stats *stats);

/*
 * pmrep_target_get_metrics -- the target's metrics as text in the
 * Prometheus text exposition format 0.0.4 (docs/METRICS.md; what
 * `pmrep-target --metrics-file` writes and its control socket's `metrics`
 * command answers): every sample carries replica="<its name>"
 * (pmrep_target_get_name); the replica's set UUID, mode, generation and
 * data size, whether it is poisoned, its sessions by state and in use,
 * sessions started, accepted and refused, refusals by reason
 * (reason="admission_auth", "admission_replay", "admission_busy",
 * "admission_error", "malformed", "tls", "timeout", "auth", "size",
 * "uuid", "stale_generation", "split_brain", "no_replica", "state",
 * "range", "internal": they add up to sessions_refused), and its GPSPM
 * persist requests, their bytes and a histogram of their service time in
 * seconds (native flush and APM never reach the target process). Counters
 * count from pmrep_target_new. buf, len, *needed as for
 * pmrep_mirror_get_metrics.
 * Errors: PMREP_E_INVAL (target NULL, buf NULL with len > 0),
 * PMREP_E_RANGE (len is below *needed), PMREP_E_NOMEM. Not thread-safe
 * against pmrep_target_process: call it from the thread that drives the
 * target (as pmrep_target_get_stats).
 */
PMREP_API int pmrep_target_get_metrics(const struct pmrep_target *target,
		char *buf, size_t len, size_t *needed);

/* ---------------------------------------------------------------- listener */

/*
 * A listener serves several replicas on one endpoint (one address and
 * port): each replica is a struct pmrep_target of its own -- its file,
 * size, lock, keys, identity (the UUID in its header), session slots and
 * counters -- added under a name; a mirror selects it by that name
 * (pmrep_mirror_cfg_set_replica_name: the HELLO's replica selector,
 * docs/PROTOCOL.md). The functions of a target (add_key, remove_key,
 * get_stats, get_mode, get_port, delete) work on a listener's replicas;
 * pmrep_target_process does not (the listener's process serves them).
 * One thread: a listener and its replicas are used by one thread at a time.
 */
struct pmrep_listener;

/* Counters of a listener (pmrep_listener_get_stats); a replica's own are its pmrep_target_stats. */
struct pmrep_listener_stats {
	uint64_t requests_dispatched;	/* connection requests whose selector named a replica */
	uint64_t requests_no_replica;	/* whose selector named none (refused: at AUTH, NO_REPLICA, when its proof verified with a replica's key, else at once) */
	uint64_t requests_refused;	/* rejected by the listener itself: no HELLO, TLS, no replica and no key */
	unsigned replicas;		/* replicas served now */
};

/*
 * pmrep_listener_new -- listen on cfg's address and port (port "0": any
 * free one, pmrep_listener_get_port) for the replicas added later. Of cfg
 * only the endpoint's settings count: address, port, timeout (the
 * connections' transport timeout), TLS on / off and TLS names (more per
 * replica: their cfg's); its path, size and keys are ignored (no replica
 * is served until one is added). The cfg is copied.
 * Errors: PMREP_E_INVAL (NULL), PMREP_E_NOMEM, those of pmrep_peer_open
 * and pmrep_ep_listen (PMREP_E_PROVIDER with EADDRINUSE ...).
 */
PMREP_API int pmrep_listener_new(const struct pmrep_target_cfg *cfg,
		struct pmrep_listener **listener_ptr);
/*
 * pmrep_listener_delete -- delete every replica still on the listener (as
 * pmrep_target_delete does: their sessions closed, files unmapped, locks
 * released; pointers the caller kept to them become invalid), stop
 * listening, free (NULL ok). Errors: PMREP_E_INVAL (listener_ptr NULL).
 */
PMREP_API int pmrep_listener_delete(struct pmrep_listener **listener_ptr);
/*
 * pmrep_listener_add_target -- serve one more replica on the listener,
 * under `name` (1..20 letters, digits, '.', '_', '-'; unique on the
 * listener): opened, locked, checked, registered as pmrep_target_new
 * does, from cfg's path, size / create, keys, staging, direct write,
 * timeout (its handshake deadlines) and TLS names (added to the
 * endpoint's); cfg's address, port and TLS on / off are the listener's.
 * Takes effect at once: the next connection request selecting `name` is
 * admitted with this replica's keys. *target_ptr (NULL ok: not wanted)
 * is owned by the listener; remove the replica with pmrep_target_delete.
 * On failure nothing is added and a file this call created is removed.
 * Errors: PMREP_E_INVAL (NULL, a bad or taken name, no path, no key),
 * PMREP_E_STATE (the listener's RDMA device is gone), and those of
 * pmrep_target_new for the replica (PMREP_E_BUSY: served already).
 */
PMREP_API int pmrep_listener_add_target(struct pmrep_listener *listener,
		const char *name, const struct pmrep_target_cfg *cfg,
		struct pmrep_target **target_ptr);
/*
 * pmrep_listener_find_target -- the replica served under `name`.
 * Errors: PMREP_E_INVAL (NULL), PMREP_E_NO_EVENT (none by that name;
 * *target_ptr NULL).
 */
PMREP_API int pmrep_listener_find_target(const struct pmrep_listener *listener,
		const char *name, struct pmrep_target **target_ptr);
/*
 * pmrep_listener_next_target -- iterate the replicas in the order added:
 * prev NULL gives the first, else the one after prev. Adding or deleting
 * a replica invalidates an iteration in progress (start again).
 * Errors: PMREP_E_INVAL (NULL listener or next_ptr, prev not on this
 * listener), PMREP_E_NO_EVENT (no more; *next_ptr NULL).
 */
PMREP_API int pmrep_listener_next_target(const struct pmrep_listener *listener,
		const struct pmrep_target *prev, struct pmrep_target **next_ptr);
/*
 * pmrep_listener_get_fd -- an epoll fd readable whenever the listener or
 * one of its replicas has work; call pmrep_listener_process(listener, 0)
 * then. Owned by the listener: never close it. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_listener_get_fd(const struct pmrep_listener *listener,
		int *fd);
/*
 * pmrep_listener_process -- wait up to timeout_ms (0: do not wait; -1: no
 * limit; a replica's handshake deadline may end the wait earlier) for
 * work, then dispatch every connection request to the replica its HELLO's
 * selector names (an empty selector: the only replica, when there is
 * one; a name served by none: refused, see pmrep_listener_stats) and let
 * every replica do what pmrep_target_process does for a target of its
 * own. No replica waits for another: nothing of one replica's work waits
 * on a connection (a stalled handshake holds that replica's slot until
 * its deadline, a refused attach ends that session only, each replica
 * has its own slots, per-source bound and replay cache); what blocks is
 * the kernel's part of a persist into a replica's mapping, which holds
 * up this thread (a device that may hang there belongs in a process of
 * its own). Errors: PMREP_E_INVAL, PMREP_E_TIMEOUT (nothing happened in
 * time; not a failure), PMREP_E_PROVIDER (waiting failed).
 */
PMREP_API int pmrep_listener_process(struct pmrep_listener *listener,
		int timeout_ms);
/* pmrep_listener_get_port -- the port it listens on (host order). Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_listener_get_port(const struct pmrep_listener *listener,
		uint16_t *port);
/* pmrep_listener_get_stats -- its counters. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_listener_get_stats(const struct pmrep_listener *listener,
		struct pmrep_listener_stats *stats);
/*
 * pmrep_listener_get_metrics -- the metrics of every replica the listener
 * serves, as pmrep_target_get_metrics gives them (each family once, a
 * sample per replica, in the order added), and the listener's own:
 * pmrep_listener_replicas and pmrep_listener_requests_total by result
 * ("dispatched", "no_replica", "refused"; docs/METRICS.md). buf, len,
 * *needed as for pmrep_mirror_get_metrics.
 * Errors: PMREP_E_INVAL (listener NULL, buf NULL with len > 0),
 * PMREP_E_RANGE (len is below *needed), PMREP_E_NOMEM. Not thread-safe
 * against pmrep_listener_process: call it from the thread that drives it.
 */
PMREP_API int pmrep_listener_get_metrics(const struct pmrep_listener *listener,
		char *buf, size_t len, size_t *needed);
/*
 * pmrep_target_get_name -- the name a HELLO's selector gives for the
 * target: its listener name, or (pmrep_target_new) its path's basename.
 * The string is the target's. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_target_get_name(const struct pmrep_target *target,
		const char **name);

/* ----------------------------------------- a running target's sessions */

/* The state of a target's session (pmrep_target_get_sessions). */
enum pmrep_target_session_state {
	PMREP_TARGET_SESSION_HANDSHAKE = 0,	/* admitted; waiting for the initiator's AUTH */
	PMREP_TARGET_SESSION_ATTACHING = 1,	/* authenticated (ACCEPT sent); waiting for COMMIT */
	PMREP_TARGET_SESSION_ACTIVE = 2,	/* committed: the mirror's session, serving persists */
	PMREP_TARGET_SESSION_QUERY = 3,		/* authenticated for a read-only query */
	PMREP_TARGET_SESSION_CLOSING = 4,	/* a last reply on its way; closed when sent */
};

/*
 * One session of a target, as the target sees it. A mirror's native-flush
 * and APM persists, and its RDMA writes, never reach the target's process
 * (the device and the peer's NIC do them): only GPSPM persist requests are
 * counted here. A session with no GPSPM persists either persists by
 * native flush / APM or has not persisted yet. The mirror's lag and resync
 * progress are the mirror's (pmrep_mirror_get_status in the application).
 */
struct pmrep_target_session {
	uint64_t id;		/* unique within the process, never reused (from 1) */
	char id_str[24];	/* "PPPPPPPP-N": a random prefix per process + id, as in log lines */
	char peer[64];		/* the initiator's address: "ADDR:PORT" ("[v6]:PORT") */
	enum pmrep_target_session_state state;
	uint32_t key_id;	/* the key its admission proof verified with */
	uint64_t generation;	/* its AUTH's generation; 0 before AUTH */
	uint64_t primary_id;	/* its AUTH's primary id; 0 before AUTH */
	enum pmrep_target_mode mode;	/* the target's: writes land in the mapping or a staging buffer */
	uint64_t gpspm_persists;	/* GPSPM persist requests answered OK */
	uint64_t gpspm_bytes;		/* bytes those requests persisted */
	/* the target's service time of those requests (PERSIST received to
	 * its reply posted: staging copy, persist, persist sequence word), in
	 * microseconds: percentiles of a histogram with 4 buckets per power
	 * of two (each value the upper bound of its bucket: at most 25 % above
	 * the true value); 0 when none. The network round trip is not in it. */
	double persist_p50_us;
	double persist_p99_us;
	double persist_p999_us;
	long long start_ms;	/* when it was admitted: wall clock, ms since the epoch */
	uint64_t reserved[4];	/* zeroed (room to grow) */
};

/*
 * pmrep_target_get_sessions -- the target's sessions now (any state but
 * free), oldest first: up to `max` into out[0..max), *count: how many
 * there are (may be more than `max`; `out` may be NULL when max is 0).
 * Not thread-safe against pmrep_target_process: call it from the thread
 * that drives the target (or between its calls).
 * Errors: PMREP_E_INVAL (target or count NULL, out NULL with max > 0).
 */
PMREP_API int pmrep_target_get_sessions(const struct pmrep_target *target,
		struct pmrep_target_session *out, size_t max, size_t *count);

/*
 * pmrep_target_session_state_str -- a static name: "handshake",
 * "attaching", "active", "query", "closing" ("unknown" for another value).
 * Thread-safe.
 */
PMREP_API const char *pmrep_target_session_state_str(
		enum pmrep_target_session_state state);

/*
 * pmrep_target_get_replica_info -- the header of the replica the target
 * serves, as the target holds it (its newest durable state; no read of the
 * file): uuid, generation, owner, flags, persist sequence, sizes.
 * Same thread rule as pmrep_target_get_sessions. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_target_get_replica_info(const struct pmrep_target *target,
		struct pmrep_replica_info *info);

/* What happened to a target's session (pmrep_target_set_event_fn). */
enum pmrep_target_event_type {
	PMREP_TARGET_EVENT_OPENED = 0,		/* admitted: a session (state handshake) */
	PMREP_TARGET_EVENT_AUTHENTICATED = 1,	/* AUTH verified: state attaching or query */
	PMREP_TARGET_EVENT_STATE = 2,		/* another state change (active, closing) */
	PMREP_TARGET_EVENT_CLOSED = 3,		/* the session ended (reason says why) */
	PMREP_TARGET_EVENT_GENERATION = 4,	/* the replica's generation changed (a COMMIT) */
};

struct pmrep_target_event {
	enum pmrep_target_event_type type;
	/* the session (its state after the event; CLOSED: its last state);
	 * NULL for GENERATION. Valid during the call only. */
	const struct pmrep_target_session *session;
	uint64_t generation;	/* the replica's generation after the event */
	const char *reason;	/* CLOSED: why (static or valid during the call); else NULL */
	uint64_t reserved[4];
};

typedef void pmrep_target_event_fn(const struct pmrep_target_event *ev,
		void *arg);

/*
 * pmrep_target_set_event_fn -- call fn(ev, arg) for every event of the
 * target's sessions from now on (NULL: none), from within
 * pmrep_target_process (or pmrep_target_delete: CLOSED), in the order they
 * happen. fn must not call into this target but for
 * pmrep_target_get_sessions / pmrep_target_get_replica_info, and should
 * return quickly: the target serves no one meanwhile.
 * Errors: PMREP_E_INVAL (target NULL). Not thread-safe against
 * pmrep_target_process.
 */
PMREP_API int pmrep_target_set_event_fn(struct pmrep_target *target,
		pmrep_target_event_fn *fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* PMREP_TARGET_H */
