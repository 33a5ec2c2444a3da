/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_pmem_util.h -- helpers shared by the pmem layer's unit tests
 * (test_pmem.c, test_pmem_inject.c): a scratch directory on tmpfs
 * (/dev/shm), files with known contents, and a log sink that remembers
 * what pmrep logged.
 */
#ifndef TEST_PMEM_UTIL_H
#define TEST_PMEM_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <pmrep/pmem.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

#define TP_PAGE 4096u

/* the scratch directory of this test program, on tmpfs */
static char tp_dir[128] __attribute__((unused));

/* the scratch directory in BASE (a test of write-back: a disk file system,
 * /var/tmp -- a file in memory has nothing to write back and pmrep makes
 * no msync of it) */
static inline int
tp_dir_create_in(const char *base, const char *prog)
{
	snprintf(tp_dir, sizeof(tp_dir), "%s/pmrep-%s-XXXXXX", base, prog);
	return mkdtemp(tp_dir) == NULL ? -1 : 0;
}

static inline int
tp_dir_create(const char *prog)
{
	return tp_dir_create_in("/dev/shm", prog);
}

/* remove every entry of the scratch directory (flat: tests make no subdirs
 * except those they remove themselves, which rmdir handles) */
static inline void
tp_dir_empty(void)
{
	DIR *d = opendir(tp_dir);
	struct dirent *e;
	char p[512];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", tp_dir, e->d_name);
		if (unlink(p) != 0)
			(void)rmdir(p);
	}
	closedir(d);
}

static inline void
tp_dir_remove(void)
{
	tp_dir_empty();
	(void)rmdir(tp_dir);
}

/* a path in the scratch directory (a static buffer per slot 0..3) */
static inline const char *
tp_path_n(int slot, const char *name)
{
	static char buf[4][512];

	snprintf(buf[slot], sizeof(buf[slot]), "%s/%s", tp_dir, name);
	return buf[slot];
}
#define tp_path(name) tp_path_n(0, (name))

static inline bool
tp_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static inline long long
tp_file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* write a file of `size` bytes whose byte i is (seed + i) mod 251 */
static inline int
tp_make_file(const char *path, size_t size, unsigned seed)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	unsigned char buf[4096];
	size_t done = 0;
	while (done < size) {
		size_t n = size - done < sizeof(buf) ? size - done : sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = (unsigned char)((seed + done + i) % 251);
		if (write(fd, buf, n) != (ssize_t)n) {
			close(fd);
			return -1;
		}
		done += n;
	}
	return close(fd);
}

/* does the file hold the pattern tp_make_file wrote with `seed`? */
static inline bool
tp_file_has_pattern(const char *path, size_t size, unsigned seed)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	unsigned char buf[4096];
	size_t done = 0;
	bool ok = tp_file_size(path) == (long long)size;
	while (ok && done < size) {
		size_t n = size - done < sizeof(buf) ? size - done : sizeof(buf);
		if (read(fd, buf, n) != (ssize_t)n) {
			ok = false;
			break;
		}
		for (size_t i = 0; i < n && ok; i++)
			ok = buf[i] == (unsigned char)((seed + done + i) % 251);
		done += n;
	}
	close(fd);
	return ok;
}

static inline bool
tp_is_tmpfs(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

/* ---- a log sink that remembers the last message per level */

static char tp_log_last[PMREP_LOG_DEBUG + 1][512] __attribute__((unused));
static int tp_log_count[PMREP_LOG_DEBUG + 1] __attribute__((unused));

static inline void
tp_log_sink(enum pmrep_log_level level, const char *file, int line,
		const char *func, const char *msg, void *arg)
{
	(void)file;
	(void)line;
	(void)func;
	(void)arg;
	if (level < PMREP_LOG_FATAL || level > PMREP_LOG_DEBUG)
		return;
	snprintf(tp_log_last[level], sizeof(tp_log_last[level]), "%s", msg);
	tp_log_count[level]++;
}

/* capture everything down to DEBUG (nothing reaches stderr) */
static inline void
tp_log_capture(void)
{
	memset(tp_log_last, 0, sizeof(tp_log_last));
	memset(tp_log_count, 0, sizeof(tp_log_count));
	pmrep_log_set_function(tp_log_sink, NULL);
	pmrep_log_set_threshold(PMREP_LOG_DEBUG);
}

static inline void
tp_log_restore(void)
{
	pmrep_log_set_function(NULL, NULL);
	pmrep_log_set_threshold(PMREP_LOG_WARNING);
}

#endif /* TEST_PMEM_UTIL_H */
