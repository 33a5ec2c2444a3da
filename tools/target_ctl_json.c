/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_ctl_json.c -- what the control socket says (target_ctl.c serves
 * it): the target, its replicas and sessions as JSON objects (status,
 * watch's events) and as a few lines of text (status text), written into
 * a growing buffer that records running out of memory instead of failing
 * each call.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target_ctl_int.h"

void
jb_put(struct jbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (p == NULL) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
jb_printf(struct jbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		jb_put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void
jb_str(struct jbuf *b, const char *s)
{
	JB_LIT(b, "\"");
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\') {
			char e[2] = { '\\', (char)*c };
			jb_put(b, e, 2);
		} else if (*c < 0x20 || *c == 0x7f) {
			jb_printf(b, "\\u%04x", *c);
		} else {
			jb_put(b, (const char *)c, 1);
		}
	}
	JB_LIT(b, "\"");
}

static void
uuid_hex(const uint8_t *u, char out[2 * PMREP_UUID_SIZE + 1])
{
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		snprintf(out + 2 * i, 3, "%02x", u[i]);
}

static const char *
mode_str(enum pmrep_target_mode m)
{
	return m == PMREP_TARGET_MODE_STAGING ? "staging" : "direct";
}

long long
wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
jb_session(struct jbuf *b, const struct pmrep_target_session *s,
		const char *replica)
{
	jb_printf(b, "{\"id\":\"%s\",\"serial\":%llu,\"replica\":", s->id_str,
			(unsigned long long)s->id);
	jb_str(b, replica);
	JB_LIT(b, ",\"peer\":");
	jb_str(b, s->peer);
	jb_printf(b, ",\"state\":\"%s\",\"key_id\":%u,\"generation\":%llu,"
			"\"primary_id\":\"%016llx\",\"mode\":\"%s\","
			"\"gpspm_persists\":%llu,\"gpspm_bytes\":%llu,"
			"\"persist_us\":{\"p50\":%.3f,\"p99\":%.3f,\"p999\":%.3f},"
			"\"start_ms\":%lld}",
			pmrep_target_session_state_str(s->state), s->key_id,
			(unsigned long long)s->generation,
			(unsigned long long)s->primary_id, mode_str(s->mode),
			(unsigned long long)s->gpspm_persists,
			(unsigned long long)s->gpspm_bytes,
			s->persist_p50_us, s->persist_p99_us, s->persist_p999_us,
			s->start_ms);
}

/* a target's counters as a JSON object's members (no braces) */
static void
jb_stats_members(struct jbuf *b, const struct pmrep_target_stats *st)
{
	jb_printf(b, "\"sessions_started\":%llu,\"sessions_accepted\":%llu,"
			"\"sessions_refused\":%llu,\"admission_refused\":%llu,"
			"\"admission_replayed\":%llu,\"admission_busy\":%llu,"
			"\"persist_requests\":%llu,\"sessions_in_use\":%u",
			(unsigned long long)st->sessions_started,
			(unsigned long long)st->sessions_accepted,
			(unsigned long long)st->sessions_refused,
			(unsigned long long)st->admission_refused,
			(unsigned long long)st->admission_replayed,
			(unsigned long long)st->admission_busy,
			(unsigned long long)st->persist_requests, st->sessions_in_use);
}

void
jb_replica(struct jbuf *b, const struct ctl_replica *r)
{
	struct pmrep_replica_info in;
	struct pmrep_target_stats st;
	enum pmrep_target_mode mode = PMREP_TARGET_MODE_DIRECT;
	(void) pmrep_target_get_replica_info(r->t, &in);
	(void) pmrep_target_get_stats(r->t, &st);
	(void) pmrep_target_get_mode(r->t, &mode);
	char u[2 * PMREP_UUID_SIZE + 1], rid[2 * PMREP_UUID_SIZE + 1];
	uuid_hex(in.uuid, u);
	uuid_hex(in.replica_id, rid);
	bool claimed = false;
	for (int i = 0; i < PMREP_UUID_SIZE; i++)
		claimed |= in.uuid[i] != 0;
	JB_LIT(b, "{\"name\":");
	jb_str(b, r->name);
	JB_LIT(b, ",\"path\":");
	jb_str(b, r->path);
	jb_printf(b, ",\"mode\":\"%s\",\"uuid\":\"%s\",\"claimed\":%s,\"generation\":%llu,"
			"\"owner\":\"%016llx\",\"consistent\":%s,\"flags\":%u,"
			"\"data_size\":%llu,\"replica_id\":\"%s\",\"header_seq\":%llu,"
			"\"last_persist_seq\":%llu,\"stats\":{",
			mode_str(mode), u, claimed ? "true" : "false",
			(unsigned long long)in.generation,
			(unsigned long long)in.owner,
			claimed && (in.flags & PMREP_REPLICA_F_CONSISTENT) ?
				"true" : "false",
			(unsigned)in.flags, (unsigned long long)in.data_size, rid,
			(unsigned long long)in.seq,
			(unsigned long long)in.last_persist_seq);
	jb_stats_members(b, &st);
	JB_LIT(b, "}}");
}

/* every attached replica's counters added up */
static void
stats_sum(const struct target_ctl *ctl, struct pmrep_target_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned i = 0; i < ctl->nr; i++) {
		struct pmrep_target_stats st;
		if (pmrep_target_get_stats(ctl->r[i]->t, &st) != 0)
			continue;
		sum->sessions_started += st.sessions_started;
		sum->sessions_accepted += st.sessions_accepted;
		sum->sessions_refused += st.sessions_refused;
		sum->admission_refused += st.admission_refused;
		sum->admission_replayed += st.admission_replayed;
		sum->admission_busy += st.admission_busy;
		sum->persist_requests += st.persist_requests;
		sum->sessions_in_use += st.sessions_in_use;
	}
}

/* the port listened on: the listener's, else the one target's */
static unsigned
ctl_port(const struct target_ctl *ctl)
{
	uint16_t port = 0;
	if (ctl->l != NULL)
		(void) pmrep_listener_get_port(ctl->l, &port);
	else if (ctl->nr > 0)
		(void) pmrep_target_get_port(ctl->r[0]->t, &port);
	return port;
}

/*
 * the target: one target (--path) with its mode; a listener (--config)
 * with how many replicas it serves and its own counters besides. stats:
 * the replicas' counters added up (one target: its own)
 */
void
jb_target(struct jbuf *b, const struct target_ctl *ctl)
{
	struct pmrep_target_stats st;
	stats_sum(ctl, &st);
	JB_LIT(b, "{\"address\":");
	jb_str(b, ctl->address);
	jb_printf(b, ",\"port\":%u,\"pid\":%ld,", ctl_port(ctl), (long)getpid());
	if (ctl->l == NULL) {
		enum pmrep_target_mode mode = PMREP_TARGET_MODE_DIRECT;
		if (ctl->nr > 0)
			(void) pmrep_target_get_mode(ctl->r[0]->t, &mode);
		jb_printf(b, "\"mode\":\"%s\",", mode_str(mode));
	} else {
		jb_printf(b, "\"replicas\":%u,", ctl->nr);
	}
	jb_printf(b, "\"time_ms\":%lld,\"stats\":{", wall_ms());
	jb_stats_members(b, &st);
	jb_printf(b, ",\"control_clients_dropped\":%llu,"
			"\"control_clients_idle_dropped\":%llu,"
			"\"control_clients_refused\":%llu",
			(unsigned long long)ctl->dropped,
			(unsigned long long)ctl->idle_dropped,
			(unsigned long long)ctl->refused);
	if (ctl->l != NULL) {
		struct pmrep_listener_stats ls = { 0 };
		(void) pmrep_listener_get_stats(ctl->l, &ls);
		jb_printf(b, ",\"requests_dispatched\":%llu,"
				"\"requests_no_replica\":%llu,\"requests_refused\":%llu",
				(unsigned long long)ls.requests_dispatched,
				(unsigned long long)ls.requests_no_replica,
				(unsigned long long)ls.requests_refused);
	}
	JB_LIT(b, "}}");
}

void
sessions(const struct ctl_replica *r, struct pmrep_target_session *s,
		size_t *n)
{
	size_t count = 0;
	(void) pmrep_target_get_sessions(r->t, s, CTL_MAX_SESSIONS, &count);
	*n = count < CTL_MAX_SESSIONS ? count : CTL_MAX_SESSIONS;
}

void
jb_status(struct jbuf *b, const struct target_ctl *ctl)
{
	static struct pmrep_target_session s[CTL_MAX_SESSIONS];
	JB_LIT(b, "{\"target\":");
	jb_target(b, ctl);
	JB_LIT(b, ",\"replicas\":[");
	for (unsigned i = 0; i < ctl->nr; i++) {
		if (i > 0)
			JB_LIT(b, ",");
		jb_replica(b, ctl->r[i]);
	}
	JB_LIT(b, "],\"sessions\":[");
	bool first = true;
	for (unsigned i = 0; i < ctl->nr; i++) {
		size_t n;
		sessions(ctl->r[i], s, &n);
		for (size_t j = 0; j < n; j++) {
			if (!first)
				JB_LIT(b, ",");
			first = false;
			jb_session(b, &s[j], ctl->r[i]->name);
		}
	}
	JB_LIT(b, "]}\n");
}

void
jb_status_text(struct jbuf *b, const struct target_ctl *ctl)
{
	static struct pmrep_target_session s[CTL_MAX_SESSIONS];
	struct pmrep_target_stats st;
	stats_sum(ctl, &st);
	jb_printf(b, "target %s:%u, pid %ld: ", ctl->address, ctl_port(ctl),
			(long)getpid());
	if (ctl->l != NULL)
		jb_printf(b, "%u replica%s, ", ctl->nr, ctl->nr == 1 ? "" : "s");
	jb_printf(b, "%llu sessions started, %llu refused, %llu GPSPM persists\n",
			(unsigned long long)st.sessions_started,
			(unsigned long long)st.sessions_refused,
			(unsigned long long)st.persist_requests);
	size_t total = 0;
	for (unsigned i = 0; i < ctl->nr; i++) {
		const struct ctl_replica *r = ctl->r[i];
		struct pmrep_replica_info in;
		(void) pmrep_target_get_replica_info(r->t, &in);
		if (ctl->l != NULL)
			jb_printf(b, "replica %s (%s)", r->name, r->path);
		else
			jb_printf(b, "replica %s", r->path);
		jb_printf(b, ": generation %llu, owner %016llx, %s\n",
				(unsigned long long)in.generation,
				(unsigned long long)in.owner,
				(in.flags & PMREP_REPLICA_F_CONSISTENT) ? "consistent" :
				"not marked consistent (a mirror may be writing)");
		size_t n;
		sessions(r, s, &n);
		total += n;
		for (size_t j = 0; j < n; j++) {
			jb_printf(b, "session %s", s[j].id_str);
			if (ctl->l != NULL)
				jb_printf(b, " on %s", r->name);
			jb_printf(b, " from %s: %s, generation %llu, %llu GPSPM persists (p50 %.1f us, p99 %.1f us, p999 %.1f us)\n",
					s[j].peer,
					pmrep_target_session_state_str(s[j].state),
					(unsigned long long)s[j].generation,
					(unsigned long long)s[j].gpspm_persists,
					s[j].persist_p50_us, s[j].persist_p99_us,
					s[j].persist_p999_us);
		}
	}
	if (ctl->nr == 0)
		jb_printf(b, "no replicas\n");
	if (total == 0)
		jb_printf(b, "no sessions\n");
}
