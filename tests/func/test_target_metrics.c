/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_target_metrics.c -- the metrics of a mirror and of a pmrep-target
 * (docs/METRICS.md; tcp on 127.0.0.1: pmrep-target children, mirrors in
 * this process; every text checked by the validator of prom_check.h):
 *  - a mirror that did N persists: pmrep_mirror_get_metrics counts N ok
 *    persists, N * 4096 bytes, N in its latency histogram, its replica
 *    in_sync; asked the size first (PMREP_E_RANGE with *needed, also one
 *    byte short); called from a second thread all the while (thread-safe);
 *  - the target, GPSPM (--staging): its control command `metrics` ends
 *    with "# EOF" and its persist requests grew by exactly N (its bytes
 *    by N * 4096), one session accepted and active, the set UUID in
 *    pmrep_target_replica_info; --metrics-file holds the same text once
 *    refreshed (no PATH.tmp left; mode 0644 under umask 077);
 *    `pmrep status --control --metrics` prints the same text without
 *    the end line;
 *  - refusals by reason: a query with a wrong key is admission_auth
 *    (plaintext; under TLS it is tls), a mirror of an older generation
 *    stale_generation, each counted once and in sessions_refused_total;
 *  - a replica whose target dies: state failed (1) and in_sync (0), a
 *    failure counted by error, the failed persist by its result, lag;
 *  - a clean stop refreshes the file (interval 10 min: only the stop can
 *    have written the refusal that happened after the first write; the
 *    control socket had it at once);
 *  - --config with replicas a and b (the file's metrics-file and
 *    metrics-interval): one text, each family once, a sample per
 *    replica, b's persists counted on b only, the listener's dispatch
 *    count.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "func_tool.h"
#include "prom_check.h"

#define DATA_SIZE (1u << 20)
#define NPERSIST 25
#define SET "07010203000000000000000000000000"

static char bindir[PATH_MAX - 64];
static char dir[64], keyfile[100], sock[100], mfile[100];
static uint8_t key[64];
static size_t key_len;
static pid_t tpid;
static char tport[16];
static bool plain;	/* target --no-tls, mirrors and queries without TLS */

static void
assert_valid(const char *text)
{
	char err[600];
	if (prom_check(text, err, sizeof(err)) != 0)
		fail_msg("metrics not valid: %s\n--- text ---\n%s", err, text);
}

/* the value of `series` in text (the test fails when it is not there) */
static double
val(const char *text, const char *fmt, ...)
{
	char series[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(series, sizeof(series), fmt, ap);
	va_end(ap);
	double v = 0;
	if (prom_value(text, series, &v) != 0)
		fail_msg("no sample %s in:\n%s", series, text);
	return v;
}

/* pmrep-target with --control sock --metrics-file mfile
 * --metrics-interval `interval`; `config` non-NULL: --config it (the
 * file names the metrics file) */
static void
target_start(const char *interval, const char *config)
{
	char exe[PATH_MAX], rep[128], errlog[128];
	snprintf(exe, sizeof(exe), "%s/tools/pmrep-target", bindir);
	if (access(exe, X_OK) != 0)
		skip();
	snprintf(rep, sizeof(rep), "%s/rep", dir);
	snprintf(errlog, sizeof(errlog), "%s/stderr", dir);
	char *one[] = { exe, "--path", rep, "--size", "1M", "--create",
		"--address", "127.0.0.1", "--port", "0", "--key-file", keyfile,
		"--control", sock, "--staging", "--metrics-file", mfile,
		"--metrics-interval", (char *)interval,
		plain ? "--no-tls" : NULL, NULL };
	/* --config: the file's metrics-file and metrics-interval */
	char *conf[] = { exe, "--config", (char *)config, "--control", sock,
		NULL };
	int st = 0;
	pid_t pid = func_tool_listen(config ? conf : one, errlog, tport,
			sizeof(tport), &st);
	assert_true(pid > 0);
	tpid = pid;
}

static void
target_stop_clean(void)
{
	assert_true(tpid > 0);
	assert_int_equal(kill(tpid, SIGTERM), 0);
	int st = 0;
	assert_int_equal(waitpid(tpid, &st, 0), tpid);
	tpid = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* the control socket's `metrics` reply, without its end line (checked) */
static char *
ctl_metrics(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(send(fd, "metrics\n", 8, MSG_NOSIGNAL), 8);
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap + 1);
	assert_non_null(b);
	long long t0 = func_now_ms();
	for (;;) {
		assert_true(func_now_ms() - t0 < 10000 * func_slow());
		struct pollfd pf = { fd, POLLIN, 0 };
		if (poll(&pf, 1, 100) <= 0)
			continue;
		ssize_t r = read(fd, b + n, cap - n);
		assert_true(r >= 0);
		if (r == 0)
			break;
		n += (size_t)r;
		assert_true(n < cap);
	}
	close(fd);
	b[n] = '\0';
	/* the end line, last, after a complete text */
	assert_true(n > 6);
	assert_string_equal(b + n - 6, "# EOF\n");
	assert_valid(b);	/* "# EOF" is a comment to the format */
	b[n - 6] = '\0';
	return b;
}

/* the metrics file's text (NULL: not there) */
static char *
read_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap + 1);
	assert_non_null(b);
	ssize_t r;
	while ((r = read(fd, b + n, cap - n)) > 0)
		n += (size_t)r;
	close(fd);
	b[n] = '\0';
	return b;
}

/* wait until the metrics file holds exactly `want` (refreshed) */
static void
file_becomes(const char *want)
{
	long long t0 = func_now_ms();
	for (;;) {
		char *f = read_file(mfile);
		bool same = f != NULL && strcmp(f, want) == 0;
		if (f != NULL)
			assert_valid(f);
		free(f);
		if (same)
			return;
		if (func_now_ms() - t0 > 10000 * func_slow())
			fail_msg("the metrics file never became the control reply");
		usleep(50000);
	}
}

static struct pmrep_mirror *
mirror_open(struct pmrep_pmem **local, const char *name, uint64_t gen,
		const char *replica, int *err)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, DATA_SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, local), 0);
	struct pmrep_mirror_cfg *c;
	static const uint8_t uuid[PMREP_UUID_SIZE] = { 7, 1, 2, 3 };
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, "127.0.0.1", tport), 0);
	if (replica != NULL)
		assert_int_equal(pmrep_mirror_cfg_set_replica_name(c, 0, replica), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, key_len), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, gen), 0);
	assert_int_equal(pmrep_mirror_cfg_set_state_path(c, NULL), 0);
	assert_int_equal(pmrep_mirror_cfg_set_force_gpspm(c, true), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 5000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_tls(c, !plain), 0);
	struct pmrep_mirror *m = NULL;
	*err = pmrep_mirror_new(*local, c, &m);
	pmrep_mirror_cfg_delete(&c);
	return m;
}

static void
persist_n(struct pmrep_mirror *m, struct pmrep_pmem *local, int n)
{
	uint8_t *a = pmrep_pmem_get_address(local);
	for (int i = 0; i < n; i++) {
		memset(a + (size_t)i * 4096, i + 1, 4096);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)i * 4096, 4096,
				5000 * func_slow()), 0);
	}
}

/* the mirror's metrics, asked for the size first */
static char *
mirror_metrics(struct pmrep_mirror *m)
{
	size_t need = 0;
	assert_int_equal(pmrep_mirror_get_metrics(m, NULL, 0, &need), PMREP_E_RANGE);
	assert_true(need > 1000);
	char *b = malloc(need + 4096);
	assert_non_null(b);
	size_t need2 = 0;
	/* one byte short: the NUL does not fit */
	assert_int_equal(pmrep_mirror_get_metrics(m, b, need - 1, &need2), PMREP_E_RANGE);
	assert_int_equal(need2, need);
	assert_int_equal(pmrep_mirror_get_metrics(m, b, need + 4096, &need2), 0);
	assert_int_equal(strlen(b) + 1, need2);
	assert_valid(b);
	return b;
}

static int
setup(void **state)
{
	(void)state;
	if (!func_is_tcp())
		return 0;
	snprintf(dir, sizeof(dir), "/tmp/pmrep-test-metrics-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(keyfile, sizeof(keyfile), "%s/k.key", dir);
	snprintf(sock, sizeof(sock), "%s/ctl", dir);
	snprintf(mfile, sizeof(mfile), "%s/pmrep.prom", dir);
	assert_int_equal(pmrep_key_write_file(keyfile, 0, 32), 0);
	assert_int_equal(pmrep_key_read_file(keyfile, key, sizeof(key), &key_len), 0);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (tpid > 0) {
		kill(tpid, SIGKILL);
		waitpid(tpid, NULL, 0);
		tpid = 0;
	}
	if (dir[0] != '\0')
		assert_int_equal(func_rm_rf(dir), 0);
	dir[0] = '\0';
	plain = false;
	(void) pmrep_repl_set_tls_default(true);
	return 0;
}

/* a second thread asks for the mirror's metrics while it persists */
struct asker {
	struct pmrep_mirror *m;
	atomic_bool stop;
	unsigned asked;
};

static void *
ask_loop(void *arg)
{
	struct asker *a = arg;
	static char buf[1 << 16];
	while (!atomic_load(&a->stop)) {
		size_t need;
		if (pmrep_mirror_get_metrics(a->m, buf, sizeof(buf), &need) == 0)
			a->asked++;
	}
	return NULL;
}

static void
mirror_and_target_count_n_persists(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	/* plaintext: a wrong key meets the admission proof (with TLS it
	 * fails the TLS handshake first: the next test) */
	plain = true;
	(void) pmrep_repl_set_tls_default(false);
	mode_t old = umask(077);	/* the unit's: inherited by the target */
	target_start("100", NULL);
	umask(old);
	struct pmrep_pmem *local = NULL;
	int err = 0;
	struct pmrep_mirror *m = mirror_open(&local, "local", 3, NULL, &err);
	assert_int_equal(err, 0);
	/* the target before the persists: the attach's resync went by GPSPM too */
	char *before = ctl_metrics();
	double req0 = val(before, "pmrep_target_persist_requests_total{replica=\"rep\"}");
	double bytes0 = val(before, "pmrep_target_persisted_bytes_total{replica=\"rep\"}");
	double lat0 = val(before, "pmrep_target_persist_service_seconds_count{replica=\"rep\"}");
	struct asker a = { .m = m };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, ask_loop, &a), 0);
	persist_n(m, local, NPERSIST);
	atomic_store(&a.stop, true);
	pthread_join(th, NULL);
	assert_true(a.asked > 0);

	char *mm = mirror_metrics(m);
	const char *r0 = "replica=\"0\",address=\"127.0.0.1:%s\",name=\"\"";
	char rl[160];
	snprintf(rl, sizeof(rl), r0, tport);
	assert_true(val(mm, "pmrep_mirror_persists_total{set=\"" SET "\",result=\"ok\"}") == NPERSIST);
	assert_true(val(mm, "pmrep_mirror_persists_total{set=\"" SET "\",result=\"timeout\"}") == 0);
	assert_true(val(mm, "pmrep_mirror_persisted_bytes_total{set=\"" SET "\"}") == NPERSIST * 4096.0);
	assert_true(val(mm, "pmrep_mirror_persist_latency_seconds_count{set=\"" SET "\"}") == NPERSIST);
	assert_true(val(mm, "pmrep_mirror_persist_latency_seconds_bucket{set=\"" SET "\",le=\"+Inf\"}") == NPERSIST);
	assert_true(val(mm, "pmrep_mirror_persist_latency_seconds_sum{set=\"" SET "\"}") > 0);
	assert_true(val(mm, "pmrep_mirror_generation{set=\"" SET "\"}") == 3);
	assert_true(val(mm, "pmrep_mirror_in_sync_replicas{set=\"" SET "\"}") == 1);
	assert_true(val(mm, "pmrep_mirror_persists_in_flight{set=\"" SET "\"}") == 0);
	assert_true(val(mm, "pmrep_mirror_replica_state{set=\"" SET "\",%s,state=\"in_sync\"}", rl) == 1);
	assert_true(val(mm, "pmrep_mirror_replica_state{set=\"" SET "\",%s,state=\"failed\"}", rl) == 0);
	assert_true(val(mm, "pmrep_mirror_replica_lag_bytes{set=\"" SET "\",%s}", rl) == 0);
	assert_true(val(mm, "pmrep_mirror_replica_resyncs_total{set=\"" SET "\",%s}", rl) == 1);
	free(mm);

	/* the target: exactly N more GPSPM persist requests */
	char *t = ctl_metrics();
	assert_true(val(t, "pmrep_target_persist_requests_total{replica=\"rep\"}") == req0 + NPERSIST);
	assert_true(val(t, "pmrep_target_persisted_bytes_total{replica=\"rep\"}") == bytes0 + NPERSIST * 4096.0);
	assert_true(val(t, "pmrep_target_persist_service_seconds_count{replica=\"rep\"}") == lat0 + NPERSIST);
	assert_true(val(t, "pmrep_target_sessions_accepted_total{replica=\"rep\"}") == 1);
	assert_true(val(t, "pmrep_target_sessions{replica=\"rep\",state=\"active\"}") == 1);
	assert_true(val(t, "pmrep_target_sessions_in_use{replica=\"rep\"}") == 1);
	assert_true(val(t, "pmrep_target_sessions_refused_total{replica=\"rep\"}") == 0);
	assert_true(val(t, "pmrep_target_replica_info{replica=\"rep\",set=\"" SET "\",mode=\"staging\"}") == 1);
	assert_true(val(t, "pmrep_target_replica_generation{replica=\"rep\"}") == 3);
	/* the file: the same text once refreshed, and no PATH.tmp left;
	 * mode 0644 though the target ran under umask 077 */
	file_becomes(t);
	struct stat st;
	assert_int_equal(stat(mfile, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	char tmp[128];
	snprintf(tmp, sizeof(tmp), "%s.tmp", mfile);
	assert_int_equal(access(tmp, F_OK), -1);
	/* pmrep status --control --metrics: the same text, exit 0 */
	char cmd[PATH_MAX + 300];
	snprintf(cmd, sizeof(cmd), "%s/tools/pmrep status --control %s --metrics",
			bindir, sock);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char *out = calloc(1, 1 << 20);
	assert_non_null(out);
	size_t n = fread(out, 1, (1 << 20) - 1, p);
	assert_int_equal(pclose(p), 0);
	out[n] = '\0';
	assert_string_equal(out, t);
	free(out);
	free(t);
	free(before);

	assert_int_equal(pmrep_mirror_delete(&m), 0);
	(void) pmrep_pmem_close(&local);

	/* refusals by reason: a wrong key; an older generation */
	uint8_t bad[32];
	memset(bad, 0x5a, sizeof(bad));
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_query("127.0.0.1", tport, bad, sizeof(bad),
			5000 * func_slow(), &info), PMREP_E_AUTH);
	m = mirror_open(&local, "old", 2, NULL, &err);
	assert_null(m);
	assert_int_equal(err, PMREP_E_STATE);
	(void) pmrep_pmem_close(&local);
	t = ctl_metrics();
	assert_true(val(t, "pmrep_target_refusals_total{replica=\"rep\",reason=\"admission_auth\"}") == 1);
	assert_true(val(t, "pmrep_target_refusals_total{replica=\"rep\",reason=\"stale_generation\"}") == 1);
	assert_true(val(t, "pmrep_target_refusals_total{replica=\"rep\",reason=\"auth\"}") == 0);
	assert_true(val(t, "pmrep_target_sessions_refused_total{replica=\"rep\"}") == 2);
	assert_true(val(t, "pmrep_target_sessions{replica=\"rep\",state=\"active\"}") == 0);
	free(t);
	target_stop_clean();
}

static void
a_clean_stop_refreshes_the_file(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	target_start("600000", NULL);
	/* the first write comes at the first turn of the loop */
	char *f = NULL;
	long long t0 = func_now_ms();
	while ((f = read_file(mfile)) == NULL) {
		assert_true(func_now_ms() - t0 < 10000 * func_slow());
		usleep(20000);
	}
	assert_valid(f);
	assert_true(val(f, "pmrep_target_refusals_total{replica=\"rep\",reason=\"admission_auth\"}") == 0);
	free(f);
	/* a wrong key under TLS (the default): its handshake fails */
	uint8_t bad[32];
	memset(bad, 0x5a, sizeof(bad));
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_query("127.0.0.1", tport, bad, sizeof(bad),
			5000 * func_slow(), &info), PMREP_E_TLS);
	f = ctl_metrics();
	assert_true(val(f, "pmrep_target_refusals_total{replica=\"rep\",reason=\"tls\"}") == 1);
	free(f);
	f = read_file(mfile);
	assert_non_null(f);
	assert_true(val(f, "pmrep_target_refusals_total{replica=\"rep\",reason=\"tls\"}") == 0);
	free(f);
	target_stop_clean();
	f = read_file(mfile);
	assert_non_null(f);
	assert_valid(f);
	assert_true(val(f, "pmrep_target_refusals_total{replica=\"rep\",reason=\"tls\"}") == 1);
	assert_true(val(f, "pmrep_target_sessions_refused_total{replica=\"rep\"}") == 1);
	free(f);
}

static void
config_daemon_metrics_cover_every_replica(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char conf[128], text[2048];
	snprintf(conf, sizeof(conf), "%s/t.conf", dir);
	int n = snprintf(text, sizeof(text),
			"address = 127.0.0.1\nport = 0\ntimeout = %d\n"
			"metrics-file = %s\nmetrics-interval = 100\n\n",
			5000 * func_slow(), mfile);
	for (const char *c = "ab"; *c; c++)
		n += snprintf(text + n, sizeof(text) - (size_t)n,
				"[replica %c]\npath = %s/rep-%c\nsize = 1M\n"
				"create = yes\nstaging = yes\nkey-file = %s\n\n",
				*c, dir, *c, keyfile);
	int fd = open(conf, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, (size_t)n), n);
	close(fd);
	target_start(NULL, conf);
	struct pmrep_pmem *local = NULL;
	int err = 0;
	struct pmrep_mirror *m = mirror_open(&local, "local", 3, "b", &err);
	assert_int_equal(err, 0);
	char *before = ctl_metrics();
	double b0 = val(before, "pmrep_target_persist_requests_total{replica=\"b\"}");
	assert_true(val(before, "pmrep_target_persist_requests_total{replica=\"a\"}") == 0);
	persist_n(m, local, NPERSIST);
	char *t = ctl_metrics();
	/* each family once, a sample per replica */
	const char *h = "# TYPE pmrep_target_persist_requests_total counter\n";
	const char *first = strstr(t, h);
	assert_non_null(first);
	assert_null(strstr(first + 1, h));
	assert_true(val(t, "pmrep_target_persist_requests_total{replica=\"b\"}") == b0 + NPERSIST);
	assert_true(val(t, "pmrep_target_persist_requests_total{replica=\"a\"}") == 0);
	assert_true(val(t, "pmrep_target_sessions{replica=\"b\",state=\"active\"}") == 1);
	assert_true(val(t, "pmrep_target_sessions{replica=\"a\",state=\"active\"}") == 0);
	assert_true(val(t, "pmrep_target_replica_info{replica=\"b\",set=\"" SET "\",mode=\"staging\"}") == 1);
	assert_true(val(t, "pmrep_target_replica_info{replica=\"a\",set=\"\",mode=\"staging\"}") == 1);
	assert_true(val(t, "pmrep_listener_replicas") == 2);
	assert_true(val(t, "pmrep_listener_requests_total{result=\"dispatched\"}") >= 1);
	file_becomes(t);
	free(t);
	free(before);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	(void) pmrep_pmem_close(&local);
	target_stop_clean();
}

/* the sum of the samples whose series starts with `prefix` */
static double
sum_of(const char *text, const char *prefix)
{
	double sum = 0;
	size_t n = strlen(prefix);
	for (const char *p = text; p != NULL && *p != '\0';) {
		if (strncmp(p, prefix, n) == 0) {
			const char *sp = strchr(p, ' ');
			assert_non_null(sp);
			sum += strtod(sp + 1, NULL);
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return sum;
}

static void
a_lost_replica_is_failed_with_its_error(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	target_start("100", NULL);
	struct pmrep_pmem *local = NULL;
	int err = 0;
	struct pmrep_mirror *m = mirror_open(&local, "local", 3, NULL, &err);
	assert_int_equal(err, 0);
	persist_n(m, local, 3);
	/* the target dies: the next persist fails, the replica is FAILED */
	kill(tpid, SIGKILL);
	waitpid(tpid, NULL, 0);
	tpid = 0;
	uint8_t *a = pmrep_pmem_get_address(local);
	memset(a, 0x77, 4096);
	int ret = pmrep_mirror_persist(m, 0, 4096, 5000 * func_slow());
	assert_true(ret == PMREP_E_CONN_LOST || ret == PMREP_E_TIMEOUT);
	char *mm = mirror_metrics(m);
	char rl[200];
	snprintf(rl, sizeof(rl), "set=\"" SET "\",replica=\"0\",address=\"127.0.0.1:%s\",name=\"\"",
			tport);
	assert_true(val(mm, "pmrep_mirror_replica_state{%s,state=\"failed\"}", rl) == 1);
	assert_true(val(mm, "pmrep_mirror_replica_state{%s,state=\"in_sync\"}", rl) == 0);
	assert_true(val(mm, "pmrep_mirror_in_sync_replicas{set=\"" SET "\"}") == 0);
	assert_true(val(mm, "pmrep_mirror_persists_total{set=\"" SET "\",result=\"ok\"}") == 3);
	assert_true(val(mm, "pmrep_mirror_persists_total{set=\"" SET "\",result=\"%s\"}",
			ret == PMREP_E_CONN_LOST ? "conn_lost" : "timeout") == 1);
	assert_true(val(mm, "pmrep_mirror_persist_latency_seconds_count{set=\"" SET "\"}") == 4);
	char prefix[256];
	snprintf(prefix, sizeof(prefix), "pmrep_mirror_replica_failures_total{%s,error=", rl);
	assert_true(sum_of(mm, prefix) >= 1);
	/* the whole data area is out of sync for it: no record in memory */
	assert_true(val(mm, "pmrep_mirror_replica_lag_bytes{%s}", rl) > 0);
	free(mm);
	(void) pmrep_mirror_delete(&m);
	(void) pmrep_pmem_close(&local);
}

int
main(int argc, char *argv[])
{
	(void)argc;
	func_build_root(bindir, sizeof(bindir), argv[0]);
	signal(SIGPIPE, SIG_IGN);
	(void) pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(mirror_and_target_count_n_persists, setup, teardown),
		cmocka_unit_test_setup_teardown(a_clean_stop_refreshes_the_file, setup, teardown),
		cmocka_unit_test_setup_teardown(a_lost_replica_is_failed_with_its_error, setup, teardown),
		cmocka_unit_test_setup_teardown(config_daemon_metrics_cover_every_replica, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
