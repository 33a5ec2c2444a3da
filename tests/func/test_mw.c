/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mw.c -- memory windows: a region registered with
 * PMREP_MR_USAGE_MW_BIND is reachable remotely only through a window, and
 * a window only from the conn it is bound to, only until it is
 * invalidated. Both providers (verbs: in the soft-RoCE guest, where the
 * "other conns" are other QPs of the same protection domain).
 *
 *  - the window's own conn writes, flushes and reads through it; three
 *    other conns of the same two peers that name its rkey meet a remote
 *    access error (READ, WRITE, FLUSH) and change no byte;
 *  - after pmrep_mw_invalidate its own conn meets the error too;
 *  - a read-only window refuses a write;
 *  - tcp: the region's own rkey (forged into a descriptor) grants nothing;
 *  - argument errors, a descriptor of an MW_BIND region, a lost conn;
 *  - deleting the conn invalidates its windows;
 *  - the cost of bind + invalidate (printed, not asserted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "func.h"

static uint32_t
get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		(uint32_t)p[3] << 24;
}

static long long
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#define SIZE 8192
#define T 5000

#define WIN_ALL (PMREP_MR_USAGE_READ_SRC | PMREP_MR_USAGE_WRITE_DST | \
		PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY)

struct env {
	struct func_pair p;
	uint8_t *sbuf, *cbuf;
	struct pmrep_mr_local *smr, *cmr;
};

static void
env_open(struct env *e, int usage)
{
	memset(e, 0, sizeof(*e));
	func_pair_open(&e->p, NULL);
	e->sbuf = func_alloc(SIZE);
	e->cbuf = func_alloc(SIZE);
	memset(e->sbuf, 0x5a, SIZE);
	assert_int_equal(pmrep_mr_reg(e->p.speer, e->sbuf, SIZE,
			usage | PMREP_MR_USAGE_MW_BIND, &e->smr), 0);
	assert_int_equal(pmrep_mr_reg(e->p.cpeer, e->cbuf, SIZE,
			PMREP_MR_USAGE_ALL, &e->cmr), 0);
}

static void
env_close(struct env *e)
{
	assert_int_equal(pmrep_conn_delete(&e->p.cconn), 0);
	assert_int_equal(pmrep_conn_delete(&e->p.sconn), 0);
	assert_int_equal(pmrep_mr_dereg(&e->cmr), 0);
	assert_int_equal(pmrep_mr_dereg(&e->smr), 0);
	free(e->sbuf);
	free(e->cbuf);
	func_pair_close(&e->p);
}

static struct pmrep_mr_remote *
remote_of(const struct pmrep_mw *mw)
{
	uint8_t desc[PMREP_MR_DESC_SIZE];
	struct pmrep_mr_remote *r = NULL;
	assert_int_equal(pmrep_mw_get_descriptor(mw, desc), 0);
	assert_int_equal(pmrep_mr_remote_from_descriptor(desc, sizeof(desc), &r), 0);
	return r;
}

static void
expect_status(struct pmrep_conn *conn, uintptr_t ctx, enum pmrep_wc_status st)
{
	struct pmrep_completion c = func_wait_one(func_cq(conn), T * func_slow());
	assert_int_equal((uintptr_t)c.op_context, ctx);
	if (c.status != st)
		fail_msg("request %lu: expected %s, got %s", (unsigned long)ctx,
				pmrep_wc_status_str(st), pmrep_wc_status_str(c.status));
}

static bool
bytes_are(const uint8_t *p, uint8_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* one extra client conn and its server side, both deleted by the caller */
struct side {
	struct pmrep_conn *c, *s;
};

static void
window_reaches_the_region_from_its_own_conn_only(void **state)
{
	(void) state;
	struct env e;
	env_open(&e, WIN_ALL);
	struct side b, c, d;
	func_connect(&e.p, NULL, NULL, &b.c, &b.s);
	func_connect(&e.p, NULL, NULL, &c.c, &c.s);
	func_connect(&e.p, NULL, NULL, &d.c, &d.s);

	/* its own rkey is not handed out */
	uint8_t desc[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mr_get_descriptor(e.smr, desc), PMREP_E_INVAL);

	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(e.p.sconn, e.smr, WIN_ALL, &mw), 0);
	struct pmrep_mr_remote *r = remote_of(mw);
	size_t rsize = 0;
	assert_int_equal(pmrep_mr_remote_get_size(r, &rsize), 0);
	assert_int_equal(rsize, SIZE);

	/* the window's conn: write, flush, read back */
	func_pattern(e.cbuf, 64, 3);
	assert_int_equal(pmrep_write(e.p.cconn, r, 128, e.cmr, 0, 64,
			PMREP_F_COMPLETION_ON_ERROR, (void *)1), 0);
	assert_int_equal(pmrep_flush(e.p.cconn, r, 128, 64,
			PMREP_FLUSH_TYPE_VISIBILITY, PMREP_F_COMPLETION_ALWAYS,
			(void *)2), 0);
	expect_status(e.p.cconn, 2, PMREP_WC_SUCCESS);
	assert_memory_equal(e.sbuf + 128, e.cbuf, 64);
	assert_int_equal(pmrep_read(e.p.cconn, e.cmr, 4096, r, 64, 256,
			PMREP_F_COMPLETION_ALWAYS, (void *)3), 0);
	expect_status(e.p.cconn, 3, PMREP_WC_SUCCESS);
	assert_true(bytes_are(e.cbuf + 4096, 0x5a, 64));
	assert_memory_equal(e.cbuf + 4096 + 64, e.cbuf, 64);

	/* other conns of the same peers (verbs: other QPs of the PD) */
	memset(e.cbuf + 4096, 0, 256);
	assert_int_equal(pmrep_read(b.c, e.cmr, 4096, r, 0, 256,
			PMREP_F_COMPLETION_ALWAYS, (void *)4), 0);
	expect_status(b.c, 4, PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_true(bytes_are(e.cbuf + 4096, 0, 256));
	memset(e.cbuf, 0xee, 64);
	assert_int_equal(pmrep_write(c.c, r, 1024, e.cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)5), 0);
	expect_status(c.c, 5, PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_int_equal(pmrep_flush(d.c, r, 0, SIZE, PMREP_FLUSH_TYPE_VISIBILITY,
			PMREP_F_COMPLETION_ALWAYS, (void *)6), 0);
	expect_status(d.c, 6, PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_true(bytes_are(e.sbuf + 1024, 0x5a, 64));

	/* invalidated: its own conn is refused too */
	assert_int_equal(pmrep_mw_invalidate(&mw), 0);
	assert_null(mw);
	assert_int_equal(pmrep_read(e.p.cconn, e.cmr, 4096, r, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)7), 0);
	expect_status(e.p.cconn, 7, PMREP_WC_REMOTE_ACCESS_ERROR);

	assert_int_equal(pmrep_mr_remote_delete(&r), 0);
	struct side *all[] = { &b, &c, &d };
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pmrep_conn_delete(&all[i]->c), 0);
		assert_int_equal(pmrep_conn_delete(&all[i]->s), 0);
	}
	env_close(&e);
}

static void
read_only_window_refuses_a_write(void **state)
{
	(void) state;
	struct env e;
	env_open(&e, WIN_ALL);
	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(e.p.sconn, e.smr,
			PMREP_MR_USAGE_READ_SRC, &mw), 0);
	struct pmrep_mr_remote *r = remote_of(mw);
	assert_int_equal(pmrep_read(e.p.cconn, e.cmr, 0, r, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	expect_status(e.p.cconn, 1, PMREP_WC_SUCCESS);
	assert_true(bytes_are(e.cbuf, 0x5a, 64));
	memset(e.cbuf, 0x11, 64);
	assert_int_equal(pmrep_write(e.p.cconn, r, 0, e.cmr, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)2), 0);
	expect_status(e.p.cconn, 2, PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_true(bytes_are(e.sbuf, 0x5a, SIZE));
	assert_int_equal(pmrep_mw_invalidate(&mw), 0);
	assert_int_equal(pmrep_mr_remote_delete(&r), 0);
	env_close(&e);
}

/*
 * tcp hands out region keys in sequence: the region registered between
 * two plain ones has the key between theirs. A descriptor forged with it
 * (the window's address and size) is refused on the window's own conn.
 */
static void
own_rkey_of_a_window_region_grants_nothing(void **state)
{
	(void) state;
	FUNC_TCP_ONLY();
	struct func_pair p;
	func_pair_open(&p, NULL);
	uint8_t *x = func_alloc(SIZE), *y = func_alloc(SIZE), *z = func_alloc(SIZE);
	uint8_t *cbuf = func_alloc(SIZE);
	memset(y, 0x5a, SIZE);
	struct pmrep_mr_local *mx, *my, *mz, *cmr;
	assert_int_equal(pmrep_mr_reg(p.speer, x, SIZE, WIN_ALL, &mx), 0);
	assert_int_equal(pmrep_mr_reg(p.speer, y, SIZE,
			WIN_ALL | PMREP_MR_USAGE_MW_BIND, &my), 0);
	assert_int_equal(pmrep_mr_reg(p.speer, z, SIZE, WIN_ALL, &mz), 0);
	assert_int_equal(pmrep_mr_reg(p.cpeer, cbuf, SIZE, PMREP_MR_USAGE_ALL, &cmr), 0);
	uint8_t dx[PMREP_MR_DESC_SIZE], dz[PMREP_MR_DESC_SIZE], dw[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mr_get_descriptor(mx, dx), 0);
	assert_int_equal(pmrep_mr_get_descriptor(mz, dz), 0);
	uint32_t kx = get_le32(dx + 4), kz = get_le32(dz + 4);
	assert_int_equal(kz, kx + 2);

	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(p.sconn, my, WIN_ALL, &mw), 0);
	assert_int_equal(pmrep_mw_get_descriptor(mw, dw), 0);
	assert_int_not_equal(get_le32(dw + 4), kx + 1);
	func_put_le32(dw + 4, kx + 1);	/* the region's own key */
	struct pmrep_mr_remote *forged = NULL;
	assert_int_equal(pmrep_mr_remote_from_descriptor(dw, sizeof(dw), &forged), 0);
	assert_int_equal(pmrep_read(p.cconn, cmr, 0, forged, 0, 64,
			PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
	expect_status(p.cconn, 1, PMREP_WC_REMOTE_ACCESS_ERROR);
	assert_true(bytes_are(cbuf, 0, 64));

	assert_int_equal(pmrep_mw_invalidate(&mw), 0);
	assert_int_equal(pmrep_mr_remote_delete(&forged), 0);
	assert_int_equal(pmrep_conn_delete(&p.cconn), 0);
	assert_int_equal(pmrep_conn_delete(&p.sconn), 0);
	assert_int_equal(pmrep_mr_dereg(&mx), 0);
	assert_int_equal(pmrep_mr_dereg(&my), 0);
	assert_int_equal(pmrep_mr_dereg(&mz), 0);
	assert_int_equal(pmrep_mr_dereg(&cmr), 0);
	free(x);
	free(y);
	free(z);
	free(cbuf);
	func_pair_close(&p);
}

static void
bind_argument_errors(void **state)
{
	(void) state;
	struct env e;
	env_open(&e, PMREP_MR_USAGE_READ_SRC);
	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(NULL, e.smr, PMREP_MR_USAGE_READ_SRC, &mw), PMREP_E_INVAL);
	assert_int_equal(pmrep_mw_bind(e.p.sconn, NULL, PMREP_MR_USAGE_READ_SRC, &mw), PMREP_E_INVAL);
	assert_int_equal(pmrep_mw_bind(e.p.sconn, e.smr, PMREP_MR_USAGE_READ_SRC, NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_mw_bind(e.p.sconn, e.smr, 0, &mw), PMREP_E_INVAL);
	/* not a remote usage */
	assert_int_equal(pmrep_mw_bind(e.p.sconn, e.smr, PMREP_MR_USAGE_SEND, &mw), PMREP_E_INVAL);
	/* more than the region allows */
	assert_int_equal(pmrep_mw_bind(e.p.sconn, e.smr, PMREP_MR_USAGE_WRITE_DST, &mw), PMREP_E_INVAL);
	/* a region without MW_BIND */
	assert_int_equal(pmrep_mw_bind(e.p.sconn, e.cmr, PMREP_MR_USAGE_READ_SRC, &mw), PMREP_E_INVAL);
	/* a region of the other peer */
	struct pmrep_mr_local *other = NULL;
	assert_int_equal(pmrep_mr_reg(e.p.cpeer, e.cbuf, 64,
			PMREP_MR_USAGE_READ_SRC | PMREP_MR_USAGE_MW_BIND, &other), 0);
	assert_int_equal(pmrep_mw_bind(e.p.sconn, other, PMREP_MR_USAGE_READ_SRC, &mw), PMREP_E_INVAL);
	assert_int_equal(pmrep_mr_dereg(&other), 0);
	assert_null(mw);
	/* MW_BIND alone is no usage */
	assert_int_equal(pmrep_mr_reg(e.p.speer, e.sbuf, 64, PMREP_MR_USAGE_MW_BIND,
			&other), PMREP_E_INVAL);
	uint8_t desc[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mw_get_descriptor(NULL, desc), PMREP_E_INVAL);
	assert_int_equal(pmrep_mw_invalidate(NULL), PMREP_E_INVAL);
	assert_int_equal(pmrep_mw_invalidate(&mw), 0);	/* NULL window: ok */
	env_close(&e);
}

static void
conn_delete_invalidates_its_windows(void **state)
{
	(void) state;
	struct env e;
	env_open(&e, WIN_ALL);
	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(e.p.sconn, e.smr, WIN_ALL, &mw), 0);
	uint8_t desc[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mw_get_descriptor(mw, desc), 0);
	assert_int_equal(pmrep_conn_delete(&e.p.sconn), 0);
	assert_int_equal(pmrep_mw_get_descriptor(mw, desc), PMREP_E_STATE);
	assert_int_equal(pmrep_mw_invalidate(&mw), 0);
	assert_null(mw);
	env_close(&e);
}

static void
bind_on_a_closed_conn_is_refused(void **state)
{
	(void) state;
	struct env e;
	env_open(&e, WIN_ALL);
	assert_int_equal(pmrep_conn_disconnect(e.p.cconn), 0);
	func_expect_event(e.p.sconn, PMREP_CONN_CLOSED, T * func_slow());
	struct pmrep_mw *mw = NULL;
	assert_int_equal(pmrep_mw_bind(e.p.sconn, e.smr, WIN_ALL, &mw), PMREP_E_CONN_LOST);
	assert_null(mw);
	env_close(&e);
}

/*
 * What a session's window costs: N binds each followed by its invalidate
 * on one conn (the time of pmrep_mw_bind + get_descriptor and of
 * pmrep_mw_invalidate only). Between the two, a signalled request of the
 * server's conn completes: it is behind the bind on the send queue, so the
 * bind was executed. (verbs: a window deallocated before its bind executed
 * makes the device refuse the bind and fail the conn -- seen on rxe 6.12,
 * whose requester runs after the post returns; the target invalidates only
 * at a session's end.) Every 8th window is also read through. The figure
 * is printed for docs/PERFORMANCE.md.
 */
static void
bind_and_invalidate_cost(void **state)
{
	(void) state;
	struct env e;
	env_open(&e, WIN_ALL);
	const int n = 200;
	uint8_t s8[64];
	struct pmrep_mr_local *smr8 = NULL;
	assert_int_equal(pmrep_mr_reg(e.p.speer, s8, sizeof(s8),
			PMREP_MR_USAGE_READ_DST, &smr8), 0);
	struct pmrep_mr_remote *crmt = func_remote(e.cmr);
	long long spent = 0;
	uint32_t last = 0;
	int same = 0;
	for (int i = 0; i < n; i++) {
		struct pmrep_mw *mw = NULL;
		long long t0 = now_us();
		assert_int_equal(pmrep_mw_bind(e.p.sconn, e.smr, WIN_ALL, &mw), 0);
		uint8_t desc[PMREP_MR_DESC_SIZE];
		assert_int_equal(pmrep_mw_get_descriptor(mw, desc), 0);
		spent += now_us() - t0;
		same += get_le32(desc + 4) == last;
		last = get_le32(desc + 4);
		/* the bind is executed (and, verbs, its send-queue slot
		 * freed) once this completes */
		assert_int_equal(pmrep_read(e.p.sconn, smr8, 0, crmt, 0, 8,
				PMREP_F_COMPLETION_ALWAYS, (void *)2), 0);
		expect_status(e.p.sconn, 2, PMREP_WC_SUCCESS);
		if (i % 8 == 7 || i == n - 1) {
			struct pmrep_mr_remote *r = NULL;
			assert_int_equal(pmrep_mr_remote_from_descriptor(desc,
					sizeof(desc), &r), 0);
			assert_int_equal(pmrep_read(e.p.cconn, e.cmr, 0, r, 0, 64,
					PMREP_F_COMPLETION_ALWAYS, (void *)1), 0);
			expect_status(e.p.cconn, 1, PMREP_WC_SUCCESS);
			assert_int_equal(pmrep_mr_remote_delete(&r), 0);
		}
		long long t1 = now_us();
		assert_int_equal(pmrep_mw_invalidate(&mw), 0);
		spent += now_us() - t1;
	}
	assert_int_equal(same, 0);	/* every window its own key */
	printf("window bind + invalidate (%s): %d pairs, %.1f us per pair\n",
			func_is_tcp() ? "tcp" : "verbs", n,
			(double)spent / n);
	assert_int_equal(pmrep_mr_remote_delete(&crmt), 0);
	assert_int_equal(pmrep_mr_dereg(&smr8), 0);
	env_close(&e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(window_reaches_the_region_from_its_own_conn_only),
		cmocka_unit_test(read_only_window_refuses_a_write),
		cmocka_unit_test(own_rkey_of_a_window_region_grants_nothing),
		cmocka_unit_test(bind_argument_errors),
		cmocka_unit_test(conn_delete_invalidates_its_windows),
		cmocka_unit_test(bind_on_a_closed_conn_is_refused),
		cmocka_unit_test(bind_and_invalidate_cost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
