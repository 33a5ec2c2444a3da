/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h -- the one formatter of pmrep's metrics in the Prometheus text
 * exposition format 0.0.4 (metrics.c, docs/METRICS.md): the text buffer,
 * HELP / TYPE lines, samples with escaped label values, a fixed-bucket
 * latency histogram, and the formatters of a mirror's and of targets'
 * snapshots. pmrep_mirror_get_metrics (mirror_metrics.c),
 * pmrep_target_get_metrics and pmrep_listener_get_metrics
 * (target_metrics.c) take a snapshot (mirror: under its lock) and format
 * it here; the unit test formats snapshots of its own.
 */
#ifndef PMREP_REPL_METRICS_H
#define PMREP_REPL_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pmrep/repl.h>

/* ------------------------------------------------------------ the text */

/* appends into a caller's buffer of `cap` bytes; `len` counts every byte
 * the text needs (also past cap), so one pass tells the size */
struct mbuf {
	char *p;
	size_t cap;
	size_t len;
};

void mb_init(struct mbuf *b, char *buf, size_t cap);
void mb_put(struct mbuf *b, const char *s, size_t n);
void mb_printf(struct mbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* NUL-terminate (when it fits): the bytes needed, NUL included */
size_t mb_finish(struct mbuf *b);

/* "# HELP name help\n# TYPE name type\n" (help: '\' and newline escaped) */
void mb_family(struct mbuf *b, const char *name, const char *type,
		const char *help);

/* a label set rendered once: `k="v",k2="v2"` (values escaped: \\ \" \n) */
#define MLABELS_MAX 512
struct mlabels {
	char s[MLABELS_MAX];
	size_t n;
	bool truncated;
};
void ml_init(struct mlabels *l);
void ml_add(struct mlabels *l, const char *key, const char *value);
void ml_add_u(struct mlabels *l, const char *key, unsigned long long v);

/* `name{labels[,k="v"]} value\n`: labels may be NULL, k NULL for none */
void mb_sample_u64(struct mbuf *b, const char *name, const struct mlabels *l,
		const char *k, const char *v, uint64_t value);
void mb_sample_i64(struct mbuf *b, const char *name, const struct mlabels *l,
		const char *k, const char *v, int64_t value);

/* ----------------------------------------------------------- histogram */

/* fixed bucket bounds in seconds, then +Inf: 50 µs .. 5 s */
#define METRICS_LAT_BOUNDS 16
struct metrics_hist {
	uint64_t b[METRICS_LAT_BOUNDS + 1];	/* per bucket (not cumulative); the last: above every bound */
	uint64_t count;
	uint64_t sum_ns;
};
void metrics_hist_observe(struct metrics_hist *h, uint64_t ns);
/* name_bucket{labels,le="..."} (cumulative), name_sum (seconds), name_count */
void mb_histogram(struct mbuf *b, const char *name, const struct mlabels *l,
		const struct metrics_hist *h);
/* the bound of bucket i in ns and as its le label */
uint64_t metrics_hist_bound_ns(unsigned i);
const char *metrics_hist_bound_str(unsigned i);

/* ----------------------------------------------------- errors, reasons */

/* PMREP_E_UNKNOWN .. PMREP_E_MISMATCH, then "other" */
#define METRICS_NERR 26
unsigned metrics_err_index(int err);
/* a label value: "timeout", "conn_lost", ... ("other" for the last) */
const char *metrics_err_label(unsigned idx);

/* why a target refused a connection request or a session */
enum metrics_refusal {
	MR_ADMISSION_AUTH = 0,	/* no / a wrong / a stale admission proof, unknown key id */
	MR_ADMISSION_REPLAY,	/* a proof seen before */
	MR_ADMISSION_BUSY,	/* no slot, or the per-source bound */
	MR_ADMISSION_ERROR,	/* the target could not check it */
	MR_MALFORMED,		/* no valid HELLO, a malformed message */
	MR_TLS,			/* TLS expected and not spoken, or the reverse */
	MR_TIMEOUT,		/* no AUTH within the timeout */
	MR_AUTH,		/* AUTH: a wrong key */
	MR_SIZE,		/* data size differs */
	MR_UUID,		/* another replica set */
	MR_STALE_GENERATION,	/* the replica holds a newer generation */
	MR_SPLIT_BRAIN,		/* claimed at this generation by another primary */
	MR_NO_REPLICA,		/* no such replica on this target */
	MR_STATE,		/* a request out of order */
	MR_RANGE,		/* a request outside the data area */
	MR_INTERNAL,		/* the target failed */
	MR_N_
};
const char *metrics_refusal_label(enum metrics_refusal r);

/* ----------------------------------------------------------- snapshots */

/* a replica name (a selector: 1..20 bytes) and its NUL */
#define METRICS_NAME_MAX 24

struct metrics_replica_snap {
	unsigned idx;
	char address[160];		/* "ADDR:PORT" */
	char name[METRICS_NAME_MAX];	/* its selector, "" none */
	struct pmrep_replica_status st;
	uint64_t failures[METRICS_NERR];	/* times it went FAILED, by error */
};

struct metrics_mirror_snap {
	uint8_t uuid[PMREP_UUID_SIZE];
	uint64_t generation;
	unsigned n;			/* replica slots */
	struct metrics_replica_snap r[PMREP_MIRROR_MAX_REPLICAS];
	unsigned set_size, quorum, required, in_sync;
	uint64_t persists_ok, persist_bytes;
	uint64_t persists_failed[METRICS_NERR];
	uint64_t in_flight;		/* requests queued or posted, not complete */
	uint64_t persist_seq;
	struct metrics_hist lat;
};

struct metrics_target_snap {
	char name[METRICS_NAME_MAX];
	uint8_t uuid[PMREP_UUID_SIZE];
	uint64_t generation, persist_seq, data_size;
	enum pmrep_target_mode mode;
	bool poisoned;
	struct pmrep_target_stats st;
	unsigned by_state[5];		/* sessions per pmrep_target_session_state */
	uint64_t refusals[MR_N_];
	uint64_t persist_bytes;
	struct metrics_hist lat;	/* GPSPM persists' service times */
};

void metrics_format_mirror(struct mbuf *b, const struct metrics_mirror_snap *s);
/* ls: a listener's counters (NULL: a target of its own) */
void metrics_format_targets(struct mbuf *b, const struct metrics_target_snap *t,
		unsigned n, const struct pmrep_listener_stats *ls);

/* 32 lowercase hex digits, as pmrep status shows a UUID */
void metrics_uuid_hex(const uint8_t *u, char out[2 * PMREP_UUID_SIZE + 1]);

/* ------------------------------------------------- the public calls */

/* PMREP_E_INVAL (logged, naming `who`) when obj is NULL or buf is NULL
 * with len > 0; else 0 */
int metrics_args(const void *obj, const char *buf, size_t len, const char *who);
/* finish the text in buf (len bytes): 0, or PMREP_E_RANGE with *needed */
int metrics_out(struct mbuf *b, size_t len, size_t *needed, const char *who);

#endif /* PMREP_REPL_METRICS_H */
