/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rig-check -- the fault rig's checker and report.
 *
 *   rig-check history --history FILE --source LOG --replica FILE [...]
 *                     [--quorum K]
 *     Reads the writer's history (acknowledged records), the source log
 *     and every replica file directly (each replica's header through
 *     pmrep_replica_read_info, then its data area: the log's image) and
 *     counts violations of the durability rule: an acknowledged record
 *     that is right (the bytes rig_record_make gives for its seq) on fewer
 *     replicas than the policy requires (K = 0, "all": every replica; K:
 *     at least K). Run it while no mirror writes the replicas and BEFORE
 *     the final heal (a heal would repair what it should catch). LOG is a
 *     plain rig log or a pmrep log (rig-writer --pmrep-log: its data area
 *     is the rig log); a history line's fourth field, when there, is the
 *     record's epoch (rig.h; default 0). Prints
 *     each violation (the first 20) as
 *       VIOLATION seq S slot L: right on G of N replicas, policy requires R: replica I missing|different ...
 *     and a summary. Exit 0 no violation, 1 violations, 2 usage / I/O error.
 *
 *   rig-check order --history FILE [--history FILE ...]
 *     The order of the primaries, from the histories of every writer run
 *     (a line's t_ms is CLOCK_MONOTONIC, shared by the rig's namespaces; its
 *     fourth field the record's epoch, generation - 1): no record may be
 *     acknowledged at an epoch after a record of a newer epoch was -- once
 *     a newer primary acknowledged a write, the older one's must fail (its
 *     replicas were fenced before the newer one wrote). Prints, per epoch,
 *     the records and the first and last acknowledgement, then each
 *     "VIOLATION epoch E seq S acknowledged at T, after epoch F's first
 *     (seq S' at T')" (the first 20) and a summary. Exit 0 none, 1
 *     violations or an unreadable line, 2 usage / I/O error.
 *
 *   rig-check report --events FILE --faults FILE [--history FILE] [--slack MS]
 *     The figures of one run from rig-writer's events and the nemesis'
 *     fault log ("fault KIND REPLICA START_MS END_MS" lines): faults by
 *     kind, calls and failed calls, the longest call of each kind and the
 *     hangs (a call longer than its timeout + slack, default 2000 ms),
 *     detection time (fault start to the replica's first "failed", idle
 *     and under load apart), heal time (fault end to "in sync"). Ends with
 *     one line "figures: faults=N hangs=H ..." for scripts.
 *     Exit 0, 1 when a call hung, 2 usage / I/O error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmrep/repl.h>

#include "rig.h"

#define MAXR PMREP_MIRROR_MAX_REPLICAS

static int
read_at(int fd, void *buf, size_t len, off_t off)
{
	uint8_t *b = buf;
	while (len > 0) {
		ssize_t n = pread(fd, b, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static bool
all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static int
cmd_history(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "history", required_argument, NULL, 'H' },
		{ "source", required_argument, NULL, 's' },
		{ "replica", required_argument, NULL, 'r' },
		{ "quorum", required_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	const char *hist = NULL, *source = NULL, *reps[MAXR];
	unsigned n = 0, quorum = 0;
	int c;
	while ((c = getopt_long(argc, argv, "H:s:r:q:", opts, NULL)) != -1) {
		switch (c) {
		case 'H': hist = optarg; break;
		case 's': source = optarg; break;
		case 'r':
			if (n == MAXR) {
				fprintf(stderr, "rig-check: at most %d replicas\n", MAXR);
				return 2;
			}
			reps[n++] = optarg;
			break;
		case 'q': quorum = (unsigned)atoi(optarg); break;
		default: return 2;
		}
	}
	if (hist == NULL || source == NULL || n == 0 || quorum > n) {
		fprintf(stderr, "usage: rig-check history --history FILE --source LOG --replica FILE [...] [--quorum K]\n");
		return 2;
	}
	unsigned required = quorum ? quorum : n;
	int src = open(source, O_RDONLY | O_CLOEXEC);
	uint8_t hdr[64];
	struct stat st;
	if (src < 0 || fstat(src, &st) != 0 || read_at(src, hdr, sizeof(hdr), 0) != 0) {
		fprintf(stderr, "rig-check: %s: %s\n", source, strerror(errno));
		return 2;
	}
	/* a pmrep log: the rig log is its data area */
	off_t src_off = 0;
	uint64_t src_size = (uint64_t)st.st_size;
	struct pmrep_replica_info sinfo;
	if (memcmp(hdr, RIG_MAGIC, 8) != 0 &&
			pmrep_replica_read_info(source, &sinfo) == 0) {
		src_off = (off_t)sinfo.data_offset;
		src_size = sinfo.data_size;
		if (read_at(src, hdr, sizeof(hdr), src_off) != 0) {
			fprintf(stderr, "rig-check: %s: %s\n", source, strerror(errno));
			return 2;
		}
	}
	uint32_t rs;
	memcpy(&rs, hdr + 12, 4);
	if (memcmp(hdr, RIG_MAGIC, 8) != 0 || rig_get64(hdr + 48) != rig_fnv(hdr, 48) ||
			rs < RIG_MIN_REC || rs > RIG_MAX_REC || rs % 8) {
		fprintf(stderr, "rig-check: %s: not a rig log\n", source);
		return 2;
	}
	size_t rec = rs;
	uint64_t slots = rig_get64(hdr + 40);
	int fds[MAXR];
	uint64_t doff[MAXR];
	for (unsigned r = 0; r < n; r++) {
		struct pmrep_replica_info info;
		int ret = pmrep_replica_read_info(reps[r], &info);
		if (ret) {
			fprintf(stderr, "rig-check: %s: %s (%s)\n", reps[r],
					pmrep_err_to_str(ret), pmrep_err_msg());
			return 2;
		}
		if (info.data_size != src_size) {
			fprintf(stderr, "rig-check: %s: data area %llu bytes, the source %llu\n",
					reps[r], (unsigned long long)info.data_size,
					(unsigned long long)src_size);
			return 2;
		}
		doff[r] = info.data_offset;
		fds[r] = open(reps[r], O_RDONLY | O_CLOEXEC);
		if (fds[r] < 0) {
			fprintf(stderr, "rig-check: %s: %s\n", reps[r], strerror(errno));
			return 2;
		}
	}
	FILE *h = fopen(hist, "r");
	if (h == NULL) {
		fprintf(stderr, "rig-check: %s: %s\n", hist, strerror(errno));
		return 2;
	}
	uint8_t *want = malloc(rec), *got = malloc(rec);
	if (want == NULL || got == NULL) {
		fprintf(stderr, "rig-check: out of memory\n");
		return 2;
	}
	unsigned long long records = 0, violations = 0, bad_lines = 0, src_bad = 0;
	unsigned long long missing[MAXR] = { 0 }, different[MAXR] = { 0 };
	char line[256];
	while (fgets(line, sizeof(line), h)) {
		unsigned long long seq, slot, epoch = 0;
		double t;
		if (sscanf(line, "%llu %llu %lf %llu", &seq, &slot, &t, &epoch) < 3 ||
				seq == 0 || slot != seq - 1 || slot >= slots) {
			if (bad_lines++ < 5)
				printf("bad history line: %s", line);
			continue;
		}
		records++;
		rig_record_make_epoch(want, rec, seq, slot, epoch);
		off_t off = (off_t)(RIG_HDR_SIZE + slot * rec);
		if (read_at(src, got, rec, src_off + off) != 0) {
			fprintf(stderr, "rig-check: %s: read failed\n", source);
			return 2;
		}
		if (memcmp(got, want, rec) != 0)
			src_bad++;
		unsigned right = 0;
		char what[MAXR][16];
		for (unsigned r = 0; r < n; r++) {
			if (read_at(fds[r], got, rec, (off_t)doff[r] + off) != 0) {
				fprintf(stderr, "rig-check: %s: read failed\n", reps[r]);
				return 2;
			}
			if (memcmp(got, want, rec) == 0) {
				right++;
				snprintf(what[r], sizeof(what[r]), "ok");
			} else if (all_zero(got, rec)) {
				missing[r]++;
				snprintf(what[r], sizeof(what[r]), "missing");
			} else {
				different[r]++;
				snprintf(what[r], sizeof(what[r]), "different");
			}
		}
		if (right < required) {
			if (violations++ < 20) {
				printf("VIOLATION seq %llu slot %llu: right on %u of %u replicas, policy requires %u:",
						seq, slot, right, n, required);
				for (unsigned r = 0; r < n; r++)
					printf(" replica %u %s", r, what[r]);
				printf("\n");
			}
		}
	}
	fclose(h);
	printf("rig-check: %llu acknowledged records, policy %s %u of %u; violations %llu",
			records, quorum ? "quorum" : "all", required, n, violations);
	for (unsigned r = 0; r < n; r++)
		printf("; replica %u: %llu missing, %llu different", r, missing[r], different[r]);
	printf("; source wrong %llu; bad history lines %llu\n", src_bad, bad_lines);
	free(want);
	free(got);
	for (unsigned r = 0; r < n; r++)
		close(fds[r]);
	close(src);
	/* a source that lost an acknowledged record, or a history the checker
	 * cannot read, is a failure of the run as well */
	return violations || src_bad || bad_lines ? 1 : 0;
}

/* ------------------------------------------------------------- report */

struct state_ev { double t; unsigned r; bool failed, in_sync; };
struct fault { char kind[16]; unsigned r; double start, end; };
struct win { double a, b; };

struct vec { void *p; size_t n, cap, sz; };

static void *
vec_push(struct vec *v)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		void *p = realloc(v->p, cap * v->sz);
		if (p == NULL) {
			fprintf(stderr, "rig-check: out of memory\n");
			exit(2);
		}
		v->p = p;
		v->cap = cap;
	}
	return (char *)v->p + v->sz * v->n++;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int
cmp_fault(const void *a, const void *b)
{
	const struct fault *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void
print_dist(const char *what, struct vec *v)
{
	double *d = v->p;
	if (v->n == 0) {
		printf("  %-34s n=0\n", what);
		return;
	}
	qsort(d, v->n, sizeof(double), cmp_d);
	printf("  %-34s n=%zu median %.0f ms, max %.0f ms\n", what, v->n,
			d[v->n / 2], d[v->n - 1]);
}

static int
cmd_report(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "events", required_argument, NULL, 'e' },
		{ "faults", required_argument, NULL, 'f' },
		{ "slack", required_argument, NULL, 's' },
		{ "history", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	const char *evp = NULL, *fp = NULL, *hp = NULL;
	double slack = 2000;
	int c;
	while ((c = getopt_long(argc, argv, "e:f:s:H:", opts, NULL)) != -1) {
		switch (c) {
		case 'H': hp = optarg; break;
		case 'e': evp = optarg; break;
		case 'f': fp = optarg; break;
		case 's': slack = atof(optarg); break;
		default: return 2;
		}
	}
	if (evp == NULL || fp == NULL) {
		fprintf(stderr, "usage: rig-check report --events FILE --faults FILE [--history FILE] [--slack MS]\n");
		return 2;
	}
	FILE *e = fopen(evp, "r"), *f = fopen(fp, "r");
	if (e == NULL || f == NULL) {
		fprintf(stderr, "rig-check: %s: %s\n", e ? fp : evp, strerror(errno));
		return 2;
	}
	struct vec states = { .sz = sizeof(struct state_ev) };
	struct vec faults = { .sz = sizeof(struct fault) };
	struct vec idles = { .sz = sizeof(struct win) };
	unsigned long long persists = 0, persist_fail = 0, rcs = 0, rc_fail = 0,
		rc_again = 0, hangs = 0, acked = 0, slow_ok = 0;
	double longest_ok = 0;
	double longest[3] = { 0 }, longest_tmo[3] = { 0 }, t_stop = 1e300;
	const char *kinds[3] = { "persist", "reconnect", "new" };
	double heal_final = -1;
	bool heal_ok = false;
	char line[512];
	while (fgets(line, sizeof(line), e)) {
		char k[32], res[32], a[32], b[32], cause[32];
		double t, dur, t2;
		int tmo;
		unsigned r;
		if (sscanf(line, "call %lf %31s %31s %lf %d", &t, k, res, &dur, &tmo) == 5) {
			int i = strcmp(k, "persist") == 0 ? 0 :
				strcmp(k, "reconnect") == 0 ? 1 :
				strcmp(k, "new") == 0 ? 2 : -1;
			if (i < 0)
				continue;
			bool ok = strcmp(res, "0") == 0;
			if (i == 0) {
				persists++;
				persist_fail += !ok;
				/* a success that took most of its timeout: what a
				 * quorum must hide */
				if (ok && tmo > 0 && dur > 0.9 * tmo)
					slow_ok++;
				if (ok && dur > longest_ok)
					longest_ok = dur;
			} else if (i == 1) {
				rcs++;
				if (strcmp(res, "AGAIN") == 0)
					rc_again++;
				else
					rc_fail += !ok;
			}
			if (dur > longest[i]) {
				longest[i] = dur;
				longest_tmo[i] = tmo;
			}
			/* timeout -1: a call without an overall limit */
			if (tmo >= 0 && dur > tmo + slack) {
				hangs++;
				printf("HANG: %s at %.3f took %.0f ms (timeout %d ms + %.0f ms slack), result %s\n",
						k, t, dur, tmo, slack, res);
			}
		} else if (sscanf(line, "state %lf %u %31s %31s %31s", &t, &r, a, b, cause) == 5) {
			struct state_ev *s = vec_push(&states);
			s->t = t;
			s->r = r;
			s->failed = strcmp(b, "failed") == 0;
			s->in_sync = strcmp(b, "in_sync") == 0;
		} else if (sscanf(line, "idle %lf %lf", &t, &t2) == 2) {
			struct win *w = vec_push(&idles);
			w->a = t;
			w->b = t2;
		} else if (sscanf(line, "stop %lf %llu", &t, &acked) == 2) {
			t_stop = t;
		} else if (sscanf(line, "heal %lf %31s %lf", &t, res, &dur) == 3) {
			heal_final = dur;
			heal_ok = strcmp(res, "ok") == 0;
		}
	}
	fclose(e);
	while (fgets(line, sizeof(line), f)) {
		struct fault x;
		if (sscanf(line, "fault %15s %u %lf %lf", x.kind, &x.r, &x.start, &x.end) == 4)
			*(struct fault *)vec_push(&faults) = x;
	}
	fclose(f);
	if (hp != NULL) {
		/* the acknowledged records are the history's (a writer killed
		 * with SIGKILL logs no "stop" line) */
		FILE *h = fopen(hp, "r");
		if (h == NULL) {
			fprintf(stderr, "rig-check: %s: %s\n", hp, strerror(errno));
			return 2;
		}
		acked = 0;
		while (fgets(line, sizeof(line), h))
			acked++;
		fclose(h);
	}
	struct fault *fa = faults.p;
	qsort(fa, faults.n, sizeof(*fa), cmp_fault);
	struct state_ev *se = states.p;
	struct win *iw = idles.p;

	/* the kinds, in order of first appearance (the tcp nemesis: kill,
	 * stop, link, drop; the verbs one: kill, stop, partition, delay, loss) */
	enum { NK = 8 };
	char fk[NK][16];
	int nk = 0;
	for (size_t i = 0; i < faults.n; i++) {
		int j;
		for (j = 0; j < nk; j++)
			if (strcmp(fk[j], fa[i].kind) == 0)
				break;
		if (j == nk && nk < NK)
			snprintf(fk[nk++], sizeof(fk[0]), "%s", fa[i].kind);
	}
	unsigned long long by_kind[NK] = { 0 }, undetected[NK] = { 0 },
		unmeasured = 0;
	struct vec det_idle = { .sz = sizeof(double) }, det_load = { .sz = sizeof(double) };
	struct vec healv = { .sz = sizeof(double) };
	struct vec det_kind[NK];
	for (int i = 0; i < NK; i++)
		det_kind[i] = (struct vec){ .sz = sizeof(double) };
	unsigned long long overlaps = 0;
	double worst = -1;
	size_t worst_i = 0;
	bool worst_idle = false;
	for (size_t i = 0; i < faults.n; i++) {
		struct fault *x = &fa[i];
		int ki = -1;
		for (int j = 0; j < nk; j++)
			if (strcmp(x->kind, fk[j]) == 0)
				ki = j;
		if (ki >= 0)
			by_kind[ki]++;
		if (x->start > t_stop || ki < 0)
			continue;
		/* two faults on the same replica at once (verbs: a link
		 * fault and a target's): which one a failure belongs to is
		 * not known, neither is measured */
		bool overlapped = false;
		for (size_t j = 0; j < faults.n; j++)
			if (j != i && fa[j].r == x->r && fa[j].start < x->end &&
					x->start < fa[j].end)
				overlapped = true;
		if (overlapped) {
			overlaps++;
			continue;
		}
		/* the next fault on the same replica that begins after this
		 * one ended bounds what is this one's */
		double next = 1e300;
		for (size_t j = i + 1; j < faults.n; j++)
			if (fa[j].r == x->r && fa[j].start >= x->end) {
				next = fa[j].start;
				break;
			}
		/* in sync when it began? (before the first state line: not) */
		bool in_sync = false;
		for (size_t j = 0; j < states.n && se[j].t <= x->start; j++)
			if (se[j].r == x->r)
				in_sync = se[j].in_sync;
		if (!in_sync) {
			unmeasured++;
			continue;
		}
		double det = -1, healed = -1;
		for (size_t j = 0; j < states.n; j++) {
			if (se[j].r != x->r || se[j].t < x->start)
				continue;
			if (se[j].t >= next)
				break;
			if (det < 0 && se[j].failed)
				det = se[j].t;
			if (det >= 0 && se[j].in_sync && se[j].t >= x->end) {
				healed = se[j].t;
				break;
			}
		}
		if (det < 0) {
			undetected[ki]++;
			continue;
		}
		bool idle = false;
		for (size_t j = 0; j < idles.n; j++)
			if (x->start >= iw[j].a && x->start <= iw[j].b)
				idle = true;
		*(double *)vec_push(idle ? &det_idle : &det_load) = det - x->start;
		if (det - x->start > worst) {
			worst = det - x->start;
			worst_i = i;
			worst_idle = idle;
		}
		*(double *)vec_push(&det_kind[ki]) = det - x->start;
		if (healed >= 0)
			*(double *)vec_push(&healv) = healed - x->end;
	}
	unsigned long long total = 0;
	printf("faults by kind:");
	for (int j = 0; j < nk; j++) {
		printf(" %s %llu", fk[j], by_kind[j]);
		total += by_kind[j];
	}
	printf(" (total %llu)\n", total);
	printf("records acknowledged: %llu\n", acked);
	printf("calls: %llu persists, %llu failed; %llu reconnects, %llu failed, %llu in back-off (AGAIN)\n",
			persists, persist_fail, rcs, rc_fail, rc_again);
	printf("successful persists: longest %.0f ms; %llu took over 90%% of their timeout\n",
			longest_ok, slow_ok);
	for (int i = 0; i < 3; i++)
		if (longest_tmo[i] >= 0)
			printf("longest %-9s %.0f ms (its timeout %.0f ms)\n", kinds[i],
					longest[i], longest_tmo[i]);
		else
			printf("longest %-9s %.0f ms (no overall limit: attach + full resync)\n",
					kinds[i], longest[i]);
	printf("hangs (a call longer than its timeout + %.0f ms): %llu\n", slack, hangs);
	printf("detection (fault start to the replica's first \"failed\"):\n");
	print_dist("idle (writer pausing):", &det_idle);
	print_dist("under load:", &det_load);
	for (int j = 0; j < nk; j++) {
		char t[32];
		snprintf(t, sizeof(t), "%.16s:", fk[j]);
		print_dist(t, &det_kind[j]);
	}
	printf("  undetected (the replica never failed; a fault shorter than the timeout need not be):");
	for (int j = 0; j < nk; j++)
		printf(" %s %llu", fk[j], undetected[j]);
	printf("\n  not measured (replica not in sync when the fault began): %llu\n", unmeasured);
	printf("  not measured (overlapping another fault on the same replica): %llu\n", overlaps);
	if (worst >= 0)
		printf("  slowest: %s on replica %u at %.3f (%s, lasting %.0f ms): %.0f ms\n",
				fa[worst_i].kind, fa[worst_i].r, fa[worst_i].start,
				worst_idle ? "idle" : "under load",
				fa[worst_i].end - fa[worst_i].start, worst);
	printf("heal (fault end to \"in sync\"):\n");
	print_dist("detected faults:", &healv);
	if (heal_final >= 0)
		printf("final heal: %s in %.0f ms\n", heal_ok ? "all in sync" : "NOT in sync", heal_final);
	double dmax_i = det_idle.n ? ((double *)det_idle.p)[det_idle.n - 1] : 0;
	double dmax_l = det_load.n ? ((double *)det_load.p)[det_load.n - 1] : 0;
	double hmax = healv.n ? ((double *)healv.p)[healv.n - 1] : 0;
	printf("figures: slow_successes=%llu longest_success_ms=%.0f\n", slow_ok, longest_ok);
	printf("figures: faults=%llu acked=%llu persist_failed=%llu hangs=%llu longest_persist_ms=%.0f longest_reconnect_ms=%.0f det_idle_max_ms=%.0f det_load_max_ms=%.0f heal_max_ms=%.0f\n",
			total, acked, persist_fail, hangs, longest[0], longest[1],
			dmax_i, dmax_l, hmax);
	free(states.p);
	free(faults.p);
	free(idles.p);
	free(det_idle.p);
	free(det_load.p);
	free(healv.p);
	for (int j = 0; j < NK; j++)
		free(det_kind[j].p);
	return hangs ? 1 : 0;
}

/* -------------------------------------------------------------- order */

struct ack { double t; unsigned long long seq, epoch; };

static int
cmp_ack_t(const void *a, const void *b)
{
	const struct ack *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int
cmd_order(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "history", required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	struct vec acks = { .sz = sizeof(struct ack) };
	unsigned long long bad_lines = 0;
	unsigned files = 0;
	int c;
	while ((c = getopt_long(argc, argv, "H:", opts, NULL)) != -1) {
		if (c != 'H')
			return 2;
		FILE *h = fopen(optarg, "r");
		if (h == NULL) {
			fprintf(stderr, "rig-check: %s: %s\n", optarg, strerror(errno));
			return 2;
		}
		files++;
		char line[256];
		while (fgets(line, sizeof(line), h)) {
			struct ack a = { 0 };
			if (sscanf(line, "%llu %*u %lf %llu", &a.seq, &a.t, &a.epoch) < 2 ||
					a.seq == 0) {
				if (bad_lines++ < 5)
					printf("bad history line in %s: %s", optarg, line);
				continue;
			}
			*(struct ack *)vec_push(&acks) = a;
		}
		fclose(h);
	}
	if (files == 0) {
		fprintf(stderr, "usage: rig-check order --history FILE [--history FILE ...]\n");
		return 2;
	}
	struct ack *v = acks.p;
	size_t n = acks.n;
	qsort(v, n, sizeof(*v), cmp_ack_t);
	/* per epoch, in the order of their first acknowledgement */
	enum { MAXE = 256 };
	struct { unsigned long long epoch, count; double first, last; } ep[MAXE];
	unsigned ne = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned e = 0;
		while (e < ne && ep[e].epoch != v[i].epoch)
			e++;
		if (e == ne) {
			if (ne == MAXE) {
				fprintf(stderr, "rig-check: more than %d epochs\n", MAXE);
				return 2;
			}
			ep[ne].epoch = v[i].epoch;
			ep[ne].count = 0;
			ep[ne].first = v[i].t;
			ne++;
		}
		ep[e].count++;
		ep[e].last = v[i].t;
	}
	for (unsigned e = 0; e < ne; e++)
		printf("epoch %llu: %llu records acknowledged, the first at %.3f, the last at %.3f\n",
				ep[e].epoch, ep[e].count, ep[e].first, ep[e].last);
	/* walking the acknowledgements in time: the newest epoch seen so far
	 * (and where it was first), and every one of an older epoch after it */
	unsigned long long violations = 0, newest = 0;
	const struct ack *newest_first = NULL;
	for (size_t i = 0; i < n; i++) {
		if (newest_first == NULL || v[i].epoch > newest) {
			newest = v[i].epoch;
			newest_first = &v[i];
		} else if (v[i].epoch < newest && v[i].t > newest_first->t) {
			if (violations++ < 20)
				printf("VIOLATION epoch %llu seq %llu acknowledged at %.3f, after epoch %llu's first (seq %llu at %.3f)\n",
						v[i].epoch, v[i].seq, v[i].t, newest,
						newest_first->seq, newest_first->t);
		}
	}
	printf("rig-check order: %zu acknowledged records in %u histories, %u epochs; violations %llu; bad history lines %llu\n",
			n, files, ne, violations, bad_lines);
	free(acks.p);
	return violations || bad_lines ? 1 : 0;
}

int
main(int argc, char *argv[])
{
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	if (argc >= 2 && strcmp(argv[1], "history") == 0)
		return cmd_history(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "report") == 0)
		return cmd_report(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "order") == 0)
		return cmd_order(argc - 1, argv + 1);
	fprintf(stderr, "usage: rig-check history --history FILE --source LOG --replica FILE [...] [--quorum K]\n"
			"       rig-check report --events FILE --faults FILE [--history FILE] [--slack MS]\n"
			"       rig-check order --history FILE [--history FILE ...]\n");
	return 2;
}
