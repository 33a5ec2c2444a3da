/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * func_tool.c -- a daemon of tools/ as a child of a test (func_tool.h).
 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "func.h"
#include "func_tool.h"

pid_t
func_tool_listen(char *const argv[], const char *errlog, char *port,
		size_t port_len, int *status)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		int l = errlog ? open(errlog, O_CREAT | O_WRONLY | O_APPEND, 0600) :
			open("/dev/null", O_WRONLY);
		dup2(l, 2);
		close(p[0]);
		unsetenv("PMREP_LOG_LEVEL");
		execv(argv[0], argv);
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
		if (r <= 0) {
			close(p[0]);
			int st;
			assert_int_equal(waitpid(pid, &st, 0), pid);
			*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			return -1;
		}
		n += (size_t)r;
		buf[n] = '\0';
	}
	close(p[0]);
	const char *at = strstr(buf, "listening on ");
	assert_non_null(at);
	at = strrchr(strtok((char *)at + 13, " \n"), ':');
	assert_non_null(at);
	snprintf(port, port_len, "%s", at + 1);
	assert_true(port[0] >= '0' && port[0] <= '9');
	return pid;
}
