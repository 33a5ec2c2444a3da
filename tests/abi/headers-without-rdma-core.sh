#!/bin/bash
# headers-without-rdma-core.sh CC SRC_DIR -- pmrep's public headers, all but
# <pmrep/verbs.h>, compile without the rdma-core headers (issue 15: a
# tcp-only user needs no libibverbs-dev). The rdma-core headers are made
# unreachable by a shadow include directory, searched first, whose
# infiniband/*.h and rdma/*.h stop the compiler with #error.
# Checked both ways: the shadow must stop a TU that includes
# <pmrep/verbs.h>, and a copy of the headers whose transport.h includes
# <infiniband/verbs.h> again must fail the check.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 CC SRC_DIR" >&2; exit 2; }
cc=$1 src=$2
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/shadow/infiniband" "$d/shadow/rdma"
for h in infiniband/verbs.h infiniband/mlx5dv.h infiniband/verbs_api.h \
		rdma/rdma_cma.h rdma/rdma_verbs.h; do
	echo "#error \"pmrep-abi-shadow: <$h> included\"" >"$d/shadow/$h"
done
flags="-std=c11 -Wall -Wextra -Werror -pedantic-errors -fsyntax-only"
rc=0

# compile stdin as a TU against include dir $1 with the shadow first
tu() { "$cc" $flags -I"$d/shadow" -I"$1" -x c - -o /dev/null 2>"$d/err"; }

check_tcp_only() { # include dir -> 0 if every tcp-only TU compiles
	local inc=$1 h bad=0
	# <pmrep.h> and every public header but <pmrep/verbs.h>, each alone
	for h in pmrep.h $(cd "$inc" && ls pmrep/*.h | grep -vx 'pmrep/verbs.h'); do
		if ! printf '#include <%s>\nint main(void) { return 0; }\n' "$h" | tu "$inc"; then
			echo "<$h> needs rdma-core headers:"; sed 's/^/    /' "$d/err"; bad=1
		fi
	done
	# and a program that reads completions, with pmrep's own status
	cat >"$d/use.c" <<'C'
#include <pmrep.h>
#include <stdio.h>
int main(void)
{
	struct pmrep_completion c = { .status = PMREP_WC_FLUSHED };
	printf("%s %u\n", pmrep_wc_status_str(c.status), c.provider_status);
	return c.status == PMREP_WC_SUCCESS;
}
C
	if ! tu "$inc" <"$d/use.c"; then
		echo "a completion reader needs rdma-core headers:"; sed 's/^/    /' "$d/err"; bad=1
	fi
	return $bad
}

if check_tcp_only "$src/include"; then
	echo "ok: <pmrep.h> and each public header but <pmrep/verbs.h> compile with rdma-core unreachable"
else
	rc=1
fi

# the shadow works: <pmrep/verbs.h> is stopped by it ...
if printf '#include <pmrep.h>\n#include <pmrep/verbs.h>\nint main(void) { return 0; }\n' |
		tu "$src/include"; then
	echo "FAIL: <pmrep/verbs.h> compiled with the shadow: the shadow does not hide rdma-core"; rc=1
elif grep -q 'pmrep-abi-shadow: <infiniband/verbs.h>' "$d/err"; then
	echo "ok: <pmrep/verbs.h> is stopped by the shadow (it needs <infiniband/verbs.h>)"
else
	echo "FAIL: <pmrep/verbs.h> failed for another reason:"; cat "$d/err"; rc=1
fi
# ... and compiles with rdma-core reachable
if printf '#include <pmrep.h>\n#include <pmrep/verbs.h>\nint main(void) { struct ibv_context *c = 0; (void) c; return 0; }\n' |
		"$cc" $flags -I"$src/include" -x c - -o /dev/null 2>"$d/err"; then
	echo "ok: <pmrep/verbs.h> compiles with the rdma-core headers"
else
	echo "FAIL: <pmrep/verbs.h> does not compile with rdma-core:"; cat "$d/err"; rc=1
fi

# the check catches the old mistake: transport.h including verbs again
cp -r "$src/include" "$d/broken"
sed -i 's|^#include <pmrep/base.h>$|#include <pmrep/base.h>\n#include <infiniband/verbs.h>|' \
	"$d/broken/pmrep/transport.h"
grep -q '^#include <infiniband/verbs.h>' "$d/broken/pmrep/transport.h" ||
	{ echo "FAIL: could not make the broken copy"; rc=1; }
if check_tcp_only "$d/broken" >"$d/broken.out"; then
	echo "FAIL: a transport.h that includes <infiniband/verbs.h> passed the check"; rc=1
else
	echo "ok: the check fails for a transport.h that includes <infiniband/verbs.h>:"
	grep -m1 'pmrep-abi-shadow' "$d/broken.out" | sed 's/^ */    /'
fi
exit $rc
