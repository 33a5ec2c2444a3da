/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_out.c -- pmrep-bench's figures and how they are shown: a
 * measurement's samples and their percentiles (bench.h), the pool and the
 * median of a point's rounds; the run's identity (host, kernel, cpu,
 * date); a point's JSON line, its row of the table and of the CPU table,
 * and the tables' headers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>

#include "bench_int.h"

/* ---------------------------------------------------------------- stats */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int
bench_samples_init(struct bench_samples *s, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->ns = malloc(cap * sizeof(*s->ns));
	if (s->ns == NULL)
		return -1;
	s->cap = cap;
	return 0;
}

void
bench_samples_fini(struct bench_samples *s)
{
	free(s->ns);
	s->ns = NULL;
}

static double
pct(const uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)ceil(p * (double)n) - 1;
	if (i >= n)
		i = n - 1;
	return (double)v[i] / 1000.0;
}

void
bench_summarize(struct bench_samples *s, struct bench_result *r)
{
	memset(r, 0, sizeof(*r));
	if (s->n == 0 || s->elapsed_ns == 0)
		return;
	qsort(s->ns, s->n, sizeof(*s->ns), cmp_u64);
	double sum = 0;
	for (size_t i = 0; i < s->n; i++)
		sum += (double)s->ns[i];
	r->ops = s->ops;
	r->secs = (double)s->elapsed_ns / 1e9;
	r->p50_us = pct(s->ns, s->n, 0.50);
	r->p99_us = pct(s->ns, s->n, 0.99);
	r->p999_us = pct(s->ns, s->n, 0.999);
	r->mean_us = sum / (double)s->n / 1000.0;
	r->ops_per_s = (double)s->ops / r->secs;
	r->mib_per_s = (double)s->bytes / r->secs / (1 << 20);
	r->valid = true;
}

/* append s's samples to the pool of a point's rounds */
void
pool_add(struct bench_samples *pool, const struct bench_samples *s)
{
	size_t k = s->n;
	if (k > pool->cap - pool->n)
		k = pool->cap - pool->n;
	memcpy(pool->ns + pool->n, s->ns, k * sizeof(*s->ns));
	pool->n += k;
	pool->ops += s->ops;
	pool->all_ops += s->all_ops;
	pool->bytes += s->bytes;
	pool->elapsed_ns += s->elapsed_ns;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double
median(double *v, int n)
{
	if (n == 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* -------------------------------------------------------------- output */

char Run_id[32], Host[128], Date[40];
static char Kernel[128], Cpu[128];
/* the second table (CPU per operation), printed at the end */
static FILE *Cpu_tab;
static char *Cpu_buf;
static size_t Cpu_len;

void
meta_init(void)
{
	struct utsname u;
	if (uname(&u) == 0) {
		snprintf(Host, sizeof(Host), "%s", u.nodename);
		snprintf(Kernel, sizeof(Kernel), "%s", u.release);
	}
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) == 0) {
			char *c = strchr(line, ':');
			if (c) {
				c += 2;
				c[strcspn(c, "\n")] = '\0';
				snprintf(Cpu, sizeof(Cpu), "%s", c);
			}
			break;
		}
	}
	if (f)
		fclose(f);
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(Date, sizeof(Date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	strftime(Run_id, sizeof(Run_id), "%Y%m%d%H%M%S", &tm);
}

void
json_num(FILE *f, const char *k, double v)
{
	if (isnan(v) || isinf(v))
		fprintf(f, ",\"%s\":null", k);
	else
		fprintf(f, ",\"%s\":%.3f", k, v);
}

const char *
size_str(char *buf, size_t len, size_t size, bool prose)
{
	if (size >= (1u << 20) && size % (1u << 20) == 0)
		snprintf(buf, len, prose ? "%zu MiB" : "%zuM", size >> 20);
	else if (size >= 1024 && size % 1024 == 0)
		snprintf(buf, len, prose ? "%zu KiB" : "%zuK", size >> 10);
	else
		snprintf(buf, len, prose ? "%zu B" : "%zu", size);
	return buf;
}

void
emit(const struct point *p)
{
	if (Json) {
		fprintf(Json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\","
				"\"in_vm\":%s,\"provider\":\"%s\",\"wait\":\"%s\","
				"\"sweep\":\"%s\",\"level\":\"%s\",\"method\":\"%s\","
				"\"size\":%zu,\"qd\":%u,\"replicas\":%u,\"ops\":%llu",
				Run_id, Date, Host,
				getenv("IN_VM") ? "true" : "false", prov_str(),
				O.poll ? "poll" : "block", p->sweep, p->level,
				p->method ? p->method : "", p->size, p->qd,
				p->replicas, (unsigned long long)p->r.ops);
		json_num(Json, "secs", p->r.secs);
		json_num(Json, "p50_us", p->r.p50_us);
		json_num(Json, "p99_us", p->r.p99_us);
		json_num(Json, "p999_us", p->r.p999_us);
		json_num(Json, "mean_us", p->r.mean_us);
		json_num(Json, "ops_per_s", p->r.ops_per_s);
		json_num(Json, "mib_per_s", p->r.mib_per_s);
		fprintf(Json, ",\"floor\":\"%s\"", p->floor_name ? p->floor_name : "");
		json_num(Json, "floor_p50_us", p->f.valid ? p->f.p50_us : NAN);
		json_num(Json, "floor_p99_us", p->f.valid ? p->f.p99_us : NAN);
		json_num(Json, "floor_mib_per_s", p->f.valid ? p->f.mib_per_s : NAN);
		fprintf(Json, ",\"ratio_of\":\"%s\"", p->ratio_kind ? p->ratio_kind : "");
		json_num(Json, "ratio", p->ratio);
		json_num(Json, "ratio_min", p->ratio_min);
		json_num(Json, "ratio_max", p->ratio_max);
		json_num(Json, "vs_1_replica", p->vs1);
		json_num(Json, "vs_librpma", p->vs_librpma);
		json_num(Json, "cpu_us_op", cpu_us_op(&p->cpu));
		json_num(Json, "cpu_init_us_op", cpu_init_us_op(&p->cpu));
		json_num(Json, "cpu_srv_us_op", cpu_srv_us_op(&p->cpu));
		json_num(Json, "csw_op", csw_op(&p->cpu));
		json_num(Json, "floor_cpu_us_op", cpu_us_op(&p->fcpu));
		json_num(Json, "floor_cpu_init_us_op", cpu_init_us_op(&p->fcpu));
		json_num(Json, "floor_cpu_srv_us_op", cpu_srv_us_op(&p->fcpu));
		json_num(Json, "floor_csw_op", csw_op(&p->fcpu));
		json_num(Json, "cpu_ratio", p->cpu_ratio);
		json_num(Json, "cpu_ratio_min", p->cpu_ratio_min);
		json_num(Json, "cpu_ratio_max", p->cpu_ratio_max);
		fprintf(Json, ",\"rounds\":%d}\n", O.rounds);
		fflush(Json);
	}
	char ratio[64] = "-", extra[64] = "";
	if (!isnan(p->ratio))
		snprintf(ratio, sizeof(ratio), "%.2f [%.2f-%.2f]", p->ratio,
				p->ratio_min, p->ratio_max);
	if (!isnan(p->vs1))
		snprintf(extra, sizeof(extra), "x1rep %.2f", p->vs1);
	else if (!isnan(p->vs_librpma))
		snprintf(extra, sizeof(extra), "xrpma %.2f", p->vs_librpma);
	char sz[32];
	size_str(sz, sizeof(sz), p->size, false);
	fprintf(Tab, "%-4s %-8s %-11s %5s %3u %3u %9.1f %9.1f %9.1f %10.0f %9.1f  %-17s %9.1f %9.1f  %-22s %s\n",
			p->sweep, p->level, p->method ? p->method : "", sz, p->qd,
			p->replicas, p->r.p50_us, p->r.p99_us, p->r.p999_us,
			p->r.ops_per_s, p->r.mib_per_s,
			p->floor_name ? p->floor_name : "-",
			p->f.valid ? p->f.p50_us : NAN,
			p->f.valid ? p->f.mib_per_s : NAN, ratio, extra);
	fflush(Tab);

	if (Cpu_tab == NULL)
		return;
	char cpu[32] = "-", split[48] = "-", fcpu[32] = "-", fsplit[48] = "-";
	char cratio[64] = "-", csw[32] = "-", fcsw[32] = "-";
	if (p->cpu.ops) {
		snprintf(cpu, sizeof(cpu), "%.2f", cpu_us_op(&p->cpu));
		snprintf(split, sizeof(split), "%.2f+%.2f",
				cpu_init_us_op(&p->cpu), cpu_srv_us_op(&p->cpu));
		snprintf(csw, sizeof(csw), "%.2f", csw_op(&p->cpu));
	}
	if (p->fcpu.ops && p->floor_name) {
		snprintf(fcpu, sizeof(fcpu), "%.2f", cpu_us_op(&p->fcpu));
		snprintf(fsplit, sizeof(fsplit), "%.2f+%.2f",
				cpu_init_us_op(&p->fcpu), cpu_srv_us_op(&p->fcpu));
		snprintf(fcsw, sizeof(fcsw), "%.2f", csw_op(&p->fcpu));
	}
	if (!isnan(p->cpu_ratio))
		snprintf(cratio, sizeof(cratio), "%.2f [%.2f-%.2f]", p->cpu_ratio,
				p->cpu_ratio_min, p->cpu_ratio_max);
	fprintf(Cpu_tab, "%-4s %-8s %-11s %5s %3u %3u %9s  %-13s %9s  %-13s %-22s %7s %9s\n",
			p->sweep, p->level, p->method ? p->method : "", sz, p->qd,
			p->replicas, cpu, split, fcpu, fsplit, cratio, csw, fcsw);
}

/* the CPU table, after the main one */
void
cpu_table_open(void)
{
	Cpu_tab = open_memstream(&Cpu_buf, &Cpu_len);
}

void
cpu_table_print(void)
{
	if (Cpu_tab == NULL)
		return;
	fclose(Cpu_tab);
	Cpu_tab = NULL;
	fprintf(Tab, "\nCPU per operation: user+sys us of both processes (the bench with all its threads + the server), from getrusage around each\n"
			"measurement, warm-up included; '-': not measurable (perftest, librpma: other processes). cpu ratio = cpu/op / floor's cpu/op\n"
			"(lower is better; median [min-max] of the rounds); csw/op: context switches (voluntary + involuntary) of both per op\n");
	fprintf(Tab, "%-4s %-8s %-11s %5s %3s %3s %9s  %-13s %9s  %-13s %-22s %7s %9s\n",
			"swp", "level", "method", "size", "qd", "rep", "cpu.us/op",
			"bench+server", "fl.cpu.us", "bench+server", "cpu ratio",
			"csw/op", "fl.csw/op");
	if (Cpu_buf)
		fputs(Cpu_buf, Tab);
	free(Cpu_buf);
	Cpu_buf = NULL;
	fflush(Tab);
}

void
table_header(void)
{
	fprintf(Tab, "pmrep-bench  provider %s  addr %s  wait %s  rounds %d x %d ms  host %s  kernel %s%s  %s\n",
			prov_str(), O.addr, O.poll ? "busy-poll" : "fd-wait",
			O.rounds, O.ms, Host, Kernel,
			getenv("IN_VM") ? " (soft-RoCE guest)" : "", Date);
	fprintf(Tab, "cpu %s\n", Cpu);
	fprintf(Tab, "ratio: lat/rep sweeps p50 / floor p50 (1.00 = the floor; lower is better); bw sweep MiB/s / floor MiB/s (higher is better); median [min-max] of the rounds\n");
	fprintf(Tab, "%-4s %-8s %-11s %5s %3s %3s %9s %9s %9s %10s %9s  %-17s %9s %9s  %-22s %s\n",
			"swp", "level", "method", "size", "qd", "rep", "p50us",
			"p99us", "p99.9us", "ops/s", "MiB/s", "floor", "fl.p50us",
			"fl.MiB/s", "ratio", "");
}
