/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_serve.c -- what pmrep-target's two ways of serving (one replica;
 * a --config file's on one listener) share: the line that says why a
 * start failed, the counters line (SIGUSR1, the stop), one turn of the
 * poll loop (its signalfd, the target's or listener's fd, the control
 * socket), the service manager's notifications (sd_notify) and the log
 * file (--log-file, reopened on SIGHUP).
 */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "target_serve.h"
#ifdef PMREP_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

/*
 * is `addr` (numeric IPv4 / IPv6) one of this host's interface addresses
 * (or a wildcard)? A name or an unreadable interface list: true (let the
 * provider's own error speak)
 */
static bool
addr_is_local(const char *addr)
{
	struct in_addr a4;
	struct in6_addr a6;
	int fam;
	if (inet_pton(AF_INET, addr, &a4) == 1)
		fam = AF_INET;
	else if (inet_pton(AF_INET6, addr, &a6) == 1)
		fam = AF_INET6;
	else
		return true;
	if ((fam == AF_INET && a4.s_addr == htonl(INADDR_ANY)) ||
			(fam == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&a6)))
		return true;
	struct ifaddrs *ifs;
	if (getifaddrs(&ifs) != 0)
		return true;
	bool found = false;
	for (struct ifaddrs *i = ifs; i != NULL && !found; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != fam)
			continue;
		if (fam == AF_INET)
			found = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr ==
					a4.s_addr;
		else
			found = memcmp(&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr,
					&a6, sizeof(a6)) == 0;
	}
	freeifaddrs(ifs);
	return found;
}

void
serve_report_start_failure(int ret, const char *path, uint64_t size,
		bool create, const char *addr, const char *port)
{
	int err = pmrep_err_errno();
	struct stat st;
	bool is_file = stat(path, &st) == 0 && S_ISREG(st.st_mode);
	bool is_dir = !is_file && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
	if (is_dir) {
		fprintf(stderr, "pmrep-target: cannot serve %s: is a directory (--path names a replica file or device DAX)\n",
				path);
	} else if (ret == PMREP_E_PROVIDER && err == EADDRNOTAVAIL &&
			!addr_is_local(addr)) {
		fprintf(stderr, "pmrep-target: cannot listen on %s: not an address of this host (--address)\n",
				addr);
	} else if (ret == PMREP_E_PROVIDER && err == ENOENT && !create &&
			access(path, F_OK) != 0) {
		fprintf(stderr, "pmrep-target: cannot serve %s: %s (add --create --size N to create it)\n",
				path, strerror(err));
	} else if (ret == PMREP_E_PROVIDER && err == ENOENT) {
		fprintf(stderr, "pmrep-target: cannot serve %s: %s (does its directory exist?)\n",
				path, strerror(err));
	} else if (ret == PMREP_E_RANGE && is_file && size != 0 &&
			(uint64_t)st.st_size != size + PMREP_REPLICA_DATA_OFFSET) {
		fprintf(stderr, "pmrep-target: cannot serve %s: existing file is %llu bytes, %llu expected (%s)\n",
				path, (unsigned long long)st.st_size,
				(unsigned long long)(size + PMREP_REPLICA_DATA_OFFSET),
				create ? "--create never resizes an existing file" :
				"--size plus the 4096-byte replica header");
	} else if (ret == PMREP_E_PROVIDER && err == EADDRINUSE) {
		fprintf(stderr, "pmrep-target: cannot serve %s: %s:%s: %s (another pmrep-target? choose --port)\n",
				path, addr, port, strerror(err));
	} else if (ret == PMREP_E_BUSY) {
		fprintf(stderr, "pmrep-target: cannot serve %s: %s\n", path,
				pmrep_err_msg());
	} else {
		fprintf(stderr, "pmrep-target: cannot serve %s: %s (%s)\n", path,
				pmrep_err_to_str(ret), pmrep_err_msg());
	}
}

void
serve_print_stats(struct pmrep_target *t, bool live, const char *who)
{
	struct pmrep_target_stats st;
	char in_use[48] = "";
	if (pmrep_target_get_stats(t, &st) != 0)
		return;
	if (live)
		snprintf(in_use, sizeof(in_use), " %u in use,", st.sessions_in_use);
	fprintf(stderr, "pmrep-target: %s%s%llu session%s accepted, %llu refused,%s %llu GPSPM persist requests (native / APM flushes are not seen by the target process)\n",
			live ? "SIGUSR1: " : "", who,
			(unsigned long long)st.sessions_accepted,
			st.sessions_accepted == 1 ? "" : "s",
			(unsigned long long)st.sessions_refused, in_use,
			(unsigned long long)st.persist_requests);
}

int
serve_poll_turn(int sfd, int fd, int ctl_fd, int *signo, bool *ctl_ready)
{
	*signo = 0;
	*ctl_ready = false;
	struct pollfd p[3] = { { sfd, POLLIN, 0 }, { fd, POLLIN, 0 },
		{ ctl_fd, POLLIN, 0 } };
	int n = poll(p, 3, 200);
	if (n < 0 && errno != EINTR) {
		perror("pmrep-target: poll");
		return -1;
	}
	if (n > 0 && (p[0].revents & POLLIN)) {
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			*signo = (int)si.ssi_signo;
	}
	*ctl_ready = n > 0 && ctl_fd >= 0 && (p[2].revents & POLLIN);
	return 0;
}

/* ------------------------------------------------ service manager, log */

__attribute__((format(printf, 1, 2)))
void
serve_notify(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
#ifdef PMREP_HAVE_SYSTEMD
	(void) sd_notify(0, buf);
#else
	static bool said;
	if (!said && getenv("NOTIFY_SOCKET") != NULL) {
		said = true;
		fprintf(stderr, "pmrep-target: warning: built without libsystemd: no readiness notification to the service manager (a Type=notify unit waits for it in vain)\n");
	}
#endif
}

void
serve_notify_reloading(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	serve_notify("RELOADING=1\nMONOTONIC_USEC=%llu",
			(unsigned long long)ts.tv_sec * 1000000ull +
			(unsigned long long)ts.tv_nsec / 1000);
}

int
serve_log_reopen(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
			O_NOCTTY, 0640);
	if (fd < 0) {
		fprintf(stderr, "pmrep-target: log file %s: %s\n", path,
				strerror(errno));
		return -1;
	}
	fflush(stderr);
	int ret = dup2(fd, STDERR_FILENO) < 0 ? -1 : 0;
	if (ret)
		fprintf(stderr, "pmrep-target: log file %s: dup2: %s\n", path,
				strerror(errno));
	close(fd);
	return ret;
}
