#!/bin/bash
# check-exports-selftest.sh CC SRC_DIR LIBPMREP_SO -- scripts/check-exports.sh
# passes on the built library and fails, naming the culprit, on each
# deliberately broken case: a PMREP_API function missing from the version
# script, a version script entry no header declares, a wildcard in the
# script, a library that exports a non-API symbol and has the wrong SONAME.
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: $0 CC SRC_DIR LIBPMREP_SO" >&2; exit 2; }
cc=$1 src=$2 lib=$3
chk=$src/scripts/check-exports.sh map=$src/src/libpmrep.map
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
rc=0

"$chk" "$lib" "$src/include" "$map" || { echo "FAIL: the built library does not pass"; rc=1; }

expect_fail() { # what, pattern the output must show, check args...
	local what=$1 pat=$2; shift 2
	if "$chk" "$@" >"$d/out" 2>&1; then
		echo "FAIL: $what passed the check"; rc=1
	elif grep -q -- "$pat" "$d/out"; then
		echo "ok: $what fails: $(grep -m1 -- "$pat" "$d/out")"
	else
		echo "FAIL: $what failed without naming '$pat':"; cat "$d/out"; rc=1
	fi
}

cp -r "$src/include" "$d/inc"
echo 'PMREP_API int pmrep_not_in_the_map(void);' >>"$d/inc/pmrep/base.h"
expect_fail "a PMREP_API function missing from the map" \
	'pmrep_not_in_the_map: declared PMREP_API but not in' "$lib" "$d/inc" "$map"

sed 's/^\(\t\tpmrep_write;\)$/\1\n\t\tpmrep_ghost;/' "$map" >"$d/ghost.map"
expect_fail "a map entry no header declares" \
	'pmrep_ghost: in .* but declared PMREP_API by no public header' "$lib" "$src/include" "$d/ghost.map"

printf 'PMREP_0.1 {\n\tglobal:\n\t\tpmrep_*;\n\tlocal:\n\t\t*;\n};\n' >"$d/glob.map"
expect_fail "a wildcard map" 'uses a wildcard' "$lib" "$src/include" "$d/glob.map"

# a library that leaks a helper, without version nodes, with another SONAME
cat >"$d/leak.c" <<'C'
int pmrep_err_errno(void) { return 0; }
int leaked_helper(void) { return 1; }
C
"$cc" -shared -fPIC -Wl,-soname,libpmrep.so.1 "$d/leak.c" -o "$d/libleak.so" ||
	{ echo "FAIL: could not build the leaking library"; exit 1; }
expect_fail "a library exporting a non-API symbol" \
	'leaked_helper: exported (T) but not public API' "$d/libleak.so" "$src/include" "$map"
expect_fail "an unversioned export" \
	'pmrep_err_errno: not in a version node' "$d/libleak.so" "$src/include" "$map"
expect_fail "a missing export" \
	'pmrep_write: public API but not exported' "$d/libleak.so" "$src/include" "$map"
expect_fail "a wrong SONAME" "SONAME is 'libpmrep.so.1'" "$d/libleak.so" "$src/include" "$map"
exit $rc
