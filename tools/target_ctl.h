/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_ctl.h -- pmrep-target's control socket (target_ctl.c): a local
 * AF_UNIX stream socket, read-only, that answers "status" (one JSON line)
 * and "watch" (a JSON line per event, after the current state as "exists"
 * events); and the client side pmrep uses (target_ctl_request).
 */
#ifndef PMREP_TOOLS_TARGET_CTL_H
#define PMREP_TOOLS_TARGET_CTL_H

#include <stdio.h>

#include <pmrep/repl.h>

struct target_ctl;

/* what status reports of the target besides what the library tells */
struct target_ctl_about {
	const char *path;	/* the replica's path */
	const char *address;	/* the address listened on */
};

/*
 * Listen on `path` (mode 0600; with `group` non-NULL: 0660 and that group),
 * before the target starts (a control socket that cannot be made fails the
 * start before anything else is made). A socket at `path` that answers is
 * live: refused (1); a stale one (no listener) is replaced; any other file
 * there is refused. 0 or 1 (the reason printed on stderr). `about` must
 * outlive the ctl. Clients are taken only once a target is attached.
 */
int target_ctl_open(const char *path, const char *group,
		const struct target_ctl_about *about, struct target_ctl **ctl_ptr);

/* serve target t from now on; its events come here (pmrep_target_set_event_fn) */
void target_ctl_attach(struct target_ctl *ctl, struct pmrep_target *t);

/* its fd for poll (POLLIN: call target_ctl_process) */
int target_ctl_fd(const struct target_ctl *ctl);

/* accept, read commands, answer, write what is pending: never blocks */
void target_ctl_process(struct target_ctl *ctl);

/* close every client, remove the socket file (if still ours), free */
void target_ctl_close(struct target_ctl **ctl_ptr);

/*
 * The client: connect to the control socket at `path`, send `cmd` and
 * copy every line of the answer to `out` as it comes (flushed per line)
 * until the server closes. 0, or 1 with the reason on stderr.
 */
int target_ctl_request(const char *path, const char *cmd, FILE *out);

#endif /* PMREP_TOOLS_TARGET_CTL_H */
