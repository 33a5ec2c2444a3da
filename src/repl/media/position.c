/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * position.c -- which copy is newest (docs/PROTOCOL.md "Position", "The
 * decision"): what a copy vouches for, what it may hold, how two
 * positions compare, and the one decision compare, promote, recover and
 * the mirror's attach share. Pure functions; the positions come from
 * headers (files) and ACCEPTs (targets).
 */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "position.h"

/* a point of a history: the steps of writer (gen, owner) through psn */
struct point {
	uint64_t gen, owner, psn;
};

#define CANNOT_TELL 2

/* -1 / 0 / 1, or CANNOT_TELL: two writers of one generation (a
 * hand-over at the same generation): each writer's epochs are its own
 * record's counter, so the two histories do not order -- only a raised
 * generation (a promotion's fence) orders one writer after another */
static int
point_cmp(const struct point *a, const struct point *b)
{
	if (a->gen != b->gen)
		return a->gen > b->gen ? 1 : -1;
	if (a->owner != b->owner && a->owner != 0 && b->owner != 0)
		return CANNOT_TELL;
	if (a->psn != b->psn)
		return a->psn > b->psn ? 1 : -1;
	return 0;
}

static struct point
pos_point(const struct pmrep_replica_position *p)
{
	return (struct point){ p->generation, p->owner, p->seq };
}

/* the end of the run that claimed it: every step that run can give */
static struct point
run_end(const struct pmrep_replica_position *p)
{
	return (struct point){ p->run_generation, p->run_owner,
		REPL_PSN_RUN_END(p->run_floor) };
}

static bool
reached_run(const struct pmrep_replica_position *p)
{
	return p->run_floor != 0 && p->generation == p->run_generation &&
		p->owner == p->run_owner && p->seq >= p->run_floor;
}

/* what the copy is complete through; false: nothing (it vouches for no
 * history: a resync in progress, or an untracked run not closed) */
static bool
vouch(const struct pmrep_replica_position *p, struct point *v)
{
	if (p->flags & PMREP_POSITION_F_INCOMPLETE)
		return false;	/* a catch-up's copy in progress */
	if (p->flags & PMREP_POSITION_F_RUN_CLOSED) {
		*v = pos_point(p);
		return true;
	}
	if (p->flags & PMREP_POSITION_F_PRIMARY) {
		/* the writer's own log: every step of its run is here */
		*v = run_end(p);
		return true;
	}
	if ((p->flags & PMREP_POSITION_F_TRACKED) && reached_run(p)) {
		*v = pos_point(p);
		return true;
	}
	if (p->run_generation == 0 && (p->flags & PMREP_POSITION_F_CONSISTENT)) {
		/* a header of before runs were recorded: its clean close */
		*v = pos_point(p);
		return true;
	}
	return false;
}

static bool
same_run(const struct pmrep_replica_position *a,
		const struct pmrep_replica_position *b)
{
	return a->run_generation != 0 && a->run_generation == b->run_generation &&
		a->run_owner == b->run_owner && a->run_floor == b->run_floor;
}

/*
 * the most the copy may hold of a completed persist; `others` (n of them,
 * may include p): a copy whose run closed cleanly says where that run
 * ended, for every copy of that run (a clean close is the run's last
 * step: the mirror sends CLOSE, with its newest step, once nothing is in
 * flight)
 */
static struct point
may_hold(const struct pmrep_replica_position *p,
		const struct pmrep_replica_position *others, unsigned n)
{
	/* a catch-up copies a complete copy: nothing it holds beyond its
	 * position is missing from that one */
	if (p->flags & (PMREP_POSITION_F_RUN_CLOSED | PMREP_POSITION_F_INCOMPLETE))
		return pos_point(p);
	/* a tracked run's completed steps are recorded on the replicas
	 * that confirmed them, each of which reached the run: this copy
	 * (a replica being resynced, or the writer's own log) holds no
	 * completed one beyond its position that those lack */
	if (p->flags & PMREP_POSITION_F_TRACKED)
		return pos_point(p);
	if (p->run_generation == 0)
		return pos_point(p);
	struct point m = run_end(p);
	for (unsigned i = 0; i < n; i++) {
		if (!(others[i].flags & PMREP_POSITION_F_RUN_CLOSED) ||
				!same_run(&others[i], p))
			continue;
		/* its run ended there (or, a position below the run's
		 * floor, wrote nothing): no more than that, or its own */
		struct point end = pos_point(&others[i]);
		struct point own = pos_point(p);
		m = point_cmp(&end, &own) > 0 ? end : own;
		break;
	}
	return m;
}

static bool
counts(const struct pmrep_replica_position *p)
{
	return !(p->flags & (PMREP_POSITION_F_FRESH | PMREP_POSITION_F_REMOVED));
}

int
pmrep_position_compare(const struct pmrep_replica_position *a,
		const struct pmrep_replica_position *b)
{
	if (a == NULL || b == NULL) {
		PMREP_LOG_ERR("invalid argument: a position is NULL");
		return PMREP_E_INVAL;
	}
	/* a copy is never more current than itself (a writer's own log
	 * vouches for its whole run, more than the position it may hold of
	 * a completed persist: against another copy that matters, against
	 * itself it does not) */
	if (a == b || memcmp(a, b, sizeof(*a)) == 0)
		return 0;
	struct point va, vb;
	bool ha = vouch(a, &va), hb = vouch(b, &vb);
	const struct pmrep_replica_position both[2] = { *a, *b };
	struct point ma = may_hold(a, both, 2), mb = may_hold(b, both, 2);
	/* a is more current when it vouches for more than b may hold */
	int ab = ha ? point_cmp(&va, &mb) : -1;
	int ba = hb ? point_cmp(&vb, &ma) : -1;
	if (ab == CANNOT_TELL || ba == CANNOT_TELL)
		return PMREP_E_SPLIT_BRAIN;
	if (ab > 0)
		return 1;
	if (ba > 0)
		return -1;
	return 0;
}

/* may every copy's completed persists be in copy i (vouch(i) >= every
 * may_hold)? 1 yes, 0 no, CANNOT_TELL; *who the copy that says no */
static int
covers_all(const struct pmrep_replica_position *pos, unsigned n, unsigned i,
		unsigned *who)
{
	struct point v;
	if (!counts(&pos[i]) || !vouch(&pos[i], &v)) {
		*who = i;
		return 0;
	}
	for (unsigned c = 0; c < n; c++) {
		if (!counts(&pos[c]))
			continue;
		struct point m = may_hold(&pos[c], pos, n);
		int r = point_cmp(&m, &v);
		if (r == CANNOT_TELL || r > 0) {
			*who = c;
			return r == CANNOT_TELL ? CANNOT_TELL : 0;
		}
	}
	return 1;
}

int
pmrep_position_decide(const struct pmrep_replica_position *pos, unsigned n,
		unsigned *best, unsigned *conflict, bool *complete)
{
	if (pos == NULL || best == NULL || n == 0) {
		PMREP_LOG_ERR("invalid argument: no positions to decide among");
		return PMREP_E_INVAL;
	}
	unsigned b = n, who = n, first_no = n;
	bool split = false, any = false;
	struct point vb = { 0, 0, 0 };
	for (unsigned i = 0; i < n; i++) {
		if (complete != NULL)
			complete[i] = false;
		if (!counts(&pos[i]))
			continue;
		any = true;
		unsigned w = n;
		int r = covers_all(pos, n, i, &w);
		if (r == CANNOT_TELL) {
			split = true;
			if (first_no == n)
				first_no = w;
			continue;
		}
		if (r == 0) {
			/* the copy that says no to a copy that vouches */
			struct point v;
			if (first_no == n || (vouch(&pos[i], &v) && w != i))
				first_no = w;
			continue;
		}
		if (complete != NULL)
			complete[i] = true;
		struct point v;
		(void) vouch(&pos[i], &v);
		if (b == n || point_cmp(&v, &vb) == 1) {
			b = i;
			vb = v;
		}
	}
	(void) who;
	if (b != n) {
		*best = b;
		if (conflict != NULL)
			*conflict = n;
		return 0;
	}
	if (conflict != NULL)
		*conflict = first_no;
	if (!any)
		return PMREP_E_STATE;
	return split ? PMREP_E_SPLIT_BRAIN : PMREP_E_STATE;
}

/* the fields both sources have, the flags masked to the position's */
static void
position_fill(struct pmrep_replica_position *pos, uint64_t gen, uint64_t owner,
		uint64_t psn, uint64_t run_gen, uint64_t run_owner, uint64_t floor,
		uint64_t fence, uint32_t flags, bool fresh)
{
	*pos = (struct pmrep_replica_position){ .generation = gen,
		.owner = owner, .seq = psn, .run_generation = run_gen,
		.run_owner = run_owner, .run_floor = floor,
		.fence_generation = fence,
		.flags = (flags & (PMREP_POSITION_F_CONSISTENT |
			PMREP_POSITION_F_REMOVED | PMREP_POSITION_F_TRACKED |
			PMREP_POSITION_F_PRIMARY | PMREP_POSITION_F_RUN_CLOSED |
			PMREP_POSITION_F_INCOMPLETE)) |
			(fresh ? PMREP_POSITION_F_FRESH : 0) };
}

void
repl_position_from_hdr(struct pmrep_replica_position *pos,
		const struct replica_hdr *h, const uint8_t *base)
{
	position_fill(pos, h->pos_gen, h->pos_owner, replica_pos_psn(base, h),
			h->run_gen, h->run_owner, h->claim_floor, h->generation,
			h->flags, replica_uuid_is_nil(h->uuid));
}

void
repl_position_from_accept(struct pmrep_replica_position *pos,
		const struct repl_accept *acc)
{
	position_fill(pos, acc->pos_gen, acc->pos_owner, acc->last_persist_seq,
			acc->run_gen, acc->run_owner, acc->claim_floor,
			acc->generation, acc->hdr_flags,
			(acc->target_flags & REPL_TF_FRESH) ||
			replica_uuid_is_nil(acc->uuid));
}

void
repl_position_str(const struct pmrep_replica_position *p, char *buf,
		size_t len)
{
	snprintf(buf, len, "position generation %llu writer %016llx sequence %llu:%llu; run generation %llu writer %016llx from epoch %llu%s%s%s%s%s",
			(unsigned long long)p->generation,
			(unsigned long long)p->owner,
			(unsigned long long)(p->seq >> REPL_PSN_EPOCH_SHIFT),
			(unsigned long long)(p->seq &
				((1ull << REPL_PSN_EPOCH_SHIFT) - 1)),
			(unsigned long long)p->run_generation,
			(unsigned long long)p->run_owner,
			(unsigned long long)(p->run_floor >> REPL_PSN_EPOCH_SHIFT),
			p->flags & PMREP_POSITION_F_RUN_CLOSED ? ", closed" : "",
			p->flags & PMREP_POSITION_F_TRACKED ? ", tracked" : "",
			p->flags & PMREP_POSITION_F_PRIMARY ? ", a writer's log" : "",
			p->flags & PMREP_POSITION_F_INCOMPLETE ? ", incomplete (a catch-up's copy)" : "",
			p->flags & PMREP_POSITION_F_FRESH ? ", fresh" : "");
}
