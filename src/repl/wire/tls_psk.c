/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls_psk.c -- the PSKs and identities of the replication's TLS 1.3
 * channel on the tcp provider (transport.h "TLS").
 *
 * One pre-shared key (the one of the HMAC handshake, auth.c) is never a
 * TLS PSK itself: TLS gets a key of its own derived with HKDF-SHA256 and
 * a label, so the two uses never share key material. The identity and
 * the derivation name:
 *   - the role: only the initiator (client) ever offers a PSK; a target
 *     accepts only identities that say "initiator";
 *   - the key id (which key of a rotation);
 *   - the target as the initiator dialed it: its numeric "host:port".
 *
 * Why the target's name (the Selfie attack, RFC 9257 section 4.1): after
 * a failover every node runs both a mirror (TLS client) and a target
 * (TLS server) with the same key. An attacker who reflects node N's
 * ClientHello, meant for target T, back to N's own target would meet a
 * server that accepts initiator identities of that key: role in the
 * identity alone does not stop that. With T's name in the identity and
 * in the PSK, N's target refuses it: the name is not one of its own (the
 * local address the client's bytes arrived at, or a name its operator
 * listed for relays / NAT); and the identity cannot be edited in transit
 * to name N, since the ClientHello's PSK binder was made with T's PSK and
 * does not verify with N's. A target's identity ("target" role) is never
 * issued and never accepted: no PSK exists for the server role. (With the
 * name check removed, test_repl_tls's reflected handshake is accepted.)
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <pmrep/repl.h>

#include "common/log.h"
#include "auth.h"
#include "tls_psk.h"

#define LABEL "pmrep tls13 psk v1 initiator"
#define ID_PREFIX "pmrep-tls2 initiator key "
#define ID_PREFIX_V1 "pmrep-tls1 "	/* before the window: refused, named */
#define FP_LABEL "pmrep tls13 key fingerprint v1"

int
repl_tls_key_fp(const uint8_t *key, size_t key_len, uint8_t fp[REPL_TLS_FP_LEN])
{
	uint8_t mac[REPL_MAC_SIZE];
	const struct repl_buf parts[] = { { FP_LABEL, sizeof(FP_LABEL) } };
	int ret = repl_hmac(key, key_len, parts, 1, mac);
	if (ret == 0)
		memcpy(fp, mac, REPL_TLS_FP_LEN);
	OPENSSL_cleanse(mac, sizeof(mac));
	return ret;
}

static atomic_bool tls_off_default;

int
repl_tls_psk(const uint8_t *key, size_t key_len, uint32_t key_id,
		const char *target_name, uint8_t psk[REPL_TLS_PSK_LEN])
{
	if (key == NULL || key_len == 0 || target_name == NULL)
		return PMREP_E_INVAL;
	uint8_t info[sizeof(LABEL) + 4 + REPL_TLS_NAME_MAX];
	size_t nlen = strnlen(target_name, REPL_TLS_NAME_MAX);
	memcpy(info, LABEL, sizeof(LABEL));	/* with its NUL: a separator */
	size_t k = sizeof(LABEL);
	info[k++] = (uint8_t)key_id;
	info[k++] = (uint8_t)(key_id >> 8);
	info[k++] = (uint8_t)(key_id >> 16);
	info[k++] = (uint8_t)(key_id >> 24);
	memcpy(info + k, target_name, nlen);
	k += nlen;

	int ret = PMREP_E_UNKNOWN;
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *kctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	if (kctx != NULL) {
		OSSL_PARAM params[] = {
			OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
					(char *)"SHA256", 0),
			OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
					(void *)key, key_len),
			OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
					info, k),
			OSSL_PARAM_construct_end(),
		};
		if (EVP_KDF_derive(kctx, psk, REPL_TLS_PSK_LEN, params) == 1)
			ret = 0;
	}
	EVP_KDF_CTX_free(kctx);
	EVP_KDF_free(kdf);
	if (ret)
		PMREP_LOG_ERR("TLS: HKDF-SHA256 failed (OpenSSL)");
	return ret;
}

int
repl_tls_name(const char *addr, const char *port, char name[REPL_TLS_NAME_MAX])
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	int r = getaddrinfo(addr, port, &hints, &res);
	if (r != 0) {	/* not numeric: a name, resolved */
		hints.ai_flags = 0;
		r = getaddrinfo(addr, port, &hints, &res);
	}
	if (r != 0 || res == NULL) {
		PMREP_LOG_ERR("TLS: cannot resolve %s:%s for the target's name: %s",
				addr, port, gai_strerror(r));
		return PMREP_E_UNREACHABLE;
	}
	char host[NI_MAXHOST], serv[NI_MAXSERV];
	r = getnameinfo(res->ai_addr, res->ai_addrlen, host, sizeof(host),
			serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
	int family = res->ai_family;
	freeaddrinfo(res);
	if (r != 0)
		return PMREP_E_UNREACHABLE;
	char *pct = strchr(host, '%');	/* no IPv6 zone in the name */
	if (pct)
		*pct = '\0';
	snprintf(name, REPL_TLS_NAME_MAX, family == AF_INET6 ? "[%s]:%s" :
			"%s:%s", host, serv);
	return 0;
}

int
repl_tls_client_cfg(struct pmrep_conn_cfg *ccfg, struct pmrep_peer *peer,
		const struct repl_tls *tls, const char *addr, const char *port)
{
	if (tls == NULL || !tls->on || tls->key_len == 0)
		return 0;
	enum pmrep_provider prov;
	if (pmrep_peer_get_provider(peer, &prov) == 0 &&
			prov != PMREP_PROVIDER_TCP)
		return 0;	/* verbs: IPsec / MACsec, see transport.h */
	char name[REPL_TLS_NAME_MAX];
	int ret = repl_tls_name(addr, port, name);
	if (ret)
		return ret;
	uint8_t psk[REPL_TLS_PSK_LEN], fp[REPL_TLS_FP_LEN];
	ret = repl_tls_psk(tls->key, tls->key_len, tls->key_id, name, psk);
	if (ret == 0)
		ret = repl_tls_key_fp(tls->key, tls->key_len, fp);
	if (ret == 0) {
		char id[PMREP_TLS_IDENTITY_MAX + 1];
		/* the window: the ClientHello's binder covers the identity,
		 * so a target knows how fresh it is (it keeps the random of
		 * every ClientHello it accepted for as long as the window
		 * is accepted: a captured one cannot be replayed) */
		snprintf(id, sizeof(id), ID_PREFIX "%u fp %016llx window %u target %s",
				tls->key_id, (unsigned long long)repl_tls_fp_u64(fp),
				(unsigned)repl_admit_window(repl_wall_ms()), name);
		ret = pmrep_conn_cfg_set_tls_psk(ccfg, id, psk, sizeof(psk));
	}
	OPENSSL_cleanse(psk, sizeof(psk));
	return ret;
}

int
repl_tls_target_find(void *arg, const uint8_t *identity, size_t identity_len,
		const char *local, uint8_t *psk, size_t *psk_len)
{
	const struct repl_tls_target *tt = arg;
	char id[PMREP_TLS_IDENTITY_MAX + 1];
	if (identity_len > PMREP_TLS_IDENTITY_MAX ||
			memchr(identity, '\0', identity_len) != NULL)
		return -1;
	memcpy(id, identity, identity_len);
	id[identity_len] = '\0';
	/* the initiator's role only:
	 * "pmrep-tls1 initiator key <id> fp <16 hex digits> target <name>" */
	if (strncmp(id, ID_PREFIX_V1, strlen(ID_PREFIX_V1)) == 0) {
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused an initiator of an older pmrep (its PSK identity is pmrep-tls1, without a time window; this target takes pmrep-tls2): upgrade it");
		return -1;
	}
	if (strncmp(id, ID_PREFIX, strlen(ID_PREFIX)) != 0) {
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused a PSK identity that is not a pmrep initiator's");
		return -1;
	}
	const char *p = id + strlen(ID_PREFIX);
	char *end;
	unsigned long key_id = strtoul(p, &end, 10);
	bool ok = !(end == p || (*p == '0' && end != p + 1) ||
			key_id > UINT32_MAX) && strncmp(end, " fp ", 4) == 0;
	uint64_t fp_id = 0;
	if (ok) {
		p = end + 4;
		for (int i = 0; i < 2 * REPL_TLS_FP_LEN; i++) {
			int c = p[i];
			int v = c >= '0' && c <= '9' ? c - '0' :
				c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (v < 0) {
				ok = false;
				break;
			}
			fp_id = fp_id << 4 | (uint64_t)v;
		}
		end = (char *)p + 2 * REPL_TLS_FP_LEN;
		ok = ok && strncmp(end, " window ", 8) == 0;
	}
	unsigned long window = 0;
	if (ok) {
		p = end + 8;
		window = strtoul(p, &end, 10);
		ok = !(end == p || (*p == '0' && end != p + 1) ||
				window > UINT32_MAX) && strncmp(end, " target ", 8) == 0;
	}
	if (!ok) {
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused a malformed PSK identity");
		return -1;
	}
	/* fresh: the window w-1 .. w+1 of this target's clock (the admission
	 * proof's rule); the endpoint remembers the ClientHellos it accepted
	 * for longer than that (TCP_CH_KEEP_MS), so a replay is refused */
	uint32_t now_w = repl_admit_window(repl_wall_ms());
	if (window + 1 < now_w || window > (unsigned long)now_w + 1) {
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused a PSK identity of time window %lu: this target's is %u (a stale or replayed ClientHello, or clocks more than 30 s apart)",
				window, now_w);
		return -1;
	}
	const char *name = end + 8;
	bool ours = strcmp(name, local) == 0;
	for (const struct repl_tls_target *t = tt; !ours && t; t = t->next)
		for (unsigned i = 0; !ours && i < t->nnames; i++)
			ours = strcmp(name, t->names[i]) == 0;
	if (!ours) {
		PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused an initiator that dialed %s: this target is %s (not a name it answers to; a reflected or misdirected handshake)",
				name, local);
		return -1;
	}
	/* the key: one of that id whose fingerprint the identity carries;
	 * key id 0 (a mirror, query or recover that names no id): any key
	 * with that fingerprint (the PSK is the key's and the id's, so
	 * which of equal keys does not matter). A wrong key is named
	 * here, not left to a failed binder. On a listener's chain every
	 * replica's table is searched: the TLS handshake comes before the
	 * HELLO that selects the replica (whose admission proof and MACs
	 * are checked with that replica's own keys) */
	const struct repl_key *rk = NULL;
	bool id_held = false;
	uint8_t fp[REPL_TLS_FP_LEN];
	for (const struct repl_tls_target *t = tt; rk == NULL && t; t = t->next) {
		unsigned n = t->nkeys ? *t->nkeys : 0;
		for (unsigned i = 0; rk == NULL && i < n; i++) {
			const struct repl_key *c = &t->keys[i];
			if (c->len == 0 || (key_id != 0 && c->id != key_id))
				continue;
			id_held = true;
			if (repl_tls_key_fp(c->key, c->len, fp) == 0 &&
					repl_tls_fp_u64(fp) == fp_id)
				rk = c;
		}
	}
	if (rk == NULL) {
		if (key_id == 0)
			PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused an initiator naming key id %lu: none of this target's keys has its fingerprint (a wrong key)",
					key_id);
		else if (!id_held)
			PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused an initiator with key id %lu: this target holds no key of that id",
					key_id);
		else
			PMREP_LOG_RATELIMITED(PMREP_LOG_ERROR, "TLS: refused an initiator with key id %lu: its key is not this target's key of that id (fingerprints differ: a wrong key)",
					key_id);
		return -1;
	}
	if (repl_tls_psk(rk->key, rk->len, (uint32_t)key_id, name, psk))
		return -1;
	*psk_len = REPL_TLS_PSK_LEN;
	return 0;
}

static bool
names_hold(const struct repl_tls_target *t, const char *name)
{
	for (unsigned i = 0; t != NULL && i < t->nnames; i++)
		if (strcmp(name, t->names[i]) == 0)
			return true;
	return false;
}

bool
repl_tls_name_serves(const struct repl_tls_target *head,
		const struct repl_tls_target *t, const char *identity,
		const char *local, const char **name)
{
	/* the identity was accepted by repl_tls_target_find: its key id and
	 * fingerprint hold no space, so the name follows the first " target " */
	const char *p = strstr(identity, " target ");
	*name = p ? p + 8 : "";
	if (p == NULL)
		return false;
	return strcmp(*name, local) == 0 || names_hold(head, *name) ||
		names_hold(t, *name);
}

bool
repl_tls_default(void)
{
	return !atomic_load(&tls_off_default);
}

int
pmrep_repl_set_tls_default(bool on)
{
	atomic_store(&tls_off_default, !on);
	return 0;
}
