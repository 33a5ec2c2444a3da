/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sqlite-bench -- a database on pmrep against SQLite on a local file
 * system, single-row INSERT transactions (BEGIN; INSERT; COMMIT), WAL,
 * synchronous=FULL, one connection, locking_mode NORMAL and EXCLUSIVE:
 *   - pmrep-sqlite (the VFS "pmrep") with 1 replica ("all"), 2 replicas
 *     ("all") and 2 replicas under quorum 1, on loopback tcp (TLS 1.3, or
 *     plaintext with --tls off), pmrep-targets started by the bench;
 *   - stock SQLite (the unix VFS) on /dev/shm (memory: what the file
 *     system costs without a device) and on a local disk directory (--disk:
 *     any directory, e.g. a file system on a replicated block device);
 *   - the floor: pmrep_mirror_persist of 4 KiB on a pmrep log with the
 *     same mirror settings (persist sequences on, the same replicas and
 *     policy), one at a time, measured in the same run.
 * Prints commits/s, commit p50 and p99 (µs) per point, and the VFS's own
 * cost: commit p50 / the floor's 4 KiB persist p50 (issue 27's goal:
 * <= 1.2). Figures only: exit 0 whenever it ran, no pass / fail on a
 * number (shared, noisy machines).
 *
 * usage: sqlite-bench TOOLS_DIR [--quick] [--commits N] [--disk DIR]
 *                     [--tls on|off] [--replicas 1|2]
 *   TOOLS_DIR: where pmrep-target is (the build's tools/)
 *   --tls off: the mirrors (floor and VFS) and their targets in plaintext
 *   --replicas N: only the configurations with N replicas (default all)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include <pmrep/base.h>
#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "pmrep-sqlite.h"

#define LOG_SIZE (32u << 20)
#define MAX_SAMPLES 100000

static const char *tools;
static char work[256];
static pid_t tpid[2];
static int tport[2];
static bool tls = true;		/* --tls: mirrors and targets inside TLS 1.3 */

static double
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct result {
	double per_s, p50, p99;
	int n;
};

static void
summarize(double *v, int n, double total_us, struct result *r)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	r->n = n;
	r->p50 = n ? v[n / 2] : 0;
	r->p99 = n ? v[(int)((double)n * 0.99) < n ? (int)((double)n * 0.99) : n - 1] : 0;
	r->per_s = total_us > 0 ? n / (total_us / 1e6) : 0;
}

/* start replica i's pmrep-target on a fresh file; its port from its
 * "listening on ADDR:PORT" line */
static int
target_start(int i)
{
	char path[300], key[300], exe[512];
	snprintf(path, sizeof(path), "%s/r%d.log", work, i);
	snprintf(key, sizeof(key), "%s/key", work);
	snprintf(exe, sizeof(exe), "%s/pmrep-target", tools);
	unlink(path);
	char out[300];
	snprintf(out, sizeof(out), "%s/t%d.out", work, i);
	unlink(out);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		char size[32];
		snprintf(size, sizeof(size), "%u", LOG_SIZE);
		execl(exe, exe, "--path", path, "--create", "--size", size,
				"--key-file", key, "--address", "127.0.0.1",
				"--port", "0", tls ? (char *)NULL : "--no-tls",
				(char *)NULL);
		_exit(127);
	}
	tport[i] = 0;
	for (int tries = 0; tries < 200 && tport[i] == 0; tries++) {
		FILE *f = fopen(out, "r");
		char line[256];
		while (f && fgets(line, sizeof(line), f)) {
			char *c = strstr(line, "listening on 127.0.0.1:");
			if (c)
				tport[i] = atoi(c + strlen("listening on 127.0.0.1:"));
		}
		if (f)
			fclose(f);
		if (tport[i] == 0)
			usleep(20000);
	}
	tpid[i] = pid;
	return tport[i] > 0 ? 0 : -1;
}

static void
targets_stop(void)
{
	for (int i = 0; i < 2; i++)
		if (tpid[i] > 0) {
			kill(tpid[i], SIGTERM);
			waitpid(tpid[i], NULL, 0);
			tpid[i] = 0;
		}
}

/* the floor: 4 KiB pmrep_mirror_persist on a pmrep log, n at a time one */
static int
floor_run(int nrep, unsigned quorum, int n, struct result *r)
{
	char path[300], key[300];
	snprintf(path, sizeof(path), "%s/floor.log", work);
	snprintf(key, sizeof(key), "%s/key", work);
	unlink(path);
	struct pmrep_pmem *pmem = NULL;
	struct pmrep_mirror_cfg *cfg = NULL;
	struct pmrep_mirror *m = NULL;
	uint8_t k[PMREP_KEY_MAX], uuid[16];
	size_t klen;
	for (int i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(i * 37 + 1);
	int ret = pmrep_log_open(path, PMREP_PMEM_CREATE, LOG_SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &pmem);
	if (ret == 0) ret = pmrep_key_read_file(key, k, sizeof(k), &klen);
	if (ret == 0) ret = pmrep_mirror_cfg_new(&cfg);
	for (int i = 0; ret == 0 && i < nrep; i++) {
		char port[16];
		snprintf(port, sizeof(port), "%d", tport[i]);
		ret = pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", port);
	}
	if (ret == 0) ret = pmrep_mirror_cfg_set_key(cfg, k, klen);
	if (ret == 0) ret = pmrep_mirror_cfg_set_uuid(cfg, uuid);
	if (ret == 0) ret = pmrep_mirror_cfg_set_generation(cfg, 1);
	if (ret == 0) ret = pmrep_mirror_cfg_set_persist_seq(cfg, true);
	if (ret == 0) ret = pmrep_mirror_cfg_set_quorum(cfg, quorum);
	if (ret == 0) ret = pmrep_mirror_cfg_set_tls(cfg, tls);
	if (ret == 0) ret = pmrep_mirror_new(pmem, cfg, &m);
	static double v[MAX_SAMPLES];
	uint8_t *base = ret == 0 ? pmrep_pmem_get_address(pmem) : NULL;
	double t0 = now_us();
	for (int i = 0; ret == 0 && i < n; i++) {
		size_t off = ((size_t)i * 4096) % (LOG_SIZE - 4096);
		memset(base + off, i, 4096);
		double a = now_us();
		ret = pmrep_mirror_persist(m, off, 4096, 5000);
		v[i] = now_us() - a;
	}
	double total = now_us() - t0;
	if (ret)
		fprintf(stderr, "sqlite-bench: floor: %s (%s)\n", pmrep_err_to_str(ret),
				pmrep_err_msg());
	else
		summarize(v, n, total, r);
	if (m) pmrep_mirror_delete(&m);
	if (cfg) pmrep_mirror_cfg_delete(&cfg);
	if (pmem) pmrep_pmem_close(&pmem);
	unlink(path);
	snprintf(path, sizeof(path), "%s/floor.log.pmrep-state", work);
	unlink(path);
	return ret ? -1 : 0;
}

static int
exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
	if (rc != SQLITE_OK) {
		fprintf(stderr, "sqlite-bench: %s: %s\n", sql, err ? err : sqlite3_errstr(rc));
		sqlite3_free(err);
	}
	return rc;
}

/* n single-row INSERT commits on `name` through `vfs` */
static int
sql_run(const char *name, const char *vfs, bool exclusive, int n, struct result *r)
{
	sqlite3 *db;
	if (sqlite3_open_v2(name, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			SQLITE_OPEN_URI, vfs) != SQLITE_OK) {
		fprintf(stderr, "sqlite-bench: open %s: %s\n", name, sqlite3_errmsg(db));
		sqlite3_close(db);
		return -1;
	}
	if (exec(db, exclusive ? "PRAGMA locking_mode=EXCLUSIVE" : "PRAGMA locking_mode=NORMAL") ||
			exec(db, "PRAGMA journal_mode=WAL") ||
			exec(db, "PRAGMA synchronous=FULL") ||
			exec(db, "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v BLOB)")) {
		sqlite3_close(db);
		return -1;
	}
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "INSERT INTO t(v) VALUES (randomblob(100))", -1, &st, NULL)) {
		sqlite3_close(db);
		return -1;
	}
	static double v[MAX_SAMPLES];
	int rc = SQLITE_OK;
	double t0 = now_us();
	for (int i = 0; i < n && rc == SQLITE_OK; i++) {
		double a = now_us();
		rc = exec(db, "BEGIN");
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
			sqlite3_reset(st);
		}
		if (rc == SQLITE_OK)
			rc = exec(db, "COMMIT");
		v[i] = now_us() - a;
	}
	double total = now_us() - t0;
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (rc != SQLITE_OK)
		return -1;
	summarize(v, n, total, r);
	return 0;
}

static void
row(const char *what, const struct result *r, const struct result *floor)
{
	printf("  %-44s %9.0f %9.1f %9.1f", what, r->per_s, r->p50, r->p99);
	if (floor)
		printf("   %5.2f", r->p50 / floor->p50);
	printf("\n");
}

static void
rm_db(const char *path)
{
	char p[600];
	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s.pmrep-state", path);
	unlink(p);
}

static const char *
fs_name(const char *dir)
{
	struct statfs s;
	if (statfs(dir, &s))
		return "?";
	switch ((unsigned long)s.f_type) {
	case 0x01021994: return "tmpfs";
	case 0xEF53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x9123683E: return "btrfs";
	case 0x794c7630: return "overlayfs";
	default: return "other";
	}
}

int
main(int argc, char *argv[])
{
	if (argc < 2) {
		fprintf(stderr, "usage: sqlite-bench TOOLS_DIR [--quick] [--commits N] [--disk DIR]"
				" [--tls on|off] [--replicas 1|2]\n");
		return 2;
	}
	tools = argv[1];
	int n = 3000;
	const char *disk = "/var/tmp";
	int only_nrep = 0;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			n = 300;
		else if (strcmp(argv[i], "--commits") == 0 && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (strcmp(argv[i], "--disk") == 0 && i + 1 < argc)
			disk = argv[++i];
		else if (strcmp(argv[i], "--tls") == 0 && i + 1 < argc &&
				(strcmp(argv[i + 1], "on") == 0 || strcmp(argv[i + 1], "off") == 0))
			tls = strcmp(argv[++i], "on") == 0;
		else if (strcmp(argv[i], "--replicas") == 0 && i + 1 < argc &&
				(strcmp(argv[i + 1], "1") == 0 || strcmp(argv[i + 1], "2") == 0))
			only_nrep = atoi(argv[++i]);
		else {
			fprintf(stderr, "sqlite-bench: unknown or incomplete option %s\n", argv[i]);
			return 2;
		}
	}
	if (n < 10 || n > MAX_SAMPLES)
		n = 3000;
	signal(SIGPIPE, SIG_IGN);
	/* loopback tcp, as the table says: where an RDMA device exists (the
	 * soft-RoCE guest) the library would pick verbs, which 127.0.0.1 does
	 * not reach; the targets inherit it */
	setenv("PMREP_PROVIDER", "tcp", 1);
	snprintf(work, sizeof(work), "/dev/shm/pmrep-sqlite-bench.%d", (int)getpid());
	if (mkdir(work, 0700)) {
		perror(work);
		return 1;
	}
	char key[300];
	snprintf(key, sizeof(key), "%s/key", work);
	if (pmrep_key_write_file(key, 1, 32)) {
		fprintf(stderr, "sqlite-bench: keygen: %s\n", pmrep_err_msg());
		return 1;
	}
	pmrep_sqlite_register(NULL, 0);
	time_t t = time(NULL);
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M", gmtime(&t));
	printf("sqlite-bench %s UTC: %d single-row INSERT commits per point, WAL, synchronous=FULL;\n"
			"  pmrep: loopback tcp, %s, persist sequences on; floor: 4 KiB pmrep_mirror_persist, same mirror settings\n",
			date, n, tls ? "TLS 1.3" : "plaintext");
	printf("  %-44s %9s %9s %9s   %s\n", "point", "commits/s", "p50 us", "p99 us", "p50/floor");
	static const struct { int nrep; unsigned quorum; const char *name; } cfgs[] = {
		{ 1, 0, "1 replica" },
		{ 2, 0, "2 replicas, all" },
		{ 2, 1, "2 replicas, quorum 1" },
	};
	int failed = 0;
	for (unsigned c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		struct result fl = { 0 }, r;
		bool ok = true;
		if (only_nrep && cfgs[c].nrep != only_nrep)
			continue;
		for (int i = 0; ok && i < cfgs[c].nrep; i++)
			ok = target_start(i) == 0;
		if (!ok || floor_run(cfgs[c].nrep, cfgs[c].quorum, n, &fl)) {
			printf("  %s: not measured (the targets or the floor failed)\n", cfgs[c].name);
			failed = 1;
			targets_stop();
			continue;
		}
		char what[128];
		snprintf(what, sizeof(what), "floor: 4 KiB persist, %s", cfgs[c].name);
		row(what, &fl, NULL);
		/* each point a fresh set: new targets' files, a new database */
		for (int ex = 0; ex < 2; ex++) {
			targets_stop();
			for (int i = 0; i < cfgs[c].nrep; i++)
				if (target_start(i))
					ok = false;
			char path[300], uri[700];
			snprintf(path, sizeof(path), "%s/db.log", work);
			rm_db(path);
			snprintf(uri, sizeof(uri), "file:%s?vfs=pmrep&size=%u&key_file=%s&quorum=%u&tls=%d&replicas=127.0.0.1:%d%s%.0d",
					path, LOG_SIZE, key, cfgs[c].quorum, tls ? 1 : 0, tport[0],
					cfgs[c].nrep > 1 ? ",127.0.0.1:" : "",
					cfgs[c].nrep > 1 ? tport[1] : 0);
			snprintf(what, sizeof(what), "pmrep, %s, %s", cfgs[c].name,
					ex ? "EXCLUSIVE" : "NORMAL");
			if (!ok || sql_run(uri, "pmrep", ex, n, &r)) {
				printf("  %s: not measured\n", what);
				failed = 1;
			} else {
				row(what, &r, &fl);
			}
			rm_db(path);
		}
		targets_stop();
	}
	const char *dirs[2] = { work, disk };
	for (int d = 0; d < 2; d++) {
		for (int ex = 0; ex < 2; ex++) {
			char path[400], what[160];
			snprintf(path, sizeof(path), "%s/stock-%d.db", dirs[d], (int)getpid());
			rm_db(path);
			struct result r;
			snprintf(what, sizeof(what), "stock, %s (%s), %s", d ? dirs[d] : "/dev/shm",
					fs_name(dirs[d]), ex ? "EXCLUSIVE" : "NORMAL");
			if (sql_run(path, "unix", ex, n, &r)) {
				printf("  %s: not measured\n", what);
				failed = 1;
			} else {
				row(what, &r, NULL);
			}
			rm_db(path);
		}
	}
	printf("  (the disk point: fdatasync on %s, whatever its device's write cache does)\n", disk);
	char p[300];
	snprintf(p, sizeof(p), "%s/key", work);
	unlink(p);
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/r%d.log", work, i);
		unlink(p);
	}
	rmdir(work);
	if (failed)
		printf("sqlite-bench: some points were not measured\n");
	return 0;
}
