/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * admission.c -- a target's decision on a connection request, before
 * anything is accepted (docs/PROTOCOL.md "Admission"):
 *  1. the HELLO's admission proof: window within the target's w-1..w+1,
 *     the truncated HMAC right for the key the key id selects;
 *  2. its nonce not admitted before within the acceptance span (the
 *     replay cache);
 *  3. a session slot: a free one, else the oldest CLOSING session, else
 *     the oldest QUERY session (authenticated, read-only: it loses only
 *     its connection). A session mid-handshake (WAIT_AUTH: a key holder
 *     now), ATTACHING or ACTIVE is never displaced: the request is
 *     refused instead;
 *  4. at most REPL_ADMIT_PER_SOURCE sessions in WAIT_AUTH per source
 *     address.
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

#include "common/wire.h"
#include "admission.h"
#include "target_int.h"

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
	int only = repl_keys_find(keys, nkeys, key_id);
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

/* ------------------------------------------------------ the target's */

/* a refusal at the connection request: counted, logged (rate-limited),
 * the request rejected: PMREP_E_BUSY (no room now) so that the initiator
 * retries within its connect deadline, any other finally */
static void
admit_refuse(struct pmrep_target *t, struct pmrep_conn_req **req,
		const struct repl_src *src, int err, const char *why)
{
	bool retry = err == PMREP_E_BUSY;
	t->stats.sessions_refused++;
	t->stats.admission_refused++;
	t->stats.last_refusal = err;
	uint64_t suppressed = 0;
	if (repl_ratelog_allow(&t->admit_log, repl_now_ms(), &suppressed)) {
		char a[64];
		if (suppressed > 0)
			PMREP_LOG_ERR("connection request from %s refused: %s (and %llu more refused since the last such line)",
					repl_src_str(src, a, sizeof(a)), why,
					(unsigned long long)suppressed);
		else
			PMREP_LOG_ERR("connection request from %s refused: %s",
					repl_src_str(src, a, sizeof(a)), why);
	}
	(void) pmrep_conn_req_reject(req, retry);
}

/* a slot for an admitted request: free, else the oldest CLOSING, else the
 * oldest QUERY (closed for it); NULL: none (never a WAIT_AUTH, ATTACHING
 * or ACTIVE session) */
static struct session *
admit_slot(struct pmrep_target *t)
{
	struct session *victim = NULL;
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++) {
		struct session *s = &t->s[i];
		if (s->state == S_FREE)
			return s;
		if (s->state != S_CLOSING && s->state != S_QUERY)
			continue;
		/* CLOSING before QUERY; of one state the oldest (a QUERY's
		 * deadline is its admission's, never renewed) */
		if (victim == NULL ||
				(s->state == S_CLOSING && victim->state == S_QUERY) ||
				(s->state == victim->state &&
				 s->deadline < victim->deadline))
			victim = s;
	}
	if (victim == NULL)
		return NULL;
	if (victim->state == S_QUERY)
		PMREP_LOG_WARN("session %d: a read-only query closed to make room for a new connection request (every session slot is taken)",
				(int)(victim - t->s));
	target_session_close(t, victim, "evicted for a new connection request");
	return victim;
}

struct session *
target_admit(struct pmrep_target *t, struct pmrep_conn_req **req,
		const struct repl_pdata *hello)
{
	struct repl_src src;
	repl_src_of(*req, &src);
	uint32_t now_w = repl_admit_window(repl_wall_ms());
	unsigned k = 0;
	enum repl_admit_verdict v = repl_admit_check(t->cfg.keys, t->cfg.nkeys,
			now_w, hello->key_id, hello->nonce, hello->selector,
			hello->proof, &k);
	if (v != REPL_ADMIT_OK) {
		admit_refuse(t, req, &src, v == REPL_ADMIT_ERROR ?
				PMREP_E_PROVIDER : PMREP_E_AUTH,
				repl_admit_verdict_str(v));
		return NULL;
	}
	/* a key holder: bounded per source, never displacing a handshake */
	if (src.family != 0) {
		int pending = 0;
		for (int i = 0; i < TARGET_MAX_SESSIONS; i++)
			if (t->s[i].state == S_WAIT_AUTH &&
					repl_src_equal(&t->s[i].src, &src))
				pending++;
		if (pending >= REPL_ADMIT_PER_SOURCE) {
			t->stats.admission_busy++;
			admit_refuse(t, req, &src, PMREP_E_BUSY,
					"its address has as many handshakes pending as one source may have");
			return NULL;
		}
	}
	/* replay last among the checks that do not change state, first of
	 * those that do: a refused request leaves no entry */
	bool slot_free = false;
	for (int i = 0; i < TARGET_MAX_SESSIONS && !slot_free; i++)
		slot_free = t->s[i].state == S_FREE ||
			t->s[i].state == S_CLOSING || t->s[i].state == S_QUERY;
	if (!slot_free) {
		t->stats.admission_busy++;
		char why[120];
		snprintf(why, sizeof(why), "every one of the %d session slots holds a handshake or an attached mirror (never displaced)",
				TARGET_MAX_SESSIONS);
		admit_refuse(t, req, &src, PMREP_E_BUSY, why);
		return NULL;
	}
	v = repl_replay_admit(&t->admit_replay, now_w,
			pmrep_get_le32(hello->proof), hello->nonce);
	if (v != REPL_ADMIT_OK) {
		if (v == REPL_ADMIT_REPLAY)
			t->stats.admission_replayed++;
		admit_refuse(t, req, &src, v == REPL_ADMIT_REPLAY ?
				PMREP_E_AUTH : PMREP_E_BUSY, repl_admit_verdict_str(v));
		return NULL;
	}
	struct session *s = admit_slot(t);	/* not NULL: checked above */
	s->src = src;
	s->key_id = t->cfg.keys[k].id;
	return s;
}
