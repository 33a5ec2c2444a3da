/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c -- the log threshold and sink, the thread-local error record and
 * the error-code strings.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define MSG_MAX 512

static atomic_int threshold = PMREP_LOG_WARNING;
static atomic_int threshold_from_env_done;
static pmrep_log_fn *user_fn;
static void *user_arg;

static _Thread_local int last_errno;
static _Thread_local char last_msg[MSG_MAX];

static void
threshold_from_env(void)
{
	if (atomic_exchange(&threshold_from_env_done, 1))
		return;
	const char *s = getenv("PMREP_LOG_LEVEL");
	if (s == NULL || s[0] < '0' || s[0] > '5' || s[1] != '\0')
		return;
	atomic_store(&threshold, s[0] - '0');
}

int
pmrep_log_set_threshold(enum pmrep_log_level level)
{
	if (level < PMREP_LOG_DISABLED || level > PMREP_LOG_DEBUG)
		return PMREP_E_INVAL;
	atomic_store(&threshold_from_env_done, 1);
	atomic_store(&threshold, (int)level);
	return 0;
}

enum pmrep_log_level
pmrep_log_get_threshold(void)
{
	threshold_from_env();
	return (enum pmrep_log_level)atomic_load(&threshold);
}

int
pmrep_log_set_function(pmrep_log_fn *fn, void *arg)
{
	user_fn = fn;
	user_arg = arg;
	return 0;
}

static const char *const level_names[] = {
	"FATAL", "ERROR", "WARNING", "NOTICE", "INFO", "DEBUG",
};

void
pmrep_log_write(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	/* errors are remembered for pmrep_err_msg() whatever the threshold */
	if (level <= PMREP_LOG_ERROR)
		memcpy(last_msg, msg, sizeof(msg));

	if ((int)level > (int)pmrep_log_get_threshold())
		goto out;

	if (user_fn != NULL) {
		user_fn(level, file, line, func, msg, user_arg);
	} else {
		const char *base = strrchr(file, '/');
		fprintf(stderr, "pmrep %s %s:%d %s: %s\n",
				level_names[level], base ? base + 1 : file,
				line, func, msg);
	}
out:
	errno = saved;
}

void
pmrep_err_set_errno(int errnum)
{
	last_errno = errnum;
}

int
pmrep_err_provider(int errnum, const char *file, int line, const char *func,
		const char *what)
{
	char buf[128];

	pmrep_err_set_errno(errnum);
	/* GNU strerror_r returns the string it chose */
	const char *s = strerror_r(errnum, buf, sizeof(buf));
	pmrep_log_write(PMREP_LOG_ERROR, file, line, func, "%s: %s (errno %d)",
			what, s, errnum);
	return PMREP_E_PROVIDER;
}

void
pmrep_err_clear(void)
{
	last_errno = 0;
	last_msg[0] = '\0';
}

int
pmrep_err_errno(void)
{
	return last_errno;
}

const char *
pmrep_err_msg(void)
{
	return last_msg;
}

const char *
pmrep_err_to_str(int err)
{
	switch (err) {
	case 0: return "success";
	case PMREP_E_UNKNOWN: return "unknown error (a bug)";
	case PMREP_E_NOSUPP: return "not supported";
	case PMREP_E_PROVIDER: return "provider (rdma-core / OS) call failed";
	case PMREP_E_NOMEM: return "out of memory";
	case PMREP_E_INVAL: return "invalid argument";
	case PMREP_E_NO_COMPLETION: return "no completion available";
	case PMREP_E_NO_EVENT: return "no event available";
	case PMREP_E_AGAIN: return "temporary shortage, try again";
	case PMREP_E_SHARED_CHANNEL: return "completion channel is shared";
	case PMREP_E_NOT_SHARED_CHNL: return "completion channel is not shared";
	case PMREP_E_TIMEOUT: return "timed out";
	case PMREP_E_UNREACHABLE: return "peer unreachable";
	case PMREP_E_CONN_LOST: return "connection lost";
	case PMREP_E_REJECTED: return "connection rejected";
	case PMREP_E_BUSY: return "object still in use";
	case PMREP_E_MALFORMED: return "malformed descriptor or message";
	case PMREP_E_AUTH: return "authentication failed";
	case PMREP_E_PMEM: return "libpmem2 error";
	case PMREP_E_RANGE: return "offset or length out of range";
	case PMREP_E_STATE: return "invalid state for this operation";
	case PMREP_E_GRANULARITY: return "granularity not supported by the mapping";
	case PMREP_E_DEVICE_REMOVED: return "the RDMA device was removed";
	case PMREP_E_TLS: return "TLS: handshake failed / peer did not speak TLS / record authentication failed";
	case PMREP_E_SPLIT_BRAIN: return "split brain: the replica is claimed at this generation by another primary";
	case PMREP_E_MISMATCH: return "replica-set UUID mismatch: it belongs to another replica set";
	default: return "unknown error code";
	}
}

long long pmrep_now_ms(void);	/* clock.c */

int
pmrep_log_rate_allow(struct pmrep_log_rate *r, unsigned long long *suppressed)
{
	long long now = pmrep_now_ms();
	long long next = atomic_load(&r->next_ms);
	if (now < next || !atomic_compare_exchange_strong(&r->next_ms, &next,
			now + PMREP_LOG_RATE_PERIOD_MS)) {
		atomic_fetch_add(&r->suppressed, 1);
		return 0;
	}
	*suppressed = atomic_exchange(&r->suppressed, 0);
	return 1;
}
