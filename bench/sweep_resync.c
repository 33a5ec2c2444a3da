/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep_resync.c -- the resync sweep: per cfg resync rate, a replica's
 * target killed while every slot of the mapping is written, then restarted
 * with the file it left: the foreground's persists while the mirror
 * resyncs it against before, the reconnect time, the resync's time and
 * rate.
 */
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench_int.h"

/* ------------------------------ persists during a resync, reconnect time */

#define RESYNC_WINDOW 16
#define RESYNC_BACKOFF_MIN_MS 10
#define RESYNC_BACKOFF_MAX_MS 50
#define RESYNC_DEADLINE_MS 20000

/* poll the mirror until every replica is IN_SYNC (taking its events),
 * for up to `ms`; 0 when they are */
int
wait_all_in_sync(struct mirror *mi, int ms)
{
	int fd = -1;
	unsigned n = 0;
	(void) pmrep_mirror_get_fd(mi->m, &fd);
	(void) pmrep_mirror_get_replica_count(mi->m, &n);
	uint64_t until = bench_now_ns() + (uint64_t)ms * 1000000u;
	for (;;) {
		struct pmrep_mirror_completion c[4];
		struct pmrep_mirror_event ev;
		int k = 0;
		(void) pmrep_mirror_poll(mi->m, c, 4, &k);
		while (pmrep_mirror_get_event(mi->m, &ev) == 0)
			;
		bool all = true;
		for (unsigned i = 0; i < n; i++) {
			struct pmrep_replica_status st;
			if (pmrep_mirror_get_replica_status(mi->m, i, &st) ||
					st.state != PMREP_REPLICA_IN_SYNC)
				all = false;
		}
		if (all)
			return 0;
		if (bench_now_ns() > until)
			return -1;
		struct pollfd p = { fd, POLLIN, 0 };
		(void) poll(&p, 1, 10);
	}
}

struct resync_round {
	struct bench_result before, during;
	double before_ops, during_ops;	/* persists/s */
	double reconnect_ms;	/* target restarted -> SYNCING event */
	double resync_ms;	/* SYNCING -> IN_SYNC events */
	double total_ms;	/* target restarted -> IN_SYNC */
	double bytes;		/* resync_total (status, last seen) */
	double rate_status;	/* B/s: status resync_rate, last seen */
	double rate_events;	/* B/s: bytes / resync_ms */
	double outage_mib;	/* bytes written while it was down */
};

/*
 * One round at cfg resync rate `rate`: two targets in processes of their
 * own, quorum 1 of 2, window 16, back-off 10..50 ms; both IN_SYNC, then
 * the baseline run (O.ms); replica 1's process killed (SIGKILL), every
 * 8 KiB-strided slot of the mapping persisted once (so every region is
 * out of sync for it), its process restarted on the same port with the
 * file it left; the foreground goes on at once until the mirror's own
 * thread has reconnected and resynced it (its IN_SYNC event).
 */
static int
resync_round(uint64_t rate, struct bench_samples *before,
		struct bench_samples *during, struct resync_round *rr,
		const char **method)
{
	const size_t size = 4096, msize = O.resync_size;
	struct child_tgt ct[2];
	struct mirror mi;
	int ret = -1;
	memset(rr, 0, sizeof(*rr));
	bool ok = child_tgt_start(&ct[0], 0, msize) == 0;
	ok = ok && child_tgt_start(&ct[1], 1, msize) == 0;
	char ports[48];
	snprintf(ports, sizeof(ports), " %s %s", ct[0].port, ct[1].port);
	struct mirror_extra ex = { .window = RESYNC_WINDOW, .quorum = 1,
		.set_max_lag = true, .max_lag = QUORUM_MAX_LAG, .ports = ports,
		.backoff_min_ms = RESYNC_BACKOFF_MIN_MS,
		.backoff_max_ms = RESYNC_BACKOFF_MAX_MS, .resync_rate = rate };
	Mirror_extra = &ex;
	ok = ok && mirror_open(&mi, 2, msize, 40) == 0;
	Mirror_extra = NULL;
	if (!ok)
		goto end;
	*method = mi.method;
	if (wait_all_in_sync(&mi, RESYNC_DEADLINE_MS)) {
		fprintf(stderr, "pmrep-bench: resync: the replicas not both IN_SYNC after creation\n");
		goto close;
	}
	bench_samples_reset(before);
	if (pipe_run(&mi, size, RESYNC_WINDOW, WARMUP_MS, O.ms, before, NULL))
		goto close;
	bench_summarize(before, &rr->before);
	rr->before_ops = rr->before.ops_per_s;

	/* the outage: killed, every slot written once */
	kill(ct[1].pid, SIGKILL);
	reap(ct[1].pid, 5000);
	ct[1].pid = -1;
	close(ct[1].in_fd);
	ct[1].in_fd = -1;
	struct pipe_watch wo = { .idx = 1, .events = true,
		.nreq = msize / (2 * size) };
	bench_samples_reset(&S_round);
	if (pipe_run(&mi, size, RESYNC_WINDOW, 0, RESYNC_DEADLINE_MS,
			&S_round, &wo))
		goto close;
	rr->outage_mib = (double)(wo.nreq * size) / (1 << 20);
	if (wo.t_failed == 0) {
		/* its failure may come after the last completion */
		uint64_t until = bench_now_ns() + 5000000000ull;
		struct pmrep_replica_status st;
		while (bench_now_ns() < until &&
				pmrep_mirror_get_replica_status(mi.m, 1, &st) == 0 &&
				st.state != PMREP_REPLICA_FAILED)
			usleep(1000);
		pipe_events(&mi, &wo);
	}

	/* the restart: same port, the file it left */
	char port[16];
	snprintf(port, sizeof(port), "%s", ct[1].port);
	if (child_tgt_start_at(&ct[1], 1, msize, port)) {
		fprintf(stderr, "pmrep-bench: resync: the target's restart on port %s failed\n",
				port);
		goto close;
	}
	struct pipe_watch w = { .idx = 1, .events = true,
		.stop_in_sync = true, .during = during };
	bench_samples_reset(during);
	bench_samples_reset(&S_round);
	uint64_t t_restart = bench_now_ns();
	if (pipe_run(&mi, size, RESYNC_WINDOW, 0, RESYNC_DEADLINE_MS,
			&S_round, &w))
		goto close;
	if (w.t_syncing == 0 || w.t_in_sync == 0) {
		fprintf(stderr, "pmrep-bench: resync: replica 1 %s within %d ms of its restart\n",
				w.t_syncing ? "not IN_SYNC" : "not SYNCING",
				RESYNC_DEADLINE_MS);
		struct pmrep_replica_status st;
		if (pmrep_mirror_get_replica_status(mi.m, 1, &st) == 0)
			fprintf(stderr, "pmrep-bench: resync: replica 1 then: state %d, lag %" PRIu64
					" B, resync done %" PRIu64 " of %" PRIu64 " B, rate %" PRIu64
					" B/s, eta %" PRId64 " ms, mapping %zu B, last error %d\n",
					(int)st.state, st.lag_bytes, st.resync_done,
					st.resync_total, st.resync_rate, st.resync_eta_ms,
					msize, st.last_error);
		goto close;
	}
	rr->reconnect_ms = (double)(w.t_syncing - t_restart) / 1e6;
	rr->resync_ms = (double)(w.t_in_sync - w.t_syncing) / 1e6;
	rr->total_ms = (double)(w.t_in_sync - t_restart) / 1e6;
	rr->bytes = (double)w.resync_total;
	rr->rate_status = (double)w.resync_rate;
	rr->rate_events = rr->resync_ms > 0 ?
		rr->bytes / (rr->resync_ms / 1e3) : NAN;
	during->elapsed_ns = w.t_in_sync - w.t_syncing;
	bench_summarize(during, &rr->during);
	rr->during_ops = (double)during->ops / (rr->resync_ms / 1e3);
	ret = 0;
close:
	mirror_close(&mi);
end:
	child_tgt_end(&ct[0]);
	child_tgt_end(&ct[1]);
	return ret;
}

/*
 * Per cfg resync rate: resync_round O.rounds times; reported, the
 * median of the rounds: the foreground's persist p50 / p99 and
 * persists/s during the resync (persists submitted between the SYNCING
 * and IN_SYNC events) against the baseline of the same round (both in
 * sync, before the kill), their ratio within the round; apart, the
 * reconnect time (restart -> SYNCING), the resync's time and bytes and
 * its rate (the status's resync_rate, and bytes / time between the
 * events). Figures only.
 */
void
sweep_resync(void)
{
	int rounds = O.rounds < 16 ? O.rounds : 16;
	struct bench_samples before, during;
	if (bench_samples_init(&before, SAMPLES_CAP / 4) ||
			bench_samples_init(&during, SAMPLES_CAP / 4)) {
		Failures++;
		return;
	}
	const char *method = "?";
	fprintf(Tab, "\nresync: quorum 1 of 2, window %d, 4 KiB persist_async 8 KiB apart, mapping %zu MiB, targets in processes of their own;\n"
			"  per round: both IN_SYNC, baseline run (%d ms); replica 1's target killed (SIGKILL), every slot written once (%zu MiB),\n"
			"  restarted on its port with its file; the foreground goes on while the mirror's thread reconnects (back-off %d..%d ms)\n"
			"  and resyncs it; 'during': persists submitted between its SYNCING and IN_SYNC events; median of %d round(s)\n",
			RESYNC_WINDOW, O.resync_size >> 20, O.ms,
			(O.resync_size / 2) >> 20, RESYNC_BACKOFF_MIN_MS,
			RESYNC_BACKOFF_MAX_MS, rounds);
	fprintf(Tab, "  %8s %8s %8s %8s %8s %7s %9s %9s %7s %8s %9s %9s %8s %9s %9s\n",
			"rate", "p50 bef", "p99 bef", "p50 dur", "p99 dur", "p99 x",
			"ops/s bef", "ops/s dur", "n dur", "recon ms", "resync ms",
			"total ms", "MiB", "MiB/s st", "MiB/s ev");
	for (unsigned ri = 0; ri < O.nresync_rates; ri++) {
		uint64_t rate = O.resync_rates[ri];
		double v[15][16];
		int nr = 0;
		for (int round = 0; round < rounds; round++) {
			struct resync_round rr;
			if (resync_round(rate, &before, &during, &rr, &method)) {
				Failures++;
				continue;
			}
			if (!rr.before.valid || !rr.during.valid) {
				fprintf(stderr, "pmrep-bench: resync: no persist %s (rate %llu MiB/s)\n",
						rr.before.valid ? "during the resync" : "before",
						(unsigned long long)(rate >> 20));
				continue;
			}
			double row[15] = { rr.before.p50_us, rr.before.p99_us,
				rr.during.p50_us, rr.during.p99_us,
				rr.during.p99_us / rr.before.p99_us,
				rr.before_ops, rr.during_ops, (double)during.ops,
				rr.reconnect_ms, rr.resync_ms, rr.total_ms,
				rr.bytes / (1 << 20), rr.rate_status / (1 << 20),
				rr.rate_events / (1 << 20),
				rr.during.p50_us / rr.before.p50_us };
			for (int k = 0; k < 15; k++)
				v[k][nr] = row[k];
			nr++;
		}
		char rs[16];
		if (rate)
			snprintf(rs, sizeof(rs), "%llu", (unsigned long long)(rate >> 20));
		else
			snprintf(rs, sizeof(rs), "unlim");
		if (nr == 0) {
			fprintf(Tab, "  %8s not measured\n", rs);
			continue;
		}
		double m[15];
		char x[32];
		for (int k = 0; k < 15; k++)
			m[k] = median(v[k], nr);
		snprintf(x, sizeof(x), "%.2f", m[4]);
		fprintf(Tab, "  %8s %8.1f %8.1f %8.1f %8.1f %7s %9.0f %9.0f %7.0f %8.1f %9.1f %9.1f %8.1f %9.1f %9.1f\n",
				rs, m[0], m[1], m[2], m[3], x, m[5], m[6], m[7],
				m[8], m[9], m[10], m[11], m[12], m[13]);
		if (nr > 1)
			fprintf(Tab, "  %8s p99 during/before over the rounds: [%.2f-%.2f]\n",
					"", v[4][0], v[4][nr - 1]);
		if (Json) {
			fprintf(Json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\",\"provider\":\"%s\","
					"\"sweep\":\"resync\",\"level\":\"mirror\",\"method\":\"%s\",\"size\":4096,"
					"\"window\":%d,\"replicas\":2,\"quorum\":1,\"mapping\":%zu,"
					"\"resync_rate_cfg\":%llu",
					Run_id, Date, Host, prov_str(), method,
					RESYNC_WINDOW, O.resync_size,
					(unsigned long long)rate);
			static const char *const key[15] = { "before_p50_us",
				"before_p99_us", "during_p50_us", "during_p99_us",
				"p99_ratio", "before_ops_per_s", "during_ops_per_s",
				"during_n", "reconnect_ms", "resync_ms", "total_ms",
				"resync_mib", "resync_mib_per_s_status",
				"resync_mib_per_s_events", "p50_ratio" };
			for (int k = 0; k < 15; k++)
				json_num(Json, key[k], m[k]);
			fprintf(Json, ",\"rounds\":%d}\n", nr);
			fflush(Json);
		}
	}
	fprintf(Tab, "  rate: the cfg resync rate, MiB/s; p99 x: p99 during / before (within a round); MiB/s st: the status's resync_rate, ev: MiB / resync ms\n");
	bench_samples_fini(&before);
	bench_samples_fini(&during);
	sweep_resync_converge();
}
