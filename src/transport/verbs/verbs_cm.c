/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_cm.c -- taking rdma_cm events: copy what pmrep needs out of the
 * event and acknowledge it at once, so that no event is ever held (an
 * unacknowledged event blocks rdma_destroy_id and rdma_migrate_id). Also
 * the fd flags every fd pmrep hands out carries.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <string.h>

#include "verbs_internal.h"
#include "transport/common.h"

int
verbs_fd_set_flags(int fd, const char *what)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return PMREP_ERR_PROVIDER(errno, what);
	int fdfl = fcntl(fd, F_GETFD);
	if (fdfl < 0 || fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC) < 0)
		return PMREP_ERR_PROVIDER(errno, what);
	return 0;
}

int
verbs_cm_event_take(struct rdma_event_channel *ch, struct verbs_cm_event *ev)
{
	struct rdma_cm_event *e;

	if (rdma_get_cm_event(ch, &e)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return PMREP_E_NO_EVENT;
		return PMREP_ERR_PROVIDER(errno, "rdma_get_cm_event");
	}
	memset(ev, 0, sizeof(*ev));
	ev->type = e->event;
	ev->status = e->status;
	ev->id = e->id;
	/* conn data is defined for CONNECT_REQUEST, ESTABLISHED and REJECTED */
	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
			e->event == RDMA_CM_EVENT_ESTABLISHED ||
			e->event == RDMA_CM_EVENT_REJECTED ||
			e->event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
		const struct rdma_conn_param *p = &e->param.conn;
		ev->flow_control = p->flow_control;
		ev->responder_resources = p->responder_resources;
		ev->initiator_depth = p->initiator_depth;
		ev->retry_count = p->retry_count;
		ev->rnr_retry_count = p->rnr_retry_count;
		if (p->private_data != NULL && p->private_data_len > 0) {
			size_t n = p->private_data_len;
			if (n > sizeof(ev->pdata))
				n = sizeof(ev->pdata);
			memcpy(ev->pdata, p->private_data, n);
			ev->pdata_len = n;
		}
	}
	/* the copy is ours: the event (and its private data) can go now */
	if (rdma_ack_cm_event(e))
		return PMREP_ERR_PROVIDER(errno, "rdma_ack_cm_event");
	return 0;
}

int
verbs_cm_event_wait(struct rdma_event_channel *ch, long long deadline,
		struct verbs_cm_event *ev)
{
	for (;;) {
		int ret = verbs_cm_event_take(ch, ev);
		if (ret != PMREP_E_NO_EVENT)
			return ret;
		long long left = deadline - pmrep_now_ms();
		if (left <= 0)
			return PMREP_E_TIMEOUT;
		ret = pmrep_fd_wait_readable(ch->fd, (int)left);
		if (ret)
			return ret;
	}
}

int
verbs_getaddrinfo(const char *addr, const char *port, bool passive,
		struct addrinfo **ai)
{
	struct addrinfo hints;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	int gai = getaddrinfo(addr, port, &hints, ai);
	switch (gai) {
	case 0:
		return 0;
	case EAI_MEMORY:
		PMREP_LOG_ERR("getaddrinfo(%s, %s): %s", addr, port,
				gai_strerror(gai));
		return PMREP_E_NOMEM;
	case EAI_SYSTEM:
		return PMREP_ERR_PROVIDER(errno, "getaddrinfo");
	default:
		PMREP_LOG_ERR("getaddrinfo(%s, %s): %s", addr, port,
				gai_strerror(gai));
		return PMREP_E_INVAL;
	}
}
