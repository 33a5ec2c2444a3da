/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_metrics.h -- pmrep-target's metrics (target_metrics.c): the text
 * the library formats (pmrep_listener_get_metrics / pmrep_target_get_metrics,
 * Prometheus text format 0.0.4, docs/METRICS.md), for the control socket's
 * `metrics` command and for --metrics-file (node_exporter's textfile
 * collector: written to PATH.tmp, renamed over PATH).
 */
#ifndef PMREP_TOOLS_TARGET_METRICS_H
#define PMREP_TOOLS_TARGET_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include <pmrep/repl.h>

/* the control socket's reply ends with this line (a comment to a
 * Prometheus parser): a client that does not see it got a cut reply */
#define TARGET_METRICS_EOF "# EOF\n"

/*
 * The metrics of listener `l` (--config) or, l NULL, of target `t`: a
 * malloc'ed NUL-terminated text, its length in *len; NULL when neither is
 * given or out of memory (said on stderr).
 */
char *target_metrics_text(const struct pmrep_listener *l,
		const struct pmrep_target *t, size_t *len);

/* --metrics-file PATH, refreshed every interval_ms */
struct target_metrics_file {
	const char *path;	/* NULL: none */
	int interval_ms;
	long long next_ms;	/* monotonic: the next refresh */
	bool failing;		/* the last write failed (said once per streak) */
};

/*
 * Write the metrics file when its refresh is due (or `now`: at once, e.g.
 * at a clean stop): PATH.tmp in PATH's directory (mode 0644 whatever the
 * umask), renamed over PATH, so that a reader sees the old file or the new
 * one, whole. A failure is said on stderr (once until a write succeeds
 * again) and never stops the target. Nothing when mf->path is NULL.
 */
void target_metrics_file_tick(struct target_metrics_file *mf,
		const struct pmrep_listener *l, const struct pmrep_target *t,
		bool now);

#endif /* PMREP_TOOLS_TARGET_METRICS_H */
