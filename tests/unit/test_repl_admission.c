/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_admission.c -- the HELLO's admission proof (src/repl/wire/admission.c)
 * against an independent computation with OpenSSL's HMAC of what
 * docs/PROTOCOL.md "Admission" specifies; its checker (every input bound:
 * window, key id, nonce, selector, key; the window's w-1..w+1 span; key id
 * 0 and the key table), the replay cache (a replay refused, entries
 * forgotten out of the span, a full cache refuses, a clock stepped back),
 * the rate-limited log, the key table, and the key file reader's rules
 * (mode, owner, symlink, the keygen format and its check, short keys).
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
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/testhook.h"
#include "common/wire.h"
#include "repl/wire/admission.h"

static const uint8_t key1[32] = "admission-key-one-0123456789abcd";
static const uint8_t key2[32] = "admission-key-two-0123456789abcd";
static const uint8_t nonce[REPL_NONCE_SIZE] = { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6 };

/* the proof as PROTOCOL.md says, computed here without pmrep */
static void
spec_proof(const uint8_t *key, size_t len, uint32_t w, uint32_t id,
		const uint8_t *n, const char *sel, uint8_t out[REPL_PROOF_SIZE])
{
	uint8_t msg[24 + 4 + 4 + 16 + 20] = { 0 }, mac[32];
	memcpy(msg, "pmrep-repl-v2 admission", 24);	/* with its NUL */
	pmrep_put_le32(msg + 24, w);
	pmrep_put_le32(msg + 28, id);
	memcpy(msg + 32, n, 16);
	memcpy(msg + 48, sel, strlen(sel));
	unsigned ml = 0;
	assert_non_null(HMAC(EVP_sha256(), key, (int)len, msg, sizeof(msg), mac, &ml));
	pmrep_put_le32(out, w);
	memcpy(out + 4, mac, 8);
}

static void
proof_matches_the_documented_computation(void **state)
{
	(void)state;
	uint8_t a[REPL_PROOF_SIZE], b[REPL_PROOF_SIZE];
	assert_int_equal(repl_admit_proof(key1, sizeof(key1), 123456, 7, nonce,
			"replica-a", a), 0);
	spec_proof(key1, sizeof(key1), 123456, 7, nonce, "replica-a", b);
	assert_memory_equal(a, b, sizeof(a));
	/* the window is in clear, little-endian */
	assert_int_equal(pmrep_get_le32(a), 123456);
	/* a bad key length is refused, as every HMAC of the handshake */
	assert_int_equal(repl_admit_proof(key1, 15, 1, 0, nonce, "", a), PMREP_E_INVAL);
}

static long long
fixed_wall(void)
{
	return 4242;
}

static void
window_is_the_wall_clock_over_30_s_and_injectable(void **state)
{
	(void)state;
	assert_int_equal(repl_admit_window(0), 0);
	assert_int_equal(repl_admit_window(29999), 0);
	assert_int_equal(repl_admit_window(30000), 1);
	assert_int_equal(repl_admit_window(-5), 0);
	/* the harness's clock replaces the wall clock */
	pmrep_test_hooks.wall_ms = NULL;
	long long real = repl_wall_ms();
	assert_true(real > 1600000000000LL);
	pmrep_test_hooks.wall_ms = fixed_wall;
	assert_int_equal(repl_wall_ms(), 4242);
	pmrep_test_hooks.wall_ms = NULL;
}

static void
checker_accepts_w_minus_1_to_w_plus_1_and_binds_every_input(void **state)
{
	(void)state;
	struct repl_key keys[2] = { { .id = 1, .len = sizeof(key1) },
		{ .id = 2, .len = sizeof(key2) } };
	memcpy(keys[0].key, key1, sizeof(key1));
	memcpy(keys[1].key, key2, sizeof(key2));
	uint8_t p[REPL_PROOF_SIZE];
	unsigned k = 99;
	const uint32_t now = 1000;
	for (int d = -1; d <= 1; d++) {
		spec_proof(key2, sizeof(key2), now + (uint32_t)d, 2, nonce, "", p);
		assert_int_equal(repl_admit_check(keys, 2, now, 2, nonce, "", p, &k),
				REPL_ADMIT_OK);
		assert_int_equal(k, 1);
	}
	/* two windows off either way: the clocks are too far apart */
	spec_proof(key2, sizeof(key2), now - 2, 2, nonce, "", p);
	assert_int_equal(repl_admit_check(keys, 2, now, 2, nonce, "", p, &k), REPL_ADMIT_STALE);
	spec_proof(key2, sizeof(key2), now + 2, 2, nonce, "", p);
	assert_int_equal(repl_admit_check(keys, 2, now, 2, nonce, "", p, &k), REPL_ADMIT_STALE);
	/* window 0 at now 0 and 1 (no wrap below 0) */
	spec_proof(key1, sizeof(key1), 0, 1, nonce, "", p);
	assert_int_equal(repl_admit_check(keys, 2, 0, 1, nonce, "", p, &k), REPL_ADMIT_OK);
	assert_int_equal(repl_admit_check(keys, 2, 1, 1, nonce, "", p, &k), REPL_ADMIT_OK);
	assert_int_equal(repl_admit_check(keys, 2, 2, 1, nonce, "", p, &k), REPL_ADMIT_STALE);
	/* all zero: none */
	memset(p, 0, sizeof(p));
	assert_int_equal(repl_admit_check(keys, 2, now, 1, nonce, "", p, &k), REPL_ADMIT_NONE);

	/* every input is bound: key id, nonce, selector, key, window, MAC */
	spec_proof(key1, sizeof(key1), now, 1, nonce, "r", p);
	assert_int_equal(repl_admit_check(keys, 2, now, 1, nonce, "r", p, &k), REPL_ADMIT_OK);
	assert_int_equal(k, 0);
	assert_int_equal(repl_admit_check(keys, 2, now, 2, nonce, "r", p, &k), REPL_ADMIT_BAD);
	uint8_t n2[REPL_NONCE_SIZE];
	memcpy(n2, nonce, sizeof(n2));
	n2[15] ^= 1;
	assert_int_equal(repl_admit_check(keys, 2, now, 1, n2, "r", p, &k), REPL_ADMIT_BAD);
	assert_int_equal(repl_admit_check(keys, 2, now, 1, nonce, "s", p, &k), REPL_ADMIT_BAD);
	assert_int_equal(repl_admit_check(keys, 2, now, 1, nonce, "", p, &k), REPL_ADMIT_BAD);
	uint8_t q[REPL_PROOF_SIZE];
	memcpy(q, p, sizeof(q));
	pmrep_put_le32(q, now + 1);	/* the window changed, the MAC not */
	assert_int_equal(repl_admit_check(keys, 2, now, 1, nonce, "r", q, &k), REPL_ADMIT_BAD);
	for (int i = 4; i < REPL_PROOF_SIZE; i++) {
		memcpy(q, p, sizeof(q));
		q[i] ^= 0x80;
		assert_int_equal(repl_admit_check(keys, 2, now, 1, nonce, "r", q, &k),
				REPL_ADMIT_BAD);
	}
	/* a key id the table does not hold */
	spec_proof(key1, sizeof(key1), now, 3, nonce, "", p);
	assert_int_equal(repl_admit_check(keys, 2, now, 3, nonce, "", p, &k),
			REPL_ADMIT_UNKNOWN_KEY);
	/* key id 0 without a key of id 0: each key in turn */
	spec_proof(key2, sizeof(key2), now, 0, nonce, "", p);
	assert_int_equal(repl_admit_check(keys, 2, now, 0, nonce, "", p, &k), REPL_ADMIT_OK);
	assert_int_equal(k, 1);
	/* ... with a key of id 0 (an older raw key) too: still each key (a
	 * client sending no id may hold the new one) */
	keys[0].id = 0;
	assert_int_equal(repl_admit_check(keys, 2, now, 0, nonce, "", p, &k), REPL_ADMIT_OK);
	assert_int_equal(k, 1);
	spec_proof(key1, sizeof(key1), now, 0, nonce, "", p);
	assert_int_equal(repl_admit_check(keys, 2, now, 0, nonce, "", p, &k), REPL_ADMIT_OK);
	assert_int_equal(k, 0);
	/* no keys at all */
	assert_int_equal(repl_admit_check(keys, 0, now, 0, nonce, "", p, &k), REPL_ADMIT_BAD);
}

static struct repl_replay cache;

static void
replay_cache_refuses_a_repeat_forgets_out_of_span_and_refuses_when_full(void **state)
{
	(void)state;
	memset(&cache, 0, sizeof(cache));
	uint8_t n[REPL_NONCE_SIZE] = { 0 };
	assert_int_equal(repl_replay_admit(&cache, 100, 100, n), REPL_ADMIT_OK);
	assert_int_equal(repl_replay_admit(&cache, 100, 100, n), REPL_ADMIT_REPLAY);
	/* the same nonce with another window is a replay too (its proof
	 * would not verify; the nonce is what is remembered) */
	assert_int_equal(repl_replay_admit(&cache, 100, 101, n), REPL_ADMIT_REPLAY);
	/* still remembered while a proof of window 100 is acceptable */
	assert_int_equal(repl_replay_admit(&cache, 101, 101, n), REPL_ADMIT_REPLAY);
	/* at 102 no proof of 100 is accepted any more: forgotten */
	assert_int_equal(repl_replay_admit(&cache, 102, 102, n), REPL_ADMIT_OK);
	assert_int_equal(cache.n, 1);

	/* full of live entries: refused, nothing displaced */
	memset(&cache, 0, sizeof(cache));
	for (unsigned i = 0; i < REPL_ADMIT_REPLAY_MAX; i++) {
		pmrep_put_le32(n, i);
		assert_int_equal(repl_replay_admit(&cache, 500, 500, n), REPL_ADMIT_OK);
	}
	pmrep_put_le32(n, REPL_ADMIT_REPLAY_MAX);
	assert_int_equal(repl_replay_admit(&cache, 500, 500, n), REPL_ADMIT_CACHE_FULL);
	pmrep_put_le32(n, 0);
	assert_int_equal(repl_replay_admit(&cache, 501, 501, n), REPL_ADMIT_REPLAY);
	/* two windows on, every entry is out of the span: room again */
	pmrep_put_le32(n, REPL_ADMIT_REPLAY_MAX);
	assert_int_equal(repl_replay_admit(&cache, 502, 502, n), REPL_ADMIT_OK);
	assert_int_equal(cache.n, 1);
	/* the clock stepped back far: the newer entries cannot be repeated
	 * by an acceptable proof, and are forgotten too */
	pmrep_put_le32(n, 7);
	assert_int_equal(repl_replay_admit(&cache, 10, 10, n), REPL_ADMIT_OK);
	assert_int_equal(cache.n, 1);
}

static void
ratelog_writes_one_line_per_period_and_counts_the_rest(void **state)
{
	(void)state;
	struct repl_ratelog r = { 0 };
	uint64_t sup = 99;
	assert_true(repl_ratelog_allow(&r, 5000, &sup));
	assert_int_equal(sup, 0);
	for (int i = 0; i < 1000; i++)
		assert_false(repl_ratelog_allow(&r, 5000 + i % REPL_ADMIT_LOG_PERIOD_MS, &sup));
	assert_true(repl_ratelog_allow(&r, 5000 + REPL_ADMIT_LOG_PERIOD_MS, &sup));
	assert_int_equal(sup, 1000);
}

static void
key_table_adds_replaces_removes_and_is_bounded(void **state)
{
	(void)state;
	struct repl_key keys[PMREP_TARGET_MAX_KEYS];
	memset(keys, 0, sizeof(keys));
	unsigned n = 0;
	assert_int_equal(repl_keys_add(keys, &n, 5, key1, 15), PMREP_E_INVAL);
	for (uint32_t id = 1; id <= PMREP_TARGET_MAX_KEYS; id++)
		assert_int_equal(repl_keys_add(keys, &n, id, key1, sizeof(key1)), 0);
	assert_int_equal(n, PMREP_TARGET_MAX_KEYS);
	assert_int_equal(repl_keys_add(keys, &n, 99, key1, sizeof(key1)), PMREP_E_RANGE);
	/* replacing an id needs no room */
	assert_int_equal(repl_keys_add(keys, &n, 2, key2, 20), 0);
	int i = repl_keys_find(keys, n, 2);
	assert_true(i >= 0);
	assert_int_equal(keys[i].len, 20);
	assert_memory_equal(keys[i].key, key2, 20);
	assert_int_equal(repl_keys_remove(keys, &n, 2), 0);
	assert_int_equal(repl_keys_find(keys, n, 2), -1);
	assert_int_equal(repl_keys_remove(keys, &n, 2), PMREP_E_INVAL);
	assert_int_equal(n, PMREP_TARGET_MAX_KEYS - 1);
	/* the others are all still there */
	assert_true(repl_keys_find(keys, n, 1) >= 0);
	assert_true(repl_keys_find(keys, n, 3) >= 0);
	assert_true(repl_keys_find(keys, n, 4) >= 0);
}

/* ----------------------------------------------------------- key files */

static char dir[64];
static int warnings;
static char last_warning[512];

static void
count_warnings(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg)
{
	(void)file; (void)line; (void)func; (void)arg;
	if (level == PMREP_LOG_WARNING) {
		warnings++;
		snprintf(last_warning, sizeof(last_warning), "%s", msg);
	}
}

static void
put(const char *path, const char *text, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void
key_files_mode_owner_link_format_and_short_keys(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-keys-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char path[128], link[128];
	snprintf(path, sizeof(path), "%s/k", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	uint8_t k[PMREP_KEY_MAX];
	size_t len = 0;
	uint32_t id = 77;

	/* keygen's file: 0600, reads back with its id */
	assert_int_equal(pmrep_key_write_file(path, 9, 32), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), 0);
	assert_int_equal(len, 32);
	assert_int_equal(id, 9);
	/* never over an existing file */
	assert_int_equal(pmrep_key_write_file(path, 9, 32), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EEXIST);
	/* nor through a link */
	assert_int_equal(symlink("/dev/shm/pmrep-nonexistent-target", link), 0);
	assert_int_equal(pmrep_key_write_file(link, 9, 32), PMREP_E_PROVIDER);
	assert_int_equal(access("/dev/shm/pmrep-nonexistent-target", F_OK), -1);
	unlink(link);

	/* the file, cut anywhere, or one hex digit changed: refused */
	char line[256];
	int fd = open(path, O_RDONLY);
	ssize_t n = read(fd, line, sizeof(line) - 1);
	close(fd);
	assert_true(n > 20);
	line[n] = '\0';
	for (ssize_t cut = 1; cut < n - 1; cut++) {
		char t[256];
		memcpy(t, line, (size_t)cut);
		t[cut] = '\0';
		put(path, t, 0600);
		assert_int_not_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), 0);
	}
	for (ssize_t i = 12; i < n - 1; i++) {
		char t[256];
		memcpy(t, line, (size_t)n + 1);
		if (t[i] == ' ')
			continue;
		t[i] = t[i] == '0' ? '1' : '0';
		put(path, t, 0600);
		assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id),
				PMREP_E_INVAL);
	}
	/* without its newline it still reads */
	line[n - 1] = '\0';
	put(path, line, 0600);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), 0);

	/* mode: group / others may read: refused, unless allowed */
	put(path, line, 0644);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), PMREP_E_AUTH);
	assert_int_equal(pmrep_key_read_file(path, k, sizeof(k), &len), PMREP_E_AUTH);
	assert_int_equal(pmrep_key_read_file_ex(path, PMREP_KEY_FILE_INSECURE_OK,
			k, sizeof(k), &len, &id), 0);
	put(path, line, 0640);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), PMREP_E_AUTH);
	put(path, line, 0602);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), PMREP_E_AUTH);
	put(path, line, 0400);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), 0);
	assert_int_equal(pmrep_key_read_file_ex(path, 0x10, k, sizeof(k), &len, &id), PMREP_E_INVAL);

	/* owner: not the effective user (root can give it away) */
	if (geteuid() == 0) {
		put(path, line, 0600);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), PMREP_E_AUTH);
		assert_int_equal(pmrep_key_read_file_ex(path, PMREP_KEY_FILE_INSECURE_OK,
				k, sizeof(k), &len, &id), 0);
		assert_int_equal(chown(path, 0, 0), 0);
	}

	/* a symbolic link as the last component: refused (ELOOP) */
	put(path, line, 0600);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(pmrep_key_read_file_ex(link, 0, k, sizeof(k), &len, &id), PMREP_E_INVAL);
	assert_int_equal(pmrep_err_errno(), ELOOP);
	assert_int_equal(pmrep_key_read_file_ex(link, PMREP_KEY_FILE_INSECURE_OK,
			k, sizeof(k), &len, &id), PMREP_E_INVAL);

	/* the older raw form: 16..64 bytes, key id 0; short ones warn */
	put(path, "0123456789abcdef\n", 0600);
	id = 5;
	pmrep_log_set_function(count_warnings, NULL);
	warnings = 0;
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), 0);
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(last_warning, "a key of 16 bytes is short"));
	/* 32 bytes: no warning */
	put(path, "0123456789abcdef0123456789abcdef", 0600);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), 0);
	assert_int_equal(len, 32);
	assert_int_equal(warnings, 1);
	pmrep_log_set_function(NULL, NULL);
	put(path, "0123456789abcdef\n", 0600);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), 0);
	assert_int_equal(len, 16);
	assert_int_equal(id, 0);
	assert_memory_equal(k, "0123456789abcdef", 16);
	put(path, "0123456789abcde\n", 0600);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), PMREP_E_INVAL);
	/* a "pmrep-key" file of another format version */
	put(path, "pmrep-key 2 1 00 00\n", 0600);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), PMREP_E_INVAL);

	/* keygen's lengths */
	unlink(path);
	assert_int_equal(pmrep_key_write_file(path, 0, 31), PMREP_E_INVAL);
	assert_int_equal(pmrep_key_write_file(path, 0, 65), PMREP_E_INVAL);
	assert_int_equal(pmrep_key_write_file(path, 0xffffffffu, 64), 0);
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, sizeof(k), &len, &id), 0);
	assert_int_equal(len, 64);
	assert_int_equal(id, 0xffffffffu);
	/* a caller's buffer too small for the key */
	assert_int_equal(pmrep_key_read_file_ex(path, 0, k, 32, &len, &id), PMREP_E_INVAL);
	unlink(path);
	unlink(link);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(proof_matches_the_documented_computation),
		cmocka_unit_test(window_is_the_wall_clock_over_30_s_and_injectable),
		cmocka_unit_test(checker_accepts_w_minus_1_to_w_plus_1_and_binds_every_input),
		cmocka_unit_test(replay_cache_refuses_a_repeat_forgets_out_of_span_and_refuses_when_full),
		cmocka_unit_test(ratelog_writes_one_line_per_period_and_counts_the_rest),
		cmocka_unit_test(key_table_adds_replaces_removes_and_is_bounded),
		cmocka_unit_test(key_files_mode_owner_link_format_and_short_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
