/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_ctrl.c -- the bench's processes talking: the control channel to
 * the server (one-line commands over the socketpair; ask: a command and
 * its OK), the end of a child that may hang (reap), and the CPU accounting
 * (getrusage of this process, the server's by its CPU command, the window
 * around a measurement, the figures per operation).
 */
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_int.h"

/* wait up to `ms` for child `pid`, then kill it: nothing may hang the bench */
void
reap(pid_t pid, int ms)
{
	int st;
	for (int i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &st, WNOHANG) != 0)
			return;
		usleep(10000);
	}
	fprintf(stderr, "pmrep-bench: child %ld did not end; killing it\n", (long)pid);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

/* --------------------------------------------------------------- control */

int Ctrl = -1;

int
ctrl_send(int fd, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	return write(fd, line, (size_t)n) == n ? 0 : -1;
}

/* one line (without '\n') within timeout_ms; -1 on EOF / error / timeout */
int
ctrl_recv(int fd, char *line, size_t size, int timeout_ms)
{
	size_t n = 0;
	while (n + 1 < size) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, timeout_ms) <= 0)
			return -1;
		ssize_t k = read(fd, line + n, 1);
		if (k <= 0)
			return -1;
		if (line[n] == '\n') {
			line[n] = '\0';
			return 0;
		}
		n++;
	}
	return -1;
}

/* ------------------------------------------------------------- CPU use */

bool
cpu_self(struct cpu_use *c)
{
	struct rusage ru;
	memset(c, 0, sizeof(*c));
	if (getrusage(RUSAGE_SELF, &ru))
		return false;
	c->ns = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
		1000000000u + ((uint64_t)ru.ru_utime.tv_usec +
		(uint64_t)ru.ru_stime.tv_usec) * 1000u;
	c->csw = (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
	return true;
}

/* a command and its reply; -1 unless it starts with "OK" */
int
ask(char *reply, size_t size, int timeout_ms, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (ctrl_send(Ctrl, "%s", line) || ctrl_recv(Ctrl, reply, size, timeout_ms)) {
		fprintf(stderr, "pmrep-bench: the server did not answer '%s'\n", line);
		return -1;
	}
	if (strncmp(reply, "OK", 2) != 0) {
		fprintf(stderr, "pmrep-bench: server: '%s': %s\n", line, reply);
		return -1;
	}
	return 0;
}

/* the server's use so far (its "CPU" command) */
static bool
cpu_server(struct cpu_use *c)
{
	char reply[96];
	unsigned long long ns, csw;
	memset(c, 0, sizeof(*c));
	if (ask(reply, sizeof(reply), OP_TIMEOUT_MS, "CPU") ||
			sscanf(reply, "OK %llu %llu", &ns, &csw) != 2)
		return false;
	c->ns = ns;
	c->csw = csw;
	return true;
}

void
cpu_start(struct cpu_win *w)
{
	w->ok = cpu_server(&w->srv);
	w->ok = cpu_self(&w->self) && w->ok;
}

/* ends the window of a call that completed `ops` operations */
void
cpu_stop(struct cpu_win *w, uint64_t ops, struct cpu_acc *out)
{
	struct cpu_use self, srv;
	memset(out, 0, sizeof(*out));
	bool ok = cpu_self(&self);
	if (!cpu_server(&srv) || !ok || !w->ok || ops == 0 ||
			self.ns < w->self.ns || srv.ns < w->srv.ns)
		return;
	out->init_ns = self.ns - w->self.ns;
	out->srv_ns = srv.ns - w->srv.ns;
	out->csw = (self.csw - w->self.csw) + (srv.csw - w->srv.csw);
	out->ops = ops;
}

void
cpu_add(struct cpu_acc *to, const struct cpu_acc *a)
{
	if (a->ops == 0)
		return;
	to->init_ns += a->init_ns;
	to->srv_ns += a->srv_ns;
	to->csw += a->csw;
	to->ops += a->ops;
}

/* µs of CPU per operation: both processes, the bench's, the server's */
double
cpu_us_op(const struct cpu_acc *a)
{
	return a->ops ? (double)(a->init_ns + a->srv_ns) / 1e3 /
		(double)a->ops : NAN;
}

double
cpu_init_us_op(const struct cpu_acc *a)
{
	return a->ops ? (double)a->init_ns / 1e3 / (double)a->ops : NAN;
}

double
cpu_srv_us_op(const struct cpu_acc *a)
{
	return a->ops ? (double)a->srv_ns / 1e3 / (double)a->ops : NAN;
}

double
csw_op(const struct cpu_acc *a)
{
	return a->ops ? (double)a->csw / (double)a->ops : NAN;
}
