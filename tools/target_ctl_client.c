/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_ctl_client.c -- the client side of pmrep-target's control socket
 * (pmrep status --control, pmrep watch): send one command, copy the
 * answer's lines out as they come; watch connects again when the socket
 * closes without the target's "stopped" event.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "target_ctl_int.h"
#include "target_metrics.h"

#define WATCH_RETRY_MS 1000
#define STOPPED_PREFIX "{\"event\":\"stopped\""

/* connected to `path` with `cmd` sent: the fd; -1 (said unless quiet) */
static int
ctl_dial(const char *path, const char *cmd, bool quiet)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "pmrep: control socket path too long: %s\n", path);
		return -1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (!quiet)
			fprintf(stderr, "pmrep: control socket %s: %s (is a pmrep-target running with --control %s?)\n",
					path, strerror(errno), path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	char line[CTL_CMD_MAX + 2];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);
	if (send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
		if (!quiet)
			fprintf(stderr, "pmrep: control socket %s: %s\n", path,
					strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Copy what fd says to out until it closes: 0 closed, -1 a read error
 * (said), 1 out failed. *stopped: the last line was the target's
 * "stopped" event.
 */
static int
ctl_copy(int fd, const char *path, FILE *out, bool *stopped)
{
	char buf[4096], head[sizeof(STOPPED_PREFIX)];
	size_t hlen = 0;
	*stopped = false;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "pmrep: control socket %s: %s\n", path,
					strerror(errno));
			return -1;
		}
		if (r == 0)
			return 0;
		if (fwrite(buf, 1, (size_t)r, out) != (size_t)r || fflush(out) != 0)
			return 1;	/* stdout gone (a pipe closed): done */
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] == '\n') {
				*stopped = hlen == sizeof(head) - 1 &&
					memcmp(head, STOPPED_PREFIX, hlen) == 0;
				hlen = 0;
			} else if (hlen < sizeof(head) - 1) {
				head[hlen++] = buf[i];
			}
		}
	}
}

int
target_ctl_request(const char *path, const char *cmd, FILE *out)
{
	int fd = ctl_dial(path, cmd, false);
	if (fd < 0)
		return 1;
	bool stopped;
	int r = ctl_copy(fd, path, out, &stopped);
	close(fd);
	return r != 0;
}

int
target_ctl_metrics(const char *path, FILE *out)
{
	int fd = ctl_dial(path, "metrics", false);
	if (fd < 0)
		return 1;
	/* the whole reply first: only one that ends with the end line is
	 * printed (a cut one would read as counters that went back) */
	size_t len = 0, cap = 65536;
	char *p = malloc(cap);
	int ret = p == NULL ? -1 : 0;
	while (ret == 0) {
		if (len == cap) {
			char *q = cap < CTL_OUT_MAX * 2 ? realloc(p, cap * 2) : NULL;
			if (q == NULL) {
				ret = -1;
				break;
			}
			p = q;
			cap *= 2;
		}
		ssize_t r = read(fd, p + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "pmrep: control socket %s: %s\n", path,
					strerror(errno));
			ret = 1;
		} else if (r == 0) {
			break;
		} else {
			len += (size_t)r;
		}
	}
	close(fd);
	size_t eof = sizeof(TARGET_METRICS_EOF) - 1;
	if (ret < 0) {
		fprintf(stderr, "pmrep: control socket %s: out of memory for the metrics\n",
				path);
		ret = 1;
	} else if (ret == 0 && (len < eof ||
			memcmp(p + len - eof, TARGET_METRICS_EOF, eof) != 0 ||
			(len > eof && p[len - eof - 1] != '\n'))) {
		/* an {"error":...} line, an older target, or a cut reply */
		fprintf(stderr, "pmrep: control socket %s: no complete metrics reply (it does not end with \"# EOF\"): %.*s\n",
				path, (int)(len > 200 ? 200 : len), p ? p : "");
		ret = 1;
	} else if (ret == 0 && (fwrite(p, 1, len - eof, out) != len - eof ||
			fflush(out) != 0)) {
		ret = 1;
	}
	free(p);
	return ret;
}

int
target_ctl_watch(const char *path, FILE *out)
{
	int fd = ctl_dial(path, "watch", false);
	if (fd < 0)
		return 1;
	for (;;) {
		bool stopped;
		int r = ctl_copy(fd, path, out, &stopped);
		close(fd);
		if (r == 1)
			return 1;
		if (stopped)
			return 0;
		fprintf(stderr, "pmrep: watch: the control socket %s closed (the target ended or dropped this client); connecting again\n",
				path);
		for (;;) {
			struct timespec ts = { WATCH_RETRY_MS / 1000,
				(WATCH_RETRY_MS % 1000) * 1000000L };
			nanosleep(&ts, NULL);
			if ((fd = ctl_dial(path, "watch", true)) >= 0)
				break;
		}
		fprintf(stderr, "pmrep: watch: connected again to %s: the current state follows\n",
				path);
	}
}
