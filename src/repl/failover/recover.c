/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recover.c -- pmrep_mirror_recover: rebuild a local mapping from one
 * replica. The initiator's side of the handshake with intent QUERY (the
 * target answers ACCEPT with its header as it is and writes nothing), the
 * checks that decide whether the replica may be a source, RDMA reads of
 * its data area into the mapping and a local persist. Recover never writes
 * the replica's header. The connect + QUERY handshake is query.c's
 * repl_query_open, shared with pmrep_replica_query.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <pmrep/transport.h>

#include "common/log.h"
#include "pmem/pmem_view.h"
#include "repl/wire/chan.h"
#include "query.h"
#include "recover.h"
#include "repl/media/replica_hdr.h"

#define RECOVER_CHUNK (4u << 20)	/* bytes per read */
#define RECOVER_SLICE_MS 100		/* re-check the conn at least this often */
#define CTX_READ ((uintptr_t)3)

struct recover {
	struct pmrep_peer *peer;
	struct pmrep_mr_local *dst;	/* the bounce buffer */
	void *bounce;
	struct repl_chan ch;
	bool chan_ready;
	struct pmrep_conn *conn;
	struct pmrep_mr_remote *rmr;
	long long deadline;
};

static int
wait_chan(struct recover *rc)
{
	return repl_chan_wait_slice(&rc->ch, rc->deadline);
}

/*
 * wait for the completion of the one signalled read in flight. The
 * channel's own function ignores successful reads, so the CQ is read here;
 * nothing else is in flight then (no message is expected during the copy).
 */
static int
wait_read(struct recover *rc)
{
	for (;;) {
		struct pmrep_completion c;
		int n = 0;
		int ret = pmrep_cq_get_completions(rc->ch.cq, &c, 1, &n);
		if (ret && ret != PMREP_E_NO_COMPLETION)
			return ret;
		if (ret == 0 && n == 1) {
			uintptr_t ctx = (uintptr_t)c.op_context;
			if (c.status != PMREP_WC_SUCCESS) {
				PMREP_LOG_ERR("recover: %s completed with error status %d (%s)",
						ctx == CTX_READ ? "a read" : "an operation",
						(int)c.status, pmrep_wc_status_str(c.status));
				return PMREP_E_CONN_LOST;
			}
			if (ctx == CTX_READ)
				return 0;
			if (ctx >= CTX_SEND0 && ctx < CTX_SEND0 + CHAN_NSEND) {
				unsigned i = (unsigned)(ctx - CTX_SEND0);
				if (rc->ch.send_busy[i]) {
					rc->ch.send_busy[i] = false;
					rc->ch.sends_in_flight--;
				}
				continue;
			}
			PMREP_LOG_ERR("recover: unexpected completion during the copy");
			return PMREP_E_MALFORMED;
		}
		ret = repl_chan_check_conn(&rc->ch);
		if (ret)
			return ret;
		ret = wait_chan(rc);
		if (ret)
			return ret;
	}
}

/* may this replica be the source of generation `generation`? */
static int
check_source(struct recover *rc, const struct repl_accept *acc,
		uint64_t generation, size_t size, unsigned flags)
{
	if (acc->target_flags & REPL_TF_FRESH) {
		PMREP_LOG_ERR("recover: the replica was never claimed by a mirror: it holds no data of this replica set");
		return PMREP_E_STATE;
	}
	if (acc->generation != generation) {
		/* a newer one is refused by the target already */
		PMREP_LOG_ERR("recover: the replica holds generation %llu, older than %llu: it lacks changes made since; refusing it as a source",
				(unsigned long long)acc->generation,
				(unsigned long long)generation);
		return PMREP_E_STATE;
	}
	if (!(acc->hdr_flags & PMREP_REPLICA_F_CONSISTENT) &&
			!(flags & PMREP_RECOVER_ALLOW_INCONSISTENT)) {
		PMREP_LOG_ERR("recover: the replica is not marked consistent (its mirror did not shut down cleanly, or an earlier attach was refused); allow an inconsistent source to take it anyway");
		return PMREP_E_STATE;
	}
	if (acc->hdr_flags & PMREP_REPLICA_F_REMOVED) {
		PMREP_LOG_ERR("recover: the replica was removed from its set by its primary: the set went on without it");
		return PMREP_E_STATE;
	}
	unsigned n = acc->set_size, k = acc->set_quorum ? acc->set_quorum : n;
	if (n != 0 && n - k + 1 > 1 && !(flags & PMREP_RECOVER_SET_DECIDED)) {
		PMREP_LOG_ERR("recover: the replica's set writes under a quorum (%u of %u): its consistent mark vouches for its own position only, and a later run may have completed persists without it; read %u copies of the set and take the most current (pmrep recover --replica A --replica B ...), or take the risk (--force-stale)",
				k, n, n - k + 1);
		return PMREP_E_STATE;
	}
	if (acc->target_flags & REPL_TF_STAGING) {
		PMREP_LOG_ERR("recover: the target serves through a staging buffer; its registered memory is not the replica's data");
		return PMREP_E_NOSUPP;
	}
	int ret = pmrep_mr_remote_from_descriptor(acc->mr_desc,
			PMREP_MR_DESC_SIZE, &rc->rmr);
	if (ret)
		return ret;
	size_t rsize = 0;
	(void) pmrep_mr_remote_get_size(rc->rmr, &rsize);
	if (rsize != size) {
		PMREP_LOG_ERR("recover: the replica offers %zu bytes, the mapping has %zu",
				rsize, size);
		return PMREP_E_RANGE;
	}
	return 0;
}

/* tear the connection down */
static void
drop_conn(struct recover *rc)
{
	if (rc->conn) {
		(void) pmrep_conn_disconnect(rc->conn);
		(void) pmrep_conn_delete(&rc->conn);
	}
	repl_chan_detach(&rc->ch);
	(void) pmrep_mr_remote_delete(&rc->rmr);
}

int
pmrep_mirror_recover(struct pmrep_pmem *pmem, const char *addr,
		const char *port, const uint8_t *key, size_t key_len,
		const uint8_t uuid[PMREP_UUID_SIZE], uint64_t generation,
		unsigned flags, int timeout_ms, struct pmrep_replica_info *info)
{
	return repl_recover_named(pmem, addr, port, NULL, key, key_len, uuid,
			generation, flags, timeout_ms, info);
}

int
repl_recover_named(struct pmrep_pmem *pmem, const char *addr,
		const char *port, const char *selector, const uint8_t *key,
		size_t key_len, const uint8_t uuid[PMREP_UUID_SIZE],
		uint64_t generation, unsigned flags, int timeout_ms,
		struct pmrep_replica_info *info)
{
	if (pmem == NULL || addr == NULL || port == NULL || key == NULL ||
			uuid == NULL) {
		PMREP_LOG_ERR("invalid argument: pmem, addr, port, key or uuid is NULL");
		return PMREP_E_INVAL;
	}
	if (pmem_rdonly(pmem)) {
		PMREP_LOG_ERR("recover: %s is opened read-only (PMREP_LOG_RDONLY): nothing can be copied into it",
				pmrep_pmem_get_path(pmem));
		return PMREP_E_INVAL;
	}
	int ret = repl_key_check(key, key_len);
	if (ret)
		return ret;
	if ((ret = repl_port_check(port, false)) != 0 ||
			(ret = repl_timeout_check(timeout_ms, "pmrep_mirror_recover")) != 0)
		return ret;
	if (addr[0] == '\0' || replica_uuid_is_nil(uuid) || generation == 0 ||
			(flags & ~(PMREP_RECOVER_ALLOW_INCONSISTENT |
				PMREP_RECOVER_SET_DECIDED)) != 0) {
		PMREP_LOG_ERR("invalid argument: empty address, nil UUID, generation 0 or unknown flags 0x%x",
				flags);
		return PMREP_E_INVAL;
	}
	uint8_t *base = pmrep_pmem_get_address(pmem);
	size_t size = pmrep_pmem_get_size(pmem);
	pmrep_pmem_memcpy_fn *copy = pmrep_pmem_get_memcpy_fn(pmem);

	struct recover rc = { .deadline = repl_deadline(timeout_ms) };
	ret = pmrep_peer_open(addr, false, &rc.peer);
	if (ret)
		return ret;
	/*
	 * The replica's bytes land in a registered bounce buffer, and the CPU
	 * copies them into the mapping and persists them: an RDMA
	 * write into a pinned page-cache mapping is not seen by msync on
	 * every kernel (the pages are never marked dirty), and newer kernels
	 * refuse to pin such mappings writable at all.
	 */
	rc.bounce = aligned_alloc(4096, RECOVER_CHUNK);
	if (rc.bounce == NULL) {
		PMREP_LOG_ERR("recover: out of memory for a %u-byte bounce buffer",
				RECOVER_CHUNK);
		ret = PMREP_E_NOMEM;
		goto out;
	}
	ret = pmrep_mr_reg(rc.peer, rc.bounce, RECOVER_CHUNK,
			PMREP_MR_USAGE_READ_DST, &rc.dst);
	if (ret)
		goto out;
	ret = repl_chan_init(&rc.ch, rc.peer);
	if (ret)
		goto out;
	rc.chan_ready = true;

	struct repl_accept acc;
	ret = repl_query_open(&rc.ch, rc.peer, addr, port, selector, key, key_len, uuid,
			generation, size, rc.deadline, timeout_ms, "recover",
			&rc.conn, &acc);
	if (ret)
		goto out;
	/* the target checked that the replica's data size is ours */
	repl_query_info(info, size, &acc);
	ret = check_source(&rc, &acc, generation, size, flags);
	if (ret)
		goto out;

	/* the copy: one signalled read at a time, each bounded by the
	 * call's deadline */
	for (size_t off = 0; off < size; off += RECOVER_CHUNK) {
		size_t len = size - off < RECOVER_CHUNK ? size - off : RECOVER_CHUNK;
		ret = pmrep_read(rc.conn, rc.dst, 0, rc.rmr, off, len,
				PMREP_F_COMPLETION_ALWAYS, (void *)CTX_READ);
		if (ret == 0)
			ret = wait_read(&rc);
		if (ret) {
			PMREP_LOG_ERR("recover: reading %zu bytes at %zu failed (%s); the mapping holds part of the replica's data",
					len, off, pmrep_err_to_str(ret));
			goto out;
		}
		/* copy without persisting, then persist through the call
		 * that reports a failed write-back (T28) */
		copy(base + off, rc.bounce, len, PMREP_PMEM_F_NOFLUSH);
		ret = pmrep_pmem_persist(pmem, base + off, len);
		if (ret) {
			PMREP_LOG_ERR("recover: persisting %zu bytes at %zu of the mapping failed (%s)",
					len, off, pmrep_err_to_str(ret));
			goto out;
		}
	}
	PMREP_LOG(PMREP_LOG_NOTICE, "recovered %zu bytes of generation %llu from replica %s:%s",
			size, (unsigned long long)generation, addr, port);
out:
	drop_conn(&rc);
	if (rc.chan_ready)
		repl_chan_fini(&rc.ch);
	(void) pmrep_mr_dereg(&rc.dst);
	free(rc.bounce);
	(void) pmrep_peer_delete(&rc.peer);
	return ret;
}
