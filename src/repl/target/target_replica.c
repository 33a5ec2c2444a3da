/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_replica.c -- the replica a target serves: opened (created,
 * formatted) through the pmem layer under an exclusive flock, its header
 * updated crash-atomically (replica_hdr_write), its data area registered
 * directly or through a staging buffer, and the poison a failed persist
 * leaves.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "pmem/pmem_view.h"
#include "target_int.h"

/* ------------------------------------------------------------ header */

/* write `next` as the header's new state, crash-atomically (the slot not
 * holding the newest state, then its persist); t->hdr follows on success */
int
target_hdr_update(struct pmrep_target *t, const struct replica_hdr *next)
{
	return replica_hdr_write(t->pmem, t->base, &t->hdr, next);
}

/* format a new replica: a random replica id, unclaimed, into slot 0 */
static int
hdr_format(struct pmrep_target *t, uint64_t data_size)
{
	struct replica_hdr h;
	memset(&h, 0, sizeof(h));
	h.data_size = data_size;
	int ret = repl_random(h.replica_id, PMREP_UUID_SIZE);
	if (ret)
		return ret;
	/* "the newest state is in slot 1, sequence 0": the one write goes to
	 * slot 0 with sequence 1; slot 1 stays zero (invalid) */
	memset(&t->hdr, 0, sizeof(t->hdr));
	t->hdr.slot = 1;
	return target_hdr_update(t, &h);
}

/* a persist failed: what reached the media is unknown, and no later
 * persist can vouch for it */
void
target_poison(struct pmrep_target *t, int err, const char *what)
{
	if (!t->poisoned)
		PMREP_LOG_ERR("replica %s: %s failed (%s): the target is poisoned: every later COMMIT, PERSIST and CLOSE is refused (a later successful msync is no proof for earlier data)",
				t->cfg.path, what, pmrep_err_to_str(err));
	t->poisoned = true;
}

/*
 * is the target poisoned? Also when the pmem layer poisoned the mapping
 * behind our back: in direct mode the transport persists remote writes
 * through pmrep_pmem_persist_cb (a failed one NAKs the flush and poisons
 * the mapping, but never reaches this file). Checked before every header
 * write: replica_hdr_write stores the new slot before its persist fails,
 * so writing into a poisoned mapping would leave a refused COMMIT's claim
 * (or a refused CLOSE's mark) in the file's pages.
 */
bool
target_poisoned(struct pmrep_target *t)
{
	if (!t->poisoned && pmrep_pmem_is_poisoned(t->pmem))
		target_poison(t, PMREP_E_PROVIDER, "a write-back of the mapping (a flush of remote writes)");
	return t->poisoned;
}

/*
 * one target per replica: an exclusive advisory lock (flock) on the
 * replica file or device, held on an fd of its own for the target's life.
 * flock locks belong to the open file description, so a second target in
 * this process conflicts as one in another process does. Taken before
 * anything is written to the replica.
 */
static int
lock_replica(struct pmrep_target *t)
{
	const char *path = t->cfg.path;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return PMREP_ERR_PROVIDER(errno, path);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		close(fd);
		if (err == EWOULDBLOCK) {
			pmrep_err_set_errno(err);
			PMREP_LOG_ERR("replica %s is already served by another target",
					path);
			return PMREP_E_BUSY;
		}
		char what[300];
		snprintf(what, sizeof(what), "flock(%s)", path);
		return PMREP_ERR_PROVIDER(err, what);
	}
	t->lock_fd = fd;
	return 0;
}

void
target_unlock_replica(struct pmrep_target *t)
{
	if (t->lock_fd >= 0)
		close(t->lock_fd);	/* releases the flock */
	t->lock_fd = -1;
}

/*
 * close the replica's mapping on an error path. pmrep_pmem_close starts by
 * clearing this thread's error record, which would leave the caller of
 * pmrep_target_new with an empty pmrep_err_msg(): keep the reason.
 */
void
target_close_pmem_keep_error(struct pmrep_target *t)
{
	char why[256];
	int err = pmrep_err_errno();
	snprintf(why, sizeof(why), "%s", pmrep_err_msg());
	(void) pmrep_pmem_close(&t->pmem);
	/* a failed start removes only what it created, and only while it
	 * holds the lock (without it another target may serve the file) */
	if (t->created && t->lock_fd >= 0 && unlink(t->cfg.path) != 0)
		PMREP_LOG_WARN("cannot remove the replica file %s created: %s",
				t->cfg.path, strerror(errno));
	t->created = false;
	target_unlock_replica(t);
	if (why[0] != '\0' && pmrep_err_msg()[0] == '\0')
		PMREP_LOG_ERR("cannot serve %s: %s", t->cfg.path, why);
	pmrep_err_set_errno(err);
}

/*
 * give every block of an existing replica file its storage now. A sparse
 * replica (made with truncate, copied with cp --sparse, holes punched)
 * maps fine, but the first remote write into a hole on a full file system
 * raises SIGBUS in a progress thread and the whole target dies. Refuse to
 * serve it instead, with the reason. Device DAX: nothing to do.
 */
static int
allocate_blocks(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return PMREP_ERR_PROVIDER(errno, path);
	struct stat st;
	int ret = 0;
	if (fstat(fd, &st) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, path);
	} else if (S_ISREG(st.st_mode)) {
		int err = posix_fallocate(fd, 0, (off_t)size);
		if (err == EOPNOTSUPP || err == EINVAL) {
			PMREP_LOG_WARN("replica %s: the file system cannot preallocate (%s); a sparse replica on a full file system would crash the target",
					path, strerror(err));
		} else if (err != 0) {
			pmrep_err_set_errno(err);
			PMREP_LOG_ERR("replica %s: cannot give its %llu bytes their storage (%s); refusing to serve it (a write into a hole would crash the target)",
					path, (unsigned long long)size, strerror(err));
			ret = PMREP_E_PROVIDER;
		}
	}
	close(fd);
	return ret;
}

/* open (create + format) the replica and check its header */
int
target_open_replica(struct pmrep_target *t)
{
	const struct pmrep_target_cfg *c = &t->cfg;
	uint64_t file_size = c->data_size ? c->data_size + PMREP_REPLICA_DATA_OFFSET : 0;
	bool existed = access(c->path, F_OK) == 0;
	int ret = pmrep_pmem_open(c->path, c->create ? PMREP_PMEM_CREATE : 0,
			(size_t)file_size, PMREP_PMEM_GRANULARITY_PAGE, &t->pmem);
	if (ret) {
		/* keep the pmem layer's cause (ENOENT, the sizes ...) */
		char why[256];
		int err = pmrep_err_errno();
		snprintf(why, sizeof(why), "%s", pmrep_err_msg());
		const char *w = why;
		size_t pl = strlen(c->path);
		if (strncmp(w, c->path, pl) == 0 && w[pl] == ':' && w[pl + 1] == ' ')
			w += pl + 2;	/* it starts with the path: once is enough */
		PMREP_LOG_ERR("cannot open replica %s: %s", c->path,
				w[0] ? w : pmrep_err_to_str(ret));
		pmrep_err_set_errno(err);
		return ret;
	}
	/* before anything is written to it: another target may serve it */
	ret = lock_replica(t);
	if (ret)
		goto err;
	t->created = pmem_created(t->pmem);
	t->base = pmrep_pmem_get_address(t->pmem);
	t->data = t->base + PMREP_REPLICA_DATA_OFFSET;
	t->persist = pmrep_pmem_get_persist_fn(t->pmem);
	size_t size = pmrep_pmem_get_size(t->pmem);

	if (!existed && c->create) {
		ret = hdr_format(t, c->data_size);	/* unclaimed */
		if (ret)
			goto err;
		PMREP_LOG(PMREP_LOG_NOTICE, "created replica %s: %llu data bytes",
				c->path, (unsigned long long)c->data_size);
		return 0;
	}
	/*
	 * a device DAX always exists: "create" formats one that was never
	 * formatted -- its header block all zero (a new namespace reads as
	 * zeros) -- and nothing else. Its size is the device's own, which
	 * pmrep_pmem_open checked against the configured one.
	 */
	if (c->create && pmrep_pmem_is_devdax(t->pmem) &&
			size > PMREP_REPLICA_DATA_OFFSET &&
			replica_all_zero(t->base, PMREP_REPLICA_DATA_OFFSET)) {
		ret = hdr_format(t, size - PMREP_REPLICA_DATA_OFFSET);
		if (ret)
			goto err;
		PMREP_LOG(PMREP_LOG_NOTICE, "formatted device DAX %s as a replica (its header block was all zero): %llu data bytes",
				c->path, (unsigned long long)t->hdr.data_size);
		return 0;
	}
	ret = replica_hdr_decode(t->base, size, size, &t->hdr);
	if (ret) {
		PMREP_LOG_ERR("replica %s: its header is not valid (%s); refusing to serve it",
				c->path, pmrep_err_to_str(ret));
		goto err;
	}
	if (c->data_size != 0 && t->hdr.data_size != c->data_size) {
		PMREP_LOG_ERR("replica %s holds %llu data bytes, %llu were asked for",
				c->path, (unsigned long long)t->hdr.data_size,
				(unsigned long long)c->data_size);
		ret = PMREP_E_RANGE;
		goto err;
	}
	if (replica_uuid_is_nil(t->hdr.replica_id)) {
		/* a version 1 header: its id is drawn now and written with
		 * the header's first update (into the slot at 2048) */
		ret = repl_random(t->hdr.replica_id, PMREP_UUID_SIZE);
		if (ret)
			goto err;
		PMREP_LOG(PMREP_LOG_NOTICE, "replica %s: a version %u header without a replica id; drew one, written at its first header update",
				c->path, t->hdr.version);
	}
	ret = allocate_blocks(c->path, size);
	if (ret)
		goto err;
	return 0;
err:
	target_close_pmem_keep_error(t);
	return ret;
}

/*
 * verbs: may the device write straight into the mapping? Not when the
 * replica is a regular file in a page cache (ext4, xfs, 9p, nfs ... without
 * DAX): the device writes into pages pinned at registration, which nothing
 * marks dirty, so the mapping's persist (msync) does not write them back
 * and the file does not hold what the mirror was told is durable. Kernels
 * from 6.5 on refuse such a registration (EFAULT); older ones (Debian 12's
 * 6.1) accept it, so pmrep must not try (T11). Fine: device DAX, a DAX
 * file (finer than page granularity: no page cache), and memory file
 * systems, whose pages are the file. The tcp provider's target stores
 * with the CPU, which dirties the pages: no restriction there.
 * NULL when registering is fine, else why not.
 */
static const char *
unregistrable_why(struct pmrep_target *t)
{
	enum pmrep_provider prov = PMREP_PROVIDER_TCP;
	(void) pmrep_peer_get_provider(t->peer, &prov);
	if (prov != PMREP_PROVIDER_VERBS || pmrep_pmem_is_devdax(t->pmem) ||
			pmrep_pmem_get_granularity(t->pmem) !=
			PMREP_PMEM_GRANULARITY_PAGE)
		return NULL;
	struct statfs sf;
	if (statfs(t->cfg.path, &sf) != 0) {
		PMREP_LOG_WARN("statfs(%s): %s", t->cfg.path, strerror(errno));
		return "its file system is unknown (statfs failed)";
	}
	switch ((unsigned long)sf.f_type) {
	case TMPFS_MAGIC:
	case HUGETLBFS_MAGIC:
	case RAMFS_MAGIC:
		return NULL;
	default:
		return "it is a file in a page cache (no DAX): the device's writes into its pinned pages would never be written back by persist";
	}
}

/* register the data area; staging buffer when the mapping cannot be */
static int
register_data_rw(struct pmrep_target *t)
{
	/* windows only: no remote access by the region's own rkey */
	const int usage = PMREP_MR_USAGE_WRITE_DST | PMREP_MR_USAGE_READ_SRC |
		PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY | PMREP_MR_USAGE_MW_BIND;
	size_t len = (size_t)t->hdr.data_size;
	int ret;
	const char *why = t->cfg.staging ? NULL : unregistrable_why(t);

	if (why != NULL)
		PMREP_LOG_WARN("the mapping of %s is not registered for RDMA: %s; serving through a staging buffer with GPSPM",
				t->cfg.path, why);
	if (!t->cfg.staging && why == NULL) {
		ret = pmrep_mr_reg(t->peer, t->data, len,
				usage | PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT,
				&t->data_mr);
		if (ret == 0) {
			(void) pmrep_mr_set_persist_fn(t->data_mr, pmrep_pmem_persist_cb, t->pmem);
			t->mode = PMREP_TARGET_MODE_DIRECT;
			return 0;
		}
		if (ret != PMREP_E_NOSUPP && ret != PMREP_E_PROVIDER)
			return ret;
		PMREP_LOG_WARN("the mapping of %s cannot be registered for RDMA (%s: %s); serving through a staging buffer with GPSPM",
				t->cfg.path, pmrep_err_to_str(ret), pmrep_err_msg());
	}
	/* writes land here; a persist request copies into the mapping. No
	 * PERSISTENT flush usage: a native persistent flush into it must
	 * fail, not pretend */
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return PMREP_ERR_PROVIDER(errno, "mmap staging buffer");
	ret = pmrep_mr_reg(t->peer, p, len, usage, &t->data_mr);
	if (ret) {
		munmap(p, len);
		return ret;
	}
	t->staging = p;
	t->mode = PMREP_TARGET_MODE_STAGING;
	return 0;
}

/*
 * the data area's registration: data_mr, reachable remotely only through
 * memory windows. Each session gets its own (target.c on_auth): an attach
 * a window with the region's remote usages, a QUERY a read-only one, so a
 * read-only session is never handed write access to the replica (an
 * ACTIVE mirror's data would change under it, with no COMMIT and no
 * fencing), and nothing is reachable before AUTH or after the session.
 */
int
target_register_data(struct pmrep_target *t)
{
	int ret = register_data_rw(t);
	if (ret)
		return ret;
	(void) pmrep_mr_get_usage(t->data_mr, &t->data_mr_usage);
	return 0;
}
