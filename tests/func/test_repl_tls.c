/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_tls.c -- the replication over the tcp provider inside TLS 1.3
 * with a PSK derived from the key, on loopback, with a
 * relay thread of this test between the mirror and its target:
 *   - attach / persist / verify through a relay that passes the bytes
 *     unchanged: byte-exact replica, and the relay never saw the data in
 *     the clear (its first client byte is a TLS handshake record);
 *   - the downgrade attempts: a TLS mirror against a plaintext target
 *     and a plaintext mirror against a TLS target are both refused with
 *     PMREP_E_TLS (no session, the replica unclaimed);
 *   - a wrong key: PMREP_E_TLS on both ends;
 *   - the tampering relay: after the attach it flips one byte of the
 *     next large TLS record towards the target (one carrying a write):
 *     the session breaks (PMREP_E_TLS logged: record authentication),
 *     the persist fails, the replica holds none of the new bytes and is
 *     not marked consistent with them; a new mirror resyncs it exactly;
 *   - the checker against the broken case: the same relay rewriting a
 *     pattern in a plaintext (--no-tls) session goes unnoticed: persist
 *     succeeds with wrong bytes in the replica (what TLS prevents);
 *   - the reflection (Selfie, RFC 9257): a handshake meant for target T
 *     (which answers to the relay's name) relayed to another target N of
 *     the same key is refused by N (PMREP_E_TLS), while T accepts it.
 *   - a listener's relay names are per replica: a handshake through
 *     the relay declared for replica "a" that selects replica "b" of
 *     the same listener and key is refused;
 *   - the transport alone: the cfg API's limits, a TLS pair's writes and
 *     reads byte-exact at every size, a plaintext client at a TLS
 *     endpoint and a TLS client at a plaintext one both REJECTED with
 *     pmrep_conn_get_failure = PMREP_E_TLS, an unknown identity too.
 * tcp only (verbs has no TLS: skipped).
 * Past ~800 lines: one program for TLS; its cases share the relay and targets.
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (256u << 10)
#define REGION 4096u

static const uint8_t key[32] = "tls-test-key-0123456789-abcdefgh";
static const uint8_t uuid_a[PMREP_UUID_SIZE] = { 0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128];
static const char secret[16] = "PAYMENT-TO-ALICE";
static const char forged[16] = "PAYMENT-TO-MALLO";

/* ------------------------------------------------ target in a thread */

struct tgt {
	struct pmrep_target *t;
	pthread_t th;
	atomic_bool stop;
	char port[8];
};

#define NTGT 2
static struct tgt tgts[NTGT];

static void *
tgt_loop(void *arg)
{
	struct tgt *g = arg;
	while (!atomic_load(&g->stop))
		(void) pmrep_target_process(g->t, 20);
	return NULL;
}

/* a target on file `name`; tls off: plaintext; alias: one more TLS name */
static struct tgt *
tgt_start(const char *name, bool tls, const char *alias)
{
	struct tgt *g = NULL;
	for (int i = 0; i < NTGT && g == NULL; i++)
		if (tgts[i].t == NULL)
			g = &tgts[i];
	assert_non_null(g);
	memset(g, 0, sizeof(*g));
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct pmrep_target_cfg *cfg;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, SIZE, true), 0);
	assert_int_equal(pmrep_target_cfg_set_address(cfg, "127.0.0.1", "0"), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_target_cfg_set_timeout(cfg, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_target_cfg_set_tls(cfg, tls), 0);
	if (alias)
		assert_int_equal(pmrep_target_cfg_add_tls_name(cfg, alias), 0);
	assert_int_equal(pmrep_target_new(cfg, &g->t), 0);
	pmrep_target_cfg_delete(&cfg);
	uint16_t port;
	assert_int_equal(pmrep_target_get_port(g->t, &port), 0);
	snprintf(g->port, sizeof(g->port), "%u", port);
	assert_int_equal(pthread_create(&g->th, NULL, tgt_loop, g), 0);
	return g;
}

static void
tgt_stop(struct tgt *g)
{
	if (g == NULL || g->t == NULL)
		return;
	atomic_store(&g->stop, true);
	pthread_join(g->th, NULL);
	assert_int_equal(pmrep_target_delete(&g->t), 0);
}

static struct pmrep_target_stats
tgt_stats(struct tgt *g)
{
	struct pmrep_target_stats ts;
	assert_int_equal(pmrep_target_get_stats(g->t, &ts), 0);
	return ts;
}

/* the target's stats once it counted a refusal (its thread may see the
 * failed handshake after the initiator returned), bounded */
static struct pmrep_target_stats
tgt_refused(struct tgt *g)
{
	struct pmrep_target_stats ts = tgt_stats(g);
	long long t0 = func_now_ms();
	while (ts.sessions_refused == 0 &&
			func_now_ms() - t0 < 5000 * func_slow()) {
		usleep(10000);
		ts = tgt_stats(g);
	}
	return ts;
}

/* ------------------------------------------------------------- relay */

enum relay_mode {
	RELAY_PASS,		/* bytes unchanged */
	RELAY_FLIP_RECORD,	/* once armed: flip a byte of the next large TLS record */
	RELAY_REWRITE,		/* once armed: `secret` -> `forged` in the clear */
};

#define RELAY_PAIRS 8

struct relay_pair {
	int c, s;			/* client side, server side; -1: unused */
	bool first_seen;
	/* client -> server TLS record parser */
	uint8_t hdr[5];
	unsigned hdr_got;
	size_t body_left;
	bool flip_this;
	size_t body_pos;
	char carry[sizeof(secret) - 1];	/* pattern across reads */
	size_t carry_len;
};

struct relay {
	int lfd;
	char port[8];
	char upstream[8];
	enum relay_mode mode;
	pthread_t th;
	atomic_bool stop;
	atomic_bool armed;
	atomic_int tampered;		/* bytes changed */
	atomic_int plain_seen;		/* `secret` seen in the clear */
	atomic_int first_byte;		/* the first client byte (-1: none yet) */
	struct relay_pair p[RELAY_PAIRS];
};

static struct relay relay;

static int
dial(const char *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_port = htons((uint16_t)atoi(port)) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(s);
		return -1;
	}
	return s;
}

static void
pair_close(struct relay_pair *p)
{
	if (p->c >= 0)
		close(p->c);
	if (p->s >= 0)
		close(p->s);
	p->c = p->s = -1;
}

/* look at / change client -> server bytes */
static void
c2s_inspect(struct relay *r, struct relay_pair *p, uint8_t *b, size_t n)
{
	if (!p->first_seen && n > 0) {
		p->first_seen = true;
		int expect = -1;
		(void) atomic_compare_exchange_strong(&r->first_byte, &expect,
				b[0]);
	}
	/* the secret in the clear (also across two reads) */
	char win[2 * sizeof(secret) + 65536];
	if (n <= 65536) {
		memcpy(win, p->carry, p->carry_len);
		memcpy(win + p->carry_len, b, n);
		size_t w = p->carry_len + n;
		for (size_t i = 0; i + sizeof(secret) <= w; i++) {
			if (memcmp(win + i, secret, sizeof(secret)) != 0)
				continue;
			atomic_fetch_add(&r->plain_seen, 1);
			if (r->mode == RELAY_REWRITE && atomic_load(&r->armed) &&
					i >= p->carry_len) {
				memcpy(b + (i - p->carry_len), forged, sizeof(forged));
				atomic_fetch_add(&r->tampered, (int)sizeof(forged));
			}
		}
		size_t keep = w < sizeof(p->carry) ? w : sizeof(p->carry);
		memcpy(p->carry, win + w - keep, keep);
		p->carry_len = keep;
	}
	if (r->mode != RELAY_FLIP_RECORD)
		return;
	for (size_t i = 0; i < n; ) {
		if (p->body_left == 0) {
			p->hdr[p->hdr_got++] = b[i++];
			if (p->hdr_got == 5) {
				p->hdr_got = 0;
				p->body_left = (size_t)p->hdr[3] << 8 | p->hdr[4];
				p->body_pos = 0;
				/* application data (23) big enough for a 4 KiB write */
				p->flip_this = p->hdr[0] == 23 && p->body_left >= 2048 &&
					atomic_load(&r->armed) &&
					atomic_load(&r->tampered) == 0;
			}
			continue;
		}
		size_t k = n - i < p->body_left ? n - i : p->body_left;
		if (p->flip_this && p->body_pos <= 1000 && p->body_pos + k > 1000) {
			b[i + (1000 - p->body_pos)] ^= 0x20;
			atomic_fetch_add(&r->tampered, 1);
			p->flip_this = false;
		}
		p->body_pos += k;
		p->body_left -= k;
		i += k;
	}
}

static void *
relay_loop(void *arg)
{
	struct relay *r = arg;
	static uint8_t buf[65536];
	while (!atomic_load(&r->stop)) {
		struct pollfd pfd[1 + 2 * RELAY_PAIRS];
		int n = 0;
		pfd[n++] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
		for (int i = 0; i < RELAY_PAIRS; i++) {
			pfd[n++] = (struct pollfd){ .fd = r->p[i].c, .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = r->p[i].s, .events = POLLIN };
		}
		if (poll(pfd, (nfds_t)n, 20) <= 0)
			continue;
		if (pfd[0].revents & POLLIN) {
			int c = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
			int s = c >= 0 ? dial(r->upstream) : -1;
			int i = 0;
			while (i < RELAY_PAIRS && r->p[i].c >= 0)
				i++;
			if (c < 0 || s < 0 || i == RELAY_PAIRS) {
				if (c >= 0)
					close(c);
				if (s >= 0)
					close(s);
			} else {
				int one = 1;
				(void) setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				(void) setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				memset(&r->p[i], 0, sizeof(r->p[i]));
				r->p[i].c = c;
				r->p[i].s = s;
			}
		}
		for (int i = 0; i < RELAY_PAIRS; i++) {
			struct relay_pair *p = &r->p[i];
			for (int dir2 = 0; dir2 < 2 && p->c >= 0; dir2++) {
				short re = pfd[1 + 2 * i + dir2].revents;
				if (!(re & (POLLIN | POLLHUP | POLLERR)))
					continue;
				int from = dir2 == 0 ? p->c : p->s;
				int to = dir2 == 0 ? p->s : p->c;
				ssize_t k = recv(from, buf, sizeof(buf), MSG_DONTWAIT);
				if (k < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				if (k <= 0) {
					pair_close(p);
					break;
				}
				if (dir2 == 0)
					c2s_inspect(r, p, buf, (size_t)k);
				for (ssize_t off = 0; off < k; ) {
					ssize_t w = send(to, buf + off, (size_t)(k - off),
							MSG_NOSIGNAL);
					if (w <= 0)
						break;
					off += w;
				}
			}
		}
	}
	for (int i = 0; i < RELAY_PAIRS; i++)
		pair_close(&r->p[i]);
	return NULL;
}

static struct relay *
relay_start(const char *upstream, enum relay_mode mode)
{
	struct relay *r = &relay;
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < RELAY_PAIRS; i++)
		r->p[i].c = r->p[i].s = -1;
	r->mode = mode;
	atomic_init(&r->first_byte, -1);
	snprintf(r->upstream, sizeof(r->upstream), "%s", upstream ? upstream : "0");
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(r->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(r->lfd, 16), 0);
	socklen_t len = sizeof(a);
	assert_int_equal(getsockname(r->lfd, (struct sockaddr *)&a, &len), 0);
	snprintf(r->port, sizeof(r->port), "%u", ntohs(a.sin_port));
	assert_int_equal(pthread_create(&r->th, NULL, relay_loop, r), 0);
	return r;
}

static void
relay_stop(struct relay *r)
{
	if (r->lfd <= 0)
		return;
	atomic_store(&r->stop, true);
	pthread_join(r->th, NULL);
	close(r->lfd);
	r->lfd = 0;
}

/* the relay's "host:port" (a name a target may answer to) */
static const char *
relay_name(struct relay *r)
{
	static char name[32];
	snprintf(name, sizeof(name), "127.0.0.1:%s", r->port);
	return name;
}

/* ----------------------------------------------------------- helpers */

static atomic_int tls_log_lines;	/* "TLS: ... record authentication" */
static atomic_int tls_handshake_lines;	/* "TLS: handshake failed" */
static atomic_int tls_reflect_lines;	/* "not a name it answers to" */
static atomic_int tls_cap_lines;	/* "... before its PSK binder verified" */

static void
log_sink(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg)
{
	(void)level; (void)file; (void)line; (void)func; (void)arg;
	if (strstr(msg, "TLS: ") && strstr(msg, "record authentication"))
		atomic_fetch_add(&tls_log_lines, 1);
	if (strstr(msg, "TLS: handshake failed"))
		atomic_fetch_add(&tls_handshake_lines, 1);
	if (strstr(msg, "not a name it answers to"))
		atomic_fetch_add(&tls_reflect_lines, 1);
	if (strstr(msg, "bytes before its PSK binder verified"))
		atomic_fetch_add(&tls_cap_lines, 1);
	if (getenv("PMREP_TEST_LOG"))
		fprintf(stderr, "log: %s\n", msg);
}

static struct pmrep_pmem *
local_open(const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct pmrep_pmem *p = NULL;
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	return p;
}

static struct pmrep_mirror_cfg *
mcfg(const char *port, bool tls)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(c, "127.0.0.1", port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid_a), 0);
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_region_size(c, REGION), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_state_path(c, NULL), 0);
	assert_int_equal(pmrep_mirror_cfg_set_tls(c, tls), 0);
	return c;
}

static void
fill(struct pmrep_pmem *p, size_t off, size_t len, unsigned seed)
{
	uint8_t *b = (uint8_t *)pmrep_pmem_get_address(p) + off;
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* `secret` repeated over [off, off + len) of the local mapping */
static void
fill_secret(struct pmrep_pmem *p, size_t off, size_t len)
{
	uint8_t *b = (uint8_t *)pmrep_pmem_get_address(p) + off;
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)secret[i % sizeof(secret)];
}

static uint8_t *
replica_bytes(const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return func_replica_read(path, SIZE);
}

static struct pmrep_replica_info
replica_info(const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	return info;
}

static bool
unclaimed(const struct pmrep_replica_info *info)
{
	static const uint8_t zero[PMREP_UUID_SIZE];
	return memcmp(info->uuid, zero, sizeof(zero)) == 0;
}

static int
setup(void **state)
{
	(void)state;
	atomic_store(&tls_log_lines, 0);
	atomic_store(&tls_handshake_lines, 0);
	atomic_store(&tls_reflect_lines, 0);
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-tls-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NTGT; i++)
		if (tgts[i].t != NULL)
			tgt_stop(&tgts[i]);
	relay_stop(&relay);
	return func_rm_rf(dir);
}

/* ------------------------------------------------------------- tests */

/* attach, persist, verify through a relay that passes bytes unchanged:
 * byte-exact, and nothing of the data in the clear on the wire */
static void
tls_mirror_through_a_passing_relay_is_byte_exact(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	struct relay *r = relay_start(NULL, RELAY_PASS);
	/* the target answers to the relay's name too (as for a NAT) */
	struct tgt *g = tgt_start("replica", true, relay_name(r));
	snprintf(r->upstream, sizeof(r->upstream), "%s", g->port);

	struct pmrep_pmem *local = local_open("local");
	fill_secret(local, 0, SIZE);	/* the full resync carries it */
	struct pmrep_mirror_cfg *c = mcfg(r->port, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	for (unsigned i = 0; i < 20; i++) {
		size_t off = (i * 9973u) % (SIZE - 4096);
		fill(local, off, 4096, i + 1);
		assert_int_equal(pmrep_mirror_persist(m, off, 4096, 4096), 0);
	}
	fill_secret(local, 8192, 64);
	assert_int_equal(pmrep_mirror_persist(m, 8192, 64, 64), 0);
	char path[256];
	snprintf(path, sizeof(path), "%s/replica", dir);
	func_assert_replica_equals(local, path);
	assert_int_equal(pmrep_mirror_delete(&m), 0);

	/* verify: a query (TLS by default) sees a consistent replica */
	struct pmrep_replica_info qi;
	assert_int_equal(pmrep_replica_query("127.0.0.1", r->port, key,
			sizeof(key), 3000, &qi), 0);
	assert_true(qi.flags & PMREP_REPLICA_F_CONSISTENT);
	tgt_stop(g);
	func_assert_replica_equals(local, path);
	struct pmrep_replica_info info = replica_info("replica");
	assert_true(info.flags & PMREP_REPLICA_F_CONSISTENT);

	/* on the wire: TLS (a handshake record first), never the data */
	assert_int_equal(atomic_load(&r->first_byte), 22);
	assert_int_equal(atomic_load(&r->plain_seen), 0);
	assert_int_equal(atomic_load(&tls_log_lines), 0);
	relay_stop(r);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/* the checker's broken case: plaintext through the same relay carries
 * the data in the clear and lets a rewrite through unnoticed */
static void
plaintext_relay_sees_and_rewrites_the_data_unnoticed(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	struct tgt *g = tgt_start("replica", false, NULL);
	struct relay *r = relay_start(g->port, RELAY_REWRITE);
	struct pmrep_pmem *local = local_open("local");
	fill(local, 0, SIZE, 3);
	struct pmrep_mirror_cfg *c = mcfg(r->port, false);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	atomic_store(&r->armed, true);
	fill_secret(local, 4096, 4096);
	assert_int_equal(pmrep_mirror_persist(m, 4096, 4096, 4096), 0);
	assert_true(atomic_load(&r->plain_seen) > 0);
	assert_true(atomic_load(&r->tampered) > 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	tgt_stop(g);
	uint8_t *rb = replica_bytes("replica");
	/* wrong bytes, and the replica marked consistent: the MITM */
	assert_memory_equal(rb + 4096, forged, sizeof(forged));
	assert_true(replica_info("replica").flags & PMREP_REPLICA_F_CONSISTENT);
	free(rb);
	relay_stop(r);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/* after the handshake, one flipped bit in a record carrying a write:
 * the session breaks, no persist succeeds, no wrong byte is accepted */
static void
tampering_relay_breaks_the_session_and_no_persist_succeeds(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	struct relay *r = relay_start(NULL, RELAY_FLIP_RECORD);
	struct tgt *g = tgt_start("replica", true, relay_name(r));
	snprintf(r->upstream, sizeof(r->upstream), "%s", g->port);

	struct pmrep_pmem *local = local_open("local");
	fill(local, 0, SIZE, 5);
	struct pmrep_mirror_cfg *c = mcfg(r->port, true);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	uint8_t *before = replica_bytes("replica");
	assert_memory_equal(before, pmrep_pmem_get_address(local), SIZE);

	atomic_store(&r->armed, true);
	fill_secret(local, 4096, 4096);
	int ret = pmrep_mirror_persist(m, 4096, 4096, 4096);
	assert_int_not_equal(ret, 0);
	assert_int_equal(atomic_load(&r->tampered), 1);
	/* later persists fail too: no session carries them */
	fill_secret(local, 8192, 4096);
	assert_int_not_equal(pmrep_mirror_persist(m, 8192, 4096, 4096), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_not_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	/* the target named the cause */
	assert_true(atomic_load(&tls_log_lines) >= 1);
	tgt_stop(g);

	/* the replica: none of the new bytes (the whole record was
	 * refused, not a flipped copy of it), the rest as before */
	uint8_t *after = replica_bytes("replica");
	assert_memory_equal(after, before, SIZE);
	assert_memory_not_equal(after + 4096,
			(uint8_t *)pmrep_pmem_get_address(local) + 4096, 4096);
	/* not marked consistent with data it does not hold */
	struct pmrep_replica_info info = replica_info("replica");
	assert_false(info.flags & PMREP_REPLICA_F_CONSISTENT);
	free(before);
	free(after);

	/* a new mirror, straight to the target: resynced, byte-exact */
	relay_stop(r);
	g = tgt_start("replica", true, NULL);
	pmrep_mirror_cfg_delete(&c);
	c = mcfg(g->port, true);
	/* its record is in memory: a new primary id, and the tampered
	 * session left the claim open -- the next generation */
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, 2), 0);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	char path[256];
	snprintf(path, sizeof(path), "%s/replica", dir);
	func_assert_replica_equals(local, path);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	tgt_stop(g);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/* TLS on / off is each end's own: both mismatches refused, PMREP_E_TLS */
static void
downgrade_attempts_are_refused_with_the_tls_error(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	struct pmrep_pmem *local = local_open("local");
	struct pmrep_mirror *m = NULL;

	/* a TLS mirror against a plaintext target */
	struct tgt *g = tgt_start("replica", false, NULL);
	struct pmrep_mirror_cfg *c = mcfg(g->port, true);
	assert_int_equal(pmrep_mirror_new(local, c, &m), PMREP_E_TLS);
	assert_null(m);
	struct pmrep_target_stats ts = tgt_refused(g);
	assert_int_equal(ts.sessions_accepted, 0);
	assert_int_equal(ts.sessions_refused, 1);	/* not a HELLO */
	assert_int_equal(ts.last_refusal, PMREP_E_MALFORMED);
	tgt_stop(g);
	pmrep_mirror_cfg_delete(&c);
	struct pmrep_replica_info info = replica_info("replica");
	assert_true(unclaimed(&info));

	/* a plaintext mirror against a TLS target */
	g = tgt_start("replica", true, NULL);
	c = mcfg(g->port, false);
	assert_int_equal(pmrep_mirror_new(local, c, &m), PMREP_E_TLS);
	assert_null(m);
	ts = tgt_refused(g);
	assert_int_equal(ts.sessions_accepted, 0);
	assert_int_equal(ts.sessions_refused, 1);
	assert_int_equal(ts.last_refusal, PMREP_E_TLS);
	/* a query without TLS: the same */
	assert_int_equal(pmrep_repl_set_tls_default(false), 0);
	struct pmrep_replica_info qi;
	assert_int_equal(pmrep_replica_query("127.0.0.1", g->port, key,
			sizeof(key), 3000, &qi), PMREP_E_TLS);
	assert_int_equal(pmrep_repl_set_tls_default(true), 0);
	tgt_stop(g);
	info = replica_info("replica");
	assert_true(unclaimed(&info));
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

static void
wrong_key_fails_the_tls_handshake_on_both_ends(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	struct tgt *g = tgt_start("replica", true, NULL);
	struct pmrep_pmem *local = local_open("local");
	struct pmrep_mirror_cfg *c = mcfg(g->port, true);
	uint8_t bad[32];
	memcpy(bad, key, sizeof(bad));
	bad[31] ^= 0x80;
	assert_int_equal(pmrep_mirror_cfg_set_key(c, bad, sizeof(bad)), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), PMREP_E_TLS);
	assert_null(m);
	struct pmrep_target_stats ts = tgt_refused(g);
	assert_int_equal(ts.sessions_accepted, 0);
	assert_int_equal(ts.last_refusal, PMREP_E_TLS);
	/* the initiator's line (the target's refusal is counted above; its
	 * log lines are rate-limited, one a second per site, since a keyless
	 * peer can cause them at will) */
	assert_true(atomic_load(&tls_handshake_lines) >= 1);
	tgt_stop(g);
	struct pmrep_replica_info info = replica_info("replica");
	assert_true(unclaimed(&info));
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/*
 * Selfie (RFC 9257): target T answers to the relay's name; the node's
 * own target N (same key) does not. The same mirror handshake (it dials
 * the relay) reaches T: accepted; relayed to N instead: refused.
 */
static void
reflected_handshake_is_refused_by_the_other_target(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	struct tgt *gn = tgt_start("own", true, NULL);
	struct relay *r = relay_start(gn->port, RELAY_PASS);
	struct tgt *gt = tgt_start("replica", true, relay_name(r));
	struct pmrep_pmem *local = local_open("local");
	struct pmrep_mirror_cfg *c = mcfg(r->port, true);
	struct pmrep_mirror *m = NULL;

	/* relayed to N: N refuses a handshake named for the relay's name */
	assert_int_equal(pmrep_mirror_new(local, c, &m), PMREP_E_TLS);
	assert_null(m);
	struct pmrep_target_stats ts = tgt_refused(gn);
	assert_int_equal(ts.sessions_accepted, 0);
	assert_int_equal(ts.last_refusal, PMREP_E_TLS);
	assert_true(atomic_load(&tls_reflect_lines) >= 1);
	struct pmrep_replica_info info = replica_info("own");
	assert_true(unclaimed(&info));

	/* the same dial (the relay's name) reaching T: accepted */
	snprintf(r->upstream, sizeof(r->upstream), "%s", gt->port);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(tgt_stats(gt).sessions_accepted, 1);
	tgt_stop(gt);
	tgt_stop(gn);
	relay_stop(r);
	pmrep_mirror_cfg_delete(&c);
	pmrep_pmem_close(&local);
}

/* ------------------------------------------- a listener's relay names */

struct lsn {
	struct pmrep_listener *l;
	pthread_t th;
	atomic_bool stop;
	char port[8];
};

static void *
lsn_loop(void *arg)
{
	struct lsn *g = arg;
	while (!atomic_load(&g->stop))
		(void) pmrep_listener_process(g->l, 20);
	return NULL;
}

/* replica `name` on the listener, with one more TLS name (alias) */
static struct pmrep_target *
lsn_add(struct pmrep_listener *l, const char *name, const char *alias)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct pmrep_target_cfg *cfg;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, SIZE, true), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_target_cfg_set_timeout(cfg, 3000 * func_slow()), 0);
	if (alias)
		assert_int_equal(pmrep_target_cfg_add_tls_name(cfg, alias), 0);
	struct pmrep_target *t = NULL;
	assert_int_equal(pmrep_listener_add_target(l, name, cfg, &t), 0);
	pmrep_target_cfg_delete(&cfg);
	return t;
}

/*
 * SECURITY.md: a relay declared with tls-name reaches "this target only".
 * On a listener (pmrep-target --config) replica "a" answers to the relay's
 * name, replica "b" (same key) does not: a handshake through the relay
 * that selects "b" is refused (the relay was declared for "a" only),
 * while the same relay selecting "a" attaches, and "b" dialed directly
 * attaches. (Before the relay names were per replica, the handshake
 * through a's relay attached to "b".)
 */
static void
relay_name_of_one_replica_is_refused_for_another(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	static struct lsn g;
	memset(&g, 0, sizeof(g));
	struct pmrep_target_cfg *lcfg;
	assert_int_equal(pmrep_target_cfg_new(&lcfg), 0);
	assert_int_equal(pmrep_target_cfg_set_address(lcfg, "127.0.0.1", "0"), 0);
	assert_int_equal(pmrep_target_cfg_set_timeout(lcfg, 3000 * func_slow()), 0);
	assert_int_equal(pmrep_listener_new(lcfg, &g.l), 0);
	pmrep_target_cfg_delete(&lcfg);
	uint16_t port;
	assert_int_equal(pmrep_listener_get_port(g.l, &port), 0);
	snprintf(g.port, sizeof(g.port), "%u", port);
	struct relay *r = relay_start(g.port, RELAY_PASS);
	struct pmrep_target *ta = lsn_add(g.l, "a", relay_name(r));
	struct pmrep_target *tb = lsn_add(g.l, "b", NULL);
	assert_int_equal(pthread_create(&g.th, NULL, lsn_loop, &g), 0);
	struct pmrep_pmem *local = local_open("local");

	/* through a's relay, selecting b: refused, nothing of b claimed */
	struct pmrep_mirror_cfg *c = mcfg(r->port, true);
	assert_int_equal(pmrep_mirror_cfg_set_replica_name(c, 0, "b"), 0);
	struct pmrep_mirror *m = NULL;
	/* a final reject at admission: as for a wrong key */
	assert_int_equal(pmrep_mirror_new(local, c, &m), PMREP_E_AUTH);
	assert_null(m);
	struct pmrep_target_stats ts;
	long long t0 = func_now_ms();
	do {
		usleep(10000);
		assert_int_equal(pmrep_target_get_stats(tb, &ts), 0);
	} while (ts.sessions_refused == 0 &&
			func_now_ms() - t0 < 5000 * func_slow());
	assert_int_equal(ts.sessions_accepted, 0);
	assert_int_equal(ts.sessions_refused, 1);
	assert_int_equal(ts.last_refusal, PMREP_E_TLS);
	assert_true(atomic_load(&tls_reflect_lines) >= 1);
	struct pmrep_replica_info info = replica_info("b");
	assert_true(unclaimed(&info));
	pmrep_mirror_cfg_delete(&c);

	/* the same relay selecting a: attached */
	c = mcfg(r->port, true);
	assert_int_equal(pmrep_mirror_cfg_set_replica_name(c, 0, "a"), 0);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_target_get_stats(ta, &ts), 0);
	assert_int_equal(ts.sessions_accepted, 1);
	pmrep_mirror_cfg_delete(&c);

	/* b dialed directly (the listener's own address): attached */
	c = mcfg(g.port, true);
	assert_int_equal(pmrep_mirror_cfg_set_replica_name(c, 0, "b"), 0);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_target_get_stats(tb, &ts), 0);
	assert_int_equal(ts.sessions_accepted, 1);
	pmrep_mirror_cfg_delete(&c);

	atomic_store(&g.stop, true);
	pthread_join(g.th, NULL);
	assert_int_equal(pmrep_listener_delete(&g.l), 0);
	relay_stop(r);
	pmrep_pmem_close(&local);
}

/* ------------------------------------------------- the transport alone */

static const uint8_t tpsk[32] = "transport-psk-0123456789-abcdefg";

static int
tfind(void *arg, const uint8_t *id, size_t len, const char *local,
		uint8_t *psk, size_t *psk_len)
{
	(void)arg;
	assert_non_null(strstr(local, "127.0.0.1:"));
	if (len != 6 || memcmp(id, "client", 6) != 0)
		return -1;
	memcpy(psk, tpsk, sizeof(tpsk));
	*psk_len = sizeof(tpsk);
	return 0;
}

/* the cfg API's limits, a TLS pair's one-sided ops byte-exact, and both
 * mismatches refused with the cause named on the conn */
static void
transport_tls_pair_ops_and_refusals(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	struct pmrep_conn_cfg *cc, *sc, *plain;
	assert_int_equal(pmrep_conn_cfg_new(&cc), 0);
	assert_int_equal(pmrep_conn_cfg_new(&sc), 0);
	assert_int_equal(pmrep_conn_cfg_new(&plain), 0);
	bool on = true;
	assert_int_equal(pmrep_conn_cfg_get_tls(cc, &on), 0);
	assert_false(on);
	assert_int_equal(pmrep_conn_cfg_set_tls_psk(cc, "client", tpsk, 31), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_set_tls_psk(cc, "", tpsk, 32), PMREP_E_INVAL);
	char longid[PMREP_TLS_IDENTITY_MAX + 2];
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	assert_int_equal(pmrep_conn_cfg_set_tls_psk(cc, longid, tpsk, 32), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_get_tls(cc, &on), 0);
	assert_false(on);
	assert_int_equal(pmrep_conn_cfg_set_tls_psk_find(sc, NULL, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_conn_cfg_set_tls_psk(cc, "client", tpsk, 32), 0);
	assert_int_equal(pmrep_conn_cfg_set_tls_psk_find(sc, tfind, NULL), 0);
	assert_int_equal(pmrep_conn_cfg_get_tls(cc, &on), 0);
	assert_true(on);

	/* a TLS pair: writes and reads of every size byte-exact */
	struct func_pair p;
	struct func_opts o = { .ccfg = cc, .scfg = sc };
	func_pair_open(&p, &o);
	struct func_mrs m;
	func_mrs_reg(&m, &p, 1u << 20, PMREP_MR_USAGE_ALL);
	for (unsigned i = 0; i < FUNC_NSIZES; i++) {
		size_t n = func_sizes[i];
		func_pattern(m.cbuf, n, i + 1);
		assert_int_equal(pmrep_write(p.cconn, m.srmt, 0, m.cmr, 0, n,
				PMREP_F_COMPLETION_ALWAYS, NULL), 0);
		assert_int_equal(func_wait_one(func_cq(p.cconn), 5000).status,
				PMREP_WC_SUCCESS);
		assert_memory_equal(m.sbuf, m.cbuf, n);
		memset(m.cbuf, 0, n);
		assert_int_equal(pmrep_read(p.cconn, m.cmr, 0, m.srmt, 0, n,
				PMREP_F_COMPLETION_ALWAYS, NULL), 0);
		assert_int_equal(func_wait_one(func_cq(p.cconn), 5000).status,
				PMREP_WC_SUCCESS);
		assert_memory_equal(m.cbuf, m.sbuf, n);
	}
	int cause = -1;
	assert_int_equal(pmrep_conn_get_failure(p.cconn, &cause), 0);
	assert_int_equal(cause, 0);

	/* a plaintext client to the TLS endpoint: REJECTED, cause TLS; the
	 * endpoint reports the refusal */
	struct pmrep_conn_req *req = NULL;
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, "127.0.0.1", p.port, plain, &req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	int r = PMREP_E_NO_EVENT;
	for (int i = 0; i < 300 * func_slow() && r != PMREP_E_TLS; i++) {
		struct pmrep_conn_req *sreq = NULL;
		r = pmrep_ep_next_conn_req(p.ep, sc, &sreq);
		assert_int_not_equal(r, 0);
		usleep(10000);
	}
	assert_int_equal(r, PMREP_E_TLS);
	func_expect_event(conn, PMREP_CONN_REJECTED, 5000);
	assert_int_equal(pmrep_conn_get_failure(conn, &cause), 0);
	assert_int_equal(cause, PMREP_E_TLS);
	assert_int_equal(pmrep_conn_delete(&conn), 0);

	/* a TLS client to a plaintext endpoint: REJECTED, cause TLS */
	assert_int_equal(pmrep_conn_req_new(p.cpeer, "127.0.0.1", p.port, cc, &req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	r = PMREP_E_NO_EVENT;
	for (int i = 0; i < 300 * func_slow() && r == PMREP_E_NO_EVENT; i++) {
		struct pmrep_conn_req *sreq = NULL;
		r = pmrep_ep_next_conn_req(p.ep, plain, &sreq);
		usleep(10000);
	}
	assert_int_equal(r, PMREP_E_MALFORMED);	/* not a HELLO */
	func_expect_event(conn, PMREP_CONN_REJECTED, 5000);
	assert_int_equal(pmrep_conn_get_failure(conn, &cause), 0);
	assert_int_equal(cause, PMREP_E_TLS);
	assert_int_equal(pmrep_conn_delete(&conn), 0);

	/* an unknown identity: the handshake fails on both ends */
	assert_int_equal(pmrep_conn_cfg_set_tls_psk(plain, "stranger", tpsk, 32), 0);
	assert_int_equal(pmrep_conn_req_new(p.cpeer, "127.0.0.1", p.port, plain, &req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	r = PMREP_E_NO_EVENT;
	for (int i = 0; i < 300 * func_slow() && r != PMREP_E_TLS; i++) {
		struct pmrep_conn_req *sreq = NULL;
		r = pmrep_ep_next_conn_req(p.ep, sc, &sreq);
		assert_int_not_equal(r, 0);
		usleep(10000);
	}
	func_expect_event(conn, PMREP_CONN_REJECTED, 5000);
	assert_int_equal(pmrep_conn_get_failure(conn, &cause), 0);
	assert_int_equal(cause, PMREP_E_TLS);
	assert_int_equal(pmrep_conn_delete(&conn), 0);

	func_pair_close_all(&p, &m);
	pmrep_conn_cfg_delete(&cc);
	pmrep_conn_cfg_delete(&sc);
	pmrep_conn_cfg_delete(&plain);
}

/*
 * What a client that has proven nothing may make the endpoint read is
 * capped (TCP_TLS_CH_MAX, 4096 bytes): a handshake record announcing
 * 16 000 bytes, 6000 of them sent, never a binder -- the endpoint drops
 * the socket (the client reads its end) and logs it, without waiting
 * for the rest or for the handshake deadline (10 s here). (With the cap
 * raised past the record, the socket stays until the deadline: the
 * drop is not seen in 5 s.)
 */
static void
client_hello_over_4096_bytes_before_proof_is_dropped(void **state)
{
	(void)state;
	FUNC_TCP_ONLY();
	struct pmrep_conn_cfg *cc, *sc;
	assert_int_equal(pmrep_conn_cfg_new(&cc), 0);
	assert_int_equal(pmrep_conn_cfg_new(&sc), 0);
	assert_int_equal(pmrep_conn_cfg_set_tls_psk(cc, "client", tpsk, 32), 0);
	assert_int_equal(pmrep_conn_cfg_set_tls_psk_find(sc, tfind, NULL), 0);
	assert_int_equal(pmrep_conn_cfg_set_timeout(sc, 10000), 0);
	struct func_pair p;
	struct func_opts o = { .ccfg = cc, .scfg = sc };
	func_pair_open(&p, &o);
	atomic_store(&tls_cap_lines, 0);

	int s = func_raw_connect(p.port);
	static uint8_t big[6000];
	memset(big, 0x41, sizeof(big));
	big[0] = 0x16;		/* handshake record, 16 000 bytes announced */
	big[1] = 0x03;
	big[2] = 0x01;
	big[3] = 16000 >> 8;
	big[4] = 16000 & 0xff;
	big[5] = 0x01;		/* a ClientHello ... */
	big[6] = 0x00;		/* ... of 15 996 bytes */
	big[7] = (15996 >> 8) & 0xff;
	big[8] = 15996 & 0xff;
	assert_int_equal(write(s, big, sizeof(big)), (ssize_t)sizeof(big));
	bool ended = false;
	long long t0 = func_now_ms();
	while (!ended && func_now_ms() - t0 < 5000 * func_slow()) {
		struct pmrep_conn_req *sreq = NULL;
		assert_int_not_equal(pmrep_ep_next_conn_req(p.ep, sc, &sreq), 0);
		struct pollfd pf = { s, POLLIN, 0 };
		char c;
		if (poll(&pf, 1, 10) == 1 && read(s, &c, 1) <= 0)
			ended = true;
	}
	assert_true(ended);
	assert_int_equal(atomic_load(&tls_cap_lines), 1);
	close(s);

	/* a key holder after it: served as before */
	struct pmrep_conn_req *req = NULL;
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, "127.0.0.1", p.port, cc, &req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	struct pmrep_conn_req *sreq = NULL;
	int r = PMREP_E_NO_EVENT;
	for (int i = 0; i < 300 * func_slow() && r != 0; i++) {
		r = pmrep_ep_next_conn_req(p.ep, sc, &sreq);
		if (r)
			usleep(10000);
	}
	assert_int_equal(r, 0);
	assert_int_equal(pmrep_conn_req_reject(&sreq, false), 0);
	func_expect_event(conn, PMREP_CONN_REJECTED, 5000);
	assert_int_equal(pmrep_conn_delete(&conn), 0);

	func_pair_close_all(&p, NULL);
	pmrep_conn_cfg_delete(&cc);
	pmrep_conn_cfg_delete(&sc);
}

int
main(int argc, char *argv[])
{
	func_child_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	pmrep_log_set_function(log_sink, NULL);
	pmrep_log_set_threshold(PMREP_LOG_ERROR);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(tls_mirror_through_a_passing_relay_is_byte_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(plaintext_relay_sees_and_rewrites_the_data_unnoticed, setup, teardown),
		cmocka_unit_test_setup_teardown(tampering_relay_breaks_the_session_and_no_persist_succeeds, setup, teardown),
		cmocka_unit_test_setup_teardown(downgrade_attempts_are_refused_with_the_tls_error, setup, teardown),
		cmocka_unit_test_setup_teardown(wrong_key_fails_the_tls_handshake_on_both_ends, setup, teardown),
		cmocka_unit_test_setup_teardown(reflected_handshake_is_refused_by_the_other_target, setup, teardown),
		cmocka_unit_test_setup_teardown(relay_name_of_one_replica_is_refused_for_another, setup, teardown),
		cmocka_unit_test_setup_teardown(transport_tls_pair_ops_and_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(client_hello_over_4096_bytes_before_proof_is_dropped, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
