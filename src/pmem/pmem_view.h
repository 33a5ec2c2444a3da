/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmem_view.h -- inside the library only: a mapping whose public view is
 * the part after a header of the caller's (a pmrep log file: the replica
 * layout, PROTOCOL.md "On media"). pmrep_pmem_get_address / get_size /
 * deep_flush of such a mapping see the view only; pmrep_pmem_persist and
 * the persist functions accept the whole mapping, so that its owner (repl)
 * updates the header through the same object.
 */
#ifndef PMREP_PMEM_VIEW_H
#define PMREP_PMEM_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include <pmrep/pmem.h>

/*
 * pmrep_pmem_open of the whole file (`file_size` as its `size`), the view
 * starting `view_off` bytes in (> 0, a multiple of 4096, below the
 * mapping's size: else PMREP_E_RANGE). `lock`: an exclusive flock on the
 * mapping's own fd for its life, taken before the call returns (held:
 * PMREP_E_BUSY -- a pmrep-target serving it holds the same lock), so that
 * nothing else of pmrep writes the file meanwhile. `rdonly`: the file is
 * opened O_RDONLY and mapped PROT_READ (a store faults; CREATE refused).
 * Errors: those of pmrep_pmem_open, PMREP_E_RANGE, PMREP_E_BUSY,
 * PMREP_E_PROVIDER (flock).
 */
int pmem_view_open(const char *path, unsigned flags, size_t file_size,
		enum pmrep_pmem_granularity required, size_t view_off, bool lock,
		bool rdonly, struct pmrep_pmem **pmem_ptr);

/* was the mapping opened read-only (pmem_view_open's rdonly)? */
bool pmem_rdonly(const struct pmrep_pmem *pmem);

/* the whole mapping: its start and size (the header before the view) */
void *pmem_whole_address(const struct pmrep_pmem *pmem);
size_t pmem_whole_size(const struct pmrep_pmem *pmem);

/* did pmem_view_open (or pmrep_pmem_open) create the file? */
bool pmem_created(const struct pmrep_pmem *pmem);

#endif /* PMREP_PMEM_VIEW_H */
