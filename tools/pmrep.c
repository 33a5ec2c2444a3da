/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep -- the command line of pmrep's replication layer:
 *   pmrep verify SOURCE REPLICA [--range BYTES]
 *   pmrep status REPLICA_FILE | ADDR:PORT --key-file F [--timeout MS] [--json]
 *   pmrep compare REPLICA... [--key-file F] [--json]
 *   pmrep export LOG OUT [--json]
 *   pmrep rank SELF [REPLICA...] [--key-file F] [--set-size N] [--quorum K]
 *   pmrep promote LOG [--replica ADDR:PORT...] [--key-file F] [--set-size N]
 *                 [--quorum K] [--dry-run] [--force] [--wait-sync] [--json]
 *   pmrep recover --file LOCAL --replica ADDR:PORT --key-file F
 *                 --uuid HEX --generation N [--allow-inconsistent]
 *   pmrep keygen FILE [--key-id N] [--bytes N]
 *   pmrep status --control SOCKET [--json | --metrics] | pmrep watch SOCKET
 *   pmrep [COMMAND] --help | pmrep --version
 * Errors are reported as one line each; -v (any command) also shows the
 * library's log lines (PMREP_LOG_LEVEL, when set, decides instead).
 * Exit codes (every command): 0 success (verify: identical), 1 a negative
 * answer (verify: source and replica differ, or REPLICA is not a valid
 * replica; status: the file is not a valid replica; recover: the replica
 * was refused as a source), 2 usage error or failure (I/O, connection,
 * authentication).
 *
 * This file owns main (the dispatch to a command, pmrep help COMMAND,
 * --version), the overall usage and what every command shares (pmrep_cli.h:
 * the error lines, the option parsers, the JSON string writer); each
 * command is in a file of its own: pmrep_verify.c, pmrep_status.c (status,
 * watch), pmrep_recover.c, pmrep_create.c (keygen, log-create),
 * pmrep_compare.c (compare, rank), pmrep_export.c, pmrep_promote.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmrep/repl.h>

#include "pmrep_cli.h"
#include "size_parse.h"

#ifndef PMREP_VERSION_STRING
#define PMREP_VERSION_STRING "unknown"
#endif

bool verbose;
/* --insecure-key-file: PMREP_KEY_FILE_INSECURE_OK */
unsigned key_flags;

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: pmrep COMMAND [options]\n"
		"       pmrep COMMAND --help | pmrep --help | pmrep --version\n"
		"\n"
		"%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n"
		"  --insecure-key-file (status, recover, compare, promote): accept a key file others may\n"
		"  read or that another user owns (a warning instead of a refusal).\n"
		"  -v, --verbose (any command): also print the library's log lines\n"
		"  (by default each error is one line from pmrep; PMREP_LOG_LEVEL=0..5,\n"
		"  when set, decides instead). PMREP_PROVIDER=tcp|verbs forces a provider.\n"
		"\n"
		"exit codes: 0 success (verify: identical); 1 a negative answer (verify:\n"
		"different, or REPLICA is not a valid replica; status: not a valid\n"
		"replica; recover: the replica was refused as a source; promote: refused,\n"
		"as not the most current or unable to fence); 2 usage error or failure\n"
		"(I/O, connection, authentication).\n",
		help_verify, help_status, help_recover, help_keygen,
		help_log_create, help_export, help_compare, help_rank, help_promote,
		help_watch);
}

/* one command's help */
int
cmd_help(const char *help)
{
	printf("usage:\n%s", help);
	return 0;
}

/* the library's log threshold: errors are reported by pmrep itself, one
 * line each; -v adds the library's lines; PMREP_LOG_LEVEL overrides both */
void
log_setup(void)
{
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(verbose ? PMREP_LOG_INFO : PMREP_LOG_DISABLED);
}

/* a failed library call on `path`, one line: "No such file or directory:
 * PATH" for an OS error, else pmrep's error and its message */
void
report(const char *cmd, const char *path, int ret)
{
	int err = pmrep_err_errno();
	if (ret == PMREP_E_PROVIDER && err != 0)
		fprintf(stderr, "pmrep %s: %s: %s\n", cmd, strerror(err), path);
	else
		fprintf(stderr, "pmrep %s: %s: %s (%s)\n", cmd, path,
				pmrep_err_to_str(ret), pmrep_err_msg());
}

int
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "pmrep: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(pmrep --help for usage)\n");
	return EX_ERR;
}

/* digits with an optional K / M / G suffix, 1 .. max */
int
parse_size(const char *s, unsigned long long max, unsigned long long *out)
{
	uint64_t v;
	if (tool_parse_size(s, &v) != 0 || v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* digits only (no suffix), 1 .. max: a count, milliseconds, a generation */
int
parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
	if (strpbrk(s, "kKmMgG") != NULL)
		return -1;
	return parse_size(s, max, out);
}

/* --quorum: "all" (0) or a count 1 .. the most replicas */
int
parse_quorum(const char *s, unsigned long long *out)
{
	if (strcmp(s, "all") == 0) {
		*out = 0;
		return 0;
	}
	return parse_count(s, PMREP_MIRROR_MAX_REPLICAS + 1, out);
}

void
uuid_str(const uint8_t *uuid, char out[2 * PMREP_UUID_SIZE + 1])
{
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", uuid[i]);
}

/* len bytes at off into buf (pread, EINTR retried): 0, or -1 on an error
 * or at the end of the file */
int
read_full(int fd, uint8_t *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t n = pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* `s` as a JSON string: quotes, backslash and every control character
 * escaped (a path may hold any byte but NUL); bytes >= 0x80 are copied
 * as they are (a UTF-8 path stays readable; JSON wants UTF-8) */
void
json_str(const char *s)
{
	putchar('"');
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		switch (*c) {
		case '"': fputs("\\\"", stdout); break;
		case '\\': fputs("\\\\", stdout); break;
		case '\n': fputs("\\n", stdout); break;
		case '\t': fputs("\\t", stdout); break;
		case '\r': fputs("\\r", stdout); break;
		case '\b': fputs("\\b", stdout); break;
		case '\f': fputs("\\f", stdout); break;
		default:
			if (*c < 0x20 || *c == 0x7f)
				printf("\\u%04x", *c);
			else
				putchar(*c);
		}
	}
	putchar('"');
}

int
main(int argc, char *argv[])
{
	if (argc < 2) {
		usage(stderr);
		return EX_ERR;
	}
	/* options before the command: -v, --help, --version */
	while (argc >= 2 && (strcmp(argv[1], "-v") == 0 ||
			strcmp(argv[1], "--verbose") == 0)) {
		verbose = true;
		argc--;
		argv++;
	}
	if (argc < 2) {
		usage(stderr);
		return EX_ERR;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("pmrep %s\n", PMREP_VERSION_STRING);
		return EX_OK;
	}
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
			strcmp(cmd, "help") == 0) {
		/* pmrep help COMMAND: that command's help */
		if (argc >= 3 && strcmp(argv[2], "verify") == 0)
			return cmd_help(help_verify);
		if (argc >= 3 && strcmp(argv[2], "status") == 0)
			return cmd_help(help_status);
		if (argc >= 3 && strcmp(argv[2], "recover") == 0)
			return cmd_help(help_recover);
		if (argc >= 3 && strcmp(argv[2], "keygen") == 0)
			return cmd_help(help_keygen);
		if (argc >= 3 && strcmp(argv[2], "log-create") == 0)
			return cmd_help(help_log_create);
		if (argc >= 3 && strcmp(argv[2], "compare") == 0)
			return cmd_help(help_compare);
		if (argc >= 3 && strcmp(argv[2], "export") == 0)
			return cmd_help(help_export);
		if (argc >= 3 && strcmp(argv[2], "rank") == 0)
			return cmd_help(help_rank);
		if (argc >= 3 && strcmp(argv[2], "promote") == 0)
			return cmd_help(help_promote);
		if (argc >= 3 && strcmp(argv[2], "watch") == 0)
			return cmd_help(help_watch);
		usage(stdout);
		return EX_OK;
	}
	/* the command's options: getopt starts after the command name */
	argc--;
	argv++;
	if (strcmp(cmd, "verify") == 0)
		return cmd_verify(argc, argv);
	if (strcmp(cmd, "status") == 0)
		return cmd_status(argc, argv);
	if (strcmp(cmd, "recover") == 0)
		return cmd_recover(argc, argv);
	if (strcmp(cmd, "keygen") == 0)
		return cmd_keygen(argc, argv);
	if (strcmp(cmd, "log-create") == 0)
		return cmd_log_create(argc, argv);
	if (strcmp(cmd, "compare") == 0)
		return cmd_compare(argc, argv);
	if (strcmp(cmd, "rank") == 0)
		return cmd_rank(argc, argv);
	if (strcmp(cmd, "export") == 0)
		return cmd_export(argc, argv);
	if (strcmp(cmd, "promote") == 0)
		return cmd_promote(argc, argv);
	if (strcmp(cmd, "watch") == 0)
		return cmd_watch(argc, argv);
	return usage_error("unknown command '%s'", cmd);
}
