/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_state.c -- the mirror's record (mirror_state.h). This version
 * keeps it in memory only.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "auth.h"
#include "mirror_state.h"

struct mirror_state {
	uint64_t primary_id;
	uint8_t rec_id[PMREP_MIRROR_MAX_REPLICAS][PMREP_UUID_SIZE];
	struct repl_bitmap oos[PMREP_MIRROR_MAX_REPLICAS];
	struct repl_bitmap al;
	uint64_t writes;
};

int
mstate_open(const char *path, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, uint64_t data_size, uint64_t region_size,
		struct mirror_state **st_ptr)
{
	(void) uuid;
	(void) generation;
	if (path != NULL) {
		PMREP_LOG_ERR("mirror state file %s: not supported yet", path);
		return PMREP_E_NOSUPP;
	}
	struct mirror_state *st = calloc(1, sizeof(*st));
	if (st == NULL) {
		PMREP_LOG_ERR("out of memory for the mirror's record");
		return PMREP_E_NOMEM;
	}
	int ret = repl_random(&st->primary_id, sizeof(st->primary_id));
	if (ret == 0)
		ret = repl_bitmap_init(&st->al, data_size, region_size);
	for (unsigned i = 0; ret == 0 && i < PMREP_MIRROR_MAX_REPLICAS; i++)
		ret = repl_bitmap_init(&st->oos[i], data_size, region_size);
	if (ret) {
		mstate_close(&st);
		return ret;
	}
	*st_ptr = st;
	return 0;
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
	free(st);
	*st_ptr = NULL;
}

bool
mstate_is_persistent(const struct mirror_state *st)
{
	(void) st;
	return false;
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

int
mstate_set_rec_id(struct mirror_state *st, unsigned i,
		const uint8_t id[PMREP_UUID_SIZE])
{
	memcpy(st->rec_id[i], id, PMREP_UUID_SIZE);
	return 0;
}

struct repl_bitmap *
mstate_oos(struct mirror_state *st, unsigned i)
{
	return &st->oos[i];
}

int
mstate_oos_persist(struct mirror_state *st, unsigned i, uint64_t off,
		uint64_t len)
{
	(void) st;
	(void) i;
	(void) off;
	(void) len;
	return 0;
}

int
mstate_al_mark(struct mirror_state *st, uint64_t off, uint64_t len)
{
	repl_bitmap_mark(&st->al, off, len);
	return 0;
}

int
mstate_al_clear(struct mirror_state *st, bool force)
{
	if (!force && st->al.nset <= MSTATE_AL_LIMIT)
		return 0;
	repl_bitmap_clear_regions(&st->al, 0, st->al.nregions);
	return 0;
}

uint64_t
mstate_writes(const struct mirror_state *st)
{
	return st->writes;
}
