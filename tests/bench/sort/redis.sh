#!/usr/bin/env bash
# tests/bench/sort/redis.sh [BUILD_DIR] - sortd end to end through Redis
# Streams: a producer (sort_xadd: pipelined XADD) adds SORT_REDIS_RECORDS
# (default 2,000,000) delimited records of ~200 bytes over 1,000 units, in
# packs of SORT_REDIS_PACK records per entry (default 1000; 0: one record
# per entry, the old path), while
# sortd consumes them through a consumer group and lands every unit as lzop
# files (fsync on). The clock starts when the producer starts and stops when
# every entry has been delivered and acknowledged -- sortd acknowledges only
# after landing -- so records/s is the end-to-end rate (target >= 300,000).
# SORT_REDIS_MODE=preload fills the stream first and times sortd alone from
# its start (on a small machine the producer otherwise takes CPU from sortd).
# Needs ORRERY_REDIS=host:port (deploy/stack.sh env). Bounded: the producer
# stops after SORT_REDIS_SECONDS (default 120) and the wait after twice that.
set -euo pipefail
# Redis's own cost per XADD is printed too (INFO commandstats): it bounds
# what one Redis can take, whatever the consumer does.
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-$ROOT/build}
N=${SORT_REDIS_RECORDS:-2000000}
PACK=${SORT_REDIS_PACK:-1000}
MODE=${SORT_REDIS_MODE:-live}
LIMIT_S=${SORT_REDIS_SECONDS:-120}
T=${SORT_BENCH_DIR:-/tmp/sort-redis-bench}
SORTD=$BUILD/bin/sortd
GEN=$BUILD/bin/sort_gen
XADD=$BUILD/bin/sort_xadd
for b in "$SORTD" "$GEN" "$XADD"; do
    [ -x "$b" ] || { echo "build sortd, sort_gen and sort_xadd in $BUILD first" >&2; exit 2; }
done
. "$ROOT/tests/bench/sort/redis_lib.sh"
WAITER=$(pick_waiter "$XADD" "$ROOT/build/bin/sort_xadd") || exit 2
[ -n "${ORRERY_REDIS:-}" ] || { echo "ORRERY_REDIS is not set (deploy/stack.sh start redis)" >&2; exit 2; }
HOST=${ORRERY_REDIS%:*}
PORT=${ORRERY_REDIS##*:}
rcli() { redis-cli -h "$HOST" -p "$PORT" "$@"; }
KEY="orr-bench-sort-$$"
if [ "$PACK" -gt 0 ]; then
    SRC_EXTRA=', "packs": true'; BATCH=32; XADD_EXTRA=(--pack "$PACK")
else
    SRC_EXTRA=''; BATCH=5000; XADD_EXTRA=()
fi
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    rcli DEL "$KEY" >/dev/null 2>&1 || true
    rm -rf "$T"
}
rm -rf "$T"
mkdir -p "$T"
trap cleanup EXIT

"$GEN" --out "$T/in" --records "$N" --files 10 --ifaces 250 --span 14400
MB=$(du -cb "$T"/in/* | tail -1 | awk '{ printf "%.1f", $1 / 1048576 }')
raw_spec rbench "$KEY" g "$SRC_EXTRA" "" "$BATCH" 5000 >"$T/spec.json"
rcli XGROUP CREATE "$KEY" g 0 MKSTREAM >/dev/null
start_sortd() {
    ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state ORRERY_SORT_BLOB_ROOT=file://$T/blob \
        ORRERY_LOG_LEVEL=info "$SORTD" run --stream "$T/spec.json" >"$T/sortd.out" 2>"$T/sortd.err" &
    pid=$! # sortd itself, so SIGTERM reaches it; peak RSS is read from /proc
}
sortd_started() { # it logged "stream started": reading, handlers in place (bounded wait)
    local deadline=$(($(date +%s) + LIMIT_S))
    until grep -q 'msg="stream started"' "$T/sortd.err" 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || { echo "FAIL: sortd exited: $(tail -3 "$T/sortd.err")" >&2; exit 1; }
        [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: sortd did not start in ${LIMIT_S}s" >&2; exit 1; }
        sleep 0.05
    done
}
produce() {
    "$XADD" --redis "$ORRERY_REDIS" --key "$KEY" --in "$T/in" --records "$N" --seconds "$LIMIT_S" \
        "${XADD_EXTRA[@]}" | tee "$T/xadd.out"
}
if [ "$MODE" = preload ]; then
    # The stream is filled first; the clock runs from sortd's start to the
    # last acknowledgement: sortd alone, without a producer on the same cores.
    produce
    t0=$(date +%s.%N)
    start_sortd
else
    start_sortd
    sortd_started
    t0=$(date +%s.%N)
    produce
fi
ADDED=$(awk '{ print $2 }' "$T/xadd.out")
# Done when the group has been given every entry (lag 0) and none is
# pending: one sort_xadd polls on one connection (redis-cli calls in a loop
# cost the run being timed about 20 ms of CPU each on a 2-core guest).
"$WAITER" --redis "$ORRERY_REDIS" --key "$KEY" --wait g --seconds $((2 * LIMIT_S)) ||
    { echo "FAIL: not drained in $((2 * LIMIT_S))s: $(rcli XINFO GROUPS "$KEY" | tr '\n' ' ')" >&2; exit 1; }
t1=$(date +%s.%N)
RSS=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status")
kill -TERM "$pid"
wait "$pid" || { echo "FAIL: sortd exited with an error: $(tail -3 "$T/sortd.err")" >&2; exit 1; }
pid=
cat "$T/sortd.out"
rcli INFO commandstats | grep '^cmdstat_xadd' | tr -d '\r' | sed 's/^/redis: /'
LANDED=$(find "$T/blob" -name 'part-*.lzo' | sed 's/.*-n\([0-9]*\)\.lzo$/\1/' |
    awk '{ s += $1 } END { print s + 0 }')
[ "$LANDED" = "$ADDED" ] || { echo "FAIL: $LANDED records landed, $ADDED added" >&2; exit 1; }
awk -v mode="$MODE" -v n="$ADDED" -v mb="$MB" -v pack="$( [ "$PACK" -gt 0 ] && echo "$PACK" || echo 1 )" -v a="$t0" -v b="$t1" -v rss="$RSS" 'BEGIN {
    printf "records          %d (%.1f MB of input), %s records per entry\n", n, mb, pack
    printf "mode             %s\n", mode
    printf "end to end       %.2f s  %9.0f records/s (target >= 300000)  sortd peak RSS %d MB\n",
           b - a, n / (b - a), rss
}'
