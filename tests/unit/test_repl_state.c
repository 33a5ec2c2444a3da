/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_state.c -- the mirror state file (src/repl/mirror/mirror_state.c):
 * created with mode 0600 and its computed size, loaded back; a refused
 * open (another set, data size, region size, a newer generation, no valid
 * slot) leaves the file byte-identical; an older generation is raised;
 * every torn image of a slot update decodes as the old or the new state;
 * the activity log a crash left is folded into the out-of-sync sets on
 * load; marks persist only newly set words, a clear persists OOS before
 * AL; a failed persist is an error, and what failed is retried.
 * Files live in a fresh directory in /dev/shm.
 */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/base.h>
#include <pmrep/repl.h>
#include "common/testhook.h"
#include "repl/mirror/mirror_int.h"
#include "repl/mirror/mirror_state.h"

#define R 4096u			/* region size */
#define DATA (1000u * R)	/* 1000 regions: 16 words, a short last one */
#define NWORDS 16u
#define BM_BYTES 4096u		/* each bitmap's area, rounded up to 4 KiB */
#define AL_OFF 4096u
#define OOS_OFF(i) (AL_OFF + (1u + (i)) * BM_BYTES)
#define FILE_SIZE (4096u + 9u * BM_BYTES)

static const uint8_t uuid_a[PMREP_UUID_SIZE] = { 0xa1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t uuid_b[PMREP_UUID_SIZE] = { 0xb1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t id_1[PMREP_UUID_SIZE] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
static const uint8_t id_2[PMREP_UUID_SIZE] = { 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2 };
static const uint8_t id_3[PMREP_UUID_SIZE] = { 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3 };
static const uint8_t nil[PMREP_UUID_SIZE];

static char dir[128];
static char path[192];

/* ------------------------------------------------------------ helpers */

static int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-state-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/log.pmrep-state", dir);
	memset(&pmrep_test_hooks, 0, sizeof(pmrep_test_hooks));
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	memset(&pmrep_test_hooks, 0, sizeof(pmrep_test_hooks));
	return nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static struct mirror_state *
open_ok(uint64_t gen)
{
	struct mirror_state *st = NULL;
	assert_int_equal(mstate_open(path, uuid_a, gen, DATA, R, &st), 0);
	assert_non_null(st);
	assert_true(mstate_is_persistent(st));
	return st;
}

/* the whole file, in memory to free() */
static uint8_t *
file_read(size_t *len)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	uint8_t *b = malloc((size_t)sb.st_size);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)sb.st_size, 0), sb.st_size);
	close(fd);
	*len = (size_t)sb.st_size;
	return b;
}

static void
file_write(const uint8_t *b, size_t len)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, b, len, 0), (ssize_t)len);
	close(fd);
}

static uint64_t
word_at(const uint8_t *img, size_t off)
{
	uint64_t v;
	memcpy(&v, img + off, sizeof(v));
	return v;
}

/* a persist hook: fails while `fail_persists` > 0 (counting down), and
 * records the offsets in the state file of the persists it let through */
static int fail_persists;
static uint8_t *hook_base;
static size_t seen[64];
static int nseen;

static int
hook(struct pmrep_pmem *pmem, const void *ptr, size_t len)
{
	(void)pmem;
	(void)len;
	if (fail_persists > 0) {
		fail_persists--;
		return PMREP_E_PROVIDER;
	}
	if (hook_base != NULL && nseen < 64)
		seen[nseen++] = (size_t)((const uint8_t *)ptr - hook_base);
	return 0;
}

/* -------------------------------------------------------------- tests */

static void
a_new_file_is_0600_of_its_computed_size_and_loads_back(void **state)
{
	(void)state;
	struct mirror_state *st = open_ok(1);
	assert_int_equal(mstate_writes(st), 1);		/* its first slot */
	uint64_t pid = mstate_primary_id(st);
	for (unsigned i = 0; i < PMREP_MIRROR_MAX_REPLICAS; i++) {
		assert_memory_equal(mstate_rec_id(st, i), nil, PMREP_UUID_SIZE);
		assert_int_equal(mstate_oos(st, i)->nset, 0);
		assert_int_equal(mstate_oos(st, i)->nregions, 1000);
	}
	assert_int_equal(mstate_set_rec_id(st, 3, id_1), 0);
	assert_int_equal(mstate_writes(st), 2);
	assert_int_equal(mstate_set_rec_id(st, 3, id_1), 0);	/* the same: no write */
	assert_int_equal(mstate_writes(st), 2);
	repl_bitmap_mark(mstate_oos(st, 2), 7 * R, 1);
	assert_int_equal(mstate_oos_persist(st, 2, 7 * R, 1), 0);
	assert_int_equal(mstate_writes(st), 3);
	/* the header sequence a replica was left with: one update with its id */
	assert_int_equal(mstate_rec_seq(st, 3), 0);
	assert_int_equal(mstate_set_rec(st, 3, id_1, 41), 0);
	assert_int_equal(mstate_writes(st), 4);
	assert_int_equal(mstate_set_rec(st, 3, id_1, 41), 0);	/* the same: no write */
	assert_int_equal(mstate_writes(st), 4);
	assert_int_equal(mstate_set_rec_id(st, 3, id_1), 0);	/* keeps the sequence */
	assert_int_equal(mstate_rec_seq(st, 3), 41);
	mstate_close(&st);
	assert_null(st);

	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(sb.st_size, FILE_SIZE);

	st = open_ok(1);
	assert_int_equal(mstate_writes(st), 0);		/* nothing to write */
	assert_int_equal(mstate_primary_id(st), pid);
	assert_memory_equal(mstate_rec_id(st, 3), id_1, PMREP_UUID_SIZE);
	assert_int_equal(mstate_rec_seq(st, 3), 41);
	assert_int_equal(mstate_rec_seq(st, 2), 0);
	assert_memory_equal(mstate_rec_id(st, 2), nil, PMREP_UUID_SIZE);
	assert_int_equal(mstate_oos(st, 2)->nset, 1);
	assert_true(repl_bitmap_test(mstate_oos(st, 2), 7));
	mstate_close(&st);

	/* in memory: nothing on disk, a new primary id each time */
	struct mirror_state *m1 = NULL, *m2 = NULL;
	assert_int_equal(mstate_open(NULL, uuid_a, 1, DATA, R, &m1), 0);
	assert_int_equal(mstate_open(NULL, uuid_a, 1, DATA, R, &m2), 0);
	assert_false(mstate_is_persistent(m1));
	assert_int_not_equal(mstate_primary_id(m1), mstate_primary_id(m2));
	assert_int_equal(mstate_al_mark(m1, 0, DATA), 0);
	assert_int_equal(mstate_al_clear(m1, true), 0);
	assert_int_equal(mstate_writes(m1), 0);
	mstate_close(&m1);
	mstate_close(&m2);
	mstate_close(&m2);	/* NULL: nothing */
}

static void
refusals_leave_the_file_byte_identical(void **state)
{
	(void)state;
	struct mirror_state *st = open_ok(3);
	assert_int_equal(mstate_set_rec_id(st, 0, id_1), 0);
	/* an activity log a load would fold: a refusal must not */
	assert_int_equal(mstate_al_mark(st, 10 * R, 3 * R), 0);
	mstate_close(&st);
	size_t len0, len;
	uint8_t *before = file_read(&len0);

	struct {
		const uint8_t *uuid;
		uint64_t gen, data, region;
		int want;
	} cases[] = {
		{ uuid_b, 3, DATA, R, PMREP_E_MISMATCH },	/* another set */
		{ uuid_a, 3, DATA - R, R, PMREP_E_RANGE },	/* another data size */
		{ uuid_a, 3, DATA, 2 * R, PMREP_E_INVAL },	/* another region size */
		{ uuid_a, 2, DATA, R, PMREP_E_STATE },		/* the file's is newer */
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		st = NULL;
		assert_int_equal(mstate_open(path, cases[c].uuid, cases[c].gen,
				cases[c].data, cases[c].region, &st), cases[c].want);
		assert_null(st);
		uint8_t *after = file_read(&len);
		assert_int_equal(len, len0);
		assert_memory_equal(after, before, len0);
		free(after);
	}
	/* both slots broken: no valid record */
	uint8_t *bad = malloc(len0);
	assert_non_null(bad);
	memcpy(bad, before, len0);
	bad[40] ^= 1;
	bad[2048 + 40] ^= 1;
	file_write(bad, len0);
	assert_int_equal(mstate_open(path, uuid_a, 3, DATA, R, &st), PMREP_E_MALFORMED);
	uint8_t *after = file_read(&len);
	assert_memory_equal(after, bad, len0);
	free(after);
	free(bad);
	/* a record whose file is shorter than it needs */
	file_write(before, len0);
	assert_int_equal(truncate(path, FILE_SIZE - BM_BYTES), 0);
	assert_int_equal(mstate_open(path, uuid_a, 3, DATA, R, &st), PMREP_E_MALFORMED);
	after = file_read(&len);
	assert_int_equal(len, FILE_SIZE - BM_BYTES);
	assert_memory_equal(after, before, len);
	free(after);
	free(before);
}

static void
a_record_is_one_mirror_s_at_a_time(void **state)
{
	(void)state;
	struct mirror_state *st = open_ok(1), *two = NULL;
	size_t len0, len;
	uint8_t *before = file_read(&len0);
	assert_int_equal(mstate_open(path, uuid_a, 1, DATA, R, &two), PMREP_E_BUSY);
	assert_null(two);
	uint8_t *after = file_read(&len);
	assert_memory_equal(after, before, len0);
	free(after);
	free(before);
	assert_int_equal(mstate_set_rec_id(st, 0, id_1), 0);	/* still ours */
	mstate_close(&st);
	st = open_ok(1);	/* free again */
	assert_memory_equal(mstate_rec_id(st, 0), id_1, PMREP_UUID_SIZE);
	mstate_close(&st);
}

static void
an_older_generation_is_raised(void **state)
{
	(void)state;
	struct mirror_state *st = open_ok(2);
	uint64_t pid = mstate_primary_id(st);
	mstate_close(&st);
	st = open_ok(5);
	assert_int_equal(mstate_writes(st), 1);		/* the raise */
	assert_int_equal(mstate_primary_id(st), pid);
	mstate_close(&st);
	assert_int_equal(mstate_open(path, uuid_a, 4, DATA, R, &st), PMREP_E_STATE);
	st = open_ok(5);
	assert_int_equal(mstate_writes(st), 0);
	mstate_close(&st);
}

/*
 * every torn image of a slot update -- the old file with any subset of the
 * 8-byte units the update changed -- decodes as the old record or the new
 * one, and as the new one only when the update is complete. Two updates
 * in a row, so that both slots are the one written once.
 */
static void
every_torn_slot_update_decodes_old_or_new(void **state)
{
	(void)state;
	struct mirror_state *st = open_ok(1);
	assert_int_equal(mstate_set_rec_id(st, 5, id_1), 0);
	mstate_close(&st);
	const uint8_t *ids[3] = { id_1, id_2, id_3 };
	unsigned seed = 12345;
	for (int u = 0; u < 2; u++) {
		size_t len;
		uint8_t *old = file_read(&len);
		st = open_ok(1);
		assert_int_equal(mstate_set_rec_id(st, 5, ids[u + 1]), 0);
		mstate_close(&st);
		uint8_t *new = file_read(&len);
		size_t units[64] = { 0 };
		size_t n = 0;
		for (size_t o = 0; o < len; o += 8)
			if (memcmp(old + o, new + o, 8) != 0) {
				assert_true(n < 64);
				units[n++] = o;
			}
		assert_true(n > 2);
		/* all in one slot: the update wrote only the other one */
		assert_true(units[n - 1] - units[0] < 2048);
		uint8_t *img = malloc(len);
		assert_non_null(img);
		for (int t = 0; t < 2 * (int)n + 2 + 300; t++) {
			memcpy(img, old, len);
			size_t applied = 0;
			for (size_t k = 0; k < n; k++) {
				bool take;
				if (t <= (int)n)		/* prefixes */
					take = k < (size_t)t;
				else if (t <= 2 * (int)n + 1)	/* suffixes */
					take = k >= (size_t)(t - (int)n - 1);
				else				/* random subsets */
					take = (rand_r(&seed) & 1) != 0;
				if (take) {
					memcpy(img + units[k], new + units[k], 8);
					applied++;
				}
			}
			file_write(img, len);
			st = open_ok(1);
			const uint8_t *got = mstate_rec_id(st, 5);
			if (applied == n)
				assert_memory_equal(got, ids[u + 1], PMREP_UUID_SIZE);
			else if (memcmp(got, ids[u], PMREP_UUID_SIZE) != 0)
				fail_msg("update %d, %zu of %zu units: neither old nor new",
						u, applied, n);
			assert_int_equal(mstate_writes(st), 0);
			mstate_close(&st);
		}
		file_write(new, len);
		free(img);
		free(old);
		free(new);
	}
}

static void
the_activity_log_a_crash_left_is_folded_into_every_oos_on_load(void **state)
{
	(void)state;
	struct mirror_state *st = open_ok(1);
	assert_int_equal(mstate_set_rec_id(st, 0, id_1), 0);
	repl_bitmap_mark(mstate_oos(st, 1), 500 * R, R);	/* already out of sync */
	assert_int_equal(mstate_oos_persist(st, 1, 500 * R, R), 0);
	assert_int_equal(mstate_al_mark(st, 0, R), 0);
	assert_int_equal(mstate_al_mark(st, 5 * R + 10, R), 0);	/* regions 5, 6 */
	assert_int_equal(mstate_al_mark(st, DATA - 1, 1), 0);	/* the last one */
	mstate_close(&st);	/* a crash: nothing cleared */
	size_t len;
	uint8_t *img = file_read(&len);
	assert_int_equal(word_at(img, AL_OFF), 0x61);		/* 0, 5, 6 */
	assert_int_equal(word_at(img, AL_OFF + 15 * 8), 1ull << (999 % 64));
	free(img);

	st = open_ok(1);
	assert_int_equal(mstate_writes(st), 2);		/* OOS, then AL */
	for (unsigned i = 0; i < PMREP_MIRROR_MAX_REPLICAS; i++) {
		struct repl_bitmap *b = mstate_oos(st, i);
		assert_true(repl_bitmap_test(b, 0));
		assert_true(repl_bitmap_test(b, 5));
		assert_true(repl_bitmap_test(b, 6));
		assert_true(repl_bitmap_test(b, 999));
		assert_false(repl_bitmap_test(b, 1));
		assert_int_equal(b->nset, i == 1 ? 5 : 4);
	}
	mstate_close(&st);
	img = file_read(&len);
	for (unsigned w = 0; w < NWORDS; w++)
		assert_int_equal(word_at(img, AL_OFF + 8 * w), 0);
	assert_int_equal(word_at(img, OOS_OFF(0)), 0x61);
	assert_int_equal(word_at(img, OOS_OFF(7)), 0x61);
	free(img);
	/* loaded again: nothing more to fold */
	st = open_ok(1);
	assert_int_equal(mstate_writes(st), 0);
	assert_int_equal(mstate_oos(st, 0)->nset, 4);
	mstate_close(&st);
}

static void
marks_persist_new_words_only_and_a_clear_persists_oos_before_al(void **state)
{
	(void)state;
	struct mirror_state *st = open_ok(1);
	uint64_t w = mstate_writes(st);
	assert_int_equal(mstate_al_mark(st, 0, R), 0);
	assert_int_equal(mstate_writes(st), w + 1);
	assert_int_equal(mstate_al_mark(st, 100, 200), 0);	/* marked already */
	assert_int_equal(mstate_al_mark(st, 0, 0), 0);		/* nothing */
	assert_int_equal(mstate_al_mark(st, DATA, R), 0);	/* past the end */
	assert_int_equal(mstate_writes(st), w + 1);
	assert_int_equal(mstate_al_mark(st, R - 1, 2), 0);	/* region 1 is new */
	assert_int_equal(mstate_writes(st), w + 2);
	/* at most MSTATE_AL_LIMIT marked: a lazy clear does nothing */
	assert_int_equal(mstate_al_clear(st, false), 0);
	assert_int_equal(mstate_writes(st), w + 2);
	/* over the limit: cleared; no OOS holds anything, so only AL */
	assert_int_equal(mstate_al_mark(st, 100 * R, (MSTATE_AL_LIMIT - 1) * R), 0);
	assert_int_equal(mstate_writes(st), w + 3);
	assert_int_equal(mstate_al_clear(st, false), 0);
	assert_int_equal(mstate_writes(st), w + 4);
	size_t len;
	uint8_t *img = file_read(&len);
	for (unsigned k = 0; k < NWORDS; k++)
		assert_int_equal(word_at(img, AL_OFF + 8 * k), 0);
	free(img);
	assert_int_equal(mstate_al_clear(st, true), 0);		/* empty: nothing */
	assert_int_equal(mstate_writes(st), w + 4);

	/* OOS[2] holds a region the log covers: its words first, then AL */
	hook_base = NULL;
	pmrep_test_hooks.pmem_persist = hook;
	assert_int_equal(mstate_al_mark(st, 300 * R, R), 0);
	repl_bitmap_mark(mstate_oos(st, 2), 300 * R, R);	/* a store */
	/* the offsets the hook sees, relative to the file's mapping: find
	 * it from a persist of a known range */
	nseen = 0;
	hook_base = (uint8_t *)mstate_oos(st, 0)->words - OOS_OFF(0);
	assert_int_equal(mstate_al_clear(st, true), 0);
	assert_int_equal(nseen, 2);
	assert_int_equal(seen[0], OOS_OFF(2) + 8 * (300 / 64));
	assert_int_equal(seen[1], AL_OFF + 8 * (300 / 64));
	mstate_close(&st);
	img = file_read(&len);
	assert_int_equal(word_at(img, OOS_OFF(2) + 8 * (300 / 64)), 1ull << (300 % 64));
	free(img);
}

static void
a_failed_persist_is_an_error_and_what_failed_is_retried(void **state)
{
	(void)state;
	struct mirror_state *st = open_ok(1);
	assert_int_equal(mstate_set_rec_id(st, 1, id_1), 0);
	pmrep_test_hooks.pmem_persist = hook;

	/* a mark: the error, and the next mark persists again (all of AL) */
	fail_persists = 1;
	assert_int_equal(mstate_al_mark(st, 0, R), PMREP_E_PROVIDER);
	uint64_t w = mstate_writes(st);
	assert_int_equal(mstate_al_mark(st, 0, R), 0);
	assert_int_equal(mstate_writes(st), w + 1);
	assert_int_equal(mstate_al_mark(st, 0, R), 0);		/* durable now */
	assert_int_equal(mstate_writes(st), w + 1);

	/* a record update: the error, the record in memory as it was; the
	 * next update goes to the same slot, one sequence on */
	fail_persists = 1;
	assert_int_equal(mstate_set_rec_id(st, 1, id_2), PMREP_E_PROVIDER);
	assert_memory_equal(mstate_rec_id(st, 1), id_1, PMREP_UUID_SIZE);
	assert_int_equal(mstate_set_rec_id(st, 1, id_3), 0);

	/* a clear whose OOS persist fails leaves AL set */
	repl_bitmap_mark(mstate_oos(st, 0), 0, R);
	fail_persists = 1;
	assert_int_equal(mstate_al_clear(st, true), PMREP_E_PROVIDER);
	assert_int_equal(mstate_oos_persist(st, 0, 0, R), 0);
	fail_persists = 1;
	assert_int_equal(mstate_oos_persist(st, 0, 0, R), PMREP_E_PROVIDER);
	mstate_close(&st);

	pmrep_test_hooks.pmem_persist = NULL;
	size_t len;
	uint8_t *img = file_read(&len);
	assert_int_equal(word_at(img, AL_OFF), 1);	/* still set */
	free(img);
	st = open_ok(1);
	assert_memory_equal(mstate_rec_id(st, 1), id_3, PMREP_UUID_SIZE);
	assert_true(repl_bitmap_test(mstate_oos(st, 0), 0));	/* AL folded */
	mstate_close(&st);

	/* creating: a failed first slot removes the file again */
	assert_int_equal(unlink(path), 0);
	pmrep_test_hooks.pmem_persist = hook;
	fail_persists = 1;
	assert_int_equal(mstate_open(path, uuid_a, 1, DATA, R, &st), PMREP_E_PROVIDER);
	assert_null(st);
	assert_int_equal(access(path, F_OK), -1);
}

static void
a_file_never_written_is_a_new_record(void **state)
{
	(void)state;
	/* a crash between creating the file and its first slot */
	int fd = open(path, O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, FILE_SIZE), 0);
	close(fd);
	struct mirror_state *st = open_ok(1);
	assert_int_equal(mstate_writes(st), 1);
	mstate_close(&st);
	st = open_ok(1);
	assert_int_equal(mstate_writes(st), 0);
	mstate_close(&st);
	/* zeros of another size are no record */
	assert_int_equal(unlink(path), 0);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, FILE_SIZE + 4096), 0);
	close(fd);
	assert_int_equal(mstate_open(path, uuid_a, 1, DATA, R, &st), PMREP_E_MALFORMED);
}

static void
cfg_state_path_is_copied_and_checked(void **state)
{
	(void)state;
	struct pmrep_mirror_cfg *c = NULL;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	assert_false(c->state_path_set);
	assert_int_equal(pmrep_mirror_cfg_set_state_path(NULL, "x"), PMREP_E_INVAL);
	assert_int_equal(pmrep_mirror_cfg_set_state_path(c, ""), PMREP_E_INVAL);
	assert_false(c->state_path_set);
	char p[16] = "/tmp/a-state";
	assert_int_equal(pmrep_mirror_cfg_set_state_path(c, p), 0);
	p[0] = 'X';
	assert_true(c->state_path_set);
	assert_string_equal(c->state_path, "/tmp/a-state");
	assert_int_equal(pmrep_mirror_cfg_set_state_path(c, NULL), 0);
	assert_true(c->state_path_set);
	assert_null(c->state_path);
	assert_int_equal(pmrep_mirror_cfg_set_state_path(c, "/tmp/b"), 0);
	assert_int_equal(pmrep_mirror_cfg_delete(&c), 0);	/* frees it */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_new_file_is_0600_of_its_computed_size_and_loads_back, setup, teardown),
		cmocka_unit_test_setup_teardown(refusals_leave_the_file_byte_identical, setup, teardown),
		cmocka_unit_test_setup_teardown(an_older_generation_is_raised, setup, teardown),
		cmocka_unit_test_setup_teardown(a_record_is_one_mirror_s_at_a_time, setup, teardown),
		cmocka_unit_test_setup_teardown(every_torn_slot_update_decodes_old_or_new, setup, teardown),
		cmocka_unit_test_setup_teardown(the_activity_log_a_crash_left_is_folded_into_every_oos_on_load, setup, teardown),
		cmocka_unit_test_setup_teardown(marks_persist_new_words_only_and_a_clear_persists_oos_before_al, setup, teardown),
		cmocka_unit_test_setup_teardown(a_failed_persist_is_an_error_and_what_failed_is_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(a_file_never_written_is_a_new_record, setup, teardown),
		cmocka_unit_test_setup_teardown(cfg_state_path_is_copied_and_checked, setup, teardown),
	};
	pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
