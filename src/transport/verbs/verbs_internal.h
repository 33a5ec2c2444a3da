/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_internal.h -- the verbs provider's objects (each embeds its generic
 * struct first) and the helpers its files share. Nothing here is visible
 * outside src/transport/verbs.
 */
#ifndef PMREP_VERBS_INTERNAL_H
#define PMREP_VERBS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "pmrep_config.h"
#include "common/log.h"
#include "transport/provider.h"

/*
 * device_cap_flags_ex bits that rdma-core 44 has no names for (the kernel
 * reports them; newer rdma-core calls them IBV_DEVICE_FLUSH_GLOBAL,
 * _FLUSH_PERSISTENT and _ATOMIC_WRITE).
 */
#define VERBS_DEV_CAP_FLUSH_GLOBAL	(1ULL << 38)
#define VERBS_DEV_CAP_FLUSH_PERSISTENT	(1ULL << 39)
#define VERBS_DEV_CAP_ATOMIC_WRITE	(1ULL << 40)

/* connection parameters pmrep asks of rdma_cm (3-bit fields); the
 * transport retries on ACK timeout follow from the cfg timeout (T23:
 * verbs_rc_timing) */
#define VERBS_RNR_RETRY_COUNT	6	/* bounded (7 would mean forever); ODP needs > 0 */
#define VERBS_RNR_RETRY_INFINITE 7
/* the local ACK timeout exponent (5 bits; 0 = never retransmit) */
#define VERBS_ACK_TIMEOUT_EXP_MIN 1
#define VERBS_ACK_TIMEOUT_EXP_MAX 31
/*
 * The RC timing a cfg timeout of timeout_ms (> 0) gives (T23, the formula
 * is pmrep_conn_rc_timing's in transport.h): ack_timeout_exp, its
 * ack_timeout_us, retry_count and detect_us; rnr_retry_count is
 * VERBS_RNR_RETRY_COUNT.
 */
void verbs_rc_timing(int timeout_ms, struct pmrep_conn_rc_timing *t);
#define VERBS_LISTEN_BACKLOG	16
#define VERBS_BACKOFF_CAP_MS	2000
/* bytes of inline data a QP must take: the fallback atomic write */
#define VERBS_MAX_INLINE	8
/* an ESTABLISHED conn's idle check ticks every T / VERBS_TICK_DIV
 * (T = the cfg timeout; verbs_conn_sm.c on_tick) */
#define VERBS_TICK_DIV		4

/* ------------------------------------------------------------------ peer */

struct verbs_conn;
struct verbs_mr;
struct verbs_mw;
struct verbs_ep;
struct verbs_srq;
struct verbs_comp_channel;

struct verbs_peer {
	struct pmrep_peer base;
	struct ibv_context *ctx;	/* not owned; NULL once its device is released */
	/*
	 * Device removal (T22, verbs_device.c): `removed` is set, and every
	 * verbs object of the peer released, under dev_lock held for
	 * writing. The calls that use those objects (posts, CQ polls and
	 * event takes, SRQ receives, making objects) hold it for reading
	 * for their short, non-blocking part. Lock order: Peers_lock,
	 * dev_lock, lock, a conn's sm_lock.
	 */
	pthread_rwlock_t dev_lock;
	atomic_bool removed;
	struct ibv_pd *pd;
	uint8_t max_rd_atom;		/* responder resources we can give */
	uint8_t max_init_rd_atom;	/* reads we can have outstanding */
	/* where flush reads land: 8 bytes of junk shared by every conn */
	uint64_t *sink;
	struct ibv_mr *sink_mr;
	/* registry of conns, for async events (QP / CQ / device fatal) */
	pthread_mutex_t lock;
	struct verbs_conn *conns;
	/* registries of the peer's other objects, for device removal */
	struct verbs_mr *mrs;
	struct verbs_mw *mws;		/* windows (verbs_mw.c) */
	struct verbs_ep *eps;
	struct verbs_srq *srqs;
	struct verbs_comp_channel *chans;
	struct verbs_peer *next;	/* the process's list of verbs peers */
	uint8_t nports;			/* phys_port_cnt */
	bool cm_ctx;			/* ctx is librdmacm's (pmrep_peer_open) */
	/* DEVX event channel (verbs_devx.c), made at the first subscribe */
	struct mlx5dv_devx_event_channel *devx_ch;
};

static inline struct verbs_peer *
verbs_peer(struct pmrep_peer *peer)
{
	return (struct verbs_peer *)peer;
}

void verbs_peer_register_conn(struct verbs_peer *peer, struct verbs_conn *conn);
void verbs_peer_unregister_conn(struct verbs_peer *peer, struct verbs_conn *conn);
/* mark every conn of every peer on this peer's device lost (any thread) */
void verbs_peer_mark_device_lost(struct verbs_peer *peer, const char *why);
/* destroy the DEVX event channel, if any (peer delete) */
void verbs_devx_destroy(struct verbs_peer *peer);

/*
 * Device removal (T22, verbs_device.c). verbs_device_removed: the device
 * of `peer` is gone (an rdma_cm DEVICE_REMOVAL, IBV_EVENT_DEVICE_FATAL):
 * release every verbs object of every peer on it -- conns (QP, CQs,
 * their channels, id), listeners' ids, SRQs, completion channels, MRs,
 * the flush sink, PDs, the DEVX channel -- then let librdmacm close its
 * context of the device. The pmrep objects stay (they report the loss).
 * Call it holding no pmrep lock. Idempotent.
 */
void verbs_device_removed(struct verbs_peer *peer, const char *why);
/* make librdmacm's context `ctx` of a removed device let go of the
 * device's files (verbs_device.c); `name`: the device's, for logs */
void verbs_cm_ctx_let_go(struct ibv_context *ctx, const char *name);
/* does libibverbs still list the peer's device? (true when unsure) */
bool verbs_device_listed(const struct verbs_peer *peer);
/* release every verbs object of `p` (dev_lock held for writing) */
void verbs_peer_release_locked(struct verbs_peer *p);
/* the peer's device was released: PMREP_E_DEVICE_REMOVED, logged */
int verbs_peer_gone(const struct verbs_peer *peer, const char *what);
/* registries (peer->lock) */
void verbs_peer_add_mr(struct verbs_peer *peer, struct verbs_mr *mr);
void verbs_peer_del_mr(struct verbs_peer *peer, struct verbs_mr *mr);
void verbs_peer_add_ep(struct verbs_peer *peer, struct verbs_ep *ep);
void verbs_peer_del_ep(struct verbs_peer *peer, struct verbs_ep *ep);
void verbs_peer_add_srq(struct verbs_peer *peer, struct verbs_srq *srq);
void verbs_peer_del_srq(struct verbs_peer *peer, struct verbs_srq *srq);
void verbs_peer_add_chan(struct verbs_peer *peer, struct verbs_comp_channel *ch);
void verbs_peer_del_chan(struct verbs_peer *peer, struct verbs_comp_channel *ch);

static inline void
verbs_dev_rdlock(struct verbs_peer *peer)
{
	pthread_rwlock_rdlock(&peer->dev_lock);
}

static inline void
verbs_dev_unlock(struct verbs_peer *peer)
{
	pthread_rwlock_unlock(&peer->dev_lock);
}

/* -------------------------------------------------------------------- MR */

struct verbs_mr {
	struct pmrep_mr_local base;
	struct ibv_mr *mr;		/* NULL once its device is released */
	uint32_t lkey;			/* mr->lkey, kept: posts never read mr */
	bool odp;			/* registered on demand (fsdax & co.) */
	struct verbs_mr *reg_next, *reg_prev;	/* peer's registry */
};

/* the ibv access flags a region registered for `usage` gets */
int verbs_mr_access(const struct verbs_peer *peer, int usage);

static inline uint32_t
verbs_mr_lkey(const struct pmrep_mr_local *mr)
{
	return ((const struct verbs_mr *)mr)->lkey;
}

/* ---------------------------------------------- work request bookkeeping */

/*
 * wr_id layout: bit 63 -- a receive; bit 62 -- a drain marker posted by
 * conn delete (never reported); bits 32..61 -- the generation of the
 * queue incarnation that posted it (T25); bits 0..31 -- the slot that
 * holds the request's op_context and op.
 *
 * Generations (T25): every send ring / receive table takes a fresh
 * process-wide generation when it is made and whenever its QP is replaced
 * (a connect retry: verbs_sq_ring_reset / verbs_rq_table_reset). A
 * completion whose wr_id carries another generation belongs to an earlier
 * incarnation -- an earlier attempt's QP, maybe with the same QP number,
 * or a completion polled before the QP was replaced and looked at after --
 * and is counted (verbs_cq.stale) and dropped, never applied: it can
 * neither complete nor free the slot of a request of the new incarnation.
 */
#define VERBS_WR_RECV	(1ULL << 63)
#define VERBS_WR_DRAIN	(1ULL << 62)
#define VERBS_WR_SLOT(wr_id)	((uint32_t)((wr_id) & 0xffffffffu))
#define VERBS_WR_GEN_SHIFT	32
#define VERBS_WR_GEN_MASK	0x3fffffffu	/* 30 bits */
#define VERBS_WR_GEN(wr_id) \
	((uint32_t)((wr_id) >> VERBS_WR_GEN_SHIFT) & VERBS_WR_GEN_MASK)
/* a fresh generation (never 0, wraps after 2^30 - 1 incarnations) */
uint32_t verbs_wr_next_gen(void);
struct verbs_sq_ring;
struct verbs_rq_table;
/* does wr_id carry the ring's / table's generation of now? */
bool verbs_sq_ring_current(struct verbs_sq_ring *ring, uint64_t wr_id);
bool verbs_rq_table_current(struct verbs_rq_table *t, uint64_t wr_id);

/* what completing a wr_id found */
#define VERBS_WR_DONE		1	/* outstanding: completed now */
#define VERBS_WR_PIECE		0	/* a split request's earlier piece */
#define VERBS_WR_UNKNOWN	(-1)	/* not outstanding */
#define VERBS_WR_STALE		(-2)	/* an earlier incarnation's */

struct verbs_slot {
	const void *op_context;
	uint8_t op;			/* enum pmrep_op */
	/* send rings: a piece of a split request other than its last (its
	 * completion is never reported), and the error status one of those
	 * pieces met, kept on the last piece's slot (0: none) */
	bool piece;
	uint8_t piece_err;
	uint32_t next_free;		/* receive tables only */
};

/*
 * The send queue of an RC QP completes in order, and a completion of a
 * request implies every earlier one (signalled or not) has completed. So a
 * ring of sq_size slots mirrors the SQ: a completion for slot i frees every
 * slot up to i. The ring is full exactly when the SQ is.
 */
struct verbs_sq_ring {
	pthread_mutex_t lock;
	struct verbs_slot *slots;
	uint32_t size, head, count;
	uint32_t gen;			/* the incarnation's (T25) */
};

/*
 * Receives (of a QP's RQ or an SRQ) always complete one by one, in any
 * order across QPs of an SRQ: a table with a free list.
 */
struct verbs_rq_table {
	pthread_mutex_t lock;
	struct verbs_slot *slots;
	uint32_t size, free_head, used;
	uint32_t gen;			/* the incarnation's (T25) */
};

int verbs_sq_ring_init(struct verbs_sq_ring *ring, uint32_t size);
void verbs_sq_ring_fini(struct verbs_sq_ring *ring);
/* take a slot; PMREP_E_AGAIN when the ring (the SQ) is full */
int verbs_sq_ring_get(struct verbs_sq_ring *ring, enum pmrep_op op,
		const void *op_context, uint64_t *wr_id);
/* give back the n slots taken last (their post failed or never happened) */
void verbs_sq_ring_unget(struct verbs_sq_ring *ring, uint32_t n);
/* a completion for wr_id: its slot's context / op; false if not
 * outstanding or of an earlier incarnation (another generation) */
bool verbs_sq_ring_complete(struct verbs_sq_ring *ring, uint64_t wr_id,
		const void **op_context, enum pmrep_op *op);
/*
 * The same for a completion the user may see: VERBS_WR_DONE -- report it
 * (*status: a piece's error before the last piece's own status);
 * VERBS_WR_PIECE -- a non-last piece of a split request, not reported (its
 * error status, if any, goes to the request's last piece);
 * VERBS_WR_UNKNOWN -- not outstanding; VERBS_WR_STALE -- another
 * generation's (nothing is freed).
 */
int verbs_sq_ring_complete_wc(struct verbs_sq_ring *ring, uint64_t wr_id,
		int wc_status, const void **op_context, enum pmrep_op *op,
		int *status);
/* the slot of wr_id (just taken) is a non-last piece of a split request */
void verbs_sq_ring_set_piece(struct verbs_sq_ring *ring, uint64_t wr_id);
/* empty, with a fresh generation: the QP behind it was replaced */
void verbs_sq_ring_reset(struct verbs_sq_ring *ring);
uint32_t verbs_sq_ring_outstanding(struct verbs_sq_ring *ring);

int verbs_rq_table_init(struct verbs_rq_table *t, uint32_t size);
void verbs_rq_table_fini(struct verbs_rq_table *t);
int verbs_rq_table_get(struct verbs_rq_table *t, const void *op_context,
		uint64_t *wr_id);
void verbs_rq_table_put(struct verbs_rq_table *t, uint64_t wr_id);
/* VERBS_WR_DONE (*op_context set), VERBS_WR_UNKNOWN, VERBS_WR_STALE */
int verbs_rq_table_complete(struct verbs_rq_table *t, uint64_t wr_id,
		const void **op_context);
/* empty, with a fresh generation: the QP behind it was replaced */
void verbs_rq_table_reset(struct verbs_rq_table *t);
uint32_t verbs_rq_table_outstanding(struct verbs_rq_table *t);

/*
 * Requests held by PMREP_F_MORE (verbs_ops.c), posted together, in order,
 * behind one doorbell. Each has its send-queue slot (wr_id) already, and
 * its own copy of what the device reads at post time: the SGE, and the
 * inline bytes / atomic value (a caller's buffer need not outlive the
 * call). `wr.next` links them for ibv_post_send. A chain holding a native
 * op (ATOMIC WRITE, FLUSH: extended QP API only) is posted by replaying
 * every entry through ibv_wr_* inside one ibv_wr_start .. ibv_wr_complete.
 */
#define VERBS_HOLD_MAX PMREP_MORE_MAX

/*
 * A native FLUSH names its range's length in 32 bits on the wire (the
 * RETH's DMA length): ibv_wr_flush of 4 GiB or more would be cut. A range
 * of VERBS_FLUSH_PIECE_MAX bytes or more is flushed as contiguous pieces
 * of at most that (below 2^32, a multiple of 4 KiB so that every piece but
 * the last keeps the range's page offset), posted together behind one
 * doorbell, only the last signalled; the request is reported once, by its
 * last piece (a piece's error status first). More than
 * VERBS_FLUSH_PIECES_MAX pieces (a range of 64 GiB or more): one flush of
 * the whole MR (IBV_FLUSH_MR), a superset of the range.
 */
#define VERBS_FLUSH_PIECE_MAX	0xfffff000ULL
#define VERBS_FLUSH_PIECES_MAX	16
/* what the hold array takes: a full MORE chain and a split flush */
#define VERBS_HOLD_CAP		(VERBS_HOLD_MAX + VERBS_FLUSH_PIECES_MAX)

struct verbs_flush_piece {
	uint64_t raddr;
	uint64_t len;
};
/*
 * Split [raddr, raddr + len) (len > 0) into pieces of at most
 * VERBS_FLUSH_PIECE_MAX bytes, in order, contiguous: their number (1 when
 * it fits in one), or 0 when it would take more than `max` (then nothing
 * is written past out[max - 1]).
 */
unsigned verbs_flush_split(uint64_t raddr, uint64_t len,
		struct verbs_flush_piece *out, unsigned max);

enum verbs_held_kind {
	VERBS_HELD_SEND_WR = 0,		/* an ibv_send_wr as it is */
	VERBS_HELD_ATOMIC_WRITE,	/* ibv_wr_atomic_write(rkey, raddr, data) */
	VERBS_HELD_FLUSH,		/* ibv_wr_flush(rkey, raddr, flush_len) */
};

struct verbs_held_wr {
	struct ibv_send_wr wr;		/* wr_id, opcode, send_flags, rdma, imm */
	struct ibv_sge sge;		/* wr.sg_list points here (num_sge 1) */
	uint8_t data[8];		/* inline bytes / the atomic value */
	uint8_t kind;			/* enum verbs_held_kind */
	uint8_t op;			/* enum pmrep_op (logs) */
	uint8_t flush_level;		/* IBV_FLUSH_RANGE / IBV_FLUSH_MR */
	bool piece;			/* a non-last piece of a split flush */
	uint64_t flush_len;
	const void *op_context;		/* (logs) */
};

struct verbs_hold {
	/* posting ops and the CQ calls' safety net (maybe another thread) */
	pthread_mutex_t lock;
	struct verbs_held_wr wr[VERBS_HOLD_CAP];
	unsigned n;
	bool native;			/* a native op is held: post via ibv_wr_* */
	/* n, for a look without the lock from the CQ side */
	atomic_uint pending;
};

struct verbs_conn;
/*
 * Post what `conn` holds now (verbs_ops.c): disconnect, delete and the CQ
 * waits / polls. 0 when nothing is held or all was posted; else the post's
 * error (PMREP_E_AGAIN, PMREP_E_PROVIDER, PMREP_E_STATE without a QP) --
 * the requests not posted are dropped and logged.
 */
int verbs_hold_post(struct verbs_conn *conn, const char *why);
/*
 * Post the idle check's heartbeat (verbs_conn_sm.c on_tick): a signalled
 * zero-length RDMA WRITE taking one send-queue slot, whose completion is
 * never reported (its op_context is verbs_heartbeat_ctx). 0, or the
 * post's error (PMREP_E_AGAIN: the send queue is full, so not idle).
 */
int verbs_post_heartbeat(struct verbs_conn *conn);
extern const char verbs_heartbeat_ctx;
/* a window bind (verbs_mw.c, verbs_ops.c): one unsignalled IBV_WR_BIND_MW */
int verbs_post_bind_mw(struct verbs_conn *conn, struct ibv_mw *mw,
		struct ibv_mr *mr, uint64_t addr, uint64_t len, uint32_t rkey,
		unsigned access);
extern const char verbs_mw_bind_ctx;

/* ------------------------------------------------------ memory windows */

/* a type 2 window bound to one conn's QP (verbs_mw.c) */
struct verbs_mw {
	struct pmrep_mw base;
	struct ibv_mw *mw;		/* NULL once deallocated (or released, T22) */
	struct verbs_mw *reg_next, *reg_prev;	/* peer's registry */
};
int verbs_mw_bind(struct pmrep_conn *conn, struct pmrep_mr_local *mr,
		int usage, struct pmrep_mw **mw);
int verbs_mw_invalidate(struct pmrep_mw *mw);

/* ---------------------------------------------------- completion channel */

struct verbs_comp_channel {
	struct pmrep_comp_channel base;
	struct ibv_comp_channel *ch;
	/* held from ibv_get_cq_event to the re-arm, and around destroying a
	 * CQ attached to the channel: a CQ never goes away under a waiter */
	pthread_mutex_t lock;
	struct verbs_comp_channel *reg_next, *reg_prev;	/* peer's registry */
};

/*
 * Take one event from `ch` without blocking: acknowledge it on the CQ it
 * came from, re-arm that CQ and return it. PMREP_E_NO_EVENT when none is
 * pending. `lock` (may be NULL) is held over the whole step.
 */
struct verbs_cq;
int verbs_channel_take_event(struct ibv_comp_channel *ch,
		pthread_mutex_t *lock, struct verbs_cq **cq);
/*
 * Wait up to timeout_ms for a CQ event on `ch` (a channel only this conn's
 * CQs use), taking it as above. Meanwhile input on the conn's event fd
 * pumps its state machine (verbs_conn_pump). 0, PMREP_E_TIMEOUT,
 * PMREP_E_PROVIDER; PMREP_E_CONN_LOST once the peer's device is released
 * (T22: `ch` is gone then).
 */
struct verbs_conn;
int verbs_wait_cq_event(struct verbs_peer *peer, struct ibv_comp_channel *ch,
		struct verbs_conn *conn, int timeout_ms, struct verbs_cq **got);

/* ------------------------------------------------------------------- CQ */

struct verbs_cq {
	struct pmrep_cq base;
	struct ibv_cq *cq;
	struct ibv_comp_channel *channel;	/* the one it is attached to */
	bool own_channel;			/* created for this CQ alone */
	struct verbs_comp_channel *ext;		/* a pmrep_comp_channel, or NULL */
	struct verbs_sq_ring *sq;		/* SQ completions land here */
	struct verbs_rq_table *rq;		/* RQ completions land here */
	/* conn CQs: completions of any other QP (an earlier connect
	 * attempt's) are stale and dropped; 0 = no QP yet */
	bool filter_qp;
	uint32_t qp_num;
	/* completions dropped as an earlier incarnation's (another QP, or
	 * another generation in the wr_id: T25) */
	atomic_ullong stale;
	/* entries the device granted (ibv_create_cq may round up; fewer
	 * than asked is refused: T26) */
	int cqe;
};

/*
 * A CQ of `size` entries on `shared` (NULL: a channel of its own; ext:
 * the pmrep_comp_channel behind `shared`, counted in its ncqs), armed.
 */
int verbs_cq_new(struct verbs_peer *peer, int size,
		struct ibv_comp_channel *shared, struct verbs_comp_channel *ext,
		struct verbs_cq **cq_ptr);
/* destroy the CQ, then its own channel; frees it on every path */
int verbs_cq_delete(struct verbs_cq *cq);

/* ------------------------------------------------------------------ SRQ */

struct verbs_srq {
	struct pmrep_srq base;
	struct ibv_srq *srq;		/* NULL once its device is released */
	struct verbs_cq *rcq;
	struct verbs_rq_table table;
	struct verbs_srq *reg_next, *reg_prev;	/* peer's registry */
};

/* the listening endpoint (verbs_ep.c) */
struct verbs_ep {
	struct pmrep_ep base;
	struct rdma_event_channel *evch;
	struct rdma_cm_id *id;		/* NULL once its device is released */
	struct verbs_ep *reg_next, *reg_prev;	/* peer's registry */
};
/* release the ep's listener id and the requests queued on it (dev_lock
 * held for writing) */
void verbs_ep_release(struct verbs_ep *ep);
/* release a CQ's verbs objects (the CQ itself, its own channel); the
 * struct stays for its owner's delete (dev_lock held for writing) */
void verbs_cq_release(struct verbs_cq *cq);

int verbs_srq_post_recv(struct verbs_srq *srq, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context);

/* ---------------------------------------------------------- private data */

/*
 * On InfiniBand / RoCE the private data a CM event hands over is always
 * the full message area (56 bytes on connect, 196 on accept), zero padded:
 * the length that was sent is lost. pmrep frames it (verbs_pdata.c).
 */
struct verbs_pdata {
	uint8_t buf[PMREP_PDATA_ACCEPT_MAX];
	uint8_t len;			/* bytes of buf to send */
	uint8_t flow_control;		/* rdma_conn_param.flow_control */
};

void verbs_pdata_encode(const struct pmrep_conn_private_data *pd,
		unsigned max, struct verbs_pdata *out);
int verbs_pdata_decode(const void *raw, size_t raw_len, uint8_t flow_control,
		unsigned max, uint8_t *out, uint8_t *out_len);

#define VERBS_REJECT_MARKER_SIZE 8
extern const uint8_t verbs_reject_marker[VERBS_REJECT_MARKER_SIZE];
bool verbs_reject_is_explicit(const void *raw, size_t raw_len);

/* ----------------------------------------------------------------- conn */

enum verbs_conn_state {
	VERBS_ST_NEW = 0,		/* a request: nothing sent yet */
	VERBS_ST_RESOLVING_ADDR,	/* retry: rdma_resolve_addr issued */
	VERBS_ST_RESOLVING_ROUTE,	/* retry: rdma_resolve_route issued */
	VERBS_ST_CONNECTING,		/* connect / accept issued */
	VERBS_ST_BACKOFF,		/* waiting to retry (no id) */
	VERBS_ST_ESTABLISHED,
	VERBS_ST_DISCONNECTING,		/* our rdma_disconnect issued */
	VERBS_ST_TERMINAL,		/* a terminal event was reported */
};

const char *verbs_conn_state_str(enum verbs_conn_state st);

/* a receive posted before the connection is up (re-posted on retry) */
struct verbs_prepost {
	uint64_t addr;
	uint32_t len;
	uint32_t lkey;
	const void *op_context;
};

struct verbs_conn {
	struct pmrep_conn base;
	struct verbs_peer *peer;
	bool passive;
	enum verbs_conn_state state;

	/* rdma_cm: the conn's own event channel, its id */
	struct rdma_event_channel *evch;
	struct rdma_cm_id *id;
	bool evch_pinned;		/* an id that would not go still uses it */
	struct sockaddr_storage dst;	/* active: where to (re)connect */

	/* queues */
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;		/* native atomic write / flush */
	bool native_flush_posted;	/* logged once (debug) */
	struct ibv_comp_channel *own_shared_ch; /* cfg.shared_comp_channel */
	struct verbs_comp_channel *ext_ch;	/* cfg.comp_channel */
	struct verbs_cq *cq, *rcq;
	struct verbs_srq *srq;		/* cfg.srq, counted in its nconns */
	struct verbs_sq_ring sq;
	struct verbs_rq_table rq;
	bool rings_ready;
	struct verbs_hold hold;		/* PMREP_F_MORE (verbs_ops.c) */
	struct verbs_prepost *prepost;	/* active side, until ESTABLISHED */
	uint32_t nprepost;
	/*
	 * A passive request's CQs, channels, rings and QP are made only
	 * when the request is used (verbs_conn_req_queues: its first
	 * receive posted, its accept), never for one rejected or deleted
	 * unused. Until then `lazy_queues`, and `cfg_pinned`: the request
	 * holds the cfg's SRQ (nconns) and pmrep_comp_channel (ncqs) as
	 * its queues would, so neither can be deleted under it.
	 */
	bool lazy_queues;
	bool cfg_pinned;

	/* event fd: an epoll set of {cm channel fd, timerfd, notify eventfd} */
	int epfd, timerfd, notifyfd;
	bool cm_fd_watched;

	/* the state machine: its owner's next_event and a pumping CQ wait
	 * (another thread, maybe) take turns under sm_lock */
	pthread_mutex_t sm_lock;
#define VERBS_PENDING_MAX 2	/* ESTABLISHED, then a terminal event */
	enum pmrep_conn_event pending[VERBS_PENDING_MAX];
	unsigned npending;

	/* what the state machine needs */
	unsigned retries_left;
	int backoff_ms;
	long long deadline_ms;		/* all attempts end by then */
	atomic_bool lost;		/* set by async events (any thread) */
	bool local_close;		/* disconnect before ESTABLISHED */
	struct verbs_pdata my_pdata;	/* what we send (again on retry) */
	uint8_t resp_res, init_depth;	/* passive: from the request */
	uint8_t req_retry, req_rnr_retry;	/* passive: from the request */

	/* peer's registry */
	struct verbs_conn *reg_next, *reg_prev;
	bool registered;
	/* T22: its id saw DEVICE_REMOVAL (the release is due); released */
	atomic_bool dev_removal_seen;
	bool dev_released;
};

/* release the conn's verbs objects (dev_lock held for writing): QP, CQs,
 * channels, id; a terminal event not reported yet becomes LOST */
void verbs_conn_release(struct verbs_conn *conn);

struct verbs_conn_req {
	struct pmrep_conn_req base;
	struct verbs_conn *conn;	/* everything built so far */
};

/* a conn under construction: fields that need it set to "none" */
struct verbs_conn *verbs_conn_alloc(struct verbs_peer *peer,
		const struct pmrep_conn_cfg *cfg, bool passive);
/* CQs, channels, rings and the QP on conn->id, per conn->base.cfg */
int verbs_conn_queues_new(struct verbs_conn *conn);
/* release what verbs_conn_queues_new acquired, in reverse order: 0 or the
 * first error (everything released) */
int verbs_conn_queues_delete(struct verbs_conn *conn);
/*
 * A passive request's queues are made later (lazy_queues): hold the cfg's
 * SRQ and pmrep_comp_channel meanwhile (cfg_pinned). Cannot fail.
 */
void verbs_conn_queues_defer(struct verbs_conn *conn);
/* let go of what verbs_conn_queues_defer held (nothing when it holds
 * nothing) */
void verbs_conn_queues_unpin(struct verbs_conn *conn);
/*
 * Make a deferred request's CQs, channels, rings and QP now (dev_lock held
 * for reading, the device not removed); 0 at once when they exist.
 * `what`: the call that needs them (pmrep_conn_req_recv,
 * pmrep_conn_req_connect), named in the error line. On failure nothing of
 * them is left and the request stays as it was (still deferred): the
 * error of the creation that failed (PMREP_E_PROVIDER, PMREP_E_NOMEM).
 */
int verbs_conn_req_queues(struct verbs_conn *conn, const char *what);
/* create the QP on conn->id (rings and CQs exist) */
int verbs_conn_qp_new(struct verbs_conn *conn);
/* the epoll set, timerfd and notify eventfd */
int verbs_conn_fds_new(struct verbs_conn *conn);
/* fds, then connect (active) / accept (passive), the attempt timer,
 * registration with the peer: the conn is live */
int verbs_conn_start(struct verbs_conn *conn);
/* post one receive on the conn's RQ (or its SRQ) */
int verbs_conn_post_recv(struct verbs_conn *conn, uint64_t addr, uint32_t len,
		uint32_t lkey, const void *op_context);
/*
 * Tear down whatever exists, in order: QP (after moving it to error and a
 * bounded drain when requests are in flight), CQs, channels, id, event
 * channel, fds; then free. Returns the first error (everything freed).
 */
int verbs_conn_destroy(struct verbs_conn *conn);
/*
 * Set the local ACK timeout of conn->id (T23) from the cfg timeout and
 * note the conn's RC timing: before every rdma_connect / rdma_accept, on
 * every id. 0 or PMREP_E_PROVIDER (rdma_set_option failed).
 */
int verbs_conn_set_ack_timeout(struct verbs_conn *conn);
/* the rdma_conn_param pmrep uses for connect / accept */
void verbs_conn_param(const struct verbs_conn *conn,
		struct rdma_conn_param *param);
/*
 * Run the state machine on whatever input the conn has, keeping what it
 * decides for next_event (a CQ wait does this, so that a peer's disconnect
 * moves the QP to error -- flushing what is posted -- even while nobody
 * reads conn events). False when another thread holds the machine.
 */
bool verbs_conn_pump(struct verbs_conn *conn);
/* may the conn's event fd wake a CQ wait (nothing decided and unread)? */
bool verbs_conn_watchable(const struct verbs_conn *conn);
/* mark lost from an async event (any thread) and wake the event fd */
void verbs_conn_mark_lost(struct verbs_conn *conn, const char *why);
/*
 * Shared by verbs_conn.c (the conn's objects), verbs_conn_end.c (its
 * teardown) and verbs_conn_sm.c (its state machine):
 * verbs_conn_cqs_set_qp -- the conn's CQs take completions of QP qp_num
 *   only (0: of none yet);
 * verbs_conn_qp_allow_flush -- grant the peer remote FLUSH on the QP
 *   where the device has it (0, or the modify's error);
 * verbs_conn_qp_destroy -- destroy the current QP (0 or its error);
 * verbs_conn_cqs_drop_stale -- drop the completions a replaced QP left;
 * verbs_conn_go_terminal -- the machine's end: QP to error, the rdma_cm
 *   fd out of the epoll set, TERMINAL (sm_lock held);
 * verbs_conn_notify_raise -- wake the event fd for a decided event;
 * verbs_conn_post_recv_locked -- post a receive on the current QP (the
 *   conn is ESTABLISHED, or sm_lock is held).
 */
void verbs_conn_cqs_set_qp(struct verbs_conn *conn, uint32_t qp_num);
int verbs_conn_qp_allow_flush(struct verbs_conn *conn);
int verbs_conn_qp_destroy(struct verbs_conn *conn);
void verbs_conn_cqs_drop_stale(struct verbs_conn *conn);
void verbs_conn_go_terminal(struct verbs_conn *conn);
void verbs_conn_notify_raise(struct verbs_conn *conn);
int verbs_conn_post_recv_locked(struct verbs_conn *conn, uint64_t addr,
		uint32_t len, uint32_t lkey, const void *op_context);
/*
 * An error completion of the conn's current QP was polled (any thread):
 * the QP is in error, so the conn is lost now (marked, its event fd woken)
 * unless its end is already decided or ours (see verbs_conn_end.c).
 */
/* enum ibv_wc_status -> pmrep's (verbs_cq.c's table); unknown: GENERAL */
enum pmrep_wc_status verbs_wc_status(int ibv_status);
void verbs_conn_wc_error(struct verbs_conn *conn, const struct ibv_wc *wc);
/* the same for an SRQ's receive completion: the conn whose QP it names */
void verbs_peer_wc_error(struct verbs_peer *peer, const struct ibv_wc *wc);

/*
 * Wait up to timeout_ms for the next CM event on `ch` (non-blocking fd),
 * copy what is needed and acknowledge it. Used while resolving.
 */
struct verbs_cm_event {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	uint8_t flow_control;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;
	size_t pdata_len;		/* of the raw (padded) buffer */
	uint8_t pdata[PMREP_PDATA_ACCEPT_MAX];
};
/* 0, PMREP_E_NO_EVENT (nothing pending), PMREP_E_PROVIDER */
int verbs_cm_event_take(struct rdma_event_channel *ch,
		struct verbs_cm_event *ev);
/* wait for an event up to the deadline (ms, CLOCK_MONOTONIC):
 * 0, PMREP_E_TIMEOUT, PMREP_E_PROVIDER */
int verbs_cm_event_wait(struct rdma_event_channel *ch, long long deadline,
		struct verbs_cm_event *ev);
/* resolve conn->dst (address, then route) within the cfg timeout */
int verbs_conn_resolve(struct verbs_conn *conn);

/* ------------------------------------------------------------------ misc */

struct addrinfo;
/* getaddrinfo for a stream address: 0, PMREP_E_INVAL (does not resolve),
 * PMREP_E_NOMEM, PMREP_E_PROVIDER */
int verbs_getaddrinfo(const char *addr, const char *port, bool passive,
		struct addrinfo **ai);

/* set O_NONBLOCK | O_CLOEXEC on an fd that rdma-core opened */
int verbs_fd_set_flags(int fd, const char *what);

/* the provider's ops, one file each */
int verbs_peer_delete(struct pmrep_peer *peer);
int verbs_peer_handle_async_event(struct pmrep_peer *peer,
		enum pmrep_async_event *event);
int verbs_devx_subscribe(struct pmrep_peer *peer, const uint16_t *event_types,
		size_t n, uint64_t cookie);
int verbs_devx_get_fd(const struct pmrep_peer *peer, int *fd);
int verbs_devx_handle_event(struct pmrep_peer *peer,
		enum pmrep_async_event *event, uint64_t *cookie);
int verbs_mr_reg(struct pmrep_peer *peer, void *ptr, size_t size, int usage,
		struct pmrep_mr_local **mr);
int verbs_mr_dereg(struct pmrep_mr_local *mr);
int verbs_comp_channel_new(struct pmrep_peer *peer,
		struct pmrep_comp_channel **ch);
int verbs_comp_channel_delete(struct pmrep_comp_channel *ch);
int verbs_comp_channel_wait(struct pmrep_comp_channel *ch, int timeout_ms,
		struct pmrep_cq **cq, struct pmrep_conn **conn);
int verbs_srq_new(struct pmrep_peer *peer, uint32_t rq_size, uint32_t rcq_size,
		struct pmrep_srq **srq);
int verbs_srq_delete(struct pmrep_srq *srq);
int verbs_srq_recv(struct pmrep_srq *srq, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context);
int verbs_ep_listen(struct pmrep_peer *peer, const char *addr,
		const char *port, struct pmrep_ep **ep);
int verbs_ep_shutdown(struct pmrep_ep *ep);
int verbs_ep_next_conn_req(struct pmrep_ep *ep,
		const struct pmrep_conn_cfg *cfg, struct pmrep_conn_req **req);
int verbs_conn_req_new(struct pmrep_peer *peer, const char *addr,
		const char *port, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req);
int verbs_conn_req_recv(struct pmrep_conn_req *req, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context);
int verbs_conn_req_connect(struct pmrep_conn_req *req,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn);
int verbs_conn_req_delete(struct pmrep_conn_req *req);
int verbs_conn_next_event(struct pmrep_conn *conn,
		enum pmrep_conn_event *event);
int verbs_conn_wait(struct pmrep_conn *conn, int timeout_ms,
		struct pmrep_cq **cq, bool *is_rcq);
int verbs_conn_disconnect(struct pmrep_conn *conn);
int verbs_conn_delete(struct pmrep_conn *conn);
int verbs_cq_wait(struct pmrep_cq *cq, int timeout_ms);
int verbs_cq_get_completions(struct pmrep_cq *cq, struct pmrep_completion *out,
		int max, int *n);
int verbs_post(const struct pmrep_op_args *args);

#endif /* PMREP_VERBS_INTERNAL_H */
