/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_ctl.c -- pmrep-target's control socket: a local AF_UNIX stream
 * socket (mode 0600, or 0660 with a group) that answers, read-only:
 *   status       one JSON object on one line (the target, its replicas,
 *                each with its name, its sessions, each with its
 *                replica's name), then the server closes;
 *   status text  the same for people, a few lines, then closes;
 *   watch        first the current state as "exists" events and an
 *                {"event":"exists","object":"-"} end mark, then one JSON
 *                line per event (opened, authenticated, state, generation,
 *                closed) as they happen, until the client goes.
 * A command is one line of at most CTL_CMD_MAX bytes; anything else gets
 * an {"error":...} line (a line too long: the error, then the close).
 * The daemon never waits for a client: every socket is non-blocking, a
 * client's pending output is bounded (CTL_OUT_MAX) and a client that lets
 * it overflow (it does not read) is dropped. Nothing here changes the
 * target. It serves the targets attached (one: --path; or the replicas
 * of a listener: --config, attached and detached as SIGHUP adds and
 * removes them). Single-threaded: called from pmrep-target's poll loop
 * (and from pmrep_target_process / pmrep_listener_process, through the
 * event callback).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "target_ctl.h"

#define CTL_MAX_CLIENTS 16
#define CTL_CMD_MAX 256
#define CTL_OUT_MAX (256 * 1024)
#define CTL_MAX_SESSIONS 64
#define TAG_LISTEN UINT64_MAX

struct client {
	int fd;				/* -1: free */
	char in[CTL_CMD_MAX + 1];
	size_t in_len;
	char *out;
	size_t out_len, out_cap;
	bool watching;
	bool close_when_sent;
	bool want_out;			/* EPOLLOUT registered */
};

/* an attached target: its event callback's argument */
struct ctl_replica {
	struct target_ctl *ctl;
	struct pmrep_target *t;
	char *name;			/* the HELLO's selector ("" none) */
	char *path;			/* its file */
};

struct target_ctl {
	int lfd, epfd;
	char *path;
	dev_t dev;
	ino_t ino;			/* the socket file we made */
	struct ctl_replica **r;		/* attached, in the order attached */
	unsigned nr, cap;
	const struct pmrep_listener *l;	/* config mode: the endpoint's */
	bool accepting;			/* lfd in the epoll set */
	char *address;
	const char *path_one;		/* target_ctl_attach's replica path */
	struct client c[CTL_MAX_CLIENTS];
	uint64_t dropped;		/* clients dropped for not reading */
};

/* ---------------------------------------------------- JSON text */

struct jbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void
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

/* a string literal */
#define JB_LIT(b, lit) jb_put((b), (lit), sizeof(lit) - 1)

static void __attribute__((format(printf, 2, 3)))
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

/* s as a JSON string (quote, backslash, control characters escaped) */
static void
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

static long long
wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
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

static void
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
static void
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
	jb_printf(b, ",\"control_clients_dropped\":%llu",
			(unsigned long long)ctl->dropped);
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

/* replica r's sessions (at most CTL_MAX_SESSIONS); *n: how many */
static void
sessions(const struct ctl_replica *r, struct pmrep_target_session *s,
		size_t *n)
{
	size_t count = 0;
	(void) pmrep_target_get_sessions(r->t, s, CTL_MAX_SESSIONS, &count);
	*n = count < CTL_MAX_SESSIONS ? count : CTL_MAX_SESSIONS;
}

static void
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

static void
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

/* ------------------------------------------------------- clients */

static void
client_drop(struct target_ctl *ctl, struct client *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(ctl->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* write what is pending, as much as the socket takes now */
static void
client_flush(struct target_ctl *ctl, struct client *c)
{
	size_t off = 0;
	while (off < c->out_len) {
		ssize_t w = send(c->fd, c->out + off, c->out_len - off,
				MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0) {
			client_drop(ctl, c);
			return;
		}
		off += (size_t)w;
	}
	memmove(c->out, c->out + off, c->out_len - off);
	c->out_len -= off;
	if (c->out_len == 0 && c->close_when_sent) {
		client_drop(ctl, c);
		return;
	}
	bool want = c->out_len > 0;
	if (want != c->want_out) {
		struct epoll_event ev = { .events = EPOLLIN | (want ? EPOLLOUT : 0),
			.data.u64 = (uint64_t)(c - ctl->c) };
		epoll_ctl(ctl->epfd, EPOLL_CTL_MOD, c->fd, &ev);
		c->want_out = want;
	}
}

/* queue `len` bytes for the client and write what it takes; a client
 * whose queue would pass CTL_OUT_MAX does not read: dropped */
static void
client_send(struct target_ctl *ctl, struct client *c, const char *p,
		size_t len)
{
	if (c->fd < 0)
		return;
	if (c->out_len + len > CTL_OUT_MAX) {
		ctl->dropped++;
		fprintf(stderr, "pmrep-target: control client dropped: %zu bytes of its output not read\n",
				c->out_len);
		client_drop(ctl, c);
		return;
	}
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < c->out_len + len)
			cap *= 2;
		char *o = realloc(c->out, cap);
		if (o == NULL) {
			client_drop(ctl, c);
			return;
		}
		c->out = o;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, p, len);
	c->out_len += len;
	client_flush(ctl, c);
}

static void
client_send_jb(struct target_ctl *ctl, struct client *c, struct jbuf *b)
{
	static const char oom[] = "{\"error\":\"out of memory\"}\n";
	if (b->oom)
		client_send(ctl, c, oom, sizeof(oom) - 1);
	else
		client_send(ctl, c, b->p, b->len);
	free(b->p);
	*b = (struct jbuf){ 0 };
}

static void
client_error(struct target_ctl *ctl, struct client *c, const char *what,
		const char *cmd)
{
	struct jbuf b = { 0 };
	JB_LIT(&b, "{\"error\":");
	jb_str(&b, what);
	if (cmd != NULL) {
		JB_LIT(&b, ",\"command\":");
		jb_str(&b, cmd);
	}
	JB_LIT(&b, "}\n");
	client_send_jb(ctl, c, &b);
}

static void
watch_start(struct target_ctl *ctl, struct client *c)
{
	static struct pmrep_target_session s[CTL_MAX_SESSIONS];
	size_t n;
	struct jbuf b = { 0 };
	jb_printf(&b, "{\"event\":\"exists\",\"object\":\"target\",\"time_ms\":%lld,\"target\":",
			wall_ms());
	jb_target(&b, ctl);
	JB_LIT(&b, "}\n");
	for (unsigned i = 0; i < ctl->nr; i++) {
		jb_printf(&b, "{\"event\":\"exists\",\"object\":\"replica\",\"time_ms\":%lld,\"replica\":",
				wall_ms());
		jb_replica(&b, ctl->r[i]);
		JB_LIT(&b, "}\n");
	}
	for (unsigned i = 0; i < ctl->nr; i++) {
		sessions(ctl->r[i], s, &n);
		for (size_t j = 0; j < n; j++) {
			jb_printf(&b, "{\"event\":\"exists\",\"object\":\"session\",\"time_ms\":%lld,\"session\":",
					wall_ms());
			jb_session(&b, &s[j], ctl->r[i]->name);
			JB_LIT(&b, "}\n");
		}
	}
	JB_LIT(&b, "{\"event\":\"exists\",\"object\":\"-\"}\n");
	c->watching = true;
	client_send_jb(ctl, c, &b);
}

static void
client_command(struct target_ctl *ctl, struct client *c, char *cmd)
{
	size_t n = strlen(cmd);
	while (n > 0 && (cmd[n - 1] == '\r' || cmd[n - 1] == ' ' ||
			cmd[n - 1] == '\t'))
		cmd[--n] = '\0';
	while (*cmd == ' ' || *cmd == '\t')
		cmd++;
	struct jbuf b = { 0 };
	if (strcmp(cmd, "status") == 0) {
		jb_status(&b, ctl);
		c->close_when_sent = true;
		client_send_jb(ctl, c, &b);
	} else if (strcmp(cmd, "status text") == 0) {
		jb_status_text(&b, ctl);
		c->close_when_sent = true;
		client_send_jb(ctl, c, &b);
	} else if (strcmp(cmd, "watch") == 0) {
		if (!c->watching)
			watch_start(ctl, c);
	} else if (cmd[0] != '\0') {
		client_error(ctl, c, "unknown command (the commands: status, status text, watch)",
				cmd);
	}
}

static void
client_read(struct target_ctl *ctl, struct client *c)
{
	for (;;) {
		if (c->fd < 0 || c->close_when_sent)
			return;
		ssize_t r = recv(c->fd, c->in + c->in_len,
				CTL_CMD_MAX - c->in_len, MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {	/* gone (a watcher's EOF: it stopped) */
			client_drop(ctl, c);
			return;
		}
		c->in_len += (size_t)r;
		c->in[c->in_len] = '\0';
		char *nl;
		while (c->fd >= 0 && !c->close_when_sent &&
				(nl = memchr(c->in, '\n', c->in_len)) != NULL) {
			*nl = '\0';
			/* a NUL inside: the command is what comes before it */
			client_command(ctl, c, c->in);
			if (c->fd < 0)
				return;
			size_t used = (size_t)(nl + 1 - c->in);
			memmove(c->in, nl + 1, c->in_len - used);
			c->in_len -= used;
			c->in[c->in_len] = '\0';
		}
		if (c->fd >= 0 && c->in_len == CTL_CMD_MAX) {
			c->close_when_sent = true;
			client_error(ctl, c, "command too long (at most 256 bytes, one line)", NULL);
			return;
		}
	}
}

static void
accept_clients(struct target_ctl *ctl)
{
	for (;;) {
		int fd = accept4(ctl->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;		/* EAGAIN, or a client gone already */
		struct client *c = NULL;
		for (int i = 0; i < CTL_MAX_CLIENTS && c == NULL; i++)
			if (ctl->c[i].fd < 0)
				c = &ctl->c[i];
		if (c == NULL) {
			static const char busy[] = "{\"error\":\"too many control clients\"}\n";
			(void) !send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		c->fd = fd;
		struct epoll_event ev = { .events = EPOLLIN,
			.data.u64 = (uint64_t)(c - ctl->c) };
		if (epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			c->fd = -1;
		}
	}
}

/* -------------------------------------------------------- events */

static const char *const event_names[] = {
	"opened", "authenticated", "state", "closed", "generation",
};

/* the line `b` to every watcher */
static void
watchers_send(struct target_ctl *ctl, struct jbuf *b)
{
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		struct client *c = &ctl->c[i];
		if (c->fd >= 0 && c->watching && !b->oom)
			client_send(ctl, c, b->p, b->len);
	}
	free(b->p);
	*b = (struct jbuf){ 0 };
}

static bool
any_watcher(const struct target_ctl *ctl)
{
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		if (ctl->c[i].fd >= 0 && ctl->c[i].watching)
			return true;
	return false;
}

static void
on_event(const struct pmrep_target_event *ev, void *arg)
{
	struct ctl_replica *r = arg;
	struct target_ctl *ctl = r->ctl;
	if (!any_watcher(ctl))
		return;
	struct jbuf b = { 0 };
	jb_printf(&b, "{\"event\":\"%s\",\"time_ms\":%lld,\"replica\":",
			(unsigned)ev->type < 5 ? event_names[ev->type] : "unknown",
			wall_ms());
	jb_str(&b, r->name);
	jb_printf(&b, ",\"generation\":%llu", (unsigned long long)ev->generation);
	if (ev->session != NULL) {
		JB_LIT(&b, ",\"session\":");
		jb_session(&b, ev->session, r->name);
	}
	if (ev->reason != NULL) {
		JB_LIT(&b, ",\"reason\":");
		jb_str(&b, ev->reason);
	}
	JB_LIT(&b, "}\n");
	watchers_send(ctl, &b);
}

/* ---------------------------------------------------------- server */

/* the path is free (nothing there, or a stale socket removed): 0; else 1 */
static int
path_free(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : 1;
	if (!S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "pmrep-target: --control %s: a file that is not a socket is there; not replaced\n",
				path);
		return 1;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int live = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (live || (e != ECONNREFUSED && e != ENOENT)) {
		fprintf(stderr, "pmrep-target: --control %s: %s\n", path, live ?
				"a live control socket (another pmrep-target?); not replaced" :
				strerror(e));
		return 1;
	}
	/* stale: its daemon is gone */
	if (unlink(path) != 0 && errno != ENOENT) {
		fprintf(stderr, "pmrep-target: --control %s: removing the stale socket: %s\n",
				path, strerror(errno));
		return 1;
	}
	return 0;
}

int
target_ctl_open(const char *path, const char *group,
		const struct target_ctl_about *about, struct target_ctl **ctl_ptr)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "pmrep-target: --control %s: longer than %zu bytes\n",
				path, sizeof(sa.sun_path) - 1);
		return 1;
	}
	gid_t gid = (gid_t)-1;
	if (group != NULL) {
		struct group *g = getgrnam(group);
		if (g == NULL) {
			fprintf(stderr, "pmrep-target: --control-group %s: no such group\n",
					group);
			return 1;
		}
		gid = g->gr_gid;
	}
	if (path_free(path))
		return 1;
	struct target_ctl *ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL || (ctl->path = strdup(path)) == NULL ||
			(ctl->address = strdup(about->address)) == NULL) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		if (ctl != NULL)
			free(ctl->path);
		free(ctl);
		return 1;
	}
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		ctl->c[i].fd = -1;
	ctl->path_one = about->path;
	ctl->epfd = epoll_create1(EPOLL_CLOEXEC);
	ctl->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	/* made 0600 (umask 077): no one else may connect before the chmod */
	mode_t old = umask(077);
	int b = ctl->lfd >= 0 ? bind(ctl->lfd, (struct sockaddr *)&sa, sizeof(sa)) : -1;
	int e = errno;
	umask(old);
	struct stat st;
	const char *what = NULL;
	if (ctl->epfd < 0)
		what = "epoll_create1";
	else if (ctl->lfd < 0)
		what = "socket";
	else if (b != 0)
		what = "bind";
	else if (stat(path, &st) != 0 && (e = errno))
		what = "stat";
	else if (group != NULL && chown(path, (uid_t)-1, gid) != 0 && (e = errno))
		what = "chown (--control-group)";
	else if (chmod(path, group != NULL ? 0660 : 0600) != 0 && (e = errno))
		what = "chmod";
	else if (listen(ctl->lfd, 8) != 0 && (e = errno))
		what = "listen";
	if (what != NULL) {
		fprintf(stderr, "pmrep-target: --control %s: %s: %s\n", path, what,
				strerror(e));
		if (b == 0)
			unlink(path);	/* ours: made just now */
		if (ctl->lfd >= 0)
			close(ctl->lfd);
		if (ctl->epfd >= 0)
			close(ctl->epfd);
		free(ctl->path);
		free(ctl->address);
		free(ctl);
		return 1;
	}
	ctl->dev = st.st_dev;
	ctl->ino = st.st_ino;
	*ctl_ptr = ctl;
	return 0;
}

/* clients are taken from the first attach (or the listener) on */
static void
ctl_accept_on(struct target_ctl *ctl)
{
	if (ctl->accepting)
		return;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_LISTEN };
	ctl->accepting = epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, ctl->lfd, &ev) == 0;
}

int
target_ctl_attach_named(struct target_ctl *ctl, struct pmrep_target *t,
		const char *name, const char *path)
{
	for (unsigned i = 0; i < ctl->nr; i++)
		if (ctl->r[i]->t == t)
			return 0;
	if (ctl->nr == ctl->cap) {
		unsigned cap = ctl->cap ? 2 * ctl->cap : 8;
		struct ctl_replica **a = realloc(ctl->r, cap * sizeof(*a));
		if (a == NULL)
			goto oom;
		ctl->r = a;
		ctl->cap = cap;
	}
	struct ctl_replica *r = calloc(1, sizeof(*r));
	if (r == NULL)
		goto oom;
	r->ctl = ctl;
	r->t = t;
	r->name = strdup(name != NULL ? name : "");
	r->path = strdup(path != NULL ? path : "");
	if (r->name == NULL || r->path == NULL) {
		free(r->name);
		free(r->path);
		free(r);
		goto oom;
	}
	ctl->r[ctl->nr++] = r;
	(void) pmrep_target_set_event_fn(t, on_event, r);
	ctl_accept_on(ctl);
	if (any_watcher(ctl)) {
		struct jbuf b = { 0 };
		jb_printf(&b, "{\"event\":\"added\",\"object\":\"replica\",\"time_ms\":%lld,\"replica\":",
				wall_ms());
		jb_replica(&b, r);
		JB_LIT(&b, "}\n");
		watchers_send(ctl, &b);
	}
	return 0;
oom:
	fprintf(stderr, "pmrep-target: control socket: out of memory: replica %s not shown\n",
			name != NULL ? name : "");
	return 1;
}

void
target_ctl_attach(struct target_ctl *ctl, struct pmrep_target *t)
{
	const char *name = "";
	(void) pmrep_target_get_name(t, &name);
	(void) target_ctl_attach_named(ctl, t, name, ctl->path_one);
}

void
target_ctl_detach(struct target_ctl *ctl, const struct pmrep_target *t)
{
	if (ctl == NULL || t == NULL)
		return;
	for (unsigned i = 0; i < ctl->nr; i++) {
		struct ctl_replica *r = ctl->r[i];
		if (r->t != t)
			continue;
		(void) pmrep_target_set_event_fn(r->t, NULL, NULL);
		memmove(&ctl->r[i], &ctl->r[i + 1],
				(ctl->nr - i - 1) * sizeof(ctl->r[0]));
		ctl->nr--;
		if (any_watcher(ctl)) {
			struct jbuf b = { 0 };
			jb_printf(&b, "{\"event\":\"removed\",\"object\":\"replica\",\"time_ms\":%lld,\"replica\":",
					wall_ms());
			jb_str(&b, r->name);
			JB_LIT(&b, "}\n");
			watchers_send(ctl, &b);
		}
		free(r->name);
		free(r->path);
		free(r);
		return;
	}
}

void
target_ctl_set_listener(struct target_ctl *ctl,
		const struct pmrep_listener *l)
{
	ctl->l = l;
	ctl_accept_on(ctl);
}

int
target_ctl_fd(const struct target_ctl *ctl)
{
	return ctl->epfd;
}

void
target_ctl_process(struct target_ctl *ctl)
{
	struct epoll_event evs[CTL_MAX_CLIENTS + 1];
	int n = epoll_wait(ctl->epfd, evs, CTL_MAX_CLIENTS + 1, 0);
	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 == TAG_LISTEN) {
			accept_clients(ctl);
			continue;
		}
		struct client *c = &ctl->c[evs[i].data.u64];
		if (c->fd < 0)
			continue;
		if (evs[i].events & EPOLLOUT)
			client_flush(ctl, c);
		if (c->fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
			client_read(ctl, c);
	}
}

void
target_ctl_close(struct target_ctl **ctl_ptr)
{
	struct target_ctl *ctl = *ctl_ptr;
	if (ctl == NULL)
		return;
	while (ctl->nr > 0)
		target_ctl_detach(ctl, ctl->r[ctl->nr - 1]->t);
	free(ctl->r);
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		client_drop(ctl, &ctl->c[i]);
	close(ctl->lfd);
	close(ctl->epfd);
	/* only the file we made: not one that replaced it since */
	struct stat st;
	if (stat(ctl->path, &st) == 0 && st.st_dev == ctl->dev &&
			st.st_ino == ctl->ino)
		unlink(ctl->path);
	free(ctl->path);
	free(ctl->address);
	free(ctl);
	*ctl_ptr = NULL;
}

/* ---------------------------------------------------------- client */

int
target_ctl_request(const char *path, const char *cmd, FILE *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "pmrep: control socket path too long: %s\n", path);
		return 1;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "pmrep: control socket %s: %s (is a pmrep-target running with --control %s?)\n",
				path, strerror(errno), path);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	char line[CTL_CMD_MAX + 2];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);
	if (send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
		fprintf(stderr, "pmrep: control socket %s: %s\n", path, strerror(errno));
		close(fd);
		return 1;
	}
	char buf[4096];
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "pmrep: control socket %s: %s\n", path,
					strerror(errno));
			close(fd);
			return 1;
		}
		if (r == 0)
			break;
		if (fwrite(buf, 1, (size_t)r, out) != (size_t)r || fflush(out) != 0) {
			close(fd);
			return 1;	/* stdout gone (a pipe closed): done */
		}
	}
	close(fd);
	return 0;
}
