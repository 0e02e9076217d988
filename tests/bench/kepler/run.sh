#!/usr/bin/env bash
# run.sh - keplerd's scheduler benchmark against a real stack.
#
#   tests/bench/kepler/run.sh BUILD_DIR
#
# Shape (the figure of the design): KPB_TASKS hourly tasks in Halley
# (default 100000), of which KPB_READY (default 10000) depend strongly on one
# manual upstream task; one instance of each of those downstreams is created
# for the same schedule time (all waiting), then the upstream's instance, so
# its success releases KPB_READY instances at once. KPB_EXECUTORS stand-in
# executors (default 4) of KPB_SLOTS slots (default 64) run every dispatch as
# a no-op (dispatched -> running -> success at once). KPB_EXECUTOR picks them:
#   batch      (default) kpb_tool executor: lists what is dispatched to it
#              every 10 ms and moves it on in TransitionInstances batches, so
#              the figures measure keplerd + halleyd, not an executor;
#   it         the integration tests' stand-in (kp_it_tool executor): follows
#              events, one GetInstance and two TransitionInstance per run;
#   executord  the real executord serve, rlimit sandbox, command "true"
#              (as root: tasks run as an unprivileged user).
#
# Steps: fresh database; halleyd migrate + serve; the team and three template
# tasks through halleyd's RPC (CreateTask), plus a sample of KPB_RPC_SAMPLE
# filler tasks through CreateTask from 4 threads (its rate is printed); halleyd
# is stopped, the remaining tasks are cloned from the templates with one
# INSERT ... SELECT per table (tasks, task_versions, task_dependencies: the
# rows halleyd's CreateTask writes, same spec apart from the name), halleyd
# restarted; executors and keplerd start; the downstream instances and then
# the upstream instance are created through CreateInstances.
#
# Figures (from PostgreSQL's instance_transitions and keplerd's log/proc):
#   index rebuild      keplerd log: "leadership gained" -> "state rebuilt"
#   dispatch rate      ready->dispatched transitions of the downstreams:
#                      count / (last - first), and over the middle 80 %
#   latency            upstream's running->success to each downstream's
#                      waiting->ready and ready->dispatched: p50 / p99 / max
#                      (the raw figure: with S = KPB_EXECUTORS x KPB_SLOTS
#                      slots, all but the first S wait for slots to free)
#   scheduler latency  the part keplerd is responsible for: for the k-th
#                      downstream dispatch (k = 0, 1, ... in time order) the
#                      moment it could have gone is when it was eligible
#                      (the upstream's success) and a slot was free: the
#                      upstream's success for k < S, else the later of that
#                      and the (k-S)-th downstream success (every run takes
#                      one slot, so the k-th dispatch needs the slot the
#                      (k-S)-th finished run gave back); scheduler latency =
#                      dispatch - that moment, queue wait = that moment -
#                      upstream success (capacity, not the scheduler): p50 /
#                      p99 / max of both
#   one step           runs reported dispatched -> their end in one transition
#                      (executord's running_hold), from the events table
#   reads / calls      executord: its runs' instance reads and the GetInstances
#                      calls that made them (runs that start together share
#                      one), from its /metrics
#   memory             keplerd VmHWM (peak RSS) from /proc/<pid>/status
#   CPU per instance   user + system time of the executors (with the task
#                      processes they reaped), keplerd, halleyd, and, when
#                      ORRERY_VAR_DIR names the stack, its PostgreSQL
#                      (postmaster and backends) and ZooKeeper, from just
#                      before the upstream instance is made to the end of
#                      the flow, divided by KPB_READY (/proc/<pid>/stat)
#
# Environment: ORRERY_PG_DSN and ORRERY_ZK must be set (deploy/stack.sh env);
# unset is a failure. KPB_TASKS, KPB_READY, KPB_EXECUTORS, KPB_SLOTS,
# KPB_RPC_SAMPLE (default 1000), KPB_ALERT_RULES (default 0: alert rules made
# before keplerd starts, kpb_tool alert-rules; with any, every task also has
# a finish_by deadline of 1h, so keplerd arms a deadline for every instance
# and evaluates every transition against the rules), KPB_WAIT (seconds the flow may take, default
# 600), KPB_KEEP=1 keeps the work directory, KPB_OLD_DIR=DIR moves it into
# DIR at the end instead of deleting it (a rename frees no inode: on ext4
# without a journal every file created in the next minutes would skip the
# thousands of inodes a deletion frees, and the next run would pay for this
# one's cleanup; ab.sh and perf_exec.sh pass it). Hourly tasks fire at the top of
# the hour: when the next one would fall inside the run (within KPB_WAIT +
# 120 s) the script waits for it to pass first (new tasks only fire from
# their creation on), so no hourly materialisation mixes into the figures;
# the table says how many instances other than the benchmark's exist at the
# end.
#
# Every daemon is stopped by its pid at the end and the database is dropped.
# Exit 0 when every downstream instance succeeded, 1 otherwise.
set -euo pipefail

die() {
	echo "run.sh: FAIL: $*" >&2
	exit 1
}

[ $# -eq 1 ] || {
	echo "usage: tests/bench/kepler/run.sh BUILD_DIR" >&2
	exit 2
}
BUILD=$(cd -- "$1" && pwd -P) || die "BUILD_DIR $1 does not exist"
BIN=$BUILD/bin
for b in halleyd keplerd kp_it_tool kpb_tool; do
	[ -x "$BIN/$b" ] || die "$BIN/$b is not built"
done
[ -n "${ORRERY_PG_DSN:-}" ] || die "ORRERY_PG_DSN is not set (eval \"\$(deploy/stack.sh env)\")"
[ -n "${ORRERY_ZK:-}" ] || die "ORRERY_ZK is not set (eval \"\$(deploy/stack.sh env)\")"

TASKS=${KPB_TASKS:-100000}
READY=${KPB_READY:-10000}
EXECUTORS=${KPB_EXECUTORS:-4}
SLOTS=${KPB_SLOTS:-64}
SAMPLE=${KPB_RPC_SAMPLE:-1000}
WAIT=${KPB_WAIT:-600}
RULES=${KPB_ALERT_RULES:-0}
EXECUTOR=${KPB_EXECUTOR:-batch}
case $EXECUTOR in batch | it | executord) ;; *) die "KPB_EXECUTOR: batch, it or executord, not $EXECUTOR" ;; esac
[ "$EXECUTOR" != executord ] || [ -x "$BIN/executord" ] || die "$BIN/executord is not built"
for v in TASKS READY EXECUTORS SLOTS SAMPLE WAIT RULES; do
	[[ ${!v} =~ ^[0-9]+$ ]] || die "KPB_$v: not a number: ${!v}"
done
[ "$READY" -ge 1 ] || die "KPB_READY: must be at least 1"
[ "$TASKS" -ge $((READY + 2)) ] || die "KPB_TASKS: must be at least KPB_READY + 2"
[ "$EXECUTORS" -ge 1 ] && [ "$EXECUTORS" -le 64 ] || die "KPB_EXECUTORS: must be in [1, 64]"
[ "$SLOTS" -ge 1 ] && [ "$SLOTS" -le 4096 ] || die "KPB_SLOTS: must be in [1, 4096]"
[ "$WAIT" -ge 10 ] && [ "$WAIT" -le 7200 ] || die "KPB_WAIT: must be in [10, 7200]"
FILLERS=$((TASKS - READY - 1))
[ "$SAMPLE" -le $((FILLERS - 1)) ] || SAMPLE=$((FILLERS - 1))

now_s() { date +%s; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

WORK=$(mktemp -d /tmp/kpb-XXXXXX)
DB="kpb_$$_$(date +%s)"
DSN=$(python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit((p.scheme,p.netloc,"/"+sys.argv[2],p.query,p.fragment)))' "$ORRERY_PG_DSN" "$DB")
TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
HPORT=$(free_port)
HMPORT=$(free_port) # its metrics
ZK="$ORRERY_ZK/kpb-$$"
PIDS_EXEC=()
EXEC_MPORTS=() # executord's metrics ports
HALLEY_PID=""
KEPLER_PID=""
DB_MADE=0

sql() { psql "$DSN" -v ON_ERROR_STOP=1 -qAtc "$1"; }

stop_pid() { # pid: SIGTERM, wait up to 10 s, then SIGKILL
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	set +e
	stop_pid "$KEPLER_PID"
	for p in "${PIDS_EXEC[@]}"; do stop_pid "$p"; done
	stop_pid "$HALLEY_PID"
	if [ "$DB_MADE" = 1 ]; then
		psql "$ORRERY_PG_DSN" -qAtc "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" >/dev/null 2>&1
	fi
	if [ "${KPB_KEEP:-0}" = 1 ]; then
		echo "run.sh: logs kept in $WORK" >&2
	elif [ -n "${KPB_OLD_DIR:-}" ] && [ -d "$KPB_OLD_DIR" ]; then
		mv "$WORK" "$KPB_OLD_DIR/" || rm -rf "$WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

export KP_IT_HALLEY=127.0.0.1:$HPORT KP_IT_TOKEN=$TOKEN KP_IT_ZK=$ZK
export KPB_HALLEY=127.0.0.1:$HPORT KPB_TOKEN=$TOKEN

start_halley() { # exec: run in a subshell "( start_halley serve ) &" so $! is halleyd
	exec env ORRERY_HALLEY_LISTEN=127.0.0.1:$HPORT ORRERY_HALLEY_TOKEN=$TOKEN ORRERY_HALLEY_PG_DSN=$DSN \
		ORRERY_HALLEY_SECRET_KEY=$(printf 'ab%.0s' {1..32}) \
		ORRERY_HALLEY_METRICS_LISTEN=127.0.0.1:$HMPORT \
		"$BIN/halleyd" "$@" >>"$WORK/halleyd.log" 2>&1
}

wait_port() { # port pid what: up to 30 s
	local i
	for ((i = 0; i < 300; i++)); do
		kill -0 "$2" 2>/dev/null || die "$3 exited at start (see $WORK)"
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	die "$3 did not listen on port $1 within 30 s"
}

wait_sql() { # seconds expected-value sql: poll every 0.5 s
	local i n=$(($1 * 2)) v=""
	for ((i = 0; i < n; i++)); do
		v=$(sql "$3")
		[ "$v" = "$2" ] && return 0
		sleep 0.5
	done
	echo "run.sh: waited $1 s for [$3] = $2, last $v" >&2
	return 1
}

# CPU time (user + system, ms) of a process and the children it reaped,
# summed over the pids given; 0 for a pid that is gone.
cpu_ms() {
	python3 - "$@" <<'PY'
import os, sys
tck = os.sysconf("SC_CLK_TCK")
t = 0
for p in sys.argv[1:]:
    try:
        f = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        continue
    t += sum(int(x) for x in f[11:15])  # utime stime cutime cstime
print(t * 1000 // tck)
PY
}
# The stack's PostgreSQL (postmaster and its backends) and ZooKeeper, when
# ORRERY_VAR_DIR names the stack's folder (deploy/stack.sh env).
stack_pids() { # pg | zk
	local f=${ORRERY_VAR_DIR:-/nonexistent}/run/$1.pid pid
	[ -r "$f" ] || return 0
	pid=$(cat "$f")
	echo "$pid"
	[ "$1" != pg ] || ps -o pid= --ppid "$pid" 2>/dev/null || true
}
# "executord keplerd halleyd postgresql zookeeper" CPU ms, one line.
cpu_all() {
	echo "$(cpu_ms "${PIDS_EXEC[@]}") $(cpu_ms "$KEPLER_PID") $(cpu_ms "$HALLEY_PID")" \
		"$(cpu_ms $(stack_pids pg)) $(cpu_ms $(stack_pids zk))"
}

# --- keep the top of the hour out of the run
left=$((3600 - $(now_s) % 3600))
if [ "$left" -lt $((WAIT + 120)) ]; then
	echo "run.sh: the hour turns in $left s: waiting for it so no hourly fire falls in the run" >&2
	sleep $((left + 2))
fi

echo "== $(date -u +%FT%TZ) tasks=$TASKS ready=$READY executors=${EXECUTORS}x$SLOTS ($EXECUTOR) alert_rules=$RULES"
echo "uptime: $(uptime)"

# --- database and halleyd
psql "$ORRERY_PG_DSN" -v ON_ERROR_STOP=1 -qAtc "CREATE DATABASE \"$DB\"" || die "CREATE DATABASE"
DB_MADE=1
(start_halley migrate) || die "halleyd migrate (see $WORK/halleyd.log)"
(start_halley serve) &
HALLEY_PID=$!
wait_port "$HPORT" "$HALLEY_PID" halleyd

"$BIN/kp_it_tool" zk-root
"$BIN/kp_it_tool" team bench >/dev/null
HOURLY='"team":"bench","type":"shell","schedule":"0 * * * *","config":{"command":"true"}'
[ "$RULES" = 0 ] || HOURLY="$HOURLY"',"deadlines":{"finish_by":"1h"}'
UP_ID=$("$BIN/kp_it_tool" task '{"name":"kpb-up","team":"bench","type":"shell","config":{"command":"true"}}')
D0_ID=$("$BIN/kp_it_tool" task "{\"name\":\"kpb-d-0000000\",$HOURLY,\"upstreams\":[{\"kind\":\"strong\",\"task\":\"kpb-up\"}]}")
F0_ID=$("$BIN/kp_it_tool" task "{\"name\":\"kpb-f-0000000\",$HOURLY}")
RPC_LINE="(none)"
if [ "$SAMPLE" -gt 0 ]; then
	RPC_LINE=$("$BIN/kpb_tool" tasks-rpc kpb-r- "$SAMPLE" 4 "{$HOURLY}") || die "CreateTask sample"
fi

# --- bulk clone of the remaining tasks (halleyd stopped, so no cache holds stale rows)
stop_pid "$HALLEY_PID"
HALLEY_PID=""
CLONE_D=$((READY - 1))
CLONE_F=$((FILLERS - 1 - SAMPLE))
t0=$(date +%s.%N)
psql "$DSN" -v ON_ERROR_STOP=1 -q <<SQL
BEGIN;
INSERT INTO tasks (name, team_id, type)
  SELECT 'kpb-d-' || lpad(g::text, 7, '0'), t.team_id, t.type
  FROM tasks t, generate_series(1, $CLONE_D) g WHERE t.id = $D0_ID ORDER BY g;
INSERT INTO tasks (name, team_id, type)
  SELECT 'kpb-f-' || lpad(g::text, 7, '0'), t.team_id, t.type
  FROM tasks t, generate_series(1, $CLONE_F) g WHERE t.id = $F0_ID ORDER BY g;
INSERT INTO task_versions (task_id, version, spec, schedule, timezone, created_by)
  SELECT n.id, 1, jsonb_set(v.spec, '{name}', to_jsonb(n.name)), v.schedule, v.timezone, v.created_by
  FROM tasks n JOIN task_versions v
    ON v.task_id = CASE WHEN n.name LIKE 'kpb-d-%' THEN $D0_ID ELSE $F0_ID END AND v.version = 1
  WHERE n.id > GREATEST($D0_ID, $F0_ID) AND (n.name LIKE 'kpb-d-%' OR n.name LIKE 'kpb-f-%');
INSERT INTO task_dependencies (task_id, upstream_task_id, kind, cycle, data_unit, position)
  SELECT n.id, d.upstream_task_id, d.kind, d.cycle, d.data_unit, d.position
  FROM tasks n JOIN task_dependencies d ON d.task_id = $D0_ID
  WHERE n.name LIKE 'kpb-d-%' AND n.id <> $D0_ID;
COMMIT;
ANALYZE tasks, task_versions, task_dependencies;
SQL
CLONE_S=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)")
N=$(sql "SELECT count(*) FROM tasks t JOIN task_versions v ON v.task_id = t.id")
[ "$N" = "$TASKS" ] || die "expected $TASKS tasks, found $N"
read -r DMIN DMAX < <(sql "SELECT min(id), max(id) FROM tasks WHERE name LIKE 'kpb-d-%' AND id <> $D0_ID" | tr '|' ' ')

(start_halley serve) &
HALLEY_PID=$!
wait_port "$HPORT" "$HALLEY_PID" halleyd
[ "$RULES" = 0 ] || "$BIN/kpb_tool" alert-rules bench "$RULES" || die "alert rules"

# --- executors and keplerd
for ((i = 0; i < EXECUTORS; i++)); do
	case $EXECUTOR in
	batch)
		KPB_ZK=$ZK "$BIN/kpb_tool" executor "kpb-exec-$i" "$SLOTS" $((WAIT + 600)) \
			>"$WORK/executor-$i.log" 2>&1 &
		;;
	it)
		"$BIN/kp_it_tool" executor "kpb-exec-$i" "$SLOTS" 0 >"$WORK/executor-$i.log" 2>&1 &
		;;
	executord)
		chmod 755 "$WORK" # tasks run as an unprivileged user
		mkdir -p "$WORK/work-$i" "$WORK/blob"
		EXEC_MPORTS+=("$(free_port)")
		ORRERY_EXECUTOR_METRICS_LISTEN=127.0.0.1:${EXEC_MPORTS[-1]} ORRERY_EXECUTOR_ID=kpb-exec-$i ORRERY_EXECUTOR_HOST=127.0.0.1 \
			ORRERY_EXECUTOR_HALLEY=127.0.0.1:$HPORT ORRERY_EXECUTOR_HALLEY_TOKEN=$TOKEN \
			ORRERY_EXECUTOR_ZK=$ZK ORRERY_EXECUTOR_SLOTS=$SLOTS \
			ORRERY_EXECUTOR_LISTEN=127.0.0.1:$(free_port) ORRERY_EXECUTOR_LOG_TOKEN=kpb \
			ORRERY_EXECUTOR_WORK_DIR=$WORK/work-$i ORRERY_EXECUTOR_BLOB_ROOT=$WORK/blob \
			ORRERY_EXECUTOR_CGROUP=rlimit "$BIN/executord" serve >"$WORK/executor-$i.log" 2>&1 &
		;;
	esac
	PIDS_EXEC+=($!)
done
ORRERY_KEPLER_HALLEY=127.0.0.1:$HPORT ORRERY_KEPLER_HALLEY_TOKEN=$TOKEN ORRERY_KEPLER_ZK=$ZK \
	ORRERY_KEPLER_ID=kpb ORRERY_LOG_LEVEL=${KPB_LOG_LEVEL:-info} \
	"$BIN/keplerd" run >"$WORK/keplerd.log" 2>&1 &
KEPLER_PID=$!
for ((i = 0; i < 1200; i++)); do
	grep -q "state rebuilt from halley" "$WORK/keplerd.log" && break
	kill -0 "$KEPLER_PID" 2>/dev/null || die "keplerd exited (see $WORK/keplerd.log)"
	sleep 0.1
done
grep -q "state rebuilt from halley" "$WORK/keplerd.log" || die "keplerd did not rebuild within 120 s"
ts_of() { grep -m1 "$1" "$WORK/keplerd.log" | sed -n 's/^ts=\([^ ]*\) .*/\1/p'; }
REBUILD_S=$(python3 -c "
import sys, datetime as d
f = lambda s: d.datetime.strptime(s, '%Y-%m-%dT%H:%M:%S.%fZ')
print('%.2f' % (f(sys.argv[2]) - f(sys.argv[1])).total_seconds())" \
	"$(ts_of 'kepler leadership gained')" "$(ts_of 'state rebuilt from halley')")
REBUILT=$(grep -m1 "state rebuilt from halley" "$WORK/keplerd.log" | sed -n 's/.*\(tasks=[0-9]*\).*/\1/p')
RSS_IDLE=$(awk '/VmRSS/ {print $2}' "/proc/$KEPLER_PID/status")

# wait until keplerd has seen every executor in ZooKeeper (30 s at most)
for ((i = 0; i < 300; i++)); do
	n=$(grep -c "executor seen" "$WORK/keplerd.log" || true)
	[ "$n" -ge "$EXECUTORS" ] && break
	sleep 0.1
done
[ "$n" -ge "$EXECUTORS" ] || die "keplerd saw $n of $EXECUTORS executors within 30 s"

# --- the downstream instances (waiting on the upstream's cycle), then the upstream
T0=1700000000000
"$BIN/kpb_tool" instances $T0 "$D0_ID" "$D0_ID" >/dev/null || die "CreateInstances"
if [ "$CLONE_D" -gt 0 ]; then
	"$BIN/kpb_tool" instances $T0 "$DMIN" "$DMAX" >/dev/null || die "CreateInstances"
fi
wait_sql 60 "$READY" "SELECT count(*) FROM instances i JOIN tasks t ON t.id = i.task_id
	WHERE t.name LIKE 'kpb-d-%' AND i.state = 'waiting'" || die "downstream instances not all waiting"
sleep 3 # keplerd has read their events and checked their dependencies
EARLY=$(sql "SELECT count(*) FROM instances WHERE state <> 'waiting'")
[ "$EARLY" = 0 ] || die "$EARLY downstream instances left waiting before the upstream ran"
CPU0=$(cpu_all)
"$BIN/kpb_tool" instances $T0 "$UP_ID" "$UP_ID" >/dev/null || die "CreateInstances (upstream)"
START=$(now_s)

# --- wait for the flow, sampling keplerd's RSS
DONE_SQL="SELECT count(*) FROM instances i JOIN tasks t ON t.id = i.task_id
	WHERE t.name LIKE 'kpb-d-%' AND i.state = 'success'"
done_n=0
while [ $(($(now_s) - START)) -lt "$WAIT" ]; do
	done_n=$(sql "$DONE_SQL")
	[ "$done_n" = "$READY" ] && break
	kill -0 "$KEPLER_PID" 2>/dev/null || die "keplerd exited mid-run"
	sleep 1
done
HWM=$(awk '/VmHWM/ {print $2}' "/proc/$KEPLER_PID/status")
RSS=$(awk '/VmRSS/ {print $2}' "/proc/$KEPLER_PID/status")
LOAD=$(uptime)
CPU1=$(cpu_all)

# --- figures from the transition history
read -r UP_OK < <(sql "SELECT extract(epoch FROM x.at) FROM instance_transitions x
	JOIN instances i ON i.id = x.instance_id WHERE i.task_id = $UP_ID AND x.to_state = 'success'")
[ -n "$UP_OK" ] || die "the upstream instance never succeeded"
FIG=$(psql "$DSN" -v ON_ERROR_STOP=1 -qAt -F ' ' <<SQL
WITH d AS (
  SELECT i.id, x.to_state, extract(epoch FROM x.at) - $UP_OK AS lat, extract(epoch FROM x.at) AS at
  FROM instances i JOIN tasks t ON t.id = i.task_id
  JOIN instance_transitions x ON x.instance_id = i.id AND x.attempt = 1
  WHERE t.name LIKE 'kpb-d-%'),
disp AS (SELECT * FROM d WHERE to_state = 'dispatched'),
rdy AS (SELECT * FROM d WHERE to_state = 'ready'),
mid AS (SELECT percentile_disc(0.1) WITHIN GROUP (ORDER BY at) AS a,
               percentile_disc(0.9) WITHIN GROUP (ORDER BY at) AS b FROM disp),
fin AS MATERIALIZED (SELECT array_agg(at ORDER BY at, id) AS a FROM d WHERE to_state = 'success'),
dk AS MATERIALIZED (SELECT at, row_number() OVER (ORDER BY at, id) AS k FROM disp),
free AS (SELECT dk.at AS at,
           GREATEST($UP_OK, COALESCE(fin.a[dk.k - $((EXECUTORS * SLOTS))], $UP_OK)) AS avail
         FROM dk, fin),
sl AS MATERIALIZED (SELECT at - avail AS lat, avail - $UP_OK AS qw FROM free)
SELECT
  (SELECT count(*) FROM disp),
  (SELECT round((count(*) / GREATEST(max(at) - min(at), 0.001))::numeric, 0) FROM disp),
  (SELECT round((count(*) / GREATEST(mid.b - mid.a, 0.001))::numeric, 0)
     FROM disp, mid WHERE disp.at >= mid.a AND disp.at <= mid.b GROUP BY mid.a, mid.b),
  (SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY lat))::numeric, 3) FROM disp),
  (SELECT round((percentile_cont(0.99) WITHIN GROUP (ORDER BY lat))::numeric, 3) FROM disp),
  (SELECT round(max(lat)::numeric, 3) FROM disp),
  (SELECT round(min(lat)::numeric, 3) FROM disp),
  (SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY lat))::numeric, 3) FROM rdy),
  (SELECT round((percentile_cont(0.99) WITHIN GROUP (ORDER BY lat))::numeric, 3) FROM rdy),
  (SELECT round(max(lat)::numeric, 3) FROM rdy),
  (SELECT count(*) FROM (SELECT id FROM disp ORDER BY lat LIMIT $((EXECUTORS * SLOTS))) f),
  (SELECT round(max(lat)::numeric, 3) FROM (SELECT lat FROM disp ORDER BY lat LIMIT $((EXECUTORS * SLOTS))) f),
  (SELECT count(*) FROM instances WHERE task_id <> $UP_ID AND task_id NOT IN
     (SELECT id FROM tasks WHERE name LIKE 'kpb-d-%')),
  (SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY lat))::numeric, 3) FROM sl),
  (SELECT round((percentile_cont(0.99) WITHIN GROUP (ORDER BY lat))::numeric, 3) FROM sl),
  (SELECT round(max(lat)::numeric, 3) FROM sl),
  (SELECT round((percentile_cont(0.5) WITHIN GROUP (ORDER BY qw))::numeric, 3) FROM sl),
  (SELECT round((percentile_cont(0.99) WITHIN GROUP (ORDER BY qw))::numeric, 3) FROM sl),
  (SELECT round(max(qw)::numeric, 3) FROM sl);
SQL
)
read -r N_DISP RATE_ALL RATE_MID P50_D P99_D MAX_D MIN_D P50_R P99_R MAX_R N_FIRST MAX_FIRST OTHER \
	P50_S P99_S MAX_S P50_Q P99_Q MAX_Q <<<"$FIG"

printf '\n%-52s %s\n' "figure" "value"
printf '%-52s %s\n' "tasks in halley (indexed by keplerd)" "$TASKS ($REBUILT)"
printf '%-52s %s\n' "CreateTask through RPC, 4 threads (sample)" "$RPC_LINE"
printf '%-52s %s\n' "bulk clone of the other tasks (INSERT...SELECT), s" "$CLONE_S"
printf '%-52s %s\n' "keplerd index rebuild at start, s" "$REBUILD_S"
printf '%-52s %s\n' "alert rules (keplerd read)" "$RULES ($(grep -m1 -o 'alert rules read" rules=[0-9]*' "$WORK/keplerd.log" || echo none))"
printf '%-52s %s\n' "downstream instances dispatched / succeeded" "$N_DISP / $done_n of $READY"
printf '%-52s %s\n' "dispatch rate, first..last dispatch, inst/s" "$RATE_ALL"
printf '%-52s %s\n' "dispatch rate, middle 80 % of dispatches, inst/s" "$RATE_MID"
printf '%-52s %s\n' "upstream success -> ready, p50/p99/max s" "$P50_R / $P99_R / $MAX_R"
printf '%-52s %s\n' "upstream success -> dispatched, p50/p99/max s" "$P50_D / $P99_D / $MAX_D"
printf '%-52s %s\n' "  first dispatch after upstream success, s" "$MIN_D"
printf '%-52s %s\n' "scheduler latency (eligible+slot free -> dispatched)" "$P50_S / $P99_S / $MAX_S"
printf '%-52s %s\n' "  p50/p99/max s; queue wait for a slot, p50/p99/max s" "$P50_Q / $P99_Q / $MAX_Q"
printf '%-52s %s\n' "  first $N_FIRST dispatched (one slot round), max s" "$MAX_FIRST"
printf '%-52s %s\n' "keplerd RSS after rebuild / at end, MB" "$((RSS_IDLE / 1024)) / $((RSS / 1024))"
printf '%-52s %s\n' "keplerd peak RSS (VmHWM), MB" "$((HWM / 1024))"
printf '%-52s %s\n' "other instances (hourly fires) at end" "$OTHER"
# A run that ended within executord's running_hold is one transition event
# (dispatched -> its end); the stand-in executors always make two.
ONE_STEP=$(sql "SELECT count(*) FROM events e JOIN instances i ON i.id = e.instance_id
  JOIN tasks t ON t.id = i.task_id WHERE t.name LIKE 'kpb-d-%' AND e.kind = 'instance.transition'
  AND e.payload->>'from' = 'dispatched' AND e.payload->>'to' <> 'running'")
printf '%-52s %s\n' "runs reported in one step (dispatched -> end)" "$ONE_STEP of $READY"
# Sum of the named counters over the /metrics of the ports given: "-"
# when one cannot be read.
metric_sum() { # name port...
	python3 - "$@" <<'PY'
import sys, urllib.request
name, total = sys.argv[1], 0
for port in sys.argv[2:]:
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        print("-")
        sys.exit(0)
    for ln in text.splitlines():
        k, _, v = ln.partition(" ")
        if k == name:
            total += int(float(v))
print(total)
PY
}
if [ "${#EXEC_MPORTS[@]}" -gt 0 ]; then # executord: its runs' reads, and the calls that made them
	READS=$(metric_sum executor_instance_reads_total "${EXEC_MPORTS[@]}")
	CALLS=$(metric_sum executor_instance_read_calls_total "${EXEC_MPORTS[@]}")
	[ "$CALLS" = 0 ] && READS=- CALLS=-
	printf '%-52s %s\n' "runs' instance reads / calls that made them" "$READS / $CALLS"
fi
printf '%-52s %s\n' "halleyd: events table reads / events from the window" \
	"$(metric_sum halley_watch_reads_total "$HMPORT") / $(metric_sum halley_watch_window_events_total "$HMPORT")"
read -r C0E C0K C0H C0P C0Z <<<"$CPU0"
read -r C1E C1K C1H C1P C1Z <<<"$CPU1"
cpu_per() { python3 -c "import sys; print('%.2f' % ((int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[3])))" "$1" "$2" "$READY"; }
printf '%-52s %s\n' "CPU per instance, ms: executors (with their tasks)" "$(cpu_per "$C0E" "$C1E")"
printf '%-52s %s\n' "  keplerd / halleyd" "$(cpu_per "$C0K" "$C1K") / $(cpu_per "$C0H" "$C1H")"
printf '%-52s %s\n' "  postgresql backends / zookeeper (stack)" "$(cpu_per "$C0P" "$C1P") / $(cpu_per "$C0Z" "$C1Z")"
printf '%-52s %s\n' "load at end" "${LOAD#*load average: }"

[ "$done_n" = "$READY" ] || die "only $done_n of $READY downstream instances succeeded within $WAIT s"
exit 0
