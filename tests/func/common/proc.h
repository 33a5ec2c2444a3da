/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proc.h -- tests that run the tools as child processes: a file's text,
 * waiting for a log line, running a command with a bound.
 */
#ifndef PMREP_TEST_PROC_H
#define PMREP_TEST_PROC_H

#include <stddef.h>

/* the first len - 1 bytes of `path` into buf, NUL-terminated ("" when
 * it does not open) */
void func_slurp(const char *path, char *buf, size_t len);
/* how often `needle` occurs in `s` */
int func_count_of(const char *s, const char *needle);
/* wait (10 s x func_slow) until `path` holds `needle` `times` times;
 * fails the test with the file's text otherwise */
void func_wait_text(const char *path, const char *needle, int times);
/* read from `fd` until buf (len bytes, NUL-terminated) holds a line;
 * fails the test after 10 s x func_slow or at EOF */
void func_read_line(int fd, char *buf, size_t len);
/* run argv (stdout and stderr into `out` of out_len, through the file
 * `tmp`; PMREP_LOG_LEVEL unset) for at most limit_ms x func_slow: its
 * exit status, 128 + a signal, -1 when it had to be killed */
int func_run_capture(char *const argv[], const char *tmp, char *out,
		size_t out_len, int limit_ms);

#endif
