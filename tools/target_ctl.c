/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_ctl.c -- pmrep-target's control socket: a local AF_UNIX stream
 * socket (mode 0600, or 0660 with a group) that answers, read-only:
 *   status       one JSON object on one line (the target, its replicas,
 *                each with its name, its sessions, each with its
 *                replica's name), then the server closes;
 *   status text  the same for people, a few lines, then closes;
 *   metrics      the metrics in the Prometheus text format 0.0.4
 *                (docs/METRICS.md; what --metrics-file holds), then the
 *                line "# EOF" (a client that does not see it got a cut
 *                reply), then closes;
 *   watch        first the current state as "exists" events and an
 *                {"event":"exists","object":"-"} end mark, then one JSON
 *                line per event (opened, authenticated, state, generation,
 *                closed) as they happen, until the client goes.
 * A command is one line of at most CTL_CMD_MAX bytes; anything else gets
 * an {"error":...} line (a line too long: the error, then the close).
 * The daemon never waits for a client: every socket is non-blocking, a
 * client's pending output is bounded (CTL_OUT_MAX) and a client that lets
 * it overflow, or takes none of it for CTL_STALL_MS (it does not read),
 * is dropped. Nobody holds the slots: a client that sends no command for
 * CTL_IDLE_MS (a watcher excepted: its command runs on) is dropped; one
 * uid holds at most CTL_PER_UID of them (SO_PEERCRED), root excepted; the
 * last CTL_ROOT_SLOTS free ones are root's only, so root's status is
 * answered whatever members of the socket's group hold. A timerfd in the
 * epoll set makes the fd readable at the next such deadline. Nothing here changes the
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
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "target_ctl_int.h"
#include "target_metrics.h"

/* ------------------------------------------------------- clients */

static long long
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* when c must have done something (sent a command, taken output) */
static long long
client_deadline(const struct client *c)
{
	long long d = -1;
	if (!c->watching && !c->close_when_sent)
		d = c->idle_since + CTL_IDLE_MS;
	if (c->out_len > 0 && (d < 0 || c->out_since + CTL_STALL_MS < d))
		d = c->out_since + CTL_STALL_MS;
	return d;
}

/* the timer for the earliest client deadline (none: disarmed) */
static void
ctl_arm(struct target_ctl *ctl)
{
	long long first = -1;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		long long d = ctl->c[i].fd >= 0 ? client_deadline(&ctl->c[i]) : -1;
		if (d >= 0 && (first < 0 || d < first))
			first = d;
	}
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	if (first >= 0) {
		long long left = first - mono_ms();
		if (left <= 0)
			left = 1;
		its.it_value.tv_sec = (time_t)(left / 1000);
		its.it_value.tv_nsec = (long)(left % 1000) * 1000000;
	}
	(void) timerfd_settime(ctl->tfd, 0, &its, NULL);
}

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
		c->out_since = mono_ms();	/* it reads */
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
	if (c->out_len == 0)
		c->out_since = mono_ms();
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

/* "metrics": the Prometheus text (what --metrics-file holds), then the
 * TARGET_METRICS_EOF line, then the close; an {"error":...} line when
 * there is nothing to report or no memory */
static void
metrics_reply(struct target_ctl *ctl, struct client *c)
{
	size_t len = 0;
	char *text = target_metrics_text(ctl->l, ctl->l == NULL && ctl->nr > 0 ?
			ctl->r[0]->t : NULL, &len);
	c->close_when_sent = true;
	if (text == NULL) {
		client_error(ctl, c, "no metrics (no replica served yet, or out of memory)",
				"metrics");
		return;
	}
	/* one send: a reply sent whole closes the client at once */
	size_t eof = sizeof(TARGET_METRICS_EOF) - 1;
	char *all = len + eof <= CTL_OUT_MAX ? realloc(text, len + eof) : NULL;
	if (all == NULL) {
		free(text);
		client_error(ctl, c, len + eof > CTL_OUT_MAX ?
				"the metrics are longer than a control reply may be" :
				"out of memory", "metrics");
		return;
	}
	memcpy(all + len, TARGET_METRICS_EOF, eof);
	client_send(ctl, c, all, len + eof);
	free(all);
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
	c->idle_since = mono_ms();
	struct jbuf b = { 0 };
	if (strcmp(cmd, "status") == 0) {
		jb_status(&b, ctl);
		c->close_when_sent = true;
		client_send_jb(ctl, c, &b);
	} else if (strcmp(cmd, "status text") == 0) {
		jb_status_text(&b, ctl);
		c->close_when_sent = true;
		client_send_jb(ctl, c, &b);
	} else if (strcmp(cmd, "metrics") == 0) {
		metrics_reply(ctl, c);
	} else if (strcmp(cmd, "watch") == 0) {
		if (!c->watching)
			watch_start(ctl, c);
	} else if (cmd[0] != '\0') {
		client_error(ctl, c, "unknown command (the commands: status, status text, metrics, watch)",
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

/* may a client of `uid` take a slot now? NULL: yes; else why not */
static const char *
slot_refusal(const struct target_ctl *ctl, uid_t uid)
{
	int free_slots = 0, of_uid = 0;
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		free_slots += ctl->c[i].fd < 0;
		of_uid += ctl->c[i].fd >= 0 && ctl->c[i].uid == uid;
	}
	if (free_slots == 0)
		return "too many control clients";
	if (uid == 0)
		return NULL;
	if (of_uid >= CTL_PER_UID)
		return "too many control clients of this uid (at most 4 at once)";
	if (free_slots <= CTL_ROOT_SLOTS)
		return "too many control clients (the last slot is root's)";
	return NULL;
}

static void
accept_clients(struct target_ctl *ctl)
{
	for (;;) {
		int fd = accept4(ctl->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;		/* EAGAIN, or a client gone already */
		struct ucred cr;
		socklen_t crl = sizeof(cr);
		const char *why = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr,
				&crl) != 0 ? "no peer credentials" :
			slot_refusal(ctl, cr.uid);
		if (why != NULL) {
			char line[160];
			int n = snprintf(line, sizeof(line), "{\"error\":\"%s\"}\n", why);
			(void) !send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			ctl->refused++;
			continue;
		}
		struct client *c = NULL;
		for (int i = 0; i < CTL_MAX_CLIENTS && c == NULL; i++)
			if (ctl->c[i].fd < 0)
				c = &ctl->c[i];
		c->fd = fd;
		c->uid = cr.uid;
		c->idle_since = mono_ms();
		struct epoll_event ev = { .events = EPOLLIN,
			.data.u64 = (uint64_t)(c - ctl->c) };
		if (epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			c->fd = -1;
		}
	}
}

/* drop the clients past their deadline: silent, or not reading */
static void
clients_expire(struct target_ctl *ctl)
{
	long long now = mono_ms();
	for (int i = 0; i < CTL_MAX_CLIENTS; i++) {
		struct client *c = &ctl->c[i];
		long long d = c->fd >= 0 ? client_deadline(c) : -1;
		if (d < 0 || now < d)
			continue;
		if (c->out_len > 0 && now >= c->out_since + CTL_STALL_MS) {
			ctl->dropped++;
			fprintf(stderr, "pmrep-target: control client dropped: it took none of its %zu bytes of output for %d s\n",
					c->out_len, CTL_STALL_MS / 1000);
		} else {
			ctl->idle_dropped++;
		}
		client_drop(ctl, c);
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
	ctl_arm(ctl);	/* output pending now: its stall deadline */
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
	ctl->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	struct epoll_event tev = { .events = EPOLLIN, .data.u64 = TAG_TIMER };
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
	else if ((ctl->tfd < 0 || epoll_ctl(ctl->epfd, EPOLL_CTL_ADD,
			ctl->tfd, &tev) != 0) && (e = errno))
		what = "timerfd";
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
		if (ctl->tfd >= 0)
			close(ctl->tfd);
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
	struct epoll_event evs[CTL_MAX_CLIENTS + 2];
	int n = epoll_wait(ctl->epfd, evs, CTL_MAX_CLIENTS + 2, 0);
	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 == TAG_LISTEN) {
			/* the deadlines first: a silent client makes room */
			clients_expire(ctl);
			accept_clients(ctl);
			continue;
		}
		if (evs[i].data.u64 == TAG_TIMER) {
			uint64_t ticks;
			(void) !read(ctl->tfd, &ticks, sizeof(ticks));
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
	clients_expire(ctl);
	ctl_arm(ctl);
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
	/* watchers hear that the target stops (pmrep watch then ends
	 * instead of waiting for it to come back): best effort, no wait */
	struct jbuf b = { 0 };
	jb_printf(&b, "{\"event\":\"stopped\",\"object\":\"target\",\"time_ms\":%lld}\n",
			wall_ms());
	for (int i = 0; i < CTL_MAX_CLIENTS && !b.oom; i++)
		if (ctl->c[i].fd >= 0 && ctl->c[i].watching)
			client_send(ctl, &ctl->c[i], b.p, b.len);
	free(b.p);
	for (int i = 0; i < CTL_MAX_CLIENTS; i++)
		client_drop(ctl, &ctl->c[i]);
	close(ctl->lfd);
	close(ctl->epfd);
	close(ctl->tfd);
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
