/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_metrics.c -- the metrics formatter (src/repl/metrics/metrics.c,
 * docs/METRICS.md), Prometheus text format 0.0.4:
 *  - samples, HELP / TYPE lines and label values are written exactly,
 *    label values and HELP text escaped (\\ \" \n);
 *  - the latency histogram: an observation lands in the first bucket
 *    whose bound it does not pass (le is "<="), the buckets are
 *    cumulative, +Inf equals _count, _sum is seconds with 9 decimals;
 *  - a target snapshot and a mirror snapshot give the exact lines of
 *    their counters (refusals by reason, sessions by state, persists by
 *    result, replica states), and the whole text passes the validator;
 *  - a buffer too small: the bytes needed are counted all the same, and
 *    the public calls say PMREP_E_RANGE with *needed, PMREP_E_INVAL for
 *    NULL;
 *  - the validator (tests/func/common/prom_check.h, also used by the
 *    functional test) accepts the formatter's text and rejects each of a
 *    set of deliberately broken samples, naming the fault.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/log.h"
#include "repl/metrics/metrics.h"
#include "../func/common/prom_check.h"

#define BIG 65536

static char *
fmt_buf(void)
{
	char *p = calloc(1, BIG);
	assert_non_null(p);
	return p;
}

static bool
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; p != NULL && *p;) {
		if (strncmp(p, line, n) == 0 && p[n] == '\n')
			return true;
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return false;
}

#define ASSERT_LINE(text, line) do { \
	if (!has_line((text), (line))) \
		fail_msg("missing line: %s\n--- in ---\n%s", (line), (text)); \
} while (0)

static void
assert_valid(const char *text)
{
	char err[600];
	if (prom_check(text, err, sizeof(err)) != 0)
		fail_msg("not valid: %s\n--- text ---\n%s", err, text);
}

static void
samples_and_escaping_are_exact(void **state)
{
	(void)state;
	char *buf = fmt_buf();
	struct mbuf b;
	mb_init(&b, buf, BIG);
	mb_family(&b, "pmrep_test_total", "counter", "a \\ and a\nnewline");
	struct mlabels l;
	ml_init(&l);
	ml_add(&l, "replica", "we\"ird\\name\nx");
	ml_add_u(&l, "idx", 3);
	mb_sample_u64(&b, "pmrep_test_total", &l, "result", "o\"k", 18446744073709551615ull);
	mb_sample_u64(&b, "pmrep_test_total", NULL, NULL, NULL, 0);
	mb_sample_u64(&b, "pmrep_test_total", NULL, "k", "", 5);
	assert_int_equal(mb_finish(&b), b.len + 1);
	assert_string_equal(buf,
		"# HELP pmrep_test_total a \\\\ and a\\nnewline\n"
		"# TYPE pmrep_test_total counter\n"
		"pmrep_test_total{replica=\"we\\\"ird\\\\name\\nx\",idx=\"3\",result=\"o\\\"k\"} 18446744073709551615\n"
		"pmrep_test_total 0\n"
		"pmrep_test_total{k=\"\"} 5\n");
	assert_valid(buf);
	free(buf);
}

static void
histogram_is_cumulative(void **state)
{
	(void)state;
	struct metrics_hist h;
	memset(&h, 0, sizeof(h));
	metrics_hist_observe(&h, 40000);		/* 40 µs: le 5e-05 */
	metrics_hist_observe(&h, 50000);		/* exactly 50 µs: le 5e-05 */
	metrics_hist_observe(&h, 50001);		/* le 0.0001 */
	metrics_hist_observe(&h, 3000000);		/* 3 ms: le 0.005 */
	metrics_hist_observe(&h, 1000000000);		/* 1 s: le 1 */
	metrics_hist_observe(&h, 7000000000ull);	/* 7 s: +Inf only */
	assert_int_equal(h.count, 6);
	char *buf = fmt_buf();
	struct mbuf b;
	mb_init(&b, buf, BIG);
	mb_family(&b, "pmrep_t_seconds", "histogram", "h");
	struct mlabels l;
	ml_init(&l);
	ml_add(&l, "set", "ab");
	mb_histogram(&b, "pmrep_t_seconds", &l, &h);
	mb_finish(&b);
	static const char *const want[] = {
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"5e-05\"} 2",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.0001\"} 3",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.00025\"} 3",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.0005\"} 3",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.001\"} 3",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.0025\"} 3",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.005\"} 4",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.01\"} 4",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.025\"} 4",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.05\"} 4",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.1\"} 4",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.25\"} 4",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"0.5\"} 4",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"1\"} 5",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"2.5\"} 5",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"5\"} 5",
		"pmrep_t_seconds_bucket{set=\"ab\",le=\"+Inf\"} 6",
		/* 0.00004 + 0.00005 + 0.000050001 + 0.003 + 1 + 7 */
		"pmrep_t_seconds_sum{set=\"ab\"} 8.003140001",
		"pmrep_t_seconds_count{set=\"ab\"} 6",
	};
	/* exactly these lines, in this order, after HELP and TYPE */
	const char *p = strstr(buf, "# TYPE pmrep_t_seconds histogram\n");
	assert_non_null(p);
	p = strchr(p, '\n') + 1;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		size_t n = strlen(want[i]);
		if (strncmp(p, want[i], n) != 0 || p[n] != '\n')
			fail_msg("line %zu: want %s, got %.80s", i, want[i], p);
		p += n + 1;
	}
	assert_string_equal(p, "");
	/* the bounds rise, and every bucket holds the ones below it */
	for (unsigned i = 1; i < METRICS_LAT_BOUNDS; i++)
		assert_true(metrics_hist_bound_ns(i) > metrics_hist_bound_ns(i - 1));
	assert_string_equal(metrics_hist_bound_str(METRICS_LAT_BOUNDS), "+Inf");
	assert_valid(buf);
	free(buf);
}

static void
target_snapshot_gives_its_counters(void **state)
{
	(void)state;
	static struct metrics_target_snap t[2];
	memset(t, 0, sizeof(t));
	snprintf(t[0].name, sizeof(t[0].name), "r\"1");
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		t[0].uuid[i] = (uint8_t)(0xa0 + i);
	t[0].generation = 4;
	t[0].data_size = 1048576;
	t[0].st.sessions_started = 11;
	t[0].st.sessions_accepted = 9;
	t[0].st.sessions_refused = 10;
	t[0].st.sessions_in_use = 2;
	t[0].st.persist_requests = 123;
	t[0].by_state[PMREP_TARGET_SESSION_ACTIVE] = 1;
	t[0].by_state[PMREP_TARGET_SESSION_QUERY] = 1;
	t[0].refusals[MR_STALE_GENERATION] = 7;
	t[0].refusals[MR_ADMISSION_AUTH] = 3;
	t[0].persist_bytes = 4096;
	metrics_hist_observe(&t[0].lat, 20000);
	snprintf(t[1].name, sizeof(t[1].name), "two");
	t[1].mode = PMREP_TARGET_MODE_STAGING;
	t[1].poisoned = true;
	struct pmrep_listener_stats ls = { .requests_dispatched = 5,
		.requests_no_replica = 1, .requests_refused = 2, .replicas = 2 };
	char *buf = fmt_buf();
	struct mbuf b;
	mb_init(&b, buf, BIG);
	metrics_format_targets(&b, t, 2, &ls);
	mb_finish(&b);
	assert_true(b.len < BIG);
	ASSERT_LINE(buf, "# TYPE pmrep_target_refusals_total counter");
	ASSERT_LINE(buf, "pmrep_target_replica_info{replica=\"r\\\"1\",set=\"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf\",mode=\"direct\"} 1");
	ASSERT_LINE(buf, "pmrep_target_replica_info{replica=\"two\",set=\"\",mode=\"staging\"} 1");
	ASSERT_LINE(buf, "pmrep_target_replica_generation{replica=\"r\\\"1\"} 4");
	ASSERT_LINE(buf, "pmrep_target_replica_data_bytes{replica=\"r\\\"1\"} 1048576");
	ASSERT_LINE(buf, "pmrep_target_replica_poisoned{replica=\"two\"} 1");
	ASSERT_LINE(buf, "pmrep_target_sessions{replica=\"r\\\"1\",state=\"active\"} 1");
	ASSERT_LINE(buf, "pmrep_target_sessions{replica=\"r\\\"1\",state=\"handshake\"} 0");
	ASSERT_LINE(buf, "pmrep_target_sessions_in_use{replica=\"r\\\"1\"} 2");
	ASSERT_LINE(buf, "pmrep_target_sessions_started_total{replica=\"r\\\"1\"} 11");
	ASSERT_LINE(buf, "pmrep_target_sessions_accepted_total{replica=\"r\\\"1\"} 9");
	ASSERT_LINE(buf, "pmrep_target_sessions_refused_total{replica=\"r\\\"1\"} 10");
	ASSERT_LINE(buf, "pmrep_target_refusals_total{replica=\"r\\\"1\",reason=\"stale_generation\"} 7");
	ASSERT_LINE(buf, "pmrep_target_refusals_total{replica=\"r\\\"1\",reason=\"admission_auth\"} 3");
	ASSERT_LINE(buf, "pmrep_target_refusals_total{replica=\"two\",reason=\"admission_busy\"} 0");
	ASSERT_LINE(buf, "pmrep_target_persist_requests_total{replica=\"r\\\"1\"} 123");
	ASSERT_LINE(buf, "pmrep_target_persisted_bytes_total{replica=\"r\\\"1\"} 4096");
	ASSERT_LINE(buf, "pmrep_target_persist_service_seconds_bucket{replica=\"r\\\"1\",le=\"5e-05\"} 1");
	ASSERT_LINE(buf, "pmrep_target_persist_service_seconds_count{replica=\"r\\\"1\"} 1");
	ASSERT_LINE(buf, "pmrep_target_persist_service_seconds_sum{replica=\"r\\\"1\"} 0.000020000");
	ASSERT_LINE(buf, "pmrep_target_persist_service_seconds_count{replica=\"two\"} 0");
	ASSERT_LINE(buf, "pmrep_listener_replicas 2");
	ASSERT_LINE(buf, "pmrep_listener_requests_total{result=\"dispatched\"} 5");
	ASSERT_LINE(buf, "pmrep_listener_requests_total{result=\"no_replica\"} 1");
	ASSERT_LINE(buf, "pmrep_listener_requests_total{result=\"refused\"} 2");
	/* every reason has a sample per replica: 16 reasons x 2 */
	unsigned n = 0;
	for (const char *p = buf; (p = strstr(p, "\npmrep_target_refusals_total{")) != NULL; p++)
		n++;
	assert_int_equal(n, 2 * MR_N_);
	assert_valid(buf);
	/* a target of its own: no listener families */
	mb_init(&b, buf, BIG);
	metrics_format_targets(&b, t, 1, NULL);
	mb_finish(&b);
	assert_null(strstr(buf, "pmrep_listener"));
	assert_null(strstr(buf, "replica=\"two\""));
	assert_valid(buf);
	free(buf);
}

static void
mirror_snapshot_gives_its_counters(void **state)
{
	(void)state;
	static struct metrics_mirror_snap s;
	memset(&s, 0, sizeof(s));
	s.uuid[15] = 1;
	s.generation = 3;
	s.n = 2;
	s.set_size = 2;
	s.required = 1;
	s.in_sync = 1;
	s.persists_ok = 42;
	s.persist_bytes = 42 * 4096;
	s.persists_failed[metrics_err_index(PMREP_E_TIMEOUT)] = 2;
	s.persists_failed[metrics_err_index(PMREP_E_NOMEM)] = 1;
	s.in_flight = 3;
	for (int i = 0; i < 44; i++)
		metrics_hist_observe(&s.lat, 200000);
	s.r[0].idx = 0;
	snprintf(s.r[0].address, sizeof(s.r[0].address), "127.0.0.1:7204");
	s.r[0].st.state = PMREP_REPLICA_IN_SYNC;
	s.r[0].st.resyncs = 1;
	s.r[0].st.resync_bytes = 65536;
	s.r[1].idx = 1;
	snprintf(s.r[1].address, sizeof(s.r[1].address), "[::1]:7205");
	snprintf(s.r[1].name, sizeof(s.r[1].name), "b");
	s.r[1].st.state = PMREP_REPLICA_SYNCING;
	s.r[1].st.lag_bytes = 8192;
	s.r[1].st.resync_done = 1000;
	s.r[1].st.resync_total = 9192;
	s.r[1].st.resync_rate = 500;
	s.r[1].failures[metrics_err_index(PMREP_E_CONN_LOST)] = 2;
	char *buf = fmt_buf();
	struct mbuf b;
	mb_init(&b, buf, BIG);
	metrics_format_mirror(&b, &s);
	mb_finish(&b);
	const char *set = "set=\"00000000000000000000000000000001\"";
	char line[512];
#define L(fmt, ...) (snprintf(line, sizeof(line), fmt, __VA_ARGS__), line)
	ASSERT_LINE(buf, L("pmrep_mirror_generation{%s} 3", set));
	ASSERT_LINE(buf, L("pmrep_mirror_replicas{%s} 2", set));
	ASSERT_LINE(buf, L("pmrep_mirror_required_replicas{%s} 1", set));
	ASSERT_LINE(buf, L("pmrep_mirror_in_sync_replicas{%s} 1", set));
	ASSERT_LINE(buf, L("pmrep_mirror_persists_total{%s,result=\"ok\"} 42", set));
	ASSERT_LINE(buf, L("pmrep_mirror_persists_total{%s,result=\"timeout\"} 2", set));
	ASSERT_LINE(buf, L("pmrep_mirror_persists_total{%s,result=\"conn_lost\"} 0", set));
	ASSERT_LINE(buf, L("pmrep_mirror_persists_total{%s,result=\"nomem\"} 1", set));
	assert_null(strstr(buf, "result=\"busy\""));	/* a zero of another error: left out */
	ASSERT_LINE(buf, L("pmrep_mirror_persisted_bytes_total{%s} 172032", set));
	ASSERT_LINE(buf, L("pmrep_mirror_persists_in_flight{%s} 3", set));
	ASSERT_LINE(buf, L("pmrep_mirror_persist_latency_seconds_bucket{%s,le=\"0.00025\"} 44", set));
	ASSERT_LINE(buf, L("pmrep_mirror_persist_latency_seconds_bucket{%s,le=\"0.0001\"} 0", set));
	ASSERT_LINE(buf, L("pmrep_mirror_persist_latency_seconds_sum{%s} 0.008800000", set));
	ASSERT_LINE(buf, L("pmrep_mirror_persist_latency_seconds_count{%s} 44", set));
	const char *r0 = "replica=\"0\",address=\"127.0.0.1:7204\",name=\"\"";
	const char *r1 = "replica=\"1\",address=\"[::1]:7205\",name=\"b\"";
	ASSERT_LINE(buf, L("pmrep_mirror_replica_state{%s,%s,state=\"in_sync\"} 1", set, r0));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_state{%s,%s,state=\"syncing\"} 0", set, r0));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_state{%s,%s,state=\"syncing\"} 1", set, r1));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_state{%s,%s,state=\"failed\"} 0", set, r1));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_lag_bytes{%s,%s} 8192", set, r1));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_resync_done_bytes{%s,%s} 1000", set, r1));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_resync_size_bytes{%s,%s} 9192", set, r1));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_resync_rate_bytes_per_second{%s,%s} 500", set, r1));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_resyncs_total{%s,%s} 1", set, r0));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_resync_copied_bytes_total{%s,%s} 65536", set, r0));
	ASSERT_LINE(buf, L("pmrep_mirror_replica_failures_total{%s,%s,error=\"conn_lost\"} 2", set, r1));
	/* 7 states per replica, exactly one of them 1 */
	unsigned ones = 0, all = 0;
	for (const char *p = buf; (p = strstr(p, "\npmrep_mirror_replica_state{")) != NULL; p++) {
		all++;
		ones += strncmp(strchr(p, '}'), "} 1\n", 4) == 0;
	}
	assert_int_equal(all, 14);
	assert_int_equal(ones, 2);
	assert_valid(buf);
	free(buf);
#undef L
}

static void
small_buffer_counts_what_is_needed(void **state)
{
	(void)state;
	char small[8];
	struct mbuf b;
	mb_init(&b, small, sizeof(small));
	mb_printf(&b, "%s", "0123456789abcdef");
	assert_int_equal(b.len, 16);
	assert_int_equal(mb_finish(&b), 17);
	assert_memory_equal(small, "01234567", 8);	/* a prefix, nothing past it */
	mb_init(&b, NULL, 0);
	mb_family(&b, "pmrep_x", "gauge", "h");
	assert_int_equal(mb_finish(&b), strlen("# HELP pmrep_x h\n# TYPE pmrep_x gauge\n") + 1);
	/* the public calls: NULL objects, NULL buffers */
	size_t need = 99;
	assert_int_equal(pmrep_mirror_get_metrics(NULL, NULL, 0, &need), PMREP_E_INVAL);
	assert_int_equal(pmrep_target_get_metrics(NULL, NULL, 0, &need), PMREP_E_INVAL);
	assert_int_equal(pmrep_listener_get_metrics(NULL, NULL, 0, &need), PMREP_E_INVAL);
	assert_int_equal(need, 99);
	/* error labels */
	assert_string_equal(metrics_err_label(metrics_err_index(PMREP_E_TIMEOUT)), "timeout");
	assert_string_equal(metrics_err_label(metrics_err_index(PMREP_E_CONN_LOST)), "conn_lost");
	assert_string_equal(metrics_err_label(metrics_err_index(PMREP_E_MISMATCH)), "mismatch");
	assert_string_equal(metrics_err_label(metrics_err_index(PMREP_E_UNKNOWN)), "unknown");
	assert_string_equal(metrics_err_label(metrics_err_index(0)), "other");
	assert_string_equal(metrics_err_label(metrics_err_index(-5)), "other");
	assert_string_equal(metrics_err_label(metrics_err_index(-100099)), "other");
	assert_string_equal(metrics_refusal_label(MR_STALE_GENERATION), "stale_generation");
}

/* each broken text, and the words its rejection must name */
static const struct {
	const char *text, *why;
} broken[] = {
	{ "pmrep_a_total 1\n", "before its family's HELP and TYPE" },
	{ "# HELP pmrep_a_total h\npmrep_a_total 1\n", "before its family's HELP and TYPE" },
	{ "# TYPE pmrep_a_total counter\npmrep_a_total 1\n", "before its family's HELP and TYPE" },
	{ "# HELP pmrep_a_total h\n# TYPE pmrep_a_total counter\npmrep_a_total 1", "newline" },
	{ "# HELP pmrep_a_total h\n# TYPE pmrep_a_total counter\npmrep_a_total one\n", "bad value" },
	{ "# HELP pmrep_a_total h\n# TYPE pmrep_a_total counter\npmrep_a_total{x=\"a\\q\"} 1\n", "bad escape" },
	{ "# HELP pmrep_a_total h\n# TYPE pmrep_a_total counter\npmrep_a_total{x=\"a} 1\n", "not closed" },
	{ "# HELP pmrep_a_total h\n# TYPE pmrep_a_total counter\npmrep_a_total{x=a} 1\n", "bad label" },
	{ "# HELP pmrep_a_total h\n# TYPE pmrep_a_total counter\npmrep_a_total{x=\"1\",x=\"2\"} 1\n", "twice" },
	{ "# HELP pmrep_a h\n# TYPE pmrep_a counter\npmrep_a 1\n", "_total" },
	{ "# HELP pmrep_a h\n# TYPE pmrep_a thing\npmrep_a 1\n", "unknown TYPE" },
	{ "# HELP pmrep_a h\n# HELP pmrep_a h\n# TYPE pmrep_a gauge\npmrep_a 1\n", "second HELP" },
	{ "# HELP pmrep_a h\n# TYPE pmrep_a gauge\n# HELP pmrep_b h\n# TYPE pmrep_b gauge\n"
		"pmrep_a 1\npmrep_b 1\npmrep_a 2\n", "comes back" },
	{ "# HELP pmrep_a h\n# TYPE pmrep_a gauge\npmrep_a 1\n# TYPE pmrep_a gauge\n", "after its samples" },
	{ "# HELP 9pmrep h\n", "bad metric name" },
	{ "# HELP pmrep_h h\n# TYPE pmrep_h histogram\n"
		"pmrep_h_bucket{le=\"1\"} 5\npmrep_h_bucket{le=\"2\"} 4\npmrep_h_bucket{le=\"+Inf\"} 5\n"
		"pmrep_h_sum 1\npmrep_h_count 5\n", "not cumulative" },
	{ "# HELP pmrep_h h\n# TYPE pmrep_h histogram\n"
		"pmrep_h_bucket{le=\"2\"} 1\npmrep_h_bucket{le=\"1\"} 1\npmrep_h_bucket{le=\"+Inf\"} 1\n"
		"pmrep_h_sum 1\npmrep_h_count 1\n", "not above" },
	{ "# HELP pmrep_h h\n# TYPE pmrep_h histogram\n"
		"pmrep_h_bucket{le=\"1\"} 1\npmrep_h_bucket{le=\"+Inf\"} 2\n"
		"pmrep_h_sum 1\npmrep_h_count 3\n", "is not the +Inf bucket's" },
	{ "# HELP pmrep_h h\n# TYPE pmrep_h histogram\n"
		"pmrep_h_bucket{le=\"1\"} 1\npmrep_h_sum 1\npmrep_h_count 1\n", "without a +Inf bucket" },
	{ "# HELP pmrep_h h\n# TYPE pmrep_h histogram\n"
		"pmrep_h_bucket{le=\"1\"} 1\npmrep_h_bucket{le=\"+Inf\"} 1\npmrep_h_count 1\n", "lacks _sum" },
	{ "# HELP pmrep_h h\n# TYPE pmrep_h histogram\n"
		"pmrep_h_bucket 1\n", "without a valid le" },
	{ "# HELP pmrep_h h\n# TYPE pmrep_h histogram\npmrep_h 1\n", "without _bucket" },
};

static void
validator_rejects_broken_samples(void **state)
{
	(void)state;
	char err[600];
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		err[0] = '\0';
		if (prom_check(broken[i].text, err, sizeof(err)) == 0)
			fail_msg("broken sample %zu accepted:\n%s", i, broken[i].text);
		if (strstr(err, broken[i].why) == NULL)
			fail_msg("broken sample %zu: rejected as '%s', expected '%s'",
					i, err, broken[i].why);
	}
	/* and a good one passes, with its values found */
	const char *good = "# HELP pmrep_h h\n# TYPE pmrep_h histogram\n"
		"pmrep_h_bucket{a=\"x\",le=\"1\"} 1\npmrep_h_bucket{a=\"x\",le=\"+Inf\"} 2\n"
		"pmrep_h_sum{a=\"x\"} 0.5\npmrep_h_count{a=\"x\"} 2\n# EOF\n";
	assert_int_equal(prom_check(good, err, sizeof(err)), 0);
	double v = 0;
	assert_int_equal(prom_value(good, "pmrep_h_count{a=\"x\"}", &v), 0);
	assert_true(v == 2);
	assert_int_equal(prom_value(good, "pmrep_h_count", &v), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(samples_and_escaping_are_exact),
		cmocka_unit_test(histogram_is_cumulative),
		cmocka_unit_test(target_snapshot_gives_its_counters),
		cmocka_unit_test(mirror_snapshot_gives_its_counters),
		cmocka_unit_test(small_buffer_counts_what_is_needed),
		cmocka_unit_test(validator_rejects_broken_samples),
	};
	(void) pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
