/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/replica.h -- a replica's file: the header it starts with (its
 * replica set, generation, flags, membership), read from the file; and
 * the pmrep log, the same layout opened in place by its application.
 *
 * The conventions of <pmrep/repl.h> apply.
 */
#ifndef PMREP_REPLICA_H
#define PMREP_REPLICA_H

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

/* -------------------------------------------------------------- pmrep log */

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

#ifdef __cplusplus
}
#endif
#endif /* PMREP_REPLICA_H */
