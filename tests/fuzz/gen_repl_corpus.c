/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gen_repl_corpus.c -- writes the seed corpus of the replication fuzz
 * targets (tests/fuzz/corpus/{repl_hdr,repl_msg,descriptors}) with the
 * library's own encoders, so every seed is a valid encoding. Run it again
 * after a format change; CI only reads the files. tests/fuzz/run.sh builds
 * it (so it keeps compiling) as <out>/gen_repl_corpus; then
 *   <out>/gen_repl_corpus tests/fuzz/corpus
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "repl/wire/admission.h"
#include "repl/wire/msg.h"
#include "repl/media/replica_hdr.h"
#include "transport/provider.h"

static const char *root;

static void
emit(const char *target, const char *name, const void *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, target);
	(void) mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void
fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 31 + seed);
}

static void
hdrs(void)
{
	static uint8_t blk[REPLICA_HDR_BLOCK];
	struct replica_hdr h = { .data_size = 1 << 20, .seq = 1 };
	fill(h.replica_id, sizeof(h.replica_id), 9);
	memset(blk, 0, sizeof(blk));
	replica_hdr_encode(&h, blk);
	emit("repl_hdr", "fresh", blk, sizeof(blk));
	/* claimed in the slot at 2048, the fresh state still at 0 */
	struct replica_hdr c = h;
	fill(c.uuid, sizeof(c.uuid), 7);
	c.seq = 2;
	c.generation = 42;
	c.owner = 0x0123456789abcdefull;
	c.set_size = 2;
	c.set_quorum = 1;
	c.flags = PMREP_REPLICA_F_CONSISTENT;
	replica_hdr_encode(&c, blk + REPLICA_HDR_SLOT_OFF(1));
	emit("repl_hdr", "claimed_consistent", blk, sizeof(blk));
	/* with a position (writer 41 / 0x55, the second word live) and the
	 * claim's floor; both position words set */
	{
		static uint8_t pb[REPLICA_HDR_BLOCK];
		memcpy(pb, blk, sizeof(pb));
		struct replica_hdr q = c;
		q.seq = 3;
		q.pos_gen = 41;
		q.pos_owner = 0x55;
		q.claim_floor = 42ull << REPL_PSN_EPOCH_SHIFT;
		q.flags = PMREP_REPLICA_F_CONSISTENT | REPLICA_F_TRACKED |
			REPLICA_F_POSW1;
		replica_hdr_encode(&q, pb);
		for (int i = 0; i < 8; i++) {
			pb[REPLICA_PSN_OFF + i] = (uint8_t)(((40ull << 40) | 9) >> (8 * i));
			pb[REPLICA_PSN1_OFF + i] = (uint8_t)(((41ull << 40) | 7) >> (8 * i));
		}
		emit("repl_hdr", "position", pb, sizeof(pb));
	}
	/* the newer slot torn: the older one stands */
	blk[REPLICA_HDR_SLOT_OFF(1) + 75] ^= 1;
	emit("repl_hdr", "torn_newer_slot", blk, sizeof(blk));
	memset(blk, 0, sizeof(blk));
	h.data_size = UINT64_MAX - PMREP_REPLICA_DATA_OFFSET;
	replica_hdr_encode(&h, blk + REPLICA_HDR_SLOT_OFF(1));
	emit("repl_hdr", "huge", blk, sizeof(blk));
	/* a version 1 header (one slot at 0) */
	memset(blk, 0, sizeof(blk));
	memcpy(blk, "PMREPRPL", 8);
	blk[8] = 1;
	blk[10] = 128;
	blk[12] = PMREP_REPLICA_F_CONSISTENT;
	fill(blk + 16, PMREP_UUID_SIZE, 7);
	blk[33] = 0x10;			/* data offset 4096 */
	blk[42] = 0x10;			/* data size 1 MiB */
	blk[48] = 3;			/* generation */
	blk[56] = 0xef;			/* attach id */
	uint64_t cs = replica_fletcher64(blk, 120);
	for (int i = 0; i < 8; i++)
		blk[120 + i] = (uint8_t)(cs >> (8 * i));
	emit("repl_hdr", "v1", blk, sizeof(blk));
}

static void
msgs(void)
{
	uint8_t out[REPL_MSG_SLOT];
	struct repl_pdata p = { .type = REPL_PDATA_HELLO };
	fill(p.nonce, sizeof(p.nonce), 1);
	emit("repl_msg", "hello", out, repl_pdata_encode(&p, out));
	p.key_id = 3;
	strcpy(p.selector, "replica-a");
	emit("repl_msg", "hello_selector", out, repl_pdata_encode(&p, out));
	/* with an admission proof (made with the fuzz target's key of id 7;
	 * never admitted there: a window around this one is tried, but the
	 * key id 3 is not the proof's) */
	static const uint8_t k7[16] = "fuzz-adm-key-7-x";
	if (repl_admit_proof(k7, sizeof(k7), 59000000, 3, p.nonce, p.selector,
			p.proof) != 0)
		exit(1);
	emit("repl_msg", "hello_proof", out, repl_pdata_encode(&p, out));
	memset(p.proof, 0, sizeof(p.proof));
	p.type = REPL_PDATA_CHALLENGE;
	emit("repl_msg", "challenge", out, repl_pdata_encode(&p, out));

	struct repl_msg m = { .type = REPL_MSG_AUTH, .seq = 1 };
	fill(m.u.auth.mac, sizeof(m.u.auth.mac), 2);
	fill(m.u.auth.uuid, sizeof(m.u.auth.uuid), 3);
	m.u.auth.data_size = 1 << 20;
	m.u.auth.generation = 3;
	m.u.auth.primary_id = 0xfeedull;
	m.u.auth.intent = REPL_INTENT_ATTACH;
	emit("repl_msg", "auth", out, repl_msg_encode(&m, out));
	m.u.auth.intent = REPL_INTENT_QUERY;
	emit("repl_msg", "auth_query", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_ACCEPT;
	m.seq = 2;
	fill(m.u.accept.mac, sizeof(m.u.accept.mac), 4);
	fill(m.u.accept.mr_desc, sizeof(m.u.accept.mr_desc), 5);
	fill(m.u.accept.peer_cfg, sizeof(m.u.accept.peer_cfg), 6);
	fill(m.u.accept.uuid, sizeof(m.u.accept.uuid), 3);
	fill(m.u.accept.replica_id, sizeof(m.u.accept.replica_id), 8);
	m.u.accept.generation = 2;
	m.u.accept.owner = 0xbeefull;
	m.u.accept.hdr_seq = 7;
	m.u.accept.hdr_flags = PMREP_REPLICA_F_CONSISTENT;
	m.u.accept.target_flags = REPL_TF_STAGING | REPL_TF_FRESH;
	m.u.accept.set_size = 3;
	m.u.accept.set_quorum = 2;
	m.u.accept.last_persist_seq = (1ull << 40) | 5;
	m.u.accept.pos_gen = 1;
	m.u.accept.pos_owner = 0xfeedull;
	m.u.accept.claim_floor = 2ull << 40;
	emit("repl_msg", "accept", out, repl_msg_encode(&m, out));
	m.u.accept.hdr_flags |= REPLICA_F_TRACKED | REPLICA_F_POSW1 |
		REPLICA_F_PRIMARY;
	emit("repl_msg", "accept_position_flags", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_COMMIT;
	m.seq = 3;
	fill(m.u.commit.replica_id, sizeof(m.u.commit.replica_id), 8);
	m.u.commit.generation = 2;
	m.u.commit.primary_id = 0xfeedull;
	m.u.commit.resync = REPL_RESYNC_FULL;
	m.u.commit.members.set_size = 2;
	m.u.commit.claim_floor = 2ull << 40;	/* a writer's: nonzero */
	m.u.commit.flags = REPL_COMMIT_F_TRACKED;
	emit("repl_msg", "commit", out, repl_msg_encode(&m, out));
	/* a promotion's fence: no claim floor */
	m.u.commit.resync = REPL_RESYNC_FENCE;
	m.u.commit.claim_floor = 0;
	m.u.commit.flags = 0;
	emit("repl_msg", "commit_fence", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_COMMIT_REPLY;
	m.seq = 3;
	m.u.position.gen = 1;
	m.u.position.owner = 0xfeedull;
	m.u.position.psn = (1ull << 40) | 5;
	emit("repl_msg", "commit_reply", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_CLOSE;
	m.seq = 6;
	m.u.close_psn = (2ull << 40) | 17;
	emit("repl_msg", "close", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_MEMBERS;
	m.seq = 5;
	m.u.members.set_size = 3;
	m.u.members.set_quorum = 1;
	emit("repl_msg", "members", out, repl_msg_encode(&m, out));
	m.u.members.removed = true;
	emit("repl_msg", "members_removed", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_PERSIST;
	m.seq = 3;
	m.u.persist.offset = 4096;
	m.u.persist.length = 65536;
	emit("repl_msg", "persist", out, repl_msg_encode(&m, out));
	m.u.persist.psn = (2ull << 40) | 1;
	emit("repl_msg", "persist_psn", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_DIGEST;
	m.seq = 4;
	m.u.digest.offset = 65536;
	m.u.digest.region = 65536;
	m.u.digest.count = 14;
	emit("repl_msg", "digest", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_DIGEST_REPLY;
	m.seq = 4;
	m.u.digest_reply.count = 3;
	fill(m.u.digest_reply.d[0], 3 * REPL_DIGEST_SIZE, 9);
	emit("repl_msg", "digest_reply", out, repl_msg_encode(&m, out));

	static const struct { enum repl_msg_type t; enum repl_status st; const char *name; } bare[] = {
		{ REPL_MSG_REFUSE, REPL_ST_GENERATION, "refuse" },
		{ REPL_MSG_REFUSE, REPL_ST_NO_REPLICA, "refuse_no_replica" },
		{ REPL_MSG_COMMIT_REPLY, REPL_ST_GENERATION, "commit_reply_refused" },
		{ REPL_MSG_PERSIST_REPLY, REPL_ST_OK, "persist_reply" },
		{ REPL_MSG_CLOSE_REPLY, REPL_ST_STATE, "close_reply" },
		{ REPL_MSG_MEMBERS_REPLY, REPL_ST_OK, "members_reply" },
	};
	for (size_t i = 0; i < sizeof(bare) / sizeof(bare[0]); i++) {
		memset(&m, 0, sizeof(m));
		m.type = bare[i].t;
		m.status = bare[i].st;
		m.seq = 100 + i;
		emit("repl_msg", bare[i].name, out, repl_msg_encode(&m, out));
	}
}

static void
descs(void)
{
	struct pmrep_peer peer;
	memset(&peer, 0, sizeof(peer));
	struct pmrep_mr_local mr;
	memset(&mr, 0, sizeof(mr));
	mr.peer = &peer;
	uint8_t out[PMREP_MR_DESC_SIZE];

	peer.provider = PMREP_PROVIDER_TCP;
	mr.raddr = 0x7f0000001000ull;
	mr.size = 1 << 20;
	mr.rkey = 0x1234;
	mr.usage = PMREP_MR_USAGE_WRITE_DST | PMREP_MR_USAGE_READ_SRC |
		PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT;
	(void) pmrep_mr_get_descriptor(&mr, out);
	emit("descriptors", "mr_tcp", out, sizeof(out));
	peer.provider = PMREP_PROVIDER_VERBS;
	mr.usage = PMREP_MR_USAGE_ALL;
	mr.raddr = UINT64_MAX - 4096;
	mr.size = 4096;
	(void) pmrep_mr_get_descriptor(&mr, out);
	emit("descriptors", "mr_verbs_top", out, sizeof(out));

	struct pmrep_peer_cfg *cfg;
	uint8_t pc[PMREP_PEER_CFG_DESC_SIZE];
	if (pmrep_peer_cfg_new(&cfg) != 0)
		exit(1);
	(void) pmrep_peer_cfg_get_descriptor(cfg, pc);
	emit("descriptors", "peer_cfg", pc, sizeof(pc));
	(void) pmrep_peer_cfg_set_direct_write_to_pmem(cfg, true);
	(void) pmrep_peer_cfg_get_descriptor(cfg, pc);
	emit("descriptors", "peer_cfg_direct", pc, sizeof(pc));
	(void) pmrep_peer_cfg_delete(&cfg);
}

int
main(int argc, char *argv[])
{
	root = argc > 1 ? argv[1] : "tests/fuzz/corpus";
	hdrs();
	msgs();
	descs();
	return 0;
}
