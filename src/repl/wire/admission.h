/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * admission.h -- the HELLO's admission proof (docs/PROTOCOL.md "Admission"):
 * the initiator proves it holds the key in its first message, so that a
 * target refuses a request without that proof at the connection request,
 * before any QP, session slot or buffer exists. Here: the proof's encoder
 * and checker, the replay cache of nonces seen within the acceptance span,
 * a rate-limited log line, and the key table a target selects from.
 */
#ifndef PMREP_REPL_ADMISSION_H
#define PMREP_REPL_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>

#include <pmrep/repl.h>

#include "msg.h"

/* the proof's time window: wall-clock seconds / this. A target accepts
 * the windows w-1, w, w+1 of its own clock w: the clocks of initiator and
 * target must agree within REPL_ADMIT_WINDOW_S seconds */
#define REPL_ADMIT_WINDOW_S 30
/* the truncated MAC's bytes in the proof */
#define REPL_ADMIT_MAC_SIZE 8
/* nonces remembered (each one for the acceptance span, 3 windows): room
 * for more than 45 admissions a second from key holders */
#define REPL_ADMIT_REPLAY_MAX 4096
/* at most this many sessions not yet authenticated (WAIT_AUTH) per source
 * address: below the target's slots, so one source cannot take them all */
#define REPL_ADMIT_PER_SOURCE 2
/* one refusal line per this period; the others are counted and named in
 * the next line */
#define REPL_ADMIT_LOG_PERIOD_MS 1000

/* a key and its id (a target holds up to PMREP_TARGET_MAX_KEYS) */
struct repl_key {
	uint32_t id;
	size_t len;		/* 0: unused */
	uint8_t key[PMREP_KEY_MAX];
};

/* wall-clock milliseconds (CLOCK_REALTIME; pmrep_test_hooks.wall_ms when
 * set: the harness's virtual clock) */
long long repl_wall_ms(void);
/* the proof window of wall-clock time `wall_ms` */
uint32_t repl_admit_window(long long wall_ms);

/*
 * The proof of a HELLO: window (u32 LE) ‖ the first REPL_ADMIT_MAC_SIZE
 * bytes of HMAC-SHA256(key, "pmrep-repl-v2 admission" NUL ‖ window (LE32)
 * ‖ key id (LE32) ‖ nonce_i ‖ selector (REPL_SELECTOR_SIZE bytes, NUL
 * padded, as on the wire)) into `proof` (REPL_PROOF_SIZE bytes).
 * Errors: those of repl_hmac (PMREP_E_INVAL bad key length, PMREP_E_PROVIDER).
 */
int repl_admit_proof(const uint8_t *key, size_t key_len, uint32_t window,
		uint32_t key_id, const uint8_t nonce_i[REPL_NONCE_SIZE],
		const char *selector, uint8_t proof[REPL_PROOF_SIZE]);

/* the outcome of a proof check */
enum repl_admit_verdict {
	REPL_ADMIT_OK = 0,
	REPL_ADMIT_NONE,	/* all zero: no proof */
	REPL_ADMIT_STALE,	/* window outside w-1..w+1 (clocks apart, or old) */
	REPL_ADMIT_BAD,		/* MAC wrong: not a holder of that key */
	REPL_ADMIT_UNKNOWN_KEY,	/* key id names no key of ours */
	REPL_ADMIT_REPLAY,	/* a nonce already admitted within the span */
	REPL_ADMIT_CACHE_FULL,	/* the replay cache holds only live entries */
	REPL_ADMIT_ERROR,	/* libcrypto failed */
};
const char *repl_admit_verdict_str(enum repl_admit_verdict v);

/*
 * Check the proof of a HELLO against `keys[0..nkeys)` at window `now_w`.
 * Key id 0 selects the key with id 0 when there is one, else each key in
 * turn (at most nkeys MACs: the proof tells which one the initiator
 * holds); any other id selects only the key with that id. On OK
 * *key_index is the key that verified. Does not consult the replay cache.
 */
enum repl_admit_verdict repl_admit_check(const struct repl_key *keys,
		unsigned nkeys, uint32_t now_w, uint32_t key_id,
		const uint8_t nonce_i[REPL_NONCE_SIZE], const char *selector,
		const uint8_t proof[REPL_PROOF_SIZE], unsigned *key_index);

/* the index of the key with id `id` in keys[0..nkeys), or -1 */
int repl_keys_find(const struct repl_key *keys, unsigned nkeys, uint32_t id);
/* add (or replace) the key `id` in keys[0..*nkeys) (room for
 * PMREP_TARGET_MAX_KEYS): PMREP_E_INVAL (bad key length), PMREP_E_RANGE
 * (full) */
int repl_keys_add(struct repl_key *keys, unsigned *nkeys, uint32_t id,
		const uint8_t *key, size_t len);
/* remove (and wipe) the key `id`: PMREP_E_INVAL when there is none */
int repl_keys_remove(struct repl_key *keys, unsigned *nkeys, uint32_t id);

/*
 * Nonces admitted within the acceptance span. An entry of window w is
 * needed only while a proof of window w is acceptable (w within the
 * current window +-1): older (and, after a clock step back, newer) ones
 * are dropped. A fresh valid proof finds room, or -- all entries live --
 * is refused (CACHE_FULL): refusing is the safe way, since only key
 * holders produce valid proofs and they retry with a new nonce.
 */
struct repl_replay {
	unsigned n;
	struct {
		uint32_t window;
		uint8_t nonce[REPL_NONCE_SIZE];
	} e[REPL_ADMIT_REPLAY_MAX];
};
/* REPL_ADMIT_OK (remembered now), REPLAY or CACHE_FULL (not remembered) */
enum repl_admit_verdict repl_replay_admit(struct repl_replay *c, uint32_t now_w,
		uint32_t window, const uint8_t nonce[REPL_NONCE_SIZE]);

/* a log line at most once per REPL_ADMIT_LOG_PERIOD_MS */
struct repl_ratelog {
	long long next_ms;	/* repl_now_ms() of the next line allowed */
	uint64_t suppressed;	/* lines not written since the last one */
};
/* true: write the line now (*suppressed: how many were not written since) */
bool repl_ratelog_allow(struct repl_ratelog *r, long long now_ms,
		uint64_t *suppressed);

/* a connection request's source address, compared by family and address
 * (not the port); family 0: unknown (all unknown sources are one source) */
struct repl_src {
	uint16_t family;
	uint8_t addr[16];
};
struct pmrep_conn_req;
void repl_src_of(const struct pmrep_conn_req *req, struct repl_src *src);
bool repl_src_equal(const struct repl_src *a, const struct repl_src *b);
/* "127.0.0.1", "::1" or "unknown" into buf */
const char *repl_src_str(const struct repl_src *s, char *buf, size_t len);

#endif /* PMREP_REPL_ADMISSION_H */
