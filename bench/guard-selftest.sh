#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# guard-selftest.sh -- bench/guard.sh on synthetic pmrep-bench JSON lines,
# nothing measured: a point 1.6x worse than its baseline in the run and in
# its re-measurement fails; 1.6x once and then within passes (WORSE); 1.4x
# passes without a re-measurement; the latest run of the file is the one
# judged; a point not measured gives 77; --update writes the medians. Then
# with a stand-in for pmrep-bench: the re-measurement is one narrowed run,
# pinned to CPU 0, and --update --runs N makes N quick runs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
guard=$here/guard.sh
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
rc=0

# one --quick run's lines that the guard reads, and a few it must skip: the
# lat mirror ratio and cpu_ratio at 64 B and 4 KiB, the pipe's mirror and
# raw CPU per op at windows 1, 16, 64. Args: run id, then the six ratios
# (p50 64, cpu 64, p50 4K, cpu 4K, pipe W16, pipe W64); "null" for none
run_lines() {
	local id=$1 p64=$2 c64=$3 p4k=$4 c4k=$5 w16=$6 w64=$7
	local h="\"run\":\"$id\",\"date\":\"2026-12-05T06:00:00Z\",\"host\":\"t\",\"provider\":\"tcp\""
	echo "{$h,\"wait\":\"block\",\"sweep\":\"lat\",\"level\":\"raw\",\"size\":64,\"qd\":1,\"replicas\":1,\"ratio\":9.0,\"cpu_ratio\":9.0,\"rounds\":1}"
	echo "{$h,\"wait\":\"block\",\"sweep\":\"lat\",\"level\":\"mirror\",\"size\":64,\"qd\":1,\"replicas\":1,\"ratio\":$p64,\"ratio_min\":9.0,\"cpu_ratio\":$c64,\"cpu_ratio_min\":9.0,\"rounds\":1}"
	echo "{$h,\"wait\":\"block\",\"sweep\":\"lat\",\"level\":\"local\",\"size\":64,\"qd\":1,\"replicas\":0,\"ratio\":null,\"cpu_ratio\":null,\"rounds\":1}"
	echo "{$h,\"wait\":\"block\",\"sweep\":\"lat\",\"level\":\"mirror\",\"size\":4096,\"qd\":1,\"replicas\":1,\"ratio\":$p4k,\"cpu_ratio\":$c4k,\"rounds\":1}"
	echo "{$h,\"wait\":\"block\",\"sweep\":\"rep\",\"level\":\"mirror\",\"size\":64,\"qd\":1,\"replicas\":1,\"ratio\":9.0,\"cpu_ratio\":9.0,\"rounds\":1}"
	echo "{$h,\"sweep\":\"pipe\",\"level\":\"mirror\",\"size\":512,\"window\":16,\"qd\":16,\"replicas\":1,\"cpu_us_op\":90.0,\"raw_cpu_us_op\":10.0,\"rounds\":1}"
	echo "{$h,\"sweep\":\"pipe\",\"level\":\"mirror\",\"size\":4096,\"window\":1,\"qd\":1,\"replicas\":1,\"cpu_us_op\":90.0,\"raw_cpu_us_op\":10.0,\"rounds\":1}"
	# the pipe's ratio is cpu_us_op / raw_cpu_us_op: raw 10 us
	local c16=null c64w=null
	[ "$w16" = null ] || c16=$(awk -v r="$w16" 'BEGIN { printf "%.3f", r * 10 }')
	[ "$w64" = null ] || c64w=$(awk -v r="$w64" 'BEGIN { printf "%.3f", r * 10 }')
	echo "{$h,\"sweep\":\"pipe\",\"level\":\"mirror\",\"size\":4096,\"window\":16,\"qd\":16,\"replicas\":1,\"cpu_us_op\":$c16,\"raw_cpu_us_op\":10.000,\"rounds\":1}"
	echo "{$h,\"sweep\":\"pipe\",\"level\":\"mirror\",\"size\":4096,\"window\":64,\"qd\":64,\"replicas\":1,\"cpu_us_op\":$c64w,\"raw_cpu_us_op\":10.000,\"rounds\":1}"
	echo "{\"run\":\"$id\",\"sweep\":\"tls\",\"lat64_ratio\":9.0}"
}

cat >"$d/base0.txt" <<'B'
# a synthetic baseline
lat.mirror.64.p50     2.000   # n 3
lat.mirror.64.cpu     1.500
lat.mirror.4096.p50   2.000
lat.mirror.4096.cpu   1.500
pipe.w16.cpu          4.000
pipe.w64.cpu          3.000
B
cp "$d/base0.txt" "$d/base.txt"
same=(2.0 1.5 2.0 1.5 4.0 3.0)

expect() { # what, exit status wanted, pattern the output must show, guard args...
	local what=$1 want=$2 pat=$3 got; shift 3
	"$guard" --baseline "$d/base.txt" "$@" >"$d/out" 2>&1
	got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL: $what: exit $got, wanted $want:"; sed 's/^/    /' "$d/out"; rc=1
	elif ! grep -Eq -- "$pat" "$d/out"; then
		echo "FAIL: $what: exit $got but no line matches '$pat':"; sed 's/^/    /' "$d/out"; rc=1
	else
		echo "ok: $what: exit $got: $(grep -Em1 -- "$pat" "$d/out" | sed 's/^ *//')"
	fi
}

# every point at its baseline; an older run in the same file is 3x worse
# everywhere: only the latest run is judged
{ run_lines 20261205050000 6.0 4.5 6.0 4.5 12.0 9.0; run_lines 20261205060000 "${same[@]}"; } >"$d/run-same.jsonl"
run_lines 20261205060100 6.0 4.5 6.0 4.5 12.0 9.0 >"$d/re-worse.jsonl"
expect "every point at its baseline" 0 'guard: 6 points: 6 ok, 0 WORSE once, 0 FAIL, 0 unmeasured; worst factor in the run 1\.000' \
	--remeasure-from "$d/re-worse.jsonl" "$d/run-same.jsonl"

# 1.6x worse in the run and in its re-measurement: FAIL
run_lines 20261205060000 3.2 1.5 2.0 1.5 4.0 3.0 >"$d/run-64p50.jsonl"
run_lines 20261205060100 3.2 1.5 null null null null | grep -v '"size":4096' >"$d/re-64p50.jsonl"
expect "lat.mirror.64.p50 1.6x worse twice" 1 '^ +lat\.mirror\.64\.p50 +2\.00 +3\.20 +1\.600 +3\.20 +1\.600 +FAIL$' \
	--remeasure-from "$d/re-64p50.jsonl" "$d/run-64p50.jsonl"

# the same through the pipe's CPU ratio (cpu_us_op / raw_cpu_us_op)
run_lines 20261205060000 2.0 1.5 2.0 1.5 4.0 4.8 >"$d/run-w64.jsonl"
expect "pipe.w64.cpu 1.6x worse twice" 1 '^ +pipe\.w64\.cpu +3\.00 +4\.80 +1\.600 +4\.80 +1\.600 +FAIL$' \
	--remeasure-from "$d/run-w64.jsonl" "$d/run-w64.jsonl"

# 1.6x worse once, then within in the re-measurement: passes, WORSE shown
run_lines 20261205060100 "${same[@]}" >"$d/re-same.jsonl"
expect "lat.mirror.4096.cpu 1.6x worse once, then fine" 0 '^ +lat\.mirror\.4096\.cpu +1\.50 +2\.40 +1\.600 +1\.50 +1\.000 +WORSE' \
	--remeasure-from "$d/re-same.jsonl" <(run_lines 20261205060000 2.0 1.5 2.0 2.4 4.0 3.0)

# 1.4x worse: within the factor, so no re-measurement is taken (the file
# given would fail it)
run_lines 20261205060000 2.8 2.1 2.8 2.1 5.6 4.2 >"$d/run-14.jsonl"
expect "every point 1.4x worse" 0 '^ +pipe\.w16\.cpu +4\.00 +5\.60 +1\.400 +- +- +ok$' \
	--remeasure-from "$d/re-worse.jsonl" "$d/run-14.jsonl"

# exactly 1.5x is not more than 1.5x
expect "lat.mirror.64.p50 exactly 1.5x worse" 0 '^ +lat\.mirror\.64\.p50 +2\.00 +3\.00 +1\.500 +- +- +ok$' \
	--remeasure-from "$d/re-worse.jsonl" <(run_lines 20261205060000 3.0 1.5 2.0 1.5 4.0 3.0)

# a point the run did not measure (null) and none failing: 77
expect "a point not measured" 77 '^ +lat\.mirror\.64\.cpu +1\.50 +- .*UNMEASURED' \
	--remeasure-from "$d/re-same.jsonl" <(run_lines 20261205060000 2.0 null 2.0 1.5 4.0 3.0)
# a failure outranks it
expect "a point failing, another not measured" 1 'FAIL$' \
	--remeasure-from "$d/re-worse.jsonl" <(run_lines 20261205060000 2.0 null 2.0 1.5 6.4 3.0)
# exceeding, and no re-measurement of that point in the file: 77
expect "a point exceeding, not re-measured" 77 'UNCONFIRMED' \
	--remeasure-from "$d/re-64p50.jsonl" "$d/run-w64.jsonl"

# --update: the median per point of the complete runs (an incomplete one,
# a re-measurement, is left out), then a check against it passes
{ run_lines 20261205070000 1.0 1.0 1.0 1.0 1.0 1.0
  run_lines 20261205070100 3.0 2.0 2.0 2.0 2.0 5.0
  run_lines 20261205070200 2.0 9.0 3.0 3.0 3.0 4.0; } >"$d/u1.jsonl"
{ cat "$d/re-64p50.jsonl"; } >"$d/u2.jsonl"
if "$guard" --update --baseline "$d/new.txt" "$d/u1.jsonl" "$d/u2.jsonl" >"$d/out" 2>&1 &&
	grep -Eq '^lat\.mirror\.64\.p50 +2\.000 +# n 3, 1\.00-3\.00$' "$d/new.txt" &&
	grep -Eq '^lat\.mirror\.64\.cpu +2\.000 ' "$d/new.txt" &&
	grep -Eq '^pipe\.w64\.cpu +4\.000 ' "$d/new.txt" &&
	grep -q '^# command: taskset -c 0 pmrep-bench --quick' "$d/new.txt" &&
	grep -q '^# commit: ' "$d/new.txt" && grep -q '^# machine: ' "$d/new.txt" &&
	[ "$(grep -vc '^#' "$d/new.txt")" = 6 ]; then
	echo "ok: --update writes the medians of the 3 complete runs"
	cp "$d/new.txt" "$d/base.txt"
	expect "a run at the new baseline's medians" 0 'guard: passed' \
		--remeasure-from "$d/re-worse.jsonl" <(run_lines 20261205080000 2.0 2.0 2.0 2.0 2.0 4.0)
else
	echo "FAIL: --update:"; sed 's/^/    /' "$d/out" "$d/new.txt" 2>/dev/null; rc=1
fi

# the guard running pmrep-bench itself: a stand-in that logs its arguments
# and CPU affinity and writes one run of the ratios in $FAKE (a run id of
# its own per call)
declare -f run_lines >"$d/lines.sh"
cat >"$d/fake-bench" <<'F'
#!/bin/bash
. "$(dirname "$0")/lines.sh"
echo "$* | cpus $(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)" >>"$FAKE_LOG"
json=
while [ $# -gt 0 ]; do [ "$1" = --json ] && json=$2; shift; done
n=$(( $(cat "$FAKE_N" 2>/dev/null || echo 0) + 1 )); echo "$n" >"$FAKE_N"
# shellcheck disable=SC2086
run_lines "2026120509$(printf %04d "$n")" $FAKE >>"$json"
F
chmod +x "$d/fake-bench"
export FAKE_N=$d/fake.n FAKE_LOG=$d/fake.log
# pinning needs taskset and CPU 0 in our affinity (a container may lack it)
pin=0
taskset -c 0 true 2>/dev/null || pin=none
cp "$d/base0.txt" "$d/base.txt"

FAKE="3.2 1.5 2.0 1.5 4.0 3.0" expect "re-measured by pmrep-bench narrowed to the point" 1 \
	'^ +lat\.mirror\.64\.p50 +2\.00 +3\.20 +1\.600 +3\.20 +1\.600 +FAIL$' \
	--pin "$pin" --bench "$d/fake-bench" <(run_lines 20261205060000 3.2 1.5 2.0 1.5 4.0 3.0)
want="--quick --sweep lat --level mirror --sizes 64 --rounds 5 --json "
if [ "$(grep -c . "$d/fake.log")" = 1 ] && grep -q -- "^$want.* | cpus ${pin/none/}" "$d/fake.log"; then
	echo "ok: one re-measurement: pmrep-bench $(sed 's#--json [^ ]*#--json F#' "$d/fake.log")"
else
	echo "FAIL: the re-measurement ran otherwise (wanted '$want', pinned to $pin):"; cat "$d/fake.log"; rc=1
fi
rm -f "$d/fake.log"
if FAKE="1.0 2.0 3.0 4.0 5.0 6.0" "$guard" --update --baseline "$d/made.txt" --pin "$pin" \
		--bench "$d/fake-bench" --runs 3 >"$d/out" 2>&1 &&
	grep -Eq '^pipe\.w64\.cpu +6\.000 +# n 3, ' "$d/made.txt" &&
	grep -q -- '--update --runs 3' "$d/made.txt" &&
	[ "$(grep -c -- '^--quick --json .* | cpus' "$d/fake.log")" = 3 ]; then
	echo "ok: --update --runs 3 makes 3 quick runs and writes their medians"
else
	echo "FAIL: --update --runs 3:"; sed 's/^/    /' "$d/out" "$d/fake.log" "$d/made.txt" 2>/dev/null; rc=1
fi

[ "$rc" = 0 ] && echo "guard-selftest: all cases behave" || echo "guard-selftest: FAILED"
exit "$rc"
