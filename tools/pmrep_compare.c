/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_compare.c -- pmrep compare (name the most current of several
 * copies of one replica set) and pmrep rank (how one copy stands among the
 * copies reachable from here: what a cluster manager's promotion score is
 * made of). Both rank by the one decision promote and recover make
 * (pmrep_position_decide, docs/PROTOCOL.md "Position").
 */
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <pmrep/repl.h>

#include "pmrep_cli.h"

const char help_compare[] =
	"  pmrep compare REPLICA... [--key-file FILE] [--timeout MS]\n"
	"                [--no-tls] [--json] [-v]\n"
	"      name the most current of the replicas of one set (one: a set of\n"
	"      one, whose primary is gone for good), the one to\n"
	"      promote after the primary is gone, by their positions (the one\n"
	"      decision promote and recover make, docs/PROTOCOL.md \"Position\"):\n"
	"      a copy is most current when it holds every persist any of them may\n"
	"      hold, at the newest generation among such copies. Each REPLICA is a\n"
	"      file on this host or ADDR:PORT of its pmrep-target (asked read-only\n"
	"      with the key in FILE, as status does; with a key, a name starting\n"
	"      with / or . is still a file). Prints one line per replica,\n"
	"      then \"most current: REPLICA\" (or several, equally current). Read\n"
	"      n - k + 1 of a set written under quorum k of n for the answer to\n"
	"      cover every completed persist. Exit 0 named, 1 none can be named\n"
	"      (a copy may hold persists none of the others vouches for: its\n"
	"      writer's run did not close and recorded no position per step; two\n"
	"      primaries wrote one generation: split brain; or not one replica\n"
	"      set), 2 usage error or failure (a replica unreadable or\n"
	"      unreachable: compare the ones you can reach). --json: one JSON\n"
	"      object on stdout instead: \"replicas\" (one object each, as status\n"
	"      --json prints), \"most_current\" (the names; empty without an\n"
	"      answer), \"answer\" (the first of them, or null), \"reason\" (null,\n"
	"      or different_sets, too_few_copies, split_brain, cannot_tell) and\n"
	"      \"verdict\" (the text's last line). Too few: fewer distinct copies\n"
	"      (by replica id) than n - k + 1 of the membership the headers\n"
	"      record.\n";

/* ------------------------------------------------------------- compare */

/*
 * a copy named on the command line is asked over the network (ADDR:PORT,
 * with the key) when a key is given and it is not a path: a name starting
 * with '/' or '.' is a file on this host, read directly
 */
static bool
is_remote(const char *what, const uint8_t *key)
{
	return key != NULL && what[0] != '/' && what[0] != '.';
}

/* one replica's header: a file here, or ADDR:PORT asked with the key */
static int
info_of(const char *what, const uint8_t *key, size_t key_len, int timeout,
		struct pmrep_replica_info *info)
{
	if (!is_remote(what, key))
		return pmrep_replica_read_info(what, info);
	char addr[256];
	snprintf(addr, sizeof(addr), "%s", what);
	char *colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr || colon[1] == '\0') {
		fprintf(stderr, "pmrep: bad target '%s' (ADDR:PORT with --key-file)\n",
				what);
		return PMREP_E_INVAL;
	}
	*colon = '\0';
	return pmrep_replica_query(addr, colon + 1, key, key_len, timeout, info);
}

/* the membership a file's header records, or (a key given) ADDR:PORT's */
static int
membership_of(const char *what, const uint8_t *key, size_t key_len,
		int timeout, struct pmrep_replica_membership *mb)
{
	if (!is_remote(what, key))
		return pmrep_replica_read_membership(what, mb);
	char addr[256];
	snprintf(addr, sizeof(addr), "%s", what);
	char *colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr || colon[1] == '\0')
		return PMREP_E_INVAL;
	*colon = '\0';
	return pmrep_replica_query_membership(addr, colon + 1, NULL, key,
			key_len, timeout, NULL, mb);
}

/* the position of a file, or (a key given) asked of ADDR:PORT */
static int
position_of(const char *what, const uint8_t *key, size_t key_len,
		int timeout, struct pmrep_replica_position *pos)
{
	if (!is_remote(what, key))
		return pmrep_replica_read_position(what, pos);
	char addr[256];
	snprintf(addr, sizeof(addr), "%s", what);
	char *colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr || colon[1] == '\0')
		return PMREP_E_INVAL;
	*colon = '\0';
	return pmrep_replica_query_position(addr, colon + 1, NULL, key, key_len,
			timeout, pos, NULL, NULL);
}

/* one copy's header, position and membership (a file, or asked) */
static int
copy_of(const char *what, const uint8_t *key, size_t key_len, int timeout,
		struct pmrep_replica_info *in, struct pmrep_replica_position *pos,
		struct pmrep_replica_membership *mb)
{
	int ret = info_of(what, key, key_len, timeout, in);
	if (ret == 0)
		ret = position_of(what, key, key_len, timeout, pos);
	if (ret == 0)
		ret = membership_of(what, key, key_len, timeout, mb);
	return ret;
}

/* the key of --key-file (none: *len 0); the error reported as `cmd`'s */
static int
key_of(const char *cmd, const char *key_file, uint8_t key[PMREP_KEY_MAX],
		size_t *len)
{
	*len = 0;
	if (key_file == NULL)
		return 0;
	int ret = pmrep_key_read_file_ex(key_file, key_flags, key,
			PMREP_KEY_MAX, len, NULL);
	if (ret)
		report(cmd, key_file, ret);
	return ret;
}

/*
 * compare's verdict on in[0..n-1] (named name[i], positions pos[i]): the
 * one decision (pmrep_position_decide) -- mc[i] says which are the most
 * current: complete (each holds every persist any of them may hold),
 * none more current than another, at the newest generation among them;
 * the index of the first. *reason NULL, or when none can be named a
 * token ("different_sets", "split_brain", "cannot_tell") and why[] the
 * sentence that follows "no answer: ". *shown: how many replica lines
 * the text prints (up to the first of another set).
 */
static int
compare_verdict(int n, const struct pmrep_replica_info *in,
		const struct pmrep_replica_position *pos,
		const struct pmrep_replica_membership *mb, char *const name[],
		unsigned need_min, bool *mc, int *shown, const char **reason, char *why,
		size_t why_len)
{
	*shown = n;
	*reason = NULL;
	why[0] = '\0';
	for (int i = 0; i < n; i++) {
		mc[i] = false;
		if (memcmp(in[i].uuid, in[0].uuid, PMREP_UUID_SIZE) != 0) {
			snprintf(why, why_len, "%s and %s belong to different replica sets",
					name[0], name[i]);
			*shown = i + 1;
			*reason = "different_sets";
			return 0;
		}
	}
	/* n - k + 1 distinct copies of the set, as the headers record it,
	 * or the answer could miss a persist only the others hold */
	unsigned need = need_min ? need_min : 1, distinct = 0;
	for (int i = 0; i < n; i++) {
		unsigned k = mb[i].quorum ? mb[i].quorum : mb[i].set_size;
		if (mb[i].set_size != 0 && mb[i].set_size - k + 1 > need)
			need = mb[i].set_size - k + 1;
		if (pos[i].flags & (PMREP_POSITION_F_FRESH | PMREP_POSITION_F_REMOVED))
			continue;
		bool dup = false;
		for (int j = 0; j < i; j++)
			if (memcmp(in[j].replica_id, in[i].replica_id,
					PMREP_UUID_SIZE) == 0 &&
					!(pos[j].flags & (PMREP_POSITION_F_FRESH |
						PMREP_POSITION_F_REMOVED)))
				dup = true;
		if (!dup)
			distinct++;
	}
	if (distinct < need) {
		snprintf(why, why_len, "%u distinct copies of the set named, %u needed (n - k + 1, as the headers record the set): a copy not named may hold persists these lack",
				distinct, need);
		*reason = "too_few_copies";
		return 0;
	}
	unsigned best = 0, conflict = (unsigned)n;
	bool complete[64];
	int ret = pmrep_position_decide(pos, (unsigned)n, &best, &conflict,
			complete);
	if (ret) {
		const char *who = conflict < (unsigned)n ? name[conflict] : name[0];
		if (ret == PMREP_E_SPLIT_BRAIN) {
			snprintf(why, why_len, "two primaries wrote generation %llu in one epoch (%s among them): split brain; find out which one's writes to keep, then promote at generation %llu",
					(unsigned long long)pos[conflict < (unsigned)n ? conflict : 0].generation,
					who, (unsigned long long)in[0].generation + 1);
			*reason = "split_brain";
		} else {
			snprintf(why, why_len, "which replica holds the newest persists cannot be told: %s may hold persists none of the others vouches for (its writer's run did not close cleanly and recorded no position per step -- run the mirror with persist sequences on, --persist-seq -- or it was being resynced); compare it with the replicas that were in sync with its writer",
					who);
			*reason = "cannot_tell";
		}
		return 0;
	}
	/* the copies as current as the best: the best itself (a writer's
	 * own log vouches for more than its recorded position says it may
	 * hold, so it does not compare equal to itself), and those that
	 * compare equal to it */
	uint64_t top = 0;
	for (int i = 0; i < n; i++)
		if (complete[i] && (i == (int)best ||
				pmrep_position_compare(&pos[i], &pos[best]) == 0) &&
				pos[i].fence_generation > top)
			top = pos[i].fence_generation;
	int first = -1;
	for (int i = 0; i < n; i++) {
		mc[i] = complete[i] && (i == (int)best ||
				pmrep_position_compare(&pos[i], &pos[best]) == 0) &&
			pos[i].fence_generation == top;
		if (mc[i] && first < 0)
			first = i;
	}
	return first < 0 ? (int)best : first;
}

int
cmd_compare(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "key-file", required_argument, NULL, 'k' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "timeout", required_argument, NULL, 't' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'J' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *key_file = NULL;
	unsigned long long timeout = 10000;
	bool json = false;
	int c;
	while ((c = getopt_long(argc, argv, "k:t:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'J': json = true; break;
		case 'k': key_file = optarg; break;
		case 'K': key_flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'N': (void) pmrep_repl_set_tls_default(false); break;
		case 't':
			if (parse_count(optarg, INT_MAX, &timeout))
				return usage_error("compare: bad --timeout '%s' (ms, >= 1)", optarg);
			break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_compare);
		default: return usage_error("compare: %s", "unknown option");
		}
	}
	int n = argc - optind;
	if (n > 64)
		return usage_error("compare: unexpected argument '%s' (at most 64 REPLICAs)",
				argv[optind + 64]);
	if (n < 1)
		return usage_error("compare: %s", "expected 1 to 64 REPLICAs");
	log_setup();
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len = 0;
	if (key_of("compare", key_file, key, &key_len))
		return EX_ERR;
	struct pmrep_replica_info in[64];
	struct pmrep_replica_position pos[64];
	struct pmrep_replica_membership mb[64];
	bool mc[64];
	int rc = EX_OK;
	for (int i = 0; i < n; i++) {
		int ret = copy_of(argv[optind + i], key_file ? key : NULL,
				key_len, (int)timeout, &in[i], &pos[i], &mb[i]);
		if (ret) {
			report("compare", argv[optind + i], ret);
			rc = EX_ERR;
		}
	}
	memset(key, 0, sizeof(key));
	if (rc != EX_OK)
		return rc;
	char why[512];
	const char *reason = NULL;
	int shown = n, best = compare_verdict(n, in, pos, mb, argv + optind, 0, mc,
			&shown, &reason, why, sizeof(why));
	if (json) {
		fputs("{\"replicas\":[", stdout);
		for (int i = 0; i < n; i++) {
			if (i)
				putchar(',');
			json_info(argv[optind + i], key_file != NULL, &in[i],
					&mb[i], &pos[i]);
		}
		fputs("],\"most_current\":[", stdout);
		bool first = true;
		for (int i = 0; reason == NULL && i < n; i++)
			if (mc[i]) {
				if (!first)
					putchar(',');
				json_str(argv[optind + i]);
				first = false;
			}
		fputs("],\"answer\":", stdout);
		if (reason == NULL)
			json_str(argv[optind + best]);
		else
			fputs("null", stdout);
		fputs(",\"reason\":", stdout);
		if (reason == NULL)
			fputs("null", stdout);
		else
			json_str(reason);
		fputs(",\"verdict\":", stdout);
		if (reason == NULL) {
			/* the text's verdict line, without its newline */
			char line[64 * 300] = "most current:";
			size_t len = strlen(line);
			for (int i = 0; i < n && len < sizeof(line); i++)
				if (mc[i])
					len += (size_t)snprintf(line + len,
							sizeof(line) - len, " %s",
							argv[optind + i]);
			json_str(line);
		} else {
			char line[600];
			snprintf(line, sizeof(line), "no answer: %s", why);
			json_str(line);
		}
		fputs("}\n", stdout);
		return reason == NULL ? EX_OK : EX_NO;
	}
	for (int i = 0; i < shown; i++) {
		char u[2 * PMREP_UUID_SIZE + 1];
		uuid_str(in[i].uuid, u);
		printf("%s: set %s, generation %llu, owner %016llx, last persist seq %llu, %s\n",
				argv[optind + i], u, (unsigned long long)in[i].generation,
				(unsigned long long)in[i].owner,
				(unsigned long long)in[i].last_persist_seq,
				in[i].flags & PMREP_REPLICA_F_CONSISTENT ?
					"marked consistent" : "not marked consistent");
	}
	if (reason != NULL) {
		printf("no answer: %s\n", why);
		return EX_NO;
	}
	printf("most current:");
	for (int i = 0; i < n; i++)
		if (mc[i])
			printf(" %s", argv[optind + i]);
	printf("\n");
	return EX_OK;
}


/* ---------------------------------------------------------------- rank */

const char help_rank[] =
	"  pmrep rank SELF [REPLICA...] [--key-file FILE] [--set-size N]\n"
	"             [--quorum K] [--timeout MS] [--no-tls] [--json] [-v]\n"
	"      how the copy SELF stands among the copies of its set reachable from\n"
	"      here: whether promoting it now would succeed without a catch-up. A\n"
	"      cluster manager's promotion score is made of this answer (the\n"
	"      Pacemaker agent ocf:pmrep:pmrep). SELF and each REPLICA: a file\n"
	"      on this host (a path starting with / or .) or ADDR:PORT of its\n"
	"      pmrep-target (asked read-only with the key in FILE). REPLICAs not\n"
	"      reached, or of another set, are left out and named. Ranked by the\n"
	"      decision of compare and promote among SELF and the copies reached;\n"
	"      --set-size n, --quorum k (default all): the set the last primary\n"
	"      wrote, as for promote; the membership the headers record counts\n"
	"      too, whichever needs more copies (n - k + 1). Prints \"rank: R\",\n"
	"      then \"reached: C copies of the set (SELF included), needed N\",\n"
	"      then \"why: ...\". R is one of: most_current (SELF holds every\n"
	"      persist any reachable copy may hold: promote needs no catch-up),\n"
	"      behind (a reachable copy is more current: promote would catch up\n"
	"      from it first; or SELF is incomplete after a catch-up that\n"
	"      stopped), too_few (fewer than n - k + 1 distinct copies reached:\n"
	"      promote would be refused), cannot_tell (which copy is newest cannot\n"
	"      be told, or split brain: promote would be refused), removed (SELF\n"
	"      was removed from the set), unclaimed (SELF holds no set yet). Exit 0 most_current, 1 any other rank,\n"
	"      2 usage error or failure (SELF unreadable or unreachable).\n"
	"      --json: one object: self, rank, reached, needed, unreachable\n"
	"      (names), other_sets (names), most_current (names), why.\n";

static void
rank_json_names(char *const name[], const bool *pick, int n)
{
	bool first = true;
	putchar('[');
	for (int i = 0; i < n; i++)
		if (pick[i]) {
			if (!first)
				putchar(',');
			json_str(name[i]);
			first = false;
		}
	putchar(']');
}

int
cmd_rank(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "key-file", required_argument, NULL, 'k' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "set-size", required_argument, NULL, 'n' },
		{ "quorum", required_argument, NULL, 'q' },
		{ "timeout", required_argument, NULL, 't' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'J' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *key_file = NULL;
	unsigned long long timeout = 10000, set_size = 0, quorum = 0;
	bool json = false;
	int c;
	while ((c = getopt_long(argc, argv, "k:t:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'J': json = true; break;
		case 'k': key_file = optarg; break;
		case 'K': key_flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'N': (void) pmrep_repl_set_tls_default(false); break;
		case 'n':
			if (parse_count(optarg, PMREP_MIRROR_MAX_REPLICAS + 1, &set_size))
				return usage_error("rank: bad --set-size '%s'", optarg);
			break;
		case 'q':
			if (parse_quorum(optarg, &quorum))
				return usage_error("rank: bad --quorum '%s' (K or all)", optarg);
			break;
		case 't':
			if (parse_count(optarg, INT_MAX, &timeout))
				return usage_error("rank: bad --timeout '%s' (ms, >= 1)", optarg);
			break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_rank);
		default: return usage_error("rank: %s", "unknown option");
		}
	}
	int n = argc - optind;
	if (n > 64)
		return usage_error("rank: unexpected argument '%s' (at most 64 copies)",
				argv[optind + 64]);
	if (n < 1)
		return usage_error("rank: %s", "expected SELF and up to 63 REPLICAs");
	if (set_size != 0 && quorum > set_size)
		return usage_error("rank: --quorum above --set-size (%s)", "K <= N");
	log_setup();
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len = 0;
	if (key_of("rank", key_file, key, &key_len))
		return EX_ERR;
	const uint8_t *k = key_file ? key : NULL;
	/* the copies reached, SELF first; in[] etc. indexed by reached copy */
	struct pmrep_replica_info in[64];
	struct pmrep_replica_position pos[64];
	struct pmrep_replica_membership mb[64];
	char *name[64];
	bool unreachable[64] = { false }, other_set[64] = { false }, mc[64];
	int m = 0;
	for (int i = 0; i < n; i++) {
		const char *what = argv[optind + i];
		int ret = copy_of(what, k, key_len, (int)timeout, &in[m],
				&pos[m], &mb[m]);
		if (ret) {
			if (i == 0) {
				memset(key, 0, sizeof(key));
				report("rank", what, ret);
				return EX_ERR;
			}
			if (verbose)
				report("rank", what, ret);
			unreachable[i] = true;
			continue;
		}
		if (i > 0 && memcmp(in[m].uuid, in[0].uuid, PMREP_UUID_SIZE) != 0) {
			other_set[i] = true;
			continue;
		}
		name[m++] = argv[optind + i];
	}
	memset(key, 0, sizeof(key));

	/* n - k + 1 of the set the caller names; the headers' count too */
	unsigned need = 1;
	if (set_size != 0)
		need = (unsigned)(set_size - (quorum ? quorum : set_size) + 1);
	const char *rank;
	char why[600];
	const char *reason = NULL;
	int shown, best = 0;
	unsigned distinct_need = need;
	for (int i = 0; i < m; i++) {
		unsigned kk = mb[i].quorum ? mb[i].quorum : mb[i].set_size;
		if (mb[i].set_size != 0 && mb[i].set_size - kk + 1 > distinct_need)
			distinct_need = mb[i].set_size - kk + 1;
	}
	if (pos[0].flags & PMREP_POSITION_F_FRESH) {
		rank = "unclaimed";
		snprintf(why, sizeof(why), "%s was never claimed by a mirror: no replica set exists yet; the application's first run creates it (docs/FAILOVER.md)",
				name[0]);
		for (int i = 0; i < m; i++)
			mc[i] = false;
	} else if (pos[0].flags & PMREP_POSITION_F_REMOVED) {
		rank = "removed";
		snprintf(why, sizeof(why), "%s was removed from its replica set (pmrep_mirror_remove_replica): it may not be promoted",
				name[0]);
		for (int i = 0; i < m; i++)
			mc[i] = false;
	} else {
		best = compare_verdict(m, in, pos, mb, name, need, mc, &shown,
				&reason, why, sizeof(why));
		if (reason == NULL) {
			if (mc[0]) {
				rank = "most_current";
				snprintf(why, sizeof(why), "no copy reached is more current than %s",
						name[0]);
			} else {
				rank = "behind";
				snprintf(why, sizeof(why), "%s is more current than %s%s: a promotion of %s catches up from it first",
						name[best], name[0],
						(pos[0].flags & PMREP_POSITION_F_INCOMPLETE) ?
						" (incomplete: a catch-up did not finish)" : "",
						name[0]);
			}
		} else if (strcmp(reason, "too_few_copies") == 0) {
			rank = "too_few";
		} else {
			rank = "cannot_tell";	/* cannot_tell, split_brain */
		}
	}
	/* distinct copies reached, as compare_verdict counts them */
	unsigned reached = 0;
	for (int i = 0; i < m; i++) {
		if (pos[i].flags & (PMREP_POSITION_F_FRESH | PMREP_POSITION_F_REMOVED))
			continue;
		bool dup = false;
		for (int j = 0; j < i; j++)
			if (memcmp(in[j].replica_id, in[i].replica_id,
					PMREP_UUID_SIZE) == 0 &&
					!(pos[j].flags & (PMREP_POSITION_F_FRESH |
						PMREP_POSITION_F_REMOVED)))
				dup = true;
		if (!dup)
			reached++;
	}
	if (json) {
		fputs("{\"self\":", stdout);
		json_str(name[0]);
		fputs(",\"rank\":", stdout);
		json_str(rank);
		printf(",\"reached\":%u,\"needed\":%u,\"unreachable\":", reached,
				distinct_need);
		rank_json_names(argv + optind, unreachable, n);
		fputs(",\"other_sets\":", stdout);
		rank_json_names(argv + optind, other_set, n);
		fputs(",\"most_current\":", stdout);
		rank_json_names(name, mc, reason == NULL ? m : 0);
		fputs(",\"why\":", stdout);
		json_str(why);
		fputs("}\n", stdout);
	} else {
		printf("rank: %s\n", rank);
		printf("reached: %u copies of the set (%s included), needed %u\n",
				reached, name[0], distinct_need);
		for (int i = 0; i < n; i++)
			if (unreachable[i] || other_set[i])
				printf("left out: %s (%s)\n", argv[optind + i],
						unreachable[i] ? "not reached" :
						"of another replica set");
		printf("why: %s\n", why);
	}
	return strcmp(rank, "most_current") == 0 ? EX_OK : EX_NO;
}
