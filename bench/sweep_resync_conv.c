/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep_resync_conv.c -- part of the resync sweep: a killed replica's
 * resync under a writer paced at 60 % of its maximum, with and without the
 * resync minimum (pmrep_mirror_cfg_set_resync_min_rate): the time until it
 * is in sync again, the writer's rate during the resync against before.
 */
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_int.h"

/*
 * The resync minimum (pmrep_mirror_cfg_set_resync_min_rate) at work: per
 * cfg resync rate of the sweep, with no minimum (0, what the mirror did
 * before it) and with the library's default, a round is: two targets in
 * processes of their own, quorum 1 of 2, window 16, 4 KiB persist_async 8
 * KiB apart; both IN_SYNC, the writer's rate unpaced (its maximum, O.ms),
 * then paced at CONV_SHARE of it (before, O.ms); replica 1's target killed,
 * the writer going on for CONV_OUTAGE_MS, the target restarted on its port
 * with its file; the writer goes on at its pace until replica 1 is IN_SYNC
 * again (its events), or CONV_DEADLINE_MS. Reported (median of the
 * rounds that ended in sync; rounds that did not are counted): the time
 * from the restart to IN_SYNC (and from SYNCING), the writer's rate during
 * the resync against before, the bytes that resync copied.
 */
#define CONV_SHARE 0.6
#define CONV_OUTAGE_MS 1000
/* as the resync sweep's */
#define CONV_WINDOW 16
#define CONV_BACKOFF_MIN_MS 10
#define CONV_BACKOFF_MAX_MS 50
#define CONV_DEADLINE_MS 20000

struct conv_run {
	double rate;		/* persists/s, 0: unpaced */
	int ms;			/* how long (stop_in_sync: at most) */
	bool stop_in_sync;	/* until replica 1's IN_SYNC event */
	uint64_t ok, failed;	/* completions */
	double secs;
	uint64_t t_syncing, t_in_sync;	/* ns: replica 1's events (0: none) */
	uint64_t ok_syncing;	/* completions between them */
};

/* the writer: 4 KiB at 8 KiB strides, at most CONV_WINDOW outstanding,
 * at cr->rate (a pace that fell behind by a window does not burst) */
static int
conv_writer(struct mirror *mi, struct conv_run *cr)
{
	const size_t size = 4096, stride = 2 * size;
	size_t nslots = mi->size / stride;
	uint8_t *base = pmrep_pmem_get_address(mi->pmem);
	struct pmrep_mirror_completion c[CONV_WINDOW];
	int fd = -1;
	(void) pmrep_mirror_get_fd(mi->m, &fd);
	uint64_t t0 = bench_now_ns(), idle_since = t0;
	uint64_t end = t0 + (uint64_t)cr->ms * 1000000u;
	uint64_t seq = 0, paced = 0;
	unsigned out = 0;
	for (;;) {
		uint64_t now = bench_now_ns();
		bool more = now < end && !(cr->stop_in_sync && cr->t_in_sync);
		uint64_t due = UINT64_MAX;
		if (cr->rate > 0) {
			due = (uint64_t)((double)(now - t0) * cr->rate / 1e9);
			if (due > paced + CONV_WINDOW)
				paced = due - CONV_WINDOW;
		}
		while (more && out < CONV_WINDOW && paced < due) {
			size_t off = (size_t)(seq % nslots) * stride;
			/* never the bytes the slot held: a resync by digests
			 * finds every region written different */
			memcpy(base + off, &seq, sizeof(seq));
			int ret = pmrep_mirror_persist_async(mi->m, off, size, NULL);
			if (ret) {
				fprintf(stderr, "pmrep-bench: resync convergence: persist_async: %s (%s)\n",
						pmrep_err_to_str(ret), pmrep_err_msg());
				return -1;
			}
			seq++;
			paced++;
			out++;
		}
		if (out == 0 && !more)
			break;
		int n = 0;
		if (pmrep_mirror_poll(mi->m, c, CONV_WINDOW, &n)) {
			fprintf(stderr, "pmrep-bench: resync convergence: mirror poll failed\n");
			return -1;
		}
		struct pmrep_mirror_event ev;
		while (pmrep_mirror_get_event(mi->m, &ev) == 0) {
			if (ev.replica != 1)
				continue;
			if (ev.to == PMREP_REPLICA_SYNCING && cr->t_syncing == 0)
				cr->t_syncing = bench_now_ns();
			if (ev.to == PMREP_REPLICA_IN_SYNC && cr->t_syncing &&
					cr->t_in_sync == 0)
				cr->t_in_sync = bench_now_ns();
		}
		now = bench_now_ns();
		for (int i = 0; i < n; i++) {
			if (c[i].result == 0)
				cr->ok++;
			else
				cr->failed++;
			if (cr->t_syncing && cr->t_in_sync == 0)
				cr->ok_syncing++;
			out--;
		}
		if (n > 0) {
			idle_since = now;
			continue;
		}
		if (out > 0 && now - idle_since > (uint64_t)OP_TIMEOUT_MS * 1000000u) {
			fprintf(stderr, "pmrep-bench: resync convergence: no completion in %d ms with %u outstanding\n",
					OP_TIMEOUT_MS, out);
			return -1;
		}
		struct pollfd p = { fd, POLLIN, 0 };
		(void) poll(&p, 1, 1);
	}
	cr->secs = (double)(bench_now_ns() - t0) / 1e9;
	return 0;
}

struct conv_result {
	double max, before, during;	/* persists/s */
	double restart_ms, syncing_ms;	/* restart / SYNCING -> IN_SYNC */
	double mib;			/* copied by that resync */
	bool in_sync;			/* within CONV_DEADLINE_MS */
	uint64_t failed;		/* persists that failed, all runs */
};

static int
conv_round(uint64_t rate_cfg, bool min_set, uint64_t min_rate,
		struct conv_result *r)
{
	const size_t msize = O.resync_size;
	struct child_tgt ct[2];
	struct mirror mi;
	int ret = -1;
	memset(r, 0, sizeof(*r));
	bool ok = child_tgt_start(&ct[0], 0, msize) == 0;
	ok = ok && child_tgt_start(&ct[1], 1, msize) == 0;
	char ports[48];
	snprintf(ports, sizeof(ports), " %s %s", ct[0].port, ct[1].port);
	struct mirror_extra ex = { .window = CONV_WINDOW, .quorum = 1,
		.set_max_lag = true, .max_lag = QUORUM_MAX_LAG, .ports = ports,
		.backoff_min_ms = CONV_BACKOFF_MIN_MS,
		.backoff_max_ms = CONV_BACKOFF_MAX_MS, .resync_rate = rate_cfg,
		.set_resync_min_rate = min_set, .resync_min_rate = min_rate };
	Mirror_extra = &ex;
	ok = ok && mirror_open(&mi, 2, msize, 41) == 0;
	Mirror_extra = NULL;
	if (!ok)
		goto end;
	struct conv_run u = { .ms = O.ms }, b = { .ms = O.ms }, o, w;
	struct pmrep_replica_status st0, st1;
	if (wait_all_in_sync(&mi, CONV_DEADLINE_MS) || conv_writer(&mi, &u) ||
			u.ok == 0)
		goto fail;
	r->max = (double)u.ok / u.secs;
	/* (unpaced, quorum 1 may have pulled one ahead) */
	b.rate = r->max * CONV_SHARE;
	if (wait_all_in_sync(&mi, CONV_DEADLINE_MS) || conv_writer(&mi, &b) ||
			wait_all_in_sync(&mi, CONV_DEADLINE_MS))
		goto fail;
	r->before = (double)b.ok / b.secs;
	(void) pmrep_mirror_get_replica_status(mi.m, 1, &st0);

	kill(ct[1].pid, SIGKILL);
	reap(ct[1].pid, 5000);
	ct[1].pid = -1;
	close(ct[1].in_fd);
	ct[1].in_fd = -1;
	o = (struct conv_run){ .rate = b.rate, .ms = CONV_OUTAGE_MS };
	if (conv_writer(&mi, &o))
		goto fail;
	char port[16];
	snprintf(port, sizeof(port), "%s", ct[1].port);
	if (child_tgt_start_at(&ct[1], 1, msize, port)) {
		fprintf(stderr, "pmrep-bench: resync convergence: the target's restart on port %s failed\n",
				port);
		goto fail;
	}
	uint64_t t_restart = bench_now_ns();
	w = (struct conv_run){ .rate = b.rate, .ms = CONV_DEADLINE_MS,
		.stop_in_sync = true };
	if (conv_writer(&mi, &w))
		goto fail;
	r->failed = u.failed + b.failed + o.failed + w.failed;
	r->in_sync = w.t_in_sync != 0;
	if (r->in_sync) {
		r->restart_ms = (double)(w.t_in_sync - t_restart) / 1e6;
		r->syncing_ms = (double)(w.t_in_sync - w.t_syncing) / 1e6;
		r->during = (double)w.ok_syncing / (r->syncing_ms / 1e3);
		(void) pmrep_mirror_get_replica_status(mi.m, 1, &st1);
		r->mib = (double)(st1.resync_bytes - st0.resync_bytes) / (1 << 20);
	} else if (pmrep_mirror_get_replica_status(mi.m, 1, &st1) == 0) {
		r->mib = (double)st1.resync_done / (1 << 20);
		fprintf(stderr, "pmrep-bench: resync convergence: replica 1 not IN_SYNC within %d ms of its restart: state %s, %" PRIu64
				" of %zu bytes out of sync, %" PRIu64 " copied\n",
				CONV_DEADLINE_MS, pmrep_replica_state_str(st1.state),
				st1.lag_bytes, msize, st1.resync_done);
	}
	ret = 0;
fail:
	mirror_close(&mi);
end:
	child_tgt_end(&ct[0]);
	child_tgt_end(&ct[1]);
	return ret;
}

void
sweep_resync_converge(void)
{
	int rounds = O.rounds < 16 ? O.rounds : 16;
	fprintf(Tab, "\nresync under a paced writer: quorum 1 of 2, window %d, 4 KiB persist_async 8 KiB apart, mapping %zu MiB;\n"
			"  per round: both IN_SYNC, the writer unpaced (its maximum, %d ms), then paced at %.0f %% of it (before, %d ms);\n"
			"  replica 1's target killed, the writer going on for %d ms, restarted: the writer keeps its pace until replica 1\n"
			"  is IN_SYNC again (bound %d ms); min: the cfg resync minimum (none: 0, what the mirror did before it); median of %d round(s)\n",
			CONV_WINDOW, O.resync_size >> 20, O.ms, CONV_SHARE * 100,
			O.ms, CONV_OUTAGE_MS, CONV_DEADLINE_MS, rounds);
	fprintf(Tab, "  %8s %8s %9s %9s %9s %7s %10s %10s %8s %8s\n",
			"rate", "min", "max op/s", "bef op/s", "dur op/s", "dur/bef",
			"in sync ms", "resync ms", "MiB", "not/all");
	for (unsigned ri = 0; ri < O.nresync_rates; ri++) {
		uint64_t rate = O.resync_rates[ri];
		for (int mode = O.quick ? 1 : 0; mode < 2; mode++) {
			bool none = mode == 0;	/* min 0; else the default */
			double v[7][16];
			int nr = 0, nnot = 0, nall = 0;
			uint64_t failed = 0;
			for (int round = 0; round < rounds; round++) {
				struct conv_result r;
				if (conv_round(rate, none, 0, &r)) {
					Failures++;
					continue;
				}
				nall++;
				failed += r.failed;
				if (!r.in_sync) {
					nnot++;
					continue;
				}
				double row[7] = { r.max, r.before, r.during,
					r.during / r.before, r.restart_ms,
					r.syncing_ms, r.mib };
				for (int k = 0; k < 7; k++)
					v[k][nr] = row[k];
				nr++;
			}
			char rs[16], nn[32];
			if (rate)
				snprintf(rs, sizeof(rs), "%llu", (unsigned long long)(rate >> 20));
			else
				snprintf(rs, sizeof(rs), "unlim");
			snprintf(nn, sizeof(nn), "%d/%d", nnot, nall);
			const char *mn = none ? "none" : "default";
			if (failed)
				fprintf(stderr, "pmrep-bench: resync convergence: %" PRIu64 " persists failed (rate %s, min %s)\n",
						failed, rs, mn);
			if (nr == 0) {
				fprintf(Tab, "  %8s %8s %9s %9s %9s %7s %10s %10s %8s %8s\n",
						rs, mn, "-", "-", "-", "-", "-", "-", "-", nn);
				continue;
			}
			double m[7];
			for (int k = 0; k < 7; k++)
				m[k] = median(v[k], nr);
			fprintf(Tab, "  %8s %8s %9.0f %9.0f %9.0f %7.2f %10.0f %10.0f %8.1f %8s\n",
					rs, mn, m[0], m[1], m[2], m[3], m[4], m[5], m[6], nn);
			if (Json) {
				fprintf(Json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\",\"provider\":\"%s\","
						"\"sweep\":\"resync_converge\",\"level\":\"mirror\",\"size\":4096,"
						"\"window\":%d,\"replicas\":2,\"quorum\":1,\"mapping\":%zu,"
						"\"resync_rate_cfg\":%llu,\"resync_min_rate\":\"%s\",\"share\":%.2f",
						Run_id, Date, Host, prov_str(), CONV_WINDOW,
						O.resync_size, (unsigned long long)rate, mn,
						CONV_SHARE);
				static const char *const key[7] = { "max_ops_per_s",
					"before_ops_per_s", "during_ops_per_s",
					"during_before_ratio", "restart_to_in_sync_ms",
					"syncing_to_in_sync_ms", "resync_mib" };
				for (int k = 0; k < 7; k++)
					json_num(Json, key[k], m[k]);
				fprintf(Json, ",\"rounds\":%d,\"rounds_not_in_sync\":%d}\n",
						nr, nnot);
				fflush(Json);
			}
		}
	}
	fprintf(Tab, "  rate: the cfg resync rate, MiB/s; min default: the library's (16 MiB/s, at most half the resync rate); max, bef, dur:\n"
			"  the writer's acknowledged persists/s unpaced, paced before the kill, and paced during the resync (SYNCING to\n"
			"  IN_SYNC); in sync ms: the restart to IN_SYNC; resync ms: SYNCING to IN_SYNC; MiB: what that resync copied;\n"
			"  not/all: rounds in which replica 1 was not IN_SYNC within the bound / rounds\n");
}
