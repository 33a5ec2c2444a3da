#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the libFuzzer targets (tcp provider; replication wire formats) with clang
# (-fsanitize=fuzzer,address,undefined), runs every input of the committed
# regression corpus (tests/fuzz/corpus/<target>), then fuzzes each target
# for a bounded time. New inputs go to the build directory, not the corpus.
#
#   tests/fuzz/run.sh                 20 s per tcp target, 10 s per repl one (CI)
#   PMREP_FUZZ_SECONDS=300 tests/fuzz/run.sh
#   PMREP_FUZZ_OUT=/tmp/fz tests/fuzz/run.sh   build directory
#   PMREP_FUZZ_TARGETS=tcp_conn tests/fuzz/run.sh   only some targets
#   PMREP_FUZZ_JOBS=2                 builds and fuzzing runs at a time (default: 2, or 1
#                                     on a single CPU)
# The builds run PMREP_FUZZ_JOBS at a time, then the targets do (each for its
# own seconds, as when run one after the other); each build's and each
# target's output is printed in one piece when it ends.
# Exit status: 0, or non-zero on a build failure or any finding (the
# crashing input is left as <out>/crash-* / leak-* / timeout-*).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SECS=${PMREP_FUZZ_SECONDS:-20}
# the replication decoders are small: 10 s each (PMREP_FUZZ_SECONDS sets all)
RSECS=${PMREP_FUZZ_SECONDS:+$SECS}
RSECS=${RSECS:-10}
OUT=${PMREP_FUZZ_OUT:-$ROOT/build-fuzz}
CC=${PMREP_FUZZ_CC:-clang}
JOBS=${PMREP_FUZZ_JOBS:-$(( $(nproc) > 1 ? 2 : 1 ))}
case $JOBS in ''|*[!0-9]*|0) echo "fuzz: PMREP_FUZZ_JOBS must be a positive number" >&2; exit 2 ;; esac
TARGETS=${PMREP_FUZZ_TARGETS:-tcp_wire tcp_conn tcp_tls repl_hdr repl_msg descriptors}
mkdir -p "$OUT"

FLAGS="-g -O1 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-fno-omit-frame-pointer -I$ROOT/include -I$ROOT/src"
# the live-conn targets: the generic layer and the tcp provider (verbs stubbed)
CONN_SRCS="$ROOT/tests/fuzz/fuzz_verbs_stub.c $ROOT/src/common/*.c
	$ROOT/src/transport/*.c $ROOT/src/transport/tcp/*.c
	-lssl -lcrypto -libverbs -lrdmacm -lpthread"
# the replication wire formats: replica header, private data + messages,
# and the MR / peer cfg descriptors of the handshake
REPL_LIBS="$ROOT/src/repl/replica_hdr.c $ROOT/src/repl/msg.c $ROOT/src/repl/auth.c
	$ROOT/src/repl/admission.c
	$ROOT/tests/fuzz/fuzz_verbs_stub.c $ROOT/src/common/log.c $ROOT/src/common/clock.c
	$ROOT/src/transport/*.c $ROOT/src/transport/tcp/*.c $ROOT/src/pmem/*.c
	-lpmem2 -lssl -lcrypto -libverbs -lrdmacm -lpthread"

# print file $1 in one piece: the other job's output never cuts into it
print_whole() { flock "$OUT/.print.lock" cat "$1"; }

# build_one NAME: the compiler line of one binary, its output to $OUT/NAME.build.log
build_one() {
	local name=$1 flags=$FLAGS srcs
	case $name in
	fuzz_tcp_wire)	# the codec alone
		srcs="$ROOT/tests/fuzz/fuzz_tcp_wire.c $ROOT/src/transport/tcp/tcp_wire.c" ;;
	fuzz_tcp_conn)	# a live conn
		srcs="$ROOT/tests/fuzz/fuzz_tcp_conn.c $CONN_SRCS" ;;
	fuzz_tcp_tls)	# the TLS 1.3 session layer under the frames (server side)
		srcs="$ROOT/tests/fuzz/fuzz_tcp_tls.c $CONN_SRCS" ;;
	fuzz_repl_hdr|fuzz_repl_msg|fuzz_descriptors)
		srcs="$ROOT/tests/fuzz/$name.c $REPL_LIBS" ;;
	gen_repl_corpus)	# their seed generator (not run here: see its header)
		flags=$(echo "$FLAGS" | sed 's/fuzzer,//')
		srcs="$ROOT/tests/fuzz/gen_repl_corpus.c $REPL_LIBS" ;;
	*) echo "fuzz: unknown binary $name"; return 1 ;;
	esac
	local log=$OUT/$name.build.log t0=$SECONDS
	# shellcheck disable=SC2086
	if $CC $flags -o "$OUT/$name" $srcs >"$log" 2>&1; then
		echo "fuzz: built $name in $((SECONDS - t0)) s" >>"$log"
		print_whole "$log"
	else
		echo "fuzz: building $name FAILED" >>"$log"
		print_whole "$log"
		return 1
	fi
}

# fuzz_one TARGET: its regression corpus, then fuzzing; the report in one piece
fuzz_one() {
	local t=$1 secs corpus work log rc=0
	case $t in tcp_*) secs=$SECS ;; *) secs=$RSECS ;; esac
	corpus=$ROOT/tests/fuzz/corpus/$t
	work=$OUT/corpus-$t
	log=$OUT/$t.report
	mkdir -p "$work"
	(
		echo "fuzz: $t: regression corpus ($(ls "$corpus" | wc -l) inputs)"
		if ! "$OUT/fuzz_$t" -runs=0 -timeout=20 -artifact_prefix="$OUT/$t-" \
				"$corpus" 2>"$OUT/$t-regress.log"; then
			tail -n 40 "$OUT/$t-regress.log"
			echo "fuzz: $t: FAILED on its regression corpus"
			exit 1
		fi
		echo "fuzz: $t: fuzzing for $secs s"
		if ! "$OUT/fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
				-print_final_stats=1 -artifact_prefix="$OUT/$t-" \
				"$work" "$corpus" 2>"$OUT/$t-fuzz.log"; then
			tail -n 60 "$OUT/$t-fuzz.log"
			echo "fuzz: $t: FINDING (see $OUT/$t-fuzz.log and $OUT/$t-*)"
			exit 1
		fi
		grep -E "stat::number_of_executed_units|stat::new_units_added" \
			"$OUT/$t-fuzz.log" | sed "s/^/fuzz: $t: /" || true
	) >"$log" 2>&1 || rc=$?
	print_whole "$log"
	return $rc
}

# pool FUNCTION ITEM...: FUNCTION on every item, JOBS at a time, started in
# the items' order; every item runs; fails if any of them failed
export -f print_whole build_one fuzz_one
export ROOT OUT CC FLAGS CONN_SRCS REPL_LIBS SECS RSECS
pool() {
	local fn=$1
	shift
	printf '%s\n' "$@" | xargs -P "$JOBS" -n 1 bash -c "$fn \"\$1\"" "$fn"
}

echo "fuzz: building with $($CC --version | head -n 1), $JOBS at a time"
# all of them, whatever PMREP_FUZZ_TARGETS says (each must keep building);
# the biggest compiles first
pool build_one fuzz_tcp_conn fuzz_tcp_tls fuzz_repl_msg fuzz_descriptors \
	fuzz_repl_hdr gen_repl_corpus fuzz_tcp_wire || { echo "fuzz: a build failed"; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# the longest runs first (tcp_*), so that the last pair ends close together
ORDER=
for t in $TARGETS; do case $t in tcp_*) ORDER="$ORDER $t" ;; esac; done
for t in $TARGETS; do case $t in tcp_*) ;; *) ORDER="$ORDER $t" ;; esac; done
# shellcheck disable=SC2086
pool fuzz_one $ORDER || { echo "fuzz: FAILED (a finding or a regression above)"; exit 1; }
echo "fuzz: no findings"
