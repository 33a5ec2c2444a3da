/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * size_parse.c -- the size arguments of the tools (size_parse.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "size_parse.h"

int
tool_parse_size(const char *s, uint64_t *out)
{
	char *end;
	/* strtoull takes "-1" (and " -1") as ULLONG_MAX: digits only */
	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end != '\0' || (shift && v > (~0ull >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}
