/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_msg.c -- the replication protocol's wire formats and the
 * handshake's cryptography: round trips, strict decoding of malformed
 * private data and messages, MACs that change with the key, the nonces
 * and every bound field, HMAC-SHA256 against RFC 4231's test vector,
 * random nonces, and reading key files.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/wire.h"
#include "repl/wire/msg.h"

static const uint8_t key[32] = "0123456789abcdef0123456789abcdef";
static const uint8_t nonce_i[REPL_NONCE_SIZE] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t nonce_t[REPL_NONCE_SIZE] = { 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 };

static bool
all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0)
			return false;
	return true;
}

static void
hmac_sha256_matches_rfc4231_case_1(void **state)
{
	(void)state;
	/* RFC 4231 test case 1 (its 20-byte key is above the 16-byte
	 * minimum): key = 20 x 0x0b,
	 * data = "Hi There" */
	uint8_t k[20];
	memset(k, 0x0b, sizeof(k));
	const struct repl_buf parts[] = { { "Hi ", 3 }, { "There", 5 } };
	uint8_t out[REPL_MAC_SIZE];
	static const uint8_t want[REPL_MAC_SIZE] = {
		0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53, 0x5c, 0xa8, 0xaf,
		0xce, 0xaf, 0x0b, 0xf1, 0x2b, 0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83,
		0x3d, 0xa7, 0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7,
	};
	assert_int_equal(repl_hmac(k, sizeof(k), parts, 2, out), 0);
	assert_memory_equal(out, want, REPL_MAC_SIZE);
	assert_true(repl_mac_equal(out, want));
	out[31] ^= 1;
	assert_false(repl_mac_equal(out, want));
}

static void
hmac_refuses_keys_outside_16_to_64_bytes(void **state)
{
	(void)state;
	uint8_t big[PMREP_KEY_MAX + 1] = { 0 };
	uint8_t out[REPL_MAC_SIZE];
	const struct repl_buf parts[] = { { "x", 1 } };
	assert_int_equal(repl_hmac(big, PMREP_KEY_MIN - 1, parts, 1, out), PMREP_E_INVAL);
	assert_int_equal(repl_hmac(big, PMREP_KEY_MAX + 1, parts, 1, out), PMREP_E_INVAL);
	assert_int_equal(repl_hmac(NULL, 32, parts, 1, out), PMREP_E_INVAL);
	assert_int_equal(repl_hmac(big, PMREP_KEY_MAX, parts, 1, out), 0);
}

static void
nonces_are_random(void **state)
{
	(void)state;
	uint8_t a[REPL_NONCE_SIZE], b[REPL_NONCE_SIZE];
	assert_int_equal(repl_random(a, sizeof(a)), 0);
	assert_int_equal(repl_random(b, sizeof(b)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
}

static void
pdata_roundtrip_and_fits_connect_private_data(void **state)
{
	(void)state;
	assert_int_equal(REPL_HELLO_SIZE, PMREP_PDATA_CONNECT_MAX);
	assert_true(REPL_CHALLENGE_SIZE <= PMREP_PDATA_ACCEPT_MAX);
	struct repl_pdata in = { .type = REPL_PDATA_HELLO, .key_id = 7 }, out;
	memcpy(in.nonce, nonce_i, REPL_NONCE_SIZE);
	strcpy(in.selector, "replica-a.pool");
	for (int i = 0; i < REPL_PROOF_SIZE; i++)
		in.proof[i] = (uint8_t)(0xa0 + i);
	uint8_t b[REPL_PDATA_SIZE + 8];
	memset(b, 0, sizeof(b));
	assert_int_equal(repl_pdata_encode(&in, b), REPL_HELLO_SIZE);
	/* fixed offsets: version 3, key id at 4, nonce at 8, selector at 24
	 * (20 bytes), admission proof at 44 (12 bytes, to the end) */
	assert_int_equal(REPL_PROTO_VERSION, 3);
	assert_int_equal(24 + REPL_SELECTOR_SIZE + REPL_PROOF_SIZE, REPL_HELLO_SIZE);
	assert_int_equal(pmrep_get_le16(b), 0x5052);
	assert_int_equal(b[2], 3);
	assert_int_equal(b[3], REPL_PDATA_HELLO);
	assert_int_equal(pmrep_get_le32(b + 4), 7);
	assert_memory_equal(b + 8, nonce_i, REPL_NONCE_SIZE);
	assert_memory_equal(b + 24, "replica-a.pool", 15);
	assert_memory_equal(b + 44, in.proof, REPL_PROOF_SIZE);
	assert_int_equal(repl_pdata_decode(b, REPL_HELLO_SIZE, REPL_PDATA_HELLO, &out), 0);
	assert_memory_equal(out.nonce, nonce_i, REPL_NONCE_SIZE);
	assert_int_equal(out.key_id, 7);
	assert_string_equal(out.selector, "replica-a.pool");
	/* carried as it is (this version does not check it) */
	assert_memory_equal(out.proof, in.proof, REPL_PROOF_SIZE);
	/* zero padding after it (a verbs CM event) is fine */
	assert_int_equal(repl_pdata_decode(b, sizeof(b), REPL_PDATA_HELLO, &out), 0);
	/* a selector of all REPL_SELECTOR_SIZE bytes, no NUL */
	memset(in.selector, 'x', REPL_SELECTOR_SIZE);
	in.selector[REPL_SELECTOR_SIZE] = '\0';
	repl_pdata_encode(&in, b);
	assert_int_equal(repl_pdata_decode(b, REPL_HELLO_SIZE, REPL_PDATA_HELLO, &out), 0);
	assert_int_equal(strlen(out.selector), REPL_SELECTOR_SIZE);

	struct repl_pdata ch = { .type = REPL_PDATA_CHALLENGE };
	memcpy(ch.nonce, nonce_t, REPL_NONCE_SIZE);
	assert_int_equal(repl_pdata_encode(&ch, b), REPL_CHALLENGE_SIZE);
	assert_int_equal(b[2], 3);
	assert_int_equal(repl_pdata_decode(b, REPL_CHALLENGE_SIZE, REPL_PDATA_CHALLENGE, &out), 0);
	assert_memory_equal(out.nonce, nonce_t, REPL_NONCE_SIZE);
	assert_int_equal(repl_pdata_decode(b, REPL_CHALLENGE_SIZE - 1, REPL_PDATA_CHALLENGE, &out), PMREP_E_MALFORMED);
}

static void
pdata_malformed_is_refused(void **state)
{
	(void)state;
	struct repl_pdata in = { .type = REPL_PDATA_HELLO }, out;
	strcpy(in.selector, "r");
	uint8_t b[REPL_PDATA_SIZE];
	repl_pdata_encode(&in, b);
	assert_int_equal(repl_pdata_decode(NULL, 0, REPL_PDATA_HELLO, &out), PMREP_E_MALFORMED);
	assert_int_equal(repl_pdata_decode(b, REPL_HELLO_SIZE - 1, REPL_PDATA_HELLO, &out), PMREP_E_MALFORMED);
	/* a v1 HELLO (24 bytes) is too short */
	assert_int_equal(repl_pdata_decode(b, 24, REPL_PDATA_HELLO, &out), PMREP_E_MALFORMED);
	/* wrong type: a CHALLENGE where a HELLO belongs */
	assert_int_equal(repl_pdata_decode(b, sizeof(b), REPL_PDATA_CHALLENGE, &out), PMREP_E_MALFORMED);
	b[0] ^= 0xff;
	assert_int_equal(repl_pdata_decode(b, sizeof(b), REPL_PDATA_HELLO, &out), PMREP_E_MALFORMED);
	b[0] ^= 0xff;
	b[2] = 1;	/* protocol version 1 */
	assert_int_equal(repl_pdata_decode(b, sizeof(b), REPL_PDATA_HELLO, &out), PMREP_E_MALFORMED);
	b[2] = 2;	/* protocol version 2 (before positions) */
	assert_int_equal(repl_pdata_decode(b, sizeof(b), REPL_PDATA_HELLO, &out), PMREP_E_MALFORMED);
	b[2] = 4;
	assert_int_equal(repl_pdata_decode(b, sizeof(b), REPL_PDATA_HELLO, &out), PMREP_E_MALFORMED);
	b[2] = 3;
	assert_int_equal(repl_pdata_decode(b, sizeof(b), REPL_PDATA_HELLO, &out), 0);
	/* a byte after the selector's NUL */
	b[24 + 5] = 'z';
	assert_int_equal(repl_pdata_decode(b, sizeof(b), REPL_PDATA_HELLO, &out), PMREP_E_MALFORMED);
	b[24 + 5] = 0;
	/* CHALLENGE reserved bits */
	struct repl_pdata ch = { .type = REPL_PDATA_CHALLENGE };
	repl_pdata_encode(&ch, b);
	b[5] = 1;
	assert_int_equal(repl_pdata_decode(b, REPL_CHALLENGE_SIZE, REPL_PDATA_CHALLENGE, &out), PMREP_E_MALFORMED);
}

static struct repl_msg
sample_auth(void)
{
	struct repl_msg m = { .type = REPL_MSG_AUTH, .seq = 1 };
	memset(m.u.auth.uuid, 0x5a, PMREP_UUID_SIZE);
	m.u.auth.data_size = 1 << 20;
	m.u.auth.generation = 3;
	m.u.auth.primary_id = 0xfeedull;
	m.u.auth.intent = REPL_INTENT_ATTACH;
	return m;
}

static struct repl_msg
sample_accept(void)
{
	struct repl_msg c = { .type = REPL_MSG_ACCEPT, .seq = 2 };
	memset(c.u.accept.mr_desc, 0x11, sizeof(c.u.accept.mr_desc));
	memset(c.u.accept.peer_cfg, 0x22, sizeof(c.u.accept.peer_cfg));
	memset(c.u.accept.uuid, 0x33, PMREP_UUID_SIZE);
	memset(c.u.accept.replica_id, 0x44, PMREP_UUID_SIZE);
	c.u.accept.generation = 9;
	c.u.accept.owner = 10;
	c.u.accept.hdr_seq = 11;
	c.u.accept.last_persist_seq = 12;
	c.u.accept.hdr_flags = PMREP_REPLICA_F_CONSISTENT;
	c.u.accept.target_flags = REPL_TF_STAGING | REPL_TF_FRESH;
	c.u.accept.set_size = 3;
	c.u.accept.set_quorum = 1;
	c.u.accept.pos_gen = 0x0102030405060708ull;
	c.u.accept.pos_owner = 0x1112131415161718ull;
	c.u.accept.claim_floor = 5ull << 40;
	c.u.accept.run_gen = 0x2122232425262728ull;
	c.u.accept.run_owner = 0x3132333435363738ull;
	return c;
}

static void
msg_roundtrip_of_every_type(void **state)
{
	(void)state;
	assert_int_equal(REPL_MSG_SLOT, 256);
	uint8_t b[REPL_MSG_SLOT];
	struct repl_msg out;

	struct repl_msg a = sample_auth();
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_t, &a.u.auth, a.u.auth.mac), 0);
	size_t n = repl_msg_encode(&a, b);
	assert_int_equal(n, 96);
	assert_int_equal(b[2], 3);
	assert_int_equal(pmrep_get_le32(b + 16 + 72), REPL_INTENT_ATTACH);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.type, REPL_MSG_AUTH);
	assert_int_equal(out.seq, 1);
	assert_memory_equal(out.u.auth.mac, a.u.auth.mac, REPL_MAC_SIZE);
	assert_memory_equal(out.u.auth.uuid, a.u.auth.uuid, PMREP_UUID_SIZE);
	assert_int_equal(out.u.auth.data_size, 1 << 20);
	assert_int_equal(out.u.auth.generation, 3);
	assert_int_equal(out.u.auth.primary_id, 0xfeed);
	assert_int_equal(out.u.auth.intent, REPL_INTENT_ATTACH);
	a.u.auth.intent = REPL_INTENT_QUERY;
	n = repl_msg_encode(&a, b);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.auth.intent, REPL_INTENT_QUERY);

	struct repl_msg c = sample_accept();
	n = repl_msg_encode(&c, b);
	assert_int_equal(n, 16 + 192);
	assert_int_equal(b[2], 3);
	assert_int_equal(pmrep_get_le16(b + 6), 192);		/* body length */
	assert_int_equal(pmrep_get_le16(b + 16 + 144), 3);	/* set size */
	assert_int_equal(pmrep_get_le16(b + 16 + 146), 1);	/* set quorum */
	assert_true(n <= REPL_MSG_SLOT);
	assert_int_equal(b[16 + 88], 0x44);		/* replica id */
	assert_int_equal(pmrep_get_le64(b + 16 + 104), 9);	/* generation */
	assert_int_equal(pmrep_get_le64(b + 16 + 112), 10);	/* owner */
	assert_int_equal(pmrep_get_le64(b + 16 + 120), 11);	/* slot seq */
	assert_int_equal(pmrep_get_le64(b + 16 + 128), 12);	/* position word */
	assert_int_equal(pmrep_get_le32(b + 16 + 136), PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(pmrep_get_le32(b + 16 + 140), REPL_TF_STAGING | REPL_TF_FRESH);
	assert_int_equal(pmrep_get_le32(b + 16 + 148), 0);	/* reserved */
	/* the position (generation, owner), the claim floor, and the run
	 * that claimed it (generation, owner) */
	assert_int_equal(pmrep_get_le64(b + 16 + 152), 0x0102030405060708ull);
	assert_int_equal(pmrep_get_le64(b + 16 + 160), 0x1112131415161718ull);
	assert_int_equal(pmrep_get_le64(b + 16 + 168), 5ull << 40);
	assert_int_equal(pmrep_get_le64(b + 16 + 176), 0x2122232425262728ull);
	assert_int_equal(pmrep_get_le64(b + 16 + 184), 0x3132333435363738ull);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_memory_equal(out.u.accept.mr_desc, c.u.accept.mr_desc, PMREP_MR_DESC_SIZE);
	assert_memory_equal(out.u.accept.peer_cfg, c.u.accept.peer_cfg, PMREP_PEER_CFG_DESC_SIZE);
	assert_memory_equal(out.u.accept.uuid, c.u.accept.uuid, PMREP_UUID_SIZE);
	assert_memory_equal(out.u.accept.replica_id, c.u.accept.replica_id, PMREP_UUID_SIZE);
	assert_int_equal(out.u.accept.generation, 9);
	assert_int_equal(out.u.accept.owner, 10);
	assert_int_equal(out.u.accept.hdr_seq, 11);
	assert_int_equal(out.u.accept.last_persist_seq, 12);
	assert_int_equal(out.u.accept.hdr_flags, PMREP_REPLICA_F_CONSISTENT);
	assert_int_equal(out.u.accept.target_flags, REPL_TF_STAGING | REPL_TF_FRESH);
	assert_int_equal(out.u.accept.set_size, 3);
	assert_int_equal(out.u.accept.set_quorum, 1);
	assert_int_equal(out.u.accept.pos_gen, 0x0102030405060708ull);
	assert_int_equal(out.u.accept.pos_owner, 0x1112131415161718ull);
	assert_int_equal(out.u.accept.claim_floor, 5ull << 40);
	assert_int_equal(out.u.accept.run_gen, 0x2122232425262728ull);
	assert_int_equal(out.u.accept.run_owner, 0x3132333435363738ull);
	/* each of the five u64 lands at its own offset only: one changed
	 * field changes exactly its 8 bytes */
	{
		uint8_t ref[REPL_MSG_SLOT], b2[REPL_MSG_SLOT];
		size_t rn = repl_msg_encode(&c, ref);
		for (int f = 0; f < 5; f++) {
			struct repl_msg d = c;
			uint64_t *fld[] = { &d.u.accept.pos_gen,
				&d.u.accept.pos_owner, &d.u.accept.claim_floor,
				&d.u.accept.run_gen, &d.u.accept.run_owner };
			*fld[f] ^= 0xffffffffffffffffull;
			assert_int_equal(repl_msg_encode(&d, b2), rn);
			size_t at = 16 + 152 + 8 * (size_t)f;
			for (size_t i = 0; i < rn; i++)
				if (i < at || i >= at + 8)
					assert_int_equal(b2[i], ref[i]);
				else
					assert_int_equal(b2[i], (uint8_t)~ref[i]);
			assert_int_equal(repl_msg_decode(b2, rn, &out), 0);
			assert_int_equal(out.u.accept.pos_gen, d.u.accept.pos_gen);
			assert_int_equal(out.u.accept.pos_owner, d.u.accept.pos_owner);
			assert_int_equal(out.u.accept.claim_floor, d.u.accept.claim_floor);
			assert_int_equal(out.u.accept.run_gen, d.u.accept.run_gen);
			assert_int_equal(out.u.accept.run_owner, d.u.accept.run_owner);
		}
	}
	/* the position's header flags (TRACKED 8, POSW1 16, PRIMARY 32,
	 * RUN_CLOSED 64) */
	c.u.accept.hdr_flags = PMREP_REPLICA_F_CONSISTENT | PMREP_REPLICA_F_REMOVED |
		PMREP_REPLICA_F_PROMOTED | (1u << 3) | (1u << 4) | (1u << 5) |
		(1u << 6);
	n = repl_msg_encode(&c, b);
	assert_int_equal(pmrep_get_le32(b + 16 + 136), 0x7f);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.accept.hdr_flags, 0x7f);
	c.u.accept.hdr_flags = 1u << 6;		/* RUN_CLOSED alone */
	n = repl_msg_encode(&c, b);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.accept.hdr_flags, 1u << 6);
	/* no position recorded: 0 0, no claim floor, no run */
	c = sample_accept();
	c.u.accept.pos_gen = c.u.accept.pos_owner = c.u.accept.claim_floor = 0;
	c.u.accept.run_gen = c.u.accept.run_owner = 0;
	n = repl_msg_encode(&c, b);
	assert_int_equal(n, 16 + 192);
	assert_true(all_zero(b + 16 + 152, 40));
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.accept.pos_gen, 0);
	assert_int_equal(out.u.accept.pos_owner, 0);
	assert_int_equal(out.u.accept.claim_floor, 0);
	assert_int_equal(out.u.accept.run_gen, 0);
	assert_int_equal(out.u.accept.run_owner, 0);
	/* a fence keeps the run while the position names another writer:
	 * the two pairs travel independently */
	c = sample_accept();
	c.u.accept.run_gen = 4;
	c.u.accept.run_owner = 0x44;
	c.u.accept.pos_gen = 3;
	c.u.accept.pos_owner = 0x33;
	n = repl_msg_encode(&c, b);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.accept.run_gen, 4);
	assert_int_equal(out.u.accept.run_owner, 0x44);
	assert_int_equal(out.u.accept.pos_gen, 3);
	assert_int_equal(out.u.accept.pos_owner, 0x33);

	struct repl_msg cm = { .type = REPL_MSG_COMMIT, .seq = 3 };
	memset(cm.u.commit.replica_id, 0x44, PMREP_UUID_SIZE);
	cm.u.commit.generation = 9;
	cm.u.commit.primary_id = 0xfeed;
	cm.u.commit.resync = REPL_RESYNC_INCREMENTAL;
	cm.u.commit.members = (struct repl_members){ .set_size = 4 };
	cm.u.commit.claim_floor = 0x123ull << 40;
	cm.u.commit.flags = REPL_COMMIT_F_TRACKED;
	n = repl_msg_encode(&cm, b);
	assert_int_equal(n, 16 + 56);
	assert_int_equal(pmrep_get_le16(b + 6), 56);		/* body length */
	assert_memory_equal(b + 16, cm.u.commit.replica_id, PMREP_UUID_SIZE);
	assert_int_equal(pmrep_get_le64(b + 16 + 16), 9);
	assert_int_equal(pmrep_get_le64(b + 16 + 24), 0xfeed);
	assert_int_equal(pmrep_get_le32(b + 16 + 32), REPL_RESYNC_INCREMENTAL);
	assert_int_equal(pmrep_get_le16(b + 16 + 36), 4);
	assert_int_equal(pmrep_get_le16(b + 16 + 38), 0);
	assert_int_equal(pmrep_get_le64(b + 16 + 40), 0x123ull << 40);	/* floor */
	assert_int_equal(pmrep_get_le32(b + 16 + 48), 1);	/* TRACKED */
	assert_int_equal(pmrep_get_le32(b + 16 + 52), 0);	/* reserved */
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.type, REPL_MSG_COMMIT);
	assert_memory_equal(out.u.commit.replica_id, cm.u.commit.replica_id, PMREP_UUID_SIZE);
	assert_int_equal(out.u.commit.generation, 9);
	assert_int_equal(out.u.commit.primary_id, 0xfeed);
	assert_int_equal(out.u.commit.resync, REPL_RESYNC_INCREMENTAL);
	assert_int_equal(out.u.commit.members.set_size, 4);
	assert_int_equal(out.u.commit.members.set_quorum, 0);
	assert_int_equal(out.u.commit.claim_floor, 0x123ull << 40);
	assert_int_equal(out.u.commit.flags, REPL_COMMIT_F_TRACKED);
	/* FULL, untracked */
	cm.u.commit.resync = REPL_RESYNC_FULL;
	cm.u.commit.flags = 0;
	cm.u.commit.claim_floor = 1;
	n = repl_msg_encode(&cm, b);
	assert_int_equal(pmrep_get_le32(b + 16 + 48), 0);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.commit.resync, REPL_RESYNC_FULL);
	assert_int_equal(out.u.commit.claim_floor, 1);
	assert_int_equal(out.u.commit.flags, 0);
	/* a promotion's FENCE: kind 3, no claim floor */
	cm.u.commit.resync = REPL_RESYNC_FENCE;
	cm.u.commit.claim_floor = 0;
	n = repl_msg_encode(&cm, b);
	assert_int_equal(pmrep_get_le32(b + 16 + 32), 3);
	assert_int_equal(pmrep_get_le64(b + 16 + 40), 0);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.commit.resync, REPL_RESYNC_FENCE);
	assert_int_equal(out.u.commit.claim_floor, 0);
	assert_int_equal(out.u.commit.flags, 0);

	struct repl_msg mm = { .type = REPL_MSG_MEMBERS, .seq = 4,
		.u.members = { .set_size = 3, .set_quorum = 2 } };
	n = repl_msg_encode(&mm, b);
	assert_int_equal(n, 16 + 8);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.type, REPL_MSG_MEMBERS);
	assert_int_equal(out.u.members.set_size, 3);
	assert_int_equal(out.u.members.set_quorum, 2);
	assert_false(out.u.members.removed);
	mm.u.members.removed = true;
	n = repl_msg_encode(&mm, b);
	assert_int_equal(pmrep_get_le32(b + 16 + 4), 1);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_true(out.u.members.removed);
	struct repl_msg mr = { .type = REPL_MSG_MEMBERS_REPLY, .seq = 4 };
	n = repl_msg_encode(&mr, b);
	assert_int_equal(n, 16);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.type, REPL_MSG_MEMBERS_REPLY);

	/* COMMIT_REPLY: the copy's position (generation, owner, psn) */
	struct repl_msg cr = { .type = REPL_MSG_COMMIT_REPLY, .seq = 3,
		.u.position = { .gen = 0x2122232425262728ull,
			.owner = 0x3132333435363738ull,
			.psn = (7ull << 40) | 99 } };
	n = repl_msg_encode(&cr, b);
	assert_int_equal(n, REPL_MSG_HDR_SIZE + 24);
	assert_int_equal(pmrep_get_le16(b + 6), 24);
	assert_int_equal(pmrep_get_le64(b + 16), 0x2122232425262728ull);
	assert_int_equal(pmrep_get_le64(b + 16 + 8), 0x3132333435363738ull);
	assert_int_equal(pmrep_get_le64(b + 16 + 16), (7ull << 40) | 99);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.type, REPL_MSG_COMMIT_REPLY);
	assert_int_equal(out.status, REPL_ST_OK);
	assert_int_equal(out.u.position.gen, 0x2122232425262728ull);
	assert_int_equal(out.u.position.owner, 0x3132333435363738ull);
	assert_int_equal(out.u.position.psn, (7ull << 40) | 99);
	/* a refusal carries the (zero) body too */
	struct repl_msg crr = { .type = REPL_MSG_COMMIT_REPLY, .status = REPL_ST_GENERATION, .seq = 3 };
	n = repl_msg_encode(&crr, b);
	assert_int_equal(n, REPL_MSG_HDR_SIZE + 24);
	assert_true(all_zero(b + 16, 24));
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.type, REPL_MSG_COMMIT_REPLY);
	assert_int_equal(out.status, REPL_ST_GENERATION);
	assert_int_equal(out.u.position.gen, 0);
	assert_int_equal(out.u.position.owner, 0);
	assert_int_equal(out.u.position.psn, 0);

	/* CLOSE: the writer's newest step's persist sequence */
	struct repl_msg cl = { .type = REPL_MSG_CLOSE, .seq = 6,
		.u.close_psn = (3ull << 40) | 0x1234 };
	n = repl_msg_encode(&cl, b);
	assert_int_equal(n, REPL_MSG_HDR_SIZE + 8);
	assert_int_equal(pmrep_get_le16(b + 6), 8);
	assert_int_equal(pmrep_get_le64(b + 16), (3ull << 40) | 0x1234);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.type, REPL_MSG_CLOSE);
	assert_int_equal(out.seq, 6);
	assert_int_equal(out.u.close_psn, (3ull << 40) | 0x1234);
	cl.u.close_psn = 0;	/* no step this run */
	n = repl_msg_encode(&cl, b);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.close_psn, 0);
	/* the replies without a body */
	static const enum repl_msg_type nobody[] = { REPL_MSG_PERSIST_REPLY,
		REPL_MSG_CLOSE_REPLY, REPL_MSG_MEMBERS_REPLY };
	for (size_t i = 0; i < sizeof(nobody) / sizeof(nobody[0]); i++) {
		struct repl_msg x = { .type = nobody[i], .seq = 8 };
		n = repl_msg_encode(&x, b);
		assert_int_equal(n, REPL_MSG_HDR_SIZE);
		assert_int_equal(repl_msg_decode(b, n, &out), 0);
		assert_int_equal(out.type, nobody[i]);
	}

	struct repl_msg p = { .type = REPL_MSG_PERSIST, .seq = 77,
		.u.persist = { .offset = 4096, .length = 123,
			.psn = 0x1122334455667788ull } };
	n = repl_msg_encode(&p, b);
	assert_int_equal(n, 40);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.seq, 77);
	assert_int_equal(out.u.persist.offset, 4096);
	assert_int_equal(out.u.persist.length, 123);
	assert_int_equal(out.u.persist.psn, 0x1122334455667788ull);
	/* the v2 PERSIST of before (16-byte body) is malformed now */
	assert_int_equal(repl_msg_decode(b, 32, &out), PMREP_E_MALFORMED);

	struct repl_msg r = { .type = REPL_MSG_REFUSE, .status = REPL_ST_NO_REPLICA, .seq = 5 };
	n = repl_msg_encode(&r, b);
	assert_int_equal(n, REPL_MSG_HDR_SIZE);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.type, REPL_MSG_REFUSE);
	assert_int_equal(out.status, REPL_ST_NO_REPLICA);
	assert_int_equal(repl_status_to_err(out.status), PMREP_E_INVAL);
	assert_string_equal(repl_status_str(REPL_ST_NO_REPLICA), "no such replica on this target");
	assert_int_equal(repl_status_to_err(REPL_ST_UUID), PMREP_E_MISMATCH);
}

static void
msg_malformed_is_refused(void **state)
{
	(void)state;
	uint8_t b[REPL_MSG_SLOT];
	struct repl_msg out;
	struct repl_msg a = sample_auth();
	size_t n = repl_msg_encode(&a, b);

	/* truncated anywhere */
	for (size_t len = 0; len < n; len++)
		assert_int_equal(repl_msg_decode(b, len, &out), PMREP_E_MALFORMED);
	assert_int_equal(repl_msg_decode(NULL, n, &out), PMREP_E_MALFORMED);

	uint8_t c[REPL_MSG_SLOT];
#define MUTATE(stmt) do { memcpy(c, b, n); stmt; \
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED); } while (0)
	MUTATE(c[0] ^= 1);			/* magic */
	MUTATE(c[2] = 1);			/* version 1 */
	MUTATE(c[2] = 2);			/* version 2 */
	MUTATE(c[2] = 4);			/* version 4 */
	MUTATE(c[2] = 9);			/* version */
	MUTATE(c[3] = 0);			/* type 0 */
	MUTATE(c[3] = 42);			/* unknown type */
	MUTATE(c[3] = 12);			/* one past DIGEST_REPLY */
	MUTATE(c[3] = REPL_MSG_DIGEST);		/* AUTH-sized body on a DIGEST */
	MUTATE(pmrep_put_le16(c + 4, 200));	/* unknown status */
	MUTATE(pmrep_put_le16(c + 4, REPL_ST_MAX_ + 1));
	MUTATE(pmrep_put_le16(c + 6, 79));	/* body length not AUTH's */
	MUTATE(pmrep_put_le16(c + 6, 0xffff));	/* huge body length */
	MUTATE(c[3] = REPL_MSG_PERSIST);	/* AUTH-sized body on a PERSIST */
	MUTATE(c[3] = REPL_MSG_COMMIT);		/* AUTH-sized body on a COMMIT */
	MUTATE(c[16 + 76] = 1);			/* AUTH reserved */
	MUTATE(pmrep_put_le32(c + 16 + 72, 0));	/* intent 0 */
	MUTATE(pmrep_put_le32(c + 16 + 72, 3));	/* unknown intent */
#undef MUTATE

	struct repl_msg acc = sample_accept();
	acc.u.accept.target_flags = 0x80;	/* unknown target flag */
	n = repl_msg_encode(&acc, b);
	assert_int_equal(repl_msg_decode(b, n, &out), PMREP_E_MALFORMED);
	acc = sample_accept();
	acc.u.accept.hdr_flags = 0x100;		/* the first past INCOMPLETE */
	n = repl_msg_encode(&acc, b);
	assert_int_equal(repl_msg_decode(b, n, &out), PMREP_E_MALFORMED);
	acc.u.accept.hdr_flags = 0x200;
	n = repl_msg_encode(&acc, b);
	assert_int_equal(repl_msg_decode(b, n, &out), PMREP_E_MALFORMED);
	acc.u.accept.hdr_flags = 0x80000000u;
	n = repl_msg_encode(&acc, b);
	assert_int_equal(repl_msg_decode(b, n, &out), PMREP_E_MALFORMED);
	/* a version 2 ACCEPT (152-byte body) */
	acc = sample_accept();
	n = repl_msg_encode(&acc, b);
	pmrep_put_le16(b + 6, 152);
	assert_int_equal(repl_msg_decode(b, 16 + 152, &out), PMREP_E_MALFORMED);
	assert_int_equal(repl_msg_decode(b, n, &out), PMREP_E_MALFORMED);
	/* the ACCEPT of before the run fields (176-byte body) */
	acc = sample_accept();
	n = repl_msg_encode(&acc, b);
	pmrep_put_le16(b + 6, 176);
	assert_int_equal(repl_msg_decode(b, 16 + 176, &out), PMREP_E_MALFORMED);
	assert_int_equal(repl_msg_decode(b, n, &out), PMREP_E_MALFORMED);
	/* one u64 more than the body (200) */
	acc = sample_accept();
	n = repl_msg_encode(&acc, b);
	pmrep_put_le16(b + 6, 200);
	memset(b + n, 0, 8);
	assert_int_equal(repl_msg_decode(b, n + 8, &out), PMREP_E_MALFORMED);
	/* an ACCEPT one byte short of its body */
	acc = sample_accept();
	n = repl_msg_encode(&acc, b);
	assert_int_equal(repl_msg_decode(b, n - 1, &out), PMREP_E_MALFORMED);

	struct repl_msg cm = { .type = REPL_MSG_COMMIT, .u.commit.resync = REPL_RESYNC_FULL,
		.u.commit.members = { .set_size = 2, .set_quorum = 1 },
		.u.commit.claim_floor = 1ull << 40,
		.u.commit.flags = REPL_COMMIT_F_TRACKED };
	n = repl_msg_encode(&cm, b);
	assert_int_equal(n, 16 + 56);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	memcpy(c, b, n);
	pmrep_put_le32(c + 16 + 32, 0);		/* resync kind 0 */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le32(c + 16 + 32, 4);		/* unknown resync kind */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le32(c + 16 + 32, REPL_RESYNC_FENCE);	/* a FENCE with a floor */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	pmrep_put_le64(c + 16 + 40, 0);		/* ... without: fine */
	assert_int_equal(repl_msg_decode(c, n, &out), 0);
	assert_int_equal(out.u.commit.resync, REPL_RESYNC_FENCE);
	pmrep_put_le64(c + 16 + 40, 1);		/* any nonzero floor */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le64(c + 16 + 40, 0);		/* a FULL without a floor */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	pmrep_put_le32(c + 16 + 32, REPL_RESYNC_INCREMENTAL);	/* INCREMENTAL */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	pmrep_put_le64(c + 16 + 40, 1);
	assert_int_equal(repl_msg_decode(c, n, &out), 0);
	/* COMMIT flags: only TRACKED */
	for (unsigned bit = 1; bit < 32; bit++) {
		memcpy(c, b, n);
		pmrep_put_le32(c + 16 + 48, REPL_COMMIT_F_TRACKED | (1u << bit));
		assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	}
	/* COMMIT reserved bytes 52..55 */
	for (size_t i = 52; i < 56; i++) {
		memcpy(c, b, n);
		c[16 + i] = 1;
		assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	}
	/* a version 2 COMMIT (40-byte body), and one byte short */
	memcpy(c, b, n);
	pmrep_put_le16(c + 6, 40);
	assert_int_equal(repl_msg_decode(c, 16 + 40, &out), PMREP_E_MALFORMED);
	assert_int_equal(repl_msg_decode(b, n - 1, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le16(c + 16 + 36, 0);		/* COMMIT without a set */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le16(c + 16 + 36, 9);		/* a set above 8 */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le16(c + 16 + 38, 3);		/* a quorum above the set */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	/* MEMBERS: the same bounds, and its reserved bytes */
	struct repl_msg mm = { .type = REPL_MSG_MEMBERS, .u.members = { .set_size = 2 } };
	n = repl_msg_encode(&mm, b);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	memcpy(c, b, n);
	pmrep_put_le16(c + 16, 0);
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le16(c + 16 + 2, 3);
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	c[16 + 7] = 1;
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	/* ACCEPT: its membership bounds and reserved bytes */
	struct repl_msg ac = sample_accept();
	n = repl_msg_encode(&ac, b);
	memcpy(c, b, n);
	pmrep_put_le16(c + 16 + 146, 4);	/* quorum above the set */
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	for (size_t i = 148; i < 152; i++) {
		memcpy(c, b, n);
		c[16 + i] = 1;
		assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	}
	/* COMMIT_REPLY: its 24-byte body, not none (version 2) nor more */
	struct repl_msg cr = { .type = REPL_MSG_COMMIT_REPLY };
	n = repl_msg_encode(&cr, b);
	assert_int_equal(n, 16 + 24);
	assert_int_equal(repl_msg_decode(b, n - 1, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le16(c + 6, 0);
	assert_int_equal(repl_msg_decode(c, 16, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le16(c + 6, 32);
	assert_int_equal(repl_msg_decode(c, n + 8, &out), PMREP_E_MALFORMED);
	/* CLOSE: its 8-byte body */
	struct repl_msg cl = { .type = REPL_MSG_CLOSE, .u.close_psn = 5 };
	n = repl_msg_encode(&cl, b);
	assert_int_equal(n, 16 + 8);
	assert_int_equal(repl_msg_decode(b, n - 1, &out), PMREP_E_MALFORMED);
	memcpy(c, b, n);
	pmrep_put_le16(c + 6, 0);
	assert_int_equal(repl_msg_decode(c, 16, &out), PMREP_E_MALFORMED);
	/* CLOSE_REPLY with a body */
	struct repl_msg clr = { .type = REPL_MSG_CLOSE_REPLY };
	n = repl_msg_encode(&clr, b);
	pmrep_put_le16(b + 6, 8);
	assert_int_equal(repl_msg_decode(b, n + 8, &out), PMREP_E_MALFORMED);
}

static void
digest_roundtrip_bounds_and_answer(void **state)
{
	(void)state;
	uint8_t b[REPL_MSG_SLOT], c[REPL_MSG_SLOT];
	struct repl_msg out;
	struct repl_msg d = { .type = REPL_MSG_DIGEST, .seq = 9,
		.u.digest = { .offset = 65536, .region = 65536, .count = 14 } };
	size_t n = repl_msg_encode(&d, b);
	assert_int_equal(n, REPL_MSG_HDR_SIZE + 24);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.digest.offset, 65536);
	assert_int_equal(out.u.digest.region, 65536);
	assert_int_equal(out.u.digest.count, 14);
#define MUTATE(stmt) do { memcpy(c, b, n); stmt; \
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED); } while (0)
	MUTATE(pmrep_put_le32(c + 16 + 16, 0));		/* count 0 */
	MUTATE(pmrep_put_le32(c + 16 + 16, 15));	/* count above the slot's */
	MUTATE(pmrep_put_le64(c + 16 + 8, 0));		/* region 0 */
	MUTATE(pmrep_put_le64(c + 16 + 8, 65537));	/* not a power of two */
	MUTATE(c[16 + 20] = 1);				/* reserved */
#undef MUTATE

	/* the answer: SHA-256 (first 16 bytes) of each region, the last one
	 * cut at the end; the reply fills one slot */
	static uint8_t data[3 * 4096 + 100];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + 7 + i / 4096);
	struct repl_digest q = { .offset = 4096, .region = 4096, .count = 3 };
	struct repl_msg r = { .type = REPL_MSG_DIGEST_REPLY, .seq = 9 };
	assert_int_equal(repl_digest_answer(data, sizeof(data), &q, &r.u.digest_reply),
			REPL_ST_OK);
	uint8_t want[REPL_DIGEST_SIZE];
	assert_int_equal(repl_digest(data + 4096, 4096, want), 0);
	assert_memory_equal(r.u.digest_reply.d[0], want, REPL_DIGEST_SIZE);
	assert_int_equal(repl_digest(data + 3 * 4096, 100, want), 0);
	assert_memory_equal(r.u.digest_reply.d[2], want, REPL_DIGEST_SIZE);
	assert_memory_not_equal(r.u.digest_reply.d[0], r.u.digest_reply.d[1],
			REPL_DIGEST_SIZE);
	n = repl_msg_encode(&r, b);
	assert_true(n <= REPL_MSG_SLOT);
	assert_int_equal(repl_msg_decode(b, n, &out), 0);
	assert_int_equal(out.u.digest_reply.count, 3);
	assert_memory_equal(out.u.digest_reply.d, r.u.digest_reply.d,
			sizeof(out.u.digest_reply.d));
	/* a count that does not go with the status */
	memcpy(c, b, n);
	pmrep_put_le32(c + 16, 0);
	assert_int_equal(repl_msg_decode(c, n, &out), PMREP_E_MALFORMED);
	/* outside the data area: refused, nothing computed */
	q.offset = 4 * 4096;
	assert_int_equal(repl_digest_answer(data, sizeof(data), &q, &r.u.digest_reply),
			REPL_ST_RANGE);
	q.offset = 4096;
	q.count = 4;	/* the fourth region begins past the end */
	assert_int_equal(repl_digest_answer(data, sizeof(data), &q, &r.u.digest_reply),
			REPL_ST_RANGE);
	q.offset = 0;
	q.region = 1ull << 41;	/* huge: never an overflow */
	q.count = 14;
	assert_int_equal(repl_digest_answer(data, sizeof(data), &q, &r.u.digest_reply),
			REPL_ST_RANGE);
	q.count = 1;
	assert_int_equal(repl_digest_answer(data, sizeof(data), &q, &r.u.digest_reply),
			REPL_ST_RANGE);
	q.region = 1ull << 20;	/* one region larger than the data: all of it */
	assert_int_equal(repl_digest_answer(data, sizeof(data), &q, &r.u.digest_reply),
			REPL_ST_OK);
	assert_int_equal(repl_digest(data, sizeof(data), want), 0);
	assert_memory_equal(r.u.digest_reply.d[0], want, REPL_DIGEST_SIZE);
}

static void
auth_mac_binds_key_nonces_and_every_field(void **state)
{
	(void)state;
	struct repl_msg a = sample_auth();
	uint8_t ref[REPL_MAC_SIZE], m[REPL_MAC_SIZE];
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_t, &a.u.auth, ref), 0);
	/* the same inputs give the same MAC (the target recomputes it) */
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_t, &a.u.auth, m), 0);
	assert_true(repl_mac_equal(ref, m));

	uint8_t other_key[32];
	memcpy(other_key, key, sizeof(key));
	other_key[31] ^= 1;
	assert_int_equal(repl_auth_mac(other_key, sizeof(other_key), nonce_i, nonce_t, &a.u.auth, m), 0);
	assert_false(repl_mac_equal(ref, m));
	/* a replayed AUTH under a new challenge does not verify */
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_i, &a.u.auth, m), 0);
	assert_false(repl_mac_equal(ref, m));
	/* swapping the nonces' roles does not verify */
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_t, nonce_i, &a.u.auth, m), 0);
	assert_false(repl_mac_equal(ref, m));

	struct repl_auth t = a.u.auth;
	t.data_size++;
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = a.u.auth;
	t.uuid[7] ^= 1;
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = a.u.auth;
	t.generation++;
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = a.u.auth;
	t.primary_id++;
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = a.u.auth;
	t.intent = REPL_INTENT_QUERY;
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	/* the MAC field itself is not an input */
	t = a.u.auth;
	memset(t.mac, 0xee, REPL_MAC_SIZE);
	assert_int_equal(repl_auth_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_true(repl_mac_equal(ref, m));
}

static void
accept_mac_binds_the_descriptors_and_differs_from_auth(void **state)
{
	(void)state;
	struct repl_accept acc = { .generation = 1 };
	memset(acc.mr_desc, 0x33, sizeof(acc.mr_desc));
	uint8_t ref[REPL_MAC_SIZE], m[REPL_MAC_SIZE];
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &acc, ref), 0);
	acc.mr_desc[8] ^= 1;	/* another address */
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &acc, m), 0);
	assert_false(repl_mac_equal(ref, m));
	acc.mr_desc[8] ^= 1;
	acc.target_flags = REPL_TF_STAGING;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &acc, m), 0);
	assert_false(repl_mac_equal(ref, m));
	acc.target_flags = 0;
	/* every field of the header it reports */
	struct repl_accept t = acc;
	t.replica_id[3] ^= 1;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.uuid[0] ^= 1;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.owner++;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.hdr_seq++;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.hdr_flags = PMREP_REPLICA_F_CONSISTENT;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.hdr_flags = 1u << 4;	/* a position flag (POSW1) */
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	/* the position and the claim floor */
	t = acc;
	t.last_persist_seq++;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.pos_gen++;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.pos_owner++;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.claim_floor = 1ull << 40;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	/* the run that claimed it */
	t = acc;
	t.run_gen++;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.run_owner++;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.run_owner = 1ull << 63;	/* its top byte too */
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	t.hdr_flags = 1u << 6;	/* RUN_CLOSED */
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_false(repl_mac_equal(ref, m));
	t = acc;
	assert_int_equal(repl_accept_mac(key, sizeof(key), nonce_i, nonce_t, &t, m), 0);
	assert_true(repl_mac_equal(ref, m));
}

static void
key_file_is_read_without_its_trailing_newline(void **state)
{
	(void)state;
	char path[] = "/dev/shm/pmrep-test-key-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	uint8_t k[PMREP_KEY_MAX];
	size_t len = 0;

	assert_int_equal(write(fd, "0123456789abcdefXYZ\n", 20), 20);
	assert_int_equal(pmrep_key_read_file(path, k, sizeof(k), &len), 0);
	assert_int_equal(len, 19);
	assert_memory_equal(k, "0123456789abcdefXYZ", 19);

	/* too short */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, "short\n", 6, 0), 6);
	assert_int_equal(pmrep_key_read_file(path, k, sizeof(k), &len), PMREP_E_INVAL);
	/* too long */
	char longkey[100];
	memset(longkey, 'k', sizeof(longkey));
	assert_int_equal(pwrite(fd, longkey, sizeof(longkey), 0), (ssize_t)sizeof(longkey));
	assert_int_equal(pmrep_key_read_file(path, k, sizeof(k), &len), PMREP_E_INVAL);
	/* longer than the caller's buffer */
	assert_int_equal(ftruncate(fd, 32), 0);
	assert_int_equal(pmrep_key_read_file(path, k, 20, &len), PMREP_E_INVAL);
	close(fd);
	unlink(path);
	assert_int_equal(pmrep_key_read_file(path, k, sizeof(k), &len), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOENT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hmac_sha256_matches_rfc4231_case_1),
		cmocka_unit_test(hmac_refuses_keys_outside_16_to_64_bytes),
		cmocka_unit_test(nonces_are_random),
		cmocka_unit_test(pdata_roundtrip_and_fits_connect_private_data),
		cmocka_unit_test(pdata_malformed_is_refused),
		cmocka_unit_test(msg_roundtrip_of_every_type),
		cmocka_unit_test(msg_malformed_is_refused),
		cmocka_unit_test(digest_roundtrip_bounds_and_answer),
		cmocka_unit_test(auth_mac_binds_key_nonces_and_every_field),
		cmocka_unit_test(accept_mac_binds_the_descriptors_and_differs_from_auth),
		cmocka_unit_test(key_file_is_read_without_its_trailing_newline),
	};
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
