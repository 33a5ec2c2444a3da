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
#define KEY_FORMAT_PREFIX "pmrep-key 1 "
static const char key_check_label[] = "pmrep-key check";

/* the key file's check: the first 4 bytes of SHA-256(label NUL ‖ id LE32
 * ‖ key) */
static int
key_check_value(uint32_t id, const uint8_t *key, size_t len, uint8_t out[4])
{
	uint8_t idb[4] = { (uint8_t)id, (uint8_t)(id >> 8), (uint8_t)(id >> 16),
		(uint8_t)(id >> 24) };
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned mdl = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return crypto_error("EVP_MD_CTX_new");
	int ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
		EVP_DigestUpdate(ctx, key_check_label, sizeof(key_check_label)) == 1 &&
		EVP_DigestUpdate(ctx, idb, 4) == 1 &&
		EVP_DigestUpdate(ctx, key, len) == 1 &&
		EVP_DigestFinal_ex(ctx, md, &mdl) == 1;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return crypto_error("SHA-256");
	memcpy(out, md, 4);
	return 0;
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* n bytes from 2n lowercase hex digits; false on anything else */
static bool
hex_decode(const char *s, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		int h = hex_digit(s[2 * i]), l = hex_digit(s[2 * i + 1]);
		if (h < 0 || l < 0)
			return false;
		out[i] = (uint8_t)(h << 4 | l);
	}
	return true;
}

/* the "pmrep-key 1 ID HEX CHECK" line of `len` bytes (newline removed):
 * the key into key (room: max), *key_len, *key_id */
static int
key_format_parse(const char *path, const char *line, size_t len, uint8_t *key,
		size_t max, size_t *key_len, uint32_t *key_id)
{
	size_t p = sizeof(KEY_FORMAT_PREFIX) - 1;
	uint64_t id = 0;
	size_t digits = 0;
	while (p < len && line[p] >= '0' && line[p] <= '9' && digits < 10) {
		id = id * 10 + (uint64_t)(line[p++] - '0');
		digits++;
	}
	if (digits == 0 || id > UINT32_MAX || p >= len || line[p] != ' ')
		goto bad;
	const char *hex = line + ++p;
	size_t hexlen = 0;
	while (p + hexlen < len && line[p + hexlen] != ' ')
		hexlen++;
	/* the hex key, one blank, 8 hex digits of check, nothing more */
	if (hexlen % 2 != 0 || p + hexlen + 1 + 8 != len)
		goto bad;
	size_t n = hexlen / 2;
	if (n < PMREP_KEY_MIN || n > max) {
		PMREP_LOG_ERR("key file %s: a key must be %d to %zu bytes, this one has %zu",
				path, PMREP_KEY_MIN, max, n);
		return PMREP_E_INVAL;
	}
	uint8_t k[PMREP_KEY_MAX], check[4], want[4];
	if (!hex_decode(hex, n, k) || !hex_decode(hex + hexlen + 1, 4, check)) {
		repl_wipe(k, sizeof(k));
		goto bad;
	}
	int ret = key_check_value((uint32_t)id, k, n, want);
	if (ret == 0 && CRYPTO_memcmp(check, want, 4) != 0) {
		PMREP_LOG_ERR("key file %s: the check does not match the key: the file was changed or damaged",
				path);
		ret = PMREP_E_INVAL;
	}
	if (ret == 0) {
		memcpy(key, k, n);
		*key_len = n;
		*key_id = (uint32_t)id;
	}
	repl_wipe(k, sizeof(k));
	return ret;
bad:
	PMREP_LOG_ERR("key file %s: not a valid \"pmrep-key 1 ID HEX CHECK\" line (truncated or changed?)",
			path);
	return PMREP_E_INVAL;
}

/* a path that names an open file descriptor: its last component is a
 * link by design (`--key-file <(...)`) */
static bool
names_an_fd(const char *path)
{
	return strncmp(path, "/dev/fd/", 8) == 0 ||
		strncmp(path, "/proc/self/fd/", 14) == 0;
}

int
pmrep_key_read_file_ex(const char *path, unsigned flags, uint8_t *key,
		size_t key_size, size_t *key_len, uint32_t *key_id)
{
	if (path == NULL || key == NULL || key_len == NULL) {
		PMREP_LOG_ERR("invalid argument: path, key and key_len must not be NULL");
		return PMREP_E_INVAL;
	}
	if ((flags & ~PMREP_KEY_FILE_INSECURE_OK) != 0) {
		PMREP_LOG_ERR("invalid argument: unknown key file flags 0x%x", flags);
		return PMREP_E_INVAL;
	}
	pmrep_err_clear();
	bool insecure_ok = (flags & PMREP_KEY_FILE_INSECURE_OK) != 0;
	/* O_NONBLOCK: opening a FIFO nobody writes to must not hang;
	 * O_NOFOLLOW: a link as last component is refused (ELOOP) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
			(names_an_fd(path) ? 0 : O_NOFOLLOW));
	if (fd < 0 && errno == ELOOP) {
		int e = errno;
		PMREP_LOG_ERR("key file %s is a symbolic link: refused (name the file itself)",
				path);
		(void) PMREP_ERR_PROVIDER(e, path);
		return PMREP_E_INVAL;
	}
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
	if ((st.st_mode & 077) != 0 || st.st_uid != geteuid()) {
		const char *what = (st.st_mode & 077) != 0 ?
			"group or others may access it" :
			"it is not owned by the effective user";
		if (!insecure_ok) {
			PMREP_LOG_ERR("key file %s refused: %s (mode %03o, owner uid %u; chmod 600 / chown it, or allow it explicitly: --insecure-key-file)",
					path, what, (unsigned)(st.st_mode & 0777),
					(unsigned)st.st_uid);
			close(fd);
			return PMREP_E_AUTH;
		}
		PMREP_LOG_WARN("key file %s: %s (mode %03o, owner uid %u): accepted as asked",
				path, what, (unsigned)(st.st_mode & 0777),
				(unsigned)st.st_uid);
	}

	/* room for the longest "pmrep-key" line and one byte more */
	char buf[sizeof(KEY_FORMAT_PREFIX) + 11 + 2 * PMREP_KEY_MAX + 10 + 2];
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
	uint32_t id = 0;
	if (len >= sizeof(KEY_FORMAT_PREFIX) - 1 &&
			memcmp(buf, KEY_FORMAT_PREFIX, sizeof(KEY_FORMAT_PREFIX) - 1) == 0) {
		ret = key_format_parse(path, buf, len, key, max, key_len, &id);
		if (ret)
			goto out;
	} else if (len >= 9 && memcmp(buf, "pmrep-key", 9) == 0) {
		PMREP_LOG_ERR("key file %s: a \"pmrep-key\" file of a format this version does not read",
				path);
		ret = PMREP_E_INVAL;
		goto out;
	} else {
		/* the raw key of the format before keygen */
		if (len < PMREP_KEY_MIN || len > max) {
			PMREP_LOG_ERR("key file %s: a key must be %d to %zu bytes (without one trailing newline)",
					path, PMREP_KEY_MIN, max);
			ret = PMREP_E_INVAL;
			goto out;
		}
		memcpy(key, buf, len);
		*key_len = len;
	}
	if (*key_len < PMREP_KEY_GOOD)
		PMREP_LOG_WARN("key file %s: a key of %zu bytes is short: rotate it to one of %d random bytes or more (pmrep keygen)",
				path, *key_len, PMREP_KEY_GOOD);
	if (key_id)
		*key_id = id;
out:
	repl_wipe(buf, sizeof(buf));
	close(fd);
	return ret;
}

int
pmrep_key_read_file(const char *path, uint8_t *key, size_t key_size,
		size_t *key_len)
{
	return pmrep_key_read_file_ex(path, 0, key, key_size, key_len, NULL);
}

int
pmrep_key_write_file(const char *path, uint32_t key_id, size_t len)
{
	if (path == NULL || len < PMREP_KEY_GOOD || len > PMREP_KEY_MAX) {
		PMREP_LOG_ERR("invalid argument: a path and %d..%d key bytes are needed",
				PMREP_KEY_GOOD, PMREP_KEY_MAX);
		return PMREP_E_INVAL;
	}
	pmrep_err_clear();
	uint8_t k[PMREP_KEY_MAX], check[4];
	char line[sizeof(KEY_FORMAT_PREFIX) + 11 + 2 * PMREP_KEY_MAX + 10 + 2];
	int ret = repl_random(k, len);
	if (ret == 0)
		ret = key_check_value(key_id, k, len, check);
	if (ret)
		goto wipe;
	static const char hx[] = "0123456789abcdef";
	int n = snprintf(line, sizeof(line), KEY_FORMAT_PREFIX "%u ", key_id);
	size_t p = (size_t)n;
	for (size_t i = 0; i < len; i++) {
		line[p++] = hx[k[i] >> 4];
		line[p++] = hx[k[i] & 15];
	}
	line[p++] = ' ';
	for (size_t i = 0; i < 4; i++) {
		line[p++] = hx[check[i] >> 4];
		line[p++] = hx[check[i] & 15];
	}
	line[p++] = '\n';
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0) {
		ret = PMREP_ERR_PROVIDER(errno, path);
		goto wipe;
	}
	/* the umask cannot widen 0600, but make it exactly that */
	if (fchmod(fd, 0600) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "fchmod key file");
		goto unlink;
	}
	size_t done = 0;
	while (done < p) {
		ssize_t w = write(fd, line + done, p - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = PMREP_ERR_PROVIDER(w < 0 ? errno : EIO, "write key file");
			goto unlink;
		}
		done += (size_t)w;
	}
	if (fsync(fd) != 0) {
		ret = PMREP_ERR_PROVIDER(errno, "fsync key file");
		goto unlink;
	}
	close(fd);
	goto wipe;
unlink:
	close(fd);
	(void) unlink(path);
wipe:
	repl_wipe(k, sizeof(k));
	repl_wipe(line, sizeof(line));
	return ret;
}
