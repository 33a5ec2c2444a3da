/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_info.c -- a running target's sessions as its operators see them:
 * the listing (pmrep_target_get_sessions), the replica's header as held
 * (pmrep_target_get_replica_info), the event callback
 * (pmrep_target_set_event_fn), and what backs them: a session id unique in
 * the process (a random 32-bit prefix drawn once per process + a 64-bit
 * counter, so that lines of two daemons on one host or in one journal
 * never share one), the peer's address and port, the GPSPM persists with a
 * histogram of their service times (a few adds on the persist path), and
 * the log context "sid=... peer=..." of every line about a session.
 * Runs in the thread that drives the target (pmrep_target_process).
 */
#include <netdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "repl/wire/auth.h"
#include "target_int.h"

static atomic_uint_fast64_t next_id;
static atomic_uint prefix;		/* 0: not drawn yet */

static unsigned
process_prefix(void)
{
	unsigned p = atomic_load(&prefix);
	if (p != 0)
		return p;
	uint32_t r = 0;
	if (repl_random(&r, sizeof(r)) != 0 || r == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		r = (uint32_t)getpid() * 2654435761u ^ (uint32_t)ts.tv_nsec;
		if (r == 0)
			r = 1;
	}
	unsigned expect = 0;
	if (!atomic_compare_exchange_strong(&prefix, &expect, r))
		return expect;	/* another thread drew first */
	return r;
}

long long
target_info_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* "ADDR:PORT" ("[v6]:PORT") of the request's source; "unknown" */
static void
peer_str(const struct pmrep_conn_req *req, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	char host[NI_MAXHOST], serv[NI_MAXSERV];
	snprintf(buf, len, "unknown");
	if (req == NULL || pmrep_conn_req_get_src_addr(req, &ss) != 0)
		return;
	socklen_t sl = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		sizeof(struct sockaddr_in);
	if (getnameinfo((const struct sockaddr *)&ss, sl, host, sizeof(host),
			serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		return;
	snprintf(buf, len, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
			host, serv);
}

void
target_info_log_ctx(const struct session *s)
{
	if (s == NULL || s->info.id == 0) {
		pmrep_log_ctx_set(NULL);
		return;
	}
	char ctx[PMREP_LOG_CTX_MAX];
	snprintf(ctx, sizeof(ctx), "sid=%s peer=%s", s->info.id_str,
			s->info.peer);
	pmrep_log_ctx_set(ctx);
}

void
target_info_begin(struct pmrep_target *t, struct session *s,
		const struct pmrep_conn_req *req)
{
	(void)t;
	struct target_sinfo *in = &s->info;
	memset(in, 0, sizeof(*in));
	in->id = atomic_fetch_add(&next_id, 1) + 1;
	snprintf(in->id_str, sizeof(in->id_str), "%08x-%llu",
			process_prefix(), (unsigned long long)in->id);
	peer_str(req, in->peer, sizeof(in->peer));
	in->start_ms = repl_wall_ms();
	in->reported = S_FREE;
	target_info_log_ctx(s);
}

/* ---------------------------------------------------- the histogram */

static unsigned
bucket_of(uint64_t ns)
{
	if (ns < 4)
		return (unsigned)ns;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns);	/* >= 2 */
	if (e > 41)
		return SINFO_NBUCKETS - 1;
	unsigned sub = (unsigned)(ns >> (e - 2)) & 3u;
	return 4 + (e - 2) * 4 + sub;
}

/* the largest value of bucket b, ns */
static uint64_t
bucket_top(unsigned b)
{
	if (b < 4)
		return b;
	unsigned e = (b - 4) / 4 + 2, sub = (b - 4) % 4;
	return ((uint64_t)(5 + sub) << (e - 2)) - 1;
}

void
target_info_record(struct target_sinfo *in, uint64_t len, uint64_t ns)
{
	in->persists++;
	in->bytes += len;
	uint32_t *h = &in->hist[bucket_of(ns)];
	if (*h != UINT32_MAX)
		(*h)++;
}

void
target_info_persist(struct session *s, uint64_t len, long long t0_ns)
{
	long long d = target_info_now_ns() - t0_ns;
	target_info_record(&s->info, len, d > 0 ? (uint64_t)d : 0);
}

double
target_info_quantile_us(const struct target_sinfo *in, double q)
{
	uint64_t n = 0;
	for (unsigned b = 0; b < SINFO_NBUCKETS; b++)
		n += in->hist[b];
	if (n == 0)
		return 0;
	/* the rank: the smallest value at or above q of them all */
	uint64_t rank = (uint64_t)(q * (double)n);
	if ((double)rank < q * (double)n)
		rank++;
	if (rank == 0)
		rank = 1;
	uint64_t c = 0;
	for (unsigned b = 0; b < SINFO_NBUCKETS; b++) {
		c += in->hist[b];
		if (c >= rank)
			return (double)bucket_top(b) / 1000.0;
	}
	return (double)bucket_top(SINFO_NBUCKETS - 1) / 1000.0;
}

/* ------------------------------------------------------- snapshots */

static enum pmrep_target_session_state
pub_state(enum session_state st)
{
	switch (st) {
	case S_ATTACHING: return PMREP_TARGET_SESSION_ATTACHING;
	case S_ACTIVE: return PMREP_TARGET_SESSION_ACTIVE;
	case S_QUERY: return PMREP_TARGET_SESSION_QUERY;
	case S_CLOSING: return PMREP_TARGET_SESSION_CLOSING;
	default: return PMREP_TARGET_SESSION_HANDSHAKE;
	}
}

static void
snapshot(const struct pmrep_target *t, const struct session *s,
		struct pmrep_target_session *o)
{
	const struct target_sinfo *in = &s->info;
	memset(o, 0, sizeof(*o));
	o->id = in->id;
	memcpy(o->id_str, in->id_str, sizeof(o->id_str));
	memcpy(o->peer, in->peer, sizeof(o->peer));
	o->state = pub_state(s->state);
	o->key_id = s->key_id;
	o->generation = s->generation;
	o->primary_id = s->primary_id;
	o->mode = t->mode;
	o->gpspm_persists = in->persists;
	o->gpspm_bytes = in->bytes;
	o->persist_p50_us = target_info_quantile_us(in, 0.50);
	o->persist_p99_us = target_info_quantile_us(in, 0.99);
	o->persist_p999_us = target_info_quantile_us(in, 0.999);
	o->start_ms = in->start_ms;
}

static void
emit(struct pmrep_target *t, enum pmrep_target_event_type type,
		const struct session *s, const char *reason)
{
	if (t->info.fn == NULL)
		return;
	struct pmrep_target_session snap;
	struct pmrep_target_event ev = {
		.type = type, .generation = t->hdr.generation, .reason = reason,
	};
	if (s != NULL) {
		snapshot(t, s, &snap);
		ev.session = &snap;
	}
	t->info.fn(&ev, t->info.arg);
}

void
target_info_note(struct pmrep_target *t, struct session *s)
{
	if (s != NULL && s->state != S_FREE && s->info.id != 0 &&
			s->info.reported != (int)s->state) {
		enum pmrep_target_event_type type = PMREP_TARGET_EVENT_STATE;
		if (s->info.reported == S_FREE)
			type = PMREP_TARGET_EVENT_OPENED;
		else if (s->info.reported == S_WAIT_AUTH &&
				(s->state == S_ATTACHING || s->state == S_QUERY))
			type = PMREP_TARGET_EVENT_AUTHENTICATED;
		s->info.reported = (int)s->state;
		emit(t, type, s, NULL);
	}
	if (t->hdr.generation != t->info.gen_reported) {
		t->info.gen_reported = t->hdr.generation;
		emit(t, PMREP_TARGET_EVENT_GENERATION, NULL, NULL);
	}
}

void
target_info_closed(struct pmrep_target *t, struct session *s,
		const char *why)
{
	if (s->info.id == 0)
		return;
	/* a step it took just before (a refusal: CLOSING) is reported first */
	target_info_note(t, s);
	emit(t, PMREP_TARGET_EVENT_CLOSED, s, why);
}

/* -------------------------------------------------------------- API */

int
pmrep_target_get_sessions(const struct pmrep_target *target,
		struct pmrep_target_session *out, size_t max, size_t *count)
{
	if (target == NULL || count == NULL || (out == NULL && max > 0)) {
		PMREP_LOG_ERR("invalid argument: target or count is NULL, or out is NULL with max %zu",
				max);
		return PMREP_E_INVAL;
	}
	/* oldest first: by id */
	const struct session *order[TARGET_MAX_SESSIONS];
	size_t n = 0;
	for (int i = 0; i < TARGET_MAX_SESSIONS; i++) {
		const struct session *s = &target->s[i];
		if (s->state == S_FREE)
			continue;
		size_t j = n++;
		while (j > 0 && order[j - 1]->info.id > s->info.id) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = s;
	}
	for (size_t i = 0; i < n && i < max; i++)
		snapshot(target, order[i], &out[i]);
	*count = n;
	return 0;
}

const char *
pmrep_target_session_state_str(enum pmrep_target_session_state state)
{
	switch (state) {
	case PMREP_TARGET_SESSION_HANDSHAKE: return "handshake";
	case PMREP_TARGET_SESSION_ATTACHING: return "attaching";
	case PMREP_TARGET_SESSION_ACTIVE: return "active";
	case PMREP_TARGET_SESSION_QUERY: return "query";
	case PMREP_TARGET_SESSION_CLOSING: return "closing";
	default: return "unknown";
	}
}

int
pmrep_target_get_replica_info(const struct pmrep_target *target,
		struct pmrep_replica_info *info)
{
	if (target == NULL || info == NULL) {
		PMREP_LOG_ERR("invalid argument: target or info is NULL");
		return PMREP_E_INVAL;
	}
	const struct replica_hdr *h = &target->hdr;
	memset(info, 0, sizeof(*info));
	memcpy(info->uuid, h->uuid, PMREP_UUID_SIZE);
	info->data_offset = PMREP_REPLICA_DATA_OFFSET;
	info->data_size = h->data_size;
	info->generation = h->generation;
	info->flags = h->flags;
	memcpy(info->replica_id, h->replica_id, PMREP_UUID_SIZE);
	info->owner = h->owner;
	info->seq = h->seq;
	info->last_persist_seq = replica_pos_psn(target->base, h);
	return 0;
}

int
pmrep_target_set_event_fn(struct pmrep_target *target,
		pmrep_target_event_fn *fn, void *arg)
{
	if (target == NULL) {
		PMREP_LOG_ERR("invalid argument: target is NULL");
		return PMREP_E_INVAL;
	}
	target->info.fn = fn;
	target->info.arg = arg;
	target->info.gen_reported = target->hdr.generation;
	return 0;
}
