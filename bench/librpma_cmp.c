/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * librpma_cmp.c -- pmrep-bench-librpma: the same persist as pmrep-bench's
 * raw level (a write, then a PERSISTENT flush: APM, a read after the
 * write, since the server declares direct write to pmem), one at a time,
 * done with librpma on the same link, so that pmrep-bench can print
 * librpma's latency beside pmrep's.
 *
 * It forks its own server (a registered buffer; the MR and peer-cfg
 * descriptors go in the accept's private data), connects once, then
 *   --stdin:  prints "READY", reads "SIZE MS" lines and answers each with
 *             "OK ops secs p50_us p99_us p999_us mean_us" (pmrep-bench's use);
 *   otherwise measures --sizes (default 64,4096) for --ms each and prints
 *             one JSON line per size.
 * Completion: --wait poll (busy-poll rpma_cq_get_wc, default) or block
 * (rpma_cq_wait on the CQ's channel).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librpma.h>

#define BUF_SIZE (8u << 20)
#define MAX_SIZE (1u << 20)
#define WARMUP_MS 20
#define CAP (1u << 20)

static const char *Addr = "10.11.12.1";
static char Port[16];
static bool Poll = true;

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define CHECK(call) do { \
	int ret_ = (call); \
	if (ret_) { \
		fprintf(stderr, "pmrep-bench-librpma: %s: %s\n", #call, \
				rpma_err_2str(ret_)); \
		return 1; \
	} \
} while (0)

/* ----------------------------------------------------------- server */

static int
server(int ready_fd)
{
	struct ibv_context *dev;
	struct rpma_peer *peer;
	struct rpma_ep *ep;
	struct rpma_mr_local *mr;
	struct rpma_peer_cfg *pcfg;
	struct rpma_conn_req *req;
	struct rpma_conn *conn;
	enum rpma_conn_event ev;
	void *buf;

	if (posix_memalign(&buf, 4096, BUF_SIZE))
		return 1;
	memset(buf, 0, BUF_SIZE);
	CHECK(rpma_utils_get_ibv_context(Addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &dev));
	CHECK(rpma_peer_new(dev, &peer));
	CHECK(rpma_mr_reg(peer, buf, BUF_SIZE, RPMA_MR_USAGE_WRITE_DST |
			RPMA_MR_USAGE_READ_SRC |
			RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT, &mr));
	CHECK(rpma_peer_cfg_new(&pcfg));
	CHECK(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true));
	CHECK(rpma_ep_listen(peer, Addr, Port, &ep));
	if (write(ready_fd, "L", 1) != 1)
		return 1;
	close(ready_fd);

	/* private data: [mr desc size][pcfg desc size][mr desc][pcfg desc] */
	uint8_t pd[256];
	size_t mr_size, cfg_size;
	CHECK(rpma_mr_get_descriptor_size(mr, &mr_size));
	CHECK(rpma_peer_cfg_get_descriptor_size(pcfg, &cfg_size));
	if (2 + mr_size + cfg_size > sizeof(pd))
		return 1;
	pd[0] = (uint8_t)mr_size;
	pd[1] = (uint8_t)cfg_size;
	CHECK(rpma_mr_get_descriptor(mr, pd + 2));
	CHECK(rpma_peer_cfg_get_descriptor(pcfg, pd + 2 + mr_size));
	struct rpma_conn_private_data pdata = { pd, (uint8_t)(2 + mr_size + cfg_size) };

	CHECK(rpma_ep_next_conn_req(ep, NULL, &req));
	CHECK(rpma_conn_req_connect(&req, &pdata, &conn));
	CHECK(rpma_conn_next_event(conn, &ev));
	if (ev != RPMA_CONN_ESTABLISHED)
		return 1;
	/* the client works; wait for its end */
	(void) rpma_conn_next_event(conn, &ev);
	(void) rpma_conn_disconnect(conn);
	(void) rpma_conn_delete(&conn);
	(void) rpma_ep_shutdown(&ep);
	(void) rpma_peer_cfg_delete(&pcfg);
	(void) rpma_mr_dereg(&mr);
	(void) rpma_peer_delete(&peer);
	free(buf);
	return 0;
}

/* ----------------------------------------------------------- client */

struct client {
	struct rpma_peer *peer;
	struct rpma_conn *conn;
	struct rpma_cq *cq;
	struct rpma_mr_remote *rmr;
	struct rpma_mr_local *src_mr;
	void *src;
	uint64_t *lat;
};

static int
client_open(struct client *c)
{
	struct ibv_context *dev;
	struct rpma_conn_cfg *cfg;
	struct rpma_conn_req *req;
	struct rpma_peer_cfg *pcfg;
	enum rpma_conn_event ev;
	struct rpma_conn_private_data pd;

	if (posix_memalign(&c->src, 4096, MAX_SIZE))
		return 1;
	memset(c->src, 0xa5, MAX_SIZE);
	c->lat = malloc(CAP * sizeof(*c->lat));
	if (c->lat == NULL)
		return 1;
	CHECK(rpma_utils_get_ibv_context(Addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &dev));
	CHECK(rpma_peer_new(dev, &c->peer));
	CHECK(rpma_mr_reg(c->peer, c->src, MAX_SIZE, RPMA_MR_USAGE_WRITE_SRC,
			&c->src_mr));
	CHECK(rpma_conn_cfg_new(&cfg));
	CHECK(rpma_conn_cfg_set_timeout(cfg, 10000));
	CHECK(rpma_conn_cfg_set_sq_size(cfg, 16));
	CHECK(rpma_conn_cfg_set_cq_size(cfg, 16));
	CHECK(rpma_conn_req_new(c->peer, Addr, Port, cfg, &req));
	CHECK(rpma_conn_req_connect(&req, NULL, &c->conn));
	CHECK(rpma_conn_next_event(c->conn, &ev));
	if (ev != RPMA_CONN_ESTABLISHED) {
		fprintf(stderr, "pmrep-bench-librpma: connection %s\n",
				rpma_utils_conn_event_2str(ev));
		return 1;
	}
	CHECK(rpma_conn_get_private_data(c->conn, &pd));
	const uint8_t *p = pd.ptr;
	if (pd.len < 2 || pd.len < 2 + p[0] + p[1])
		return 1;
	CHECK(rpma_mr_remote_from_descriptor(p + 2, p[0], &c->rmr));
	CHECK(rpma_peer_cfg_from_descriptor(p + 2 + p[0], p[1], &pcfg));
	CHECK(rpma_conn_apply_remote_peer_cfg(c->conn, pcfg));
	(void) rpma_peer_cfg_delete(&pcfg);
	(void) rpma_conn_cfg_delete(&cfg);
	CHECK(rpma_conn_get_cq(c->conn, &c->cq));
	return 0;
}

static void
client_close(struct client *c)
{
	/* no wait for CLOSED: it may never come; the server is reaped */
	(void) rpma_conn_disconnect(c->conn);
	(void) rpma_conn_delete(&c->conn);
	(void) rpma_mr_remote_delete(&c->rmr);
	(void) rpma_mr_dereg(&c->src_mr);
	(void) rpma_peer_delete(&c->peer);
	free(c->src);
	free(c->lat);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double
pct(const uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)ceil(p * (double)n) - 1;
	return (double)v[i < n ? i : n - 1] / 1000.0;
}

/* one write + persistent flush at a time for about `ms` */
static int
client_run(struct client *c, size_t size, int ms, char *out, size_t outsz)
{
	size_t n = 0, nslots = BUF_SIZE / size;
	uint64_t ops = 0, begin = 0, last = 0;
	uint64_t warm_end = now_ns() + (uint64_t)WARMUP_MS * 1000000u;
	uint64_t end = warm_end + (uint64_t)ms * 1000000u;
	for (uint64_t seq = 0;; seq++) {
		size_t off = (size_t)(seq % nslots) * size;
		uint64_t a = now_ns();
		if (a >= end)
			break;
		CHECK(rpma_write(c->conn, c->rmr, off, c->src_mr, 0, size,
				RPMA_F_COMPLETION_ON_ERROR, NULL));
		CHECK(rpma_flush(c->conn, c->rmr, off, size,
				RPMA_FLUSH_TYPE_PERSISTENT,
				RPMA_F_COMPLETION_ALWAYS, NULL));
		struct ibv_wc wc;
		int got = 0;
		for (;;) {
			int ret = rpma_cq_get_wc(c->cq, 1, &wc, &got);
			if (ret == 0)
				break;
			if (ret != RPMA_E_NO_COMPLETION) {
				fprintf(stderr, "pmrep-bench-librpma: rpma_cq_get_wc: %s\n",
						rpma_err_2str(ret));
				return 1;
			}
			if (!Poll)
				CHECK(rpma_cq_wait(c->cq));
		}
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "pmrep-bench-librpma: completion %s\n",
					ibv_wc_status_str(wc.status));
			return 1;
		}
		uint64_t b = now_ns();
		if (a >= warm_end) {
			if (begin == 0)
				begin = a;
			if (n < CAP)
				c->lat[n++] = b - a;
			ops++;
			last = b;
		}
	}
	if (n == 0)
		return 1;
	qsort(c->lat, n, sizeof(*c->lat), cmp_u64);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)c->lat[i];
	snprintf(out, outsz, "%llu %.6f %.3f %.3f %.3f %.3f",
			(unsigned long long)ops, (double)(last - begin) / 1e9,
			pct(c->lat, n, 0.5), pct(c->lat, n, 0.99),
			pct(c->lat, n, 0.999), sum / (double)n / 1000.0);
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct option lo[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "wait", required_argument, NULL, 'w' },
		{ "sizes", required_argument, NULL, 's' },
		{ "ms", required_argument, NULL, 'm' },
		{ "stdin", no_argument, NULL, 'i' },
		{ 0, 0, 0, 0 },
	};
	const char *sizes = "64,4096";
	int ms = 500;
	bool from_stdin = false;
	int ch;
	snprintf(Port, sizeof(Port), "%d", 20000 + (int)(getpid() % 20000));
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'a': Addr = optarg; break;
		case 'p': snprintf(Port, sizeof(Port), "%s", optarg); break;
		case 'w': Poll = strcmp(optarg, "block") != 0; break;
		case 's': sizes = optarg; break;
		case 'm': ms = atoi(optarg); break;
		case 'i': from_stdin = true; break;
		default:
			fprintf(stderr, "usage: pmrep-bench-librpma [--addr IP] [--port N] "
					"[--wait poll|block] [--sizes LIST] [--ms N] [--stdin]\n");
			return 2;
		}
	}
	(void) rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_ERROR);

	int rp[2];
	if (pipe(rp))
		return 1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(rp[0]);
		_exit(server(rp[1]));
	}
	close(rp[1]);
	char c;
	if (read(rp[0], &c, 1) != 1) {
		fprintf(stderr, "pmrep-bench-librpma: the server did not start\n");
		waitpid(pid, NULL, 0);
		return 1;
	}
	close(rp[0]);

	struct client cl;
	memset(&cl, 0, sizeof(cl));
	int ret = client_open(&cl);
	if (ret) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return 1;
	}
	char res[256];
	if (from_stdin) {
		char line[128];
		printf("READY\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin) != NULL) {
			size_t size;
			int t;
			if (sscanf(line, "%zu %d", &size, &t) != 2 || size == 0 ||
					size > MAX_SIZE || t <= 0) {
				printf("ERR bad request\n");
			} else if (client_run(&cl, size, t, res, sizeof(res))) {
				printf("ERR run failed\n");
			} else {
				printf("OK %s\n", res);
			}
			fflush(stdout);
		}
	} else {
		char *dup = strdup(sizes), *save = NULL;
		for (char *tok = strtok_r(dup, ",", &save); tok && ret == 0;
				tok = strtok_r(NULL, ",", &save)) {
			size_t size = (size_t)strtoull(tok, NULL, 0);
			if (size == 0 || size > MAX_SIZE)
				continue;
			ret = client_run(&cl, size, ms, res, sizeof(res));
			if (ret)
				break;
			unsigned long long ops;
			double secs, p50, p99, p999, mean;
			sscanf(res, "%llu %lf %lf %lf %lf %lf", &ops, &secs, &p50,
					&p99, &p999, &mean);
			printf("{\"bench\":\"librpma\",\"wait\":\"%s\",\"size\":%zu,"
					"\"ops\":%llu,\"secs\":%.3f,\"p50_us\":%.3f,"
					"\"p99_us\":%.3f,\"p999_us\":%.3f,\"mean_us\":%.3f}\n",
					Poll ? "poll" : "block", size, ops, secs, p50,
					p99, p999, mean);
		}
		free(dup);
	}
	client_close(&cl);
	/* the server ends on the disconnect; bounded all the same */
	int st;
	for (int i = 0; i < 300 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(10000);
	if (waitpid(pid, &st, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	return ret ? 1 : 0;
}
