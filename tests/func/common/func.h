/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * func.h -- helpers of the functional tests: the provider under test
 * (PMREP_TEST_PROVIDER=tcp|verbs), a connected pair of conns in one
 * process, registered buffers, and bounded waits for events and
 * completions. Every helper asserts; a test never passes by timing out.
 */
#ifndef PMREP_FUNC_H
#define PMREP_FUNC_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <cmocka.h>

#include <pmrep/transport.h>

/* the sizes every op is tried at */
#define FUNC_NSIZES 7
extern const size_t func_sizes[FUNC_NSIZES];
#define FUNC_SIZE_MAX (1u << 20)

/* tcp (default) or verbs, from PMREP_TEST_PROVIDER */
bool func_is_tcp(void);
/* the address both sides use: 127.0.0.1, or RXE_IP (10.11.12.1) for verbs */
const char *func_addr(void);
/* multiply time limits by this (valgrind: PMREP_TEST_UNDER_VALGRIND) */
int func_slow(void);
/* skip the current test unless the provider is tcp */
#define FUNC_TCP_ONLY() do { if (!func_is_tcp()) skip(); } while (0)

/* a peer of the provider under test (server: is_local) */
struct pmrep_peer *func_peer(bool is_local);

/* page-aligned zeroed memory; free with free() */
void *func_alloc(size_t size);
/* the remote view of a local MR, through its descriptor */
struct pmrep_mr_remote *func_remote(const struct pmrep_mr_local *mr);

/* hooks run on each side's request before connect / accept */
typedef void func_req_fn(struct pmrep_conn_req *req, void *arg);

struct func_opts {
	const struct pmrep_conn_cfg *ccfg;	/* client (active); NULL: defaults */
	const struct pmrep_conn_cfg *scfg;	/* server (passive) */
	const struct pmrep_conn_private_data *cpdata;
	const struct pmrep_conn_private_data *spdata;
	func_req_fn *creq, *sreq;
	void *arg;
};

/* a client and a server, connected to each other in this process */
struct func_pair {
	struct pmrep_peer *cpeer, *speer;
	struct pmrep_ep *ep;
	struct pmrep_conn *cconn, *sconn;
	char port[16];
};

/* the two peers and the server's listening endpoint (p->port); no conns */
void func_pair_listen(struct func_pair *p);
/* listen, connect, accept, and see ESTABLISHED on both sides */
void func_pair_open(struct func_pair *p, const struct func_opts *o);
/* one more client conn to p's endpoint (from p's client peer) */
void func_connect(struct func_pair *p, const struct pmrep_conn_cfg *ccfg,
		const struct pmrep_conn_cfg *scfg, struct pmrep_conn **cconn,
		struct pmrep_conn **sconn);
/* delete conns, endpoint, peers (whatever is set) */
void func_pair_close(struct func_pair *p);

/* the next event must be `ev` within timeout_ms */
void func_expect_event(struct pmrep_conn *conn, enum pmrep_conn_event ev,
		int timeout_ms);
/* exactly one completion within timeout_ms (waits on the CQ's fd) */
struct pmrep_completion func_wait_one(struct pmrep_cq *cq, int timeout_ms);
/* up to n completions within timeout_ms; returns how many */
int func_collect(struct pmrep_cq *cq, struct pmrep_completion *out, int n,
		int timeout_ms);
/* no completion arrives within ms */
void func_expect_no_completion(struct pmrep_cq *cq, int ms);

/* a client buffer and a server buffer, registered, and the server's as
 * the client sees it */
struct func_mrs {
	size_t size;
	uint8_t *cbuf, *sbuf;
	struct pmrep_mr_local *cmr, *smr;
	struct pmrep_mr_remote *srmt;
};
void func_mrs_reg(struct func_mrs *m, const struct func_pair *p, size_t size,
		int server_usage);
void func_mrs_dereg(struct func_mrs *m);
/* delete both conns (nothing in flight afterwards), then the MRs (may be
 * NULL), then endpoint and peers */
void func_pair_close_all(struct func_pair *p, struct func_mrs *m);

/* a client's CQ / server's CQ */
struct pmrep_cq *func_cq(struct pmrep_conn *conn);
struct pmrep_cq *func_rcq(struct pmrep_conn *conn);	/* rcq, else cq */

/* fill with a pattern that differs per seed and per byte */
void func_pattern(void *buf, size_t len, unsigned seed);

long long func_now_ms(void);

/* tcp: a plain blocking TCP socket connected to 127.0.0.1:port, for tests
 * that speak (or withhold) the wire protocol themselves */
int func_raw_connect(const char *port);

/* remove a directory tree the test made (rm -rf): 0, or -1 when that failed */
int func_rm_rf(const char *dir);
/* write `len` bytes to a new file at path (0600), asserting each step */
void func_write_file(const char *path, const void *data, size_t len);

/* the build tree's root (this test executable is <root>/tests/<name>)
 * into buf: from /proc/self/exe, else argv0 */
void func_build_root(char *buf, size_t len, const char *argv0);

/* little-endian stores, for tests that craft wire bytes */
static inline void
func_put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
/* a plain TCP socket listening on 127.0.0.1, an ephemeral port (its
 * number in `port`): the kernel completes connections to it, nobody
 * accepts or answers them (a hung or stopped server). The caller closes
 * it. */
int func_mute_listener(char *port, size_t len);

#define func_put_le16(p, v) func_put_le((p), (v), 2)
#define func_put_le32(p, v) func_put_le((p), (v), 4)
#define func_put_le64(p, v) func_put_le((p), (v), 8)

#endif /* PMREP_FUNC_H */
