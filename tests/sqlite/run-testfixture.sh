#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# run-testfixture.sh BUILD_DIR [TEST.test ...] -- SQLite's own tests over
# the VFS "pmrep" (docs/DATABASES.md, "SQLite's own tests").
#
# Builds SQLite's testfixture from Debian's sqlite3 source package (fetched
# with apt-get source through a private apt configuration: the machine's
# apt sources are not touched) with pmrep as the default VFS
# (tests/sqlite/testfixture-init.c through SQLITE_EXTRA_INIT, linked to
# BUILD_DIR's libpmrep-sqlite), into a cache directory reused by the next
# run, then runs the listed test files (default: the bounded subset below,
# the files that pass), two at a time, each in a scratch directory.
#
#   PMREP_TESTFIXTURE_CACHE  the cache (default /var/cache/pmrep-ci/
#                            sqlite-testfixture when writable, else
#                            ~/.cache/pmrep/sqlite-testfixture)
#   (a test named NAME:SIZE runs with logs of SIZE)
#   PMREP_SQLITE_CREATE_SIZE each test database's log (default 64M, sparse)
#   PMREP_TESTFIXTURE_JOBS   test files run at once (default 2)
#   PMREP_TESTFIXTURE_TIMEOUT seconds per test file (default 300)
#
# Exit: 0 all passed, 1 a test file failed, 2 usage, 77 the source, Tcl or
# the tools to build it cannot be had (skipped).
set -u

# the bounded subset: SQLite's test files that pass over pmrep, about
# 100 s on 2 cores (docs/DATABASES.md "SQLite's own tests" lists the rest
# and why each fails); NAME:SIZE runs NAME with logs of SIZE (a
# test's transaction larger than a region of the default)
SUBSET="
walcrash crash3 crash4 crash6 crash7:256M walprotocol walfault2 walrofault
wal8 walbig walblock walshared walprotocol2 crash5 crashM
jrnlmode3 rollback2 rollbackfault pager4
recover1 recoverclobber recovercorrupt2 recoverold recoverrowid
recoverslowidx recoversql
"

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 BUILD_DIR [TEST.test ...]" >&2
	exit 2
fi
BUILD=$(cd "$1" && pwd)
shift
HERE=$(cd "$(dirname "$0")" && pwd)
SQLDIR=$BUILD/tools/sqlite
if [ ! -e "$SQLDIR/libpmrep-sqlite.so" ]; then
	echo "SKIP: $SQLDIR/libpmrep-sqlite.so not built" >&2
	exit 77
fi

if [ -n "${PMREP_TESTFIXTURE_CACHE:-}" ]; then
	CACHE=$PMREP_TESTFIXTURE_CACHE
elif mkdir -p /var/cache/pmrep-ci/sqlite-testfixture 2>/dev/null &&
		[ -w /var/cache/pmrep-ci/sqlite-testfixture ]; then
	CACHE=/var/cache/pmrep-ci/sqlite-testfixture
else
	CACHE=$HOME/.cache/pmrep/sqlite-testfixture
fi
mkdir -p "$CACHE" || { echo "SKIP: cannot create $CACHE" >&2; exit 77; }

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

for t in gcc make apt-get dpkg-source tclsh timeout flock; do
	command -v $t >/dev/null || skip "$t not found"
done
[ -e /usr/lib/tcl8.6/tclConfig.sh ] || skip "tcl-dev (tclConfig.sh) not installed"

# one build at a time per cache
exec 9>"$CACHE/.lock"
flock 9

# ---- the source: Debian's sqlite3, through a private apt configuration
if ! ls -d "$CACHE"/src/sqlite3-*/test >/dev/null 2>&1; then
	A=$CACHE/apt
	rm -rf "$A" "$CACHE/src"
	mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc" "$CACHE/src"
	KR=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -e $KR ] || skip "$KR not found"
	cat >"$A/etc/sources.list" <<EOF
deb-src [signed-by=$KR] http://deb.debian.org/debian bookworm main
deb-src [signed-by=$KR] http://deb.debian.org/debian bookworm-updates main
deb-src [signed-by=$KR] http://deb.debian.org/debian-security bookworm-security main
EOF
	APT="-o Dir::Etc::SourceList=$A/etc/sources.list -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists=$A/lists -o Dir::Cache=$A/cache
		-o APT::Sandbox::User=$(id -un)"
	# the installed library's version where the archive has it
	VER=$(dpkg-query -W -f '${Version}' libsqlite3-0 2>/dev/null)
	if ! apt-get -q $APT update >"$CACHE/apt.log" 2>&1; then
		skip "apt-get update of the deb-src lists failed (see $CACHE/apt.log)"
	fi
	( cd "$CACHE/src" &&
	  { { [ -n "$VER" ] && apt-get -q $APT source "sqlite3=$VER"; } ||
	    apt-get -q $APT source sqlite3; } ) >>"$CACHE/apt.log" 2>&1 ||
		skip "apt-get source sqlite3 failed (see $CACHE/apt.log)"
	rm -rf "$A"
fi
SRC=$(ls -d "$CACHE"/src/sqlite3-*/ | head -1)
SRC=${SRC%/}

# ---- testfixture, linked to libpmrep-sqlite (found at run time through
# LD_LIBRARY_PATH: BUILD_DIR's library is the one tested)
INIT=$HERE/testfixture-init.c
KEY=$( (cat "$INIT"; echo "$SRC") | sha256sum | cut -c1-16)
TF=$CACHE/build/testfixture
if [ ! -x "$TF" ] || [ "$(cat "$CACHE/build/.key" 2>/dev/null)" != "$KEY" ]; then
	echo "building testfixture in $CACHE/build (about 2 minutes)"
	rm -rf "$CACHE/build"
	mkdir -p "$CACHE/build"
	(
		set -e
		cd "$CACHE/build"
		gcc -O2 -c -I"$HERE/../../tools/sqlite" \
			-o pmrep-init.o "$INIT"
		"$SRC/configure" --with-tcl=/usr/lib/tcl8.6 --disable-shared \
			>configure.log 2>&1
		make -j"$(nproc)" testfixture \
			OPTS="-DSQLITE_EXTRA_INIT=pmrep_testfixture_init" \
			LIBS="$CACHE/build/pmrep-init.o -L$SQLDIR -lpmrep-sqlite" \
			>make.log 2>&1
	) || { echo "FAIL: building testfixture (see $CACHE/build/*.log)" >&2; exit 1; }
	echo "$KEY" >"$CACHE/build/.key"
fi

# ---- the tests
if [ $# -gt 0 ]; then
	TESTS="$*"
else
	TESTS=$SUBSET
fi
export LD_LIBRARY_PATH=$SQLDIR:$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PMREP_SQLITE_CREATE_SIZE=${PMREP_SQLITE_CREATE_SIZE:-64M}
export PMREP_TF=$TF PMREP_TF_SRC=$SRC
export PMREP_TF_TIMEOUT=${PMREP_TESTFIXTURE_TIMEOUT:-300}
OUT=$(mktemp -d /tmp/pmrep-testfixture.XXXXXX)
export PMREP_TF_OUT=$OUT

run_one() {
	local name=${1%%:*}
	case $1 in *:*) export PMREP_SQLITE_CREATE_SIZE=${1#*:} ;; esac
	name=${name%.test}
	local t=$PMREP_TF_SRC/test/$name.test
	[ -e "$t" ] || t=$(ls "$PMREP_TF_SRC"/ext/*/"$name".test 2>/dev/null | head -1)
	if [ -z "$t" ] || [ ! -e "$t" ]; then
		echo "$name NOTFOUND" >"$PMREP_TF_OUT/$name.res"
		return
	fi
	local d=$PMREP_TF_OUT/run.$name
	mkdir -p "$d"
	local s=$SECONDS
	(cd "$d" && timeout -k 5 "$PMREP_TF_TIMEOUT" "$PMREP_TF" "$t") \
		>"$PMREP_TF_OUT/$name.log" 2>&1
	local rc=$?
	local res
	res=$(grep -E '^[0-9]+ errors out of [0-9]+ tests' "$PMREP_TF_OUT/$name.log" | tail -1 |
		awk '{print $1 " errors of " $5}')
	if [ $rc -eq 0 ] && [ "${res%% *}" = 0 ]; then
		echo "$name ok (${res#0 errors of } tests, $((SECONDS - s))s)"
	elif [ $rc -eq 124 ]; then
		echo "$name FAIL timeout after $((SECONDS - s))s"
	else
		echo "$name FAIL rc=$rc ${res:-no result line} ($((SECONDS - s))s)"
	fi >"$PMREP_TF_OUT/$name.res"
	rm -rf "$d"
}
export -f run_one

start=$SECONDS
printf '%s\n' $TESTS | xargs -P "${PMREP_TESTFIXTURE_JOBS:-2}" -I{} bash -c 'run_one {}'
fail=0
for n in $TESTS; do
	n=${n%%:*}
	n=${n%.test}
	cat "$OUT/$n.res"
	grep -q ' ok ' "$OUT/$n.res" || fail=1
done
echo "testfixture over pmrep: $(printf '%s\n' $TESTS | wc -l) test files, $((SECONDS - start))s, logs in $OUT"
if [ $fail -ne 0 ]; then
	echo "FAIL: see the logs in $OUT" >&2
	exit 1
fi
rm -rf "$OUT"
exit 0
