/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_raw.c -- the raw level: pmrep_write + pmrep_flush(PERSISTENT) on
 * one connection to an endpoint of the server (RAW), `qd` pairs in flight
 * (raw_run), plaintext or inside TLS, from heap memory or a pmem mapping;
 * and the same fanned out, one pair to each of k connections at once
 * (fan_run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmrep/verbs.h>

#include "bench_int.h"

bool Raw_tls;	/* raw_open: the next connection inside TLS */
/* raw_open: the next source is a pmem mapping in /dev/shm, as a mirror's
 * (else page-aligned heap memory) */
bool Raw_pmem_src;

/*
 * the raw level's write is a hint-able post: "more follows" (the flush),
 * so that a provider may ring one doorbell for both; built with and
 * without the flag in transport.h
 */
#ifdef PMREP_F_MORE
#define BENCH_F_MORE PMREP_F_MORE
#else
#define BENCH_F_MORE 0
#endif

/* ------------------------------------------------------------ raw level */

static int
client_peer(struct pmrep_peer **peer)
{
	if (O.prov == PMREP_PROVIDER_TCP)
		return pmrep_peer_new_tcp(peer);
	struct ibv_context *ctx;
	int ret = pmrep_utils_get_ibv_context(O.addr, false, &ctx);
	if (ret == 0)
		ret = pmrep_peer_new(ctx, peer);
	return ret;
}

/* the server's side goes with the next END */
void
raw_close(struct raw *r)
{
	if (r->conn) {
		(void) pmrep_conn_disconnect(r->conn);
		(void) pmrep_conn_delete(&r->conn);
	}
	(void) pmrep_mr_remote_delete(&r->rmr);
	(void) pmrep_mr_dereg(&r->src_mr);
	(void) pmrep_peer_delete(&r->peer);
	if (r->src_pmem) {
		(void) pmrep_pmem_close(&r->src_pmem);
		unlink(r->src_path);
	} else {
		free(r->src);
	}
	r->src = NULL;
}

int
raw_open(struct raw *r, size_t max_size)
{
	char reply[128];
	struct pmrep_conn_cfg *ccfg = NULL;
	struct pmrep_conn_req *req = NULL;
	struct pmrep_peer_cfg *pcfg = NULL;
	unsigned port;
	memset(r, 0, sizeof(*r));
	r->rsize = RAW_REMOTE_SIZE;
	if (ctrl_send(Ctrl, "RAW %zu%s", r->rsize, Raw_tls ? " TLS" : "") ||
			ctrl_recv(Ctrl, reply, sizeof(reply), OP_TIMEOUT_MS) ||
			sscanf(reply, "OK %u", &port) != 1) {
		fprintf(stderr, "pmrep-bench: raw server: %s\n", reply);
		return -1;
	}
	char sport[16];
	snprintf(sport, sizeof(sport), "%u", port);
	int ret = client_peer(&r->peer);
	if (ret)
		goto err;
	if (Raw_pmem_src) {
		snprintf(r->src_path, sizeof(r->src_path),
				"/dev/shm/pmrep-bench-%ld-rawsrc", (long)getpid());
		unlink(r->src_path);
		ret = pmrep_pmem_open(r->src_path, PMREP_PMEM_CREATE, max_size,
				PMREP_PMEM_GRANULARITY_PAGE, &r->src_pmem);
		if (ret)
			goto err;
		r->src = pmrep_pmem_get_address(r->src_pmem);
	} else if (posix_memalign(&r->src, 4096, max_size)) {
		ret = PMREP_E_NOMEM;
		goto err;
	}
	memset(r->src, 0xa5, max_size);
	ret = pmrep_mr_reg(r->peer, r->src, max_size,
			PMREP_MR_USAGE_WRITE_SRC | PMREP_MR_USAGE_READ_DST, &r->src_mr);
	if (ret)
		goto err;
	ret = pmrep_conn_cfg_new(&ccfg);
	if (ret)
		goto err;
	(void) pmrep_conn_cfg_set_timeout(ccfg, OP_TIMEOUT_MS);
	(void) pmrep_conn_cfg_set_sq_size(ccfg, 2 * MAX_QD + 4);
	(void) pmrep_conn_cfg_set_cq_size(ccfg, 2 * MAX_QD + 4);
	if (Raw_tls && (ret = pmrep_conn_cfg_set_tls_psk(ccfg, "pmrep-bench",
			Tls_psk, sizeof(Tls_psk))))
		goto err;
	ret = pmrep_conn_req_new(r->peer, O.addr, sport, ccfg, &req);
	if (ret)
		goto err;
	ret = pmrep_conn_req_connect(&req, NULL, &r->conn);
	if (ret)
		goto err;
	enum pmrep_conn_event ev;
	ret = pmrep_conn_wait_event(r->conn, OP_TIMEOUT_MS, &ev);
	if (ret == 0 && ev != PMREP_CONN_ESTABLISHED)
		ret = PMREP_E_CONN_LOST;
	if (ret)
		goto err;
	struct pmrep_conn_private_data pd;
	(void) pmrep_conn_get_private_data(r->conn, &pd);
	if (pd.len < PMREP_MR_DESC_SIZE + PMREP_PEER_CFG_DESC_SIZE) {
		ret = PMREP_E_MALFORMED;
		goto err;
	}
	ret = pmrep_mr_remote_from_descriptor(pd.ptr, PMREP_MR_DESC_SIZE, &r->rmr);
	if (ret == 0)
		ret = pmrep_peer_cfg_from_descriptor(
				(const uint8_t *)pd.ptr + PMREP_MR_DESC_SIZE,
				PMREP_PEER_CFG_DESC_SIZE, &pcfg);
	if (ret == 0)
		ret = pmrep_conn_apply_remote_peer_cfg(r->conn, pcfg);
	if (ret)
		goto err;
	(void) pmrep_conn_get_flush_method(r->conn, &r->method);
	(void) pmrep_conn_get_cq(r->conn, &r->cq);
	if (ctrl_recv(Ctrl, reply, sizeof(reply), OP_TIMEOUT_MS) ||
			strcmp(reply, "OK") != 0) {
		fprintf(stderr, "pmrep-bench: raw server: %s\n", reply);
		ret = PMREP_E_UNKNOWN;
		goto err;
	}
	(void) pmrep_peer_cfg_delete(&pcfg);
	(void) pmrep_conn_cfg_delete(&ccfg);
	return 0;
err:
	fprintf(stderr, "pmrep-bench: raw connection: %s (%s)\n",
			pmrep_err_to_str(ret), pmrep_err_msg());
	(void) pmrep_peer_cfg_delete(&pcfg);
	(void) pmrep_conn_req_delete(&req);
	(void) pmrep_conn_cfg_delete(&ccfg);
	raw_close(r);
	return -1;
}

static int
raw_post(struct raw *r, unsigned slot, size_t size, uint64_t seq)
{
	size_t nslots = r->rsize / size;
	size_t off = (size_t)(seq % nslots) * size;
	/* before posting: on rxe the post itself may run the whole op */
	r->t_post[slot] = bench_now_ns();
	int ret = pmrep_write(r->conn, r->rmr, off, r->src_mr, 0, size,
			PMREP_F_COMPLETION_ON_ERROR | BENCH_F_MORE, NULL);
	if (ret == 0)
		ret = pmrep_flush(r->conn, r->rmr, off, size,
				PMREP_FLUSH_TYPE_PERSISTENT,
				PMREP_F_COMPLETION_ALWAYS,
				(void *)(uintptr_t)(slot + 1));
	return ret;
}

/* wait for completions (busy-poll or on the CQ's fd) */
static int
take(struct pmrep_cq *cq, struct pmrep_completion *c, int max, int *n)
{
	uint64_t give_up = 0;
	for (;;) {
		int ret = pmrep_cq_get_completions(cq, c, max, n);
		if (ret != PMREP_E_NO_COMPLETION)
			return ret;
		if (!O.poll) {
			ret = pmrep_cq_wait(cq, 1000);
			if (ret && ret != PMREP_E_TIMEOUT)
				return ret;
		}
		uint64_t now = bench_now_ns();
		if (give_up == 0)
			give_up = now + (uint64_t)OP_TIMEOUT_MS * 1000000u;
		else if (now > give_up)
			return PMREP_E_TIMEOUT;
	}
}

/* `qd` write+flush pairs in flight for about `ms` */
int
raw_run(struct raw *r, size_t size, unsigned qd, int ms, struct bench_samples *s)
{
	struct pmrep_completion c[MAX_QD];
	uint64_t seq = 0;
	unsigned inflight = 0;
	int ret = 0;
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0;

	for (unsigned i = 0; i < qd; i++) {
		ret = raw_post(r, i, size, seq++);
		if (ret)
			goto fail;
		inflight++;
	}
	while (inflight > 0) {
		int n = 0;
		ret = take(r->cq, c, MAX_QD, &n);
		if (ret)
			goto fail;
		uint64_t now = bench_now_ns();
		bool more = now < end;
		for (int i = 0; i < n; i++) {
			if (c[i].status != PMREP_WC_SUCCESS) {
				fprintf(stderr, "pmrep-bench: completion error: %s\n",
						pmrep_wc_status_str(c[i].status));
				return -1;
			}
			unsigned slot = (unsigned)((uintptr_t)c[i].op_context - 1);
			s->all_ops++;
			if (r->t_post[slot] >= warm_end && more) {
				if (begin == 0)
					begin = r->t_post[slot];
				bench_samples_add(s, now - r->t_post[slot], size);
				s->elapsed_ns = now - begin;
			}
			inflight--;
			if (more) {
				ret = raw_post(r, slot, size, seq++);
				if (ret)
					goto fail;
				inflight++;
			}
		}
	}
	return 0;
fail:
	fprintf(stderr, "pmrep-bench: raw %zu B qd %u: %s (%s)\n", size, qd,
			pmrep_err_to_str(ret), pmrep_err_msg());
	return -1;
}

int
fan_run(struct fan *fa, size_t size, int ms, struct bench_samples *s)
{
	struct pmrep_completion c[4];
	uint64_t t0 = bench_now_ns();
	uint64_t warm_end = t0 + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	uint64_t begin = 0;
	for (uint64_t seq = 0;; seq++) {
		uint64_t a = bench_now_ns();
		if (a >= end)
			break;
		int ret = 0;
		for (unsigned i = 0; ret == 0 && i < fa->k; i++)
			ret = raw_post(&fa->r[i], 0, size, seq);
		for (unsigned i = 0; ret == 0 && i < fa->k; i++) {
			int n = 0;
			ret = take(fa->r[i].cq, c, 1, &n);
			if (ret == 0 && c[0].status != PMREP_WC_SUCCESS)
				ret = PMREP_E_CONN_LOST;
		}
		if (ret) {
			fprintf(stderr, "pmrep-bench: fan-out to %u: %s (%s)\n",
					fa->k, pmrep_err_to_str(ret), pmrep_err_msg());
			return -1;
		}
		uint64_t b = bench_now_ns();
		s->all_ops++;
		if (a >= warm_end) {
			if (begin == 0)
				begin = a;
			bench_samples_add(s, b - a, size);
			s->elapsed_ns = b - begin;
		}
	}
	return 0;
}

const char *
raw_method(const struct raw *r)
{
	switch (r->method) {
	case PMREP_FLUSH_METHOD_NATIVE: return "native";
	case PMREP_FLUSH_METHOD_APM: return "APM";
	default: return "none";
	}
}
