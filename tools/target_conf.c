/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_conf.c -- pmrep-target's config file: lines of "key = value",
 * '#' comments, a [replica NAME] section per replica; the keys before the
 * first section (or in [global]) are the endpoint's. Every error names
 * FILE:LINE.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size_parse.h"
#include "target_conf.h"

/* a time limit in ms: 1 .. INT_MAX, digits only (atoi takes "abc" as 0
 * and overflows silently) */
int
tconf_parse_ms(const char *s, int *out)
{
	char *end;
	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end != '\0' || v <= 0 || v > INT_MAX)
		return -1;
	*out = (int)v;
	return 0;
}

void
tconf_free(struct tconf *c)
{
	free(c->file);
	free(c->addr);
	free(c->port);
	free(c->log_file);
	free(c->control);
	free(c->control_group);
	free(c->metrics_file);
	for (unsigned i = 0; i < c->ntls_names; i++)
		free(c->tls_names[i]);
	for (unsigned i = 0; i < c->n; i++) {
		struct tconf_replica *r = &c->r[i];
		free(r->path);
		free(r->key_dir);
		for (unsigned j = 0; j < r->nkey_files; j++)
			free(r->key_files[j]);
		for (unsigned j = 0; j < r->ntls_names; j++)
			free(r->tls_names[j]);
	}
	free(c->r);
	memset(c, 0, sizeof(*c));
}

const struct tconf_replica *
tconf_find(const struct tconf *c, const char *name)
{
	for (unsigned i = 0; i < c->n; i++)
		if (strcmp(c->r[i].name, name) == 0)
			return &c->r[i];
	return NULL;
}

static bool
str_differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

bool
tconf_replica_reopen_differs(const struct tconf_replica *a,
		const struct tconf_replica *b)
{
	if (str_differs(a->path, b->path) || a->size != b->size ||
			a->create != b->create || a->staging != b->staging ||
			a->direct != b->direct || a->timeout_ms != b->timeout_ms ||
			a->ntls_names != b->ntls_names)
		return true;
	for (unsigned i = 0; i < a->ntls_names; i++)
		if (strcmp(a->tls_names[i], b->tls_names[i]) != 0)
			return true;
	return false;
}

/* the parse's state: where, and the error */
struct ctx {
	const char *file;
	unsigned line;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3)))
static int
fail(struct ctx *x, const char *fmt, ...)
{
	int off = x->line ? snprintf(x->err, x->errlen, "%s:%u: ", x->file, x->line) :
		snprintf(x->err, x->errlen, "%s: ", x->file);
	if (off < 0 || (size_t)off >= x->errlen)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->err + off, x->errlen - (size_t)off, fmt, ap);
	va_end(ap);
	return -1;
}

static char *
trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' ||
			s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

static int
parse_bool(struct ctx *x, const char *key, const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") ||
			!strcmp(v, "1")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") ||
			!strcmp(v, "0")) {
		*out = false;
		return 0;
	}
	return fail(x, "%s = %s: not yes / no (true / false, on / off, 1 / 0)",
			key, v);
}

/* a string value: once per section */
static int
set_once(struct ctx *x, const char *key, const char *v, char **dst)
{
	if (*dst != NULL)
		return fail(x, "%s given twice", key);
	if (v[0] == '\0')
		return fail(x, "%s is empty", key);
	*dst = strdup(v);
	return *dst ? 0 : fail(x, "out of memory");
}

static int
add_tls_name(struct ctx *x, const char *v, char **names, unsigned *n)
{
	if (*n == TCONF_MAX_TLS_NAMES)
		return fail(x, "more than %d tls-name", TCONF_MAX_TLS_NAMES);
	if (v[0] == '\0' || strlen(v) > 63 || strchr(v, ':') == NULL)
		return fail(x, "tls-name = %s: a numeric HOST:PORT of at most 63 bytes",
				v);
	names[*n] = strdup(v);
	if (names[*n] == NULL)
		return fail(x, "out of memory");
	(*n)++;
	return 0;
}

static int
global_key(struct ctx *x, struct tconf *c, const char *k, const char *v,
		bool *seen_addr, bool *seen_port)
{
	if (!strcmp(k, "address")) {
		if (*seen_addr)
			return fail(x, "address given twice");
		*seen_addr = true;
		free(c->addr);
		c->addr = NULL;
		return set_once(x, k, v, &c->addr);
	}
	if (!strcmp(k, "port")) {
		if (*seen_port)
			return fail(x, "port given twice");
		*seen_port = true;
		char *end;
		errno = 0;
		long p = strtol(v, &end, 10);
		if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno ||
				p < 0 || p > 65535)
			return fail(x, "port = %s: a number 0..65535", v);
		free(c->port);
		c->port = NULL;
		return set_once(x, k, v, &c->port);
	}
	if (!strcmp(k, "tls"))
		return parse_bool(x, k, v, &c->tls);
	if (!strcmp(k, "tls-name"))
		return add_tls_name(x, v, c->tls_names, &c->ntls_names);
	if (!strcmp(k, "timeout"))
		return tconf_parse_ms(v, &c->timeout_ms) ?
			fail(x, "timeout = %s: milliseconds, 1..%d", v, INT_MAX) : 0;
	if (!strcmp(k, "log-file"))
		return set_once(x, k, v, &c->log_file);
	if (!strcmp(k, "insecure-key-file"))
		return parse_bool(x, k, v, &c->insecure_key_file);
	if (!strcmp(k, "control"))
		return set_once(x, k, v, &c->control);
	if (!strcmp(k, "control-group"))
		return set_once(x, k, v, &c->control_group);
	if (!strcmp(k, "metrics-file"))
		return set_once(x, k, v, &c->metrics_file);
	if (!strcmp(k, "metrics-interval"))
		return tconf_parse_ms(v, &c->metrics_interval_ms) ||
			c->metrics_interval_ms < 100 ?
			fail(x, "metrics-interval = %s: milliseconds, 100..%d", v, INT_MAX) : 0;
	return fail(x, "unknown key \"%s\" (before any [replica NAME]: address, port, tls, tls-name, timeout, log-file, insecure-key-file, control, control-group, metrics-file, metrics-interval)",
			k);
}

static int
replica_key(struct ctx *x, struct tconf_replica *r, const char *k,
		const char *v, bool *seen_size)
{
	if (!strcmp(k, "path"))
		return set_once(x, k, v, &r->path);
	if (!strcmp(k, "size")) {
		if (*seen_size)
			return fail(x, "size given twice");
		*seen_size = true;
		return tool_parse_size(v, &r->size) ?
			fail(x, "size = %s: bytes, with K / M / G for KiB / MiB / GiB",
					v) : 0;
	}
	if (!strcmp(k, "create"))
		return parse_bool(x, k, v, &r->create);
	if (!strcmp(k, "staging"))
		return parse_bool(x, k, v, &r->staging);
	if (!strcmp(k, "direct-write-to-pmem"))
		return parse_bool(x, k, v, &r->direct);
	if (!strcmp(k, "timeout"))
		return tconf_parse_ms(v, &r->timeout_ms) ?
			fail(x, "timeout = %s: milliseconds, 1..%d", v, INT_MAX) : 0;
	if (!strcmp(k, "key-file")) {
		if (r->nkey_files == PMREP_TARGET_MAX_KEYS)
			return fail(x, "more than %d key-file in one replica",
					PMREP_TARGET_MAX_KEYS);
		if (v[0] == '\0')
			return fail(x, "key-file is empty");
		r->key_files[r->nkey_files] = strdup(v);
		if (r->key_files[r->nkey_files] == NULL)
			return fail(x, "out of memory");
		r->nkey_files++;
		return 0;
	}
	if (!strcmp(k, "key-dir"))
		return set_once(x, k, v, &r->key_dir);
	if (!strcmp(k, "tls-name"))
		return add_tls_name(x, v, r->tls_names, &r->ntls_names);
	return fail(x, "unknown key \"%s\" in [replica %s] (path, size, create, key-file, key-dir, staging, direct-write-to-pmem, timeout, tls-name)",
			k, r->name);
}

static bool
name_ok(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > TCONF_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = n[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
				(ch >= '0' && ch <= '9') || ch == '.' ||
				ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

static int replica_check_at(struct ctx *x, const struct tconf *c, unsigned i);

/* what every replica needs, checked once its section ended */
static int
replica_check(struct ctx *x, const struct tconf *c, unsigned i)
{
	const struct tconf_replica *r = &c->r[i];
	/* named at its section's line (the caller's line comes back) */
	unsigned line = x->line;
	x->line = r->line;
	int ret = replica_check_at(x, c, i);
	if (ret == 0)
		x->line = line;
	return ret;
}

static int
replica_check_at(struct ctx *x, const struct tconf *c, unsigned i)
{
	const struct tconf_replica *r = &c->r[i];
	if (r->path == NULL)
		return fail(x, "[replica %s] has no path", r->name);
	if (r->nkey_files == 0 && r->key_dir == NULL)
		return fail(x, "[replica %s] has no key-file or key-dir", r->name);
	if (r->create && r->size == 0)
		return fail(x, "[replica %s]: create = yes needs a size", r->name);
	for (unsigned j = 0; j < i; j++)
		if (strcmp(c->r[j].path, r->path) == 0)
			return fail(x, "[replica %s] has the path of [replica %s] (line %u): one replica per file",
					r->name, c->r[j].name, c->r[j].line);
	return 0;
}

int
tconf_read(const char *file, struct tconf *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	struct ctx x = { file, 0, err, errlen };
	c->file = strdup(file);
	c->addr = strdup("127.0.0.1");
	c->port = strdup("7204");
	c->tls = true;
	c->timeout_ms = 5000;
	if (!c->file || !c->addr || !c->port) {
		fail(&x, "out of memory");
		tconf_free(c);
		return -1;
	}
	FILE *f = fopen(file, "re");
	if (f == NULL) {
		fail(&x, "%s", strerror(errno));
		tconf_free(c);
		return -1;
	}
	char buf[4096];
	int ret = 0;
	bool in_replica = false, seen_addr = false, seen_port = false;
	bool seen_size = false, seen_global = false;
	while (ret == 0 && fgets(buf, sizeof(buf), f) != NULL) {
		x.line++;
		size_t len = strlen(buf);
		if (len == sizeof(buf) - 1 && buf[len - 1] != '\n' && !feof(f)) {
			ret = fail(&x, "line longer than %zu bytes", sizeof(buf) - 2);
			break;
		}
		char *l = trim(buf);
		if (l[0] == '\0' || l[0] == '#' || l[0] == ';')
			continue;
		if (l[0] == '[') {
			char *end = strchr(l, ']');
			if (end == NULL || trim(end + 1)[0] != '\0') {
				ret = fail(&x, "a section is \"[replica NAME]\" or \"[global]\" alone on its line");
				break;
			}
			*end = '\0';
			char *sec = trim(l + 1);
			if (!strcmp(sec, "global")) {
				if (in_replica || seen_global) {
					ret = fail(&x, "[global] comes first, once (before every [replica NAME])");
					break;
				}
				seen_global = true;
				continue;
			}
			if (strncmp(sec, "replica", 7) != 0 ||
					(sec[7] != ' ' && sec[7] != '\t')) {
				ret = fail(&x, "unknown section [%s] (\"[replica NAME]\" or \"[global]\")",
						sec);
				break;
			}
			char *name = trim(sec + 7);
			if (!name_ok(name)) {
				ret = fail(&x, "replica name \"%s\": 1..%d letters, digits, '.', '_' or '-'",
						name, TCONF_NAME_MAX);
				break;
			}
			const struct tconf_replica *dup = tconf_find(c, name);
			if (dup != NULL) {
				ret = fail(&x, "[replica %s] given twice (first at line %u)",
						name, dup->line);
				break;
			}
			if (c->n == TCONF_MAX_REPLICAS) {
				ret = fail(&x, "more than %d replicas", TCONF_MAX_REPLICAS);
				break;
			}
			if (in_replica && (ret = replica_check(&x, c, c->n - 1)) != 0)
				break;
			struct tconf_replica *nr = realloc(c->r, (c->n + 1) * sizeof(*nr));
			if (nr == NULL) {
				ret = fail(&x, "out of memory");
				break;
			}
			c->r = nr;
			memset(&c->r[c->n], 0, sizeof(c->r[c->n]));
			snprintf(c->r[c->n].name, sizeof(c->r[c->n].name), "%s", name);
			c->r[c->n].line = x.line;
			c->n++;
			in_replica = true;
			seen_size = false;
			continue;
		}
		char *eq = strchr(l, '=');
		if (eq == NULL) {
			ret = fail(&x, "expected \"key = value\", a comment (#) or a section, got \"%s\"",
					l);
			break;
		}
		*eq = '\0';
		char *k = trim(l), *v = trim(eq + 1);
		if (k[0] == '\0') {
			ret = fail(&x, "a value without a key");
			break;
		}
		ret = in_replica ? replica_key(&x, &c->r[c->n - 1], k, v, &seen_size) :
			global_key(&x, c, k, v, &seen_addr, &seen_port);
	}
	if (ret == 0 && ferror(f))
		ret = fail(&x, "read error: %s", strerror(errno));
	fclose(f);
	if (ret == 0 && in_replica)
		ret = replica_check(&x, c, c->n - 1);
	if (ret == 0 && c->n == 0) {
		x.line = 0;
		ret = fail(&x, "no [replica NAME] section: nothing to serve");
	}
	if (ret)
		tconf_free(c);
	return ret;
}
