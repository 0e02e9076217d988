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
# a thread's last 0.1 s may be missing. Beside the CPU seconds, from
# /proc/PID/task/*/schedstat: the seconds a thread was runnable but waited
# for a core (run queue: the machine's load) and the seconds it slept
# (between its first and last sample, neither running nor runnable: waiting
# for another thread, a lock, a pack, or I/O).
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
    # tid, utime + stime (fields 14 and 15; the comm holds no spaces), then
    # the sample time and the task's schedstat (ns on a core, ns runnable)
    now=$(date +%s.%N)
    for st in /proc/$pid/task/*/stat; do
        d=${st%/stat}
        { awk '{ gsub(/[()]/, "", $2); printf "%s %s %s ", $1, $2, $14 + $15 }' "$st" &&
            echo "$now $(cat "$d/schedstat")"; } 2>/dev/null || true
    done >>"$T/samples"
    sleep 0.1
done
wait $pid
end=$(date +%s.%N)
awk -v tick="$tick" -v wall="$(echo "$end - $start" | bc)" -v ld="$(cut -d' ' -f1 /proc/loadavg)" '
NF >= 6 { if (!($1 in cpu)) { order[++n] = $1; t0[$1] = $4; on0[$1] = $5; rq0[$1] = $6 }
          name[$1] = $2; cpu[$1] = $3; t1[$1] = $4; oncpu[$1] = $5; rq[$1] = $6 }
END {
    printf "wall %.2f s, load %s\n", wall, ld
    for (i = 1; i <= n; i++) {
        t = order[i]; s += cpu[t] / tick
        slept = (t1[t] - t0[t]) - (oncpu[t] - on0[t]) / 1e9 - (rq[t] - rq0[t]) / 1e9
        printf "  thread %-8s %-16s CPU %6.2f s  run queue %6.2f s  slept %6.2f s\n", t,
               i == 1 ? "main" : name[t], cpu[t] / tick, rq[t] / 1e9, slept < 0 ? 0 : slept
    }
    printf "  all threads CPU %.2f s\n", s
}' "$T/samples"
