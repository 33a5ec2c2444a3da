/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * func_tool.h -- a daemon of tools/ (pmrep-target) as a child process of a
 * test: started, and waited for until it says it listens.
 */
#ifndef PMREP_FUNC_TOOL_H
#define PMREP_FUNC_TOOL_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Run argv[0] with argv (NULL-terminated), PMREP_LOG_LEVEL unset, stdout
 * into a pipe, stderr appended to `errlog` (NULL: /dev/null), and read its
 * stdout until the first line (at most 10 s * func_slow(), else the test
 * fails). A line naming "ADDR:PORT" after "listening on ": the port goes
 * into `port` and the pid is returned. A child that ends before it says
 * anything is reaped: -1 and *status its exit status (-1: not an exit).
 */
pid_t func_tool_listen(char *const argv[], const char *errlog, char *port,
		size_t port_len, int *status);

#endif /* PMREP_FUNC_TOOL_H */
