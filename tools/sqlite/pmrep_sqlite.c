/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_sqlite.c -- the SQLite VFS "pmrep" (docs/DATABASES.md): a
 * database, its WAL and its rollback journal live in one pmrep log, each
 * in a region of the log's data area (a "volume"), and one mirror persists
 * them to the replicas. Only pmrep's public API is used.
 *
 * The volume (data offset 0): a 4 KiB header -- magic, the replica set's
 * UUID, the generation, and per file its region (offset, capacity) and
 * its current size -- then the regions. A size is one aligned 8-byte
 * store, persisted after the data it covers (xSync): a size never covers
 * bytes that were not persisted before it.
 *
 * Writes are copied into the mapping and remembered as dirty ranges;
 * xSync persists the file's dirty ranges and its size as one step
 * (pmrep_mirror_persistv) through the mirror (locally and on the replicas the policy requires) and returns
 * only then: with synchronous=FULL a COMMIT is durable on the replicas
 * when it returns. After a failed persist the volume refuses every write
 * and sync until it is closed by every connection and opened again: what
 * the failed sync covered may or may not be on the replicas.
 *
 * One process: the log's lock (pmrep_log_open) keeps other processes out
 * (their open fails: SQLITE_BUSY). A read-only open maps the log
 * read-only (PMREP_LOG_RDONLY) under a shared lock: refused while a
 * target or a writer has the log. Within the process, connections share
 * the volume: SQLite's file locks and the WAL index's locks are kept in the
 * volume, and the WAL index lives in heap memory (rebuilt from the WAL at
 * the first open). Temporary files go to the default VFS.
 * Past ~800 lines: SQLite's whole VFS interface, implemented in one file.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef PMREP_SQLITE_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#else
#include <sqlite3.h>
#endif

#include <pmrep/base.h>
#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#define PMREP_SQLITE_API __attribute__((visibility("default")))
#include "pmrep-sqlite.h"

#define VOL_MAGIC "PMRSQL1"
#define VOL_VERSION 1u
#define VOL_HDR 4096u
#define VOL_ALIGN 4096u
#define SHM_LOCKS 8		/* SQLITE_SHM_NLOCK */
#define DIRTY_MAX 4096		/* ranges remembered before one covering range */
/* the WAL's recorded size grows by this much at a time: a commit that
 * stays within it persists its frames only (one round trip). After a
 * crash the WAL reads as that long; SQLite's recovery stops at the first
 * frame whose checksum or salt does not match, as for any WAL it reuses. */
#define WAL_SIZE_STEP (1u << 20)

enum kind { K_MAIN, K_WAL, K_JOURNAL, K_N };

struct vol_region {
	uint64_t off;		/* data offset of the region */
	uint64_t cap;		/* its room in bytes */
	uint64_t size;		/* the file's size (one aligned 8-byte store) */
	uint64_t reserved;
};

struct vol_hdr {
	char magic[8];
	uint32_t version;
	uint32_t flags;
	uint8_t uuid[16];	/* the replica set's UUID (the mirror's) */
	uint64_t generation;	/* the generation this volume was last written at */
	uint64_t reserved;
	struct vol_region r[K_N];
	uint64_t check;		/* FNV-1a of the fixed part (below) */
};

struct range {
	uint64_t lo, hi;	/* region offsets [lo, hi) */
};

struct pfile;

struct volume {
	struct volume *next;
	char *path;
	int refs;		/* files open on it (main, WAL, journal) */
	pthread_mutex_t mu;
	struct pmrep_pmem *pmem;
	struct pmrep_mirror *mirror;	/* NULL: local only */
	uint8_t *base;
	size_t size;
	struct vol_hdr *h;
	bool readonly;
	int ro_fd;		/* read-only: holds a shared flock on the log; -1 */
	bool failed;		/* a persist failed: no more writes */
	dev_t dev;		/* the log file's identity at the open: a file */
	ino_t ino;		/* renamed or deleted is another database */
	int timeout_ms;
	uint64_t sz[K_N];	/* each file's size (the header's may be above: WAL) */
	struct range *dirty[K_N];
	unsigned ndirty[K_N];
	bool size_dirty[K_N];
	/* SQLite's file locks of the main database */
	int shared;
	struct pfile *reserved, *pending, *exclusive;
	/* the WAL index: heap regions and its locks */
	void **shm;
	int nshm;
	int shm_refs;
	int shm_shared[SHM_LOCKS];
	struct pfile *shm_excl[SHM_LOCKS];
};

struct pfile {
	sqlite3_file base;
	struct volume *v;
	enum kind kind;
	int lock;
	bool persist_wal;	/* SQLITE_FCNTL_PERSIST_WAL */
	bool no_psow;		/* SQLITE_FCNTL_POWERSAFE_OVERWRITE turned off */
	bool shm_mapped;
	bool shm_sh[SHM_LOCKS];
};

static struct pmrep_sqlite_options defaults;
static char *def_replicas, *def_key_file;
static sqlite3_vfs *orig;	/* the default VFS, for temporary files and the rest */
static struct volume *volumes;
static pthread_mutex_t volumes_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t
fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t
hdr_check(const struct vol_hdr *h)
{
	uint64_t c = fnv(h, offsetof(struct vol_hdr, generation),
			0xcbf29ce484222325ULL);
	for (int k = 0; k < K_N; k++) {
		c = fnv(&h->r[k].off, 8, c);
		c = fnv(&h->r[k].cap, 8, c);
	}
	return c;
}

static int
parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	if (s[0] < '0' || s[0] > '9')
		return -1;	/* no sign, no space: strtoull takes "-1" */
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end != '\0' || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static uint64_t
align_down(uint64_t v)
{
	return v / VOL_ALIGN * VOL_ALIGN;
}

/* --------------------------------------------------------- persisting */

static int
vol_persist(struct volume *v, uint64_t off, uint64_t len)
{
	int ret;
	if (v->mirror != NULL)
		ret = pmrep_mirror_persist(v->mirror, (size_t)off, (size_t)len,
				v->timeout_ms);
	else
		ret = pmrep_pmem_persist(v->pmem, v->base + off, (size_t)len);
	if (ret) {
		sqlite3_log(SQLITE_IOERR, "pmrep: %s: persist of %llu bytes at %llu: %s (%s); the volume refuses writes until it is opened again",
				v->path, (unsigned long long)len,
				(unsigned long long)off, pmrep_err_to_str(ret),
				pmrep_err_msg());
		v->failed = true;
	}
	return ret;
}

/* remember [lo, hi) of file k as written; merged with its neighbours */
static void
dirty_add(struct volume *v, enum kind k, uint64_t lo, uint64_t hi)
{
	struct range *d = v->dirty[k];
	unsigned n = v->ndirty[k], i = 0;
	while (i < n && d[i].hi < lo)
		i++;
	if (i < n && d[i].lo <= hi) {
		/* overlaps or touches d[i]: widen it, swallow the next ones */
		if (lo < d[i].lo)
			d[i].lo = lo;
		if (hi > d[i].hi)
			d[i].hi = hi;
		unsigned j = i + 1;
		while (j < n && d[j].lo <= d[i].hi) {
			if (d[j].hi > d[i].hi)
				d[i].hi = d[j].hi;
			j++;
		}
		memmove(&d[i + 1], &d[j], (n - j) * sizeof(*d));
		v->ndirty[k] = n - (j - i - 1);
		return;
	}
	if (n == DIRTY_MAX) {
		/* too many: one range covering them all */
		d[0].lo = d[0].lo < lo ? d[0].lo : lo;
		d[0].hi = d[n - 1].hi > hi ? d[n - 1].hi : hi;
		v->ndirty[k] = 1;
		return;
	}
	memmove(&d[i + 1], &d[i], (n - i) * sizeof(*d));
	d[i].lo = lo;
	d[i].hi = hi;
	v->ndirty[k] = n + 1;
}

/* persist ranges[0..n) of the data area: one step through the mirror
 * (pmrep_mirror_persistv: one round trip), or locally range by range */
static int
vol_persistv(struct volume *v, const struct pmrep_range *r, unsigned n)
{
	if (v->mirror == NULL) {
		for (unsigned i = 0; i < n; i++)
			if (vol_persist(v, r[i].offset, r[i].length))
				return -1;
		return 0;
	}
	int ret = pmrep_mirror_persistv(v->mirror, r, n, v->timeout_ms);
	if (ret) {
		sqlite3_log(SQLITE_IOERR, "pmrep: %s: persist of %u ranges: %s (%s); the volume refuses writes until it is opened again",
				v->path, n, pmrep_err_to_str(ret), pmrep_err_msg());
		v->failed = true;
		return -1;
	}
	return 0;
}

/*
 * persist file k's dirty ranges and its recorded size as one step (a
 * vector of up to PMREP_MIRROR_PERSISTV_MAX ranges; more: several steps,
 * the size in the last); called with v->mu held
 */
static int
vol_sync(struct volume *v, enum kind k)
{
	if (v->failed)
		return -1;
	struct range *d = v->dirty[k];
	unsigned n = v->ndirty[k];
	uint64_t off = v->h->r[k].off;
	struct pmrep_range vec[PMREP_MIRROR_PERSISTV_MAX];
	unsigned nv = 0;
	for (unsigned i = 0; i < n; i++) {
		if (nv == PMREP_MIRROR_PERSISTV_MAX) {
			if (vol_persistv(v, vec, nv))
				return -1;
			nv = 0;
		}
		vec[nv].offset = (size_t)(off + d[i].lo);
		vec[nv].length = (size_t)(d[i].hi - d[i].lo);
		nv++;
	}
	if (v->size_dirty[k]) {
		if (nv == PMREP_MIRROR_PERSISTV_MAX) {
			if (vol_persistv(v, vec, nv))
				return -1;
			nv = 0;
		}
		vec[nv].offset = (size_t)((uint8_t *)&v->h->r[k].size - v->base);
		vec[nv].length = 8;
		nv++;
	}
	if (nv > 0 && vol_persistv(v, vec, nv))
		return -1;
	v->ndirty[k] = 0;
	v->size_dirty[k] = false;
	return 0;
}

/* ------------------------------------------------------------ volumes */

static int
vol_format(struct volume *v, const char *db)
{
	uint64_t data = v->size;
	if (data < VOL_HDR + 3 * 16 * VOL_ALIGN) {
		sqlite3_log(SQLITE_CANTOPEN, "pmrep: %s: %llu data bytes is too small for a database volume",
				v->path, (unsigned long long)data);
		return SQLITE_CANTOPEN;
	}
	uint64_t wal = align_down(data / 4), jnl = align_down(data / 8), x;
	static const char *const names[2] = { "wal_size", "journal_size" };
	uint64_t *vals[2] = { &wal, &jnl };
	for (int i = 0; i < 2; i++) {
		const char *s = sqlite3_uri_parameter(db, names[i]);
		if (s == NULL)
			continue;
		if (parse_bytes(s, &x) != 0) {
			sqlite3_log(SQLITE_CANTOPEN, "pmrep: %s: %s '%s' is not a size (bytes, K/M/G)",
					v->path, names[i], s);
			return SQLITE_CANTOPEN;
		}
		*vals[i] = align_down(x);
	}
	/* no sum that could wrap: each below the data, then the rest */
	if (wal < 4 * VOL_ALIGN || jnl < 4 * VOL_ALIGN || wal >= data ||
			jnl >= data - wal ||
			data - wal - jnl < 4 * VOL_ALIGN + VOL_HDR) {
		sqlite3_log(SQLITE_CANTOPEN, "pmrep: %s: wal_size %llu and journal_size %llu do not fit %llu data bytes",
				v->path, (unsigned long long)wal,
				(unsigned long long)jnl, (unsigned long long)data);
		return SQLITE_CANTOPEN;
	}
	struct vol_hdr h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, VOL_MAGIC, 8);
	h.version = VOL_VERSION;
	if (getrandom(h.uuid, sizeof(h.uuid), 0) != (ssize_t)sizeof(h.uuid))
		return SQLITE_IOERR;
	h.uuid[0] |= 1;		/* never all zero */
	h.generation = 1;
	h.r[K_MAIN].off = VOL_HDR;
	h.r[K_MAIN].cap = align_down(data - VOL_HDR - wal - jnl);
	h.r[K_WAL].off = VOL_HDR + h.r[K_MAIN].cap;
	h.r[K_WAL].cap = wal;
	h.r[K_JOURNAL].off = h.r[K_WAL].off + wal;
	h.r[K_JOURNAL].cap = jnl;
	h.check = hdr_check(&h);
	memcpy(v->base, &h, sizeof(h));
	/* local only: the mirror's first attach copies it to the replicas */
	int ret = pmrep_pmem_persist(v->pmem, v->base, sizeof(h));
	if (ret) {
		sqlite3_log(SQLITE_IOERR, "pmrep: %s: persist of the volume header: %s",
				v->path, pmrep_err_to_str(ret));
		return SQLITE_IOERR;
	}
	return SQLITE_OK;
}

/* every region after the volume header, inside the data area, apart from
 * the others, its size within its room (no sum that could wrap) */
static bool
regions_valid(const struct vol_hdr *h, uint64_t data)
{
	for (int k = 0; k < K_N; k++) {
		const struct vol_region *r = &h->r[k];
		if (r->off < VOL_HDR || r->off > data || r->cap > data - r->off ||
				r->cap == 0 || r->size > r->cap)
			return false;
		for (int j = 0; j < k; j++) {
			const struct vol_region *o = &h->r[j];
			if (r->off < o->off + o->cap && o->off < r->off + r->cap)
				return false;
		}
	}
	return true;
}

static bool
is_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int
vol_mirror(struct volume *v, const char *db, uint64_t generation)
{
	const char *reps = sqlite3_uri_parameter(db, "replicas");
	if (reps == NULL)
		reps = def_replicas;
	if (reps == NULL || reps[0] == '\0')
		return SQLITE_OK;	/* local only */
	const char *key_file = sqlite3_uri_parameter(db, "key_file");
	if (key_file == NULL)
		key_file = def_key_file;
	if (key_file == NULL) {
		sqlite3_log(SQLITE_CANTOPEN, "pmrep: %s: replicas without key_file", v->path);
		return SQLITE_CANTOPEN;
	}
	unsigned quorum = (unsigned)sqlite3_uri_int64(db, "quorum",
			(sqlite3_int64)defaults.quorum);
	bool tls = sqlite3_uri_boolean(db, "tls", !defaults.no_tls);

	struct pmrep_mirror_cfg *cfg = NULL;
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len = 0;
	int ret = pmrep_key_read_file(key_file, key, sizeof(key), &key_len);
	if (ret == 0)
		ret = pmrep_mirror_cfg_new(&cfg);
	char *list = ret == 0 ? strdup(reps) : NULL;
	if (ret == 0 && list == NULL)
		ret = PMREP_E_NOMEM;
	char *save = NULL;
	for (char *a = list ? strtok_r(list, ",", &save) : NULL; ret == 0 && a;
			a = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(a, ':');
		if (colon == NULL || colon == a || colon[1] == '\0') {
			sqlite3_log(SQLITE_CANTOPEN, "pmrep: replicas: '%s' is not ADDR:PORT", a);
			ret = PMREP_E_INVAL;
			break;
		}
		*colon = '\0';
		ret = pmrep_mirror_cfg_add_replica(cfg, a, colon + 1);
	}
	free(list);
	if (ret == 0) ret = pmrep_mirror_cfg_set_key(cfg, key, key_len);
	memset(key, 0, sizeof(key));
	if (ret == 0) ret = pmrep_mirror_cfg_set_uuid(cfg, v->h->uuid);
	if (ret == 0) ret = pmrep_mirror_cfg_set_generation(cfg, generation);
	if (ret == 0) ret = pmrep_mirror_cfg_set_persist_seq(cfg, true);
	if (ret == 0) ret = pmrep_mirror_cfg_set_quorum(cfg, quorum);
	if (ret == 0) ret = pmrep_mirror_cfg_set_timeout(cfg, v->timeout_ms);
	if (ret == 0) ret = pmrep_mirror_cfg_set_tls(cfg, tls);
	if (ret == 0) ret = pmrep_mirror_cfg_set_background_recovery(cfg, true);
	if (ret == 0) ret = pmrep_mirror_new(v->pmem, cfg, &v->mirror);
	if (cfg != NULL)
		pmrep_mirror_cfg_delete(&cfg);
	if (ret) {
		sqlite3_log(SQLITE_CANTOPEN, "pmrep: %s: the mirror: %s (%s)", v->path,
				pmrep_err_to_str(ret), pmrep_err_msg());
		return ret == PMREP_E_BUSY ? SQLITE_BUSY : SQLITE_CANTOPEN;
	}
	return SQLITE_OK;
}

static void
vol_free(struct volume *v)
{
	if (v->mirror != NULL)
		pmrep_mirror_delete(&v->mirror);
	if (v->pmem != NULL)
		pmrep_pmem_close(&v->pmem);
	for (int k = 0; k < K_N; k++)
		free(v->dirty[k]);
	for (int i = 0; i < v->nshm; i++)
		free(v->shm[i]);
	free(v->shm);
	if (v->ro_fd >= 0)
		close(v->ro_fd);
	pthread_mutex_destroy(&v->mu);
	free(v->path);
	free(v);
}

/* the volume's log is no longer at its path (renamed, deleted, replaced):
 * its path names another database now */
static bool
vol_moved(const struct volume *v)
{
	struct stat st;
	return stat(v->path, &st) != 0 || st.st_dev != v->dev ||
		st.st_ino != v->ino;
}

/* open (or find) the volume of the database `db` (its full path, with
 * its URI parameters); called with volumes_mu held */
static int
vol_open(const char *db, bool readonly, struct volume **out)
{
	for (struct volume *v = volumes; v != NULL; v = v->next)
		if (strcmp(v->path, db) == 0 && !vol_moved(v)) {
			if (v->readonly && !readonly) {
				sqlite3_log(SQLITE_BUSY, "pmrep: %s is open read-only in this process",
						db);
				return SQLITE_BUSY;
			}
			v->refs++;
			*out = v;
			return SQLITE_OK;
		}
	struct volume *v = calloc(1, sizeof(*v));
	if (v == NULL || (v->path = strdup(db)) == NULL) {
		free(v);
		return SQLITE_NOMEM;
	}
	pthread_mutex_init(&v->mu, NULL);
	v->ro_fd = -1;
	v->readonly = readonly;
	v->timeout_ms = (int)sqlite3_uri_int64(db, "timeout_ms",
			defaults.timeout_ms > 0 ? defaults.timeout_ms : 5000);
	for (int k = 0; k < K_N; k++) {
		v->dirty[k] = calloc(DIRTY_MAX, sizeof(struct range));
		if (v->dirty[k] == NULL) {
			vol_free(v);
			return SQLITE_NOMEM;
		}
	}
	struct stat st;
	uint64_t create = 0;
	const char *s = sqlite3_uri_parameter(db, "size");
	if (s == NULL) {
		create = defaults.create_size;
	} else if (parse_bytes(s, &create) != 0 || create == 0) {
		sqlite3_log(SQLITE_CANTOPEN, "pmrep: %s: size '%s' is not a size (bytes > 0, K/M/G)",
				db, s);
		vol_free(v);
		return SQLITE_CANTOPEN;
	}
	if (stat(db, &st) == 0 || readonly)
		create = 0;	/* an existing log, or no creating */
	if (readonly) {
		/* no writer while we read: a target or a mirror holds the
		 * log's exclusive lock, we a shared one for the volume's life */
		v->ro_fd = open(db, O_RDONLY | O_CLOEXEC);
		if (v->ro_fd < 0 || flock(v->ro_fd, LOCK_SH | LOCK_NB) != 0) {
			int busy = v->ro_fd >= 0;
			sqlite3_log(busy ? SQLITE_BUSY : SQLITE_CANTOPEN,
					"pmrep: %s: %s", db, busy ?
					"in use (a pmrep-target serves it, or a writer has it): a read-only open waits for a stopped copy" :
					strerror(errno));
			vol_free(v);
			return busy ? SQLITE_BUSY : SQLITE_CANTOPEN;
		}
	}
	int ret = pmrep_log_open(db, readonly ? PMREP_LOG_RDONLY :
			create ? PMREP_PMEM_CREATE : 0,
			(size_t)create, PMREP_PMEM_GRANULARITY_PAGE, &v->pmem);
	if (ret) {
		sqlite3_log(SQLITE_CANTOPEN, "pmrep: %s: %s (%s)", db,
				pmrep_err_to_str(ret), pmrep_err_msg());
		vol_free(v);
		return ret == PMREP_E_BUSY ? SQLITE_BUSY : SQLITE_CANTOPEN;
	}
	v->base = pmrep_pmem_get_address(v->pmem);
	v->size = pmrep_pmem_get_size(v->pmem);
	v->h = (struct vol_hdr *)v->base;
	int rc = SQLITE_OK;
	bool formatted = false;
	if (stat(db, &st) != 0) {
		rc = SQLITE_CANTOPEN;
	} else {
		v->dev = st.st_dev;
		v->ino = st.st_ino;
	}
	if (rc != SQLITE_OK) {
		/* gone between the open and here */
	} else if (v->size < VOL_HDR) {
		rc = SQLITE_CANTOPEN;
	} else if (memcmp(v->h->magic, VOL_MAGIC, 8) != 0) {
		if (!readonly && is_zero(v->base, VOL_HDR)) {
			rc = vol_format(v, db);
			formatted = rc == SQLITE_OK;
		}
		else {
			sqlite3_log(SQLITE_NOTADB, "pmrep: %s: not a database volume (no pmrep-sqlite header)",
					db);
			rc = readonly ? SQLITE_CANTOPEN : SQLITE_NOTADB;
		}
	}
	if (rc == SQLITE_OK && (v->h->version != VOL_VERSION ||
			v->h->check != hdr_check(v->h))) {
		sqlite3_log(SQLITE_CORRUPT, "pmrep: %s: the volume header is damaged or of another version",
				db);
		rc = SQLITE_CORRUPT;
	}
	if (rc == SQLITE_OK && !regions_valid(v->h, v->size)) {
		sqlite3_log(SQLITE_CORRUPT, "pmrep: %s: the volume's regions do not fit its data area, overlap or overlap the volume header",
				db);
		rc = SQLITE_CORRUPT;
	}
	if (rc == SQLITE_OK && !readonly) {
		/* a promoted log: its header's generation is the mirror's */
		uint64_t gen = v->h->generation, log_gen = 0;
		if (pmrep_log_get_generation(v->pmem, &log_gen) == 0 &&
				log_gen > gen)
			gen = log_gen;
		rc = vol_mirror(v, db, gen);
		if (rc == SQLITE_OK && gen != v->h->generation) {
			v->h->generation = gen;
			uint64_t at = (uint64_t)((uint8_t *)&v->h->generation - v->base);
			if (vol_persist(v, at, 8))
				rc = SQLITE_IOERR;
		}
	}
	if (rc != SQLITE_OK) {
		if (formatted && !create && v->mirror == NULL) {
			/* a refused open of an existing log leaves its data as
			 * it was: the volume header it wrote is zeroed again */
			memset(v->base, 0, VOL_HDR);
			(void) pmrep_pmem_persist(v->pmem, v->base, VOL_HDR);
		}
		vol_free(v);
		if (create)	/* a refused open leaves no file behind */
			(void) unlink(db);
		return rc;
	}
	for (int k = 0; k < K_N; k++)
		v->sz[k] = v->h->r[k].size;
	v->refs = 1;
	v->next = volumes;
	volumes = v;
	*out = v;
	return SQLITE_OK;
}

static void
vol_release(struct volume *v)
{
	pthread_mutex_lock(&volumes_mu);
	if (--v->refs == 0) {
		for (struct volume **pp = &volumes; *pp; pp = &(*pp)->next)
			if (*pp == v) {
				*pp = v->next;
				break;
			}
		/* what no sync covered is not promised; a clean close of the
		 * mirror records the run's end on the replicas */
		vol_free(v);
	}
	pthread_mutex_unlock(&volumes_mu);
}

/* the open volume whose database `name` is, less `suffix` (one still at
 * its path) */
static struct volume *
vol_of(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	if (n <= s || strcmp(name + n - s, suffix) != 0)
		return NULL;
	for (struct volume *v = volumes; v != NULL; v = v->next)
		if (strlen(v->path) == n - s && strncmp(v->path, name, n - s) == 0 &&
				!vol_moved(v))
			return v;
	return NULL;
}

/*
 * file k is `size` bytes long now (v->mu held): its recorded size follows,
 * persisted at the next sync -- exactly, but for the WAL growing (not
 * `exact`): recorded in steps of WAL_SIZE_STEP
 */
static void
set_size(struct volume *v, enum kind k, uint64_t size, bool exact)
{
	struct vol_region *r = &v->h->r[k];
	__atomic_store_n(&v->sz[k], size, __ATOMIC_RELEASE);
	uint64_t rec = size;
	if (k == K_WAL && !exact) {
		if (size <= r->size)
			return;
		rec = (size + WAL_SIZE_STEP - 1) / WAL_SIZE_STEP * WAL_SIZE_STEP;
		if (rec > r->cap)
			rec = r->cap;
	}
	if (rec != r->size) {
		__atomic_store_n(&r->size, rec, __ATOMIC_RELEASE);
		v->size_dirty[k] = true;
	}
}

/*
 * file k grows from its size to `to` (v->mu held): the bytes between read
 * as zeros, as a file's hole does -- the region still holds what an
 * earlier file of that kind left there (a deleted journal's header and
 * pages: played back as the new journal's after a crash)
 */
static void
zero_gap(struct volume *v, enum kind k, uint64_t to)
{
	uint64_t from = v->sz[k];
	if (to <= from)
		return;
	memset(v->base + v->h->r[k].off + from, 0, (size_t)(to - from));
	dirty_add(v, k, from, to);
}

/*
 * file k emptied (deleted, truncated to 0; v->mu held): its first bytes
 * -- a journal's or WAL's header -- are zeroed and persisted with its
 * size, so that its old contents cannot be replayed as a hot journal or
 * WAL should the recorded size ever read larger (the size is outside the
 * volume header's check)
 */
static void
zero_head(struct volume *v, enum kind k)
{
	uint64_t n = v->h->r[k].cap < 512 ? v->h->r[k].cap : 512;
	memset(v->base + v->h->r[k].off, 0, (size_t)n);
	dirty_add(v, k, 0, n);
}

/* ------------------------------------------------------------ file I/O */

static int
p_close(sqlite3_file *f)
{
	struct pfile *p = (struct pfile *)f;
	if (p->kind == K_MAIN) {
		struct volume *v = p->v;
		pthread_mutex_lock(&v->mu);
		if (p->lock >= SQLITE_LOCK_SHARED)
			v->shared--;
		if (v->reserved == p) v->reserved = NULL;
		if (v->pending == p) v->pending = NULL;
		if (v->exclusive == p) v->exclusive = NULL;
		p->lock = SQLITE_LOCK_NONE;
		pthread_mutex_unlock(&v->mu);
	}
	vol_release(p->v);
	return SQLITE_OK;
}

static int
p_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	struct vol_region *r = &v->h->r[p->kind];
	uint64_t size = __atomic_load_n(&v->sz[p->kind], __ATOMIC_ACQUIRE);
	if (off < 0 || amt < 0)
		return SQLITE_IOERR_READ;
	uint64_t have = (uint64_t)off >= size ? 0 : size - (uint64_t)off;
	size_t n = have < (uint64_t)amt ? (size_t)have : (size_t)amt;
	memcpy(buf, v->base + r->off + (uint64_t)off, n);
	if (n < (size_t)amt) {
		memset((uint8_t *)buf + n, 0, (size_t)amt - n);
		return SQLITE_IOERR_SHORT_READ;
	}
	return SQLITE_OK;
}

static int
p_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	if (v->readonly)
		return SQLITE_READONLY;
	if (off < 0 || amt < 0)
		return SQLITE_IOERR_WRITE;
	struct vol_region *r = &v->h->r[p->kind];
	uint64_t end = (uint64_t)off + (uint64_t)amt;
	if (end > r->cap) {
		sqlite3_log(SQLITE_FULL, "pmrep: %s: the %s's room (%llu bytes) is full",
				v->path, p->kind == K_MAIN ? "database" :
				p->kind == K_WAL ? "WAL" : "journal",
				(unsigned long long)r->cap);
		return SQLITE_FULL;
	}
	pthread_mutex_lock(&v->mu);
	if (v->failed) {
		pthread_mutex_unlock(&v->mu);
		return SQLITE_IOERR_WRITE;
	}
	zero_gap(v, p->kind, (uint64_t)off);
	memcpy(v->base + r->off + (uint64_t)off, buf, (size_t)amt);
	dirty_add(v, p->kind, (uint64_t)off, end);
	if (end > v->sz[p->kind])
		set_size(v, p->kind, end, false);
	pthread_mutex_unlock(&v->mu);
	return SQLITE_OK;
}

static int
p_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	if (v->readonly)
		return SQLITE_READONLY;
	struct vol_region *r = &v->h->r[p->kind];
	if (size < 0 || (uint64_t)size > r->cap)
		return SQLITE_IOERR_TRUNCATE;
	pthread_mutex_lock(&v->mu);
	int rc = SQLITE_OK;
	if (v->failed) {
		rc = SQLITE_IOERR_TRUNCATE;
	} else if ((uint64_t)size != v->sz[p->kind]) {
		zero_gap(v, p->kind, (uint64_t)size);
		set_size(v, p->kind, (uint64_t)size, true);
		if (size == 0)
			zero_head(v, p->kind);
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static int
p_sync(sqlite3_file *f, int flags)
{
	(void)flags;
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	if (v->readonly)
		return SQLITE_OK;
	pthread_mutex_lock(&v->mu);
	int rc = vol_sync(v, p->kind) ? SQLITE_IOERR_FSYNC : SQLITE_OK;
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static int
p_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	struct pfile *p = (struct pfile *)f;
	*size = (sqlite3_int64)__atomic_load_n(&p->v->sz[p->kind],
			__ATOMIC_ACQUIRE);
	return SQLITE_OK;
}

/* SQLite's locks of the main database, among this process's connections */
static int
p_lock(sqlite3_file *f, int level)
{
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	int rc = SQLITE_OK;
	pthread_mutex_lock(&v->mu);
	if (p->lock >= level) {
		/* held */
	} else if (level == SQLITE_LOCK_SHARED) {
		if ((v->pending && v->pending != p) ||
				(v->exclusive && v->exclusive != p))
			rc = SQLITE_BUSY;
		else {
			v->shared++;
			p->lock = SQLITE_LOCK_SHARED;
		}
	} else if (level == SQLITE_LOCK_RESERVED) {
		if (v->reserved && v->reserved != p)
			rc = SQLITE_BUSY;
		else {
			v->reserved = p;
			p->lock = SQLITE_LOCK_RESERVED;
		}
	} else if (level == SQLITE_LOCK_EXCLUSIVE) {
		if ((v->pending && v->pending != p) ||
				(v->exclusive && v->exclusive != p)) {
			rc = SQLITE_BUSY;
		} else {
			v->pending = p;
			if (v->shared > 1) {
				p->lock = SQLITE_LOCK_PENDING;
				rc = SQLITE_BUSY;
			} else {
				v->exclusive = p;
				p->lock = SQLITE_LOCK_EXCLUSIVE;
			}
		}
	} else {
		rc = SQLITE_IOERR_LOCK;
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static int
p_unlock(sqlite3_file *f, int level)
{
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	pthread_mutex_lock(&v->mu);
	if (p->lock > level) {
		if (v->pending == p)
			v->pending = NULL;
		if (v->exclusive == p)
			v->exclusive = NULL;
		if (level < SQLITE_LOCK_RESERVED && v->reserved == p)
			v->reserved = NULL;
		if (level == SQLITE_LOCK_NONE && p->lock >= SQLITE_LOCK_SHARED)
			v->shared--;
		p->lock = level;
	}
	pthread_mutex_unlock(&v->mu);
	return SQLITE_OK;
}

static int
p_check_reserved(sqlite3_file *f, int *out)
{
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	pthread_mutex_lock(&v->mu);
	*out = v->reserved != NULL || v->pending != NULL || v->exclusive != NULL;
	pthread_mutex_unlock(&v->mu);
	return SQLITE_OK;
}

static int
p_file_control(sqlite3_file *f, int op, void *arg)
{
	struct pfile *p = (struct pfile *)f;
	switch (op) {
	case SQLITE_FCNTL_VFSNAME:
		*(char **)arg = sqlite3_mprintf("pmrep");
		return SQLITE_OK;
	case SQLITE_FCNTL_PERSIST_WAL:
		/* the WAL is kept (not deleted) at the last close */
		if (*(int *)arg < 0)
			*(int *)arg = p->persist_wal;
		else
			p->persist_wal = *(int *)arg != 0;
		return SQLITE_OK;
	case SQLITE_FCNTL_POWERSAFE_OVERWRITE:
		if (*(int *)arg < 0)
			*(int *)arg = !p->no_psow;
		else
			p->no_psow = *(int *)arg == 0;
		return SQLITE_OK;
	case SQLITE_FCNTL_LOCKSTATE:
		/* this connection's lock of the database (PRAGMA lock_status) */
		*(int *)arg = p->lock;
		return SQLITE_OK;
	case SQLITE_FCNTL_HAS_MOVED:
		/* the log renamed or deleted: SQLite refuses writes
		 * (SQLITE_READONLY_DBMOVED) */
		*(int *)arg = p->kind == K_MAIN && vol_moved(p->v);
		return SQLITE_OK;
	default:
		return SQLITE_NOTFOUND;
	}
}

static int
p_sector_size(sqlite3_file *f)
{
	(void)f;
	return (int)VOL_ALIGN;
}

static int
p_device_characteristics(sqlite3_file *f)
{
	struct pfile *p = (struct pfile *)f;
	/* a write never changes bytes outside its range */
	return p->no_psow ? 0 : SQLITE_IOCAP_POWERSAFE_OVERWRITE;
}

/* the WAL index: heap regions shared by this process's connections */
static int
p_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **pp)
{
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	int rc = SQLITE_OK;
	pthread_mutex_lock(&v->mu);
	if (!p->shm_mapped) {
		p->shm_mapped = true;
		v->shm_refs++;
	}
	*pp = NULL;
	if (region >= v->nshm && extend) {
		void **n = realloc(v->shm, (size_t)(region + 1) * sizeof(void *));
		if (n == NULL) {
			rc = SQLITE_NOMEM;
		} else {
			v->shm = n;
			while (v->nshm <= region) {
				v->shm[v->nshm] = calloc(1, (size_t)size);
				if (v->shm[v->nshm] == NULL) {
					rc = SQLITE_NOMEM;
					break;
				}
				v->nshm++;
			}
		}
	}
	if (rc == SQLITE_OK && region < v->nshm)
		*pp = v->shm[region];
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static int
p_shm_lock(sqlite3_file *f, int ofst, int n, int flags)
{
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	if (ofst < 0 || n < 1 || ofst + n > SHM_LOCKS)
		return SQLITE_IOERR_SHMLOCK;
	int rc = SQLITE_OK;
	pthread_mutex_lock(&v->mu);
	if (flags & SQLITE_SHM_UNLOCK) {
		for (int i = ofst; i < ofst + n; i++) {
			if (p->shm_sh[i]) {
				v->shm_shared[i]--;
				p->shm_sh[i] = false;
			}
			if (v->shm_excl[i] == p)
				v->shm_excl[i] = NULL;
		}
	} else if (flags & SQLITE_SHM_SHARED) {
		for (int i = ofst; i < ofst + n; i++)
			if (v->shm_excl[i] && v->shm_excl[i] != p)
				rc = SQLITE_BUSY;
		for (int i = ofst; rc == SQLITE_OK && i < ofst + n; i++)
			if (!p->shm_sh[i]) {
				v->shm_shared[i]++;
				p->shm_sh[i] = true;
			}
	} else {
		for (int i = ofst; i < ofst + n; i++)
			if ((v->shm_excl[i] && v->shm_excl[i] != p) ||
					v->shm_shared[i] - (p->shm_sh[i] ? 1 : 0) > 0)
				rc = SQLITE_BUSY;
		for (int i = ofst; rc == SQLITE_OK && i < ofst + n; i++)
			v->shm_excl[i] = p;
	}
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static void
p_shm_barrier(sqlite3_file *f)
{
	(void)f;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static int
p_shm_unmap(sqlite3_file *f, int delete_flag)
{
	(void)delete_flag;
	struct pfile *p = (struct pfile *)f;
	struct volume *v = p->v;
	pthread_mutex_lock(&v->mu);
	for (int i = 0; i < SHM_LOCKS; i++) {
		if (p->shm_sh[i]) {
			v->shm_shared[i]--;
			p->shm_sh[i] = false;
		}
		if (v->shm_excl[i] == p)
			v->shm_excl[i] = NULL;
	}
	if (p->shm_mapped) {
		p->shm_mapped = false;
		if (--v->shm_refs == 0) {
			for (int i = 0; i < v->nshm; i++)
				free(v->shm[i]);
			free(v->shm);
			v->shm = NULL;
			v->nshm = 0;
		}
	}
	pthread_mutex_unlock(&v->mu);
	return SQLITE_OK;
}

static const sqlite3_io_methods io_methods = {
	.iVersion = 2,
	.xClose = p_close,
	.xRead = p_read,
	.xWrite = p_write,
	.xTruncate = p_truncate,
	.xSync = p_sync,
	.xFileSize = p_file_size,
	.xLock = p_lock,
	.xUnlock = p_unlock,
	.xCheckReservedLock = p_check_reserved,
	.xFileControl = p_file_control,
	.xSectorSize = p_sector_size,
	.xDeviceCharacteristics = p_device_characteristics,
	.xShmMap = p_shm_map,
	.xShmLock = p_shm_lock,
	.xShmBarrier = p_shm_barrier,
	.xShmUnmap = p_shm_unmap,
};

/* ----------------------------------------------------------------- VFS */

static int
v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
		int *out_flags)
{
	(void)vfs;
	struct pfile *p = (struct pfile *)f;
	memset(p, 0, sizeof(*p));
	enum kind kind;
	if (flags & SQLITE_OPEN_MAIN_DB)
		kind = K_MAIN;
	else if (flags & SQLITE_OPEN_WAL)
		kind = K_WAL;
	else if (flags & SQLITE_OPEN_MAIN_JOURNAL)
		kind = K_JOURNAL;
	else	/* temporary files, sub- and super-journals: not replicated */
		return orig->xOpen(orig, name, f, flags, out_flags);
	if (name == NULL)
		return SQLITE_CANTOPEN;
	bool ro = (flags & SQLITE_OPEN_READONLY) != 0;
	int rc = SQLITE_OK;
	struct volume *v = NULL;
	pthread_mutex_lock(&volumes_mu);
	if (kind == K_MAIN) {
		rc = vol_open(name, ro, &v);
	} else {
		v = vol_of(name, kind == K_WAL ? "-wal" : "-journal");
		if (v == NULL)
			rc = SQLITE_CANTOPEN;
		else
			v->refs++;
	}
	pthread_mutex_unlock(&volumes_mu);
	if (rc != SQLITE_OK)
		return rc;
	p->v = v;
	p->kind = kind;
	p->base.pMethods = &io_methods;
	if (out_flags != NULL)
		*out_flags = v->readonly ? (flags & ~SQLITE_OPEN_READWRITE) |
				SQLITE_OPEN_READONLY : flags;
	return SQLITE_OK;
}

/* the open volume whose WAL or journal `name` is (*k which); NULL: none */
static struct volume *
vol_of_file(const char *name, enum kind *k)
{
	*k = K_WAL;
	struct volume *v = vol_of(name, "-wal");
	if (v == NULL) {
		*k = K_JOURNAL;
		v = vol_of(name, "-journal");
	}
	return v;
}

static int
v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	pthread_mutex_lock(&volumes_mu);
	enum kind k;
	struct volume *v = vol_of_file(name, &k);
	if (v == NULL) {
		pthread_mutex_unlock(&volumes_mu);
		return orig->xDelete(orig, name, sync_dir);
	}
	/* a region's file is "deleted" by its size going to 0, persisted */
	int rc = SQLITE_OK;
	pthread_mutex_lock(&v->mu);
	if (v->readonly) {
		rc = SQLITE_READONLY;
	} else if (v->h->r[k].size != 0 || v->size_dirty[k]) {
		set_size(v, k, 0, true);
		v->ndirty[k] = 0;
		zero_head(v, k);
		if (vol_sync(v, k))
			rc = SQLITE_IOERR_DELETE;
	}
	pthread_mutex_unlock(&v->mu);
	pthread_mutex_unlock(&volumes_mu);
	return rc;
}

static int
v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	pthread_mutex_lock(&volumes_mu);
	enum kind k;
	struct volume *v = vol_of_file(name, &k);
	if (v != NULL) {
		*out = flags == SQLITE_ACCESS_READWRITE ? !v->readonly :
			__atomic_load_n(&v->sz[k], __ATOMIC_ACQUIRE) > 0;
		pthread_mutex_unlock(&volumes_mu);
		return SQLITE_OK;
	}
	pthread_mutex_unlock(&volumes_mu);
	return orig->xAccess(orig, name, flags, out);
}

static int
v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return orig->xFullPathname(orig, name, n, out);
}

static int
v_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return orig->xRandomness(orig, n, out);
}

static int
v_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return orig->xSleep(orig, us);
}

static int
v_current_time(sqlite3_vfs *vfs, double *t)
{
	(void)vfs;
	return orig->xCurrentTime(orig, t);
}

static int
v_get_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return orig->xGetLastError(orig, n, out);
}

static int
v_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *t)
{
	(void)vfs;
	return orig->xCurrentTimeInt64(orig, t);
}

static sqlite3_vfs pmrep_vfs = {
	.iVersion = 2,
	.szOsFile = 0,		/* set at registration: the larger of ours and the default's */
	.mxPathname = 0,
	.zName = "pmrep",
	.xOpen = v_open,
	.xDelete = v_delete,
	.xAccess = v_access,
	.xFullPathname = v_full_pathname,
	.xRandomness = v_randomness,
	.xSleep = v_sleep,
	.xCurrentTime = v_current_time,
	.xGetLastError = v_get_last_error,
	.xCurrentTimeInt64 = v_current_time_int64,
};

PMREP_SQLITE_API int
pmrep_sqlite_register(const struct pmrep_sqlite_options *opts, int make_default)
{
	if (orig == NULL) {
		orig = sqlite3_vfs_find(NULL);
		if (orig == NULL || orig == &pmrep_vfs)
			return SQLITE_ERROR;
		pmrep_vfs.szOsFile = orig->szOsFile > (int)sizeof(struct pfile) ?
			orig->szOsFile : (int)sizeof(struct pfile);
		pmrep_vfs.mxPathname = orig->mxPathname;
	}
	char *r = NULL, *k = NULL;
	if (opts != NULL && opts->replicas != NULL && (r = strdup(opts->replicas)) == NULL)
		return SQLITE_NOMEM;
	if (opts != NULL && opts->key_file != NULL && (k = strdup(opts->key_file)) == NULL) {
		free(r);
		return SQLITE_NOMEM;
	}
	free(def_replicas);
	free(def_key_file);
	def_replicas = r;
	def_key_file = k;
	memset(&defaults, 0, sizeof(defaults));
	if (opts != NULL) {
		defaults.quorum = opts->quorum;
		defaults.no_tls = opts->no_tls;
		defaults.timeout_ms = opts->timeout_ms;
		defaults.create_size = opts->create_size;
	}
	const char *cs = getenv("PMREP_SQLITE_CREATE_SIZE");
	if (defaults.create_size == 0 && cs != NULL &&
			parse_bytes(cs, &defaults.create_size) != 0)
		defaults.create_size = 0;
	return sqlite3_vfs_register(&pmrep_vfs, make_default);
}

#ifdef PMREP_SQLITE_EXTENSION
/* `.load pmrep_sqlite`: the VFS "pmrep" registered for the process, with
 * no default replicas (a database's URI names them) */
__attribute__((visibility("default"))) int
sqlite3_pmrepsqlite_init(sqlite3 *db, char **err, const sqlite3_api_routines *api)
{
	(void)db;
	SQLITE_EXTENSION_INIT2(api);
	int rc = pmrep_sqlite_register(NULL, 0);
	if (rc != SQLITE_OK) {
		*err = sqlite3_mprintf("pmrep_sqlite: cannot register the VFS (%d)", rc);
		return rc;
	}
	return SQLITE_OK_LOAD_PERMANENTLY;
}
#endif
