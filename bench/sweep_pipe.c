/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep_pipe.c -- the pipe sweep: the pipelined mirror (persist_async,
 * window W, 1 replica) against the raw level at queue depth W and the tcp
 * stream floor, per window, round by round.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_int.h"

#define PIPE_NW MAX_LIST	/* windows at most (O.windows) */

/* one size's figures: per window, per round */
struct pipe_fig {
	double mmib[PIPE_NW][64], mops[PIPE_NW][64], rmib[PIPE_NW][64];
	double q_raw[PIPE_NW][64], q_fl[PIPE_NW][64], q_rfl[PIPE_NW][64];
	double q_w1[PIPE_NW][64], fmib[64];
	int nfl;
	struct bench_samples pools[PIPE_NW];	/* the mirror's, all rounds */
	struct cpu_acc mcpu[PIPE_NW], rcpu[PIPE_NW];
};

/* one round of one size: the floor, then per window the raw level and
 * the mirror; -1 when a run failed */
static int
pipe_round(struct pipe_fig *g, size_t size, int round, struct raw *r,
		struct mirror *mi)
{
	struct bench_result f = { 0 }, res;
	struct cpu_acc fc;
	bool have_f = O.floor && O.prov == PMREP_PROVIDER_TCP &&
		floor_bw(size, false, &S_floor, &f, &fc);
	if (have_f)
		g->fmib[g->nfl++] = f.mib_per_s;
	for (unsigned i = 0; i < O.nwindows; i++) {
		unsigned wnd = O.windows[i];
		struct cpu_win cw;
		struct cpu_acc ca;
		g->rmib[i][round] = NAN;
		if (O.pipe_raw) {
			bench_samples_reset(&S_round);
			cpu_start(&cw);
			if (raw_run(r, size, wnd, O.ms, &S_round))
				return -1;
			cpu_stop(&cw, S_round.all_ops, &ca);
			cpu_add(&g->rcpu[i], &ca);
			bench_summarize(&S_round, &res);
			g->rmib[i][round] = res.mib_per_s;
		}
		g->mmib[i][round] = g->mops[i][round] = NAN;
		g->q_raw[i][round] = g->q_fl[i][round] = NAN;
		g->q_w1[i][round] = NAN;
		g->q_rfl[i][round] = have_f ? g->rmib[i][round] / f.mib_per_s :
			NAN;
		if (!O.pipe_mirror)
			continue;
		bench_samples_reset(&S_round);
		cpu_start(&cw);
		if (pipe_run(&mi[i], size, wnd, WARMUP_MS, O.ms, &S_round, NULL))
			return -1;
		cpu_stop(&cw, S_round.all_ops, &ca);
		cpu_add(&g->mcpu[i], &ca);
		pool_add(&g->pools[i], &S_round);
		bench_summarize(&S_round, &res);
		g->mmib[i][round] = res.mib_per_s;
		g->mops[i][round] = res.ops_per_s;
		g->q_raw[i][round] = g->mmib[i][round] / g->rmib[i][round];
		g->q_fl[i][round] = have_f ? g->mmib[i][round] / f.mib_per_s : NAN;
		g->q_w1[i][round] = g->mmib[i][round] / g->mmib[0][round];
	}
	return 0;
}

/* one size's rows of the table (its size in the first column when the
 * sweep has more than one) and its JSON lines */
static void
pipe_rows(struct pipe_fig *g, size_t size, int rounds,
		const struct mirror *mi, unsigned nm)
{
	char col[16] = "";
	if (O.npipe_sizes > 1) {
		char sz[16];
		snprintf(col, sizeof(col), "%5s ", size_str(sz, sizeof(sz), size,
				false));
	}
	for (unsigned i = 0; i < O.nwindows; i++) {
		struct bench_result pr;
		bench_summarize(&g->pools[i], &pr);
		double rm = median(g->rmib[i], rounds);
		char a[3][48], b[48];
		double *qs[3] = { g->q_raw[i], g->q_fl[i], g->q_rfl[i] };
		for (int k = 0; k < 3; k++) {
			if (isnan(qs[k][0])) {
				snprintf(a[k], sizeof(a[k]), "-");
				continue;
			}
			double med = median(qs[k], rounds);
			snprintf(a[k], sizeof(a[k]), "%.2f [%.2f-%.2f]", med,
					qs[k][0], qs[k][rounds - 1]);
		}
		double w1 = median(g->q_w1[i], rounds);
		snprintf(b, sizeof(b), "%.2f [%.2f-%.2f]", w1, g->q_w1[i][0],
				g->q_w1[i][rounds - 1]);
		double mm = median(g->mmib[i], rounds);
		double mo = median(g->mops[i], rounds);
		fprintf(Tab, "  %s%3u %10.1f %11.0f %8.1f %8.1f %10.1f  %-20s %-20s %-20s %-20s %6.2f %6.2f\n",
				col, O.windows[i], mm, mo, pr.p50_us, pr.p99_us, rm,
				a[0], a[1], a[2], b, cpu_us_op(&g->mcpu[i]),
				cpu_us_op(&g->rcpu[i]));
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
			json_num(Json, "floor_mib_per_s", median(g->fmib, g->nfl));
			json_num(Json, "ratio_raw", median(g->q_raw[i], rounds));
			json_num(Json, "ratio_floor", isnan(g->q_fl[i][0]) ? NAN :
					median(g->q_fl[i], rounds));
			json_num(Json, "raw_ratio_floor", isnan(g->q_rfl[i][0]) ?
					NAN : median(g->q_rfl[i], rounds));
			json_num(Json, "vs_window_1", w1);
			json_num(Json, "cpu_us_op", cpu_us_op(&g->mcpu[i]));
			json_num(Json, "raw_cpu_us_op", cpu_us_op(&g->rcpu[i]));
			fprintf(Json, ",\"rounds\":%d}\n", rounds);
			fflush(Json);
		}
	}
}

/*
 * The pipeline against the transport it runs on, in every round and for
 * every size S (--pipe-sizes, default 4 KiB): the tcp stream floor (S-byte
 * messages back to back), then per window W the raw level at queue depth
 * W (pmrep_write + flush PERSISTENT, one conn) and a 1-replica mirror of
 * window W with W requests outstanding. Ratios within the round (mirror /
 * raw at the same depth and size, mirror / tcp-stream, raw / tcp-stream,
 * mirror W / mirror 1), the median [min-max] of the rounds. Figures only:
 * no pass / fail.
 */
void
sweep_pipe(void)
{
	size_t max = 0;
	struct raw r;
	struct mirror mi[PIPE_NW];
	struct pipe_fig *figs = NULL;
	unsigned nm = 0, nw = O.nwindows, ns = O.npipe_sizes, ninit = 0;
	char reply[64];
	for (unsigned j = 0; j < ns; j++)
		if (O.pipe_sizes[j] > max)
			max = O.pipe_sizes[j];
	memset(&r, 0, sizeof(r));
	memset(mi, 0, sizeof(mi));
	/* the raw level as the mirror runs: TLS when its mirrors have it,
	 * the source a pmem mapping in /dev/shm like the mirror's */
	Raw_tls = O.prov == PMREP_PROVIDER_TCP && !O.mirror_plain;
	Raw_pmem_src = true;
	int rret = O.pipe_raw ? raw_open(&r, max) : 0;
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
	figs = calloc(ns, sizeof(*figs));
	for (; figs && ninit < ns * nw; ninit++)
		if (bench_samples_init(&figs[ninit / nw].pools[ninit % nw],
				SAMPLES_CAP / 4))
			break;
	if (ninit < ns * nw) {
		Failures++;
		goto fini;
	}
	uint64_t disorder0 = Pipe_disorder;
	for (int round = 0; round < rounds; round++)
		for (unsigned j = 0; j < ns; j++)
			if (pipe_round(&figs[j], O.pipe_sizes[j], round, &r, mi)) {
				Failures++;
				goto fini;
			}
	/* one size: its size and floor in the prose, else a column and a list */
	char what[32] = "S", apart[32] = "2 x S", floor[512] = "";
	size_t off = 0;
	if (ns == 1) {
		size_str(what, sizeof(what), O.pipe_sizes[0], true);
		size_str(apart, sizeof(apart), 2 * O.pipe_sizes[0], true);
		snprintf(floor, sizeof(floor), "%.1f MiB/s",
				median(figs[0].fmib, figs[0].nfl));
	}
	for (unsigned j = 0; ns > 1 && j < ns; j++) {
		char sz[32];
		off += (size_t)snprintf(floor + off, sizeof(floor) - off,
				"%s%s %.1f MiB/s", j ? ", " : "S: ",
				size_str(sz, sizeof(sz), O.pipe_sizes[j], true),
				median(figs[j].fmib, figs[j].nfl));
		if (off >= sizeof(floor))
			break;
	}
	fprintf(Tab, "\npipe: pipelined mirror, %s persist_async of ranges %s apart (no coalescing), 1 replica (%s), W requests outstanding, waiting on the mirror fd;\n"
			"  raw = pmrep_write + flush PERSISTENT at queue depth W on one conn (%s, from a /dev/shm pmem mapping like the mirror's); floor tcp-stream (%s messages back to back); %d round(s) x %d ms;\n"
			"  ratios within a round, median [min-max] of the rounds; tcp-stream floor %s (median)\n",
			what, apart, nm ? mi[0].method : "-",
			O.prov != PMREP_PROVIDER_TCP ? "verbs" :
			O.mirror_plain ? "plaintext tcp, as the mirror" :
			"TLS 1.3, as the mirror", what, rounds, O.ms, floor);
	fprintf(Tab, "  cpu us/op: user+sys of both processes (bench + server, whose targets serve the mirror) per operation, warm-up included\n");
	fprintf(Tab, "  %s%3s %10s %11s %8s %8s %10s  %-20s %-20s %-20s %-20s %s\n",
			ns > 1 ? "    S " : "", "W",
			"MiB/s", "persists/s", "p50us", "p99us", "raw MiB/s",
			"mirror/raw(qd W)", "mirror/tcp-stream", "raw/tcp-stream",
			"mirror W / W 1", "cpu us/op mirror raw");
	for (unsigned j = 0; j < ns; j++)
		pipe_rows(&figs[j], O.pipe_sizes[j], rounds, mi, nm);
	if (Pipe_disorder != disorder0)
		fprintf(Tab, "  NOTE: %llu completion(s) out of submission order\n",
				(unsigned long long)(Pipe_disorder - disorder0));
fini:
	for (unsigned k = 0; k < ninit; k++)
		bench_samples_fini(&figs[k / nw].pools[k % nw]);
	free(figs);
out:
	for (unsigned i = 0; i < nm; i++)
		mirror_close(&mi[i]);
	raw_close(&r);
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
}
