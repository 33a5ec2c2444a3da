/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_repl_msg.c -- libFuzzer target of the replication protocol's
 * decoders (src/repl/msg.c): the same bytes are decoded as HELLO and as
 * CHALLENGE private data and as a message. Whatever a decoder accepts
 * must re-encode to exactly the bytes it read (private data: the first
 * REPL_PDATA_SIZE; a message: header + its type's body), which must not
 * exceed what was received nor a message slot.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pmrep/base.h>

#include "repl/msg.h"

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
	if (m.type < REPL_MSG_AUTH || m.type > REPL_MSG_COMMIT_REPLY ||
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
