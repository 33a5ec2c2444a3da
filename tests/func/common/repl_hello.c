/* SPDX-License-Identifier: BSD-3-Clause */
/* repl_hello.c -- see repl_hello.h */
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "repl_hello.h"

static void
le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t
func_admit_window(int delta)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint32_t)((long long)(ts.tv_sec / FUNC_ADMIT_WINDOW_S) + delta);
}

void
func_repl_hello(uint8_t *out, const uint8_t *key, size_t key_len,
		uint32_t key_id, const char *selector, uint32_t window,
		uint8_t *nonce_i)
{
	memset(out, 0, FUNC_HELLO_LEN);
	out[0] = 0x52;		/* magic 0x5052 LE */
	out[1] = 0x50;
	out[2] = 3;		/* protocol version 3 */
	out[3] = 1;
	le32(out + 4, key_id);
	(void) RAND_bytes(out + 8, 16);
	if (nonce_i)
		memcpy(nonce_i, out + 8, 16);
	if (selector)
		memcpy(out + 24, selector, strnlen(selector, 20));
	if (key == NULL)
		return;
	/* HMAC-SHA256(key, "pmrep-repl-v2 admission\0" | window | key id |
	 * nonce_i | selector[20]); the proof is window | mac[0..8) */
	static const char label[] = "pmrep-repl-v2 admission";
	uint8_t msg[sizeof(label) + 4 + 4 + 16 + 20], mac[32];
	size_t n = 0;
	memcpy(msg, label, sizeof(label));
	n += sizeof(label);
	le32(msg + n, window);
	n += 4;
	le32(msg + n, key_id);
	n += 4;
	memcpy(msg + n, out + 8, 16);
	n += 16;
	memcpy(msg + n, out + 24, 20);
	n += 20;
	unsigned ml = 0;
	HMAC(EVP_sha256(), key, (int)key_len, msg, n, mac, &ml);
	le32(out + 44, window);
	memcpy(out + 48, mac, 8);
}
