/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_pmem_persist_fail.c -- field case T28: a failed msync is an error,
 * never an abort and never a later success.
 *
 * msync(2) is defined in this executable, so every msync of the process
 * reaches it: the pmem layer's own (linked in), libpmem2's (a shared
 * library: the executable's definition interposes) and the tcp
 * provider's. It counts the calls and, when armed, fails them with an
 * errno (EIO: the write-back error a dying disk or a full thin volume
 * gives) without syncing anything; else it passes the call to the kernel.
 *
 * What is asserted:
 * - pmrep_pmem_persist returns PMREP_E_PROVIDER with EIO, logs, and the
 *   process lives on (libpmem2's own PAGE persist would abort it);
 * - the mapping is poisoned: later persists fail although msync
 *   succeeds, until the file is mapped again;
 * - the void functions of the getters do not abort either and poison;
 * - a tcp PERSISTENT flush into a region whose persist is the mapping's
 *   (pmrep_pmem_persist_cb) completes with an error when msync fails,
 *   is never acknowledged, and stays refused on a new connection.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <libpmem2.h>

#include <pmrep/pmem.h>
#include <pmrep/transport.h>

#include "common/testhook.h"
#include "test_pmem_util.h"

#define SZ (4 * TP_PAGE)
#define T_MS 5000

/* ---- msync interposer */

static atomic_int msync_calls;
static atomic_int msync_fail;	/* 0: pass on; else fail with this errno */

/* exported: the build hides symbols by default, and libpmem2 must bind to
 * this one too */
__attribute__((visibility("default"))) int
msync(void *addr, size_t len, int flags)
{
	atomic_fetch_add(&msync_calls, 1);
	int err = atomic_load(&msync_fail);
	if (err != 0) {
		errno = err;
		return -1;
	}
	return (int)syscall(SYS_msync, addr, len, flags);
}

/* ---- fixtures */

static int
group_setup(void **state)
{
	(void)state;
	/* on a disk file system: a file in memory (tmpfs) has nothing to
	 * write back, pmrep makes no msync of it */
	return tp_dir_create_in("/var/tmp", "test_pmem_persist_fail");
}

static int
group_teardown(void **state)
{
	(void)state;
	tp_dir_remove();
	return 0;
}

static int
setup(void **state)
{
	(void)state;
	atomic_store(&msync_fail, 0);
	atomic_store(&msync_calls, 0);
	tp_log_capture();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	atomic_store(&msync_fail, 0);
	pmrep_test_hooks.pmem_persist = NULL;
	tp_log_restore();
	tp_dir_empty();
	return 0;
}

static struct pmrep_pmem *
open_page(const char *name)
{
	struct pmrep_pmem *p = NULL;

	assert_int_equal(pmrep_pmem_open(tp_path(name), PMREP_PMEM_CREATE, SZ,
			PMREP_PMEM_GRANULARITY_PAGE, &p), 0);
	assert_int_equal(pmrep_pmem_get_granularity(p),
			PMREP_PMEM_GRANULARITY_PAGE);
	assert_false(pmrep_pmem_is_poisoned(p));
	return p;
}

/* ---- the interposer reaches libpmem2, whose PAGE persist aborts */

static void
T28_libpmem2_page_persist_aborts_where_pmrep_returns_an_error(void **state)
{
	(void)state;
	struct pmrep_pmem *p = open_page("lib");
	char *a = pmrep_pmem_get_address(p);
	int fd = open(tp_path("lib"), O_RDWR);
	assert_true(fd >= 0);

	/* a child maps the file with libpmem2 directly and persists with
	 * libpmem2's own PAGE persist function while msync fails */
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct pmem2_config *cfg;
		struct pmem2_source *src;
		struct pmem2_map *map;
		if (pmem2_config_new(&cfg) != 0 ||
				pmem2_config_set_required_store_granularity(cfg,
				PMEM2_GRANULARITY_PAGE) != 0 ||
				pmem2_source_from_fd(&src, fd) != 0 ||
				pmem2_map_new(&map, cfg, src) != 0)
			_exit(2);
		signal(SIGABRT, SIG_DFL);
		atomic_store(&msync_fail, EIO);
		pmem2_get_persist_fn(map)(pmem2_map_get_address(map), 1);
		_exit(0);	/* libpmem2 returned: it did not abort */
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	close(fd);
	assert_false(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT))
		print_message("note: this libpmem2 did not abort on a failed "
				"msync (status 0x%x)\n", (unsigned)st);

	/* pmrep, in this very process, under the same failure: an error */
	atomic_store(&msync_fail, EIO);
	a[0] = 1;
	assert_int_equal(pmrep_pmem_persist(p, a, 1), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

/* ---- pmrep_pmem_persist */

static void
T28_page_persist_failure_is_an_error_not_an_abort(void **state)
{
	(void)state;
	struct pmrep_pmem *p = open_page("err");
	char *a = pmrep_pmem_get_address(p);

	memset(a + TP_PAGE + 10, 0x5a, 100);
	assert_int_equal(pmrep_pmem_persist(p, a + TP_PAGE + 10, 100), 0);
	assert_int_equal(atomic_load(&msync_calls), 1);

	atomic_store(&msync_fail, EIO);
	int errs = tp_log_count[PMREP_LOG_ERROR];
	memset(a + TP_PAGE + 10, 0xa5, 100);
	assert_int_equal(pmrep_pmem_persist(p, a + TP_PAGE + 10, 100),
			PMREP_E_PROVIDER);
	/* alive, with the cause on record and in the log */
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_int_equal(atomic_load(&msync_calls), 2);
	assert_int_equal(tp_log_count[PMREP_LOG_ERROR], errs + 1);
	assert_non_null(strstr(pmrep_err_msg(), "msync of 100 bytes at offset "
			"4106 failed"));
	assert_non_null(strstr(pmrep_err_msg(), "poisoned"));
	assert_non_null(strstr(pmrep_err_msg(), tp_path("err")));
	assert_true(pmrep_pmem_is_poisoned(p));

	/* another errno is passed through as it is */
	atomic_store(&msync_fail, ENOSPC);
	assert_int_equal(pmrep_pmem_persist(p, a, 8), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), ENOSPC);

	/* the bytes stay in memory; close is unaffected */
	assert_int_equal((unsigned char)a[TP_PAGE + 10], 0xa5);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_null(p);
}

static void
T28_failed_persist_poisons_the_mapping(void **state)
{
	(void)state;
	struct pmrep_pmem *p = open_page("poison");
	char *a = pmrep_pmem_get_address(p);

	atomic_store(&msync_fail, EIO);
	assert_int_equal(pmrep_pmem_persist(p, a, 64), PMREP_E_PROVIDER);
	atomic_store(&msync_fail, 0);	/* msync works again ... */

	/* ... but no later persist of this mapping succeeds: not the range
	 * that failed, not another page, not an empty range */
	int calls = atomic_load(&msync_calls);
	int errs = tp_log_count[PMREP_LOG_ERROR];
	assert_int_equal(pmrep_pmem_persist(p, a, 64), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_non_null(strstr(pmrep_err_msg(), "earlier write-back"));
	assert_int_equal(pmrep_pmem_persist(p, a + 3 * TP_PAGE, 10),
			PMREP_E_PROVIDER);
	assert_int_equal(pmrep_err_errno(), EIO);
	assert_int_equal(pmrep_pmem_persist(p, a, 0), PMREP_E_PROVIDER);
	assert_int_equal(pmrep_pmem_persist_cb(p, a + 100, 1),
			PMREP_E_PROVIDER);
	assert_int_equal(tp_log_count[PMREP_LOG_ERROR], errs + 4);
	/* msync is still made (best effort): it succeeded, and still it
	 * is not taken as proof */
	assert_int_equal(atomic_load(&msync_calls), calls + 3);
	assert_true(pmrep_pmem_is_poisoned(p));

	/* the range check still comes first */
	assert_int_equal(pmrep_pmem_persist(p, a + SZ, 1), PMREP_E_INVAL);
	assert_int_equal(pmrep_pmem_close(&p), 0);

	/* a new mapping of the file is not poisoned (its state is for the
	 * caller to check: nothing here claims the old bytes are there) */
	p = open_page("poison");
	a = pmrep_pmem_get_address(p);
	assert_int_equal(pmrep_pmem_persist(p, a, 64), 0);
	assert_false(pmrep_pmem_is_poisoned(p));

	/* another open mapping is not touched by one's poison */
	struct pmrep_pmem *q = open_page("other");
	atomic_store(&msync_fail, EIO);
	assert_int_equal(pmrep_pmem_persist(p, a, 64), PMREP_E_PROVIDER);
	atomic_store(&msync_fail, 0);
	assert_true(pmrep_pmem_is_poisoned(p));
	assert_false(pmrep_pmem_is_poisoned(q));
	assert_int_equal(pmrep_pmem_persist(q, pmrep_pmem_get_address(q), 8),
			0);
	assert_int_equal(pmrep_pmem_close(&q), 0);
	assert_int_equal(pmrep_pmem_close(&p), 0);
	assert_false(pmrep_pmem_is_poisoned(NULL));
}

/* the test hook runs first; its failure is the persist's, without msync */
static int hook_ret;
static int hook_calls;

static int
persist_hook(struct pmrep_pmem *pmem, const void *ptr, size_t len)
{
	(void)pmem;
	(void)ptr;
	(void)len;
	hook_calls++;
	return hook_ret;
}

static void
T28_persist_test_hook_runs_before_the_msync(void **state)
{
	(void)state;
	struct pmrep_pmem *p = open_page("hook");
	char *a = pmrep_pmem_get_address(p);

	pmrep_test_hooks.pmem_persist = persist_hook;
	hook_calls = 0;
	hook_ret = PMREP_E_STATE;
	assert_int_equal(pmrep_pmem_persist(p, a, 8), PMREP_E_STATE);
	assert_int_equal(hook_calls, 1);
	assert_int_equal(atomic_load(&msync_calls), 0);
	assert_false(pmrep_pmem_is_poisoned(p));

	hook_ret = 0;
	assert_int_equal(pmrep_pmem_persist(p, a, 8), 0);
	assert_int_equal(hook_calls, 2);
	assert_int_equal(atomic_load(&msync_calls), 1);
	pmrep_test_hooks.pmem_persist = NULL;
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

/* many threads persisting while msync fails: each gets the error */
#define NTHREADS 4
#define NPERSISTS 200

struct worker {
	struct pmrep_pmem *p;
	char *a;
	int fails;
};

static void *
persist_worker(void *arg)
{
	struct worker *w = arg;
	for (int i = 0; i < NPERSISTS; i++)
		if (pmrep_pmem_persist(w->p, w->a, 64) == PMREP_E_PROVIDER &&
				pmrep_err_errno() == EIO)
			w->fails++;
	return NULL;
}

static void
run_workers(struct pmrep_pmem *p)
{
	char *base = pmrep_pmem_get_address(p);
	struct worker w[NTHREADS];
	pthread_t t[NTHREADS];

	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ p, base + i * TP_PAGE, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, persist_worker,
				&w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(w[i].fails, NPERSISTS);
	}
}

static void
T28_concurrent_persists_all_fail_once_one_failed(void **state)
{
	(void)state;
	struct pmrep_pmem *p = open_page("mt");

	tp_log_restore();	/* the capturing sink is not thread-safe */
	pmrep_log_set_threshold(PMREP_LOG_FATAL);
	/* msync failing under all of them: every call fails */
	atomic_store(&msync_fail, EIO);
	run_workers(p);
	assert_true(pmrep_pmem_is_poisoned(p));
	/* msync healthy again: every call still fails (poisoned) */
	atomic_store(&msync_fail, 0);
	int calls = atomic_load(&msync_calls);
	run_workers(p);
	assert_int_equal(atomic_load(&msync_calls),
			calls + NTHREADS * NPERSISTS);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

/* ---- the getters' void functions */

static void
T28_page_functions_of_the_getters_do_not_abort_and_poison(void **state)
{
	(void)state;
	static const char *const names[] = {
		"persist", "flush", "memcpy", "memmove", "memset",
	};

	for (int k = 0; k < 5; k++) {
		struct pmrep_pmem *p = open_page(names[k]);
		char *a = pmrep_pmem_get_address(p);
		int errs = tp_log_count[PMREP_LOG_ERROR];

		atomic_store(&msync_fail, EIO);
		errno = 1234;
		switch (k) {
		case 0:
			pmrep_pmem_get_persist_fn(p)(a + 5, 10);
			break;
		case 1:
			pmrep_pmem_get_flush_fn(p)(a + 5, 10);
			pmrep_pmem_get_drain_fn(p)();
			break;
		case 2:
			assert_ptr_equal(pmrep_pmem_get_memcpy_fn(p)(a, "xyz",
					3, 0), a);
			break;
		case 3:
			assert_ptr_equal(pmrep_pmem_get_memmove_fn(p)(a + 1, a,
					8, PMREP_PMEM_F_NODRAIN), a + 1);
			break;
		default:
			assert_ptr_equal(pmrep_pmem_get_memset_fn(p)(a, 'q', 16,
					0), a);
			break;
		}
		/* here: no abort; errno untouched; one msync tried, logged */
		assert_int_equal(errno, 1234);
		assert_int_equal(tp_log_count[PMREP_LOG_ERROR], errs + 1);
		assert_non_null(strstr(tp_log_last[PMREP_LOG_ERROR],
				"poisoned"));
		assert_true(pmrep_pmem_is_poisoned(p));
		atomic_store(&msync_fail, 0);
		assert_int_equal(pmrep_pmem_persist(p, a, 1), PMREP_E_PROVIDER);
		assert_int_equal(pmrep_pmem_close(&p), 0);
	}

	/* the stores are made whatever the msync did */
	struct pmrep_pmem *p = open_page("stores");
	char *a = pmrep_pmem_get_address(p);
	atomic_store(&msync_fail, EIO);
	pmrep_pmem_get_memcpy_fn(p)(a, "abcdef", 6, 0);
	pmrep_pmem_get_memmove_fn(p)(a + 2, a, 4, 0);
	pmrep_pmem_get_memset_fn(p)(a + 10, 'z', 2, 0);
	assert_memory_equal(a, "ababcd", 6);
	assert_memory_equal(a + 10, "zz", 2);
	assert_int_equal(pmrep_pmem_close(&p), 0);

	/* NOFLUSH copies make no msync: nothing fails, nothing poisoned */
	p = open_page("noflush");
	a = pmrep_pmem_get_address(p);
	int calls = atomic_load(&msync_calls);
	pmrep_pmem_get_memcpy_fn(p)(a, "ab", 2, PMREP_PMEM_F_NOFLUSH);
	pmrep_pmem_get_memset_fn(p)(a + 2, 'c', 2, PMREP_PMEM_F_NOFLUSH);
	assert_int_equal(atomic_load(&msync_calls), calls);
	assert_false(pmrep_pmem_is_poisoned(p));
	assert_memory_equal(a, "abcc", 4);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

/* ---- tcp: a PERSISTENT flush into such a mapping */

struct link {
	struct pmrep_peer *cpeer, *speer;
	struct pmrep_ep *ep;
	struct pmrep_conn *cconn, *sconn;
	struct pmrep_cq *cq;
};

static void
link_open(struct link *l, struct pmrep_peer *cpeer, struct pmrep_peer *speer)
{
	memset(l, 0, sizeof(*l));
	l->cpeer = cpeer;
	l->speer = speer;
	assert_int_equal(pmrep_ep_listen(speer, "127.0.0.1", "0", &l->ep), 0);
	uint16_t port;
	assert_int_equal(pmrep_ep_get_port(l->ep, &port), 0);
	char sport[16];
	snprintf(sport, sizeof(sport), "%u", port);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(cpeer, "127.0.0.1", sport, NULL,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &l->cconn), 0);
	struct pmrep_conn_req *sreq = NULL;
	assert_int_equal(pmrep_ep_wait_conn_req(l->ep, NULL, T_MS, &sreq), 0);
	assert_int_equal(pmrep_conn_req_connect(&sreq, NULL, &l->sconn), 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(l->cconn, T_MS, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_wait_event(l->sconn, T_MS, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_get_cq(l->cconn, &l->cq), 0);
}

static void
link_close(struct link *l)
{
	assert_int_equal(pmrep_conn_delete(&l->cconn), 0);
	assert_int_equal(pmrep_conn_delete(&l->sconn), 0);
	assert_int_equal(pmrep_ep_shutdown(&l->ep), 0);
}

/* the next completion of `cq` (fails the test after T_MS) */
static struct pmrep_completion
next_completion(struct pmrep_cq *cq)
{
	for (int i = 0; i < 50; i++) {
		struct pmrep_completion c;
		int n = 0;
		int ret = pmrep_cq_get_completions(cq, &c, 1, &n);
		if (ret == 0 && n == 1)
			return c;
		assert_int_equal(ret, PMREP_E_NO_COMPLETION);
		ret = pmrep_cq_wait(cq, T_MS / 50);
		assert_true(ret == 0 || ret == PMREP_E_TIMEOUT);
	}
	fail_msg("no completion within %d ms", T_MS);
	return (struct pmrep_completion){ 0 };
}

static void
no_more_completions(struct pmrep_cq *cq, int ms)
{
	(void) pmrep_cq_wait(cq, ms);
	struct pmrep_completion c;
	int n = 0;
	int ret = pmrep_cq_get_completions(cq, &c, 1, &n);
	if (ret == 0)
		fail_msg("unexpected completion: op %d status %s", c.op,
				pmrep_wc_status_str(c.status));
	assert_int_equal(ret, PMREP_E_NO_COMPLETION);
}

/* a write of `len` bytes at `off`, then a signalled PERSISTENT flush */
static void
write_and_flush(struct link *l, struct pmrep_mr_remote *rmt,
		struct pmrep_mr_local *src, size_t off, size_t len, void *ctx)
{
	assert_int_equal(pmrep_write(l->cconn, rmt, off, src, 0, len,
			PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_flush(l->cconn, rmt, off, len,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			ctx), 0);
}

static void
T28_tcp_flush_whose_msync_fails_is_refused_never_acked(void **state)
{
	(void)state;
	struct pmrep_pmem *p = open_page("tcp");
	uint8_t *a = pmrep_pmem_get_address(p);
	struct pmrep_peer *cpeer = NULL, *speer = NULL;
	assert_int_equal(pmrep_peer_new_tcp(&cpeer), 0);
	assert_int_equal(pmrep_peer_new_tcp(&speer), 0);

	/* the target side: the mapping, persisted through the pmem layer */
	struct pmrep_mr_local *dst = NULL;
	assert_int_equal(pmrep_mr_reg(speer, a, SZ, PMREP_MR_USAGE_WRITE_DST |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT, &dst), 0);
	assert_int_equal(pmrep_mr_set_persist_fn(dst, pmrep_pmem_persist_cb,
			p), 0);
	uint8_t desc[PMREP_MR_DESC_SIZE];
	assert_int_equal(pmrep_mr_get_descriptor(dst, desc), 0);
	struct pmrep_mr_remote *rmt = NULL;
	assert_int_equal(pmrep_mr_remote_from_descriptor(desc, sizeof(desc),
			&rmt), 0);
	/* the initiator's source buffer */
	uint8_t *buf = calloc(1, TP_PAGE);
	assert_non_null(buf);
	memset(buf, 0x77, TP_PAGE);
	struct pmrep_mr_local *src = NULL;
	assert_int_equal(pmrep_mr_reg(cpeer, buf, TP_PAGE,
			PMREP_MR_USAGE_WRITE_SRC, &src), 0);

	struct link l;
	link_open(&l, cpeer, speer);

	/* healthy: acknowledged after the msync */
	write_and_flush(&l, rmt, src, 100, 200, (void *)1);
	struct pmrep_completion c = next_completion(l.cq);
	assert_int_equal(c.status, PMREP_WC_SUCCESS);
	assert_ptr_equal(c.op_context, (void *)1);
	assert_int_equal(atomic_load(&msync_calls), 1);

	/* msync fails on the target: the flush is refused with a remote
	 * operation error; the target process is alive (this one) */
	atomic_store(&msync_fail, EIO);
	write_and_flush(&l, rmt, src, TP_PAGE, 300, (void *)2);
	c = next_completion(l.cq);
	assert_int_equal(c.status, PMREP_WC_REMOTE_OPERATION_ERROR);
	assert_ptr_equal(c.op_context, (void *)2);
	no_more_completions(l.cq, 100);	/* no ACK of it, ever */
	assert_true(pmrep_pmem_is_poisoned(p));
	/* the data did arrive: only its durability is denied */
	assert_int_equal(a[TP_PAGE], 0x77);
	/* the conn is in the error state: a later request is flushed */
	atomic_store(&msync_fail, 0);
	int ret = pmrep_flush(l.cconn, rmt, 0, 8, PMREP_FLUSH_TYPE_PERSISTENT,
			PMREP_F_COMPLETION_ALWAYS, (void *)3);
	if (ret == 0) {
		c = next_completion(l.cq);
		assert_int_not_equal(c.status, PMREP_WC_SUCCESS);
	}
	link_close(&l);

	/* a new connection, msync healthy again: the mapping is poisoned,
	 * so a persistent flush into it still fails (no false success) */
	link_open(&l, cpeer, speer);
	write_and_flush(&l, rmt, src, 2 * TP_PAGE, 50, (void *)4);
	c = next_completion(l.cq);
	assert_int_equal(c.status, PMREP_WC_REMOTE_OPERATION_ERROR);
	assert_ptr_equal(c.op_context, (void *)4);
	no_more_completions(l.cq, 50);
	link_close(&l);

	assert_int_equal(pmrep_mr_remote_delete(&rmt), 0);
	assert_int_equal(pmrep_mr_dereg(&src), 0);
	assert_int_equal(pmrep_mr_dereg(&dst), 0);
	assert_int_equal(pmrep_peer_delete(&cpeer), 0);
	assert_int_equal(pmrep_peer_delete(&speer), 0);
	free(buf);
	assert_int_equal(pmrep_pmem_close(&p), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(T28_libpmem2_page_persist_aborts_where_pmrep_returns_an_error),
		T(T28_page_persist_failure_is_an_error_not_an_abort),
		T(T28_failed_persist_poisons_the_mapping),
		T(T28_persist_test_hook_runs_before_the_msync),
		T(T28_concurrent_persists_all_fail_once_one_failed),
		T(T28_page_functions_of_the_getters_do_not_abort_and_poison),
		T(T28_tcp_flush_whose_msync_fails_is_refused_never_acked),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
