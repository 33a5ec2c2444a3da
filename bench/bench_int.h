/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_int.h -- what the files of pmrep-bench itself share (bench.h is
 * what its parts with an interface of their own share: the samples, the
 * floors, track.c): the options, the output files and the run's identity,
 * the control channel to the server process and the CPU accounting, the
 * raw and mirror levels, the targets in processes of their own, the
 * floors as the sweeps take them, and the sweeps.
 */
#ifndef PMREP_BENCH_INT_H
#define PMREP_BENCH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <pmrep.h>
#include <pmrep/repl.h>

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
#define MAX_RAW 3	/* the raw level's fan-out: the server's endpoints */
/* the pipelined mirror level (bench_mirror.c: pipe_run) */
#define PIPE_MAX 64
#define PIPE_SIZE (4u << 20)	/* the mirrored mapping of the pipe sweep */
#define QUORUM_MAX_LAG (1ull << 30)	/* the quorum and resync sweeps' cfg lag */

/* the targets' and mirrors' key (pmrep-bench.c) */
extern const uint8_t Key[32];
/* the raw level's PSK when inside TLS (TLS 1.3, external PSK:
 * transport.h "TLS"), identity "pmrep-bench" */
extern const uint8_t Tls_psk[32];

/* ------------------------------------------- options (pmrep-bench.c) */

struct opts {
	enum pmrep_provider prov;
	const char *addr;
	const char *dev;		/* verbs: perftest's -d */
	bool raw, mirror;
	bool sweep_lat, sweep_bw, sweep_rep, sweep_restart, sweep_tls;
	bool sweep_pipe, sweep_quorum, sweep_resync, sweep_track;
	unsigned windows[MAX_LIST];	/* the pipe sweep's windows */
	unsigned nwindows;
	size_t pipe_sizes[MAX_LIST];	/* ... and its persist sizes */
	unsigned npipe_sizes;
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

extern struct opts O;
extern FILE *Json;		/* NULL: none */
extern FILE *Tab;		/* the human table */
extern int Failures;		/* points that could not be measured */
/* the sweeps' samples: one round, a point's rounds, the floor's */
extern struct bench_samples S_round, S_pool, S_floor;

const char *prov_str(void);

/* ---------------- control channel, processes, CPU use (bench_ctrl.c) */

extern int Ctrl;		/* the socket to the server (its own, in it) */

int ctrl_send(int fd, const char *fmt, ...);
int ctrl_recv(int fd, char *line, size_t size, int timeout_ms);
int ask(char *reply, size_t size, int timeout_ms, const char *fmt, ...);
void reap(pid_t pid, int ms);

/* CPU time (user + sys) and context switches (voluntary + involuntary) of
 * this process, every thread included */
struct cpu_use {
	uint64_t ns, csw;
};

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

bool cpu_self(struct cpu_use *c);
void cpu_start(struct cpu_win *w);
void cpu_stop(struct cpu_win *w, uint64_t ops, struct cpu_acc *out);
void cpu_add(struct cpu_acc *to, const struct cpu_acc *a);
double cpu_us_op(const struct cpu_acc *a);
double cpu_init_us_op(const struct cpu_acc *a);
double cpu_srv_us_op(const struct cpu_acc *a);
double csw_op(const struct cpu_acc *a);

/* ----------------------------------------- stats, output (bench_out.c) */

extern char Run_id[32], Host[128], Date[40];

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

void pool_add(struct bench_samples *pool, const struct bench_samples *s);
/* the median of v[0..n) (sorts v); NAN when n is 0 */
double median(double *v, int n);
void meta_init(void);
/* ,"k":v with 3 decimals, or null */
void json_num(FILE *f, const char *k, double v);
/* `size` for a table column ("4K", "1M", "512") or prose ("4 KiB",
 * "1 MiB", "512 B"): buf */
const char *size_str(char *buf, size_t len, size_t size, bool prose);
/* a point: one JSON line, a row of the table, a row of the CPU table */
void emit(const struct point *p);
void table_header(void);
/* the CPU table: collected from the start, printed after the main one */
void cpu_table_open(void);
void cpu_table_print(void);

/* ------------------- the server, target processes (bench_server.c) */

/* the server process: serves the control socket `ctrl` until QUIT */
int server_main(int ctrl);

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

/* --target-child PATH SIZE ADDR [PORT]: never returns */
void target_child(int argc, char *argv[]);
int child_tgt_start_at(struct child_tgt *c, unsigned idx, size_t size,
		const char *at_port);
int child_tgt_start(struct child_tgt *c, unsigned idx, size_t size);
void child_tgt_end(struct child_tgt *c);

/* ----------------------------------------- the raw level (bench_raw.c) */

extern bool Raw_tls;
extern bool Raw_pmem_src;

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

/* one write+flush to each of `k` connections at once; done when all are */
struct fan {
	struct raw *r;
	unsigned k;
};

int raw_open(struct raw *r, size_t max_size);
void raw_close(struct raw *r);
int raw_run(struct raw *r, size_t size, unsigned qd, int ms,
		struct bench_samples *s);
int fan_run(struct fan *fa, size_t size, int ms, struct bench_samples *s);
const char *raw_method(const struct raw *r);

/* ---------------------------------- the mirror level (bench_mirror.c) */

extern bool Mirror_record_in_memory;

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
	bool set_resync_min_rate;	/* else the library's default */
	uint64_t resync_min_rate;	/* B/s of net progress, 0: none */
};
extern const struct mirror_extra *Mirror_extra;

struct mirror {
	unsigned nrep;
	size_t size;
	char path[128];
	struct pmrep_pmem *pmem;
	struct pmrep_mirror *m;
	pmrep_pmem_persist_fn *persist;
	const char *method;
};

int mirror_open(struct mirror *mi, unsigned nrep, size_t size, unsigned tag);
void mirror_close(struct mirror *mi);
int mirror_run(struct mirror *mi, size_t size, int ms, bool local_only,
		struct bench_samples *s);

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

/* completions seen out of submission order, all pipe_runs */
extern uint64_t Pipe_disorder;

void pipe_events(struct mirror *mi, struct pipe_watch *w);
int pipe_run(struct mirror *mi, size_t size, unsigned depth, int warm_ms,
		int ms, struct bench_samples *s, struct pipe_watch *w);

/* ------------------------------------------------- floors (bench_floor.c) */

extern struct floor_tcp Floor;
extern bool Have_floor;

bool floor_lat(size_t size, bool spin, struct bench_samples *s,
		struct bench_result *r, struct cpu_acc *cpu);
bool floor_bw(size_t size, bool spin, struct bench_samples *s,
		struct bench_result *r, struct cpu_acc *cpu);
const char *floor_name(bool bw, bool spin);

/* ------------------------------------------------------------- sweeps */

/* sweep_lat.c: lat and bw (raw level), lat (mirror), rep (both) */
void sweep_raw(void);
void sweep_mirror_lat(void);
void sweep_replicas_raw(void);
void sweep_replicas(void);
/* sweep_pipe.c, sweep_quorum.c, sweep_resync.c, sweep_tls.c */
void sweep_pipe(void);
void sweep_quorum(void);
void sweep_resync(void);
void sweep_tls(void);
/* sweep_resync.c: poll the mirror until every replica is IN_SYNC, up to
 * `ms`; 0 when they are */
int wait_all_in_sync(struct mirror *mi, int ms);
/* sweep_resync_conv.c: the resync sweep's paced-writer part */
void sweep_resync_converge(void);
/* sweep_restart.c: the mirror's record; its writer process
 * (--restart-writer, never returns); pmrep's log sink */
void sweep_restart(void);
void restart_writer(char *argv[]);
void bench_log(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg);

#endif /* PMREP_BENCH_INT_H */
