#!/bin/bash
# run-doc.sh DOC BUILD_DIR: run every ```sh block of DOC (docs/FAILOVER.md), in
# order, as one bash script with -e, the build's tools first on PATH; the
# procedure's own checks (grep -q ...) make it fail. What it started (the
# pids it noted in $W/*.pid, $W itself) goes at the end, whatever the outcome.
set -euo pipefail
doc=$1 build=$2
script=$(mktemp /tmp/pmrep-failover-doc-XXXXXX.sh)
trap 'rm -f "$script"' EXIT
{
    echo 'W=""'
    echo 'cleanup() { set +e; for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done; if [ -n "$W" ] && [ -d "$W" ]; then for f in "$W"/*.pid; do [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done; fi; wait 2>/dev/null; [ -n "$W" ] && rm -rf "$W"; return 0; }'
    echo 'trap cleanup EXIT'
    awk '/^```sh$/ { on = 1; next } /^```$/ { on = 0; next } on { print }' "$doc"
} > "$script"
grep -q '^W=\$(mktemp' "$script" || { echo "run-doc: no procedure in $doc"; exit 1; }
export PATH="$build/tools:$build/examples:$PATH"
export PMREP_PROVIDER=tcp
echo "run-doc: $(grep -c . "$script") lines of $doc"
bash -euo pipefail "$script"
echo "run-doc: the procedure of $doc ran as written"
