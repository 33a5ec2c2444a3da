/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sqlite-writer -- a database application on pmrep-sqlite for the tests:
 * single-row INSERT transactions into t(id INTEGER PRIMARY KEY, v BLOB),
 * WAL, synchronous=FULL, through the VFS "pmrep" (linked:
 * pmrep_sqlite_register). Row id is the sequence 1, 2, ... (continuing
 * after the largest id the database holds); v is 64 bytes derived from the
 * id, so a checker knows each row's value. After a COMMIT returned
 * SQLITE_OK, "id" is appended to the history file (one write(2) per line:
 * a kill -9 of this process loses no line). A failed COMMIT is reported
 * ("commit N failed: ...") and the writer stops writing (exit 3): the VFS
 * refuses further writes until the database is opened again.
 *
 * usage: sqlite-writer URI HISTORY [--count N] [--rate N] [--exclusive]
 *        [--check]
 *   URI: file:PATH?vfs=pmrep&replicas=...&key_file=...&size=...
 *   --count N   stop after N commits (0, default: until SIGTERM)
 *   --rate N    at most N commits per second (0: no limit)
 *   --exclusive PRAGMA locking_mode=EXCLUSIVE (default NORMAL)
 *   --check     no writing: verify every row's value, print "rows N max M"
 * exit 0 done, 1 a setup failure, 2 usage, 3 a COMMIT failed, 4 --check
 * found a wrong row.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "pmrep-sqlite.h"

static volatile sig_atomic_t stop;

static void
on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void
value_of(int64_t id, uint8_t v[64])
{
	uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15ULL + 1;
	for (int i = 0; i < 64; i++) {
		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ULL;
		v[i] = (uint8_t)(x >> 56);
	}
}

static int
exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
	if (rc != SQLITE_OK) {
		fprintf(stderr, "sqlite-writer: %s: %s\n", sql, err ? err : sqlite3_errstr(rc));
		sqlite3_free(err);
	}
	return rc;
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
check(sqlite3 *db)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT id, v FROM t ORDER BY id", -1, &st, NULL)) {
		fprintf(stderr, "sqlite-writer: %s\n", sqlite3_errmsg(db));
		return 1;
	}
	int64_t rows = 0, max = 0;
	int bad = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		uint8_t want[64];
		value_of(id, want);
		if (sqlite3_column_bytes(st, 1) != 64 ||
				memcmp(sqlite3_column_blob(st, 1), want, 64) != 0) {
			printf("wrong row %lld\n", (long long)id);
			bad = 1;
		}
		rows++;
		max = id > max ? id : max;
	}
	sqlite3_finalize(st);
	printf("rows %lld max %lld\n", (long long)rows, (long long)max);
	return bad ? 4 : 0;
}

int
main(int argc, char *argv[])
{
	if (argc < 3) {
		fprintf(stderr, "usage: sqlite-writer URI HISTORY [--count N] [--rate N] [--exclusive] [--check]\n");
		return 2;
	}
	const char *uri = argv[1], *hist = argv[2];
	long long count = 0;
	double rate = 0;
	int exclusive = 0, do_check = 0;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			count = atoll(argv[++i]);
		else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
			rate = atof(argv[++i]);
		else if (strcmp(argv[i], "--exclusive") == 0)
			exclusive = 1;
		else if (strcmp(argv[i], "--check") == 0)
			do_check = 1;
		else {
			fprintf(stderr, "sqlite-writer: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	if (pmrep_sqlite_register(NULL, 0) != SQLITE_OK) {
		fprintf(stderr, "sqlite-writer: cannot register the VFS\n");
		return 1;
	}
	sqlite3 *db;
	int flags = (do_check ? SQLITE_OPEN_READONLY :
			SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_URI;
	int rc = sqlite3_open_v2(uri, &db, flags, "pmrep");
	if (rc != SQLITE_OK) {
		fprintf(stderr, "sqlite-writer: open %s: %s\n", uri, sqlite3_errmsg(db));
		sqlite3_close(db);
		return rc == SQLITE_BUSY ? 5 : 1;
	}
	if (do_check) {
		int r = check(db);
		sqlite3_close(db);
		return r;
	}
	if (exec(db, exclusive ? "PRAGMA locking_mode=EXCLUSIVE" : "PRAGMA locking_mode=NORMAL") ||
			exec(db, "PRAGMA journal_mode=WAL") ||
			exec(db, "PRAGMA synchronous=FULL") ||
			exec(db, "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v BLOB)")) {
		sqlite3_close(db);
		return 1;
	}
	int hfd = open(hist, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (hfd < 0) {
		fprintf(stderr, "sqlite-writer: %s: %s\n", hist, strerror(errno));
		sqlite3_close(db);
		return 1;
	}
	int64_t id = 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT coalesce(max(id), 0) FROM t", -1, &st, NULL) == SQLITE_OK &&
			sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO t(id, v) VALUES (?1, ?2)", -1, &st, NULL)) {
		fprintf(stderr, "sqlite-writer: %s\n", sqlite3_errmsg(db));
		return 1;
	}
	printf("sqlite-writer: resuming after id %lld\n", (long long)id);
	fflush(stdout);
	double t0 = now_s();
	long long done = 0;
	int result = 0;
	while (!stop && (count == 0 || done < count)) {
		if (rate > 0) {
			double due = t0 + (double)done / rate;
			double d = due - now_s();
			if (d > 0)
				usleep((useconds_t)(d * 1e6));
		}
		id++;
		uint8_t v[64];
		value_of(id, v);
		rc = exec(db, "BEGIN");
		if (rc == SQLITE_OK) {
			sqlite3_bind_int64(st, 1, id);
			sqlite3_bind_blob(st, 2, v, 64, SQLITE_TRANSIENT);
			rc = sqlite3_step(st);
			sqlite3_reset(st);
			rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
		}
		if (rc == SQLITE_OK)
			rc = exec(db, "COMMIT");
		if (rc != SQLITE_OK) {
			printf("commit %lld failed: %s (outcome unknown)\n", (long long)id,
					sqlite3_errstr(rc));
			result = 3;
			break;
		}
		char line[32];
		int n = snprintf(line, sizeof(line), "%lld\n", (long long)id);
		if (write(hfd, line, (size_t)n) != n) {
			fprintf(stderr, "sqlite-writer: history: %s\n", strerror(errno));
			result = 1;
			break;
		}
		done++;
	}
	printf("sqlite-writer: %lld commits in %.2f s\n", done, now_s() - t0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	close(hfd);
	return result;
}
