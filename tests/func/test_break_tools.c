/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_tools.c -- bad command lines for pmrep-target and the
 * log-mirror example, run as child processes (each killed after 10 s, so a
 * hang fails the test instead of hanging it). Each bad option is a usage
 * error at once; nothing is created or served from it:
 *  - pmrep-target --size -1 used to create a 4095-byte replica and serve
 *    it as 2^64 - 1 bytes; --port 70000 listened on 4464; --timeout abc
 *    went through atoi; a FIFO as --key-file hung forever;
 *  - log-mirror --size 1M made a 1-byte log ("1M" read as 1), --size 100
 *    wrote its 4 KiB header past the mapping, --delay-ms -1 slept ~71 min
 *    per record.
 * And pmrep-target's last line names why it cannot start (it used to say
 * "provider (rdma-core / OS) call failed" for a missing file, "offset or
 * length out of range" for a file of another size); a second pmrep-target
 * on a served replica (another port) is refused; the closing statistics
 * say which persist requests the target can count. scripts/main-job.sh
 * --help prints its usage (it was taken as a build directory).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "func.h"

static char bindir[PATH_MAX - 64];	/* the build tree's root */
static char dir[64];
static char keyfile[128];
static pid_t target_pid;	/* a pmrep-target child still running, or 0 */

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-tools-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(keyfile, sizeof(keyfile), "%s/key", dir);
	func_write_file(keyfile, "tools-key-0123456789abcdef\n", 27);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (target_pid > 0) {	/* a test that failed half way */
		kill(target_pid, SIGKILL);
		waitpid(target_pid, NULL, 0);
		target_pid = 0;
	}
	assert_int_equal(func_rm_rf(dir), 0);
	return 0;
}

/* the path of a built program, or NULL when it was not built */
static const char *
program(const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", bindir, rel);
	return access(buf, X_OK) == 0 ? buf : NULL;
}

/* run argv (stdout / stderr to /dev/null) and return its exit status;
 * -1 when it had to be killed after 10 s */
static int
run(char *const argv[], long long *took_ms)
{
	long long t0 = func_now_ms();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int n = open("/dev/null", O_WRONLY);
		dup2(n, 1);
		dup2(n, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	int st = 0;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		assert_true(r >= 0);
		if (r == pid)
			break;
		if (func_now_ms() - t0 > 10000 * func_slow()) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			if (took_ms)
				*took_ms = func_now_ms() - t0;
			return -1;
		}
		usleep(10000);
	}
	if (took_ms)
		*took_ms = func_now_ms() - t0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void
target_bad_options_are_usage_errors_and_create_nothing(void **state)
{
	(void)state;
	char exe[PATH_MAX];
	if (program("tools/pmrep-target", exe, sizeof(exe)) == NULL)
		skip();
	char path[128];
	snprintf(path, sizeof(path), "%s/replica", dir);
	static const char *const size_bad[] = { "-1", " -1", "16E", "1X", "" };
	for (size_t i = 0; i < sizeof(size_bad) / sizeof(size_bad[0]); i++) {
		char *argv[] = { exe, "--path", path, "--key-file", keyfile,
			"--create", "--size", (char *)size_bad[i], "--port", "0",
			NULL };
		assert_int_equal(run(argv, NULL), 2);
	}
	static const char *const tmo_bad[] = { "abc", "0", "-5", "99999999999" };
	for (size_t i = 0; i < sizeof(tmo_bad) / sizeof(tmo_bad[0]); i++) {
		char *argv[] = { exe, "--path", path, "--key-file", keyfile,
			"--create", "--size", "1M", "--port", "0",
			"--timeout", (char *)tmo_bad[i], NULL };
		assert_int_equal(run(argv, NULL), 2);
	}
	/* a port that does not fit 16 bits: a bad configuration */
	char *argv_port[] = { exe, "--path", path, "--key-file", keyfile,
		"--create", "--size", "1M", "--port", "70000", NULL };
	assert_int_equal(run(argv_port, NULL), 1);
	/* none of these made a replica */
	assert_int_equal(access(path, F_OK), -1);

	/* a FIFO as the key file: an error within the key file's 2 s wait,
	 * not a hang */
	char fifo[128];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	char *argv_fifo[] = { exe, "--path", path, "--key-file", fifo,
		"--create", "--size", "1M", "--port", "0", NULL };
	long long took = 0;
	assert_int_equal(run(argv_fifo, &took), 1);
	assert_true(took < 5000 * func_slow());
	assert_int_equal(access(path, F_OK), -1);
}

static void
log_mirror_bad_options_are_usage_errors(void **state)
{
	(void)state;
	char exe[PATH_MAX];
	if (program("examples/log-mirror", exe, sizeof(exe)) == NULL)
		skip();
	char log[128];
	snprintf(log, sizeof(log), "%s/log", dir);
	/* an unreachable replica: the log is created first, then the
	 * mirror fails (exit 1) */
	static const char *const bad[][2] = {
		{ "--size", "100" },		/* smaller than the 4 KiB header */
		{ "--size", "-1" },
		{ "--size", "1Q" },
		{ "--delay-ms", "-1" },		/* was a sleep of ~71 min */
		{ "--delay-ms", "99999999" },
		{ "--append", "-3" },
		{ "--payload", "0" },
		{ "--payload", "65537" },
		{ "--wait-s", "-1" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { exe, "--file", log, "--size", "64K",
			"--replica", "127.0.0.1:1", "--key-file", keyfile,
			(char *)bad[i][0], (char *)bad[i][1], NULL };
		assert_int_equal(run(argv, NULL), 2);
		assert_int_equal(access(log, F_OK), -1);
	}
	/* K / M suffixes are sizes: "1M" is 1 MiB, not 1 byte */
	char *argv[] = { exe, "--file", log, "--size", "1M", "--replica",
		"127.0.0.1:1", "--key-file", keyfile, NULL };
	assert_int_equal(run(argv, NULL), 1);
	struct stat st;
	assert_int_equal(stat(log, &st), 0);
	assert_int_equal(st.st_size, 1 << 20);
	/* a log file too small for its header is refused, not written past */
	assert_int_equal(truncate(log, 100), 0);
	char *argv_v[] = { exe, "--file", log, "--verify", NULL };
	assert_int_equal(run(argv_v, NULL), 1);
	assert_int_equal(stat(log, &st), 0);
	assert_int_equal(st.st_size, 100);
}


/* run argv with file descriptor `fd` (1 or 2) into `buf`, the other to
 * /dev/null; its exit status, -1 when it had to be killed after 10 s */
static int
run_capture(char *const argv[], int fd, char *buf, size_t len)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/run.capture", dir);
	long long t0 = func_now_ms();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int n = open("/dev/null", O_WRONLY);
		int c = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		dup2(fd == 1 ? c : n, 1);
		dup2(fd == 2 ? c : n, 2);
		unsetenv("PMREP_LOG_LEVEL");	/* the tools' own default */
		execv(argv[0], argv);
		_exit(127);
	}
	int st = 0;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		assert_true(r >= 0);
		if (r == pid)
			break;
		if (func_now_ms() - t0 > 10000 * func_slow()) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(10000);
	}
	int f = open(path, O_RDONLY);
	assert_true(f >= 0);
	ssize_t n = read(f, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* the last line of `text` (without its newline) */
static const char *
last_line(char *text)
{
	size_t n = strlen(text);
	while (n > 0 && text[n - 1] == '\n')
		text[--n] = '\0';
	char *nl = strrchr(text, '\n');
	return nl ? nl + 1 : text;
}

/* start pmrep-target serving `path` (created, 1 MiB) on `port` with
 * stderr to `log`; its pid once it listens, its port in `bound` */
static pid_t
target_start(const char *exe, const char *path, const char *port,
		const char *log, char *bound, size_t bound_len)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		int l = open(log, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		dup2(l, 2);
		close(p[0]);
		unsetenv("PMREP_LOG_LEVEL");
		execl(exe, exe, "--path", path, "--key-file", keyfile,
				"--create", "--size", "1M", "--port", port,
				(char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[256] = "";
	size_t n = 0;
	long long t0 = func_now_ms();
	while (strchr(buf, '\n') == NULL) {
		assert_true(func_now_ms() - t0 < 10000 * func_slow());
		ssize_t r = read(p[0], buf + n, sizeof(buf) - 1 - n);
		assert_true(r > 0);
		n += (size_t)r;
		buf[n] = '\0';
	}
	close(p[0]);
	/* "listening on 127.0.0.1:PORT (direct mode)" */
	char *at = strstr(buf, "127.0.0.1:");
	assert_non_null(at);
	char fmt[32];
	snprintf(fmt, sizeof(fmt), "127.0.0.1:%%%zu[0-9]", bound_len - 1);
	assert_int_equal(sscanf(at, fmt, bound), 1);
	target_pid = pid;
	return pid;
}

static void
target_start_failures_name_their_cause(void **state)
{
	(void)state;
	char exe[PATH_MAX];
	if (program("tools/pmrep-target", exe, sizeof(exe)) == NULL)
		skip();
	char path[128], small[128], other[128], log[128], err[8192], expect[512];
	snprintf(path, sizeof(path), "%s/nothere", dir);
	snprintf(small, sizeof(small), "%s/small", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(log, sizeof(log), "%s/target.log", dir);

	/* a missing file without --create */
	char *a_missing[] = { exe, "--path", path, "--key-file", keyfile,
		"--port", "0", NULL };
	assert_int_equal(run_capture(a_missing, 2, err, sizeof(err)), 1);
	snprintf(expect, sizeof(expect),
			"pmrep-target: cannot serve %s: No such file or directory (add --create --size N to create it)",
			path);
	assert_string_equal(last_line(err), expect);
	assert_int_equal(access(path, F_OK), -1);

	/* an existing file of another size, with --create: not resized */
	int fd = open(small, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	static const uint8_t k[1000];
	assert_int_equal(write(fd, k, sizeof(k)), (ssize_t)sizeof(k));
	close(fd);
	char *a_small[] = { exe, "--path", small, "--key-file", keyfile,
		"--create", "--size", "1M", "--port", "0", NULL };
	assert_int_equal(run_capture(a_small, 2, err, sizeof(err)), 1);
	snprintf(expect, sizeof(expect),
			"pmrep-target: cannot serve %s: existing file is 1000 bytes, 1052672 expected (--create never resizes an existing file)",
			small);
	assert_string_equal(last_line(err), expect);
	struct stat st;
	assert_int_equal(stat(small, &st), 0);
	assert_int_equal(st.st_size, 1000);

	/* a served replica: a second target on it (any port) is refused;
	 * another replica on its port is told the port is taken */
	char port[8];
	pid_t pid = target_start(exe, path, "0", log, port, sizeof(port));
	char *a_same[] = { exe, "--path", path, "--key-file", keyfile,
		"--create", "--size", "1M", "--port", "0", NULL };
	assert_int_equal(run_capture(a_same, 2, err, sizeof(err)), 1);
	snprintf(expect, sizeof(expect),
			"pmrep-target: cannot serve %s: replica %s is already served by another target",
			path, path);
	assert_string_equal(last_line(err), expect);
	char *a_port[] = { exe, "--path", other, "--key-file", keyfile,
		"--create", "--size", "1M", "--port", port, NULL };
	assert_int_equal(run_capture(a_port, 2, err, sizeof(err)), 1);
	snprintf(expect, sizeof(expect),
			"pmrep-target: cannot serve %s: 127.0.0.1:%s: Address already in use (another pmrep-target? choose --port)",
			other, port);
	assert_string_equal(last_line(err), expect);

	/* its closing statistics: which persist requests it counts */
	kill(pid, SIGTERM);
	int wst = 0;
	assert_int_equal(waitpid(pid, &wst, 0), pid);
	target_pid = 0;
	assert_true(WIFEXITED(wst));
	assert_int_equal(WEXITSTATUS(wst), 0);
	fd = open(log, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, err, sizeof(err) - 1);
	close(fd);
	err[n > 0 ? n : 0] = '\0';
	assert_string_equal(last_line(err),
			"pmrep-target: 0 sessions accepted, 0 refused, 0 GPSPM persist requests (native / APM flushes are not seen by the target process)");

	/* the first one gone, the replica can be served again */
	pid = target_start(exe, path, "0", log, port, sizeof(port));
	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &wst, 0), pid);
	target_pid = 0;
	assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
}


/* the source tree of this build (CMakeCache.txt's CMAKE_HOME_DIRECTORY),
 * or NULL */
static const char *
source_dir(char *buf, size_t len)
{
	char cache[PATH_MAX];
	snprintf(cache, sizeof(cache), "%s/CMakeCache.txt", bindir);
	FILE *f = fopen(cache, "r");
	if (f == NULL)
		return NULL;
	static const char key[] = "CMAKE_HOME_DIRECTORY:INTERNAL=";
	char line[PATH_MAX + 64];
	const char *found = NULL;
	while (found == NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, key, sizeof(key) - 1) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		const char *v = line + sizeof(key) - 1;
		size_t vl = strlen(v);
		if (vl >= len)
			break;	/* no room: not found */
		memcpy(buf, v, vl + 1);
		found = buf;
	}
	fclose(f);
	return found;
}

/* scripts/main-job.sh --help used to be taken as a build directory */
static void
main_job_help_and_unknown_options(void **state)
{
	(void)state;
	char src[PATH_MAX - 64], script[PATH_MAX], out[8192];
	if (source_dir(src, sizeof(src)) == NULL)
		skip();
	snprintf(script, sizeof(script), "%s/scripts/main-job.sh", src);
	if (access(script, R_OK) != 0)
		skip();
	static const char *const help[] = { "--help", "-h" };
	for (size_t i = 0; i < 2; i++) {
		char *argv[] = { "/bin/bash", script, (char *)help[i], NULL };
		assert_int_equal(run_capture(argv, 1, out, sizeof(out)), 0);
		assert_non_null(strstr(out, "scripts/main-job.sh [BUILD_DIR]"));
		assert_non_null(strstr(out, "PMREP_MAIN_JOB_ADDR"));
		assert_null(strstr(out, "# "));
	}
	char *bad[] = { "/bin/bash", script, "--bogus", NULL };
	assert_int_equal(run_capture(bad, 2, out, sizeof(out)), 2);
	assert_non_null(strstr(out, "main-job.sh: unknown option '--bogus'"));
	char *two[] = { "/bin/bash", script, "a", "b", NULL };
	assert_int_equal(run_capture(two, 2, out, sizeof(out)), 2);
	/* nothing was built in a directory named after the option */
	char built[PATH_MAX + 16];
	snprintf(built, sizeof(built), "%s/--bogus", src);
	assert_int_equal(access(built, F_OK), -1);
}

int
main(int argc, char *argv[])
{
	(void)argc;
	/* tests/<this> -> the build tree's root */
	func_build_root(bindir, sizeof(bindir), argv[0]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(target_bad_options_are_usage_errors_and_create_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(log_mirror_bad_options_are_usage_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(target_start_failures_name_their_cause, setup, teardown),
		cmocka_unit_test_setup_teardown(main_job_help_and_unknown_options, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
