/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep_quorum.c -- the quorum sweep: quorum 1 of 2, window 16, both
 * targets in processes of their own; per round both live, then one frozen
 * by SIGSTOP: the throughput of both, and what the freeze costs until the
 * frozen replica fails.
 */
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>

#include "bench_int.h"

/* ------------------------------------- quorum 1 of 2, one replica frozen */

/* poll the mirror (it has nothing outstanding) until no replica is
 * BEHIND, for up to `ms`; *failed: the replicas found FAILED (a bit each) */
static void
pipe_settle(struct mirror *mi, int ms, unsigned *failed)
{
	int fd = -1;
	unsigned n = 0;
	(void) pmrep_mirror_get_fd(mi->m, &fd);
	(void) pmrep_mirror_get_replica_count(mi->m, &n);
	uint64_t until = bench_now_ns() + (uint64_t)ms * 1000000u;
	for (;;) {
		struct pmrep_mirror_completion c[4];
		int k = 0;
		(void) pmrep_mirror_poll(mi->m, c, 4, &k);
		bool behind = false;
		*failed = 0;
		for (unsigned i = 0; i < n && i < 32; i++) {
			struct pmrep_replica_status st;
			if (pmrep_mirror_get_replica_status(mi->m, i, &st))
				continue;
			if (st.state == PMREP_REPLICA_BEHIND)
				behind = true;
			if (st.state == PMREP_REPLICA_FAILED)
				*failed |= 1u << i;
		}
		if (!behind || bench_now_ns() > until)
			return;
		pipe_events(mi, NULL);	/* or the fd stays readable */
		struct pollfd p = { fd, POLLIN, 0 };
		(void) poll(&p, 1, 10);
	}
}

#define QUORUM_WINDOW 16

/*
 * Quorum 1 of 2, window 16, 4 KiB persists as the pipe sweep, both
 * targets in processes of their own; per round: both live for O.ms,
 * then replica 1's process frozen (SIGSTOP) and the same run at once.
 * The cfg lag is 1 GiB, so what fails the frozen replica is the other
 * pull-ahead rule: PMREP_MIRROR_WINDOW_MAX steps behind. Reported: the
 * persists/s of both runs and their ratio (within the round), and
 * apart, the persists completed between the freeze and the frozen
 * replica's failure (how many, the slowest: none should wait for it),
 * the time to that failure, and the persists/s after it.
 */
void
sweep_quorum(void)
{
	const size_t size = 4096;
	int rounds = O.rounds < 16 ? O.rounds : 16;
	double live[16], frozen[16], ratio[16], after_ops[16];
	double live_p99[16], before_max[16], fail_ms[16], before_n[16];
	int nr = 0;
	bool behind_all = true;
	unsigned still_failed = 0, live_failed = 0;
	int last_err = 0;
	const char *method = "?";
	for (int round = 0; round < rounds; round++) {
		struct child_tgt ct[2];
		struct mirror mi;
		bool ok = child_tgt_start(&ct[0], 0, PIPE_SIZE) == 0;
		ok = ok && child_tgt_start(&ct[1], 1, PIPE_SIZE) == 0;
		char ports[48];
		snprintf(ports, sizeof(ports), " %s %s", ct[0].port, ct[1].port);
		struct mirror_extra ex = { .window = QUORUM_WINDOW, .quorum = 1,
			.set_max_lag = true, .max_lag = QUORUM_MAX_LAG,
			.ports = ports };
		Mirror_extra = &ex;
		ok = ok && mirror_open(&mi, 2, PIPE_SIZE, 30) == 0;
		Mirror_extra = NULL;
		if (ok) {
			struct bench_result rl, rf;
			struct pipe_watch w = { .idx = 1 };
			method = mi.method;
			bench_samples_reset(&S_round);
			ok = pipe_run(&mi, size, QUORUM_WINDOW, WARMUP_MS, O.ms,
					&S_round, NULL) == 0;
			bench_summarize(&S_round, &rl);
			/* a clean start: both caught up, neither failed (a
			 * live replica pulled ahead in the live run: the
			 * freeze would leave none, so the round is skipped) */
			unsigned failed = 0;
			if (ok)
				pipe_settle(&mi, 1000, &failed);
			if (ok && failed) {
				fprintf(stderr, "pmrep-bench: quorum: replica(s) 0x%x FAILED during the live run (both targets live): %s; round skipped\n",
						failed, pmrep_err_msg());
				live_failed++;
				ok = false;
			} else if (ok && kill(ct[1].pid, SIGSTOP) == 0) {
				bench_samples_reset(&S_round);
				ok = pipe_run(&mi, size, QUORUM_WINDOW, 0, O.ms,
						&S_round, &w) == 0;
				bench_summarize(&S_round, &rf);
			} else {
				ok = false;
			}
			if (ok && rl.valid && rf.valid) {
				live[nr] = rl.ops_per_s;
				live_p99[nr] = rl.p99_us;
				frozen[nr] = rf.ops_per_s;
				ratio[nr] = rf.ops_per_s / rl.ops_per_s;
				before_n[nr] = (double)w.before;
				before_max[nr] = (double)w.max_before_ns / 1e3;
				fail_ms[nr] = w.t_failed ?
					(double)(w.t_failed - w.t0) / 1e6 : NAN;
				after_ops[nr] = w.t_failed && w.t_last > w.t_failed ?
					(double)w.after / ((double)(w.t_last -
					w.t_failed) / 1e9) : NAN;
				behind_all = behind_all && w.saw_behind;
				if (w.st.state == PMREP_REPLICA_FAILED)
					still_failed++;
				last_err = w.st.last_error;
				nr++;
			}
			if (!ok && !failed)
				Failures++;
			/* the frozen target killed first: else the mirror's
			 * recovery thread, attaching to it, holds
			 * pmrep_mirror_delete for the cfg timeout (10 s) */
			if (ct[1].pid > 0)
				kill(ct[1].pid, SIGKILL);
			mirror_close(&mi);
		} else {
			Failures++;
		}
		child_tgt_end(&ct[0]);
		child_tgt_end(&ct[1]);
	}
	fprintf(Tab, "\nquorum 1 of 2: window %d, 4 KiB persist_async 8 KiB apart, %d outstanding, targets in processes of their own (%s); per round both live,\n"
			"  then replica 1 frozen (SIGSTOP) and the same run at once; cfg lag %llu MiB (so the %d-step pull-ahead fails it); %d round(s) x %d ms\n",
			QUORUM_WINDOW, QUORUM_WINDOW, method,
			(unsigned long long)(QUORUM_MAX_LAG >> 20),
			PMREP_MIRROR_WINDOW_MAX, nr, O.ms);
	if (live_failed)
		fprintf(Tab, "  NOTE: in %u round(s) a live replica was FAILED during the both-live run (pulled ahead?); those rounds skipped\n",
				live_failed);
	if (nr == 0) {
		fprintf(Tab, "  not measured\n");
		return;
	}
	double rmed = median(ratio, nr), rmin = ratio[0], rmax = ratio[nr - 1];
	double lv = median(live, nr), fz = median(frozen, nr);
	double lp99 = median(live_p99, nr), bn = median(before_n, nr);
	double bmax = median(before_max, nr), fm = median(fail_ms, nr);
	double ao = median(after_ops, nr);
	fprintf(Tab, "  both live:     %10.0f persists/s  (p99 %.1f us)\n", lv, lp99);
	fprintf(Tab, "  one frozen:    %10.0f persists/s  frozen/live %.2f [%.2f-%.2f]\n",
			fz, rmed, rmin, rmax);
	fprintf(Tab, "  freeze -> replica 1 FAILED: %.2f ms; %.0f persists completed meanwhile (BEHIND seen: %s), the slowest %.1f us;\n"
			"  after it: %.0f persists/s; replica 1 at the end: %s, last error %s\n",
			fm, bn, behind_all ? "yes" : "no", bmax, ao,
			still_failed == (unsigned)nr ? "failed" : "not failed in every round",
			last_err ? pmrep_err_to_str(last_err) : "none");
	if (Json) {
		fprintf(Json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\",\"provider\":\"%s\","
				"\"sweep\":\"quorum\",\"level\":\"mirror\",\"method\":\"%s\",\"size\":%zu,"
				"\"window\":%d,\"replicas\":2,\"quorum\":1",
				Run_id, Date, Host, prov_str(), method, size, QUORUM_WINDOW);
		json_num(Json, "live_ops_per_s", lv);
		json_num(Json, "live_p99_us", lp99);
		json_num(Json, "frozen_ops_per_s", fz);
		json_num(Json, "ratio", rmed);
		json_num(Json, "ratio_min", rmin);
		json_num(Json, "ratio_max", rmax);
		json_num(Json, "freeze_to_failed_ms", fm);
		json_num(Json, "persists_before_failed", bn);
		json_num(Json, "max_us_before_failed", bmax);
		json_num(Json, "after_failed_ops_per_s", ao);
		fprintf(Json, ",\"rounds\":%d,\"rounds_live_failed\":%u}\n", nr,
				live_failed);
		fflush(Json);
	}
}
