/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_mirror.c -- the mirror level: a mirror of the server's targets
 * (TGT) or of target processes, its cfg as the sweep asks (mirror_extra),
 * one pmrep_mirror_persist at a time (mirror_run); the pipelined mirror
 * level (pmrep_mirror_persist_async, `depth` outstanding, a replica
 * watched: pipe_run); and the mirror as track.c opens and runs it
 * (bench.h).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "bench_int.h"

/* --------------------------------------------------------- mirror level */

/* the mirror's record next to the mapping (its default state path) */
static void
state_unlink(const char *mapping)
{
	char p[300];
	snprintf(p, sizeof(p), "%s.pmrep-state", mapping);
	unlink(p);
}

/* mirror_open: the mirror's record in memory (else the default state
 * file next to the mapping) */
bool Mirror_record_in_memory;

/* mirror_open: what else the next mirror's cfg says (NULL: defaults) */
const struct mirror_extra *Mirror_extra;

int
mirror_open(struct mirror *mi, unsigned nrep, size_t size, unsigned tag)
{
	char reply[256];
	memset(mi, 0, sizeof(*mi));
	mi->nrep = nrep;
	mi->size = size;
	const struct mirror_extra *ex = Mirror_extra;
	if (ex && ex->ports)
		snprintf(reply, sizeof(reply), "OK%s", ex->ports);
	else if (ask(reply, sizeof(reply), OP_TIMEOUT_MS, "TGT %u %zu", nrep,
			size))
		return -1;
	struct pmrep_mirror_cfg *cfg = NULL;
	int ret = pmrep_mirror_cfg_new(&cfg);
	char *p = reply + 2;
	for (unsigned i = 0; ret == 0 && i < nrep; i++) {
		char port[16];
		int used = 0;
		if (sscanf(p, " %15s%n", port, &used) != 1) {
			ret = PMREP_E_MALFORMED;
			break;
		}
		p += used;
		ret = pmrep_mirror_cfg_add_replica(cfg, O.addr, port);
	}
	uint8_t uuid[PMREP_UUID_SIZE];
	if (getrandom(uuid, sizeof(uuid), 0) != sizeof(uuid))
		memset(uuid, 0x5a, sizeof(uuid));
	uuid[0] |= 1;
	if (ret == 0)
		ret = pmrep_mirror_cfg_set_key(cfg, Key, sizeof(Key));
	if (ret == 0)
		ret = pmrep_mirror_cfg_set_uuid(cfg, uuid);
	if (ret == 0)
		ret = pmrep_mirror_cfg_set_timeout(cfg, OP_TIMEOUT_MS);
	if (ret == 0 && Mirror_record_in_memory)
		ret = pmrep_mirror_cfg_set_state_path(cfg, NULL);
	if (ret == 0 && ex && ex->window)
		ret = pmrep_mirror_cfg_set_window(cfg, ex->window);
	if (ret == 0 && O.mirror_plain)
		ret = pmrep_mirror_cfg_set_tls(cfg, false);
	if (ret == 0 && O.mirror_fg_recovery)
		ret = pmrep_mirror_cfg_set_background_recovery(cfg, false);
	if (ret == 0 && O.mirror_psn)
		ret = pmrep_mirror_cfg_set_persist_seq(cfg, true);
	if (ret == 0 && ex && ex->quorum)
		ret = pmrep_mirror_cfg_set_quorum(cfg, ex->quorum);
	if (ret == 0 && ex && ex->set_max_lag)
		ret = pmrep_mirror_cfg_set_max_lag(cfg, ex->max_lag);
	if (ret == 0 && ex && ex->backoff_min_ms)
		ret = pmrep_mirror_cfg_set_backoff(cfg, ex->backoff_min_ms,
				ex->backoff_max_ms);
	if (ret == 0 && ex && ex->resync_rate)
		ret = pmrep_mirror_cfg_set_resync_rate(cfg, ex->resync_rate);
	if (ret == 0 && ex && ex->set_resync_min_rate)
		ret = pmrep_mirror_cfg_set_resync_min_rate(cfg, ex->resync_min_rate);
	snprintf(mi->path, sizeof(mi->path), "/dev/shm/pmrep-bench-%ld-local%u",
			(long)getpid(), tag);
	unlink(mi->path);
	if (ret == 0)
		ret = pmrep_pmem_open(mi->path, PMREP_PMEM_CREATE, size,
				PMREP_PMEM_GRANULARITY_PAGE, &mi->pmem);
	/*
	 * retried: on verbs the target may see the AUTH message before its
	 * own ESTABLISHED event and fail to answer it (the target handles
	 * messages before connection events; the verbs provider refuses to
	 * post until it has read ESTABLISHED), which ends that handshake
	 */
	for (int attempt = 0; ret == 0 && attempt < 5; attempt++) {
		ret = pmrep_mirror_new(mi->pmem, cfg, &mi->m);
		if (ret == 0 || (ret != PMREP_E_CONN_LOST && ret != PMREP_E_TIMEOUT))
			break;
		fprintf(stderr, "pmrep-bench: mirror of %u replicas: %s; retrying\n",
				nrep, pmrep_err_to_str(ret));
		usleep(200000);
		if (attempt < 4)
			ret = 0;
	}
	(void) pmrep_mirror_cfg_delete(&cfg);
	if (ret) {
		fprintf(stderr, "pmrep-bench: mirror of %u replicas: %s (%s)\n",
				nrep, pmrep_err_to_str(ret), pmrep_err_msg());
		(void) pmrep_pmem_close(&mi->pmem);
		unlink(mi->path);
		state_unlink(mi->path);
		return -1;
	}
	mi->persist = pmrep_pmem_get_persist_fn(mi->pmem);
	struct pmrep_replica_status st;
	mi->method = "?";
	if (pmrep_mirror_get_replica_status(mi->m, 0, &st) == 0)
		mi->method = pmrep_mirror_method_str(st.method);
	return 0;
}

void
mirror_close(struct mirror *mi)
{
	char reply[64];
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "LOG %d",
			(int)PMREP_LOG_FATAL);
	(void) pmrep_mirror_delete(&mi->m);
	(void) pmrep_pmem_close(&mi->pmem);
	if (mi->path[0]) {
		unlink(mi->path);
		state_unlink(mi->path);
	}
	mi->path[0] = '\0';
}

int
mirror_run(struct mirror *mi, size_t size, int ms, bool local_only,
		struct bench_samples *s)
{
	uint8_t *base = pmrep_pmem_get_address(mi->pmem);
	size_t nslots = mi->size / size;
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0;
	for (uint64_t seq = 0;; seq++) {
		size_t off = (size_t)(seq % nslots) * size;
		base[off] = (uint8_t)seq;	/* something to persist */
		uint64_t a = bench_now_ns();
		if (a >= end)
			break;
		if (local_only) {
			mi->persist(base + off, size);
		} else {
			int ret = pmrep_mirror_persist(mi->m, off, size, OP_TIMEOUT_MS);
			if (ret) {
				fprintf(stderr, "pmrep-bench: persist: %s (%s)\n",
						pmrep_err_to_str(ret), pmrep_err_msg());
				return -1;
			}
		}
		uint64_t b = bench_now_ns();
		s->all_ops++;
		if (a >= warm_end) {
			if (begin == 0)
				begin = a;
			bench_samples_add(s, b - a, size);
			s->elapsed_ns = b - begin;
		}
	}
	return 0;
}

/* ------------------------------------------- the pipelined mirror level */

/* take the mirror's waiting events (its fd stays readable while one
 * waits: a loop that left them there would never sleep), noting replica
 * w->idx's when w watches them (a SYNCING before any IN_SYNC, the first
 * IN_SYNC after it, FAILED) */
void
pipe_events(struct mirror *mi, struct pipe_watch *w)
{
	struct pmrep_mirror_event ev;
	while (pmrep_mirror_get_event(mi->m, &ev) == 0) {
		if (w == NULL || !w->events)
			continue;
		uint64_t now = bench_now_ns();
		w->nevents++;
		w->lost += ev.lost;
		if (ev.replica != w->idx)
			continue;
		if (ev.to == PMREP_REPLICA_SYNCING && w->t_syncing == 0)
			w->t_syncing = now;
		if (ev.to == PMREP_REPLICA_IN_SYNC && w->t_in_sync == 0)
			w->t_in_sync = now;
		if (ev.to == PMREP_REPLICA_FAILED && w->t_failed == 0)
			w->t_failed = now;
	}
}

uint64_t Pipe_disorder;

/*
 * pmrep_mirror_persist_async of `size` bytes at ranges `2 * size` apart
 * (never adjacent: no coalescing, every request its own step), `depth`
 * requests outstanding (submitted, not yet handed out by poll), waiting
 * on the mirror's fd; for about `ms` after `warm_ms`. A request's latency
 * is from its submission (the local persist included) to its completion.
 * Completions are checked to come in submission order (Pipe_disorder
 * counts those that do not) and with result 0.
 */
int
pipe_run(struct mirror *mi, size_t size, unsigned depth, int warm_ms, int ms,
		struct bench_samples *s, struct pipe_watch *w)
{
	struct pmrep_mirror_completion c[PIPE_MAX];
	uint64_t t_sub[PIPE_MAX], seq_of[PIPE_MAX];
	unsigned free_slot[PIPE_MAX], nfree = 0;
	uint8_t *base = pmrep_pmem_get_address(mi->pmem);
	size_t stride = 2 * size, nslots = mi->size / stride;
	int fd = -1, ret = 0;
	(void) pmrep_mirror_get_fd(mi->m, &fd);
	if (depth > PIPE_MAX)
		depth = PIPE_MAX;
	for (unsigned i = 0; i < depth; i++)
		free_slot[nfree++] = depth - 1 - i;
	uint64_t seq = 0, next_done = 0;
	unsigned out = 0;
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)warm_ms * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0, idle_since = t0;
	if (w)
		w->t0 = t0;
	for (;;) {
		uint64_t now = bench_now_ns();
		bool more = now < end;
		if (w && w->nreq && seq >= w->nreq)
			more = false;
		if (w && w->stop_in_sync && w->t_in_sync)
			more = false;
		while (more && nfree > 0) {
			unsigned slot = free_slot[--nfree];
			size_t off = (size_t)(seq % nslots) * stride;
			base[off] = (uint8_t)seq;	/* something to persist */
			t_sub[slot] = bench_now_ns();
			seq_of[slot] = seq;
			ret = pmrep_mirror_persist_async(mi->m, off, size,
					(void *)(uintptr_t)(slot + 1));
			if (ret) {
				fprintf(stderr, "pmrep-bench: persist_async: %s (%s)\n",
						pmrep_err_to_str(ret), pmrep_err_msg());
				return -1;
			}
			seq++;
			out++;
		}
		if (out == 0)
			break;
		int n = 0;
		ret = pmrep_mirror_poll(mi->m, c, PIPE_MAX, &n);
		if (ret) {
			fprintf(stderr, "pmrep-bench: mirror poll: %s (%s)\n",
					pmrep_err_to_str(ret), pmrep_err_msg());
			return -1;
		}
		now = bench_now_ns();
		if (n == 0) {
			if (now - idle_since > (uint64_t)OP_TIMEOUT_MS * 1000000u) {
				fprintf(stderr, "pmrep-bench: pipeline: no completion in %d ms with %u outstanding (window %u)\n",
						OP_TIMEOUT_MS, out, depth);
				return -1;
			}
			struct pollfd p = { fd, POLLIN, 0 };
			(void) poll(&p, 1, 100);
			continue;
		}
		idle_since = now;
		for (int i = 0; i < n; i++) {
			unsigned slot = (unsigned)((uintptr_t)c[i].ctx - 1);
			if (slot >= depth) {
				fprintf(stderr, "pmrep-bench: pipeline: a completion with an unknown ctx\n");
				return -1;
			}
			if (c[i].result) {
				fprintf(stderr, "pmrep-bench: pipeline: persist at %zu: %s\n",
						c[i].offset, pmrep_err_to_str(c[i].result));
				return -1;
			}
			if (seq_of[slot] != next_done)
				Pipe_disorder++;
			next_done = seq_of[slot] + 1;
			uint64_t lat = now - t_sub[slot];
			s->all_ops++;
			if (w && w->during && w->t_syncing &&
					t_sub[slot] >= w->t_syncing &&
					w->t_in_sync == 0) {
				bench_samples_add(w->during, lat, size);
			} else if (t_sub[slot] >= warm_end && now < end) {
				if (begin == 0)
					begin = t_sub[slot];
				bench_samples_add(s, lat, size);
				s->elapsed_ns = now - begin;
			}
			if (w) {
				if (w->t_failed == 0) {
					w->before++;
					if (lat > w->max_before_ns)
						w->max_before_ns = lat;
				} else {
					w->after++;
				}
				w->t_last = now;
			}
			free_slot[nfree++] = slot;
			out--;
		}
		pipe_events(mi, w);
		if (w && w->events && now - w->t_status > 1000000u) {
			struct pmrep_replica_status st;
			w->t_status = now;
			if (pmrep_mirror_get_replica_status(mi->m, w->idx, &st) == 0 &&
					st.state == PMREP_REPLICA_SYNCING) {
				w->resync_total = st.resync_total;
				if (st.resync_rate)
					w->resync_rate = st.resync_rate;
			}
		}
		if (w && !w->events && w->t_failed == 0) {
			struct pmrep_replica_status st;
			if (pmrep_mirror_get_replica_status(mi->m, w->idx, &st) == 0) {
				if (st.state == PMREP_REPLICA_BEHIND)
					w->saw_behind = true;
				if (st.state == PMREP_REPLICA_FAILED)
					w->t_failed = bench_now_ns();
			}
		}
	}
	if (w)
		(void) pmrep_mirror_get_replica_status(mi->m, w->idx, &w->st);
	return 0;
}

/* the mirror level for track.c (bench.h) */
struct bench_mirror {
	struct mirror mi;
};

int
bench_mirror_open(struct bench_mirror **out, size_t map, unsigned window,
		bool track)
{
	static unsigned tag = 40;
	struct bench_mirror *b = calloc(1, sizeof(*b));
	struct mirror_extra ex = { .window = window };
	bool psn = O.mirror_psn;
	O.mirror_psn = track;
	Mirror_extra = &ex;
	int ret = b ? mirror_open(&b->mi, 1, map, tag++) : -1;
	Mirror_extra = NULL;
	O.mirror_psn = psn;
	if (ret)
		free(b);
	*out = ret ? NULL : b;
	return ret ? -1 : 0;
}

void
bench_mirror_close(struct bench_mirror **m)
{
	if (*m) {
		mirror_close(&(*m)->mi);
		free(*m);
		*m = NULL;
	}
}

const char *
bench_mirror_method(const struct bench_mirror *m)
{
	return m ? m->mi.method : "-";
}

int
bench_mirror_run(struct bench_mirror *m, size_t size, unsigned window, int ms,
		struct bench_samples *s, double *cpu_us)
{
	struct cpu_win w;
	struct cpu_acc a;
	cpu_start(&w);
	int ret = window == 0 ? mirror_run(&m->mi, size, ms, false, s) :
		pipe_run(&m->mi, size, window, WARMUP_MS, ms, s, NULL);
	cpu_stop(&w, s->all_ops, &a);
	*cpu_us = cpu_us_op(&a);
	return ret;
}
