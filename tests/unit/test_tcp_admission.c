/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tcp_admission.c -- the tcp endpoint's admission pieces
 * that a socket test on loopback cannot reach:
 *   - the source a pending socket is counted in: an IPv4 address (an
 *     IPv4-mapped one of a dual-stack listener too), an IPv6 /64 (every
 *     address of one /64 is one source, the next /64 is another; ::1
 *     alone on loopback cannot show it);
 *   - the cache of proven ClientHello.random values: a replay is seen,
 *     a full probe path refuses a new random (nothing live is dropped),
 *     an expired entry makes room.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "transport/tcp/tcp.h"

static struct sockaddr_storage
v6(const char *text, uint16_t port)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
	a->sin6_family = AF_INET6;
	a->sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, text, &a->sin6_addr), 1);
	return ss;
}

static struct sockaddr_storage
v4(const char *text, uint16_t port)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;
	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, text, &a->sin_addr), 1);
	return ss;
}

/* a and b are counted as one source */
static bool
same_source(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	int fa = -1, fb = -1;
	uint64_t ka = tcp_source_key(a, &fa), kb = tcp_source_key(b, &fb);
	return fa == fb && ka == kb;
}

static void
an_ipv6_64_is_one_source_an_ipv4_address_is_one(void **state)
{
	(void)state;
	struct sockaddr_storage a = v6("2001:db8:1:2::1", 1000),
		b = v6("2001:db8:1:2:ffff:ffff:ffff:fffe", 2000),
		c = v6("2001:db8:1:2:8000::", 3000),
		d = v6("2001:db8:1:3::1", 1000),	/* the next /64 */
		e = v6("2001:db8:1:2::1", 9), f = v6("::1", 1),
		g = v6("2001:db9:1:2::1", 1);
	/* every address and port of one /64: one source */
	assert_true(same_source(&a, &b));
	assert_true(same_source(&a, &c));
	assert_true(same_source(&a, &e));
	/* another /64, loopback, another prefix: other sources */
	assert_false(same_source(&a, &d));
	assert_false(same_source(&a, &f));
	assert_false(same_source(&a, &g));
	/* IPv4: the address, the port ignored */
	struct sockaddr_storage x = v4("127.1.0.1", 1), y = v4("127.1.0.1", 2),
		z = v4("127.1.0.2", 1);
	assert_true(same_source(&x, &y));
	assert_false(same_source(&x, &z));
	/* an IPv4 client of a dual-stack listener (an IPv4-mapped IPv6
	 * address): its IPv4 address, not the /64 ::ffff:0:0/64 that
	 * every IPv4 client would share */
	struct sockaddr_storage mx = v6("::ffff:127.1.0.1", 5),
		mz = v6("::ffff:127.1.0.2", 5);
	assert_true(same_source(&mx, &x));
	assert_false(same_source(&mx, &mz));
	/* an IPv6 /64 whose 8 bytes hold an IPv4 address's 4: apart */
	struct sockaddr_storage h = v6("7f01:1::", 1);
	assert_false(same_source(&h, &x));
	/* another family: one source of its own */
	struct sockaddr_storage u;
	memset(&u, 0, sizeof(u));
	u.ss_family = AF_UNIX;
	int fu = -1;
	assert_true(tcp_source_key(&u, &fu) == 0);
	assert_int_equal(fu, 0);
}

static void
rnd(uint8_t r[32], unsigned h, unsigned n)
{
	/* the cache hashes the first 3 bytes: h picks the probe path */
	memset(r, 0, 32);
	r[0] = (uint8_t)h;
	r[1] = (uint8_t)(h >> 8);
	r[2] = (uint8_t)(h >> 16);
	memcpy(r + 4, &n, sizeof(n));
}

static void
client_hello_cache_replay_full_and_expiry(void **state)
{
	(void)state;
	struct tcp_ch_cache *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	long long now = 1000000;
	uint8_t r[32];

	/* new, then a replay: seen, not added twice */
	rnd(r, 7, 0);
	assert_false(tcp_ch_cache_seen(c, r, now));
	assert_int_equal(tcp_ch_cache_add(c, r, now), 0);
	assert_true(tcp_ch_cache_seen(c, r, now));
	assert_int_equal(tcp_ch_cache_add(c, r, now + 1), 1);

	/* one probe path full of live entries (TCP_CH_PROBE randoms that
	 * hash alike): the next new random is refused, and every live
	 * one is still there (nothing dropped to make room) */
	for (unsigned n = 1; n < TCP_CH_PROBE; n++) {
		rnd(r, 7, n);
		assert_int_equal(tcp_ch_cache_add(c, r, now), 0);
	}
	rnd(r, 7, TCP_CH_PROBE);
	assert_int_equal(tcp_ch_cache_add(c, r, now), -1);
	assert_false(tcp_ch_cache_seen(c, r, now));
	for (unsigned n = 0; n < TCP_CH_PROBE; n++) {
		rnd(r, 7, n);
		assert_true(tcp_ch_cache_seen(c, r, now));
	}
	/* another path: room there */
	rnd(r, 7 + TCP_CH_PROBE, 0);
	assert_int_equal(tcp_ch_cache_add(c, r, now), 0);

	/* TCP_CH_KEEP_MS later the path's entries are dead: a replay of
	 * one is not seen any more (the identity's window refuses it by
	 * then), and the new random finds room */
	long long later = now + TCP_CH_KEEP_MS;
	rnd(r, 7, 0);
	assert_false(tcp_ch_cache_seen(c, r, later));
	rnd(r, 7, TCP_CH_PROBE);
	assert_int_equal(tcp_ch_cache_add(c, r, later), 0);
	assert_true(tcp_ch_cache_seen(c, r, later));
	free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(an_ipv6_64_is_one_source_an_ipv4_address_is_one),
		cmocka_unit_test(client_hello_cache_replay_full_and_expiry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
