#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# repro-reattach.sh -- README "Known issues" 1 on loopback, without root or
# a cluster: a writer on a PROMOTED log (quorum 1 of 2, persist sequences
# on) loses a replica for 3 s (SIGSTOP of its target: TIMEOUT) and must
# take it back once it answers again. On a fresh log the same passes; on a
# promoted one (December 5, 2026) the mirror refused the replica at every
# attempt: "not attached: it may hold persists this mirror's log lacks
# (position generation 2 writer W ...; run generation 2 writer W from epoch
# 2, tracked)", W being the refusing mirror's own writer and run.
# usage: repro-reattach.sh BUILD_DIR
# exit: 0 the replica came back in sync, 1 it did not (the refusal lines
# printed), 2 setup failure. ctest func.tcp.reattach_promoted since the fix
# (mirror_log_attach_check: a replica holding steps of the writer's own run).
set -u
B=$(cd "${1:?usage: repro-reattach.sh BUILD_DIR}" && pwd)
D=$(mktemp -d /tmp/pmrep-reattach.XXXXXX)
SZ=1048576
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
die() { echo "repro-reattach: $*"; exit 2; }
head -c 32 /dev/urandom | base64 >"$D/key"
chmod 600 "$D/key"

declare -A TPID
serve() { # FILE PORT [--create]
	"$B/tools/pmrep-target" --path "$D/$1" --size $SZ ${3:-} --address 127.0.0.1 --port "$2" \
		--key-file "$D/key" --timeout 1000 >"$D/$1.out" 2>&1 &
	TPID[$1]=$!; pids+=($!)
	local i
	for i in $(seq 50); do grep -qs "listening on" "$D/$1.out" && return 0; sleep 0.1; done
	die "the target of $1 does not start: $(tail -1 "$D/$1.out")"
}
unserve() { kill -TERM "${TPID[$1]}"; wait "${TPID[$1]}" 2>/dev/null; }
ports() { # the free ports of this run: the first of 3 consecutive ones
	local p
	for p in $(seq 7810 10 7990); do
		! ss -ltn 2>/dev/null | grep -Eq ":($p|$((p + 1))|$((p + 2))) " && { echo "$p"; return; }
	done
	die "no free ports"
}
P0=$(ports) P1=$((P0 + 1)) P2=$((P0 + 2))
wcmd() { # LOG RUN REPLICA_PORT REPLICA_PORT [more]: the writer's command in WCMD
	local log=$1 run=$2 a=$3 b=$4; shift 4
	WCMD=("$B/tests/rig/rig-writer" --pmrep-log --persist-seq --file "$D/$log" --size $SZ
		--replica "127.0.0.1:$a" --replica "127.0.0.1:$b" --quorum 1 --key-file "$D/key"
		--history "$D/h.$run" --events "$D/e.$run" --rate 200 --idle-every 0
		--heal-timeout 5000 "$@")
}

# the set: p.log's writer with replicas r1, r2, stopped cleanly
serve r1 "$P1" --create
serve r2 "$P2" --create
wcmd p.log 0 "$P1" "$P2" --count 300
"${WCMD[@]}" >"$D/w.0" 2>&1 || die "the first writer: $(tail -2 "$D/w.0")"
unserve r1; unserve r2
# r1 promoted in place, p.log and r2 its replicas
serve p.log "$P0"
serve r2 "$P2"
out=$("$B/tools/pmrep" promote "$D/r1" --replica "127.0.0.1:$P2" --replica "127.0.0.1:$P0" \
	--set-size 2 --quorum 1 --key-file "$D/key" --json) || die "promote: $out"
echo "promoted: $out"
# the new writer on r1; r2 frozen 3 s in the middle
wcmd r1 1 "$P2" "$P0"
"${WCMD[@]}" >"$D/w.1" 2>&1 &
w=$!; pids+=($w)
sleep 2
kill -STOP "${TPID[r2]}"; sleep 3; kill -CONT "${TPID[r2]}"
sleep 6
kill -TERM $w; wait $w; rc=$?
echo "writer: exit $rc; $(grep heal "$D/w.1")"
grep "^state [0-9.]* 0 " "$D/e.1" | grep -Ev "(in_sync behind|behind in_sync) 0$" | sed 's/^/  replica 0 (r2): /'
n=$(grep -c "not attached: it may hold persists" "$D/w.1")
if [ "$rc" -eq 0 ] && [ "$n" -eq 0 ]; then
	echo "repro-reattach: r2 came back in sync (not reproduced)"
	exit 0
fi
echo "repro-reattach: REPRODUCED: $n refusals of r2, the first:"
grep -m1 -o "not attached: it may hold.*" "$D/w.1" | sed "s|$D/||g; s/^/  /"
exit 1
