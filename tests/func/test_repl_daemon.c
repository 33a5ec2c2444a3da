/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_daemon.c -- pmrep-target --config: one daemon serving several
 * replicas on one port (child processes on 127.0.0.1, tcp only; every
 * child killed after a bound):
 *  - two replicas on one port: each mirror (its own key, its replica's
 *    name) reaches its own file; pmrep verify finds each IDENTICAL to its
 *    source and different from the other's; each header holds its own
 *    mirror's UUID;
 *  - a selector naming no replica: refused at the mirror (its attach
 *    fails, the target logs "serves no replica named"), an empty one on a
 *    two-replica endpoint too; with no replica's key: rejected at once;
 *  - a replica whose handshakes stall (its per-source bound full of
 *    initiators that never send AUTH) and a wrong-key mirror on it: the
 *    other replica's attached mirror persists in sync throughout, and a
 *    new mirror of the other replica attaches from the same address;
 *  - SIGHUP adding a key (id 2) to one replica: a mirror with key id 2
 *    attaches to it (refused before), while the other replica's session
 *    keeps persisting without a resync; the log file is reopened (a
 *    logrotate's rename); a replica removed from the file is no longer
 *    served, one added is;
 *  - SIGHUP with a broken config: the running configuration stays, an
 *    error names FILE:LINE, sessions and new attaches go on;
 *  - malformed configs: exit 2, "FILE:LINE: what", no replica file made;
 *    --config with --path: exit 2;
 *  - sd_notify: READY=1 after it listens, RELOADING=1 / READY=1 around a
 *    SIGHUP, STOPPING=1 at SIGTERM (skipped in a build without libsystemd).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
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
#include <pmrep/transport.h>

#include "func.h"
#include "proc.h"
#include "repl_hello.h"

#define DATA_SIZE (256u << 10)
#define CHILD_LIMIT_MS 20000

static char bindir[PATH_MAX - 64];
static char dir[64];
static char conf[128], logpath[128];
static char kfa[128], kfb[128];
static const uint8_t key_a[] = "daemon-test-key-a-0123456789abcdef";
static const uint8_t key_b[] = "daemon-test-key-b-0123456789abcdef";
static const uint8_t uuid_a[PMREP_UUID_SIZE] = { 0xaa, 1, 2, 3, 4, 5, 6, 7,
	8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t uuid_b[PMREP_UUID_SIZE] = { 0xbb, 1, 2, 3, 4, 5, 6, 7,
	8, 9, 10, 11, 12, 13, 14, 15 };
static pid_t pid;
static bool mirror_tls = true;	/* the mirrors' TLS (tls = off: false) */
static char port[8];

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-daemon-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(kfa, sizeof(kfa), "%s/a.key", dir);
	snprintf(kfb, sizeof(kfb), "%s/b.key", dir);
	func_write_file(kfa, key_a, sizeof(key_a) - 1);
	func_write_file(kfb, key_b, sizeof(key_b) - 1);
	snprintf(conf, sizeof(conf), "%s/target.conf", dir);
	snprintf(logpath, sizeof(logpath), "%s/target.log", dir);
	pid = 0;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = 0;
	}
	assert_int_equal(func_rm_rf(dir), 0);
	return 0;
}

static void
program(const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", bindir, rel);
	if (access(buf, X_OK) != 0)
		skip();
}

__attribute__((format(printf, 1, 2)))
static void
write_conf(const char *fmt, ...)
{
	char text[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(text));
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.tmp", conf);
	func_write_file(tmp, text, (size_t)n);
	assert_int_equal(rename(tmp, conf), 0);	/* whole, as an editor's save */
}

/* the usual two replicas a (key a) and b (key b), `extra` lines for b */
static void
write_conf_ab(const char *global, const char *extra_b)
{
	write_conf("# two replicas on one port\n"
			"address = 127.0.0.1\nport = 0\n%s\n"
			"timeout = %d\nlog-file = %s\n\n"
			"[replica a]\npath = %s/a\nsize = 256K\ncreate = yes\n"
			"key-file = %s\n\n"
			"[replica b]\npath = %s/b\nsize = 256K\ncreate = yes\n"
			"key-file = %s\n%s\n",
			global, 5000 * func_slow(), logpath, dir, kfa, dir, kfb,
			extra_b);
}

/* start pmrep-target --config conf; its port from the "listening on" line */
static void
daemon_start(void)
{
	char exe[PATH_MAX];
	program("tools/pmrep-target", exe, sizeof(exe));
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		unsetenv("PMREP_LOG_LEVEL");
		execl(exe, exe, "--config", conf, "--verbose", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[256];
	func_read_line(p[0], buf, sizeof(buf));
	close(p[0]);
	/* "listening on 127.0.0.1:PORT (2 replicas: a b)" */
	char *at = strstr(buf, "listening on 127.0.0.1:");
	assert_non_null(at);
	assert_int_equal(sscanf(at, "listening on 127.0.0.1:%7[0-9]", port), 1);
}

static void
stop_clean(void)
{
	int st = 0;
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	pid = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void
assert_alive(void)
{
	int st;
	assert_int_equal(waitpid(pid, &st, WNOHANG), 0);
}

static void
wait_log(const char *needle, int times)
{
	func_wait_text(logpath, needle, times);
}

static uint8_t
pattern(size_t i, unsigned seed)
{
	return (uint8_t)(i * 7 + (i >> 12) + 1 + seed * 31);
}

struct src {
	char path[128];
	struct pmrep_pmem *pmem;
	struct pmrep_mirror_cfg *cfg;
	struct pmrep_mirror *m;
	struct pmrep_replica_status rs0;
};

/* a source `name` of pattern `seed` mirrored to replica `replica` with
 * `key` (`key_id`); the mirror's pmrep_mirror_new result */
static int
mirror_try(struct src *s, const char *name, unsigned seed, const char *replica,
		const uint8_t *key, size_t key_len, uint32_t key_id,
		const uint8_t *uuid)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "%s/%s", dir, name);
	assert_int_equal(pmrep_pmem_open(s->path, PMREP_PMEM_CREATE, DATA_SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &s->pmem), 0);
	uint8_t *p = pmrep_pmem_get_address(s->pmem);
	for (size_t i = 0; i < DATA_SIZE; i++)
		p[i] = pattern(i, seed);
	assert_int_equal(pmrep_mirror_cfg_new(&s->cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(s->cfg, "127.0.0.1", port), 0);
	if (replica)
		assert_int_equal(pmrep_mirror_cfg_set_replica_name(s->cfg, 0, replica), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(s->cfg, key, key_len), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key_id(s->cfg, key_id), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(s->cfg, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(s->cfg, 3), 0);
	assert_int_equal(pmrep_mirror_cfg_set_tls(s->cfg, mirror_tls), 0);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(s->cfg,
			3000 * func_slow()), 0);
	int ret = pmrep_mirror_new(s->pmem, s->cfg, &s->m);
	if (ret == 0) {
		assert_int_equal(pmrep_mirror_persist(s->m, 0, DATA_SIZE,
				5000 * func_slow()), 0);
		assert_int_equal(pmrep_mirror_get_replica_status(s->m, 0, &s->rs0), 0);
		assert_int_equal(s->rs0.state, PMREP_REPLICA_IN_SYNC);
	}
	return ret;
}

static void
mirror_ok(struct src *s, const char *name, unsigned seed, const char *replica,
		const uint8_t *key, size_t key_len, uint32_t key_id,
		const uint8_t *uuid)
{
	assert_int_equal(mirror_try(s, name, seed, replica, key, key_len,
			key_id, uuid), 0);
}

/* one byte changed and persisted: in sync, no resync, no failure */
static void
persist_in_sync(struct src *s, size_t off)
{
	uint8_t *p = pmrep_pmem_get_address(s->pmem);
	p[off] = (uint8_t)~p[off];
	assert_int_equal(pmrep_mirror_persist(s->m, off, 1, 5000 * func_slow()), 0);
	struct pmrep_replica_status rs;
	assert_int_equal(pmrep_mirror_get_replica_status(s->m, 0, &rs), 0);
	assert_int_equal(rs.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(rs.last_error, 0);
	assert_int_equal(rs.resyncs, s->rs0.resyncs);
}

static void
src_close(struct src *s)
{
	assert_int_equal(pmrep_mirror_delete(&s->m), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&s->cfg), 0);
	assert_int_equal(pmrep_pmem_close(&s->pmem), 0);
}

/* run argv, stdout and stderr into `out`; its exit status */
static int
run_out(char *const argv[], char *out, size_t out_len)
{
	char tmp[128];
	snprintf(tmp, sizeof(tmp), "%s/run.out", dir);
	return func_run_capture(argv, tmp, out, out_len, CHILD_LIMIT_MS);
}

/* pmrep verify SOURCE REPLICA: its exit status (0 IDENTICAL) */
static int
verify(const char *source, const char *replica)
{
	char exe[PATH_MAX], out[4096];
	program("tools/pmrep", exe, sizeof(exe));
	char *v[] = { exe, "verify", (char *)source, (char *)replica, NULL };
	int ret = run_out(v, out, sizeof(out));
	if (ret == 0)
		assert_non_null(strstr(out, "IDENTICAL"));
	return ret;
}

/* ------------------------------------------------------------- tests */

/* two replicas on one port: each mirror reaches its own file */
static void
two_replicas_on_one_port(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	write_conf_ab("", "");
	daemon_start();
	struct src a, b;
	mirror_ok(&a, "src-a", 1, "a", key_a, sizeof(key_a) - 1, 0, uuid_a);
	mirror_ok(&b, "src-b", 2, "b", key_b, sizeof(key_b) - 1, 0, uuid_b);
	persist_in_sync(&a, 100);
	persist_in_sync(&b, 200);
	src_close(&a);
	src_close(&b);
	char ra[128], rb[128];
	snprintf(ra, sizeof(ra), "%s/a", dir);
	snprintf(rb, sizeof(rb), "%s/b", dir);
	assert_int_equal(verify(a.path, ra), 0);
	assert_int_equal(verify(b.path, rb), 0);
	assert_int_equal(verify(a.path, rb), 1);
	assert_int_equal(verify(b.path, ra), 1);
	struct pmrep_replica_info ia, ib;
	assert_int_equal(pmrep_replica_read_info(ra, &ia), 0);
	assert_int_equal(pmrep_replica_read_info(rb, &ib), 0);
	assert_memory_equal(ia.uuid, uuid_a, PMREP_UUID_SIZE);
	assert_memory_equal(ib.uuid, uuid_b, PMREP_UUID_SIZE);
	assert_true(ia.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_true(ib.flags & PMREP_REPLICA_F_CONSISTENT);
	wait_log("serving replica \"a\"", 1);
	wait_log("serving replica \"b\"", 1);
	/* pmrep status ADDR:PORT/NAME asks the named one */
	char exe[PATH_MAX], out[4096], t[64];
	program("tools/pmrep", exe, sizeof(exe));
	snprintf(t, sizeof(t), "127.0.0.1:%s/a", port);
	char *sa[] = { exe, "status", t, "--key-file", kfa, "--json", NULL };
	assert_int_equal(run_out(sa, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "\"uuid\":\"aa0102030405060708090a0b0c0d0e0f\""));
	snprintf(t, sizeof(t), "127.0.0.1:%s/b", port);
	char *sb[] = { exe, "status", t, "--key-file", kfb, "--json", NULL };
	assert_int_equal(run_out(sb, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "\"uuid\":\"bb0102030405060708090a0b0c0d0e0f\""));
	/* with a's key b is not reachable; no name on two replicas: refused */
	char *sx[] = { exe, "status", t, "--key-file", kfa, NULL };
	assert_int_equal(run_out(sx, out, sizeof(out)), 2);
	snprintf(t, sizeof(t), "127.0.0.1:%s", port);
	char *sn[] = { exe, "status", t, "--key-file", kfa, NULL };
	assert_int_equal(run_out(sn, out, sizeof(out)), 2);
	assert_non_null(strstr(out, "no such replica on this target"));
	struct pmrep_replica_info q;
	assert_int_equal(pmrep_replica_query_named("127.0.0.1", port, "b", key_b,
			sizeof(key_b) - 1, 5000 * func_slow(), &q), 0);
	assert_memory_equal(q.uuid, uuid_b, PMREP_UUID_SIZE);
	stop_clean();
}

/* a selector naming no replica is refused at the mirror */
static void
unknown_selector_is_refused(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	write_conf_ab("", "");
	daemon_start();
	struct src x;
	/* a key holder (key a) asking for "zzz": told so at AUTH */
	assert_int_not_equal(mirror_try(&x, "src-x", 3, "zzz", key_a,
			sizeof(key_a) - 1, 0, uuid_a), 0);
	(void) pmrep_mirror_cfg_delete(&x.cfg);
	(void) pmrep_pmem_close(&x.pmem);
	wait_log("initiator refused: no such replica on this target: this endpoint serves no replica named \"zzz\"; it serves \"a\" \"b\"", 1);
	/* no name on an endpoint of two replicas: which one? refused too */
	assert_int_not_equal(mirror_try(&x, "src-y", 3, NULL, key_b,
			sizeof(key_b) - 1, 0, uuid_b), 0);
	(void) pmrep_mirror_cfg_delete(&x.cfg);
	(void) pmrep_pmem_close(&x.pmem);
	wait_log("the initiator named no replica; this endpoint serves several: \"a\" \"b\"", 1);
	/* no replica's key: rejected before any session */
	static const uint8_t other[] = "nobody-holds-this-key-0123456789ab";
	assert_int_not_equal(mirror_try(&x, "src-z", 3, "zzz", other,
			sizeof(other) - 1, 0, uuid_b), 0);
	(void) pmrep_mirror_cfg_delete(&x.cfg);
	(void) pmrep_pmem_close(&x.pmem);
	/* and both replicas are untouched and served */
	struct src a;
	mirror_ok(&a, "src-a", 1, "a", key_a, sizeof(key_a) - 1, 0, uuid_a);
	src_close(&a);
	char rb[128];
	snprintf(rb, sizeof(rb), "%s/b", dir);
	struct pmrep_replica_info ib;
	assert_int_equal(pmrep_replica_read_info(rb, &ib), 0);
	uint8_t nil[PMREP_UUID_SIZE] = { 0 };
	assert_memory_equal(ib.uuid, nil, PMREP_UUID_SIZE);
	stop_clean();
}

/* a session to replica `sel` that sends its HELLO and nothing more (no
 * TLS: the config says tls = off); true when it was admitted (a session
 * waits for its AUTH) */
struct frozen {
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;
};

static bool
frozen_hello(struct frozen *f, const char *sel, const uint8_t *key, size_t len)
{
	uint8_t hello[FUNC_HELLO_LEN];
	func_repl_hello(hello, key, len, 0, sel, func_admit_window(0), NULL);
	f->peer = func_peer(false);
	struct pmrep_conn_req *req;
	assert_int_equal(pmrep_conn_req_new(f->peer, "127.0.0.1", port, NULL, &req), 0);
	struct pmrep_conn_private_data pd = { hello, sizeof(hello) };
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &f->conn), 0);
	enum pmrep_conn_event ev = PMREP_CONN_UNDEFINED;
	assert_int_equal(pmrep_conn_wait_event(f->conn, 5000 * func_slow(), &ev), 0);
	return ev == PMREP_CONN_ESTABLISHED;
}

static void
frozen_close(struct frozen *f)
{
	(void) pmrep_conn_disconnect(f->conn);
	(void) pmrep_conn_delete(&f->conn);
	(void) pmrep_peer_delete(&f->peer);
}

/* a replica whose handshakes stall, and a wrong key on it: the other
 * replica's session persists in sync, and a new mirror attaches to it */
static void
stalled_replica_does_not_stall_the_other(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	/* a long handshake deadline on a: the stalled sessions hold its
	 * slots for the whole test */
	write_conf("address = 127.0.0.1\nport = 0\ntls = off\nlog-file = %s\n"
			"timeout = %d\n"
			"[replica a]\npath = %s/a\nsize = 256K\ncreate = yes\n"
			"key-file = %s\ntimeout = 60000\n"
			"[replica b]\npath = %s/b\nsize = 256K\ncreate = yes\n"
			"key-file = %s\n",
			logpath, 5000 * func_slow(), dir, kfa, dir, kfb);
	daemon_start();
	struct src b;
	mirror_tls = false;	/* the mirrors speak plaintext to it */
	mirror_ok(&b, "src-b", 2, "b", key_b, sizeof(key_b) - 1, 0, uuid_b);

	/* replica a: as many stalled handshakes from 127.0.0.1 as one
	 * source may have pending; the next one is refused (busy) */
	struct frozen f[3];
	assert_true(frozen_hello(&f[0], "a", key_a, sizeof(key_a) - 1));
	persist_in_sync(&b, 10);
	assert_true(frozen_hello(&f[1], "a", key_a, sizeof(key_a) - 1));
	persist_in_sync(&b, 20);
	assert_false(frozen_hello(&f[2], "a", key_a, sizeof(key_a) - 1));
	frozen_close(&f[2]);
	wait_log("its address has as many handshakes pending as one source may have", 1);
	persist_in_sync(&b, 30);
	/* a wrong key on a: refused, b persists on */
	assert_false(frozen_hello(&f[2], "a", key_b, sizeof(key_b) - 1));
	frozen_close(&f[2]);
	persist_in_sync(&b, 40);
	/* replica b's own bound and slots: a new session from the same
	 * address is admitted there (b's stalled handshake, then closed) */
	assert_true(frozen_hello(&f[2], "b", key_b, sizeof(key_b) - 1));
	frozen_close(&f[2]);
	persist_in_sync(&b, 50);
	/* a's sessions are still stalled, the daemon serves on */
	assert_alive();
	frozen_close(&f[0]);
	frozen_close(&f[1]);
	persist_in_sync(&b, 60);
	src_close(&b);
	char rb[128];
	snprintf(rb, sizeof(rb), "%s/b", dir);
	assert_int_equal(verify(b.path, rb), 0);
	mirror_tls = true;
	stop_clean();
}

/* SIGHUP: a key added to replica b (id 2) admits a mirror naming it
 * while replica a's session persists on; the log reopened; replicas
 * removed / added; a broken config on SIGHUP keeps everything */
static void
sighup_adds_a_key_and_keeps_sessions(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char kb2[128];
	snprintf(kb2, sizeof(kb2), "%s/b2.key", dir);
	assert_int_equal(pmrep_key_write_file(kb2, 2, 32), 0);
	uint8_t key2[PMREP_KEY_MAX];
	size_t key2_len = 0;
	uint32_t id2 = 0;
	assert_int_equal(pmrep_key_read_file_ex(kb2, 0, key2, sizeof(key2),
			&key2_len, &id2), 0);
	assert_int_equal(id2, 2);
	write_conf_ab("", "");
	daemon_start();
	struct src a, b2;
	mirror_ok(&a, "src-a", 1, "a", key_a, sizeof(key_a) - 1, 0, uuid_a);
	/* key id 2 is not b's yet */
	assert_int_not_equal(mirror_try(&b2, "src-b", 2, "b", key2, key2_len,
			2, uuid_b), 0);
	(void) pmrep_mirror_cfg_delete(&b2.cfg);
	(void) pmrep_pmem_close(&b2.pmem);
	persist_in_sync(&a, 1);

	/* logrotate: the log renamed away, then SIGHUP */
	char rotated[160];
	snprintf(rotated, sizeof(rotated), "%s.1", logpath);
	assert_int_equal(rename(logpath, rotated), 0);
	char line[200];
	snprintf(line, sizeof(line), "key-file = %s\n", kb2);
	write_conf_ab("", line);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_log("pmrep-target: SIGHUP: replica b: 2 key(s) held", 1);
	wait_log("pmrep-target: SIGHUP: replica a: 1 key(s) held", 1);
	persist_in_sync(&a, 2);
	mirror_ok(&b2, "src-b", 2, "b", key2, key2_len, 2, uuid_b);
	persist_in_sync(&a, 3);
	persist_in_sync(&b2, 4);

	/* a broken config: everything stays */
	write_conf("address = 127.0.0.1\nport = 0\nlog-file = %s\n"
			"[replica a]\npath = %s/a\nbogus line\n", logpath, dir);
	assert_int_equal(kill(pid, SIGHUP), 0);
	char err[300];
	snprintf(err, sizeof(err), "pmrep-target: SIGHUP: %s:6: expected \"key = value\", a comment (#) or a section, got \"bogus line\"; the running configuration stays",
			conf);
	wait_log(err, 1);
	assert_alive();
	persist_in_sync(&a, 5);
	persist_in_sync(&b2, 6);
	src_close(&b2);
	/* and new attaches go on, with b's new key */
	mirror_ok(&b2, "src-b", 2, "b", key2, key2_len, 2, uuid_b);
	src_close(&b2);

	/* replica b removed, c added: b is no longer served, c is; a's
	 * session stays */
	write_conf("address = 127.0.0.1\nport = 0\nlog-file = %s\ntimeout = %d\n"
			"[replica a]\npath = %s/a\nsize = 256K\ncreate = yes\nkey-file = %s\n"
			"[replica c]\npath = %s/c\nsize = 256K\ncreate = yes\nkey-file = %s\n",
			logpath, 5000 * func_slow(), dir, kfa, dir, kfb);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_log("2 replicas served (1 added, 0 failed)", 1);
	persist_in_sync(&a, 7);
	assert_int_not_equal(mirror_try(&b2, "src-b", 2, "b", key_b,
			sizeof(key_b) - 1, 0, uuid_b), 0);
	(void) pmrep_mirror_cfg_delete(&b2.cfg);
	(void) pmrep_pmem_close(&b2.pmem);
	struct src c;
	mirror_ok(&c, "src-c", 4, "c", key_b, sizeof(key_b) - 1, 0, uuid_b);
	src_close(&c);
	persist_in_sync(&a, 8);
	src_close(&a);
	char ra[128];
	snprintf(ra, sizeof(ra), "%s/a", dir);
	assert_int_equal(verify(a.path, ra), 0);
	/* the rotated file kept what came before the SIGHUP */
	func_wait_text(rotated, "serving replica \"a\"", 1);
	stop_clean();
}

/* malformed configs: exit 2, FILE:LINE, nothing created */
static void
config_errors_name_file_and_line(void **state)
{
	(void)state;
	char exe[PATH_MAX], out[8192], want[300];
	program("tools/pmrep-target", exe, sizeof(exe));
	static const struct {
		const char *text;
		int line;
		const char *what;
	} bad[] = {
		{ "port = 0\n[replica a]\npath = %s/a\nsize = 1M\ncreate = yes\nkey-file = %s\nsize = 2M\n",
			7, "size given twice" },
		{ "port = 0\n[replica a]\npath = %s/a\nsize = 1M\ncreate = maybe\nkey-file = %s\n",
			5, "create = maybe: not yes / no" },
		{ "port = 0\nlisten = 1\n[replica a]\npath = %s/a\nkey-file = %s\n",
			2, "unknown key \"listen\"" },
		{ "port = 0\n[replica a/b]\npath = %s/a\nkey-file = %s\n",
			2, "replica name \"a/b\": 1..20 letters" },
		{ "port = 0\n[replica a]\npath = %s/a\nsize = 1M\ncreate = yes\n\n[replica b]\npath = %s/b\n",
			2, "[replica a] has no key-file or key-dir" },
		{ "port = 0\n[replica a]\npath = %s/a\nkey-file = %s\n[replica a]\npath = %s/b\nkey-file = k\n",
			5, "[replica a] given twice (first at line 2)" },
		{ "port = 99999\n[replica a]\npath = %s/a\nkey-file = %s\n",
			1, "port = 99999: a number 0..65535" },
		{ "port = 0\n[replica a]\npath = %s/a\nsize = 1M\ncreate = yes\nkey-file = %s\n[replica b]\npath = %s/a\nkey-file = %s\n",
			7, "[replica b] has the path of [replica a] (line 2)" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text), bad[i].text, dir, kfa, dir, kfa);
		func_write_file(conf, text, strlen(text));
		char *a[] = { exe, "--config", conf, NULL };
		assert_int_equal(run_out(a, out, sizeof(out)), 2);
		snprintf(want, sizeof(want), "pmrep-target: %s:%d: %s", conf,
				bad[i].line, bad[i].what);
		if (strstr(out, want) == NULL)
			fail_msg("config %zu: no '%s' in '%s'", i, want, out);
		char ra[128];
		snprintf(ra, sizeof(ra), "%s/a", dir);
		assert_int_not_equal(access(ra, F_OK), 0);
	}
	/* no replica at all; a missing file */
	func_write_file(conf, "port = 0\n", 9);
	char *a[] = { exe, "--config", conf, NULL };
	assert_int_equal(run_out(a, out, sizeof(out)), 2);
	snprintf(want, sizeof(want), "pmrep-target: %s: no [replica NAME] section", conf);
	assert_non_null(strstr(out, want));
	char missing[160];
	snprintf(missing, sizeof(missing), "%s/none.conf", dir);
	char *m[] = { exe, "--config", missing, NULL };
	assert_int_equal(run_out(m, out, sizeof(out)), 2);
	snprintf(want, sizeof(want), "pmrep-target: %s: No such file or directory", missing);
	assert_non_null(strstr(out, want));
	/* --config excludes the replica's own options */
	char *x[] = { exe, "--config", conf, "--path", "/tmp/x", NULL };
	assert_int_equal(run_out(x, out, sizeof(out)), 2);
	assert_non_null(strstr(out, "--path and --config exclude each other"));
	/* a start that fails on its second replica removes the first's new
	 * file: nothing of it stays */
	char text[1024];
	snprintf(text, sizeof(text), "port = 0\n[replica a]\npath = %s/a\nsize = 1M\ncreate = yes\nkey-file = %s\n"
			"[replica b]\npath = %s/nodir/b\nsize = 1M\ncreate = yes\nkey-file = %s\n",
			dir, kfa, dir, kfa);
	func_write_file(conf, text, strlen(text));
	assert_int_equal(run_out(a, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "[replica b] ("));
	char ra[128];
	snprintf(ra, sizeof(ra), "%s/a", dir);
	assert_int_not_equal(access(ra, F_OK), 0);
}

/* sd_notify: READY=1 once listening, RELOADING=1 then READY=1 around a
 * SIGHUP, STOPPING=1 at SIGTERM */
static void
notify_readiness(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	char sock[96];
	snprintf(sock, sizeof(sock), "%.80s/notify", dir);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(setenv("NOTIFY_SOCKET", sock, 1), 0);
	write_conf_ab("", "");
	daemon_start();
	unsetenv("NOTIFY_SOCKET");
	char msg[600];
	struct pollfd pf = { fd, POLLIN, 0 };
	if (poll(&pf, 1, 3000 * func_slow()) <= 0) {
		/* none: a build without libsystemd says so in its log */
		wait_log("built without libsystemd", 1);
		stop_clean();
		close(fd);
		skip();
	}
	ssize_t n = recv(fd, msg, sizeof(msg) - 1, 0);
	assert_true(n > 0);
	msg[n] = '\0';
	char want[200];
	snprintf(want, sizeof(want), "READY=1\nSTATUS=serving 2 replicas on 127.0.0.1:%s", port);
	assert_string_equal(msg, want);
	assert_int_equal(kill(pid, SIGHUP), 0);
	assert_true(poll(&pf, 1, 5000 * func_slow()) > 0);
	n = recv(fd, msg, sizeof(msg) - 1, 0);
	assert_true(n > 0);
	msg[n] = '\0';
	assert_true(strncmp(msg, "RELOADING=1\nMONOTONIC_USEC=", 27) == 0);
	assert_true(poll(&pf, 1, 5000 * func_slow()) > 0);
	n = recv(fd, msg, sizeof(msg) - 1, 0);
	assert_true(n > 0);
	msg[n] = '\0';
	assert_string_equal(msg, want);
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_true(poll(&pf, 1, 5000 * func_slow()) > 0);
	n = recv(fd, msg, sizeof(msg) - 1, 0);
	assert_true(n > 0);
	msg[n] = '\0';
	assert_string_equal(msg, "STOPPING=1\nSTATUS=stopping");
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	pid = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	close(fd);
}

int
main(int argc, char *argv[])
{
	(void)argc;
	func_build_root(bindir, sizeof(bindir), argv[0]);
	signal(SIGPIPE, SIG_IGN);
	pmrep_log_set_threshold(PMREP_LOG_WARNING);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(two_replicas_on_one_port, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_selector_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(stalled_replica_does_not_stall_the_other, setup, teardown),
		cmocka_unit_test_setup_teardown(sighup_adds_a_key_and_keeps_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(config_errors_name_file_and_line, setup, teardown),
		cmocka_unit_test_setup_teardown(notify_readiness, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
