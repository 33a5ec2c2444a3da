/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls_psk.h -- the replication's TLS 1.3 PSKs and identities (tcp
 * provider): derived from the pre-shared key, bound to the role, the key
 * id and the target's address as the initiator dialed it. See tls_psk.c
 * and docs/PROTOCOL.md "The tcp channel".
 */
#ifndef PMREP_REPL_TLS_PSK_H
#define PMREP_REPL_TLS_PSK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pmrep/transport.h>

#include "admission.h"

#define REPL_TLS_PSK_LEN 32		/* HKDF-SHA256 output, the suites' hash */
#define REPL_TLS_NAME_MAX 64		/* "host:port", "[v6]:port" */
#define REPL_TLS_NAMES_MAX 8		/* extra names a target answers to */
#define REPL_TLS_FP_LEN 8		/* a key's fingerprint in the identity */

/*
 * The key's fingerprint: the first REPL_TLS_FP_LEN bytes of
 * HMAC-SHA256(key, "pmrep tls13 key fingerprint v1" with its NUL). It names
 * a key without revealing it, so a target finds the key of an initiator
 * that names key id 0 (query, recover, a mirror without a key id) among
 * several during a rotation, and names a wrong key as such.
 */
int repl_tls_key_fp(const uint8_t *key, size_t key_len, uint8_t fp[REPL_TLS_FP_LEN]);
static inline uint64_t
repl_tls_fp_u64(const uint8_t fp[REPL_TLS_FP_LEN])
{
	uint64_t v = 0;
	for (int i = 0; i < REPL_TLS_FP_LEN; i++)
		v = v << 8 | fp[i];
	return v;
}

/* what a dial needs for TLS: off when key_len == 0 or !on */
struct repl_tls {
	bool on;
	const uint8_t *key;
	size_t key_len;
	uint32_t key_id;
	/* the HELLO's replica selector: NULL or "" none (the target's one
	 * replica); not TLS's, but what every dial sends with its key */
	const char *selector;
};

/*
 * repl_tls_psk -- PSK = HKDF-SHA256(IKM = key, salt = none,
 * info = "pmrep tls13 psk v1 initiator" 0x00 key_id (u32 LE) target_name),
 * REPL_TLS_PSK_LEN bytes. 0, PMREP_E_INVAL, PMREP_E_UNKNOWN (OpenSSL).
 */
int repl_tls_psk(const uint8_t *key, size_t key_len, uint32_t key_id,
		const char *target_name, uint8_t psk[REPL_TLS_PSK_LEN]);

/*
 * repl_tls_name -- the numeric "host:port" ("[addr]:port" for IPv6) of
 * addr:port resolved as the tcp provider does (its first address). 0 or
 * PMREP_E_UNREACHABLE.
 */
int repl_tls_name(const char *addr, const char *port,
		char name[REPL_TLS_NAME_MAX]);

/*
 * repl_tls_client_cfg -- set a dial's conn cfg: TLS with the initiator's
 * identity "pmrep-tls2 initiator key <key_id> fp <fingerprint> window <w>
 * target <name>" (w: the admission proof's 30 s window now) and its PSK,
 * when tls is on and the peer is tcp (verbs: nothing, see transport.h).
 * The PSK is wiped here; the cfg's copy by pmrep_conn_cfg_delete.
 */
int repl_tls_client_cfg(struct pmrep_conn_cfg *ccfg, struct pmrep_peer *peer,
		const struct repl_tls *tls, const char *addr, const char *port);

/* a target's PSK look-up: the key of a key id, the names it answers to */
struct repl_tls_target {
	/* the target's live key table (admission.h): keys[0..*nkeys), the
	 * ones in use have len > 0; key id 0 names the key of id 0, else
	 * the only key */
	const struct repl_key *keys;
	const unsigned *nkeys;
	const char (*names)[REPL_TLS_NAME_MAX];	/* extra names (relays, NAT) */
	unsigned nnames;
	/* a listener's chain (target_listener.c): the names and keys of every
	 * table on it count; NULL: this one only */
	const struct repl_tls_target *next;
};

/* pmrep_tls_psk_find_fn for a target (arg: struct repl_tls_target) */
int repl_tls_target_find(void *arg, const uint8_t *identity,
		size_t identity_len, const char *local, uint8_t *psk,
		size_t *psk_len);

/*
 * repl_tls_name_serves -- on a listener (several replicas behind one
 * endpoint), may a request whose TLS handshake was accepted under
 * `identity` (arriving at `local`) select replica `t`? Yes when the
 * target name the identity carries is `local`, one of the endpoint's own
 * names (`head`, the chain's head) or one of t's; a relay name declared
 * for another replica only is not t's (SECURITY.md: a declared relay
 * reaches that replica only). The identity's name goes to *name (for the
 * log line).
 */
bool repl_tls_name_serves(const struct repl_tls_target *head,
		const struct repl_tls_target *t, const char *identity,
		const char *local, const char **name);

/* the process-wide default for calls without a cfg (query, recover) */
bool repl_tls_default(void);

#endif
