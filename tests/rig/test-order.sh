#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# rig.order -- `rig-check order` must catch a record acknowledged by an old
# primary after a newer one acknowledged (the property tests/pacemaker's
# cluster checks across every writer run). Forged histories, no root, no
# network: two runs in order pass; an epoch-1 record acknowledged after the
# first epoch-2 one, and a late epoch-0 record after an epoch-1 primary,
# are each reported as that violation with exit 1; an unreadable line fails
# the check; several runs of one epoch (a writer restarted in place) and an
# old epoch's records before the newer one's first are not violations.
# usage: test-order.sh RIG_BIN_DIR
set -u
CHECK=$1/rig-check
D=$(mktemp -d /tmp/rig-order.XXXXXX)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { # expected-exit name files...: the check's output in $out
	local want=$1 name=$2 rc; shift 2
	local args=() f
	for f in "$@"; do args+=(--history "$D/$f"); done
	out=$("$CHECK" order "${args[@]}"); rc=$?
	echo "--- $name: exit $rc"; echo "$out" | sed 's/^/  /'
	[ "$rc" -eq "$want" ] || fail "$name: exit $rc, expected $want"
}

# the bootstrap writer (epoch 0: three fields), then a primary of
# generation 2 (epoch 1) restarted in place, then one of generation 3
printf '1 0 1000.000\n2 1 1001.000\n3 2 1002.500\n' >"$D/h0"
printf '4 3 2000.000 1\n5 4 2001.000 1\n' >"$D/h1a"
printf '6 5 2500.000 1\n7 6 2600.000 1\n' >"$D/h1b"
printf '8 7 3000.000 2\n9 8 3001.000 2\n' >"$D/h2"
run 0 "in order" h0 h1a h1b h2
grep -q "violations 0;" <<<"$out" || fail "in order: not 0 violations"
grep -q "^epoch 1: 4 records acknowledged, the first at 2000.000, the last at 2600.000" <<<"$out" ||
	fail "in order: epoch 1's summary"

# the old primary (epoch 1) acknowledged seq 7 after the new one's first
printf '6 5 2500.000 1\n7 6 3000.500 1\n' >"$D/h1late"
run 1 "epoch 1 after epoch 2's first" h0 h1a h1late h2
grep -q "^VIOLATION epoch 1 seq 7 acknowledged at 3000.500, after epoch 2's first (seq 8 at 3000.000)" <<<"$out" ||
	fail "the late epoch-1 record not reported as such"
grep -q "violations 1;" <<<"$out" || fail "not exactly 1 violation"

# the bootstrap writer, still running when the first promoted one wrote
printf '1 0 1000.000\n2 1 2000.500\n' >"$D/h0late"
run 1 "epoch 0 after epoch 1's first" h0late h1a h2
grep -q "^VIOLATION epoch 0 seq 2 acknowledged at 2000.500, after epoch 1's first (seq 4 at 2000.000)" <<<"$out" ||
	fail "the late epoch-0 record not reported as such"

# the same records in one file, order of the lines irrelevant
cat "$D/h2" "$D/h1a" "$D/h0" >"$D/mixed"
run 0 "lines out of order in one file" mixed

# a line the checker cannot read fails the check
printf '4 3 2000.000 1\nnot a record\n' >"$D/hbad"
run 1 "an unreadable line" h0 hbad
grep -q "bad history lines 1" <<<"$out" || fail "the unreadable line not counted"
echo "rig.order: PASSED"
