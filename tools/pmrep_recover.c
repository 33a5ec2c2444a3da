/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_recover.c -- pmrep recover: rebuild a lost local file from a
 * replica of its set (pmrep_mirror_recover), the most current of several
 * named copies by the one decision (pmrep_position_decide).
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "pmrep_cli.h"

const char help_recover[] =
	"  pmrep recover --file LOCAL --replica ADDR:PORT [--replica ...]...\n"
	"                --key-file FILE --uuid HEX --generation N\n"
	"                [--allow-inconsistent] [--force-stale] [--timeout MS]\n"
	"                [--no-tls] [-v]\n"
	"      rebuild LOCAL (an existing file of the replica's data size) from a\n"
	"      replica: read all its data, then persist. The replica must belong to\n"
	"      replica set UUID (32 hex digits, see pmrep status) and hold exactly\n"
	"      generation N (older or newer: refused), and be marked consistent\n"
	"      unless --allow-inconsistent. A consistent mark vouches for that\n"
	"      copy's position only: under a quorum k of n (as its header records)\n"
	"      name n - k + 1 copies of the set with --replica; they are asked\n"
	"      read-only, ranked by position, and the most current is the source\n"
	"      (refused when fewer answer, or when which one is newest cannot be\n"
	"      told). --force-stale: recover from the first --replica although a\n"
	"      later run may have completed persists without it (those are lost).\n"
	"      --timeout: milliseconds for the whole recovery (default 60000).\n"
	"      Exit 0 recovered, 1 the replica was refused as a source, 2 usage\n"
	"      error or failure (I/O, connection, authentication). --no-tls: as\n"
	"      for status.\n";

static int
uuid_parse(const char *s, uint8_t *uuid)
{
	size_t j = 0;
	for (size_t i = 0; s[i] != '\0'; i++) {
		if (s[i] == '-')
			continue;
		int v;
		char c = s[i];
		if (c >= '0' && c <= '9') v = c - '0';
		else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
		else return -1;
		if (j >= 2 * PMREP_UUID_SIZE)
			return -1;
		if (j % 2 == 0)
			uuid[j / 2] = (uint8_t)(v << 4);
		else
			uuid[j / 2] |= (uint8_t)v;
		j++;
	}
	return j == 2 * PMREP_UUID_SIZE ? 0 : -1;
}

/* ------------------------------------------------------------ recover */

/*
 * recover from several copies: ask each read-only for its position and
 * the membership its header records; refuse (PMREP_E_STATE, logged) when
 * fewer than n - k + 1 copies of the set answered or the decision cannot
 * tell; else *src is the most current
 */
static int
recover_rank(char addrs[][256], const char *const ports[],
		const char *const names[], unsigned nrep, const uint8_t *key,
		size_t key_len, int timeout_ms,
		const uint8_t uuid[PMREP_UUID_SIZE], unsigned *src)
{
	struct pmrep_replica_position pos[PMREP_MIRROR_MAX_REPLICAS];
	uint8_t ids[PMREP_MIRROR_MAX_REPLICAS][PMREP_UUID_SIZE];
	unsigned idx[PMREP_MIRROR_MAX_REPLICAS], m = 0, need = 1;
	for (unsigned i = 0; i < nrep; i++) {
		struct pmrep_replica_info info;
		struct pmrep_replica_membership mb;
		int q = pmrep_replica_query_position(addrs[i], ports[i], NULL,
				key, key_len, timeout_ms, &pos[m], &info, &mb);
		if (q) {
			fprintf(stderr, "pmrep recover: %s not reached: %s\n",
					names[i], pmrep_err_to_str(q));
			continue;
		}
		if (memcmp(info.uuid, uuid, PMREP_UUID_SIZE) != 0 ||
				(pos[m].flags & (PMREP_POSITION_F_FRESH |
					PMREP_POSITION_F_REMOVED)))
			continue;	/* no copy of this set */
		bool dup = false;
		for (unsigned j = 0; j < m; j++)
			if (memcmp(ids[j], info.replica_id, PMREP_UUID_SIZE) == 0)
				dup = true;
		if (dup) {
			fprintf(stderr, "pmrep recover: %s is a copy already named (the same replica id): counted once\n",
					names[i]);
			continue;
		}
		memcpy(ids[m], info.replica_id, PMREP_UUID_SIZE);
		unsigned k = mb.quorum ? mb.quorum : mb.set_size;
		if (mb.set_size != 0 && mb.set_size - k + 1 > need)
			need = mb.set_size - k + 1;
		idx[m++] = i;
	}
	if (m < need) {
		fprintf(stderr, "pmrep recover: %u copies of the set answered, %u needed (n - k + 1, as the headers record): a copy not reached may hold newer persists\n",
				m, need);
		return PMREP_E_STATE;
	}
	unsigned best = 0, conflict = m;
	int ret = pmrep_position_decide(pos, m, &best, &conflict, NULL);
	if (ret) {
		fprintf(stderr, "pmrep recover: which copy is newest cannot be told: %s may hold persists no copy named vouches for\n",
				conflict < m ? names[idx[conflict]] : "none of them");
		return PMREP_E_STATE;
	}
	*src = idx[best];
	printf("most current of %u copies: %s\n", m, names[*src]);
	return 0;
}

int
cmd_recover(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "replica", required_argument, NULL, 'r' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "uuid", required_argument, NULL, 'u' },
		{ "generation", required_argument, NULL, 'g' },
		{ "allow-inconsistent", no_argument, NULL, 'I' },
		{ "force-stale", no_argument, NULL, 'S' },
		{ "timeout", required_argument, NULL, 't' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *file = NULL, *key_file = NULL;
	const char *replicas[PMREP_MIRROR_MAX_REPLICAS];
	unsigned nrep = 0;
	uint8_t uuid[PMREP_UUID_SIZE];
	bool have_uuid = false;
	unsigned long long gen = 0, timeout = 60000;
	unsigned flags = 0;
	int c;
	while ((c = getopt_long(argc, argv, "f:r:k:u:g:It:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 'r':
			if (nrep == PMREP_MIRROR_MAX_REPLICAS)
				return usage_error("recover: %s", "more than 8 --replica");
			replicas[nrep++] = optarg;
			break;
		case 'S': flags |= PMREP_RECOVER_SET_DECIDED; break;
		case 'k': key_file = optarg; break;
		case 'K': key_flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'N': (void) pmrep_repl_set_tls_default(false); break;
		case 'u':
			if (uuid_parse(optarg, uuid))
				return usage_error("recover: bad --uuid '%s' (32 hex digits)", optarg);
			have_uuid = true;
			break;
		case 'g':
			if (parse_count(optarg, UINT64_MAX, &gen))
				return usage_error("recover: bad --generation '%s' (>= 1)", optarg);
			break;
		case 'I': flags |= PMREP_RECOVER_ALLOW_INCONSISTENT; break;
		case 't':
			if (parse_count(optarg, INT_MAX, &timeout))
				return usage_error("recover: bad --timeout '%s' (ms, >= 1)", optarg);
			break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_recover);
		default: return usage_error("recover: %s", "unknown option");
		}
	}
	if (optind != argc)
		return usage_error("recover: unexpected argument '%s'", argv[optind]);
	if (file == NULL || nrep == 0 || key_file == NULL || !have_uuid ||
			gen == 0)
		return usage_error("recover: %s", "--file, --replica, --key-file, --uuid and --generation are required");
	char addrs[PMREP_MIRROR_MAX_REPLICAS][256];
	const char *ports[PMREP_MIRROR_MAX_REPLICAS];
	for (unsigned i = 0; i < nrep; i++) {
		snprintf(addrs[i], sizeof(addrs[i]), "%s", replicas[i]);
		char *colon = strrchr(addrs[i], ':');
		if (colon == NULL || colon == addrs[i] || colon[1] == '\0')
			return usage_error("recover: bad --replica '%s' (ADDR:PORT)",
					replicas[i]);
		*colon = '\0';
		ports[i] = colon + 1;
	}
	log_setup();

	uint8_t key[PMREP_KEY_MAX];
	size_t key_len = 0;
	int ret = pmrep_key_read_file_ex(key_file, key_flags, key, sizeof(key),
			&key_len, NULL);
	if (ret) {
		report("recover", key_file, ret);
		return EX_ERR;
	}
	/* an existing file only: its size is the replica's data size */
	struct pmrep_pmem *pmem = NULL;
	ret = pmrep_pmem_open(file, 0, 0, PMREP_PMEM_GRANULARITY_PAGE, &pmem);
	if (ret) {
		report("recover", file, ret);
		memset(key, 0, sizeof(key));
		return EX_ERR;
	}
	/* several copies: the most current of them, by the one decision */
	unsigned src = 0;
	ret = nrep > 1 && !(flags & PMREP_RECOVER_SET_DECIDED) ?
		recover_rank(addrs, ports, replicas, nrep, key, key_len,
				(int)timeout, uuid, &src) : 0;
	if (ret == 0 && nrep > 1)
		flags |= PMREP_RECOVER_SET_DECIDED;
	const char *replica = replicas[src];
	struct pmrep_replica_info info;
	memset(&info, 0, sizeof(info));
	if (ret == 0)
		ret = pmrep_mirror_recover(pmem, addrs[src], ports[src], key,
				key_len, uuid, gen, flags, (int)timeout, &info);
	memset(key, 0, sizeof(key));
	int rc;
	if (ret == 0) {
		printf("recovered %s: %zu bytes of generation %llu from %s (replica was %s)\n",
				file, pmrep_pmem_get_size(pmem), gen, replica,
				info.flags & PMREP_REPLICA_F_CONSISTENT ?
				"marked consistent" : "NOT marked consistent");
		rc = EX_OK;
	} else {
		/* refusals of the replica as a source vs. failures; the
		 * arguments were checked here; PMREP_E_MISMATCH is the
		 * target's "another replica set" */
		bool refused = ret == PMREP_E_STATE || ret == PMREP_E_RANGE ||
			ret == PMREP_E_NOSUPP || ret == PMREP_E_INVAL ||
			ret == PMREP_E_MISMATCH;
		const char *msg = pmrep_err_msg();
		fprintf(stderr, "pmrep recover: %s %s from %s: %s%s%s%s\n",
				refused ? "refused to recover" : "could not recover",
				file, replica, pmrep_err_to_str(ret),
				msg[0] ? " (" : "", msg, msg[0] ? ")" : "");
		rc = refused ? EX_NO : EX_ERR;
	}
	(void) pmrep_pmem_close(&pmem);
	return rc;
}
