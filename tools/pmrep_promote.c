/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_promote.c -- `pmrep promote LOG ...`: this node's replica file
 * becomes the primary of its set (pmrep_mirror_promote), for a person or
 * an external manager (exit codes, --json). The node's own pmrep-target
 * must have stopped serving LOG: promote opens it in place, which takes
 * the target's lock.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "pmrep_cli.h"

const char help_promote[] =
	"  pmrep promote LOG [--replica ADDR:PORT[/NAME]]...\n"
	"                [--key-file FILE] [--set-size N] [--quorum K] [--dry-run]\n"
	"                [--no-catch-up] [--force] [--force-stale] [--force-fence]\n"
	"                [--wait-sync]\n"
	"                [--state-file PATH] [--timeout MS] [--create-timeout MS]\n"
	"                [--no-tls] [--json] [-v]\n"
	"      make this node's replica file LOG (a pmrep log; its pmrep-target\n"
	"      stopped) the primary of its set after the primary failed. Fence,\n"
	"      then decide: raise the generation in LOG's header and commit it on\n"
	"      every replica reached (--replica, in the order the new primary's\n"
	"      mirror uses them; /NAME: one replica of an endpoint serving\n"
	"      several), which closes the old primary's sessions there, then rank\n"
	"      the positions of the fenced copies as of their fence. Refused when\n"
	"      fewer than n - k + 1 copies are fenced (--set-size n: the replicas\n"
	"      the old primary wrote to, this node included, default the\n"
	"      --replica count + 1; --quorum k: its quorum, default all; the set\n"
	"      and quorum the headers record count too, whichever needs more),\n"
	"      or when which copy is newest cannot be told. When a fenced copy is\n"
	"      more current, LOG first copies it (catch-up: LOG is marked incomplete\n"
	"      until the copy is done; the source dying refuses, a re-run resumes);\n"
	"      --no-catch-up: refuse instead, naming it. A refusal after the fence\n"
	"      leaves the copies fenced with no writer: re-run, or promote the copy\n"
	"      named.\n"
	"      --dry-run: the same checks read-only, nothing written (a pre-check:\n"
	"      a live old primary can still move the positions; a more current\n"
	"      copy refuses it: is LOG itself the most current?). --force-stale:\n"
	"      promote LOG although another copy may hold acknowledged writes LOG\n"
	"      lacks (they are overwritten); --force-fence: although the old\n"
	"      primary may still complete persists; --force: both. --wait-sync:\n"
	"      return once every replica fenced is in sync with LOG. Then start\n"
	"      the application's mirror on LOG at the printed generation, with\n"
	"      the same mirror state file (--state-file, default LOG.pmrep-state).\n"
	"      Without --replica (and --key-file): a set of one, the only\n"
	"      replica of a primary gone for good (refused when the headers\n"
	"      record a larger set).\n"
	"      Exit 0 promoted (or, --dry-run, may be promoted), 1 refused, 2 usage\n"
	"      error or failure (LOG in use by its target, I/O, fencing failed).\n";

/* --replica ADDR:PORT[/NAME] into the cfg as replica `idx` (NAME: the
 * replica of an endpoint serving several, pmrep-target --config) */
static int
add_replica(struct pmrep_mirror_cfg *cfg, unsigned idx, const char *arg)
{
	char addr[256];
	snprintf(addr, sizeof(addr), "%s", arg);
	char *name = NULL, *slash = strrchr(addr, '/');
	if (slash != NULL) {
		*slash = '\0';
		name = slash + 1;
	}
	char *colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr || colon[1] == '\0' ||
			(name != NULL && name[0] == '\0'))
		return PMREP_E_INVAL;
	*colon = '\0';
	int ret = pmrep_mirror_cfg_add_replica(cfg, addr, colon + 1);
	if (ret == 0 && name != NULL)
		ret = pmrep_mirror_cfg_set_replica_name(cfg, idx, name);
	return ret;
}

/* the outcome's token: promoted, may_promote (--dry-run), refused_stale,
 * refused_cannot_tell, refused_removed, refused_fence, failed */
static const char *
outcome_of(const struct pmrep_promote_result *r, unsigned flags, int ret)
{
	if (ret == 0)
		return flags & PMREP_PROMOTE_DRY_RUN ? "may_promote" : "promoted";
	switch (r->refused) {
	case PMREP_PROMOTE_REFUSED_STALE: return "refused_stale";
	case PMREP_PROMOTE_REFUSED_CANNOT_TELL: return "refused_cannot_tell";
	case PMREP_PROMOTE_REFUSED_FENCE: return "refused_fence";
	case PMREP_PROMOTE_REFUSED_REMOVED: return "refused_removed";
	default: return "failed";
	}
}

static void
print_result(const char *log, const struct pmrep_promote_result *r,
		char *const replicas[], const char *outcome, int ret, bool json)
{
	if (json) {
		fputs("{\"log\":", stdout);
		json_str(log);
		printf(",\"outcome\":\"%s\",\"old_generation\":%llu,\"generation\":%llu,"
				"\"primary_id\":\"%016llx\",\"last_persist_seq\":%llu,"
				"\"needed\":%u,\"reached\":%u,\"fenced\":%u,"
				"\"set_size\":%u,\"set_quorum\":%u,\"caught_up\":%s,"
				"\"more_current\":",
				outcome, (unsigned long long)r->old_generation,
				(unsigned long long)r->generation,
				(unsigned long long)r->primary_id,
				(unsigned long long)r->last_persist_seq, r->needed,
				r->reached, r->fenced, r->set_size, r->set_quorum,
				r->caught_up ? "true" : "false");
		if (r->more_current >= 0)
			json_str(replicas[r->more_current]);
		else
			fputs("null", stdout);
		fputs(",\"error\":", stdout);
		if (ret)
			json_str(pmrep_err_to_str(ret));
		else
			fputs("null", stdout);
		fputs("}\n", stdout);
		return;
	}
	printf("replicas reached: %u besides this node; needed to fence: %u (this node included; a set of %u, quorum %s%u)\n",
			r->reached, r->needed, r->set_size,
			r->set_quorum ? "" : "all = ",
			r->set_quorum ? r->set_quorum : r->set_size);
	if (r->more_current >= 0)
		printf("more current: %s\n", replicas[r->more_current]);
	if (strcmp(outcome, "may_promote") == 0)
		printf("may promote: %s (generation %llu would become %llu)\n", log,
				(unsigned long long)r->old_generation,
				(unsigned long long)r->old_generation + 1);
	else if (ret == 0 && r->caught_up)
		printf("caught up: %s copied %s, the more current copy, first\n",
				log, replicas[r->more_current]);
	if (strcmp(outcome, "may_promote") != 0 && ret == 0)
		printf("promoted: %s at generation %llu (primary %016llx), %u replicas fenced\n",
				log, (unsigned long long)r->generation,
				(unsigned long long)r->primary_id, r->fenced);
}

int
cmd_promote(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "replica", required_argument, NULL, 'r' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "set-size", required_argument, NULL, 'n' },
		{ "quorum", required_argument, NULL, 'q' },
		{ "dry-run", no_argument, NULL, 'd' },
		{ "no-catch-up", no_argument, NULL, 'C' },
		{ "force", no_argument, NULL, 'f' },
		{ "force-stale", no_argument, NULL, 'S' },
		{ "force-fence", no_argument, NULL, 'F' },
		{ "wait-sync", no_argument, NULL, 'w' },
		{ "state-file", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "create-timeout", required_argument, NULL, 'c' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'J' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *key_file = NULL, *state_file = NULL;
	char *replicas[PMREP_MIRROR_MAX_REPLICAS];
	unsigned nrep = 0, flags = 0;
	unsigned long long set_size = 0, quorum = 0, timeout = 10000,
		create_timeout = 60000;
	bool json = false, no_tls = false;
	int c;
	while ((c = getopt_long(argc, argv, "r:k:n:q:s:t:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (nrep == PMREP_MIRROR_MAX_REPLICAS)
				return usage_error("promote: more than %s --replica",
						"the mirror's most");
			replicas[nrep++] = optarg;
			break;
		case 'k': key_file = optarg; break;
		case 'K': key_flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'n':
			if (parse_count(optarg, PMREP_MIRROR_MAX_REPLICAS + 1, &set_size))
				return usage_error("promote: bad --set-size '%s'", optarg);
			break;
		case 'q':
			if (parse_quorum(optarg, &quorum))
				return usage_error("promote: bad --quorum '%s' (K or all)", optarg);
			break;
		case 'd': flags |= PMREP_PROMOTE_DRY_RUN; break;
		case 'C': flags |= PMREP_PROMOTE_NO_CATCH_UP; break;
		case 'f': flags |= PMREP_PROMOTE_FORCE_STALE | PMREP_PROMOTE_FORCE_FENCE; break;
		case 'S': flags |= PMREP_PROMOTE_FORCE_STALE; break;
		case 'F': flags |= PMREP_PROMOTE_FORCE_FENCE; break;
		case 'w': flags |= PMREP_PROMOTE_WAIT_SYNC; break;
		case 's': state_file = optarg; break;
		case 't':
			if (parse_count(optarg, INT_MAX, &timeout))
				return usage_error("promote: bad --timeout '%s' (ms, >= 1)", optarg);
			break;
		case 'c':
			if (parse_count(optarg, INT_MAX, &create_timeout))
				return usage_error("promote: bad --create-timeout '%s' (ms, >= 1)",
						optarg);
			break;
		case 'N': no_tls = true; break;
		case 'J': json = true; break;
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_promote);
		default: return usage_error("promote: %s", "unknown option");
		}
	}
	if (argc - optind != 1)
		return usage_error("promote: %s", argc - optind < 1 ?
				"expected LOG" : "expected one LOG");
	if (nrep > 0 && key_file == NULL)
		return usage_error("promote: %s", "expected --key-file FILE");
	const char *log = argv[optind];
	log_setup();
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len = 0;
	uint32_t key_id = 0;
	int ret = key_file == NULL ? 0 : pmrep_key_read_file_ex(key_file,
			key_flags, key, sizeof(key), &key_len, &key_id);
	if (ret) {
		report("promote", key_file, ret);
		return EX_ERR;
	}
	if (no_tls)
		(void) pmrep_repl_set_tls_default(false);
	struct pmrep_mirror_cfg *cfg = NULL;
	ret = pmrep_mirror_cfg_new(&cfg);
	for (unsigned i = 0; ret == 0 && i < nrep; i++) {
		ret = add_replica(cfg, i, replicas[i]);
		if (ret == PMREP_E_INVAL) {
			memset(key, 0, sizeof(key));
			pmrep_mirror_cfg_delete(&cfg);
			return usage_error("promote: bad --replica '%s' (ADDR:PORT[/NAME])",
					replicas[i]);
		}
	}
	if (ret == 0 && key_file) ret = pmrep_mirror_cfg_set_key(cfg, key, key_len);
	if (ret == 0 && key_file) ret = pmrep_mirror_cfg_set_key_id(cfg, key_id);
	memset(key, 0, sizeof(key));
	if (ret == 0) ret = pmrep_mirror_cfg_set_timeout(cfg, (int)timeout);
	if (ret == 0) ret = pmrep_mirror_cfg_set_create_timeout(cfg, (int)create_timeout);
	if (ret == 0 && no_tls) ret = pmrep_mirror_cfg_set_tls(cfg, false);
	if (ret == 0 && state_file) ret = pmrep_mirror_cfg_set_state_path(cfg, state_file);
	if (ret) {
		report("promote", log, ret);
		pmrep_mirror_cfg_delete(&cfg);
		return EX_ERR;
	}
	struct pmrep_pmem *pmem = NULL;
	ret = pmrep_log_open(log, 0, 0, PMREP_PMEM_GRANULARITY_PAGE, &pmem);
	if (ret == PMREP_E_BUSY) {
		fprintf(stderr, "pmrep promote: %s is in use (its pmrep-target still serves it, or a mirror has it open): stop that first\n",
				log);
		pmrep_mirror_cfg_delete(&cfg);
		return EX_ERR;
	}
	if (ret) {
		report("promote", log, ret);
		pmrep_mirror_cfg_delete(&cfg);
		return EX_ERR;
	}
	struct pmrep_promote_result res;
	ret = pmrep_mirror_promote(pmem, cfg, (unsigned)set_size, (unsigned)quorum,
			flags, &res);
	const char *outcome = outcome_of(&res, flags, ret);
	bool refused = strncmp(outcome, "refused", 7) == 0;
	print_result(log, &res, replicas, outcome, ret, json);
	if (ret)
		report("promote", log, ret);
	int cret = pmrep_pmem_close(&pmem);
	pmrep_mirror_cfg_delete(&cfg);
	if (ret == 0 && cret) {
		report("promote", log, cret);
		return EX_ERR;
	}
	return ret == 0 ? EX_OK : refused ? EX_NO : EX_ERR;
}
