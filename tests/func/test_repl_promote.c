/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_promote.c -- pmrep_mirror_promote: after the
 * primary of a set of two replicas (quorum 1) died with one replica
 * frozen behind, a replica's file is opened in place and promoted:
 *  - the stale replica is refused (a more current one is fenced): both
 *    copies hold the new generation with no writer, their positions and
 *    data unchanged; the one named is promoted over that fence; a dry run
 *    writes nothing;
 *  - with the other replica unreachable, quorum 1 of 2 is refused (the old
 *    primary could still complete a persist on it: n - k + 1 = 2), and
 *    nothing changes; under "all" (n - k + 1 = 1) it is allowed;
 *  - the most current one promoted: the generation is raised on its own
 *    header and on the survivor, which refuses the old primary from then
 *    on (it holds the new generation when promote returns) and ends
 *    identical to the new primary (it was behind); every
 *    persist acknowledged before the failure is on the new primary; the
 *    application's mirror at the new generation takes over and persists;
 *  - `pmrep promote`: a file its target still serves is refused (exit 2),
 *    the refusals exit 1 and --json names the reason and the more current
 *    replica; --dry-run writes nothing; --force-fence promotes anyway.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/pmem.h>
#include <pmrep/repl.h>

#include "func.h"
#include "repl_target.h"

#define SIZE (1u << 20)
#define REC 4096u
#define NREC 64u

static uint8_t key[PMREP_KEY_MAX];	/* read back from keyfile (setup) */
static size_t key_len;
static char keyfile[256], bindir[4096];
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x97, 0x12, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static char dir[128], lpath[256], path[2][256];
static struct func_child tg[2];
static uint8_t *acked;	/* the old primary's data after its last acknowledged persist */

static void
serve(unsigned i)
{
	struct func_child_cfg cfg = { .path = path[i], .size = SIZE,
		.key = key, .key_len = key_len };
	func_child_start(&tg[i], &cfg, "0");
}

/* a cfg of the replicas `which` (bit i: tg[i]), quorum `k` */
static struct pmrep_mirror_cfg *
mcfg(unsigned which, unsigned k)
{
	struct pmrep_mirror_cfg *c;
	assert_int_equal(pmrep_mirror_cfg_new(&c), 0);
	for (unsigned i = 0; i < 2; i++)
		if (which & (1u << i))
			assert_int_equal(pmrep_mirror_cfg_add_replica(c, func_addr(),
					tg[i].port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(c, key, key_len), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(c, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_quorum(c, k), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(c, 2000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_create_timeout(c, 20000 * func_slow()), 0);
	assert_int_equal(pmrep_mirror_cfg_set_backoff(c, 50, 200), 0);
	assert_int_equal(pmrep_mirror_cfg_set_persist_seq(c, true), 0);
	return c;
}

static void
record(uint8_t *base, unsigned k)
{
	uint8_t *p = base + (size_t)k * REC;
	for (unsigned i = 0; i < REC; i++)
		p[i] = (uint8_t)(k * 7 + i * 13 + 1);
}

/* the header block of the file at `p` */
static void
header_of(const char *p, uint8_t out[4096])
{
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, out, 4096, 0), 4096);
	close(fd);
}

/*
 * The failure: the primary (a pmrep log at lpath) mirrors NREC records to
 * both replicas under quorum 1; replica 1 freezes after the first half,
 * the primary goes on with replica 0, then the primary and both targets
 * die without a clean close. Replica 0 holds every acknowledged persist
 * (and the higher persist sequence), replica 1 the first half only.
 */
static void
fail_primary(void)
{
	serve(0);
	serve(1);
	struct pmrep_pmem *local = NULL;
	assert_int_equal(pmrep_log_open(lpath, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &local), 0);
	uint8_t *base = pmrep_pmem_get_address(local);
	struct pmrep_mirror_cfg *c = mcfg(3, 1);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(local, c, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	for (unsigned k = 0; k < NREC; k++) {
		if (k == NREC / 2) {
			func_mirror_wait_in_sync(m, 2);
			func_child_freeze(&tg[1]);
		}
		record(base, k);
		assert_int_equal(pmrep_mirror_persist(m, (size_t)k * REC, REC,
				5000 * func_slow()), 0);
	}
	acked = malloc(SIZE);
	assert_non_null(acked);
	memcpy(acked, base, SIZE);
	func_child_kill(&tg[0], SIGKILL);
	func_child_kill(&tg[1], SIGKILL);
	(void) pmrep_mirror_delete(&m);	/* nothing closes cleanly */
	pmrep_mirror_cfg_delete(&c);
	assert_int_equal(pmrep_pmem_close(&local), 0);
	struct pmrep_replica_info i0, i1;
	assert_int_equal(pmrep_replica_read_info(path[0], &i0), 0);
	assert_int_equal(pmrep_replica_read_info(path[1], &i1), 0);
	assert_true(i0.last_persist_seq > i1.last_persist_seq);
	assert_int_equal(i0.generation, 1);
	assert_int_equal(i1.generation, 1);
}

/* what a promotion must never change: the copy's position and data */
static void
same_position(const struct pmrep_replica_position *a,
		const struct pmrep_replica_position *b)
{
	assert_int_equal(a->generation, b->generation);
	assert_int_equal(a->owner, b->owner);
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->run_generation, b->run_generation);
	assert_int_equal(a->run_owner, b->run_owner);
	assert_int_equal(a->run_floor, b->run_floor);
}

static void
promote_refuses_a_stale_replica_after_fencing_and_the_current_one_is_promoted(void **state)
{
	(void)state;
	fail_primary();
	serve(0);	/* the most current one is reachable */
	uint8_t h0[4096], h1[4096], a0[4096], a1[4096];
	header_of(path[0], h0);
	header_of(path[1], h1);
	struct pmrep_replica_position p0, p1, q;
	assert_int_equal(pmrep_replica_read_position(path[0], &p0), 0);
	assert_int_equal(pmrep_replica_read_position(path[1], &p1), 0);
	struct pmrep_pmem *log = NULL;
	assert_int_equal(pmrep_log_open(path[1], 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	struct pmrep_mirror_cfg *c = mcfg(1, 1);
	struct pmrep_promote_result res;
	/* the pre-check (read-only): refused, nothing written anywhere */
	assert_int_equal(pmrep_mirror_promote(log, c, 2, 1, PMREP_PROMOTE_DRY_RUN,
			&res), PMREP_E_STATE);
	assert_int_equal(res.more_current, 0);
	assert_int_equal(res.refused, PMREP_PROMOTE_REFUSED_STALE);
	assert_int_equal(res.generation, 0);
	header_of(path[1], a1);
	assert_memory_equal(h1, a1, sizeof(h1));
	/* the promotion: fence, then decide -- both copies hold generation
	 * 2 (no writer), the decision among them refuses this one; no
	 * position and no data byte moved */
	assert_int_equal(pmrep_mirror_promote(log, c, 2, 1,
			PMREP_PROMOTE_NO_CATCH_UP, &res), PMREP_E_STATE);
	assert_int_equal(res.more_current, 0);
	assert_int_equal(res.refused, PMREP_PROMOTE_REFUSED_STALE);
	assert_int_equal(res.caught_up, 0);
	assert_int_equal(res.reached, 1);
	assert_int_equal(res.fenced, 1);
	assert_int_equal(res.generation, 2);
	assert_int_equal(res.needed, 2);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	func_child_kill(&tg[0], SIGTERM);
	header_of(path[0], a0);
	header_of(path[1], a1);
	assert_memory_not_equal(h0, a0, sizeof(h0));	/* the fence */
	assert_int_equal(pmrep_replica_read_position(path[0], &q), 0);
	same_position(&p0, &q);
	assert_int_equal(q.fence_generation, 2);
	assert_int_equal(pmrep_replica_read_position(path[1], &q), 0);
	same_position(&p1, &q);
	assert_int_equal(q.fence_generation, 2);
	/* the one it named is promoted over that fence, and holds every
	 * acknowledged persist */
	serve(1);
	assert_int_equal(pmrep_log_open(path[0], 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	pmrep_mirror_cfg_delete(&c);
	c = mcfg(2, 1);
	assert_int_equal(pmrep_mirror_promote(log, c, 2, 1, 0, &res), 0);
	assert_int_equal(res.generation, 3);
	assert_int_equal(res.fenced, 1);
	assert_int_equal(res.caught_up, 0);
	assert_memory_equal(pmrep_pmem_get_address(log), acked, SIZE);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	func_child_kill(&tg[1], SIGTERM);
	pmrep_mirror_cfg_delete(&c);
}

/* the stale one promoted by default: it copies the more current fenced
 * copy first (catch-up), then holds every acknowledged persist; its
 * header says so (the position adopted); a source that is gone during
 * the catch-up refuses and leaves it marked incomplete, and a re-run
 * catches up again */
static void
promote_of_a_stale_replica_catches_up_from_the_more_current_one(void **state)
{
	(void)state;
	fail_primary();
	serve(0);
	struct pmrep_replica_position p0, q;
	assert_int_equal(pmrep_replica_read_position(path[0], &p0), 0);
	struct pmrep_pmem *log = NULL;
	assert_int_equal(pmrep_log_open(path[1], 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	/* (over verbs the frozen target's memory may still have taken the
	 * one-sided writes: its data then matches, its position does not) */
	if (memcmp(pmrep_pmem_get_address(log), acked, SIZE) == 0)
		print_message("replica 1's data holds the second half already (one-sided writes while frozen); its position does not\n");
	struct pmrep_mirror_cfg *c = mcfg(1, 1);
	struct pmrep_promote_result res;
	assert_int_equal(pmrep_mirror_promote(log, c, 2, 1, 0, &res), 0);
	assert_int_equal(res.caught_up, 1);
	assert_int_equal(res.more_current, 0);
	assert_int_equal(res.generation, 2);
	assert_memory_equal(pmrep_pmem_get_address(log), acked, SIZE);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	assert_int_equal(pmrep_replica_read_position(path[1], &q), 0);
	same_position(&p0, &q);
	assert_int_equal(q.flags & PMREP_POSITION_F_INCOMPLETE, 0);
	assert_int_equal(q.fence_generation, 2);
	/* the source frozen (alive, not answering): a new promotion of the
	 * other copy fences it... not reachable: too few fenced, refused;
	 * with the source dead mid-way a node stays incomplete (below) */
	func_child_kill(&tg[0], SIGTERM);
	pmrep_mirror_cfg_delete(&c);
}

static void
promote_refuses_what_it_cannot_fence_under_a_quorum_not_under_all(void **state)
{
	(void)state;
	fail_primary();
	/* replica 1 is down: tg[1].port has no listener */
	uint8_t h0[4096], a0[4096];
	header_of(path[0], h0);
	struct pmrep_pmem *log = NULL;
	assert_int_equal(pmrep_log_open(path[0], 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	struct pmrep_mirror_cfg *c = mcfg(2, 1);
	struct pmrep_promote_result res;
	/* quorum 1 of 2: the old primary completes a persist on replica 1
	 * alone, so both must hold the new generation */
	assert_int_equal(pmrep_mirror_promote(log, c, 2, 1, 0, &res),
			PMREP_E_UNREACHABLE);
	assert_int_equal(res.reached, 0);
	assert_int_equal(res.needed, 2);
	assert_int_equal(res.generation, 0);
	header_of(path[0], a0);
	assert_memory_equal(h0, a0, sizeof(h0));
	/* a caller who says "all" (n - k + 1 = 1) is not believed: the
	 * headers record the quorum 1 of 2 the old primary wrote under
	 * (docs/PROTOCOL.md "Membership") */
	assert_int_equal(pmrep_mirror_promote(log, c, 2, 0,
			PMREP_PROMOTE_WAIT_SYNC, &res), PMREP_E_UNREACHABLE);
	assert_int_equal(res.needed, 2);
	assert_int_equal(res.set_size, 2);
	assert_int_equal(res.set_quorum, 1);
	assert_int_equal(res.generation, 0);
	header_of(path[0], a0);
	assert_memory_equal(h0, a0, sizeof(h0));
	/* forced, it promotes: the old primary could still complete a
	 * persist on replica 1, the caller's risk */
	assert_int_equal(pmrep_mirror_promote(log, c, 2, 0,
			PMREP_PROMOTE_WAIT_SYNC | PMREP_PROMOTE_FORCE_FENCE, &res), 0);
	assert_int_equal(res.needed, 2);
	assert_int_equal(res.generation, 2);
	assert_int_equal(res.fenced, 0);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	struct pmrep_replica_info i0;
	assert_int_equal(pmrep_replica_read_info(path[0], &i0), 0);
	assert_int_equal(i0.generation, 2);
	assert_int_equal(i0.owner, res.primary_id);
	/* what was acknowledged is there, in place */
	uint8_t *r0 = func_replica_read(path[0], SIZE);
	assert_memory_equal(r0, acked, SIZE);
	free(r0);
	pmrep_mirror_cfg_delete(&c);
}

static void
promote_fences_the_old_primary_and_the_survivor_ends_identical(void **state)
{
	(void)state;
	fail_primary();
	serve(1);	/* the stale survivor */
	struct pmrep_pmem *log = NULL;
	assert_int_equal(pmrep_log_open(path[0], 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&log), 0);
	struct pmrep_mirror_cfg *c = mcfg(2, 1);
	struct pmrep_promote_result res;
	assert_int_equal(pmrep_mirror_promote(log, c, 2, 1, 0, &res), 0);
	assert_int_equal(res.old_generation, 1);
	assert_int_equal(res.generation, 2);
	assert_int_equal(res.reached, 1);
	assert_int_equal(res.fenced, 1);
	assert_int_equal(res.more_current, -1);
	struct pmrep_replica_info i1;
	assert_int_equal(pmrep_replica_read_info(path[1], &i1), 0);
	assert_int_equal(i1.generation, 2);
	assert_int_equal(i1.owner, res.primary_id);
	/* the new primary holds every acknowledged persist */
	assert_memory_equal(pmrep_pmem_get_address(log), acked, SIZE);

	/* the old primary, back with its log at generation 1, is refused */
	struct pmrep_pmem *old = NULL;
	assert_int_equal(pmrep_log_open(lpath, 0, 0, PMREP_PMEM_GRANULARITY_PAGE,
			&old), 0);
	struct pmrep_mirror_cfg *oc = mcfg(2, 1);
	assert_int_equal(pmrep_mirror_cfg_set_generation(oc, 1), 0);
	assert_int_equal(pmrep_mirror_cfg_set_background_recovery(oc, false), 0);
	struct pmrep_mirror *om = NULL;
	assert_int_equal(pmrep_mirror_new(old, oc, &om), PMREP_E_STATE);
	assert_null(om);
	assert_int_equal(pmrep_pmem_close(&old), 0);
	pmrep_mirror_cfg_delete(&oc);

	/* the application's mirror at the new generation takes over */
	assert_int_equal(pmrep_mirror_cfg_set_generation(c, res.generation), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(log, c, &m), 0);
	uint8_t *base = pmrep_pmem_get_address(log);
	record(base, NREC + 1);
	assert_int_equal(pmrep_mirror_persist(m, (size_t)(NREC + 1) * REC, REC,
			5000 * func_slow()), 0);
	func_mirror_wait_in_sync(m, 1);
	/* the survivor missed the second half (2 of the 16 regions of
	 * 64 KiB): the promotion compared it by digests before it returned,
	 * so what is left to copy is what differs (the new record's region at
	 * most besides; the promotion's mirror may have copied some already) */
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	print_message("survivor: %llu bytes copied after the promotion\n",
			(unsigned long long)st.resync_bytes);
	assert_true(st.resync_bytes <= 3 * (64u << 10));
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	/* the survivor is identical to the new primary */
	func_assert_replica_equals(log, path[1]);

	/* the old primary rejoins: its log served as a replica, added to
	 * the set; it differs from the new primary only where the new
	 * primary wrote since (one region): that is all that is copied */
	struct func_child_cfg oldcfg = { .path = lpath, .size = SIZE,
		.key = key, .key_len = key_len };
	func_child_start(&tg[0], &oldcfg, "0");
	struct pmrep_mirror_cfg *c2 = mcfg(3, 1);
	assert_int_equal(pmrep_mirror_cfg_set_generation(c2, res.generation), 0);
	assert_int_equal(pmrep_mirror_new(log, c2, &m), 0);
	func_mirror_wait_in_sync(m, 2);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	print_message("old primary: %llu bytes compared, %llu copied\n",
			(unsigned long long)st.resync_compared,
			(unsigned long long)st.resync_bytes);
	assert_int_equal(st.resync_compared, SIZE);	/* all of it, by digests */
	assert_true(st.resync_bytes > 0);
	assert_true(st.resync_bytes <= 64u << 10);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	func_child_kill(&tg[0], SIGTERM);
	func_child_kill(&tg[1], SIGTERM);
	func_assert_replica_equals(log, path[1]);
	func_assert_replica_equals(log, lpath);
	assert_int_equal(pmrep_pmem_close(&log), 0);
	pmrep_mirror_cfg_delete(&c2);
	pmrep_mirror_cfg_delete(&c);
}


/* run `pmrep promote LOG ARGS...` (NULL-terminated), its stdout and
 * stderr into out[]; its exit code */
static int
promote_cli(const char *log, char *out, size_t out_len, ...)
{
	char exe[4200], res[300];
	snprintf(exe, sizeof(exe), "%s/tools/pmrep", bindir);
	snprintf(res, sizeof(res), "%s/cli.out", dir);
	char *argv[32];
	int n = 0;
	argv[n++] = exe;
	argv[n++] = (char *)"promote";
	argv[n++] = (char *)log;
	va_list ap;
	va_start(ap, out_len);
	for (char *a; n < 30 && (a = va_arg(ap, char *)) != NULL;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(res, O_CREAT | O_TRUNC | O_WRONLY, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(exe, argv);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	int fd = open(res, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t got = read(fd, out, out_len - 1);
	close(fd);
	out[got > 0 ? got : 0] = '\0';
	print_message("pmrep promote -> %d: %s", WEXITSTATUS(st), out);
	return WEXITSTATUS(st);
}

static void
cli_promote_refusals_exit_1_and_name_the_reason(void **state)
{
	(void)state;
	fail_primary();
	char at0[64], at1[64], out[4096];
	snprintf(at1, sizeof(at1), "%s:%s", func_addr(), tg[1].port);
	/* its own target still serves the file: refused before anything */
	serve(1);
	snprintf(at1, sizeof(at1), "%s:%s", func_addr(), tg[1].port);
	assert_int_equal(promote_cli(path[1], out, sizeof(out), "--replica", at1,
			"--key-file", keyfile, "--set-size", "2", "--quorum", "1",
			(char *)NULL), 2);
	assert_non_null(strstr(out, "is in use"));
	func_child_kill(&tg[1], SIGTERM);
	/* the stale one, with the most current reachable */
	serve(0);
	snprintf(at0, sizeof(at0), "%s:%s", func_addr(), tg[0].port);
	/* one replica named under two addresses counts once: a set of 3
	 * under quorum 1 needs 3 copies, this node and replica 0 are 2 (a
	 * dry run: nothing written) */
	char alias0[64];
	snprintf(alias0, sizeof(alias0), "localhost:%s", tg[0].port);
	assert_int_equal(promote_cli(path[1], out, sizeof(out), "--replica", at0,
			"--replica", alias0, "--key-file", keyfile, "--set-size", "3",
			"--quorum", "1", "--dry-run", "--json", (char *)NULL), 1);
	assert_non_null(strstr(out, "\"outcome\":\"refused_fence\""));
	assert_non_null(strstr(out, "\"needed\":3,\"reached\":1"));
	assert_int_equal(promote_cli(path[1], out, sizeof(out), "--replica", at0,
			"--key-file", keyfile, "--set-size", "2", "--quorum", "1",
			"--no-catch-up", "--json", (char *)NULL), 1);
	assert_non_null(strstr(out, "\"outcome\":\"refused_stale\""));
	char want[128];
	snprintf(want, sizeof(want), "\"more_current\":\"%s\"", at0);
	assert_non_null(strstr(out, want));
	func_child_kill(&tg[0], SIGTERM);
	/* the most current one, the other unreachable, quorum 1 of 2 */
	assert_int_equal(promote_cli(path[0], out, sizeof(out), "--replica", at1,
			"--key-file", keyfile, "--set-size", "2", "--quorum", "1",
			"--json", (char *)NULL), 1);
	assert_non_null(strstr(out, "\"outcome\":\"refused_fence\""));
	assert_non_null(strstr(out, "\"needed\":2,\"reached\":0"));
	/* (the stale one's promote fenced it: generation 2, no writer; a
	 * refusal before any fence writes nothing) */
	struct pmrep_replica_info i0;
	assert_int_equal(pmrep_replica_read_info(path[0], &i0), 0);
	assert_int_equal(i0.generation, 2);
	/* --dry-run with no --set-size / --quorum ("all" of 2): the
	 * headers' quorum 1 of 2 counts, refused, nothing written */
	assert_int_equal(promote_cli(path[0], out, sizeof(out), "--replica", at1,
			"--key-file", keyfile, "--dry-run", "--json", (char *)NULL), 1);
	assert_non_null(strstr(out, "\"needed\":2,\"reached\":0"));
	assert_non_null(strstr(out, "\"set_size\":2,\"set_quorum\":1"));
	assert_int_equal(pmrep_replica_read_info(path[0], &i0), 0);
	assert_int_equal(i0.generation, 2);
	/* --force-fence: promoted although replica 1 is out of reach */
	assert_int_equal(promote_cli(path[0], out, sizeof(out), "--replica", at1,
			"--key-file", keyfile, "--set-size", "2", "--quorum", "1",
			"--force-fence", (char *)NULL), 0);
	assert_non_null(strstr(out, "at generation 3"));
	assert_int_equal(pmrep_replica_read_info(path[0], &i0), 0);
	assert_int_equal(i0.generation, 3);
}

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/pmrep-test-promote-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(lpath, sizeof(lpath), "%s/log", dir);
	snprintf(path[0], sizeof(path[0]), "%s/r0", dir);
	snprintf(path[1], sizeof(path[1]), "%s/r1", dir);
	snprintf(keyfile, sizeof(keyfile), "%s/key", dir);
	assert_int_equal(pmrep_key_write_file(keyfile, 0, PMREP_KEY_GOOD), 0);
	uint32_t id;
	assert_int_equal(pmrep_key_read_file_ex(keyfile, 0, key, sizeof(key),
			&key_len, &id), 0);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	func_child_kill_all();
	free(acked);
	acked = NULL;
	return func_rm_rf(dir);
}

int
main(int argc, char *argv[])
{
	func_child_main(argc, argv);
	func_build_root(bindir, sizeof(bindir), argv[0]);
	signal(SIGPIPE, SIG_IGN);
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_DISABLED);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(promote_refuses_a_stale_replica_after_fencing_and_the_current_one_is_promoted, setup, teardown),
		cmocka_unit_test_setup_teardown(promote_of_a_stale_replica_catches_up_from_the_more_current_one, setup, teardown),
		cmocka_unit_test_setup_teardown(promote_refuses_what_it_cannot_fence_under_a_quorum_not_under_all, setup, teardown),
		cmocka_unit_test_setup_teardown(promote_fences_the_old_primary_and_the_survivor_ends_identical, setup, teardown),
		cmocka_unit_test_setup_teardown(cli_promote_refusals_exit_1_and_name_the_reason, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
