#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# rig.checker -- the history checker must catch what it exists for. On
# loopback (no root): two pmrep-targets, rig-writer writes 2000 records
# under "all" and heals; rig-check finds 0 violations and pmrep verify says
# IDENTICAL. Then, on copies of the replica files, deliberately broken
# cases: one acknowledged record corrupted in one replica, one dropped
# (zeroed), a record lost on both replicas under quorum 1, a history line
# naming a record that was never written -- each must be reported as
# exactly that violation with a non-zero exit; and a record broken on one
# replica under quorum 1 of 2 must not be one.
# usage: test-checker.sh RIG_BIN_DIR TARGET_BIN_DIR PMREP_BIN_DIR
set -u
RIG=$1 TGT=$2 CLI=$3
D=$(mktemp -d /tmp/rig-checker.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

head -c 32 /dev/urandom | base64 >"$D/key"
chmod 600 "$D/key"	# key files others may read are refused
chmod 600 "$D/key"
SIZE=1048576	# 4096 header + 4080 slots of 256 bytes
ports=()
for i in 0 1; do
	"$TGT/pmrep-target" --path "$D/r$i" --size $SIZE --create --address 127.0.0.1 \
		--port 0 --key-file "$D/key" --timeout 1000 >"$D/t$i.out" 2>"$D/t$i.err" &
	pids+=($!)
	for _ in $(seq 100); do grep -q "listening on" "$D/t$i.out" && break; sleep 0.05; done
	p=$(sed -n 's/^listening on .*:\([0-9]*\) .*/\1/p' "$D/t$i.out")
	[ -n "$p" ] || { cat "$D/t$i.err"; fail "target $i did not start"; }
	ports+=("$p")
done
"$RIG/rig-writer" --file "$D/src" --size $SIZE --replica 127.0.0.1:${ports[0]} \
	--replica 127.0.0.1:${ports[1]} --key-file "$D/key" --history "$D/hist" \
	--events "$D/ev" --count 2000 --group 4 --idle-every 100 --idle-max 60 ||
	fail "rig-writer failed"
[ "$(wc -l <"$D/hist")" -ge 2000 ] || fail "history has $(wc -l <"$D/hist") lines, expected >= 2000"

chk() { "$RIG/rig-check" history --history "$1" --source "$D/src" --replica "$2" --replica "$3" --quorum "$4"; }

out=$(chk "$D/hist" "$D/r0" "$D/r1" 0); rc=$?
echo "$out"
[ $rc -eq 0 ] && grep -q "violations 0;" <<<"$out" || fail "intact run: rc $rc"
for i in 0 1; do
	"$CLI/pmrep" verify "$D/src" "$D/r$i" | grep -q IDENTICAL || fail "replica $i not IDENTICAL"
done

# the byte offset of record SEQ in a replica file: replica header, log header, slot
recoff() { echo $((4096 + 4096 + ($1 - 1) * 256)); }
fresh() { cp "$D/r0" "$D/c0"; cp "$D/r1" "$D/c1"; cp "$D/hist" "$D/h"; }
corrupt() { printf '\x5a' | dd of="$1" bs=1 seek=$(( $(recoff "$2") + 40 )) conv=notrunc status=none; }
drop() { dd if=/dev/zero of="$1" bs=256 count=1 seek=$(( $(recoff "$2") / 256 )) conv=notrunc status=none; }
expect() { # name rc out want_rc want_violations want_line
	echo "--- $1:"; echo "$3"
	[ "$2" -eq "$4" ] || fail "$1: exit $2, expected $4"
	grep -q "violations $5;" <<<"$3" || fail "$1: expected $5 violations"
	[ "$(grep -c '^VIOLATION' <<<"$3")" -eq "$5" ] || fail "$1: VIOLATION lines"
	[ -z "$6" ] || grep -q "^$6" <<<"$3" || fail "$1: expected '$6'"
}

fresh; corrupt "$D/c1" 100
out=$(chk "$D/h" "$D/c0" "$D/c1" 0); rc=$?
expect "all, record 100 corrupted on replica 1" $rc "$out" 1 1 \
	"VIOLATION seq 100 slot 99: right on 1 of 2 replicas, policy requires 2: replica 0 ok replica 1 different"

fresh; drop "$D/c0" 200
out=$(chk "$D/h" "$D/c0" "$D/c1" 0); rc=$?
expect "all, record 200 dropped on replica 0" $rc "$out" 1 1 \
	"VIOLATION seq 200 slot 199: right on 1 of 2 replicas, policy requires 2: replica 0 missing replica 1 ok"

fresh; corrupt "$D/c1" 100
out=$(chk "$D/h" "$D/c0" "$D/c1" 1); rc=$?
expect "quorum 1, record 100 corrupted on replica 1 only" $rc "$out" 0 0 ""

fresh; drop "$D/c0" 300; drop "$D/c1" 300
out=$(chk "$D/h" "$D/c0" "$D/c1" 1); rc=$?
expect "quorum 1, record 300 dropped on both" $rc "$out" 1 1 \
	"VIOLATION seq 300 slot 299: right on 0 of 2 replicas, policy requires 1: replica 0 missing replica 1 missing"

fresh; echo "3000 2999 0.000" >>"$D/h"
out=$(chk "$D/h" "$D/c0" "$D/c1" 1); rc=$?
expect "history names a record never written" $rc "$out" 1 1 \
	"VIOLATION seq 3000 slot 2999: right on 0 of 2 replicas"

# the writer's SIGTERM path: stop writing, heal, exit 0 (on the same log
# and replica set: it resumes after the records the log holds)
"$RIG/rig-writer" --file "$D/src" --size $SIZE --replica 127.0.0.1:${ports[0]} \
	--replica 127.0.0.1:${ports[1]} --key-file "$D/key" --history "$D/hist2" \
	--events "$D/ev2" --rate 500 --idle-every 300 --idle-max 200 >"$D/w2.out" 2>&1 &
wp=$!
pids+=($wp)
sleep 1.5
kill -TERM $wp
wait $wp; rc=$?
cat "$D/w2.out"
[ $rc -eq 0 ] || fail "writer stopped by SIGTERM: exit $rc"
grep -q "heal: all 2 replicas in sync" "$D/w2.out" || fail "no heal line after SIGTERM"
[ -s "$D/hist2" ] || fail "the writer acknowledged no record in 1.5 s"
out=$(chk "$D/hist2" "$D/r0" "$D/r1" 0); rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "after SIGTERM: rc $rc"
for i in 0 1; do
	"$CLI/pmrep" verify "$D/src" "$D/r$i" | grep -q IDENTICAL || fail "after SIGTERM: replica $i not IDENTICAL"
done
echo "rig.checker: PASSED"
