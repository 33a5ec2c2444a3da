/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp.h -- the tcp provider's objects and the functions its files share.
 *
 * Threads: one progress thread per connection (tcp_progress.[ch]). It owns
 * the socket's life: it connects (active side, with retries) and closes
 * it. The work -- sending frames, receiving and applying them (the remote
 * side's one-sided ops land in our registered regions without the
 * application), completions and connection events -- is done in turns
 * under conn->prog_lock, by the thread or, on the fast path, by an
 * application thread that posts or waits on a CQ (tcp_fast_turn; see
 * README.md "Threads"). Otherwise the application queues work (post,
 * recv) under conn->lock and kicks the thread through conn->wake_fd.
 *
 * Locks, always taken in this order, never held across a blocking call:
 *   conn->prog_lock > peer->mem_lock (rwlock) > srq->lock > conn->lock >
 *   cq->lock > chan->lock
 * peer->mem_lock guards the MR table and every access to registered
 * memory: the progress thread touches MR memory only while holding it for
 * reading (non-blocking syscalls and memcpy only), so pmrep_mr_dereg,
 * which takes it for writing, never races with a copy into freed memory.
 */
#ifndef PMREP_TCP_H
#define PMREP_TCP_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include "common/log.h"
#include "transport/provider.h"
#include "tcp_wire.h"

/* ------------------------------------------------------------ tunables */

#define TCP_RX_BUF_SIZE		(256 * 1024)	/* one recv parses many frames */
#define TCP_RX_DIRECT_MIN	(32 * 1024)	/* larger payload rest: recv in place */
#define TCP_TX_FRAMES		64		/* frames in one sendmsg at most */
#define TCP_TX_BATCH_BYTES	(4u << 20)	/* payload bytes in one batch at most */
/*
 * Liveness (README.md "Peer death"), all derived from the conn's cfg
 * timeout T: the liveness period L = max(T, TCP_LIVE_MIN_MS); a peer of
 * wire version 2 that sent nothing for L is lost, idle or not; each side
 * sends a heartbeat after min(L, the peer's L) / TCP_HEARTBEAT_DIV of
 * sending nothing; TCP_USER_TIMEOUT = L; keepalive after L / 2 idle
 * (whole seconds, at least 1), probes 1 s apart, L / 1 s of them (>= 1).
 */
#define TCP_LIVE_MIN_MS		500		/* the smallest liveness period */
#define TCP_HEARTBEAT_DIV	4		/* heartbeats per liveness period */
#define TCP_V1_REQUEST_FACTOR	8		/* v1 peer: silent 8 x T with requests in flight */
#define TCP_PENDING_MAX		64		/* accepted sockets awaiting HELLO; full: a silent one goes */
#define TCP_PENDING_EXPIRE_MS	10000		/* ... for the cfg timeout, at most this long */
#define TCP_LISTEN_BACKLOG	4096		/* the kernel's accept queue (capped by somaxconn) */
#define TCP_ACCEPT_BATCH	256		/* accepts per look, then the table's turn */
#define TCP_TLS_CH_MAX		4096		/* bytes a TLS client may send before its binder verified */
#define TCP_BACKOFF_CAP_MS	2000
#define TCP_REQUEST_TIMEOUT_MIN_MS 2000	/* ... and at least this long */
#define TCP_MR_BUCKETS		256
#define TCP_CQE_BATCH		64		/* completions pushed at once */
#define TCP_FAST_POST_MAX	2		/* posted from the app thread up to this many outstanding */
#define TCP_DEAF_MS		2		/* the thread's look while an app thread waits on the socket */
/* READ responses owed before the conn stops reading (TCP flow control
 * then holds the peer back): the largest send queue, so a peer that keeps
 * to its queue never meets it; reading resumes below half */
#define TCP_RESP_MAX		65536

/*
 * tcp_poll_ms -- the poll(2) timeout that waits until `deadline` (the
 * pmrep_now_ms scale; < 0: no deadline, -1) seen at `now`: 0 when it has
 * passed, else the time left, capped at INT_MAX (the caller looks again
 * when it wakes). Never a bare (int) of a time difference: a deadline
 * more than INT_MAX ms away would wrap to a negative (wait forever) or a
 * tiny one (spin).
 */
static inline int
tcp_poll_ms(long long deadline, long long now)
{
	if (deadline < 0)
		return -1;
	if (deadline <= now)
		return 0;
	long long left = deadline - now;
	return left > INT_MAX ? INT_MAX : (int)left;
}

/* ---------------------------------------------------------------- peer */

struct tcp_mr;
struct tcp_conn;

struct tcp_peer {
	struct pmrep_peer base;
	pthread_rwlock_t mem_lock;	/* see the file comment */
	struct tcp_mr *mr_hash[TCP_MR_BUCKETS];
	uint32_t next_key;
	struct tcp_conn *conns;		/* every conn; changed under mem_lock (w) */
};

struct tcp_mr {
	struct pmrep_mr_local base;	/* base.rkey: unique in the peer, also the lkey */
	struct tcp_mr *hnext;
};

static inline struct tcp_peer *
tcp_peer(struct pmrep_peer *p)
{
	return (struct tcp_peer *)p;
}

/* the MR registered with `key`, or NULL; caller holds mem_lock */
struct tcp_mr *tcp_mr_find(struct tcp_peer *peer, uint32_t key);

/*
 * tcp_mr_check -- may a remote request touch [raddr, raddr + len) of `mr`
 * with the access bits `usage` (PMREP_MR_USAGE_*)? PMREP_WC_SUCCESS or
 * PMREP_WC_REMOTE_ACCESS_ERROR (a NULL mr, a missing bit or any byte outside).
 */
enum pmrep_wc_status tcp_mr_check(const struct pmrep_mr_local *mr,
		uint64_t raddr, uint64_t len, int usage);

/* ------------------------------------------------------ memory windows */

/*
 * A window (tcp_mw.c): a random rkey, unique in the peer among regions and
 * windows, that only requests arriving on `conn` may name.
 */
struct tcp_mw {
	struct pmrep_mw base;
	struct tcp_mr *mr;
	struct tcp_conn *conn;
	struct tcp_mw *cnext;		/* conn->mws, under mem_lock */
};

int tcp_mw_bind(struct pmrep_conn *conn, struct pmrep_mr_local *mr,
		int usage, struct pmrep_mw **mw);
int tcp_mw_invalidate(struct pmrep_mw *mw);
/* is `key` a window's or a region's key (caller holds mem_lock)? */
bool tcp_key_in_use(struct tcp_peer *p, uint32_t key);

/*
 * tcp_remote_check -- may a remote request arriving on `c` and naming
 * `rkey` touch [raddr, raddr + len) with the access bits `usage`? Through
 * a window of `c` (the window's usage), or a region registered without
 * PMREP_MR_USAGE_MW_BIND (its own usage); anything else -- a window of
 * another conn, a region's own rkey when it takes windows only, an
 * unknown key -- is PMREP_WC_REMOTE_ACCESS_ERROR, logged. *mr: the region
 * (NULL when refused). Caller holds mem_lock.
 */
enum pmrep_wc_status tcp_remote_check(struct tcp_conn *c, uint32_t rkey,
		uint64_t raddr, uint64_t len, int usage, struct tcp_mr **mr);

/* ------------------------------------------------ CQs and their channels */

struct tcp_cq;

/* A completion channel: an eventfd plus the CQs that fired, oldest first. */
struct tcp_chan {
	pthread_mutex_t lock;
	int fd;
	bool signaled;			/* fd written, not drained yet */
	struct tcp_cq *fired, *fired_tail;
};

struct tcp_cq {
	struct pmrep_cq base;
	pthread_mutex_t lock;
	struct pmrep_completion *ring;	/* grows: a completion is never dropped */
	uint32_t cap, head, count;
	struct tcp_chan *chan;		/* &own_chan, or a shared one */
	struct tcp_chan own_chan;
	bool armed, fired;		/* under chan->lock */
	/* under chan->lock: an application thread runs a turn and takes this
	 * CQ's event itself right after: fire without writing the fd */
	bool quiet;
	struct tcp_cq *fired_next;
};

struct tcp_comp_channel {
	struct pmrep_comp_channel base;
	struct tcp_chan chan;
};

int tcp_chan_init(struct tcp_chan *ch);
void tcp_chan_fini(struct tcp_chan *ch);
/* the fast wait's own turn (caller holds the conn's prog_lock): fire
 * `cq` quietly from now on; end: loud again, and its event taken (true)
 * if it fired */
void tcp_cq_quiet_begin(struct tcp_cq *cq);
bool tcp_cq_quiet_end(struct tcp_cq *cq);
/* wait on a channel: the CQ whose event it took (re-armed) */
int tcp_chan_wait(struct tcp_chan *ch, int timeout_ms, struct tcp_cq **cq);

/* a CQ on `shared` (NULL: with its own channel) */
int tcp_cq_new(struct pmrep_peer *peer, struct pmrep_conn *conn, bool is_rcq,
		uint32_t size, struct tcp_chan *shared, struct tcp_cq **cq);
void tcp_cq_delete(struct tcp_cq *cq);
/* append completions (then one channel event if armed); false: no memory */
bool tcp_cq_push(struct tcp_cq *cq, const struct pmrep_completion *c, int n);

int tcp_cq_wait(struct pmrep_cq *cq, int timeout_ms);
int tcp_cq_wait_any(struct pmrep_cq *const *cqs, int n, int timeout_ms);
int tcp_cq_get_completions(struct pmrep_cq *cq, struct pmrep_completion *out,
		int max, int *n);
int tcp_comp_channel_new(struct pmrep_peer *peer, struct pmrep_comp_channel **ch);
int tcp_comp_channel_delete(struct pmrep_comp_channel *ch);
int tcp_comp_channel_wait(struct pmrep_comp_channel *ch, int timeout_ms,
		struct pmrep_cq **cq, struct pmrep_conn **conn);
int tcp_conn_wait(struct pmrep_conn *conn, int timeout_ms,
		struct pmrep_cq **cq, bool *is_rcq);

/* -------------------------------------------------------------- receives */

/* A posted receive: the MR is named by key and looked up when used. */
struct tcp_recv {
	uint32_t key;
	uint8_t *ptr;
	uint64_t len;
	const void *ctx;
};

/* a ring of posted receives; head / tail count up (mod 2^32), slots
 * counter & mask (a power of two), at most `size` in use */
struct tcp_rq {
	struct tcp_recv *ring;
	uint32_t size, mask, head, tail;
};

/* the smallest power of two >= n (n <= 2^31) */
static inline uint32_t
tcp_pow2(uint32_t n)
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

int tcp_rq_init(struct tcp_rq *rq, uint32_t size);
void tcp_rq_fini(struct tcp_rq *rq);
/* PMREP_E_AGAIN when full */
int tcp_rq_put(struct tcp_rq *rq, const struct pmrep_mr_local *mr,
		size_t offset, size_t len, const void *ctx);
bool tcp_rq_take(struct tcp_rq *rq, struct tcp_recv *out);

struct tcp_srq {
	struct pmrep_srq base;
	pthread_mutex_t lock;
	struct tcp_rq rq;
	struct tcp_conn *conns;		/* attached conns (kicked on a new recv) */
};

int tcp_srq_new(struct pmrep_peer *peer, uint32_t rq_size, uint32_t rcq_size,
		struct pmrep_srq **srq);
int tcp_srq_delete(struct pmrep_srq *srq);
int tcp_srq_recv(struct pmrep_srq *srq, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context);
void tcp_srq_attach(struct tcp_srq *srq, struct tcp_conn *conn);
void tcp_srq_detach(struct tcp_srq *srq, struct tcp_conn *conn);
bool tcp_srq_take(struct tcp_srq *srq, struct tcp_recv *out);

/* ------------------------------------------------- endpoint, conn request */

/*
 * The ClientHello.random of every ClientHello whose PSK binder verified at
 * this endpoint in the last TCP_CH_KEEP_MS (tcp_tls.c): a captured valid
 * ClientHello sent again is refused before the server's flight (no ECDHE
 * spent on it) and never counts as proof. Open addressing, TCP_CH_SLOTS
 * entries; full of live ones: a new ClientHello is refused (busy) rather
 * than an entry dropped (only key holders insert: they retry).
 */
#define TCP_CH_SLOTS 4096
#define TCP_CH_PROBE 16
#define TCP_CH_KEEP_MS 120000	/* > the 90 s a pmrep identity window is good for */
struct tcp_ch_cache {
	struct { uint8_t random[32]; long long until; } e[TCP_CH_SLOTS];
};
/* has a ClientHello of this random been proven here (an entry live at
 * `now`, ms)? */
bool tcp_ch_cache_seen(const struct tcp_ch_cache *c, const uint8_t random[32],
		long long now);
/* remember a proven ClientHello's random until now + TCP_CH_KEEP_MS: 0
 * added, 1 there already (a replay), -1 no free entry on its probe path
 * (the cache is full of live ones there: refused, nothing dropped) */
int tcp_ch_cache_add(struct tcp_ch_cache *c, const uint8_t random[32],
		long long now);

/* the unit a pending socket's source is counted in (tcp_ep.c's eviction),
 * as (*family, key): an IPv4 address (an IPv4-mapped IPv6 one, from a
 * dual-stack listener, too), or an IPv6 /64 (what one host, or one
 * customer of a provider, gets: as many addresses as it likes); another
 * family: (0, 0) */
uint64_t tcp_source_key(const struct sockaddr_storage *a, int *family);

struct tcp_ep {
	struct pmrep_ep base;		/* base.fd: an epoll set of lfd + pending */
	int lfd;			/* the listening socket */
	struct tcp_pending *pending;	/* accepted, HELLO not complete yet */
	unsigned npending;
	int tfd;			/* timerfd in base.fd: the next pending expiry */
	long long limit_ms;		/* the handshake limit of the last look */
	struct tcp_ch_cache *ch;	/* TLS: the ClientHellos proven here */
	unsigned refused_tls;		/* refusals not reported yet (next_conn_req) */
	unsigned refused_malformed;
};

struct tcp_conn_req {
	struct pmrep_conn_req base;
	/* active: where to connect */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	/* passive: the accepted socket and the initiator's receiver budget */
	int sock;
	uint32_t peer_rnr_ms;
	uint16_t peer_version;		/* the HELLO's wire version */
	struct tcp_rq rq;		/* receives posted before connect */
	struct tcp_tls *tls;		/* passive, TLS: the socket's session */
};

int tcp_ep_listen(struct pmrep_peer *peer, const char *addr, const char *port,
		struct pmrep_ep **ep);
int tcp_ep_shutdown(struct pmrep_ep *ep);
int tcp_ep_next_conn_req(struct pmrep_ep *ep, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req);
int tcp_conn_req_new(struct pmrep_peer *peer, const char *addr,
		const char *port, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req);
/* the common part of both sides' request; frees nothing on failure */
int tcp_conn_req_init(struct tcp_conn_req *req, struct pmrep_peer *peer,
		const struct pmrep_conn_cfg *cfg, bool passive);
int tcp_conn_req_recv(struct pmrep_conn_req *req, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context);
int tcp_conn_req_delete(struct pmrep_conn_req *req);

/* ----------------------------------------------------------- connection */

/*
 * A request posted to the send queue; seq = the post count (mod 2^32),
 * slot seq & sq_mask. Rings indexed by free-running u32 counters are a
 * power of two long, so the slot of a counter survives its wrap; the
 * configured size is the limit of what is in use.
 */
struct tcp_wr {
	uint8_t type;			/* TCP_WIRE_WRITE … SEND */
	bool signaled;
	bool with_imm;
	bool done;			/* READ: its data arrived */
	enum pmrep_op op;
	enum pmrep_wc_status status;
	uint32_t lkey;			/* local buffer (WRITE/SEND src, READ dst) */
	uint8_t *lptr;
	uint64_t len;
	uint32_t rkey;
	uint64_t raddr;
	uint32_t imm;
	uint8_t value[8];
	uint8_t flush_type;
	const void *ctx;
};

/* A frame in the transmit batch; payload points into an MR (key != 0) or
 * into memory the conn owns. hoff / poff: bytes of each already sent. */
struct tcp_txf {
	uint8_t hdr[TCP_WIRE_HDR_MAX];
	uint8_t hdr_len, hoff;
	uint32_t key;
	uint8_t *payload;
	uint64_t payload_len, poff;
	void *owned;
};

/* A response the target owes: READ_RESP (data from an MR) or NAK. */
struct tcp_resp {
	uint8_t type;
	uint32_t seq;
	uint32_t status;
	uint32_t key;
	uint8_t *ptr;
	uint64_t len;
};

enum tcp_conn_state {
	TCP_CONN_CONNECTING,	/* active: attempts; passive: ACCEPT not sent */
	TCP_CONN_OPEN,
	TCP_CONN_CLOSING,	/* we sent DISCONNECT, awaiting the peer's */
	TCP_CONN_DEAD,		/* terminal event queued, socket closed */
};

#define TCP_EVENTS_MAX 4

struct tcp_conn {
	struct pmrep_conn base;
	struct tcp_conn *peer_next;	/* tcp_peer.conns, under mem_lock */
	struct tcp_mw *mws;		/* its windows (tcp_mw.c), under mem_lock */
	struct tcp_conn *srq_next;	/* tcp_srq.conns, under srq->lock */
	bool active;
	struct sockaddr_storage addr;	/* active: the target */
	socklen_t addrlen;
	uint8_t my_pdata[TCP_WIRE_ACCEPT_PDATA_MAX];
	uint8_t my_pdata_len;
	uint32_t peer_rnr_ms;		/* the peer's receiver-not-ready budget (its cfg timeout) */
	/* the wire version: active, what the HELLO offers (TCP_WIRE_VERSION,
	 * 1 after a REJECT(version)); both once open, the one agreed on
	 * (2: the peer heartbeats, see tcp_live_period) */
	uint16_t wire_version;
	long long connect_start;	/* when the app called connect (ms) */

	struct tcp_cq *cq;
	struct tcp_cq *rcq;		/* NULL: receives complete on cq */
	struct tcp_chan *own_chan;	/* cfg.shared_comp_channel */
	struct tcp_comp_channel *comp_channel;	/* cfg.comp_channel */
	struct tcp_srq *srq;
	struct tcp_cq *recv_cq;		/* where receives complete */

	pthread_t thread;
	int wake_fd;			/* eventfd: the thread's doorbell */

	/*
	 * Who runs a progress turn (send, receive, apply, complete): the
	 * thread, or an application thread on the fast path (tcp_fast_turn:
	 * a post sends at once, a CQ wait or poll receives at once), never
	 * both. Every field below "the progress thread's own" is touched
	 * only under it. Taken before every other lock.
	 */
	pthread_mutex_t prog_lock;
	/* what the thread's poll waits for (under prog_lock): an application
	 * turn that needs more (another event, an earlier deadline, no wait)
	 * rings the doorbell */
	int thr_sock;
	short thr_events;
	long long thr_deadline;
	/* application threads in a fast CQ wait, which watch the socket
	 * themselves: meanwhile the thread leaves POLLIN to them (no second
	 * wakeup per arrival) and looks again every TCP_DEAF_MS (thr_deaf) */
	atomic_int app_waiters;
	bool thr_deaf;

	/* ---- shared with the application, under lock */
	pthread_mutex_t lock;
	bool kicked;			/* wake_fd written, not yet drained */
	bool stop;			/* delete: the thread must return */
	bool disconnect_req;
	bool rnr_waiting;		/* the thread waits for a receive */
	bool app_wake;			/* kick on recv too (error, terminal) */
	bool established;		/* ESTABLISHED queued: requests may go */
	bool failed;			/* a request failed (tcp_enter_lost): posts
					 * and receives refused (CONN_LOST) */
	unsigned held;			/* requests posted with PMREP_F_MORE, not sent yet */
	bool disconnecting;		/* pmrep_conn_disconnect was called */
	struct tcp_wr *sq;
	uint32_t sq_size, sq_mask, sq_head, sq_tail;
	struct tcp_rq rq;
	enum pmrep_conn_event events[TCP_EVENTS_MAX];
	int nevents;
	bool event_signaled;		/* event_fd written, not drained */

	/* ---- the progress thread's own (under prog_lock) */
	int sock;
	struct tcp_tls *tls;		/* TLS on: sock's session (tcp_tls.c), else NULL */
	int sock_dead;			/* ended; closed by the thread (its poll may hold it) */
	enum tcp_conn_state state;
	bool qp_error;			/* the conn failed: flush everything */
	bool cq_overrun;		/* a completion could not be queued */
	bool terminal_queued;
	long long closing_deadline;
	long long last_rx_ms;		/* bytes last arrived (liveness, request timeout) */
	long long last_tx_ms;		/* bytes last handed to the kernel (heartbeat) */
	int rx_queued;			/* input paused: bytes seen queued in the socket */
	uint32_t ack_sent;		/* the last ACK put in the stream (-1: none): the heartbeat */
	uint32_t sq_tx;			/* next request to transmit */
	uint32_t sq_acked;		/* requests before it acknowledged */

	/* transmit batch (MR references fixed up by dereg under mem_lock) */
	struct tcp_txf tx[TCP_TX_FRAMES];
	unsigned tx_first, tx_count;
	bool tx_blocked;		/* the socket said EAGAIN */
	bool tx_more;			/* stopped at TX_ITER_MAX: look again soon */
	bool ack_dirty;
	uint32_t ack_seq;
	bool disconnect_queued;
	bool close_when_sent;		/* the peer disconnected: end once answered */
	bool accept_queued;
	bool mem_lost;			/* dereg could not save bytes in flight */
	struct tcp_resp *resp;		/* ring of owed responses (<= TCP_RESP_MAX + a NAK) */
	uint32_t resp_cap, resp_head, resp_count;

	/* receive side */
	uint8_t *rxbuf;
	size_t rx_start, rx_end;
	bool rx_in_payload;
	bool rx_ignore;			/* the error state drops this frame */
	struct tcp_frame rxf;
	uint64_t rx_left;		/* payload bytes still to come */
	uint8_t *rx_dst;		/* NULL: discard them */
	uint32_t rx_key;		/* the MR rx_dst points into */
	enum pmrep_wc_status rx_status;
	bool rx_has_recv;
	struct tcp_recv rx_recv;	/* the receive a SEND / WRITE+IMM consumes */
	uint32_t rx_expect;		/* seq of the next incoming request */
	bool rx_drained;		/* the last recv came back short */
	bool rx_more;			/* rx stopped with work left */
	bool stalled;			/* a request waits for a receive */
	bool read_gate;			/* a READ_RESP may be unsent */
	bool rx_gated;			/* a request waits for reads to go out */
	bool rx_full;			/* a READ waits: TCP_RESP_MAX owed */
	long long stall_deadline;

	/* a PERSISTENT flush applied but not persisted yet: overlapping or
	 * touching flushes of one receive batch into one MR become one
	 * persist call, run
	 * before anything that answers for them goes out (tcp_target.c) */
	struct {
		bool active;
		uint32_t key;		/* the MR */
		pmrep_persist_fn *fn;	/* NULL: msync */
		void *ctx;		/* fn's context */
		uint8_t *start, *end;
		uint32_t first_seq;	/* the oldest flush it answers for */
		uint32_t ack_seq;	/* what to acknowledge once done */
	} pend;

	/* completions gathered in one loop turn, pushed at once */
	struct pmrep_completion scqe[TCP_CQE_BATCH];
	struct pmrep_completion rcqe[TCP_CQE_BATCH];
	int nscqe, nrcqe;
};

static inline struct tcp_conn *
tcp_conn(struct pmrep_conn *c)
{
	return (struct tcp_conn *)c;
}

/* make the conn of a consumed request; frees the request on every path */
int tcp_conn_from_req(struct tcp_conn_req *req,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn);
int tcp_conn_req_connect(struct pmrep_conn_req *req,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn);
int tcp_conn_next_event(struct pmrep_conn *conn, enum pmrep_conn_event *event);
int tcp_conn_disconnect(struct pmrep_conn *conn);
int tcp_conn_delete(struct pmrep_conn *conn);
int tcp_post(const struct pmrep_op_args *args);

/* send what PMREP_F_MORE held back (a CQ wait / poll, conn wait) */
void tcp_conn_release_held(struct tcp_conn *c);
/* wake the progress thread (caller holds conn->lock) */
void tcp_conn_kick_locked(struct tcp_conn *c);
/* queue a connection event (caller holds conn->lock) */
void tcp_conn_push_event_locked(struct tcp_conn *c, enum pmrep_conn_event ev);

/* the progress thread (tcp_progress.c; its parts: tcp_progress.h) */
void *tcp_progress_main(void *arg);
/*
 * The fast path: if no other thread runs a turn of `c` (`wait`: once the
 * one running ends; turns never block) and it is open, run one in the calling (application) thread -- send what is queued,
 * with `readable` also receive and apply what arrived -- ring the
 * thread's doorbell if its wait no longer fits, and return true; *sock /
 * *events (may be NULL): what to poll for more of this conn (-1 / 0: the
 * CQ's channel only). `take` (may be NULL): a CQ of the conn on its own
 * channel whose event this turn takes if it fires (*taken), without a
 * write and a read of the channel's fd. false: nothing was done (the
 * caller kicks).
 */
bool tcp_fast_turn(struct tcp_conn *c, bool wait, bool readable, int *sock,
		short *events, struct tcp_cq *take, bool *taken);
/* dereg: the conns' in-flight references to `mr` (caller holds mem_lock,
 * w); in tcp_tx.c */
void tcp_progress_forget_mr(struct tcp_conn *c, const struct tcp_mr *mr);

/* --------------------------------------------------------------- sockets */

/* resolve addr:port (numeric first) into *ss */
int tcp_sock_resolve(const char *addr, const char *port, bool passive,
		struct sockaddr_storage *ss, socklen_t *len);
/* the liveness period of a cfg timeout: max(timeout_ms, TCP_LIVE_MIN_MS) */
static inline long long
tcp_live_period(long long timeout_ms)
{
	return timeout_ms < TCP_LIVE_MIN_MS ? TCP_LIVE_MIN_MS : timeout_ms;
}

/* TCP_NODELAY, keepalive and the user timeout on a connected socket, the
 * last two derived from the conn's cfg timeout (see TCP_LIVE_MIN_MS) */
void tcp_sock_tune(int fd, int timeout_ms);
/* write all of buf to a non-blocking socket, waiting up to deadline_ms
 * (pmrep_now_ms scale); 0 or -errno (-ETIMEDOUT) */
int tcp_sock_write_all(int fd, const void *buf, size_t len,
		long long deadline_ms);
/* send a header-only frame (REJECT with `status`, DISCONNECT) without
 * waiting, best effort: for a socket about to be closed */
void tcp_sock_send_now(int fd, uint8_t type, uint32_t status);
/* close a socket whose unread input we do not want: read it away first
 * (bounded), so the peer sees our last bytes and a FIN, not a RST */
void tcp_sock_close_gently(int fd);
/* an eventfd (non-blocking, close-on-exec); -1 with errno */
int tcp_eventfd(void);
void tcp_eventfd_signal(int fd);
void tcp_eventfd_drain(int fd);

/* ------------------------------------------------------------- TLS 1.3 */

/*
 * tcp_tls.c: a socket's TLS 1.3 session with an external PSK (see its
 * file comment). Every call on one session is made by one thread at a
 * time: the endpoint's caller (passive, until the request is taken), the
 * connecting progress thread (active, until open), then turns under the
 * conn's prog_lock. The session never owns or closes the socket.
 */
struct tcp_tls;
struct iovec;

/* a session on connected socket `fd`: `server` with cfg's find function,
 * else a client with its PSK and identity; 0, PMREP_E_INVAL (not
 * configured), PMREP_E_NOMEM, PMREP_E_TLS (OpenSSL cannot make one) */
int tcp_tls_new(const struct pmrep_conn_cfg *cfg, int fd, bool server,
		struct tcp_tls **t);
/* where a TLS failure of this session is recorded (the conn's cause) */
void tcp_tls_set_cause(struct tcp_tls *t, atomic_int *cause);
/* one step of the handshake: 1 done, 0 call again when the socket has
 * *events (POLLIN / POLLOUT), PMREP_E_TLS failed (logged),
 * PMREP_E_CONN_LOST the socket ended or failed */
int tcp_tls_handshake(struct tcp_tls *t, short *events);
bool tcp_tls_done(const struct tcp_tls *t);
/* server side: the endpoint's ClientHello cache (set before the first
 * handshake step; NULL: no replay check) */
void tcp_tls_set_ch_cache(struct tcp_tls *t, struct tcp_ch_cache *ch);
/* server side: the ClientHello's PSK binder verified and its random is
 * new here (the client proved the key; its socket outranks silent ones) */
bool tcp_tls_proven(const struct tcp_tls *t);
/* server side, handshake done: the PSK identity accepted and the local
 * "host:port" (pmrep_conn_req_get_tls_identity); "" otherwise */
void tcp_tls_names(const struct tcp_tls *t, char *identity, size_t id_len,
		char *local, size_t local_len);
/* as recv(2) on the decrypted stream: > 0 bytes, 0 the stream ended,
 * -1 with errno (EAGAIN: nothing now; EPROTO: a TLS failure, logged) */
ssize_t tcp_tls_recv(struct tcp_tls *t, void *buf, size_t len);
/* as sendmsg(2): the bytes taken (copied: at most 64 KiB), -1 with errno
 * (EAGAIN: an earlier record is still going out, nothing taken) */
ssize_t tcp_tls_sendv(struct tcp_tls *t, const struct iovec *iov, int iovcnt);
/* bytes taken but not yet in the kernel: wait for POLLOUT, then flush */
bool tcp_tls_tx_pending(const struct tcp_tls *t);
/* push those out: 0 done, 1 would block, -1 with errno */
int tcp_tls_flush(struct tcp_tls *t);
/* write all of a small buf by `deadline_ms`: 0 or -errno */
int tcp_tls_write_all(struct tcp_tls *t, const void *buf, size_t len,
		long long deadline_ms);
/* best effort, never blocks: a header-only frame (tcp_sock_send_now) */
void tcp_tls_send_now(struct tcp_tls *t, uint8_t type, uint32_t status);
void tcp_tls_free(struct tcp_tls *t);
/* wipe the PSK copy a cfg (of a request or conn) holds */
void tcp_tls_wipe_cfg(struct pmrep_conn_cfg *cfg);

extern const struct pmrep_provider_ops pmrep_tcp_ops;

#endif /* PMREP_TCP_H */
