/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sweep_restart.c -- the mirror's record (its state file): the restart
 * after a crash against the full resync, the writer killed being this
 * program re-executed (--restart-writer), and the record's price on the
 * persist path; and the bench's pmrep log sink, which counts the record's
 * writes.
 */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_int.h"

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
void
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
void
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

void
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
