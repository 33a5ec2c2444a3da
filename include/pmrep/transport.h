/* SPDX-License-Identifier: BSD-3-Clause */
/* Past ~800 lines: the transport's whole API, a man page per function. */
/*
 * pmrep/transport.h -- the transport layer: peer, peer configuration,
 * endpoint, connection configuration, connection request, connection,
 * memory regions (local and remote), completion queues, completion
 * channels, shared receive queues and the RDMA-style operations.
 *
 * Two providers implement this API with the same semantics: `verbs`
 * (rdma-core) and `tcp` (plain sockets, for machines without RDMA). A
 * provider is chosen once per peer; every object made from a peer uses it.
 *
 * This header needs no rdma-core header: the few declarations that take
 * or return rdma-core types (a peer on an ibv_context you opened,
 * pmrep_utils_get_ibv_context) are in <pmrep/verbs.h>, which nothing
 * includes for you. Completions carry pmrep's own status
 * (enum pmrep_wc_status).
 *
 * Conventions (all functions):
 * - return 0 or a negative PMREP_E_* code; every error is also logged;
 * - PMREP_E_INVAL for a NULL pointer argument that must not be NULL;
 * - no function blocks unless its name says it waits (`*_wait*`), and every
 *   wait takes a time limit in milliseconds (-1 = no limit);
 * - constructors are `x_new(…, &out)`, destructors `x_delete(&p)`: they
 *   accept *p == NULL and set *p = NULL (even on error, when the object
 *   was freed anyway, as documented per function);
 * - every fd pmrep hands out is O_NONBLOCK | O_CLOEXEC and owned by the
 *   object that handed it out: deleting the object closes it, so remove it
 *   from your epoll set first. Never close it yourself.
 * Thread safety: one object may be used by one thread at a time, unless
 * a function says otherwise. Different objects may be used concurrently.
 */
#ifndef PMREP_TRANSPORT_H
#define PMREP_TRANSPORT_H

#include <sys/socket.h>

#include <pmrep/base.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pmrep_peer;
struct pmrep_peer_cfg;
struct pmrep_ep;
struct pmrep_conn_cfg;
struct pmrep_conn_req;
struct pmrep_conn;
struct pmrep_mr_local;
struct pmrep_mr_remote;
struct pmrep_mw;
struct pmrep_cq;
struct pmrep_comp_channel;
struct pmrep_srq;

/* ------------------------------------------------------------------ peer */

enum pmrep_provider {
	PMREP_PROVIDER_VERBS = 0,	/* rdma-core: librdmacm + libibverbs */
	PMREP_PROVIDER_TCP = 1,		/* sockets, same semantics */
};

/* Capabilities a peer probes once at creation (pmrep_peer_get_caps). */
#define PMREP_CAP_ODP			(1u << 0) /* on-demand paging for RC write/read */
#define PMREP_CAP_NATIVE_ATOMIC_WRITE	(1u << 1) /* IBV_QP_EX_WITH_ATOMIC_WRITE */
#define PMREP_CAP_NATIVE_FLUSH		(1u << 2) /* RDMA FLUSH (ibv_wr_flush) */

/*
 * pmrep_peer_new_tcp -- a peer of the tcp provider. It has no device; its
 * capabilities are PMREP_CAP_NATIVE_ATOMIC_WRITE | PMREP_CAP_NATIVE_FLUSH
 * (the target applies both itself).
 * Errors: PMREP_E_INVAL, PMREP_E_NOMEM.
 */
PMREP_API int pmrep_peer_new_tcp(struct pmrep_peer **peer_ptr);

/*
 * pmrep_peer_open -- open a peer for the IP address `addr` (local for a
 * listener, remote for an initiator): verbs when an RDMA device owns or
 * reaches it, tcp otherwise. The environment variable PMREP_PROVIDER=verbs
 * or =tcp forces one (verbs forced with no device: PMREP_E_NOSUPP).
 * Errors: those of pmrep_peer_new (<pmrep/verbs.h>) / pmrep_peer_new_tcp,
 * PMREP_E_INVAL
 * (bad PMREP_PROVIDER value).
 */
PMREP_API int pmrep_peer_open(const char *addr, bool is_local,
		struct pmrep_peer **peer_ptr);

/*
 * pmrep_peer_open_verbs -- pmrep_peer_open with the verbs provider only,
 * whatever PMREP_PROVIDER says: e.g. to make a peer again once an RDMA
 * device removed under the old one is back (T22), without falling back
 * to tcp meanwhile.
 * Errors: PMREP_E_NOSUPP (no RDMA device owns / reaches `addr` now), those
 * of pmrep_utils_get_ibv_context and pmrep_peer_new (<pmrep/verbs.h>).
 */
PMREP_API int pmrep_peer_open_verbs(const char *addr, bool is_local,
		struct pmrep_peer **peer_ptr);

/*
 * pmrep_peer_delete -- free the peer (deallocates its PD, closes its async
 * fd). All objects made from the peer must be deleted first.
 * Errors: PMREP_E_BUSY (objects still use the peer; nothing freed),
 * PMREP_E_PROVIDER (ibv_dealloc_pd failed; the peer is freed anyway).
 */
PMREP_API int pmrep_peer_delete(struct pmrep_peer **peer_ptr);

/* pmrep_peer_get_provider -- which provider the peer uses. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_peer_get_provider(const struct pmrep_peer *peer,
		enum pmrep_provider *provider);

/* pmrep_peer_get_caps -- PMREP_CAP_* bits probed at creation. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_peer_get_caps(const struct pmrep_peer *peer,
		uint32_t *caps);

/*
 * pmrep_peer_get_device_removed -- *removed = true once the peer's RDMA
 * device was removed (T22). pmrep learns it from an rdma_cm
 * DEVICE_REMOVAL event on any conn or endpoint of the device (read by
 * pmrep_conn_next_event, a CQ wait, pmrep_ep_next_conn_req, or found by
 * pmrep_conn_delete), from IBV_EVENT_DEVICE_FATAL
 * (pmrep_peer_handle_async_event), or when a connection attempt finds the
 * device gone from the device list; it then releases at once every verbs
 * object of every peer on that device -- QPs, CQs, completion channels,
 * SRQs, MRs, PDs, rdma_cm ids -- so that the kernel can complete the
 * removal while the process lives. The pmrep objects stay valid: conns
 * report PMREP_CONN_LOST and refuse posts and CQ calls with
 * PMREP_E_CONN_LOST; endpoints, the peer and its other objects refuse
 * new work with PMREP_E_DEVICE_REMOVED; the async fd is -1 from then on
 * (librdmacm closes its context of the device). Delete them as usual
 * (nothing is destroyed twice) and open a new peer, by address, once the
 * device is back (pmrep_peer_open_verbs). Always
 * false for tcp. Errors: PMREP_E_INVAL. Thread-safe.
 */
PMREP_API int pmrep_peer_get_device_removed(const struct pmrep_peer *peer,
		bool *removed);

/* Device (async) events, as reported by pmrep_peer_handle_async_event. */
enum pmrep_async_event {
	PMREP_ASYNC_NONE = 0,		/* nothing pending */
	PMREP_ASYNC_PORT_ACTIVE,
	PMREP_ASYNC_PORT_ERROR,
	PMREP_ASYNC_QP_FATAL,		/* the affected connection now reports LOST */
	PMREP_ASYNC_CQ_ERROR,		/* connections on that CQ now report LOST */
	PMREP_ASYNC_DEVICE_FATAL,	/* every connection of the peer reports LOST */
	PMREP_ASYNC_EVENTS_LOST,	/* DEVX channel overflowed: re-query state */
	PMREP_ASYNC_OTHER,
};

/*
 * pmrep_peer_get_async_fd -- the fd that becomes readable when the device
 * has an async event (verbs: ibv_context's async_fd, set O_NONBLOCK; tcp: an
 * eventfd that never fires). Owned by the ibv_context / peer: do not close.
 * Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_peer_get_async_fd(const struct pmrep_peer *peer, int *fd);

/*
 * pmrep_peer_handle_async_event -- read one async event without blocking,
 * act on it (connections affected will report PMREP_CONN_LOST) and
 * acknowledge it. *event is PMREP_ASYNC_NONE when nothing was pending.
 * Errors: PMREP_E_INVAL, PMREP_E_PROVIDER.
 */
PMREP_API int pmrep_peer_handle_async_event(struct pmrep_peer *peer,
		enum pmrep_async_event *event);

/*
 * Device events over a DEVX event channel (mlx5 devices only).
 *
 * An mlx5 device also delivers device events (numbered by the device
 * specification, 0..255) to a DEVX event channel the application subscribes
 * on. A verbs peer has at most one such channel: it is created at the first
 * pmrep_peer_devx_subscribe and destroyed by pmrep_peer_delete. The kernel
 * accepts subscriptions only on a context opened with DEVX
 * (mlx5dv_open_device with MLX5DV_CONTEXT_FLAGS_DEVX, passed to
 * pmrep_peer_new of <pmrep/verbs.h>); the contexts librdmacm hands out are
 * not.
 * These three functions may be called from any thread, concurrently with
 * each other and with calls on the peer's other objects, but not
 * concurrently with pmrep_peer_delete.
 */
#define PMREP_DEVX_SUBSCRIBE_MAX 16	/* event types per subscribe call */

/*
 * pmrep_peer_devx_subscribe -- subscribe to the unaffiliated device events
 * `event_types[0..n-1]` (device event numbers, each <= 255); each one that
 * occurs is reported by pmrep_peer_handle_devx_event with `cookie`.
 * Creates the peer's DEVX event channel at the first call (events carry
 * their data); a later call adds subscriptions to the same channel.
 * Errors: PMREP_E_INVAL (NULL peer / event_types, n == 0,
 * n > PMREP_DEVX_SUBSCRIBE_MAX, an event number > 255);
 * PMREP_E_NOSUPP (tcp peer; a device that is not mlx5 -- mlx5dv_is_supported
 * false; or a device without DEVX -- the channel creation failed with
 * EOPNOTSUPP / EPROTONOSUPPORT; logged, nothing created);
 * PMREP_E_PROVIDER (mlx5dv_devx_create_event_channel or
 * mlx5dv_devx_subscribe_devx_event failed -- EINVAL from the latter: the
 * context was not opened with DEVX, or the device does not offer one of
 * the event types -- or setting the fd's flags failed: pmrep_err_errno()).
 * On an error, a channel this call created is destroyed again; an earlier
 * channel and its subscriptions stay.
 */
PMREP_API int pmrep_peer_devx_subscribe(struct pmrep_peer *peer,
		const uint16_t *event_types, size_t n, uint64_t cookie);

/*
 * pmrep_peer_get_devx_fd -- the DEVX event channel's fd: readable while an
 * event (or an events-lost notice) is pending. O_NONBLOCK | O_CLOEXEC,
 * owned by the peer and closed by pmrep_peer_delete (remove it from your
 * epoll set first; never close it yourself).
 * Errors: PMREP_E_INVAL (NULL argument), PMREP_E_NOSUPP (tcp peer, or not
 * an mlx5 device), PMREP_E_STATE (no successful pmrep_peer_devx_subscribe
 * yet: there is no channel).
 */
PMREP_API int pmrep_peer_get_devx_fd(const struct pmrep_peer *peer, int *fd);

/*
 * pmrep_peer_handle_devx_event -- read one event from the DEVX channel
 * without blocking (mlx5dv_devx_get_event). *event is:
 * - PMREP_ASYNC_NONE: nothing pending (*cookie = 0);
 * - PMREP_ASYNC_OTHER: a subscribed event occurred; *cookie is the cookie
 *   of its subscription. pmrep does not act on it;
 * - PMREP_ASYNC_EVENTS_LOST: the kernel dropped events (EOVERFLOW; *cookie
 *   = 0). pmrep re-queries every port of the device (ibv_query_port): if
 *   one is neither ACTIVE nor ACTIVE_DEFER, every connection on the device
 *   reports PMREP_CONN_LOST. Re-query anything else you track yourself.
 * Errors: PMREP_E_INVAL (NULL argument), PMREP_E_NOSUPP (tcp peer, or not
 * an mlx5 device), PMREP_E_STATE (no channel yet), PMREP_E_PROVIDER
 * (mlx5dv_devx_get_event failed otherwise, errno kept; or, with *event =
 * PMREP_ASYNC_EVENTS_LOST, ibv_query_port failed: the port state is
 * unknown, so the connections were marked lost as for a port that is down).
 */
PMREP_API int pmrep_peer_handle_devx_event(struct pmrep_peer *peer,
		enum pmrep_async_event *event, uint64_t *cookie);

/* ------------------------------------------------------- peer configuration */

/*
 * A peer configuration describes what one side tells the other about its
 * persistence domain. Its descriptor (versioned, little-endian) travels in
 * connection private data.
 */
#define PMREP_PEER_CFG_DESC_SIZE 8	/* bytes of a serialised descriptor */

/* pmrep_peer_cfg_new -- a configuration with direct_write_to_pmem = false.
 * Errors: PMREP_E_INVAL, PMREP_E_NOMEM. */
PMREP_API int pmrep_peer_cfg_new(struct pmrep_peer_cfg **cfg_ptr);
/* pmrep_peer_cfg_delete -- free it (NULL ok). Returns 0 or PMREP_E_INVAL. */
PMREP_API int pmrep_peer_cfg_delete(struct pmrep_peer_cfg **cfg_ptr);
/*
 * pmrep_peer_cfg_set_direct_write_to_pmem -- declare that RDMA writes that
 * reached this node's memory controller are in the persistence domain (no
 * DDIO / eADR-like platform). pmrep cannot detect this; the operator states
 * it. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_peer_cfg_set_direct_write_to_pmem(
		struct pmrep_peer_cfg *cfg, bool supported);
/* pmrep_peer_cfg_get_direct_write_to_pmem -- the flag. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_peer_cfg_get_direct_write_to_pmem(
		const struct pmrep_peer_cfg *cfg, bool *supported);
/*
 * pmrep_peer_cfg_get_descriptor -- write the PMREP_PEER_CFG_DESC_SIZE-byte
 * descriptor to `desc`. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_peer_cfg_get_descriptor(const struct pmrep_peer_cfg *cfg,
		void *desc);
/*
 * pmrep_peer_cfg_from_descriptor -- parse `size` bytes at `desc`.
 * Errors: PMREP_E_INVAL (NULL), PMREP_E_MALFORMED (too short, bad magic,
 * unknown version, reserved bits set), PMREP_E_NOMEM.
 */
PMREP_API int pmrep_peer_cfg_from_descriptor(const void *desc, size_t size,
		struct pmrep_peer_cfg **cfg_ptr);

/* ----------------------------------------------------------- private data */

/* At most this many bytes of private data go with a connect / an accept. */
#define PMREP_PDATA_CONNECT_MAX 56
#define PMREP_PDATA_ACCEPT_MAX 196

/* Private data: `len` bytes at `ptr`; len == 0 means "none" (ptr NULL). */
struct pmrep_conn_private_data {
	const void *ptr;
	uint8_t len;
};

/* -------------------------------------------------------- connection cfg */

/*
 * pmrep_conn_cfg_new -- defaults: timeout 1000 ms, sq 10, rq 10, cq 10,
 * rcq 0 (no separate receive CQ), no shared channel, connect retries 0,
 * retry backoff 100 ms (doubling, capped at 2 s), no SRQ.
 * Errors: PMREP_E_INVAL, PMREP_E_NOMEM.
 */
PMREP_API int pmrep_conn_cfg_new(struct pmrep_conn_cfg **cfg_ptr);
/* pmrep_conn_cfg_delete -- free it (NULL ok). Returns 0 or PMREP_E_INVAL. */
PMREP_API int pmrep_conn_cfg_delete(struct pmrep_conn_cfg **cfg_ptr);
/*
 * pmrep_conn_cfg_set_timeout -- the limit (ms, > 0) for address and route
 * resolution and for the connect handshake; pmrep_conn_delete also drains
 * in-flight requests for at most this long. tcp: also the conn's liveness
 * period L = max(timeout_ms, 500 ms): a peer that sent nothing for L
 * (peers heartbeat every quarter of it) is LOST, idle or with requests in
 * flight; TCP_USER_TIMEOUT and keepalive are derived from L
 * (src/transport/tcp/README.md "Liveness"). verbs: the local ACK timeout
 * is T/4 and the initiator's retry count follows from T (T23;
 * pmrep_conn_get_rc_timing), and an established conn's event fd ticks
 * every T/4: a QP found in error is LOST, an idle one sends a zero-length
 * RDMA WRITE as its heartbeat, so a dead peer of an idle conn is LOST
 * within about 1.5 T while the application runs the conn's events.
 * Errors: PMREP_E_INVAL (NULL cfg, timeout_ms <= 0; the old value stays).
 * Not thread-safe against other use of the same cfg.
 */
PMREP_API int pmrep_conn_cfg_set_timeout(struct pmrep_conn_cfg *cfg, int timeout_ms);
/* pmrep_conn_cfg_get_timeout -- the timeout in ms. Errors: PMREP_E_INVAL (NULL). */
PMREP_API int pmrep_conn_cfg_get_timeout(const struct pmrep_conn_cfg *cfg, int *timeout_ms);
/*
 * pmrep_conn_cfg_set_sq_size -- send queue depth in work requests, 1..65536.
 * Errors: PMREP_E_INVAL (NULL, out of range; the old value stays).
 */
PMREP_API int pmrep_conn_cfg_set_sq_size(struct pmrep_conn_cfg *cfg, uint32_t sq_size);
/* pmrep_conn_cfg_get_sq_size -- send queue depth. Errors: PMREP_E_INVAL (NULL). */
PMREP_API int pmrep_conn_cfg_get_sq_size(const struct pmrep_conn_cfg *cfg, uint32_t *sq_size);
/*
 * pmrep_conn_cfg_set_rq_size -- receive queue depth in work requests,
 * 1..65536. Errors: PMREP_E_INVAL (NULL, out of range; old value stays).
 */
PMREP_API int pmrep_conn_cfg_set_rq_size(struct pmrep_conn_cfg *cfg, uint32_t rq_size);
/* pmrep_conn_cfg_get_rq_size -- receive queue depth. Errors: PMREP_E_INVAL (NULL). */
PMREP_API int pmrep_conn_cfg_get_rq_size(const struct pmrep_conn_cfg *cfg, uint32_t *rq_size);
/*
 * pmrep_conn_cfg_set_cq_size -- CQ depth in completions, 1..65536.
 * Errors: PMREP_E_INVAL (NULL, out of range; the old value stays).
 */
PMREP_API int pmrep_conn_cfg_set_cq_size(struct pmrep_conn_cfg *cfg, uint32_t cq_size);
/* pmrep_conn_cfg_get_cq_size -- CQ depth. Errors: PMREP_E_INVAL (NULL). */
PMREP_API int pmrep_conn_cfg_get_cq_size(const struct pmrep_conn_cfg *cfg, uint32_t *cq_size);
/*
 * pmrep_conn_cfg_set_rcq_size -- depth of a separate receive CQ, 0..65536;
 * 0 (the default) means receives complete on the main CQ.
 * Errors: PMREP_E_INVAL (NULL, > 65536; the old value stays).
 */
PMREP_API int pmrep_conn_cfg_set_rcq_size(struct pmrep_conn_cfg *cfg, uint32_t rcq_size);
/* pmrep_conn_cfg_get_rcq_size -- receive CQ depth (0: none). Errors: PMREP_E_INVAL (NULL). */
PMREP_API int pmrep_conn_cfg_get_rcq_size(const struct pmrep_conn_cfg *cfg, uint32_t *rcq_size);
/*
 * pmrep_conn_cfg_set_shared_comp_channel -- true: the conn's CQ and RCQ
 * share one completion channel owned by the conn; wait with
 * pmrep_conn_wait on pmrep_conn_get_completion_fd (pmrep_cq_wait then
 * returns PMREP_E_SHARED_CHANNEL). Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_conn_cfg_set_shared_comp_channel(struct pmrep_conn_cfg *cfg, bool shared);
/* pmrep_conn_cfg_get_shared_comp_channel -- the flag. Errors: PMREP_E_INVAL (NULL). */
PMREP_API int pmrep_conn_cfg_get_shared_comp_channel(const struct pmrep_conn_cfg *cfg, bool *shared);
/*
 * pmrep_conn_cfg_set_comp_channel -- attach the CQs of conns made with this
 * cfg to `channel`, shared across connections (NULL: none). The channel is
 * not owned by the cfg or the conns and must outlive every conn using it;
 * wait with pmrep_comp_channel_wait. Errors: PMREP_E_INVAL (NULL cfg).
 */
PMREP_API int pmrep_conn_cfg_set_comp_channel(struct pmrep_conn_cfg *cfg, struct pmrep_comp_channel *channel);
/*
 * pmrep_conn_cfg_set_connect_retries -- when nothing listens yet, the
 * active side retries up to `retries` (0..1000) more times, waiting
 * `backoff_ms` (> 0) before the first retry, doubled each time up to
 * 2000 ms; then the conn reports PMREP_CONN_UNREACHABLE. Each attempt is
 * limited by the cfg timeout, and all of them with their backoffs by
 * timeout_ms * (retries + 1).
 * Errors: PMREP_E_INVAL (NULL, out of range; old values stay).
 */
PMREP_API int pmrep_conn_cfg_set_connect_retries(struct pmrep_conn_cfg *cfg, unsigned retries, int backoff_ms);
/*
 * pmrep_conn_cfg_set_srq -- receives of conns made with this cfg come from
 * `srq` (NULL: the conn's own receive queue). Not owned; must outlive the
 * conns. Errors: PMREP_E_INVAL (NULL cfg).
 */
PMREP_API int pmrep_conn_cfg_set_srq(struct pmrep_conn_cfg *cfg, struct pmrep_srq *srq);

/* ------------------------------------------------ TLS (tcp provider only) */

/*
 * TLS 1.3 with an external pre-shared key (RFC 8446 section 2.2, RFC 9258
 * terms: an "external PSK" with an identity), on the tcp provider. When a
 * conn cfg has TLS on, the tcp byte stream of every conn made with it --
 * the HELLO / ACCEPT of the connection handshake and every frame after --
 * runs inside one TLS 1.3 session keyed by the PSK (key exchange
 * psk_dhe_ke: the PSK authenticates, an (EC)DHE share gives forward
 * secrecy; psk_ke alone is never allowed; no certificates, no session
 * tickets, no 0-RTT). Cipher suites: TLS_AES_128_GCM_SHA256 and
 * TLS_CHACHA20_POLY1305_SHA256 (both hash SHA-256, the PSK's hash).
 *
 * TLS on / off is each end's own configuration and never negotiated in
 * the clear: a TLS client refuses a plaintext listener, a TLS listener a
 * plaintext client; a failed handshake (wrong PSK, unknown identity, no
 * TLS on the other end) fails the connect (REJECTED, not retried) and a
 * record that fails authentication later ends the conn (LOST); in both
 * cases pmrep_conn_get_failure reports PMREP_E_TLS and an error line names
 * the cause. A plaintext client that meets a TLS listener is REJECTED
 * with PMREP_E_TLS too (it recognises the TLS alert).
 *
 * verbs: there is no TLS; a cfg with TLS on is refused there
 * (PMREP_E_NOSUPP from pmrep_conn_req_new / pmrep_ep_next_conn_req). To
 * protect RDMA traffic on the wire use the fabric's own protection (IPsec
 * for RoCEv2, MACsec on the link): RoCE's ICRC is a CRC anyone on the path
 * can recompute, not authentication.
 */
#define PMREP_TLS_PSK_MIN 32		/* PSK bytes, at least */
#define PMREP_TLS_PSK_MAX 64		/* ... at most */
#define PMREP_TLS_IDENTITY_MAX 128	/* identity bytes, at most */

/*
 * pmrep_tls_psk_find_fn -- the listener's PSK look-up: `identity`
 * (`identity_len` bytes, not NUL-terminated, as the client sent it) of a
 * client connecting to `local` (the accepted socket's local address as a
 * numeric "host:port", IPv6 as "[addr]:port": where the client's bytes
 * arrived). Write the PSK to `psk` (room for PMREP_TLS_PSK_MAX bytes) and
 * its length (PMREP_TLS_PSK_MIN..PMREP_TLS_PSK_MAX) to *psk_len and return
 * 0 to accept the identity; any other value refuses it (the handshake
 * fails). An identity longer than PMREP_TLS_IDENTITY_MAX bytes or with a
 * NUL byte is refused before `fn` is called. Called from
 * pmrep_ep_next_conn_req, in its thread, while it runs; must not call
 * pmrep functions on the endpoint. pmrep wipes `psk` after use.
 */
typedef int pmrep_tls_psk_find_fn(void *arg, const uint8_t *identity,
		size_t identity_len, const char *local, uint8_t *psk,
		size_t *psk_len);

/*
 * pmrep_conn_cfg_set_tls_psk -- the client side: conns made with this cfg
 * (pmrep_conn_req_new) run TLS 1.3 with `psk` (psk_len bytes,
 * PMREP_TLS_PSK_MIN..PMREP_TLS_PSK_MAX) offered under `identity` (a
 * NUL-terminated string of 1..PMREP_TLS_IDENTITY_MAX bytes). Turns TLS on.
 * The cfg keeps a copy (wiped by pmrep_conn_cfg_delete /
 * pmrep_conn_cfg_clear_tls; a conn wipes its own copy once it is open).
 * Errors: PMREP_E_INVAL (NULL argument, a length out of range; nothing
 * changes). Not thread-safe against other use of the same cfg.
 */
PMREP_API int pmrep_conn_cfg_set_tls_psk(struct pmrep_conn_cfg *cfg,
		const char *identity, const uint8_t *psk, size_t psk_len);
/*
 * pmrep_conn_cfg_set_tls_psk_find -- the listener side: requests taken
 * with this cfg (pmrep_ep_next_conn_req) first complete a TLS 1.3
 * handshake whose PSK `fn(arg, ...)` finds for the client's identity (see
 * pmrep_tls_psk_find_fn). Turns TLS on. `arg` is not owned; it must stay
 * valid while pmrep_ep_next_conn_req may run with this cfg. Errors:
 * PMREP_E_INVAL (NULL cfg or fn). Not thread-safe against other use of
 * the same cfg.
 */
PMREP_API int pmrep_conn_cfg_set_tls_psk_find(struct pmrep_conn_cfg *cfg,
		pmrep_tls_psk_find_fn *fn, void *arg);
/*
 * pmrep_conn_cfg_clear_tls -- TLS off for conns made with this cfg from
 * now on (the default); the PSK copy is wiped. Errors: PMREP_E_INVAL (NULL).
 */
PMREP_API int pmrep_conn_cfg_clear_tls(struct pmrep_conn_cfg *cfg);
/* pmrep_conn_cfg_get_tls -- whether TLS is on. Errors: PMREP_E_INVAL (NULL). */
PMREP_API int pmrep_conn_cfg_get_tls(const struct pmrep_conn_cfg *cfg, bool *on);

/* ---------------------------------------------------------------- endpoint */

/*
 * pmrep_ep_listen -- listen on IP `addr` and TCP/RDMA-CM port `port`
 * ("0" = any free port, see pmrep_ep_get_port). The endpoint owns one
 * rdma_cm event channel (verbs) or listening socket (tcp).
 * Errors: PMREP_E_INVAL, PMREP_E_PROVIDER (bind / listen failed, e.g.
 * EADDRINUSE: pmrep_err_errno()), PMREP_E_NOMEM.
 */
PMREP_API int pmrep_ep_listen(struct pmrep_peer *peer, const char *addr,
		const char *port, struct pmrep_ep **ep_ptr);
/*
 * pmrep_ep_shutdown -- stop listening and free the endpoint; closes its fd.
 * Connection requests not yet taken are rejected. Errors: PMREP_E_INVAL,
 * PMREP_E_PROVIDER (the endpoint is freed anyway).
 */
PMREP_API int pmrep_ep_shutdown(struct pmrep_ep **ep_ptr);
/* pmrep_ep_get_fd -- readable when a connection request may be pending.
 * Owned by the endpoint. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_ep_get_fd(const struct pmrep_ep *ep, int *fd);
/* pmrep_ep_get_port -- the port actually bound (host order). Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_ep_get_port(const struct pmrep_ep *ep, uint16_t *port);
/*
 * pmrep_ep_next_conn_req -- take the next incoming connection request
 * without blocking; `cfg` (NULL = defaults) sizes its queues. The request
 * event is copied and acknowledged before its id moves to its own event
 * channel. verbs: the request's CQs and QP do not exist yet -- they are
 * made by its first pmrep_conn_req_recv or by pmrep_conn_req_connect --
 * so a request rejected or deleted before that never had any (the cfg's
 * SRQ and comp channel are held by the request from now on all the same).
 * Errors: PMREP_E_INVAL, PMREP_E_NO_EVENT (nothing pending),
 * PMREP_E_MALFORMED (a request with bad private data: rejected, logged),
 * PMREP_E_TLS (tcp, TLS on: a handshake failed: dropped, logged),
 * PMREP_E_PROVIDER, PMREP_E_NOMEM, PMREP_E_DEVICE_REMOVED (the RDMA device
 * was removed -- a DEVICE_REMOVAL on the listener releases every object of
 * the device, see pmrep_peer_get_device_removed; shut the endpoint down
 * and listen on a new peer once the device is back). tcp: every call
 * looks at every socket waiting for its HELLO, so a stream of refusals
 * does not keep one from its turn; the refusals (MALFORMED, TLS) are
 * returned one per call when no request is ready (at most 64 of each
 * kind wait to be returned; more are logged only).
 */
PMREP_API int pmrep_ep_next_conn_req(struct pmrep_ep *ep,
		const struct pmrep_conn_cfg *cfg, struct pmrep_conn_req **req_ptr);
/*
 * pmrep_ep_wait_conn_req -- like pmrep_ep_next_conn_req, but waits up to
 * timeout_ms (-1: no limit). Errors: those, and PMREP_E_TIMEOUT.
 */
PMREP_API int pmrep_ep_wait_conn_req(struct pmrep_ep *ep,
		const struct pmrep_conn_cfg *cfg, int timeout_ms,
		struct pmrep_conn_req **req_ptr);

/* ----------------------------------------------------- connection request */

/*
 * pmrep_conn_req_new -- active side: resolve `addr`:`port` (bounded by the
 * cfg timeout) and create the QP and CQs. Nothing is sent yet.
 * Errors: PMREP_E_INVAL, PMREP_E_UNREACHABLE (address or route resolution
 * failed or timed out), PMREP_E_PROVIDER, PMREP_E_NOMEM.
 */
PMREP_API int pmrep_conn_req_new(struct pmrep_peer *peer, const char *addr,
		const char *port, const struct pmrep_conn_cfg *cfg,
		struct pmrep_conn_req **req_ptr);
/*
 * pmrep_conn_req_recv -- pre-post a receive of `len` bytes into `dst` at
 * `offset` before the connection is established (reported later on the
 * conn's (R)CQ with `op_context`). verbs, passive side: the first receive
 * makes the request's CQs and QP (one on the cfg's SRQ needs none and
 * makes none); if that fails, this call returns the error, none of them
 * is left and the request stays usable (try again, accept or reject it).
 * Errors: PMREP_E_INVAL, PMREP_E_RANGE, PMREP_E_PROVIDER (also: making the
 * CQs / QP failed, pmrep_err_errno()), PMREP_E_NOMEM (the same), PMREP_E_AGAIN,
 * PMREP_E_DEVICE_REMOVED (verbs: the RDMA device was removed).
 */
PMREP_API int pmrep_conn_req_recv(struct pmrep_conn_req *req,
		struct pmrep_mr_local *dst, size_t offset, size_t len,
		const void *op_context);
/*
 * pmrep_conn_req_get_private_data -- passive side: the initiator's private
 * data, pmrep's own copy (len 0: none). Valid until the request is
 * consumed. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_conn_req_get_private_data(const struct pmrep_conn_req *req,
		struct pmrep_conn_private_data *pdata);
/*
 * pmrep_conn_req_get_src_addr -- passive side: the initiator's address
 * (IP address and port, as the transport saw the request come in) into
 * *addr. Errors: PMREP_E_INVAL (NULL argument, an active-side request),
 * PMREP_E_NOSUPP (the provider did not record it: *addr zeroed, family
 * AF_UNSPEC). Thread-safe on a request no other thread consumes.
 */
PMREP_API int pmrep_conn_req_get_src_addr(const struct pmrep_conn_req *req,
		struct sockaddr_storage *addr);
/*
 * pmrep_conn_req_get_tls_identity -- passive side, TLS on (tcp): the PSK
 * identity the request's TLS handshake was accepted with (the string the
 * pmrep_tls_psk_find_fn found a PSK for, NUL-terminated) into *identity,
 * and the local "host:port" ("[addr]:port" for IPv6) the connection
 * arrived at -- the `local` that function was given -- into *local (NULL:
 * not wanted). Both strings are the request's, valid until it is
 * consumed. So an application serving several names on one endpoint can
 * check, once the request's own data has selected what it asks for, that
 * the identity's names fit that choice. Errors: PMREP_E_INVAL (NULL
 * request or identity, an active-side request), PMREP_E_NOSUPP (no TLS
 * on this request: *identity and *local set to "").
 */
PMREP_API int pmrep_conn_req_get_tls_identity(const struct pmrep_conn_req *req,
		const char **identity, const char **local);
/*
 * pmrep_conn_req_connect -- connect (active side) or accept (passive side)
 * with optional private data (NULL: none); the request is consumed (*req_ptr
 * = NULL) whether or not this succeeds. The result is reported later by
 * pmrep_conn_next_event (ESTABLISHED, REJECTED, UNREACHABLE …). verbs,
 * passive side: a request on which no receive was posted gets its CQs and
 * QP here, before the accept; if that fails, the request is refused as
 * retryable (as for any failed accept) and this call returns the error.
 * Errors: PMREP_E_INVAL (also: private data longer than
 * PMREP_PDATA_CONNECT_MAX / PMREP_PDATA_ACCEPT_MAX, checked before any
 * rdma_cm call; then the request is NOT consumed), PMREP_E_PROVIDER,
 * PMREP_E_NOMEM, PMREP_E_DEVICE_REMOVED (verbs: the RDMA device was
 * removed).
 */
PMREP_API int pmrep_conn_req_connect(struct pmrep_conn_req **req_ptr,
		const struct pmrep_conn_private_data *pdata,
		struct pmrep_conn **conn_ptr);
/*
 * pmrep_conn_req_delete -- drop the request: passive side rejects it
 * (the initiator sees PMREP_CONN_REJECTED, final, no retry), active side
 * frees its resources. verbs, passive side: a request never used (no
 * receive posted on it) has no CQ and no QP: only its id is destroyed.
 * Errors: PMREP_E_INVAL, PMREP_E_PROVIDER (freed anyway).
 */
PMREP_API int pmrep_conn_req_delete(struct pmrep_conn_req **req_ptr);
/*
 * pmrep_conn_req_reject -- passive side: reject the request and free it
 * (*req_ptr NULL). retry false: as pmrep_conn_req_delete (the initiator
 * sees PMREP_CONN_REJECTED, final); true: the initiator retries until its
 * connect deadline, as when nothing listened yet (a refusal for now: no
 * room). Errors: PMREP_E_INVAL (NULL, an active-side request; nothing
 * freed), PMREP_E_PROVIDER (freed anyway).
 */
PMREP_API int pmrep_conn_req_reject(struct pmrep_conn_req **req_ptr, bool retry);

/* -------------------------------------------------------------- connection */

enum pmrep_conn_event {
	PMREP_CONN_UNDEFINED = -1,
	PMREP_CONN_ESTABLISHED,	/* ready for ops */
	PMREP_CONN_CLOSED,	/* orderly disconnect by either side (terminal) */
	PMREP_CONN_LOST,	/* peer or device died, timeout (terminal) */
	PMREP_CONN_REJECTED,	/* the passive side rejected (terminal) */
	PMREP_CONN_UNREACHABLE,	/* nothing answered after all retries (terminal) */
};

/* pmrep_conn_event_str -- a static name for `ev`. Thread-safe. */
PMREP_API const char *pmrep_conn_event_str(enum pmrep_conn_event ev);

/*
 * pmrep_conn_next_event -- the next connection event, without blocking.
 * Exactly one terminal event (CLOSED, LOST, REJECTED, UNREACHABLE) is
 * ever reported; every later call returns PMREP_E_NO_EVENT. Every
 * underlying CM event is acknowledged before return, on every path.
 * Errors: PMREP_E_INVAL, PMREP_E_NO_EVENT, PMREP_E_PROVIDER.
 */
PMREP_API int pmrep_conn_next_event(struct pmrep_conn *conn,
		enum pmrep_conn_event *event);
/* pmrep_conn_wait_event -- as above, waiting up to timeout_ms (-1: forever).
 * Errors: those, and PMREP_E_TIMEOUT. */
PMREP_API int pmrep_conn_wait_event(struct pmrep_conn *conn, int timeout_ms,
		enum pmrep_conn_event *event);
/* pmrep_conn_get_event_fd -- readable when a conn event may be pending.
 * Owned by the conn. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_conn_get_event_fd(const struct pmrep_conn *conn, int *fd);
/*
 * pmrep_conn_get_completion_fd -- the fd of the conn's shared completion
 * channel (cfg shared_comp_channel or comp_channel). Owned by the conn (or
 * by the pmrep_comp_channel). Errors: PMREP_E_INVAL, PMREP_E_NOT_SHARED_CHNL.
 */
PMREP_API int pmrep_conn_get_completion_fd(const struct pmrep_conn *conn, int *fd);
/* pmrep_conn_get_cq -- the conn's CQ, owned by the conn (deleted with it).
 * Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_conn_get_cq(const struct pmrep_conn *conn, struct pmrep_cq **cq);
/* pmrep_conn_get_rcq -- the conn's separate receive CQ, or NULL when the
 * cfg asked for none (rcq_size 0). Owned by the conn. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_conn_get_rcq(const struct pmrep_conn *conn, struct pmrep_cq **rcq);
/*
 * pmrep_conn_wait -- with a shared completion channel: wait up to
 * timeout_ms for a CQ event, acknowledge it on the CQ it came from, re-arm
 * it and return that CQ (and whether it is the RCQ). A wakeup whose CQ turns
 * out empty is not an error. Errors: PMREP_E_INVAL, PMREP_E_NOT_SHARED_CHNL,
 * PMREP_E_SHARED_CHANNEL (the CQs are on a pmrep_comp_channel, which
 * carries other conns' events too: use pmrep_comp_channel_wait),
 * PMREP_E_TIMEOUT, PMREP_E_NO_COMPLETION (nothing pending on a non-blocking
 * check, timeout_ms == 0), PMREP_E_PROVIDER. Requests held by
 * PMREP_F_MORE are posted first: their failure is returned as by
 * pmrep_cq_wait (PMREP_E_AGAIN / PMREP_E_PROVIDER, nothing waited for).
 */
PMREP_API int pmrep_conn_wait(struct pmrep_conn *conn, int timeout_ms,
		struct pmrep_cq **cq, bool *is_rcq);
/*
 * pmrep_conn_get_private_data -- the peer's private data received with
 * the connect / accept: pmrep's copy (its true length; 0 = none), valid
 * until the conn is deleted. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_conn_get_private_data(const struct pmrep_conn *conn,
		struct pmrep_conn_private_data *pdata);
/*
 * pmrep_conn_get_failure -- the named cause of the conn's failed connect
 * (REJECTED) or loss (LOST), when the provider knows one: PMREP_E_TLS (the
 * TLS handshake failed, the other end did not speak TLS, or a record
 * failed authentication: tampering on the wire); PMREP_E_TIMEOUT with
 * UNREACHABLE on tcp when the last attempt's TCP connection was made but
 * the listener never answered within the cfg timeout (it hangs, is
 * stopped, or is no pmrep listener) -- not "nobody listens"; 0 when none
 * is known (a refused or unroutable connect, a plain socket error, the
 * peer's reject; on verbs every UNREACHABLE). Read it after the
 * terminal event. Errors: PMREP_E_INVAL (NULL). Thread-safe.
 */
PMREP_API int pmrep_conn_get_failure(const struct pmrep_conn *conn, int *cause);
/*
 * pmrep_conn_apply_remote_peer_cfg -- tell the conn what the remote peer
 * declared (e.g. direct write to pmem), which decides the PERSISTENT flush
 * method. Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_conn_apply_remote_peer_cfg(struct pmrep_conn *conn,
		const struct pmrep_peer_cfg *cfg);

/* How a PERSISTENT flush is carried out on a connection. */
enum pmrep_flush_method {
	PMREP_FLUSH_METHOD_NONE = 0,	/* not supported: PERSISTENT flush fails */
	PMREP_FLUSH_METHOD_NATIVE,	/* RDMA FLUSH (or the tcp target's persist) */
	PMREP_FLUSH_METHOD_APM,		/* read after write; direct write to pmem */
};
/* pmrep_conn_get_flush_method -- the PERSISTENT flush method. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_conn_get_flush_method(const struct pmrep_conn *conn,
		enum pmrep_flush_method *method);
/*
 * How a verbs conn's reliable connection (RC QP) retransmits (T23). Each
 * side sets its own local ACK timeout (rdma_set_option
 * RDMA_OPTION_ID_ACK_TIMEOUT, before rdma_connect / rdma_accept and on
 * every id a connect retry makes): a request not acknowledged within
 * 4.096 us * 2^ack_timeout_exp is sent again, at most retry_count times,
 * then it completes with PMREP_WC_RETRY_EXCEEDED and the conn is LOST. Both
 * follow from the conn cfg's timeout T (pmrep_conn_cfg_set_timeout):
 *   ack_timeout_exp = the largest exp in 1..31 with 4.096 us * 2^exp <= T / 4
 *                     (1 if none; never 0, which means "never retransmit"),
 *   retry_count     = floor(T / ack_timeout) - 1, within 1..7,
 * so one lost packet costs at most T / 4 and a dead peer is detected within
 * (retry_count + 1) * ack_timeout <= T (for T >= 1 ms: retry_count 3..6,
 * 7 only when T > 4.096 us * 2^31 * 4, about 9.8 hours). The initiator's
 * retry_count (sent in its connect request) is used by both QPs: on the
 * passive side this reports the initiator's. A device may enforce a longer
 * minimum ACK timeout than asked (rxe rounds it up to a jiffy).
 * rnr_retry_count: how often a SEND that finds no receive posted on the
 * peer is retried (pmrep asks 6, bounded; 7 would mean forever) -- as the
 * peer granted it for this conn's QP (the REP's on the active side, the
 * REQ's on the passive side). rdma_cm's own REQ / REP retries (several
 * seconds each) are not settable from user space.
 */
struct pmrep_conn_rc_timing {
	unsigned ack_timeout_exp;	/* 1..31 */
	uint64_t ack_timeout_us;	/* 4.096 us * 2^exp, rounded up */
	unsigned retry_count;		/* 0..7 */
	unsigned rnr_retry_count;	/* 0..7 (7: unbounded) */
	uint64_t detect_us;		/* ack_timeout_us * (retry_count + 1) */
};
/*
 * pmrep_conn_get_rc_timing -- the conn's effective retransmission timing
 * (above), set from connect / accept on. Thread-safety: the values change
 * only while a connect is (re)tried and when ESTABLISHED is decided; read
 * them from the thread that reads the conn's events. Errors: PMREP_E_INVAL
 * (a NULL argument), PMREP_E_NOSUPP (the tcp provider: it has no
 * retransmission settings of its own; its timeouts are the cfg's).
 */
PMREP_API int pmrep_conn_get_rc_timing(const struct pmrep_conn *conn,
		struct pmrep_conn_rc_timing *timing);
/* pmrep_conn_get_provider -- the conn's provider. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_conn_get_provider(const struct pmrep_conn *conn,
		enum pmrep_provider *provider);
/*
 * pmrep_conn_disconnect -- start an orderly disconnect; the conn then
 * reports PMREP_CONN_CLOSED. Requests held by PMREP_F_MORE are posted
 * first (see the posting rules).
 * Errors: PMREP_E_INVAL, PMREP_E_PROVIDER (rdma_disconnect failed);
 * PMREP_E_AGAIN / PMREP_E_PROVIDER also when posting the held requests
 * failed (the disconnect went ahead; the requests not posted produce no
 * completion).
 */
PMREP_API int pmrep_conn_disconnect(struct pmrep_conn *conn);
/*
 * pmrep_conn_delete -- free the conn. Requests held by PMREP_F_MORE are
 * posted first (a failure to post them is only logged). With requests in
 * flight: the QP moves to the error state and the CQs are drained for at most the cfg
 * timeout, so every posted request ends with exactly one outcome (read
 * them before deleting if you care). Acknowledges every outstanding CM
 * and CQ event; destroys the QP, CQs, then its completion channel; closes
 * the conn's fds. Errors: PMREP_E_INVAL, PMREP_E_PROVIDER (the conn is
 * freed anyway, *conn_ptr = NULL).
 */
PMREP_API int pmrep_conn_delete(struct pmrep_conn **conn_ptr);

/* ----------------------------------------------------------- memory regions */

/* Usage flags of a local memory region (OR them). */
#define PMREP_MR_USAGE_READ_SRC			(1 << 0)
#define PMREP_MR_USAGE_READ_DST			(1 << 1)
#define PMREP_MR_USAGE_WRITE_SRC		(1 << 2)
#define PMREP_MR_USAGE_WRITE_DST		(1 << 3)
#define PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY	(1 << 4)
#define PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT	(1 << 5)
#define PMREP_MR_USAGE_SEND			(1 << 6)
#define PMREP_MR_USAGE_RECV			(1 << 7)
#define PMREP_MR_USAGE_ALL			0xff
/*
 * PMREP_MR_USAGE_MW_BIND -- the region is reached remotely ONLY through
 * memory windows (pmrep_mw_bind): its own rkey grants no remote access
 * (verbs: registered IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND and no
 * remote access flag; tcp: a remote request naming the region's own rkey
 * is refused). The remote usages it is registered with (READ_SRC,
 * WRITE_DST, FLUSH_TYPE_*) are what a window over it may give.
 * pmrep_mr_get_descriptor of such a region fails (PMREP_E_INVAL): hand out
 * a window's descriptor (pmrep_mw_get_descriptor) instead. Not part of a
 * descriptor's usage (PMREP_MR_USAGE_ALL).
 */
#define PMREP_MR_USAGE_MW_BIND			(1 << 8)

/*
 * A persist function: make `size` bytes at `ptr` (inside a region it was
 * set for) durable and say whether that worked: 0, or nonzero (a negative
 * PMREP_E_* code by convention) when the bytes may not be durable. `ctx`
 * is the context given to pmrep_mr_set_persist_fn. It must not block
 * indefinitely and never abort the process. For a libpmem2 mapping of
 * the pmem layer use pmrep_pmem_persist_cb with the struct pmrep_pmem *
 * as `ctx` (include/pmrep/pmem.h).
 */
typedef int pmrep_persist_fn(void *ctx, const void *ptr, size_t size);

/*
 * pmrep_mr_reg -- register `size` bytes at `ptr` for the `usage` flags.
 * On fsdax memory (which the kernel will not pin) it registers on demand
 * (ODP) and prefetches when the device has ODP; otherwise it fails with
 * PMREP_E_NOSUPP and a log line naming the cause and the alternatives
 * (devdax, tmpfs /dev/shm, hugetlbfs, anonymous memory).
 * Errors: PMREP_E_INVAL (NULL, size 0, usage 0 or unknown bits),
 * PMREP_E_NOSUPP (see above), PMREP_E_PROVIDER (ibv_reg_mr failed for
 * another reason: pmrep_err_errno()), PMREP_E_NOMEM.
 */
PMREP_API int pmrep_mr_reg(struct pmrep_peer *peer, void *ptr, size_t size,
		int usage, struct pmrep_mr_local **mr_ptr);
/*
 * pmrep_mr_set_persist_fn -- the function that makes a range of this
 * region durable (from the pmem layer), and the `ctx` it is called with
 * (not owned; must stay valid while the region is registered; may be
 * NULL if `persist` needs none). The tcp provider calls persist(ctx, ptr,
 * size) from its progress thread for a PERSISTENT flush into this region
 * (several touching flushes of one batch may be persisted by one call)
 * and acknowledges the flush only after it returned 0; when it returns
 * nonzero the flush is refused: the initiator's flush completes with
 * PMREP_WC_REMOTE_OPERATION_ERROR (the later requests of that conn with
 * PMREP_WC_FLUSHED) and the conn is in the error state. Without a
 * persist function tcp msyncs the range. verbs does not call it (RDMA
 * FLUSH, or the replication layer's own persist). Set it before the
 * region takes PERSISTENT flushes; not thread-safe against flushes in
 * flight. Errors: PMREP_E_INVAL (`mr` or `persist` NULL).
 */
PMREP_API int pmrep_mr_set_persist_fn(struct pmrep_mr_local *mr,
		pmrep_persist_fn *persist, void *ctx);
/* pmrep_mr_dereg -- deregister and free (NULL ok). Errors: PMREP_E_INVAL,
 * PMREP_E_PROVIDER (freed anyway). */
PMREP_API int pmrep_mr_dereg(struct pmrep_mr_local **mr_ptr);
/* pmrep_mr_get_ptr -- the registered address. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_mr_get_ptr(const struct pmrep_mr_local *mr, void **ptr);
/* pmrep_mr_get_size -- the registered size in bytes. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_mr_get_size(const struct pmrep_mr_local *mr, size_t *size);
/*
 * pmrep_mr_get_usage -- the PMREP_MR_USAGE_* bits the region got: those
 * asked for, less a PERSISTENT flush usage the device refused (verbs on
 * memory that is not persistent). Errors: PMREP_E_INVAL.
 */
PMREP_API int pmrep_mr_get_usage(const struct pmrep_mr_local *mr, int *usage);

#define PMREP_MR_DESC_SIZE 32	/* bytes of a serialised MR descriptor */

/*
 * pmrep_mr_get_descriptor -- write the PMREP_MR_DESC_SIZE-byte descriptor
 * (version, provider, address, size, rkey, usage; little-endian) that a
 * remote side turns into a pmrep_mr_remote. Errors: PMREP_E_INVAL (NULL,
 * or the region was registered with PMREP_MR_USAGE_MW_BIND: its own rkey
 * grants nothing; use pmrep_mw_get_descriptor).
 */
PMREP_API int pmrep_mr_get_descriptor(const struct pmrep_mr_local *mr, void *desc);
/*
 * pmrep_mr_remote_from_descriptor -- parse `size` bytes at `desc`.
 * Errors: PMREP_E_INVAL (NULL), PMREP_E_MALFORMED (short, bad magic or
 * version, zero size, address + size overflow, unknown usage bits),
 * PMREP_E_NOMEM.
 */
PMREP_API int pmrep_mr_remote_from_descriptor(const void *desc, size_t size,
		struct pmrep_mr_remote **mr_ptr);
/* pmrep_mr_remote_delete -- free it (NULL ok). Returns 0 or PMREP_E_INVAL. */
PMREP_API int pmrep_mr_remote_delete(struct pmrep_mr_remote **mr_ptr);
/* pmrep_mr_remote_get_size -- bytes. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_mr_remote_get_size(const struct pmrep_mr_remote *mr, size_t *size);
/* pmrep_mr_remote_get_flush_type -- the PMREP_MR_USAGE_FLUSH_TYPE_* bits it
 * was registered with. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_mr_remote_get_flush_type(const struct pmrep_mr_remote *mr, int *flush_type);

/* ---------------------------------------------------------- memory windows */

/*
 * A memory window: remote access to a region registered with
 * PMREP_MR_USAGE_MW_BIND, given to the remote side of ONE conn. The
 * window's rkey works only in requests that arrive on that conn (verbs: a
 * type 2 window bound to the conn's QP -- any other QP, also of the same
 * protection domain, meets a remote access error; tcp: a window of that
 * conn alone, other conns' requests naming its rkey are refused and end
 * their conn like verbs' remote access error). The window covers the
 * whole region. Lifetime: from pmrep_mw_bind to pmrep_mw_invalidate; the
 * caller owns it. It must be invalidated before its region is
 * deregistered; pmrep_conn_delete invalidates the windows still bound to
 * the conn (they stay allocated until pmrep_mw_invalidate frees them).
 * Thread safety: bind and invalidate of different windows may run in
 * parallel; one window is not used from two threads at once.
 */

/*
 * pmrep_mw_bind -- bind a window over the whole of `mr` to `conn`, giving
 * the remote side of `conn` the `usage` bits (a subset of PMREP_MR_USAGE_
 * READ_SRC | WRITE_DST | FLUSH_TYPE_VISIBILITY | FLUSH_TYPE_PERSISTENT,
 * each also in the region's usage as registered: a PERSISTENT flush usage
 * the registration dropped -- verbs on memory that is not persistent --
 * is not in it).
 * The conn must be connected (ESTABLISHED). verbs: an IBV_WR_BIND_MW is
 * posted on the conn's QP (unsignalled; it takes one send-queue slot until
 * a later request of the conn completes): requests the caller posts on the
 * conn afterwards are ordered behind it, so a descriptor sent on the conn
 * after this call returns is usable when the remote side receives it. A
 * bind the device refuses later moves the conn to the error state (a
 * PMREP_CONN_LOST event; the window then grants nothing).
 * Errors: PMREP_E_INVAL (NULL, usage 0, unknown bits, not the region's,
 * the region lacks PMREP_MR_USAGE_MW_BIND, conn and region of different
 * peers), PMREP_E_CONN_LOST (the conn is lost, closed or not connected),
 * PMREP_E_AGAIN (the send queue is full: retry after completions),
 * PMREP_E_NOSUPP (the device has no type 2 windows), PMREP_E_NOMEM,
 * PMREP_E_PROVIDER (ibv_alloc_mw / ibv_post_send failed: pmrep_err_errno()),
 * PMREP_E_DEVICE_REMOVED.
 */
PMREP_API int pmrep_mw_bind(struct pmrep_conn *conn, struct pmrep_mr_local *mr,
		int usage, struct pmrep_mw **mw_ptr);
/*
 * pmrep_mw_get_descriptor -- write the window's PMREP_MR_DESC_SIZE-byte
 * descriptor, in the format of pmrep_mr_get_descriptor (the remote side
 * reads it with pmrep_mr_remote_from_descriptor): the window's rkey, the
 * region's address and size, the window's usage. Errors: PMREP_E_INVAL
 * (NULL), PMREP_E_STATE (the window was invalidated by its conn's delete).
 */
PMREP_API int pmrep_mw_get_descriptor(const struct pmrep_mw *mw, void *desc);
/*
 * pmrep_mw_invalidate -- end the window and free it (*mw_ptr = NULL; NULL
 * ok). When it returns, no remote request can reach the region through
 * the window any more -- also when its conn is lost or closed (verbs:
 * ibv_dealloc_mw, which invalidates a bound window whatever the state of
 * its QP; tcp: the window is gone from the conn under the peer's memory
 * lock, and a remote write of it that is mid-payload lands nowhere and
 * fails the conn). Requests that were already executed are not undone.
 * verbs: a window invalidated before its bind was executed -- before any
 * request the conn posted after pmrep_mw_bind completed -- makes the
 * device refuse the bind later and the conn fails (PMREP_CONN_LOST; seen
 * on rxe, Linux 6.12): invalidate on a conn that stays in use only after
 * such a completion (the target invalidates at a session's end).
 * Errors: PMREP_E_INVAL (NULL mw_ptr), PMREP_E_PROVIDER (ibv_dealloc_mw
 * failed: the window is freed anyway).
 */
PMREP_API int pmrep_mw_invalidate(struct pmrep_mw **mw_ptr);

/* ------------------------------------------------------- completion queue */

enum pmrep_op {
	PMREP_OP_READ = 0,
	PMREP_OP_WRITE,
	PMREP_OP_ATOMIC_WRITE,
	PMREP_OP_FLUSH,
	PMREP_OP_SEND,
	PMREP_OP_RECV,
	PMREP_OP_RECV_RDMA_WITH_IMM,
};

/*
 * The outcome of a request, in pmrep's terms (both providers report these;
 * the verbs provider maps rdma-core's enum ibv_wc_status onto them in one
 * table, the tcp provider sets them itself). New values may be added in a
 * later release (docs/ABI.md): treat an unknown one as
 * PMREP_WC_GENERAL_ERROR.
 */
enum pmrep_wc_status {
	PMREP_WC_SUCCESS = 0,
	/* not executed: the conn went to the error state, or was
	 * disconnected, with the request outstanding (another request's
	 * failure, a lost peer, pmrep_conn_disconnect / _delete) */
	PMREP_WC_FLUSHED = 1,
	/* a receive too short for the message that arrived */
	PMREP_WC_LOCAL_LENGTH_ERROR = 2,
	/* the local region does not allow the access, or a memory window
	 * bind was refused */
	PMREP_WC_LOCAL_PROTECTION_ERROR = 3,
	/* the remote region (rkey, range, usage) does not allow the access */
	PMREP_WC_REMOTE_ACCESS_ERROR = 4,
	/* the target could not take the request as asked (e.g. a receive
	 * too short at the target, a flush it cannot do) */
	PMREP_WC_REMOTE_INVALID_REQUEST = 5,
	/* the target failed to carry out the request (e.g. a persist failed
	 * there) */
	PMREP_WC_REMOTE_OPERATION_ERROR = 6,
	/* the peer stopped answering: transport retries exhausted (verbs:
	 * RC retry count; tcp: the liveness period passed) */
	PMREP_WC_RETRY_EXCEEDED = 7,
	/* a send found no receive posted at the peer, retried, gave up */
	PMREP_WC_RNR_RETRY_EXCEEDED = 8,
	/* the peer's response did not come in time (verbs:
	 * IBV_WC_RESP_TIMEOUT_ERR) */
	PMREP_WC_TIMEOUT = 9,
	/* anything else (the provider's own code: provider_status) */
	PMREP_WC_GENERAL_ERROR = 10,
};

/*
 * pmrep_wc_status_str -- a static, human readable string for `status`
 * ("success", "flushed", ...); "unknown completion status" for a value
 * this version does not know. Never NULL. Thread-safe.
 */
PMREP_API const char *pmrep_wc_status_str(enum pmrep_wc_status status);

/*
 * One completion. For an error completion (status != PMREP_WC_SUCCESS)
 * only `op_context`, `status` and `provider_status` are defined (the verbs
 * opcode of an error completion is undefined).
 * The caller allocates these (arrays for pmrep_cq_get_completions): the
 * layout is fixed for a SONAME, see docs/ABI.md.
 */
struct pmrep_completion {
	void *op_context;
	enum pmrep_op op;
	enum pmrep_wc_status status;
	uint32_t byte_len;		/* receives: bytes received */
	bool has_imm;
	uint32_t imm;			/* host order */
	/* provider-specific, for diagnostics only (log it, do not decide on
	 * it): verbs: the device's enum ibv_wc_status value (0 on success);
	 * tcp: 0 */
	uint32_t provider_status;
};

/* pmrep_cq_get_fd -- the fd of the CQ's completion channel (owned by the
 * conn / channel). Errors: PMREP_E_INVAL, PMREP_E_SHARED_CHANNEL. */
PMREP_API int pmrep_cq_get_fd(const struct pmrep_cq *cq, int *fd);
/*
 * pmrep_cq_wait -- wait up to timeout_ms for a completion event on this
 * CQ's own channel, acknowledge it and re-arm the CQ. A wakeup with an
 * empty CQ is not an error. Requests its conn holds by PMREP_F_MORE are
 * posted first. Errors: PMREP_E_INVAL, PMREP_E_SHARED_CHANNEL
 * (wait on the conn / comp channel), PMREP_E_TIMEOUT, PMREP_E_PROVIDER,
 * PMREP_E_CONN_LOST (the RDMA device was removed, T22; also from
 * pmrep_conn_wait and pmrep_comp_channel_wait);
 * PMREP_E_AGAIN / PMREP_E_PROVIDER when posting the held requests failed
 * (nothing waited for; see the posting rules).
 * Thread-safety: may run concurrently with posting ops on its conn.
 */
PMREP_API int pmrep_cq_wait(struct pmrep_cq *cq, int timeout_ms);
/* the most CQs one pmrep_cq_wait_any takes */
#define PMREP_CQ_WAIT_ANY_MAX 64
/*
 * pmrep_cq_wait_any -- pmrep_cq_wait over several CQs at once: wait up to
 * timeout_ms (-1: no limit) until at least one of the n CQs (each on its
 * own channel, all of one peer's provider; e.g. one per replica) has a
 * completion event; acknowledge and re-arm every CQ whose event was seen.
 * Then take completions with pmrep_cq_get_completions from each. Requests
 * their conns hold by PMREP_F_MORE are posted first. On tcp the waiting
 * thread runs the conns' progress itself (as pmrep_cq_wait does), so an
 * answer needs no hand-off from a progress thread. n: 1 ..
 * PMREP_CQ_WAIT_ANY_MAX. Errors: PMREP_E_INVAL (NULL, n out of range, CQs
 * of different providers), PMREP_E_SHARED_CHANNEL (a CQ on a shared
 * channel), PMREP_E_TIMEOUT (no event within the limit), PMREP_E_PROVIDER;
 * PMREP_E_AGAIN / PMREP_E_PROVIDER when posting held requests failed.
 * Thread-safety: as pmrep_cq_wait, for each CQ.
 */
PMREP_API int pmrep_cq_wait_any(struct pmrep_cq *const *cqs, int n,
		int timeout_ms);
/*
 * pmrep_cq_get_completions -- take up to `max` completions without
 * blocking into `out`, count in *n. Requests its conn holds by
 * PMREP_F_MORE are posted first. Errors: PMREP_E_INVAL (max < 1),
 * PMREP_E_NO_COMPLETION (none now), PMREP_E_PROVIDER (poll failed),
 * PMREP_E_CONN_LOST (the CQ's RDMA device was removed: T22);
 * PMREP_E_AGAIN / PMREP_E_PROVIDER when posting the held requests failed
 * (nothing polled, *n = 0; the next call polls; see the posting rules).
 * Thread-safety: may run concurrently with posting ops on its conn.
 */
PMREP_API int pmrep_cq_get_completions(struct pmrep_cq *cq,
		struct pmrep_completion *out, int max, int *n);

/* ------------------------------------------- completion channel (shared) */

/*
 * pmrep_comp_channel_new -- a completion channel that CQs of many
 * connections share (pass it with pmrep_conn_cfg_set_comp_channel).
 * Errors: PMREP_E_INVAL, PMREP_E_PROVIDER, PMREP_E_NOMEM.
 */
PMREP_API int pmrep_comp_channel_new(struct pmrep_peer *peer,
		struct pmrep_comp_channel **ch_ptr);
/*
 * pmrep_comp_channel_delete -- destroy it and close its fd.
 * Errors: PMREP_E_BUSY (a CQ is still attached: the channel stays valid and
 * usable, *ch_ptr unchanged), PMREP_E_PROVIDER.
 */
PMREP_API int pmrep_comp_channel_delete(struct pmrep_comp_channel **ch_ptr);
/* pmrep_comp_channel_get_fd -- owned by the channel. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_comp_channel_get_fd(const struct pmrep_comp_channel *ch, int *fd);
/*
 * pmrep_comp_channel_wait -- wait up to timeout_ms for an event on any
 * attached CQ, acknowledge it on that CQ, re-arm, and return the CQ and
 * its conn. It does not post requests held by PMREP_F_MORE (it does not
 * know the conns): end each batch with a post without MORE.
 * Errors: PMREP_E_INVAL, PMREP_E_TIMEOUT, PMREP_E_NO_COMPLETION
 * (timeout_ms == 0 and nothing pending), PMREP_E_PROVIDER.
 */
PMREP_API int pmrep_comp_channel_wait(struct pmrep_comp_channel *ch,
		int timeout_ms, struct pmrep_cq **cq, struct pmrep_conn **conn);

/* ---------------------------------------------------- shared receive queue */

/*
 * pmrep_srq_new -- a shared receive queue of `rq_size` receives with its
 * own receive CQ of `rcq_size` entries (0: rq_size).
 * Errors: PMREP_E_INVAL, PMREP_E_PROVIDER, PMREP_E_NOMEM.
 */
PMREP_API int pmrep_srq_new(struct pmrep_peer *peer, uint32_t rq_size,
		uint32_t rcq_size, struct pmrep_srq **srq_ptr);
/* pmrep_srq_delete -- free the SRQ (NULL ok). Errors: PMREP_E_BUSY (a conn still
 * uses it), PMREP_E_PROVIDER. */
PMREP_API int pmrep_srq_delete(struct pmrep_srq **srq_ptr);
/* pmrep_srq_get_rcq -- its receive CQ, owned by the SRQ. Errors: PMREP_E_INVAL. */
PMREP_API int pmrep_srq_get_rcq(const struct pmrep_srq *srq, struct pmrep_cq **rcq);
/* pmrep_srq_recv -- post a receive. Errors: as pmrep_recv. */
PMREP_API int pmrep_srq_recv(struct pmrep_srq *srq, struct pmrep_mr_local *dst,
		size_t offset, size_t len, const void *op_context);

/* ------------------------------------------------------------- operations */

/* Completion flags of the posting ops (exactly one of the first two). */
#define PMREP_F_COMPLETION_ON_ERROR	(1 << 0) /* unsignalled: a CQE only on error */
#define PMREP_F_COMPLETION_ALWAYS	(1 << 1) /* signalled */
/* more requests follow on this conn at once: the provider may hold this
 * one and post it with the next request (one doorbell); OR it with one of
 * the two above. See "PMREP_F_MORE" in the posting rules below. */
#define PMREP_F_MORE			(1 << 2)
/* verbs: at most this many requests are held; the one that fills the
 * chain posts it (see the posting rules) */
#define PMREP_MORE_MAX			16

enum pmrep_flush_type {
	PMREP_FLUSH_TYPE_VISIBILITY = 0,	/* bytes visible at the target */
	PMREP_FLUSH_TYPE_PERSISTENT = 1,	/* bytes in the target's persistence domain */
};

/*
 * The posting ops below share these rules. None blocks; each posts one
 * request (an APM flush: a read after the writes, one doorbell) and
 * reports it on the conn's CQ with `op_context` when `flags` is
 * PMREP_F_COMPLETION_ALWAYS (PMREP_F_COMPLETION_ON_ERROR: only a failure
 * is reported). Offsets and lengths are bytes, checked against the local
 * region and the remote region's size before anything is posted.
 *
 * PMREP_F_MORE (every posting op but pmrep_recv, which takes no flags):
 * "more requests follow on this conn at once". The provider may hold the
 * request and post it, in posting order, together with later ones behind
 * one doorbell (verbs: one ibv_post_send, or one ibv_wr_start ..
 * ibv_wr_complete when a native atomic write / flush is in the chain; tcp:
 * one sendmsg, from the calling thread when the queue is short). A held
 * request is posted:
 * - with the next posting op on the same conn that is not flagged MORE
 *   (end every batch with one: that is what the application should do);
 * - when the held chain is full: the PMREP_MORE_MAX-th held request posts
 *   the chain itself;
 * - by pmrep_conn_disconnect and pmrep_conn_delete (so a held request
 *   always gets its outcome: a flush error if the QP is already in error);
 * - by pmrep_cq_wait, pmrep_cq_get_completions and pmrep_conn_wait on a
 *   CQ of that conn, before they wait or poll: a safety net, so that an
 *   application that forgot the final post does not hang. Not by
 *   pmrep_comp_channel_wait, which does not know the conns: poll the CQ.
 * A held request has its send queue slot already: PMREP_E_AGAIN for a
 * full send queue is returned by the call that does not fit, and held
 * requests count. A request that fails its checks is refused with the
 * codes below and what is held stays held, unchanged. When posting the
 * chain fails, the call that posted it (the op, or one of the calls above)
 * returns PMREP_E_AGAIN (the device's queue was full) or PMREP_E_PROVIDER;
 * the requests from the one the device refused on were not posted, are
 * dropped (logged, each with its op_context) and produce NO completion,
 * whatever their flags; the ones before it were posted. Nothing is held
 * any more after such a failure.
 *
 * Common errors: PMREP_E_INVAL (NULL, flags not exactly one of the two
 * completion flags, optionally with PMREP_F_MORE, or any other bit set;
 * len 0, a region without the needed usage, a remote MR of another
 * provider), PMREP_E_RANGE (offset + len outside a region),
 * PMREP_E_CONN_LOST (the conn reported a terminal event or is being
 * disconnected), PMREP_E_STATE (not ESTABLISHED yet; receives may be
 * posted before), PMREP_E_AGAIN (send / receive queue full; or posting the
 * held chain with this request hit a full device queue, see above),
 * PMREP_E_PROVIDER (the post failed: pmrep_err_errno()).
 * Thread-safety: one thread per conn at a time. The CQ calls that post
 * held requests may run on another thread than the posting one.
 */

/*
 * pmrep_read -- RDMA read `len` bytes from src + src_offset (remote, usage
 * READ_SRC at the target) into dst + dst_offset (local, READ_DST).
 * Errors: the common ones.
 */
PMREP_API int pmrep_read(struct pmrep_conn *conn,
		struct pmrep_mr_local *dst, size_t dst_offset,
		const struct pmrep_mr_remote *src, size_t src_offset,
		size_t len, int flags, const void *op_context);
/*
 * pmrep_write -- RDMA write `len` bytes from src + src_offset (local,
 * WRITE_SRC) to dst + dst_offset (remote, WRITE_DST). The bytes are
 * neither visible nor durable before a flush completes.
 * Errors: the common ones.
 */
PMREP_API int pmrep_write(struct pmrep_conn *conn,
		const struct pmrep_mr_remote *dst, size_t dst_offset,
		const struct pmrep_mr_local *src, size_t src_offset,
		size_t len, int flags, const void *op_context);
/*
 * pmrep_write_with_imm -- a write whose arrival consumes a receive at the
 * target and completes it as PMREP_OP_RECV_RDMA_WITH_IMM carrying `imm`.
 * Errors: the common ones.
 */
PMREP_API int pmrep_write_with_imm(struct pmrep_conn *conn,
		const struct pmrep_mr_remote *dst, size_t dst_offset,
		const struct pmrep_mr_local *src, size_t src_offset,
		size_t len, uint32_t imm, int flags, const void *op_context);
/*
 * pmrep_atomic_write -- write the 8 bytes at `src` to dst + dst_offset so
 * that a reader sees all or none: native ATOMIC WRITE when the peer has
 * it, else an inline write behind a fence. The remote address must be
 * 8-byte aligned. Errors: the common ones (PMREP_E_INVAL when unaligned).
 */
PMREP_API int pmrep_atomic_write(struct pmrep_conn *conn,
		const struct pmrep_mr_remote *dst, size_t dst_offset,
		const uint8_t src[8], int flags, const void *op_context);
/*
 * pmrep_flush -- make every write posted before it to `dst` visible
 * (VISIBILITY) or durable (PERSISTENT) at the target. PERSISTENT uses
 * native RDMA FLUSH when the peer can, else APM when the remote peer
 * declared direct write to pmem, else it fails with PMREP_E_NOSUPP: it
 * never silently downgrades to VISIBILITY. See pmrep_conn_get_flush_method.
 * Errors: the common ones; PMREP_E_INVAL (unknown type); PMREP_E_NOSUPP
 * (no PERSISTENT method, or APM into a remote MR not registered with
 * FLUSH_TYPE_PERSISTENT). Native flush into such an MR completes with a
 * remote access error instead.
 */
PMREP_API int pmrep_flush(struct pmrep_conn *conn,
		const struct pmrep_mr_remote *dst, size_t dst_offset, size_t len,
		enum pmrep_flush_type type, int flags, const void *op_context);
/*
 * pmrep_send -- send `len` bytes at src + offset (usage SEND) as one
 * message into a receive the peer posted; src may be NULL with len 0.
 * With no receive posted the target retries (bounded, RNR) and then the
 * send fails with PMREP_WC_RNR_RETRY_EXCEEDED. Errors: the common ones.
 */
PMREP_API int pmrep_send(struct pmrep_conn *conn,
		const struct pmrep_mr_local *src, size_t offset, size_t len,
		int flags, const void *op_context);
/* pmrep_send_with_imm -- pmrep_send carrying `imm` (host order) to the
 * receiver's completion. Errors: the common ones. */
PMREP_API int pmrep_send_with_imm(struct pmrep_conn *conn,
		const struct pmrep_mr_local *src, size_t offset, size_t len,
		uint32_t imm, int flags, const void *op_context);
/*
 * pmrep_recv -- post a receive of up to `len` bytes into dst + offset
 * (usage RECV); always reported, with the received byte_len.
 * Errors: the common ones (flags do not apply).
 */
PMREP_API int pmrep_recv(struct pmrep_conn *conn,
		struct pmrep_mr_local *dst, size_t offset, size_t len,
		const void *op_context);

#ifdef __cplusplus
}
#endif
#endif /* PMREP_TRANSPORT_H */
