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
 *   pipe   -- pmrep_mirror_persist_async, 4 KiB ranges never adjacent, at
 *             window 1, 4, 16, 64 (that many outstanding), 1 replica, held
 *             against the raw level at the same queue depth and the tcp
 *             stream; and quorum 1 of 2 with one target (a process of its
 *             own, this program re-executed with --target-child) frozen by
 *             SIGSTOP against both live.
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
 * Exit status: 0 whenever the run completed, whatever the ratios (points
 * that could not be measured are reported; --strict: exit 1 then); 1 when
 * the bench itself could not start (server, floor socket); 2 for a usage
 * error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pmrep.h>
#include <pmrep/repl.h>
#include <pmrep/verbs.h>

#include "bench.h"

#define MAX_LIST 16
#define MAX_QD 64
#define MAX_TARGETS 8
#define RAW_REMOTE_SIZE (8u << 20)	/* bytes the raw level writes into */
#define MIRROR_SIZE (4u << 20)		/* the mirrored mapping (latency sweep) */
#define MIRROR_REP_SIZE (1u << 20)	/* ... (replica sweep) */
#define WARMUP_MS 20
#define SAMPLES_CAP (1u << 21)
#define OP_TIMEOUT_MS 10000

static const uint8_t Key[32] = "pmrep-bench-key-0123456789abcdef";
/* the tls sweep's PSK (TLS 1.3, external PSK: transport.h "TLS") */
static const uint8_t Tls_psk[32] = "pmrep-bench-tls-psk-0123456789ab";
static bool Raw_tls;	/* raw_open: the next connection inside TLS */
/* raw_open: the next source is a pmem mapping in /dev/shm, as a mirror's
 * (else page-aligned heap memory) */
static bool Raw_pmem_src;

static int
tls_find(void *arg, const uint8_t *id, size_t len, const char *local,
		uint8_t *psk, size_t *psk_len)
{
	(void) arg;
	(void) local;
	if (len != 11 || memcmp(id, "pmrep-bench", 11) != 0)
		return -1;
	memcpy(psk, Tls_psk, sizeof(Tls_psk));
	*psk_len = sizeof(Tls_psk);
	return 0;
}

/*
 * the raw level's write is a hint-able post: "more follows" (the flush),
 * so that a provider may ring one doorbell for both; built with and
 * without the flag in transport.h
 */
#ifdef PMREP_F_MORE
#define BENCH_F_MORE PMREP_F_MORE
#else
#define BENCH_F_MORE 0
#endif

/* --------------------------------------------------------------- options */

struct opts {
	enum pmrep_provider prov;
	const char *addr;
	const char *dev;		/* verbs: perftest's -d */
	bool raw, mirror;
	bool sweep_lat, sweep_bw, sweep_rep, sweep_restart, sweep_tls;
	bool sweep_pipe, sweep_quorum, sweep_resync, sweep_track;
	unsigned windows[MAX_LIST];	/* the pipe sweep's windows */
	unsigned nwindows;
	bool pipe_raw, pipe_mirror;	/* --pipe-only: which of the two */
	uint64_t resync_rates[MAX_LIST];	/* B/s, 0: unlimited */
	unsigned nresync_rates;
	size_t resync_size;		/* the resync sweep's mapping */
	bool mirror_plain;		/* --mirror-tls off: mirrors and targets
					 * on plaintext tcp (default TLS) */
	bool mirror_psn;		/* --mirror-psn on: persist sequences */
	bool mirror_fg_recovery;	/* --mirror-bg off: background
					 * recovery off (default on) */
	size_t sizes[MAX_LIST];
	unsigned nsizes;
	size_t bw_sizes[MAX_LIST];
	unsigned nbw_sizes;
	unsigned qds[MAX_LIST];
	unsigned nqds;
	unsigned reps[MAX_LIST];
	unsigned nreps;
	size_t rep_size;
	int ms;				/* per measurement */
	int rounds;
	bool poll;			/* busy-poll the CQ (else wait on its fd) */
	bool floor;
	const char *json;		/* NULL: none; "-": stdout */
	const char *librpma;		/* the comparison program, or NULL */
	bool quick;
	bool strict;			/* exit 1 when a point failed */
	bool handoff;			/* tcp: also the ping-pong through a thread */
};

static struct opts O;
static FILE *Json;
static FILE *Tab;		/* the human table */
/* the second table (CPU per operation), printed at the end */
static FILE *Cpu_tab;
static char *Cpu_buf;
static size_t Cpu_len;
static char Run_id[32];
static int Failures;

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
	const char *pipe_only = NULL, *resync_rates = NULL;
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

static const char *
prov_str(void)
{
	return O.prov == PMREP_PROVIDER_TCP ? "tcp" : "verbs";
}

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
static void
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

static double
median(double *v, int n)
{
	if (n == 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* wait up to `ms` for child `pid`, then kill it: nothing may hang the bench */
static void
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

static int Ctrl = -1;
static pid_t Server_pid;

static int
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
static int
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

/* CPU time (user + sys) and context switches (voluntary + involuntary) of
 * this process, every thread included */
struct cpu_use {
	uint64_t ns, csw;
};

static bool
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

/* ---------------------------------------------------------------- server */

#define MAX_RAW 3

/* one raw endpoint of the server: a registered region and its conn */
struct raw_srv {
	struct pmrep_pmem *pmem;
	struct pmrep_mr_local *mr;
	struct pmrep_ep *ep;
	struct pmrep_conn *conn;
};

struct server {
	struct pmrep_peer *peer;
	/* raw level: one endpoint per replica of the fan-out */
	struct raw_srv raw[MAX_RAW];
	unsigned nraw;
	/* mirror level */
	struct pmrep_target *t[MAX_TARGETS];
	unsigned nt;
	int floor_lfd;
};

static void
shm_path(char *buf, size_t size, pid_t pid, const char *what, unsigned i)
{
	snprintf(buf, size, "/dev/shm/pmrep-bench-%ld-%s%u", (long)pid, what, i);
}

static int
server_peer(struct server *sv)
{
	if (sv->peer)
		return 0;
	if (O.prov == PMREP_PROVIDER_TCP)
		return pmrep_peer_new_tcp(&sv->peer);
	struct ibv_context *ctx;
	int ret = pmrep_utils_get_ibv_context(O.addr, true, &ctx);
	if (ret == 0)
		ret = pmrep_peer_new(ctx, &sv->peer);
	return ret;
}

static void
server_end(struct server *sv)
{
	char path[128];
	for (unsigned i = 0; i < MAX_RAW; i++) {
		struct raw_srv *w = &sv->raw[i];
		(void) pmrep_conn_delete(&w->conn);
		(void) pmrep_ep_shutdown(&w->ep);
		(void) pmrep_mr_dereg(&w->mr);
		if (w->pmem) {
			(void) pmrep_pmem_close(&w->pmem);
			shm_path(path, sizeof(path), getppid(), "raw", i);
			unlink(path);
		}
	}
	sv->nraw = 0;
	for (unsigned i = 0; i < sv->nt; i++) {
		(void) pmrep_target_delete(&sv->t[i]);
		shm_path(path, sizeof(path), getppid(), "t", i);
		unlink(path);
	}
	sv->nt = 0;
	(void) pmrep_peer_delete(&sv->peer);
}

/* RAW <remote size>: one more registered region, listen, accept one conn */
static int
server_raw(struct server *sv, size_t size, bool tls)
{
	char path[128];
	if (sv->nraw == MAX_RAW)
		return PMREP_E_INVAL;
	int ret = server_peer(sv);
	if (ret)
		return ret;
	struct raw_srv *w = &sv->raw[sv->nraw];
	shm_path(path, sizeof(path), getppid(), "raw", sv->nraw);
	sv->nraw++;
	unlink(path);
	ret = pmrep_pmem_open(path, PMREP_PMEM_CREATE, size,
			PMREP_PMEM_GRANULARITY_PAGE, &w->pmem);
	if (ret)
		return ret;
	ret = pmrep_mr_reg(sv->peer, pmrep_pmem_get_address(w->pmem), size,
			PMREP_MR_USAGE_WRITE_DST | PMREP_MR_USAGE_READ_SRC |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT |
			PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY, &w->mr);
	if (ret)
		return ret;
	(void) pmrep_mr_set_persist_fn(w->mr, pmrep_pmem_persist_cb, w->pmem);
	ret = pmrep_ep_listen(sv->peer, O.addr, "0", &w->ep);
	if (ret)
		return ret;
	uint16_t port;
	(void) pmrep_ep_get_port(w->ep, &port);
	ctrl_send(Ctrl, "OK %u", port);

	struct pmrep_conn_req *req = NULL;
	struct pmrep_conn_cfg *acfg = NULL;
	if (tls && (pmrep_conn_cfg_new(&acfg) ||
			pmrep_conn_cfg_set_tls_psk_find(acfg, tls_find, NULL))) {
		(void) pmrep_conn_cfg_delete(&acfg);
		return PMREP_E_NOMEM;
	}
	ret = pmrep_ep_wait_conn_req(w->ep, acfg, OP_TIMEOUT_MS, &req);
	(void) pmrep_conn_cfg_delete(&acfg);
	if (ret)
		return ret;
	uint8_t pd_buf[PMREP_MR_DESC_SIZE + PMREP_PEER_CFG_DESC_SIZE];
	struct pmrep_peer_cfg *pcfg = NULL;
	(void) pmrep_mr_get_descriptor(w->mr, pd_buf);
	ret = pmrep_peer_cfg_new(&pcfg);
	if (ret) {
		(void) pmrep_conn_req_delete(&req);
		return ret;
	}
	/* the bench declares it so that verbs without RDMA FLUSH can use APM */
	(void) pmrep_peer_cfg_set_direct_write_to_pmem(pcfg, true);
	(void) pmrep_peer_cfg_get_descriptor(pcfg, pd_buf + PMREP_MR_DESC_SIZE);
	(void) pmrep_peer_cfg_delete(&pcfg);
	struct pmrep_conn_private_data pd = { pd_buf, sizeof(pd_buf) };
	ret = pmrep_conn_req_connect(&req, &pd, &w->conn);
	if (ret)
		return ret;
	enum pmrep_conn_event ev;
	ret = pmrep_conn_wait_event(w->conn, OP_TIMEOUT_MS, &ev);
	if (ret == 0 && ev != PMREP_CONN_ESTABLISHED)
		ret = PMREP_E_CONN_LOST;
	return ret;
}

/* a target on a fresh file at `path` (removed first, and on failure) */
static int
target_make_at(const char *path, uint64_t size, const char *addr,
		const char *port, bool fresh, struct pmrep_target **t)
{
	struct pmrep_target_cfg *cfg = NULL;
	if (fresh)
		unlink(path);
	int ret = pmrep_target_cfg_new(&cfg);
	if (ret == 0)
		ret = pmrep_target_cfg_set_path(cfg, path);
	if (ret == 0)
		ret = pmrep_target_cfg_set_data_size(cfg, size, true);
	if (ret == 0)
		ret = pmrep_target_cfg_set_address(cfg, addr, port);
	if (ret == 0)
		ret = pmrep_target_cfg_set_key(cfg, Key, sizeof(Key));
	if (ret == 0)
		ret = pmrep_target_cfg_set_direct_write_to_pmem(cfg, true);
	if (ret == 0)
		ret = pmrep_target_cfg_set_timeout(cfg, OP_TIMEOUT_MS);
	if (ret == 0 && (O.mirror_plain || getenv("PMREP_BENCH_PLAIN")))
		ret = pmrep_target_cfg_set_tls(cfg, false);
	if (ret == 0)
		ret = pmrep_target_new(cfg, t);
	(void) pmrep_target_cfg_delete(&cfg);
	if (ret && fresh)
		unlink(path);	/* it may have been created */
	return ret;
}

/* a target on a fresh file at `path` (removed first, and on failure),
 * on a port of the system's choice */
static int
target_make(const char *path, uint64_t size, const char *addr,
		struct pmrep_target **t)
{
	return target_make_at(path, size, addr, "0", true, t);
}

/* TGT <n> <data size>: n targets on fresh files */
static int
server_targets(struct server *sv, unsigned n, uint64_t size, char *reply,
		size_t rsize)
{
	size_t off = (size_t)snprintf(reply, rsize, "OK");
	for (unsigned i = 0; i < n && sv->nt < MAX_TARGETS; i++) {
		char path[128];
		unsigned idx = sv->nt;
		shm_path(path, sizeof(path), getppid(), "t", idx);
		int ret = target_make(path, size, O.addr, &sv->t[idx]);
		if (ret)
			return ret;
		sv->nt++;
		uint16_t port;
		(void) pmrep_target_get_port(sv->t[idx], &port);
		off += (size_t)snprintf(reply + off, rsize - off, " %u", port);
	}
	return 0;
}

static int
server_main(int ctrl)
{
	struct server sv;
	memset(&sv, 0, sizeof(sv));
	Ctrl = ctrl;
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_ERROR);

	/* the tcp floor's socket, on the same address as pmrep's */
	int floor_port = 0;
	if (O.prov == PMREP_PROVIDER_TCP && O.floor) {
		struct sockaddr_in sa = { .sin_family = AF_INET };
		inet_pton(AF_INET, O.addr, &sa.sin_addr);
		sv.floor_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		socklen_t sl = sizeof(sa);
		if (sv.floor_lfd < 0 || bind(sv.floor_lfd, (void *)&sa, sizeof(sa)) ||
				listen(sv.floor_lfd, 1) ||
				getsockname(sv.floor_lfd, (void *)&sa, &sl)) {
			perror("pmrep-bench server: floor socket");
			return 1;
		}
		floor_port = ntohs(sa.sin_port);
	}
	ctrl_send(ctrl, "HELLO %d", floor_port);
	if (floor_port) {
		int fd = accept(sv.floor_lfd, NULL, NULL);
		if (fd < 0) {
			perror("pmrep-bench server: accept");
			return 1;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		close(sv.floor_lfd);
		if (floor_tcp_serve_start(fd))
			return 1;
	}

	for (;;) {
		struct pollfd p[1 + MAX_TARGETS];
		p[0] = (struct pollfd){ ctrl, POLLIN, 0 };
		for (unsigned i = 0; i < sv.nt; i++) {
			int fd = -1;
			(void) pmrep_target_get_fd(sv.t[i], &fd);
			p[1 + i] = (struct pollfd){ fd, POLLIN, 0 };
		}
		int k = poll(p, 1 + sv.nt, 100);
		if (k < 0 && errno != EINTR)
			break;
		for (unsigned i = 0; i < sv.nt; i++)
			if (p[1 + i].revents)
				(void) pmrep_target_process(sv.t[i], 0);
		if (!(p[0].revents & (POLLIN | POLLHUP)))
			continue;
		char line[256], reply[256];
		if (ctrl_recv(ctrl, line, sizeof(line), 1000))
			break;
		int ret = 0;
		unsigned n;
		unsigned long long sz;
		if (sscanf(line, "RAW %llu", &sz) == 1) {
			ret = server_raw(&sv, (size_t)sz,
					strstr(line, " TLS") != NULL);
			if (ret == 0)
				ctrl_send(ctrl, "OK");
		} else if (sscanf(line, "TGT %u %llu", &n, &sz) == 2) {
			ret = server_targets(&sv, n, sz, reply, sizeof(reply));
			if (ret == 0)
				ctrl_send(ctrl, "%s", reply);
		} else if (sscanf(line, "LOG %d", &k) == 1) {
			/* a mirror's close makes its target log the flushed
			 * receives of the ended connection as errors */
			if (getenv("PMREP_LOG_LEVEL") == NULL)
				pmrep_log_set_threshold((enum pmrep_log_level)k);
			ctrl_send(ctrl, "OK");
		} else if (strcmp(line, "CPU") == 0) {
			/* this process's use so far: the bench takes the
			 * difference around a measurement */
			struct cpu_use c;
			if (cpu_self(&c))
				ctrl_send(ctrl, "OK %llu %llu",
						(unsigned long long)c.ns,
						(unsigned long long)c.csw);
			else
				ctrl_send(ctrl, "ERR getrusage");
		} else if (strcmp(line, "END") == 0) {
			server_end(&sv);
			if (getenv("PMREP_LOG_LEVEL") == NULL)
				pmrep_log_set_threshold(PMREP_LOG_ERROR);
			ctrl_send(ctrl, "OK");
		} else if (strcmp(line, "QUIT") == 0) {
			break;
		} else {
			ctrl_send(ctrl, "ERR unknown command");
			continue;
		}
		if (ret) {
			ctrl_send(ctrl, "ERR %s: %s", pmrep_err_to_str(ret),
					pmrep_err_msg());
			server_end(&sv);
		}
	}
	server_end(&sv);
	floor_tcp_serve_join();
	return 0;
}

/* a command and its reply; -1 unless it starts with "OK" */
static int
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

/* the use of both processes over measurements of `ops` operations in all;
 * ops 0: not measured */
struct cpu_acc {
	uint64_t init_ns;	/* the bench: the initiator, all its threads */
	uint64_t srv_ns;	/* the server: the replica side */
	uint64_t csw;		/* context switches of both */
	uint64_t ops;
};

/* one measurement's window: the server's use first, then ours, so that
 * the bench's own question to the server stays outside its window */
struct cpu_win {
	struct cpu_use self, srv;
	bool ok;
};

static void
cpu_start(struct cpu_win *w)
{
	w->ok = cpu_server(&w->srv);
	w->ok = cpu_self(&w->self) && w->ok;
}

/* ends the window of a call that completed `ops` operations */
static void
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

static void
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
static double
cpu_us_op(const struct cpu_acc *a)
{
	return a->ops ? (double)(a->init_ns + a->srv_ns) / 1e3 /
		(double)a->ops : NAN;
}

static double
cpu_init_us_op(const struct cpu_acc *a)
{
	return a->ops ? (double)a->init_ns / 1e3 / (double)a->ops : NAN;
}

static double
cpu_srv_us_op(const struct cpu_acc *a)
{
	return a->ops ? (double)a->srv_ns / 1e3 / (double)a->ops : NAN;
}

static double
csw_op(const struct cpu_acc *a)
{
	return a->ops ? (double)a->csw / (double)a->ops : NAN;
}

/* ------------------------------------------------------------ raw level */

struct raw {
	struct pmrep_peer *peer;
	void *src;
	struct pmrep_mr_local *src_mr;
	struct pmrep_conn *conn;
	struct pmrep_cq *cq;
	struct pmrep_mr_remote *rmr;
	size_t rsize;
	uint64_t t_post[MAX_QD];
	enum pmrep_flush_method method;
	struct pmrep_pmem *src_pmem;	/* Raw_pmem_src: the source's mapping */
	char src_path[96];
};

static int
client_peer(struct pmrep_peer **peer)
{
	if (O.prov == PMREP_PROVIDER_TCP)
		return pmrep_peer_new_tcp(peer);
	struct ibv_context *ctx;
	int ret = pmrep_utils_get_ibv_context(O.addr, false, &ctx);
	if (ret == 0)
		ret = pmrep_peer_new(ctx, peer);
	return ret;
}

/* the server's side goes with the next END */
static void
raw_close(struct raw *r)
{
	if (r->conn) {
		(void) pmrep_conn_disconnect(r->conn);
		(void) pmrep_conn_delete(&r->conn);
	}
	(void) pmrep_mr_remote_delete(&r->rmr);
	(void) pmrep_mr_dereg(&r->src_mr);
	(void) pmrep_peer_delete(&r->peer);
	if (r->src_pmem) {
		(void) pmrep_pmem_close(&r->src_pmem);
		unlink(r->src_path);
	} else {
		free(r->src);
	}
	r->src = NULL;
}

static int
raw_open(struct raw *r, size_t max_size)
{
	char reply[128];
	struct pmrep_conn_cfg *ccfg = NULL;
	struct pmrep_conn_req *req = NULL;
	struct pmrep_peer_cfg *pcfg = NULL;
	unsigned port;
	memset(r, 0, sizeof(*r));
	r->rsize = RAW_REMOTE_SIZE;
	if (ctrl_send(Ctrl, "RAW %zu%s", r->rsize, Raw_tls ? " TLS" : "") ||
			ctrl_recv(Ctrl, reply, sizeof(reply), OP_TIMEOUT_MS) ||
			sscanf(reply, "OK %u", &port) != 1) {
		fprintf(stderr, "pmrep-bench: raw server: %s\n", reply);
		return -1;
	}
	char sport[16];
	snprintf(sport, sizeof(sport), "%u", port);
	int ret = client_peer(&r->peer);
	if (ret)
		goto err;
	if (Raw_pmem_src) {
		snprintf(r->src_path, sizeof(r->src_path),
				"/dev/shm/pmrep-bench-%ld-rawsrc", (long)getpid());
		unlink(r->src_path);
		ret = pmrep_pmem_open(r->src_path, PMREP_PMEM_CREATE, max_size,
				PMREP_PMEM_GRANULARITY_PAGE, &r->src_pmem);
		if (ret)
			goto err;
		r->src = pmrep_pmem_get_address(r->src_pmem);
	} else if (posix_memalign(&r->src, 4096, max_size)) {
		ret = PMREP_E_NOMEM;
		goto err;
	}
	memset(r->src, 0xa5, max_size);
	ret = pmrep_mr_reg(r->peer, r->src, max_size,
			PMREP_MR_USAGE_WRITE_SRC | PMREP_MR_USAGE_READ_DST, &r->src_mr);
	if (ret)
		goto err;
	ret = pmrep_conn_cfg_new(&ccfg);
	if (ret)
		goto err;
	(void) pmrep_conn_cfg_set_timeout(ccfg, OP_TIMEOUT_MS);
	(void) pmrep_conn_cfg_set_sq_size(ccfg, 2 * MAX_QD + 4);
	(void) pmrep_conn_cfg_set_cq_size(ccfg, 2 * MAX_QD + 4);
	if (Raw_tls && (ret = pmrep_conn_cfg_set_tls_psk(ccfg, "pmrep-bench",
			Tls_psk, sizeof(Tls_psk))))
		goto err;
	ret = pmrep_conn_req_new(r->peer, O.addr, sport, ccfg, &req);
	if (ret)
		goto err;
	ret = pmrep_conn_req_connect(&req, NULL, &r->conn);
	if (ret)
		goto err;
	enum pmrep_conn_event ev;
	ret = pmrep_conn_wait_event(r->conn, OP_TIMEOUT_MS, &ev);
	if (ret == 0 && ev != PMREP_CONN_ESTABLISHED)
		ret = PMREP_E_CONN_LOST;
	if (ret)
		goto err;
	struct pmrep_conn_private_data pd;
	(void) pmrep_conn_get_private_data(r->conn, &pd);
	if (pd.len < PMREP_MR_DESC_SIZE + PMREP_PEER_CFG_DESC_SIZE) {
		ret = PMREP_E_MALFORMED;
		goto err;
	}
	ret = pmrep_mr_remote_from_descriptor(pd.ptr, PMREP_MR_DESC_SIZE, &r->rmr);
	if (ret == 0)
		ret = pmrep_peer_cfg_from_descriptor(
				(const uint8_t *)pd.ptr + PMREP_MR_DESC_SIZE,
				PMREP_PEER_CFG_DESC_SIZE, &pcfg);
	if (ret == 0)
		ret = pmrep_conn_apply_remote_peer_cfg(r->conn, pcfg);
	if (ret)
		goto err;
	(void) pmrep_conn_get_flush_method(r->conn, &r->method);
	(void) pmrep_conn_get_cq(r->conn, &r->cq);
	if (ctrl_recv(Ctrl, reply, sizeof(reply), OP_TIMEOUT_MS) ||
			strcmp(reply, "OK") != 0) {
		fprintf(stderr, "pmrep-bench: raw server: %s\n", reply);
		ret = PMREP_E_UNKNOWN;
		goto err;
	}
	(void) pmrep_peer_cfg_delete(&pcfg);
	(void) pmrep_conn_cfg_delete(&ccfg);
	return 0;
err:
	fprintf(stderr, "pmrep-bench: raw connection: %s (%s)\n",
			pmrep_err_to_str(ret), pmrep_err_msg());
	(void) pmrep_peer_cfg_delete(&pcfg);
	(void) pmrep_conn_req_delete(&req);
	(void) pmrep_conn_cfg_delete(&ccfg);
	raw_close(r);
	return -1;
}

static int
raw_post(struct raw *r, unsigned slot, size_t size, uint64_t seq)
{
	size_t nslots = r->rsize / size;
	size_t off = (size_t)(seq % nslots) * size;
	/* before posting: on rxe the post itself may run the whole op */
	r->t_post[slot] = bench_now_ns();
	int ret = pmrep_write(r->conn, r->rmr, off, r->src_mr, 0, size,
			PMREP_F_COMPLETION_ON_ERROR | BENCH_F_MORE, NULL);
	if (ret == 0)
		ret = pmrep_flush(r->conn, r->rmr, off, size,
				PMREP_FLUSH_TYPE_PERSISTENT,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(slot + 1));
	return ret;
}

/* wait for completions (busy-poll or on the CQ's fd) */
static int
take(struct pmrep_cq *cq, struct pmrep_completion *c, int max, int *n)
{
	uint64_t give_up = 0;
	for (;;) {
		int ret = pmrep_cq_get_completions(cq, c, max, n);
		if (ret != PMREP_E_NO_COMPLETION)
			return ret;
		if (!O.poll) {
			ret = pmrep_cq_wait(cq, 1000);
			if (ret && ret != PMREP_E_TIMEOUT)
				return ret;
		}
		uint64_t now = bench_now_ns();
		if (give_up == 0)
			give_up = now + (uint64_t)OP_TIMEOUT_MS * 1000000u;
		else if (now > give_up)
			return PMREP_E_TIMEOUT;
	}
}

/* `qd` write+flush pairs in flight for about `ms` */
static int
raw_run(struct raw *r, size_t size, unsigned qd, int ms, struct bench_samples *s)
{
	struct pmrep_completion c[MAX_QD];
	uint64_t seq = 0;
	unsigned inflight = 0;
	int ret = 0;
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0;

	for (unsigned i = 0; i < qd; i++) {
		ret = raw_post(r, i, size, seq++);
		if (ret)
			goto fail;
		inflight++;
	}
	while (inflight > 0) {
		int n = 0;
		ret = take(r->cq, c, MAX_QD, &n);
		if (ret)
			goto fail;
		uint64_t now = bench_now_ns();
		bool more = now < end;
		for (int i = 0; i < n; i++) {
			if (c[i].status != PMREP_WC_SUCCESS) {
				fprintf(stderr, "pmrep-bench: completion error: %s\n",
						pmrep_wc_status_str(c[i].status));
				return -1;
			}
			unsigned slot = (unsigned)((uintptr_t)c[i].op_context - 1);
			s->all_ops++;
			if (r->t_post[slot] >= warm_end && more) {
				if (begin == 0)
					begin = r->t_post[slot];
				bench_samples_add(s, now - r->t_post[slot], size);
				s->elapsed_ns = now - begin;
			}
			inflight--;
			if (more) {
				ret = raw_post(r, slot, size, seq++);
				if (ret)
					goto fail;
				inflight++;
			}
		}
	}
	return 0;
fail:
	fprintf(stderr, "pmrep-bench: raw %zu B qd %u: %s (%s)\n", size, qd,
			pmrep_err_to_str(ret), pmrep_err_msg());
	return -1;
}

/* one write+flush to each of `k` connections at once; done when all are */
struct fan {
	struct raw *r;
	unsigned k;
};

static int
fan_run(struct fan *fa, size_t size, int ms, struct bench_samples *s)
{
	struct pmrep_completion c[4];
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0;
	for (uint64_t seq = 0;; seq++) {
		uint64_t a = bench_now_ns();
		if (a >= end)
			break;
		int ret = 0;
		for (unsigned i = 0; ret == 0 && i < fa->k; i++)
			ret = raw_post(&fa->r[i], 0, size, seq);
		for (unsigned i = 0; ret == 0 && i < fa->k; i++) {
			int n = 0;
			ret = take(fa->r[i].cq, c, 1, &n);
			if (ret == 0 && c[0].status != PMREP_WC_SUCCESS)
				ret = PMREP_E_CONN_LOST;
		}
		if (ret) {
			fprintf(stderr, "pmrep-bench: fan-out to %u: %s (%s)\n",
					fa->k, pmrep_err_to_str(ret), pmrep_err_msg());
			return -1;
		}
		uint64_t b = bench_now_ns();
		s->all_ops++;
		if (a >= warm_end) {
			if (begin == 0)
				begin = a;
			bench_samples_add(s, b - a, size);
			s->elapsed_ns = b - begin;
		}
	}
	return 0;
}

static int
m_fan(void *arg, size_t size, unsigned qd, struct bench_samples *s)
{
	(void) qd;
	return fan_run(arg, size, O.ms, s);
}

/* the mirror's record next to the mapping (its default state path) */
static void
state_unlink(const char *mapping)
{
	char p[300];
	snprintf(p, sizeof(p), "%s.pmrep-state", mapping);
	unlink(p);
}

/* --------------------------------------------------------- mirror level */

/* mirror_open: the mirror's record in memory (else the default state
 * file next to the mapping) */
static bool Mirror_record_in_memory;

/* mirror_open: what else the next mirror's cfg says (NULL: defaults) */
struct mirror_extra {
	unsigned window;	/* 0: the default */
	unsigned quorum;	/* 0: all */
	bool set_max_lag;
	uint64_t max_lag;	/* bytes */
	const char *ports;	/* the replicas' ports, " P1 P2": targets of
				 * our own (NULL: ask the server for new ones) */
	int backoff_min_ms, backoff_max_ms;	/* 0: the default */
	uint64_t resync_rate;	/* B/s, 0: unlimited (the default) */
};
static const struct mirror_extra *Mirror_extra;

struct mirror {
	unsigned nrep;
	size_t size;
	char path[128];
	struct pmrep_pmem *pmem;
	struct pmrep_mirror *m;
	pmrep_pmem_persist_fn *persist;
	const char *method;
};

static int
mirror_open(struct mirror *mi, unsigned nrep, size_t size, unsigned tag)
{
	char reply[256];
	memset(mi, 0, sizeof(*mi));
	mi->nrep = nrep;
	mi->size = size;
	const struct mirror_extra *ex = Mirror_extra;
	if (ex && ex->ports)
		snprintf(reply, sizeof(reply), "OK%s", ex->ports);
	else if (ask(reply, sizeof(reply), OP_TIMEOUT_MS, "TGT %u %zu", nrep,
			size))
		return -1;
	struct pmrep_mirror_cfg *cfg = NULL;
	int ret = pmrep_mirror_cfg_new(&cfg);
	char *p = reply + 2;
	for (unsigned i = 0; ret == 0 && i < nrep; i++) {
		char port[16];
		int used = 0;
		if (sscanf(p, " %15s%n", port, &used) != 1) {
			ret = PMREP_E_MALFORMED;
			break;
		}
		p += used;
		ret = pmrep_mirror_cfg_add_replica(cfg, O.addr, port);
	}
	uint8_t uuid[PMREP_UUID_SIZE];
	if (getrandom(uuid, sizeof(uuid), 0) != sizeof(uuid))
		memset(uuid, 0x5a, sizeof(uuid));
	uuid[0] |= 1;
	if (ret == 0)
		ret = pmrep_mirror_cfg_set_key(cfg, Key, sizeof(Key));
	if (ret == 0)
		ret = pmrep_mirror_cfg_set_uuid(cfg, uuid);
	if (ret == 0)
		ret = pmrep_mirror_cfg_set_timeout(cfg, OP_TIMEOUT_MS);
	if (ret == 0 && Mirror_record_in_memory)
		ret = pmrep_mirror_cfg_set_state_path(cfg, NULL);
	if (ret == 0 && ex && ex->window)
		ret = pmrep_mirror_cfg_set_window(cfg, ex->window);
	if (ret == 0 && O.mirror_plain)
		ret = pmrep_mirror_cfg_set_tls(cfg, false);
	if (ret == 0 && O.mirror_fg_recovery)
		ret = pmrep_mirror_cfg_set_background_recovery(cfg, false);
	if (ret == 0 && O.mirror_psn)
		ret = pmrep_mirror_cfg_set_persist_seq(cfg, true);
	if (ret == 0 && ex && ex->quorum)
		ret = pmrep_mirror_cfg_set_quorum(cfg, ex->quorum);
	if (ret == 0 && ex && ex->set_max_lag)
		ret = pmrep_mirror_cfg_set_max_lag(cfg, ex->max_lag);
	if (ret == 0 && ex && ex->backoff_min_ms)
		ret = pmrep_mirror_cfg_set_backoff(cfg, ex->backoff_min_ms,
				ex->backoff_max_ms);
	if (ret == 0 && ex && ex->resync_rate)
		ret = pmrep_mirror_cfg_set_resync_rate(cfg, ex->resync_rate);
	snprintf(mi->path, sizeof(mi->path), "/dev/shm/pmrep-bench-%ld-local%u",
			(long)getpid(), tag);
	unlink(mi->path);
	if (ret == 0)
		ret = pmrep_pmem_open(mi->path, PMREP_PMEM_CREATE, size,
				PMREP_PMEM_GRANULARITY_PAGE, &mi->pmem);
	/*
	 * retried: on verbs the target may see the AUTH message before its
	 * own ESTABLISHED event and fail to answer it (the target handles
	 * messages before connection events; the verbs provider refuses to
	 * post until it has read ESTABLISHED), which ends that handshake
	 */
	for (int attempt = 0; ret == 0 && attempt < 5; attempt++) {
		ret = pmrep_mirror_new(mi->pmem, cfg, &mi->m);
		if (ret == 0 || (ret != PMREP_E_CONN_LOST && ret != PMREP_E_TIMEOUT))
			break;
		fprintf(stderr, "pmrep-bench: mirror of %u replicas: %s; retrying\n",
				nrep, pmrep_err_to_str(ret));
		usleep(200000);
		if (attempt < 4)
			ret = 0;
	}
	(void) pmrep_mirror_cfg_delete(&cfg);
	if (ret) {
		fprintf(stderr, "pmrep-bench: mirror of %u replicas: %s (%s)\n",
				nrep, pmrep_err_to_str(ret), pmrep_err_msg());
		(void) pmrep_pmem_close(&mi->pmem);
		unlink(mi->path);
		state_unlink(mi->path);
		return -1;
	}
	mi->persist = pmrep_pmem_get_persist_fn(mi->pmem);
	struct pmrep_replica_status st;
	mi->method = "?";
	if (pmrep_mirror_get_replica_status(mi->m, 0, &st) == 0)
		mi->method = pmrep_mirror_method_str(st.method);
	return 0;
}

static void
mirror_close(struct mirror *mi)
{
	char reply[64];
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "LOG %d",
			(int)PMREP_LOG_FATAL);
	(void) pmrep_mirror_delete(&mi->m);
	(void) pmrep_pmem_close(&mi->pmem);
	if (mi->path[0]) {
		unlink(mi->path);
		state_unlink(mi->path);
	}
	mi->path[0] = '\0';
}

static int
mirror_run(struct mirror *mi, size_t size, int ms, bool local_only,
		struct bench_samples *s)
{
	uint8_t *base = pmrep_pmem_get_address(mi->pmem);
	size_t nslots = mi->size / size;
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0;
	for (uint64_t seq = 0;; seq++) {
		size_t off = (size_t)(seq % nslots) * size;
		base[off] = (uint8_t)seq;	/* something to persist */
		uint64_t a = bench_now_ns();
		if (a >= end)
			break;
		if (local_only) {
			mi->persist(base + off, size);
		} else {
			int ret = pmrep_mirror_persist(mi->m, off, size, OP_TIMEOUT_MS);
			if (ret) {
				fprintf(stderr, "pmrep-bench: persist: %s (%s)\n",
						pmrep_err_to_str(ret), pmrep_err_msg());
				return -1;
			}
		}
		uint64_t b = bench_now_ns();
		s->all_ops++;
		if (a >= warm_end) {
			if (begin == 0)
				begin = a;
			bench_samples_add(s, b - a, size);
			s->elapsed_ns = b - begin;
		}
	}
	return 0;
}

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

/* -------------------------------------------------------------- output */

static char Host[128], Kernel[128], Cpu[128], Date[40];

static void
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

/* one measured point: pmrep's pooled result, its floor, the ratio */
struct point {
	const char *sweep;	/* lat, bw, rep */
	const char *level;	/* raw, mirror, local, librpma */
	const char *method;
	size_t size;
	unsigned qd, replicas;
	bool fd_wait;		/* waits on fds whatever --wait says (mirror):
				 * held against the blocking tcp floor */
	struct bench_result r;
	const char *floor_name;
	struct bench_result f;
	double ratio, ratio_min, ratio_max;	/* NAN: none */
	const char *ratio_kind;	/* "p50" (lower is better) or "bw" */
	double vs1;		/* replicas: p50 / p50 of 1 replica (NAN: none) */
	double vs_librpma;	/* p50 / librpma's p50 (NAN: none) */
	/* CPU use per operation, pooled over the rounds (ops 0: none) */
	struct cpu_acc cpu, fcpu;	/* pmrep's, the floor's */
	double cpu_ratio, cpu_ratio_min, cpu_ratio_max;	/* NAN: none */
};

static void
json_num(FILE *f, const char *k, double v)
{
	if (isnan(v) || isinf(v))
		fprintf(f, ",\"%s\":null", k);
	else
		fprintf(f, ",\"%s\":%.3f", k, v);
}

static void
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
	if (p->size >= (1u << 20) && p->size % (1u << 20) == 0)
		snprintf(sz, sizeof(sz), "%zuM", p->size >> 20);
	else if (p->size >= 1024 && p->size % 1024 == 0)
		snprintf(sz, sizeof(sz), "%zuK", p->size >> 10);
	else
		snprintf(sz, sizeof(sz), "%zu", p->size);
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
static void
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

static void
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

/* ---------------------------------------------------------------- floors */

static struct floor_tcp Floor = { .fd = -1 };
static bool Have_floor;

/* spin: the tcp floor busy-polls for its replies (--wait poll) */
/* *cpu: both processes' CPU use (tcp; perftest's: not measured) */
static bool
floor_lat(size_t size, bool spin, struct bench_samples *s,
		struct bench_result *r, struct cpu_acc *cpu)
{
	memset(cpu, 0, sizeof(*cpu));
	if (!Have_floor)
		return false;
	if (O.prov == PMREP_PROVIDER_TCP) {
		struct cpu_win w;
		bench_samples_reset(s);
		cpu_start(&w);
		if (floor_tcp_pingpong(&Floor, size, O.ms, spin, s))
			return false;
		cpu_stop(&w, s->all_ops, cpu);
		bench_summarize(s, r);
		return r->valid;
	}
	return floor_perftest("ib_read_lat", O.dev, O.addr, size,
			O.quick ? 300 : 1000, 0, 18515, r);
}

static bool
floor_bw(size_t size, bool spin, struct bench_samples *s,
		struct bench_result *r, struct cpu_acc *cpu)
{
	memset(cpu, 0, sizeof(*cpu));
	if (!Have_floor)
		return false;
	if (O.prov == PMREP_PROVIDER_TCP) {
		struct cpu_win w;
		bench_samples_reset(s);
		cpu_start(&w);
		if (floor_tcp_stream(&Floor, size, 256, O.ms, spin, s))
			return false;
		cpu_stop(&w, s->all_ops, cpu);
		bench_summarize(s, r);
		return r->valid;
	}
	return floor_perftest("ib_write_bw", O.dev, O.addr, size,
			O.quick ? 1000 : 5000, 0, 18516, r);
}

static const char *
floor_name(bool bw, bool spin)
{
	if (O.prov == PMREP_PROVIDER_TCP && spin)
		return bw ? "tcp-stream-spin" : "tcp-pingpong-spin";
	if (O.prov == PMREP_PROVIDER_TCP)
		return bw ? "tcp-stream" : "tcp-pingpong";
	return bw ? "ib_write_bw" : "ib_read_lat";
}

/* ------------------------------------------------------------- sweeps */

static struct bench_samples S_round, S_pool, S_floor;

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

static bool librpma_run(size_t size, int ms, struct bench_result *r);

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

static const char *
raw_method(const struct raw *r)
{
	switch (r->method) {
	case PMREP_FLUSH_METHOD_NATIVE: return "native";
	case PMREP_FLUSH_METHOD_APM: return "APM";
	default: return "none";
	}
}

static void
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

static void
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
		/* the local part of a persist on its own (no floor) */
		struct point l = { .sweep = "lat", .level = "local",
			.method = "msync", .size = O.sizes[i], .qd = 1,
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
static void
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

static void
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

/* ------------------------------------------- the pipelined mirror level */

/*
 * pmrep_mirror_persist_async of `size` bytes at ranges `2 * size` apart
 * (never adjacent: no coalescing, every request its own step), `depth`
 * requests outstanding (submitted, not yet handed out by poll), waiting
 * on the mirror's fd; for about `ms` after `warm_ms`. A request's latency
 * is from its submission (the local persist included) to its completion.
 * Completions are checked to come in submission order (Pipe_disorder
 * counts those that do not) and with result 0.
 */
#define PIPE_MAX 64
#define PIPE_SIZE (4u << 20)	/* the mirrored mapping of the pipe sweep */

/* a replica watched during a pipe_run (the frozen one of the quorum level) */
struct pipe_watch {
	unsigned idx;
	uint64_t t0;		/* ns: the run's start (just after the freeze) */
	uint64_t t_failed;	/* ns: first seen FAILED (0: never) */
	uint64_t t_last;	/* ns: the last completion */
	uint64_t before, after;	/* completions before / after it was FAILED */
	uint64_t max_before_ns;	/* the slowest completion before */
	bool saw_behind;
	struct pmrep_replica_status st;	/* at the end of the run */
	/* the resync sweep: */
	uint64_t nreq;		/* > 0: submit that many, then finish */
	bool events;		/* take the mirror's events, noting idx's */
	bool stop_in_sync;	/* finish once idx is IN_SYNC again */
	struct bench_samples *during;	/* persists submitted after idx's
				 * SYNCING event and complete before its
				 * IN_SYNC go here, not into the run's */
	uint64_t t_syncing, t_in_sync;	/* ns: those events (0: not seen) */
	uint64_t t_status;	/* ns: status last read */
	uint64_t resync_total, resync_rate;	/* the last seen while SYNCING */
	unsigned nevents, lost;
};

/* take the mirror's waiting events, noting replica w->idx's (a SYNCING
 * before any IN_SYNC, the first IN_SYNC after it, FAILED) */
static void
pipe_events(struct mirror *mi, struct pipe_watch *w)
{
	struct pmrep_mirror_event ev;
	while (pmrep_mirror_get_event(mi->m, &ev) == 0) {
		uint64_t now = bench_now_ns();
		w->nevents++;
		w->lost += ev.lost;
		if (ev.replica != w->idx)
			continue;
		if (ev.to == PMREP_REPLICA_SYNCING && w->t_syncing == 0)
			w->t_syncing = now;
		if (ev.to == PMREP_REPLICA_IN_SYNC && w->t_in_sync == 0)
			w->t_in_sync = now;
		if (ev.to == PMREP_REPLICA_FAILED && w->t_failed == 0)
			w->t_failed = now;
	}
}

static uint64_t Pipe_disorder;

static int
pipe_run(struct mirror *mi, size_t size, unsigned depth, int warm_ms, int ms,
		struct bench_samples *s, struct pipe_watch *w)
{
	struct pmrep_mirror_completion c[PIPE_MAX];
	uint64_t t_sub[PIPE_MAX], seq_of[PIPE_MAX];
	unsigned free_slot[PIPE_MAX], nfree = 0;
	uint8_t *base = pmrep_pmem_get_address(mi->pmem);
	size_t stride = 2 * size, nslots = mi->size / stride;
	int fd = -1, ret = 0;
	(void) pmrep_mirror_get_fd(mi->m, &fd);
	if (depth > PIPE_MAX)
		depth = PIPE_MAX;
	for (unsigned i = 0; i < depth; i++)
		free_slot[nfree++] = depth - 1 - i;
	uint64_t seq = 0, next_done = 0;
	unsigned out = 0;
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)warm_ms * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0, idle_since = t0;
	if (w)
		w->t0 = t0;
	for (;;) {
		uint64_t now = bench_now_ns();
		bool more = now < end;
		if (w && w->nreq && seq >= w->nreq)
			more = false;
		if (w && w->stop_in_sync && w->t_in_sync)
			more = false;
		while (more && nfree > 0) {
			unsigned slot = free_slot[--nfree];
			size_t off = (size_t)(seq % nslots) * stride;
			base[off] = (uint8_t)seq;	/* something to persist */
			t_sub[slot] = bench_now_ns();
			seq_of[slot] = seq;
			ret = pmrep_mirror_persist_async(mi->m, off, size,
					(void *)(uintptr_t)(slot + 1));
			if (ret) {
				fprintf(stderr, "pmrep-bench: persist_async: %s (%s)\n",
						pmrep_err_to_str(ret), pmrep_err_msg());
				return -1;
			}
			seq++;
			out++;
		}
		if (out == 0)
			break;
		int n = 0;
		ret = pmrep_mirror_poll(mi->m, c, PIPE_MAX, &n);
		if (ret) {
			fprintf(stderr, "pmrep-bench: mirror poll: %s (%s)\n",
					pmrep_err_to_str(ret), pmrep_err_msg());
			return -1;
		}
		now = bench_now_ns();
		if (n == 0) {
			if (now - idle_since > (uint64_t)OP_TIMEOUT_MS * 1000000u) {
				fprintf(stderr, "pmrep-bench: pipeline: no completion in %d ms with %u outstanding (window %u)\n",
						OP_TIMEOUT_MS, out, depth);
				return -1;
			}
			struct pollfd p = { fd, POLLIN, 0 };
			(void) poll(&p, 1, 100);
			continue;
		}
		idle_since = now;
		for (int i = 0; i < n; i++) {
			unsigned slot = (unsigned)((uintptr_t)c[i].ctx - 1);
			if (slot >= depth) {
				fprintf(stderr, "pmrep-bench: pipeline: a completion with an unknown ctx\n");
				return -1;
			}
			if (c[i].result) {
				fprintf(stderr, "pmrep-bench: pipeline: persist at %zu: %s\n",
						c[i].offset, pmrep_err_to_str(c[i].result));
				return -1;
			}
			if (seq_of[slot] != next_done)
				Pipe_disorder++;
			next_done = seq_of[slot] + 1;
			uint64_t lat = now - t_sub[slot];
			s->all_ops++;
			if (w && w->during && w->t_syncing &&
					t_sub[slot] >= w->t_syncing &&
					w->t_in_sync == 0) {
				bench_samples_add(w->during, lat, size);
			} else if (t_sub[slot] >= warm_end && now < end) {
				if (begin == 0)
					begin = t_sub[slot];
				bench_samples_add(s, lat, size);
				s->elapsed_ns = now - begin;
			}
			if (w) {
				if (w->t_failed == 0) {
					w->before++;
					if (lat > w->max_before_ns)
						w->max_before_ns = lat;
				} else {
					w->after++;
				}
				w->t_last = now;
			}
			free_slot[nfree++] = slot;
			out--;
		}
		if (w && w->events)
			pipe_events(mi, w);
		if (w && w->events && now - w->t_status > 1000000u) {
			struct pmrep_replica_status st;
			w->t_status = now;
			if (pmrep_mirror_get_replica_status(mi->m, w->idx, &st) == 0 &&
					st.state == PMREP_REPLICA_SYNCING) {
				w->resync_total = st.resync_total;
				if (st.resync_rate)
					w->resync_rate = st.resync_rate;
			}
		}
		if (w && !w->events && w->t_failed == 0) {
			struct pmrep_replica_status st;
			if (pmrep_mirror_get_replica_status(mi->m, w->idx, &st) == 0) {
				if (st.state == PMREP_REPLICA_BEHIND)
					w->saw_behind = true;
				if (st.state == PMREP_REPLICA_FAILED)
					w->t_failed = bench_now_ns();
			}
		}
	}
	if (w)
		(void) pmrep_mirror_get_replica_status(mi->m, w->idx, &w->st);
	return 0;
}

#define PIPE_NW MAX_LIST	/* windows at most (O.windows) */

/*
 * The pipeline against the transport it runs on, in every round: the tcp
 * stream floor (4 KiB messages back to back), then per window W the raw
 * level at queue depth W (pmrep_write + flush PERSISTENT, one conn) and a
 * 1-replica mirror of window W with W requests outstanding. Ratios within
 * the round (mirror / raw at the same depth, mirror / tcp-stream, raw /
 * tcp-stream, mirror W / mirror 1), the median [min-max] of the rounds.
 * Figures only: no pass / fail.
 */
static void
sweep_pipe(void)
{
	const size_t size = 4096;
	struct raw r;
	struct mirror mi[PIPE_NW];
	unsigned nm = 0, nw = O.nwindows;
	char reply[64];
	memset(&r, 0, sizeof(r));
	memset(mi, 0, sizeof(mi));
	/* the raw level as the mirror runs: TLS when its mirrors have it,
	 * the source a pmem mapping in /dev/shm like the mirror's */
	Raw_tls = O.prov == PMREP_PROVIDER_TCP && !O.mirror_plain;
	Raw_pmem_src = true;
	int rret = O.pipe_raw ? raw_open(&r, size) : 0;
	Raw_tls = Raw_pmem_src = false;
	if (rret) {
		Failures++;
		(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
		return;
	}
	for (; O.pipe_mirror && nm < nw; nm++) {
		struct mirror_extra ex = { .window = O.windows[nm] };
		Mirror_extra = &ex;
		int ret = mirror_open(&mi[nm], 1, PIPE_SIZE, 20 + nm);
		Mirror_extra = NULL;
		if (ret) {
			Failures++;
			goto out;
		}
	}
	int rounds = O.rounds < 64 ? O.rounds : 64;
	double mmib[PIPE_NW][64], mops[PIPE_NW][64], rmib[PIPE_NW][64];
	double q_raw[PIPE_NW][64], q_fl[PIPE_NW][64], q_rfl[PIPE_NW][64];
	double q_w1[PIPE_NW][64], fmib[64];
	struct bench_samples pools[PIPE_NW];
	struct cpu_acc mcpu[PIPE_NW], rcpu[PIPE_NW];
	memset(mcpu, 0, sizeof(mcpu));
	memset(rcpu, 0, sizeof(rcpu));
	unsigned ninit = 0;
	for (; ninit < nw; ninit++)
		if (bench_samples_init(&pools[ninit], SAMPLES_CAP / 4))
			break;
	if (ninit < nw) {
		Failures++;
		goto fini;
	}
	int nfl = 0;
	uint64_t disorder0 = Pipe_disorder;
	for (int round = 0; round < rounds; round++) {
		struct bench_result f = { 0 }, res;
		struct cpu_acc fc;
		bool have_f = O.floor && O.prov == PMREP_PROVIDER_TCP &&
			floor_bw(size, false, &S_floor, &f, &fc);
		if (have_f)
			fmib[nfl++] = f.mib_per_s;
		for (unsigned i = 0; i < nw; i++) {
			unsigned wnd = O.windows[i];
			struct cpu_win cw;
			struct cpu_acc ca;
			rmib[i][round] = NAN;
			if (O.pipe_raw) {
				bench_samples_reset(&S_round);
				cpu_start(&cw);
				if (raw_run(&r, size, wnd, O.ms, &S_round)) {
					Failures++;
					goto fini;
				}
				cpu_stop(&cw, S_round.all_ops, &ca);
				cpu_add(&rcpu[i], &ca);
				bench_summarize(&S_round, &res);
				rmib[i][round] = res.mib_per_s;
			}
			mmib[i][round] = mops[i][round] = NAN;
			q_raw[i][round] = q_fl[i][round] = NAN;
			q_w1[i][round] = NAN;
			q_rfl[i][round] = have_f ? rmib[i][round] / f.mib_per_s : NAN;
			if (!O.pipe_mirror)
				continue;
			bench_samples_reset(&S_round);
			cpu_start(&cw);
			if (pipe_run(&mi[i], size, wnd, WARMUP_MS, O.ms, &S_round,
					NULL)) {
				Failures++;
				goto fini;
			}
			cpu_stop(&cw, S_round.all_ops, &ca);
			cpu_add(&mcpu[i], &ca);
			pool_add(&pools[i], &S_round);
			bench_summarize(&S_round, &res);
			mmib[i][round] = res.mib_per_s;
			mops[i][round] = res.ops_per_s;
			q_raw[i][round] = mmib[i][round] / rmib[i][round];
			q_fl[i][round] = have_f ? mmib[i][round] / f.mib_per_s : NAN;
			q_w1[i][round] = mmib[i][round] / mmib[0][round];
		}
	}
	fprintf(Tab, "\npipe: pipelined mirror, 4 KiB persist_async of ranges 8 KiB apart (no coalescing), 1 replica (%s), W requests outstanding, waiting on the mirror fd;\n"
			"  raw = pmrep_write + flush PERSISTENT at queue depth W on one conn (%s, from a /dev/shm pmem mapping like the mirror's); floor tcp-stream (4 KiB messages back to back); %d round(s) x %d ms;\n"
			"  ratios within a round, median [min-max] of the rounds; tcp-stream floor %.1f MiB/s (median)\n",
			nm ? mi[0].method : "-",
			O.prov != PMREP_PROVIDER_TCP ? "verbs" :
			O.mirror_plain ? "plaintext tcp, as the mirror" :
			"TLS 1.3, as the mirror", rounds, O.ms, median(fmib, nfl));
	fprintf(Tab, "  cpu us/op: user+sys of both processes (bench + server, whose targets serve the mirror) per operation, warm-up included\n");
	fprintf(Tab, "  %3s %10s %11s %8s %8s %10s  %-20s %-20s %-20s %-20s %s\n", "W",
			"MiB/s", "persists/s", "p50us", "p99us", "raw MiB/s",
			"mirror/raw(qd W)", "mirror/tcp-stream", "raw/tcp-stream",
			"mirror W / W 1", "cpu us/op mirror raw");
	for (unsigned i = 0; i < nw; i++) {
		struct bench_result pr;
		bench_summarize(&pools[i], &pr);
		double rm = median(rmib[i], rounds);
		char a[3][48], b[48];
		double *qs[3] = { q_raw[i], q_fl[i], q_rfl[i] };
		for (int k = 0; k < 3; k++) {
			if (isnan(qs[k][0])) {
				snprintf(a[k], sizeof(a[k]), "-");
				continue;
			}
			double med = median(qs[k], rounds);
			snprintf(a[k], sizeof(a[k]), "%.2f [%.2f-%.2f]", med,
					qs[k][0], qs[k][rounds - 1]);
		}
		double w1 = median(q_w1[i], rounds);
		snprintf(b, sizeof(b), "%.2f [%.2f-%.2f]", w1, q_w1[i][0],
				q_w1[i][rounds - 1]);
		double mm = median(mmib[i], rounds), mo = median(mops[i], rounds);
		fprintf(Tab, "  %3u %10.1f %11.0f %8.1f %8.1f %10.1f  %-20s %-20s %-20s %-20s %6.2f %6.2f\n",
				O.windows[i], mm, mo, pr.p50_us, pr.p99_us, rm,
				a[0], a[1], a[2], b, cpu_us_op(&mcpu[i]),
				cpu_us_op(&rcpu[i]));
		if (Json) {
			fprintf(Json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\",\"provider\":\"%s\","
					"\"sweep\":\"pipe\",\"level\":\"mirror\",\"method\":\"%s\",\"size\":%zu,"
					"\"window\":%u,\"qd\":%u,\"replicas\":1",
					Run_id, Date, Host, prov_str(),
					nm ? mi[i].method : "-",
					size, O.windows[i], O.windows[i]);
			json_num(Json, "mib_per_s", mm);
			json_num(Json, "ops_per_s", mo);
			json_num(Json, "p50_us", pr.p50_us);
			json_num(Json, "p99_us", pr.p99_us);
			json_num(Json, "raw_mib_per_s", rm);
			json_num(Json, "floor_mib_per_s", median(fmib, nfl));
			json_num(Json, "ratio_raw", median(q_raw[i], rounds));
			json_num(Json, "ratio_floor", isnan(q_fl[i][0]) ? NAN :
					median(q_fl[i], rounds));
			json_num(Json, "raw_ratio_floor", isnan(q_rfl[i][0]) ? NAN :
					median(q_rfl[i], rounds));
			json_num(Json, "vs_window_1", w1);
			json_num(Json, "cpu_us_op", cpu_us_op(&mcpu[i]));
			json_num(Json, "raw_cpu_us_op", cpu_us_op(&rcpu[i]));
			fprintf(Json, ",\"rounds\":%d}\n", rounds);
			fflush(Json);
		}
	}
	if (Pipe_disorder != disorder0)
		fprintf(Tab, "  NOTE: %llu completion(s) out of submission order\n",
				(unsigned long long)(Pipe_disorder - disorder0));
fini:
	for (unsigned i = 0; i < ninit; i++)
		bench_samples_fini(&pools[i]);
out:
	for (unsigned i = 0; i < nm; i++)
		mirror_close(&mi[i]);
	raw_close(&r);
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
}

/* the mirror level for track.c (bench.h) */
struct bench_mirror {
	struct mirror mi;
};

int
bench_mirror_open(struct bench_mirror **out, size_t map, unsigned window,
		bool track)
{
	static unsigned tag = 40;
	struct bench_mirror *b = calloc(1, sizeof(*b));
	struct mirror_extra ex = { .window = window };
	bool psn = O.mirror_psn;
	O.mirror_psn = track;
	Mirror_extra = &ex;
	int ret = b ? mirror_open(&b->mi, 1, map, tag++) : -1;
	Mirror_extra = NULL;
	O.mirror_psn = psn;
	if (ret)
		free(b);
	*out = ret ? NULL : b;
	return ret ? -1 : 0;
}

void
bench_mirror_close(struct bench_mirror **m)
{
	if (*m) {
		mirror_close(&(*m)->mi);
		free(*m);
		*m = NULL;
	}
}

const char *
bench_mirror_method(const struct bench_mirror *m)
{
	return m ? m->mi.method : "-";
}

int
bench_mirror_run(struct bench_mirror *m, size_t size, unsigned window, int ms,
		struct bench_samples *s, double *cpu_us)
{
	struct cpu_win w;
	struct cpu_acc a;
	cpu_start(&w);
	int ret = window == 0 ? mirror_run(&m->mi, size, ms, false, s) :
		pipe_run(&m->mi, size, window, WARMUP_MS, ms, s, NULL);
	cpu_stop(&w, s->all_ops, &a);
	*cpu_us = cpu_us_op(&a);
	return ret;
}

/* ------------------------------------- quorum 1 of 2, one replica frozen */

/*
 * A target in a process of its own (this program re-executed with
 * --target-child), so that it can be frozen with SIGSTOP while the
 * server's targets go on: it prints "OK <port>" and serves until its
 * stdin ends.
 */
struct child_tgt {
	pid_t pid;
	int in_fd;		/* its stdin: closed to end it */
	char port[16];
	char path[128];
};

/* --target-child PATH SIZE ADDR [PORT]: never returns. With PORT: on
 * that port, the replica file at PATH kept as it is (a restart) */
static void
target_child(int argc, char *argv[])
{
	struct pmrep_target *t = NULL;
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_FATAL);
	int ret = target_make_at(argv[2], strtoull(argv[3], NULL, 0), argv[4],
			argc > 5 ? argv[5] : "0", argc <= 5, &t);
	if (ret) {
		printf("ERR %s: %s\n", pmrep_err_to_str(ret), pmrep_err_msg());
		fflush(stdout);
		_exit(1);
	}
	uint16_t port = 0;
	int fd = -1;
	(void) pmrep_target_get_port(t, &port);
	(void) pmrep_target_get_fd(t, &fd);
	printf("OK %u\n", port);
	fflush(stdout);
	for (;;) {
		struct pollfd p[2] = { { 0, POLLIN, 0 }, { fd, POLLIN, 0 } };
		if (poll(p, 2, 100) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			(void) pmrep_target_process(t, 0);
		if (p[0].revents) {
			char b[16];
			if (read(0, b, sizeof(b)) <= 0)
				break;
		}
	}
	(void) pmrep_target_delete(&t);
	unlink(argv[2]);
	_exit(0);
}

/* a target process on a fresh file (port NULL: the system's choice), or
 * (port set) restarted on that port with the file it left */
static int
child_tgt_start_at(struct child_tgt *c, unsigned idx, size_t size,
		const char *at_port)
{
	int in[2], out[2];
	char self[PATH_MAX], sz[32], line[128], at[16];
	if (at_port) {	/* it may be c->port */
		snprintf(at, sizeof(at), "%s", at_port);
		at_port = at;
	}
	memset(c, 0, sizeof(*c));
	c->pid = -1;
	c->in_fd = -1;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	snprintf(c->path, sizeof(c->path), "/dev/shm/pmrep-bench-%ld-ct%u",
			(long)getpid(), idx);
	snprintf(sz, sizeof(sz), "%zu", size);
	if (pipe2(in, O_CLOEXEC))
		return -1;
	if (pipe2(out, O_CLOEXEC)) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	fflush(NULL);
	c->pid = fork();
	if (c->pid == 0) {
		/* a frozen orphan would stay forever: killed with us */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (at_port)
			execl(self, self, "--target-child", c->path, sz, O.addr,
					at_port, (char *)NULL);
		else
			execl(self, self, "--target-child", c->path, sz, O.addr,
					(char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in_fd = in[1];
	int ret = c->pid < 0 ? -1 : ctrl_recv(out[0], line, sizeof(line),
			OP_TIMEOUT_MS);
	close(out[0]);
	unsigned port;
	if (ret || sscanf(line, "OK %u", &port) != 1) {
		fprintf(stderr, "pmrep-bench: target process: %s\n",
				ret ? "no answer" : line);
		return -1;
	}
	snprintf(c->port, sizeof(c->port), "%u", port);
	return 0;
}

static int
child_tgt_start(struct child_tgt *c, unsigned idx, size_t size)
{
	return child_tgt_start_at(c, idx, size, NULL);
}

static void
child_tgt_end(struct child_tgt *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGCONT);
		if (c->in_fd >= 0)
			close(c->in_fd);
		reap(c->pid, 5000);
	} else if (c->in_fd >= 0) {
		close(c->in_fd);
	}
	c->pid = -1;
	c->in_fd = -1;
	if (c->path[0])
		unlink(c->path);
	c->path[0] = '\0';
}

/* poll the mirror (it has nothing outstanding) until no replica is
 * BEHIND, for up to `ms`; *failed: the replicas found FAILED (a bit each) */
static void
pipe_settle(struct mirror *mi, int ms, unsigned *failed)
{
	int fd = -1;
	unsigned n = 0;
	(void) pmrep_mirror_get_fd(mi->m, &fd);
	(void) pmrep_mirror_get_replica_count(mi->m, &n);
	uint64_t until = bench_now_ns() + (uint64_t)ms * 1000000u;
	for (;;) {
		struct pmrep_mirror_completion c[4];
		int k = 0;
		(void) pmrep_mirror_poll(mi->m, c, 4, &k);
		bool behind = false;
		*failed = 0;
		for (unsigned i = 0; i < n && i < 32; i++) {
			struct pmrep_replica_status st;
			if (pmrep_mirror_get_replica_status(mi->m, i, &st))
				continue;
			if (st.state == PMREP_REPLICA_BEHIND)
				behind = true;
			if (st.state == PMREP_REPLICA_FAILED)
				*failed |= 1u << i;
		}
		if (!behind || bench_now_ns() > until)
			return;
		struct pollfd p = { fd, POLLIN, 0 };
		(void) poll(&p, 1, 10);
	}
}

#define QUORUM_WINDOW 16
#define QUORUM_MAX_LAG (1ull << 30)

/*
 * Quorum 1 of 2, window 16, 4 KiB persists as the pipe sweep, both
 * targets in processes of their own; per round: both live for O.ms,
 * then replica 1's process frozen (SIGSTOP) and the same run at once.
 * The cfg lag is 1 GiB, so what fails the frozen replica is the other
 * pull-ahead rule: PMREP_MIRROR_WINDOW_MAX steps behind. Reported: the
 * persists/s of both runs and their ratio (within the round), and
 * apart, the persists completed between the freeze and the frozen
 * replica's failure (how many, the slowest: none should wait for it),
 * the time to that failure, and the persists/s after it.
 */
static void
sweep_quorum(void)
{
	const size_t size = 4096;
	int rounds = O.rounds < 16 ? O.rounds : 16;
	double live[16], frozen[16], ratio[16], after_ops[16];
	double live_p99[16], before_max[16], fail_ms[16], before_n[16];
	int nr = 0;
	bool behind_all = true;
	unsigned still_failed = 0, live_failed = 0;
	int last_err = 0;
	const char *method = "?";
	for (int round = 0; round < rounds; round++) {
		struct child_tgt ct[2];
		struct mirror mi;
		bool ok = child_tgt_start(&ct[0], 0, PIPE_SIZE) == 0;
		ok = ok && child_tgt_start(&ct[1], 1, PIPE_SIZE) == 0;
		char ports[48];
		snprintf(ports, sizeof(ports), " %s %s", ct[0].port, ct[1].port);
		struct mirror_extra ex = { .window = QUORUM_WINDOW, .quorum = 1,
			.set_max_lag = true, .max_lag = QUORUM_MAX_LAG,
			.ports = ports };
		Mirror_extra = &ex;
		ok = ok && mirror_open(&mi, 2, PIPE_SIZE, 30) == 0;
		Mirror_extra = NULL;
		if (ok) {
			struct bench_result rl, rf;
			struct pipe_watch w = { .idx = 1 };
			method = mi.method;
			bench_samples_reset(&S_round);
			ok = pipe_run(&mi, size, QUORUM_WINDOW, WARMUP_MS, O.ms,
					&S_round, NULL) == 0;
			bench_summarize(&S_round, &rl);
			/* a clean start: both caught up, neither failed (a
			 * live replica pulled ahead in the live run: the
			 * freeze would leave none, so the round is skipped) */
			unsigned failed = 0;
			if (ok)
				pipe_settle(&mi, 1000, &failed);
			if (ok && failed) {
				fprintf(stderr, "pmrep-bench: quorum: replica(s) 0x%x FAILED during the live run (both targets live): %s; round skipped\n",
						failed, pmrep_err_msg());
				live_failed++;
				ok = false;
			} else if (ok && kill(ct[1].pid, SIGSTOP) == 0) {
				bench_samples_reset(&S_round);
				ok = pipe_run(&mi, size, QUORUM_WINDOW, 0, O.ms,
						&S_round, &w) == 0;
				bench_summarize(&S_round, &rf);
			} else {
				ok = false;
			}
			if (ok && rl.valid && rf.valid) {
				live[nr] = rl.ops_per_s;
				live_p99[nr] = rl.p99_us;
				frozen[nr] = rf.ops_per_s;
				ratio[nr] = rf.ops_per_s / rl.ops_per_s;
				before_n[nr] = (double)w.before;
				before_max[nr] = (double)w.max_before_ns / 1e3;
				fail_ms[nr] = w.t_failed ?
					(double)(w.t_failed - w.t0) / 1e6 : NAN;
				after_ops[nr] = w.t_failed && w.t_last > w.t_failed ?
					(double)w.after / ((double)(w.t_last -
					w.t_failed) / 1e9) : NAN;
				behind_all = behind_all && w.saw_behind;
				if (w.st.state == PMREP_REPLICA_FAILED)
					still_failed++;
				last_err = w.st.last_error;
				nr++;
			}
			if (!ok && !failed)
				Failures++;
			/* the frozen target killed first: else the mirror's
			 * recovery thread, attaching to it, holds
			 * pmrep_mirror_delete for the cfg timeout (10 s) */
			if (ct[1].pid > 0)
				kill(ct[1].pid, SIGKILL);
			mirror_close(&mi);
		} else {
			Failures++;
		}
		child_tgt_end(&ct[0]);
		child_tgt_end(&ct[1]);
	}
	fprintf(Tab, "\nquorum 1 of 2: window %d, 4 KiB persist_async 8 KiB apart, %d outstanding, targets in processes of their own (%s); per round both live,\n"
			"  then replica 1 frozen (SIGSTOP) and the same run at once; cfg lag %llu MiB (so the %d-step pull-ahead fails it); %d round(s) x %d ms\n",
			QUORUM_WINDOW, QUORUM_WINDOW, method,
			(unsigned long long)(QUORUM_MAX_LAG >> 20),
			PMREP_MIRROR_WINDOW_MAX, nr, O.ms);
	if (live_failed)
		fprintf(Tab, "  NOTE: in %u round(s) a live replica was FAILED during the both-live run (pulled ahead?); those rounds skipped\n",
				live_failed);
	if (nr == 0) {
		fprintf(Tab, "  not measured\n");
		return;
	}
	double rmed = median(ratio, nr), rmin = ratio[0], rmax = ratio[nr - 1];
	double lv = median(live, nr), fz = median(frozen, nr);
	double lp99 = median(live_p99, nr), bn = median(before_n, nr);
	double bmax = median(before_max, nr), fm = median(fail_ms, nr);
	double ao = median(after_ops, nr);
	fprintf(Tab, "  both live:     %10.0f persists/s  (p99 %.1f us)\n", lv, lp99);
	fprintf(Tab, "  one frozen:    %10.0f persists/s  frozen/live %.2f [%.2f-%.2f]\n",
			fz, rmed, rmin, rmax);
	fprintf(Tab, "  freeze -> replica 1 FAILED: %.2f ms; %.0f persists completed meanwhile (BEHIND seen: %s), the slowest %.1f us;\n"
			"  after it: %.0f persists/s; replica 1 at the end: %s, last error %s\n",
			fm, bn, behind_all ? "yes" : "no", bmax, ao,
			still_failed == (unsigned)nr ? "failed" : "not failed in every round",
			last_err ? pmrep_err_to_str(last_err) : "none");
	if (Json) {
		fprintf(Json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\",\"provider\":\"%s\","
				"\"sweep\":\"quorum\",\"level\":\"mirror\",\"method\":\"%s\",\"size\":%zu,"
				"\"window\":%d,\"replicas\":2,\"quorum\":1",
				Run_id, Date, Host, prov_str(), method, size, QUORUM_WINDOW);
		json_num(Json, "live_ops_per_s", lv);
		json_num(Json, "live_p99_us", lp99);
		json_num(Json, "frozen_ops_per_s", fz);
		json_num(Json, "ratio", rmed);
		json_num(Json, "ratio_min", rmin);
		json_num(Json, "ratio_max", rmax);
		json_num(Json, "freeze_to_failed_ms", fm);
		json_num(Json, "persists_before_failed", bn);
		json_num(Json, "max_us_before_failed", bmax);
		json_num(Json, "after_failed_ops_per_s", ao);
		fprintf(Json, ",\"rounds\":%d,\"rounds_live_failed\":%u}\n", nr,
				live_failed);
		fflush(Json);
	}
}


/* ------------------------------ persists during a resync, reconnect time */

#define RESYNC_WINDOW 16
#define RESYNC_BACKOFF_MIN_MS 10
#define RESYNC_BACKOFF_MAX_MS 50
#define RESYNC_DEADLINE_MS 20000

/* poll the mirror until every replica is IN_SYNC (taking its events),
 * for up to `ms`; 0 when they are */
static int
wait_all_in_sync(struct mirror *mi, int ms)
{
	int fd = -1;
	unsigned n = 0;
	(void) pmrep_mirror_get_fd(mi->m, &fd);
	(void) pmrep_mirror_get_replica_count(mi->m, &n);
	uint64_t until = bench_now_ns() + (uint64_t)ms * 1000000u;
	for (;;) {
		struct pmrep_mirror_completion c[4];
		struct pmrep_mirror_event ev;
		int k = 0;
		(void) pmrep_mirror_poll(mi->m, c, 4, &k);
		while (pmrep_mirror_get_event(mi->m, &ev) == 0)
			;
		bool all = true;
		for (unsigned i = 0; i < n; i++) {
			struct pmrep_replica_status st;
			if (pmrep_mirror_get_replica_status(mi->m, i, &st) ||
					st.state != PMREP_REPLICA_IN_SYNC)
				all = false;
		}
		if (all)
			return 0;
		if (bench_now_ns() > until)
			return -1;
		struct pollfd p = { fd, POLLIN, 0 };
		(void) poll(&p, 1, 10);
	}
}

struct resync_round {
	struct bench_result before, during;
	double before_ops, during_ops;	/* persists/s */
	double reconnect_ms;	/* target restarted -> SYNCING event */
	double resync_ms;	/* SYNCING -> IN_SYNC events */
	double total_ms;	/* target restarted -> IN_SYNC */
	double bytes;		/* resync_total (status, last seen) */
	double rate_status;	/* B/s: status resync_rate, last seen */
	double rate_events;	/* B/s: bytes / resync_ms */
	double outage_mib;	/* bytes written while it was down */
};

/*
 * One round at cfg resync rate `rate`: two targets in processes of their
 * own, quorum 1 of 2, window 16, back-off 10..50 ms; both IN_SYNC, then
 * the baseline run (O.ms); replica 1's process killed (SIGKILL), every
 * 8 KiB-strided slot of the mapping persisted once (so every region is
 * out of sync for it), its process restarted on the same port with the
 * file it left; the foreground goes on at once until the mirror's own
 * thread has reconnected and resynced it (its IN_SYNC event).
 */
static int
resync_round(uint64_t rate, struct bench_samples *before,
		struct bench_samples *during, struct resync_round *rr,
		const char **method)
{
	const size_t size = 4096, msize = O.resync_size;
	struct child_tgt ct[2];
	struct mirror mi;
	int ret = -1;
	memset(rr, 0, sizeof(*rr));
	bool ok = child_tgt_start(&ct[0], 0, msize) == 0;
	ok = ok && child_tgt_start(&ct[1], 1, msize) == 0;
	char ports[48];
	snprintf(ports, sizeof(ports), " %s %s", ct[0].port, ct[1].port);
	struct mirror_extra ex = { .window = RESYNC_WINDOW, .quorum = 1,
		.set_max_lag = true, .max_lag = QUORUM_MAX_LAG, .ports = ports,
		.backoff_min_ms = RESYNC_BACKOFF_MIN_MS,
		.backoff_max_ms = RESYNC_BACKOFF_MAX_MS, .resync_rate = rate };
	Mirror_extra = &ex;
	ok = ok && mirror_open(&mi, 2, msize, 40) == 0;
	Mirror_extra = NULL;
	if (!ok)
		goto end;
	*method = mi.method;
	if (wait_all_in_sync(&mi, RESYNC_DEADLINE_MS)) {
		fprintf(stderr, "pmrep-bench: resync: the replicas not both IN_SYNC after creation\n");
		goto close;
	}
	bench_samples_reset(before);
	if (pipe_run(&mi, size, RESYNC_WINDOW, WARMUP_MS, O.ms, before, NULL))
		goto close;
	bench_summarize(before, &rr->before);
	rr->before_ops = rr->before.ops_per_s;

	/* the outage: killed, every slot written once */
	kill(ct[1].pid, SIGKILL);
	reap(ct[1].pid, 5000);
	ct[1].pid = -1;
	close(ct[1].in_fd);
	ct[1].in_fd = -1;
	struct pipe_watch wo = { .idx = 1, .events = true,
		.nreq = msize / (2 * size) };
	bench_samples_reset(&S_round);
	if (pipe_run(&mi, size, RESYNC_WINDOW, 0, RESYNC_DEADLINE_MS,
			&S_round, &wo))
		goto close;
	rr->outage_mib = (double)(wo.nreq * size) / (1 << 20);
	if (wo.t_failed == 0) {
		/* its failure may come after the last completion */
		uint64_t until = bench_now_ns() + 5000000000ull;
		struct pmrep_replica_status st;
		while (bench_now_ns() < until &&
				pmrep_mirror_get_replica_status(mi.m, 1, &st) == 0 &&
				st.state != PMREP_REPLICA_FAILED)
			usleep(1000);
		pipe_events(&mi, &wo);
	}

	/* the restart: same port, the file it left */
	char port[16];
	snprintf(port, sizeof(port), "%s", ct[1].port);
	if (child_tgt_start_at(&ct[1], 1, msize, port)) {
		fprintf(stderr, "pmrep-bench: resync: the target's restart on port %s failed\n",
				port);
		goto close;
	}
	struct pipe_watch w = { .idx = 1, .events = true,
		.stop_in_sync = true, .during = during };
	bench_samples_reset(during);
	bench_samples_reset(&S_round);
	uint64_t t_restart = bench_now_ns();
	if (pipe_run(&mi, size, RESYNC_WINDOW, 0, RESYNC_DEADLINE_MS,
			&S_round, &w))
		goto close;
	if (w.t_syncing == 0 || w.t_in_sync == 0) {
		fprintf(stderr, "pmrep-bench: resync: replica 1 %s within %d ms of its restart\n",
				w.t_syncing ? "not IN_SYNC" : "not SYNCING",
				RESYNC_DEADLINE_MS);
		struct pmrep_replica_status st;
		if (pmrep_mirror_get_replica_status(mi.m, 1, &st) == 0)
			fprintf(stderr, "pmrep-bench: resync: replica 1 then: state %d, lag %" PRIu64
					" B, resync done %" PRIu64 " of %" PRIu64 " B, rate %" PRIu64
					" B/s, eta %" PRId64 " ms, mapping %zu B, last error %d\n",
					(int)st.state, st.lag_bytes, st.resync_done,
					st.resync_total, st.resync_rate, st.resync_eta_ms,
					msize, st.last_error);
		goto close;
	}
	rr->reconnect_ms = (double)(w.t_syncing - t_restart) / 1e6;
	rr->resync_ms = (double)(w.t_in_sync - w.t_syncing) / 1e6;
	rr->total_ms = (double)(w.t_in_sync - t_restart) / 1e6;
	rr->bytes = (double)w.resync_total;
	rr->rate_status = (double)w.resync_rate;
	rr->rate_events = rr->resync_ms > 0 ?
		rr->bytes / (rr->resync_ms / 1e3) : NAN;
	during->elapsed_ns = w.t_in_sync - w.t_syncing;
	bench_summarize(during, &rr->during);
	rr->during_ops = (double)during->ops / (rr->resync_ms / 1e3);
	ret = 0;
close:
	mirror_close(&mi);
end:
	child_tgt_end(&ct[0]);
	child_tgt_end(&ct[1]);
	return ret;
}

/*
 * Per cfg resync rate: resync_round O.rounds times; reported, the
 * median of the rounds: the foreground's persist p50 / p99 and
 * persists/s during the resync (persists submitted between the SYNCING
 * and IN_SYNC events) against the baseline of the same round (both in
 * sync, before the kill), their ratio within the round; apart, the
 * reconnect time (restart -> SYNCING), the resync's time and bytes and
 * its rate (the status's resync_rate, and bytes / time between the
 * events). Figures only.
 */
static void
sweep_resync(void)
{
	int rounds = O.rounds < 16 ? O.rounds : 16;
	struct bench_samples before, during;
	if (bench_samples_init(&before, SAMPLES_CAP / 4) ||
			bench_samples_init(&during, SAMPLES_CAP / 4)) {
		Failures++;
		return;
	}
	const char *method = "?";
	fprintf(Tab, "\nresync: quorum 1 of 2, window %d, 4 KiB persist_async 8 KiB apart, mapping %zu MiB, targets in processes of their own;\n"
			"  per round: both IN_SYNC, baseline run (%d ms); replica 1's target killed (SIGKILL), every slot written once (%zu MiB),\n"
			"  restarted on its port with its file; the foreground goes on while the mirror's thread reconnects (back-off %d..%d ms)\n"
			"  and resyncs it; 'during': persists submitted between its SYNCING and IN_SYNC events; median of %d round(s)\n",
			RESYNC_WINDOW, O.resync_size >> 20, O.ms,
			(O.resync_size / 2) >> 20, RESYNC_BACKOFF_MIN_MS,
			RESYNC_BACKOFF_MAX_MS, rounds);
	fprintf(Tab, "  %8s %8s %8s %8s %8s %7s %9s %9s %7s %8s %9s %9s %8s %9s %9s\n",
			"rate", "p50 bef", "p99 bef", "p50 dur", "p99 dur", "p99 x",
			"ops/s bef", "ops/s dur", "n dur", "recon ms", "resync ms",
			"total ms", "MiB", "MiB/s st", "MiB/s ev");
	for (unsigned ri = 0; ri < O.nresync_rates; ri++) {
		uint64_t rate = O.resync_rates[ri];
		double v[15][16];
		int nr = 0;
		for (int round = 0; round < rounds; round++) {
			struct resync_round rr;
			if (resync_round(rate, &before, &during, &rr, &method)) {
				Failures++;
				continue;
			}
			if (!rr.before.valid || !rr.during.valid) {
				fprintf(stderr, "pmrep-bench: resync: no persist %s (rate %llu MiB/s)\n",
						rr.before.valid ? "during the resync" : "before",
						(unsigned long long)(rate >> 20));
				continue;
			}
			double row[15] = { rr.before.p50_us, rr.before.p99_us,
				rr.during.p50_us, rr.during.p99_us,
				rr.during.p99_us / rr.before.p99_us,
				rr.before_ops, rr.during_ops, (double)during.ops,
				rr.reconnect_ms, rr.resync_ms, rr.total_ms,
				rr.bytes / (1 << 20), rr.rate_status / (1 << 20),
				rr.rate_events / (1 << 20),
				rr.during.p50_us / rr.before.p50_us };
			for (int k = 0; k < 15; k++)
				v[k][nr] = row[k];
			nr++;
		}
		char rs[16];
		if (rate)
			snprintf(rs, sizeof(rs), "%llu", (unsigned long long)(rate >> 20));
		else
			snprintf(rs, sizeof(rs), "unlim");
		if (nr == 0) {
			fprintf(Tab, "  %8s not measured\n", rs);
			continue;
		}
		double m[15];
		char x[32];
		for (int k = 0; k < 15; k++)
			m[k] = median(v[k], nr);
		snprintf(x, sizeof(x), "%.2f", m[4]);
		fprintf(Tab, "  %8s %8.1f %8.1f %8.1f %8.1f %7s %9.0f %9.0f %7.0f %8.1f %9.1f %9.1f %8.1f %9.1f %9.1f\n",
				rs, m[0], m[1], m[2], m[3], x, m[5], m[6], m[7],
				m[8], m[9], m[10], m[11], m[12], m[13]);
		if (nr > 1)
			fprintf(Tab, "  %8s p99 during/before over the rounds: [%.2f-%.2f]\n",
					"", v[4][0], v[4][nr - 1]);
		if (Json) {
			fprintf(Json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\",\"provider\":\"%s\","
					"\"sweep\":\"resync\",\"level\":\"mirror\",\"method\":\"%s\",\"size\":4096,"
					"\"window\":%d,\"replicas\":2,\"quorum\":1,\"mapping\":%zu,"
					"\"resync_rate_cfg\":%llu",
					Run_id, Date, Host, prov_str(), method,
					RESYNC_WINDOW, O.resync_size,
					(unsigned long long)rate);
			static const char *const key[15] = { "before_p50_us",
				"before_p99_us", "during_p50_us", "during_p99_us",
				"p99_ratio", "before_ops_per_s", "during_ops_per_s",
				"during_n", "reconnect_ms", "resync_ms", "total_ms",
				"resync_mib", "resync_mib_per_s_status",
				"resync_mib_per_s_events", "p50_ratio" };
			for (int k = 0; k < 15; k++)
				json_num(Json, key[k], m[k]);
			fprintf(Json, ",\"rounds\":%d}\n", nr);
			fflush(Json);
		}
	}
	fprintf(Tab, "  rate: the cfg resync rate, MiB/s; p99 x: p99 during / before (within a round); MiB/s st: the status's resync_rate, ev: MiB / resync ms\n");
	bench_samples_fini(&before);
	bench_samples_fini(&during);
}

/* ------------------------------------------------------ tls: its cost */

/*
 * TLS 1.3 (external PSK, AES-128-GCM or ChaCha20-Poly1305, psk_dhe_ke)
 * against plain tcp, the same raw level (write + flush PERSISTENT), both
 * connections open at once to one server, alternated in every round
 * (the order swapped each round), ratios taken within a round, the
 * median [min-max] of the rounds reported: 64 B at qd 1 (p50 latency,
 * TLS / plain: > 1 is TLS's cost) and 4 KiB at qd 16 (MiB/s, TLS /
 * plain: < 1 is its cost). No timed assertion: figures only.
 */
static void
sweep_tls(void)
{
	struct raw r[2];
	Raw_tls = false;
	int ok = raw_open(&r[0], 4096) == 0;
	Raw_tls = true;
	ok = ok && raw_open(&r[1], 4096) == 0;
	Raw_tls = false;
	if (!ok) {
		fprintf(Tab, "\ntls: not measured (a connection failed)\n");
		Failures++;
		if (r[0].conn)
			raw_close(&r[0]);
		char reply[64];
		(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
		return;
	}
	double lat[2][16], bw[2][16], lr[16], br[16];
	int n = O.rounds < 16 ? O.rounds : 16;
	for (int k = 0; k < n; k++) {
		for (int j = 0; j < 2; j++) {
			int i = (j + k) % 2;	/* alternate who goes first */
			struct bench_result res;
			bench_samples_reset(&S_round);
			if (raw_run(&r[i], 64, 1, O.ms, &S_round)) {
				Failures++;
				goto out;
			}
			bench_summarize(&S_round, &res);
			lat[i][k] = res.p50_us;
			bench_samples_reset(&S_round);
			if (raw_run(&r[i], 4096, 16, O.ms, &S_round)) {
				Failures++;
				goto out;
			}
			bench_summarize(&S_round, &res);
			bw[i][k] = res.mib_per_s;
		}
		lr[k] = lat[1][k] / lat[0][k];
		br[k] = bw[1][k] / bw[0][k];
	}
	double lp = median(lat[0], n), lt = median(lat[1], n);
	double bp = median(bw[0], n), bt = median(bw[1], n);
	double lmed = median(lr, n), bmed = median(br, n);
	fprintf(Tab, "\ntls: TLS 1.3 (external PSK) against plain tcp, raw level write+flush, %d round(s) x %d ms, alternated\n",
			n, O.ms);
	fprintf(Tab, "  64 B qd 1   p50: plain %8.1f us  tls %8.1f us   ratio tls/plain %.3f [%.3f-%.3f]\n",
			lp, lt, lmed, lr[0], lr[n - 1]);
	fprintf(Tab, "  4 KiB qd 16 bw:  plain %8.1f MiB/s tls %8.1f MiB/s  ratio tls/plain %.3f [%.3f-%.3f]\n",
			bp, bt, bmed, br[0], br[n - 1]);
	if (Json)
		fprintf(Json, "{\"run\":\"%s\",\"sweep\":\"tls\",\"lat64_plain_us\":%.2f,\"lat64_tls_us\":%.2f,\"lat64_ratio\":%.4f,\"bw4k_plain_mibs\":%.1f,\"bw4k_tls_mibs\":%.1f,\"bw4k_ratio\":%.4f}\n",
				Run_id, lp, lt, lmed, bp, bt, bmed);
out:
	raw_close(&r[0]);
	raw_close(&r[1]);
	char reply[64];
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
}

/* ------------------------------------------------ the record: restart */

/*
 * What the mirror's record (the mirror state file) buys and costs:
 *  - restart: a writer process mirrors a log of RESTART_SIZE bytes (its
 *    first mirror_new resyncs the fresh replica in full: the full-resync
 *    figure) and streams 4 KiB persists until it is killed with SIGKILL
 *    after RESTART_PERSISTS of them; a new mirror on the same log and
 *    state file then resyncs what the record holds. Bytes and seconds of
 *    both, and their ratio;
 *  - the persist path: 4 KiB persist p50 (sequential, as a log writes) of
 *    a mirror with the state file against one with the record in memory,
 *    alternated per round; and the record's writes per 1000 persists
 *    (counted from the DEBUG line mirror_state.c logs for each).
 * The writer is this program re-executed with --restart-writer.
 */
/* 4600 persists: 287 regions of 64 KiB; the activity log is cleared
 * every 64 regions (the region being written stays), so the kill falls
 * half way through a cycle: about the average of a kill at a random
 * moment (the worst case is MSTATE_AL_LIMIT + 1 = 65 regions, 4.06 MiB) */
#define RESTART_PERSISTS 4600
#define RECORD_COST_SIZE (64u << 20)	/* 1024 regions of 64 KiB */
#define RECORD_COUNT_PERSISTS 10000

static const uint8_t Restart_uuid[PMREP_UUID_SIZE] = { 0x7e, 's', 't', 'a',
	'r', 't', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

/* what the writer publishes (a shared file mapping) */
struct restart_prog {
	atomic_long done;	/* persists that returned 0 */
	atomic_int ready;	/* 1: mirrored; -1: failed */
	atomic_int err;
	uint64_t full_ns, full_bytes;	/* its first mirror_new */
};

/* the record's writes, counted while Rec_counting (bench_log) */
static atomic_bool Rec_counting;
static atomic_ulong Rec_writes;

/* pmrep's log sink: the default format on stderr; while counting, the
 * record's DEBUG lines are counted and not shown */
static void
bench_log(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg)
{
	(void) arg;
	static const char *const names[] = { "FATAL", "ERROR", "WARNING",
		"NOTICE", "INFO", "DEBUG" };
	if (atomic_load(&Rec_counting)) {
		if (level == PMREP_LOG_DEBUG && strstr(file, "mirror_state.c"))
			atomic_fetch_add(&Rec_writes, 1);
		if (level > PMREP_LOG_ERROR)
			return;
	}
	const char *base = strrchr(file, '/');
	fprintf(stderr, "pmrep %s %s:%d %s: %s\n",
			(unsigned)level < 6 ? names[level] : "?",
			base ? base + 1 : file, line, func, msg);
}

static struct pmrep_mirror_cfg *
restart_cfg(const char *addr, const char *port, const char *state)
{
	struct pmrep_mirror_cfg *cfg = NULL;
	if (pmrep_mirror_cfg_new(&cfg))
		return NULL;
	if (pmrep_mirror_cfg_add_replica(cfg, addr, port) ||
			pmrep_mirror_cfg_set_key(cfg, Key, sizeof(Key)) ||
			pmrep_mirror_cfg_set_uuid(cfg, Restart_uuid) ||
			pmrep_mirror_cfg_set_timeout(cfg, OP_TIMEOUT_MS) ||
			pmrep_mirror_cfg_set_state_path(cfg, state))
		(void) pmrep_mirror_cfg_delete(&cfg);
	return cfg;
}

/* --restart-writer LOG STATE ADDR PORT SIZE PROG: never returns */
static void
restart_writer(char *argv[])
{
	const char *log = argv[2], *state = argv[3], *addr = argv[4];
	const char *port = argv[5], *progp = argv[7];
	size_t size = (size_t)strtoull(argv[6], NULL, 0);
	pmrep_log_set_threshold(PMREP_LOG_ERROR);
	int fd = open(progp, O_RDWR | O_CLOEXEC);
	struct restart_prog *pr = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof(*pr),
			PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (pr == MAP_FAILED)
		_exit(3);
	struct pmrep_mirror_cfg *cfg = restart_cfg(addr, port, state);
	struct pmrep_pmem *pmem = NULL;
	struct pmrep_mirror *m = NULL;
	if (cfg == NULL || pmrep_pmem_open(log, 0, size,
			PMREP_PMEM_GRANULARITY_PAGE, &pmem) != 0) {
		atomic_store(&pr->ready, -1);
		_exit(1);
	}
	uint64_t t0 = bench_now_ns();
	int ret = pmrep_mirror_new(pmem, cfg, &m);
	uint64_t t1 = bench_now_ns();
	struct pmrep_replica_status st;
	if (ret || pmrep_mirror_get_replica_status(m, 0, &st)) {
		fprintf(stderr, "pmrep-bench restart writer: mirror: %s (%s)\n",
				pmrep_err_to_str(ret), pmrep_err_msg());
		atomic_store(&pr->ready, -1);
		_exit(1);
	}
	pr->full_ns = t1 - t0;
	pr->full_bytes = st.resync_bytes;
	atomic_store(&pr->ready, 1);
	uint8_t *base = pmrep_pmem_get_address(pmem);
	size_t nblk = size / 4096;
	for (uint64_t k = 0;; k++) {
		size_t off = (size_t)(k % nblk) * 4096;
		memset(base + off, (int)(k & 0xff), 4096);
		ret = pmrep_mirror_persist(m, off, 4096, OP_TIMEOUT_MS);
		if (ret) {
			atomic_store(&pr->err, ret);
			_exit(1);
		}
		atomic_store(&pr->done, (long)k + 1);
	}
}

/* the restart after a crash; fills bytes / ns of the full resync and the restart */
static int
restart_measure(size_t size, uint64_t *full_b, uint64_t *full_ns,
		uint64_t *rs_b, uint64_t *rs_ns, long *killed_after)
{
	char reply[256], port[16], log[128], state[160], progp[128];
	if (ask(reply, sizeof(reply), OP_TIMEOUT_MS, "TGT 1 %zu", size) ||
			sscanf(reply + 2, " %15s", port) != 1)
		return -1;
	snprintf(log, sizeof(log), "/dev/shm/pmrep-bench-%ld-restart-log", (long)getpid());
	snprintf(state, sizeof(state), "%s.pmrep-state", log);
	snprintf(progp, sizeof(progp), "/dev/shm/pmrep-bench-%ld-restart-prog", (long)getpid());
	unlink(log);
	unlink(state);
	unlink(progp);
	int ret = -1;
	pid_t pid = -1;
	struct restart_prog *pr = MAP_FAILED;
	struct pmrep_pmem *pmem = NULL;
	struct pmrep_mirror_cfg *cfg = NULL;
	struct pmrep_mirror *m = NULL;
	if (pmrep_pmem_open(log, PMREP_PMEM_CREATE, size,
			PMREP_PMEM_GRANULARITY_PAGE, &pmem) != 0)
		goto out;
	(void) pmrep_pmem_close(&pmem);
	int fd = open(progp, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 4096) != 0) {
		perror("pmrep-bench: restart progress file");
		if (fd >= 0)
			close(fd);
		goto out;
	}
	pr = mmap(NULL, sizeof(*pr), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (pr == MAP_FAILED)
		goto out;
	char self[PATH_MAX], sz[32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		goto out;
	self[n] = '\0';
	snprintf(sz, sizeof(sz), "%zu", size);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		execl(self, self, "--restart-writer", log, state, O.addr, port,
				sz, progp, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		goto out;
	/* its full resync, then RESTART_PERSISTS persists */
	uint64_t limit = bench_now_ns() + 300ull * 1000000000u;
	while (atomic_load(&pr->ready) == 0 ||
			atomic_load(&pr->done) < RESTART_PERSISTS) {
		int wst;
		if (atomic_load(&pr->ready) < 0 || bench_now_ns() > limit ||
				waitpid(pid, &wst, WNOHANG) == pid) {
			fprintf(stderr, "pmrep-bench: the restart writer failed (ready %d, persist %s)\n",
					atomic_load(&pr->ready),
					pmrep_err_to_str(atomic_load(&pr->err)));
			goto out;
		}
		usleep(1000);
	}
	(void) kill(pid, SIGKILL);
	(void) waitpid(pid, NULL, 0);
	pid = -1;
	*killed_after = atomic_load(&pr->done);
	*full_b = pr->full_bytes;
	*full_ns = pr->full_ns;

	cfg = restart_cfg(O.addr, port, state);
	if (cfg == NULL || pmrep_pmem_open(log, 0, size,
			PMREP_PMEM_GRANULARITY_PAGE, &pmem) != 0)
		goto out;
	uint64_t t0 = bench_now_ns();
	int r = pmrep_mirror_new(pmem, cfg, &m);
	uint64_t t1 = bench_now_ns();
	struct pmrep_replica_status st;
	if (r || pmrep_mirror_get_replica_status(m, 0, &st)) {
		fprintf(stderr, "pmrep-bench: restart: %s (%s)\n",
				pmrep_err_to_str(r), pmrep_err_msg());
		goto out;
	}
	*rs_b = st.resync_bytes;
	*rs_ns = t1 - t0;
	ret = 0;
out:
	if (pid > 0) {
		(void) kill(pid, SIGKILL);
		(void) waitpid(pid, NULL, 0);
	}
	(void) pmrep_mirror_delete(&m);
	(void) pmrep_mirror_cfg_delete(&cfg);
	(void) pmrep_pmem_close(&pmem);
	if (pr != MAP_FAILED)
		munmap(pr, sizeof(*pr));
	unlink(log);
	unlink(state);
	unlink(progp);
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
	return ret;
}

/* 4 KiB persist p50 with / without the state file; record writes */
static int
record_cost(double *p50_with, double *p50_without, double *ratio,
		double *ratio_min, double *ratio_max, double *wr_per_1000)
{
	struct mirror a, b;
	bool have_a = false, have_b = false;
	int ret = -1;
	struct bench_samples s;
	if (bench_samples_init(&s, SAMPLES_CAP / 4))
		return -1;
	if (mirror_open(&a, 1, RECORD_COST_SIZE, 90))
		goto out;
	have_a = true;
	Mirror_record_in_memory = true;
	int r = mirror_open(&b, 1, RECORD_COST_SIZE, 91);
	Mirror_record_in_memory = false;
	if (r)
		goto out;
	have_b = true;
	int rounds = O.rounds < 3 ? 3 : O.rounds > 64 ? 64 : O.rounds;
	double pa[64], pb[64], q[64];
	for (int i = 0; i < rounds; i++) {
		struct bench_result ra, rb;
		bench_samples_reset(&s);
		if (mirror_run(&a, 4096, O.ms, false, &s))
			goto out;
		bench_summarize(&s, &ra);
		bench_samples_reset(&s);
		if (mirror_run(&b, 4096, O.ms, false, &s))
			goto out;
		bench_summarize(&s, &rb);
		pa[i] = ra.p50_us;
		pb[i] = rb.p50_us;
		q[i] = ra.p50_us / rb.p50_us;
	}
	*p50_with = median(pa, rounds);
	*p50_without = median(pb, rounds);
	*ratio = median(q, rounds);	/* sorts q */
	*ratio_min = q[0];
	*ratio_max = q[rounds - 1];

	/* the record's writes in a sequential stream of 4 KiB persists,
	 * starting where the timed runs left the log */
	uint8_t *base = pmrep_pmem_get_address(a.pmem);
	size_t nblk = RECORD_COST_SIZE / 4096;
	enum pmrep_log_level thr = pmrep_log_get_threshold();
	atomic_store(&Rec_writes, 0);
	atomic_store(&Rec_counting, true);
	pmrep_log_set_threshold(PMREP_LOG_DEBUG);
	r = 0;
	for (unsigned k = 0; r == 0 && k < RECORD_COUNT_PERSISTS; k++) {
		size_t off = (size_t)(k % nblk) * 4096;
		base[off] = (uint8_t)k;
		r = pmrep_mirror_persist(a.m, off, 4096, OP_TIMEOUT_MS);
	}
	pmrep_log_set_threshold(thr);
	atomic_store(&Rec_counting, false);
	if (r) {
		fprintf(stderr, "pmrep-bench: persist: %s (%s)\n",
				pmrep_err_to_str(r), pmrep_err_msg());
		goto out;
	}
	*wr_per_1000 = (double)atomic_load(&Rec_writes) * 1000.0 /
		RECORD_COUNT_PERSISTS;
	ret = 0;
out:
	if (have_a)
		mirror_close(&a);
	if (have_b)
		mirror_close(&b);
	bench_samples_fini(&s);
	char reply[64];
	(void) ask(reply, sizeof(reply), OP_TIMEOUT_MS, "END");
	return ret;
}

static void
json_head(const char *what)
{
	fprintf(Json, "{\"run\":\"%s\",\"date\":\"%s\",\"host\":\"%s\","
			"\"in_vm\":%s,\"provider\":\"%s\",\"sweep\":\"restart\","
			"\"level\":\"mirror\",\"what\":\"%s\",\"replicas\":1",
			Run_id, Date, Host, getenv("IN_VM") ? "true" : "false",
			prov_str(), what);
}

static void
sweep_restart(void)
{
	size_t size = O.quick ? (64u << 20) : (1u << 30);
	uint64_t fb = 0, fns = 0, rb = 0, rns = 0;
	long killed = 0;
	fprintf(Tab, "\nthe mirror's record (state file): restart of a %zu MiB log after SIGKILL in a stream of 4 KiB persists (after %d), 1 replica, region 64 KiB\n",
			size >> 20, RESTART_PERSISTS);
	if (restart_measure(size, &fb, &fns, &rb, &rns, &killed)) {
		Failures++;
		fprintf(Tab, "restart: not measured\n");
	} else {
		double bratio = fb ? (double)rb / (double)fb : NAN;
		double tratio = fns ? (double)rns / (double)fns : NAN;
		fprintf(Tab, "  full resync (fresh replica)   %12llu bytes  %8.3f s   (then killed after %ld persists)\n",
				(unsigned long long)fb, (double)fns / 1e9, killed);
		fprintf(Tab, "  restart with the state file   %12llu bytes  %8.3f s   bytes %.4fx, time %.4fx of the full resync\n",
				(unsigned long long)rb, (double)rns / 1e9, bratio,
				tratio);
		if (Json) {
			json_head("restart_after_crash");
			fprintf(Json, ",\"size\":%zu,\"persists_before_kill\":%ld,"
					"\"full_resync_bytes\":%llu,\"restart_resync_bytes\":%llu",
					size, killed, (unsigned long long)fb,
					(unsigned long long)rb);
			json_num(Json, "full_resync_secs", (double)fns / 1e9);
			json_num(Json, "restart_secs", (double)rns / 1e9);
			json_num(Json, "bytes_ratio", bratio);
			json_num(Json, "secs_ratio", tratio);
			fprintf(Json, "}\n");
			fflush(Json);
		}
	}
	double pw = NAN, po = NAN, q = NAN, qmin = NAN, qmax = NAN, wr = NAN;
	if (record_cost(&pw, &po, &q, &qmin, &qmax, &wr)) {
		Failures++;
		fprintf(Tab, "record cost: not measured\n");
		return;
	}
	fprintf(Tab, "  4 KiB persist p50: %.1f us with the state file, %.1f us with the record in memory: %.3fx [%.3f-%.3f]\n",
			pw, po, q, qmin, qmax);
	fprintf(Tab, "  record writes per 1000 persists (sequential 4 KiB stream): %.1f\n",
			wr);
	if (Json) {
		json_head("record_cost");
		fprintf(Json, ",\"size\":4096,\"qd\":1");
		json_num(Json, "p50_us_state_file", pw);
		json_num(Json, "p50_us_in_memory", po);
		json_num(Json, "ratio", q);
		json_num(Json, "ratio_min", qmin);
		json_num(Json, "ratio_max", qmax);
		json_num(Json, "record_writes_per_1000", wr);
		fprintf(Json, ",\"rounds\":%d}\n", O.rounds < 3 ? 3 : O.rounds);
		fflush(Json);
	}
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
	Cpu_tab = open_memstream(&Cpu_buf, &Cpu_len);

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
