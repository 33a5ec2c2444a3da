/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replica_digest.c -- a resync by digests (PROTOCOL.md "Resync by
 * digests"): a replica that holds our replica set but a history our record
 * does not cover (another primary's, an older generation: after a
 * failover, the survivors and the old primary rejoining) is compared with
 * the local mapping region by region, and only the regions whose digests
 * differ stay out of sync to be copied -- not the whole file.
 *
 * While the pass runs, the whole data area counts as a resync chunk in
 * flight: a persist marks what it changes (out of sync, and "redirty"),
 * nothing is posted to the replica, and a region a persist marked after
 * the pass began is never cleared by it. So a region is cleared only when
 * its replica bytes equal local bytes that no persist changed since.
 */
#include <string.h>

#include "common/log.h"
#include "mirror_int.h"
#include "mirror_state.h"

#define DIGEST_BYTES (4ull << 20)

/* one DIGEST round trip for regions [first, first + n) */
static int
digest_round(struct replica *r, size_t first, size_t n, long long deadline,
		struct repl_digest_reply *rep)
{
	struct pmrep_mirror *m = r->m;
	struct repl_msg msg = { .type = REPL_MSG_DIGEST, .seq = mirror_next_seq(m) };
	msg.u.digest.offset = (uint64_t)first * r->oos->region_size;
	msg.u.digest.region = r->oos->region_size;
	msg.u.digest.count = (uint32_t)n;
	int ret = repl_chan_send(&r->ch, &msg);
	if (ret)
		return ret;
	long long step = repl_deadline(m->cfg.timeout_ms);
	if (deadline >= 0 && deadline < step)
		step = deadline;
	struct repl_msg reply;
	ret = replica_wait_msg(r, step, &reply);
	if (ret)
		return ret;
	if (reply.type != REPL_MSG_DIGEST_REPLY || reply.seq != msg.seq) {
		PMREP_LOG_ERR("replica %u: expected DIGEST_REPLY to %llu, got message type %d (sequence %llu)",
				r->idx, (unsigned long long)msg.seq, (int)reply.type,
				(unsigned long long)reply.seq);
		return PMREP_E_MALFORMED;
	}
	if (reply.status != REPL_ST_OK) {
		PMREP_LOG_ERR("replica %u: digest request refused: %s", r->idx,
				repl_status_str(reply.status));
		return repl_status_to_err(reply.status);
	}
	if (reply.u.digest_reply.count != n) {
		PMREP_LOG_ERR("replica %u: DIGEST_REPLY of %u regions, %zu asked",
				r->idx, reply.u.digest_reply.count, n);
		return PMREP_E_MALFORMED;
	}
	*rep = reply.u.digest_reply;
	return 0;
}

int
replica_digest_pass(struct replica *r, long long deadline)
{
	struct pmrep_mirror *m = r->m;
	uint64_t rs = r->oos->region_size;
	mirror_lock(m);
	r->digest = false;
	r->digesting = true;
	repl_bitmap_clear_regions(&r->redirty, 0, r->redirty.nregions);
	r->chunks++;
	r->chunk_lo = 0;
	r->chunk_hi = m->size;
	uint64_t before = repl_bitmap_dirty_bytes(r->oos);
	mirror_unlock(m);
	/* at most DIGEST_BYTES per round trip: the target hashes them in
	 * one progress turn */
	size_t max = (size_t)(DIGEST_BYTES / rs);
	if (max == 0)
		max = 1;
	if (max > REPL_DIGEST_MAX)
		max = REPL_DIGEST_MAX;
	size_t from = 0, compared = 0, equal = 0;
	int ret = 0;
	for (;;) {
		size_t first, n;
		mirror_lock(m);
		bool found = repl_bitmap_next_run(r->oos, from, max, &first, &n);
		bool stop = repl_left_ms(deadline) == 0 || atomic_load(&m->stopping);
		mirror_unlock(m);
		if (!found || first < from || stop)
			break;	/* what is left is copied (or resumed) */
		struct repl_digest_reply rep;
		ret = digest_round(r, first, n, deadline, &rep);
		if (ret)
			break;
		bool same[REPL_DIGEST_MAX];
		for (size_t i = 0; i < n; i++) {
			uint64_t off = (uint64_t)(first + i) * rs;
			uint64_t len = m->size - off < rs ? m->size - off : rs;
			uint8_t d[REPL_DIGEST_SIZE];
			ret = repl_digest(m->base + off, (size_t)len, d);
			if (ret)
				break;
			same[i] = memcmp(d, rep.d[i], REPL_DIGEST_SIZE) == 0;
		}
		if (ret)
			break;
		uint64_t lo = (uint64_t)first * rs, hi = (uint64_t)(first + n) * rs;
		if (hi > m->size)
			hi = m->size;
		mirror_lock(m);
		r->resync_compared += hi - lo;
		for (size_t i = 0; i < n; i++)
			if (same[i] && !repl_bitmap_test(&r->redirty, first + i)) {
				repl_bitmap_clear_regions(r->oos, first + i, 1);
				equal++;
			}
		mirror_unlock(m);
		compared += n;
		/* durable, or a restart compares them again (a failure costs
		 * only that) */
		if (mstate_oos_persist(m->state, r->idx, lo, hi - lo) != 0)
			PMREP_LOG_WARN("replica %u: the record of its digest pass could not be persisted (%s)",
					r->idx, pmrep_err_msg());
		from = first + n;
	}
	mirror_lock(m);
	r->digesting = false;
	r->chunks--;
	r->chunk_lo = r->chunk_hi = 0;
	repl_bitmap_clear_regions(&r->redirty, 0, r->redirty.nregions);
	uint64_t after = repl_bitmap_dirty_bytes(r->oos);
	mirror_unlock(m);
	if (ret) {
		PMREP_LOG_ERR("replica %u (%s:%s): digest pass failed after %zu regions: %s",
				r->idx, r->addr, r->port, compared, pmrep_err_to_str(ret));
		replica_fail(r, ret, 0, 0);
		return ret;
	}
	PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s): digests of %zu regions compared, %zu equal: %llu of %llu bytes out of sync left to copy",
			r->idx, r->addr, r->port, compared, equal,
			(unsigned long long)after, (unsigned long long)before);
	return 0;
}
