/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_members.c -- the mirror's membership at run time (docs/PROTOCOL.md
 * "Membership"): add and remove a replica, change the quorum. A change is
 * recorded on the in-sync replicas (MEMBERS) before it takes effect, so that
 * a promotion, which fences the largest n - k + 1 the headers it reads
 * record, always fences enough of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "mirror_int.h"

/* the fencing count of a membership: n - k + 1 (k 0: all, 1) */
static unsigned
members_need(const struct repl_members *mb)
{
	unsigned k = mb->set_quorum ? mb->set_quorum : mb->set_size;
	return mb->set_size - k + 1;
}

/*
 * The membership the replicas record, with slot `add` taken by a joining
 * replica (-1: none), slot `drop` removed (-1: none), and quorum `q` (-1:
 * the mirror's). Under "all" with replicas joining, the quorum recorded is
 * the count of replicas the policy requires -- not 0: the old primary may
 * complete a persist without a joining replica, so a joining replica
 * promoted must fence the others (m->lock held or the data path).
 */
static struct repl_members
members_of(const struct pmrep_mirror *m, int add, int drop, int q)
{
	unsigned size = 0, required = 0, joining = 0;
	for (unsigned i = 0; i < PMREP_MIRROR_MAX_REPLICAS; i++) {
		bool in = i < m->n && !m->r[i].removed;
		bool join = in && m->r[i].joining;
		if ((int)i == drop)
			in = join = false;
		if ((int)i == add)
			in = join = true;
		size += in;
		joining += join;
		required += in && !join;
	}
	unsigned quorum = q >= 0 ? (unsigned)q : m->cfg.quorum;
	if (quorum == 0 && joining > 0)
		quorum = required;
	return (struct repl_members){ .set_size = size, .set_quorum = quorum };
}

void
mirror_membership(const struct pmrep_mirror *m, struct repl_members *mb)
{
	*mb = members_of(m, -1, -1, -1);
	/* a promotion's fencing records the old set's membership: its own
	 * cfg (the set less this node, maybe "all") could say less, and the
	 * fenced replicas keep what it records until the new primary's
	 * mirror attaches */
	if (m->cfg.fence_only && m->cfg.fence_set_size != 0) {
		mb->set_size = m->cfg.fence_set_size;
		mb->set_quorum = m->cfg.fence_set_quorum;
	}
}

/* members_of under the mirror's lock (the recovery threads change the
 * replicas' joining and state) */
static struct repl_members
members_locked(struct pmrep_mirror *m, int add, int drop, int q)
{
	mirror_lock(m);
	struct repl_members mb = members_of(m, add, drop, q);
	mirror_unlock(m);
	return mb;
}

bool
mirror_slot_taken(const struct replica *r, const uint8_t id[PMREP_UUID_SIZE])
{
	const struct pmrep_mirror *m = r->m;
	if (replica_uuid_is_nil(id))
		return false;
	for (unsigned i = 0; i < m->n; i++) {
		if (i == r->idx || m->r[i].removed || !m->r[i].committed ||
				memcmp(mstate_rec_id(m->state, i), id,
					PMREP_UUID_SIZE) != 0)
			continue;
		char hex[2 * PMREP_UUID_SIZE + 1];
		PMREP_LOG_ERR("replica %u (%s:%s) is replica %u's file (replica id %s) under another address or name: not attached",
				r->idx, r->addr, r->port, i, repl_uuid_hex(id, hex));
		return true;
	}
	return false;
}

/* one MEMBERS exchange with an in-sync replica, nothing in flight */
static int
members_send(struct replica *r, const struct repl_members *mb,
		long long deadline)
{
	struct pmrep_mirror *m = r->m;
	struct repl_msg msg = { .type = REPL_MSG_MEMBERS,
		.seq = mirror_next_seq(m), .u.members = *mb };
	struct repl_msg reply;
	/* the record first: the header sequence the update will have (as
	 * for CLOSE), so that the next attach still finds the replica the
	 * record covers; a lost reply leaves it one ahead -- a full
	 * comparison, never a trusted stale copy */
	mirror_lock(m);
	int ret = mstate_set_rec(m->state, r->idx, mstate_rec_id(m->state, r->idx),
			mstate_rec_seq(m->state, r->idx) + 1);
	mirror_unlock(m);
	if (ret == 0)
		ret = repl_chan_send(&r->ch, &msg);
	if (ret == 0)
		ret = replica_wait_msg(r, deadline, &reply);
	if (ret == 0 && (reply.type != REPL_MSG_MEMBERS_REPLY ||
			reply.seq != msg.seq))
		ret = PMREP_E_MALFORMED;
	if (ret == 0 && reply.status != REPL_ST_OK)
		ret = repl_status_to_err(reply.status);
	if (ret) {
		PMREP_LOG_ERR("replica %u (%s:%s): the membership (%u replicas, quorum %u) was not recorded: %s",
				r->idx, r->addr, r->port, mb->set_size,
				mb->set_quorum, pmrep_err_to_str(ret));
		/* it does not hold what the others do: out of sync until its
		 * next attach records the membership of then */
		replica_fail(r, ret, 0, 0);
	}
	return ret;
}

static bool
data_in_sync(const struct replica *r)
{
	return !r->removed && r->state == PMREP_REPLICA_IN_SYNC &&
		atomic_load(&r->owner) == OWN_DATA;
}

/*
 * record `next` on every in-sync replica but slot `skip` (-1: none), and in
 * the mirror's log. When it raises the fencing count, the replicas that
 * record it must be at least the current membership's k: a promotion that
 * fences n - k + 1 of them then reads it from one at least. Otherwise it
 * is recorded where it can be (a promotion reading the old one fences
 * more, not fewer). 0, or the error with the old membership restored.
 */
static int
members_change(struct pmrep_mirror *m, struct repl_members next, int skip,
		long long deadline)
{
	/* nothing may complete under either membership while it changes:
	 * what is queued and in flight first */
	mirror_pipe_drain(m, deadline);
	if (!mirror_pipe_idle(m)) {
		PMREP_LOG_ERR("mirror: membership unchanged: the persists in flight were not done in time");
		return PMREP_E_TIMEOUT;
	}
	struct repl_members old = members_locked(m, -1, -1, -1);
	bool grows = members_need(&next) > members_need(&old);
	unsigned k_old = old.set_quorum ? old.set_quorum : old.set_size;
	unsigned avail = 0;
	for (unsigned i = 0; i < m->n; i++)
		avail += (int)i != skip && data_in_sync(&m->r[i]);
	if (grows && avail < k_old) {
		PMREP_LOG_ERR("mirror: membership unchanged: %u replicas in sync, the change raises the fencing count to %u and must be recorded on %u first",
				avail, members_need(&next), k_old);
		return PMREP_E_STATE;
	}
	uint32_t took = 0;
	unsigned n_took = 0;
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if ((int)i == skip || !data_in_sync(r))
			continue;
		if (members_send(r, &next, deadline) == 0) {
			took |= 1u << i;
			n_took++;
		}
	}
	if (grows && n_took < k_old) {
		PMREP_LOG_ERR("mirror: membership unchanged: %u replicas recorded it, %u needed; the old one is recorded again",
				n_took, k_old);
		for (unsigned i = 0; i < m->n; i++)
			if ((took & (1u << i)) && data_in_sync(&m->r[i]))
				(void) members_send(&m->r[i], &old,
						repl_deadline(m->cfg.timeout_ms));
		return PMREP_E_CONN_LOST;
	}
	/* the mirror's own log: what a node that was primary says of its
	 * set (a promotion reads the replicas' headers, not this one) */
	(void) mirror_log_members(m, next.set_size, next.set_quorum);
	return 0;
}

int
pmrep_mirror_add_replica(struct pmrep_mirror *m, const char *addr,
		const char *port, const char *name, int timeout_ms,
		unsigned *index)
{
	CHECK_ARG(m);
	CHECK_ARG(addr);
	CHECK_ARG(port);
	int ret = repl_timeout_check(timeout_ms, "pmrep_mirror_add_replica");
	if (ret)
		return ret;
	if (addr[0] == '\0' || port[0] == '\0') {
		PMREP_LOG_ERR("pmrep_mirror_add_replica: empty address or port");
		return PMREP_E_INVAL;
	}
	if (name != NULL && name[0] != '\0' &&
			repl_selector_check(name, "replica name") != 0)
		return PMREP_E_INVAL;
	if (m->cfg.fence_only) {
		PMREP_LOG_ERR("pmrep_mirror_add_replica: not on a promotion's mirror");
		return PMREP_E_INVAL;
	}
	/* one slot per replica: a second one would fence the first at its
	 * COMMIT, and the two would take turns */
	const char *sel = name != NULL ? name : "";
	for (unsigned i = 0; i < m->n; i++) {
		if (m->r[i].removed || strcmp(m->r[i].addr, addr) != 0 ||
				strcmp(m->r[i].port, port) != 0 ||
				strcmp(m->cfg.r[i].selector, sel) != 0)
			continue;
		PMREP_LOG_ERR("pmrep_mirror_add_replica: %s:%s%s%s is replica %u already",
				addr, port, sel[0] ? "/" : "", sel, i);
		return PMREP_E_INVAL;
	}
	unsigned idx = 0;
	while (idx < m->n && !m->r[idx].removed)
		idx++;
	if (idx == PMREP_MIRROR_MAX_REPLICAS) {
		PMREP_LOG_ERR("pmrep_mirror_add_replica: the mirror has %d replicas already",
				PMREP_MIRROR_MAX_REPLICAS);
		return PMREP_E_INVAL;
	}
	ret = members_change(m, members_locked(m, (int)idx, -1, -1), -1,
			repl_deadline(timeout_ms));
	if (ret)
		return ret;

	/* the slot's record: whatever an earlier mirror of this record left
	 * there (a cfg that had more replicas) does not cover this one, and
	 * this mirror kept no out-of-sync set for it -- nil, crash-atomic:
	 * the replica is compared in full */
	static const uint8_t nil[PMREP_UUID_SIZE];
	mirror_lock(m);
	ret = mstate_set_rec(m->state, idx, nil, 0);
	if (ret == 0) {
		struct repl_bitmap *oos = mstate_oos(m->state, idx);
		repl_bitmap_clear_regions(oos, 0, oos->nregions);
	}
	mirror_unlock(m);
	if (ret) {
		PMREP_LOG_ERR("pmrep_mirror_add_replica: slot %u of the record could not be cleared (%s)",
				idx, pmrep_err_to_str(ret));
		struct repl_members back = members_locked(m, -1, -1, -1);
		(void) members_change(m, back, -1, repl_deadline(m->cfg.timeout_ms));
		return ret;
	}

	struct replica *r = &m->r[idx];
	mirror_lock(m);
	bool reuse = idx < m->n;
	memset(r, 0, sizeof(*r));
	ret = mirror_replica_init(m, idx, addr, port);
	if (ret == 0) {
		struct mirror_replica_cfg *rc = &m->cfg.r[idx];
		snprintf(rc->selector, sizeof(rc->selector), "%s",
				name != NULL ? name : "");
		rc->addr = r->addr;
		rc->port = r->port;
		r->joining = true;
		if (!reuse) {
			m->n++;
			m->cfg.n = m->n;
		}
		/* an added replica's first state: FAILED, attaching */
		r->state = PMREP_REPLICA_REMOVED;
		replica_set_state(r, PMREP_REPLICA_FAILED);
	}
	mirror_unlock(m);
	if (ret == 0 && mirror_background(m))
		ret = mirror_recovery_start_one(r);
	if (ret) {
		mirror_lock(m);
		mirror_replica_free(r);
		r->removed = true;
		r->joining = false;
		r->state = PMREP_REPLICA_REMOVED;
		mirror_unlock(m);
		/* the larger membership recorded is on the safe side; put the
		 * old one back where it can be */
		struct repl_members old = members_locked(m, -1, -1, -1);
		(void) members_change(m, old, -1, repl_deadline(m->cfg.timeout_ms));
		return ret;
	}
	PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s) added: joining (%u replicas, quorum %u recorded)",
			idx, addr, port, mirror_set_size(m), m->cfg.quorum);
	if (index != NULL)
		*index = idx;
	return 0;
}

int
pmrep_mirror_remove_replica(struct pmrep_mirror *m, unsigned index,
		int timeout_ms)
{
	CHECK_ARG(m);
	int ret = repl_timeout_check(timeout_ms, "pmrep_mirror_remove_replica");
	if (ret)
		return ret;
	if (index >= m->n || m->r[index].removed) {
		PMREP_LOG_ERR("pmrep_mirror_remove_replica: no replica %u", index);
		return PMREP_E_INVAL;
	}
	if (m->cfg.fence_only) {
		PMREP_LOG_ERR("pmrep_mirror_remove_replica: not on a promotion's mirror");
		return PMREP_E_INVAL;
	}
	/* the replicas that would be left and are not joining: at least
	 * one, and the quorum */
	unsigned left = 0;
	mirror_lock(m);
	for (unsigned i = 0; i < m->n; i++)
		left += i != index && !m->r[i].removed && !m->r[i].joining;
	mirror_unlock(m);
	if (left == 0 || m->cfg.quorum > left) {
		PMREP_LOG_ERR("pmrep_mirror_remove_replica: replica %u is %s",
				index, left == 0 ?
				"the last one that is not joining" :
				"needed by the quorum (lower it first)");
		return PMREP_E_INVAL;
	}
	long long deadline = repl_deadline(timeout_ms);
	struct replica *r = &m->r[index];
	struct repl_members cur = members_locked(m, -1, -1, -1);
	struct repl_members next = members_locked(m, -1, (int)index, -1);
	/*
	 * The replica leaving is told first, while nothing is in flight: its
	 * header gets PMREP_REPLICA_F_REMOVED, and a promotion neither counts
	 * it as fenced nor promotes it (it no longer is one the others'
	 * persists need: counted, it could stand in for one that is). One
	 * that cannot be told -- not in sync, no answer -- is refused: no
	 * count recorded on it stays right once the set changes again.
	 */
	mirror_pipe_drain(m, deadline);
	if (!mirror_pipe_idle(m)) {
		PMREP_LOG_ERR("pmrep_mirror_remove_replica: the persists in flight were not done in time");
		return PMREP_E_TIMEOUT;
	}
	bool told = false;
	if (data_in_sync(r)) {
		struct repl_members out = cur;
		out.removed = true;
		told = members_send(r, &out, deadline) == 0;
	}
	/* a replica that joined and never committed an attach of this
	 * mirror holds nothing of it (a wrong address or name, a target
	 * that never answered): nothing to tell */
	if (!told && r->joining && !r->committed)
		told = true;
	if (!told) {
		PMREP_LOG_ERR("pmrep_mirror_remove_replica: replica %u (%s:%s) is not in sync and cannot be told it leaves the set: a promotion could count it as fenced, or promote it, while this mirror goes on without it. Let it resync first; if it is gone for good, delete this mirror and create one without it at a raised generation (pmrep_mirror_cfg_set_generation; kv-mirror --raise-generation), once its file cannot be promoted any more (docs/PROTOCOL.md \"Membership\")",
				index, r->addr, r->port);
		return PMREP_E_STATE;
	}
	ret = members_change(m, next, (int)index, deadline);
	if (ret) {
		/* back in the set (its flag cleared), or failed: its next
		 * attach clears it */
		if (data_in_sync(r))
			(void) members_send(r, &cur, repl_deadline(m->cfg.timeout_ms));
		return ret;
	}
	/* its recovery first: from here on only this thread drives it */
	mirror_recovery_stop_one(r);
	/* no CLOSE: a consistent mark says "a complete copy of the set's
	 * data of this generation", and the set goes on without it (a
	 * recover from it, or a check of the mark, would take an old copy
	 * for the current one). Its header stays as its COMMIT left it */
	mirror_lock(m);
	mirror_replica_free(r);
	mirror_unlock(m);
	/* its slot of the record: no replica (crash-atomic), nothing out
	 * of sync -- whoever takes the slot is compared in full */
	static const uint8_t nil[PMREP_UUID_SIZE];
	mirror_lock(m);
	ret = mstate_set_rec(m->state, index, nil, 0);
	if (ret == 0) {
		repl_bitmap_clear_regions(r->oos, 0, r->oos->nregions);
		ret = mstate_oos_persist(m->state, index, 0, m->size);
	}
	mirror_unlock(m);
	if (ret)
		PMREP_LOG_WARN("replica %u: its slot of the record could not be cleared (%s); the slot's next replica is resynced from what it holds",
				index, pmrep_err_to_str(ret));
	mirror_lock(m);
	r->removed = true;
	r->joining = false;
	r->fenced = false;
	r->unknown = true;
	r->last_error = 0;
	atomic_store(&r->owner, OWN_RECOVERY);
	replica_set_state(r, PMREP_REPLICA_REMOVED);
	mirror_unlock(m);
	PMREP_LOG(PMREP_LOG_NOTICE, "replica %u removed (%u replicas left, quorum %u recorded)",
			index, mirror_set_size(m), m->cfg.quorum);
	return 0;
}

int
pmrep_mirror_set_quorum(struct pmrep_mirror *m, unsigned k, int timeout_ms)
{
	CHECK_ARG(m);
	int ret = repl_timeout_check(timeout_ms, "pmrep_mirror_set_quorum");
	if (ret)
		return ret;
	unsigned n = mirror_set_size(m);
	if (k > n || m->cfg.fence_only) {
		PMREP_LOG_ERR("pmrep_mirror_set_quorum: a quorum of %u with %u replicas%s",
				k, n, m->cfg.fence_only ? " (a promotion's mirror)" : "");
		return PMREP_E_INVAL;
	}
	unsigned old_k = m->cfg.quorum;
	mirror_lock(m);
	m->cfg.quorum = k;
	unsigned want = mirror_required(m);
	m->cfg.quorum = old_k;
	mirror_unlock(m);
	unsigned in_sync = mirror_in_sync_count(m);
	if (in_sync < want) {
		PMREP_LOG_ERR("pmrep_mirror_set_quorum: %u replicas in sync, the new policy requires %u",
				in_sync, want);
		return PMREP_E_STATE;
	}
	ret = members_change(m, members_locked(m, -1, -1, (int)k), -1,
			repl_deadline(timeout_ms));
	if (ret)
		return ret;
	mirror_lock(m);
	m->cfg.quorum = k;
	mirror_unlock(m);
	PMREP_LOG(PMREP_LOG_NOTICE, "mirror: quorum %u (was %u; 0: all) of %u replicas",
			k, old_k, n);
	return 0;
}

int
pmrep_mirror_get_membership(const struct pmrep_mirror *m,
		struct pmrep_replica_membership *mb)
{
	CHECK_ARG(m);
	CHECK_ARG(mb);
	struct pmrep_mirror *mm = (struct pmrep_mirror *)m;
	struct repl_members cur;
	mirror_lock(mm);
	mirror_membership(m, &cur);
	mirror_unlock(mm);
	memset(mb, 0, sizeof(*mb));
	mb->set_size = cur.set_size;
	mb->quorum = cur.set_quorum;
	return 0;
}
