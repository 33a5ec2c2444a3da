/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testfixture-init.c -- linked into SQLite's testfixture by
 * tests/sqlite/run-testfixture.sh (SQLITE_EXTRA_INIT): every
 * sqlite3_initialize() makes the VFS "pmrep" the default again (local
 * only, no replicas), so SQLite's own tests run their databases, WALs and
 * journals in pmrep logs. PMREP_TESTFIXTURE_VFS=unix keeps SQLite's own
 * default (to compare); PMREP_SQLITE_CREATE_SIZE, when not set, is 16M.
 */
#include <stdlib.h>
#include <string.h>

#include "pmrep-sqlite.h"

int pmrep_testfixture_init(const char *unused);

int
pmrep_testfixture_init(const char *unused)
{
	(void)unused;
	const char *vfs = getenv("PMREP_TESTFIXTURE_VFS");
	if (vfs != NULL && strcmp(vfs, "unix") == 0)
		return 0;
	(void) setenv("PMREP_SQLITE_CREATE_SIZE", "16M", 0);
	return pmrep_sqlite_register(NULL, 1);
}
