#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-unit.sh BUILD_DIR -- systemd-analyze verify of the built
# systemd/pmrep-target@.service (as instance "check", its ExecStart pointed
# at BUILD_DIR's pmrep-target, its Documentation= at BUILD_DIR's man
# pages), then the same on a broken copy (an unknown Type=), which must
# fail. Exit 77 (skip) without systemd-analyze.
set -eu
build=$1
command -v systemd-analyze >/dev/null 2>&1 || { echo "check-unit: no systemd-analyze: skipped"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT INT TERM
unit="$build/systemd/pmrep-target@.service"
bindir=$(sed -n 's#^ExecStart=\(.*\)/pmrep-target .*#\1#p' "$unit")
sed "s#^ExecStart=$bindir/#ExecStart=$build/tools/#" "$unit" > "$d/pmrep-target@check.service"
export MANPATH="$build/man:"
# Documentation=man:pmrep-target(8) is looked up with man(1) when there is one
man=""
command -v man >/dev/null 2>&1 || man="--man=no"
# shellcheck disable=SC2086
if ! out=$(systemd-analyze verify $man "$d/pmrep-target@check.service" 2>&1); then
    echo "check-unit: systemd-analyze verify failed:"; echo "$out"; exit 1
fi
[ -z "$out" ] || { echo "check-unit: systemd-analyze verify warned:"; echo "$out"; exit 1; }
echo "check-unit: pmrep-target@.service verifies"
sed 's#^Type=notify#Type=notifyy#' "$d/pmrep-target@check.service" > "$d/broken@check.service"
# shellcheck disable=SC2086
if systemd-analyze verify $man "$d/broken@check.service" >"$d/out" 2>&1 && [ ! -s "$d/out" ]; then
    echo "check-unit: a broken unit (Type=notifyy) passed: the check checks nothing"; exit 1
fi
echo "check-unit: a broken copy fails as it should: $(head -1 "$d/out")"
