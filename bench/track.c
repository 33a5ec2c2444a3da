/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * track.c -- pmrep-bench's track sweep: what per-step position tracking
 * (pmrep_mirror_cfg_set_persist_seq, docs/PROTOCOL.md "Position") costs
 * against tracking off, at the points where its cost has a bound:
 *   - 4 KiB pmrep_mirror_persist_async at windows 16 and 64 (MiB/s; ranges
 *     8 KiB apart, no coalescing: the pipe sweep's pipe_run);
 *   - 64 B and 4 KiB pmrep_mirror_persist one at a time, window 1 (p50).
 * One replica, a target in the bench's server; six mirrors open at once
 * (tracking off and on, windows 1, 16, 64). In every round each point is
 * measured off and on back to back, the order swapped every round (and
 * between points), and on / off taken within the round; the table gives
 * the median of the rounds' values and ratios with their [min-max], and
 * every round's ratio, and /proc/loadavg before and after. Figures only:
 * no pass / fail.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define TRACK_MAP (4u << 20)	/* each mirror's mapping */
#define TRACK_ROUNDS_MAX 64
#define TRACK_SAMPLES (1u << 21)

/* the points: size, window (0: one persist at a time, window 1), what */
static const struct {
	size_t size;
	unsigned window;
	unsigned mirror;	/* index into the mirrors of one mode */
	const char *name;
} Pt[] = {
	{ 4096, 16, 1, "4 KiB W 16 MiB/s" },
	{ 4096, 64, 2, "4 KiB W 64 MiB/s" },
	{ 64, 0, 0, "64 B W 1 p50 us" },
	{ 4096, 0, 0, "4 KiB W 1 p50 us" },
};
#define NPT (sizeof(Pt) / sizeof(Pt[0]))
static const unsigned Windows[3] = { 1, 16, 64 };

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* median, min and max of v[0..n) (v is left as it was) */
static double
stats(const double *v, int n, double *lo, double *hi)
{
	double s[TRACK_ROUNDS_MAX];
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	*lo = s[0];
	*hi = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void
loadavg(char *buf, size_t size)
{
	FILE *f = fopen("/proc/loadavg", "r");
	if (f == NULL || fgets(buf, (int)size, f) == NULL)
		snprintf(buf, size, "?");
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	/* the three averages only */
	char *p = buf;
	for (int i = 0; i < 3 && p; i++)
		p = strchr(p + 1, ' ');
	if (p)
		*p = '\0';
}

int
bench_sweep_track(const struct bench_track_args *a)
{
	struct bench_mirror *m[2][3] = { { NULL } };
	struct bench_samples s;
	/* [point][mode][round]: MiB/s or p50 µs; CPU µs per persist */
	static double v[NPT][2][TRACK_ROUNDS_MAX], cpu[NPT][2][TRACK_ROUNDS_MAX];
	static double q[NPT][TRACK_ROUNDS_MAX];
	int rounds = a->rounds < TRACK_ROUNDS_MAX ? a->rounds : TRACK_ROUNDS_MAX;
	int failed = 0;
	char load0[64], load1[64];
	loadavg(load0, sizeof(load0));
	if (bench_samples_init(&s, TRACK_SAMPLES))
		return 1;
	for (int mode = 0; mode < 2; mode++)
		for (int i = 0; i < 3; i++)
			if (bench_mirror_open(&m[mode][i], TRACK_MAP, Windows[i],
					mode == 1)) {
				fprintf(a->tab, "\ntrack: not measured (a mirror of window %u, tracking %s, could not be made)\n",
						Windows[i], mode ? "on" : "off");
				failed = 1;
				goto out;
			}
	for (int r = 0; r < rounds; r++) {
		for (unsigned p = 0; p < NPT; p++) {
			for (int j = 0; j < 2; j++) {
				int mode = (int)((j + r + p) % 2);
				struct bench_result res;
				bench_samples_reset(&s);
				if (bench_mirror_run(m[mode][Pt[p].mirror],
						Pt[p].size, Pt[p].window, a->ms, &s,
						&cpu[p][mode][r])) {
					failed = 1;
					goto out;
				}
				bench_summarize(&s, &res);
				v[p][mode][r] = Pt[p].window ? res.mib_per_s :
					res.p50_us;
			}
			q[p][r] = v[p][1][r] / v[p][0][r];
		}
	}
	loadavg(load1, sizeof(load1));
	fprintf(a->tab, "\ntrack: position tracking (pmrep_mirror_cfg_set_persist_seq) on against off, 1 replica, %s%s;\n"
			"  off: %s, on: %s; %d round(s) x %d ms, off and on alternated in every round (order swapped each round);\n"
			"  on/off within a round, median [min-max] of the rounds; cost: 1 - on/off (MiB/s), on/off - 1 (p50);\n"
			"  cpu us/op: user+sys of both processes per persist (medians); load average %s before, %s after\n",
			a->provider, a->tls ? " inside TLS 1.3" : a->provider[0] == 't' ?
			" plaintext" : "", bench_mirror_method(m[0][0]),
			bench_mirror_method(m[1][0]), rounds, a->ms, load0, load1);
	fprintf(a->tab, "  %-18s %10s %10s  %-20s %7s  %-13s %s\n", "point", "off",
			"on", "on/off", "cost", "cpu off on", "every round's on/off");
	for (unsigned p = 0; p < NPT; p++) {
		double lo, hi, l2, h2;
		double off = stats(v[p][0], rounds, &lo, &hi);
		double on = stats(v[p][1], rounds, &lo, &hi);
		double med = stats(q[p], rounds, &lo, &hi);
		double coff = stats(cpu[p][0], rounds, &l2, &h2);
		double con = stats(cpu[p][1], rounds, &l2, &h2);
		double cost = Pt[p].window ? 1 - med : med - 1;
		if (isnan(coff) || isnan(con))	/* not measured: JSON 0 */
			coff = con = 0;
		char rq[3 * 6 * TRACK_ROUNDS_MAX] = "";
		size_t n = 0;
		for (int r = 0; r < rounds && n < sizeof(rq) - 8; r++)
			n += (size_t)snprintf(rq + n, sizeof(rq) - n, "%s%.2f",
					r ? " " : "", q[p][r]);
		fprintf(a->tab, "  %-18s %10.1f %10.1f  %.2f [%.2f-%.2f]     %+6.0f%%  %6.1f %6.1f  %s\n",
				Pt[p].name, off, on, med, lo, hi, cost * 100, coff,
				con, rq);
		if (a->json) {
			fprintf(a->json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\",\"provider\":\"%s\","
					"\"sweep\":\"track\",\"tls\":%s,\"what\":\"%s\",\"size\":%zu,\"window\":%u,"
					"\"off\":%.2f,\"on\":%.2f,\"ratio\":%.4f,\"ratio_min\":%.4f,\"ratio_max\":%.4f,"
					"\"cpu_us_op_off\":%.2f,\"cpu_us_op_on\":%.2f,\"rounds\":%d,"
					"\"load_before\":\"%s\",\"load_after\":\"%s\"}\n",
					a->run_id, a->date, a->host, a->provider,
					a->tls ? "true" : "false",
					Pt[p].window ? "mib_per_s" : "p50_us", Pt[p].size,
					Pt[p].window ? Pt[p].window : 1, off, on, med,
					lo, hi, coff, con, rounds, load0, load1);
			fflush(a->json);
		}
	}
out:
	for (int mode = 0; mode < 2; mode++)
		for (int i = 0; i < 3; i++)
			bench_mirror_close(&m[mode][i]);
	bench_samples_fini(&s);
	return failed;
}
