/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_ctl_int.h -- what the control socket's server (target_ctl.c) and
 * its JSON writer (target_ctl_json.c) share: the client slots, the
 * attached replicas, the growing text buffer. Not for other files.
 */
#ifndef PMREP_TOOLS_TARGET_CTL_INT_H
#define PMREP_TOOLS_TARGET_CTL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "target_ctl.h"

#define CTL_MAX_CLIENTS 16
#define CTL_ROOT_SLOTS 1		/* of them, kept free for uid 0 only */
#define CTL_PER_UID 4			/* clients of one uid (root's: no bound) */
#define CTL_IDLE_MS 5000		/* no command for this long: dropped */
#define CTL_STALL_MS 10000		/* output pending, none taken this long: dropped */
#define CTL_CMD_MAX 256
#define CTL_OUT_MAX (256 * 1024)
#define CTL_MAX_SESSIONS 64
#define TAG_LISTEN UINT64_MAX
#define TAG_TIMER (UINT64_MAX - 1)

struct client {
	int fd;				/* -1: free */
	uid_t uid;			/* SO_PEERCRED at the accept */
	char in[CTL_CMD_MAX + 1];
	size_t in_len;
	char *out;
	size_t out_len, out_cap;
	bool watching;
	bool close_when_sent;
	bool want_out;			/* EPOLLOUT registered */
	long long idle_since;		/* monotonic ms: accept, last command */
	long long out_since;		/* monotonic ms: output pending, last taken */
};

/* an attached target: its event callback's argument */
struct ctl_replica {
	struct target_ctl *ctl;
	struct pmrep_target *t;
	char *name;			/* the HELLO's selector ("" none) */
	char *path;			/* its file */
};

struct target_ctl {
	int lfd, epfd, tfd;
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
	uint64_t idle_dropped;		/* ... for saying nothing */
	uint64_t refused;		/* connections refused: no slot for them */
};

/* ------------------------------------------ JSON text (target_ctl_json.c) */

struct jbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

void jb_put(struct jbuf *b, const char *s, size_t n);
/* a string literal */
#define JB_LIT(b, lit) jb_put((b), (lit), sizeof(lit) - 1)
void jb_printf(struct jbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* s as a JSON string (quote, backslash, control characters escaped) */
void jb_str(struct jbuf *b, const char *s);
long long wall_ms(void);
void jb_session(struct jbuf *b, const struct pmrep_target_session *s,
		const char *replica);
void jb_replica(struct jbuf *b, const struct ctl_replica *r);
/* the target object of status and of watch's first event */
void jb_target(struct jbuf *b, const struct target_ctl *ctl);
/* replica r's sessions (at most CTL_MAX_SESSIONS); *n: how many */
void sessions(const struct ctl_replica *r, struct pmrep_target_session *s,
		size_t *n);
/* "status": one JSON line; "status text": a few lines for people */
void jb_status(struct jbuf *b, const struct target_ctl *ctl);
void jb_status_text(struct jbuf *b, const struct target_ctl *ctl);

#endif /* PMREP_TOOLS_TARGET_CTL_INT_H */
