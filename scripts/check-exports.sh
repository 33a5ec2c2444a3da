#!/bin/bash
# check-exports.sh -- libpmrep's exported symbols are exactly its public API
# (docs/ABI.md). Usage:
#   scripts/check-exports.sh LIBPMREP_SO INCLUDE_DIR MAP [SONAME]
# Three lists must be equal:
#   - the functions the public headers (INCLUDE_DIR/pmrep.h, pmrep/*.h)
#     declare PMREP_API;
#   - the symbols the version script MAP names (global:, every node);
#   - what LIBPMREP_SO exports (nm -D --defined-only), every function in a
#     version node of MAP, nothing else (besides the nodes themselves).
# and the library's SONAME is SONAME (default libpmrep.so.0).
# Exit 0: equal; 1: a difference (each one printed); 2: bad usage.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 LIBPMREP_SO INCLUDE_DIR MAP [SONAME]" >&2; exit 2; }
lib=$1 inc=$2 map=$3 want_soname=${4:-libpmrep.so.0}
for f in "$lib" "$map" "$inc/pmrep.h"; do
	[ -e "$f" ] || { echo "check-exports: $f: not found" >&2; exit 2; }
done
d=$(mktemp -d) || exit 2
trap 'rm -rf "$d"' EXIT

# a declaration begins a line with PMREP_API; the name is the identifier
# right before its first '('
cat "$inc/pmrep.h" "$inc"/pmrep/*.h | grep -E '^PMREP_API[[:space:]]' |
	sed -E 's/\(.*//; s/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*$/\1/' |
	sort >"$d/api"
# the map's global symbols, and its node names
sed 's#/\*.*\*/##g' "$map" | awk '
	/^[[:space:]]*[A-Za-z_][A-Za-z0-9_.]*[[:space:]]*\{/ { sub(/[[:space:]]*\{.*/, ""); gsub(/[[:space:]]/, ""); print > "'"$d/nodes"'"; sect = ""; next }
	/global:/ { sect = "g"; next }
	/local:/ { sect = "l"; next }
	sect == "g" && /;/ { gsub(/[[:space:];]/, ""); if ($0 != "") print }
' | sort >"$d/map"
touch "$d/nodes"
# what the library exports: name, type, version
nm -D --defined-only "$lib" | awk '{ print $3, $2 }' | sort >"$d/nm"

rc=0
fail() { echo "check-exports: $*"; rc=1; }
[ -s "$d/api" ] || fail "no PMREP_API declaration found under $inc"
if grep -q '[*?]' "$d/map"; then
	fail "the version script uses a wildcard in global: (list each function): $(grep '[*?]' "$d/map" | tr '\n' ' ')"
fi
comm -23 "$d/api" "$d/map" | while read -r s; do echo "check-exports: $s: declared PMREP_API but not in $map"; done
comm -13 "$d/api" "$d/map" | while read -r s; do echo "check-exports: $s: in $map but declared PMREP_API by no public header"; done
[ "$(comm -3 "$d/api" "$d/map" | wc -l)" -eq 0 ] || rc=1

awk '{ n = $1; sub(/@.*/, "", n); print n }' "$d/nm" | sort -u >"$d/exported"
while read -r sym type; do
	name=${sym%%@*} ver=${sym#*@}; ver=${ver#@}
	if [ "$type" = A ] && grep -qxF "$name" "$d/nodes"; then
		continue	# a version node
	fi
	if ! grep -qxF "$name" "$d/api"; then
		fail "$name: exported ($type) but not public API"
		continue
	fi
	[ "$type" = T ] || fail "$name: exported as type $type, not a function (T)"
	if [ "$sym" = "$name" ] || ! grep -qxF "$ver" "$d/nodes"; then
		fail "$name: not in a version node of $map (nm: $sym)"
	fi
done <"$d/nm"
comm -23 "$d/api" "$d/exported" | while read -r s; do echo "check-exports: $s: public API but not exported by $lib"; done
[ "$(comm -23 "$d/api" "$d/exported" | wc -l)" -eq 0 ] || rc=1

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$soname" = "$want_soname" ] || fail "SONAME is '$soname', expected '$want_soname'"

if [ $rc -eq 0 ]; then
	echo "check-exports: $(wc -l <"$d/api") functions: headers = $(basename "$map") = exports of $(basename "$lib") (nodes: $(tr '\n' ' ' <"$d/nodes")), SONAME $soname"
fi
exit $rc
