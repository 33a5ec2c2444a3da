/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c -- the log threshold and sinks (stderr, a file, syslog), the
 * thread-local log context and error record, and the error-code strings.
 *
 * A line of the stderr and file sinks:
 *	2026-12-02T00:46:54.123Z pmrep INFO target.c:70 session_close: sid=... peer=...: msg
 * the time: the wall clock (CLOCK_REALTIME) in UTC, ISO 8601 with
 * milliseconds. Under systemd (stderr is the journal's stream:
 * JOURNAL_STREAM names its device and inode) the time is left out (the
 * journal stamps every line itself) and the line starts with the
 * priority as "<N>" (sd-daemon(3)), so the journal records the level.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

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

/* syslog(3) priorities of the levels */
static const int level_prio[] = {
	LOG_CRIT, LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG,
};

/* the sink: sink_lock guards it against pmrep_log_set_sink / reopen */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static enum pmrep_log_sink sink_kind = PMREP_LOG_SINK_STDERR;
static unsigned sink_flags;
static int sink_fd = -1;		/* the file sink's fd */
static char *sink_path;			/* the file sink's path */
static char sink_ident[64];		/* syslog's ident (openlog keeps the pointer) */
static int journal = -1;		/* stderr is the journal: -1 not checked yet */

/* the log context of this thread (pmrep_log_ctx_set) */
static _Thread_local char log_ctx[PMREP_LOG_CTX_MAX];

void
pmrep_log_ctx_set(const char *ctx)
{
	if (ctx == NULL)
		log_ctx[0] = '\0';
	else if (ctx != log_ctx)
		snprintf(log_ctx, sizeof(log_ctx), "%s", ctx);
}

const char *
pmrep_log_ctx_get(void)
{
	return log_ctx;
}

/* stderr is the journal's stream (systemd sets JOURNAL_STREAM=dev:ino) */
static bool
stderr_is_journal(void)
{
	if (journal >= 0)
		return journal;
	journal = 0;
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	if (js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
			fstat(2, &st) == 0 && (unsigned long long)st.st_dev == dev &&
			(unsigned long long)st.st_ino == ino)
		journal = 1;
	return journal;
}

/* "2026-12-02T00:46:54.123Z " into buf (at least 32 bytes) */
static size_t
timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	int m = snprintf(buf + n, len - n, ".%03ldZ ", ts.tv_nsec / 1000000);
	return m > 0 ? n + (size_t)m : n;
}

int
pmrep_log_set_sink(enum pmrep_log_sink sink, const char *arg, unsigned flags)
{
	if ((flags & ~PMREP_LOG_SINK_F_NO_TIMESTAMP) != 0 ||
			(sink == PMREP_LOG_SINK_FILE && (arg == NULL || arg[0] == '\0')) ||
			(sink != PMREP_LOG_SINK_STDERR && sink != PMREP_LOG_SINK_FILE &&
			 sink != PMREP_LOG_SINK_SYSLOG)) {
		PMREP_LOG_ERR("invalid log sink %d (arg %s, flags %#x)", (int)sink,
				arg ? arg : "NULL", flags);
		return PMREP_E_INVAL;
	}
	int fd = -1;
	char *path = NULL;
	if (sink == PMREP_LOG_SINK_FILE) {
		fd = open(arg, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
		if (fd < 0) {
			int e = errno;
			char what[300];
			snprintf(what, sizeof(what), "opening the log file %s", arg);
			return PMREP_ERR_PROVIDER(e, what);
		}
		path = strdup(arg);
		if (path == NULL) {
			close(fd);
			PMREP_LOG_ERR("out of memory for the log file's path");
			return PMREP_E_NOMEM;
		}
	}
	pthread_mutex_lock(&sink_lock);
	if (sink_kind == PMREP_LOG_SINK_SYSLOG)
		closelog();
	if (sink_fd >= 0)
		close(sink_fd);
	free(sink_path);
	sink_fd = fd;
	sink_path = path;
	sink_kind = sink;
	sink_flags = flags;
	journal = -1;	/* stderr may be another file now: checked again */
	if (sink == PMREP_LOG_SINK_SYSLOG) {
		snprintf(sink_ident, sizeof(sink_ident), "%s",
				arg && arg[0] ? arg : "pmrep");
		openlog(sink_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	}
	pthread_mutex_unlock(&sink_lock);
	return 0;
}

int
pmrep_log_reopen(void)
{
	pthread_mutex_lock(&sink_lock);
	if (sink_kind != PMREP_LOG_SINK_FILE) {
		pthread_mutex_unlock(&sink_lock);
		return 0;
	}
	int fd = open(sink_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	int e = errno;
	if (fd >= 0) {
		close(sink_fd);
		sink_fd = fd;
	}
	pthread_mutex_unlock(&sink_lock);
	if (fd < 0)	/* logged to the old file, still open */
		return PMREP_ERR_PROVIDER(e, "reopening the log file");
	return 0;
}

void
pmrep_log_write(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;
	int saved = errno;

	size_t off = 0;
	if (log_ctx[0] != '\0') {
		int n = snprintf(msg, sizeof(msg), "%s: ", log_ctx);
		off = n > 0 && (size_t)n < sizeof(msg) ? (size_t)n : 0;
	}
	va_start(ap, fmt);
	vsnprintf(msg + off, sizeof(msg) - off, fmt, ap);
	va_end(ap);

	/* errors are remembered for pmrep_err_msg() whatever the threshold */
	if (level <= PMREP_LOG_ERROR)
		memcpy(last_msg, msg, sizeof(msg));

	if ((int)level > (int)pmrep_log_get_threshold())
		goto out;

	const char *base = strrchr(file, '/');
	base = base ? base + 1 : file;
	if (user_fn != NULL) {
		user_fn(level, file, line, func, msg, user_arg);
		goto out;
	}
	pthread_mutex_lock(&sink_lock);
	if (sink_kind == PMREP_LOG_SINK_SYSLOG) {
		syslog(level_prio[level], "%s %s:%d %s: %s", level_names[level],
				base, line, func, msg);
	} else {
		/* one write(2) per line: lines of threads never interleave */
		char out[MSG_MAX + 256];
		size_t n = 0;
		bool jr = sink_kind == PMREP_LOG_SINK_STDERR && stderr_is_journal();
		if (jr)
			n = (size_t)snprintf(out, sizeof(out), "<%d>", level_prio[level]);
		else if (!(sink_flags & PMREP_LOG_SINK_F_NO_TIMESTAMP))
			n = timestamp(out, sizeof(out));
		int m = snprintf(out + n, sizeof(out) - n, "pmrep %s %s:%d %s: %s\n",
				level_names[level], base, line, func, msg);
		if (m > 0)
			n += (size_t)m < sizeof(out) - n ? (size_t)m : sizeof(out) - n - 1;
		if (n > 0 && out[n - 1] != '\n')
			out[n - 1] = '\n';
		int fd = sink_kind == PMREP_LOG_SINK_FILE ? sink_fd : 2;
		(void) !write(fd, out, n);
	}
	pthread_mutex_unlock(&sink_lock);
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
