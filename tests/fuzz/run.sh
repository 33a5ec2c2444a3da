#!/bin/sh
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
# Exit status: 0, or non-zero on a build failure or any finding (the
# crashing input is left as <out>/crash-* / leak-* / timeout-*).
set -eu
cd "$(dirname "$0")/../.."
ROOT=$PWD
SECS=${PMREP_FUZZ_SECONDS:-20}
# the replication decoders are small: 10 s each (PMREP_FUZZ_SECONDS sets all)
RSECS=${PMREP_FUZZ_SECONDS:+$SECS}
RSECS=${RSECS:-10}
OUT=${PMREP_FUZZ_OUT:-$ROOT/build-fuzz}
CC=${PMREP_FUZZ_CC:-clang}
mkdir -p "$OUT"

FLAGS="-g -O1 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-fno-omit-frame-pointer -I$ROOT/include -I$ROOT/src"

echo "fuzz: building with $($CC --version | head -n 1)"
# the codec alone
# shellcheck disable=SC2086
$CC $FLAGS -o "$OUT/fuzz_tcp_wire" "$ROOT/tests/fuzz/fuzz_tcp_wire.c" \
	"$ROOT/src/transport/tcp/tcp_wire.c"
# a live conn: the generic layer and the tcp provider (verbs stubbed)
# shellcheck disable=SC2086
$CC $FLAGS -o "$OUT/fuzz_tcp_conn" "$ROOT/tests/fuzz/fuzz_tcp_conn.c" \
	"$ROOT/tests/fuzz/fuzz_verbs_stub.c" "$ROOT"/src/common/*.c \
	"$ROOT"/src/transport/*.c "$ROOT"/src/transport/tcp/*.c \
	-lssl -lcrypto -libverbs -lrdmacm -lpthread
# the TLS 1.3 session layer under the frames (server side)
# shellcheck disable=SC2086
$CC $FLAGS -o "$OUT/fuzz_tcp_tls" "$ROOT/tests/fuzz/fuzz_tcp_tls.c" \
	"$ROOT/tests/fuzz/fuzz_verbs_stub.c" "$ROOT"/src/common/*.c \
	"$ROOT"/src/transport/*.c "$ROOT"/src/transport/tcp/*.c \
	-lssl -lcrypto -libverbs -lrdmacm -lpthread
# the replication wire formats: replica header, private data + messages,
# and the MR / peer cfg descriptors of the handshake
REPL_LIBS="$ROOT/src/repl/replica_hdr.c $ROOT/src/repl/msg.c $ROOT/src/repl/auth.c
	$ROOT/src/repl/admission.c
	$ROOT/tests/fuzz/fuzz_verbs_stub.c $ROOT/src/common/log.c $ROOT/src/common/clock.c
	$ROOT/src/transport/*.c $ROOT/src/transport/tcp/*.c $ROOT/src/pmem/*.c
	-lpmem2 -lssl -lcrypto -libverbs -lrdmacm -lpthread"
for t in repl_hdr repl_msg descriptors; do
	# shellcheck disable=SC2086
	$CC $FLAGS -o "$OUT/fuzz_$t" "$ROOT/tests/fuzz/fuzz_$t.c" $REPL_LIBS
done
# their seed generator (not run here: see its header)
# shellcheck disable=SC2086
$CC $(echo "$FLAGS" | sed 's/fuzzer,//') -o "$OUT/gen_repl_corpus" \
	"$ROOT/tests/fuzz/gen_repl_corpus.c" $REPL_LIBS

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in ${PMREP_FUZZ_TARGETS:-tcp_wire tcp_conn tcp_tls repl_hdr repl_msg descriptors}; do
	case $t in tcp_*) secs=$SECS ;; *) secs=$RSECS ;; esac
	corpus=$ROOT/tests/fuzz/corpus/$t
	work=$OUT/corpus-$t
	mkdir -p "$work"
	echo "fuzz: $t: regression corpus ($(ls "$corpus" | wc -l) inputs)"
	"$OUT/fuzz_$t" -runs=0 -timeout=20 -artifact_prefix="$OUT/$t-" \
		"$corpus" 2>"$OUT/$t-regress.log" || {
		tail -n 40 "$OUT/$t-regress.log"; exit 1; }
	echo "fuzz: $t: fuzzing for $secs s"
	"$OUT/fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$OUT/$t-" \
		"$work" "$corpus" 2>"$OUT/$t-fuzz.log" || {
		tail -n 60 "$OUT/$t-fuzz.log"; exit 1; }
	grep -E "stat::number_of_executed_units|stat::new_units_added" \
		"$OUT/$t-fuzz.log" | sed "s/^/fuzz: $t: /"
done
echo "fuzz: no findings"
