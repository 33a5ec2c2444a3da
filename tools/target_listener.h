/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_listener.h -- pmrep-target --config FILE (target_listener.c):
 * the replicas the file names, served on one listener, SIGHUP applying
 * the file's changes.
 */
#ifndef PMREP_TOOLS_TARGET_LISTENER_H
#define PMREP_TOOLS_TARGET_LISTENER_H

#include <signal.h>

#include "target_metrics.h"

/*
 * pmrep-target --config FILE: its exit code (0 a clean stop, 1 a failure,
 * 2 a malformed FILE). log_file, control, control_group: the command
 * line's (over the file's log-file, control and control-group; NULL: the
 * file's); mf: --metrics-file / --metrics-interval (over the file's);
 * mask: the signals blocked, taken on a signalfd.
 */
int listener_main(const char *file, const char *log_file, const char *control,
		const char *control_group, const struct target_metrics_file *mf,
		const sigset_t *mask);

#endif /* PMREP_TOOLS_TARGET_LISTENER_H */
