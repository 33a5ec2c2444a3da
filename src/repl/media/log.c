/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c -- a pmrep log file: one on-media layout for every node (the
 * replica layout of PROTOCOL.md "On media": the 4 KiB header block, then
 * the data area). The application opens it in place through the pmem
 * layer, which exposes the data area only, and mirrors from it; a
 * pmrep-target serves the same file as a replica. Both take the file's
 * exclusive flock, so only one of them uses it at a time.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <pmrep/repl.h>

#include "common/log.h"
#include "pmem/pmem_view.h"
#include "repl/wire/auth.h"
#include "replica_hdr.h"

int
pmrep_log_open(const char *path, unsigned flags, size_t data_size,
		enum pmrep_pmem_granularity required,
		struct pmrep_pmem **pmem_ptr)
{
	if (pmem_ptr == NULL || path == NULL) {
		PMREP_LOG_ERR("invalid argument: %s is NULL",
				path == NULL ? "path" : "pmem_ptr");
		return PMREP_E_INVAL;
	}
	*pmem_ptr = NULL;
	pmrep_err_clear();
	bool rdonly = (flags & PMREP_LOG_RDONLY) != 0;
	flags &= ~PMREP_LOG_RDONLY;
	if (rdonly && (flags & (PMREP_PMEM_CREATE | PMREP_PMEM_EXCL))) {
		PMREP_LOG_ERR("%s: PMREP_LOG_RDONLY with PMREP_PMEM_CREATE or PMREP_PMEM_EXCL",
				path);
		return PMREP_E_INVAL;
	}
	if ((flags & PMREP_PMEM_CREATE) && data_size == 0) {
		PMREP_LOG_ERR("%s: PMREP_PMEM_CREATE with a data size of 0", path);
		return PMREP_E_INVAL;
	}
	if (data_size > SIZE_MAX - REPLICA_HDR_BLOCK) {
		PMREP_LOG_ERR("%s: a data size of %zu bytes is too large", path,
				data_size);
		return PMREP_E_INVAL;
	}
	size_t file_size = data_size ? data_size + REPLICA_HDR_BLOCK : 0;
	struct pmrep_pmem *p = NULL;
	/* read-only: no lock -- it excludes no writer, and no writer
	 * excludes it (a target serving the file keeps serving it) */
	int ret = pmem_view_open(path, flags, file_size, required,
			REPLICA_HDR_BLOCK, !rdonly, rdonly, &p);
	if (ret)
		return ret;
	uint8_t *base = pmem_whole_address(p);
	size_t whole = pmem_whole_size(p);
	bool created = pmem_created(p);
	/* a device DAX always exists: with CREATE, one whose header block
	 * is all zero (never formatted) is formatted, as a target does */
	bool format = created || ((flags & PMREP_PMEM_CREATE) &&
			pmrep_pmem_is_devdax(p) &&
			replica_all_zero(base, REPLICA_HDR_BLOCK));
	if (format) {
		struct replica_hdr cur, h;
		memset(&cur, 0, sizeof(cur));
		memset(&h, 0, sizeof(h));
		cur.slot = 1;	/* the one write goes to slot 0, sequence 1 */
		h.data_size = whole - REPLICA_HDR_BLOCK;
		ret = repl_random(h.replica_id, PMREP_UUID_SIZE);
		if (ret == 0)
			ret = replica_hdr_write(p, base, &cur, &h);
		if (ret) {
			PMREP_LOG_ERR("%s: the new log's header could not be written (%s)",
					path, pmrep_err_to_str(ret));
			goto fail;
		}
		PMREP_LOG(PMREP_LOG_NOTICE, "%s log %s: %zu data bytes",
				created ? "created" : "formatted", path,
				whole - (size_t)REPLICA_HDR_BLOCK);
	} else {
		struct replica_hdr h;
		ret = replica_hdr_decode(base, whole, whole, &h);
		if (ret) {
			PMREP_LOG_ERR("%s is not a pmrep log or replica (its header block is not valid: %s); a plain file is opened with pmrep_pmem_open",
					path, pmrep_err_to_str(ret));
			goto fail;
		}
		if (data_size != 0 && h.data_size != data_size) {
			PMREP_LOG_ERR("%s holds %llu data bytes, %zu were asked for",
					path, (unsigned long long)h.data_size,
					data_size);
			ret = PMREP_E_RANGE;
			goto fail;
		}
	}
	*pmem_ptr = p;
	return 0;
fail:
	(void) pmrep_pmem_close(&p);
	if (created)
		(void) unlink(path);	/* what this call created goes again */
	return ret;
}

/*
 * the header of the log `log` as its mapping holds it now: copied first
 * (a writer -- its mirror, or a target serving the file -- may update it
 * meanwhile: a slot torn by that update does not check, and the other
 * slot, the previous state, is read)
 */
static int
log_header(const struct pmrep_pmem *log, const char *what, struct replica_hdr *h)
{
	if (log == NULL) {
		PMREP_LOG_ERR("%s: invalid argument: log is NULL", what);
		return PMREP_E_INVAL;
	}
	const uint8_t *whole = pmem_whole_address(log);
	if ((const void *)whole == pmrep_pmem_get_address(log)) {
		PMREP_LOG_ERR("%s: %s is not opened as a pmrep log (pmrep_log_open)",
				what, pmrep_pmem_get_path(log));
		return PMREP_E_INVAL;
	}
	uint8_t buf[REPLICA_HDR_BLOCK];
	memcpy(buf, whole, sizeof(buf));
	int ret = replica_hdr_decode(buf, sizeof(buf), 0, h);
	if (ret)
		PMREP_LOG_ERR("%s: the header of the log %s is not valid now",
				what, pmrep_pmem_get_path(log));
	return ret;
}

int
pmrep_log_get_uuid(const struct pmrep_pmem *log, uint8_t uuid[PMREP_UUID_SIZE])
{
	if (uuid == NULL) {
		PMREP_LOG_ERR("pmrep_log_get_uuid: invalid argument: uuid is NULL");
		return PMREP_E_INVAL;
	}
	struct replica_hdr h;
	int ret = log_header(log, "pmrep_log_get_uuid", &h);
	if (ret == 0)
		memcpy(uuid, h.uuid, PMREP_UUID_SIZE);
	return ret;
}

int
pmrep_log_get_generation(const struct pmrep_pmem *log, uint64_t *generation)
{
	if (generation == NULL) {
		PMREP_LOG_ERR("pmrep_log_get_generation: invalid argument: generation is NULL");
		return PMREP_E_INVAL;
	}
	struct replica_hdr h;
	int ret = log_header(log, "pmrep_log_get_generation", &h);
	if (ret == 0)
		*generation = h.generation;
	return ret;
}
