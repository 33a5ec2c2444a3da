/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.h -- what the parts of pmrep-bench share: latency samples and
 * their percentiles, the clock, and the floors (a raw TCP ping-pong and
 * stream between the bench's two processes: floor_tcp.c; perftest on the
 * same RDMA device: floor_perftest.c).
 */
#ifndef PMREP_BENCH_H
#define PMREP_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static inline uint64_t
bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* latency samples of one measurement, in ns; preallocated (no allocation
 * while measuring) */
struct bench_samples {
	uint64_t *ns;
	size_t n, cap;
	uint64_t ops;		/* operations completed (>= n when capped) */
	uint64_t bytes;		/* payload bytes they carried */
	uint64_t elapsed_ns;	/* wall time of the measured window */
	/* every operation completed by the call, warm-up and the drain of
	 * a queue included: what the CPU time of the whole call (getrusage
	 * around it) is divided by */
	uint64_t all_ops;
};

/* what a measurement reports */
struct bench_result {
	uint64_t ops;
	double secs;
	double p50_us, p99_us, p999_us, mean_us;
	double ops_per_s, mib_per_s;
	bool valid;
};

int bench_samples_init(struct bench_samples *s, size_t cap);
void bench_samples_fini(struct bench_samples *s);
static inline void
bench_samples_reset(struct bench_samples *s)
{
	s->n = 0;
	s->ops = 0;
	s->bytes = 0;
	s->elapsed_ns = 0;
	s->all_ops = 0;
}
static inline void
bench_samples_add(struct bench_samples *s, uint64_t ns, uint64_t bytes)
{
	if (s->n < s->cap)
		s->ns[s->n++] = ns;
	s->ops++;
	s->bytes += bytes;
}
/* sorts the samples; fills *r (valid = false when there are none) */
void bench_summarize(struct bench_samples *s, struct bench_result *r);

/* ------------------------------------------------------ tcp floor */

/* the server side: a thread answering on `fd` (an accepted TCP socket)
 * until the peer closes it. Every message is an 8-byte header (LE: u32
 * payload length, u32 flags) and its payload; FLOOR_F_ACK asks for an
 * 8-byte reply once the whole message was read. */
#define FLOOR_F_ACK 1u
int floor_tcp_serve_start(int fd);
void floor_tcp_serve_join(void);

/*
 * the client side on a connected socket. `spin`: wait for the reply
 * (ping-pong, hand-off) or the acknowledgement (stream) by busy-polling
 * (recv with MSG_DONTWAIT in a loop; the hand-off's caller: a non-blocking
 * read of its eventfd in a loop), as pmrep's initiator does with --wait
 * poll; else block in recv / poll. Sends always block, and so does the
 * server side (pmrep's sending and its replica side are progress threads
 * that block in poll(2)).
 */
struct floor_tcp {
	int fd;
	uint8_t *buf;		/* header + the largest payload */
	size_t cap;
};
int floor_tcp_init(struct floor_tcp *f, int fd, size_t max_payload);
void floor_tcp_fini(struct floor_tcp *f);
/* ping-pong: `size` bytes there, 8 back, for about `ms` (warm-up excluded) */
int floor_tcp_pingpong(struct floor_tcp *f, size_t size, int ms, bool spin,
		struct bench_samples *s);
/* the ping-pong through an I/O thread woken by an eventfd, which wakes
 * the caller back by another (a progress-thread design's least cost) */
int floor_tcp_handoff(struct floor_tcp *f, size_t size, int ms, bool spin,
		struct bench_samples *s);
/* stream: `size`-byte messages back to back, one acknowledgement at the
 * end of each burst of `burst` messages; for about `ms` */
int floor_tcp_stream(struct floor_tcp *f, size_t size, unsigned burst, int ms,
		bool spin, struct bench_samples *s);

/* ------------------------------------------------- perftest floor */

/* run perftest's `tool` (ib_read_lat, ib_write_bw) server and client on
 * device `dev` / address `addr` with message size `size`; lat: fills
 * p50 (t_typical), p99, p999; bw: mib_per_s and ops_per_s. false: perftest
 * missing or failed (reported on stderr). */
bool floor_perftest(const char *tool, const char *dev, const char *addr,
		size_t size, unsigned iters, unsigned qd, int port,
		struct bench_result *r);
/* is perftest's `tool` on the PATH */
bool floor_perftest_available(const char *tool);

/* ------------------------------------- the mirror level, for track.c */

/* a 1-replica mirror of a target in the bench's server (bench_mirror.c):
 * `map` bytes of /dev/shm, cfg window `window`, position tracking
 * (pmrep_mirror_cfg_set_persist_seq) `track`; TLS as --mirror-tls says */
struct bench_mirror;
int bench_mirror_open(struct bench_mirror **m, size_t map, unsigned window,
		bool track);
void bench_mirror_close(struct bench_mirror **m);	/* NULL: nothing */
const char *bench_mirror_method(const struct bench_mirror *m);
/* `size`-byte persists for about `ms` (warm-up excluded): window 0 one
 * pmrep_mirror_persist at a time, else `window` persist_async outstanding;
 * *cpu_us: user+sys of both processes per persist */
int bench_mirror_run(struct bench_mirror *m, size_t size, unsigned window,
		int ms, struct bench_samples *s, double *cpu_us);

/* the track sweep (track.c): tracking on against off, alternated */
struct bench_track_args {
	int rounds, ms;
	bool tls;		/* the mirrors inside TLS 1.3 */
	const char *provider, *run_id, *date, *host;
	FILE *tab, *json;	/* json: NULL for none */
};
/* 0, or 1 when a point could not be measured */
int bench_sweep_track(const struct bench_track_args *a);

#endif /* PMREP_BENCH_H */
