/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep_pipe.c -- the pipe sweep: the pipelined mirror (persist_async,
 * window W, 1 replica) against the raw level at queue depth W and the tcp
 * stream floor, per window, round by round.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_int.h"

#define PIPE_NW MAX_LIST	/* windows at most (O.windows) */

/*
 * The pipeline against the transport it runs on, in every round: the tcp
 * stream floor (4 KiB messages back to back), then per window W the raw
 * level at queue depth W (pmrep_write + flush PERSISTENT, one conn) and a
 * 1-replica mirror of window W with W requests outstanding. Ratios within
 * the round (mirror / raw at the same depth, mirror / tcp-stream, raw /
 * tcp-stream, mirror W / mirror 1), the median [min-max] of the rounds.
 * Figures only: no pass / fail.
 */
void
sweep_pipe(void)
{
	const size_t size = 4096;
	struct raw r;
	struct mirror mi[PIPE_NW];
	unsigned nm = 0, nw = O.nwindows;
	char reply[64];
	memset(&r, 0, sizeof(r));
	memset(mi, 0, sizeof(mi));
	/* the raw level as the mirror runs: TLS when its mirrors have it,
	 * the source a pmem mapping in /dev/shm like the mirror's */
	Raw_tls = O.prov == PMREP_PROVIDER_TCP && !O.mirror_plain;
	Raw_pmem_src = true;
	int rret = O.pipe_raw ? raw_open(&r, size) : 0;
	Raw_tls = Raw_pmem_src = false;
	if (rret) {
		Failures++;
		(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
		return;
	}
	for (; O.pipe_mirror && nm < nw; nm++) {
		struct mirror_extra ex = { .window = O.windows[nm] };
		Mirror_extra = &ex;
		int ret = mirror_open(&mi[nm], 1, PIPE_SIZE, 20 + nm);
		Mirror_extra = NULL;
		if (ret) {
			Failures++;
			goto out;
		}
	}
	int rounds = O.rounds < 64 ? O.rounds : 64;
	double mmib[PIPE_NW][64], mops[PIPE_NW][64], rmib[PIPE_NW][64];
	double q_raw[PIPE_NW][64], q_fl[PIPE_NW][64], q_rfl[PIPE_NW][64];
	double q_w1[PIPE_NW][64], fmib[64];
	struct bench_samples pools[PIPE_NW];
	struct cpu_acc mcpu[PIPE_NW], rcpu[PIPE_NW];
	memset(mcpu, 0, sizeof(mcpu));
	memset(rcpu, 0, sizeof(rcpu));
	unsigned ninit = 0;
	for (; ninit < nw; ninit++)
		if (bench_samples_init(&pools[ninit], SAMPLES_CAP / 4))
			break;
	if (ninit < nw) {
		Failures++;
		goto fini;
	}
	int nfl = 0;
	uint64_t disorder0 = Pipe_disorder;
	for (int round = 0; round < rounds; round++) {
		struct bench_result f = { 0 }, res;
		struct cpu_acc fc;
		bool have_f = O.floor && O.prov == PMREP_PROVIDER_TCP &&
			floor_bw(size, false, &S_floor, &f, &fc);
		if (have_f)
			fmib[nfl++] = f.mib_per_s;
		for (unsigned i = 0; i < nw; i++) {
			unsigned wnd = O.windows[i];
			struct cpu_win cw;
			struct cpu_acc ca;
			rmib[i][round] = NAN;
			if (O.pipe_raw) {
				bench_samples_reset(&S_round);
				cpu_start(&cw);
				if (raw_run(&r, size, wnd, O.ms, &S_round)) {
					Failures++;
					goto fini;
				}
				cpu_stop(&cw, S_round.all_ops, &ca);
				cpu_add(&rcpu[i], &ca);
				bench_summarize(&S_round, &res);
				rmib[i][round] = res.mib_per_s;
			}
			mmib[i][round] = mops[i][round] = NAN;
			q_raw[i][round] = q_fl[i][round] = NAN;
			q_w1[i][round] = NAN;
			q_rfl[i][round] = have_f ? rmib[i][round] / f.mib_per_s : NAN;
			if (!O.pipe_mirror)
				continue;
			bench_samples_reset(&S_round);
			cpu_start(&cw);
			if (pipe_run(&mi[i], size, wnd, WARMUP_MS, O.ms, &S_round,
					NULL)) {
				Failures++;
				goto fini;
			}
			cpu_stop(&cw, S_round.all_ops, &ca);
			cpu_add(&mcpu[i], &ca);
			pool_add(&pools[i], &S_round);
			bench_summarize(&S_round, &res);
			mmib[i][round] = res.mib_per_s;
			mops[i][round] = res.ops_per_s;
			q_raw[i][round] = mmib[i][round] / rmib[i][round];
			q_fl[i][round] = have_f ? mmib[i][round] / f.mib_per_s : NAN;
			q_w1[i][round] = mmib[i][round] / mmib[0][round];
		}
	}
	fprintf(Tab, "\npipe: pipelined mirror, 4 KiB persist_async of ranges 8 KiB apart (no coalescing), 1 replica (%s), W requests outstanding, waiting on the mirror fd;\n"
			"  raw = pmrep_write + flush PERSISTENT at queue depth W on one conn (%s, from a /dev/shm pmem mapping like the mirror's); floor tcp-stream (4 KiB messages back to back); %d round(s) x %d ms;\n"
			"  ratios within a round, median [min-max] of the rounds; tcp-stream floor %.1f MiB/s (median)\n",
			nm ? mi[0].method : "-",
			O.prov != PMREP_PROVIDER_TCP ? "verbs" :
			O.mirror_plain ? "plaintext tcp, as the mirror" :
			"TLS 1.3, as the mirror", rounds, O.ms, median(fmib, nfl));
	fprintf(Tab, "  cpu us/op: user+sys of both processes (bench + server, whose targets serve the mirror) per operation, warm-up included\n");
	fprintf(Tab, "  %3s %10s %11s %8s %8s %10s  %-20s %-20s %-20s %-20s %s\n", "W",
			"MiB/s", "persists/s", "p50us", "p99us", "raw MiB/s",
			"mirror/raw(qd W)", "mirror/tcp-stream", "raw/tcp-stream",
			"mirror W / W 1", "cpu us/op mirror raw");
	for (unsigned i = 0; i < nw; i++) {
		struct bench_result pr;
		bench_summarize(&pools[i], &pr);
		double rm = median(rmib[i], rounds);
		char a[3][48], b[48];
		double *qs[3] = { q_raw[i], q_fl[i], q_rfl[i] };
		for (int k = 0; k < 3; k++) {
			if (isnan(qs[k][0])) {
				snprintf(a[k], sizeof(a[k]), "-");
				continue;
			}
			double med = median(qs[k], rounds);
			snprintf(a[k], sizeof(a[k]), "%.2f [%.2f-%.2f]", med,
					qs[k][0], qs[k][rounds - 1]);
		}
		double w1 = median(q_w1[i], rounds);
		snprintf(b, sizeof(b), "%.2f [%.2f-%.2f]", w1, q_w1[i][0],
				q_w1[i][rounds - 1]);
		double mm = median(mmib[i], rounds), mo = median(mops[i], rounds);
		fprintf(Tab, "  %3u %10.1f %11.0f %8.1f %8.1f %10.1f  %-20s %-20s %-20s %-20s %6.2f %6.2f\n",
				O.windows[i], mm, mo, pr.p50_us, pr.p99_us, rm,
				a[0], a[1], a[2], b, cpu_us_op(&mcpu[i]),
				cpu_us_op(&rcpu[i]));
		if (Json) {
			fprintf(Json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\",\"provider\":\"%s\","
					"\"sweep\":\"pipe\",\"level\":\"mirror\",\"method\":\"%s\",\"size\":%zu,"
					"\"window\":%u,\"qd\":%u,\"replicas\":1",
					Run_id, Date, Host, prov_str(),
					nm ? mi[i].method : "-",
					size, O.windows[i], O.windows[i]);
			json_num(Json, "mib_per_s", mm);
			json_num(Json, "ops_per_s", mo);
			json_num(Json, "p50_us", pr.p50_us);
			json_num(Json, "p99_us", pr.p99_us);
			json_num(Json, "raw_mib_per_s", rm);
			json_num(Json, "floor_mib_per_s", median(fmib, nfl));
			json_num(Json, "ratio_raw", median(q_raw[i], rounds));
			json_num(Json, "ratio_floor", isnan(q_fl[i][0]) ? NAN :
					median(q_fl[i], rounds));
			json_num(Json, "raw_ratio_floor", isnan(q_rfl[i][0]) ? NAN :
					median(q_rfl[i], rounds));
			json_num(Json, "vs_window_1", w1);
			json_num(Json, "cpu_us_op", cpu_us_op(&mcpu[i]));
			json_num(Json, "raw_cpu_us_op", cpu_us_op(&rcpu[i]));
			fprintf(Json, ",\"rounds\":%d}\n", rounds);
			fflush(Json);
		}
	}
	if (Pipe_disorder != disorder0)
		fprintf(Tab, "  NOTE: %llu completion(s) out of submission order\n",
				(unsigned long long)(Pipe_disorder - disorder0));
fini:
	for (unsigned i = 0; i < ninit; i++)
		bench_samples_fini(&pools[i]);
out:
	for (unsigned i = 0; i < nm; i++)
		mirror_close(&mi[i]);
	raw_close(&r);
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
}
