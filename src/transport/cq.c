/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cq.c -- the generic completion queue: its fd, waiting on its own
 * channel, and taking completions.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>

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

/* the generic wait over several CQs: poll their fds, take what fired */
static int
cq_wait_any_fds(struct pmrep_cq *const *cqs, int n, int timeout_ms)
{
	/* first what fired already (and what the conns hold goes out) */
	bool got = false;
	for (int i = 0; i < n; i++) {
		int ret = cqs[i]->peer->ops->cq_wait(cqs[i], 0);
		if (ret == 0)
			got = true;
		else if (ret != PMREP_E_TIMEOUT)
			return ret;
	}
	if (got)
		return 0;
	long long deadline = timeout_ms < 0 ? -1 : pmrep_now_ms() + timeout_ms;
	struct pollfd p[PMREP_CQ_WAIT_ANY_MAX];
	for (;;) {
		long long left = deadline < 0 ? -1 : deadline - pmrep_now_ms();
		if (deadline >= 0 && left <= 0)
			return PMREP_E_TIMEOUT;
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = cqs[i]->fd, .events = POLLIN };
		int r = poll(p, (nfds_t)n, left > INT_MAX ? INT_MAX : (int)left);
		if (r < 0 && errno != EINTR)
			return PMREP_ERR_PROVIDER(errno, "poll");
		for (int i = 0; r > 0 && i < n; i++) {
			if (!(p[i].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			int ret = cqs[i]->peer->ops->cq_wait(cqs[i], 0);
			if (ret == 0)
				got = true;
			else if (ret != PMREP_E_TIMEOUT)
				return ret;
		}
		if (got)
			return 0;
	}
}

int
pmrep_cq_wait_any(struct pmrep_cq *const *cqs, int n, int timeout_ms)
{
	PMREP_CHECK_ARG(cqs);
	if (n < 1 || n > PMREP_CQ_WAIT_ANY_MAX) {
		PMREP_LOG_ERR("%d CQs: 1 to %d", n, PMREP_CQ_WAIT_ANY_MAX);
		return PMREP_E_INVAL;
	}
	for (int i = 0; i < n; i++) {
		if (cqs[i] == NULL) {
			PMREP_LOG_ERR("CQ %d is NULL", i);
			return PMREP_E_INVAL;
		}
		if (cqs[i]->peer->provider != cqs[0]->peer->provider) {
			PMREP_LOG_ERR("CQ %d is of another provider than CQ 0", i);
			return PMREP_E_INVAL;
		}
		if (cqs[i]->shared_channel) {
			PMREP_LOG_ERR("CQ %d is on a shared completion channel: wait on the conn or the channel",
					i);
			return PMREP_E_SHARED_CHANNEL;
		}
	}
	const struct pmrep_provider_ops *ops = cqs[0]->peer->ops;
	if (ops->cq_wait_any != NULL)
		return ops->cq_wait_any(cqs, n, timeout_ms);
	return cq_wait_any_fds(cqs, n, timeout_ms);
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

const char *
pmrep_wc_status_str(enum pmrep_wc_status status)
{
	switch (status) {
	case PMREP_WC_SUCCESS:
		return "success";
	case PMREP_WC_FLUSHED:
		return "flushed (the conn is in error or disconnected)";
	case PMREP_WC_LOCAL_LENGTH_ERROR:
		return "local length error";
	case PMREP_WC_LOCAL_PROTECTION_ERROR:
		return "local protection error";
	case PMREP_WC_REMOTE_ACCESS_ERROR:
		return "remote access error";
	case PMREP_WC_REMOTE_INVALID_REQUEST:
		return "remote invalid request";
	case PMREP_WC_REMOTE_OPERATION_ERROR:
		return "remote operation error";
	case PMREP_WC_RETRY_EXCEEDED:
		return "transport retry counter exceeded";
	case PMREP_WC_RNR_RETRY_EXCEEDED:
		return "receiver-not-ready retry counter exceeded";
	case PMREP_WC_TIMEOUT:
		return "response timeout";
	case PMREP_WC_GENERAL_ERROR:
		return "general error";
	}
	return "unknown completion status";
}
