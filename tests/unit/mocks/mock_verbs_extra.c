/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mock_verbs_extra.c -- failure injection for the libc fd calls behind the
 * verbs provider's event fd (epoll_create1, epoll_ctl, timerfd_create,
 * timerfd_settime, eventfd). Defined here, they take the place of libc's
 * in every unit test binary and go straight to the kernel (raw syscalls),
 * unless a failure was scheduled with mock_extra_fail(): then the nth next
 * call returns -1 with errno = err. The verbs tests declare the two
 * functions below themselves (test_verbs_util.h); nothing else changes.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>

#include "mock_int.h"

enum extra_fn {
	X_EPOLL_CREATE1,
	X_EPOLL_CTL,
	X_TIMERFD_CREATE,
	X_TIMERFD_SETTIME,
	X_EVENTFD,
	X_COUNT
};

static const char *const Extra_names[X_COUNT] = {
	"epoll_create1", "epoll_ctl", "timerfd_create", "timerfd_settime",
	"eventfd",
};

/* countdown to the failing call (0: none scheduled) and its errno */
static atomic_uint Extra_nth[X_COUNT];
static atomic_int Extra_err[X_COUNT];

void mock_extra_fail(const char *fn, unsigned nth, int err);
void mock_extra_clear(void);

void
mock_extra_fail(const char *fn, unsigned nth, int err)
{
	for (int i = 0; i < X_COUNT; i++) {
		if (fn != NULL && strcmp(fn, Extra_names[i]) == 0) {
			atomic_store(&Extra_err[i], err);
			atomic_store(&Extra_nth[i], nth);
			return;
		}
	}
	mock_die("mock_extra_fail: unknown function \"%s\"", fn ? fn : "(null)");
}

void
mock_extra_clear(void)
{
	for (int i = 0; i < X_COUNT; i++)
		atomic_store(&Extra_nth[i], 0);
}

/* true when this call is the one to fail (errno set) */
static int
extra_fails(enum extra_fn f)
{
	unsigned n = atomic_load(&Extra_nth[f]);
	while (n > 0) {
		if (atomic_compare_exchange_weak(&Extra_nth[f], &n, n - 1)) {
			if (n == 1) {
				errno = atomic_load(&Extra_err[f]);
				return 1;
			}
			return 0;
		}
	}
	return 0;
}

int
epoll_create1(int flags)
{
	if (extra_fails(X_EPOLL_CREATE1))
		return -1;
	return (int)syscall(SYS_epoll_create1, flags);
}

int
epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	if (extra_fails(X_EPOLL_CTL))
		return -1;
	return (int)syscall(SYS_epoll_ctl, epfd, op, fd, event);
}

int
timerfd_create(int clockid, int flags)
{
	if (extra_fails(X_TIMERFD_CREATE))
		return -1;
	return (int)syscall(SYS_timerfd_create, clockid, flags);
}

int
timerfd_settime(int fd, int flags, const struct itimerspec *new_value,
		struct itimerspec *old_value)
{
	if (extra_fails(X_TIMERFD_SETTIME))
		return -1;
	return (int)syscall(SYS_timerfd_settime, fd, flags, new_value,
			old_value);
}

int
eventfd(unsigned int initval, int flags)
{
	if (extra_fails(X_EVENTFD))
		return -1;
	return (int)syscall(SYS_eventfd2, initval, flags);
}
