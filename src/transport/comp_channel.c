/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comp_channel.c -- a completion channel shared by the CQs of many
 * connections: one fd for a whole set of conns.
 */
#include "common.h"

int
pmrep_comp_channel_new(struct pmrep_peer *peer, struct pmrep_comp_channel **ch_ptr)
{
	PMREP_CHECK_ARG(peer);
	PMREP_CHECK_ARG(ch_ptr);
	int ret = peer->ops->comp_channel_new(peer, ch_ptr);
	if (ret)
		return ret;
	pmrep_peer_ref(peer);
	return 0;
}

int
pmrep_comp_channel_delete(struct pmrep_comp_channel **ch_ptr)
{
	PMREP_CHECK_ARG(ch_ptr);
	struct pmrep_comp_channel *ch = *ch_ptr;
	if (ch == NULL)
		return 0;
	int n = atomic_load(&ch->ncqs);
	if (n != 0) {
		PMREP_LOG_ERR("%d CQ(s) still attached to the completion channel", n);
		return PMREP_E_BUSY;
	}
	struct pmrep_peer *peer = ch->peer;
	int ret = peer->ops->comp_channel_delete(ch);
	if (ret == PMREP_E_BUSY)
		return ret;	/* still valid; *ch_ptr unchanged */
	*ch_ptr = NULL;
	pmrep_peer_unref(peer);
	return ret;
}

int
pmrep_comp_channel_get_fd(const struct pmrep_comp_channel *ch, int *fd)
{
	PMREP_CHECK_ARG(ch);
	PMREP_CHECK_ARG(fd);
	*fd = ch->fd;
	return 0;
}

int
pmrep_comp_channel_wait(struct pmrep_comp_channel *ch, int timeout_ms,
		struct pmrep_cq **cq, struct pmrep_conn **conn)
{
	PMREP_CHECK_ARG(ch);
	PMREP_CHECK_ARG(cq);
	struct pmrep_conn *c = NULL;
	int ret = ch->peer->ops->comp_channel_wait(ch, timeout_ms, cq, &c);
	if (ret == 0 && conn != NULL)
		*conn = c;
	return ret;
}
