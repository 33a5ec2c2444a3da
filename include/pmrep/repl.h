/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/repl.h -- the replication layer: the replica header that a
 * replica's file starts with, the replica target that serves one replica
 * file or device DAX to a mirror, and the mirror, which makes
 * pmrep_mirror_persist() mean "durable here and on every replica the
 * policy requires".
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

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- replica header */

/* bytes of a replica-set UUID */
#define PMREP_UUID_SIZE 16
/* A replica file / device starts with its header; its data area begins here. */
#define PMREP_REPLICA_DATA_OFFSET 4096
/* Header flag: the data area is a complete copy of the replica set's data of
 * `generation`, left so by a clean mirror shutdown. Cleared when a mirror's
 * attach is committed (not by a refused, unfinished or read-only session). */
#define PMREP_REPLICA_F_CONSISTENT (1u << 0)
/* Header flag: its writer removed it from the set (pmrep_mirror_remove_replica):
 * a promotion neither counts it as fenced nor promotes it. Cleared when a
 * mirror's attach is committed (the replica is in a set again). */
#define PMREP_REPLICA_F_REMOVED (1u << 1)
/* Header flag (a pmrep log): promoted by pmrep_mirror_promote; the
 * membership it records is still the old primary's, of which this node was
 * a replica. Cleared when the promoted log's mirror claims it. */
#define PMREP_REPLICA_F_PROMOTED (1u << 2)

/* What a replica header says (decoded; see pmrep_replica_read_info). */
struct pmrep_replica_info {
	uint8_t uuid[PMREP_UUID_SIZE];	/* all zero: not yet claimed by a mirror */
	uint64_t data_offset;		/* bytes: PMREP_REPLICA_DATA_OFFSET */
	uint64_t data_size;		/* bytes of the data area */
	uint64_t generation;		/* the replica set's generation it holds */
	uint32_t flags;			/* PMREP_REPLICA_F_* */
	/* the replica's own id, drawn when it was formatted and never
	 * changed; all zero: a version 1 header not rewritten yet (its
	 * target draws one at its first header update) */
	uint8_t replica_id[PMREP_UUID_SIZE];
	uint64_t owner;			/* primary id of the last committed attach (0: none) */
	uint64_t seq;			/* sequence of the header slot read (v1 header: 0) */
	/* the persist sequence of its position: of the newest persist step
	 * it holds through (docs/PROTOCOL.md "Position"; whose steps and
	 * what it vouches for: pmrep_replica_read_position); 0: none recorded */
	uint64_t last_persist_seq;
};

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

/*
 * What a replica's header records of the membership of the writer that
 * claimed it (docs/PROTOCOL.md "Membership"): the set size n -- the
 * replicas that writer mirrors to, replicas it is adding at run time
 * included -- and its quorum k (0: all, k = n). A promotion must fence
 * n - k + 1 of them (pmrep_mirror_promote). set_size 0: none recorded (a
 * header written before membership was recorded, or never claimed).
 */
struct pmrep_replica_membership {
	uint32_t set_size;
	uint32_t quorum;
	uint64_t reserved[3];		/* zero; room to grow */
};

/*
 * pmrep_replica_read_membership -- read the membership recorded in the
 * header of the replica file, device DAX or pmrep log at `path` (as
 * pmrep_replica_read_info reads the rest of it; nothing is written) into
 * *mb. Errors: those of pmrep_replica_read_info. Thread-safe.
 */
PMREP_API int pmrep_replica_read_membership(const char *path,
		struct pmrep_replica_membership *mb);

/*
 * pmrep_replica_read_info -- open the replica file or device DAX at `path`
 * read-only, decode and check its header (magic, version, checksum, and
 * that header + data area fill the file exactly) and fill *info. The
 * header has two slots (crash-atomic updates): the valid one with the
 * higher sequence is read; a version 1 header (one slot) reads as
 * sequence 0 with an all-zero replica id. Nothing is written.
 * Errors: PMREP_E_INVAL (NULL argument), PMREP_E_PROVIDER (open / read /
 * fstat failed: pmrep_err_errno()), PMREP_E_MALFORMED (the header is
 * truncated, or neither slot is valid: a bad magic, an unknown version, a
 * bad checksum or reserved bits set), PMREP_E_RANGE (the header's data
 * size does not match the file's size).
 * Thread-safe.
 */
PMREP_API int pmrep_replica_read_info(const char *path,
		struct pmrep_replica_info *info);

/*
 * pmrep_log_open -- open (with PMREP_PMEM_CREATE create and format) the
 * pmrep log file or device DAX at `path`: the one on-media layout of every
 * node (docs/PROTOCOL.md "On media": a 4 KiB header block, then the data
 * area), so that a replica's file is opened in place after a failover and
 * a log is served by pmrep-target as a replica. The mapping *pmem_ptr
 * exposes the data area only: pmrep_pmem_get_address and
 * pmrep_pmem_get_size are the data area's (offset 0 of a mirror on it is
 * the data area's first byte); every other pmrep_pmem_* function works on
 * it as on any mapping; close it with pmrep_pmem_close.
 * `flags`: 0, PMREP_PMEM_CREATE (a file that does not exist is created
 * with `data_size` data bytes and formatted: unclaimed, a new random
 * replica id; a device DAX whose header block is all zero is formatted),
 * | PMREP_PMEM_EXCL. `data_size` (bytes of the data area): > 0 with
 * PMREP_PMEM_CREATE; else 0 (whatever the header says) or the size the
 * header must hold. `required`: as pmrep_pmem_open's.
 * The call takes the file's exclusive lock (flock) for the mapping's life:
 * the lock a pmrep-target serving the file holds, so a log in use by a
 * target is refused (PMREP_E_BUSY) and a target refuses a log open here.
 * Errors: PMREP_E_INVAL (NULL, CREATE with data_size 0, a size too
 * large, EXCL without CREATE, PMREP_LOG_RDONLY with CREATE or EXCL,
 * unknown flags); PMREP_E_BUSY (a target or another
 * pmrep_log_open holds the file; never with PMREP_LOG_RDONLY);
 * PMREP_E_MALFORMED (not a pmrep log: its
 * header block is not valid -- a plain file is opened with
 * pmrep_pmem_open); PMREP_E_RANGE (the header's data size is not
 * `data_size`, or does not fill the file exactly; the file is too small);
 * PMREP_E_PROVIDER / PMREP_E_PMEM / PMREP_E_GRANULARITY as
 * pmrep_pmem_open's (pmrep_err_errno(); EACCES: the file is not
 * readable, or without PMREP_LOG_RDONLY not writable). A file this call
 * created is removed again when it fails. Thread-safe (no shared state);
 * the mapping owns its fd (closed by pmrep_pmem_close).
 *
 * PMREP_LOG_RDONLY in `flags` (not with PMREP_PMEM_CREATE or
 * PMREP_PMEM_EXCL): look without claiming. The file is opened O_RDONLY
 * and mapped read-only (PROT_READ, shared: the bytes a target or a writer
 * stores are seen as they land); its header is decoded and checked, and
 * nothing is ever written -- not the header (no generation raised, no
 * claim, no mark), not the data area, not the file's times. No lock is
 * taken: it excludes nobody -- a pmrep-target serving the file (the
 * node's own, as a replica), a pmrep_log_open for writing, a mirror on
 * it, a promotion go on or start while it is open -- and nobody excludes
 * it. So what it reads is not a snapshot: while a writer writes, the data
 * area may change under the reader, and only the writer's position
 * (pmrep_replica_read_position) says what is complete; pmrep_log_get_uuid
 * and pmrep_log_get_generation read the header as it is at each call.
 * A store into the mapping faults (SIGSEGV); pmrep_mirror_new,
 * pmrep_mirror_promote and pmrep_mirror_recover refuse the mapping
 * (PMREP_E_INVAL); pmrep_pmem_persist of it stores nothing (on a page
 * cache it may write back what a writer stored). `required`: as for a
 * writable open (PMREP_PMEM_GRANULARITY_PAGE always works).
 */
PMREP_API int pmrep_log_open(const char *path, unsigned flags,
		size_t data_size, enum pmrep_pmem_granularity required,
		struct pmrep_pmem **pmem_ptr);
/* pmrep_log_open flag: read-only, no lock, nothing written (above). Not a
 * PMREP_PMEM_* flag: pmrep_pmem_open refuses it. */
#define PMREP_LOG_RDONLY (1u << 16)

/*
 * pmrep_log_get_uuid -- the replica-set UUID the header of the open log
 * `log` (a mapping of pmrep_log_open, writable or PMREP_LOG_RDONLY) holds
 * now, into uuid[PMREP_UUID_SIZE]: all zero while the log was never
 * claimed by a mirror (pmrep_replica_info's uuid). Read from the mapping:
 * no second open of the path, no system call, nothing written. A header
 * being updated meanwhile (its mirror's claim, a target's COMMIT or
 * position when it serves the file) reads as before or after the update,
 * never torn (two slots, each checked).
 * Errors: PMREP_E_INVAL (NULL argument; `log` is a plain mapping of
 * pmrep_pmem_open, not a pmrep log), PMREP_E_MALFORMED (neither header
 * slot is valid now: the file was overwritten). Thread-safe; the caller
 * keeps `log` and its fd.
 */
PMREP_API int pmrep_log_get_uuid(const struct pmrep_pmem *log,
		uint8_t uuid[PMREP_UUID_SIZE]);
/*
 * pmrep_log_get_generation -- the replica set's generation the header of
 * the open log `log` holds now (*generation; 0 while never claimed):
 * raised by a promotion (pmrep_mirror_promote), by a mirror claiming the
 * log at a higher generation, or -- when a target serves the file -- by a
 * writer's attach or a promotion's fence committed there. Read as
 * pmrep_log_get_uuid reads. Errors: those of pmrep_log_get_uuid.
 * Thread-safe; the caller keeps `log` and its fd.
 */
PMREP_API int pmrep_log_get_generation(const struct pmrep_pmem *log,
		uint64_t *generation);

/* ------------------------------------------------------------ shared keys */

/* A pre-shared key is 16 to PMREP_KEY_MAX bytes; PMREP_KEY_GOOD and more
 * are taken without a warning (pmrep_key_write_file writes that many). */
#define PMREP_KEY_MIN 16
#define PMREP_KEY_GOOD 32
#define PMREP_KEY_MAX 64

/* pmrep_key_read_file_ex flags */
/* accept a key file that others than its owner may read, or that the
 * effective user does not own (a WARNING is logged instead) */
#define PMREP_KEY_FILE_INSECURE_OK (1u << 0)

/*
 * pmrep_key_read_file_ex -- read a pre-shared key and its key id from the
 * file at `path`. The last path component is opened without following a
 * symbolic link (O_NOFOLLOW: a link there is refused; a path under
 * /dev/fd/ or /proc/self/fd/, e.g. a shell's `<(...)`, is followed: it names
 * an open file). Unless `flags` has PMREP_KEY_FILE_INSECURE_OK, a file
 * that group or others may read or write (mode & 077), or that the
 * effective user does not own, is refused. Two formats:
 *  - the key file pmrep_key_write_file / `pmrep keygen` writes, one line
 *    "pmrep-key 1 ID HEX CHECK\n": format version 1, the key id (decimal
 *    u32), the key in lowercase hex (PMREP_KEY_MIN..PMREP_KEY_MAX bytes),
 *    and the first 4 bytes (8 hex digits) of SHA-256("pmrep-key check" NUL
 *    ‖ id (LE32) ‖ key): a truncated or changed file does not check and is
 *    refused;
 *  - any other content: the file's bytes, without one trailing newline,
 *    are the key (the format before keygen: `head -c 32 /dev/urandom |
 *    base64 > key` works), key id 0.
 * A key shorter than PMREP_KEY_GOOD bytes is accepted with a WARNING
 * (rotate it: docs/DESIGN.md "Keys"). The key is written to `key` (room
 * for `key_size` bytes), its length to *key_len, its id to *key_id (may be
 * NULL).
 * Errors: PMREP_E_INVAL (NULL argument, unknown flags, a key shorter than
 * PMREP_KEY_MIN or longer than min(key_size, PMREP_KEY_MAX), a "pmrep-key"
 * line that does not parse or check, a directory, a symbolic link as last
 * component: pmrep_err_errno() ELOOP), PMREP_E_AUTH (the file is readable
 * by group / others or not ours, without the flag), PMREP_E_PROVIDER (open
 * / read failed: pmrep_err_errno()).
 * Thread-safe.
 */
PMREP_API int pmrep_key_read_file_ex(const char *path, unsigned flags,
		uint8_t *key, size_t key_size, size_t *key_len, uint32_t *key_id);
/*
 * pmrep_key_read_file -- pmrep_key_read_file_ex(path, 0, key, key_size,
 * key_len, NULL): strict about the file's owner and mode, the key id
 * dropped. Errors: those of pmrep_key_read_file_ex. Thread-safe.
 */
PMREP_API int pmrep_key_read_file(const char *path, uint8_t *key,
		size_t key_size, size_t *key_len);
/*
 * pmrep_key_write_file -- make a new key file at `path`: `len` random
 * bytes (PMREP_KEY_GOOD..PMREP_KEY_MAX; RAND_bytes) with id `key_id`, in
 * the "pmrep-key 1" format pmrep_key_read_file_ex reads. Created with
 * O_EXCL | O_NOFOLLOW, mode 0600 (an existing file or link is never
 * overwritten), written and fsync'ed; a failed write removes it.
 * Errors: PMREP_E_INVAL (NULL, len out of range), PMREP_E_PROVIDER (the
 * file exists: pmrep_err_errno() EEXIST; open / write / fsync failed, the
 * random generator failed).
 * Thread-safe.
 */
PMREP_API int pmrep_key_write_file(const char *path, uint32_t key_id,
		size_t len);

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
 * into regions the resync has copied already is posted to that replica
 * too when its ring has room; when it has none, the persist is posted
 * without it and marks those regions out of sync again, to be copied whole
 * once more (pmrep_mirror_cfg_set_region_size: a 4 KiB persist can cost a
 * 64 KiB copy), so a writer faster than the replica can add work to the
 * resync faster than it removes it, and the resync never ends. While the
 * net progress is below the minimum, such a persist waits for room instead
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

/*
 * pmrep_repl_set_tls_default -- whether pmrep_replica_query and
 * pmrep_mirror_recover (which take no cfg) use TLS on the tcp provider
 * (default true), as pmrep_mirror_cfg_set_tls does for a mirror.
 * Returns 0. Thread-safe (an atomic store); affects later calls.
 */
PMREP_API int pmrep_repl_set_tls_default(bool on);

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
#endif /* PMREP_REPL_H */
