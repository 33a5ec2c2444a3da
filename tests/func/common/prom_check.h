/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prom_check.h -- a validator of the Prometheus text exposition format
 * 0.0.4 as pmrep writes it (docs/METRICS.md), for the tests (header only:
 * the unit test of the formatter and the functional tests include it):
 *  - every line ends with '\n'; a comment is "# HELP name text",
 *    "# TYPE name counter|gauge|histogram|summary|untyped" or another
 *    "# ..." line;
 *  - every other line is a sample `name{k="v",...} value` (or `name
 *    value`): a valid metric name, label names, label values with only
 *    the escapes \\ \" \n, a value that parses as a float;
 *  - every sample's family (the name, or a histogram's name without
 *    _bucket / _sum / _count) has its HELP and TYPE lines before it, each
 *    once; a family's samples are one group (no family comes back);
 *  - counters' names end with _total;
 *  - a histogram's buckets, per label set, have increasing le bounds,
 *    non-decreasing counts, end with le="+Inf", and +Inf equals _count;
 *    _sum is there.
 * prom_check returns 0, or -1 with why (line number and reason) in err.
 * prom_value finds a sample's value by its series text.
 */
#ifndef PMREP_TESTS_PROM_CHECK_H
#define PMREP_TESTS_PROM_CHECK_H

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROM_MAX_FAMILIES 128
#define PROM_MAX_SERIES 64
#define PROM_LINE_MAX 1024

struct prom_family {
	char name[128];
	char type[16];
	bool help, typed, sampled, closed;
};

/* one histogram series being read (its labels without le) */
struct prom_hseries {
	char fam[128];
	char labels[PROM_LINE_MAX];
	double last_le, last_count, inf;
	bool any, has_inf, has_count, has_sum;
	double count;
};

struct prom_state {
	struct prom_family f[PROM_MAX_FAMILIES];
	unsigned nf;
	int current;		/* the family whose samples come now (-1 none) */
	struct prom_hseries h[PROM_MAX_SERIES];
	unsigned nh;
};

__attribute__((format(printf, 4, 5), unused))
static int
prom_fail(char *err, size_t errlen, unsigned line, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "line %u: %s", line, tmp);
	return -1;
}

__attribute__((unused))
static bool
prom_name_ok(const char *s, size_t n, bool metric)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = isalpha((unsigned char)c) || c == '_' ||
			(metric && c == ':') || (i > 0 && isdigit((unsigned char)c));
		if (!ok)
			return false;
	}
	return true;
}

__attribute__((unused))
static struct prom_family *
prom_family_get(struct prom_state *st, const char *name, bool add)
{
	for (unsigned i = 0; i < st->nf; i++)
		if (strcmp(st->f[i].name, name) == 0)
			return &st->f[i];
	if (!add || st->nf == PROM_MAX_FAMILIES || strlen(name) >= sizeof(st->f[0].name))
		return NULL;
	struct prom_family *f = &st->f[st->nf++];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	return f;
}

/* "# HELP name ..." / "# TYPE name type" / another comment */
__attribute__((unused))
static int
prom_comment(struct prom_state *st, const char *l, unsigned ln, char *err,
		size_t errlen)
{
	bool help = strncmp(l, "# HELP ", 7) == 0;
	bool type = strncmp(l, "# TYPE ", 7) == 0;
	if (!help && !type)
		return 0;
	const char *name = l + 7;
	size_t n = strcspn(name, " ");
	if (!prom_name_ok(name, n, true) || n >= 128)
		return prom_fail(err, errlen, ln, "bad metric name in '%s'", l);
	char nm[128];
	memcpy(nm, name, n);
	nm[n] = '\0';
	struct prom_family *f = prom_family_get(st, nm, true);
	if (f == NULL)
		return prom_fail(err, errlen, ln, "too many families");
	if (f->sampled)
		return prom_fail(err, errlen, ln, "%s of %s after its samples",
				help ? "HELP" : "TYPE", nm);
	if (help) {
		if (f->help)
			return prom_fail(err, errlen, ln, "a second HELP for %s", nm);
		if (name[n] != ' ')
			return prom_fail(err, errlen, ln, "HELP of %s without text", nm);
		/* only \\ and \n escapes in HELP */
		for (const char *p = name + n + 1; *p; p++)
			if (*p == '\\' && p[1] != '\\' && p[1] != 'n')
				return prom_fail(err, errlen, ln, "bad escape in HELP of %s", nm);
			else if (*p == '\\')
				p++;
		f->help = true;
		return 0;
	}
	if (f->typed)
		return prom_fail(err, errlen, ln, "a second TYPE for %s", nm);
	const char *t = name[n] == ' ' ? name + n + 1 : "";
	if (strcmp(t, "counter") && strcmp(t, "gauge") && strcmp(t, "histogram") &&
			strcmp(t, "summary") && strcmp(t, "untyped"))
		return prom_fail(err, errlen, ln, "unknown TYPE '%s' for %s", t, nm);
	if (strcmp(t, "counter") == 0 && (n < 6 || strcmp(nm + n - 6, "_total") != 0))
		return prom_fail(err, errlen, ln, "counter %s does not end with _total", nm);
	snprintf(f->type, sizeof(f->type), "%s", t);
	f->typed = true;
	return 0;
}

/* parse the labels of `{...}` at *pp: the labels without le into `rest`,
 * le's value into `le` ("" none); *pp after the '}' */
__attribute__((unused))
static int
prom_labels(const char **pp, char *rest, size_t restlen, char *le, size_t lelen,
		unsigned ln, char *err, size_t errlen)
{
	const char *p = *pp + 1;	/* after '{' */
	size_t rn = 0;
	rest[0] = '\0';
	le[0] = '\0';
	char seen[16][64];
	unsigned nseen = 0;
	while (*p != '}') {
		size_t n = strcspn(p, "=");
		if (!prom_name_ok(p, n, false) || p[n] != '=' || p[n + 1] != '"')
			return prom_fail(err, errlen, ln, "bad label at '%.20s'", p);
		char key[64];
		if (n >= sizeof(key))
			return prom_fail(err, errlen, ln, "label name too long");
		memcpy(key, p, n);
		key[n] = '\0';
		for (unsigned i = 0; i < nseen; i++)
			if (strcmp(seen[i], key) == 0)
				return prom_fail(err, errlen, ln, "label %s twice", key);
		if (nseen < 16)
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", key);
		const char *start = p;
		p += n + 2;
		char val[PROM_LINE_MAX];
		size_t vn = 0;
		while (*p != '"') {
			if (*p == '\0')
				return prom_fail(err, errlen, ln, "label %s: value not closed", key);
			if (*p == '\\') {
				if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
					return prom_fail(err, errlen, ln, "label %s: bad escape \\%c",
							key, p[1]);
				p++;
			} else if (*p == '\n') {
				return prom_fail(err, errlen, ln, "label %s: raw newline", key);
			}
			if (vn + 1 < sizeof(val))
				val[vn++] = *p;
			p++;
		}
		val[vn] = '\0';
		p++;	/* the closing quote */
		if (strcmp(key, "le") == 0) {
			if (vn >= lelen)
				return prom_fail(err, errlen, ln, "le value too long");
			memcpy(le, val, vn + 1);
		} else {
			size_t len = (size_t)(p - start);
			if (rn + len + 2 >= restlen)
				return prom_fail(err, errlen, ln, "labels too long");
			if (rn > 0)
				rest[rn++] = ',';
			memcpy(rest + rn, start, len);
			rn += len;
			rest[rn] = '\0';
		}
		if (*p == ',')
			p++;
		else if (*p != '}')
			return prom_fail(err, errlen, ln, "expected ',' or '}' after label %s", key);
	}
	*pp = p + 1;
	return 0;
}

__attribute__((unused))
static int
prom_number(const char *s, double *v)
{
	if (strcmp(s, "+Inf") == 0) {
		*v = INFINITY;
		return 0;
	}
	if (strcmp(s, "-Inf") == 0) {
		*v = -INFINITY;
		return 0;
	}
	if (strcmp(s, "NaN") == 0) {
		*v = NAN;
		return 0;
	}
	char *end;
	if (*s == '\0' || isspace((unsigned char)*s))
		return -1;
	*v = strtod(s, &end);
	return *end == '\0' ? 0 : -1;
}

__attribute__((unused))
static struct prom_hseries *
prom_hseries_get(struct prom_state *st, const char *fam, const char *labels)
{
	for (unsigned i = 0; i < st->nh; i++)
		if (strcmp(st->h[i].fam, fam) == 0 && strcmp(st->h[i].labels, labels) == 0)
			return &st->h[i];
	if (st->nh == PROM_MAX_SERIES)
		return NULL;
	struct prom_hseries *h = &st->h[st->nh++];
	memset(h, 0, sizeof(*h));
	snprintf(h->fam, sizeof(h->fam), "%s", fam);
	snprintf(h->labels, sizeof(h->labels), "%s", labels);
	return h;
}

__attribute__((unused))
static int
prom_sample(struct prom_state *st, const char *l, unsigned ln, char *err,
		size_t errlen)
{
	size_t n = strcspn(l, "{ ");
	if (!prom_name_ok(l, n, true) || n >= 128)
		return prom_fail(err, errlen, ln, "bad metric name in '%.60s'", l);
	char name[128], fam[128], rest[PROM_LINE_MAX], le[64];
	memcpy(name, l, n);
	name[n] = '\0';
	const char *p = l + n;
	rest[0] = le[0] = '\0';
	if (*p == '{' && prom_labels(&p, rest, sizeof(rest), le, sizeof(le), ln,
			err, errlen) != 0)
		return -1;
	if (*p != ' ')
		return prom_fail(err, errlen, ln, "no space before the value of %s", name);
	double v;
	if (prom_number(p + 1, &v) != 0)
		return prom_fail(err, errlen, ln, "bad value '%s' of %s", p + 1, name);
	/* its family */
	snprintf(fam, sizeof(fam), "%s", name);
	const char *suffix = "";
	struct prom_family *f = prom_family_get(st, fam, false);
	static const char *const sfx[] = { "_bucket", "_sum", "_count" };
	for (unsigned i = 0; (f == NULL || !f->typed) && i < 3; i++) {
		size_t sl = strlen(sfx[i]);
		if (n > sl && strcmp(name + n - sl, sfx[i]) == 0) {
			memcpy(fam, name, n - sl);
			fam[n - sl] = '\0';
			struct prom_family *g = prom_family_get(st, fam, false);
			if (g != NULL && strcmp(g->type, "histogram") == 0) {
				f = g;
				suffix = sfx[i];
			}
		}
	}
	if (*suffix == '\0')
		snprintf(fam, sizeof(fam), "%s", name);
	if (f == NULL || !f->help || !f->typed)
		return prom_fail(err, errlen, ln, "sample of %s before its family's HELP and TYPE",
				name);
	if (f->closed)
		return prom_fail(err, errlen, ln, "family %s comes back after another family",
				f->name);
	int idx = (int)(f - st->f);
	if (st->current >= 0 && st->current != idx)
		st->f[st->current].closed = true;
	st->current = idx;
	f->sampled = true;
	if (strcmp(f->type, "histogram") != 0) {
		if (le[0] != '\0' && strcmp(f->type, "summary") != 0)
			return prom_fail(err, errlen, ln, "le label on %s (not a histogram)", name);
		if (*suffix == '\0' && strcmp(f->type, "counter") == 0 && v < 0)
			return prom_fail(err, errlen, ln, "counter %s is negative", name);
		return 0;
	}
	if (*suffix == '\0')
		return prom_fail(err, errlen, ln, "histogram %s: a sample without _bucket, _sum or _count",
				name);
	struct prom_hseries *h = prom_hseries_get(st, f->name, rest);
	if (h == NULL)
		return prom_fail(err, errlen, ln, "too many histogram series");
	if (strcmp(suffix, "_bucket") == 0) {
		double bound;
		if (le[0] == '\0' || prom_number(le, &bound) != 0)
			return prom_fail(err, errlen, ln, "%s: a bucket without a valid le", name);
		if (h->has_inf || h->has_count || h->has_sum)
			return prom_fail(err, errlen, ln, "%s: a bucket after +Inf, _sum or _count", name);
		if (h->any && !(bound > h->last_le))
			return prom_fail(err, errlen, ln, "%s: le %s is not above the bucket before",
					name, le);
		if (h->any && v < h->last_count)
			return prom_fail(err, errlen, ln, "%s: le %s count %g below the bucket before (%g): not cumulative",
					name, le, v, h->last_count);
		h->any = true;
		h->last_le = bound;
		h->last_count = v;
		if (isinf(bound)) {
			h->has_inf = true;
			h->inf = v;
		}
	} else if (strcmp(suffix, "_sum") == 0) {
		if (le[0] != '\0')
			return prom_fail(err, errlen, ln, "%s with an le label", name);
		h->has_sum = true;
	} else {
		if (le[0] != '\0')
			return prom_fail(err, errlen, ln, "%s with an le label", name);
		if (!h->has_inf)
			return prom_fail(err, errlen, ln, "%s: _count without a +Inf bucket before it",
					name);
		if (v != h->inf)
			return prom_fail(err, errlen, ln, "%s: _count %g is not the +Inf bucket's %g",
					name, v, h->inf);
		h->has_count = true;
		h->count = v;
	}
	return 0;
}

/* 0: text is valid; -1: err says why */
__attribute__((unused))
static int
prom_check(const char *text, char *err, size_t errlen)
{
	struct prom_state *st = calloc(1, sizeof(*st));
	if (st == NULL)
		return prom_fail(err, errlen, 0, "out of memory");
	st->current = -1;
	unsigned ln = 0;
	int ret = 0;
	const char *p = text;
	while (*p != '\0' && ret == 0) {
		ln++;
		const char *nl = strchr(p, '\n');
		if (nl == NULL) {
			ret = prom_fail(err, errlen, ln, "the last line does not end with a newline");
			break;
		}
		size_t n = (size_t)(nl - p);
		char line[PROM_LINE_MAX];
		if (n >= sizeof(line)) {
			ret = prom_fail(err, errlen, ln, "line too long");
			break;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		if (n == 0)
			ret = 0;	/* an empty line is allowed */
		else if (line[0] == '#')
			ret = prom_comment(st, line, ln, err, errlen);
		else
			ret = prom_sample(st, line, ln, err, errlen);
		p = nl + 1;
	}
	for (unsigned i = 0; ret == 0 && i < st->nh; i++) {
		struct prom_hseries *h = &st->h[i];
		if (!h->has_inf || !h->has_sum || !h->has_count)
			ret = prom_fail(err, errlen, ln, "histogram %s{%s}: lacks %s",
					h->fam, h->labels, !h->has_inf ? "le=\"+Inf\"" :
					!h->has_sum ? "_sum" : "_count");
	}
	free(st);
	return ret;
}

/*
 * The value of the sample whose series (name and labels as written, e.g.
 * `pmrep_x_total{replica="r"}`) is `series`: 0 and *v, or -1 none.
 */
__attribute__((unused))
static int
prom_value(const char *text, const char *series, double *v)
{
	size_t n = strlen(series);
	for (const char *p = text; p != NULL && *p != '\0';) {
		if (strncmp(p, series, n) == 0 && p[n] == ' ') {
			char *end;
			*v = strtod(p + n + 1, &end);
			return 0;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return -1;
}

#endif /* PMREP_TESTS_PROM_CHECK_H */
