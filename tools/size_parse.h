/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * size_parse.h -- the one parser of size arguments the tools share
 * (pmrep's options, pmrep-target's --size and its config file's size=).
 */
#ifndef PMREP_TOOLS_SIZE_PARSE_H
#define PMREP_TOOLS_SIZE_PARSE_H

#include <stdint.h>

/* digits (strtoull base 0: decimal, 0x hex, 0 octal) with an optional
 * K / M / G suffix (KiB, MiB, GiB) into *out; -1 for anything else (a
 * sign, spaces, trailing bytes, an overflow) */
int tool_parse_size(const char *s, uint64_t *out);

#endif /* PMREP_TOOLS_SIZE_PARSE_H */
