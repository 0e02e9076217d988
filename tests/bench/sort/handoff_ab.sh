#!/usr/bin/env bash
# tests/bench/sort/handoff_ab.sh BUILD_A BUILD_B [ROUNDS] - handoff.sh on two
# builds in the same minutes, alternating (A B A B ..., ROUNDS pairs, default
# 3), so a change is measured against the build before it under the same
# load. Each run prints the load average before it, then handoff.sh's
# lines (rates, ratio, CPU s per 1M records, run-queue wait); a last table
# holds one line per run. SORT_HANDOFF_* pass through. Needs ORRERY_REDIS.
# Each run's landed files are kept until the last run has ended
# (SORT_BENCH_KEEP_OUTPUT, see handoff.sh), so no run pays for the file
# deletions of the one before it; about 0.2 GB of disk per run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
A=${1:?usage: handoff_ab.sh BUILD_A BUILD_B [ROUNDS]}
B=${2:?usage: handoff_ab.sh BUILD_A BUILD_B [ROUNDS]}
ROUNDS=${3:-3}
[ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] || { echo "ROUNDS must be 1..20" >&2; exit 2; }
# beside the runs' own folder: a move to another filesystem would copy
# and delete
BENCH_DIR=${SORT_BENCH_DIR:-/tmp/sort-handoff-bench}
OLD=$(mktemp -d "${BENCH_DIR%/}.old.XXXXXX")
trap 'rm -rf "$OLD"' EXIT
export SORT_BENCH_KEEP_OUTPUT=1 SORT_BENCH_OLD_DIR=$OLD
sum=""
for i in $(seq 1 "$ROUNDS"); do
    for tag in A B; do
        if [ "$tag" = A ]; then b=$A; else b=$B; fi
        load=$(cut -d' ' -f1 /proc/loadavg)
        echo "== run $i $tag ($b) load $load"
        out=$(bash "$HERE/handoff.sh" "$b")
        echo "$out"
        ratio=$(echo "$out" | awk '/^ratio/ { print $2 }')
        two=$(echo "$out" | grep '^parse +' | grep -o '[0-9]* records/s' | cut -d' ' -f1)
        one=$(echo "$out" | grep '^one process' | grep -o '[0-9]* records/s' | cut -d' ' -f1)
        cpu=$(echo "$out" | sed -n 's/^CPU s per 1M records //p')
        sum="$sum$i $tag load $load: two $two, one $one records/s, ratio $ratio; $cpu"$'\n'
    done
done
echo "== summary"
printf '%s' "$sum"
