/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mirror_cfg.c -- the mirror configuration and the names of methods and states.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/log.h"
#include "mirror_int.h"

/* --------------------------------------------------------------- names */

const char *
pmrep_mirror_method_str(enum pmrep_mirror_method method)
{
	switch (method) {
	case PMREP_MIRROR_METHOD_NONE: return "none";
	case PMREP_MIRROR_METHOD_NATIVE: return "native";
	case PMREP_MIRROR_METHOD_APM: return "APM";
	case PMREP_MIRROR_METHOD_GPSPM: return "GPSPM";
	default: return "unknown";
	}
}

const char *
pmrep_replica_state_str(enum pmrep_replica_state state)
{
	switch (state) {
	case PMREP_REPLICA_CONNECTED: return "connected";
	case PMREP_REPLICA_SYNCING: return "syncing";
	case PMREP_REPLICA_IN_SYNC: return "in sync";
	case PMREP_REPLICA_DEGRADED: return "degraded";
	case PMREP_REPLICA_FAILED: return "failed";
	case PMREP_REPLICA_BEHIND: return "behind";
	case PMREP_REPLICA_REMOVED: return "removed";
	default: return "unknown";
	}
}

/* ----------------------------------------------------------------- cfg */


int
pmrep_mirror_cfg_new(struct pmrep_mirror_cfg **cfg_ptr)
{
	CHECK_ARG(cfg_ptr);
	struct pmrep_mirror_cfg *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		PMREP_LOG_ERR("out of memory for a mirror configuration");
		return PMREP_E_NOMEM;
	}
	cfg->generation = 1;
	cfg->region_size = 64 << 10;
	cfg->timeout_ms = 5000;
	cfg->create_timeout_ms = -1;
	cfg->resync_min_rate = RESYNC_MIN_RATE_DEFAULT;
	*cfg_ptr = cfg;
	return 0;
}

int
pmrep_mirror_cfg_delete(struct pmrep_mirror_cfg **cfg_ptr)
{
	CHECK_ARG(cfg_ptr);
	struct pmrep_mirror_cfg *cfg = *cfg_ptr;
	if (cfg == NULL)
		return 0;
	for (unsigned i = 0; i < cfg->n; i++) {
		free(cfg->r[i].addr);
		free(cfg->r[i].port);
	}
	free(cfg->state_path);
	repl_wipe(cfg->key, sizeof(cfg->key));
	free(cfg);
	*cfg_ptr = NULL;
	return 0;
}

int
pmrep_mirror_cfg_add_replica(struct pmrep_mirror_cfg *cfg, const char *addr,
		const char *port)
{
	CHECK_ARG(cfg);
	CHECK_ARG(addr);
	CHECK_ARG(port);
	if (addr[0] == '\0') {
		PMREP_LOG_ERR("invalid argument: the replica address is empty");
		return PMREP_E_INVAL;
	}
	int ret = repl_port_check(port, false);
	if (ret)
		return ret;
	if (cfg->n == PMREP_MIRROR_MAX_REPLICAS) {
		PMREP_LOG_ERR("at most %d replicas per mirror",
				PMREP_MIRROR_MAX_REPLICAS);
		return PMREP_E_INVAL;
	}
	/* a target serves one initiator at a time: the same one twice would
	 * take the replica from itself on every (re)connect */
	for (unsigned i = 0; i < cfg->n; i++) {
		if (strcmp(cfg->r[i].addr, addr) == 0 &&
				strcmp(cfg->r[i].port, port) == 0) {
			PMREP_LOG_ERR("replica %s:%s is already replica %u of this mirror",
					addr, port, i);
			return PMREP_E_INVAL;
		}
	}
	char *a = strdup(addr), *p = strdup(port);
	if (a == NULL || p == NULL) {
		free(a);
		free(p);
		PMREP_LOG_ERR("out of memory for a replica address");
		return PMREP_E_NOMEM;
	}
	cfg->r[cfg->n].addr = a;
	cfg->r[cfg->n].port = p;
	cfg->n++;
	return 0;
}

int
pmrep_mirror_cfg_set_replica_name(struct pmrep_mirror_cfg *cfg,
		unsigned index, const char *name)
{
	CHECK_ARG(cfg);
	if (index >= cfg->n) {
		PMREP_LOG_ERR("invalid argument: replica %u: the mirror cfg has %u replicas",
				index, cfg->n);
		return PMREP_E_INVAL;
	}
	if (name == NULL || name[0] == '\0') {
		cfg->r[index].selector[0] = '\0';
		return 0;
	}
	int ret = repl_selector_check(name, "replica name");
	if (ret)
		return ret;
	snprintf(cfg->r[index].selector, sizeof(cfg->r[index].selector), "%s",
			name);
	return 0;
}

int
pmrep_mirror_cfg_set_key(struct pmrep_mirror_cfg *cfg, const uint8_t *key,
		size_t len)
{
	CHECK_ARG(cfg);
	int ret = repl_key_check(key, len);
	if (ret)
		return ret;
	memcpy(cfg->key, key, len);
	cfg->key_len = len;
	return 0;
}

int
pmrep_mirror_cfg_set_key_id(struct pmrep_mirror_cfg *cfg, uint32_t key_id)
{
	CHECK_ARG(cfg);
	cfg->key_id = key_id;
	return 0;
}

int
pmrep_mirror_cfg_set_uuid(struct pmrep_mirror_cfg *cfg,
		const uint8_t uuid[PMREP_UUID_SIZE])
{
	CHECK_ARG(cfg);
	CHECK_ARG(uuid);
	if (replica_uuid_is_nil(uuid)) {
		PMREP_LOG_ERR("the replica-set UUID must not be all zero");
		return PMREP_E_INVAL;
	}
	memcpy(cfg->uuid, uuid, PMREP_UUID_SIZE);
	return 0;
}

int
pmrep_mirror_cfg_set_generation(struct pmrep_mirror_cfg *cfg,
		uint64_t generation)
{
	CHECK_ARG(cfg);
	if (generation == 0) {
		PMREP_LOG_ERR("the generation must be >= 1");
		return PMREP_E_INVAL;
	}
	cfg->generation = generation;
	return 0;
}

int
pmrep_mirror_cfg_set_quorum(struct pmrep_mirror_cfg *cfg, unsigned k)
{
	CHECK_ARG(cfg);
	if (k > PMREP_MIRROR_MAX_REPLICAS) {
		PMREP_LOG_ERR("quorum %u above the %d replicas a mirror can have",
				k, PMREP_MIRROR_MAX_REPLICAS);
		return PMREP_E_INVAL;
	}
	cfg->quorum = k;
	return 0;
}

int
pmrep_mirror_cfg_set_region_size(struct pmrep_mirror_cfg *cfg,
		uint64_t region_size)
{
	CHECK_ARG(cfg);
	if (region_size < 4096 || region_size > (1ull << 30) ||
			(region_size & (region_size - 1)) != 0) {
		PMREP_LOG_ERR("region size %llu: must be a power of two, 4 KiB .. 1 GiB",
				(unsigned long long)region_size);
		return PMREP_E_INVAL;
	}
	cfg->region_size = region_size;
	return 0;
}

int
pmrep_mirror_cfg_set_background_recovery(struct pmrep_mirror_cfg *cfg, bool on)
{
	CHECK_ARG(cfg);
	cfg->manual_recovery = !on;
	return 0;
}

int
pmrep_mirror_cfg_set_backoff(struct pmrep_mirror_cfg *cfg, int min_ms,
		int max_ms)
{
	CHECK_ARG(cfg);
	if (min_ms <= 0 || max_ms < min_ms) {
		PMREP_LOG_ERR("back-off must be 0 < min <= max ms, got %d .. %d",
				min_ms, max_ms);
		return PMREP_E_INVAL;
	}
	cfg->backoff_min_ms = min_ms;
	cfg->backoff_max_ms = max_ms;
	return 0;
}

int
pmrep_mirror_cfg_set_resync_rate(struct pmrep_mirror_cfg *cfg,
		uint64_t bytes_per_s)
{
	CHECK_ARG(cfg);
	cfg->resync_rate = bytes_per_s;
	return 0;
}

int
pmrep_mirror_cfg_set_resync_min_rate(struct pmrep_mirror_cfg *cfg,
		uint64_t bytes_per_s)
{
	CHECK_ARG(cfg);
	cfg->resync_min_rate = bytes_per_s;
	return 0;
}

int
pmrep_mirror_cfg_set_resync_digests(struct pmrep_mirror_cfg *cfg, bool on)
{
	CHECK_ARG(cfg);
	cfg->no_digests = !on;
	return 0;
}

int
pmrep_mirror_cfg_set_create_timeout(struct pmrep_mirror_cfg *cfg,
		int timeout_ms)
{
	CHECK_ARG(cfg);
	int ret = repl_timeout_check(timeout_ms, "pmrep_mirror_cfg_set_create_timeout");
	if (ret)
		return ret;
	cfg->create_timeout_ms = timeout_ms;
	return 0;
}

int
pmrep_mirror_cfg_set_window(struct pmrep_mirror_cfg *cfg, unsigned steps)
{
	CHECK_ARG(cfg);
	if (steps == 0 || steps > PMREP_MIRROR_WINDOW_MAX) {
		PMREP_LOG_ERR("window must be 1..%d persist steps, got %u",
				PMREP_MIRROR_WINDOW_MAX, steps);
		return PMREP_E_INVAL;
	}
	cfg->window = steps;
	return 0;
}

int
pmrep_mirror_cfg_set_max_lag(struct pmrep_mirror_cfg *cfg, uint64_t bytes)
{
	CHECK_ARG(cfg);
	cfg->max_lag = bytes;
	cfg->max_lag_set = true;
	return 0;
}

int
pmrep_mirror_cfg_set_timeout(struct pmrep_mirror_cfg *cfg, int timeout_ms)
{
	CHECK_ARG(cfg);
	if (timeout_ms <= 0) {
		PMREP_LOG_ERR("timeout must be > 0 ms, got %d", timeout_ms);
		return PMREP_E_INVAL;
	}
	cfg->timeout_ms = timeout_ms;
	return 0;
}

int
pmrep_mirror_cfg_set_force_gpspm(struct pmrep_mirror_cfg *cfg, bool force)
{
	CHECK_ARG(cfg);
	cfg->force_gpspm = force;
	return 0;
}

int
pmrep_mirror_cfg_set_fence_count(struct pmrep_mirror_cfg *cfg, unsigned count)
{
	CHECK_ARG(cfg);
	if (count > PMREP_MIRROR_MAX_REPLICAS) {
		PMREP_LOG_ERR("invalid argument: a fence count of %u is above the %d replicas a mirror has at most",
				count, PMREP_MIRROR_MAX_REPLICAS);
		return PMREP_E_INVAL;
	}
	cfg->fence_count = count;
	return 0;
}

int
pmrep_mirror_cfg_set_persist_seq(struct pmrep_mirror_cfg *cfg, bool on)
{
	CHECK_ARG(cfg);
	cfg->persist_seq = on;
	return 0;
}

int
pmrep_mirror_cfg_set_state_path(struct pmrep_mirror_cfg *cfg, const char *path)
{
	CHECK_ARG(cfg);
	char *p = NULL;
	if (path != NULL) {
		if (path[0] == '\0') {
			PMREP_LOG_ERR("invalid argument: the mirror state path is empty");
			return PMREP_E_INVAL;
		}
		p = strdup(path);
		if (p == NULL) {
			PMREP_LOG_ERR("out of memory for the mirror state path");
			return PMREP_E_NOMEM;
		}
	}
	free(cfg->state_path);
	cfg->state_path = p;
	cfg->state_path_set = true;
	return 0;
}

int
pmrep_mirror_cfg_set_tls(struct pmrep_mirror_cfg *cfg, bool on)
{
	if (cfg == NULL) {
		PMREP_LOG_ERR("invalid argument: cfg is NULL");
		return PMREP_E_INVAL;
	}
	cfg->no_tls = !on;
	return 0;
}
