/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mocks.h -- link-level mocks of libibverbs and librdmacm (rdma-core 44
 * headers) for pmrep's cmocka unit tests.
 *
 * The unit tests link pmrep's objects with libpmrep_mocks.a instead of the
 * real libibverbs / librdmacm. The mocks keep a small model of a soft-RoCE
 * device: fake contexts (inside a real struct verbs_context, so the static
 * inline verbs that dispatch through ctx->ops / verbs_get_ctx_op / qp_ex
 * work unchanged), PDs, MRs with lkey/rkey, CQs with a scriptable WC queue,
 * QPs with a send queue model (slots are freed when a signalled completion
 * is polled, as on real hardware), SRQs, completion channels, CM event
 * channels and ids. Every channel fd (comp channel, CM event channel, the
 * context's async_fd) is a real eventfd that is readable exactly while
 * events are queued on it, so poll/epoll based code works.
 *
 * Where real rdma-core would block forever (ibv_destroy_cq / ibv_destroy_qp
 * / rdma_destroy_id / rdma_migrate_id with unacknowledged events, a blocking
 * get_*_event on an empty channel) or corrupt memory (double ack, use of a
 * destroyed object), the mock FAILS THE TEST LOUDLY instead, through
 * cmocka's mock_assert() -- so the selftest can catch it with
 * expect_assert_failure(). Loud failures must happen on the test's thread.
 *
 * Typical test:
 *
 *	static int setup(void **st) { return mock_test_setup(st); }   // mock_reset()
 *	static int teardown(void **st) { return mock_test_teardown(st); } // no leaks + reset
 *
 *	mock_dev_set_odp(true);
 *	struct ibv_context *ctx = mock_cm_context();   // what rdma_cm ids carry
 *	assert_int_equal(pmrep_peer_new(ctx, &peer), 0);
 *	mock_fail("ibv_alloc_pd", 1, ENOMEM);          // next ibv_alloc_pd fails
 *
 * All functions below are for the test's code; none of them counts as a
 * "mocked call" for failure injection.
 */
#ifndef PMREP_MOCKS_H
#define PMREP_MOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- lifecycle */

/*
 * mock_reset -- forget everything: free every mock object (closing its fds),
 * drop queued events, logs, scripted failures and reactions, and restore
 * every knob to its default. Call it in each test's setup and teardown.
 */
void mock_reset(void);

/*
 * mock_assert_no_leaks -- fail the test (listing them) if any object made
 * through the mocked API is still live (created, not destroyed), or if any
 * CM / CQ / async event was got and not acknowledged. Objects owned by the
 * mocked libraries themselves (librdmacm's device contexts and default PD)
 * do not count.
 */
void mock_assert_no_leaks(void);

/* cmocka fixtures: setup = mock_reset(); teardown = no leaks, then reset. */
int mock_test_setup(void **state);
int mock_test_teardown(void **state);

/* ------------------------------------------------------ object inspection */

enum mock_kind {
	MOCK_DEVICE_LIST,	/* ibv_get_device_list arrays */
	MOCK_CONTEXT,		/* ibv_open_device */
	MOCK_PD,
	MOCK_MR,
	MOCK_COMP_CHANNEL,
	MOCK_CQ,
	MOCK_QP,
	MOCK_SRQ,
	MOCK_CM_CHANNEL,	/* rdma_create_event_channel */
	MOCK_CM_ID,		/* rdma_create_id + delivered conn-request ids */
	MOCK_ADDRINFO,		/* rdma_getaddrinfo results */
	MOCK_CM_DEVICE_LIST,	/* rdma_get_devices arrays */
	MOCK_MW,		/* ibv_alloc_mw */
	MOCK_KIND_COUNT
};

/* mock_kind_name -- "pd", "cq", ... */
const char *mock_kind_name(enum mock_kind kind);
/* mock_live -- how many objects of `kind` are live (created, not destroyed). */
int mock_live(enum mock_kind kind);
/* events got and not yet acknowledged, over all objects */
int mock_unacked_cm_events(void);
int mock_unacked_cq_events(void);
int mock_unacked_async_events(void);
/*
 * mock_calls -- how many times the mocked function `fn` was called since
 * the last reset (failed calls included). All three ibv_reg_mr symbols
 * (ibv_reg_mr, ibv_reg_mr_iova, ibv_reg_mr_iova2) count as "ibv_reg_mr".
 * An unknown name fails the test.
 */
unsigned mock_calls(const char *fn);

/* The most recently created object of each kind that is still live (NULL: none). */
struct ibv_context *mock_ctx_last(void);
struct ibv_pd *mock_pd_last(void);
struct ibv_mr *mock_mr_last(void);
struct ibv_comp_channel *mock_comp_channel_last(void);
struct ibv_cq *mock_cq_last(void);
struct ibv_qp *mock_qp_last(void);
struct ibv_srq *mock_srq_last(void);
struct rdma_event_channel *mock_cm_channel_last(void);
struct rdma_cm_id *mock_cm_id_last(void);

/* ----------------------------------------------------------- device knobs */

/* Capability bits of device_cap_flags_ex that rdma-core 44 lacks names for. */
#define MOCK_DEVICE_FLUSH_GLOBAL	(1ULL << 38)	/* IB_UVERBS_DEVICE_FLUSH_GLOBAL */
#define MOCK_DEVICE_FLUSH_PERSISTENT	(1ULL << 39)	/* IB_UVERBS_DEVICE_FLUSH_PERSISTENT */
#define MOCK_DEVICE_ATOMIC_WRITE	(1ULL << 40)	/* IB_UVERBS_DEVICE_ATOMIC_WRITE */
/* MR access bits of rdma-core >= 45 (IBV_ACCESS_FLUSH_*): registering
 * with one fails with EOPNOTSUPP unless the device has that flush cap */
#define MOCK_ACCESS_FLUSH_GLOBAL	(1 << 8)
#define MOCK_ACCESS_FLUSH_PERSISTENT	(1 << 9)

/*
 * Device knobs (defaults: 1 device "mock_rxe0", no ODP, no atomic write,
 * no flush, RoCE port ACTIVE). They act at once, also on open contexts:
 * every ibv_query_device(_ex) / ibv_query_port returns the current template.
 *  - odp: odp_caps.general_caps = IBV_ODP_SUPPORT and rc_odp_caps =
 *    SEND|RECV|WRITE|READ|ATOMIC|SRQ_RECV (off: all 0). Without ODP,
 *    ibv_reg_mr(IBV_ACCESS_ON_DEMAND) fails with EOPNOTSUPP and
 *    ibv_advise_mr returns EOPNOTSUPP.
 *  - atomic_write: MOCK_DEVICE_ATOMIC_WRITE; without it a QP asking for
 *    IBV_QP_EX_WITH_ATOMIC_WRITE fails to be created (EOPNOTSUPP).
 *  - flush: MOCK_DEVICE_FLUSH_GLOBAL / _PERSISTENT.
 */
void mock_dev_set_odp(bool on);
void mock_dev_set_atomic_write(bool on);
void mock_dev_set_flush(bool global, bool persistent);
/* the templates themselves, for any other field (edit freely) */
struct ibv_device_attr_ex *mock_dev_attr(void);
struct ibv_port_attr *mock_port_attr(void);
/* how many devices ibv_get_device_list reports (0..4, default 1);
 * rdma_get_devices lists only librdmacm's context of device 0 (none if 0) */
void mock_dev_set_count(int n);
/* largest cap.max_inline_data a QP may ask for (default 256) */
void mock_dev_set_max_inline(uint32_t max_inline);
/*
 * mock_mr_set_unpinnable -- memory in [addr, addr + len) behaves like fsdax:
 * the kernel cannot pin it, so ibv_reg_mr without IBV_ACCESS_ON_DEMAND fails
 * with EOPNOTSUPP (with ODP it registers). Up to 8 ranges; reset clears.
 */
void mock_mr_set_unpinnable(const void *addr, size_t len);

/* ------------------------------------------------------- failure injection */

/*
 * mock_fail -- the nth next call (nth >= 1: 1 = the very next) of `fn`
 * fails with `err`, the way the real function reports failure:
 *   NULL + errno              (ibv_open_device, ibv_alloc_pd, ibv_reg_mr,
 *                             ibv_create_*, rdma_create_event_channel, ...)
 *   -1 + errno                (every rdma_* int function, ibv_get_cq_event,
 *                             ibv_get_async_event, ibv_close_device)
 *   the positive errno value  (ibv_dealloc_pd, ibv_dereg_mr, ibv_destroy_*,
 *                             ibv_query_*, ibv_modify_qp, ibv_post_*,
 *                             ibv_req_notify_cq, ibv_advise_mr,
 *                             ibv_wr_complete, ibv_fork_init)
 *   -err                      (ibv_poll_cq: a negative value)
 * A failing destroy leaves the object live (as the real ones do) but no
 * longer counted by mock_live / the leak checks (see also
 * mock_release_failed_destroys).
 * Schedules for one function stack (mock_fail(f,1,..) + mock_fail(f,3,..)
 * fail the 1st and 3rd next calls). Allocation wrappers take the names
 * "malloc", "calloc", "realloc", "reallocarray", "strdup", "strndup",
 * "posix_memalign", "aligned_alloc", or "alloc" for any of them (counting
 * only pmrep's / the test's allocations, never cmocka's). Unknown names
 * fail the test.
 */
void mock_fail(const char *fn, unsigned nth, int err);
/* mock_fail_always -- every call of `fn` fails with `err` until reset / clear */
void mock_fail_always(const char *fn, int err);
/*
 * mock_fail_rc -- like mock_fail, but an int-returning function returns
 * exactly `rc` (and sets errno = err). E.g. the real rdma_getaddrinfo
 * returns -1 with errno set to a (negative) EAI_* code when the name does
 * not resolve.
 */
void mock_fail_rc(const char *fn, unsigned nth, int rc, int err);
/*
 * mock_release_failed_destroys -- finish every destroy that an injected
 * failure left undone (as if the retry succeeded): the objects go away and
 * their parents (PD, channel, context) become destroyable again, so the
 * test can then delete what it still holds (e.g. pmrep_peer_delete after
 * a conn whose ibv_destroy_qp was made to fail). A PD / comp channel still
 * used by a live object stays, with its failure forgotten.
 */
void mock_release_failed_destroys(void);
/* mock_fail_clear -- drop every scheduled failure */
void mock_fail_clear(void);
/* mock_fail_pending -- scheduled one-shot failures not triggered yet */
int mock_fail_pending(void);

/*
 * "Fail every call in turn".
 *
 * mock_run_each_failure(scenario, cleanup, state):
 *  1. warm-up: runs scenario(state) with nothing failing (it must return
 *     0), then cleanup(state, ret) -- lazily made globals settle here;
 *  2. baseline: runs it again counting every failable mocked call and
 *     every allocation pmrep / the test makes (N in all), then cleanup;
 *  3. for k = 1..N: runs it with the k-th of those calls failing (with the
 *     function's usual error: ENOMEM for constructors / allocations /
 *     posting, EIO otherwise, EADDRINUSE for rdma_bind_addr), then
 *     cleanup(state, ret).
 * After every run + cleanup it fails the test loudly, naming k and the
 * failed function, if: the scenario returned 0 although a call failed
 * (unless tolerated, see opts), a mock object created in the run is still
 * live, an event got in the run is unacknowledged, or memory allocated
 * during the scenario was not freed by the end of cleanup (reported as
 * "N bytes allocated from <file>+0xOFF": `addr2line -f -e <file> 0xOFF`
 * names the allocating function and line).
 * Between runs, events still queued (scripted input the run did not
 * consume) and one-shot reactions / failures are dropped.
 * The cleanup must release whatever the scenario made (on success AND on
 * failure, e.g. `if (ret == 0) pmrep_conn_delete(&c);`) and may assert.
 * Destroy-type calls (ibv_dealloc_pd, ibv_dereg_mr, ibv_destroy_*,
 * ibv_close_device, rdma_destroy_id) are not failed unless
 * opts->fail_destroys (then mock-object leak checks are skipped for those
 * runs, since the real object stays allocated too; heap leaks still count).
 * Returns N (the number of failure runs). The scenario must be
 * deterministic and single-threaded.
 */
typedef int mock_scenario_fn(void *state);
typedef void mock_cleanup_fn(void *state, int ret);

struct mock_each_opts {
	/* NULL-terminated names whose failure the scenario may survive
	 * (return 0), e.g. an optional probe */
	const char *const *tolerated;
	bool allow_success;	/* any failure may be survived */
	bool no_allocs;		/* do not fail allocations, only rdma calls */
	bool fail_destroys;	/* fail destroy-type calls too (see above) */
	bool verbose;		/* print each run (also env MOCK_VERBOSE=1) */
};
int mock_run_each_failure(mock_scenario_fn *scenario, mock_cleanup_fn *cleanup,
		void *state);
int mock_run_each_failure_opts(mock_scenario_fn *scenario,
		mock_cleanup_fn *cleanup, void *state,
		const struct mock_each_opts *opts);
/* within a run: k (0 = warm-up / baseline) and the name of the function
 * failed in this run (NULL when none failed yet) */
unsigned mock_each_iteration(void);
const char *mock_each_failed_fn(void);

/* ------------------------------------------------------ completion queues */

/* Error WCs the mock makes carry this opcode: pmrep must not read it. */
#define MOCK_WC_OPCODE_UNDEFINED ((enum ibv_wc_opcode)0x5a5a)

/*
 * mock_cq_push_wc -- put a completion in the CQ (it is polled in FIFO
 * order). If the CQ is armed (ibv_req_notify_cq) and has a channel, a
 * completion event is queued on that channel and the CQ disarmed -- as on
 * hardware, arming a CQ that already holds completions does NOT make an
 * event. A full CQ drops the WC, counts an overrun and queues an
 * IBV_EVENT_CQ_ERR async event.
 */
void mock_cq_push_wc(struct ibv_cq *cq, uint64_t wr_id,
		enum ibv_wc_status status, enum ibv_wc_opcode opcode,
		uint32_t byte_len);
void mock_cq_push(struct ibv_cq *cq, const struct ibv_wc *wc);
/* queue a completion event for `cq` on its channel, armed or not */
void mock_cq_event(struct ibv_cq *cq);
int mock_cq_depth(struct ibv_cq *cq);		/* WCs not polled yet */
bool mock_cq_armed(struct ibv_cq *cq);
unsigned mock_cq_unacked(struct ibv_cq *cq);	/* events got, not acked */
unsigned mock_cq_overruns(struct ibv_cq *cq);
/* completion events queued on a channel, not got yet */
int mock_comp_channel_pending(struct ibv_comp_channel *ch);
/*
 * mock_cq_set_grant_max -- a device that grants fewer entries than asked:
 * ibv_create_cq with cqe > max_cqe succeeds with cq->cqe = max_cqe (and
 * that capacity: more WCs overrun). 0 (default): as asked.
 * mock_cq_last_requested -- the cqe the last ibv_create_cq asked for.
 */
void mock_cq_set_grant_max(int max_cqe);
int mock_cq_last_requested(void);

/* ----------------------------------------------------------- queue pairs */

/*
 * mock_set_auto_complete -- on: every send WR completes as soon as it is
 * posted (successfully; a WC only when signalled or sq_sig_all). Off
 * (default): send WRs stay outstanding until mock_qp_complete_sends.
 */
void mock_set_auto_complete(bool on);
/*
 * mock_qp_complete_sends -- complete the n oldest outstanding send WRs
 * of `qp` (n < 0: all) with `status`. A WC is pushed to the send CQ for a
 * signalled WR or any error. An error status moves the QP to the ERR
 * state, and the WRs after it are flushed (IBV_WC_WR_FLUSH_ERR, always
 * reported). Returns how many WRs were completed.
 */
int mock_qp_complete_sends(struct ibv_qp *qp, int n, enum ibv_wc_status status);
/*
 * mock_qp_recv -- a SEND of `len` bytes arrives: take the oldest posted
 * receive (of the QP's SRQ when it has one), copy `data` into its SGEs and
 * push IBV_WC_RECV with byte_len to the QP's receive CQ. No receive posted:
 * the test fails (a real sender would see RNR retries). Data larger than
 * the receive: IBV_WC_LOC_LEN_ERR; an SGE outside its MR (or an MR without
 * local write): IBV_WC_LOC_PROT_ERR; either moves the QP to ERR.
 * mock_qp_recv_imm -- the same with immediate data (`imm` in host order):
 * IBV_WC_RECV (send with imm) or, for rdma_write, IBV_WC_RECV_RDMA_WITH_IMM
 * (no data copied, byte_len = len).
 */
void mock_qp_recv(struct ibv_qp *qp, const void *data, uint32_t len);
void mock_qp_recv_imm(struct ibv_qp *qp, const void *data, uint32_t len,
		uint32_t imm, bool rdma_write);
/*
 * mock_qp_set_state -- as if the QP moved to `state` on its own (e.g.
 * IBV_QPS_ERR after a fatal error): ERR flushes every outstanding send and
 * receive WR into the CQs with IBV_WC_WR_FLUSH_ERR. The mocked
 * ibv_modify_qp to ERR and rdma_disconnect do the same.
 */
void mock_qp_set_state(struct ibv_qp *qp, enum ibv_qp_state state);
enum ibv_qp_state mock_qp_state(struct ibv_qp *qp);
/* send-queue slots in use (posted, not yet freed by a polled signalled
 * completion) and receives posted and not yet completed */
int mock_qp_sq_used(struct ibv_qp *qp);
int mock_qp_outstanding_sends(struct ibv_qp *qp);	/* not completed yet */
int mock_qp_rq_used(struct ibv_qp *qp);
int mock_srq_used(struct ibv_srq *srq);
/* the QP's creation attributes as granted (cap, send_ops_flags, sq_sig_all) */
struct mock_qp_info {
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	bool is_ex;			/* ibv_qp_to_qp_ex gives a qp_ex */
	uint64_t send_ops_flags;
	struct ibv_cq *send_cq, *recv_cq;
	struct ibv_srq *srq;
	struct ibv_pd *pd;
	struct rdma_cm_id *cm_id;	/* rdma_create_qp(_ex) */
};
void mock_qp_info(struct ibv_qp *qp, struct mock_qp_info *info);

/* ------------------------------------------------------------ WR log */

#define MOCK_MAX_SGE 16
#define MOCK_WR_DATA_MAX 256

/*
 * One posted work request as the mock saw it (ibv_post_send, ibv_post_recv,
 * ibv_post_srq_recv, or an ibv_wr_* batch that ibv_wr_complete posted).
 */
struct mock_wr {
	uint32_t qp_num;		/* 0 for an SRQ receive */
	const void *qp;			/* struct ibv_qp * (identity only) */
	const void *srq;		/* struct ibv_srq * (SRQ receives) */
	bool is_recv;
	bool via_wr_api;		/* ibv_wr_* rather than ibv_post_send */
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;	/* sends only */
	unsigned int send_flags;	/* IBV_SEND_* */
	uint64_t remote_addr;
	uint32_t rkey;
	bool has_imm;
	uint32_t imm;			/* host order */
	uint64_t compare_add, swap;	/* atomics */
	int num_sge;
	struct ibv_sge sge[MOCK_MAX_SGE];
	uint32_t length;		/* sum of the SGE lengths / inline bytes */
	/* outgoing bytes (sends, writes, inline data, the 8 bytes of an
	 * atomic write) copied at post time, up to MOCK_WR_DATA_MAX */
	uint32_t data_len;
	uint8_t data[MOCK_WR_DATA_MAX];
	bool bad_lkey;			/* an SGE outside its MR: completes LOC_PROT_ERR */
	/* ibv_wr_flush (rdma-core >= 45 only): opcode IBV_WR_FLUSH; the
	 * length as passed (size_t; `length` above is its low 32 bits) */
	uint8_t flush_type, flush_level;
	uint64_t flush_len;
	/* IBV_WR_BIND_MW: the window, the new rkey (in `rkey`), the range
	 * (remote_addr, length), the access; bind_err: the bind is refused
	 * (the region lacks IBV_ACCESS_MW_BIND, another PD, a remote write
	 * without LOCAL_WRITE on the region): completes IBV_WC_MW_BIND_ERR
	 * and the QP goes to the error state */
	const void *mw;
	unsigned int mw_access;
	bool bind_err;
};
/* the rkey a window has now (its last bind's); 0 if `mw` is not live */
uint32_t mock_mw_rkey(const struct ibv_mw *mw);
/* is the window bound (a bind of it was posted and accepted)? */
bool mock_mw_bound(const struct ibv_mw *mw);
/* the last window allocated (loud if none) */
struct ibv_mw *mock_mw_last(void);
size_t mock_send_count(void);
const struct mock_wr *mock_send_wr(size_t i);	/* 0 = oldest; loud if out of range */
const struct mock_wr *mock_send_last(void);	/* loud if none */
size_t mock_recv_count(void);
const struct mock_wr *mock_recv_wr(size_t i);
const struct mock_wr *mock_recv_last(void);
void mock_wr_log_clear(void);

/* ------------------------------------------------------------ async events */

/*
 * Queue a device (async) event on the context's async_fd. For a QP, CQ or
 * SRQ the context is the object's. IBV_EVENT_QP_FATAL also moves the QP to
 * ERR (flushing). Destroying an object with unacknowledged async events on
 * it fails the test (the real destroy blocks); queued, not yet got events
 * of a destroyed object are dropped.
 */
void mock_async_qp(struct ibv_qp *qp, enum ibv_event_type type);
void mock_async_cq(struct ibv_cq *cq, enum ibv_event_type type);
void mock_async_srq(struct ibv_srq *srq, enum ibv_event_type type);
void mock_async_port(struct ibv_context *ctx, enum ibv_event_type type, int port);
void mock_async_device(struct ibv_context *ctx, enum ibv_event_type type);
int mock_async_pending(struct ibv_context *ctx);	/* queued, not got yet */

/* ------------------------------------------------------------------ CM */

/* "no event": for mock_cm_react / mock_cm_set_auto */
#define MOCK_CM_NO_EVENT ((enum rdma_cm_event_type)-1)
/* private data bytes an IB / RoCE message carries to the user */
#define MOCK_PDATA_REQ 56	/* connect (REQ minus the RDMA CM header) */
#define MOCK_PDATA_REP 196	/* accept */
#define MOCK_PDATA_REJ 148	/* reject */
/* IB CM reject reasons found in a REJECTED event's status */
#define MOCK_REJ_INVALID_SERVICE_ID 8	/* nothing listens on that port */
#define MOCK_REJ_CONSUMER_DEFINED 28	/* the remote application rejected */

/*
 * mock_cm_context -- librdmacm's own ibv_context of device 0: what ids
 * carry in id->verbs after address resolution / binding and what
 * rdma_get_devices lists. Owned by "librdmacm": not a leak, never close it.
 */
struct ibv_context *mock_cm_context(void);

/*
 * mock_cm_queue_event -- queue an event for `id` on the channel the id is
 * on. Private data is copied into a buffer the event owns and frees when it
 * is acknowledged (use after ack: ASan). With padding on (default; IB and
 * RoCE behaviour) private_data_len is the wire size of the message and the
 * bytes after `len` are zero: CONNECT_REQUEST MOCK_PDATA_REQ (56),
 * ESTABLISHED on the active side and CONNECT_RESPONSE MOCK_PDATA_REP (196),
 * REJECTED MOCK_PDATA_REJ (148); other events carry
 * exactly `len`. `status`: e.g. MOCK_REJ_* for REJECTED, -ETIMEDOUT for
 * UNREACHABLE, -EHOSTUNREACH for ADDR_ERROR.
 * State effects (as the kernel): ADDR_RESOLVED sets id->verbs and the
 * source address; ESTABLISHED on an active id with a QP moves it to RTS
 * when it is got.
 */
void mock_cm_queue_event(struct rdma_cm_id *id, enum rdma_cm_event_type type,
		int status, const void *pdata, uint8_t len);
/*
 * The full form: `param` (when set_param) becomes the event's
 * param.conn -- its private_data / private_data_len are ignored (taken from
 * pdata / len as above). E.g. pmrep frames private data with the
 * flow_control bit, so a test sets param.flow_control as the peer would.
 * Without set_param: responder_resources = initiator_depth = 16,
 * retry_count = rnr_retry_count = 7, flow_control 0 (for CONNECT_REQUEST,
 * ESTABLISHED, CONNECT_RESPONSE; all 0 otherwise).
 */
struct mock_cm_event_spec {
	enum rdma_cm_event_type type;
	int status;
	const void *pdata;
	uint8_t len;
	bool set_param;
	struct rdma_conn_param param;
};
void mock_cm_queue_event_ex(struct rdma_cm_id *id,
		const struct mock_cm_event_spec *spec);

/*
 * mock_cm_queue_conn_request -- an initiator connects to the listening
 * `listen_id`: a CONNECT_REQUEST event carrying a new id (returned) is
 * queued on the listener's channel. The new id becomes a live object (to be
 * destroyed by the code) once the event is got; if the listener is destroyed
 * first, it silently goes away.
 */
struct rdma_cm_id *mock_cm_queue_conn_request(struct rdma_cm_id *listen_id,
		const void *pdata, uint8_t len);
/* the same with a full spec (its type is ignored) */
struct rdma_cm_id *mock_cm_queue_conn_request_ex(struct rdma_cm_id *listen_id,
		const struct mock_cm_event_spec *spec);
/*
 * Reactions: what event a successful call queues on the id's channel.
 * Automatic ones (persistent): rdma_resolve_addr -> ADDR_RESOLVED,
 * rdma_resolve_route -> ROUTE_RESOLVED; nothing for rdma_connect,
 * rdma_accept, rdma_disconnect unless set. mock_cm_set_auto(fn,
 * MOCK_CM_NO_EVENT) turns one off (then e.g. a resolve times out).
 * mock_cm_react queues a one-shot reaction for the next successful call of
 * `fn` (FIFO), which takes precedence over the automatic one; type
 * MOCK_CM_NO_EVENT: that call makes no event.
 * fn: "rdma_resolve_addr", "rdma_resolve_route", "rdma_connect",
 * "rdma_accept", "rdma_disconnect", "rdma_listen", "rdma_reject".
 */
void mock_cm_set_auto(const char *fn, enum rdma_cm_event_type type);
void mock_cm_react(const char *fn, enum rdma_cm_event_type type, int status,
		const void *pdata, uint8_t len);
void mock_cm_react_ex(const char *fn, const struct mock_cm_event_spec *spec);
/* private-data padding, see mock_cm_queue_event (default on) */
void mock_cm_set_pdata_padding(bool on);
/*
 * mock_cm_set_reachable -- off: no RDMA device owns / reaches any address:
 * rdma_bind_addr to a specific (non-wildcard) address fails with ENODEV and
 * rdma_resolve_addr queues ADDR_ERROR (status -ENODEV). Default on.
 */
void mock_cm_set_reachable(bool on);
int mock_cm_pending(struct rdma_event_channel *ch);	/* queued, not got */
int mock_cm_unacked(struct rdma_cm_id *id);		/* got, not acked */

/* The last call of a CM function, as recorded (pdata copied). */
struct mock_cm_call {
	unsigned count;			/* calls of it since reset (successful) */
	const void *id;			/* struct rdma_cm_id * (identity only) */
	int timeout_ms;			/* resolve_addr / resolve_route */
	int backlog;			/* listen */
	struct sockaddr_storage addr;	/* resolve_addr dst / bind_addr addr */
	bool has_param;			/* connect / accept got a conn_param */
	struct rdma_conn_param param;	/* private_data set to NULL */
	uint8_t pdata_len;
	uint8_t pdata[256];
	/* the order of this call among recorded CM calls and
	 * rdma_set_option calls (from 1 after reset) */
	unsigned seq;
	/* receives posted on the id's QP when it was made (-1: no QP) --
	 * e.g. for rdma_accept: posted before the accept */
	int qp_rq_used;
	/* the id's RDMA_OPTION_ID_ACK_TIMEOUT at the time of this call,
	 * and of the `count` calls how many found it set on their id */
	bool ack_timeout_set;
	uint8_t ack_timeout;
	unsigned count_with_ack_timeout;
};
/* fn: rdma_connect, rdma_accept, rdma_reject, rdma_disconnect,
 * rdma_resolve_addr, rdma_resolve_route, rdma_bind_addr, rdma_listen,
 * rdma_migrate_id; loud failure for others */
const struct mock_cm_call *mock_cm_last(const char *fn);

/*
 * Every successful rdma_set_option since reset, in order: the id, level,
 * option, its value bytes (the first 8) and length, and its place among
 * the recorded CM calls (seq, as in mock_cm_call). Mocked checks: a NULL
 * or empty value is EINVAL, RDMA_OPTION_ID_ACK_TIMEOUT (level
 * RDMA_OPTION_ID) takes one byte (else EINVAL), and level RDMA_OPTION_IB
 * is ENOSYS (the kernel knows only RDMA_OPTION_IB_PATH there; not
 * modelled). More than MOCK_CM_MAX_OPTIONS calls fail the test.
 */
#define MOCK_CM_MAX_OPTIONS 64
struct mock_cm_option {
	unsigned seq;
	const void *id;			/* struct rdma_cm_id * (identity only) */
	int level, optname;
	size_t optlen;
	uint8_t value[8];
};
size_t mock_cm_option_count(void);
const struct mock_cm_option *mock_cm_option(size_t i);	/* loud if out of range */

#ifdef __cplusplus
}
#endif
#endif /* PMREP_MOCKS_H */
