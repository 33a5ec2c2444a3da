/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log-mirror -- an append-only log of checksummed records in a pmem file,
 * mirrored to a replica target. A record is acknowledged ("acked N") only
 * after pmrep_mirror_persist returned success for it and for the log's
 * tail pointer; on a replica failure the program keeps the record
 * unacknowledged and reconnects (with resync) until the replica is back.
 * On start it recovers: walks the records up to the tail and verifies each
 * checksum.
 *
 * File layout (little-endian): 4096-byte log header, then records.
 *   header: 0 "PMLOGMIR"  8 u32 version (1)  12 u32 reserved
 *           16 uuid[16] (the replica set)  32 u64 generation
 *           40 u64 tail (bytes of records committed after the header)
 *           48 u64 checksum of bytes 0..47 (FNV-1a)
 *   record: 0 u32 payload length  4 u32 reserved  8 u64 sequence number
 *           16 u64 checksum (FNV-1a of length, sequence, payload)
 *           24 payload, padded to 8 bytes
 *
 * usage (log-mirror --help explains every option):
 *   log-mirror --file PATH [--size BYTES] --replica ADDR:PORT --key-file FILE
 *              [--key-id N] [--no-tls] [--insecure-key-file]
 *              [--append N] [--payload BYTES] [--delay-ms MS] [--wait-s S]
 *              [--pmrep-log] [--raise-generation]
 *   log-mirror --file PATH [--pmrep-log] --verify   (recover and verify, no mirror)
 * --size is needed to create a new log; an existing log is opened with its
 * own size (a --size given must equal it).
 * Exit: 0 success, 1 failure (the log, the mirror, or a record not
 * acknowledged within --wait-s), 2 usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#define HDR_SIZE 4096
#define REC_HDR 24
static const char magic[8] = { 'P', 'M', 'L', 'O', 'G', 'M', 'I', 'R' };

struct log {
	struct pmrep_pmem *pmem;
	uint8_t *base;
	size_t size;
	pmrep_pmem_persist_fn *persist;
	uint64_t tail;		/* bytes of records after the header */
	uint64_t next_seq;
};

static uint64_t
fnv(const void *p, size_t len, uint64_t h)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
#define FNV0 0xcbf29ce484222325ull

static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = (v << 8) | p[i]; return v; }

static void
hdr_seal(struct log *l)
{
	put64(l->base + 40, l->tail);
	put64(l->base + 48, fnv(l->base, 48, FNV0));
}

/* open or create the log; recover and verify every committed record */
static int
log_open(struct log *l, const char *path, size_t size, bool pmrep_log)
{
	/* a pmrep log (--pmrep-log): the layout every node shares, so that
	 * a replica's file is opened in place after a failover; the mapping
	 * is its data area, laid out as below */
	int ret = pmrep_log ?
		pmrep_log_open(path, size ? PMREP_PMEM_CREATE : 0, size,
			PMREP_PMEM_GRANULARITY_PAGE, &l->pmem) :
		pmrep_pmem_open(path, size ? PMREP_PMEM_CREATE : 0, size,
			PMREP_PMEM_GRANULARITY_PAGE, &l->pmem);
	if (ret) {
		fprintf(stderr, "log-mirror: %s: %s (%s)\n", path,
				pmrep_err_to_str(ret), pmrep_err_msg());
		return -1;
	}
	l->base = pmrep_pmem_get_address(l->pmem);
	l->size = pmrep_pmem_get_size(l->pmem);
	l->persist = pmrep_pmem_get_persist_fn(l->pmem);
	if (l->size < HDR_SIZE + REC_HDR) {
		/* the header alone is 4 KiB: never write past the mapping */
		fprintf(stderr, "log-mirror: %s: %zu bytes, a log needs at least %d\n",
				path, l->size, HDR_SIZE + REC_HDR);
		return -1;
	}
	if (memcmp(l->base, magic, 8) != 0) {
		/* a new log: its own replica-set UUID, generation 1 */
		memset(l->base, 0, HDR_SIZE);
		memcpy(l->base, magic, 8);
		put32(l->base + 8, 1);
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || read(fd, l->base + 16, 16) != 16) {
			fprintf(stderr, "log-mirror: cannot read /dev/urandom\n");
			return -1;
		}
		close(fd);
		l->base[16] |= 1;	/* never the nil UUID */
		put64(l->base + 32, 1);
		l->tail = 0;
		hdr_seal(l);
		l->persist(l->base, HDR_SIZE);
		printf("created log %s (%zu bytes)\n", path, l->size);
	}
	if (get64(l->base + 48) != fnv(l->base, 48, FNV0) || get32(l->base + 8) != 1) {
		fprintf(stderr, "log-mirror: %s: damaged log header\n", path);
		return -1;
	}
	l->tail = get64(l->base + 40);
	if (l->tail > l->size - HDR_SIZE) {
		fprintf(stderr, "log-mirror: tail %llu beyond the file\n",
				(unsigned long long)l->tail);
		return -1;
	}
	/* walk and verify */
	uint64_t off = 0, n = 0;
	while (off < l->tail) {
		const uint8_t *r = l->base + HDR_SIZE + off;
		uint32_t len = get32(r);
		uint64_t seq = get64(r + 8);
		uint64_t rec = REC_HDR + (((uint64_t)len + 7) & ~7ull);
		if (rec > l->tail - off) {
			fprintf(stderr, "log-mirror: record at %llu runs past the tail\n",
					(unsigned long long)off);
			return -1;
		}
		uint64_t h = fnv(r, 4, FNV0);
		h = fnv(r + 8, 8, h);
		h = fnv(r + REC_HDR, len, h);
		if (h != get64(r + 16) || seq != n + 1) {
			fprintf(stderr, "log-mirror: record %llu at %llu fails its checksum or sequence\n",
					(unsigned long long)(n + 1), (unsigned long long)off);
			return -1;
		}
		n++;
		off += rec;
	}
	l->next_seq = n + 1;
	printf("recovered %llu records (%llu bytes), all checksums verified\n",
			(unsigned long long)n, (unsigned long long)l->tail);
	return 0;
}

/* persist through the mirror; on failure reconnect (with resync) and try
 * again until `wait_s` passed. Returns 0 once durable everywhere. */
static int
mirror_persist(struct pmrep_mirror *m, size_t off, size_t len, int wait_s)
{
	time_t give_up = time(NULL) + wait_s;
	int ret = pmrep_mirror_persist(m, off, len, 2000);
	bool reported = false;
	while (ret != 0) {
		struct pmrep_replica_status st;
		pmrep_mirror_get_replica_status(m, 0, &st);
		if (!reported) {
			printf("persist failed (%s): replica 0 %s, %llu bytes out of sync; not acknowledged, reconnecting\n",
					pmrep_err_to_str(ret), pmrep_replica_state_str(st.state),
					(unsigned long long)st.lag_bytes);
			fflush(stdout);
			reported = true;
		}
		if (time(NULL) >= give_up)
			return ret;
		int r = pmrep_mirror_reconnect(m, 2000);
		if (r == 0) {
			pmrep_mirror_get_replica_status(m, 0, &st);
			printf("replica 0 back: %s, method %s, resync #%llu, %llu bytes copied in all resyncs\n",
					pmrep_replica_state_str(st.state),
					pmrep_mirror_method_str(st.method),
					(unsigned long long)st.resyncs,
					(unsigned long long)st.resync_bytes);
			fflush(stdout);
			ret = pmrep_mirror_persist(m, off, len, 2000);
		} else {
			usleep(100000);
		}
	}
	return 0;
}

/* a decimal (or 0x) number with an optional K / M / G suffix, min..max;
 * strtoull alone takes "-1" as 2^64 - 1 and "1M" as 1 */
static int
parse_num(const char *opt, const char *s, unsigned long long min,
		unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long v = (s[0] >= '0' && s[0] <= '9') ?
		strtoull(s, &end, 0) : 0;
	int shift = 0;
	if (s[0] >= '0' && s[0] <= '9' && errno == 0) {
		switch (*end) {
		case 'k': case 'K': shift = 10; end++; break;
		case 'm': case 'M': shift = 20; end++; break;
		case 'g': case 'G': shift = 30; end++; break;
		default: break;
		}
	}
	if (s[0] < '0' || s[0] > '9' || errno || *end != '\0' ||
			(shift && v > (~0ull >> shift)) ||
			(v << shift) < min || (v << shift) > max) {
		fprintf(stderr, "log-mirror: bad %s '%s' (%llu..%llu)\n", opt, s,
				min, max);
		return -1;
	}
	*out = v << shift;
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: log-mirror --file PATH [--size BYTES] --replica ADDR:PORT --key-file FILE\n"
		"                  [--key-id N] [--no-tls] [--insecure-key-file]\n"
		"                  [--append N] [--payload BYTES] [--delay-ms MS] [--wait-s S]\n"
		"       log-mirror --file PATH --verify\n"
		"An append-only log of checksummed records in a pmem file, mirrored to one\n"
		"pmrep-target. A record is acknowledged (\"acked N\", printed every 50\n"
		"records and for the last) only once it and the log's tail are durable\n"
		"on both sides. On start the log is recovered and every record verified.\n"
		"\n"
		"  -f, --file PATH          the log file (a regular file or device DAX)\n"
		"  -s, --size BYTES         size of a new log file in bytes (K/M/G suffixes:\n"
		"                           KiB, MiB, GiB; at least %d: a 4096-byte header,\n"
		"                           then records). Needed to create PATH; an\n"
		"                           existing log keeps its size (if given, --size\n"
		"                           must equal it). The replica's data size\n"
		"                           (pmrep-target --size) must be the same.\n"
		"  -r, --replica ADDR:PORT  the pmrep-target to mirror to\n"
		"  -k, --key-file FILE      the target's pre-shared key file: one `pmrep\n"
		"                           keygen` wrote (its key id in it), or the older\n"
		"                           form: the file's bytes without one trailing\n"
		"                           newline, 16..64 bytes (key id 0). Mode 0600 and\n"
		"                           owned by the user, else refused\n"
		"  -i, --key-id N           the key id named in the connection request,\n"
		"                           0..4294967295 (default: the key file's id; 0\n"
		"                           names none: the target tries every key it\n"
		"                           holds). A target holds several keys by id\n"
		"                           during a rotation (docs/SECURITY.md)\n"
		"      --no-tls             tcp without TLS, for a target run with --no-tls\n"
		"                           (default: TLS 1.3 with a PSK derived from the\n"
		"                           key; each end refuses the other kind). No\n"
		"                           effect on RDMA (use IPsec / MACsec)\n"
		"      --insecure-key-file  accept a key file others may read or that\n"
		"                           another user owns (a warning instead)\n"
		"  -n, --append N           records to append (default 0: recover, attach\n"
		"                           the replica (its resync) and stop)\n"
		"  -p, --payload BYTES      payload bytes per record, 1..65536 (default 200);\n"
		"                           a record takes 24 + payload rounded up to 8 bytes\n"
		"  -d, --delay-ms MS        pause between records in milliseconds, 0..60000\n"
		"                           (default 0)\n"
		"  -w, --wait-s S           seconds to keep reconnecting to a failed replica\n"
		"                           before giving up on a record, 0..86400\n"
		"                           (default 30)\n"
		"  -V, --verify             only recover and verify the log (no mirror;\n"
		"                           --file and --pmrep-log are the only other\n"
		"                           options used)\n"
		"  -L, --pmrep-log          PATH is a pmrep log (pmrep_log_open; created\n"
		"                           with --size data bytes if missing; `pmrep\n"
		"                           log-create --from` converts a plain one): the\n"
		"                           layout of every node, so that after a failover\n"
		"                           the replica's file is opened here in place and\n"
		"                           the old log is served by pmrep-target\n"
		"  -G, --raise-generation   before mirroring, raise the log's generation by\n"
		"                           one (what a promoted node does first: the\n"
		"                           replicas it reaches refuse the old primary's)\n"
		"  -h, --help               this help\n"
		"\n"
		"environment: PMREP_PROVIDER=tcp|verbs forces a provider; PMREP_LOG_LEVEL\n"
		"(0..5) sets the library's log verbosity on stderr (default 3, notice).\n"
		"exit codes: 0 success (every record appended was acknowledged; a full\n"
		"log stops early; --verify: the log is intact); 1 failure (the log\n"
		"cannot be opened or is damaged, the mirror cannot be set up, or a\n"
		"record was not acknowledged within --wait-s); 2 usage error.\n", HDR_SIZE + REC_HDR);
}

int
main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "size", required_argument, NULL, 's' },
		{ "replica", required_argument, NULL, 'r' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "key-id", required_argument, NULL, 'i' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "append", required_argument, NULL, 'n' },
		{ "payload", required_argument, NULL, 'p' },
		{ "delay-ms", required_argument, NULL, 'd' },
		{ "wait-s", required_argument, NULL, 'w' },
		{ "verify", no_argument, NULL, 'V' },
		{ "pmrep-log", no_argument, NULL, 'L' },
		{ "raise-generation", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL, *replica = NULL, *key_file = NULL;
	unsigned long long size = 0, payload = 200;
	unsigned long long append = 0, delay_ms = 0, wait_s = 30;
	unsigned long long key_id = 0;
	bool verify = false, have_key_id = false, tls = true;
	bool pmrep_log = false, raise_gen = false;
	unsigned key_flags = 0;
	int c, bad = 0;
	while ((c = getopt_long(argc, argv, "f:s:r:k:i:n:p:d:w:VLGh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 's': bad |= parse_num("--size", optarg, HDR_SIZE + REC_HDR,
				(unsigned long long)INT64_MAX, &size); break;
		case 'r': replica = optarg; break;
		case 'k': key_file = optarg; break;
		case 'i':
			bad |= parse_num("--key-id", optarg, 0, UINT32_MAX, &key_id);
			have_key_id = true;
			break;
		case 'N': tls = false; break;
		case 'K': key_flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'n': bad |= parse_num("--append", optarg, 0, LONG_MAX, &append); break;
		case 'p': bad |= parse_num("--payload", optarg, 1, 65536, &payload); break;
		/* bounded: a bad value must not turn into a sleep of hours */
		case 'd': bad |= parse_num("--delay-ms", optarg, 0, 60000, &delay_ms); break;
		case 'w': bad |= parse_num("--wait-s", optarg, 0, 86400, &wait_s); break;
		case 'V': verify = true; break;
		case 'L': pmrep_log = true; break;
		case 'G': raise_gen = true; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "(log-mirror --help for usage)\n");
			return 2;
		}
	}
	if (bad)
		return 2;
	if (file == NULL || (!verify && (replica == NULL || key_file == NULL)) ||
			payload == 0 || payload > 65536) {
		fprintf(stderr, "usage: log-mirror --file PATH [--size BYTES] --replica ADDR:PORT --key-file FILE [--append N] | --verify\n"
				"(log-mirror --help for details)\n");
		return 2;
	}
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_NOTICE);
	struct log l = { 0 };
	if (log_open(&l, file, verify ? 0 : (size_t)size, pmrep_log) != 0) {
		pmrep_pmem_close(&l.pmem);
		return 1;
	}
	if (verify) {
		pmrep_pmem_close(&l.pmem);
		return 0;
	}
	if (raise_gen) {
		/* a promoted node's first step: the new generation, durable in
		 * the log before any replica sees it; replicas that accept it
		 * refuse the old primary's lower one from then on */
		uint64_t g = get64(l.base + 32) + 1;
		put64(l.base + 32, g);
		hdr_seal(&l);
		if (pmrep_pmem_persist(l.pmem, l.base, HDR_SIZE) != 0) {
			fprintf(stderr, "log-mirror: %s: the new generation could not be persisted (%s)\n",
					file, pmrep_err_msg());
			pmrep_pmem_close(&l.pmem);
			return 1;
		}
		printf("generation raised to %llu\n", (unsigned long long)g);
	}

	char addr[256];
	snprintf(addr, sizeof(addr), "%s", replica);
	char *colon = strrchr(addr, ':');
	if (colon == NULL) {
		fprintf(stderr, "log-mirror: --replica ADDR:PORT\n");
		return 2;
	}
	*colon = '\0';
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len;
	uint32_t file_key_id = 0;
	struct pmrep_mirror_cfg *cfg = NULL;
	struct pmrep_mirror *m = NULL;
	int ret = pmrep_key_read_file_ex(key_file, key_flags, key, sizeof(key),
			&key_len, &file_key_id);
	if (ret) {
		fprintf(stderr, "log-mirror: %s: %s (%s)\n", key_file,
				pmrep_err_to_str(ret), pmrep_err_msg());
		pmrep_pmem_close(&l.pmem);
		return 1;
	}
	if (ret == 0) ret = pmrep_mirror_cfg_new(&cfg);
	if (ret == 0) ret = pmrep_mirror_cfg_add_replica(cfg, addr, colon + 1);
	if (ret == 0) ret = pmrep_mirror_cfg_set_key(cfg, key, key_len);
	if (ret == 0) ret = pmrep_mirror_cfg_set_key_id(cfg,
			have_key_id ? (uint32_t)key_id : file_key_id);
	if (ret == 0) ret = pmrep_mirror_cfg_set_tls(cfg, tls);
	if (ret == 0) ret = pmrep_mirror_cfg_set_uuid(cfg, l.base + 16);
	if (ret == 0) ret = pmrep_mirror_cfg_set_generation(cfg, get64(l.base + 32));
	memset(key, 0, sizeof(key));
	if (ret == 0) ret = pmrep_mirror_new(l.pmem, cfg, &m);
	if (ret) {
		fprintf(stderr, "log-mirror: cannot mirror to %s: %s (%s)\n", replica,
				pmrep_err_to_str(ret), pmrep_err_msg());
		pmrep_mirror_cfg_delete(&cfg);
		pmrep_pmem_close(&l.pmem);
		return 1;
	}
	struct pmrep_replica_status st;
	pmrep_mirror_get_replica_status(m, 0, &st);
	printf("mirroring %s to %s: replica %s, method %s, %llu bytes copied at attach\n",
			file, replica, pmrep_replica_state_str(st.state),
			pmrep_mirror_method_str(st.method),
			(unsigned long long)st.resync_bytes);
	fflush(stdout);

	int rc = 0;
	for (unsigned long long i = 0; i < append; i++) {
		uint64_t rec = REC_HDR + ((payload + 7) & ~(size_t)7);
		if (HDR_SIZE + l.tail + rec > l.size) {
			printf("log full after %llu records\n", (unsigned long long)(l.next_seq - 1));
			break;
		}
		uint64_t off = HDR_SIZE + l.tail;
		uint8_t *r = l.base + off;
		put32(r, (uint32_t)payload);
		put32(r + 4, 0);
		put64(r + 8, l.next_seq);
		for (size_t j = 0; j < payload; j++)
			r[REC_HDR + j] = (uint8_t)(l.next_seq * 31 + j);
		uint64_t h = fnv(r, 4, FNV0);
		h = fnv(r + 8, 8, h);
		h = fnv(r + REC_HDR, payload, h);
		put64(r + 16, h);
		/* the record, then the tail that commits it: each durable on
		 * both sides before the next step */
		if (mirror_persist(m, off, rec, (int)wait_s) != 0) {
			rc = 1;
			break;
		}
		l.tail += rec;
		hdr_seal(&l);
		if (mirror_persist(m, 40, 16, (int)wait_s) != 0) {
			rc = 1;
			break;
		}
		if (l.next_seq % 50 == 0 || i == append - 1) {
			printf("acked %llu\n", (unsigned long long)l.next_seq);
			fflush(stdout);
		}
		l.next_seq++;
		if (delay_ms)
			usleep((useconds_t)delay_ms * 1000);
	}
	if (rc)
		fprintf(stderr, "log-mirror: the replica did not come back in %llu s; record %llu was NOT acknowledged\n",
				wait_s, (unsigned long long)l.next_seq);
	pmrep_mirror_get_replica_status(m, 0, &st);
	printf("done: %llu records acked; replica %s, lag %llu bytes, %llu resyncs, %llu bytes resynced\n",
			(unsigned long long)(l.next_seq - 1), pmrep_replica_state_str(st.state),
			(unsigned long long)st.lag_bytes, (unsigned long long)st.resyncs,
			(unsigned long long)st.resync_bytes);
	pmrep_mirror_delete(&m);
	pmrep_mirror_cfg_delete(&cfg);
	pmrep_pmem_close(&l.pmem);
	return rc;
}
