/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_ctl_client.c -- the client side of pmrep-target's control socket
 * (pmrep status --control, pmrep watch): send one command, copy the
 * answer's lines out as they come.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "target_ctl_int.h"

int
target_ctl_request(const char *path, const char *cmd, FILE *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "pmrep: control socket path too long: %s\n", path);
		return 1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "pmrep: control socket %s: %s (is a pmrep-target running with --control %s?)\n",
				path, strerror(errno), path);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	char line[CTL_CMD_MAX + 2];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);
	if (send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
		fprintf(stderr, "pmrep: control socket %s: %s\n", path, strerror(errno));
		close(fd);
		return 1;
	}
	char buf[4096];
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "pmrep: control socket %s: %s\n", path,
					strerror(errno));
			close(fd);
			return 1;
		}
		if (r == 0)
			break;
		if (fwrite(buf, 1, (size_t)r, out) != (size_t)r || fflush(out) != 0) {
			close(fd);
			return 1;	/* stdout gone (a pipe closed): done */
		}
	}
	close(fd);
	return 0;
}
