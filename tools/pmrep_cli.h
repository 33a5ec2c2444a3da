/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_cli.h -- what the pmrep command's files share (tools/pmrep.c and
 * one file per larger command): exit codes, the one-line error report,
 * the option parsers and the JSON writer.
 */
#ifndef PMREP_CLI_H
#define PMREP_CLI_H

#include <stdbool.h>

#define EX_OK 0
#define EX_NO 1
#define EX_ERR 2

extern bool verbose;		/* -v: the library's log lines too */
extern unsigned key_flags;	/* --insecure-key-file: PMREP_KEY_FILE_INSECURE_OK */

int cmd_help(const char *help);
void log_setup(void);
void report(const char *cmd, const char *path, int ret);
int usage_error(const char *fmt, const char *arg);
int parse_size(const char *s, unsigned long long max, unsigned long long *out);
int parse_count(const char *s, unsigned long long max, unsigned long long *out);
int parse_quorum(const char *s, unsigned long long *out);
void json_str(const char *s);

#include <stdint.h>
#include <pmrep/repl.h>

void uuid_str(const uint8_t *uuid, char out[2 * PMREP_UUID_SIZE + 1]);
/* status --json's object for one replica: its header, membership, position */
void json_info(const char *name, bool queried,
		const struct pmrep_replica_info *info,
		const struct pmrep_replica_membership *mb,
		const struct pmrep_replica_position *pos);

/* pmrep compare and pmrep rank (tools/pmrep_compare.c) */
extern const char help_compare[];
extern const char help_rank[];
int cmd_compare(int argc, char *argv[]);
int cmd_rank(int argc, char *argv[]);

/* pmrep export (tools/pmrep_export.c) */
extern const char help_export[];
int cmd_export(int argc, char *argv[]);

/* pmrep promote (tools/pmrep_promote.c) */
extern const char help_promote[];
int cmd_promote(int argc, char *argv[]);

#endif /* PMREP_CLI_H */
