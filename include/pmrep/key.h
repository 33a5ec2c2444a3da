/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmrep/key.h -- the pre-shared keys of the replication layer: reading a
 * key file (the key and its id) and making a new one. A mirror, a target,
 * a query and a recovery authenticate with such a key (docs/DESIGN.md
 * "Keys").
 *
 * The conventions of <pmrep/repl.h> apply.
 */
#ifndef PMREP_KEY_H
#define PMREP_KEY_H

#include <pmrep/base.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ shared keys */

/* A pre-shared key is 16 to PMREP_KEY_MAX bytes; PMREP_KEY_GOOD and more
 * are taken without a warning (pmrep_key_write_file writes that many). */
#define PMREP_KEY_MIN 16
#define PMREP_KEY_GOOD 32
#define PMREP_KEY_MAX 64

/* pmrep_key_read_file_ex flags */
/* accept a key file that others than its owner may read, or that the
 * effective user does not own (a WARNING is logged instead) */
#define PMREP_KEY_FILE_INSECURE_OK (1u << 0)

/*
 * pmrep_key_read_file_ex -- read a pre-shared key and its key id from the
 * file at `path`. The last path component is opened without following a
 * symbolic link (O_NOFOLLOW: a link there is refused; a path under
 * /dev/fd/ or /proc/self/fd/, e.g. a shell's `<(...)`, is followed: it names
 * an open file). Unless `flags` has PMREP_KEY_FILE_INSECURE_OK, a file
 * that group or others may read or write (mode & 077), or that the
 * effective user does not own, is refused. Two formats:
 *  - the key file pmrep_key_write_file / `pmrep keygen` writes, one line
 *    "pmrep-key 1 ID HEX CHECK\n": format version 1, the key id (decimal
 *    u32), the key in lowercase hex (PMREP_KEY_MIN..PMREP_KEY_MAX bytes),
 *    and the first 4 bytes (8 hex digits) of SHA-256("pmrep-key check" NUL
 *    ‖ id (LE32) ‖ key): a truncated or changed file does not check and is
 *    refused;
 *  - any other content: the file's bytes, without one trailing newline,
 *    are the key (the format before keygen: `head -c 32 /dev/urandom |
 *    base64 > key` works), key id 0.
 * A key shorter than PMREP_KEY_GOOD bytes is accepted with a WARNING
 * (rotate it: docs/DESIGN.md "Keys"). The key is written to `key` (room
 * for `key_size` bytes), its length to *key_len, its id to *key_id (may be
 * NULL).
 * Errors: PMREP_E_INVAL (NULL argument, unknown flags, a key shorter than
 * PMREP_KEY_MIN or longer than min(key_size, PMREP_KEY_MAX), a "pmrep-key"
 * line that does not parse or check, a directory, a symbolic link as last
 * component: pmrep_err_errno() ELOOP), PMREP_E_AUTH (the file is readable
 * by group / others or not ours, without the flag), PMREP_E_PROVIDER (open
 * / read failed: pmrep_err_errno()).
 * Thread-safe.
 */
PMREP_API int pmrep_key_read_file_ex(const char *path, unsigned flags,
		uint8_t *key, size_t key_size, size_t *key_len, uint32_t *key_id);
/*
 * pmrep_key_read_file -- pmrep_key_read_file_ex(path, 0, key, key_size,
 * key_len, NULL): strict about the file's owner and mode, the key id
 * dropped. Errors: those of pmrep_key_read_file_ex. Thread-safe.
 */
PMREP_API int pmrep_key_read_file(const char *path, uint8_t *key,
		size_t key_size, size_t *key_len);
/*
 * pmrep_key_write_file -- make a new key file at `path`: `len` random
 * bytes (PMREP_KEY_GOOD..PMREP_KEY_MAX; RAND_bytes) with id `key_id`, in
 * the "pmrep-key 1" format pmrep_key_read_file_ex reads. Created with
 * O_EXCL | O_NOFOLLOW, mode 0600 (an existing file or link is never
 * overwritten), written and fsync'ed; a failed write removes it.
 * Errors: PMREP_E_INVAL (NULL, len out of range), PMREP_E_PROVIDER (the
 * file exists: pmrep_err_errno() EEXIST; open / write / fsync failed, the
 * random generator failed).
 * Thread-safe.
 */
PMREP_API int pmrep_key_write_file(const char *path, uint32_t key_id,
		size_t len);

#ifdef __cplusplus
}
#endif
#endif /* PMREP_KEY_H */
