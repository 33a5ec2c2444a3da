/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sim_world.c -- the world of the harness: the virtual clock, the one
 * scheduler (each step: every process's turn, then one packet delivery
 * chosen by the seeded PRNG), the waits that run the world instead of
 * blocking, the fault plan of a schedule, and the durable shadows of the
 * processes' files with their crash points.
 *
 * Persist events (crash points) of a process, counted in the order they
 * happen:
 * - every pmrep_pmem_persist of one of its mappings (the test hook);
 * - a remote PERSISTENT flush delivered into one of its MRs;
 * - the end of a target turn in which its replica file changed (its
 *   stores that did not go through the hook: any of them may have reached
 *   the media, as a cache line may be written back at any time);
 * - for the writer, each completed local persist the harness knows of
 *   (pmrep_mirror_persist returned: its range was persisted locally).
 * A crash at event k: the process's image is its shadow (what the events
 * before k made durable) plus a random subset of the 8-byte units in
 * which the file differs from the shadow; its connections are cut and its
 * packets dropped; later events of it change nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmrep/pmem.h>

#include "common/testhook.h"
#include "sim.h"

#define MAX_FILES 16
#define STUCK_MS (600 * 1000)
#define MAX_STEPS_PER_WAIT 200000

static struct {
	struct sim_world_cfg cfg;
	struct sim_rng rng;
	long long now;
	struct sim_fault_spec faults[SIM_MAX_FAULTS];
	unsigned nfaults;
	bool faults_on;
	unsigned cur_proc;
	bool in_turn;
	struct sim_proc_ops procs[SIM_MAX_PROCS];
	bool crashed[SIM_MAX_PROCS];
	bool down[SIM_MAX_PROCS];	/* crashed, not restarted yet */
	uint64_t events[SIM_MAX_PROCS];
	struct sim_delivery *log;
	size_t nlog, caplog;
	bool stuck;
	struct sim_file files[MAX_FILES];
} W;

bool sim_cfg_native_flush(void) { return W.cfg.native_flush; }
int sim_cfg_delay_ms(void) { return W.cfg.delay_ms; }

const char *
sim_fault_str(enum sim_fault f)
{
	switch (f) {
	case SIM_F_NONE: return "none";
	case SIM_F_DROP: return "drop";
	case SIM_F_CUT_AT: return "cut-at";
	case SIM_F_CUT_AFTER: return "cut-after";
	case SIM_F_DUP: return "duplicate";
	case SIM_F_DELAY: return "delay";
	case SIM_F_CRASH: return "crash";
	}
	return "?";
}

void
sim_log(const char *fmt, ...)
{
	if (!W.cfg.verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "[sim %lld] ", W.now);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

long long sim_now(void) { return W.now; }
void sim_advance(long long ms) { W.now += ms; }
void sim_faults_enable(bool on) { W.faults_on = on; }
unsigned sim_current_proc(void) { return W.cur_proc; }
bool sim_stuck(void) { return W.stuck; }

unsigned
sim_set_current_proc(unsigned proc)
{
	unsigned prev = W.cur_proc;
	W.cur_proc = proc;
	return prev;
}

void
sim_proc_set(unsigned proc, const struct sim_proc_ops *ops)
{
	if (ops)
		W.procs[proc] = *ops;
	else
		memset(&W.procs[proc], 0, sizeof(W.procs[proc]));
}

uint64_t sim_deliveries(void) { return W.nlog; }
uint64_t sim_persist_events(unsigned proc) { return W.events[proc]; }
bool sim_proc_crashed(unsigned proc) { return proc < SIM_MAX_PROCS && W.crashed[proc]; }
void sim_proc_clear_crash(unsigned proc) { W.crashed[proc] = false; }

const struct sim_delivery *
sim_delivery_log(size_t *n)
{
	*n = W.nlog;
	return W.log;
}

void
sim_record_delivery(const struct sim_delivery *d)
{
	if (W.nlog == W.caplog) {
		size_t nc = W.caplog ? W.caplog * 2 : 256;
		struct sim_delivery *l = realloc(W.log, nc * sizeof(*l));
		if (l == NULL)
			abort();
		W.log = l;
		W.caplog = nc;
	}
	W.log[W.nlog++] = *d;
}

static long long
hook_now(void)
{
	return W.now;
}

/* the admission proof's wall clock: the virtual clock from a fixed epoch
 * (2026-01-01), so a run replays bit for bit */
static long long
hook_wall(void)
{
	return 1767225600000LL + W.now;
}

static bool
fd_ready(void *arg)
{
	struct pollfd p = { .fd = *(int *)arg, .events = POLLIN };
	return poll(&p, 1, 0) > 0;
}

static int
hook_fd_wait(int fd, int timeout_ms)
{
	return sim_wait(fd_ready, &fd, timeout_ms);
}

void
sim_world_install_hooks(void)
{
	pmrep_test_hooks.now_ms = hook_now;
	pmrep_test_hooks.wall_ms = hook_wall;
	pmrep_test_hooks.fd_wait = hook_fd_wait;
	pmrep_test_hooks.peer_open = sim_peer_open;
	pmrep_test_hooks.pmem_persist = sim_pmem_persist_hook;
}

void
sim_world_reset(const struct sim_world_cfg *cfg, uint64_t seed,
		const struct sim_fault_spec *faults, unsigned nfaults)
{
	sim_prov_reset();
	free(W.log);
	for (int i = 0; i < MAX_FILES; i++)
		if (W.files[i].used)
			sim_file_drop(&W.files[i]);
	memset(&W, 0, sizeof(W));
	W.cfg = *cfg;
	W.rng.s = seed;
	W.now = 1000000;	/* virtual ms; far from 0 */
	if (nfaults > SIM_MAX_FAULTS)
		nfaults = SIM_MAX_FAULTS;
	if (nfaults)
		memcpy(W.faults, faults, nfaults * sizeof(*faults));
	W.nfaults = nfaults;
	W.faults_on = true;
}

void
sim_world_fini(void)
{
	sim_world_reset(&W.cfg, 0, NULL, 0);
	free(W.log);
	W.log = NULL;
	W.nlog = W.caplog = 0;
}

static enum sim_fault
fault_for(uint64_t idx, void *arg)
{
	(void) arg;
	for (unsigned i = 0; i < W.nfaults; i++)
		if (W.faults[i].kind < SIM_F_NPACKET && W.faults[i].kind != SIM_F_NONE &&
				W.faults[i].at == idx)
			return W.faults[i].kind;
	return SIM_F_NONE;
}

bool
sim_step(void)
{
	uint64_t a0 = sim_activity();
	if (!W.in_turn) {
		for (unsigned p = 0; p < SIM_MAX_PROCS; p++) {
			if (W.procs[p].turn == NULL)
				continue;
			unsigned prev = sim_set_current_proc(p);
			W.in_turn = true;
			W.procs[p].turn(p, W.procs[p].arg);
			W.in_turn = false;
			sim_set_current_proc(prev);
		}
	}
	(void) sim_prov_deliver_one(&W.rng, W.faults_on, fault_for, NULL);
	return sim_activity() != a0;
}

/* sim_failover.c: a call made at the start of a wait outside a turn
 * (another process's blocking call runs there, nested) */
static void (*wait_hook)(void);
static bool in_wait_hook;
void sim_set_wait_hook(void (*fn)(void)) { wait_hook = fn; }

int
sim_wait(bool (*ready)(void *arg), void *arg, int timeout_ms)
{
	if (wait_hook && !W.in_turn && !in_wait_hook && timeout_ms != 0) {
		in_wait_hook = true;
		wait_hook();
		in_wait_hook = false;
	}
	if (ready(arg))
		return 0;
	if (timeout_ms == 0 || W.in_turn)
		return PMREP_E_TIMEOUT;
	long long deadline = timeout_ms < 0 ? -1 : W.now + timeout_ms;
	long long idle_from = W.now;
	for (unsigned steps = 0;; steps++) {
		if (steps > MAX_STEPS_PER_WAIT) {
			sim_log("a wait made no headway in %u steps: stuck", steps);
			W.stuck = true;
			return PMREP_E_TIMEOUT;
		}
		bool progressed = sim_step();
		if (ready(arg))
			return 0;
		if (progressed)
			continue;
		long long next = sim_prov_next_release();
		long long t;
		if (deadline >= 0) {
			if (W.now >= deadline)
				return PMREP_E_TIMEOUT;
			t = deadline;
			if (next >= 0 && next < t)
				t = next;
		} else if (next >= 0) {
			t = next;
		} else {
			if (W.now - idle_from > STUCK_MS) {
				sim_log("a wait without a time limit can never end: stuck");
				W.stuck = true;
				return PMREP_E_TIMEOUT;
			}
			t = W.now + 100;
		}
		/* time passes in slices so that targets see their deadlines */
		if (t - W.now > 100)
			t = W.now + 100;
		W.now = t;
	}
}

void
sim_run_idle(long long ms)
{
	long long end = W.now + ms;
	for (unsigned steps = 0; steps < MAX_STEPS_PER_WAIT; steps++) {
		if (sim_step())
			continue;
		if (W.now >= end)
			return;
		long long next = sim_prov_next_release();
		long long t = end;
		if (next >= 0 && next < t)
			t = next;
		if (t - W.now > 100)
			t = W.now + 100;
		W.now = t;
	}
	W.stuck = true;
}

void
sim_proc_cut(unsigned proc)
{
	sim_prov_cut_proc(proc);
}

/* ------------------------------------------------------------ files */

static void
file_map(struct sim_file *f)
{
	struct stat st;
	if (stat(f->path, &st) != 0 || st.st_size <= 0)
		return;
	size_t size = (size_t)st.st_size;
	if (f->live && size == f->size)
		return;
	if (f->live)
		munmap(f->live, f->size);
	f->live = NULL;
	int fd = open(f->path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	uint8_t *sh = realloc(f->shadow, size);
	if (sh == NULL)
		abort();
	if (size > f->size)
		memset(sh + f->size, 0, size - f->size);	/* never persisted */
	f->shadow = sh;
	f->size = size;
	f->live = p;
}

struct sim_file *
sim_file_add(unsigned proc, const char *path, bool data_events)
{
	struct sim_file *f = NULL;
	for (int i = 0; i < MAX_FILES; i++) {
		if (!W.files[i].used) {
			f = &W.files[i];
			break;
		}
	}
	if (f == NULL)
		abort();
	memset(f, 0, sizeof(*f));
	f->used = true;
	f->proc = proc;
	f->data_events = data_events;
	snprintf(f->path, sizeof(f->path), "%s", path);
	(void) sim_file_reload(f);
	return f;
}

void
sim_file_drop(struct sim_file *f)
{
	if (f->live)
		munmap(f->live, f->size);
	free(f->shadow);
	memset(f, 0, sizeof(*f));
}

int
sim_file_reload(struct sim_file *f)
{
	if (f->live)
		munmap(f->live, f->size);
	f->live = NULL;
	f->size = 0;
	f->pmem = NULL;
	f->pmem_base = NULL;
	file_map(f);
	if (f->live)
		memcpy(f->shadow, f->live, f->size);
	return f->live ? 0 : -1;
}

void
sim_file_persisted(struct sim_file *f, size_t off, size_t len)
{
	file_map(f);
	if (f->live == NULL || off >= f->size)
		return;
	if (len > f->size - off)
		len = f->size - off;
	memcpy(f->shadow + off, f->live + off, len);
}

static struct sim_fault_spec *
crash_due(unsigned proc)
{
	if (!W.faults_on)
		return NULL;
	for (unsigned i = 0; i < W.nfaults; i++)
		if (W.faults[i].kind == SIM_F_CRASH && W.faults[i].proc == proc &&
				W.faults[i].at == W.events[proc])
			return &W.faults[i];
	return NULL;
}

/* the crash image of every file of `proc`, kept in the shadow itself:
 * the units that differ survive by the PRNG of the crash */
static void
crash(unsigned proc, const struct sim_fault_spec *spec)
{
	struct sim_rng r = { spec->subset_seed };
	sim_log("CRASH of process %u at its persist event %llu", proc,
			(unsigned long long)W.events[proc]);
	for (int i = 0; i < MAX_FILES; i++) {
		struct sim_file *f = &W.files[i];
		if (!f->used || f->proc != proc)
			continue;
		file_map(f);
		if (f->live == NULL)
			continue;
		unsigned kept = 0, differ = 0;
		for (size_t u = 0; u + 8 <= f->size; u += 8) {
			if (memcmp(f->live + u, f->shadow + u, 8) == 0)
				continue;
			differ++;
			if (sim_rng_next(&r) & 1) {
				memcpy(f->shadow + u, f->live + u, 8);
				kept++;
			}
		}
		sim_log("  %s: %u units differed, %u kept", f->path, differ, kept);
	}
	W.crashed[proc] = true;
	W.down[proc] = true;
	sim_prov_cut_proc(proc);
}

void
sim_proc_crash_now(unsigned proc, uint64_t subset_seed)
{
	struct sim_fault_spec s = { .kind = SIM_F_CRASH, .proc = proc,
		.subset_seed = subset_seed };
	if (proc < SIM_MAX_PROCS && !W.crashed[proc])
		crash(proc, &s);
}

/* one persist event of `proc`; true when the process crashed at it */
static bool
persist_event(unsigned proc)
{
	if (proc >= SIM_MAX_PROCS || W.crashed[proc])
		return true;
	W.events[proc]++;
	struct sim_fault_spec *spec = crash_due(proc);
	if (spec) {
		crash(proc, spec);
		return true;
	}
	return false;
}

void
sim_file_event(struct sim_file *f, size_t off, size_t len)
{
	/* it already happened (the call returned): a crash comes after it */
	if (!W.crashed[f->proc])
		sim_file_persisted(f, off, len);
	(void) persist_event(f->proc);
}

int
sim_file_write_crash_image(struct sim_file *f)
{
	if (f->shadow == NULL || f->size == 0)
		return 0;
	int fd = open(f->path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = pwrite(fd, f->shadow, f->size, 0);
	close(fd);
	if (n != (ssize_t)f->size)
		return -EIO;
	W.down[f->proc] = false;
	return sim_file_reload(f);
}

void
sim_proc_turn_done(unsigned proc)
{
	if (W.crashed[proc])
		return;
	for (int i = 0; i < MAX_FILES; i++) {
		struct sim_file *f = &W.files[i];
		if (!f->used || f->proc != proc || !f->data_events)
			continue;
		file_map(f);
		if (f->live == NULL || memcmp(f->live, f->shadow, f->size) == 0)
			continue;
		if (persist_event(proc))
			return;
		memcpy(f->shadow, f->live, f->size);
	}
}

/*
 * the file whose process mapping holds [ptr, ptr + len): by the mapping's
 * path -- never by the pmem object's address or its mapping's, which a
 * mapping closed and another opened may both reuse (two followed files
 * then matched one persist, and the other's shadow went stale)
 */
static struct sim_file *
file_of_pmem(struct pmrep_pmem *pmem, const void *ptr)
{
	const char *path = pmrep_pmem_get_path(pmem);
	for (int i = 0; path && i < MAX_FILES; i++) {
		struct sim_file *f = &W.files[i];
		if (f->used && strcmp(f->path, path) == 0) {
			f->pmem = pmem;
			f->pmem_base = pmrep_pmem_get_address(pmem);
			return f;
		}
	}
	(void) ptr;
	return NULL;
}

int
sim_pmem_persist_hook(struct pmrep_pmem *pmem, const void *ptr, size_t len)
{
	struct sim_file *f = file_of_pmem(pmem, ptr);
	if (f == NULL)
		return 0;	/* a mapping the harness does not follow */
	if (persist_event(f->proc))
		return 0;	/* crashed: nothing more becomes durable */
	sim_file_persisted(f, (size_t)((const uint8_t *)ptr - f->pmem_base), len);
	return 0;
}

/* the replica file of `proc` whose mapping holds `ptr`, by the harness's
 * knowledge of where the target mapped it (/proc/self/maps, once) */
struct sim_file *
sim_file_of_addr(unsigned proc, const void *ptr)
{
	for (int i = 0; i < MAX_FILES; i++) {
		struct sim_file *f = &W.files[i];
		if (!f->used || f->proc != proc)
			continue;
		if (f->pmem_base && (const uint8_t *)ptr >= f->pmem_base &&
				(const uint8_t *)ptr < f->pmem_base + f->size)
			return f;
	}
	FILE *m = fopen("/proc/self/maps", "r");
	if (m == NULL)
		return NULL;
	char line[512];
	struct sim_file *found = NULL;
	while (found == NULL && fgets(line, sizeof(line), m)) {
		unsigned long lo, hi, off;
		int n = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &off, &n) < 3 ||
				n == 0)
			continue;
		if ((uintptr_t)ptr < lo || (uintptr_t)ptr >= hi || off != 0)
			continue;
		char *path = line + n;
		path[strcspn(path, "\n")] = '\0';
		for (int i = 0; i < MAX_FILES; i++) {
			struct sim_file *f = &W.files[i];
			if (f->used && f->proc == proc && strcmp(f->path, path) == 0 &&
					(uint8_t *)(uintptr_t)lo != f->live) {
				f->pmem_base = (uint8_t *)(uintptr_t)lo;
				found = f;
				break;
			}
		}
	}
	fclose(m);
	return found;
}

bool
sim_remote_persist_event(unsigned proc, const void *ptr, size_t len)
{
	if (proc >= SIM_MAX_PROCS)
		return false;
	if (persist_event(proc))
		return true;
	struct sim_file *f = sim_file_of_addr(proc, ptr);
	if (f)
		sim_file_persisted(f, (size_t)((const uint8_t *)ptr - f->pmem_base),
				len);
	return false;
}
