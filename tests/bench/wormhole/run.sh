#!/usr/bin/env bash
# Wormhole benchmark against the obvious peers, on one generated table
# (bigint id, timestamptz, ~40-byte text, numeric(12,2), boolean):
#
#   PostgreSQL -> PostgreSQL   vs  psql "COPY ... TO STDOUT" | psql "COPY ... FROM STDIN"
#   CSV file   -> PostgreSQL   vs  psql "\copy ... FROM file CSV"
#   MariaDB    -> PostgreSQL   vs  pgloader
#
# Prints rows/s for each, the ratio wormhole/peer, and wormhole's peak RSS
# (from /usr/bin/time -v). Rerunnable: the generated source tables and CSV
# are kept (and reused) until the row count changes; every target is
# truncated before each run.
#
#   eval "$(deploy/stack.sh env)"     # ORRERY_PG_DSN, ORRERY_MYSQL_DSN
#   tests/bench/wormhole/run.sh [WORMHOLE_BINARY | BUILD_DIR]
#
# Settings: WH_BENCH_ROWS (default 10000000), WH_BENCH_DIR (default
# /tmp/wh-bench), WH_BENCH_CHANNELS (wormhole channels of the database
# readers and writers, default 1), WH_BENCH_CSV_WRITERS (PostgreSQL writer
# channels of the CSV run, default 2: one file is one reader stream, the
# load runs on two COPY connections), WH_BENCH_TIMEOUT (seconds per step,
# default 3600), WH_BENCH_PAIRS (which pairs to run, default "pg csv my"),
# WH_BENCH_ROUNDS (PostgreSQL pair: rounds of pipe then wormhole, alternating;
# the table shows the medians and each round is printed, default 1).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
WH=${1:-$ROOT/build/bin/wormhole}
[[ ! -d $WH ]] || WH=$WH/bin/wormhole # a build folder, as the other benchmarks take
ROWS=${WH_BENCH_ROWS:-10000000}
DIR=${WH_BENCH_DIR:-/tmp/wh-bench}
CH=${WH_BENCH_CHANNELS:-1}
CSVW=${WH_BENCH_CSV_WRITERS:-2}
TMO=${WH_BENCH_TIMEOUT:-3600}
PAIRS=" ${WH_BENCH_PAIRS:-pg csv my} "
ROUNDS=${WH_BENCH_ROUNDS:-1}
: "${ORRERY_PG_DSN:?set ORRERY_PG_DSN (eval \"\$(deploy/stack.sh env)\")}"
: "${ORRERY_MYSQL_DSN:?set ORRERY_MYSQL_DSN (eval \"\$(deploy/stack.sh env)\")}"
[[ -f $WH && -x $WH ]] || { echo "no wormhole binary at $WH" >&2; exit 1; }
[[ $ROWS =~ ^[0-9]+$ && $ROWS -ge 1000 && $ROWS -le 100000000 ]] || { echo "WH_BENCH_ROWS must be 1000..100000000" >&2; exit 1; }
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 && $ROUNDS -le 50 ]] || { echo "WH_BENCH_ROUNDS must be 1..50" >&2; exit 1; }
[[ $PAIRS != *" my "* ]] || command -v pgloader >/dev/null || { echo "pgloader is not installed (apt-get install pgloader)" >&2; exit 1; }
[[ $ORRERY_MYSQL_DSN =~ ^mysql://([^:]+):([^@]*)@([^:/]+):([0-9]+)/([^?]+) ]] || { echo "cannot parse ORRERY_MYSQL_DSN" >&2; exit 1; }
MY_USER=${BASH_REMATCH[1]} MY_PASS=${BASH_REMATCH[2]} MY_HOST=${BASH_REMATCH[3]}
MY_PORT=${BASH_REMATCH[4]} MY_DB=${BASH_REMATCH[5]}
mkdir -p "$DIR"

pg() { timeout "$TMO" psql "$ORRERY_PG_DSN" -X -q -v ON_ERROR_STOP=1 -At "$@"; }
my() { MYSQL_PWD=$MY_PASS timeout "$TMO" mariadb --no-defaults --local-infile=1 -h "$MY_HOST" -P "$MY_PORT" -u "$MY_USER" -N -B "$MY_DB" "$@"; }
want() { [[ $PAIRS == *" $1 "* ]]; }
say() { printf '== %s\n' "$*" >&2; }
now() { date +%s.%N; }

SRC=wh_bench_src DST=wh_bench_dst MY=wh_bench_my

# ---- data (kept between runs) ----------------------------------------------
have=-1
if [[ $(pg -c "SELECT to_regclass('$SRC') IS NOT NULL") == t ]]; then
	have=$(pg -c "SELECT count(*) FROM $SRC")
fi
if [[ $have != "$ROWS" ]]; then
	say "generating $ROWS rows in PostgreSQL"
	pg -c "DROP TABLE IF EXISTS $SRC"
	pg -c "CREATE TABLE $SRC (id bigint PRIMARY KEY, ts timestamptz NOT NULL, t text, n numeric(12,2), b boolean)"
	pg -c "INSERT INTO $SRC SELECT g, '2024-01-01'::timestamptz + g * interval '1 second',
	              md5(g::text) || to_hex(g), (g % 10000000) / 100.0, g % 3 = 0
	         FROM generate_series(1, $ROWS) g"
	pg -c "ANALYZE $SRC"
	rm -f "$DIR/src.csv" "$DIR/my.tsv"
fi
pg -c "CREATE TABLE IF NOT EXISTS $DST (LIKE $SRC); CREATE TABLE IF NOT EXISTS $MY (LIKE $SRC)"
if want csv && [[ ! -s $DIR/src.csv ]]; then
	say "dumping CSV"
	pg -c "COPY $SRC TO STDOUT WITH (FORMAT csv)" >"$DIR/src.csv"
fi
if want my; then
myhave=$(my -e "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '$MY'")
[[ $myhave == 1 ]] && myhave=$(my -e "SELECT COUNT(*) FROM $MY") || myhave=-1
if [[ $myhave != "$ROWS" ]]; then
	say "loading $ROWS rows into MariaDB"
	if [[ ! -s $DIR/my.tsv ]]; then
		pg -c "COPY (SELECT id, to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), t, n, b::int FROM $SRC) TO STDOUT" >"$DIR/my.tsv"
	fi
	my -e "DROP TABLE IF EXISTS $MY; CREATE TABLE $MY (id bigint PRIMARY KEY, ts datetime NOT NULL,
	       t varchar(64), n decimal(12,2), b tinyint(1)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
	       LOAD DATA LOCAL INFILE '$DIR/my.tsv' INTO TABLE $MY"
fi
fi

# ---- runs --------------------------------------------------------------------
declare -A RPS
PEAK=0

# wormhole_run NAME JOB: times one wormhole run into RPS[NAME], tracks peak RSS
wormhole_run() {
	local name=$1 job=$2 t0 t1 rss
	pg -c "TRUNCATE $DST"
	t0=$(now)
	/usr/bin/time -v -o "$DIR/time.txt" timeout "$TMO" "$WH" run "$job" >"$DIR/$name.summary.json" 2>"$DIR/$name.err" ||
		{ cat "$DIR/$name.err" "$DIR/$name.summary.json" >&2; echo "wormhole $name failed" >&2; exit 1; }
	t1=$(now)
	local got
	got=$(pg -c "SELECT count(*) FROM $DST")
	[[ $got == "$ROWS" ]] || { echo "wormhole $name loaded $got rows, want $ROWS" >&2; exit 1; }
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$DIR/time.txt")
	((rss > PEAK)) && PEAK=$rss
	RPS[$name]=$(awk -v r="$ROWS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", r / (b - a)}')
	say "wormhole $name: ${RPS[$name]} rows/s, peak RSS $((rss / 1024)) MB"
}

# peer_run NAME COMMAND...: times a peer into RPS[NAME]
peer_run() {
	local name=$1 t0 t1
	shift
	pg -c "TRUNCATE $DST"
	t0=$(now)
	timeout "$TMO" bash -c "$*" >/dev/null
	t1=$(now)
	local got
	got=$(pg -c "SELECT count(*) FROM $DST")
	[[ $got == "$ROWS" ]] || { echo "peer $name loaded $got rows, want $ROWS" >&2; exit 1; }
	RPS[$name]=$(awk -v r="$ROWS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", r / (b - a)}')
	say "peer $name: ${RPS[$name]} rows/s"
}

cat >"$DIR/pg.json" <<J
{"name":"bench-pg-pg","channels":$CH,"progress_interval_ms":0,
 "reader":{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"$SRC","split":{"key":"id"}},
 "writers":[{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"$DST","mode":"append"}]}
J
cat >"$DIR/csv.json" <<J
{"name":"bench-csv-pg","progress_interval_ms":0,
 "reader":{"type":"file","path":"$DIR/src.csv","columns":[{"name":"id"},{"name":"ts"},{"name":"t"},{"name":"n"},{"name":"b"}]},
 "writers":[{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"$DST","mode":"append","channels":$CSVW}]}
J
cat >"$DIR/my.json" <<J
{"name":"bench-my-pg","channels":$CH,"progress_interval_ms":0,
 "reader":{"type":"mysql","dsn_env":"ORRERY_MYSQL_DSN","table":"$MY","split":{"key":"id"}},
 "writers":[{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"$DST","mode":"append"}]}
J
# pgloader loads MariaDB table $MY into the PostgreSQL table of the same name;
# wormhole's MariaDB run also targets $DST, so both load the same rows.
PGL_PG=${ORRERY_PG_DSN%%\?*}
cat >"$DIR/pgloader.load" <<L
LOAD DATABASE
  FROM mysql://$MY_USER:$MY_PASS@$MY_HOST:$MY_PORT/$MY_DB
  INTO $PGL_PG
  WITH data only, truncate, workers = 4, concurrency = 1
  INCLUDING ONLY TABLE NAMES MATCHING '$MY'
  ALTER SCHEMA '$MY_DB' RENAME TO 'public';
L

median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
if want pg; then
say "PostgreSQL -> PostgreSQL ($ROUNDS rounds, alternating)"
PIPES="" WHS=""
for ((round = 1; round <= ROUNDS; round++)); do
	peer_run pg_pipe "psql '$ORRERY_PG_DSN' -X -q -c 'COPY $SRC TO STDOUT' | psql '$ORRERY_PG_DSN' -X -q -c 'COPY $DST FROM STDIN'"
	wormhole_run pg "$DIR/pg.json"
	PIPES+="${RPS[pg_pipe]} " WHS+="${RPS[pg]} "
	say "round $round: pipe ${RPS[pg_pipe]} wormhole ${RPS[pg]} rows/s, load $(cut -d' ' -f1-3 /proc/loadavg)"
done
RPS[pg_pipe]=$(tr ' ' '\n' <<<"$PIPES" | grep . | median)
RPS[pg]=$(tr ' ' '\n' <<<"$WHS" | grep . | median)
fi
if want csv; then
say "CSV -> PostgreSQL"
peer_run csv_copy "psql '$ORRERY_PG_DSN' -X -q -c \"\\\\copy $DST FROM '$DIR/src.csv' WITH (FORMAT csv)\""
wormhole_run csv "$DIR/csv.json"
fi
if want my; then
say "MariaDB -> PostgreSQL"
# pgloader fills $MY in PostgreSQL: time it there, then check the count there.
pg -c "TRUNCATE $MY"
t0=$(now)
timeout "$TMO" pgloader --no-ssl-cert-verification "$DIR/pgloader.load" >"$DIR/pgloader.log" 2>&1 || { tail -20 "$DIR/pgloader.log" >&2; echo "pgloader failed" >&2; exit 1; }
t1=$(now)
got=$(pg -c "SELECT count(*) FROM $MY")
[[ $got == "$ROWS" ]] || { tail -20 "$DIR/pgloader.log" >&2; echo "pgloader loaded $got rows, want $ROWS" >&2; exit 1; }
RPS[pgloader]=$(awk -v r="$ROWS" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", r / (b - a)}')
say "peer pgloader: ${RPS[pgloader]} rows/s"
wormhole_run my "$DIR/my.json"
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
echo
printf '%-26s %12s %12s %7s %s\n' pair wormhole peer ratio bar
want pg && printf '%-26s %12s %12s %7s %s\n' "PostgreSQL->PostgreSQL" "${RPS[pg]}" "${RPS[pg_pipe]}" "$(ratio "${RPS[pg]}" "${RPS[pg_pipe]}")" ">= 1.00 (1 channel), >= 1.30 (2) (psql COPY pipe)"
want csv && printf '%-26s %12s %12s %7s %s\n' "CSV->PostgreSQL" "${RPS[csv]}" "${RPS[csv_copy]}" "$(ratio "${RPS[csv]}" "${RPS[csv_copy]}")" ">= 0.90 (psql \\copy)"
want my && printf '%-26s %12s %12s %7s %s\n' "MariaDB->PostgreSQL" "${RPS[my]}" "${RPS[pgloader]}" "$(ratio "${RPS[my]}" "${RPS[pgloader]}")" ">= 2.00 (pgloader)"
echo "rows: $ROWS  wormhole channels: $CH (CSV writers: $CSVW)  wormhole peak RSS: $((PEAK / 1024)) MB (bar: < 256 MB)"
