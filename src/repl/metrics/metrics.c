/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.c -- pmrep's metrics in the Prometheus text exposition format
 * 0.0.4 (docs/METRICS.md): the formatter (one module for the mirror's and
 * the targets' metrics) and the argument check and output of the public
 * calls, which snapshot a mirror (mirror_metrics.c), a target or a
 * listener's replicas (target_metrics.c) and format them here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "metrics.h"

/* ------------------------------------------------------------ the text */

void
mb_init(struct mbuf *b, char *buf, size_t cap)
{
	b->p = buf;
	b->cap = buf != NULL ? cap : 0;
	b->len = 0;
}

void
mb_put(struct mbuf *b, const char *s, size_t n)
{
	if (b->len < b->cap) {
		size_t room = b->cap - b->len;
		memcpy(b->p + b->len, s, n < room ? n : room);
	}
	b->len += n;
}

void
mb_printf(struct mbuf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* every caller's line is short: a longer one is cut, never overrun */
	mb_put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

size_t
mb_finish(struct mbuf *b)
{
	if (b->len < b->cap)
		b->p[b->len] = '\0';
	return b->len + 1;
}

/* s escaped for a HELP line (quote false) or a label value (true) */
static void
mb_escaped(struct mbuf *b, const char *s, bool quote)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			mb_put(b, "\\\\", 2);
		else if (*s == '\n')
			mb_put(b, "\\n", 2);
		else if (*s == '"' && quote)
			mb_put(b, "\\\"", 2);
		else
			mb_put(b, s, 1);
	}
}

void
mb_family(struct mbuf *b, const char *name, const char *type, const char *help)
{
	mb_printf(b, "# HELP %s ", name);
	mb_escaped(b, help, false);
	mb_printf(b, "\n# TYPE %s %s\n", name, type);
}

void
ml_init(struct mlabels *l)
{
	l->n = 0;
	l->s[0] = '\0';
	l->truncated = false;
}

void
ml_add(struct mlabels *l, const char *key, const char *value)
{
	char tmp[MLABELS_MAX];
	struct mbuf b;
	mb_init(&b, tmp, sizeof(tmp));
	if (l->n > 0)
		mb_put(&b, ",", 1);
	mb_printf(&b, "%s=\"", key);
	mb_escaped(&b, value != NULL ? value : "", true);
	mb_put(&b, "\"", 1);
	if (l->n + b.len >= sizeof(l->s)) {
		/* never a half label: the whole pair is left out */
		l->truncated = true;
		return;
	}
	memcpy(l->s + l->n, tmp, b.len);
	l->n += b.len;
	l->s[l->n] = '\0';
}

void
ml_add_u(struct mlabels *l, const char *key, unsigned long long v)
{
	char tmp[24];
	snprintf(tmp, sizeof(tmp), "%llu", v);
	ml_add(l, key, tmp);
}

/* name{labels[,k="v"]} and the space before the value */
static void
mb_series(struct mbuf *b, const char *name, const struct mlabels *l,
		const char *k, const char *v)
{
	mb_put(b, name, strlen(name));
	bool any = l != NULL && l->n > 0;
	if (any || k != NULL) {
		mb_put(b, "{", 1);
		if (any)
			mb_put(b, l->s, l->n);
		if (k != NULL) {
			if (any)
				mb_put(b, ",", 1);
			mb_printf(b, "%s=\"", k);
			mb_escaped(b, v, true);
			mb_put(b, "\"", 1);
		}
		mb_put(b, "}", 1);
	}
	mb_put(b, " ", 1);
}

void
mb_sample_u64(struct mbuf *b, const char *name, const struct mlabels *l,
		const char *k, const char *v, uint64_t value)
{
	mb_series(b, name, l, k, v);
	mb_printf(b, "%llu\n", (unsigned long long)value);
}

void
mb_sample_i64(struct mbuf *b, const char *name, const struct mlabels *l,
		const char *k, const char *v, int64_t value)
{
	mb_series(b, name, l, k, v);
	mb_printf(b, "%lld\n", (long long)value);
}

/* ----------------------------------------------------------- histogram */

static const struct {
	uint64_t ns;
	const char *le;
} lat_bounds[METRICS_LAT_BOUNDS] = {
	{ 50000ull, "5e-05" }, { 100000ull, "0.0001" },
	{ 250000ull, "0.00025" }, { 500000ull, "0.0005" },
	{ 1000000ull, "0.001" }, { 2500000ull, "0.0025" },
	{ 5000000ull, "0.005" }, { 10000000ull, "0.01" },
	{ 25000000ull, "0.025" }, { 50000000ull, "0.05" },
	{ 100000000ull, "0.1" }, { 250000000ull, "0.25" },
	{ 500000000ull, "0.5" }, { 1000000000ull, "1" },
	{ 2500000000ull, "2.5" }, { 5000000000ull, "5" },
};

uint64_t
metrics_hist_bound_ns(unsigned i)
{
	return i < METRICS_LAT_BOUNDS ? lat_bounds[i].ns : UINT64_MAX;
}

const char *
metrics_hist_bound_str(unsigned i)
{
	return i < METRICS_LAT_BOUNDS ? lat_bounds[i].le : "+Inf";
}

void
metrics_hist_observe(struct metrics_hist *h, uint64_t ns)
{
	unsigned i = 0;
	while (i < METRICS_LAT_BOUNDS && ns > lat_bounds[i].ns)
		i++;
	h->b[i]++;
	h->count++;
	h->sum_ns += ns;
}

void
mb_histogram(struct mbuf *b, const char *name, const struct mlabels *l,
		const struct metrics_hist *h)
{
	char n[128];
	uint64_t cum = 0;
	snprintf(n, sizeof(n), "%s_bucket", name);
	for (unsigned i = 0; i <= METRICS_LAT_BOUNDS; i++) {
		cum += h->b[i];
		mb_sample_u64(b, n, l, "le", metrics_hist_bound_str(i), cum);
	}
	snprintf(n, sizeof(n), "%s_sum", name);
	mb_series(b, n, l, NULL, NULL);
	mb_printf(b, "%llu.%09llu\n",
			(unsigned long long)(h->sum_ns / 1000000000ull),
			(unsigned long long)(h->sum_ns % 1000000000ull));
	snprintf(n, sizeof(n), "%s_count", name);
	/* +Inf == _count by construction: the count is the buckets' sum */
	mb_sample_u64(b, n, l, NULL, NULL, cum);
}

/* ----------------------------------------------------- errors, reasons */

static const char *const err_labels[METRICS_NERR] = {
	"unknown", "nosupp", "provider", "nomem", "inval", "no_completion",
	"no_event", "again", "shared_channel", "not_shared_chnl", "timeout",
	"unreachable", "conn_lost", "rejected", "busy", "malformed", "auth",
	"pmem", "range", "state", "granularity", "device_removed", "tls",
	"split_brain", "mismatch", "other",
};

unsigned
metrics_err_index(int err)
{
	long long i = -(long long)err + (long long)PMREP_E_UNKNOWN;
	if (err > PMREP_E_UNKNOWN || i < 0 || i >= METRICS_NERR - 1)
		return METRICS_NERR - 1;
	return (unsigned)i;
}

const char *
metrics_err_label(unsigned idx)
{
	return idx < METRICS_NERR ? err_labels[idx] : "other";
}

static const char *const refusal_labels[MR_N_] = {
	[MR_ADMISSION_AUTH] = "admission_auth",
	[MR_ADMISSION_REPLAY] = "admission_replay",
	[MR_ADMISSION_BUSY] = "admission_busy",
	[MR_ADMISSION_ERROR] = "admission_error",
	[MR_MALFORMED] = "malformed",
	[MR_TLS] = "tls",
	[MR_TIMEOUT] = "timeout",
	[MR_AUTH] = "auth",
	[MR_SIZE] = "size",
	[MR_UUID] = "uuid",
	[MR_STALE_GENERATION] = "stale_generation",
	[MR_SPLIT_BRAIN] = "split_brain",
	[MR_NO_REPLICA] = "no_replica",
	[MR_STATE] = "state",
	[MR_RANGE] = "range",
	[MR_INTERNAL] = "internal",
};

const char *
metrics_refusal_label(enum metrics_refusal r)
{
	return (unsigned)r < MR_N_ ? refusal_labels[r] : "other";
}

void
metrics_uuid_hex(const uint8_t *u, char out[2 * PMREP_UUID_SIZE + 1])
{
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", u[i]);
}

/* ------------------------------------------------------------- mirror */

static const struct {
	enum pmrep_replica_state st;
	const char *label;
} replica_states[] = {
	{ PMREP_REPLICA_CONNECTED, "connected" },
	{ PMREP_REPLICA_SYNCING, "syncing" },
	{ PMREP_REPLICA_IN_SYNC, "in_sync" },
	{ PMREP_REPLICA_DEGRADED, "degraded" },
	{ PMREP_REPLICA_FAILED, "failed" },
	{ PMREP_REPLICA_BEHIND, "behind" },
	{ PMREP_REPLICA_REMOVED, "removed" },
};
#define N_REPLICA_STATES (sizeof(replica_states) / sizeof(replica_states[0]))

static void
replica_labels(struct mlabels *l, const char *set,
		const struct metrics_replica_snap *r)
{
	ml_init(l);
	ml_add(l, "set", set);
	ml_add_u(l, "replica", r->idx);
	ml_add(l, "address", r->address);
	ml_add(l, "name", r->name);
}

/* one gauge or counter per replica slot, from its status field */
#define PER_REPLICA(b, s, set, name, type, help, expr) do { \
	mb_family((b), (name), (type), (help)); \
	for (unsigned i_ = 0; i_ < (s)->n; i_++) { \
		const struct metrics_replica_snap *r = &(s)->r[i_]; \
		struct mlabels l_; \
		replica_labels(&l_, (set), r); \
		mb_sample_u64((b), (name), &l_, NULL, NULL, (uint64_t)(expr)); \
	} \
} while (0)

void
metrics_format_mirror(struct mbuf *b, const struct metrics_mirror_snap *s)
{
	char set[2 * PMREP_UUID_SIZE + 1];
	metrics_uuid_hex(s->uuid, set);
	struct mlabels ms;
	ml_init(&ms);
	ml_add(&ms, "set", set);

	mb_family(b, "pmrep_mirror_generation", "gauge",
			"The replica set's generation this mirror writes.");
	mb_sample_u64(b, "pmrep_mirror_generation", &ms, NULL, NULL, s->generation);
	mb_family(b, "pmrep_mirror_replicas", "gauge",
			"The set size n: replicas mirrored to (not removed; joining ones included).");
	mb_sample_u64(b, "pmrep_mirror_replicas", &ms, NULL, NULL, s->set_size);
	mb_family(b, "pmrep_mirror_required_replicas", "gauge",
			"Replicas that must confirm a persist (the quorum k, or every replica).");
	mb_sample_u64(b, "pmrep_mirror_required_replicas", &ms, NULL, NULL, s->required);
	mb_family(b, "pmrep_mirror_in_sync_replicas", "gauge",
			"Replicas in sync now (confirming persists).");
	mb_sample_u64(b, "pmrep_mirror_in_sync_replicas", &ms, NULL, NULL, s->in_sync);

	mb_family(b, "pmrep_mirror_persists_total", "counter",
			"Persist requests (length > 0) whose outcome is final, by result: ok or the error (PMREP_E_* in lower case).");
	mb_sample_u64(b, "pmrep_mirror_persists_total", &ms, "result", "ok",
			s->persists_ok);
	for (unsigned e = 0; e < METRICS_NERR; e++) {
		bool always = e == metrics_err_index(PMREP_E_CONN_LOST) ||
			e == metrics_err_index(PMREP_E_TIMEOUT) ||
			e == metrics_err_index(PMREP_E_PROVIDER);
		if (always || s->persists_failed[e] > 0)
			mb_sample_u64(b, "pmrep_mirror_persists_total", &ms,
					"result", metrics_err_label(e),
					s->persists_failed[e]);
	}
	mb_family(b, "pmrep_mirror_persisted_bytes_total", "counter",
			"Bytes of the persist requests that completed ok.");
	mb_sample_u64(b, "pmrep_mirror_persisted_bytes_total", &ms, NULL, NULL,
			s->persist_bytes);
	mb_family(b, "pmrep_mirror_persists_in_flight", "gauge",
			"Persist requests submitted and not complete (queued or posted).");
	mb_sample_u64(b, "pmrep_mirror_persists_in_flight", &ms, NULL, NULL,
			s->in_flight);
	mb_family(b, "pmrep_mirror_persist_latency_seconds", "histogram",
			"Persist requests from submission to a final outcome (any result), seconds.");
	mb_histogram(b, "pmrep_mirror_persist_latency_seconds", &ms, &s->lat);

	mb_family(b, "pmrep_mirror_replica_state", "gauge",
			"1 for the replica's state, 0 for the others.");
	for (unsigned i = 0; i < s->n; i++) {
		struct mlabels l;
		replica_labels(&l, set, &s->r[i]);
		for (unsigned k = 0; k < N_REPLICA_STATES; k++)
			mb_sample_u64(b, "pmrep_mirror_replica_state", &l,
					"state", replica_states[k].label,
					s->r[i].st.state == replica_states[k].st);
	}
	PER_REPLICA(b, s, set, "pmrep_mirror_replica_lag_bytes", "gauge",
			"Bytes the replica lacks: its out-of-sync regions, and (behind) completed persists it has not confirmed.",
			r->st.lag_bytes);
	PER_REPLICA(b, s, set, "pmrep_mirror_replica_resync_done_bytes", "gauge",
			"The resync in progress: bytes copied so far (0: none in progress).",
			r->st.resync_done);
	PER_REPLICA(b, s, set, "pmrep_mirror_replica_resync_size_bytes", "gauge",
			"The resync in progress: bytes it has to copy (0: none in progress).",
			r->st.resync_total);
	PER_REPLICA(b, s, set, "pmrep_mirror_replica_resync_rate_bytes_per_second", "gauge",
			"The resync in progress: bytes per second so far (0: none, or too early).",
			r->st.resync_rate);
	PER_REPLICA(b, s, set, "pmrep_mirror_replica_resyncs_total", "counter",
			"Resyncs completed (full or incremental).",
			r->st.resyncs);
	PER_REPLICA(b, s, set, "pmrep_mirror_replica_resync_copied_bytes_total", "counter",
			"Bytes copied by the completed resyncs.",
			r->st.resync_bytes);
	PER_REPLICA(b, s, set, "pmrep_mirror_replica_resync_compared_bytes_total", "counter",
			"Bytes compared by digests before copying, over all resyncs.",
			r->st.resync_compared);
	mb_family(b, "pmrep_mirror_replica_failures_total", "counter",
			"Times the replica went to FAILED, by error (PMREP_E_* in lower case).");
	for (unsigned i = 0; i < s->n; i++) {
		struct mlabels l;
		replica_labels(&l, set, &s->r[i]);
		for (unsigned e = 0; e < METRICS_NERR; e++)
			if (s->r[i].failures[e] > 0)
				mb_sample_u64(b, "pmrep_mirror_replica_failures_total",
						&l, "error", metrics_err_label(e),
						s->r[i].failures[e]);
	}
}

/* ------------------------------------------------------------ targets */

static const char *const session_states[5] = {
	"handshake", "attaching", "active", "query", "closing",
};

static void
target_labels(struct mlabels *l, const struct metrics_target_snap *t)
{
	ml_init(l);
	ml_add(l, "replica", t->name);
}

#define PER_TARGET(b, t, n, name, type, help, expr) do { \
	mb_family((b), (name), (type), (help)); \
	for (unsigned i_ = 0; i_ < (n); i_++) { \
		const struct metrics_target_snap *x = &(t)[i_]; \
		struct mlabels l_; \
		target_labels(&l_, x); \
		mb_sample_u64((b), (name), &l_, NULL, NULL, (uint64_t)(expr)); \
	} \
} while (0)

void
metrics_format_targets(struct mbuf *b, const struct metrics_target_snap *t,
		unsigned n, const struct pmrep_listener_stats *ls)
{
	mb_family(b, "pmrep_target_replica_info", "gauge",
			"1 per replica served: its set's UUID (empty: never claimed) and how it is served.");
	for (unsigned i = 0; i < n; i++) {
		char set[2 * PMREP_UUID_SIZE + 1] = "";
		bool claimed = false;
		for (int k = 0; k < PMREP_UUID_SIZE; k++)
			claimed |= t[i].uuid[k] != 0;
		if (claimed)
			metrics_uuid_hex(t[i].uuid, set);
		struct mlabels l;
		target_labels(&l, &t[i]);
		ml_add(&l, "set", set);
		ml_add(&l, "mode", t[i].mode == PMREP_TARGET_MODE_STAGING ?
				"staging" : "direct");
		mb_sample_u64(b, "pmrep_target_replica_info", &l, NULL, NULL, 1);
	}
	PER_TARGET(b, t, n, "pmrep_target_replica_generation", "gauge",
			"The generation the replica's header holds.", x->generation);
	PER_TARGET(b, t, n, "pmrep_target_replica_data_bytes", "gauge",
			"The replica's data area, bytes.", x->data_size);
	PER_TARGET(b, t, n, "pmrep_target_replica_poisoned", "gauge",
			"1: a persist failed, nothing is confirmed any more (restart the target).",
			x->poisoned);
	mb_family(b, "pmrep_target_sessions", "gauge",
			"Sessions now, by state.");
	for (unsigned i = 0; i < n; i++) {
		struct mlabels l;
		target_labels(&l, &t[i]);
		for (unsigned k = 0; k < 5; k++)
			mb_sample_u64(b, "pmrep_target_sessions", &l, "state",
					session_states[k], t[i].by_state[k]);
	}
	PER_TARGET(b, t, n, "pmrep_target_sessions_in_use", "gauge",
			"Session slots taken now (any state).", x->st.sessions_in_use);
	PER_TARGET(b, t, n, "pmrep_target_sessions_started_total", "counter",
			"Connection requests admitted (a session slot and a connection).",
			x->st.sessions_started);
	PER_TARGET(b, t, n, "pmrep_target_sessions_accepted_total", "counter",
			"Initiators that passed the handshake (attaches and queries).",
			x->st.sessions_accepted);
	PER_TARGET(b, t, n, "pmrep_target_sessions_refused_total", "counter",
			"Connection requests and handshakes refused (every reason).",
			x->st.sessions_refused);
	mb_family(b, "pmrep_target_refusals_total", "counter",
			"Refusals by reason (their sum is pmrep_target_sessions_refused_total).");
	for (unsigned i = 0; i < n; i++) {
		struct mlabels l;
		target_labels(&l, &t[i]);
		for (unsigned k = 0; k < MR_N_; k++)
			mb_sample_u64(b, "pmrep_target_refusals_total", &l,
					"reason", metrics_refusal_label(k),
					t[i].refusals[k]);
	}
	PER_TARGET(b, t, n, "pmrep_target_persist_requests_total", "counter",
			"GPSPM persist requests answered ok (native flush and APM never reach the target process).",
			x->st.persist_requests);
	PER_TARGET(b, t, n, "pmrep_target_persisted_bytes_total", "counter",
			"Bytes those requests persisted.", x->persist_bytes);
	mb_family(b, "pmrep_target_persist_service_seconds", "histogram",
			"GPSPM persist requests answered ok, from receipt to the reply posted (no network), seconds.");
	for (unsigned i = 0; i < n; i++) {
		struct mlabels l;
		target_labels(&l, &t[i]);
		mb_histogram(b, "pmrep_target_persist_service_seconds", &l, &t[i].lat);
	}
	if (ls == NULL)
		return;
	mb_family(b, "pmrep_listener_replicas", "gauge",
			"Replicas the endpoint serves.");
	mb_sample_u64(b, "pmrep_listener_replicas", NULL, NULL, NULL, ls->replicas);
	mb_family(b, "pmrep_listener_requests_total", "counter",
			"Connection requests of the endpoint: dispatched to a replica, naming none, refused by the endpoint itself.");
	mb_sample_u64(b, "pmrep_listener_requests_total", NULL, "result",
			"dispatched", ls->requests_dispatched);
	mb_sample_u64(b, "pmrep_listener_requests_total", NULL, "result",
			"no_replica", ls->requests_no_replica);
	mb_sample_u64(b, "pmrep_listener_requests_total", NULL, "result",
			"refused", ls->requests_refused);
}

/* ------------------------------------------ for the public calls */

/* the text into buf (len bytes): 0, or PMREP_E_RANGE with *needed */
int
metrics_out(struct mbuf *b, size_t len, size_t *needed, const char *who)
{
	size_t need = mb_finish(b);
	if (needed != NULL)
		*needed = need;
	if (need > len) {
		PMREP_LOG_ERR("%s: the metrics need %zu bytes, the buffer has %zu",
				who, need, len);
		return PMREP_E_RANGE;
	}
	return 0;
}

int
metrics_args(const void *obj, const char *buf, size_t len, const char *who)
{
	if (obj == NULL || (buf == NULL && len > 0)) {
		PMREP_LOG_ERR("%s: invalid argument: the object is NULL, or buf is NULL with len %zu",
				who, len);
		return PMREP_E_INVAL;
	}
	return 0;
}
