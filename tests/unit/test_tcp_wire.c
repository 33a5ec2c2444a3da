/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tcp_wire.c -- the tcp provider's frame codec (tcp_wire.c) and the
 * target's access check (tcp_mr_check): byte layout at the documented
 * offsets, round trips of every frame type, one encoding per frame
 * (reserved bits and fields), per-type payload limits and field ranges,
 * truncation, and overflow-proof bounds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>
#include <cmocka.h>

#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_wire.h"

static const uint8_t all_types[] = {
	TCP_WIRE_HELLO, TCP_WIRE_ACCEPT, TCP_WIRE_REJECT, TCP_WIRE_WRITE,
	TCP_WIRE_READ, TCP_WIRE_ATOMIC_WRITE, TCP_WIRE_FLUSH, TCP_WIRE_SEND,
	TCP_WIRE_ACK, TCP_WIRE_READ_RESP, TCP_WIRE_NAK, TCP_WIRE_DISCONNECT,
};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))

/* a valid frame of `type` with every field it has set to something */
static struct tcp_frame
sample(uint8_t type)
{
	struct tcp_frame f;
	memset(&f, 0, sizeof(f));
	f.type = type;
	switch (type) {
	case TCP_WIRE_HELLO:
		f.magic = TCP_WIRE_MAGIC;
		f.version = 1;
		f.rnr_ms = 1234;
		f.payload_len = 56;
		break;
	case TCP_WIRE_ACCEPT:
		f.version = 1;
		f.rnr_ms = 0x01020304;
		f.payload_len = 196;
		break;
	case TCP_WIRE_REJECT:
		f.status = TCP_WIRE_REJ_VERSION;
		break;
	case TCP_WIRE_WRITE:
		f.flags = TCP_WIRE_F_IMM;
		f.seq = 0xfffffffe;
		f.rkey = 0xa1b2c3d4;
		f.raddr = 0x1122334455667788ull;
		f.imm = 0xcafef00d;
		f.payload_len = TCP_WIRE_DATA_MAX;
		break;
	case TCP_WIRE_READ:
		f.seq = 7;
		f.rkey = 9;
		f.raddr = 0x8000000000000000ull;
		f.len = TCP_WIRE_DATA_MAX;
		break;
	case TCP_WIRE_ATOMIC_WRITE:
		f.seq = 1;
		f.rkey = 2;
		f.raddr = 64;
		memcpy(f.value, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
		break;
	case TCP_WIRE_FLUSH:
		f.seq = 3;
		f.rkey = 4;
		f.raddr = 5;
		f.len = UINT64_MAX;
		f.flush_type = 1;
		break;
	case TCP_WIRE_SEND:
		f.flags = TCP_WIRE_F_IMM;
		f.seq = 11;
		f.imm = 12;
		f.payload_len = 13;
		break;
	case TCP_WIRE_ACK:
		f.seq = 0xffffffff;
		break;
	case TCP_WIRE_READ_RESP:
		f.seq = 5;
		f.payload_len = 4096;
		break;
	case TCP_WIRE_NAK:
		f.seq = 6;
		f.status = TCP_WIRE_NAK_REM_ACCESS;
		break;
	}
	return f;
}

static void
every_frame_type_round_trips(void **state)
{
	(void) state;
	for (unsigned i = 0; i < NTYPES; i++) {
		struct tcp_frame in = sample(all_types[i]), out;
		uint8_t buf[TCP_WIRE_HDR_MAX], again[TCP_WIRE_HDR_MAX];
		size_t n = tcp_wire_encode(&in, buf);
		assert_int_equal(n, tcp_wire_hdr_size(in.type));
		assert_int_equal(tcp_wire_decode(buf, n, &out), (int)n);
		assert_memory_equal(&in, &out, sizeof(in));
		assert_int_equal(tcp_wire_encode(&out, again), n);
		assert_memory_equal(buf, again, n);
	}
}

static void
header_bytes_are_little_endian_at_the_documented_offsets(void **state)
{
	(void) state;
	struct tcp_frame f = sample(TCP_WIRE_WRITE);
	uint8_t b[TCP_WIRE_HDR_MAX];
	assert_int_equal(tcp_wire_encode(&f, b), 32);
	const uint8_t want[32] = {
		16, 1, 0, 0, 0x00, 0x00, 0x00, 0x80,		/* payload 2^31 */
		0xfe, 0xff, 0xff, 0xff, 0xd4, 0xc3, 0xb2, 0xa1,	/* seq, rkey */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,	/* raddr */
		0x0d, 0xf0, 0xfe, 0xca, 0, 0, 0, 0,		/* imm, 0 */
	};
	assert_memory_equal(b, want, 32);

	f = sample(TCP_WIRE_HELLO);
	assert_int_equal(tcp_wire_encode(&f, b), 24);
	const uint8_t hello[24] = {
		1, 0, 0, 0, 56, 0, 0, 0,
		'P', 'M', 'R', 'T', 1, 0, 0, 0,
		0xd2, 0x04, 0, 0, 0, 0, 0, 0,
	};
	assert_memory_equal(b, hello, 24);

	f = sample(TCP_WIRE_FLUSH);
	assert_int_equal(tcp_wire_encode(&f, b), 40);
	assert_int_equal(b[0], 19);
	for (int i = 24; i < 32; i++)
		assert_int_equal(b[i], 0xff);		/* len */
	assert_int_equal(b[32], 1);			/* type */
}

static void
a_truncated_header_needs_more_bytes(void **state)
{
	(void) state;
	for (unsigned i = 0; i < NTYPES; i++) {
		struct tcp_frame f = sample(all_types[i]), out;
		uint8_t b[TCP_WIRE_HDR_MAX];
		size_t n = tcp_wire_encode(&f, b);
		for (size_t k = 0; k < n; k++)
			assert_int_equal(tcp_wire_decode(b, k, &out),
					TCP_WIRE_NEED_MORE);
	}
}

static void
an_unknown_type_is_malformed_on_its_first_byte(void **state)
{
	(void) state;
	struct tcp_frame out;
	for (int t = 0; t < 256; t++) {
		bool known = false;
		for (unsigned i = 0; i < NTYPES; i++)
			known |= all_types[i] == t;
		uint8_t b = (uint8_t)t;
		if (!known)
			assert_int_equal(tcp_wire_decode(&b, 1, &out),
					TCP_WIRE_MALFORMED);
	}
}

/* bytes of each header that are reserved (must be 0) */
static bool
reserved_byte(uint8_t type, size_t off)
{
	if (off == 2 || off == 3)
		return true;
	switch (type) {
	case TCP_WIRE_HELLO:
		return off == 14 || off == 15 || off >= 20;
	case TCP_WIRE_ACCEPT:
		return off == 10 || off == 11;
	case TCP_WIRE_REJECT:
	case TCP_WIRE_ACK:
	case TCP_WIRE_READ_RESP:
		return off >= 12;
	case TCP_WIRE_WRITE:
		return off >= 28;
	case TCP_WIRE_FLUSH:
		return off >= 36;
	default:
		return false;
	}
}

static void
every_reserved_byte_must_be_zero(void **state)
{
	(void) state;
	for (unsigned i = 0; i < NTYPES; i++) {
		struct tcp_frame f = sample(all_types[i]), out;
		uint8_t b[TCP_WIRE_HDR_MAX];
		size_t n = tcp_wire_encode(&f, b);
		for (size_t off = 0; off < n; off++) {
			if (!reserved_byte(f.type, off))
				continue;
			uint8_t c[TCP_WIRE_HDR_MAX];
			memcpy(c, b, n);
			c[off] = 0x40;
			if (tcp_wire_decode(c, n, &out) != TCP_WIRE_MALFORMED)
				fail_msg("type %u: reserved byte %zu accepted",
						f.type, off);
		}
	}
}

static void
flags_only_as_documented(void **state)
{
	(void) state;
	struct tcp_frame out;
	for (unsigned i = 0; i < NTYPES; i++) {
		struct tcp_frame f = sample(all_types[i]);
		uint8_t b[TCP_WIRE_HDR_MAX];
		size_t n = tcp_wire_encode(&f, b);
		/* any flipped bit: an unknown flag, IMM on a type without an
		 * immediate, or (WRITE / SEND samples) IMM cleared while the
		 * immediate is not 0 -- never a second encoding */
		for (int bit = 0; bit < 8; bit++) {
			uint8_t c[TCP_WIRE_HDR_MAX];
			memcpy(c, b, n);
			c[1] ^= (uint8_t)(1u << bit);
			assert_int_equal(tcp_wire_decode(c, n, &out),
					TCP_WIRE_MALFORMED);
		}
	}
	/* without IMM, imm is 0 and the frame decodes */
	struct tcp_frame w = sample(TCP_WIRE_WRITE);
	w.flags = 0;
	w.imm = 0;
	uint8_t b[TCP_WIRE_HDR_MAX];
	size_t n = tcp_wire_encode(&w, b);
	assert_int_equal(tcp_wire_decode(b, n, &out), (int)n);
	w.imm = 1;
	assert_int_equal(tcp_wire_encode(&w, b), 0);
}

static int
decode_with(struct tcp_frame f)
{
	uint8_t b[TCP_WIRE_HDR_MAX];
	struct tcp_frame out;
	/* a valid frame's bytes with f's values written in by hand at the
	 * documented offsets (the encoder would refuse the bad ones) */
	size_t n = tcp_wire_hdr_size(f.type);
	struct tcp_frame ok = sample(f.type);
	assert_int_equal(tcp_wire_encode(&ok, b), n);
	/* common part */
	b[1] = f.flags;
	for (int i = 0; i < 4; i++)
		b[4 + i] = (uint8_t)(f.payload_len >> (8 * i));
	switch (f.type) {
	case TCP_WIRE_HELLO:
		for (int i = 0; i < 4; i++)
			b[8 + i] = (uint8_t)(f.magic >> (8 * i));
		b[12] = (uint8_t)f.version;
		b[13] = (uint8_t)(f.version >> 8);
		for (int i = 0; i < 4; i++)
			b[16 + i] = (uint8_t)(f.rnr_ms >> (8 * i));
		break;
	case TCP_WIRE_ACCEPT:
		b[8] = (uint8_t)f.version;
		b[9] = (uint8_t)(f.version >> 8);
		for (int i = 0; i < 4; i++)
			b[12 + i] = (uint8_t)(f.rnr_ms >> (8 * i));
		break;
	case TCP_WIRE_REJECT:
	case TCP_WIRE_NAK:
		for (int i = 0; i < 4; i++)
			b[(f.type == TCP_WIRE_NAK ? 12 : 8) + i] =
				(uint8_t)(f.status >> (8 * i));
		break;
	case TCP_WIRE_READ:
		for (int i = 0; i < 8; i++)
			b[24 + i] = (uint8_t)(f.len >> (8 * i));
		break;
	case TCP_WIRE_FLUSH:
		for (int i = 0; i < 4; i++)
			b[32 + i] = (uint8_t)(f.flush_type >> (8 * i));
		break;
	}
	return tcp_wire_decode(b, n, &out);
}

static void
payload_lengths_are_limited_per_type(void **state)
{
	(void) state;
	struct tcp_frame f = sample(TCP_WIRE_HELLO);
	f.payload_len = 56;
	assert_int_equal(decode_with(f), 24);
	f.payload_len = 57;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	f.payload_len = UINT32_MAX;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	f = sample(TCP_WIRE_ACCEPT);
	f.payload_len = 196;
	assert_int_equal(decode_with(f), 16);
	f.payload_len = 197;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	f = sample(TCP_WIRE_WRITE);
	f.payload_len = TCP_WIRE_DATA_MAX + 1;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	f = sample(TCP_WIRE_READ_RESP);
	f.payload_len = TCP_WIRE_DATA_MAX + 1;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	/* frames without payload carry none */
	const uint8_t none[] = { TCP_WIRE_REJECT, TCP_WIRE_READ,
		TCP_WIRE_ATOMIC_WRITE, TCP_WIRE_FLUSH, TCP_WIRE_ACK,
		TCP_WIRE_NAK, TCP_WIRE_DISCONNECT };
	for (unsigned i = 0; i < sizeof(none); i++) {
		f = sample(none[i]);
		f.payload_len = 1;
		assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	}
}

static void
fields_are_range_checked(void **state)
{
	(void) state;
	struct tcp_frame f = sample(TCP_WIRE_HELLO);
	f.magic = TCP_WIRE_MAGIC ^ 1;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	f = sample(TCP_WIRE_HELLO);
	f.version = 0;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	f.version = 2;	/* a later version decodes; the endpoint refuses it */
	assert_int_equal(decode_with(f), 24);
	f = sample(TCP_WIRE_ACCEPT);
	f.version = 0;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	for (uint32_t r = 0; r < 8; r++) {
		f = sample(TCP_WIRE_REJECT);
		f.status = r;
		assert_int_equal(decode_with(f), r >= 1 && r <= 4 ? 16 :
				TCP_WIRE_MALFORMED);
	}
	for (uint32_t st = 0; st < 40; st++) {
		f = sample(TCP_WIRE_NAK);
		f.status = st;
		/* the wire's numbers, pinned: rdma-core's ibv_wc_status
		 * values the NAK carried before pmrep_wc_status existed */
		bool ok = st == 9 || st == 10 || st == 11 || st == 13;
		assert_int_equal(decode_with(f), ok ? 16 : TCP_WIRE_MALFORMED);
	}
	f = sample(TCP_WIRE_READ);
	f.len = (uint64_t)TCP_WIRE_DATA_MAX + 1;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
	f = sample(TCP_WIRE_FLUSH);
	f.flush_type = 2;
	assert_int_equal(decode_with(f), TCP_WIRE_MALFORMED);
}

/* a receiver-not-ready budget is a cfg timeout, at most INT32_MAX ms (0:
 * none), so now + it never overflows and a wait on it fits poll's int */
static void
rnr_budget_is_range_checked(void **state)
{
	(void) state;
	const uint8_t types[] = { TCP_WIRE_HELLO, TCP_WIRE_ACCEPT };
	const struct { uint32_t v; bool ok; } cases[] = {
		{ 0, true }, { 1, true }, { 1000, true },
		{ TCP_WIRE_RNR_MS_MAX, true }, { 0x7fffffffu, true },
		{ 0x80000000u, false }, { 0xfffffffeu, false },
		{ UINT32_MAX, false },
	};
	uint8_t b[TCP_WIRE_HDR_MAX];
	for (unsigned t = 0; t < sizeof(types); t++) {
		for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct tcp_frame f = sample(types[t]);
			f.rnr_ms = cases[i].v;
			int n = (int)tcp_wire_hdr_size(types[t]);
			assert_int_equal(decode_with(f), cases[i].ok ? n :
					TCP_WIRE_MALFORMED);
			/* the encoder refuses what the decoder would */
			assert_int_equal(tcp_wire_encode(&f, b),
					cases[i].ok ? (size_t)n : 0);
		}
	}
}

/* a wait far away is capped, never wrapped into "forever" (-1 and below)
 * or a spin (0): a conn timeout above ~1.07e9 ms puts the request deadline
 * (8 x it) 2^33 ms away, where (int) of the difference is 0 */
static void
poll_timeout_is_clamped_not_wrapped(void **state)
{
	(void) state;
	const long long now = 123456789;
	assert_int_equal(tcp_poll_ms(-1, now), -1);
	assert_int_equal(tcp_poll_ms(now - 5, now), 0);
	assert_int_equal(tcp_poll_ms(now, now), 0);
	assert_int_equal(tcp_poll_ms(now + 1, now), 1);
	assert_int_equal(tcp_poll_ms(now + INT_MAX, now), INT_MAX);
	assert_int_equal(tcp_poll_ms(now + INT_MAX + 1LL, now), INT_MAX);
	assert_int_equal(tcp_poll_ms(now + (1LL << 32) + 7, now), INT_MAX);
	assert_int_equal(tcp_poll_ms(now + 8LL * 1073741824, now), INT_MAX);
	assert_int_equal(tcp_poll_ms(now + 8LL * INT_MAX, now), INT_MAX);
	assert_int_equal(tcp_poll_ms(now + (long long)UINT32_MAX, now),
			INT_MAX);
}

static void
the_encoder_refuses_what_the_decoder_would(void **state)
{
	(void) state;
	uint8_t b[TCP_WIRE_HDR_MAX];
	struct tcp_frame f = sample(TCP_WIRE_HELLO);
	f.payload_len = 57;
	assert_int_equal(tcp_wire_encode(&f, b), 0);
	f = sample(TCP_WIRE_NAK);
	f.status = 0;	/* no NAK for a success */
	assert_int_equal(tcp_wire_encode(&f, b), 0);
	f = sample(TCP_WIRE_ACK);
	f.flags = TCP_WIRE_F_IMM;
	assert_int_equal(tcp_wire_encode(&f, b), 0);
	f.type = 99;
	assert_int_equal(tcp_wire_encode(&f, b), 0);
}

/* --------------------------------------------------- the access check */

static void
access_check_bounds_edges_and_overflow(void **state)
{
	(void) state;
	struct pmrep_mr_local mr;
	memset(&mr, 0, sizeof(mr));
	mr.raddr = 0x10000;
	mr.size = 4096;
	mr.usage = PMREP_MR_USAGE_WRITE_DST | PMREP_MR_USAGE_READ_SRC;
	int w = PMREP_MR_USAGE_WRITE_DST;
	assert_int_equal(tcp_mr_check(&mr, 0x10000, 4096, w), PMREP_WC_SUCCESS);
	assert_int_equal(tcp_mr_check(&mr, 0x10000 + 4095, 1, w), PMREP_WC_SUCCESS);
	assert_int_equal(tcp_mr_check(&mr, 0x10000 + 4096, 0, w), PMREP_WC_SUCCESS);
	assert_int_equal(tcp_mr_check(&mr, 0x10000 + 4096, 1, w),
			PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_int_equal(tcp_mr_check(&mr, 0x10000, 4097, w),
			PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_int_equal(tcp_mr_check(&mr, 0xffff, 1, w), PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_int_equal(tcp_mr_check(&mr, 0x10001, UINT64_MAX, w),
			PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_int_equal(tcp_mr_check(&mr, UINT64_MAX, 2, w),
			PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_int_equal(tcp_mr_check(&mr, 0x10000, 8,
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT), PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_int_equal(tcp_mr_check(&mr, 0x10000, 8, w |
			PMREP_MR_USAGE_READ_SRC), PMREP_WC_SUCCESS);
	assert_int_equal(tcp_mr_check(NULL, 0x10000, 8, w),
			PMREP_WC_REMOTE_ACCESS_ERROR);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_frame_type_round_trips),
		cmocka_unit_test(header_bytes_are_little_endian_at_the_documented_offsets),
		cmocka_unit_test(a_truncated_header_needs_more_bytes),
		cmocka_unit_test(an_unknown_type_is_malformed_on_its_first_byte),
		cmocka_unit_test(every_reserved_byte_must_be_zero),
		cmocka_unit_test(flags_only_as_documented),
		cmocka_unit_test(payload_lengths_are_limited_per_type),
		cmocka_unit_test(fields_are_range_checked),
		cmocka_unit_test(rnr_budget_is_range_checked),
		cmocka_unit_test(poll_timeout_is_clamped_not_wrapped),
		cmocka_unit_test(the_encoder_refuses_what_the_decoder_would),
		cmocka_unit_test(access_check_bounds_edges_and_overflow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
