#!/usr/bin/env bash
# tests/bench/sort/run.sh [BUILD_DIR] - sortd throughput beside lzop -1.
#
# Generates SORT_BENCH_RECORDS (default 20,000,000) delimited records of
# about 200 bytes and 10 fields over 1,000 units (250 interfaces x 4 hourly
# buckets) in SORT_BENCH_DIR (default /tmp/sort-bench), then in one run:
#   1. lzop -1 compresses the same bytes (the yardstick);
#   2. sortd reads them with the file source, parses, routes and lands every
#      unit as lzop files with indexes (fsync on, as in production).
# Prints MB/s, records/s, the ratio sortd/lzop (target >= 0.7) and sortd's
# peak RSS (target < 512 MB), measured with /usr/bin/time -v, and checks that
# every record landed. SORT_BENCH_TZ (default UTC) sets the stream's time
# zone, e.g. Europe/Berlin to measure routing through a named zone.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-$ROOT/build}
N=${SORT_BENCH_RECORDS:-20000000}
T=${SORT_BENCH_DIR:-/tmp/sort-bench}
FSYNC=${SORT_BENCH_FSYNC:-true}
TZNAME=${SORT_BENCH_TZ:-UTC}
SORTD=$BUILD/bin/sortd
GEN=$BUILD/bin/sort_gen
[ -x "$SORTD" ] && [ -x "$GEN" ] || { echo "build sortd and sort_gen in $BUILD first" >&2; exit 2; }

rm -rf "$T"
mkdir -p "$T"
trap 'rm -rf "$T"' EXIT
echo "generating $N records in $T/in"
"$GEN" --out "$T/in" --records "$N" --files 20 --ifaces 250 --span 14400
BYTES=$(du -cb "$T"/in/* | tail -1 | cut -f1)
MB=$(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')
cat "$T"/in/* >/dev/null # warm the page cache for both contenders

secs() { awk '/Elapsed \(wall clock\)/ { n = split($NF, a, ":"); s = 0;
                 for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s }' "$1"; }
rss_mb() { awk '/Maximum resident set size/ { printf "%.0f", $NF / 1024 }' "$1"; }

echo "lzop -1 on the same $MB MB"
/usr/bin/time -v lzop -1 -c "$T"/in/* >"$T/all.lzo" 2>"$T/lzop.time"
LZOP_S=$(secs "$T/lzop.time")
rm -f "$T/all.lzo"

cat >"$T/spec.json" <<JSON
{"name": "bench", "business": "bench",
 "source": {"type": "file", "path": "$T/in", "exit_at_eof": true},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s", "timezone": "$TZNAME"},
 "bucket": "hour",
 "output": {"roll_size": 268435456, "roll_age_ms": 600000, "fsync": $FSYNC},
 "check": {"clock": "data", "grace_ms": 0}}
JSON
echo "sortd on the same $MB MB"
ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state ORRERY_SORT_BLOB_ROOT=file://$T/blob \
    ORRERY_LOG_LEVEL=warn /usr/bin/time -v "$SORTD" run --stream "$T/spec.json" \
    >"$T/sortd.out" 2>"$T/sortd.time"
SORT_S=$(secs "$T/sortd.time")
cat "$T/sortd.out"
LANDED=$(find "$T/blob" -name 'part-*.lzo' | sed 's/.*-n\([0-9]*\)\.lzo$/\1/' |
    awk '{ s += $1 } END { print s + 0 }')
[ "$LANDED" = "$N" ] || { echo "FAIL: $LANDED records landed, expected $N" >&2; exit 1; }

awk -v mb="$MB" -v n="$N" -v l="$LZOP_S" -v s="$SORT_S" -v rss="$(rss_mb "$T/sortd.time")" \
    -v lrss="$(rss_mb "$T/lzop.time")" -v tz="$TZNAME" 'BEGIN {
    printf "records          %d (%.1f MB), time zone %s\n", n, mb, tz
    printf "lzop -1          %.2f s  %7.1f MB/s                      peak RSS %d MB\n", l, mb / l, lrss
    printf "sortd            %.2f s  %7.1f MB/s  %9.0f records/s  peak RSS %d MB\n", s, mb / s, n / s, rss
    printf "ratio            %.2f (sortd / lzop -1 throughput; target >= 0.70)\n", l / s
}'
