/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_metrics.c -- pmrep-target's metrics text and its metrics file
 * (target_metrics.h): the library formats, this file only asks for the
 * text and writes it where node_exporter's textfile collector reads it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "target_metrics.h"

char *
target_metrics_text(const struct pmrep_listener *l,
		const struct pmrep_target *t, size_t *len)
{
	if (l == NULL && t == NULL)
		return NULL;
	size_t cap = 16384;
	for (int tries = 0; tries < 8; tries++) {
		char *buf = malloc(cap);
		if (buf == NULL)
			break;
		size_t need = 0;
		int ret = l != NULL ?
			pmrep_listener_get_metrics(l, buf, cap, &need) :
			pmrep_target_get_metrics(t, buf, cap, &need);
		if (ret == 0) {
			*len = need - 1;
			return buf;
		}
		free(buf);
		if (ret != PMREP_E_RANGE) {
			fprintf(stderr, "pmrep-target: metrics: %s (%s)\n",
					pmrep_err_to_str(ret), pmrep_err_msg());
			return NULL;
		}
		cap = need + need / 4;	/* room for counters that grew meanwhile */
	}
	fprintf(stderr, "pmrep-target: metrics: out of memory\n");
	return NULL;
}

static long long
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* text to PATH.tmp, renamed over PATH: 0, or -1 with errno and *what */
static int
write_atomic(const char *path, const char *text, size_t len, const char **what)
{
	size_t n = strlen(path) + sizeof(".tmp");
	char *tmp = malloc(n);
	if (tmp == NULL) {
		*what = "malloc";
		return -1;
	}
	snprintf(tmp, n, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
			0644);
	if (fd < 0) {
		*what = "open";
		goto fail;
	}
	/* 0644 whatever the umask (the unit's is 077): the collector runs as
	 * another user */
	if (fchmod(fd, 0644) != 0) {
		*what = "fchmod";
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		goto fail;
	}
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			*what = "write";
			int e = errno;
			close(fd);
			unlink(tmp);
			errno = e;
			goto fail;
		}
		off += (size_t)w;
	}
	if (close(fd) != 0) {
		*what = "close";
		int e = errno;
		unlink(tmp);
		errno = e;
		goto fail;
	}
	if (rename(tmp, path) != 0) {
		*what = "rename";
		int e = errno;
		unlink(tmp);
		errno = e;
		goto fail;
	}
	free(tmp);
	return 0;
fail:
	free(tmp);
	return -1;
}

void
target_metrics_file_tick(struct target_metrics_file *mf,
		const struct pmrep_listener *l, const struct pmrep_target *t,
		bool now)
{
	if (mf->path == NULL)
		return;
	long long ms = mono_ms();
	if (!now && ms < mf->next_ms)
		return;
	mf->next_ms = ms + mf->interval_ms;
	size_t len = 0;
	char *text = target_metrics_text(l, t, &len);
	if (text == NULL)
		return;
	const char *what = "";
	int ret = write_atomic(mf->path, text, len, &what);
	int e = errno;
	free(text);
	if (ret != 0 && !mf->failing)
		fprintf(stderr, "pmrep-target: --metrics-file %s: %s: %s (retried every %d ms; said again once it works)\n",
				mf->path, what, strerror(e), mf->interval_ms);
	else if (ret == 0 && mf->failing)
		fprintf(stderr, "pmrep-target: --metrics-file %s: written again\n",
				mf->path);
	mf->failing = ret != 0;
}
