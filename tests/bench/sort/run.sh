#!/usr/bin/env bash
# tests/bench/sort/run.sh [BUILD_DIR] - sortd throughput beside lzop -1.
#
# Generates SORT_BENCH_RECORDS (default 2,000,000; the recorded figures use
# 20,000,000) delimited records of about 200 bytes and 10 fields over 1,000
# units (250 interfaces x 4 hourly buckets) in SORT_BENCH_DIR (default
# /tmp/sort-bench), then SORT_BENCH_PAIRS times (default 1), alternating:
#   1. lzop -1 compresses the same bytes (the yardstick);
#   2. sortd reads them with the file source, parses, routes and lands every
#      unit as lzop files with indexes (fsync on, as in production).
# Prints per run MB/s, records/s, CPU seconds (user + system), peak RSS
# (/usr/bin/time -v), minor page faults and the load average; then the medians, the ratio
# sortd/lzop of the medians (target >= 1.6 on 20M records) and the median of
# the pair ratios, and sortd's highest peak RSS (target < 512 MB). Checks that
# every record landed in every run. SORT_BENCH_SORTD_BASE=path/to/sortd adds
# that binary as a third contender in each round (before/after a change).
# SORT_BENCH_TZ (default UTC) sets the stream's time zone, e.g. Europe/Berlin
# to measure routing through a named zone. SORT_BENCH_KEEP_OUTPUT=1 keeps
# every run's landed files until the end (disk: about 0.4 x the input per
# sortd run) instead of deleting them just before the next run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-$ROOT/build}
N=${SORT_BENCH_RECORDS:-2000000}
PAIRS=${SORT_BENCH_PAIRS:-1}
BASE=${SORT_BENCH_SORTD_BASE:-}
T=${SORT_BENCH_DIR:-/tmp/sort-bench}
FSYNC=${SORT_BENCH_FSYNC:-true}
TZNAME=${SORT_BENCH_TZ:-UTC}
KEEP=${SORT_BENCH_KEEP_OUTPUT:-0}
OLD=0
SORTD=$BUILD/bin/sortd
GEN=$BUILD/bin/sort_gen
[ -x "$SORTD" ] && [ -x "$GEN" ] || { echo "build sortd and sort_gen in $BUILD first" >&2; exit 2; }

rm -rf "$T"
mkdir -p "$T/old"
trap 'rm -rf "$T"' EXIT
echo "generating $N records in $T/in"
"$GEN" --out "$T/in" --records "$N" --files 20 --ifaces 250 --span 14400
BYTES=$(du -cb "$T"/in/* | tail -1 | cut -f1)
MB=$(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')
cat "$T"/in/* >/dev/null # warm the page cache for both contenders

secs() { awk '/Elapsed \(wall clock\)/ { n = split($NF, a, ":"); s = 0;
                 for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s }' "$1"; }
cpu() { awk '/User time|System time/ { s += $NF } END { printf "%.2f", s }' "$1"; }
rss_mb() { awk '/Maximum resident set size/ { printf "%.0f", $NF / 1024 }' "$1"; }
faults() { awk '/Minor \(reclaiming a frame\) page faults/ { print $NF }' "$1"; }
load() { cut -d' ' -f1 /proc/loadavg; }

. "$(dirname "$0")/bench_spec.sh"
bench_spec "$T/in" "$TZNAME" "$FSYNC" >"$T/spec.json"

# One run of a contender; appends "name wall cpu rss load" to $T/runs.
run_lzop() {
    local l0; l0=$(load)
    /usr/bin/time -v lzop -1 -c "$T"/in/* >"$T/all.lzo" 2>"$T/lzop.time"
    rm -f "$T/all.lzo"
    echo "lzop $(secs "$T/lzop.time") $(cpu "$T/lzop.time") $(rss_mb "$T/lzop.time") $l0 $(faults "$T/lzop.time")" >>"$T/runs"
}
run_sortd() { # name binary
    local l0; l0=$(load)
    if [ "$KEEP" = 1 ]; then
        # The last run's files stay until the end: on ext4 without a journal
        # every inode freed in the last 30 s is skipped at each create, so
        # deleting 4,000 inodes just before a run slows its file creation.
        [ ! -d "$T/blob" ] || mv "$T/blob" "$T/old/blob.$((++OLD))"
        rm -rf "$T/work" "$T/state"
    else
        rm -rf "$T/work" "$T/state" "$T/blob"
    fi
    ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state ORRERY_SORT_BLOB_ROOT=file://$T/blob \
        ORRERY_LOG_LEVEL=warn /usr/bin/time -v "$2" run --stream "$T/spec.json" \
        >"$T/sortd.out" 2>"$T/sortd.time"
    local landed
    landed=$(find "$T/blob" -name 'part-*.lzo' | sed 's/.*-n\([0-9]*\)\.lzo$/\1/' |
        awk '{ s += $1 } END { print s + 0 }')
    [ "$landed" = "$N" ] || { echo "FAIL: $1: $landed records landed, expected $N" >&2; exit 1; }
    echo "$1 $(secs "$T/sortd.time") $(cpu "$T/sortd.time") $(rss_mb "$T/sortd.time") $l0 $(faults "$T/sortd.time")" >>"$T/runs"
}

: >"$T/runs"
for i in $(seq 1 "$PAIRS"); do
    echo "round $i of $PAIRS on $MB MB (load $(load))"
    run_lzop
    # sortd and the base binary swap places every round (ABBA...), so
    # neither always runs right after lzop.
    if [ -n "$BASE" ] && [ $((i % 2)) -eq 0 ]; then
        run_sortd base "$BASE"
        run_sortd sortd "$SORTD"
    else
        run_sortd sortd "$SORTD"
        [ -z "$BASE" ] || run_sortd base "$BASE"
    fi
done

awk -v mb="$MB" -v n="$N" -v tz="$TZNAME" '
function median(v, k,    i, j, t) {
    for (i = 2; i <= k; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
}
{
    c = $1; k = ++cnt[c]; wall[c, k] = $2; cpu[c, k] = $3; rss[c, k] = $4; ld[c, k] = $5
    if ($4 > maxrss[c]) maxrss[c] = $4
    printf "%-6s run %d  %7.2f s  %7.1f MB/s  %10.0f records/s  CPU %6.2f s  peak RSS %4d MB  load %s  minor faults %s\n",
        c, k, $2, mb / $2, n / $2, $3, $4, $5, $6
}
END {
    printf "records          %d (%.1f MB), time zone %s, %d round(s)\n", n, mb, tz, cnt["lzop"]
    split("lzop sortd base", names, " ")
    for (q = 1; q <= 3; q++) {
        c = names[q]; if (!cnt[c]) continue
        for (k = 1; k <= cnt[c]; k++) { w[k] = wall[c, k]; u[k] = cpu[c, k] }
        mw[c] = median(w, cnt[c]); mc[c] = median(u, cnt[c])
        printf "%-6s median    %7.2f s  %7.1f MB/s  %10.0f records/s  CPU %6.2f s (%.3f us/record)  peak RSS max %d MB\n",
            c, mw[c], mb / mw[c], n / mw[c], mc[c], mc[c] * 1e6 / n, maxrss[c]
    }
    for (q = 2; q <= 3; q++) {
        c = names[q]; if (!cnt[c]) continue
        for (k = 1; k <= cnt[c]; k++) r[k] = wall["lzop", k] / wall[c, k]
        printf "ratio  %-6s    %.2f (lzop -1 time / %s time, of the medians; median of pair ratios %.2f; target >= 1.6)\n",
            c, mw["lzop"] / mw[c], c, median(r, cnt[c])
        printf "cpu    %-6s    %.2f (%s CPU seconds / lzop -1 CPU seconds, medians)\n", c, mc[c] / mc["lzop"], c
    }
    if (cnt["base"])
        printf "now/base        CPU %.3f, wall %.3f (sortd / base, medians)\n", mc["sortd"] / mc["base"], mw["sortd"] / mw["base"]
}' "$T/runs"
