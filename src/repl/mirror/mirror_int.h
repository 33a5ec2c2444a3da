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

#include <pthread.h>
#include <stdatomic.h>

#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "bitmap.h"
#include "repl/wire/chan.h"
#include "repl/metrics/metrics.h"
#include "mirror_state.h"
#include "repl/media/replica_hdr.h"

/*
 * a resync copies chunks of at most RESYNC_CHUNK bytes with up to
 * RESYNC_DEPTH of them in flight: small enough that posting one holds the
 * mirror's lock (and the replica's socket) briefly, so a foreground persist
 * is not queued behind megabytes (pmrep-bench --sweep resync: p99 during a
 * resync 8x the p99 before with one 4 MiB chunk at a time, 1.2-1.5x with
 * 128 KiB ones), and enough of them to keep the link busy
 */
#define RESYNC_CHUNK (128u << 10)
#define RESYNC_DEPTH 4
/*
 * the resync's guaranteed minimum (pmrep_mirror_cfg_set_resync_min_rate,
 * docs/PROTOCOL.md "Mirror, resync step"): its net progress -- out-of-sync
 * bytes removed per second -- over the last RESYNC_NET_WINDOW_MS, from
 * samples of the replica's out-of-sync bytes taken at most every
 * RESYNC_NET_WINDOW_MS / RESYNC_NET_SAMPLES (none for half the window yet:
 * unknown, taken as below the minimum). While it is below, a step into
 * regions already copied waits for room in the replica's ring instead of
 * marking them out of sync again.
 */
#define RESYNC_MIN_RATE_DEFAULT (16ull << 20)
#define RESYNC_NET_WINDOW_MS 400
#define RESYNC_NET_SAMPLES 8
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define POLL_SLICE_MS 100	/* re-check the CQs at least this often */
#define ASYNC_MAX 65536		/* asynchronous requests outstanding at most */

/*
 * The pipeline (mirror_pipe.c, docs/PROTOCOL.md "Mirror, persist
 * pipeline"): requests are posted as steps, up to the cfg window of steps
 * not complete; each replica holds its posted, unconfirmed steps in a ring
 * of PIPE_RING entries (GPSPM: REPL_GPSPM_CREDITS, the target's receives)
 * -- far more than the window, so that a replica that is not required may
 * trail the completed steps by up to the cfg lag without a scheduling
 * hiccup filling it, and is turned out of sync (pull ahead) beyond it or
 * when its ring is full.
 */
#define PIPE_RING 256
#define PIPE_WINDOW_DEFAULT 16
#define PIPE_MAX_LAG_DEFAULT (64ull << 20)
/* a conn's queues: every step is at most POST_WRS work requests */
#define POST_WRS 3
#define MIRROR_SQ_SIZE (POST_WRS * PIPE_RING + 2 * CHAN_NSEND)
#define MIRROR_CQ_SIZE (MIRROR_SQ_SIZE + CHAN_NRECV)

/* a persist request, synchronous (the caller waits for it) or not */
struct async_req {
	struct async_req *next;
	uint64_t off, len;
	void *ctx;
	int result;
	int local_err;		/* the local persist failed: the result */
	long long deadline;	/* -1: none (the caller's limit; async: cfg timeout) */
	long long t0_ns;	/* submitted (mirror_now_ns): its latency's start */
	long long t0_ms;	/* submitted (repl_now_ms): its hold's bound */
	uint64_t step;		/* the step carrying it; 0: not posted yet */
	bool sync;		/* pmrep_mirror_persist's own: not polled */
	bool done;		/* result is final */
	bool orphan;		/* its caller gave up: freed once done */
	/* a vector (pmrep_mirror_persistv): nv > 1 merged ranges, sorted,
	 * disjoint and not adjoining, posted as one step of its own (off,
	 * len: their span); 0: the one range off, len */
	unsigned nv;
	struct pmrep_range v[];
};

struct req_list {
	struct async_req *head, *tail;
	size_t n;
};

/* a step in flight: one range posted to every in-sync replica */
struct step {
	uint64_t seq;
	uint64_t off, len;
	long long deadline;	/* replicas that have not confirmed by then fail */
	uint32_t posted;	/* replicas it was posted to (bit per index) */
	uint32_t acked;		/* of those, the ones that confirmed it */
	uint32_t failed;	/* of those, the ones that failed before */
	/* the policy's count when it was posted: a replica joining then
	 * ("all") and in sync by its confirmations does not raise it */
	unsigned required;
	bool timed_out;		/* one of them failed by timing out */
	bool complete;		/* result is final */
	int result;
};

/* one entry of a replica's ring: posted, not confirmed yet */
struct inflight {
	uint64_t seq;
	uint64_t off, len;
	long long deadline;
	bool is_step;		/* a mirror step (else a resync chunk, or al) */
	bool al;		/* a persist posted to a replica being resynced:
				 * its range stays in AL until it is confirmed */
	bool replied;		/* GPSPM: the target's reply came */
	bool lagging;		/* its step completed without it: lag_inflight */
	/* a vector step's range other than its last: confirms nothing
	 * alone (the step's last entry, behind it in the ring, does) */
	bool part;
	unsigned send_slot;	/* GPSPM: the request's send slot */
};

/* a resync chunk in flight: regions [first, first + n) = [off, off + len) */
struct rs_chunk {
	size_t first, n;
	uint64_t off, len, seq;
	long long step;		/* its confirmation's deadline */
};

/* a replica's out-of-sync bytes at a time (its resync's net progress) */
struct rs_net_sample {
	long long t;		/* repl_now_ms() */
	uint64_t dirty;
};

struct mirror_replica_cfg {
	char *addr;
	char *port;
	/* the HELLO's selector (pmrep_mirror_cfg_set_replica_name): "" none */
	char selector[REPL_SELECTOR_SIZE + 1];
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
	bool persist_seq;		/* pmrep_mirror_cfg_set_persist_seq */
	unsigned fence_count;		/* pmrep_mirror_cfg_set_fence_count */
	bool fence_only;		/* pmrep_mirror_promote: new() waits for the
					 * fence count only, none in sync */
	/* pmrep_mirror_promote: the membership its COMMITs record (the old
	 * set's, as the headers read said: set size 0 -- the cfg's) */
	unsigned fence_set_size, fence_set_quorum;
	bool manual_recovery;	/* pmrep_mirror_cfg_set_background_recovery(false) */
	int backoff_min_ms, backoff_max_ms;	/* 0: BACKOFF_MIN_MS / _MAX_MS */
	uint64_t resync_rate;	/* bytes/s, 0: unlimited */
	uint64_t resync_min_rate;	/* bytes/s of net progress, 0: none */
	int create_timeout_ms;	/* -1: none */
	unsigned window;	/* steps in flight at most; 0: PIPE_WINDOW_DEFAULT */
	uint64_t max_lag;	/* pull-ahead limit, bytes (max_lag_set) */
	bool max_lag_set;
	bool no_tls;		/* pmrep_mirror_cfg_set_tls(false) */
	bool no_digests;	/* pmrep_mirror_cfg_set_resync_digests(false) */
	bool state_path_set;	/* pmrep_mirror_cfg_set_state_path was called */
	char *state_path;	/* its path (NULL: in memory); owned by the cfg */
};

/*
 * Who drives a replica (docs/DESIGN.md "The mirror's threads"): the data
 * path -- the application's calls -- drives an IN_SYNC replica; its
 * recovery -- the replica's own thread, or pmrep_mirror_reconnect without
 * background recovery -- every other. The data path hands a replica over
 * when it fails it; the recovery hands it back, under the mirror's lock,
 * once nothing is left to copy and no chunk is in flight.
 */
enum replica_owner { OWN_DATA = 0, OWN_RECOVERY = 1 };

struct replica {
	struct pmrep_mirror *m;
	unsigned idx;
	atomic_int owner;		/* enum replica_owner */
	pthread_t th;			/* its recovery thread */
	bool th_started;
	bool tried;			/* an attach was attempted (pmrep_mirror_new) */
	/* run-time membership (mirror_members.c; m->lock): the slot is
	 * free (PMREP_REPLICA_REMOVED), or the replica was added at run time
	 * and was never in sync yet (the "all" policy does not require it) */
	bool removed;
	/* its first step with a position will make its target write the
	 * header (another writer's position before: PROTOCOL.md
	 * "Position"): the record's rec_seq follows when it is confirmed */
	bool pos_switch;
	bool joining;
	/* its recovery thread ends (pmrep_mirror_remove_replica), and its
	 * chan's waits end at once (set with the mirror's delete too) */
	atomic_bool stop;
	atomic_bool cancel;
	/* an attach of this mirror was committed: the replica durably holds
	 * our generation and refuses every older writer (m->lock) */
	bool fenced;
	bool committed;		/* an attach of this mirror was committed */
	/* the resync chunks in flight (chunks of them, posted in increasing
	 * offset order) span [chunk_lo, chunk_hi): the regions of that span
	 * a persist marks meanwhile (redirty, in memory) stay out of sync
	 * when their chunk is confirmed */
	unsigned chunks;
	uint64_t chunk_lo, chunk_hi;
	/* those chunks, oldest first: fl[fl_head], ... (m->lock; the digest
	 * pass counts in chunks without one) */
	struct rs_chunk fl[RESYNC_DEPTH];
	unsigned fl_head;
	/* the next resync compares digests first (replica_digest.c): a
	 * replica of our set whose history our record does not cover */
	bool digest;
	bool digesting;		/* the digest pass is running (m->lock) */
	uint64_t resync_compared;	/* bytes compared so, all resyncs */
	struct repl_bitmap redirty;
	bool redirty_ready;
	/* the resync in progress: bytes to copy (grows when persists mark
	 * more), copied, when it began, its last progress log line */
	uint64_t rs_total, rs_done;
	long long rs_start_ms, rs_log_ms;
	/* its net progress (RESYNC_NET_WINDOW_MS): samples of its
	 * out-of-sync bytes, oldest first (m->lock) */
	struct rs_net_sample rs_net[RESYNC_NET_SAMPLES];
	unsigned rs_net_head, rs_net_n;
	/* this resync's holds: steps of the writer that waited for its
	 * ring (the minimum rate), and the ms they waited (m->lock) */
	uint64_t rs_holds;
	long long rs_held_ms;
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
	int why_errno;			/* and its errno (pmrep_err_errno) */
	uint64_t resyncs, resync_bytes;
	long long next_try;		/* ms; reconnect not before */
	int backoff_ms;
	/* posted, unconfirmed steps and resync chunks, oldest first:
	 * confirmed in this order (one QP; GPSPM: the target answers in
	 * order). A GPSPM entry is done when both the target's reply and
	 * the request's own send completion (its send slot free again) were
	 * seen, in either order (T26) */
	struct inflight ring[PIPE_RING];
	unsigned r_head, r_n;
	uint64_t lag_inflight;	/* bytes of entries whose step is complete */
	/* pmrep_mirror_get_metrics: times it went FAILED, by error (m->lock) */
	uint64_t failures[METRICS_NERR];
};

#define MIRROR_EVENTS 256	/* state changes kept for pmrep_mirror_get_event */

struct pmrep_mirror {
	/* guards the record, every replica's bitmap, state, owner and
	 * status, the events, the done list's signal (recursive: the data
	 * path holds it around calls that fail replicas) */
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a replica changed hands or state */
	bool sync_ready;		/* lock and cond initialized */
	atomic_bool stopping;		/* pmrep_mirror_delete: threads end */
	struct pmrep_mirror_event ev[MIRROR_EVENTS];
	unsigned ev_head, ev_n, ev_lost;
	struct pmrep_pmem *pmem;
	uint8_t *base;
	size_t size;
	struct pmrep_mirror_cfg cfg;	/* copy; replica strings owned by r[] */
	struct mirror_state *state;	/* the record (docs/PROTOCOL.md) */
	char *state_path;		/* its file (NULL: in memory) */
	atomic_uint_fast64_t next_seq;
	/* persist sequences (PROTOCOL.md "Position"): a step's is psn_base
	 * (this run's epoch) + its seq; psn_done: the newest completed one
	 * (m->lock) */
	uint64_t psn_base, psn_done;
	/* the persist sequence of the newest step issued (0: none yet) */
	uint64_t psn_last;
	/* the mapping is a pmrep log: its header as durable (mirror_log.c) */
	bool log;
	struct replica_hdr log_hdr;
	/* the header slot the claim wrote, as it was before (the claim is
	 * taken back by restoring it when pmrep_mirror_new is refused) */
	uint8_t log_undo[REPLICA_HDR_ENC_SIZE];
	unsigned log_undo_slot;
	/* the log's position as its header held it before this mirror's
	 * claim (an attach never overwrites a replica more current than
	 * that: replica_commit) */
	struct pmrep_replica_position log_pos;
	/* the membership the log's header recorded before this mirror (set
	 * size 0: none); when this mirror's cfg needs more fencing, new()
	 * waits for that many COMMITs first and records its own after
	 * (PROTOCOL.md "Membership", "across a restart") */
	unsigned prev_size, prev_quorum;
	bool members_grow;
	unsigned n;
	struct replica r[PMREP_MIRROR_MAX_REPLICAS];
	/* one epoll fd (pmrep_mirror_get_fd) over every connected
	 * replica's CQ and event fds, an eventfd readable while completions
	 * wait to be polled, and a timerfd for the earliest deadline of what
	 * is in flight */
	int epfd, efd, tfd;
	struct req_list queue;		/* submitted, not posted yet */
	struct req_list flight;		/* posted, not complete: in order */
	struct req_list done;		/* complete, not polled yet */
	/* the steps not retired, oldest first: a step retires (its
	 * requests complete) once it and every older one are complete */
	struct step steps[PIPE_RING];
	unsigned s_head, s_n;
	unsigned window;		/* steps not complete at most */
	bool timer_set;			/* tfd armed for timer_at (-1: disarmed) */
	bool efd_up;			/* efd readable (mirror_signal) */
	/* polls in a row that handed out nothing while events waited
	 * untaken (the fd readable for them alone: a caller that waits on
	 * it without taking them spins), and whether that was logged */
	unsigned ev_idle_polls;
	bool ev_warned;
	long long timer_at;
	uint64_t max_lag;		/* bytes a replica may trail, not required */
	/*
	 * the resync minimum's hold (mirror_pipe.c pipe_hold; m->lock): the
	 * queue's first step waits for room in the rings of the replicas
	 * being resynced in hold_mask (each: hold_entries), until hold_until
	 * at the latest. The recovery that frees such room clears the
	 * replica's bit and sets hold_wake (the mirror's eventfd and cond
	 * say so); the data path clears it when it looks again. hold_t0:
	 * when the step began to wait (-1: none waits), hold_who: for whom
	 */
	bool held;
	uint32_t hold_mask, hold_who;
	unsigned hold_entries;
	long long hold_until, hold_t0;
	bool hold_wake;
	/* pmrep_mirror_get_metrics (m->lock): requests whose outcome is
	 * final (req_finish), by result, and their latencies */
	struct {
		uint64_t persists_ok, persist_bytes;
		uint64_t persists_failed[METRICS_NERR];
		struct metrics_hist lat;
	} mx;
};

#define CHECK_ARG(p) do { \
	if ((p) == NULL) { \
		PMREP_LOG_ERR("invalid argument: %s is NULL", #p); \
		return PMREP_E_INVAL; \
	} \
} while (0)

/* replica.c: the replica state machine */
/* set the state (an event when it changes); the caller holds m->lock */
void replica_set_state(struct replica *r, enum pmrep_replica_state st);
void replica_disconnect(struct replica *r);
/* free a peer whose RDMA device was removed, with its MR and channel */
void replica_drop_peer(struct replica *r);
void replica_fail(struct replica *r, int err, uint64_t off, uint64_t len);
int replica_resync(struct replica *r, long long deadline);
/* the resync's net progress in bytes per second over the last
 * RESYNC_NET_WINDOW_MS (a sample is taken first when due); false: not
 * known yet (m->lock held) */
bool replica_net_rate(struct replica *r, long long now, uint64_t *rate);
/* room in the ring of a replica being resynced for a persist of
 * `entries` entries, besides what its own chunks need */
static inline bool
replica_sync_room(const struct replica *r, unsigned entries)
{
	/* a vector's entries within the bound of pipe_room */
	unsigned cap = r->method != PMREP_MIRROR_METHOD_GPSPM ? PIPE_RING :
		entries > 1 ? PMREP_MIRROR_WINDOW_MAX : REPL_GPSPM_CREDITS;
	return r->r_n + RESYNC_DEPTH + 3 + entries <= cap;
}
/* replica_digest.c: clear the out-of-sync regions whose digests match */
int replica_digest_pass(struct replica *r, long long deadline);
int replica_attach(struct replica *r, long long connect_deadline, long long deadline);
/* the back-off after a failed attempt (cfg min .. max, doubling) */
void replica_backoff(struct replica *r);

/* mirror_recovery.c: who drives recovery, the events */
static inline void mirror_lock(struct pmrep_mirror *m) { pthread_mutex_lock(&m->lock); }
static inline void mirror_unlock(struct pmrep_mirror *m) { pthread_mutex_unlock(&m->lock); }
int mirror_sync_init(struct pmrep_mirror *m);
void mirror_sync_fini(struct pmrep_mirror *m);
/* record a state change for pmrep_mirror_get_event (m->lock held) */
void mirror_event(struct pmrep_mirror *m, unsigned idx,
		enum pmrep_replica_state from, enum pmrep_replica_state to, int err);
/* the eventfd: readable while completions or events wait (m->lock held) */
void mirror_signal(struct pmrep_mirror *m);
/* start every replica's recovery thread */
int mirror_recovery_start(struct pmrep_mirror *m);
/* start replica r's (a replica added at run time) */
int mirror_recovery_start_one(struct replica *r);
/* stop and join replica r's */
void mirror_recovery_stop_one(struct replica *r);
/* stop and join them */
void mirror_recovery_stop(struct pmrep_mirror *m);
/* hand a failed replica to its recovery and wake it */
void mirror_recovery_kick(struct replica *r);
/* the end of a resync: IN_SYNC and back to the data path when nothing is
 * left to copy and no chunk is in flight (m->lock held); true if so */
bool mirror_recovery_handback(struct replica *r);
/* pmrep_mirror_new's wait (background): k in sync, or fewer possible,
 * or the deadline; *first: the first replica that failed */
int mirror_recovery_wait_new(struct pmrep_mirror *m, long long deadline,
		const struct replica **first);
/* pmrep_mirror_reconnect's (background): every failed replica due now,
 * wait until all are in sync or the deadline */
int mirror_recovery_wait_all(struct pmrep_mirror *m, long long deadline);
static inline bool mirror_background(const struct pmrep_mirror *m)
{
	return !m->cfg.manual_recovery;
}
/* the newest step's persist sequence, 0 before the first (m->lock or
 * nothing in flight) */
static inline uint64_t mirror_newest_psn(const struct pmrep_mirror *m)
{
	return m->psn_last;
}

/* the first persist sequence of the epoch after the one `psn` is in */
static inline uint64_t repl_psn_epoch_floor(uint64_t psn)
{
	return ((psn >> REPL_PSN_EPOCH_SHIFT) + 1) << REPL_PSN_EPOCH_SHIFT;
}

/* next_seq++ */
static inline uint64_t mirror_next_seq(struct pmrep_mirror *m)
{
	return atomic_fetch_add(&m->next_seq, 1);
}

/* replica_io.c: messages, posts and confirmations */
struct inflight *replica_ring_at(struct replica *r, unsigned i);
int replica_wait_msg(struct replica *r, long long deadline, struct repl_msg *msg);
/* post [off, off + len) and its persist step as ring entry `seq`
 * (is_step: a mirror step, else a resync chunk); PMREP_E_AGAIN: ring full */
int replica_post_range(struct replica *r, uint64_t off, uint64_t len,
		uint64_t seq, bool is_step, long long deadline);
/* post the n ranges of a vector step as ring entries `seq`, each with its
 * persist step, only the last confirming the step (al: each is a persist
 * posted to a replica being resynced); PMREP_E_AGAIN (ring without room
 * for all n): nothing posted. On another error the entries posted stay */
int replica_post_vec(struct replica *r, const struct pmrep_range *v,
		unsigned n, uint64_t seq, bool is_step, bool al,
		long long deadline);
/* take the replica's completions, confirming ring entries in order
 * (a step's: mirror_step_ack); an error when it must be failed */
int replica_progress(struct replica *r);
/* wait until the replica confirmed ring entry `seq` (and those before it)
 * or `deadline` (its entries' own deadlines too): 0, or the error it was
 * failed with. Takes m->lock around the ring; waits outside it */
int replica_wait_seq(struct replica *r, uint64_t seq, long long deadline);
/* wait up to `slice_ms` for a completion of any replica with entries in
 * its ring; a wait error fails the replica it belongs to */
int mirror_wait_any(struct pmrep_mirror *m, int slice_ms);	/* replicas waited on */

/* mirror_pipe.c: a request for the vector `v` of n ranges, checked
 * (PMREP_E_INVAL, PMREP_E_RANGE: nothing done), merged; nv 0 after
 * merging to one range (or none: len 0) */
int mirror_req_vec(const struct pmrep_mirror *m, const struct pmrep_range *v,
		unsigned n, struct async_req **out);
/* persist the request's ranges locally: 0 or the first failure */
int mirror_req_persist_local(struct pmrep_mirror *m, const struct async_req *q);

/* mirror.c */
/* the replicas the policy requires: the quorum, or ("all") every replica
 * not removed nor joining */
unsigned mirror_required(const struct pmrep_mirror *m);
/* the set size n: replicas not removed (joining ones included) */
unsigned mirror_set_size(const struct pmrep_mirror *m);
/* mirror_members.c: the membership its replicas record (m->lock held, or
 * the data path) */
void mirror_membership(const struct pmrep_mirror *m, struct repl_members *mb);
/* one slot per replica: is replica id `id` (an ACCEPT's) committed in
 * another slot of r's mirror? (logged; m->lock held) -- the same replica
 * under two slots (another address, or its path's basename as name) would
 * fence the other slot's session at its COMMIT and count twice */
bool mirror_slot_taken(const struct replica *r, const uint8_t id[PMREP_UUID_SIZE]);
/* set up slot `i` for the replica at addr:port (its record slot, its
 * bitmaps); not started */
int mirror_replica_init(struct pmrep_mirror *m, unsigned i, const char *addr,
		const char *port);
/* free its connection, peer, bitmaps and strings (the slot stays) */
void mirror_replica_free(struct replica *r);

unsigned mirror_in_sync_count(const struct pmrep_mirror *m);
/* mirror_log.c: claim the header of the mirror's own log (a pmrep log
 * mapping; a plain one: nothing), and mark it consistent at a delete */
/* the resync an attach of r needs, from the header in `acc`
 * (docs/PROTOCOL.md "Mirror, attach"); *why says which rule decided
 * (m->lock) */
enum repl_resync replica_decide_resync(struct replica *r,
		const struct repl_accept *acc, const char **why);
int mirror_log_claim(struct pmrep_mirror *m);
/* a refused pmrep_mirror_new: the claim taken back, the log's header
 * byte for byte as it was (crash-atomic: a torn restore leaves the slot
 * invalid, and the header reads as its other slot, which is the one that
 * was live before the claim) */
void mirror_log_unclaim(struct pmrep_mirror *m);
/* an attach never overwrites a copy that may hold a completed persist
 * this mirror's log (as it was before its claim) lacks (PROTOCOL.md
 * "Position"): PMREP_E_STATE or PMREP_E_SPLIT_BRAIN (cannot be ordered),
 * logged; 0 (the log complete for it; no log, a log of no set yet, a
 * fresh replica or another set: decided elsewhere) */
int mirror_log_attach_check(struct pmrep_mirror *m, unsigned idx,
		const char *addr, const char *port, const struct repl_accept *acc);
void mirror_log_close(struct pmrep_mirror *m);
/* record a membership in the log's header (a plain mapping: nothing) */
int mirror_log_members(struct pmrep_mirror *m, unsigned set_size,
		unsigned quorum);
/* replicas that committed an attach of this mirror (its generation) */
unsigned mirror_fenced_count(const struct pmrep_mirror *m);

/* mirror_pipe.c: the persist pipeline */
/* CLOCK_MONOTONIC in ns: the persist latencies of the metrics */
long long mirror_now_ns(void);
void req_list_free(struct req_list *l);
/* replica `idx` confirmed step `seq` */
void mirror_step_ack(struct pmrep_mirror *m, uint64_t seq, unsigned idx);
/* replica `idx` failed (err) before confirming step `seq` */
void mirror_step_fail(struct pmrep_mirror *m, uint64_t seq, unsigned idx,
		int err);
/* is step `seq` complete (or retired)? */
bool mirror_step_complete(const struct pmrep_mirror *m, uint64_t seq);
/* take completions, fail what is past its deadline, retire, post */
void mirror_pipe_advance(struct pmrep_mirror *m);
/* nothing queued, no step in flight, no persist posted to a replica
 * being resynced unconfirmed (the caller holds m->lock or is the data
 * path) */
bool mirror_pipe_idle(struct pmrep_mirror *m);
/* advance until nothing is queued or in flight, or `deadline` */
void mirror_pipe_drain(struct pmrep_mirror *m, long long deadline);
/* wait up to `slice_ms` for what moves the pipeline: a completion of a
 * replica of the data path, or -- while a step waits for a replica being
 * resynced (the minimum rate) -- that replica's room, its state change or
 * the hold's end; 0: nothing to wait for */
int mirror_pipe_wait(struct pmrep_mirror *m, int slice_ms);
/* the data path must look at the pipeline again: a replica being
 * resynced has room for the step that waits for it (m->lock held) */
void mirror_hold_wake(struct replica *r);
/* submit a request (the record covers it: mirror_pipe_submit marks AL) */
int mirror_pipe_submit(struct pmrep_mirror *m, struct async_req *q);
int mirror_al_clear(struct pmrep_mirror *m);

#endif /* PMREP_REPL_MIRROR_INT_H */
