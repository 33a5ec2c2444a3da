/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_target_info.c -- the pieces behind a running target's logs and
 * session listing:
 *  - the persist latency histogram: each percentile is at or above the
 *    true value and at most 25 % over it; none: 0;
 *  - session ids: never the same twice, one random prefix per process,
 *    "PPPPPPPP-N"; the log context of a session is "sid=ID peer=PEER";
 *  - the log sinks: a file line starts with a UTC ISO 8601 time with ms
 *    (none with PMREP_LOG_SINK_F_NO_TIMESTAMP) and carries the thread's
 *    context; stderr that is the journal's stream (JOURNAL_STREAM) gets
 *    "<N>" priorities and no time; pmrep_log_reopen writes to the file
 *    now at the path (a rotation); bad sinks are PMREP_E_INVAL, a file
 *    that cannot be opened PMREP_E_PROVIDER.
 */
#include <fcntl.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "repl/target/target_int.h"

static void
percentiles_are_within_a_bucket_of_the_truth(void **state)
{
	(void)state;
	static struct target_sinfo in;
	memset(&in, 0, sizeof(in));
	assert_true(target_info_quantile_us(&in, 0.5) == 0);
	/* 1 .. 1000 µs, shuffled order does not matter */
	for (uint64_t i = 1000; i >= 1; i--)
		target_info_record(&in, 4096, i * 1000);
	assert_int_equal(in.persists, 1000);
	assert_int_equal(in.bytes, 1000 * 4096);
	const double q[] = { 0.5, 0.99, 0.999, 1.0 };
	const double truth[] = { 500, 990, 999, 1000 };
	for (int k = 0; k < 4; k++) {
		double v = target_info_quantile_us(&in, q[k]);
		assert_true(v >= truth[k]);
		assert_true(v <= truth[k] * 1.25);
	}
	/* one slow outlier among fast ones: p50 fast, p999 the outlier */
	memset(&in, 0, sizeof(in));
	for (int i = 0; i < 999; i++)
		target_info_record(&in, 1, 2000);	/* 2 µs */
	target_info_record(&in, 1, 5000000);		/* 5 ms */
	assert_true(target_info_quantile_us(&in, 0.5) >= 2.0);
	assert_true(target_info_quantile_us(&in, 0.5) <= 2.5);
	assert_true(target_info_quantile_us(&in, 0.999) <= 2.5);
	assert_true(target_info_quantile_us(&in, 1.0) >= 5000.0);
	assert_true(target_info_quantile_us(&in, 1.0) <= 6250.0);
	/* very long and zero ones land somewhere, never out of the table */
	target_info_record(&in, 1, UINT64_MAX);
	target_info_record(&in, 1, 0);
	assert_true(target_info_quantile_us(&in, 1.0) > 5000.0);
}

static bool
matches(const char *re, const char *s)
{
	regex_t r;
	assert_int_equal(regcomp(&r, re, REG_EXTENDED | REG_NOSUB | REG_NEWLINE), 0);
	bool m = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return m;
}

static void
session_ids_are_unique_with_one_prefix(void **state)
{
	(void)state;
	static struct session s[3];
	char seen[300][24];
	for (int i = 0; i < 300; i++) {
		struct session *x = &s[i % 3];
		memset(x, 0, sizeof(*x));
		target_info_begin(NULL, x, NULL);
		assert_true(matches("^[0-9a-f]{8}-[0-9]+$", x->info.id_str));
		assert_string_equal(x->info.peer, "unknown");
		for (int j = 0; j < i; j++)
			assert_string_not_equal(seen[j], x->info.id_str);
		if (i > 0)
			assert_memory_equal(seen[0], x->info.id_str, 9);
		memcpy(seen[i], x->info.id_str, sizeof(seen[i]));
		/* the log context names it */
		char want[80];
		snprintf(want, sizeof(want), "sid=%s peer=unknown", x->info.id_str);
		assert_string_equal(pmrep_log_ctx_get(), want);
	}
	target_info_log_ctx(NULL);
	assert_string_equal(pmrep_log_ctx_get(), "");
}

static char *
slurp(const char *path)
{
	static char buf[8192];
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

static void
sinks_write_times_contexts_and_priorities(void **state)
{
	(void)state;
	char dir[] = "/tmp/pmrep-test-log-XXXXXX", path[64], rot[80], jpath[64];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/log", dir);
	snprintf(rot, sizeof(rot), "%s/log.1", dir);
	snprintf(jpath, sizeof(jpath), "%s/journal", dir);
	(void) pmrep_log_set_threshold(PMREP_LOG_INFO);

	assert_int_equal(pmrep_log_set_sink(PMREP_LOG_SINK_FILE, NULL, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_set_sink((enum pmrep_log_sink)7, NULL, 0), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_set_sink(PMREP_LOG_SINK_STDERR, NULL, 1u << 5), PMREP_E_INVAL);
	assert_int_equal(pmrep_log_set_sink(PMREP_LOG_SINK_FILE, "/nonexistent/dir/log", 0),
			PMREP_E_PROVIDER);

	assert_int_equal(pmrep_log_set_sink(PMREP_LOG_SINK_FILE, path, 0), 0);
	pmrep_log_ctx_set("sid=0000abcd-7 peer=127.0.0.1:5");
	PMREP_LOG_INFO("one %d", 1);
	pmrep_log_ctx_set(NULL);
	PMREP_LOG_ERR("two");
	char *t = slurp(path);
	assert_true(matches("^[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\\.[0-9]{3}Z pmrep INFO test_target_info\\.c:[0-9]+ sinks_write_times_contexts_and_priorities: sid=0000abcd-7 peer=127\\.0\\.0\\.1:5: one 1\n"
			"[0-9T:.Z-]{24} pmrep ERROR [^ ]+ [^ ]+: two\n$", t));
	/* the time is now's (UTC): the same date as gmtime's */
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	char day[16];
	strftime(day, sizeof(day), "%Y-%m-%d", &tm);
	assert_memory_equal(t, day, 10);

	/* a rotation: renamed, reopened, the new lines in the new file */
	assert_int_equal(rename(path, rot), 0);
	assert_int_equal(pmrep_log_reopen(), 0);
	PMREP_LOG_INFO("three");
	assert_true(matches("pmrep INFO .*: three\n$", slurp(path)));
	assert_false(matches("three", slurp(rot)));

	assert_int_equal(pmrep_log_set_sink(PMREP_LOG_SINK_FILE, path,
			PMREP_LOG_SINK_F_NO_TIMESTAMP), 0);
	PMREP_LOG_INFO("four");
	assert_true(matches("\npmrep INFO [^\n]*: four\n$", slurp(path)));

	/* stderr as the journal's stream */
	int saved = dup(2);
	int j = open(jpath, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(j >= 0);
	dup2(j, 2);
	struct stat st;
	assert_int_equal(fstat(2, &st), 0);
	char js[64];
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
			(unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", js, 1);
	assert_int_equal(pmrep_log_set_sink(PMREP_LOG_SINK_STDERR, NULL, 0), 0);
	PMREP_LOG_WARN("five");
	PMREP_LOG(PMREP_LOG_NOTICE, "six");
	/* another stream named: not the journal, times again */
	setenv("JOURNAL_STREAM", "1:2", 1);
	assert_int_equal(pmrep_log_set_sink(PMREP_LOG_SINK_STDERR, NULL, 0), 0);
	PMREP_LOG_INFO("seven");
	dup2(saved, 2);
	close(saved);
	close(j);
	unsetenv("JOURNAL_STREAM");
	assert_int_equal(pmrep_log_set_sink(PMREP_LOG_SINK_STDERR, NULL, 0), 0);
	assert_true(matches("^<4>pmrep WARNING [^\n]*: five\n<5>pmrep NOTICE [^\n]*: six\n"
			"[0-9]{4}-[0-9T:.Z-]{19} pmrep INFO [^\n]*: seven\n$", slurp(jpath)));
	(void) pmrep_log_set_threshold(PMREP_LOG_WARNING);
	unlink(path);
	unlink(rot);
	unlink(jpath);
	assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(percentiles_are_within_a_bucket_of_the_truth),
		cmocka_unit_test(session_ids_are_unique_with_one_prefix),
		cmocka_unit_test(sinks_write_times_contexts_and_priorities),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
