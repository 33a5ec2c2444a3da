/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tls_psk.c -- the replication's TLS PSKs and identities
 * (src/repl/wire/tls_psk.c):
 *  - the PSK is HKDF-SHA256 with the documented info string, checked
 *    against OpenSSL's HKDF through its other interface (EVP_PKEY), and
 *    differs with the key, the key id and the target name;
 *  - the target's look-up accepts exactly "pmrep-tls2 initiator key <id>
 *    target <name>" with its key id and a name that is the local address
 *    or a listed one, and gives that PSK; it refuses another role, an
 *    unknown key id, a non-canonical id, another target's name (the
 *    reflection), a NUL inside, an over-long identity;
 *  - the dialed name is numeric host:port, IPv6 in brackets.
 */
#include <netdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>

#include "repl/wire/tls_psk.h"

static const uint8_t key[32] = "unit-tls-key-0123456789-abcdefgh";

/* HKDF-SHA256 (extract with an empty salt, then expand) by EVP_PKEY */
static void
hkdf_ref(const uint8_t *k, size_t klen, const uint8_t *info, size_t ilen,
		uint8_t out[32])
{
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	assert_non_null(c);
	assert_true(EVP_PKEY_derive_init(c) > 0);
	assert_true(EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha256()) > 0);
	assert_true(EVP_PKEY_CTX_set1_hkdf_key(c, k, (int)klen) > 0);
	assert_true(EVP_PKEY_CTX_add1_hkdf_info(c, info, (int)ilen) > 0);
	size_t n = 32;
	assert_true(EVP_PKEY_derive(c, out, &n) > 0);
	assert_int_equal(n, 32);
	EVP_PKEY_CTX_free(c);
}

static void
psk_is_hkdf_with_the_documented_info(void **state)
{
	(void)state;
	uint8_t a[32], b[32], ref[32];
	assert_int_equal(repl_tls_psk(key, sizeof(key), 7, "10.0.0.2:7204", a), 0);
	static const char label[] = "pmrep tls13 psk v1 initiator";
	uint8_t info[128];
	memcpy(info, label, sizeof(label));	/* with its NUL */
	size_t k = sizeof(label);
	info[k++] = 7;
	info[k++] = 0;
	info[k++] = 0;
	info[k++] = 0;
	memcpy(info + k, "10.0.0.2:7204", 13);
	k += 13;
	hkdf_ref(key, sizeof(key), info, k, ref);
	assert_memory_equal(a, ref, 32);
	/* deterministic, and bound to each input */
	assert_int_equal(repl_tls_psk(key, sizeof(key), 7, "10.0.0.2:7204", b), 0);
	assert_memory_equal(a, b, 32);
	assert_int_equal(repl_tls_psk(key, sizeof(key), 8, "10.0.0.2:7204", b), 0);
	assert_memory_not_equal(a, b, 32);
	assert_int_equal(repl_tls_psk(key, sizeof(key), 7, "10.0.0.3:7204", b), 0);
	assert_memory_not_equal(a, b, 32);
	uint8_t key2[32];
	memcpy(key2, key, 32);
	key2[5] ^= 1;
	assert_int_equal(repl_tls_psk(key2, sizeof(key2), 7, "10.0.0.2:7204", b), 0);
	assert_memory_not_equal(a, b, 32);
	/* never the key itself */
	assert_memory_not_equal(a, key, 32);
}

/* the key whose fingerprint find() puts into an identity */
static const uint8_t *fp_key = key;
/* the time window find() puts into it: the current one + this */
static int window_off;

/* look `id` up, its " target " preceded by " fp <fp_key's fingerprint>"
 * as an initiator writes it (an id that has no " target " as is) */
static int
find(const struct repl_tls_target *tt, const char *id, const char *local,
		uint8_t psk[PMREP_TLS_PSK_MAX], size_t *len)
{
	char buf[PMREP_TLS_IDENTITY_MAX + 64];
	const char *t = strstr(id, " target ");
	if (t != NULL && strlen(id) < PMREP_TLS_IDENTITY_MAX) {
		uint8_t fp[REPL_TLS_FP_LEN];
		assert_int_equal(repl_tls_key_fp(fp_key, 32, fp), 0);
		snprintf(buf, sizeof(buf), "%.*s fp %016llx window %u%s",
				(int)(t - id), id,
				(unsigned long long)repl_tls_fp_u64(fp),
				(unsigned)(repl_admit_window(repl_wall_ms()) + window_off),
				t);
		id = buf;
	}
	return repl_tls_target_find((void *)tt, (const uint8_t *)id, strlen(id),
			local, psk, len);
}

static void
key_fingerprint_is_the_documented_hmac(void **state)
{
	(void)state;
	uint8_t fp[REPL_TLS_FP_LEN], ref[32];
	unsigned rl = 0;
	static const char label[] = "pmrep tls13 key fingerprint v1";
	assert_non_null(HMAC(EVP_sha256(), key, sizeof(key),
			(const uint8_t *)label, sizeof(label), ref, &rl));
	assert_int_equal(repl_tls_key_fp(key, sizeof(key), fp), 0);
	assert_memory_equal(fp, ref, REPL_TLS_FP_LEN);
	uint8_t key2[32];
	memcpy(key2, key, 32);
	key2[0] ^= 1;
	uint8_t fp2[REPL_TLS_FP_LEN];
	assert_int_equal(repl_tls_key_fp(key2, sizeof(key2), fp2), 0);
	assert_memory_not_equal(fp, fp2, REPL_TLS_FP_LEN);
}

static void
target_accepts_only_initiators_of_its_key_id_and_names(void **state)
{
	(void)state;
	char names[2][REPL_TLS_NAME_MAX] = { "192.0.2.9:7000", "" };
	struct repl_key keys[2] = { { .id = 0, .len = sizeof(key) } };
	memcpy(keys[0].key, key, sizeof(key));
	unsigned nkeys = 1;
	struct repl_tls_target tt = { keys, &nkeys,
		(const char (*)[REPL_TLS_NAME_MAX])names, 1, NULL };
	uint8_t psk[PMREP_TLS_PSK_MAX], want[32];
	size_t len = 0;

	/* the local address */
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_equal(len, 32);
	assert_int_equal(repl_tls_psk(key, sizeof(key), 0, "127.0.0.1:7000", want), 0);
	assert_memory_equal(psk, want, 32);
	/* a listed name (a relay, a NAT): the PSK of that name */
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 0 target 192.0.2.9:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_equal(repl_tls_psk(key, sizeof(key), 0, "192.0.2.9:7000", want), 0);
	assert_memory_equal(psk, want, 32);

	/* the window: w-1 .. w+1 accepted, older or newer refused (a
	 * ClientHello kept and replayed later), an older pmrep's identity
	 * (pmrep-tls1: no window) refused */
	window_off = -1;
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	window_off = 1;
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	window_off = -2;
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	window_off = 2;
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	window_off = 0;
	static const char v1[] = "pmrep-tls1 initiator key 0 fp 0123456789abcdef target 127.0.0.1:7000";
	assert_int_not_equal(repl_tls_target_find(&tt, (const uint8_t *)v1,
			strlen(v1), "127.0.0.1:7000", psk, &len), 0);
	/* refused: another target's name (a reflected / redirected hello) */
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7001",
			"127.0.0.1:7000", psk, &len), 0);
	/* another role, a prefix only, an unknown or non-canonical key id */
	assert_int_not_equal(find(&tt, "pmrep-tls2 target key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 0",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 1 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 00 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key x target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 4294967296 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	/* a NUL inside, an over-long identity */
	static const uint8_t nul[] = "pmrep-tls2 initiator key 0\0target 127.0.0.1:7000";
	assert_int_not_equal(repl_tls_target_find(&tt, nul, sizeof(nul) - 1,
			"127.0.0.1:7000", psk, &len), 0);
	char lng[PMREP_TLS_IDENTITY_MAX + 8];
	memset(lng, 'a', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	memcpy(lng, "pmrep-tls2 initiator key 0 target ", 34);
	assert_int_not_equal(find(&tt, lng, "127.0.0.1:7000", psk, &len), 0);
	/* a target whose only key has id 3: id 3, and id 0 (its only key) */
	keys[0].id = 3;
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 3 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_equal(repl_tls_psk(key, sizeof(key), 3, "127.0.0.1:7000", want), 0);
	assert_memory_equal(psk, want, 32);
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 4 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	/* a wrong key under the right id: its fingerprint is not the key's */
	uint8_t other[32];
	memset(other, 0x33, sizeof(other));
	fp_key = other;
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 3 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	/* a malformed fingerprint */
	static const char badfp[] =
		"pmrep-tls2 initiator key 3 fp 0123456789abcdeX target 127.0.0.1:7000";
	assert_int_not_equal(repl_tls_target_find(&tt, (const uint8_t *)badfp,
			strlen(badfp), "127.0.0.1:7000", psk, &len), 0);
	/* two keys (a rotation): each by its id, and key id 0 (no id
	 * named) by the fingerprint, with the PSK of that key */
	fp_key = key;
	keys[1] = (struct repl_key){ .id = 7, .len = sizeof(key) };
	memset(keys[1].key, 0x5a, sizeof(key));
	nkeys = 2;
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_equal(repl_tls_psk(key, sizeof(key), 0, "127.0.0.1:7000", want), 0);
	assert_memory_equal(psk, want, 32);
	fp_key = keys[1].key;
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 7 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_equal(repl_tls_psk(keys[1].key, sizeof(key), 7, "127.0.0.1:7000", want), 0);
	assert_memory_equal(psk, want, 32);
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_equal(repl_tls_psk(keys[1].key, sizeof(key), 0, "127.0.0.1:7000", want), 0);
	assert_memory_equal(psk, want, 32);
	/* an older raw key of id 0 next to key 7: id 0 with key 7's
	 * fingerprint is key 7, with key 0's is key 0 */
	keys[0].id = 0;
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_equal(repl_tls_psk(keys[1].key, sizeof(key), 0, "127.0.0.1:7000", want), 0);
	assert_memory_equal(psk, want, 32);
	fp_key = key;
	assert_int_equal(find(&tt, "pmrep-tls2 initiator key 0 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	assert_int_equal(repl_tls_psk(key, sizeof(key), 0, "127.0.0.1:7000", want), 0);
	assert_memory_equal(psk, want, 32);
	keys[0].id = 3;
	fp_key = keys[1].key;
	/* key 7 under id 3: refused */
	assert_int_not_equal(find(&tt, "pmrep-tls2 initiator key 3 target 127.0.0.1:7000",
			"127.0.0.1:7000", psk, &len), 0);
	fp_key = key;
}

static void
dialed_names_are_numeric(void **state)
{
	(void)state;
	char n[REPL_TLS_NAME_MAX];
	assert_int_equal(repl_tls_name("127.0.0.1", "7204", n), 0);
	assert_string_equal(n, "127.0.0.1:7204");
	assert_int_equal(repl_tls_name("::1", "9", n), 0);
	assert_string_equal(n, "[::1]:9");
	/* a host name, where this system resolves "localhost" (a bare
	 * chroot may have no /etc/hosts) */
	struct addrinfo *ai = NULL;
	if (getaddrinfo("localhost", NULL, NULL, &ai) == 0) {
		freeaddrinfo(ai);
		assert_int_equal(repl_tls_name("localhost", "7204", n), 0);
		assert_true(strcmp(n, "127.0.0.1:7204") == 0 || strcmp(n, "[::1]:7204") == 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(psk_is_hkdf_with_the_documented_info),
		cmocka_unit_test(key_fingerprint_is_the_documented_hmac),
		cmocka_unit_test(target_accepts_only_initiators_of_its_key_id_and_names),
		cmocka_unit_test(dialed_names_are_numeric),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
