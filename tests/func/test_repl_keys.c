/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_keys.c -- flood resistance and keys of a replica target, over
 * tcp on loopback (tcp provider only):
 *  - (b) a flood of keyless HELLOs from another source address (127.0.0.2;
 *    every 127/8 address is loopback) while 10 mirrors attach one after
 *    another from 127.0.0.1: all 10 attach within their timeouts (before
 *    the admission proof, 0 of 10 got through such a flood: refused at the
 *    full endpoint, or evicted before their AUTH), and the flood really ran
 *    (its rejections are counted) without any of it taking a session slot;
 *  - (e) key rotation: a target with keys 1 and 2; mirrors with either key
 *    attach, and one naming key id 0 too (the target tries its keys); a
 *    key named by the wrong id is refused; after key 1 is removed from
 *    the running target, the mirror attached with it goes on (its
 *    session stays), but a new attach with key 1 is refused with
 *    PMREP_E_AUTH, while key 2 still attaches;
 *  - pmrep-target's key files: mode 0644 refused (exit 1) unless
 *    --insecure-key-file; two keygen files (ids 1, 2) served at once; a
 *    SIGHUP after one file was replaced swaps the key without a restart;
 *  - pmrep-target --key-dir: a key file dropped into the directory is
 *    served after a SIGHUP, one removed is refused after the next (with
 *    TLS: PMREP_E_TLS), while the mirror attached with it before goes on
 *    persisting; a scan that meets a symbolic link *.key or more than 4
 *    keys leaves the keys as they were; a directory others may write
 *    into is refused at start (exit 1);
 *  - a lost ACCEPT: a relay passes a mirror's HELLO to the target, which
 *    admits it (a session starts), and cuts the connection instead of
 *    passing the ACCEPT back; the mirror's next attempt is a new dial
 *    with a fresh nonce and proof, admitted -- not refused as a replay
 *    (the target counts no replay, no refusal).
 * Past ~800 lines: one program for a target's keys; its cases share fixtures.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_hello.h"

#define SIZE (256u << 10)
#define MIRROR_TIMEOUT_MS 5000

static const uint8_t key1[32] = "rotation-key-1-0123456789abcdefg";
static const uint8_t key2[32] = "rotation-key-2-0123456789abcdefg";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

struct ctx {
	char dir[64];
	struct pmrep_pmem *src;
	struct pmrep_target *t;
	pthread_t th;
	bool running;
	atomic_bool stop;
	char port[8];
	uint16_t nport;
	/* plaintext tcp on both ends: the admission layer alone is the gate
	 * (with TLS, keyless HELLOs already fail the TLS handshake, and key id
	 * 0 on a target with several keys names none: tls_psk.c) */
	bool plain;
};

static void *
tgt_loop(void *arg)
{
	struct ctx *c = arg;
	while (!atomic_load(&c->stop))
		(void) pmrep_target_process(c->t, 20);
	return NULL;
}

static void
tgt_run(struct ctx *c)
{
	atomic_store(&c->stop, false);
	assert_int_equal(pthread_create(&c->th, NULL, tgt_loop, c), 0);
	c->running = true;
}

static void
tgt_halt(struct ctx *c)
{
	if (!c->running)
		return;
	atomic_store(&c->stop, true);
	pthread_join(c->th, NULL);
	c->running = false;
}

/* a target holding keys[0..n) with ids ids[0..n) */
static void
tgt_new(struct ctx *c, const uint8_t *const *keys, const uint32_t *ids, int n)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/replica", c->dir);
	struct pmrep_target_cfg *cfg;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, SIZE, true), 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(pmrep_target_cfg_add_key(cfg, ids[i], keys[i], 32), 0);
	assert_int_equal(pmrep_target_cfg_set_timeout(cfg, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_target_cfg_set_tls(cfg, !c->plain), 0);
	assert_int_equal(pmrep_target_new(cfg, &c->t), 0);
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_target_get_port(c->t, &c->nport), 0);
	snprintf(c->port, sizeof(c->port), "%u", c->nport);
}

static int
setup(void **state)
{
	if (!func_is_tcp())
		return 0;
	struct ctx *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	snprintf(c->dir, sizeof(c->dir), "/dev/shm/pmrep-test-keys-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/source", c->dir);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &c->src), 0);
	func_pattern(pmrep_pmem_get_address(c->src), SIZE, 11);
	*state = c;
	return 0;
}

/* the pmrep-target child not waited for yet (a failed assertion leaves
 * it: teardown kills it) */
static pid_t live_pid;

static int
teardown(void **state)
{
	if (live_pid > 0) {
		kill(live_pid, SIGKILL);
		(void) waitpid(live_pid, NULL, 0);
		live_pid = 0;
	}
	struct ctx *c = *state;
	if (c == NULL)
		return 0;
	tgt_halt(c);
	(void) pmrep_target_delete(&c->t);
	(void) pmrep_pmem_close(&c->src);
	(void) func_rm_rf(c->dir);
	free(c);
	return 0;
}

/* a mirror with `key` naming `key_id`: pmrep_mirror_new's result (on 0 it
 * persisted everything; *keep: left attached for the caller, else deleted) */
static int
mirror_try(struct ctx *c, const uint8_t *key, uint32_t key_id,
		struct pmrep_mirror **keep)
{
	struct pmrep_mirror_cfg *cfg;
	assert_int_equal(pmrep_mirror_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", c->port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(cfg, key, 32), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key_id(cfg, key_id), 0);
	assert_int_equal(pmrep_mirror_cfg_set_tls(cfg, !c->plain), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(cfg, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(cfg, MIRROR_TIMEOUT_MS * func_slow()), 0);
	struct pmrep_mirror *m = NULL;
	int ret = pmrep_mirror_new(c->src, cfg, &m);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	if (ret) {
		assert_null(m);
		return ret;
	}
	assert_int_equal(pmrep_mirror_persist(m, 0, SIZE, 3000 * func_slow()), 0);
	if (keep)
		*keep = m;
	else
		assert_int_equal(pmrep_mirror_delete(&m), 0);
	return 0;
}

/* with TLS (the default on tcp) the PSK is chosen from the identity before
 * any pmrep message: key id 0 -- no id named, as status / recover send --
 * finds the key by its fingerprint among a rotation's two */
static void
rotation_with_tls_key_id_0_finds_the_key_by_its_fingerprint(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	const uint8_t *keys[] = { key1, key2 };
	const uint32_t ids[] = { 1, 2 };
	tgt_new(c, keys, ids, 2);
	tgt_run(c);
	assert_int_equal(mirror_try(c, key1, 1, NULL), 0);
	assert_int_equal(mirror_try(c, key2, 2, NULL), 0);
	assert_int_equal(mirror_try(c, key1, 0, NULL), 0);
	assert_int_equal(mirror_try(c, key2, 0, NULL), 0);
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_query("127.0.0.1", c->port, key2, 32,
			3000 * func_slow(), &info), 0);
	assert_int_equal(pmrep_replica_query("127.0.0.1", c->port, key1, 32,
			3000 * func_slow(), &info), 0);
	/* a key the target does not hold, with no id or under a held id;
	 * a held key under the other key's id */
	static const uint8_t key9[32] = "rotation-key-9-0123456789abcdefg";
	assert_int_equal(mirror_try(c, key9, 0, NULL), PMREP_E_TLS);
	assert_int_equal(mirror_try(c, key9, 1, NULL), PMREP_E_TLS);
	assert_int_equal(mirror_try(c, key1, 2, NULL), PMREP_E_TLS);
	tgt_halt(c);
}

/* ------------------------------------------------------------ the flood */

struct flood {
	uint16_t port;
	const char *from;
	atomic_bool stop;
	atomic_ulong sent;
	pthread_t th[3];
};

/* keyless HELLOs as fast as the target answers them, from f->from */
static void *
flood_loop(void *arg)
{
	struct flood *f = arg;
	uint8_t frame[24 + FUNC_HELLO_LEN], r[64];
	while (!atomic_load(&f->stop)) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			continue;
		struct sockaddr_in b = { .sin_family = AF_INET };
		inet_pton(AF_INET, f->from, &b.sin_addr);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(f->port) };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(s, (struct sockaddr *)&b, sizeof(b)) != 0 ||
				connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
			close(s);
			continue;
		}
		/* the tcp provider's HELLO frame around a v2 HELLO whose
		 * admission proof is all zero */
		memset(frame, 0, 24);
		frame[0] = 1;
		func_put_le32(frame + 4, FUNC_HELLO_LEN);
		func_put_le32(frame + 8, 0x54524d50);
		func_put_le16(frame + 12, 1);
		func_put_le32(frame + 16, 5000);
		func_repl_hello(frame + 24, NULL, 0, 0, NULL, 0, NULL);
		if (send(s, frame, sizeof(frame), MSG_NOSIGNAL) == (ssize_t)sizeof(frame)) {
			atomic_fetch_add(&f->sent, 1);
			struct pollfd p = { .fd = s, .events = POLLIN };
			if (poll(&p, 1, 1000) > 0)
				(void) recv(s, r, sizeof(r), 0);
		}
		close(s);
	}
	return NULL;
}

static void
keyless_flood_from_another_address_lets_10_mirrors_attach(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	c->plain = true;
	const uint8_t *keys[] = { key1 };
	const uint32_t ids[] = { 0 };
	tgt_new(c, keys, ids, 1);
	tgt_run(c);
	struct flood f = { .port = c->nport, .from = "127.0.0.2" };
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&f.th[i], NULL, flood_loop, &f), 0);
	/* let the flood get going */
	while (atomic_load(&f.sent) < 50)
		usleep(1000);
	int attached = 0;
	for (int i = 0; i < 10; i++) {
		long long t0 = func_now_ms();
		int ret = mirror_try(c, key1, 0, NULL);
		long long took = func_now_ms() - t0;
		if (ret == 0 && took <= MIRROR_TIMEOUT_MS * func_slow())
			attached++;
		else
			fprintf(stderr, "mirror %d: %s after %lld ms\n", i,
					pmrep_err_to_str(ret), took);
	}
	unsigned long sent_during = atomic_load(&f.sent);
	atomic_store(&f.stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(f.th[i], NULL);
	tgt_halt(c);
	assert_int_equal(attached, 10);

	/* the last mirror's session closes once the target saw its last
	 * reply's send complete: a few more turns (the loop may have
	 * stopped before that, on a loaded machine) */
	struct pmrep_target_stats st;
	assert_int_equal(pmrep_target_get_stats(c->t, &st), 0);
	for (int i = 0; i < 100 && st.sessions_in_use > 0; i++) {
		(void) pmrep_target_process(c->t, 20);
		assert_int_equal(pmrep_target_get_stats(c->t, &st), 0);
	}
	fprintf(stderr, "flood: %lu keyless HELLOs sent, %llu rejected at admission, %llu sessions started\n",
			sent_during, (unsigned long long)st.admission_refused,
			(unsigned long long)st.sessions_started);
	/* the flood ran all along: hundreds of requests, each rejected at
	 * the connection request; only the 10 mirrors got a session */
	assert_true(st.admission_refused >= 100);
	assert_int_equal(st.sessions_started, 10);
	assert_int_equal(st.sessions_accepted, 10);
	assert_int_equal(st.sessions_in_use, 0);
}

/* ------------------------------------------------------ a lost ACCEPT */

/* a relay on loopback to the target; its first connection passes the
 * initiator's bytes on and is cut at the target's first answer (the
 * ACCEPT, on plaintext tcp), every later one passes both ways */
struct cut_relay {
	int lfd;
	uint16_t up_port;
	char port[8];
	atomic_bool stop;
	atomic_int cut;		/* connections cut so far */
	pthread_t th;
	/* what the initiator sent on the first connection: its HELLO */
	uint8_t cap[512];
	size_t ncap;
};

/* copy what is readable on `from` to `to`, and to `r`'s capture when
 * `r` is not NULL: false when `from` ended */
static bool
relay_pass(int from, int to, struct cut_relay *r)
{
	uint8_t b[4096];
	ssize_t n = recv(from, b, sizeof(b), MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			errno != EINTR))
		return false;
	if (r != NULL && n > 0 && r->ncap + (size_t)n <= sizeof(r->cap)) {
		memcpy(r->cap + r->ncap, b, (size_t)n);
		r->ncap += (size_t)n;
	}
	for (ssize_t off = 0; n > 0 && off < n; ) {
		ssize_t w = send(to, b + off, (size_t)(n - off), MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		off += w;
	}
	return true;
}

static void *
cut_relay_loop(void *arg)
{
	struct cut_relay *r = arg;
	bool first = true;
	while (!atomic_load(&r->stop)) {
		struct pollfd lp = { .fd = r->lfd, .events = POLLIN };
		if (poll(&lp, 1, 50) <= 0)
			continue;
		int cfd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			continue;
		int ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in a = { .sin_family = AF_INET,
			.sin_port = htons(r->up_port) };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (ufd < 0 || connect(ufd, (struct sockaddr *)&a, sizeof(a)) != 0) {
			close(cfd);
			if (ufd >= 0)
				close(ufd);
			continue;
		}
		for (bool live = true; live && !atomic_load(&r->stop); ) {
			struct pollfd p[2] = { { cfd, POLLIN, 0 }, { ufd, POLLIN, 0 } };
			if (poll(p, 2, 50) <= 0)
				continue;
			if (p[0].revents)
				live = relay_pass(cfd, ufd, first ? r : NULL);
			if (live && p[1].revents && first) {
				/* the target's answer: lost */
				atomic_fetch_add(&r->cut, 1);
				live = false;
			} else if (live && p[1].revents) {
				live = relay_pass(ufd, cfd, NULL);
			}
		}
		first = false;
		close(cfd);
		close(ufd);
	}
	return NULL;
}

static void
cut_relay_start(struct cut_relay *r, uint16_t up_port)
{
	memset(r, 0, sizeof(*r));
	r->up_port = up_port;
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(r->lfd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(a);
	assert_int_equal(bind(r->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(r->lfd, 8), 0);
	assert_int_equal(getsockname(r->lfd, (struct sockaddr *)&a, &al), 0);
	snprintf(r->port, sizeof(r->port), "%u", ntohs(a.sin_port));
	assert_int_equal(pthread_create(&r->th, NULL, cut_relay_loop, r), 0);
}

static void
cut_relay_stop(struct cut_relay *r)
{
	atomic_store(&r->stop, true);
	pthread_join(r->th, NULL);
	close(r->lfd);
}

static void
a_lost_accept_is_followed_by_a_fresh_hello_not_a_replay(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	/* plaintext: the relay sees where the ACCEPT is (with TLS it would
	 * cut the TLS handshake, before any HELLO) */
	c->plain = true;
	const uint8_t *keys[] = { key1 };
	const uint32_t ids[] = { 1 };
	tgt_new(c, keys, ids, 1);
	tgt_run(c);
	struct cut_relay r;
	cut_relay_start(&r, c->nport);
	char tport[8];
	snprintf(tport, sizeof(tport), "%s", c->port);
	snprintf(c->port, sizeof(c->port), "%s", r.port);

	/* the first attempt: admitted, its ACCEPT lost */
	int ret = mirror_try(c, key1, 1, NULL);
	fprintf(stderr, "the attempt whose ACCEPT was lost: %s\n",
			pmrep_err_to_str(ret));
	assert_int_not_equal(ret, 0);
	assert_int_not_equal(ret, PMREP_E_AUTH);
	assert_int_equal(atomic_load(&r.cut), 1);
	struct pmrep_target_stats st;
	tgt_halt(c);
	assert_int_equal(pmrep_target_get_stats(c->t, &st), 0);
	assert_int_equal(st.sessions_started, 1);	/* it was admitted */
	assert_int_equal(st.admission_refused, 0);
	tgt_run(c);
	/* the retry: a new dial, a fresh nonce: admitted, attached */
	assert_int_equal(mirror_try(c, key1, 1, NULL), 0);
	/* and once more, straight to the target */
	snprintf(c->port, sizeof(c->port), "%s", tport);
	assert_int_equal(mirror_try(c, key1, 1, NULL), 0);
	cut_relay_stop(&r);
	tgt_halt(c);
	assert_int_equal(pmrep_target_get_stats(c->t, &st), 0);
	assert_int_equal(st.admission_replayed, 0);
	assert_int_equal(st.admission_refused, 0);
	assert_int_equal(st.sessions_started, 3);
	assert_int_equal(st.sessions_accepted, 2);

	/* a real replay is still one: the first attempt's HELLO, as the
	 * relay saw it, sent verbatim on a connection of our own (within
	 * its time window) is refused at the connection request --
	 * REJECT, type 3 -- and counted as a replay */
	assert_true(r.ncap > 24 && r.ncap <= 24 + 56);
	tgt_run(c);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_port = htons(c->nport) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(send(s, r.cap, r.ncap, MSG_NOSIGNAL), (ssize_t)r.ncap);
	struct pollfd pf = { .fd = s, .events = POLLIN };
	assert_int_equal(poll(&pf, 1, 5000 * func_slow()), 1);
	uint8_t ans[16];
	assert_true(recv(s, ans, sizeof(ans), 0) >= 1);
	assert_int_equal(ans[0], 3);	/* REJECT, not ACCEPT (2) */
	close(s);
	tgt_halt(c);
	assert_int_equal(pmrep_target_get_stats(c->t, &st), 0);
	assert_int_equal(st.admission_replayed, 1);
	assert_int_equal(st.admission_refused, 1);
	assert_int_equal(st.sessions_started, 3);
}

/* ------------------------------------------------------------- rotation */

static void
rotation_two_keys_then_the_old_one_removed(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	c->plain = true;
	(void) pmrep_repl_set_tls_default(false);	/* the query below */
	const uint8_t *keys[] = { key1, key2 };
	const uint32_t ids[] = { 1, 2 };
	tgt_new(c, keys, ids, 2);
	tgt_run(c);

	/* either key, by its id */
	assert_int_equal(mirror_try(c, key1, 1, NULL), 0);
	assert_int_equal(mirror_try(c, key2, 2, NULL), 0);
	/* key id 0: the target tries its keys (query / recover use it) */
	assert_int_equal(mirror_try(c, key2, 0, NULL), 0);
	/* a key under another key's id, or an id the target lacks */
	assert_int_equal(mirror_try(c, key1, 2, NULL), PMREP_E_AUTH);
	assert_int_equal(mirror_try(c, key1, 3, NULL), PMREP_E_AUTH);
	/* a status query with key 2 (key id 0) is answered */
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_query("127.0.0.1", c->port, key2, 32,
			3000 * func_slow(), &info), 0);

	/* a mirror attached with key 1 when key 1 is removed */
	struct pmrep_mirror *old = NULL;
	assert_int_equal(mirror_try(c, key1, 1, &old), 0);
	tgt_halt(c);
	assert_int_equal(pmrep_target_remove_key(c->t, 1), 0);
	assert_int_equal(pmrep_target_remove_key(c->t, 1), PMREP_E_INVAL);
	/* never the last key */
	assert_int_equal(pmrep_target_remove_key(c->t, 2), PMREP_E_STATE);
	tgt_run(c);
	/* its session stays: it goes on persisting */
	assert_int_equal(pmrep_mirror_persist(old, 0, SIZE, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&old), 0);
	/* a new attach with key 1 is refused, with either id */
	assert_int_equal(mirror_try(c, key1, 1, NULL), PMREP_E_AUTH);
	assert_int_equal(mirror_try(c, key1, 0, NULL), PMREP_E_AUTH);
	assert_int_equal(pmrep_replica_query("127.0.0.1", c->port, key1, 32,
			3000 * func_slow(), &info), PMREP_E_AUTH);
	/* key 2 attaches */
	assert_int_equal(mirror_try(c, key2, 2, NULL), 0);
	/* and a key added to the running target is taken at once */
	tgt_halt(c);
	assert_int_equal(pmrep_target_add_key(c->t, 7, key1, 32), 0);
	tgt_run(c);
	assert_int_equal(mirror_try(c, key1, 7, NULL), 0);
	tgt_halt(c);

	struct pmrep_target_stats st;
	assert_int_equal(pmrep_target_get_stats(c->t, &st), 0);
	/* every refusal above happened at the connection request */
	assert_int_equal(st.admission_refused, 5);
	assert_int_equal(st.last_refusal, PMREP_E_AUTH);
	(void) pmrep_repl_set_tls_default(true);
}

/* ------------------------------------------------------ pmrep-target */

static char root[512];
/* where target_spawn's child writes its stderr (NULL: inherited) */
static const char *spawn_err;

/* pmrep-target with args (NULL-terminated, after the program), stdout to a
 * pipe: its pid; *out the read end */
static pid_t
target_spawn(char *const *args, int *out)
{
	char exe[600];
	snprintf(exe, sizeof(exe), "%s/tools/pmrep-target", root);
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		if (spawn_err) {
			int e = open(spawn_err, O_CREAT | O_WRONLY | O_APPEND, 0600);
			if (e >= 0)
				dup2(e, 2);
		}
		char *argv[32] = { exe };
		int n = 1;
		while (args[n - 1] != NULL && n < 31) {
			argv[n] = args[n - 1];
			n++;
		}
		argv[n] = NULL;
		execv(exe, argv);
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	live_pid = pid;
	return pid;
}

/* the port of the "listening on ADDR:PORT" line within 10 s, or 0 */
static unsigned
target_port(int fd)
{
	char buf[256];
	size_t got = 0;
	long long end = func_now_ms() + 10000 * func_slow();
	while (got < sizeof(buf) - 1 && func_now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		char *nl = strchr(buf, '\n');
		if (nl) {
			char *colon = strrchr(buf, ':');
			return colon ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
		}
	}
	return 0;
}

static int
wait_exit(pid_t pid)
{
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	live_pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void
pmrep_target_key_files_modes_two_ids_and_sighup(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	char rpath[128], k1[128], k2[128], loose[128];
	snprintf(rpath, sizeof(rpath), "%s/replica", c->dir);
	snprintf(k1, sizeof(k1), "%s/k1", c->dir);
	snprintf(k2, sizeof(k2), "%s/k2", c->dir);
	snprintf(loose, sizeof(loose), "%s/loose", c->dir);
	assert_int_equal(pmrep_key_write_file(k1, 1, 32), 0);
	assert_int_equal(pmrep_key_write_file(k2, 2, 32), 0);
	func_write_file(loose, key1, sizeof(key1));
	assert_int_equal(chmod(loose, 0644), 0);
	int out;

	/* 0644: refused, exit 1 */
	char *a_loose[] = { "--path", rpath, "--size", "256K", "--create",
		"--port", "0", "--key-file", loose, NULL };
	pid_t pid = target_spawn(a_loose, &out);
	assert_int_equal(wait_exit(pid), 1);
	close(out);
	/* ... unless asked for */
	char *a_ok[] = { "--path", rpath, "--size", "256K", "--create",
		"--port", "0", "--key-file", loose, "--insecure-key-file", NULL };
	pid = target_spawn(a_ok, &out);
	unsigned port = target_port(out);
	assert_true(port > 0);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid), 0);
	close(out);

	/* two keygen files: both keys served, each by its id */
	char *a_two[] = { "--path", rpath, "--port", "0", "--key-file", k1,
		"--key-file", k2, NULL };
	pid = target_spawn(a_two, &out);
	port = target_port(out);
	assert_true(port > 0);
	snprintf(c->port, sizeof(c->port), "%u", port);
	uint8_t kb1[PMREP_KEY_MAX], kb2[PMREP_KEY_MAX];
	size_t l1, l2;
	uint32_t id1, id2;
	assert_int_equal(pmrep_key_read_file_ex(k1, 0, kb1, sizeof(kb1), &l1, &id1), 0);
	assert_int_equal(pmrep_key_read_file_ex(k2, 0, kb2, sizeof(kb2), &l2, &id2), 0);
	assert_int_equal(id1, 1);
	assert_int_equal(id2, 2);
	assert_int_equal(mirror_try(c, kb1, 1, NULL), 0);
	assert_int_equal(mirror_try(c, kb2, 2, NULL), 0);
	/* k1 replaced by a new key of id 3, then SIGHUP: key 1 is gone
	 * and key 3 is served, without a restart */
	assert_int_equal(unlink(k1), 0);
	assert_int_equal(pmrep_key_write_file(k1, 3, 32), 0);
	uint8_t kb3[PMREP_KEY_MAX];
	size_t l3;
	uint32_t id3;
	assert_int_equal(pmrep_key_read_file_ex(k1, 0, kb3, sizeof(kb3), &l3, &id3), 0);
	assert_int_equal(kill(pid, SIGHUP), 0);
	/* the reload happens in the target's loop: wait for key 3 */
	int ret = -1;
	for (int i = 0; i < 50 && ret != 0; i++) {
		ret = mirror_try(c, kb3, 3, NULL);
		if (ret)
			usleep(100000);
	}
	assert_int_equal(ret, 0);
	/* pmrep-target runs TLS (tcp, a key): the removed key fails the
	 * TLS handshake, before the admission proof is looked at */
	assert_int_equal(mirror_try(c, kb1, 1, NULL), PMREP_E_TLS);
	assert_int_equal(mirror_try(c, kb2, 2, NULL), 0);
	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid), 0);
	close(out);

	/* two files of one key id: refused */
	char *a_dup[] = { "--path", rpath, "--port", "0", "--key-file", k2,
		"--key-file", k2, NULL };
	pid = target_spawn(a_dup, &out);
	assert_int_equal(wait_exit(pid), 1);
	close(out);
}

/* how often `needle` occurs in the file at `path` (0: none, no file) */
static int
count_in_file(const char *path, const char *needle)
{
	static char buf[1 << 16];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	int k = 0;
	for (const char *p = buf; (p = strstr(p, needle)) != NULL; p++)
		k++;
	return k;
}

/* wait (10 s at most) until the file holds `n` copies of `needle` */
static void
wait_lines(const char *path, const char *needle, int n)
{
	long long end = func_now_ms() + 10000 * func_slow();
	while (count_in_file(path, needle) < n && func_now_ms() < end)
		usleep(20000);
	if (count_in_file(path, needle) < n)
		fail_msg("%s: %d x '%s' expected, %d found", path, n, needle,
				count_in_file(path, needle));
}

/* a status query with `key` (key id 0: TLS finds it by its fingerprint) */
static int
query_with(struct ctx *c, const uint8_t *key, size_t len)
{
	struct pmrep_replica_info info;
	return pmrep_replica_query("127.0.0.1", c->port, key, len,
			3000 * func_slow(), &info);
}

/* a new key file `name` in `dir` with id `id`; its key into kb */
static void
key_new(const char *dir, const char *name, uint32_t id, uint8_t *kb)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(pmrep_key_write_file(path, id, 32), 0);
	size_t len;
	uint32_t got;
	assert_int_equal(pmrep_key_read_file_ex(path, 0, kb, PMREP_KEY_MAX,
			&len, &got), 0);
	assert_int_equal(len, 32);
	assert_int_equal(got, id);
}

static void
pmrep_target_key_dir_rescanned_on_sighup(void **state)
{
	FUNC_TCP_ONLY();
	struct ctx *c = *state;
	spawn_err = NULL;
	char rpath[128], kd[128], loose[128], errlog[128], path[256];
	snprintf(rpath, sizeof(rpath), "%s/replica", c->dir);
	snprintf(kd, sizeof(kd), "%s/keys", c->dir);
	snprintf(loose, sizeof(loose), "%s/loose", c->dir);
	snprintf(errlog, sizeof(errlog), "%s/target.err", c->dir);
	assert_int_equal(mkdir(kd, 0700), 0);
	assert_int_equal(mkdir(loose, 0700), 0);
	uint8_t kb1[PMREP_KEY_MAX], kb2[PMREP_KEY_MAX], kb3[PMREP_KEY_MAX];
	uint8_t kb4[PMREP_KEY_MAX], kb5[PMREP_KEY_MAX];
	key_new(kd, "k1.key", 1, kb1);
	/* not NAME.key: not a key, whatever it holds or its mode */
	snprintf(path, sizeof(path), "%s/notes.txt", kd);
	func_write_file(path, "not a key", 9);
	assert_int_equal(chmod(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/.k9.key", kd);
	func_write_file(path, "hidden", 6);
	int out;

	/* a directory others may write into: refused at start */
	key_new(loose, "k1.key", 1, kb3);
	assert_int_equal(chmod(loose, 0777), 0);
	char *a_loose[] = { "--path", rpath, "--size", "256K", "--create",
		"--port", "0", "--key-dir", loose, NULL };
	pid_t pid = target_spawn(a_loose, &out);
	assert_int_equal(wait_exit(pid), 1);
	close(out);

	spawn_err = errlog;
	char *args[] = { "--path", rpath, "--size", "256K", "--create",
		"--port", "0", "--key-dir", kd, NULL };
	pid = target_spawn(args, &out);
	unsigned port = target_port(out);
	assert_true(port > 0);
	snprintf(c->port, sizeof(c->port), "%u", port);

	/* a mirror attached with key 1, kept */
	struct pmrep_mirror *old = NULL;
	assert_int_equal(mirror_try(c, kb1, 1, &old), 0);

	/* key 2 dropped in: refused until the SIGHUP, then served */
	key_new(kd, "k2.key", 2, kb2);
	assert_int_equal(query_with(c, kb2, 32), PMREP_E_TLS);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_lines(errlog, "SIGHUP: 2 key(s) held", 1);
	assert_int_equal(query_with(c, kb2, 32), 0);
	assert_int_equal(query_with(c, kb1, 32), 0);

	/* key 1's file removed: refused after the SIGHUP ... */
	snprintf(path, sizeof(path), "%s/k1.key", kd);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_lines(errlog, "SIGHUP: 1 key(s) held", 1);
	assert_int_equal(query_with(c, kb1, 32), PMREP_E_TLS);
	assert_int_equal(query_with(c, kb2, 32), 0);
	/* ... while the session attached with it goes on */
	assert_int_equal(pmrep_mirror_persist(old, 0, SIZE, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_delete(&old), 0);
	assert_int_equal(mirror_try(c, kb1, 1, NULL), PMREP_E_TLS);
	assert_int_equal(mirror_try(c, kb2, 2, NULL), 0);

	/* a symbolic link named *.key: the scan fails, the keys stay (key 4
	 * dropped in with it is not taken, key 2 still is) */
	key_new(c->dir, "k3", 3, kb3);
	char target3[256];
	snprintf(target3, sizeof(target3), "%s/k3", c->dir);
	snprintf(path, sizeof(path), "%s/k3.key", kd);
	assert_int_equal(symlink(target3, path), 0);
	key_new(kd, "k4.key", 4, kb4);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_lines(errlog, "SIGHUP: the keys stay as they were", 1);
	assert_int_equal(count_in_file(errlog, "a symbolic link: refused"), 1);
	assert_int_equal(query_with(c, kb4, 32), PMREP_E_TLS);
	assert_int_equal(query_with(c, kb3, 32), PMREP_E_TLS);
	assert_int_equal(query_with(c, kb2, 32), 0);
	/* the link gone: key 4 is taken */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_lines(errlog, "SIGHUP: 2 key(s) held", 2);
	assert_int_equal(query_with(c, kb4, 32), 0);

	/* five keys: too many, the keys stay */
	key_new(kd, "k5.key", 5, kb5);
	uint8_t kb6[PMREP_KEY_MAX], kb7[PMREP_KEY_MAX];
	key_new(kd, "k6.key", 6, kb6);
	key_new(kd, "k7.key", 7, kb7);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_lines(errlog, "SIGHUP: the keys stay as they were", 2);
	assert_true(count_in_file(errlog, "more than 4 keys") >= 1);
	assert_int_equal(query_with(c, kb5, 32), PMREP_E_TLS);
	assert_int_equal(query_with(c, kb2, 32), 0);
	/* two of them gone: 4 keys, all served (2 4 5 6) */
	snprintf(path, sizeof(path), "%s/k7.key", kd);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_lines(errlog, "SIGHUP: 4 key(s) held", 1);
	assert_int_equal(query_with(c, kb5, 32), 0);
	assert_int_equal(query_with(c, kb6, 32), 0);
	assert_int_equal(query_with(c, kb7, 32), PMREP_E_TLS);
	/* a full table rotated: 2 out, 8 in, in one SIGHUP (the new key
	 * is added once the gone one is removed) */
	uint8_t kb8[PMREP_KEY_MAX];
	snprintf(path, sizeof(path), "%s/k2.key", kd);
	assert_int_equal(unlink(path), 0);
	key_new(kd, "k8.key", 8, kb8);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_lines(errlog, "SIGHUP: 4 key(s) held", 2);
	assert_int_equal(query_with(c, kb8, 32), 0);
	assert_int_equal(query_with(c, kb2, 32), PMREP_E_TLS);
	assert_int_equal(mirror_try(c, kb8, 8, NULL), 0);

	kill(pid, SIGTERM);
	assert_int_equal(wait_exit(pid), 0);
	close(out);
	spawn_err = NULL;
}

int
main(int argc, char *argv[])
{
	(void)argc;
	func_build_root(root, sizeof(root), argv[0]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(keyless_flood_from_another_address_lets_10_mirrors_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(rotation_two_keys_then_the_old_one_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(rotation_with_tls_key_id_0_finds_the_key_by_its_fingerprint, setup, teardown),
		cmocka_unit_test_setup_teardown(pmrep_target_key_files_modes_two_ids_and_sighup, setup, teardown),
		cmocka_unit_test_setup_teardown(pmrep_target_key_dir_rescanned_on_sighup, setup, teardown),
		cmocka_unit_test_setup_teardown(a_lost_accept_is_followed_by_a_fresh_hello_not_a_replay, setup, teardown),
	};
	pmrep_log_set_threshold(getenv("TEST_LOG") ? PMREP_LOG_INFO : PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
