/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mock_int.h -- internals shared by the mock sources (not for tests).
 *
 * Locking: one recursive mutex guards all mock state. Every entry point
 * (mocked function or test API) takes it with MOCK_LOCK() and releases it
 * with MOCK_UNLOCK(). mock_die() drops it completely before failing the
 * test (cmocka longjmps out).
 *
 * Memory: the mocks' own allocations go through mock_alloc()/mock_free()
 * (the __real_* allocators), so they are never counted, failed or tracked
 * by the allocation wrappers that pmrep's code goes through.
 */
#ifndef PMREP_MOCK_INT_H
#define PMREP_MOCK_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "mocks.h"

#define MOCK_MAGIC 0x6d6f636bu	/* "mock" */
#define MOCK_DEAD 0xdeadbeefu

#define mock_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* ------------------------------------------------------- function registry */

/* X(id, name, default errno, class): class 0 = not failable (void / cannot
 * fail), 1 = failable, 2 = failable destroy-type, 3 = allocation */
#define MOCK_FUNCS(X) \
	X(IBV_GET_DEVICE_LIST, "ibv_get_device_list", ENOMEM, 1) \
	X(IBV_FREE_DEVICE_LIST, "ibv_free_device_list", 0, 0) \
	X(IBV_GET_DEVICE_NAME, "ibv_get_device_name", 0, 0) \
	X(IBV_GET_DEVICE_GUID, "ibv_get_device_guid", 0, 0) \
	X(IBV_OPEN_DEVICE, "ibv_open_device", ENOMEM, 1) \
	X(IBV_CLOSE_DEVICE, "ibv_close_device", EIO, 2) \
	X(IBV_QUERY_DEVICE, "ibv_query_device", EIO, 1) \
	X(IBV_QUERY_DEVICE_EX, "ibv_query_device_ex", EIO, 1) \
	X(IBV_QUERY_PORT, "ibv_query_port", EIO, 1) \
	X(IBV_QUERY_GID, "ibv_query_gid", EIO, 1) \
	X(IBV_ALLOC_PD, "ibv_alloc_pd", ENOMEM, 1) \
	X(IBV_DEALLOC_PD, "ibv_dealloc_pd", EIO, 2) \
	X(IBV_REG_MR, "ibv_reg_mr", ENOMEM, 1) \
	X(IBV_DEREG_MR, "ibv_dereg_mr", EIO, 2) \
	X(IBV_ALLOC_MW, "ibv_alloc_mw", ENOMEM, 1) \
	X(IBV_DEALLOC_MW, "ibv_dealloc_mw", EIO, 2) \
	X(IBV_ADVISE_MR, "ibv_advise_mr", EIO, 1) \
	X(IBV_CREATE_COMP_CHANNEL, "ibv_create_comp_channel", ENOMEM, 1) \
	X(IBV_DESTROY_COMP_CHANNEL, "ibv_destroy_comp_channel", EIO, 2) \
	X(IBV_CREATE_CQ, "ibv_create_cq", ENOMEM, 1) \
	X(IBV_DESTROY_CQ, "ibv_destroy_cq", EIO, 2) \
	X(IBV_RESIZE_CQ, "ibv_resize_cq", EIO, 1) \
	X(IBV_GET_CQ_EVENT, "ibv_get_cq_event", EIO, 1) \
	X(IBV_ACK_CQ_EVENTS, "ibv_ack_cq_events", 0, 0) \
	X(IBV_REQ_NOTIFY_CQ, "ibv_req_notify_cq", EIO, 1) \
	X(IBV_POLL_CQ, "ibv_poll_cq", EIO, 1) \
	X(IBV_POST_SEND, "ibv_post_send", ENOMEM, 1) \
	X(IBV_POST_RECV, "ibv_post_recv", ENOMEM, 1) \
	X(IBV_POST_SRQ_RECV, "ibv_post_srq_recv", ENOMEM, 1) \
	X(IBV_CREATE_SRQ, "ibv_create_srq", ENOMEM, 1) \
	X(IBV_MODIFY_SRQ, "ibv_modify_srq", EIO, 1) \
	X(IBV_QUERY_SRQ, "ibv_query_srq", EIO, 1) \
	X(IBV_DESTROY_SRQ, "ibv_destroy_srq", EIO, 2) \
	X(IBV_CREATE_QP, "ibv_create_qp", ENOMEM, 1) \
	X(IBV_CREATE_QP_EX, "ibv_create_qp_ex", ENOMEM, 1) \
	X(IBV_MODIFY_QP, "ibv_modify_qp", EIO, 1) \
	X(IBV_QUERY_QP, "ibv_query_qp", EIO, 1) \
	X(IBV_DESTROY_QP, "ibv_destroy_qp", EIO, 2) \
	X(IBV_QP_TO_QP_EX, "ibv_qp_to_qp_ex", 0, 0) \
	X(IBV_WR_COMPLETE, "ibv_wr_complete", ENOMEM, 1) \
	X(IBV_GET_ASYNC_EVENT, "ibv_get_async_event", EIO, 1) \
	X(IBV_ACK_ASYNC_EVENT, "ibv_ack_async_event", 0, 0) \
	X(IBV_FORK_INIT, "ibv_fork_init", EIO, 1) \
	X(RDMA_CREATE_EVENT_CHANNEL, "rdma_create_event_channel", ENOMEM, 1) \
	X(RDMA_DESTROY_EVENT_CHANNEL, "rdma_destroy_event_channel", 0, 0) \
	X(RDMA_CREATE_ID, "rdma_create_id", ENOMEM, 1) \
	X(RDMA_DESTROY_ID, "rdma_destroy_id", EIO, 2) \
	X(RDMA_MIGRATE_ID, "rdma_migrate_id", EIO, 1) \
	X(RDMA_BIND_ADDR, "rdma_bind_addr", EADDRINUSE, 1) \
	X(RDMA_LISTEN, "rdma_listen", EIO, 1) \
	X(RDMA_RESOLVE_ADDR, "rdma_resolve_addr", EIO, 1) \
	X(RDMA_RESOLVE_ROUTE, "rdma_resolve_route", EIO, 1) \
	X(RDMA_GET_SRC_PORT, "rdma_get_src_port", 0, 0) \
	X(RDMA_GET_DST_PORT, "rdma_get_dst_port", 0, 0) \
	X(RDMA_GETADDRINFO, "rdma_getaddrinfo", ENOMEM, 1) \
	X(RDMA_FREEADDRINFO, "rdma_freeaddrinfo", 0, 0) \
	X(RDMA_CREATE_QP, "rdma_create_qp", ENOMEM, 1) \
	X(RDMA_CREATE_QP_EX, "rdma_create_qp_ex", ENOMEM, 1) \
	X(RDMA_DESTROY_QP, "rdma_destroy_qp", 0, 0) \
	X(RDMA_CONNECT, "rdma_connect", EIO, 1) \
	X(RDMA_ACCEPT, "rdma_accept", EIO, 1) \
	X(RDMA_REJECT, "rdma_reject", EIO, 1) \
	X(RDMA_DISCONNECT, "rdma_disconnect", EIO, 1) \
	X(RDMA_ESTABLISH, "rdma_establish", EIO, 1) \
	X(RDMA_GET_CM_EVENT, "rdma_get_cm_event", EIO, 1) \
	X(RDMA_ACK_CM_EVENT, "rdma_ack_cm_event", 0, 0) \
	X(RDMA_GET_DEVICES, "rdma_get_devices", ENOMEM, 1) \
	X(RDMA_FREE_DEVICES, "rdma_free_devices", 0, 0) \
	X(RDMA_SET_OPTION, "rdma_set_option", EIO, 1) \
	X(RDMA_INIT_QP_ATTR, "rdma_init_qp_attr", EIO, 1) \
	X(MLX5DV_IS_SUPPORTED, "mlx5dv_is_supported", 0, 0) \
	X(MLX5DV_DEVX_CREATE_EVENT_CHANNEL, "mlx5dv_devx_create_event_channel", ENOMEM, 1) \
	X(MLX5DV_DEVX_DESTROY_EVENT_CHANNEL, "mlx5dv_devx_destroy_event_channel", 0, 0) \
	X(MLX5DV_DEVX_SUBSCRIBE_DEVX_EVENT, "mlx5dv_devx_subscribe_devx_event", EIO, 1) \
	X(MLX5DV_DEVX_GET_EVENT, "mlx5dv_devx_get_event", EIO, 1) \
	X(ALLOC_MALLOC, "malloc", ENOMEM, 3) \
	X(ALLOC_CALLOC, "calloc", ENOMEM, 3) \
	X(ALLOC_REALLOC, "realloc", ENOMEM, 3) \
	X(ALLOC_REALLOCARRAY, "reallocarray", ENOMEM, 3) \
	X(ALLOC_STRDUP, "strdup", ENOMEM, 3) \
	X(ALLOC_STRNDUP, "strndup", ENOMEM, 3) \
	X(ALLOC_POSIX_MEMALIGN, "posix_memalign", ENOMEM, 3) \
	X(ALLOC_ALIGNED_ALLOC, "aligned_alloc", ENOMEM, 3)

enum mock_fn {
#define MOCK_X_ENUM(id, name, err, cls) MF_##id,
	MOCK_FUNCS(MOCK_X_ENUM)
#undef MOCK_X_ENUM
	MF_COUNT,
	MF_ANY_ALLOC = MF_COUNT,	/* pseudo name "alloc" */
};

const char *mock_fn_name(enum mock_fn fn);

/*
 * mock_enter -- account one call of `fn` (lock held) and decide whether it
 * fails: returns 0 to proceed, or the errno to fail with. *rc is set when a
 * raw return value was scheduled (mock_fail_rc), else left alone.
 */
int mock_enter(enum mock_fn fn, int *rc);

/* ------------------------------------------------------------- locking */

void mock_lock(void);
void mock_unlock(void);
#define MOCK_LOCK() mock_lock()
#define MOCK_UNLOCK() mock_unlock()

/* fail the test loudly (drops the lock, disarms injection); never returns */
void mock_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* ---------------------------------------------------------- own memory */

void *mock_alloc(size_t size);	/* zeroed; dies on ENOMEM */
void *mock_realloc(void *p, size_t size);
void mock_free(void *p);

/* ---------------------------------------------------------- objects */

struct mock_obj {
	struct mock_obj *next, *prev;
	enum mock_kind kind;
	uint32_t magic;
	uint64_t serial;
	bool internal;		/* owned by the mocked library: never a leak */
	bool hidden;		/* not yet handed to the user (pending conn req id) */
	bool destroy_failed;	/* an injected destroy failure left it live */
};

void mock_obj_add(struct mock_obj *o, enum mock_kind kind);
void mock_obj_del(struct mock_obj *o);
/* the object whose user pointer is `ptr`, or NULL */
struct mock_obj *mock_obj_find(enum mock_kind kind, const void *ptr);
/* as mock_obj_find, but dies with "fn: bad <kind> ptr" if not found */
struct mock_obj *mock_obj_get(enum mock_kind kind, const void *ptr,
		const char *fn);
struct mock_obj *mock_obj_head(enum mock_kind kind);
void *mock_obj_user(struct mock_obj *o);

/* readable-while-pending eventfd */
struct mock_fdq {
	int fd;
	int pending;
};
void mock_fdq_open(struct mock_fdq *q);
void mock_fdq_inc(struct mock_fdq *q);
void mock_fdq_dec(struct mock_fdq *q);
void mock_fdq_close(struct mock_fdq *q, const char *what);
bool mock_fd_nonblocking(int fd);

/* ------------------------------------------------------ verbs internals */

struct mock_ctx;
struct mock_pd;
struct mock_qp;

struct mock_ctx *mock_ctx_get(struct ibv_context *ctx, const char *fn);
/* librdmacm's context of device 0 and its default PD (created lazily) */
struct mock_ctx *mock_cm_ctx(void);
struct ibv_context *mock_cm_ibv_ctx(void);
struct ibv_pd *mock_cm_default_pd(void);

/* create / destroy a QP for the CM (lock held; errno-style: NULL + errno) */
struct ibv_qp *mock_qp_create_int(struct ibv_pd *pd,
		struct ibv_qp_init_attr_ex *attr, bool ex, struct rdma_cm_id *id,
		enum ibv_qp_state initial);
int mock_qp_destroy_int(struct ibv_qp *qp, const char *fn);
void mock_qp_to_state(struct ibv_qp *qp, enum ibv_qp_state state);
void mock_qp_forget_cm_id(struct rdma_cm_id *id);

/* device template access (lock held) */
const struct ibv_device_attr_ex *mock_dev_attr_int(void);
int mock_dev_count_int(void);

/* reset / discard hooks of the parts (lock held) */
void mock_verbs_reset(void);
void mock_cm_reset(void);
void mock_alloc_reset(void);
void mock_verbs_discard_pending(void);
void mock_verbs_release_failed(void);
void mock_cm_release_failed(void);
void mock_cm_discard_pending(void);
int mock_verbs_unacked_cq(void);
int mock_verbs_unacked_async(void);
int mock_cm_unacked_total(void);

/* ---------------------------------------------- allocation tracking */

/* armed: count allocations as failable calls (run_each) */
extern int mock_alloc_armed;
/* begin / end tracking of allocations made during a scenario run */
void mock_alloc_track_begin(void);
void mock_alloc_track_end(void);
/* tracked allocations still live; prints up to 8 of them to `buf` */
size_t mock_alloc_tracked_live(char *buf, size_t bufsize);
void mock_alloc_track_clear(void);

/* set by mock_enter when any alloc-name failure is scheduled */
extern int mock_alloc_sched;

#endif /* PMREP_MOCK_INT_H */
