/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_datapath_counts.c -- the data path's cost in heap allocations and
 * system calls, counted (never timed):
 *  - verbs (mocked device): a persist (write + APM flush) with busy-polled
 *    completions makes no allocation and no system call of pmrep's own in
 *    steady state; waiting on the completion fd makes no allocation and a
 *    bounded number of calls per wait; a persist (write with PMREP_F_MORE,
 *    then the flush) rings one doorbell: one ibv_post_send;
 *  - tcp (real sockets on loopback, progress threads included): a batch of
 *    writes closed by one flush makes no allocation in steady state, and
 *    its system calls do not grow with the batch (well under one per op).
 *
 * How: the mocks' allocation wrappers count only while armed, so a failure
 * is scheduled too far away to fire; the libc entry points pmrep calls for
 * I/O are defined in this executable (hidden, so only pmrep's objects and
 * the mocks linked into it reach them), count, and call libc's. Calls the
 * mocked device makes on its own eventfds count too: they stand for the
 * kernel work a real completion channel does.
 */
#include <dlfcn.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "test_verbs_util.h"

/* ------------------------------------------------------------ counting */

static atomic_bool dp_counting;
static atomic_ulong dp_syscalls;
/* the test's own (application) thread: its calls by kind */
static __thread bool dp_app_thread;
static atomic_ulong dp_app_sendmsg, dp_app_write;

#define DP_REAL(name) \
	static __typeof__(name) *real_; \
	if (real_ == NULL) \
		real_ = (__typeof__(name) *)dlsym(RTLD_NEXT, #name); \
	if (atomic_load_explicit(&dp_counting, memory_order_relaxed)) \
		atomic_fetch_add_explicit(&dp_syscalls, 1, memory_order_relaxed)

/* count one more call of a kind made by the application thread */
#define DP_APP(counter) \
	if (dp_app_thread && atomic_load_explicit(&dp_counting, \
			memory_order_relaxed)) \
		atomic_fetch_add_explicit(&(counter), 1, memory_order_relaxed)

ssize_t
read(int fd, void *buf, size_t n)
{
	DP_REAL(read);
	return real_(fd, buf, n);
}

ssize_t
write(int fd, const void *buf, size_t n)
{
	DP_REAL(write);
	DP_APP(dp_app_write);
	return real_(fd, buf, n);
}

ssize_t
readv(int fd, const struct iovec *iov, int n)
{
	DP_REAL(readv);
	return real_(fd, iov, n);
}

ssize_t
writev(int fd, const struct iovec *iov, int n)
{
	DP_REAL(writev);
	return real_(fd, iov, n);
}

int
poll(struct pollfd *fds, nfds_t n, int timeout)
{
	DP_REAL(poll);
	return real_(fds, n, timeout);
}

int
epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	DP_REAL(epoll_wait);
	return real_(epfd, ev, max, timeout);
}

ssize_t
send(int fd, const void *buf, size_t n, int flags)
{
	DP_REAL(send);
	return real_(fd, buf, n, flags);
}

ssize_t
recv(int fd, void *buf, size_t n, int flags)
{
	DP_REAL(recv);
	return real_(fd, buf, n, flags);
}

ssize_t
sendmsg(int fd, const struct msghdr *msg, int flags)
{
	DP_REAL(sendmsg);
	DP_APP(dp_app_sendmsg);
	return real_(fd, msg, flags);
}

ssize_t
recvmsg(int fd, struct msghdr *msg, int flags)
{
	DP_REAL(recvmsg);
	return real_(fd, msg, flags);
}

int
eventfd_read(int fd, eventfd_t *value)
{
	DP_REAL(eventfd_read);
	return real_(fd, value);
}

int
eventfd_write(int fd, eventfd_t value)
{
	DP_REAL(eventfd_write);
	return real_(fd, value);
}

int
msync(void *addr, size_t len, int flags)
{
	DP_REAL(msync);
	return real_(addr, len, flags);
}

int
sched_yield(void)
{
	DP_REAL(sched_yield);
	return real_();
}

static const char *const dp_alloc_fns[] = {
	"malloc", "calloc", "realloc", "reallocarray", "strdup", "strndup",
	"posix_memalign", "aligned_alloc",
};

static unsigned long
dp_allocs(void)
{
	unsigned long n = 0;
	for (size_t i = 0; i < sizeof(dp_alloc_fns) / sizeof(dp_alloc_fns[0]); i++)
		n += mock_calls(dp_alloc_fns[i]);
	return n;
}

struct dp_count {
	unsigned long allocs, syscalls;
	unsigned long posts, polls;	/* verbs: ibv_post_send, ibv_poll_cq */
};

static void
dp_begin(struct dp_count *c)
{
	mock_fail("alloc", 1u << 30, ENOMEM);	/* arms the counting */
	c->allocs = dp_allocs();
	c->posts = mock_calls("ibv_post_send");
	c->polls = mock_calls("ibv_poll_cq");
	c->syscalls = atomic_load(&dp_syscalls);
	atomic_store(&dp_counting, true);
}

static void
dp_end(struct dp_count *c)
{
	atomic_store(&dp_counting, false);
	c->syscalls = atomic_load(&dp_syscalls) - c->syscalls;
	c->allocs = dp_allocs() - c->allocs;
	c->posts = mock_calls("ibv_post_send") - c->posts;
	c->polls = mock_calls("ibv_poll_cq") - c->polls;
	mock_fail_clear();
}

/* the counters see what they are meant to see (else a zero proves nothing) */
static void
counting_sees_an_allocation_and_a_syscall(void **state)
{
	(void) state;
	struct dp_count c;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(fd >= 0);
	uint64_t one = 1;
	dp_begin(&c);
	char *volatile p = malloc(100);	/* volatile: not optimised away */
	assert_non_null(p);
	p[0] = 1;
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
	dp_end(&c);
	free(p);
	close(fd);
	assert_int_equal(c.allocs, 1);
	assert_int_equal(c.syscalls, 1);
}

/* --------------------------------------------------------------- verbs */

#define VQD 16
#define VOPS 2000

struct vfx {
	struct pmrep_peer *peer;
	struct pmrep_conn *conn;
	struct pmrep_mr_local *local, *target;
	struct pmrep_mr_remote *remote;
	struct ibv_qp *qp;
};

static void
vfx_open(struct vfx *f)
{
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 2 * VQD + 2), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, 2 * VQD + 2), 0);
	f->peer = tv_peer();
	f->conn = tv_active(f->peer, cfg, NULL, 0);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	f->local = tv_mr(f->peer, 1 << 16, PMREP_MR_USAGE_ALL);
	f->target = tv_mr(f->peer, 1 << 16, PMREP_MR_USAGE_ALL);
	f->remote = tv_remote(f->target);
	f->qp = tv_vconn(f->conn)->qp;
	/* APM: the device has no RDMA FLUSH; the target declares direct
	 * write to pmem */
	struct pmrep_peer_cfg *pc;
	assert_int_equal(pmrep_peer_cfg_new(&pc), 0);
	assert_int_equal(pmrep_peer_cfg_set_direct_write_to_pmem(pc, true), 0);
	assert_int_equal(pmrep_conn_apply_remote_peer_cfg(f->conn, pc), 0);
	assert_int_equal(pmrep_peer_cfg_delete(&pc), 0);
	enum pmrep_flush_method m;
	assert_int_equal(pmrep_conn_get_flush_method(f->conn, &m), 0);
	assert_int_equal(m, PMREP_FLUSH_METHOD_APM);
}

static void
vfx_close(struct vfx *f)
{
	assert_int_equal(pmrep_conn_delete(&f->conn), 0);
	assert_int_equal(pmrep_mr_remote_delete(&f->remote), 0);
	tv_mr_free(f->local);
	tv_mr_free(f->target);
	assert_int_equal(pmrep_peer_delete(&f->peer), 0);
}

static void
v_persist(struct vfx *f, unsigned slot, size_t size)
{
	size_t off = (size_t)slot * size;
	assert_int_equal(pmrep_write(f->conn, f->remote, off, f->local, off,
			size, PMREP_F_COMPLETION_ON_ERROR | PMREP_F_MORE,
			NULL), 0);
	assert_int_equal(pmrep_flush(f->conn, f->remote, off, size,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)(uintptr_t)(slot + 1)), 0);
}

/*
 * run `ops` persists, `qd` in flight, taking completions by busy-polling
 * (block = false) or by waiting on the CQ's fd; the "device" completes
 * everything posted whenever the queue is full. `count` (may be NULL)
 * covers only pmrep's calls, never the mocked device's completion work.
 */
static void
v_run(struct vfx *f, unsigned ops, unsigned qd, size_t size, bool block,
		struct dp_count *count)
{
	struct pmrep_cq *cq = NULL;
	assert_int_equal(pmrep_conn_get_cq(f->conn, &cq), 0);
	struct dp_count total = { 0 }, c;
	unsigned posted = 0, done = 0, inflight = 0;
	while (done < ops) {
		if (count)
			dp_begin(&c);
		while (inflight < qd && posted < ops) {
			v_persist(f, posted % qd, size);
			posted++;
			inflight++;
		}
		if (count) {
			dp_end(&c);
			total.allocs += c.allocs;
			total.syscalls += c.syscalls;
			total.posts += c.posts;
			total.polls += c.polls;
		}
		/* the device: every request posted completes */
		assert_true(mock_qp_complete_sends(f->qp, -1, IBV_WC_SUCCESS) > 0);
		if (count)
			dp_begin(&c);
		while (inflight > 0) {
			struct pmrep_completion cmp[VQD];
			int n = 0;
			if (block)
				assert_int_equal(pmrep_cq_wait(cq, 1000), 0);
			int ret = pmrep_cq_get_completions(cq, cmp, VQD, &n);
			if (ret == PMREP_E_NO_COMPLETION)
				continue;
			assert_int_equal(ret, 0);
			for (int i = 0; i < n; i++) {
				assert_int_equal(cmp[i].status, PMREP_WC_SUCCESS);
				assert_int_equal(cmp[i].op, PMREP_OP_FLUSH);
			}
			inflight -= (unsigned)n;
			done += (unsigned)n;
		}
		if (count) {
			dp_end(&c);
			total.allocs += c.allocs;
			total.syscalls += c.syscalls;
			total.posts += c.posts;
			total.polls += c.polls;
		}
	}
	if (count)
		*count = total;
}

static void
verbs_persist_busy_poll_makes_no_allocation_and_no_syscall(void **state)
{
	(void) state;
	struct vfx f;
	vfx_open(&f);
	static const size_t sizes[] = { 64, 4096 };
	static const unsigned qds[] = { 1, VQD };
	for (size_t s = 0; s < 2; s++) {
		for (size_t q = 0; q < 2; q++) {
			struct dp_count c;
			v_run(&f, 200, qds[q], sizes[s], false, NULL);	/* warm-up */
			v_run(&f, VOPS, qds[q], sizes[s], false, &c);
			print_message("verbs busy-poll %zu B qd %u: %.3f allocs, %.3f syscalls, "
					"%.2f ibv_post_send, %.2f ibv_poll_cq per persist\n",
					sizes[s], qds[q], (double)c.allocs / VOPS,
					(double)c.syscalls / VOPS,
					(double)c.posts / VOPS, (double)c.polls / VOPS);
			assert_int_equal(c.allocs, 0);
			assert_int_equal(c.syscalls, 0);
			/* a write held by PMREP_F_MORE and its
			 * read-after-write flush: one doorbell */
			assert_int_equal(c.posts, VOPS);
		}
	}
	vfx_close(&f);
}

static void
verbs_persist_fd_wait_makes_no_allocation_and_bounded_syscalls(void **state)
{
	(void) state;
	struct vfx f;
	vfx_open(&f);
	struct dp_count c;
	v_run(&f, 100, 1, 64, true, NULL);
	v_run(&f, VOPS, 1, 64, true, &c);
	print_message("verbs fd-wait 64 B qd 1: %.3f allocs, %.3f syscalls per persist "
			"(the wait: poll + the channel's read)\n",
			(double)c.allocs / VOPS, (double)c.syscalls / VOPS);
	assert_int_equal(c.allocs, 0);
	/* per wait: poll on the channel fd, the channel read
	 * (ibv_get_cq_event); nothing else */
	assert_true(c.syscalls <= 3u * VOPS);
	vfx_close(&f);
}

/* ----------------------------------------------------------------- tcp */

#define TBATCHES 40

struct tfx {
	struct pmrep_peer *cpeer, *speer;
	struct pmrep_ep *ep;
	struct pmrep_conn *cconn, *sconn;
	struct pmrep_mr_local *src, *dst;
	struct pmrep_mr_remote *remote;
	void *sbuf, *dbuf;
	struct pmrep_cq *cq;
};

static int
persist_nothing(void *ctx, const void *ptr, size_t size)
{
	(void) ctx;
	(void) ptr;
	(void) size;
	return 0;
}

static void
tfx_open(struct tfx *f, size_t bytes)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(pmrep_peer_new_tcp(&f->cpeer), 0);
	assert_int_equal(pmrep_peer_new_tcp(&f->speer), 0);
	f->sbuf = calloc(1, bytes);
	f->dbuf = calloc(1, bytes);
	assert_non_null(f->sbuf);
	assert_non_null(f->dbuf);
	assert_int_equal(pmrep_mr_reg(f->cpeer, f->sbuf, bytes,
			PMREP_MR_USAGE_WRITE_SRC, &f->src), 0);
	assert_int_equal(pmrep_mr_reg(f->speer, f->dbuf, bytes,
			PMREP_MR_USAGE_WRITE_DST | PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT,
			&f->dst), 0);
	/* the data path's own calls, not msync's */
	assert_int_equal(pmrep_mr_set_persist_fn(f->dst, persist_nothing, NULL), 0);
	f->remote = tv_remote(f->dst);

	assert_int_equal(pmrep_ep_listen(f->speer, "127.0.0.1", "0", &f->ep), 0);
	uint16_t port;
	assert_int_equal(pmrep_ep_get_port(f->ep, &port), 0);
	char sport[16];
	snprintf(sport, sizeof(sport), "%u", port);
	struct pmrep_conn_cfg *cfg = tv_cfg();
	assert_int_equal(pmrep_conn_cfg_set_sq_size(cfg, 256), 0);
	assert_int_equal(pmrep_conn_cfg_set_cq_size(cfg, 256), 0);
	struct pmrep_conn_req *req = NULL;
	assert_int_equal(pmrep_conn_req_new(f->cpeer, "127.0.0.1", sport, cfg,
			&req), 0);
	assert_int_equal(pmrep_conn_req_connect(&req, NULL, &f->cconn), 0);
	struct pmrep_conn_req *sreq = NULL;
	assert_int_equal(pmrep_ep_wait_conn_req(f->ep, NULL, 5000, &sreq), 0);
	assert_int_equal(pmrep_conn_req_connect(&sreq, NULL, &f->sconn), 0);
	enum pmrep_conn_event ev;
	assert_int_equal(pmrep_conn_wait_event(f->cconn, 5000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_wait_event(f->sconn, 5000, &ev), 0);
	assert_int_equal(ev, PMREP_CONN_ESTABLISHED);
	assert_int_equal(pmrep_conn_cfg_delete(&cfg), 0);
	assert_int_equal(pmrep_conn_get_cq(f->cconn, &f->cq), 0);
}

static void
tfx_close(struct tfx *f)
{
	assert_int_equal(pmrep_conn_delete(&f->cconn), 0);
	assert_int_equal(pmrep_conn_delete(&f->sconn), 0);
	assert_int_equal(pmrep_ep_shutdown(&f->ep), 0);
	assert_int_equal(pmrep_mr_remote_delete(&f->remote), 0);
	assert_int_equal(pmrep_mr_dereg(&f->src), 0);
	assert_int_equal(pmrep_mr_dereg(&f->dst), 0);
	assert_int_equal(pmrep_peer_delete(&f->cpeer), 0);
	assert_int_equal(pmrep_peer_delete(&f->speer), 0);
	free(f->sbuf);
	free(f->dbuf);
}

/* one batch: `n` writes of `size` bytes, one PERSISTENT flush, its completion */
static void
t_batch(struct tfx *f, unsigned n, size_t size)
{
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(pmrep_write(f->cconn, f->remote, i * size,
				f->src, i * size, size,
				PMREP_F_COMPLETION_ON_ERROR, NULL), 0);
	assert_int_equal(pmrep_flush(f->cconn, f->remote, 0, n * size,
			PMREP_FLUSH_TYPE_PERSISTENT, PMREP_F_COMPLETION_ALWAYS,
			(void *)7), 0);
	for (;;) {
		struct pmrep_completion c;
		int k = 0;
		int ret = pmrep_cq_get_completions(f->cq, &c, 1, &k);
		if (ret == 0) {
			assert_int_equal(c.status, PMREP_WC_SUCCESS);
			assert_ptr_equal(c.op_context, (void *)7);
			return;
		}
		assert_int_equal(ret, PMREP_E_NO_COMPLETION);
		ret = pmrep_cq_wait(f->cq, 5000);
		assert_true(ret == 0 || ret == PMREP_E_TIMEOUT);
		assert_int_equal(ret, 0);
	}
}

static int
cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
	return x < y ? -1 : x > y;
}

/* the median count of TBATCHES batches of n ops (allocs: the total) */
static void
t_measure(struct tfx *f, unsigned n, size_t size, unsigned long *syscalls,
		unsigned long *allocs)
{
	unsigned long v[TBATCHES];
	*allocs = 0;
	for (unsigned b = 0; b < TBATCHES; b++) {
		struct dp_count c;
		dp_begin(&c);
		t_batch(f, n, size);
		dp_end(&c);
		v[b] = c.syscalls;
		*allocs += c.allocs;
	}
	qsort(v, TBATCHES, sizeof(v[0]), cmp_ulong);
	*syscalls = v[TBATCHES / 2];
}

static void
tcp_batch_makes_no_allocation_and_syscalls_do_not_grow_with_it(void **state)
{
	(void) state;
	const size_t size = 512;
	struct tfx f;
	tfx_open(&f, 64 * size);
	for (unsigned i = 0; i < 20; i++)	/* warm-up: buffers, CQ ring */
		t_batch(&f, 64, size);

	unsigned long s1, a1, s64, a64;
	t_measure(&f, 1, size, &s1, &a1);
	t_measure(&f, 64, size, &s64, &a64);
	print_message("tcp 512 B: batch of 1 write + flush: %lu syscalls (median), "
			"%lu allocs in %d batches; batch of 64: %lu syscalls "
			"(%.2f per op), %lu allocs\n", s1, a1, TBATCHES, s64,
			(double)s64 / 65, a64);
	assert_int_equal(a1, 0);
	assert_int_equal(a64, 0);
	/* frames are batched into sendmsg / recv calls: 65 requests take
	 * far fewer calls than one each */
	assert_true(s64 < 65);
	tfx_close(&f);
}

/*
 * The fast path: a persist (write + flush, one batch) waited for with
 * pmrep_cq_wait goes out from the application thread (its own sendmsg)
 * and comes back to it without a hand-off: the application thread writes
 * no eventfd (no doorbell for the progress thread, no completion channel
 * signal to itself). Medians over TBATCHES persists.
 */
static void
tcp_persist_is_sent_and_taken_by_the_application_thread(void **state)
{
	(void) state;
	const size_t size = 64;
	struct tfx f;
	tfx_open(&f, 64 * size);
	for (unsigned i = 0; i < 20; i++)
		t_batch(&f, 1, size);
	unsigned long sends[TBATCHES], writes[TBATCHES];
	dp_app_thread = true;
	for (unsigned b = 0; b < TBATCHES; b++) {
		unsigned long s0 = atomic_load(&dp_app_sendmsg);
		unsigned long w0 = atomic_load(&dp_app_write);
		struct dp_count c;
		dp_begin(&c);
		t_batch(&f, 1, size);
		dp_end(&c);
		sends[b] = atomic_load(&dp_app_sendmsg) - s0;
		writes[b] = atomic_load(&dp_app_write) - w0;
	}
	dp_app_thread = false;
	qsort(sends, TBATCHES, sizeof(sends[0]), cmp_ulong);
	qsort(writes, TBATCHES, sizeof(writes[0]), cmp_ulong);
	print_message("tcp 64 B persist, application thread (median): %lu sendmsg, %lu eventfd writes\n",
			sends[TBATCHES / 2], writes[TBATCHES / 2]);
	assert_true(sends[TBATCHES / 2] >= 1);
	assert_int_equal(writes[TBATCHES / 2], 0);
	tfx_close(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			counting_sees_an_allocation_and_a_syscall,
			tv_setup, tv_teardown),
		cmocka_unit_test_setup_teardown(
			verbs_persist_busy_poll_makes_no_allocation_and_no_syscall,
			tv_setup, tv_teardown),
		cmocka_unit_test_setup_teardown(
			verbs_persist_fd_wait_makes_no_allocation_and_bounded_syscalls,
			tv_setup, tv_teardown),
		cmocka_unit_test_setup_teardown(
			tcp_batch_makes_no_allocation_and_syscalls_do_not_grow_with_it,
			tv_setup, tv_teardown),
		cmocka_unit_test_setup_teardown(
			tcp_persist_is_sent_and_taken_by_the_application_thread,
			tv_setup, tv_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
