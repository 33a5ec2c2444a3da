#!/bin/bash
# tests/vm/t22-device-removal.sh -- T22 on a real rxe device (the guest's rxe0): the RDMA device
# goes away under a running target and mirror, and comes back.
#
# Usage:  tests/vm/t22-device-removal.sh BUILD_DIR      (ctest: verbs.t22_device_removal)
#   BUILD_DIR holds tools/pmrep-target, tools/pmrep and examples/log-mirror.
#
# What it does (both processes stay up the whole time):
#   1. pmrep-target serves a replica file in /dev/shm on RXE_IP; log-mirror appends records to a
#      log in /dev/shm, mirrored to it (a persist per record and one for the tail);
#   2. once records are acknowledged: `timeout 10 rdma link delete RXE_DEV`; asserts the delete
#      completed (a delete stuck in D state is reported: it cannot be killed) while both
#      processes live, and that a persist failed (PMREP_E_CONN_LOST: "connection lost") within
#      10 s of the delete;
#   3. `rdma link add RXE_DEV type rxe netdev RXE_NETDEV` (no "File exists": nothing kept the
#      device); asserts the target listens again and the mirror reconnects (it says which resync:
#      incremental or full) within 20 s, and log-mirror acknowledges every record;
#   4. `pmrep verify` of the log against the replica: identical.
# Prints the figures: delete time, detection time (delete start -> first failed persist),
# recovery time (link add -> replica back), resync kind.
# Exit: 0 pass, 1 fail, 77 skipped (not root, no rdma tool, no RXE_DEV, not in the guest: it
# deletes a device, so it runs only where IN_VM=1 says the machine is a throw-away guest).
# Environment (run-in-vm.sh sets them): IN_VM RXE_DEV RXE_NETDEV RXE_IP.
set -uo pipefail

skip() { echo "t22: SKIP: $*"; exit 77; }
fail() { echo "t22: FAIL: $*"; FAILED=1; }

BUILD=${1:-}
[ -n "$BUILD" ] && [ -d "$BUILD" ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd -P)
[ "${IN_VM:-0}" = 1 ] || skip "not in the throw-away guest (IN_VM != 1): this test deletes an RDMA device"
[ "$(id -u)" = 0 ] || skip "not root"
command -v rdma >/dev/null 2>&1 || skip "no rdma tool (iproute2)"
DEV=${RXE_DEV:-rxe0}
NETDEV=${RXE_NETDEV:-dummy0}
IP=${RXE_IP:-10.11.12.1}
rdma link show "$DEV/1" >/dev/null 2>&1 || skip "no RDMA device $DEV"
for b in tools/pmrep-target tools/pmrep examples/log-mirror; do
	[ -x "$BUILD/$b" ] || skip "$BUILD/$b not built"
done

DIR=$(mktemp -d /dev/shm/pmrep-t22.XXXXXX) || exit 1
FAILED=0 DEV_DELETED=0
cleanup() {
	for f in "$DIR/mirror.pid" "$DIR/target.pid"; do
		[ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	# (no `wait`: a delete stuck in D state would keep it for ever)
	# leave the guest's device as we found it
	if [ "$DEV_DELETED" = 1 ] && ! rdma link show "$DEV/1" >/dev/null 2>&1; then
		timeout 10 rdma link add "$DEV" type rxe netdev "$NETDEV" 2>/dev/null
	fi
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000 - T0)); }
T0=0; T0=$(now_ms)
# each line of a process's output with the ms since the start in front
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(now_ms)" "$l"; done; }
# the time stamp of the first line matching $2 in log $1, or nothing
first() { grep -m1 -E -- "$2" "$1" | cut -d' ' -f1; }
# wait up to $3 ms for a line matching $2 in log $1
wait_for() {
	local end=$(( $(now_ms) + $3 ))
	while [ "$(now_ms)" -lt "$end" ]; do
		grep -q -E -- "$2" "$1" && return 0
		sleep 0.05
	done
	return 1
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DIR/key"
chmod 600 "$DIR/key"	# key files others may read are refused
chmod 600 "$DIR/key"
SIZE=4M
NREC=900
export PMREP_LOG_LEVEL=3 PMREP_PROVIDER=verbs	# 3: notice

# (each process writes its own pid: $! of a pipeline is its last command's)
( echo "$BASHPID" > "$DIR/target.pid"
  exec "$BUILD/tools/pmrep-target" --path "$DIR/replica" --create --size "$SIZE" \
	--address "$IP" --port 7222 --key-file "$DIR/key" --timeout 1000 ) 2>&1 |
	stamp > "$DIR/target.log" &
TPID=$!
wait_for "$DIR/target.log" "listening on" 20000 || { cat "$DIR/target.log"; fail "the target did not start"; exit 1; }
TARGET=$(cat "$DIR/target.pid")

( echo "$BASHPID" > "$DIR/mirror.pid"
  exec "$BUILD/examples/log-mirror" --file "$DIR/log" --size "$SIZE" --replica "$IP:7222" \
	--key-file "$DIR/key" --append "$NREC" --payload 64 --delay-ms 10 --wait-s 40 ) 2>&1 |
	stamp > "$DIR/mirror.log" &
MPID=$!
wait_for "$DIR/mirror.log" "acked 100\b" 30000 || { cat "$DIR/mirror.log"; fail "no records acknowledged"; exit 1; }
MIRROR=$(cat "$DIR/mirror.pid")

# ---- the device goes
# (`timeout` would wait for ever for a delete stuck in D state: watch it from here)
T_DEL=$(now_ms)
( timeout 10 rdma link delete "$DEV"; echo $? > "$DIR/del.rc" ) &
for _ in $(seq 200); do [ -s "$DIR/del.rc" ] && break; sleep 0.05; done
T_DEL_END=$(now_ms)
DEV_DELETED=1
if [ ! -s "$DIR/del.rc" ]; then
	fail "rdma link delete $DEV did not complete in 10 s (stuck in D state: a process keeps the device open)"
	ps -eo pid,stat,wchan:32,args | grep -E "rdma link|pmrep-target|log-mirror" | grep -v grep
	for p in "$TARGET" "$MIRROR"; do
		echo "---- pid $p: device files open / mapped"
		ls -l "/proc/$p/fd" 2>/dev/null | grep -E "infiniband|uverbs|rdma" | sed 's/.*-> //' | sort | uniq -c
		grep -E "infiniband|uverbs" "/proc/$p/maps" 2>/dev/null | awk '{print $6}' | sort | uniq -c
	done
	echo "---- target log"; grep -v "acked" "$DIR/target.log" | tail -30
	echo "---- mirror log"; grep -v "acked" "$DIR/mirror.log" | tail -30
	kill "$TARGET" "$MIRROR" 2>/dev/null
	for _ in $(seq 200); do [ -s "$DIR/del.rc" ] && break; sleep 0.05; done
	[ -s "$DIR/del.rc" ] && echo "t22: the delete completed once both processes had exited"
	rm -f "$DIR/mirror.pid" "$DIR/target.pid"
	exit 1
fi
rc=$(cat "$DIR/del.rc")
[ $rc = 0 ] || fail "rdma link delete $DEV failed ($rc)"
echo "t22: rdma link delete $DEV took $((T_DEL_END - T_DEL)) ms"
kill -0 "$TARGET" 2>/dev/null || fail "the target died with the device"
kill -0 "$MIRROR" 2>/dev/null || fail "the mirror died with the device"
if wait_for "$DIR/mirror.log" "persist failed \(connection lost\)" 10000; then
	T_FAIL=$(first "$DIR/mirror.log" "persist failed")
	echo "t22: first failed persist $((T_FAIL - T_DEL)) ms after the delete began: $(grep -m1 'persist failed' "$DIR/mirror.log" | cut -d' ' -f2-)"
else
	fail "no persist failed with \"connection lost\" within 10 s of the delete"
fi
wait_for "$DIR/target.log" "endpoint .* lost" 5000 || fail "the target did not report its endpoint lost"
sleep 1

# ---- the device comes back
T_ADD=$(now_ms)
out=$(timeout 10 rdma link add "$DEV" type rxe netdev "$NETDEV" 2>&1); rc=$?
[ $rc = 0 ] || fail "rdma link add $DEV failed ($rc): $out"
[ $rc = 0 ] && DEV_DELETED=0
if wait_for "$DIR/target.log" "listening again on" 20000; then
	echo "t22: target listening again $(( $(first "$DIR/target.log" "listening again on") - T_ADD )) ms after the add"
else
	fail "the target did not listen again within 20 s"
fi
if wait_for "$DIR/mirror.log" "replica 0 back" 20000; then
	T_BACK=$(first "$DIR/mirror.log" "replica 0 back")
	KIND=$(grep -E "attached: .*resync" "$DIR/mirror.log" | tail -1 | grep -oE "resync (incremental|full) of [0-9]+ bytes")
	echo "t22: mirror reconnected $((T_BACK - T_ADD)) ms after the add ($KIND); outage $((T_BACK - T_DEL)) ms"
else
	fail "the mirror did not reconnect within 20 s"
fi

# ---- every record acknowledged, the replica identical
for _ in $(seq 600); do kill -0 "$MIRROR" 2>/dev/null || break; sleep 0.1; done
wait "$MPID"; mrc=$?
rm -f "$DIR/mirror.pid"
grep -q "done: $NREC records acked" "$DIR/mirror.log" || fail "log-mirror did not acknowledge all $NREC records (exit $mrc)"
kill "$TARGET" 2>/dev/null
wait "$TPID" 2>/dev/null
rm -f "$DIR/target.pid"
if "$BUILD/tools/pmrep" verify "$DIR/log" "$DIR/replica" > "$DIR/verify.log" 2>&1; then
	echo "t22: pmrep verify: $(tr '\n' ' ' < "$DIR/verify.log")"
else
	fail "pmrep verify: $(cat "$DIR/verify.log")"
fi

if [ "$FAILED" = 1 ]; then
	echo "---- target log"; cat "$DIR/target.log"
	echo "---- mirror log (tail)"; grep -v "acked" "$DIR/mirror.log" | tail -40
	exit 1
fi
echo "t22: PASS"
exit 0
