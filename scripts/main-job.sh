#!/bin/bash
# The main job on a machine without RDMA (tcp provider, files under /dev/shm):
# starts pmrep-target on 127.0.0.1 (see below), runs the log-mirror example against it,
# kills the target (SIGKILL) in the middle and restarts it, shows the
# resync, and ends by verifying, range by range, that the source log and the
# replica are identical. Bounded in time; cleans up its processes and files.
#   scripts/main-job.sh [BUILD_DIR]      (default: build-main-job, built if needed)
#   scripts/main-job.sh --help | -h      this text; any other -option: usage error (2)
# Environment: PMREP_MAIN_JOB_ADDR (default 127.0.0.1) is the address both
# sides use; PMREP_PROVIDER (default tcp) the provider. Over verbs in the
# soft-RoCE guest (tests/vm), with a build in the repository tree:
#   tests/vm/run-in-vm.sh -- sh -c 'PMREP_MAIN_JOB_ADDR=$RXE_IP \
#       PMREP_PROVIDER=verbs scripts/main-job.sh build-test/release'
# PMREP_MAIN_JOB_DIR (default /dev/shm): where the work directory (source
# log, replica file, key, logs) is made, e.g. a DAX file system.
# PMREP_MAIN_JOB_REPLICA, PMREP_MAIN_JOB_SOURCE: the replica, the source log
# there instead, e.g. a device DAX (one of the two), used whole: the data
# size is then the device's (less the replica's 4096-byte header). A device
# must read as zeros or hold a replica (a log) of that size. Over verbs the
# source log must be memory the device can register (not fsdax without
# ODP). tests/vm/cxl.sh runs these on CXL persistent memory.
# PMREP_MAIN_JOB_INSTALLED=1: against the installed packages instead of a
# build (no BUILD_DIR, nothing installed or built by CMake): pmrep-target and
# pmrep from PATH, log-mirror compiled with cc and `pkg-config pmrep` from
# libpmrep-dev's copy of the example (this tree's if that is absent).
set -euo pipefail
# the header comment above, up to `set`, is the usage text
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }
case ${1-} in
-h | --help) usage; exit 0 ;;
-*) echo "main-job.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
esac
if [ $# -gt 1 ]; then
	echo "main-job.sh: at most one argument, the build directory" >&2
	usage >&2
	exit 2
fi
cd "$(dirname "$0")/.."
ROOT=$PWD
ADDR=${PMREP_MAIN_JOB_ADDR:-127.0.0.1}
export PMREP_PROVIDER=${PMREP_PROVIDER:-tcp}
INSTALLED=${PMREP_MAIN_JOB_INSTALLED:-0}

if [ "$INSTALLED" = 1 ]; then
	if [ $# -gt 0 ]; then
		echo "main-job.sh: no build directory with PMREP_MAIN_JOB_INSTALLED=1" >&2
		exit 2
	fi
	TARGET=$(command -v pmrep-target) || { echo "main-job.sh: no pmrep-target in PATH" >&2; exit 1; }
	PMREP=$(command -v pmrep) || { echo "main-job.sh: no pmrep in PATH" >&2; exit 1; }
else
	BUILD=${1:-$ROOT/build-main-job}
	case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
	"$ROOT/scripts/install-deps.sh" >/dev/null	# Debian packages, once
	if [ ! -x "$BUILD/tools/pmrep-target" ] || [ ! -x "$BUILD/tools/pmrep" ] ||
			[ ! -x "$BUILD/examples/log-mirror" ]; then
		echo "== building pmrep into $BUILD"
		cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPMREP_BUILD_TESTS=OFF >/dev/null
		cmake --build "$BUILD" -j"$(nproc)" --target pmrep-target pmrep-cli log-mirror >/dev/null
	fi
	TARGET=$BUILD/tools/pmrep-target
	PMREP=$BUILD/tools/pmrep
	LOGM=$BUILD/examples/log-mirror
fi

W=$(mktemp -d "${PMREP_MAIN_JOB_DIR:-/dev/shm}/pmrep-main-job.XXXXXX")
TPID=""
LPID=""
cleanup() {
	# $LPID is `timeout`: SIGTERM, which it passes on to log-mirror (a
	# SIGKILL would leave log-mirror running). The stream of its output
	# (tail --pid) ends with it.
	[ -n "$LPID" ] && kill -TERM "$LPID" 2>/dev/null || true
	[ -n "$TPID" ] && kill -9 "$TPID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT

if [ "$INSTALLED" = 1 ]; then
	src=/usr/share/doc/libpmrep-dev/examples/log-mirror/log-mirror.c
	[ -r "$src" ] || src=$ROOT/examples/log-mirror/log-mirror.c
	echo "== 0. installed tools: $TARGET, $PMREP; log-mirror from $src (pkg-config pmrep $(pkg-config --modversion pmrep))"
	LOGM=$W/log-mirror
	# shellcheck disable=SC2046 # pkg-config's flags are words
	cc -Wall -Wextra -Werror -D_GNU_SOURCE "$src" -o "$LOGM" $(pkg-config --cflags --libs pmrep)
fi

SIZE=$((4 << 20))
REPLICA=${PMREP_MAIN_JOB_REPLICA:-$W/replica}
SOURCE=${PMREP_MAIN_JOB_SOURCE:-$W/source}
devdax_size() { cat "/sys/bus/dax/devices/$(basename "$1")/size"; }
if [ -c "$REPLICA" ] && [ -c "$SOURCE" ]; then
	echo "main-job.sh: the source and the replica cannot both be devices" >&2
	exit 2
elif [ -c "$REPLICA" ]; then	# a device DAX: the whole of it
	SIZE=$(($(devdax_size "$REPLICA") - 4096))
elif [ -c "$SOURCE" ]; then
	SIZE=$(devdax_size "$SOURCE")
fi
head -c 32 /dev/urandom | base64 | head -c 40 >"$W/key"
chmod 600 "$W/key"	# key files others may read are refused
chmod 600 "$W/key"
PORT=$((20000 + RANDOM % 20000))

start_target() { # extra args...
	# no `timeout` wrapper: $TPID must be the target itself, to kill it
	"$TARGET" --path "$REPLICA" --size "$SIZE" --create \
		--address "$ADDR" --port "$PORT" --key-file "$W/key" "$@" \
		>"$W/target.out" 2>>"$W/target.log" &
	TPID=$!
	for _ in $(seq 100); do
		grep -q listening "$W/target.out" 2>/dev/null && { cat "$W/target.out"; return 0; }
		kill -0 "$TPID" 2>/dev/null || break
		sleep 0.1
	done
	echo "pmrep-target did not start:"; cat "$W/target.log"; return 1
}

echo "== 1. replica target on $ADDR:$PORT ($PMREP_PROVIDER) ($REPLICA, $SIZE data bytes; source log $SOURCE)"
start_target

echo "== 2. log-mirror appends 400 records, each acknowledged only once durable on both sides"
: >"$W/logm.out"
timeout -k 5 120 "$LOGM" --file "$SOURCE" --size "$SIZE" --replica "$ADDR:$PORT" \
	--key-file "$W/key" --append 400 --delay-ms 5 --wait-s 60 >"$W/logm.out" 2>"$W/logm.err" &
LPID=$!
# log-mirror's output as it happens, so that each line shows under its
# step: tail stops once log-mirror is gone; logm.shown is what was printed
tail -n +1 -s 0.1 --pid="$LPID" -f "$W/logm.out" | sed -u 's/^/   log-mirror: /' |
	tee "$W/logm.shown" &
SPID=$!
# let it run, then kill the target hard in the middle of the appends
for _ in $(seq 100); do
	grep -q "acked 100" "$W/logm.shown" 2>/dev/null && break
	sleep 0.05
done
echo "== 3. SIGKILL the target while log-mirror is appending"
kill -9 "$TPID"; wait "$TPID" 2>/dev/null || true; TPID=""
# log-mirror's "persist failed" shows here
sleep 1
echo "== 4. restart the target on the same replica file"
start_target
if ! wait "$LPID"; then
	LPID=""; wait "$SPID" || true
	cat "$W/logm.err"; echo "log-mirror failed"; exit 1
fi
LPID=""
wait "$SPID" || true	# the rest of log-mirror's output
grep -q "persist failed" "$W/logm.out" || echo "(the kill landed between two appends: no persist saw it)"
grep -E "resync|attached|in sync" "$W/target.log" "$W/logm.err" 2>/dev/null | sed 's/^/   log: /' | tail -n 8 || true

echo "== 5. stop the target (SIGTERM: clean shutdown)"
kill -TERM "$TPID"; wait "$TPID" 2>/dev/null || true; TPID=""
tail -n 1 "$W/target.log"

echo "== 6. recover the source log and verify every record"
"$LOGM" --file "$SOURCE" --verify

echo "== 7. verify: source and replica, checksums range by range"
"$PMREP" verify "$SOURCE" "$REPLICA" --range 65536
echo "main job: OK"
