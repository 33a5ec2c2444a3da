/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * auth.c -- HMAC-SHA256 (EVP_MAC), nonces (RAND_bytes), constant-time
 * compare (CRYPTO_memcmp), key wiping (OPENSSL_cleanse) and reading a key
 * file. The only repl file that includes OpenSSL.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "common/log.h"
#include "auth.h"

/* log libcrypto's reason for the failure of `what` */
static int
crypto_error(const char *what)
{
	unsigned long e = ERR_get_error();
	char buf[256] = "no reason given";
	if (e != 0)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	PMREP_LOG_ERR("libcrypto: %s failed: %s", what, buf);
	return PMREP_E_PROVIDER;
}

int
repl_random(void *buf, size_t len)
{
	if (len > INT32_MAX || RAND_bytes(buf, (int)len) != 1)
		return crypto_error("RAND_bytes");
	return 0;
}

int
repl_key_check(const uint8_t *key, size_t len)
{
	if (key == NULL || len < PMREP_KEY_MIN || len > PMREP_KEY_MAX) {
		PMREP_LOG_ERR("a pre-shared key must be %d to %d bytes, got %zu",
				PMREP_KEY_MIN, PMREP_KEY_MAX, key == NULL ? 0 : len);
		return PMREP_E_INVAL;
	}
	return 0;
}

int
repl_hmac(const uint8_t *key, size_t key_len, const struct repl_buf *parts,
		int n, uint8_t out[REPL_MAC_SIZE])
{
	int ret = repl_key_check(key, key_len);
	if (ret)
		return ret;

	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (mac == NULL)
		return crypto_error("EVP_MAC_fetch(HMAC)");
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
	if (ctx == NULL) {
		ret = crypto_error("EVP_MAC_CTX_new");
		goto free_mac;
	}
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	if (EVP_MAC_init(ctx, key, key_len, params) != 1) {
		ret = crypto_error("EVP_MAC_init");
		goto free_ctx;
	}
	for (int i = 0; i < n; i++) {
		if (EVP_MAC_update(ctx, parts[i].ptr, parts[i].len) != 1) {
			ret = crypto_error("EVP_MAC_update");
			goto free_ctx;
		}
	}
	size_t outl = 0;
	if (EVP_MAC_final(ctx, out, &outl, REPL_MAC_SIZE) != 1) {
		ret = crypto_error("EVP_MAC_final");
		goto free_ctx;
	}
	if (outl != REPL_MAC_SIZE) {
		PMREP_LOG_ERR("HMAC-SHA256 gave %zu bytes, not %d", outl,
				REPL_MAC_SIZE);
		ret = PMREP_E_PROVIDER;
	}
free_ctx:
	EVP_MAC_CTX_free(ctx);
free_mac:
	EVP_MAC_free(mac);
	return ret;
}

bool
repl_mac_equal(const uint8_t a[REPL_MAC_SIZE], const uint8_t b[REPL_MAC_SIZE])
{
	return CRYPTO_memcmp(a, b, REPL_MAC_SIZE) == 0;
}

void
repl_wipe(void *ptr, size_t len)
{
	OPENSSL_cleanse(ptr, len);
}

#define KEY_FILE_WAIT_MS 2000

int
pmrep_key_read_file(const char *path, uint8_t *key, size_t key_size,
		size_t *key_len)
{
	if (path == NULL || key == NULL || key_len == NULL) {
		PMREP_LOG_ERR("invalid argument: path, key and key_len must not be NULL");
		return PMREP_E_INVAL;
	}
	pmrep_err_clear();
	/* O_NONBLOCK: opening a FIFO nobody writes to must not hang */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return PMREP_ERR_PROVIDER(errno, path);

	int ret = 0;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, path);
		close(fd);
		return ret;
	}
	if (S_ISDIR(st.st_mode)) {
		PMREP_LOG_ERR("key file %s is a directory", path);
		close(fd);
		return PMREP_E_INVAL;
	}
	if ((st.st_mode & 077) != 0)
		PMREP_LOG_WARN("key file %s is readable by others than its owner (mode %03o)",
				path, (unsigned)(st.st_mode & 0777));

	/* one byte more than a key may have, to see a key that is too long */
	uint8_t buf[PMREP_KEY_MAX + 2];
	size_t len = 0;
	/* a pipe (`--key-file <(...)`) or a device may make us wait: at most
	 * this long, so a writer that never writes cannot hang the caller */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long long deadline = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 +
		KEY_FILE_WAIT_MS;
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			long long left = deadline - ((long long)ts.tv_sec * 1000 +
					ts.tv_nsec / 1000000);
			struct pollfd p = { .fd = fd, .events = POLLIN };
			if (left > 0 && (poll(&p, 1, (int)left) >= 0 || errno == EINTR))
				continue;
			PMREP_LOG_ERR("key file %s: nothing to read within %d ms",
					path, KEY_FILE_WAIT_MS);
			ret = PMREP_E_INVAL;
			goto out;
		}
		if (n < 0) {
			ret = PMREP_ERR_PROVIDER(errno, "read key file");
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf))
			break;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	size_t max = key_size < PMREP_KEY_MAX ? key_size : PMREP_KEY_MAX;
	if (len < PMREP_KEY_MIN || len > max) {
		PMREP_LOG_ERR("key file %s: a key must be %d to %zu bytes (without one trailing newline)",
				path, PMREP_KEY_MIN, max);
		ret = PMREP_E_INVAL;
		goto out;
	}
	memcpy(key, buf, len);
	*key_len = len;
out:
	repl_wipe(buf, sizeof(buf));
	close(fd);
	return ret;
}
