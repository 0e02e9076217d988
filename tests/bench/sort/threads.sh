#!/usr/bin/env bash
# tests/bench/sort/threads.sh SORTD INPUT_DIR [OUT_DIR] - one sortd run over
# INPUT_DIR (files made by sort_gen, e.g. `sort_gen --out DIR --records
# 5000000 --files 20 --ifaces 250 --span 14400`) with run.sh's stream spec,
# printing the CPU seconds (user + system) of each of its threads: which
# thread is the critical path on two cores. Threads in the order they
# started, with their names: the main thread (read, frame, parse, route),
# then per writer its landing thread (sortd-land<I>) and the writer
# (sortd-write<I>).
# /proc/PID/task/*/stat is sampled every 0.1 s (bounded: 2,000 samples), so
# a thread's last 0.1 s may be missing.
set -euo pipefail
SORTD=$1
IN=$2
T=${3:-/tmp/sort-threads}
rm -rf "$T/work" "$T/state" "$T/blob"
mkdir -p "$T"
. "$(dirname "$0")/bench_spec.sh"
bench_spec "$IN" UTC true >"$T/spec.json"
tick=$(getconf CLK_TCK)
start=$(date +%s.%N)
ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state ORRERY_SORT_BLOB_ROOT=file://$T/blob \
    ORRERY_LOG_LEVEL=warn "$SORTD" run --stream "$T/spec.json" >"$T/sortd.out" 2>&1 &
pid=$!
: >"$T/samples"
for _ in $(seq 1 2000); do
    [ -d /proc/$pid/task ] || break
    # tid, utime + stime (fields 14 and 15; the comm holds no spaces)
    awk '{ gsub(/[()]/, "", $2); print $1, $2, $14 + $15 }' /proc/$pid/task/*/stat \
        >>"$T/samples" 2>/dev/null || true
    sleep 0.1
done
wait $pid
end=$(date +%s.%N)
awk -v tick="$tick" -v wall="$(echo "$end - $start" | bc)" -v ld="$(cut -d' ' -f1 /proc/loadavg)" '
{ if (!($1 in cpu)) order[++n] = $1; name[$1] = $2; cpu[$1] = $3 }
END {
    printf "wall %.2f s, load %s\n", wall, ld
    for (i = 1; i <= n; i++) {
        t = order[i]; s += cpu[t] / tick
        printf "  thread %-8s %-16s CPU %6.2f s\n", t, i == 1 ? "main" : name[t], cpu[t] / tick
    }
    printf "  all threads CPU %.2f s\n", s
}' "$T/samples"
