/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_queues.c -- T25 (nothing of an earlier connection incarnation
 * acts on the new one) and T26 (queues never overrun), against the mocked
 * device: generations in the wr_id, the CQ sized for the queues it serves
 * and the size the device grants checked, send-queue slots freed by send
 * completions only, a GPSPM persist finished only by both its send
 * completion and its reply (in either order, exactly once), a full SQ
 * refused before the device, and a CQ in error failing its conns.
 */
#include "test_verbs_util.h"

#include "repl/wire/chan.h"
#include "repl/mirror/mirror_int.h"
#include "repl/wire/msg.h"

static struct ibv_cq *
icq(struct pmrep_cq *cq)
{
	return ((struct verbs_cq *)cq)->cq;
}

static struct verbs_cq *
vcq(struct pmrep_cq *cq)
{
	return (struct verbs_cq *)cq;
}

static void
push_wc(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st,
		enum ibv_wc_opcode op, uint32_t qp_num, uint32_t len)
{
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = st;
	wc.opcode = op;
	wc.qp_num = qp_num;
	wc.byte_len = len;
	mock_cq_push(cq, &wc);
}

static struct pmrep_conn_cfg *
retry_cfg(void)
{
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_connect_retries(cfg, 1, 1), 0);
	assert_int_equal(pmrep_conn_cfg_set_timeout(cfg, 1000), 0);
	return cfg;
}

/* ----------------------------------------------------------------- T25 */

/*
 * A connect attempt fails (REJECTED without pmrep's marker) and is retried
 * at once on the same CQs; the old QP's receive completion -- read before
 * the QP was replaced, or of a QP number the device reused -- is looked at
 * after the new incarnation is ESTABLISHED. It must be dropped and
 * counted; the new receive in the same slot stays posted until its own
 * completion; an old error completion must not make the new conn LOST.
 */
static void
T25_old_incarnation_completion_after_reconnect_is_dropped_and_counted(
		void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = retry_cfg();
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_ALL);
	struct pmrep_conn_req *req = tv_req(peer, cfg);
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 32, (void *)0xa), 0);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	struct verbs_conn *vc = tv_vconn(conn);
	uint64_t old_recv = mock_recv_last()->wr_id;
	uint32_t old_sq_gen = vc->sq.gen;

	mock_cm_queue_event(vc->id, RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_INVALID_SERVICE_ID, NULL, 0);
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, 2000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	uint64_t new_recv = mock_recv_last()->wr_id;
	/* the same slot, another generation */
	assert_int_equal(VERBS_WR_SLOT(new_recv), VERBS_WR_SLOT(old_recv));
	assert_int_not_equal(VERBS_WR_GEN(new_recv), VERBS_WR_GEN(old_recv));
	assert_int_not_equal(vc->sq.gen, old_sq_gen);

	struct ibv_cq *cq = icq(conn->cq);
	uint32_t qpn = vc->qp->qp_num;	/* as if the number were reused */
	unsigned long long stale0 = atomic_load(&vcq(conn->cq)->stale);
	push_wc(cq, old_recv, IBV_WC_SUCCESS, IBV_WC_RECV, qpn, 5);
	push_wc(cq, old_recv, IBV_WC_WR_FLUSH_ERR, MOCK_WC_OPCODE_UNDEFINED,
			qpn, 0);
	struct pmrep_completion c[4];
	int n = -1;
	assert_int_equal(pmrep_cq_get_completions(conn->cq, c, 4, &n),
			PMREP_E_NO_COMPLETION);
	assert_int_equal(n, 0);
	assert_int_equal(atomic_load(&vcq(conn->cq)->stale), stale0 + 2);
	/* the new receive is still outstanding, the conn still up */
	assert_int_equal(verbs_rq_table_outstanding(&vc->rq), 1);
	assert_false(atomic_load(&vc->lost));
	assert_int_equal(pmrep_conn_next_event(conn, &ev), PMREP_E_NO_EVENT);

	/* a send of the new incarnation; an old one's completion for the
	 * same slot frees nothing and reports nothing */
	assert_int_equal(pmrep_send(conn, mr, 32, 8, PMREP_F_COMPLETION_ALWAYS,
			(void *)0xb), 0);
	uint64_t new_send = mock_send_last()->wr_id;
	uint64_t old_send = ((uint64_t)old_sq_gen << VERBS_WR_GEN_SHIFT) |
		VERBS_WR_SLOT(new_send);
	push_wc(cq, old_send, IBV_WC_SUCCESS, IBV_WC_SEND, qpn, 0);
	assert_int_equal(pmrep_cq_get_completions(conn->cq, c, 4, &n),
			PMREP_E_NO_COMPLETION);
	assert_int_equal(atomic_load(&vcq(conn->cq)->stale), stale0 + 3);
	assert_int_equal(verbs_sq_ring_outstanding(&vc->sq), 1);

	/* each request of the new incarnation ends by its own completion */
	mock_qp_recv(vc->qp, "hello", 5);
	assert_int_equal(mock_qp_complete_sends(vc->qp, -1, IBV_WC_SUCCESS), 1);
	assert_int_equal(pmrep_cq_get_completions(conn->cq, c, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_ptr_equal(c[0].op_context, (void *)0xa);
	assert_int_equal(c[0].op, PMREP_OP_RECV);
	assert_int_equal(c[0].byte_len, 5);
	assert_ptr_equal(c[1].op_context, (void *)0xb);
	assert_int_equal(c[1].op, PMREP_OP_SEND);
	assert_int_equal(verbs_sq_ring_outstanding(&vc->sq), 0);
	assert_int_equal(verbs_rq_table_outstanding(&vc->rq), 0);

	assert_int_equal(pmrep_conn_delete(&conn), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* the books themselves: a reset (a replaced QP) makes every earlier wr_id
 * stale, in the send ring and the receive table alike */
static void
T25_reset_books_refuse_every_earlier_wr_id(void **state)
{
	(void) state;
	struct verbs_sq_ring ring;
	struct verbs_rq_table t;
	assert_int_equal(verbs_sq_ring_init(&ring, 4), 0);
	assert_int_equal(verbs_rq_table_init(&t, 4), 0);
	uint64_t s_old[2], r_old;
	for (int i = 0; i < 2; i++)
		assert_int_equal(verbs_sq_ring_get(&ring, PMREP_OP_WRITE,
				(void *)0x1, &s_old[i]), 0);
	assert_int_equal(verbs_rq_table_get(&t, (void *)0x2, &r_old), 0);
	verbs_sq_ring_reset(&ring);
	verbs_rq_table_reset(&t);

	uint64_t s_new, r_new;
	assert_int_equal(verbs_sq_ring_get(&ring, PMREP_OP_SEND, (void *)0x3,
			&s_new), 0);
	assert_int_equal(verbs_rq_table_get(&t, (void *)0x4, &r_new), 0);
	assert_int_equal(VERBS_WR_SLOT(s_new), VERBS_WR_SLOT(s_old[0]));
	assert_int_equal(VERBS_WR_SLOT(r_new), VERBS_WR_SLOT(r_old));
	assert_false(verbs_sq_ring_current(&ring, s_old[1]));
	assert_true(verbs_sq_ring_current(&ring, s_new));

	const void *ctx = NULL;
	enum pmrep_op op;
	int st = 0;
	/* s_old[1] would free slots 0..1 -- the new request's among them */
	assert_int_equal(verbs_sq_ring_complete_wc(&ring, s_old[1], 0, &ctx,
			&op, &st), VERBS_WR_STALE);
	assert_false(verbs_sq_ring_complete(&ring, s_old[0], &ctx, &op));
	assert_int_equal(verbs_sq_ring_outstanding(&ring), 1);
	assert_int_equal(verbs_rq_table_complete(&t, r_old, &ctx),
			VERBS_WR_STALE);
	verbs_rq_table_put(&t, r_old);		/* frees nothing either */
	assert_int_equal(verbs_rq_table_outstanding(&t), 1);

	assert_int_equal(verbs_sq_ring_complete_wc(&ring, s_new, 0, &ctx, &op,
			&st), VERBS_WR_DONE);
	assert_ptr_equal(ctx, (void *)0x3);
	assert_int_equal(verbs_rq_table_complete(&t, r_new, &ctx),
			VERBS_WR_DONE);
	assert_ptr_equal(ctx, (void *)0x4);
	/* exactly once */
	assert_int_equal(verbs_sq_ring_complete_wc(&ring, s_new, 0, &ctx, &op,
			&st), VERBS_WR_UNKNOWN);
	assert_int_equal(verbs_rq_table_complete(&t, r_new, &ctx),
			VERBS_WR_UNKNOWN);
	verbs_sq_ring_fini(&ring);
	verbs_rq_table_fini(&t);
}

/*
 * A conn lost with requests in flight is deleted and re-created at once
 * on the same shared completion channel: the old CQ's event, queued and
 * not taken, goes away with it; the wait reports only the new conn's CQ
 * (ASan: nothing of the old conn is touched).
 */
static void
T25_reconnect_on_a_shared_channel_sees_only_the_new_conn(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_comp_channel *ch = NULL;
	assert_int_equal(pmrep_comp_channel_new(peer, &ch), 0);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_comp_channel(cfg, ch), 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_ALL);

	struct pmrep_conn *old = tv_active(peer, cfg, NULL, 0);
	assert_int_equal(pmrep_send(old, mr, 0, 8, PMREP_F_COMPLETION_ALWAYS,
			(void *)0x1), 0);
	mock_qp_set_state(tv_vconn(old)->qp, IBV_QPS_ERR);	/* lost */
	assert_int_equal(mock_comp_channel_pending(
			tv_vconn(old)->cq->channel), 1);
	assert_int_equal(pmrep_conn_delete(&old), 0);

	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	struct pmrep_cq *got = NULL;
	struct pmrep_conn *who = NULL;
	assert_int_equal(pmrep_comp_channel_wait(ch, 0, &got, &who),
			PMREP_E_NO_COMPLETION);
	assert_int_equal(pmrep_send(conn, mr, 8, 8, PMREP_F_COMPLETION_ALWAYS,
			(void *)0x2), 0);
	assert_int_equal(mock_qp_complete_sends(tv_vconn(conn)->qp, -1,
			IBV_WC_SUCCESS), 1);
	assert_int_equal(pmrep_comp_channel_wait(ch, 0, &got, &who), 0);
	assert_ptr_equal(who, conn);
	struct pmrep_completion c[2];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(got, c, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c[0].op_context, (void *)0x2);
	assert_int_equal(c[0].status, PMREP_WC_SUCCESS);

	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_comp_channel_delete(&ch), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* ----------------------------------------------------------------- T26 */

static struct pmrep_conn_cfg *
queues_cfg(uint32_t sq, uint32_t rq, uint32_t cq, uint32_t rcq)
{
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, sq), 0);
	assert_int_equal(pmrep_conn_cfg_set_rq_size(cfg, rq), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, cq), 0);
	if (rcq)
		assert_int_equal(pmrep_conn_cfg_set_rcq_size(cfg, rcq), 0);
	return cfg;
}

/* the CQ covers every queue it serves, however small cq_size is */
static void
T26_cq_size_requested_covers_the_queues_it_serves(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	/* one CQ for the SQ and the RQ: 16 + 8, +1 each for the drain
	 * markers of conn delete */
	struct pmrep_conn_cfg *cfg = queues_cfg(16, 8, 4, 0);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	assert_true(icq(conn->cq)->cqe >= 16 + 1 + 8 + 1);
	assert_true(vcq(conn->cq)->cqe >= 16 + 1 + 8 + 1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);

	/* a receive CQ of its own: each covers its queue */
	cfg = queues_cfg(16, 8, 4, 2);
	conn = tv_active(peer, cfg, NULL, 0);
	assert_true(icq(conn->cq)->cqe >= 16 + 1);
	assert_true(icq(conn->rcq)->cqe >= 8 + 1);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);

	/* an SRQ's receive CQ: every receive the SRQ can hold */
	struct pmrep_srq *srq = NULL;
	assert_int_equal(pmrep_srq_new(peer, 32, 4, &srq), 0);
	assert_true(icq(srq->rcq)->cqe >= 32);
	assert_int_equal(pmrep_srq_delete(&srq), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* a device that grants fewer entries than asked: refused, clearly */
static void
T26_smaller_cq_granted_by_the_device_is_refused(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = queues_cfg(16, 8, 4, 0);
	mock_cq_set_grant_max(20);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, cfg, &req),
			PMREP_E_PROVIDER);
	assert_null(req);
	assert_int_equal(pmrep_err_errno(), ENOSPC);
	assert_true(mock_cq_last_requested() >= 26);
	assert_true(tv_logged("the device gave the CQ 20 entries"));
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(mock_live(MOCK_QP), 0);

	struct pmrep_srq *srq = NULL;
	assert_int_equal(pmrep_srq_new(peer, 32, 4, &srq), PMREP_E_PROVIDER);
	assert_null(srq);
	assert_int_equal(mock_live(MOCK_CQ), 0);
	assert_int_equal(mock_live(MOCK_SRQ), 0);

	/* enough: accepted */
	mock_cq_set_grant_max(26);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	assert_int_equal(icq(conn->cq)->cqe, 26);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/*
 * Every queue full, the consumer stalled: all sends and receives complete
 * and then the QP fails (flushing nothing more) -- or it fails with all of
 * them in flight (every one flushed): the CQ holds them all, no overrun,
 * no CQ_ERR. One more post on the full SQ is refused with PMREP_E_AGAIN
 * before the device is asked.
 */
static void
T26_full_queues_and_a_stalled_consumer_never_overrun_the_cq(void **state)
{
	(void) state;
	enum { SQ = 8, RQ = 8 };
	for (int flushed = 0; flushed < 2; flushed++) {
		struct pmrep_peer *peer = tv_peer();
		struct pmrep_conn_cfg *cfg = queues_cfg(SQ, RQ, 1, 0);
		struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
		struct verbs_conn *vc = tv_vconn(conn);
		struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
		for (uintptr_t i = 0; i < RQ; i++)
			assert_int_equal(pmrep_recv(conn, mr, 2048 + i * 64, 64,
					(void *)(0x100 + i)), 0);
		for (uintptr_t i = 0; i < SQ; i++)
			assert_int_equal(pmrep_send(conn, mr, i * 64, 64,
					PMREP_F_COMPLETION_ALWAYS,
					(void *)(0x200 + i)), 0);
		unsigned posts = mock_calls("ibv_post_send");
		assert_int_equal(pmrep_send(conn, mr, 0, 64,
				PMREP_F_COMPLETION_ALWAYS, (void *)0x300),
				PMREP_E_AGAIN);
		assert_int_equal(mock_calls("ibv_post_send"), posts);
		assert_true(tv_logged("send queue full"));

		if (!flushed) {
			assert_int_equal(mock_qp_complete_sends(vc->qp, -1,
					IBV_WC_SUCCESS), SQ);
			for (int i = 0; i < RQ; i++)
				mock_qp_recv(vc->qp, "x", 1);
		}
		mock_qp_set_state(vc->qp, IBV_QPS_ERR);
		struct ibv_cq *cq = icq(conn->cq);
		assert_int_equal(mock_cq_depth(cq), SQ + RQ);
		assert_int_equal(mock_cq_overruns(cq), 0);
		assert_int_equal(mock_async_pending(mock_cm_context()), 0);

		struct pmrep_completion c[SQ + RQ];
		int n = 0;
		assert_int_equal(pmrep_cq_get_completions(conn->cq, c, SQ + RQ,
				&n), 0);
		assert_int_equal(n, SQ + RQ);
		for (int i = 0; i < n; i++)
			assert_int_equal(c[i].status, flushed ?
					PMREP_WC_FLUSHED : PMREP_WC_SUCCESS);
		assert_int_equal(pmrep_conn_delete(&conn), 0);
		tv_mr_free(mr);
		assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
		assert_int_equal(pmrep_peer_delete(&peer), 0);
		mock_reset();
		tv_log_capture();
	}
}

/*
 * The peer's reply (a receive) is polled before the send completion of
 * the request it answers: it frees no send-queue slot; only the send
 * completion does.
 */
static void
T26_reply_before_send_completion_does_not_free_the_sq_slot(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn_cfg *cfg = queues_cfg(2, 2, 1, 0);
	struct pmrep_conn *conn = tv_active(peer, cfg, NULL, 0);
	struct verbs_conn *vc = tv_vconn(conn);
	struct pmrep_mr_local *mr = tv_mr(peer, 4096, PMREP_MR_USAGE_ALL);
	assert_int_equal(pmrep_recv(conn, mr, 1024, 64, (void *)0x10), 0);
	assert_int_equal(pmrep_send(conn, mr, 0, 64, PMREP_F_COMPLETION_ALWAYS,
			(void *)0x20), 0);
	/* the answer comes first */
	mock_qp_recv(vc->qp, "reply", 5);
	struct pmrep_completion c[4];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(conn->cq, c, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].op, PMREP_OP_RECV);
	assert_int_equal(verbs_sq_ring_outstanding(&vc->sq), 1);
	assert_int_equal(pmrep_send(conn, mr, 64, 64, PMREP_F_COMPLETION_ALWAYS,
			(void *)0x21), 0);
	assert_int_equal(pmrep_send(conn, mr, 128, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)0x22), PMREP_E_AGAIN);
	/* the send completions free them */
	assert_int_equal(mock_qp_complete_sends(vc->qp, -1, IBV_WC_SUCCESS), 2);
	assert_int_equal(pmrep_cq_get_completions(conn->cq, c, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_ptr_equal(c[0].op_context, (void *)0x20);
	assert_ptr_equal(c[1].op_context, (void *)0x21);
	assert_int_equal(verbs_sq_ring_outstanding(&vc->sq), 0);
	assert_int_equal(pmrep_send(conn, mr, 128, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)0x22), 0);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* the repl layer's GPSPM persist over a mocked verbs conn */
struct gpspm_fx {
	struct pmrep_peer *peer;
	struct pmrep_conn_cfg *cfg;
	struct pmrep_conn *conn;
	struct pmrep_mr_local *src, *target;
	struct pmrep_mirror m;
	struct replica r;
};

static void
gpspm_open(struct gpspm_fx *f)
{
	memset(f, 0, sizeof(*f));
	f->peer = tv_peer();
	f->cfg = queues_cfg(64, CHAN_NRECV, 128, 0);
	f->src = tv_mr(f->peer, 8192, PMREP_MR_USAGE_ALL);
	f->target = tv_mr(f->peer, 8192, PMREP_MR_USAGE_ALL);
	assert_int_equal(repl_chan_init(&f->r.ch, f->peer), 0);
	struct pmrep_conn_req *req = tv_req(f->peer, f->cfg);
	assert_int_equal(repl_chan_post_recvs(&f->r.ch, req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &f->conn), 0);
	uint8_t fr[8];
	uint8_t flen = tv_frame(fr, NULL, 0);
	mock_cm_queue_event(tv_vconn(f->conn)->id, RDMA_CM_EVENT_ESTABLISHED,
			0, fr, flen);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(f->conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	assert_int_equal(repl_chan_attach(&f->r.ch, f->conn), 0);
	f->m.next_seq = 7;
	f->r.m = &f->m;
	f->r.conn = f->conn;
	f->r.src = f->src;
	f->r.rmr = tv_remote(f->target);
	f->r.method = PMREP_MIRROR_METHOD_GPSPM;
}

static void
gpspm_close(struct gpspm_fx *f)
{
	assert_int_equal(pmrep_conn_delete(&f->conn), 0);
	repl_chan_detach(&f->r.ch);
	repl_chan_fini(&f->r.ch);
	assert_int_equal(pmrep_mr_remote_delete(&f->r.rmr), 0);
	tv_mr_free(f->src);
	tv_mr_free(f->target);
	assert_int_equal(pmrep_conn_cfg_delete(&f->cfg), 0);
	assert_int_equal(pmrep_peer_delete(&f->peer), 0);
}

static void
gpspm_reply(struct gpspm_fx *f, uint64_t seq)
{
	struct repl_msg msg = { .type = REPL_MSG_PERSIST_REPLY,
		.status = REPL_ST_OK, .seq = seq };
	uint8_t buf[REPL_MSG_SLOT];
	size_t len = repl_msg_encode(&msg, buf);
	mock_qp_recv(tv_vconn(f->conn)->qp, buf, (uint32_t)len);
}

/*
 * A GPSPM persist is finished only when both its send completion and the
 * target's reply were seen, in either order, and exactly once: a second
 * reply for it is an unexpected message.
 */
static void
T26_gpspm_persist_finishes_on_both_send_completion_and_reply(void **state)
{
	(void) state;
	for (int reply_first = 0; reply_first < 2; reply_first++) {
		struct gpspm_fx f;
		gpspm_open(&f);
		struct ibv_qp *qp = tv_vconn(f.conn)->qp;
		assert_int_equal(replica_post_range(&f.r, 0, 4096,
				mirror_next_seq(&f.m), false, -1), 0);
		assert_int_equal(f.r.r_n, 1);
		struct inflight *e = replica_ring_at(&f.r, 0);
		assert_int_equal(e->seq, 7);
		/* the write (unsignalled, held by MORE) and the send */
		assert_int_equal(mock_qp_outstanding_sends(qp), 2);

		if (reply_first) {
			gpspm_reply(&f, e->seq);
			assert_int_equal(replica_progress(&f.r), 0);
			/* the send has not completed: not finished */
			assert_int_equal(f.r.r_n, 1);
			assert_false(repl_chan_send_done(&f.r.ch, e->send_slot));
			assert_int_equal(verbs_sq_ring_outstanding(
					&tv_vconn(f.conn)->sq), 2);
			assert_int_equal(mock_qp_complete_sends(qp, -1,
					IBV_WC_SUCCESS), 2);
		} else {
			assert_int_equal(mock_qp_complete_sends(qp, -1,
					IBV_WC_SUCCESS), 2);
			assert_int_equal(replica_progress(&f.r), 0);
			/* no reply yet: not finished */
			assert_int_equal(f.r.r_n, 1);
			assert_true(repl_chan_send_done(&f.r.ch, e->send_slot));
			gpspm_reply(&f, e->seq);
		}
		assert_int_equal(replica_progress(&f.r), 0);
		assert_int_equal(f.r.r_n, 0);
		assert_int_equal(verbs_sq_ring_outstanding(&tv_vconn(f.conn)->sq),
				0);
		assert_int_equal(f.r.ch.sends_in_flight, 0);
		/* exactly once: the same reply again is not taken */
		gpspm_reply(&f, 7);
		assert_int_equal(replica_progress(&f.r), PMREP_E_MALFORMED);
		gpspm_close(&f);
		mock_reset();
		tv_log_capture();
	}
}

/*
 * Pipelined GPSPM: several persist requests in flight on one conn are
 * confirmed oldest first, each when its reply and its own send completion
 * were seen; a reply that is not the oldest unanswered request's (the
 * target answers in order) is an unexpected message.
 */
static void
gpspm_pipelined_requests_are_confirmed_in_order(void **state)
{
	(void) state;
	struct gpspm_fx f;
	gpspm_open(&f);
	struct ibv_qp *qp = tv_vconn(f.conn)->qp;
	for (int i = 0; i < 3; i++)
		assert_int_equal(replica_post_range(&f.r, (uint64_t)i * 1024,
				1024, mirror_next_seq(&f.m), false, -1), 0);
	assert_int_equal(f.r.r_n, 3);
	uint64_t s0 = replica_ring_at(&f.r, 0)->seq;
	uint64_t s2 = replica_ring_at(&f.r, 2)->seq;
	assert_int_equal(s2, s0 + 2);
	assert_int_equal(mock_qp_complete_sends(qp, -1, IBV_WC_SUCCESS), 6);
	gpspm_reply(&f, s0);
	gpspm_reply(&f, s0 + 1);
	assert_int_equal(replica_progress(&f.r), 0);
	assert_int_equal(f.r.r_n, 1);
	assert_int_equal(replica_ring_at(&f.r, 0)->seq, s2);
	assert_int_equal(replica_ring_at(&f.r, 0)->off, 2048);
	/* the answer to an older request again: out of order */
	gpspm_reply(&f, s0 + 1);
	assert_int_equal(replica_progress(&f.r), PMREP_E_MALFORMED);
	gpspm_close(&f);
	mock_reset();
	tv_log_capture();
}

/* an overrun reported as IBV_EVENT_CQ_ERR fails the conns of that CQ */
static void
T26_cq_err_async_event_fails_the_conns_with_a_clear_error(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *a = tv_active(peer, NULL, NULL, 0);
	struct pmrep_conn *b = tv_active(peer, NULL, NULL, 0);
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_ALL);
	mock_async_cq(icq(a->cq), IBV_EVENT_CQ_ERR);
	enum pmrep_async_event aev;
	assert_int_equal(pmrep_peer_handle_async_event(peer, &aev), 0);
	assert_int_equal(aev, PMREP_ASYNC_CQ_ERROR);
	assert_true(tv_logged("CQ error"));
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(a, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_send(a, mr, 0, 8, PMREP_F_COMPLETION_ALWAYS,
			NULL), PMREP_E_CONN_LOST);
	/* the other conn's CQ is not in error */
	assert_int_equal(pmrep_conn_next_event(b, &ev), PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_send(b, mr, 0, 8, PMREP_F_COMPLETION_ALWAYS,
			NULL), 0);
	assert_int_equal(pmrep_conn_delete(&a), 0);
	assert_int_equal(pmrep_conn_delete(&b), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/* the device refuses to poll the CQ (in error): its conn is LOST at once
 * with a clear error, no waiting for completions that never come */
static void
T26_cq_that_cannot_be_polled_fails_its_conn(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_conn *conn = tv_active(peer, NULL, NULL, 0);
	int fd;
	assert_int_equal(pmrep_conn_get_event_fd(conn, &fd), 0);
	mock_fail("ibv_poll_cq", 1, EIO);
	struct pmrep_completion c;
	int n = -1;
	assert_int_equal(pmrep_cq_get_completions(conn->cq, &c, 1, &n),
			PMREP_E_PROVIDER);
	assert_int_equal(n, 0);
	assert_true(tv_logged("delivers nothing more"));
	assert_true(tv_readable(fd, 0));
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_delete(&conn), 0);

	/* an SRQ's receive CQ: every conn on the SRQ */
	struct pmrep_srq *srq = NULL;
	assert_int_equal(pmrep_srq_new(peer, 8, 8, &srq), 0);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_srq(cfg, srq), 0);
	struct pmrep_conn *x = tv_active(peer, cfg, NULL, 0);
	struct pmrep_conn *y = tv_active(peer, NULL, NULL, 0);
	mock_fail("ibv_poll_cq", 1, EIO);
	assert_int_equal(pmrep_cq_get_completions(srq->rcq, &c, 1, &n),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_conn_next_event(x, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_next_event(y, &ev), PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_conn_delete(&x), 0);
	assert_int_equal(pmrep_conn_delete(&y), 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_srq_delete(&srq), 0);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, tv_setup, tv_teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(T25_old_incarnation_completion_after_reconnect_is_dropped_and_counted),
		T(T25_reset_books_refuse_every_earlier_wr_id),
		T(T25_reconnect_on_a_shared_channel_sees_only_the_new_conn),
		T(T26_cq_size_requested_covers_the_queues_it_serves),
		T(T26_smaller_cq_granted_by_the_device_is_refused),
		T(T26_full_queues_and_a_stalled_consumer_never_overrun_the_cq),
		T(T26_reply_before_send_completion_does_not_free_the_sq_slot),
		T(T26_gpspm_persist_finishes_on_both_send_completion_and_reply),
		T(gpspm_pipelined_requests_are_confirmed_in_order),
		T(T26_cq_err_async_event_fails_the_conns_with_a_clear_error),
		T(T26_cq_that_cannot_be_polled_fails_its_conn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
