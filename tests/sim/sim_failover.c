/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sim_failover.c -- the failover itself in the deterministic simulator:
 * pmrep_mirror_promote, pmrep_position_decide and
 * pmrep_mirror_recover run against the real targets of one simulated world
 * while an old primary is alive, crashed mid-way, raced by a second
 * promote, after a clean close and a run without a replica, and across a
 * hand-over. `pmrep_sim --failover [--schedules N] [--seed S] [--replay ID]
 * [--broken-promote] [--expect-violation]` (tests/sim/README.md
 * "Failover").
 *
 * Processes: 0 the writer (a mirror on a plain mapping), 1..n the targets
 * of replicas 0..n-1. A promote of replica i runs as process 1 + i: its
 * target is stopped, its file opened in place (pmrep_log_open), and its
 * persistent writes (the log's fence, the record) are that process's
 * persist events. The old writer keeps writing during a promote as a
 * process of the world: its turn (every scheduling step, also while the
 * promote waits for a reply) polls its asynchronous persists and submits
 * the next; so the scheduler interleaves its steps with the promote's
 * messages. A second promote runs nested in one of the first's waits
 * (sim_set_wait_hook): it runs whole between two steps of the first.
 *
 * Checked (kinds): "promoted" -- a copy a promote (no force flag)
 * promoted holds, per 8-byte unit, the last persist any writer completed
 * (returned 0) covering it or a later persist covering it: as the copy
 * was when the promote returned, against every persist completed by the
 * end of the schedule; "recovered" -- the same for a mapping
 * pmrep_mirror_recover filled (after ranking n - k + 1 copies with
 * pmrep_position_decide, PMREP_RECOVER_SET_DECIDED, as `pmrep recover`
 * does); "complete" -- at every check point the positions of all copies
 * are read at one instant from their headers and ranked with
 * pmrep_position_decide: every copy in complete[] holds every persist
 * completed before that instant; "consistent" -- a copy whose header
 * says CONSISTENT holds every persist completed before the clean close
 * that marked it; "handover" -- a second writer at the same generation
 * with another primary id either is refused (counted) or nothing above
 * breaks; plus "liveness" / "harness" as sim_main.c's.
 * Past ~800 lines: the failover scenarios and their checks share one world.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "common/testhook.h"
#include "sim.h"

#define F_DATA 16384u
#define F_NUNITS (F_DATA / 8)
#define F_REGION 4096
#define F_TIMEOUT 1000
#define F_MAXP 256
#define F_MAXT 3
#define F_PORT 7200
#define F_MAXSNAP 8

enum f_sc {
	FS_LIVE = 0,	/* (a) the old primary writes during the promote */
	FS_CRASH,	/* (b) the promote crashed at each persistent write */
	FS_CONC,	/* (c) two concurrent promotes of different copies */
	FS_CLEAN,	/* (d) a clean close, a run without one, compare / promote */
	FS_HANDOVER,	/* (e) a second writer at the same generation */
	FS_N,
};
static const char *const fs_names[] = { "live", "crash", "concurrent",
	"clean", "handover" };
/* quorum 1 of 2, 2 of 3 */
static const unsigned topo_n[] = { 2, 3 }, topo_k[] = { 1, 2 };
/* native flush with per-step positions, without them, staging with them */
static const char *const var_names[] = { "native tracked", "native untracked",
	"staging tracked" };
#define NVAR 3

/* schedule types (bits 60..63) */
enum { FT_BASE = 1, FT_PACKET, FT_CRASH, FT_RISE, FT_NEST };

static const char *const kinds[] = { "promoted", "recovered", "complete",
	"consistent", "liveness", "harness" };
#define NK (sizeof(kinds) / sizeof(kinds[0]))
enum { K_PROMOTED, K_RECOVERED, K_COMPLETE, K_CONSISTENT, K_LIVENESS, K_HARNESS };

struct f_target {
	unsigned proc;
	char path[256], port[8];
	struct pmrep_target *t;
	struct sim_file *file;
	uint64_t gen;
	bool cons;
	uint32_t cons_floor[F_NUNITS];	/* completed when it was marked */
};

struct f_rec {
	uint64_t off, len;
	bool done;
	int result;
};

static const uint8_t FKEY[32] = "pmrep-sim-harness-key-0123456789";
static const uint8_t FUUID[PMREP_UUID_SIZE] = { 0x51, 0x4d, 0xfa, 2, 3, 4, 5,
	6, 7, 8, 9, 10, 11, 12, 13, 14 };

static struct {
	/* the schedule */
	uint64_t id;
	unsigned sc, topo, var, type;
	uint32_t seed32, param;
	bool verbose;
	struct sim_fault_spec fault;
	unsigned nfaults;
	/* the world */
	char dir[200];
	unsigned n, k;
	struct f_target tg[F_MAXT];
	char log_path[256];
	struct pmrep_pmem *pmem;
	uint8_t *base;
	struct pmrep_mirror *m;
	struct sim_file *logf, *statef;
	struct sim_rng wrng;
	/* the old writer as a process of the world (asynchronous) */
	bool live;
	unsigned live_budget, live_inflight, live_delay;
	/* history */
	struct f_rec h[F_MAXP];
	uint32_t nh;
	uint32_t last_done[F_NUNITS];
	/* promote */
	int promoting;			/* replica index, -1 */
	unsigned rises;			/* generation rises during it */
	unsigned crash_rise;		/* FT_RISE: crash it after this one */
	unsigned waits;			/* waits of the first promote */
	unsigned nest_at;		/* FT_NEST: the second promote there */
	long long prom_start;		/* virtual ms the outer promote began */
	int nest_copy;			/* -1: none pending */
	bool nest_done;
	/* promoted copies, as they were when their promote returned */
	struct { unsigned copy; uint64_t gen; uint8_t data[F_DATA]; } snap[F_MAXSNAP];
	unsigned nsnap;
	/* outcome */
	unsigned kinds;
	char whys[4][400];
	unsigned nwhy;
	bool broken;
	/* base-run facts (enumeration) */
	uint64_t win_from, win_to;	/* deliveries of the main event */
	uint64_t ev_from, ev_to;	/* the first promote's persist events */
	unsigned base_rises, base_waits;
	int first_promote;		/* its copy */
} F;

/* totals */
static unsigned g_runs, g_bad, g_by[NK], g_promoted, g_refused, g_recovered,
	g_rec_refused, g_handover_refused, g_handover_ok, g_complete_checked;
static uint64_t g_first[NK];

static void
fviol(int k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
fviol(int k, const char *fmt, ...)
{
	if (F.kinds & (1u << k))
		return;
	F.kinds |= 1u << k;
	char why[360];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	sim_log("VIOLATION: %s: %s", kinds[k], why);
	if (F.nwhy < 4)
		snprintf(F.whys[F.nwhy++], sizeof(F.whys[0]), "%s: %s", kinds[k], why);
	if (k == K_HARNESS)
		F.broken = true;
}

static uint64_t
fmix(uint64_t a, uint64_t b)
{
	struct sim_rng r = { a * 0x9e3779b97f4a7c15ull ^ b };
	return sim_rng_next(&r);
}

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* ------------------------------------------------------------ checker */

/* every unit holds the last completed persist covering it (floor[u]) or
 * a later one covering it */
static bool
holds(const uint8_t *d, const uint32_t *floor, char *why, size_t n)
{
	for (size_t u = 0; u < F_NUNITS; u++) {
		uint64_t v = le64(d + u * 8);
		uint32_t id = (uint32_t)(v >> 32), idx = (uint32_t)v;
		uint32_t c = floor[u];
		bool ok = v == 0 ? c == 0 : idx == u && id >= 1 && id <= F.nh &&
			id >= c && u * 8 >= F.h[id].off &&
			u * 8 < F.h[id].off + F.h[id].len;
		if (!ok) {
			snprintf(why, n, "unit %zu holds persist %u (0x%016" PRIx64 "); the last completed persist covering it is %u",
					u, id, v, c);
			return false;
		}
	}
	return true;
}

/* the copy's data area, as its file holds it now */
static const uint8_t *
copy_data(unsigned i)
{
	struct sim_file *f = F.tg[i].file;
	if (f == NULL || f->live == NULL || f->size < PMREP_REPLICA_DATA_OFFSET + F_DATA)
		return NULL;
	return f->live + PMREP_REPLICA_DATA_OFFSET;
}

/*
 * complete: the positions of every copy, read at one instant from the
 * headers, ranked by the one decision; each complete one holds every
 * persist completed so far. consistent: a copy marked so holds what was
 * completed when it was marked.
 */
static void
check_copies(const char *where)
{
	if (F.broken)
		return;
	struct pmrep_replica_position pos[F_MAXT];
	for (unsigned i = 0; i < F.n; i++) {
		if (pmrep_replica_read_position(F.tg[i].path, &pos[i]) != 0) {
			fviol(K_HARNESS, "%s: the header of copy %u does not read", where, i);
			return;
		}
	}
	unsigned best = 0, conflict = 0;
	bool complete[F_MAXT];
	char why[300];
	if (pmrep_position_decide(pos, F.n, &best, &conflict, complete) == 0) {
		for (unsigned i = 0; i < F.n; i++) {
			const uint8_t *d = copy_data(i);
			if (!complete[i] || d == NULL)
				continue;
			g_complete_checked++;
			if (!holds(d, F.last_done, why, sizeof(why)))
				fviol(K_COMPLETE, "%s: copy %u is complete by pmrep_position_decide over the %u copies but %s",
						where, i, F.n, why);
		}
	}
	for (unsigned i = 0; i < F.n; i++) {
		const uint8_t *d = copy_data(i);
		if (F.tg[i].cons && d && !holds(d, F.tg[i].cons_floor, why, sizeof(why)))
			fviol(K_CONSISTENT, "%s: copy %u's header says consistent but %s",
					where, i, why);
	}
}

/* a copy's header after a change: a generation rise (a fence, counted
 * while a promote runs) and a consistent mark (its floor: what was
 * completed when it was written) */
static void
header_seen(unsigned i)
{
	struct pmrep_replica_info info;
	if (pmrep_replica_read_info(F.tg[i].path, &info) != 0)
		return;
	bool cons = info.flags & PMREP_REPLICA_F_CONSISTENT;
	if (cons && !F.tg[i].cons)
		memcpy(F.tg[i].cons_floor, F.last_done, sizeof(F.last_done));
	F.tg[i].cons = cons;
	if (info.generation > F.tg[i].gen && F.tg[i].gen != 0 && F.promoting >= 0 &&
			(unsigned)F.promoting != i) {
		F.rises++;
		if (F.type == FT_RISE && F.rises == F.crash_rise)
			sim_proc_crash_now(F.tg[F.promoting].proc, fmix(F.id, 0x71));
	}
	F.tg[i].gen = info.generation;
}

/* ------------------------------------------------------------ targets */

static void
f_target_turn(unsigned proc, void *arg)
{
	struct f_target *tg = arg;
	(void) proc;
	if (tg->t == NULL)
		return;
	uint64_t a0 = sim_activity();
	(void) pmrep_target_process(tg->t, 0);
	if (sim_activity() != a0) {
		sim_proc_turn_done(tg->proc);
		header_seen((unsigned)(tg - F.tg));
	}
	if (sim_proc_crashed(tg->proc))
		fviol(K_HARNESS, "target %u crashed (no target crash is scheduled here)",
				(unsigned)(tg - F.tg));
}

static int
f_target_start(unsigned i)
{
	struct f_target *tg = &F.tg[i];
	struct pmrep_target_cfg *cfg = NULL;
	int ret = pmrep_target_cfg_new(&cfg);
	if (ret)
		return ret;
	(void) pmrep_target_cfg_set_path(cfg, tg->path);
	(void) pmrep_target_cfg_set_data_size(cfg, F_DATA, true);
	(void) pmrep_target_cfg_set_address(cfg, "sim", tg->port);
	(void) pmrep_target_cfg_set_key(cfg, FKEY, sizeof(FKEY));
	(void) pmrep_target_cfg_set_tls(cfg, false);
	(void) pmrep_target_cfg_set_timeout(cfg, F_TIMEOUT);
	(void) pmrep_target_cfg_set_staging(cfg, F.var == 2);
	unsigned prev = sim_set_current_proc(tg->proc);
	ret = pmrep_target_new(cfg, &tg->t);
	sim_set_current_proc(prev);
	(void) pmrep_target_cfg_delete(&cfg);
	if (ret)
		return ret;
	if (tg->file == NULL)
		tg->file = sim_file_add(tg->proc, tg->path, true);
	else
		(void) sim_file_reload(tg->file);
	header_seen(i);
	struct sim_proc_ops ops = { f_target_turn, tg };
	sim_proc_set(tg->proc, &ops);
	return 0;
}

static void
f_target_stop(unsigned i)
{
	sim_proc_set(F.tg[i].proc, NULL);
	(void) pmrep_target_delete(&F.tg[i].t);
}

/* ------------------------------------------------------------- writer */

static uint32_t
new_persist(uint8_t *base, uint64_t off, uint64_t len)
{
	if (F.nh + 1 >= F_MAXP)
		return 0;
	uint32_t id = ++F.nh;
	F.h[id] = (struct f_rec){ .off = off, .len = len };
	for (uint64_t b = off; b < off + len; b += 8) {
		uint64_t v = (uint64_t)id << 32 | (b / 8);
		for (int i = 0; i < 8; i++)
			base[b + (uint64_t)i] = (uint8_t)(v >> (8 * i));
	}
	return id;
}

static void
persist_done(uint32_t id, int result)
{
	F.h[id].done = true;
	F.h[id].result = result;
	if (result != 0)
		return;
	for (uint64_t u = F.h[id].off / 8; u < (F.h[id].off + F.h[id].len) / 8; u++)
		if (F.last_done[u] < id)
			F.last_done[u] = id;
}

static void
rand_range(uint64_t *off, uint64_t *len)
{
	uint64_t units = 1 + sim_rng_below(&F.wrng, 64);
	*off = sim_rng_below(&F.wrng, F_NUNITS - units + 1) * 8;
	*len = units * 8;
}

/* a writer's mirror on `pmem` over replicas `mask` (replica index =
 * target index), generation gen */
static int
writer_open(struct pmrep_pmem *pmem, uint64_t gen, const char *state,
		struct pmrep_mirror **m)
{
	struct pmrep_mirror_cfg *cfg = NULL;
	int ret = pmrep_mirror_cfg_new(&cfg);
	if (ret)
		return ret;
	for (unsigned i = 0; i < F.n; i++)
		(void) pmrep_mirror_cfg_add_replica(cfg, "sim", F.tg[i].port);
	(void) pmrep_mirror_cfg_set_key(cfg, FKEY, sizeof(FKEY));
	(void) pmrep_mirror_cfg_set_tls(cfg, false);
	(void) pmrep_mirror_cfg_set_uuid(cfg, FUUID);
	(void) pmrep_mirror_cfg_set_generation(cfg, gen);
	(void) pmrep_mirror_cfg_set_quorum(cfg, F.k);
	(void) pmrep_mirror_cfg_set_region_size(cfg, F_REGION);
	(void) pmrep_mirror_cfg_set_timeout(cfg, F_TIMEOUT);
	(void) pmrep_mirror_cfg_set_persist_seq(cfg, F.var != 1);
	(void) pmrep_mirror_cfg_set_background_recovery(cfg, false);
	if (state)
		(void) pmrep_mirror_cfg_set_state_path(cfg, state);
	ret = pmrep_mirror_new(pmem, cfg, m);
	(void) pmrep_mirror_cfg_delete(&cfg);
	if (ret)
		*m = NULL;
	return ret;
}

/* one synchronous persist of the writer */
static int
w_persist(void)
{
	if (F.m == NULL)
		return PMREP_E_STATE;
	uint64_t off, len;
	rand_range(&off, &len);
	uint32_t id = new_persist(F.base, off, len);
	if (id == 0)
		return 0;
	unsigned prev = sim_set_current_proc(SIM_PROC_WRITER);
	int ret = pmrep_mirror_persist(F.m, off, len, F_TIMEOUT);
	sim_set_current_proc(prev);
	persist_done(id, ret);
	sim_log("persist %u [%" PRIu64 ", +%" PRIu64 "): %s", id, off, len,
			ret ? pmrep_err_to_str(ret) : "ok");
	check_copies("after a persist returned");
	return ret;
}

/* the old writer's turn: its completions, then maybe its next persist */
static void
writer_turn(unsigned proc, void *arg)
{
	(void) proc;
	(void) arg;
	if (F.m == NULL)
		return;
	struct pmrep_mirror_completion c[8];
	int got = 0;
	if (F.live_inflight && pmrep_mirror_poll(F.m, c, 8, &got) == 0) {
		for (int i = 0; i < got; i++) {
			uint32_t id = (uint32_t)(uintptr_t)c[i].ctx;
			persist_done(id, c[i].result);
			F.live_inflight--;
			sim_log("old writer's persist %u: %s", id, c[i].result ?
					pmrep_err_to_str(c[i].result) : "ok");
		}
		if (got)
			check_copies("after the old writer's persists completed");
	}
	if (F.live_delay > 0) {
		F.live_delay--;	/* when it begins: drawn per schedule */
		return;
	}
	if (!F.live || F.live_budget == 0 || F.live_inflight >= 2 ||
			sim_rng_below(&F.wrng, 3) != 0)
		return;
	uint64_t off, len;
	rand_range(&off, &len);
	uint32_t id = new_persist(F.base, off, len);
	if (id == 0)
		return;
	F.live_budget--;
	int ret = pmrep_mirror_persist_async(F.m, off, len, (void *)(uintptr_t)id);
	if (ret)
		persist_done(id, ret);
	else
		F.live_inflight++;
}

/* the old primary dies: its connections cut, its mirror gone (no close) */
static void
writer_die(void)
{
	F.live = false;
	sim_proc_set(SIM_PROC_WRITER, NULL);
	if (F.m == NULL)
		return;
	sim_proc_cut(SIM_PROC_WRITER);
	unsigned prev = sim_set_current_proc(SIM_PROC_WRITER);
	(void) pmrep_mirror_delete(&F.m);
	sim_set_current_proc(prev);
	sim_log("the old writer died");
}

/* the old writer stops writing; what it has in flight ends first */
static void
writer_drain(void)
{
	F.live = false;
	for (int r = 0; r < 200 && F.live_inflight && F.m; r++)
		sim_run_idle(20);
	if (F.live_inflight)
		fviol(K_LIVENESS, "%u persists of the old writer never completed",
				F.live_inflight);
	sim_proc_set(SIM_PROC_WRITER, NULL);
}

/* ------------------------------------------------------------ promote */

static int do_promote(unsigned i, const char *why);

/* the first promote's waits: the second one runs whole in one of them */
static void
nest_hook(void)
{
	if (F.promoting >= 0 && F.prom_start >= 0 &&
			sim_now() - F.prom_start > 600 * 1000 &&
			!sim_proc_crashed(F.tg[F.promoting].proc)) {
		/* a promote that cannot end: reported, then ended (its
		 * process crashed: its connections end, its waits return) */
		fviol(K_LIVENESS, "the promote of copy %d has run for %lld s of virtual time",
				F.promoting, (sim_now() - F.prom_start) / 1000);
		sim_proc_crash_now(F.tg[F.promoting].proc, 0);
		return;
	}
	if (F.promoting < 0 || F.nest_copy < 0)
		return;
	F.waits++;
	if (F.type != FT_NEST || F.nest_done || F.waits != F.nest_at)
		return;
	F.nest_done = true;
	int outer = F.promoting;
	unsigned rises = F.rises;
	(void) do_promote((unsigned)F.nest_copy, "the second, concurrent");
	F.promoting = outer;
	F.rises = rises;
}

/*
 * promote copy i (its target stopped, its file opened in place as a log,
 * process 1 + i): no force flag. A success snapshots the copy.
 */
static int
do_promote(unsigned i, const char *why)
{
	struct f_target *tg = &F.tg[i];
	f_target_stop(i);
	unsigned prev = sim_set_current_proc(tg->proc);
	sim_set_conn_tag(10 + i);
	struct pmrep_pmem *log = NULL;
	int ret = pmrep_log_open(tg->path, 0, F_DATA, PMREP_PMEM_GRANULARITY_PAGE, &log);
	struct pmrep_promote_result res;
	memset(&res, 0, sizeof(res));
	if (ret == 0) {
		struct pmrep_mirror_cfg *cfg = NULL;
		(void) pmrep_mirror_cfg_new(&cfg);
		for (unsigned j = 0; j < F.n; j++)
			if (j != i)
				(void) pmrep_mirror_cfg_add_replica(cfg, "sim", F.tg[j].port);
		(void) pmrep_mirror_cfg_set_key(cfg, FKEY, sizeof(FKEY));
		(void) pmrep_mirror_cfg_set_tls(cfg, false);
		(void) pmrep_mirror_cfg_set_timeout(cfg, F_TIMEOUT);
		(void) pmrep_mirror_cfg_set_region_size(cfg, F_REGION);
		(void) pmrep_mirror_cfg_set_create_timeout(cfg, 5 * F_TIMEOUT);
		int outer = F.promoting;
		F.promoting = (int)i;
		if (outer < 0)
			F.prom_start = sim_now();
		ret = pmrep_mirror_promote(log, cfg, F.n, F.k, 0, &res);
		F.promoting = outer;
		if (outer < 0)
			F.prom_start = -1;
		(void) pmrep_mirror_cfg_delete(&cfg);
	} else {
		fviol(K_HARNESS, "pmrep_log_open of copy %u: %s", i, pmrep_err_to_str(ret));
	}
	bool crashed = sim_proc_crashed(tg->proc);
	sim_log("promote of copy %u (%s): %s%s (generation %" PRIu64 ", refused %u, fenced %u)",
			i, why, ret ? pmrep_err_to_str(ret) : "promoted",
			crashed ? ", CRASHED" : "", res.generation, res.refused, res.fenced);
	if (ret == 0 && !crashed && F.nsnap < F_MAXSNAP) {
		g_promoted++;
		F.snap[F.nsnap].copy = i;
		F.snap[F.nsnap].gen = res.generation;
		memcpy(F.snap[F.nsnap].data, pmrep_pmem_get_address(log), F_DATA);
		F.nsnap++;
	} else if (ret != 0 && !crashed) {
		g_refused++;
	}
	(void) pmrep_pmem_close(&log);
	if (crashed) {
		/* gone when its call returned: its files are their crash images */
		sim_faults_enable(false);
		if (sim_file_write_crash_image(tg->file) != 0)
			fviol(K_HARNESS, "cannot write the crash image of copy %u", i);
		sim_proc_clear_crash(tg->proc);
		ret = PMREP_E_CONN_LOST;
	}
	sim_set_current_proc(prev);
	sim_set_conn_tag(1);
	if (f_target_start(i) != 0)
		fviol(K_HARNESS, "target %u does not restart after the promote (%s)",
				i, pmrep_err_msg());
	check_copies("after a promote");
	return ret;
}

/* promote every copy in turn (faults off), then recover */
static void do_recover(void);

static void
promote_all(int skip_first)
{
	sim_faults_enable(false);
	do_recover();	/* before any fence turns a consistent mark into RUN_CLOSED */
	for (unsigned j = 0; j < F.n; j++) {
		unsigned i = (unsigned)(((int)j + (skip_first >= 0 ? skip_first + 1 : 0)) % (int)F.n);
		(void) do_promote(i, "of every copy, in turn");
	}
	do_recover();
}

/*
 * `pmrep recover --replica ...` of every copy: each asked read-only for
 * its position and membership; fewer than n - k + 1 copies of the set, or
 * no decision: refused; else the most current is recovered from with
 * PMREP_RECOVER_SET_DECIDED (no ALLOW_INCONSISTENT: no --force).
 */
static void
do_recover(void)
{
	if (F.var == 2) {
		return;	/* recover refuses a staging target (its MR is a buffer) */
	}
	struct pmrep_replica_position pos[F_MAXT];
	unsigned idx[F_MAXT], m = 0, need = 1;
	for (unsigned i = 0; i < F.n; i++) {
		struct pmrep_replica_info info;
		struct pmrep_replica_membership mb;
		int q = pmrep_replica_query_membership("sim", F.tg[i].port, NULL, FKEY,
				sizeof(FKEY), F_TIMEOUT, &info, &mb);
		if (q == 0)
			q = pmrep_replica_query_position("sim", F.tg[i].port, NULL, FKEY,
					sizeof(FKEY), F_TIMEOUT, &pos[m], NULL, NULL);
		if (q || (pos[m].flags & (PMREP_POSITION_F_FRESH | PMREP_POSITION_F_REMOVED)))
			continue;
		unsigned k = mb.quorum ? mb.quorum : mb.set_size;
		if (mb.set_size != 0 && mb.set_size - k + 1 > need)
			need = mb.set_size - k + 1;
		idx[m++] = i;
	}
	unsigned best = 0, conflict = 0;
	if (m < need || m == 0 ||
			pmrep_position_decide(pos, m, &best, &conflict, NULL) != 0) {
		g_rec_refused++;
		sim_log("recover: refused (%u copies answered, %u needed, or no decision)",
				m, need);
		return;
	}
	unsigned src = idx[best];
	char path[300];
	snprintf(path, sizeof(path), "%s/recovered", F.dir);
	unlink(path);
	struct pmrep_pmem *pm = NULL;
	if (pmrep_pmem_open(path, PMREP_PMEM_CREATE, F_DATA,
			PMREP_PMEM_GRANULARITY_PAGE, &pm) != 0) {
		fviol(K_HARNESS, "cannot create %s", path);
		return;
	}
	int ret = pmrep_mirror_recover(pm, "sim", F.tg[src].port, FKEY, sizeof(FKEY),
			FUUID, pos[best].fence_generation, PMREP_RECOVER_SET_DECIDED,
			F_TIMEOUT, NULL);
	sim_log("recover from copy %u (generation %" PRIu64 "): %s", src,
			pos[best].fence_generation, ret ? pmrep_err_to_str(ret) : "ok");
	char why[300];
	if (ret == 0) {
		g_recovered++;
		if (!holds(pmrep_pmem_get_address(pm), F.last_done, why, sizeof(why)))
			fviol(K_RECOVERED, "recovered from copy %u (ranked most current of %u) but %s",
					src, m, why);
	} else {
		g_rec_refused++;
	}
	(void) pmrep_pmem_close(&pm);
	unlink(path);
}

/* ------------------------------------------------------- a schedule */

static void
rm_files(void)
{
	char p[512];
	for (unsigned i = 0; i < F_MAXT; i++) {
		snprintf(p, sizeof(p), "%s/replica%u", F.dir, i);
		unlink(p);
		snprintf(p, sizeof(p), "%s/replica%u.pmrep-state", F.dir, i);
		unlink(p);
	}
	const char *other[] = { "log", "log.pmrep-state", "log2", "log2.pmrep-state",
		"recovered" };
	for (unsigned i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/%s", F.dir, other[i]);
		unlink(p);
	}
}

static int
setup(void)
{
	rm_files();
	F.n = topo_n[F.topo];
	F.k = topo_k[F.topo];
	snprintf(F.log_path, sizeof(F.log_path), "%s/log", F.dir);
	if (pmrep_pmem_open(F.log_path, PMREP_PMEM_CREATE, F_DATA,
			PMREP_PMEM_GRANULARITY_PAGE, &F.pmem) != 0)
		return -1;
	F.base = pmrep_pmem_get_address(F.pmem);
	F.logf = sim_file_add(SIM_PROC_WRITER, F.log_path, false);
	char p[300];
	snprintf(p, sizeof(p), "%s.pmrep-state", F.log_path);
	F.statef = sim_file_add(SIM_PROC_WRITER, p, false);
	/* persist 1: the whole mapping, before the mirror */
	uint32_t id = new_persist(F.base, 0, F_DATA);
	(void) pmrep_pmem_persist(F.pmem, F.base, F_DATA);
	persist_done(id, 0);
	for (unsigned i = 0; i < F.n; i++) {
		F.tg[i].proc = 1 + i;
		snprintf(F.tg[i].path, sizeof(F.tg[i].path), "%s/replica%u", F.dir, i);
		snprintf(F.tg[i].port, sizeof(F.tg[i].port), "%u", F_PORT + i);
		if (f_target_start(i) != 0)
			return -1;
	}
	unsigned prev = sim_set_current_proc(SIM_PROC_WRITER);
	int ret = writer_open(F.pmem, 1, NULL, &F.m);
	sim_set_current_proc(prev);
	if (ret)
		return -1;
	for (int i = 0; i < 3; i++)
		(void) w_persist();
	return 0;
}

/* the main event's window starts (deliveries / events counted from here) */
static void
window_open(unsigned copy)
{
	F.win_from = sim_deliveries();
	F.ev_from = sim_persist_events(F.tg[copy].proc);
	F.first_promote = (int)copy;
	sim_faults_enable(true);
}

static void
window_close(unsigned copy)
{
	F.win_to = sim_deliveries();
	F.ev_to = sim_persist_events(F.tg[copy].proc);
	F.base_rises = F.rises;
	F.base_waits = F.waits;
	sim_faults_enable(false);
}

static void
body(void)
{
	unsigned last = F.n - 1;
	switch (F.sc) {
	case FS_LIVE:
		/* (a) every copy in sync; the old writer goes on through the
		 * promote of the last copy (whose target stops: the writer
		 * goes on with the others, under its quorum) */
		F.live = true;
		F.live_budget = 8;
		{
			struct sim_proc_ops ops = { writer_turn, NULL };
			sim_proc_set(SIM_PROC_WRITER, &ops);
		}
		window_open(last);
		(void) do_promote(last, "while the old writer writes");
		window_close(last);
		writer_drain();
		writer_die();
		promote_all((int)last);
		break;
	case FS_CRASH:
		/* (b) the last copy left behind (its network cut mid-stream),
		 * two persists without it; the writer dies; the promote of
		 * copy 0 (the most current) crashes at each of its writes */
		sim_proc_cut(F.tg[last].proc);
		for (int i = 0; i < 2; i++)
			(void) w_persist();
		writer_die();
		window_open(0);
		(void) do_promote(0, "the one that crashes");
		window_close(0);
		promote_all(0);
		break;
	case FS_CONC:
		/* (c) promotes of copy 0 and of the last copy, the second in
		 * one of the first's waits, the old writer writing */
		F.live = true;
		F.live_budget = 6;
		{
			struct sim_proc_ops ops = { writer_turn, NULL };
			sim_proc_set(SIM_PROC_WRITER, &ops);
		}
		F.nest_copy = (int)last;
		window_open(0);
		(void) do_promote(0, "the first of two concurrent");
		window_close(0);
		F.nest_copy = -1;
		writer_drain();
		writer_die();
		promote_all(0);
		break;
	case FS_CLEAN: {
		/* (d) a clean close marks every copy consistent; the last
		 * copy's target is down for the next run, which completes
		 * persists without it (quorum); then compare / promote it and
		 * every copy, recover */
		unsigned prev = sim_set_current_proc(SIM_PROC_WRITER);
		(void) pmrep_mirror_delete(&F.m);
		sim_set_current_proc(prev);
		check_copies("after the clean close");
		f_target_stop(last);
		window_open(last);
		prev = sim_set_current_proc(SIM_PROC_WRITER);
		int ret = writer_open(F.pmem, 1, NULL, &F.m);
		sim_set_current_proc(prev);
		sim_log("the run without copy %u: %s", last, ret ? pmrep_err_to_str(ret) : "ok");
		for (int i = 0; i < 3 && F.m; i++)
			(void) w_persist();
		window_close(last);
		if (F.seed32 & 1) {
			writer_die();
		} else {
			prev = sim_set_current_proc(SIM_PROC_WRITER);
			(void) pmrep_mirror_delete(&F.m);
			sim_set_current_proc(prev);
		}
		if (f_target_start(last) != 0)
			fviol(K_HARNESS, "target %u does not restart", last);
		check_copies("compare after the run without a copy");
		promote_all((int)last - 1);
		break;
	}
	case FS_HANDOVER: {
		/* (e) a second writer (another record: another primary id)
		 * at the same generation, on a copy of the first's log; the
		 * first closed cleanly (odd seeds) or still writing */
		bool closed = F.seed32 & 1;
		if (closed) {
			unsigned prev = sim_set_current_proc(SIM_PROC_WRITER);
			(void) pmrep_mirror_delete(&F.m);
			sim_set_current_proc(prev);
		} else {
			F.live = true;
			F.live_budget = 6;
			struct sim_proc_ops ops = { writer_turn, NULL };
			sim_proc_set(SIM_PROC_WRITER, &ops);
		}
		char p2[300], s2[300];
		snprintf(p2, sizeof(p2), "%s/log2", F.dir);
		snprintf(s2, sizeof(s2), "%s/log2.pmrep-state", F.dir);
		struct pmrep_pmem *pm2 = NULL;
		if (pmrep_pmem_open(p2, PMREP_PMEM_CREATE, F_DATA,
				PMREP_PMEM_GRANULARITY_PAGE, &pm2) != 0) {
			fviol(K_HARNESS, "cannot create %s", p2);
			break;
		}
		uint8_t *b2 = pmrep_pmem_get_address(pm2);
		memcpy(b2, F.base, F_DATA);
		(void) pmrep_pmem_persist(pm2, b2, F_DATA);
		window_open(0);
		struct pmrep_mirror *m2 = NULL;
		unsigned prev = sim_set_current_proc(SIM_PROC_WRITER);
		sim_set_conn_tag(2);
		int ret = writer_open(pm2, 1, s2, &m2);
		sim_log("hand-over: a second writer at generation 1: %s",
				ret ? pmrep_err_to_str(ret) : "attached");
		if (ret) {
			g_handover_refused++;
		} else {
			g_handover_ok++;
			for (int i = 0; i < 3; i++) {
				uint64_t off, len;
				rand_range(&off, &len);
				uint32_t id = new_persist(b2, off, len);
				int r = pmrep_mirror_persist(m2, off, len, F_TIMEOUT);
				persist_done(id, r);
				sim_log("second writer's persist %u: %s", id,
						r ? pmrep_err_to_str(r) : "ok");
				check_copies("after the second writer's persist");
			}
		}
		window_close(0);
		if (!closed)
			writer_drain();
		writer_die();
		sim_proc_cut(SIM_PROC_WRITER);
		(void) pmrep_mirror_delete(&m2);
		sim_set_current_proc(prev);
		sim_set_conn_tag(1);
		(void) pmrep_pmem_close(&pm2);
		promote_all(-1);
		break;
	}
	default:
		break;
	}
}

static void
run_one(uint64_t id)
{
	memset(&F.tg, 0, sizeof(F.tg));
	F.id = id;
	F.type = (unsigned)(id >> 60);
	F.sc = (unsigned)(id >> 56) & 0xf;
	F.topo = (unsigned)(id >> 54) & 3;
	F.var = (unsigned)(id >> 52) & 3;
	F.param = (uint32_t)(id >> 32) & 0xfffff;
	F.seed32 = (uint32_t)id;
	F.nfaults = 0;
	memset(&F.fault, 0, sizeof(F.fault));
	F.crash_rise = 0;
	F.nest_at = 0;
	if (F.type == FT_PACKET) {
		F.fault.kind = (enum sim_fault)(F.param >> 16);
		F.fault.at = F.param & 0xffff;
		F.nfaults = 1;
	} else if (F.type == FT_CRASH) {
		F.fault.kind = SIM_F_CRASH;
		F.fault.proc = 1;	/* copy 0's process (scenario b) */
		F.fault.at = F.param >> 2;
		F.fault.subset_seed = fmix(id, 0xc4a5);
		F.nfaults = 1;
	} else if (F.type == FT_RISE) {
		F.crash_rise = F.param;
	} else if (F.type == FT_NEST) {
		F.nest_at = F.param;
	}
	struct sim_world_cfg wc = { .native_flush = F.var != 2,
		.delay_ms = 3 * F_TIMEOUT, .verbose = F.verbose };
	uint64_t wseed = fmix(F.seed32, (uint64_t)F.sc << 8 | F.topo << 4 | F.var);
	sim_world_reset(&wc, wseed, &F.fault, F.nfaults);
	sim_set_landing_hook(NULL);
	F.wrng.s = fmix(wseed, 0x77);
	F.nh = 0;
	memset(F.last_done, 0, sizeof(F.last_done));
	F.m = NULL;
	F.pmem = NULL;
	F.live = false;
	F.live_inflight = F.live_budget = 0;
	F.live_delay = (unsigned)(fmix(id, 0xde1a) % 48);
	F.promoting = -1;
	F.rises = F.waits = 0;
	F.nest_copy = -1;
	F.nest_done = false;
	F.nsnap = 0;
	F.kinds = 0;
	F.nwhy = 0;
	F.broken = false;
	F.win_from = F.win_to = F.ev_from = F.ev_to = 0;
	F.prom_start = -1;
	sim_set_wait_hook(nest_hook);
	sim_set_current_proc(SIM_PROC_WRITER);
	sim_set_conn_tag(1);
	pmrep_log_set_threshold(F.verbose ? PMREP_LOG_INFO : PMREP_LOG_DISABLED);
	sim_faults_enable(false);
	if (setup() != 0)
		fviol(K_HARNESS, "setup failed: %s", pmrep_err_msg());
	else
		body();
	sim_faults_enable(false);
	/* every promoted copy, as it was promoted, against every persist
	 * any writer completed */
	char why[300];
	for (unsigned s = 0; s < F.nsnap && !F.broken; s++)
		if (!holds(F.snap[s].data, F.last_done, why, sizeof(why)))
			fviol(K_PROMOTED, "copy %u promoted at generation %" PRIu64 " but %s",
					F.snap[s].copy, F.snap[s].gen, why);
	if (sim_stuck())
		fviol(K_LIVENESS, "a wait could never end");
	/* teardown */
	sim_set_wait_hook(NULL);
	sim_proc_set(SIM_PROC_WRITER, NULL);
	if (F.m) {
		sim_proc_cut(SIM_PROC_WRITER);
		(void) pmrep_mirror_delete(&F.m);
	}
	for (unsigned i = 0; i < F_MAXT; i++)
		if (F.tg[i].t)
			f_target_stop(i);
	(void) pmrep_pmem_close(&F.pmem);
	sim_world_reset(&wc, 0, NULL, 0);
	rm_files();
}

static uint64_t
fid(unsigned type, unsigned sc, unsigned topo, unsigned var, uint32_t param,
		uint32_t seed32)
{
	return (uint64_t)type << 60 | (uint64_t)sc << 56 | (uint64_t)topo << 54 |
		(uint64_t)var << 52 | (uint64_t)(param & 0xfffff) << 32 | seed32;
}

static void
describe(char *out, size_t n)
{
	int k = snprintf(out, n, "failover scenario %s, quorum %u of %u, %s, ",
			fs_names[F.sc], topo_k[F.topo], topo_n[F.topo], var_names[F.var]);
	switch (F.type) {
	case FT_PACKET:
		snprintf(out + k, n - (size_t)k, "%s at delivery %u",
				sim_fault_str((enum sim_fault)(F.param >> 16)), F.param & 0xffff);
		break;
	case FT_CRASH:
		snprintf(out + k, n - (size_t)k, "the promote crashed at its persist event %u",
				F.param >> 2);
		break;
	case FT_RISE:
		snprintf(out + k, n - (size_t)k, "the promote crashed after replica fence %u committed",
				F.param);
		break;
	case FT_NEST:
		snprintf(out + k, n - (size_t)k, "the second promote in the first's wait %u",
				F.param);
		break;
	default:
		snprintf(out + k, n - (size_t)k, "no fault");
	}
}

static bool
run_id(uint64_t id)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (getenv("PMREP_SIM_DEBUG")) {
		printf("run 0x%016" PRIx64 "\n", id);
		fflush(stdout);
	}
	run_one(id);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double dt = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	if (getenv("PMREP_SIM_DEBUG") && dt > 0.2)
		printf("slow: schedule 0x%016" PRIx64 ": %.2f s\n", id, dt);
	g_runs++;
	if (F.kinds == 0)
		return true;
	char d[300];
	describe(d, sizeof(d));
	printf("VIOLATION schedule 0x%016" PRIx64 " (%s): %s\n", id, d, F.whys[0]);
	for (unsigned i = 1; i < F.nwhy; i++)
		printf("  and: %s\n", F.whys[i]);
	printf("  replay: pmrep_sim --failover --replay 0x%016" PRIx64 "\n", id);
	fflush(stdout);
	g_bad++;
	for (unsigned k = 0; k < NK; k++)
		if ((F.kinds & (1u << k)) && g_by[k]++ == 0)
			g_first[k] = id;
	return false;
}

/* every (scenario, topology, variant): its fault-free run, then its
 * schedules, spread evenly over the budget */
static void
run_all(uint64_t seed, unsigned budget)
{
	unsigned npairs = FS_N * 2 * NVAR;
	unsigned per = budget > npairs ? budget / npairs : 1;
	for (unsigned sc = 0; sc < FS_N; sc++) {
		for (unsigned topo = 0; topo < 2; topo++) {
			for (unsigned var = 0; var < NVAR; var++) {
				uint32_t s32 = (uint32_t)fmix(seed, sc << 8 | topo << 4 | var);
				run_id(fid(FT_BASE, sc, topo, var, 0, s32));
				uint64_t w0 = F.win_from, w1 = F.win_to;
				uint64_t e0 = F.ev_from, e1 = F.ev_to;
				unsigned rises = F.base_rises, waits = F.base_waits;
				uint64_t list[4096];
				unsigned nl = 0;
				if (sc == FS_CRASH) {
					for (uint64_t e = e0 + 1; e <= e1 && nl < 4000; e++)
						for (unsigned v = 0; v < 2; v++)
							list[nl++] = fid(FT_CRASH, sc, topo, var,
									(uint32_t)(e << 2 | v), s32);
					for (unsigned r = 1; r <= rises; r++)
						list[nl++] = fid(FT_RISE, sc, topo, var, r, s32);
				}
				if (sc == FS_CONC)
					for (unsigned w = 1; w <= waits && nl < 4000; w++)
						list[nl++] = fid(FT_NEST, sc, topo, var, w, s32);
				for (uint64_t d = w0; d < w1 && d < 0xffff && nl < 4000; d++)
					for (unsigned k = SIM_F_DROP; k < SIM_F_NPACKET; k++)
						if (k != SIM_F_DUP)
							list[nl++] = fid(FT_PACKET, sc, topo, var,
									(uint32_t)(k << 16 | d), s32);
				/* the scenario's own points first (crash, nest),
				 * then packet faults, spread over the window */
				unsigned own = 0;
				for (unsigned i = 0; i < nl; i++)
					if ((list[i] >> 60) != FT_PACKET)
						own++;
				unsigned take = per > 1 ? per - 1 : 0;
				unsigned ran = 0;
				for (unsigned i = 0; i < own && ran < take; i++, ran++)
					run_id(list[i]);
				unsigned np = nl - own, left = take - ran;
				for (unsigned j = 0; j < left && np; j++)
					run_id(list[own + (unsigned)((uint64_t)j * np / left)]);
				if (F.verbose)
					printf("pair %s/%u/%u: window %" PRIu64 "..%" PRIu64 ", events %" PRIu64 "..%" PRIu64 ", rises %u, waits %u, %u candidates\n",
							fs_names[sc], topo, var, w0, w1, e0, e1, rises, waits, nl);
			}
		}
	}
}

int
sim_failover_main(int argc, char **argv)
{
#if defined(__SANITIZE_ADDRESS__)
	unsigned budget = 150;
#else
	unsigned budget = 900;
#endif
	uint64_t seed = 1, replay = 0;
	bool have_replay = false, expect = false;
	if (getenv("PMREP_TEST_UNDER_VALGRIND"))
		budget = 30;
	const char *env = getenv("PMREP_SIM_FAILOVER_SCHEDULES");
	if (env && *env)
		budget = (unsigned)strtoul(env, NULL, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--schedules") == 0 && v) {
			budget = (unsigned)strtoul(v, NULL, 0);
			i++;
		} else if (strcmp(a, "--seed") == 0 && v) {
			seed = strtoull(v, NULL, 0);
			i++;
		} else if (strcmp(a, "--replay") == 0 && v) {
			replay = strtoull(v, NULL, 0);
			have_replay = true;
			i++;
		} else if (strcmp(a, "--broken-promote") == 0) {
			pmrep_test_hooks.repl_promote_decide_before_fence = true;
		} else if (strcmp(a, "--expect-violation") == 0) {
			expect = true;
		} else {
			fprintf(stderr, "usage: pmrep_sim --failover [--schedules N] [--seed S] [--replay ID] [--broken-promote] [--expect-violation]\n");
			return 2;
		}
	}
	snprintf(F.dir, sizeof(F.dir), "/dev/shm/pmrep-simfo-%d", (int)getpid());
	if (mkdir(F.dir, 0700) != 0 && errno != EEXIST) {
		perror(F.dir);
		return 2;
	}
	sim_world_install_hooks();
	/* the simulated wire has no sockets: no TLS for query / recover */
	(void) pmrep_repl_set_tls_default(false);
	printf("pmrep_sim --failover: base seed %" PRIu64 "%s\n", seed,
			pmrep_test_hooks.repl_promote_decide_before_fence ?
			", broken promote (decides from its read-only pass, then fences)" : "");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (have_replay) {
		F.verbose = true;
		bool ok = run_id(replay);
		char d[300];
		describe(d, sizeof(d));
		printf("schedule 0x%016" PRIx64 " (%s): %s\n", replay, d,
				ok ? "no violation" : F.whys[0]);
	} else {
		run_all(seed, budget);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) +
		(double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("failover schedules run: %u, violating: %u, %.1f s; promotes: %u promoted, %u refused; recovers: %u recovered, %u refused; hand-overs: %u refused, %u accepted; complete copies checked: %u\n",
			g_runs, g_bad, secs, g_promoted, g_refused, g_recovered,
			g_rec_refused, g_handover_refused, g_handover_ok,
			g_complete_checked);
	printf("schedules violating each invariant:\n");
	for (unsigned k = 0; k < NK; k++) {
		printf("  %-10s %u", kinds[k], g_by[k]);
		if (g_by[k])
			printf(" (first: --failover --replay 0x%016" PRIx64 ")", g_first[k]);
		printf("\n");
	}
	rm_files();
	rmdir(F.dir);
	sim_world_fini();
	if (expect)
		return g_bad ? 0 : 1;
	return g_bad ? 1 : 0;
}
