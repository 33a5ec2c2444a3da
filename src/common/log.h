/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h -- internal logging and error recording. Every layer uses these;
 * they record the errno / message behind an error (thread-local) so that
 * pmrep_err_errno() and pmrep_err_msg() can hand them to the user.
 */
#ifndef PMREP_COMMON_LOG_H
#define PMREP_COMMON_LOG_H

#include <pmrep/base.h>

void pmrep_log_write(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *fmt, ...)
		__attribute__((format(printf, 5, 6)));

/*
 * The log context of the calling thread: a short text ("sid=... peer=...")
 * that every line this thread logs starts with, until it is set again;
 * NULL or "" clears it. Copied (at most PMREP_LOG_CTX_MAX - 1 bytes).
 * pmrep_log_ctx_get: the current one ("" none), valid until the next set.
 */
#define PMREP_LOG_CTX_MAX 128
void pmrep_log_ctx_set(const char *ctx);
const char *pmrep_log_ctx_get(void);

/* Log a message at `level` (checked against the threshold first). */
#define PMREP_LOG(level, ...) \
	pmrep_log_write((level), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define PMREP_LOG_ERR(...) PMREP_LOG(PMREP_LOG_ERROR, __VA_ARGS__)
#define PMREP_LOG_WARN(...) PMREP_LOG(PMREP_LOG_WARNING, __VA_ARGS__)
#define PMREP_LOG_INFO(...) PMREP_LOG(PMREP_LOG_INFO, __VA_ARGS__)
#define PMREP_LOG_DBG(...) PMREP_LOG(PMREP_LOG_DEBUG, __VA_ARGS__)

/*
 * A log site that writes at most one line per PMREP_LOG_RATE_PERIOD_MS:
 * for what a peer can trigger at will (a keyless flood of connection
 * attempts must not flood the log). The lines not written are counted
 * and the next line written says how many. Thread-safe (one static state
 * per site). Not for an error the caller returns to the user: a line not
 * written is not recorded for pmrep_err_msg() either.
 */
#define PMREP_LOG_RATE_PERIOD_MS 1000
struct pmrep_log_rate {
	_Atomic long long next_ms;
	_Atomic unsigned long long suppressed;
};
/* true: write the line now (*suppressed: how many were not since the last) */
int pmrep_log_rate_allow(struct pmrep_log_rate *r, unsigned long long *suppressed);
#define PMREP_LOG_RATELIMITED(level, fmt, ...) do { \
	static struct pmrep_log_rate pmrep_rate_; \
	unsigned long long pmrep_supp_; \
	if (pmrep_log_rate_allow(&pmrep_rate_, &pmrep_supp_)) { \
		if (pmrep_supp_ > 0) \
			PMREP_LOG((level), fmt " (and %llu more such lines not written since the last)", \
					##__VA_ARGS__, pmrep_supp_); \
		else \
			PMREP_LOG((level), fmt, ##__VA_ARGS__); \
	} \
} while (0)

/*
 * Record `errnum` (a positive errno, 0 for none) as the cause of the error
 * being returned; pmrep_err_errno() reports it.
 */
void pmrep_err_set_errno(int errnum);

/*
 * Log "<what>: <strerror(errnum)>" at ERROR, record errnum, and return
 * PMREP_E_PROVIDER: the one-liner for a failing rdma-core / libc call.
 */
int pmrep_err_provider(int errnum, const char *file, int line,
		const char *func, const char *what);
#define PMREP_ERR_PROVIDER(errnum, what) \
	pmrep_err_provider((errnum), __FILE__, __LINE__, __func__, (what))

/* Reset the thread's recorded errno and message (at the start of a call). */
void pmrep_err_clear(void);

#endif /* PMREP_COMMON_LOG_H */
