#!/bin/bash
# scripts/packages.sh -- pmrep's Debian packages, built and used as a user would (the `packages`
# stage of scripts/test.sh):
#   1. copies the tree (git's tracked and untracked-but-not-ignored files) to OUT/pmrep-VERSION
#      and builds libpmrep0, libpmrep-sqlite0, libpmrep-dev and pmrep-tools there with
#      `dpkg-buildpackage -us -uc -b` (DEB_BUILD_OPTIONS="nocheck parallel=JOBS": the tests run
#      in the other stages); dpkg-gensymbols at check level 4: the build fails when the library's
#      exports and debian/libpmrep0.symbols differ in any way;
#   2. lintian on the result (in the background, during 3): any tag not overridden in
#      debian/*.lintian-overrides fails;
#   3. a clean Debian 12 chroot: a debootstrap minbase (+ man-db, gcc, libc6-dev, pkg-config)
#      made once from the host's configured Debian mirror and cached; each run uses a throwaway
#      overlay on top of it, so the cached one stays as debootstrap made it. There: apt installs
#      the four .deb files (resolving their Depends; the .debs apt fetched are cached beside the
#      chroot), checks that a tcp-only user has what it needs without libibverbs-dev
#      (`pkg-config --cflags --libs pmrep`, a program built with it), that `man
#      pmrep_mirror_persist` and `man pmrep-target` show pages, and runs the README's tcp main
#      job (scripts/main-job.sh with PMREP_MAIN_JOB_INSTALLED=1) against the installed tools.
#
# Usage (as root, Debian 12):
#   scripts/packages.sh                   all of it
#   scripts/packages.sh --build-only      1 and 2 only (no root needed apart from lintian's liking)
#   scripts/packages.sh --fresh-build     all of it, and then the packages built once more in the
#                                         chroot with nothing but the Build-Depends (nocheck
#                                         profile) that apt-get build-dep installs: the same files
#                                         must come out (shows debian/control's list complete)
#   scripts/packages.sh --update-symbols  build, then rewrite debian/libpmrep0.symbols from the
#                                         built library (new symbols get the changelog's upstream
#                                         version: that of the release that adds them, docs/ABI.md)
#                                         and show the diff
# Exit status: 0 all passed; 1 a build, lintian, install or main-job failure; 125 rig failure (no
# mirror, debootstrap failed, no overlayfs); 2 usage error.
#
# Environment:
#   PMREP_PKG_OUT            scratch dir (default <tree>/build-test/packages; made afresh)
#   PMREP_PKG_JOBS=2         parallel build jobs
#   PMREP_PKG_CACHE          cache of the chroot and of apt's .debs (default /var/cache/pmrep-ci)
#   PMREP_PKG_MIRROR         Debian mirror URL (default: the host's enabled apt source for bookworm)
#   PMREP_PKG_CHROOT_MAX_AGE=30  days; an older chroot (or one made with other settings: the stamp
#                            holds suite, mirror, package list) is made again
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
SRC=$(cd "$here/.." && pwd -P)
prog=packages
say() { echo "$prog: $*" >&2; }
rig() { say "error: $*"; exit 125; }
usage() { sed -n '2,/^set -uo/{/^set -uo/!s/^# \{0,1\}//p}' "$0"; }

MODE=all
case ${1:-} in
'') ;;
--build-only) MODE=build ;;
--update-symbols) MODE=symbols ;;
--fresh-build) MODE=fresh ;;
-h | --help) usage; exit 0 ;;
*) say "unknown argument '$1'"; usage >&2; exit 2 ;;
esac
[ $# -le 1 ] || { say "at most one option"; exit 2; }

OUT=${PMREP_PKG_OUT:-$SRC/build-test/packages}
JOBS=${PMREP_PKG_JOBS:-2}
CACHE=${PMREP_PKG_CACHE:-/var/cache/pmrep-ci}
SUITE=bookworm
MAX_AGE=${PMREP_PKG_CHROOT_MAX_AGE:-30}
CHROOT=$CACHE/chroot-$SUITE
ARCHIVES=$CACHE/apt-archives-$SUITE
for v in JOBS MAX_AGE; do
	case ${!v} in '' | *[!0-9]*) say "$v must be a number"; exit 2 ;; esac
done
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
case $OUT in "$SRC" | /) say "PMREP_PKG_OUT must not be the tree itself"; exit 2 ;; esac
export PATH=$PATH:/usr/sbin:/sbin
T0=$SECONDS
step() { echo "==== [packages] $* ($((SECONDS - T0))s)"; }

# ---------------------------------------------------------------- 1. build
for t in dpkg-buildpackage dh lintian git; do
	command -v "$t" >/dev/null || rig "missing host tool: $t (scripts/install-deps.sh --packages)"
done
VERSION=$(cd "$SRC" && dpkg-parsechangelog -S Version) || rig "cannot read debian/changelog"
UPSTREAM=${VERSION%-*}
BSRC=$OUT/pmrep-$UPSTREAM
rm -rf "$OUT" && mkdir -p "$BSRC" || rig "cannot make $BSRC"
step "copy of the tree -> $BSRC"
# only files that exist (a tracked file deleted in the working tree is skipped)
(cd "$SRC" && git ls-files -z -co --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf -) | tar -x -C "$BSRC" || rig "cannot copy the tree"

step "dpkg-buildpackage -us -uc -b (nocheck, -j$JOBS) -> $OUT/build.log"
level=4
[ "$MODE" = symbols ] && level=0
if ! (cd "$BSRC" && DEB_BUILD_OPTIONS="nocheck parallel=$JOBS" DPKG_GENSYMBOLS_CHECK_LEVEL=$level \
		dpkg-buildpackage -us -uc -b >"$OUT/build.log" 2>&1); then
	if grep -q 'dpkg-gensymbols: error' "$OUT/build.log"; then
		sed -n '/^--- debian\/libpmrep0.symbols/,/dpkg-gensymbols: error/p' "$OUT/build.log" | head -60
		say "the library's exports differ from debian/libpmrep0.symbols (above; '+' = exported, not"
		say "listed). A new PMREP_API function: scripts/packages.sh --update-symbols, and check the"
		say "version it got (docs/ABI.md). A '-' line: an export vanished -- an ABI break."
	else
		tail -n 40 "$OUT/build.log"
	fi
	say "the package build failed (log: $OUT/build.log)"
	exit 1
fi
grep -E 'warning:' "$OUT/build.log" | sed "s|$BSRC/||" | sort -u | sed 's/^/  build warning: /'
DEBS=("$OUT"/libpmrep0_"$VERSION"_*.deb "$OUT"/libpmrep-sqlite0_"$VERSION"_*.deb
	"$OUT"/libpmrep-dev_"$VERSION"_*.deb "$OUT"/pmrep-tools_"$VERSION"_*.deb)
for d in "${DEBS[@]}"; do [ -f "$d" ] || { say "not built: $d"; exit 1; }; done
for d in "${DEBS[@]}"; do
	echo "  $(basename "$d"): $(dpkg-deb -c "$d" | grep -vc '/$') files; Depends: $(dpkg-deb -f "$d" Depends)"
	dpkg-deb -c "$d" | awk '/^l/ { print $(NF - 2) " -> " $NF; next } $NF !~ /\/$/ { print $NF }' | sed 's|^\./||' |
		sed -E 's|^(usr/share/man/man[0-9])/.*|\1/*|; s|^(usr/include/pmrep)/.*|\1/*|; s|^(usr/share/doc/[^/]+/examples)/.*|\1/*|' |
		sort | uniq -c | awk '{ n = $1; sub(/^ *[0-9]+ /, ""); printf "      %s%s\n", $0, (n > 1 ? " (" n ")" : "") }'
done

if [ "$MODE" = symbols ]; then
	sym=$SRC/debian/libpmrep0.symbols
	(cd "$BSRC" && dpkg-gensymbols -q -plibpmrep0 -Pdebian/libpmrep0 -v"$UPSTREAM" -c0 \
		-I"$sym" -O"$OUT/symbols.new") || { say "dpkg-gensymbols failed"; exit 1; }
	{
		grep '^#' "$sym"
		sed -n 1p "$OUT/symbols.new"
		echo "* Build-Depends-Package: libpmrep-dev"
		grep '^ ' "$OUT/symbols.new"
	} >"$OUT/symbols.merged"
	cp "$OUT/symbols.merged" "$sym"
	(cd "$SRC" && git diff --stat -- debian/libpmrep0.symbols && git diff -- debian/libpmrep0.symbols | grep '^[-+] ' || true)
	step "debian/libpmrep0.symbols rewritten; review and commit it"
	exit 0
fi

step "lintian (in the background) -> $OUT/lintian.txt"
CHANGES=$(ls "$OUT"/pmrep_"$VERSION"_*.changes)
LPID=
CHILD=
MNT=
cleanup() {
	[ -n "$LPID" ] && kill "$LPID" 2>/dev/null
	# unshare --fork ignores SIGTERM (it waits for its child): SIGKILL, and --kill-child
	# then kills the job's init, and with it everything in its PID namespace
	[ -n "$CHILD" ] && kill -KILL "$CHILD" 2>/dev/null
	wait 2>/dev/null
	# the mounts live in the child's private mount namespace and vanish with it (and the
	# job's own EXIT trap unmounts them); what is left here is the overlay's dirs
	[ -n "$MNT" ] && rm -rf "$MNT"
	return 0
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM HUP
# every tag at every level counts; the overrides (debian/*.lintian-overrides) say why each
# remaining one is expected
lintian -I --pedantic --fail-on error,warning,info,pedantic "$CHANGES" >"$OUT/lintian.txt" 2>&1 &
LPID=$!
lintian_result() {
	local r=0
	wait "$LPID" || r=$?
	LPID=
	grep -v 'running with root privileges' "$OUT/lintian.txt" | sed 's/^/  lintian: /'
	if [ "$r" != 0 ]; then say "lintian: tags above (exit $r)"; return 1; fi
	echo "  lintian: clean ($(cat "$SRC"/debian/*lintian-overrides "$SRC"/debian/source/lintian-overrides 2>/dev/null |
		grep -Evc '^[[:space:]]*(#|$)') overrides, each with its reason in debian/)"
}
if [ "$MODE" = build ]; then
	lintian_result || exit 1
	step "done"
	exit 0
fi

# ---------------------------------------------------------------- 3. the chroot
[ "$(id -u)" = 0 ] || rig "the chroot needs root (debootstrap, mounts)"
for t in debootstrap unshare chroot mount flock; do
	command -v "$t" >/dev/null || rig "missing host tool: $t"
done
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || rig "no overlayfs in this kernel"

# host_uri SUITE -> the URI of the first enabled `deb` source for SUITE in the host's apt sources
host_uri() {
	local suite=$1 f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		awk -v s="$suite" '
		/^[ \t]*deb[ \t]/ { sub(/^[ \t]*deb[ \t]+/, ""); if ($0 ~ /^\[/) sub(/^\[[^]]*\][ \t]*/, "")
			if ($2 == s) { print $1; exit } }' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk -v s="$suite" '
		function flush() { if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no" && (" " suites " ") ~ (" " s " "))
				{ split(uris, u, " "); if (u[1] != "") { print u[1]; found = 1 } }
			types = uris = suites = ""; enabled = "yes" }
		BEGIN { enabled = "yes" }
		/^#/ { next }
		/^[ \t]*$/ { flush(); if (found) exit; next }
		/^[A-Za-z-]+:/ { key = tolower($1); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
			if (key == "types:") types = val; else if (key == "uris:") uris = val
			else if (key == "suites:") suites = val; else if (key == "enabled:") enabled = val }
		END { if (!found) flush() }' "$f"
	done
}
MIRROR=${PMREP_PKG_MIRROR:-$(host_uri "$SUITE" | head -n1)}
[ -n "$MIRROR" ] || rig "no Debian mirror for '$SUITE' in /etc/apt sources: set PMREP_PKG_MIRROR"
# what the base holds beyond minbase: man(1) for the pages, a compiler and pkg-config for a
# user's program; everything else comes in through the packages' Depends
BASE_PKGS="man-db gcc libc6-dev pkg-config"
STAMP="pmrep-pkg-chroot v1 $SUITE $MIRROR $BASE_PKGS"
chroot_ok() { [ -f "$CHROOT/.pmrep-chroot" ] && [ "$(cat "$CHROOT/.pmrep-chroot")" = "$STAMP" ] &&
	[ -z "$(find "$CHROOT/.pmrep-chroot" -mtime "+$MAX_AGE" 2>/dev/null)" ]; }
make_chroot() {
	local tmp=$CHROOT.tmp.$$ r
	step "debootstrap --variant=minbase $SUITE (+ $BASE_PKGS) from $MIRROR into $tmp"
	rm -rf "$tmp"
	# its own mount namespace: the /proc and /sys it mounts in the target go with it
	timeout -k 15 900 unshare -m --propagation private debootstrap --variant=minbase \
		--components=main --include="$(echo $BASE_PKGS | tr ' ' ,)" "$SUITE" "$tmp" "$MIRROR" \
		>"$OUT/debootstrap.log" 2>&1
	r=$?
	if [ $r != 0 ]; then
		tail -n 30 "$OUT/debootstrap.log"
		[ -f "$tmp/debootstrap/debootstrap.log" ] && tail -n 30 "$tmp/debootstrap/debootstrap.log"
		rm -rf "$tmp"
		say "debootstrap failed (exit $r)"
		return 125
	fi
	# apt's lists, so that a run installs from them (and from the cached .debs) offline;
	# no daemon starts in the chroot
	echo "deb $MIRROR $SUITE main" >"$tmp/etc/apt/sources.list"
	printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d" && chmod 755 "$tmp/usr/sbin/policy-rc.d"
	if ! timeout -k 15 300 chroot "$tmp" apt-get update -q >>"$OUT/debootstrap.log" 2>&1; then
		tail -n 20 "$OUT/debootstrap.log"; rm -rf "$tmp"; say "apt-get update in the chroot failed"; return 125
	fi
	rm -f "$tmp"/var/cache/apt/archives/*.deb
	echo "$STAMP" >"$tmp/.pmrep-chroot" && rm -rf "$CHROOT" && mv "$tmp" "$CHROOT" ||
		{ rm -rf "$tmp"; return 125; }
	# .debs fetched for another chroot's lists may not match this one's
	rm -rf "$ARCHIVES"
	step "chroot ready: $CHROOT ($(du -sh "$CHROOT" 2>/dev/null | cut -f1))"
}
mkdir -p "$CACHE" || rig "cannot create $CACHE"
exec 9>"$CACHE/.chroot-$SUITE.lock"
flock -w 900 9 || rig "$CACHE/.chroot-$SUITE.lock stays locked by another run"
rm -rf "$CHROOT".tmp.*	# left by a killed run (we hold the lock)
if chroot_ok; then
	step "chroot $CHROOT (cached, made $(date -u -r "$CHROOT/.pmrep-chroot" +%F))"
else
	[ -d "$CHROOT" ] && say "the cached chroot is stale or was made with other settings: making it again"
	make_chroot || exit $?
fi
mkdir -p "$ARCHIVES/partial" || rig "cannot create $ARCHIVES"

# In a private mount namespace (the mounts vanish with it, whatever happens; its EXIT trap
# unmounts them first anyway): overlay = cached chroot + a throwaway upper dir; apt's .deb
# cache, the .debs and the tree (read-only) bound in; /proc, /dev, a fresh /dev/shm and /tmp.
MNT=$OUT/overlay
read -r -d '' JOB <<'EOF'
set -eu
lower=$1 mnt=$2 archives=$3 src=$4 script=$5
r=$mnt/root
mounted=""
umount_all() { for m in $mounted; do umount -l "$m" 2>/dev/null || true; done; }
trap umount_all EXIT
m() { mount "$@"; mounted="${!#} $mounted"; }
m -t overlay overlay -o "lowerdir=$lower,upperdir=$mnt/upper,workdir=$mnt/work" "$r"
m --bind "$archives" "$r/var/cache/apt/archives"
mkdir -p "$r/debs" "$r/src"
m --bind -o ro "$mnt/debs" "$r/debs"
m --bind -o ro "$src" "$r/src"
m -t proc proc "$r/proc"
m --rbind /dev "$r/dev"
m -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
m -t tmpfs -o mode=1777 tmpfs "$r/tmp"
chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
	DEBIAN_FRONTEND=noninteractive bash -euo pipefail -c "$script"
EOF
# in_overlay SCRIPT: SCRIPT (bash) in a throwaway overlay of the chroot, the .debs in /debs and
# the tree's copy in /src (both read-only), in private mount and PID namespaces: whatever runs
# in the chroot (a target, log-mirror) dies with the job's bash, its init, which --kill-child
# kills when unshare goes (cleanup, on any exit); the mounts vanish with the namespace
in_overlay() {
	local r=0
	[ -n "$MNT" ] || rig "in_overlay: no MNT"
	rm -rf "$MNT" && mkdir -p "$MNT/upper" "$MNT/work" "$MNT/root" "$MNT/debs" || rig "cannot create $MNT"
	cp "${DEBS[@]}" "$MNT/debs/"
	unshare -m -p --fork --kill-child --propagation private \
		bash -c "$JOB" job "$CHROOT" "$MNT" "$ARCHIVES" "$BSRC" "$1" &
	CHILD=$!
	wait "$CHILD" || r=$?
	CHILD=
	rm -rf "$MNT"
	return $r
}
read -r -d '' INSTALL <<'EOF'
	say() { echo "  [chroot] $*"; }
	inst() { apt-get install -y -q --no-install-recommends /debs/libpmrep0_*.deb \
		/debs/libpmrep-sqlite0_*.deb /debs/libpmrep-dev_*.deb /debs/pmrep-tools_*.deb \
		>/tmp/apt.log 2>&1; }
	if ! inst; then
		# the lists are older than the mirror (a dependency moved on): once more, updated
		say "apt-get install failed; apt-get update and once more:"; tail -n 5 /tmp/apt.log
		apt-get update -q >/dev/null && inst || { cat /tmp/apt.log; exit 1; }
	fi
	n=$(grep -c "^Unpacking" /tmp/apt.log || true)
	got=$(grep "^Get:" /tmp/apt.log | grep -vc " /debs/" || true)
	say "apt installed the 3 packages and their dependencies: $n unpacked ($got fetched from the mirror, the rest from the cache)"
	say "installed: $(dpkg-query -W -f "\${Package} \${Version}, " libpmrep0 libpmrep-dev pmrep-tools)"
	if dpkg-query -W -f "\${Status}" libibverbs-dev 2>/dev/null | grep -q "ok installed"; then
		say "libibverbs-dev got installed: a tcp-only user should not need it"; exit 1
	fi
	flags=$(pkg-config --cflags --libs pmrep)
	say "pkg-config --cflags --libs pmrep (no libibverbs-dev here): $flags"
	case $flags in *libnl*|*rdma*|*infiniband*|*ibverbs*) say "rdma-core in the flags"; exit 1 ;; esac
	printf "#include <pmrep.h>\n#include <stdio.h>\nint main(void) { puts(pmrep_err_to_str(PMREP_E_INVAL)); return 0; }\n" >/tmp/u.c
	cc -Wall -Werror /tmp/u.c -o /tmp/u $(pkg-config --cflags --libs pmrep)
	[ "$(/tmp/u)" = "invalid argument" ] || { say "a program built with pkg-config pmrep: wrong output"; exit 1; }
	say "a tcp-only program builds with pkg-config pmrep and runs"
	for p in pmrep_mirror_persist pmrep-target pmrep; do
		f=$(man -w "$p") || { say "man $p: no page"; exit 1; }
		man "$p" 2>/dev/null | grep -q "^NAME" || { say "man $p shows no NAME section"; exit 1; }
		say "man $p: $f"
	done
	u=$(dpkg -L pmrep-tools | grep -E "/systemd/system/.+\.service$" || true)
	if [ -n "$u" ]; then say "systemd unit: $u"; else say "systemd unit: none in this build"; fi
	for f in $(dpkg -L pmrep-tools | grep -E "/sysusers\.d/.+\.conf$" || true); do
		for n in $(awk "\$1 == \"u\" { print \$2 }" "$f"); do
			getent passwd "$n" >/dev/null || { say "$f: user $n was not created at install"; exit 1; }
			say "user $n created at install ($f)"
		done
	done
	say "the main job (scripts/main-job.sh, PMREP_MAIN_JOB_INSTALLED=1):"
	PMREP_MAIN_JOB_INSTALLED=1 timeout -k 5 300 /src/scripts/main-job.sh 2>&1 | sed "s/^/    /"
EOF
# --fresh-build: the packages built again in the chroot with nothing but Build-Depends
# (nocheck profile) installed by apt-get build-dep; the same files must come out
read -r -d '' FRESH <<'EOF'
	say() { echo "  [chroot] $*"; }
	mkdir -p /build && cp -a /src /build/pmrep && cd /build/pmrep
	{ apt-get install -y -q --no-install-recommends dpkg-dev &&
		apt-get build-dep -y -q --no-install-recommends -Pnocheck ./; } >/tmp/apt.log 2>&1 ||
		{ tail -n 20 /tmp/apt.log; exit 1; }
	say "Build-Depends (nocheck profile): $(grep -c "^Unpacking" /tmp/apt.log) packages installed"
	DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b -Pnocheck >/tmp/b.log 2>&1 ||
		{ tail -n 30 /tmp/b.log; say "the build with only Build-Depends failed"; exit 1; }
	for d in /debs/*.deb; do
		f=/build/$(basename "$d")
		[ -f "$f" ] || { say "not built here: $(basename "$d")"; exit 1; }
		if ! diff <(dpkg-deb -c "$d" | awk "{ print \$1, \$NF }") <(dpkg-deb -c "$f" | awk "{ print \$1, \$NF }"); then
			say "$(basename "$d"): other files than the host build"; exit 1
		fi
	done
	say "built with only Build-Depends: the same files in each package as the host build"
EOF
step "in a throwaway overlay of the chroot: apt install, tcp-only user checks, man, the main job"
rc=0
in_overlay "$INSTALL" || rc=$?
if [ "$rc" = 0 ] && [ "$MODE" = fresh ]; then
	step "in another throwaway overlay: a build with nothing but Build-Depends"
	in_overlay "$FRESH" || rc=$?
fi
flock -u 9
MNT=
lintian_result || rc=1
[ "$rc" = 0 ] || { say "failed (exit $rc)"; exit 1; }
step "done: built, lintian clean, installed in a clean $SUITE chroot, the main job passed"
