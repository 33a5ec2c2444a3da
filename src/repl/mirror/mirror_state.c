/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_state.c -- the mirror's record (mirror_state.h): in memory, or in
 * the mirror state file, mapped through the pmem layer (pmem on pmem
 * machines, page granularity elsewhere) and persisted only through
 * pmrep_pmem_persist.
 *
 * File layout, little-endian:
 *      0  metadata slot 0 (MST_SLOT_SIZE bytes, the rest of 0..2047 zero)
 *   2048  metadata slot 1 (same layout; another cache line and page half)
 *   4096  AL: one bit per region (bit r % 64 of word r / 64), area rounded
 *         up to 4 KiB (bm_bytes)
 *   4096 + (1 + i) * bm_bytes  OOS[i], i = 0 .. PMREP_MIRROR_MAX_REPLICAS-1,
 *         the same shape
 *   file size: 4096 + (1 + PMREP_MIRROR_MAX_REPLICAS) * bm_bytes
 *
 * Slot:
 *      0  u8[8]  magic "PMREPMST"
 *      8  u32    version (1)
 *     12  u32    slot length (MST_SLOT_SIZE = 280; a slot of 272 bytes,
 *           written before the high-water mark existed, is read with
 *           the mark 0)
 *     16  u64    slot sequence (> 0; the valid slot with the highest wins)
 *     24  u8[16] replica-set UUID
 *     40  u64    primary id
 *     48  u64    generation
 *     56  u64    data size in bytes
 *     64  u64    region size in bytes (a power of two)
 *     72  u8[16][PMREP_MIRROR_MAX_REPLICAS]  rec_id[i] (all zero: none)
 *    200  u64[PMREP_MIRROR_MAX_REPLICAS]  rec_seq[i]: the header slot
 *           sequence replica rec_id[i] holds after the last header write
 *           of ours it was sent (COMMIT, CLOSE)
 *    264  u64    persist sequence high-water mark: every persist sequence a
 *           mirror of this record gave is below it (pmrep_mirror_new
 *           raises it before its first step when persist sequences are on)
 *    272  u64    checksum: Fletcher-64 (replica_fletcher64) of bytes 0..271
 *           (in a 272-byte slot: at 264, of bytes 0..263)
 *
 * An update encodes the whole state with sequence + 1 into the slot not
 * holding the newest state and persists that slot: a torn update leaves
 * that slot invalid (checksum) or complete, and the other slot as it was.
 * Bitmap words change by 8-byte stores. A file whose two slots are all
 * zero (its creation was cut short before the first slot was durable) is
 * initialized as a new one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmrep/pmem.h>

#include "common/log.h"
#include "common/wire.h"
#include "repl/wire/auth.h"
#include "mirror_state.h"
#include "repl/media/replica_hdr.h"

#define MST_VERSION 1
#define MST_SLOT_SIZE 280
#define MST_SLOT_SIZE_V1 272	/* without the high-water mark */
#define MST_REC_SEQ_OFF 200
#define MST_PSN_HW_OFF 264
#define MST_CSUM_OFF 272
#define MST_SLOT1_OFF 2048
#define MST_BITMAP_OFF 4096
#define MST_NBITMAPS (1 + PMREP_MIRROR_MAX_REPLICAS)
#define MST_PAGE 4096u

static const uint8_t mst_magic[8] = { 'P', 'M', 'R', 'E', 'P', 'M', 'S', 'T' };
static const size_t slot_off[2] = { 0, MST_SLOT1_OFF };

struct mirror_state {
	struct pmrep_pmem *pmem;	/* NULL: in memory */
	uint8_t *base;
	char *path;
	int lock_fd;			/* holds flock(LOCK_EX) on the file; -1 */
	/* the newest durable slot */
	unsigned cur;			/* 0 / 1 */
	uint64_t seq;
	uint8_t uuid[PMREP_UUID_SIZE];
	uint64_t primary_id;
	uint64_t generation;
	uint64_t data_size;
	uint64_t region_size;
	uint8_t rec_id[PMREP_MIRROR_MAX_REPLICAS][PMREP_UUID_SIZE];
	uint64_t rec_seq[PMREP_MIRROR_MAX_REPLICAS];
	uint64_t psn_hw;		/* persist sequence high-water mark */
	/* the bitmaps (their words in the file when persistent) */
	size_t bm_bytes;		/* each bitmap's area in the file */
	size_t nwords;			/* words of each bitmap */
	struct repl_bitmap oos[PMREP_MIRROR_MAX_REPLICAS];
	struct repl_bitmap al;
	bool al_dirty;			/* AL bits set whose persist failed */
	uint64_t writes;
};

/* ----------------------------------------------------------- layout */

static size_t
bm_area_bytes(size_t nwords)
{
	size_t b = nwords * sizeof(uint64_t);
	return (b + MST_PAGE - 1) / MST_PAGE * MST_PAGE;
}

static uint64_t *
bm_words(struct mirror_state *st, unsigned k)	/* k 0: AL, 1 + i: OOS[i] */
{
	return (uint64_t *)(void *)(st->base + MST_BITMAP_OFF + k * st->bm_bytes);
}

static void
slot_encode(const struct mirror_state *st, uint64_t seq, uint8_t *out)
{
	memset(out, 0, MST_SLOT_SIZE);
	memcpy(out, mst_magic, sizeof(mst_magic));
	pmrep_put_le32(out + 8, MST_VERSION);
	pmrep_put_le32(out + 12, MST_SLOT_SIZE);
	pmrep_put_le64(out + 16, seq);
	memcpy(out + 24, st->uuid, PMREP_UUID_SIZE);
	pmrep_put_le64(out + 40, st->primary_id);
	pmrep_put_le64(out + 48, st->generation);
	pmrep_put_le64(out + 56, st->data_size);
	pmrep_put_le64(out + 64, st->region_size);
	memcpy(out + 72, st->rec_id, sizeof(st->rec_id));
	for (unsigned i = 0; i < PMREP_MIRROR_MAX_REPLICAS; i++)
		pmrep_put_le64(out + MST_REC_SEQ_OFF + 8 * i, st->rec_seq[i]);
	pmrep_put_le64(out + MST_PSN_HW_OFF, st->psn_hw);
	pmrep_put_le64(out + MST_CSUM_OFF, replica_fletcher64(out, MST_CSUM_OFF));
}

struct slot {
	uint64_t seq;
	uint8_t uuid[PMREP_UUID_SIZE];
	uint64_t primary_id, generation, data_size, region_size;
	uint8_t rec_id[PMREP_MIRROR_MAX_REPLICAS][PMREP_UUID_SIZE];
	uint64_t rec_seq[PMREP_MIRROR_MAX_REPLICAS];
	uint64_t psn_hw;
};

/* true when the slot bytes are a complete, valid slot */
static bool
slot_decode(const uint8_t *in, struct slot *s)
{
	uint32_t len = pmrep_get_le32(in + 12);
	size_t csum = len == MST_SLOT_SIZE_V1 ? MST_PSN_HW_OFF : MST_CSUM_OFF;
	if (memcmp(in, mst_magic, sizeof(mst_magic)) != 0 ||
			pmrep_get_le32(in + 8) != MST_VERSION ||
			(len != MST_SLOT_SIZE && len != MST_SLOT_SIZE_V1) ||
			pmrep_get_le64(in + csum) != replica_fletcher64(in, csum))
		return false;
	s->psn_hw = len == MST_SLOT_SIZE ? pmrep_get_le64(in + MST_PSN_HW_OFF) : 0;
	s->seq = pmrep_get_le64(in + 16);
	memcpy(s->uuid, in + 24, PMREP_UUID_SIZE);
	s->primary_id = pmrep_get_le64(in + 40);
	s->generation = pmrep_get_le64(in + 48);
	s->data_size = pmrep_get_le64(in + 56);
	s->region_size = pmrep_get_le64(in + 64);
	memcpy(s->rec_id, in + 72, sizeof(s->rec_id));
	for (unsigned i = 0; i < PMREP_MIRROR_MAX_REPLICAS; i++)
		s->rec_seq[i] = pmrep_get_le64(in + MST_REC_SEQ_OFF + 8 * i);
	return s->seq != 0 && repl_bitmap_words(s->data_size, s->region_size) != 0;
}

static void
uuid_str(const uint8_t *u, char out[2 * PMREP_UUID_SIZE + 1])
{
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", u[i]);
}

/* ----------------------------------------------------------- writes */

/* every persist of the record goes through here */
static int
st_persist(struct mirror_state *st, const void *ptr, size_t len,
		const char *what)
{
	st->writes++;
	/* one DEBUG line per record write (pmrep-bench counts them) */
	if (pmrep_log_get_threshold() >= PMREP_LOG_DEBUG)
		PMREP_LOG_DBG("mirror state file %s: record write %llu: %s, %zu bytes",
				st->path, (unsigned long long)st->writes, what, len);
	int ret = pmrep_pmem_persist(st->pmem, ptr, len);
	if (ret)
		PMREP_LOG_ERR("mirror state file %s: persisting %s failed: %s",
				st->path, what, pmrep_err_to_str(ret));
	return ret;
}

/* persist words [w0, w1] of bitmap k */
static int
bm_persist(struct mirror_state *st, unsigned k, size_t w0, size_t w1)
{
	return st_persist(st, bm_words(st, k) + w0,
			(w1 - w0 + 1) * sizeof(uint64_t),
			k == 0 ? "the activity log" : "an out-of-sync set");
}

/* the fields of st as the next slot (sequence + 1), durable on return;
 * on an error the newest valid slot is still the one before */
static int
slot_write(struct mirror_state *st)
{
	if (st->pmem == NULL)
		return 0;
	unsigned next = st->cur ^ 1;
	uint8_t *p = st->base + slot_off[next];
	slot_encode(st, st->seq + 1, p);
	int ret = st_persist(st, p, MST_SLOT_SIZE, "a metadata slot");
	if (ret)
		return ret;
	st->cur = next;
	st->seq++;
	return 0;
}

/* ------------------------------------------------------------- open */

static int
bitmaps_init(struct mirror_state *st)
{
	int ret = 0;
	if (st->pmem == NULL) {
		ret = repl_bitmap_init(&st->al, st->data_size, st->region_size);
		for (unsigned i = 0; ret == 0 && i < PMREP_MIRROR_MAX_REPLICAS; i++)
			ret = repl_bitmap_init(&st->oos[i], st->data_size,
					st->region_size);
		return ret;
	}
	ret = repl_bitmap_init_ext(&st->al, bm_words(st, 0), st->data_size,
			st->region_size);
	for (unsigned i = 0; ret == 0 && i < PMREP_MIRROR_MAX_REPLICAS; i++)
		ret = repl_bitmap_init_ext(&st->oos[i], bm_words(st, 1 + i),
				st->data_size, st->region_size);
	return ret;
}

/* a new record in a zeroed file: the first slot */
static int
st_format(struct mirror_state *st, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation)
{
	int ret = repl_random(&st->primary_id, sizeof(st->primary_id));
	if (ret)
		return ret;
	memcpy(st->uuid, uuid, PMREP_UUID_SIZE);
	st->generation = generation;
	memset(st->rec_id, 0, sizeof(st->rec_id));
	memset(st->rec_seq, 0, sizeof(st->rec_seq));
	st->seq = 0;
	st->cur = 1;		/* the first slot written is slot 0 */
	return slot_write(st);
}

/*
 * what a crash may have left in flight is in AL: fold it into every
 * OOS[i] (a slot with a rec_id needs it; for the others it costs at most
 * a redundant copy, and keeps an attach rule that trusts the primary id
 * safe), make that durable, then clear AL
 */
static int
al_fold(struct mirror_state *st)
{
	if (st->al.nset == 0)
		return 0;
	uint64_t *al = st->al.words;
	for (unsigned i = 0; i < PMREP_MIRROR_MAX_REPLICAS; i++) {
		struct repl_bitmap *b = &st->oos[i];
		for (size_t w = 0; w < st->nwords; w++) {
			uint64_t add = al[w] & ~b->words[w];
			if (add) {
				b->words[w] |= add;
				b->nset += (size_t)__builtin_popcountll(add);
			}
		}
	}
	int ret = st_persist(st, bm_words(st, 1),
			PMREP_MIRROR_MAX_REPLICAS * st->bm_bytes,
			"the out-of-sync sets");
	if (ret)
		return ret;
	PMREP_LOG(PMREP_LOG_NOTICE, "mirror state file %s: %zu regions marked in the activity log (written since it was last cleared; a crash may have left them in flight): out of sync for every replica now",
			st->path, st->al.nset);
	memset(al, 0, st->nwords * sizeof(uint64_t));
	st->al.nset = 0;
	return bm_persist(st, 0, 0, st->nwords - 1);
}

/* check a loaded slot against this mirror; nothing is written */
static int
st_check(const struct mirror_state *st, const struct slot *s,
		const uint8_t uuid[PMREP_UUID_SIZE], uint64_t generation,
		uint64_t data_size, uint64_t region_size)
{
	if (memcmp(s->uuid, uuid, PMREP_UUID_SIZE) != 0) {
		char a[2 * PMREP_UUID_SIZE + 1], b[2 * PMREP_UUID_SIZE + 1];
		uuid_str(s->uuid, a);
		uuid_str(uuid, b);
		PMREP_LOG_ERR("mirror state file %s belongs to replica set %s, this mirror's is %s (another set's record: give this mirror a state path of its own)",
				st->path, a, b);
		return PMREP_E_MISMATCH;
	}
	if (s->data_size != data_size) {
		PMREP_LOG_ERR("mirror state file %s is the record of %" PRIu64 " data bytes, this mirror's mapping has %" PRIu64,
				st->path, s->data_size, data_size);
		return PMREP_E_RANGE;
	}
	if (s->region_size != region_size) {
		PMREP_LOG_ERR("mirror state file %s has a region size of %" PRIu64 " bytes, this mirror's is %" PRIu64,
				st->path, s->region_size, region_size);
		return PMREP_E_INVAL;
	}
	if (s->generation > generation) {
		PMREP_LOG_ERR("mirror state file %s holds generation %" PRIu64 ", newer than this mirror's %" PRIu64,
				st->path, s->generation, generation);
		return PMREP_E_STATE;
	}
	return 0;
}

/*
 * give every block of an existing state file its storage before anything
 * is loaded from or stored into the mapping. A sparse copy of the file
 * (cp --sparse=always, rsync -S, a restored backup, holes punched) maps
 * fine, but on a full file system the first fault on a hole raises SIGBUS
 * and kills the writer. A new file was allocated when it was created
 * (pmrep_pmem_open); a device DAX has no holes.
 */
static int
give_blocks(struct mirror_state *st)
{
	if (pmrep_pmem_is_devdax(st->pmem))
		return 0;
	struct stat sb;
	if (fstat(st->lock_fd, &sb) != 0)
		return PMREP_ERR_PROVIDER(errno, "fstat of the mirror state file");
	if (!S_ISREG(sb.st_mode))
		return 0;
	int err = posix_fallocate(st->lock_fd, 0, sb.st_size);
	if (err == EOPNOTSUPP || err == EINVAL) {
		PMREP_LOG_WARN("mirror state file %s: the file system cannot preallocate (%s); a sparse state file on a full file system would crash the writer",
				st->path, strerror(err));
		return 0;
	}
	if (err != 0) {
		pmrep_err_set_errno(err);
		PMREP_LOG_ERR("mirror state file %s: cannot give its %lld bytes their storage (%s); refusing to use it (a store into a hole would crash the writer)",
				st->path, (long long)sb.st_size, strerror(err));
		return PMREP_E_PROVIDER;
	}
	return 0;
}

/* load (or finish creating) the record of an existing file */
static int
st_load(struct mirror_state *st, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, size_t need)
{
	size_t size = pmrep_pmem_get_size(st->pmem);
	if (size < MST_BITMAP_OFF) {
		PMREP_LOG_ERR("mirror state file %s: %zu bytes, too short for its metadata (%d)",
				st->path, size, MST_BITMAP_OFF);
		return PMREP_E_MALFORMED;
	}
	struct slot s[2];
	bool ok[2];
	for (unsigned k = 0; k < 2; k++)
		ok[k] = slot_decode(st->base + slot_off[k], &s[k]);
	if (!ok[0] && !ok[1]) {
		/*
		 * slots are written in turn, slot 0 first: when neither is
		 * valid and slot 1 was never written, the first write of
		 * slot 0 -- the file's creation -- was cut short (a crash
		 * tears it), and no mirror ever used this record
		 */
		if (size == need && replica_all_zero(st->base + MST_SLOT1_OFF,
				MST_BITMAP_OFF - MST_SLOT1_OFF)) {
			PMREP_LOG(PMREP_LOG_NOTICE, "mirror state file %s: its creation was cut short (no slot was ever complete): a new record",
					st->path);
			int ret = st_format(st, uuid, generation);
			return ret ? ret : bitmaps_init(st);
		}
		PMREP_LOG_ERR("mirror state file %s: no valid metadata slot", st->path);
		return PMREP_E_MALFORMED;
	}
	unsigned c = !ok[0] ? 1 : !ok[1] ? 0 : s[1].seq > s[0].seq ? 1 : 0;
	int ret = st_check(st, &s[c], uuid, generation, st->data_size,
			st->region_size);
	if (ret)
		return ret;
	bool fits = pmrep_pmem_is_devdax(st->pmem) ? size >= need : size == need;
	if (!fits) {
		PMREP_LOG_ERR("mirror state file %s: %zu bytes, its record of %" PRIu64 " data bytes in regions of %" PRIu64 " needs %zu",
				st->path, size, st->data_size, st->region_size, need);
		return PMREP_E_MALFORMED;
	}
	st->cur = c;
	st->seq = s[c].seq;
	memcpy(st->uuid, s[c].uuid, PMREP_UUID_SIZE);
	st->primary_id = s[c].primary_id;
	st->generation = s[c].generation;
	memcpy(st->rec_id, s[c].rec_id, sizeof(st->rec_id));
	memcpy(st->rec_seq, s[c].rec_seq, sizeof(st->rec_seq));
	st->psn_hw = s[c].psn_hw;
	ret = bitmaps_init(st);
	if (ret)
		return ret;
	if (st->generation < generation) {
		PMREP_LOG(PMREP_LOG_NOTICE, "mirror state file %s: generation %" PRIu64 " raised to %" PRIu64,
				st->path, st->generation, generation);
		uint64_t old = st->generation;
		st->generation = generation;
		ret = slot_write(st);
		if (ret) {
			st->generation = old;
			return ret;
		}
	}
	return al_fold(st);
}

int
mstate_open(const char *path, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, uint64_t data_size, uint64_t region_size,
		struct mirror_state **st_ptr)
{
	size_t nwords = (size_t)repl_bitmap_words(data_size, region_size);
	if (nwords == 0) {
		PMREP_LOG_ERR("the mirror's record: bad data size %" PRIu64 " or region size %" PRIu64,
				data_size, region_size);
		return PMREP_E_INVAL;
	}
	struct mirror_state *st = calloc(1, sizeof(*st));
	if (st == NULL) {
		PMREP_LOG_ERR("out of memory for the mirror's record");
		return PMREP_E_NOMEM;
	}
	st->lock_fd = -1;
	st->data_size = data_size;
	st->region_size = region_size;
	st->nwords = nwords;
	st->bm_bytes = bm_area_bytes(nwords);
	int ret;
	if (path == NULL) {
		memcpy(st->uuid, uuid, PMREP_UUID_SIZE);
		st->generation = generation;
		ret = repl_random(&st->primary_id, sizeof(st->primary_id));
		if (ret == 0)
			ret = bitmaps_init(st);
		if (ret)
			goto err;
		*st_ptr = st;
		return 0;
	}
	size_t need = MST_BITMAP_OFF + MST_NBITMAPS * st->bm_bytes;
	st->path = strdup(path);
	if (st->path == NULL) {
		PMREP_LOG_ERR("out of memory for the mirror's record");
		ret = PMREP_E_NOMEM;
		goto err;
	}
	struct stat sb;
	bool create = stat(path, &sb) != 0 && errno == ENOENT;
	ret = pmrep_pmem_open(path, create ? PMREP_PMEM_CREATE | PMREP_PMEM_EXCL : 0,
			create ? need : 0, PMREP_PMEM_GRANULARITY_PAGE, &st->pmem);
	if (ret) {
		PMREP_LOG_ERR("mirror state file %s: cannot %s it: %s", path,
				create ? "create" : "open", pmrep_err_to_str(ret));
		goto err;
	}
	st->base = pmrep_pmem_get_address(st->pmem);
	/* one mirror per record: two would overwrite each other's slots */
	st->lock_fd = open(path, O_RDWR | O_CLOEXEC);
	if (st->lock_fd < 0 || flock(st->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		if (e == EWOULDBLOCK) {
			PMREP_LOG_ERR("mirror state file %s is in use by another mirror",
					path);
			pmrep_err_set_errno(e);
			ret = PMREP_E_BUSY;
		} else {
			ret = PMREP_ERR_PROVIDER(e, "locking the mirror state file");
		}
		/* a file we created but another mirror locked first (it
		 * opened it between our create and our flock) is that
		 * mirror's record now: never unlink it under it */
		if (create && e != EWOULDBLOCK) {
			(void) pmrep_pmem_close(&st->pmem);
			(void) unlink(path);
		}
		goto err;
	}
	if (!create) {
		ret = give_blocks(st);
		if (ret)
			goto err;
	}
	if (create) {
		ret = st_format(st, uuid, generation);
		if (ret == 0)
			ret = bitmaps_init(st);
		if (ret) {
			(void) pmrep_pmem_close(&st->pmem);
			if (unlink(path) != 0)
				PMREP_LOG_WARN("mirror state file %s: removing it: %s",
						path, strerror(errno));
			goto err;
		}
		PMREP_LOG(PMREP_LOG_INFO, "mirror state file %s created (%zu bytes)",
				path, need);
	} else {
		ret = st_load(st, uuid, generation, need);
		if (ret)
			goto err;
	}
	*st_ptr = st;
	return 0;
err:
	mstate_close(&st);
	return ret;
}

void
mstate_close(struct mirror_state **st_ptr)
{
	struct mirror_state *st = *st_ptr;
	if (st == NULL)
		return;
	for (unsigned i = 0; i < PMREP_MIRROR_MAX_REPLICAS; i++)
		repl_bitmap_fini(&st->oos[i]);
	repl_bitmap_fini(&st->al);
	if (st->pmem != NULL) {
		int ret = pmrep_pmem_close(&st->pmem);
		if (ret)
			PMREP_LOG_WARN("mirror state file %s: unmapping it: %s",
					st->path, pmrep_err_to_str(ret));
	}
	if (st->lock_fd >= 0)
		close(st->lock_fd);	/* releases the lock */
	free(st->path);
	free(st);
	*st_ptr = NULL;
}

/* ---------------------------------------------------------- getters */

bool
mstate_is_persistent(const struct mirror_state *st)
{
	return st->pmem != NULL;
}

uint64_t
mstate_primary_id(const struct mirror_state *st)
{
	return st->primary_id;
}

const uint8_t *
mstate_rec_id(const struct mirror_state *st, unsigned i)
{
	return st->rec_id[i];
}

uint64_t
mstate_writes(const struct mirror_state *st)
{
	return st->writes;
}

struct repl_bitmap *
mstate_oos(struct mirror_state *st, unsigned i)
{
	return &st->oos[i];
}

/* ---------------------------------------------------------- updates */

int
mstate_set_rec(struct mirror_state *st, unsigned i,
		const uint8_t id[PMREP_UUID_SIZE], uint64_t seq)
{
	if (memcmp(st->rec_id[i], id, PMREP_UUID_SIZE) == 0 &&
			st->rec_seq[i] == seq)
		return 0;
	uint8_t old[PMREP_UUID_SIZE];
	uint64_t old_seq = st->rec_seq[i];
	memcpy(old, st->rec_id[i], PMREP_UUID_SIZE);
	memcpy(st->rec_id[i], id, PMREP_UUID_SIZE);
	st->rec_seq[i] = seq;
	int ret = slot_write(st);
	if (ret) {
		/* what is durable */
		memcpy(st->rec_id[i], old, PMREP_UUID_SIZE);
		st->rec_seq[i] = old_seq;
	}
	return ret;
}

int
mstate_set_rec_id(struct mirror_state *st, unsigned i,
		const uint8_t id[PMREP_UUID_SIZE])
{
	return mstate_set_rec(st, i, id, st->rec_seq[i]);
}

uint64_t
mstate_psn_hw(const struct mirror_state *st)
{
	return st->psn_hw;
}

int
mstate_set_psn_hw(struct mirror_state *st, uint64_t hw)
{
	uint64_t old = st->psn_hw;
	st->psn_hw = hw;
	if (st->pmem == NULL)
		return 0;
	int ret = slot_write(st);
	if (ret)
		st->psn_hw = old;	/* what is durable */
	return ret;
}

uint64_t
mstate_rec_seq(const struct mirror_state *st, unsigned i)
{
	return st->rec_seq[i];
}

/* the words of a bitmap covering [off, off + len): false when none */
static bool
word_span(const struct mirror_state *st, uint64_t off, uint64_t len,
		size_t *w0, size_t *w1)
{
	if (len == 0 || off >= st->data_size)
		return false;
	uint64_t end = len > st->data_size - off ? st->data_size : off + len;
	*w0 = (size_t)(off / st->region_size / 64);
	*w1 = (size_t)((end - 1) / st->region_size / 64);
	return true;
}

int
mstate_oos_persist(struct mirror_state *st, unsigned i, uint64_t off,
		uint64_t len)
{
	size_t w0, w1;
	if (st->pmem == NULL || !word_span(st, off, len, &w0, &w1))
		return 0;
	return bm_persist(st, 1 + i, w0, w1);
}

int
mstate_al_mark(struct mirror_state *st, uint64_t off, uint64_t len)
{
	if (len == 0 || off >= st->data_size)
		return 0;
	uint64_t end = len > st->data_size - off ? st->data_size : off + len;
	size_t r0 = (size_t)(off / st->region_size);
	size_t r1 = (size_t)((end - 1) / st->region_size);
	size_t wmin = SIZE_MAX, wmax = 0;
	uint64_t *words = st->al.words;
	for (size_t w = r0 / 64; w <= r1 / 64; w++) {
		uint64_t mask = ~0ull;
		if (w == r0 / 64)
			mask &= ~0ull << (r0 % 64);
		if (w == r1 / 64)
			mask &= ~0ull >> (63 - r1 % 64);
		uint64_t add = mask & ~words[w];
		if (add == 0)
			continue;
		words[w] |= add;	/* one 8-byte store */
		st->al.nset += (size_t)__builtin_popcountll(add);
		if (w < wmin)
			wmin = w;
		wmax = w;
	}
	if (st->pmem == NULL || (wmin == SIZE_MAX && !st->al_dirty))
		return 0;
	if (st->al_dirty) {
		wmin = 0;		/* an earlier mark is not durable yet */
		wmax = st->nwords - 1;
	}
	int ret = bm_persist(st, 0, wmin, wmax);
	/* the bits stay set (a set bit is always safe); until a persist of
	 * them succeeds, every mark persists all of AL */
	st->al_dirty = ret != 0;
	return ret;
}

int
mstate_al_clear(struct mirror_state *st, bool force)
{
	if (st->al.nset == 0 || (!force && st->al.nset <= MSTATE_AL_LIMIT))
		return 0;
	uint64_t *al = st->al.words;
	size_t wmin = SIZE_MAX, wmax = 0;
	for (size_t w = 0; w < st->nwords; w++) {
		if (al[w] == 0)
			continue;
		if (w < wmin)
			wmin = w;
		wmax = w;
	}
	int ret;
	if (st->pmem != NULL) {
		/* first what the activity log covers in each OOS[i] (a word
		 * that is zero holds nothing that must be durable) */
		for (unsigned i = 0; i < PMREP_MIRROR_MAX_REPLICAS; i++) {
			const uint64_t *o = st->oos[i].words;
			bool any = false;
			for (size_t w = wmin; w <= wmax && !any; w++)
				any = o[w] != 0;
			if (!any)
				continue;
			ret = bm_persist(st, 1 + i, wmin, wmax);
			if (ret)
				return ret;	/* AL stays as it is */
		}
	}
	for (size_t w = wmin; w <= wmax; w++)
		if (al[w] != 0)
			al[w] = 0;
	st->al.nset = 0;
	st->al_dirty = false;	/* no set bit left to make durable */
	if (st->pmem == NULL)
		return 0;
	/* a clear that does not reach the media only costs a redundant
	 * copy after a crash */
	return bm_persist(st, 0, wmin, wmax);
}
