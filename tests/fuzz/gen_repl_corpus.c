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

#include "repl/msg.h"
#include "repl/replica_hdr.h"
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
	uint8_t out[REPLICA_HDR_ENC_SIZE];
	struct replica_hdr h = { .data_size = 1 << 20, .generation = 1 };
	replica_hdr_encode(&h, out);
	emit("repl_hdr", "fresh", out, sizeof(out));
	fill(h.uuid, sizeof(h.uuid), 7);
	h.generation = 42;
	h.attach_id = 0x0123456789abcdefull;
	h.flags = PMREP_REPLICA_F_CONSISTENT;
	replica_hdr_encode(&h, out);
	emit("repl_hdr", "claimed_consistent", out, sizeof(out));
	h.flags = 0;
	h.data_size = UINT64_MAX - PMREP_REPLICA_DATA_OFFSET;
	replica_hdr_encode(&h, out);
	emit("repl_hdr", "huge", out, sizeof(out));
}

static void
msgs(void)
{
	uint8_t out[REPL_MSG_SLOT];
	struct repl_pdata p = { .type = REPL_PDATA_HELLO };
	fill(p.nonce, sizeof(p.nonce), 1);
	repl_pdata_encode(&p, out);
	emit("repl_msg", "hello", out, REPL_PDATA_SIZE);
	p.type = REPL_PDATA_CHALLENGE;
	repl_pdata_encode(&p, out);
	emit("repl_msg", "challenge", out, REPL_PDATA_SIZE);

	struct repl_msg m = { .type = REPL_MSG_AUTH, .seq = 1 };
	fill(m.u.auth.mac, sizeof(m.u.auth.mac), 2);
	fill(m.u.auth.uuid, sizeof(m.u.auth.uuid), 3);
	m.u.auth.data_size = 1 << 20;
	m.u.auth.generation = 3;
	m.u.auth.session_id = 0xfeedull;
	emit("repl_msg", "auth", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_ACCEPT;
	m.seq = 2;
	fill(m.u.accept.mac, sizeof(m.u.accept.mac), 4);
	fill(m.u.accept.mr_desc, sizeof(m.u.accept.mr_desc), 5);
	fill(m.u.accept.peer_cfg, sizeof(m.u.accept.peer_cfg), 6);
	m.u.accept.prev_generation = 2;
	m.u.accept.prev_attach_id = 0xbeefull;
	m.u.accept.prev_flags = PMREP_REPLICA_F_CONSISTENT;
	m.u.accept.target_flags = REPL_TF_STAGING | REPL_TF_FRESH;
	emit("repl_msg", "accept", out, repl_msg_encode(&m, out));

	memset(&m, 0, sizeof(m));
	m.type = REPL_MSG_PERSIST;
	m.seq = 3;
	m.u.persist.offset = 4096;
	m.u.persist.length = 65536;
	emit("repl_msg", "persist", out, repl_msg_encode(&m, out));

	static const struct { enum repl_msg_type t; enum repl_status st; const char *name; } bare[] = {
		{ REPL_MSG_REFUSE, REPL_ST_GENERATION, "refuse" },
		{ REPL_MSG_PERSIST_REPLY, REPL_ST_OK, "persist_reply" },
		{ REPL_MSG_CLOSE, REPL_ST_OK, "close" },
		{ REPL_MSG_CLOSE_REPLY, REPL_ST_STATE, "close_reply" },
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
