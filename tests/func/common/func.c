/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * func.c -- helpers of the functional tests (see func.h).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <pmrep/verbs.h>

#include "func.h"

const size_t func_sizes[FUNC_NSIZES] = {
	1, 64, 1024, 1025, 4096, 65536, 1u << 20,
};

bool
func_is_tcp(void)
{
	const char *p = getenv("PMREP_TEST_PROVIDER");
	return p == NULL || strcmp(p, "verbs") != 0;
}

const char *
func_addr(void)
{
	if (func_is_tcp())
		return "127.0.0.1";
	const char *ip = getenv("RXE_IP");
	return ip != NULL && ip[0] != '\0' ? ip : "10.11.12.1";
}

int
func_slow(void)
{
	const char *v = getenv("PMREP_TEST_UNDER_VALGRIND");
	return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0 ? 10 : 1;
}

long long
func_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
func_raw_connect(const char *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)atoi(port));
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

struct pmrep_peer *
func_peer(bool is_local)
{
	struct pmrep_peer *peer = NULL;
	if (func_is_tcp()) {
		assert_int_equal(pmrep_peer_new_tcp(&peer), 0);
	} else {
		struct ibv_context *ctx = NULL;
		assert_int_equal(pmrep_utils_get_ibv_context(func_addr(),
				is_local, &ctx), 0);
		assert_int_equal(pmrep_peer_new(ctx, &peer), 0);
	}
	enum pmrep_provider prov;
	assert_int_equal(pmrep_peer_get_provider(peer, &prov), 0);
	assert_int_equal(prov, func_is_tcp() ? PMREP_PROVIDER_TCP :
			PMREP_PROVIDER_VERBS);
	return peer;
}

void *
func_alloc(size_t size)
{
	void *p = NULL;
	assert_int_equal(posix_memalign(&p, 4096, size), 0);
	memset(p, 0, size);
	return p;
}

struct pmrep_mr_remote *
func_remote(const struct pmrep_mr_local *mr)
{
	uint8_t desc[PMREP_MR_DESC_SIZE];
	struct pmrep_mr_remote *r = NULL;
	assert_int_equal(pmrep_mr_get_descriptor(mr, desc), 0);
	assert_int_equal(pmrep_mr_remote_from_descriptor(desc, sizeof(desc),
			&r), 0);
	return r;
}

static void func_connect_with(struct func_pair *p, const struct func_opts *o,
		struct pmrep_conn **cconn, struct pmrep_conn **sconn);

void
func_pair_listen(struct func_pair *p)
{
	memset(p, 0, sizeof(*p));
	p->speer = func_peer(true);
	p->cpeer = func_peer(false);
	assert_int_equal(pmrep_ep_listen(p->speer, func_addr(), "0", &p->ep), 0);
	uint16_t port = 0;
	assert_int_equal(pmrep_ep_get_port(p->ep, &port), 0);
	assert_true(port != 0);
	snprintf(p->port, sizeof(p->port), "%u", port);
}

void
func_pair_open(struct func_pair *p, const struct func_opts *o)
{
	static const struct func_opts none;
	func_pair_listen(p);
	func_connect_with(p, o ? o : &none, &p->cconn, &p->sconn);
}

void
func_connect(struct func_pair *p, const struct pmrep_conn_cfg *ccfg,
		const struct pmrep_conn_cfg *scfg, struct pmrep_conn **cconn,
		struct pmrep_conn **sconn)
{
	struct func_opts o = { .ccfg = ccfg, .scfg = scfg };
	func_connect_with(p, &o, cconn, sconn);
}

static void
func_connect_with(struct func_pair *p, const struct func_opts *o,
		struct pmrep_conn **cconn, struct pmrep_conn **sconn)
{
	int slow = func_slow();
	struct pmrep_conn_req *creq = NULL;
	assert_int_equal(pmrep_conn_req_new(p->cpeer, func_addr(), p->port,
			o->ccfg, &creq), 0);
	if (o->creq)
		o->creq(creq, o->arg);
	assert_int_equal(pmrep_conn_req_connect(&creq, o->cpdata, cconn), 0);
	assert_null(creq);

	struct pmrep_conn_req *sreq = NULL;
	assert_int_equal(pmrep_ep_wait_conn_req(p->ep, o->scfg, 5000 * slow,
			&sreq), 0);
	if (o->sreq)
		o->sreq(sreq, o->arg);
	assert_int_equal(pmrep_conn_req_connect(&sreq, o->spdata, sconn), 0);
	assert_null(sreq);

	func_expect_event(*cconn, PMREP_CONN_ESTABLISHED, 5000 * slow);
	func_expect_event(*sconn, PMREP_CONN_ESTABLISHED, 5000 * slow);
}

void
func_pair_close(struct func_pair *p)
{
	assert_int_equal(pmrep_conn_delete(&p->cconn), 0);
	assert_int_equal(pmrep_conn_delete(&p->sconn), 0);
	assert_int_equal(pmrep_ep_shutdown(&p->ep), 0);
	assert_int_equal(pmrep_peer_delete(&p->cpeer), 0);
	assert_int_equal(pmrep_peer_delete(&p->speer), 0);
}

void
func_mrs_reg(struct func_mrs *m, const struct func_pair *p, size_t size,
		int server_usage)
{
	memset(m, 0, sizeof(*m));
	m->size = size;
	m->cbuf = func_alloc(size);
	m->sbuf = func_alloc(size);
	assert_int_equal(pmrep_mr_reg(p->cpeer, m->cbuf, size,
			PMREP_MR_USAGE_ALL, &m->cmr), 0);
	assert_int_equal(pmrep_mr_reg(p->speer, m->sbuf, size, server_usage,
			&m->smr), 0);
	m->srmt = func_remote(m->smr);
}

void
func_mrs_dereg(struct func_mrs *m)
{
	assert_int_equal(pmrep_mr_remote_delete(&m->srmt), 0);
	assert_int_equal(pmrep_mr_dereg(&m->cmr), 0);
	assert_int_equal(pmrep_mr_dereg(&m->smr), 0);
	free(m->cbuf);
	free(m->sbuf);
	m->cbuf = m->sbuf = NULL;
}

void
func_pair_close_all(struct func_pair *p, struct func_mrs *m)
{
	assert_int_equal(pmrep_conn_delete(&p->cconn), 0);
	assert_int_equal(pmrep_conn_delete(&p->sconn), 0);
	if (m != NULL)
		func_mrs_dereg(m);
	func_pair_close(p);
}

void
func_expect_event(struct pmrep_conn *conn, enum pmrep_conn_event ev,
		int timeout_ms)
{
	enum pmrep_conn_event got = PMREP_CONN_UNDEFINED;
	int ret = pmrep_conn_wait_event(conn, timeout_ms, &got);
	if (ret != 0 || got != ev)
		fail_msg("expected event %s, got %s (ret %s)",
				pmrep_conn_event_str(ev),
				pmrep_conn_event_str(got),
				pmrep_err_to_str(ret));
}

int
func_collect(struct pmrep_cq *cq, struct pmrep_completion *out, int n,
		int timeout_ms)
{
	long long deadline = func_now_ms() + timeout_ms;
	int got = 0;
	while (got < n) {
		int k = 0;
		int ret = pmrep_cq_get_completions(cq, out + got, n - got, &k);
		if (ret == 0) {
			got += k;
			continue;
		}
		assert_int_equal(ret, PMREP_E_NO_COMPLETION);
		long long left = deadline - func_now_ms();
		if (left <= 0)
			break;
		ret = pmrep_cq_wait(cq, left < 50 ? (int)left : 50);
		if (ret == PMREP_E_SHARED_CHANNEL)
			usleep(1000);
		else if (ret != PMREP_E_TIMEOUT)
			assert_int_equal(ret, 0);
	}
	return got;
}

struct pmrep_completion
func_wait_one(struct pmrep_cq *cq, int timeout_ms)
{
	struct pmrep_completion c;
	memset(&c, 0, sizeof(c));
	if (func_collect(cq, &c, 1, timeout_ms * func_slow()) != 1)
		fail_msg("no completion within %d ms", timeout_ms * func_slow());
	return c;
}

void
func_expect_no_completion(struct pmrep_cq *cq, int ms)
{
	struct pmrep_completion c;
	int n = func_collect(cq, &c, 1, ms);
	if (n != 0)
		fail_msg("unexpected completion: ctx %p status %s", c.op_context,
				pmrep_wc_status_str(c.status));
}

struct pmrep_cq *
func_cq(struct pmrep_conn *conn)
{
	struct pmrep_cq *cq = NULL;
	assert_int_equal(pmrep_conn_get_cq(conn, &cq), 0);
	assert_non_null(cq);
	return cq;
}

struct pmrep_cq *
func_rcq(struct pmrep_conn *conn)
{
	struct pmrep_cq *cq = NULL;
	assert_int_equal(pmrep_conn_get_rcq(conn, &cq), 0);
	return cq != NULL ? cq : func_cq(conn);
}

void
func_pattern(void *buf, size_t len, unsigned seed)
{
	uint8_t *b = buf;
	uint32_t x = seed * 2654435761u + 12345u;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

void
func_build_root(char *buf, size_t len, const char *argv0)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		snprintf(buf, len, "%s", argv0);
	else
		buf[n] = '\0';
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(buf, '/');
		if (slash)
			*slash = '\0';
	}
}

int
func_rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

void
func_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

int
func_mute_listener(char *port, size_t len)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s, 16), 0);
	socklen_t al = sizeof(a);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
	snprintf(port, len, "%u", ntohs(a.sin_port));
	return s;
}
