/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep-target -- the replica target daemon: serves one replica file or
 * device DAX to a pmrep mirror. Runs in the foreground, logs to stderr,
 * prints "listening on ADDR:PORT (MODE mode)" on stdout once ready, and
 * shuts down cleanly on SIGINT / SIGTERM (a signalfd in its poll loop);
 * SIGHUP re-reads the keys, SIGUSR1 logs the counters, SIGPIPE is ignored.
 * Exit: 0 clean shutdown, 1 failure, 2 usage error (see usage()).
 *
 * This file owns the command line (usage, the options, the log sink, the
 * signals blocked for the signalfd) and serving one replica (--path);
 * --config FILE is target_listener.c (its format target_conf.c), the keys
 * target_keys.c, what both share (start failures, counters, the poll
 * turn, sd_notify, the log file) target_serve.c, the control socket
 * target_ctl.c, the metrics file target_metrics.c.
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <pmrep/repl.h>

#include "size_parse.h"
#include "target_conf.h"
#include "target_ctl.h"
#include "target_keys.h"
#include "target_listener.h"
#include "target_metrics.h"
#include "target_serve.h"

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
		return listener_main(config, log_file, control, control_group,
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
	if (log_file != NULL && serve_log_reopen(log_file) != 0) {
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
		serve_report_start_failure(ret, path, size, create, addr, port);
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
	serve_notify("READY=1\nSTATUS=serving %s on %s:%u", path, addr, bound);

	for (;;) {
		int sig;
		bool ctl_ready = false;
		if (serve_poll_turn(sfd, tfd, ctl ? target_ctl_fd(ctl) : -1,
				&sig, &ctl_ready) != 0) {
			ret = 1;
			break;
		}
		if (ctl_ready)
			target_ctl_process(ctl);
		if (sig == SIGHUP) {
			serve_notify_reloading();
			if (log_file != NULL)
				(void) serve_log_reopen(log_file);
			(void) pmrep_log_reopen();
			keyset_reload(&ks, t, &src, "");
			serve_notify("READY=1\nSTATUS=serving %s on %s:%u", path,
					addr, bound);
		} else if (sig == SIGUSR1) {
			serve_print_stats(t, true, "");
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
	serve_notify("STOPPING=1\nSTATUS=stopping");
	serve_print_stats(t, false, "");
	target_ctl_close(&ctl);
	(void) pmrep_target_delete(&t);
	close(sfd);
out:
	memset(&ks, 0, sizeof(ks));
	(void) pmrep_target_cfg_delete(&cfg);
	return ret == 0 ? 0 : 1;
}
