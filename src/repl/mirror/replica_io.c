/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replica_io.c -- a replica's messages and persist steps on the wire: post the
 * write and its persist step, take the completions, wait for the pending
 * replicas.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/log.h"
#include "mirror_int.h"
#include "mirror_state.h"

/* ------------------------------------------------------ the persist step */

/* bytes per write request: verbs takes at most 4 GiB - 1 in one */
#define POST_CHUNK (1ull << 30)

struct inflight *
replica_ring_at(struct replica *r, unsigned i)
{
	return &r->ring[(r->r_head + i) % PIPE_RING];
}

/*
 * post the write of [off, off + len) and its persist step as the ring's
 * newest entry: the write (in chunks of at most POST_CHUNK) is flagged
 * PMREP_F_MORE, so that verbs posts it with the flush / the persist
 * message behind one doorbell
 */
static unsigned
ring_cap(const struct replica *r)
{
	return r->method == PMREP_MIRROR_METHOD_GPSPM ? REPL_GPSPM_CREDITS :
		PIPE_RING;
}

/* part: a vector step's range other than its last -- its persist step
 * carries no persist sequence and its flush is held (PMREP_F_MORE) for
 * the next one's doorbell */
static int
post_entry(struct replica *r, uint64_t off, uint64_t len, uint64_t seq,
		bool is_step, bool part, long long deadline)
{
	int ret;
	if (r->r_n >= ring_cap(r))
		return PMREP_E_AGAIN;
	if (len > (uint64_t)(POST_WRS - 1) * POST_CHUNK) {
		PMREP_LOG_ERR("replica %u: a step of %llu bytes is above %llu",
				r->idx, (unsigned long long)len,
				(unsigned long long)(POST_WRS - 1) * POST_CHUNK);
		return PMREP_E_RANGE;
	}
	for (uint64_t done = 0; done < len;) {
		uint64_t n = len - done < POST_CHUNK ? len - done : POST_CHUNK;
		ret = pmrep_write(r->conn, r->rmr, (size_t)(off + done), r->src,
				(size_t)(off + done), (size_t)n,
				PMREP_F_COMPLETION_ON_ERROR | PMREP_F_MORE,
				(void *)CTX_WRITE);
		if (ret)
			return ret;
		done += n;
	}
	struct inflight *e = replica_ring_at(r, r->r_n);
	*e = (struct inflight){ .seq = seq, .off = off, .len = len,
		.deadline = deadline, .is_step = is_step, .part = part,
		.send_slot = CHAN_NSEND };
	if (r->method == PMREP_MIRROR_METHOD_GPSPM) {
		/* a step to an in-sync replica carries its persist sequence
		 * when the mirror records them; a resync's copy never does,
		 * nor a vector's range but its last: the target records the
		 * position once every range before it is durable (it answers
		 * in order) */
		uint64_t psn = is_step && !part && r->m->cfg.persist_seq ?
			r->m->psn_base + seq : 0;
		struct repl_msg m = { .type = REPL_MSG_PERSIST, .seq = seq,
			.u.persist = { .offset = off, .length = len, .psn = psn } };
		ret = repl_chan_send_at(&r->ch, &m, &e->send_slot);
	} else {
		ret = pmrep_flush(r->conn, r->rmr, (size_t)off, (size_t)len,
				PMREP_FLUSH_TYPE_PERSISTENT,
				PMREP_F_COMPLETION_ALWAYS |
				(part ? PMREP_F_MORE : 0), (void *)CTX_FLUSH);
	}
	if (ret)
		return ret;
	r->r_n++;
	return 0;
}

int
replica_post_range(struct replica *r, uint64_t off, uint64_t len,
		uint64_t seq, bool is_step, long long deadline)
{
	return post_entry(r, off, len, seq, is_step, false, deadline);
}

/*
 * a vector step: every range is its own ring entry (its writes and its
 * persist step: at most POST_WRS work requests each, as the queues are
 * sized), all of them `seq`; only the last confirms the step, once it and
 * -- in order on the one QP / channel -- every range before it are durable
 */
int
replica_post_vec(struct replica *r, const struct pmrep_range *v, unsigned n,
		uint64_t seq, bool is_step, bool al, long long deadline)
{
	if (n == 0 || r->r_n + n > ring_cap(r))
		return PMREP_E_AGAIN;
	for (unsigned i = 0; i < n; i++) {
		int ret = post_entry(r, v[i].offset, v[i].length, seq, is_step,
				i + 1 < n, deadline);
		if (ret)
			return ret;
		replica_ring_at(r, r->r_n - 1)->al = al;
	}
	return 0;
}

/* the ring's oldest entry is confirmed */
static void
ring_pop(struct replica *r)
{
	struct inflight *e = replica_ring_at(r, 0);
	uint64_t seq = e->seq;
	/* a vector's range before its last confirms nothing alone */
	bool is_step = e->is_step && !e->part;
	if (e->lagging)
		r->lag_inflight -= e->len;
	r->r_head = (r->r_head + 1) % PIPE_RING;
	r->r_n--;
	if (is_step && r->pos_switch && r->m->cfg.persist_seq) {
		/* the target wrote the header for this step's position (a
		 * new writer's first): the record follows it, so the next
		 * attach stays incremental (a failure only costs a
		 * comparison by digests then) */
		struct mirror_state *st = r->m->state;
		r->pos_switch = false;
		if (mstate_set_rec(st, r->idx, mstate_rec_id(st, r->idx),
				mstate_rec_seq(st, r->idx) + 1) != 0)
			PMREP_LOG_WARN("replica %u: its record could not follow its header's position switch: the next attach compares it by digests",
					r->idx);
	}
	if (is_step)
		mirror_step_ack(r->m, seq, r->idx);
	/* the step waiting for this replica's room (the resync minimum) */
	if (r->m->hold_mask != 0)
		mirror_hold_wake(r);
}

/*
 * take the replica's completions, confirming ring entries oldest first;
 * returns an error when the replica must be failed.
 * A GPSPM persist is a send and the target's reply. CQEs are ordered only
 * within one work queue: the reply (a receive) may be polled before the
 * send completion of the request it answers. An entry is done only when
 * both were seen, in either order (T26): until the send completes, its
 * slot -- and on verbs its send-queue slots, the writes' before it -- are
 * still taken, and the next step must not count them free.
 */
int
replica_progress(struct replica *r)
{
	for (;;) {
		enum repl_chan_ev ev;
		struct repl_msg msg;
		int ret = repl_chan_next(&r->ch, &ev, &msg);
		if (ret)
			return ret;
		while (r->r_n > 0 && r->method == PMREP_MIRROR_METHOD_GPSPM &&
				replica_ring_at(r, 0)->replied &&
				repl_chan_send_done(&r->ch, replica_ring_at(r, 0)->send_slot))
			ring_pop(r);
		if (ev == REPL_CHAN_NONE)
			break;
		if (ev == REPL_CHAN_FLUSH && r->r_n > 0 &&
				r->method != PMREP_MIRROR_METHOD_GPSPM) {
			ring_pop(r);
			continue;
		}
		if (ev == REPL_CHAN_MSG && msg.type == REPL_MSG_PERSIST_REPLY &&
				r->method == PMREP_MIRROR_METHOD_GPSPM) {
			/* the target answers in order: the oldest entry not
			 * answered yet */
			struct inflight *e = NULL;
			for (unsigned i = 0; i < r->r_n; i++)
				if (!replica_ring_at(r, i)->replied) {
					e = replica_ring_at(r, i);
					break;
				}
			if (e != NULL && e->seq == msg.seq) {
				if (msg.status != REPL_ST_OK) {
					PMREP_LOG_ERR("replica %u: persist request refused: %s",
							r->idx, repl_status_str(msg.status));
					return repl_status_to_err(msg.status);
				}
				e->replied = true;
				continue;
			}
		}
		PMREP_LOG_ERR("replica %u: unexpected %s (type %d, seq %llu)",
				r->idx, ev == REPL_CHAN_MSG ? "message" : "flush completion",
				ev == REPL_CHAN_MSG ? (int)msg.type : 0,
				(unsigned long long)msg.seq);
		return PMREP_E_MALFORMED;
	}
	return repl_chan_check_conn_lazy(&r->ch);
}

/* the replica's oldest entry is past its deadline */
static bool
head_expired(struct replica *r)
{
	return r->r_n > 0 && repl_left_ms(replica_ring_at(r, 0)->deadline) == 0;
}

/* is entry `seq` still in the replica's ring? */
static bool
ring_holds(struct replica *r, uint64_t seq)
{
	for (unsigned i = 0; i < r->r_n; i++)
		if (replica_ring_at(r, i)->seq == seq)
			return true;
	return false;
}

int
replica_wait_seq(struct replica *r, uint64_t seq, long long deadline)
{
	struct pmrep_mirror *m = r->m;
	for (;;) {
		/* the ring and the channel under the lock: the data path
		 * posts persists to a replica being resynced (mirror_pipe.c) */
		mirror_lock(m);
		int ret = replica_progress(r);
		bool done = !ring_holds(r, seq);
		bool late = !done && (head_expired(r) || repl_left_ms(deadline) == 0);
		mirror_unlock(m);
		if (ret) {
			replica_fail(r, ret, 0, 0);
			return ret;
		}
		if (done)
			return 0;
		if (late) {
			replica_fail(r, PMREP_E_TIMEOUT, 0, 0);
			return PMREP_E_TIMEOUT;
		}
		/* a wait may run while another thread posts on the conn */
		ret = repl_chan_wait_slice(&r->ch, deadline);
		if (ret == PMREP_E_TIMEOUT) {
			repl_chan_conn_due(&r->ch);
		} else if (ret) {
			replica_fail(r, ret, 0, 0);
			return ret;
		}
	}
}

/*
 * wait up to slice_ms for the next completion of any replica with entries
 * in its ring (none: return at once); then the caller takes them
 */
int
mirror_wait_any(struct pmrep_mirror *m, int slice_ms)
{
	struct pmrep_cq *cqs[PMREP_MIRROR_MAX_REPLICAS];
	struct replica *who[PMREP_MIRROR_MAX_REPLICAS];
	int nw = 0;
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (atomic_load(&r->owner) != OWN_DATA || r->r_n == 0 ||
				r->conn == NULL)
			continue;
		cqs[nw] = repl_chan_cq(&r->ch);
		who[nw++] = r;
	}
	if (nw == 0)
		return 0;
	if (slice_ms < 0 || slice_ms > POLL_SLICE_MS)
		slice_ms = POLL_SLICE_MS;
	/* the transport's wait over the replicas' CQs: on tcp the answers
	 * are taken in this thread, no hand-off; conn events are read by
	 * replica_progress() when due (a conn that ends also fails its
	 * requests on the CQ) */
	int ret = pmrep_cq_wait_any(cqs, nw, slice_ms);
	if (ret == PMREP_E_TIMEOUT) {
		for (int i = 0; i < nw; i++)
			repl_chan_conn_due(&who[i]->ch);
	} else if (ret) {
		/* whose? each CQ alone says (a held post that failed) */
		for (int i = 0; i < nw; i++) {
			int r2 = repl_chan_wait_cq(&who[i]->ch, 0);
			if (r2 && r2 != PMREP_E_TIMEOUT)
				replica_fail(who[i], r2, 0, 0);
			else
				repl_chan_conn_due(&who[i]->ch);
		}
	}
	return nw;
}
