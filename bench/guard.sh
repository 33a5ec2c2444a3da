#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/guard.sh -- the performance regression guard of the CI bench stage
# (docs/PERFORMANCE.md "Regression guard"). It holds ratios measured inside
# one pmrep-bench --quick run (never absolute numbers: the machines are
# shared and noisy) against a baseline file, and re-measures a point that
# looks worse before calling it a failure. Every run it judges or is made
# from is pinned to one CPU (taskset -c 0, as the bench stage runs
# pmrep-bench --quick): unpinned, the CPU ratios flip between modes with the
# machine's load (docs/PERFORMANCE.md "Run it").
#
#   guard.sh [--baseline FILE] [--factor F] [--rounds N] [--pin CPU|none]
#            (--bench PMREP_BENCH | --remeasure-from FILE.jsonl) RUN.jsonl
#       check the latest run in RUN.jsonl (pmrep-bench appends to its file);
#       a point FAILS when its ratio is more than F (1.5) times its baseline
#       both in that run and in a re-measurement of that point alone
#       (pmrep-bench narrowed to its sweep, size or window, N (5) rounds),
#       or, for tests, in the last line for that point in --remeasure-from
#   guard.sh --update [--baseline FILE] RUN.jsonl...
#   guard.sh --update [--baseline FILE] [--pin CPU] --bench PMREP_BENCH --runs N
#       write the baseline: the median per point of every complete run in
#       the files (made with taskset -c 0 pmrep-bench --quick), or of N
#       quick runs it makes itself, pinned
#
# Points (lower is better for each): the pipe sweep's mirror / raw CPU per
# operation at windows 16 and 64 (cpu_us_op / raw_cpu_us_op), the lat sweep's
# mirror p50 / floor p50 (ratio) and mirror / floor CPU per operation
# (cpu_ratio) at 64 B and 4 KiB.
# Exit: 0 no point failed; 1 a point failed; 2 usage, or no baseline;
# 77 a point could not be measured (in the run or when re-measured) and none
# failed.
set -uo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
baseline=$here/baseline/tcp-quick.txt
factor=1.5 rounds=5 bench="" from="" update=0 pin=0 nruns_make=0

usage() {
	cat >&2 <<'U'
usage: guard.sh [--baseline FILE] [--factor F] [--rounds N] [--pin CPU|none]
                (--bench PMREP_BENCH | --remeasure-from FILE.jsonl) RUN.jsonl
       guard.sh --update [--baseline FILE] RUN.jsonl...
       guard.sh --update [--baseline FILE] [--pin CPU] --bench PMREP_BENCH --runs N
  --baseline FILE   the baseline (default: bench/baseline/tcp-quick.txt)
  --factor F        a point is worse when its ratio exceeds F x its baseline (1.5)
  --bench PATH      pmrep-bench, run narrowed to a point that exceeded
  --rounds N        rounds of that re-measurement (5; lat: the median of the rounds' ratios,
                    pipe: the CPU per op of all rounds together)
  --pin CPU|none    run pmrep-bench under taskset -c CPU (0), as the bench stage's quick run
  --remeasure-from FILE  take the re-measurement from these JSON lines instead (tests)
  --update          write the baseline from the runs (median per point)
  --runs N          --update: make N pinned pmrep-bench --quick runs first (10 or more)
U
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--baseline) baseline=${2:?}; shift 2 ;;
	--factor) factor=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	--bench) bench=${2:?}; shift 2 ;;
	--remeasure-from) from=${2:?}; shift 2 ;;
	--pin) pin=${2:?}; shift 2 ;;
	--runs) nruns_make=${2:?}; shift 2 ;;
	--update) update=1; shift ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) echo "guard: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
case $pin in none) ;; *[!0-9]*|'') echo "guard: --pin CPU (a number) or none" >&2; exit 2 ;; esac
case $nruns_make in *[!0-9]*|'') echo "guard: --runs N" >&2; exit 2 ;; esac
[ -z "$bench" ] || [ -x "$bench" ] || { echo "guard: $bench is not a program" >&2; exit 2; }
# pmrep-bench as the baseline's runs were made: on one CPU
pinned() {
	if [ "$pin" = none ]; then "$@"; else taskset -c "$pin" "$@"; fi
}
pinned_as() { [ "$pin" = none ] || printf 'taskset -c %s ' "$pin"; }

if [ "$update" = 1 ] && [ "$nruns_make" -gt 0 ]; then
	{ [ -n "$bench" ] && [ $# -eq 0 ]; } || usage
	made=$(mktemp -d) || exit 1
	trap 'rm -rf "$made"' EXIT
	for i in $(seq 1 "$nruns_make"); do
		if ! (cd "$made" && pinned timeout -k 5 120 "$bench" --quick --json "$made/runs.jsonl" \
				</dev/null >"$made/log" 2>&1); then
			echo "guard: run $i failed: $bench --quick:" >&2; tail -5 "$made/log" >&2; exit 1
		fi
		echo "guard: run $i of $nruns_make done (load average $(cut -d' ' -f1 /proc/loadavg))"
	done
	set -- "$made/runs.jsonl"
fi
[ $# -ge 1 ] || usage
for f in "$@"; do
	[ -r "$f" ] || { echo "guard: cannot read $f" >&2; exit 2; }
done

NPOINTS=6	# what points() finds in a complete --quick run
# the guard's points of JSON lines: "run point value" per point found
# ("-" when the bench wrote null). pmrep-bench writes flat objects, one a
# line, strings without escapes: a pattern per key is enough (no jq)
points() { # file...
	awk '
	function num(k,  m) {
		if (!match($0, "\"" k "\":-?[0-9][0-9.eE+-]*"))
			return "-"
		m = substr($0, RSTART, RLENGTH)
		sub(/^"[^"]*":/, "", m)
		return m + 0
	}
	function str(k,  m) {
		if (!match($0, "\"" k "\":\"[^\"]*\""))
			return ""
		m = substr($0, RSTART, RLENGTH)
		sub(/^"[^"]*":"/, "", m)
		sub(/"$/, "", m)
		return m
	}
	function emit(name, v) {
		print run, name, (v == "-" ? "-" : sprintf("%.4f", v))
	}
	str("provider") != "tcp" { next }
	{ run = str("run"); sw = str("sweep"); lv = str("level") }
	# 4 KiB persists (--pipe-sizes may add other sizes)
	sw == "pipe" && lv == "mirror" && num("size") == 4096 && (num("window") == 16 || num("window") == 64) {
		c = num("cpu_us_op"); r = num("raw_cpu_us_op")
		emit("pipe.w" num("window") ".cpu", c == "-" || r == "-" || r <= 0 ? "-" : c / r)
	}
	sw == "lat" && lv == "mirror" && (num("size") == 64 || num("size") == 4096) {
		emit("lat.mirror." num("size") ".p50", num("ratio"))
		emit("lat.mirror." num("size") ".cpu", num("cpu_ratio"))
	}' "$@"
}

# ------------------------------------------------------------ --update
if [ "$update" = 1 ]; then
	pts=$(points "$@")
	[ -n "$pts" ] || { echo "guard: no guard points in $*" >&2; exit 77; }
	# complete runs only: a narrowed run (a re-measurement) has some points
	runs=$(echo "$pts" | awk -v np="$NPOINTS" '{ n[$1]++; if ($3 == "-") bad[$1] = 1 }
		END { for (r in n) if (n[r] == np && !bad[r]) print r }' | sort)
	nruns=$(echo "$runs" | grep -c .)
	[ "$nruns" -ge 1 ] || { echo "guard: no complete run (all $NPOINTS points measured) in $*" >&2; exit 77; }
	runlist=" $(tr '\n' ' ' <<<"$runs")"	# " r1 r2 ... ": index() finds " r "
	[ "$nruns" -ge 10 ] || echo "guard: warning: $nruns run(s); a median of 10 or more is steadier" >&2
	dates=$(cat "$@" | awk -v runs="$runlist" '
		match($0, /"run":"[^"]*"/) && index(runs, " " substr($0, RSTART + 7, RLENGTH - 8) " ") &&
		match($0, /"date":"[^"]*"/) { print substr($0, RSTART + 8, RLENGTH - 9) }' | sort -u)
	rnds=$(cat "$@" | awk -v runs="$runlist" '
		match($0, /"run":"[^"]*"/) && index(runs, " " substr($0, RSTART + 7, RLENGTH - 8) " ") &&
		/"sweep":"(lat|pipe)"/ && match($0, /"rounds":[0-9]+/) { print substr($0, RSTART + 9, RLENGTH - 9) }' |
		sort -un | tr '\n' ' ')
	commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ -n "$(git -C "$here" status --porcelain -- "$here/.." 2>/dev/null)" ] && commit="$commit (with uncommitted changes)"
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
	tmp=$(mktemp) || exit 1
	{
		echo "# pmrep regression guard baseline (bench/guard.sh; docs/PERFORMANCE.md \"Regression guard\")"
		echo "# same-run ratios of pmrep-bench --quick on tcp (127.0.0.1), lower is better;"
		echo "# each point: the median of $nruns complete run(s) (rounds per run: ${rnds% })"
		if [ "$nruns_make" -gt 0 ]; then
			echo "# command: $(pinned_as)pmrep-bench --quick, $nruns_make runs (bench/guard.sh --update --runs $nruns_make)"
		else
			echo "# command: taskset -c 0 pmrep-bench --quick, as the bench stage runs it (bench/guard.sh --update $*)"
		fi
		echo "# runs:${runlist% }"
		echo "# date: runs of $(echo "$dates" | head -1) .. $(echo "$dates" | tail -1); written $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "# commit: $commit (the guard's tree when --update ran)"
		echo "# machine: $(uname -n), $(uname -sr) $(uname -m), $(nproc) CPU(s)${cpu:+, $cpu}, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
		echo "# point               ratio   # runs: n, min-max"
		echo "$pts" | awk -v runs="$runlist" '
			index(runs, " " $1 " ") { v[$2] = v[$2] " " $3; if (!($2 in o)) { o[$2] = ++n; name[n] = $2 } }
			END {
				for (i = 1; i <= n; i++) {
					k = split(substr(v[name[i]], 2), a, " ")
					for (x = 2; x <= k; x++)	# insertion sort: a handful of runs
						for (y = x; y > 1 && a[y - 1] + 0 > a[y] + 0; y--) {
							t = a[y]; a[y] = a[y - 1]; a[y - 1] = t
						}
					med = k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
					printf "%-19s %7.3f   # n %d, %.2f-%.2f\n", name[i], med, k, a[1], a[k]
				}
			}'
	} >"$tmp"
	if ! { mkdir -p "$(dirname "$baseline")" && mv "$tmp" "$baseline"; }; then
		rm -f "$tmp"; exit 1
	fi
	echo "guard: wrote $baseline from $nruns run(s):"
	cat "$baseline"
	exit 0
fi

# ------------------------------------------------------------- check
[ $# -eq 1 ] || usage
run_file=$1
[ -n "$bench$from" ] || { echo "guard: --bench PMREP_BENCH or --remeasure-from FILE is needed" >&2; exit 2; }
[ -r "$baseline" ] || { echo "guard: no baseline $baseline (make one: $0 --update RUN.jsonl...)" >&2; exit 2; }
[ -z "$from" ] || [ -r "$from" ] || { echo "guard: cannot read $from" >&2; exit 2; }

pts=$(points "$run_file")
run=$(echo "$pts" | awk 'NF { r = $1 } END { print r }')
[ -n "$run" ] || { echo "guard: no guard points in $run_file (did pmrep-bench --quick run?)"; exit 77; }

tmpd=$(mktemp -d) || exit 1
trap 'rm -rf "$tmpd"' EXIT

# pmrep-bench arguments that measure one point alone
narrow() { # point
	case $1 in
	pipe.w*.cpu) local w=${1#pipe.w}; echo "--sweep pipe --windows ${w%.cpu}" ;;
	lat.mirror.*) local s=${1#lat.mirror.}; echo "--sweep lat --level mirror --sizes ${s%.*}" ;;
	*) return 1 ;;
	esac
}

# the point's ratio in a second measurement: the last value for it in
# --remeasure-from, or a narrowed pmrep-bench run (one per set of
# arguments: lat.mirror.64.p50 and .cpu come from the same run)
remeasure() { # point
	if [ -n "$from" ]; then
		points "$from" | awk -v p="$1" '$2 == p { v = $3 } END { print (v == "" ? "-" : v) }'
		return
	fi
	local args key out
	args=$(narrow "$1") || { echo -; return; }
	key=$(echo "$args" | tr -c 'a-z0-9\n' '_')
	out=$tmpd/$key.jsonl
	if [ ! -e "$tmpd/$key.done" ]; then
		# shellcheck disable=SC2086
		(cd "$tmpd" && pinned timeout -k 5 120 "$bench" --quick $args --rounds "$rounds" \
			--json "$out" </dev/null >"$tmpd/$key.log" 2>&1) ||
			{ echo "guard: re-measurement failed: $bench --quick $args --rounds $rounds:" >&2
			  tail -5 "$tmpd/$key.log" >&2; }
		touch "$tmpd/$key.done"
		echo "$(pinned_as)$bench --quick $args --rounds $rounds" >>"$tmpd/commands"
	fi
	[ -s "$out" ] || { echo -; return; }
	points "$out" | awk -v p="$1" '$2 == p { v = $3 } END { print (v == "" ? "-" : v) }'
}

# factor > limit, as awk's numbers (no floats in bash)
over() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > b + 0) }'; }
fact() { awk -v m="$1" -v b="$2" 'BEGIN { printf "%.4f", m / b }'; }
fmt() { # value [decimals]
	if [ "$1" = - ]; then echo -; else awk -v v="$1" -v d="${2:-2}" 'BEGIN { printf "%.*f", d, v }'; fi
}

echo "regression guard: run $run of $run_file against $baseline"
echo "  a point FAILS when its ratio is worse than ${factor}x its baseline in the run and again when re-measured"
printf '  %-19s %8s %8s %6s %11s %6s  %s\n' point baseline measured factor re-measured factor verdict
nfail=0 nworse=0 nok=0 nunm=0 worst=0 worst_pt=""
while read -r name base _; do
	case $name in ''|'#'*) continue ;; esac
	if ! over "$base" 0; then
		echo "guard: bad baseline line for $name: '$base'" >&2; exit 2
	fi
	m=$(echo "$pts" | awk -v r="$run" -v p="$name" '$1 == r && $2 == p { v = $3 } END { print (v == "" ? "-" : v) }')
	r=- f1=- f2=-
	if [ "$m" = - ]; then
		verdict=UNMEASURED; nunm=$((nunm + 1))
	else
		f1=$(fact "$m" "$base")
		over "$f1" "$worst" && { worst=$f1; worst_pt=$name; }
		if ! over "$f1" "$factor"; then
			verdict=ok; nok=$((nok + 1))
		else
			r=$(remeasure "$name")
			if [ "$r" = - ]; then
				verdict="UNCONFIRMED (no re-measurement)"; nunm=$((nunm + 1))
			else
				f2=$(fact "$r" "$base")
				if over "$f2" "$factor"; then
					verdict=FAIL; nfail=$((nfail + 1))
				else
					verdict="WORSE (once; the re-measurement is within)"; nworse=$((nworse + 1))
				fi
			fi
		fi
	fi
	printf '  %-19s %8s %8s %6s %11s %6s  %s\n' "$name" "$(fmt "$base")" "$(fmt "$m")" "$(fmt "$f1" 3)" \
		"$(fmt "$r")" "$(fmt "$f2" 3)" "$verdict"
done <"$baseline"
[ -s "$tmpd/commands" ] && sed 's/^/  re-measured with: /' "$tmpd/commands"
echo "guard: $((nok + nworse + nfail + nunm)) points: $nok ok, $nworse WORSE once, $nfail FAIL, $nunm unmeasured;" \
	"worst factor in the run $(fmt "$worst" 3)${worst_pt:+ ($worst_pt)}"
[ "$nfail" -gt 0 ] && { echo "guard: FAILED (a ratio worse than ${factor}x its baseline twice in a row;" \
	"an intended change refreshes the baseline: bench/guard.sh --update RUN.jsonl...)"; exit 1; }
[ "$nunm" -gt 0 ] && { echo "guard: could not judge every point (not measured)"; exit 77; }
echo "guard: passed"
exit 0
