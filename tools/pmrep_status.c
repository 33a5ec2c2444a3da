/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep_status.c -- pmrep status (a replica's header: read from its file,
 * or asked read-only of the pmrep-target serving it; or a running target's
 * state on its control socket) and pmrep watch (that target's events),
 * with the text and the JSON object of one replica's header that compare
 * and export print too (json_info).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <pmrep/repl.h>

#include "pmrep_cli.h"
#include "target_ctl.h"

const char help_status[] =
	"  pmrep status REPLICA_FILE [--json] [-v]\n"
	"  pmrep status ADDR:PORT --key-file FILE [--timeout MS] [--no-tls]\n"
	"               [--json] [-v]\n"
	"      print a replica's header: replica set UUID, generation, data size,\n"
	"      consistent mark, replica id, owner (the primary id of the last\n"
	"      committed attach), header slot sequence, last persist sequence,\n"
	"      the position (the writer whose persists it holds and how far, the\n"
	"      last run that claimed it; docs/PROTOCOL.md \"Position\") and the\n"
	"      recorded membership.\n"
	"      REPLICA_FILE: read from the file on the replica's host. ADDR:PORT:\n"
	"      asked of the pmrep-target serving it, authenticated with the key in\n"
	"      FILE, read-only: the target writes nothing for it, and a mirror\n"
	"      attached there goes on undisturbed. ADDR:PORT/NAME: the replica\n"
	"      NAME of a pmrep-target --config serving several on that port.\n"
	"      --timeout: milliseconds for the query (default 10000). Either way\n"
	"      nothing is written.\n"
	"      Exit 0 a valid replica (whatever its mark), 1 REPLICA_FILE is not a\n"
	"      valid replica, 2 usage error or failure (e.g. a missing file; over\n"
	"      the network: connection, authentication, timeout). --no-tls: tcp\n"
	"      without TLS, for a target run with --no-tls (default: TLS 1.3 with a\n"
	"      PSK derived from the key; each end refuses the other kind).\n"
	"      --json: one JSON object on stdout instead (replica, queried, valid,\n"
	"      uuid, claimed, generation, data_size, data_offset, consistent,\n"
	"      flags, replica_id, has_replica_id, owner, header_seq,\n"
	"      last_persist_seq; not a valid replica: valid false, code, error,\n"
	"      message); errors stay on stderr; the exit codes are the same.\n"
	"  pmrep status --control SOCKET [--json | --metrics]\n"
	"      ask a running pmrep-target on its control socket (pmrep-target\n"
	"      --control SOCKET; read-only): its replica, its sessions (id, peer,\n"
	"      state, generation, GPSPM persists and their latency percentiles as\n"
	"      the target sees them). --json: one JSON object on one line (target,\n"
	"      replicas, sessions). --metrics: its metrics in the Prometheus text\n"
	"      format 0.0.4 (docs/METRICS.md; what pmrep-target --metrics-file\n"
	"      writes), printed only when the reply is complete. Exit 0, 2 the\n"
	"      socket does not answer (or, --metrics, the reply is cut).\n";
const char help_watch[] =
	"  pmrep watch SOCKET\n"
	"      follow a running pmrep-target's events on its control socket: one\n"
	"      JSON object per line, first the current state (\"event\":\"exists\"\n"
	"      for the target, the replica, each session, then an end mark with\n"
	"      \"object\":\"-\"), then opened / authenticated / state / generation /\n"
	"      closed as they happen, until the target stops cleanly (a\n"
	"      \"stopped\" event, exit 0). When the socket closes otherwise (the\n"
	"      target killed or restarted, or this client dropped) it connects\n"
	"      again every second and prints the current state again. Exit 2:\n"
	"      the socket does not answer at the start.\n";

/* ------------------------------------------------------------- status */

/* a replica header's fields, one a line; `where` names the replica
 * (its file, or ADDR:PORT with how it was asked) */
/* a persist sequence as epoch:step */
#define PSN_EPOCH(p) ((unsigned long long)((p) >> 40))
#define PSN_STEP(p) ((unsigned long long)((p) & ((1ull << 40) - 1)))

/* what the position's flags say, for the text */
static void
print_position(const struct pmrep_replica_position *pos)
{
	if (pos == NULL)
		return;
	if (pos->generation == 0 && pos->owner == 0)
		printf("position:    none recorded (sequence %llu:%llu)\n",
				PSN_EPOCH(pos->seq), PSN_STEP(pos->seq));
	else
		printf("position:    generation %llu, writer %016llx, sequence %llu:%llu (epoch:step)\n",
				(unsigned long long)pos->generation,
				(unsigned long long)pos->owner,
				PSN_EPOCH(pos->seq), PSN_STEP(pos->seq));
	if (pos->run_generation != 0)
		printf("last run:    generation %llu, writer %016llx, from epoch %llu%s%s%s%s\n",
				(unsigned long long)pos->run_generation,
				(unsigned long long)pos->run_owner,
				PSN_EPOCH(pos->run_floor),
				pos->flags & PMREP_POSITION_F_TRACKED ?
				", positions per step" : ", no per-step positions",
				pos->flags & PMREP_POSITION_F_RUN_CLOSED ?
				", closed cleanly at the position" : "",
				pos->flags & PMREP_POSITION_F_PRIMARY ?
				", a writer's own log" : "",
				pos->flags & PMREP_POSITION_F_INCOMPLETE ?
				", INCOMPLETE (a promotion's catch-up did not finish)" : "");
}

/* the position as a JSON member (no leading comma) */
static void
json_position(const struct pmrep_replica_position *pos)
{
	printf("\"position\":{\"generation\":%llu,\"owner\":\"%016llx\","
			"\"epoch\":%llu,\"step\":%llu,\"run_generation\":%llu,"
			"\"run_owner\":\"%016llx\",\"run_epoch\":%llu,"
			"\"tracked\":%s,\"run_closed\":%s,\"writer_log\":%s,"
			"\"incomplete\":%s}",
			(unsigned long long)pos->generation,
			(unsigned long long)pos->owner, PSN_EPOCH(pos->seq),
			PSN_STEP(pos->seq),
			(unsigned long long)pos->run_generation,
			(unsigned long long)pos->run_owner,
			PSN_EPOCH(pos->run_floor),
			pos->flags & PMREP_POSITION_F_TRACKED ? "true" : "false",
			pos->flags & PMREP_POSITION_F_RUN_CLOSED ? "true" : "false",
			pos->flags & PMREP_POSITION_F_PRIMARY ? "true" : "false",
			pos->flags & PMREP_POSITION_F_INCOMPLETE ? "true" : "false");
}

static void
print_info(const char *where, const struct pmrep_replica_info *info,
		const struct pmrep_replica_membership *mb,
		const struct pmrep_replica_position *pos)
{
	bool claimed = false;
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		claimed |= info->uuid[i] != 0;
	char u[2 * PMREP_UUID_SIZE + 1];
	uuid_str(info->uuid, u);
	printf("replica:     %s\n", where);
	printf("uuid:        %s%s\n", u, claimed ? "" : " (unclaimed: no mirror attached yet)");
	printf("generation:  %llu\n", (unsigned long long)info->generation);
	printf("data size:   %llu bytes (at offset %llu)\n",
			(unsigned long long)info->data_size,
			(unsigned long long)info->data_offset);
	printf("consistent:  %s\n", !claimed ?
			"no (unclaimed: it holds no mirror's data yet)" :
			info->flags & PMREP_REPLICA_F_CONSISTENT ?
			"yes (left by a clean mirror shutdown)" :
			"no (a mirror is attached, or did not shut down cleanly)");
	bool has_id = false;
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		has_id |= info->replica_id[i] != 0;
	char rid[2 * PMREP_UUID_SIZE + 1];
	uuid_str(info->replica_id, rid);
	printf("replica id:  %s%s\n", rid, has_id ? "" :
			" (none yet: a version 1 header; its target draws one)");
	printf("owner:       %016llx%s\n", (unsigned long long)info->owner,
			info->owner ? " (primary id of the last committed attach)" : "");
	if (info->flags & PMREP_REPLICA_F_REMOVED)
		printf("removed:     yes (its primary removed it from the set; a promotion neither counts nor promotes it)\n");
	printf("header seq:  %llu\n", (unsigned long long)info->seq);
	printf("last persist seq: %llu\n",
			(unsigned long long)info->last_persist_seq);
	print_position(pos);
	if (mb == NULL)
		return;
	if (mb->set_size == 0)
		printf("membership:  not recorded\n");
	else
		printf("membership:  %u replicas, quorum %s%u (a promotion fences %u)\n",
				mb->set_size, mb->quorum ? "" : "all = ",
				mb->quorum ? mb->quorum : mb->set_size,
				mb->set_size - (mb->quorum ? mb->quorum : mb->set_size) + 1);
}

/* a replica header as one JSON object (no newline): the fields of
 * print_info; `name` the replica as given, `queried` asked of a target */
void
json_info(const char *name, bool queried, const struct pmrep_replica_info *info,
		const struct pmrep_replica_membership *mb,
		const struct pmrep_replica_position *pos)
{
	bool claimed = false, has_id = false;
	for (int i = 0; i < PMREP_UUID_SIZE; i++) {
		claimed |= info->uuid[i] != 0;
		has_id |= info->replica_id[i] != 0;
	}
	char u[2 * PMREP_UUID_SIZE + 1], rid[2 * PMREP_UUID_SIZE + 1];
	uuid_str(info->uuid, u);
	uuid_str(info->replica_id, rid);
	fputs("{\"replica\":", stdout);
	json_str(name);
	printf(",\"queried\":%s,\"valid\":true,\"uuid\":\"%s\",\"claimed\":%s,"
			"\"generation\":%llu,\"data_size\":%llu,\"data_offset\":%llu,"
			"\"consistent\":%s,\"flags\":%u,\"replica_id\":\"%s\","
			"\"has_replica_id\":%s,\"owner\":\"%016llx\",\"header_seq\":%llu,"
			"\"last_persist_seq\":%llu",
			queried ? "true" : "false", u, claimed ? "true" : "false",
			(unsigned long long)info->generation,
			(unsigned long long)info->data_size,
			(unsigned long long)info->data_offset,
			claimed && (info->flags & PMREP_REPLICA_F_CONSISTENT) ?
				"true" : "false",
			(unsigned)info->flags, rid, has_id ? "true" : "false",
			(unsigned long long)info->owner,
			(unsigned long long)info->seq,
			(unsigned long long)info->last_persist_seq);
	if (mb != NULL)
		printf(",\"set_size\":%u,\"set_quorum\":%u", mb->set_size,
				mb->quorum);
	if (pos != NULL) {
		putchar(',');
		json_position(pos);
	}
	putchar('}');
}

/* a file that is no valid replica (exit 1) as one JSON object */
static void
json_invalid(const char *name, int ret)
{
	fputs("{\"replica\":", stdout);
	json_str(name);
	printf(",\"queried\":false,\"valid\":false,\"code\":%d,\"error\":", ret);
	json_str(pmrep_err_to_str(ret));
	fputs(",\"message\":", stdout);
	json_str(pmrep_err_msg());
	fputs("}\n", stdout);
}

/* pmrep status ADDR:PORT --key-file F: the target's answer to a query */
static int
status_remote(const char *target, const char *key_file, int timeout, bool json)
{
	char addr[256];
	snprintf(addr, sizeof(addr), "%s", target);
	char *colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr || colon[1] == '\0')
		return usage_error("status: bad target '%s' (ADDR:PORT with --key-file)",
				target);
	*colon = '\0';
	/* ADDR:PORT/NAME: the replica NAME of an endpoint serving several */
	char *name = strchr(colon + 1, '/');
	if (name != NULL)
		*name++ = '\0';
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len = 0;
	int ret = pmrep_key_read_file_ex(key_file, key_flags, key, sizeof(key),
			&key_len, NULL);
	if (ret) {
		report("status", key_file, ret);
		return EX_ERR;
	}
	struct pmrep_replica_info info;
	struct pmrep_replica_membership mb;
	struct pmrep_replica_position pos;
	ret = pmrep_replica_query_position(addr, colon + 1, name, key, key_len,
			timeout, &pos, &info, &mb);
	memset(key, 0, sizeof(key));
	if (ret) {
		/* a target serves a valid replica only: every error is a
		 * failure (connection, authentication, timeout) */
		report("status", target, ret);
		return EX_ERR;
	}
	if (json) {
		json_info(target, true, &info, &mb, &pos);
		putchar('\n');
		return EX_OK;
	}
	char where[300];
	snprintf(where, sizeof(where), "%s (queried over the network, read-only)",
			target);
	print_info(where, &info, &mb, &pos);
	return EX_OK;
}

int
cmd_status(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "key-file", required_argument, NULL, 'k' },
		{ "insecure-key-file", no_argument, NULL, 'K' },
		{ "timeout", required_argument, NULL, 't' },
		{ "replica", required_argument, NULL, 'r' },
		{ "no-tls", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'J' },
		{ "control", required_argument, NULL, 'C' },
		{ "metrics", no_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *key_file = NULL, *control = NULL;
	unsigned long long timeout = 10000;
	bool have_timeout = false, json = false, metrics = false;
	int c;
	while ((c = getopt_long(argc, argv, "k:t:r:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'k': key_file = optarg; break;
		case 'K': key_flags |= PMREP_KEY_FILE_INSECURE_OK; break;
		case 'N': (void) pmrep_repl_set_tls_default(false); break;
		case 't':
			if (parse_count(optarg, INT_MAX, &timeout))
				return usage_error("status: bad --timeout '%s' (ms, >= 1)", optarg);
			have_timeout = true;
			break;
		case 'J': json = true; break;
		case 'C': control = optarg; break;
		case 'M': metrics = true; break;
		case 'r':
			return usage_error("status: --replica %s: not an option; ask a target with 'pmrep status ADDR:PORT --key-file FILE'",
					optarg);
		case 'v': verbose = true; break;
		case 'h': return cmd_help(help_status);
		default: return usage_error("status: %s", "unknown option");
		}
	}
	if (control != NULL && (argc != optind || key_file != NULL))
		return usage_error("status: %s", "--control SOCKET takes no REPLICA_FILE, ADDR:PORT or --key-file");
	if (metrics && (control == NULL || json))
		return usage_error("status: %s", "--metrics goes with --control SOCKET, without --json");
	if (control != NULL && metrics)
		return target_ctl_metrics(control, stdout) ? EX_ERR : EX_OK;
	if (control != NULL)
		return target_ctl_request(control, json ? "status" : "status text",
				stdout) ? EX_ERR : EX_OK;
	if (argc - optind > 1)
		return usage_error("status: unexpected argument '%s' (expected one REPLICA_FILE, or ADDR:PORT with --key-file)",
				argv[optind + 1]);
	if (argc - optind != 1)
		return usage_error("status: %s", "expected REPLICA_FILE, or ADDR:PORT with --key-file");
	const char *path = argv[optind];
	if (have_timeout && key_file == NULL)
		return usage_error("status: %s", "--timeout only with ADDR:PORT --key-file (a network query)");
	log_setup();
	if (key_file != NULL)
		return status_remote(path, key_file, (int)timeout, json);
	struct pmrep_replica_info info;
	int ret = pmrep_replica_read_info(path, &info);
	if ((ret == PMREP_E_MALFORMED || ret == PMREP_E_RANGE) && json) {
		json_invalid(path, ret);
		return EX_NO;
	}
	if (ret == PMREP_E_MALFORMED || ret == PMREP_E_RANGE) {
		printf("%s: not a valid replica: %s (%s)\n", path,
				pmrep_err_to_str(ret), pmrep_err_msg());
		return EX_NO;
	}
	if (ret == PMREP_E_PROVIDER && pmrep_err_errno() == ENOENT &&
			strchr(path, ':') != NULL) {
		/* one line still, with the way to ask a target */
		fprintf(stderr, "pmrep status: %s: %s (to ask a target at ADDR:PORT, add --key-file FILE)\n",
				strerror(ENOENT), path);
		return EX_ERR;
	}
	struct pmrep_replica_membership mb = { 0 };
	struct pmrep_replica_position pos;
	if (ret == 0)
		ret = pmrep_replica_read_membership(path, &mb);
	if (ret == 0)
		ret = pmrep_replica_read_position(path, &pos);
	if (ret) {
		report("status", path, ret);
		return EX_ERR;
	}
	if (json) {
		json_info(path, false, &info, &mb, &pos);
		putchar('\n');
		return EX_OK;
	}
	print_info(path, &info, &mb, &pos);
	return EX_OK;
}

/* pmrep watch SOCKET: a target's events, one JSON line each */
int
cmd_watch(int argc, char *argv[])
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
		return cmd_help(help_watch);
	if (argc != 2 || argv[1][0] == '-')
		return usage_error("watch: %s", "expected SOCKET (pmrep-target --control SOCKET)");
	signal(SIGPIPE, SIG_IGN);
	return target_ctl_watch(argv[1], stdout) ? EX_ERR : EX_OK;
}
