#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# verbs-failover.sh -- the failover of docs/FAILOVER.md on the verbs
# provider, inside the soft-RoCE guest (tests/vm/run-in-vm.sh, the 6.12
# kernel: VM_KERNEL=backports), with the failover-time figures: the
# procedure of tcp-failover.sh (rig-lib.sh's rig_failover_run, steps 1-9 of
# tcp-failover.sh's header), for the policy "all" and then quorum 1 of 2.
#
# The layout is verbs-nemesis.sh's (rig-lib.sh, rig_verbs_link_up): rxe
# devices cannot move into network namespaces in the guest, so one veth
# pair in the guest's root namespace, vethA 10.77.0.1 (rxeA) / vethB
# 10.77.0.2 (rxeB), policy routing so that the traffic between the two
# addresses crosses the veth. The nodes are processes and ports:
#   P  the primary: its writer, later its target on 10.77.0.1:7303 (rxeA)
#   R1 the target of r1.log on 10.77.0.2:7301 (rxeB)
#   R2 the target of r2.log on 10.77.0.2:7302 (rxeB)
# A connection to 10.77.0.2 leaves through rxeA, one to 10.77.0.1 through
# rxeB: every connection of the rig crosses the veth, the new writer's on
# R1's (or R2's) file to P and to the other replica included. Nothing is
# sent to any other address. Persists by GPSPM (writers --gpspm, targets
# --staging): rxe's responder runs in the kernel, so a stopped target
# (R2's SIGSTOP under quorum) does not stop an APM or native persist.
#
# What tcp-failover.sh checks and this layout cannot, or only in part:
#   - a node cut off alone: tcp-failover.sh makes R2 unreachable (step 4,
#     the refused_fence of promoting R1) with an nft table dropping
#     everything in R2's namespace, P and R1 still joined. Here R1 and R2
#     share one address and one device, and RoCE's traffic is UDP port 4791
#     for every QP, so nothing filters one target's traffic: the rig
#     partitions the whole link (netem loss 100 % on both veth ends, attached
#     once, changed only -- verbs-nemesis.sh's reason). The step contacts R2
#     alone, so its assertions are the same; a partition that separates
#     only one pair of nodes is not tried.
#   - separate nodes: the three "nodes" share one kernel and two rxe
#     devices (R1 and R2 one device); `pmrep compare` runs "from R1's node"
#     only in name. The fencing of the old primary is the replicas' (their
#     generation), as in tcp.
#   - TLS: none on verbs (the key still authenticates).
#
# usage (host, from the build directory):
#   VM_KERNEL=backports VM_PMEM_SIZE=0 VM_TIMEOUT=300 ../tests/vm/run-in-vm.sh ../tests/rig/verbs-failover.sh .
# environment:
#   RIG_POLICIES="0 1"      quorums to run (0 = "all"; default both)
#   RIG_FAILOVER_SECONDS=S  seconds of each writer phase (default 3)
#   RIG_FAILOVER_BREAK=stale  the deliberately wrong run (tcp-failover.sh's)
#   RIG_TIMEOUT_MS=MS       persist / connect / target timeout (default 2000:
#                           an emulated guest)
#   RIG_LOG_DIR=DIR         where the logs are copied at the end (default
#                           BUILD_DIR/rig-verbs-failover-logs: the guest's
#                           /dev/shm dies with it)
#   RIG_KEEP=1, RIG_WALL    as tcp-failover.sh
# exit: 0 passed, 1 failed, 77 cannot run (not in the guest, not root, no
# rdma / tc / netem / jq): SKIPPED.
set -u
BUILD=${1:?usage: verbs-failover.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
. "$(dirname "$0")/rig-lib.sh"

rig_verbs_require verbs-failover
command -v jq >/dev/null || { echo "verbs-failover: SKIPPED: no jq (the JSON of pmrep compare / promote)"; exit 77; }
rig_binaries verbs-failover

POLICIES=${RIG_POLICIES:-0 1}
PHASE=${RIG_FAILOVER_SECONDS:-3}
BREAK=${RIG_FAILOVER_BREAK:-}
case $BREAK in ""|stale) ;; *) echo "verbs-failover: RIG_FAILOVER_BREAK=stale or unset"; exit 1 ;; esac
ID=$$
ADDR_W=10.77.0.1 ADDR_T=10.77.0.2
declare -A ADDR=([P]=$ADDR_W [R1]=$ADDR_T [R2]=$ADDR_T)
declare -A PORT=([P]=7303 [R1]=7301 [R2]=7302)
REC=256
RATE=200
SIZE=$(( 16 * 1048576 ))	# data bytes, as tcp-failover.sh's: 65520 slots of 256, no wrap
TMO=${RIG_TIMEOUT_MS:-2000}
FO_WAIT=30
FO_HEAL=60000
WFLAGS=(--gpspm --reconnect-timeout $(( 2 * TMO )))
TFLAGS=(--staging)
FO_NAME=verbs-failover FO_LINK="verbs, rxeA - veth - rxeB in the soft-RoCE guest"
WALL=${RIG_WALL:-$(( $(wc -w <<<"$POLICIES") * (8 * PHASE + 120) ))}
WORK=$(mktemp -d /dev/shm/rig-verbs-failover.XXXXXX)
LOGDIR=${RIG_LOG_DIR:-$BUILD/rig-verbs-failover-logs}
export PMREP_PROVIDER=verbs
ok=1
pids_to_kill=()

# on every exit (rig_cleanup, after the processes are killed): the logs
# first, the guest's /dev/shm dies with it; then the link
rig_cleanup_hook() {
	rm -rf "$LOGDIR"; mkdir -p "$LOGDIR"
	cp "$WORK"/*.out "$WORK"/*.err "$WORK"/hist* "$WORK"/ev* "$LOGDIR"/ 2>/dev/null
	{ tc -s qdisc show dev vethA; rdma link show; rdma -d res show qp 2>&1 | grep GSI
	  for c in /sys/class/infiniband/rxe[AB]/ports/1/hw_counters/send_err; do echo "$c $(cat "$c")"; done
	} >"$LOGDIR/link.txt" 2>&1
	say "logs copied to $LOGDIR"
	rig_verbs_link_down
}
rig_exit_traps verbs-failover

# the procedure (rig-lib.sh) runs every program in the guest's root
# namespace; a node is cut off by a partition of the whole link
node_pfx() { PFX=(); }
cut_off() { netem loss 100%; }
reconnect() { netem off; }

say "verbs-failover: policies '$POLICIES' (0 = all), writer phases $PHASE s, timeout $TMO ms, kernel $(uname -r), wall limit $WALL s, work dir $WORK${BREAK:+, DELIBERATELY BROKEN: $BREAK}"
rig_verbs_link_up verbs-failover
say "rxeA on vethA ($ADDR_W: P), rxeB on vethB ($ADDR_T: R1, R2), policy routed"
head -c 32 /dev/urandom | base64 >"$WORK/key"
chmod 600 "$WORK/key"

rig_failover_run
