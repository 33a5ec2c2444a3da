/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * repl_hello.h -- a replication HELLO (protocol v3, 56 bytes) built by the
 * tests from docs/PROTOCOL.md "Admission", with OpenSSL's HMAC: an
 * independent implementation of the admission proof, so a test that uses
 * it checks the library's against the documented format.
 */
#ifndef PMREP_TEST_REPL_HELLO_H
#define PMREP_TEST_REPL_HELLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FUNC_HELLO_LEN 56
#define FUNC_ADMIT_WINDOW_S 30

/* the proof window of the wall clock now, plus `delta` windows */
uint32_t func_admit_window(int delta);
/*
 * A HELLO into out[FUNC_HELLO_LEN]: magic, version 3, type 1, key_id, a
 * random nonce_i (also into nonce_i when not NULL), selector (NULL: none),
 * and -- key not NULL -- the admission proof of `window` made with key.
 */
void func_repl_hello(uint8_t *out, const uint8_t *key, size_t key_len,
		uint32_t key_id, const char *selector, uint32_t window,
		uint8_t *nonce_i);

#endif
