#!/bin/bash
# tests/vm/cxl.sh -- pmrep on CXL persistent memory: the guest rig (ci.sh) with VM_CXL=1, i.e.
# one emulated CXL type-3 device with persistent memory instead of the NVDIMMs. At boot the guest
# assembles a pmem region on it (cxl create-region -t pmem) and makes a devdax namespace
# (VM_DEVDAX_SIZE) and an fsdax one (the rest, ext4 -o dax on /mnt/pmem) in it: PMEM_DEVDAX and
# PMEM_MOUNT name them, as the NVDIMMs' do in the ordinary guest. Per kernel, one guest runs
#   1. smoke.sh (rxe, the fsdax mount, the devdax device, both namespaces);
#   2. the facts: `cxl list`, `ndctl list` (persistence domain), and cxl_probe (built here from
#      tests/vm/cxl_probe.c) on a file on the fsdax mount and on the devdax device: the store
#      granularity libpmem2 reports, pmem2_deep_flush, ibv_reg_mr plain and with ODP;
#   3. the main job (scripts/main-job.sh over verbs) twice: the source log (the primary's
#      memory) on the CXL devdax and the replica a file on the CXL fsdax mount; the source log in
#      /dev/shm and the replica the CXL devdax (wiped first). A source log on fsdax cannot be
#      registered by rxe (no ODP), on CXL as on NVDIMMs: cxl_probe shows that;
#   4. COMMAND in the build dir (default: ctest -L verbs --output-on-failure).
# Functional only: QEMU sends every guest access to CXL memory through its I/O (MMIO) layer, so
# nothing this measures says anything about performance.
#
# Usage:  tests/vm/cxl.sh [--] [COMMAND [ARGS...]]      (PMREP_BUILD_DIR, default the cwd:
#         a configured and built tree: tools, examples, tests)
#
# Exit status (as ci.sh's): 0 all passed; 1 smoke, a probe, a main job or COMMAND failed;
#   124 a time limit; 125 rig failure (e.g. the region or a namespace could not be made); 2 usage
#
# Knobs (environment):
#   PMREP_VM_KERNELS="stock backports"   the kernels (Debian 12's 6.1, bookworm-backports' 6.12)
#   PMREP_CXL_TIMEOUT=1800   hard limit for everything, seconds (ci.sh's PMREP_VM_CI_TIMEOUT)
#   VM_TIMEOUT=900           limit per guest
#   VM_CXL_SIZE=256          the CXL device, MiB (multiple of 256); VM_DEVDAX_SIZE=32 of it devdax
#   other VM_* / PMREP_VM_* knobs pass through to ci.sh and run-in-vm.sh
set -uo pipefail
trap '' PIPE

here=$(cd "$(dirname "$0")" && pwd -P)
SRC=$(cd "$here/../.." && pwd -P)
say() { echo "cxl: $*" >&2; }

case ${1:-} in
  --) shift ;;
  -h|--help) sed -n '2,/^set -uo/{/^set -uo/!s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
  -*) say "unknown option $1"; exit 2 ;;
esac
if [ $# -gt 0 ]; then CMD=("$@"); else CMD=(ctest -L verbs --output-on-failure); fi
BUILD=${PMREP_BUILD_DIR:-$PWD}
BUILD=$(cd "$BUILD" 2>/dev/null && pwd -P) || { say "no such directory: ${PMREP_BUILD_DIR:-$PWD}"; exit 2; }
for f in tools/pmrep-target tools/pmrep examples/log-mirror; do
  [ -x "$BUILD/$f" ] || { say "$BUILD/$f is missing: build pmrep there first (PMREP_BUILD_DIR)"; exit 2; }
done
command -v cxl >/dev/null || { say "no cxl tool (Debian: ndctl)"; exit 2; }

PROBE=$BUILD/cxl_probe
cc -Wall -Wextra -Werror -O2 "$here/cxl_probe.c" -o "$PROBE" -lpmem2 -libverbs ||
  { say "cannot build $PROBE"; exit 125; }

# In the guest, in the build dir. Exit 0/1 only (124/125 are the rig's).
JOBFILE=$BUILD/cxl-job.sh
cat > "$JOBFILE" <<'EOF' || { say "cannot write $JOBFILE"; exit 125; }
# written by tests/vm/cxl.sh: run in the CXL guest, in the build dir
src=$1 probe=$2; shift 2
build=$PWD fails=()
echo "== CXL: kernel $(uname -r); cxl region $PMEM_CXL_REGION = libnvdimm $PMEM_ND_REGION;" \
  "fsdax $PMEM_DEV on $PMEM_MOUNT; devdax $PMEM_DEVDAX"
cxl list -M -D -R 2>&1 |
  grep -E '"(memdev|pmem_size|decoder|region|resource|size|interleave_ways|interleave_granularity|decode_state)"' |
  tr -d ' ,' | paste -sd' ' | sed 's/ \("decoder"\)/\n\1/g; s/ \("region":"region[0-9]*" "resource"\)/\n\1/g' | sed 's/^/  /'
ndctl list -R -r "$PMEM_ND_REGION" 2>&1 | grep -E '"(dev|size|align|type|persistence_domain)"' |
  tr -d ' ,' | paste -sd' ' | sed 's/^/  /'
# deep_flush: 1 the region has flush hints (a write flushes the memory controller's queues),
# 0 none: a write is a barrier only (the platform is trusted to flush on power loss)
echo "  $PMEM_ND_REGION/deep_flush: $(cat "/sys/bus/nd/devices/$PMEM_ND_REGION/deep_flush" 2>&1)"
echo "== cxl_probe: libpmem2 and ibv_reg_mr on a file on the CXL fsdax mount and on the CXL devdax"
timeout -k 5 120 "$probe" "$PMEM_MOUNT/cxl-probe" "$PMEM_DEVDAX" || fails+=(cxl_probe)
rm -f "$PMEM_MOUNT/cxl-probe"
main_job() {   # NAME, then environment assignments
  local name=$1 t0=$SECONDS r; shift
  echo "== main job ($name)"
  env "$@" PMREP_MAIN_JOB_ADDR="$RXE_IP" PMREP_PROVIDER=verbs \
    timeout -k 5 300 "$src/scripts/main-job.sh" "$build" 2>&1 | sed 's/^/  /'
  r=${PIPESTATUS[0]}
  echo "== main job ($name): exit $r in $((SECONDS - t0))s"
  [ "$r" = 0 ] || fails+=("main job ($name)")
}
# the primary's memory must be registrable: devdax (fsdax is refused without ODP, as on NVDIMMs)
main_job "primary: source log on the CXL devdax; replica: a file on the CXL fsdax" \
  PMREP_MAIN_JOB_DIR="$PMEM_MOUNT" PMREP_MAIN_JOB_SOURCE="$PMEM_DEVDAX"
timeout -k 5 120 "$probe" --wipe "$PMEM_DEVDAX" || fails+=("wipe $PMEM_DEVDAX")
main_job "primary: source log in /dev/shm; replica: the CXL devdax" \
  PMREP_MAIN_JOB_REPLICA="$PMEM_DEVDAX"
if [ $# -gt 0 ]; then
  echo "== $*"
  rm -f Testing/Temporary/LastTest.log
  "$@" || fails+=("$*")
  # the cases on persistent memory (PMEM_DEVDAX, PMEM_MOUNT), passed or skipped (cmocka's
  # skip(): e.g. native flush without rdma-core >= 45), from ctest's log
  if [ -f Testing/Temporary/LastTest.log ]; then
    echo "== test cases on dax / pmem (ctest's LastTest.log):"
    grep -iE '^\[ +(OK|SKIPPED|FAILED) +\] [a-z0-9_]*(dax|pmem)' Testing/Temporary/LastTest.log | sort -u |
      sed 's/^/  /'
  fi
fi
if [ ${#fails[@]} = 0 ]; then echo "== CXL: all passed"; else printf '== CXL: FAILED: %s\n' "${fails[@]}"; fi
[ ${#fails[@]} = 0 ]
EOF

t0=$SECONDS
PMREP_VM_KERNELS=${PMREP_VM_KERNELS:-stock backports} PMREP_BUILD_DIR=$BUILD \
  PMREP_VM_CI_TIMEOUT=${PMREP_CXL_TIMEOUT:-1800} VM_TIMEOUT=${VM_TIMEOUT:-900} \
  VM_CXL=1 VM_RO_DIRS="$SRC${VM_RO_DIRS:+:$VM_RO_DIRS}" \
  "$here/ci.sh" bash "$JOBFILE" "$SRC" "$PROBE" "${CMD[@]}"
r=$?
say "done in $((SECONDS - t0))s: exit $r"
exit $r
