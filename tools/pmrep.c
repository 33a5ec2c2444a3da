/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep -- the command line of pmrep's replication layer:
 *   pmrep verify SOURCE REPLICA [--range BYTES]
 *   pmrep status REPLICA_FILE | ADDR:PORT --key-file F [--timeout MS] [--json]
 *   pmrep compare REPLICA... [--key-file F] [--json]
 *   pmrep export LOG OUT [--json]
 *   pmrep rank SELF [REPLICA...] [--key-file F] [--set-size N] [--quorum K]
 *   pmrep promote LOG [--replica ADDR:PORT...] [--key-file F] [--set-size N]
 *                 [--quorum K] [--dry-run] [--force] [--wait-sync] [--json]
 *   pmrep recover --file LOCAL --replica ADDR:PORT --key-file F
 *                 --uuid HEX --generation N [--allow-inconsistent]
 *   pmrep keygen FILE [--key-id N] [--bytes N]
 *   pmrep status --control SOCKET [--json | --metrics] | pmrep watch SOCKET
 *   pmrep [COMMAND] --help | pmrep --version
 * Errors are reported as one line each; -v (any command) also shows the
 * library's log lines (PMREP_LOG_LEVEL, when set, decides instead).
 * Exit codes (every command): 0 success (verify: identical), 1 a negative
 * answer (verify: source and replica differ, or REPLICA is not a valid
 * replica; status: the file is not a valid replica; recover: the replica
 * was refused as a source), 2 usage error or failure (I/O, connection,
 * authentication).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "pmrep_cli.h"
#include "size_parse.h"
#include "target_ctl.h"

#ifndef PMREP_VERSION_STRING
#define PMREP_VERSION_STRING "unknown"
#endif

bool verbose;
/* --insecure-key-file: PMREP_KEY_FILE_INSECURE_OK */
unsigned key_flags;

static const char help_verify[] =
	"  pmrep verify SOURCE REPLICA [--range BYTES] [-v]\n"
	"      compare a mirror's source file with a replica file (on this host):\n"
	"      SOURCE a plain file (whole) or a pmrep log (its data area),\n"
	"      checksums range by range (--range: bytes per range, 1 .. 1G, K/M/G\n"
	"      suffixes; default 1M). Prints the first differing range and how\n"
	"      many differ. Exit 0 identical, 1 different or REPLICA is not a\n"
	"      valid replica, 2 usage error or failure (e.g. a missing file).\n"
	"      A device DAX (no read(2)) is read through its mapping: when SOURCE\n"
	"      or REPLICA is a character device both are mapped whole (also for\n"
	"      regular files with PMREP_VERIFY_MMAP=1; -v says which way).\n";
static const char help_status[] =
	"  pmrep status REPLICA_FILE [--json] [-v]\n"
	"  pmrep status ADDR:PORT --key-file FILE [--timeout MS] [--no-tls]\n"
	"               [--json] [-v]\n"
	"      print a replica's header: replica set UUID, generation, data size,\n"
	"      consistent mark, replica id, owner (the primary id of the last\n"
	"      committed attach), header slot sequence, last persist sequence,\n"
	"      the position (the writer whose persists it holds and how far, the\n"
	"      last run that claimed it; docs/PROTOCOL.md \"Position\") and the\n"
	"      recorded membership.\n"
	"      REPLICA_FILE: read from the file on the replica's host. ADDR:PORT:\n"
	"      asked of the pmrep-target serving it, authenticated with the key in\n"
	"      FILE, read-only: the target writes nothing for it, and a mirror\n"
	"      attached there goes on undisturbed. ADDR:PORT/NAME: the replica\n"
	"      NAME of a pmrep-target --config serving several on that port.\n"
	"      --timeout: milliseconds for the query (default 10000). Either way\n"
	"      nothing is written.\n"
	"      Exit 0 a valid replica (whatever its mark), 1 REPLICA_FILE is not a\n"
	"      valid replica, 2 usage error or failure (e.g. a missing file; over\n"
	"      the network: connection, authentication, timeout). --no-tls: tcp\n"
	"      without TLS, for a target run with --no-tls (default: TLS 1.3 with a\n"
	"      PSK derived from the key; each end refuses the other kind).\n"
	"      --json: one JSON object on stdout instead (replica, queried, valid,\n"
	"      uuid, claimed, generation, data_size, data_offset, consistent,\n"
	"      flags, replica_id, has_replica_id, owner, header_seq,\n"
	"      last_persist_seq; not a valid replica: valid false, code, error,\n"
	"      message); errors stay on stderr; the exit codes are the same.\n"
	"  pmrep status --control SOCKET [--json | --metrics]\n"
	"      ask a running pmrep-target on its control socket (pmrep-target\n"
	"      --control SOCKET; read-only): its replica, its sessions (id, peer,\n"
	"      state, generation, GPSPM persists and their latency percentiles as\n"
	"      the target sees them). --json: one JSON object on one line (target,\n"
	"      replicas, sessions). --metrics: its metrics in the Prometheus text\n"
	"      format 0.0.4 (docs/METRICS.md; what pmrep-target --metrics-file\n"
	"      writes), printed only when the reply is complete. Exit 0, 2 the\n"
	"      socket does not answer (or, --metrics, the reply is cut).\n";
static const char help_watch[] =
	"  pmrep watch SOCKET\n"
	"      follow a running pmrep-target's events on its control socket: one\n"
	"      JSON object per line, first the current state (\"event\":\"exists\"\n"
	"      for the target, the replica, each session, then an end mark with\n"
	"      \"object\":\"-\"), then opened / authenticated / state / generation /\n"
	"      closed as they happen, until the target stops cleanly (a\n"
	"      \"stopped\" event, exit 0). When the socket closes otherwise (the\n"
	"      target killed or restarted, or this client dropped) it connects\n"
	"      again every second and prints the current state again. Exit 2:\n"
	"      the socket does not answer at the start.\n";
static const char help_recover[] =
	"  pmrep recover --file LOCAL --replica ADDR:PORT [--replica ...]...\n"
	"                --key-file FILE --uuid HEX --generation N\n"
	"                [--allow-inconsistent] [--force-stale] [--timeout MS]\n"
	"                [--no-tls] [-v]\n"
	"      rebuild LOCAL (an existing file of the replica's data size) from a\n"
	"      replica: read all its data, then persist. The replica must belong to\n"
	"      replica set UUID (32 hex digits, see pmrep status) and hold exactly\n"
	"      generation N (older or newer: refused), and be marked consistent\n"
	"      unless --allow-inconsistent. A consistent mark vouches for that\n"
	"      copy's position only: under a quorum k of n (as its header records)\n"
	"      name n - k + 1 copies of the set with --replica; they are asked\n"
	"      read-only, ranked by position, and the most current is the source\n"
	"      (refused when fewer answer, or when which one is newest cannot be\n"
	"      told). --force-stale: recover from the first --replica although a\n"
	"      later run may have completed persists without it (those are lost).\n"
	"      --timeout: milliseconds for the whole recovery (default 60000).\n"
	"      Exit 0 recovered, 1 the replica was refused as a source, 2 usage\n"
	"      error or failure (I/O, connection, authentication). --no-tls: as\n"
	"      for status.\n";

static const char help_keygen[] =
	"  pmrep keygen FILE [--key-id N] [--bytes N] [-v]\n"
	"      write a new pre-shared key to FILE (created, mode 0600; an existing\n"
	"      FILE or a link there is never overwritten): N random bytes (32 ..\n"
	"      64, default 32) as one checked line \"pmrep-key 1 ID HEX CHECK\" that\n"
	"      --key-file reads (a truncated or changed file is refused). --key-id:\n"
	"      the key's id (0 .. 4294967295, default 1): a target holds several\n"
	"      keys by id for a rotation (docs/DESIGN.md \"Keys\"). Key files must\n"
	"      stay mode 0600 and owned by their user: --key-file refuses others\n"
	"      unless --insecure-key-file. Exit 0 written, 2 usage error or\n"
	"      failure (FILE exists, I/O).\n";

static const char help_log_create[] =
	"  pmrep log-create LOG [SIZE] [--from PLAIN] [-v]\n"
	"      create LOG, a pmrep log (the layout of every node: a 4 KiB header,\n"
	"      then SIZE data bytes, K/M/G/T suffixes) that an application maps in\n"
	"      place (pmrep_log_open), mirrors from, and that pmrep-target serves as\n"
	"      a replica -- so that after a failover a replica's file is the new\n"
	"      primary's log. --from: a plain log file mapped with pmrep_pmem_open\n"
	"      (no header) converted: its bytes copied into the data area (SIZE,\n"
	"      if given, must be its size), then persisted. LOG must not exist.\n"
	"      Exit 0 created, 2 usage error or failure (LOG exists, I/O).\n";

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: pmrep COMMAND [options]\n"
		"       pmrep COMMAND --help | pmrep --help | pmrep --version\n"
		"\n"
		"%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n"
		"  --insecure-key-file (status, recover, compare, promote): accept a key file others may\n"
		"  read or that another user owns (a warning instead of a refusal).\n"
		"  -v, --verbose (any command): also print the library's log lines\n"
		"  (by default each error is one line from pmrep; PMREP_LOG_LEVEL=0..5,\n"
		"  when set, decides instead). PMREP_PROVIDER=tcp|verbs forces a provider.\n"
		"\n"
		"exit codes: 0 success (verify: identical); 1 a negative answer (verify:\n"
		"different, or REPLICA is not a valid replica; status: not a valid\n"
		"replica; recover: the replica was refused as a source; promote: refused,\n"
		"as not the most current or unable to fence); 2 usage error or failure\n"
		"(I/O, connection, authentication).\n",
		help_verify, help_status, help_recover, help_keygen,
		help_log_create, help_export, help_compare, help_rank, help_promote,
		help_watch);
}

/* one command's help */
int
cmd_help(const char *help)
{
	printf("usage:\n%s", help);
	return 0;
}

/* the library's log threshold: errors are reported by pmrep itself, one
 * line each; -v adds the library's lines; PMREP_LOG_LEVEL overrides both */
void
log_setup(void)
{
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(verbose ? PMREP_LOG_INFO : PMREP_LOG_DISABLED);
}

/* a failed library call on `path`, one line: "No such file or directory:
 * PATH" for an OS error, else pmrep's error and its message */
void
report(const char *cmd, const char *path, int ret)
{
	int err = pmrep_err_errno();
	if (ret == PMREP_E_PROVIDER && err != 0)
		fprintf(stderr, "pmrep %s: %s: %s\n", cmd, strerror(err), path);
	else
		fprintf(stderr, "pmrep %s: %s: %s (%s)\n", cmd, path,
				pmrep_err_to_str(ret), pmrep_err_msg());
}

int
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "pmrep: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(pmrep --help for usage)\n");
	return EX_ERR;
}

/* digits with an optional K / M / G suffix, 1 .. max */
int
parse_size(const char *s, unsigned long long max, unsigned long long *out)
{
	uint64_t v;
	if (tool_parse_size(s, &v) != 0 || v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* digits only (no suffix), 1 .. max: a count, milliseconds, a generation */
int
parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
	if (strpbrk(s, "kKmMgG") != NULL)
		return -1;
	return parse_size(s, max, out);
}

/* --quorum: "all" (0) or a count 1 .. the most replicas */
int
parse_quorum(const char *s, unsigned long long *out)
{
	if (strcmp(s, "all") == 0) {
		*out = 0;
		return 0;
	}
	return parse_count(s, PMREP_MIRROR_MAX_REPLICAS + 1, out);
}

void
uuid_str(const uint8_t *uuid, char out[2 * PMREP_UUID_SIZE + 1])
{
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", uuid[i]);
}

static int
uuid_parse(const char *s, uint8_t *uuid)
{
	size_t j = 0;
	for (size_t i = 0; s[i] != '\0'; i++) {
		if (s[i] == '-')
			continue;
		int v;
		char c = s[i];
		if (c >= '0' && c <= '9') v = c - '0';
		else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
		else return -1;
		if (j >= 2 * PMREP_UUID_SIZE)
			return -1;
		if (j % 2 == 0)
			uuid[j / 2] = (uint8_t)(v << 4);
		else
			uuid[j / 2] |= (uint8_t)v;
		j++;
	}
	return j == 2 * PMREP_UUID_SIZE ? 0 : -1;
}

/* ------------------------------------------------------------- verify */

/* FNV-1a, 64 bit */
static uint64_t
fnv1a(const uint8_t *p, size_t len, uint64_t h)
{
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
#define FNV0 0xcbf29ce484222325ull

static int
read_full(int fd, uint8_t *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t n = pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int
cmd_verify(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "range", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long range = 1 << 20;
	int c;
	while ((c = getopt_long(argc, argv, "r:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (parse_size(optarg, 1ull << 30, &range))
				return usage_error("verify: bad --range '%s' (1 .. 1G bytes)", optarg);
			break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_verify);
		default: return usage_error("verify: %s", "unknown option");
		}
	}
	if (argc - optind > 2)
		return usage_error("verify: unexpected argument '%s' (expected SOURCE REPLICA)",
				argv[optind + 2]);
	if (argc - optind != 2)
		return usage_error("verify: %s", "expected SOURCE REPLICA");
	const char *source = argv[optind], *replica = argv[optind + 1];
	log_setup();

	struct pmrep_replica_info info;
	int ret = pmrep_replica_read_info(replica, &info);
	if (ret == PMREP_E_MALFORMED || ret == PMREP_E_RANGE) {
		/* a negative answer, as pmrep status gives it */
		printf("%s: not a valid replica: %s (%s)\n", replica,
				pmrep_err_to_str(ret), pmrep_err_msg());
		return EX_NO;
	}
	if (ret) {
		report("verify", replica, ret);
		return EX_ERR;
	}
	int rc = EX_ERR;
	uint8_t *a = NULL, *b = NULL;
	struct pmrep_pmem *src_map = NULL, *rep_map = NULL;
	int src = open(source, O_RDONLY | O_CLOEXEC);
	int rep = open(replica, O_RDONLY | O_CLOEXEC);
	struct stat st, rst;
	if (src < 0 || rep < 0 || fstat(src, &st) != 0 || fstat(rep, &rst) != 0) {
		fprintf(stderr, "pmrep verify: %s: %s\n", strerror(errno),
				src < 0 ? source : replica);
		goto out;
	}
	/* device DAX has no read(2), only mmap: when either is a character
	 * device both are read through their whole mappings (pmrep_pmem_open,
	 * which aligns a device DAX's mapping to the device's alignment);
	 * PMREP_VERIFY_MMAP=1 takes that path for regular files too */
	const char *env = getenv("PMREP_VERIFY_MMAP");
	bool map = S_ISCHR(st.st_mode) || S_ISCHR(rst.st_mode) ||
		(env != NULL && strcmp(env, "1") == 0);
	if (map) {
		ret = pmrep_pmem_open(source, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
				&src_map);
		if (ret) {
			report("verify", source, ret);
			goto out;
		}
		ret = pmrep_pmem_open(replica, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
				&rep_map);
		if (ret) {
			report("verify", replica, ret);
			goto out;
		}
		if (pmrep_pmem_get_size(rep_map) < info.data_offset + info.data_size) {
			fprintf(stderr, "pmrep verify: %s: %zu bytes mapped, its header says %llu\n",
					replica, pmrep_pmem_get_size(rep_map),
					(unsigned long long)(info.data_offset + info.data_size));
			goto out;
		}
	}
	/* a pmrep log (pmrep_log_open: the replica layout) is compared by
	 * its data area, a plain file (or device) whole */
	uint64_t src_off = 0, src_size = map ? pmrep_pmem_get_size(src_map) :
		(uint64_t)st.st_size;
	struct pmrep_replica_info sinfo;
	enum pmrep_log_level lvl = pmrep_log_get_threshold();
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);	/* plain: not an error */
	if ((S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)) &&
			pmrep_replica_read_info(source, &sinfo) == 0) {
		src_off = sinfo.data_offset;
		src_size = sinfo.data_size;
	}
	pmrep_log_set_threshold(lvl);
	if (verbose)
		fprintf(stderr, "pmrep verify: source %s: %s, read %s\n", source,
				src_off ? "a pmrep log: its data area" : "a plain file",
				map ? "through mmap (device DAX or PMREP_VERIFY_MMAP=1)" :
				"with pread");
	if (src_size != info.data_size) {
		printf("DIFFERENT: source has %llu %sbytes, replica data area %llu\n",
				(unsigned long long)src_size, src_off ? "data " : "",
				(unsigned long long)info.data_size);
		rc = EX_NO;
		goto out;
	}
	if (map && src_off + src_size > pmrep_pmem_get_size(src_map)) {
		fprintf(stderr, "pmrep verify: %s: %zu bytes mapped, its header says %llu\n",
				source, pmrep_pmem_get_size(src_map),
				(unsigned long long)(src_off + src_size));
		goto out;
	}
	if (!map) {
		a = malloc(range);
		b = malloc(range);
		if (a == NULL || b == NULL) {
			fprintf(stderr, "pmrep verify: out of memory\n");
			goto out;
		}
	}
	uint64_t total = FNV0;
	unsigned long long ranges = 0, bad = 0;
	for (uint64_t off = 0; off < info.data_size; off += range) {
		size_t len = info.data_size - off < range ?
			(size_t)(info.data_size - off) : (size_t)range;
		const uint8_t *pa = a, *pb = b;
		if (map) {
			pa = (const uint8_t *)pmrep_pmem_get_address(src_map) +
				src_off + off;
			pb = (const uint8_t *)pmrep_pmem_get_address(rep_map) +
				info.data_offset + off;
		} else if (read_full(src, a, len, (off_t)(src_off + off)) ||
				read_full(rep, b, len, (off_t)(info.data_offset + off))) {
			fprintf(stderr, "pmrep verify: read failed at %llu\n",
					(unsigned long long)off);
			goto out;
		}
		uint64_t ha = fnv1a(pa, len, FNV0);
		uint64_t hb = fnv1a(pb, len, FNV0);
		total = fnv1a(pa, len, total);
		ranges++;
		if (ha != hb || memcmp(pa, pb, len) != 0) {
			if (bad++ == 0)
				printf("first differing range: %llu (bytes %llu..%llu): source %016llx replica %016llx\n",
						ranges - 1, (unsigned long long)off,
						(unsigned long long)(off + len - 1),
						(unsigned long long)ha, (unsigned long long)hb);
		}
	}
	char u[2 * PMREP_UUID_SIZE + 1];
	uuid_str(info.uuid, u);
	printf("replica set %s, generation %llu, %s\n", u,
			(unsigned long long)info.generation,
			info.flags & PMREP_REPLICA_F_CONSISTENT ?
				"marked consistent" : "not marked consistent");
	if (bad) {
		printf("DIFFERENT: %llu of %llu %s of %llu bytes %s\n",
				bad, ranges, ranges == 1 ? "range" : "ranges",
				range, bad == 1 ? "differs" : "differ");
		rc = EX_NO;
	} else {
		printf("IDENTICAL: %llu %s of %llu bytes, %llu bytes, checksum %016llx on both\n",
				ranges, ranges == 1 ? "range" : "ranges", range,
				(unsigned long long)info.data_size,
				(unsigned long long)total);
		rc = EX_OK;
	}
out:
	free(a);
	free(b);
	if (src_map != NULL)
		(void) pmrep_pmem_close(&src_map);
	if (rep_map != NULL)
		(void) pmrep_pmem_close(&rep_map);
	if (src >= 0)
		close(src);
	if (rep >= 0)
		close(rep);
	return rc;
}

/* ------------------------------------------------------------- status */

/* a replica header's fields, one a line; `where` names the replica
 * (its file, or ADDR:PORT with how it was asked) */
/* a persist sequence as epoch:step */
#define PSN_EPOCH(p) ((unsigned long long)((p) >> 40))
#define PSN_STEP(p) ((unsigned long long)((p) & ((1ull << 40) - 1)))

/* what the position's flags say, for the text */
static void
print_position(const struct pmrep_replica_position *pos)
{
	if (pos == NULL)
		return;
	if (pos->generation == 0 && pos->owner == 0)
		printf("position:    none recorded (sequence %llu:%llu)\n",
				PSN_EPOCH(pos->seq), PSN_STEP(pos->seq));
	else
		printf("position:    generation %llu, writer %016llx, sequence %llu:%llu (epoch:step)\n",
				(unsigned long long)pos->generation,
				(unsigned long long)pos->owner,
				PSN_EPOCH(pos->seq), PSN_STEP(pos->seq));
	if (pos->run_generation != 0)
		printf("last run:    generation %llu, writer %016llx, from epoch %llu%s%s%s%s\n",
				(unsigned long long)pos->run_generation,
				(unsigned long long)pos->run_owner,
				PSN_EPOCH(pos->run_floor),
				pos->flags & PMREP_POSITION_F_TRACKED ?
				", positions per step" : ", no per-step positions",
				pos->flags & PMREP_POSITION_F_RUN_CLOSED ?
				", closed cleanly at the position" : "",
				pos->flags & PMREP_POSITION_F_PRIMARY ?
				", a writer's own log" : "",
				pos->flags & PMREP_POSITION_F_INCOMPLETE ?
				", INCOMPLETE (a promotion's catch-up did not finish)" : "");
}

/* the position as a JSON member (no leading comma) */
static void
json_position(const struct pmrep_replica_position *pos)
{
	printf("\"position\":{\"generation\":%llu,\"owner\":\"%016llx\","
			"\"epoch\":%llu,\"step\":%llu,\"run_generation\":%llu,"
			"\"run_owner\":\"%016llx\",\"run_epoch\":%llu,"
			"\"tracked\":%s,\"run_closed\":%s,\"writer_log\":%s,"
			"\"incomplete\":%s}",
			(unsigned long long)pos->generation,
			(unsigned long long)pos->owner, PSN_EPOCH(pos->seq),
			PSN_STEP(pos->seq),
			(unsigned long long)pos->run_generation,
			(unsigned long long)pos->run_owner,
			PSN_EPOCH(pos->run_floor),
			pos->flags & PMREP_POSITION_F_TRACKED ? "true" : "false",
			pos->flags & PMREP_POSITION_F_RUN_CLOSED ? "true" : "false",
			pos->flags & PMREP_POSITION_F_PRIMARY ? "true" : "false",
			pos->flags & PMREP_POSITION_F_INCOMPLETE ? "true" : "false");
}

static void
print_info(const char *where, const struct pmrep_replica_info *info,
		const struct pmrep_replica_membership *mb,
		const struct pmrep_replica_position *pos)
{
	bool claimed = false;
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		claimed |= info->uuid[i] != 0;
	char u[2 * PMREP_UUID_SIZE + 1];
	uuid_str(info->uuid, u);
	printf("replica:     %s\n", where);
	printf("uuid:        %s%s\n", u, claimed ? "" : " (unclaimed: no mirror attached yet)");
	printf("generation:  %llu\n", (unsigned long long)info->generation);
	printf("data size:   %llu bytes (at offset %llu)\n",
			(unsigned long long)info->data_size,
			(unsigned long long)info->data_offset);
	printf("consistent:  %s\n", !claimed ?
			"no (unclaimed: it holds no mirror's data yet)" :
			info->flags & PMREP_REPLICA_F_CONSISTENT ?
			"yes (left by a clean mirror shutdown)" :
			"no (a mirror is attached, or did not shut down cleanly)");
	bool has_id = false;
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		has_id |= info->replica_id[i] != 0;
	char rid[2 * PMREP_UUID_SIZE + 1];
	uuid_str(info->replica_id, rid);
	printf("replica id:  %s%s\n", rid, has_id ? "" :
			" (none yet: a version 1 header; its target draws one)");
	printf("owner:       %016llx%s\n", (unsigned long long)info->owner,
			info->owner ? " (primary id of the last committed attach)" : "");
	if (info->flags & PMREP_REPLICA_F_REMOVED)
		printf("removed:     yes (its primary removed it from the set; a promotion neither counts nor promotes it)\n");
	printf("header seq:  %llu\n", (unsigned long long)info->seq);
	printf("last persist seq: %llu\n",
			(unsigned long long)info->last_persist_seq);
	print_position(pos);
	if (mb == NULL)
		return;
	if (mb->set_size == 0)
		printf("membership:  not recorded\n");
	else
		printf("membership:  %u replicas, quorum %s%u (a promotion fences %u)\n",
				mb->set_size, mb->quorum ? "" : "all = ",
				mb->quorum ? mb->quorum : mb->set_size,
				mb->set_size - (mb->quorum ? mb->quorum : mb->set_size) + 1);
}

/* ---------------------------------------------------------------- json */

/* `s` as a JSON string: quotes, backslash and every control character
 * escaped (a path may hold any byte but NUL); bytes >= 0x80 are copied
 * as they are (a UTF-8 path stays readable; JSON wants UTF-8) */
void
json_str(const char *s)
{
	putchar('"');
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		switch (*c) {
		case '"': fputs("\\\"", stdout); break;
		case '\\': fputs("\\\\", stdout); break;
		case '\n': fputs("\\n", stdout); break;
		case '\t': fputs("\\t", stdout); break;
		case '\r': fputs("\\r", stdout); break;
		case '\b': fputs("\\b", stdout); break;
		case '\f': fputs("\\f", stdout); break;
		default:
			if (*c < 0x20 || *c == 0x7f)
				printf("\\u%04x", *c);
			else
				putchar(*c);
		}
	}
	putchar('"');
}

/* a replica header as one JSON object (no newline): the fields of
 * print_info; `name` the replica as given, `queried` asked of a target */
void
json_info(const char *name, bool queried, const struct pmrep_replica_info *info,
		const struct pmrep_replica_membership *mb,
		const struct pmrep_replica_position *pos)
{
	bool claimed = false, has_id = false;
	for (int i = 0; i < PMREP_UUID_SIZE; i++) {
		claimed |= info->uuid[i] != 0;
		has_id |= info->replica_id[i] != 0;
	}
	char u[2 * PMREP_UUID_SIZE + 1], rid[2 * PMREP_UUID_SIZE + 1];
	uuid_str(info->uuid, u);
	uuid_str(info->replica_id, rid);
	fputs("{\"replica\":", stdout);
	json_str(name);
	printf(",\"queried\":%s,\"valid\":true,\"uuid\":\"%s\",\"claimed\":%s,"
			"\"generation\":%llu,\"data_size\":%llu,\"data_offset\":%llu,"
			"\"consistent\":%s,\"flags\":%u,\"replica_id\":\"%s\","
			"\"has_replica_id\":%s,\"owner\":\"%016llx\",\"header_seq\":%llu,"
			"\"last_persist_seq\":%llu",
			queried ? "true" : "false", u, claimed ? "true" : "false",
			(unsigned long long)info->generation,
			(unsigned long long)info->data_size,
			(unsigned long long)info->data_offset,
			claimed && (info->flags & PMREP_REPLICA_F_CONSISTENT) ?
				"true" : "false",
			(unsigned)info->flags, rid, has_id ? "true" : "false",
			(unsigned long long)info->owner,
			(unsigned long long)info->seq,
			(unsigned long long)info->last_persist_seq);
	if (mb != NULL)
		printf(",\"set_size\":%u,\"set_quorum\":%u", mb->set_size,
				mb->quorum);
	if (pos != NULL) {
		putchar(',');
		json_position(pos);
	}
	putchar('}');
}

/* a file that is no valid replica (exit 1) as one JSON object */
static void
json_invalid(const char *name, int ret)
{
	fputs("{\"replica\":", stdout);
	json_str(name);
	printf(",\"queried\":false,\"valid\":false,\"code\":%d,\"error\":", ret);
	json_str(pmrep_err_to_str(ret));
	fputs(",\"message\":", stdout);
	json_str(pmrep_err_msg());
	fputs("}\n", stdout);
}

/* pmrep status ADDR:PORT --key-file F: the target's answer to a query */
static int
status_remote(const char *target, const char *key_file, int timeout, bool json)
{
	char addr[256];
	snprintf(addr, sizeof(addr), "%s", target);
	char *colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr || colon[1] == '\0')
		return usage_error("status: bad target '%s' (ADDR:PORT with --key-file)",
				target);
	*colon = '\0';
	/* ADDR:PORT/NAME: the replica NAME of an endpoint serving several */
	char *name = strchr(colon + 1, '/');
	if (name != NULL)
		*name++ = '\0';
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len = 0;
	int ret = pmrep_key_read_file_ex(key_file, key_flags, key, sizeof(key),
			&key_len, NULL);
	if (ret) {
		report("status", key_file, ret);
		return EX_ERR;
	}
	struct pmrep_replica_info info;
	struct pmrep_replica_membership mb;
	struct pmrep_replica_position pos;
	ret = pmrep_replica_query_position(addr, colon + 1, name, key, key_len,
			timeout, &pos, &info, &mb);
	memset(key, 0, sizeof(key));
	if (ret) {
		/* a target serves a valid replica only: every error is a
		 * failure (connection, authentication, timeout) */
		report("status", target, ret);
		return EX_ERR;
	}
	if (json) {
		json_info(target, true, &info, &mb, &pos);
		putchar('\n');
		return EX_OK;
	}
	char where[300];
	snprintf(where, sizeof(where), "%s (queried over the network, read-only)",
			target);
	print_info(where, &info, &mb, &pos);
	return EX_OK;
}

static int
cmd_status(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "key-file", required_argument, NULL, 'k' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "timeout", required_argument, NULL, 't' },
		{ "replica", required_argument, NULL, 'r' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'J' },
		{ "control", required_argument, NULL, 'C' },
		{ "metrics", no_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *key_file = NULL, *control = NULL;
	unsigned long long timeout = 10000;
	bool have_timeout = false, json = false, metrics = false;
	int c;
	while ((c = getopt_long(argc, argv, "k:t:r:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'k': key_file = optarg; break;
		case 'K': key_flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'N': (void) pmrep_repl_set_tls_default(false); break;
		case 't':
			if (parse_count(optarg, INT_MAX, &timeout))
				return usage_error("status: bad --timeout '%s' (ms, >= 1)", optarg);
			have_timeout = true;
			break;
		case 'J': json = true; break;
		case 'C': control = optarg; break;
		case 'M': metrics = true; break;
		case 'r':
			return usage_error("status: --replica %s: not an option; ask a target with 'pmrep status ADDR:PORT --key-file FILE'",
					optarg);
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_status);
		default: return usage_error("status: %s", "unknown option");
		}
	}
	if (control != NULL && (argc != optind || key_file != NULL))
		return usage_error("status: %s", "--control SOCKET takes no REPLICA_FILE, ADDR:PORT or --key-file");
	if (metrics && (control == NULL || json))
		return usage_error("status: %s", "--metrics goes with --control SOCKET, without --json");
	if (control != NULL && metrics)
		return target_ctl_metrics(control, stdout) ? EX_ERR : EX_OK;
	if (control != NULL)
		return target_ctl_request(control, json ? "status" : "status text",
				stdout) ? EX_ERR : EX_OK;
	if (argc - optind > 1)
		return usage_error("status: unexpected argument '%s' (expected one REPLICA_FILE, or ADDR:PORT with --key-file)",
				argv[optind + 1]);
	if (argc - optind != 1)
		return usage_error("status: %s", "expected REPLICA_FILE, or ADDR:PORT with --key-file");
	const char *path = argv[optind];
	if (have_timeout && key_file == NULL)
		return usage_error("status: %s", "--timeout only with ADDR:PORT --key-file (a network query)");
	log_setup();
	if (key_file != NULL)
		return status_remote(path, key_file, (int)timeout, json);
	struct pmrep_replica_info info;
	int ret = pmrep_replica_read_info(path, &info);
	if ((ret == PMREP_E_MALFORMED || ret == PMREP_E_RANGE) && json) {
		json_invalid(path, ret);
		return EX_NO;
	}
	if (ret == PMREP_E_MALFORMED || ret == PMREP_E_RANGE) {
		printf("%s: not a valid replica: %s (%s)\n", path,
				pmrep_err_to_str(ret), pmrep_err_msg());
		return EX_NO;
	}
	if (ret == PMREP_E_PROVIDER && pmrep_err_errno() == ENOENT &&
			strchr(path, ':') != NULL) {
		/* one line still, with the way to ask a target */
		fprintf(stderr, "pmrep status: %s: %s (to ask a target at ADDR:PORT, add --key-file FILE)\n",
				strerror(ENOENT), path);
		return EX_ERR;
	}
	struct pmrep_replica_membership mb = { 0 };
	struct pmrep_replica_position pos;
	if (ret == 0)
		ret = pmrep_replica_read_membership(path, &mb);
	if (ret == 0)
		ret = pmrep_replica_read_position(path, &pos);
	if (ret) {
		report("status", path, ret);
		return EX_ERR;
	}
	if (json) {
		json_info(path, false, &info, &mb, &pos);
		putchar('\n');
		return EX_OK;
	}
	print_info(path, &info, &mb, &pos);
	return EX_OK;
}

/* ------------------------------------------------------------ recover */

/*
 * recover from several copies: ask each read-only for its position and
 * the membership its header records; refuse (PMREP_E_STATE, logged) when
 * fewer than n - k + 1 copies of the set answered or the decision cannot
 * tell; else *src is the most current
 */
static int
recover_rank(char addrs[][256], const char *const ports[],
		const char *const names[], unsigned nrep, const uint8_t *key,
		size_t key_len, int timeout_ms,
		const uint8_t uuid[PMREP_UUID_SIZE], unsigned *src)
{
	struct pmrep_replica_position pos[PMREP_MIRROR_MAX_REPLICAS];
	uint8_t ids[PMREP_MIRROR_MAX_REPLICAS][PMREP_UUID_SIZE];
	unsigned idx[PMREP_MIRROR_MAX_REPLICAS], m = 0, need = 1;
	for (unsigned i = 0; i < nrep; i++) {
		struct pmrep_replica_info info;
		struct pmrep_replica_membership mb;
		int q = pmrep_replica_query_position(addrs[i], ports[i], NULL,
				key, key_len, timeout_ms, &pos[m], &info, &mb);
		if (q) {
			fprintf(stderr, "pmrep recover: %s not reached: %s\n",
					names[i], pmrep_err_to_str(q));
			continue;
		}
		if (memcmp(info.uuid, uuid, PMREP_UUID_SIZE) != 0 ||
				(pos[m].flags & (PMREP_POSITION_F_FRESH |
					PMREP_POSITION_F_REMOVED)))
			continue;	/* no copy of this set */
		bool dup = false;
		for (unsigned j = 0; j < m; j++)
			if (memcmp(ids[j], info.replica_id, PMREP_UUID_SIZE) == 0)
				dup = true;
		if (dup) {
			fprintf(stderr, "pmrep recover: %s is a copy already named (the same replica id): counted once\n",
					names[i]);
			continue;
		}
		memcpy(ids[m], info.replica_id, PMREP_UUID_SIZE);
		unsigned k = mb.quorum ? mb.quorum : mb.set_size;
		if (mb.set_size != 0 && mb.set_size - k + 1 > need)
			need = mb.set_size - k + 1;
		idx[m++] = i;
	}
	if (m < need) {
		fprintf(stderr, "pmrep recover: %u copies of the set answered, %u needed (n - k + 1, as the headers record): a copy not reached may hold newer persists\n",
				m, need);
		return PMREP_E_STATE;
	}
	unsigned best = 0, conflict = m;
	int ret = pmrep_position_decide(pos, m, &best, &conflict, NULL);
	if (ret) {
		fprintf(stderr, "pmrep recover: which copy is newest cannot be told: %s may hold persists no copy named vouches for\n",
				conflict < m ? names[idx[conflict]] : "none of them");
		return PMREP_E_STATE;
	}
	*src = idx[best];
	printf("most current of %u copies: %s\n", m, names[*src]);
	return 0;
}

static int
cmd_recover(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "replica", required_argument, NULL, 'r' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "uuid", required_argument, NULL, 'u' },
		{ "generation", required_argument, NULL, 'g' },
		{ "allow-inconsistent", no_argument, NULL, 'I' },
		{ "force-stale", no_argument, NULL, 'S' },
		{ "timeout", required_argument, NULL, 't' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL, *key_file = NULL;
	const char *replicas[PMREP_MIRROR_MAX_REPLICAS];
	unsigned nrep = 0;
	uint8_t uuid[PMREP_UUID_SIZE];
	bool have_uuid = false;
	unsigned long long gen = 0, timeout = 60000;
	unsigned flags = 0;
	int c;
	while ((c = getopt_long(argc, argv, "f:r:k:u:g:It:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 'r':
			if (nrep == PMREP_MIRROR_MAX_REPLICAS)
				return usage_error("recover: %s", "more than 8 --replica");
			replicas[nrep++] = optarg;
			break;
		case 'S': flags |= PMREP_RECOVER_SET_DECIDED; break;
		case 'k': key_file = optarg; break;
		case 'K': key_flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'N': (void) pmrep_repl_set_tls_default(false); break;
		case 'u':
			if (uuid_parse(optarg, uuid))
				return usage_error("recover: bad --uuid '%s' (32 hex digits)", optarg);
			have_uuid = true;
			break;
		case 'g':
			if (parse_count(optarg, UINT64_MAX, &gen))
				return usage_error("recover: bad --generation '%s' (>= 1)", optarg);
			break;
		case 'I': flags |= PMREP_RECOVER_ALLOW_INCONSISTENT; break;
		case 't':
			if (parse_count(optarg, INT_MAX, &timeout))
				return usage_error("recover: bad --timeout '%s' (ms, >= 1)", optarg);
			break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_recover);
		default: return usage_error("recover: %s", "unknown option");
		}
	}
	if (optind != argc)
		return usage_error("recover: unexpected argument '%s'", argv[optind]);
	if (file == NULL || nrep == 0 || key_file == NULL || !have_uuid ||
			gen == 0)
		return usage_error("recover: %s", "--file, --replica, --key-file, --uuid and --generation are required");
	char addrs[PMREP_MIRROR_MAX_REPLICAS][256];
	const char *ports[PMREP_MIRROR_MAX_REPLICAS];
	for (unsigned i = 0; i < nrep; i++) {
		snprintf(addrs[i], sizeof(addrs[i]), "%s", replicas[i]);
		char *colon = strrchr(addrs[i], ':');
		if (colon == NULL || colon == addrs[i] || colon[1] == '\0')
			return usage_error("recover: bad --replica '%s' (ADDR:PORT)",
					replicas[i]);
		*colon = '\0';
		ports[i] = colon + 1;
	}
	log_setup();

	uint8_t key[PMREP_KEY_MAX];
	size_t key_len = 0;
	int ret = pmrep_key_read_file_ex(key_file, key_flags, key, sizeof(key),
			&key_len, NULL);
	if (ret) {
		report("recover", key_file, ret);
		return EX_ERR;
	}
	/* an existing file only: its size is the replica's data size */
	struct pmrep_pmem *pmem = NULL;
	ret = pmrep_pmem_open(file, 0, 0, PMREP_PMEM_GRANULARITY_PAGE, &pmem);
	if (ret) {
		report("recover", file, ret);
		memset(key, 0, sizeof(key));
		return EX_ERR;
	}
	/* several copies: the most current of them, by the one decision */
	unsigned src = 0;
	ret = nrep > 1 && !(flags & PMREP_RECOVER_SET_DECIDED) ?
		recover_rank(addrs, ports, replicas, nrep, key, key_len,
				(int)timeout, uuid, &src) : 0;
	if (ret == 0 && nrep > 1)
		flags |= PMREP_RECOVER_SET_DECIDED;
	const char *replica = replicas[src];
	struct pmrep_replica_info info;
	memset(&info, 0, sizeof(info));
	if (ret == 0)
		ret = pmrep_mirror_recover(pmem, addrs[src], ports[src], key,
				key_len, uuid, gen, flags, (int)timeout, &info);
	memset(key, 0, sizeof(key));
	int rc;
	if (ret == 0) {
		printf("recovered %s: %zu bytes of generation %llu from %s (replica was %s)\n",
				file, pmrep_pmem_get_size(pmem), gen, replica,
				info.flags & PMREP_REPLICA_F_CONSISTENT ?
				"marked consistent" : "NOT marked consistent");
		rc = EX_OK;
	} else {
		/* refusals of the replica as a source vs. failures; the
		 * arguments were checked here; PMREP_E_MISMATCH is the
		 * target's "another replica set" */
		bool refused = ret == PMREP_E_STATE || ret == PMREP_E_RANGE ||
			ret == PMREP_E_NOSUPP || ret == PMREP_E_INVAL ||
			ret == PMREP_E_MISMATCH;
		const char *msg = pmrep_err_msg();
		fprintf(stderr, "pmrep recover: %s %s from %s: %s%s%s%s\n",
				refused ? "refused to recover" : "could not recover",
				file, replica, pmrep_err_to_str(ret),
				msg[0] ? " (" : "", msg, msg[0] ? ")" : "");
		rc = refused ? EX_NO : EX_ERR;
	}
	(void) pmrep_pmem_close(&pmem);
	return rc;
}

/* pmrep keygen FILE [--key-id N] [--bytes N] */
static int
cmd_keygen(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "key-id", required_argument, NULL, 'i' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long id = 1, bytes = PMREP_KEY_GOOD;
	int c;
	while ((c = getopt_long(argc, argv, "i:b:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			{
				/* decimal digits only; 0 allowed (the unnamed key) */
				char *end;
				errno = 0;
				id = strtoull(optarg, &end, 10);
				if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' ||
						errno || id > UINT32_MAX)
					return usage_error("keygen: bad --key-id '%s' (0 .. 4294967295)", optarg);
			}
			break;
		case 'b':
			if (parse_count(optarg, PMREP_KEY_MAX, &bytes) || bytes < PMREP_KEY_GOOD)
				return usage_error("keygen: bad --bytes '%s' (32 .. 64)", optarg);
			break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_keygen);
		default: return usage_error("keygen: %s", "unknown option");
		}
	}
	if (argc - optind > 1)
		return usage_error("keygen: unexpected argument '%s' (expected one FILE)",
				argv[optind + 1]);
	if (optind + 1 != argc)
		return usage_error("keygen: %s", "expected one FILE");
	log_setup();
	const char *file = argv[optind];
	int ret = pmrep_key_write_file(file, (uint32_t)id, (size_t)bytes);
	if (ret) {
		report("keygen", file, ret);
		return EX_ERR;
	}
	printf("%s: a key of %llu random bytes, key id %llu (mode 0600)\n", file,
			bytes, id);
	return EX_OK;
}

/* ---------------------------------------------------------- log-create */

static int
cmd_log_create(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *from = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "f:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': from = optarg; break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_log_create);
		default: return usage_error("log-create: %s", "unknown option");
		}
	}
	int n = argc - optind;
	if (n > 2)
		return usage_error("log-create: unexpected argument '%s' (expected LOG [SIZE])",
				argv[optind + 2]);
	if (n < 1 || n > 2 || (n == 1 && from == NULL))
		return usage_error("log-create: %s", n < 1 || n > 2 ?
				"expected LOG [SIZE]" :
				"expected SIZE (or --from PLAIN)");
	const char *log = argv[optind];
	unsigned long long size = 0;
	if (n == 2 && (parse_size(argv[optind + 1], 1ull << 50, &size) ||
			size == 0))
		return usage_error("log-create: bad SIZE '%s'", argv[optind + 1]);
	log_setup();
	int in = -1;
	if (from != NULL) {
		struct stat st;
		in = open(from, O_RDONLY | O_CLOEXEC);
		if (in < 0 || fstat(in, &st) != 0) {
			fprintf(stderr, "pmrep log-create: %s: %s\n", strerror(errno), from);
			if (in >= 0)
				close(in);
			return EX_ERR;
		}
		if (!S_ISREG(st.st_mode) || st.st_size == 0 ||
				(size != 0 && (unsigned long long)st.st_size != size)) {
			fprintf(stderr, "pmrep log-create: %s: %s\n", from,
					!S_ISREG(st.st_mode) ? "not a regular file" :
					st.st_size == 0 ? "empty" :
					"its size is not SIZE");
			close(in);
			return EX_ERR;
		}
		size = (unsigned long long)st.st_size;
	}
	struct pmrep_pmem *p = NULL;
	int ret = pmrep_log_open(log, PMREP_PMEM_CREATE | PMREP_PMEM_EXCL,
			(size_t)size, PMREP_PMEM_GRANULARITY_PAGE, &p);
	if (ret) {
		report("log-create", log, ret);
		if (in >= 0)
			close(in);
		return EX_ERR;
	}
	int rc = EX_OK;
	if (in >= 0) {
		uint8_t *d = pmrep_pmem_get_address(p);
		if (read_full(in, d, (size_t)size, 0) != 0) {
			fprintf(stderr, "pmrep log-create: read failed: %s\n", from);
			rc = EX_ERR;
		} else if ((ret = pmrep_pmem_persist(p, d, (size_t)size)) != 0) {
			report("log-create", log, ret);
			rc = EX_ERR;
		}
		close(in);
	}
	if (pmrep_pmem_close(&p) != 0)
		rc = EX_ERR;
	if (rc != EX_OK) {
		(void) unlink(log);	/* created here: not left half copied */
		return rc;
	}
	printf("%s: a pmrep log of %llu data bytes%s%s\n", log, size,
			from ? ", converted from " : "", from ? from : "");
	return EX_OK;
}

/* pmrep watch SOCKET: a target's events, one JSON line each */
static int
cmd_watch(int argc, char *argv[])
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
		return cmd_help(help_watch);
	if (argc != 2 || argv[1][0] == '-')
		return usage_error("watch: %s", "expected SOCKET (pmrep-target --control SOCKET)");
	signal(SIGPIPE, SIG_IGN);
	return target_ctl_watch(argv[1], stdout) ? EX_ERR : EX_OK;
}

int
main(int argc, char *argv[])
{
	if (argc < 2) {
		usage(stderr);
		return EX_ERR;
	}
	/* options before the command: -v, --help, --version */
	while (argc >= 2 && (strcmp(argv[1], "-v") == 0 ||
			strcmp(argv[1], "--verbose") == 0)) {
		verbose = true;
		argc--;
		argv++;
	}
	if (argc < 2) {
		usage(stderr);
		return EX_ERR;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("pmrep %s\n", PMREP_VERSION_STRING);
		return EX_OK;
	}
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
			strcmp(cmd, "help") == 0) {
		/* pmrep help COMMAND: that command's help */
		if (argc >= 3 && strcmp(argv[2], "verify") == 0)
			return cmd_help(help_verify);
		if (argc >= 3 && strcmp(argv[2], "status") == 0)
			return cmd_help(help_status);
		if (argc >= 3 && strcmp(argv[2], "recover") == 0)
			return cmd_help(help_recover);
		if (argc >= 3 && strcmp(argv[2], "keygen") == 0)
			return cmd_help(help_keygen);
		if (argc >= 3 && strcmp(argv[2], "log-create") == 0)
			return cmd_help(help_log_create);
		if (argc >= 3 && strcmp(argv[2], "compare") == 0)
			return cmd_help(help_compare);
		if (argc >= 3 && strcmp(argv[2], "export") == 0)
			return cmd_help(help_export);
		if (argc >= 3 && strcmp(argv[2], "rank") == 0)
			return cmd_help(help_rank);
		if (argc >= 3 && strcmp(argv[2], "promote") == 0)
			return cmd_help(help_promote);
		if (argc >= 3 && strcmp(argv[2], "watch") == 0)
			return cmd_help(help_watch);
		usage(stdout);
		return EX_OK;
	}
	/* the command's options: getopt starts after the command name */
	argc--;
	argv++;
	if (strcmp(cmd, "verify") == 0)
		return cmd_verify(argc, argv);
	if (strcmp(cmd, "status") == 0)
		return cmd_status(argc, argv);
	if (strcmp(cmd, "recover") == 0)
		return cmd_recover(argc, argv);
	if (strcmp(cmd, "keygen") == 0)
		return cmd_keygen(argc, argv);
	if (strcmp(cmd, "log-create") == 0)
		return cmd_log_create(argc, argv);
	if (strcmp(cmd, "compare") == 0)
		return cmd_compare(argc, argv);
	if (strcmp(cmd, "rank") == 0)
		return cmd_rank(argc, argv);
	if (strcmp(cmd, "export") == 0)
		return cmd_export(argc, argv);
	if (strcmp(cmd, "promote") == 0)
		return cmd_promote(argc, argv);
	if (strcmp(cmd, "watch") == 0)
		return cmd_watch(argc, argv);
	return usage_error("unknown command '%s'", cmd);
}
