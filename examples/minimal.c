/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * minimal -- the smallest complete pmrep mirror: map a 1 MiB pmem file,
 * mirror it to one replica target, persist a few records, print the
 * replica's status, clean up. Every return is checked.
 *
 *   pmrep-target --path REPLICA --size 1M --create --port 7204 --key-file KEY &
 *   minimal LOG 127.0.0.1 7204 KEY
 *   pmrep verify LOG REPLICA          (after stopping the target: IDENTICAL)
 *
 * The replica set's UUID and the generation are fixed here; a real
 * application makes a random UUID once and keeps both durably in its own
 * file (examples/log-mirror keeps them in its header).
 * Exit: 0 every record durable locally and on the replica, 1 failure.
 */
#include <stdio.h>
#include <string.h>

#include <pmrep.h>

#define SIZE (1u << 20)
#define RECORD 64

/*
 * the replica set's UUID, fixed here for the example. A real application
 * draws it once (random) and keeps it with its data: a (UUID, generation)
 * pair names ONE history of the data -- a new or re-created log needs a
 * new UUID (or generation + 1), or replicas another log left consistent
 * could be taken for its own.
 */
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0x6d, 0x69, 0x6e, 0x69, 0x6d,
	0x61, 0x6c, 0x2d, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x01 };

static int
fail(const char *what, int ret)
{
	fprintf(stderr, "minimal: %s: %s (%s)\n", what, pmrep_err_to_str(ret),
			pmrep_err_msg());
	return 1;
}

int
main(int argc, char *argv[])
{
	if (argc != 5) {
		fprintf(stderr, "usage: minimal LOG_FILE ADDR PORT KEY_FILE\n");
		return 2;
	}
	struct pmrep_pmem *log = NULL;
	struct pmrep_mirror_cfg *cfg = NULL;
	struct pmrep_mirror *m = NULL;
	uint8_t key[PMREP_KEY_MAX];
	size_t key_len = 0;
	int ret, rc = 1;

	if ((ret = pmrep_pmem_open(argv[1], PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &log)))
		return fail(argv[1], ret);
	if ((ret = pmrep_key_read_file(argv[4], key, sizeof(key), &key_len))) {
		fail(argv[4], ret);
		goto out;
	}
	if ((ret = pmrep_mirror_cfg_new(&cfg)) ||
			(ret = pmrep_mirror_cfg_add_replica(cfg, argv[2], argv[3])) ||
			(ret = pmrep_mirror_cfg_set_key(cfg, key, key_len)) ||
			(ret = pmrep_mirror_cfg_set_uuid(cfg, uuid)) ||
			(ret = pmrep_mirror_cfg_set_generation(cfg, 1))) {
		fail("mirror configuration", ret);
		goto out;
	}
	memset(key, 0, sizeof(key));
	/* connects, authenticates, resyncs whatever the replica lacks */
	if ((ret = pmrep_mirror_new(log, cfg, &m))) {
		fail("pmrep_mirror_new", ret);
		goto out;
	}
	char *base = pmrep_pmem_get_address(log);
	for (int i = 0; i < 4; i++) {
		size_t off = (size_t)i * RECORD;
		memset(base + off, 0, RECORD);
		snprintf(base + off, RECORD, "record %d", i);
		/* 0: durable locally and on the replica (1000 ms at most) */
		if ((ret = pmrep_mirror_persist(m, off, RECORD, 1000))) {
			fail("pmrep_mirror_persist", ret);
			goto out;
		}
		printf("record %d durable at offset %zu\n", i, off);
	}
	struct pmrep_replica_status st;
	if ((ret = pmrep_mirror_get_replica_status(m, 0, &st))) {
		fail("pmrep_mirror_get_replica_status", ret);
		goto out;
	}
	printf("replica 0: %s, method %s, %llu bytes behind\n",
			pmrep_replica_state_str(st.state),
			pmrep_mirror_method_str(st.method),
			(unsigned long long)st.lag_bytes);
	rc = 0;
out:
	memset(key, 0, sizeof(key));
	/* delete marks an in-sync replica consistent */
	if (m != NULL && (ret = pmrep_mirror_delete(&m)))
		rc = fail("pmrep_mirror_delete", ret);
	if (cfg != NULL && (ret = pmrep_mirror_cfg_delete(&cfg)))
		rc = fail("pmrep_mirror_cfg_delete", ret);
	if ((ret = pmrep_pmem_close(&log)))
		rc = fail("pmrep_pmem_close", ret);
	return rc;
}
