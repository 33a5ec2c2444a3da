/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_members.c -- membership at run time
 * (docs/PROTOCOL.md "Membership"): a replica added to a running mirror
 * joins without stopping the persists and is required by "all" only once
 * in sync; a replica removed is marked consistent and its index is given
 * again; the quorum changes; every change is recorded in the in-sync
 * replicas' headers before it takes effect, and a promotion fences what
 * the headers record, not what its caller remembered (a quorum lowered at
 * run time: refused where the old count would have let it through).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (1u << 20)
#define REC 4096u
#define NT 3

static uint8_t key[PMREP_KEY_MAX];
static size_t key_len;
static char keyfile[256];
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x4d, 0x45, 0x4d, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128], lpath[256], path[NT][256];
static struct func_child tg[NT];
static struct pmrep_pmem *local;
static uint8_t *base;
static unsigned next_rec;

static void
serve(unsigned i)
{
	struct func_child_cfg cfg = { .path = path[i], .size = SIZE,
		.key = key, .key_len = key_len };
	func_child_start(&tg[i], &cfg, "0");
}

/* the first `len` bytes of the file at `p` */
static void
read_head(const char *p, uint8_t *out, size_t len)
{
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, out, len, 0), (ssize_t)len);
	close(fd);
}

/* start the targets `which` (bit i: tg[i]) */
static void
serve_set(unsigned which)
{
	for (unsigned i = 0; i < NT; i++)
		if (which & (1u << i))
			serve(i);
}

/* a cfg of the targets `which` (bit i: tg[i]) in that order, quorum k */
static struct pmrep_mirror_cfg *
mcfg(unsigned which, unsigned k)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	for (unsigned i = 0; i < NT; i++)
		if (which & (1u << i))
			assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(),
					tg[i].port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, key_len), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(c, k), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 1000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 20000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 50, 200), 0);
	return c;
}

static struct pmrep_mirror *
mirror(unsigned which, unsigned k)
{
	assert_int_equal(pmrep_log_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(which, k);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	pmrep_mirror_cfg_delete(&c);
	return m;
}

/* write and persist the next record: `want` the result */
static void
append(struct pmrep_mirror *m, int want)
{
	unsigned k = next_rec++ % (SIZE / REC);
	uint8_t *p = base + (size_t)k * REC;
	for (unsigned i = 0; i < REC; i++)
		p[i] = (uint8_t)(next_rec * 7 + i * 13 + 1);
	assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
			3000 * func_slow()), want);
}

static void
expect_members(const char *p, unsigned n, unsigned k)
{
	struct pmrep_replica_membership mb;
	assert_int_equal(pmrep_replica_read_membership(p, &mb), 0);
	if (mb.set_size != n || mb.quorum != k)
		fail_msg("%s records %u replicas, quorum %u; expected %u, %u",
				p, mb.set_size, mb.quorum, n, k);
}

static enum pmrep_replica_state
state_of(struct pmrep_mirror *m, unsigned i)
{
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
	return st.state;
}

/* wait (polling) until replica i is IN_SYNC */
static void
wait_in_sync(struct pmrep_mirror *m, unsigned i)
{
	long long until = func_now_ms() + 20000LL * func_slow();
	while (state_of(m, i) != PMREP_REPLICA_IN_SYNC) {
		assert_true(func_now_ms() < until);
		struct pmrep_mirror_completion cc[4];
		int got;
		assert_int_equal(pmrep_mirror_poll(m, cc, 4, &got), 0);
		usleep(2000);
	}
}

/* is there an event of replica i to `to` among those waiting? */
static bool
saw_event(struct pmrep_mirror *m, unsigned i, enum pmrep_replica_state to)
{
	struct pmrep_mirror_event ev;
	bool seen = false;
	while (pmrep_mirror_get_event(m, &ev) == 0)
		if (ev.replica == i && ev.to == to)
			seen = true;
	return seen;
}

static void
close_mirror(struct pmrep_mirror **m)
{
	assert_int_equal(pmrep_mirror_delete(m), 0);
}

/* every replica in sync, a clean close, each identical to the log */
static void
close_identical(struct pmrep_mirror **m)
{
	func_mirror_wait_in_sync(*m, NT);
	close_mirror(m);
	for (unsigned i = 0; i < NT; i++)
		func_assert_replica_equals(local, path[i]);
}

static void
add_under_a_quorum_is_recorded_before_the_joiner_counts(void **state)
{
	(void)state;
	serve_set(7);
	struct pmrep_mirror *m = mirror(3, 1);
	func_mirror_wait_in_sync(m, 2);
	for (int i = 0; i < 16; i++)
		append(m, 0);
	expect_members(path[0], 2, 1);
	expect_members(lpath, 2, 1);
	unsigned idx = 99;
	assert_int_equal(pmrep_mirror_add_replica(m, func_addr(), tg[2].port,
			NULL, 5000 * func_slow(), &idx), 0);
	assert_int_equal(idx, 2);
	/* recorded on both in-sync replicas (and the log) when the call
	 * returned: n - k + 1 is 3 from now on */
	expect_members(path[0], 3, 1);
	expect_members(path[1], 3, 1);
	expect_members(lpath, 3, 1);
	struct pmrep_replica_membership mb;
	assert_int_equal(pmrep_mirror_get_membership(m, &mb), 0);
	assert_int_equal(mb.set_size, 3);
	assert_int_equal(mb.quorum, 1);
	unsigned count;
	assert_int_equal(pmrep_mirror_get_replica_count(m, &count), 0);
	assert_int_equal(count, 3);
	/* persists go on while it joins */
	for (int i = 0; i < 16; i++)
		append(m, 0);
	wait_in_sync(m, 2);
	assert_true(saw_event(m, 2, PMREP_REPLICA_IN_SYNC));
	expect_members(path[2], 3, 1);	/* its COMMIT recorded it */
	for (int i = 0; i < 8; i++)
		append(m, 0);
	close_identical(&m);
}

static void
a_joiner_is_required_by_all_only_once_in_sync(void **state)
{
	(void)state;
	serve_set(3);
	struct pmrep_mirror *m = mirror(1, 0);	/* "all" of replica 0 */
	append(m, 0);
	/* replica 1 does not answer: it joins, failing, and the persists
	 * go on with replica 0 alone */
	func_child_freeze(&tg[1]);
	unsigned idx;
	assert_int_equal(pmrep_mirror_add_replica(m, func_addr(), tg[1].port,
			NULL, 5000 * func_slow(), &idx), 0);
	assert_int_equal(idx, 1);
	/* under "all" with one joining, the quorum recorded is the count
	 * required (1 of 2): a promoted joiner must fence the others */
	expect_members(path[0], 2, 1);
	for (int i = 0; i < 8; i++)
		append(m, 0);
	assert_int_not_equal(state_of(m, 1), PMREP_REPLICA_IN_SYNC);
	/* the only replica that is not joining stays */
	assert_int_equal(pmrep_mirror_remove_replica(m, 0, 1000), PMREP_E_INVAL);
	func_child_thaw(&tg[1]);
	/* persists go on while it resyncs and when it is handed over: a
	 * step posted before its first IN_SYNC needs replica 0 alone */
	long long until0 = func_now_ms() + 20000LL * func_slow();
	while (state_of(m, 1) != PMREP_REPLICA_IN_SYNC) {
		append(m, 0);
		assert_true(func_now_ms() < until0);
	}
	/* its COMMIT came while it joined: 1 of 2 there too, and it stays
	 * so -- more fencing than "all" needs, never less -- until the
	 * next change or attach records "all" of 2 */
	expect_members(path[1], 2, 1);
	append(m, 0);
	/* a replica now: "all" requires it */
	func_child_kill(&tg[1], SIGKILL);
	long long until = func_now_ms() + 10000LL * func_slow();
	int ret;
	do {
		unsigned k = next_rec % (SIZE / REC);
		ret = pmrep_mirror_persist(m, (size_t)k * REC, REC, 1000 * func_slow());
		assert_true(func_now_ms() < until);
	} while (ret == 0);
	assert_true(ret == PMREP_E_CONN_LOST || ret == PMREP_E_TIMEOUT);
	(void) pmrep_mirror_delete(&m);
}

static void
remove_leaves_it_unmarked_and_frees_its_index(void **state)
{
	(void)state;
	serve_set(7);
	struct pmrep_mirror *m = mirror(7, 2);
	func_mirror_wait_in_sync(m, 3);
	for (int i = 0; i < 8; i++)
		append(m, 0);
	func_mirror_wait_in_sync(m, 3);
	assert_int_equal(pmrep_mirror_remove_replica(m, 1, 5000 * func_slow()), 0);
	assert_int_equal(state_of(m, 1), PMREP_REPLICA_REMOVED);
	assert_true(saw_event(m, 1, PMREP_REPLICA_REMOVED));
	/* told it left (a promotion neither counts nor promotes it), not
	 * marked consistent: the set goes on without it */
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path[1], &info), 0);
	assert_false(info.flags & PMREP_REPLICA_F_CONSISTENT);
	assert_true(info.flags & PMREP_REPLICA_F_REMOVED);
	func_assert_replica_equals(local, path[1]);	/* as of its removal */
	expect_members(path[0], 2, 2);
	expect_members(path[2], 2, 2);
	expect_members(path[1], 3, 2);
	/* refusals: removed already; what would leave fewer than k */
	assert_int_equal(pmrep_mirror_remove_replica(m, 1, 1000), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_remove_replica(m, 7, 1000), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_remove_replica(m, 0, 1000), PMREP_E_INVAL);
	for (int i = 0; i < 8; i++)
		append(m, 0);
	/* its index is given again: replica 1 back, compared by digests */
	unsigned idx;
	assert_int_equal(pmrep_mirror_add_replica(m, func_addr(), tg[1].port,
			NULL, 5000 * func_slow(), &idx), 0);
	assert_int_equal(idx, 1);
	wait_in_sync(m, 1);
	expect_members(path[1], 3, 2);
	assert_int_equal(pmrep_replica_read_info(path[1], &info), 0);
	assert_false(info.flags & PMREP_REPLICA_F_REMOVED);	/* its COMMIT */
	append(m, 0);
	close_identical(&m);
}

static void
set_quorum_refuses_what_the_replicas_in_sync_cannot_carry(void **state)
{
	(void)state;
	serve_set(3);
	struct pmrep_mirror *m = mirror(3, 0);
	func_mirror_wait_in_sync(m, 2);
	append(m, 0);
	assert_int_equal(pmrep_mirror_set_quorum(m, 3, 1000), PMREP_E_INVAL);
	/* "all" -> 1 of 2 raises the fencing count (1 -> 2): recorded on
	 * both before a persist completes on one */
	assert_int_equal(pmrep_mirror_set_quorum(m, 1, 5000 * func_slow()), 0);
	expect_members(path[0], 2, 1);
	expect_members(path[1], 2, 1);
	/* replica 1 lost: quorum 1 carries on, "all" cannot be asked for */
	func_child_kill(&tg[1], SIGKILL);
	long long until = func_now_ms() + 10000LL * func_slow();
	while (state_of(m, 1) == PMREP_REPLICA_IN_SYNC) {
		append(m, 0);
		assert_true(func_now_ms() < until);
	}
	append(m, 0);
	/* it committed an attach and cannot be told it leaves: not removed
	 * (a promotion could count it, or promote it) */
	assert_int_equal(pmrep_mirror_remove_replica(m, 1, 1000), PMREP_E_STATE);
	assert_int_equal(pmrep_mirror_set_quorum(m, 0, 1000), PMREP_E_STATE);
	expect_members(path[0], 2, 1);	/* nothing changed */
	struct pmrep_replica_membership mb;
	assert_int_equal(pmrep_mirror_get_membership(m, &mb), 0);
	assert_int_equal(mb.quorum, 1);
	append(m, 0);
	(void) pmrep_mirror_delete(&m);
}

static void
promote_fences_the_membership_the_headers_record(void **state)
{
	(void)state;
	serve_set(7);
	/* the primary starts under "all" (n - k + 1 = 1) and lowers the
	 * quorum to 1 at run time (3): its caller remembers "all" */
	struct pmrep_mirror *m = mirror(7, 0);
	func_mirror_wait_in_sync(m, 3);
	append(m, 0);
	assert_int_equal(pmrep_mirror_set_quorum(m, 1, 5000 * func_slow()), 0);
	for (int i = 0; i < 8; i++)
		append(m, 0);
	func_mirror_wait_in_sync(m, 3);
	/* the primary and replicas 0 and 2 die; replica 1 is reachable */
	func_child_kill(&tg[0], SIGKILL);
	func_child_kill(&tg[2], SIGKILL);
	(void) pmrep_mirror_delete(&m);
	struct pmrep_pmem *log = NULL;
	assert_int_equal(pmrep_log_open(path[0], 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	struct pmrep_mirror_cfg *c = mcfg(2 | 4, 0);
	struct pmrep_promote_result res;
	/* "all" of 3 as the caller says would need this node alone; the
	 * headers say 1 of 3: 3 to fence, 2 reachable */
	/* (replica 1, closed cleanly, also holds a position above this
	 * killed one's: refused for either reason; the count is the point) */
	int pr = pmrep_mirror_promote(log, c, 3, 0, PMREP_PROMOTE_DRY_RUN, &res);
	assert_true(pr == PMREP_E_UNREACHABLE || pr == PMREP_E_STATE);
	assert_int_equal(res.needed, 3);
	assert_int_equal(res.set_size, 3);
	assert_int_equal(res.set_quorum, 1);
	assert_int_equal(res.reached, 1);
	assert_int_equal(res.generation, 0);
	struct pmrep_replica_info info;
	assert_int_equal(pmrep_replica_read_info(path[0], &info), 0);
	assert_int_equal(info.generation, 1);
	/* with replica 2 back it could fence enough; it is still refused
	 * for the copy replica 1 holds: the clean close recorded its
	 * position (complete as of the newest step), above this killed
	 * node's (PROTOCOL.md "Position") */
	serve(2);
	pmrep_mirror_cfg_delete(&c);
	c = mcfg(2 | 4, 0);
	assert_int_equal(pmrep_mirror_promote(log, c, 3, 0, PMREP_PROMOTE_DRY_RUN,
			&res), PMREP_E_STATE);
	assert_int_equal(res.needed, 3);
	assert_int_equal(res.reached, 2);
	assert_int_equal(res.more_current, 0);	/* the cfg's first: replica 1 */
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&log), 0);
}

static void
a_removed_replica_is_neither_counted_nor_promoted(void **state)
{
	(void)state;
	serve_set(7);
	/* 2 of 3; replica 2 leaves; then 1 of the 2 left: the primary may
	 * complete a persist on replica 1 alone */
	struct pmrep_mirror *m = mirror(7, 2);
	func_mirror_wait_in_sync(m, 3);
	append(m, 0);
	assert_int_equal(pmrep_mirror_remove_replica(m, 2, 5000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_set_quorum(m, 1, 5000 * func_slow()), 0);
	for (int i = 0; i < 4; i++)
		append(m, 0);
	func_child_kill(&tg[0], SIGKILL);
	(void) pmrep_mirror_delete(&m);
	/* promote replica 0 reaching the removed replica 2 only: it must
	 * not stand in for replica 1 */
	struct pmrep_pmem *log = NULL;
	assert_int_equal(pmrep_log_open(path[0], 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	func_child_freeze(&tg[1]);
	struct pmrep_mirror_cfg *c = mcfg(2 | 4, 0);
	struct pmrep_promote_result res;
	assert_int_equal(pmrep_mirror_promote(log, c, 0, 0, PMREP_PROMOTE_DRY_RUN,
			&res), PMREP_E_UNREACHABLE);
	assert_int_equal(res.needed, 2);
	assert_int_equal(res.reached, 0);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	pmrep_mirror_cfg_delete(&c);
	func_child_thaw(&tg[1]);
	/* and the removed replica is not promoted */
	func_child_kill(&tg[2], SIGTERM);
	assert_int_equal(pmrep_log_open(path[2], 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	c = mcfg(2, 0);
	assert_int_equal(pmrep_mirror_promote(log, c, 0, 0, PMREP_PROMOTE_DRY_RUN,
			&res), PMREP_E_STATE);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	pmrep_mirror_cfg_delete(&c);
}

static void
a_restart_on_fewer_replicas_is_refused_and_an_added_one_compared(void **state)
{
	(void)state;
	serve_set(7);
	/* an earlier mirror of this log and record had three replicas and
	 * closed cleanly: its slot 2 names replica 2, and the log records
	 * "all" of 3 */
	struct pmrep_mirror *m = mirror(7, 0);
	func_mirror_wait_in_sync(m, 3);
	append(m, 0);
	close_mirror(&m);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	uint8_t h0[4096], h1[4096];
	read_head(lpath, h0, sizeof(h0));
	/* this one names two: replica 2 would keep "all" of 3 (it could be
	 * promoted alone while this mirror completes on the others) --
	 * refused, nothing written */
	assert_int_equal(pmrep_log_open(lpath, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&local), 0);
	base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(3, 1);
	assert_int_equal(pmrep_mirror_new(local, c, &m), PMREP_E_STATE);
	read_head(lpath, h1, sizeof(h1));
	assert_memory_equal(h0, h1, sizeof(h0));
	/* a raised generation: the caller has seen to replica 2 */
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, 2), 0);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	pmrep_mirror_cfg_delete(&c);
	func_mirror_wait_in_sync(m, 2);
	for (int i = 0; i < 8; i++)
		append(m, 0);
	/* replica 2 added: slot 2, whose record (the earlier mirror's)
	 * does not cover it -- compared in full */
	unsigned idx;
	assert_int_equal(pmrep_mirror_add_replica(m, func_addr(), tg[2].port,
			NULL, 5000 * func_slow(), &idx), 0);
	assert_int_equal(idx, 2);
	wait_in_sync(m, 2);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 2, &st), 0);
	assert_int_equal(st.resync_compared, SIZE);
	close_mirror(&m);
	func_assert_replica_equals(local, path[2]);
}

static void
a_recorded_change_keeps_the_next_attach_incremental(void **state)
{
	(void)state;
	serve_set(3);
	struct pmrep_mirror *m = mirror(3, 0);
	func_mirror_wait_in_sync(m, 2);
	append(m, 0);
	assert_int_equal(pmrep_mirror_set_quorum(m, 1, 5000 * func_slow()), 0);
	append(m, 0);
	close_mirror(&m);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	/* the record knows the header sequence MEMBERS left: incremental,
	 * nothing compared */
	m = mirror(3, 1);
	func_mirror_wait_in_sync(m, 2);
	for (unsigned i = 0; i < 2; i++) {
		struct pmrep_replica_status st;
		assert_int_equal(pmrep_mirror_get_replica_status(m, i, &st), 0);
		assert_int_equal(st.resync_compared, 0);
	}
	close_mirror(&m);
}

static void
a_restart_with_a_lower_quorum_records_it_before_acknowledging(void **state)
{
	(void)state;
	serve_set(3);
	struct pmrep_mirror *m = mirror(3, 0);	/* "all" of 2 */
	func_mirror_wait_in_sync(m, 2);
	append(m, 0);
	close_mirror(&m);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	expect_members(lpath, 2, 0);
	/* the application restarts with quorum 1 of 2 while replica 1 does
	 * not answer: replica 1 holds "all" (n - k + 1 = 1), so a persist
	 * on replica 0 alone must wait until both recorded 1 of 2 */
	func_child_freeze(&tg[1]);
	assert_int_equal(pmrep_log_open(lpath, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&local), 0);
	base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(3, 1);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 3000), 0);
	assert_int_equal(pmrep_mirror_new(local, c, &m), PMREP_E_TIMEOUT);
	expect_members(lpath, 2, 0);	/* not recorded: nothing acknowledged */
	expect_members(path[0], 2, 1);	/* its COMMIT did */
	func_child_thaw(&tg[1]);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 20000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	pmrep_mirror_cfg_delete(&c);
	expect_members(path[1], 2, 1);
	expect_members(lpath, 2, 1);
	append(m, 0);
	close_mirror(&m);
}

static void
a_replica_that_never_joins_is_removed_and_a_second_name_refused(void **state)
{
	(void)state;
	serve_set(3);
	struct pmrep_mirror *m = mirror(3, 1);
	func_mirror_wait_in_sync(m, 2);
	append(m, 0);
	/* a port nobody listens on: it joins, fails, and holds nothing of
	 * the set -- removed as it is, the membership as before */
	struct func_child gone = { 0 };
	serve(2);
	gone = tg[2];
	func_child_kill(&tg[2], SIGKILL);
	unsigned idx;
	assert_int_equal(pmrep_mirror_add_replica(m, func_addr(), gone.port,
			NULL, 5000 * func_slow(), &idx), 0);
	expect_members(path[0], 3, 1);
	append(m, 0);
	assert_int_not_equal(state_of(m, idx), PMREP_REPLICA_IN_SYNC);
	assert_int_equal(pmrep_mirror_remove_replica(m, idx, 5000 * func_slow()), 0);
	expect_members(path[0], 2, 1);
	/* replica 0 again, by its path's basename: the same file under a
	 * second slot is refused at its attach (it would fence the first)
	 * and can be removed; replica 0 goes on */
	assert_int_equal(pmrep_mirror_add_replica(m, func_addr(), tg[0].port,
			"r0", 5000 * func_slow(), &idx), 0);
	long long until = func_now_ms() + 10000LL * func_slow();
	struct pmrep_replica_status st;
	do {
		append(m, 0);
		assert_int_equal(pmrep_mirror_get_replica_status(m, idx, &st), 0);
		assert_true(func_now_ms() < until);
	} while (st.last_error != PMREP_E_INVAL);
	assert_int_not_equal(state_of(m, 0), PMREP_REPLICA_FAILED);
	assert_int_equal(pmrep_mirror_remove_replica(m, idx, 5000 * func_slow()), 0);
	append(m, 0);
	func_mirror_wait_in_sync(m, 2);
	close_mirror(&m);
	func_assert_replica_equals(local, path[0]);
	func_assert_replica_equals(local, path[1]);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-members-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(lpath, sizeof(lpath), "%s/log", dir);
	for (unsigned i = 0; i < NT; i++)
		snprintf(path[i], sizeof(path[i]), "%s/r%u", dir, i);
	snprintf(keyfile, sizeof(keyfile), "%s/key", dir);
	assert_int_equal(pmrep_key_write_file(keyfile, 0, PMREP_KEY_GOOD), 0);
	uint32_t id;
	assert_int_equal(pmrep_key_read_file_ex(keyfile, 0, key, sizeof(key),
			&key_len, &id), 0);
	next_rec = 0;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	func_child_kill_all();
	if (local != NULL)
		(void) pmrep_pmem_close(&local);
	return func_rm_rf(dir);
}

int
main(int argc, char *argv[])
{
	func_child_main(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(add_under_a_quorum_is_recorded_before_the_joiner_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(a_joiner_is_required_by_all_only_once_in_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(remove_leaves_it_unmarked_and_frees_its_index, setup, teardown),
		cmocka_unit_test_setup_teardown(set_quorum_refuses_what_the_replicas_in_sync_cannot_carry, setup, teardown),
		cmocka_unit_test_setup_teardown(promote_fences_the_membership_the_headers_record, setup, teardown),
		cmocka_unit_test_setup_teardown(a_removed_replica_is_neither_counted_nor_promoted, setup, teardown),
		cmocka_unit_test_setup_teardown(a_restart_on_fewer_replicas_is_refused_and_an_added_one_compared, setup, teardown),
		cmocka_unit_test_setup_teardown(a_recorded_change_keeps_the_next_attach_incremental, setup, teardown),
		cmocka_unit_test_setup_teardown(a_restart_with_a_lower_quorum_records_it_before_acknowledging, setup, teardown),
		cmocka_unit_test_setup_teardown(a_replica_that_never_joins_is_removed_and_a_second_name_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
