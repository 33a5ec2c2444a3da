/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_cli.h -- what the pmrep command's files share (tools/pmrep.c and
 * one file per command or pair of commands): exit codes, the one-line
 * error report, the option parsers and the JSON writer (pmrep.c), the
 * JSON object of a replica's header (pmrep_status.c), and each command's
 * help and entry point.
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

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <pmrep/repl.h>

void uuid_str(const uint8_t *uuid, char out[2 * PMREP_UUID_SIZE + 1]);
/* len bytes of fd at off into buf: 0, or -1 (an error, or the file ends) */
int read_full(int fd, uint8_t *buf, size_t len, off_t off);
/* status --json's object for one replica: its header, membership, position
 * (tools/pmrep_status.c) */
void json_info(const char *name, bool queried,
		const struct pmrep_replica_info *info,
		const struct pmrep_replica_membership *mb,
		const struct pmrep_replica_position *pos);

/* pmrep verify (tools/pmrep_verify.c) */
extern const char help_verify[];
int cmd_verify(int argc, char *argv[]);

/* pmrep status and pmrep watch (tools/pmrep_status.c) */
extern const char help_status[];
extern const char help_watch[];
int cmd_status(int argc, char *argv[]);
int cmd_watch(int argc, char *argv[]);

/* pmrep recover (tools/pmrep_recover.c) */
extern const char help_recover[];
int cmd_recover(int argc, char *argv[]);

/* pmrep keygen and pmrep log-create (tools/pmrep_create.c) */
extern const char help_keygen[];
extern const char help_log_create[];
int cmd_keygen(int argc, char *argv[]);
int cmd_log_create(int argc, char *argv[]);

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
