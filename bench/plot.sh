#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/plot.sh -- turn pmrep-bench's JSON lines into PNG plots with gnuplot.
#
# Usage: bench/plot.sh [RESULTS.jsonl [OUTDIR]]
#   (defaults: pmrep-bench.jsonl, the current directory)
# Writes, per provider found in the file (of each sweep, its latest run):
#   pmrep-<provider>-latency.png     p50 and p99 latency vs record size
#                                    (raw, mirror, librpma, and the floor,
#                                    named: tcp-pingpong, tcp-pingpong-spin ...)
#   pmrep-<provider>-throughput.png  MiB/s vs queue depth (raw) and the floor
#   pmrep-<provider>-cpu.png         CPU time per operation (both processes)
#                                    vs record size (raw, mirror, the floor),
#                                    when the results have it (tcp)
# Needs gnuplot (Debian: gnuplot-nox); the JSON is read with awk.
set -eu

in=${1:-pmrep-bench.jsonl}
out=${2:-.}
command -v gnuplot >/dev/null 2>&1 || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
[ -r "$in" ] || { echo "plot.sh: cannot read $in" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# split the latest run of each provider into gnuplot data files (the JSON
# lines are flat objects, one per line, as pmrep-bench writes them)
awk -v tmp="$tmp" '
function get(k,    m) {
	if (match($0, "\"" k "\":(\"[^\"]*\"|[^,}]*)")) {
		m = substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3)
		gsub(/"/, "", m)
		return m == "null" ? "NaN" : m
	}
	return ""
}
# a number, NaN when absent (results older than the field)
function num(k,    v) {
	v = get(k)
	return v == "" ? "NaN" : v
}
/^\{/ {
	n++
	line[n] = $0
	k = get("provider") SUBSEP get("sweep"); r = get("run")
	if (get("provider") != "" && r >= latest[k]) latest[k] = r
}
END {
	for (i = 1; i <= n; i++) {
		$0 = line[i]
		p = get("provider")
		if (p == "" || get("run") != latest[p SUBSEP get("sweep")])
			continue
		if (!(p in titled)) {
			titled[p] = 1
			f = tmp "/" p ".title"
			printf "%s, %s%s, %s, wait %s", p, get("host"),
				get("in_vm") == "true" ? " (soft-RoCE guest)" : "",
				get("date"), get("wait") > f
			close(f)
		}
		sw = get("sweep"); lv = get("level")
		if (sw == "lat" && (lv == "raw" || lv == "mirror" || lv == "librpma")) {
			print get("size"), get("p50_us"), get("p99_us"),
				get("floor_p50_us"), get("floor_p99_us"),
				num("cpu_us_op"), num("floor_cpu_us_op") > (tmp "/" p "-lat-" lv ".dat")
			if (get("floor") != "")
				print get("floor") > (tmp "/" p "-lat-" lv ".floor")
			if (num("cpu_us_op") != "NaN" && lv != "librpma")
				printf "" > (tmp "/" p ".cpu")
		}
		if (sw == "bw" && lv == "raw")
			print get("size"), get("qd"), get("mib_per_s"),
				get("floor_mib_per_s") > (tmp "/" p "-bw.raw")
	}
}' "$in"

# sizes ascending; throughput: one block per record size, qd ascending
for f in "$tmp"/*-lat-*.dat; do
	[ -e "$f" ] && sort -n -k1,1 "$f" -o "$f"
done
for f in "$tmp"/*-bw.raw; do
	[ -e "$f" ] || continue
	sort -n -k1,1 -k2,2 "$f" | awk '
		NR > 1 && $1 != last { printf "\n\n" }
		{ print $2, $3, $4, $1; last = $1 }' > "${f%.raw}.dat"
done

for t in "$tmp"/*.title; do
	[ -e "$t" ] || { echo "plot.sh: no pmrep-bench results in $in" >&2; exit 1; }
	prov=$(basename "$t" .title)
	title=$(cat "$t")
	d="$tmp/$prov"
	# a plot line only for data files that hold points
	lat=""
	for level in raw mirror librpma; do
		f="$d-lat-$level.dat"
		[ -s "$f" ] || continue
		lat="$lat${lat:+, }'$f' using 1:2 with linespoints title '$level p50', '$f' using 1:3 with points title '$level p99'"
	done
	# the floor of each level, once per floor variant (with --wait poll
	# the raw level's is tcp-pingpong-spin, the mirror's tcp-pingpong)
	floors=" "
	cpu=""
	for level in raw mirror; do
		f="$d-lat-$level.dat"
		[ -s "$f" ] || continue
		cpu="$cpu${cpu:+, }'$f' using 1:6 with linespoints title '$level'"
		[ -s "$d-lat-$level.floor" ] || continue
		name=$(head -n 1 "$d-lat-$level.floor")
		case "$floors" in *" $name "*) continue;; esac
		floors="$floors$name "
		lat="$lat, '$f' using 1:4 with lines dashtype 2 lw 2 title 'floor p50 ($name)'"
		cpu="$cpu, '$f' using 1:7 with lines dashtype 2 lw 2 title 'floor ($name)'"
	done
	if [ -n "$lat" ]; then
		gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set output '$out/pmrep-$prov-latency.png'
set title 'pmrep latency vs record size ($title)'
set logscale xy
set xlabel 'record size (bytes)'
set ylabel 'latency (us)'
set key left top
set grid
plot $lat
EOF
		echo "$out/pmrep-$prov-latency.png"
	fi
	if [ -n "$cpu" ] && [ -e "$d.cpu" ]; then
		gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set output '$out/pmrep-$prov-cpu.png'
set title 'CPU time per operation, both processes, vs record size ($title)'
set logscale xy
set xlabel 'record size (bytes)'
set ylabel 'CPU user+sys per op (us)'
set key left top
set grid
plot $cpu
EOF
		echo "$out/pmrep-$prov-cpu.png"
	fi
	if [ -s "$d-bw.dat" ]; then
		gnuplot <<EOF
set terminal pngcairo size 900,560 noenhanced
set output '$out/pmrep-$prov-throughput.png'
set title 'pmrep write+flush throughput vs queue depth ($title)'
set logscale x 2
set xlabel 'queue depth (write+flush pairs in flight)'
set ylabel 'MiB/s'
set key left top
set grid
plot '$d-bw.dat' using 1:2 with linespoints title 'pmrep raw', \
     '$d-bw.dat' using 1:3 with lines dashtype 2 lw 2 title 'floor (stream)'
EOF
		echo "$out/pmrep-$prov-throughput.png"
	fi
done
