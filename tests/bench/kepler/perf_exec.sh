#!/usr/bin/env bash
# perf_exec.sh - where one run's CPU goes in executord and its tasks: the
# run of docs/benchmarks.md ("keplerd + the real executord": 1 executord x
# 64 slots, 1,000 instances, rlimit sandbox, task `true`) with
# `perf record -F 999 -g` attached to executord for its whole life (its
# threads and the task processes it starts), then one line of samples per
# run: all, the task's own (any command but executord and its threads,
# "executord-job" and the like), and executord's own. A task's process
# carries its job thread's name from its start to its exec, so the
# sandbox's set-up there counts as executord's own.
# inside the calls that make, sync, rename and remove files.
#
#   tests/bench/kepler/perf_exec.sh BUILD [LABEL]
#
# As root, with the stack's env exported (deploy/stack.sh env, ORRERY_VAR_DIR
# too). The CPU of the whole recording over the 1,000 runs is ms per run. Bounded:
# run.sh's KPB_WAIT=120 s; the pid is looked for at most 60 s. The run's work
# directory is moved into the output folder with the perf data (KPB_OLD_DIR):
# deleting it would make the next run's file creation pay for it (run.sh).
set -euo pipefail
[ $# -ge 1 ] || {
	echo "usage: tests/bench/kepler/perf_exec.sh BUILD [LABEL]" >&2
	exit 2
}
HERE=$(cd -- "$(dirname -- "$0")" && pwd -P)
BUILD=$(cd -- "$1" && pwd -P)
LABEL=${2:-$1}
RUNS=1000
OUT=$(mktemp -d /tmp/perf-exec-XXXXXX)
KPB_OLD_DIR=$OUT KPB_EXECUTOR=executord KPB_EXECUTORS=1 KPB_SLOTS=64 KPB_READY=$RUNS KPB_TASKS=3000 \
	KPB_RPC_SAMPLE=50 KPB_WAIT=120 "$HERE/run.sh" "$BUILD" >"$OUT/run.txt" 2>&1 &
RUN=$!
PID=
for ((i = 0; i < 600; i++)); do
	[ -z "$PID" ] || break
	PID=$(pgrep -f "^$BUILD/bin/executord serve" | head -1 || true)
	[ -n "$PID" ] || sleep 0.1
done
[ -n "$PID" ] || {
	echo "$LABEL: executord never started"
	wait "$RUN" || true
	exit 1
}
perf record -F 999 -g -p "$PID" -o "$OUT/perf.data" >/dev/null 2>&1 &
PERF=$!
wait "$RUN" || echo "$LABEL: run.sh failed (see $OUT/run.txt)"
kill -INT "$PERF" 2>/dev/null || true
wait "$PERF" || true
perf report -i "$OUT/perf.data" --children --sort comm,sym --stdio -g none 2>/dev/null >"$OUT/report.txt" || true
perf report -i "$OUT/perf.data" --no-children --sort comm --stdio -g none 2>/dev/null >"$OUT/comm.txt" || true
# cpu-clock: the event count is nanoseconds of CPU
TOTAL=$(awk '/^# Event count/ {print int($NF / 1000000); exit}' "$OUT/comm.txt")
awk -v l="$LABEL" -v tot="$TOTAL" -v runs="$RUNS" -v f="$OUT/comm.txt" '
	BEGIN {
		while ((getline line < f) > 0) {
			split(line, a, " ")
			if (a[1] ~ /%$/ && a[2] !~ /^executord/) {sub(/%/, "", a[1]); task += a[1]}
		}
	}
	$3 ~ /^executord/ && $1 ~ /%$/ {
		p = $1; sub(/%/, "", p)
		s = $0; sub(/.*\] /, "", s)
		if (s == "do_sys_openat2") open += p
		else if (s == "ext4_create" || s == "ext4_mkdir") create += p
		else if (s == "do_fsync") sync += p
		else if (s == "do_renameat2" || s == "do_linkat" || s == "do_unlinkat" || s == "do_rmdir" || s == "do_sys_ftruncate") names += p
	}
	END {
		ms = tot / runs
		printf "%-8s cpu_ms=%d ms/run: all=%.2f task=%.2f executord_own=%.2f | of it: open=%.2f new_inodes=%.2f fsync=%.2f rename+link+unlink+rmdir+truncate=%.2f\n",
			l, tot, ms, ms * task / 100, ms * (100 - task) / 100, ms * open / 100, ms * create / 100, ms * sync / 100, ms * names / 100
	}' "$OUT/report.txt"
grep -E 'dispatch rate, first|executors \(with|load at end' "$OUT/run.txt" | sed "s/^/$LABEL  /"
echo "$LABEL  perf data and reports: $OUT"
