/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_files.c -- bad files given to the replication layer, found by
 * trying to break it: each is refused with a clear code at once.
 *  - a key file or a replica that is a FIFO (open used to block forever),
 *    a directory, a pipe whose writer never writes (bounded wait);
 *  - a damaged replica header: pmrep_target_new fails with the header's
 *    error and pmrep_err_msg() keeps the reason (the cleanup used to clear
 *    it, leaving "").
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/repl.h>

#include "common/wire.h"
#include "repl/media/replica_hdr.h"

static const uint8_t key[32] = "break-key-0123456789-abcdefghijk";

static long long
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
key_file_fifo_without_a_writer_fails_at_once(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/pmrep-test-break-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	uint8_t k[PMREP_KEY_MAX];
	size_t len = 0;
	long long t0 = now_ms();
	/* open(O_RDONLY) of a FIFO blocks until a writer comes: used to hang */
	assert_int_equal(pmrep_key_read_file(path, k, sizeof(k), &len),
			PMREP_E_INVAL);
	assert_true(now_ms() - t0 < 1000);
	unlink(path);
	/* a directory */
	assert_int_equal(pmrep_key_read_file(dir, k, sizeof(k), &len),
			PMREP_E_INVAL);
	assert_non_null(strstr(pmrep_err_msg(), "directory"));
	rmdir(dir);
}

static void
key_file_pipe_is_read_and_a_silent_one_times_out(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	/* `--key-file <(...)`: a pipe with the key and then EOF works */
	assert_int_equal(write(p[1], "pipe-key-0123456789\n", 20), 20);
	close(p[1]);
	uint8_t k[PMREP_KEY_MAX];
	size_t len = 0;
	assert_int_equal(pmrep_key_read_file(path, k, sizeof(k), &len), 0);
	assert_int_equal(len, 19);
	assert_memory_equal(k, "pipe-key-0123456789", 19);
	close(p[0]);

	/* a writer that never writes nor closes: bounded, not a hang */
	assert_int_equal(pipe(p), 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
	long long t0 = now_ms();
	assert_int_equal(pmrep_key_read_file(path, k, sizeof(k), &len),
			PMREP_E_INVAL);
	long long took = now_ms() - t0;
	assert_true(took >= 1500 && took < 5000);
	close(p[0]);
	close(p[1]);
}

static void
read_info_of_a_fifo_or_directory_fails_at_once(void **state)
{
	(void)state;
	char dir[] = "/dev/shm/pmrep-test-break-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	struct pmrep_replica_info info;
	long long t0 = now_ms();
	assert_int_equal(pmrep_replica_read_info(path, &info), PMREP_E_INVAL);
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(pmrep_replica_read_info(dir, &info), PMREP_E_INVAL);
	unlink(path);
	rmdir(dir);
}

static void
target_new_on_a_damaged_header_keeps_the_reason(void **state)
{
	(void)state;
	char path[] = "/dev/shm/pmrep-test-break-hdr-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct replica_hdr h = { .data_size = 1 << 20, .generation = 1 };
	uint8_t b[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&h, b);
	b[50] ^= 1;	/* the generation: the checksum no longer matches */
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + (1 << 20)), 0);
	assert_int_equal(pwrite(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	close(fd);

	struct pmrep_target_cfg *cfg = NULL;
	struct pmrep_target *t = NULL;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, path), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_target_new(cfg, &t), PMREP_E_MALFORMED);
	assert_null(t);
	/* the caller learns why, not "" */
	assert_non_null(strstr(pmrep_err_msg(), "header"));
	assert_non_null(strstr(pmrep_err_msg(), path));

	/* a file shorter than the header */
	assert_int_equal(truncate(path, 100), 0);
	assert_int_equal(pmrep_target_new(cfg, &t), PMREP_E_MALFORMED);
	assert_non_null(strstr(pmrep_err_msg(), "header"));
	/* a header whose data size disagrees with the file */
	replica_hdr_encode(&h, b);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, PMREP_REPLICA_DATA_OFFSET + (2 << 20)), 0);
	assert_int_equal(pwrite(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	close(fd);
	assert_int_equal(pmrep_target_new(cfg, &t), PMREP_E_RANGE);
	assert_true(pmrep_err_msg()[0] != '\0');
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(key_file_fifo_without_a_writer_fails_at_once),
		cmocka_unit_test(key_file_pipe_is_read_and_a_silent_one_times_out),
		cmocka_unit_test(read_info_of_a_fifo_or_directory_fails_at_once),
		cmocka_unit_test(target_new_on_a_damaged_header_keeps_the_reason),
	};
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
