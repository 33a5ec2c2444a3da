/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_verify.c -- pmrep verify: a mirror's source file against a replica
 * file on this host, checksummed range by range (read with pread, or
 * through both mappings for a device DAX).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "pmrep_cli.h"

const char help_verify[] =
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

int
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
