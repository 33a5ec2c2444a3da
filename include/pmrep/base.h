/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/base.h -- error codes, logging and the types every pmrep object
 * shares. Included by every other public header.
 */
#ifndef PMREP_BASE_H
#define PMREP_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PMREP_API __attribute__((visibility("default")))
#else
#define PMREP_API
#endif

/*
 * Error codes. Every pmrep function returns 0 on success or one of these
 * negative values. They never collide with -errno values.
 */
enum pmrep_err {
	PMREP_E_UNKNOWN = -100000,	/* should never happen: a bug */
	PMREP_E_NOSUPP = -100001,	/* operation not supported here */
	PMREP_E_PROVIDER = -100002,	/* an rdma-core / OS call failed: pmrep_err_errno() */
	PMREP_E_NOMEM = -100003,	/* out of memory */
	PMREP_E_INVAL = -100004,	/* invalid argument */
	PMREP_E_NO_COMPLETION = -100005, /* the CQ holds no completion now */
	PMREP_E_NO_EVENT = -100006,	/* no event is pending now */
	PMREP_E_AGAIN = -100007,	/* temporary shortage (queue full); retry later */
	PMREP_E_SHARED_CHANNEL = -100008, /* the CQ's channel is shared: wait on the conn / channel */
	PMREP_E_NOT_SHARED_CHNL = -100009, /* the conn has no shared completion channel */
	PMREP_E_TIMEOUT = -100010,	/* the wait's time limit (ms) ran out */
	PMREP_E_UNREACHABLE = -100011,	/* peer unreachable / not listening after all retries; retryable */
	PMREP_E_CONN_LOST = -100012,	/* the connection is lost or closed */
	PMREP_E_REJECTED = -100013,	/* the peer rejected the connection */
	PMREP_E_BUSY = -100014,		/* object still in use (e.g. a CQ attached to a channel) */
	PMREP_E_MALFORMED = -100015,	/* a descriptor / message failed validation */
	PMREP_E_AUTH = -100016,		/* authentication failed */
	PMREP_E_PMEM = -100017,		/* libpmem2 failed: pmrep_err_msg() has its message */
	PMREP_E_RANGE = -100018,	/* offset / length outside the object */
	PMREP_E_STATE = -100019,	/* the object is not in a state that allows this */
	PMREP_E_GRANULARITY = -100020,	/* mapping cannot offer the required granularity */
	PMREP_E_DEVICE_REMOVED = -100021, /* the peer's RDMA device was removed: open a new peer */
	PMREP_E_TLS = -100022,		/* TLS: handshake failed, the peer did not speak TLS (or spoke it
					 * to a plaintext end), or a record failed authentication */
	PMREP_E_SPLIT_BRAIN = -100023,	/* the replica is claimed at this generation by another
					 * primary that did not close it cleanly: raise the generation */
	PMREP_E_MISMATCH = -100024,	/* identity mismatch: the replica, record or log belongs to
					 * another replica set (its UUID is not the one asked for) */
};

/*
 * pmrep_err_to_str -- a static, human readable string for an error code.
 * Returns "unknown error code" for a value that is not a pmrep error.
 * Thread-safe.
 */
PMREP_API const char *pmrep_err_to_str(int err);

/*
 * pmrep_err_errno -- the errno of the most recent failing rdma-core, libc
 * or libpmem2 call in this thread (the cause behind PMREP_E_PROVIDER and
 * friends), or 0 when the last error had no such cause. Thread-local.
 */
PMREP_API int pmrep_err_errno(void);

/*
 * pmrep_err_msg -- the message of the most recent error logged by pmrep in
 * this thread (including libpmem2's own message for PMREP_E_PMEM), or "" if
 * none. The string is valid until the next pmrep call in this thread.
 * Thread-local.
 */
PMREP_API const char *pmrep_err_msg(void);

/* Log levels, most severe first. */
enum pmrep_log_level {
	PMREP_LOG_DISABLED = -1,
	PMREP_LOG_FATAL = 0,
	PMREP_LOG_ERROR,
	PMREP_LOG_WARNING,
	PMREP_LOG_NOTICE,
	PMREP_LOG_INFO,
	PMREP_LOG_DEBUG,
};

/* A user log sink: called with the level, source location and the formatted message. */
typedef void pmrep_log_fn(enum pmrep_log_level level, const char *file,
		int line, const char *func, const char *msg, void *arg);

/*
 * pmrep_log_set_threshold -- messages less severe than `level` are dropped.
 * The default is PMREP_LOG_WARNING, or the value of the environment variable
 * PMREP_LOG_LEVEL (0..5) read at the first call into pmrep.
 * Errors: PMREP_E_INVAL for a level outside PMREP_LOG_DISABLED..PMREP_LOG_DEBUG.
 * Thread-safe (an atomic store).
 */
PMREP_API int pmrep_log_set_threshold(enum pmrep_log_level level);

/*
 * pmrep_log_get_threshold -- the current threshold. Thread-safe.
 */
PMREP_API enum pmrep_log_level pmrep_log_get_threshold(void);

/*
 * pmrep_log_set_function -- route log messages to `fn(…, arg)` instead of
 * stderr; NULL restores the default stderr sink. `fn` may be called from any
 * thread that calls pmrep, including pmrep's own progress threads, and must
 * not call back into pmrep. Returns 0. Not thread-safe against concurrent
 * logging: set it before other threads use pmrep.
 */
PMREP_API int pmrep_log_set_function(pmrep_log_fn *fn, void *arg);

/* Where the default log sink writes (pmrep_log_set_sink). */
enum pmrep_log_sink {
	PMREP_LOG_SINK_STDERR = 0,	/* the default */
	PMREP_LOG_SINK_FILE = 1,	/* appended to a file */
	PMREP_LOG_SINK_SYSLOG = 2,	/* syslog(3), facility LOG_DAEMON */
};
/* pmrep_log_set_sink flag: no timestamp at the start of a line */
#define PMREP_LOG_SINK_F_NO_TIMESTAMP (1u << 0)

/*
 * pmrep_log_set_sink -- where log lines go when no pmrep_log_set_function
 * sink is set. PMREP_LOG_SINK_STDERR (the default) and PMREP_LOG_SINK_FILE
 * (`arg`: the path, opened O_APPEND, created mode 0640) write one line per
 * message, with one write(2):
 * "2026-12-02T00:46:54.123Z pmrep LEVEL file.c:LINE function: message" --
 * the time is the wall clock (CLOCK_REALTIME) in UTC, ISO 8601 with
 * milliseconds; PMREP_LOG_SINK_F_NO_TIMESTAMP in `flags` leaves it out.
 * When stderr is systemd's journal stream (the environment variable
 * JOURNAL_STREAM names stderr's device and inode) the stderr sink writes
 * no timestamp (the journal stamps every line) and starts each line with
 * the syslog priority as "<N>" so that the journal records the level.
 * PMREP_LOG_SINK_SYSLOG calls openlog(`arg` or "pmrep", LOG_PID |
 * LOG_NDELAY, LOG_DAEMON) and logs each line with syslog(3) at the
 * level's priority: FATAL LOG_CRIT, ERROR LOG_ERR, WARNING LOG_WARNING,
 * NOTICE LOG_NOTICE, INFO LOG_INFO, DEBUG LOG_DEBUG. Lines about a
 * session of a target carry "sid=ID peer=ADDR:PORT: " before the message.
 * The previous sink's file is closed (closelog for syslog).
 * Errors: PMREP_E_INVAL (an unknown sink or flag, FILE without a path),
 * PMREP_E_PROVIDER (the file cannot be opened: pmrep_err_errno), PMREP_E_NOMEM.
 * Thread-safe (lines being written finish on the old sink first).
 */
PMREP_API int pmrep_log_set_sink(enum pmrep_log_sink sink, const char *arg,
		unsigned flags);

/*
 * pmrep_log_reopen -- the file sink opens its path again (after a log
 * rotation renamed the file) and writes there from now on; other sinks:
 * nothing to do. Errors: PMREP_E_PROVIDER (the path cannot be opened; the
 * old file stays in use: pmrep_err_errno). Thread-safe.
 */
PMREP_API int pmrep_log_reopen(void);

#ifdef __cplusplus
}
#endif
#endif /* PMREP_BASE_H */
