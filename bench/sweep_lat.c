/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep_lat.c -- the lat, bw and rep sweeps: every point measured in
 * rounds against its floor, the ratio taken within a round
 * (point_measure); the raw level's latency against size and throughput
 * against queue depth, the mirror's latency (and its local persist's
 * alone), both against the replica count (rep_rounds); and the librpma
 * comparison, a program of its own kept running beside the raw level's
 * latency sweep.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_int.h"

/* -------------------------------------------------------- librpma peer */

/* the comparison program, kept running: "size ms" in, one result line out */
static FILE *Rpma_in, *Rpma_out;
static pid_t Rpma_pid;

static bool
librpma_start(void)
{
	int in[2], out[2];
	if (O.librpma == NULL || pipe(in) || pipe(out))
		return false;
	Rpma_pid = fork();
	if (Rpma_pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(O.librpma, O.librpma, "--addr", O.addr, "--wait",
				O.poll ? "poll" : "block", "--stdin", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	Rpma_in = fdopen(in[1], "w");
	Rpma_out = fdopen(out[0], "r");
	char line[256];
	if (fgets(line, sizeof(line), Rpma_out) == NULL ||
			strncmp(line, "READY", 5) != 0) {
		fprintf(stderr, "pmrep-bench: %s did not start; no librpma comparison\n",
				O.librpma);
		fclose(Rpma_in);
		fclose(Rpma_out);
		Rpma_in = Rpma_out = NULL;
		reap(Rpma_pid, 5000);
		return false;
	}
	return true;
}

static bool
librpma_run(size_t size, int ms, struct bench_result *r)
{
	char line[256];
	memset(r, 0, sizeof(*r));
	if (Rpma_in == NULL)
		return false;
	fprintf(Rpma_in, "%zu %d\n", size, ms);
	fflush(Rpma_in);
	if (fgets(line, sizeof(line), Rpma_out) == NULL)
		return false;
	unsigned long long ops;
	if (sscanf(line, "OK %llu %lf %lf %lf %lf %lf", &ops, &r->secs,
			&r->p50_us, &r->p99_us, &r->p999_us, &r->mean_us) != 6) {
		fprintf(stderr, "pmrep-bench: librpma: %s", line);
		return false;
	}
	r->ops = ops;
	r->ops_per_s = r->secs > 0 ? (double)ops / r->secs : 0;
	r->mib_per_s = r->ops_per_s * (double)size / (1 << 20);
	r->valid = true;
	return true;
}

static void
librpma_stop(void)
{
	if (Rpma_in == NULL)
		return;
	fclose(Rpma_in);
	fclose(Rpma_out);
	Rpma_in = Rpma_out = NULL;
	reap(Rpma_pid, 5000);
}

/* ------------------------------------------------------------- sweeps */

typedef int measure_fn(void *arg, size_t size, unsigned qd,
		struct bench_samples *s);

/*
 * measure one point in O.rounds rounds, each "floor, then pmrep"; the
 * ratio is taken within each round. bw: throughput ratio (pmrep / floor),
 * else p50 ratio (pmrep / floor).
 */
/* measured in every round right after pmrep when set: librpma's latency */
static bool Cmp_librpma;
static struct bench_result Cmp_result;

static int
point_measure(struct point *p, measure_fn *fn, void *arg, bool bw, bool floor)
{
	double ratios[64], vs_cmp[64], cmp_floor[64], cpu_ratios[64];
	int nr = 0, nc = 0, ncf = 0, ncr = 0;
	bench_samples_reset(&S_floor);
	memset(&Cmp_result, 0, sizeof(Cmp_result));
	double fp50[64], fmib[64], fp99[64];
	int nf = 0;
	bench_samples_reset(&S_pool);
	p->ratio = p->ratio_min = p->ratio_max = NAN;
	p->vs1 = p->vs_librpma = NAN;
	memset(&p->cpu, 0, sizeof(p->cpu));
	memset(&p->fcpu, 0, sizeof(p->fcpu));
	p->cpu_ratio = p->cpu_ratio_min = p->cpu_ratio_max = NAN;
	/* the floor waits the way the measured side does */
	bool spin = O.poll && !p->fd_wait;
	p->floor_name = floor && Have_floor ? floor_name(bw, spin) : NULL;
	p->ratio_kind = p->floor_name ? (bw ? "bw" : "p50") : NULL;
	memset(&p->f, 0, sizeof(p->f));
	for (int round = 0; round < O.rounds && round < 64; round++) {
		struct bench_result f = { 0 }, r;
		struct cpu_acc fc = { 0 }, rc;
		struct cpu_win w;
		bool have_f = false;
		if (p->floor_name)
			have_f = bw ? floor_bw(p->size, spin, &S_floor, &f, &fc) :
				floor_lat(p->size, spin, &S_floor, &f, &fc);
		bench_samples_reset(&S_round);
		cpu_start(&w);
		if (fn(arg, p->size, p->qd, &S_round)) {
			Failures++;
			return -1;
		}
		cpu_stop(&w, S_round.all_ops, &rc);
		cpu_add(&p->cpu, &rc);
		if (have_f)
			cpu_add(&p->fcpu, &fc);
		if (have_f && rc.ops && fc.ops)
			cpu_ratios[ncr++] = cpu_us_op(&rc) / cpu_us_op(&fc);
		pool_add(&S_pool, &S_round);
		bench_summarize(&S_round, &r);
		struct bench_result c;
		if (Cmp_librpma && r.valid && librpma_run(p->size, O.ms, &c)) {
			vs_cmp[nc++] = r.p50_us / c.p50_us;
			if (have_f)
				cmp_floor[ncf++] = c.p50_us / f.p50_us;
			if (!Cmp_result.valid || c.p50_us < Cmp_result.p50_us)
				Cmp_result = c;	/* kept: its best round */
		}
		if (have_f && r.valid) {
			fp50[nf] = f.p50_us;
			fp99[nf] = f.p99_us;
			fmib[nf++] = f.mib_per_s;
			ratios[nr++] = bw ? r.mib_per_s / f.mib_per_s :
				r.p50_us / f.p50_us;
		}
	}
	bench_summarize(&S_pool, &p->r);
	if (nc > 0) {
		p->vs_librpma = median(vs_cmp, nc);
		/* librpma's own ratio to the floor, round by round */
		Cmp_result.ops_per_s = ncf > 0 ? median(cmp_floor, ncf) : NAN;
	}
	if (nr > 0) {
		p->f.valid = true;
		p->f.p50_us = median(fp50, nf);
		p->f.p99_us = median(fp99, nf);
		p->f.mib_per_s = median(fmib, nf);
		p->ratio = median(ratios, nr);
		p->ratio_min = ratios[0];
		p->ratio_max = ratios[nr - 1];
		if (ncr > 0) {
			p->cpu_ratio = median(cpu_ratios, ncr);
			p->cpu_ratio_min = cpu_ratios[0];
			p->cpu_ratio_max = cpu_ratios[ncr - 1];
		}
	} else if (p->floor_name) {
		fprintf(stderr, "pmrep-bench: no floor for %s %zu B\n",
				p->sweep, p->size);
		p->floor_name = NULL;
		memset(&p->fcpu, 0, sizeof(p->fcpu));
	}
	return 0;
}

static int
m_raw(void *arg, size_t size, unsigned qd, struct bench_samples *s)
{
	return raw_run(arg, size, qd, O.ms, s);
}

static int
m_mirror(void *arg, size_t size, unsigned qd, struct bench_samples *s)
{
	(void) qd;
	return mirror_run(arg, size, O.ms, false, s);
}

static int
m_local(void *arg, size_t size, unsigned qd, struct bench_samples *s)
{
	(void) qd;
	return mirror_run(arg, size, O.ms, true, s);
}

static int
m_handoff(void *arg, size_t size, unsigned qd, struct bench_samples *s)
{
	(void) arg;
	(void) qd;
	return floor_tcp_handoff(&Floor, size, O.ms, O.poll, s);
}

static int
m_fan(void *arg, size_t size, unsigned qd, struct bench_samples *s)
{
	(void) qd;
	return fan_run(arg, size, O.ms, s);
}

void
sweep_raw(void)
{
	size_t max = 64;
	for (unsigned i = 0; i < O.nsizes; i++)
		if (O.sizes[i] > max)
			max = O.sizes[i];
	for (unsigned i = 0; i < O.nbw_sizes; i++)
		if (O.bw_sizes[i] > max)
			max = O.bw_sizes[i];
	struct raw r;
	if (raw_open(&r, max)) {
		Failures++;
		return;
	}
	bool rpma = false;
	if (O.sweep_lat) {
		rpma = librpma_start();
		for (unsigned i = 0; i < O.nsizes; i++) {
			struct point p = { .sweep = "lat", .level = "raw",
				.method = raw_method(&r), .size = O.sizes[i],
				.qd = 1, .replicas = 1 };
			Cmp_librpma = rpma;
			if (point_measure(&p, m_raw, &r, false, O.floor)) {
				Cmp_librpma = false;
				continue;
			}
			Cmp_librpma = false;
			emit(&p);
			if (O.handoff && Have_floor && O.prov == PMREP_PROVIDER_TCP) {
				struct point h = { .sweep = "lat", .level = "handoff",
					.method = O.poll ? "thread-spin" : "thread",
					.size = O.sizes[i],
					.qd = 1, .replicas = 0 };
				if (point_measure(&h, m_handoff, NULL, false, true) == 0)
					emit(&h);
			}
			if (rpma && Cmp_result.valid) {
				/* librpma: its best round's latency; its ratio
				 * to the floor: the median of its rounds */
				struct point q = p;
				q.level = "librpma";
				double ratio = Cmp_result.ops_per_s;
				q.r = Cmp_result;
				q.r.ops_per_s = q.r.secs > 0 ?
					(double)q.r.ops / q.r.secs : 0;
				q.vs_librpma = NAN;
				q.ratio = q.ratio_min = q.ratio_max = ratio;
				/* another process: its CPU is not measured */
				memset(&q.cpu, 0, sizeof(q.cpu));
				q.cpu_ratio = q.cpu_ratio_min = q.cpu_ratio_max = NAN;
				if (isnan(ratio))
					q.floor_name = NULL;
				emit(&q);
			}
		}
		librpma_stop();
	}
	if (O.sweep_bw) {
		for (unsigned j = 0; j < O.nbw_sizes; j++)
			for (unsigned i = 0; i < O.nqds; i++) {
				struct point p = { .sweep = "bw", .level = "raw",
					.method = raw_method(&r),
					.size = O.bw_sizes[j], .qd = O.qds[i],
					.replicas = 1 };
				if (point_measure(&p, m_raw, &r, true, O.floor) == 0)
					emit(&p);
			}
	}
	raw_close(&r);
	char reply[64];
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
}

void
sweep_mirror_lat(void)
{
	struct mirror mi;
	size_t msize = MIRROR_SIZE;
	for (unsigned i = 0; i < O.nsizes; i++)
		while (O.sizes[i] * 2 > msize)
			msize *= 2;
	if (mirror_open(&mi, 1, msize, 0)) {
		Failures++;
		return;
	}
	for (unsigned i = 0; i < O.nsizes; i++) {
		struct point p = { .sweep = "lat", .level = "mirror",
			.method = mi.method, .size = O.sizes[i], .qd = 1,
			.replicas = 1, .fd_wait = true };
		if (point_measure(&p, m_mirror, &mi, false, O.floor) == 0)
			emit(&p);
		/* the local part of a persist on its own (no floor): the mapping's
		 * persist function -- page (msync, none for a file in memory) or
		 * cpu (cache flushes) */
		struct point l = { .sweep = "lat", .level = "local",
			.method = "page", .size = O.sizes[i], .qd = 1,
			.replicas = 0 };
		if (pmrep_pmem_get_granularity(mi.pmem) != PMREP_PMEM_GRANULARITY_PAGE)
			l.method = "cpu";
		if (point_measure(&l, m_local, &mi, false, false) == 0)
			emit(&l);
	}
	mirror_close(&mi);
	char reply[64];
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
}

/* one replica count of the replica sweep */
struct rep_item {
	measure_fn *fn;
	void *arg;
	const char *method;
	unsigned nrep;
	bool fd_wait;		/* the mirror: waits on fds */
};

/*
 * rounds alternate the replica counts too: each round measures every
 * count (each against its floor), and the ratio to one replica is taken
 * within the round
 */
static void
rep_rounds(const char *level, struct rep_item *it, unsigned n)
{
	double p50s[MAX_LIST][64], fr[MAX_LIST][64], cr[MAX_LIST][64];
	struct cpu_acc cpu[MAX_LIST], fcpu[MAX_LIST];
	struct point pts[MAX_LIST];
	struct bench_samples pools[MAX_LIST];
	unsigned ninit = 0;
	bool ok = true;
	for (unsigned i = 0; i < n; i++) {
		pts[i] = (struct point){ .sweep = "rep", .level = level,
			.method = it[i].method, .size = O.rep_size, .qd = 1,
			.replicas = it[i].nrep, .fd_wait = it[i].fd_wait };
		memset(&cpu[i], 0, sizeof(cpu[i]));
		memset(&fcpu[i], 0, sizeof(fcpu[i]));
		if (bench_samples_init(&pools[i], SAMPLES_CAP / 4) == 0)
			ninit++;
		else
			ok = false;
	}
	int rounds = O.rounds < 64 ? O.rounds : 64;
	O.rounds = 1;
	for (int round = 0; ok && round < rounds; round++) {
		for (unsigned i = 0; ok && i < n; i++) {
			if (point_measure(&pts[i], it[i].fn, it[i].arg, false,
					O.floor)) {
				ok = false;
				break;
			}
			p50s[i][round] = pts[i].r.p50_us;
			fr[i][round] = pts[i].ratio;
			cr[i][round] = pts[i].cpu_ratio;
			cpu_add(&cpu[i], &pts[i].cpu);
			cpu_add(&fcpu[i], &pts[i].fcpu);
			pool_add(&pools[i], &S_pool);
		}
	}
	O.rounds = rounds;
	for (unsigned i = 0; ok && i < n; i++) {
		struct point *p = &pts[i];
		bench_summarize(&pools[i], &p->r);
		double v[64], f[64], c[64];
		int k = 0, kf = 0, kc = 0;
		for (int r = 0; r < rounds; r++) {
			v[k++] = p50s[i][r] / p50s[0][r];
			if (!isnan(fr[i][r]))
				f[kf++] = fr[i][r];
			if (!isnan(cr[i][r]))
				c[kc++] = cr[i][r];
		}
		p->cpu = cpu[i];
		p->fcpu = fcpu[i];
		p->cpu_ratio = p->cpu_ratio_min = p->cpu_ratio_max = NAN;
		if (kc > 0) {
			p->cpu_ratio = median(c, kc);
			p->cpu_ratio_min = c[0];
			p->cpu_ratio_max = c[kc - 1];
		}
		p->vs1 = pts[0].replicas == 1 ? median(v, k) : NAN;
		p->ratio = p->ratio_min = p->ratio_max = NAN;
		if (kf > 0) {
			p->ratio = median(f, kf);
			p->ratio_min = f[0];
			p->ratio_max = f[kf - 1];
		}
		emit(p);
	}
	for (unsigned i = 0; i < ninit; i++)
		bench_samples_fini(&pools[i]);
}

/* the raw level fanned out: write+flush to k connections at once */
void
sweep_replicas_raw(void)
{
	struct raw r[MAX_RAW];
	unsigned max = 0, nr = 0;
	for (unsigned i = 0; i < O.nreps; i++)
		if (O.reps[i] > max)
			max = O.reps[i];
	bool ok = true;
	for (; nr < max && ok; nr++)
		if (raw_open(&r[nr], O.rep_size))
			ok = false;
	if (!ok) {
		nr--;
		Failures++;
	} else {
		struct fan fans[MAX_LIST];
		struct rep_item it[MAX_LIST];
		for (unsigned i = 0; i < O.nreps; i++) {
			fans[i] = (struct fan){ r, O.reps[i] };
			it[i] = (struct rep_item){ m_fan, &fans[i],
				raw_method(&r[0]), O.reps[i], false };
		}
		rep_rounds("raw", it, O.nreps);
	}
	for (unsigned i = 0; i < nr; i++)
		raw_close(&r[i]);
	char reply[64];
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
}

void
sweep_replicas(void)
{
	struct mirror mi[MAX_LIST];
	unsigned n = 0;
	bool ok = true;
	for (unsigned i = 0; i < O.nreps && ok; i++) {
		if (mirror_open(&mi[n], O.reps[i], MIRROR_REP_SIZE, 1 + i)) {
			ok = false;
			Failures++;
		} else {
			n++;
		}
	}
	if (ok) {
		struct rep_item it[MAX_LIST];
		for (unsigned i = 0; i < n; i++)
			it[i] = (struct rep_item){ m_mirror, &mi[i], mi[i].method,
				mi[i].nrep, true };
		rep_rounds("mirror", it, n);
	}
	for (unsigned i = 0; i < n; i++)
		mirror_close(&mi[i]);
	char reply[64];
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
}
