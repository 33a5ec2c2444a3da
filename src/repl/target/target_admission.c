/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_admission.c -- the target's decision on a connection request whose
 * HELLO decoded, before anything of a session exists: the admission proof,
 * the per-source bound, a slot that displaces no handshake, the replay
 * cache (admission.c has the pieces; docs/PROTOCOL.md "Admission" the
 * rules). Runs in pmrep_target_process (single-threaded).
 */
#include <stdio.h>
#include <string.h>

#include "common/wire.h"
#include "repl/wire/admission.h"
#include "target_int.h"

/* a refusal at the connection request: counted, logged (rate-limited),
 * the request rejected: PMREP_E_BUSY (no room now) so that the initiator
 * retries within its connect deadline, any other finally */
static void
admit_refuse(struct pmrep_target *t, struct pmrep_conn_req **req,
		const struct repl_src *src, int err, enum metrics_refusal why_code,
		const char *why)
{
	bool retry = err == PMREP_E_BUSY;
	t->stats.admission_refused++;
	target_count_refusal(t, why_code, err);
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
	/* on a listener the TLS look-up took the names of every replica: a
	 * relay name counts only for the replica that declared it */
	const char *identity, *local, *name;
	if (t->listener != NULL && pmrep_conn_req_get_tls_identity(*req,
			&identity, &local) == 0 &&
			!repl_tls_name_serves(&t->listener->tls, &t->tls,
				identity, local, &name)) {
		char why[REPL_TLS_NAME_MAX + 200];
		snprintf(why, sizeof(why), "TLS: the initiator dialed %s for replica \"%s\": not a name it answers to (a relay name of another replica of this endpoint; a misdirected handshake)",
				name, t->name);
		admit_refuse(t, req, &src, PMREP_E_TLS, MR_TLS, why);
		return NULL;
	}
	uint32_t now_w = repl_admit_window(repl_wall_ms());
	unsigned k = 0;
	enum repl_admit_verdict v = repl_admit_check(t->cfg.keys, t->cfg.nkeys,
			now_w, hello->key_id, hello->nonce, hello->selector,
			hello->proof, &k);
	if (v != REPL_ADMIT_OK) {
		admit_refuse(t, req, &src, v == REPL_ADMIT_ERROR ?
				PMREP_E_PROVIDER : PMREP_E_AUTH,
				v == REPL_ADMIT_ERROR ? MR_ADMISSION_ERROR :
				MR_ADMISSION_AUTH, repl_admit_verdict_str(v));
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
					MR_ADMISSION_BUSY, "its address has as many handshakes pending as one source may have");
			return NULL;
		}
	}
	/* a slot that displaces no handshake; the replay cache last: a
	 * request refused for another reason leaves no entry */
	bool slot_free = false;
	for (int i = 0; i < TARGET_MAX_SESSIONS && !slot_free; i++)
		slot_free = t->s[i].state == S_FREE ||
			t->s[i].state == S_CLOSING || t->s[i].state == S_QUERY;
	if (!slot_free) {
		t->stats.admission_busy++;
		char why[120];
		snprintf(why, sizeof(why), "every one of the %d session slots holds a handshake or an attached mirror (never displaced)",
				TARGET_MAX_SESSIONS);
		admit_refuse(t, req, &src, PMREP_E_BUSY, MR_ADMISSION_BUSY,
				why);
		return NULL;
	}
	v = repl_replay_admit(&t->admit_replay, now_w,
			pmrep_get_le32(hello->proof), hello->nonce);
	if (v != REPL_ADMIT_OK) {
		if (v == REPL_ADMIT_REPLAY)
			t->stats.admission_replayed++;
		admit_refuse(t, req, &src, v == REPL_ADMIT_REPLAY ?
				PMREP_E_AUTH : PMREP_E_BUSY, v == REPL_ADMIT_REPLAY ?
				MR_ADMISSION_REPLAY : MR_ADMISSION_BUSY,
				repl_admit_verdict_str(v));
		return NULL;
	}
	struct session *s = admit_slot(t);	/* not NULL: checked above */
	s->src = src;
	s->key_id = t->cfg.keys[k].id;
	return s;
}
