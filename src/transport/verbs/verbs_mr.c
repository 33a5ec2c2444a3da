/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_mr.c -- registering local memory: access flags from the usage, and
 * the memory the kernel will not pin long-term (fsdax: EOPNOTSUPP; a
 * writable page-cache file mapping on ext4/xfs: EFAULT), which is either
 * registered on demand (ODP, then prefetched) or refused with an error that
 * says why and what to use instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_internal.h"

/* largest length one ibv_sge can describe in a prefetch */
#define PREFETCH_CHUNK (1u << 30)

/* what a region used for `usage` must allow */
int
verbs_mr_access(const struct verbs_peer *peer, int usage)
{
	int access = 0;

	/* a remote peer reads it (also: visibility / APM flush reads) */
	if (usage & (PMREP_MR_USAGE_READ_SRC |
			PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT))
		access |= IBV_ACCESS_REMOTE_READ;
	/* the device writes into it locally */
	if (usage & (PMREP_MR_USAGE_READ_DST | PMREP_MR_USAGE_RECV))
		access |= IBV_ACCESS_LOCAL_WRITE;
	/* a remote peer writes it (verbs: remote write needs local write) */
	if (usage & PMREP_MR_USAGE_WRITE_DST) {
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
		/* some devices check native atomic writes against remote
		 * atomic access */
		if (peer->base.caps & PMREP_CAP_NATIVE_ATOMIC_WRITE)
			access |= IBV_ACCESS_REMOTE_ATOMIC;
	}
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	if (peer->base.caps & PMREP_CAP_NATIVE_FLUSH) {
		if (usage & PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY)
			access |= IBV_ACCESS_FLUSH_GLOBAL;
		if (usage & PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT)
			access |= IBV_ACCESS_FLUSH_PERSISTENT;
	}
#endif
	/* WRITE_SRC / SEND: the device only reads it: no flag needed */
	/*
	 * Reached remotely only through type 2 windows (verbs_mw.c): no
	 * remote access of its own (its rkey grants nothing), MW_BIND, and
	 * LOCAL_WRITE, which a window giving remote write needs (IBA
	 * C10-74). The flush access bits stay (the window gives them too):
	 * RDMA FLUSH GLOBAL and PERSISTENT through a window over a region
	 * registered so were measured to work on rxe (tests/vm/mw_probe.c).
	 */
	if (usage & PMREP_MR_USAGE_MW_BIND) {
		access &= ~(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_ATOMIC);
		access |= IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
	}
	return access;
}

/* best effort: fault the pages in now rather than on the first access */
static void
prefetch(struct ibv_pd *pd, struct ibv_mr *mr, void *ptr, size_t size,
		int access)
{
	enum ibv_advise_mr_advice advice = (access & IBV_ACCESS_LOCAL_WRITE) ?
		IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE :
		IBV_ADVISE_MR_ADVICE_PREFETCH;
	uint8_t *p = ptr;

	while (size > 0) {
		uint32_t n = size > PREFETCH_CHUNK ? PREFETCH_CHUNK :
			(uint32_t)size;
		struct ibv_sge sge = {
			.addr = (uintptr_t)p, .length = n, .lkey = mr->lkey,
		};
		int ret = ibv_advise_mr(pd, advice, IBV_ADVISE_MR_FLAG_FLUSH,
				&sge, 1);
		if (ret) {
			PMREP_LOG_WARN("ibv_advise_mr(prefetch): %s: pages will fault in on first access",
					strerror(ret));
			return;
		}
		p += n;
		size -= n;
	}
}

/* the kernel will not pin this memory: say why and what works instead */
static int
unpinnable(int err, void *ptr, size_t size)
{
	pmrep_err_set_errno(err);
	if (err == EOPNOTSUPP) {
		PMREP_LOG_ERR("ibv_reg_mr(%p, %zu): %s: this looks like file-system DAX (fsdax) memory, "
				"which the kernel refuses to pin for RDMA, and the device has no on-demand "
				"paging (ODP); use device DAX (/dev/daxX.Y), tmpfs (/dev/shm), hugetlbfs "
				"or anonymous memory instead",
				ptr, size, strerror(err));
	} else {
		PMREP_LOG_ERR("ibv_reg_mr(%p, %zu): %s: a writable mapping of a regular file on a "
				"page-cache file system (ext4, xfs ...) cannot be pinned for RDMA on this "
				"kernel (or the range is not mapped), and the device has no on-demand paging "
				"(ODP); use device DAX (/dev/daxX.Y), tmpfs (/dev/shm), hugetlbfs or "
				"anonymous memory instead",
				ptr, size, strerror(err));
	}
	return PMREP_E_NOSUPP;
}

static int mr_reg_locked(struct verbs_peer *peer, void *ptr, size_t size,
		int usage, struct pmrep_mr_local **mr_ptr);

int
verbs_mr_reg(struct pmrep_peer *base, void *ptr, size_t size, int usage,
		struct pmrep_mr_local **mr_ptr)
{
	struct verbs_peer *peer = verbs_peer(base);

	verbs_dev_rdlock(peer);
	int ret = atomic_load(&peer->removed) ?
		verbs_peer_gone(peer, "pmrep_mr_reg") :
		mr_reg_locked(peer, ptr, size, usage, mr_ptr);
	verbs_dev_unlock(peer);
	return ret;
}

static int
mr_reg_locked(struct verbs_peer *peer, void *ptr, size_t size, int usage,
		struct pmrep_mr_local **mr_ptr)
{
	struct pmrep_peer *base = &peer->base;
	int access = verbs_mr_access(peer, usage);
	bool odp = false;
	int ret;

	struct verbs_mr *mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		PMREP_LOG_ERR("out of memory for an MR");
		return PMREP_E_NOMEM;
	}
	mr->mr = ibv_reg_mr(peer->pd, ptr, size, access);
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	/*
	 * A device may grant persistent-flush access only on persistent
	 * memory: rxe (Linux >= 6.2) checks every page and refuses DRAM,
	 * tmpfs, hugetlbfs with EINVAL. Register such memory without it and
	 * say so in the usage the remote side is given (flush type
	 * VISIBILITY only): a PERSISTENT RDMA FLUSH into it is then refused
	 * by the target (remote access error), never a false success, and
	 * the replication layer persists it by a persist request (GPSPM).
	 */
	if (mr->mr == NULL && errno == EINVAL &&
			(access & IBV_ACCESS_FLUSH_PERSISTENT) &&
			(usage & ~PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT) != 0) {
		mr->mr = ibv_reg_mr(peer->pd, ptr, size,
				access & ~IBV_ACCESS_FLUSH_PERSISTENT);
		if (mr->mr != NULL) {
			PMREP_LOG_INFO("ibv_reg_mr(%p, %zu): the device refuses persistent-flush access "
					"(not persistent memory): registered without it; a native PERSISTENT "
					"flush into this region fails (its flush type is VISIBILITY only)",
					ptr, size);
			access &= ~IBV_ACCESS_FLUSH_PERSISTENT;
			usage &= ~PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT;
		} else {
			errno = EINVAL;	/* report the first refusal */
		}
	}
#endif
	if (mr->mr == NULL) {
		int err = errno;
		/* EOPNOTSUPP: fsdax; EFAULT: a writable page-cache file
		 * mapping (or nothing mapped there) */
		if (err != EOPNOTSUPP && err != EFAULT) {
			ret = PMREP_ERR_PROVIDER(err, "ibv_reg_mr");
			goto err_free;
		}
		/* EFAULT on a region nobody writes: not a pinning refusal */
		if (err == EFAULT && !(access & IBV_ACCESS_LOCAL_WRITE)) {
			ret = PMREP_ERR_PROVIDER(err, "ibv_reg_mr");
			goto err_free;
		}
		if (!(peer->base.caps & PMREP_CAP_ODP)) {
			ret = unpinnable(err, ptr, size);
			goto err_free;
		}
		PMREP_LOG_INFO("ibv_reg_mr: %s: registering on demand (ODP)",
				strerror(err));
		/* IBV_ACCESS_ON_DEMAND is in every rdma-core pmrep supports */
		mr->mr = ibv_reg_mr(peer->pd, ptr, size,
				access | IBV_ACCESS_ON_DEMAND);
		if (mr->mr == NULL) {
			ret = PMREP_ERR_PROVIDER(errno, "ibv_reg_mr(ON_DEMAND)");
			goto err_free;
		}
		odp = true;
		prefetch(peer->pd, mr->mr, ptr, size, access);
	}
	mr->odp = odp;
	mr->base.peer = base;
	mr->base.ptr = ptr;
	mr->base.size = size;
	mr->base.usage = usage;
	mr->base.raddr = (uint64_t)(uintptr_t)ptr;
	mr->base.rkey = mr->mr->rkey;
	mr->lkey = mr->mr->lkey;
	mr->base.persist = NULL;
	verbs_peer_add_mr(peer, mr);
	*mr_ptr = &mr->base;
	return 0;

err_free:
	free(mr);
	return ret;
}

int
verbs_mr_dereg(struct pmrep_mr_local *base)
{
	struct verbs_mr *mr = (struct verbs_mr *)base;
	struct verbs_peer *peer = verbs_peer(base->peer);
	int ret = 0;

	verbs_dev_rdlock(peer);
	verbs_peer_del_mr(peer, mr);
	/* NULL: released with its removed device (T22) */
	if (mr->mr != NULL) {
		int err = ibv_dereg_mr(mr->mr);
		if (err)
			ret = PMREP_ERR_PROVIDER(err, "ibv_dereg_mr");
	}
	verbs_dev_unlock(peer);
	free(mr);
	return ret;
}
