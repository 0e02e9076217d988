#!/usr/bin/env bash
# check_layering.sh - the house rules of the source tree, checked.
#
#   tests/unit/lib/check_layering.sh SOURCE_DIR
#
# 1. lib/ knows no daemon: a quoted #include in lib/ names a file in lib/.
# 2. rpc/ stands on lib/ only: its quoted includes are rpc/, lib/ or
#    generated protobuf-c headers.
# 3. ZooKeeper client calls live in lib/ alone.
# 4. A daemon's folder is never linked, compiled or included by another:
#    no CMakeLists.txt outside a daemon folder names that folder's path or
#    its libraries (tests and benchmarks may: they test the daemon).
# Prints every breach with file and line and exits 1 if there is any.
set -euo pipefail

SRC=${1:?usage: check_layering.sh SOURCE_DIR}
cd "$SRC"
bad=0

breach() {
	printf 'layering: %s\n' "$*" >&2
	bad=1
}

# 1 and 2: quoted includes.
check_includes() { # DIR ALLOWED_DIR...
	local dir=$1 f line inc ok d
	shift
	while IFS= read -r f; do
		while IFS= read -r line; do
			inc=${line#*\"}
			inc=${inc%%\"*}
			ok=0
			[[ $inc == *.pb-c.h ]] && ok=1
			for d in "$@"; do
				[[ -f $d/$inc ]] && ok=1
			done
			((ok)) || breach "$f includes \"$inc\", which is not in ${*}"
		done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$f" || true)
	done < <(find "$dir" -name '*.[ch]' | sort)
}
check_includes lib lib
check_includes rpc rpc lib

# 3: ZooKeeper's C client outside lib/.
while IFS= read -r hit; do
	breach "ZooKeeper client call outside lib/: $hit"
done < <(grep -rnE '\bzoo_[a-z_]+\(|zookeeper/zookeeper\.h|<zookeeper\.h>' \
	--include='*.c' --include='*.h' server workers rpc || true)

# 4: daemon folders and the libraries they build.
declare -A LIBS=(
	[server/galaxy]="gx_core"
	[server/halley]="halley_core halley_pb"
	[server/kepler]="kepler_core kepler_pb kepler_sched"
	[workers/executor]="ex_core"
	[workers/sort]="sort_core"
	[workers/wormhole]="wormhole_core"
)
while IFS= read -r cm; do
	owner=$(dirname "$cm")
	for folder in "${!LIBS[@]}"; do
		[[ $owner == "$folder" || $owner == "$folder"/* ]] && continue
		for lib in ${LIBS[$folder]}; do
			while IFS= read -r hit; do
				breach "$cm:$hit links $folder's library $lib"
			done < <(grep -nwE "$lib" "$cm" | grep -v '^[0-9]*:[[:space:]]*#' || true)
		done
		while IFS= read -r hit; do
			breach "$cm:$hit reaches into $folder/"
		done < <(grep -nE "(^|[/{}\"[:space:]])$folder(/|[[:space:]\")]|$)" "$cm" |
			grep -v '^[0-9]*:[[:space:]]*#' || true)
	done
done < <(find lib rpc server workers -name CMakeLists.txt | sort)

if ((bad)); then
	exit 1
fi
echo "layering: lib/ knows no daemon, ZooKeeper calls only in lib/, no daemon reaches into another"
