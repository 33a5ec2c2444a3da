/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common.h -- small helpers of the generic transport files: argument
 * checks that log what was wrong, and the peer's object count.
 */
#ifndef PMREP_TRANSPORT_COMMON_H
#define PMREP_TRANSPORT_COMMON_H

#include "common/log.h"
#include "provider.h"

/* return PMREP_E_INVAL with a log line naming the argument when it is NULL */
#define PMREP_CHECK_ARG(p) do { \
	if ((p) == NULL) { \
		PMREP_LOG_ERR("invalid argument: %s is NULL", #p); \
		return PMREP_E_INVAL; \
	} \
} while (0)

static inline void
pmrep_peer_ref(struct pmrep_peer *peer)
{
	atomic_fetch_add(&peer->nobjects, 1);
}

static inline void
pmrep_peer_unref(struct pmrep_peer *peer)
{
	atomic_fetch_sub(&peer->nobjects, 1);
}

/* true when [offset, offset + len) lies inside an object of `size` bytes */
static inline bool
pmrep_range_ok(uint64_t size, uint64_t offset, uint64_t len)
{
	return offset <= size && len <= size - offset;
}

/* a receive buffer: RECV usage and inside the MR (INVAL / RANGE, logged) */
int pmrep_check_recv_dst(const struct pmrep_mr_local *dst, size_t offset,
		size_t len);

/* the PMREP_MR_DESC_SIZE-byte descriptor of a region or window (mr.c) */
void pmrep_mr_desc_encode(enum pmrep_provider provider, uint32_t rkey,
		uint64_t raddr, uint64_t size, int usage, void *desc);

/* the flush method a conn gets from its peer's caps and the remote peer cfg */
void pmrep_conn_update_flush_method(struct pmrep_conn *conn);

/* CLOCK_MONOTONIC in milliseconds (common/clock.c; a test may replace it) */
long long pmrep_now_ms(void);

/*
 * Call attempt(arg) until it returns something other than
 * PMREP_E_NO_EVENT, waiting for `fd` to become readable in between, for at
 * most timeout_ms in all (-1: no limit): the loop of every *_wait call
 * built on a non-blocking one. PMREP_E_TIMEOUT when the time runs out.
 */
int pmrep_wait_for(int fd, int timeout_ms, int (*attempt)(void *arg), void *arg);

#endif /* PMREP_TRANSPORT_COMMON_H */
