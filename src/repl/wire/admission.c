/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * admission.c -- the pieces of a target's admission of a connection
 * request (docs/PROTOCOL.md "Admission"), free of any target state (the
 * fuzz target links them alone): the proof, its checker, the replay cache,
 * the rate-limited log, the key table, source addresses. The decision
 * itself (target_admission.c), in this order:
 *  1. the HELLO's admission proof: window within the target's w-1..w+1,
 *     the truncated HMAC right for the key the key id selects;
 *  2. at most REPL_ADMIT_PER_SOURCE sessions in WAIT_AUTH per source
 *     address;
 *  3. a session slot: a free one, else the oldest CLOSING session, else
 *     the oldest QUERY session (authenticated, read-only: it loses only
 *     its connection). A session mid-handshake (WAIT_AUTH: a key holder
 *     now), ATTACHING or ACTIVE is never displaced: the request is
 *     refused instead;
 *  4. its nonce not admitted before within the acceptance span (the
 *     replay cache; a refused request leaves no entry).
 * A refusal is the transport's reject of the request, counted in the
 * target's stats and logged at most once per REPL_ADMIT_LOG_PERIOD_MS (a
 * flood must not flood the log: the next line names how many were not
 * written).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "common/log.h"
#include "common/testhook.h"
#include "common/wire.h"
#include "admission.h"

static const char admit_label[] = "pmrep-repl-v2 admission";

long long
repl_wall_ms(void)
{
	if (pmrep_test_hooks.wall_ms)
		return pmrep_test_hooks.wall_ms();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint32_t
repl_admit_window(long long wall_ms)
{
	if (wall_ms < 0)
		wall_ms = 0;
	return (uint32_t)(wall_ms / 1000 / REPL_ADMIT_WINDOW_S);
}

int
repl_admit_proof(const uint8_t *key, size_t key_len, uint32_t window,
		uint32_t key_id, const uint8_t nonce_i[REPL_NONCE_SIZE],
		const char *selector, uint8_t proof[REPL_PROOF_SIZE])
{
	uint8_t w[4], id[4], sel[REPL_SELECTOR_SIZE] = { 0 };
	pmrep_put_le32(w, window);
	pmrep_put_le32(id, key_id);
	memcpy(sel, selector, strnlen(selector, REPL_SELECTOR_SIZE));
	struct repl_buf parts[] = {
		{ admit_label, sizeof(admit_label) },	/* with its NUL */
		{ w, sizeof(w) },
		{ id, sizeof(id) },
		{ nonce_i, REPL_NONCE_SIZE },
		{ sel, sizeof(sel) },
	};
	uint8_t mac[REPL_MAC_SIZE];
	int ret = repl_hmac(key, key_len, parts, 5, mac);
	if (ret)
		return ret;
	memcpy(proof, w, 4);
	memcpy(proof + 4, mac, REPL_ADMIT_MAC_SIZE);
	repl_wipe(mac, sizeof(mac));
	return 0;
}

const char *
repl_admit_verdict_str(enum repl_admit_verdict v)
{
	switch (v) {
	case REPL_ADMIT_OK: return "admitted";
	case REPL_ADMIT_NONE: return "no admission proof (a keyless HELLO)";
	case REPL_ADMIT_STALE: return "the proof's time window is not the target's (clocks more than the window apart, or an old proof)";
	case REPL_ADMIT_BAD: return "the proof does not verify (not a holder of the key)";
	case REPL_ADMIT_UNKNOWN_KEY: return "the HELLO names a key id this target does not hold";
	case REPL_ADMIT_REPLAY: return "the proof was seen before (a replay)";
	case REPL_ADMIT_CACHE_FULL: return "the replay cache is full of live entries";
	case REPL_ADMIT_ERROR: return "libcrypto failed";
	}
	return "?";
}

int
repl_keys_find(const struct repl_key *keys, unsigned nkeys, uint32_t id)
{
	for (unsigned i = 0; i < nkeys; i++)
		if (keys[i].len > 0 && keys[i].id == id)
			return (int)i;
	return -1;
}

int
repl_keys_add(struct repl_key *keys, unsigned *nkeys, uint32_t id,
		const uint8_t *key, size_t len)
{
	int ret = repl_key_check(key, len);
	if (ret)
		return ret;
	int i = repl_keys_find(keys, *nkeys, id);
	if (i < 0) {
		if (*nkeys == PMREP_TARGET_MAX_KEYS) {
			PMREP_LOG_ERR("a target holds at most %d keys: remove one first",
					PMREP_TARGET_MAX_KEYS);
			return PMREP_E_RANGE;
		}
		i = (int)(*nkeys)++;
	}
	repl_wipe(keys[i].key, sizeof(keys[i].key));
	keys[i].id = id;
	keys[i].len = len;
	memcpy(keys[i].key, key, len);
	return 0;
}

int
repl_keys_remove(struct repl_key *keys, unsigned *nkeys, uint32_t id)
{
	int i = repl_keys_find(keys, *nkeys, id);
	if (i < 0) {
		PMREP_LOG_ERR("no key with id %u", id);
		return PMREP_E_INVAL;
	}
	keys[i] = keys[*nkeys - 1];
	repl_wipe(&keys[*nkeys - 1], sizeof(keys[0]));
	(*nkeys)--;
	return 0;
}

/* constant-time compare of the truncated MACs */
static bool
mac8_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	for (int i = 0; i < REPL_ADMIT_MAC_SIZE; i++)
		d |= (uint8_t)(a[i] ^ b[i]);
	return d == 0;
}

enum repl_admit_verdict
repl_admit_check(const struct repl_key *keys, unsigned nkeys, uint32_t now_w,
		uint32_t key_id, const uint8_t nonce_i[REPL_NONCE_SIZE],
		const char *selector, const uint8_t proof[REPL_PROOF_SIZE],
		unsigned *key_index)
{
	static const uint8_t zero[REPL_PROOF_SIZE];
	if (memcmp(proof, zero, REPL_PROOF_SIZE) == 0)
		return REPL_ADMIT_NONE;
	uint32_t w = pmrep_get_le32(proof);
	if (w + 1 < now_w || w > now_w + 1)
		return REPL_ADMIT_STALE;
	/* key id 0 names no key: every key is tried (an older raw key
	 * holds id 0 and a new one from keygen another: a client that
	 * sends no id may hold either) */
	int only = key_id == 0 ? -1 : repl_keys_find(keys, nkeys, key_id);
	if (only < 0 && key_id != 0)
		return REPL_ADMIT_UNKNOWN_KEY;
	for (unsigned i = 0; i < nkeys; i++) {
		if (keys[i].len == 0 || (only >= 0 && i != (unsigned)only))
			continue;
		uint8_t mine[REPL_PROOF_SIZE];
		if (repl_admit_proof(keys[i].key, keys[i].len, w, key_id,
				nonce_i, selector, mine) != 0)
			return REPL_ADMIT_ERROR;
		if (mac8_equal(mine + 4, proof + 4)) {
			*key_index = i;
			return REPL_ADMIT_OK;
		}
	}
	return REPL_ADMIT_BAD;
}

enum repl_admit_verdict
repl_replay_admit(struct repl_replay *c, uint32_t now_w, uint32_t window,
		const uint8_t nonce[REPL_NONCE_SIZE])
{
	/* forget what no acceptable proof can repeat any more */
	for (unsigned i = 0; i < c->n; ) {
		uint32_t ew = c->e[i].window;
		if (ew + 1 < now_w || ew > now_w + 1)
			c->e[i] = c->e[--c->n];
		else
			i++;
	}
	for (unsigned i = 0; i < c->n; i++)
		if (memcmp(c->e[i].nonce, nonce, REPL_NONCE_SIZE) == 0)
			return REPL_ADMIT_REPLAY;
	if (c->n == REPL_ADMIT_REPLAY_MAX)
		return REPL_ADMIT_CACHE_FULL;
	c->e[c->n].window = window;
	memcpy(c->e[c->n].nonce, nonce, REPL_NONCE_SIZE);
	c->n++;
	return REPL_ADMIT_OK;
}

bool
repl_ratelog_allow(struct repl_ratelog *r, long long now_ms, uint64_t *suppressed)
{
	if (now_ms < r->next_ms) {
		r->suppressed++;
		return false;
	}
	*suppressed = r->suppressed;
	r->suppressed = 0;
	r->next_ms = now_ms + REPL_ADMIT_LOG_PERIOD_MS;
	return true;
}

void
repl_src_of(const struct pmrep_conn_req *req, struct repl_src *src)
{
	memset(src, 0, sizeof(*src));
	struct sockaddr_storage ss;
	if (pmrep_conn_req_get_src_addr(req, &ss) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
		src->family = AF_INET;
		memcpy(src->addr, &in->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
		src->family = AF_INET6;
		memcpy(src->addr, &in6->sin6_addr, 16);
	}
}

bool
repl_src_equal(const struct repl_src *a, const struct repl_src *b)
{
	return a->family == b->family &&
		memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

const char *
repl_src_str(const struct repl_src *s, char *buf, size_t len)
{
	if (s->family == 0 || inet_ntop(s->family, s->addr, buf,
			(socklen_t)len) == NULL)
		snprintf(buf, len, "unknown");
	return buf;
}

