#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tcp-nemesis.sh -- the multi-node fault rig on the tcp provider: three
# network namespaces on this host (P: the writer; R1, R2: one pmrep-target
# each, joined to P by veth pairs P-R1 10.231.0.1/.2 and P-R2
# 10.231.0.5/.6, /30), and a seeded fault schedule against the targets:
#   kill  kill -9 of the target, restart on the same replica file
#   stop  SIGSTOP ... SIGCONT of the target (a frozen, half-open peer)
#   link  the replica's end of the veth down ... up
#   drop  an nft table in the replica's namespace dropping everything (a
#         partition with the link up)
# each lasting 0.2 .. 3 s, one at a time per replica, the two replicas'
# faults overlapping freely. Run once under the policy "all" and once under
# quorum 1 of 2, RIG_SECONDS each. After each: the writer is killed
# (SIGKILL, so nothing repairs the replicas before the check), rig-check
# reads the history, the source and both replica files (violations must be
# 0), then `rig-writer --heal-only` attaches and heals (heal time), then
# `pmrep verify` must say IDENTICAL for each replica, and rig-check report
# prints the figures (a hang fails the run).
#
# usage: tcp-nemesis.sh BUILD_DIR
# environment:
#   RIG_SEED=N        the schedule's seed (default: random; printed -- the
#                     same seed replays the same schedule)
#   RIG_SECONDS=S     seconds of faults per policy (default 95; RIG_SOAK=1: 600)
#   RIG_POLICIES="0 1"  quorums to run (0 = "all"; default both)
#   RIG_MIN_FAULTS=N  fewer faults in all fails the run (default 100; scaled
#                     down when RIG_SECONDS or RIG_POLICIES is reduced)
#   RIG_WALL=S        hard wall-time limit (default 2 x RIG_SECONDS + 150)
#   RIG_KEEP=1        keep the work directory (logs, files) even on success
# exit: 0 passed, 1 failed (violation, hang, not IDENTICAL, too few faults,
# wall time), 77 cannot run here (not root, no ip netns, no nft): SKIPPED.
set -u
BUILD=${1:?usage: tcp-nemesis.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
WRITER=$BUILD/tests/rig/rig-writer
CHECK=$BUILD/tests/rig/rig-check
CLOCK=$BUILD/tests/rig/rig-clock
TARGET=$BUILD/tools/pmrep-target
PMREP=$BUILD/tools/pmrep

skip() { echo "tcp-nemesis: SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null && ip netns list >/dev/null 2>&1 || skip "no 'ip netns' (iproute2)"
command -v nft >/dev/null || skip "no nft (nftables)"
for b in "$WRITER" "$CHECK" "$CLOCK" "$TARGET" "$PMREP"; do
	[ -x "$b" ] || { echo "tcp-nemesis: $b missing (build first)"; exit 1; }
done

if [ "${RIG_SOAK:-0}" = 1 ]; then PER=${RIG_SECONDS:-600}; else PER=${RIG_SECONDS:-95}; fi
POLICIES=${RIG_POLICIES:-0 1}
npol=$(wc -w <<<"$POLICIES")
SEED=${RIG_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 1000000 ))}
MIN_FAULTS=${RIG_MIN_FAULTS:-$(( 100 * PER * npol / 190 ))}
WALL=${RIG_WALL:-$(( npol * (PER + 75) ))}
ID=$$
NS_P=rigP$ID; NS=("" rigA$ID rigB$ID)
VP=("" rp1-$ID rp2-$ID)   # P's ends
VR=("" vr1-$ID vr2-$ID)   # the replicas' ends
PADDR=("" 10.231.0.1 10.231.0.5)
RADDR=("" 10.231.0.2 10.231.0.6)
PORT=7204
REC=256
RATE=1000
# no wrap: slots for RATE records/s for the whole run, with room to spare
SIZE=$(( ( (PER * RATE * REC * 5 / 4) / 1048576 + 64 ) * 1048576 ))
WORK=$(mktemp -d /dev/shm/rig-tcp.XXXXXX)
ok=1
. "$(dirname "$0")/rig-lib.sh"

pids_to_kill=()
# cleanup on every exit, and the hard wall-time limit (rig-lib.sh)
rig_exit_traps tcp-nemesis "$NS_P" "${NS[1]}" "${NS[2]}"

say "tcp-nemesis: seed $SEED (replay: RIG_SEED=$SEED), $PER s per policy, policies '$POLICIES' (0 = all), wall limit $WALL s, work dir $WORK"

# ---- namespaces and links
ip netns add "$NS_P" || exit 1
for r in 1 2; do
	ip netns add "${NS[r]}" || exit 1
	ip link add "${VP[r]}" netns "$NS_P" type veth peer name "${VR[r]}" netns "${NS[r]}" || exit 1
	ip -n "$NS_P" addr add "${PADDR[r]}/30" dev "${VP[r]}" || exit 1
	ip -n "${NS[r]}" addr add "${RADDR[r]}/30" dev "${VR[r]}" || exit 1
	ip -n "$NS_P" link set "${VP[r]}" up && ip -n "${NS[r]}" link set "${VR[r]}" up || exit 1
	ip -n "${NS[r]}" link set lo up
done
ip -n "$NS_P" link set lo up
for r in 1 2; do  # no ping here: wait for both ends to be up (the writer's attach is the real test)
	for _ in $(seq 50); do
		ip -n "$NS_P" link show "${VP[r]}" | grep -q LOWER_UP &&
			ip -n "${NS[r]}" link show "${VR[r]}" | grep -q LOWER_UP && break
		sleep 0.1
	done
done
say "namespaces $NS_P ${NS[1]} ${NS[2]} and their veth links up"
head -c 32 /dev/urandom | base64 >"$WORK/key"
chmod 600 "$WORK/key"	# key files others may read are refused
chmod 600 "$WORK/key"


# ---- one replica's worker: owns its target (so it can wait for it),
# runs its schedule until the deadline, leaves the target running
start_target() { # replica
	local r=$1
	ip netns exec "${NS[r]}" "$TARGET" --path "$WORK/rep$r" --size "$SIZE" --create \
		--address "${RADDR[r]}" --port $PORT --key-file "$WORK/key" --timeout 1000 \
		>"$WORK/t$r.out" 2>>"$WORK/t$r.err" &
	TPID=$!
	echo $TPID >"$WORK/t$r.pid"
	local i
	for i in $(seq 400); do
		grep -q "listening on" "$WORK/t$r.out" 2>/dev/null && return 0
		kill -0 $TPID 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}
start_target_retry() { # replica: a restarted target may find its port busy for a moment
	local i
	for i in $(seq 20); do
		start_target "$1" && return 0
		kill -9 "$TPID" 2>/dev/null; wait "$TPID" 2>/dev/null
		sleep 0.1
	done
	say "replica $1: target does not start again: $(tail -2 "$WORK/t$1.err")"
	return 1
}
worker() { # policy replica deadline(SECONDS)
	local pol=$1 r=$2 deadline=$3 idx=$(( $2 - 1 ))
	trap - EXIT
	start_target_retry "$r" || exit 1
	touch "$WORK/ready$r"
	while [ ! -f "$WORK/go" ]; do sleep 0.05; done
	local g k d t0 t1 n=0
	while read -r g k d; do
		msleep "$g"
		[ "$SECONDS" -lt "$deadline" ] || break
		[ -f "$WORK/halt" ] && break
		t0=$(now)
		case $k in
		kill) kill -9 "$TPID"; wait "$TPID" 2>/dev/null; msleep "$d"; start_target_retry "$r" || exit 1 ;;
		stop) kill -STOP "$TPID"; msleep "$d"; kill -CONT "$TPID" ;;
		link) ip -n "${NS[r]}" link set "${VR[r]}" down; msleep "$d"; ip -n "${NS[r]}" link set "${VR[r]}" up ;;
		drop) ip netns exec "${NS[r]}" nft -f - <<-'NFT'
			table inet rigdrop {
				chain in { type filter hook input priority 0; policy drop; }
				chain out { type filter hook output priority 0; policy drop; }
			}
			NFT
		      msleep "$d"; ip netns exec "${NS[r]}" nft delete table inet rigdrop ;;
		esac
		t1=$(now)
		n=$((n + 1))
		echo "fault $k $idx $t0 $t1" >>"$WORK/faults"
		echo "    fault $k replica $idx ${d} ms ($t0 .. $t1)"
	done <"$WORK/sched$r"
	say "replica $idx: $n faults"
}

total_faults=0; total_viol=0; total_hangs=0
run_policy() { # quorum (0: all)
	local q=$1 name
	[ "$q" -eq 0 ] && name="all" || name="quorum $q of 2"
	say "=== policy $name: $PER s of faults"
	rm -f "$WORK"/rep? "$WORK"/src* "$WORK"/faults "$WORK"/go "$WORK"/halt "$WORK"/ready? \
		"$WORK"/hist "$WORK"/ev "$WORK"/ev-heal "$WORK"/t?.err
	: >"$WORK/faults"
	local r wp=()
	local deadline=$(( SECONDS + PER + 3 ))
	for r in 1 2; do
		make_schedule "$q" "$r" "$WORK/sched$r" kill stop link drop
		worker "$q" "$r" "$deadline" &
		wp+=($!)
	done
	pids_to_kill=("${wp[@]}")
	for _ in $(seq 500); do [ -f "$WORK/ready1" ] && [ -f "$WORK/ready2" ] && break; sleep 0.02; done
	[ -f "$WORK/ready1" ] && [ -f "$WORK/ready2" ] || { say "targets did not start"; ok=0; return; }
	ip netns exec "$NS_P" "$WRITER" --file "$WORK/src" --size "$SIZE" \
		--replica "${RADDR[1]}:$PORT" --replica "${RADDR[2]}:$PORT" --key-file "$WORK/key" \
		--quorum "$q" --history "$WORK/hist" --events "$WORK/ev" --record-size $REC \
		--group 2 --rate $RATE --timeout 1000 --reconnect-timeout 2000 \
		--idle-every 1500 --idle-max 1200 --seed "$SEED" >"$WORK/writer.out" 2>"$WORK/writer.err" &
	local wpid=$!
	echo $wpid >"$WORK/writer.pid"
	sleep 1
	rig_fault_window "$wpid" faults
	say "writer's library log: $(wc -l <"$WORK/writer.err") lines (first: $(head -1 "$WORK/writer.err" | cut -c1-160))"
	local out rc
	out=$("$CHECK" history --history "$WORK/hist" --source "$WORK/src" \
		--replica "$WORK/rep1" --replica "$WORK/rep2" --quorum "$q"); rc=$?
	echo "$out"
	local v
	v=$(sed -n 's/.*; violations \([0-9]*\);.*/\1/p' <<<"$out")
	[ "$rc" -eq 0 ] || { ok=0; say "CHECK FAILED (exit $rc) under policy $name, seed $SEED"; }
	total_viol=$(( total_viol + ${v:-1} ))
	# the final heal: a writer attaches to the log and heals every replica
	ip netns exec "$NS_P" "$WRITER" --heal-only --file "$WORK/src" \
		--replica "${RADDR[1]}:$PORT" --replica "${RADDR[2]}:$PORT" --key-file "$WORK/key" \
		--quorum "$q" --events "$WORK/ev-heal" --timeout 1000 --heal-timeout 30000 \
		2>"$WORK/heal.err" || { ok=0; say "HEAL FAILED: $(tail -3 "$WORK/heal.err")"; }
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
	local f h
	f=$(sed -n 's/^figures: faults=\([0-9]*\) .*/\1/p' <<<"$out")
	h=$(sed -n 's/^figures: .* hangs=\([0-9]*\) .*/\1/p' <<<"$out")
	total_faults=$(( total_faults + ${f:-0} )); total_hangs=$(( total_hangs + ${h:-0} ))
	# the heal writer's own calls must not hang either
	out=$("$CHECK" report --events "$WORK/ev-heal" --faults /dev/null | grep -E '^(HANG|final heal)')
	echo "$out"
	grep -q '^HANG' <<<"$out" && { ok=0; total_hangs=$((total_hangs + 1)); }
	# stop the targets (clean shutdown) before the next policy's fresh files
	for r in 1 2; do
		local p; p=$(cat "$WORK/t$r.pid" 2>/dev/null) || continue
		kill -TERM "$p" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
		kill -9 "$p" 2>/dev/null
		rm -f "$WORK/t$r.pid"
	done
	[ "$ok" -eq 1 ] && [ "${RIG_KEEP:-0}" != 1 ] && rm -f "$WORK"/rep? "$WORK"/src*
	# this policy's logs, kept apart (the work directory is kept on a failure or RIG_KEEP=1)
	for f in ev ev-heal faults hist writer.out writer.err heal.err; do
		[ -f "$WORK/$f" ] && mv "$WORK/$f" "$WORK/$f.q$q"
	done
}

for q in $POLICIES; do run_policy "$q"; done

say "=== tcp-nemesis: seed $SEED: $total_faults faults (at least $MIN_FAULTS required), $total_viol violations, $total_hangs hangs"
[ "$total_faults" -ge "$MIN_FAULTS" ] || { ok=0; say "TOO FEW FAULTS"; }
[ "$total_viol" -eq 0 ] && [ "$total_hangs" -eq 0 ] || ok=0
if [ "$ok" -eq 1 ]; then say "tcp-nemesis: PASSED"; exit 0; fi
say "tcp-nemesis: FAILED (replay: RIG_SEED=$SEED $0 $BUILD)"
exit 1
