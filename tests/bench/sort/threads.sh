#!/usr/bin/env bash
# tests/bench/sort/threads.sh SORTD INPUT_DIR [OUT_DIR] - one sortd run over
# INPUT_DIR (files made by sort_gen, e.g. `sort_gen --out DIR --records
# 5000000 --files 20 --ifaces 250 --span 14400`) with run.sh's stream spec,
# printing the CPU seconds (user + system) of each of its threads: which
# thread is the critical path on two cores. Threads by name: the main
# thread ("main": read, frame, parse, route), the signal thread (named
# after the binary; it only waits), per writer its landing thread
# (sortd-land<I>) and the writer (sortd-write<I>), and the checker
# (sortd-check: writes and syncs the _CHECKs of closed buckets).
# Beside the CPU seconds, from /proc/PID/task/*/schedstat: the seconds a
# thread was runnable but waited for a core (run queue: the machine's load)
# and the seconds it slept (neither running nor runnable: waiting for
# another thread, a lock, a pack, or I/O). threads.py samples every 50 ms
# without starting a process per sample.
#   SORT_THREADS_OPTS="--timeline --waits" adds the cores each thread used
#   per half second beside the machine's idle cores, and what the sleeping
#   threads waited for (kernel stacks; needs root).
set -euo pipefail
SORTD=$1
IN=$2
T=${3:-/tmp/sort-threads}
rm -rf "$T/work" "$T/state" "$T/blob"
mkdir -p "$T"
# Read the input once first, so that the run reads it from the page cache:
# input left unread for a while may have been paged out, and a run that
# waits for the disk shows idle cores that are not sortd's.
cat "$IN"/* >/dev/null
. "$(dirname "$0")/bench_spec.sh"
bench_spec "$IN" UTC true >"$T/spec.json"
# shellcheck disable=SC2086 # options are words
ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state ORRERY_SORT_BLOB_ROOT=file://$T/blob \
    ORRERY_LOG_LEVEL=warn python3 "$(dirname "$0")/threads.py" ${SORT_THREADS_OPTS:-} \
    --out "$T/sortd.out" -- "$SORTD" run --stream "$T/spec.json" 2>"$T/sortd.err"
