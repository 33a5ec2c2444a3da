/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror.c -- the initiator: a local pmem mapping mirrored to replica
 * targets (new, delete, persist, reconnect, status). The persist path posts
 * to every in-sync replica, persists locally meanwhile, and succeeds only on
 * the confirmations the policy requires (T20: an error or a timeout is never
 * a success).
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
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "mirror_int.h"
#include "pmem/pmem_view.h"

/* --------------------------------------------------------------- mirror */

unsigned
mirror_required(const struct pmrep_mirror *m)
{
	if (m->cfg.quorum != 0)
		return m->cfg.quorum;
	unsigned k = 0;
	for (unsigned i = 0; i < m->n; i++)
		k += !m->r[i].removed && !m->r[i].joining;
	/* never none: pmrep_mirror_remove_replica keeps one that is not
	 * joining; a persist with no replica required is no mirror's */
	return k ? k : 1;
}

unsigned
mirror_set_size(const struct pmrep_mirror *m)
{
	unsigned n = 0;
	for (unsigned i = 0; i < m->n; i++)
		n += !m->r[i].removed;
	return n;
}

unsigned
mirror_fenced_count(const struct pmrep_mirror *m)
{
	struct pmrep_mirror *mm = (struct pmrep_mirror *)m;
	unsigned n = 0;
	mirror_lock(mm);
	for (unsigned i = 0; i < m->n; i++)
		n += m->r[i].fenced;
	mirror_unlock(mm);
	return n;
}

unsigned
mirror_in_sync_count(const struct pmrep_mirror *m)
{
	struct pmrep_mirror *mm = (struct pmrep_mirror *)m;
	unsigned k = 0;
	mirror_lock(mm);
	for (unsigned i = 0; i < m->n; i++)
		if (m->r[i].state == PMREP_REPLICA_IN_SYNC &&
				atomic_load(&m->r[i].owner) == OWN_DATA)
			k++;
	mirror_unlock(mm);
	return k;
}
void
mirror_replica_free(struct replica *r)
{
	replica_disconnect(r);
	if (r->chan_ready)
		repl_chan_fini(&r->ch);
	(void) pmrep_mr_dereg(&r->src);
	if (r->peer) {
		int ret = pmrep_peer_delete(&r->peer);
		if (ret)
			PMREP_LOG_ERR("replica %u: deleting its peer: %s", r->idx,
					pmrep_err_to_str(ret));
	}
	if (r->redirty_ready)
		repl_bitmap_fini(&r->redirty);
	r->redirty_ready = false;
	r->chan_ready = false;
	free(r->addr);
	free(r->port);
	r->addr = r->port = NULL;
}

int
mirror_replica_init(struct pmrep_mirror *m, unsigned i, const char *addr,
		const char *port)
{
	struct replica *r = &m->r[i];
	r->m = m;
	r->idx = i;
	r->state = PMREP_REPLICA_FAILED;
	r->owner = OWN_RECOVERY;
	r->addr = strdup(addr);
	r->port = strdup(port);
	if (r->addr == NULL || r->port == NULL) {
		PMREP_LOG_ERR("out of memory for a replica");
		return PMREP_E_NOMEM;
	}
	r->oos = mstate_oos(m->state, i);
	int ret = repl_bitmap_init(&r->redirty, m->size, r->oos->region_size);
	if (ret)
		return ret;
	r->redirty_ready = true;
	/* no record of the replica in this slot: all of it may differ */
	r->unknown = replica_uuid_is_nil(mstate_rec_id(m->state, i));
	return 0;
}

/* send CLOSE to an in-sync replica with nothing in flight, recording the
 * mark's header sequence first: it says it is consistent */
static void
mirror_replica_close(struct replica *r)
{
	struct pmrep_mirror *m = r->m;
	unsigned i = r->idx;
	/* a clean end: the replica may say it is consistent. The record
	 * first: the header sequence the mark will have */
	int ret = mstate_set_rec(m->state, i, mstate_rec_id(m->state, i),
			mstate_rec_seq(m->state, i) + 1);
	if (ret) {
		PMREP_LOG_WARN("replica %u: not marked consistent: its record could not be updated (%s)",
				i, pmrep_err_to_str(ret));
		return;
	}
	struct repl_msg msg = { .type = REPL_MSG_CLOSE, .seq = mirror_next_seq(m) };
	/* in sync with nothing in flight: it holds every step issued */
	msg.u.close_psn = mirror_newest_psn(m);
	struct repl_msg reply;
	long long deadline = repl_deadline(m->cfg.timeout_ms);
	ret = repl_chan_send(&r->ch, &msg);
	if (ret == 0)
		ret = replica_wait_msg(r, deadline, &reply);
	if (ret == 0 && (reply.type != REPL_MSG_CLOSE_REPLY ||
			reply.seq != msg.seq || reply.status != REPL_ST_OK))
		ret = PMREP_E_MALFORMED;
	if (ret)
		PMREP_LOG_WARN("replica %u: could not mark it consistent (%s); the next mirror without this record resyncs it in full",
				i, pmrep_err_to_str(ret));
}

static void
mirror_free(struct pmrep_mirror *m)
{
	mirror_recovery_stop(m);
	for (unsigned i = 0; i < m->n; i++)
		mirror_replica_free(&m->r[i]);
	/* orphans (their callers gave up) are freed here too; a
	 * synchronous request in flight cannot be: its caller waits */
	req_list_free(&m->queue);
	req_list_free(&m->flight);
	req_list_free(&m->done);
	if (m->epfd >= 0)
		close(m->epfd);
	if (m->efd >= 0)
		close(m->efd);
	if (m->tfd >= 0)
		close(m->tfd);
	mstate_close(&m->state);
	free(m->state_path);
	repl_wipe(m->cfg.key, sizeof(m->cfg.key));
	if (m->sync_ready)
		mirror_sync_fini(m);
	free(m);
}

/*
 * where the record lives: the cfg's state path (NULL: in memory), else by
 * default "<mapping path>.pmrep-state" for a regular file and in memory
 * for a device DAX
 */
static int
mirror_state_path(struct pmrep_mirror *m, const struct pmrep_mirror_cfg *cfg)
{
	const char *p = NULL;
	char *dflt = NULL;
	if (cfg->state_path_set) {
		p = cfg->state_path;
	} else if (pmrep_pmem_is_devdax(m->pmem)) {
		PMREP_LOG(PMREP_LOG_NOTICE, "mirror of the device DAX %s: its record is kept in memory only, so a restart resyncs every replica in full unless a state path is set (pmrep_mirror_cfg_set_state_path)",
				pmrep_pmem_get_path(m->pmem));
	} else {
		const char *lp = pmrep_pmem_get_path(m->pmem);
		size_t n = strlen(lp) + sizeof(".pmrep-state");
		dflt = malloc(n);
		if (dflt == NULL) {
			PMREP_LOG_ERR("out of memory for the mirror state path");
			return PMREP_E_NOMEM;
		}
		snprintf(dflt, n, "%s.pmrep-state", lp);
		m->state_path = dflt;
		return 0;
	}
	if (p != NULL) {
		m->state_path = strdup(p);
		if (m->state_path == NULL) {
			PMREP_LOG_ERR("out of memory for the mirror state path");
			return PMREP_E_NOMEM;
		}
	}
	return 0;
}

/*
 * after an attach: a replica that got past its handshake is known to the
 * record from now on (the attach code clears r->unknown when it commits;
 * this covers an attach that says so only by its state)
 */
static void
attach_known(struct replica *r)
{
	if (r->state != PMREP_REPLICA_FAILED)
		r->unknown = false;
}

int
pmrep_mirror_new(struct pmrep_pmem *pmem, const struct pmrep_mirror_cfg *cfg,
		struct pmrep_mirror **mirror_ptr)
{
	CHECK_ARG(pmem);
	CHECK_ARG(cfg);
	CHECK_ARG(mirror_ptr);
	if (pmem_rdonly(pmem)) {
		PMREP_LOG_ERR("mirror: %s is opened read-only (PMREP_LOG_RDONLY): no mirror writes from it",
				pmrep_pmem_get_path(pmem));
		return PMREP_E_INVAL;
	}
	if (cfg->n == 0 || cfg->key_len == 0 || replica_uuid_is_nil(cfg->uuid)) {
		PMREP_LOG_ERR("a mirror needs at least one replica, a key and a UUID");
		return PMREP_E_INVAL;
	}
	if (cfg->quorum > cfg->n) {
		PMREP_LOG_ERR("quorum %u above the %u replicas", cfg->quorum, cfg->n);
		return PMREP_E_INVAL;
	}
	if (cfg->fence_count > cfg->n) {
		PMREP_LOG_ERR("fence count %u above the %u replicas", cfg->fence_count,
				cfg->n);
		return PMREP_E_INVAL;
	}
	struct pmrep_mirror *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		PMREP_LOG_ERR("out of memory for a mirror");
		return PMREP_E_NOMEM;
	}
	m->pmem = pmem;
	m->base = pmrep_pmem_get_address(pmem);
	m->size = pmrep_pmem_get_size(pmem);
	m->cfg = *cfg;
	m->cfg.state_path = NULL;	/* the cfg's; ours is m->state_path */
	m->next_seq = 1;
	/* this run's epoch: above every persist sequence an earlier mirror
	 * of this record or of this log gave (no clock decides: PROTOCOL.md
	 * "Position"); raised below from the record, in mirror_log_claim
	 * from the log's header */
	m->psn_base = 1ull << REPL_PSN_EPOCH_SHIFT;
	m->window = cfg->window ? cfg->window : PIPE_WINDOW_DEFAULT;
	m->max_lag = cfg->max_lag_set ? cfg->max_lag : PIPE_MAX_LAG_DEFAULT;
	m->epfd = m->efd = m->tfd = -1;
	m->hold_t0 = -1;
	int ret = mirror_sync_init(m);
	if (ret) {
		free(m);
		return ret;
	}
	m->sync_ready = true;
	ret = mirror_state_path(m, cfg);
	if (ret)
		goto err;
	ret = mstate_open(m->state_path, cfg->uuid, cfg->generation, m->size,
			cfg->region_size, &m->state);
	if (ret) {
		/* the summary carries mstate_open's reason */
		char why[256];
		snprintf(why, sizeof(why), "%s", pmrep_err_msg());
		int e = pmrep_err_errno();
		PMREP_LOG_ERR("mirror: cannot open its record (state file %s): %s",
				m->state_path, why[0] ? why : pmrep_err_to_str(ret));
		pmrep_err_set_errno(e);
		goto err;
	}
	/* the record's high-water mark is the next run's epoch: every
	 * sequence of this run stays below it (a step number stays below
	 * 2^REPL_PSN_EPOCH_SHIFT) */
	uint64_t hw = mstate_psn_hw(m->state);
	if (hw > m->psn_base)	/* an epoch's first sequence (or older: a
				 * mark of the clock-based sequences) */
		m->psn_base = repl_psn_epoch_floor(hw - 1);
	ret = mirror_log_claim(m);
	if (ret)
		goto err;
	ret = mstate_set_psn_hw(m->state,
			m->psn_base + (1ull << REPL_PSN_EPOCH_SHIFT));
	if (ret) {
		PMREP_LOG_ERR("mirror: its record's persist sequence high-water mark could not be raised (%s)",
				pmrep_err_to_str(ret));
		goto err;
	}
	PMREP_LOG_INFO("mirror: epoch %llu (persist sequences from %llu)",
			(unsigned long long)(m->psn_base >> REPL_PSN_EPOCH_SHIFT),
			(unsigned long long)m->psn_base);
	if (m->members_grow) {
		/* this cfg needs more fencing than the membership the log
		 * recorded (more replicas, or a lower quorum): recorded on
		 * k of the old set's before a persist completes, as a change
		 * at run time is (PROTOCOL.md "Membership") */
		unsigned k_old = m->prev_quorum ? m->prev_quorum : m->prev_size;
		unsigned f = k_old < cfg->n ? k_old : cfg->n;
		if (k_old > cfg->n)
			PMREP_LOG_WARN("mirror: the log recorded %u replicas (quorum %u), this cfg names %u: the replicas it no longer names keep the old membership -- remove them at run time (pmrep_mirror_remove_replica) before dropping them from the cfg",
					m->prev_size, m->prev_quorum, cfg->n);
		if (f > m->cfg.fence_count)
			m->cfg.fence_count = f;
		PMREP_LOG(PMREP_LOG_NOTICE, "mirror: %u replicas with quorum %u need more fencing than the %u replicas with quorum %u the log recorded: %u replicas commit first",
				cfg->n, cfg->quorum, m->prev_size, m->prev_quorum,
				m->cfg.fence_count);
	}
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	m->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	m->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (m->epfd < 0 || m->efd < 0 || m->tfd < 0 ||
			fcntl(m->epfd, F_SETFL, O_NONBLOCK) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "the mirror's epoll / event / timer fd");
		goto err;
	}
	struct epoll_event eev = { .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->efd, &eev) != 0 ||
			epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->tfd, &eev) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "epoll_ctl");
		goto err;
	}
	for (unsigned i = 0; i < cfg->n; i++) {
		m->n++;
		ret = mirror_replica_init(m, i, cfg->r[i].addr, cfg->r[i].port);
		if (ret)
			goto err;
	}
	int first_err = 0;
	const struct replica *first = NULL;
	long long create_deadline = repl_deadline(cfg->create_timeout_ms);
	if (mirror_background(m)) {
		/* each replica's own thread attaches it; return once the
		 * policy's k are in sync (the others go on in the background) */
		ret = mirror_recovery_start(m);
		if (ret)
			goto err;
		/* (a commit clears r->unknown itself, under the lock) */
		first_err = mirror_recovery_wait_new(m, create_deadline, &first);
		/* the create timeout, not a replica's own TIMEOUT (its
		 * reason follows below) */
		if (first_err == PMREP_E_TIMEOUT &&
				repl_left_ms(create_deadline) == 0) {
			PMREP_LOG_ERR("mirror: %u of %u replicas in sync within the create timeout (%d ms), %u required",
					mirror_in_sync_count(m), m->n,
					cfg->create_timeout_ms, mirror_required(m));
			ret = PMREP_E_TIMEOUT;
			goto err;
		}
	} else {
		for (unsigned i = 0; i < m->n; i++) {
			/* this replica's messages only: its failure's reason
			 * is the thread's last error message */
			pmrep_err_clear();
			/* the resync of a new mirror has no overall limit
			 * but the create timeout: each step has the cfg one */
			ret = replica_attach(&m->r[i], repl_deadline(cfg->timeout_ms),
					create_deadline);
			attach_known(&m->r[i]);
			if (ret && first_err == 0) {
				first_err = ret;
				first = &m->r[i];
			}
		}
	}
	if ((!m->cfg.fence_only && mirror_in_sync_count(m) < mirror_required(m)) ||
			mirror_fenced_count(m) < m->cfg.fence_count) {
		ret = first_err ? first_err : PMREP_E_CONN_LOST;
		/* the summary replaces the thread's last message: it carries
		 * the first failure's reason, named by its replica */
		char reason[sizeof(first->why) + 128] = "";
		if (first != NULL) {
			char name[32];
			int n = snprintf(name, sizeof(name), "replica %u", first->idx);
			char after = first->why[n];
			if (strncmp(first->why, name, (size_t)n) == 0 &&
					(after == ' ' || after == ':'))
				snprintf(reason, sizeof(reason), "; %s", first->why);
			else
				snprintf(reason, sizeof(reason), "; replica %u (%s:%s): %s",
						first->idx, first->addr, first->port,
						first->why);
		}
		PMREP_LOG_ERR("mirror: %u of %u replicas in sync, %u required%s",
				mirror_in_sync_count(m), m->n, mirror_required(m), reason);
		pmrep_err_set_errno(first != NULL ? first->why_errno : 0);
		goto err;
	}
	if (m->members_grow)
		(void) mirror_log_members(m, cfg->n, cfg->quorum);
	*mirror_ptr = m;
	return 0;
err:
	/* refused: the log's claim is taken back unless a replica committed
	 * an attach to this run (it then carries the run: so must the log),
	 * once the recovery threads are stopped (none commits after this) */
	if (m->sync_ready)
		mirror_recovery_stop(m);
	if (m->log && !m->cfg.fence_only && mirror_fenced_count(m) == 0)
		mirror_log_unclaim(m);
	mirror_free(m);
	return ret;
}

int
pmrep_mirror_delete(struct pmrep_mirror **mirror_ptr)
{
	CHECK_ARG(mirror_ptr);
	struct pmrep_mirror *m = *mirror_ptr;
	if (m == NULL)
		return 0;
	/* the recovery threads end first (a resync in progress pauses:
	 * DEGRADED, its regions kept out of sync) */
	mirror_recovery_stop(m);
	/* a replica its recovery left half way (DEGRADED, or mid-attach):
	 * what its ring holds goes to its OOS */
	for (unsigned i = 0; i < m->n; i++)
		if (atomic_load(&m->r[i].owner) != OWN_DATA && m->r[i].r_n > 0)
			replica_fail(&m->r[i], PMREP_E_CONN_LOST, 0, 0);
	/* the CLOSE exchange needs nothing in flight: what is queued and
	 * in flight is finished within the cfg timeout; completions not
	 * polled are dropped */
	mirror_pipe_drain(m, repl_deadline(m->cfg.timeout_ms));
	/* what is still queued is persisted locally and reached no replica:
	 * out of sync for every one of them (no CLOSE, and the next mirror
	 * on this record resyncs it); a replica that has not confirmed what
	 * it holds by now fails (its ring goes to its OOS) */
	for (const struct async_req *q = m->queue.head; q != NULL; q = q->next)
		for (unsigned i = 0; i < m->n; i++)
			if (!m->r[i].removed)
				repl_bitmap_mark(m->r[i].oos, q->off, q->len);
	for (unsigned i = 0; i < m->n; i++)
		if (m->r[i].r_n > 0)
			replica_fail(&m->r[i], PMREP_E_TIMEOUT, 0, 0);
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->state == PMREP_REPLICA_IN_SYNC && r->oos->nset == 0)
			mirror_replica_close(r);
	}
	mirror_log_close(m);
	/* nothing in flight: what AL covers is on the replicas or in their
	 * OOS sets (made durable first) */
	int ret = mstate_al_clear(m->state, true);
	if (ret)
		PMREP_LOG_ERR("mirror: clearing the activity log of its record failed (%s): the next mirror on it resyncs those regions",
				pmrep_err_to_str(ret));
	mirror_free(m);
	*mirror_ptr = NULL;
	return ret;
}

/* submit a synchronous request and wait for it (q is freed, or left to
 * the pipeline as an orphan) */
static int
persist_wait(struct pmrep_mirror *m, struct async_req *q, int timeout_ms)
{
	uint64_t offset = q->off, length = q->len;
	const char *what = q->nv > 0 ? " (a vector's span)" : "";
	q->sync = true;
	q->deadline = repl_deadline(timeout_ms);
	/* in submission order behind what is queued or in flight */
	int ret = mirror_pipe_submit(m, q);
	if (ret) {
		free(q);
		mirror_pipe_advance(m);
		return ret;
	}
	mirror_pipe_advance(m);
	/* meanwhile, locally */
	int local = mirror_req_persist_local(m, q);
	while (!q->done) {
		int left = repl_left_ms(q->deadline);
		if (left == 0)
			break;
		mirror_pipe_wait(m, left);
		mirror_pipe_advance(m);
	}
	if (!q->done)
		mirror_pipe_advance(m);	/* fails who is past the deadline */
	if (q->done) {
		ret = q->result;
		free(q);
	} else {
		/* its step goes on (or is posted still, in order); what it
		 * leaves behind is the pipeline's: a replica that does not
		 * confirm it by its deadline is failed there */
		q->orphan = true;
		ret = PMREP_E_TIMEOUT;
		PMREP_LOG_ERR("persist of %llu bytes at %llu%s: not confirmed by the replicas the policy requires within %d ms",
				(unsigned long long)length,
				(unsigned long long)offset, what, timeout_ms);
	}
	if (local) {
		PMREP_LOG_ERR("persist of %llu bytes at %llu%s: the local persist failed (%s)",
				(unsigned long long)length,
				(unsigned long long)offset, what,
				pmrep_err_to_str(local));
		ret = PMREP_E_PROVIDER;
	}
	return ret;
}

int
pmrep_mirror_persist(struct pmrep_mirror *m, size_t offset, size_t length,
		int timeout_ms)
{
	CHECK_ARG(m);
	int ret = repl_timeout_check(timeout_ms, "pmrep_mirror_persist");
	if (ret)
		return ret;
	if (offset > m->size || length > m->size - offset) {
		PMREP_LOG_ERR("persist of %zu bytes at %zu is outside the %zu-byte mapping",
				length, offset, m->size);
		return PMREP_E_RANGE;
	}
	if (length == 0)
		return 0;
	struct async_req *q = calloc(1, sizeof(*q));
	if (q == NULL) {
		PMREP_LOG_ERR("out of memory for a persist request");
		return PMREP_E_NOMEM;
	}
	q->off = offset;
	q->len = length;
	return persist_wait(m, q, timeout_ms);
}

int
pmrep_mirror_persistv(struct pmrep_mirror *m, const struct pmrep_range *ranges,
		unsigned n, int timeout_ms)
{
	CHECK_ARG(m);
	int ret = repl_timeout_check(timeout_ms, "pmrep_mirror_persistv");
	if (ret)
		return ret;
	struct async_req *q;
	ret = mirror_req_vec(m, ranges, n, &q);
	if (ret)
		return ret;
	if (q->len == 0) {
		free(q);	/* every range empty */
		return 0;
	}
	return persist_wait(m, q, timeout_ms);
}

int
pmrep_mirror_reconnect(struct pmrep_mirror *m, int timeout_ms)
{
	CHECK_ARG(m);
	int ret = repl_timeout_check(timeout_ms, "pmrep_mirror_reconnect");
	if (ret)
		return ret;
	long long deadline = repl_deadline(timeout_ms);
	int first_err = 0;
	bool waiting = false;
	/* what the pipeline has now; the resync below waits on its own
	 * replica only */
	mirror_pipe_advance(m);
	if (mirror_background(m)) {
		/* the replicas' threads do it: due now, and wait */
		ret = mirror_recovery_wait_all(m, deadline);
		mirror_pipe_advance(m);
		return ret;
	}
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		ret = 0;
		if (atomic_load(&r->owner) == OWN_DATA || r->removed)
			continue;
		if (r->state == PMREP_REPLICA_FAILED) {
			if (repl_now_ms() < r->next_try) {
				waiting = true;
				continue;
			}
			long long d = repl_deadline(m->cfg.timeout_ms);
			if (deadline >= 0 && deadline < d)
				d = deadline;
			ret = replica_attach(r, d, deadline);
			attach_known(r);
		} else {
			ret = replica_resync(r, deadline);
		}
		if (ret && first_err == 0)
			first_err = ret;
	}
	mirror_pipe_advance(m);
	if (first_err)
		return first_err;
	return waiting ? PMREP_E_AGAIN : 0;
}

int
pmrep_mirror_get_replica_count(const struct pmrep_mirror *m, unsigned *count)
{
	CHECK_ARG(m);
	CHECK_ARG(count);
	*count = m->n;
	return 0;
}

int
pmrep_mirror_get_persist_seq(const struct pmrep_mirror *m, uint64_t *psn)
{
	CHECK_ARG(m);
	CHECK_ARG(psn);
	struct pmrep_mirror *mm = (struct pmrep_mirror *)m;
	mirror_lock(mm);
	*psn = m->cfg.persist_seq ? m->psn_done : 0;
	mirror_unlock(mm);
	return 0;
}

int
pmrep_mirror_get_replica_status(const struct pmrep_mirror *m, unsigned index,
		struct pmrep_replica_status *st)
{
	CHECK_ARG(m);
	CHECK_ARG(st);
	if (index >= m->n) {
		PMREP_LOG_ERR("replica index %u: the mirror has %u", index, m->n);
		return PMREP_E_INVAL;
	}
	const struct replica *r = &m->r[index];
	struct pmrep_mirror *mm = (struct pmrep_mirror *)m;
	mirror_lock(mm);
	memset(st, 0, sizeof(*st));
	st->state = r->state;
	if (r->removed) {
		st->resync_eta_ms = -1;
		st->next_retry_ms = -1;
		mirror_unlock(mm);
		return 0;
	}
	/* "in sync" means identical to every completed persist */
	if (r->state == PMREP_REPLICA_IN_SYNC && r->lag_inflight > 0)
		st->state = PMREP_REPLICA_BEHIND;
	st->method = r->method;
	st->lag_bytes = r->unknown ? (uint64_t)m->size :
		repl_bitmap_dirty_bytes(r->oos) + r->lag_inflight;
	if (st->lag_bytes > m->size)
		st->lag_bytes = m->size;
	st->last_error = r->last_error;
	st->resyncs = r->resyncs;
	st->resync_bytes = r->resync_bytes;
	st->resync_compared = r->resync_compared;
	st->resync_eta_ms = -1;
	st->next_retry_ms = -1;
	if (r->state == PMREP_REPLICA_SYNCING) {
		long long now = repl_now_ms();
		uint64_t left = repl_bitmap_dirty_bytes(r->oos);
		st->resync_done = r->rs_done;
		st->resync_total = r->rs_done + left;
		long long ms = now - r->rs_start_ms;
		st->resync_rate = ms > 0 ? r->rs_done * 1000 / (uint64_t)ms : 0;
		if (st->resync_rate > 0)
			st->resync_eta_ms = (int64_t)(left * 1000 / st->resync_rate);
	}
	st->backoff_ms = r->backoff_ms;
	if (r->state == PMREP_REPLICA_FAILED) {
		long long left = r->next_try - repl_now_ms();
		st->next_retry_ms = left > 0 ? left : 0;
	}
	mirror_unlock(mm);
	return 0;
}
