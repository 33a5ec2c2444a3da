# SPDX-License-Identifier: BSD-3-Clause
# rig-lib.sh -- what tcp-nemesis.sh, tcp-failover.sh, verbs-nemesis.sh and
# verbs-failover.sh share (sourced): the writer's clock, the log line, the
# seeded fault schedule, a sleep in ms, the kill of every process a rig
# started, the programs and the exit traps; the soft-RoCE guest's link
# (two rxe devices on a veth pair, netem); and the failover procedure of
# both failover rigs (rig_failover_run).

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
# after $WALL s (the EXIT trap cleans up). A function rig_cleanup_hook, when
# the rig defines one, runs (with the exit code) once the processes are gone.
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
	# a rig's own last words (the guest's: copy the logs, remove the link)
	if declare -F rig_cleanup_hook >/dev/null; then rig_cleanup_hook "$rc"; fi
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

# ---- the soft-RoCE guest's link (verbs-nemesis.sh, verbs-failover.sh)
# rxe devices cannot move into network namespaces there: the layout of
# shared/docs/network-faults.md, a veth pair vethA ($ADDR_W, 10.77.0.1) /
# vethB ($ADDR_T, 10.77.0.2) in the guest's root namespace, rxeA / rxeB on
# them, policy routing so that the traffic between the two addresses
# crosses the veth. rig_verbs_require NAME: the guest, root, rdma and tc,
# else exit 77.
rig_verbs_require() {
	local why=
	if [ "${IN_VM:-0}" != 1 ]; then why="runs inside the soft-RoCE guest (tests/vm/run-in-vm.sh)"
	elif [ "$(id -u)" -ne 0 ]; then why="needs root"
	elif ! command -v rdma >/dev/null || ! command -v tc >/dev/null; then why="no rdma / tc"
	fi
	[ -z "$why" ] || { echo "$1: SKIPPED: $why"; exit 77; }
}
# rig_verbs_link_up NAME: the link, the two rxe devices, netem on both
# ends (exit 77 without netem, 1 on any other failure)
rig_verbs_link_up() {
	local i d
	ip link add vethA type veth peer name vethB || exit 1
	ip addr add "$ADDR_W/32" dev vethA; ip addr add "$ADDR_T/32" dev vethB
	ip link set vethA up; ip link set vethB up
	for i in all default vethA vethB; do
		sysctl -qw "net.ipv4.conf.$i.rp_filter=0" "net.ipv4.conf.$i.accept_local=1"
	done
	ip rule add pref 10 iif lo to "$ADDR_T" lookup 100
	ip rule add pref 11 iif lo to "$ADDR_W" lookup 101
	ip rule add pref 12 oif vethA to "$ADDR_T" lookup 100
	ip rule add pref 13 oif vethB to "$ADDR_W" lookup 101
	ip rule add pref 100 lookup local; ip rule del pref 0
	ip route replace "$ADDR_T" dev vethA src "$ADDR_W" table 100
	ip route replace "$ADDR_W" dev vethB src "$ADDR_T" table 101
	ip neigh replace "$ADDR_T" lladdr "$(cat /sys/class/net/vethB/address)" dev vethA nud permanent
	ip neigh replace "$ADDR_W" lladdr "$(cat /sys/class/net/vethA/address)" dev vethB nud permanent
	rdma link add rxeA type rxe netdev vethA || exit 1
	rdma link add rxeB type rxe netdev vethB || exit 1
	# netem sits on both ends for the whole run and a fault only changes
	# its parameters: replacing or deleting a root qdisc under traffic, or a
	# queue over its limit, fails a transmit, and rxe moves the sending QP
	# -- its GSI QP (QP1) too -- to the error state on any transmit failure
	# (seen on 6.12: rxeA's QP1 in ERR, no CM MAD leaves the device any
	# more). A big backlog for the same reason (veth hands packets to
	# netif_rx).
	sysctl -qw net.core.netdev_max_backlog=100000
	for d in vethA vethB; do
		tc qdisc add dev $d root netem delay 0ms limit 100000 2>/dev/null ||
			{ echo "$1: SKIPPED: no netem in this kernel"; exit 77; }
	done
}
# netem ARGS: the same netem parameters on both ends, or "off" (no delay,
# no loss); "loss 100%" is a partition of the link
netem() {
	local d
	[ "$1" = off ] && set -- delay 0ms
	for d in vethA vethB; do
		tc qdisc change dev $d root netem "$@" limit 100000
	done
}
# rig_verbs_link_down: everything rig_verbs_link_up made (every pmrep
# process must be gone: the deletes cannot hang on an open device, T22;
# bounded all the same)
rig_verbs_link_down() {
	local p
	tc qdisc del dev vethA root 2>/dev/null; tc qdisc del dev vethB root 2>/dev/null
	timeout 10 rdma link delete rxeA 2>/dev/null
	timeout 10 rdma link delete rxeB 2>/dev/null
	ip link del vethA 2>/dev/null
	ip rule add pref 0 lookup local 2>/dev/null
	for p in 10 11 12 13 100; do ip rule del pref $p 2>/dev/null; done
	ip route flush table 100 2>/dev/null; ip route flush table 101 2>/dev/null
}

# ---- the failover of docs/FAILOVER.md (tcp-failover.sh, verbs-failover.sh)
# Three nodes P (the primary), R1, R2. The rig sets, besides BUILD, WORK, ok
# and the programs: ADDR and PORT (associative, by node: where the node's
# target listens), SIZE REC RATE PHASE BREAK, TMO (persist / connect /
# target timeout, ms), FO_WAIT (s: the longest wait for a writer's first
# acknowledged record), FO_HEAL (ms: the new writer's heal bound),
# WFLAGS / TFLAGS (arrays: more writer / target options), FO_NAME, FO_LINK
# (the link, for the figures' title) and the functions node_pfx NODE (sets
# the array PFX: the command prefix that runs a program on NODE -- one that
# execs it, so that $! of "${PFX[@]}" prog & is the program's pid), cut_off
# NODE / reconnect NODE (NODE unreachable from the others, and back).
declare -A FILE
fail() { say "FAILED: $*"; exit 1; }
# (in the foreground only: a function sent to the background is a subshell,
# and $! its pid, not the program's -- those use "${PFX[@]}" directly)
in_node() { node_pfx "$1"; shift; "${PFX[@]}" "$@"; }
at() { echo "${ADDR[$1]}:${PORT[$1]}"; }
hist_n() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
wait_hist() { # file count limit_s: at least count lines
	local i
	for i in $(seq $(( $3 * 20 ))); do [ "$(hist_n "$1")" -ge "$2" ] && return 0; sleep 0.05; done
	return 1
}
jget() { jq -r "$2" <<<"$1"; }

# targets: one per node, pid in $WORK/tNODE.pid; a target that exits before
# it listens (its address or port not yet free again) is started again
start_target() { # node [--create]
	local n=$1 p i a; shift
	for a in 1 2 3 4 5; do
		: >"$WORK/t$n.out"
		node_pfx "$n"
		"${PFX[@]}" "$TARGET" --path "${FILE[$n]}" --size "$SIZE" "$@" --address "${ADDR[$n]}" \
			--port "${PORT[$n]}" --key-file "$WORK/key" --timeout "$TMO" ${TFLAGS[@]+"${TFLAGS[@]}"} \
			>"$WORK/t$n.out" 2>>"$WORK/t$n.err" &
		p=$!
		echo $p >"$WORK/t$n.pid"
		for i in $(seq 500); do
			grep -q "listening on" "$WORK/t$n.out" 2>/dev/null && return 0
			kill -0 $p 2>/dev/null || break
			sleep 0.02
		done
		kill -0 $p 2>/dev/null && break
		wait $p 2>/dev/null
		sleep 0.2
	done
	fail "target of $n does not start: $(tail -2 "$WORK/t$n.err")"
}
stop_target() { # node: SIGTERM, a clean stop within 5 s
	local n=$1 p i
	p=$(cat "$WORK/t$n.pid" 2>/dev/null) || return 0
	kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null
	for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$p" 2>/dev/null && { kill -9 "$p"; fail "target of $n did not stop on SIGTERM"; }
	wait "$p" 2>/dev/null
	rm -f "$WORK/t$n.pid"
}
# the writer on NODE, in the background (pid in $wpid and $WORK/writer.pid):
# rig_writer_bg NODE N: history histN, events evN, output wN.out / wN.err;
# the rest of the arguments are the writer's
rig_writer_bg() {
	local n=$1 k=$2; shift 2
	node_pfx "$n"
	"${PFX[@]}" "$WRITER" --pmrep-log --persist-seq --size "$SIZE" --key-file "$WORK/key" \
		--history "$WORK/hist$k" --events "$WORK/ev$k" --record-size "$REC" --group 2 \
		--rate "$RATE" --timeout "$TMO" --idle-every 0 ${WFLAGS[@]+"${WFLAGS[@]}"} "$@" \
		>"$WORK/w$k.out" 2>"$WORK/w$k.err" &
	wpid=$!
	echo $wpid >"$WORK/writer.pid"
}

FIG=()
rig_failover_policy() { # quorum (0: all)
	local q=$1 name qarg wpid
	[ "$q" -eq 0 ] && { name="all"; qarg=all; } || { name="quorum $q of 2"; qarg=$q; }
	say "=== policy $name"
	rm -f "$WORK"/*.log* "$WORK"/hist* "$WORK"/ev* "$WORK"/t*.err
	FILE=([P]=$WORK/p.log [R1]=$WORK/r1.log [R2]=$WORK/r2.log)
	start_target R1 --create
	start_target R2 --create

	# 1. the writer in P on its pmrep log
	rig_writer_bg P 1 --file "${FILE[P]}" --replica "$(at R1)" --replica "$(at R2)" --quorum "$q"
	wait_hist "$WORK/hist1" 1 "$FO_WAIT" || fail "writer 1 acknowledged nothing: $(tail -3 "$WORK/w1.err")"
	grep -q "attached 2 replicas, policy $([ "$q" -eq 0 ] && echo "all 2" || echo "quorum 1")" "$WORK/w1.out" ||
		fail "writer 1: $(cat "$WORK/w1.out")"
	msleep $(( PHASE * 500 ))
	local frozen_at=0
	if [ "$q" -ne 0 ]; then
		kill -STOP "$(cat "$WORK/tR2.pid")"
		frozen_at=$(hist_n "$WORK/hist1")
		say "R2's target frozen (SIGSTOP) after $frozen_at records acknowledged"
		# a persist waits for R2 until it is failed (the timeout), then R1 alone
		wait_hist "$WORK/hist1" $(( frozen_at + 200 )) "$FO_WAIT" ||
			fail "under quorum the writer did not go on with R1 alone"
	fi
	msleep $(( PHASE * 500 ))
	kill -0 $wpid 2>/dev/null || fail "writer 1 died: $(tail -3 "$WORK/w1.err")"

	# 2. the primary dies mid-stream
	local t_kill; t_kill=$(now)
	kill -9 $wpid; wait $wpid 2>/dev/null; rm -f "$WORK/writer.pid"
	[ "$q" -ne 0 ] && kill -CONT "$(cat "$WORK/tR2.pid")"
	local n1; n1=$(hist_n "$WORK/hist1")
	local last1; last1=$(tail -1 "$WORK/hist1" | cut -d' ' -f1)
	say "writer 1 killed (kill -9) after $n1 records acknowledged (the last: seq $last1)$([ "$q" -ne 0 ] && echo "; R2 thawed")"

	# 3. which replica is the most current (over the network, from R1)
	local cmp rc
	cmp=$(in_node R1 "$PMREP" compare "$(at R1)" "$(at R2)" --key-file "$WORK/key" --json); rc=$?
	local t_cmp; t_cmp=$(now)
	# the persist sequences by text: jq 1.6 reads numbers as doubles, and
	# 19 digits lose their last ones
	local seqs; seqs=($(grep -o '"last_persist_seq":[0-9]*' <<<"$cmp" | cut -d: -f2))
	echo "  compare: $(jget "$cmp" .verdict); persist seqs ${seqs[*]}"
	[ $rc -eq 0 ] || fail "pmrep compare: exit $rc: $cmp"
	[ "$(jget "$cmp" .reason)" = null ] || fail "compare gave no answer: $cmp"
	local ans NEW OTHER
	ans=$(jget "$cmp" .answer)
	case $ans in "$(at R1)") NEW=R1 OTHER=R2 ;; "$(at R2)") NEW=R2 OTHER=R1 ;; *) fail "compare answered '$ans'" ;; esac
	[ "${#seqs[@]}" = 2 ] && [ "${seqs[0]}" != 0 ] && [ "${seqs[1]}" != 0 ] ||
		fail "a replica recorded no persist sequence: $cmp"
	if [ "$q" -ne 0 ]; then
		[ "$NEW" = R1 ] && [ "$(jget "$cmp" '.most_current|length')" = 1 ] ||
			fail "under quorum the most current must be R1 alone: $cmp"
		[ "${seqs[0]}" -gt "${seqs[1]}" ] || fail "R1's persist sequence ${seqs[0]} not above R2's ${seqs[1]}"
	fi
	say "most current: $NEW ($ans)"

	# 5 (first half). the old primary's log saved, then served by P's target
	cp "${FILE[P]}" "$WORK/old-p.log" && cp "${FILE[P]}.pmrep-state" "$WORK/old-p.log.pmrep-state" ||
		fail "cannot save the old primary's log and state file"
	start_target P

	# 4. refusals
	local st0 st1 out
	if [ "$q" -ne 0 ]; then
		stop_target "$OTHER"
		st0=$("$PMREP" status "${FILE[$OTHER]}" --json)
		# the read-only pre-check (a promotion proper would fence the
		# set, then catch the stale copy up from the current one)
		out=$(in_node "$OTHER" "$PMREP" promote "${FILE[$OTHER]}" --replica "$(at "$NEW")" \
			--set-size 2 --quorum 1 --key-file "$WORK/key" --timeout "$TMO" --dry-run --json \
			2>"$WORK/prom-stale.err"); rc=$?
		echo "  promote --dry-run $OTHER (stale): exit $rc: $out"
		[ $rc -eq 1 ] && [ "$(jget "$out" .outcome)" = refused_stale ] &&
			[ "$(jget "$out" .more_current)" = "$(at "$NEW")" ] || fail "promoting the stale $OTHER was not refused_stale"
		st1=$("$PMREP" status "${FILE[$OTHER]}" --json)
		[ "$st0" = "$st1" ] || fail "the refused promotion changed $OTHER's header: $st0 -> $st1"
		start_target "$OTHER"
	fi
	stop_target "$NEW"
	cut_off "$OTHER"
	st0=$("$PMREP" status "${FILE[$NEW]}" --json)
	if [ "$q" -ne 0 ]; then
		out=$(in_node "$NEW" "$PMREP" promote "${FILE[$NEW]}" --replica "$(at "$OTHER")" \
			--set-size 2 --quorum 1 --key-file "$WORK/key" --timeout "$TMO" --json 2>"$WORK/prom-fence.err"); rc=$?
		echo "  promote $NEW, $OTHER unreachable: exit $rc: $out"
		[ $rc -eq 1 ] && [ "$(jget "$out" .outcome)" = refused_fence ] &&
			[ "$(jget "$out" .needed)" = 2 ] && [ "$(jget "$out" .reached)" = 0 ] ||
			fail "promoting $NEW with $OTHER unreachable was not refused_fence"
	else
		out=$(in_node "$NEW" "$PMREP" promote "${FILE[$NEW]}" --replica "$(at "$OTHER")" \
			--set-size 2 --quorum all --key-file "$WORK/key" --timeout "$TMO" --dry-run --json \
			2>"$WORK/prom-fence.err"); rc=$?
		echo "  promote --dry-run $NEW, $OTHER unreachable, policy all: exit $rc: $out"
		[ $rc -eq 0 ] && [ "$(jget "$out" .outcome)" = may_promote ] && [ "$(jget "$out" .needed)" = 1 ] ||
			fail "under \"all\" promoting $NEW with $OTHER unreachable must be allowed"
	fi
	st1=$("$PMREP" status "${FILE[$NEW]}" --json)
	[ "$st0" = "$st1" ] || fail "the refused / dry-run promotion changed $NEW's header: $st0 -> $st1"
	reconnect "$OTHER"

	# 5. promote (the deliberately broken run: the stale one, forced)
	local pflags=()
	if [ "$BREAK" = stale ] && [ "$q" -ne 0 ]; then
		say "DELIBERATELY WRONG: promoting the stale $OTHER with --force-stale"
		local x=$NEW; NEW=$OTHER; OTHER=$x
		start_target "$OTHER"	# stopped for the fence refusal
		stop_target "$NEW"
		pflags=(--force-stale)
	fi
	local t_p0 t_p1 gen
	t_p0=$(now)
	out=$(PMREP_LOG_LEVEL=3 in_node "$NEW" "$PMREP" promote "${FILE[$NEW]}" --replica "$(at "$OTHER")" \
		--replica "$(at P)" --set-size 2 --quorum "$qarg" --key-file "$WORK/key" \
		"${pflags[@]}" --json 2>"$WORK/promote.err"); rc=$?
	t_p1=$(now)
	echo "  promote $NEW: exit $rc: $out"
	gen=$(jget "$out" .generation)
	[ $rc -eq 0 ] && [ "$(jget "$out" .outcome)" = promoted ] && [ "$gen" = 2 ] &&
		[ "$(jget "$out" '.fenced >= .needed - 1')" = true ] || fail "the promotion of $NEW: $(cat "$WORK/promote.err")"

	# 6. the new writer on the promoted file in place
	PMREP_LOG_LEVEL=3 rig_writer_bg "$NEW" 2 --file "${FILE[$NEW]}" \
		--replica "$(at "$OTHER")" --replica "$(at P)" --quorum "$q" --heal-timeout "$FO_HEAL"
	wait_hist "$WORK/hist2" 1 $(( 2 * FO_WAIT )) || fail "writer 2 acknowledged nothing: $(tail -3 "$WORK/w2.err")"
	msleep $(( PHASE * 1000 ))
	kill -TERM $wpid; wait $wpid; rc=$?; rm -f "$WORK/writer.pid"
	sed 's/^/  /' "$WORK/w2.out"
	[ $rc -eq 0 ] && grep -q "heal: all 2 replicas in sync" "$WORK/w2.out" || fail "writer 2: exit $rc"
	grep -q "generation 2 from the promoted log" "$WORK/w2.out" || fail "writer 2 did not take generation 2"
	local held
	held=$(sed -n 's/^rig-writer: the log holds \([0-9]*\) records.*/\1/p' "$WORK/w2.out")
	[ -n "$held" ] || fail "writer 2 did not resume on the log"
	# the promoted log holds every acknowledged record (and perhaps a few
	# the dead writer persisted without logging them); not so a stale one
	[ -n "$BREAK" ] || [ "$held" -ge "$last1" ] ||
		fail "the promoted log holds $held records, the last acknowledged was $last1"
	local n2; n2=$(hist_n "$WORK/hist2")

	# 7. the old primary, at generation 1 with its state file and its
	# cfg (both replicas -- the new primary's target is gone -- and its
	# policy), is fenced: nothing written; under the quorum it waits for
	# both and $OTHER refuses it (a newer generation; refusals are retried
	# for 1.5 x the timeout). Under "all" it gives up at the first that
	# cannot be had. With $OTHER alone in its cfg its own log refuses it
	# first: it records a set of two (docs/PROTOCOL.md "Membership")
	out=$(in_node P "$WRITER" --pmrep-log --file "$WORK/old-p.log" --size "$SIZE" \
		--replica "$(at R1)" --replica "$(at R2)" \
		--key-file "$WORK/key" --quorum "$q" --history "$WORK/hist-old" --events "$WORK/ev-old" \
		--timeout "$TMO" ${WFLAGS[@]+"${WFLAGS[@]}"} --count 10 --heal-timeout $(( TMO * 3 / 2 )) 2>&1); rc=$?
	echo "  the old primary: exit $rc: $(grep -m1 -i "generation" <<<"$out")"
	[ $rc -ne 0 ] && [ "$(hist_n "$WORK/hist-old")" = 0 ] ||
		fail "the old primary was not refused: $out"
	[ "$q" = 0 ] || grep -q "newer generation" <<<"$out" ||
		fail "the old primary was not refused by $OTHER: $out"
	out=$(in_node P "$WRITER" --pmrep-log --file "$WORK/old-p.log" --size "$SIZE" --replica "$(at "$OTHER")" \
		--key-file "$WORK/key" --quorum 0 --history "$WORK/hist-old" --events "$WORK/ev-old" \
		--timeout "$TMO" ${WFLAGS[@]+"${WFLAGS[@]}"} --count 10 --heal-timeout $(( TMO * 3 / 2 )) 2>&1); rc=$?
	[ $rc -ne 0 ] && grep -q "records a set of 2 replicas" <<<"$out" && [ "$(hist_n "$WORK/hist-old")" = 0 ] ||
		fail "the old primary with one replica was not refused by its log: $out"

	stop_target "$OTHER"
	stop_target P

	# 8. the check: both histories on the new primary's log and every replica
	cat "$WORK/hist1" "$WORK/hist2" >"$WORK/hist-all"
	out=$("$CHECK" history --history "$WORK/hist-all" --source "${FILE[$NEW]}" \
		--replica "${FILE[$OTHER]}" --replica "${FILE[P]}" --quorum 0); rc=$?
	echo "$out" | sed 's/^/  /'
	if [ "$BREAK" = stale ] && [ "$q" -ne 0 ]; then
		local v; v=$(sed -n 's/.*; violations \([0-9]*\);.*/\1/p' <<<"$out")
		if [ $rc -eq 1 ] && [ "${v:-0}" -gt 0 ]; then
			say "BROKEN RUN: rig-check reported $v acknowledged records lost (exit 1), as it must"
			BROKEN_CAUGHT=1
		else
			fail "BROKEN RUN: rig-check did not report the records lost by the stale promotion"
		fi
	else
		[ $rc -eq 0 ] && grep -q "; violations 0;" <<<"$out" || fail "rig-check: exit $rc"
		local r
		for r in "$OTHER" P; do
			out=$("$PMREP" verify "${FILE[$NEW]}" "${FILE[$r]}") || fail "pmrep verify $NEW $r: $out"
			grep -q IDENTICAL <<<"$out" || fail "$r is not IDENTICAL to $NEW: $out"
			echo "  pmrep verify $NEW $r: IDENTICAL"
		done
		cmp=$("$PMREP" compare "${FILE[P]}" "${FILE[R1]}" "${FILE[R2]}" --json) || fail "final compare: $cmp"
		[ "$(jget "$cmp" '.most_current|length')" = 3 ] &&
			[ "$(jget "$cmp" '[.replicas[].generation]|unique|join(" ")')" = 2 ] ||
			fail "after the heal the three are not equally current at generation 2: $cmp"
		echo "  pmrep compare of the three files: $(jget "$cmp" .verdict | sed "s|$WORK/||g")"
	fi
	# what the rejoin copied: the promotion's fence-only mirror starts the
	# resyncs, the new writer's mirror takes them over with what is left
	local resync f
	resync=$(for f in promote w2; do
		grep -o "replica [0-9] ([0-9.:]*)\( attached: method [A-Za-z]*, resync [a-z]* of [0-9]* bytes\| in sync: [0-9]* bytes copied\)" \
			"$WORK/$f.err" | sed "s/^/$([ $f = w2 ] && echo "new writer" || echo promote): /"
	done | sed "s/($(at P))/($(at P) = P)/; s/($(at "$OTHER"))/($(at "$OTHER") = $OTHER)/")
	echo "$resync" | sed 's/^/  rejoin: /'
	grep -q "= P) attached: .*resync" <<<"$resync" || { say "no resync line of P in the logs"; ok=0; }
	local copied_p copied_o
	copied_p=$(awk '/= P\) in sync: / { n += $(NF - 2) } END { print n + 0 }' <<<"$resync")
	copied_o=$(awk -v o="= $OTHER) in sync: " 'index($0, o) { n += $(NF - 2) } END { print n + 0 }' <<<"$resync")

	# 9. the figures
	local t_first t_sync
	t_first=$(head -1 "$WORK/hist2" | cut -d' ' -f3)
	t_sync=$(sed -n 's/^sync \([0-9.]*\)$/\1/p' "$WORK/ev2" | head -1)
	[ -n "$t_sync" ] || fail "writer 2 never had every replica in sync"
	local fig
	fig=$(awk -v k="$t_kill" -v c="$t_cmp" -v p0="$t_p0" -v p1="$t_p1" -v f="$t_first" -v s="$t_sync" \
		-v cp="$copied_p" -v co="$copied_o" -v other="$OTHER" \
		'BEGIN { printf "detection %.0f ms, promote %.0f ms, first acknowledged persist %.0f ms after the promote, all in sync %.0f ms after the promote, the rejoin copied %d bytes to P and %d to %s", c - k, p1 - p0, f - p1, s - p1, cp, co, other }')
	say "figures ($name): $fig; records acknowledged: $n1 before the failure, $n2 after"
	FIG+=("$name: $fig")
}

# rig_failover_run: every policy of $POLICIES, the figures, the verdict
rig_failover_run() {
	local q f
	BROKEN_CAUGHT=0
	for q in $POLICIES; do rig_failover_policy "$q"; done
	say "=== $FO_NAME figures (CLOCK_MONOTONIC, $FO_LINK)"
	for f in "${FIG[@]}"; do echo "  $f"; done
	if [ -n "$BREAK" ]; then
		[ "$BROKEN_CAUGHT" = 1 ] || fail "the broken run (RIG_FAILOVER_BREAK=$BREAK) was not under quorum"
		say "$FO_NAME: the checker caught the deliberately broken run"
	fi
	[ "$ok" -eq 1 ] || fail "see above"
	say "$FO_NAME: PASSED"
	exit 0
}
