/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_metrics.c -- pmrep_mirror_get_metrics: a snapshot of the mirror
 * taken under its lock, formatted by metrics.c (docs/METRICS.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "repl/metrics/metrics.h"
#include "mirror_int.h"

int
pmrep_mirror_get_metrics(const struct pmrep_mirror *mirror, char *buf,
		size_t len, size_t *needed)
{
	int ret = metrics_args(mirror, buf, len, "pmrep_mirror_get_metrics");
	if (ret)
		return ret;
	struct pmrep_mirror *m = (struct pmrep_mirror *)mirror;
	struct metrics_mirror_snap *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		PMREP_LOG_ERR("pmrep_mirror_get_metrics: out of memory");
		return PMREP_E_NOMEM;
	}
	mirror_lock(m);	/* recursive: the status calls take it again */
	memcpy(s->uuid, m->cfg.uuid, PMREP_UUID_SIZE);
	s->generation = m->cfg.generation;
	s->n = m->n;
	s->set_size = mirror_set_size(m);
	s->required = mirror_required(m);
	s->in_sync = mirror_in_sync_count(m);
	s->persists_ok = m->mx.persists_ok;
	s->persist_bytes = m->mx.persist_bytes;
	memcpy(s->persists_failed, m->mx.persists_failed,
			sizeof(s->persists_failed));
	s->in_flight = m->queue.n + m->flight.n;
	s->lat = m->mx.lat;
	for (unsigned i = 0; i < m->n; i++) {
		struct metrics_replica_snap *r = &s->r[i];
		r->idx = i;
		snprintf(r->address, sizeof(r->address), "%s:%s",
				m->r[i].addr ? m->r[i].addr : "",
				m->r[i].port ? m->r[i].port : "");
		snprintf(r->name, sizeof(r->name), "%s", m->cfg.r[i].selector);
		(void) pmrep_mirror_get_replica_status(m, i, &r->st);
		memcpy(r->failures, m->r[i].failures, sizeof(r->failures));
	}
	mirror_unlock(m);
	struct mbuf b;
	mb_init(&b, buf, len);
	metrics_format_mirror(&b, s);
	free(s);
	return metrics_out(&b, len, needed, "pmrep_mirror_get_metrics");
}
