/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * repl_target.c -- a replica target served by a child process (see
 * repl_target.h).
 *
 * The child is this binary re-executed as
 *   --target PATH PORT SIZE FLAGS KEY
 * FLAGS: "-", or any of 's' (staging) and 'd' (direct write to pmem); KEY
 * in hex. It prints its port on stdout (a pipe to the test) once it
 * listens and then serves the target until it is signalled.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

#define KEY_MAX 64

static char self_exe[512] = "/proc/self/exe";

/* the pids of the children running, for func_child_kill_all: taking a pid
 * out of here (compare-exchange to 0) is what entitles one to reap it */
#define NLIVE 8
static atomic_int live[NLIVE];

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* the child: never returns */
static void
child_serve(int argc, char *argv[])
{
	if (argc != 7)
		exit(2);
	const char *path = argv[2], *port = argv[3], *flags = argv[5];
	char *end;
	errno = 0;
	unsigned long long size = strtoull(argv[4], &end, 10);
	const char *hex = argv[6];
	size_t hlen = strlen(hex);
	if (errno != 0 || *end != '\0' || hlen == 0 || hlen % 2 != 0 ||
			hlen / 2 > KEY_MAX)
		exit(2);
	uint8_t key[KEY_MAX];
	for (size_t i = 0; i < hlen / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			exit(2);
		key[i] = (uint8_t)(hi << 4 | lo);
	}

	struct pmrep_target_cfg *cfg;
	struct pmrep_target *t;
	if (pmrep_target_cfg_new(&cfg) ||
			pmrep_target_cfg_set_path(cfg, path) ||
			pmrep_target_cfg_set_data_size(cfg, size, true) ||
			pmrep_target_cfg_set_address(cfg, func_addr(), port) ||
			pmrep_target_cfg_set_key(cfg, key, hlen / 2) ||
			pmrep_target_cfg_set_staging(cfg,
				strchr(flags, 's') != NULL) ||
			pmrep_target_cfg_set_direct_write_to_pmem(cfg,
				strchr(flags, 'd') != NULL) ||
			pmrep_target_new(cfg, &t))
		exit(1);
	uint16_t lport;
	pmrep_target_get_port(t, &lport);
	printf("%u\n", lport);
	fflush(stdout);
	for (;;)
		(void) pmrep_target_process(t, 100);
}

void
func_child_main(int argc, char *argv[])
{
	if (argc >= 2 && strcmp(argv[1], "--target") == 0)
		child_serve(argc, argv);
	char exe[sizeof(self_exe)];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		memcpy(self_exe, exe, (size_t)n + 1);
	}
}

static void
track(pid_t pid)
{
	for (int i = 0; i < NLIVE; i++) {
		int none = 0;
		if (atomic_compare_exchange_strong(&live[i], &none, pid))
			return;
	}
	fail_msg("more than %d target children at once", NLIVE);
}

/* take pid out of the live ones; false: someone else did (it is theirs) */
static bool
untrack(pid_t pid)
{
	for (int i = 0; i < NLIVE; i++) {
		int want = pid;
		if (atomic_compare_exchange_strong(&live[i], &want, 0))
			return true;
	}
	return false;
}

static pid_t
reap(pid_t pid, int options, int *st)
{
	pid_t w;
	while ((w = waitpid(pid, st, options)) < 0 && errno == EINTR)
		;
	return w;
}

void
func_child_start(struct func_child *c, const struct func_child_cfg *cfg,
		const char *port)
{
	assert_true(cfg->key_len >= 1 && cfg->key_len <= KEY_MAX);
	char hex[2 * KEY_MAX + 1];
	for (size_t i = 0; i < cfg->key_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", cfg->key[i]);
	char size[24];
	snprintf(size, sizeof(size), "%llu", (unsigned long long)cfg->size);
	char flags[3] = "-";
	if (cfg->staging || cfg->direct_write)
		snprintf(flags, sizeof(flags), "%s%s", cfg->staging ? "s" : "",
				cfg->direct_write ? "d" : "");
	char want[16];	/* port may be c->port */
	snprintf(want, sizeof(want), "%s", port);

	for (int attempt = 0; attempt < 50; attempt++) {
		int p[2];
		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			dup2(p[1], 1);
			execl(self_exe, self_exe, "--target", cfg->path, want,
					size, flags, hex, (char *)NULL);
			_exit(127);
		}
		close(p[1]);
		track(pid);
		char buf[16] = { 0 };
		ssize_t n;
		while ((n = read(p[0], buf, sizeof(buf) - 1)) < 0 &&
				errno == EINTR)
			;
		close(p[0]);
		if (n > 0) {
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(c->port, sizeof(c->port), "%s", buf);
			atomic_store(&c->pid, pid);
			return;
		}
		/* it ended before it listened (the port not free yet?) */
		if (untrack(pid))
			(void) reap(pid, 0, NULL);
		usleep(20000);
	}
	fail_msg("the target child did not start (%s, port %s)", cfg->path,
			want);
}

void
func_child_freeze(struct func_child *c)
{
	pid_t pid = atomic_load(&c->pid);
	assert_true(pid > 0);
	assert_int_equal(kill(pid, SIGSTOP), 0);
	int st;
	assert_int_equal(reap(pid, WUNTRACED, &st), pid);
	assert_true(WIFSTOPPED(st));
}

void
func_child_thaw(struct func_child *c)
{
	pid_t pid = atomic_load(&c->pid);
	assert_true(pid > 0);
	assert_int_equal(kill(pid, SIGCONT), 0);
}

void
func_child_kill(struct func_child *c, int sig)
{
	pid_t pid = atomic_exchange(&c->pid, 0);
	if (pid <= 0 || !untrack(pid))
		return;
	assert_int_equal(kill(pid, sig), 0);
	if (sig != SIGKILL)
		(void) kill(pid, SIGCONT);
	int st;
	assert_int_equal(reap(pid, 0, &st), pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != sig)
		fail_msg("target child %d: status 0x%x, not ended by signal %d",
				(int)pid, st, sig);
}

void
func_child_kill_all(void)
{
	for (int i = 0; i < NLIVE; i++) {
		pid_t pid = atomic_exchange(&live[i], 0);
		if (pid <= 0)
			continue;
		(void) kill(pid, SIGKILL);
		(void) reap(pid, 0, NULL);
	}
}

uint8_t *
func_replica_read(const char *path, size_t size)
{
	uint8_t *buf = malloc(size);
	assert_non_null(buf);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	if (S_ISCHR(st.st_mode)) {
		/* a device DAX cannot be read(2): map it */
		close(fd);
		struct pmrep_pmem *r = NULL;
		assert_int_equal(pmrep_pmem_open(path, 0, 0,
				PMREP_PMEM_GRANULARITY_PAGE, &r), 0);
		assert_true(pmrep_pmem_get_size(r) >=
				PMREP_REPLICA_DATA_OFFSET + size);
		memcpy(buf, (uint8_t *)pmrep_pmem_get_address(r) +
				PMREP_REPLICA_DATA_OFFSET, size);
		pmrep_pmem_close(&r);
		return buf;
	}
	assert_int_equal(pread(fd, buf, size, PMREP_REPLICA_DATA_OFFSET),
			(ssize_t)size);
	close(fd);
	return buf;
}

void
func_assert_replica_equals(struct pmrep_pmem *local, const char *path)
{
	size_t size = pmrep_pmem_get_size(local);
	uint8_t *buf = func_replica_read(path, size);
	assert_memory_equal(buf, pmrep_pmem_get_address(local), size);
	free(buf);
}

/* replicas 0 .. n-1 of `m` IN_SYNC (BEHIND turns IN_SYNC once its
 * confirmations are taken: polled meanwhile), within 20 s (scaled) */
void
func_mirror_wait_in_sync(struct pmrep_mirror *m, unsigned n)
{
	long long until = func_now_ms() + 20000LL * func_slow();
	for (unsigned i = 0; i < n; i++) {
		for (;;) {
			struct pmrep_replica_status st;
			assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
			if (st.state == PMREP_REPLICA_IN_SYNC)
				break;
			assert_true(func_now_ms() < until);
			struct pmrep_mirror_completion cc[4];
			int got;
			assert_int_equal(pmrep_mirror_poll(m, cc, 4, &got), 0);
			usleep(2000);
		}
	}
}
