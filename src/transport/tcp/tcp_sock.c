/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_sock.c -- socket helpers of the tcp provider: address resolution,
 * the options every connected socket gets, and a bounded write.
 */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "tcp.h"
#include "transport/common.h"

int
tcp_sock_resolve(const char *addr, const char *port, bool passive,
		struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV |
		(passive ? AI_PASSIVE : 0);
	struct addrinfo *res = NULL;
	int r = getaddrinfo(addr, port, &hints, &res);
	if (r == EAI_NONAME) {
		/* a host name: the resolver's own limits apply */
		hints.ai_flags &= ~AI_NUMERICHOST;
		r = getaddrinfo(addr, port, &hints, &res);
	}
	if (r != 0) {
		PMREP_LOG_ERR("cannot resolve %s:%s: %s", addr, port,
				gai_strerror(r));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void
set_int(int fd, int level, int name, int val, const char *what)
{
	if (setsockopt(fd, level, name, &val, sizeof(val)) != 0)
		PMREP_LOG_WARN("setsockopt(%s): %s", what, strerror(errno));
}

void
tcp_sock_tune(int fd, int timeout_ms)
{
	long long live = tcp_live_period(timeout_ms);
	/* small frames go out at once; batching is done above the socket */
	set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	/*
	 * Backstops under the heartbeat (tcp_live.c), which keeps bytes
	 * in flight at least every L / 4: data the peer's kernel does not
	 * acknowledge for L ends the socket (a blackholed or dead host; a
	 * frozen process still acknowledges: the heartbeat's silence rule
	 * finds it). Keepalive after L / 2 idle covers a v1 peer with nothing
	 * to send either way; with TCP_USER_TIMEOUT set the kernel aborts a
	 * keepalive-probed socket once L passed without an acknowledgment.
	 * Keepalive's unit is the second: at least 1.
	 */
	int idle = (int)(live / 2000);
	int count = (int)(live / 1000);
	set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
	idle = idle < 1 ? 1 : idle > 32767 ? 32767 : idle;	/* the kernel's range */
	count = count < 1 ? 1 : count > 127 ? 127 : count;
	set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, idle, "TCP_KEEPIDLE");
	set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, 1, "TCP_KEEPINTVL");
	set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, count, "TCP_KEEPCNT");
	set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT,
			live > INT_MAX ? INT_MAX : (int)live, "TCP_USER_TIMEOUT");
}

void
tcp_sock_send_now(int fd, uint8_t type, uint32_t status)
{
	struct tcp_frame f;
	memset(&f, 0, sizeof(f));
	f.type = type;
	f.status = status;
	uint8_t hdr[TCP_WIRE_HDR_MAX];
	size_t n = tcp_wire_encode(&f, hdr);
	/* 16 bytes at most: they fit unless the peer stopped reading long
	 * ago, and then it does not matter */
	ssize_t r = send(fd, hdr, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void) r;
}

void
tcp_sock_close_gently(int fd)
{
	uint8_t sink[4096];
	for (int i = 0; i < 64; i++)
		if (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) <= 0)
			break;
	close(fd);
}

int
tcp_sock_write_all(int fd, const void *buf, size_t len, long long deadline_ms)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		int left = tcp_poll_ms(deadline_ms, pmrep_now_ms());
		if (left == 0)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}
