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
mk src/repl/mirror/mirror.c '#include "common/log.h"'
mk src/repl/mirror/mirror.c '#include <pmrep/transport.h>'
mk src/repl/mirror/mirror.c '#include "pmem/pmem_view.h"'
# the rooms of repl, each including what the table gives it: its own
# headers by their bare names, another room's by their paths from src/
mk src/repl/mirror/mirror.c '#include "mirror_int.h"'
mk src/repl/mirror/mirror_int.h '#include "repl/wire/chan.h"'
mk src/repl/mirror/mirror_int.h '#include "repl/media/replica_hdr.h"'
mk src/repl/mirror/mirror_int.h '#include "repl/metrics/metrics.h"'
mk src/repl/wire/chan.h '#include "msg.h"'
mk src/repl/wire/msg.h '#include <pmrep/base.h>'
mk src/repl/media/replica_hdr.h '#include "repl/wire/msg.h"'
mk src/repl/metrics/metrics.h '#include <pmrep/repl.h>'
mk src/repl/target/target_int.h '#include "repl/wire/chan.h"'
mk src/repl/target/target_int.h '#include "repl/metrics/metrics.h"'
mk src/repl/target/target.c '#include "target_int.h"'
mk src/repl/target/target.c '#include "repl/media/replica_hdr.h"'
mk src/repl/failover/promote.c '#include "repl/mirror/mirror_int.h"'
mk src/repl/failover/promote.c '#include "repl/media/replica_hdr.h"'
mk src/repl/failover/promote.c '#include "query.h"'
mk src/repl/failover/query.h '#include "repl/wire/chan.h"'
mk tools/pmrep.c '#include <pmrep/repl.h>'
mk tools/pmrep.c '#include "size_parse.h"'
out=$("$CHECK" "$t" 2>&1) || fail "a clean tree is refused: $out"

# each wrong direction, one file each
mk src/transport/tcp/tcp_y.c '#include "repl/msg.h"'
mk src/transport/tcp/tcp_y.c '#include <pmrep/pmem.h>'
mk src/pmem/pmem_y.c '#include "transport/common.h"'
mk src/common/clock.c '#include "../repl/chan.h"'
mk src/repl/mirror/replica.c '#include "transport/tcp/tcp.h"'
mk src/repl/mirror/replica.c '#include "pmem/pmem_alloc.h"'
mk tools/pmrep_y.c '#include "../src/repl/chan.h"'
mk bench/b.c '#include "common/log.h"'
# between the rooms of repl: against the one way (failover -> mirror ->
# media -> wire; mirror, target -> metrics), and in another form
mk src/repl/wire/chan.c '#include "repl/mirror/mirror_int.h"'
mk src/repl/media/position.c '#include "repl/failover/query.h"'
mk src/repl/metrics/metrics.c '#include "repl/target/target_int.h"'
mk src/repl/mirror/replica_io.c '#include "repl/failover/query.h"'
mk src/repl/mirror/replica_io.c '#include "repl/target/target_int.h"'
mk src/repl/target/target_session.c '#include "repl/mirror/mirror_int.h"'
mk src/repl/failover/recover.c '#include "repl/target/target_int.h"'
mk src/repl/mirror/mirror_pipe.c '#include "chan.h"'
mk src/repl/mirror/mirror_pipe.c '#include "repl/mirror/mirror_int.h"'
mk src/repl/mirror/mirror_pipe.c '#include "../wire/chan.h"'
mk src/repl/mirror/mirror_pipe.c '#include "repl/msg.h"'
mk src/repl/stray.c '#include "common/log.h"'
out=$("$CHECK" "$t" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "exit $rc on wrong includes (want 1): $out"
for want in 'src/transport/tcp/tcp_y.c:1: transport includes repl/msg.h' \
		'src/transport/tcp/tcp_y.c:2: transport includes pmrep/pmem.h' \
		'src/pmem/pmem_y.c:1: pmem includes transport/common.h' \
		'src/common/clock.c:1: common includes ../repl/chan.h' \
		'src/repl/mirror/replica.c:1: repl includes transport/tcp/tcp.h' \
		'src/repl/mirror/replica.c:2: repl includes pmem/pmem_alloc.h' \
		'tools/pmrep_y.c:1: integration includes ../src/repl/chan.h' \
		'bench/b.c:1: integration includes common/log.h'; do
	grep -qF "$want" <<<"$out" || fail "not caught: $want (got: $out)"
done
for want in 'src/repl/wire/chan.c:1: repl/wire includes repl/mirror/mirror_int.h (a repl/mirror header: not allowed)' \
		'src/repl/media/position.c:1: repl/media includes repl/failover/query.h (a repl/failover header: not allowed)' \
		'src/repl/metrics/metrics.c:1: repl/metrics includes repl/target/target_int.h (a repl/target header: not allowed)' \
		'src/repl/mirror/replica_io.c:1: repl/mirror includes repl/failover/query.h (a repl/failover header: not allowed)' \
		'src/repl/mirror/replica_io.c:2: repl/mirror includes repl/target/target_int.h (a repl/target header: not allowed)' \
		'src/repl/target/target_session.c:1: repl/target includes repl/mirror/mirror_int.h (a repl/mirror header: not allowed)' \
		'src/repl/failover/recover.c:1: repl/failover includes repl/target/target_int.h (a repl/target header: not allowed)' \
		'src/repl/mirror/mirror_pipe.c:1: repl/mirror includes chan.h (not a header of repl/mirror' \
		'src/repl/mirror/mirror_pipe.c:2: repl/mirror includes repl/mirror/mirror_int.h (a header of its own room: by its bare name)' \
		'src/repl/mirror/mirror_pipe.c:3: repl/mirror includes ../wire/chan.h (a path with ./ or ../' \
		'src/repl/mirror/mirror_pipe.c:4: repl/mirror includes repl/msg.h (a repl header outside the rooms)' \
		'src/repl/stray.c: in no room of repl'; do
	grep -qF "$want" <<<"$out" || fail "not caught: $want (got: $out)"
done
n=$(grep -c '^src/\|^tools/\|^bench/' <<<"$out")
[ "$n" -eq 20 ] || fail "$n findings, want 20: $out"
echo "ok: a clean tree passes; 20 wrong includes caught: 8 between the layers, 7 between the rooms of repl against their one way, 4 in another form than the one repl uses, 1 file in no room"

"$CHECK" "$SRC" || fail "this tree"
