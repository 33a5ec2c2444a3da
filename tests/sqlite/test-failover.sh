#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/sqlite/test-failover.sh TOOLS_DIR WRITER_DIR -- a database on
# pmrep-sqlite fails over, and the stock sqlite3 opens the promoted copy.
# On loopback: the primary P (sqlite-writer: single-row INSERT commits,
# WAL, synchronous=FULL, a history of the ids whose COMMIT returned), two
# pmrep-targets R1 R2. Three scenarios, each asserted:
#   all:      kill -9 of the writer mid-stream; pmrep compare names the
#             most current; promote it (FAILOVER.md's procedure);
#   one:      a set of one replica, its primary gone for good: compare and
#             promote (no --replica) that replica alone;
#   quorum:   quorum 1 of 2, R2 frozen (SIGSTOP) midway and the writer
#             goes on with R1 alone; kill -9; compare must name R1 alone;
#             promoting R1 alone (as a set of one) is refused, R1 unchanged;
#   partition: quorum 1 of 2, the writer keeps writing while R2 is
#             promoted (fence, then catch up from R1): the writer's next
#             COMMIT fails (the outcome of a failed COMMIT is unknown) and
#             it stops;
# then on the promoted copy: the stock sqlite3 with `.load pmrep_sqlite`
# and a read-only open says PRAGMA integrity_check ok, every id in the
# history is a row (and every row's value is right: sqlite-writer --check),
# and `.backup` to a plain file that sqlite3 opens without the extension.
# A checker that cannot fail proves nothing: the history is checked
# against R2's copy before its catch-up too, which must miss rows.
# Exit 0 passed, 1 failed, 77 no sqlite3 shell.
set -u
TOOLS=$(cd "$1" && pwd)
WDIR=$(cd "$2" && pwd)
PMREP=$TOOLS/pmrep
TARGET=$TOOLS/pmrep-target
WRITER=$WDIR/sqlite-writer
EXT=$WDIR/pmrep_sqlite
command -v sqlite3 >/dev/null || { echo "SKIPPED: no sqlite3 shell (Debian: sqlite3)"; exit 77; }
# an extension built with sanitizers (the asan stage) loads into the stock
# sqlite3 only with their runtimes preloaded
PRELOAD=$(ldd "$EXT.so" 2>/dev/null | awk '/lib(asan|ubsan)\.so/ { print $3 }' | tr '\n' ' ')
sq() {
	if [ -n "$PRELOAD" ]; then
		LD_PRELOAD="$PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" sqlite3 "$@"
	else
		sqlite3 "$@"
	fi
}
W=$(mktemp -d /tmp/pmrep-sqlite.XXXXXX)
PIDS=""
cleanup() {
	for p in $PIDS; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	if [ "${ok:-0}" = 1 ]; then rm -rf "$W"; else echo "work directory kept: $W"; fi
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; exit 1; }
say() { echo "== $*"; }
"$PMREP" keygen "$W/key" >/dev/null || fail keygen
SIZE=16M
port() { case $1 in R1) echo 17731 ;; R2) echo 17732 ;; esac; }
at() { echo "127.0.0.1:$(port "$1")"; }
declare -A TPID

start_target() { # NODE [--create]
	: >"$W/t$1.out"
	"$TARGET" --path "$W/$1.log" --size "$SIZE" --key-file "$W/key" --address 127.0.0.1 \
		--port "$(port "$1")" --timeout 1000 ${2:-} --log-file "$W/t$1.log" \
		>"$W/t$1.out" 2>&1 &
	TPID[$1]=$!
	PIDS="$PIDS $!"
	local i=0
	while ! grep -q "listening on" "$W/t$1.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	grep -q "listening on" "$W/t$1.out" || fail "$1's target: $(cat "$W/t$1.out")"
}
stop_target() {
	kill -TERM "${TPID[$1]}" 2>/dev/null
	wait "${TPID[$1]}" 2>/dev/null
}
uri() { # FILE QUORUM [REPLICAS]
	echo "file:$1?vfs=pmrep&size=$SIZE&replicas=${3:-$(at R1),$(at R2)}&key_file=$W/key&quorum=$2&timeout_ms=1000"
}
hist_n() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
wait_hist() { # FILE N: up to 30 s
	local i=0
	while [ "$(hist_n "$1")" -lt "$2" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	[ "$(hist_n "$1")" -ge "$2" ]
}
# every id in HISTORY is a row of the copy FILE (a pmrep log), read by the
# stock sqlite3 with the extension, read-only; the copy's integrity
check_copy() { # FILE HISTORY
	local out
	out=$(sq -batch <<EOF 2>&1
.load $EXT
.open --readonly "file:$1?vfs=pmrep"
PRAGMA integrity_check;
SELECT count(*) FROM t;
.output $W/ids
SELECT id FROM t ORDER BY id;
.output stdout
.backup main $W/plain.db
EOF
)
	[ "$(echo "$out" | head -n 1)" = ok ] || { echo "sqlite3 on $1: $out"; return 1; }
	local missing
	missing=$(sort -n "$2" | comm -23 - <(sort -n "$W/ids") | head -n 5)
	[ -z "$missing" ] || { echo "acknowledged ids missing from $1: $missing"; return 1; }
	# the plain copy: the stock sqlite3 without the extension
	[ "$(sqlite3 "$W/plain.db" 'PRAGMA integrity_check;')" = ok ] ||
		{ echo "the plain copy from .backup is damaged"; return 1; }
	"$WRITER" "file:$1?vfs=pmrep" /dev/null --check >"$W/check.out" 2>&1 ||
		{ echo "a row's value is wrong: $(cat "$W/check.out")"; return 1; }
	echo "  $1: integrity ok, $(echo "$out" | sed -n 2p) rows, all $(hist_n "$2") acknowledged ids there; $(cat "$W/check.out")"
}
promote() { # NODE OTHER QUORUM
	"$PMREP" promote "$W/$1.log" --replica "$(at "$2")" --set-size 2 --quorum "$3" \
		--key-file "$W/key" --timeout 2000 --json >"$W/promote.out" 2>"$W/promote.err"
}

scenario() { # NAME QUORUM
	local name=$1 q=$2 qarg
	[ "$q" = 0 ] && qarg=all || qarg=$q
	say "$name (quorum $qarg)"
	rm -f "$W"/[PR]*.log "$W"/*.log.pmrep-state "$W/hist"
	start_target R1 --create
	local reps=""
	if [ "$name" = one ]; then reps=$(at R1); else start_target R2 --create; fi
	"$WRITER" "$(uri "$W/P.log" "$q" "$reps")" "$W/hist" --rate 400 >"$W/w.out" 2>"$W/w.err" &
	local wpid=$!
	PIDS="$PIDS $wpid"
	wait_hist "$W/hist" 100 || fail "the writer acknowledged nothing: $(tail -n 3 "$W/w.err")"
	local new=R1 other=R2
	case $name in
	all)
		sleep 1
		kill -9 $wpid; wait $wpid 2>/dev/null
		"$PMREP" compare "$(at R1)" "$(at R2)" --key-file "$W/key" --json >"$W/cmp.out" ||
			fail "compare: $(cat "$W/cmp.out")"
		grep -q "\"answer\":\"$(at R2)\"" "$W/cmp.out" && { new=R2 other=R1; }
		# with the dead writer's own log among them: it holds every step
		# of its run, so it is named (a regression: compare printed an
		# empty "most current:" with exit 0)
		"$PMREP" compare "$W/P.log" "$(at R1)" "$(at R2)" --key-file "$W/key" --json >"$W/cmp2.out" ||
			fail "compare with the writer's log: $(cat "$W/cmp2.out")"
		grep -q "\"most_current\":\[\"$W/P.log\"" "$W/cmp2.out" ||
			fail "compare with the writer's own log did not name it: $(cat "$W/cmp2.out")"
		;;
	one)
		# a set of one replica; the primary is gone for good
		sleep 1
		kill -9 $wpid; wait $wpid 2>/dev/null
		"$PMREP" compare "$(at R1)" --key-file "$W/key" --json >"$W/cmp.out" ||
			fail "compare of a set of one: $(cat "$W/cmp.out")"
		grep -q "\"most_current\":\[\"$(at R1)\"\]" "$W/cmp.out" || fail "compare: $(cat "$W/cmp.out")"
		stop_target R1
		"$PMREP" promote "$W/R1.log" --json >"$W/promote.out" 2>"$W/promote.err" ||
			fail "promote of a set of one: $(cat "$W/promote.out") $(tail -n 2 "$W/promote.err")"
		grep -q '"outcome":"promoted"' "$W/promote.out" || fail "promote: $(cat "$W/promote.out")"
		echo "  promoted R1, a set of one (no --replica): $(grep -o '"generation":[0-9]*' "$W/promote.out")"
		echo "  $(hist_n "$W/hist") commits acknowledged"
		check_copy "$W/R1.log" "$W/hist" || fail "the promoted copy"
		return
		;;
	quorum)
		kill -STOP "${TPID[R2]}"
		local n0; n0=$(hist_n "$W/hist")
		wait_hist "$W/hist" $((n0 + 200)) || fail "the writer did not go on with R1 alone"
		kill -9 $wpid; wait $wpid 2>/dev/null
		kill -CONT "${TPID[R2]}"
		"$PMREP" compare "$(at R1)" "$(at R2)" --key-file "$W/key" --json >"$W/cmp.out" ||
			fail "compare: $(cat "$W/cmp.out")"
		grep -q "\"most_current\":\[\"$(at R1)\"\]" "$W/cmp.out" ||
			fail "under quorum with R2 frozen the most current must be R1 alone: $(cat "$W/cmp.out")"
		# R1 alone, as if a set of one: the headers record 2 under
		# quorum 1 (n - k + 1 = 2): refused, nothing written
		stop_target R1
		"$PMREP" status "$W/R1.log" --json >"$W/st0"
		"$PMREP" promote "$W/R1.log" --json >"$W/p1.out" 2>/dev/null
		[ $? = 1 ] && grep -q '"outcome":"refused_fence"' "$W/p1.out" ||
			fail "promote of R1 alone under quorum 1 of 2: $(cat "$W/p1.out")"
		"$PMREP" status "$W/R1.log" --json >"$W/st1"
		cmp -s "$W/st0" "$W/st1" || fail "the refused promotion changed R1's header"
		echo "  R1 alone refused (the headers record a set of 2, quorum 1): nothing written"
		;;
	partition)
		# R2's target stops to be promoted while the writer goes on with R1
		new=R2 other=R1
		stop_target R2
		local n0; n0=$(hist_n "$W/hist")
		wait_hist "$W/hist" $((n0 + 200)) || fail "the writer did not go on with R1 alone"
		# R2's copy lacks what R1 took since: the checker sees it
		check_copy "$W/R2.log" "$W/hist" >"$W/pre.out" 2>&1 &&
			fail "the checker found every acknowledged row on R2 before its catch-up: $(cat "$W/pre.out")"
		echo "  before the catch-up R2 misses rows (expected): $(head -c 120 "$W/pre.out")"
		;;
	esac
	[ "$name" = partition ] || stop_target "$new"
	promote "$new" "$other" "$qarg" || fail "promote $new: $(cat "$W/promote.out") $(tail -n 2 "$W/promote.err")"
	grep -q '"outcome":"promoted"' "$W/promote.out" || fail "promote $new: $(cat "$W/promote.out")"
	echo "  promoted $new: $(grep -o '"generation":[0-9]*' "$W/promote.out"), caught up: $(grep -o '"caught_up":[a-z]*' "$W/promote.out")"
	if [ "$name" = partition ]; then
		# the old primary's next COMMIT fails: R1 was fenced
		local i=0
		while kill -0 $wpid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -0 $wpid 2>/dev/null && fail "the old primary still commits after the promotion"
		wait $wpid; local rc=$?
		[ $rc = 3 ] || fail "the old primary: exit $rc, expected 3 (a COMMIT failed): $(tail -n 3 "$W/w.out")"
		echo "  the old primary stopped: $(grep 'failed' "$W/w.out")"
		grep -q '"caught_up":true' "$W/promote.out" || fail "R2 did not catch up from R1"
	fi
	stop_target "$other"
	echo "  $(hist_n "$W/hist") commits acknowledged"
	check_copy "$W/$new.log" "$W/hist" || fail "the promoted copy"
}

say "bad input: refused, nothing written, nothing left behind"
bad=$(sq -batch <<EOF 2>&1
.load $EXT
.open "file:$W/bad.log?vfs=pmrep&size=16M&wal_size=-1M"
CREATE TABLE t(x);
EOF
)
[ ! -e "$W/bad.log" ] && grep -q "unable to open" <<<"$bad" || fail "wal_size=-1M: $bad; $(ls -la "$W"/bad.log 2>&1)"
"$PMREP" log-create "$W/z.log" 4M >/dev/null && cp "$W/z.log" "$W/z0"
sq -batch >/dev/null 2>&1 <<EOF
.load $EXT
.open "file:$W/z.log?vfs=pmrep&replicas=127.0.0.1:9&key_file=$W/nonexistent"
CREATE TABLE t(x);
EOF
cmp -s "$W/z0" "$W/z.log" || fail "a refused open changed the existing log"
# a volume header whose WAL region overlaps the pmrep header (its check
# recomputed: what a crafted or damaged header says): refused, no write
sq -batch >/dev/null 2>&1 <<EOF
.load $EXT
.open "file:$W/c.log?vfs=pmrep&size=4M"
CREATE TABLE t(x);
EOF
python3 - "$W/c.log" <<'PY' || fail "cannot craft the volume header"
import struct, sys
f = open(sys.argv[1], "r+b"); f.seek(4096); h = bytearray(f.read(160))
def fnv(b, c):
    for x in b:
        c ^= x; c = (c * 0x100000001b3) & (2**64 - 1)
    return c
struct.pack_into("<QQ", h, 48 + 32, 2**64 - 0x1000, 0x2000)   # the WAL region
c = fnv(h[0:32], 0xcbf29ce484222325)
for k in range(3):
    c = fnv(h[48 + 32 * k:48 + 32 * k + 16], c)
struct.pack_into("<Q", h, 144, c)
f.seek(4096); f.write(h); f.close()
PY
cp "$W/c.log" "$W/c0"
out=$(sq -batch <<EOF 2>&1
.load $EXT
.open "file:$W/c.log?vfs=pmrep"
PRAGMA journal_mode=WAL;
INSERT INTO t VALUES (1);
EOF
)
grep -qi "malformed\|corrupt\|unable to open" <<<"$out" || fail "a crafted region was not refused: $out"
cmp -s "$W/c0" "$W/c.log" || fail "a refused open wrote into the crafted log"
echo "  wal_size=-1M refused (no file), a refused open left the log as it was, a crafted region refused"

scenario all 0
say "pmrep export: the promoted copy's data area to a plain file; a fresh copy refused"
"$PMREP" export "$W/R1.log" "$W/R1.data" >"$W/export.out" 2>&1 || fail "export: $(cat "$W/export.out")"
cmp -s <(tail -c +4097 "$W/R1.log") "$W/R1.data" || fail "the exported bytes are not R1's data area"
grep -q "^position: generation 1, writer " "$W/export.out" || fail "export did not print the position: $(cat "$W/export.out")"
"$PMREP" export "$W/R1.log" "$W/R1.data" >/dev/null 2>&1 && fail "export overwrote an existing file"
"$TARGET" --path "$W/fresh.log" --create --size 1M --key-file "$W/key" --port 0 >"$W/fresh.out" 2>&1 &
fp=$!; i=0
while ! grep -q "listening on" "$W/fresh.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill $fp; wait $fp 2>/dev/null
"$PMREP" export "$W/fresh.log" "$W/fresh.data" >"$W/export.out" 2>&1
[ $? = 1 ] && grep -q "never claimed" "$W/export.out" && [ ! -e "$W/fresh.data" ] ||
	fail "export of a fresh copy was not refused: $(cat "$W/export.out")"
echo "  exported $(head -n 1 "$W/export.out" >/dev/null; stat -c %s "$W/R1.data") bytes; a fresh copy refused"
scenario one 0
scenario quorum 1
scenario partition 1
ok=1
echo PASSED
