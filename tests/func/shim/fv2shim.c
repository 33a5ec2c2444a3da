/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fv2shim.c -- an LD_PRELOAD library for test_failover_v2's child
 * processes (the pmrep tool, the test binary as a writer). Each override
 * acts only when its variable is set; otherwise it is the libc call:
 *  - PMREP_TEST_CLOCK_SHIFT_S=N: clock_gettime(CLOCK_REALTIME) is N
 *    seconds off (N may be negative): a node whose wall clock disagrees
 *    (what libpmrep reads through its PLT: the persist sequence base at
 *    pmrep_mirror_new, the admission window, the log's timestamps);
 *  - PMREP_TEST_STOP_AT=TEXT: the first write(2) to fd 2 holding TEXT (a
 *    library log line: one write per line) is written, then the process
 *    stops itself (SIGSTOP): the test, waiting with WUNTRACED, knows the
 *    child is exactly past that line and acts (SIGCONT, SIGKILL) with no
 *    race against the child's next step.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int
clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	if (real == NULL)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT,
				"clock_gettime");
	int ret = real(id, ts);
	if (ret == 0 && id == CLOCK_REALTIME) {
		const char *s = getenv("PMREP_TEST_CLOCK_SHIFT_S");
		if (s != NULL)
			ts->tv_sec += (time_t)strtoll(s, NULL, 10);
	}
	return ret;
}

ssize_t
write(int fd, const void *buf, size_t len)
{
	static ssize_t (*real)(int, const void *, size_t);
	static atomic_int stopped;
	if (real == NULL)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT,
				"write");
	ssize_t ret = real(fd, buf, len);
	const char *pat = fd == 2 ? getenv("PMREP_TEST_STOP_AT") : NULL;
	if (pat != NULL && pat[0] != '\0' &&
			memmem(buf, len, pat, strlen(pat)) != NULL &&
			!atomic_exchange(&stopped, 1))
		raise(SIGSTOP);
	return ret;
}
