#!/usr/bin/env bash
# pg_floor.sh BUILD [BATCHES="1 4 8 16"] [CLIENTS=3] [SECONDS=5] - PostgreSQL
# alone doing halleyd's combined transition statement (hl_tcomb.c): the floor
# under TransitionInstance, whatever gRPC and halleyd cost.
#
# Needs a running stack (deploy/stack.sh start; eval "$(deploy/stack.sh env)")
# whose PostgreSQL runs with the settings to measure (ORRERY_STACK_DURABLE=1
# for fsync on). Makes a fresh database with halleyd's migrations (BUILD/bin/
# halleyd migrate), one task and CLIENTS x BATCH instances, then for each
# batch size runs pgbench (prepared statements, CLIENTS connections, like
# halleyd's combiner leaders) where each transaction is ONE statement of the
# same shape as halleyd's: the compare-and-set UPDATE of BATCH instances over
# unnest()ed arrays, their transition rows and events, the attempt upsert and
# the lease-release trigger, flipping the client's own instances waiting ->
# ready and back. Prints transitions/s and PostgreSQL's CPU time (user+sys of
# the postmaster and its children, from /proc) per transition. Bounded by
# SECONDS per batch size; loopback only. Not a ctest test: figures go to
# docs/benchmarks.md.
set -euo pipefail
BUILD=$(cd "${1:?usage: pg_floor.sh BUILD [BATCHES] [CLIENTS] [SECONDS]}" && pwd)
BATCHES=${2:-1 4 8 16}
CLIENTS=${3:-3}
SECS=${4:-5}
: "${ORRERY_PG_DSN:?run inside a stack: eval \"\$(deploy/stack.sh env)\"}"
: "${ORRERY_VAR_DIR:?ORRERY_VAR_DIR must name the stack (its pg/postmaster.pid)}"
DB=orrery_pg_floor
BASE=${ORRERY_PG_DSN%/*}
DSN=$BASE/$DB
PGPID=$(head -n 1 "$ORRERY_VAR_DIR/pg/postmaster.pid")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/orrery-pg-floor.XXXXXX")
trap 'rm -rf -- "$TMP"; psql -XqAt "$ORRERY_PG_DSN" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true' EXIT

# CPU ticks (user+sys) of the postmaster, its live children and the
# children it has reaped (pgbench's backends end with pgbench).
pg_ticks() {
	local t p
	t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$PGPID/stat")
	for p in $(cat /proc/"$PGPID"/task/*/children 2>/dev/null); do
		[[ -r /proc/$p/stat ]] || continue
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

psql -XqAt "$ORRERY_PG_DSN" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null 2>&1
ORRERY_HALLEY_PG_DSN=$DSN ORRERY_HALLEY_TOKEN=pg-floor-bench \
	ORRERY_HALLEY_SECRET_KEY=0707070707070707070707070707070707070707070707070707070707070707 \
	"$BUILD/bin/halleyd" migrate >"$TMP/migrate.log" 2>&1 || {
	echo "pg_floor.sh: halleyd migrate failed: $(cat "$TMP/migrate.log")" >&2
	exit 1
}
MAXB=0
for b in $BATCHES; do ((b > MAXB)) && MAXB=$b; done
psql -XqAt "$DSN" -v ON_ERROR_STOP=1 >/dev/null <<SQL
INSERT INTO teams (name) VALUES ('floor');
INSERT INTO tasks (name, team_id, type) SELECT 'floor', id, 'shell' FROM teams;
INSERT INTO task_versions (task_id, version, spec) SELECT id, 1, '{}' FROM tasks;
INSERT INTO instances (task_id, task_version, schedule_time, state)
  SELECT t.id, 1, now() + g * interval '1 second', 'waiting'
  FROM tasks t, generate_series(1, $CLIENTS * $MAXB) g;
SQL
FIRST=$(psql -XqAt "$DSN" -c 'SELECT min(id) FROM instances')

# The statement of hl_tcomb.c (q_transition_many) as it stood when these
# floors were measured (before a run's start rows and the exit code's copy
# on the instance, migrations/0021), with its arrays built from the
# client's instance ids instead of bound parameters.
stmt() { # FROM TO
	local n=':bs::int'
	cat <<SQL
WITH x AS (SELECT * FROM unnest(ARRAY(SELECT generate_series(:first::int8, :first::int8 + $n - 1))::int8[],
 array_fill('$1'::text, ARRAY[$n]), array_fill('$2'::text, ARRAY[$n]),
 array_fill('bench'::text, ARRAY[$n]), array_fill('bench'::text, ARRAY[$n]),
 array_fill(''::text, ARRAY[$n]), array_fill(0, ARRAY[$n]), array_fill(0, ARRAY[$n]),
 array_fill(false, ARRAY[$n]), array_fill(NULL::int, ARRAY[$n]), array_fill(false, ARRAY[$n]))
 WITH ORDINALITY AS x(xid, xexp, xnew, xactor, xreason, xexec, xatt, xinc, xfin, xexit, xrec, xord)),
 u AS (UPDATE instances i SET state = x.xnew, attempt = i.attempt + x.xinc,
  task_version = CASE WHEN x.xinc = 1 THEN (SELECT ct.current_version FROM tasks ct
   WHERE ct.id = i.task_id) ELSE i.task_version END,
  executor = CASE WHEN x.xnew = 'dispatched' THEN x.xexec ELSE i.executor END,
  reason = x.xreason, updated_at = now(),
  started_at = CASE WHEN x.xnew = 'running' THEN now() WHEN x.xnew = 'waiting' THEN NULL ELSE i.started_at END,
  finished_at = CASE WHEN x.xfin THEN now() WHEN x.xnew = 'waiting' THEN NULL ELSE i.finished_at END
 FROM x WHERE i.id = x.xid AND i.state = x.xexp AND (x.xatt = 0 OR i.attempt = x.xatt)
 RETURNING i.*, x.xexp, x.xactor, x.xreason, x.xfin, x.xexit, x.xrec, x.xord),
 tr AS (INSERT INTO instance_transitions (instance_id, attempt, from_state, to_state, actor, reason, executor)
  SELECT id, attempt, xexp, state, xactor, xreason, executor FROM u),
 att AS (INSERT INTO attempts (instance_id, attempt, executor, state, exit_code, reason, finished_at, task_version)
  SELECT id, attempt, executor, state, xexit, xreason, CASE WHEN xfin THEN now() END, task_version FROM u WHERE xrec
  ON CONFLICT (instance_id, attempt) DO UPDATE SET state = excluded.state),
 ev AS (INSERT INTO events (kind, task_id, instance_id, executor, payload)
  SELECT 'instance.transition', task_id, id, executor, jsonb_build_object('from', xexp,
  'to', state, 'attempt', attempt, 'actor', xactor, 'reason', xreason) FROM u ORDER BY xord
  RETURNING id, instance_id)
SELECT i.id, i.state, i.attempt, (SELECT xa.exit_code FROM attempts xa WHERE xa.instance_id = i.id
 AND xa.attempt = i.attempt), ev.id, i.xord FROM u i JOIN ev ON ev.instance_id = i.id JOIN tasks t ON t.id = i.task_id;
SQL
}

# Wait until every backend of $DB has ended and been reaped by the postmaster
# (its CPU time is then in the postmaster's cutime/cstime); at most 10 s.
pg_settled() {
	local i p busy
	for ((i = 0; i < 200; i++)); do
		busy=0
		for p in $(cat /proc/"$PGPID"/task/*/children 2>/dev/null); do
			grep -q "$DB" "/proc/$p/cmdline" 2>/dev/null && busy=1
		done
		((busy == 0)) && return 0
		sleep 0.05
	done
	echo "pg_floor.sh: backends of $DB still there after 10 s; CPU figures may be short" >&2
}

HZ=$(getconf CLK_TCK)
printf 'PostgreSQL alone, the combined transition statement, %d connections, %d s each (fsync=%s)\n' \
	"$CLIENTS" "$SECS" "$(psql -XAt "$DSN" -c 'show fsync')"
for b in $BATCHES; do
	{
		printf '\\set bs %d\n\\set first %d + (:client_id * %d)\n' "$b" "$FIRST" "$MAXB"
		stmt waiting ready | tr '\n' ' '
		echo
		stmt ready waiting | tr '\n' ' '
		echo
	} >"$TMP/flip.sql"
	pg_settled
	t0=$(pg_ticks)
	out=$(pgbench -n -M prepared -c "$CLIENTS" -j 1 -T "$SECS" -f "$TMP/flip.sql" "$DSN" 2>&1) || {
		echo "pg_floor.sh: pgbench failed: $out" >&2
		exit 1
	}
	pg_settled
	t1=$(pg_ticks)
	tps=$(grep -oE 'tps = [0-9.]+' <<<"$out" | head -n 1 | cut -d' ' -f3)
	n=$(grep -oE 'number of transactions actually processed: [0-9]+' <<<"$out" | grep -oE '[0-9]+$')
	lat=$(grep -oE 'latency average = [0-9.]+ ms' <<<"$out" | grep -oE '[0-9.]+')
	[[ -n $tps && -n $n ]] || {
		echo "pg_floor.sh: pgbench failed: $out" >&2
		exit 1
	}
	# Each pgbench transaction runs both statements: 2 x bs transitions.
	awk -v b="$b" -v tps="$tps" -v n="$n" -v dt="$((t1 - t0))" -v hz="$HZ" -v lat="$lat" 'BEGIN {
		tr = n * 2 * b
		printf "  batch %3d: %8.0f transitions/s  %7.0f statements/s  latency/statement %.2f ms  postgres cpu %.1f us/transition, %.0f us/statement\n",
			b, tps * 2 * b, tps * 2, lat / 2, dt / hz * 1e6 / tr, dt / hz * 1e6 / (n * 2)
	}'
done
