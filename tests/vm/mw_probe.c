/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mw_probe.c -- what the guest's rxe does with a type 2 memory window,
 * with plain libibverbs / librdmacm (no pmrep): the facts the per-session
 * access of the target rests on.
 *
 * One process forks: the child is the responder (the "target"), the parent
 * the requester. The responder registers one region with LOCAL_WRITE |
 * MW_BIND only (no remote access of its own), accepts NCONN connections
 * into ONE protection domain, binds a type 2 window to the first QP
 * (IBV_WR_BIND_MW on that QP) and sends every requester the window's rkey,
 * the region's own rkey and the address (a SEND). The requester then
 * checks, each on its own conn (a remote access error moves the requester's
 * QP to the error state):
 *
 *   conn 0 (the window's QP): RDMA WRITE, READ (the bytes come back), FLUSH
 *          (GLOBAL; PERSISTENT too when the region is devdax) succeed
 *   conn 1: READ with the window's rkey        -> fails (another QP, same PD)
 *   conn 2: WRITE with the window's rkey       -> fails
 *   conn 3: FLUSH with the window's rkey       -> fails (when FLUSH exists)
 *   conn 4: READ with the region's own rkey    -> fails
 *   conn 0 again, after the responder invalidated the window (LOCAL_INV on
 *          the QP, or ibv_dealloc_mw with `dealloc`): READ -> fails
 *
 * Usage (in the guest, tests/vm/run-in-vm.sh): mw_probe [localinv|dealloc]
 * Environment: RXE_IP (the guest's rxe address), PROBE_DEVDAX=/dev/daxX.Y
 * (optional: the region is that device, registered FLUSH_PERSISTENT too),
 * PROBE_BENCH=N (optional: time N bind + LOCAL_INV pairs on one QP).
 * Exit: 0 every expectation met, 1 one failed (each named), 2 setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define NCONN 5
#define PORT "7471"
#define REGION (2u << 20)

struct info {
	uint64_t addr;
	uint32_t wrkey;		/* the window's */
	uint32_t mrkey;		/* the region's own */
	uint32_t flush;		/* the responder's QPs take FLUSH */
	uint32_t pad;
};

struct conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *msg_mr;
	char msg[64];
};

static int Failures;

static void
expect(int ok, const char *what)
{
	printf("mw_probe: %-62s %s\n", what, ok ? "ok" : "FAILED");
	if (!ok)
		Failures++;
}

static int
die(const char *what)
{
	fprintf(stderr, "mw_probe: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now_s(void);

/* one completion, at most 30 s (the RC retries of an unanswered request
 * end well before): its status, or -1 on timeout */
static int
poll_one(struct ibv_cq *cq, uint64_t *wr_id)
{
	struct ibv_wc wc;
	double end = now_s() + 30;
	while (now_s() < end) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1) {
			if (wr_id)
				*wr_id = wc.wr_id;
			return (int)wc.status;
		}
		usleep(10);
	}
	return -1;
}

static void
conn_qp(struct conn *c, struct ibv_pd *pd)
{
	c->cq = ibv_create_cq(c->id->verbs, 64, NULL, NULL, 0);
	if (!c->cq)
		die("ibv_create_cq");
	struct ibv_qp_init_attr_ex a;
	memset(&a, 0, sizeof(a));
	a.send_cq = a.recv_cq = c->cq;
	a.cap.max_send_wr = 32;
	a.cap.max_recv_wr = 8;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 1;
	a.pd = pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
		IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW |
		IBV_QP_EX_WITH_LOCAL_INV;
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	a.send_ops_flags |= IBV_QP_EX_WITH_FLUSH;
#endif
	if (rdma_create_qp_ex(c->id, &a)) {
		/* without the extended ops (no flush, no bind through wr_*) */
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		if (rdma_create_qp_ex(c->id, &a))
			die("rdma_create_qp_ex");
	} else {
		c->qpx = ibv_qp_to_qp_ex(c->id->qp);
	}
	c->qp = c->id->qp;
	c->msg_mr = ibv_reg_mr(pd, c->msg, sizeof(c->msg), IBV_ACCESS_LOCAL_WRITE);
	if (!c->msg_mr)
		die("ibv_reg_mr(msg)");
}

static void
post_recv(struct conn *c)
{
	struct ibv_sge sge = { (uintptr_t)c->msg, sizeof(c->msg), c->msg_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
	if (ibv_post_recv(c->qp, &wr, &bad))
		die("ibv_post_recv");
}

static int
send_msg(struct conn *c, const void *m, size_t len)
{
	memcpy(c->msg, m, len);
	struct ibv_sge sge = { (uintptr_t)c->msg, (uint32_t)len, c->msg_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	if (ibv_post_send(c->qp, &wr, &bad))
		die("ibv_post_send(send)");
	return poll_one(c->cq, NULL);
}

/* wait for the receive (wr_id 1) */
static int
recv_msg(struct conn *c)
{
	uint64_t id = 0;
	int st;
	do {
		st = poll_one(c->cq, &id);
	} while (st == 0 && id != 1);
	return st;
}

static void
allow_flush(struct conn *c)
{
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	struct ibv_qp_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		IBV_ACCESS_FLUSH_GLOBAL | IBV_ACCESS_FLUSH_PERSISTENT;
	if (ibv_modify_qp(c->qp, &attr, IBV_QP_ACCESS_FLAGS))
		fprintf(stderr, "mw_probe: ibv_modify_qp(flush access) failed\n");
#else
	(void) c;
#endif
}

static uint32_t
bind_mw(struct conn *c, struct ibv_mw *mw, struct ibv_mr *mr, void *buf,
		unsigned access, int *st)
{
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)buf;
	wr.bind_mw.bind_info.length = REGION;
	wr.bind_mw.bind_info.mw_access_flags = access;
	int err = ibv_post_send(c->qp, &wr, &bad);
	if (err) {
		fprintf(stderr, "mw_probe: post BIND_MW: %s\n", strerror(err));
		*st = -2;
		return 0;
	}
	*st = poll_one(c->cq, NULL);
	if (*st == 0)
		mw->rkey = rkey;
	return rkey;
}

static int
local_inv(struct conn *c, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 4;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	int err = ibv_post_send(c->qp, &wr, &bad);
	if (err) {
		fprintf(stderr, "mw_probe: post LOCAL_INV: %s\n", strerror(err));
		return -2;
	}
	return poll_one(c->cq, NULL);
}

static double
now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int
responder(int dealloc)
{
	struct rdma_addrinfo hints, *res;
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	const char *ip = getenv("RXE_IP") ? getenv("RXE_IP") : "10.11.12.1";
	if (rdma_getaddrinfo(ip, PORT, &hints, &res))
		die("rdma_getaddrinfo(passive)");
	struct rdma_cm_id *listen_id;
	if (rdma_create_ep(&listen_id, res, NULL, NULL))
		die("rdma_create_ep(listen)");
	if (rdma_listen(listen_id, NCONN))
		die("rdma_listen");

	struct conn c[NCONN];
	memset(c, 0, sizeof(c));
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_mw *mw = NULL;
	void *buf = NULL;
	const char *dax = getenv("PROBE_DEVDAX");
	unsigned waccess = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	int flush = 0;
#ifdef PMREP_HAVE_IBV_WR_FLUSH
	flush = 1;
	waccess |= IBV_ACCESS_FLUSH_GLOBAL;
	if (dax)
		waccess |= IBV_ACCESS_FLUSH_PERSISTENT;
#endif
	for (int i = 0; i < NCONN; i++) {
		if (rdma_get_request(listen_id, &c[i].id))
			die("rdma_get_request");
		if (!pd) {
			pd = ibv_alloc_pd(c[i].id->verbs);
			if (!pd)
				die("ibv_alloc_pd");
			if (dax) {
				int fd = open(dax, O_RDWR);
				if (fd < 0)
					die("open(devdax)");
				buf = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
						MAP_SHARED, fd, 0);
				if (buf == MAP_FAILED)
					die("mmap(devdax)");
				close(fd);
			} else {
				buf = aligned_alloc(4096, REGION);
			}
			memset(buf, 'T', REGION);
			unsigned maccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
#ifdef PMREP_HAVE_IBV_WR_FLUSH
			maccess |= IBV_ACCESS_FLUSH_GLOBAL;
			if (dax)
				maccess |= IBV_ACCESS_FLUSH_PERSISTENT;
#endif
			mr = ibv_reg_mr(pd, buf, REGION, (int)maccess);
			if (!mr) {
				fprintf(stderr, "mw_probe: ibv_reg_mr(0x%x): %s; retry without flush\n",
						maccess, strerror(errno));
				maccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
				mr = ibv_reg_mr(pd, buf, REGION, (int)maccess);
				if (!mr)
					die("ibv_reg_mr(region)");
			}
			printf("mw_probe: region %s, MR access 0x%x\n",
					dax ? dax : "DRAM", maccess);
			mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
			if (!mw)
				die("ibv_alloc_mw(type 2)");
		}
		conn_qp(&c[i], pd);
		post_recv(&c[i]);
		if (rdma_accept(c[i].id, NULL))
			die("rdma_accept");
		allow_flush(&c[i]);
		struct info in = { (uintptr_t)buf, 0, mr->rkey, (uint32_t)flush, 0 };
		if (i == 0) {
			int st;
			in.wrkey = bind_mw(&c[0], mw, mr, buf, waccess, &st);
			printf("mw_probe: bind type 2 window (access 0x%x) on QP %u: status %d (%s)\n",
					waccess, c[0].qp->qp_num, st,
					st >= 0 ? ibv_wc_status_str(st) : "post failed");
			if (st != 0 && (waccess & ~(unsigned)(IBV_ACCESS_REMOTE_READ |
					IBV_ACCESS_REMOTE_WRITE))) {
				/* the QP is in error now: report and stop */
				in.wrkey = 0;
			}
			if (getenv("PROBE_BENCH") && st == 0) {
				int n = atoi(getenv("PROBE_BENCH"));
				double t0 = now_s();
				int bad = 0;
				for (int k = 0; k < n; k++) {
					if (local_inv(&c[0], mw->rkey) != 0)
						bad++;
					int s2;
					(void) bind_mw(&c[0], mw, mr, buf, waccess, &s2);
					if (s2 != 0)
						bad++;
				}
				double t1 = now_s();
				printf("mw_probe: %d LOCAL_INV + BIND_MW pairs (each signalled, waited): %.1f us per pair, %d failed\n",
						n, (t1 - t0) * 1e6 / n, bad);
				t0 = now_s();
				for (int k = 0; k < n; k++) {
					struct ibv_mw *m2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
					if (!m2 || ibv_dealloc_mw(m2))
						bad++;
				}
				t1 = now_s();
				printf("mw_probe: %d ibv_alloc_mw + ibv_dealloc_mw pairs: %.1f us per pair\n",
						n, (t1 - t0) * 1e6 / n);
				in.wrkey = mw->rkey;
			}
		}
		int st = send_msg(&c[i], &in, sizeof(in));
		if (st != 0)
			fprintf(stderr, "mw_probe: info send on conn %d: %d\n", i, st);
	}
	/* conn 0: INV, then the window goes */
	if (recv_msg(&c[0]) == 0) {
		post_recv(&c[0]);
		int st = 0;
		if (dealloc) {
			st = ibv_dealloc_mw(mw);
			mw = NULL;
			printf("mw_probe: ibv_dealloc_mw of the bound window: %d\n", st);
		} else {
			st = local_inv(&c[0], mw->rkey);
			printf("mw_probe: LOCAL_INV of the bound window: status %d\n", st);
		}
		send_msg(&c[0], "DONE", 5);
		/* stay until the requester is done (END, or its close) */
		(void) recv_msg(&c[0]);
	}
	/* teardown errors are not what is probed */
	for (int i = 0; i < NCONN; i++)
		rdma_disconnect(c[i].id);
	if (mw)
		ibv_dealloc_mw(mw);
	return 0;
}

enum op { OP_READ, OP_WRITE, OP_FLUSH_GLOBAL, OP_FLUSH_PERSISTENT };

static int
rdma_op(struct conn *c, enum op op, uint32_t rkey, uint64_t raddr,
		void *lbuf, uint32_t lkey, uint32_t len)
{
	if (op == OP_FLUSH_GLOBAL || op == OP_FLUSH_PERSISTENT) {
#ifdef PMREP_HAVE_IBV_WR_FLUSH
		if (!c->qpx)
			return -3;
		ibv_wr_start(c->qpx);
		c->qpx->wr_id = 9;
		c->qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_flush(c->qpx, rkey, raddr, len,
				op == OP_FLUSH_GLOBAL ? IBV_FLUSH_GLOBAL :
				IBV_FLUSH_PERSISTENT, IBV_FLUSH_RANGE);
		int err = ibv_wr_complete(c->qpx);
		if (err) {
			fprintf(stderr, "mw_probe: ibv_wr_flush post: %s\n", strerror(err));
			return -2;
		}
		return poll_one(c->cq, NULL);
#else
		return -3;
#endif
	}
	struct ibv_sge sge = { (uintptr_t)lbuf, len, lkey };
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 8;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op == OP_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(c->qp, &wr, &bad))
		return -2;
	return poll_one(c->cq, NULL);
}

static const char *
st_str(int st)
{
	if (st >= 0)
		return ibv_wc_status_str((enum ibv_wc_status)st);
	return st == -1 ? "timeout" : st == -3 ? "no flush" : "post failed";
}

static int
requester(void)
{
	const char *ip = getenv("RXE_IP") ? getenv("RXE_IP") : "10.11.12.1";
	struct conn c[NCONN];
	struct info in[NCONN];
	memset(c, 0, sizeof(c));
	struct ibv_pd *pd = NULL;
	static char lbuf[4096];
	struct ibv_mr *lmr = NULL;

	for (int i = 0; i < NCONN; i++) {
		struct rdma_addrinfo hints, *res;
		memset(&hints, 0, sizeof(hints));
		hints.ai_port_space = RDMA_PS_TCP;
		int tries = 0;
		for (;;) {
			if (rdma_getaddrinfo(ip, PORT, &hints, &res))
				die("rdma_getaddrinfo");
			if (rdma_create_ep(&c[i].id, res, NULL, NULL))
				die("rdma_create_ep");
			if (!pd) {
				pd = ibv_alloc_pd(c[i].id->verbs);
				if (!pd)
					die("ibv_alloc_pd");
				lmr = ibv_reg_mr(pd, lbuf, sizeof(lbuf),
						IBV_ACCESS_LOCAL_WRITE);
				if (!lmr)
					die("ibv_reg_mr(local)");
			}
			conn_qp(&c[i], pd);
			post_recv(&c[i]);
			if (rdma_connect(c[i].id, NULL) == 0)
				break;
			if (++tries > 50)
				die("rdma_connect");
			rdma_destroy_qp(c[i].id);
			rdma_destroy_ep(c[i].id);
			usleep(100000);
		}
		if (recv_msg(&c[i]) != 0)
			die("info receive");
		memcpy(&in[i], c[i].msg, sizeof(in[i]));
		post_recv(&c[i]);
	}
	uint32_t wrkey = in[0].wrkey;
	uint64_t addr = in[0].addr;
	int flush = in[0].flush && c[0].qpx;
	int dax = getenv("PROBE_DEVDAX") != NULL;
	printf("mw_probe: window rkey 0x%x, region rkey 0x%x, flush %d\n",
			wrkey, in[0].mrkey, flush);
	expect(wrkey != 0, "the window was bound");
	int st;

	memset(lbuf, 'W', 64);
	st = rdma_op(&c[0], OP_WRITE, wrkey, addr + 128, lbuf, lmr->lkey, 64);
	printf("  conn 0 WRITE via window: %s\n", st_str(st));
	expect(st == 0, "the window's QP: RDMA WRITE succeeds");
	memset(lbuf, 0, 128);
	st = rdma_op(&c[0], OP_READ, wrkey, addr + 64, lbuf, lmr->lkey, 128);
	printf("  conn 0 READ via window: %s\n", st_str(st));
	expect(st == 0 && lbuf[0] == 'T' && lbuf[64] == 'W' && lbuf[127] == 'W',
			"the window's QP: RDMA READ succeeds, bytes as written");
	if (flush) {
		st = rdma_op(&c[0], OP_FLUSH_GLOBAL, wrkey, addr, NULL, 0, 4096);
		printf("  conn 0 FLUSH GLOBAL via window: %s\n", st_str(st));
		expect(st == 0, "the window's QP: RDMA FLUSH (GLOBAL) succeeds");
		if (dax) {
			st = rdma_op(&c[0], OP_FLUSH_PERSISTENT, wrkey, addr,
					NULL, 0, 4096);
			printf("  conn 0 FLUSH PERSISTENT via window: %s\n", st_str(st));
			expect(st == 0, "the window's QP: RDMA FLUSH (PERSISTENT) succeeds");
		}
	} else {
		printf("mw_probe: no native FLUSH here (rdma-core or device): not probed\n");
	}

	st = rdma_op(&c[1], OP_READ, wrkey, addr, lbuf, lmr->lkey, 64);
	printf("  conn 1 READ via window: %s\n", st_str(st));
	expect(st > 0, "another QP of the PD: READ via the window fails");
	memset(lbuf, 'X', 64);
	st = rdma_op(&c[2], OP_WRITE, wrkey, addr, lbuf, lmr->lkey, 64);
	printf("  conn 2 WRITE via window: %s\n", st_str(st));
	expect(st > 0, "another QP of the PD: WRITE via the window fails");
	if (flush) {
		st = rdma_op(&c[3], OP_FLUSH_GLOBAL, wrkey, addr, NULL, 0, 4096);
		printf("  conn 3 FLUSH via window: %s\n", st_str(st));
		expect(st > 0, "another QP of the PD: FLUSH via the window fails");
	}
	st = rdma_op(&c[4], OP_READ, in[0].mrkey, addr, lbuf, lmr->lkey, 64);
	printf("  conn 4 READ via the region's own rkey: %s\n", st_str(st));
	expect(st > 0, "the region's own rkey grants no READ");

	/* the window's own QP still works, then it is invalidated */
	memset(lbuf, 0, 64);
	st = rdma_op(&c[0], OP_READ, wrkey, addr, lbuf, lmr->lkey, 64);
	expect(st == 0 && lbuf[0] == 'T',
			"the window's QP still reads; the refused WRITE left no byte");
	send_msg(&c[0], "INV", 4);
	st = recv_msg(&c[0]);
	expect(st == 0, "the responder invalidated the window");
	st = rdma_op(&c[0], OP_READ, wrkey, addr, lbuf, lmr->lkey, 64);
	printf("  conn 0 READ after the invalidation: %s\n", st_str(st));
	expect(st > 0, "after the invalidation: READ via the window fails");
	/* (conn 0 is in the error state now: the responder waits for its
	 * END in vain and is ended by main) */
	for (int i = 0; i < NCONN; i++)
		rdma_disconnect(c[i].id);
	return Failures ? 1 : 0;
}

int
main(int argc, char **argv)
{
	int dealloc = argc > 1 && strcmp(argv[1], "dealloc") == 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		_exit(responder(dealloc));
	usleep(300000);
	int ret = requester();
	int status;
	for (int i = 0; i < 20 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(100000);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		(void) waitpid(pid, &status, 0);
	}
	printf("mw_probe: %d expectation(s) failed\n", Failures);
	return ret;
}
