/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * msg.c -- one encoder and one strict decoder for each wire format of the
 * replication protocol (version 2), all little-endian.
 *
 * HELLO (private data of the connect), 56 bytes (PMREP_PDATA_CONNECT_MAX:
 * every byte is used, so it has no flags field):
 *    0  u16 magic 0x5052 ("RP")   2  u8 version (2)   3  u8 type (1)
 *    4  u32 key id (0: the target's key)
 *    8  u8[16] nonce_i
 *   24  char[20] replica selector, NUL padded (all NUL: the target's one
 *       replica); bytes after the first NUL must be NUL
 *   44  u8[12] admission proof (u32 time window, u8[8] truncated MAC over
 *       it and nonce_i; all zero: none) -- carried, not checked by this
 *       version: room for refusing keyless HELLOs without a new format
 * CHALLENGE (private data of the accept), 24 bytes:
 *    0  u16 magic 0x5052   2  u8 version (2)   3  u8 type (2)
 *    4  u32 flags (0)      8  u8[16] nonce_t
 *
 * Messages (send / recv, at most REPL_MSG_SLOT = 256 bytes):
 *    0  u16 magic 0x4d52 ("RM")   2  u8 version (2)   3  u8 type
 *    4  u16 status                6  u16 body length (exact per type)
 *    8  u64 sequence number      16  body
 * Bodies:
 *  AUTH (80):    0 mac[32]  32 uuid[16]  48 u64 data size  56 u64 generation
 *                64 u64 primary id  72 u32 intent (1 ATTACH, 2 QUERY)
 *                76 u32 reserved (0)
 *  ACCEPT (192): 0 mac[32]  32 MR descriptor[32]  64 peer cfg descriptor[8]
 *                the header as it is now: 72 uuid[16]  88 replica id[16]
 *                104 u64 generation  112 u64 owner  120 u64 slot sequence
 *                128 u64 last persist sequence  136 u32 header flags
 *                140 u32 target flags (REPL_TF_*)  144 u16 set size
 *                146 u16 set quorum (the header's membership; 0 0: none
 *                recorded)  148 u32 reserved (0)  152 u64 position
 *                generation  160 u64 position owner  168 u64 claim floor
 *                176 u64 run generation  184 u64 run owner (the last
 *                writer's run that claimed it; 128 is the live position
 *                record's persist sequence)
 *  COMMIT (56):  0 replica id[16]  16 u64 generation  24 u64 primary id
 *                32 u32 resync kind (1 FULL, 2 INCREMENTAL, 3 FENCE)  36
 *                u16 set size (1 .. 8)  38 u16 set quorum (0: all .. set
 *                size): the writer's membership  40 u64 claim floor (the
 *                writer's first persist sequence this run; FENCE: 0)  48
 *                u32 flags (bit 0 TRACKED)  52 u32 reserved (0)
 *  COMMIT_REPLY (24): the copy's position as of the claim: 0 u64
 *                generation  8 u64 owner  16 u64 persist sequence
 *  CLOSE (8):    0 u64 the writer's newest step's persist sequence (0:
 *                none this run)
 *  MEMBERS (8):  0 u16 set size (1 .. 8)  2 u16 set quorum (0 .. size)
 *                4 u32 flags (bit 0 REMOVED: the replica leaves the set;
 *                others 0): the writer's new membership
 *  PERSIST (24): 0 u64 offset  8 u64 length (bytes of the data area)
 *                16 u64 persist sequence (psn: recorded by the target once
 *                the range is durable; 0: none -- a resync's copy)
 *  DIGEST (24): 0 u64 offset  8 u64 region (bytes, a power of two)
 *                16 u32 count (1 .. 14)  20 u32 reserved (0)
 *  DIGEST_REPLY (232): 0 u32 count (the request's; 0 when the status is
 *                not OK)  4 u32 reserved (0)  8 digest[14][16] (SHA-256 of
 *                each region, its first 16 bytes; unused ones zero)
 *  REFUSE, PERSIST_REPLY, CLOSE_REPLY, MEMBERS_REPLY: no body
 *  (status, sequence).
 * A REFUSE whose status is OK does not decode (MALFORMED): a refusal
 * always says why, and a reader that mapped its status to an error code
 * would otherwise take it for a success.
 */
#include <string.h>

#include <openssl/evp.h>

#include "common/log.h"
#include "common/wire.h"
#include "msg.h"

#define PDATA_MAGIC 0x5052
#define MSG_MAGIC 0x4d52
#define AUTH_BODY 80
#define ACCEPT_BODY 192
#define COMMIT_BODY 56
#define COMMIT_REPLY_BODY 24
#define CLOSE_BODY 8
#define PERSIST_BODY 24
#define DIGEST_BODY 24
#define MEMBERS_BODY 8
#define DIGEST_REPLY_BODY (8 + REPL_DIGEST_MAX * REPL_DIGEST_SIZE)

static const char auth_label[] = "pmrep-repl-v2 initiator";
static const char accept_label[] = "pmrep-repl-v2 target";

size_t
repl_pdata_encode(const struct repl_pdata *p, uint8_t *out)
{
	size_t len = p->type == REPL_PDATA_HELLO ? REPL_HELLO_SIZE :
		REPL_CHALLENGE_SIZE;
	memset(out, 0, len);
	pmrep_put_le16(out, PDATA_MAGIC);
	out[2] = REPL_PROTO_VERSION;
	out[3] = (uint8_t)p->type;
	memcpy(out + 8, p->nonce, REPL_NONCE_SIZE);
	if (p->type == REPL_PDATA_HELLO) {
		pmrep_put_le32(out + 4, p->key_id);
		size_t n = strnlen(p->selector, REPL_SELECTOR_SIZE);
		memcpy(out + 24, p->selector, n);
		memcpy(out + 24 + REPL_SELECTOR_SIZE, p->proof, REPL_PROOF_SIZE);
	}
	return len;
}

int
repl_pdata_decode(const void *buf, size_t len, enum repl_pdata_type want,
		struct repl_pdata *p)
{
	const uint8_t *b = buf;
	size_t need = want == REPL_PDATA_HELLO ? REPL_HELLO_SIZE :
		REPL_CHALLENGE_SIZE;
	if (b == NULL || len < need) {
		PMREP_LOG_ERR("handshake private data: %zu bytes, need %zu",
				b == NULL ? 0 : len, need);
		return PMREP_E_MALFORMED;
	}
	if (pmrep_get_le16(b) != PDATA_MAGIC || b[2] != REPL_PROTO_VERSION) {
		PMREP_LOG_ERR("handshake private data: bad magic 0x%04x or version %u (want %u: not a pmrep replication peer, or one of another protocol version?)",
				pmrep_get_le16(b), b[2], REPL_PROTO_VERSION);
		return PMREP_E_MALFORMED;
	}
	if (b[3] != want ||
			(want == REPL_PDATA_CHALLENGE && pmrep_get_le32(b + 4) != 0)) {
		PMREP_LOG_ERR("handshake private data: type %u (want %u) or reserved bits set",
				b[3], (unsigned)want);
		return PMREP_E_MALFORMED;
	}
	memset(p, 0, sizeof(*p));
	if (want == REPL_PDATA_HELLO) {
		const uint8_t *sel = b + 24;
		size_t n = 0;
		while (n < REPL_SELECTOR_SIZE && sel[n] != 0)
			n++;
		for (size_t i = n; i < REPL_SELECTOR_SIZE; i++) {
			if (sel[i] != 0) {
				PMREP_LOG_ERR("HELLO: bytes after the replica selector's end are not NUL");
				return PMREP_E_MALFORMED;
			}
		}
		p->key_id = pmrep_get_le32(b + 4);
		memcpy(p->selector, sel, n);
		p->selector[n] = '\0';
		memcpy(p->proof, sel + REPL_SELECTOR_SIZE, REPL_PROOF_SIZE);
	}
	/* bytes past the format's length (a verbs CM event pads) are not
	 * looked at */
	p->type = want;
	memcpy(p->nonce, b + 8, REPL_NONCE_SIZE);
	return 0;
}

static size_t
body_len(enum repl_msg_type t)
{
	switch (t) {
	case REPL_MSG_AUTH: return AUTH_BODY;
	case REPL_MSG_ACCEPT: return ACCEPT_BODY;
	case REPL_MSG_COMMIT: return COMMIT_BODY;
	case REPL_MSG_PERSIST: return PERSIST_BODY;
	case REPL_MSG_DIGEST: return DIGEST_BODY;
	case REPL_MSG_DIGEST_REPLY: return DIGEST_REPLY_BODY;
	case REPL_MSG_MEMBERS: return MEMBERS_BODY;
	case REPL_MSG_COMMIT_REPLY: return COMMIT_REPLY_BODY;
	case REPL_MSG_CLOSE: return CLOSE_BODY;
	default: return 0;
	}
}

static void
auth_body_encode(const struct repl_auth *a, uint8_t *b)
{
	memcpy(b, a->mac, REPL_MAC_SIZE);
	memcpy(b + 32, a->uuid, PMREP_UUID_SIZE);
	pmrep_put_le64(b + 48, a->data_size);
	pmrep_put_le64(b + 56, a->generation);
	pmrep_put_le64(b + 64, a->primary_id);
	pmrep_put_le32(b + 72, (uint32_t)a->intent);
	pmrep_put_le32(b + 76, 0);
}

static void
accept_body_encode(const struct repl_accept *a, uint8_t *b)
{
	memcpy(b, a->mac, REPL_MAC_SIZE);
	memcpy(b + 32, a->mr_desc, PMREP_MR_DESC_SIZE);
	memcpy(b + 64, a->peer_cfg, PMREP_PEER_CFG_DESC_SIZE);
	memcpy(b + 72, a->uuid, PMREP_UUID_SIZE);
	memcpy(b + 88, a->replica_id, PMREP_UUID_SIZE);
	pmrep_put_le64(b + 104, a->generation);
	pmrep_put_le64(b + 112, a->owner);
	pmrep_put_le64(b + 120, a->hdr_seq);
	pmrep_put_le64(b + 128, a->last_persist_seq);
	pmrep_put_le32(b + 136, a->hdr_flags);
	pmrep_put_le32(b + 140, a->target_flags);
	pmrep_put_le16(b + 144, (uint16_t)a->set_size);
	pmrep_put_le16(b + 146, (uint16_t)a->set_quorum);
	pmrep_put_le32(b + 148, 0);
	pmrep_put_le64(b + 152, a->pos_gen);
	pmrep_put_le64(b + 160, a->pos_owner);
	pmrep_put_le64(b + 168, a->claim_floor);
	pmrep_put_le64(b + 176, a->run_gen);
	pmrep_put_le64(b + 184, a->run_owner);
}

static void
members_encode(const struct repl_members *mb, uint8_t *b)
{
	pmrep_put_le16(b, (uint16_t)mb->set_size);
	pmrep_put_le16(b + 2, (uint16_t)mb->set_quorum);
}

#define MEMBERS_F_REMOVED 1u

/* a membership as a writer sends it: 1..PMREP_MIRROR_MAX_REPLICAS, a
 * quorum 0..size (`none_ok`: 0 0, none recorded, too) */
static bool
members_decode(const uint8_t *b, bool none_ok, struct repl_members *mb)
{
	mb->set_size = pmrep_get_le16(b);
	mb->set_quorum = pmrep_get_le16(b + 2);
	if (mb->set_size == 0)
		return none_ok && mb->set_quorum == 0;
	return mb->set_size <= PMREP_MIRROR_MAX_REPLICAS &&
		mb->set_quorum <= mb->set_size;
}

static void
commit_body_encode(const struct repl_commit *c, uint8_t *b)
{
	memcpy(b, c->replica_id, PMREP_UUID_SIZE);
	pmrep_put_le64(b + 16, c->generation);
	pmrep_put_le64(b + 24, c->primary_id);
	pmrep_put_le32(b + 32, (uint32_t)c->resync);
	members_encode(&c->members, b + 36);
	pmrep_put_le64(b + 40, c->claim_floor);
	pmrep_put_le32(b + 48, c->flags);
}

size_t
repl_msg_encode(const struct repl_msg *m, uint8_t *out)
{
	size_t blen = body_len(m->type);
	memset(out, 0, REPL_MSG_HDR_SIZE + blen);
	pmrep_put_le16(out, MSG_MAGIC);
	out[2] = REPL_PROTO_VERSION;
	out[3] = (uint8_t)m->type;
	pmrep_put_le16(out + 4, (uint16_t)m->status);
	pmrep_put_le16(out + 6, (uint16_t)blen);
	pmrep_put_le64(out + 8, m->seq);
	uint8_t *b = out + REPL_MSG_HDR_SIZE;
	switch (m->type) {
	case REPL_MSG_AUTH:
		auth_body_encode(&m->u.auth, b);
		break;
	case REPL_MSG_ACCEPT:
		accept_body_encode(&m->u.accept, b);
		break;
	case REPL_MSG_COMMIT:
		commit_body_encode(&m->u.commit, b);
		break;
	case REPL_MSG_PERSIST:
		pmrep_put_le64(b, m->u.persist.offset);
		pmrep_put_le64(b + 8, m->u.persist.length);
		pmrep_put_le64(b + 16, m->u.persist.psn);
		break;
	case REPL_MSG_COMMIT_REPLY:
		pmrep_put_le64(b, m->u.position.gen);
		pmrep_put_le64(b + 8, m->u.position.owner);
		pmrep_put_le64(b + 16, m->u.position.psn);
		break;
	case REPL_MSG_CLOSE:
		pmrep_put_le64(b, m->u.close_psn);
		break;
	case REPL_MSG_DIGEST:
		pmrep_put_le64(b, m->u.digest.offset);
		pmrep_put_le64(b + 8, m->u.digest.region);
		pmrep_put_le32(b + 16, m->u.digest.count);
		break;
	case REPL_MSG_DIGEST_REPLY:
		pmrep_put_le32(b, m->u.digest_reply.count);
		memcpy(b + 8, m->u.digest_reply.d, sizeof(m->u.digest_reply.d));
		break;
	case REPL_MSG_MEMBERS:
		members_encode(&m->u.members, b);
		pmrep_put_le32(b + 4, m->u.members.removed ? MEMBERS_F_REMOVED : 0);
		break;
	default:
		break;
	}
	return REPL_MSG_HDR_SIZE + blen;
}

int
repl_msg_decode(const void *buf, size_t len, struct repl_msg *m)
{
	const uint8_t *p = buf;
	if (p == NULL || len < REPL_MSG_HDR_SIZE) {
		PMREP_LOG_ERR("message truncated: %zu bytes", p == NULL ? 0 : len);
		return PMREP_E_MALFORMED;
	}
	if (pmrep_get_le16(p) != MSG_MAGIC || p[2] != REPL_PROTO_VERSION) {
		PMREP_LOG_ERR("message: bad magic 0x%04x or version %u",
				pmrep_get_le16(p), p[2]);
		return PMREP_E_MALFORMED;
	}
	enum repl_msg_type t = (enum repl_msg_type)p[3];
	if (t < REPL_MSG_AUTH || t > REPL_MSG_MEMBERS_REPLY) {
		PMREP_LOG_ERR("message: unknown type %u", p[3]);
		return PMREP_E_MALFORMED;
	}
	uint16_t st = pmrep_get_le16(p + 4);
	uint16_t blen = pmrep_get_le16(p + 6);
	if (st > REPL_ST_MAX_ || blen != body_len(t) ||
			len < REPL_MSG_HDR_SIZE + (size_t)blen) {
		PMREP_LOG_ERR("message type %u: status %u, body %u bytes (want %zu), %zu bytes received",
				(unsigned)t, st, blen, body_len(t), len);
		return PMREP_E_MALFORMED;
	}
	if (t == REPL_MSG_REFUSE && st == REPL_ST_OK) {
		PMREP_LOG_ERR("message: a REFUSE with status OK (a refusal names its reason)");
		return PMREP_E_MALFORMED;
	}
	memset(m, 0, sizeof(*m));
	m->type = t;
	m->status = (enum repl_status)st;
	m->seq = pmrep_get_le64(p + 8);
	const uint8_t *b = p + REPL_MSG_HDR_SIZE;
	switch (t) {
	case REPL_MSG_AUTH: {
		uint32_t intent = pmrep_get_le32(b + 72);
		if (pmrep_get_le32(b + 76) != 0 ||
				(intent != REPL_INTENT_ATTACH &&
				 intent != REPL_INTENT_QUERY)) {
			PMREP_LOG_ERR("AUTH message: unknown intent %u or reserved bytes set",
					intent);
			return PMREP_E_MALFORMED;
		}
		memcpy(m->u.auth.mac, b, REPL_MAC_SIZE);
		memcpy(m->u.auth.uuid, b + 32, PMREP_UUID_SIZE);
		m->u.auth.data_size = pmrep_get_le64(b + 48);
		m->u.auth.generation = pmrep_get_le64(b + 56);
		m->u.auth.primary_id = pmrep_get_le64(b + 64);
		m->u.auth.intent = (enum repl_intent)intent;
		break;
	}
	case REPL_MSG_ACCEPT: {
		struct repl_accept *a = &m->u.accept;
		memcpy(a->mac, b, REPL_MAC_SIZE);
		memcpy(a->mr_desc, b + 32, PMREP_MR_DESC_SIZE);
		memcpy(a->peer_cfg, b + 64, PMREP_PEER_CFG_DESC_SIZE);
		memcpy(a->uuid, b + 72, PMREP_UUID_SIZE);
		memcpy(a->replica_id, b + 88, PMREP_UUID_SIZE);
		a->generation = pmrep_get_le64(b + 104);
		a->owner = pmrep_get_le64(b + 112);
		a->hdr_seq = pmrep_get_le64(b + 120);
		a->last_persist_seq = pmrep_get_le64(b + 128);
		a->hdr_flags = pmrep_get_le32(b + 136);
		a->target_flags = pmrep_get_le32(b + 140);
		a->pos_gen = pmrep_get_le64(b + 152);
		a->pos_owner = pmrep_get_le64(b + 160);
		a->claim_floor = pmrep_get_le64(b + 168);
		a->run_gen = pmrep_get_le64(b + 176);
		a->run_owner = pmrep_get_le64(b + 184);
		struct repl_members mb;
		bool mb_ok = members_decode(b + 144, true, &mb);
		a->set_size = mb.set_size;
		a->set_quorum = mb.set_quorum;
		if ((a->target_flags & ~REPL_TF_KNOWN) != 0 ||
				(a->hdr_flags & ~REPL_HDR_FLAGS_KNOWN) != 0 ||
				!mb_ok || pmrep_get_le32(b + 148) != 0) {
			PMREP_LOG_ERR("ACCEPT message: unknown target flags 0x%x or header flags 0x%x, set size %u quorum %u, or reserved bytes set",
					a->target_flags, a->hdr_flags, mb.set_size,
					mb.set_quorum);
			return PMREP_E_MALFORMED;
		}
		break;
	}
	case REPL_MSG_COMMIT: {
		uint32_t kind = pmrep_get_le32(b + 32);
		uint32_t cf = pmrep_get_le32(b + 48);
		uint64_t floor = pmrep_get_le64(b + 40);
		if (!members_decode(b + 36, false, &m->u.commit.members) ||
				(kind != REPL_RESYNC_FULL &&
				 kind != REPL_RESYNC_INCREMENTAL &&
				 kind != REPL_RESYNC_FENCE) ||
				(cf & ~REPL_COMMIT_F_TRACKED) != 0 ||
				pmrep_get_le32(b + 52) != 0 ||
				((kind == REPL_RESYNC_FENCE) != (floor == 0))) {
			PMREP_LOG_ERR("COMMIT message: unknown resync kind %u, set size %u quorum %u, flags 0x%x, claim floor %llu (a fence has none, a writer one), or reserved bytes set",
					kind, m->u.commit.members.set_size,
					m->u.commit.members.set_quorum, cf,
					(unsigned long long)floor);
			return PMREP_E_MALFORMED;
		}
		m->u.commit.claim_floor = floor;
		m->u.commit.flags = cf;
		memcpy(m->u.commit.replica_id, b, PMREP_UUID_SIZE);
		m->u.commit.generation = pmrep_get_le64(b + 16);
		m->u.commit.primary_id = pmrep_get_le64(b + 24);
		m->u.commit.resync = (enum repl_resync)kind;
		break;
	}
	case REPL_MSG_PERSIST:
		m->u.persist.offset = pmrep_get_le64(b);
		m->u.persist.length = pmrep_get_le64(b + 8);
		m->u.persist.psn = pmrep_get_le64(b + 16);
		break;
	case REPL_MSG_COMMIT_REPLY:
		m->u.position.gen = pmrep_get_le64(b);
		m->u.position.owner = pmrep_get_le64(b + 8);
		m->u.position.psn = pmrep_get_le64(b + 16);
		break;
	case REPL_MSG_CLOSE:
		m->u.close_psn = pmrep_get_le64(b);
		break;
	case REPL_MSG_DIGEST: {
		struct repl_digest *d = &m->u.digest;
		d->offset = pmrep_get_le64(b);
		d->region = pmrep_get_le64(b + 8);
		d->count = pmrep_get_le32(b + 16);
		if (pmrep_get_le32(b + 20) != 0 || d->count == 0 ||
				d->count > REPL_DIGEST_MAX || d->region == 0 ||
				(d->region & (d->region - 1)) != 0) {
			PMREP_LOG_ERR("DIGEST message: count %u, region %llu bytes, or reserved bytes set",
					d->count, (unsigned long long)d->region);
			return PMREP_E_MALFORMED;
		}
		break;
	}
	case REPL_MSG_DIGEST_REPLY: {
		struct repl_digest_reply *d = &m->u.digest_reply;
		d->count = pmrep_get_le32(b);
		if (pmrep_get_le32(b + 4) != 0 || d->count > REPL_DIGEST_MAX ||
				(st == REPL_ST_OK) != (d->count > 0)) {
			PMREP_LOG_ERR("DIGEST_REPLY message: count %u with status %u, or reserved bytes set",
					d->count, st);
			return PMREP_E_MALFORMED;
		}
		memcpy(d->d, b + 8, sizeof(d->d));
		break;
	}
	case REPL_MSG_MEMBERS:
		if (!members_decode(b, false, &m->u.members) ||
				(pmrep_get_le32(b + 4) & ~MEMBERS_F_REMOVED) != 0) {
			PMREP_LOG_ERR("MEMBERS message: set size %u quorum %u, or reserved bytes set",
					m->u.members.set_size,
					m->u.members.set_quorum);
			return PMREP_E_MALFORMED;
		}
		m->u.members.removed = pmrep_get_le32(b + 4) & MEMBERS_F_REMOVED;
		break;
	default:
		break;
	}
	return 0;
}

int
repl_digest(const void *buf, size_t len, uint8_t out[REPL_DIGEST_SIZE])
{
	uint8_t full[32];
	unsigned n = 0;
	if (EVP_Digest(buf, len, full, &n, EVP_sha256(), NULL) != 1 || n != 32) {
		PMREP_LOG_ERR("SHA-256 of %zu bytes failed (OpenSSL)", len);
		return PMREP_E_PROVIDER;
	}
	memcpy(out, full, REPL_DIGEST_SIZE);
	return 0;
}

enum repl_status
repl_digest_answer(const uint8_t *data, uint64_t data_size,
		const struct repl_digest *req, struct repl_digest_reply *rep)
{
	memset(rep, 0, sizeof(*rep));
	uint64_t n = req->count, rs = req->region;
	if (req->offset >= data_size || rs > (1ull << 40) ||
			(n - 1) * rs > data_size - 1 - req->offset) {
		PMREP_LOG_ERR("digest request of %llu regions of %llu bytes at %llu is outside the %llu-byte data area",
				(unsigned long long)n, (unsigned long long)rs,
				(unsigned long long)req->offset,
				(unsigned long long)data_size);
		return REPL_ST_RANGE;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off = req->offset + i * rs;
		uint64_t len = data_size - off < rs ? data_size - off : rs;
		if (repl_digest(data + off, (size_t)len, rep->d[i]) != 0) {
			memset(rep, 0, sizeof(*rep));
			return REPL_ST_INTERNAL;
		}
	}
	rep->count = req->count;
	return REPL_ST_OK;
}

int
repl_auth_mac(const uint8_t *key, size_t key_len,
		const uint8_t nonce_i[REPL_NONCE_SIZE],
		const uint8_t nonce_t[REPL_NONCE_SIZE],
		const struct repl_auth *a, uint8_t out[REPL_MAC_SIZE])
{
	uint8_t body[AUTH_BODY];
	auth_body_encode(a, body);
	const struct repl_buf parts[] = {
		{ auth_label, sizeof(auth_label) },
		{ nonce_t, REPL_NONCE_SIZE },	/* the target's challenge */
		{ nonce_i, REPL_NONCE_SIZE },
		{ body + REPL_MAC_SIZE, AUTH_BODY - REPL_MAC_SIZE },
	};
	return repl_hmac(key, key_len, parts, 4, out);
}

int
repl_accept_mac(const uint8_t *key, size_t key_len,
		const uint8_t nonce_i[REPL_NONCE_SIZE],
		const uint8_t nonce_t[REPL_NONCE_SIZE],
		const struct repl_accept *a, uint8_t out[REPL_MAC_SIZE])
{
	uint8_t body[ACCEPT_BODY];
	accept_body_encode(a, body);
	const struct repl_buf parts[] = {
		{ accept_label, sizeof(accept_label) },
		{ nonce_i, REPL_NONCE_SIZE },	/* the initiator's challenge */
		{ nonce_t, REPL_NONCE_SIZE },
		{ body + REPL_MAC_SIZE, ACCEPT_BODY - REPL_MAC_SIZE },
	};
	return repl_hmac(key, key_len, parts, 4, out);
}

int
repl_status_to_err(enum repl_status st)
{
	switch (st) {
	case REPL_ST_OK: return 0;
	case REPL_ST_AUTH: return PMREP_E_AUTH;
	case REPL_ST_MALFORMED: return PMREP_E_MALFORMED;
	case REPL_ST_SIZE: return PMREP_E_RANGE;
	case REPL_ST_UUID: return PMREP_E_MISMATCH;
	case REPL_ST_GENERATION: return PMREP_E_STATE;
	case REPL_ST_RANGE: return PMREP_E_RANGE;
	case REPL_ST_STATE: return PMREP_E_STATE;
	case REPL_ST_NO_REPLICA: return PMREP_E_INVAL;
	case REPL_ST_SPLIT_BRAIN: return PMREP_E_SPLIT_BRAIN;
	/* the target's own failure, e.g. a persist of its replica (then
	 * it is poisoned: every later attach there fails too) */
	case REPL_ST_INTERNAL: return PMREP_E_PROVIDER;
	default: return PMREP_E_UNKNOWN;
	}
}

char *
repl_uuid_hex(const uint8_t u[PMREP_UUID_SIZE],
		char out[2 * PMREP_UUID_SIZE + 1])
{
	static const char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < PMREP_UUID_SIZE; i++) {
		out[2 * i] = hex[u[i] >> 4];
		out[2 * i + 1] = hex[u[i] & 15];
	}
	out[2 * PMREP_UUID_SIZE] = '\0';
	return out;
}

const char *
repl_status_str(enum repl_status st)
{
	switch (st) {
	case REPL_ST_OK: return "ok";
	case REPL_ST_AUTH: return "authentication failed (wrong key)";
	case REPL_ST_MALFORMED: return "malformed message";
	case REPL_ST_SIZE: return "data size differs from the replica's";
	case REPL_ST_UUID: return "replica-set UUID mismatch: the replica belongs to another replica set (its target's log names both UUIDs; `pmrep status` shows the replica's)";
	case REPL_ST_GENERATION: return "the replica holds a newer generation";
	case REPL_ST_INTERNAL: return "the target failed (e.g. a persist of its replica; its log says why)";
	case REPL_ST_RANGE: return "range outside the replica's data area";
	case REPL_ST_STATE: return "request out of order (or not allowed in this session)";
	case REPL_ST_NO_REPLICA: return "no such replica on this target";
	case REPL_ST_SPLIT_BRAIN: return "split brain: the replica is claimed at this generation by another primary that did not close it";
	default: return "unknown status";
	}
}

int
repl_selector_check(const char *name, const char *what)
{
	size_t n = name ? strlen(name) : 0;
	bool ok = n > 0 && n <= REPL_SELECTOR_SIZE;
	for (size_t i = 0; ok && i < n; i++) {
		char c = name[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
	}
	if (!ok) {
		PMREP_LOG_ERR("invalid argument: %s \"%s\": a replica name is 1..%d letters, digits, '.', '_' or '-'",
				what, name ? name : "(null)", REPL_SELECTOR_SIZE);
		return PMREP_E_INVAL;
	}
	return 0;
}
