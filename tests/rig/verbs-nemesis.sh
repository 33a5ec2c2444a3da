#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# verbs-nemesis.sh -- the fault rig on the verbs provider, inside the
# soft-RoCE guest (tests/vm/run-in-vm.sh; the 6.12 kernel: VM_KERNEL=backports).
# rxe devices cannot move into network namespaces there, so the layout is
# /work/shared/docs/network-faults.md's: a veth pair vethA (10.77.0.1) /
# vethB (10.77.0.2) in the root namespace, rxeA and rxeB on them, policy
# routing so that traffic between the two addresses crosses the veth. The
# writer (rig-writer) uses rxeA; two pmrep-targets listen on 10.77.0.2
# (rxeB), ports 7301 and 7302, serving replica files in /dev/shm.
# Faults (seeded, 0.2 .. 3 s each; never two on one replica at once, the
# two targets' faults overlapping freely): per target kill -9 + restart and
# SIGSTOP .. SIGCONT -- GPSPM only (targets --staging, writer --gpspm): rxe's
# responder runs in the kernel, a stopped target would not stop an APM or a
# native persist -- and, on the link (both replicas at once, so it waits for
# and holds off the targets' faults), netem partition (loss 100 % both ends), delay (1 ms) and
# loss (1 %). No `rdma link delete` faults (shared/cases/T22 first).
# Then, per policy ("all", quorum 1 of 2): SIGKILL the writer, rig-check
# history, rig-writer --heal-only, pmrep verify, rig-check report.
#
# usage (host, from the build directory):
#   VM_KERNEL=backports VM_TIMEOUT=300 ../tests/vm/run-in-vm.sh ../tests/rig/verbs-nemesis.sh .
# environment: RIG_SEED, RIG_SECONDS (per policy, default 45), RIG_POLICIES
# ("0 1"), RIG_MIN_FAULTS (default 20 for the default length), RIG_WALL
# (default 2 x (RIG_SECONDS + 90)), RIG_TIMEOUT_MS (persist / connect /
# target timeout, default 2000: an emulated guest), RIG_LOG_DIR (where the
# logs are copied at the end; default BUILD_DIR/rig-verbs-logs).
# exit: 0 passed, 1 failed, 77 not in the guest / no rxe / no netem (SKIPPED).
set -u
BUILD=${1:?usage: verbs-nemesis.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
. "$(dirname "$0")/rig-lib.sh"

rig_verbs_require verbs-nemesis
rig_binaries verbs-nemesis

PER=${RIG_SECONDS:-45}
POLICIES=${RIG_POLICIES:-0 1}
npol=$(wc -w <<<"$POLICIES")
SEED=${RIG_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 1000000 ))}
# the floor proves the nemesis ran, not its rate: how many faults fit in
# PER seconds depends on the emulated guest's share of the host (25 seen
# with other builds on the host, 48..74 alone)
MIN_FAULTS=${RIG_MIN_FAULTS:-$(( 20 * PER * npol / 90 ))}
WALL=${RIG_WALL:-$(( npol * (PER + 90) ))}
ADDR_W=10.77.0.1 ADDR_T=10.77.0.2
PORTS=("" 7301 7302)
REC=256
RATE=200
SIZE=$(( ( (PER * RATE * REC * 5 / 4) / 1048576 + 4 ) * 1048576 ))
WORK=$(mktemp -d /dev/shm/rig-verbs.XXXXXX)
# the guest's /dev/shm is gone with it: the logs are copied here at the end
LOGDIR=${RIG_LOG_DIR:-$BUILD/rig-verbs-logs}
# the guest is emulated (TCG) on a shared machine: rdma_cm's connect alone
# can take a second there
TMO=${RIG_TIMEOUT_MS:-2000}
export PMREP_PROVIDER=verbs
ok=1

pids_to_kill=()
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	rig_kill_all
	# the logs first: the guest's /dev/shm dies with it
	rm -rf "$LOGDIR"; mkdir -p "$LOGDIR"
	cp "$WORK"/*.q? "$WORK"/*.err "$WORK"/*.out "$WORK"/faults "$WORK"/ev* "$WORK"/diag* "$LOGDIR"/ 2>/dev/null
	tc -s qdisc show dev vethA >"$LOGDIR/qdisc.txt" 2>&1; rdma link show >>"$LOGDIR/qdisc.txt" 2>&1
	say "logs copied to $LOGDIR"
	rig_verbs_link_down
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 1' INT TERM
( sleep "$WALL"; echo "verbs-nemesis: WALL TIME of $WALL s exceeded"; kill -TERM $$ ) &
WD=$!

say "verbs-nemesis: seed $SEED (replay: RIG_SEED=$SEED), $PER s per policy, policies '$POLICIES', kernel $(uname -r), wall limit $WALL s"

# ---- the link: network-faults.md's layout (rig-lib.sh)
rig_verbs_link_up verbs-nemesis
say "rxeA on vethA ($ADDR_W), rxeB on vethB ($ADDR_T), policy routed"
head -c 32 /dev/urandom | base64 >"$WORK/key"
chmod 600 "$WORK/key"	# key files others may read are refused


start_target() { # replica 1|2
	local r=$1 i
	# the worker's lock fds are not the target's: a restarted target
	# would hold its replica's lock for its whole life
	(
		for fd in ${fds[@]+"${fds[@]}"}; do exec {fd}>&-; done
		exec "$TARGET" --path "$WORK/rep$r" --size "$SIZE" --create --address $ADDR_T \
			--port "${PORTS[r]}" --key-file "$WORK/key" --timeout "$TMO" --staging \
			>"$WORK/t$r.out" 2>>"$WORK/t$r.err"
	) &
	TPID=$!
	echo $TPID >"$WORK/t$r.pid"
	for i in $(seq 500); do
		grep -q "listening on" "$WORK/t$r.out" 2>/dev/null && return 0
		kill -0 $TPID 2>/dev/null || return 1
		sleep 0.02
	done
	return 1
}
start_target_retry() {
	local i
	for i in $(seq 20); do
		start_target "$1" && return 0
		kill -9 "$TPID" 2>/dev/null; wait "$TPID" 2>/dev/null
		sleep 0.2
	done
	say "replica $1: target does not start again: $(tail -2 "$WORK/t$1.err")"
	return 1
}
# rxe's transmit failures so far (send_err of both devices): a fault that
# made the kernel fail a transmit is named in the output
send_errs() {
	echo "$(cat /sys/class/infiniband/rxeA/ports/1/hw_counters/send_err 2>/dev/null)/$(cat /sys/class/infiniband/rxeB/ports/1/hw_counters/send_err 2>/dev/null)"
}
worker() { # policy who(1|2: a target; 0: the link) deadline
	local pol=$1 r=$2 deadline=$3
	trap - EXIT
	if [ "$r" -gt 0 ]; then start_target_retry "$r" || exit 1; fi
	touch "$WORK/ready$r"
	while [ ! -f "$WORK/go" ]; do sleep 0.05; done
	# the fault window begins once the writer is attached (a fresh
	# replica's full resync takes seconds in the emulated guest)
	deadline=$(( SECONDS + PER ))
	local g k d t0 t1 n=0
	while read -r g k d; do
		msleep "$g"
		[ "$SECONDS" -lt "$deadline" ] || break
		[ -f "$WORK/halt" ] && break
		# one fault at a time per replica (a failure must be some
		# fault's): a target's fault holds its replica's lock, a link
		# fault both (taken in order: no deadlock)
		local locks=("$r")
		[ "$r" -eq 0 ] && locks=(1 2)
		local l fds=()
		for l in "${locks[@]}"; do
			exec {fd}>"$WORK/lock$l"
			flock "$fd"
			fds+=("$fd")
		done
		local e0; e0=$(send_errs)
		t0=$(now)
		case $k in
		kill) kill -9 "$TPID"; wait "$TPID" 2>/dev/null; msleep "$d"; start_target_retry "$r" || exit 1 ;;
		stop) kill -STOP "$TPID"; msleep "$d"; kill -CONT "$TPID" ;;
		partition) netem loss 100%; msleep "$d"; netem off ;;
		delay) netem delay 1ms; msleep "$d"; netem off ;;
		loss) netem loss 1%; msleep "$d"; netem off ;;
		esac
		t1=$(now)
		for fd in "${fds[@]}"; do exec {fd}>&-; done
		n=$((n + 1))
		if [ "$r" -gt 0 ]; then
			echo "fault $k $((r - 1)) $t0 $t1" >>"$WORK/faults"
		else	# the link: both replicas
			printf 'fault %s 0 %s %s\nfault %s 1 %s %s\n' "$k" "$t0" "$t1" "$k" "$t0" "$t1" >>"$WORK/faults"
		fi
		local e1; e1=$(send_errs)
		echo "    fault $k ${r/#0/link} ${d} ms ($t0 .. $t1)"
		[ "$e0" = "$e1" ] || echo "    rxe transmit failures (send_err rxeA/rxeB) $e0 -> $e1 during fault $k ${r/#0/link}"
	done <"$WORK/sched$r"
	say "worker $r: $n faults"
}

total_faults=0; total_viol=0; total_hangs=0
# after a failed heal: can a plain rdma_cm client (rping) still connect
# between the two devices -- is it the kernel / rxe or pmrep's connect path?
diagnose() {
	local d="$WORK/diag"
	{
		echo "== rping $ADDR_W -> $ADDR_T (a fresh rdma_cm connection)"
		timeout 10 rping -s -a "$ADDR_T" -p 7999 -C 3 -v >"$WORK/rping-s" 2>&1 &
		local sp=$!
		sleep 0.5
		timeout 8 rping -c -a "$ADDR_T" -I "$ADDR_W" -p 7999 -C 3 -v; echo "rping client exit $?"
		wait $sp; echo "rping server exit $?"; cat "$WORK/rping-s"
		echo "== rdma res"; rdma res show; rdma -d res show qp 2>&1 | head -60; rdma res show cm_id 2>&1 | head -40
		echo "== links"; rdma link show; ip -s link show vethA; ip -s link show vethB
		echo "== qdisc"; tc -s qdisc show; echo "== softnet_stat"; cat /proc/net/softnet_stat
		echo "== rules / routes / neigh"; ip rule; ip route show table 100; ip route show table 101; ip neigh show
		for c in /sys/class/infiniband/rxe[AB]/ports/1/hw_counters/*; do
			echo "$c $(cat "$c")"; done 2>/dev/null
	} >"$d" 2>&1
	say "diagnostics: $(grep -E 'rping client exit|rping server exit' "$d" | tr '\n' ' ')"
}

run_policy() {
	local q=$1 name
	[ "$q" -eq 0 ] && name="all" || name="quorum $q of 2"
	say "=== policy $name: $PER s of faults (GPSPM)"
	rm -f "$WORK"/rep? "$WORK"/src* "$WORK"/go "$WORK"/halt "$WORK"/ready? "$WORK"/hist "$WORK"/ev "$WORK"/ev-heal
	: >"$WORK/faults"
	local r wp=() deadline=$(( SECONDS + PER + 3 ))
	make_schedule "$q" 0 "$WORK/sched0" partition delay loss partition
	make_schedule "$q" 1 "$WORK/sched1" kill stop
	make_schedule "$q" 2 "$WORK/sched2" kill stop
	for r in 0 1 2; do worker "$q" "$r" "$deadline" & wp+=($!); done
	pids_to_kill=("${wp[@]}")
	for _ in $(seq 500); do [ -f "$WORK/ready1" ] && [ -f "$WORK/ready2" ] && [ -f "$WORK/ready0" ] && break; sleep 0.02; done
	[ -f "$WORK/ready1" ] && [ -f "$WORK/ready2" ] || { say "targets did not start: $(tail -2 "$WORK"/t?.err)"; ok=0; return; }
	"$WRITER" --file "$WORK/src" --size "$SIZE" \
		--replica "$ADDR_T:${PORTS[1]}" --replica "$ADDR_T:${PORTS[2]}" --key-file "$WORK/key" \
		--quorum "$q" --history "$WORK/hist" --events "$WORK/ev" --record-size $REC \
		--group 2 --rate $RATE --timeout "$TMO" --reconnect-timeout $((2 * TMO)) --gpspm \
		--idle-every 1500 --idle-max 1200 --heal-timeout 60000 --seed "$SEED" \
		>"$WORK/writer.out" 2>"$WORK/writer.err" &
	local wpid=$!
	echo $wpid >"$WORK/writer.pid"
	# the faults begin once the writer is attached
	for _ in $(seq 600); do
		grep -q "attached" "$WORK/writer.out" 2>/dev/null && break
		kill -0 $wpid 2>/dev/null || break
		sleep 0.1
	done
	grep -q "attached" "$WORK/writer.out" || { say "the writer did not attach: $(tail -3 "$WORK/writer.err")"; ok=0; }
	rig_fault_window "$wpid" "fault lines"
	say "writer's library log: $(wc -l <"$WORK/writer.err") lines; the first 3:"; head -3 "$WORK/writer.err" | cut -c1-200
	local out rc v f h
	out=$("$CHECK" history --history "$WORK/hist" --source "$WORK/src" \
		--replica "$WORK/rep1" --replica "$WORK/rep2" --quorum "$q"); rc=$?
	echo "$out"
	v=$(sed -n 's/.*; violations \([0-9]*\);.*/\1/p' <<<"$out")
	[ "$rc" -eq 0 ] || { ok=0; say "CHECK FAILED (exit $rc) under policy $name, seed $SEED"; }
	total_viol=$(( total_viol + ${v:-1} ))
	"$WRITER" --heal-only --file "$WORK/src" --gpspm \
		--replica "$ADDR_T:${PORTS[1]}" --replica "$ADDR_T:${PORTS[2]}" --key-file "$WORK/key" \
		--quorum "$q" --events "$WORK/ev-heal" --timeout "$TMO" --heal-timeout 60000 \
		2>"$WORK/heal.err" || { ok=0; say "HEAL FAILED: $(tail -3 "$WORK/heal.err")"; diagnose; }
	for r in 1 2; do
		if out=$("$PMREP" verify "$WORK/src" "$WORK/rep$r"); then
			say "pmrep verify replica $((r - 1)): $(grep -E 'IDENTICAL|DIFFERENT' <<<"$out")"
		else
			ok=0; say "pmrep verify replica $((r - 1)) FAILED: $out"
		fi
	done
	out=$("$CHECK" report --events "$WORK/ev" --faults "$WORK/faults" --history "$WORK/hist"); rc=$?
	echo "$out"
	[ "$rc" -eq 0 ] || { ok=0; say "HANG under policy $name, seed $SEED"; }
	# a link fault is two lines (one per replica): count it once
	f=$(awk '$1 == "fault" && !($2 ~ /partition|delay|loss/ && $3 == 1)' "$WORK/faults" | wc -l)
	h=$(sed -n 's/^figures: .* hangs=\([0-9]*\) .*/\1/p' <<<"$out")
	say "faults injected under policy $name: $f (a link fault counted once)"
	g=$(rdma -d res show qp 2>/dev/null | grep "type GSI state ERR" | awk "{print \$2}" | tr "\n" " ")
	[ -z "$g" ] || say "KERNEL: the GSI QP (QP1) of $g is in the error state (rxe after a transmit failure): no rdma_cm connection can leave it"
	total_faults=$(( total_faults + f )); total_hangs=$(( total_hangs + ${h:-0} ))
	out=$("$CHECK" report --events "$WORK/ev-heal" --faults /dev/null | grep -E '^(HANG|final heal)')
	echo "$out"
	grep -q '^HANG' <<<"$out" && { ok=0; total_hangs=$((total_hangs + 1)); }
	for r in 1 2; do
		local p; p=$(cat "$WORK/t$r.pid" 2>/dev/null) || continue
		kill -TERM "$p" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
		kill -9 "$p" 2>/dev/null
		rm -f "$WORK/t$r.pid"
	done
	rm -f "$WORK"/rep? "$WORK"/src*
	# this policy's logs, kept apart (the work directory is kept on a failure or RIG_KEEP=1)
	for f in ev ev-heal faults hist writer.out writer.err heal.err; do
		[ -f "$WORK/$f" ] && mv "$WORK/$f" "$WORK/$f.q$q"
	done
}

for q in $POLICIES; do run_policy "$q"; done

say "=== verbs-nemesis: seed $SEED: $total_faults faults (at least $MIN_FAULTS required), $total_viol violations, $total_hangs hangs"
[ "$total_faults" -ge "$MIN_FAULTS" ] || { ok=0; say "TOO FEW FAULTS"; }
[ "$total_viol" -eq 0 ] && [ "$total_hangs" -eq 0 ] || ok=0
if [ "$ok" -eq 1 ]; then say "verbs-nemesis: PASSED"; exit 0; fi
say "verbs-nemesis: FAILED (replay: RIG_SEED=$SEED)"
exit 1
