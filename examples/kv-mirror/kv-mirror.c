/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv-mirror -- a small persistent hash table in a pmem file, mirrored to
 * replica targets (one to eight; two in the usual demo) with the "all" or
 * a quorum policy. A put or a del is acknowledged ("ok ...") only after
 * pmrep_mirror_persist returned success for it; otherwise it prints
 * "FAILED ... (not acknowledged)". On start the table is recovered and
 * every entry's checksum verified.
 *
 * File layout (little-endian): a 4096-byte header, then N fixed-size
 * entries (buckets) of 256 bytes, open addressing with linear probing.
 *   header: 0 "PMKVMIR\0"  8 u32 version (1)  12 u32 entry size (256)
 *           16 uuid[16] (the replica set)  32 u64 generation
 *           40 u64 entries  48 u64 checksum of bytes 0..47 (FNV-1a)
 *   entry:  0 u32 state (0 free, 1 live, 2 deleted)  4 u16 key length
 *           6 u16 value length  8 u64 sequence number  16 key[48]
 *           64 value[184]  248 u64 checksum of bytes 0..247 (FNV-1a)
 * A put writes the new entry into a free (or deleted) bucket and persists
 * it, then marks the key's previous entry deleted and persists that: a
 * crash in between leaves two live entries of the key, and recovery keeps
 * the one with the higher sequence number. An entry whose checksum fails
 * (a torn, unacknowledged write) becomes a deleted bucket on recovery.
 * Without --replica the table is changed locally only, and its generation
 * is raised once per run that changes it (pmrep_mirror_cfg_set_generation).
 *
 * usage (kv-mirror --help explains every option):
 *   kv-mirror --file PATH [--entries N] [--replica ADDR:PORT]...
 *             [--key-file F] [--key-id N] [--no-tls] [--insecure-key-file]
 *             [--policy all|quorum=K] [--timeout MS] [--wait-s S] COMMAND
 *   COMMAND: put KEY VALUE | get KEY | del KEY | list | script FILE
 *   A script (FILE, or - for stdin) holds one command per line: put, get,
 *   del, list, status, reconnect, sleep MS, and the membership at run time:
 *   add-replica ADDR:PORT[/NAME], remove-replica INDEX, quorum K|all;
 *   # starts a comment.
 * Exit: 0 every command succeeded, 1 a command failed or a put / del was
 * not acknowledged, 2 usage error.
 * Past ~800 lines: a whole example program in one file, to read top to bottom.
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
#define ENT_SIZE 256
#define KEY_MAX 48
#define VAL_MAX 184
#define ST_FREE 0
#define ST_LIVE 1
#define ST_DEL 2
static const char magic[8] = { 'P', 'M', 'K', 'V', 'M', 'I', 'R', 0 };

struct kv {
	struct pmrep_pmem *pmem;
	uint8_t *base;
	size_t size;
	uint64_t n;
	uint64_t next_seq;
	pmrep_pmem_persist_fn *local_persist;
	struct pmrep_mirror *m;		/* NULL: local only */
	bool gen_raised;
	uint64_t log_gen;		/* a promoted log's newer generation */
	bool pmrep_log;			/* --pmrep-log: the table in a pmrep log */
	int timeout_ms;
	int wait_s;
};

#define FNV0 0xcbf29ce484222325ull
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
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static uint8_t *ent(struct kv *kv, uint64_t i) { return kv->base + HDR_SIZE + i * ENT_SIZE; }

static void
ent_seal(uint8_t *e)
{
	put64(e + 248, fnv(e, 248, FNV0));
}

static bool
ent_ok(const uint8_t *e)
{
	return get64(e + 248) == fnv(e, 248, FNV0) && get32(e) <= ST_DEL &&
		get16(e + 4) <= KEY_MAX && get16(e + 6) <= VAL_MAX;
}

static bool
ent_is_zero(const uint8_t *e)
{
	for (int i = 0; i < ENT_SIZE; i++)
		if (e[i])
			return false;
	return true;
}

static void
hdr_seal(struct kv *kv)
{
	put64(kv->base + 48, fnv(kv->base, 48, FNV0));
}

/* make [off, off + len) durable: through the mirror (retrying with
 * reconnects for up to wait_s), or locally */
static int
kv_persist(struct kv *kv, size_t off, size_t len)
{
	if (kv->m == NULL) {
		kv->local_persist(kv->base + off, len);
		return 0;
	}
	time_t give_up = time(NULL) + kv->wait_s;
	int ret = pmrep_mirror_persist(kv->m, off, len, kv->timeout_ms);
	while (ret != 0 && time(NULL) < give_up) {
		if (pmrep_mirror_reconnect(kv->m, kv->timeout_ms) == 0)
			ret = pmrep_mirror_persist(kv->m, off, len, kv->timeout_ms);
		else
			usleep(100000);
	}
	return ret;
}

/* the table changes without a mirror: raise the generation once */
static void
local_change(struct kv *kv)
{
	if (kv->m != NULL || kv->gen_raised)
		return;
	put64(kv->base + 32, get64(kv->base + 32) + 1);
	hdr_seal(kv);
	kv->local_persist(kv->base, 64);
	kv->gen_raised = true;
}

static uint64_t
bucket_of(const struct kv *kv, const char *key, size_t klen)
{
	return fnv(key, klen, FNV0) % kv->n;
}

/* the live entry of `key`, or UINT64_MAX */
static uint64_t
find(struct kv *kv, const char *key, size_t klen)
{
	uint64_t b = bucket_of(kv, key, klen);
	for (uint64_t i = 0; i < kv->n; i++) {
		uint8_t *e = ent(kv, (b + i) % kv->n);
		uint32_t st = get32(e);
		if (st == ST_FREE)
			return UINT64_MAX;
		if (st == ST_LIVE && get16(e + 4) == klen &&
				memcmp(e + 16, key, klen) == 0)
			return (b + i) % kv->n;
	}
	return UINT64_MAX;
}

/* open or create; recover: check every entry, repair torn ones, keep the
 * newest of duplicate keys */
static int
kv_open(struct kv *kv, const char *path, uint64_t entries)
{
	size_t size = HDR_SIZE + (size_t)entries * ENT_SIZE;
	/* an existing table keeps its size; a new one gets `entries` */
	bool exists = access(path, F_OK) == 0;
	/* a pmrep log (--pmrep-log) is the layout of every node: after a
	 * failover a replica's file is opened here in place; the mapping is
	 * its data area, laid out as above */
	int ret = kv->pmrep_log ?
		pmrep_log_open(path, exists ? 0 : PMREP_PMEM_CREATE,
			exists ? 0 : size, PMREP_PMEM_GRANULARITY_PAGE, &kv->pmem) :
		pmrep_pmem_open(path, exists ? 0 : PMREP_PMEM_CREATE,
			exists ? 0 : size, PMREP_PMEM_GRANULARITY_PAGE, &kv->pmem);
	if (ret) {
		fprintf(stderr, "kv-mirror: %s: %s (%s)\n", path,
				pmrep_err_to_str(ret), pmrep_err_msg());
		return -1;
	}
	kv->base = pmrep_pmem_get_address(kv->pmem);
	kv->size = pmrep_pmem_get_size(kv->pmem);
	kv->local_persist = pmrep_pmem_get_persist_fn(kv->pmem);
	if (kv->size < HDR_SIZE + ENT_SIZE) {
		fprintf(stderr, "kv-mirror: %s: %zu bytes, too small\n", path, kv->size);
		return -1;
	}
	if (memcmp(kv->base, magic, 8) != 0) {
		if (!ent_is_zero(kv->base)) {
			fprintf(stderr, "kv-mirror: %s is not a kv-mirror table\n", path);
			return -1;
		}
		memcpy(kv->base, magic, 8);
		put32(kv->base + 8, 1);
		put32(kv->base + 12, ENT_SIZE);
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || read(fd, kv->base + 16, 16) != 16) {
			fprintf(stderr, "kv-mirror: cannot read /dev/urandom\n");
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
		kv->base[16] |= 1;	/* never the nil UUID */
		put64(kv->base + 32, 1);
		put64(kv->base + 40, (kv->size - HDR_SIZE) / ENT_SIZE);
		hdr_seal(kv);
		kv->local_persist(kv->base, HDR_SIZE);
		printf("created table %s: %llu buckets\n", path,
				(unsigned long long)((kv->size - HDR_SIZE) / ENT_SIZE));
	}
	if (get64(kv->base + 48) != fnv(kv->base, 48, FNV0) ||
			get32(kv->base + 8) != 1 || get32(kv->base + 12) != ENT_SIZE) {
		fprintf(stderr, "kv-mirror: %s: damaged table header\n", path);
		return -1;
	}
	kv->n = get64(kv->base + 40);
	if (kv->n == 0 || kv->n > (kv->size - HDR_SIZE) / ENT_SIZE) {
		fprintf(stderr, "kv-mirror: %s: %llu buckets do not fit the file\n",
				path, (unsigned long long)kv->n);
		return -1;
	}
	uint64_t live = 0, dead = 0, torn = 0, dup = 0, max_seq = 0;
	for (uint64_t i = 0; i < kv->n; i++) {
		uint8_t *e = ent(kv, i);
		if (ent_is_zero(e))
			continue;
		if (!ent_ok(e)) {
			/* a torn write that was never acknowledged: a deleted
			 * bucket keeps the probe chains intact */
			memset(e, 0, ENT_SIZE);
			put32(e, ST_DEL);
			ent_seal(e);
			kv->local_persist(e, ENT_SIZE);
			torn++;
			continue;
		}
		if (get64(e + 8) > max_seq)
			max_seq = get64(e + 8);
	}
	/* duplicates: a put that crashed before deleting the old entry */
	for (uint64_t i = 0; i < kv->n; i++) {
		uint8_t *e = ent(kv, i);
		if (get32(e) != ST_LIVE)
			continue;
		uint64_t j = find(kv, (const char *)e + 16, get16(e + 4));
		while (j != UINT64_MAX && j != i) {
			uint8_t *o = ent(kv, j);
			uint8_t *older = get64(o + 8) < get64(e + 8) ? o : e;
			put32(older, ST_DEL);
			ent_seal(older);
			kv->local_persist(older, ENT_SIZE);
			dup++;
			if (older == e)
				break;
			j = find(kv, (const char *)e + 16, get16(e + 4));
		}
	}
	for (uint64_t i = 0; i < kv->n; i++) {
		uint32_t st = get32(ent(kv, i));
		live += st == ST_LIVE;
		dead += st == ST_DEL;
	}
	if (torn || dup)
		local_change(kv);	/* repaired without a mirror */
	/* a log promoted by `pmrep promote` holds a newer generation in its
	 * pmrep header than the table: the mirror runs at it (the replicas
	 * were fenced with it), and the table takes it once the mirror is
	 * there -- written through the mirror, as every change of the table */
	struct pmrep_replica_info info;
	if (kv->pmrep_log && pmrep_replica_read_info(path, &info) == 0 &&
			memcmp(info.uuid, kv->base + 16, 16) == 0 &&
			info.generation > get64(kv->base + 32))
		kv->log_gen = info.generation;
	kv->next_seq = max_seq + 1;
	printf("recovered %llu entries (%llu deleted buckets, %llu torn repaired, %llu duplicates resolved), all checksums verified; generation %llu\n",
			(unsigned long long)live, (unsigned long long)dead,
			(unsigned long long)torn, (unsigned long long)dup,
			(unsigned long long)get64(kv->base + 32));
	fflush(stdout);
	return 0;
}

/* the table's generation, or the promoted log's when that is newer */
static uint64_t
kv_generation(const struct kv *kv)
{
	uint64_t g = get64(kv->base + 32);
	return kv->log_gen > g ? kv->log_gen : g;
}

/* the promoted log's generation into the table (after the mirror exists) */
static int
kv_take_log_generation(struct kv *kv)
{
	if (kv->log_gen <= get64(kv->base + 32))
		return 0;
	put64(kv->base + 32, kv->log_gen);
	hdr_seal(kv);
	int ret = kv_persist(kv, 0, HDR_SIZE);
	if (ret) {
		fprintf(stderr, "kv-mirror: the log's generation could not be persisted (%s)\n",
				pmrep_err_msg());
		return -1;
	}
	kv->gen_raised = true;	/* not again by a local change */
	printf("generation %llu from the promoted log\n",
			(unsigned long long)kv->log_gen);
	return 0;
}

static int
check_key(const char *key, const char *val)
{
	if (key[0] == '\0' || strlen(key) > KEY_MAX) {
		printf("FAILED: key must be 1..%d bytes\n", KEY_MAX);
		return -1;
	}
	if (val && strlen(val) > VAL_MAX) {
		printf("FAILED: value must be at most %d bytes\n", VAL_MAX);
		return -1;
	}
	return 0;
}

static int
kv_put(struct kv *kv, const char *key, const char *val)
{
	if (check_key(key, val))
		return 1;
	size_t klen = strlen(key), vlen = strlen(val);
	uint64_t old = find(kv, key, klen);
	uint64_t b = bucket_of(kv, key, klen), slot = UINT64_MAX;
	for (uint64_t i = 0; i < kv->n; i++) {
		uint64_t s = (b + i) % kv->n;
		if (s != old && get32(ent(kv, s)) != ST_LIVE) {
			slot = s;
			break;
		}
	}
	if (slot == UINT64_MAX) {
		printf("FAILED put %s: table full\n", key);
		return 1;
	}
	local_change(kv);
	uint8_t *e = ent(kv, slot);
	memset(e, 0, ENT_SIZE);
	put32(e, ST_LIVE);
	put16(e + 4, (uint16_t)klen);
	put16(e + 6, (uint16_t)vlen);
	put64(e + 8, kv->next_seq++);
	memcpy(e + 16, key, klen);
	memcpy(e + 64, val, vlen);
	ent_seal(e);
	int ret = kv_persist(kv, (size_t)(e - kv->base), ENT_SIZE);
	if (ret == 0 && old != UINT64_MAX) {
		uint8_t *o = ent(kv, old);
		put32(o, ST_DEL);
		ent_seal(o);
		ret = kv_persist(kv, (size_t)(o - kv->base), ENT_SIZE);
	}
	if (ret) {
		printf("FAILED put %s: %s (not acknowledged)\n", key,
				pmrep_err_to_str(ret));
		return 1;
	}
	printf("ok put %s\n", key);
	return 0;
}

static int
kv_del(struct kv *kv, const char *key)
{
	if (check_key(key, NULL))
		return 1;
	uint64_t i = find(kv, key, strlen(key));
	if (i == UINT64_MAX) {
		printf("missing %s\n", key);
		return 0;
	}
	local_change(kv);
	uint8_t *e = ent(kv, i);
	put32(e, ST_DEL);
	put64(e + 8, kv->next_seq++);
	ent_seal(e);
	int ret = kv_persist(kv, (size_t)(e - kv->base), ENT_SIZE);
	if (ret) {
		printf("FAILED del %s: %s (not acknowledged)\n", key,
				pmrep_err_to_str(ret));
		return 1;
	}
	printf("ok del %s\n", key);
	return 0;
}

static int
kv_get(struct kv *kv, const char *key)
{
	if (check_key(key, NULL))
		return 1;
	uint64_t i = find(kv, key, strlen(key));
	if (i == UINT64_MAX) {
		printf("missing %s\n", key);
		return 0;
	}
	const uint8_t *e = ent(kv, i);
	printf("value %s %.*s\n", key, (int)get16(e + 6), (const char *)e + 64);
	return 0;
}

static void
kv_list(struct kv *kv)
{
	for (uint64_t i = 0; i < kv->n; i++) {
		const uint8_t *e = ent(kv, i);
		if (get32(e) == ST_LIVE)
			printf("value %.*s %.*s\n", (int)get16(e + 4),
					(const char *)e + 16, (int)get16(e + 6),
					(const char *)e + 64);
	}
}

static void
kv_status(struct kv *kv)
{
	unsigned n = 0;
	if (kv->m == NULL) {
		printf("status: local only, generation %llu\n",
				(unsigned long long)get64(kv->base + 32));
		return;
	}
	(void) pmrep_mirror_get_replica_count(kv->m, &n);
	for (unsigned i = 0; i < n; i++) {
		struct pmrep_replica_status st;
		(void) pmrep_mirror_get_replica_status(kv->m, i, &st);
		printf("status: replica %u %s, method %s, lag %llu bytes\n", i,
				pmrep_replica_state_str(st.state),
				pmrep_mirror_method_str(st.method),
				(unsigned long long)st.lag_bytes);
	}
}

/* a membership change of the running mirror (docs/PROTOCOL.md
 * "Membership"): add-replica ADDR:PORT[/NAME], remove-replica INDEX,
 * quorum K|all */
static int
kv_members(struct kv *kv, const char *cmd, char *arg)
{
	int ret;
	unsigned idx = 0;
	if (strcmp(cmd, "add-replica") == 0) {
		char *name = strchr(arg, '/');
		char *colon = strrchr(arg, ':');
		if (name != NULL)
			*name++ = '\0';
		if (colon == NULL || colon == arg || colon[1] == '\0') {
			printf("FAILED: add-replica ADDR:PORT[/NAME]\n");
			return 2;
		}
		*colon = '\0';
		ret = pmrep_mirror_add_replica(kv->m, arg, colon + 1, name,
				kv->timeout_ms, &idx);
	} else {
		char *end;
		bool all = strcmp(cmd, "quorum") == 0 && strcmp(arg, "all") == 0;
		unsigned long v = all ? 0 : strtoul(arg, &end, 10);
		if (!all && (*arg == '\0' || *end != '\0' || v > 64)) {
			printf("FAILED: %s: a number%s\n", cmd,
					strcmp(cmd, "quorum") == 0 ? " or all" : "");
			return 2;
		}
		idx = (unsigned)v;
		ret = strcmp(cmd, "quorum") == 0 ?
			pmrep_mirror_set_quorum(kv->m, idx, kv->timeout_ms) :
			pmrep_mirror_remove_replica(kv->m, idx, kv->timeout_ms);
	}
	struct pmrep_replica_membership mb;
	(void) pmrep_mirror_get_membership(kv->m, &mb);
	if (ret)
		printf("FAILED %s: %s (%s)\n", cmd, pmrep_err_to_str(ret),
				pmrep_err_msg());
	else if (strcmp(cmd, "quorum") == 0)
		printf("ok quorum: %u replicas, quorum %s%u\n", mb.set_size,
				mb.quorum ? "" : "all = ",
				mb.quorum ? mb.quorum : mb.set_size);
	else
		printf("ok %s: replica %u; %u replicas, quorum %s%u\n", cmd, idx,
				mb.set_size, mb.quorum ? "" : "all = ",
				mb.quorum ? mb.quorum : mb.set_size);
	return ret ? 1 : 0;
}

/* one command; returns 0 ok, 1 failed, 2 usage */
static int
run_cmd(struct kv *kv, char **w, int n)
{
	if (n == 3 && strcmp(w[0], "put") == 0)
		return kv_put(kv, w[1], w[2]);
	if (n == 2 && strcmp(w[0], "get") == 0)
		return kv_get(kv, w[1]);
	if (n == 2 && strcmp(w[0], "del") == 0)
		return kv_del(kv, w[1]);
	if (n == 1 && strcmp(w[0], "list") == 0) {
		kv_list(kv);
		return 0;
	}
	if (n == 1 && strcmp(w[0], "status") == 0) {
		kv_status(kv);
		return 0;
	}
	if (n == 1 && strcmp(w[0], "reconnect") == 0) {
		int ret = kv->m ? pmrep_mirror_reconnect(kv->m, kv->timeout_ms) : 0;
		printf("%s reconnect: %s\n", ret ? "FAILED" : "ok",
				pmrep_err_to_str(ret));
		return ret ? 1 : 0;
	}
	if (n == 2 && kv->m != NULL && (strcmp(w[0], "add-replica") == 0 ||
			strcmp(w[0], "remove-replica") == 0 ||
			strcmp(w[0], "quorum") == 0))
		return kv_members(kv, w[0], w[1]);
	if (n == 2 && strcmp(w[0], "sleep") == 0) {
		long ms = strtol(w[1], NULL, 10);
		if (ms < 0 || ms > 60000) {
			printf("FAILED: sleep 0..60000 ms\n");
			return 2;
		}
		usleep((useconds_t)ms * 1000);
		return 0;
	}
	printf("FAILED: unknown command '%s' (put K V, get K, del K, list, status, reconnect, sleep MS, add-replica ADDR:PORT[/NAME], remove-replica I, quorum K|all)\n",
			n ? w[0] : "");
	return 2;
}

static int
run_script(struct kv *kv, const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "kv-mirror: %s: %s\n", path, strerror(errno));
		return 2;
	}
	char line[512];
	int rc = 0;
	while (fgets(line, sizeof(line), f)) {
		char *w[4];
		int n = 0;
		for (char *t = strtok(line, " \t\r\n"); t && n < 4;
				t = strtok(NULL, " \t\r\n"))
			w[n++] = t;
		if (n == 0 || w[0][0] == '#')
			continue;
		int r = run_cmd(kv, w, n);
		fflush(stdout);
		if (r > rc)
			rc = r;
	}
	if (f != stdin)
		fclose(f);
	return rc;
}

static int
parse_u(const char *s, unsigned long long min, unsigned long long max,
		unsigned long long *out)
{
	char *end;
	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static void
usage(FILE *f, bool full)
{
	fprintf(f,
		"usage: kv-mirror --file PATH [--entries N] [--replica ADDR:PORT]...\n"
		"                 [--key-file F] [--key-id N] [--no-tls]\n"
		"                 [--insecure-key-file] [--policy all|quorum=K] [--timeout MS]\n"
		"                 [--wait-s S] [--pmrep-log] [--persist-seq]\n"
		"                 [--raise-generation] [--fence-count N] put KEY VALUE |\n"
		"                 get KEY | del KEY |\n"
		"                 list | script FILE|-\n");
	if (!full) {
		fprintf(f, "(kv-mirror --help for details)\n");
		return;
	}
	fprintf(f,
		"A persistent hash table in a pmem file, mirrored to 1..%d pmrep-targets\n"
		"(none: local only). A put / del prints \"ok ...\" only once durable on\n"
		"the replicas the policy needs, else \"FAILED ... (not acknowledged)\".\n"
		"On start the table is recovered and every entry's checksum verified.\n"
		"Options come before the command.\n"
		"\n"
		"  -f, --file PATH          the table file (a regular file or device DAX);\n"
		"                           created if missing\n"
		"  -n, --entries N          buckets of a new table, 1..16777216 (default\n"
		"                           1024); the file is 4096 + 256 * N bytes, which\n"
		"                           must be the replicas' data size (pmrep-target\n"
		"                           --size). An existing table keeps its size.\n"
		"  -r, --replica ADDR:PORT  a pmrep-target to mirror to; repeat for more\n"
		"                           (at most %d)\n"
		"  -k, --key-file FILE      the targets' pre-shared key file (required with\n"
		"                           --replica): one `pmrep keygen` wrote (its key id\n"
		"                           in it), or the older form: the file's bytes\n"
		"                           without one trailing newline, 16..64 bytes (key\n"
		"                           id 0). Mode 0600 and owned by the user, else\n"
		"                           refused\n"
		"  -i, --key-id N           the key id named in the connection requests,\n"
		"                           0..4294967295 (default: the key file's id; 0\n"
		"                           names none: each target tries every key it\n"
		"                           holds). A target holds several keys by id\n"
		"                           during a rotation (docs/SECURITY.md)\n"
		"      --no-tls             tcp without TLS, for targets run with --no-tls\n"
		"                           (default: TLS 1.3 with a PSK derived from the\n"
		"                           key; each end refuses the other kind). No\n"
		"                           effect on RDMA (use IPsec / MACsec)\n"
		"      --insecure-key-file  accept a key file others may read or that\n"
		"                           another user owns (a warning instead)\n"
		"  -p, --policy all|quorum=K  all (default): every replica must confirm each\n"
		"                           persist; quorum=K: K of them (1..replicas)\n"
		"  -t, --timeout MS         limit in milliseconds for connecting to a\n"
		"                           replica and for each persist, 1..600000\n"
		"                           (default 2000)\n"
		"  -w, --wait-s S           seconds to keep reconnecting after a failed\n"
		"                           persist before the put / del is not\n"
		"                           acknowledged, 0..3600 (default 0: no retry)\n"
		"  -L, --pmrep-log          PATH is a pmrep log (pmrep_log_open; created if\n"
		"                           missing): the layout of every node, so that after\n"
		"                           a failover a replica's file is opened here in\n"
		"                           place (docs/FAILOVER.md)\n"
		"  -S, --persist-seq        the replicas record the sequence of the newest\n"
		"                           persist they hold (pmrep_mirror_cfg_set_persist_seq),\n"
		"                           so that `pmrep compare` names the most current\n"
		"  -G, --raise-generation   before mirroring, raise the table's generation by\n"
		"                           one (what a promoted node does first)\n"
		"  -F, --fence-count N      start only once N replicas hold the generation\n"
		"                           (pmrep_mirror_cfg_set_fence_count; a promoted\n"
		"                           node: replicas - quorum + 1), 0..%d\n"
		"  -h, --help               this help\n"
		"\n"
		"commands: put KEY VALUE (KEY 1..%d bytes, VALUE up to %d bytes),\n"
		"get KEY, del KEY, list, or script FILE (- for stdin): one command per\n"
		"line, also status, reconnect, sleep MS (0..60000), and the membership at\n"
		"run time: add-replica ADDR:PORT[/NAME], remove-replica INDEX, quorum K|all;\n"
		"# starts a comment.\n"
		"\n"
		"environment: PMREP_PROVIDER=tcp|verbs forces a provider; PMREP_LOG_LEVEL\n"
		"(0..5) sets the library's log verbosity on stderr (default 3, notice).\n"
		"exit codes: 0 every command succeeded; 1 a command failed, a put / del\n"
		"was not acknowledged, or the table / mirror could not be opened;\n"
		"2 usage error (also an unknown command in a script).\n",
		PMREP_MIRROR_MAX_REPLICAS, PMREP_MIRROR_MAX_REPLICAS,
		PMREP_MIRROR_MAX_REPLICAS, KEY_MAX, VAL_MAX);
}

int
main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "entries", required_argument, NULL, 'n' },
		{ "replica", required_argument, NULL, 'r' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "key-id", required_argument, NULL, 'i' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "policy", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "wait-s", required_argument, NULL, 'w' },
		{ "pmrep-log", no_argument, NULL, 'L' },
		{ "persist-seq", no_argument, NULL, 'S' },
		{ "raise-generation", no_argument, NULL, 'G' },
		{ "fence-count", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL, *key_file = NULL;
	const char *replicas[PMREP_MIRROR_MAX_REPLICAS];
	unsigned nrep = 0;
	unsigned long long entries = 1024, quorum = 0, timeout = 2000, wait_s = 0;
	bool pmrep_log = false, persist_seq = false, raise_gen = false;
	unsigned long long fence = 0, key_id = 0;
	bool have_key_id = false, tls = true;
	unsigned key_flags = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+f:n:r:k:i:p:t:w:LSGF:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 'n':
			if (parse_u(optarg, 1, 1u << 24, &entries)) {
				fprintf(stderr, "kv-mirror: bad --entries '%s' (1..16777216)\n", optarg);
				return 2;
			}
			break;
		case 'r':
			if (nrep == PMREP_MIRROR_MAX_REPLICAS) {
				fprintf(stderr, "kv-mirror: at most %d replicas\n",
						PMREP_MIRROR_MAX_REPLICAS);
				return 2;
			}
			replicas[nrep++] = optarg;
			break;
		case 'k': key_file = optarg; break;
		case 'i':
			if (parse_u(optarg, 0, UINT32_MAX, &key_id)) {
				fprintf(stderr, "kv-mirror: bad --key-id '%s' (0..4294967295)\n", optarg);
				return 2;
			}
			have_key_id = true;
			break;
		case 'N': tls = false; break;
		case 'K': key_flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'p':
			if (strcmp(optarg, "all") == 0)
				quorum = 0;
			else if (strncmp(optarg, "quorum=", 7) != 0 ||
					parse_u(optarg + 7, 1, PMREP_MIRROR_MAX_REPLICAS, &quorum)) {
				fprintf(stderr, "kv-mirror: bad --policy '%s' (all or quorum=K)\n", optarg);
				return 2;
			}
			break;
		case 't':
			if (parse_u(optarg, 1, 600000, &timeout)) {
				fprintf(stderr, "kv-mirror: bad --timeout '%s' (1..600000 ms)\n", optarg);
				return 2;
			}
			break;
		case 'w':
			if (parse_u(optarg, 0, 3600, &wait_s)) {
				fprintf(stderr, "kv-mirror: bad --wait-s '%s' (0..3600)\n", optarg);
				return 2;
			}
			break;
		case 'L': pmrep_log = true; break;
		case 'S': persist_seq = true; break;
		case 'G': raise_gen = true; break;
		case 'F':
			if (parse_u(optarg, 0, PMREP_MIRROR_MAX_REPLICAS, &fence)) {
				fprintf(stderr, "kv-mirror: bad --fence-count '%s' (0..%d)\n",
						optarg, PMREP_MIRROR_MAX_REPLICAS);
				return 2;
			}
			break;
		case 'h': usage(stdout, true); return 0;
		default: usage(stderr, false); return 2;
		}
	}
	int nargs = argc - optind;
	char **args = argv + optind;
	if (file == NULL || nargs < 1 || (nrep > 0 && key_file == NULL) ||
			(nrep == 0 && quorum != 0) || quorum > nrep) {
		usage(stderr, false);
		return 2;
	}
	bool script = strcmp(args[0], "script") == 0;
	if (script && nargs != 2) {
		usage(stderr, false);
		return 2;
	}
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_NOTICE);

	struct kv kv = { .timeout_ms = (int)timeout, .wait_s = (int)wait_s,
		.pmrep_log = pmrep_log };
	if (kv_open(&kv, file, entries) != 0) {
		pmrep_pmem_close(&kv.pmem);
		return 1;
	}
	if (raise_gen) {
		/* a promoted node's first step: the new generation durable in
		 * the table before any replica sees it; replicas that accept it
		 * refuse the old primary's lower one from then on */
		put64(kv.base + 32, get64(kv.base + 32) + 1);
		hdr_seal(&kv);
		if (pmrep_pmem_persist(kv.pmem, kv.base, HDR_SIZE) != 0) {
			fprintf(stderr, "kv-mirror: %s: the new generation could not be persisted (%s)\n",
					file, pmrep_err_msg());
			pmrep_pmem_close(&kv.pmem);
			return 1;
		}
		kv.gen_raised = true;	/* not again by a local change */
		printf("generation raised to %llu\n",
				(unsigned long long)get64(kv.base + 32));
	}
	struct pmrep_mirror_cfg *cfg = NULL;
	int ret = 0;
	if (nrep > 0) {
		uint8_t key[PMREP_KEY_MAX];
		size_t key_len;
		uint32_t file_key_id = 0;
		ret = pmrep_key_read_file_ex(key_file, key_flags, key,
				sizeof(key), &key_len, &file_key_id);
		if (ret == 0) ret = pmrep_mirror_cfg_new(&cfg);
		for (unsigned i = 0; ret == 0 && i < nrep; i++) {
			char addr[256];
			snprintf(addr, sizeof(addr), "%s", replicas[i]);
			char *colon = strrchr(addr, ':');
			if (colon == NULL) {
				fprintf(stderr, "kv-mirror: --replica %s: ADDR:PORT\n", replicas[i]);
				ret = PMREP_E_INVAL;
				break;
			}
			*colon = '\0';
			ret = pmrep_mirror_cfg_add_replica(cfg, addr, colon + 1);
		}
		if (ret == 0) ret = pmrep_mirror_cfg_set_key(cfg, key, key_len);
		if (ret == 0) ret = pmrep_mirror_cfg_set_key_id(cfg,
				have_key_id ? (uint32_t)key_id : file_key_id);
		if (ret == 0) ret = pmrep_mirror_cfg_set_tls(cfg, tls);
		if (ret == 0) ret = pmrep_mirror_cfg_set_uuid(cfg, kv.base + 16);
		if (ret == 0) ret = pmrep_mirror_cfg_set_generation(cfg, kv_generation(&kv));
		if (ret == 0) ret = pmrep_mirror_cfg_set_quorum(cfg, (unsigned)quorum);
		if (ret == 0) ret = pmrep_mirror_cfg_set_timeout(cfg, (int)timeout);
		if (ret == 0 && persist_seq)
			ret = pmrep_mirror_cfg_set_persist_seq(cfg, true);
		if (ret == 0 && fence)
			ret = pmrep_mirror_cfg_set_fence_count(cfg, (unsigned)fence);
		memset(key, 0, sizeof(key));
		if (ret == 0) ret = pmrep_mirror_new(kv.pmem, cfg, &kv.m);
		if (ret) {
			fprintf(stderr, "kv-mirror: cannot mirror: %s (%s)\n",
					pmrep_err_to_str(ret), pmrep_err_msg());
			pmrep_mirror_cfg_delete(&cfg);
			pmrep_pmem_close(&kv.pmem);
			return 1;
		}
		printf("mirroring to %u replicas, policy %s%.0llu\n", nrep,
				quorum ? "quorum=" : "all", quorum);
		kv_status(&kv);
		fflush(stdout);
	}
	if (kv_take_log_generation(&kv) != 0) {
		pmrep_mirror_delete(&kv.m);
		pmrep_mirror_cfg_delete(&cfg);
		pmrep_pmem_close(&kv.pmem);
		return 1;
	}
	int rc = script ? run_script(&kv, args[1]) : run_cmd(&kv, args, nargs);
	fflush(stdout);
	pmrep_mirror_delete(&kv.m);
	pmrep_mirror_cfg_delete(&cfg);
	pmrep_pmem_close(&kv.pmem);
	return rc;
}
