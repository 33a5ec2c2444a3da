/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * msg.h -- the replication protocol's wire formats: the connect / accept
 * private data (HELLO, CHALLENGE) and the messages (AUTH, ACCEPT, REFUSE,
 * COMMIT, COMMIT_REPLY, PERSIST, PERSIST_REPLY, CLOSE, CLOSE_REPLY), each
 * with its one encoder
 * and strict decoder in msg.c; and the MAC inputs of the handshake.
 */
#ifndef PMREP_REPL_MSG_H
#define PMREP_REPL_MSG_H

#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "auth.h"

#define REPL_PROTO_VERSION 3
#define REPL_HELLO_SIZE 56	/* HELLO: PMREP_PDATA_CONNECT_MAX */
#define REPL_CHALLENGE_SIZE 24	/* CHALLENGE */
#define REPL_PDATA_SIZE REPL_HELLO_SIZE	/* room for either */
#define REPL_SELECTOR_SIZE 20	/* HELLO's replica selector, NUL padded */
/* HELLO's admission proof: u32 time window + 8 bytes of a truncated MAC
 * that lets a target refuse a keyless HELLO before any session exists
 * (the trust-boundary work); all zero: none. This version carries it
 * and does not check it. */
#define REPL_PROOF_SIZE 12
#define REPL_MSG_HDR_SIZE 16
#define REPL_MSG_SLOT 256	/* every message fits one slot */

enum repl_pdata_type {
	REPL_PDATA_HELLO = 1,		/* initiator -> target, with connect */
	REPL_PDATA_CHALLENGE = 2,	/* target -> initiator, with accept */
};

enum repl_msg_type {
	REPL_MSG_AUTH = 1,		/* initiator -> target */
	REPL_MSG_ACCEPT = 2,		/* target -> initiator */
	REPL_MSG_REFUSE = 3,		/* target -> initiator, then disconnect */
	REPL_MSG_PERSIST = 4,		/* initiator -> target (GPSPM) */
	REPL_MSG_PERSIST_REPLY = 5,
	REPL_MSG_CLOSE = 6,		/* initiator -> target: mark consistent */
	REPL_MSG_CLOSE_REPLY = 7,
	REPL_MSG_COMMIT = 8,		/* initiator -> target: the record is durable */
	REPL_MSG_COMMIT_REPLY = 9,	/* target -> initiator: the claim is durable */
	REPL_MSG_DIGEST = 10,		/* initiator -> target: digests of regions */
	REPL_MSG_DIGEST_REPLY = 11,	/* target -> initiator: them */
	REPL_MSG_MEMBERS = 12,		/* initiator -> target: record the membership */
	REPL_MSG_MEMBERS_REPLY = 13,	/* target -> initiator: it is durable */
};

#define REPL_DIGEST_SIZE 16	/* SHA-256, truncated */
#define REPL_DIGEST_MAX 14	/* regions per DIGEST: the reply fills one slot */

/* status codes on the wire (REFUSE, *_REPLY) */
enum repl_status {
	REPL_ST_OK = 0,
	REPL_ST_AUTH = 1,		/* wrong key */
	REPL_ST_MALFORMED = 2,		/* a malformed message */
	REPL_ST_SIZE = 3,		/* data size differs */
	REPL_ST_UUID = 4,		/* another replica set */
	REPL_ST_GENERATION = 5,		/* the replica holds a newer generation */
	REPL_ST_INTERNAL = 6,		/* the target failed (logged there) */
	REPL_ST_RANGE = 7,		/* persist request outside the data area */
	REPL_ST_STATE = 8,		/* request out of order / not allowed in this session */
	REPL_ST_NO_REPLICA = 9,		/* no such replica on this target (selector) */
	REPL_ST_SPLIT_BRAIN = 10,	/* claimed at this generation by another primary, not closed */
	REPL_ST_MAX_ = REPL_ST_SPLIT_BRAIN,
};

/* AUTH intent */
enum repl_intent {
	REPL_INTENT_ATTACH = 1,		/* a mirror: COMMIT, PERSIST, CLOSE follow */
	REPL_INTENT_QUERY = 2,		/* read-only: ACCEPT, nothing is written */
};

/* COMMIT resync kind (what the mirror will copy; the target logs it) */
enum repl_resync {
	REPL_RESYNC_FULL = 1,
	REPL_RESYNC_INCREMENTAL = 2,
	/* a promotion's fence (PROTOCOL.md "Promotion"): no writer follows
	 * on this session -- the claim raises the generation, the copy keeps
	 * its position and is not incomplete */
	REPL_RESYNC_FENCE = 3,
};
/* the header flags an ACCEPT may report (replica_hdr.h's) */
#define REPL_HDR_FLAGS_KNOWN (PMREP_REPLICA_F_CONSISTENT | \
		PMREP_REPLICA_F_REMOVED | PMREP_REPLICA_F_PROMOTED | (1u << 3) | \
		(1u << 4) | (1u << 5) | (1u << 6) | (1u << 7))
/* COMMIT flags */
#define REPL_COMMIT_F_TRACKED 1u	/* the writer records a position per step */

/* target flags in ACCEPT */
#define REPL_TF_STAGING	(1u << 0)	/* serving through a staging buffer: use GPSPM */
#define REPL_TF_FRESH	(1u << 1)	/* the replica was unclaimed */
#define REPL_TF_KNOWN	(REPL_TF_STAGING | REPL_TF_FRESH)

struct repl_pdata {
	enum repl_pdata_type type;
	uint8_t nonce[REPL_NONCE_SIZE];
	/* HELLO only */
	uint32_t key_id;		/* 0: the target's (only) key */
	char selector[REPL_SELECTOR_SIZE + 1]; /* "": the target's one replica */
	uint8_t proof[REPL_PROOF_SIZE];	/* admission proof; all zero: none */
};

struct repl_auth {
	uint8_t mac[REPL_MAC_SIZE];
	uint8_t uuid[PMREP_UUID_SIZE];
	uint64_t data_size;
	uint64_t generation;
	uint64_t primary_id;		/* the mirror's record (mstate_primary_id) */
	enum repl_intent intent;
};

struct repl_accept {
	uint8_t mac[REPL_MAC_SIZE];
	uint8_t mr_desc[PMREP_MR_DESC_SIZE];
	uint8_t peer_cfg[PMREP_PEER_CFG_DESC_SIZE];
	/* the replica header as it is now (nothing was written for AUTH) */
	uint8_t uuid[PMREP_UUID_SIZE];
	uint8_t replica_id[PMREP_UUID_SIZE];
	uint64_t generation;
	uint64_t owner;
	uint64_t hdr_seq;		/* the header slot's sequence */
	uint64_t last_persist_seq;	/* the live position word */
	/* the position's writer, and the last writer's run that claimed
	 * it (replica_hdr.h) */
	uint64_t pos_gen, pos_owner, claim_floor, run_gen, run_owner;
	uint32_t hdr_flags;		/* PMREP_REPLICA_F_*, REPLICA_F_* */
	uint32_t target_flags;		/* REPL_TF_* */
	/* the header's membership (set size 0: not recorded) */
	unsigned set_size, set_quorum;
};

/* a writer's membership (PROTOCOL.md "Membership"): the replicas it
 * mirrors to, 1..PMREP_MIRROR_MAX_REPLICAS, and its quorum, 0 (all) ..
 * set_size; MEMBERS' body, part of COMMIT's */
struct repl_members {
	unsigned set_size, set_quorum;
	/* MEMBERS only: the replica leaves the set (PMREP_REPLICA_F_REMOVED) */
	bool removed;
};

struct repl_commit {
	uint8_t replica_id[PMREP_UUID_SIZE];	/* the ACCEPT's */
	uint64_t generation;
	uint64_t primary_id;
	enum repl_resync resync;
	struct repl_members members;	/* the writer's membership */
	/* the writer's run: the first persist sequence its steps carry
	 * (0 with REPL_RESYNC_FENCE) */
	uint64_t claim_floor;
	uint32_t flags;			/* REPL_COMMIT_F_* */
};

/* a copy's position as a target reports it (COMMIT_REPLY: as of the
 * claim, read after every other session was closed) */
struct repl_position {
	uint64_t gen, owner, psn;
};

struct repl_persist {
	uint64_t offset;		/* bytes into the data area */
	uint64_t length;
	/* the persist sequence of the step (PROTOCOL.md "Persist
	 * sequence"): recorded by the target after the range is durable;
	 * 0: none (a resync chunk, a persist to a replica being resynced) */
	uint64_t psn;
};

/* DIGEST: the digests of regions [offset + i * region, + region) for i <
 * count, the last one cut at the data area's end */
struct repl_digest {
	uint64_t offset;		/* bytes into the data area */
	uint64_t region;		/* bytes, a power of two */
	uint32_t count;			/* 1 .. REPL_DIGEST_MAX */
};

struct repl_digest_reply {
	uint32_t count;			/* the request's (0 with a status not OK) */
	uint8_t d[REPL_DIGEST_MAX][REPL_DIGEST_SIZE];
};

struct repl_msg {
	enum repl_msg_type type;
	enum repl_status status;
	uint64_t seq;
	union {
		struct repl_auth auth;
		struct repl_accept accept;
		struct repl_commit commit;
		struct repl_persist persist;
		struct repl_position position;	/* COMMIT_REPLY */
		uint64_t close_psn;		/* CLOSE: the writer's newest
						 * step (0: none this run) */
		struct repl_digest digest;
		struct repl_digest_reply digest_reply;
		struct repl_members members;
	} u;
};

/* encode HELLO (REPL_HELLO_SIZE bytes) or CHALLENGE (REPL_CHALLENGE_SIZE)
 * into `out` (REPL_PDATA_SIZE bytes of room); returns the length. A HELLO's
 * selector longer than REPL_SELECTOR_SIZE characters is cut there. */
size_t repl_pdata_encode(const struct repl_pdata *p, uint8_t *out);
/* PMREP_E_MALFORMED: short, bad magic / version / type, reserved set,
 * bytes after the selector's first NUL that are not NUL */
int repl_pdata_decode(const void *buf, size_t len, enum repl_pdata_type want,
		struct repl_pdata *p);

/* a replica selector (a listener's replica name): 1..REPL_SELECTOR_SIZE
 * bytes of letters, digits, '.', '_' and '-'; 0 or PMREP_E_INVAL (logged,
 * `what` naming it) */
int repl_selector_check(const char *name, const char *what);

/* encode `m` into `out` (REPL_MSG_SLOT bytes of room); returns its length */
size_t repl_msg_encode(const struct repl_msg *m, uint8_t *out);
/* PMREP_E_MALFORMED: short, bad magic / version, unknown type or status,
 * body length not the type's, reserved bytes set, unknown intent, resync
 * kind, header flags or target flags */
int repl_msg_decode(const void *buf, size_t len, struct repl_msg *m);

/*
 * The handshake MACs. The initiator's proves it holds the key, bound to
 * both nonces and to every AUTH field; the target's proves the same and
 * binds the descriptors it hands out, so neither can be swapped in flight.
 */
int repl_auth_mac(const uint8_t *key, size_t key_len,
		const uint8_t nonce_i[REPL_NONCE_SIZE],
		const uint8_t nonce_t[REPL_NONCE_SIZE],
		const struct repl_auth *a, uint8_t out[REPL_MAC_SIZE]);
int repl_accept_mac(const uint8_t *key, size_t key_len,
		const uint8_t nonce_i[REPL_NONCE_SIZE],
		const uint8_t nonce_t[REPL_NONCE_SIZE],
		const struct repl_accept *a, uint8_t out[REPL_MAC_SIZE]);

/* the PMREP_E_* an initiator reports for a target's status */
/* the first REPL_DIGEST_SIZE bytes of SHA-256 of [buf, buf + len): 0, or
 * PMREP_E_PROVIDER (OpenSSL failed; logged) */
int repl_digest(const void *buf, size_t len, uint8_t out[REPL_DIGEST_SIZE]);
/* the target's answer to DIGEST `req` over data[0, data_size): OK with
 * rep filled, RANGE (a region outside the data area), INTERNAL */
enum repl_status repl_digest_answer(const uint8_t *data, uint64_t data_size,
		const struct repl_digest *req, struct repl_digest_reply *rep);

int repl_status_to_err(enum repl_status st);
const char *repl_status_str(enum repl_status st);
/* `u` as 32 lowercase hex digits into `out`; returns out */
char *repl_uuid_hex(const uint8_t u[PMREP_UUID_SIZE],
		char out[2 * PMREP_UUID_SIZE + 1]);

#endif /* PMREP_REPL_MSG_H */
