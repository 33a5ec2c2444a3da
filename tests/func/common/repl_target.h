/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * repl_target.h -- a replica target (pmrep_target) served by a child
 * process, for the replication tests that freeze it (SIGSTOP) or kill it
 * (SIGKILL) the way a stalled or dead host would be: the child is the test
 * binary itself, re-executed with --target, serving the target on the test
 * address (func_addr()) of the provider under test until it is signalled.
 *
 * Use:
 *  - main() calls func_child_main(argc, argv) first: in a child it never
 *    returns; in the test it notes the binary for func_child_start;
 *  - a test starts children with func_child_start, freezes / thaws them
 *    with func_child_freeze / func_child_thaw, ends them with
 *    func_child_kill;
 *  - the teardown calls func_child_kill_all(): a test that failed half
 *    way (cmocka leaves it by longjmp) leaves no child behind.
 *
 * A struct func_child may live on a test's stack: the teardown does not
 * need it (it kills what is still running by pid).
 *
 * And what a test checks at the end: the replica's data area, as the
 * target left it on this host.
 */
#ifndef PMREP_FUNC_REPL_TARGET_H
#define PMREP_FUNC_REPL_TARGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pmrep/pmem.h>

/* how a child's target is configured */
struct func_child_cfg {
	const char *path;	/* the replica file */
	uint64_t size;		/* data bytes; the file is created if needed */
	const uint8_t *key;	/* the authentication key */
	size_t key_len;		/* 1 .. 64 bytes */
	bool staging;		/* force the staging buffer */
	bool direct_write;	/* declare direct write to pmem */
};

/* a running child: its pid (0: none) and the port its target listens on */
struct func_child {
	atomic_int pid;
	char port[16];
};

/*
 * Call first in main(). With argv[1] "--target" this process is a child:
 * it serves the target until it is signalled and never returns (exit 2:
 * bad arguments, 1: the target did not start). Else it notes this binary
 * (/proc/self/exe) for func_child_start and returns.
 */
void func_child_main(int argc, char *argv[]);

/*
 * Start a child serving cfg's target on `port` ("0": any free port) and
 * return once it listens (c->port: its port). A child that ends before it
 * listens (a port not free again yet) is reaped and started again, up to
 * 50 times in about a second; then the test fails.
 */
void func_child_start(struct func_child *c, const struct func_child_cfg *cfg,
		const char *port);

/*
 * SIGSTOP the child and return only once every thread of it has stopped
 * (waitpid WUNTRACED): until then its tcp progress thread may still be
 * answering. A frozen verbs target still answers whatever the device
 * serves without the process (RDMA reads and writes, APM, native flush);
 * only what its process must do (GPSPM) waits.
 */
void func_child_freeze(struct func_child *c);

/* SIGCONT: a frozen child goes on */
void func_child_thaw(struct func_child *c);

/*
 * Send `sig` (SIGKILL, or SIGTERM, which is followed by SIGCONT so that a
 * frozen child gets it), reap the child and check that `sig` ended it; its
 * pid is 0 after. Nothing happens when c has no child running or the
 * teardown took it already. Safe from another thread than the test's.
 */
void func_child_kill(struct func_child *c, int sig);

/* teardown: SIGKILL and reap every child still running */
void func_child_kill_all(void);

/* ------------------------------------------------------ the replica */

/*
 * The first `size` bytes of the data area of the replica at `path` (a
 * file, read; a device DAX, mapped), in memory to free() -- read on this
 * host, whichever process served it.
 */
uint8_t *func_replica_read(const char *path, size_t size);

/* the data area of the replica at `path` equals local's whole mapping */
void func_assert_replica_equals(struct pmrep_pmem *local, const char *path);

/* replicas 0 .. n-1 of `m` IN_SYNC (BEHIND: polled until it is), or the
 * test fails after 20 s (scaled by func_slow) */
struct pmrep_mirror;
void func_mirror_wait_in_sync(struct pmrep_mirror *m, unsigned n);

#endif /* PMREP_FUNC_REPL_TARGET_H */
