/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * target_keys.h -- pmrep-target's keys (target_keys.c): the files and
 * directory they come from (--key-file, --key-dir; or a replica's
 * key-file and key-dir lines), the keys read from them, and a SIGHUP's
 * swap to exactly the keys they hold now.
 */
#ifndef PMREP_TOOLS_TARGET_KEYS_H
#define PMREP_TOOLS_TARGET_KEYS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <pmrep/repl.h>

/* where the keys come from: --key-file paths and a --key-dir */
struct keysrc {
	const char *files[PMREP_TARGET_MAX_KEYS];
	unsigned nfiles;
	const char *dir;	/* NULL: none */
	unsigned flags;		/* pmrep_key_read_file_ex's */
};

/* the keys read from a keysrc */
struct keyset {
	unsigned n;
	uint32_t id[PMREP_TARGET_MAX_KEYS];
	size_t len[PMREP_TARGET_MAX_KEYS];
	uint8_t key[PMREP_TARGET_MAX_KEYS][PMREP_KEY_MAX];
	char from[PMREP_TARGET_MAX_KEYS][PATH_MAX];	/* its file */
};

/* read every key of `src`: 0, or -1 (said why on stderr; ks wiped) */
int keyset_read(struct keyset *ks, const struct keysrc *src);
/* add the keys of ks to a target cfg: 0 or pmrep_target_cfg_add_key's error */
int keyset_to_cfg(const struct keyset *ks, struct pmrep_target_cfg *cfg);
/* SIGHUP: target t holds exactly the keys of src's files (and directory)
 * now, ks with them; when one does not read, the keys stay as they were
 * (said, each line starting with `who`) */
void keyset_reload(struct keyset *ks, struct pmrep_target *t,
		const struct keysrc *src, const char *who);

#endif /* PMREP_TOOLS_TARGET_KEYS_H */
