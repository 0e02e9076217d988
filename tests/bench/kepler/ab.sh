#!/usr/bin/env bash
# ab.sh - keplerd + the real executord, a build against the build before it
# and the batch stand-in peer, alternating in one sequence of runs (the
# machine's load moves: only figures of the same sequence compare).
#
#   tests/bench/kepler/ab.sh BEFORE_BUILD AFTER_BUILD [ROUNDS]
#
# Each round runs run.sh (the shape of docs/benchmarks.md, "keplerd + the
# real executord": 1 executord x 64 slots, 1,000 instances, rlimit sandbox,
# task `true`) on BEFORE_BUILD, then on AFTER_BUILD, then the peer
# (KPB_EXECUTOR=batch) on AFTER_BUILD; ROUNDS (default 2, at most 10). One
# summary line per run: build, dispatch rate, CPU ms per instance of each
# process, runs reported in one step, executord's runs read per GetInstances
# call, halleyd's reads of the events table and the events its streams took
# from the shared window (hl_evwin.h), load. The stack's env (deploy/stack.sh env, ORRERY_VAR_DIR too)
# must be exported. Each run is bounded by run.sh (KPB_WAIT=120 s). The
# runs' work directories are moved aside (KPB_OLD_DIR) and deleted only at
# the end, so no run pays for deleting the files of the run before it
# (docs/benchmarks.md, "A quiet machine, kept job threads, and runs that paid
# for the run before").
set -euo pipefail
[ $# -ge 2 ] || {
	echo "usage: tests/bench/kepler/ab.sh BEFORE_BUILD AFTER_BUILD [ROUNDS]" >&2
	exit 2
}
HERE=$(cd -- "$(dirname -- "$0")" && pwd -P)
ROUNDS=${3:-2}
[[ $ROUNDS =~ ^[0-9]+$ ]] && [ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 10 ] || {
	echo "ab.sh: ROUNDS must be in [1, 10]" >&2
	exit 2
}
KPB_OLD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/kpb-old-XXXXXX")
export KPB_OLD_DIR
trap 'rm -rf -- "$KPB_OLD_DIR"' EXIT
one() { # label build executor
	local out
	out=$(KPB_EXECUTOR=$3 KPB_EXECUTORS=1 KPB_SLOTS=64 KPB_READY=1000 KPB_TASKS=3000 \
		KPB_RPC_SAMPLE=50 KPB_WAIT=120 "$HERE/run.sh" "$2" 2>&1) || {
		echo "$1: run failed"
		echo "$out" | tail -5
		return 0
	}
	awk -v l="$1" '
		/dispatch rate, first..last/ {r = $NF}
		/executors \(with their tasks\)/ {e = $NF}
		/keplerd \/ halleyd/ {k = $(NF-2); h = $NF}
		/postgresql backends \/ zookeeper/ {p = $(NF-2); z = $NF}
		BEGIN {rd = "-"; ev = "-"}
		/^runs reported in one step/ {o = $(NF-2)}
		/^runs. instance reads \/ calls/ {rd = $(NF-2) "/" $NF}
		/^halleyd: events table reads/ {ev = $(NF-2) "/" $NF}
		/^load at end/ {sub(/.*load at end */, ""); ld = $0}
		END {printf "%-8s rate=%s/s cpu_ms: executord=%s postgresql=%s halleyd=%s keplerd=%s zookeeper=%s one_step=%s reads/calls=%s ev_reads/window=%s load=%s\n", l, r, e, p, h, k, z, o, rd, ev, ld}' <<<"$out"
}
for ((i = 1; i <= ROUNDS; i++)); do
	one before "$1" executord
	one after "$2" executord
	one peer "$2" batch
done
