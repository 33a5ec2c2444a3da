/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target.c -- the replica target: one replica file / device DAX opened
 * through the pmem layer, its data area registered for remote writes (or a
 * staging buffer when registration is refused), an endpoint, and the
 * sessions of initiators: handshake (challenge-response with the
 * pre-shared key, header checks), then GPSPM persist requests and the
 * closing mark. Single-threaded: everything happens in
 * pmrep_target_process, driven by one epoll fd. A target holds an
 * exclusive flock on its replica for its life: one target per replica.
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

#include <pmrep/transport.h>

#include "common/log.h"
#include "replica_hdr.h"
#include "chan.h"

#define TARGET_MAX_SESSIONS 4
#define TAG_EP UINT64_MAX

struct pmrep_target_cfg {
	char *path;
	uint64_t data_size;
	bool create;
	char *addr;
	char *port;
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len;
	bool direct_write_to_pmem;
	bool staging;
	int timeout_ms;
};

enum session_state {
	S_FREE = 0,
	S_WAIT_AUTH,	/* accepted; waiting for AUTH until the deadline */
	S_ACTIVE,	/* authenticated: serving */
	S_CLOSING,	/* a REFUSE is on its way; closed when sent or at the deadline */
};

struct session {
	enum session_state state;
	struct repl_chan ch;
	struct pmrep_conn *conn;
	long long deadline;
	uint8_t nonce_i[REPL_NONCE_SIZE];
	uint8_t nonce_t[REPL_NONCE_SIZE];
};

struct pmrep_target {
	struct pmrep_target_cfg cfg;
	struct pmrep_pmem *pmem;
	int lock_fd;			/* holds the replica's flock: -1 none */
	uint8_t *base;			/* the mapping: header ... */
	uint8_t *data;			/* ... and data area */
	pmrep_pmem_persist_fn *persist;
	pmrep_pmem_memcpy_fn *memcpy_persist;
	struct replica_hdr hdr;
	struct pmrep_peer *peer;
	struct pmrep_peer_cfg *peer_cfg;
	struct pmrep_conn_cfg *conn_cfg;
	struct pmrep_ep *ep;
	struct pmrep_mr_local *data_mr;
	uint8_t *staging;		/* NULL: direct */
	enum pmrep_target_mode mode;
	int epfd;
	struct session s[TARGET_MAX_SESSIONS];
	struct pmrep_target_stats stats;
};

/* --------------------------------------------------------------- cfg */

int
pmrep_target_cfg_new(struct pmrep_target_cfg **cfg_ptr)
{
	if (cfg_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: cfg_ptr is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_target_cfg *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL)
		goto nomem;
	cfg->addr = strdup("127.0.0.1");
	cfg->port = strdup("0");
	if (cfg->addr == NULL || cfg->port == NULL)
		goto nomem;
	cfg->timeout_ms = 5000;
	*cfg_ptr = cfg;
	return 0;
nomem:
	if (cfg) {
		free(cfg->addr);
		free(cfg->port);
		free(cfg);
	}
	PMREP_LOG_ERR("out of memory for a target configuration");
	return PMREP_E_NOMEM;
}

int
pmrep_target_cfg_delete(struct pmrep_target_cfg **cfg_ptr)
{
	if (cfg_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: cfg_ptr is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_target_cfg *cfg = *cfg_ptr;
	if (cfg == NULL)
		return 0;
	repl_wipe(cfg->key, sizeof(cfg->key));
	free(cfg->path);
	free(cfg->addr);
	free(cfg->port);
	free(cfg);
	*cfg_ptr = NULL;
	return 0;
}

static int
set_str(char **dst, const char *src, const char *what)
{
	if (src == NULL || src[0] == '\0') {
		PMREP_LOG_ERR("invalid argument: %s is NULL or empty", what);
		return PMREP_E_INVAL;
	}
	char *c = strdup(src);
	if (c == NULL) {
		PMREP_LOG_ERR("out of memory for %s", what);
		return PMREP_E_NOMEM;
	}
	free(*dst);
	*dst = c;
	return 0;
}

#define CHECK_CFG(cfg) do { \
	if ((cfg) == NULL) { \
		PMREP_LOG_ERR("invalid argument: cfg is NULL"); \
		return PMREP_E_INVAL; \
	} \
} while (0)

int
pmrep_target_cfg_set_path(struct pmrep_target_cfg *cfg, const char *path)
{
	CHECK_CFG(cfg);
	return set_str(&cfg->path, path, "path");
}

int
pmrep_target_cfg_set_data_size(struct pmrep_target_cfg *cfg,
		uint64_t data_size, bool create)
{
	CHECK_CFG(cfg);
	if (create && data_size == 0) {
		PMREP_LOG_ERR("creating a replica needs a data size > 0");
		return PMREP_E_INVAL;
	}
	/* header + data area must be a file size (an off_t): a larger value
	 * would wrap data_size + PMREP_REPLICA_DATA_OFFSET and register far
	 * more memory than the file maps */
	if (data_size > (uint64_t)INT64_MAX - PMREP_REPLICA_DATA_OFFSET) {
		PMREP_LOG_ERR("data size %llu: at most %llu bytes",
				(unsigned long long)data_size,
				(unsigned long long)((uint64_t)INT64_MAX -
					PMREP_REPLICA_DATA_OFFSET));
		return PMREP_E_INVAL;
	}
	cfg->data_size = data_size;
	cfg->create = create;
	return 0;
}

int
pmrep_target_cfg_set_address(struct pmrep_target_cfg *cfg, const char *addr,
		const char *port)
{
	CHECK_CFG(cfg);
	if (addr == NULL || port == NULL) {
		PMREP_LOG_ERR("invalid argument: addr or port is NULL");
		return PMREP_E_INVAL;
	}
	if (addr[0] == '\0') {
		PMREP_LOG_ERR("invalid argument: addr is empty");
		return PMREP_E_INVAL;
	}
	int ret = repl_port_check(port, true);
	if (ret)
		return ret;
	ret = set_str(&cfg->addr, addr, "addr");
	return ret ? ret : set_str(&cfg->port, port, "port");
}

int
pmrep_target_cfg_set_key(struct pmrep_target_cfg *cfg, const uint8_t *key,
		size_t len)
{
	CHECK_CFG(cfg);
	int ret = repl_key_check(key, len);
	if (ret)
		return ret;
	memcpy(cfg->key, key, len);
	cfg->key_len = len;
	return 0;
}

int
pmrep_target_cfg_set_direct_write_to_pmem(struct pmrep_target_cfg *cfg,
		bool direct)
{
	CHECK_CFG(cfg);
	cfg->direct_write_to_pmem = direct;
	return 0;
}

int
pmrep_target_cfg_set_staging(struct pmrep_target_cfg *cfg, bool force)
{
	CHECK_CFG(cfg);
	cfg->staging = force;
	return 0;
}

int
pmrep_target_cfg_set_timeout(struct pmrep_target_cfg *cfg, int timeout_ms)
{
	CHECK_CFG(cfg);
	if (timeout_ms <= 0) {
		PMREP_LOG_ERR("timeout must be > 0 ms, got %d", timeout_ms);
		return PMREP_E_INVAL;
	}
	cfg->timeout_ms = timeout_ms;
	return 0;
}

/* ------------------------------------------------------------ header */

static void
hdr_store(struct pmrep_target *t)
{
	uint8_t enc[REPLICA_HDR_ENC_SIZE];
	replica_hdr_encode(&t->hdr, enc);
	memcpy(t->base, enc, sizeof(enc));
	t->persist(t->base, sizeof(enc));
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

static void
unlock_replica(struct pmrep_target *t)
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
static void
close_pmem_keep_error(struct pmrep_target *t)
{
	char why[256];
	int err = pmrep_err_errno();
	snprintf(why, sizeof(why), "%s", pmrep_err_msg());
	(void) pmrep_pmem_close(&t->pmem);
	unlock_replica(t);
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

static bool
all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* open (create + format) the replica and check its header */
static int
open_replica(struct pmrep_target *t)
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
	t->base = pmrep_pmem_get_address(t->pmem);
	t->data = t->base + PMREP_REPLICA_DATA_OFFSET;
	t->persist = pmrep_pmem_get_persist_fn(t->pmem);
	t->memcpy_persist = pmrep_pmem_get_memcpy_fn(t->pmem);
	size_t size = pmrep_pmem_get_size(t->pmem);

	if (!existed && c->create) {
		memset(&t->hdr, 0, sizeof(t->hdr));	/* unclaimed */
		t->hdr.data_size = c->data_size;
		hdr_store(t);
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
			all_zero(t->base, PMREP_REPLICA_DATA_OFFSET)) {
		memset(&t->hdr, 0, sizeof(t->hdr));	/* unclaimed */
		t->hdr.data_size = size - PMREP_REPLICA_DATA_OFFSET;
		hdr_store(t);
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
	ret = allocate_blocks(c->path, size);
	if (ret)
		goto err;
	return 0;
err:
	close_pmem_keep_error(t);
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
register_data(struct pmrep_target *t)
{
	const int usage = PMREP_MR_USAGE_WRITE_DST | PMREP_MR_USAGE_READ_SRC |
		PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY;
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

/* ----------------------------------------------------------- sessions */

static void
epoll_add(struct pmrep_target *t, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };
	/* a provider may hand out one fd for both CQ and events: EEXIST */
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno != EEXIST)
		PMREP_LOG_ERR("epoll_ctl ADD fd %d: %s", fd, strerror(errno));
}

static void
session_close(struct pmrep_target *t, struct session *s, const char *why)
{
	if (s->state == S_FREE)
		return;
	PMREP_LOG_INFO("session %d closed: %s", (int)(s - t->s), why);
	if (s->conn) {
		int cq_fd, ev_fd;
		if (repl_chan_fds(&s->ch, &cq_fd, &ev_fd) == 0) {
			epoll_ctl(t->epfd, EPOLL_CTL_DEL, cq_fd, NULL);
			epoll_ctl(t->epfd, EPOLL_CTL_DEL, ev_fd, NULL);
		}
		(void) pmrep_conn_disconnect(s->conn);
		(void) pmrep_conn_delete(&s->conn);
	}
	repl_chan_fini(&s->ch);
	memset(s, 0, sizeof(*s));
}

static void
refuse(struct pmrep_target *t, struct session *s, enum repl_status st,
		const char *detail)
{
	t->stats.sessions_refused++;
	t->stats.last_refusal = repl_status_to_err(st);
	PMREP_LOG_ERR("initiator refused: %s%s%s", repl_status_str(st),
			detail ? ": " : "", detail ? detail : "");
	struct repl_msg m = { .type = REPL_MSG_REFUSE, .status = st };
	if (repl_chan_send(&s->ch, &m) != 0) {
		session_close(t, s, "refused");
		return;
	}
	s->state = S_CLOSING;
	s->deadline = repl_deadline(t->cfg.timeout_ms);
}

/*
 * a free session slot for a new connection request. When every slot is
 * taken, the oldest session that has not authenticated (one being refused
 * first, then one still waiting for AUTH) makes room: otherwise a few
 * connections that send a HELLO (whose format is public) and then nothing
 * would lock every initiator out, again and again. An authenticated
 * session is never evicted. NULL when every slot is authenticated.
 */
static struct session *
free_session(struct pmrep_target *t)
{
	struct session *victim = NULL;
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++) {
		struct session *s = &t->s[i];
		if (s->state == S_FREE)
			return s;
		if (s->state == S_ACTIVE)
			continue;
		if (victim == NULL ||
				(s->state == S_CLOSING && victim->state != S_CLOSING) ||
				(s->state == victim->state &&
				 s->deadline < victim->deadline))
			victim = s;
	}
	if (victim == NULL)
		return NULL;
	if (victim->state == S_WAIT_AUTH) {
		t->stats.sessions_refused++;
		t->stats.last_refusal = PMREP_E_TIMEOUT;
		PMREP_LOG_ERR("initiator refused: every session slot is taken and it has not authenticated yet (session %d evicted for a new connection request)",
				(int)(victim - t->s));
	}
	session_close(t, victim, "evicted for a new connection request");
	return victim;
}

/* a connection request on the endpoint */
static void
accept_one(struct pmrep_target *t, struct pmrep_conn_req *req)
{
	struct pmrep_conn_private_data pd;
	struct repl_pdata hello;
	(void) pmrep_conn_req_get_private_data(req, &pd);
	if (repl_pdata_decode(pd.ptr, pd.len, REPL_PDATA_HELLO, &hello) != 0) {
		t->stats.sessions_refused++;
		t->stats.last_refusal = PMREP_E_MALFORMED;
		PMREP_LOG_ERR("connection request refused: no valid pmrep HELLO in its private data");
		(void) pmrep_conn_req_delete(&req);
		return;
	}
	struct session *s = free_session(t);
	if (s == NULL) {
		PMREP_LOG_ERR("connection request refused: %d sessions already open",
				TARGET_MAX_SESSIONS);
		(void) pmrep_conn_req_delete(&req);
		return;
	}
	memcpy(s->nonce_i, hello.nonce, REPL_NONCE_SIZE);
	struct repl_pdata chal = { .type = REPL_PDATA_CHALLENGE };
	uint8_t enc[REPL_PDATA_SIZE];
	int ret = repl_random(s->nonce_t, REPL_NONCE_SIZE);
	if (ret)
		goto reject;
	memcpy(chal.nonce, s->nonce_t, REPL_NONCE_SIZE);
	repl_pdata_encode(&chal, enc);
	ret = repl_chan_init(&s->ch, t->peer);
	if (ret)
		goto reject;
	ret = repl_chan_post_recvs(&s->ch, req);
	if (ret)
		goto fini;
	struct pmrep_conn_private_data out = { enc, sizeof(enc) };
	ret = pmrep_conn_req_connect(&req, &out, &s->conn);
	if (ret)
		goto fini;
	(void) repl_chan_attach(&s->ch, s->conn);
	int cq_fd, ev_fd;
	if (repl_chan_fds(&s->ch, &cq_fd, &ev_fd) == 0) {
		epoll_add(t, cq_fd, (uint64_t)(s - t->s));
		epoll_add(t, ev_fd, (uint64_t)(s - t->s));
	}
	s->state = S_WAIT_AUTH;
	s->deadline = repl_deadline(t->cfg.timeout_ms);
	PMREP_LOG_INFO("session %d: accepted a connection, waiting for AUTH",
			(int)(s - t->s));
	return;
fini:
	repl_chan_fini(&s->ch);
reject:
	PMREP_LOG_ERR("cannot accept a connection: %s", pmrep_err_to_str(ret));
	if (req)
		(void) pmrep_conn_req_delete(&req);
	memset(s, 0, sizeof(*s));
}

static void
on_auth(struct pmrep_target *t, struct session *s, const struct repl_msg *m)
{
	if (m->type != REPL_MSG_AUTH) {
		refuse(t, s, REPL_ST_MALFORMED, "expected AUTH first");
		return;
	}
	const struct repl_auth *a = &m->u.auth;
	uint8_t mac[REPL_MAC_SIZE];
	if (repl_auth_mac(t->cfg.key, t->cfg.key_len, s->nonce_i, s->nonce_t,
			a, mac) != 0) {
		refuse(t, s, REPL_ST_INTERNAL, "cannot compute the HMAC");
		return;
	}
	if (!repl_mac_equal(mac, a->mac)) {
		refuse(t, s, REPL_ST_AUTH, "the initiator does not hold our key");
		return;
	}
	char detail[160];
	if (a->data_size != t->hdr.data_size) {
		snprintf(detail, sizeof(detail), "initiator has %llu data bytes, the replica %llu",
				(unsigned long long)a->data_size,
				(unsigned long long)t->hdr.data_size);
		refuse(t, s, REPL_ST_SIZE, detail);
		return;
	}
	bool fresh = replica_uuid_is_nil(t->hdr.uuid);
	if (replica_uuid_is_nil(a->uuid) ||
			(!fresh && memcmp(a->uuid, t->hdr.uuid, PMREP_UUID_SIZE) != 0)) {
		refuse(t, s, REPL_ST_UUID, NULL);
		return;
	}
	if (!fresh && t->hdr.generation > a->generation) {
		snprintf(detail, sizeof(detail), "replica generation %llu, initiator %llu",
				(unsigned long long)t->hdr.generation,
				(unsigned long long)a->generation);
		refuse(t, s, REPL_ST_GENERATION, detail);
		return;
	}
	/* the newest authenticated initiator wins: a half-open old session
	 * must not lock its replica set out */
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++)
		if (&t->s[i] != s && t->s[i].state == S_ACTIVE)
			session_close(t, &t->s[i], "taken over by a new initiator");

	struct repl_msg r = { .type = REPL_MSG_ACCEPT, .seq = m->seq };
	struct repl_accept *acc = &r.u.accept;
	(void) pmrep_mr_get_descriptor(t->data_mr, acc->mr_desc);
	(void) pmrep_peer_cfg_get_descriptor(t->peer_cfg, acc->peer_cfg);
	acc->prev_generation = t->hdr.generation;
	acc->prev_attach_id = t->hdr.attach_id;
	acc->prev_flags = t->hdr.flags;
	acc->target_flags = (t->staging ? REPL_TF_STAGING : 0) |
		(fresh ? REPL_TF_FRESH : 0);
	if (repl_accept_mac(t->cfg.key, t->cfg.key_len, s->nonce_i, s->nonce_t,
			acc, acc->mac) != 0) {
		refuse(t, s, REPL_ST_INTERNAL, "cannot compute the HMAC");
		return;
	}
	/* from now on the data may change: not consistent until a CLOSE */
	memcpy(t->hdr.uuid, a->uuid, PMREP_UUID_SIZE);
	t->hdr.generation = a->generation;
	t->hdr.attach_id = a->session_id;
	t->hdr.flags &= ~PMREP_REPLICA_F_CONSISTENT;
	hdr_store(t);
	if (repl_chan_send(&s->ch, &r) != 0) {
		session_close(t, s, "cannot send ACCEPT");
		return;
	}
	s->state = S_ACTIVE;
	t->stats.sessions_accepted++;
	PMREP_LOG(PMREP_LOG_NOTICE, "session %d: initiator authenticated (generation %llu%s, %s mode)",
			(int)(s - t->s), (unsigned long long)a->generation,
			fresh ? ", fresh replica" : "",
			t->staging ? "staging" : "direct");
}

static void
on_active(struct pmrep_target *t, struct session *s, const struct repl_msg *m)
{
	struct repl_msg r = { .seq = m->seq };
	switch (m->type) {
	case REPL_MSG_PERSIST: {
		uint64_t off = m->u.persist.offset, len = m->u.persist.length;
		r.type = REPL_MSG_PERSIST_REPLY;
		if (off > t->hdr.data_size || len > t->hdr.data_size - off) {
			PMREP_LOG_ERR("persist request of %llu bytes at %llu is outside the %llu-byte data area",
					(unsigned long long)len, (unsigned long long)off,
					(unsigned long long)t->hdr.data_size);
			r.status = REPL_ST_RANGE;
		} else if (len > 0) {
			if (t->staging)
				t->memcpy_persist(t->data + off, t->staging + off,
						(size_t)len, 0);
			else
				t->persist(t->data + off, (size_t)len);
			t->stats.persist_requests++;
		}
		break;
	}
	case REPL_MSG_CLOSE:
		r.type = REPL_MSG_CLOSE_REPLY;
		t->hdr.flags |= PMREP_REPLICA_F_CONSISTENT;
		hdr_store(t);
		PMREP_LOG(PMREP_LOG_NOTICE, "session %d: replica marked consistent at generation %llu",
				(int)(s - t->s), (unsigned long long)t->hdr.generation);
		break;
	default:
		PMREP_LOG_ERR("session %d: unexpected message type %d",
				(int)(s - t->s), (int)m->type);
		session_close(t, s, "protocol error");
		return;
	}
	if (repl_chan_send(&s->ch, &r) != 0)
		session_close(t, s, "cannot reply");
}

static void
session_progress(struct pmrep_target *t, struct session *s)
{
	repl_chan_ack_cq(&s->ch);
	for (;;) {
		enum repl_chan_ev ev;
		struct repl_msg m;
		int ret = repl_chan_next(&s->ch, &ev, &m);
		if (ret == PMREP_E_MALFORMED && s->state == S_WAIT_AUTH) {
			refuse(t, s, REPL_ST_MALFORMED, "AUTH did not decode");
			return;
		}
		if (ret) {
			session_close(t, s, pmrep_err_to_str(ret));
			return;
		}
		if (ev == REPL_CHAN_NONE)
			break;
		if (ev != REPL_CHAN_MSG)
			continue;
		if (s->state == S_WAIT_AUTH)
			on_auth(t, s, &m);
		else if (s->state == S_ACTIVE)
			on_active(t, s, &m);
		/* S_CLOSING: ignore whatever still comes */
		if (s->state == S_FREE)
			return;
	}
	if (s->state == S_CLOSING && s->ch.sends_in_flight == 0) {
		session_close(t, s, "refused");
		return;
	}
	if (repl_chan_check_conn(&s->ch) != 0)
		session_close(t, s, s->state == S_ACTIVE ?
				"the initiator disconnected" :
				"the connection ended during the handshake");
}

/* ------------------------------------------------------------- target */

int
pmrep_target_new(const struct pmrep_target_cfg *cfg,
		struct pmrep_target **target_ptr)
{
	if (cfg == NULL || target_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: cfg or target_ptr is NULL");
		return PMREP_E_INVAL;
	}
	if (cfg->path == NULL || cfg->key_len == 0) {
		PMREP_LOG_ERR("a target needs a path and a key");
		return PMREP_E_INVAL;
	}
	struct pmrep_target *t = calloc(1, sizeof(*t));
	if (t == NULL) {
		PMREP_LOG_ERR("out of memory for a target");
		return PMREP_E_NOMEM;
	}
	int ret = PMREP_E_NOMEM;
	t->epfd = -1;
	t->lock_fd = -1;
	t->cfg = *cfg;
	t->cfg.path = strdup(cfg->path);
	t->cfg.addr = strdup(cfg->addr);
	t->cfg.port = strdup(cfg->port);
	if (!t->cfg.path || !t->cfg.addr || !t->cfg.port) {
		PMREP_LOG_ERR("out of memory for a target");
		goto err_cfg;
	}
	ret = open_replica(t);
	if (ret)
		goto err_cfg;
	ret = pmrep_peer_open(t->cfg.addr, true, &t->peer);
	if (ret)
		goto err_pmem;
	ret = pmrep_peer_cfg_new(&t->peer_cfg);
	if (ret)
		goto err_peer;
	(void) pmrep_peer_cfg_set_direct_write_to_pmem(t->peer_cfg,
			t->cfg.direct_write_to_pmem);
	ret = pmrep_conn_cfg_new(&t->conn_cfg);
	if (ret)
		goto err_pcfg;
	(void) pmrep_conn_cfg_set_timeout(t->conn_cfg, t->cfg.timeout_ms);
	(void) pmrep_conn_cfg_set_sq_size(t->conn_cfg, 16);
	(void) pmrep_conn_cfg_set_rq_size(t->conn_cfg, CHAN_NRECV);
	(void) pmrep_conn_cfg_set_cq_size(t->conn_cfg, 32);
	ret = register_data(t);
	if (ret)
		goto err_ccfg;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, "epoll_create1");
		goto err_mr;
	}
	ret = pmrep_ep_listen(t->peer, t->cfg.addr, t->cfg.port, &t->ep);
	if (ret)
		goto err_epfd;
	int fd;
	(void) pmrep_ep_get_fd(t->ep, &fd);
	epoll_add(t, fd, TAG_EP);
	uint16_t port = 0;
	(void) pmrep_ep_get_port(t->ep, &port);
	PMREP_LOG(PMREP_LOG_NOTICE, "serving %s (%llu data bytes, %s mode) on %s:%u",
			t->cfg.path, (unsigned long long)t->hdr.data_size,
			t->staging ? "staging" : "direct", t->cfg.addr, port);
	*target_ptr = t;
	return 0;

err_epfd:
	close(t->epfd);
err_mr:
	(void) pmrep_mr_dereg(&t->data_mr);
	if (t->staging)
		munmap(t->staging, (size_t)t->hdr.data_size);
err_ccfg:
	(void) pmrep_conn_cfg_delete(&t->conn_cfg);
err_pcfg:
	(void) pmrep_peer_cfg_delete(&t->peer_cfg);
err_peer:
	(void) pmrep_peer_delete(&t->peer);
err_pmem:
	close_pmem_keep_error(t);
err_cfg:
	free(t->cfg.path);
	free(t->cfg.addr);
	free(t->cfg.port);
	repl_wipe(t->cfg.key, sizeof(t->cfg.key));
	free(t);
	return ret;
}

int
pmrep_target_delete(struct pmrep_target **target_ptr)
{
	if (target_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: target_ptr is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_target *t = *target_ptr;
	if (t == NULL)
		return 0;
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++)
		session_close(t, &t->s[i], "the target is shutting down");
	(void) pmrep_ep_shutdown(&t->ep);
	close(t->epfd);
	(void) pmrep_mr_dereg(&t->data_mr);
	if (t->staging)
		munmap(t->staging, (size_t)t->hdr.data_size);
	(void) pmrep_conn_cfg_delete(&t->conn_cfg);
	(void) pmrep_peer_cfg_delete(&t->peer_cfg);
	int ret = pmrep_peer_delete(&t->peer);
	if (ret)
		PMREP_LOG_ERR("deleting the target's peer: %s", pmrep_err_to_str(ret));
	(void) pmrep_pmem_close(&t->pmem);
	unlock_replica(t);
	free(t->cfg.path);
	free(t->cfg.addr);
	free(t->cfg.port);
	repl_wipe(t->cfg.key, sizeof(t->cfg.key));
	free(t);
	*target_ptr = NULL;
	return 0;
}

int
pmrep_target_get_fd(const struct pmrep_target *target, int *fd)
{
	if (target == NULL || fd == NULL) {
		PMREP_LOG_ERR("invalid argument: target or fd is NULL");
		return PMREP_E_INVAL;
	}
	*fd = target->epfd;
	return 0;
}

int
pmrep_target_get_port(const struct pmrep_target *target, uint16_t *port)
{
	if (target == NULL || port == NULL) {
		PMREP_LOG_ERR("invalid argument: target or port is NULL");
		return PMREP_E_INVAL;
	}
	return pmrep_ep_get_port(target->ep, port);
}

int
pmrep_target_get_mode(const struct pmrep_target *target,
		enum pmrep_target_mode *mode)
{
	if (target == NULL || mode == NULL) {
		PMREP_LOG_ERR("invalid argument: target or mode is NULL");
		return PMREP_E_INVAL;
	}
	*mode = target->mode;
	return 0;
}

int
pmrep_target_get_stats(const struct pmrep_target *target,
		struct pmrep_target_stats *stats)
{
	if (target == NULL || stats == NULL) {
		PMREP_LOG_ERR("invalid argument: target or stats is NULL");
		return PMREP_E_INVAL;
	}
	*stats = target->stats;
	return 0;
}

/* the earliest session deadline, or `limit` */
static int
wait_limit(const struct pmrep_target *t, int timeout_ms)
{
	int left = timeout_ms;
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++) {
		const struct session *s = &t->s[i];
		if (s->state != S_WAIT_AUTH && s->state != S_CLOSING)
			continue;
		int l = repl_left_ms(s->deadline);
		if (left < 0 || l < left)
			left = l;
	}
	return left;
}

int
pmrep_target_process(struct pmrep_target *t, int timeout_ms)
{
	if (t == NULL) {
		PMREP_LOG_ERR("invalid argument: target is NULL");
		return PMREP_E_INVAL;
	}
	int ret = repl_timeout_check(timeout_ms, "pmrep_target_process");
	if (ret)
		return ret;
	struct epoll_event evs[2 * TARGET_MAX_SESSIONS + 1];
	int n;
	do {
		n = epoll_wait(t->epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])),
				wait_limit(t, timeout_ms));
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return PMREP_ERR_PROVIDER(errno, "epoll_wait");

	bool busy[TARGET_MAX_SESSIONS] = { false };
	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 == TAG_EP) {
			for (;;) {
				struct pmrep_conn_req *req = NULL;
				int ret = pmrep_ep_next_conn_req(t->ep, t->conn_cfg, &req);
				if (ret == PMREP_E_NO_EVENT)
					break;
				if (ret == PMREP_E_MALFORMED) {
					t->stats.sessions_refused++;
					t->stats.last_refusal = ret;
					continue;
				}
				if (ret) {
					PMREP_LOG_ERR("taking a connection request: %s",
							pmrep_err_to_str(ret));
					break;
				}
				accept_one(t, req);
			}
		} else if (evs[i].data.u64 < TARGET_MAX_SESSIONS) {
			busy[evs[i].data.u64] = true;
		}
	}
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++) {
		struct session *s = &t->s[i];
		if (s->state == S_FREE)
			continue;
		if (busy[i])
			session_progress(t, s);
		if ((s->state == S_WAIT_AUTH || s->state == S_CLOSING) &&
				repl_left_ms(s->deadline) == 0) {
			if (s->state == S_WAIT_AUTH) {
				t->stats.sessions_refused++;
				t->stats.last_refusal = PMREP_E_TIMEOUT;
				PMREP_LOG_ERR("initiator refused: no valid AUTH within %d ms",
						t->cfg.timeout_ms);
			}
			session_close(t, s, "handshake timed out");
		}
	}
	return n == 0 ? PMREP_E_TIMEOUT : 0;
}
