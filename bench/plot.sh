#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench/plot.sh -- turn pmrep-bench's JSON lines into PNG plots with gnuplot.
#
# Usage: bench/plot.sh [RESULTS.jsonl [OUTDIR]]
#   (defaults: pmrep-bench.jsonl, the current directory)
# Writes, per provider found in the file (the latest run of each):
#   pmrep-<provider>-latency.png     p50 and p99 latency vs record size
#                                    (raw, mirror, librpma, and the floor)
#   pmrep-<provider>-throughput.png  MiB/s vs queue depth (raw) and the floor
# Needs gnuplot (Debian: gnuplot-nox) and python3 (to read the JSON).
set -eu

in=${1:-pmrep-bench.jsonl}
out=${2:-.}
command -v gnuplot >/dev/null 2>&1 || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "plot.sh: python3 not found" >&2; exit 1; }
[ -r "$in" ] || { echo "plot.sh: cannot read $in" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# split the latest run of each provider into gnuplot data files
python3 - "$in" "$tmp" <<'EOF'
import json, sys, os
src, tmp = sys.argv[1], sys.argv[2]
rows = []
for line in open(src):
    line = line.strip()
    if not line.startswith('{'):
        continue
    try:
        rows.append(json.loads(line))
    except ValueError:
        pass
latest = {}
for r in rows:
    p = r.get('provider')
    if p and r.get('run', '') >= latest.get(p, ''):
        latest[p] = r.get('run', '')
def num(v):
    return 'NaN' if v is None else repr(v)
for prov, run in latest.items():
    sel = [r for r in rows if r.get('provider') == prov and r.get('run') == run]
    meta = sel[0]
    with open(os.path.join(tmp, prov + '.title'), 'w') as f:
        f.write('%s, %s%s, %s, wait %s' % (prov, meta.get('host', ''),
                ' (soft-RoCE guest)' if meta.get('in_vm') else '',
                meta.get('date', ''), meta.get('wait', '')))
    for level in ('raw', 'mirror', 'librpma'):
        pts = sorted((r for r in sel if r['sweep'] == 'lat' and r['level'] == level),
                     key=lambda r: r['size'])
        with open(os.path.join(tmp, '%s-lat-%s.dat' % (prov, level)), 'w') as f:
            for r in pts:
                f.write('%d %s %s %s %s\n' % (r['size'], num(r['p50_us']),
                        num(r['p99_us']), num(r.get('floor_p50_us')),
                        num(r.get('floor_p99_us'))))
    pts = sorted((r for r in sel if r['sweep'] == 'bw' and r['level'] == 'raw'),
                 key=lambda r: (r['size'], r['qd']))
    with open(os.path.join(tmp, '%s-bw.dat' % prov), 'w') as f:
        last = None
        for r in pts:
            if last is not None and r['size'] != last:
                f.write('\n\n')
            last = r['size']
            f.write('%d %s %s %d\n' % (r['qd'], num(r['mib_per_s']),
                    num(r.get('floor_mib_per_s')), r['size']))
EOF

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
	if [ -s "$d-lat-raw.dat" ]; then
		lat="$lat, '$d-lat-raw.dat' using 1:4 with lines dashtype 2 lw 2 title 'floor p50'"
	elif [ -s "$d-lat-mirror.dat" ]; then
		lat="$lat, '$d-lat-mirror.dat' using 1:4 with lines dashtype 2 lw 2 title 'floor p50'"
	fi
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
