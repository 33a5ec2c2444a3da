/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_ctl.h -- pmrep-target's control socket (target_ctl.c): a local
 * AF_UNIX stream socket, read-only, that answers "status" (one JSON line),
 * "metrics" (Prometheus text, then "# EOF") and "watch" (a JSON line per
 * event, after the current state as "exists" events); and the client side
 * pmrep uses (target_ctl_request, target_ctl_metrics).
 */
#ifndef PMREP_TOOLS_TARGET_CTL_H
#define PMREP_TOOLS_TARGET_CTL_H

#include <stdio.h>

#include <pmrep/repl.h>

struct target_ctl;

/* what status reports of the target besides what the library tells
 * (both copied by target_ctl_open or target_ctl_attach) */
struct target_ctl_about {
	const char *path;	/* the replica's path (target_ctl_attach's; NULL with --config) */
	const char *address;	/* the address listened on */
};

/*
 * Listen on `path` (mode 0600; with `group` non-NULL: 0660 and that group),
 * before the target starts (a control socket that cannot be made fails the
 * start before anything else is made). A socket at `path` that answers is
 * live: refused (1); a stale one (no listener) is replaced; any other file
 * there is refused. 0 or 1 (the reason printed on stderr). `about->path`
 * must last until target_ctl_attach. Clients are taken only once a
 * target is attached (or a listener set).
 */
int target_ctl_open(const char *path, const char *group,
		const struct target_ctl_about *about, struct target_ctl **ctl_ptr);

/* serve target t from now on; its events come here (pmrep_target_set_event_fn);
 * its name pmrep_target_get_name's (a path's basename), its path about's */
void target_ctl_attach(struct target_ctl *ctl, struct pmrep_target *t);

/*
 * one more replica shown (status, watch) from now on: target t, under
 * `name` (its selector; copied), file `path` (copied); its events come
 * here (pmrep_target_set_event_fn: t's callback is the ctl's until
 * target_ctl_detach). Watchers get an "added" event. Attached already:
 * nothing. 0, or 1 out of memory (said; t not shown, no callback set).
 */
int target_ctl_attach_named(struct target_ctl *ctl, struct pmrep_target *t,
		const char *name, const char *path);

/*
 * t shown no more: its event callback cleared, watchers get a "removed"
 * event. Call it BEFORE pmrep_target_delete(t) (the ctl keeps the pointer
 * and t's callback points into the ctl). Not attached, ctl or t NULL:
 * nothing.
 */
void target_ctl_detach(struct target_ctl *ctl, const struct pmrep_target *t);

/* --config: the replicas' listener (status shows its port and counters;
 * must outlive the ctl, or the ctl closed first); clients taken from now */
void target_ctl_set_listener(struct target_ctl *ctl,
		const struct pmrep_listener *l);

/* its fd for poll (POLLIN: call target_ctl_process) */
int target_ctl_fd(const struct target_ctl *ctl);

/* accept, read commands, answer, write what is pending: never blocks */
void target_ctl_process(struct target_ctl *ctl);

/* detach every target, close every client, remove the socket file (if
 * still ours), free (*ctl_ptr NULL: nothing) */
void target_ctl_close(struct target_ctl **ctl_ptr);

/*
 * The client: connect to the control socket at `path`, send `cmd` and
 * copy every line of the answer to `out` as it comes (flushed per line)
 * until the server closes. 0, or 1 with the reason on stderr.
 */
int target_ctl_request(const char *path, const char *cmd, FILE *out);

/*
 * pmrep status --control --metrics: "metrics" on `path`; the reply is
 * printed to `out` without its end line (TARGET_METRICS_EOF) only when it
 * has one (else the reason on stderr: a cut reply, an error line, a
 * target without the command). 0, or 1.
 */
int target_ctl_metrics(const char *path, FILE *out);

/*
 * pmrep watch: "watch" on `path`, its lines copied to `out`; when the
 * socket closes without the target's "stopped" event (the target was
 * killed or restarted, or dropped this client), connect again every
 * second, for as long as it takes, and copy on (the target sends the
 * current state first again). 0 after "stopped"; 1 the first connect
 * failed or `out` did (the reason on stderr).
 */
int target_ctl_watch(const char *path, FILE *out);

#endif /* PMREP_TOOLS_TARGET_CTL_H */
