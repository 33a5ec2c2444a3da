/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * floor_perftest.c -- the verbs floor: perftest's ib_read_lat (a full
 * round trip, what a persist by APM -- a write then a read -- cannot beat)
 * and ib_write_bw, run as a server and a client on the same RDMA device
 * and address as the bench, through rdma_cm (-R). Every run is bounded
 * by `timeout`; a client that finds no server yet is retried.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

bool
floor_perftest_available(const char *tool)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

/* the numbers of the first result line (the one after "#bytes"); the
 * line itself in `got` */
static int
parse(FILE *in, double *v, int max, char *got, size_t gotsz)
{
	char line[1024];
	bool header = false;
	while (fgets(line, sizeof(line), in) != NULL) {
		if (line[0] != '\n' && strspn(line, " -\t\n") != strlen(line)) {
			/* the last line said, for a failure's report */
			snprintf(got, gotsz, "%.200s", line);
			got[strcspn(got, "\n")] = '\0';
		}
		if (strstr(line, "#bytes") != NULL) {
			header = true;
			continue;
		}
		if (!header)
			continue;
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			continue;
		snprintf(got, gotsz, "%.200s", p);
		got[strcspn(got, "\n")] = '\0';
		int n = 0;
		while (n < max) {
			char *e;
			double d = strtod(p, &e);
			if (e == p)
				break;
			v[n++] = d;
			p = e;
		}
		/* drain the rest so that the tool never blocks on its pipe */
		while (fgets(line, sizeof(line), in) != NULL)
			;
		return n;
	}
	return 0;
}

bool
floor_perftest(const char *tool, const char *dev, const char *addr,
		size_t size, unsigned iters, unsigned qd, int port,
		struct bench_result *r)
{
	bool lat = strstr(tool, "_lat") != NULL;
	char opts[256], cmd[512];
	memset(r, 0, sizeof(*r));
	snprintf(opts, sizeof(opts), "%s%s -R -F -s %zu -n %u",
			dev ? "-d " : "", dev ? dev : "", size, iters);
	if (!lat && qd > 0) {
		size_t l = strlen(opts);
		snprintf(opts + l, sizeof(opts) - l, " -t %u", qd);
	}

	for (int attempt = 0; attempt < 3; attempt++) {
		/* a fresh port each attempt: a server of a failed one may linger */
		char popts[300];
		snprintf(popts, sizeof(popts), "%s -p %d", opts, port + 10 * attempt);
		pid_t srv = fork();
		if (srv < 0)
			return false;
		if (srv == 0) {
			snprintf(cmd, sizeof(cmd),
					"exec timeout -k 2 60 %s %s >/dev/null 2>&1",
					tool, popts);
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
		/* the server must listen first: starting perftest takes a
		 * while in an emulated guest */
		usleep(800000 + 700000 * (useconds_t)attempt);
		snprintf(cmd, sizeof(cmd), "timeout -k 2 60 %s %s %s 2>&1",
				tool, popts, addr);
		FILE *p = popen(cmd, "r");
		double v[12];
		char got[256] = "";
		int n = p ? parse(p, v, 12, got, sizeof(got)) : 0;
		int st = p ? pclose(p) : -1;
		int sst = 0;
		/* the server ends with its client; one that did not is killed */
		for (int i = 0; i < 50; i++) {
			if (waitpid(srv, &sst, WNOHANG) == srv)
				break;
			if (i == 49) {
				kill(srv, SIGKILL);
				waitpid(srv, &sst, 0);
			}
			usleep(100000);
		}
		if (lat && n >= 9 && v[4] > 0 && v[4] < 1e9) {
			r->p50_us = v[4];	/* t_typical: the median */
			r->mean_us = v[5];
			r->p99_us = v[7];
			r->p999_us = v[8];
			r->ops = (uint64_t)v[1];
			r->ops_per_s = v[4] > 0 ? 1e6 / v[4] : 0;
			r->mib_per_s = r->ops_per_s * (double)size / (1 << 20);
			r->valid = true;
			return true;
		}
		if (!lat && n >= 5 && v[4] > 0) {
			r->ops = (uint64_t)v[1];
			r->ops_per_s = v[4] * 1e6;	/* MsgRate, Mpps */
			r->mib_per_s = r->ops_per_s * (double)size / (1 << 20);
			r->p50_us = 1e6 / r->ops_per_s;
			r->valid = true;
			return true;
		}
		fprintf(stderr, "pmrep-bench: %s %s %s: no result (exit %d, '%s'); %s\n",
				tool, popts, addr, st, got,
				attempt < 2 ? "retrying" : "giving up");
	}
	return false;
}
