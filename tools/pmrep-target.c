/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep-target -- the replica target daemon: serves one replica file or
 * device DAX to a pmrep mirror. Runs in the foreground, logs to stderr,
 * prints "listening on ADDR:PORT (MODE mode)" on stdout once ready, and
 * shuts down cleanly on SIGINT / SIGTERM (a signalfd in its poll loop);
 * SIGHUP re-reads the keys, SIGUSR1 logs the counters, SIGPIPE is ignored.
 * Exit: 0 clean shutdown, 1 failure, 2 usage error (see usage()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
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

#include <pmrep/repl.h>

#include "size_parse.h"
#include "target_conf.h"
#include "target_ctl.h"
#include "target_metrics.h"
#ifdef PMREP_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#ifndef PMREP_VERSION_STRING
#define PMREP_VERSION_STRING "unknown"
#endif

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: pmrep-target --path PATH --key-file FILE | --key-dir DIR [options]\n"
		"       pmrep-target --config FILE [--log-file FILE] [-v]\n"
		"Serves one replica file (or device DAX) to a pmrep mirror, in the\n"
		"foreground, logging to stderr; with --config the replicas of FILE,\n"
		"all on one port (mirrors select one by its name).\n"
		"\n"
		"      --config FILE        serve the replicas FILE names ([replica NAME]\n"
		"                           sections: path, size, create, key-file ...;\n"
		"                           address, port, tls ... before them); the\n"
		"                           format: pmrep-target(8). Excludes the options\n"
		"                           below but --log-file, --log, --control,\n"
		"                           --control-group, --metrics-file,\n"
		"                           --metrics-interval and --verbose. A\n"
		"                           malformed FILE: \"FILE:LINE: what\", exit 2,\n"
		"                           nothing opened. SIGHUP reads it again\n"
		"      --log-file FILE      log there (appended) instead of stderr;\n"
		"                           SIGHUP reopens it (logrotate)\n"
		"      --log SINK           where the library's log lines go: stderr\n"
		"                           (default), syslog (ident pmrep-target,\n"
		"                           facility daemon) or file:PATH (appended;\n"
		"                           reopened on SIGHUP). Lines start with the UTC\n"
		"                           time (ISO 8601, ms); under systemd (stderr is\n"
		"                           the journal) without it\n"
		"      --no-log-timestamp   stderr / file lines without the time\n"
		"      --control PATH       answer on a local AF_UNIX socket at PATH\n"
		"                           (mode 0600), read-only: 'status' (one JSON\n"
		"                           line: every replica by name, every session\n"
		"                           with its replica's), 'metrics' (Prometheus\n"
		"                           text, then a line '# EOF') and 'watch' (JSON\n"
		"                           events);\n"
		"                           see pmrep status --control, pmrep watch. A live\n"
		"                           socket there: refused; a stale one is\n"
		"                           replaced; removed at exit. With --config: over\n"
		"                           the file's control = PATH\n"
		"      --control-group GROUP  the socket is mode 0660, group GROUP\n"
		"      --metrics-file PATH  write the metrics (Prometheus text format\n"
		"                           0.0.4, docs/METRICS.md) to PATH for\n"
		"                           node_exporter's textfile collector (name it\n"
		"                           *.prom in its directory): PATH.tmp written,\n"
		"                           then renamed over PATH; refreshed every\n"
		"                           --metrics-interval and at a clean stop. The\n"
		"                           control socket's 'metrics' command answers\n"
		"                           the same text (pmrep status --control SOCKET\n"
		"                           --metrics). With --config: over the file's\n"
		"                           metrics-file = PATH (and metrics-interval)\n"
		"      --metrics-interval MS  refresh the metrics file every MS\n"
		"                           milliseconds (default 5000, at least 100)\n"
		"  -p, --path PATH          replica file or device DAX; a replica file is\n"
		"                           the data size plus 4096 bytes (the replica\n"
		"                           header in front of the data)\n"
		"  -s, --size BYTES         data size in bytes (K/M/G suffixes: KiB, MiB,\n"
		"                           GiB); with --create the data size of a new\n"
		"                           replica, else checked against the header\n"
		"                           (omitted: whatever the header says)\n"
		"  -c, --create             create and format PATH if it does not exist\n"
		"                           (needs --size)\n"
		"  -a, --address ADDR       IP address to listen on (default 127.0.0.1)\n"
		"  -P, --port PORT          TCP / RDMA CM port (default 7204; 0: any free\n"
		"                           port, see the \"listening on\" line)\n"
		"  -k, --key-file FILE      a pre-shared key: a file `pmrep keygen` wrote\n"
		"                           (its key id in it), or the older form: the\n"
		"                           file's bytes without one trailing newline,\n"
		"                           16..64 bytes (key id 0). Mode 0600 and owned\n"
		"                           by the user, else refused. Give it up to 4\n"
		"                           times, each key with its own id: initiators\n"
		"                           name the id (key rotation: docs/DESIGN.md\n"
		"                           \"Keys\"); SIGHUP reads the files again\n"
		"      --key-dir DIR        every regular file DIR/*.key (not starting\n"
		"                           with '.') is a key file, read as --key-file\n"
		"                           reads one; DIR must be owned by the user and\n"
		"                           writable by nobody else. SIGHUP scans DIR\n"
		"                           again: rotate by dropping a new key file in\n"
		"                           and removing the old one. With --key-file:\n"
		"                           both; at most 4 keys in all, each its own id\n"
		"      --insecure-key-file  accept key files (and a --key-dir) others may\n"
		"                           read or write or that another user owns (a\n"
		"                           warning instead)\n"
		"  -d, --direct-write-to-pmem  declare RDMA writes land in the persistence\n"
		"                           domain on this node (default: not declared)\n"
		"  -S, --staging            serve through a staging buffer (GPSPM)\n"
		"  -t, --timeout MS         handshake / connection timeout in milliseconds\n"
		"                           (default 5000)\n"
		"      --no-tls             tcp: serve plaintext initiators only (default:\n"
		"                           TLS 1.3 with a PSK derived from the key; a TLS\n"
		"                           target refuses plaintext initiators and vice\n"
		"                           versa). No effect on RDMA (use IPsec / MACsec)\n"
		"      --tls-name HOST:PORT another numeric address initiators dial to\n"
		"                           reach this target (a relay, a NAT); up to 8\n"
		"  -v, --verbose            log at INFO (PMREP_LOG_LEVEL overrides)\n"
		"  -h, --help               this help\n"
		"      --version            print \"pmrep-target VERSION\" and exit\n"
		"\n"
		"Once ready it prints one line on stdout:\n"
		"    listening on ADDR:PORT (direct mode)      (or: staging mode)\n"
		"which is how to learn the port chosen with --port 0. One target per\n"
		"replica: while it runs it holds a lock on PATH, and a second\n"
		"pmrep-target on the same PATH (any port) refuses to start.\n"
		"With --config it prints \"listening on ADDR:PORT (N replicas: NAME ...)\";\n"
		"SIGHUP reads FILE again: replicas added and removed, each replica's\n"
		"keys made its key files' (sessions stay), the log file reopened;\n"
		"address, port, tls and the global timeout / tls-name need a restart;\n"
		"a FILE that does not parse leaves everything as it was (logged).\n"
		"Without --config:\n"
		"SIGHUP reads every --key-file again and scans --key-dir again: the\n"
		"target then holds exactly their keys, the new ones added before the\n"
		"gone ones are removed; sessions already attached stay. When one does\n"
		"not read (or DIR holds a link, a non-regular *.key, too many keys or\n"
		"two of one id), the keys stay as they were.\n"
		"SIGHUP never stops the target (a logrotate may send it), nor does a\n"
		"failed re-read: without --key-file / --key-dir changes it only says\n"
		"how many keys it holds.\n"
		"SIGUSR1 logs one line of its counters on stderr (sessions accepted,\n"
		"refused, in use, GPSPM persist requests) and it serves on.\n"
		"SIGPIPE is ignored.\n"
		"SIGINT or SIGTERM shuts it down cleanly: any session is closed, the\n"
		"replica file unmapped, and a line of statistics logged (its persist\n"
		"requests are GPSPM's only: native / APM flushes never reach the\n"
		"target process).\n"
		"A start that fails (a port in use, say) after --create made PATH\n"
		"removes that file again; a file that existed is never removed.\n"
		"\n"
		"environment:\n"
		"  PMREP_PROVIDER=tcp|verbs  force a provider (default: verbs when an RDMA\n"
		"                           device owns ADDR, tcp otherwise)\n"
		"  PMREP_LOG_LEVEL=0..5     log verbosity on stderr (0 fatal, 1 error,\n"
		"                           2 warning, 3 notice (default), 4 info, 5 debug)\n"
		"\n"
		"exit codes: 0 clean shutdown (SIGINT / SIGTERM), --help or --version;\n"
		"1 failure "
		"(bad configuration, key file, replica file, PATH already served by\n"
		"another target, listening, or a fatal error while serving); 2 usage\n"
		"error or a malformed --config FILE.\n");
}

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

/*
 * the last line when the target cannot start: the cause in the words of
 * the command line (pmrep_target_new's code alone says "provider call
 * failed" for a missing file, "out of range" for a file of another size)
 */
static void
report_start_failure(int ret, const char *path, uint64_t size, bool create,
		const char *addr, const char *port)
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

/* where the keys come from: --key-file paths and a --key-dir */
struct keysrc {
	const char *files[PMREP_TARGET_MAX_KEYS];
	unsigned nfiles;
	const char *dir;	/* NULL: none */
	unsigned flags;		/* pmrep_key_read_file_ex's */
};

/* the keys read from a keysrc */
struct keyset {
	unsigned n;
	uint32_t id[PMREP_TARGET_MAX_KEYS];
	size_t len[PMREP_TARGET_MAX_KEYS];
	uint8_t key[PMREP_TARGET_MAX_KEYS][PMREP_KEY_MAX];
	char from[PMREP_TARGET_MAX_KEYS][PATH_MAX];	/* its file */
};

/* one more key, from `path`: 0, or -1 (said why on stderr) */
static int
keyset_add_file(struct keyset *ks, const char *path, unsigned flags)
{
	if (ks->n == PMREP_TARGET_MAX_KEYS) {
		fprintf(stderr, "pmrep-target: %s: more than %d keys in all (--key-file and --key-dir): remove one\n",
				path, PMREP_TARGET_MAX_KEYS);
		return -1;
	}
	unsigned i = ks->n;
	int ret = pmrep_key_read_file_ex(path, flags, ks->key[i],
			sizeof(ks->key[i]), &ks->len[i], &ks->id[i]);
	if (ret) {
		fprintf(stderr, "pmrep-target: %s: %s\n", path, pmrep_err_msg());
		return -1;
	}
	snprintf(ks->from[i], sizeof(ks->from[i]), "%s", path);
	for (unsigned j = 0; j < i; j++) {
		if (ks->id[j] == ks->id[i]) {
			fprintf(stderr, "pmrep-target: %s and %s both hold key id %u: each key needs its own id (pmrep keygen --key-id N)\n",
					ks->from[j], path, ks->id[i]);
			return -1;
		}
	}
	ks->n++;
	return 0;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* a key file name: NAME.key, NAME not empty, not starting with '.' */
static bool
is_key_name(const char *name)
{
	size_t len = strlen(name);
	return len > 4 && name[0] != '.' && strcmp(name + len - 4, ".key") == 0;
}

/*
 * every DIR/NAME.key, in name order: 0, or -1 (said why on stderr). DIR
 * itself must be ours and writable by nobody else (whoever may create a
 * file there could add a key), unless PMREP_KEY_FILE_INSECURE_OK; a
 * NAME.key that is a symbolic link or not a regular file is refused, as
 * --key-file refuses a link (and pmrep_key_read_file_ex opens it with
 * O_NOFOLLOW: a link swapped in meanwhile is refused too).
 */
static int
keyset_add_dir(struct keyset *ks, const char *dir, unsigned flags)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s\n", dir,
				strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(dfd, &st) != 0) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s\n", dir,
				strerror(errno));
		close(dfd);
		return -1;
	}
	if ((st.st_uid != geteuid() || (st.st_mode & 022)) &&
			!(flags & PMREP_KEY_FILE_INSECURE_OK)) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s: whoever may create a file there may add a key (chmod go-w, chown; or --insecure-key-file)\n",
				dir, st.st_uid != geteuid() ? "owned by another user" :
				"group or others may write into it");
		close(dfd);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		fprintf(stderr, "pmrep-target: warning: --key-dir %s: others may add keys to it (--insecure-key-file)\n",
				dir);
	DIR *d = fdopendir(dfd);
	if (d == NULL) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s\n", dir,
				strerror(errno));
		close(dfd);
		return -1;
	}
	/* one more name than keys fit: enough to say "too many" */
	char *names[PMREP_TARGET_MAX_KEYS + 1];
	unsigned n = 0;
	int ret = 0;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d)) != NULL) {
		if (!is_key_name(e->d_name))
			continue;
		if (n + ks->n == PMREP_TARGET_MAX_KEYS) {
			fprintf(stderr, "pmrep-target: --key-dir %s: more than %d keys in all (--key-file and --key-dir): remove one\n",
					dir, PMREP_TARGET_MAX_KEYS);
			ret = -1;
			break;
		}
		names[n] = strdup(e->d_name);
		if (names[n] == NULL) {
			fprintf(stderr, "pmrep-target: out of memory\n");
			ret = -1;
			break;
		}
		n++;
		errno = 0;
	}
	if (ret == 0 && errno != 0) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s\n", dir,
				strerror(errno));
		ret = -1;
	}
	if (ret == 0)
		qsort(names, n, sizeof(names[0]), name_cmp);
	for (unsigned i = 0; ret == 0 && i < n; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
			fprintf(stderr, "pmrep-target: %s: %s\n", path,
					strerror(errno));
			ret = -1;
		} else if (!S_ISREG(st.st_mode)) {
			fprintf(stderr, "pmrep-target: %s: %s: refused\n", path,
					S_ISLNK(st.st_mode) ? "a symbolic link" :
					"not a regular file");
			ret = -1;
		} else {
			ret = keyset_add_file(ks, path, flags);
		}
	}
	for (unsigned i = 0; i < n; i++)
		free(names[i]);
	closedir(d);
	return ret;
}

/* read every key of `src`: 0, or -1 (said why on stderr; ks wiped) */
static int
keyset_read(struct keyset *ks, const struct keysrc *src)
{
	memset(ks, 0, sizeof(*ks));
	int ret = 0;
	for (unsigned i = 0; ret == 0 && i < src->nfiles; i++)
		ret = keyset_add_file(ks, src->files[i], src->flags);
	if (ret == 0 && src->dir != NULL)
		ret = keyset_add_dir(ks, src->dir, src->flags);
	if (ret == 0 && ks->n == 0) {
		fprintf(stderr, "pmrep-target: --key-dir %s holds no key file (NAME.key)\n",
				src->dir);
		ret = -1;
	}
	if (ret)
		memset(ks, 0, sizeof(*ks));
	return ret;
}

static int
keyset_to_cfg(const struct keyset *ks, struct pmrep_target_cfg *cfg)
{
	for (unsigned i = 0; i < ks->n; i++) {
		int ret = pmrep_target_cfg_add_key(cfg, ks->id[i], ks->key[i],
				ks->len[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* SIGHUP: the target holds exactly the keys of the files (and the
 * directory) now */
static void
keyset_reload(struct keyset *ks, struct pmrep_target *t,
		const struct keysrc *src, const char *who)
{
	static struct keyset next;	/* 16 KiB of names: not on the stack */
	if (keyset_read(&next, src) != 0) {
		fprintf(stderr, "pmrep-target: SIGHUP: %sthe keys stay as they were\n",
				who);
		return;
	}
	/* add (or replace) the new ones first: never without a key; one
	 * that finds the table full (4 held, one of them going) is added
	 * once the gone ones are removed */
	bool later[PMREP_TARGET_MAX_KEYS] = { false };
	for (unsigned i = 0; i < next.n; i++) {
		int r = pmrep_target_add_key(t, next.id[i], next.key[i], next.len[i]);
		if (r == PMREP_E_RANGE)
			later[i] = true;
		else if (r != 0)
			fprintf(stderr, "pmrep-target: SIGHUP: %skey id %u: %s\n",
					who, next.id[i], pmrep_err_msg());
	}
	for (unsigned i = 0; i < ks->n; i++) {
		bool kept = false;
		for (unsigned j = 0; j < next.n; j++)
			kept = kept || next.id[j] == ks->id[i];
		if (!kept)
			(void) pmrep_target_remove_key(t, ks->id[i]);
	}
	for (unsigned i = 0; i < next.n; i++)
		if (later[i] && pmrep_target_add_key(t, next.id[i], next.key[i],
				next.len[i]) != 0)
			fprintf(stderr, "pmrep-target: SIGHUP: %skey id %u: %s\n",
					who, next.id[i], pmrep_err_msg());
	*ks = next;
	memset(&next, 0, sizeof(next));
	fprintf(stderr, "pmrep-target: SIGHUP: %s%u key(s) held\n", who, ks->n);
}

/* one line of the target's counters on stderr; `live` (SIGUSR1): with
 * the sessions in use now */
static void
print_stats(struct pmrep_target *t, bool live, const char *who)
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

/* one turn of a poll loop: wait up to 200 ms (handshake deadlines are
 * checked by the caller's process call) for `fd` or a signal on `sfd`:
 * 0 with *signo the signal taken (0: none), -1 when poll failed (said) */
static int
poll_turn(int sfd, int fd, int ctl_fd, int *signo, bool *ctl_ready)
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

/* a line to the service manager (systemd's sd_notify: READY=1,
 * RELOADING=1, STOPPING=1, STATUS=...); nothing without NOTIFY_SOCKET or
 * in a build without libsystemd */
__attribute__((format(printf, 1, 2)))
static void
notify(const char *fmt, ...)
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

/* RELOADING=1 with the time systemd 253+ wants beside it */
static void
notify_reloading(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	notify("RELOADING=1\nMONOTONIC_USEC=%llu",
			(unsigned long long)ts.tv_sec * 1000000ull +
			(unsigned long long)ts.tv_nsec / 1000);
}

/* the log (stderr, fd 2) goes to `path` from now on, appended: 0 or -1
 * (said why; stderr as it was) */
static int
log_reopen(const char *path)
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

/* ------------------------------------------- config mode (a listener) */

/* a replica the daemon serves: its key sources (into the running
 * config's strings), the keys it holds, its target on the listener */
struct served {
	char name[TCONF_NAME_MAX + 1];
	char who[TCONF_NAME_MAX + 16];	/* "replica NAME: " */
	struct keysrc src;
	struct keyset *ks;
	struct pmrep_target *t;
};

struct daemon {
	struct tconf conf;		/* the running configuration */
	struct pmrep_listener *l;
	struct served *s;
	unsigned n;
	const char *log_override;	/* --log-file: over the file's log-file */
	struct target_ctl *ctl;		/* --control / control = PATH; NULL: none */
	const char *control_override;	/* --control: over the file's control */
	const char *group_override;	/* --control-group: over control-group */
	/* --metrics-file / metrics-file (path NULL: none; the command
	 * line's win), its path owned here (a SIGHUP's file does not
	 * change it: a restart does) */
	struct target_metrics_file mf;
	char *mf_path;
};

/* `over` (non-NULL) replaces *field: 0, -1 out of memory */
static int
str_override(char **field, const char *over)
{
	if (over == NULL)
		return 0;
	free(*field);
	*field = strdup(over);
	return *field ? 0 : -1;
}

/* --log-file wins over the file's log-file, --control and
 * --control-group over its control and control-group: 0, -1 out of
 * memory */
static int
log_override(const struct daemon *d, struct tconf *c)
{
	return str_override(&c->log_file, d->log_override) ||
		str_override(&c->control, d->control_override) ||
		str_override(&c->control_group, d->group_override) ? -1 : 0;
}

static void
served_src(struct served *sv, const struct tconf *c,
		const struct tconf_replica *r)
{
	memset(&sv->src, 0, sizeof(sv->src));
	for (unsigned i = 0; i < r->nkey_files; i++)
		sv->src.files[i] = r->key_files[i];
	sv->src.nfiles = r->nkey_files;
	sv->src.dir = r->key_dir;
	sv->src.flags = c->insecure_key_file ? PMREP_KEY_FILE_INSECURE_OK : 0;
}

/* a target cfg for replica `r` of config `c` (keys from ks) */
static int
replica_cfg(const struct tconf *c, const struct tconf_replica *r,
		const struct keyset *ks, struct pmrep_target_cfg **cfg)
{
	int ret;
	if ((ret = pmrep_target_cfg_new(cfg)) ||
			(ret = pmrep_target_cfg_set_path(*cfg, r->path)) ||
			(ret = pmrep_target_cfg_set_data_size(*cfg, r->size, r->create)) ||
			(ret = keyset_to_cfg(ks, *cfg)) ||
			(ret = pmrep_target_cfg_set_direct_write_to_pmem(*cfg, r->direct)) ||
			(ret = pmrep_target_cfg_set_staging(*cfg, r->staging)) ||
			(ret = pmrep_target_cfg_set_timeout(*cfg, r->timeout_ms ?
					r->timeout_ms : c->timeout_ms)))
		return ret;
	for (unsigned i = 0; i < r->ntls_names; i++)
		if ((ret = pmrep_target_cfg_add_tls_name(*cfg, r->tls_names[i])))
			return ret;
	return 0;
}

/*
 * serve replica `r` (keys read already into sv->ks): 0, or -1 (said why).
 * `created`: set when this made its file (a failed start removes it).
 */
static int
served_add(struct daemon *d, struct served *sv, const struct tconf_replica *r,
		bool *created)
{
	struct pmrep_target_cfg *cfg = NULL;
	bool existed = access(r->path, F_OK) == 0;
	int ret = replica_cfg(&d->conf, r, sv->ks, &cfg);
	if (ret == 0)
		ret = pmrep_listener_add_target(d->l, r->name, cfg, &sv->t);
	if (ret) {
		fprintf(stderr, "pmrep-target: [replica %s] (%s:%u):\n", r->name,
				d->conf.file, r->line);
		report_start_failure(ret, r->path, r->size, r->create,
				d->conf.addr, d->conf.port);
	}
	(void) pmrep_target_cfg_delete(&cfg);
	if (created)
		*created = ret == 0 && !existed;
	return ret ? -1 : 0;
}

static int
served_init(struct served *sv, const struct tconf *c,
		const struct tconf_replica *r)
{
	memset(sv, 0, sizeof(*sv));
	snprintf(sv->name, sizeof(sv->name), "%s", r->name);
	snprintf(sv->who, sizeof(sv->who), "replica %s: ", r->name);
	sv->ks = calloc(1, sizeof(*sv->ks));
	if (sv->ks == NULL) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		return -1;
	}
	served_src(sv, c, r);
	return 0;
}

static void
served_fini(struct served *sv)
{
	(void) pmrep_target_delete(&sv->t);
	if (sv->ks) {
		memset(sv->ks, 0, sizeof(*sv->ks));
		free(sv->ks);
	}
	sv->ks = NULL;
}

static void
daemon_status(const struct daemon *d, const char *what)
{
	uint16_t port = 0;
	(void) pmrep_listener_get_port(d->l, &port);
	unsigned serving = 0;
	for (unsigned i = 0; i < d->n; i++)
		serving += d->s[i].t != NULL;
	notify("%sSTATUS=serving %u replica%s on %s:%u", what, serving,
			serving == 1 ? "" : "s", d->conf.addr, port);
}

/*
 * start: every replica's keys read (nothing opened yet), the listener,
 * then each replica. A failure: the replicas added are deleted again and
 * the files this start created removed (while still locked). 0 / 1.
 */
static int
daemon_start(struct daemon *d)
{
	d->s = calloc(d->conf.n, sizeof(*d->s));
	if (d->s == NULL) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; i < d->conf.n; i++) {
		const struct tconf_replica *r = &d->conf.r[i];
		if (served_init(&d->s[i], &d->conf, r) != 0)
			return 1;
		d->n = i + 1;
		if (keyset_read(d->s[i].ks, &d->s[i].src) != 0) {
			fprintf(stderr, "pmrep-target: [replica %s] (%s:%u): its keys do not read; nothing started\n",
					r->name, d->conf.file, r->line);
			return 1;
		}
	}
	struct pmrep_target_cfg *lcfg = NULL;
	int ret;
	if ((ret = pmrep_target_cfg_new(&lcfg)) ||
			(ret = pmrep_target_cfg_set_address(lcfg, d->conf.addr, d->conf.port)) ||
			(ret = pmrep_target_cfg_set_timeout(lcfg, d->conf.timeout_ms)) ||
			(ret = pmrep_target_cfg_set_tls(lcfg, d->conf.tls))) {
		fprintf(stderr, "pmrep-target: %s: bad configuration: %s (%s)\n",
				d->conf.file, pmrep_err_to_str(ret), pmrep_err_msg());
		(void) pmrep_target_cfg_delete(&lcfg);
		return 1;
	}
	for (unsigned i = 0; i < d->conf.ntls_names; i++) {
		if ((ret = pmrep_target_cfg_add_tls_name(lcfg, d->conf.tls_names[i]))) {
			fprintf(stderr, "pmrep-target: %s: bad tls-name '%s' (%s)\n",
					d->conf.file, d->conf.tls_names[i], pmrep_err_msg());
			(void) pmrep_target_cfg_delete(&lcfg);
			return 1;
		}
	}
	ret = pmrep_listener_new(lcfg, &d->l);
	(void) pmrep_target_cfg_delete(&lcfg);
	if (ret) {
		report_start_failure(ret, d->conf.file, 0, false, d->conf.addr,
				d->conf.port);
		return 1;
	}
	bool *created = calloc(d->conf.n, sizeof(bool));
	if (created == NULL) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; i < d->conf.n; i++) {
		if (served_add(d, &d->s[i], &d->conf.r[i], &created[i]) == 0)
			continue;
		/* none of this start stays: files it made are removed while
		 * their targets still hold the locks */
		for (unsigned j = 0; j < i; j++) {
			if (created[j] && unlink(d->conf.r[j].path) != 0)
				fprintf(stderr, "pmrep-target: cannot remove %s created: %s\n",
						d->conf.r[j].path, strerror(errno));
			(void) pmrep_target_delete(&d->s[j].t);
		}
		free(created);
		return 1;
	}
	free(created);
	return 0;
}

static void
daemon_stop(struct daemon *d)
{
	target_ctl_close(&d->ctl);
	for (unsigned i = 0; i < d->n; i++)
		served_fini(&d->s[i]);
	free(d->s);
	d->s = NULL;
	d->n = 0;
	(void) pmrep_listener_delete(&d->l);
	tconf_free(&d->conf);
	free(d->mf_path);
	d->mf_path = NULL;
}

static struct served *
daemon_find(struct daemon *d, const char *name)
{
	for (unsigned i = 0; i < d->n; i++)
		if (strcmp(d->s[i].name, name) == 0)
			return &d->s[i];
	return NULL;
}

/* two strings, NULL or not, equal */
static bool
str_eq(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* what of the endpoint's configuration changed: needs a restart */
static void
warn_restart(const struct tconf *run, const struct tconf *next)
{
	bool names = run->ntls_names != next->ntls_names;
	for (unsigned i = 0; !names && i < run->ntls_names; i++)
		names = strcmp(run->tls_names[i], next->tls_names[i]) != 0;
	if (strcmp(run->addr, next->addr) != 0 || strcmp(run->port, next->port) != 0)
		fprintf(stderr, "pmrep-target: SIGHUP: %s names %s:%s, still listening on %s:%s: an address or port change needs a restart\n",
				next->file, next->addr, next->port, run->addr, run->port);
	if (run->tls != next->tls)
		fprintf(stderr, "pmrep-target: SIGHUP: %s turns TLS %s: needs a restart (TLS stays %s)\n",
				next->file, next->tls ? "on" : "off", run->tls ? "on" : "off");
	if (!str_eq(run->metrics_file, next->metrics_file) ||
			run->metrics_interval_ms != next->metrics_interval_ms)
		fprintf(stderr, "pmrep-target: SIGHUP: a change of metrics-file or metrics-interval needs a restart (the metrics file stays as it is)\n");
	if (run->timeout_ms != next->timeout_ms)
		fprintf(stderr, "pmrep-target: SIGHUP: the global timeout change (%d -> %d ms) needs a restart\n",
				run->timeout_ms, next->timeout_ms);
	if (names)
		fprintf(stderr, "pmrep-target: SIGHUP: a change of the global tls-name lines needs a restart\n");
	if (!str_eq(run->control, next->control) ||
			!str_eq(run->control_group, next->control_group))
		fprintf(stderr, "pmrep-target: SIGHUP: a change of control or control-group needs a restart (the control socket stays as it is)\n");
}

/* the endpoint's settings stay the running ones (they need a restart) */
static void
keep_endpoint(struct tconf *run, struct tconf *next)
{
	char *t;
	t = next->addr; next->addr = run->addr; run->addr = t;
	t = next->port; next->port = run->port; run->port = t;
	bool b = next->tls; next->tls = run->tls; run->tls = b;
	int ms = next->timeout_ms; next->timeout_ms = run->timeout_ms;
	run->timeout_ms = ms;
	for (unsigned i = 0; i < TCONF_MAX_TLS_NAMES; i++) {
		t = next->tls_names[i];
		next->tls_names[i] = run->tls_names[i];
		run->tls_names[i] = t;
	}
	unsigned n = next->ntls_names;
	next->ntls_names = run->ntls_names;
	run->ntls_names = n;
	t = next->control; next->control = run->control; run->control = t;
	t = next->control_group; next->control_group = run->control_group;
	run->control_group = t;
}

/*
 * SIGHUP: read the config again. Malformed: the running configuration
 * stays (an error logged). Else: the log file reopened, replicas gone
 * from the file deleted (their sessions closed), new ones added, a kept
 * one's keys made exactly its key files' (sessions stay), a kept one whose
 * path, size, create, staging, direct-write-to-pmem, timeout or tls-name
 * changed served anew (its sessions closed); endpoint changes need a
 * restart (said).
 */
static void
daemon_reload(struct daemon *d)
{
	notify_reloading();
	struct tconf next;
	char err[512];
	if (tconf_read(d->conf.file, &next, err, sizeof(err)) != 0) {
		if (d->conf.log_file)
			(void) log_reopen(d->conf.log_file);
		fprintf(stderr, "pmrep-target: SIGHUP: %s; the running configuration stays\n",
				err);
		daemon_status(d, "READY=1\n");
		return;
	}
	if (log_override(d, &next) != 0) {
		fprintf(stderr, "pmrep-target: SIGHUP: out of memory; the running configuration stays\n");
		tconf_free(&next);
		daemon_status(d, "READY=1\n");
		return;
	}
	if (next.log_file && log_reopen(next.log_file) != 0)
		fprintf(stderr, "pmrep-target: SIGHUP: logging on where it did\n");
	warn_restart(&d->conf, &next);
	keep_endpoint(&d->conf, &next);
	/* gone, or to be served anew */
	for (unsigned i = 0; i < d->n; i++) {
		struct served *sv = &d->s[i];
		const struct tconf_replica *nr = tconf_find(&next, sv->name);
		const struct tconf_replica *cur = tconf_find(&d->conf, sv->name);
		if (nr != NULL && sv->t != NULL &&
				!tconf_replica_reopen_differs(cur, nr))
			continue;
		if (sv->t != NULL)
			fprintf(stderr, "pmrep-target: SIGHUP: replica %s %s: its sessions are closed\n",
					sv->name, nr ? "changed (path, size, create, staging, direct-write-to-pmem, timeout or tls-name): served anew" :
					"is no longer in the file: not served any more");
		/* the control socket lets go first: no pointer to a
		 * deleted target, no event callback during its delete */
		target_ctl_detach(d->ctl, sv->t);
		(void) pmrep_target_delete(&sv->t);
	}
	struct served *ns = calloc(next.n, sizeof(*ns));
	if (ns == NULL) {
		fprintf(stderr, "pmrep-target: SIGHUP: out of memory; the running configuration stays\n");
		tconf_free(&next);
		daemon_status(d, "READY=1\n");
		return;
	}
	/* the new configuration owns the strings the key sources point to
	 * from here on; d->conf's are freed at the end */
	struct tconf old = d->conf;
	d->conf = next;
	unsigned added = 0, failed = 0;
	for (unsigned i = 0; i < next.n; i++) {
		const struct tconf_replica *r = &d->conf.r[i];
		struct served *sv = daemon_find(d, r->name);
		if (sv != NULL && sv->t != NULL) {
			/* kept: its keys are its files' now */
			ns[i] = *sv;
			sv->ks = NULL;
			sv->t = NULL;
			served_src(&ns[i], &d->conf, r);
			keyset_reload(ns[i].ks, ns[i].t, &ns[i].src, ns[i].who);
			continue;
		}
		if (served_init(&ns[i], &d->conf, r) != 0 ||
				keyset_read(ns[i].ks, &ns[i].src) != 0 ||
				served_add(d, &ns[i], r, NULL) != 0) {
			fprintf(stderr, "pmrep-target: SIGHUP: replica %s (%s:%u) is not served\n",
					r->name, d->conf.file, r->line);
			failed++;
			continue;
		}
		if (d->ctl != NULL)
			(void) target_ctl_attach_named(d->ctl, ns[i].t, r->name,
					r->path);
		added++;
	}
	for (unsigned i = 0; i < d->n; i++) {
		target_ctl_detach(d->ctl, d->s[i].t);
		served_fini(&d->s[i]);
	}
	free(d->s);
	d->s = ns;
	d->n = next.n;
	tconf_free(&old);
	unsigned serving = 0;
	for (unsigned i = 0; i < d->n; i++)
		serving += d->s[i].t != NULL;
	fprintf(stderr, "pmrep-target: SIGHUP: %s read again: %u replica%s served (%u added%s%u failed)\n",
			d->conf.file, serving, serving == 1 ? "" : "s", added,
			", ", failed);
	daemon_status(d, "READY=1\n");
}

/* the poll loop of config mode: 0 clean stop, 1 failure */
static int
daemon_run(struct daemon *d, int sfd)
{
	int lfd;
	uint16_t bound = 0;
	(void) pmrep_listener_get_fd(d->l, &lfd);
	(void) pmrep_listener_get_port(d->l, &bound);
	printf("listening on %s:%u (%u replica%s:", d->conf.addr, bound,
			d->n, d->n == 1 ? "" : "s");
	for (unsigned i = 0; i < d->n; i++)
		printf(" %s", d->s[i].name);
	printf(")\n");
	fflush(stdout);
	daemon_status(d, "READY=1\n");
	int ret = 0;
	for (;;) {
		int sig;
		bool ctl_ready;
		if (poll_turn(sfd, lfd, d->ctl ? target_ctl_fd(d->ctl) : -1,
				&sig, &ctl_ready) != 0) {
			ret = 1;
			break;
		}
		if (ctl_ready)
			target_ctl_process(d->ctl);
		if (sig == SIGHUP) {
			(void) pmrep_log_reopen();
			daemon_reload(d);
		} else if (sig == SIGUSR1) {
			for (unsigned i = 0; i < d->n; i++)
				if (d->s[i].t)
					print_stats(d->s[i].t, true, d->s[i].who);
		} else if (sig != 0) {
			fprintf(stderr, "pmrep-target: %s, shutting down\n",
					strsignal(sig));
			break;
		}
		int r = pmrep_listener_process(d->l, 0);
		if (r != 0 && r != PMREP_E_TIMEOUT) {
			fprintf(stderr, "pmrep-target: %s\n", pmrep_err_to_str(r));
			ret = 1;
			break;
		}
		target_metrics_file_tick(&d->mf, d->l, NULL, false);
	}
	/* the last counters, before the sessions are closed */
	target_metrics_file_tick(&d->mf, d->l, NULL, true);
	notify("STOPPING=1\nSTATUS=stopping");
	for (unsigned i = 0; i < d->n; i++)
		if (d->s[i].t)
			print_stats(d->s[i].t, false, d->s[i].who);
	return ret;
}

/* pmrep-target --config FILE: exit code; control, control_group: the
 * command line's (over the file's control / control-group) */
static int
main_config(const char *file, const char *log_file, const char *control,
		const char *control_group, const struct target_metrics_file *mf,
		const sigset_t *mask)
{
	static struct daemon d;
	char err[512];
	if (tconf_read(file, &d.conf, err, sizeof(err)) != 0) {
		fprintf(stderr, "pmrep-target: %s\n", err);
		return 2;
	}
	d.log_override = log_file;
	d.control_override = control;
	d.group_override = control_group;
	int ret = 1, sfd = -1;
	if (log_override(&d, &d.conf) != 0) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		goto out;
	}
	/* --metrics-file / --metrics-interval over the file's */
	d.mf = *mf;
	if (d.mf.path == NULL && d.conf.metrics_file != NULL &&
			(d.mf_path = strdup(d.conf.metrics_file)) == NULL) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		goto out;
	}
	if (d.mf.path == NULL)
		d.mf.path = d.mf_path;
	if (d.mf.interval_ms == 0)
		d.mf.interval_ms = d.conf.metrics_interval_ms > 0 ?
			d.conf.metrics_interval_ms : 5000;
	sfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		perror("pmrep-target: signalfd");
		goto out;
	}
	if (d.conf.log_file != NULL && log_reopen(d.conf.log_file) != 0)
		goto out;
	/* the control socket before the listener and the replicas: a live
	 * one refuses the start before anything is created */
	const struct target_ctl_about about = { NULL, d.conf.addr };
	if (d.conf.control != NULL && target_ctl_open(d.conf.control,
			d.conf.control_group, &about, &d.ctl) != 0)
		goto out;
	ret = daemon_start(&d);
	if (ret == 0 && d.ctl != NULL) {
		target_ctl_set_listener(d.ctl, d.l);
		for (unsigned i = 0; i < d.n; i++)
			if (d.s[i].t != NULL)
				(void) target_ctl_attach_named(d.ctl, d.s[i].t,
						d.s[i].name, d.conf.r[i].path);
	}
	if (ret == 0)
		ret = daemon_run(&d, sfd);
out:
	daemon_stop(&d);
	if (sfd >= 0)
		close(sfd);
	return ret;
}

int
main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "path", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "create", no_argument, NULL, 'c' },
		{ "address", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'P' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "key-dir", required_argument, NULL, 'D' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "direct-write-to-pmem", no_argument, NULL, 'd' },
		{ "staging", no_argument, NULL, 'S' },
		{ "timeout", required_argument, NULL, 't' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "tls-name", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "config", required_argument, NULL, 'C' },
		{ "log-file", required_argument, NULL, 'L' },
		{ "log", required_argument, NULL, 'O' },
		{ "no-log-timestamp", no_argument, NULL, 'Z' },
		{ "control", required_argument, NULL, 'X' },
		{ "control-group", required_argument, NULL, 'G' },
		{ "metrics-file", required_argument, NULL, 'M' },
		{ "metrics-interval", required_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *addr = "127.0.0.1", *port = "7204";
	struct keysrc src = { .nfiles = 0 };
	uint64_t size = 0;
	bool create = false, direct = false, staging = false, verbose = false;
	bool tls = true;
	const char *tls_names[8];
	unsigned ntls_names = 0;
	int timeout = 5000, c;
	const char *config = NULL, *log_file = NULL;
	const char *log_sink = "stderr", *control = NULL, *control_group = NULL;
	unsigned log_flags = 0;
	/* interval 0: not given (5000, or --config's metrics-interval) */
	struct target_metrics_file mf = { .path = NULL, .interval_ms = 0 };
	const char *replica_opt = NULL;	/* one that --config excludes */

	while ((c = getopt_long(argc, argv, "p:s:ca:P:k:dSt:vh", opts, NULL)) != -1) {
		/* what the config file says instead: --config excludes it */
		if (c > 0 && strchr("pscaPkDKdStNT", c) != NULL)
			for (const struct option *o = opts; o->name; o++)
				if (o->val == c)
					replica_opt = o->name;
		switch (c) {
		case 'C': config = optarg; break;
		case 'L': log_file = optarg; break;
		case 'O': log_sink = optarg; break;
		case 'Z': log_flags |= PMREP_LOG_SINK_F_NO_TIMESTAMP; break;
		case 'X': control = optarg; break;
		case 'G': control_group = optarg; break;
		case 'M': mf.path = optarg; break;
		case 'I':
			if (tconf_parse_ms(optarg, &mf.interval_ms) ||
					mf.interval_ms < 100) {
				fprintf(stderr, "pmrep-target: bad --metrics-interval '%s' (ms, 100..%d)\n",
						optarg, INT_MAX);
				return 2;
			}
			break;
		case 'p': path = optarg; break;
		case 's':
			if (tool_parse_size(optarg, &size)) {
				fprintf(stderr, "pmrep-target: bad size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'c': create = true; break;
		case 'a': addr = optarg; break;
		case 'P': port = optarg; break;
		case 'k':
			if (src.nfiles == PMREP_TARGET_MAX_KEYS) {
				fprintf(stderr, "pmrep-target: at most %d --key-file\n",
						PMREP_TARGET_MAX_KEYS);
				return 2;
			}
			src.files[src.nfiles++] = optarg;
			break;
		case 'D':
			if (src.dir != NULL) {
				fprintf(stderr, "pmrep-target: at most one --key-dir\n");
				return 2;
			}
			src.dir = optarg;
			break;
		case 'K': src.flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'd': direct = true; break;
		case 'S': staging = true; break;
		case 't':
			if (tconf_parse_ms(optarg, &timeout)) {
				fprintf(stderr, "pmrep-target: bad timeout '%s' (ms, 1..%d)\n",
						optarg, INT_MAX);
				return 2;
			}
			break;
		case 'N': tls = false; break;
		case 'T':
			if (ntls_names == 8) {
				fprintf(stderr, "pmrep-target: at most 8 --tls-name\n");
				return 2;
			}
			tls_names[ntls_names++] = optarg;
			break;
		case 'v': verbose = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("pmrep-target %s\n", PMREP_VERSION_STRING); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (config != NULL && (optind != argc || replica_opt != NULL)) {
		if (optind != argc)
			fprintf(stderr, "pmrep-target: unexpected argument '%s'\n",
					argv[optind]);
		else
			fprintf(stderr, "pmrep-target: --%s and --config exclude each other (the file says what to serve; only --verbose, --log-file, --log, --control, --control-group, --metrics-file and --metrics-interval go with it)\n",
					replica_opt);
		usage(stderr);
		return 2;
	}
	if (config == NULL && (optind != argc || path == NULL ||
			(src.nfiles == 0 && src.dir == NULL))) {
		if (optind != argc)
			fprintf(stderr, "pmrep-target: unexpected argument '%s'\n",
					argv[optind]);
		else if (path == NULL)
			fprintf(stderr, "pmrep-target: --path is required\n");
		else
			fprintf(stderr, "pmrep-target: --key-file or --key-dir is required\n");
		usage(stderr);
		return 2;
	}
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(verbose ? PMREP_LOG_INFO : PMREP_LOG_NOTICE);
	int lret = strcmp(log_sink, "stderr") == 0 ?
		pmrep_log_set_sink(PMREP_LOG_SINK_STDERR, NULL, log_flags) :
		strcmp(log_sink, "syslog") == 0 ?
		pmrep_log_set_sink(PMREP_LOG_SINK_SYSLOG, "pmrep-target", log_flags) :
		strncmp(log_sink, "file:", 5) == 0 && log_sink[5] != '\0' ?
		pmrep_log_set_sink(PMREP_LOG_SINK_FILE, log_sink + 5, log_flags) : -1;
	if (lret == -1) {
		fprintf(stderr, "pmrep-target: bad --log '%s' (stderr, syslog or file:PATH)\n",
				log_sink);
		return 2;
	}
	if (lret) {
		fprintf(stderr, "pmrep-target: --log %s: %s\n", log_sink, pmrep_err_msg());
		return 1;
	}

	/* signals arrive through the poll loop, never asynchronously:
	 * blocked from here, so a SIGHUP or SIGUSR1 while it starts is
	 * handled once it serves, never kills it; a peer gone mid-write
	 * is an error return, not SIGPIPE */
	signal(SIGPIPE, SIG_IGN);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) {
		perror("pmrep-target: sigprocmask");
		return 1;
	}
	if (config != NULL)
		return main_config(config, log_file, control, control_group,
				&mf, &mask);

	if (mf.interval_ms == 0)
		mf.interval_ms = 5000;
	static struct keyset ks;
	struct pmrep_target_cfg *cfg = NULL;
	struct pmrep_target *t = NULL;
	int ret = keyset_read(&ks, &src);
	if (ret)
		return 1;
	if ((ret = pmrep_target_cfg_new(&cfg)) ||
			(ret = pmrep_target_cfg_set_path(cfg, path)) ||
			(ret = pmrep_target_cfg_set_data_size(cfg, size, create)) ||
			(ret = pmrep_target_cfg_set_address(cfg, addr, port)) ||
			(ret = keyset_to_cfg(&ks, cfg)) ||
			(ret = pmrep_target_cfg_set_direct_write_to_pmem(cfg, direct)) ||
			(ret = pmrep_target_cfg_set_staging(cfg, staging)) ||
			(ret = pmrep_target_cfg_set_timeout(cfg, timeout)) ||
			(ret = pmrep_target_cfg_set_tls(cfg, tls))) {
		fprintf(stderr, "pmrep-target: bad configuration: %s (%s)\n",
				pmrep_err_to_str(ret), pmrep_err_msg());
		goto out;
	}
	for (unsigned i = 0; i < ntls_names; i++) {
		if ((ret = pmrep_target_cfg_add_tls_name(cfg, tls_names[i]))) {
			fprintf(stderr, "pmrep-target: bad --tls-name '%s' (%s)\n",
					tls_names[i], pmrep_err_msg());
			goto out;
		}
	}

	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		perror("pmrep-target: signalfd");
		ret = 1;
		goto out;
	}
	if (log_file != NULL && log_reopen(log_file) != 0) {
		close(sfd);
		ret = 1;
		goto out;
	}
	/* the control socket before the replica: a live one refuses the
	 * start before anything is created */
	struct target_ctl *ctl = NULL;
	const struct target_ctl_about about = { path, addr };
	if (control != NULL && target_ctl_open(control, control_group,
			&about, &ctl) != 0) {
		ret = 1;
		close(sfd);
		goto out;
	}
	ret = pmrep_target_new(cfg, &t);
	if (ret) {
		report_start_failure(ret, path, size, create, addr, port);
		target_ctl_close(&ctl);
		close(sfd);
		goto out;
	}
	if (ctl != NULL)
		target_ctl_attach(ctl, t);
	int tfd;
	uint16_t bound = 0;
	enum pmrep_target_mode mode;
	(void) pmrep_target_get_fd(t, &tfd);
	(void) pmrep_target_get_port(t, &bound);
	(void) pmrep_target_get_mode(t, &mode);
	printf("listening on %s:%u (%s mode)\n", addr, bound,
			mode == PMREP_TARGET_MODE_STAGING ? "staging" : "direct");
	fflush(stdout);
	notify("READY=1\nSTATUS=serving %s on %s:%u", path, addr, bound);

	for (;;) {
		int sig;
		bool ctl_ready = false;
		if (poll_turn(sfd, tfd, ctl ? target_ctl_fd(ctl) : -1, &sig,
				&ctl_ready) != 0) {
			ret = 1;
			break;
		}
		if (ctl_ready)
			target_ctl_process(ctl);
		if (sig == SIGHUP) {
			notify_reloading();
			if (log_file != NULL)
				(void) log_reopen(log_file);
			(void) pmrep_log_reopen();
			keyset_reload(&ks, t, &src, "");
			notify("READY=1\nSTATUS=serving %s on %s:%u", path, addr,
					bound);
		} else if (sig == SIGUSR1) {
			print_stats(t, true, "");
		} else if (sig != 0) {
			fprintf(stderr, "pmrep-target: %s, shutting down\n",
					strsignal(sig));
			ret = 0;
			break;
		}
		int r = pmrep_target_process(t, 0);
		if (r != 0 && r != PMREP_E_TIMEOUT) {
			fprintf(stderr, "pmrep-target: %s\n", pmrep_err_to_str(r));
			ret = 1;
			break;
		}
		target_metrics_file_tick(&mf, NULL, t, false);
	}
	/* the last counters, before the sessions are closed */
	target_metrics_file_tick(&mf, NULL, t, true);
	notify("STOPPING=1\nSTATUS=stopping");
	print_stats(t, false, "");
	target_ctl_close(&ctl);
	(void) pmrep_target_delete(&t);
	close(sfd);
out:
	memset(&ks, 0, sizeof(ks));
	(void) pmrep_target_cfg_delete(&cfg);
	return ret == 0 ? 0 : 1;
}
