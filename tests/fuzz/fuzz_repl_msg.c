/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_repl_msg.c -- libFuzzer target of the replication protocol's
 * decoders (src/repl/wire/msg.c): the same bytes are decoded as HELLO and as
 * CHALLENGE private data and as a message. Whatever a decoder accepts
 * must re-encode to exactly the bytes it read (private data: the first
 * REPL_PDATA_SIZE; a message: header + its type's body), which must not
 * exceed what was received nor a message slot. A decoded HELLO's
 * admission proof goes through the target's checker (src/repl/wire/admission.c)
 * against two keys at a few windows, and its nonce through a replay cache:
 * neither may crash, and random bytes are never admitted (a MAC that
 * verifies by chance is a 2^-64 event).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pmrep/base.h>

#include "repl/wire/admission.h"
#include "repl/wire/msg.h"

static struct repl_replay replay;
static const struct repl_key keys[2] = {
	{ .id = 0, .len = 32, .key = "fuzz-admission-key-0-0123456789a" },
	{ .id = 7, .len = 16, .key = "fuzz-adm-key-7-x" },
};

static void
check_admission(const struct repl_pdata *p)
{
	uint32_t w = (uint32_t)p->proof[0] | (uint32_t)p->proof[1] << 8 |
		(uint32_t)p->proof[2] << 16 | (uint32_t)p->proof[3] << 24;
	for (uint32_t now = w - 1; now != w + 2; now++) {
		unsigned k = 99;
		enum repl_admit_verdict v = repl_admit_check(keys, 2, now,
				p->key_id, p->nonce, p->selector, p->proof, &k);
		if (v == REPL_ADMIT_OK)
			abort();
		if (v != REPL_ADMIT_NONE && v != REPL_ADMIT_STALE &&
				v != REPL_ADMIT_BAD && v != REPL_ADMIT_UNKNOWN_KEY)
			abort();
	}
	enum repl_admit_verdict v = repl_replay_admit(&replay, w, w, p->nonce);
	if (v != REPL_ADMIT_OK && v != REPL_ADMIT_REPLAY &&
			v != REPL_ADMIT_CACHE_FULL)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	(void) pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return 0;
}

static void
check_pdata(const uint8_t *data, size_t size, enum repl_pdata_type want)
{
	struct repl_pdata p;
	int r = repl_pdata_decode(data, size, want, &p);
	if (r == PMREP_E_MALFORMED)
		return;
	size_t need = want == REPL_PDATA_HELLO ? REPL_HELLO_SIZE :
		REPL_CHALLENGE_SIZE;
	if (r != 0 || size < need || p.type != want ||
			strlen(p.selector) > REPL_SELECTOR_SIZE)
		abort();
	uint8_t again[REPL_PDATA_SIZE];
	if (repl_pdata_encode(&p, again) != need ||
			memcmp(again, data, need) != 0)
		abort();
	if (want == REPL_PDATA_HELLO)
		check_admission(&p);
}

static void
check_msg(const uint8_t *data, size_t size)
{
	struct repl_msg m;
	int r = repl_msg_decode(data, size, &m);
	if (r == PMREP_E_MALFORMED)
		return;
	if (r != 0)
		abort();
	if (m.type < REPL_MSG_AUTH || m.type > REPL_MSG_MEMBERS_REPLY ||
			m.status > REPL_ST_MAX_)
		abort();
	uint8_t again[REPL_MSG_SLOT];
	memset(again, 0xee, sizeof(again));
	size_t n = repl_msg_encode(&m, again);
	if (n < REPL_MSG_HDR_SIZE || n > REPL_MSG_SLOT || n > size)
		abort();
	if (memcmp(again, data, n) != 0)
		abort();
	/* the encoding decodes to the same message */
	struct repl_msg m2;
	if (repl_msg_decode(again, n, &m2) != 0 || m2.type != m.type ||
			m2.status != m.status || m2.seq != m.seq ||
			memcmp(&m2.u, &m.u, sizeof(m.u)) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_pdata(data, size, REPL_PDATA_HELLO);
	check_pdata(data, size, REPL_PDATA_CHALLENGE);
	check_msg(data, size);
	return 0;
}
