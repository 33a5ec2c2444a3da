/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_keys.c -- pmrep-target's keys: read from --key-file paths and
 * every NAME.key of a --key-dir (a directory only its owner may write
 * into), at most PMREP_TARGET_MAX_KEYS, each with its own id; on SIGHUP
 * read again, the new ones added before the gone ones are removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target_keys.h"

/* one more key, from `path`: 0, or -1 (said why on stderr) */
static int
keyset_add_file(struct keyset *ks, const char *path, unsigned flags)
{
	if (ks->n == PMREP_TARGET_MAX_KEYS) {
		fprintf(stderr, "pmrep-target: %s: more than %d keys in all (--key-file and --key-dir): remove one\n",
				path, PMREP_TARGET_MAX_KEYS);
		return -1;
	}
	unsigned i = ks->n;
	int ret = pmrep_key_read_file_ex(path, flags, ks->key[i],
			sizeof(ks->key[i]), &ks->len[i], &ks->id[i]);
	if (ret) {
		fprintf(stderr, "pmrep-target: %s: %s\n", path, pmrep_err_msg());
		return -1;
	}
	snprintf(ks->from[i], sizeof(ks->from[i]), "%s", path);
	for (unsigned j = 0; j < i; j++) {
		if (ks->id[j] == ks->id[i]) {
			fprintf(stderr, "pmrep-target: %s and %s both hold key id %u: each key needs its own id (pmrep keygen --key-id N)\n",
					ks->from[j], path, ks->id[i]);
			return -1;
		}
	}
	ks->n++;
	return 0;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* a key file name: NAME.key, NAME not empty, not starting with '.' */
static bool
is_key_name(const char *name)
{
	size_t len = strlen(name);
	return len > 4 && name[0] != '.' && strcmp(name + len - 4, ".key") == 0;
}

/*
 * every DIR/NAME.key, in name order: 0, or -1 (said why on stderr). DIR
 * itself must be ours and writable by nobody else (whoever may create a
 * file there could add a key), unless PMREP_KEY_FILE_INSECURE_OK; a
 * NAME.key that is a symbolic link or not a regular file is refused, as
 * --key-file refuses a link (and pmrep_key_read_file_ex opens it with
 * O_NOFOLLOW: a link swapped in meanwhile is refused too).
 */
static int
keyset_add_dir(struct keyset *ks, const char *dir, unsigned flags)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s\n", dir,
				strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(dfd, &st) != 0) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s\n", dir,
				strerror(errno));
		close(dfd);
		return -1;
	}
	if ((st.st_uid != geteuid() || (st.st_mode & 022)) &&
			!(flags & PMREP_KEY_FILE_INSECURE_OK)) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s: whoever may create a file there may add a key (chmod go-w, chown; or --insecure-key-file)\n",
				dir, st.st_uid != geteuid() ? "owned by another user" :
				"group or others may write into it");
		close(dfd);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		fprintf(stderr, "pmrep-target: warning: --key-dir %s: others may add keys to it (--insecure-key-file)\n",
				dir);
	DIR *d = fdopendir(dfd);
	if (d == NULL) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s\n", dir,
				strerror(errno));
		close(dfd);
		return -1;
	}
	/* one more name than keys fit: enough to say "too many" */
	char *names[PMREP_TARGET_MAX_KEYS + 1];
	unsigned n = 0;
	int ret = 0;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d)) != NULL) {
		if (!is_key_name(e->d_name))
			continue;
		if (n + ks->n == PMREP_TARGET_MAX_KEYS) {
			fprintf(stderr, "pmrep-target: --key-dir %s: more than %d keys in all (--key-file and --key-dir): remove one\n",
					dir, PMREP_TARGET_MAX_KEYS);
			ret = -1;
			break;
		}
		names[n] = strdup(e->d_name);
		if (names[n] == NULL) {
			fprintf(stderr, "pmrep-target: out of memory\n");
			ret = -1;
			break;
		}
		n++;
		errno = 0;
	}
	if (ret == 0 && errno != 0) {
		fprintf(stderr, "pmrep-target: --key-dir %s: %s\n", dir,
				strerror(errno));
		ret = -1;
	}
	if (ret == 0)
		qsort(names, n, sizeof(names[0]), name_cmp);
	for (unsigned i = 0; ret == 0 && i < n; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
			fprintf(stderr, "pmrep-target: %s: %s\n", path,
					strerror(errno));
			ret = -1;
		} else if (!S_ISREG(st.st_mode)) {
			fprintf(stderr, "pmrep-target: %s: %s: refused\n", path,
					S_ISLNK(st.st_mode) ? "a symbolic link" :
					"not a regular file");
			ret = -1;
		} else {
			ret = keyset_add_file(ks, path, flags);
		}
	}
	for (unsigned i = 0; i < n; i++)
		free(names[i]);
	closedir(d);
	return ret;
}

int
keyset_read(struct keyset *ks, const struct keysrc *src)
{
	memset(ks, 0, sizeof(*ks));
	int ret = 0;
	for (unsigned i = 0; ret == 0 && i < src->nfiles; i++)
		ret = keyset_add_file(ks, src->files[i], src->flags);
	if (ret == 0 && src->dir != NULL)
		ret = keyset_add_dir(ks, src->dir, src->flags);
	if (ret == 0 && ks->n == 0) {
		fprintf(stderr, "pmrep-target: --key-dir %s holds no key file (NAME.key)\n",
				src->dir);
		ret = -1;
	}
	if (ret)
		memset(ks, 0, sizeof(*ks));
	return ret;
}

int
keyset_to_cfg(const struct keyset *ks, struct pmrep_target_cfg *cfg)
{
	for (unsigned i = 0; i < ks->n; i++) {
		int ret = pmrep_target_cfg_add_key(cfg, ks->id[i], ks->key[i],
				ks->len[i]);
		if (ret)
			return ret;
	}
	return 0;
}

void
keyset_reload(struct keyset *ks, struct pmrep_target *t,
		const struct keysrc *src, const char *who)
{
	static struct keyset next;	/* 16 KiB of names: not on the stack */
	if (keyset_read(&next, src) != 0) {
		fprintf(stderr, "pmrep-target: SIGHUP: %sthe keys stay as they were\n",
				who);
		return;
	}
	/* add (or replace) the new ones first: never without a key; one
	 * that finds the table full (4 held, one of them going) is added
	 * once the gone ones are removed */
	bool later[PMREP_TARGET_MAX_KEYS] = { false };
	for (unsigned i = 0; i < next.n; i++) {
		int r = pmrep_target_add_key(t, next.id[i], next.key[i], next.len[i]);
		if (r == PMREP_E_RANGE)
			later[i] = true;
		else if (r != 0)
			fprintf(stderr, "pmrep-target: SIGHUP: %skey id %u: %s\n",
					who, next.id[i], pmrep_err_msg());
	}
	for (unsigned i = 0; i < ks->n; i++) {
		bool kept = false;
		for (unsigned j = 0; j < next.n; j++)
			kept = kept || next.id[j] == ks->id[i];
		if (!kept)
			(void) pmrep_target_remove_key(t, ks->id[i]);
	}
	for (unsigned i = 0; i < next.n; i++)
		if (later[i] && pmrep_target_add_key(t, next.id[i], next.key[i],
				next.len[i]) != 0)
			fprintf(stderr, "pmrep-target: SIGHUP: %skey id %u: %s\n",
					who, next.id[i], pmrep_err_msg());
	*ks = next;
	memset(&next, 0, sizeof(next));
	fprintf(stderr, "pmrep-target: SIGHUP: %s%u key(s) held\n", who, ks->n);
}
