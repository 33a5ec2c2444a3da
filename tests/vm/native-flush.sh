#!/bin/bash
# tests/vm/native-flush.sh -- pmrep's native RDMA FLUSH path for real. Debian 12's rdma-core 44
# has no ibv_wr_flush, so that path (PMREP_HAVE_IBV_WR_FLUSH) is not even compiled there. This
#   1. makes (once; cached) a Debian 13 "trixie" userspace with debootstrap: rdma-core >= 45,
#      build tools and pmrep's build and test dependencies;
#   2. builds pmrep in a chroot of it (the source tree bind-mounted at its own path), checks that
#      PMREP_HAVE_IBV_WR_FLUSH is defined, runs the unit tests there;
#   3. boots the 6.12 guest (rxe with RDMA FLUSH and ATOMIC WRITE) with that userspace as its root
#      (run-in-vm.sh VM_ROOT) through ci.sh: smoke check, then COMMAND in the build directory
#      with PMREP_TEST_EXPECT_NATIVE_FLUSH=1 (the verbs tests then insist on the NATIVE method),
#      then a probe: test_pmem_mr at PMREP_LOG_LEVEL=5 must log that ibv_wr_flush was posted.
#
# Usage (as root):  tests/vm/native-flush.sh [--] [COMMAND [ARGS...]]
#   COMMAND runs inside the guest in the build dir; default: ctest -L verbs --output-on-failure
#                   tests/vm/native-flush.sh --prepare    only steps 1 and the kernel fetch
#
# Exit status (as ci.sh's):
#   0    build, unit tests, smoke, COMMAND and the probe all passed
#   1    the build (or its PMREP_HAVE_IBV_WR_FLUSH check), a unit test, the smoke check,
#        COMMAND or the probe failed
#   124  a time limit was hit (PMREP_NATIVE_TIMEOUT, or a step's own)
#   125  rig failure: no mirror, debootstrap or chroot failed, kernel fetch, guest setup
#   2    usage error
#
# Knobs (environment):
#   PMREP_NATIVE_TIMEOUT=1800      hard limit for everything, seconds
#   PMREP_NATIVE_ROOT_TIMEOUT=900  limit for creating the userspace (debootstrap)
#   PMREP_NATIVE_BUILD_TIMEOUT=900 limit for the build + unit tests in the chroot
#   PMREP_NATIVE_BUILD_DIR         default: <source>/build-native-flush (shared with the guest)
#   PMREP_NATIVE_SUITE=trixie      Debian release of the userspace (needs rdma-core >= 45)
#   PMREP_NATIVE_ROOT              the userspace dir, default $VM_CACHE/<suite>-root
#   PMREP_NATIVE_ROOT_MAX_AGE=30   days; an older userspace is made again (the old one is kept
#                                  if that fails)
#   VM_APT_MIRROR                  Debian mirror URL (default: the host's apt source for bookworm)
#   VM_CACHE                       as run-in-vm.sh (default ~/.cache/pmrep-vm)
#   VM_TIMEOUT=600                 limit of the guest (smoke + COMMAND + probe)
#   other VM_* / PMREP_VM_* knobs pass through to ci.sh and run-in-vm.sh
#
# Host packages: those of scripts/install-deps.sh --vm, plus debootstrap. The userspace takes
# about 700 MB under the cache; making it reads ~150 MB of packages from the mirror.
set -uo pipefail
trap '' PIPE

here=$(cd "$(dirname "$0")" && pwd -P)
SRC=$(cd "$here/../.." && pwd -P)
prog=native-flush
say() { echo "$prog: $*" >&2; }
rig() { say "error: $*"; exit 125; }

PREPARE_ONLY=0
case ${1:-} in
  --) shift ;;
  --prepare) PREPARE_ONLY=1; shift ;;
  -h|--help) sed -n '2,/^set -uo/{/^set -uo/!s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
  -*) say "unknown option $1"; exit 2 ;;
esac
if [ $# -gt 0 ]; then CMD=("$@"); else CMD=(ctest -L verbs --output-on-failure); fi

LIMIT=${PMREP_NATIVE_TIMEOUT:-1800}
ROOT_T=${PMREP_NATIVE_ROOT_TIMEOUT:-900}
BUILD_T=${PMREP_NATIVE_BUILD_TIMEOUT:-900}
MAX_AGE=${PMREP_NATIVE_ROOT_MAX_AGE:-30}
GUEST_T=${VM_TIMEOUT:-600}
for v in LIMIT ROOT_T BUILD_T MAX_AGE GUEST_T; do
  case ${!v} in ''|*[!0-9]*) say "$v must be a number"; exit 2 ;; esac
done
SUITE=${PMREP_NATIVE_SUITE:-trixie}
VM_CACHE=${VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/pmrep-vm}
export VM_CACHE
ROOT=${PMREP_NATIVE_ROOT:-$VM_CACHE/$SUITE-root}
BUILD=${PMREP_NATIVE_BUILD_DIR:-$SRC/build-native-flush}
case $ROOT in /*) ;; *) say "PMREP_NATIVE_ROOT must be absolute"; exit 2 ;; esac
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
case $BUILD in "$ROOT"|"$ROOT"/*) say "the build dir must not lie in the userspace"; exit 2 ;; esac

# what the userspace holds: pmrep's build deps, and what the guest runs from its root
# (run-in-vm.sh: bash env rdma ndctl mkfs.ext4; smoke.sh: the rdma/perftest tools)
PKGS="build-essential cmake pkg-config libibverbs-dev librdmacm-dev libpmem2-dev libcmocka-dev
libssl-dev rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2 ndctl
e2fsprogs"
STAMP="pmrep-native-root v1 $SUITE $(echo $PKGS)"

[ "$(id -u)" = 0 ] || rig "must run as root (debootstrap, chroot, bind mounts)"
export PATH=$PATH:/usr/sbin:/sbin
for t in debootstrap unshare chroot mount flock timeout; do
  command -v "$t" >/dev/null ||
    rig "missing host tool: $t$([ $t = debootstrap ] && echo ' (apt-get install debootstrap)')"
done

START=$SECONDS
left() { echo $((LIMIT - (SECONDS - START))); }
CHILD=
trap 'if [ -n "$CHILD" ]; then kill "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null; fi' EXIT
trap 'say "interrupted"; exit 130' INT TERM HUP
# bounded SECONDS COMMAND...: in the background under timeout (clipped to what is left), wait
bounded() {
  local t=$1 l; shift
  l=$(left); [ "$l" -lt "$t" ] && t=$l
  [ "$t" -gt 0 ] || return 124
  timeout -k 15 "$t" "$@" & CHILD=$!
  wait "$CHILD"; local r=$?
  CHILD=; return $r
}
step() { echo "==== [native-flush] $* ($((SECONDS - START))s)"; }

# ---------------------------------------------------------------- 1. the userspace
# host_uri SUITE -> the URI of an enabled `deb` source for SUITE in the host's apt sources
# (as run-in-vm.sh's)
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

root_ok() { [ -f "$1/.pmrep-root" ] && [ "$(cat "$1/.pmrep-root")" = "$STAMP" ]; }

make_root() {   # debootstrap into a temporary dir, then move it into place
  local mirror tmp=$ROOT.tmp.$$ r
  mirror=${VM_APT_MIRROR:-$(host_uri bookworm | head -n1)}
  [ -n "$mirror" ] || { say "no Debian mirror for 'bookworm' in /etc/apt sources: set VM_APT_MIRROR"; return 125; }
  step "debootstrap $SUITE (minbase + $(echo $PKGS | wc -w) packages) into $tmp"
  rm -rf "$tmp"
  # in a mount namespace of its own: the /proc, /sys it mounts in the target go with it
  bounded "$ROOT_T" unshare -m --propagation private debootstrap --variant=minbase \
    --components=main --include="$(echo $PKGS | tr ' ' ,)" "$SUITE" "$tmp" "$mirror"
  r=$?
  if [ $r != 0 ]; then
    say "debootstrap failed (exit $r)$([ $r = 124 ] && echo ': time limit')"
    [ -f "$tmp/debootstrap/debootstrap.log" ] && tail -n 30 "$tmp/debootstrap/debootstrap.log" >&2
    rm -rf "$tmp"
    [ $r = 124 ] && return 124 || return 125
  fi
  rm -f "$tmp"/var/cache/apt/archives/*.deb   # ~150 MB we no longer need
  echo "$STAMP" > "$tmp/.pmrep-root" || { rm -rf "$tmp"; return 125; }
  rm -rf "$ROOT" && mv "$tmp" "$ROOT" || { rm -rf "$tmp"; return 125; }
  step "userspace ready: $ROOT ($(du -sh "$ROOT" 2>/dev/null | cut -f1))"
}

mkdir -p "$VM_CACHE" || rig "cannot create $VM_CACHE"
exec 9>"$VM_CACHE/.native-root.lock"
flock -w "$ROOT_T" 9 || rig "$VM_CACHE/.native-root.lock stays locked by another run"
rm -rf "$ROOT".tmp.* "$ROOT".old.*   # left by a run that was killed (we hold the lock)
step "userspace $ROOT"
if ! root_ok "$ROOT"; then
  make_root; r=$?; [ $r = 0 ] || exit $r
elif [ -n "$(find "$ROOT/.pmrep-root" -mtime "+$MAX_AGE" 2>/dev/null)" ]; then
  say "the userspace is older than $MAX_AGE days: making it again"
  mv "$ROOT" "$ROOT.old.$$" || rig "cannot move $ROOT aside"
  if make_root; then rm -rf "$ROOT.old.$$"
  else say "warning: using the old userspace"; rm -rf "$ROOT"; mv "$ROOT.old.$$" "$ROOT"; touch "$ROOT/.pmrep-root"; fi
else
  echo "  (cached; $(chroot "$ROOT" dpkg-query -W -f '${Package} ${Version}' libibverbs-dev 2>/dev/null))"
fi
flock -u 9; exec 9>&-

if [ $PREPARE_ONLY = 1 ]; then
  step "kernel"
  VM_KERNEL=backports bounded 900 "$here/run-in-vm.sh" --prepare; r=$?
  [ $r = 0 ] || exit $([ $r = 124 ] && echo 124 || echo 125)
  step "prepared"; exit 0
fi

# ---------------------------------------------------------------- 2. build in the chroot
# A private mount namespace: the bind mounts vanish with it, whatever happens.
read -r -d '' BUILD_JOB <<'EOF'
set -e
root=$1 src=$2 build=$3
# /tmp first: a checkout under /tmp is bound on top of it, not hidden by it
mount -t tmpfs tmpfs "$root/tmp"
mkdir -p "$root$src" "$build"
mount --bind "$src" "$root$src"
case $build in "$src"/*) ;; *) mkdir -p "$root$build"; mount --bind "$build" "$root$build" ;; esac
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  bash -c '
    set -e
    src=$1 build=$2
    echo "  rdma-core $(dpkg-query -W -f "\${Version}" libibverbs-dev), $(cmake --version | head -n1), $(gcc --version | head -n1)"
    # no man pages here (the install stage on the host checks them; no python3 in this root)
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPMREP_MAN=OFF >"$build/.configure.log" ||
      { cat "$build/.configure.log"; exit 1; }
    set +e
    cmake --build "$build" -j"$(nproc)" 2>&1 | grep -vE "^\[ *[0-9]+%\] (Building|Linking|Built)"
    s=${PIPESTATUS[0]}
    set -e
    [ "$s" = 0 ] || { echo "  the build failed"; exit 1; }
    if grep -q "^#define PMREP_HAVE_IBV_WR_FLUSH 1" "$build/pmrep_config.h"; then
      echo "  PMREP_HAVE_IBV_WR_FLUSH is defined: the native RDMA FLUSH path is compiled"
    else
      echo "  PMREP_HAVE_IBV_WR_FLUSH is NOT defined (no ibv_wr_flush in this libibverbs)"; exit 1
    fi
    cd "$build"
    ctest -L unit --output-on-failure -j"$(nproc)" >.unit.log 2>&1 || { cat .unit.log; exit 1; }
    grep -E "tests passed" .unit.log | sed "s/^/  unit: /"
  ' build "$src" "$build"
EOF
step "build in the $SUITE chroot: $BUILD"
bounded "$BUILD_T" unshare -m --propagation private bash -c "$BUILD_JOB" build-job "$ROOT" "$SRC" "$BUILD"
r=$?
case $r in
  0) ;;
  124) say "the build hit its time limit"; exit 124 ;;
  *) say "the build or a unit test failed (exit $r)"; exit 1 ;;
esac

# ---------------------------------------------------------------- 3. the 6.12 guest
# In the guest, in the build dir: COMMAND, then the probe that a flush really went out with
# ibv_wr_flush (verbs_ops.c logs its first one per conn at DEBUG). Exit 0/1 only.
JOBFILE=$BUILD/native-flush-job.sh
cat > "$JOBFILE" <<'EOF' || rig "cannot write $JOBFILE"
# written by tests/vm/native-flush.sh: run in the guest, in the build dir
"$@"; c=$?
echo "== native flush probe: test_pmem_mr at PMREP_LOG_LEVEL=5"
PMREP_TEST_PROVIDER=verbs PMREP_LOG_LEVEL=5 timeout -k 5 120 ./tests/test_pmem_mr >probe.log 2>&1; p=$?
if [ $p = 0 ] && grep -m1 'first native flush posted' probe.log; then
  echo "PASS native flush probe"
else
  echo "FAIL native flush probe (test_pmem_mr exit $p; no 'first native flush posted' line):"
  tail -n 30 probe.log; c=1
fi
rm -f probe.log
[ $c = 0 ]
EOF
t=$(left)
[ "$t" -gt 60 ] || { say "no time left for the guest"; exit 124; }
[ "$GUEST_T" -gt $((t - 45)) ] && GUEST_T=$((t - 45))
step "guest: VM_KERNEL=backports, root $ROOT, in $BUILD: ${CMD[*]}"
PMREP_VM_KERNELS=backports PMREP_BUILD_DIR=$BUILD PMREP_VM_CI_TIMEOUT=$((t - 20)) \
  VM_TIMEOUT=$GUEST_T VM_ROOT=$ROOT VM_RO_DIRS=$SRC PMREP_TEST_EXPECT_NATIVE_FLUSH=1 \
  bounded "$t" "$here/ci.sh" bash "$JOBFILE" "${CMD[@]}"
r=$?
step "done: exit $r"
exit $r
