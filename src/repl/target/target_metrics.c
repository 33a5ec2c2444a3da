/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_metrics.c -- pmrep_target_get_metrics and
 * pmrep_listener_get_metrics: a snapshot of a target, or of each replica
 * of a listener, taken in the thread that drives it, formatted by
 * metrics.c (docs/METRICS.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repl/metrics/metrics.h"
#include "target_int.h"

static void
target_snap(const struct pmrep_target *t, struct metrics_target_snap *x)
{
	memset(x, 0, sizeof(*x));
	snprintf(x->name, sizeof(x->name), "%s", t->name);
	memcpy(x->uuid, t->hdr.uuid, PMREP_UUID_SIZE);
	x->generation = t->hdr.generation;
	x->data_size = t->hdr.data_size;
	x->mode = t->mode;
	x->poisoned = t->poisoned;
	(void) pmrep_target_get_stats(t, &x->st);
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++) {
		switch (t->s[i].state) {
		case S_FREE: break;
		case S_WAIT_AUTH: x->by_state[PMREP_TARGET_SESSION_HANDSHAKE]++; break;
		case S_ATTACHING: x->by_state[PMREP_TARGET_SESSION_ATTACHING]++; break;
		case S_ACTIVE: x->by_state[PMREP_TARGET_SESSION_ACTIVE]++; break;
		case S_QUERY: x->by_state[PMREP_TARGET_SESSION_QUERY]++; break;
		case S_CLOSING: x->by_state[PMREP_TARGET_SESSION_CLOSING]++; break;
		}
	}
	memcpy(x->refusals, t->mx.refusals, sizeof(x->refusals));
	x->persist_bytes = t->mx.persist_bytes;
	x->lat = t->mx.lat;
}

int
pmrep_target_get_metrics(const struct pmrep_target *target, char *buf,
		size_t len, size_t *needed)
{
	int ret = metrics_args(target, buf, len, "pmrep_target_get_metrics");
	if (ret)
		return ret;
	struct metrics_target_snap *x = malloc(sizeof(*x));
	if (x == NULL) {
		PMREP_LOG_ERR("pmrep_target_get_metrics: out of memory");
		return PMREP_E_NOMEM;
	}
	target_snap(target, x);
	struct mbuf b;
	mb_init(&b, buf, len);
	metrics_format_targets(&b, x, 1, NULL);
	free(x);
	return metrics_out(&b, len, needed, "pmrep_target_get_metrics");
}

int
pmrep_listener_get_metrics(const struct pmrep_listener *listener, char *buf,
		size_t len, size_t *needed)
{
	int ret = metrics_args(listener, buf, len, "pmrep_listener_get_metrics");
	if (ret)
		return ret;
	unsigned n = listener->ntargets;
	struct metrics_target_snap *x = calloc(n > 0 ? n : 1, sizeof(*x));
	if (x == NULL) {
		PMREP_LOG_ERR("pmrep_listener_get_metrics: out of memory");
		return PMREP_E_NOMEM;
	}
	unsigned i = 0;
	for (const struct pmrep_target *t = listener->targets; t != NULL && i < n;
			t = t->next)
		target_snap(t, &x[i++]);
	struct pmrep_listener_stats ls;
	(void) pmrep_listener_get_stats(listener, &ls);
	struct mbuf b;
	mb_init(&b, buf, len);
	metrics_format_targets(&b, x, i, &ls);
	free(x);
	return metrics_out(&b, len, needed, "pmrep_listener_get_metrics");
}
