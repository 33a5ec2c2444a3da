/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sim.h -- the deterministic fault-injection harness (tests/sim): one
 * simulated world in one process and one thread. pmrep's real mirror and
 * target code run over a simulated transport provider (sim_provider.c);
 * every operation on the wire becomes a packet in a per-direction queue,
 * and one scheduler driven by a seeded PRNG decides what is delivered next
 * (sim_world.c). Time is virtual: pmrep_test_hooks.now_ms reads the world's
 * clock and every wait of pmrep (pmrep_test_hooks.fd_wait and the
 * provider's CQ waits) runs the world instead of blocking. Persists are
 * observed (pmrep_test_hooks.pmem_persist, the provider's remote persists,
 * and the target's stores between calls) to keep a durable shadow of each
 * process's files, so that a process can be crashed at its k-th persistent
 * write and restarted from a crash image.
 */
#ifndef PMREP_TESTS_SIM_H
#define PMREP_TESTS_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/provider.h"

/* ------------------------------------------------------------- PRNG */

/* splitmix64: the only source of randomness of the harness */
struct sim_rng {
	uint64_t s;
};

static inline uint64_t
sim_rng_next(struct sim_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [0, n), n > 0 */
static inline uint64_t
sim_rng_below(struct sim_rng *r, uint64_t n)
{
	return sim_rng_next(r) % n;
}

/* ----------------------------------------------------------- faults */

enum sim_fault {
	SIM_F_NONE = 0,
	SIM_F_DROP,		/* lost: its direction stalls (RC) until the conn ends */
	SIM_F_CUT_AT,		/* the connection breaks instead of delivering it */
	SIM_F_CUT_AFTER,	/* delivered, then the connection breaks (no ack) */
	SIM_F_DUP,		/* a message (send) is delivered twice */
	SIM_F_DELAY,		/* held past the waiter's timeout */
	SIM_F_NPACKET,		/* kinds above apply to a packet */
	SIM_F_CRASH = SIM_F_NPACKET, /* a process crashes at a persist event */
};

const char *sim_fault_str(enum sim_fault f);

/* processes of the world: the writer (mirror + its files) and targets */
#define SIM_PROC_WRITER 0
#define SIM_MAX_PROCS 4	/* sim_failover.c: the writer and 3 targets */

/* one fault of a schedule: at the `at`-th packet delivery (packet kinds)
 * or the `at`-th persist event of process `proc` (crash) */
struct sim_fault_spec {
	enum sim_fault kind;
	unsigned proc;
	uint64_t at;
	uint64_t subset_seed;	/* crash: which differing units survive */
};

#define SIM_MAX_FAULTS 4

/* ------------------------------------------------------- the world */

/* what the provider delivered, for the checker (message types decoded) */
struct sim_delivery {
	unsigned from_proc, to_proc;
	int kind;			/* enum sim_pkt_kind */
	int msg_type;			/* a send: the repl message type, else 0 */
	uint64_t conn;			/* the receiving end's id */
	uint64_t src_conn;		/* the sending end's id */
	unsigned src_tag;		/* the sending end's tag (sim_set_conn_tag) */
	enum sim_fault fault;
};

struct sim_world_cfg {
	bool native_flush;		/* peers offer PMREP_CAP_NATIVE_FLUSH */
	int delay_ms;			/* SIM_F_DELAY holds a packet this long */
	bool verbose;
};

/* a process's hook into the world: called with no process context */
struct sim_proc_ops {
	/* one non-blocking turn (a target's pmrep_target_process(t, 0)) */
	void (*turn)(unsigned proc, void *arg);
	void *arg;
};

void sim_world_reset(const struct sim_world_cfg *cfg, uint64_t seed,
		const struct sim_fault_spec *faults, unsigned nfaults);
void sim_world_fini(void);
/* install the test hooks (clock, waits, peer_open) */
void sim_world_install_hooks(void);

long long sim_now(void);
void sim_advance(long long ms);
/* faults on / off (off: every packet delivered in order, no crash) */
void sim_faults_enable(bool on);

/* the process whose code runs now (peers made now belong to it) */
unsigned sim_current_proc(void);
unsigned sim_set_current_proc(unsigned proc);	/* returns the previous */
/* a process that runs turns in the world (targets); NULL ops: none */
void sim_proc_set(unsigned proc, const struct sim_proc_ops *ops);

/* one scheduling step: every process turn, then one delivery; true when
 * anything happened */
bool sim_step(void);
/* run the world until nothing happens and no delayed packet is due
 * within `ms` of virtual time, then let the clock pass `ms` */
void sim_run_idle(long long ms);

/* deliveries so far and what they were */
uint64_t sim_deliveries(void);
const struct sim_delivery *sim_delivery_log(size_t *n);
/* persist events of a process so far (crash points) */
uint64_t sim_persist_events(unsigned proc);

/* a crash of `proc` happened (by a crash fault): true once until cleared */
bool sim_proc_crashed(unsigned proc);
void sim_proc_clear_crash(unsigned proc);
/* cut every connection of `proc` and stop its packets (a crash) */
void sim_proc_cut(unsigned proc);

/* sim_failover.c: crash `proc` now (as at a persist event of it); a
 * call at the start of every wait outside a turn (NULL: none) */
void sim_proc_crash_now(unsigned proc, uint64_t subset_seed);
void sim_set_wait_hook(void (*fn)(void));
/* pmrep_sim --failover ...: the failover scenarios (sim_failover.c) */
int sim_failover_main(int argc, char **argv);

/* a wait that got stuck (no timeout, nothing could ever happen) */
bool sim_stuck(void);

/* --------------------------------------------------- durable shadow */

/*
 * A file of a process with its durable shadow. `live` is the harness's
 * own MAP_SHARED view of the file (NULL until mapped). The shadow holds
 * what a crash keeps for sure; a crash image is the shadow plus a random
 * subset of the 8-byte units in which live and shadow differ.
 */
struct sim_file {
	bool used;
	unsigned proc;
	char path[256];
	size_t size;
	uint8_t *shadow;
	uint8_t *live;			/* harness view (mmap), may be NULL */
	const void *pmem;		/* the process's mapping, once seen */
	uint8_t *pmem_base;
	bool data_events;		/* between-call diffs count as events */
};

/* register a process's file; its shadow is the file's content now */
struct sim_file *sim_file_add(unsigned proc, const char *path,
		bool data_events);
void sim_file_drop(struct sim_file *f);
/* re-read the file into the shadow and the view (after a restart) */
int sim_file_reload(struct sim_file *f);
/* copy [off, off + len) of the live file into the shadow */
void sim_file_persisted(struct sim_file *f, size_t off, size_t len);
/* an externally visible persist event of a file's process that the
 * harness knows of (the writer's completed local persist): a crash
 * point */
void sim_file_event(struct sim_file *f, size_t off, size_t len);
/* the image a crash of the file's process left (written into the file) */
int sim_file_write_crash_image(struct sim_file *f);
/* after a target turn: a changed file is a persist event */
void sim_proc_turn_done(unsigned proc);

/* the followed file of `proc` whose mapping holds ptr (NULL: none) */
struct sim_file *sim_file_of_addr(unsigned proc, const void *ptr);

/* the pmem persist hook (installed by sim_world_install_hooks) */
int sim_pmem_persist_hook(struct pmrep_pmem *pmem, const void *ptr, size_t len);

/* ------------------------------------------------- the sim provider */

extern const struct pmrep_provider_ops sim_provider_ops;
int sim_peer_open(const char *addr, bool is_local, struct pmrep_peer **peer);

/*
 * Landing writes: an RDMA write about to land (its bytes not stored yet)
 * in an MR of `proc` that maps a followed file (a replica's data area;
 * not a staging buffer), at byte `file_off` of file `f`, sent by end
 * `src_conn` whose tag is `src_tag`. The harness checks it (sim_main.c).
 */
typedef void (*sim_landing_fn)(unsigned proc, uint64_t src_conn,
		unsigned src_tag, struct sim_file *f, size_t file_off,
		const void *data, size_t len);
void sim_set_landing_hook(sim_landing_fn fn);
/* the tag of the connection ends made from now on (which writer's code
 * runs: the harness sets it around each mirror's calls); 0 by default */
void sim_set_conn_tag(unsigned tag);

/* provider internals the world drives (sim_provider.c) */
bool sim_prov_deliver_one(struct sim_rng *rng, bool faults,
		enum sim_fault (*fault_for)(uint64_t idx, void *arg), void *arg);
long long sim_prov_next_release(void);
void sim_prov_cut_proc(unsigned proc);
void sim_prov_reset(void);
bool sim_prov_idle(void);
uint64_t sim_activity(void);
void sim_activity_bump(void);
/* the world's persist event from a remote PERSISTENT flush into an MR
 * of `proc`: returns true when the process crashed at it */
bool sim_remote_persist_event(unsigned proc, const void *ptr, size_t len);
/* the world's wait: until ready(arg) or timeout_ms of virtual time */
int sim_wait(bool (*ready)(void *arg), void *arg, int timeout_ms);
void sim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sim_record_delivery(const struct sim_delivery *d);

#endif /* PMREP_TESTS_SIM_H */
