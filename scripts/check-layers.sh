#!/bin/bash
# check-layers.sh -- the layering of docs/DESIGN.md, checked over the
# #include lines of the tree: an include that points the wrong way fails.
#
#   common     includes nothing of the other layers (public: pmrep/base.h)
#   transport  common, its own headers, the public pmrep/transport.h and
#              pmrep/verbs.h
#   pmem       common, its own headers, the public pmrep/pmem.h
#   repl       common, its own, the public headers of transport and pmem,
#              and pmem/pmem_view.h (the views of a pmrep log's mapping:
#              pmem's interface for repl alone)
#   tools, examples, bench (integrations, the SQLite VFS among them): the
#              public headers only (<pmrep/...>), never a header under src/
#
# Inside repl, every file is in a room (src/repl/ROOM/) and a room includes
# its own headers and those of the rooms ROOMS below gives it, nothing
# else of repl (docs/DESIGN.md "The replication layer's rooms"). One form
# for the includes of repl: a header of the includer's own room by its
# bare name (a file of that folder), one of another room by its path from
# src/ ("repl/wire/chan.h"); never a path with ../ or ./.
#
# Usage: scripts/check-layers.sh [ROOT]   (default: this tree)
# Exit 0: every include points the right way; 1: the wrong ones, listed as
# FILE:LINE: LAYER includes WHAT (not allowed: WHY).
set -uo pipefail
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd -P)}
cd "$ROOT" || exit 2
bad=0

# the rooms of repl: ROOM, then the rooms it may include besides its own.
# One way: failover -> mirror -> media -> wire; mirror, target -> metrics
ROOMS='
wire
media		wire
metrics
mirror		media metrics wire
target		media metrics wire
failover	mirror media wire
'
declare -A ROOM_MAY=()
ROOM_NAMES=""
while read -r room may; do
	[ -n "$room" ] || continue
	ROOM_MAY[$room]=" $may "
	ROOM_NAMES="$ROOM_NAMES${ROOM_NAMES:+ }$room"
done <<<"$ROOMS"

# an include inside repl: its form, and the room it reaches may be reached
# from room $1. Prints the finding, if any.
room_finding() { # includer-room, includer-dir, quoted name
	local from=$1 dir=$2 name=$3 to
	case $name in
	./*|../*|*/../*|*/./*)
		echo "a path with ./ or ../ (name a header of the room by its bare name, of another room by its path from src/)"
		return ;;
	repl/*/*)
		to=${name#repl/}; to=${to%%/*}
		if [ -z "${ROOM_MAY[$to]+x}" ]; then
			echo "repl/$to is not a room"
		elif [ "$to" = "$from" ]; then
			echo "a header of its own room: by its bare name"
		elif [[ ${ROOM_MAY[$from]} != *" $to "* ]]; then
			echo "a repl/$to header: not allowed"
		fi ;;
	repl/*)
		echo "a repl header outside the rooms" ;;
	*/*) ;;	# common/, pmem/, transport/: the layer rules
	*)
		[ -f "$dir/$name" ] ||
			echo "not a header of repl/$from (another room's is named by its path from src/)" ;;
	esac
}

# the layer of a header an #include names, from the including file's
# folder: "x/y.h" (relative to src/) or a bare name in the same folder
layer_of_quoted() { # includer-dir, name
	local dir=$1 name=$2 path
	case $name in
	common/*) echo common; return ;;
	transport/*) echo transport; return ;;
	pmem/*) echo pmem; return ;;
	repl/*) echo repl; return ;;
	esac
	path=$(realpath -m "$dir/$name")
	case $path in
	"$ROOT"/src/common/*) echo common ;;
	"$ROOT"/src/transport/*) echo transport ;;
	"$ROOT"/src/pmem/*) echo pmem ;;
	"$ROOT"/src/repl/*) echo repl ;;
	"$ROOT"/src/*) echo src ;;
	*) echo outside ;;
	esac
}

layer_of_public() { # <pmrep/NAME>
	case $1 in
	pmrep/base.h) echo common ;;
	pmrep/transport.h|pmrep/verbs.h) echo transport ;;
	pmrep/pmem.h) echo pmem ;;
	pmrep/*) echo repl ;;	# repl.h, pmrep.h and what they include
	*) echo system ;;
	esac
}

# allowed LAYER-of-includer WHAT-kind TARGET-layer
allowed() { # includer-layer, quoted|public, target-layer, name
	local from=$1 kind=$2 to=$3 name=$4
	[ "$to" = system ] && return 0
	case $from in
	common) [ "$to" = common ] ;;
	transport) [ "$to" = common ] || [ "$to" = transport ] ;;
	pmem) [ "$to" = common ] || [ "$to" = pmem ] ;;
	repl)
		case $to in
		common|repl) return 0 ;;
		transport) [ "$kind" = public ] ;;
		pmem) [ "$kind" = public ] || [ "$name" = pmem/pmem_view.h ] ;;
		*) return 1 ;;
		esac ;;
	integration)
		# the public headers only; their own folder's headers are
		# "outside" src and fine
		[ "$kind" = public ] || [ "$to" = outside ] ;;
	*) return 0 ;;
	esac
}

check_file() { # file, its layer
	local f=$1 from=$2 dir n line name kind to room="" why
	dir=$(dirname "$f")
	if [ "$from" = repl ]; then
		room=${f#src/repl/}
		case $room in
		*/*) room=${room%%/*} ;;
		*) room="" ;;
		esac
		if [ -z "$room" ] || [ -z "${ROOM_MAY[$room]+x}" ]; then
			echo "$f: in no room of repl (src/repl/ROOM/, ROOM one of: $ROOM_NAMES)"
			bad=$((bad + 1))
			room=""
		fi
	fi
	n=0
	while IFS= read -r line; do
		n=$((n + 1))
		case $line in
		*'#'*include*) ;;
		*) continue ;;
		esac
		if [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]+)\" ]]; then
			name=${BASH_REMATCH[1]}; kind=quoted
			to=$(layer_of_quoted "$dir" "$name")
		elif [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\<([^\>]+)\> ]]; then
			name=${BASH_REMATCH[1]}; kind=public
			to=$(layer_of_public "$name")
		else
			continue
		fi
		if ! allowed "$from" "$kind" "$to" "$name"; then
			echo "$f:$n: $from includes $name (a $to header: not allowed)"
			bad=$((bad + 1))
		elif [ -n "$room" ] && [ "$kind" = quoted ]; then
			why=$(room_finding "$room" "$dir" "$name")
			if [ -n "$why" ]; then
				echo "$f:$n: repl/$room includes $name ($why)"
				bad=$((bad + 1))
			fi
		fi
	done < "$f"
}

while IFS= read -r f; do
	case $f in
	src/common/*) l=common ;;
	src/transport/*) l=transport ;;
	src/pmem/*) l=pmem ;;
	src/repl/*) l=repl ;;
	tools/*|examples/*|bench/*) l=integration ;;
	*) continue ;;
	esac
	check_file "$f" "$l"
done < <(find src tools examples bench -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)

if [ "$bad" -gt 0 ]; then
	echo "check-layers: $bad include(s) point the wrong way or file(s) are in no room (docs/DESIGN.md \"Layers\", \"The replication layer's rooms\")"
	exit 1
fi
echo "check-layers: every include points the right way"
exit 0
