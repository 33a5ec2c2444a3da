/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cq.c -- the generic completion queue: its fd, waiting on its own
 * channel, and taking completions.
 */
#include "common.h"

int
pmrep_cq_get_fd(const struct pmrep_cq *cq, int *fd)
{
	PMREP_CHECK_ARG(cq);
	PMREP_CHECK_ARG(fd);
	if (cq->shared_channel) {
		PMREP_LOG_ERR("the CQ's completion channel is shared: use the conn's or the channel's fd");
		return PMREP_E_SHARED_CHANNEL;
	}
	*fd = cq->fd;
	return 0;
}

int
pmrep_cq_wait(struct pmrep_cq *cq, int timeout_ms)
{
	PMREP_CHECK_ARG(cq);
	if (cq->shared_channel) {
		PMREP_LOG_ERR("the CQ's completion channel is shared: wait on the conn or the channel");
		return PMREP_E_SHARED_CHANNEL;
	}
	return cq->peer->ops->cq_wait(cq, timeout_ms);
}

int
pmrep_cq_get_completions(struct pmrep_cq *cq, struct pmrep_completion *out,
		int max, int *n)
{
	PMREP_CHECK_ARG(cq);
	PMREP_CHECK_ARG(out);
	PMREP_CHECK_ARG(n);
	*n = 0;
	if (max < 1) {
		PMREP_LOG_ERR("max must be >= 1, got %d", max);
		return PMREP_E_INVAL;
	}
	return cq->peer->ops->cq_get_completions(cq, out, max, n);
}
