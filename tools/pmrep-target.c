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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include "target_ctl.h"
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <pmrep/repl.h>

#ifndef PMREP_VERSION_STRING
#define PMREP_VERSION_STRING "unknown"
#endif

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: pmrep-target --path PATH --key-file FILE | --key-dir DIR [options]\n"
		"Serves one replica file (or device DAX) to a pmrep mirror, in the\n"
		"foreground, logging to stderr.\n"
		"\n"
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
		"      --log SINK           where log lines go: stderr (default), syslog\n"
		"                           (ident pmrep-target, facility daemon) or\n"
		"                           file:PATH (appended; reopened on SIGHUP). Lines\n"
		"                           start with the UTC time (ISO 8601, ms); under\n"
		"                           systemd (stderr is the journal) without it\n"
		"      --no-log-timestamp   stderr / file lines without the time\n"
		"      --control PATH       answer on a local AF_UNIX socket at PATH (mode\n"
		"                           0600), read-only: 'status' (one JSON line) and\n"
		"                           'watch' (JSON events); see pmrep status\n"
		"                           --control, pmrep watch. A live socket there:\n"
		"                           refused; a stale one is replaced; removed at exit\n"
		"      --control-group GROUP  the socket is mode 0660, group GROUP\n"
		"  -h, --help               this help\n"
		"      --version            print \"pmrep-target VERSION\" and exit\n"
		"\n"
		"Once ready it prints one line on stdout:\n"
		"    listening on ADDR:PORT (direct mode)      (or: staging mode)\n"
		"which is how to learn the port chosen with --port 0. One target per\n"
		"replica: while it runs it holds a lock on PATH, and a second\n"
		"pmrep-target on the same PATH (any port) refuses to start.\n"
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
		"error.\n");
}

static int
parse_size(const char *s, uint64_t *out)
{
	char *end;
	/* strtoull takes "-1" (and " -1") as ULLONG_MAX: digits only */
	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end != '\0' || (shift && v > (~0ull >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* a time limit in ms: 1 .. INT_MAX, digits only (atoi takes "abc" as 0
 * and overflows silently) */
static int
parse_ms(const char *s, int *out)
{
	char *end;
	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end != '\0' || v <= 0 || v > INT_MAX)
		return -1;
	*out = (int)v;
	return 0;
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
		const struct keysrc *src)
{
	static struct keyset next;	/* 16 KiB of names: not on the stack */
	if (keyset_read(&next, src) != 0) {
		fprintf(stderr, "pmrep-target: SIGHUP: the keys stay as they were\n");
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
			fprintf(stderr, "pmrep-target: SIGHUP: key id %u: %s\n",
					next.id[i], pmrep_err_msg());
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
			fprintf(stderr, "pmrep-target: SIGHUP: key id %u: %s\n",
					next.id[i], pmrep_err_msg());
	*ks = next;
	memset(&next, 0, sizeof(next));
	fprintf(stderr, "pmrep-target: SIGHUP: %u key(s) held\n", ks->n);
}

/* one line of the target's counters on stderr; `live` (SIGUSR1): with
 * the sessions in use now */
static void
print_stats(struct pmrep_target *t, bool live)
{
	struct pmrep_target_stats st;
	char in_use[48] = "";
	if (pmrep_target_get_stats(t, &st) != 0)
		return;
	if (live)
		snprintf(in_use, sizeof(in_use), " %u in use,", st.sessions_in_use);
	fprintf(stderr, "pmrep-target: %s%llu session%s accepted, %llu refused,%s %llu GPSPM persist requests (native / APM flushes are not seen by the target process)\n",
			live ? "SIGUSR1: " : "",
			(unsigned long long)st.sessions_accepted,
			st.sessions_accepted == 1 ? "" : "s",
			(unsigned long long)st.sessions_refused, in_use,
			(unsigned long long)st.persist_requests);
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
		{ "log", required_argument, NULL, 'L' },
		{ "no-log-timestamp", no_argument, NULL, 'Z' },
		{ "control", required_argument, NULL, 'C' },
		{ "control-group", required_argument, NULL, 'G' },
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
	const char *log_sink = "stderr", *control = NULL, *control_group = NULL;
	unsigned log_flags = 0;

	while ((c = getopt_long(argc, argv, "p:s:ca:P:k:dSt:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': path = optarg; break;
		case 's':
			if (parse_size(optarg, &size)) {
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
			if (parse_ms(optarg, &timeout)) {
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
		case 'L': log_sink = optarg; break;
		case 'Z': log_flags |= PMREP_LOG_SINK_F_NO_TIMESTAMP; break;
		case 'C': control = optarg; break;
		case 'G': control_group = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("pmrep-target %s\n", PMREP_VERSION_STRING); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || path == NULL ||
			(src.nfiles == 0 && src.dir == NULL)) {
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
		target_ctl_close(&ctl);
		report_start_failure(ret, path, size, create, addr, port);
		close(sfd);
		goto out;
	}
	int tfd;
	uint16_t bound = 0;
	enum pmrep_target_mode mode;
	(void) pmrep_target_get_fd(t, &tfd);
	(void) pmrep_target_get_port(t, &bound);
	(void) pmrep_target_get_mode(t, &mode);
	if (ctl != NULL)
		target_ctl_attach(ctl, t);
	printf("listening on %s:%u (%s mode)\n", addr, bound,
			mode == PMREP_TARGET_MODE_STAGING ? "staging" : "direct");
	fflush(stdout);

	for (;;) {
		struct pollfd p[3] = { { sfd, POLLIN, 0 }, { tfd, POLLIN, 0 },
			{ ctl ? target_ctl_fd(ctl) : -1, POLLIN, 0 } };
		/* wake up now and then: handshake deadlines are checked in
		 * pmrep_target_process */
		int n = poll(p, 3, 200);
		if (n < 0 && errno != EINTR) {
			perror("pmrep-target: poll");
			ret = 1;
			break;
		}
		if (n > 0 && (p[0].revents & POLLIN)) {
			struct signalfd_siginfo si;
			bool got = read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si);
			if (got && si.ssi_signo == SIGHUP) {
				(void) pmrep_log_reopen();
				keyset_reload(&ks, t, &src);
			} else if (got && si.ssi_signo == SIGUSR1) {
				print_stats(t, true);
			} else if (got) {
				fprintf(stderr, "pmrep-target: %s, shutting down\n",
						strsignal((int)si.ssi_signo));
				ret = 0;
				break;
			}
		}
		if (ctl != NULL && (p[2].revents & POLLIN))
			target_ctl_process(ctl);
		int r = pmrep_target_process(t, 0);
		if (r != 0 && r != PMREP_E_TIMEOUT) {
			fprintf(stderr, "pmrep-target: %s\n", pmrep_err_to_str(r));
			ret = 1;
			break;
		}
	}
	print_stats(t, false);
	target_ctl_close(&ctl);
	(void) pmrep_target_delete(&t);
	close(sfd);
out:
	memset(&ks, 0, sizeof(ks));
	(void) pmrep_target_cfg_delete(&cfg);
	return ret == 0 ? 0 : 1;
}
