/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_hdr.c -- the replica header's encoder and strict decoder:
 * round trip, and every kind of malformed input (truncated, bad magic,
 * bad version, bad checksum, reserved bits, size mismatch), plus
 * pmrep_replica_read_info on real files.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/wire.h"
#include "repl/replica_hdr.h"

#define DATA (1u << 20)

static struct replica_hdr
sample(void)
{
	struct replica_hdr h = { .data_size = DATA, .generation = 7,
		.attach_id = 0x1122334455667788ull,
		.flags = PMREP_REPLICA_F_CONSISTENT };
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		h.uuid[i] = (uint8_t)(0xa0 + i);
	return h;
}

/* re-seal a modified encoding so that only the intended fault remains */
static void
reseal(uint8_t *b)
{
	pmrep_put_le64(b + 120, replica_fletcher64(b, 120));
}

static void
hdr_roundtrip_keeps_every_field(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), PMREP_REPLICA_DATA_OFFSET + DATA, &out), 0);
	assert_memory_equal(out.uuid, in.uuid, PMREP_UUID_SIZE);
	assert_int_equal(out.data_size, DATA);
	assert_int_equal(out.generation, 7);
	assert_int_equal(out.attach_id, 0x1122334455667788ull);
	assert_int_equal(out.flags, PMREP_REPLICA_F_CONSISTENT);
	/* file size 0: not checked */
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), 0);
}

static void
hdr_encoding_is_little_endian_at_fixed_offsets(void **state)
{
	(void)state;
	struct replica_hdr in = sample();
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b);
	assert_memory_equal(b, "PMREPRPL", 8);
	assert_int_equal(b[8], 1);	/* version, low byte first */
	assert_int_equal(b[9], 0);
	assert_int_equal(b[10], 128);
	assert_int_equal(b[12], PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(b[16], 0xa0);
	assert_int_equal(pmrep_get_le64(b + 32), 4096);
	assert_int_equal(b[40], 0);	/* 1 MiB = 0x100000 */
	assert_int_equal(b[42], 0x10);
	assert_int_equal(b[48], 7);
	assert_int_equal(b[56], 0x88);
}

static void
hdr_truncated_is_malformed(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b);
	for (size_t len = 0; len < sizeof(b); len += 7)
		assert_int_equal(replica_hdr_decode(b, len, 0, &out), PMREP_E_MALFORMED);
	assert_int_equal(replica_hdr_decode(b, sizeof(b) - 1, 0, &out), PMREP_E_MALFORMED);
}

static void
hdr_bad_magic_is_malformed(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b);
	b[3] ^= 0x20;
	reseal(b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);
	memset(b, 0, sizeof(b));	/* a zeroed, never formatted file */
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);
}

static void
hdr_unknown_version_is_malformed(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b);
	pmrep_put_le16(b + 8, 2);
	reseal(b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);
	pmrep_put_le16(b + 8, 0);
	reseal(b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);
}

static void
hdr_any_flipped_bit_fails_the_checksum(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b);
	/* every bit of the fields after the version, and of the checksum */
	for (size_t i = 10; i < sizeof(b); i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1u << bit);
			assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out),
					PMREP_E_MALFORMED);
			b[i] ^= (uint8_t)(1u << bit);
		}
	}
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), 0);
}

static void
hdr_reserved_bits_and_bad_layout_are_malformed(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t b[REPLICA_HDR_ENC_SIZE];

	replica_hdr_encode(&in, b);
	b[12] |= 0x80;			/* unknown flag */
	reseal(b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);

	replica_hdr_encode(&in, b);
	b[100] = 1;			/* reserved byte */
	reseal(b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);

	replica_hdr_encode(&in, b);
	pmrep_put_le64(b + 32, 8192);	/* data offset */
	reseal(b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);

	replica_hdr_encode(&in, b);
	pmrep_put_le16(b + 10, 64);	/* header length */
	reseal(b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);

	replica_hdr_encode(&in, b);
	pmrep_put_le64(b + 40, 0);	/* data size 0 */
	reseal(b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);

	replica_hdr_encode(&in, b);
	pmrep_put_le64(b + 40, UINT64_MAX);	/* data size overflows */
	reseal(b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), 0, &out), PMREP_E_MALFORMED);
}

static void
hdr_size_mismatch_with_the_file_is_range(void **state)
{
	(void)state;
	struct replica_hdr in = sample(), out;
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b);
	assert_int_equal(replica_hdr_decode(b, sizeof(b), DATA, &out), PMREP_E_RANGE);
	assert_int_equal(replica_hdr_decode(b, sizeof(b),
			PMREP_REPLICA_DATA_OFFSET + DATA + 4096, &out), PMREP_E_RANGE);
	assert_int_equal(replica_hdr_decode(b, sizeof(b),
			PMREP_REPLICA_DATA_OFFSET + DATA - 1, &out), PMREP_E_RANGE);
}

static void
read_info_reads_a_formatted_file_and_rejects_others(void **state)
{
	(void)state;
	char path[] = "/dev/shm/pmrep-test-repl-hdr-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct replica_hdr in = sample();
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&in, b);
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + DATA), 0);
	assert_int_equal(pwrite(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));

	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path, &info), 0);
	assert_memory_equal(info.uuid, in.uuid, PMREP_UUID_SIZE);
	assert_int_equal(info.data_offset, PMREP_REPLICA_DATA_OFFSET);
	assert_int_equal(info.data_size, DATA);
	assert_int_equal(info.generation, 7);
	assert_int_equal(info.flags, PMREP_REPLICA_F_CONSISTENT);

	/* a file one page longer than the header says */
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + DATA + 4096), 0);
	assert_int_equal(pmrep_replica_read_info(path, &info), PMREP_E_RANGE);
	/* a file of 100 bytes */
	assert_int_equal(ftruncate(fd, 100), 0);
	assert_int_equal(pmrep_replica_read_info(path, &info), PMREP_E_MALFORMED);
	/* an empty file */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pmrep_replica_read_info(path, &info), PMREP_E_MALFORMED);
	close(fd);
	unlink(path);

	assert_int_equal(pmrep_replica_read_info(path, &info), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOENT);
	assert_int_equal(pmrep_replica_read_info(NULL, &info), PMREP_E_INVAL);
	assert_int_equal(pmrep_replica_read_info(path, NULL), PMREP_E_INVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hdr_roundtrip_keeps_every_field),
		cmocka_unit_test(hdr_encoding_is_little_endian_at_fixed_offsets),
		cmocka_unit_test(hdr_truncated_is_malformed),
		cmocka_unit_test(hdr_bad_magic_is_malformed),
		cmocka_unit_test(hdr_unknown_version_is_malformed),
		cmocka_unit_test(hdr_any_flipped_bit_fails_the_checksum),
		cmocka_unit_test(hdr_reserved_bits_and_bad_layout_are_malformed),
		cmocka_unit_test(hdr_size_mismatch_with_the_file_is_range),
		cmocka_unit_test(read_info_reads_a_formatted_file_and_rejects_others),
	};
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
