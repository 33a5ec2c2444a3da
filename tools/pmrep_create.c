/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_create.c -- the commands that make a new file, never over an
 * existing one: pmrep keygen (a pre-shared key file) and pmrep log-create
 * (a pmrep log, empty or converted from a plain file).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "pmrep_cli.h"

const char help_keygen[] =
	"  pmrep keygen FILE [--key-id N] [--bytes N] [-v]\n"
	"      write a new pre-shared key to FILE (created, mode 0600; an existing\n"
	"      FILE or a link there is never overwritten): N random bytes (32 ..\n"
	"      64, default 32) as one checked line \"pmrep-key 1 ID HEX CHECK\" that\n"
	"      --key-file reads (a truncated or changed file is refused). --key-id:\n"
	"      the key's id (0 .. 4294967295, default 1): a target holds several\n"
	"      keys by id for a rotation (docs/DESIGN.md \"Keys\"). Key files must\n"
	"      stay mode 0600 and owned by their user: --key-file refuses others\n"
	"      unless --insecure-key-file. Exit 0 written, 2 usage error or\n"
	"      failure (FILE exists, I/O).\n";

const char help_log_create[] =
	"  pmrep log-create LOG [SIZE] [--from PLAIN] [-v]\n"
	"      create LOG, a pmrep log (the layout of every node: a 4 KiB header,\n"
	"      then SIZE data bytes, K/M/G/T suffixes) that an application maps in\n"
	"      place (pmrep_log_open), mirrors from, and that pmrep-target serves as\n"
	"      a replica -- so that after a failover a replica's file is the new\n"
	"      primary's log. --from: a plain log file mapped with pmrep_pmem_open\n"
	"      (no header) converted: its bytes copied into the data area (SIZE,\n"
	"      if given, must be its size), then persisted. LOG must not exist.\n"
	"      Exit 0 created, 2 usage error or failure (LOG exists, I/O).\n";

/* pmrep keygen FILE [--key-id N] [--bytes N] */
int
cmd_keygen(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "key-id", required_argument, NULL, 'i' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long id = 1, bytes = PMREP_KEY_GOOD;
	int c;
	while ((c = getopt_long(argc, argv, "i:b:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			{
				/* decimal digits only; 0 allowed (the unnamed key) */
				char *end;
				errno = 0;
				id = strtoull(optarg, &end, 10);
				if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' ||
						errno || id > UINT32_MAX)
					return usage_error("keygen: bad --key-id '%s' (0 .. 4294967295)", optarg);
			}
			break;
		case 'b':
			if (parse_count(optarg, PMREP_KEY_MAX, &bytes) || bytes < PMREP_KEY_GOOD)
				return usage_error("keygen: bad --bytes '%s' (32 .. 64)", optarg);
			break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_keygen);
		default: return usage_error("keygen: %s", "unknown option");
		}
	}
	if (argc - optind > 1)
		return usage_error("keygen: unexpected argument '%s' (expected one FILE)",
				argv[optind + 1]);
	if (optind + 1 != argc)
		return usage_error("keygen: %s", "expected one FILE");
	log_setup();
	const char *file = argv[optind];
	int ret = pmrep_key_write_file(file, (uint32_t)id, (size_t)bytes);
	if (ret) {
		report("keygen", file, ret);
		return EX_ERR;
	}
	printf("%s: a key of %llu random bytes, key id %llu (mode 0600)\n", file,
			bytes, id);
	return EX_OK;
}

/* ---------------------------------------------------------- log-create */

int
cmd_log_create(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *from = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "f:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': from = optarg; break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_log_create);
		default: return usage_error("log-create: %s", "unknown option");
		}
	}
	int n = argc - optind;
	if (n > 2)
		return usage_error("log-create: unexpected argument '%s' (expected LOG [SIZE])",
				argv[optind + 2]);
	if (n < 1 || n > 2 || (n == 1 && from == NULL))
		return usage_error("log-create: %s", n < 1 || n > 2 ?
				"expected LOG [SIZE]" :
				"expected SIZE (or --from PLAIN)");
	const char *log = argv[optind];
	unsigned long long size = 0;
	if (n == 2 && (parse_size(argv[optind + 1], 1ull << 50, &size) ||
			size == 0))
		return usage_error("log-create: bad SIZE '%s'", argv[optind + 1]);
	log_setup();
	int in = -1;
	if (from != NULL) {
		struct stat st;
		in = open(from, O_RDONLY | O_CLOEXEC);
		if (in < 0 || fstat(in, &st) != 0) {
			fprintf(stderr, "pmrep log-create: %s: %s\n", strerror(errno), from);
			if (in >= 0)
				close(in);
			return EX_ERR;
		}
		if (!S_ISREG(st.st_mode) || st.st_size == 0 ||
				(size != 0 && (unsigned long long)st.st_size != size)) {
			fprintf(stderr, "pmrep log-create: %s: %s\n", from,
					!S_ISREG(st.st_mode) ? "not a regular file" :
					st.st_size == 0 ? "empty" :
					"its size is not SIZE");
			close(in);
			return EX_ERR;
		}
		size = (unsigned long long)st.st_size;
	}
	struct pmrep_pmem *p = NULL;
	int ret = pmrep_log_open(log, PMREP_PMEM_CREATE | PMREP_PMEM_EXCL,
			(size_t)size, PMREP_PMEM_GRANULARITY_PAGE, &p);
	if (ret) {
		report("log-create", log, ret);
		if (in >= 0)
			close(in);
		return EX_ERR;
	}
	int rc = EX_OK;
	if (in >= 0) {
		uint8_t *d = pmrep_pmem_get_address(p);
		if (read_full(in, d, (size_t)size, 0) != 0) {
			fprintf(stderr, "pmrep log-create: read failed: %s\n", from);
			rc = EX_ERR;
		} else if ((ret = pmrep_pmem_persist(p, d, (size_t)size)) != 0) {
			report("log-create", log, ret);
			rc = EX_ERR;
		}
		close(in);
	}
	if (pmrep_pmem_close(&p) != 0)
		rc = EX_ERR;
	if (rc != EX_OK) {
		(void) unlink(log);	/* created here: not left half copied */
		return rc;
	}
	printf("%s: a pmrep log of %llu data bytes%s%s\n", log, size,
			from ? ", converted from " : "", from ? from : "");
	return EX_OK;
}
