/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_conf.h -- pmrep-target's config file (--config FILE): the format
 * is docs/man/pmrep-target.8.md "CONFIGURATION FILE". Parsed whole into a
 * struct tconf before anything is opened; a malformed file is an error
 * naming FILE:LINE and nothing of it is used.
 */
#ifndef PMREP_TOOLS_TARGET_CONF_H
#define PMREP_TOOLS_TARGET_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include <pmrep/repl.h>

#define TCONF_MAX_REPLICAS 256
#define TCONF_MAX_TLS_NAMES 8
#define TCONF_NAME_MAX 20	/* a replica name: the HELLO's selector */

struct tconf_replica {
	char name[TCONF_NAME_MAX + 1];
	unsigned line;			/* of its [replica NAME] */
	char *path;
	uint64_t size;			/* 0: whatever the header says */
	bool create;
	bool staging;
	bool direct;			/* direct-write-to-pmem */
	int timeout_ms;			/* 0: the global one */
	char *key_files[PMREP_TARGET_MAX_KEYS];
	unsigned nkey_files;
	char *key_dir;			/* NULL: none */
	char *tls_names[TCONF_MAX_TLS_NAMES];
	unsigned ntls_names;
};

struct tconf {
	char *file;			/* where it was read from */
	char *addr;			/* default 127.0.0.1 */
	char *port;			/* default 7204 */
	bool tls;			/* default on */
	int timeout_ms;			/* default 5000 */
	char *log_file;			/* NULL: stderr */
	char *control;			/* control socket path; NULL: none */
	char *control_group;		/* its group; NULL: mode 0600 */
	char *metrics_file;		/* metrics-file: NULL none */
	int metrics_interval_ms;	/* metrics-interval: 0 not given */
	bool insecure_key_file;
	char *tls_names[TCONF_MAX_TLS_NAMES];
	unsigned ntls_names;
	struct tconf_replica *r;
	unsigned n;
};

/*
 * read and check `file` into *c (zeroed first): 0, or -1 with one line
 * "FILE:LINE: what" (or "FILE: what") written into err[errlen] and *c
 * freed. Opens no replica, reads no key file.
 */
int tconf_read(const char *file, struct tconf *c, char *err, size_t errlen);
/* free what tconf_read allocated (a zeroed struct is fine) */
void tconf_free(struct tconf *c);
/* its replica named `name`, or NULL */
const struct tconf_replica *tconf_find(const struct tconf *c, const char *name);
/* do two replicas of one name differ in what needs them opened again
 * (path, size, create, staging, direct-write, timeout, TLS names)? */
bool tconf_replica_reopen_differs(const struct tconf_replica *a,
		const struct tconf_replica *b);

/* a time limit in ms, 1 .. INT_MAX: 0 or -1 */
int tconf_parse_ms(const char *s, int *out);

#endif
