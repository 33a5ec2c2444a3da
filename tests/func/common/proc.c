/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proc.c -- tests that run the tools as child processes (proc.h).
 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "func.h"
#include "proc.h"

void
func_slurp(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
}

int
func_count_of(const char *s, const char *needle)
{
	int n = 0;
	for (const char *at = s; (at = strstr(at, needle)) != NULL; at++)
		n++;
	return n;
}

void
func_wait_text(const char *path, const char *needle, int times)
{
	static char text[65536];
	long long t0 = func_now_ms();
	for (;;) {
		func_slurp(path, text, sizeof(text));
		if (func_count_of(text, needle) >= times)
			return;
		if (func_now_ms() - t0 > 10000 * func_slow())
			fail_msg("%s: no '%s' (x%d) in:\n%s", path, needle, times, text);
		usleep(20000);
	}
}

int
func_run_capture(char *const argv[], const char *tmp, char *out,
		size_t out_len, int limit_ms)
{
	long long t0 = func_now_ms();
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		int o = open(tmp, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		dup2(o, 1);
		dup2(o, 2);
		unsetenv("PMREP_LOG_LEVEL");
		execv(argv[0], argv);
		_exit(127);
	}
	int st = 0;
	for (;;) {
		pid_t r = waitpid(c, &st, WNOHANG);
		assert_true(r >= 0);
		if (r == c)
			break;
		if (func_now_ms() - t0 > (long long)limit_ms * func_slow()) {
			kill(c, SIGKILL);
			waitpid(c, &st, 0);
			return -1;
		}
		usleep(10000);
	}
	func_slurp(tmp, out, out_len);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void
func_read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	long long t0 = func_now_ms();
	while (strchr(buf, '\n') == NULL) {
		struct pollfd pf = { fd, POLLIN, 0 };
		assert_true(func_now_ms() - t0 < 10000 * func_slow());
		assert_true(n + 1 < len);
		if (poll(&pf, 1, 100) <= 0)
			continue;
		ssize_t r = read(fd, buf + n, len - 1 - n);
		assert_true(r > 0);
		n += (size_t)r;
		buf[n] = '\0';
	}
}
