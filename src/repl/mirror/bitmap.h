/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bitmap.h -- a replica's out-of-sync set: one bit per region of the data
 * area; a set bit means "this region may differ on the replica".
 */
#ifndef PMREP_REPL_BITMAP_H
#define PMREP_REPL_BITMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct repl_bitmap {
	uint64_t *words;
	size_t nregions;
	uint64_t region_size;	/* bytes, a power of two */
	uint64_t data_size;	/* bytes; the last region may be shorter */
	size_t nset;
	bool ext;		/* words are the caller's (repl_bitmap_init_ext) */
};

/* PMREP_E_NOMEM / PMREP_E_INVAL (region_size not a power of two, size 0) */
int repl_bitmap_init(struct repl_bitmap *b, uint64_t data_size,
		uint64_t region_size);
/*
 * a bitmap over `words` the caller owns (e.g. inside a mapped file): at
 * least repl_bitmap_words(data_size, region_size) of them, kept as they
 * are except that bits past the last region are cleared; nset counts the
 * set bits. fini leaves the words alone. PMREP_E_INVAL as above.
 */
int repl_bitmap_init_ext(struct repl_bitmap *b, uint64_t *words,
		uint64_t data_size, uint64_t region_size);
/* 64-bit words a bitmap of data_size / region_size needs (0: bad sizes) */
size_t repl_bitmap_words(uint64_t data_size, uint64_t region_size);
/* free the words unless they are the caller's */
void repl_bitmap_fini(struct repl_bitmap *b);
/* mark every region [offset, offset + len) touches; len 0: nothing */
void repl_bitmap_mark(struct repl_bitmap *b, uint64_t offset, uint64_t len);
void repl_bitmap_mark_all(struct repl_bitmap *b);
void repl_bitmap_clear_regions(struct repl_bitmap *b, size_t first, size_t n);
bool repl_bitmap_test(const struct repl_bitmap *b, size_t region);
/* the first run of set bits at or after `from`, at most `max` long */
bool repl_bitmap_next_run(const struct repl_bitmap *b, size_t from, size_t max,
		size_t *first, size_t *n);
/* bytes covered by set bits (the last region counted by its true size) */
uint64_t repl_bitmap_dirty_bytes(const struct repl_bitmap *b);
/* byte range of regions [first, first + n) clamped to the data size */
void repl_bitmap_range(const struct repl_bitmap *b, size_t first, size_t n,
		uint64_t *offset, uint64_t *len);

#endif /* PMREP_REPL_BITMAP_H */
