/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * auth.h -- the cryptography of the handshake (HMAC-SHA256 from OpenSSL's
 * libcrypto, random nonces, constant-time compare, wiping keys) in one
 * place, so that no other repl file includes OpenSSL.
 */
#ifndef PMREP_REPL_AUTH_H
#define PMREP_REPL_AUTH_H

#include <pmrep/repl.h>

#define REPL_MAC_SIZE 32	/* HMAC-SHA256 */
#define REPL_NONCE_SIZE 16

/* a piece of the MAC'd message */
struct repl_buf {
	const void *ptr;
	size_t len;
};

/* fill `len` bytes with cryptographically strong random bytes (RAND_bytes).
 * PMREP_E_PROVIDER when the generator is not seeded / fails. */
int repl_random(void *buf, size_t len);

/*
 * HMAC-SHA256 with `key` over the concatenation of `n` pieces into `out`.
 * PMREP_E_INVAL (bad key length), PMREP_E_PROVIDER (libcrypto failed).
 */
int repl_hmac(const uint8_t *key, size_t key_len, const struct repl_buf *parts,
		int n, uint8_t out[REPL_MAC_SIZE]);

/* constant-time equality of two MACs (CRYPTO_memcmp) */
bool repl_mac_equal(const uint8_t a[REPL_MAC_SIZE], const uint8_t b[REPL_MAC_SIZE]);

/* wipe secrets in a way the compiler does not remove (OPENSSL_cleanse) */
void repl_wipe(void *ptr, size_t len);

/* PMREP_E_INVAL with a log line unless PMREP_KEY_MIN <= len <= PMREP_KEY_MAX */
int repl_key_check(const uint8_t *key, size_t len);

#endif /* PMREP_REPL_AUTH_H */
