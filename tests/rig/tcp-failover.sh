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
#      promote, the bytes the resyncs after the promote copied to P and to
#      the surviving replica.
# The procedure, steps 1-9, is rig-lib.sh's rig_failover_run, shared with
# verbs-failover.sh (the soft-RoCE guest); this script lays out the
# namespaces and says how a program runs on a node (ip netns exec) and how
# a node is cut off (an nft table dropping everything in its namespace).
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
declare -A PORT=([P]=7205 [R1]=7205 [R2]=7205)
REC=256
RATE=500
SIZE=$(( 16 * 1048576 ))	# data bytes: 65520 slots of 256, no wrap
TMO=1000
FO_WAIT=10
FO_HEAL=30000
WFLAGS=() TFLAGS=()
FO_NAME=tcp-failover FO_LINK="tcp between namespaces"
WALL=${RIG_WALL:-$(( $(wc -w <<<"$POLICIES") * (8 * PHASE + 60) ))}
WORK=$(mktemp -d /dev/shm/rig-failover.XXXXXX)
ok=1
pids_to_kill=()
rig_exit_traps tcp-failover "${NSN[@]}"

# the procedure (rig-lib.sh, rig_failover_run) runs a program on a node
# through node_pfx, and cuts a node off with an nft table in its namespace
node_pfx() { PFX=(ip netns exec "${NSN[$1]}"); }
cut_off() { in_node "$1" nft -f - <<-'NFT'
	table inet rigdrop {
		chain in { type filter hook input priority 0; policy drop; }
		chain out { type filter hook output priority 0; policy drop; }
	}
	NFT
}
reconnect() { in_node "$1" nft delete table inet rigdrop; }

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

rig_failover_run
