/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_server.c -- the replica side: the server process forked at start
 * (a raw pmrep endpoint per RAW command, pmrep targets per TGT, the tcp
 * floor's echo thread; its commands and their replies over the control
 * socket), and targets in processes of their own (this program re-executed
 * with --target-child), which the quorum and resync sweeps freeze, kill
 * and restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pmrep/verbs.h>

#include "bench_int.h"

static int
tls_find(void *arg, const uint8_t *id, size_t len, const char *local,
		uint8_t *psk, size_t *psk_len)
{
	(void) arg;
	(void) local;
	if (len != 11 || memcmp(id, "pmrep-bench", 11) != 0)
		return -1;
	memcpy(psk, Tls_psk, sizeof(Tls_psk));
	*psk_len = sizeof(Tls_psk);
	return 0;
}

/* ---------------------------------------------------------------- server */

/* one raw endpoint of the server: a registered region and its conn */
struct raw_srv {
	struct pmrep_pmem *pmem;
	struct pmrep_mr_local *mr;
	struct pmrep_ep *ep;
	struct pmrep_conn *conn;
};

struct server {
	struct pmrep_peer *peer;
	/* raw level: one endpoint per replica of the fan-out */
	struct raw_srv raw[MAX_RAW];
	unsigned nraw;
	/* mirror level */
	struct pmrep_target *t[MAX_TARGETS];
	unsigned nt;
	int floor_lfd;
};

static void
shm_path(char *buf, size_t size, pid_t pid, const char *what, unsigned i)
{
	snprintf(buf, size, "/dev/shm/pmrep-bench-%ld-%s%u", (long)pid, what, i);
}

static int
server_peer(struct server *sv)
{
	if (sv->peer)
		return 0;
	if (O.prov == PMREP_PROVIDER_TCP)
		return pmrep_peer_new_tcp(&sv->peer);
	struct ibv_context *ctx;
	int ret = pmrep_utils_get_ibv_context(O.addr, true, &ctx);
	if (ret == 0)
		ret = pmrep_peer_new(ctx, &sv->peer);
	return ret;
}

static void
server_end(struct server *sv)
{
	char path[128];
	for (unsigned i = 0; i < MAX_RAW; i++) {
		struct raw_srv *w = &sv->raw[i];
		(void) pmrep_conn_delete(&w->conn);
		(void) pmrep_ep_shutdown(&w->ep);
		(void) pmrep_mr_dereg(&w->mr);
		if (w->pmem) {
			(void) pmrep_pmem_close(&w->pmem);
			shm_path(path, sizeof(path), getppid(), "raw", i);
			unlink(path);
		}
	}
	sv->nraw = 0;
	for (unsigned i = 0; i < sv->nt; i++) {
		(void) pmrep_target_delete(&sv->t[i]);
		shm_path(path, sizeof(path), getppid(), "t", i);
		unlink(path);
	}
	sv->nt = 0;
	(void) pmrep_peer_delete(&sv->peer);
}

/* RAW <remote size>: one more registered region, listen, accept one conn */
static int
server_raw(struct server *sv, size_t size, bool tls)
{
	char path[128];
	if (sv->nraw == MAX_RAW)
		return PMREP_E_INVAL;
	int ret = server_peer(sv);
	if (ret)
		return ret;
	struct raw_srv *w = &sv->raw[sv->nraw];
	shm_path(path, sizeof(path), getppid(), "raw", sv->nraw);
	sv->nraw++;
	unlink(path);
	ret = pmrep_pmem_open(path, PMREP_PMEM_CREATE, size,
			PMREP_PMEM_GRANULARITY_PAGE, &w->pmem);
	if (ret)
		return ret;
	ret = pmrep_mr_reg(sv->peer, pmrep_pmem_get_address(w->pmem), size,
			PMREP_MR_USAGE_WRITE_DST | PMREP_MR_USAGE_READ_SRC |
			PMREP_MR_USAGE_FLUSH_TYPE_PERSISTENT |
			PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY, &w->mr);
	if (ret)
		return ret;
	(void) pmrep_mr_set_persist_fn(w->mr, pmrep_pmem_persist_cb, w->pmem);
	ret = pmrep_ep_listen(sv->peer, O.addr, "0", &w->ep);
	if (ret)
		return ret;
	uint16_t port;
	(void) pmrep_ep_get_port(w->ep, &port);
	ctrl_send(Ctrl, "OK %u", port);

	struct pmrep_conn_req *req = NULL;
	struct pmrep_conn_cfg *acfg = NULL;
	if (tls && (pmrep_conn_cfg_new(&acfg) ||
			pmrep_conn_cfg_set_tls_psk_find(acfg, tls_find, NULL))) {
		(void) pmrep_conn_cfg_delete(&acfg);
		return PMREP_E_NOMEM;
	}
	ret = pmrep_ep_wait_conn_req(w->ep, acfg, OP_TIMEOUT_MS, &req);
	(void) pmrep_conn_cfg_delete(&acfg);
	if (ret)
		return ret;
	uint8_t pd_buf[PMREP_MR_DESC_SIZE + PMREP_PEER_CFG_DESC_SIZE];
	struct pmrep_peer_cfg *pcfg = NULL;
	(void) pmrep_mr_get_descriptor(w->mr, pd_buf);
	ret = pmrep_peer_cfg_new(&pcfg);
	if (ret) {
		(void) pmrep_conn_req_delete(&req);
		return ret;
	}
	/* the bench declares it so that verbs without RDMA FLUSH can use APM */
	(void) pmrep_peer_cfg_set_direct_write_to_pmem(pcfg, true);
	(void) pmrep_peer_cfg_get_descriptor(pcfg, pd_buf + PMREP_MR_DESC_SIZE);
	(void) pmrep_peer_cfg_delete(&pcfg);
	struct pmrep_conn_private_data pd = { pd_buf, sizeof(pd_buf) };
	ret = pmrep_conn_req_connect(&req, &pd, &w->conn);
	if (ret)
		return ret;
	enum pmrep_conn_event ev;
	ret = pmrep_conn_wait_event(w->conn, OP_TIMEOUT_MS, &ev);
	if (ret == 0 && ev != PMREP_CONN_ESTABLISHED)
		ret = PMREP_E_CONN_LOST;
	return ret;
}

/* a target on a fresh file at `path` (removed first, and on failure) */
static int
target_make_at(const char *path, uint64_t size, const char *addr,
		const char *port, bool fresh, struct pmrep_target **t)
{
	struct pmrep_target_cfg *cfg = NULL;
	if (fresh)
		unlink(path);
	int ret = pmrep_target_cfg_new(&cfg);
	if (ret == 0)
		ret = pmrep_target_cfg_set_path(cfg, path);
	if (ret == 0)
		ret = pmrep_target_cfg_set_data_size(cfg, size, true);
	if (ret == 0)
		ret = pmrep_target_cfg_set_address(cfg, addr, port);
	if (ret == 0)
		ret = pmrep_target_cfg_set_key(cfg, Key, sizeof(Key));
	if (ret == 0)
		ret = pmrep_target_cfg_set_direct_write_to_pmem(cfg, true);
	if (ret == 0)
		ret = pmrep_target_cfg_set_timeout(cfg, OP_TIMEOUT_MS);
	if (ret == 0 && (O.mirror_plain || getenv("PMREP_BENCH_PLAIN")))
		ret = pmrep_target_cfg_set_tls(cfg, false);
	if (ret == 0)
		ret = pmrep_target_new(cfg, t);
	(void) pmrep_target_cfg_delete(&cfg);
	if (ret && fresh)
		unlink(path);	/* it may have been created */
	return ret;
}

/* a target on a fresh file at `path` (removed first, and on failure),
 * on a port of the system's choice */
static int
target_make(const char *path, uint64_t size, const char *addr,
		struct pmrep_target **t)
{
	return target_make_at(path, size, addr, "0", true, t);
}

/* TGT <n> <data size>: n targets on fresh files */
static int
server_targets(struct server *sv, unsigned n, uint64_t size, char *reply,
		size_t rsize)
{
	size_t off = (size_t)snprintf(reply, rsize, "OK");
	for (unsigned i = 0; i < n && sv->nt < MAX_TARGETS; i++) {
		char path[128];
		unsigned idx = sv->nt;
		shm_path(path, sizeof(path), getppid(), "t", idx);
		int ret = target_make(path, size, O.addr, &sv->t[idx]);
		if (ret)
			return ret;
		sv->nt++;
		uint16_t port;
		(void) pmrep_target_get_port(sv->t[idx], &port);
		off += (size_t)snprintf(reply + off, rsize - off, " %u", port);
	}
	return 0;
}

int
server_main(int ctrl)
{
	struct server sv;
	memset(&sv, 0, sizeof(sv));
	Ctrl = ctrl;
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_ERROR);

	/* the tcp floor's socket, on the same address as pmrep's */
	int floor_port = 0;
	if (O.prov == PMREP_PROVIDER_TCP && O.floor) {
		struct sockaddr_in sa = { .sin_family = AF_INET };
		inet_pton(AF_INET, O.addr, &sa.sin_addr);
		sv.floor_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		socklen_t sl = sizeof(sa);
		if (sv.floor_lfd < 0 || bind(sv.floor_lfd, (void *)&sa, sizeof(sa)) ||
				listen(sv.floor_lfd, 1) ||
				getsockname(sv.floor_lfd, (void *)&sa, &sl)) {
			perror("pmrep-bench server: floor socket");
			return 1;
		}
		floor_port = ntohs(sa.sin_port);
	}
	ctrl_send(ctrl, "HELLO %d", floor_port);
	if (floor_port) {
		int fd = accept(sv.floor_lfd, NULL, NULL);
		if (fd < 0) {
			perror("pmrep-bench server: accept");
			return 1;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		close(sv.floor_lfd);
		if (floor_tcp_serve_start(fd))
			return 1;
	}

	for (;;) {
		struct pollfd p[1 + MAX_TARGETS];
		p[0] = (struct pollfd){ ctrl, POLLIN, 0 };
		for (unsigned i = 0; i < sv.nt; i++) {
			int fd = -1;
			(void) pmrep_target_get_fd(sv.t[i], &fd);
			p[1 + i] = (struct pollfd){ fd, POLLIN, 0 };
		}
		int k = poll(p, 1 + sv.nt, 100);
		if (k < 0 && errno != EINTR)
			break;
		for (unsigned i = 0; i < sv.nt; i++)
			if (p[1 + i].revents)
				(void) pmrep_target_process(sv.t[i], 0);
		if (!(p[0].revents & (POLLIN | POLLHUP)))
			continue;
		char line[256], reply[256];
		if (ctrl_recv(ctrl, line, sizeof(line), 1000))
			break;
		int ret = 0;
		unsigned n;
		unsigned long long sz;
		if (sscanf(line, "RAW %llu", &sz) == 1) {
			ret = server_raw(&sv, (size_t)sz,
					strstr(line, " TLS") != NULL);
			if (ret == 0)
				ctrl_send(ctrl, "OK");
		} else if (sscanf(line, "TGT %u %llu", &n, &sz) == 2) {
			ret = server_targets(&sv, n, sz, reply, sizeof(reply));
			if (ret == 0)
				ctrl_send(ctrl, "%s", reply);
		} else if (sscanf(line, "LOG %d", &k) == 1) {
			/* a mirror's close makes its target log the flushed
			 * receives of the ended connection as errors */
			if (getenv("PMREP_LOG_LEVEL") == NULL)
				pmrep_log_set_threshold((enum pmrep_log_level)k);
			ctrl_send(ctrl, "OK");
		} else if (strcmp(line, "CPU") == 0) {
			/* this process's use so far: the bench takes the
			 * difference around a measurement */
			struct cpu_use c;
			if (cpu_self(&c))
				ctrl_send(ctrl, "OK %llu %llu",
						(unsigned long long)c.ns,
						(unsigned long long)c.csw);
			else
				ctrl_send(ctrl, "ERR getrusage");
		} else if (strcmp(line, "END") == 0) {
			server_end(&sv);
			if (getenv("PMREP_LOG_LEVEL") == NULL)
				pmrep_log_set_threshold(PMREP_LOG_ERROR);
			ctrl_send(ctrl, "OK");
		} else if (strcmp(line, "QUIT") == 0) {
			break;
		} else {
			ctrl_send(ctrl, "ERR unknown command");
			continue;
		}
		if (ret) {
			ctrl_send(ctrl, "ERR %s: %s", pmrep_err_to_str(ret),
					pmrep_err_msg());
			server_end(&sv);
		}
	}
	server_end(&sv);
	floor_tcp_serve_join();
	return 0;
}

/* ---------------------------------- targets in processes of their own */

/* --target-child PATH SIZE ADDR [PORT]: never returns. With PORT: on
 * that port, the replica file at PATH kept as it is (a restart) */
void
target_child(int argc, char *argv[])
{
	struct pmrep_target *t = NULL;
	if (getenv("PMREP_LOG_LEVEL") == NULL)
		pmrep_log_set_threshold(PMREP_LOG_FATAL);
	int ret = target_make_at(argv[2], strtoull(argv[3], NULL, 0), argv[4],
			argc > 5 ? argv[5] : "0", argc <= 5, &t);
	if (ret) {
		printf("ERR %s: %s\n", pmrep_err_to_str(ret), pmrep_err_msg());
		fflush(stdout);
		_exit(1);
	}
	uint16_t port = 0;
	int fd = -1;
	(void) pmrep_target_get_port(t, &port);
	(void) pmrep_target_get_fd(t, &fd);
	printf("OK %u\n", port);
	fflush(stdout);
	for (;;) {
		struct pollfd p[2] = { { 0, POLLIN, 0 }, { fd, POLLIN, 0 } };
		if (poll(p, 2, 100) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			(void) pmrep_target_process(t, 0);
		if (p[0].revents) {
			char b[16];
			if (read(0, b, sizeof(b)) <= 0)
				break;
		}
	}
	(void) pmrep_target_delete(&t);
	unlink(argv[2]);
	_exit(0);
}

/* a target process on a fresh file (port NULL: the system's choice), or
 * (port set) restarted on that port with the file it left */
int
child_tgt_start_at(struct child_tgt *c, unsigned idx, size_t size,
		const char *at_port)
{
	int in[2], out[2];
	char self[PATH_MAX], sz[32], line[128], at[16];
	if (at_port) {	/* it may be c->port */
		snprintf(at, sizeof(at), "%s", at_port);
		at_port = at;
	}
	memset(c, 0, sizeof(*c));
	c->pid = -1;
	c->in_fd = -1;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	snprintf(c->path, sizeof(c->path), "/dev/shm/pmrep-bench-%ld-ct%u",
			(long)getpid(), idx);
	snprintf(sz, sizeof(sz), "%zu", size);
	if (pipe2(in, O_CLOEXEC))
		return -1;
	if (pipe2(out, O_CLOEXEC)) {
		close(in[0]);
		close(in[1]);
		return -1;
	}
	fflush(NULL);
	c->pid = fork();
	if (c->pid == 0) {
		/* a frozen orphan would stay forever: killed with us */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (at_port)
			execl(self, self, "--target-child", c->path, sz, O.addr,
					at_port, (char *)NULL);
		else
			execl(self, self, "--target-child", c->path, sz, O.addr,
					(char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in_fd = in[1];
	int ret = c->pid < 0 ? -1 : ctrl_recv(out[0], line, sizeof(line),
			OP_TIMEOUT_MS);
	close(out[0]);
	unsigned port;
	if (ret || sscanf(line, "OK %u", &port) != 1) {
		fprintf(stderr, "pmrep-bench: target process: %s\n",
				ret ? "no answer" : line);
		return -1;
	}
	snprintf(c->port, sizeof(c->port), "%u", port);
	return 0;
}

int
child_tgt_start(struct child_tgt *c, unsigned idx, size_t size)
{
	return child_tgt_start_at(c, idx, size, NULL);
}

void
child_tgt_end(struct child_tgt *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGCONT);
		if (c->in_fd >= 0)
			close(c->in_fd);
		reap(c->pid, 5000);
	} else if (c->in_fd >= 0) {
		close(c->in_fd);
	}
	c->pid = -1;
	c->in_fd = -1;
	if (c->path[0])
		unlink(c->path);
	c->path[0] = '\0';
}
