/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sqlite-vfs-test -- cases of the VFS "pmrep" that SQLite's own test
 * suite (tests/sqlite/run-testfixture.sh) found wrong, each a regression
 * test on the linked library (local only, no replicas):
 *   persist_wal   SQLITE_FCNTL_PERSIST_WAL is kept and answered, and a
 *                 persisted WAL is still there after the last close
 *   psow          SQLITE_FCNTL_POWERSAFE_OVERWRITE turns the
 *                 characteristic off and on
 *   moved         a database renamed while open refuses writes
 *                 (SQLITE_READONLY_DBMOVED) and a new database at its old
 *                 path is another database, not the renamed one
 *   deleted       a database deleted while open: a new open of its path
 *                 creates an empty database
 *   lockstate     SQLITE_FCNTL_LOCKSTATE answers the connection's lock
 *                 (PRAGMA lock_status said "unknown")
 *   gap           a journal deleted, then written past its start: the
 *                 bytes before read as zeros, not the old journal's
 *                 (SQLite's crash3: the old header played back after a
 *                 crash emptied the database)
 * usage: sqlite-vfs-test DIR   (a scratch directory; exit 0: all passed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "pmrep-sqlite.h"

static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__);	\
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
		failures++;						\
		return;							\
	}								\
} while (0)

static char dir[512];

static void
path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
	(void) unlink(out);
}

static int
exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
	if (rc != SQLITE_OK && err != NULL)
		fprintf(stderr, "  (%s: %s)\n", sql, err);
	sqlite3_free(err);
	return rc;
}

/* the number of rows of sqlite_master (-1: an error) */
static int
tables(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int n = -1;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1,
			&st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

static void
persist_wal(void)
{
	char p[600], wal[620];
	path_of(p, sizeof(p), "persist.db");
	snprintf(wal, sizeof(wal), "%s-wal", p);
	sqlite3 *db = NULL;
	CHECK(sqlite3_open(p, &db) == SQLITE_OK, "open");
	int x = -1;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &x) ==
			SQLITE_OK && x == 0, "PERSIST_WAL query: %d", x);
	x = 1;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &x) ==
			SQLITE_OK, "PERSIST_WAL set");
	x = -1;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &x) ==
			SQLITE_OK && x == 1, "PERSIST_WAL query after set: %d", x);
	CHECK(exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(x);"
			"INSERT INTO t VALUES(1)") == SQLITE_OK, "write");
	sqlite3_close(db);
	/* the WAL was checkpointed, not deleted: it is there at the next open */
	db = NULL;
	CHECK(sqlite3_open(p, &db) == SQLITE_OK, "reopen");
	sqlite3_vfs *vfs = sqlite3_vfs_find("pmrep");
	int exists = 0;
	CHECK(vfs->xAccess(vfs, wal, SQLITE_ACCESS_EXISTS, &exists) ==
			SQLITE_OK && exists == 1, "the persisted WAL is gone");
	CHECK(tables(db) == 1, "the table");
	sqlite3_close(db);
}

static void
psow(void)
{
	char p[600];
	path_of(p, sizeof(p), "psow.db");
	sqlite3 *db = NULL;
	CHECK(sqlite3_open(p, &db) == SQLITE_OK, "open");
	sqlite3_file *f = NULL;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &f) ==
			SQLITE_OK && f != NULL, "file pointer");
	int x = -1;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_POWERSAFE_OVERWRITE,
			&x) == SQLITE_OK && x == 1, "PSOW query: %d", x);
	x = 0;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_POWERSAFE_OVERWRITE,
			&x) == SQLITE_OK, "PSOW off");
	CHECK((f->pMethods->xDeviceCharacteristics(f) &
			SQLITE_IOCAP_POWERSAFE_OVERWRITE) == 0, "PSOW still on");
	x = 1;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_POWERSAFE_OVERWRITE,
			&x) == SQLITE_OK, "PSOW on");
	CHECK((f->pMethods->xDeviceCharacteristics(f) &
			SQLITE_IOCAP_POWERSAFE_OVERWRITE) != 0, "PSOW still off");
	sqlite3_close(db);
}

static void
moved(void)
{
	char p[600], q[600];
	path_of(p, sizeof(p), "moved.db");
	path_of(q, sizeof(q), "moved-new.db");
	sqlite3 *db = NULL, *db2 = NULL;
	CHECK(sqlite3_open(p, &db) == SQLITE_OK, "open");
	CHECK(exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1)") == SQLITE_OK,
			"write");
	CHECK(rename(p, q) == 0, "rename");
	int x = 0;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_HAS_MOVED, &x) ==
			SQLITE_OK && x == 1, "HAS_MOVED: %d", x);
	CHECK(tables(db) == 1, "read after the rename");
	int rc = exec(db, "UPDATE t SET x = 2");
	CHECK(rc == SQLITE_READONLY &&
			sqlite3_extended_errcode(db) == SQLITE_READONLY_DBMOVED,
			"write after the rename: %d (%d)", rc,
			sqlite3_extended_errcode(db));
	/* a new database at the old path: not the renamed one */
	CHECK(sqlite3_open(p, &db2) == SQLITE_OK, "open of the old path");
	CHECK(tables(db2) == 0, "the old path opened the renamed database");
	CHECK(exec(db2, "CREATE TABLE u(y)") == SQLITE_OK, "write the new one");
	sqlite3_close(db2);
	CHECK(tables(db) == 1, "the renamed database changed");
	/* back at its path: writable again */
	CHECK(unlink(p) == 0 && rename(q, p) == 0, "rename back");
	x = 1;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_HAS_MOVED, &x) ==
			SQLITE_OK && x == 0, "HAS_MOVED after the rename back: %d", x);
	CHECK(exec(db, "UPDATE t SET x = 3") == SQLITE_OK, "write after the rename back");
	sqlite3_close(db);
	(void) unlink(p);
}

static void
deleted(void)
{
	char p[600];
	path_of(p, sizeof(p), "deleted.db");
	sqlite3 *db = NULL, *db2 = NULL;
	CHECK(sqlite3_open(p, &db) == SQLITE_OK, "open");
	CHECK(exec(db, "CREATE TABLE t(x)") == SQLITE_OK, "write");
	CHECK(unlink(p) == 0, "unlink");
	CHECK(sqlite3_open(p, &db2) == SQLITE_OK, "open of the deleted path");
	CHECK(tables(db2) == 0, "a new open of a deleted database's path found it");
	sqlite3_close(db2);
	sqlite3_close(db);
	(void) unlink(p);
}

static void
lockstate(void)
{
	char p[600];
	path_of(p, sizeof(p), "lockstate.db");
	sqlite3 *db = NULL;
	CHECK(sqlite3_open(p, &db) == SQLITE_OK, "open");
	CHECK(exec(db, "CREATE TABLE t(x)") == SQLITE_OK, "write");
	int x = -1;
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_LOCKSTATE, &x) ==
			SQLITE_OK && x == SQLITE_LOCK_NONE, "LOCKSTATE idle: %d", x);
	CHECK(exec(db, "BEGIN EXCLUSIVE") == SQLITE_OK, "begin");
	CHECK(sqlite3_file_control(db, "main", SQLITE_FCNTL_LOCKSTATE, &x) ==
			SQLITE_OK && x == SQLITE_LOCK_EXCLUSIVE, "LOCKSTATE exclusive: %d", x);
	CHECK(exec(db, "COMMIT") == SQLITE_OK, "commit");
	sqlite3_close(db);
	(void) unlink(p);
}

static void
gap(void)
{
	char p[600], j[620];
	path_of(p, sizeof(p), "gap.db");
	snprintf(j, sizeof(j), "%s-journal", p);
	sqlite3 *db = NULL;
	CHECK(sqlite3_open(p, &db) == SQLITE_OK, "open");
	CHECK(exec(db, "CREATE TABLE t(x)") == SQLITE_OK, "write");
	sqlite3_vfs *vfs = sqlite3_vfs_find("pmrep");
	sqlite3_file *f = sqlite3_malloc(vfs->szOsFile);
	CHECK(f != NULL, "malloc");
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
		SQLITE_OPEN_MAIN_JOURNAL, out = 0;
	unsigned char b[512], z[512];
	memset(b, 0xa5, sizeof(b));
	memset(z, 0, sizeof(z));
	int ok = vfs->xOpen(vfs, j, f, flags, &out) == SQLITE_OK;
	ok = ok && f->pMethods->xWrite(f, b, sizeof(b), 0) == SQLITE_OK &&
		f->pMethods->xSync(f, SQLITE_SYNC_FULL) == SQLITE_OK;
	if (f->pMethods != NULL)
		f->pMethods->xClose(f);
	ok = ok && vfs->xDelete(vfs, j, 0) == SQLITE_OK;
	/* a new journal written at 4096 first: [0, 4096) is a hole */
	ok = ok && vfs->xOpen(vfs, j, f, flags, &out) == SQLITE_OK;
	int wrote = ok && f->pMethods->xWrite(f, b, sizeof(b), 4096) == SQLITE_OK;
	sqlite3_int64 size = 0;
	int read = wrote && f->pMethods->xFileSize(f, &size) == SQLITE_OK &&
		f->pMethods->xRead(f, b, sizeof(b), 0) == SQLITE_OK;
	if (ok)
		f->pMethods->xClose(f);
	(void) vfs->xDelete(vfs, j, 0);
	sqlite3_free(f);
	sqlite3_close(db);
	CHECK(ok && wrote && read, "journal I/O");
	CHECK(size == 4096 + 512, "journal size %lld", (long long)size);
	CHECK(memcmp(b, z, sizeof(z)) == 0, "the hole reads the old journal's bytes");
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sqlite-vfs-test DIR\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	struct pmrep_sqlite_options o;
	memset(&o, 0, sizeof(o));
	o.create_size = 8u << 20;
	if (pmrep_sqlite_register(&o, 1) != SQLITE_OK) {
		fprintf(stderr, "pmrep_sqlite_register failed\n");
		return 1;
	}
	persist_wal();
	psow();
	moved();
	deleted();
	lockstate();
	gap();
	if (failures) {
		fprintf(stderr, "%d case(s) failed\n", failures);
		return 1;
	}
	printf("sqlite-vfs-test: all passed\n");
	return 0;
}
