/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_serve.h -- what pmrep-target's two ways of serving share
 * (target_serve.c): one replica (--path, in pmrep-target.c's main) and
 * the replicas of a --config file on one listener (target_listener.c).
 */
#ifndef PMREP_TOOLS_TARGET_SERVE_H
#define PMREP_TOOLS_TARGET_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include <pmrep/repl.h>

/*
 * the last line when the target cannot start: the cause in the words of
 * the command line (pmrep_target_new's code alone says "provider call
 * failed" for a missing file, "out of range" for a file of another size)
 */
void serve_report_start_failure(int ret, const char *path, uint64_t size,
		bool create, const char *addr, const char *port);
/* one line of the target's counters on stderr; `live` (SIGUSR1): with
 * the sessions in use now */
void serve_print_stats(struct pmrep_target *t, bool live, const char *who);
/* one turn of a poll loop: wait up to 200 ms (handshake deadlines are
 * checked by the caller's process call) for `fd` or a signal on `sfd`:
 * 0 with *signo the signal taken (0: none), -1 when poll failed (said) */
int serve_poll_turn(int sfd, int fd, int ctl_fd, int *signo, bool *ctl_ready);
/* a line to the service manager (systemd's sd_notify: READY=1,
 * RELOADING=1, STOPPING=1, STATUS=...); nothing without NOTIFY_SOCKET or
 * in a build without libsystemd */
__attribute__((format(printf, 1, 2)))
void serve_notify(const char *fmt, ...);
/* RELOADING=1 with the time systemd 253+ wants beside it */
void serve_notify_reloading(void);
/* the log (stderr, fd 2) goes to `path` from now on, appended: 0 or -1
 * (said why; stderr as it was) */
int serve_log_reopen(const char *path);

#endif /* PMREP_TOOLS_TARGET_SERVE_H */
