/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmem_alloc.h -- the one allocation function of the pmem layer.
 *
 * pmrep_pmem_zalloc() returns `size` zeroed bytes (free them with free(3))
 * or NULL. pmem.c defines it weakly as calloc(1, size); a unit test linked
 * with the library's objects may define its own (strong) version to make
 * allocations fail on purpose.
 */
#ifndef PMREP_PMEM_ALLOC_H
#define PMREP_PMEM_ALLOC_H

#include <stddef.h>

void *pmrep_pmem_zalloc(size_t size);

#endif /* PMREP_PMEM_ALLOC_H */
