# SPDX-License-Identifier: BSD-3-Clause
# rig-lib.sh -- what tcp-nemesis.sh, tcp-failover.sh and verbs-nemesis.sh
# share (sourced): the writer's clock, the log line, the seeded fault
# schedule, a sleep in ms, the kill of every process a rig started, and
# (the tcp rigs) the programs and the exit traps.

now() { "$CLOCK"; }
say() { echo "[$(date -u +%T)] $*"; }
msleep() { sleep "$(printf '%d.%03d' $(( $1 / 1000 )) $(( $1 % 1000 )))"; }

# the schedule: a 31-bit LCG per (policy, worker), seeded from SEED
rng=1
rnd() { rng=$(( (rng * 1103515245 + 12345) % 2147483648 )); R=$(( rng >> 8 )); }
# make_schedule POLICY WORKER FILE KIND...: PER + 20 lines "gap_ms kind
# dur_ms" (gap 300..2500 ms, duration 200..3000 ms, a kind of those given)
make_schedule() {
	local p=$1 w=$2 f=$3 i; shift 3
	local kinds=("$@")
	rng=$(( (SEED * 7919 + p * 31 + w) % 2147483648 ))
	for i in $(seq $(( PER + 20 ))); do
		local g k d
		rnd; g=$(( 300 + R % 2201 )); rnd; k=${kinds[$(( R % ${#kinds[@]} ))]}; rnd; d=$(( 200 + R % 2801 ))
		echo "$g $k $d"
	done >"$f"
}

# rig_kill_all: the watchdog ($WD), the workers (pids_to_kill) and their
# children (sleep, ip, nft, tc) -- a parent before its children: a child
# killed first would let the parent run on (the watchdog would TERM the
# script in the middle of its cleanup) -- then the targets and the writer
# by their pid files in $WORK (a stopped one continued first)
rig_kill_all() {
	local p kids f
	for p in ${WD:-} "${pids_to_kill[@]}"; do
		kids=$(pgrep -P "$p")
		kill -9 "$p" 2>/dev/null
		[ -n "$kids" ] && kill -9 $kids 2>/dev/null
	done
	for f in "$WORK"/t*.pid "$WORK"/writer.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f"); kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
}

# rig_fault_window WRITER_PID WHAT: start the writer and the fault workers
# (the "go" file), report every 10 s for PER seconds ("N records
# acknowledged, M WHAT so far"), stop the workers ("halt", waits for the
# pids in wp), then kill the writer outright -- the check comes before any
# heal -- and show its summary. A writer that died is a failure (ok=0).
rig_fault_window() {
	local wpid=$1 what=$2 r
	touch "$WORK/go"
	local t_end=$(( SECONDS + PER ))
	while [ "$SECONDS" -lt "$t_end" ]; do
		sleep 10 & wait $!
		kill -0 "$wpid" 2>/dev/null || { say "the writer died: $(tail -3 "$WORK/writer.err")"; ok=0; break; }
		say "  $(wc -l <"$WORK/hist") records acknowledged, $(wc -l <"$WORK/faults") $what so far"
	done
	touch "$WORK/halt"
	for r in "${wp[@]}"; do wait "$r"; done
	pids_to_kill=()
	kill -9 "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
	rm -f "$WORK/writer.pid"
	cat "$WORK/writer.out"
}

# rig_binaries NAME: the rig's programs in $BUILD (WRITER CHECK CLOCK
# TARGET PMREP); one missing fails the run (build first)
rig_binaries() {
	WRITER=$BUILD/tests/rig/rig-writer
	CHECK=$BUILD/tests/rig/rig-check
	CLOCK=$BUILD/tests/rig/rig-clock
	TARGET=$BUILD/tools/pmrep-target
	PMREP=$BUILD/tools/pmrep
	local b
	for b in "$WRITER" "$CHECK" "$CLOCK" "$TARGET" "$PMREP"; do
		[ -x "$b" ] || { echo "$1: $b missing (build first)"; exit 1; }
	done
}

# rig_exit_traps NAME NAMESPACE...: on every exit the processes
# (rig_kill_all) and the namespaces go (deleting a namespace deletes its
# veth ends and nft tables), and the work directory $WORK unless the run
# failed or RIG_KEEP=1; INT / TERM exit 1; a watchdog TERMs the script ($ID)
# after $WALL s (the EXIT trap cleans up)
rig_exit_traps() {
	RIG_NAME=$1; shift
	RIG_NAMESPACES=("$@")
	trap rig_cleanup EXIT
	trap 'say "interrupted"; exit 1' INT TERM
	( sleep "$WALL"; echo "$RIG_NAME: WALL TIME of $WALL s exceeded"; kill -TERM "$ID" ) &
	WD=$!
}
rig_cleanup() {
	local rc=$? n
	trap - EXIT INT TERM
	rig_kill_all
	for n in "${RIG_NAMESPACES[@]}"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
	if [ "$rc" -ne 0 ] || [ "${RIG_KEEP:-0}" = 1 ]; then
		say "logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
