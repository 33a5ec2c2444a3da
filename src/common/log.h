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

/* Log a message at `level` (checked against the threshold first). */
#define PMREP_LOG(level, ...) \
	pmrep_log_write((level), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define PMREP_LOG_ERR(...) PMREP_LOG(PMREP_LOG_ERROR, __VA_ARGS__)
#define PMREP_LOG_WARN(...) PMREP_LOG(PMREP_LOG_WARNING, __VA_ARGS__)
#define PMREP_LOG_INFO(...) PMREP_LOG(PMREP_LOG_INFO, __VA_ARGS__)
#define PMREP_LOG_DBG(...) PMREP_LOG(PMREP_LOG_DEBUG, __VA_ARGS__)

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
