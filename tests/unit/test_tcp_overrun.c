/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tcp_overrun.c -- T26 on the tcp provider: its CQs grow instead of
 * overrunning, and a CQ that cannot grow (out of memory) is an overrun:
 * the completions that did not fit are gone, so the conn is lost with a
 * clear error instead of leaving its requests waited for forever.
 * A real tcp pair on loopback; the allocation that grows the CQ is failed
 * through the mocks' malloc wrapper (tests/unit/mocks/mock_alloc.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pmrep/transport.h>

#include "mocks.h"

#define NREQ 16		/* signalled writes, more than the CQ's 4 */
#define T 5000

struct pair {
	struct pmrep_peer *peer;
	struct pmrep_ep *ep;
	struct pmrep_conn *c, *s;
	uint8_t buf[2][4096];
	struct pmrep_mr_local *cmr, *smr;
	struct pmrep_mr_remote *srmt;
};

static void
expect_event(struct pmrep_conn *conn, enum pmrep_conn_event want)
{
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(conn, T, &ev), 0);
	assert_int_equal(ev, want);
}

static void
pair_open(struct pair *p)
{
	memset(p, 0, sizeof(*p));
	assert_int_equal(setenv("PMREP_PROVIDER", "tcp", 1), 0);
	assert_int_equal(pmrep_peer_open("127.0.0.1", false, &p->peer), 0);
	assert_int_equal(pmrep_ep_listen(p->peer, "127.0.0.1", "0", &p->ep), 0);
	uint16_t port = 0;
	assert_int_equal(pmrep_ep_get_port(p->ep, &port), 0);
	char ports[8];
	snprintf(ports, sizeof(ports), "%u", port);

	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, NREQ), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, 4), 0);
	struct pmrep_conn_req *creq = NULL, *sreq = NULL;
	assert_int_equal(pmrep_conn_req_new(p->peer, "127.0.0.1", ports, cfg,
			&creq), 0);
	assert_int_equal(pmrep_conn_req_connect(&creq, NULL, &p->c), 0);
	assert_int_equal(pmrep_ep_wait_conn_req(p->ep, cfg, T, &sreq), 0);
	assert_int_equal(pmrep_conn_req_connect(&sreq, NULL, &p->s), 0);
	expect_event(p->c, PMREP_CONN_ESTABLISHED);
	expect_event(p->s, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);

	assert_int_equal(pmrep_mr_reg(p->peer, p->buf[0], sizeof(p->buf[0]),
			PMREP_MR_USAGE_ALL, &p->cmr), 0);
	assert_int_equal(pmrep_mr_reg(p->peer, p->buf[1], sizeof(p->buf[1]),
			PMREP_MR_USAGE_ALL, &p->smr), 0);
	uint8_t desc[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mr_get_descriptor(p->smr, desc), 0);
	assert_int_equal(pmrep_mr_remote_from_descriptor(desc, sizeof(desc),
			&p->srmt), 0);
}

static void
pair_close(struct pair *p)
{
	(void) pmrep_conn_disconnect(p->c);
	(void) pmrep_conn_disconnect(p->s);
	assert_int_equal(pmrep_conn_delete(&p->c), 0);
	assert_int_equal(pmrep_conn_delete(&p->s), 0);
	assert_int_equal(pmrep_mr_remote_delete(&p->srmt), 0);
	assert_int_equal(pmrep_mr_dereg(&p->cmr), 0);
	assert_int_equal(pmrep_mr_dereg(&p->smr), 0);
	assert_int_equal(pmrep_ep_shutdown(&p->ep), 0);
	assert_int_equal(pmrep_peer_delete(&p->peer), 0);
}

/* every completion there is, within T: how many, all of status `st` */
static int
drain(struct pmrep_cq *cq, enum pmrep_wc_status st, int want)
{
	int got = 0;
	while (got < want && pmrep_cq_wait(cq, T) == 0) {
		struct pmrep_completion c[NREQ];
		int n = 0;
		while (pmrep_cq_get_completions(cq, c, NREQ, &n) == 0 && n > 0) {
			for (int i = 0; i < n; i++)
				assert_int_equal(c[i].status, st);
			got += n;
		}
	}
	return got;
}

static void
T26_tcp_cq_grows_past_its_size_and_loses_nothing(void **state)
{
	(void) state;
	struct pair p;
	pair_open(&p);
	for (int i = 0; i < NREQ; i++)
		assert_int_equal(pmrep_write(p.c, p.srmt, 0, p.cmr, 0, 64,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1)), 0);
	struct pmrep_cq *cq = NULL;
	assert_int_equal(pmrep_conn_get_cq(p.c, &cq), 0);
	assert_int_equal(drain(cq, PMREP_WC_SUCCESS, NREQ), NREQ);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(p.c, &ev), PMREP_E_NO_EVENT);
	pair_close(&p);
}

static void
T26_tcp_cq_that_cannot_grow_fails_its_conn(void **state)
{
	(void) state;
	struct pair p;
	pair_open(&p);
	/* from now on no allocation succeeds: the CQ (4 entries) cannot
	 * grow for the 16 completions the writes below earn */
	mock_fail_always("malloc", ENOMEM);
	for (int i = 0; i < NREQ; i++)
		assert_int_equal(pmrep_write(p.c, p.srmt, 0, p.cmr, 0, 64,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(i + 1)), 0);
	/* the conn says it is lost, by itself */
	expect_event(p.c, PMREP_CONN_LOST);
	mock_reset();
	struct pmrep_cq *cq = NULL;
	assert_int_equal(pmrep_conn_get_cq(p.c, &cq), 0);
	struct pmrep_completion c[NREQ];
	int n = 0;
	/* what could not be queued is gone (the batch that overran) */
	int ret = pmrep_cq_get_completions(cq, c, NREQ, &n);
	assert_true(ret == PMREP_E_NO_COMPLETION || (ret == 0 && n < NREQ));
	pair_close(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(T26_tcp_cq_grows_past_its_size_and_loses_nothing),
		cmocka_unit_test(T26_tcp_cq_that_cannot_grow_fails_its_conn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
