/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/sqlite.h -- pmrep-sqlite: a SQLite VFS named "pmrep" that keeps a
 * database, its WAL and its rollback journal in one pmrep log, mirrored to
 * the replicas by one mirror, so that a COMMIT returns only once its frames
 * are durable locally and on the replicas the policy requires, and a
 * replica's file is the database after a promotion (docs/DATABASES.md).
 *
 * Use it linked (this header, -lpmrep-sqlite, then open databases with
 * vfs "pmrep") or as a loadable extension (`.load pmrep_sqlite` in the
 * sqlite3 shell; sqlite3_load_extension), which registers the VFS with
 * the defaults below. A database opened with the VFS is named by the pmrep
 * log's path; its settings come from URI parameters (a `file:` URI, see
 * docs/DATABASES.md), each overriding the defaults set here:
 *   replicas=ADDR:PORT[,ADDR:PORT...]  the mirror's replicas (none: local)
 *   key_file=PATH    the set's key (pmrep keygen)
 *   quorum=K         0 or absent: all; K: quorum k of the replicas
 *   tls=0|1          TLS on tcp (default 1)
 *   timeout_ms=MS    persist and connect timeout (default 5000)
 *   size=BYTES       a log that does not exist is created with this data
 *                    size (K/M/G suffixes); without it, it must exist
 *   wal_size=BYTES   the WAL's room in a new volume (default a quarter)
 *   journal_size=BYTES  the rollback journal's (default an eighth)
 */
#ifndef PMREP_SQLITE_H
#define PMREP_SQLITE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Settings the VFS uses where a database's URI says nothing. */
struct pmrep_sqlite_options {
	const char *replicas;	/* "ADDR:PORT,ADDR:PORT", NULL: none (local only) */
	const char *key_file;	/* required with replicas */
	unsigned quorum;	/* 0: all */
	int no_tls;		/* 0: TLS 1.3 on tcp (default), 1: plaintext tcp */
	int timeout_ms;		/* persist / connect timeout; 0: 5000 */
	uint64_t create_size;	/* a database that does not exist is created as a
				 * log of this many data bytes (the URI's size=
				 * decides where given); 0: it must exist */
};

/*
 * pmrep_sqlite_register -- register the VFS "pmrep" with SQLite (again:
 * its defaults replaced), the default VFS too when make_default is
 * non-zero. `opts` (may be NULL: no replicas) is copied. The environment
 * variable PMREP_SQLITE_CREATE_SIZE (bytes, K/M/G suffixes), when set, is
 * the create size where opts gives none. Returns a SQLite
 * result code: SQLITE_OK, SQLITE_NOMEM, or what sqlite3_vfs_register
 * returns. Not thread-safe: call it before databases are opened.
 */
#ifndef PMREP_SQLITE_API
#define PMREP_SQLITE_API
#endif

PMREP_SQLITE_API int pmrep_sqlite_register(const struct pmrep_sqlite_options *opts,
		int make_default);

#ifdef __cplusplus
}
#endif

#endif /* PMREP_SQLITE_H */
