/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_info.h -- what a target records of its sessions for the session
 * listing, the events and the log lines (target_info.c): a unique id, the
 * peer's address, the start time, the GPSPM persists with a latency
 * histogram. target.c calls these at the session's steps.
 */
#ifndef PMREP_REPL_TARGET_INFO_H
#define PMREP_REPL_TARGET_INFO_H

#include <stdint.h>

#include <pmrep/repl.h>

/* latency histogram: 4 exact buckets for 0..3 ns, then 4 per power of two
 * up to 2^41 ns (about 37 minutes; longer ones in the last bucket) */
#define SINFO_NBUCKETS 164

struct target_sinfo {
	uint64_t id;			/* 0: none yet */
	char id_str[24];
	char peer[64];
	long long start_ms;		/* wall clock */
	int reported;			/* the state last reported in an event */
	uint64_t persists, bytes;	/* GPSPM persists answered OK */
	uint32_t hist[SINFO_NBUCKETS];	/* their service times */
};

struct target_tinfo {
	pmrep_target_event_fn *fn;
	void *arg;
	uint64_t gen_reported;		/* the generation last reported */
};

struct pmrep_target;
struct session;
struct pmrep_conn_req;

/* a new session (its slot just taken by the admission, req still held):
 * its id, peer, start time; and the thread's log context is the session's */
void target_info_begin(struct pmrep_target *t, struct session *s,
		const struct pmrep_conn_req *req);
/* after a step of the session: report a state or generation change */
void target_info_note(struct pmrep_target *t, struct session *s);
/* the session ends (before its slot is cleared): CLOSED reported */
void target_info_closed(struct pmrep_target *t, struct session *s,
		const char *why);
/* the calling thread's log lines are about `s` (NULL: about none) */
void target_info_log_ctx(const struct session *s);
/* the clock of the persist latencies (CLOCK_MONOTONIC, ns) */
long long target_info_now_ns(void);
/* a GPSPM persist of `len` bytes answered OK; t0_ns: when it came */
void target_info_persist(struct session *s, uint64_t len, long long t0_ns);

/* the histogram's pieces (for the unit test): one persist of `len` bytes
 * that took `ns`; the q-quantile (0 < q <= 1) in µs (the upper bound of
 * its bucket), 0 when none */
void target_info_record(struct target_sinfo *in, uint64_t len, uint64_t ns);
double target_info_quantile_us(const struct target_sinfo *in, double q);

#endif /* PMREP_REPL_TARGET_INFO_H */
