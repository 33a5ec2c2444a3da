/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_util.h -- what the verbs provider's unit tests share: a peer on
 * the mocked device, active and passive connections brought to ESTABLISHED
 * through scripted rdma_cm events, pmrep's private-data framing, and a log
 * sink that keeps the last error line.
 */
#ifndef TEST_VERBS_UTIL_H
#define TEST_VERBS_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <poll.h>

#include <pmrep/transport.h>
#include <pmrep/verbs.h>
#include "mocks.h"
#include "transport/provider.h"
#include "transport/verbs/verbs_internal.h"

/* tests/unit/mocks/mock_verbs_extra.c: the libc fd calls, failable */
void mock_extra_fail(const char *fn, unsigned nth, int err);
void mock_extra_clear(void);

#define TV_ADDR "192.0.2.2"
#define TV_PORT "7204"
#define TV_LISTEN "192.0.2.1"

/* ------------------------------------------------------------ logging */

static char tv_log_buf[4096];

static void
tv_log_sink(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg)
{
	(void) file;
	(void) line;
	(void) func;
	(void) arg;
	if (level <= PMREP_LOG_WARNING) {
		size_t n = strlen(tv_log_buf);
		snprintf(tv_log_buf + n, sizeof(tv_log_buf) - n, "%s\n", msg);
	}
}

static inline void
tv_log_capture(void)
{
	tv_log_buf[0] = '\0';
	pmrep_log_set_function(tv_log_sink, NULL);
	pmrep_log_set_threshold(PMREP_LOG_WARNING);
}

static inline bool
tv_logged(const char *what)
{
	return strstr(tv_log_buf, what) != NULL;
}

/* -------------------------------------------------------------- fixtures */

static inline int
tv_setup(void **state)
{
	mock_extra_clear();
	tv_log_capture();
	return mock_test_setup(state);
}

static inline int
tv_teardown(void **state)
{
	pmrep_log_set_function(NULL, NULL);
	return mock_test_teardown(state);
}

static inline struct pmrep_peer *
tv_peer(void)
{
	struct pmrep_peer *peer = NULL;
	assert_int_equal(pmrep_peer_new(mock_cm_context(), &peer), 0);
	return peer;
}

static inline struct verbs_conn *
tv_vconn(struct pmrep_conn *conn)
{
	return (struct verbs_conn *)conn;
}

static inline struct verbs_conn *
tv_vreq(struct pmrep_conn_req *req)
{
	return ((struct verbs_conn_req *)req)->conn;
}

/* pmrep's framing of private data shorter than the message area */
static inline uint8_t
tv_frame(uint8_t *out, const void *data, uint8_t len)
{
	out[0] = len;
	if (len)
		memcpy(out + 1, data, len);
	return (uint8_t)(len + 1);
}

static inline struct pmrep_conn_cfg *
tv_cfg(void)
{
	struct pmrep_conn_cfg *cfg = NULL;
	assert_int_equal(pmrep_conn_cfg_new(&cfg), 0);
	return cfg;
}

/* an active request (address and route resolved, QP made) */
static inline struct pmrep_conn_req *
tv_req(struct pmrep_peer *peer, const struct pmrep_conn_cfg *cfg)
{
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(peer, TV_ADDR, TV_PORT, cfg, &req),
			0);
	return req;
}

/* connect and get ESTABLISHED with `pdata` (framed) from the acceptor */
static inline struct pmrep_conn *
tv_active(struct pmrep_peer *peer, const struct pmrep_conn_cfg *cfg,
		const void *accept_pdata, uint8_t len)
{
	struct pmrep_conn_req *req = tv_req(peer, cfg);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	uint8_t f[PMREP_PDATA_ACCEPT_MAX];
	uint8_t flen = tv_frame(f, accept_pdata, len);
	mock_cm_queue_event(tv_vconn(conn)->id, RDMA_CM_EVENT_ESTABLISHED, 0,
			f, flen);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	return conn;
}

static inline struct pmrep_ep *
tv_listen(struct pmrep_peer *peer)
{
	struct pmrep_ep *ep = NULL;
	assert_int_equal(pmrep_ep_listen(peer, TV_LISTEN, "0", &ep), 0);
	return ep;
}

static inline struct rdma_cm_id *
tv_ep_id(struct pmrep_ep *ep)
{
	/* struct verbs_ep: the generic ep, the channel, the id */
	struct {
		struct pmrep_ep base;
		struct rdma_event_channel *evch;
		struct rdma_cm_id *id;
	} *v = (void *)ep;
	return v->id;
}

/* an initiator sends a request with `pdata` (framed) */
static inline struct pmrep_conn_req *
tv_passive_req(struct pmrep_ep *ep, const struct pmrep_conn_cfg *cfg,
		const void *pdata, uint8_t len)
{
	uint8_t f[PMREP_PDATA_CONNECT_MAX];
	uint8_t flen = tv_frame(f, pdata, len);
	mock_cm_queue_conn_request(tv_ep_id(ep), f, flen);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_ep_next_conn_req(ep, cfg, &req), 0);
	return req;
}

/* accept and get ESTABLISHED */
static inline struct pmrep_conn *
tv_passive(struct pmrep_ep *ep, const struct pmrep_conn_cfg *cfg)
{
	struct pmrep_conn_req *req = tv_passive_req(ep, cfg, NULL, 0);
	struct pmrep_conn *conn = NULL;
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &conn), 0);
	mock_cm_queue_event(tv_vconn(conn)->id, RDMA_CM_EVENT_ESTABLISHED, 0,
			NULL, 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_next_event(conn, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	return conn;
}

static inline bool
tv_readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, timeout_ms) == 1;
}

/* a registered region of `size` bytes (malloc'ed, freed by tv_mr_free) */
static inline struct pmrep_mr_local *
tv_mr(struct pmrep_peer *peer, size_t size, int usage)
{
	void *p = malloc(size);
	assert_non_null(p);
	memset(p, 0, size);
	struct pmrep_mr_local *mr = NULL;
	assert_int_equal(pmrep_mr_reg(peer, p, size, usage, &mr), 0);
	return mr;
}

static inline void
tv_mr_free(struct pmrep_mr_local *mr)
{
	void *p = mr->ptr;
	assert_int_equal(pmrep_mr_dereg(&mr), 0);
	free(p);
}

/* the remote region a peer describes with `mr`'s descriptor */
static inline struct pmrep_mr_remote *
tv_remote(const struct pmrep_mr_local *mr)
{
	uint8_t d[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mr_get_descriptor(mr, d), 0);
	struct pmrep_mr_remote *r = NULL;
	assert_int_equal(pmrep_mr_remote_from_descriptor(d, sizeof(d), &r), 0);
	return r;
}

/* apply a remote peer cfg that does (not) declare direct write to pmem:
 * with it, a PERSISTENT flush is APM (a read after the writes) */
static inline void
tv_set_direct_write(struct pmrep_conn *conn, bool on)
{
	struct pmrep_peer_cfg *pc;
	assert_int_equal(pmrep_peer_cfg_new(&pc), 0);
	assert_int_equal(pmrep_peer_cfg_set_direct_write_to_pmem(pc, on), 0);
	assert_int_equal(pmrep_conn_apply_remote_peer_cfg(conn, pc), 0);
	assert_int_equal(pmrep_peer_cfg_delete(&pc), 0);
}

/* the posting tests' fixture: an active conn, a local region and a
 * "remote" one (registered here, described by its own descriptor) */
struct tv_post_fx {
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;
	struct pmrep_mr_local *local;
	struct pmrep_mr_local *target;	/* stands for the remote region */
	struct pmrep_mr_remote *remote;
	struct verbs_conn *vc;
};

static inline void
tv_post_fx_open(struct tv_post_fx *f, const struct pmrep_conn_cfg *cfg)
{
	f->peer = tv_peer();
	f->conn = tv_active(f->peer, cfg, NULL, 0);
	f->local = tv_mr(f->peer, 8192, PMREP_MR_USAGE_ALL);
	f->target = tv_mr(f->peer, 8192, PMREP_MR_USAGE_ALL);
	f->remote = tv_remote(f->target);
	f->vc = tv_vconn(f->conn);
	mock_wr_log_clear();
}

static inline void
tv_post_fx_close(struct tv_post_fx *f)
{
	assert_int_equal(pmrep_conn_delete(&f->conn), 0);
	assert_int_equal(pmrep_mr_remote_delete(&f->remote), 0);
	tv_mr_free(f->local);
	tv_mr_free(f->target);
	assert_int_equal(pmrep_peer_delete(&f->peer), 0);
}

#endif /* TEST_VERBS_UTIL_H */
