/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fd_wait.c -- the one place where pmrep waits for an fd with a time
 * limit; every *_wait function goes through here (pmrep_now_ms is in
 * common/clock.c).
 */
#include <errno.h>
#include <poll.h>
#include <time.h>

#include "common.h"
#include "common/testhook.h"

int
pmrep_fd_wait_readable(int fd, int timeout_ms)
{
	if (pmrep_test_hooks.fd_wait)
		return pmrep_test_hooks.fd_wait(fd, timeout_ms);
	long long deadline = timeout_ms < 0 ? -1 : pmrep_now_ms() + timeout_ms;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	for (;;) {
		int left = -1;
		if (deadline >= 0) {
			long long d = deadline - pmrep_now_ms();
			left = d > 0 ? (int)d : 0;
		}
		int ret = poll(&pfd, 1, left);
		if (ret > 0)
			return 0;
		if (ret == 0)
			return PMREP_E_TIMEOUT;
		if (errno != EINTR)
			return PMREP_ERR_PROVIDER(errno, "poll");
	}
}

int
pmrep_wait_for(int fd, int timeout_ms, int (*attempt)(void *arg), void *arg)
{
	long long deadline = timeout_ms < 0 ? -1 : pmrep_now_ms() + timeout_ms;
	for (;;) {
		int ret = attempt(arg);
		if (ret != PMREP_E_NO_EVENT)
			return ret;
		int left = -1;
		if (deadline >= 0) {
			long long d = deadline - pmrep_now_ms();
			if (d <= 0)
				return PMREP_E_TIMEOUT;
			left = (int)d;
		}
		ret = pmrep_fd_wait_readable(fd, left);
		if (ret)
			return ret;
	}
}
