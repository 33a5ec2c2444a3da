#!/bin/bash
# tests/vm/smoke.sh -- health check of the test guest, run INSIDE it:
#     tests/vm/run-in-vm.sh tests/vm/smoke.sh
# Checks soft-RoCE (rxe0 present and active, ibv_devinfo, rping and ibv_rc_pingpong over rxe
# loopback), the fsdax mount and the devdax device; prints the device capability flags and runs
# perftest ib_read_lat and ib_write_bw once each (small, bounded), printing their numbers: the
# floor of this link for later benchmarks. Absolute numbers under TCG mean little; compare
# ratios measured on the same link.
# Last line: "N passed, N failed"; exit status 0 iff nothing failed.
# Knobs: SMOKE_STEP_TIMEOUT=60 (seconds per tool run), SMOKE_ITERS=500 (perftest iterations).
set -u

DEV=${RXE_DEV:-rxe0}
IP=${RXE_IP:-10.11.12.1}
MNT=${PMEM_MOUNT:-/mnt/pmem}
DAX=${PMEM_DEVDAX:-$(ls -d /dev/dax*.0 2>/dev/null | tail -n1)}
T=${SMOKE_STEP_TIMEOUT:-60}
ITERS=${SMOKE_ITERS:-500}
pass=0 fail=0 failed=()
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
check() {   # check NAME COMMAND... : run, time and count one check
  local name=$1 t0 rc; shift
  t0=$(now_ms)
  "$@"; rc=$?
  local ms=$(( $(now_ms) - t0 ))
  if [ $rc = 0 ]; then pass=$((pass + 1)); r=PASS; else fail=$((fail + 1)); r=FAIL; failed+=("$name"); fi
  printf '%s %s (%d.%02ds)\n' "$r" "$name" $((ms / 1000)) $((ms % 1000 / 10))
}

# pair SERVER_CMD CLIENT_CMD: start the server, then the client (retried while the server is
# still getting ready), both bounded by T seconds. Prints the client's output (and the server's
# on failure); the client's output is also kept in $tmp/client. A client that dies of a signal
# (perftest's ib_read_lat on rxe under TCG segfaulted once in a CI run, 2026-12-04) leaves its
# server waiting for a peer that is gone: the pair starts over once with a new server.
pair() {
  local s rc=1 crc try round
  for round in 1 2; do
    timeout -k 5 "$T" bash -c "$1" >"$tmp/server" 2>&1 & s=$!
    crc=0
    for try in 1 2 3 4 5; do
      sleep "$([ $try = 1 ] && echo 0.5 || echo 1)"
      timeout -k 5 "$T" bash -c "$2" >"$tmp/client" 2>&1; crc=$?
      if [ $crc = 0 ]; then rc=0; break; fi
      [ $crc -gt 128 ] && [ $crc != 137 ] && break   # died of a signal: a new server
      kill -0 $s 2>/dev/null || break   # the server is gone: retrying cannot help
      echo "  (client attempt $try failed, retrying)"
    done
    if [ $rc = 0 ]; then wait $s || rc=$?; break; fi
    kill $s 2>/dev/null; wait $s 2>/dev/null
    [ $crc -gt 128 ] && [ $crc != 137 ] && [ $round = 1 ] || break
    echo "  (client died of signal $((crc - 128)); starting the pair over with a new server)"
  done
  [ $rc = 0 ] || { echo "  --- client:"; sed 's/^/  /' "$tmp/client"; echo "  --- server:"; sed 's/^/  /' "$tmp/server"; }
  return $rc
}

echo "== pmrep guest smoke: kernel $(uname -r), VM_KERNEL=${VM_KERNEL:-?}, dev=$DEV ip=$IP pmem=$MNT devdax=${DAX:-none}"

# ---------------------------------------------------------------- soft-RoCE
rxe_present() {
  [ -d "/sys/class/infiniband/$DEV" ] || { echo "  no /sys/class/infiniband/$DEV"; return 1; }
  rdma link show | sed 's/^/  /'
  rdma link show | grep -q "^link $DEV/1 state ACTIVE"
}
check "$DEV exists and is ACTIVE (rdma link)" rxe_present

devinfo() {
  ibv_devinfo -d "$DEV" > "$tmp/devinfo" 2>&1 || { cat "$tmp/devinfo"; return 1; }
  grep -E 'hca_id|transport|fw_ver|state|active_mtu|link_layer' "$tmp/devinfo" | sed 's/^/  /'
  grep -q "hca_id:[[:space:]]*$DEV" "$tmp/devinfo" && grep -q PORT_ACTIVE "$tmp/devinfo"
}
check "ibv_devinfo shows $DEV PORT_ACTIVE" devinfo

rping_loop() {
  pair "rping -s -a $IP -C 10" "rping -c -a $IP -C 10 -v" || return 1
  tail -n 1 "$tmp/client" | sed 's/^/  /'
  [ "$(grep -c 'ping data' "$tmp/client")" = 10 ]
}
check "rping loopback x10 (rdma_cm)" rping_loop

pingpong() {
  pair "ibv_rc_pingpong -d $DEV -g 1 -n 500" "ibv_rc_pingpong -d $DEV -g 1 -n 500 $IP" || return 1
  grep -E 'bytes in|iters in' "$tmp/client" | sed 's/^/  /'
}
check "ibv_rc_pingpong x500 (RC send/recv)" pingpong

# ---------------------------------------------------------------- persistent memory
fsdax_mount() {
  grep " $MNT " /proc/mounts | sed 's/^/  /'
  grep -qE " $MNT ext4 [^ ]*dax" /proc/mounts || { echo "  $MNT is not an ext4 -o dax mount"; return 1; }
  echo "pmrep" > "$MNT/.smoke" && [ "$(cat "$MNT/.smoke")" = pmrep ] && rm -f "$MNT/.smoke"
}
check "fsdax: ext4 -o dax mounted on $MNT and writable" fsdax_mount

devdax_dev() {
  [ -n "$DAX" ] && [ -c "$DAX" ] || { echo "  no devdax character device (${DAX:-none})"; return 1; }
  local sz align
  sz=$(cat "/sys/bus/dax/devices/${DAX##*/}/size" 2>/dev/null)
  align=$(cat "/sys/bus/dax/devices/${DAX##*/}/align" 2>/dev/null)
  echo "  $DAX size=${sz:-?} align=${align:-?}"
  [ "${sz:-0}" -gt 0 ]
}
check "devdax: ${DAX:-/dev/daxN.0} exists" devdax_dev

namespaces() {
  ndctl list -N > "$tmp/ns" 2>&1 || { cat "$tmp/ns"; return 1; }
  grep -oE '"(dev|mode|size|blockdev|chardev)":"?[^,"}]*' "$tmp/ns" | tr -d '"' | paste -sd' ' | sed 's/ dev:/\n  dev:/g; s/^/  /'
  grep -q '"mode":"fsdax"' "$tmp/ns" && grep -q '"mode":"devdax"' "$tmp/ns"
}
check "ndctl: one fsdax and one devdax namespace" namespaces

# ---------------------------------------------------------------- capabilities
echo "== $DEV capabilities (ibv_devinfo -v)"
ibv_devinfo -v -d "$DEV" > "$tmp/devinfo-v" 2>&1
awk '/^\t[a-z_]+:/ { show = ($1 ~ /^(device_cap_flags|device_cap_flags_ex):$/) }
     show' "$tmp/devinfo-v" | sed 's/^\t\t\t*/      /; s/^\t*/  /; s/:\t*/: /'
grep -E '^\s*(atomic_cap|max_qp_rd_atom|max_qp_init_rd_atom|max_mr_size|max_qp_wr|max_sge|max_mr|page_size_cap):' \
  "$tmp/devinfo-v" | sed 's/^\s*/  /; s/\t\+/ /g'
ex=$(awk '$1 == "device_cap_flags_ex:" { print $2 }' "$tmp/devinfo-v")
# rdma-core 44 (Debian 12) predates these and prints them as "Unknown flags"
names=(38:FLUSH_GLOBAL 39:FLUSH_PERSISTENT 40:ATOMIC_WRITE)
have=0
for nb in "${names[@]}"; do
  bit=${nb%%:*}
  if [ -n "$ex" ] && (( (ex >> bit) & 1 )); then s=yes; have=$((have + 1)); else s=no; fi
  printf '  %-17s (device_cap_flags_ex bit %s): %s\n' "${nb#*:}" "$bit" "$s"
done
kv=$(uname -r); kmaj=${kv%%.*}; kmin=${kv#*.}; kmin=${kmin%%[!0-9]*}
if (( kmaj > 6 || (kmaj == 6 && kmin >= 2) )); then
  # rxe gained RDMA FLUSH and ATOMIC WRITE in 6.2
  check "rxe advertises FLUSH_GLOBAL, FLUSH_PERSISTENT, ATOMIC_WRITE (kernel >= 6.2)" test "$have" = 3
else
  echo "  (kernel $kv < 6.2: rxe has no RDMA FLUSH / ATOMIC WRITE; not checked)"
fi

# ---------------------------------------------------------------- perftest floor
table() { sed -n '/#bytes/,/^-\{5,\}/{/^-\{5,\}/!p}' "$tmp/client" | sed 's/^/  /'; }
col() {   # col HEADER-PREFIX: value of the first result row under the column whose header starts so
  awk -v h="$1" '
    /#bytes/ { for (i = 1; i <= NF; i++) if (index($i, h) == 1) c = i; getline; print $c; exit }' "$tmp/client"
}
LAT='' BW=''
read_lat() {
  pair "ib_read_lat -R -F -d $DEV -n $ITERS" "ib_read_lat -R -F -d $DEV -n $ITERS $IP" || return 1
  table
  # headers: #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] ...
  LAT=$(awk '/#bytes/ { getline; print $5 " usec typical, " $3 " min, " $6 " avg (" $1 " B)"; exit }' "$tmp/client")
  [ -n "$LAT" ]
}
check "perftest ib_read_lat -R, $ITERS iters" read_lat

write_bw() {
  pair "ib_write_bw -R -F -d $DEV -n $ITERS" "ib_write_bw -R -F -d $DEV -n $ITERS $IP" || return 1
  table
  # headers: #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
  BW=$(awk '/#bytes/ { getline; print $4 " MB/s average, " $5 " Mpps (" $1 " B messages)"; exit }' "$tmp/client")
  [ -n "$BW" ]
}
check "perftest ib_write_bw -R, $ITERS iters" write_bw

echo "== floor ($(uname -r), rxe loopback under TCG):"
echo "  ib_read_lat: ${LAT:-n/a}"
echo "  ib_write_bw: ${BW:-n/a}"
[ $fail = 0 ] || printf 'failed: %s\n' "${failed[@]}"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
