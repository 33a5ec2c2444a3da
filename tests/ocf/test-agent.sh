#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# tests/ocf/test-agent.sh TOOLS_DIR RIG_DIR -- the OCF agent tools/ocf/pmrep on
# loopback, three "nodes" n1 n2 n3 (three copies, three instances of the
# agent told their node name, ports 17711..17713), without a cluster: a fake
# crm_attribute records the promotion scores the agent sets. Each step's
# outcome is asserted:
#   1. fresh copies: score 0 (unclaimed: may not be promoted);
#   2. the set created by a first writer run on n1: n2 and n3 score 10000;
#   3. promote n2: exit 0, monitor 8, the application's env file; a writer
#      on n2 from it (quorum 1 of 2); n3's instance stopped midway, so n1
#      holds persists n3 lacks; the writer killed (kill -9);
#   4. n3 started again: 1000 (behind n1), n1: 10000;
#   5. n1 stopped too: n3's promote is refused (too few copies), retried
#      exactly promote_attempts times, its score withdrawn, its target
#      serving again (monitor 0), its header unchanged;
#   6. n2 demoted, n1 started: n3's promote catches up from n1 (caught_up
#      true), and every record n2's writer acknowledged is on n3 (rig-check);
#      then n1 promoted while n3 still is: n3's monitor returns 9
#      (OCF_FAILED_PROMOTED: fenced by a newer generation), score withdrawn;
#   7. ocf-tester (resource-agents) on the agent, when installed.
# Exit 0 passed, 1 failed, 77 cannot run here (no ocf-shellfuncs).
set -u
TOOLS=$(cd "$1" && pwd)
RIG=$(cd "$2" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
AGENT=$SRC/tools/ocf/pmrep
export OCF_ROOT=/usr/lib/ocf
if [ ! -f "$OCF_ROOT/lib/heartbeat/ocf-shellfuncs" ]; then
	echo "SKIPPED: no $OCF_ROOT/lib/heartbeat/ocf-shellfuncs (Debian: resource-agents)"
	exit 77
fi
W=$(mktemp -d /tmp/pmrep-ocf.XXXXXX)
PIDS=""
cleanup() {
	for n in n1 n2 n3; do agent "$n" stop >/dev/null 2>&1; done
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	if [ "${ok:-0}" = 1 ]; then rm -rf "$W"; else echo "work directory kept: $W"; fi
}
trap cleanup EXIT
fail() { echo "FAILED: $*"; echo "--- agent log"; tail -n 30 "$W/ha.log"; exit 1; }
say() { echo "== $*"; }

# the fake crm_attribute: "--promotion -v N" / "--promotion -D" per node
mkdir -p "$W/bin"
cat >"$W/bin/crm_attribute" <<'EOF'
#!/bin/sh
echo "$OCF_RESKEY_CRM_meta_on_node $*" >>"$SCORES"
EOF
chmod +x "$W/bin/crm_attribute"
export PATH="$W/bin:$PATH" SCORES="$W/scores"
"$TOOLS/pmrep" keygen "$W/key" >/dev/null || fail "keygen"
NODES="n1=127.0.0.1:17711 n2=127.0.0.1:17712 n3=127.0.0.1:17713"
at() { case $1 in n1) echo 127.0.0.1:17711 ;; n2) echo 127.0.0.1:17712 ;; n3) echo 127.0.0.1:17713 ;; esac; }

# agent NODE ACTION [NAME=VALUE...]: run the agent as NODE's instance
agent() {
	local n=$1 a=$2
	shift 2
	(
		export OCF_RESOURCE_INSTANCE="pmrep:${n#n}" OCF_RESKEY_CRM_meta_on_node=$n
		export OCF_RESKEY_log=$W/$n/data.log OCF_RESKEY_key_file=$W/key
		export OCF_RESKEY_nodes="$NODES" OCF_RESKEY_quorum=1
		export OCF_RESKEY_bindir=$TOOLS OCF_RESKEY_state_dir=$W/$n/run
		export OCF_RESKEY_app_env=$W/$n/app.env OCF_RESKEY_query_timeout_ms=1000
		export OCF_RESKEY_promote_timeout_ms=20000 HA_LOGFILE=$W/ha.log HA_LOGTAG=$n
		export OCF_RESKEY_CRM_meta_timeout=60000
		for kv in "$@"; do export "OCF_RESKEY_$kv"; done
		"$AGENT" "$a"
	)
}
expect() { # NODE ACTION RC
	agent "$1" "$2"
	local rc=$?
	[ $rc = "$3" ] || fail "$1 $2: exit $rc, expected $3"
	echo "  $1 $2: $rc"
}
last_score() { grep "^$1 " "$SCORES" | tail -n 1 | cut -d' ' -f2-; }
score_is() { # NODE WHAT ("-v N" or "-D")
	local s; s=$(last_score "$1")
	[ "$s" = "$2" ] || fail "$1's promotion score: '$s', expected '$2'"
	echo "  $1 score: $2"
}
writer() { # NODE HIST [options]: a rig-writer on NODE's copy, in the background
	local n=$1 h=$2
	shift 2
	"$RIG/rig-writer" --file "$W/$n/data.log" --size 1M --key-file "$W/key" \
		--history "$W/$h" --events "$W/$h.ev" --pmrep-log --persist-seq \
		--timeout 500 --idle-every 0 "$@" >"$W/$h.out" 2>"$W/$h.err" &
	WPID=$!
	PIDS="$PIDS $WPID"
}
hist_n() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
wait_hist() { # FILE N: up to 20 s
	local i=0
	while [ "$(hist_n "$1")" -lt "$2" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
	[ "$(hist_n "$1")" -ge "$2" ]
}

for n in n1 n2 n3; do
	mkdir -p "$W/$n"
	# a fresh replica file: pmrep-target --create formats it, then stops
	"$TOOLS/pmrep-target" --path "$W/$n/data.log" --create --size 1M --key-file "$W/key" \
		--port 0 >"$W/$n.create" 2>&1 &
	p=$!
	i=0
	while ! grep -q "listening on" "$W/$n.create" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	kill "$p"; wait "$p" 2>/dev/null
	[ -f "$W/$n/data.log" ] || fail "cannot create $n's copy"
done

say "1. fresh copies: no set yet, every score 0"
expect n1 validate-all 0
expect n1 monitor 7
for n in n1 n2 n3; do expect $n start 0; score_is $n "--promotion -v 0"; done
grep -q "unclaimed\|never claimed" "$W/ha.log" || fail "the log does not say the copies are unclaimed"

say "2. the set created by a first writer run on n1 (outside the cluster)"
expect n1 stop 0
writer n1 h0 --replica "$(at n2)" --replica "$(at n3)" --quorum 1 --count 200 --rate 2000
wait "$WPID" || fail "the first writer: $(tail -n 3 "$W/h0.err")"
expect n1 start 0
for n in n1 n2 n3; do expect $n monitor 0; score_is $n "--promotion -v 10000"; done

say "3. promote n2; its application from the env file; n3 stopped midway"
expect n2 promote 0
expect n2 monitor 8
score_is n2 "--promotion -v 10000"
[ -f "$W/n2/app.env" ] || fail "no application env file"
(. "$W/n2/app.env"
 [ "$PMREP_LOG" = "$W/n2/data.log" ] && [ "$PMREP_GENERATION" -ge 2 ] &&
 [ "$PMREP_REPLICAS" = "$(at n1) $(at n3)" ] && [ "$PMREP_QUORUM" = 1 ] &&
 [ "$PMREP_SET_SIZE" = 2 ] && [ "$PMREP_TLS" = 1 ]) || fail "app.env: $(cat "$W/n2/app.env")"
. "$W/n2/app.env"
# shellcheck disable=SC2086
writer n2 h1 $(for r in $PMREP_REPLICAS; do echo --replica "$r"; done) --quorum "$PMREP_QUORUM" --rate 1000
wait_hist "$W/h1" 100 || fail "n2's writer acknowledged nothing: $(tail -n 3 "$W/h1.err")"
expect n3 stop 0
n_stop=$(hist_n "$W/h1")
wait_hist "$W/h1" $((n_stop + 200)) || fail "n2's writer did not go on with n1 alone"
kill -9 "$WPID"; wait "$WPID" 2>/dev/null
echo "  n2's writer killed after $(hist_n "$W/h1") acknowledged records ($n_stop before n3 stopped)"

say "4. n3 back: behind n1"
# the checker sees what n3 lacks (what a promotion without catch-up loses)
"$RIG/rig-check" history --history "$W/h1" --source "$W/n3/data.log" --replica "$W/n3/data.log" --quorum 1 \
	>"$W/check0.out" 2>&1 && fail "rig-check found every record on n3 before the catch-up: a checker that cannot fail"
echo "  n3 lacks records n2's writer acknowledged: $(grep -c VIOLATION "$W/check0.out") violations (expected)"
expect n3 start 0
score_is n3 "--promotion -v 1000"
expect n1 monitor 0
score_is n1 "--promotion -v 10000"

say "5. n1 stopped: n3 cannot fence n - k + 1 = 2 copies; refused, retried, withdrawn"
expect n1 stop 0
: >"$W/ha.log"
expect n3 monitor 0
score_is n3 "--promotion -D"
grep -q "withdrawn: 1 copies of the set .*needed 2" "$W/ha.log" || fail "monitor did not say why the score was withdrawn"
"$TOOLS/pmrep" status "$W/n3/data.log" --json >"$W/n3.before" 2>&1
: >"$W/ha.log"
agent n3 promote promote_attempts=2
rc=$?
[ $rc = 1 ] || fail "n3's promote with too few copies: exit $rc, expected 1 (OCF_ERR_GENERIC)"
tries=$(grep -c "pmrep promote (attempt" "$W/ha.log")
[ "$tries" = 2 ] || fail "n3's promote ran pmrep promote $tries times, expected promote_attempts = 2"
score_is n3 "--promotion -D"
expect n3 monitor 0
"$TOOLS/pmrep" status "$W/n3/data.log" --json >"$W/n3.after" 2>&1
# the refusal may have raised the generation on n3's own copy (a fence is
# not undone); its position, what it holds, must be as before
pos() { grep -o '"position":{[^}]*}' "$1"; }
[ "$(pos "$W/n3.before")" = "$(pos "$W/n3.after")" ] || fail "the refused promotion moved n3's position: $(pos "$W/n3.before") -> $(pos "$W/n3.after")"
[ -n "$(pos "$W/n3.after")" ] || fail "no position in pmrep status --json"

say "6. n2 demoted, n1 back: n3's promote catches up from n1"
expect n2 demote 0
expect n2 monitor 0
[ ! -f "$W/n2/app.env" ] || fail "the env file outlived the demotion"
expect n1 start 0
: >"$W/ha.log"
expect n3 promote 0
grep -q "caught up: true" "$W/ha.log" || fail "n3 did not catch up: $(cat "$W/ha.log")"

say "6b. n1 promoted while n3 still is (as across a cut): n3's monitor says it is fenced"
expect n1 promote 0
: >"$W/ha.log"
expect n3 monitor 9
score_is n3 "--promotion -D"
grep -q "fenced: .* holds generation" "$W/ha.log" || fail "the fenced monitor did not say why: $(cat "$W/ha.log")"
expect n1 demote 0
expect n3 stop 0	# its copy read as a file below, no writer on it
"$RIG/rig-check" history --history "$W/h1" --source "$W/n3/data.log" --replica "$W/n3/data.log" --quorum 1 \
	>"$W/check.out" 2>&1 || fail "a record n2's writer acknowledged is not on n3: $(tail -n 5 "$W/check.out")"
echo "  every one of the $(hist_n "$W/h1") records n2's writer acknowledged is on n3"

say "8. bad configuration: refused at validate-all; a stop with a bad one still stops the target"
vrc() { agent n1 validate-all "$@" >/dev/null 2>&1; echo $?; }
[ "$(vrc nodes="n1=127.0.0.1:17711 n1=127.0.0.1:17712 n2=127.0.0.1:17713")" = 6 ] || fail "a node named twice was accepted"
[ "$(vrc promote_timeout_ms=09)" = 6 ] || fail "promote_timeout_ms=09 was accepted"
[ "$(vrc quorum=99999999999999999999)" = 6 ] || fail "a huge quorum was accepted"
[ "$(vrc nodes="n1=127.0.0.1:17711 n?=*")" = 6 ] || fail "a node list with a pattern was accepted"
expect n2 start 0
tp=$(cat "$W/n2/run/pmrep-n2.target.pid")
agent n2 stop nodes="n2=127.0.0.1:17712" >/dev/null 2>&1 || fail "stop with a bad configuration failed"
kill -0 "$tp" 2>/dev/null && fail "stop with a bad configuration left pmrep-target $tp running"
echo "  a node twice, 09, a huge quorum, a pattern: refused; a stop with one node stopped target $tp"
# a log path with a quote: the application's env file stays one assignment
mkdir -p "$W/q'x"
cp "$W/n1/data.log" "$W/q'x/data.log"
rm -f "$W/PWNED"
agent n1 stop >/dev/null 2>&1
for n in n2 n3; do agent $n start >/dev/null 2>&1; done
agent n1 start log="$W/q'x/data.log" >/dev/null 2>&1 || fail "start with a path with a quote"
agent n1 promote log="$W/q'x/data.log" >/dev/null 2>&1 || fail "promote of a path with a quote: $(tail -n 3 "$W/ha.log")"
(cd "$W" && . "$W/n1/app.env" && [ "$PMREP_LOG" = "$W/q'x/data.log" ]) || fail "app.env: $(cat "$W/n1/app.env")"
[ ! -e "$W/PWNED" ] || fail "a parameter's text ran as a command"
agent n1 demote log="$W/q'x/data.log" >/dev/null 2>&1
agent n1 stop log="$W/q'x/data.log" >/dev/null 2>&1
echo "  a log path with a quote: app.env reads back the same path, nothing ran"

say "7. ocf-tester"
if command -v ocf-tester >/dev/null; then
	for n in n1 n2 n3; do agent $n stop >/dev/null; done
	for n in n2 n3; do expect $n start 0; done
	ocf-tester -n pmrep -o log="$W/n1/data.log" -o nodes="$NODES" -o key_file="$W/key" \
		-o bindir="$TOOLS" -o state_dir="$W/n1/run" -o app_env="$W/n1/app.env" -o quorum=1 \
		-o CRM_meta_on_node=n1 "$AGENT" >"$W/ocf-tester.out" 2>&1 ||
		fail "ocf-tester: $(tail -n 15 "$W/ocf-tester.out")"
	tail -n 1 "$W/ocf-tester.out"
else
	echo "  ocf-tester not installed (resource-agents): not run"
fi
ok=1
echo "PASSED"
