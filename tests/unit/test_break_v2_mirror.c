/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_break_v2_mirror.c -- the mirror against a lying or broken target,
 * protocol v2. The fake target below runs in a thread of this process
 * over the tcp provider, on the library's own channel and message codec
 * (src/repl/wire/chan.c, msg.c) but with its own behaviour: it authenticates
 * correctly (it holds the key), then answers COMMIT the way a test asks:
 * never, with the wrong sequence, with a REFUSE -- also one whose status
 * is OK --, by disconnecting; or it describes in ACCEPT a header that an
 * honest target never sends (a newer generation than the AUTH's).
 * In every case the mirror must not take the replica as attached: it is
 * never reported in sync and pmrep_mirror_new (every replica required)
 * fails. A control case (the fake answers as an honest target would)
 * shows that the fake is good enough to attach with.
 *
 * Found here (fixed in src/repl/wire/msg.c and src/repl/mirror/replica.c):
 *  - a REFUSE carrying status OK was taken as success: repl_status_to_err
 *    maps OK to 0, so a REFUSE(OK) answering COMMIT left replica_commit
 *    returning 0 without CONNECTED, the resync ran and the replica was
 *    reported IN_SYNC without any committed attach (the same REFUSE
 *    answering AUTH made replica_connect return 0 with no connection);
 *  - an ACCEPT describing a newer generation than the mirror's was
 *    resynced in full and attached: an honest target refuses such an AUTH
 *    (GENERATION), so it means a broken target, and a mirror of an older
 *    generation must not overwrite a newer one.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <pmrep/repl.h>
#include <pmrep/transport.h>

#include "repl/wire/auth.h"
#include "repl/wire/chan.h"
#include "repl/wire/msg.h"

#define SIZE (256u << 10)

static const uint8_t key[32] = "fake-target-key-0123456789-abcde";
static const uint8_t uuid[PMREP_UUID_SIZE] = { 0xfa, 0xce, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t rid[PMREP_UUID_SIZE] = { 0x1d, 0x1d, 0x1d, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

/* what the fake target does with the AUTH and the COMMIT it receives */
enum commit_reply {
	C_OK,			/* COMMIT_REPLY(OK), as an honest target */
	C_SILENT,		/* no answer, the connection stays */
	C_WRONG_SEQ,		/* COMMIT_REPLY(OK) to another sequence */
	C_REFUSE,		/* REFUSE(STATE), the connection stays */
	C_REFUSE_OK,		/* REFUSE with status OK, the connection stays */
	C_INTERNAL,		/* COMMIT_REPLY(INTERNAL), the connection stays */
	C_DISCONNECT,		/* the connection ends */
	C_DUP_ACCEPT,		/* the ACCEPT again instead of COMMIT_REPLY */
};

struct fake {
	/* the test's choices */
	enum commit_reply on_commit;
	bool refuse_ok_auth;	/* REFUSE(OK) answers AUTH */
	bool replay_accept;	/* every session gets the first session's ACCEPT */
	bool have_first;
	struct repl_msg first_accept;
	uint64_t hdr_generation;	/* the ACCEPT's header */
	uint32_t hdr_flags;
	uint32_t target_flags;
	bool claimed;		/* the header names our set (else unclaimed) */
	uint64_t other_owner;	/* non-zero: the header's owner (else ours) */
	int digest_lie;		/* DIGEST: 1 one digest short, 2 refused (RANGE) */
	/* its world */
	struct pmrep_peer *peer;
	struct pmrep_peer_cfg *pcfg;
	struct pmrep_conn_cfg *ccfg;
	struct pmrep_ep *ep;
	uint8_t *data;
	struct pmrep_mr_local *mr;
	char port[8];
	pthread_t th;
	atomic_bool stop;
	/* what it saw */
	atomic_int auths, commits, persists;
};

struct sess {
	struct repl_chan ch;
	struct pmrep_conn *conn;
	uint8_t nonce_i[REPL_NONCE_SIZE], nonce_t[REPL_NONCE_SIZE];
	struct repl_msg accept;
	bool open;
};

static void
sess_end(struct sess *s)
{
	if (!s->open)
		return;
	(void) pmrep_conn_disconnect(s->conn);
	(void) pmrep_conn_delete(&s->conn);
	repl_chan_fini(&s->ch);
	s->open = false;
}

static void
sess_accept(struct fake *f, struct sess *s, struct pmrep_conn_req *req)
{
	struct pmrep_conn_private_data pd;
	struct repl_pdata hello;
	assert_int_equal(pmrep_conn_req_get_private_data(req, &pd), 0);
	assert_int_equal(repl_pdata_decode(pd.ptr, pd.len, REPL_PDATA_HELLO, &hello), 0);
	memcpy(s->nonce_i, hello.nonce, REPL_NONCE_SIZE);
	assert_int_equal(repl_random(s->nonce_t, REPL_NONCE_SIZE), 0);
	struct repl_pdata chal = { .type = REPL_PDATA_CHALLENGE };
	memcpy(chal.nonce, s->nonce_t, REPL_NONCE_SIZE);
	uint8_t enc[REPL_PDATA_SIZE];
	size_t n = repl_pdata_encode(&chal, enc);
	assert_int_equal(repl_chan_init(&s->ch, f->peer), 0);
	assert_int_equal(repl_chan_post_recvs(&s->ch, req), 0);
	struct pmrep_conn_private_data out = { enc, (uint8_t)n };
	assert_int_equal(pmrep_conn_req_connect(&req, &out, &s->conn), 0);
	assert_int_equal(repl_chan_attach(&s->ch, s->conn), 0);
	s->open = true;
}

static void
on_msg(struct fake *f, struct sess *s, const struct repl_msg *m)
{
	struct repl_msg r = { .seq = m->seq };
	switch (m->type) {
	case REPL_MSG_AUTH: {
		atomic_fetch_add(&f->auths, 1);
		uint8_t mac[REPL_MAC_SIZE];
		assert_int_equal(repl_auth_mac(key, sizeof(key), s->nonce_i,
				s->nonce_t, &m->u.auth, mac), 0);
		assert_true(repl_mac_equal(mac, m->u.auth.mac));
		if (f->refuse_ok_auth) {
			r.type = REPL_MSG_REFUSE;
			r.status = REPL_ST_OK;
			break;
		}
		r.type = REPL_MSG_ACCEPT;
		struct repl_accept *a = &r.u.accept;
		assert_int_equal(pmrep_mr_get_descriptor(f->mr, a->mr_desc), 0);
		assert_int_equal(pmrep_peer_cfg_get_descriptor(f->pcfg, a->peer_cfg), 0);
		if (f->claimed)
			memcpy(a->uuid, uuid, PMREP_UUID_SIZE);
		memcpy(a->replica_id, rid, PMREP_UUID_SIZE);
		a->generation = f->hdr_generation;
		/* claimed by this mirror before (another owner at its generation,
		 * not closed, is split brain: refused by the mirror) */
		a->owner = f->other_owner ? f->other_owner : m->u.auth.primary_id;
		a->hdr_seq = 7;
		a->hdr_flags = f->hdr_flags;
		a->target_flags = f->target_flags;
		assert_int_equal(repl_accept_mac(key, sizeof(key), s->nonce_i,
				s->nonce_t, a, a->mac), 0);
		if (f->replay_accept && f->have_first) {
			/* a recorded ACCEPT, valid for another session's
			 * nonces */
			r = f->first_accept;
			r.seq = m->seq;
		} else if (!f->have_first) {
			f->first_accept = r;
			f->have_first = true;
		}
		s->accept = r;
		break;
	}
	case REPL_MSG_COMMIT:
		atomic_fetch_add(&f->commits, 1);
		switch (f->on_commit) {
		case C_OK:
			r.type = REPL_MSG_COMMIT_REPLY;
			break;
		case C_SILENT:
			return;
		case C_WRONG_SEQ:
			r.type = REPL_MSG_COMMIT_REPLY;
			r.seq = m->seq + 1;
			break;
		case C_REFUSE:
			r.type = REPL_MSG_REFUSE;
			r.status = REPL_ST_STATE;
			break;
		case C_REFUSE_OK:
			r.type = REPL_MSG_REFUSE;
			r.status = REPL_ST_OK;
			break;
		case C_INTERNAL:
			r.type = REPL_MSG_COMMIT_REPLY;
			r.status = REPL_ST_INTERNAL;
			break;
		case C_DISCONNECT:
			sess_end(s);
			return;
		case C_DUP_ACCEPT:
			r = s->accept;
			break;
		}
		break;
	case REPL_MSG_PERSIST:
		atomic_fetch_add(&f->persists, 1);
		r.type = REPL_MSG_PERSIST_REPLY;
		break;
	case REPL_MSG_CLOSE:
		r.type = REPL_MSG_CLOSE_REPLY;
		break;
	case REPL_MSG_DIGEST:
		/* honest: the digests of what it holds */
		r.type = REPL_MSG_DIGEST_REPLY;
		r.status = repl_digest_answer(f->data, SIZE, &m->u.digest,
				&r.u.digest_reply);
		if (f->digest_lie == 1 && r.u.digest_reply.count > 1)
			r.u.digest_reply.count--;
		if (f->digest_lie == 2) {
			r.status = REPL_ST_RANGE;
			memset(&r.u.digest_reply, 0, sizeof(r.u.digest_reply));
		}
		break;
	default:
		return;
	}
	(void) repl_chan_send(&s->ch, &r);
}

static void *
fake_loop(void *arg)
{
	struct fake *f = arg;
	struct sess s = { 0 };
	while (!atomic_load(&f->stop)) {
		struct pmrep_conn_req *req = NULL;
		int ret = pmrep_ep_next_conn_req(f->ep, f->ccfg, &req);
		if (ret == 0) {
			sess_end(&s);	/* one session at a time: the newest */
			sess_accept(f, &s, req);
		}
		if (!s.open) {
			usleep(5000);
			continue;
		}
		for (;;) {
			enum repl_chan_ev ev;
			struct repl_msg m;
			if (repl_chan_next(&s.ch, &ev, &m) != 0) {
				sess_end(&s);
				break;
			}
			if (ev == REPL_CHAN_NONE)
				break;
			if (ev == REPL_CHAN_MSG)
				on_msg(f, &s, &m);
			if (!s.open)
				break;
		}
		if (s.open && repl_chan_check_conn(&s.ch) != 0)
			sess_end(&s);
		if (s.open)
			(void) repl_chan_wait_cq(&s.ch, 5);
	}
	sess_end(&s);
	return NULL;
}

struct ctx {
	char dir[64];
	struct pmrep_pmem *src;
	struct fake f;
};

static int
setup(void **state)
{
	setenv("PMREP_PROVIDER", "tcp", 1);
	struct ctx *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	snprintf(c->dir, sizeof(c->dir), "/dev/shm/pmrep-test-bv2m-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/source", c->dir);
	assert_int_equal(pmrep_pmem_open(path, PMREP_PMEM_CREATE, SIZE,
			PMREP_PMEM_GRANULARITY_PAGE, &c->src), 0);
	memset(pmrep_pmem_get_address(c->src), 0x3c, SIZE);

	struct fake *f = &c->f;
	f->hdr_generation = 1;
	f->claimed = true;
	assert_int_equal(pmrep_peer_open("127.0.0.1", true, &f->peer), 0);
	assert_int_equal(pmrep_peer_cfg_new(&f->pcfg), 0);
	assert_int_equal(pmrep_conn_cfg_new(&f->ccfg), 0);
	(void) pmrep_conn_cfg_set_rq_size(f->ccfg, CHAN_NRECV);
	(void) pmrep_conn_cfg_set_sq_size(f->ccfg, 16);
	(void) pmrep_conn_cfg_set_cq_size(f->ccfg, 32);
	f->data = aligned_alloc(4096, SIZE);
	assert_non_null(f->data);
	memset(f->data, 0, SIZE);
	/* no PERSISTENT flush usage: the mirror uses GPSPM, so every persist
	 * step is a message the fake answers */
	assert_int_equal(pmrep_mr_reg(f->peer, f->data, SIZE,
			PMREP_MR_USAGE_WRITE_DST | PMREP_MR_USAGE_READ_SRC |
			PMREP_MR_USAGE_FLUSH_TYPE_VISIBILITY, &f->mr), 0);
	assert_int_equal(pmrep_ep_listen(f->peer, "127.0.0.1", "0", &f->ep), 0);
	uint16_t port;
	assert_int_equal(pmrep_ep_get_port(f->ep, &port), 0);
	snprintf(f->port, sizeof(f->port), "%u", port);
	*state = c;
	return 0;
}

static void
fake_run(struct fake *f)
{
	atomic_store(&f->stop, false);
	assert_int_equal(pthread_create(&f->th, NULL, fake_loop, f), 0);
}

static int
teardown(void **state)
{
	struct ctx *c = *state;
	struct fake *f = &c->f;
	atomic_store(&f->stop, true);
	pthread_join(f->th, NULL);
	(void) pmrep_ep_shutdown(&f->ep);
	(void) pmrep_mr_dereg(&f->mr);
	free(f->data);
	(void) pmrep_conn_cfg_delete(&f->ccfg);
	(void) pmrep_peer_cfg_delete(&f->pcfg);
	(void) pmrep_peer_delete(&f->peer);
	(void) pmrep_pmem_close(&c->src);
	char path[128];
	snprintf(path, sizeof(path), "%s/source", c->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/source.pmrep-state", c->dir);
	unlink(path);
	rmdir(c->dir);
	free(c);
	return 0;
}

/* pmrep_mirror_new against the fake (every replica required): its code;
 * *m the mirror when it was made */
static int
mirror_try(struct ctx *c, struct pmrep_mirror **m)
{
	struct pmrep_mirror_cfg *cfg;
	assert_int_equal(pmrep_mirror_cfg_new(&cfg), 0);
	assert_int_equal(pmrep_mirror_cfg_add_replica(cfg, "127.0.0.1", c->f.port), 0);
	assert_int_equal(pmrep_mirror_cfg_set_key(cfg, key, sizeof(key)), 0);
	/* the fake target speaks plaintext tcp (TLS: test_repl_tls.c) */
	assert_int_equal(pmrep_mirror_cfg_set_tls(cfg, false), 0);
	assert_int_equal(pmrep_mirror_cfg_set_uuid(cfg, uuid), 0);
	assert_int_equal(pmrep_mirror_cfg_set_timeout(cfg, 1500), 0);
	*m = NULL;
	int ret = pmrep_mirror_new(c->src, cfg, m);
	assert_int_equal(pmrep_mirror_cfg_delete(&cfg), 0);
	return ret;
}

/* the attach fails, the replica is never reported in sync and nothing
 * of the log was confirmed as persisted there */
static void
attach_must_fail(struct ctx *c)
{
	fake_run(&c->f);
	struct pmrep_mirror *m = NULL;
	int ret = mirror_try(c, &m);
	if (m != NULL) {
		struct pmrep_replica_status st;
		assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
		print_error("mirror made, replica 0 %s; persist %d\n",
				pmrep_replica_state_str(st.state),
				pmrep_mirror_persist(m, 0, 4096, 1000));
		(void) pmrep_mirror_delete(&m);
	}
	assert_int_not_equal(ret, 0);
	assert_null(m);
}

/* a resync by digests (the fake's replica: our set, another history)
 * whose DIGEST_REPLY does not answer what was asked fails the replica;
 * nothing is taken as equal */
static void
digest_reply_one_short_fails_the_attach(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_OK;
	c->f.digest_lie = 1;
	attach_must_fail(c);
}

static void
digest_reply_refused_fails_the_attach(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_OK;
	c->f.digest_lie = 2;
	attach_must_fail(c);
}

static void
fake_target_that_answers_honestly_is_attached(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_OK;
	fake_run(&c->f);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(mirror_try(c, &m), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(pmrep_mirror_persist(m, 0, 4096, 1500), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_int_equal(atomic_load(&c->f.commits), 1);
	assert_true(atomic_load(&c->f.persists) >= 2);
	/* the full resync copied the log */
	assert_memory_equal(c->f.data, pmrep_pmem_get_address(c->src), SIZE);
}

static void
refuse_with_status_ok_answering_commit_is_no_attach(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_REFUSE_OK;
	attach_must_fail(c);
	assert_int_equal(atomic_load(&c->f.commits), 1);
	/* no resync was started on an uncommitted attach */
	assert_int_equal(atomic_load(&c->f.persists), 0);
}

static void
refuse_with_status_ok_answering_auth_is_no_attach(void **state)
{
	struct ctx *c = *state;
	c->f.refuse_ok_auth = true;
	attach_must_fail(c);
	assert_int_equal(atomic_load(&c->f.commits), 0);
	assert_int_equal(atomic_load(&c->f.persists), 0);
}

static void
accept_of_a_newer_generation_is_not_attached(void **state)
{
	struct ctx *c = *state;
	/* the mirror is at generation 1; the "replica" says 5, consistent */
	c->f.hdr_generation = 5;
	c->f.hdr_flags = PMREP_REPLICA_F_CONSISTENT;
	attach_must_fail(c);
	/* refused before the COMMIT: nothing of it is claimed or written */
	assert_int_equal(atomic_load(&c->f.commits), 0);
	assert_int_equal(atomic_load(&c->f.persists), 0);
}

/* a target that lets us in although another primary claimed the replica
 * at our generation and did not close it (an honest one refuses: split
 * brain): not attached, nothing written; closed cleanly by that other
 * primary (CONSISTENT), it is a hand-over and attached */
static void
accept_of_another_primary_s_open_claim_is_split_brain(void **state)
{
	struct ctx *c = *state;
	c->f.hdr_generation = 1;
	c->f.claimed = true;
	c->f.other_owner = 0x0dd;
	c->f.on_commit = C_OK;
	fake_run(&c->f);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(mirror_try(c, &m), PMREP_E_SPLIT_BRAIN);
	assert_null(m);
	assert_int_equal(atomic_load(&c->f.commits), 0);
	assert_int_equal(atomic_load(&c->f.persists), 0);
	/* the same claim closed cleanly: a hand-over, attached */
	c->f.hdr_flags = PMREP_REPLICA_F_CONSISTENT;
	assert_int_equal(mirror_try(c, &m), 0);
	assert_non_null(m);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_true(atomic_load(&c->f.commits) >= 1);
}

static void
commit_reply_never_sent_is_no_attach(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_SILENT;
	attach_must_fail(c);
	assert_int_equal(atomic_load(&c->f.persists), 0);
}

static void
commit_reply_with_the_wrong_sequence_is_no_attach(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_WRONG_SEQ;
	attach_must_fail(c);
	assert_int_equal(atomic_load(&c->f.persists), 0);
}

static void
refuse_after_commit_is_no_attach(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_REFUSE;
	attach_must_fail(c);
	assert_int_equal(atomic_load(&c->f.persists), 0);
}

static void
commit_reply_internal_is_no_attach(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_INTERNAL;
	attach_must_fail(c);
	assert_int_equal(atomic_load(&c->f.persists), 0);
}

static void
disconnect_between_commit_and_commit_reply_is_no_attach(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_DISCONNECT;
	attach_must_fail(c);
	assert_int_equal(atomic_load(&c->f.persists), 0);
}

static void
accept_repeated_instead_of_commit_reply_is_no_attach(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_DUP_ACCEPT;
	attach_must_fail(c);
	assert_int_equal(atomic_load(&c->f.persists), 0);
}

static void
accept_replayed_from_another_session_is_refused(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_OK;
	c->f.replay_accept = true;
	fake_run(&c->f);
	/* the first attach is honest and records its ACCEPT */
	struct pmrep_mirror *m = NULL;
	assert_int_equal(mirror_try(c, &m), 0);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	int commits = atomic_load(&c->f.commits);
	/* the next one gets that ACCEPT again: its MAC binds the other
	 * session's nonces */
	assert_int_equal(mirror_try(c, &m), PMREP_E_AUTH);
	assert_null(m);
	assert_int_equal(atomic_load(&c->f.commits), commits);
}

static void
fresh_flag_with_a_consistent_mark_is_resynced_in_full(void **state)
{
	struct ctx *c = *state;
	/* "fresh" but claiming our set, generation and a consistent mark:
	 * the fresh flag wins, everything is copied */
	c->f.on_commit = C_OK;
	c->f.target_flags = REPL_TF_FRESH;
	c->f.hdr_flags = PMREP_REPLICA_F_CONSISTENT;
	fake_run(&c->f);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(mirror_try(c, &m), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.state, PMREP_REPLICA_IN_SYNC);
	assert_int_equal(st.resync_bytes, SIZE);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_memory_equal(c->f.data, pmrep_pmem_get_address(c->src), SIZE);
}

static void
accept_of_another_set_consistent_is_resynced_in_full(void **state)
{
	struct ctx *c = *state;
	c->f.on_commit = C_OK;
	c->f.claimed = false;	/* nil set, not fresh-flagged, consistent */
	c->f.hdr_flags = PMREP_REPLICA_F_CONSISTENT;
	fake_run(&c->f);
	struct pmrep_mirror *m = NULL;
	assert_int_equal(mirror_try(c, &m), 0);
	struct pmrep_replica_status st;
	assert_int_equal(pmrep_mirror_get_replica_status(m, 0, &st), 0);
	assert_int_equal(st.resync_bytes, SIZE);
	assert_int_equal(pmrep_mirror_delete(&m), 0);
	assert_memory_equal(c->f.data, pmrep_pmem_get_address(c->src), SIZE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fake_target_that_answers_honestly_is_attached, setup, teardown),
		cmocka_unit_test_setup_teardown(digest_reply_one_short_fails_the_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(digest_reply_refused_fails_the_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(refuse_with_status_ok_answering_commit_is_no_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(refuse_with_status_ok_answering_auth_is_no_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(accept_of_a_newer_generation_is_not_attached, setup, teardown),
		cmocka_unit_test_setup_teardown(accept_of_another_primary_s_open_claim_is_split_brain, setup, teardown),
		cmocka_unit_test_setup_teardown(commit_reply_never_sent_is_no_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(commit_reply_with_the_wrong_sequence_is_no_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(refuse_after_commit_is_no_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(commit_reply_internal_is_no_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(disconnect_between_commit_and_commit_reply_is_no_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(accept_repeated_instead_of_commit_reply_is_no_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(accept_replayed_from_another_session_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(fresh_flag_with_a_consistent_mark_is_resynced_in_full, setup, teardown),
		cmocka_unit_test_setup_teardown(accept_of_another_set_consistent_is_resynced_in_full, setup, teardown),
	};
	pmrep_log_set_threshold(getenv("TEST_LOG") ? PMREP_LOG_INFO : PMREP_LOG_DISABLED);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
