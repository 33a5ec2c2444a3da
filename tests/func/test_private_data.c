/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_private_data.c -- private data of connect and accept (T06): the
 * limits (56 / 196 bytes; one more is an invalid argument and the request
 * survives), "none" is reported as none, the data read later is pmrep's
 * own copy with its true length, and (tcp) a malformed HELLO -- wrong
 * magic, a huge private data length, an unknown frame, an unknown version
 * -- is rejected with an error and the connection refused.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "func.h"

#define T 5000

static void
expect_pdata(const struct pmrep_conn_private_data *pd, const void *sent,
		uint8_t len)
{
	assert_int_equal(pd->len, len);
	if (len == 0) {
		assert_null(pd->ptr);	/* "none", not zeroes */
		return;
	}
	assert_non_null(pd->ptr);
	assert_ptr_not_equal(pd->ptr, sent);	/* pmrep's copy */
	assert_memory_equal(pd->ptr, sent, len);
}

static void
T06_connect_with_57_bytes_is_invalid_and_the_request_survives(void **state)
{
	(void) state;
	struct func_pair p;
	func_pair_listen(&p);
	uint8_t data[57];
	func_pattern(data, sizeof(data), 57);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, func_addr(), p.port, NULL,
			&req), 0);
	struct pmrep_conn_private_data pd = { data, 57 };
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &p.cconn),
			PMREP_E_INVAL);
	assert_non_null(req);
	assert_null(p.cconn);
	/* nothing reached the server */
	struct pmrep_conn_req *sreq = NULL;
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, 100, &sreq),
			PMREP_E_TIMEOUT);
	/* the same request connects with 56 */
	pd.len = 56;
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &p.cconn), 0);
	assert_null(req);
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&sreq), 0);
	struct pmrep_conn_private_data got;
	assert_int_equal(pmrep_conn_req_get_private_data(sreq, &got), 0);
	expect_pdata(&got, data, 56);
	assert_int_equal(pmrep_conn_req_connect(&sreq, NULL, &p.sconn), 0);
	func_expect_event(p.cconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	assert_int_equal(pmrep_conn_get_private_data(p.sconn, &got), 0);
	expect_pdata(&got, data, 56);
	/* the server accepted with none: the client sees none */
	assert_int_equal(pmrep_conn_get_private_data(p.cconn, &got), 0);
	expect_pdata(&got, NULL, 0);
	func_pair_close_all(&p, NULL);
}

static void
T06_accept_with_197_bytes_is_invalid_and_the_request_survives(void **state)
{
	(void) state;
	struct func_pair p;
	func_pair_listen(&p);
	uint8_t *data = malloc(197);
	assert_non_null(data);
	func_pattern(data, 197, 197);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, func_addr(), p.port, NULL,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.cconn), 0);
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&req), 0);
	struct pmrep_conn_private_data pd = { data, 197 };
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &p.sconn),
			PMREP_E_INVAL);
	assert_non_null(req);
	pd.len = 196;
	assert_int_equal(pmrep_conn_req_connect(&req, &pd, &p.sconn), 0);
	func_expect_event(p.cconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	/* the sender's buffer changes and goes: the copy does not */
	uint8_t expect[196];
	memcpy(expect, data, 196);
	memset(data, 0, 197);
	free(data);
	struct pmrep_conn_private_data got;
	assert_int_equal(pmrep_conn_get_private_data(p.cconn, &got), 0);
	expect_pdata(&got, expect, 196);
	/* and it stays valid after more events were taken */
	assert_int_equal(pmrep_conn_disconnect(p.sconn), 0);
	func_expect_event(p.cconn, PMREP_CONN_CLOSED, T * func_slow());
	assert_int_equal(pmrep_conn_get_private_data(p.cconn, &got), 0);
	expect_pdata(&got, expect, 196);
	func_pair_close_all(&p, NULL);
}

static void
T06_no_private_data_is_reported_as_none_on_both_sides(void **state)
{
	(void) state;
	struct func_pair p;
	func_pair_open(&p, NULL);
	struct pmrep_conn_private_data got = { (void *)1, 99 };
	assert_int_equal(pmrep_conn_get_private_data(p.cconn, &got), 0);
	expect_pdata(&got, NULL, 0);
	got.ptr = (void *)1;
	got.len = 99;
	assert_int_equal(pmrep_conn_get_private_data(p.sconn, &got), 0);
	expect_pdata(&got, NULL, 0);
	func_pair_close_all(&p, NULL);
}

static void
T06_private_data_of_every_length_arrives_with_its_true_length(void **state)
{
	(void) state;
	const uint8_t lens[] = { 1, 7, 55, 56 };
	for (unsigned i = 0; i < sizeof(lens); i++) {
		uint8_t c[56], s[196];
		func_pattern(c, sizeof(c), i);
		func_pattern(s, sizeof(s), i + 100);
		struct pmrep_conn_private_data cpd = { c, lens[i] };
		struct pmrep_conn_private_data spd = { s, (uint8_t)(lens[i] * 3 + 1) };
		struct func_opts o = { .cpdata = &cpd, .spdata = &spd };
		struct func_pair p;
		func_pair_open(&p, &o);
		struct pmrep_conn_private_data got;
		assert_int_equal(pmrep_conn_get_private_data(p.sconn, &got), 0);
		expect_pdata(&got, c, lens[i]);
		assert_int_equal(pmrep_conn_get_private_data(p.cconn, &got), 0);
		expect_pdata(&got, s, (uint8_t)(lens[i] * 3 + 1));
		func_pair_close_all(&p, NULL);
	}
}

/* ------------------------------------------------- malformed HELLO (tcp) */

/* a HELLO as tcp_wire.h lays it out, with fields to spoil */
static size_t
hello(uint8_t *b, uint8_t type, uint32_t magic, uint16_t version,
		uint32_t pdata_len)
{
	memset(b, 0, 24);
	b[0] = type;
	func_put_le32(b + 4, pdata_len);
	func_put_le32(b + 8, magic);
	func_put_le16(b + 12, version);
	func_put_le32(b + 16, 1000);
	return 24;
}

/* the ep refuses it: MALFORMED to the app, REJECT(reason) then EOF to the
 * sender */
static void
expect_refused(struct pmrep_ep *ep, int s, uint32_t reason)
{
	struct pmrep_conn_req *req = NULL;
	int ret = PMREP_E_NO_EVENT;
	long long end = func_now_ms() + T * func_slow();
	while (ret == PMREP_E_NO_EVENT && func_now_ms() < end) {
		ret = pmrep_ep_wait_conn_req(ep, NULL, 100, &req);
		if (ret == PMREP_E_TIMEOUT)
			ret = PMREP_E_NO_EVENT;
	}
	assert_int_equal(ret, PMREP_E_MALFORMED);
	assert_null(req);
	uint8_t r[16];
	size_t got = 0;
	while (got < sizeof(r)) {
		ssize_t n = recv(s, r + got, sizeof(r) - got, 0);
		assert_true(n > 0);
		got += (size_t)n;
	}
	assert_int_equal(r[0], 3);			/* REJECT */
	assert_int_equal(r[8] | r[9] << 8, reason);
	assert_int_equal(recv(s, r, 1, 0), 0);		/* then EOF */
	close(s);
}

static void
T06_malformed_hello_is_rejected_and_the_endpoint_survives_tcp(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct func_pair p;
	func_pair_listen(&p);
	uint8_t b[64 + 300];

	/* wrong magic */
	int s = func_raw_connect(p.port);
	size_t n = hello(b, 1, 0x12345678, 1, 0);
	assert_int_equal(send(s, b, n, 0), (ssize_t)n);
	expect_refused(p.ep, s, 2);

	/* a private data length far beyond 56 */
	s = func_raw_connect(p.port);
	n = hello(b, 1, 0x54524d50, 1, 1000000);
	assert_int_equal(send(s, b, n, 0), (ssize_t)n);
	expect_refused(p.ep, s, 2);

	/* 57 bytes: one too many, even with all of them sent */
	s = func_raw_connect(p.port);
	n = hello(b, 1, 0x54524d50, 1, 57);
	memset(b + n, 0xee, 57);
	assert_int_equal(send(s, b, n + 57, 0), (ssize_t)(n + 57));
	expect_refused(p.ep, s, 2);

	/* not a HELLO at all (a WRITE frame first) */
	s = func_raw_connect(p.port);
	memset(b, 0, 32);
	b[0] = 16;
	assert_int_equal(send(s, b, 32, 0), 32);
	expect_refused(p.ep, s, 2);

	/* a frame type with a longer header than HELLO's (a FLUSH) */
	s = func_raw_connect(p.port);
	memset(b, 0, 40);
	b[0] = 19;
	assert_int_equal(send(s, b, 24, 0), 24);
	expect_refused(p.ep, s, 2);

	/* a version this side does not speak (it speaks 1 and 2) */
	s = func_raw_connect(p.port);
	n = hello(b, 1, 0x54524d50, 3, 0);
	assert_int_equal(send(s, b, n, 0), (ssize_t)n);
	expect_refused(p.ep, s, 4);

	/* a receiver-not-ready budget no cfg timeout can be (> INT32_MAX ms) */
	s = func_raw_connect(p.port);
	n = hello(b, 1, 0x54524d50, 1, 0);
	func_put_le32(b + 16, 0x80000000u);
	assert_int_equal(send(s, b, n, 0), (ssize_t)n);
	expect_refused(p.ep, s, 2);

	/* reserved bits set */
	s = func_raw_connect(p.port);
	n = hello(b, 1, 0x54524d50, 1, 0);
	b[2] = 1;
	assert_int_equal(send(s, b, n, 0), (ssize_t)n);
	expect_refused(p.ep, s, 2);

	/* a well-formed HELLO sent byte by byte is still a request */
	s = func_raw_connect(p.port);
	n = hello(b, 1, 0x54524d50, 1, 3);
	memcpy(b + n, "abc", 3);
	struct pmrep_conn_req *req = NULL;
	for (size_t i = 0; i < n + 3; i++) {
		assert_int_equal(send(s, b + i, 1, 0), 1);
		if (i + 1 < n + 3)
			assert_int_equal(pmrep_ep_next_conn_req(p.ep, NULL, &req),
					PMREP_E_NO_EVENT);
	}
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&req), 0);
	struct pmrep_conn_private_data got;
	assert_int_equal(pmrep_conn_req_get_private_data(req, &got), 0);
	expect_pdata(&got, "abc", 3);
	/* dropping the request is an explicit reject */
	assert_int_equal(pmrep_conn_req_delete(&req), 0);
	{
		uint8_t r[16];
		size_t have = 0;
		while (have < sizeof(r)) {
			ssize_t k = recv(s, r + have, sizeof(r) - have, 0);
			assert_true(k > 0);
			have += (size_t)k;
		}
		assert_int_equal(r[0], 3);
		assert_int_equal(r[8], 1);	/* by the application */
		close(s);
	}

	/* and a real client still gets in */
	struct pmrep_conn_req *creq = NULL;
	assert_int_equal(pmrep_conn_req_new(p.cpeer, func_addr(), p.port, NULL,
			&creq), 0);
	assert_int_equal(pmrep_conn_req_connect(&creq, NULL, &p.cconn), 0);
	assert_int_equal(pmrep_ep_wait_conn_req(p.ep, NULL, T * func_slow(),
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &p.sconn), 0);
	func_expect_event(p.cconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	func_expect_event(p.sconn, PMREP_CONN_ESTABLISHED, T * func_slow());
	func_pair_close_all(&p, NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(T06_connect_with_57_bytes_is_invalid_and_the_request_survives),
		cmocka_unit_test(T06_accept_with_197_bytes_is_invalid_and_the_request_survives),
		cmocka_unit_test(T06_no_private_data_is_reported_as_none_on_both_sides),
		cmocka_unit_test(T06_private_data_of_every_length_arrives_with_its_true_length),
		cmocka_unit_test(T06_malformed_hello_is_rejected_and_the_endpoint_survives_tcp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
