/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn_cfg.c -- the connection configuration: timeouts, queue sizes,
 * completion channels, connect retries, SRQ.
 */
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

#include "common.h"

#define QUEUE_SIZE_MAX 65536

const struct pmrep_conn_cfg pmrep_conn_cfg_default = {
	.timeout_ms = 1000,
	.sq_size = 10,
	.rq_size = 10,
	.cq_size = 10,
	.rcq_size = 0,
	.shared_comp_channel = false,
	.comp_channel = NULL,
	.connect_retries = 0,
	.retry_backoff_ms = 100,
	.srq = NULL,
};

int
pmrep_conn_cfg_new(struct pmrep_conn_cfg **cfg_ptr)
{
	PMREP_CHECK_ARG(cfg_ptr);
	struct pmrep_conn_cfg *cfg = malloc(sizeof(*cfg));
	if (cfg == NULL) {
		PMREP_LOG_ERR("out of memory for a connection configuration");
		return PMREP_E_NOMEM;
	}
	*cfg = pmrep_conn_cfg_default;
	*cfg_ptr = cfg;
	return 0;
}

int
pmrep_conn_cfg_delete(struct pmrep_conn_cfg **cfg_ptr)
{
	PMREP_CHECK_ARG(cfg_ptr);
	if (*cfg_ptr != NULL)
		OPENSSL_cleanse((*cfg_ptr)->tls_psk, sizeof((*cfg_ptr)->tls_psk));
	free(*cfg_ptr);
	*cfg_ptr = NULL;
	return 0;
}

int
pmrep_conn_cfg_set_timeout(struct pmrep_conn_cfg *cfg, int timeout_ms)
{
	PMREP_CHECK_ARG(cfg);
	if (timeout_ms <= 0) {
		PMREP_LOG_ERR("timeout must be > 0 ms, got %d", timeout_ms);
		return PMREP_E_INVAL;
	}
	cfg->timeout_ms = timeout_ms;
	return 0;
}

int
pmrep_conn_cfg_get_timeout(const struct pmrep_conn_cfg *cfg, int *timeout_ms)
{
	PMREP_CHECK_ARG(cfg);
	PMREP_CHECK_ARG(timeout_ms);
	*timeout_ms = cfg->timeout_ms;
	return 0;
}

static int
check_size(const char *what, uint32_t size, bool zero_ok)
{
	if ((size == 0 && !zero_ok) || size > QUEUE_SIZE_MAX) {
		PMREP_LOG_ERR("%s must be %s..%d, got %u", what,
				zero_ok ? "0" : "1", QUEUE_SIZE_MAX, size);
		return PMREP_E_INVAL;
	}
	return 0;
}

/* one setter / getter pair per queue size */
#define SIZE_ACCESSORS(field, zero_ok) \
int \
pmrep_conn_cfg_set_##field(struct pmrep_conn_cfg *cfg, uint32_t field) \
{ \
	PMREP_CHECK_ARG(cfg); \
	int ret = check_size(#field, field, zero_ok); \
	if (ret == 0) \
		cfg->field = field; \
	return ret; \
} \
int \
pmrep_conn_cfg_get_##field(const struct pmrep_conn_cfg *cfg, uint32_t *field) \
{ \
	PMREP_CHECK_ARG(cfg); \
	PMREP_CHECK_ARG(field); \
	*field = cfg->field; \
	return 0; \
}

SIZE_ACCESSORS(sq_size, false)
SIZE_ACCESSORS(rq_size, false)
SIZE_ACCESSORS(cq_size, false)
SIZE_ACCESSORS(rcq_size, true)

int
pmrep_conn_cfg_set_shared_comp_channel(struct pmrep_conn_cfg *cfg, bool shared)
{
	PMREP_CHECK_ARG(cfg);
	cfg->shared_comp_channel = shared;
	return 0;
}

int
pmrep_conn_cfg_get_shared_comp_channel(const struct pmrep_conn_cfg *cfg,
		bool *shared)
{
	PMREP_CHECK_ARG(cfg);
	PMREP_CHECK_ARG(shared);
	*shared = cfg->shared_comp_channel;
	return 0;
}

int
pmrep_conn_cfg_set_comp_channel(struct pmrep_conn_cfg *cfg,
		struct pmrep_comp_channel *channel)
{
	PMREP_CHECK_ARG(cfg);
	cfg->comp_channel = channel;
	return 0;
}

int
pmrep_conn_cfg_set_connect_retries(struct pmrep_conn_cfg *cfg,
		unsigned retries, int backoff_ms)
{
	PMREP_CHECK_ARG(cfg);
	if (backoff_ms <= 0 || retries > 1000) {
		PMREP_LOG_ERR("connect retries must be <= 1000 and backoff > 0 ms"
				" (got %u, %d)", retries, backoff_ms);
		return PMREP_E_INVAL;
	}
	cfg->connect_retries = retries;
	cfg->retry_backoff_ms = backoff_ms;
	return 0;
}

int
pmrep_conn_cfg_set_srq(struct pmrep_conn_cfg *cfg, struct pmrep_srq *srq)
{
	PMREP_CHECK_ARG(cfg);
	cfg->srq = srq;
	return 0;
}

int
pmrep_conn_cfg_set_tls_psk(struct pmrep_conn_cfg *cfg, const char *identity,
		const uint8_t *psk, size_t psk_len)
{
	PMREP_CHECK_ARG(cfg);
	PMREP_CHECK_ARG(identity);
	PMREP_CHECK_ARG(psk);
	size_t n = strlen(identity);
	if (n == 0 || n > PMREP_TLS_IDENTITY_MAX) {
		PMREP_LOG_ERR("TLS PSK identity must be 1..%d bytes, got %zu",
				PMREP_TLS_IDENTITY_MAX, n);
		return PMREP_E_INVAL;
	}
	if (psk_len < PMREP_TLS_PSK_MIN || psk_len > PMREP_TLS_PSK_MAX) {
		PMREP_LOG_ERR("TLS PSK must be %d..%d bytes, got %zu",
				PMREP_TLS_PSK_MIN, PMREP_TLS_PSK_MAX, psk_len);
		return PMREP_E_INVAL;
	}
	memcpy(cfg->tls_identity, identity, n + 1);
	OPENSSL_cleanse(cfg->tls_psk, sizeof(cfg->tls_psk));
	memcpy(cfg->tls_psk, psk, psk_len);
	cfg->tls_psk_len = psk_len;
	cfg->tls = true;
	return 0;
}

int
pmrep_conn_cfg_set_tls_psk_find(struct pmrep_conn_cfg *cfg,
		pmrep_tls_psk_find_fn *fn, void *arg)
{
	PMREP_CHECK_ARG(cfg);
	PMREP_CHECK_ARG(fn);
	cfg->tls_find = fn;
	cfg->tls_find_arg = arg;
	cfg->tls = true;
	return 0;
}

int
pmrep_conn_cfg_clear_tls(struct pmrep_conn_cfg *cfg)
{
	PMREP_CHECK_ARG(cfg);
	OPENSSL_cleanse(cfg->tls_psk, sizeof(cfg->tls_psk));
	cfg->tls_psk_len = 0;
	cfg->tls_identity[0] = '\0';
	cfg->tls_find = NULL;
	cfg->tls_find_arg = NULL;
	cfg->tls = false;
	return 0;
}

int
pmrep_conn_cfg_get_tls(const struct pmrep_conn_cfg *cfg, bool *on)
{
	PMREP_CHECK_ARG(cfg);
	PMREP_CHECK_ARG(on);
	*on = cfg->tls;
	return 0;
}
