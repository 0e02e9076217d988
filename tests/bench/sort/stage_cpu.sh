#!/usr/bin/env bash
# tests/bench/sort/stage_cpu.sh BUILD_A BUILD_B [ROUNDS] [RECORDS] - the CPU
# a sortd spends per million records read from Redis, two builds in turn:
# the parse stage alone (the hand-off sink, no write stage: its packs stay
# in Redis) and the one process (the files sink). handoff.sh times both
# paths with every process of the pipeline on the same two cores, so its
# CPU figures move by a tenth or more between runs; here one sortd runs at
# a time against a stream filled once, which narrows what a change of a
# few per cent must beat.
#
# RECORDS (default 2,000,000) raw records from sort_gen are added once to a
# Redis stream (untimed). Each round runs, for each path, both builds, A
# first in odd rounds and B first in even ones (so that what one run leaves
# behind, in Redis's allocator or the page cache, does not always favour
# the same build), each reading the whole stream through a consumer group
# of its own from the start (commit "position", batch 5,000, as
# handoff.sh), and prints its wall time (from its start until the group's
# position is past the last entry: the one process's records landed, the
# parse stage's packs accepted by Redis) and its CPU seconds per 1M records
# (user + system, /proc). ROUNDS defaults to 5. The end of each run is
# watched by one sort_xadd --wait (A's or B's, whichever has it). Needs
# ORRERY_REDIS=host:port (deploy/stack.sh env); each wait gives up after
# SORT_STAGE_SECONDS (default 120).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_A BUILD_B [ROUNDS] [RECORDS]" >&2; exit 2; }
A=$1
B=$2
ROUNDS=${3:-5}
N=${4:-2000000}
LIMIT_S=${SORT_STAGE_SECONDS:-120}
for b in "$A" "$B"; do
    [ -x "$b/bin/sortd" ] || { echo "no sortd in $b/bin" >&2; exit 2; }
done
for t in sort_gen sort_xadd; do
    [ -x "$A/bin/$t" ] || { echo "build $t in $A first" >&2; exit 2; }
done
. "$(dirname "$0")/redis_lib.sh"
WAITER=$(pick_waiter "$A/bin/sort_xadd" "$B/bin/sort_xadd") || exit 2
[ -n "${ORRERY_REDIS:-}" ] || { echo "ORRERY_REDIS is not set (deploy/stack.sh start redis)" >&2; exit 2; }
HOST=${ORRERY_REDIS%:*}
PORT=${ORRERY_REDIS##*:}
rcli() { redis-cli -h "$HOST" -p "$PORT" "$@"; }
T=${SORT_BENCH_DIR:-/tmp/sort-stage-cpu}
RAW="orr-bench-stage-raw-$$"
HK="orr-bench-stage-ho-$$"
pid=
cleanup() {
    [ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true
    rcli DEL "$RAW" "$HK.0" "$HK.0.lz4" >/dev/null 2>&1 || true
    rm -rf "$T"
}
rm -rf "$T"
mkdir -p "$T"
trap cleanup EXIT
"$A/bin/sort_gen" --out "$T/in" --records "$N" --files 10 --ifaces 250 --span 14400 >/dev/null
"$A/bin/sort_xadd" --redis "$ORRERY_REDIS" --key "$RAW" --in "$T/in" --records "$N" --seconds 300 >/dev/null
rm -rf "$T/in"
LEN=$(rcli XLEN "$RAW")
[ "$LEN" = "$N" ] || { echo "FAIL: the stream holds $LEN entries, not $N" >&2; exit 1; }
HZ=$(getconf CLK_TCK)
# The parse stage's packs stay in Redis: bounds high enough that it never
# waits for room (RECORDS / ~550 packs).
HO=", \"sinks\": {\"files\": false, \"handoff\": {\"key\": \"$HK\", \"streams\": 1,
    \"max_packs\": 100000, \"max_bytes\": 8589934592, \"pack_codec\": \"lz4\"}}"
for r in $(seq 1 "$ROUNDS"); do
    order="A B"
    [ $((r % 2)) = 0 ] && order="B A"
    for path in parse one; do
        for side in $order; do
            bd=$A
            [ "$side" = B ] && bd=$B
            g="g$r$path$side"
            rcli XGROUP CREATE "$RAW" "$g" 0 >/dev/null
            sinks=""
            [ "$path" = parse ] && sinks=$HO
            raw_spec stagecpu "$RAW" "$g" ', "commit": "position"' "$sinks" >"$T/spec.json"
            rm -rf "$T/work" "$T/state" "$T/blob"
            t0=$(date +%s.%N)
            ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state ORRERY_SORT_BLOB_ROOT=file://$T/blob \
                ORRERY_SORT_REDIS=$ORRERY_REDIS ORRERY_LOG_LEVEL=warn \
                "$bd/bin/sortd" run --stream "$T/spec.json" >"$T/out" 2>"$T/err" &
            pid=$!
            "$WAITER" --redis "$ORRERY_REDIS" --key "$RAW" --wait "$g" --seconds "$LIMIT_S" ||
                { echo "FAIL: $path $side round $r: not drained: $(tail -3 "$T/err")" >&2; exit 1; }
            t1=$(date +%s.%N)
            cpu=$(awk -v hz="$HZ" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$pid/stat")
            kill -TERM "$pid"
            wait "$pid" || { echo "FAIL: $path $side: sortd exited with an error: $(tail -3 "$T/err")" >&2; exit 1; }
            pid=
            rcli DEL "$HK.0" "$HK.0.lz4" >/dev/null
            rcli XGROUP DESTROY "$RAW" "$g" >/dev/null
            awk -v p="$path" -v s="$side" -v r="$r" -v a="$t0" -v b="$t1" -v c="$cpu" -v n="$N" 'BEGIN {
                printf "%-5s %s round %d  wall %5.2f s  CPU s per 1M records %.3f\n", p, s, r, b - a, c * 1e6 / n }'
        done
    done
done
