/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bitmap.c -- the out-of-sync region bitmap of a replica.
 */
#include <stdlib.h>

#include "common/log.h"
#include "bitmap.h"

static int
sizes_check(uint64_t data_size, uint64_t region_size)
{
	if (data_size == 0 || region_size == 0 ||
			(region_size & (region_size - 1)) != 0) {
		PMREP_LOG_ERR("bitmap: bad data size %llu or region size %llu",
				(unsigned long long)data_size,
				(unsigned long long)region_size);
		return PMREP_E_INVAL;
	}
	return 0;
}

size_t
repl_bitmap_words(uint64_t data_size, uint64_t region_size)
{
	if (data_size == 0 || region_size == 0 ||
			(region_size & (region_size - 1)) != 0)
		return 0;
	size_t nregions = (size_t)((data_size + region_size - 1) / region_size);
	return (nregions + 63) / 64;
}

int
repl_bitmap_init(struct repl_bitmap *b, uint64_t data_size, uint64_t region_size)
{
	int ret = sizes_check(data_size, region_size);
	if (ret)
		return ret;
	b->nregions = (size_t)((data_size + region_size - 1) / region_size);
	b->words = calloc((b->nregions + 63) / 64, sizeof(uint64_t));
	if (b->words == NULL) {
		PMREP_LOG_ERR("out of memory for an out-of-sync bitmap of %zu regions",
				b->nregions);
		return PMREP_E_NOMEM;
	}
	b->region_size = region_size;
	b->data_size = data_size;
	b->nset = 0;
	b->ext = false;
	return 0;
}

int
repl_bitmap_init_ext(struct repl_bitmap *b, uint64_t *words,
		uint64_t data_size, uint64_t region_size)
{
	int ret = sizes_check(data_size, region_size);
	if (ret)
		return ret;
	b->nregions = (size_t)((data_size + region_size - 1) / region_size);
	b->words = words;
	b->region_size = region_size;
	b->data_size = data_size;
	b->ext = true;
	size_t nwords = (b->nregions + 63) / 64;
	unsigned tail = (unsigned)(b->nregions % 64);
	if (tail != 0 && (words[nwords - 1] >> tail) != 0)
		words[nwords - 1] &= (1ull << tail) - 1;	/* no such regions */
	b->nset = 0;
	for (size_t w = 0; w < nwords; w++)
		b->nset += (size_t)__builtin_popcountll(words[w]);
	return 0;
}

void
repl_bitmap_fini(struct repl_bitmap *b)
{
	if (!b->ext)
		free(b->words);
	b->words = NULL;
}

bool
repl_bitmap_test(const struct repl_bitmap *b, size_t r)
{
	return (b->words[r / 64] >> (r % 64)) & 1;
}

static void
set_bit(struct repl_bitmap *b, size_t r)
{
	if (!repl_bitmap_test(b, r)) {
		b->words[r / 64] |= 1ull << (r % 64);
		b->nset++;
	}
}

void
repl_bitmap_mark(struct repl_bitmap *b, uint64_t offset, uint64_t len)
{
	if (len == 0 || offset >= b->data_size)
		return;
	uint64_t end = offset + len > b->data_size ? b->data_size : offset + len;
	for (size_t r = offset / b->region_size; r <= (end - 1) / b->region_size; r++)
		set_bit(b, r);
}

void
repl_bitmap_mark_all(struct repl_bitmap *b)
{
	repl_bitmap_mark(b, 0, b->data_size);
}

void
repl_bitmap_clear_regions(struct repl_bitmap *b, size_t first, size_t n)
{
	for (size_t r = first; r < first + n && r < b->nregions; r++) {
		if (repl_bitmap_test(b, r)) {
			b->words[r / 64] &= ~(1ull << (r % 64));
			b->nset--;
		}
	}
}

bool
repl_bitmap_next_run(const struct repl_bitmap *b, size_t from, size_t max,
		size_t *first, size_t *n)
{
	size_t r = from;
	while (r < b->nregions) {
		if (b->words[r / 64] == 0 && r % 64 == 0) {
			r += 64;
			continue;
		}
		if (repl_bitmap_test(b, r))
			break;
		r++;
	}
	if (r >= b->nregions)
		return false;
	size_t e = r;
	while (e < b->nregions && e - r < max && repl_bitmap_test(b, e))
		e++;
	*first = r;
	*n = e - r;
	return true;
}

void
repl_bitmap_range(const struct repl_bitmap *b, size_t first, size_t n,
		uint64_t *offset, uint64_t *len)
{
	uint64_t off = (uint64_t)first * b->region_size;
	uint64_t end = (uint64_t)(first + n) * b->region_size;
	if (end > b->data_size)
		end = b->data_size;
	*offset = off;
	*len = end > off ? end - off : 0;
}

uint64_t
repl_bitmap_dirty_bytes(const struct repl_bitmap *b)
{
	uint64_t bytes = (uint64_t)b->nset * b->region_size;
	size_t last = b->nregions - 1;
	if (b->nset > 0 && repl_bitmap_test(b, last))
		bytes -= (uint64_t)b->nregions * b->region_size - b->data_size;
	return bytes;
}
