/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_export.c -- pmrep export: a copy's data area to a plain file, for
 * the tools that know nothing of pmrep (a database's own checker, a
 * backup), refused when the copy is not known to be complete.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmrep/repl.h>

#include "pmrep_cli.h"

const char help_export[] =
	"  pmrep export LOG OUT [--json] [-v]\n"
	"      copy the data area of LOG (a pmrep log or replica file, or device\n"
	"      DAX, on this host) to OUT, a new plain file (never overwritten:\n"
	"      refused when it exists), then fsync it; print the copy's\n"
	"      position (which writer's persists it holds and how far). Refused\n"
	"      (exit 1) when LOG is not known to be complete: never claimed, not\n"
	"      vouching for what it may hold (pmrep_position_decide of it alone:\n"
	"      its writer's run neither closed cleanly nor recorded positions\n"
	"      per step, or it was being resynced), incomplete (a catch-up that\n"
	"      did not finish) or removed from its set. LOG is read under a shared lock: a running pmrep-target or\n"
	"      application holding it refuses the export (stop it first). Says\n"
	"      nothing of whether another copy is newer: pmrep compare does.\n"
	"      (A pmrep-sqlite log's data area is its volume, not a database\n"
	"      file: SQLite's .backup gives one, docs/DATABASES.md.)\n"
	"      Exit 0 exported, 1 refused, 2 usage error or failure (I/O).\n"
	"      --json: one object: log, out, bytes, and the position as\n"
	"      status --json prints it.\n";

static int
copy_out(int in, const struct stat *st, const struct pmrep_replica_info *info,
		int out)
{
	size_t off = (size_t)info->data_offset, len = (size_t)info->data_size;
	if (S_ISCHR(st->st_mode)) {
		/* device DAX: no read(2); through a read-only mapping */
		void *p = mmap(NULL, off + len, PROT_READ, MAP_SHARED, in, 0);
		if (p == MAP_FAILED)
			return -1;
		const char *src = (const char *)p + off;
		size_t done = 0;
		while (done < len) {
			ssize_t w = write(out, src + done, len - done);
			if (w <= 0) {
				munmap(p, off + len);
				return -1;
			}
			done += (size_t)w;
		}
		munmap(p, off + len);
		return 0;
	}
	static char buf[1 << 20];
	size_t done = 0;
	while (done < len) {
		size_t want = len - done < sizeof(buf) ? len - done : sizeof(buf);
		ssize_t r = pread(in, buf, want, (off_t)(off + done));
		if (r <= 0) {
			if (r == 0)
				errno = EIO;	/* shorter than its header says */
			return -1;
		}
		size_t w0 = 0;
		while (w0 < (size_t)r) {
			ssize_t w = write(out, buf + w0, (size_t)r - w0);
			if (w <= 0)
				return -1;
			w0 += (size_t)w;
		}
		done += (size_t)r;
	}
	return 0;
}

int
cmd_export(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	int c;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'J': json = true; break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_export);
		default: return usage_error("export: %s", "unknown option");
		}
	}
	if (argc - optind != 2)
		return usage_error("export: %s", "expected LOG OUT");
	const char *log = argv[optind], *outp = argv[optind + 1];
	log_setup();
	int in = open(log, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		fprintf(stderr, "pmrep export: %s: %s\n", log, strerror(errno));
		return EX_ERR;
	}
	/* no writer while we read: a target or a mirror holds LOCK_EX */
	if (flock(in, LOCK_SH | LOCK_NB) != 0) {
		fprintf(stderr, "pmrep export: %s is in use (a pmrep-target serves it, or an application has it open): stop it first\n",
				log);
		close(in);
		return EX_ERR;
	}
	struct pmrep_replica_info info;
	struct pmrep_replica_position pos;
	struct pmrep_replica_membership mb;
	int ret = pmrep_replica_read_info(log, &info);
	if (ret == 0)
		ret = pmrep_replica_read_position(log, &pos);
	if (ret == 0)
		ret = pmrep_replica_read_membership(log, &mb);
	if (ret) {
		report("export", log, ret);
		close(in);
		return ret == PMREP_E_MALFORMED || ret == PMREP_E_RANGE ? EX_NO : EX_ERR;
	}
	const char *why = NULL;
	if (pos.flags & PMREP_POSITION_F_FRESH)
		why = "it was never claimed by a mirror: it holds no data of a set";
	else if (pos.flags & PMREP_POSITION_F_INCOMPLETE)
		why = "it is incomplete: a catch-up from a more current copy did not finish (re-run the promotion)";
	else if (pos.flags & PMREP_POSITION_F_REMOVED)
		why = "it was removed from its set: the set went on without it";
	else {
		/* the one decision, of this copy alone: does it vouch for
		 * everything it may hold? */
		unsigned best = 0;
		if (pmrep_position_decide(&pos, 1, &best, NULL, NULL) != 0)
			why = "it does not vouch for what it may hold (its writer's run neither closed cleanly nor recorded positions per step, or it was being resynced): some of its regions may be older than others";
	}
	if (why != NULL) {
		fprintf(stderr, "pmrep export: %s: refused: %s\n", log, why);
		close(in);
		return EX_NO;
	}
	struct stat st;
	int out = -1;
	if (fstat(in, &st) == 0)
		out = open(outp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0) {
		fprintf(stderr, "pmrep export: %s: %s\n", outp, strerror(errno));
		close(in);
		return EX_ERR;
	}
	if (copy_out(in, &st, &info, out) != 0 || fsync(out) != 0) {
		fprintf(stderr, "pmrep export: %s -> %s: %s (the partial %s removed)\n",
				log, outp, strerror(errno), outp);
		close(out);
		unlink(outp);
		close(in);
		return EX_ERR;
	}
	close(out);
	close(in);
	if (json) {
		fputs("{\"log\":", stdout);
		json_str(log);
		fputs(",\"out\":", stdout);
		json_str(outp);
		printf(",\"bytes\":%llu,\"info\":", (unsigned long long)info.data_size);
		json_info(log, false, &info, &mb, &pos);
		fputs("}\n", stdout);
	} else {
		printf("%s: %llu data bytes exported to %s\n", log,
				(unsigned long long)info.data_size, outp);
		printf("position: generation %llu, writer %016llx, sequence %llu:%llu (epoch:step)\n",
				(unsigned long long)pos.generation,
				(unsigned long long)pos.owner,
				(unsigned long long)(pos.seq >> 40),
				(unsigned long long)(pos.seq & ((1ULL << 40) - 1)));
	}
	return EX_OK;
}
