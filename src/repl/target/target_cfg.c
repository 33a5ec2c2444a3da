/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_cfg.c -- the replica target's configuration.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "target_int.h"

/* --------------------------------------------------------------- cfg */

int
pmrep_target_cfg_new(struct pmrep_target_cfg **cfg_ptr)
{
	if (cfg_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: cfg_ptr is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_target_cfg *cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL)
		goto nomem;
	cfg->addr = strdup("127.0.0.1");
	cfg->port = strdup("0");
	if (cfg->addr == NULL || cfg->port == NULL)
		goto nomem;
	cfg->timeout_ms = 5000;
	*cfg_ptr = cfg;
	return 0;
nomem:
	if (cfg) {
		free(cfg->addr);
		free(cfg->port);
		free(cfg);
	}
	PMREP_LOG_ERR("out of memory for a target configuration");
	return PMREP_E_NOMEM;
}

int
pmrep_target_cfg_delete(struct pmrep_target_cfg **cfg_ptr)
{
	if (cfg_ptr == NULL) {
		PMREP_LOG_ERR("invalid argument: cfg_ptr is NULL");
		return PMREP_E_INVAL;
	}
	struct pmrep_target_cfg *cfg = *cfg_ptr;
	if (cfg == NULL)
		return 0;
	repl_wipe(cfg->keys, sizeof(cfg->keys));
	free(cfg->path);
	free(cfg->addr);
	free(cfg->port);
	free(cfg);
	*cfg_ptr = NULL;
	return 0;
}

static int
set_str(char **dst, const char *src, const char *what)
{
	if (src == NULL || src[0] == '\0') {
		PMREP_LOG_ERR("invalid argument: %s is NULL or empty", what);
		return PMREP_E_INVAL;
	}
	char *c = strdup(src);
	if (c == NULL) {
		PMREP_LOG_ERR("out of memory for %s", what);
		return PMREP_E_NOMEM;
	}
	free(*dst);
	*dst = c;
	return 0;
}

#define CHECK_CFG(cfg) do { \
	if ((cfg) == NULL) { \
		PMREP_LOG_ERR("invalid argument: cfg is NULL"); \
		return PMREP_E_INVAL; \
	} \
} while (0)

int
pmrep_target_cfg_set_path(struct pmrep_target_cfg *cfg, const char *path)
{
	CHECK_CFG(cfg);
	return set_str(&cfg->path, path, "path");
}

int
pmrep_target_cfg_set_data_size(struct pmrep_target_cfg *cfg,
		uint64_t data_size, bool create)
{
	CHECK_CFG(cfg);
	if (create && data_size == 0) {
		PMREP_LOG_ERR("creating a replica needs a data size > 0");
		return PMREP_E_INVAL;
	}
	/* header + data area must be a file size (an off_t): a larger value
	 * would wrap data_size + PMREP_REPLICA_DATA_OFFSET and register far
	 * more memory than the file maps */
	if (data_size > (uint64_t)INT64_MAX - PMREP_REPLICA_DATA_OFFSET) {
		PMREP_LOG_ERR("data size %llu: at most %llu bytes",
				(unsigned long long)data_size,
				(unsigned long long)((uint64_t)INT64_MAX -
					PMREP_REPLICA_DATA_OFFSET));
		return PMREP_E_INVAL;
	}
	cfg->data_size = data_size;
	cfg->create = create;
	return 0;
}

int
pmrep_target_cfg_set_address(struct pmrep_target_cfg *cfg, const char *addr,
		const char *port)
{
	CHECK_CFG(cfg);
	if (addr == NULL || port == NULL) {
		PMREP_LOG_ERR("invalid argument: addr or port is NULL");
		return PMREP_E_INVAL;
	}
	if (addr[0] == '\0') {
		PMREP_LOG_ERR("invalid argument: addr is empty");
		return PMREP_E_INVAL;
	}
	int ret = repl_port_check(port, true);
	if (ret)
		return ret;
	ret = set_str(&cfg->addr, addr, "addr");
	return ret ? ret : set_str(&cfg->port, port, "port");
}

int
pmrep_target_cfg_set_key(struct pmrep_target_cfg *cfg, const uint8_t *key,
		size_t len)
{
	CHECK_CFG(cfg);
	return repl_keys_add(cfg->keys, &cfg->nkeys, 0, key, len);
}

int
pmrep_target_cfg_add_key(struct pmrep_target_cfg *cfg, uint32_t key_id,
		const uint8_t *key, size_t len)
{
	CHECK_CFG(cfg);
	return repl_keys_add(cfg->keys, &cfg->nkeys, key_id, key, len);
}

int
pmrep_target_cfg_remove_key(struct pmrep_target_cfg *cfg, uint32_t key_id)
{
	CHECK_CFG(cfg);
	return repl_keys_remove(cfg->keys, &cfg->nkeys, key_id);
}

int
pmrep_target_cfg_set_direct_write_to_pmem(struct pmrep_target_cfg *cfg,
		bool direct)
{
	CHECK_CFG(cfg);
	cfg->direct_write_to_pmem = direct;
	return 0;
}

int
pmrep_target_cfg_set_staging(struct pmrep_target_cfg *cfg, bool force)
{
	CHECK_CFG(cfg);
	cfg->staging = force;
	return 0;
}

int
pmrep_target_cfg_set_timeout(struct pmrep_target_cfg *cfg, int timeout_ms)
{
	CHECK_CFG(cfg);
	if (timeout_ms <= 0) {
		PMREP_LOG_ERR("timeout must be > 0 ms, got %d", timeout_ms);
		return PMREP_E_INVAL;
	}
	cfg->timeout_ms = timeout_ms;
	return 0;
}

int
pmrep_target_cfg_set_tls(struct pmrep_target_cfg *cfg, bool on)
{
	CHECK_CFG(cfg);
	cfg->no_tls = !on;
	return 0;
}

int
pmrep_target_cfg_add_tls_name(struct pmrep_target_cfg *cfg, const char *name)
{
	CHECK_CFG(cfg);
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n >= REPL_TLS_NAME_MAX ||
			cfg->ntls_names == REPL_TLS_NAMES_MAX) {
		PMREP_LOG_ERR("TLS name: a \"host:port\" of 1..%d bytes, at most %d names",
				REPL_TLS_NAME_MAX - 1, REPL_TLS_NAMES_MAX);
		return PMREP_E_INVAL;
	}
	memcpy(cfg->tls_names[cfg->ntls_names++], name, n + 1);
	return 0;
}
