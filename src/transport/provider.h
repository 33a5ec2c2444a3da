/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * provider.h -- the contract between the generic transport objects and a
 * provider (verbs, tcp). The generic files (peer.c, conn.c, mr.c, ops.c …)
 * validate arguments, check ranges and usage, log, and then call through
 * peer->ops; a provider never re-validates what the generic layer checked.
 *
 * Each provider allocates its objects with the generic struct as the FIRST
 * member (struct verbs_conn { struct pmrep_conn base; … }), so a provider
 * casts the generic pointer back to its own type. The generic *_delete
 * functions call the provider's delete, which frees the whole object.
 */
#ifndef PMREP_TRANSPORT_PROVIDER_H
#define PMREP_TRANSPORT_PROVIDER_H

#include <stdatomic.h>
#include <sys/socket.h>
#include <pmrep/transport.h>

struct pmrep_provider_ops;

struct pmrep_peer {
	const struct pmrep_provider_ops *ops;
	enum pmrep_provider provider;
	uint32_t caps;			/* PMREP_CAP_* probed once */
	int async_fd;			/* owned by the provider */
	atomic_int nobjects;		/* objects made from it (delete: BUSY) */
	atomic_bool device_removed;	/* its RDMA device was removed (T22) */
};

struct pmrep_conn_cfg {
	int timeout_ms;
	uint32_t sq_size, rq_size, cq_size, rcq_size;
	bool shared_comp_channel;
	struct pmrep_comp_channel *comp_channel;	/* not owned */
	unsigned connect_retries;
	int retry_backoff_ms;
	struct pmrep_srq *srq;				/* not owned */
	/* TLS 1.3 with an external PSK (tcp provider; tcp_tls.c): off when
	 * neither side is set; the PSK is wiped when the cfg (or a copy held
	 * by a request / conn) is deleted, and by the conn once open */
	bool tls;
	uint8_t tls_psk[PMREP_TLS_PSK_MAX];		/* client */
	size_t tls_psk_len;
	char tls_identity[PMREP_TLS_IDENTITY_MAX + 1];	/* client */
	pmrep_tls_psk_find_fn *tls_find;		/* server */
	void *tls_find_arg;
};

/* the defaults of pmrep_conn_cfg_new (used when a NULL cfg is passed) */
extern const struct pmrep_conn_cfg pmrep_conn_cfg_default;

struct pmrep_mr_local {
	struct pmrep_peer *peer;
	void *ptr;
	size_t size;
	int usage;
	uint64_t raddr;			/* address the remote side names */
	uint32_t rkey;
	pmrep_persist_fn *persist;	/* NULL: none attached */
	void *persist_ctx;		/* its context (not owned) */
};

struct pmrep_mr_remote {
	enum pmrep_provider provider;
	uint64_t raddr;
	uint64_t size;
	uint32_t rkey;
	int usage;
};

struct pmrep_ep {
	struct pmrep_peer *peer;
	int fd;
	uint16_t port;
};

struct pmrep_conn_req {
	struct pmrep_peer *peer;
	struct pmrep_conn_cfg cfg;
	bool passive;
	uint8_t pdata_len;
	uint8_t pdata[PMREP_PDATA_ACCEPT_MAX];	/* initiator's, passive side */
	/* passive side: the initiator's address as the provider saw it;
	 * ss_family AF_UNSPEC (0): not known */
	struct sockaddr_storage src;
	/* passive side, TLS on: the PSK identity the handshake accepted and
	 * the local "host:port" it arrived at (tcp_tls.c); "" without TLS */
	char tls_identity[PMREP_TLS_IDENTITY_MAX + 1];
	char tls_local[64];
	/* passive side, set by pmrep_conn_req_reject: the provider's delete
	 * rejects so that the initiator retries (tcp: REJECT(not listening);
	 * verbs: a REJ without pmrep's marker) instead of a final reject */
	bool reject_retry;
};

struct pmrep_cq {
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;	/* NULL for an SRQ's receive CQ */
	bool is_rcq;
	bool shared_channel;		/* the channel is not the CQ's own */
	int fd;				/* channel fd */
};

struct pmrep_conn {
	struct pmrep_peer *peer;
	struct pmrep_conn_cfg cfg;
	int event_fd;
	int comp_fd;			/* shared channel's fd, or -1 */
	struct pmrep_cq *cq;
	struct pmrep_cq *rcq;		/* NULL: none */
	/* a terminal event was reported; atomic: the thread that reads
	 * events and the one that posts may differ */
	atomic_bool terminal;
	bool remote_direct_write_to_pmem;
	enum pmrep_flush_method flush_method;
	uint8_t pdata_len;
	uint8_t pdata[PMREP_PDATA_ACCEPT_MAX];	/* peer's, our copy */
	/* verbs: the RC QP's retransmission timing (T23); tcp: none */
	bool has_rc_timing;
	struct pmrep_conn_rc_timing rc_timing;
	/* the named cause of a failed connect / a lost conn (PMREP_E_TLS),
	 * 0: none known; set by the provider before the terminal event */
	atomic_int cause;
	/* windows bound to it, not yet invalidated (mw.c, under its lock;
	 * NULL in a zeroed conn) */
	struct pmrep_mw *mws;
};

/*
 * A memory window (mw.c; the provider's struct embeds it first and is
 * allocated with malloc / calloc: the generic layer frees it).
 */
struct pmrep_mw {
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;	/* NULL once invalidated by the conn's delete */
	struct pmrep_mr_local *mr;
	uint32_t rkey;			/* what the remote side names */
	int usage;			/* PMREP_MR_USAGE_* it gives */
	struct pmrep_mw *next, *prev;	/* conn->mws */
};

struct pmrep_comp_channel {
	struct pmrep_peer *peer;
	int fd;
	atomic_int ncqs;		/* CQs attached (delete: BUSY) */
};

struct pmrep_srq {
	struct pmrep_peer *peer;
	struct pmrep_cq *rcq;
	atomic_int nconns;		/* conns using it (delete: BUSY) */
};

/* What a posting op asks of the provider; ranges are already checked. */
struct pmrep_op_args {
	struct pmrep_conn *conn;
	enum pmrep_op op;
	struct pmrep_mr_local *local;		/* src / dst (NULL: flush) */
	size_t local_offset;
	const struct pmrep_mr_remote *remote;	/* NULL: send / recv */
	size_t remote_offset;
	size_t len;
	bool with_imm;
	uint32_t imm;
	uint8_t atomic_value[8];
	enum pmrep_flush_type flush_type;
	bool signaled;
	/* PMREP_F_MORE: the provider may hold the request and post it with
	 * the next one (a hint: posting at once is correct too) */
	bool more;
	const void *op_context;
};

struct pmrep_provider_ops {
	/* peer: free the provider's part and the peer itself */
	int (*peer_delete)(struct pmrep_peer *peer);
	int (*peer_handle_async_event)(struct pmrep_peer *peer,
			enum pmrep_async_event *event);
	/* DEVX device events (pmrep_peer_devx_*): optional -- NULL means the
	 * provider has none and the generic layer returns PMREP_E_NOSUPP */
	int (*peer_devx_subscribe)(struct pmrep_peer *peer,
			const uint16_t *event_types, size_t n, uint64_t cookie);
	int (*peer_get_devx_fd)(const struct pmrep_peer *peer, int *fd);
	int (*peer_handle_devx_event)(struct pmrep_peer *peer,
			enum pmrep_async_event *event, uint64_t *cookie);

	int (*mr_reg)(struct pmrep_peer *peer, void *ptr, size_t size,
			int usage, struct pmrep_mr_local **mr);
	int (*mr_dereg)(struct pmrep_mr_local *mr);

	int (*comp_channel_new)(struct pmrep_peer *peer,
			struct pmrep_comp_channel **ch);
	int (*comp_channel_delete)(struct pmrep_comp_channel *ch);
	int (*comp_channel_wait)(struct pmrep_comp_channel *ch, int timeout_ms,
			struct pmrep_cq **cq, struct pmrep_conn **conn);

	int (*srq_new)(struct pmrep_peer *peer, uint32_t rq_size,
			uint32_t rcq_size, struct pmrep_srq **srq);
	int (*srq_delete)(struct pmrep_srq *srq);
	int (*srq_recv)(struct pmrep_srq *srq, struct pmrep_mr_local *dst,
			size_t offset, size_t len, const void *op_context);

	int (*ep_listen)(struct pmrep_peer *peer, const char *addr,
			const char *port, struct pmrep_ep **ep);
	int (*ep_shutdown)(struct pmrep_ep *ep);
	/* PMREP_E_NO_EVENT when nothing is pending; never blocks */
	int (*ep_next_conn_req)(struct pmrep_ep *ep,
			const struct pmrep_conn_cfg *cfg,
			struct pmrep_conn_req **req);

	int (*conn_req_new)(struct pmrep_peer *peer, const char *addr,
			const char *port, const struct pmrep_conn_cfg *cfg,
			struct pmrep_conn_req **req);
	int (*conn_req_recv)(struct pmrep_conn_req *req,
			struct pmrep_mr_local *dst, size_t offset, size_t len,
			const void *op_context);
	/* consumes req (frees it) on every path */
	int (*conn_req_connect)(struct pmrep_conn_req *req,
			const struct pmrep_conn_private_data *pdata,
			struct pmrep_conn **conn);
	int (*conn_req_delete)(struct pmrep_conn_req *req);

	/* never blocks: PMREP_E_NO_EVENT; the generic layer enforces the
	 * exactly-once terminal event */
	int (*conn_next_event)(struct pmrep_conn *conn,
			enum pmrep_conn_event *event);
	int (*conn_wait)(struct pmrep_conn *conn, int timeout_ms,
			struct pmrep_cq **cq, bool *is_rcq);
	int (*conn_disconnect)(struct pmrep_conn *conn);
	int (*conn_delete)(struct pmrep_conn *conn);

	int (*cq_wait)(struct pmrep_cq *cq, int timeout_ms);
	/* optional: NULL -- the generic layer polls the CQs' fds and takes
	 * each readable one's event with cq_wait(cq, 0) */
	int (*cq_wait_any)(struct pmrep_cq *const *cqs, int n, int timeout_ms);
	int (*cq_get_completions)(struct pmrep_cq *cq,
			struct pmrep_completion *out, int max, int *n);

	/* one entry for read, write(+imm), atomic write, flush, send(+imm), recv */
	int (*post)(const struct pmrep_op_args *args);

	/*
	 * Memory windows. mw_bind: a window over the whole of `mr` giving
	 * `usage` (checked: non-zero, a subset of the region's remote usages,
	 * the region has MW_BIND, same peer) to the remote side of `conn`;
	 * sets base.rkey / usage / mr / conn / peer. mw_invalidate: after it
	 * returns nothing reaches the region through the window; releases the
	 * provider's resources, never frees the struct; called exactly once
	 * per window (the conn may be lost or closed, never deleted yet).
	 * Optional: NULL means PMREP_E_NOSUPP.
	 */
	int (*mw_bind)(struct pmrep_conn *conn, struct pmrep_mr_local *mr,
			int usage, struct pmrep_mw **mw);
	int (*mw_invalidate)(struct pmrep_mw *mw);
};

/* pmrep_conn_delete: invalidate the windows still bound to `conn` (mw.c) */
void pmrep_mw_conn_deleted(struct pmrep_conn *conn);

extern const struct pmrep_provider_ops pmrep_verbs_ops;
extern const struct pmrep_provider_ops pmrep_tcp_ops;

/* provider-specific peer constructors (the generic peer.c dispatches);
 * struct ibv_context is only named here: <pmrep/verbs.h> has rdma-core */
struct ibv_context;
int pmrep_verbs_peer_new(struct ibv_context *ibv_ctx, struct pmrep_peer **peer);
/* the same on a context librdmacm handed out (pmrep_utils_get_ibv_context):
 * pmrep lets go of it itself when its device is removed (T22) */
int pmrep_verbs_peer_new_cm(struct ibv_context *ibv_ctx, struct pmrep_peer **peer);
int pmrep_tcp_peer_new(struct pmrep_peer **peer);

/* wait for `fd` to become readable up to timeout_ms (-1 forever):
 * 0 ready, PMREP_E_TIMEOUT, PMREP_E_PROVIDER (poll failed) */
int pmrep_fd_wait_readable(int fd, int timeout_ms);

#endif /* PMREP_TRANSPORT_PROVIDER_H */
