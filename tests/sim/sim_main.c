/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sim_main.c -- pmrep_sim: scenarios, schedules and the invariant checker
 * of the deterministic fault-injection harness (see sim.h, and
 * docs/PROTOCOL.md "Invariants" for what is checked).
 *
 * A schedule is one 64-bit id (printed in hex; --replay takes it back):
 *   bits 60..63 type: 1 fault-free, 2 one packet fault, 3 one crash,
 *                     4 a seeded combination of 2-3 faults
 *   bits 56..59 scenario, bits 54..55 method (native / GPSPM / staging)
 *   type 2: bits 48..51 fault kind, bits 32..47 delivery index
 *   type 3: bits 52..53 process, bits 36..51 persist event, 32..35 subset
 *   type 4: bits 32..53 combination seed
 *   bits 0..31: the base seed of the (scenario, method) pair: the world's
 *   PRNG and the writer's ranges derive from it, so every schedule of a
 *   pair replays the fault-free run exactly up to its first fault.
 *
 * The writer's data: persist p writes 8-byte units whose value is
 * (p << 32 | unit index), so a unit names the persist that wrote it.
 * Persist 1 fills the whole mapping before the mirror exists (a writer
 * with history), so a replica that is not copied in full is caught.
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
#include "repl/mirror/mirror_state.h"
#include "repl/wire/msg.h"
#include "sim.h"

/* present once the mirror state file is implemented (another branch) */
int pmrep_mirror_cfg_set_state_path(struct pmrep_mirror_cfg *cfg,
		const char *path) __attribute__((weak));

/* 64 KiB; the scale scenario (writer_scale) 1 MiB = 256 regions */
#define DATA_SIZE ((unsigned)S.data_size)
#define NUNITS (DATA_SIZE / 8)
#define MAX_DATA_SIZE (1u << 20)
#define MAX_NUNITS (MAX_DATA_SIZE / 8)
#define REGION_SIZE 4096
#define TIMEOUT_MS 1000
#define MAX_PERSISTS 1024
#define MAX_TARGETS 2
#define BASE_PORT 7100
/* past the mirror's longest reconnect backoff (5000 ms) */
#define BACKOFF_WAIT_MS 5100

enum scenario {
	SC_FRESH = 0,		/* (a) attach fresh replicas, persists, close */
	SC_REATTACH,		/* (b) a replica left consistent, re-attached */
	SC_LOST,		/* (c) a target lost mid-stream, reconnected */
	SC_QUORUM,		/* (d) quorum 1 of 2, one replica failing */
	SC_ASYNC,		/* (e) asynchronous persists + poll */
	SC_WRITER,		/* (f) writer crash + restart (state file) */
	SC_FENCED,		/* (g) a failover: a second writer (generation
				 * + 1, its own log) takes the replica over
				 * while the first one goes on persisting */
	SC_MEMBERS,		/* (h) membership at run time: a replica added,
				 * the quorum changed, a replica removed and
				 * added again, while persisting */
	SC_NSCENARIOS,
	SC_LOST_ACCEPT = 8,	/* named: fresh replica, its ACCEPT lost */
	SC_SCALE = 9,		/* named: 1 MiB, 256 sequential 4 KiB persists,
				 * writer crash mid-stream + restart */
};

static const char *const sc_names[] = { "fresh", "reattach", "lost",
	"quorum", "async", "writer", "fenced", "members", "lost_accept", "writer_scale" };

enum method { M_NATIVE = 0, M_GPSPM, M_STAGING, M_N };
static const char *const m_names[] = { "native", "gpspm", "staging" };

struct persist_rec {
	uint64_t off, len;	/* bytes */
	bool done;
	int result;
};

struct target_slot {
	unsigned proc;
	char path[256];
	char port[8];
	struct pmrep_target *t;
	struct sim_file *file;
	uint8_t hdr_snap[PMREP_REPLICA_DATA_OFFSET];
	size_t hdr_from;	/* deliveries checked for header changes */
	uint8_t *data_snap;	/* the data area as the checker last saw it */
};

static struct {
	/* the schedule */
	uint64_t id;
	enum scenario sc;
	enum method method;
	uint32_t seed32;
	struct sim_fault_spec faults[SIM_MAX_FAULTS];
	unsigned nfaults;
	bool verbose;
	/* the world */
	char dir[200];
	unsigned ntargets;
	struct target_slot tg[MAX_TARGETS];
	char log_path[256], state_path[256];
	struct pmrep_pmem *pmem;
	uint8_t *base;
	struct pmrep_mirror *m;
	struct sim_file *logf, *statef;
	unsigned quorum;
	/* members: the targets a (re)opened mirror's cfg names (0 ..
	 * ncfg - 1), and the ones the mirror has now (bit per target;
	 * target i is replica index i) */
	unsigned ncfg;
	uint32_t in_mirror;
	struct sim_rng wrng;		/* the writer's ranges */
	/* history */
	struct persist_rec h[MAX_PERSISTS];
	uint32_t nh;			/* persist ids 1..nh */
	uint32_t data_size;		/* bytes of the log and each replica */
	uint32_t last_done[MAX_NUNITS];	/* max completed persist per unit */
	uint32_t conf[MAX_TARGETS][MAX_NUNITS]; /* max confirmed by replica i */
	/* the outcome */
	bool violated;
	char why[512];
	unsigned kinds;			/* bit per kind_names[]: violated */
	bool broken;			/* harness / setup failure: stop checking */
	char whys[4][512];		/* the first report of each kind */
	unsigned nwhy;
	bool restarted_writer;
	/* the writer: process, generation (= the tag of its conns) */
	unsigned wproc;
	uint64_t gen;
	char log_path0[256];
	/* fenced: the first writer after the failover (process 0, gen 1) */
	struct pmrep_mirror *old_m;
	struct pmrep_pmem *old_pmem;
	uint8_t *old_base;
	struct sim_file *old_statef;
	bool takeover_seen;
	bool rm_state_on_restart;	/* the state file is lost with the crash */
	uint64_t ev_before[MAX_DATA_SIZE / REGION_SIZE]; /* writer_scale */
	uint64_t restart_resync_bytes;
	uint64_t last_persist_event;	/* the writer's, after its last persist */
	uint64_t digest;		/* run_digest() of the last run */
	/* what a fault-free run saw */
	uint64_t setup_deliveries;
	uint64_t setup_events[SIM_MAX_PROCS];
} S;

static const uint8_t KEY[32] = "pmrep-sim-harness-key-0123456789";
static const uint8_t UUID[PMREP_UUID_SIZE] = { 0x51, 0x4d, 1, 2, 3, 4, 5, 6,
	7, 8, 9, 10, 11, 12, 13, 14 };

static void
violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Invariants by name: a schedule counts each one it violated once (the
 * checker goes on after the first violation, so a schedule that breaks
 * "no trace" early is still checked for "identical" at its end).
 */
static const char *const kind_names[] = { "identical", "durable", "no trace",
	"atomic", "fenced", "membership", "heal", "liveness", "setup", "harness",
	"scale" };
#define NKINDS (sizeof(kind_names) / sizeof(kind_names[0]))

static int
kind_of(const char *why)
{
	size_t k = strcspn(why, ":");
	for (size_t i = 0; i < NKINDS; i++)
		if (strlen(kind_names[i]) == k && strncmp(kind_names[i], why, k) == 0)
			return (int)i;
	return (int)NKINDS - 2;	/* unnamed: the harness's own */
}

static void
violation(const char *fmt, ...)
{
	char why[sizeof(S.why)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	int k = kind_of(why);
	if (S.kinds & (1u << k))
		return;		/* once per invariant and schedule */
	S.kinds |= 1u << k;
	if (k == (int)NKINDS - 2 || k == (int)NKINDS - 3)
		S.broken = true;	/* the harness / setup failed: stop */
	sim_log("VIOLATION: %s", why);
	if (S.nwhy < 4)
		snprintf(S.whys[S.nwhy++], sizeof(S.whys[0]), "%s", why);
	if (S.violated)
		return;		/* the first one is the report */
	S.violated = true;
	memcpy(S.why, why, sizeof(S.why));
}

static uint64_t
mix(uint64_t a, uint64_t b)
{
	struct sim_rng r = { a * 0x9e3779b97f4a7c15ull ^ b };
	return sim_rng_next(&r);
}

static uint64_t
get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* ------------------------------------------------------------ checker */

static bool
covers(uint32_t id, size_t u)
{
	const struct persist_rec *r = &S.h[id];
	return u * 8 >= r->off && u * 8 < r->off + r->len;
}

/*
 * identical: every unit holds the last completed persist covering it or a
 * later persist covering it; `floor` (NULL: none) adds a lower bound per
 * unit (durable: what this replica confirmed). Returns true when it holds;
 * else describes the first bad unit in `why`.
 */
static bool
data_ok(const uint8_t *data, const uint32_t *floor, char *why, size_t n)
{
	for (size_t u = 0; u < NUNITS; u++) {
		uint64_t v = get_le64(data + u * 8);
		/* identical: the last completed persist; durable (a crash
		 * image): what this replica confirmed */
		uint32_t c = floor ? floor[u] : S.last_done[u];
		uint32_t id = (uint32_t)(v >> 32), idx = (uint32_t)v;
		bool ok;
		if (v == 0)
			ok = c == 0;
		else
			ok = idx == u && id >= 1 && id <= S.nh && id >= c &&
				covers(id, u);
		if (!ok) {
			snprintf(why, n, "unit %zu (byte %zu of the data area) holds 0x%016" PRIx64
					" (persist %u, unit %u); the last %s persist covering it is %u",
					u, u * 8, v, id, idx, floor ?
					"completed and confirmed by it" : "completed", c);
			return false;
		}
	}
	return true;
}

/* the target's live data area (its file, through the harness's view) */
static const uint8_t *
target_data(struct target_slot *tg)
{
	struct sim_file *f = tg->file;
	if (f == NULL || f->live == NULL || f->size < PMREP_REPLICA_DATA_OFFSET + DATA_SIZE)
		return NULL;
	return f->live + PMREP_REPLICA_DATA_OFFSET;
}

static bool
header_consistent(struct target_slot *tg, bool *decodes)
{
	struct pmrep_replica_info info;
	int ret = pmrep_replica_read_info(tg->path, &info);
	*decodes = ret == 0;
	return ret == 0 && (info.flags & PMREP_REPLICA_F_CONSISTENT);
}

static void check_membership(const char *where);

/* every in-sync replica and every replica whose header says consistent;
 * the membership's fencing count (scenario h) */
static void
check_point(const char *where)
{
	check_membership(where);
	if (S.broken)
		return;
	char why[300];
	for (unsigned i = 0; i < S.ntargets; i++) {
		struct target_slot *tg = &S.tg[i];
		const uint8_t *d = target_data(tg);
		if (d == NULL)
			continue;
		struct pmrep_replica_status st = { .state = PMREP_REPLICA_FAILED };
		if (S.m)
			(void) pmrep_mirror_get_replica_status(S.m, i, &st);
		if (st.state == PMREP_REPLICA_IN_SYNC) {
			if (!data_ok(d, NULL, why, sizeof(why))) {
				violation("identical: %s: replica %u is reported in sync but %s",
						where, i, why);
			} else {
				memcpy(S.conf[i], S.last_done, NUNITS * sizeof(S.last_done[0]));
			}
		}
		bool dec;
		bool cons = tg->t && header_consistent(tg, &dec);
		if (tg->t && !dec) {
			violation("atomic: %s: replica %u's header does not decode (%s) between two turns of its target",
					where, i, pmrep_err_msg());
			continue;
		}
		if (cons && !data_ok(d, NULL, why, sizeof(why)))
			violation("identical: %s: replica %u's header says consistent but %s",
					where, i, why);
	}
}

/* no trace: a header changes only for a COMMIT (v2) / AUTH (v1) or CLOSE */
static void
check_header_change(struct target_slot *tg)
{
	struct sim_file *f = tg->file;
	if (f == NULL || f->live == NULL)
		return;
	if (memcmp(tg->hdr_snap, f->live, sizeof(tg->hdr_snap)) == 0)
		return;
	size_t n;
	const struct sim_delivery *log = sim_delivery_log(&n);
	bool why_ok = false;
	for (size_t i = tg->hdr_from; i < n; i++) {
		const struct sim_delivery *d = &log[i];
		if (d->to_proc != tg->proc || d->kind != 5 /* send */ ||
				d->fault == SIM_F_DROP || d->fault == SIM_F_CUT_AT ||
				d->fault == SIM_F_DELAY)
			continue;
#if REPL_PROTO_VERSION >= 2
		if (d->msg_type == REPL_MSG_COMMIT || d->msg_type == REPL_MSG_CLOSE ||
				d->msg_type == REPL_MSG_MEMBERS)
			why_ok = true;
#else
		if (d->msg_type == REPL_MSG_CLOSE)
			why_ok = true;
		if (d->msg_type == REPL_MSG_AUTH) {
			/* v1 writes the claim at AUTH: fine only if its ACCEPT
			 * reached the mirror */
			for (size_t j = i + 1; j < n; j++) {
				const struct sim_delivery *a = &log[j];
				if (a->from_proc == tg->proc && a->kind == 5 &&
						a->msg_type == REPL_MSG_ACCEPT &&
						a->src_conn == d->conn &&
						a->fault != SIM_F_DROP &&
						a->fault != SIM_F_CUT_AT &&
						a->fault != SIM_F_DELAY)
					why_ok = true;
			}
			if (!why_ok) {
				/* its ACCEPT may still come: look again later */
				return;
			}
		}
#endif
	}
	if (!why_ok) {
		violation("no trace: replica %s's header changed with no %s or CLOSE delivered to it since its last change",
				tg->path, REPL_PROTO_VERSION >= 2 ? "COMMIT" :
				"accepted AUTH");
		/* counted once; later changes are judged from here */
	}
	memcpy(tg->hdr_snap, f->live, sizeof(tg->hdr_snap));
	tg->hdr_from = n;
}

/* at the end of a schedule: v1 claims whose ACCEPT never arrived */
static void
check_header_pending(void)
{
	for (unsigned i = 0; i < S.ntargets; i++) {
		struct target_slot *tg = &S.tg[i];
		struct sim_file *f = tg->file;
		if (f && f->live && memcmp(tg->hdr_snap, f->live,
				sizeof(tg->hdr_snap)) != 0) {
			check_header_change(tg);
			if (memcmp(tg->hdr_snap, f->live,
					sizeof(tg->hdr_snap)) != 0)
				violation("no trace: replica %u's header was claimed at an AUTH whose ACCEPT never reached the mirror (the mirror failed that attach)",
						i);
		}
	}
}

/*
 * no trace, data half: a replica's data may change only inside regions
 * the mirror's record durably holds as out of sync -- AL or OOS[i] in the
 * durable image (the harness's shadow) of its state file, whose layout is
 * mirror_state.c's: AL at 4096, OOS[i] at 4096 + (1 + i) * bm_bytes, bit
 * r % 64 of little-endian word r / 64. A persist in flight is covered by
 * AL (marked durable before anything is posted), a resync by OOS[i]
 * (durable before the COMMIT). Checked at every landing write: an RDMA
 * write into the replica's mapping, and the data a target turn changed
 * (staging: the copy out of the staging buffer at PERSIST).
 */
static bool
record_bit(const uint8_t *img, size_t size, size_t area, size_t region)
{
	size_t nregions = (DATA_SIZE + REGION_SIZE - 1) / REGION_SIZE;
	size_t nwords = (nregions + 63) / 64;
	size_t bm_bytes = (nwords * 8 + 4095) / 4096 * 4096;
	size_t at = 4096 + area * bm_bytes + region / 64 * 8;
	if (at + 8 > size)
		return false;
	return (get_le64(img + at) >> (region % 64)) & 1;
}

static unsigned g_landings_checked;
/* fenced: the first writer's persists begun after the takeover, and the
 * second writer's landing writes after it */
static unsigned g_old_after_takeover, g_fenced_landings;

/* the replica's header generation now (0: it does not decode) */
static uint64_t
header_generation(const char *path)
{
	struct pmrep_replica_info info;
	return pmrep_replica_read_info(path, &info) == 0 ? info.generation : 0;
}

/*
 * fenced: a write of a session of a lower generation never lands in a
 * replica whose header holds a higher one (the tag of a writer's conns
 * is its generation)
 */
static void
check_fenced(unsigned i, size_t off, size_t len, const char *how,
		uint64_t src_conn, unsigned src_tag)
{
	if (S.sc != SC_FENCED || src_tag == 0)
		return;
	uint64_t g = header_generation(S.tg[i].path);
	g_fenced_landings++;
	if (src_tag < g)
		violation("fenced: %s from conn %" PRIu64 " of the generation %u writer lands in [%zu, +%zu) of replica %u whose header holds generation %" PRIu64,
				how, src_conn, src_tag, off, len, i, g);
}

static void
check_data_change(unsigned i, size_t off, size_t len, const char *how,
		uint64_t src_conn, unsigned src_tag)
{
	check_fenced(i, off, len, how, src_conn, src_tag);
	/* the record of the writer that sent it */
	struct sim_file *st = S.old_statef && src_tag == 1 ? S.old_statef : S.statef;
	if (st == NULL || st->shadow == NULL || st->size < 4096 + 8)
		return;		/* no state file: nothing durable to compare */
	g_landings_checked++;
	for (size_t r = off / REGION_SIZE; r <= (off + len - 1) / REGION_SIZE; r++) {
		if (record_bit(st->shadow, st->size, 0, r) ||
				record_bit(st->shadow, st->size, 1 + i, r))
			continue;
		if (getenv("PMREP_SIM_DEBUG"))
			fprintf(stderr, "DEBUG state %s tag %u old %p cur %p live bit %d pmem_base %p\n",
					st->path, src_tag, (void *)S.old_statef,
					(void *)S.statef,
					st->live ? (int)record_bit(st->live, st->size, 1 + i, r) : -1,
					(void *)st->pmem_base);
		violation("no trace: replica %u's data changed in [%zu, +%zu) (region %zu) by %s from conn %" PRIu64 " while the mirror's durable record (its state file) holds that region neither in AL nor in OOS[%u]",
				i, off, len, r, how, src_conn, i);
		return;
	}
}

static struct target_slot *
target_of_proc(unsigned proc)
{
	for (unsigned i = 0; i < S.ntargets; i++)
		if (S.tg[i].proc == proc)
			return &S.tg[i];
	return NULL;
}

/* the provider's landing hook: an RDMA write about to land */
static void
on_landing(unsigned proc, uint64_t src_conn, unsigned src_tag,
		struct sim_file *f, size_t file_off, const void *data, size_t len)
{
	struct target_slot *tg = target_of_proc(proc);
	if (tg == NULL || tg->file != f || S.broken)
		return;
	unsigned i = (unsigned)(tg - S.tg);
	if (file_off < PMREP_REPLICA_DATA_OFFSET) {
		violation("no trace: an RDMA write from conn %" PRIu64 " lands in replica %u's header (byte %zu)",
				src_conn, i, file_off);
		return;
	}
	size_t off = file_off - PMREP_REPLICA_DATA_OFFSET;
	if (off >= DATA_SIZE)
		return;
	if (len > DATA_SIZE - off)
		len = DATA_SIZE - off;
	check_data_change(i, off, len, "an RDMA write", src_conn, src_tag);
	if (tg->data_snap)
		memcpy(tg->data_snap + off, data, len);
}

/* the sender of the last PERSIST delivered to `proc` (staging copies) */
static const struct sim_delivery *
last_persist_to(unsigned proc)
{
	size_t n;
	const struct sim_delivery *log = sim_delivery_log(&n);
	while (n-- > 0)
		if (log[n].to_proc == proc && log[n].msg_type == REPL_MSG_PERSIST)
			return &log[n];
	return NULL;
}

/* after a target turn: the data it changed itself */
static void
check_turn_data(struct target_slot *tg)
{
	const uint8_t *d = target_data(tg);
	if (d == NULL || tg->data_snap == NULL ||
			memcmp(d, tg->data_snap, DATA_SIZE) == 0)
		return;
	unsigned i = (unsigned)(tg - S.tg);
	const struct sim_delivery *p = last_persist_to(tg->proc);
	for (size_t u = 0; u < NUNITS; u++) {
		if (memcmp(d + u * 8, tg->data_snap + u * 8, 8) == 0)
			continue;
		size_t e = u + 1;
		while (e < NUNITS && memcmp(d + e * 8, tg->data_snap + e * 8, 8) != 0)
			e++;
		check_data_change(i, u * 8, (e - u) * 8, "its target's turn",
				p ? p->src_conn : 0, p ? p->src_tag : 0);
		u = e;
	}
	memcpy(tg->data_snap, d, DATA_SIZE);
}

/* the checker's copy of a target's data area, as the target starts */
static void
data_snap_reset(struct target_slot *tg)
{
	const uint8_t *d = target_data(tg);
	if (tg->data_snap == NULL)
		tg->data_snap = malloc(DATA_SIZE);
	if (tg->data_snap && d)
		memcpy(tg->data_snap, d, DATA_SIZE);
	else if (tg->data_snap)
		memset(tg->data_snap, 0, DATA_SIZE);
}

/* ------------------------------------------------------------ targets */

static int target_start(struct target_slot *tg);

static void
target_turn(unsigned proc, void *arg)
{
	struct target_slot *tg = arg;
	(void) proc;
	if (tg->t) {
		uint64_t a0 = sim_activity();
		(void) pmrep_target_process(tg->t, 0);
		if (sim_activity() != a0)
			sim_proc_turn_done(tg->proc);
		if (!sim_proc_crashed(tg->proc)) {
			check_header_change(tg);
			if (sim_activity() != a0)
				check_turn_data(tg);
		}
	}
	if (!sim_proc_crashed(tg->proc))
		return;
	/* a crashed target: gone when its call returned; restarted from
	 * its crash image, the rest of the schedule without faults */
	sim_proc_set(tg->proc, NULL);
	(void) pmrep_target_delete(&tg->t);
	sim_faults_enable(false);
	if (sim_file_write_crash_image(tg->file) != 0) {
		violation("harness: cannot write the crash image of %s", tg->path);
		return;
	}
	sim_proc_clear_crash(tg->proc);
	char why[300];
	unsigned idx = (unsigned)(tg - S.tg);
	const uint8_t *d = target_data(tg);
	if (d && !data_ok(d, S.conf[idx], why, sizeof(why)))
		violation("durable: replica %u's crash image lost a confirmed persist: %s",
				idx, why);
	bool dec;
	if (d && header_consistent(tg, &dec) && !data_ok(d, NULL, why, sizeof(why)))
		violation("identical: replica %u's crash image says consistent but %s",
				idx, why);
	int ret = target_start(tg);
	if (ret)
		violation("atomic: target %u cannot restart on its crash image (%s: %s): a header must always decode",
				idx, pmrep_err_to_str(ret), pmrep_err_msg());
	sim_log("target %u restarted after its crash", idx);
}

static int
target_start(struct target_slot *tg)
{
	struct pmrep_target_cfg *cfg = NULL;
	int ret = pmrep_target_cfg_new(&cfg);
	if (ret)
		return ret;
	(void) pmrep_target_cfg_set_path(cfg, tg->path);
	(void) pmrep_target_cfg_set_data_size(cfg, DATA_SIZE, true);
	(void) pmrep_target_cfg_set_address(cfg, "sim", tg->port);
	(void) pmrep_target_cfg_set_key(cfg, KEY, sizeof(KEY));
	/* the simulated wire has no sockets: no TLS (test_repl_tls.c) */
	(void) pmrep_target_cfg_set_tls(cfg, false);
	(void) pmrep_target_cfg_set_timeout(cfg, TIMEOUT_MS);
	(void) pmrep_target_cfg_set_staging(cfg, S.method == M_STAGING);
	unsigned prev = sim_set_current_proc(tg->proc);
	ret = pmrep_target_new(cfg, &tg->t);
	sim_set_current_proc(prev);
	(void) pmrep_target_cfg_delete(&cfg);
	if (ret)
		return ret;
	if (tg->file == NULL)
		tg->file = sim_file_add(tg->proc, tg->path, true);
	else
		(void) sim_file_reload(tg->file);	/* as the new target found it */
	if (tg->file->live)
		memcpy(tg->hdr_snap, tg->file->live, sizeof(tg->hdr_snap));
	data_snap_reset(tg);
	size_t n;
	(void) sim_delivery_log(&n);
	tg->hdr_from = n;
	struct sim_proc_ops ops = { target_turn, tg };
	sim_proc_set(tg->proc, &ops);
	return 0;
}

/* ------------------------------------------------------------- writer */

static int
mirror_open(void)
{
	struct pmrep_mirror_cfg *cfg = NULL;
	int ret = pmrep_mirror_cfg_new(&cfg);
	if (ret)
		return ret;
	for (unsigned i = 0; i < S.ncfg; i++)
		(void) pmrep_mirror_cfg_add_replica(cfg, "sim", S.tg[i].port);
	(void) pmrep_mirror_cfg_set_key(cfg, KEY, sizeof(KEY));
	(void) pmrep_mirror_cfg_set_tls(cfg, false);
	(void) pmrep_mirror_cfg_set_uuid(cfg, UUID);
	(void) pmrep_mirror_cfg_set_generation(cfg, S.gen);
	(void) pmrep_mirror_cfg_set_quorum(cfg, S.quorum);
	(void) pmrep_mirror_cfg_set_region_size(cfg, REGION_SIZE);
	(void) pmrep_mirror_cfg_set_timeout(cfg, TIMEOUT_MS);
	(void) pmrep_mirror_cfg_set_force_gpspm(cfg, S.method == M_GPSPM);
	/* one thread, every wait the harness's: recovery only in
	 * pmrep_mirror_reconnect */
	(void) pmrep_mirror_cfg_set_background_recovery(cfg, false);
	if (pmrep_mirror_cfg_set_state_path && (S.sc == SC_WRITER || S.sc == SC_SCALE))
		(void) pmrep_mirror_cfg_set_state_path(cfg, S.state_path);
	ret = pmrep_mirror_new(S.pmem, cfg, &S.m);
	(void) pmrep_mirror_cfg_delete(&cfg);
	if (ret)
		S.m = NULL;
	else
		S.in_mirror = (1u << S.ncfg) - 1;
	return ret;
}

static int
log_open(void)
{
	int ret = pmrep_pmem_open(S.log_path, PMREP_PMEM_CREATE, DATA_SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &S.pmem);
	if (ret)
		return ret;
	S.base = pmrep_pmem_get_address(S.pmem);
	return 0;
}

/* store persist `id`'s values into the log */
static void
write_units(uint8_t *base, uint32_t id)
{
	const struct persist_rec *r = &S.h[id];
	for (uint64_t b = r->off; b < r->off + r->len; b += 8)
		put_le64(base + b, (uint64_t)id << 32 | (b / 8));
}

static uint32_t
new_persist_in(uint8_t *base, uint64_t off, uint64_t len)
{
	if (S.nh + 1 >= MAX_PERSISTS)
		return 0;
	uint32_t id = ++S.nh;
	S.h[id] = (struct persist_rec){ .off = off, .len = len };
	write_units(base, id);
	return id;
}

static uint32_t
new_persist(uint64_t off, uint64_t len)
{
	return new_persist_in(S.base, off, len);
}

static void
persist_done(uint32_t id, int result)
{
	struct persist_rec *r = &S.h[id];
	r->done = true;
	r->result = result;
	if (result != 0)
		return;
	for (uint64_t u = r->off / 8; u < (r->off + r->len) / 8; u++)
		if (S.last_done[u] < id)
			S.last_done[u] = id;
}

static void
random_range(uint64_t *off, uint64_t *len)
{
	uint64_t units = 1 + sim_rng_below(&S.wrng, 512);	/* up to 4 KiB */
	uint64_t at = sim_rng_below(&S.wrng, NUNITS - units + 1);
	*off = at * 8;
	*len = units * 8;
}

static void writer_crash_restart(void);

/* after every call of the writer: a crash that happened inside it */
static bool
writer_check_crash(void)
{
	if (!sim_proc_crashed(S.wproc))
		return false;
	writer_crash_restart();
	return true;
}

/* one synchronous persist of [off, off + len) (len 0: a random range);
 * false when the writer crashed */
static bool
op_persist_at(uint64_t off, uint64_t len)
{
	if (S.m == NULL)
		return true;
	if (len == 0)
		random_range(&off, &len);
	uint32_t id = new_persist(off, len);
	if (id == 0)
		return true;
	int ret = pmrep_mirror_persist(S.m, off, len, TIMEOUT_MS);
	if (writer_check_crash())
		return false;
	persist_done(id, ret);
	sim_log("persist %u [%" PRIu64 ", +%" PRIu64 "): %s", id, off, len,
			ret ? pmrep_err_to_str(ret) : "ok");
	/* the local persist happened: a persist event of the writer */
	sim_file_event(S.logf, off, len);
	S.last_persist_event = sim_persist_events(SIM_PROC_WRITER);
	if (writer_check_crash())
		return false;
	check_point("after a persist returned");
	return true;
}

static bool
op_persist(void)
{
	return op_persist_at(0, 0);
}

static void
op_async(unsigned count)
{
	if (S.m == NULL)
		return;
	unsigned n = 0;
	for (unsigned i = 0; i < count && i < 16; i++) {
		uint64_t off, len;
		random_range(&off, &len);
		uint32_t id = new_persist(off, len);
		if (id == 0)
			break;
		int ret = pmrep_mirror_persist_async(S.m, off, len,
				(void *)(uintptr_t)id);
		if (writer_check_crash())
			return;
		if (ret) {
			persist_done(id, ret);
			continue;
		}
		sim_file_event(S.logf, off, len);
		if (writer_check_crash())
			return;
		n++;
	}
	unsigned left = n;
	for (int round = 0; left > 0 && round < 200; round++) {
		struct pmrep_mirror_completion c[16];
		int got = 0;
		int ret = pmrep_mirror_poll(S.m, c, 16, &got);
		if (writer_check_crash())
			return;
		if (ret)
			break;
		for (int i = 0; i < got; i++) {
			uint32_t id = (uint32_t)(uintptr_t)c[i].ctx;
			persist_done(id, c[i].result);
			left--;
		}
		if (got)
			check_point("after asynchronous persists completed");
		if (left)
			sim_run_idle(20);
	}
	if (left)
		violation("liveness: %u asynchronous persists never completed", left);
}

static void
op_reconnect(void)
{
	for (int i = 0; i < 6 && S.m; i++) {
		bool all = true;
		for (unsigned k = 0; k < S.ntargets; k++) {
			if (!(S.in_mirror & (1u << k)))
				continue;
			struct pmrep_replica_status st;
			(void) pmrep_mirror_get_replica_status(S.m, k, &st);
			if (st.state != PMREP_REPLICA_IN_SYNC)
				all = false;
		}
		if (all)
			return;
		sim_run_idle(BACKOFF_WAIT_MS);
		(void) pmrep_mirror_reconnect(S.m, 3 * TIMEOUT_MS);
		if (writer_check_crash())
			return;
		check_point("after a reconnect");
	}
}

/* ----------------------------------------------- membership (h) */

/* the fencing count a header records (n - k + 1; none recorded: 1);
 * *claimed: it belongs to a set (a promotion refuses an unclaimed one);
 * *removed: its writer removed it (a promotion neither counts nor
 * promotes it) */
static unsigned
recorded_need(const struct target_slot *tg, bool *claimed, bool *removed)
{
	struct pmrep_replica_info info;
	struct pmrep_replica_membership mb;
	*claimed = *removed = false;
	if (pmrep_replica_read_info(tg->path, &info) != 0 ||
			pmrep_replica_read_membership(tg->path, &mb) != 0)
		return 1;
	for (unsigned i = 0; i < PMREP_UUID_SIZE; i++)
		*claimed |= info.uuid[i] != 0;
	*removed = info.flags & PMREP_REPLICA_F_REMOVED;
	if (mb.set_size == 0)
		return 1;
	return mb.set_size - (mb.quorum ? mb.quorum : mb.set_size) + 1;
}

/*
 * membership: every set P of targets that a promotion could fence -- as
 * many as the largest n - k + 1 their headers record, each claimed by the
 * set and not removed (promote counts no other) -- meets every k
 * replicas the mirror can complete a persist with now (k: its quorum, or
 * under "all" every replica it requires, the joining ones not). Checked
 * after every writer call: no persist completes inside a membership call.
 */
static void
check_membership(const char *where)
{
	if (S.m == NULL || S.sc != SC_MEMBERS || S.broken)
		return;
	struct pmrep_replica_membership mb;
	if (pmrep_mirror_get_membership(S.m, &mb) != 0)
		return;
	unsigned members = 0, n = 0;
	uint32_t req = 0;	/* replicas the mirror counts for a persist */
	for (unsigned i = 0; i < S.ntargets; i++) {
		if (!(S.in_mirror & (1u << i)))
			continue;
		n++;
		struct pmrep_replica_status st;
		if (pmrep_mirror_get_replica_status(S.m, i, &st) != 0)
			continue;
		/* a joining replica under "all": counted once in sync; the
		 * quorum counts any in sync (a superset: stricter) */
		req |= 1u << i;
		members++;
	}
	unsigned k = mb.quorum ? mb.quorum : members;
	if (n == 0 || k == 0)
		return;
	for (uint32_t p = 1; p < (1u << S.ntargets); p++) {
		unsigned size = 0, need = 1;
		bool promoter = false;
		for (unsigned i = 0; i < S.ntargets; i++) {
			if (!(p & (1u << i)))
				continue;
			bool claimed, removed;
			unsigned r = recorded_need(&S.tg[i], &claimed, &removed);
			if (removed || !claimed)
				continue;	/* promote counts neither */
			size++;
			promoter = true;
			if (r > need)
				need = r;
		}
		if (size < need || !promoter)
			continue;	/* refused: too few to fence, or no
					 * replica of the set to promote */
		unsigned meet = (unsigned)__builtin_popcount(p & req);
		unsigned count = (unsigned)__builtin_popcount(req);
		if (count >= k && meet + k <= count)
			violation("membership: %s: targets 0x%x (fencing count %u recorded) could be promoted, yet %u of the mirror's %u replicas outside them complete a persist (quorum %u, %u replicas)",
					where, p, need, count - meet, count,
					mb.quorum, mb.set_size);
	}
}

static bool
op_add(unsigned t)
{
	if (S.m == NULL || (S.in_mirror & (1u << t)))
		return true;
	/* a restart (the application's recovery) names it from now on */
	if (S.ncfg < t + 1)
		S.ncfg = t + 1;
	unsigned idx = UINT32_MAX;
	int ret = pmrep_mirror_add_replica(S.m, "sim", S.tg[t].port, NULL,
			3 * TIMEOUT_MS, &idx);
	if (writer_check_crash())
		return false;
	sim_log("add_replica target %u: %s (index %u)", t,
			ret ? pmrep_err_to_str(ret) : "ok", idx);
	if (ret == 0 && idx != t)
		violation("harness: target %u added as replica %u", t, idx);
	if (ret == 0)
		S.in_mirror |= 1u << t;
	check_point("after a replica was added");
	return true;
}

static bool
op_remove(unsigned t)
{
	if (S.m == NULL || !(S.in_mirror & (1u << t)))
		return true;
	int ret = pmrep_mirror_remove_replica(S.m, t, 3 * TIMEOUT_MS);
	if (writer_check_crash())
		return false;
	sim_log("remove_replica %u: %s", t, ret ? pmrep_err_to_str(ret) : "ok");
	if (ret == 0)
		S.in_mirror &= ~(1u << t);
	check_point("after a replica was removed");
	return true;
}

static bool
op_quorum(unsigned k)
{
	if (S.m == NULL)
		return true;
	int ret = pmrep_mirror_set_quorum(S.m, k, 3 * TIMEOUT_MS);
	if (writer_check_crash())
		return false;
	sim_log("set_quorum %u: %s", k, ret ? pmrep_err_to_str(ret) : "ok");
	if (ret == 0)
		S.quorum = k;
	check_point("after the quorum changed");
	return true;
}

static void
op_mirror_new(void)
{
	for (int i = 0; i < 3 && S.m == NULL; i++) {
		int ret = mirror_open();
		if (writer_check_crash())
			return;
		if (ret) {
			sim_log("mirror_new: %s", pmrep_err_to_str(ret));
			sim_run_idle(200);
		}
	}
	check_point("after the mirror attached");
}

static void
op_delete(void)
{
	if (S.m == NULL)
		return;
	(void) pmrep_mirror_delete(&S.m);
	if (writer_check_crash())
		return;
	check_point("after the mirror closed");
}

/* ------------------------------------------------- fenced (failover) */

/* the first writer's crash: it is gone (nobody restarts a deposed one) */
static bool
old_check_crash(void)
{
	if (!sim_proc_crashed(SIM_PROC_WRITER))
		return false;
	sim_log("the first writer crashed: gone");
	sim_faults_enable(false);
	(void) pmrep_mirror_delete(&S.old_m);
	sim_proc_clear_crash(SIM_PROC_WRITER);
	return true;
}

/* a call of the first writer: its process and conn tag while it runs */
static unsigned
old_enter(void)
{
	sim_set_conn_tag(1);
	return sim_set_current_proc(SIM_PROC_WRITER);
}

static void
old_leave(unsigned prev)
{
	sim_set_current_proc(prev);
	sim_set_conn_tag((unsigned)S.gen);
}

/*
 * the failover: a second writer (process 2, generation 2) on its own log,
 * which holds what the first one completed (as a promoted copy would),
 * with its own record (the default state file next to that log); it
 * attaches the replica. The first writer stays alive and goes on.
 */
static bool
op_failover(void)
{
	/* the first writer's asynchronous persists in flight across the
	 * takeover: submitted (posted) now, polled after it */
	unsigned np = 0;
	for (unsigned k = 0; k < 3 && S.m; k++) {
		uint64_t off, len;
		random_range(&off, &len);
		uint32_t id = new_persist(off, len);
		if (id == 0)
			break;
		int ret = pmrep_mirror_persist_async(S.m, off, len,
				(void *)(uintptr_t)id);
		if (writer_check_crash())
			return false;
		if (ret) {
			persist_done(id, ret);
			continue;
		}
		sim_file_event(S.logf, off, len);
		if (writer_check_crash())
			return false;
		np++;
	}
	S.old_m = S.m;
	S.m = NULL;
	S.old_pmem = S.pmem;
	S.pmem = NULL;
	S.old_base = S.base;
	S.old_statef = S.statef;
	snprintf(S.log_path, sizeof(S.log_path), "%s/logB", S.dir);
	S.wproc = 2;
	S.gen = 2;
	sim_set_current_proc(S.wproc);
	sim_set_conn_tag((unsigned)S.gen);
	if (log_open() != 0) {
		violation("harness: cannot create the second writer's log %s", S.log_path);
		return false;
	}
	memcpy(S.base, S.old_base, DATA_SIZE);
	(void) pmrep_pmem_persist(S.pmem, S.base, DATA_SIZE);
	S.logf = sim_file_add(S.wproc, S.log_path, false);
	char p[300];
	snprintf(p, sizeof(p), "%s.pmrep-state", S.log_path);
	S.statef = sim_file_add(S.wproc, p, false);
	sim_log("failover: writer 2 (generation 2) on %s, %u asynchronous persists of writer 1 in flight",
			S.log_path, np);
	op_mirror_new();
	/* the first writer learns how its asynchronous persists ended (they
	 * began before the takeover: either outcome is allowed; what they
	 * wrote after it is checked where it lands) */
	unsigned left = np;
	for (int round = 0; left > 0 && S.old_m && round < 200; round++) {
		struct pmrep_mirror_completion c[16];
		int got = 0;
		unsigned prev = old_enter();
		int ret = pmrep_mirror_poll(S.old_m, c, 16, &got);
		old_leave(prev);
		if (old_check_crash() || ret)
			break;
		for (int i = 0; i < got; i++) {
			persist_done((uint32_t)(uintptr_t)c[i].ctx, c[i].result);
			sim_log("first writer's asynchronous persist %u: %s",
					(unsigned)(uintptr_t)c[i].ctx, c[i].result ?
					pmrep_err_to_str(c[i].result) : "ok");
			left--;
		}
		if (left)
			sim_run_idle(20);
	}
	if (left && S.old_m)
		violation("liveness: %u asynchronous persists of the first writer never completed",
				left);
	return true;
}

/* a persist of the first writer: after the takeover it must fail. Its
 * persists are not the history the replica is judged by (the second
 * writer's log is); only their landing is checked (fenced) */
static void
op_old_persist(bool reconnect)
{
	if (S.old_m == NULL)
		return;
	uint64_t off, len;
	random_range(&off, &len);
	uint32_t id = new_persist_in(S.old_base, off, len);
	if (id == 0)
		return;
	uint64_t g0 = header_generation(S.tg[0].path);
	if (g0 > 1) {
		S.takeover_seen = true;
		g_old_after_takeover++;
	}
	unsigned prev = old_enter();
	if (reconnect) {
		sim_run_idle(BACKOFF_WAIT_MS);
		(void) pmrep_mirror_reconnect(S.old_m, 3 * TIMEOUT_MS);
	}
	int ret = old_check_crash() ? PMREP_E_CONN_LOST :
		pmrep_mirror_persist(S.old_m, off, len, TIMEOUT_MS);
	old_leave(prev);
	S.h[id].done = true;
	S.h[id].result = ret;
	sim_log("old writer's persist %u [%" PRIu64 ", +%" PRIu64 "): %s", id, off,
			len, ret ? pmrep_err_to_str(ret) : "ok");
	if (old_check_crash())
		return;
	if (ret == 0 && g0 > 1)
		violation("fenced: the first writer's persist %u (generation 1) returned 0 after the takeover (the replica's header held generation %" PRIu64 " when it began)",
				id, g0);
}

static void
op_old_delete(void)
{
	if (S.old_m == NULL)
		return;
	unsigned prev = old_enter();
	(void) pmrep_mirror_delete(&S.old_m);
	old_leave(prev);
	(void) old_check_crash();
}

/* a writer crash: its mirror ends with its current call; restarted on the
 * crash images of its files, without faults; the application recovers
 * by writing the persists that were in flight again */
static void
writer_crash_restart(void)
{
	sim_log("writer crashed: restarting it on its crash image");
	sim_faults_enable(false);
	if (S.m)
		(void) pmrep_mirror_delete(&S.m);
	(void) pmrep_pmem_close(&S.pmem);
	if (sim_file_write_crash_image(S.logf) != 0)
		violation("harness: cannot write the writer's crash image");
	if (S.statef)
		(void) sim_file_write_crash_image(S.statef);
	if (S.rm_state_on_restart && S.statef) {
		/* the record is gone: the restart knows nothing */
		char p[sizeof(S.statef->path)];
		memcpy(p, S.statef->path, sizeof(p));
		sim_file_drop(S.statef);
		unlink(p);
		S.statef = sim_file_add(S.wproc, p, false);
		sim_log("the writer's state file %s removed before its restart", p);
		/* without its record the writer is another primary (a new
		 * primary id); the replica it left claimed, not closed, is
		 * refused to it at that generation (split brain): the way out
		 * is the next one */
		S.gen++;
	}
	sim_proc_clear_crash(S.wproc);
	char why[300];
	if (!data_ok(S.logf->shadow, NULL, why, sizeof(why)))
		violation("durable: the writer's crash image lost a completed persist: %s",
				why);
	if (log_open() != 0) {
		violation("harness: cannot reopen the writer's log");
		return;
	}
	S.restarted_writer = true;
	uint32_t inflight[MAX_PERSISTS];
	unsigned ni = 0;
	for (uint32_t id = 2; id <= S.nh; id++)
		if (!S.h[id].done)
			inflight[ni++] = id;
	op_mirror_new();
	if (S.m) {
		uint64_t total = 0;
		for (unsigned i = 0; i < S.ntargets; i++) {
			struct pmrep_replica_status st;
			(void) pmrep_mirror_get_replica_status(S.m, i, &st);
			total += st.resync_bytes;
		}
		S.restart_resync_bytes = total;
	}
	for (unsigned k = 0; k < ni && S.m; k++) {
		const struct persist_rec *r = &S.h[inflight[k]];
		uint32_t id = new_persist(r->off, r->len);
		S.h[inflight[k]].done = true;
		S.h[inflight[k]].result = PMREP_E_CONN_LOST;
		if (id == 0)
			break;
		int ret = pmrep_mirror_persist(S.m, r->off, r->len, TIMEOUT_MS);
		persist_done(id, ret);
		sim_file_event(S.logf, r->off, r->len);
	}
}

/* --------------------------------------------------------- a schedule */

static void
rm_rf_dir(void)
{
	char p[512];
	for (unsigned i = 0; i < MAX_TARGETS; i++) {
		snprintf(p, sizeof(p), "%s/replica%u", S.dir, i);
		unlink(p);
	}
	unlink(S.log_path);
	unlink(S.state_path);
	snprintf(p, sizeof(p), "%s.pmrep-state", S.log_path);
	unlink(p);
	/* fenced: the second writer's log and record */
	snprintf(p, sizeof(p), "%s/logB", S.dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/logB.pmrep-state", S.dir);
	unlink(p);
}

static void
setup_world(void)
{
	rm_rf_dir();
	S.ntargets = (S.sc == SC_QUORUM || S.sc == SC_LOST_ACCEPT ||
			S.sc == SC_MEMBERS) ? 2 : 1;
	S.quorum = (S.sc == SC_QUORUM || S.sc == SC_LOST_ACCEPT) ? 1 : 0;
	/* members: the mirror starts with target 0, the other is added */
	S.ncfg = S.sc == SC_MEMBERS ? 1 : S.ntargets;
	S.in_mirror = 0;
	if (log_open() != 0) {
		violation("harness: cannot create the writer's log %s", S.log_path);
		return;
	}
	S.logf = sim_file_add(SIM_PROC_WRITER, S.log_path, false);
	/* the mirror's record: its own path in scenario (f), else the
	 * default next to the mapping (once the state file exists) */
	if ((S.sc == SC_WRITER || S.sc == SC_SCALE) && pmrep_mirror_cfg_set_state_path) {
		S.statef = sim_file_add(SIM_PROC_WRITER, S.state_path, false);
	} else {
		char p[300];
		snprintf(p, sizeof(p), "%s.pmrep-state", S.log_path);
		S.statef = sim_file_add(SIM_PROC_WRITER, p, false);
	}
	/* the writer's history before the mirror: persist 1 over everything */
	uint32_t id = new_persist(0, DATA_SIZE);
	(void) pmrep_pmem_persist(S.pmem, S.base, DATA_SIZE);
	persist_done(id, 0);
	sim_file_persisted(S.logf, 0, DATA_SIZE);
	for (unsigned i = 0; i < S.ntargets; i++) {
		struct target_slot *tg = &S.tg[i];
		tg->proc = 1 + i;
		snprintf(tg->path, sizeof(tg->path), "%s/replica%u", S.dir, i);
		snprintf(tg->port, sizeof(tg->port), "%u", BASE_PORT + i);
		int ret = target_start(tg);
		if (ret) {
			violation("harness: target %u does not start: %s", i,
					pmrep_err_to_str(ret));
			return;
		}
	}
	if (S.sc == SC_REATTACH) {
		/* a replica left consistent by an earlier mirror */
		op_mirror_new();
		for (int i = 0; i < 3; i++)
			op_persist();
		op_delete();
		if (S.m == NULL && !S.broken) {
			bool dec;
			if (!header_consistent(&S.tg[0], &dec))
				violation("setup: the replica is not consistent after a clean close");
		}
	}
}

static void
heal_and_close(void)
{
	sim_faults_enable(false);
	if (S.broken)
		return;
	if (S.m == NULL)
		op_mirror_new();
	/* the application's recovery completes the set it meant to have */
	for (unsigned k = 0; k < S.ntargets && S.m; k++)
		if (!(S.in_mirror & (1u << k)))
			(void) op_add(k);
	for (int i = 0; i < 20 && S.m; i++) {
		bool all = true;
		for (unsigned k = 0; k < S.ntargets; k++) {
			struct pmrep_replica_status st;
			(void) pmrep_mirror_get_replica_status(S.m, k, &st);
			if (st.state != PMREP_REPLICA_IN_SYNC)
				all = false;
		}
		if (all)
			break;
		sim_run_idle(BACKOFF_WAIT_MS);
		(void) pmrep_mirror_reconnect(S.m, 5 * TIMEOUT_MS);
	}
	if (S.m == NULL) {
		violation("heal: no mirror could be opened without faults");
		return;
	}
	check_point("after the heal");
	for (unsigned k = 0; k < S.ntargets && !S.broken; k++) {
		struct pmrep_replica_status st;
		(void) pmrep_mirror_get_replica_status(S.m, k, &st);
		if (st.state != PMREP_REPLICA_IN_SYNC)
			violation("heal: replica %u is %s (last error %s) after 20 reconnects without faults",
					k, pmrep_replica_state_str(st.state),
					pmrep_err_to_str(st.last_error));
	}
	(void) pmrep_mirror_delete(&S.m);
	sim_run_idle(10);
	check_header_pending();
	for (unsigned k = 0; k < S.ntargets && !S.broken; k++) {
		struct target_slot *tg = &S.tg[k];
		const uint8_t *d = target_data(tg);
		if (d == NULL) {
			violation("heal: replica %u has no data area", k);
			break;
		}
		for (size_t b = 0; b < DATA_SIZE; b += 8) {
			if (memcmp(d + b, S.base + b, 8) != 0) {
				violation("identical: after the heal and a clean close replica %u differs from the log at byte %zu: 0x%016" PRIx64 " (persist %u), the log 0x%016" PRIx64 " (persist %u)",
						k, b, get_le64(d + b),
						(unsigned)(get_le64(d + b) >> 32),
						get_le64(S.base + b),
						(unsigned)(get_le64(S.base + b) >> 32));
				break;
			}
		}
		bool dec;
		if (!header_consistent(tg, &dec))
			violation("heal: replica %u is not marked consistent after a clean close%s",
					k, dec ? "" : " (its header does not decode)");
	}
	if (sim_stuck())
		violation("liveness: a wait could never end (see --replay)");
}

static void
scenario_body(void)
{
	switch (S.sc) {
	case SC_FRESH:
	case SC_REATTACH:
		op_mirror_new();
		for (int i = 0; i < 5; i++)
			if (!op_persist())
				return;
		op_delete();
		break;
	case SC_LOST:
	case SC_QUORUM: {
		op_mirror_new();
		for (int i = 0; i < 3; i++)
			if (!op_persist())
				return;
		/* the last target's network goes away mid-stream */
		sim_proc_cut(S.tg[S.ntargets - 1].proc);
		for (int i = 0; i < 3; i++)
			if (!op_persist())
				return;
		op_reconnect();
		for (int i = 0; i < 2; i++)
			if (!op_persist())
				return;
		op_delete();
		break;
	}
	case SC_ASYNC:
		op_mirror_new();
		op_async(6);
		if (!op_persist())
			return;
		op_async(4);
		op_delete();
		break;
	case SC_WRITER:
		op_mirror_new();
		for (int i = 0; i < 6; i++)
			if (!op_persist())
				return;
		op_delete();
		break;
	case SC_FENCED:
		op_mirror_new();
		for (int i = 0; i < 2; i++)
			if (!op_persist())
				return;
		if (!op_failover())
			return;
		op_old_persist(false);
		op_old_persist(false);
		for (int i = 0; i < 2; i++)
			if (!op_persist())
				return;
		op_old_persist(true);
		if (!op_persist())
			return;
		op_delete();
		op_old_persist(false);
		op_old_delete();
		break;
	case SC_MEMBERS:
		/* "all" of target 0; target 1 joins; quorum 1 of 2; target 0
		 * removed and added again; "all" of 2 */
		op_mirror_new();
		for (int i = 0; i < 2; i++)
			if (!op_persist())
				return;
		if (!op_add(1) || !op_persist() || !op_persist())
			return;
		op_reconnect();
		if (!op_persist() || !op_quorum(1) || !op_persist())
			return;
		if (!op_remove(0) || !op_persist() || !op_persist())
			return;
		if (!op_add(0))
			return;
		op_reconnect();
		if (!op_persist() || !op_quorum(0) || !op_persist())
			return;
		op_delete();
		break;
	case SC_SCALE:
		/* sequential 4 KiB persists over all 256 regions (4 times the
		 * activity log's limit); the crash comes mid-stream */
		op_mirror_new();
		for (uint32_t k = 0; k < MAX_DATA_SIZE / REGION_SIZE; k++) {
			S.ev_before[k] = sim_persist_events(SIM_PROC_WRITER);
			if (!op_persist_at((uint64_t)k * REGION_SIZE, REGION_SIZE))
				return;
		}
		op_delete();
		break;
	case SC_LOST_ACCEPT:
		op_mirror_new();
		for (int i = 0; i < 3; i++)
			if (!op_persist())
				return;
		op_reconnect();
		for (int i = 0; i < 2; i++)
			if (!op_persist())
				return;
		op_delete();
		break;
	default:
		break;
	}
}

struct run_stats {
	uint64_t deliveries;
	uint64_t setup_deliveries;
	uint64_t events[SIM_MAX_PROCS];
	uint64_t setup_events[SIM_MAX_PROCS];
	uint64_t body_events[SIM_MAX_PROCS];	/* before the heal */
	uint64_t last_persist_event;
	uint64_t first_accept[MAX_TARGETS];	/* delivery index, or UINT64_MAX */
	uint8_t *is_send;			/* per delivery (malloc'd; may be NULL) */
};


/* FNV-1a over what a run did: every delivery, every persist's outcome,
 * every replica's data at the end, the clock (--check-determinism) */
static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t
run_digest(void)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t n;
	const struct sim_delivery *log = sim_delivery_log(&n);
	for (size_t i = 0; i < n; i++) {
		int v[5] = { (int)log[i].from_proc, (int)log[i].to_proc,
			log[i].kind, log[i].msg_type, (int)log[i].fault };
		h = fnv(h, v, sizeof(v));
	}
	for (uint32_t id = 1; id <= S.nh; id++) {
		int v[2] = { S.h[id].done, S.h[id].result };
		h = fnv(h, v, sizeof(v));
	}
	/* the data areas (headers hold random ids: OpenSSL's, not ours) */
	for (unsigned i = 0; i < S.ntargets; i++) {
		const uint8_t *d = target_data(&S.tg[i]);
		if (d)
			h = fnv(h, d, DATA_SIZE);
	}
	long long now = sim_now();
	h = fnv(h, &now, sizeof(now));
	return fnv(h, &S.violated, sizeof(S.violated));
}

static void
run_schedule(struct run_stats *rs)
{
	struct sim_world_cfg wc = { .native_flush = S.method == M_NATIVE,
		.delay_ms = 3 * TIMEOUT_MS, .verbose = S.verbose };
	uint64_t wseed = mix(S.seed32, (uint64_t)S.sc << 8 | S.method);
	sim_world_reset(&wc, wseed, S.faults, S.nfaults);
	S.wrng.s = mix(wseed, 0x77);
	S.nh = 0;
	S.data_size = S.sc == SC_SCALE ? MAX_DATA_SIZE : 64u << 10;
	memset(S.last_done, 0, sizeof(S.last_done));
	memset(S.conf, 0, sizeof(S.conf));
	memset(S.tg, 0, sizeof(S.tg));
	S.m = NULL;
	S.pmem = NULL;
	S.logf = S.statef = NULL;
	S.violated = false;
	S.why[0] = '\0';
	S.kinds = 0;
	S.broken = false;
	S.nwhy = 0;
	S.restarted_writer = false;
	S.restart_resync_bytes = UINT64_MAX;
	S.wproc = SIM_PROC_WRITER;
	S.gen = 1;
	memcpy(S.log_path, S.log_path0, sizeof(S.log_path));
	S.old_m = NULL;
	S.old_pmem = NULL;
	S.old_base = NULL;
	S.old_statef = NULL;
	S.takeover_seen = false;
	sim_set_current_proc(SIM_PROC_WRITER);
	sim_set_conn_tag(1);
	S.last_persist_event = 0;
	pmrep_log_set_threshold(S.verbose ? PMREP_LOG_INFO : PMREP_LOG_DISABLED);

	sim_faults_enable(false);
	setup_world();
	if (rs) {
		rs->setup_deliveries = sim_deliveries();
		for (unsigned p = 0; p < SIM_MAX_PROCS; p++)
			rs->setup_events[p] = sim_persist_events(p);
	}
	sim_faults_enable(true);
	if (!S.broken)
		scenario_body();
	if (rs) {
		for (unsigned p = 0; p < SIM_MAX_PROCS; p++)
			rs->body_events[p] = sim_persist_events(p);
		rs->last_persist_event = S.last_persist_event;
	}
	heal_and_close();

	if (rs) {
		size_t n;
		const struct sim_delivery *log = sim_delivery_log(&n);
		rs->deliveries = n;
		rs->is_send = malloc(n ? n : 1);
		for (size_t i = 0; rs->is_send && i < n; i++)
			rs->is_send[i] = log[i].kind == 5;
		for (unsigned p = 0; p < SIM_MAX_PROCS; p++)
			rs->events[p] = sim_persist_events(p);
		for (unsigned t = 0; t < MAX_TARGETS; t++) {
			rs->first_accept[t] = UINT64_MAX;
			for (size_t i = rs->setup_deliveries; i < n; i++) {
				if (log[i].from_proc == 1 + t && log[i].kind == 5 &&
						log[i].msg_type == REPL_MSG_ACCEPT) {
					rs->first_accept[t] = i;
					break;
				}
			}
		}
	}
	S.digest = run_digest();
	/* teardown: nothing of this schedule survives into the next */
	if (S.m)
		(void) pmrep_mirror_delete(&S.m);
	if (S.old_m)
		(void) pmrep_mirror_delete(&S.old_m);
	(void) pmrep_pmem_close(&S.old_pmem);
	for (unsigned i = 0; i < S.ntargets; i++) {
		sim_proc_set(S.tg[i].proc, NULL);
		(void) pmrep_target_delete(&S.tg[i].t);
		free(S.tg[i].data_snap);
		S.tg[i].data_snap = NULL;
	}
	(void) pmrep_pmem_close(&S.pmem);
	sim_world_reset(&wc, 0, NULL, 0);
	rm_rf_dir();
}

/* ---------------------------------------------------------- schedules */

#define T_BASE 1ull
#define T_PACKET 2ull
#define T_CRASH 3ull
#define T_COMBO 4ull

static uint64_t
sched_id(uint64_t type, unsigned sc, unsigned m, uint64_t mid, uint32_t seed32)
{
	return type << 60 | (uint64_t)sc << 56 | (uint64_t)m << 54 |
		(mid & 0x3fffff) << 32 | seed32;
}

static uint32_t
pair_seed(uint64_t seed, unsigned sc, unsigned m)
{
	return (uint32_t)mix(seed, (uint64_t)sc << 4 | m);
}

/* decode a schedule id into S (a combination needs its pair's base run) */
static void
decode(uint64_t id, const struct run_stats *base)
{
	S.id = id;
	uint64_t type = id >> 60;
	S.sc = (enum scenario)((id >> 56) & 0xf);
	S.method = (enum method)((id >> 54) & 3);
	S.seed32 = (uint32_t)id;
	uint64_t mid = (id >> 32) & 0x3fffff;
	S.nfaults = 0;
	memset(S.faults, 0, sizeof(S.faults));
	if (type == T_PACKET) {
		S.faults[0].kind = (enum sim_fault)((mid >> 16) & 0xf);
		S.faults[0].at = mid & 0xffff;
		S.nfaults = 1;
	} else if (type == T_CRASH) {
		S.faults[0].kind = SIM_F_CRASH;
		S.faults[0].proc = (unsigned)((mid >> 20) & 3);
		S.faults[0].at = (mid >> 4) & 0xffff;
		S.faults[0].subset_seed = mix(id, 0xc4a5);
		S.nfaults = 1;
	} else if (type == T_COMBO && base) {
		struct sim_rng r = { mix(id, 0xc0b0) };
		unsigned n = 2 + (unsigned)sim_rng_below(&r, 2);
		uint64_t span = base->deliveries > base->setup_deliveries ?
			base->deliveries - base->setup_deliveries : 1;
		for (unsigned i = 0; i < n; i++) {
			struct sim_fault_spec *f = &S.faults[S.nfaults++];
			if (sim_rng_below(&r, 5) == 0) {
				unsigned p = (unsigned)sim_rng_below(&r,
						(uint64_t)S.ntargets + 1);
				uint64_t ev = base->body_events[p] > base->setup_events[p] ?
					base->body_events[p] - base->setup_events[p] : 1;
				f->kind = SIM_F_CRASH;
				f->proc = p;
				f->at = base->setup_events[p] + 1 + sim_rng_below(&r, ev);
				f->subset_seed = sim_rng_next(&r);
			} else {
				f->kind = (enum sim_fault)(1 + sim_rng_below(&r,
						SIM_F_NPACKET - 1));
				f->at = base->setup_deliveries + sim_rng_below(&r, span);
			}
		}
	}
}

static void
describe(char *out, size_t n)
{
	int k = snprintf(out, n, "scenario %s, method %s, faults:",
			sc_names[S.sc], m_names[S.method]);
	if (S.nfaults == 0)
		k += snprintf(out + k, n - (size_t)k, " none");
	for (unsigned i = 0; i < S.nfaults && (size_t)k < n; i++) {
		const struct sim_fault_spec *f = &S.faults[i];
		if (f->kind == SIM_F_CRASH)
			k += snprintf(out + k, n - (size_t)k,
					" crash of process %u at its persist event %" PRIu64,
					f->proc, f->at);
		else
			k += snprintf(out + k, n - (size_t)k, " %s at delivery %" PRIu64,
					sim_fault_str(f->kind), f->at);
	}
}

static unsigned g_violations;
static uint64_t g_first_bad;
/* schedules that violated each invariant (kind_names[]) */
static unsigned g_by_kind[NKINDS];
static uint64_t g_first_of_kind[NKINDS];

/* run one schedule (its base run first when it is a combination) */
static bool
run_id(uint64_t id, struct run_stats *rs_out)
{
	struct run_stats base;
	if ((id >> 60) == T_COMBO) {
		bool v = S.verbose;
		S.verbose = false;
		decode(sched_id(T_BASE, (unsigned)((id >> 56) & 0xf),
				(unsigned)((id >> 54) & 3), 0, (uint32_t)id), NULL);
		S.ntargets = (S.sc == SC_QUORUM || S.sc == SC_LOST_ACCEPT) ? 2 : 1;
		run_schedule(&base);
		free(base.is_send);
		base.is_send = NULL;
		S.verbose = v;
		S.ntargets = (S.sc == SC_QUORUM || S.sc == SC_LOST_ACCEPT) ? 2 : 1;
		decode(id, &base);
	} else {
		decode(id, NULL);
	}
	run_schedule(rs_out);
	if (S.violated) {
		char d[400];
		describe(d, sizeof(d));
		printf("VIOLATION schedule 0x%016" PRIx64 " (%s): %s\n", id, d, S.why);
		for (unsigned i = 1; i < S.nwhy; i++)
			printf("  and: %s\n", S.whys[i]);
		printf("  replay: pmrep_sim --replay 0x%016" PRIx64 "\n", id);
		fflush(stdout);
		if (g_violations++ == 0)
			g_first_bad = id;
		for (unsigned k = 0; k < NKINDS; k++)
			if (S.kinds & (1u << k) && g_by_kind[k]++ == 0)
				g_first_of_kind[k] = id;
	}
	return !S.violated;
}

static void
shuffle(uint64_t *a, size_t n, uint64_t seed)
{
	struct sim_rng r = { seed };
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)sim_rng_below(&r, i);
		uint64_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* every schedule of the enumeration, up to `budget` */
static unsigned
run_harness(uint64_t seed, unsigned budget)
{
	size_t cap = 1 << 16, n = 0;
	uint64_t *list = malloc(cap * sizeof(*list));
	struct run_stats bases[SC_NSCENARIOS][M_N];
	unsigned ran = 0;
	if (list == NULL)
		return 0;
	/* the fault-free runs */
	for (unsigned sc = 0; sc < SC_NSCENARIOS; sc++) {
		for (unsigned m = 0; m < M_N; m++) {
			uint32_t s32 = pair_seed(seed, sc, m);
			run_id(sched_id(T_BASE, sc, m, 0, s32), &bases[sc][m]);
			ran++;
			const struct run_stats *b = &bases[sc][m];
			for (uint64_t i = b->setup_deliveries; i < b->deliveries &&
					i < 0xffff; i++) {
				for (unsigned k = SIM_F_DROP; k < SIM_F_NPACKET; k++) {
					if (n == cap)
						break;
					/* only a message can be duplicated */
					if (k == SIM_F_DUP && !(b->is_send && b->is_send[i]))
						continue;
					list[n++] = sched_id(T_PACKET, sc, m,
							(uint64_t)k << 16 | i, s32);
				}
			}
			for (unsigned p = 0; p < SIM_MAX_PROCS; p++) {
				/* crash points of the heal never fire (no faults) */
				for (uint64_t e = b->setup_events[p] + 1;
						e <= b->body_events[p] && e < 0xffff; e++) {
					for (unsigned v = 0; v < 2 && n < cap; v++)
						list[n++] = sched_id(T_CRASH, sc, m,
								(uint64_t)p << 20 | e << 4 | v,
								s32);
				}
			}
		}
	}
	for (unsigned sc = 0; sc < SC_NSCENARIOS; sc++)
		for (unsigned m = 0; m < M_N; m++)
			free(bases[sc][m].is_send);
	shuffle(list, n, seed);
	printf("enumerated: %u fault-free runs, %zu single-fault schedules\n",
			ran, n);
	size_t want = budget > ran ? budget - ran : 0;
	size_t single = want < n ? want : n;
	for (size_t i = 0; i < single; i++, ran++)
		run_id(list[i], NULL);
	/* the rest: seeded combinations of 2-3 faults */
	struct sim_rng r = { mix(seed, 0xc0) };
	while (ran < budget) {
		unsigned sc = (unsigned)sim_rng_below(&r, SC_NSCENARIOS);
		unsigned m = (unsigned)sim_rng_below(&r, M_N);
		run_id(sched_id(T_COMBO, sc, m, sim_rng_below(&r, 1u << 22),
				pair_seed(seed, sc, m)), NULL);
		ran += 2;	/* its base run too */
	}
	free(list);
	return ran;
}

/* ------------------------------------------------------ named tests */

static int
named_lost_accept(uint64_t seed)
{
	unsigned bad = 0;
	for (unsigned m = 0; m < M_N; m++) {
		uint32_t s32 = pair_seed(seed, SC_LOST_ACCEPT, m);
		struct run_stats b;
		run_id(sched_id(T_BASE, SC_LOST_ACCEPT, m, 0, s32), &b);
		free(b.is_send);
		if (b.first_accept[0] == UINT64_MAX) {
			printf("lost_accept (%s): no ACCEPT from replica 0 in the fault-free run\n",
					m_names[m]);
			return 1;
		}
		const enum sim_fault kinds[] = { SIM_F_CUT_AT, SIM_F_DROP };
		for (unsigned k = 0; k < 2; k++) {
			uint64_t id = sched_id(T_PACKET, SC_LOST_ACCEPT, m,
					(uint64_t)kinds[k] << 16 | b.first_accept[0], s32);
			if (!run_id(id, NULL))
				bad++;
			else
				printf("lost_accept (%s, ACCEPT %s at delivery %" PRIu64 "): identical after reconnect and close\n",
						m_names[m], sim_fault_str(kinds[k]),
						b.first_accept[0]);
		}
	}
	return bad ? 1 : 0;
}

/* target crashes at each of its persist events; torn images of the header */
static int
named_torn_header(uint64_t seed)
{
	unsigned runs = 0, bad = 0;
	for (unsigned m = 0; m < M_N; m++) {
		uint32_t s32 = pair_seed(seed, SC_FRESH, m);
		struct run_stats b;
		run_id(sched_id(T_BASE, SC_FRESH, m, 0, s32), &b);
		free(b.is_send);
		for (uint64_t e = b.setup_events[1] + 1; e <= b.body_events[1]; e++) {
			for (unsigned v = 0; v < 8; v++) {
				runs++;
				if (!run_id(sched_id(T_CRASH, SC_FRESH, m,
						1ull << 20 | e << 4 | v, s32), NULL))
					bad++;
			}
		}
	}
	printf("torn_header: %u crash images of the target, %u violations\n", runs, bad);
	return bad || runs == 0 ? 1 : 0;
}

static int
named_writer_restart(uint64_t seed)
{
	if (pmrep_mirror_cfg_set_state_path == NULL) {
		printf("writer_restart: this build has no pmrep_mirror_cfg_set_state_path: a restarted writer knows nothing of its replicas and resyncs them in full\n");
	}
	unsigned bad = 0;
	for (unsigned m = 0; m < M_N; m++) {
		uint32_t s32 = pair_seed(seed, SC_WRITER, m);
		struct run_stats b;
		run_id(sched_id(T_BASE, SC_WRITER, m, 0, s32), &b);
		free(b.is_send);
		/* crash right after its last persist returned (before the
		 * clean close) */
		uint64_t e = b.last_persist_event;
		uint64_t id = sched_id(T_CRASH, SC_WRITER, m,
				(uint64_t)SIM_PROC_WRITER << 20 | e << 4, s32);
		bool ok = run_id(id, NULL);
		if (getenv("PMREP_SIM_DEBUG"))
			printf("writer_restart (%s): schedule 0x%016" PRIx64 "\n",
					m_names[m], id);
		if (!S.restarted_writer) {
			printf("writer_restart (%s): the crash point did not crash the writer\n",
					m_names[m]);
			bad++;
			continue;
		}
		if (!ok) {
			bad++;
			continue;
		}
		if (S.restart_resync_bytes >= DATA_SIZE) {
			printf("writer_restart (%s): after the writer's restart the resync copied %" PRIu64 " of %u bytes: the restart forgot what the replica holds\n",
					m_names[m], S.restart_resync_bytes, DATA_SIZE);
			bad++;
		} else {
			printf("writer_restart (%s): after the restart the resync copied %" PRIu64 " of %u bytes\n",
					m_names[m], S.restart_resync_bytes, DATA_SIZE);
		}
	}
	return bad ? 1 : 0;
}

/*
 * writer restart at scale: 1 MiB in 4 KiB regions (256 > MSTATE_AL_LIMIT =
 * 64), sequential 4 KiB persists, the writer crashed at every persist
 * event of some persists mid-stream (around the activity log's lazy
 * clears). The restart's resync copies at most (MSTATE_AL_LIMIT + 2)
 * regions (AL's limit, the region being marked, the one in flight) and
 * the heal ends with the replica equal to the log; with the state file
 * removed before the restart it copies everything.
 */
static int
named_writer_scale(uint64_t seed)
{
	if (pmrep_mirror_cfg_set_state_path == NULL) {
		printf("writer_scale: this build has no state file\n");
		return 1;
	}
	const uint64_t limit = (uint64_t)(MSTATE_AL_LIMIT + 2) * REGION_SIZE;
	const uint32_t at[] = { 100, 129, 130 };
	unsigned bad = 0, runs = 0;
	for (unsigned m = 0; m < M_N; m++) {
		uint32_t s32 = pair_seed(seed, SC_SCALE, m);
		struct run_stats b;
		S.rm_state_on_restart = false;
		if (!run_id(sched_id(T_BASE, SC_SCALE, m, 0, s32), &b))
			bad++;
		free(b.is_send);
		uint64_t ev[MAX_DATA_SIZE / REGION_SIZE];
		memcpy(ev, S.ev_before, sizeof(ev));
		uint64_t worst = 0, worst_e = 0;
		for (unsigned a = 0; a < sizeof(at) / sizeof(at[0]); a++) {
			for (uint64_t e = ev[at[a]] + 1; e <= ev[at[a] + 1] && e < 0xffff; e++) {
				for (unsigned rm = 0; rm < 2; rm++) {
					/* the lost state file: once per persist */
					if (rm && e != ev[at[a]] + 1)
						continue;
					S.rm_state_on_restart = rm;
					uint64_t id = sched_id(T_CRASH, SC_SCALE, m,
							(uint64_t)SIM_PROC_WRITER << 20 | e << 4, s32);
					bool ok = run_id(id, NULL);
					runs++;
					uint64_t got = S.restart_resync_bytes;
					if (!S.restarted_writer) {
						printf("writer_scale (%s): schedule 0x%016" PRIx64 " did not crash the writer\n",
								m_names[m], id);
						bad++;
					} else if (!ok) {
						bad++;
					} else if (!rm && got > limit) {
						printf("scale: writer_scale (%s): schedule 0x%016" PRIx64 ": the restart copied %" PRIu64 " bytes (%" PRIu64 " regions), more than (MSTATE_AL_LIMIT + 2) = %d regions\n",
								m_names[m], id, got, got / REGION_SIZE,
								MSTATE_AL_LIMIT + 2);
						bad++;
					} else if (rm && got > limit) {
						/* no record: the replicas (an older
						 * generation now) are compared by
						 * digests, everything; what differs is
						 * copied -- the in-flight regions */
						printf("scale: writer_scale (%s): schedule 0x%016" PRIx64 ": without its state file the restart copied %" PRIu64 " of %u bytes, more than the regions in flight can differ\n",
								m_names[m], id, got, DATA_SIZE);
						bad++;
					} else if (rm) {
						printf("writer_scale (%s): crash in persist %u, state file removed: the restart compared every region by digests and copied %" PRIu64 " bytes\n",
								m_names[m], at[a], got);
					} else if (got >= worst) {
						worst = got;
						worst_e = e;
					}
				}
			}
		}
		S.rm_state_on_restart = false;
		printf("writer_scale (%s): crashes in persists 100, 129, 130 (events %" PRIu64 "..%" PRIu64 "): the restart copied at most %" PRIu64 " bytes = %" PRIu64 " regions (limit %d; worst at event %" PRIu64 "); every replica equal to the log after the heal\n",
				m_names[m], ev[100] + 1, ev[131], worst, worst / REGION_SIZE,
				MSTATE_AL_LIMIT + 2, worst_e);
	}
	printf("writer_scale: %u crash schedules, %u failed\n", runs, bad);
	return bad || runs == 0 ? 1 : 0;
}

/* every schedule twice: the same deliveries, outcomes and bytes */
static int
check_determinism(uint64_t seed, unsigned budget)
{
	struct sim_rng r = { mix(seed, 0xde7) };
	unsigned bad = 0, n = 0;
	for (; n < budget; n++) {
		unsigned sc = (unsigned)sim_rng_below(&r, SC_NSCENARIOS);
		unsigned m = (unsigned)sim_rng_below(&r, M_N);
		uint32_t s32 = pair_seed(seed, sc, m);
		uint64_t id;
		switch (sim_rng_below(&r, 3)) {
		case 0:
			id = sched_id(T_PACKET, sc, m, (1 + sim_rng_below(&r, SIM_F_NPACKET - 1)) << 16 |
					sim_rng_below(&r, 60), s32);
			break;
		case 1:
			id = sched_id(T_CRASH, sc, m, sim_rng_below(&r, 3) << 20 |
					(1 + sim_rng_below(&r, 12)) << 4 |
					sim_rng_below(&r, 16), s32);
			break;
		default:
			id = sched_id(T_COMBO, sc, m, sim_rng_below(&r, 1u << 22), s32);
			break;
		}
		(void) run_id(id, NULL);
		uint64_t d1 = S.digest;
		(void) run_id(id, NULL);
		if (S.digest != d1) {
			printf("NOT DETERMINISTIC: schedule 0x%016" PRIx64 ": digest %016" PRIx64 " then %016" PRIx64 "\n",
					id, d1, S.digest);
			bad++;
		}
	}
	printf("determinism: %u schedules run twice, %u differed\n", n, bad);
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------- main */

static void
usage(void)
{
	fprintf(stderr,
		"usage: pmrep_sim [--schedules N] [--seed S] [--replay ID] [--expect-violation]\n"
		"                 [--named lost_accept|torn_header|writer_restart|writer_scale]\n"
		"  --schedules N       schedules to run (default 6000, ASan 1000; env PMREP_SIM_SCHEDULES;\n"
		"                      50 under PMREP_TEST_UNDER_VALGRIND)\n"
		"  --seed S            the base seed (default 1)\n"
		"  --replay ID         rerun one schedule (its hex id) verbosely\n"
		"  --broken-order      set pmrep_test_hooks.repl_commit_before_confirm\n"
		"  --expect-violation  exit 0 only if some schedule violated an invariant\n"
		"  --expect-kind K     exit 0 only if some schedule violated invariant K (repeatable:\n"
		"                      identical, durable, \"no trace\", atomic, fenced)\n"
		"  --check-determinism run --schedules N schedules twice each, compare digests\n"
		"  --named TEST        one of the issue's demonstrated faults\n");
}

int
main(int argc, char **argv)
{
	/* release: every single-fault schedule of the enumeration and
	 * combinations after them (about 15 s); sanitizers are slower */
#if defined(__SANITIZE_ADDRESS__)
	unsigned budget = 1000;
#else
	unsigned budget = 6000;
#endif
	uint64_t seed = 1, replay = 0;
	bool expect = false, have_replay = false, determinism = false;
	const char *named = NULL;
	const char *expect_kind[NKINDS];
	unsigned nexpect = 0;
	const char *env = getenv("PMREP_SIM_SCHEDULES");
	if (argc > 1 && strcmp(argv[1], "--failover") == 0)
		return sim_failover_main(argc - 1, argv + 1);	/* sim_failover.c */
	if (getenv("PMREP_TEST_UNDER_VALGRIND"))
		budget = 50;
	if (env && *env)
		budget = (unsigned)strtoul(env, NULL, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
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
		} else if (strcmp(a, "--named") == 0 && v) {
			named = v;
			i++;
		} else if (strcmp(a, "--check-determinism") == 0) {
			determinism = true;
		} else if (strcmp(a, "--expect-violation") == 0) {
			expect = true;
		} else if (strcmp(a, "--expect-kind") == 0 && v && nexpect < NKINDS) {
			expect_kind[nexpect++] = v;
			expect = true;
			i++;
		} else if (strcmp(a, "--broken-order") == 0) {
			pmrep_test_hooks.repl_commit_before_confirm = true;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage();
			return 0;
		} else {
			usage();
			return 2;
		}
	}
	snprintf(S.dir, sizeof(S.dir), "/dev/shm/pmrep-sim-%d", (int)getpid());
	if (mkdir(S.dir, 0700) != 0 && errno != EEXIST) {
		perror(S.dir);
		return 2;
	}
	snprintf(S.log_path, sizeof(S.log_path), "%s/log", S.dir);
	memcpy(S.log_path0, S.log_path, sizeof(S.log_path0));
	snprintf(S.state_path, sizeof(S.state_path), "%s/state", S.dir);
	sim_world_install_hooks();
	sim_set_landing_hook(on_landing);

	printf("pmrep_sim: protocol version %d, base seed %" PRIu64 "%s%s\n",
			REPL_PROTO_VERSION, seed,
			pmrep_test_hooks.repl_commit_before_confirm ?
			", broken order (commit before confirm)" : "",
			pmrep_mirror_cfg_set_state_path ? ", state file" :
			", no state file");
	int rc = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned ran = 0;
	if (have_replay) {
		S.verbose = true;
		bool ok = run_id(replay, NULL);
		char d[400];
		describe(d, sizeof(d));
		printf("schedule 0x%016" PRIx64 " (%s): %s\n", replay, d,
				ok ? "no violation" : S.why);
		ran = 1;
	} else if (determinism) {
		rc = check_determinism(seed, budget);
		named = "determinism";
	} else if (named) {
		if (strcmp(named, "lost_accept") == 0)
			rc = named_lost_accept(seed);
		else if (strcmp(named, "torn_header") == 0)
			rc = named_torn_header(seed);
		else if (strcmp(named, "writer_restart") == 0)
			rc = named_writer_restart(seed);
		else if (strcmp(named, "writer_scale") == 0)
			rc = named_writer_scale(seed);
		else {
			usage();
			rc = 2;
		}
	} else {
		ran = run_harness(seed, budget);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) +
		(double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (!named) {
		printf("schedules run: %u, violations: %u, %.1f schedules/s, base seed %" PRIu64 "; landing writes checked against the record: %u\n",
				ran, g_violations, secs > 0 ? ran / secs : 0.0, seed,
				g_landings_checked);
		printf("fenced: %u landing writes checked against the header's generation; %u persists of the first writer begun after the takeover (each must fail)\n",
				g_fenced_landings, g_old_after_takeover);
	}
	if (g_violations && !named) {
		printf("first violating schedule: 0x%016" PRIx64 "\n", g_first_bad);
	}
	if (!named || g_violations) {
		/* every invariant, also the ones never violated */
		printf("schedules violating each invariant:\n");
		for (unsigned k = 0; k < NKINDS; k++) {
			printf("  %-10s %u", kind_names[k], g_by_kind[k]);
			if (g_by_kind[k])
				printf(" (first: --replay 0x%016" PRIx64 ")",
						g_first_of_kind[k]);
			printf("\n");
		}
	}
	/* --expect-violation / --expect-kind: a checker that cannot fail
	 * proves nothing; the run passes only when it did fail */
	int expect_rc = g_violations ? 0 : 1;
	for (unsigned i = 0; i < nexpect; i++) {
		int k = kind_of(expect_kind[i]);
		if (strcmp(kind_names[k], expect_kind[i]) != 0) {
			printf("--expect-kind %s: no such invariant\n", expect_kind[i]);
			expect_rc = 2;
		} else if (g_by_kind[k] == 0) {
			printf("expected a violation of \"%s\": none found\n",
					kind_names[k]);
			if (expect_rc == 0)
				expect_rc = 1;
		} else {
			printf("expected a violation of \"%s\": %u schedules\n",
					kind_names[k], g_by_kind[k]);
		}
	}
	rm_rf_dir();	/* the last schedule's files */
	rmdir(S.dir);
	sim_world_fini();
	if (expect)
		return rc == 2 ? 2 : expect_rc;
	if (named)
		return rc;
	return g_violations ? 1 : 0;
}
