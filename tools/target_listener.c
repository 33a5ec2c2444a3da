/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_listener.c -- pmrep-target --config FILE: every replica the file
 * names served on one listener (one port; mirrors select one by name),
 * each with its own keys. A start makes all of them or none (files it
 * created removed again); SIGHUP reads the file again and applies the
 * difference (replicas added, deleted, served anew; keys swapped), or
 * keeps the running configuration when the file does not parse. The
 * file's format is target_conf.c's.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <pmrep/repl.h>

#include "target_conf.h"
#include "target_ctl.h"
#include "target_keys.h"
#include "target_listener.h"
#include "target_metrics.h"
#include "target_serve.h"

/* a replica the daemon serves: its key sources (into the running
 * config's strings), the keys it holds, its target on the listener */
struct served {
	char name[TCONF_NAME_MAX + 1];
	char who[TCONF_NAME_MAX + 16];	/* "replica NAME: " */
	struct keysrc src;
	struct keyset *ks;
	struct pmrep_target *t;
};

struct daemon {
	struct tconf conf;		/* the running configuration */
	struct pmrep_listener *l;
	struct served *s;
	unsigned n;
	const char *log_override;	/* --log-file: over the file's log-file */
	struct target_ctl *ctl;		/* --control / control = PATH; NULL: none */
	const char *control_override;	/* --control: over the file's control */
	const char *group_override;	/* --control-group: over control-group */
	/* --metrics-file / metrics-file (path NULL: none; the command
	 * line's win), its path owned here (a SIGHUP's file does not
	 * change it: a restart does) */
	struct target_metrics_file mf;
	char *mf_path;
};

/* `over` (non-NULL) replaces *field: 0, -1 out of memory */
static int
str_override(char **field, const char *over)
{
	if (over == NULL)
		return 0;
	free(*field);
	*field = strdup(over);
	return *field ? 0 : -1;
}

/* --log-file wins over the file's log-file, --control and
 * --control-group over its control and control-group: 0, -1 out of
 * memory */
static int
log_override(const struct daemon *d, struct tconf *c)
{
	return str_override(&c->log_file, d->log_override) ||
		str_override(&c->control, d->control_override) ||
		str_override(&c->control_group, d->group_override) ? -1 : 0;
}

static void
served_src(struct served *sv, const struct tconf *c,
		const struct tconf_replica *r)
{
	memset(&sv->src, 0, sizeof(sv->src));
	for (unsigned i = 0; i < r->nkey_files; i++)
		sv->src.files[i] = r->key_files[i];
	sv->src.nfiles = r->nkey_files;
	sv->src.dir = r->key_dir;
	sv->src.flags = c->insecure_key_file ? PMREP_KEY_FILE_INSECURE_OK : 0;
}

/* a target cfg for replica `r` of config `c` (keys from ks) */
static int
replica_cfg(const struct tconf *c, const struct tconf_replica *r,
		const struct keyset *ks, struct pmrep_target_cfg **cfg)
{
	int ret;
	if ((ret = pmrep_target_cfg_new(cfg)) ||
			(ret = pmrep_target_cfg_set_path(*cfg, r->path)) ||
			(ret = pmrep_target_cfg_set_data_size(*cfg, r->size, r->create)) ||
			(ret = keyset_to_cfg(ks, *cfg)) ||
			(ret = pmrep_target_cfg_set_direct_write_to_pmem(*cfg, r->direct)) ||
			(ret = pmrep_target_cfg_set_staging(*cfg, r->staging)) ||
			(ret = pmrep_target_cfg_set_timeout(*cfg, r->timeout_ms ?
					r->timeout_ms : c->timeout_ms)))
		return ret;
	for (unsigned i = 0; i < r->ntls_names; i++)
		if ((ret = pmrep_target_cfg_add_tls_name(*cfg, r->tls_names[i])))
			return ret;
	return 0;
}

/*
 * serve replica `r` (keys read already into sv->ks): 0, or -1 (said why).
 * `created`: set when this made its file (a failed start removes it).
 */
static int
served_add(struct daemon *d, struct served *sv, const struct tconf_replica *r,
		bool *created)
{
	struct pmrep_target_cfg *cfg = NULL;
	bool existed = access(r->path, F_OK) == 0;
	int ret = replica_cfg(&d->conf, r, sv->ks, &cfg);
	if (ret == 0)
		ret = pmrep_listener_add_target(d->l, r->name, cfg, &sv->t);
	if (ret) {
		fprintf(stderr, "pmrep-target: [replica %s] (%s:%u):\n", r->name,
				d->conf.file, r->line);
		serve_report_start_failure(ret, r->path, r->size, r->create,
				d->conf.addr, d->conf.port);
	}
	(void) pmrep_target_cfg_delete(&cfg);
	if (created)
		*created = ret == 0 && !existed;
	return ret ? -1 : 0;
}

static int
served_init(struct served *sv, const struct tconf *c,
		const struct tconf_replica *r)
{
	memset(sv, 0, sizeof(*sv));
	snprintf(sv->name, sizeof(sv->name), "%s", r->name);
	snprintf(sv->who, sizeof(sv->who), "replica %s: ", r->name);
	sv->ks = calloc(1, sizeof(*sv->ks));
	if (sv->ks == NULL) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		return -1;
	}
	served_src(sv, c, r);
	return 0;
}

static void
served_fini(struct served *sv)
{
	(void) pmrep_target_delete(&sv->t);
	if (sv->ks) {
		memset(sv->ks, 0, sizeof(*sv->ks));
		free(sv->ks);
	}
	sv->ks = NULL;
}

static void
daemon_status(const struct daemon *d, const char *what)
{
	uint16_t port = 0;
	(void) pmrep_listener_get_port(d->l, &port);
	unsigned serving = 0;
	for (unsigned i = 0; i < d->n; i++)
		serving += d->s[i].t != NULL;
	serve_notify("%sSTATUS=serving %u replica%s on %s:%u", what, serving,
			serving == 1 ? "" : "s", d->conf.addr, port);
}

/*
 * start: every replica's keys read (nothing opened yet), the listener,
 * then each replica. A failure: the replicas added are deleted again and
 * the files this start created removed (while still locked). 0 / 1.
 */
static int
daemon_start(struct daemon *d)
{
	d->s = calloc(d->conf.n, sizeof(*d->s));
	if (d->s == NULL) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; i < d->conf.n; i++) {
		const struct tconf_replica *r = &d->conf.r[i];
		if (served_init(&d->s[i], &d->conf, r) != 0)
			return 1;
		d->n = i + 1;
		if (keyset_read(d->s[i].ks, &d->s[i].src) != 0) {
			fprintf(stderr, "pmrep-target: [replica %s] (%s:%u): its keys do not read; nothing started\n",
					r->name, d->conf.file, r->line);
			return 1;
		}
	}
	struct pmrep_target_cfg *lcfg = NULL;
	int ret;
	if ((ret = pmrep_target_cfg_new(&lcfg)) ||
			(ret = pmrep_target_cfg_set_address(lcfg, d->conf.addr, d->conf.port)) ||
			(ret = pmrep_target_cfg_set_timeout(lcfg, d->conf.timeout_ms)) ||
			(ret = pmrep_target_cfg_set_tls(lcfg, d->conf.tls))) {
		fprintf(stderr, "pmrep-target: %s: bad configuration: %s (%s)\n",
				d->conf.file, pmrep_err_to_str(ret), pmrep_err_msg());
		(void) pmrep_target_cfg_delete(&lcfg);
		return 1;
	}
	for (unsigned i = 0; i < d->conf.ntls_names; i++) {
		if ((ret = pmrep_target_cfg_add_tls_name(lcfg, d->conf.tls_names[i]))) {
			fprintf(stderr, "pmrep-target: %s: bad tls-name '%s' (%s)\n",
					d->conf.file, d->conf.tls_names[i], pmrep_err_msg());
			(void) pmrep_target_cfg_delete(&lcfg);
			return 1;
		}
	}
	ret = pmrep_listener_new(lcfg, &d->l);
	(void) pmrep_target_cfg_delete(&lcfg);
	if (ret) {
		serve_report_start_failure(ret, d->conf.file, 0, false,
				d->conf.addr, d->conf.port);
		return 1;
	}
	bool *created = calloc(d->conf.n, sizeof(bool));
	if (created == NULL) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		return 1;
	}
	for (unsigned i = 0; i < d->conf.n; i++) {
		if (served_add(d, &d->s[i], &d->conf.r[i], &created[i]) == 0)
			continue;
		/* none of this start stays: files it made are removed while
		 * their targets still hold the locks */
		for (unsigned j = 0; j < i; j++) {
			if (created[j] && unlink(d->conf.r[j].path) != 0)
				fprintf(stderr, "pmrep-target: cannot remove %s created: %s\n",
						d->conf.r[j].path, strerror(errno));
			(void) pmrep_target_delete(&d->s[j].t);
		}
		free(created);
		return 1;
	}
	free(created);
	return 0;
}

static void
daemon_stop(struct daemon *d)
{
	target_ctl_close(&d->ctl);
	for (unsigned i = 0; i < d->n; i++)
		served_fini(&d->s[i]);
	free(d->s);
	d->s = NULL;
	d->n = 0;
	(void) pmrep_listener_delete(&d->l);
	tconf_free(&d->conf);
	free(d->mf_path);
	d->mf_path = NULL;
}

static struct served *
daemon_find(struct daemon *d, const char *name)
{
	for (unsigned i = 0; i < d->n; i++)
		if (strcmp(d->s[i].name, name) == 0)
			return &d->s[i];
	return NULL;
}

/* two strings, NULL or not, equal */
static bool
str_eq(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* what of the endpoint's configuration changed: needs a restart */
static void
warn_restart(const struct tconf *run, const struct tconf *next)
{
	bool names = run->ntls_names != next->ntls_names;
	for (unsigned i = 0; !names && i < run->ntls_names; i++)
		names = strcmp(run->tls_names[i], next->tls_names[i]) != 0;
	if (strcmp(run->addr, next->addr) != 0 || strcmp(run->port, next->port) != 0)
		fprintf(stderr, "pmrep-target: SIGHUP: %s names %s:%s, still listening on %s:%s: an address or port change needs a restart\n",
				next->file, next->addr, next->port, run->addr, run->port);
	if (run->tls != next->tls)
		fprintf(stderr, "pmrep-target: SIGHUP: %s turns TLS %s: needs a restart (TLS stays %s)\n",
				next->file, next->tls ? "on" : "off", run->tls ? "on" : "off");
	if (!str_eq(run->metrics_file, next->metrics_file) ||
			run->metrics_interval_ms != next->metrics_interval_ms)
		fprintf(stderr, "pmrep-target: SIGHUP: a change of metrics-file or metrics-interval needs a restart (the metrics file stays as it is)\n");
	if (run->timeout_ms != next->timeout_ms)
		fprintf(stderr, "pmrep-target: SIGHUP: the global timeout change (%d -> %d ms) needs a restart\n",
				run->timeout_ms, next->timeout_ms);
	if (names)
		fprintf(stderr, "pmrep-target: SIGHUP: a change of the global tls-name lines needs a restart\n");
	if (!str_eq(run->control, next->control) ||
			!str_eq(run->control_group, next->control_group))
		fprintf(stderr, "pmrep-target: SIGHUP: a change of control or control-group needs a restart (the control socket stays as it is)\n");
}

/* the endpoint's settings stay the running ones (they need a restart) */
static void
keep_endpoint(struct tconf *run, struct tconf *next)
{
	char *t;
	t = next->addr; next->addr = run->addr; run->addr = t;
	t = next->port; next->port = run->port; run->port = t;
	bool b = next->tls; next->tls = run->tls; run->tls = b;
	int ms = next->timeout_ms; next->timeout_ms = run->timeout_ms;
	run->timeout_ms = ms;
	for (unsigned i = 0; i < TCONF_MAX_TLS_NAMES; i++) {
		t = next->tls_names[i];
		next->tls_names[i] = run->tls_names[i];
		run->tls_names[i] = t;
	}
	unsigned n = next->ntls_names;
	next->ntls_names = run->ntls_names;
	run->ntls_names = n;
	t = next->control; next->control = run->control; run->control = t;
	t = next->control_group; next->control_group = run->control_group;
	run->control_group = t;
}

/*
 * SIGHUP: read the config again. Malformed: the running configuration
 * stays (an error logged). Else: the log file reopened, replicas gone
 * from the file deleted (their sessions closed), new ones added, a kept
 * one's keys made exactly its key files' (sessions stay), a kept one whose
 * path, size, create, staging, direct-write-to-pmem, timeout or tls-name
 * changed served anew (its sessions closed); endpoint changes need a
 * restart (said).
 */
static void
daemon_reload(struct daemon *d)
{
	serve_notify_reloading();
	struct tconf next;
	char err[512];
	if (tconf_read(d->conf.file, &next, err, sizeof(err)) != 0) {
		if (d->conf.log_file)
			(void) serve_log_reopen(d->conf.log_file);
		fprintf(stderr, "pmrep-target: SIGHUP: %s; the running configuration stays\n",
				err);
		daemon_status(d, "READY=1\n");
		return;
	}
	if (log_override(d, &next) != 0) {
		fprintf(stderr, "pmrep-target: SIGHUP: out of memory; the running configuration stays\n");
		tconf_free(&next);
		daemon_status(d, "READY=1\n");
		return;
	}
	if (next.log_file && serve_log_reopen(next.log_file) != 0)
		fprintf(stderr, "pmrep-target: SIGHUP: logging on where it did\n");
	warn_restart(&d->conf, &next);
	keep_endpoint(&d->conf, &next);
	/* gone, or to be served anew */
	for (unsigned i = 0; i < d->n; i++) {
		struct served *sv = &d->s[i];
		const struct tconf_replica *nr = tconf_find(&next, sv->name);
		const struct tconf_replica *cur = tconf_find(&d->conf, sv->name);
		if (nr != NULL && sv->t != NULL &&
				!tconf_replica_reopen_differs(cur, nr))
			continue;
		if (sv->t != NULL)
			fprintf(stderr, "pmrep-target: SIGHUP: replica %s %s: its sessions are closed\n",
					sv->name, nr ? "changed (path, size, create, staging, direct-write-to-pmem, timeout or tls-name): served anew" :
					"is no longer in the file: not served any more");
		/* the control socket lets go first: no pointer to a
		 * deleted target, no event callback during its delete */
		target_ctl_detach(d->ctl, sv->t);
		(void) pmrep_target_delete(&sv->t);
	}
	struct served *ns = calloc(next.n, sizeof(*ns));
	if (ns == NULL) {
		fprintf(stderr, "pmrep-target: SIGHUP: out of memory; the running configuration stays\n");
		tconf_free(&next);
		daemon_status(d, "READY=1\n");
		return;
	}
	/* the new configuration owns the strings the key sources point to
	 * from here on; d->conf's are freed at the end */
	struct tconf old = d->conf;
	d->conf = next;
	unsigned added = 0, failed = 0;
	for (unsigned i = 0; i < next.n; i++) {
		const struct tconf_replica *r = &d->conf.r[i];
		struct served *sv = daemon_find(d, r->name);
		if (sv != NULL && sv->t != NULL) {
			/* kept: its keys are its files' now */
			ns[i] = *sv;
			sv->ks = NULL;
			sv->t = NULL;
			served_src(&ns[i], &d->conf, r);
			keyset_reload(ns[i].ks, ns[i].t, &ns[i].src, ns[i].who);
			continue;
		}
		if (served_init(&ns[i], &d->conf, r) != 0 ||
				keyset_read(ns[i].ks, &ns[i].src) != 0 ||
				served_add(d, &ns[i], r, NULL) != 0) {
			fprintf(stderr, "pmrep-target: SIGHUP: replica %s (%s:%u) is not served\n",
					r->name, d->conf.file, r->line);
			failed++;
			continue;
		}
		if (d->ctl != NULL)
			(void) target_ctl_attach_named(d->ctl, ns[i].t, r->name,
					r->path);
		added++;
	}
	for (unsigned i = 0; i < d->n; i++) {
		target_ctl_detach(d->ctl, d->s[i].t);
		served_fini(&d->s[i]);
	}
	free(d->s);
	d->s = ns;
	d->n = next.n;
	tconf_free(&old);
	unsigned serving = 0;
	for (unsigned i = 0; i < d->n; i++)
		serving += d->s[i].t != NULL;
	fprintf(stderr, "pmrep-target: SIGHUP: %s read again: %u replica%s served (%u added%s%u failed)\n",
			d->conf.file, serving, serving == 1 ? "" : "s", added,
			", ", failed);
	daemon_status(d, "READY=1\n");
}

/* the poll loop of config mode: 0 clean stop, 1 failure */
static int
daemon_run(struct daemon *d, int sfd)
{
	int lfd;
	uint16_t bound = 0;
	(void) pmrep_listener_get_fd(d->l, &lfd);
	(void) pmrep_listener_get_port(d->l, &bound);
	printf("listening on %s:%u (%u replica%s:", d->conf.addr, bound,
			d->n, d->n == 1 ? "" : "s");
	for (unsigned i = 0; i < d->n; i++)
		printf(" %s", d->s[i].name);
	printf(")\n");
	fflush(stdout);
	daemon_status(d, "READY=1\n");
	int ret = 0;
	for (;;) {
		int sig;
		bool ctl_ready;
		if (serve_poll_turn(sfd, lfd,
				d->ctl ? target_ctl_fd(d->ctl) : -1,
				&sig, &ctl_ready) != 0) {
			ret = 1;
			break;
		}
		if (ctl_ready)
			target_ctl_process(d->ctl);
		if (sig == SIGHUP) {
			(void) pmrep_log_reopen();
			daemon_reload(d);
		} else if (sig == SIGUSR1) {
			for (unsigned i = 0; i < d->n; i++)
				if (d->s[i].t)
					serve_print_stats(d->s[i].t, true,
							d->s[i].who);
		} else if (sig != 0) {
			fprintf(stderr, "pmrep-target: %s, shutting down\n",
					strsignal(sig));
			break;
		}
		int r = pmrep_listener_process(d->l, 0);
		if (r != 0 && r != PMREP_E_TIMEOUT) {
			fprintf(stderr, "pmrep-target: %s\n", pmrep_err_to_str(r));
			ret = 1;
			break;
		}
		target_metrics_file_tick(&d->mf, d->l, NULL, false);
	}
	/* the last counters, before the sessions are closed */
	target_metrics_file_tick(&d->mf, d->l, NULL, true);
	serve_notify("STOPPING=1\nSTATUS=stopping");
	for (unsigned i = 0; i < d->n; i++)
		if (d->s[i].t)
			serve_print_stats(d->s[i].t, false, d->s[i].who);
	return ret;
}

int
listener_main(const char *file, const char *log_file, const char *control,
		const char *control_group, const struct target_metrics_file *mf,
		const sigset_t *mask)
{
	static struct daemon d;
	char err[512];
	if (tconf_read(file, &d.conf, err, sizeof(err)) != 0) {
		fprintf(stderr, "pmrep-target: %s\n", err);
		return 2;
	}
	d.log_override = log_file;
	d.control_override = control;
	d.group_override = control_group;
	int ret = 1, sfd = -1;
	if (log_override(&d, &d.conf) != 0) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		goto out;
	}
	/* --metrics-file / --metrics-interval over the file's */
	d.mf = *mf;
	if (d.mf.path == NULL && d.conf.metrics_file != NULL &&
			(d.mf_path = strdup(d.conf.metrics_file)) == NULL) {
		fprintf(stderr, "pmrep-target: out of memory\n");
		goto out;
	}
	if (d.mf.path == NULL)
		d.mf.path = d.mf_path;
	if (d.mf.interval_ms == 0)
		d.mf.interval_ms = d.conf.metrics_interval_ms > 0 ?
			d.conf.metrics_interval_ms : 5000;
	sfd = signalfd(-1, mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		perror("pmrep-target: signalfd");
		goto out;
	}
	if (d.conf.log_file != NULL && serve_log_reopen(d.conf.log_file) != 0)
		goto out;
	/* the control socket before the listener and the replicas: a live
	 * one refuses the start before anything is created */
	const struct target_ctl_about about = { NULL, d.conf.addr };
	if (d.conf.control != NULL && target_ctl_open(d.conf.control,
			d.conf.control_group, &about, &d.ctl) != 0)
		goto out;
	ret = daemon_start(&d);
	if (ret == 0 && d.ctl != NULL) {
		target_ctl_set_listener(d.ctl, d.l);
		for (unsigned i = 0; i < d.n; i++)
			if (d.s[i].t != NULL)
				(void) target_ctl_attach_named(d.ctl, d.s[i].t,
						d.s[i].name, d.conf.r[i].path);
	}
	if (ret == 0)
		ret = daemon_run(&d, sfd);
out:
	daemon_stop(&d);
	if (sfd >= 0)
		close(sfd);
	return ret;
}
