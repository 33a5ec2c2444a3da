#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# check-man.sh -- the man pages cover exactly what libpmrep.so exports, and
# every page renders without a warning.
#
#   scripts/check-man.sh DIR              DIR: an install prefix (lib*/libpmrep.so.*,
#                                         share/man) or a build dir (libpmrep.so, man/)
#   scripts/check-man.sh --lib LIB --man MANDIR
#   scripts/check-man.sh --self-test BUILD_DIR
#
# Fails (exit 1), naming each, on: an exported function (nm -D
# --defined-only, type T) without MANDIR/man3/NAME.3; a man3 page of a
# pmrep_* function that is not exported; a missing pmrep(7), pmrep(1) or
# pmrep-target(8); a page on which groff -ww or man --warnings warns; a
# prefix in which `man -w pmrep_mirror_persist` does not find the page; a
# long option (struct option) or command of the pmrep command's sources
# (tools/pmrep.c, tools/pmrep_*.c) or of tools/pmrep-target.c that
# docs/man/pmrep.1.md / pmrep-target.8.md do not name (when the source
# tree is next to this script).
# --self-test proves the checks fail where they should: it runs the check
# on BUILD_DIR (must pass), then on copies with one page deleted, with a
# page of a function that is not exported, with a page that warns, and
# runs the generator on a copy of the headers that declares an exported
# function without a doc comment (each must fail, naming the culprit).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

die() { echo "check-man: $*" >&2; exit 2; }

find_lib_man() { # dir -> LIB MAN
	local d=$1
	if [ -d "$d/share/man" ]; then
		MAN=$d/share/man
		LIB=$(find "$d" -path '*/lib*' -name 'libpmrep.so.*.*' -type f 2>/dev/null | head -1)
	else
		MAN=$d/man
		LIB=$(find "$d" -maxdepth 1 -name 'libpmrep.so.*.*' -type f 2>/dev/null | head -1)
		[ -n "$LIB" ] || LIB=$d/libpmrep.so
	fi
	[ -n "$LIB" ] && [ -f "$LIB" ] || die "no libpmrep.so under $d"
	[ -d "$MAN" ] || die "no man pages under $d (looked in $MAN)"
}

check() { # LIB MAN
	local lib=$1 man=$2 bad=0 f w
	local exported pages
	exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' | sort -u)
	[ -n "$exported" ] || { echo "check-man: $lib exports no function"; return 1; }
	pages=$(find "$man/man3" -maxdepth 1 \( -name '*.3' -o -name '*.3.gz' \) 2>/dev/null |
		sed 's|.*/||; s/\.3\(\.gz\)\{0,1\}$//' | sort -u)
	for f in $(comm -23 <(echo "$exported") <(echo "$pages")); do
		echo "check-man: $f is exported by $(basename "$lib") but has no man page ($man/man3/$f.3)"
		bad=1
	done
	for f in $(comm -13 <(echo "$exported") <(echo "$pages") | grep '^pmrep_'); do
		echo "check-man: $man/man3/$f.3 documents $f, which $(basename "$lib") does not export"
		bad=1
	done
	for f in man7/pmrep.7 man1/pmrep.1 man8/pmrep-target.8; do
		[ -f "$man/$f" ] || [ -f "$man/$f.gz" ] || { echo "check-man: no $man/$f"; bad=1; }
	done
	# every page renders without a warning (groff's and man-db's view);
	# the self-test skips it where it tests the coverage only
	for f in "$man"/man[0-9]/*; do
		[ -z "${CHECK_MAN_NO_RENDER:-}" ] || break
		[ -f "$f" ] || continue
		case $f in *.gz) w=$(zcat "$f" | groff -ww -man -z -Tutf8 2>&1) ;;
			*) w=$(groff -ww -man -z -Tutf8 "$f" 2>&1) ;; esac
		w=$w${w:+$'\n'}$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
		if [ -n "$w" ]; then
			echo "check-man: $f renders with warnings:"; echo "$w" | sed 's/^/    /'
			bad=1
		fi
	done
	# an installed tree: man finds the pages by MANPATH
	if [ "$(basename "$man")" = man ] && [ "$(basename "$(dirname "$man")")" = share ]; then
		for f in pmrep_mirror_persist pmrep.7 pmrep.1 pmrep-target; do
			local sec="" name=$f
			case $f in *.[0-9]) sec=${f##*.}; name=${f%.*} ;; esac
			w=$(MANPATH=$man man -w $sec "$name" 2>/dev/null)
			case $w in "$man"/*) ;; *)
				echo "check-man: MANPATH=$man man -w $sec $name: '${w:-nothing}', not a page of $man"
				bad=1 ;;
			esac
		done
	fi
	# the tools' pages name every long option and command of their sources
	tool_pages || bad=1
	local n; n=$(echo "$exported" | wc -l)
	if [ "$bad" -eq 0 ]; then
		echo "check-man: ok: $n exported functions, each with its page in $man/man3, no stale page, $(find "$man"/man[0-9] -type f | wc -l) pages render without warnings"
	fi
	return "$bad"
}

tool_pages() {
	local src name md o bad=0
	# a pattern of source files (the pmrep command: main in pmrep.c, its
	# commands in pmrep_*.c), then the page that must name their options
	for pair in "tools/pmrep.c:docs/man/pmrep.1.md" "tools/pmrep_*.c:docs/man/pmrep.1.md" \
			"tools/pmrep-target.c:docs/man/pmrep-target.8.md"; do
		md=${CHECK_MAN_DOCS:-$HERE/../docs/man}/${pair##*/}
		for src in "$HERE"/../${pair%%:*}; do
			[ -f "$src" ] && [ -f "$md" ] || continue
			name=tools/${src##*/}
			for o in $(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", [a-z_]*, NULL, .*/\1/p' "$src" | sort -u); do
				grep -q -- "--$o\b" "$md" ||
					{ echo "check-man: ${pair#*:} does not name --$o (an option of $name)"; bad=1; }
			done
			for o in $(sed -n 's/.*strcmp(cmd, "\([a-z-]*\)") == 0)$/\1/p' "$src" | sort -u); do
				case $o in help|version) continue ;; esac
				grep -q -- "\*\*$o\*\*" "$md" ||
					{ echo "check-man: ${pair#*:} does not describe the command $o (of $name)"; bad=1; }
			done
		done
	done
	return "$bad"
}

expect_fail() { # what, pattern, command...
	local what=$1 pat=$2 out rc; shift 2
	out=$("$@" 2>&1); rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "self-test: FAILED: $what: the check passed"; echo "$out" | sed 's/^/    /'; return 1
	fi
	if ! echo "$out" | grep -q -- "$pat"; then
		echo "self-test: FAILED: $what: exit $rc but no '$pat' in:"; echo "$out" | sed 's/^/    /'; return 1
	fi
	echo "self-test: ok: $what: exit $rc:"
	echo "$out" | grep -A2 -- "$pat" | sed "s/^/    /"
}

# insert a line before the header's last `#ifdef __cplusplus` (its end)
before_last_cplusplus() { # file, line
	local n; n=$(grep -c '^#ifdef __cplusplus$' "$1")
	awk -v n="$n" -v l="$2" '/^#ifdef __cplusplus$/ && ++i == n { print l } { print }' "$1" >"$1.new" &&
		mv "$1.new" "$1"
}

self_test() { # build dir
	local b=$1 t rc=0
	find_lib_man "$b"
	t=$(mktemp -d) || return 1
	trap 'rm -rf "$t"' RETURN
	echo "self-test: the real tree ($b)"
	check "$LIB" "$MAN" || return 1

	cp -a "$MAN" "$t/gone"; rm "$t/gone/man3/pmrep_mirror_persist.3"
	expect_fail "a page deleted" "pmrep_mirror_persist is exported" env CHECK_MAN_NO_RENDER=1 "$HERE/check-man.sh" --lib "$LIB" --man "$t/gone" || rc=1

	cp -a "$MAN" "$t/stale"; cp "$MAN/man3/pmrep_mirror_persist.3" "$t/stale/man3/pmrep_mirror_unexported.3"
	expect_fail "a page of a function not exported" "pmrep_mirror_unexported, which" env CHECK_MAN_NO_RENDER=1 "$HERE/check-man.sh" --lib "$LIB" --man "$t/stale" || rc=1

	cp -a "$MAN" "$t/warn"; printf '.zz_no_such_macro\n' >>"$t/warn/man3/pmrep_mirror_persist.3"
	expect_fail "a page that warns" "pmrep_mirror_persist.3 renders with warnings" check "$LIB" "$t/warn" || rc=1

	mkdir -p "$t/inc/pmrep"; cp "$HERE"/../include/pmrep/*.h "$t/inc/pmrep/"
	before_last_cplusplus "$t/inc/pmrep/mirror.h" 'PMREP_API int pmrep_selftest_undocumented(void);'
	expect_fail "an exported function without a doc comment" "pmrep_selftest_undocumented: no doc comment" \
		python3 "$HERE/gen-man.py" --out "$t/out" "$t"/inc/pmrep/*.h || rc=1

	cp "$HERE"/../include/pmrep/*.h "$t/inc/pmrep/"
	before_last_cplusplus "$t/inc/pmrep/pmem.h" '/* pmrep_selftest_other -- a comment naming another function */'
	before_last_cplusplus "$t/inc/pmrep/pmem.h" 'PMREP_API int pmrep_selftest_misnamed(void);'
	expect_fail "a doc comment naming another function" "pmrep_selftest_misnamed: its comment names pmrep_selftest_other" \
		python3 "$HERE/gen-man.py" --out "$t/out" "$t"/inc/pmrep/*.h || rc=1
	mkdir -p "$t/docs"; cp "$HERE"/../docs/man/*.md "$t/docs/"
	sed -i 's/--staging/--stagin/g' "$t/docs/pmrep-target.8.md"
	expect_fail "a tool's page without one of its options" "does not name --staging" \
		env CHECK_MAN_NO_RENDER=1 CHECK_MAN_DOCS="$t/docs" "$HERE/check-man.sh" --lib "$LIB" --man "$MAN" || rc=1
	cp "$HERE"/../docs/man/*.md "$t/docs/"
	sed -i 's/--generation/--generatio/g' "$t/docs/pmrep.1.md"
	expect_fail "pmrep's page without an option of a command's own file" "does not name --generation (an option of tools/pmrep_recover.c)" \
		env CHECK_MAN_NO_RENDER=1 CHECK_MAN_DOCS="$t/docs" "$HERE/check-man.sh" --lib "$LIB" --man "$MAN" || rc=1
	[ "$rc" -eq 0 ] && echo "self-test: passed"
	return "$rc"
}

case ${1:-} in
--self-test) [ $# -eq 2 ] || die "usage: $0 --self-test BUILD_DIR"; self_test "$2"; exit $? ;;
--lib) [ $# -eq 4 ] && [ "$3" = --man ] || die "usage: $0 --lib LIB --man MANDIR"
	check "$2" "$4"; exit $? ;;
""|-h|--help) sed -n '3,9p' "$0"; exit 2 ;;
*) find_lib_man "$1"; check "$LIB" "$MAN"; exit $? ;;
esac
