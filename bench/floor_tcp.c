/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * floor_tcp.c -- the tcp floor: what two processes get from a plain TCP
 * socket on the same link, with nothing of pmrep in between. The server
 * answers in a thread of the bench's server process with blocking
 * recv/send into one buffer (as lean as a TCP echo gets: one recv
 * usually holds a whole small message, one send answers); the client is
 * the bench's own process. A pmrep tcp persist of S bytes (write +
 * flush) moves S bytes there and an acknowledgement back, so its floor is
 * the ping-pong of S bytes against an 8-byte reply; pipelined persists
 * are held against a stream of S-byte messages, handed to the kernel 64
 * at a time (one sendmsg), the most a sender can get out of the socket.
 * With `spin` the client waits for replies the way pmrep's initiator does
 * with --wait poll: recv(MSG_DONTWAIT) in a loop instead of a blocking
 * recv; the server always blocks (pmrep's replica side is a progress
 * thread blocking in poll(2)).
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench.h"

#define SERVE_BUF (256u * 1024)
#define WARMUP_MS 20
#define STREAM_VEC 64		/* messages per sendmsg in the stream */

static pthread_t Serve_thread;
static bool Serve_started;

static int
send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* receive exactly len bytes; spin: busy-poll (MSG_DONTWAIT), never sleep */
static int
recv_exact(int fd, void *buf, size_t len, bool spin)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = recv(fd, p, len, spin ? MSG_DONTWAIT : 0);
		if (n < 0 && (errno == EINTR || (spin && (errno == EAGAIN ||
				errno == EWOULDBLOCK))))
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
recv_all(int fd, void *buf, size_t len)
{
	return recv_exact(fd, buf, len, false);
}

static int
recv_reply(int fd, void *buf, size_t len, bool spin)
{
	return recv_exact(fd, buf, len, spin);
}

static uint32_t
get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		(uint32_t)p[3] << 24;
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void *
serve_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint8_t *buf = malloc(SERVE_BUF);
	static const uint8_t ack[8] = { 'A', 'C', 'K', 0, 0, 0, 0, 0 };
	size_t start = 0, end = 0;
	uint64_t skip = 0;	/* payload bytes of the current message left */
	bool want_ack = false;

	if (buf == NULL)
		goto out;
	for (;;) {
		if (start == end) {
			start = end = 0;
		} else if (start > 0 && SERVE_BUF - end < 8) {
			memmove(buf, buf + start, end - start);
			end -= start;
			start = 0;
		}
		ssize_t n = recv(fd, buf + end, SERVE_BUF - end, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		end += (size_t)n;
		for (;;) {
			if (skip > 0) {
				size_t k = end - start < skip ? end - start :
					(size_t)skip;
				start += k;
				skip -= k;
				if (skip > 0)
					break;
				if (want_ack && send_all(fd, ack, sizeof(ack)))
					goto out;
				want_ack = false;
				continue;
			}
			if (end - start < 8)
				break;
			uint32_t len = get_le32(buf + start);
			uint32_t flags = get_le32(buf + start + 4);
			start += 8;
			want_ack = (flags & FLOOR_F_ACK) != 0;
			skip = len;
			if (len == 0) {
				if (want_ack && send_all(fd, ack, sizeof(ack)))
					goto out;
				want_ack = false;
			}
		}
	}
out:
	free(buf);
	close(fd);
	return NULL;
}

int
floor_tcp_serve_start(int fd)
{
	if (pthread_create(&Serve_thread, NULL, serve_main,
			(void *)(intptr_t)fd) != 0)
		return -1;
	Serve_started = true;
	return 0;
}

void
floor_tcp_serve_join(void)
{
	if (Serve_started)
		pthread_join(Serve_thread, NULL);
	Serve_started = false;
}

int
floor_tcp_init(struct floor_tcp *f, int fd, size_t max_payload)
{
	f->fd = fd;
	f->cap = max_payload + 8;
	f->buf = calloc(1, f->cap);
	return f->buf ? 0 : -1;
}

void
floor_tcp_fini(struct floor_tcp *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->buf);
	f->buf = NULL;
}

static void
set_header(struct floor_tcp *f, size_t size, uint32_t flags)
{
	put_le32(f->buf, (uint32_t)size);
	put_le32(f->buf + 4, flags);
}

int
floor_tcp_pingpong(struct floor_tcp *f, size_t size, int ms, bool spin,
		struct bench_samples *s)
{
	uint8_t reply[8];
	if (size + 8 > f->cap)
		return -1;
	set_header(f, size, FLOOR_F_ACK);
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0;
	for (;;) {
		uint64_t a = bench_now_ns();
		if (a >= end)
			break;
		if (send_all(f->fd, f->buf, size + 8) ||
				recv_reply(f->fd, reply, sizeof(reply), spin))
			return -1;
		uint64_t b = bench_now_ns();
		s->all_ops++;
		if (a >= warm_end) {
			if (begin == 0)
				begin = a;
			bench_samples_add(s, b - a, size);
			s->elapsed_ns = b - begin;
		}
	}
	return 0;
}

/* send every byte of iov[0..n) (modified on the way) */
static int
sendv_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		struct msghdr m;
		memset(&m, 0, sizeof(m));
		m.msg_iov = iov;
		m.msg_iovlen = (size_t)n;
		ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		size_t left = (size_t)k;
		while (n > 0 && left >= iov->iov_len) {
			left -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return 0;
}

int
floor_tcp_stream(struct floor_tcp *f, size_t size, unsigned burst, int ms,
		bool spin, struct bench_samples *s)
{
	uint8_t reply[8], hdr[2][8];
	struct iovec iov[2 * STREAM_VEC];
	if (size + 8 > f->cap || burst == 0)
		return -1;
	put_le32(hdr[0], (uint32_t)size);
	put_le32(hdr[0] + 4, 0);
	put_le32(hdr[1], (uint32_t)size);
	put_le32(hdr[1] + 4, FLOOR_F_ACK);
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0;
	for (;;) {
		uint64_t a = bench_now_ns();
		if (a >= end)
			break;
		/* as many messages per sendmsg as a sender can give the
		 * kernel at once: the most this socket can carry */
		for (unsigned i = 0; i < burst;) {
			int n = 0;
			for (; i < burst && n < 2 * STREAM_VEC; i++) {
				iov[n].iov_base = hdr[i + 1 == burst];
				iov[n++].iov_len = 8;
				iov[n].iov_base = f->buf + 8;
				iov[n++].iov_len = size;
			}
			if (sendv_all(f->fd, iov, n))
				return -1;
		}
		if (recv_reply(f->fd, reply, sizeof(reply), spin))
			return -1;
		uint64_t b = bench_now_ns();
		s->all_ops += burst;
		if (a >= warm_end) {
			if (begin == 0)
				begin = a;
			/* one sample per burst: its time per message */
			bench_samples_add(s, (b - a) / burst, size * burst);
			s->ops += burst - 1;
			s->elapsed_ns = b - begin;
		}
	}
	return 0;
}

/*
 * The same ping-pong with one hand-off each way, the way a design with a
 * progress thread per connection must do it: the caller wakes an I/O
 * thread through an eventfd, the thread sends and waits for the reply,
 * then wakes the caller through another eventfd (which it polls, then
 * reads; with `spin`, reads without blocking in a loop, as pmrep's
 * application thread busy-polls its CQ with --wait poll). The I/O thread
 * always blocks. No pmrep code: what such a design costs at the least.
 */
struct handoff {
	struct floor_tcp *f;
	size_t size;
	int to_io, to_app;
	atomic_bool stop;
	int err;
};

static void *
handoff_io(void *arg)
{
	struct handoff *h = arg;
	uint8_t reply[8];
	uint64_t v;
	for (;;) {
		if (read(h->to_io, &v, sizeof(v)) != sizeof(v)) {
			if (errno == EINTR)
				continue;
			h->err = -1;
			break;
		}
		if (atomic_load(&h->stop))
			break;
		if (send_all(h->f->fd, h->f->buf, h->size + 8) ||
				recv_all(h->f->fd, reply, sizeof(reply))) {
			h->err = -1;
			v = 1;
			(void) !write(h->to_app, &v, sizeof(v));
			break;
		}
		v = 1;
		if (write(h->to_app, &v, sizeof(v)) != sizeof(v)) {
			h->err = -1;
			break;
		}
	}
	return NULL;
}

int
floor_tcp_handoff(struct floor_tcp *f, size_t size, int ms, bool spin,
		struct bench_samples *s)
{
	if (size + 8 > f->cap)
		return -1;
	struct handoff h = { .f = f, .size = size };
	h.to_io = eventfd(0, EFD_CLOEXEC);
	h.to_app = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h.to_io < 0 || h.to_app < 0)
		return -1;
	set_header(f, size, FLOOR_F_ACK);
	pthread_t th;
	if (pthread_create(&th, NULL, handoff_io, &h)) {
		close(h.to_io);
		close(h.to_app);
		return -1;
	}
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0, v = 1;
	int ret = 0;
	for (;;) {
		uint64_t a = bench_now_ns();
		if (a >= end)
			break;
		v = 1;
		if (write(h.to_io, &v, sizeof(v)) != sizeof(v)) {
			ret = -1;
			break;
		}
		struct pollfd p = { h.to_app, POLLIN, 0 };
		while (read(h.to_app, &v, sizeof(v)) != sizeof(v))
			if (!spin)
				(void) poll(&p, 1, -1);
		if (h.err) {
			ret = -1;
			break;
		}
		uint64_t b = bench_now_ns();
		s->all_ops++;
		if (a >= warm_end) {
			if (begin == 0)
				begin = a;
			bench_samples_add(s, b - a, size);
			s->elapsed_ns = b - begin;
		}
	}
	atomic_store(&h.stop, true);
	v = 1;
	(void) !write(h.to_io, &v, sizeof(v));
	pthread_join(th, NULL);
	close(h.to_io);
	close(h.to_app);
	return ret;
}
