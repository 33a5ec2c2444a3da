/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmem_int.h -- what the pmem layer's files share: the mapping object and
 * the page-granularity persistence (pmem_persist.c) that pmem.c's open,
 * map and close use.
 */
#ifndef PMREP_PMEM_INT_H
#define PMREP_PMEM_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <libpmem2.h>

#include <pmrep/pmem.h>

struct pmrep_pmem {
	char *path;
	int fd;			/* owned: closed by pmrep_pmem_close */
	bool devdax;
	struct pmem2_source *src;
	struct pmem2_map *map;

	/* copies of what libpmem2 reports; immutable after open */
	void *addr;
	size_t size;
	/* the public view starts here (pmem_view_open; 0: the whole) */
	size_t view_off;
	bool created;	/* the open created the file */
	bool rdonly;	/* opened O_RDONLY, mapped PROT_READ (pmem_view_open) */
	enum pmrep_pmem_granularity granularity;
	/* a file on tmpfs or ramfs: nothing to write back, no msync */
	bool in_memory;
	pmem2_persist_fn persist;
	pmem2_flush_fn flush;
	pmem2_drain_fn drain;
	pmem2_memcpy_fn memcpy_fn;
	pmem2_memmove_fn memmove_fn;
	pmem2_memset_fn memset_fn;

	/* 0: every write-back so far succeeded; else the errno of the
	 * first one that failed (the mapping is poisoned for good) */
	atomic_int poison;
	/* registry of the open PAGE mappings (reg_lock) */
	struct pmrep_pmem *reg_next;
	bool registered;
};

/* a NULL getter argument: logged (func names the getter); false */
bool pmem_getter_arg_ok(const struct pmrep_pmem *pmem, const char *func);

/* a PAGE-granularity mapping's functions: pmrep's msync write-back (a
 * failure is reported and poisons the mapping), or none for a file in
 * memory (tmpfs, ramfs: nothing to write back); sets p->in_memory */
void pmem_page_fns(struct pmrep_pmem *p);

/* the registry of open PAGE mappings, for a failed write-back through a
 * void function to find the mappings it poisons */
void pmem_reg_add(struct pmrep_pmem *p);
void pmem_reg_remove(struct pmrep_pmem *p);

#endif /* PMREP_PMEM_INT_H */
