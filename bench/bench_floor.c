/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_floor.c -- the floors as the sweeps take them: on tcp,
 * floor_tcp.c's ping-pong and stream over the connection main opens to the
 * server's echo thread, with both processes' CPU; on verbs, perftest's
 * ib_read_lat and ib_write_bw (floor_perftest.c); and their names.
 */
#include <string.h>

#include "bench_int.h"

/* ---------------------------------------------------------------- floors */

struct floor_tcp Floor = { .fd = -1 };
bool Have_floor;

/* spin: the tcp floor busy-polls for its replies (--wait poll) */
/* *cpu: both processes' CPU use (tcp; perftest's: not measured) */
bool
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

bool
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

const char *
floor_name(bool bw, bool spin)
{
	if (O.prov == PMREP_PROVIDER_TCP && spin)
		return bw ? "tcp-stream-spin" : "tcp-pingpong-spin";
	if (O.prov == PMREP_PROVIDER_TCP)
		return bw ? "tcp-stream" : "tcp-pingpong";
	return bw ? "ib_write_bw" : "ib_read_lat";
}
