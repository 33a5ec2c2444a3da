/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rig-writer -- the fault rig's writer: a log of fixed-size records (see
 * rig.h) in a local file opened through the pmem layer, mirrored to N
 * replica targets under the policy "all" or a quorum k. One
 * pmrep_mirror_persist per record (or per small group), each record in a
 * slot of its own; short idle pauses now and then, so that faults also
 * begin while nothing is in flight.
 *
 * Files it writes:
 *   --history: one line "seq slot t_ms" per acknowledged record, appended
 *     only after the persist covering it returned 0 (write + fdatasync per
 *     batch): it never names a record that was not acknowledged; a record
 *     acknowledged just before a SIGKILL may be missing from it.
 *   --events: one line per call and per observed change, every time in
 *     CLOCK_MONOTONIC milliseconds:
 *       start T policy K replicas N timeout MS
 *       call T KIND RESULT DUR_MS TIMEOUT_MS SEQ COUNT
 *            (KIND persist / reconnect / new; RESULT 0 or the error's name)
 *       state T REPLICA OLD NEW LAST_ERROR
 *       idle T_START T_END
 *       heal T ok|fail DUR_MS
 *       sync T            (the first time every replica is in sync)
 *       stop T ACKED
 * Recovery: the mirror's background threads (back-off 50 ms .. 1 s); with
 * --manual-recovery, pmrep_mirror_reconnect calls of the writer's own.
 * SIGTERM / SIGINT: stop writing, then heal: reconnect every replica and
 * wait (bounded by --heal-timeout) until every one is in sync, print the
 * heal time, delete the mirror (its replicas are marked consistent).
 * --heal-only: open an existing log, attach the mirror and heal (after a
 * writer was killed with SIGKILL).
 * --pmrep-log: the log is a pmrep log (pmrep_log_open; created when
 * missing): the replica layout, so that after a failover a replica's file
 * is the new primary's log in place. Its pmrep header's generation, when
 * newer than the rig header's (a promoted log, `pmrep promote`), is the
 * mirror's; the rig header takes it through the mirror once the mirror
 * exists -- nothing is written to an existing log before that (a replica
 * the promotion left consistent would never get such a write).
 * --persist-seq: the replicas record persist sequences (pmrep compare).
 * An existing log: the writer resumes after the whole records it holds
 * (the first slot without one), writing records of epoch generation - 1
 * (rig.h), and names the epoch in its history lines. An attach refused
 * for a reason no retry changes (AUTH, SPLIT_BRAIN, INVAL, RANGE,
 * MALFORMED) is not retried.
 * Exit: 0 ok (healed), 1 failure (setup, or not healed in time), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "rig.h"

struct writer {
	bool manual;		/* --manual-recovery: reconnect calls */
	bool pmrep_log;		/* --pmrep-log: pmrep_log_open */
	bool existed;		/* the log held a rig header already */
	bool all_once;		/* "sync" logged */
	uint64_t log_gen;	/* a promoted log's generation (0: none newer) */
	uint64_t epoch;		/* of the records written: generation - 1 */
	struct pmrep_pmem *pmem;
	uint8_t *base;
	size_t size;
	size_t rec;		/* record size */
	uint64_t slots;
	struct pmrep_mirror *m;
	unsigned n;		/* replicas */
	unsigned required;	/* replicas the policy requires */
	int ev_fd;		/* events */
	int hist_fd;		/* history */
	int sig_fd;
	enum pmrep_replica_state prev[PMREP_MIRROR_MAX_REPLICAS];
	int timeout_ms, rc_timeout_ms;
	double next_rc;		/* earliest next reconnect */
	double backoff;		/* ms */
	double backoff_max;
	uint64_t rng;
	/* history batch */
	char *hbuf;
	size_t hlen, hcap;
	unsigned hcount;
	double hlast;
	/* figures */
	uint64_t acked, persists, failed_persists, reconnects, failed_reconnects;
	double longest_persist, longest_reconnect;
};

static const char *
state_name(enum pmrep_replica_state s)
{
	switch (s) {
	case PMREP_REPLICA_CONNECTED: return "connected";
	case PMREP_REPLICA_SYNCING: return "syncing";
	case PMREP_REPLICA_IN_SYNC: return "in_sync";
	case PMREP_REPLICA_DEGRADED: return "degraded";
	case PMREP_REPLICA_FAILED: return "failed";
	case PMREP_REPLICA_BEHIND: return "behind";
	case PMREP_REPLICA_REMOVED: return "removed";
	}
	return "unknown";
}

static const char *
err_name(int e)
{
	switch (e) {
	case 0: return "0";
	case PMREP_E_TIMEOUT: return "TIMEOUT";
	case PMREP_E_CONN_LOST: return "CONN_LOST";
	case PMREP_E_UNREACHABLE: return "UNREACHABLE";
	case PMREP_E_REJECTED: return "REJECTED";
	case PMREP_E_AGAIN: return "AGAIN";
	case PMREP_E_PROVIDER: return "PROVIDER";
	case PMREP_E_BUSY: return "BUSY";
	case PMREP_E_STATE: return "STATE";
	case PMREP_E_AUTH: return "AUTH";
	case PMREP_E_MALFORMED: return "MALFORMED";
	case PMREP_E_INVAL: return "INVAL";
	case PMREP_E_RANGE: return "RANGE";
	case PMREP_E_NOMEM: return "NOMEM";
	default: return "OTHER";
	}
}

static void
ev(struct writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
ev(struct writer *w, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if ((size_t)len > sizeof(line) - 2)
		len = (int)sizeof(line) - 2;
	line[len++] = '\n';
	/* one write per line (O_APPEND): a SIGKILL loses nothing written */
	if (write(w->ev_fd, line, (size_t)len) != len)
		fprintf(stderr, "rig-writer: events: %s\n", strerror(errno));
}

static bool
stop_requested(struct writer *w)
{
	struct signalfd_siginfo si;
	return read(w->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si);
}

/* log every replica whose state changed; returns how many are in sync */
static unsigned
scan(struct writer *w)
{
	unsigned in_sync = 0;
	for (unsigned r = 0; r < w->n; r++) {
		struct pmrep_replica_status st;
		if (pmrep_mirror_get_replica_status(w->m, r, &st) != 0)
			continue;
		if (st.state != w->prev[r]) {
			ev(w, "state %.3f %u %s %s %s", rig_now_ms(), r,
					state_name(w->prev[r]), state_name(st.state),
					err_name(st.last_error));
			w->prev[r] = st.state;
		}
		/* BEHIND: in sync, confirming behind the quorum */
		if (st.state == PMREP_REPLICA_IN_SYNC ||
				st.state == PMREP_REPLICA_BEHIND)
			in_sync++;
	}
	if (in_sync == w->n && !w->all_once) {
		w->all_once = true;
		ev(w, "sync %.3f", rig_now_ms());
	}
	return in_sync;
}

static void
hist_flush(struct writer *w)
{
	if (w->hlen == 0)
		return;
	size_t off = 0;
	while (off < w->hlen) {
		ssize_t n = write(w->hist_fd, w->hbuf + off, w->hlen - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "rig-writer: history: %s\n", strerror(errno));
			break;
		}
		off += (size_t)n;
	}
	if (fdatasync(w->hist_fd) != 0)
		fprintf(stderr, "rig-writer: history fdatasync: %s\n", strerror(errno));
	w->hlen = 0;
	w->hcount = 0;
	w->hlast = rig_now_ms();
}

static int
hist_add(struct writer *w, uint64_t seq, double t)
{
	if (w->hcap - w->hlen < 64) {
		size_t cap = w->hcap ? w->hcap * 2 : 65536;
		char *b = realloc(w->hbuf, cap);
		if (b == NULL)
			return -1;
		w->hbuf = b;
		w->hcap = cap;
	}
	if (w->epoch)
		w->hlen += (size_t)snprintf(w->hbuf + w->hlen, w->hcap - w->hlen,
				"%llu %llu %.3f %llu\n", (unsigned long long)seq,
				(unsigned long long)(seq - 1), t,
				(unsigned long long)w->epoch);
	else
		w->hlen += (size_t)snprintf(w->hbuf + w->hlen, w->hcap - w->hlen,
				"%llu %llu %.3f\n", (unsigned long long)seq,
				(unsigned long long)(seq - 1), t);
	w->hcount++;
	return 0;
}

static void
maybe_reconnect(struct writer *w, bool any_bad)
{
	double now = rig_now_ms();
	/* background recovery (the default): the mirror's own threads
	 * reconnect and resync; the writer only watches */
	if (!w->manual || !any_bad || now < w->next_rc)
		return;
	int ret = pmrep_mirror_reconnect(w->m, w->rc_timeout_ms);
	double t1 = rig_now_ms();
	w->reconnects++;
	if (ret != 0 && ret != PMREP_E_AGAIN)
		w->failed_reconnects++;
	if (t1 - now > w->longest_reconnect)
		w->longest_reconnect = t1 - now;
	ev(w, "call %.3f reconnect %s %.3f %d 0 0", now, err_name(ret), t1 - now,
			w->rc_timeout_ms);
	scan(w);
	if (ret == 0) {
		w->backoff = 50;
	} else {
		w->backoff *= 2;
		if (w->backoff > w->backoff_max)
			w->backoff = w->backoff_max;
	}
	w->next_rc = rig_now_ms() + w->backoff;
}

static bool
all_in_sync(struct writer *w)
{
	return scan(w) == w->n;
}

/* poll the mirror (idle detection), scan, reconnect what failed */
static void
tend(struct writer *w)
{
	struct pmrep_mirror_completion c[4];
	int nc = 0;
	int ret = pmrep_mirror_poll(w->m, c, 4, &nc);
	if (ret != 0)
		ev(w, "call %.3f poll %s 0 0 0 0", rig_now_ms(), err_name(ret));
	unsigned in_sync = scan(w);
	maybe_reconnect(w, in_sync < w->n);
}

static void
sleep_ms(double ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = { (time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6) };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* pause for `ms`, tending the mirror every 10 ms */
static void
idle(struct writer *w, double ms)
{
	hist_flush(w);
	double t0 = rig_now_ms(), end = t0 + ms;
	while (rig_now_ms() < end) {
		tend(w);
		double left = end - rig_now_ms();
		sleep_ms(left < 10 ? left : 10);
	}
	ev(w, "idle %.3f %.3f", t0, rig_now_ms());
}

/* the end: reconnect everything, wait for every replica in sync */
static int
heal(struct writer *w, double t0, int heal_timeout_ms)
{
	w->backoff = 50;
	w->backoff_max = 500;
	w->next_rc = 0;
	double deadline = t0 + heal_timeout_ms;
	bool ok;
	while (!(ok = all_in_sync(w)) && rig_now_ms() < deadline) {
		tend(w);
		sleep_ms(10);
	}
	double dur = rig_now_ms() - t0;
	ev(w, "heal %.3f %s %.3f", rig_now_ms(), ok ? "ok" : "fail", dur);
	if (ok)
		printf("rig-writer: heal: all %u replicas in sync after %.0f ms\n", w->n, dur);
	else
		printf("rig-writer: heal: NOT all %u replicas in sync after %.0f ms\n", w->n, dur);
	fflush(stdout);
	return ok ? 0 : -1;
}

static int
log_open(struct writer *w, const char *path, size_t size, size_t rec,
		bool must_exist)
{
	bool exists = access(path, F_OK) == 0;
	int ret;
	if (w->pmrep_log)
		ret = pmrep_log_open(path, exists || must_exist ? 0 : PMREP_PMEM_CREATE,
				exists || must_exist ? 0 : size, PMREP_PMEM_GRANULARITY_PAGE,
				&w->pmem);
	else
		ret = pmrep_pmem_open(path, must_exist ? 0 : PMREP_PMEM_CREATE,
				must_exist ? 0 : size, PMREP_PMEM_GRANULARITY_PAGE, &w->pmem);
	if (ret) {
		fprintf(stderr, "rig-writer: %s: %s (%s)\n", path,
				pmrep_err_to_str(ret), pmrep_err_msg());
		return -1;
	}
	w->base = pmrep_pmem_get_address(w->pmem);
	w->size = pmrep_pmem_get_size(w->pmem);
	w->existed = memcmp(w->base, RIG_MAGIC, 8) == 0;
	if (!w->existed) {
		if (must_exist) {
			fprintf(stderr, "rig-writer: %s: not a rig log\n", path);
			return -1;
		}
		if (w->size < RIG_HDR_SIZE + rec) {
			fprintf(stderr, "rig-writer: %s: too small\n", path);
			return -1;
		}
		memset(w->base, 0, RIG_HDR_SIZE);
		memcpy(w->base, RIG_MAGIC, 8);
		uint32_t v = 1, rs = (uint32_t)rec;
		memcpy(w->base + 8, &v, 4);
		memcpy(w->base + 12, &rs, 4);
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || read(fd, w->base + 16, 16) != 16) {
			fprintf(stderr, "rig-writer: cannot read /dev/urandom\n");
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
		w->base[16] |= 1;
		rig_put64(w->base + 32, 1);
		rig_put64(w->base + 40, (w->size - RIG_HDR_SIZE) / rec);
		rig_put64(w->base + 48, rig_fnv(w->base, 48));
		ret = pmrep_pmem_persist(w->pmem, w->base, RIG_HDR_SIZE);
		if (ret) {
			fprintf(stderr, "rig-writer: persist header: %s\n", pmrep_err_to_str(ret));
			return -1;
		}
	}
	if (rig_get64(w->base + 48) != rig_fnv(w->base, 48)) {
		fprintf(stderr, "rig-writer: %s: damaged header\n", path);
		return -1;
	}
	uint32_t rs;
	memcpy(&rs, w->base + 12, 4);
	w->rec = rs;
	w->slots = rig_get64(w->base + 40);
	/* a promoted log: its pmrep header holds a newer generation of the
	 * same set than the rig header (read only; written through the
	 * mirror, take_log_generation) */
	struct pmrep_replica_info info;
	if (w->pmrep_log && pmrep_replica_read_info(path, &info) == 0 &&
			memcmp(info.uuid, w->base + 16, 16) == 0 &&
			info.generation > rig_get64(w->base + 32))
		w->log_gen = info.generation;
	return 0;
}

static uint64_t
generation(const struct writer *w)
{
	uint64_t g = rig_get64(w->base + 32);
	return w->log_gen > g ? w->log_gen : g;
}

/* the promoted log's generation into the rig header, through the mirror
 * (retried while the policy cannot be met, bounded) */
static int
take_log_generation(struct writer *w, int limit_ms)
{
	if (w->log_gen <= rig_get64(w->base + 32))
		return 0;
	rig_put64(w->base + 32, w->log_gen);
	rig_put64(w->base + 48, rig_fnv(w->base, 48));
	double deadline = rig_now_ms() + limit_ms;
	int ret;
	while ((ret = pmrep_mirror_persist(w->m, 0, RIG_HDR_SIZE, w->timeout_ms)) != 0 &&
			rig_now_ms() < deadline) {
		tend(w);
		sleep_ms(50);
	}
	if (ret) {
		fprintf(stderr, "rig-writer: the log's generation could not be persisted: %s (%s)\n",
				pmrep_err_to_str(ret), pmrep_err_msg());
		return -1;
	}
	printf("rig-writer: generation %llu from the promoted log\n",
			(unsigned long long)w->log_gen);
	return 0;
}

/* an existing log: the first slot without a whole record */
static uint64_t
first_free_slot(const struct writer *w)
{
	uint64_t s = 0;
	while (s < w->slots && rig_record_valid(w->base + RIG_HDR_SIZE + s * w->rec,
				w->rec, s))
		s++;
	return s;
}

/* attach errors that no retry changes (a wrong key, another set or
 * size, split brain); everything else is tried again until the bound --
 * a target not (yet) there, or one still holding a killed writer's
 * session (STATE, BUSY), and so also a replica of a newer generation */
static bool
transient(int e)
{
	return e != PMREP_E_AUTH && e != PMREP_E_SPLIT_BRAIN &&
		e != PMREP_E_INVAL && e != PMREP_E_RANGE && e != PMREP_E_MALFORMED;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: rig-writer --file PATH --size BYTES --replica ADDR:PORT [--replica ...]\n"
		"                  --key-file FILE --history FILE --events FILE [options]\n"
		"  --file PATH            the local log (created if missing; tmpfs is fine)\n"
		"  --size BYTES           its size (a new log); must equal the targets' --size\n"
		"  --replica ADDR:PORT    a replica target (repeat, up to 8)\n"
		"  --key-file FILE        the targets' pre-shared key\n"
		"  --quorum K             0: policy \"all\" (default); 1..N: quorum k\n"
		"  --history FILE         acknowledged records, \"seq slot t_ms\" lines\n"
		"  --events FILE          calls, state changes, idle pauses (see the source)\n"
		"  --record-size B        bytes per record, multiple of 8, 32..65536 (256)\n"
		"  --group G              up to G records per persist, drawn 1..G (1)\n"
		"  --timeout MS           persist and connect timeout (1000)\n"
		"  --reconnect-timeout MS pmrep_mirror_reconnect's limit (2000)\n"
		"  --manual-recovery      no background recovery: the writer calls\n"
		"                         pmrep_mirror_reconnect for failed replicas\n"
		"                         (backoff 50 ms .. 1 s); default: the mirror's\n"
		"                         threads reconnect them (same back-off)\n"
		"  --idle-every MS        mean time between idle pauses (1500; 0: none)\n"
		"  --idle-max MS          an idle pause lasts 50..MS (1200)\n"
		"  --rate N               at most N records/s (0: no limit)\n"
		"  --count N              stop after N acknowledged records (0: at SIGTERM)\n"
		"  --heal-timeout MS      bound of the final heal (30000)\n"
		"  --heal-only            attach to an existing log and heal, then exit\n"
		"  --pmrep-log            the log is a pmrep log (pmrep_log_open; created if\n"
		"                         missing, --size its data size); a promoted log's\n"
		"                         generation is taken (through the mirror)\n"
		"  --persist-seq          replicas record persist sequences\n"
		"  --gpspm                force GPSPM\n"
		"  --seed S               the writer's own PRNG (pauses, groups)\n"
		"exit: 0 ok and healed, 1 failure, 2 usage\n");
}

int
main(int argc, char *argv[])
{
	enum { O_QUORUM = 256, O_HIST, O_EV, O_REC, O_GROUP, O_TMO, O_RCTMO,
		O_IDLE_EVERY, O_IDLE_MAX, O_RATE, O_COUNT, O_HEALTMO, O_HEALONLY,
		O_GPSPM, O_SEED, O_MANUAL, O_PMREPLOG, O_PSN };
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "size", required_argument, NULL, 's' },
		{ "replica", required_argument, NULL, 'r' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "quorum", required_argument, NULL, O_QUORUM },
		{ "history", required_argument, NULL, O_HIST },
		{ "events", required_argument, NULL, O_EV },
		{ "record-size", required_argument, NULL, O_REC },
		{ "group", required_argument, NULL, O_GROUP },
		{ "timeout", required_argument, NULL, O_TMO },
		{ "reconnect-timeout", required_argument, NULL, O_RCTMO },
		{ "idle-every", required_argument, NULL, O_IDLE_EVERY },
		{ "idle-max", required_argument, NULL, O_IDLE_MAX },
		{ "rate", required_argument, NULL, O_RATE },
		{ "count", required_argument, NULL, O_COUNT },
		{ "heal-timeout", required_argument, NULL, O_HEALTMO },
		{ "heal-only", no_argument, NULL, O_HEALONLY },
		{ "gpspm", no_argument, NULL, O_GPSPM },
		{ "seed", required_argument, NULL, O_SEED },
		{ "manual-recovery", no_argument, NULL, O_MANUAL },
		{ "pmrep-log", no_argument, NULL, O_PMREPLOG },
		{ "persist-seq", no_argument, NULL, O_PSN },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL, *key_file = NULL, *hist = NULL, *evp = NULL;
	const char *reps[PMREP_MIRROR_MAX_REPLICAS];
	unsigned nrep = 0, quorum = 0, group = 1;
	unsigned long long size = 0, rec = 256, count = 0, seed = 1;
	int timeout = 1000, rc_timeout = 2000, idle_every = 1500, idle_max = 1200;
	int heal_timeout = 30000;
	double rate = 0;
	bool heal_only = false, gpspm = false, manual = false, pmrep_log = false,
		psn = false;
	int c;
	while ((c = getopt_long(argc, argv, "f:s:r:k:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		case 'r':
			if (nrep == PMREP_MIRROR_MAX_REPLICAS) {
				fprintf(stderr, "rig-writer: at most %d replicas\n",
						PMREP_MIRROR_MAX_REPLICAS);
				return 2;
			}
			reps[nrep++] = optarg;
			break;
		case 'k': key_file = optarg; break;
		case O_QUORUM: quorum = (unsigned)atoi(optarg); break;
		case O_HIST: hist = optarg; break;
		case O_EV: evp = optarg; break;
		case O_REC: rec = strtoull(optarg, NULL, 0); break;
		case O_GROUP: group = (unsigned)atoi(optarg); break;
		case O_TMO: timeout = atoi(optarg); break;
		case O_RCTMO: rc_timeout = atoi(optarg); break;
		case O_IDLE_EVERY: idle_every = atoi(optarg); break;
		case O_IDLE_MAX: idle_max = atoi(optarg); break;
		case O_RATE: rate = atof(optarg); break;
		case O_COUNT: count = strtoull(optarg, NULL, 0); break;
		case O_HEALTMO: heal_timeout = atoi(optarg); break;
		case O_HEALONLY: heal_only = true; break;
		case O_GPSPM: gpspm = true; break;
		case O_SEED: seed = strtoull(optarg, NULL, 0); break;
		case O_MANUAL: manual = true; break;
		case O_PMREPLOG: pmrep_log = true; break;
		case O_PSN: psn = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (file == NULL || key_file == NULL || evp == NULL || nrep == 0 ||
			(!heal_only && (hist == NULL || size == 0)) ||
			rec < RIG_MIN_REC || rec > RIG_MAX_REC || rec % 8 ||
			quorum > nrep || group < 1 || group > 64 || timeout <= 0 ||
			rc_timeout <= 0 || idle_every < 0 || idle_max < 50 ||
			heal_timeout <= 0 || rate < 0) {
		usage(stderr);
		return 2;
	}
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_WARNING);

	struct writer w = { .manual = manual, .pmrep_log = pmrep_log, .n = nrep, .required = quorum ? quorum : nrep,
		.timeout_ms = timeout, .rc_timeout_ms = rc_timeout, .backoff = 50,
		.backoff_max = 1000, .rng = seed, .ev_fd = -1, .hist_fd = -1 };
	for (unsigned r = 0; r < nrep; r++)
		w.prev[r] = PMREP_REPLICA_FAILED;

	/* SIGTERM / SIGINT through a signalfd: blocked in every thread (the
	 * mirror's threads inherit the mask), read between calls */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	w.sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	w.ev_fd = open(evp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (!heal_only)
		w.hist_fd = open(hist, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (w.sig_fd < 0 || w.ev_fd < 0 || (!heal_only && w.hist_fd < 0)) {
		fprintf(stderr, "rig-writer: %s\n", strerror(errno));
		return 1;
	}
	if (log_open(&w, file, (size_t)size, (size_t)rec, heal_only) != 0) {
		pmrep_pmem_close(&w.pmem);
		return 1;
	}

	uint8_t key[PMREP_KEY_MAX];
	size_t key_len;
	struct pmrep_mirror_cfg *cfg = NULL;
	int ret = pmrep_key_read_file(key_file, key, sizeof(key), &key_len);
	if (ret == 0) ret = pmrep_mirror_cfg_new(&cfg);
	for (unsigned r = 0; ret == 0 && r < nrep; r++) {
		char a[256];
		snprintf(a, sizeof(a), "%s", reps[r]);
		char *colon = strrchr(a, ':');
		if (colon == NULL) {
			fprintf(stderr, "rig-writer: --replica ADDR:PORT\n");
			return 2;
		}
		*colon = '\0';
		ret = pmrep_mirror_cfg_add_replica(cfg, a, colon + 1);
	}
	if (ret == 0) ret = pmrep_mirror_cfg_set_key(cfg, key, key_len);
	if (ret == 0) ret = pmrep_mirror_cfg_set_uuid(cfg, w.base + 16);
	if (ret == 0) ret = pmrep_mirror_cfg_set_generation(cfg, generation(&w));
	if (ret == 0 && psn) ret = pmrep_mirror_cfg_set_persist_seq(cfg, true);
	w.epoch = generation(&w) - 1;
	if (ret == 0) ret = pmrep_mirror_cfg_set_quorum(cfg, quorum);
	if (ret == 0) ret = pmrep_mirror_cfg_set_timeout(cfg, timeout);
	if (ret == 0 && gpspm) ret = pmrep_mirror_cfg_set_force_gpspm(cfg, true);
	if (ret == 0) ret = pmrep_mirror_cfg_set_background_recovery(cfg, !manual);
	if (ret == 0) ret = pmrep_mirror_cfg_set_backoff(cfg, 50, 1000);
	memset(key, 0, sizeof(key));
	if (ret) {
		fprintf(stderr, "rig-writer: configuration: %s (%s)\n",
				pmrep_err_to_str(ret), pmrep_err_msg());
		return 1;
	}
	double t_start = rig_now_ms();
	ev(&w, "start %.3f policy %u replicas %u timeout %d", t_start, quorum,
			nrep, timeout);
	/* attach: retried (a target may still be starting), bounded */
	double attach_deadline = t_start + heal_timeout;
	for (;;) {
		double t0 = rig_now_ms();
		ret = pmrep_mirror_new(w.pmem, cfg, &w.m);
		/* pmrep_mirror_new has no overall limit: it attaches the
		 * replicas one after the other, each step within the cfg
		 * timeout, and resyncs (a fresh replica in full) without an
		 * overall limit: logged with timeout -1, never a "hang" */
		ev(&w, "call %.3f new %s %.3f -1 0 0", t0, err_name(ret),
				rig_now_ms() - t0);
		if (ret == 0 || !transient(ret) || rig_now_ms() > attach_deadline)
			break;
		sleep_ms(100);
	}
	if (ret) {
		fprintf(stderr, "rig-writer: cannot attach: %s (%s)\n",
				pmrep_err_to_str(ret), pmrep_err_msg());
		pmrep_mirror_cfg_delete(&cfg);
		pmrep_pmem_close(&w.pmem);
		return 1;
	}
	scan(&w);
	printf("rig-writer: attached %u replicas, policy %s%u, record %zu bytes, %llu slots, generation %llu\n",
			nrep, quorum ? "quorum " : "all ", quorum ? quorum : nrep,
			w.rec, (unsigned long long)w.slots,
			(unsigned long long)generation(&w));
	fflush(stdout);

	int rc = 0;
	if (take_log_generation(&w, heal_timeout) != 0) {
		rc = 1;
		goto done;
	}
	if (heal_only) {
		rc = heal(&w, t_start, heal_timeout) ? 1 : 0;
		goto done;
	}

	uint64_t seq = 1;
	if (w.existed) {
		seq = first_free_slot(&w) + 1;
		printf("rig-writer: the log holds %llu records: resuming at %llu, epoch %llu\n",
				(unsigned long long)(seq - 1), (unsigned long long)seq,
				(unsigned long long)w.epoch);
		fflush(stdout);
	}
	uint64_t written = seq - 1;	/* records written into the mapping */
	double next_idle = idle_every ? rig_now_ms() + (double)(rig_mix(&w.rng) % (2 * (unsigned)idle_every + 1)) : 0;
	double t_rate0 = rig_now_ms();
	const uint64_t seq0 = seq;	/* the rate counts from here */
	bool stop = false;
	while (!(stop = stop_requested(&w))) {
		if (count && w.acked >= count)
			break;
		if (seq > w.slots) {
			printf("rig-writer: log full after %llu records\n",
					(unsigned long long)(seq - 1));
			break;
		}
		double now = rig_now_ms();
		if (idle_every && now >= next_idle) {
			idle(&w, 50 + (double)(rig_mix(&w.rng) % (unsigned)(idle_max - 49)));
			next_idle = rig_now_ms() + (double)(rig_mix(&w.rng) % (2 * (unsigned)idle_every + 1));
			continue;
		}
		if (rate > 0) {
			double due = t_rate0 + (double)(seq - seq0) * 1000.0 / rate;
			if (due > now)
				sleep_ms(due - now > 20 ? 20 : due - now);
			if (due > rig_now_ms())
				continue;
		}
		unsigned g = group > 1 ? 1 + (unsigned)(rig_mix(&w.rng) % group) : 1;
		if (seq + g - 1 > w.slots)
			g = (unsigned)(w.slots - seq + 1);
		for (uint64_t s = seq; s < seq + g; s++) {
			if (s > written) {
				rig_record_make_epoch(w.base + RIG_HDR_SIZE + (s - 1) * w.rec,
						w.rec, s, s - 1, w.epoch);
				written = s;
			}
		}
		size_t off = RIG_HDR_SIZE + (size_t)(seq - 1) * w.rec;
		double t0 = rig_now_ms();
		ret = pmrep_mirror_persist(w.m, off, (size_t)g * w.rec, timeout);
		double t1 = rig_now_ms();
		w.persists++;
		if (t1 - t0 > w.longest_persist)
			w.longest_persist = t1 - t0;
		ev(&w, "call %.3f persist %s %.3f %d %llu %u", t0, err_name(ret),
				t1 - t0, timeout, (unsigned long long)seq, g);
		unsigned in_sync = scan(&w);
		if (ret == 0) {
			for (uint64_t s = seq; s < seq + g; s++)
				if (hist_add(&w, s, t1) != 0) {
					fprintf(stderr, "rig-writer: out of memory\n");
					rc = 1;
					goto out;
				}
			w.acked += g;
			seq += g;
			if (w.hcount >= 256 || t1 - w.hlast >= 20)
				hist_flush(&w);
			maybe_reconnect(&w, in_sync < w.n);
			continue;
		}
		/* not acknowledged: the same records again, once the policy
		 * can be met (or after a second: a persist while a required
		 * replica is failed fails at once, and would only count) */
		w.failed_persists++;
		hist_flush(&w);
		double retry = rig_now_ms() + 1000;
		while (!(stop = stop_requested(&w))) {
			tend(&w);
			if (scan(&w) >= w.required || rig_now_ms() >= retry)
				break;
			sleep_ms(5);
		}
		if (stop)
			break;
	}
out:
	hist_flush(&w);
	ev(&w, "stop %.3f %llu", rig_now_ms(), (unsigned long long)w.acked);
	printf("rig-writer: %llu records acknowledged; %llu persists, %llu failed, longest %.1f ms; %llu reconnects, %llu failed, longest %.1f ms\n",
			(unsigned long long)w.acked, (unsigned long long)w.persists,
			(unsigned long long)w.failed_persists, w.longest_persist,
			(unsigned long long)w.reconnects,
			(unsigned long long)w.failed_reconnects, w.longest_reconnect);
	fflush(stdout);
	if (heal(&w, rig_now_ms(), heal_timeout) != 0)
		rc = 1;
done:
	ret = pmrep_mirror_delete(&w.m);
	if (ret)
		fprintf(stderr, "rig-writer: mirror delete: %s\n", pmrep_err_to_str(ret));
	pmrep_mirror_cfg_delete(&cfg);
	pmrep_pmem_close(&w.pmem);
	free(w.hbuf);
	close(w.ev_fd);
	if (w.hist_fd >= 0)
		close(w.hist_fd);
	close(w.sig_fd);
	return rc;
}
