/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_int.h -- the mirror's objects shared by its files: the
 * configuration (mirror_cfg.c), the replica state machine (replica.c:
 * connect, attach, resync, fail), the persist step on the wire
 * (replica_io.c), the mirror itself (mirror.c: new, delete, persist,
 * reconnect, status) and its asynchronous persists (mirror_async.c).
 */
#ifndef PMREP_REPL_MIRROR_INT_H
#define PMREP_REPL_MIRROR_INT_H

#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "bitmap.h"
#include "chan.h"
#include "mirror_state.h"
#include "replica_hdr.h"

#define RESYNC_CHUNK (4u << 20)	/* bytes per resync step */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define POLL_SLICE_MS 100	/* re-check the CQs at least this often */
#define ASYNC_MAX 65536		/* asynchronous requests outstanding at most */

/* an asynchronous persist request */
struct async_req {
	struct async_req *next;
	uint64_t off, len;
	void *ctx;
	int result;
	int local_err;		/* the local persist failed: the result */
};

struct req_list {
	struct async_req *head, *tail;
	size_t n;
};

struct mirror_replica_cfg {
	char *addr;
	char *port;
};

struct pmrep_mirror_cfg {
	struct mirror_replica_cfg r[PMREP_MIRROR_MAX_REPLICAS];
	unsigned n;
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len;
	uint32_t key_id;		/* sent in the HELLO */
	uint8_t uuid[PMREP_UUID_SIZE];
	uint64_t generation;
	unsigned quorum;
	uint64_t region_size;
	int timeout_ms;
	bool force_gpspm;
	bool no_tls;		/* pmrep_mirror_cfg_set_tls(false) */
	bool state_path_set;	/* pmrep_mirror_cfg_set_state_path was called */
	char *state_path;	/* its path (NULL: in memory); owned by the cfg */
};

struct replica {
	struct pmrep_mirror *m;
	unsigned idx;
	char *addr, *port;
	struct pmrep_peer *peer;
	struct pmrep_mr_local *src;	/* the local mapping, on this peer */
	struct pmrep_conn *conn;	/* NULL: not connected */
	struct pmrep_mr_remote *rmr;
	struct repl_chan ch;
	bool chan_ready;
	/* its peer's RDMA device was removed once: a new peer is verbs
	 * only (T22) */
	bool verbs_only;
	enum pmrep_replica_state state;
	enum pmrep_mirror_method method;
	struct repl_bitmap *oos;	/* OOS[idx] of the mirror's record */
	bool unknown;			/* no record of this replica: lag is everything */
	int last_error;
	char why[256];			/* the last attach failure's message */
	uint64_t resyncs, resync_bytes;
	long long next_try;		/* ms; reconnect not before */
	int backoff_ms;
	/* the one persist step in flight; GPSPM: done when both the
	 * target's reply (p_replied) and the request's own send completion
	 * (its send slot p_send free again) were seen, in either order (T26) */
	bool pending;
	bool p_replied;
	unsigned p_send;
	uint64_t seq;
	uint64_t p_off, p_len;
};

struct pmrep_mirror {
	struct pmrep_pmem *pmem;
	uint8_t *base;
	size_t size;
	struct pmrep_mirror_cfg cfg;	/* copy; replica strings owned by r[] */
	struct mirror_state *state;	/* the record (docs/PROTOCOL.md) */
	char *state_path;		/* its file (NULL: in memory) */
	uint64_t next_seq;
	unsigned n;
	struct replica r[PMREP_MIRROR_MAX_REPLICAS];
	/* asynchronous persists: one epoll fd (pmrep_mirror_get_fd) over
	 * every connected replica's CQ and event fds, an eventfd readable
	 * while completions wait to be polled, and a timerfd for the
	 * deadline of the batch in flight */
	int epfd, efd, tfd;
	struct req_list queue;		/* submitted, not posted yet */
	struct req_list batch;		/* posted together: [b_off, b_off + b_len) */
	struct req_list done;		/* completed, not polled yet */
	bool batch_active;
	uint64_t b_off, b_len;
	long long b_deadline;
};

#define CHECK_ARG(p) do { \
	if ((p) == NULL) { \
		PMREP_LOG_ERR("invalid argument: %s is NULL", #p); \
		return PMREP_E_INVAL; \
	} \
} while (0)

/* replica.c: the replica state machine */
void replica_disconnect(struct replica *r);
/* free a peer whose RDMA device was removed, with its MR and channel */
void replica_drop_peer(struct replica *r);
void replica_fail(struct replica *r, int err, uint64_t off, uint64_t len);
int replica_resync(struct replica *r, long long deadline);
int replica_attach(struct replica *r, long long connect_deadline, long long deadline);

/* replica_io.c: messages and the persist step */
int replica_wait_msg(struct replica *r, long long deadline, struct repl_msg *msg);
int replica_post_range(struct replica *r, uint64_t off, uint64_t len);
int replica_progress(struct replica *r);
void mirror_wait_pending(struct pmrep_mirror *m, long long deadline);

/* mirror.c */
unsigned mirror_required(const struct pmrep_mirror *m);
unsigned mirror_in_sync_count(const struct pmrep_mirror *m);
int mirror_step_result(const struct pmrep_mirror *m);

/* mirror_async.c */
void req_list_free(struct req_list *l);
void mirror_async_advance(struct pmrep_mirror *m);
void mirror_batch_drain(struct pmrep_mirror *m, long long deadline);
int mirror_al_clear(struct pmrep_mirror *m);

#endif /* PMREP_REPL_MIRROR_INT_H */
