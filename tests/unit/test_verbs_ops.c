/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_ops.c -- posting: the work request each op becomes, atomic
 * write (native or an inline fenced write), flush (VISIBILITY and
 * PERSISTENT: native, APM or "not supported", never a downgrade: T14),
 * completions reported with the op that was posted, a full send queue, and
 * post failures.
 */
#include "test_verbs_util.h"

/* complete everything posted (successfully) and take one completion */
static struct pmrep_completion
complete_one(struct tv_post_fx *f)
{
	mock_qp_complete_sends(tv_vconn(f->conn)->qp, -1, IBV_WC_SUCCESS);
	struct pmrep_completion c;
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(f->conn->cq, &c, 1, &n), 0);
	assert_int_equal(n, 1);
	return c;
}

static void
read_write_send_become_the_matching_work_requests(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	const struct mock_wr *w;
	uint64_t raddr = f.remote->raddr;

	assert_int_equal(pmrep_read(f.conn, f.local, 8, f.remote, 16, 100,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	w = mock_send_last();
	assert_int_equal(w->opcode, IBV_WR_RDMA_READ);
	assert_true(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->remote_addr, raddr + 16);
	assert_int_equal(w->rkey, f.remote->rkey);
	assert_int_equal(w->num_sge, 1);
	assert_int_equal(w->sge[0].addr, (uintptr_t)f.local->ptr + 8);
	assert_int_equal(w->sge[0].length, 100);
	assert_int_equal(w->sge[0].lkey, verbs_mr_lkey(f.local));
	assert_false(w->bad_lkey);

	assert_int_equal(pmrep_write(f.conn, f.remote, 32, f.local, 0, 64,
			PMREP_F_COMPLETION_ON_ERROR, (void *)2), 0);
	w = mock_send_last();
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE);
	assert_false(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->remote_addr, raddr + 32);

	assert_int_equal(pmrep_write_with_imm(f.conn, f.remote, 0, f.local, 0,
			64, 0xdeadbeef, PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	w = mock_send_last();
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	assert_true(w->has_imm);
	assert_int_equal(w->imm, 0xdeadbeef);

	assert_int_equal(pmrep_send(f.conn, f.local, 4, 12,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	w = mock_send_last();
	assert_int_equal(w->opcode, IBV_WR_SEND);
	assert_int_equal(w->length, 12);
	assert_int_equal(pmrep_send_with_imm(f.conn, NULL, 0, 0, 7,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	w = mock_send_last();
	assert_int_equal(w->opcode, IBV_WR_SEND_WITH_IMM);
	assert_int_equal(w->num_sge, 0);
	assert_int_equal(w->imm, 7);

	assert_int_equal(pmrep_recv(f.conn, f.local, 64, 128, (void *)9), 0);
	w = mock_recv_last();
	assert_int_equal(w->sge[0].addr, (uintptr_t)f.local->ptr + 64);
	assert_int_equal(w->sge[0].length, 128);
	assert_false(w->bad_lkey);
	tv_post_fx_close(&f);
}

static void
completions_report_the_op_and_context_that_were_posted(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	struct pmrep_completion c;

	assert_int_equal(pmrep_read(f.conn, f.local, 0, f.remote, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	c = complete_one(&f);
	assert_int_equal(c.op, PMREP_OP_READ);
	assert_ptr_equal(c.op_context, (void *)1);
	assert_int_equal(c.status, PMREP_WC_SUCCESS);

	/* on the wire a READ / a WRITE: reported as what the user asked */
	assert_int_equal(pmrep_flush(f.conn, f.remote, 0, 8,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			(void *)2), 0);
	c = complete_one(&f);
	assert_int_equal(c.op, PMREP_OP_FLUSH);
	assert_ptr_equal(c.op_context, (void *)2);
	const uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 8, v,
			PMREP_F_COMPLETION_ALWAYS, (void *)3), 0);
	c = complete_one(&f);
	assert_int_equal(c.op, PMREP_OP_ATOMIC_WRITE);
	assert_ptr_equal(c.op_context, (void *)3);
	assert_int_equal(pmrep_send(f.conn, f.local, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, (void *)4), 0);
	c = complete_one(&f);
	assert_int_equal(c.op, PMREP_OP_SEND);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, (void *)5), 0);
	c = complete_one(&f);
	assert_int_equal(c.op, PMREP_OP_WRITE);

	/* receives, with immediate data in host order */
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 64, (void *)6), 0);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 64, (void *)7), 0);
	mock_qp_recv_imm(tv_vconn(f.conn)->qp, "xy", 2, 0x01020304, false);
	mock_qp_recv_imm(tv_vconn(f.conn)->qp, NULL, 40, 42, true);
	struct pmrep_completion cc[2];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, cc, 2, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(cc[0].op, PMREP_OP_RECV);
	assert_ptr_equal(cc[0].op_context, (void *)6);
	assert_true(cc[0].has_imm);
	assert_int_equal(cc[0].imm, 0x01020304);
	assert_int_equal(cc[0].byte_len, 2);
	assert_int_equal(cc[1].op, PMREP_OP_RECV_RDMA_WITH_IMM);
	assert_ptr_equal(cc[1].op_context, (void *)7);
	assert_int_equal(cc[1].imm, 42);
	tv_post_fx_close(&f);
}

static void
error_completion_reports_status_and_context_only(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 8,
			PMREP_F_COMPLETION_ON_ERROR, (void *)1), 0);
	assert_int_equal(pmrep_read(f.conn, f.local, 0, f.remote, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, (void *)2), 0);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 8, (void *)3), 0);
	/* the first fails: the QP goes to error, the rest are flushed; the
	 * mock's error WCs carry a garbage opcode pmrep must not read */
	mock_qp_complete_sends(tv_vconn(f.conn)->qp, 1, IBV_WC_REM_ACCESS_ERR);
	struct pmrep_completion c[4];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 4, &n), 0);
	assert_int_equal(n, 3);
	assert_ptr_equal(c[0].op_context, (void *)1);
	assert_int_equal(c[0].status, PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_ptr_equal(c[1].op_context, (void *)2);
	assert_int_equal(c[1].status, PMREP_WC_FLUSHED);
	assert_ptr_equal(c[2].op_context, (void *)3);
	assert_int_equal(c[2].status, PMREP_WC_FLUSHED);
	for (int i = 0; i < 3; i++) {
		assert_false(c[i].has_imm);
		assert_int_equal(c[i].byte_len, 0);
	}
	tv_post_fx_close(&f);
}

/* ------------------------------------------------------- atomic write */

static void
atomic_write_without_native_support_is_inline_fenced_8_byte_write(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	const uint8_t v[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 16, v,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	const struct mock_wr *w = mock_send_last();
	assert_false(w->via_wr_api);
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE);
	assert_true(w->send_flags & IBV_SEND_INLINE);
	assert_true(w->send_flags & IBV_SEND_FENCE);
	assert_false(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->length, 8);
	assert_int_equal(w->data_len, 8);
	assert_memory_equal(w->data, v, 8);
	assert_int_equal(w->remote_addr, f.remote->raddr + 16);
	tv_post_fx_close(&f);
}

static void
atomic_write_with_native_support_uses_ibv_wr_atomic_write(void **state)
{
	(void) state;
	mock_dev_set_atomic_write(true);
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	struct mock_qp_info qi;
	mock_qp_info(tv_vconn(f.conn)->qp, &qi);
	assert_true(qi.is_ex);
	assert_true(qi.send_ops_flags & IBV_QP_EX_WITH_ATOMIC_WRITE);
	const uint8_t v[8] = { 1, 1, 2, 3, 5, 8, 13, 21 };
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 24, v,
			PMREP_F_COMPLETION_ALWAYS, (void *)0xa), 0);
	const struct mock_wr *w = mock_send_last();
	assert_true(w->via_wr_api);
	assert_int_equal(w->opcode, IBV_WR_ATOMIC_WRITE);
	assert_true(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->remote_addr, f.remote->raddr + 24);
	assert_int_equal(w->rkey, f.remote->rkey);
	assert_memory_equal(w->data, v, 8);
	struct pmrep_completion c = complete_one(&f);
	assert_int_equal(c.op, PMREP_OP_ATOMIC_WRITE);
	assert_ptr_equal(c.op_context, (void *)0xa);
	/* ibv_wr_complete failing: full queue vs another error */
	mock_fail("ibv_wr_complete", 1, ENOMEM);
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 24, v,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_AGAIN);
	mock_fail("ibv_wr_complete", 1, EINVAL);
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 24, v,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EINVAL);
	tv_post_fx_close(&f);
}

/* ------------------------------------------------------------ flush */

static void
flush_visibility_is_a_one_byte_read_of_the_last_byte(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	assert_int_equal(pmrep_flush(f.conn, f.remote, 100, 50,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			NULL), 0);
	const struct mock_wr *w = mock_send_last();
	assert_int_equal(w->opcode, IBV_WR_RDMA_READ);
	assert_true(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->remote_addr, f.remote->raddr + 149);
	assert_int_equal(w->rkey, f.remote->rkey);
	assert_int_equal(w->length, 1);
	/* into the peer's own sink, never a user buffer */
	struct verbs_peer *vp = verbs_peer(f.peer);
	assert_int_equal(w->sge[0].addr, (uintptr_t)vp->sink);
	assert_int_equal(w->sge[0].lkey, vp->sink_mr->lkey);
	assert_false(w->bad_lkey);
	tv_post_fx_close(&f);
}

static void
t14_persistent_flush_without_native_or_apm_is_nosupp_never_downgraded(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	tv_set_direct_write(f.conn, false);
	enum pmrep_flush_method m;
	assert_int_equal(pmrep_conn_get_flush_method(f.conn, &m), 0);
	assert_int_equal(m, PMREP_FLUSH_METHOD_NONE);
	size_t posted = mock_send_count();
	assert_int_equal(pmrep_flush(f.conn, f.remote, 0, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			NULL), PMREP_E_NOSUPP);
	assert_int_equal(mock_send_count(), posted);
	/* the provider refuses on its own too (no generic check) */
	struct pmrep_op_args a = {
		.conn = f.conn, .op = PMREP_OP_FLUSH, .remote = f.remote,
		.len = 64, .flush_type = PMREP_FLUSH_TYPE_PERSISTENT,
		.signaled = true,
	};
	assert_int_equal(pmrep_verbs_ops.post(&a), PMREP_E_NOSUPP);
	f.conn->flush_method = PMREP_FLUSH_METHOD_APM;	/* a stale method */
	assert_int_equal(pmrep_verbs_ops.post(&a), PMREP_E_NOSUPP);
	f.conn->flush_method = PMREP_FLUSH_METHOD_NATIVE; /* not on this QP */
	assert_int_equal(pmrep_verbs_ops.post(&a), PMREP_E_NOSUPP);
	assert_int_equal(mock_send_count(), posted);
	tv_post_fx_close(&f);
}

static void
t14_persistent_flush_apm_is_a_read_behind_the_writes(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	tv_set_direct_write(f.conn, true);
	enum pmrep_flush_method m;
	assert_int_equal(pmrep_conn_get_flush_method(f.conn, &m), 0);
	assert_int_equal(m, PMREP_FLUSH_METHOD_APM);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 4096,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_write(f.conn, f.remote, 4096, f.local, 0, 4096,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_flush(f.conn, f.remote, 0, 8192,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)0xf), 0);
	assert_int_equal(mock_send_count(), 3);
	const struct mock_wr *w = mock_send_wr(2);
	assert_int_equal(w->opcode, IBV_WR_RDMA_READ);
	assert_true(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->remote_addr, f.remote->raddr + 8191);
	assert_int_equal(mock_send_wr(0)->qp_num, w->qp_num);
	/* one completion reports all three */
	mock_qp_complete_sends(tv_vconn(f.conn)->qp, -1, IBV_WC_SUCCESS);
	struct pmrep_completion c[4];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].op, PMREP_OP_FLUSH);
	assert_ptr_equal(c[0].op_context, (void *)0xf);
	assert_int_equal(mock_qp_sq_used(tv_vconn(f.conn)->qp), 0);
	tv_post_fx_close(&f);
}

static void
t14_apm_flush_into_a_region_without_persistent_usage_is_nosupp(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	tv_set_direct_write(f.conn, true);
	struct pmrep_mr_local *plain = tv_mr(f.peer, 64,
			PMREP_MR_USAGE_WRITE_DST);
	struct pmrep_mr_remote *r = tv_remote(plain);
	assert_int_equal(pmrep_flush(f.conn, r, 0, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			NULL), PMREP_E_NOSUPP);
	assert_int_equal(pmrep_mr_remote_delete(&r), 0);
	tv_mr_free(plain);
	tv_post_fx_close(&f);
}

static void
t14_failed_flush_is_an_error_completion_never_success(void **state)
{
	(void) state;
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	tv_set_direct_write(f.conn, true);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 64,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_flush(f.conn, f.remote, 0, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)0xf), 0);
	/* the write lands; the read-after-write is refused by the target */
	mock_qp_complete_sends(tv_vconn(f.conn)->qp, 1, IBV_WC_SUCCESS);
	mock_qp_complete_sends(tv_vconn(f.conn)->qp, 1, IBV_WC_REM_ACCESS_ERR);
	struct pmrep_completion c[2];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c[0].op_context, (void *)0xf);
	assert_int_equal(c[0].status, PMREP_WC_REMOTE_ACCESS_ERROR);
	tv_post_fx_close(&f);
}

#ifdef PMREP_HAVE_IBV_WR_FLUSH
static void
t14_native_flush_uses_ibv_wr_flush(void **state)
{
	(void) state;
	mock_dev_set_flush(true, true);
	struct tv_post_fx f;
	tv_post_fx_open(&f, NULL);
	enum pmrep_flush_method m;
	assert_int_equal(pmrep_conn_get_flush_method(f.conn, &m), 0);
	assert_int_equal(m, PMREP_FLUSH_METHOD_NATIVE);
	assert_int_equal(pmrep_flush(f.conn, f.remote, 0, 64,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			NULL), 0);
	const struct mock_wr *w = mock_send_last();
	assert_true(w->via_wr_api);
	assert_int_equal(w->opcode, IBV_WR_FLUSH);
	assert_int_equal(w->flush_type, IBV_FLUSH_PERSISTENT);
	tv_post_fx_close(&f);
}
#endif

/* ------------------------------------------------- queues and failures */

static void
full_send_queue_is_again_until_a_signalled_completion_frees_it(void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 4), 0);
	struct tv_post_fx f;
	tv_post_fx_open(&f, cfg);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 8,
				PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, (void *)4), 0);
	assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_AGAIN);
	/* the signalled one completes: it frees every slot before it */
	struct pmrep_completion c = complete_one(&f);
	assert_ptr_equal(c.op_context, (void *)4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pmrep_write(f.conn, f.remote, 0, f.local, 0, 8,
				PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	tv_post_fx_close(&f);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

static void
full_receive_queue_is_again(void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_rq_size(cfg, 2), 0);
	struct tv_post_fx f;
	tv_post_fx_open(&f, cfg);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 8, NULL), 0);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 8, NULL), 0);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 8, NULL),
			PMREP_E_AGAIN);
	mock_qp_recv(tv_vconn(f.conn)->qp, "a", 1);
	struct pmrep_completion c;
	int n;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, &c, 1, &n), 0);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 8, NULL), 0);
	tv_post_fx_close(&f);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

static void
post_failures_are_provider_errors_and_free_their_slot(void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 1), 0);
	assert_int_equal(pmrep_conn_cfg_set_rq_size(cfg, 1), 0);
	struct tv_post_fx f;
	tv_post_fx_open(&f, cfg);
	mock_fail("ibv_post_send", 1, EINVAL);
	assert_int_equal(pmrep_read(f.conn, f.local, 0, f.remote, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EINVAL);
	mock_fail("ibv_post_send", 1, ENOMEM);
	assert_int_equal(pmrep_read(f.conn, f.local, 0, f.remote, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_AGAIN);
	/* the slot is free again */
	assert_int_equal(pmrep_read(f.conn, f.local, 0, f.remote, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), 0);
	mock_fail("ibv_post_recv", 1, EINVAL);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 8, NULL),
			PMREP_E_PROVIDER);
	mock_fail("ibv_post_recv", 1, ENOMEM);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 8, NULL),
			PMREP_E_AGAIN);
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 8, NULL), 0);
	tv_post_fx_close(&f);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

static void
posting_before_established_is_state_error_after_terminal_conn_lost(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_ALL);
	struct pmrep_mr_remote *r = tv_remote(mr);
	struct pmrep_conn_req *req = tv_req(peer, NULL);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	assert_int_equal(pmrep_write(conn, r, 0, mr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_STATE);
	/* a receive may be posted before ESTABLISHED */
	assert_int_equal(pmrep_recv(conn, mr, 0, 8, NULL), 0);
	mock_cm_queue_event(tv_vconn(conn)->id, RDMA_CM_EVENT_ESTABLISHED, 0,
			NULL, 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(pmrep_conn_disconnect(conn), 0);
	assert_int_equal(pmrep_write(conn, r, 0, mr, 0, 8,
			PMREP_F_COMPLETION_ALWAYS, NULL), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_conn_delete(&conn), 0);
	assert_int_equal(pmrep_mr_remote_delete(&r), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

/*
 * The acceptor's QP is in RTS once rdma_accept returned; the initiator may
 * send as soon as it saw ESTABLISHED, i.e. before the acceptor read its
 * own ESTABLISHED event (the replica target answers an AUTH that came that
 * fast). So a passive conn may post while CONNECTING; doing so lets the
 * state machine catch up, and the ESTABLISHED it read is still reported,
 * exactly once. An active conn in CONNECTING still may not post, and a
 * passive one whose accept failed reports CONN_LOST.
 */
static void
passive_conn_may_answer_before_it_read_established(void **state)
{
	(void) state;
	struct pmrep_peer *peer = tv_peer();
	struct pmrep_mr_local *mr = tv_mr(peer, 64, PMREP_MR_USAGE_ALL);
	struct pmrep_ep *ep = tv_listen(peer);
	struct pmrep_conn_req *req = tv_passive_req(ep, NULL, NULL, 0);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_recv(req, mr, 0, 8, (void *)1), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	assert_int_equal(tv_vconn(conn)->state, VERBS_ST_CONNECTING);

	/* the initiator's message arrived; our ESTABLISHED not read yet */
	mock_qp_recv(tv_vconn(conn)->qp, "AUTH", 4);
	struct pmrep_completion c;
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(conn->cq, &c, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(c.op, PMREP_OP_RECV);
	assert_int_equal(c.byte_len, 4);
	mock_cm_queue_event(tv_vconn(conn)->id, RDMA_CM_EVENT_ESTABLISHED, 0,
			NULL, 0);
	mock_wr_log_clear();
	assert_int_equal(pmrep_send(conn, mr, 0, 8, PMREP_F_COMPLETION_ALWAYS,
			(void *)2), 0);
	assert_int_equal(mock_send_last()->opcode, IBV_WR_SEND);
	/* the post let the machine read the event: kept for next_event */
	assert_int_equal(tv_vconn(conn)->state, VERBS_ST_ESTABLISHED);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_next_event(conn, &ev), PMREP_E_NO_EVENT);
	assert_int_equal(pmrep_send(conn, mr, 0, 8, PMREP_F_COMPLETION_ALWAYS,
			(void *)3), 0);
	assert_int_equal(pmrep_conn_delete(&conn), 0);

	/* the accept never completes: the post finds the conn lost */
	req = tv_passive_req(ep, NULL, NULL, 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	mock_cm_queue_event(tv_vconn(conn)->id, RDMA_CM_EVENT_CONNECT_ERROR,
			-ETIMEDOUT, NULL, 0);
	assert_int_equal(pmrep_send(conn, mr, 0, 8, PMREP_F_COMPLETION_ALWAYS,
			NULL), PMREP_E_CONN_LOST);
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_LOST);
	assert_int_equal(pmrep_conn_delete(&conn), 0);

	assert_int_equal(pmrep_ep_shutdown(&ep), 0);
	tv_mr_free(mr);
	assert_int_equal(pmrep_peer_delete(&peer), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(read_write_send_become_the_matching_work_requests),
		T(completions_report_the_op_and_context_that_were_posted),
		T(error_completion_reports_status_and_context_only),
		T(atomic_write_without_native_support_is_inline_fenced_8_byte_write),
		T(atomic_write_with_native_support_uses_ibv_wr_atomic_write),
		T(flush_visibility_is_a_one_byte_read_of_the_last_byte),
		T(t14_persistent_flush_without_native_or_apm_is_nosupp_never_downgraded),
		T(t14_persistent_flush_apm_is_a_read_behind_the_writes),
		T(t14_apm_flush_into_a_region_without_persistent_usage_is_nosupp),
		T(t14_failed_flush_is_an_error_completion_never_success),
#ifdef PMREP_HAVE_IBV_WR_FLUSH
		T(t14_native_flush_uses_ibv_wr_flush),
#endif
		T(full_send_queue_is_again_until_a_signalled_completion_frees_it),
		T(full_receive_queue_is_again),
		T(post_failures_are_provider_errors_and_free_their_slot),
		T(posting_before_established_is_state_error_after_terminal_conn_lost),
		T(passive_conn_may_answer_before_it_read_established),
#undef T
	};
	return cmocka_run_group_tests_name("verbs ops", tests, NULL, NULL);
}
