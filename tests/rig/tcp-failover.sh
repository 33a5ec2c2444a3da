#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tcp-failover.sh -- the failover of docs/FAILOVER.md in the multi-node rig,
# on the tcp provider between network namespaces, with the failover-time
# figures. Three nodes: P (the primary), R1, R2 (one pmrep-target each),
# veth pairs P-R1 10.232.0.1/.2, P-R2 10.232.0.5/.6 and R1-R2 10.232.0.9/.10
# (/30; host routes so that R1 reaches R2's target at .6 and R2 reaches R1's
# at .2 and P's at .1 over the R1-R2 and P-R2 links). For the policy "all"
# and then quorum 1 of 2:
#   1. R1, R2 serve r1.log, r2.log; rig-writer in P mirrors its pmrep log
#      p.log (--pmrep-log --persist-seq), history of acknowledged records.
#      Under quorum, R2's target is frozen (SIGSTOP) midway: R1 is then
#      strictly more current.
#   2. kill -9 of the writer mid-stream; R2 thawed.
#   3. pmrep compare R1 R2 --json (over the network, from R1's node): it
#      names the most current -- under quorum R1, alone.
#   4. refusals, exit 1 and the JSON outcome asserted: under quorum,
#      promoting R2 (stale) is refused_stale; promoting R1 with R2
#      unreachable (an nft drop in R2) and --set-size 2 --quorum 1 is
#      refused_fence, R1's header byte-for-byte unchanged (pmrep status
#      --json before / after). Under "all" the same promotion is allowed
#      (--dry-run: exit 0, may_promote).
#   5. P's log and its .pmrep-state are saved (the old primary, for step 7),
#      then a pmrep-target in P serves p.log, so that P rejoins as a
#      replica; the most current node's target is stopped (SIGTERM) and
#      `pmrep promote` runs in its namespace with --replica the other one
#      and P: exit 0, outcome promoted, generation 2.
#   6. the new writer runs in the promoted namespace on its file in place
#      (--pmrep-log: the generation from the log's header, resuming after
#      the records the log holds, records of epoch 1), a second history;
#      SIGTERM: it heals (every replica in sync) and exits 0.
#   7. the old primary (P, the saved log at generation 1 with its state
#      file) tries to mirror to the other replica: refused, "newer
#      generation".
#   8. rig-check history of both histories against the new primary's log
#      and both replicas (every record right on every one); pmrep verify
#      IDENTICAL for each replica vs the new primary's log; pmrep compare of
#      the three files: all equally current. The bytes the rejoin of P
#      copied (the mirror's "resync ... of N bytes" is what was out of sync
#      at the attach; "in sync: N bytes copied" what the digests left).
#   9. figures (CLOCK_MONOTONIC ms, rig-clock): detection (writer killed ->
#      compare done), promote (the command), first acknowledged persist of
#      the new writer after the promote, all replicas in sync after the
#      promote.
#
# usage: tcp-failover.sh BUILD_DIR
# environment:
#   RIG_POLICIES="0 1"      quorums to run (0 = "all"; default both)
#   RIG_FAILOVER_SECONDS=S  seconds of each writer phase (default 3)
#   RIG_FAILOVER_BREAK=stale  the deliberately wrong run: under quorum the
#                           stale R2 is promoted with --force-stale; the run
#                           passes only if rig-check reports the records lost
#   RIG_KEEP=1              keep the work directory (kept on a failure)
# exit: 0 passed, 1 failed, 77 cannot run here (not root, no ip netns, no
# nft, no jq): SKIPPED.
set -u
BUILD=${1:?usage: tcp-failover.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
. "$(dirname "$0")/rig-lib.sh"

skip() { echo "tcp-failover: SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null && ip netns list >/dev/null 2>&1 || skip "no 'ip netns' (iproute2)"
command -v nft >/dev/null || skip "no nft (nftables)"
command -v jq >/dev/null || skip "no jq (the JSON of pmrep compare / promote)"
rig_binaries tcp-failover

POLICIES=${RIG_POLICIES:-0 1}
PHASE=${RIG_FAILOVER_SECONDS:-3}
BREAK=${RIG_FAILOVER_BREAK:-}
case $BREAK in ""|stale) ;; *) echo "tcp-failover: RIG_FAILOVER_BREAK=stale or unset"; exit 1 ;; esac
ID=$$
declare -A NSN=([P]=rfP$ID [R1]=rfA$ID [R2]=rfB$ID)
declare -A ADDR=([P]=10.232.0.1 [R1]=10.232.0.2 [R2]=10.232.0.6)
declare -A FILE
PORT=7205
REC=256
RATE=500
SIZE=$(( 16 * 1048576 ))	# data bytes: 65520 slots of 256, no wrap
WALL=${RIG_WALL:-$(( $(wc -w <<<"$POLICIES") * (8 * PHASE + 60) ))}
WORK=$(mktemp -d /dev/shm/rig-failover.XXXXXX)
ok=1
pids_to_kill=()
rig_exit_traps tcp-failover "${NSN[@]}"

fail() { say "FAILED: $*"; exit 1; }
# (in the foreground only: a function sent to the background is a subshell,
# and $! its pid, not the program's -- those call ip netns exec directly)
in_ns() { local n=$1; shift; ip netns exec "${NSN[$n]}" "$@"; }

say "tcp-failover: policies '$POLICIES' (0 = all), writer phases $PHASE s, wall limit $WALL s, work dir $WORK${BREAK:+, DELIBERATELY BROKEN: $BREAK}"

# ---- namespaces and links: P-R1, P-R2, R1-R2
for n in P R1 R2; do ip netns add "${NSN[$n]}" || exit 1; ip -n "${NSN[$n]}" link set lo up; done
link() { # A B ADDR_A ADDR_B name
	local a=$1 b=$2
	ip link add "f$5a$ID" netns "${NSN[$a]}" type veth peer name "f$5b$ID" netns "${NSN[$b]}" || exit 1
	ip -n "${NSN[$a]}" addr add "$3/30" dev "f$5a$ID" && ip -n "${NSN[$b]}" addr add "$4/30" dev "f$5b$ID" || exit 1
	ip -n "${NSN[$a]}" link set "f$5a$ID" up && ip -n "${NSN[$b]}" link set "f$5b$ID" up || exit 1
}
link P R1 10.232.0.1 10.232.0.2 1
link P R2 10.232.0.5 10.232.0.6 2
link R1 R2 10.232.0.9 10.232.0.10 3
ip -n "${NSN[R1]}" route add 10.232.0.6/32 via 10.232.0.10 || exit 1
ip -n "${NSN[R2]}" route add 10.232.0.2/32 via 10.232.0.9 || exit 1
ip -n "${NSN[R2]}" route add 10.232.0.1/32 via 10.232.0.5 || exit 1
for _ in $(seq 50); do
	[ "$(ip -all netns exec ip link show 2>/dev/null | grep -c "f[123][ab]$ID.*LOWER_UP")" -ge 6 ] && break
	sleep 0.1
done
say "namespaces ${NSN[P]} ${NSN[R1]} ${NSN[R2]} and their three veth links up"
head -c 32 /dev/urandom | base64 >"$WORK/key"
chmod 600 "$WORK/key"

# ---- targets: one per node, pid in $WORK/tNODE.pid
start_target() { # node [--create]
	local n=$1; shift
	: >"$WORK/t$n.out"
	ip netns exec "${NSN[$n]}" "$TARGET" --path "${FILE[$n]}" --size "$SIZE" "$@" --address "${ADDR[$n]}" \
		--port $PORT --key-file "$WORK/key" --timeout 1000 \
		>"$WORK/t$n.out" 2>>"$WORK/t$n.err" &
	local p=$! i
	echo $p >"$WORK/t$n.pid"
	for i in $(seq 500); do
		grep -q "listening on" "$WORK/t$n.out" 2>/dev/null && return 0
		kill -0 $p 2>/dev/null || break
		sleep 0.01
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
at() { echo "${ADDR[$1]}:$PORT"; }
drop_on() { in_ns "$1" nft -f - <<-'NFT'
	table inet rigdrop {
		chain in { type filter hook input priority 0; policy drop; }
		chain out { type filter hook output priority 0; policy drop; }
	}
	NFT
}
undrop() { in_ns "$1" nft delete table inet rigdrop; }
hist_n() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
wait_hist() { # file count limit_s: at least count lines
	local i
	for i in $(seq $(( $3 * 20 ))); do [ "$(hist_n "$1")" -ge "$2" ] && return 0; sleep 0.05; done
	return 1
}
jget() { jq -r "$2" <<<"$1"; }

FIG=()
run_policy() { # quorum (0: all)
	local q=$1 name qarg
	[ "$q" -eq 0 ] && { name="all"; qarg=all; } || { name="quorum $q of 2"; qarg=$q; }
	say "=== policy $name"
	rm -f "$WORK"/*.log* "$WORK"/hist* "$WORK"/ev* "$WORK"/t*.err
	FILE=([P]=$WORK/p.log [R1]=$WORK/r1.log [R2]=$WORK/r2.log)
	start_target R1 --create
	start_target R2 --create

	# 1. the writer in P on its pmrep log
	ip netns exec "${NSN[P]}" "$WRITER" --pmrep-log --persist-seq --file "${FILE[P]}" --size $SIZE \
		--replica "$(at R1)" --replica "$(at R2)" --key-file "$WORK/key" --quorum "$q" \
		--history "$WORK/hist1" --events "$WORK/ev1" --record-size $REC --group 2 \
		--rate $RATE --timeout 1000 --idle-every 0 >"$WORK/w1.out" 2>"$WORK/w1.err" &
	local wpid=$!
	echo $wpid >"$WORK/writer.pid"
	wait_hist "$WORK/hist1" 1 10 || fail "writer 1 acknowledged nothing: $(tail -3 "$WORK/w1.err")"
	grep -q "attached 2 replicas, policy $([ "$q" -eq 0 ] && echo "all 2" || echo "quorum 1")" "$WORK/w1.out" ||
		fail "writer 1: $(cat "$WORK/w1.out")"
	msleep $(( PHASE * 500 ))
	local frozen_at=0
	if [ "$q" -ne 0 ]; then
		kill -STOP "$(cat "$WORK/tR2.pid")"
		frozen_at=$(hist_n "$WORK/hist1")
		say "R2's target frozen (SIGSTOP) after $frozen_at records acknowledged"
		# a persist waits for R2 until it is failed (timeout 1000 ms), then R1 alone
		wait_hist "$WORK/hist1" $(( frozen_at + 200 )) 10 ||
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
	cmp=$(in_ns R1 "$PMREP" compare "$(at R1)" "$(at R2)" --key-file "$WORK/key" --json); rc=$?
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
		out=$(in_ns "$OTHER" "$PMREP" promote "${FILE[$OTHER]}" --replica "$(at "$NEW")" \
			--set-size 2 --quorum 1 --key-file "$WORK/key" --timeout 1000 --json 2>"$WORK/prom-stale.err"); rc=$?
		echo "  promote $OTHER (stale): exit $rc: $out"
		[ $rc -eq 1 ] && [ "$(jget "$out" .outcome)" = refused_stale ] &&
			[ "$(jget "$out" .more_current)" = "$(at "$NEW")" ] || fail "promoting the stale $OTHER was not refused_stale"
		st1=$("$PMREP" status "${FILE[$OTHER]}" --json)
		[ "$st0" = "$st1" ] || fail "the refused promotion changed $OTHER's header: $st0 -> $st1"
		start_target "$OTHER"
	fi
	stop_target "$NEW"
	drop_on "$OTHER"
	st0=$("$PMREP" status "${FILE[$NEW]}" --json)
	if [ "$q" -ne 0 ]; then
		out=$(in_ns "$NEW" "$PMREP" promote "${FILE[$NEW]}" --replica "$(at "$OTHER")" \
			--set-size 2 --quorum 1 --key-file "$WORK/key" --timeout 1000 --json 2>"$WORK/prom-fence.err"); rc=$?
		echo "  promote $NEW, $OTHER unreachable: exit $rc: $out"
		[ $rc -eq 1 ] && [ "$(jget "$out" .outcome)" = refused_fence ] &&
			[ "$(jget "$out" .needed)" = 2 ] && [ "$(jget "$out" .reached)" = 0 ] ||
			fail "promoting $NEW with $OTHER unreachable was not refused_fence"
	else
		out=$(in_ns "$NEW" "$PMREP" promote "${FILE[$NEW]}" --replica "$(at "$OTHER")" \
			--set-size 2 --quorum all --key-file "$WORK/key" --timeout 1000 --dry-run --json \
			2>"$WORK/prom-fence.err"); rc=$?
		echo "  promote --dry-run $NEW, $OTHER unreachable, policy all: exit $rc: $out"
		[ $rc -eq 0 ] && [ "$(jget "$out" .outcome)" = may_promote ] && [ "$(jget "$out" .needed)" = 1 ] ||
			fail "under \"all\" promoting $NEW with $OTHER unreachable must be allowed"
	fi
	st1=$("$PMREP" status "${FILE[$NEW]}" --json)
	[ "$st0" = "$st1" ] || fail "the refused / dry-run promotion changed $NEW's header: $st0 -> $st1"
	undrop "$OTHER"

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
	out=$(PMREP_LOG_LEVEL=3 in_ns "$NEW" "$PMREP" promote "${FILE[$NEW]}" --replica "$(at "$OTHER")" \
		--replica "$(at P)" --set-size 2 --quorum "$qarg" --key-file "$WORK/key" \
		"${pflags[@]}" --json 2>"$WORK/promote.err"); rc=$?
	t_p1=$(now)
	echo "  promote $NEW: exit $rc: $out"
	gen=$(jget "$out" .generation)
	[ $rc -eq 0 ] && [ "$(jget "$out" .outcome)" = promoted ] && [ "$gen" = 2 ] &&
		[ "$(jget "$out" '.fenced >= .needed - 1')" = true ] || fail "the promotion of $NEW: $(cat "$WORK/promote.err")"

	# 6. the new writer on the promoted file in place
	PMREP_LOG_LEVEL=3 ip netns exec "${NSN[$NEW]}" "$WRITER" --pmrep-log --persist-seq --file "${FILE[$NEW]}" --size $SIZE \
		--replica "$(at "$OTHER")" --replica "$(at P)" --key-file "$WORK/key" --quorum "$q" \
		--history "$WORK/hist2" --events "$WORK/ev2" --record-size $REC --group 2 \
		--rate $RATE --timeout 1000 --idle-every 0 --heal-timeout 30000 \
		>"$WORK/w2.out" 2>"$WORK/w2.err" &
	wpid=$!
	echo $wpid >"$WORK/writer.pid"
	wait_hist "$WORK/hist2" 1 20 || fail "writer 2 acknowledged nothing: $(tail -3 "$WORK/w2.err")"
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

	# 7. the old primary, at generation 1 with its state file, is fenced
	out=$(in_ns P "$WRITER" --pmrep-log --file "$WORK/old-p.log" --size $SIZE --replica "$(at "$OTHER")" \
		--key-file "$WORK/key" --quorum 0 --history "$WORK/hist-old" --events "$WORK/ev-old" \
		--count 10 --heal-timeout 1500 2>&1); rc=$?	# refusals are retried for 1.5 s
	echo "  the old primary: exit $rc: $(grep -m1 -i "generation" <<<"$out")"
	[ $rc -ne 0 ] && grep -q "newer generation" <<<"$out" && [ "$(hist_n "$WORK/hist-old")" = 0 ] ||
		fail "the old primary was not refused by $OTHER: $out"

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

	# 9. the figures
	local t_first t_sync
	t_first=$(head -1 "$WORK/hist2" | cut -d' ' -f3)
	t_sync=$(sed -n 's/^sync \([0-9.]*\)$/\1/p' "$WORK/ev2" | head -1)
	[ -n "$t_sync" ] || fail "writer 2 never had every replica in sync"
	local fig
	fig=$(awk -v k="$t_kill" -v c="$t_cmp" -v p0="$t_p0" -v p1="$t_p1" -v f="$t_first" -v s="$t_sync" \
		'BEGIN { printf "detection %.0f ms, promote %.0f ms, first acknowledged persist %.0f ms after the promote, all in sync %.0f ms after the promote", c - k, p1 - p0, f - p1, s - p1 }')
	say "figures ($name): $fig; records acknowledged: $n1 before the failure, $n2 after"
	FIG+=("$name: $fig")
}

BROKEN_CAUGHT=0
for q in $POLICIES; do run_policy "$q"; done
say "=== tcp-failover figures (CLOCK_MONOTONIC, tcp between namespaces)"
for f in "${FIG[@]}"; do echo "  $f"; done
if [ -n "$BREAK" ]; then
	[ "$BROKEN_CAUGHT" = 1 ] || fail "the broken run (RIG_FAILOVER_BREAK=$BREAK) was not under quorum"
	say "tcp-failover: the checker caught the deliberately broken run"
fi
[ "$ok" -eq 1 ] || fail "see above"
say "tcp-failover: PASSED"
exit 0
