/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mock_mlx5.c -- the mlx5 direct-verbs calls pmrep makes (DEVX event
 * channels), on the mocked devices of mock_verbs.c.
 *
 * Model (rdma-core 44 / the kernel's DEVX event file):
 *  - mlx5dv_is_supported: false by default (the mock device is a soft-RoCE
 *    one); mock_mlx5_set_supported(true) makes every device an mlx5 one.
 *    Any other mlx5dv call on a device for which it is false fails the
 *    test loudly ("mlx5dv functions may be called only if ...").
 *  - a channel's fd is a real eventfd, opened WITHOUT O_NONBLOCK and
 *    O_CLOEXEC (so the tests see what pmrep sets), readable exactly while
 *    something is queued on the channel.
 *  - mlx5dv_devx_subscribe_devx_event: unaffiliated events only (obj NULL),
 *    events_sz in bytes (1..16 u16 entries), numbers <= 255; EINVAL when the
 *    context was not opened with DEVX (mock_mlx5_set_devx(false)).
 *  - the queue is scripted: mock_mlx5_raise queues an event (with the
 *    subscription's cookie) on every channel subscribed to its type;
 *    mock_mlx5_queue_overflow queues an EOVERFLOW result.
 *  - mlx5dv_devx_get_event: EOVERFLOW for an overflow entry; EINVAL for a
 *    buffer shorter than the 8-byte header + 64-byte event; EAGAIN when
 *    empty and the fd is non-blocking (blocking: loud failure).
 * Failure injection goes through the common registry (mock_fail,
 * mock_run_each_failure): the create, subscribe and get_event calls.
 * The tests declare the mock_mlx5_* functions themselves.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <infiniband/mlx5dv.h>

#include "mock_int.h"

#define MLX5_MAGIC 0x6d6c7835u	/* "mlx5" */
#define EQE_SIZE 64		/* struct mlx5_eqe */
#define MAX_SUBS 64

struct devx_ev {
	struct devx_ev *next;
	bool overflow;
	uint64_t cookie;
	uint8_t data[EQE_SIZE];
};

struct devx_ch {
	struct mlx5dv_devx_event_channel pub;	/* handed out */
	uint32_t magic;
	struct devx_ch *next;
	struct ibv_context *ctx;
	uint32_t flags;
	int pending;
	struct devx_ev *head, *tail;
	unsigned nsubs;
	struct { uint16_t type; uint64_t cookie; } subs[MAX_SUBS];
};

static struct devx_ch *Channels;	/* newest first */
static bool Supported;
static bool Devx = true;

void mock_mlx5_reset(void);
void mock_mlx5_set_supported(bool on);
void mock_mlx5_set_devx(bool on);
int mock_mlx5_live_channels(void);
struct mlx5dv_devx_event_channel *mock_mlx5_channel_last(void);
unsigned mock_mlx5_subscriptions(struct mlx5dv_devx_event_channel *ch);
bool mock_mlx5_subscribed(struct mlx5dv_devx_event_channel *ch, uint16_t type,
		uint64_t *cookie);
int mock_mlx5_raise(struct ibv_context *ctx, uint16_t type, const void *data,
		size_t len);
void mock_mlx5_queue_overflow(struct mlx5dv_devx_event_channel *ch);
int mock_mlx5_pending(struct mlx5dv_devx_event_channel *ch);

/* ------------------------------------------------------------- helpers */

static struct devx_ch *
ch_get(struct mlx5dv_devx_event_channel *pub, const char *fn)
{
	for (struct devx_ch *c = Channels; c; c = c->next)
		if (&c->pub == pub && c->magic == MLX5_MAGIC)
			return c;
	mock_die("%s: bad DEVX event channel %p (destroyed?)", fn, (void *)pub);
}

static void
fd_signal(struct devx_ch *c)
{
	if (c->pending++ == 0) {
		uint64_t one = 1;
		if (write(c->pub.fd, &one, sizeof(one)) != sizeof(one))
			mock_die("mock_mlx5: cannot signal fd %d (closed by the "
					"code under test?): %s", c->pub.fd,
					strerror(errno));
	}
}

static void
fd_consume(struct devx_ch *c)
{
	if (--c->pending == 0) {
		uint64_t v;
		if (read(c->pub.fd, &v, sizeof(v)) != sizeof(v))
			mock_die("mock_mlx5: cannot drain fd %d: %s", c->pub.fd,
					strerror(errno));
	}
}

static void
enqueue(struct devx_ch *c, struct devx_ev *e)
{
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	fd_signal(c);
}

static void
ch_free(struct devx_ch *c, bool check_fd)
{
	for (struct devx_ch **pp = &Channels; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	while (c->head) {
		struct devx_ev *e = c->head;
		c->head = e->next;
		mock_free(e);
	}
	if (close(c->pub.fd) != 0 && errno == EBADF && check_fd)
		mock_die("mock_mlx5: the fd %d of a DEVX event channel was "
				"already closed -- never close rdma-core's fds",
				c->pub.fd);
	c->magic = MOCK_DEAD;
	mock_free(c);
}

static void
need_mlx5(struct ibv_context *ctx, const char *fn)
{
	if (!Supported)
		mock_die("%s on %s: mlx5dv functions may be called only if "
				"mlx5dv_is_supported() is true for the device", fn,
				ctx && ctx->device ? ctx->device->name : "?");
}

/* ------------------------------------------------------------ mocked API */

bool
mlx5dv_is_supported(struct ibv_device *device)
{
	int rc = 0;

	MOCK_LOCK();
	(void) mock_enter(MF_MLX5DV_IS_SUPPORTED, &rc);
	if (device == NULL)
		mock_die("mlx5dv_is_supported: NULL device");
	bool on = Supported;
	MOCK_UNLOCK();
	return on;
}

struct mlx5dv_devx_event_channel *
mlx5dv_devx_create_event_channel(struct ibv_context *context,
		enum mlx5dv_devx_create_event_channel_flags flags)
{
	int rc = 0;
	const char *fn = "mlx5dv_devx_create_event_channel";

	MOCK_LOCK();
	mock_ctx_get(context, fn);
	need_mlx5(context, fn);
	int err = mock_enter(MF_MLX5DV_DEVX_CREATE_EVENT_CHANNEL, &rc);
	if (!err && (flags & ~MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA))
		err = EINVAL;
	if (err) {
		MOCK_UNLOCK();
		errno = err;
		return NULL;
	}
	struct devx_ch *c = mock_alloc(sizeof(*c));
	/* straight to the kernel: not eventfd(), which tests may make fail */
	c->pub.fd = (int)syscall(SYS_eventfd2, 0, 0);
	if (c->pub.fd < 0)
		mock_die("mock_mlx5: eventfd: %s", strerror(errno));
	c->magic = MLX5_MAGIC;
	c->ctx = context;
	c->flags = (uint32_t)flags;
	c->next = Channels;
	Channels = c;
	MOCK_UNLOCK();
	return &c->pub;
}

void
mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel *event_channel)
{
	int rc = 0;

	MOCK_LOCK();
	struct devx_ch *c = ch_get(event_channel,
			"mlx5dv_devx_destroy_event_channel");
	(void) mock_enter(MF_MLX5DV_DEVX_DESTROY_EVENT_CHANNEL, &rc);
	ch_free(c, true);
	MOCK_UNLOCK();
}

int
mlx5dv_devx_subscribe_devx_event(struct mlx5dv_devx_event_channel *event_channel,
		struct mlx5dv_devx_obj *obj, uint16_t events_sz,
		uint16_t events_num[], uint64_t cookie)
{
	int rc = -1;
	const char *fn = "mlx5dv_devx_subscribe_devx_event";

	MOCK_LOCK();
	struct devx_ch *c = ch_get(event_channel, fn);
	need_mlx5(c->ctx, fn);
	int err = mock_enter(MF_MLX5DV_DEVX_SUBSCRIBE_DEVX_EVENT, &rc);
	unsigned n = events_sz / sizeof(uint16_t);
	if (!err && (obj != NULL || events_num == NULL || events_sz == 0 ||
			events_sz % sizeof(uint16_t) != 0 || n > 16 || !Devx))
		err = EINVAL;
	for (unsigned i = 0; !err && i < n; i++)
		if (events_num[i] > 255)
			err = EINVAL;
	if (!err && c->nsubs + n > MAX_SUBS)
		mock_die("%s: more than %d subscriptions on one channel", fn,
				MAX_SUBS);
	if (err) {
		MOCK_UNLOCK();
		errno = err;
		return rc;
	}
	for (unsigned i = 0; i < n; i++) {
		c->subs[c->nsubs].type = events_num[i];
		c->subs[c->nsubs].cookie = cookie;
		c->nsubs++;
	}
	MOCK_UNLOCK();
	return 0;
}

ssize_t
mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *event_channel,
		struct mlx5dv_devx_async_event_hdr *event_data,
		size_t event_resp_len)
{
	int rc = -1;
	const char *fn = "mlx5dv_devx_get_event";

	MOCK_LOCK();
	struct devx_ch *c = ch_get(event_channel, fn);
	need_mlx5(c->ctx, fn);
	if (event_data == NULL)
		mock_die("%s: NULL buffer", fn);
	int err = mock_enter(MF_MLX5DV_DEVX_GET_EVENT, &rc);
	if (err) {
		MOCK_UNLOCK();
		errno = err;
		return rc;
	}
	struct devx_ev *e = c->head;
	if (e == NULL) {
		if (!mock_fd_nonblocking(c->pub.fd))
			mock_die("%s: nothing queued and the channel fd is "
					"blocking: the real call would block "
					"forever", fn);
		MOCK_UNLOCK();
		errno = EAGAIN;
		return -1;
	}
	bool omit = c->flags & MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA;
	size_t size = sizeof(*event_data) + (omit ? 0 : EQE_SIZE);
	if (!e->overflow && event_resp_len < size) {
		MOCK_UNLOCK();
		errno = EINVAL;
		return -1;
	}
	c->head = e->next;
	if (c->head == NULL)
		c->tail = NULL;
	fd_consume(c);
	ssize_t ret;
	if (e->overflow) {
		errno = EOVERFLOW;
		ret = -1;
	} else {
		event_data->cookie = e->cookie;
		if (!omit)
			memcpy(event_data->out_data, e->data, EQE_SIZE);
		ret = (ssize_t)size;
	}
	mock_free(e);
	MOCK_UNLOCK();
	if (ret < 0)
		errno = EOVERFLOW;
	return ret;
}

/* --------------------------------------------------------------- test API */

void
mock_mlx5_reset(void)
{
	MOCK_LOCK();
	while (Channels)
		ch_free(Channels, false);
	Supported = false;
	Devx = true;
	MOCK_UNLOCK();
}

void
mock_mlx5_set_supported(bool on)
{
	MOCK_LOCK();
	Supported = on;
	MOCK_UNLOCK();
}

void
mock_mlx5_set_devx(bool on)
{
	MOCK_LOCK();
	Devx = on;
	MOCK_UNLOCK();
}

int
mock_mlx5_live_channels(void)
{
	int n = 0;

	MOCK_LOCK();
	for (struct devx_ch *c = Channels; c; c = c->next)
		n++;
	MOCK_UNLOCK();
	return n;
}

struct mlx5dv_devx_event_channel *
mock_mlx5_channel_last(void)
{
	MOCK_LOCK();
	struct mlx5dv_devx_event_channel *p = Channels ? &Channels->pub : NULL;
	MOCK_UNLOCK();
	return p;
}

unsigned
mock_mlx5_subscriptions(struct mlx5dv_devx_event_channel *ch)
{
	MOCK_LOCK();
	unsigned n = ch_get(ch, "mock_mlx5_subscriptions")->nsubs;
	MOCK_UNLOCK();
	return n;
}

bool
mock_mlx5_subscribed(struct mlx5dv_devx_event_channel *ch, uint16_t type,
		uint64_t *cookie)
{
	bool found = false;

	MOCK_LOCK();
	struct devx_ch *c = ch_get(ch, "mock_mlx5_subscribed");
	for (unsigned i = 0; i < c->nsubs && !found; i++) {
		if (c->subs[i].type == type) {
			found = true;
			if (cookie)
				*cookie = c->subs[i].cookie;
		}
	}
	MOCK_UNLOCK();
	return found;
}

int
mock_mlx5_raise(struct ibv_context *ctx, uint16_t type, const void *data,
		size_t len)
{
	int n = 0;

	MOCK_LOCK();
	if (len > EQE_SIZE)
		mock_die("mock_mlx5_raise: %zu bytes of event data (max %d)",
				len, EQE_SIZE);
	for (struct devx_ch *c = Channels; c; c = c->next) {
		if (c->ctx != ctx)
			continue;
		for (unsigned i = 0; i < c->nsubs; i++) {
			if (c->subs[i].type != type)
				continue;
			struct devx_ev *e = mock_alloc(sizeof(*e));
			e->cookie = c->subs[i].cookie;
			if (len)
				memcpy(e->data, data, len);
			enqueue(c, e);
			n++;
		}
	}
	MOCK_UNLOCK();
	return n;
}

void
mock_mlx5_queue_overflow(struct mlx5dv_devx_event_channel *ch)
{
	MOCK_LOCK();
	struct devx_ch *c = ch_get(ch, "mock_mlx5_queue_overflow");
	struct devx_ev *e = mock_alloc(sizeof(*e));
	e->overflow = true;
	enqueue(c, e);
	MOCK_UNLOCK();
}

int
mock_mlx5_pending(struct mlx5dv_devx_event_channel *ch)
{
	MOCK_LOCK();
	int n = ch_get(ch, "mock_mlx5_pending")->pending;
	MOCK_UNLOCK();
	return n;
}
