/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep-bench.c -- latency and throughput of pmrep, each held against the
 * floor of the same link measured in the same run.
 *
 * Two processes: this one (the initiator) and a server forked at start
 * (the replica side: a raw pmrep endpoint, pmrep targets, the tcp floor's
 * echo thread), driven over a socketpair with one-line commands. Levels:
 *   raw    -- pmrep_write + pmrep_flush(PERSISTENT) per op, `qd` in flight;
 *   mirror -- pmrep_mirror_persist (one at a time, as the API is), to 1..3
 *             replica targets;
 *   pipe   -- pmrep_mirror_persist_async, 4 KiB ranges (or --pipe-sizes)
 *             never adjacent, at window 1, 4, 16, 64 (that many
 *             outstanding), 1 replica, held against the raw level at the
 *             same queue depth and the tcp stream; and quorum 1 of 2 with
 *             one target (a process of its own, this program re-executed
 *             with --target-child) frozen by SIGSTOP against both live.
 * Floors (alternated with the measured side in every round, and the ratio
 * taken within the round, since absolute times on a shared machine or in
 * an emulated guest swing; the median ratio of the rounds is reported):
 *   tcp    -- a raw TCP ping-pong (S bytes there, 8 back) and stream between
 *             the same two processes on the same address (floor_tcp.c);
 *   verbs  -- perftest's ib_read_lat / ib_write_bw on the same device
 *             (floor_perftest.c).
 * CPU: around every measurement, floor or pmrep, the bench reads its own
 * getrusage(RUSAGE_SELF) (all its threads) and asks the server for its
 * own over the control socket ("CPU"); the deltas of user + sys time and
 * of context switches over the call's operations (warm-up included) give
 * cpu_us_op and csw_op, and cpu_ratio (pmrep's over the floor's) is taken
 * within a round like the latency ratio. CPU time is not charged for
 * the time a sleeping thread or an idle vCPU takes to get going, which is
 * most of a shared VM's wall-clock noise (it is for the wake-up call
 * itself, and a busy-polling initiator's CPU is its wall time). Not
 * measured for perftest's floor (other processes, whose start-up would
 * dominate) nor librpma.
 * The tcp floor waits for its replies the way the measured initiator waits
 * for completions: busy-polling with --wait poll (tcp-pingpong-spin,
 * tcp-stream-spin), blocking otherwise and for the mirror level, which
 * always waits on fds.
 * Files: this one, the options and main; bench_int.h, what the others
 * share; bench_out.c, the figures and the output; bench_ctrl.c, the
 * control channel, child processes, CPU accounting; bench_server.c, the
 * server and the target processes; bench_raw.c and bench_mirror.c, the
 * levels; bench_floor.c, the floors as the sweeps take them (floor_tcp.c
 * and floor_perftest.c, the floors); sweep_lat.c (lat, bw, rep),
 * sweep_pipe.c, sweep_quorum.c, sweep_resync.c, sweep_restart.c,
 * sweep_tls.c and track.c, the sweeps.
 * Exit status: 0 whenever the run completed, whatever the ratios (points
 * that could not be measured are reported; --strict: exit 1 then); 1 when
 * the bench itself could not start (server, floor socket); 2 for a usage
 * error.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_int.h"

const uint8_t Key[32] = "pmrep-bench-key-0123456789abcdef";
/* the tls sweep's PSK (TLS 1.3, external PSK: transport.h "TLS") */
const uint8_t Tls_psk[32] = "pmrep-bench-tls-psk-0123456789ab";

/* --------------------------------------------------------------- options */

struct opts O;
FILE *Json;
FILE *Tab;		/* the human table */
int Failures;
struct bench_samples S_round, S_pool, S_floor;
static pid_t Server_pid;

static void
usage(FILE *f)
{
	fprintf(f,
"usage: pmrep-bench [options]\n"
"  --provider tcp|verbs   transport provider (default tcp)\n"
"  --addr IP              address of both sides (tcp 127.0.0.1; verbs $RXE_IP or 10.11.12.1)\n"
"  --dev NAME             RDMA device for perftest (verbs; default $RXE_DEV or rxe0)\n"
"  --level raw|mirror|all what to measure (default all)\n"
"  --sweep lat,bw,rep,pipe,quorum,resync,restart,tls,track  latency vs size, throughput vs queue\n"
"                         depth, replicas; pipe: the pipelined mirror (4 KiB persist_async,\n"
"                         window 1, 4, 16, 64; --quick 1, 16, 64) against the raw level at the\n"
"                         same depth and the tcp stream; quorum: quorum 1 of 2, window 16, both\n"
"                         live vs one frozen (SIGSTOP); resync: quorum 1 of 2, one target killed,\n"
"                         the mapping written, the target restarted: persist p50/p99 while the\n"
"                         mirror resyncs it against before, reconnect time, resync rate\n"
"                         (SIGSTOP); the mirror's record: restart after a crash (1 GiB log;\n"
"                         --quick 64 MiB) and its price on the persist path; tls (tcp, raw\n"
"                         level): 64 B latency and 4 KiB qd 16 stream, TLS 1.3 against plain\n"
"                         tcp; track: position tracking (--mirror-psn) on against off,\n"
"                         alternated in every round: 4 KiB at windows 16 and 64 (MiB/s), 64 B\n"
"                         and 4 KiB p50 at window 1 (track.c) (default: all but track)\n"
"  --sizes LIST           latency sweep record sizes (default 64,512,4096,65536,1048576)\n"
"  --bw-sizes LIST        throughput sweep record sizes (default 4096)\n"
"  --qd LIST              queue depths of the throughput sweep (default 1,4,16,64)\n"
"  --replicas LIST        replica counts (default 1,2,3) at --rep-size bytes (default 64)\n"
"  --windows LIST         the pipe sweep's windows (queue depths), up to 64\n"
"  --pipe-sizes LIST      the pipe sweep's persist sizes, each at every window (default 4096;\n"
"                         more than one: a size column); up to 1 MiB, 2 x size x window up to\n"
"                         the 4 MiB mapping (e.g. 512,4096 at windows up to 64)\n"
"  --pipe-only raw|mirror the pipe sweep measures only that level (e.g. for a profile)\n"
"  --resync-rates LIST    the resync sweep's cfg resync rates in MiB/s, 0 unlimited\n"
"                         (default 0,64; --quick 0)\n"
"  --resync-size MIB      the resync sweep's mapping (default 64; --quick 8)\n"
"  --mirror-tls on|off    tcp: mirrors and their targets inside TLS 1.3 (on, the library's\n"
"                         default) or plaintext (off, as the raw level always is)\n"
"  --mirror-bg on|off     the mirrors' background recovery (on, the library's default)\n"
"  --mirror-psn on|off    replicas record persist sequences (pmrep_mirror_cfg_set_persist_seq:\n"
"                         GPSPM for every replica; off, the library's default)\n"
"  --ms N                 time per measurement in ms (default 250)\n"
"  --rounds N             floor/pmrep alternations per point (default 3)\n"
"  --wait poll|block      busy-poll the CQ or wait on its fd (default: block on tcp, poll on verbs)\n"
"                         (the tcp floor waits for its replies the same way: tcp-*-spin with poll;\n"
"                         the mirror always waits on fds and is held against the blocking floor)\n"
"  --no-floor             skip the floors (no ratios)\n"
"  --json FILE|-|none     JSON lines (default pmrep-bench.jsonl; -: stdout, table to stderr)\n"
"  --librpma PATH|none    the librpma comparison (verbs; default: pmrep-bench-librpma beside us)\n"
"  --quick                a short run for CI (64 B and 4 KiB, qd 1 and 16, 1 and 3 replicas, 1 round)\n"
"  --strict               exit 1 when a point could not be measured (default: report it, exit 0)\n"
"  --handoff              tcp latency sweep: also the ping-pong through an I/O thread woken by\n"
"                         eventfds (what a progress-thread design costs at the least)\n");
}

static unsigned
parse_list(const char *s, size_t *out, unsigned max)
{
	unsigned n = 0;
	char *dup = strdup(s), *save = NULL;
	for (char *t = strtok_r(dup, ",", &save); t && n < max;
			t = strtok_r(NULL, ",", &save)) {
		char *e;
		unsigned long long v = strtoull(t, &e, 0);
		if (*e == 'k' || *e == 'K')
			v <<= 10, e++;
		else if (*e == 'm' || *e == 'M')
			v <<= 20, e++;
		if (*e != '\0' || v == 0) {
			fprintf(stderr, "pmrep-bench: bad list item '%s'\n", t);
			exit(2);
		}
		out[n++] = (size_t)v;
	}
	free(dup);
	return n;
}

static unsigned
parse_ulist(const char *s, unsigned *out, unsigned max)
{
	size_t tmp[MAX_LIST];
	unsigned n = parse_list(s, tmp, max);
	for (unsigned i = 0; i < n; i++)
		out[i] = (unsigned)tmp[i];
	return n;
}

static void
parse_opts(int argc, char *argv[])
{
	static const struct option lo[] = {
		{ "provider", required_argument, NULL, 'p' },
		{ "addr", required_argument, NULL, 'a' },
		{ "dev", required_argument, NULL, 'd' },
		{ "level", required_argument, NULL, 'l' },
		{ "sweep", required_argument, NULL, 'w' },
		{ "sizes", required_argument, NULL, 's' },
		{ "bw-sizes", required_argument, NULL, 'b' },
		{ "qd", required_argument, NULL, 'q' },
		{ "replicas", required_argument, NULL, 'r' },
		{ "rep-size", required_argument, NULL, 'z' },
		{ "ms", required_argument, NULL, 'm' },
		{ "rounds", required_argument, NULL, 'R' },
		{ "wait", required_argument, NULL, 'W' },
		{ "no-floor", no_argument, NULL, 'F' },
		{ "json", required_argument, NULL, 'j' },
		{ "librpma", required_argument, NULL, 'L' },
		{ "quick", no_argument, NULL, 'Q' },
		{ "strict", no_argument, NULL, 'S' },
		{ "handoff", no_argument, NULL, 'H' },
		{ "windows", required_argument, NULL, 'X' },
		{ "pipe-sizes", required_argument, NULL, 'E' },
		{ "mirror-tls", required_argument, NULL, 'T' },
		{ "mirror-bg", required_argument, NULL, 'G' },
		{ "mirror-psn", required_argument, NULL, 'N' },
		{ "pipe-only", required_argument, NULL, 'P' },
		{ "resync-rates", required_argument, NULL, 'Y' },
		{ "resync-size", required_argument, NULL, 'Z' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *sizes = NULL, *bw = NULL, *qd = NULL, *reps = NULL;
	const char *wait = NULL, *level = "all", *windows = NULL;
	const char *pipe_only = NULL, *resync_rates = NULL, *pipe_sizes = NULL;
	long resync_mib = -1;
	const char *sweep = "lat,bw,rep,pipe,quorum,resync,restart,tls";
	int ms = -1, rounds = -1;
	O.prov = PMREP_PROVIDER_TCP;
	O.floor = true;
	O.json = "pmrep-bench.jsonl";
	O.librpma = "";
	O.rep_size = 64;
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (strcmp(optarg, "tcp") == 0)
				O.prov = PMREP_PROVIDER_TCP;
			else if (strcmp(optarg, "verbs") == 0)
				O.prov = PMREP_PROVIDER_VERBS;
			else {
				usage(stderr);
				exit(2);
			}
			break;
		case 'a': O.addr = optarg; break;
		case 'd': O.dev = optarg; break;
		case 'l': level = optarg; break;
		case 'w': sweep = optarg; break;
		case 's': sizes = optarg; break;
		case 'b': bw = optarg; break;
		case 'q': qd = optarg; break;
		case 'r': reps = optarg; break;
		case 'z': O.rep_size = (size_t)strtoull(optarg, NULL, 0); break;
		case 'm': ms = atoi(optarg); break;
		case 'R': rounds = atoi(optarg); break;
		case 'W': wait = optarg; break;
		case 'F': O.floor = false; break;
		case 'j': O.json = strcmp(optarg, "none") == 0 ? NULL : optarg; break;
		case 'L': O.librpma = strcmp(optarg, "none") == 0 ? NULL : optarg; break;
		case 'Q': O.quick = true; break;
		case 'S': O.strict = true; break;
		case 'H': O.handoff = true; break;
		case 'X': windows = optarg; break;
		case 'E': pipe_sizes = optarg; break;
		case 'T': O.mirror_plain = strcmp(optarg, "off") == 0; break;
		case 'G': O.mirror_fg_recovery = strcmp(optarg, "off") == 0; break;
		case 'N': O.mirror_psn = strcmp(optarg, "on") == 0; break;
		case 'P': pipe_only = optarg; break;
		case 'Y': resync_rates = optarg; break;
		case 'Z': resync_mib = atol(optarg); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc || (ms != -1 && ms <= 0) || (rounds != -1 && rounds <= 0)) {
		usage(stderr);
		exit(2);
	}
	O.raw = strcmp(level, "raw") == 0 || strcmp(level, "all") == 0;
	O.mirror = strcmp(level, "mirror") == 0 || strcmp(level, "all") == 0;
	if (!O.raw && !O.mirror) {
		usage(stderr);
		exit(2);
	}
	O.sweep_lat = strstr(sweep, "lat") != NULL;
	O.sweep_bw = strstr(sweep, "bw") != NULL;
	O.sweep_rep = strstr(sweep, "rep") != NULL;
	O.sweep_restart = strstr(sweep, "restart") != NULL;
	O.sweep_tls = strstr(sweep, "tls") != NULL;
	O.sweep_pipe = strstr(sweep, "pipe") != NULL;
	O.sweep_quorum = strstr(sweep, "quorum") != NULL;
	O.sweep_resync = strstr(sweep, "resync") != NULL;
	O.sweep_track = strstr(sweep, "track") != NULL;
	O.nwindows = parse_ulist(windows ? windows : O.quick ? "1,16,64" :
			"1,4,16,64", O.windows, MAX_LIST);
	for (unsigned i = 0; i < O.nwindows; i++)
		if (O.windows[i] == 0 || O.windows[i] > MAX_QD ||
				O.windows[i] > PMREP_MIRROR_WINDOW_MAX) {
			fprintf(stderr, "pmrep-bench: windows 1..%d\n", MAX_QD);
			exit(2);
		}
	if (O.nwindows == 0) {
		usage(stderr);
		exit(2);
	}
	/* every size at every window: ranges 2 x size apart, as many as
	 * the window has outstanding, inside the mirror's mapping */
	O.npipe_sizes = parse_list(pipe_sizes ? pipe_sizes : "4096",
			O.pipe_sizes, MAX_LIST);
	for (unsigned i = 0; i < O.npipe_sizes; i++)
		for (unsigned j = 0; j < O.nwindows; j++)
			if (O.pipe_sizes[i] > (1u << 20) || 2 * O.pipe_sizes[i] *
					O.windows[j] > PIPE_SIZE) {
				fprintf(stderr, "pmrep-bench: pipe size %zu at window %u: sizes up to 1 MiB, 2 x size x window up to %u MiB\n",
						O.pipe_sizes[i], O.windows[j],
						PIPE_SIZE >> 20);
				exit(2);
			}
	if (O.npipe_sizes == 0) {
		usage(stderr);
		exit(2);
	}
	O.pipe_raw = pipe_only == NULL || strcmp(pipe_only, "raw") == 0;
	O.pipe_mirror = pipe_only == NULL || strcmp(pipe_only, "mirror") == 0;
	if (!O.pipe_raw && !O.pipe_mirror) {
		usage(stderr);
		exit(2);
	}
	{	/* MiB/s, 0 allowed (unlimited) */
		char *dup = strdup(resync_rates ? resync_rates :
				O.quick ? "0" : "0,64"), *save = NULL;
		for (char *t = strtok_r(dup, ",", &save);
				t && O.nresync_rates < MAX_LIST;
				t = strtok_r(NULL, ",", &save)) {
			char *e;
			unsigned long long v = strtoull(t, &e, 10);
			if (*e != '\0' || v > 1000000) {
				fprintf(stderr, "pmrep-bench: bad resync rate '%s'\n", t);
				exit(2);
			}
			O.resync_rates[O.nresync_rates++] = (uint64_t)v << 20;
		}
		free(dup);
	}
	if (resync_mib == 0 || resync_mib > 4096) {
		fprintf(stderr, "pmrep-bench: resync size 1..4096 MiB\n");
		exit(2);
	}
	O.resync_size = (size_t)(resync_mib > 0 ? resync_mib : O.quick ? 8 : 64) << 20;
	if (O.addr == NULL) {
		const char *ip = getenv("RXE_IP");
		O.addr = O.prov == PMREP_PROVIDER_TCP ? "127.0.0.1" :
			(ip && *ip ? ip : "10.11.12.1");
	}
	if (O.dev == NULL) {
		const char *d = getenv("RXE_DEV");
		O.dev = d && *d ? d : "rxe0";
	}
	O.nsizes = parse_list(sizes ? sizes : O.quick ? "64,4096" :
			"64,512,4096,65536,1048576", O.sizes, MAX_LIST);
	O.nbw_sizes = parse_list(bw ? bw : "4096", O.bw_sizes, MAX_LIST);
	O.nqds = parse_ulist(qd ? qd : O.quick ? "1,16" : "1,4,16,64", O.qds,
			MAX_LIST);
	O.nreps = parse_ulist(reps ? reps : O.quick ? "1,3" : "1,2,3", O.reps,
			MAX_LIST);
	for (unsigned i = 0; i < O.nqds; i++)
		if (O.qds[i] > MAX_QD) {
			fprintf(stderr, "pmrep-bench: queue depth %u above %d\n",
					O.qds[i], MAX_QD);
			exit(2);
		}
	for (unsigned i = 0; i < O.nreps; i++)
		if (O.reps[i] > 3) {
			fprintf(stderr, "pmrep-bench: at most 3 replicas\n");
			exit(2);
		}
	for (unsigned i = 0; i < O.nsizes; i++)
		if (O.sizes[i] > (1u << 20)) {
			fprintf(stderr, "pmrep-bench: sizes up to 1 MiB\n");
			exit(2);
		}
	for (unsigned i = 0; i < O.nbw_sizes; i++)
		if (O.bw_sizes[i] * MAX_QD > RAW_REMOTE_SIZE * 8u ||
				O.bw_sizes[i] > (1u << 20)) {
			fprintf(stderr, "pmrep-bench: bw sizes up to 1 MiB\n");
			exit(2);
		}
	O.ms = ms > 0 ? ms : O.quick ? 120 : 250;
	O.rounds = rounds > 0 ? rounds : O.quick ? 1 : 3;
	O.poll = wait ? strcmp(wait, "poll") == 0 : O.prov == PMREP_PROVIDER_VERBS;
	if (O.librpma && O.librpma[0] == '\0') {
		/* beside this program, when it was built */
		static char path[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
		O.librpma = NULL;
		if (n > 0) {
			path[n] = '\0';
			char *slash = strrchr(path, '/');
			if (slash) {
				strcpy(slash + 1, "pmrep-bench-librpma");
				if (access(path, X_OK) == 0)
					O.librpma = path;
			}
		}
	}
	if (O.prov == PMREP_PROVIDER_TCP)
		O.librpma = NULL;	/* librpma needs an RDMA device */
}

const char *
prov_str(void)
{
	return O.prov == PMREP_PROVIDER_TCP ? "tcp" : "verbs";
}

/* ------------------------------------------------------------------ main */

int
main(int argc, char *argv[])
{
	if (argc == 8 && strcmp(argv[1], "--restart-writer") == 0)
		restart_writer(argv);	/* never returns */
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "--target-child") == 0)
		target_child(argc, argv);	/* never returns */
	parse_opts(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	setenv("PMREP_PROVIDER", prov_str(), 1);	/* targets and mirrors too */
	if (O.mirror_plain)
		setenv("PMREP_BENCH_PLAIN", "1", 1);	/* the target processes */
	meta_init();

	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp)) {
		perror("socketpair");
		return 1;
	}
	fflush(NULL);
	Server_pid = fork();
	if (Server_pid < 0) {
		perror("fork");
		return 1;
	}
	if (Server_pid == 0) {
		close(sp[0]);
		_exit(server_main(sp[1]));
	}
	close(sp[1]);
	Ctrl = sp[0];
	pmrep_log_set_function(bench_log, NULL);	/* before any pmrep thread */
	pmrep_log_set_threshold(PMREP_LOG_ERROR);

	Tab = stdout;
	if (O.json && strcmp(O.json, "-") == 0) {
		Json = stdout;
		Tab = stderr;
	} else if (O.json) {
		Json = fopen(O.json, "a");
		if (Json == NULL)
			perror(O.json);
	}
	cpu_table_open();

	char line[128];
	int floor_port = 0;
	if (ctrl_recv(Ctrl, line, sizeof(line), OP_TIMEOUT_MS) ||
			sscanf(line, "HELLO %d", &floor_port) != 1) {
		fprintf(stderr, "pmrep-bench: the server did not start\n");
		return 1;
	}
	size_t max_payload = 1u << 20;
	if (floor_port > 0) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
			.sin_port = htons((uint16_t)floor_port) };
		inet_pton(AF_INET, O.addr, &sa.sin_addr);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int one = 1;
		if (fd < 0 || connect(fd, (void *)&sa, sizeof(sa)) ||
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
				floor_tcp_init(&Floor, fd, max_payload)) {
			perror("pmrep-bench: floor socket");
			return 1;
		}
		Have_floor = true;
	} else if (O.floor && O.prov == PMREP_PROVIDER_VERBS) {
		Have_floor = floor_perftest_available("ib_read_lat") &&
			floor_perftest_available("ib_write_bw");
		if (!Have_floor)
			fprintf(stderr, "pmrep-bench: perftest not found: no verbs floor\n");
	}
	if (bench_samples_init(&S_round, SAMPLES_CAP) ||
			bench_samples_init(&S_pool, SAMPLES_CAP) ||
			bench_samples_init(&S_floor, SAMPLES_CAP)) {
		fprintf(stderr, "pmrep-bench: out of memory\n");
		return 1;
	}

	table_header();
	uint64_t t0 = bench_now_ns();
	if (O.raw && (O.sweep_lat || O.sweep_bw))
		sweep_raw();
	if (O.mirror && O.sweep_lat)
		sweep_mirror_lat();
	if (O.raw && O.sweep_rep)
		sweep_replicas_raw();
	if (O.mirror && O.sweep_rep)
		sweep_replicas();
	if (O.mirror && O.sweep_pipe)
		sweep_pipe();
	if (O.mirror && O.sweep_quorum)
		sweep_quorum();
	if (O.mirror && O.sweep_resync)
		sweep_resync();
	if (O.mirror && O.sweep_restart)
		sweep_restart();
	if (O.raw && O.sweep_tls && O.prov == PMREP_PROVIDER_TCP)
		sweep_tls();
	if (O.mirror && O.sweep_track) {
		struct bench_track_args ta = { O.rounds, O.ms,
			O.prov == PMREP_PROVIDER_TCP && !O.mirror_plain, prov_str(),
			Run_id, Date, Host, Tab, Json };
		char reply[64];
		Failures += bench_sweep_track(&ta);
		(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
	}
	cpu_table_print();
	fprintf(Tab, "done in %.1f s%s\n", (double)(bench_now_ns() - t0) / 1e9,
			Failures ? " (with failures)" : "");

	ctrl_send(Ctrl, "QUIT");
	floor_tcp_fini(&Floor);
	reap(Server_pid, OP_TIMEOUT_MS + 5000);
	bench_samples_fini(&S_round);
	bench_samples_fini(&S_pool);
	bench_samples_fini(&S_floor);
	if (Json && Json != stdout)
		fclose(Json);
	return Failures && O.strict ? 1 : 0;
}
