/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_more.c -- PMREP_F_MORE on the verbs provider: held requests
 * go out with the next request behind one doorbell (one ibv_post_send of a
 * linked chain, or one ibv_wr_start .. ibv_wr_complete when a native op is
 * in it), in order, with wr_ids that complete as the right op_context; the
 * chain posts itself at its bound; disconnect, delete and the CQ calls post
 * what is held; flags are checked; refused requests leave the chain as it
 * was; a failed post gives back exactly the slots of what it did not post.
 * Past ~800 lines: one program for PMREP_F_MORE; its cases share mock fixtures.
 */
#include "test_verbs_util.h"

/* APM: a PERSISTENT flush is a read after the writes */
static void
fx_open(struct tv_post_fx *f, const struct pmrep_conn_cfg *cfg)
{
	tv_post_fx_open(f, cfg);
	tv_set_direct_write(f->conn, true);
	mock_wr_log_clear();
}

static struct pmrep_conn_cfg *
cfg_sq(uint32_t sq_size)
{
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, sq_size), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, sq_size), 0);
	return cfg;
}

static unsigned
held(const struct tv_post_fx *f)
{
	return f->vc->hold.n;
}

static uint32_t
slots(struct tv_post_fx *f)
{
	return verbs_sq_ring_outstanding(&f->vc->sq);
}

static int
write_at(struct tv_post_fx *f, size_t off, size_t len, int flags, uintptr_t ctx)
{
	return pmrep_write(f->conn, f->remote, off, f->local, off, len, flags,
			(void *)ctx);
}

static int
persist_flush(struct tv_post_fx *f, size_t off, size_t len, int flags, uintptr_t ctx)
{
	return pmrep_flush(f->conn, f->remote, off, len,
			PMREP_FLUSH_TYPE_PERSISTENT, flags, (void *)ctx);
}

/* complete everything posted, then take up to `max` completions */
static int
complete_all(struct tv_post_fx *f, struct pmrep_completion *c, int max)
{
	mock_qp_complete_sends(f->vc->qp, -1, IBV_WC_SUCCESS);
	int n = 0;
	int ret = pmrep_cq_get_completions(f->conn->cq, c, max, &n);
	if (ret == PMREP_E_NO_COMPLETION)
		return 0;
	assert_int_equal(ret, 0);
	return n;
}

#define MORE_ON_ERROR (PMREP_F_COMPLETION_ON_ERROR | PMREP_F_MORE)
#define MORE_ALWAYS (PMREP_F_COMPLETION_ALWAYS | PMREP_F_MORE)

/* ------------------------------------------------------- one doorbell */

static void
write_more_then_flush_is_one_post_send_of_two_wrs(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	unsigned posts = mock_calls("ibv_post_send");

	assert_int_equal(write_at(&f, 64, 4096, MORE_ON_ERROR, 1), 0);
	/* held: a slot taken, nothing on the wire */
	assert_int_equal(mock_calls("ibv_post_send"), posts);
	assert_int_equal(mock_send_count(), 0);
	assert_int_equal(held(&f), 1);
	assert_int_equal(slots(&f), 1);

	assert_int_equal(persist_flush(&f, 64, 4096,
			PMREP_F_COMPLETION_ALWAYS, 2), 0);
	assert_int_equal(mock_calls("ibv_post_send"), posts + 1);
	assert_int_equal(mock_send_count(), 2);
	assert_int_equal(held(&f), 0);
	assert_int_equal(slots(&f), 2);
	const struct mock_wr *w = mock_send_wr(0);
	assert_false(w->via_wr_api);
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE);
	assert_false(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->remote_addr, f.remote->raddr + 64);
	assert_int_equal(w->rkey, f.remote->rkey);
	assert_int_equal(w->num_sge, 1);
	assert_int_equal(w->sge[0].addr, (uintptr_t)f.local->ptr + 64);
	assert_int_equal(w->sge[0].length, 4096);
	assert_int_equal(w->sge[0].lkey, verbs_mr_lkey(f.local));
	assert_false(w->bad_lkey);
	w = mock_send_wr(1);
	assert_int_equal(w->opcode, IBV_WR_RDMA_READ);
	assert_true(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->length, 1);
	assert_int_equal(w->remote_addr, f.remote->raddr + 64 + 4095);
	assert_int_equal(w->sge[0].addr, (uintptr_t)verbs_peer(f.peer)->sink);

	/* the flush's one completion reports both */
	struct pmrep_completion c[4];
	assert_int_equal(complete_all(&f, c, 4), 1);
	assert_int_equal(c[0].op, PMREP_OP_FLUSH);
	assert_ptr_equal(c[0].op_context, (void *)2);
	assert_int_equal(c[0].status, PMREP_WC_SUCCESS);
	assert_int_equal(slots(&f), 0);
	assert_int_equal(mock_qp_sq_used(f.vc->qp), 0);

	/* both signalled: each wr_id completes as its own op_context */
	mock_wr_log_clear();
	assert_int_equal(write_at(&f, 0, 8, MORE_ALWAYS, 10), 0);
	assert_int_equal(pmrep_flush(f.conn, f.remote, 0, 8,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			(void *)11), 0);
	assert_int_equal(mock_calls("ibv_post_send"), posts + 2);
	assert_int_equal(mock_send_count(), 2);
	assert_int_not_equal(mock_send_wr(0)->wr_id, mock_send_wr(1)->wr_id);
	assert_int_equal(complete_all(&f, c, 4), 2);
	assert_int_equal(c[0].op, PMREP_OP_WRITE);
	assert_ptr_equal(c[0].op_context, (void *)10);
	assert_int_equal(c[1].op, PMREP_OP_FLUSH);
	assert_ptr_equal(c[1].op_context, (void *)11);
	tv_post_fx_close(&f);
}

static void
every_posting_op_may_be_held_and_keeps_its_order(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	unsigned posts = mock_calls("ibv_post_send");
	const uint8_t v[8] = { 9, 8, 7, 6, 5, 4, 3, 2 };

	assert_int_equal(pmrep_read(f.conn, f.local, 0, f.remote, 16, 32,
			MORE_ALWAYS, (void *)1), 0);
	assert_int_equal(pmrep_write_with_imm(f.conn, f.remote, 0, f.local, 0,
			16, 0xabcd, MORE_ALWAYS, (void *)2), 0);
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 64, v,
			MORE_ALWAYS, (void *)3), 0);
	assert_int_equal(pmrep_send(f.conn, f.local, 4, 12, MORE_ALWAYS,
			(void *)4), 0);
	assert_int_equal(pmrep_send_with_imm(f.conn, NULL, 0, 0, 77,
			MORE_ALWAYS, (void *)5), 0);
	assert_int_equal(mock_calls("ibv_post_send"), posts);
	assert_int_equal(held(&f), 5);
	assert_int_equal(write_at(&f, 128, 64, PMREP_F_COMPLETION_ALWAYS, 6),
			0);
	assert_int_equal(mock_calls("ibv_post_send"), posts + 1);
	assert_int_equal(mock_send_count(), 6);
	const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_READ,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_SEND,
		IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE };
	for (size_t i = 0; i < 6; i++) {
		assert_int_equal(mock_send_wr(i)->opcode, ops[i]);
		assert_false(mock_send_wr(i)->bad_lkey);
	}
	assert_int_equal(mock_send_wr(0)->remote_addr, f.remote->raddr + 16);
	assert_int_equal(mock_send_wr(1)->imm, 0xabcd);
	assert_int_equal(mock_send_wr(3)->length, 12);
	assert_int_equal(mock_send_wr(4)->num_sge, 0);
	assert_int_equal(mock_send_wr(4)->imm, 77);
	assert_int_equal(mock_send_wr(5)->remote_addr, f.remote->raddr + 128);

	struct pmrep_completion c[8];
	assert_int_equal(complete_all(&f, c, 8), 6);
	const enum pmrep_op pops[] = { PMREP_OP_READ, PMREP_OP_WRITE,
		PMREP_OP_ATOMIC_WRITE, PMREP_OP_SEND, PMREP_OP_SEND,
		PMREP_OP_WRITE };
	for (int i = 0; i < 6; i++) {
		assert_int_equal(c[i].op, pops[i]);
		assert_ptr_equal(c[i].op_context, (void *)(uintptr_t)(i + 1));
	}
	tv_post_fx_close(&f);
}

/* the fallback atomic write is inline from the caller's buffer: held, it
 * carries its own copy, so the caller may reuse the buffer at once */
static void
held_inline_atomic_write_keeps_its_own_copy_of_the_bytes(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	const uint8_t want[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 8, v,
			MORE_ON_ERROR, NULL), 0);
	memset(v, 0xee, sizeof(v));
	assert_int_equal(persist_flush(&f, 8, 8, PMREP_F_COMPLETION_ALWAYS, 1),
			0);
	assert_int_equal(mock_send_count(), 2);
	const struct mock_wr *w = mock_send_wr(0);
	assert_true(w->send_flags & IBV_SEND_INLINE);
	assert_true(w->send_flags & IBV_SEND_FENCE);
	assert_int_equal(w->data_len, 8);
	assert_memory_equal(w->data, want, 8);
	tv_post_fx_close(&f);
}

static void
twenty_mores_post_at_the_chain_bound(void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg = cfg_sq(64);
	struct tv_post_fx f;
	fx_open(&f, cfg);
	unsigned posts = mock_calls("ibv_post_send");

	for (unsigned i = 0; i < 20; i++) {
		assert_int_equal(write_at(&f, i * 64, 64, MORE_ON_ERROR, i), 0);
		if (i + 1 < PMREP_MORE_MAX) {
			assert_int_equal(mock_calls("ibv_post_send"), posts);
			assert_int_equal(held(&f), i + 1);
		} else if (i + 1 == PMREP_MORE_MAX) {
			/* the 16th fills the chain: it posts all of them */
			assert_int_equal(mock_calls("ibv_post_send"), posts + 1);
			assert_int_equal(mock_send_count(), PMREP_MORE_MAX);
			assert_int_equal(held(&f), 0);
		} else {
			assert_int_equal(mock_calls("ibv_post_send"), posts + 1);
			assert_int_equal(held(&f), i + 1 - PMREP_MORE_MAX);
		}
	}
	assert_int_equal(slots(&f), 20);
	assert_int_equal(persist_flush(&f, 0, 20 * 64,
			PMREP_F_COMPLETION_ALWAYS, 99), 0);
	assert_int_equal(mock_calls("ibv_post_send"), posts + 2);
	assert_int_equal(mock_send_count(), 21);
	for (size_t i = 0; i < 20; i++) {
		assert_int_equal(mock_send_wr(i)->opcode, IBV_WR_RDMA_WRITE);
		assert_int_equal(mock_send_wr(i)->remote_addr,
				f.remote->raddr + i * 64);
	}
	assert_int_equal(mock_send_wr(20)->opcode, IBV_WR_RDMA_READ);
	struct pmrep_completion c[4];
	assert_int_equal(complete_all(&f, c, 4), 1);
	assert_ptr_equal(c[0].op_context, (void *)99);
	assert_int_equal(slots(&f), 0);
	tv_post_fx_close(&f);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

/* ------------------------------------------- who else posts what is held */

static void
held_request_is_posted_by_disconnect(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 5), 0);
	assert_int_equal(mock_send_count(), 0);
	assert_int_equal(pmrep_conn_disconnect(f.conn), 0);
	/* posted before the DREQ, which moved the QP to error: flushed */
	assert_int_equal(mock_send_count(), 1);
	assert_int_equal(mock_send_wr(0)->remote_addr, f.remote->raddr);
	assert_int_equal(held(&f), 0);
	struct pmrep_completion c[2];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c[0].op_context, (void *)5);
	assert_int_equal(c[0].status, PMREP_WC_FLUSHED);
	tv_post_fx_close(&f);
}

static void
held_request_on_a_qp_in_error_gets_a_flush_error(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	assert_int_equal(write_at(&f, 0, 64, MORE_ON_ERROR, 6), 0);
	/* the QP fails on its own while the request is held */
	mock_qp_set_state(f.vc->qp, IBV_QPS_ERR);
	assert_int_equal(pmrep_conn_disconnect(f.conn), 0);
	struct pmrep_completion c[2];
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c[0].op_context, (void *)6);
	assert_int_equal(c[0].status, PMREP_WC_FLUSHED);
	assert_int_equal(slots(&f), 0);
	tv_post_fx_close(&f);
}

static void
held_request_is_posted_by_delete(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	unsigned posts = mock_calls("ibv_post_send");
	assert_int_equal(write_at(&f, 256, 64, MORE_ALWAYS, 7), 0);
	assert_int_equal(pmrep_conn_delete(&f.conn), 0);
	/* the held write, then the drain marker behind it */
	assert_int_equal(mock_calls("ibv_post_send"), posts + 2);
	assert_int_equal(mock_send_count(), 2);
	assert_int_equal(mock_send_wr(0)->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(mock_send_wr(0)->remote_addr, f.remote->raddr + 256);
	assert_int_equal(mock_send_wr(1)->wr_id, VERBS_WR_DRAIN);
	tv_post_fx_close(&f);
}

static void
held_request_is_posted_by_a_cq_wait_or_poll(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	struct pmrep_completion c[2];
	int n = 0;

	/* a wait posts it before it waits: its completion wakes the wait
	 * (else it would time out) */
	mock_set_auto_complete(true);
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 9), 0);
	assert_int_equal(mock_send_count(), 0);
	assert_int_equal(pmrep_cq_wait(f.conn->cq, 1000), 0);
	assert_int_equal(mock_send_count(), 1);
	assert_int_equal(held(&f), 0);
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(c[0].op_context, (void *)9);

	/* a poll posts it (it has not completed yet) */
	mock_set_auto_complete(false);
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 8), 0);
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 2, &n),
			PMREP_E_NO_COMPLETION);
	assert_int_equal(n, 0);
	assert_int_equal(mock_send_count(), 2);
	assert_int_equal(held(&f), 0);
	assert_int_equal(complete_all(&f, c, 2), 1);
	assert_ptr_equal(c[0].op_context, (void *)8);
	tv_post_fx_close(&f);
}

static void
held_request_is_posted_by_conn_wait_on_a_shared_channel(void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_shared_comp_channel(cfg, true), 0);
	struct tv_post_fx f;
	fx_open(&f, cfg);
	mock_set_auto_complete(true);
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 3), 0);
	struct pmrep_cq *cq = NULL;
	bool is_rcq = true;
	assert_int_equal(pmrep_conn_wait(f.conn, 1000, &cq, &is_rcq), 0);
	assert_ptr_equal(cq, f.conn->cq);
	assert_false(is_rcq);
	struct pmrep_completion c;
	int n = 0;
	assert_int_equal(pmrep_cq_get_completions(cq, &c, 1, &n), 0);
	assert_ptr_equal(c.op_context, (void *)3);
	tv_post_fx_close(&f);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

/* ------------------------------------------- refusals change nothing */

static void
more_with_bad_flags_is_inval_and_changes_nothing(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	unsigned posts = mock_calls("ibv_post_send");
	assert_int_equal(write_at(&f, 0, 64, MORE_ON_ERROR, 1), 0);

	const int bad[] = {
		PMREP_F_MORE,			/* no completion flag */
		PMREP_F_MORE | PMREP_F_COMPLETION_ALWAYS |
			PMREP_F_COMPLETION_ON_ERROR,
		PMREP_F_COMPLETION_ALWAYS | (1 << 3),
		PMREP_F_MORE | PMREP_F_COMPLETION_ALWAYS | (1 << 7),
		0,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(write_at(&f, 0, 64, bad[i], 2), PMREP_E_INVAL);
		assert_int_equal(persist_flush(&f, 0, 64, bad[i], 2),
				PMREP_E_INVAL);
		assert_int_equal(pmrep_send(f.conn, f.local, 0, 8, bad[i],
				NULL), PMREP_E_INVAL);
	}
	assert_int_equal(held(&f), 1);
	assert_int_equal(slots(&f), 1);
	assert_int_equal(mock_calls("ibv_post_send"), posts);

	/* a receive takes no flags; it goes to the receive queue at once
	 * and leaves the held chain alone, even when a provider is asked
	 * to hold it */
	assert_int_equal(pmrep_recv(f.conn, f.local, 0, 64, (void *)3), 0);
	struct pmrep_op_args a = {
		.conn = f.conn, .op = PMREP_OP_RECV, .local = f.local,
		.len = 64, .signaled = true, .more = true,
		.op_context = (void *)4,
	};
	assert_int_equal(pmrep_verbs_ops.post(&a), 0);
	assert_int_equal(mock_recv_count(), 2);
	assert_int_equal(held(&f), 1);
	assert_int_equal(mock_calls("ibv_post_send"), posts);

	assert_int_equal(persist_flush(&f, 0, 64, PMREP_F_COMPLETION_ALWAYS, 5),
			0);
	assert_int_equal(mock_calls("ibv_post_send"), posts + 1);
	assert_int_equal(mock_send_count(), 2);
	tv_post_fx_close(&f);
}

static void
refused_request_leaves_the_chain_intact(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	unsigned posts = mock_calls("ibv_post_send");
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 1), 0);
	assert_int_equal(write_at(&f, 64, 64, MORE_ALWAYS, 2), 0);

	/* generic checks: range, length, usage */
	assert_int_equal(write_at(&f, 8192 - 8, 64, PMREP_F_COMPLETION_ALWAYS,
			3), PMREP_E_RANGE);
	assert_int_equal(write_at(&f, 0, 0, MORE_ALWAYS, 3), PMREP_E_INVAL);
	assert_int_equal(persist_flush(&f, 8000, 1000,
			PMREP_F_COMPLETION_ALWAYS, 3), PMREP_E_RANGE);
	/* the provider's own checks: no PERSISTENT method, > 4 GiB - 1 */
	f.conn->flush_method = PMREP_FLUSH_METHOD_NONE;
	assert_int_equal(persist_flush(&f, 0, 64, PMREP_F_COMPLETION_ALWAYS,
			3), PMREP_E_NOSUPP);
	struct pmrep_op_args a = {
		.conn = f.conn, .op = PMREP_OP_FLUSH, .remote = f.remote,
		.len = 64, .flush_type = PMREP_FLUSH_TYPE_PERSISTENT,
		.signaled = true,
	};
	assert_int_equal(pmrep_verbs_ops.post(&a), PMREP_E_NOSUPP);
	f.conn->flush_method = PMREP_FLUSH_METHOD_APM;
	struct pmrep_op_args big = {
		.conn = f.conn, .op = PMREP_OP_WRITE, .local = f.local,
		.remote = f.remote, .len = (size_t)UINT32_MAX + 1,
		.signaled = true, .more = false,
	};
	assert_int_equal(pmrep_verbs_ops.post(&big), PMREP_E_INVAL);

	assert_int_equal(held(&f), 2);
	assert_int_equal(slots(&f), 2);
	assert_int_equal(mock_calls("ibv_post_send"), posts);
	assert_int_equal(mock_send_count(), 0);

	/* the chain goes out as it was */
	assert_int_equal(persist_flush(&f, 0, 128, PMREP_F_COMPLETION_ALWAYS,
			4), 0);
	assert_int_equal(mock_send_count(), 3);
	struct pmrep_completion c[4];
	assert_int_equal(complete_all(&f, c, 4), 3);
	assert_ptr_equal(c[0].op_context, (void *)1);
	assert_ptr_equal(c[1].op_context, (void *)2);
	assert_ptr_equal(c[2].op_context, (void *)4);
	assert_int_equal(c[2].op, PMREP_OP_FLUSH);
	tv_post_fx_close(&f);
}

/* held requests have their slots: the call that does not fit is AGAIN */
static void
full_send_queue_is_again_for_the_call_that_does_not_fit(void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg = cfg_sq(2);
	struct tv_post_fx f;
	fx_open(&f, cfg);
	assert_int_equal(write_at(&f, 0, 64, MORE_ON_ERROR, 1), 0);
	assert_int_equal(write_at(&f, 64, 64, MORE_ON_ERROR, 2), 0);
	assert_int_equal(persist_flush(&f, 0, 128, PMREP_F_COMPLETION_ALWAYS,
			3), PMREP_E_AGAIN);
	assert_int_equal(held(&f), 2);
	assert_int_equal(mock_send_count(), 0);
	/* a poll posts the two; their end frees the queue */
	struct pmrep_completion c[2];
	assert_int_equal(complete_all(&f, c, 2), 0);
	assert_int_equal(mock_send_count(), 2);
	mock_qp_complete_sends(f.vc->qp, -1, IBV_WC_SUCCESS);
	/* unsignalled successes: the slots stay taken until a signalled
	 * request after them completes (as the hardware's SQ) */
	assert_int_equal(slots(&f), 2);
	tv_post_fx_close(&f);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

/* ------------------------------------------------------- post failures */

static void
failed_post_returns_the_error_and_gives_back_every_unposted_slot(void **state)
{
	(void) state;
	struct pmrep_conn_cfg *cfg = cfg_sq(8);
	struct tv_post_fx f;
	fx_open(&f, cfg);

	/* the device refuses the first: nothing was posted */
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 1), 0);
	assert_int_equal(write_at(&f, 64, 64, MORE_ALWAYS, 2), 0);
	mock_fail("ibv_post_send", 1, EINVAL);
	assert_int_equal(persist_flush(&f, 0, 128, PMREP_F_COMPLETION_ALWAYS,
			3), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EINVAL);
	assert_int_equal(held(&f), 0);
	assert_int_equal(slots(&f), 0);
	assert_int_equal(mock_send_count(), 0);
	assert_true(tv_logged("held request 1 of 3 (write, op_context 0x1)"));
	assert_true(tv_logged("held request 2 of 3 (write, op_context 0x2)"));
	assert_false(tv_logged("of 3 (flush"));	/* its caller was told */

	/* ENOMEM: AGAIN */
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 1), 0);
	mock_fail("ibv_post_send", 1, ENOMEM);
	assert_int_equal(persist_flush(&f, 0, 64, PMREP_F_COMPLETION_ALWAYS,
			3), PMREP_E_AGAIN);
	assert_int_equal(slots(&f), 0);

	/* a later post works and its slots are counted right */
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 4), 0);
	assert_int_equal(persist_flush(&f, 0, 64, PMREP_F_COMPLETION_ALWAYS,
			5), 0);
	assert_int_equal(slots(&f), 2);
	struct pmrep_completion c[4];
	assert_int_equal(complete_all(&f, c, 4), 2);
	assert_ptr_equal(c[0].op_context, (void *)4);
	assert_ptr_equal(c[1].op_context, (void *)5);
	assert_int_equal(slots(&f), 0);
	tv_post_fx_close(&f);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

/* fill the device's send queue behind pmrep's back (drain-marker wr_ids:
 * pmrep never reports them), so that a chain fits only in part */
static void
raw_fill(struct tv_post_fx *f, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_send_wr wr, *bad = NULL;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = VERBS_WR_DRAIN;
		wr.opcode = IBV_WR_RDMA_WRITE;
		assert_int_equal(ibv_post_send(f->vc->qp, &wr, &bad), 0);
	}
}

static void
partly_posted_chain_gives_back_only_the_slots_not_posted(void **state)
{
	(void) state;
	/* sq 4: the QP takes 5 WRs (one for delete's drain marker) */
	struct pmrep_conn_cfg *cfg = cfg_sq(4);
	struct tv_post_fx f;
	fx_open(&f, cfg);
	raw_fill(&f, 4);
	mock_wr_log_clear();
	unsigned posts = mock_calls("ibv_post_send");

	/* room for one: the first goes, the device refuses the second */
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 1), 0);
	assert_int_equal(write_at(&f, 64, 64, MORE_ALWAYS, 2), 0);
	assert_int_equal(persist_flush(&f, 0, 128, PMREP_F_COMPLETION_ALWAYS,
			3), PMREP_E_AGAIN);
	assert_int_equal(mock_calls("ibv_post_send"), posts + 1);
	assert_int_equal(mock_send_count(), 1);
	assert_int_equal(mock_send_wr(0)->remote_addr, f.remote->raddr);
	assert_int_equal(held(&f), 0);
	assert_int_equal(slots(&f), 1);
	assert_true(tv_logged("failed at request 2"));
	assert_true(tv_logged("held request 2 of 3 (write, op_context 0x2)"));
	assert_false(tv_logged("held request 1 of 3"));

	/* what was posted completes as itself, and nothing else does */
	struct pmrep_completion c[4];
	assert_int_equal(complete_all(&f, c, 4), 1);
	assert_ptr_equal(c[0].op_context, (void *)1);
	assert_int_equal(c[0].op, PMREP_OP_WRITE);
	assert_int_equal(slots(&f), 0);
	assert_int_equal(mock_qp_sq_used(f.vc->qp), 0);

	/* and the ring is right for what follows: sq 4 holds 4 again */
	for (int i = 0; i < 3; i++)
		assert_int_equal(write_at(&f, 0, 64, MORE_ON_ERROR, 0), 0);
	assert_int_equal(persist_flush(&f, 0, 64, PMREP_F_COMPLETION_ALWAYS,
			9), 0);
	assert_int_equal(slots(&f), 4);
	assert_int_equal(write_at(&f, 0, 64, PMREP_F_COMPLETION_ALWAYS, 0),
			PMREP_E_AGAIN);
	assert_int_equal(complete_all(&f, c, 4), 1);
	assert_ptr_equal(c[0].op_context, (void *)9);
	assert_int_equal(slots(&f), 0);
	tv_post_fx_close(&f);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
}

static void
failed_post_from_a_cq_poll_is_returned_and_names_every_dropped_request(void **state)
{
	(void) state;
	struct tv_post_fx f;
	fx_open(&f, NULL);
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 1), 0);
	assert_int_equal(write_at(&f, 64, 64, MORE_ON_ERROR, 2), 0);
	mock_fail("ibv_post_send", 1, EIO);
	struct pmrep_completion c[2];
	int n = 7;
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 2, &n),
			PMREP_E_PROVIDER);
	assert_int_equal(n, 0);
	assert_true(tv_logged("held request 1 of 2 (write, op_context 0x1)"));
	assert_true(tv_logged("held request 2 of 2 (write, op_context 0x2)"));
	assert_int_equal(slots(&f), 0);
	/* the next poll polls */
	assert_int_equal(pmrep_cq_get_completions(f.conn->cq, c, 2, &n),
			PMREP_E_NO_COMPLETION);
	tv_post_fx_close(&f);
}

/* ----------------------------------------- the extended QP API (native) */

static void
native_atomic_write_replays_the_held_chain_in_one_wr_batch(void **state)
{
	(void) state;
	mock_dev_set_atomic_write(true);
	struct tv_post_fx f;
	fx_open(&f, NULL);
	assert_non_null(f.vc->qpx);
	unsigned posts = mock_calls("ibv_post_send");
	unsigned batches = mock_calls("ibv_wr_complete");
	const uint8_t v[8] = { 1, 1, 2, 3, 5, 8, 13, 21 };

	assert_int_equal(write_at(&f, 32, 100, MORE_ALWAYS, 1), 0);
	assert_int_equal(pmrep_send_with_imm(f.conn, NULL, 0, 0, 5,
			MORE_ALWAYS, (void *)2), 0);
	assert_int_equal(pmrep_send(f.conn, f.local, 8, 16, MORE_ON_ERROR,
			(void *)3), 0);
	assert_int_equal(pmrep_read(f.conn, f.local, 512, f.remote, 512, 8,
			MORE_ALWAYS, (void *)4), 0);
	assert_int_equal(pmrep_write_with_imm(f.conn, f.remote, 0, f.local, 0,
			4, 0x55, MORE_ALWAYS, (void *)5), 0);
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 8, v,
			PMREP_F_COMPLETION_ALWAYS, (void *)6), 0);
	/* one ibv_wr_start .. ibv_wr_complete (a second start inside would
	 * have failed the test), no ibv_post_send */
	assert_int_equal(mock_calls("ibv_wr_complete"), batches + 1);
	assert_int_equal(mock_calls("ibv_post_send"), posts);
	assert_int_equal(mock_send_count(), 6);
	for (size_t i = 0; i < 6; i++) {
		assert_true(mock_send_wr(i)->via_wr_api);
		assert_false(mock_send_wr(i)->bad_lkey);
	}
	const struct mock_wr *w = mock_send_wr(0);
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE);
	assert_true(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->remote_addr, f.remote->raddr + 32);
	assert_int_equal(w->rkey, f.remote->rkey);
	assert_int_equal(w->sge[0].addr, (uintptr_t)f.local->ptr + 32);
	assert_int_equal(w->sge[0].length, 100);
	assert_int_equal(w->sge[0].lkey, verbs_mr_lkey(f.local));
	w = mock_send_wr(1);
	assert_int_equal(w->opcode, IBV_WR_SEND_WITH_IMM);
	assert_int_equal(w->imm, 5);
	assert_int_equal(w->num_sge, 0);
	w = mock_send_wr(2);
	assert_int_equal(w->opcode, IBV_WR_SEND);
	assert_false(w->send_flags & IBV_SEND_SIGNALED);
	assert_int_equal(w->length, 16);
	w = mock_send_wr(3);
	assert_int_equal(w->opcode, IBV_WR_RDMA_READ);
	assert_int_equal(w->remote_addr, f.remote->raddr + 512);
	w = mock_send_wr(4);
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	assert_int_equal(w->imm, 0x55);
	w = mock_send_wr(5);
	assert_int_equal(w->opcode, IBV_WR_ATOMIC_WRITE);
	assert_int_equal(w->remote_addr, f.remote->raddr + 8);
	assert_memory_equal(w->data, v, 8);

	struct pmrep_completion c[8];
	assert_int_equal(complete_all(&f, c, 8), 5);
	const uintptr_t ctx[] = { 1, 2, 4, 5, 6 };	/* 3: unsignalled */
	const enum pmrep_op ops[] = { PMREP_OP_WRITE, PMREP_OP_SEND,
		PMREP_OP_READ, PMREP_OP_WRITE, PMREP_OP_ATOMIC_WRITE };
	for (int i = 0; i < 5; i++) {
		assert_ptr_equal(c[i].op_context, (void *)ctx[i]);
		assert_int_equal(c[i].op, ops[i]);
	}
	tv_post_fx_close(&f);
}

static void
held_native_atomic_write_sends_the_chain_through_the_wr_api(void **state)
{
	(void) state;
	mock_dev_set_atomic_write(true);
	struct tv_post_fx f;
	fx_open(&f, NULL);
	unsigned posts = mock_calls("ibv_post_send");
	unsigned batches = mock_calls("ibv_wr_complete");
	uint8_t v[8] = { 4, 4, 4, 4, 4, 4, 4, 4 };
	const uint8_t want[8] = { 4, 4, 4, 4, 4, 4, 4, 4 };

	/* native in the middle, a plain write posts the chain */
	assert_int_equal(write_at(&f, 0, 64, MORE_ON_ERROR, 1), 0);
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 64, v,
			MORE_ON_ERROR, (void *)2), 0);
	memset(v, 0, sizeof(v));	/* the held copy is what goes */
	assert_int_equal(write_at(&f, 128, 64, PMREP_F_COMPLETION_ALWAYS, 3),
			0);
	assert_int_equal(mock_calls("ibv_wr_complete"), batches + 1);
	assert_int_equal(mock_calls("ibv_post_send"), posts);
	assert_int_equal(mock_send_count(), 3);
	assert_int_equal(mock_send_wr(0)->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(mock_send_wr(1)->opcode, IBV_WR_ATOMIC_WRITE);
	assert_memory_equal(mock_send_wr(1)->data, want, 8);
	assert_int_equal(mock_send_wr(2)->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(mock_send_wr(2)->remote_addr, f.remote->raddr + 128);

	/* without a native op held, plain requests stay on ibv_post_send */
	assert_int_equal(write_at(&f, 0, 64, MORE_ON_ERROR, 4), 0);
	assert_int_equal(persist_flush(&f, 0, 64, PMREP_F_COMPLETION_ALWAYS,
			5), 0);
	assert_int_equal(mock_calls("ibv_post_send"), posts + 1);
	assert_int_equal(mock_calls("ibv_wr_complete"), batches + 1);

	/* ibv_wr_complete posts all or none: every slot comes back */
	struct pmrep_completion c[4];
	assert_int_equal(complete_all(&f, c, 4), 2);
	assert_int_equal(slots(&f), 0);
	assert_int_equal(write_at(&f, 0, 64, MORE_ALWAYS, 6), 0);
	mock_fail("ibv_wr_complete", 1, EINVAL);
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 64, want,
			PMREP_F_COMPLETION_ALWAYS, (void *)7), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EINVAL);
	assert_int_equal(slots(&f), 0);
	assert_int_equal(held(&f), 0);
	assert_true(tv_logged("held request 1 of 2 (write, op_context 0x6)"));
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 64, want,
			PMREP_F_COMPLETION_ALWAYS, (void *)8), 0);
	assert_int_equal(complete_all(&f, c, 4), 1);
	assert_ptr_equal(c[0].op_context, (void *)8);
	tv_post_fx_close(&f);
}

#ifdef PMREP_HAVE_IBV_WR_FLUSH
static void
native_flush_replays_held_writes_and_inline_bytes_in_one_wr_batch(void **state)
{
	(void) state;
	mock_dev_set_flush(true, true);
	struct tv_post_fx f;
	fx_open(&f, NULL);
	enum pmrep_flush_method m;
	assert_int_equal(pmrep_conn_get_flush_method(f.conn, &m), 0);
	assert_int_equal(m, PMREP_FLUSH_METHOD_NATIVE);
	unsigned posts = mock_calls("ibv_post_send");
	unsigned batches = mock_calls("ibv_wr_complete");
	uint8_t v[8] = { 7, 7, 7, 7, 1, 1, 1, 1 };
	const uint8_t want[8] = { 7, 7, 7, 7, 1, 1, 1, 1 };

	assert_int_equal(write_at(&f, 0, 256, MORE_ON_ERROR, 1), 0);
	/* no native atomic write here: the inline fallback, replayed with
	 * ibv_wr_set_inline_data from the held copy */
	assert_int_equal(pmrep_atomic_write(f.conn, f.remote, 256, v,
			MORE_ON_ERROR, (void *)2), 0);
	memset(v, 0, sizeof(v));
	assert_int_equal(persist_flush(&f, 0, 264, PMREP_F_COMPLETION_ALWAYS,
			3), 0);
	assert_int_equal(mock_calls("ibv_wr_complete"), batches + 1);
	assert_int_equal(mock_calls("ibv_post_send"), posts);
	assert_int_equal(mock_send_count(), 3);
	assert_int_equal(mock_send_wr(0)->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(mock_send_wr(0)->sge[0].length, 256);
	const struct mock_wr *w = mock_send_wr(1);
	assert_true(w->via_wr_api);
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE);
	assert_true(w->send_flags & IBV_SEND_INLINE);
	assert_true(w->send_flags & IBV_SEND_FENCE);
	assert_int_equal(w->data_len, 8);
	assert_memory_equal(w->data, want, 8);
	w = mock_send_wr(2);
	assert_int_equal(w->opcode, IBV_WR_FLUSH);
	assert_int_equal(w->flush_type, IBV_FLUSH_PERSISTENT);
	assert_int_equal(w->remote_addr, f.remote->raddr);
	assert_int_equal(w->length, 264);
	struct pmrep_completion c[4];
	assert_int_equal(complete_all(&f, c, 4), 1);
	assert_int_equal(c[0].op, PMREP_OP_FLUSH);
	assert_ptr_equal(c[0].op_context, (void *)3);
	tv_post_fx_close(&f);
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tv_setup, tv_teardown)
		T(write_more_then_flush_is_one_post_send_of_two_wrs),
		T(every_posting_op_may_be_held_and_keeps_its_order),
		T(held_inline_atomic_write_keeps_its_own_copy_of_the_bytes),
		T(twenty_mores_post_at_the_chain_bound),
		T(held_request_is_posted_by_disconnect),
		T(held_request_on_a_qp_in_error_gets_a_flush_error),
		T(held_request_is_posted_by_delete),
		T(held_request_is_posted_by_a_cq_wait_or_poll),
		T(held_request_is_posted_by_conn_wait_on_a_shared_channel),
		T(more_with_bad_flags_is_inval_and_changes_nothing),
		T(refused_request_leaves_the_chain_intact),
		T(full_send_queue_is_again_for_the_call_that_does_not_fit),
		T(failed_post_returns_the_error_and_gives_back_every_unposted_slot),
		T(partly_posted_chain_gives_back_only_the_slots_not_posted),
		T(failed_post_from_a_cq_poll_is_returned_and_names_every_dropped_request),
		T(native_atomic_write_replays_the_held_chain_in_one_wr_batch),
		T(held_native_atomic_write_sends_the_chain_through_the_wr_api),
#ifdef PMREP_HAVE_IBV_WR_FLUSH
		T(native_flush_replays_held_writes_and_inline_bytes_in_one_wr_batch),
#endif
#undef T
	};
	return cmocka_run_group_tests_name("verbs PMREP_F_MORE", tests, NULL,
			NULL);
}
