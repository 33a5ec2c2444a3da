/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mocks_selftest.c -- the libibverbs / librdmacm mocks behave as the
 * unit tests rely on: real-fd readiness, rdma-core's error conventions
 * (EBUSY as a positive value ...), loud failures where rdma-core would hang,
 * event queues with padded private data, the QP model, failure injection
 * (by name, each call in turn, allocations) and leak detection.
 * Past ~800 lines: every mock behaviour the unit tests rely on, checked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "mocks.h"

/* ---------------------------------------------------------------- helpers */

static bool
readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	int n = poll(&p, 1, 0);
	assert_true(n >= 0);
	return n == 1 && (p.revents & POLLIN);
}

static void
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

struct rig {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[4096];
};

/* a context, PD, channel, CQ, MR and an RC QP in RTS (ibv_create_qp) */
static void
rig_up(struct rig *r, uint32_t sq, bool sig_all)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);

	assert_non_null(l);
	assert_int_equal(n, 1);
	r->ctx = ibv_open_device(l[0]);
	assert_non_null(r->ctx);
	ibv_free_device_list(l);
	r->pd = ibv_alloc_pd(r->ctx);
	assert_non_null(r->pd);
	r->ch = ibv_create_comp_channel(r->ctx);
	assert_non_null(r->ch);
	set_nonblock(r->ch->fd);
	r->cq = ibv_create_cq(r->ctx, 16, r, r->ch, 0);
	assert_non_null(r->cq);
	r->mr = ibv_reg_mr(r->pd, r->buf, sizeof(r->buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(r->mr);
	struct ibv_qp_init_attr a = { 0 };

	a.send_cq = r->cq;
	a.recv_cq = r->cq;
	a.cap.max_send_wr = sq;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = 64;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = sig_all;
	r->qp = ibv_create_qp(r->pd, &a);
	assert_non_null(r->qp);
	assert_int_equal(r->qp->state, IBV_QPS_RESET);
	struct ibv_qp_attr qa = { 0 };

	qa.qp_state = IBV_QPS_INIT;
	assert_int_equal(ibv_modify_qp(r->qp, &qa, IBV_QP_STATE), 0);
	qa.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(r->qp, &qa, IBV_QP_STATE), 0);
	qa.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(r->qp, &qa, IBV_QP_STATE), 0);
}

static void
rig_down(struct rig *r)
{
	if (r->qp)
		assert_int_equal(ibv_destroy_qp(r->qp), 0);
	assert_int_equal(ibv_dereg_mr(r->mr), 0);
	assert_int_equal(ibv_destroy_cq(r->cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(r->ch), 0);
	assert_int_equal(ibv_dealloc_pd(r->pd), 0);
	assert_int_equal(ibv_close_device(r->ctx), 0);
}

static int
post_write(struct rig *r, uint64_t wr_id, uint32_t off, uint32_t len,
		unsigned flags)
{
	struct ibv_sge sge = { (uintptr_t)r->buf + off, len, r->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad = NULL;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = flags;
	wr.wr.rdma.remote_addr = 0x7000;
	wr.wr.rdma.rkey = 0xabc;
	int ret = ibv_post_send(r->qp, &wr, &bad);

	if (ret)
		assert_ptr_equal(bad, &wr);
	return ret;
}

/* ------------------------------------------------------- device, context */

static void
test_device_and_caps(void **state)
{
	(void)state;
	int n = -1;
	struct ibv_device **l = ibv_get_device_list(&n);

	assert_int_equal(n, 1);
	assert_non_null(l[0]);
	assert_null(l[1]);
	assert_string_equal(ibv_get_device_name(l[0]), "mock_rxe0");
	struct ibv_context *ctx = ibv_open_device(l[0]);

	assert_non_null(ctx);
	assert_int_equal(mock_live(MOCK_CONTEXT), 1);
	assert_int_equal(mock_live(MOCK_DEVICE_LIST), 1);
	ibv_free_device_list(l);
	assert_int_equal(mock_live(MOCK_DEVICE_LIST), 0);

	struct ibv_device_attr_ex a;

	assert_int_equal(ibv_query_device_ex(ctx, NULL, &a), 0);
	assert_int_equal(a.odp_caps.general_caps, 0);
	assert_int_equal(a.device_cap_flags_ex & (MOCK_DEVICE_ATOMIC_WRITE |
			MOCK_DEVICE_FLUSH_GLOBAL | MOCK_DEVICE_FLUSH_PERSISTENT), 0);
	assert_int_equal(a.orig_attr.phys_port_cnt, 1);

	mock_dev_set_odp(true);
	mock_dev_set_atomic_write(true);
	mock_dev_set_flush(false, true);
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &a), 0);
	assert_true(a.odp_caps.general_caps & IBV_ODP_SUPPORT);
	assert_true(a.odp_caps.per_transport_caps.rc_odp_caps &
			IBV_ODP_SUPPORT_WRITE);
	assert_true(a.device_cap_flags_ex & MOCK_DEVICE_ATOMIC_WRITE);
	assert_true(a.device_cap_flags_ex & MOCK_DEVICE_FLUSH_PERSISTENT);
	assert_false(a.device_cap_flags_ex & MOCK_DEVICE_FLUSH_GLOBAL);
	assert_int_equal(a.device_cap_flags_ex & (1ULL << 39), 1ULL << 39);

	/* through the verbs_get_ctx_op inline of the real header */
	mock_fail("ibv_query_device_ex", 1, EIO);
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &a), EIO);

	struct ibv_device_attr da;

	assert_int_equal(ibv_query_device(ctx, &da), 0);
	assert_int_equal(da.max_qp_wr, a.orig_attr.max_qp_wr);

	/* ibv_query_port is a macro over verbs_context->query_port */
	struct ibv_port_attr pa;

	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(ibv_query_port(ctx, 2, &pa), EINVAL);
	assert_int_equal(mock_calls("ibv_query_port"), 2);

	assert_int_equal(ibv_close_device(ctx), 0);
	assert_int_equal(mock_live(MOCK_CONTEXT), 0);

	mock_dev_set_count(0);
	l = ibv_get_device_list(&n);
	assert_int_equal(n, 0);
	assert_null(l[0]);
	ibv_free_device_list(l);
}

static void
test_cm_context_is_not_closable(void **state)
{
	(void)state;
	struct ibv_context *c = mock_cm_context();

	assert_non_null(c);
	assert_int_equal(mock_live(MOCK_CONTEXT), 0); /* librdmacm's own */
	expect_assert_failure(ibv_close_device(c));
	int n;
	struct ibv_context **l = rdma_get_devices(&n);

	assert_int_equal(n, 1);
	assert_ptr_equal(l[0], c);
	rdma_free_devices(l);
}

/* ---------------------------------------------------------- completions */

static void
test_comp_channel_ebusy_positive(void **state)
{
	(void)state;
	struct rig r = { 0 };

	rig_up(&r, 4, false);
	assert_int_equal(ibv_destroy_qp(r.qp), 0);
	r.qp = NULL;
	/* a CQ is attached: EBUSY as a positive value, channel intact */
	assert_int_equal(ibv_destroy_comp_channel(r.ch), 16);
	assert_int_equal(ibv_destroy_comp_channel(r.ch), EBUSY);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 1);
	rig_down(&r);
	assert_int_equal(mock_live(MOCK_COMP_CHANNEL), 0);
}

static void
test_cq_events_and_fd(void **state)
{
	(void)state;
	struct rig r = { 0 };

	rig_up(&r, 4, false);
	assert_false(readable(r.ch->fd));

	/* not armed: a completion makes no event */
	mock_cq_push_wc(r.cq, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
	assert_false(readable(r.ch->fd));
	/* arming a non-empty CQ makes no event either (hardware rule) */
	assert_int_equal(ibv_req_notify_cq(r.cq, 0), 0);
	assert_true(mock_cq_armed(r.cq));
	assert_false(readable(r.ch->fd));
	/* the next completion does */
	mock_cq_push_wc(r.cq, 2, IBV_WC_SUCCESS, IBV_WC_RECV, 77);
	assert_true(readable(r.ch->fd));
	assert_false(mock_cq_armed(r.cq));
	assert_int_equal(mock_comp_channel_pending(r.ch), 1);

	struct ibv_cq *cq = NULL;
	void *ctx = NULL;

	assert_int_equal(ibv_get_cq_event(r.ch, &cq, &ctx), 0);
	assert_ptr_equal(cq, r.cq);
	assert_ptr_equal(ctx, &r);
	assert_false(readable(r.ch->fd));
	assert_int_equal(mock_cq_unacked(r.cq), 1);
	assert_int_equal(mock_unacked_cq_events(), 1);
	/* nothing more: EAGAIN on the non-blocking fd */
	errno = 0;
	assert_int_equal(ibv_get_cq_event(r.ch, &cq, &ctx), -1);
	assert_int_equal(errno, EAGAIN);

	struct ibv_wc wc[4];

	assert_int_equal(mock_cq_depth(r.cq), 2);
	assert_int_equal(ibv_poll_cq(r.cq, 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].opcode, IBV_WC_RECV);
	assert_int_equal(wc[1].byte_len, 77);
	assert_int_equal(ibv_poll_cq(r.cq, 4, wc), 0);

	/* over-acking would hang the real destroy: loud */
	expect_assert_failure(ibv_ack_cq_events(r.cq, 2));
	ibv_ack_cq_events(r.cq, 1);
	assert_int_equal(mock_unacked_cq_events(), 0);

	/* poll failure: a negative value */
	mock_fail("ibv_poll_cq", 1, EIO);
	assert_true(ibv_poll_cq(r.cq, 4, wc) < 0);
	rig_down(&r);
}

static void
test_cq_destroy_with_unacked_event_fails(void **state)
{
	(void)state;
	struct rig r = { 0 };

	rig_up(&r, 4, false);
	assert_int_equal(ibv_destroy_qp(r.qp), 0);
	r.qp = NULL;
	mock_cq_event(r.cq);
	struct ibv_cq *cq;
	void *ctx;

	assert_int_equal(ibv_get_cq_event(r.ch, &cq, &ctx), 0);
	/* the real ibv_destroy_cq would block forever */
	expect_assert_failure(ibv_destroy_cq(r.cq));
	ibv_ack_cq_events(r.cq, 1);
	rig_down(&r);
}

static void
test_blocking_get_on_empty_channel_fails(void **state)
{
	(void)state;
	struct ibv_context *ctx = ibv_open_device(ibv_get_device_list(NULL)[0]);
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq;
	void *cctx;

	assert_non_null(ch);
	/* blocking fd (the default), nothing queued: would hang */
	expect_assert_failure(ibv_get_cq_event(ch, &cq, &cctx));
	struct ibv_async_event ev;

	expect_assert_failure(ibv_get_async_event(ctx, &ev));
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_cm_event *cev;

	expect_assert_failure(rdma_get_cm_event(cch, &cev));
	rdma_destroy_event_channel(cch);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
	mock_reset(); /* the device list of the first line */
}

/* ------------------------------------------------------------------ QP */

static void
test_post_send_recorded_and_sq_model(void **state)
{
	(void)state;
	struct rig r = { 0 };

	rig_up(&r, 3, false);
	memcpy(r.buf + 100, "hello", 5);
	assert_int_equal(post_write(&r, 42, 100, 5, IBV_SEND_SIGNALED), 0);
	const struct mock_wr *w = mock_send_last();

	assert_int_equal(w->wr_id, 42);
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(w->send_flags, IBV_SEND_SIGNALED);
	assert_int_equal(w->remote_addr, 0x7000);
	assert_int_equal(w->rkey, 0xabc);
	assert_int_equal(w->num_sge, 1);
	assert_int_equal(w->sge[0].lkey, r.mr->lkey);
	assert_int_equal(w->length, 5);
	assert_memory_equal(w->data, "hello", 5);
	assert_false(w->bad_lkey);
	assert_false(w->via_wr_api);
	assert_int_equal(w->qp_num, r.qp->qp_num);
	assert_int_equal(mock_qp_sq_used(r.qp), 1);
	assert_int_equal(mock_cq_depth(r.cq), 0); /* not auto-completed */

	/* two unsignalled writes fill the 3-deep SQ */
	assert_int_equal(post_write(&r, 43, 0, 8, 0), 0);
	assert_int_equal(post_write(&r, 44, 0, 8, 0), 0);
	assert_int_equal(post_write(&r, 45, 0, 8, 0), ENOMEM);
	assert_int_equal(mock_send_count(), 3);

	/* completing unsignalled WRs makes no WC and frees no slot */
	assert_int_equal(mock_qp_complete_sends(r.qp, -1, IBV_WC_SUCCESS), 3);
	struct ibv_wc wc[4];

	assert_int_equal(ibv_poll_cq(r.cq, 4, wc), 1);
	assert_int_equal(wc[0].wr_id, 42);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(mock_qp_sq_used(r.qp), 2); /* 43, 44 still held */
	assert_int_equal(post_write(&r, 46, 0, 8, IBV_SEND_SIGNALED), 0);
	mock_qp_complete_sends(r.qp, 1, IBV_WC_SUCCESS);
	assert_int_equal(ibv_poll_cq(r.cq, 4, wc), 1);
	assert_int_equal(wc[0].wr_id, 46);
	assert_int_equal(mock_qp_sq_used(r.qp), 0); /* polled: all freed */

	/* an SGE outside its MR completes with a protection error */
	struct ibv_sge sge = { 0x1000, 8, r.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 47, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	assert_int_equal(ibv_post_send(r.qp, &wr, &bad), 0);
	assert_true(mock_send_last()->bad_lkey);
	mock_qp_complete_sends(r.qp, -1, IBV_WC_SUCCESS);
	assert_int_equal(ibv_poll_cq(r.cq, 4, wc), 1);
	assert_int_equal(wc[0].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(wc[0].opcode, MOCK_WC_OPCODE_UNDEFINED);
	assert_int_equal(mock_qp_state(r.qp), IBV_QPS_ERR);

	/* injection: positive errno, bad_wr set */
	mock_fail("ibv_post_send", 1, EAGAIN);
	assert_int_equal(post_write(&r, 48, 0, 8, 0), EAGAIN);
	rig_down(&r);
}

static void
test_post_before_rts_and_inline(void **state)
{
	(void)state;
	struct rig r = { 0 };

	rig_up(&r, 4, true);
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT };

	/* RTS -> INIT is not a valid transition */
	assert_int_equal(ibv_modify_qp(r.qp, &qa, IBV_QP_STATE), EINVAL);
	qa.qp_state = IBV_QPS_RESET;
	assert_int_equal(ibv_modify_qp(r.qp, &qa, IBV_QP_STATE), 0);
	assert_int_equal(post_write(&r, 1, 0, 8, 0), EINVAL);
	qa.qp_state = IBV_QPS_INIT;
	assert_int_equal(ibv_modify_qp(r.qp, &qa, IBV_QP_STATE), 0);
	qa.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(r.qp, &qa, IBV_QP_STATE), 0);
	assert_int_equal(post_write(&r, 1, 0, 8, 0), EINVAL);
	qa.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(r.qp, &qa, IBV_QP_STATE), 0);

	/* inline: data copied at post time, lkey not needed */
	uint64_t v = 0x1122334455667788ULL;
	struct ibv_sge sge = { (uintptr_t)&v, 8, 0 };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_INLINE |
		IBV_SEND_FENCE };
	struct ibv_send_wr *bad;

	assert_int_equal(ibv_post_send(r.qp, &wr, &bad), 0);
	v = 0;
	assert_int_equal(mock_send_last()->data_len, 8);
	uint64_t got;

	memcpy(&got, mock_send_last()->data, 8);
	assert_int_equal(got, 0x1122334455667788ULL);
	assert_false(mock_send_last()->bad_lkey);
	/* sq_sig_all: unsignalled WRs complete with a WC */
	mock_set_auto_complete(true);
	assert_int_equal(post_write(&r, 10, 0, 8, 0), 0);
	assert_int_equal(mock_cq_depth(r.cq), 1);
	/* too much inline data */
	sge.length = 65;
	sge.addr = (uintptr_t)r.buf;
	assert_int_equal(ibv_post_send(r.qp, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	rig_down(&r);
}

static void
test_qp_error_flushes_everything(void **state)
{
	(void)state;
	struct rig r = { 0 };

	rig_up(&r, 4, false);
	assert_int_equal(post_write(&r, 1, 0, 8, IBV_SEND_SIGNALED), 0);
	assert_int_equal(post_write(&r, 2, 0, 8, 0), 0);
	struct ibv_sge sge = { (uintptr_t)r.buf, 64, r.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	assert_int_equal(ibv_post_recv(r.qp, &rwr, &bad), 0);
	assert_int_equal(mock_recv_last()->wr_id, 3);
	assert_int_equal(mock_qp_rq_used(r.qp), 1);

	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

	assert_int_equal(ibv_modify_qp(r.qp, &qa, IBV_QP_STATE), 0);
	struct ibv_wc wc[8];

	/* unsignalled ones are reported too when flushed */
	assert_int_equal(ibv_poll_cq(r.cq, 8, wc), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, MOCK_WC_OPCODE_UNDEFINED);
	}
	assert_int_equal(mock_qp_sq_used(r.qp), 0);
	assert_int_equal(mock_qp_rq_used(r.qp), 0);
	/* posting in ERR: flushed at once */
	assert_int_equal(post_write(&r, 4, 0, 8, 0), 0);
	assert_int_equal(ibv_poll_cq(r.cq, 8, wc), 1);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	rig_down(&r);
}

static struct ibv_qp *
create_qp_ex(struct rig *r, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = { 0 };

	a.send_cq = r->cq;
	a.recv_cq = r->cq;
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_RC;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = r->pd;
	a.send_ops_flags = ops;
	return ibv_create_qp_ex(r->ctx, &a);
}

static void
test_wr_api(void **state)
{
	(void)state;
	struct rig r = { 0 };

	rig_up(&r, 4, false);
	assert_int_equal(ibv_destroy_qp(r.qp), 0);
	/* no atomic write on this device */
	errno = 0;
	assert_null(create_qp_ex(&r, IBV_QP_EX_WITH_RDMA_WRITE |
			IBV_QP_EX_WITH_ATOMIC_WRITE));
	assert_int_equal(errno, EOPNOTSUPP);
	mock_dev_set_atomic_write(true);
	r.qp = create_qp_ex(&r, IBV_QP_EX_WITH_RDMA_WRITE |
			IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_WRITE);
	assert_non_null(r.qp);
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(r.qp);

	assert_non_null(x);
	mock_qp_set_state(r.qp, IBV_QPS_RTS);

	memcpy(r.buf, "abcdefgh", 8);
	ibv_wr_start(x);
	x->wr_id = 7;
	x->wr_flags = 0;
	ibv_wr_rdma_write(x, 0x55, 0x9000);
	ibv_wr_set_sge(x, r.mr->lkey, (uintptr_t)r.buf, 8);
	x->wr_id = 8;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, 0x55, 0x9000);
	ibv_wr_set_sge(x, r.mr->lkey, (uintptr_t)r.buf + 64, 8);
	assert_int_equal(mock_send_count(), 0); /* nothing until complete */
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(mock_send_count(), 2);
	const struct mock_wr *w = mock_send_wr(0);

	assert_true(w->via_wr_api);
	assert_int_equal(w->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(w->wr_id, 7);
	assert_int_equal(w->rkey, 0x55);
	assert_memory_equal(w->data, "abcdefgh", 8);
	w = mock_send_wr(1);
	assert_int_equal(w->opcode, IBV_WR_RDMA_READ);
	assert_int_equal(w->send_flags, IBV_SEND_SIGNALED);
	assert_int_equal(w->data_len, 0);

	/* atomic write carries its 8 bytes */
	uint64_t val = 0xfeedULL;

	ibv_wr_start(x);
	x->wr_id = 9;
	ibv_wr_atomic_write(x, 0x55, 0x9008, &val);
	assert_int_equal(ibv_wr_complete(x), 0);
	assert_int_equal(mock_send_last()->opcode, IBV_WR_ATOMIC_WRITE);
	assert_memory_equal(mock_send_last()->data, &val, 8);

	/* a failing wr_complete posts nothing */
	mock_fail("ibv_wr_complete", 1, ENOMEM);
	ibv_wr_start(x);
	ibv_wr_rdma_write(x, 0x55, 0x9000);
	ibv_wr_set_sge(x, r.mr->lkey, (uintptr_t)r.buf, 8);
	assert_int_equal(ibv_wr_complete(x), ENOMEM);
	assert_int_equal(mock_send_count(), 3);
	/* abort drops the batch; misuse is loud */
	ibv_wr_start(x);
	ibv_wr_rdma_write(x, 0x55, 0x9000);
	ibv_wr_abort(x);
	assert_int_equal(mock_send_count(), 3);
	expect_assert_failure(ibv_wr_rdma_write(x, 0x55, 0x9000));
	ibv_wr_start(x);
	expect_assert_failure(ibv_wr_send(x)); /* not in send_ops_flags */
	ibv_wr_abort(x);
	/* a QP without send_ops_flags has no qp_ex */
	assert_int_equal(ibv_destroy_qp(r.qp), 0);
	struct ibv_qp_init_attr a = { .send_cq = r.cq, .recv_cq = r.cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1 },
		.qp_type = IBV_QPT_RC };

	r.qp = ibv_create_qp(r.pd, &a);
	assert_non_null(r.qp);
	assert_null(ibv_qp_to_qp_ex(r.qp));
	rig_down(&r);
}

static void
test_srq_and_receive(void **state)
{
	(void)state;
	struct rig r = { 0 };

	rig_up(&r, 4, false);
	assert_int_equal(ibv_destroy_qp(r.qp), 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 2, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(r.pd, &sa);

	assert_non_null(srq);
	struct ibv_qp_init_attr a = { .send_cq = r.cq, .recv_cq = r.cq,
		.srq = srq, .cap = { .max_send_wr = 1 }, .qp_type = IBV_QPT_RC };

	r.qp = ibv_create_qp(r.pd, &a);
	assert_non_null(r.qp);
	mock_qp_set_state(r.qp, IBV_QPS_RTS);
	struct ibv_sge sge = { (uintptr_t)r.buf + 200, 16, r.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	/* a QP on an SRQ takes no receives of its own */
	assert_int_equal(ibv_post_recv(r.qp, &rwr, &bad), EINVAL);
	assert_int_equal(ibv_post_srq_recv(srq, &rwr, &bad), 0);
	assert_true(mock_recv_last()->srq == srq);
	assert_int_equal(mock_srq_used(srq), 1);
	mock_qp_recv_imm(r.qp, "ping", 4, 0x1234, false);
	assert_memory_equal(r.buf + 200, "ping", 4);
	struct ibv_wc wc;

	assert_int_equal(ibv_poll_cq(r.cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 4);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(ntohl(wc.imm_data), 0x1234);
	assert_int_equal(mock_srq_used(srq), 0);
	/* nothing posted: the sender would see RNR; the mock is loud */
	expect_assert_failure(mock_qp_recv(r.qp, "x", 1));
	/* the SRQ is in use */
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	assert_int_equal(ibv_destroy_qp(r.qp), 0);
	r.qp = NULL;
	assert_int_equal(ibv_destroy_srq(srq), 0);
	rig_down(&r);
}

/* ---------------------------------------------------------------- async */

static void
test_async_events(void **state)
{
	(void)state;
	struct rig r = { 0 };

	rig_up(&r, 4, false);
	set_nonblock(r.ctx->async_fd);
	struct ibv_async_event ev;

	assert_false(readable(r.ctx->async_fd));
	assert_int_equal(ibv_get_async_event(r.ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(post_write(&r, 1, 0, 8, 0), 0);
	mock_async_qp(r.qp, IBV_EVENT_QP_FATAL);
	mock_async_port(r.ctx, IBV_EVENT_PORT_ERR, 1);
	assert_true(readable(r.ctx->async_fd));
	assert_int_equal(mock_qp_state(r.qp), IBV_QPS_ERR);
	assert_int_equal(mock_cq_depth(r.cq), 1); /* flushed */

	assert_int_equal(ibv_get_async_event(r.ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
	assert_ptr_equal(ev.element.qp, r.qp);
	assert_int_equal(mock_unacked_async_events(), 1);
	/* the real destroy waits for the ack */
	expect_assert_failure(ibv_destroy_qp(r.qp));
	ibv_ack_async_event(&ev);
	expect_assert_failure(ibv_ack_async_event(&ev)); /* twice */
	assert_int_equal(ibv_get_async_event(r.ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_PORT_ERR);
	assert_int_equal(ev.element.port_num, 1);
	assert_false(readable(r.ctx->async_fd));
	ibv_ack_async_event(&ev);
	assert_int_equal(mock_unacked_async_events(), 0);
	assert_string_equal(ibv_event_type_str(IBV_EVENT_PORT_ERR), "port error");
	rig_down(&r);
}

/* ------------------------------------------------------------------- MR */

static int Access_var = IBV_ACCESS_LOCAL_WRITE;

static void
test_reg_mr_paths(void **state)
{
	(void)state;
	struct ibv_context *ctx = mock_cm_context();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static char mem[8192];

	/* a constant access goes to the ibv_reg_mr symbol, a variable one
	 * to ibv_reg_mr_iova2: both count as "ibv_reg_mr" */
	struct ibv_mr *a = ibv_reg_mr(pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *b = ibv_reg_mr(pd, mem + 4096, 4096, Access_var);

	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(mock_calls("ibv_reg_mr"), 2);
	assert_int_not_equal(a->lkey, b->lkey);
	assert_int_not_equal(a->lkey, a->rkey);
	assert_ptr_equal(a->addr, mem);
	assert_int_equal(a->length, 4096);

	/* remote write needs local write */
	errno = 0;
	assert_null(ibv_reg_mr(pd, mem, 64, IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	/* no ODP on the device */
	Access_var = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND;
	assert_null(ibv_reg_mr(pd, mem, 64, Access_var));
	assert_int_equal(errno, EOPNOTSUPP);
	struct ibv_sge sge = { (uintptr_t)mem, 64, a->lkey };

	assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1), EOPNOTSUPP);
	/* fsdax-like memory: pinning fails, ODP works */
	mock_dev_set_odp(true);
	mock_mr_set_unpinnable(mem + 6000, 100);
	assert_null(ibv_reg_mr(pd, mem + 5000, 2000, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EOPNOTSUPP);
	struct ibv_mr *c = ibv_reg_mr(pd, mem + 5000, 2000, Access_var);

	assert_non_null(c);
	sge.lkey = c->lkey;
	sge.addr = (uintptr_t)mem + 5000;
	assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1), 0);
	sge.lkey = a->lkey; /* not an ODP MR */
	sge.addr = (uintptr_t)mem;
	assert_int_equal(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			0, &sge, 1), EINVAL);

	/* flush access needs the device's flush capability */
	Access_var = IBV_ACCESS_LOCAL_WRITE | MOCK_ACCESS_FLUSH_PERSISTENT;
	assert_null(ibv_reg_mr(pd, mem, 64, Access_var));
	assert_int_equal(errno, EOPNOTSUPP);
	mock_dev_set_flush(false, true);
	struct ibv_mr *d = ibv_reg_mr(pd, mem, 64, Access_var);

	assert_non_null(d);
	assert_int_equal(ibv_dereg_mr(d), 0);
	Access_var = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND;

	/* the PD is in use */
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_dereg_mr(a), 0);
	assert_int_equal(ibv_dereg_mr(b), 0);
	assert_int_equal(ibv_dereg_mr(c), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	/* a destroyed object is caught before it is touched */
	expect_assert_failure(ibv_dereg_mr(a));
	Access_var = IBV_ACCESS_LOCAL_WRITE;
}

/* ---------------------------------------------------------- injection */

static void
test_injection_conventions(void **state)
{
	(void)state;
	struct ibv_context *ctx = mock_cm_context();

	/* NULL + errno */
	mock_fail("ibv_alloc_pd", 1, ENOMEM);
	errno = 0;
	assert_null(ibv_alloc_pd(ctx));
	assert_int_equal(errno, ENOMEM);
	/* the 2nd next call */
	mock_fail("ibv_alloc_pd", 2, EPERM);
	assert_int_equal(mock_fail_pending(), 1);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	assert_non_null(pd);
	assert_null(ibv_alloc_pd(ctx));
	assert_int_equal(errno, EPERM);
	assert_int_equal(mock_fail_pending(), 0);
	assert_int_equal(mock_calls("ibv_alloc_pd"), 3);
	/* positive errno; the object stays */
	mock_fail("ibv_dealloc_pd", 1, EIO);
	assert_int_equal(ibv_dealloc_pd(pd), EIO);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	/* a failed destroy leaves the object (not counted as a leak) and its
	 * parent busy, until released */
	pd = ibv_alloc_pd(ctx);
	static char m[64];
	struct ibv_mr *mr = ibv_reg_mr(pd, m, sizeof(m), IBV_ACCESS_LOCAL_WRITE);

	mock_fail("ibv_dereg_mr", 1, EIO);
	assert_int_equal(ibv_dereg_mr(mr), EIO);
	assert_int_equal(mock_live(MOCK_MR), 0);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	mock_release_failed_destroys();
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	/* -1 + errno */
	struct rdma_cm_id *id = NULL;

	mock_fail("rdma_create_id", 1, EMFILE);
	errno = 0;
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), -1);
	assert_int_equal(errno, EMFILE);
	assert_null(id);
	/* always */
	mock_fail_always("rdma_create_event_channel", ENODEV);
	assert_null(rdma_create_event_channel());
	assert_null(rdma_create_event_channel());
	assert_int_equal(errno, ENODEV);
	mock_fail_clear();
	struct rdma_event_channel *ch = rdma_create_event_channel();

	assert_non_null(ch);
	rdma_destroy_event_channel(ch);
	/* raw return value */
	struct rdma_addrinfo *ai;

	mock_fail_rc("rdma_getaddrinfo", 1, -1, EAI_NONAME);
	assert_int_equal(rdma_getaddrinfo("x", "1", NULL, &ai), -1);
	assert_int_equal(errno, EAI_NONAME);
	/* allocations by name (the test's own malloc is wrapped too) */
	mock_fail("malloc", 1, ENOMEM);
	errno = 0;
	void *p = malloc(16);

	assert_null(p);
	assert_int_equal(errno, ENOMEM);
	p = malloc(16);
	assert_non_null(p);
	free(p);
	mock_fail("alloc", 2, ENOMEM);
	char *s = strdup("a");

	assert_non_null(s);
	assert_null(calloc(1, 8));
	free(s);
	/* typos and things that cannot fail are loud */
	expect_assert_failure(mock_fail("ibv_alloc_pdd", 1, 1));
	expect_assert_failure(mock_fail("ibv_ack_cq_events", 1, 1));
}

/* ------------------------------------------------------------------ CM */

static struct rdma_cm_event *
get_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = NULL;

	assert_true(readable(ch->fd));
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	assert_non_null(ev);
	assert_int_equal(ev->event, type);
	return ev;
}

static void
test_cm_active_flow(void **state)
{
	(void)state;
	struct rdma_event_channel *ch = rdma_create_event_channel();

	assert_non_null(ch);
	set_nonblock(ch->fd);
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(ch, &id, (void *)0x77, RDMA_PS_TCP), 0);
	assert_ptr_equal(mock_cm_id_last(), id);
	assert_null(id->verbs);
	/* connect before resolving: EINVAL */
	assert_int_equal(rdma_connect(id, NULL), -1);
	assert_int_equal(errno, EINVAL);

	struct sockaddr_in dst = { .sin_family = AF_INET,
		.sin_port = htons(7471) };

	inet_pton(AF_INET, "192.0.2.9", &dst.sin_addr);
	assert_false(readable(ch->fd));
	assert_int_equal(rdma_resolve_addr(id, NULL,
			(struct sockaddr *)&dst, 500), 0);
	assert_int_equal(mock_cm_last("rdma_resolve_addr")->timeout_ms, 500);
	assert_int_equal(mock_cm_pending(ch), 1);
	struct rdma_cm_event *ev = get_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);

	assert_ptr_equal(ev->id, id);
	assert_int_equal(ev->status, 0);
	assert_ptr_equal(id->verbs, mock_cm_context());
	assert_false(readable(ch->fd));
	assert_int_equal(mock_cm_unacked(id), 1);
	/* the real destroy / migrate would block */
	expect_assert_failure(rdma_destroy_id(id));
	expect_assert_failure(rdma_migrate_id(id, ch));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	expect_assert_failure(rdma_ack_cm_event(ev)); /* twice */
	assert_int_equal(ntohs(rdma_get_dst_port(id)), 7471);
	assert_int_not_equal(rdma_get_src_port(id), 0);

	assert_int_equal(rdma_resolve_route(id, 500), 0);
	ev = get_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_ack_cm_event(ev), 0);

	/* QP through librdmacm: INIT at once */
	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex qa = { 0 };

	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
	assert_int_equal(rdma_create_qp_ex(id, &qa), 0);
	assert_non_null(id->qp);
	assert_int_equal(id->qp->state, IBV_QPS_INIT);
	assert_non_null(ibv_qp_to_qp_ex(id->qp));
	struct mock_qp_info info;

	mock_qp_info(id->qp, &info);
	assert_ptr_equal(info.cm_id, id);
	assert_true(info.is_ex);

	/* connect: too much private data, then fine */
	uint8_t big[57] = { 0 };
	struct rdma_conn_param cp = { .private_data = big,
		.private_data_len = sizeof(big), .responder_resources = 1,
		.initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7 };

	assert_int_equal(rdma_connect(id, &cp), -1);
	assert_int_equal(errno, EINVAL);
	cp.private_data = "hi";
	cp.private_data_len = 2;
	mock_cm_react("rdma_connect", RDMA_CM_EVENT_ESTABLISHED, 0, "acc", 3);
	assert_int_equal(rdma_connect(id, &cp), 0);
	const struct mock_cm_call *c = mock_cm_last("rdma_connect");

	assert_int_equal(c->count, 1);
	assert_ptr_equal(c->id, id);
	assert_int_equal(c->pdata_len, 2);
	assert_memory_equal(c->pdata, "hi", 2);
	assert_int_equal(c->param.retry_count, 7);
	assert_null(c->param.private_data);

	/* ESTABLISHED on the active side: REP-sized, zero padded; QP to RTS */
	ev = get_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(ev->param.conn.private_data_len, MOCK_PDATA_REP);
	const uint8_t *pd8 = ev->param.conn.private_data;

	assert_memory_equal(pd8, "acc", 3);
	for (int i = 3; i < MOCK_PDATA_REP; i++)
		assert_int_equal(pd8[i], 0);
	assert_int_equal(id->qp->state, IBV_QPS_RTS);
	assert_int_equal(rdma_ack_cm_event(ev), 0);

	/* the peer disconnects; we disconnect: QP to ERR */
	mock_cm_queue_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	ev = get_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(ev->param.conn.private_data_len, 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_disconnect(id), 0);
	assert_int_equal(id->qp->state, IBV_QPS_ERR);
	assert_int_equal(mock_cm_last("rdma_disconnect")->count, 1);

	/* the channel is in use */
	expect_assert_failure(rdma_destroy_event_channel(ch));
	rdma_destroy_qp(id);
	assert_null(id->qp);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

static void
test_cm_resolve_timeout_and_unreachable(void **state)
{
	(void)state;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct sockaddr_in dst = { .sin_family = AF_INET,
		.sin_port = htons(1) };

	inet_pton(AF_INET, "192.0.2.9", &dst.sin_addr);
	set_nonblock(ch->fd);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	mock_cm_react("rdma_resolve_addr", MOCK_CM_NO_EVENT, 0, NULL, 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst,
			10), 0);
	assert_false(readable(ch->fd)); /* nothing: a resolve timeout */
	assert_int_equal(rdma_destroy_id(id), 0);

	mock_cm_set_reachable(false);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&dst), -1);
	assert_int_equal(errno, ENODEV);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst,
			10), 0);
	struct rdma_cm_event *ev = get_event(ch, RDMA_CM_EVENT_ADDR_ERROR);

	assert_int_equal(ev->status, -ENODEV);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void
test_cm_passive_flow(void **state)
{
	(void)state;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l;

	set_nonblock(ch->fd);
	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	struct sockaddr_in a = { .sin_family = AF_INET };

	inet_pton(AF_INET, "192.0.2.1", &a.sin_addr);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&a), 0);
	uint16_t port = ntohs(rdma_get_src_port(l));

	assert_int_not_equal(port, 0);
	assert_ptr_equal(l->verbs, mock_cm_context());
	/* the same port again: in use */
	struct rdma_cm_id *l2;

	assert_int_equal(rdma_create_id(ch, &l2, NULL, RDMA_PS_TCP), 0);
	a.sin_port = htons(port);
	assert_int_equal(rdma_bind_addr(l2, (struct sockaddr *)&a), -1);
	assert_int_equal(errno, EADDRINUSE);
	assert_int_equal(rdma_destroy_id(l2), 0);
	assert_int_equal(rdma_listen(l, 8), 0);
	assert_int_equal(mock_cm_last("rdma_listen")->backlog, 8);

	struct rdma_cm_id *c1 = mock_cm_queue_conn_request(l, "req", 3);
	struct rdma_cm_id *c2 = mock_cm_queue_conn_request(l, NULL, 0);

	/* not handed out yet: no leak, not usable */
	assert_int_equal(mock_live(MOCK_CM_ID), 1);
	struct rdma_cm_event *ev = get_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);

	assert_ptr_equal(ev->id, c1);
	assert_ptr_equal(ev->listen_id, l);
	assert_int_equal(ev->param.conn.private_data_len, MOCK_PDATA_REQ);
	assert_memory_equal(ev->param.conn.private_data, "req\0\0", 5);
	assert_int_equal(mock_live(MOCK_CM_ID), 2);
	assert_ptr_equal(c1->verbs, mock_cm_context());
	assert_int_equal(ntohs(rdma_get_src_port(c1)), port);
	/* the event counts against the listener */
	assert_int_equal(mock_cm_unacked(l), 1);
	expect_assert_failure(rdma_destroy_id(l));
	assert_int_equal(rdma_ack_cm_event(ev), 0);

	/* the new id moves to its own channel */
	struct rdma_event_channel *ch2 = rdma_create_event_channel();

	set_nonblock(ch2->fd);
	assert_int_equal(rdma_migrate_id(c1, ch2), 0);
	assert_ptr_equal(c1->channel, ch2);
	uint8_t rep[197] = { 0 };
	struct rdma_conn_param cp = { .private_data = rep,
		.private_data_len = sizeof(rep) };

	assert_int_equal(rdma_accept(c1, &cp), -1); /* > 196 bytes */
	cp.private_data_len = 196;
	rep[0] = 0x5a;
	assert_int_equal(rdma_accept(c1, &cp), 0);
	assert_int_equal(mock_cm_last("rdma_accept")->pdata_len, 196);
	assert_int_equal(mock_cm_last("rdma_accept")->pdata[0], 0x5a);
	assert_int_equal(rdma_accept(c1, &cp), -1); /* only once */
	/* events of c1 now come on ch2 */
	mock_cm_queue_event(c1, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	assert_int_equal(mock_cm_pending(ch), 1);	/* c2's request only */
	assert_int_equal(mock_cm_pending(ch2), 1);
	ev = get_event(ch2, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(ev->param.conn.private_data_len, 0); /* passive */
	assert_int_equal(rdma_ack_cm_event(ev), 0);

	/* the second request is rejected with private data */
	ev = get_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(ev->id, c2);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_reject(c2, "no", 2), 0);
	assert_int_equal(mock_cm_last("rdma_reject")->pdata_len, 2);
	assert_int_equal(rdma_destroy_id(c2), 0);

	/* a request still queued goes away with the listener */
	mock_cm_queue_conn_request(l, NULL, 0);
	assert_int_equal(rdma_destroy_id(l), 0);
	assert_int_equal(mock_cm_pending(ch), 0);
	assert_false(readable(ch->fd));
	assert_int_equal(rdma_disconnect(c1), 0);
	assert_int_equal(rdma_destroy_id(c1), 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch2);
}

static void
test_cm_migrate_moves_pending_events(void **state)
{
	(void)state;
	struct rdma_event_channel *a = rdma_create_event_channel();
	struct rdma_event_channel *b = rdma_create_event_channel();
	struct rdma_cm_id *id;

	set_nonblock(a->fd);
	set_nonblock(b->fd);
	assert_int_equal(rdma_create_id(a, &id, NULL, RDMA_PS_TCP), 0);
	mock_cm_queue_event(id, RDMA_CM_EVENT_REJECTED,
			MOCK_REJ_CONSUMER_DEFINED, "r", 1);
	assert_true(readable(a->fd));
	assert_int_equal(rdma_migrate_id(id, b), 0);
	assert_false(readable(a->fd));
	struct rdma_cm_event *ev = get_event(b, RDMA_CM_EVENT_REJECTED);

	assert_int_equal(ev->status, MOCK_REJ_CONSUMER_DEFINED);
	assert_int_equal(ev->param.conn.private_data_len, MOCK_PDATA_REJ);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_string_equal(rdma_event_str(RDMA_CM_EVENT_REJECTED),
			"RDMA_CM_EVENT_REJECTED");
	/* a NULL channel: synchronous id with a channel of its own */
	assert_int_equal(rdma_migrate_id(id, NULL), 0);
	assert_non_null(id->channel);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(a);
	rdma_destroy_event_channel(b);
}

static void
test_cm_event_spec_param(void **state)
{
	(void)state;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l, *id;

	set_nonblock(ch->fd);
	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_listen(l, 1), 0); /* binds a wildcard port */
	assert_int_not_equal(rdma_get_src_port(l), 0);
	uint8_t full[MOCK_PDATA_REQ];

	memset(full, 0xab, sizeof(full));
	struct mock_cm_event_spec spec = { .pdata = full, .len = sizeof(full),
		.set_param = true,
		.param = { .flow_control = 1, .initiator_depth = 3 } };

	id = mock_cm_queue_conn_request_ex(l, &spec);
	struct rdma_cm_event *ev = get_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);

	assert_ptr_equal(ev->id, id);
	assert_int_equal(ev->param.conn.flow_control, 1);
	assert_int_equal(ev->param.conn.initiator_depth, 3);
	assert_int_equal(ev->param.conn.private_data_len, MOCK_PDATA_REQ);
	assert_memory_equal(ev->param.conn.private_data, full, sizeof(full));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	/* more than a REQ carries: loud */
	uint8_t big[MOCK_PDATA_REQ + 1] = { 0 };

	spec.pdata = big;
	spec.len = sizeof(big);
	expect_assert_failure(mock_cm_queue_conn_request_ex(l, &spec));

	/* a reaction with params: accept -> ESTABLISHED with flow_control */
	struct mock_cm_event_spec est = { .type = RDMA_CM_EVENT_ESTABLISHED,
		.set_param = true, .param = { .flow_control = 1 } };

	mock_cm_react_ex("rdma_accept", &est);
	struct rdma_conn_param cp = { .responder_resources = 1 };

	/* no QP and no param: EINVAL; with a param: fine */
	assert_int_equal(rdma_accept(id, NULL), -1);
	assert_int_equal(rdma_accept(id, &cp), 0);
	ev = get_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(ev->param.conn.flow_control, 1);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	/* padding off (iWARP-like): exact lengths */
	mock_cm_set_pdata_padding(false);
	mock_cm_queue_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, "bye", 3);
	ev = get_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(ev->param.conn.private_data_len, 3);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(ch);
}

static void
test_getaddrinfo(void **state)
{
	(void)state;
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE | RAI_NUMERICHOST,
		.ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res = NULL;

	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	assert_non_null(res->ai_src_addr);
	assert_null(res->ai_dst_addr);
	assert_int_equal(res->ai_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)res->ai_src_addr)->sin_port),
			7471);
	assert_int_equal(mock_live(MOCK_ADDRINFO), 1);
	rdma_freeaddrinfo(res);
	hints.ai_flags = RAI_NUMERICHOST;
	assert_int_equal(rdma_getaddrinfo("::1", "1", &hints, &res), 0);
	assert_non_null(res->ai_dst_addr);
	assert_int_equal(res->ai_family, AF_INET6);
	rdma_freeaddrinfo(res);
	/* not numeric: -1 and a (negative) EAI code in errno, as rdma-core 44 */
	assert_int_equal(rdma_getaddrinfo("not an address", "1", &hints, &res),
			-1);
	assert_true(errno < 0);
	assert_int_equal(mock_live(MOCK_ADDRINFO), 0);
}

/* ------------------------------------------------------------ leak checks */

static void
test_no_leaks_detects(void **state)
{
	(void)state;
	struct ibv_pd *pd = ibv_alloc_pd(mock_cm_context());

	expect_assert_failure(mock_assert_no_leaks());
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	set_nonblock(ch->fd);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	mock_cm_queue_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	struct rdma_cm_event *ev;

	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	expect_assert_failure(mock_assert_no_leaks()); /* unacked + live */
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
	mock_assert_no_leaks();
}

/* a small "object constructor" in the style of pmrep's providers */
struct thing {
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	char *name;
};

static bool Leaky;	/* forget the channel on one error path */
static bool Ignore_errors;
static void *Leaked_mem;

static int
thing_new(struct ibv_context *ctx, struct thing **out)
{
	struct thing *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return -ENOMEM;
	t->name = strdup("thing");
	if (t->name == NULL)
		goto err_free;
	t->pd = ibv_alloc_pd(ctx);
	if (t->pd == NULL && !Ignore_errors)
		goto err_name;
	t->ch = ibv_create_comp_channel(ctx);
	if (t->ch == NULL)
		goto err_pd;
	t->cq = ibv_create_cq(ctx, 4, t, t->ch, 0);
	if (t->cq == NULL) {
		if (Leaky) {
			Leaked_mem = t->name;
			t->name = NULL;
		}
		goto err_ch;
	}
	*out = t;
	return 0;
err_ch:
	if (!Leaky)
		(void)ibv_destroy_comp_channel(t->ch);
err_pd:
	if (t->pd)
		(void)ibv_dealloc_pd(t->pd);
err_name:
	free(t->name);
err_free:
	free(t);
	return -EIO;
}

static void
thing_delete(struct thing *t)
{
	assert_int_equal(ibv_destroy_cq(t->cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(t->ch), 0);
	if (t->pd)
		assert_int_equal(ibv_dealloc_pd(t->pd), 0);
	free(t->name);
	free(t);
}

struct scen {
	struct ibv_context *ctx;
	struct thing *t;
	int runs;
	char failed[16][32];
};

static int
scenario(void *arg)
{
	struct scen *s = arg;

	s->t = NULL;
	return thing_new(s->ctx, &s->t);
}

static void
cleanup(void *arg, int ret)
{
	struct scen *s = arg;
	const char *f = mock_each_failed_fn();

	if (mock_each_iteration() > 0 && s->runs < 16)
		snprintf(s->failed[s->runs++], sizeof(s->failed[0]), "%s",
				f ? f : "-");
	if (ret == 0)
		thing_delete(s->t);
	else
		assert_null(s->t);
}

static void
test_run_each_failure(void **state)
{
	(void)state;
	struct scen s = { .ctx = mock_cm_context() };

	/* calloc, strdup, ibv_alloc_pd, ibv_create_comp_channel, ibv_create_cq */
	assert_int_equal(mock_run_each_failure(scenario, cleanup, &s), 5);
	assert_int_equal(s.runs, 5);
	assert_string_equal(s.failed[0], "calloc");
	assert_string_equal(s.failed[1], "strdup");
	assert_string_equal(s.failed[2], "ibv_alloc_pd");
	assert_string_equal(s.failed[3], "ibv_create_comp_channel");
	assert_string_equal(s.failed[4], "ibv_create_cq");

	/* without allocations */
	struct mock_each_opts o = { .no_allocs = true };

	s.runs = 0;
	assert_int_equal(mock_run_each_failure_opts(scenario, cleanup, &s, &o),
			3);
	assert_string_equal(s.failed[0], "ibv_alloc_pd");
}

static void
test_run_each_failure_detects_leaks(void **state)
{
	(void)state;
	struct scen s = { .ctx = mock_cm_context() };

	/* the create_cq error path leaks the channel and the name */
	Leaky = true;
	expect_assert_failure(mock_run_each_failure(scenario, cleanup, &s));
	Leaky = false;
	free(Leaked_mem);
	Leaked_mem = NULL;
	mock_reset();
}

static void
test_run_each_failure_detects_swallowed_error(void **state)
{
	(void)state;
	struct scen s = { .ctx = mock_cm_context() };

	/* a failed ibv_alloc_pd is ignored: scenario returns 0 */
	Ignore_errors = true;
	expect_assert_failure(mock_run_each_failure(scenario, cleanup, &s));
	mock_reset();
	/* ... unless tolerated */
	static const char *const tol[] = { "ibv_alloc_pd", NULL };
	struct mock_each_opts o = { .tolerated = tol };

	s.ctx = mock_cm_context();
	s.runs = 0;
	assert_int_equal(mock_run_each_failure_opts(scenario, cleanup, &s, &o),
			5);
	Ignore_errors = false;
}

static void *Keep;

static int
leak_scenario(void *arg)
{
	(void)arg;
	void *a = malloc(8);

	if (a == NULL)
		return -1;
	void *b = malloc(8);

	if (b == NULL) {
		Keep = a;	/* "forgets" a on this error path */
		return -1;
	}
	free(b);
	free(a);
	return 0;
}

static void
leak_cleanup(void *arg, int ret)
{
	(void)arg;
	(void)ret;
}

static void
test_run_each_failure_detects_heap_leak(void **state)
{
	(void)state;
	expect_assert_failure(mock_run_each_failure(leak_scenario, leak_cleanup,
			NULL));
	assert_non_null(Keep);
	free(Keep);
	Keep = NULL;
	mock_reset();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, mock_test_setup, \
		mock_test_teardown)
		T(test_device_and_caps),
		T(test_cm_context_is_not_closable),
		T(test_comp_channel_ebusy_positive),
		T(test_cq_events_and_fd),
		T(test_cq_destroy_with_unacked_event_fails),
		T(test_blocking_get_on_empty_channel_fails),
		T(test_post_send_recorded_and_sq_model),
		T(test_post_before_rts_and_inline),
		T(test_qp_error_flushes_everything),
		T(test_wr_api),
		T(test_srq_and_receive),
		T(test_async_events),
		T(test_reg_mr_paths),
		T(test_injection_conventions),
		T(test_cm_active_flow),
		T(test_cm_resolve_timeout_and_unreachable),
		T(test_cm_passive_flow),
		T(test_cm_migrate_moves_pending_events),
		T(test_cm_event_spec_param),
		T(test_getaddrinfo),
		T(test_no_leaks_detects),
		T(test_run_each_failure),
		T(test_run_each_failure_detects_leaks),
		T(test_run_each_failure_detects_swallowed_error),
		T(test_run_each_failure_detects_heap_leak),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
