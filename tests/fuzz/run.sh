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
# Each source is compiled once, PMREP_FUZZ_JOBS at a time, and linked into
# every target that uses it; then the targets run PMREP_FUZZ_JOBS at a time
# (each for its own seconds, as when run one after the other), each one's
# report printed in one piece when it ends.
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
# the library sources are compiled once (coverage-instrumented:
# -fsanitize=fuzzer-no-link) and linked into each target that uses them
NOLINK=${FLAGS/fuzzer,/fuzzer-no-link,}
OBJ=$OUT/obj
LIBS="-lssl -lcrypto -libverbs -lrdmacm -lpthread"
# sources relative to $ROOT. The live-conn targets: the generic layer and
# the tcp provider (verbs stubbed)
CONN_SRCS="tests/fuzz/fuzz_verbs_stub.c $(echo src/common/*.c src/transport/*.c src/transport/tcp/*.c)"
# the replication wire formats: replica header, private data + messages,
# and the MR / peer cfg descriptors of the handshake
REPL_SRCS="src/repl/media/replica_hdr.c src/repl/media/position.c src/repl/wire/msg.c src/repl/wire/auth.c src/repl/wire/admission.c
	tests/fuzz/fuzz_verbs_stub.c src/common/log.c src/common/clock.c
	$(echo src/transport/*.c src/transport/tcp/*.c src/pmem/*.c)"
FUZZ_BINS="fuzz_tcp_wire fuzz_tcp_conn fuzz_tcp_tls fuzz_repl_hdr fuzz_repl_msg fuzz_descriptors"
# srcs_of BINARY: its sources
srcs_of() {
	case $1 in
	fuzz_tcp_wire) echo "tests/fuzz/fuzz_tcp_wire.c src/transport/tcp/tcp_wire.c" ;;	# the codec alone
	fuzz_tcp_conn|fuzz_tcp_tls) echo "tests/fuzz/$1.c $CONN_SRCS" ;;	# a live conn; TLS under its frames
	*) echo "tests/fuzz/$1.c $REPL_SRCS" ;;
	esac
}
obj_of() { local o=${1%.c}.o; echo "$OBJ/${o//\//_}"; }

# print file $1 in one piece: the other job's output never cuts into it
print_whole() { flock "$OUT/.print.lock" cat "$1"; }

# compile_one SOURCE: its object (warnings are errors; the compiler's output
# printed in one piece on a failure). gen_repl_corpus: the repl targets'
# seed generator (not run here: see its header), built whole, no libFuzzer.
compile_one() {
	local src=$1 o log
	if [ "$src" = gen_repl_corpus ]; then
		log=$OUT/gen_repl_corpus.build.log
		# shellcheck disable=SC2046,SC2086
		$CC ${FLAGS/fuzzer,/} -o "$OUT/gen_repl_corpus" \
			tests/fuzz/gen_repl_corpus.c $REPL_SRCS -lpmem2 $LIBS >"$log" 2>&1 ||
			{ echo "fuzz: building gen_repl_corpus FAILED" >>"$log"; print_whole "$log"; return 1; }
		return 0
	fi
	o=$(obj_of "$src"); log=$o.log
	# shellcheck disable=SC2086
	$CC $NOLINK -c "$src" -o "$o" >"$log" 2>&1 ||
		{ echo "fuzz: compiling $src FAILED" >>"$log"; print_whole "$log"; return 1; }
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
export -f print_whole obj_of compile_one fuzz_one
export ROOT OUT OBJ CC FLAGS NOLINK LIBS REPL_SRCS SECS RSECS
pool() {
	local fn=$1
	shift
	printf '%s\n' "$@" | xargs -P "$JOBS" -n 1 bash -c "$fn \"\$1\"" "$fn"
}

echo "fuzz: building with $($CC --version | head -n 1), $JOBS at a time"
# every target, whatever PMREP_FUZZ_TARGETS says (each must keep building):
# each source once, the seed generator (the longest) first
t0=$SECONDS
rm -rf "$OBJ"; mkdir -p "$OBJ"
# shellcheck disable=SC2046
pool compile_one gen_repl_corpus $(for b in $FUZZ_BINS; do srcs_of "$b"; done |
	tr -s " \t" "\n" | grep . | sort -u) || { echo "fuzz: a build failed"; exit 1; }
for b in $FUZZ_BINS; do
	objs=
	for src in $(srcs_of "$b"); do objs="$objs $(obj_of "$src")"; done
	libs=$LIBS
	case $b in fuzz_tcp_*) ;; *) libs="-lpmem2 $LIBS" ;; esac
	# shellcheck disable=SC2086
	$CC $FLAGS -o "$OUT/$b" $objs $libs || { echo "fuzz: linking $b FAILED"; exit 1; }
done
echo "fuzz: built $(echo "$FUZZ_BINS" | wc -w) targets and gen_repl_corpus in $((SECONDS - t0)) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# the longest runs first (tcp_*), so that the last pair ends close together
ORDER=
for t in $TARGETS; do case $t in tcp_*) ORDER="$ORDER $t" ;; esac; done
for t in $TARGETS; do case $t in tcp_*) ;; *) ORDER="$ORDER $t" ;; esac; done
# shellcheck disable=SC2086
pool fuzz_one $ORDER || { echo "fuzz: FAILED (a finding or a regression above)"; exit 1; }
echo "fuzz: no findings"
