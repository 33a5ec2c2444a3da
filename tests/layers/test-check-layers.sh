#!/bin/bash
# test-check-layers.sh -- scripts/check-layers.sh, shown failing on a tree
# with includes that point the wrong way (each kind it must catch), quiet
# on one without them, then run on this tree.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd -P)
CHECK=$SRC/scripts/check-layers.sh
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mk() { mkdir -p "$(dirname "$t/$1")"; printf '%s\n' "$2" >> "$t/$1"; }
# a tree whose includes are all allowed
mk src/common/log.h '#include <pmrep/base.h>'
mk src/transport/tcp/tcp_x.c '#include "tcp.h"'
mk src/transport/tcp/tcp_x.c '#include "transport/common.h"'
mk src/transport/tcp/tcp_x.c '#include <pmrep/transport.h>'
mk src/pmem/pmem.c '#include "../common/log.h"'
mk src/pmem/pmem.c '#include <libpmem2.h>'
mk src/repl/mirror.c '#include "common/log.h"'
mk src/repl/mirror.c '#include <pmrep/transport.h>'
mk src/repl/mirror.c '#include "pmem/pmem_view.h"'
mk src/repl/mirror.c '#include "chan.h"'
mk tools/pmrep.c '#include <pmrep/repl.h>'
mk tools/pmrep.c '#include "size_parse.h"'
out=$("$CHECK" "$t" 2>&1) || fail "a clean tree is refused: $out"

# each wrong direction, one file each
mk src/transport/tcp/tcp_y.c '#include "repl/msg.h"'
mk src/transport/tcp/tcp_y.c '#include <pmrep/pmem.h>'
mk src/pmem/pmem_y.c '#include "transport/common.h"'
mk src/common/clock.c '#include "../repl/chan.h"'
mk src/repl/replica.c '#include "transport/tcp/tcp.h"'
mk src/repl/replica.c '#include "pmem/pmem_alloc.h"'
mk tools/pmrep_y.c '#include "../src/repl/chan.h"'
mk bench/b.c '#include "common/log.h"'
out=$("$CHECK" "$t" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "exit $rc on wrong includes (want 1): $out"
for want in 'src/transport/tcp/tcp_y.c:1: transport includes repl/msg.h' \
		'src/transport/tcp/tcp_y.c:2: transport includes pmrep/pmem.h' \
		'src/pmem/pmem_y.c:1: pmem includes transport/common.h' \
		'src/common/clock.c:1: common includes ../repl/chan.h' \
		'src/repl/replica.c:1: repl includes transport/tcp/tcp.h' \
		'src/repl/replica.c:2: repl includes pmem/pmem_alloc.h' \
		'tools/pmrep_y.c:1: integration includes ../src/repl/chan.h' \
		'bench/b.c:1: integration includes common/log.h'; do
	grep -qF "$want" <<<"$out" || fail "not caught: $want (got: $out)"
done
n=$(grep -c 'not allowed' <<<"$out")
[ "$n" -eq 8 ] || fail "$n findings, want 8: $out"
echo "ok: a clean tree passes, 8 wrong includes of 8 kinds caught"

"$CHECK" "$SRC" || fail "this tree"
