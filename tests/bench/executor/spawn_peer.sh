#!/usr/bin/env bash
# tests/bench/executor/spawn_peer.sh [BUILD_DIR] [RUNS] [ROUNDS] - what
# starting a task process costs on this machine, whoever starts it: the
# CPU per run of executord's sandbox alone (bench_spawn, nofiles: rlimits,
# setuid, exec of `/bin/sh -c true`, wait, the group's kill) beside bash
# starting the same command, one at a time, and bash starting /bin/true
# (the smallest exec there is), and the sandbox again, 64 at once, with it
# and every task on one CPU (taskset -c 0): what running starts on both
# CPUs at once costs beside running them on one. ROUNDS times (default 3),
# RUNS runs each (default 500, at most 5000). CPU is user + system of the
# process and the children it reaped. Needs root for bench_spawn's switch
# of user (run as orrery-task, deploy/install-deps.sh makes it). Not a
# ctest test: the figures go to docs/benchmarks.md.
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-500}
ROUNDS=${3:-3}
((RUNS >= 1 && RUNS <= 5000)) || { echo "RUNS must be 1..5000" >&2; exit 2; }
((ROUNDS >= 1 && ROUNDS <= 10)) || { echo "ROUNDS must be 1..10" >&2; exit 2; }
BIN=$(cd "$BUILD" && pwd)/bin
cd /tmp
per_run() { # label command...: CPU ms per run from time(1)
    local label=$1 t
    shift
    t=$(mktemp)
    /usr/bin/time -o "$t" -f '%U %S %e' "$@" >/dev/null 2>&1
    read -r u s e <"$t"
    rm -f "$t"
    awk -v l="$label" -v u="$u" -v s="$s" -v e="$e" -v n="$RUNS" \
        'BEGIN { printf "%-28s %6.2f ms CPU per run, %5.0f runs/s\n", l, (u + s) * 1000 / n, n / e }'
}
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r (load $(cut -d' ' -f1 /proc/loadavg))"
    "$BIN/bench_spawn" "$RUNS" 1 nofiles | sed 's/^/  /'
    "$BIN/bench_spawn" "$RUNS" 64 nofiles | sed 's/^/  /'
    taskset -c 0 "$BIN/bench_spawn" "$RUNS" 64 nofiles | sed 's/^/  one CPU: /'
    per_run "  bash: /bin/sh -c true" bash -c "for i in \$(seq $RUNS); do /bin/sh -c true; done"
    per_run "  bash: /bin/true" bash -c "for i in \$(seq $RUNS); do /bin/true; done"
done
