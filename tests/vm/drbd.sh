#!/bin/bash
# tests/vm/drbd.sh -- DRBD beside pmrep: DRBD 8.4 protocol C over tcp against pmrep's mirror on
# the tcp provider, on the same link (loopback inside one guest kernel), both plaintext, both on
# RAM, in one qemu guest (run-in-vm.sh, Debian 12's 6.1 kernel, whose in-tree drbd module is
# DRBD 8.4.11). A benchmark behind its own command, not a stage of scripts/test.sh.
#
# In the guest:
#   1. DRBD: four RAM disks (brd, PMREP_DRBD_DISK_MB each) and two pairs of DRBD 8.4
#      resources on the one kernel, each resource the other's peer: r0 (/dev/drbd0 on /dev/ram0,
#      127.0.0.1:7789) with r1 (/dev/drbd1 on /dev/ram1, 127.0.0.2:7789), and r2 / r3 the same
#      on ram2 / ram3 and port 7790, holding the ext4 for SQLite. Protocol C (a write completes
#      once it is on both disks), no cram-hmac-alg, no data-integrity-alg, no verify-alg
#      (plaintext, nothing checksummed), every other option DRBD's default. drbd-utils 9.x
#      drives the 8.4 kernel module: drbdadm reads the module's version and runs its
#      drbdadm-84 / drbdsetup-84 (the run prints the version drbdadm saw and the drbdsetup-84
#      calls of `up r0`). Meta data internal; the initial sync skipped (new-current-uuid
#      --clear-bitmap: fresh RAM disks are zeros on both sides); r0 and r2 primary. Replication
#      is checked to be real: 1 MiB of random bytes written through /dev/drbd0 must be on
#      /dev/ram1, the peer's disk. ext4 on /dev/drbd2 (inode tables and journal zeroed at mkfs,
#      not by a lazy init during the measurements), mounted on /mnt/drbd.
#   2. PMREP_DRBD_ROUNDS rounds. In each, point by point, DRBD and pmrep back to back (DRBD
#      first in odd rounds, pmrep first in even ones): the machine is shared and the guest is
#      emulated, so what is compared is measured seconds apart.
#      DRBD -- fio on /dev/drbd0, random writes in its first 64 MiB, O_DIRECT + O_SYNC (each
#        write FUA: on both disks when it completes), PMREP_DRBD_SECS per point after
#        PMREP_DRBD_RAMP s of ramp: 512 B and 4 KiB at depth 1 (ioengine psync: p50 and p99 of
#        the whole write call) and at depth 16 and 64 (ioengine libaio, iodepth N: MiB/s, IOPS);
#      pmrep -- pmrep-bench, tcp provider, --mirror-tls off, its default --wait block,
#        --ms PMREP_DRBD_SECS*1000, --rounds 1: at depth 1 `--sweep lat --level mirror --sizes S`
#        (pmrep_mirror_persist, one at a time, 1 replica: p50, p99; the tcp ping-pong floor of
#        the same size comes with it), at depth N `--sweep pipe --pipe-only mirror --windows N`
#        (persist_async, N outstanding: MiB/s) -- at 4 KiB; at 512 B too only when pmrep-bench
#        has --pipe-sizes (the table says when it has not);
#      SQLite -- bench/sqlite-bench --tls off --replicas 1 --disk /mnt/drbd: stock SQLite (WAL,
#        synchronous=FULL: an fdatasync per commit) on the ext4 on /dev/drbd2 against
#        pmrep-sqlite with one replica, plaintext, and its 4 KiB persist floor; single-row INSERT
#        commits (PMREP_DRBD_COMMITS per point), locking NORMAL and EXCLUSIVE.
#   The guest only measures (its python3 takes 20 s to start under TCG); the raw outputs go to
#   PMREP_DRBD_OUT and the host makes the table from them:
#   3. per size and depth, DRBD and pmrep (median [min-max] of the rounds) and pmrep/DRBD taken
#      within each round (median [min-max]): at depth 1 of p50 and p99 (below 1: pmrep faster),
#      at depth 16 and 64 of MiB/s and IOPS (above 1: pmrep faster); the tcp ping-pong floor;
#      SQLite's commits/s and p50 per commit; the host's load average before and after; then one
#      SUMMARY line. The table is also written to PMREP_DRBD_OUT/table.txt.
#
# The same memory kind on both sides: DRBD's disks are brd RAM disks (guest RAM behind a block
# device: no device latency, and no volatile cache, so the block layer drops DRBD's flushes and
# FUAs to them); pmrep's log (the application's mapping) and its target's replica file are in
# /dev/shm (tmpfs: guest RAM; a persist there is msync, which has no device to write to). Not a
# brd-backed ext4 for pmrep: a persist would then go through a file system (msync writing
# page-cache pages back to the RAM disk, journal commits) that DRBD's writes to its raw device
# never meet; and pmrep-bench and sqlite-bench keep their files in /dev/shm by design.
# The link: DRBD between 127.0.0.1 and 127.0.0.2, pmrep between 127.0.0.1 and itself: both the
# guest's loopback device, one kernel's tcp on both ends (the rig's dummy0 is rxe's: unused).
#
# Caveats: TCG emulation on a shared 2-core host (absolute figures swing by several times
# within minutes; only the ratios, taken seconds apart, mean something, and those swing too);
# one kernel plays both nodes (the peer's work competes with the primary's for the same 2
# vCPUs, for both systems alike); RAM disks (no device time: what is compared is the
# replication path, the kernel's block layer + DRBD against pmrep's user-space mirror).
#
# Usage:  tests/vm/drbd.sh                (PMREP_BUILD_DIR, default the cwd: a configured and
#                                          built tree: bench/pmrep-bench, bench/sqlite-bench,
#                                          tools/pmrep-target)
#         tests/vm/drbd.sh --table OUT    only the table, from a run's results in OUT
#         tests/vm/drbd.sh --guest BUILD OUT    (internal: what runs inside the guest)
#
# Host packages: scripts/install-deps.sh --drbd (the rig's, drbd-utils, fio: the guest runs the
#   host's userspace); this script runs it when drbdadm or fio is missing and it is root.
#
# Exit status: 0 it ran (whatever the figures); 77 it cannot run here (no qemu, the guest
#   kernel has no drbd 8.4 or no brd module, the packages cannot be installed); 1 a failure
#   (DRBD would not come up, the replication check or a measurement failed, the guest rig
#   failed or timed out); 2 usage
#
# Knobs (environment):
#   PMREP_DRBD_ROUNDS=3     rounds
#   PMREP_DRBD_SECS=3       seconds per measured point: fio's runtime, pmrep-bench's --ms
#   PMREP_DRBD_RAMP=1       fio's ramp time per point, seconds (pmrep-bench warms up 20 ms)
#   PMREP_DRBD_COMMITS=500  sqlite-bench commits per point (0: no SQLite part)
#   PMREP_DRBD_DISK_MB=256  size of each RAM disk (4 of them; brd allocates on first write)
#   PMREP_DRBD_OUT          where the results go (default BUILD/drbd-bench, emptied first; in
#                           the build dir: the guest's writable share)
#   PMREP_DRBD_TIMEOUT=1500 limit of the guest run, seconds (run-in-vm.sh's VM_TIMEOUT)
#   VM_KERNEL=stock, VM_MEM=2048 and the other VM_* knobs pass through to run-in-vm.sh
set -uo pipefail
trap '' PIPE

here=$(cd "$(dirname "$0")" && pwd -P)
say() { echo "drbd: $*" >&2; }

# ======================================================================== in the guest
guest() {
  local build=$1 out=$2
  local rounds=${PMREP_DRBD_ROUNDS:-3} secs=${PMREP_DRBD_SECS:-3} ramp=${PMREP_DRBD_RAMP:-1}
  local commits=${PMREP_DRBD_COMMITS:-500}
  local conf=/tmp/drbd-bench.conf fails=() t0=$SECONDS
  local bench=$build/bench/pmrep-bench sqlb=$build/bench/sqlite-bench
  export PATH=$PATH:/usr/sbin:/sbin
  export PMREP_PROVIDER=tcp   # the guest has rxe0, which the library would otherwise pick

  # -------- can it run here: the modules VM_MODPROBE asked the guest's init for
  if [ ! -r /proc/drbd ] || [ ! -b /dev/ram3 ]; then
    echo "drbd: this guest kernel ($(uname -r)) has no usable drbd or brd module:"
    [ -r /proc/drbd ] || echo "  no /proc/drbd (module drbd not loaded)"
    [ -b /dev/ram3 ] || echo "  no /dev/ram3 (module brd not loaded with rd_nr=4)"
    sed 's/^/  modprobe: /' /run/vmjob/modprobe.log 2>/dev/null
    return 77
  fi
  local kver
  kver=$(sed -n 's/^version: \([0-9.]*\).*/\1/p' /proc/drbd)
  case $kver in
    8.4.*) ;;
    *) echo "drbd: the kernel's DRBD is '$kver', not 8.4 (this script's configuration is 8.4's)"; return 77 ;;
  esac
  echo "$kver $(uname -r)" > "$out/kernel"

  # -------- DRBD up. drbdadm wants /var/lib/drbd and /run/lock writable (the guest's root is
  # the host's, read-only: a tmpfs over the one, the other is on the guest's tmpfs /run)
  mkdir -p /run/lock /run/drbd
  mount -t tmpfs -o mode=0700 drbdlib /var/lib/drbd || { echo "drbd: cannot mount a tmpfs on /var/lib/drbd"; return 1; }
  # DRBD 8.4 (drbd.conf-8.4(5)): a resource has an `on` section per node; the one named as
  # uname -n is this side. Here both nodes are this kernel, so each resource names the other
  # side by a made-up host name. disable-ip-verification: 127.0.0.2 is no interface's address
  # (the loopback device answers the whole 127/8), which drbdadm would refuse.
  {
    echo "global { usage-count no; disable-ip-verification; }"
    echo "common { net { protocol C; } }"
    local p a b port
    for p in 0 2; do
      a=$p; b=$((p + 1)); port=$((7789 + p / 2))
      echo "resource r$a {"
      echo "  on $(uname -n) { device /dev/drbd$a minor $a; disk /dev/ram$a; meta-disk internal; address 127.0.0.1:$port; }"
      echo "  on peer-of-r$a { device /dev/drbd$b minor $b; disk /dev/ram$b; meta-disk internal; address 127.0.0.2:$port; }"
      echo "}"
      echo "resource r$b {"
      echo "  on $(uname -n) { device /dev/drbd$b minor $b; disk /dev/ram$b; meta-disk internal; address 127.0.0.2:$port; }"
      echo "  on peer-of-r$b { device /dev/drbd$a minor $a; disk /dev/ram$a; meta-disk internal; address 127.0.0.1:$port; }"
      echo "}"
    done
  } > "$conf"
  cp "$conf" "$out/drbd.conf"
  local code
  code=$(drbdadm --version 2>/dev/null | sed -n 's/^DRBD_KERNEL_VERSION_CODE=0x//p')
  [ ${#code} = 6 ] && code=$((16#${code:0:2})).$((16#${code:2:2})).$((16#${code:4:2}))
  echo "== DRBD $kver (kernel $(uname -r)); drbd-utils $(drbdadm --version 2>/dev/null | sed -n 's/^DRBDADM_VERSION=//p')," \
       "whose drbdadm sees kernel DRBD ${code:-?} and runs (up r0, dry run):"
  drbdadm -c "$conf" -d up r0 2>&1 | sed 's/^/  /'
  local r
  for r in r0 r1 r2 r3; do
    drbdadm -c "$conf" -- --force create-md $r >"$out/create-md.$r.log" 2>&1 ||
      { cat "$out/create-md.$r.log"; echo "drbd: create-md $r failed"; return 1; }
  done
  for r in r0 r1 r2 r3; do
    drbdadm -c "$conf" up $r 2>&1 || { echo "drbd: drbdadm up $r failed"; return 1; }
  done
  # wait_state PATTERN: every minor's line in /proc/drbd matches (30 s)
  wait_state() {
    local n=0
    until [ "$(grep -cE "^ *[0-3]: $1" /proc/drbd)" = 4 ]; do
      n=$((n + 1))
      [ $n -gt 300 ] && { cat /proc/drbd; echo "drbd: not every minor reached '$1' within 30 s"; return 1; }
      sleep 0.1
    done
  }
  wait_state 'cs:Connected ' || return 1
  drbdadm -c "$conf" new-current-uuid --clear-bitmap r0 && drbdadm -c "$conf" new-current-uuid --clear-bitmap r2 ||
    { echo "drbd: new-current-uuid --clear-bitmap failed"; return 1; }
  wait_state 'cs:Connected .*ds:UpToDate/UpToDate' || return 1
  drbdadm -c "$conf" primary r0 && drbdadm -c "$conf" primary r2 || { echo "drbd: primary failed"; return 1; }
  sed 's/^/  /' /proc/drbd
  # replication is real: what goes through /dev/drbd0 is on the peer's disk, /dev/ram1
  head -c 1048576 /dev/urandom > /tmp/drbd-check
  dd if=/tmp/drbd-check of=/dev/drbd0 bs=1M count=1 oflag=direct,sync status=none &&
    cmp -n 1048576 /tmp/drbd-check /dev/ram1 ||
    { echo "drbd: 1 MiB written through /dev/drbd0 is not on the peer's disk /dev/ram1"; return 1; }
  echo "== replication check: 1 MiB written through /dev/drbd0 is on /dev/ram1 (the peer's disk)"
  # inode tables and journal zeroed now: a lazy init would write through DRBD during the runs
  mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/drbd2 >"$out/mkfs.log" 2>&1 &&
    mkdir -p /mnt/drbd && mount -t ext4 /dev/drbd2 /mnt/drbd ||
    { cat "$out/mkfs.log"; echo "drbd: ext4 on /dev/drbd2 failed"; return 1; }
  chmod 1777 /mnt/drbd

  # -------- the rounds
  local have_ps=0
  "$bench" --help 2>&1 | grep -q -- '--pipe-sizes' && have_ps=1
  echo "$have_ps" > "$out/pipe-sizes"
  drbd_point() {   # ROUND SIZE DEPTH
    local eng=libaio f=$out/fio.r$1.$2.$3.json
    [ "$3" = 1 ] && eng=psync
    timeout -k 5 $((secs + ramp + 120)) fio --name=drbd --filename=/dev/drbd0 --size=64m \
      --rw=randwrite --bs="$2" --direct=1 --sync=1 --ioengine=$eng --iodepth="$3" \
      --time_based --runtime="$secs" --ramp_time="$ramp" --lat_percentiles=1 \
      --norandommap --randrepeat=0 --output-format=json > "$f" 2>"$f.err" ||
      { echo "drbd: fio $2 B depth $3 (round $1) failed:"; sed 's/^/  /' "$f.err"; fails+=("fio $2/$3 round $1"); }
  }
  pmrep_point() {   # ROUND SIZE DEPTH
    local f=$out/pmrep-bench.r$1.$2.$3 args
    if [ "$3" = 1 ]; then
      args=(--sweep lat --level mirror --sizes "$2")
    elif [ "$2" = 4096 ] || [ $have_ps = 1 ]; then
      args=(--sweep pipe --pipe-only mirror --windows "$3")
      [ $have_ps = 1 ] && args+=(--pipe-sizes "$2")
    else
      return 0
    fi
    timeout -k 5 $((secs * 4 + 120)) "$bench" --provider tcp --mirror-tls off "${args[@]}" \
      --rounds 1 --ms $((secs * 1000)) --json "$f.jsonl" > "$f.txt" 2>&1 ||
      { echo "drbd: pmrep-bench ${args[*]} (round $1) failed:"; sed 's/^/  /' "$f.txt"; fails+=("pmrep-bench $2/$3 round $1"); }
  }
  sql_round() {   # ROUND
    local o=$out/sqlite-bench.r$1.txt
    timeout -k 5 $((commits / 5 + 300)) "$sqlb" "$build/tools" --commits "$commits" --tls off --replicas 1 \
      --disk /mnt/drbd > "$o" 2>&1 || { sed 's/^/  /' "$o"; fails+=("sqlite-bench round $1"); return; }
    if grep -q 'not measured' "$o"; then sed 's/^/  /' "$o"; fails+=("sqlite-bench round $1: a point not measured"); fi
  }
  local i ta tb size depth
  for ((i = 1; i <= rounds; i++)); do
    ta=$SECONDS
    for depth in 1 16 64; do
      for size in 512 4096; do
        if [ $((i % 2)) = 1 ]; then
          drbd_point $i $size $depth; pmrep_point $i $size $depth
        else
          pmrep_point $i $size $depth; drbd_point $i $size $depth
        fi
      done
    done
    tb=$SECONDS
    [ "$commits" -gt 0 ] && sql_round $i
    echo "== round $i of $rounds ($( [ $((i % 2)) = 1 ] && echo "DRBD first" || echo "pmrep first")):" \
      "$((SECONDS - ta)) s (DRBD and pmrep $((tb - ta)) s, SQLite $((SECONDS - tb)) s)"
  done
  umount /mnt/drbd
  sed 's/^/  /' /proc/drbd
  echo "== guest part: $((SECONDS - t0)) s; raw results in $out"
  if [ ${#fails[@]} != 0 ]; then
    printf 'drbd: FAILED: %s\n' "${fails[@]}"
    return 1
  fi
  return 0
}

# ======================================================================== the table (host)
table() {   # OUT
  python3 - "$1" <<'PY'
import glob, json, os, re, statistics, sys
out = sys.argv[1]
def rd(name, default=""):
    try:
        return open(os.path.join(out, name)).read().strip()
    except OSError:
        return default
meta = dict(l.split("=", 1) for l in rd("meta").splitlines() if "=" in l)
kver, kernel = (rd("kernel", "? ?").split() + ["?"])[:2]
have_ps = rd("pipe-sizes", "0") == "1"
R = []   # {round, sys, size, depth, p50_us, p99_us, iops, mib_s[, floor_p50_us]} and SQLite rows
for f in glob.glob(os.path.join(out, "fio.r*.json")):
    m = re.search(r"fio\.r(\d+)\.(\d+)\.(\d+)\.json$", f)
    try:
        w = json.load(open(f))["jobs"][0]["write"]
    except (ValueError, KeyError, IndexError):
        continue
    lat = (w.get("lat_ns") or {}).get("percentile") or w["clat_ns"]["percentile"]
    R.append({"round": int(m[1]), "sys": "drbd", "size": int(m[2]), "depth": int(m[3]),
              "p50_us": lat["50.000000"] / 1e3, "p99_us": lat["99.000000"] / 1e3,
              "iops": w["iops"], "mib_s": w["bw"] / 1024.0})
for f in glob.glob(os.path.join(out, "pmrep-bench.r*.jsonl")):
    m = re.search(r"pmrep-bench\.r(\d+)\.\d+\.\d+\.jsonl$", f)
    for line in open(f):
        p = json.loads(line)
        if p.get("level") != "mirror":
            continue
        row = {"round": int(m[1]), "sys": "pmrep", "size": p["size"], "p50_us": p["p50_us"],
               "p99_us": p["p99_us"], "iops": p["ops_per_s"], "mib_s": p["mib_per_s"]}
        if p["sweep"] == "lat":
            row.update(depth=1, floor_p50_us=p.get("floor_p50_us"))
        elif p["sweep"] == "pipe":
            row.update(depth=p["window"])
        else:
            continue
        R.append(row)
sql_commits = None
for f in glob.glob(os.path.join(out, "sqlite-bench.r*.txt")):
    rnd = int(re.search(r"\.r(\d+)\.txt$", f)[1])
    for line in open(f):
        m = re.match(r"sqlite-bench .*: (\d+) single-row", line)
        if m:
            sql_commits = int(m[1])
        m = re.match(r"\s+(pmrep, 1 replica|stock, /mnt/drbd \(ext4\)|floor: 4 KiB persist, 1 replica)(?:, (NORMAL|EXCLUSIVE))?\s+(\d+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            who = "floor" if m[1].startswith("floor") else "pmrep" if m[1].startswith("pmrep") else "drbd"
            R.append({"round": rnd, "sys": who, "sql": m[2] or "-", "commits_s": float(m[3]),
                      "p50_us": float(m[4]), "p99_us": float(m[5])})
rounds = len({r["round"] for r in R})

def pick(sys_, size, depth, key):
    return {r["round"]: r[key] for r in R if r["sys"] == sys_ and r.get("size") == size
            and r.get("depth") == depth and r.get(key) is not None}
def fmt(v):
    return "-" if v is None else "%.0f" % v if v >= 100 else "%.1f" % v if v >= 10 else "%.2f" % v
def med(d):
    if not d:
        return "-"
    v = list(d.values())
    if len(v) == 1:
        return fmt(v[0])
    return "%s [%s-%s]" % (fmt(statistics.median(v)), fmt(min(v)), fmt(max(v)))
def ratio(a, b):
    q = [a[k] / b[k] for k in sorted(a) if k in b and b[k]]
    if not q:
        return "-", None
    if len(q) == 1:
        return "%.2f" % q[0], q[0]
    return "%.2f [%.2f-%.2f]" % (statistics.median(q), min(q), max(q)), statistics.median(q)

print("DRBD %s protocol C (tcp 127.0.0.1 <-> 127.0.0.2, brd RAM disks, fio O_DIRECT+O_SYNC) against pmrep's mirror"
      % kver)
print("(tcp provider, plaintext, 127.0.0.1, log and replica in /dev/shm, pmrep-bench); guest kernel %s under TCG, 2 vCPUs"
      % kernel)
print("run %s, commit %s; %d round(s) x %s s per point, DRBD and pmrep back to back per point, the order flipped"
      % (meta.get("date", "?"), meta.get("commit", "?"), rounds, meta.get("secs", "?")))
print("every round; median [min-max] of the rounds; pmrep/DRBD taken within each round. Host load average"
      " (1 min) %s before, %s after" % (meta.get("load_before", "?"), meta.get("load_after", "?")))
print("  depth 1: p50 / p99 of one synchronous write (DRBD: pwrite O_DIRECT|O_SYNC, psync; pmrep:"
      " pmrep_mirror_persist): pmrep/DRBD < 1 = pmrep faster")
print("  depth 16, 64: DRBD libaio iodepth N; pmrep persist_async, window N: pmrep/DRBD > 1 = pmrep faster")
W = "%-5s %5s  %-7s %-24s %-24s %s"
print(W % ("size", "depth", "metric", "DRBD", "pmrep", "pmrep/DRBD"))
summary = {}
for size in (512, 4096):
    for depth, metrics in ((1, ("p50_us", "p99_us")), (16, ("mib_s", "iops")), (64, ("mib_s", "iops"))):
        for m in metrics:
            d, p = pick("drbd", size, depth, m), pick("pmrep", size, depth, m)
            rt, rv = ratio(p, d)
            if not p and depth > 1 and size == 512 and not have_ps:
                rt = "- (no --pipe-sizes in pmrep-bench)"
            name = {"p50_us": "p50 us", "p99_us": "p99 us", "mib_s": "MiB/s", "iops": "IOPS"}[m]
            print(W % (size, depth, name, med(d), med(p), rt))
            if m in ("p50_us", "mib_s"):
                summary[(size, depth)] = rv
print("tcp ping-pong floor p50 (pmrep-bench's, same link, measured with pmrep's depth-1 point): %s us at 512 B,"
      " %s us at 4 KiB" % (med(pick("pmrep", 512, 1, "floor_p50_us")), med(pick("pmrep", 4096, 1, "floor_p50_us"))))
if any("sql" in r for r in R):
    print("SQLite: single-row INSERT commits, WAL, synchronous=FULL, %s per point (sqlite-bench --tls off --replicas 1):"
          % (sql_commits or "?"))
    print("  DRBD: stock SQLite on ext4 on /dev/drbd2 (fdatasync per commit); pmrep: pmrep-sqlite, 1 replica, plaintext")
    W2 = "  %-10s %-10s %-24s %-24s %s"
    print(W2 % ("locking", "metric", "DRBD", "pmrep", "pmrep/DRBD"))
    for mode in ("NORMAL", "EXCLUSIVE"):
        for m, name in (("commits_s", "commits/s"), ("p50_us", "p50 us")):
            d = {r["round"]: r[m] for r in R if r.get("sql") == mode and r["sys"] == "drbd"}
            p = {r["round"]: r[m] for r in R if r.get("sql") == mode and r["sys"] == "pmrep"}
            rt, rv = ratio(p, d)
            print(W2 % (mode, name, med(d), med(p), rt))
            if mode == "NORMAL" and m == "commits_s":
                summary["sql"] = rv
    fl = {r["round"]: r["p50_us"] for r in R if r["sys"] == "floor"}
    print("  (pmrep's floor there, a 4 KiB pmrep_mirror_persist with persist sequences: p50 %s us)" % med(fl))
def s(v):
    return "-" if v is None else "%.2f" % v
print("SUMMARY drbd.sh: %d round(s); pmrep/DRBD p50 at depth 1: 512 B %s, 4 KiB %s; MiB/s at 4 KiB depth 16 %s,"
      " depth 64 %s%s" % (rounds, s(summary.get((512, 1))), s(summary.get((4096, 1))),
                          s(summary.get((4096, 16))), s(summary.get((4096, 64))),
                          "; SQLite commits/s (NORMAL) %s" % s(summary.get("sql")) if "sql" in summary else ""))
PY
}

case ${1:-} in
  --guest) shift; [ $# = 2 ] || { say "--guest BUILD OUT"; exit 2; }; guest "$@"; exit $? ;;
  --table) [ $# = 2 ] && [ -d "$2" ] || { say "--table OUT (a run's results directory)"; exit 2; }
           table "$2" | tee "$2/table.txt"; exit "${PIPESTATUS[0]}" ;;
  -h|--help) sed -n '2,/^set -uo/{/^set -uo/!s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
  '') ;;
  *) say "unknown argument $1"; exit 2 ;;
esac

# ======================================================================== on the host
SRC=$(cd "$here/../.." && pwd -P)
BUILD=${PMREP_BUILD_DIR:-$PWD}
BUILD=$(cd "$BUILD" 2>/dev/null && pwd -P) || { say "no such directory: ${PMREP_BUILD_DIR:-$PWD}"; exit 2; }
for f in bench/pmrep-bench bench/sqlite-bench tools/pmrep-target; do
  [ -x "$BUILD/$f" ] || { say "$BUILD/$f is missing: build pmrep there first (PMREP_BUILD_DIR)"; exit 2; }
done
for v in PMREP_DRBD_ROUNDS PMREP_DRBD_SECS PMREP_DRBD_RAMP PMREP_DRBD_COMMITS PMREP_DRBD_DISK_MB PMREP_DRBD_TIMEOUT; do
  case ${!v:-1} in ''|*[!0-9]*) say "$v must be a number"; exit 2 ;; esac
done
[ "${PMREP_DRBD_ROUNDS:-3}" -ge 1 ] && [ "${PMREP_DRBD_SECS:-3}" -ge 1 ] && [ "${PMREP_DRBD_DISK_MB:-256}" -ge 128 ] ||
  { say "PMREP_DRBD_ROUNDS and PMREP_DRBD_SECS must be at least 1, PMREP_DRBD_DISK_MB at least 128"; exit 2; }
export PATH=$PATH:/usr/sbin:/sbin
command -v qemu-system-x86_64 >/dev/null || { say "no qemu-system-x86_64 (scripts/install-deps.sh --drbd): cannot run here"; exit 77; }
command -v python3 >/dev/null || { say "no python3 (scripts/install-deps.sh): it makes the table"; exit 77; }
if ! command -v drbdadm >/dev/null || ! command -v fio >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    say "drbdadm or fio missing: scripts/install-deps.sh --drbd"
    "$SRC/scripts/install-deps.sh" --drbd >&2 || { say "install-deps.sh --drbd failed: cannot run here"; exit 77; }
  fi
  command -v drbdadm >/dev/null && command -v fio >/dev/null ||
    { say "no drbdadm or fio (as root: scripts/install-deps.sh --drbd): cannot run here"; exit 77; }
fi
OUT=${PMREP_DRBD_OUT:-$BUILD/drbd-bench}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd -P) || { say "cannot create $OUT"; exit 2; }
case $OUT in "$BUILD"/*) ;; *) say "PMREP_DRBD_OUT must lie inside the build dir (the guest's writable share)"; exit 2 ;; esac
rm -f "$OUT"/* 2>/dev/null
MB=${PMREP_DRBD_DISK_MB:-256}
load() { cut -d' ' -f1 /proc/loadavg; }
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "secs=${PMREP_DRBD_SECS:-3}"
  echo "load_before=$(load)"
} > "$OUT/meta"

t0=$SECONDS
cd "$BUILD" || exit 2
# brd: rd_size in KiB; four disks (two resource pairs)
VM_MODPROBE="drbd; brd rd_nr=4 rd_size=$((MB * 1024))" VM_TIMEOUT=${PMREP_DRBD_TIMEOUT:-1500} \
  VM_RW_DIRS=$BUILD VM_RO_DIRS="$SRC${VM_RO_DIRS:+:$VM_RO_DIRS}" \
  "$here/run-in-vm.sh" bash "$here/drbd.sh" --guest "$BUILD" "$OUT"
r=$?
echo "load_after=$(load)" >> "$OUT/meta"
case $r in
  0|1) if ls "$OUT"/fio.r*.json >/dev/null 2>&1; then
         echo; table "$OUT" | tee "$OUT/table.txt"
         [ "${PIPESTATUS[0]}" = 0 ] || { say "the table failed"; r=1; }
       fi ;;
esac
case $r in
  0) say "done in $((SECONDS - t0)) s; table: $OUT/table.txt" ;;
  77) say "cannot run here (see above)"; exit 77 ;;
  124) say "the guest hit its time limit (PMREP_DRBD_TIMEOUT) after $((SECONDS - t0)) s"; exit 1 ;;
  123|125) say "the guest rig failed (run-in-vm.sh exit $r)"; exit 1 ;;
  *) say "failed (exit $r) after $((SECONDS - t0)) s"; exit 1 ;;
esac
exit 0
