/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_int.h -- the replica target's objects shared by its files: the
 * configuration (target_cfg.c), the replica it serves (target_replica.c:
 * open, lock, header updates, registration, poisoning) and the sessions
 * with their protocol (target.c), and a listener serving several
 * replicas on one endpoint (target_listener.c).
 */
#ifndef PMREP_REPL_TARGET_INT_H
#define PMREP_REPL_TARGET_INT_H

#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "common/log.h"
#include "common/testhook.h"
#include "repl/media/replica_hdr.h"
#include "repl/wire/chan.h"
#include "repl/wire/admission.h"
#include "repl/wire/tls_psk.h"
#include "target_info.h"
#include "repl/metrics/metrics.h"

#define TARGET_MAX_SESSIONS 4
#define TAG_EP UINT64_MAX
/* connection requests taken from an endpoint per turn of the event loop
 * (each take accepts up to TCP_ACCEPT_BATCH): then the sessions' turn */
#define REPL_EP_LOOKS 16

struct pmrep_target_cfg {
	char *path;
	uint64_t data_size;
	bool create;
	char *addr;
	char *port;
	/* keys[0..nkeys): the ones in use have len > 0 (admission.h) */
	struct repl_key keys[PMREP_TARGET_MAX_KEYS];
	unsigned nkeys;
	bool direct_write_to_pmem;
	bool staging;
	int timeout_ms;
	bool no_tls;			/* pmrep_target_cfg_set_tls(false) */
	char tls_names[REPL_TLS_NAMES_MAX][REPL_TLS_NAME_MAX];
	unsigned ntls_names;
};

enum session_state {
	S_FREE = 0,
	S_WAIT_AUTH,	/* accepted; waiting for AUTH until the deadline */
	S_ATTACHING,	/* ACCEPT sent (nothing written); waiting for COMMIT until the deadline */
	S_ACTIVE,	/* committed: the claim is durable; serving PERSIST, CLOSE */
	S_QUERY,	/* read-only: ACCEPT sent; COMMIT, PERSIST, CLOSE refused */
	S_CLOSING,	/* a REFUSE / last reply is on its way; closed when sent or at the deadline */
};

struct session {
	enum session_state state;
	struct repl_chan ch;
	struct pmrep_conn *conn;
	/* its access to the data area, from ACCEPT (after AUTH) to its end */
	struct pmrep_mw *mw;
	long long deadline;
	uint8_t nonce_i[REPL_NONCE_SIZE];
	uint8_t nonce_t[REPL_NONCE_SIZE];
	/* the HELLO's: key_id is the id of the key its proof verified with */
	uint32_t key_id;
	struct repl_src src;		/* the request's source address */
	char selector[REPL_SELECTOR_SIZE + 1];
	/* a listener gave it this replica's slot though its selector names
	 * none it serves (its proof verified with this replica's key): its
	 * AUTH is refused NO_REPLICA (target_listener.c) */
	bool no_replica;
	/* committed by a promotion's fence (REPL_RESYNC_FENCE): no writer */
	bool fence;
	/* the AUTH's (what a COMMIT claims the replica for) */
	uint8_t uuid[PMREP_UUID_SIZE];
	uint64_t generation;
	uint64_t primary_id;
	struct target_sinfo info;	/* target_info.c: id, peer, persists */
};

struct pmrep_target {
	struct pmrep_target_cfg cfg;
	/* a replica of a listener (pmrep_listener_add_target): the peer and
	 * the endpoint are the listener's (borrowed), its epfd is in the
	 * listener's; NULL: a target of its own (pmrep_target_new) */
	struct pmrep_listener *listener;
	struct pmrep_target *next;	/* the listener's list */
	/* the name a HELLO's selector gives: the path's basename, or the
	 * listener's replica name */
	char name[REPL_SELECTOR_SIZE + 1];
	struct pmrep_pmem *pmem;
	int lock_fd;			/* holds the replica's flock: -1 none */
	bool created;			/* pmrep_target_new created the file: a
					 * failed start removes it again */
	uint8_t *base;			/* the mapping: header ... */
	uint8_t *data;			/* ... and data area */
	pmrep_pmem_persist_fn *persist;	/* for the data MR (direct mode) */
	struct replica_hdr hdr;		/* the newest state (what is durable) */
	bool poisoned;			/* a persist failed: nothing is confirmed any more */
	struct pmrep_peer *peer;
	struct pmrep_peer_cfg *peer_cfg;
	struct pmrep_conn_cfg *conn_cfg;
	struct repl_tls_target tls;	/* the TLS PSK look-up (conn_cfg's find arg) */
	struct pmrep_ep *ep;
	/* the data area, reachable remotely only through the sessions'
	 * windows (PMREP_MR_USAGE_MW_BIND); data_mr_usage: the remote usages
	 * its registration got (an attach's window gives them) */
	struct pmrep_mr_local *data_mr;
	int data_mr_usage;
	uint8_t *staging;		/* NULL: direct */
	enum pmrep_target_mode mode;
	int epfd;
	/* T22: the endpoint's RDMA device was removed: no peer, no MRs,
	 * no endpoint until it is back (target_relisten) */
	bool ep_lost;
	uint16_t port;			/* the port listened on */
	long long relisten_at;		/* next try, repl_now_ms() */
	struct session s[TARGET_MAX_SESSIONS];
	struct pmrep_target_stats stats;
	struct repl_replay admit_replay;	/* admission.c */
	struct repl_ratelog admit_log;
	struct target_tinfo info;	/* target_info.c: the event callback */
	/* pmrep_target_get_metrics: refusals by reason (every one is also
	 * in stats.sessions_refused), GPSPM persists' bytes and times */
	struct {
		uint64_t refusals[MR_N_];
		uint64_t persist_bytes;
		struct metrics_hist lat;
	} mx;
};

/* a listener: one endpoint serving several replicas (target_listener.c) */
struct pmrep_listener {
	struct pmrep_target_cfg *cfg;	/* address, port, timeout, TLS */
	struct pmrep_peer *peer;
	struct pmrep_conn_cfg *conn_cfg;
	struct repl_tls_target tls;	/* the chain's head: its TLS names */
	struct pmrep_ep *ep;
	int epfd;			/* the ep's fd, every replica's epfd */
	uint16_t port;
	bool ep_lost;			/* T22, as a target's */
	long long relisten_at;
	struct pmrep_target *targets;	/* in the order added */
	unsigned ntargets;
	struct pmrep_listener_stats stats;
};

/* target.c: the pieces a listener drives */
int target_open(const struct pmrep_target_cfg *cfg,
		struct pmrep_target **target_ptr);
int target_attach_peer(struct pmrep_target *t, struct pmrep_peer *peer);
void target_free(struct pmrep_target *t);
void target_accept(struct pmrep_target *t, struct pmrep_conn_req *req,
		const struct repl_pdata *hello, bool no_replica);
void target_serve(struct pmrep_target *t);
int target_wait_limit(const struct pmrep_target *t, int timeout_ms);
void target_drop_device(struct pmrep_target *t);
/* target_listener.c */
void listener_detach(struct pmrep_listener *l, struct pmrep_target *t);
void listener_no_replica_detail(const struct pmrep_listener *l,
		const char *selector, char *buf, size_t len);

/* target_admission.c: the admission of a connection request whose HELLO decoded:
 * its session slot (the caller makes the session; s->src and s->key_id
 * set), or NULL: the request was rejected (*req NULL), counted, logged */
struct session *target_admit(struct pmrep_target *t,
		struct pmrep_conn_req **req, const struct repl_pdata *hello);
/* target.c: a refusal counted: sessions_refused, last_refusal (err),
 * the metrics' reason */
void target_count_refusal(struct pmrep_target *t, enum metrics_refusal why,
		int err);
/* target.c */
void target_session_close(struct pmrep_target *t, struct session *s,
		const char *why);
/* target.c: a session's end and refusals (target_session.c uses them) */
void target_session_revoke(struct pmrep_target *t, struct session *s);
void target_refuse(struct pmrep_target *t, struct session *s,
		enum repl_status st, const char *detail);
void target_reply_and_close(struct pmrep_target *t, struct session *s,
		const struct repl_msg *r);
/* the name a HELLO's selector must give: the replica path's basename */
const char *target_replica_name(const struct pmrep_target *t);
/* target_session.c: what the session's connection has (one turn) */
void target_session_progress(struct pmrep_target *t, struct session *s);

/* target_replica.c */
int target_hdr_update(struct pmrep_target *t, const struct replica_hdr *next);
void target_poison(struct pmrep_target *t, int err, const char *what);
bool target_poisoned(struct pmrep_target *t);
void target_unlock_replica(struct pmrep_target *t);
void target_close_pmem_keep_error(struct pmrep_target *t);
int target_open_replica(struct pmrep_target *t);
int target_register_data(struct pmrep_target *t);

#endif /* PMREP_REPL_TARGET_INT_H */
