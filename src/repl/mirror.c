/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror.c -- the initiator: a local pmem mapping mirrored to replica
 * targets. Per replica: a connection, the handshake, a flush method
 * (native, APM or GPSPM), an out-of-sync bitmap, resync. The persist
 * path posts to every in-sync replica, persists locally meanwhile, and
 * succeeds only on the confirmations the policy requires (T20: an error
 * or a timeout is never a success).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <pmrep/transport.h>

#include "common/log.h"
#include "bitmap.h"
#include "chan.h"
#include "replica_hdr.h"

#define RESYNC_CHUNK (4u << 20)	/* bytes per resync step */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define POLL_SLICE_MS 100	/* re-check the CQs at least this often */
#define ASYNC_MAX 65536		/* asynchronous requests outstanding at most */

/* an asynchronous persist request */
struct async_req {
	struct async_req *next;
	uint64_t off, len;
	void *ctx;
	int result;
};

struct req_list {
	struct async_req *head, *tail;
	size_t n;
};

struct mirror_replica_cfg {
	char *addr;
	char *port;
};

struct pmrep_mirror_cfg {
	struct mirror_replica_cfg r[PMREP_MIRROR_MAX_REPLICAS];
	unsigned n;
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len;
	uint8_t uuid[PMREP_UUID_SIZE];
	uint64_t generation;
	unsigned quorum;
	uint64_t region_size;
	int timeout_ms;
	bool force_gpspm;
};

struct replica {
	struct pmrep_mirror *m;
	unsigned idx;
	char *addr, *port;
	struct pmrep_peer *peer;
	struct pmrep_mr_local *src;	/* the local mapping, on this peer */
	struct pmrep_conn *conn;	/* NULL: not connected */
	struct pmrep_mr_remote *rmr;
	struct repl_chan ch;
	bool chan_ready;
	enum pmrep_replica_state state;
	enum pmrep_mirror_method method;
	struct repl_bitmap oos;
	int last_error;
	char why[256];			/* the last attach failure's message */
	uint64_t resyncs, resync_bytes;
	long long next_try;		/* ms; reconnect not before */
	int backoff_ms;
	/* the one persist step in flight */
	bool pending;
	uint64_t seq;
	uint64_t p_off, p_len;
};

struct pmrep_mirror {
	struct pmrep_pmem *pmem;
	uint8_t *base;
	size_t size;
	pmrep_pmem_persist_fn *persist;
	struct pmrep_mirror_cfg cfg;	/* copy; replica strings owned by r[] */
	uint64_t session_id;
	uint64_t next_seq;
	unsigned n;
	struct replica r[PMREP_MIRROR_MAX_REPLICAS];
	/* asynchronous persists: one epoll fd (pmrep_mirror_get_fd) over
	 * every connected replica's CQ and event fds, an eventfd readable
	 * while completions wait to be polled, and a timerfd for the
	 * deadline of the batch in flight */
	int epfd, efd, tfd;
	struct req_list queue;		/* submitted, not posted yet */
	struct req_list batch;		/* posted together: [b_off, b_off + b_len) */
	struct req_list done;		/* completed, not polled yet */
	bool batch_active;
	uint64_t b_off, b_len;
	long long b_deadline;
};

/* --------------------------------------------------------------- names */

const char *
pmrep_mirror_method_str(enum pmrep_mirror_method method)
{
	switch (method) {
	case PMREP_MIRROR_METHOD_NONE: return "none";
	case PMREP_MIRROR_METHOD_NATIVE: return "native";
	case PMREP_MIRROR_METHOD_APM: return "APM";
	case PMREP_MIRROR_METHOD_GPSPM: return "GPSPM";
	default: return "unknown";
	}
}

const char *
pmrep_replica_state_str(enum pmrep_replica_state state)
{
	switch (state) {
	case PMREP_REPLICA_CONNECTED: return "connected";
	case PMREP_REPLICA_SYNCING: return "syncing";
	case PMREP_REPLICA_IN_SYNC: return "in sync";
	case PMREP_REPLICA_DEGRADED: return "degraded";
	case PMREP_REPLICA_FAILED: return "failed";
	default: return "unknown";
	}
}

/* ----------------------------------------------------------------- cfg */

#define CHECK_ARG(p) do { \
	if ((p) == NULL) { \
		PMREP_LOG_ERR("invalid argument: %s is NULL", #p); \
		return PMREP_E_INVAL; \
	} \
} while (0)

int
pmrep_mirror_cfg_new(struct pmrep_mirror_cfg **cfg_ptr)
{
	CHECK_ARG(cfg_ptr);
	struct pmrep_mirror_cfg *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		PMREP_LOG_ERR("out of memory for a mirror configuration");
		return PMREP_E_NOMEM;
	}
	cfg->generation = 1;
	cfg->region_size = 64 << 10;
	cfg->timeout_ms = 5000;
	*cfg_ptr = cfg;
	return 0;
}

int
pmrep_mirror_cfg_delete(struct pmrep_mirror_cfg **cfg_ptr)
{
	CHECK_ARG(cfg_ptr);
	struct pmrep_mirror_cfg *cfg = *cfg_ptr;
	if (cfg == NULL)
		return 0;
	for (unsigned i = 0; i < cfg->n; i++) {
		free(cfg->r[i].addr);
		free(cfg->r[i].port);
	}
	repl_wipe(cfg->key, sizeof(cfg->key));
	free(cfg);
	*cfg_ptr = NULL;
	return 0;
}

int
pmrep_mirror_cfg_add_replica(struct pmrep_mirror_cfg *cfg, const char *addr,
		const char *port)
{
	CHECK_ARG(cfg);
	CHECK_ARG(addr);
	CHECK_ARG(port);
	if (addr[0] == '\0') {
		PMREP_LOG_ERR("invalid argument: the replica address is empty");
		return PMREP_E_INVAL;
	}
	int ret = repl_port_check(port, false);
	if (ret)
		return ret;
	if (cfg->n == PMREP_MIRROR_MAX_REPLICAS) {
		PMREP_LOG_ERR("at most %d replicas per mirror",
				PMREP_MIRROR_MAX_REPLICAS);
		return PMREP_E_INVAL;
	}
	/* a target serves one initiator at a time: the same one twice would
	 * take the replica from itself on every (re)connect */
	for (unsigned i = 0; i < cfg->n; i++) {
		if (strcmp(cfg->r[i].addr, addr) == 0 &&
				strcmp(cfg->r[i].port, port) == 0) {
			PMREP_LOG_ERR("replica %s:%s is already replica %u of this mirror",
					addr, port, i);
			return PMREP_E_INVAL;
		}
	}
	char *a = strdup(addr), *p = strdup(port);
	if (a == NULL || p == NULL) {
		free(a);
		free(p);
		PMREP_LOG_ERR("out of memory for a replica address");
		return PMREP_E_NOMEM;
	}
	cfg->r[cfg->n].addr = a;
	cfg->r[cfg->n].port = p;
	cfg->n++;
	return 0;
}

int
pmrep_mirror_cfg_set_key(struct pmrep_mirror_cfg *cfg, const uint8_t *key,
		size_t len)
{
	CHECK_ARG(cfg);
	int ret = repl_key_check(key, len);
	if (ret)
		return ret;
	memcpy(cfg->key, key, len);
	cfg->key_len = len;
	return 0;
}

int
pmrep_mirror_cfg_set_uuid(struct pmrep_mirror_cfg *cfg,
		const uint8_t uuid[PMREP_UUID_SIZE])
{
	CHECK_ARG(cfg);
	CHECK_ARG(uuid);
	if (replica_uuid_is_nil(uuid)) {
		PMREP_LOG_ERR("the replica-set UUID must not be all zero");
		return PMREP_E_INVAL;
	}
	memcpy(cfg->uuid, uuid, PMREP_UUID_SIZE);
	return 0;
}

int
pmrep_mirror_cfg_set_generation(struct pmrep_mirror_cfg *cfg,
		uint64_t generation)
{
	CHECK_ARG(cfg);
	if (generation == 0) {
		PMREP_LOG_ERR("the generation must be >= 1");
		return PMREP_E_INVAL;
	}
	cfg->generation = generation;
	return 0;
}

int
pmrep_mirror_cfg_set_quorum(struct pmrep_mirror_cfg *cfg, unsigned k)
{
	CHECK_ARG(cfg);
	if (k > PMREP_MIRROR_MAX_REPLICAS) {
		PMREP_LOG_ERR("quorum %u above the %d replicas a mirror can have",
				k, PMREP_MIRROR_MAX_REPLICAS);
		return PMREP_E_INVAL;
	}
	cfg->quorum = k;
	return 0;
}

int
pmrep_mirror_cfg_set_region_size(struct pmrep_mirror_cfg *cfg,
		uint64_t region_size)
{
	CHECK_ARG(cfg);
	if (region_size < 4096 || region_size > (1ull << 30) ||
			(region_size & (region_size - 1)) != 0) {
		PMREP_LOG_ERR("region size %llu: must be a power of two, 4 KiB .. 1 GiB",
				(unsigned long long)region_size);
		return PMREP_E_INVAL;
	}
	cfg->region_size = region_size;
	return 0;
}

int
pmrep_mirror_cfg_set_timeout(struct pmrep_mirror_cfg *cfg, int timeout_ms)
{
	CHECK_ARG(cfg);
	if (timeout_ms <= 0) {
		PMREP_LOG_ERR("timeout must be > 0 ms, got %d", timeout_ms);
		return PMREP_E_INVAL;
	}
	cfg->timeout_ms = timeout_ms;
	return 0;
}

int
pmrep_mirror_cfg_set_force_gpspm(struct pmrep_mirror_cfg *cfg, bool force)
{
	CHECK_ARG(cfg);
	cfg->force_gpspm = force;
	return 0;
}

/* -------------------------------------------------- replica connection */

/* add the replica's CQ and event fds to the mirror's epoll fd, or remove
 * them (before the conn that owns them is deleted) */
static void
epoll_update(struct replica *r, int op)
{
	int fds[2];
	if (r->m->epfd < 0 || r->conn == NULL ||
			repl_chan_fds(&r->ch, &fds[0], &fds[1]) != 0)
		return;
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = r };
		if (epoll_ctl(r->m->epfd, op, fds[i], &ev) != 0 &&
				op == EPOLL_CTL_ADD)
			PMREP_LOG_WARN("replica %u: epoll_ctl: %s", r->idx,
					strerror(errno));
	}
}

/* tear the connection down; the bitmap is kept */
static void
replica_disconnect(struct replica *r)
{
	if (r->conn) {
		epoll_update(r, EPOLL_CTL_DEL);
		(void) pmrep_conn_disconnect(r->conn);
		(void) pmrep_conn_delete(&r->conn);
	}
	repl_chan_detach(&r->ch);
	(void) pmrep_mr_remote_delete(&r->rmr);
	r->pending = false;
	r->method = PMREP_MIRROR_METHOD_NONE;
}

/* the replica is lost: [off, off + len) and all it misses from now on
 * are out of sync */
static void
replica_fail(struct replica *r, int err, uint64_t off, uint64_t len)
{
	repl_bitmap_mark(&r->oos, off, len);
	if (r->state != PMREP_REPLICA_FAILED)
		PMREP_LOG_ERR("replica %u (%s:%s) failed: %s; %llu bytes out of sync",
				r->idx, r->addr, r->port, pmrep_err_to_str(err),
				(unsigned long long)repl_bitmap_dirty_bytes(&r->oos));
	r->last_error = err;
	r->state = PMREP_REPLICA_FAILED;
	replica_disconnect(r);
	r->backoff_ms = r->backoff_ms == 0 ? BACKOFF_MIN_MS :
		(r->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : r->backoff_ms * 2);
	r->next_try = repl_now_ms() + r->backoff_ms;
}

/* wait for one message on the replica's channel until `deadline` */
static int
wait_msg(struct replica *r, long long deadline, struct repl_msg *msg)
{
	for (;;) {
		enum repl_chan_ev ev;
		int ret = repl_chan_next(&r->ch, &ev, msg);
		if (ret)
			return ret;
		if (ev == REPL_CHAN_MSG)
			return 0;
		ret = repl_chan_check_conn(&r->ch);
		if (ret)
			return ret;
		int left = repl_left_ms(deadline);
		if (left == 0)
			return PMREP_E_TIMEOUT;
		int cq_fd, ev_fd;
		ret = repl_chan_fds(&r->ch, &cq_fd, &ev_fd);
		if (ret)
			return ret;
		struct pollfd p[2] = { { cq_fd, POLLIN, 0 }, { ev_fd, POLLIN, 0 } };
		if (left < 0 || left > POLL_SLICE_MS)
			left = POLL_SLICE_MS;
		if (poll(p, 2, left) > 0 && (p[0].revents & POLLIN))
			repl_chan_ack_cq(&r->ch);
	}
}

static enum pmrep_mirror_method
choose_method(struct replica *r, uint32_t target_flags)
{
	if (r->m->cfg.force_gpspm || (target_flags & REPL_TF_STAGING))
		return PMREP_MIRROR_METHOD_GPSPM;
	int ft = 0;
	(void) pmrep_mr_remote_get_flush_type(r->rmr, &ft);
	if (!(ft & PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT))
		return PMREP_MIRROR_METHOD_GPSPM;
	enum pmrep_flush_method fm = PMREP_FLUSH_METHOD_NONE;
	(void) pmrep_conn_get_flush_method(r->conn, &fm);
	if (fm == PMREP_FLUSH_METHOD_NATIVE)
		return PMREP_MIRROR_METHOD_NATIVE;
	if (fm == PMREP_FLUSH_METHOD_APM)
		return PMREP_MIRROR_METHOD_APM;
	return PMREP_MIRROR_METHOD_GPSPM;
}

/* remember why attaching failed: the thread's last error message (this
 * replica's, when its attach began with pmrep_err_clear), else the code */
static void
note_why(struct replica *r, int err)
{
	const char *msg = pmrep_err_msg();
	snprintf(r->why, sizeof(r->why), "%s",
			msg[0] ? msg : pmrep_err_to_str(err));
}

/* connect, authenticate both ways, check the header; on success the
 * replica is CONNECTED and its bitmap holds what must be resynced */
static int
replica_connect(struct replica *r, long long deadline)
{
	struct pmrep_mirror *m = r->m;
	struct pmrep_peer_cfg *pcfg = NULL;
	int ret;

	r->why[0] = '\0';

	if (r->peer == NULL) {
		ret = pmrep_peer_open(r->addr, false, &r->peer);
		if (ret)
			return ret;
	}
	if (r->src == NULL) {
		/* the device only reads it: a read-only registration, which
		 * a page-cache file allows (a writable pin of one is refused
		 * from Linux 6.5 on: T11) */
		ret = pmrep_mr_reg(r->peer, m->base, m->size,
				PMREP_MR_USAGE_WRITE_SRC, &r->src);
		if (ret) {
			PMREP_LOG_ERR("cannot register the local mapping for replica %u: %s",
					r->idx, pmrep_err_to_str(ret));
			return ret;
		}
	}
	if (!r->chan_ready) {
		ret = repl_chan_init(&r->ch, r->peer);
		if (ret)
			return ret;
		r->chan_ready = true;
	}
	char who[32];
	snprintf(who, sizeof(who), "replica %u", r->idx);
	uint8_t nonce_i[REPL_NONCE_SIZE], nonce_t[REPL_NONCE_SIZE];
	ret = repl_chan_dial(&r->ch, r->peer, r->addr, r->port, deadline, 64,
			128, who, &r->conn, nonce_i, nonce_t);
	if (r->conn != NULL)
		epoll_update(r, EPOLL_CTL_ADD);
	if (ret) {
		if (r->conn != NULL)
			goto fail;
		goto out;
	}

	struct repl_msg msg = { .type = REPL_MSG_AUTH, .seq = m->next_seq++ };
	memcpy(msg.u.auth.uuid, m->cfg.uuid, PMREP_UUID_SIZE);
	msg.u.auth.data_size = m->size;
	msg.u.auth.generation = m->cfg.generation;
	msg.u.auth.session_id = m->session_id;
	ret = repl_auth_mac(m->cfg.key, m->cfg.key_len, nonce_i, nonce_t,
			&msg.u.auth, msg.u.auth.mac);
	if (ret)
		goto fail;
	ret = repl_chan_send(&r->ch, &msg);
	if (ret)
		goto fail;
	struct repl_msg reply;
	ret = wait_msg(r, deadline, &reply);
	if (ret)
		goto fail;
	if (reply.type == REPL_MSG_REFUSE) {
		ret = repl_status_to_err(reply.status);
		/* the REFUSE carries no sizes: ours, and where the replica's
		 * is (its target logs both) */
		if (reply.status == REPL_ST_SIZE)
			PMREP_LOG_ERR("replica %u (%s:%s) refused us: %s: this mirror's mapping is %zu bytes (a replica file of %zu), the replica's data size is another (its target's log has it; `pmrep status REPLICA` on its host)",
					r->idx, r->addr, r->port,
					repl_status_str(reply.status), m->size,
					m->size + (size_t)PMREP_REPLICA_DATA_OFFSET);
		else
			PMREP_LOG_ERR("replica %u (%s:%s) refused us: %s", r->idx,
					r->addr, r->port,
					repl_status_str(reply.status));
		goto fail;
	}
	if (reply.type != REPL_MSG_ACCEPT) {
		PMREP_LOG_ERR("replica %u: expected ACCEPT, got message type %d",
				r->idx, (int)reply.type);
		ret = PMREP_E_MALFORMED;
		goto fail;
	}
	const struct repl_accept *acc = &reply.u.accept;
	uint8_t mac[REPL_MAC_SIZE];
	ret = repl_accept_mac(m->cfg.key, m->cfg.key_len, nonce_i, nonce_t,
			acc, mac);
	if (ret)
		goto fail;
	if (!repl_mac_equal(mac, acc->mac)) {
		PMREP_LOG_ERR("replica %u (%s:%s) failed to prove it holds the key",
				r->idx, r->addr, r->port);
		ret = PMREP_E_AUTH;
		goto fail;
	}
	ret = pmrep_mr_remote_from_descriptor(acc->mr_desc, PMREP_MR_DESC_SIZE,
			&r->rmr);
	if (ret)
		goto fail;
	size_t rsize = 0;
	(void) pmrep_mr_remote_get_size(r->rmr, &rsize);
	if (rsize != m->size) {
		PMREP_LOG_ERR("replica %u offers %zu bytes, the mapping has %zu",
				r->idx, rsize, m->size);
		ret = PMREP_E_RANGE;
		goto fail;
	}
	ret = pmrep_peer_cfg_from_descriptor(acc->peer_cfg,
			PMREP_PEER_CFG_DESC_SIZE, &pcfg);
	if (ret)
		goto fail;
	(void) pmrep_conn_apply_remote_peer_cfg(r->conn, pcfg);
	r->method = choose_method(r, acc->target_flags);

	/* what the replica holds decides what to copy */
	bool same_gen = acc->prev_generation == m->cfg.generation;
	bool ours = acc->prev_attach_id == m->session_id;
	bool consistent = (acc->prev_flags & PMREP_REPLICA_F_CONSISTENT) != 0;
	const char *sync;
	if (!(acc->target_flags & REPL_TF_FRESH) && same_gen && (ours || consistent)) {
		/* our bitmap holds every change it has not confirmed: since
		 * it was lost (ours), or since this mirror began (consistent) */
		sync = "incremental";
	} else {
		repl_bitmap_mark_all(&r->oos);
		sync = acc->target_flags & REPL_TF_FRESH ? "full (fresh replica)" :
			"full";
	}
	r->state = PMREP_REPLICA_CONNECTED;
	PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s) attached: method %s, resync %s of %llu bytes",
			r->idx, r->addr, r->port, pmrep_mirror_method_str(r->method),
			sync, (unsigned long long)repl_bitmap_dirty_bytes(&r->oos));
	ret = 0;
	goto out;
fail:
	note_why(r, ret);	/* before the teardown may log over it */
	replica_disconnect(r);
out:
	if (ret && r->why[0] == '\0')
		note_why(r, ret);
	(void) pmrep_peer_cfg_delete(&pcfg);
	return ret;
}

/* ------------------------------------------------------ the persist step */

/* bytes per write request: verbs takes at most 4 GiB - 1 in one */
#define POST_CHUNK (1ull << 30)

/*
 * post the write of [off, off + len) and its persist step: the write (in
 * chunks of at most POST_CHUNK) is flagged PMREP_F_MORE, so that verbs
 * posts it with the flush / the persist message behind one doorbell
 */
static int
post_range(struct replica *r, uint64_t off, uint64_t len)
{
	int ret;
	for (uint64_t done = 0; done < len;) {
		uint64_t n = len - done < POST_CHUNK ? len - done : POST_CHUNK;
		ret = pmrep_write(r->conn, r->rmr, (size_t)(off + done), r->src,
				(size_t)(off + done), (size_t)n,
				PMREP_F_COMPLETION_ON_ERROR | PMREP_F_MORE,
				(void *)CTX_WRITE);
		if (ret)
			return ret;
		done += n;
	}
	r->seq = r->m->next_seq++;
	if (r->method == PMREP_MIRROR_METHOD_GPSPM) {
		struct repl_msg m = { .type = REPL_MSG_PERSIST, .seq = r->seq,
			.u.persist = { .offset = off, .length = len } };
		ret = repl_chan_send(&r->ch, &m);
	} else {
		ret = pmrep_flush(r->conn, r->rmr, (size_t)off, (size_t)len,
				PMREP_FLUSH_TYPE_PERSISTENT,
				PMREP_F_COMPLETION_ALWAYS, (void *)CTX_FLUSH);
	}
	if (ret)
		return ret;
	r->pending = true;
	r->p_off = off;
	r->p_len = len;
	return 0;
}

/*
 * take the replica's completions: clears r->pending on confirmation;
 * returns an error when the replica must be failed
 */
static int
progress(struct replica *r)
{
	for (;;) {
		enum repl_chan_ev ev;
		struct repl_msg msg;
		int ret = repl_chan_next(&r->ch, &ev, &msg);
		if (ret)
			return ret;
		if (ev == REPL_CHAN_NONE)
			break;
		if (ev == REPL_CHAN_FLUSH && r->pending &&
				r->method != PMREP_MIRROR_METHOD_GPSPM) {
			r->pending = false;
			continue;
		}
		if (ev == REPL_CHAN_MSG && msg.type == REPL_MSG_PERSIST_REPLY &&
				r->pending && msg.seq == r->seq) {
			if (msg.status != REPL_ST_OK) {
				PMREP_LOG_ERR("replica %u: persist request refused: %s",
						r->idx, repl_status_str(msg.status));
				return repl_status_to_err(msg.status);
			}
			r->pending = false;
			continue;
		}
		PMREP_LOG_ERR("replica %u: unexpected %s (type %d, seq %llu)",
				r->idx, ev == REPL_CHAN_MSG ? "message" : "flush completion",
				ev == REPL_CHAN_MSG ? (int)msg.type : 0,
				(unsigned long long)msg.seq);
		return PMREP_E_MALFORMED;
	}
	return repl_chan_check_conn_lazy(&r->ch);
}

/*
 * wait until no replica in `set` is pending or `deadline` passes. A
 * replica that errs is failed (its range marked). Replicas still pending
 * at the deadline are failed with PMREP_E_TIMEOUT.
 */
static void
wait_pending(struct pmrep_mirror *m, long long deadline)
{
	for (;;) {
		struct pmrep_cq *cqs[PMREP_MIRROR_MAX_REPLICAS];
		struct replica *who[PMREP_MIRROR_MAX_REPLICAS];
		int nw = 0;
		for (unsigned i = 0; i < m->n; i++) {
			struct replica *r = &m->r[i];
			if (!r->pending)
				continue;
			int ret = progress(r);
			if (ret) {
				replica_fail(r, ret, r->p_off, r->p_len);
				continue;
			}
			if (!r->pending)
				continue;
			cqs[nw] = repl_chan_cq(&r->ch);
			who[nw++] = r;
		}
		if (nw == 0)
			return;
		int left = repl_left_ms(deadline);
		if (left == 0) {
			for (unsigned i = 0; i < m->n; i++)
				if (m->r[i].pending)
					replica_fail(&m->r[i], PMREP_E_TIMEOUT,
							m->r[i].p_off, m->r[i].p_len);
			return;
		}
		if (left < 0 || left > POLL_SLICE_MS)
			left = POLL_SLICE_MS;
		/* the transport's wait over the pending replicas' CQs: on tcp
		 * the answers are taken in this thread, no hand-off; conn
		 * events are read by progress() when due (a conn that ends
		 * also fails its pending request on the CQ) */
		int ret = pmrep_cq_wait_any(cqs, nw, left);
		if (ret == PMREP_E_TIMEOUT) {
			for (int i = 0; i < nw; i++)
				repl_chan_conn_due(&who[i]->ch);
		} else if (ret) {
			/* whose? each CQ alone says (a held post that failed) */
			for (int i = 0; i < nw; i++) {
				int r2 = repl_chan_wait_cq(&who[i]->ch, 0);
				if (r2 && r2 != PMREP_E_TIMEOUT)
					replica_fail(who[i], r2, who[i]->p_off,
							who[i]->p_len);
				else
					repl_chan_conn_due(&who[i]->ch);
			}
		}
	}
}

/*
 * copy the replica's out-of-sync regions until none is left. Each step is
 * bounded by the cfg timeout; when `deadline` passes with regions left the
 * replica stays connected but DEGRADED (pmrep_mirror_reconnect resumes).
 */
static int
replica_resync(struct replica *r, long long deadline)
{
	r->state = PMREP_REPLICA_SYNCING;
	uint64_t copied = 0;
	size_t max = (size_t)(RESYNC_CHUNK / r->oos.region_size);
	if (max == 0)
		max = 1;
	size_t first, n, from = 0;
	while (repl_bitmap_next_run(&r->oos, from, max, &first, &n)) {
		if (repl_left_ms(deadline) == 0) {
			r->state = PMREP_REPLICA_DEGRADED;
			r->last_error = PMREP_E_TIMEOUT;
			r->resync_bytes += copied;
			PMREP_LOG_WARN("replica %u: resync paused, %llu bytes still out of sync",
					r->idx, (unsigned long long)repl_bitmap_dirty_bytes(&r->oos));
			return PMREP_E_TIMEOUT;
		}
		uint64_t off, len;
		repl_bitmap_range(&r->oos, first, n, &off, &len);
		int ret = post_range(r, off, len);
		if (ret) {
			replica_fail(r, ret, off, len);
			return ret;
		}
		long long step = repl_deadline(r->m->cfg.timeout_ms);
		if (deadline >= 0 && deadline < step)
			step = deadline;
		wait_pending(r->m, step);	/* only this replica is pending */
		if (r->state == PMREP_REPLICA_FAILED)
			return r->last_error;
		repl_bitmap_clear_regions(&r->oos, first, n);
		copied += len;
		from = first + n;
	}
	r->state = PMREP_REPLICA_IN_SYNC;
	r->resyncs++;
	r->resync_bytes += copied;
	r->backoff_ms = 0;
	r->last_error = 0;
	PMREP_LOG(PMREP_LOG_NOTICE, "replica %u (%s:%s) in sync: %llu bytes copied",
			r->idx, r->addr, r->port, (unsigned long long)copied);
	return 0;
}

/* connect (bounded by `connect_deadline`), then resync (by `deadline`) */
static int
replica_attach(struct replica *r, long long connect_deadline, long long deadline)
{
	int ret = replica_connect(r, connect_deadline);
	if (ret) {
		r->last_error = ret;
		r->state = PMREP_REPLICA_FAILED;
		r->backoff_ms = r->backoff_ms == 0 ? BACKOFF_MIN_MS :
			(r->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
			 r->backoff_ms * 2);
		r->next_try = repl_now_ms() + r->backoff_ms;
		return ret;
	}
	ret = replica_resync(r, deadline);
	if (ret)
		note_why(r, ret);
	return ret;
}

/* --------------------------------------------------------------- mirror */

static unsigned
required(const struct pmrep_mirror *m)
{
	return m->cfg.quorum == 0 ? m->n : m->cfg.quorum;
}

static unsigned
in_sync_count(const struct pmrep_mirror *m)
{
	unsigned k = 0;
	for (unsigned i = 0; i < m->n; i++)
		if (m->r[i].state == PMREP_REPLICA_IN_SYNC)
			k++;
	return k;
}

/* ---------------------------------------------- asynchronous persists */

static void
list_push(struct req_list *l, struct async_req *q)
{
	q->next = NULL;
	if (l->tail)
		l->tail->next = q;
	else
		l->head = q;
	l->tail = q;
	l->n++;
}

static struct async_req *
list_pop(struct req_list *l)
{
	struct async_req *q = l->head;
	if (q) {
		l->head = q->next;
		if (l->head == NULL)
			l->tail = NULL;
		l->n--;
	}
	return q;
}

static void
list_free(struct req_list *l)
{
	struct async_req *q;
	while ((q = list_pop(l)) != NULL)
		free(q);
}

/* arm (deadline >= 0) or disarm (-1) the batch timer */
static void
timer_set(struct pmrep_mirror *m, long long deadline)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	if (deadline >= 0) {
		/* an absolute time: CLOCK_MONOTONIC like repl_now_ms(); +1
		 * ms so that it never fires before the deadline has passed */
		long long ms = deadline + 1;
		its.it_value.tv_sec = ms / 1000;
		its.it_value.tv_nsec = (ms % 1000) * 1000000;
	}
	(void) timerfd_settime(m->tfd, deadline >= 0 ? TFD_TIMER_ABSTIME : 0,
			&its, NULL);
}

/* the eventfd is readable exactly while completions wait to be polled */
static void
done_signal(struct pmrep_mirror *m)
{
	uint64_t v;
	if (m->done.n > 0) {
		v = 1;
		(void) !write(m->efd, &v, sizeof(v));
	} else {
		(void) !read(m->efd, &v, sizeof(v));
	}
}

/*
 * post the next batch: the first queued request and every queued request
 * whose range overlaps or adjoins the batch's growing range, as one
 * write + persist step per in-sync replica. Replicas not in sync get the
 * range in their bitmap (they cannot confirm it).
 */
static void
batch_start(struct pmrep_mirror *m)
{
	if (m->batch_active || m->queue.n == 0)
		return;
	struct async_req *q = list_pop(&m->queue);
	uint64_t lo = q->off, hi = q->off + q->len;
	list_push(&m->batch, q);
	bool grew = true;
	while (grew) {
		grew = false;
		struct async_req **pp = &m->queue.head, *prev = NULL;
		while (*pp) {
			q = *pp;
			if (q->off <= hi && q->off + q->len >= lo) {
				*pp = q->next;
				if (m->queue.tail == q)
					m->queue.tail = prev;
				m->queue.n--;
				if (q->off < lo)
					lo = q->off;
				if (q->off + q->len > hi)
					hi = q->off + q->len;
				list_push(&m->batch, q);
				grew = true;
				continue;
			}
			prev = q;
			pp = &q->next;
		}
	}
	m->b_off = lo;
	m->b_len = hi - lo;
	m->batch_active = true;
	m->b_deadline = repl_deadline(m->cfg.timeout_ms);
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->state != PMREP_REPLICA_IN_SYNC) {
			repl_bitmap_mark(&r->oos, lo, hi - lo);
			continue;
		}
		int ret = post_range(r, lo, hi - lo);
		if (ret)
			replica_fail(r, ret, lo, hi - lo);
	}
	timer_set(m, m->b_deadline);
}

/* the result of a persist step once no replica is pending */
static int
step_result(const struct pmrep_mirror *m)
{
	unsigned ok = 0;
	bool timed_out = false;
	for (unsigned i = 0; i < m->n; i++) {
		const struct replica *r = &m->r[i];
		if (r->state == PMREP_REPLICA_IN_SYNC)
			ok++;
		else if (r->last_error == PMREP_E_TIMEOUT)
			timed_out = true;
	}
	if (ok >= required(m))
		return 0;
	return timed_out ? PMREP_E_TIMEOUT : PMREP_E_CONN_LOST;
}

/*
 * take the completions of the batch in flight without waiting; when no
 * replica is pending any more (confirmed, failed, or timed out at the
 * batch deadline) complete each of its requests with the batch's result
 */
static void
batch_check(struct pmrep_mirror *m)
{
	if (!m->batch_active)
		return;
	bool pending = false;
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (!r->pending)
			continue;
		int ret = progress(r);
		if (ret) {
			replica_fail(r, ret, r->p_off, r->p_len);
			continue;
		}
		if (r->pending && repl_left_ms(m->b_deadline) == 0)
			replica_fail(r, PMREP_E_TIMEOUT, r->p_off, r->p_len);
		if (r->pending)
			pending = true;
	}
	if (pending)
		return;
	int result = step_result(m);
	if (result)
		PMREP_LOG_ERR("asynchronous persist of %llu bytes at %llu (%zu requests): %s",
				(unsigned long long)m->b_len,
				(unsigned long long)m->b_off, m->batch.n,
				pmrep_err_to_str(result));
	struct async_req *q;
	while ((q = list_pop(&m->batch)) != NULL) {
		q->result = result;
		list_push(&m->done, q);
	}
	m->batch_active = false;
	timer_set(m, -1);
}

/* complete what can be completed and post what can be posted */
static void
async_advance(struct pmrep_mirror *m)
{
	for (;;) {
		batch_check(m);
		if (m->batch_active || m->queue.n == 0)
			break;
		batch_start(m);
	}
	done_signal(m);
}

/* before a synchronous step: finish the batch in flight (by `deadline`) */
static void
batch_drain(struct pmrep_mirror *m, long long deadline)
{
	if (!m->batch_active)
		return;
	long long d = m->b_deadline;
	if (deadline >= 0 && deadline < d)
		d = deadline;
	wait_pending(m, d);
	batch_check(m);		/* nothing is pending: completes it */
}

static void
replica_free(struct replica *r)
{
	replica_disconnect(r);
	if (r->chan_ready)
		repl_chan_fini(&r->ch);
	(void) pmrep_mr_dereg(&r->src);
	if (r->peer) {
		int ret = pmrep_peer_delete(&r->peer);
		if (ret)
			PMREP_LOG_ERR("replica %u: deleting its peer: %s", r->idx,
					pmrep_err_to_str(ret));
	}
	repl_bitmap_fini(&r->oos);
	free(r->addr);
	free(r->port);
}

static void
mirror_free(struct pmrep_mirror *m)
{
	for (unsigned i = 0; i < m->n; i++)
		replica_free(&m->r[i]);
	list_free(&m->queue);
	list_free(&m->batch);
	list_free(&m->done);
	if (m->epfd >= 0)
		close(m->epfd);
	if (m->efd >= 0)
		close(m->efd);
	if (m->tfd >= 0)
		close(m->tfd);
	repl_wipe(m->cfg.key, sizeof(m->cfg.key));
	free(m);
}

int
pmrep_mirror_new(struct pmrep_pmem *pmem, const struct pmrep_mirror_cfg *cfg,
		struct pmrep_mirror **mirror_ptr)
{
	CHECK_ARG(pmem);
	CHECK_ARG(cfg);
	CHECK_ARG(mirror_ptr);
	if (cfg->n == 0 || cfg->key_len == 0 || replica_uuid_is_nil(cfg->uuid)) {
		PMREP_LOG_ERR("a mirror needs at least one replica, a key and a UUID");
		return PMREP_E_INVAL;
	}
	if (cfg->quorum > cfg->n) {
		PMREP_LOG_ERR("quorum %u above the %u replicas", cfg->quorum, cfg->n);
		return PMREP_E_INVAL;
	}
	struct pmrep_mirror *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		PMREP_LOG_ERR("out of memory for a mirror");
		return PMREP_E_NOMEM;
	}
	m->pmem = pmem;
	m->base = pmrep_pmem_get_address(pmem);
	m->size = pmrep_pmem_get_size(pmem);
	m->persist = pmrep_pmem_get_persist_fn(pmem);
	m->cfg = *cfg;
	m->next_seq = 1;
	m->epfd = m->efd = m->tfd = -1;
	int ret = repl_random(&m->session_id, sizeof(m->session_id));
	if (ret)
		goto err;
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	m->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	m->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (m->epfd < 0 || m->efd < 0 || m->tfd < 0 ||
			fcntl(m->epfd, F_SETFL, O_NONBLOCK) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "the mirror's epoll / event / timer fd");
		goto err;
	}
	struct epoll_event eev = { .events = EPOLLIN, .data.ptr = NULL };
	if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->efd, &eev) != 0 ||
			epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->tfd, &eev) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "epoll_ctl");
		goto err;
	}
	for (unsigned i = 0; i < cfg->n; i++) {
		struct replica *r = &m->r[i];
		r->m = m;
		r->idx = i;
		r->state = PMREP_REPLICA_FAILED;
		r->addr = strdup(cfg->r[i].addr);
		r->port = strdup(cfg->r[i].port);
		m->n++;
		if (r->addr == NULL || r->port == NULL) {
			PMREP_LOG_ERR("out of memory for a replica");
			ret = PMREP_E_NOMEM;
			goto err;
		}
		ret = repl_bitmap_init(&r->oos, m->size, cfg->region_size);
		if (ret)
			goto err;
	}
	int first_err = 0, first_errno = 0;
	const struct replica *first = NULL;
	for (unsigned i = 0; i < m->n; i++) {
		/* this replica's messages only: its failure's reason is the
		 * thread's last error message */
		pmrep_err_clear();
		/* the resync of a new mirror has no overall limit: each
		 * step has the cfg timeout */
		ret = replica_attach(&m->r[i], repl_deadline(cfg->timeout_ms), -1);
		if (ret && first_err == 0) {
			first_err = ret;
			first_errno = pmrep_err_errno();
			first = &m->r[i];
		}
	}
	if (in_sync_count(m) < required(m)) {
		ret = first_err ? first_err : PMREP_E_CONN_LOST;
		/* the summary replaces the thread's last message: it carries
		 * the first failure's reason, named by its replica */
		char reason[sizeof(first->why) + 128] = "";
		if (first != NULL) {
			char name[32];
			int n = snprintf(name, sizeof(name), "replica %u", first->idx);
			char after = first->why[n];
			if (strncmp(first->why, name, (size_t)n) == 0 &&
					(after == ' ' || after == ':'))
				snprintf(reason, sizeof(reason), "; %s", first->why);
			else
				snprintf(reason, sizeof(reason), "; replica %u (%s:%s): %s",
						first->idx, first->addr, first->port,
						first->why);
		}
		PMREP_LOG_ERR("mirror: %u of %u replicas in sync, %u required%s",
				in_sync_count(m), m->n, required(m), reason);
		pmrep_err_set_errno(first_errno);
		goto err;
	}
	*mirror_ptr = m;
	return 0;
err:
	mirror_free(m);
	return ret;
}

int
pmrep_mirror_delete(struct pmrep_mirror **mirror_ptr)
{
	CHECK_ARG(mirror_ptr);
	struct pmrep_mirror *m = *mirror_ptr;
	if (m == NULL)
		return 0;
	/* the CLOSE exchange needs no step in flight; requests still
	 * queued or not polled are dropped */
	batch_drain(m, repl_deadline(m->cfg.timeout_ms));
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->state != PMREP_REPLICA_IN_SYNC || r->oos.nset != 0)
			continue;
		/* a clean end: the replica may say it is consistent */
		struct repl_msg msg = { .type = REPL_MSG_CLOSE, .seq = m->next_seq++ };
		struct repl_msg reply;
		long long deadline = repl_deadline(m->cfg.timeout_ms);
		int ret = repl_chan_send(&r->ch, &msg);
		if (ret == 0)
			ret = wait_msg(r, deadline, &reply);
		if (ret == 0 && (reply.type != REPL_MSG_CLOSE_REPLY ||
				reply.seq != msg.seq || reply.status != REPL_ST_OK))
			ret = PMREP_E_MALFORMED;
		if (ret)
			PMREP_LOG_WARN("replica %u: could not mark it consistent (%s); it will be resynced in full next time",
					i, pmrep_err_to_str(ret));
	}
	mirror_free(m);
	*mirror_ptr = NULL;
	return 0;
}

int
pmrep_mirror_persist(struct pmrep_mirror *m, size_t offset, size_t length,
		int timeout_ms)
{
	CHECK_ARG(m);
	int ret = repl_timeout_check(timeout_ms, "pmrep_mirror_persist");
	if (ret)
		return ret;
	if (offset > m->size || length > m->size - offset) {
		PMREP_LOG_ERR("persist of %zu bytes at %zu is outside the %zu-byte mapping",
				length, offset, m->size);
		return PMREP_E_RANGE;
	}
	if (length == 0)
		return 0;
	long long deadline = repl_deadline(timeout_ms);
	/* one step in flight per replica: the asynchronous one first */
	batch_drain(m, deadline);

	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->state != PMREP_REPLICA_IN_SYNC) {
			repl_bitmap_mark(&r->oos, offset, length);
			continue;
		}
		ret = post_range(r, offset, length);
		if (ret)
			replica_fail(r, ret, offset, length);
	}
	m->persist(m->base + offset, length);	/* meanwhile, locally */
	wait_pending(m, deadline);

	ret = step_result(m);
	if (ret)
		PMREP_LOG_ERR("persist of %zu bytes at %zu: %u of %u replicas confirmed, %u required",
				length, offset, in_sync_count(m), m->n, required(m));
	async_advance(m);	/* what was queued meanwhile */
	return ret;
}

int
pmrep_mirror_reconnect(struct pmrep_mirror *m, int timeout_ms)
{
	CHECK_ARG(m);
	int ret = repl_timeout_check(timeout_ms, "pmrep_mirror_reconnect");
	if (ret)
		return ret;
	long long deadline = repl_deadline(timeout_ms);
	int first_err = 0;
	bool waiting = false;
	/* a resync step waits for every pending replica: finish the
	 * asynchronous batch first, with its own deadline */
	batch_drain(m, -1);
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		ret = 0;
		if (r->state == PMREP_REPLICA_IN_SYNC)
			continue;
		if (r->state == PMREP_REPLICA_FAILED) {
			if (repl_now_ms() < r->next_try) {
				waiting = true;
				continue;
			}
			long long d = repl_deadline(m->cfg.timeout_ms);
			if (deadline >= 0 && deadline < d)
				d = deadline;
			ret = replica_attach(r, d, deadline);
		} else {
			ret = replica_resync(r, deadline);
		}
		if (ret && first_err == 0)
			first_err = ret;
	}
	async_advance(m);
	if (first_err)
		return first_err;
	return waiting ? PMREP_E_AGAIN : 0;
}

int
pmrep_mirror_get_replica_count(const struct pmrep_mirror *m, unsigned *count)
{
	CHECK_ARG(m);
	CHECK_ARG(count);
	*count = m->n;
	return 0;
}

int
pmrep_mirror_get_replica_status(const struct pmrep_mirror *m, unsigned index,
		struct pmrep_replica_status *st)
{
	CHECK_ARG(m);
	CHECK_ARG(st);
	if (index >= m->n) {
		PMREP_LOG_ERR("replica index %u: the mirror has %u", index, m->n);
		return PMREP_E_INVAL;
	}
	const struct replica *r = &m->r[index];
	st->state = r->state;
	st->method = r->method;
	st->lag_bytes = repl_bitmap_dirty_bytes(&r->oos);
	st->last_error = r->last_error;
	st->resyncs = r->resyncs;
	st->resync_bytes = r->resync_bytes;
	return 0;
}

/* ---------------------------------------------- asynchronous interface */

int
pmrep_mirror_persist_async(struct pmrep_mirror *m, size_t offset,
		size_t length, void *ctx)
{
	CHECK_ARG(m);
	if (offset > m->size || length > m->size - offset) {
		PMREP_LOG_ERR("persist of %zu bytes at %zu is outside the %zu-byte mapping",
				length, offset, m->size);
		return PMREP_E_RANGE;
	}
	if (m->queue.n + m->batch.n + m->done.n >= ASYNC_MAX) {
		PMREP_LOG_ERR("%d asynchronous persists outstanding: poll their completions first",
				ASYNC_MAX);
		return PMREP_E_AGAIN;
	}
	struct async_req *q = calloc(1, sizeof(*q));
	if (q == NULL) {
		PMREP_LOG_ERR("out of memory for an asynchronous persist");
		return PMREP_E_NOMEM;
	}
	q->off = offset;
	q->len = length;
	q->ctx = ctx;
	if (length == 0) {
		list_push(&m->done, q);		/* nothing to make durable */
		done_signal(m);
		return 0;
	}
	m->persist(m->base + offset, length);
	list_push(&m->queue, q);
	async_advance(m);
	return 0;
}

int
pmrep_mirror_get_fd(const struct pmrep_mirror *m, int *fd)
{
	CHECK_ARG(m);
	CHECK_ARG(fd);
	*fd = m->epfd;
	return 0;
}

int
pmrep_mirror_poll(struct pmrep_mirror *m, struct pmrep_mirror_completion *out,
		int max, int *n)
{
	CHECK_ARG(m);
	CHECK_ARG(out);
	CHECK_ARG(n);
	if (max <= 0) {
		PMREP_LOG_ERR("pmrep_mirror_poll: max must be > 0, got %d", max);
		return PMREP_E_INVAL;
	}
	*n = 0;
	uint64_t v;
	(void) !read(m->tfd, &v, sizeof(v));
	(void) !read(m->efd, &v, sizeof(v));
	for (unsigned i = 0; i < m->n; i++) {
		struct replica *r = &m->r[i];
		if (r->conn == NULL)
			continue;
		/* take the CQ's event and re-arm before draining it, so that
		 * a completion arriving meanwhile fires again */
		repl_chan_ack_cq(&r->ch);
		if (!r->pending) {
			/* an idle connection's end: fail the replica now so
			 * that its event fd leaves the epoll set */
			int ret = repl_chan_check_conn(&r->ch);
			if (ret)
				replica_fail(r, ret, 0, 0);
		}
	}
	async_advance(m);
	while (*n < max && m->done.n > 0) {
		struct async_req *q = list_pop(&m->done);
		out[*n].ctx = q->ctx;
		out[*n].result = q->result;
		out[*n].offset = (size_t)q->off;
		out[*n].length = (size_t)q->len;
		(*n)++;
		free(q);
	}
	done_signal(m);
	return 0;
}
