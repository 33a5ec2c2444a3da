/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_failover_v2.c -- four ways of losing acknowledged
 * writes across a failover, as processes over tcp on loopback (targets in
 * child processes, `pmrep promote` / `compare` / `recover` as the
 * operator runs them, writers in child processes where a node's clock
 * matters). Each test asserts the RIGHT outcome -- every persist a writer
 * completed is in whatever copy the tools promote or recover without a
 * force option, or the tool refuses (exit 1) -- so each fails on code
 * that loses such writes in that way:
 *  1. promote decides before it fences: the old primary, alive, completes
 *     persists under its quorum while `pmrep promote` is stopped between
 *     its query and its fence;
 *  2. persist sequences from wall clocks: a hand-over (clean close, then
 *     another primary id at the same generation) by a writer whose clock
 *     is 20 s behind, or that runs without persist sequences; the stale
 *     copy is promoted;
 *  3. a promote killed after one replica committed the new generation,
 *     then the stale replica promoted;
 *  4. T30 (../shared/cases/T30): quorum 1 of 2 closed cleanly, one
 *     replica stopped, a later run completes persists without it; the
 *     stopped one back: recover, compare, promote, attach.
 *
 * Timing without races: a child that must be caught between two steps
 * runs with tests/func/shim (LD_PRELOAD, built next to this binary): it
 * stops itself right after writing the library log line that matches
 * PMREP_TEST_STOP_AT (one #define each below; the fix may move or reword
 * them: update the pattern, not the assertions), and the test waits for
 * the stop (WUNTRACED) before it acts. The same shim shifts a writer's
 * CLOCK_REALTIME (PMREP_TEST_CLOCK_SHIFT_S).
 * Past ~800 lines: one program for the four losses; they share targets, shim.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

/* `pmrep promote`'s line after it has decided (queried the replicas and
 * chosen) and before any replica sees the new generation: its log's own
 * claim (mirror_log.c, INFO). Case 1 stops promote here and has the old
 * primary persist meanwhile. It must stay a line BEFORE the first
 * replica's fence (COMMIT): after it, the old primary's persists are
 * refused, none is acknowledged, and the case checks nothing (it prints
 * how many it completed). */
#define FV2_PROMOTE_DECIDED_LINE "fencing the replicas"
/* `pmrep promote`'s line once a replica committed the new generation
 * (replica.c replica_commit, NOTICE, after COMMIT_REPLY OK and before
 * that replica's resync begins). Case 3 kills promote here. */
#define FV2_PROMOTE_FENCED_LINE ") fenced at generation"
/* the level the promote child logs at (PMREP_LOG_LEVEL 0..5): info */
#define FV2_PROMOTE_LOG_LEVEL "4"
/* printed once promote marked its log incomplete, before the copy */
#define FV2_PROMOTE_CATCH_UP_LINE "marked incomplete until the copy is done"

#define SIZE (1u << 20)
#define REC 4096u
#define NREC 64u

static uint8_t key[PMREP_KEY_MAX];	/* read back from keyfile (setup) */
static size_t key_len;
static char keyfile[256], bindir[4096], self[4096], shim[4200], pmrep_exe[4200];
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x24, 0xf2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const char uuid_hex[] = "24f202030405060708090a0b0c0d0e0f";
static char dir[128], lpath[256], path[3][256];
static struct func_child tg[3];

/* the children this test forked besides the targets (tools, writers):
 * the teardown kills and reaps what is left */
static pid_t kids[16];

static void
kid_add(pid_t p)
{
	for (unsigned i = 0; i < sizeof(kids) / sizeof(kids[0]); i++)
		if (kids[i] == 0) {
			kids[i] = p;
			return;
		}
	fail_msg("too many children");
}

static void
kid_gone(pid_t p)
{
	for (unsigned i = 0; i < sizeof(kids) / sizeof(kids[0]); i++)
		if (kids[i] == p)
			kids[i] = 0;
}

static void
kids_kill_all(void)
{
	for (unsigned i = 0; i < sizeof(kids) / sizeof(kids[0]); i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			(void) waitpid(kids[i], NULL, 0);
			kids[i] = 0;
		}
}

/* ------------------------------------------------------------- data */

/* record k of round `round`: REC bytes at k * REC */
static void
record(uint8_t *base, unsigned k, unsigned round)
{
	uint8_t *p = base + (size_t)k * REC;
	for (unsigned i = 0; i < REC; i++)
		p[i] = (uint8_t)(k * 7 + i * 13 + round * 101 + 1);
}

/* the first of records 0 .. nrec-1 where `have` differs from `want`,
 * or -1 */
static int
first_diff(const uint8_t *have, const uint8_t *want, unsigned nrec)
{
	for (unsigned k = 0; k < nrec; k++)
		if (memcmp(have + (size_t)k * REC, want + (size_t)k * REC, REC) != 0)
			return (int)k;
	return -1;
}

/* the replica file at `p` holds want's records 0 .. nrec-1: -1, else the
 * first record it lacks */
static int
replica_lacks(const char *p, const uint8_t *want, unsigned nrec)
{
	uint8_t *r = func_replica_read(p, SIZE);
	int d = first_diff(r, want, nrec);
	free(r);
	return d;
}

static struct pmrep_replica_info
info_of(const char *p)
{
	struct pmrep_replica_info i;
	assert_int_equal(pmrep_replica_read_info(p, &i), 0);
	print_message("  %s: generation %llu, owner %016llx, psn %llu, %s\n", p,
			(unsigned long long)i.generation, (unsigned long long)i.owner,
			(unsigned long long)i.last_persist_seq,
			i.flags & PMREP_REPLICA_F_CONSISTENT ? "consistent" :
				"not consistent");
	return i;
}

static void
copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY);
	assert_true(in >= 0);
	int out = open(to, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	assert_true(out >= 0);
	static uint8_t buf[1 << 16];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		assert_true(n >= 0);
		if (n == 0)
			break;
		assert_int_equal(write(out, buf, (size_t)n), n);
	}
	assert_int_equal(fsync(out), 0);
	close(in);
	close(out);
}

/* ---------------------------------------------------------- targets */

/* serve replica i on `port` ("0": any free one) */
static void
serve_on(unsigned i, const char *port)
{
	struct func_child_cfg cfg = { .path = path[i], .size = SIZE,
		.key = key, .key_len = key_len };
	func_child_start(&tg[i], &cfg, port);
}

static void
serve(unsigned i)
{
	serve_on(i, "0");
}

static const char *
at(unsigned i)
{
	static char a[3][64];
	snprintf(a[i], sizeof(a[i]), "%s:%s", func_addr(), tg[i].port);
	return a[i];
}

/* a cfg of the replicas in `ports` (n of them), quorum `k` */
static struct pmrep_mirror_cfg *
mcfg_ports(char *const ports[], unsigned n, unsigned k, bool psn)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(pmrep_mirror_cfg_add_replica(c, "127.0.0.1",
				ports[i]), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, key_len), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(c, k), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 2000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 10000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 50, 200), 0);
	if (psn)
		assert_int_equal(pmrep_mirror_cfg_set_persist_seq(c, true), 0);
	return c;
}

/* both replicas tg[0], tg[1] */
static struct pmrep_mirror_cfg *
mcfg(unsigned k, bool psn)
{
	char *ports[2] = { tg[0].port, tg[1].port };
	return mcfg_ports(ports, 2, k, psn);
}

/* ---------------------------------------------------- child processes */

/*
 * fork and exec argv (NULL-terminated), stdout and stderr into `out`,
 * with the environment variables envs[] ("NAME=VALUE", NULL-terminated;
 * PMREP_LOG_LEVEL unset unless given there); the pid
 */
static pid_t
spawn(char *const argv[], char *const envs[], const char *out)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(out, O_CREAT | O_TRUNC | O_WRONLY, 0600);
		if (fd < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		unsetenv("PMREP_LOG_LEVEL");
		for (unsigned i = 0; envs && envs[i]; i++)
			putenv(envs[i]);
		/* under ASan (the asan stage) the preloaded shim comes before
		 * its runtime in the library list, which it refuses by
		 * default: the order is harmless here (the shim allocates
		 * nothing) */
		const char *ao = getenv("ASAN_OPTIONS");
		static char asan[1024];
		snprintf(asan, sizeof(asan), "ASAN_OPTIONS=%s%sverify_asan_link_order=0",
				ao ? ao : "", ao && ao[0] ? ":" : "");
		putenv(asan);
		execv(argv[0], argv);
		_exit(127);
	}
	kid_add(pid);
	return pid;
}

/* the child stopped itself (true), or ended first (false; *status its
 * wait status); fails the test after limit_ms x func_slow */
static bool
wait_stopped(pid_t pid, int limit_ms, int *status)
{
	long long t0 = func_now_ms();
	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG | WUNTRACED);
		assert_true(r >= 0);
		if (r == pid && WIFSTOPPED(st))
			return true;
		if (r == pid) {
			kid_gone(pid);
			*status = st;
			return false;
		}
		if (func_now_ms() - t0 > (long long)limit_ms * func_slow())
			fail_msg("child %d neither stopped nor ended in %d ms", (int)pid,
					limit_ms * func_slow());
		usleep(2000);
	}
}

/* the child's exit code (128 + signal), failing the test after limit_ms */
static int
wait_exit(pid_t pid, int limit_ms)
{
	long long t0 = func_now_ms();
	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		assert_true(r >= 0);
		if (r == pid) {
			kid_gone(pid);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		if (func_now_ms() - t0 > (long long)limit_ms * func_slow())
			fail_msg("child %d did not end in %d ms", (int)pid,
					limit_ms * func_slow());
		usleep(5000);
	}
}

static void
print_file(const char *what, const char *p)
{
	static char text[32768];
	int fd = open(p, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : 0;
	if (fd >= 0)
		close(fd);
	text[n > 0 ? n : 0] = '\0';
	/* not print_message: cmocka cuts its lines short */
	printf("---- %s:\n%s----\n", what, text);
	fflush(stdout);
}

/* run `pmrep ARGS...` (NULL-terminated) to its end (20 s x func_slow);
 * its output into out[] (also printed); its exit code */
static int
pmrep_run(char *out, size_t out_len, ...)
{
	char *argv[32];
	int n = 0;
	argv[n++] = pmrep_exe;
	va_list ap;
	va_start(ap, out_len);
	for (char *a; n < 30 && (a = va_arg(ap, char *)) != NULL;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	char res[300];
	snprintf(res, sizeof(res), "%s/tool.out", dir);
	pid_t pid = spawn(argv, NULL, res);
	int rc = wait_exit(pid, 20000);
	out[0] = '\0';
	int fd = open(res, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t got = read(fd, out, out_len - 1);
	close(fd);
	out[got > 0 ? got : 0] = '\0';
	printf("pmrep %s -> %d:\n%s", argv[1], rc, out);
	fflush(stdout);
	return rc;
}

/* `pmrep promote LOG --replica ADDR --set-size 2 --quorum 1` under the
 * shim, logging at FV2_PROMOTE_LOG_LEVEL into `out`, stopping itself at
 * the first line holding `stop_at` (the pid; it is stopped when
 * wait_stopped says so) */
static pid_t
promote_spawn_args(const char *log, char *const args[], const char *stop_at,
		const char *out)
{
	static char e_pre[4300], e_lvl[64], e_stop[256];
	snprintf(e_pre, sizeof(e_pre), "LD_PRELOAD=%s", shim);
	snprintf(e_lvl, sizeof(e_lvl), "PMREP_LOG_LEVEL=%s", FV2_PROMOTE_LOG_LEVEL);
	snprintf(e_stop, sizeof(e_stop), "PMREP_TEST_STOP_AT=%s", stop_at);
	char *envs[] = { e_pre, e_lvl, e_stop, NULL };
	char *argv[24] = { pmrep_exe, (char *)"promote", (char *)log,
		(char *)"--key-file", keyfile };
	unsigned n = 5;
	for (unsigned i = 0; args[i] != NULL && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return spawn(argv, envs, out);
}

static pid_t
promote_spawn(const char *log, const char *replica, const char *stop_at,
		const char *out)
{
	char *args[] = { (char *)"--replica", (char *)replica,
		(char *)"--set-size", (char *)"2", (char *)"--quorum",
		(char *)"1", NULL };
	return promote_spawn_args(log, args, stop_at, out);
}

/*
 * A writer in a child process (this binary, --fv2-writer), so that its
 * clock can be shifted: mirrors the plain file `file` (created if
 * missing; its record the default <file>.pmrep-state) to the replicas
 * at ports p0 and p1 under quorum 1, persist sequences on or off, writes
 * records first .. first+count-1 of `round`, each persist waited for
 * (exit 3 when one fails), then either closes cleanly (exit 0) or ends
 * without closing anything (a crash: exit 0 after the last persist).
 * With `sync`, it first waits for both replicas in sync, and again
 * before a clean close (both then marked consistent).
 */
static int
writer_main(int argc, char *argv[])
{
	if (argc != 12)
		return 2;
	const char *file = argv[2];
	char *ports[2] = { argv[3], argv[4] };
	bool psn = atoi(argv[5]) != 0;
	unsigned first = (unsigned)atoi(argv[6]), count = (unsigned)atoi(argv[7]),
		round = (unsigned)atoi(argv[8]);
	bool close_cleanly = strcmp(argv[9], "close") == 0;
	bool sync = strcmp(argv[10], "sync") == 0;
	snprintf(keyfile, sizeof(keyfile), "%s", argv[11]);
	uint32_t id;
	if (pmrep_key_read_file_ex(keyfile, 0, key, sizeof(key), &key_len, &id))
		return 2;
	struct pmrep_pmem *local = NULL;
	if (pmrep_pmem_open(file, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local))
		return 2;
	struct pmrep_mirror_cfg *c = mcfg_ports(ports, 2, 1, psn);
	struct pmrep_mirror *m = NULL;
	int ret = pmrep_mirror_new(local, c, &m);
	if (ret) {
		fprintf(stderr, "writer: mirror_new: %s\n", pmrep_err_to_str(ret));
		return 2;
	}
	if (sync)
		func_mirror_wait_in_sync(m, 2);
	uint8_t *base = pmrep_pmem_get_address(local);
	for (unsigned k = first; k < first + count; k++) {
		record(base, k, round);
		ret = pmrep_mirror_persist(m, (size_t)k * REC, REC, 5000 * func_slow());
		if (ret) {
			fprintf(stderr, "writer: persist %u: %s\n", k, pmrep_err_to_str(ret));
			_exit(3);
		}
	}
	uint64_t seq = 0;
	(void) pmrep_mirror_get_persist_seq(m, &seq);
	printf("writer: %u records acknowledged, last persist seq %llu\n", count,
			(unsigned long long)seq);
	fflush(stdout);
	if (!close_cleanly)
		_exit(0);	/* a crash: nothing closed */
	if (sync)
		func_mirror_wait_in_sync(m, 2);
	ret = pmrep_mirror_delete(&m);
	printf("writer: closed: %s\n", ret ? pmrep_err_to_str(ret) : "cleanly");
	pmrep_mirror_cfg_delete(&c);
	(void) pmrep_pmem_close(&local);
	return 0;
}

/* run a writer (above) to its end: clock shifted by shift_s seconds */
static void
writer_run(const char *file, bool psn, unsigned first, unsigned count,
		unsigned round, bool close_cleanly, bool sync, int shift_s,
		const char *name)
{
	static char e_pre[4300], e_shift[64];
	snprintf(e_pre, sizeof(e_pre), "LD_PRELOAD=%s", shim);
	snprintf(e_shift, sizeof(e_shift), "PMREP_TEST_CLOCK_SHIFT_S=%d", shift_s);
	char *envs[] = { e_pre, e_shift, NULL };
	char a_psn[4], a_first[16], a_count[16], a_round[16];
	snprintf(a_psn, sizeof(a_psn), "%d", psn ? 1 : 0);
	snprintf(a_first, sizeof(a_first), "%u", first);
	snprintf(a_count, sizeof(a_count), "%u", count);
	snprintf(a_round, sizeof(a_round), "%u", round);
	char *argv[] = { self, (char *)"--fv2-writer", (char *)file, tg[0].port,
		tg[1].port, a_psn, a_first, a_count, a_round,
		(char *)(close_cleanly ? "close" : "crash"),
		(char *)(sync ? "sync" : "nosync"), keyfile, NULL };
	char out[300];
	snprintf(out, sizeof(out), "%s/%s.out", dir, name);
	pid_t pid = spawn(argv, envs, out);
	int rc = wait_exit(pid, 20000);
	print_file(name, out);
	assert_int_equal(rc, 0);
}

/* ------------------------------------------------------------ checks */

/* soft checks: a test with several tools to ask asks them all, then
 * fails with the list of what went wrong */
static int nbad;
static char bad[4096];

static void
check(bool ok, const char *fmt, ...)
{
	if (ok)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	print_message("WRONG: %s\n", line);
	nbad++;
	size_t len = strlen(bad);
	snprintf(bad + len, sizeof(bad) - len, "\n  - %s", line);
}

static void
checks_done(void)
{
	if (nbad)
		fail_msg("%d wrong outcome(s):%s", nbad, bad);
}

/* after a promote that returned `rc`: refused (1), or promoted (0) with
 * every acknowledged record (want's 0 .. nrec-1) in the promoted copy;
 * and every copy left marked consistent at the new generation holds them
 * too */
static void
check_promote_outcome(int rc, const char *promoted, const uint8_t *want,
		unsigned nrec, const char *what)
{
	check(rc == 0 || rc == 1, "%s: pmrep promote exit %d (0 promoted, 1 refused)",
			what, rc);
	if (rc != 0)
		return;
	struct pmrep_replica_info pi = info_of(promoted);
	int d = replica_lacks(promoted, want, nrec);
	check(d < 0, "%s: promote succeeded, but the promoted copy %s lacks acknowledged record %d",
			what, promoted, d);
	for (unsigned i = 0; i < 2; i++) {
		if (strcmp(path[i], promoted) == 0)
			continue;
		struct pmrep_replica_info ri = info_of(path[i]);
		if (!(ri.flags & PMREP_REPLICA_F_CONSISTENT) ||
				ri.generation != pi.generation)
			continue;
		d = replica_lacks(path[i], want, nrec);
		check(d < 0, "%s: %s is marked consistent at generation %llu but lacks acknowledged record %d",
				what, path[i], (unsigned long long)ri.generation, d);
	}
}

/* ------------------------------------------------------------ case 1 */

static void
promote_decides_before_it_fences_an_old_primary_that_goes_on_writing(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();	/* the tools and writers over tcp */
	serve(0);
	serve(1);
	/* the old primary: this process, a pmrep log, quorum 1 of 2,
	 * persist sequences on */
	struct pmrep_pmem *local = NULL;
	assert_int_equal(pmrep_log_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(1, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	for (unsigned k = 0; k < NREC / 2; k++) {
		record(base, k, 1);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	/* both confirmed all of it: replica 1 is as current as replica 0 */
	func_mirror_wait_in_sync(m, 2);
	/* the operator, seeing the primary as dead (it is only cut off from
	 * the operator), stops replica 1's target and promotes its file */
	func_child_kill(&tg[1], SIGTERM);
	char out[300];
	snprintf(out, sizeof(out), "%s/promote.out", dir);
	pid_t pp = promote_spawn(path[1], at(0), FV2_PROMOTE_DECIDED_LINE, out);
	int st = 0;
	if (!wait_stopped(pp, 20000, &st)) {
		print_file("promote", out);
		fail_msg("pmrep promote ended (status %#x) before the line '%s' (FV2_PROMOTE_DECIDED_LINE): update the pattern",
				st, FV2_PROMOTE_DECIDED_LINE);
	}
	/* promote has decided and not fenced (today's order): the old
	 * primary completes persists under its quorum (replica 0 confirms).
	 * What counts is what it acknowledged: a promote that fenced before
	 * this line (the fix may move it) makes these fail, and then they
	 * are not acknowledged */
	unsigned nacked = NREC / 2;
	for (unsigned k = NREC / 2; k < NREC; k++) {
		record(base, k, 1);
		int ret = pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow());
		if (ret) {
			print_message("the old primary's persist of record %u: %s (fenced)\n",
					k, pmrep_err_to_str(ret));
			break;
		}
		nacked = k + 1;
	}
	uint8_t *acked = malloc(SIZE);
	assert_non_null(acked);
	memcpy(acked, base, SIZE);
	print_message("the old primary completed records %u .. %u while promote was stopped\n",
			NREC / 2, nacked - 1);
	assert_int_equal(kill(pp, SIGCONT), 0);
	int rc = wait_exit(pp, 20000);
	print_file("pmrep promote", out);
	print_message("pmrep promote -> %d\n", rc);
	/* the old primary is done (whatever the fence did to it) */
	(void) pmrep_mirror_delete(&m);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	func_child_kill(&tg[0], SIGTERM);
	check_promote_outcome(rc, path[1], acked, nacked,
			"promote during the old primary's persists");
	free(acked);
	checks_done();
}

/* ------------------------------------------------------------ case 2 */

/*
 * A hand-over at generation 1: writer A (persist sequences on) writes
 * records 0 .. 31 to both replicas and closes cleanly (both consistent);
 * replica 0's target stops; writer B, another primary id (its own file,
 * a copy of A's, and its own record) with its clock shifted by b_shift_s
 * and persist sequences b_psn, takes replica 1 at the same generation
 * (a hand-over: replica 1 was left consistent), writes records 32 .. 47
 * (round 2), acknowledged by replica 1 alone under
 * quorum 1, and dies. Replica 0 comes back. Right: promoting replica 0
 * (it lacks B's writes) is refused, or it ends holding them.
 */
static void
hand_over(int b_shift_s, bool b_psn)
{
	char a_file[256], b_file[256];
	snprintf(a_file, sizeof(a_file), "%s/a.dat", dir);
	snprintf(b_file, sizeof(b_file), "%s/b.dat", dir);
	serve(0);
	serve(1);
	/* A runs twice (two clean closes): its epochs are then above B's
	 * first one, which a reviewer showed ordered A's copy over B's */
	writer_run(a_file, true, 0, NREC / 4, 1, true, true, 0, "writer-A");
	writer_run(a_file, true, NREC / 4, NREC / 4, 1, true, true, 0, "writer-A");
	print_message("after A's clean close:\n");
	struct pmrep_replica_info i0 = info_of(path[0]), i1 = info_of(path[1]);
	assert_true(i0.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_true(i1.flags & PMREP_REPLICA_F_CONSISTENT);
	func_child_kill(&tg[0], SIGTERM);
	copy_file(a_file, b_file);
	writer_run(b_file, b_psn, NREC / 2, NREC / 4, 2, false, false, b_shift_s,
			"writer-B");
	/* what was acknowledged: A's records, then B's */
	uint8_t *want = calloc(1, SIZE);
	assert_non_null(want);
	for (unsigned k = 0; k < NREC / 2; k++)
		record(want, k, 1);
	for (unsigned k = NREC / 2; k < NREC / 2 + NREC / 4; k++)
		record(want, k, 2);
	print_message("after B's run (replica 0 stopped through it):\n");
	(void) info_of(path[0]);
	(void) info_of(path[1]);
	assert_true(replica_lacks(path[1], want, NREC) < 0);	/* B's are on 1 */
	serve(0);	/* replica 0 is back */
	char out[4096];
	(void) pmrep_run(out, sizeof(out), "compare", at(0), at(1), "--key-file",
			keyfile, "--json", (char *)NULL);
	/* promote replica 0, its target stopped, replica 1 reachable */
	func_child_kill(&tg[0], SIGTERM);
	int rc = pmrep_run(out, sizeof(out), "promote", path[0], "--replica", at(1),
			"--set-size", "2", "--quorum", "1", "--key-file", keyfile,
			"--json", (char *)NULL);
	func_child_kill(&tg[1], SIGTERM);
	check_promote_outcome(rc, path[0], want, NREC, "promote of the replica B never wrote");
	free(want);
	checks_done();
}

static void
a_hand_over_with_clocks_20_s_apart_keeps_the_acknowledged_writes(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();	/* the tools and writers over tcp */
	hand_over(-20, true);
}

static void
a_hand_over_by_a_writer_without_persist_seq_keeps_the_acknowledged_writes(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();	/* the tools and writers over tcp */
	hand_over(0, false);
}

/* ------------------------------------------------------------ case 3 */

/*
 * the failure of test_repl_promote: quorum 1 of 2, persist sequences on,
 * replica 1 frozen after the first half; nothing closes. Returns the
 * data as the old primary acknowledged it (both targets stopped).
 */
static uint8_t *
crash_with_replica_1_behind(void)
{
	serve(0);
	serve(1);
	struct pmrep_pmem *local = NULL;
	assert_int_equal(pmrep_log_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(1, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	for (unsigned k = 0; k < NREC; k++) {
		if (k == NREC / 2) {
			func_mirror_wait_in_sync(m, 2);
			func_child_freeze(&tg[1]);
		}
		record(base, k, 1);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	uint8_t *acked = malloc(SIZE);
	assert_non_null(acked);
	memcpy(acked, base, SIZE);
	func_child_kill(&tg[0], SIGKILL);
	func_child_kill(&tg[1], SIGKILL);
	(void) pmrep_mirror_delete(&m);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	print_message("after the old primary's crash:\n");
	(void) info_of(path[0]);
	(void) info_of(path[1]);
	return acked;
}

static void
a_promote_killed_after_one_fence_leaves_no_stale_copy_to_promote(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();	/* the tools and writers over tcp */
	uint8_t *acked = crash_with_replica_1_behind();

	/* promote the right one (replica 0), killed -9 once replica 1
	 * committed the new generation */
	serve(1);
	char out[300];
	snprintf(out, sizeof(out), "%s/promote1.out", dir);
	pid_t pp = promote_spawn(path[0], at(1), FV2_PROMOTE_FENCED_LINE, out);
	int st = 0;
	if (!wait_stopped(pp, 20000, &st)) {
		print_file("promote", out);
		fail_msg("pmrep promote ended (status %#x) before the line '%s' (FV2_PROMOTE_FENCED_LINE): update the pattern",
				st, FV2_PROMOTE_FENCED_LINE);
	}
	assert_int_equal(kill(pp, SIGKILL), 0);
	assert_int_equal(wait_exit(pp, 5000), 128 + SIGKILL);
	print_file("pmrep promote (killed -9)", out);
	func_child_kill(&tg[1], SIGTERM);
	print_message("after promote of replica 0 was killed:\n");
	(void) info_of(path[0]);
	struct pmrep_replica_info i1 = info_of(path[1]);
	/* the scenario: replica 1 committed, and holds only the first half */
	int lacks = replica_lacks(path[1], acked, NREC);
	if (i1.generation <= 1 || lacks != (int)(NREC / 2))
		fail_msg("not the scenario: replica 1 at generation %llu, lacking record %d (want > 1, %u): FV2_PROMOTE_FENCED_LINE '%s' must come after replica 1's COMMIT and before its resync",
				(unsigned long long)i1.generation, lacks, NREC / 2,
				FV2_PROMOTE_FENCED_LINE);

	/* then the stale replica is promoted, replica 0 reachable */
	serve(0);
	char txt[4096];
	int rc = pmrep_run(txt, sizeof(txt), "promote", path[1], "--replica", at(0),
			"--set-size", "2", "--quorum", "1", "--key-file", keyfile,
			"--json", (char *)NULL);
	func_child_kill(&tg[0], SIGTERM);
	check_promote_outcome(rc, path[1], acked, NREC,
			"promote of the stale replica after a killed promote");
	free(acked);
	checks_done();
}

/*
 * the catch-up's source dies mid-way: promote of the stale replica 1
 * stopped once it marked itself incomplete (before the copy), replica
 * 0's target killed, promote resumed: refused, replica 1 left marked
 * incomplete (it vouches for nothing: no tool takes it as a copy); with
 * replica 0 back, a re-run catches up and holds every acknowledged write
 */
static void
a_catch_up_whose_source_dies_is_refused_and_resumed_by_a_re_run(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	uint8_t *acked = crash_with_replica_1_behind();
	serve(0);
	char out[300];
	snprintf(out, sizeof(out), "%s/catchup1.out", dir);
	pid_t pp = promote_spawn(path[1], at(0), FV2_PROMOTE_CATCH_UP_LINE, out);
	int st = 0;
	if (!wait_stopped(pp, 20000, &st)) {
		print_file("promote", out);
		fail_msg("pmrep promote ended (status %#x) before the line '%s' (FV2_PROMOTE_CATCH_UP_LINE)",
				st, FV2_PROMOTE_CATCH_UP_LINE);
	}
	func_child_kill(&tg[0], SIGKILL);
	assert_int_equal(kill(pp, SIGCONT), 0);
	int rc = wait_exit(pp, 20000);
	print_file("pmrep promote (its source killed)", out);
	check(rc == 1 || rc == 2, "promote whose catch-up lost its source: exit %d (want a refusal or a failure)", rc);
	struct pmrep_replica_position pos;
	assert_int_equal(pmrep_replica_read_position(path[1], &pos), 0);
	check((pos.flags & PMREP_POSITION_F_INCOMPLETE) != 0,
			"replica 1 is not marked incomplete after a catch-up that did not finish");
	/* and pmrep status says so */
	char st_out[4096];
	int src = pmrep_run(st_out, sizeof(st_out), "status", path[1], "--json",
			(char *)NULL);
	check(src == 0 && strstr(st_out, "\"position\":{") != NULL &&
			strstr(st_out, "\"incomplete\":true") != NULL,
			"pmrep status --json does not show replica 1 incomplete (exit %d): %s",
			src, st_out);
	/* nothing takes it as a copy meanwhile: compare of the two files */
	char txt[4096];
	int crc = pmrep_run(txt, sizeof(txt), "compare", path[0], path[1],
			"--json", (char *)NULL);
	char name1[300];
	snprintf(name1, sizeof(name1), "\"most_current\":[\"%s\"]", path[0]);
	check(crc == 0 && strstr(txt, name1) != NULL,
			"compare: replica 0 alone is not the most current (exit %d)", crc);
	/* replica 0 back: the re-run catches up */
	serve(0);
	rc = pmrep_run(txt, sizeof(txt), "promote", path[1], "--replica", at(0),
			"--set-size", "2", "--quorum", "1", "--key-file", keyfile,
			"--json", (char *)NULL);
	func_child_kill(&tg[0], SIGTERM);
	check(rc == 0 && strstr(txt, "\"caught_up\":true") != NULL,
			"the re-run did not catch up (exit %d)", rc);
	check_promote_outcome(rc, path[1], acked, NREC,
			"promote re-run after a catch-up lost its source");
	assert_int_equal(pmrep_replica_read_position(path[1], &pos), 0);
	check((pos.flags & PMREP_POSITION_F_INCOMPLETE) == 0,
			"replica 1 still marked incomplete after its catch-up");
	src = pmrep_run(st_out, sizeof(st_out), "status", path[1], (char *)NULL);
	check(src == 0 && strstr(st_out, "position:    generation 1,") != NULL &&
			strstr(st_out, "INCOMPLETE") == NULL,
			"pmrep status does not show replica 1's adopted position (exit %d): %s",
			src, st_out);
	free(acked);
	checks_done();
}

/*
 * a membership change between promote's read-only pass and its fence (a
 * reviewer's reproduction): 3 replicas under quorum 2; replica 0's file
 * is promoted, stopped after its read-only pass; the writer lowers the
 * quorum to 1 (recorded on replicas 1 and 2), completes a persist on
 * replica 2 alone, then replicas 2 is gone and 1 back: the count to
 * fence is what the fenced header records (3 of a set of 3 under
 * quorum 1), so promote refuses (or, were it to promote, its copy would
 * hold that persist)
 */
static void
a_membership_changed_during_a_promote_is_fenced_as_recorded(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	serve(0);
	serve(1);
	serve(2);
	struct pmrep_pmem *local = NULL;
	assert_int_equal(pmrep_log_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	uint8_t *base = pmrep_pmem_get_address(local);
	char *ports[3] = { tg[0].port, tg[1].port, tg[2].port };
	struct pmrep_mirror_cfg *c = mcfg_ports(ports, 3, 2, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 3);
	for (unsigned k = 0; k < 8; k++) {
		record(base, k, 1);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	func_child_kill(&tg[0], SIGTERM);	/* its file is to be promoted */
	record(base, 8, 1);
	assert_int_equal(pmrep_mirror_persist(m, 8 * REC, REC, 5000 * func_slow()), 0);
	char out[300], p1[16], a1[64], a2[64];
	snprintf(out, sizeof(out), "%s/promote-members.out", dir);
	snprintf(p1, sizeof(p1), "%s", tg[1].port);
	snprintf(a1, sizeof(a1), "%s", at(1));
	snprintf(a2, sizeof(a2), "%s", at(2));
	char *args[] = { (char *)"--replica", a1, (char *)"--replica", a2,
		(char *)"--set-size", (char *)"3", (char *)"--quorum", (char *)"2",
		(char *)"--json", NULL };
	pid_t pp = promote_spawn_args(path[0], args, FV2_PROMOTE_DECIDED_LINE, out);
	int st = 0;
	if (!wait_stopped(pp, 20000, &st)) {
		print_file("promote", out);
		fail_msg("pmrep promote ended (status %#x) before the line '%s'",
				st, FV2_PROMOTE_DECIDED_LINE);
	}
	/* the change, recorded on replicas 1 and 2; then a persist that
	 * replica 2 alone confirms */
	assert_int_equal(pmrep_mirror_set_quorum(m, 1, 5000 * func_slow()), 0);
	func_child_kill(&tg[1], SIGKILL);
	record(base, 9, 1);
	assert_int_equal(pmrep_mirror_persist(m, 9 * REC, REC, 5000 * func_slow()), 0);
	uint8_t *acked = malloc(SIZE);
	assert_non_null(acked);
	memcpy(acked, base, SIZE);
	func_child_kill(&tg[2], SIGKILL);
	(void) pmrep_mirror_delete(&m);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	serve_on(1, p1);	/* replica 1 back, where promote will look */
	assert_int_equal(kill(pp, SIGCONT), 0);
	int rc = wait_exit(pp, 30000);
	print_file("pmrep promote", out);
	func_child_kill(&tg[1], SIGTERM);
	check_promote_outcome(rc, path[0], acked, 10,
			"promote across a membership change");
	free(acked);
	checks_done();
}

/* ------------------------------------------------------------ case 4 */

static void
t30_a_clean_close_does_not_vouch_for_writes_made_without_the_replica(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();	/* the tools and writers over tcp */
	serve(0);
	serve(1);
	/* run 1: quorum 1 of 2, no persist sequences (the default), both
	 * in sync, a clean close: both marked consistent */
	struct pmrep_pmem *local = NULL;
	assert_int_equal(pmrep_pmem_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(1, false);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	for (unsigned k = 0; k < NREC / 2; k++) {
		record(base, k, 1);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	func_mirror_wait_in_sync(m, 2);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	/* replica 1's target stops */
	func_child_kill(&tg[1], SIGTERM);
	print_message("after run 1's clean close:\n");
	assert_true(info_of(path[0]).flags & PMREP_REPLICA_F_CONSISTENT);
	assert_true(info_of(path[1]).flags & PMREP_REPLICA_F_CONSISTENT);
	/* run 2: same record, same generation, replica 1 down: persists
	 * completed by replica 0 alone (records 0 .. 7 rewritten, 32 .. 47
	 * new), then a clean close */
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	for (unsigned k = 0; k < NREC / 8; k++) {
		record(base, k, 2);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	for (unsigned k = NREC / 2; k < NREC / 2 + NREC / 4; k++) {
		record(base, k, 2);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	int dret = pmrep_mirror_delete(&m);
	print_message("run 2 closed: %s\n", dret ? pmrep_err_to_str(dret) : "cleanly");
	uint8_t *acked = malloc(SIZE);
	assert_non_null(acked);
	memcpy(acked, base, SIZE);
	print_message("after run 2 (replica 1 stopped through it):\n");
	(void) info_of(path[0]);
	(void) info_of(path[1]);
	assert_true(replica_lacks(path[0], acked, NREC) < 0);
	assert_int_equal(replica_lacks(path[1], acked, NREC), 0);
	/* replica 1 comes back */
	serve(1);
	char out[8192], name1[80];
	snprintf(name1, sizeof(name1), "\"%s\"", at(1));

	/* compare: ranks replica 1 below replica 0 */
	int rc = pmrep_run(out, sizeof(out), "compare", at(0), at(1), "--key-file",
			keyfile, "--json", (char *)NULL);
	const char *mc = strstr(out, "\"most_current\":[");
	const char *mc_end = mc ? strchr(mc, ']') : NULL;
	const char *in1 = mc ? strstr(mc, name1) : NULL;
	check(rc == 0 || rc == 1, "compare: exit %d", rc);
	check(mc != NULL && mc_end != NULL, "compare: no most_current in its JSON");
	check(mc != NULL && mc_end != NULL && (in1 == NULL || in1 > mc_end),
			"compare: the stale replica %s is named among the most current (exit %d)",
			at(1), rc);

	/* recover from replica 1: refused, or what it gives holds every
	 * acknowledged record */
	char rfile[256];
	snprintf(rfile, sizeof(rfile), "%s/recovered", dir);
	uint8_t *zero = calloc(1, SIZE);
	assert_non_null(zero);
	func_write_file(rfile, zero, SIZE);
	free(zero);
	rc = pmrep_run(out, sizeof(out), "recover", "--file", rfile, "--replica",
			at(1), "--key-file", keyfile, "--uuid", uuid_hex,
			"--generation", "1", (char *)NULL);
	check(rc == 0 || rc == 1, "recover: exit %d (0 recovered, 1 refused)", rc);
	if (rc == 0) {
		uint8_t *r = malloc(SIZE);
		assert_non_null(r);
		int fd = open(rfile, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, r, SIZE, 0), SIZE);
		close(fd);
		int d = first_diff(r, acked, NREC);
		check(d < 0, "recover from the stale replica succeeded; the recovered file lacks acknowledged record %d",
				d);
		free(r);
	}

	/* promote replica 1 (its target stopped, replica 0 reachable): a
	 * copy of both files first, for the attach below */
	char snap[2][300];
	for (unsigned i = 0; i < 2; i++) {
		snprintf(snap[i], sizeof(snap[i]), "%s.snap", path[i]);
		copy_file(path[i], snap[i]);
	}
	func_child_kill(&tg[1], SIGTERM);
	rc = pmrep_run(out, sizeof(out), "promote", path[1], "--replica", at(0),
			"--set-size", "2", "--quorum", "1", "--key-file", keyfile,
			"--json", (char *)NULL);
	func_child_kill(&tg[0], SIGTERM);
	check_promote_outcome(rc, path[1], acked, NREC, "promote of the stale replica");

	/* the files as they were; the primary's next run attaches both:
	 * replica 1 resynced, identical at the end */
	for (unsigned i = 0; i < 2; i++)
		copy_file(snap[i], path[i]);
	serve(0);
	serve(1);
	pmrep_mirror_cfg_delete(&c);
	c = mcfg(1, false);	/* the new ports */
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&tg[0], SIGTERM);
	func_child_kill(&tg[1], SIGTERM);
	int d = replica_lacks(path[1], acked, NREC);
	check(d < 0, "attach: replica 1 was called in sync but lacks acknowledged record %d", d);
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	free(acked);
	checks_done();
}

/* ------------------------------------------------------------- main */

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-fv2-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(lpath, sizeof(lpath), "%s/log", dir);
	snprintf(path[0], sizeof(path[0]), "%s/r0", dir);
	snprintf(path[1], sizeof(path[1]), "%s/r1", dir);
	snprintf(path[2], sizeof(path[2]), "%s/r2", dir);
	snprintf(keyfile, sizeof(keyfile), "%s/key", dir);
	assert_int_equal(pmrep_key_write_file(keyfile, 0, PMREP_KEY_GOOD), 0);
	uint32_t id;
	assert_int_equal(pmrep_key_read_file_ex(keyfile, 0, key, sizeof(key),
			&key_len, &id), 0);
	nbad = 0;
	bad[0] = '\0';
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	kids_kill_all();
	func_child_kill_all();
	return func_rm_rf(dir);
}

int
main(int argc, char *argv[])
{
	if (argc > 1 && strcmp(argv[1], "--fv2-writer") == 0) {
		if (getenv("PMREP_LOG_LEVEL") == NULL)
			pmrep_log_set_threshold(PMREP_LOG_NOTICE);
		return writer_main(argc, argv);
	}
	func_child_main(argc, argv);
	func_build_root(bindir, sizeof(bindir), argv[0]);
	snprintf(pmrep_exe, sizeof(pmrep_exe), "%s/tools/pmrep", bindir);
	snprintf(shim, sizeof(shim), "%s/tests/libpmrep_test_fv2shim.so", bindir);
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = '\0';
	signal(SIGPIPE, SIG_IGN);
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(promote_decides_before_it_fences_an_old_primary_that_goes_on_writing, setup, teardown),
		cmocka_unit_test_setup_teardown(a_hand_over_with_clocks_20_s_apart_keeps_the_acknowledged_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(a_hand_over_by_a_writer_without_persist_seq_keeps_the_acknowledged_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(a_membership_changed_during_a_promote_is_fenced_as_recorded,
				setup, teardown),
		cmocka_unit_test_setup_teardown(a_catch_up_whose_source_dies_is_refused_and_resumed_by_a_re_run,
				setup, teardown),
		cmocka_unit_test_setup_teardown(a_promote_killed_after_one_fence_leaves_no_stale_copy_to_promote, setup, teardown),
		cmocka_unit_test_setup_teardown(t30_a_clean_close_does_not_vouch_for_writes_made_without_the_replica, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
