#!/bin/bash
# abab.sh - the uncached list's CPU per request per process (cpu.py) and its
# HTTP rates (run.py with the response cache off), alternating the build
# before a change (BEFORE) and after it (AFTER) in one run, ROUNDS times, so
# both see the same machine. Each line of cpu.py and run.py carries the load.
#
# usage: eval "$(deploy/stack.sh env)"
#        tests/bench/galaxy/abab.sh BEFORE_BUILD AFTER_BUILD [ROUNDS] [cpu|http|both]
# (defaults 2 rounds, both). Every run is bounded (cpu.py and run.py bound
# their own wrk and pgbench runs; timeout bounds each script).
set -u
before=$1 after=$2 rounds=${3:-2} what=${4:-both}
here=$(cd "$(dirname "$0")" && pwd)
for r in $(seq 1 "$rounds"); do
    for side in before after; do
        build=$before
        [ "$side" = after ] && build=$after
        if [ "$what" != http ]; then
            echo "=== cpu.py $side #$r $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
            timeout 600 /usr/bin/python3 "$here/cpu.py" "$build" 5 4 0 | sed -n "/^  list /,\$p"
        fi
        if [ "$what" != cpu ]; then
            echo "=== run.py $side #$r $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
            ORRERY_GALAXY_CACHE_TTL=0s timeout 900 /usr/bin/python3 "$here/run.py" "$build" 5 8 1
        fi
    done
done
