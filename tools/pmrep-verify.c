/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep-verify -- compare a mirror's source file with a replica file,
 * range by range: reads the replica's header (pmrep_replica_read_info),
 * checks that the sizes agree, then checksums each range of both and
 * prints every range that differs. Exit 0: identical, 1: different,
 * 2: usage or I/O error. Regular files only (not device DAX).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmrep/repl.h>

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

int
main(int argc, char *argv[])
{
	size_t range = 1 << 20;
	if (argc == 5 && strcmp(argv[3], "--range") == 0) {
		range = strtoull(argv[4], NULL, 0);
		argc = 3;
	}
	if (argc != 3 || range == 0) {
		fprintf(stderr, "usage: pmrep-verify SOURCE REPLICA [--range BYTES]\n");
		return 2;
	}
	struct pmrep_replica_info info;
	int ret = pmrep_replica_read_info(argv[2], &info);
	if (ret) {
		fprintf(stderr, "pmrep-verify: %s: %s (%s)\n", argv[2],
				pmrep_err_to_str(ret), pmrep_err_msg());
		return 2;
	}
	int src = open(argv[1], O_RDONLY | O_CLOEXEC);
	int rep = open(argv[2], O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (src < 0 || rep < 0 || fstat(src, &st) != 0) {
		fprintf(stderr, "pmrep-verify: %s\n", strerror(errno));
		return 2;
	}
	if ((uint64_t)st.st_size != info.data_size) {
		printf("DIFFERENT: source has %lld bytes, replica data area %llu\n",
				(long long)st.st_size, (unsigned long long)info.data_size);
		return 1;
	}
	uint8_t *a = malloc(range), *b = malloc(range);
	if (a == NULL || b == NULL) {
		fprintf(stderr, "pmrep-verify: out of memory\n");
		return 2;
	}
	uint64_t total_a = 0xcbf29ce484222325ull, total_b = total_a;
	unsigned long long ranges = 0, bad = 0;
	for (uint64_t off = 0; off < info.data_size; off += range) {
		size_t len = info.data_size - off < range ? (size_t)(info.data_size - off) : range;
		if (read_full(src, a, len, (off_t)off) ||
				read_full(rep, b, len, (off_t)(info.data_offset + off))) {
			fprintf(stderr, "pmrep-verify: read failed at %llu\n",
					(unsigned long long)off);
			return 2;
		}
		uint64_t ha = fnv1a(a, len, 0xcbf29ce484222325ull);
		uint64_t hb = fnv1a(b, len, 0xcbf29ce484222325ull);
		total_a = fnv1a(a, len, total_a);
		total_b = fnv1a(b, len, total_b);
		ranges++;
		if (ha != hb) {
			bad++;
			printf("range %llu (bytes %llu..%llu): source %016llx replica %016llx\n",
					ranges - 1, (unsigned long long)off,
					(unsigned long long)(off + len - 1),
					(unsigned long long)ha, (unsigned long long)hb);
		}
	}
	char uuid[33];
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		snprintf(uuid + 2 * i, 3, "%02x", info.uuid[i]);
	printf("replica set %s, generation %llu, %s\n", uuid,
			(unsigned long long)info.generation,
			info.flags & PMREP_REPLICA_F_CONSISTENT ?
				"marked consistent" : "not marked consistent");
	if (bad) {
		printf("DIFFERENT: %llu of %llu ranges of %zu bytes differ\n",
				bad, ranges, range);
		return 1;
	}
	printf("IDENTICAL: %llu ranges of %zu bytes, %llu bytes, checksum %016llx on both\n",
			ranges, range, (unsigned long long)info.data_size,
			(unsigned long long)total_a);
	free(a);
	free(b);
	close(src);
	close(rep);
	return total_a == total_b ? 0 : 1;
}
