/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_cli.c -- the pmrep command line and the kv-mirror example, run
 * as child processes against pmrep-target children on 127.0.0.1 (tcp
 * only; every child is killed after a bound, so a hang fails the test):
 *  - pmrep verify: identical (0), one flipped byte (1, the first differing
 *    range printed; "1 range", not "1 ranges"), a replica file that is none (1), a missing file (2,
 *    one line) and usage errors (2); pmrep status, of a fresh replica too;
 *    --help of each command, --version; every tool's --help;
 *  - pmrep recover: byte-exact data back from a replica after the local
 *    file was wiped; a replica of an older generation is refused (1) and
 *    the local file and the replica's header are left as they were;
 *  - pmrep_replica_query / pmrep status ADDR:PORT while a mirror is
 *    attached and persisting: read-only (header byte-identical), the
 *    mirror's session untouched, its claim shown; consistent after its
 *    clean delete; a wrong key: PMREP_E_AUTH, exit 2 with one line;
 *  - kv-mirror with two targets, one killed mid-session: quorum=1 keeps
 *    acknowledging puts, "all" fails the put (not acknowledged);
 *  - examples/minimal mirrors its records, and pmrep verify finds the
 *    replica identical;
 *  - log-mirror's --no-tls and --key-id: against a plaintext target the
 *    default (TLS) fails with PMREP_E_TLS, --no-tls appends; by default it
 *    names the key file's id (refused by a target holding that key under
 *    id 0: PMREP_E_AUTH), --key-id 0 names none and attaches;
 *  - pmrep status --json / compare --json: one line of JSON (read by a
 *    small parser here) whose every field is the header's, names with
 *    quotes, backslashes and control characters byte-exact; verify
 *    through mmap (the device DAX path, PMREP_VERIFY_MMAP=1 on files).
 *  - pmrep-target as a daemon: --version; SIGUSR1 logs its counters and it
 *    serves on; SIGHUP (twice, once with the key file gone) keeps an
 *    attached mirror's session; a failed start (port in use) removes the
 *    file --create made, never one that existed; the errors name the real
 *    cause (a directory, an address not of this host, a stray argument).
 * Past ~800 lines: one program for every tool's CLI; its cases share targets.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"

#define DATA_SIZE (1u << 20)
#define CHILD_LIMIT_MS 20000

static char bindir[PATH_MAX - 64];
static char dir[64];
static char keyfile[128];
static const uint8_t key[] = "cli-test-key-0123456789abcdef";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xc1, 0x1e, 2, 3, 4, 5, 6, 7,
	8, 9, 10, 11, 12, 13, 14, 15 };
static const char uuid_hex[] = "c11e02030405060708090a0b0c0d0e0f";

struct target { pid_t pid; char port[8]; char path[160]; };
static struct target tg[2];
/* the key file targets are started with (setup: the raw `keyfile`) */
static const char *tg_keyfile;

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-cli-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(keyfile, sizeof(keyfile), "%s/key", dir);
	func_write_file(keyfile, key, sizeof(key) - 1);
	tg_keyfile = keyfile;
	memset(tg, 0, sizeof(tg));
	return 0;
}

static void
target_stop(struct target *t, int sig)
{
	if (t->pid > 0) {
		kill(t->pid, sig);
		waitpid(t->pid, NULL, 0);
		t->pid = 0;
	}
}

static int
teardown(void **state)
{
	(void)state;
	target_stop(&tg[0], SIGKILL);
	target_stop(&tg[1], SIGKILL);
	assert_int_equal(func_rm_rf(dir), 0);
	return 0;
}

static void
program(const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", bindir, rel);
	if (access(buf, X_OK) != 0)
		skip();
}

/* start pmrep-target on a new replica `name` (DATA_SIZE or `size`
 * bytes), port 0; wait for its "listening on" line */
static void
target_start_opt(struct target *t, const char *name, const char *size,
		const char *opt)
{
	char exe[PATH_MAX], log[200];
	program("tools/pmrep-target", exe, sizeof(exe));
	snprintf(t->path, sizeof(t->path), "%s/%s", dir, name);
	snprintf(log, sizeof(log), "%s/%s.log", dir, name);
	int p[2];
	assert_int_equal(pipe(p), 0);
	t->pid = fork();
	assert_true(t->pid >= 0);
	if (t->pid == 0) {
		dup2(p[1], 1);
		int l = open(log, O_CREAT | O_WRONLY | O_APPEND, 0600);
		dup2(l, 2);
		close(p[0]);
		execl(exe, exe, "--path", t->path, "--size", size, "--create",
				"--address", "127.0.0.1", "--port", "0",
				"--key-file", tg_keyfile, opt, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[256] = "";
	size_t n = 0;
	long long t0 = func_now_ms();
	while (strchr(buf, '\n') == NULL) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		assert_true(func_now_ms() - t0 < 10000 * func_slow());
		if (poll(&pf, 1, 100) <= 0)
			continue;
		ssize_t r = read(p[0], buf + n, sizeof(buf) - 1 - n);
		assert_true(r > 0);
		n += (size_t)r;
		buf[n] = '\0';
	}
	close(p[0]);
	/* "listening on 127.0.0.1:PORT (direct mode)" */
	char *at = strstr(buf, "127.0.0.1:");
	assert_non_null(at);
	assert_int_equal(sscanf(at, "127.0.0.1:%7[0-9]", t->port), 1);
}

static void
target_start(struct target *t, const char *name, const char *size)
{
	target_start_opt(t, name, size, NULL);
}

/* run argv with stdout (with `err`: stdout and stderr) into `out` (may be
 * NULL); its exit status, -1 if it had to be killed */
static int
run_out(char *const argv[], char *out, size_t out_len, bool err)
{
	char outpath[128];
	snprintf(outpath, sizeof(outpath), "%s/run.out", dir);
	long long t0 = func_now_ms();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(outpath, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		int n = open("/dev/null", O_WRONLY);
		dup2(o, 1);
		dup2(err ? o : n, 2);
		if (err)	/* the default log threshold, whatever the caller's */
			unsetenv("PMREP_LOG_LEVEL");
		execv(argv[0], argv);
		_exit(127);
	}
	int st = 0;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		assert_true(r >= 0);
		if (r == pid)
			break;
		if (func_now_ms() - t0 > CHILD_LIMIT_MS * func_slow()) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(10000);
	}
	if (out) {
		int fd = open(outpath, O_RDONLY);
		assert_true(fd >= 0);
		ssize_t n = read(fd, out, out_len - 1);
		out[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int
run(char *const argv[], char *out, size_t out_len)
{
	return run_out(argv, out, out_len, false);
}

static uint8_t
pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 12) + 1);
}

/* a source file of DATA_SIZE pattern bytes mirrored to tg[0] at
 * `generation` and closed cleanly (the replica is marked consistent) */
static void
make_replica(const char *src, uint64_t generation)
{
	struct pmrep_pmem *pmem = NULL;
	assert_int_equal(pmrep_pmem_open(src, PMREP_PMEM_CREATE, DATA_SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &pmem), 0);
	uint8_t *p = pmrep_pmem_get_address(pmem);
	for (size_t i = 0; i < DATA_SIZE; i++)
		p[i] = pattern(i);
	struct pmrep_mirror_cfg *cfg = NULL;
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", tg[0].port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(cfg, key, sizeof(key) - 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(cfg, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(cfg, generation), 0);
	assert_int_equal(pmrep_mirror_new(pmem, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, DATA_SIZE, 5000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(tg[0].path, &info), 0);
	assert_int_equal(info.generation, generation);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
}

static void
wipe(const char *path)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	static uint8_t zero[DATA_SIZE];
	assert_int_equal(pwrite(fd, zero, DATA_SIZE, 0), DATA_SIZE);
	close(fd);
}

/* 0: the file holds the pattern; else 1 + the first differing offset */
static size_t
check_pattern(const char *path)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	static uint8_t buf[DATA_SIZE];
	assert_int_equal(pread(fd, buf, DATA_SIZE, 0), DATA_SIZE);
	close(fd);
	for (size_t i = 0; i < DATA_SIZE; i++)
		if (buf[i] != pattern(i))
			return i + 1;
	return 0;
}

static void
verify_identical_differing_missing(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], src[128], missing[128], out[16384];
	program("tools/pmrep", exe, sizeof(exe));
	target_start(&tg[0], "replica", "1M");
	snprintf(src, sizeof(src), "%s/source", dir);
	snprintf(missing, sizeof(missing), "%s/nothing", dir);

	/* a fresh replica: unclaimed, and status says so on every line */
	char *st_fresh[] = { exe, "status", tg[0].path, NULL };
	assert_int_equal(run(st_fresh, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "(unclaimed: no mirror attached yet)"));
	assert_non_null(strstr(out, "generation:  0\n"));
	assert_non_null(strstr(out, "consistent:  no (unclaimed: it holds no mirror's data yet)\n"));

	make_replica(src, 1);

	char *identical[] = { exe, "verify", src, tg[0].path, "--range", "64K", NULL };
	assert_int_equal(run(identical, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "IDENTICAL: 16 ranges of 65536 bytes"));
	/* one range: singular */
	char *one[] = { exe, "verify", src, tg[0].path, "--range", "1M", NULL };
	assert_int_equal(run(one, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "IDENTICAL: 1 range of 1048576 bytes, "));

	/* one byte flipped in range 3 (bytes 196608..262143) */
	int fd = open(src, O_RDWR);
	assert_true(fd >= 0);
	uint8_t b = (uint8_t)~pattern(200000);
	assert_int_equal(pwrite(fd, &b, 1, 200000), 1);
	close(fd);
	assert_int_equal(run(identical, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "first differing range: 3 (bytes 196608..262143)"));
	assert_non_null(strstr(out, "DIFFERENT: 1 of 16 ranges of 65536 bytes differs\n"));
	assert_int_equal(run(one, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "DIFFERENT: 1 of 1 range of 1048576 bytes differs\n"));

	char *miss1[] = { exe, "verify", missing, tg[0].path, NULL };
	char *miss2[] = { exe, "verify", src, missing, NULL };
	/* a missing file: one line naming the OS error and the path (no
	 * library log line as well); -v adds the library's line */
	char expect[200];
	snprintf(expect, sizeof(expect),
			"pmrep verify: No such file or directory: %s\n", missing);
	assert_int_equal(run_out(miss1, out, sizeof(out), true), 2);
	assert_string_equal(out, expect);
	assert_int_equal(run_out(miss2, out, sizeof(out), true), 2);
	assert_string_equal(out, expect);
	char *miss_st[] = { exe, "status", missing, NULL };
	assert_int_equal(run_out(miss_st, out, sizeof(out), true), 2);
	snprintf(expect, sizeof(expect),
			"pmrep status: No such file or directory: %s\n", missing);
	assert_string_equal(out, expect);
	char *miss_v[] = { exe, "-v", "status", missing, NULL };
	assert_int_equal(run_out(miss_v, out, sizeof(out), true), 2);
	assert_non_null(strstr(out, "pmrep ERROR"));
	assert_non_null(strstr(out, expect));
	/* a REPLICA that is no replica: a negative answer (1), as status */
	char *not_rep[] = { exe, "verify", src, src, NULL };
	assert_int_equal(run(not_rep, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "not a valid replica"));
	char *use1[] = { exe, "verify", src, NULL };
	char *use2[] = { exe, "verify", src, tg[0].path, "--range", "0", NULL };
	char *use3[] = { exe, "frobnicate", NULL };
	char *use4[] = { exe, NULL };
	assert_int_equal(run(use1, NULL, 0), 2);
	assert_int_equal(run(use2, NULL, 0), 2);
	assert_int_equal(run(use3, NULL, 0), 2);
	assert_int_equal(run(use4, NULL, 0), 2);
	char *help[] = { exe, "--help", NULL };
	assert_int_equal(run(help, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "exit codes"));
	/* a command's own help: that command only */
	char *help_v[] = { exe, "verify", "--help", NULL };
	assert_int_equal(run(help_v, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "pmrep verify SOURCE REPLICA"));
	assert_null(strstr(out, "pmrep recover"));
	char *help_r[] = { exe, "help", "recover", NULL };
	assert_int_equal(run(help_r, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "pmrep recover --file LOCAL"));
	assert_null(strstr(out, "pmrep verify"));
	char *version[] = { exe, "--version", NULL };
	assert_int_equal(run(version, out, sizeof(out)), 0);
	unsigned vmaj, vmin, vpatch;
	assert_int_equal(sscanf(out, "pmrep %u.%u.%u\n", &vmaj, &vmin, &vpatch), 3);

	/* status: the replica's header; a file that is no replica: 1 */
	char *st[] = { exe, "status", tg[0].path, NULL };
	assert_int_equal(run(st, out, sizeof(out)), 0);
	assert_non_null(strstr(out, uuid_hex));
	assert_non_null(strstr(out, "generation:  1\n"));
	assert_non_null(strstr(out, "consistent:  yes"));
	char *st_bad[] = { exe, "status", src, NULL };
	assert_int_equal(run(st_bad, NULL, 0), 1);
	char *st_net[] = { exe, "status", "--replica", "127.0.0.1:7204", NULL };
	assert_int_equal(run(st_net, NULL, 0), 2);
}

/* every tool's --help: exit 0, on stdout, and the options and facts a
 * user needs (units, the port line, the replica's header size) */
/* pmrep log-create: a new log, and a plain log converted (its bytes in the
 * data area); verify compares a log source by its data area */
static void
log_create_and_verify_a_log_source(void **state)
{
	(void)state;
	char exe[PATH_MAX], plain[128], log[128], log2[128], out[4096];
	program("tools/pmrep", exe, sizeof(exe));
	snprintf(plain, sizeof(plain), "%s/plain", dir);
	snprintf(log, sizeof(log), "%s/a.log", dir);
	snprintf(log2, sizeof(log2), "%s/b.log", dir);
	int fd = open(plain, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	static uint8_t buf[256 << 10];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(i);
	assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
	char *conv[] = { exe, "log-create", log, "--from", plain, NULL };
	assert_int_equal(run(conv, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "a pmrep log of 262144 data bytes, converted from"));
	/* the data area holds the plain file's bytes */
	struct pmrep_pmem *p = NULL;
	assert_int_equal(pmrep_log_open(log, 0, sizeof(buf),
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_memory_equal(pmrep_pmem_get_address(p), buf, sizeof(buf));
	assert_int_equal(pmrep_pmem_close(&p), 0);
	/* verify: the log against itself as a replica, and the plain file
	 * against the log: both by the data area */
	char *v1[] = { exe, "verify", log, log, NULL };
	assert_int_equal(run(v1, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "IDENTICAL: 1 range of 1048576 bytes, 262144 bytes"));
	char *v2[] = { exe, "verify", plain, log, NULL };
	assert_int_equal(run(v2, out, sizeof(out)), 0);
	/* refused: it exists; no size; a size that is not the plain's */
	assert_int_equal(run(conv, out, sizeof(out)), 2);
	char *nosize[] = { exe, "log-create", log2, NULL };
	assert_int_equal(run(nosize, out, sizeof(out)), 2);
	char *badsize[] = { exe, "log-create", log2, "1M", "--from", plain, NULL };
	assert_int_equal(run(badsize, out, sizeof(out)), 2);
	assert_int_not_equal(access(log2, F_OK), 0);	/* nothing left */
	/* a new empty one of 2M: DIFFERENT sizes against the first */
	char *fresh[] = { exe, "log-create", log2, "2M", NULL };
	assert_int_equal(run(fresh, out, sizeof(out)), 0);
	char *v3[] = { exe, "verify", log2, log, NULL };
	assert_int_equal(run(v3, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "DIFFERENT: source has 2097152 data bytes, replica data area 262144"));
}

static void
tools_help(void **state)
{
	(void)state;
	char exe[PATH_MAX], out[8192];
	program("tools/pmrep-target", exe, sizeof(exe));
	char *tgt[] = { exe, "--help", NULL };
	assert_int_equal(run(tgt, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "listening on ADDR:PORT"));
	assert_non_null(strstr(out, "SIGINT or SIGTERM"));
	assert_non_null(strstr(out, "data size plus 4096 bytes"));
	assert_non_null(strstr(out, "PMREP_PROVIDER=tcp|verbs"));
	assert_non_null(strstr(out, "PMREP_LOG_LEVEL"));
	assert_non_null(strstr(out, "exit codes: 0"));
	assert_non_null(strstr(out, "--key-dir DIR"));
	assert_non_null(strstr(out, "SIGHUP scans DIR"));

	program("examples/log-mirror", exe, sizeof(exe));
	char *lm[] = { exe, "--help", NULL };
	assert_int_equal(run(lm, out, sizeof(out)), 0);
	static const char *const lm_opts[] = { "--file PATH", "--size BYTES",
		"--replica ADDR:PORT", "--key-file FILE", "--key-id N", "--no-tls",
		"--insecure-key-file", "--append N",
		"--payload BYTES", "--delay-ms MS", "--wait-s S", "--verify",
		"exit codes" };
	for (size_t i = 0; i < sizeof(lm_opts) / sizeof(lm_opts[0]); i++)
		if (strstr(out, lm_opts[i]) == NULL)
			fail_msg("log-mirror --help lacks '%s'", lm_opts[i]);
	char *lm_bad[] = { exe, "--bogus", NULL };
	assert_int_equal(run(lm_bad, NULL, 0), 2);

	program("examples/kv-mirror", exe, sizeof(exe));
	char *kv[] = { exe, "--help", NULL };
	assert_int_equal(run(kv, out, sizeof(out)), 0);
	static const char *const kv_opts[] = { "--file PATH", "--entries N",
		"--replica ADDR:PORT", "--key-file FILE", "--key-id N", "--no-tls",
		"--insecure-key-file", "--policy all|quorum=K",
		"--timeout MS", "--wait-s S", "exit codes" };
	for (size_t i = 0; i < sizeof(kv_opts) / sizeof(kv_opts[0]); i++)
		if (strstr(out, kv_opts[i]) == NULL)
			fail_msg("kv-mirror --help lacks '%s'", kv_opts[i]);
	char *kv_bad[] = { exe, "--bogus", NULL };
	assert_int_equal(run(kv_bad, NULL, 0), 2);
}

static void
recover_brings_back_byte_exact_data(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], src[128], rep[64], out[4096];
	program("tools/pmrep", exe, sizeof(exe));
	target_start(&tg[0], "replica", "1M");
	snprintf(src, sizeof(src), "%s/source", dir);
	make_replica(src, 1);
	wipe(src);
	assert_int_equal(check_pattern(src), 1);

	snprintf(rep, sizeof(rep), "127.0.0.1:%s", tg[0].port);
	char *rec[] = { exe, "recover", "--file", src, "--replica", rep,
		"--key-file", keyfile, "--uuid", (char *)uuid_hex,
		"--generation", "1", NULL };
	assert_int_equal(run(rec, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "recovered"));
	assert_int_equal(check_pattern(src), 0);
	/* the replica is as it was: consistent, generation 1, same data */
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(tg[0].path, &info), 0);
	assert_int_equal(info.generation, 1);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	char *ver[] = { exe, "verify", src, tg[0].path, NULL };
	assert_int_equal(run(ver, NULL, 0), 0);

	/* usage errors: no generation, bad uuid, bad replica address */
	char *u1[] = { exe, "recover", "--file", src, "--replica", rep,
		"--key-file", keyfile, "--uuid", (char *)uuid_hex, NULL };
	char *u2[] = { exe, "recover", "--file", src, "--replica", rep,
		"--key-file", keyfile, "--uuid", "xyz", "--generation", "1", NULL };
	char *u3[] = { exe, "recover", "--file", src, "--replica", "nocolon",
		"--key-file", keyfile, "--uuid", (char *)uuid_hex,
		"--generation", "1", NULL };
	assert_int_equal(run(u1, NULL, 0), 2);
	assert_int_equal(run(u2, NULL, 0), 2);
	assert_int_equal(run(u3, NULL, 0), 2);
	/* another replica set: refused */
	char *other[] = { exe, "recover", "--file", src, "--replica", rep,
		"--key-file", keyfile, "--uuid", "0123456789abcdef0123456789abcdef",
		"--generation", "1", NULL };
	assert_int_equal(run(other, NULL, 0), 1);

	/* the library's argument checks */
	struct pmrep_pmem *pmem = NULL;
	assert_int_equal(pmrep_pmem_open(src, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&pmem), 0);
	static const uint8_t nil[PMREP_UUID_SIZE];
	assert_int_equal(pmrep_mirror_recover(pmem, "127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, nil, 1, 0, 1000, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_recover(pmem, "127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, uuid, 0, 0, 1000, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_recover(pmem, "127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, uuid, 1, 0x80, 1000, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_recover(pmem, "127.0.0.1", "0", key,
			sizeof(key) - 1, uuid, 1, 0, 1000, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
}

/* the replica's header block (its first 4 KiB) as the file holds it now */
static void
read_hdr_block(const char *path, uint8_t *blk)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, blk, PMREP_REPLICA_DATA_OFFSET, 0),
			PMREP_REPLICA_DATA_OFFSET);
	close(fd);
}

static void
recover_refuses_an_older_generation(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], src[128], rep[64];
	static uint8_t h0[PMREP_REPLICA_DATA_OFFSET], h1[PMREP_REPLICA_DATA_OFFSET];
	program("tools/pmrep", exe, sizeof(exe));
	target_start(&tg[0], "replica", "1M");
	snprintf(src, sizeof(src), "%s/source", dir);
	make_replica(src, 1);	/* the replica holds generation 1 ... */
	wipe(src);		/* ... the source went on to 2 and was lost */
	read_hdr_block(tg[0].path, h0);

	snprintf(rep, sizeof(rep), "127.0.0.1:%s", tg[0].port);
	/* generation 2, one above the replica's: refused; recover asks
	 * read-only (QUERY), so the replica's header is byte-identical */
	char *rec2[] = { exe, "recover", "--file", src, "--replica", rep,
		"--key-file", keyfile, "--uuid", (char *)uuid_hex,
		"--generation", "2", NULL };
	assert_int_equal(run(rec2, NULL, 0), 1);
	assert_int_equal(check_pattern(src), 1);	/* nothing copied */
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(tg[0].path, &info), 0);
	assert_int_equal(info.generation, 1);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);

	/* generation 5, even with --allow-inconsistent: refused, nothing
	 * written */
	char *rec5[] = { exe, "recover", "--file", src, "--replica", rep,
		"--key-file", keyfile, "--uuid", (char *)uuid_hex,
		"--generation", "5", "--allow-inconsistent", NULL };
	assert_int_equal(run(rec5, NULL, 0), 1);
	assert_int_equal(check_pattern(src), 1);
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));

	/* the library call says why: PMREP_E_STATE, with the replica's
	 * header in *info */
	struct pmrep_pmem *pmem = NULL;
	assert_int_equal(pmrep_pmem_open(src, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&pmem), 0);
	memset(&info, 0, sizeof(info));
	assert_int_equal(pmrep_mirror_recover(pmem, "127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, uuid, 9, PMREP_RECOVER_ALLOW_INCONSISTENT,
			5000 * func_slow(), &info), PMREP_E_STATE);
	assert_int_equal(info.generation, 1);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_memory_equal(info.uuid, uuid, PMREP_UUID_SIZE);
	struct pmrep_replica_info fi;
	assert_int_equal(pmrep_replica_read_info(tg[0].path, &fi), 0);
	assert_memory_equal(info.replica_id, fi.replica_id, PMREP_UUID_SIZE);
	assert_int_equal(info.owner, fi.owner);
	assert_int_equal(info.seq, fi.seq);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
	assert_int_equal(check_pattern(src), 1);
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
}

static void
recover_off_by_one_leaves_the_replica_usable(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], src[128], rep[64];
	static uint8_t h0[PMREP_REPLICA_DATA_OFFSET], h1[PMREP_REPLICA_DATA_OFFSET];
	program("tools/pmrep", exe, sizeof(exe));
	target_start(&tg[0], "replica", "1M");
	snprintf(src, sizeof(src), "%s/source", dir);
	make_replica(src, 3);
	wipe(src);
	read_hdr_block(tg[0].path, h0);
	snprintf(rep, sizeof(rep), "127.0.0.1:%s", tg[0].port);
	char *wrong[] = { exe, "recover", "--file", src, "--replica", rep,
		"--key-file", keyfile, "--uuid", (char *)uuid_hex,
		"--generation", "4", NULL };
	assert_int_equal(run(wrong, NULL, 0), 1);
	/* a newer replica (3 > 2) is refused by the target */
	char *newer[] = { exe, "recover", "--file", src, "--replica", rep,
		"--key-file", keyfile, "--uuid", (char *)uuid_hex,
		"--generation", "2", NULL };
	assert_int_equal(run(newer, NULL, 0), 1);
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(tg[0].path, &info), 0);
	assert_int_equal(info.generation, 3);
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	char *right[] = { exe, "recover", "--file", src, "--replica", rep,
		"--key-file", keyfile, "--uuid", (char *)uuid_hex,
		"--generation", "3", NULL };
	assert_int_equal(run(right, NULL, 0), 0);
	assert_int_equal(check_pattern(src), 0);
	/* a successful recover leaves the header as it was, too */
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
}

/* the number of lines in `s` */
static int
count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* every field of two replica infos is equal (not the padding) */
static void
assert_info_equal(const struct pmrep_replica_info *a,
		const struct pmrep_replica_info *b)
{
	assert_memory_equal(a->uuid, b->uuid, PMREP_UUID_SIZE);
	assert_int_equal(a->data_offset, b->data_offset);
	assert_int_equal(a->data_size, b->data_size);
	assert_int_equal(a->generation, b->generation);
	assert_int_equal(a->flags, b->flags);
	assert_memory_equal(a->replica_id, b->replica_id, PMREP_UUID_SIZE);
	assert_int_equal(a->owner, b->owner);
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->last_persist_seq, b->last_persist_seq);
}

/* pmrep_replica_query of tg[0] with the test key: 0 and *info */
static void
query0(struct pmrep_replica_info *info)
{
	memset(info, 0xa5, sizeof(*info));
	assert_int_equal(pmrep_replica_query("127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, 5000 * func_slow(), info), 0);
}

/*
 * the issue "status, recover and failover read a replica's generation and
 * sequence without claiming it": pmrep_replica_query and pmrep status
 * ADDR:PORT ask a target while a mirror is attached and persisting. The
 * mirror's session is not taken over (every persist after a query still
 * succeeds, the replica stays in sync without a resync), the query shows
 * the mirror's generation and owner and "not consistent", and after the
 * mirror's clean delete "consistent"; the replica's header block is
 * byte-identical before and after each query; a wrong key is
 * PMREP_E_AUTH, and pmrep status exits 2 with one error line.
 */
static void
status_queries_a_target_read_only_while_a_mirror_persists(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], src[128], rep[64], out[4096], badkey[128];
	static uint8_t h0[PMREP_REPLICA_DATA_OFFSET], h1[PMREP_REPLICA_DATA_OFFSET];
	program("tools/pmrep", exe, sizeof(exe));
	target_start(&tg[0], "replica", "1M");
	snprintf(src, sizeof(src), "%s/source", dir);
	snprintf(rep, sizeof(rep), "127.0.0.1:%s", tg[0].port);

	/* a fresh replica: unclaimed, header as the file says */
	struct pmrep_replica_info q, f;
	read_hdr_block(tg[0].path, h0);
	query0(&q);
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	assert_int_equal(pmrep_replica_read_info(tg[0].path, &f), 0);
	assert_info_equal(&q, &f);
	static const uint8_t nil[PMREP_UUID_SIZE];
	assert_memory_equal(q.uuid, nil, PMREP_UUID_SIZE);
	assert_int_equal(q.data_size, DATA_SIZE);
	assert_int_equal(q.data_offset, PMREP_REPLICA_DATA_OFFSET);

	/* a mirror at generation 7, attached and persisting */
	struct pmrep_pmem *pmem = NULL;
	assert_int_equal(pmrep_pmem_open(src, PMREP_PMEM_CREATE, DATA_SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &pmem), 0);
	uint8_t *p = pmrep_pmem_get_address(pmem);
	for (size_t i = 0; i < DATA_SIZE; i++)
		p[i] = pattern(i);
	struct pmrep_mirror_cfg *cfg = NULL;
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", tg[0].port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(cfg, key, sizeof(key) - 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(cfg, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(cfg, 7), 0);
	assert_int_equal(pmrep_mirror_new(pmem, cfg, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, DATA_SIZE, 5000 * func_slow()), 0);
	struct pmrep_replica_status rs0, rs;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &rs0), 0);
	assert_int_equal(rs0.state, PMREP_REPLICA_IN_SYNC);

	assert_int_equal(pmrep_replica_read_info(tg[0].path, &f), 0);
	assert_int_not_equal(f.owner, 0);
	for (int round = 0; round < 5; round++) {
		read_hdr_block(tg[0].path, h0);
		query0(&q);
		read_hdr_block(tg[0].path, h1);
		assert_memory_equal(h0, h1, sizeof(h0));
		/* the mirror's claim: its set, generation and owner, not
		 * consistent while it is attached */
		assert_memory_equal(q.uuid, uuid, PMREP_UUID_SIZE);
		assert_int_equal(q.generation, 7);
		assert_int_equal(q.owner, f.owner);
		assert_false(q.flags & PMREP_REPLICA_F_CONSISTENT);
		assert_memory_equal(q.replica_id, f.replica_id, PMREP_UUID_SIZE);
		assert_int_equal(q.seq, f.seq);
		assert_int_equal(q.data_size, DATA_SIZE);
		assert_info_equal(&q, &f);

		/* the mirror's session was not taken over: it persists on,
		 * in sync, without a reconnect or a resync */
		size_t off = (size_t)round * 4096;
		p[off] = (uint8_t)~p[off];
		assert_int_equal(pmrep_mirror_persist(m, off, 1, 5000 * func_slow()), 0);
		assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &rs), 0);
		assert_int_equal(rs.state, PMREP_REPLICA_IN_SYNC);
		assert_int_equal(rs.last_error, 0);
		assert_int_equal(rs.resyncs, rs0.resyncs);
	}

	/* pmrep status ADDR:PORT: the local command's fields, said to be a
	 * network query; the header unchanged; the mirror goes on */
	char *st_net[] = { exe, "status", rep, "--key-file", keyfile,
		"--timeout", "5000", NULL };
	read_hdr_block(tg[0].path, h0);
	assert_int_equal(run(st_net, out, sizeof(out)), 0);
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	char want[200];
	snprintf(want, sizeof(want), "replica:     %s (queried over the network, read-only)\n", rep);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, uuid_hex));
	assert_non_null(strstr(out, "generation:  7\n"));
	assert_non_null(strstr(out, "data size:   1048576 bytes (at offset 4096)\n"));
	assert_non_null(strstr(out, "consistent:  no (a mirror is attached, or did not shut down cleanly)\n"));
	snprintf(want, sizeof(want), "owner:       %016llx (primary id of the last committed attach)\n",
			(unsigned long long)f.owner);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "replica id:  "));
	assert_non_null(strstr(out, "header seq:  "));
	assert_non_null(strstr(out, "last persist seq: 0\n"));
	/* the same fields, line for line, as pmrep status REPLICA_FILE */
	char local[4096];
	char *st_file[] = { exe, "status", tg[0].path, NULL };
	assert_int_equal(run(st_file, local, sizeof(local)), 0);
	assert_string_equal(strchr(out, '\n'), strchr(local, '\n'));
	p[0] = (uint8_t)~p[0];
	assert_int_equal(pmrep_mirror_persist(m, 0, 1, 5000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &rs), 0);
	assert_int_equal(rs.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(rs.resyncs, rs0.resyncs);

	/* a wrong key: refused, nothing written; pmrep status: exit 2,
	 * one error line */
	static const uint8_t wrong[] = "not-the-cli-test-key-0123456789";
	read_hdr_block(tg[0].path, h0);
	assert_int_equal(pmrep_replica_query("127.0.0.1", tg[0].port, wrong,
			sizeof(wrong) - 1, 5000 * func_slow(), &q),
			func_is_tcp() ? PMREP_E_TLS : PMREP_E_AUTH);	/* tcp: TLS first */
	snprintf(badkey, sizeof(badkey), "%s/badkey", dir);
	func_write_file(badkey, wrong, sizeof(wrong) - 1);
	char *st_bad[] = { exe, "status", rep, "--key-file", badkey, NULL };
	assert_int_equal(run_out(st_bad, out, sizeof(out), true), 2);
	assert_int_equal(count_lines(out), 1);
	assert_true(strncmp(out, "pmrep status: ", 14) == 0);
	assert_non_null(strstr(out, "authentication failed"));
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	p[1] = (uint8_t)~p[1];
	assert_int_equal(pmrep_mirror_persist(m, 1, 1, 5000 * func_slow()), 0);

	/* after the mirror's clean delete: consistent */
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	read_hdr_block(tg[0].path, h0);
	query0(&q);
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	assert_true(q.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(q.generation, 7);
	assert_int_equal(q.owner, f.owner);
	assert_int_equal(pmrep_replica_read_info(tg[0].path, &f), 0);
	assert_info_equal(&q, &f);
	assert_int_equal(run(st_net, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "consistent:  yes (left by a clean mirror shutdown)\n"));
	read_hdr_block(tg[0].path, h1);
	assert_memory_equal(h0, h1, sizeof(h0));
	/* and the replica still verifies identical with the source */
	char *ver[] = { exe, "verify", src, tg[0].path, NULL };
	assert_int_equal(run(ver, NULL, 0), 0);

	/* usage errors and argument checks */
	char *u1[] = { exe, "status", "nocolon", "--key-file", keyfile, NULL };
	char *u2[] = { exe, "status", tg[0].path, "--timeout", "100", NULL };
	char *u3[] = { exe, "status", rep, "--key-file", keyfile, "--timeout", "0", NULL };
	assert_int_equal(run(u1, NULL, 0), 2);
	assert_int_equal(run(u2, NULL, 0), 2);
	assert_int_equal(run(u3, NULL, 0), 2);
	char *help[] = { exe, "status", "--help", NULL };
	assert_int_equal(run(help, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "pmrep status ADDR:PORT --key-file FILE [--timeout MS]"));
	assert_int_equal(pmrep_replica_query("127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, 1000, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_replica_query(NULL, tg[0].port, key,
			sizeof(key) - 1, 1000, &q), PMREP_E_INVAL);
	assert_int_equal(pmrep_replica_query("127.0.0.1", "0", key,
			sizeof(key) - 1, 1000, &q), PMREP_E_INVAL);
	assert_int_equal(pmrep_replica_query("127.0.0.1", tg[0].port, key,
			8, 1000, &q), PMREP_E_INVAL);
	assert_int_equal(pmrep_replica_query("127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, -2, &q), PMREP_E_INVAL);
	/* nobody listening: a failure, exit 2 with one line */
	target_stop(&tg[0], SIGTERM);
	assert_int_not_equal(pmrep_replica_query("127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, 2000 * func_slow(), &q), 0);
	assert_int_equal(run_out(st_net, out, sizeof(out), true), 2);
	assert_int_equal(count_lines(out), 1);

	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
}

/* read from fd until a line starting with one of `a` / `b` arrived;
 * returns 'a' or 'b' */
static int
expect_line(int fd, const char *a, const char *b)
{
	static char buf[8192];
	static size_t n;
	long long t0 = func_now_ms();
	for (;;) {
		char *line = buf;
		char *nl;
		while ((nl = memchr(line, '\n', n - (size_t)(line - buf))) != NULL) {
			*nl = '\0';
			int hit = strncmp(line, a, strlen(a)) == 0 ? 'a' :
				(b && strncmp(line, b, strlen(b)) == 0) ? 'b' : 0;
			line = nl + 1;
			if (hit) {
				n -= (size_t)(line - buf);
				memmove(buf, line, n);
				return hit;
			}
		}
		n -= (size_t)(line - buf);
		memmove(buf, line, n);
		assert_true(func_now_ms() - t0 < CHILD_LIMIT_MS * func_slow());
		struct pollfd pf = { fd, POLLIN, 0 };
		if (poll(&pf, 1, 100) <= 0)
			continue;
		ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);
		assert_true(r > 0);
		n += (size_t)r;
	}
}

static void
kv_two_targets_one_killed(const char *policy, bool put_acked)
{
	char exe[PATH_MAX], kvf[128], r0[64], r1[64];
	program("examples/kv-mirror", exe, sizeof(exe));
	target_start(&tg[0], "rep0", "256K");
	target_start(&tg[1], "rep1", "256K");
	snprintf(kvf, sizeof(kvf), "%s/kv", dir);
	snprintf(r0, sizeof(r0), "127.0.0.1:%s", tg[0].port);
	snprintf(r1, sizeof(r1), "127.0.0.1:%s", tg[1].port);
	int in[2], out[2];
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		int nul = open("/dev/null", O_WRONLY);
		dup2(nul, 2);
		close(in[1]);
		close(out[0]);
		/* 1008 buckets: 4096 + 1008 * 256 bytes = the replicas'
		 * 256K data area */
		execl(exe, exe, "--file", kvf, "--entries", "1008",
				"--replica", r0, "--replica", r1, "--key-file", keyfile,
				"--policy", policy, "--timeout", "2000", "script", "-",
				(char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	FILE *w = fdopen(in[1], "w");
	assert_non_null(w);
	fprintf(w, "put a 1\n");
	fflush(w);
	assert_int_equal(expect_line(out[0], "ok put a", "FAILED"), 'a');
	/* the mirror started once k were in sync (quorum: one); both are,
	 * once its background recovery is done: reconnect waits for it */
	fprintf(w, "reconnect\n");
	fflush(w);
	assert_int_equal(expect_line(out[0], "ok reconnect", "FAILED reconnect"), 'a');
	target_stop(&tg[1], SIGKILL);
	fprintf(w, "put b 2\nget a\nstatus\n");
	fflush(w);
	int got = expect_line(out[0], "ok put b", "FAILED put b");
	assert_int_equal(got, put_acked ? 'a' : 'b');
	assert_int_equal(expect_line(out[0], "value a 1", NULL), 'a');
	/* under the quorum the put completed on replica 0 alone: replica 1
	 * is failed once its lost connection is seen -- by the mirror's
	 * next progress, maybe only after the first status (it is BEHIND
	 * until then; kv-mirror's script polls the mirror only in its
	 * calls): a reconnect makes progress, then ask again */
	int seen = expect_line(out[0], "status: replica 1 failed", "status: replica 1 ");
	for (int i = 0; seen != 'a' && i < 10; i++) {
		fprintf(w, "reconnect\nstatus\n");
		fflush(w);
		seen = expect_line(out[0], "status: replica 1 failed", "status: replica 1 ");
	}
	assert_int_equal(seen, 'a');
	fclose(w);
	int st = 0;
	long long t0 = func_now_ms();
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (func_now_ms() - t0 > CHILD_LIMIT_MS * func_slow()) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("kv-mirror did not exit");
		}
		usleep(10000);
	}
	close(out[0]);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), put_acked ? 0 : 1);

	/* the acknowledged puts are on the surviving replica: the source
	 * and replica 0 are identical after the clean shutdown */
	char pm[PATH_MAX];
	program("tools/pmrep", pm, sizeof(pm));
	char *ver[] = { pm, "verify", kvf, tg[0].path, NULL };
	assert_int_equal(run(ver, NULL, 0), 0);
}

static void
kv_quorum_1_of_2_keeps_acknowledging(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	kv_two_targets_one_killed("quorum=1", true);
}

static void
kv_all_fails_the_put(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	kv_two_targets_one_killed("all", false);
}


/* examples/minimal (README's complete program) against pmrep-target: every
 * record durable, then the replica verifies IDENTICAL; the target's
 * closing line says which persist requests it counts */
static void
minimal_example_mirrors_and_verifies(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], pmrep[PATH_MAX], src[128], out[4096];
	program("examples/minimal", exe, sizeof(exe));
	program("tools/pmrep", pmrep, sizeof(pmrep));
	target_start(&tg[0], "replica", "1M");
	snprintf(src, sizeof(src), "%s/source", dir);
	char *mini[] = { exe, src, "127.0.0.1", tg[0].port, keyfile, NULL };
	assert_int_equal(run(mini, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "record 3 durable at offset 192\n"));
	assert_non_null(strstr(out, "replica 0: in sync, method "));
	/* again: the replica is consistent, the mirror attaches again */
	assert_int_equal(run(mini, out, sizeof(out)), 0);
	target_stop(&tg[0], SIGTERM);

	char *verify[] = { pmrep, "verify", src, tg[0].path, NULL };
	assert_int_equal(run(verify, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "marked consistent"));
	assert_non_null(strstr(out, "IDENTICAL: 1 range of 1048576 bytes, "));

	char log[200], text[8192];
	snprintf(log, sizeof(log), "%s/replica.log", dir);
	int fd = open(log, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	assert_non_null(strstr(text, "pmrep-target: 2 sessions accepted, 0 refused, "));
	assert_non_null(strstr(text, " GPSPM persist requests (native / APM flushes are not seen by the target process)\n"));
}

/* --no-tls on both tools: a plaintext target answers a plaintext status;
 * each kind refuses the other with the TLS error (exit 2, one line) */
static void
no_tls_tools_match_and_each_kind_refuses_the_other(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], addr[64], out[4096];
	program("tools/pmrep", exe, sizeof(exe));
	target_start_opt(&tg[0], "plain", "1M", "--no-tls");
	snprintf(addr, sizeof(addr), "127.0.0.1:%s", tg[0].port);
	char *plain[] = { exe, "status", addr, "--key-file", keyfile, "--no-tls", NULL };
	assert_int_equal(run_out(plain, out, sizeof(out), true), 0);
	char *tls[] = { exe, "status", addr, "--key-file", keyfile, NULL };
	assert_int_equal(run_out(tls, out, sizeof(out), true), 2);
	assert_non_null(strstr(out, "TLS"));
	target_stop(&tg[0], SIGTERM);

	target_start(&tg[1], "tls", "1M");
	snprintf(addr, sizeof(addr), "127.0.0.1:%s", tg[1].port);
	assert_int_equal(run_out(tls, out, sizeof(out), true), 0);
	assert_int_equal(run_out(plain, out, sizeof(out), true), 2);
	assert_non_null(strstr(out, "TLS"));
	target_stop(&tg[1], SIGTERM);
}

/*
 * log-mirror --no-tls / --key-id against a plaintext pmrep-target that
 * holds the key of a keygen file (id 5) as an older raw key file (id 0)
 */
/* failover by hand on pmrep logs: the replica's file is
 * opened in place as the new log (every acknowledged record there), the
 * old primary's log is served as its replica at a raised generation, and
 * while it is served the old primary cannot open it */
static void
log_mirror_fails_over_to_the_replica_file_in_place(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], pm[PATH_MAX], a[128], rep[64], out[8192];
	program("examples/log-mirror", exe, sizeof(exe));
	program("tools/pmrep", pm, sizeof(pm));
	snprintf(a, sizeof(a), "%s/a.log", dir);
	/* node A writes a.log, mirrored to node B's b.log */
	target_start(&tg[0], "b.log", "1M");
	snprintf(rep, sizeof(rep), "127.0.0.1:%s", tg[0].port);
	char *w1[] = { exe, "--pmrep-log", "--file", a, "--size", "1M",
		"--replica", rep, "--key-file", keyfile, "--append", "100", NULL };
	assert_int_equal(run(w1, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "done: 100 records acked"));
	/* A is gone; B's target is stopped and its file is the log now */
	target_stop(&tg[0], SIGTERM);
	char *vb[] = { exe, "--pmrep-log", "--file", tg[0].path, "--verify", NULL };
	assert_int_equal(run(vb, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "recovered 100 records"));
	/* A's old log rejoins as B's replica, at generation 2 */
	target_start(&tg[1], "a.log", "1M");
	snprintf(rep, sizeof(rep), "127.0.0.1:%s", tg[1].port);
	char *w2[] = { exe, "--pmrep-log", "--file", tg[0].path,
		"--raise-generation", "--replica", rep, "--key-file", keyfile,
		"--append", "20", NULL };
	assert_int_equal(run(w2, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "generation raised to 2"));
	assert_non_null(strstr(out, "done: 120 records acked"));
	/* the old primary, back on its file while it is served: refused */
	char *old[] = { exe, "--pmrep-log", "--file", a, "--verify", NULL };
	assert_int_equal(run_out(old, out, sizeof(out), true), 1);
	assert_non_null(strstr(out, pmrep_err_to_str(PMREP_E_BUSY)));
	target_stop(&tg[1], SIGTERM);
	char *vf[] = { pm, "verify", tg[0].path, a, NULL };
	assert_int_equal(run(vf, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "generation 2, marked consistent"));
	assert_non_null(strstr(out, "IDENTICAL"));
	assert_int_equal(run(old, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "recovered 120 records"));
}

static void
log_mirror_no_tls_and_key_id(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], kfile[128], raw[128], log[128], rep[64], out[8192];
	program("examples/log-mirror", exe, sizeof(exe));
	snprintf(kfile, sizeof(kfile), "%s/k5", dir);
	snprintf(raw, sizeof(raw), "%s/k5.raw", dir);
	snprintf(log, sizeof(log), "%s/log", dir);
	/* the same key bytes raw: a raw file loses one trailing newline, so
	 * draw a key that does not end in one */
	uint8_t k[PMREP_KEY_MAX];
	size_t klen = 0;
	uint32_t kid = 0;
	for (int i = 0; i < 20; i++) {
		(void) unlink(kfile);
		assert_int_equal(pmrep_key_write_file(kfile, 5, 32), 0);
		assert_int_equal(pmrep_key_read_file_ex(kfile, 0, k, sizeof(k),
				&klen, &kid), 0);
		if (k[klen - 1] != '\n')
			break;
	}
	assert_int_equal(kid, 5);
	assert_int_not_equal(k[klen - 1], '\n');
	func_write_file(raw, k, klen);
	tg_keyfile = raw;
	target_start_opt(&tg[0], "replica", "1M", "--no-tls");
	snprintf(rep, sizeof(rep), "127.0.0.1:%s", tg[0].port);

	/* TLS (the default) to a plaintext target: refused, named */
	char *tls[] = { exe, "--file", log, "--size", "1M", "--replica", rep,
		"--key-file", kfile, "--key-id", "0", "--append", "3", NULL };
	assert_int_equal(run_out(tls, out, sizeof(out), true), 1);
	assert_non_null(strstr(out, pmrep_err_to_str(PMREP_E_TLS)));
	/* plaintext, naming the file's key id 5 (the default): the target
	 * holds the key as id 0 only: refused at admission */
	char *id5[] = { exe, "--file", log, "--replica", rep, "--key-file",
		kfile, "--no-tls", "--append", "3", NULL };
	assert_int_equal(run_out(id5, out, sizeof(out), true), 1);
	assert_non_null(strstr(out, pmrep_err_to_str(PMREP_E_AUTH)));
	char *id5x[] = { exe, "--file", log, "--replica", rep, "--key-file",
		kfile, "--no-tls", "--key-id", "5", "--append", "3", NULL };
	assert_int_equal(run_out(id5x, out, sizeof(out), true), 1);
	assert_non_null(strstr(out, pmrep_err_to_str(PMREP_E_AUTH)));
	/* --key-id 0: no id named, the target tries its keys: appended */
	char *id0[] = { exe, "--file", log, "--replica", rep, "--key-file",
		kfile, "--no-tls", "--key-id", "0", "--append", "3", NULL };
	assert_int_equal(run_out(id0, out, sizeof(out), true), 0);
	assert_non_null(strstr(out, "acked 3\n"));
	assert_non_null(strstr(out, "done: 3 records acked"));
	/* the raw file itself (key id 0 by default) attaches too */
	char *rawrun[] = { exe, "--file", log, "--replica", rep, "--key-file",
		raw, "--no-tls", "--append", "2", NULL };
	assert_int_equal(run_out(rawrun, out, sizeof(out), true), 0);
	assert_non_null(strstr(out, "done: 5 records acked"));
	/* a bad id: a usage error */
	char *bad[] = { exe, "--file", log, "--replica", rep, "--key-file",
		kfile, "--key-id", "4294967296", NULL };
	assert_int_equal(run(bad, NULL, 0), 2);
	char *bad2[] = { exe, "--file", log, "--replica", rep, "--key-file",
		kfile, "--key-id", "-1", NULL };
	assert_int_equal(run(bad2, NULL, 0), 2);
	/* a key file others may read: refused, unless asked for */
	assert_int_equal(chmod(kfile, 0644), 0);
	assert_int_equal(run(id0, NULL, 0), 1);
	char *loose[] = { exe, "--file", log, "--replica", rep, "--key-file",
		kfile, "--no-tls", "--key-id", "0", "--insecure-key-file",
		"--append", "1", NULL };
	assert_int_equal(run_out(loose, out, sizeof(out), true), 0);
	assert_non_null(strstr(out, "done: 6 records acked"));

	/* kv-mirror takes the same three options, worded the same (4080
	 * buckets: 4096 + 4080 * 256 bytes = the 1M data area); the key
	 * file is still 0644 */
	char kvf[128];
	snprintf(kvf, sizeof(kvf), "%s/kv", dir);
	program("examples/kv-mirror", exe, sizeof(exe));
	char *kv_tls[] = { exe, "--file", kvf, "--entries", "4080", "--replica",
		rep, "--key-file", kfile, "--insecure-key-file", "--key-id",
		"0", "put", "a", "1", NULL };
	assert_int_equal(run_out(kv_tls, out, sizeof(out), true), 1);
	assert_non_null(strstr(out, pmrep_err_to_str(PMREP_E_TLS)));
	char *kv_id5[] = { exe, "--file", kvf, "--entries", "4080", "--replica",
		rep, "--key-file", kfile, "--insecure-key-file", "--no-tls",
		"put", "a", "1", NULL };
	assert_int_equal(run_out(kv_id5, out, sizeof(out), true), 1);
	assert_non_null(strstr(out, pmrep_err_to_str(PMREP_E_AUTH)));
	char *kv_strict[] = { exe, "--file", kvf, "--entries", "4080",
		"--replica", rep, "--key-file", kfile, "--no-tls", "--key-id",
		"0", "put", "a", "1", NULL };
	assert_int_equal(run_out(kv_strict, out, sizeof(out), true), 1);
	assert_null(strstr(out, "ok put"));
	char *kv_ok[] = { exe, "--file", kvf, "--entries", "4080", "--replica",
		rep, "--key-file", kfile, "--insecure-key-file", "--no-tls",
		"--key-id", "0", "put", "a", "1", NULL };
	/* the log's set holds that replica now: named (it read "invalid
	 * argument") */
	assert_int_equal(run_out(kv_ok, out, sizeof(out), true), 1);
	assert_non_null(strstr(out, "kv-mirror: cannot mirror: replica-set UUID mismatch: it belongs to another replica set ("));
	assert_non_null(strstr(out, "refused us: replica-set UUID mismatch"));
	/* a replica of its own */
	target_start_opt(&tg[1], "replica2", "1M", "--no-tls");
	char rep2[64];
	snprintf(rep2, sizeof(rep2), "127.0.0.1:%s", tg[1].port);
	kv_ok[6] = rep2;
	assert_int_equal(run_out(kv_ok, out, sizeof(out), true), 0);
	assert_non_null(strstr(out, "ok put a"));
	char *kv_bad[] = { exe, "--file", kvf, "--key-id", "4294967296",
		"list", NULL };
	assert_int_equal(run(kv_bad, NULL, 0), 2);
	memset(k, 0, sizeof(k));
}

/* ------------------------------------------------ --json, verify by mmap */

/* a small reader of JSON text, enough for pmrep's --json output: each
 * js_* function takes a pointer at a value; NULL: not valid JSON */
static const char *
js_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static int
js_hex(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ?
		c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* past the string at p; a raw control character or a bad escape: NULL */
static const char *
js_skip_str(const char *p)
{
	if (*p != '"')
		return NULL;
	for (p++; *p != '"'; p++) {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p != '\\')
			continue;
		p++;
		if (*p == 'u') {
			for (int i = 1; i <= 4; i++)
				if (js_hex(p[i]) < 0)
					return NULL;
			p += 4;
		} else if (*p == '\0' || strchr("\"\\/bfnrt", *p) == NULL) {
			return NULL;
		}
	}
	return p + 1;
}

static const char *
js_skip(const char *p)
{
	p = js_ws(p);
	if (*p == '"')
		return js_skip_str(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		p = js_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				if ((p = js_skip_str(js_ws(p))) == NULL)
					return NULL;
				p = js_ws(p);
				if (*p++ != ':')
					return NULL;
			}
			if ((p = js_skip(p)) == NULL)
				return NULL;
			p = js_ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (strncmp(p, "true", 4) == 0 || strncmp(p, "null", 4) == 0)
		return p + 4;
	if (strncmp(p, "false", 5) == 0)
		return p + 5;
	if (*p == '-')
		p++;
	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return NULL;
	while (*p >= '0' && *p <= '9')
		p++;
	return p;
}

/* the whole text is one JSON value and one line */
static bool
js_valid(const char *doc)
{
	const char *e = js_skip(doc);
	return e != NULL && strcmp(js_ws(e), "") == 0 && count_lines(doc) == 1 &&
		doc[strlen(doc) - 1] == '\n';
}

/* the string at p decoded into out (\uXXXX: as UTF-8) */
static void
js_string(const char *p, char *out, size_t len)
{
	p = js_ws(p);
	assert_int_equal(*p, '"');
	assert_non_null(js_skip_str(p));
	size_t n = 0;
	for (p++; *p != '"'; p++) {
		unsigned c = (unsigned char)*p;
		if (c == '\\') {
			p++;
			switch (*p) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u':
				c = (unsigned)(js_hex(p[1]) << 12 | js_hex(p[2]) << 8 |
						js_hex(p[3]) << 4 | js_hex(p[4]));
				p += 4;
				assert_true(c < 0x800);	/* pmrep escapes < 0x80 only */
				if (c >= 0x80) {
					assert_true(n + 1 < len);
					out[n++] = (char)(0xc0 | c >> 6);
					c = 0x80 | (c & 0x3f);
				}
				break;
			default: c = (unsigned char)*p; break;	/* " \ / */
			}
		}
		assert_true(n + 1 < len);
		out[n++] = (char)c;
	}
	out[n] = '\0';
}

/* the value of member `key` of the object at p; NULL: none */
static const char *
js_member(const char *p, const char *key)
{
	p = js_ws(p);
	assert_int_equal(*p, '{');
	p = js_ws(p + 1);
	while (*p == '"') {
		char k[256];
		js_string(p, k, sizeof(k));
		p = js_ws(js_skip_str(p));
		assert_int_equal(*p, ':');
		const char *v = js_ws(p + 1);
		if (strcmp(k, key) == 0)
			return v;
		p = js_skip(v);
		assert_non_null(p);
		p = js_ws(p);
		if (*p == ',')
			p = js_ws(p + 1);
	}
	return NULL;
}

/* element i of the array at p; NULL: fewer elements */
static const char *
js_index(const char *p, int i)
{
	p = js_ws(p);
	assert_int_equal(*p, '[');
	p = js_ws(p + 1);
	for (int k = 0; *p != ']'; k++) {
		if (k == i)
			return p;
		p = js_ws(js_skip(p));
		if (*p == ',')
			p = js_ws(p + 1);
	}
	return NULL;
}

static const char *
js_get(const char *obj, const char *key)
{
	const char *v = js_member(obj, key);
	if (v == NULL)
		fail_msg("no member \"%s\" in %s", key, obj);
	return v;
}

static unsigned long long
js_u64(const char *obj, const char *key)
{
	const char *v = js_get(obj, key);
	assert_true(*v >= '0' && *v <= '9');
	return strtoull(v, NULL, 10);
}

static bool
js_bool(const char *obj, const char *key)
{
	const char *v = js_get(obj, key);
	if (strncmp(v, "true", 4) == 0)
		return true;
	assert_int_equal(strncmp(v, "false", 5), 0);
	return false;
}

static void
js_str(const char *obj, const char *key, char *out, size_t len)
{
	js_string(js_get(obj, key), out, len);
}

static void
hex_of(const uint8_t *b, char out[2 * PMREP_UUID_SIZE + 1])
{
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* the object at obj is `name`'s header as pmrep status --json says it:
 * every field equal to *f's */
static void
assert_json_info(const char *obj, const char *name, bool queried,
		const struct pmrep_replica_info *f)
{
	char s[512], hex[2 * PMREP_UUID_SIZE + 1];
	js_str(obj, "replica", s, sizeof(s));
	assert_string_equal(s, name);
	assert_int_equal(js_bool(obj, "queried"), queried);
	assert_true(js_bool(obj, "valid"));
	hex_of(f->uuid, hex);
	js_str(obj, "uuid", s, sizeof(s));
	assert_string_equal(s, hex);
	bool claimed = false, has_id = false;
	for (int i = 0; i < PMREP_UUID_SIZE; i++) {
		claimed |= f->uuid[i] != 0;
		has_id |= f->replica_id[i] != 0;
	}
	assert_int_equal(js_bool(obj, "claimed"), claimed);
	assert_int_equal(js_u64(obj, "generation"), f->generation);
	assert_int_equal(js_u64(obj, "data_size"), f->data_size);
	assert_int_equal(js_u64(obj, "data_offset"), f->data_offset);
	assert_int_equal(js_bool(obj, "consistent"),
			claimed && (f->flags & PMREP_REPLICA_F_CONSISTENT));
	assert_int_equal(js_u64(obj, "flags"), f->flags);
	hex_of(f->replica_id, hex);
	js_str(obj, "replica_id", s, sizeof(s));
	assert_string_equal(s, hex);
	assert_int_equal(js_bool(obj, "has_replica_id"), has_id);
	js_str(obj, "owner", s, sizeof(s));
	assert_int_equal(strlen(s), 16);
	assert_int_equal(strtoull(s, NULL, 16), f->owner);
	assert_int_equal(js_u64(obj, "header_seq"), f->seq);
	assert_int_equal(js_u64(obj, "last_persist_seq"), f->last_persist_seq);
}

/*
 * pmrep status --json (a file, and ADDR:PORT --key-file) and pmrep
 * compare --json: one JSON object on one line whose every field is the
 * header pmrep_replica_read_info / pmrep_replica_query reads; a path with
 * a quote, a backslash and control characters comes back byte-exact; a
 * file that is no replica: valid false, exit 1; a missing file: exit 2,
 * nothing on stdout; compare names the newer generation, two equally
 * current ones, and no answer (null, different_sets) for another set. The
 * reader itself refuses the unescaped forms (shown on broken texts).
 */
static void
status_and_compare_json_match_the_header(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], src[128], old[128], odd[192], missing[128], rep[64];
	char out[16384], s[512];
	program("tools/pmrep", exe, sizeof(exe));

	/* the reader fails where an unescaped text would */
	assert_true(js_valid("{\"a\":\"x\\ny\",\"b\":[1,true,null]}\n"));
	assert_false(js_valid("{\"a\":\"x\ny\"}\n"));		/* raw newline */
	assert_false(js_valid("{\"a\":\"x\"y\"}\n"));		/* raw quote */
	assert_false(js_valid("{\"a\":\"x\\qy\"}\n"));		/* bad escape */
	assert_false(js_valid("{\"a\":\"x\x01y\"}\n"));		/* raw control */
	assert_false(js_valid("{\"a\":1}{\"b\":2}\n"));	/* two values */

	target_start(&tg[0], "replica", "1M");
	snprintf(src, sizeof(src), "%s/source", dir);
	snprintf(old, sizeof(old), "%s/old", dir);
	snprintf(missing, sizeof(missing), "%s/nothing", dir);
	snprintf(odd, sizeof(odd), "%s/rep \"q\" \\b\\\\ nl\n tab\t ctl\x01\x1f del\x7f", dir);
	snprintf(rep, sizeof(rep), "127.0.0.1:%s", tg[0].port);
	make_replica(src, 1);

	/* generation 1 kept as `old`; the replica goes on to generation 2 */
	static uint8_t buf[DATA_SIZE + PMREP_REPLICA_DATA_OFFSET];
	int fd = open(tg[0].path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
	func_write_file(old, buf, sizeof(buf));
	make_replica(src, 2);
	assert_int_equal(link(tg[0].path, odd), 0);

	struct pmrep_replica_info f, fo, q;
	assert_int_equal(pmrep_replica_read_info(tg[0].path, &f), 0);
	assert_int_equal(pmrep_replica_read_info(old, &fo), 0);
	assert_int_equal(f.generation, 2);
	assert_int_equal(fo.generation, 1);

	/* status REPLICA_FILE --json, of the odd name */
	char *st[] = { exe, "status", odd, "--json", NULL };
	assert_int_equal(run(st, out, sizeof(out)), 0);
	if (!js_valid(out))
		fail_msg("not one line of JSON: %s", out);
	assert_json_info(out, odd, false, &f);
	assert_null(strchr(out, '\x01'));	/* escaped, not raw */

	/* status ADDR:PORT --key-file --json: the target's answer */
	char *st_net[] = { exe, "status", rep, "--key-file", keyfile, "--json", NULL };
	assert_int_equal(run(st_net, out, sizeof(out)), 0);
	assert_true(js_valid(out));
	query0(&q);
	assert_json_info(out, rep, true, &q);
	assert_info_equal(&q, &f);

	/* no replica: a negative answer, in JSON; missing: stderr only */
	char *st_bad[] = { exe, "status", "--json", src, NULL };
	assert_int_equal(run(st_bad, out, sizeof(out)), 1);
	assert_true(js_valid(out));
	js_str(out, "replica", s, sizeof(s));
	assert_string_equal(s, src);
	assert_false(js_bool(out, "valid"));
	js_str(out, "error", s, sizeof(s));
	assert_string_equal(s, pmrep_err_to_str(PMREP_E_MALFORMED));
	assert_int_equal(strtoll(js_get(out, "code"), NULL, 10), PMREP_E_MALFORMED);
	char *st_miss[] = { exe, "status", "--json", missing, NULL };
	assert_int_equal(run(st_miss, out, sizeof(out)), 2);
	assert_string_equal(out, "");

	/* compare --json: generation 2 (the odd name) over generation 1 */
	char *cmp[] = { exe, "compare", "--json", old, odd, NULL };
	assert_int_equal(run(cmp, out, sizeof(out)), 0);
	if (!js_valid(out))
		fail_msg("not one line of JSON: %s", out);
	const char *reps = js_get(out, "replicas");
	assert_json_info(js_index(reps, 0), old, false, &fo);
	assert_json_info(js_index(reps, 1), odd, false, &f);
	assert_null(js_index(reps, 2));
	const char *mc = js_get(out, "most_current");
	js_string(js_index(mc, 0), s, sizeof(s));
	assert_string_equal(s, odd);
	assert_null(js_index(mc, 1));
	js_str(out, "answer", s, sizeof(s));
	assert_string_equal(s, odd);
	assert_int_equal(strncmp(js_get(out, "reason"), "null", 4), 0);
	char expect[400];
	snprintf(expect, sizeof(expect), "most current: %s", odd);
	js_str(out, "verdict", s, sizeof(s));
	assert_string_equal(s, expect);

	/* two equally current (one file, two names) */
	char *cmp2[] = { exe, "compare", tg[0].path, odd, "--json", NULL };
	assert_int_equal(run(cmp2, out, sizeof(out)), 0);
	assert_true(js_valid(out));
	mc = js_get(out, "most_current");
	js_string(js_index(mc, 0), s, sizeof(s));
	assert_string_equal(s, tg[0].path);
	js_string(js_index(mc, 1), s, sizeof(s));
	assert_string_equal(s, odd);
	assert_null(js_index(mc, 2));

	/* another set (a fresh replica: unclaimed): no answer, exit 1;
	 * asked of both targets over the network */
	target_start(&tg[1], "fresh", "1M");
	struct pmrep_replica_info f1;
	assert_int_equal(pmrep_replica_read_info(tg[1].path, &f1), 0);
	char *cmp3[] = { exe, "compare", "--json", tg[0].path, tg[1].path, NULL };
	assert_int_equal(run(cmp3, out, sizeof(out)), 1);
	assert_true(js_valid(out));
	reps = js_get(out, "replicas");
	assert_json_info(js_index(reps, 0), tg[0].path, false, &f);
	assert_json_info(js_index(reps, 1), tg[1].path, false, &f1);
	assert_null(js_index(js_get(out, "most_current"), 0));
	assert_int_equal(strncmp(js_get(out, "answer"), "null", 4), 0);
	js_str(out, "reason", s, sizeof(s));
	assert_string_equal(s, "different_sets");
	js_str(out, "verdict", s, sizeof(s));
	assert_int_equal(strncmp(s, "no answer: ", 11), 0);
	assert_non_null(strstr(s, "belong to different replica sets"));
	char rep1[64];
	snprintf(rep1, sizeof(rep1), "127.0.0.1:%s", tg[1].port);
	char *cmp4[] = { exe, "compare", "--json", "--key-file", keyfile, rep, rep1, NULL };
	assert_int_equal(run(cmp4, out, sizeof(out)), 1);
	assert_true(js_valid(out));
	reps = js_get(out, "replicas");
	assert_json_info(js_index(reps, 0), rep, true, &f);
	assert_json_info(js_index(reps, 1), rep1, true, &f1);
	/* the text form is unchanged: no JSON without --json */
	char *cmp_txt[] = { exe, "compare", old, odd, NULL };
	assert_int_equal(run(cmp_txt, out, sizeof(out)), 0);
	assert_null(strchr(out, '{'));
	assert_non_null(strstr(out, "most current: "));
	assert_int_equal(unlink(odd), 0);
}

/* the checksum pmrep verify printed ("checksum HEX on both") */
static unsigned long long
verify_checksum(const char *out)
{
	const char *c = strstr(out, "checksum ");
	assert_non_null(c);
	return strtoull(c + 9, NULL, 16);
}

/*
 * pmrep verify through mmap (the device DAX path: no read(2) there),
 * taken for regular files with PMREP_VERIFY_MMAP=1 (-v says which way):
 * IDENTICAL with the checksum the pread path prints, a pmrep log source
 * by its data area, one flipped byte found in its range (DIFFERENT, exit
 * 1), as by pread. The device DAX itself is not tested here (no pmem).
 */
static void
verify_through_mmap_identical_and_different(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], src[128], out[16384];
	program("tools/pmrep", exe, sizeof(exe));
	target_start(&tg[0], "replica", "1M");
	snprintf(src, sizeof(src), "%s/source", dir);
	make_replica(src, 1);

	char *v[] = { exe, "-v", "verify", src, tg[0].path, "--range", "64K", NULL };
	assert_int_equal(run_out(v, out, sizeof(out), true), 0);
	assert_non_null(strstr(out, "a plain file, read with pread"));
	unsigned long long sum = verify_checksum(out);

	assert_int_equal(setenv("PMREP_VERIFY_MMAP", "1", 1), 0);
	int rc = run_out(v, out, sizeof(out), true);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "a plain file, read through mmap"));
	assert_non_null(strstr(out, "IDENTICAL: 16 ranges of 65536 bytes, 1048576 bytes"));
	assert_int_equal(verify_checksum(out), sum);
	/* the replica file as a source: a pmrep log, by its data area */
	char *vlog[] = { exe, "-v", "verify", tg[0].path, tg[0].path, NULL };
	assert_int_equal(run_out(vlog, out, sizeof(out), true), 0);
	assert_non_null(strstr(out, "a pmrep log: its data area, read through mmap"));
	assert_int_equal(verify_checksum(out), sum);

	/* one byte flipped in range 3 (bytes 196608..262143) */
	int fd = open(src, O_RDWR);
	assert_true(fd >= 0);
	uint8_t b = (uint8_t)~pattern(200000);
	assert_int_equal(pwrite(fd, &b, 1, 200000), 1);
	close(fd);
	char *v2[] = { exe, "verify", src, tg[0].path, "--range", "64K", NULL };
	rc = run(v2, out, sizeof(out));
	char *v3[] = { exe, "verify", src, tg[0].path, NULL };
	char out3[4096];
	int rc3 = run(v3, out3, sizeof(out3));
	assert_int_equal(unsetenv("PMREP_VERIFY_MMAP"), 0);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(out, "first differing range: 3 (bytes 196608..262143)"));
	assert_non_null(strstr(out, "DIFFERENT: 1 of 16 ranges of 65536 bytes differs\n"));
	assert_int_equal(rc3, 1);
	assert_non_null(strstr(out3, "DIFFERENT: 1 of 1 range of 1048576 bytes differs\n"));
	/* and the pread path says the same */
	char out2[4096];
	assert_int_equal(run(v2, out2, sizeof(out2)), 1);
	assert_string_equal(out, out2);
}

/* ------------------------------------------- pmrep-target as a daemon */

/* the text of `path` (at most len - 1 bytes) */
static void
slurp(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
}

/* how often `needle` occurs in `s` */
static int
count_of(const char *s, const char *needle)
{
	int n = 0;
	for (const char *at = s; (at = strstr(at, needle)) != NULL; at++)
		n++;
	return n;
}

/* wait until t's log holds `needle` at least `times` times */
static void
wait_log(const struct target *t, const char *needle, int times)
{
	char log[200];
	static char text[16384];
	snprintf(log, sizeof(log), "%s.log", t->path);
	long long t0 = func_now_ms();
	for (;;) {
		slurp(log, text, sizeof(text));
		if (count_of(text, needle) >= times)
			return;
		if (func_now_ms() - t0 > 10000 * func_slow())
			fail_msg("%s: no '%s' (x%d) in:\n%s", log, needle, times, text);
		usleep(20000);
	}
}

/* the target process still runs (no exit, no death by a signal) */
static void
assert_alive(const struct target *t)
{
	int st;
	assert_int_equal(waitpid(t->pid, &st, WNOHANG), 0);
}

/* SIGTERM: a clean stop, exit 0 */
static void
stop_clean(struct target *t)
{
	int st = 0;
	assert_int_equal(kill(t->pid, SIGTERM), 0);
	assert_int_equal(waitpid(t->pid, &st, 0), t->pid);
	t->pid = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* the last line of `s` (in place: its newline cut) */
static const char *
last_line(char *s)
{
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '\n')
		s[--n] = '\0';
	char *nl = strrchr(s, '\n');
	return nl ? nl + 1 : s;
}

/* a mirror of a new source `name` (DATA_SIZE pattern bytes) attached to
 * tg[0] and persisted once */
static struct pmrep_mirror *
mirror_attach(const char *name, struct pmrep_pmem **pmem,
		struct pmrep_mirror_cfg **cfg)
{
	char src[128];
	snprintf(src, sizeof(src), "%s/%s", dir, name);
	assert_int_equal(pmrep_pmem_open(src, PMREP_PMEM_CREATE, DATA_SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, pmem), 0);
	uint8_t *p = pmrep_pmem_get_address(*pmem);
	for (size_t i = 0; i < DATA_SIZE; i++)
		p[i] = pattern(i);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_cfg_new(cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(*cfg, "127.0.0.1", tg[0].port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(*cfg, key, sizeof(key) - 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(*cfg, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(*cfg, 3), 0);
	assert_int_equal(pmrep_mirror_new(*pmem, *cfg, &m), 0);
	assert_int_equal(pmrep_mirror_persist(m, 0, DATA_SIZE, 5000 * func_slow()), 0);
	return m;
}

/* one byte changed and persisted: still in sync, no resync since rs0 */
static void
persist_in_sync(struct pmrep_mirror *m, struct pmrep_pmem *pmem, size_t off,
		const struct pmrep_replica_status *rs0)
{
	uint8_t *p = pmrep_pmem_get_address(pmem);
	p[off] = (uint8_t)~p[off];
	assert_int_equal(pmrep_mirror_persist(m, off, 1, 5000 * func_slow()), 0);
	struct pmrep_replica_status rs;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &rs), 0);
	assert_int_equal(rs.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(rs.last_error, 0);
	assert_int_equal(rs.resyncs, rs0->resyncs);
}

/* pmrep-target --version: "pmrep-target VERSION", the version pmrep
 * --version says, exit 0, nothing else */
static void
target_version(void **state)
{
	(void)state;
	char exe[PATH_MAX], pm[PATH_MAX], out[256], out2[256];
	program("tools/pmrep-target", exe, sizeof(exe));
	program("tools/pmrep", pm, sizeof(pm));
	char *v[] = { exe, "--version", NULL };
	assert_int_equal(run_out(v, out, sizeof(out), true), 0);
	assert_int_equal(count_lines(out), 1);
	assert_true(strncmp(out, "pmrep-target ", 13) == 0);
	assert_true(out[13] >= '0' && out[13] <= '9');
	char *pv[] = { pm, "--version", NULL };
	assert_int_equal(run(pv, out2, sizeof(out2)), 0);
	assert_true(strncmp(out2, "pmrep ", 6) == 0);
	assert_string_equal(out + 13, out2 + 6);
}

/* SIGUSR1: one counters line on stderr, and the target serves on: a
 * mirror attaches after it and persists, pmrep status ADDR:PORT answers,
 * the next SIGUSR1 counts them; SIGTERM then stops it with exit 0 */
static void
target_sigusr1_logs_counters_and_serves_on(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], rep[64], out[4096];
	program("tools/pmrep", exe, sizeof(exe));
	target_start(&tg[0], "replica", "1M");
	snprintf(rep, sizeof(rep), "127.0.0.1:%s", tg[0].port);
	assert_int_equal(kill(tg[0].pid, SIGUSR1), 0);
	wait_log(&tg[0], "pmrep-target: SIGUSR1: 0 sessions accepted, 0 refused, 0 in use, 0 GPSPM persist requests", 1);
	assert_alive(&tg[0]);

	struct pmrep_pmem *pmem = NULL;
	struct pmrep_mirror_cfg *cfg = NULL;
	struct pmrep_mirror *m = mirror_attach("source", &pmem, &cfg);
	assert_int_equal(kill(tg[0].pid, SIGUSR1), 0);
	wait_log(&tg[0], "pmrep-target: SIGUSR1: 1 session accepted, 0 refused, 1 in use, ", 1);
	struct pmrep_replica_status rs0;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &rs0), 0);
	persist_in_sync(m, pmem, 4096, &rs0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);

	char *st_net[] = { exe, "status", rep, "--key-file", keyfile, NULL };
	assert_int_equal(run(st_net, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "generation:  3\n"));
	assert_int_equal(kill(tg[0].pid, SIGUSR1), 0);
	wait_log(&tg[0], "pmrep-target: SIGUSR1: 2 sessions accepted, 0 refused, ", 1);
	assert_alive(&tg[0]);
	stop_clean(&tg[0]);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
}

/* SIGHUP twice with a mirror attached: the session stays (each persist
 * after it succeeds, in sync, without a resync); the second with the key
 * file gone: the keys stay as they were, the target serves on */
static void
target_sighup_keeps_the_session(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char kf[128];
	snprintf(kf, sizeof(kf), "%s/hup.key", dir);
	func_write_file(kf, key, sizeof(key) - 1);
	tg_keyfile = kf;
	target_start(&tg[0], "replica", "1M");
	struct pmrep_pmem *pmem = NULL;
	struct pmrep_mirror_cfg *cfg = NULL;
	struct pmrep_mirror *m = mirror_attach("source", &pmem, &cfg);
	struct pmrep_replica_status rs0;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &rs0), 0);
	assert_int_equal(rs0.state, PMREP_REPLICA_IN_SYNC);

	assert_int_equal(kill(tg[0].pid, SIGHUP), 0);
	wait_log(&tg[0], "pmrep-target: SIGHUP: 1 key(s) held", 1);
	assert_alive(&tg[0]);
	persist_in_sync(m, pmem, 0, &rs0);

	assert_int_equal(unlink(kf), 0);
	assert_int_equal(kill(tg[0].pid, SIGHUP), 0);
	wait_log(&tg[0], "pmrep-target: SIGHUP: the keys stay as they were", 1);
	assert_alive(&tg[0]);
	persist_in_sync(m, pmem, 8192, &rs0);
	/* and a new session is admitted with the key kept */
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	struct pmrep_replica_info q;
	assert_int_equal(pmrep_replica_query("127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, 5000 * func_slow(), &q), 0);
	assert_int_equal(q.generation, 3);
	stop_clean(&tg[0]);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_pmem_close(&pmem), 0);
}

/* a start that fails on a port in use: exit 1, the cause on the last
 * line; a file --create made is removed again, a file that existed (a
 * replica, or a file that is none) is left byte for byte */
static void
target_failed_start_removes_only_what_it_created(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], out[16384], fresh[128], old[160], junk[128];
	static uint8_t h0[PMREP_REPLICA_DATA_OFFSET], h1[PMREP_REPLICA_DATA_OFFSET];
	program("tools/pmrep-target", exe, sizeof(exe));
	/* a replica that exists: made by a target, stopped */
	target_start(&tg[1], "old", "1M");
	stop_clean(&tg[1]);
	snprintf(old, sizeof(old), "%s", tg[1].path);
	target_start(&tg[0], "replica", "1M");	/* holds the port */

	snprintf(fresh, sizeof(fresh), "%s/fresh", dir);
	char *a[] = { exe, "--path", fresh, "--size", "1M", "--create",
		"--address", "127.0.0.1", "--port", tg[0].port, "--key-file",
		keyfile, NULL };
	assert_int_equal(run_out(a, out, sizeof(out), true), 1);
	assert_non_null(strstr(last_line(out), "Address already in use"));
	assert_int_not_equal(access(fresh, F_OK), 0);

	struct stat st0, st1;
	assert_int_equal(stat(old, &st0), 0);
	read_hdr_block(old, h0);
	char *b[] = { exe, "--path", old, "--size", "1M", "--create",
		"--address", "127.0.0.1", "--port", tg[0].port, "--key-file",
		keyfile, NULL };
	assert_int_equal(run_out(b, out, sizeof(out), true), 1);
	assert_non_null(strstr(last_line(out), "Address already in use"));
	assert_int_equal(stat(old, &st1), 0);
	assert_int_equal(st0.st_ino, st1.st_ino);
	assert_int_equal(st0.st_size, st1.st_size);
	read_hdr_block(old, h1);
	assert_memory_equal(h0, h1, sizeof(h0));

	/* a file of the right size that is no replica: refused, kept */
	snprintf(junk, sizeof(junk), "%s/junk", dir);
	static uint8_t zero[DATA_SIZE + PMREP_REPLICA_DATA_OFFSET];
	memset(zero, 0x5a, sizeof(zero));
	func_write_file(junk, zero, sizeof(zero));
	char *c[] = { exe, "--path", junk, "--size", "1M", "--create",
		"--address", "127.0.0.1", "--port", "0", "--key-file",
		keyfile, NULL };
	assert_int_equal(run_out(c, out, sizeof(out), true), 1);
	assert_int_equal(stat(junk, &st1), 0);
	assert_int_equal(st1.st_size, sizeof(zero));

	/* the running target on the same port is untouched */
	assert_alive(&tg[0]);
	struct pmrep_replica_info q;
	assert_int_equal(pmrep_replica_query("127.0.0.1", tg[0].port, key,
			sizeof(key) - 1, 5000 * func_slow(), &q), 0);
	stop_clean(&tg[0]);
}

/* errors that name the real cause, on the last line: a directory as
 * --path, an --address of no interface of this host (the file --create
 * made removed again), a stray argument (exit 2, the reason before the
 * usage text) */
static void
target_errors_name_the_real_cause(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], out[16384], sub[128], fresh[128], want[256];
	program("tools/pmrep-target", exe, sizeof(exe));
	snprintf(sub, sizeof(sub), "%s/adir", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	char *d1[] = { exe, "--path", sub, "--key-file", keyfile, "--port",
		"0", NULL };
	char *d2[] = { exe, "--path", sub, "--size", "1M", "--create",
		"--key-file", keyfile, "--port", "0", NULL };
	snprintf(want, sizeof(want), "pmrep-target: cannot serve %s: is a directory (--path names a replica file or device DAX)", sub);
	assert_int_equal(run_out(d1, out, sizeof(out), true), 1);
	assert_string_equal(last_line(out), want);
	assert_int_equal(run_out(d2, out, sizeof(out), true), 1);
	assert_string_equal(last_line(out), want);

	/* 192.0.2.1: TEST-NET-1 (RFC 5737), no host's own */
	snprintf(fresh, sizeof(fresh), "%s/fresh", dir);
	char *a1[] = { exe, "--path", fresh, "--size", "1M", "--create",
		"--address", "192.0.2.1", "--port", "0", "--key-file", keyfile,
		NULL };
	assert_int_equal(run_out(a1, out, sizeof(out), true), 1);
	assert_string_equal(last_line(out), "pmrep-target: cannot listen on 192.0.2.1: not an address of this host (--address)");
	assert_int_not_equal(access(fresh, F_OK), 0);

	char *s1[] = { exe, "--path", fresh, "--key-file", keyfile, "stray",
		NULL };
	assert_int_equal(run_out(s1, out, sizeof(out), true), 2);
	assert_true(strncmp(out, "pmrep-target: unexpected argument 'stray'\nusage: pmrep-target ", 61) == 0);
	char *s2[] = { exe, "--key-file", keyfile, NULL };
	assert_int_equal(run_out(s2, out, sizeof(out), true), 2);
	assert_true(strncmp(out, "pmrep-target: --path is required\nusage: ", 40) == 0);
	assert_int_not_equal(access(fresh, F_OK), 0);
}

/* pmrep names a stray argument of each command (it said only what it
 * expected, or printed the usage): exit 2, the reason first */
static void
pmrep_names_a_stray_argument(void **state)
{
	(void)state;
	char exe[PATH_MAX], out[4096];
	program("tools/pmrep", exe, sizeof(exe));
	char *v[] = { exe, "verify", "a", "b", "extra", NULL };
	char *s[] = { exe, "status", "a", "extra", NULL };
	char *k[] = { exe, "keygen", "a", "extra", NULL };
	char *l[] = { exe, "log-create", "a", "1M", "extra", NULL };
	char *r[] = { exe, "recover", "--file", "a", "extra", NULL };
	char *const *cmds[] = { v, s, k, l, r };
	static const char *const want[] = {
		"pmrep: verify: unexpected argument 'extra' (expected SOURCE REPLICA)\n",
		"pmrep: status: unexpected argument 'extra' (expected one REPLICA_FILE, or ADDR:PORT with --key-file)\n",
		"pmrep: keygen: unexpected argument 'extra' (expected one FILE)\n",
		"pmrep: log-create: unexpected argument 'extra' (expected LOG [SIZE])\n",
		"pmrep: recover: unexpected argument 'extra'\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(run_out(cmds[i], out, sizeof(out), true), 2);
		if (strncmp(out, want[i], strlen(want[i])) != 0)
			fail_msg("got '%s', want '%s'", out, want[i]);
	}
	/* 65 replicas to compare: the 65th is named */
	char *c[68] = { exe, "compare" };
	static char names[65][8];
	for (int i = 0; i < 65; i++) {
		snprintf(names[i], sizeof(names[i]), "r%d", i);
		c[2 + i] = names[i];
	}
	c[67] = NULL;
	assert_int_equal(run_out(c, out, sizeof(out), true), 2);
	assert_true(strncmp(out, "pmrep: compare: unexpected argument 'r64' (at most 64 REPLICAs)\n", 63) == 0);
}

/* pmrep status of a port that takes the connection and never answers (a
 * hung target) is "timed out ... no answer", exit 2 -- it read
 * "UNREACHABLE (is a pmrep-target listening there?)" -- and of a port
 * nobody listens on is still that hint. TLS on (the default): the
 * handshake's first answer never comes. */
static void
pmrep_status_tells_a_hung_target_from_a_refused_port(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char exe[PATH_MAX], out[4096], port[8], target[32], want[128];
	program("tools/pmrep", exe, sizeof(exe));
	int mute = func_mute_listener(port, sizeof(port));
	snprintf(target, sizeof(target), "127.0.0.1:%s", port);
	char *st[] = { exe, "status", target, "--key-file", keyfile,
		"--timeout", "300", NULL };
	assert_int_equal(run_out(st, out, sizeof(out), true), 2);
	snprintf(want, sizeof(want), "pmrep status: %s: timed out (", target);
	if (strncmp(out, want, strlen(want)) != 0 ||
			strstr(out, "no answer") == NULL ||
			strstr(out, "listening there") != NULL)
		fail_msg("a hung target reads: %s", out);
	close(mute);	/* now nobody listens there */
	assert_int_equal(run_out(st, out, sizeof(out), true), 2);
	snprintf(want, sizeof(want), "pmrep status: %s: peer unreachable (", target);
	if (strncmp(out, want, strlen(want)) != 0 ||
			strstr(out, "is a pmrep-target listening there?") == NULL)
		fail_msg("a refused port reads: %s", out);
}

int
main(int argc, char *argv[])
{
	(void)argc;
	func_build_root(bindir, sizeof(bindir), argv[0]);
	signal(SIGPIPE, SIG_IGN);
	pmrep_log_set_threshold(PMREP_LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(verify_identical_differing_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(tools_help, setup, teardown),
		cmocka_unit_test_setup_teardown(log_create_and_verify_a_log_source, setup, teardown),
		cmocka_unit_test_setup_teardown(no_tls_tools_match_and_each_kind_refuses_the_other, setup, teardown),
		cmocka_unit_test_setup_teardown(recover_brings_back_byte_exact_data, setup, teardown),
		cmocka_unit_test_setup_teardown(recover_refuses_an_older_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(recover_off_by_one_leaves_the_replica_usable, setup, teardown),
		cmocka_unit_test_setup_teardown(status_queries_a_target_read_only_while_a_mirror_persists, setup, teardown),
		cmocka_unit_test_setup_teardown(kv_quorum_1_of_2_keeps_acknowledging, setup, teardown),
		cmocka_unit_test_setup_teardown(kv_all_fails_the_put, setup, teardown),
		cmocka_unit_test_setup_teardown(minimal_example_mirrors_and_verifies, setup, teardown),
		cmocka_unit_test_setup_teardown(log_mirror_no_tls_and_key_id, setup, teardown),
		cmocka_unit_test_setup_teardown(log_mirror_fails_over_to_the_replica_file_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(status_and_compare_json_match_the_header, setup, teardown),
		cmocka_unit_test_setup_teardown(verify_through_mmap_identical_and_different, setup, teardown),
		cmocka_unit_test_setup_teardown(target_version, setup, teardown),
		cmocka_unit_test_setup_teardown(target_sigusr1_logs_counters_and_serves_on, setup, teardown),
		cmocka_unit_test_setup_teardown(target_sighup_keeps_the_session, setup, teardown),
		cmocka_unit_test_setup_teardown(target_failed_start_removes_only_what_it_created, setup, teardown),
		cmocka_unit_test_setup_teardown(target_errors_name_the_real_cause, setup, teardown),
		cmocka_unit_test_setup_teardown(pmrep_names_a_stray_argument, setup, teardown),
		cmocka_unit_test_setup_teardown(pmrep_status_tells_a_hung_target_from_a_refused_port, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
