/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_repl_target.c -- the replica target's persists, in one process
 * over the tcp provider, with pmrep's persist seam
 * (pmrep_test_hooks.pmem_persist) failing the target's persists on
 * demand:
 *  - a failed GPSPM persist is answered INTERNAL, so the mirror's persist
 *    fails (never reported durable), and the target is poisoned: the
 *    mirror's reconnect is refused at COMMIT, and the replica's header is
 *    left as it was (no claim written after the failure);
 *  - a failed header write at COMMIT fails the attach and poisons the
 *    target the same way.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/testhook.h"
#include <pmrep/repl.h>

#define SIZE (256u << 10)

static const uint8_t key[32] = "target-key-0123456789-abcdefghij";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x7a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

struct ctx {
	char dir[64];
	char rpath[128];
	struct pmrep_pmem *src;
	struct pmrep_target *t;
	pthread_t th;
	atomic_bool stop;
	char port[8];
};

/* fail every persist of the replica's mapping, from now on (the mirror's
 * own mappings -- its source and its state file -- persist as usual) */
static atomic_bool fail_target;
static char replica_path[128];
static atomic_int target_persists, target_failures;

static int
persist_hook(struct pmrep_pmem *pmem, const void *ptr, size_t len)
{
	(void)ptr;
	(void)len;
	if (strcmp(pmrep_pmem_get_path(pmem), replica_path) != 0)
		return 0;
	atomic_fetch_add(&target_persists, 1);
	if (!atomic_load(&fail_target))
		return 0;
	atomic_fetch_add(&target_failures, 1);
	return PMREP_E_PROVIDER;
}

static void *
loop(void *arg)
{
	struct ctx *c = arg;
	while (!atomic_load(&c->stop))
		(void) pmrep_target_process(c->t, 20);
	return NULL;
}

static int
setup(void **state)
{
	setenv("PMREP_PROVIDER", "tcp", 1);
	struct ctx *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	snprintf(c->dir, sizeof(c->dir), "/dev/shm/pmrep-test-target-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/source", c->dir);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &c->src), 0);
	memset(pmrep_pmem_get_address(c->src), 0x3c, SIZE);
	atomic_store(&fail_target, false);
	atomic_store(&target_persists, 0);
	atomic_store(&target_failures, 0);
	pmrep_test_hooks.pmem_persist = persist_hook;

	snprintf(c->rpath, sizeof(c->rpath), "%s/replica", c->dir);
	snprintf(replica_path, sizeof(replica_path), "%s", c->rpath);
	struct pmrep_target_cfg *cfg;
	assert_int_equal(pmrep_target_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_target_cfg_set_path(cfg, c->rpath), 0);
	assert_int_equal(pmrep_target_cfg_set_data_size(cfg, SIZE, true), 0);
	assert_int_equal(pmrep_target_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_target_cfg_set_staging(cfg, true), 0);
	assert_int_equal(pmrep_target_cfg_set_timeout(cfg, 2000), 0);
	assert_int_equal(pmrep_target_new(cfg, &c->t), 0);
	assert_int_equal(pmrep_target_cfg_delete(&cfg), 0);
	uint16_t port;
	assert_int_equal(pmrep_target_get_port(c->t, &port), 0);
	snprintf(c->port, sizeof(c->port), "%u", port);
	atomic_store(&c->stop, false);
	assert_int_equal(pthread_create(&c->th, NULL, loop, c), 0);
	*state = c;
	return 0;
}

static int
teardown(void **state)
{
	struct ctx *c = *state;
	atomic_store(&c->stop, true);
	pthread_join(c->th, NULL);
	(void) pmrep_target_delete(&c->t);
	pmrep_test_hooks.pmem_persist = NULL;
	(void) pmrep_pmem_close(&c->src);
	char path[128];
	snprintf(path, sizeof(path), "%s/source", c->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/source.pmrep-state", c->dir);
	unlink(path);
	unlink(c->rpath);
	rmdir(c->dir);
	free(c);
	return 0;
}

static struct pmrep_mirror *
mirror(struct ctx *c, int expect)
{
	struct pmrep_mirror_cfg *cfg;
	assert_int_equal(pmrep_mirror_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", c->port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(cfg, key, sizeof(key)), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(cfg, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(cfg, 3000), 0);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(pmrep_mirror_new(c->src, cfg, &m), expect);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	return m;
}

static void
failed_gpspm_persist_fails_the_mirror_persist_and_poisons_the_target(void **state)
{
	struct ctx *c = *state;
	struct pmrep_mirror *m = mirror(c, 0);
	assert_non_null(m);
	assert_int_equal(pmrep_mirror_persist(m, 0, 4096, 3000), 0);
	struct pmrep_replica_info before;
	assert_int_equal(pmrep_replica_read_info(c->rpath, &before), 0);
	assert_false(before.flags & PMREP_REPLICA_F_CONSISTENT);

	atomic_store(&fail_target, true);
	memset(pmrep_pmem_get_address(c->src), 0x5d, 4096);
	/* the target's persist failed: the persist is not reported durable */
	assert_int_not_equal(pmrep_mirror_persist(m, 0, 4096, 3000), 0);
	assert_true(atomic_load(&target_failures) >= 1);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);

	/* persists succeed again -- but the target stays poisoned: the
	 * reconnect's COMMIT is refused, nothing is written */
	atomic_store(&fail_target, false);
	int before_persists = atomic_load(&target_persists);
	usleep(150 * 1000);	/* past the reconnect back-off */
	assert_int_not_equal(pmrep_mirror_reconnect(m, 3000), 0);
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_FAILED);
	assert_int_equal(atomic_load(&target_persists), before_persists);
	struct pmrep_replica_info after;
	assert_int_equal(pmrep_replica_read_info(c->rpath, &after), 0);
	assert_int_equal(after.seq, before.seq);
	assert_false(after.flags & PMREP_REPLICA_F_CONSISTENT);
	/* delete: no CLOSE reaches a poisoned target's header */
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(pmrep_replica_read_info(c->rpath, &after), 0);
	assert_int_equal(after.seq, before.seq);
	assert_false(after.flags & PMREP_REPLICA_F_CONSISTENT);
}

static void
failed_claim_write_fails_the_attach_and_poisons_the_target(void **state)
{
	struct ctx *c = *state;
	struct pmrep_replica_info before, after;
	assert_int_equal(pmrep_replica_read_info(c->rpath, &before), 0);
	atomic_store(&fail_target, true);
	struct pmrep_mirror *m = mirror(c, PMREP_E_PROVIDER);
	assert_null(m);
	assert_int_equal(atomic_load(&target_failures), 1);
	atomic_store(&fail_target, false);
	/* the claim's slot was stored, its persist failed: whether it is
	 * durable is unknown (the file's pages may hold it) */
	assert_int_equal(pmrep_replica_read_info(c->rpath, &after), 0);
	uint64_t mid_seq = after.seq;
	assert_true(mid_seq == before.seq || mid_seq == before.seq + 1);
	/* poisoned: the next attach is refused before any write */
	int n = atomic_load(&target_persists);
	m = mirror(c, PMREP_E_PROVIDER);
	assert_null(m);
	assert_int_equal(atomic_load(&target_persists), n);
	assert_int_equal(pmrep_replica_read_info(c->rpath, &after), 0);
	assert_int_equal(after.seq, mid_seq);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(failed_gpspm_persist_fails_the_mirror_persist_and_poisons_the_target, setup, teardown),
		cmocka_unit_test_setup_teardown(failed_claim_write_fails_the_attach_and_poisons_the_target, setup, teardown),
	};
	pmrep_log_set_threshold(getenv("TEST_LOG") ? PMREP_LOG_INFO : PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
