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

/* ------------------------------------------------------ the persist step */

/* bytes per write request: verbs takes at most 4 GiB - 1 in one */
#define POST_CHUNK (1ull << 30)

/*
 * post the write of [off, off + len) and its persist step: the write (in
 * chunks of at most POST_CHUNK) is flagged PMREP_F_MORE, so that verbs
 * posts it with the flush / the persist message behind one doorbell
 */
int
replica_post_range(struct replica *r, uint64_t off, uint64_t len)
{
	int ret;
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
	r->seq = r->m->next_seq++;
	if (r->method == PMREP_MIRROR_METHOD_GPSPM) {
		struct repl_msg m = { .type = REPL_MSG_PERSIST, .seq = r->seq,
			.u.persist = { .offset = off, .length = len } };
		r->p_replied = false;
		ret = repl_chan_send_at(&r->ch, &m, &r->p_send);
	} else {
		ret = pmrep_flush(r->conn, r->rmr, (size_t)off, (size_t)len,
				PMREP_FLUSH_TYPE_PERSISTENT,
				PMREP_F_COMPLETION_ALWAYS, (void *)CTX_FLUSH);
	}
	if (ret)
		return ret;
	r->pending = true;
	r->p_off = off;
	r->p_len = len;
	return 0;
}

/*
 * take the replica's completions: clears r->pending on confirmation;
 * returns an error when the replica must be failed.
 * A GPSPM persist is a send and the target's reply. CQEs are ordered only
 * within one work queue: the reply (a receive) may be polled before the
 * send completion of the request it answers. The step is done only when
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
		if (r->pending && r->method == PMREP_MIRROR_METHOD_GPSPM &&
				r->p_replied &&
				repl_chan_send_done(&r->ch, r->p_send))
			r->pending = false;
		if (ev == REPL_CHAN_NONE)
			break;
		if (ev == REPL_CHAN_FLUSH && r->pending &&
				r->method != PMREP_MIRROR_METHOD_GPSPM) {
			r->pending = false;
			continue;
		}
		if (ev == REPL_CHAN_MSG && msg.type == REPL_MSG_PERSIST_REPLY &&
				r->pending && !r->p_replied &&
				msg.seq == r->seq) {
			if (msg.status != REPL_ST_OK) {
				PMREP_LOG_ERR("replica %u: persist request refused: %s",
						r->idx, repl_status_str(msg.status));
				return repl_status_to_err(msg.status);
			}
			r->p_replied = true;
			if (repl_chan_send_done(&r->ch, r->p_send))
				r->pending = false;
			continue;
		}
		PMREP_LOG_ERR("replica %u: unexpected %s (type %d, seq %llu)",
				r->idx, ev == REPL_CHAN_MSG ? "message" : "flush completion",
				ev == REPL_CHAN_MSG ? (int)msg.type : 0,
				(unsigned long long)msg.seq);
		return PMREP_E_MALFORMED;
	}
	return repl_chan_check_conn_lazy(&r->ch);
}

/*
 * wait until no replica in `set` is pending or `deadline` passes. A
 * replica that errs is failed (its range marked). Replicas still pending
 * at the deadline are failed with PMREP_E_TIMEOUT.
 */
void
mirror_wait_pending(struct pmrep_mirror *m, long long deadline)
{
	for (;;) {
		struct pmrep_cq *cqs[PMREP_MIRROR_MAX_REPLICAS];
		struct replica *who[PMREP_MIRROR_MAX_REPLICAS];
		int nw = 0;
		for (unsigned i = 0; i < m->n; i++) {
			struct replica *r = &m->r[i];
			if (!r->pending)
				continue;
			int ret = replica_progress(r);
			if (ret) {
				replica_fail(r, ret, r->p_off, r->p_len);
				continue;
			}
			if (!r->pending)
				continue;
			cqs[nw] = repl_chan_cq(&r->ch);
			who[nw++] = r;
		}
		if (nw == 0)
			return;
		int left = repl_left_ms(deadline);
		if (left == 0) {
			for (unsigned i = 0; i < m->n; i++)
				if (m->r[i].pending)
					replica_fail(&m->r[i], PMREP_E_TIMEOUT,
							m->r[i].p_off, m->r[i].p_len);
			return;
		}
		if (left < 0 || left > POLL_SLICE_MS)
			left = POLL_SLICE_MS;
		/* the transport's wait over the pending replicas' CQs: on tcp
		 * the answers are taken in this thread, no hand-off; conn
		 * events are read by replica_progress() when due (a conn that ends
		 * also fails its pending request on the CQ) */
		int ret = pmrep_cq_wait_any(cqs, nw, left);
		if (ret == PMREP_E_TIMEOUT) {
			for (int i = 0; i < nw; i++)
				repl_chan_conn_due(&who[i]->ch);
		} else if (ret) {
			/* whose? each CQ alone says (a held post that failed) */
			for (int i = 0; i < nw; i++) {
				int r2 = repl_chan_wait_cq(&who[i]->ch, 0);
				if (r2 && r2 != PMREP_E_TIMEOUT)
					replica_fail(who[i], r2, who[i]->p_off,
							who[i]->p_len);
				else
					repl_chan_conn_due(&who[i]->ch);
			}
		}
	}
}
