#!/bin/bash
# tests/vm/ci.sh -- the kernel matrix: for each kernel, one throw-away guest runs
# tests/vm/smoke.sh and then, if given, a test command in the build directory.
#
# Usage:  tests/vm/ci.sh [--] [COMMAND [ARGS...]]
#   COMMAND (or, without arguments, the shell string PMREP_VM_TEST_CMD) runs inside each guest
#   in PMREP_BUILD_DIR, e.g.   cd build && ../tests/vm/ci.sh ctest -L verbs --output-on-failure
#   Without either, only the smoke check runs.
#
# Exit status:
#   0    every smoke check and every test command passed on every kernel
#   1    a smoke check or the test command failed somewhere
#   124  a guest hit its time limit (and nothing worse happened)
#   125  rig failure: a kernel could not be fetched/unpacked, or a guest failed to come up
#   2    usage error
#
# Knobs (environment):
#   PMREP_VM_KERNELS="stock backports"  the matrix (VM_KERNEL values of run-in-vm.sh)
#   PMREP_VM_TEST_CMD      test command as a shell string (used when no arguments are given)
#   PMREP_BUILD_DIR=$PWD   where the test command runs; shared read-write with the guests
#   PMREP_VM_CI_TIMEOUT=900  hard limit for the whole matrix, seconds (fetches included)
#   VM_TIMEOUT=420         hard limit per guest, seconds (clipped to what is left of the above)
#   other VM_* knobs pass through to run-in-vm.sh (see its header)
set -uo pipefail
trap '' PIPE

here=$(cd "$(dirname "$0")" && pwd -P)
RUN=$here/run-in-vm.sh
SMOKE=$here/smoke.sh
say() { echo "ci-vm: $*" >&2; }

case ${1:-} in
  --) shift ;;
  -h|--help) sed -n '2,/^set -uo/{/^set -uo/!s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
esac
KERNELS=${PMREP_VM_KERNELS:-stock backports}
BUILD=${PMREP_BUILD_DIR:-$PWD}
BUILD=$(cd "$BUILD" 2>/dev/null && pwd -P) || { say "no such directory: ${PMREP_BUILD_DIR:-$PWD}"; exit 2; }
LIMIT=${PMREP_VM_CI_TIMEOUT:-900}
PER_VM=${VM_TIMEOUT:-420}
for v in LIMIT PER_VM; do case ${!v} in ''|*[!0-9]*) say "$v must be a number"; exit 2 ;; esac; done
for k in $KERNELS; do
  case $k in stock|backports) ;; *) say "unknown kernel '$k' in PMREP_VM_KERNELS"; exit 2 ;; esac
done
if [ $# -gt 0 ]; then
  CMD=("$@"); CMD_TEXT="$*"
elif [ -n "${PMREP_VM_TEST_CMD:-}" ]; then
  CMD=(bash -c "$PMREP_VM_TEST_CMD"); CMD_TEXT=$PMREP_VM_TEST_CMD
else
  CMD=(); CMD_TEXT=
fi

START=$SECONDS
left() { echo $((LIMIT - (SECONDS - START))); }
RES=$(mktemp -d "${TMPDIR:-/tmp}/pmrep-vm-ci.XXXXXX") || { say "mktemp failed"; exit 125; }
CHILD=
# `timeout` puts its child in a process group of its own, out of reach of a terminal's ^C:
# children run in the background and are stopped from here (run-in-vm.sh then stops QEMU).
trap 'if [ -n "$CHILD" ]; then kill "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null; fi; rm -rf "$RES"' EXIT
trap 'say "interrupted"; exit 130' INT TERM HUP
bounded() {   # bounded SECONDS COMMAND...: run in the background under timeout, wait, return its status
  local t=$1; shift
  timeout -k 15 "$t" "$@" & CHILD=$!
  wait "$CHILD"; local r=$?
  CHILD=; return $r
}

# Inside the guest: smoke, then the command; results into $RES/<kernel>.*; exit 0/1 only, so
# that 124/125 from run-in-vm.sh always mean the rig's own timeout/failure.
read -r -d '' GUEST_JOB <<'EOF'
res=$1 smoke=$2 build=$3; shift 3
uname -r > "$res/$VM_KERNEL.kv"
"$smoke"; s=$?; echo $s > "$res/$VM_KERNEL.smoke"
c=0
if [ $# -gt 0 ]; then
  echo "== [$VM_KERNEL] test command in $build: $*"
  (cd "$build" && "$@"); c=$?
  echo $c > "$res/$VM_KERNEL.cmd"
  echo "== [$VM_KERNEL] test command exited with $c"
fi
[ $s = 0 ] && [ $c = 0 ]
EOF

worst=0
bump() {   # keep the most serious status: 125 > 124 > 1 > 0
  local r=$1
  case $r in 125) worst=125 ;; 124) [ $worst = 125 ] || worst=124 ;; 0) ;; *) [ $worst = 0 ] && worst=1 ;; esac
}
declare -A STATUS SECS

# 1. kernels first (fetch + unpack on a cold cache), so a fetch problem is reported as such
for k in $KERNELS; do
  t=$(left); [ "$t" -gt 20 ] || { STATUS[$k]="TIMEOUT (matrix limit)"; bump 124; continue; }
  t0=$SECONDS
  VM_KERNEL=$k bounded "$t" "$RUN" --prepare; r=$?
  if [ $r != 0 ]; then
    [ $r = 124 ] && STATUS[$k]="TIMEOUT (kernel fetch)" || STATUS[$k]="RIG FAILURE (kernel fetch)"
    bump "$([ $r = 124 ] && echo 124 || echo 125)"
  fi
  say "kernel $k prepared in $((SECONDS - t0))s"
done

# 2. one guest per kernel
for k in $KERNELS; do
  [ -n "${STATUS[$k]:-}" ] && continue
  t=$(left)
  [ "$t" -gt 20 ] || { STATUS[$k]="TIMEOUT (matrix limit)"; bump 124; continue; }
  vt=$PER_VM; [ $((t - 15)) -lt "$vt" ] && vt=$((t - 15))
  echo "==== [$k] guest start (limit ${vt}s)${CMD_TEXT:+, test command: $CMD_TEXT}"
  t0=$SECONDS
  cd "$BUILD" || exit 125
  # $here too: the smoke script must be visible wherever the checkout lies
  # (a clone under /tmp is hidden by the guest's tmpfs otherwise)
  for attempt in 1 2; do
    rm -f "$RES/$k.smoke" "$RES/$k.cmd"
    VM_KERNEL=$k VM_TIMEOUT=$vt VM_RW_DIRS="$BUILD:$RES:$here" \
      bounded "$((vt + 30))" "$RUN" bash -c "$GUEST_JOB" guest-job "$RES" "$SMOKE" "$BUILD" "${CMD[@]}"
    r=$?
    s=$(cat "$RES/$k.smoke" 2>/dev/null); c=$(cat "$RES/$k.cmd" 2>/dev/null)
    # a guest that never came up (the TCG boot itself failed: seen once as
    # an early kernel panic on a loaded host) is booted once more; a guest
    # that ran its smoke check is never retried
    [ "$r" = 125 ] && [ -z "$s" ] && [ $attempt = 1 ] && [ "$(left)" -gt $((vt + 30)) ] || break
    echo "==== [$k] the guest did not come up (rig failure before its smoke check): booting it once more"
  done
  SECS[$k]=$((SECONDS - t0))
  verdict() { case $1 in 0) echo PASS ;; '') echo UNFINISHED ;; *) echo "FAIL ($1)" ;; esac; }
  st="smoke $(verdict "$s")"
  [ ${#CMD[@]} -gt 0 ] && st="$st, command $(verdict "$c")"
  case $r in
    0|1) bump "$r" ;;
    124) st="TIMEOUT after ${SECS[$k]}s: $st"; bump 124 ;;
    *)   st="RIG FAILURE (run-in-vm exit $r): $st"; bump 125 ;;
  esac
  STATUS[$k]=$st
  echo "==== [$k] guest done in ${SECS[$k]}s: $st"
done

echo "==== pmrep VM matrix: $((SECONDS - START))s total"
for k in $KERNELS; do
  printf '  %-10s %-24s %s%s\n' "$k" "$(cat "$RES/$k.kv" 2>/dev/null || echo '?')" "${STATUS[$k]}" \
    "${SECS[$k]:+ (${SECS[$k]}s)}"
done
echo "==== exit $worst"
exit $worst
