#!/bin/bash
# epoch_ms.sh - what the list's epoch milliseconds cost PostgreSQL alone: a
# page of 51 rows with seven timestamps each (as ListInstances answers),
# read as (extract(epoch) * 1000)::int8 ("numeric", HL_MS), as the lists
# made them before they read timestamps in binary ("list", date_part in a
# CASE), and as plain int8 columns ("none": the irreducible rest). One pgbench client,
# -M prepared, COUNT queries each, ROUNDS times alternating; the figure is
# the server's CPU per query (utime + stime of the postmaster and its
# children from /proc), which holds whatever else the machine runs but not
# other clients of the same server: run it on a stack nothing else uses.
#
# usage: eval "$(deploy/stack.sh env)"; tests/bench/galaxy/epoch_ms.sh [COUNT] [ROUNDS]
set -eu
count=${1:-3000} rounds=${2:-3}
dsn=$ORRERY_PG_DSN
dir=$(mktemp -d)
trap 'psql "$dsn" -qc "DROP TABLE IF EXISTS bench_epoch_ms" >/dev/null 2>&1; rm -rf "$dir"' EXIT
psql "$dsn" -q >/dev/null <<'SQL'
DROP TABLE IF EXISTS bench_epoch_ms;
CREATE TABLE bench_epoch_ms AS SELECT g AS id, now() - g * interval '1.234567 s' AS a,
  now() AS b, now() AS c, now() AS d, now() AS e, now() AS f, now() AS g
  FROM generate_series(1, 2000) g;
CREATE INDEX ON bench_epoch_ms (id);
ANALYZE bench_epoch_ms;
SQL
cols="a b c d e f g"
numeric() { echo "(extract(epoch from $1) * 1000)::int8"; }
list() {
    echo "CASE WHEN $1 >= '1970-01-01 00:00:00+00' AND $1 < '2038-01-19 00:00:00+00' THEN ((date_part('epoch', $1) * 1000000)::int8 + 500) / 1000 ELSE $(numeric "$1") END"
}
none() { echo "id"; }
for form in numeric list none; do
    sel="id"
    for c in $cols; do sel="$sel, $($form $c)"; done
    echo "SELECT $sel FROM bench_epoch_ms WHERE id > 0 ORDER BY id LIMIT 51;" >"$dir/$form.sql"
done
port=$(psql "$dsn" -qAtc "SHOW port")
pm=$(pgrep -o -f "postgres.*(-p $port|port=$port)")
[ -n "$pm" ] || { echo "epoch_ms.sh: no postmaster on port $port" >&2; exit 1; }
cpu() {
    local t=0 f
    for p in $pm $(cat /proc/$pm/task/$pm/children); do
        f=($(sed 's/.*) //' /proc/$p/stat 2>/dev/null)) || continue
        [ ${#f[@]} -gt 14 ] && t=$((t + f[11] + f[12] + f[13] + f[14]))
    done
    echo $t
}
tick=$(getconf CLK_TCK)
for r in $(seq 1 "$rounds"); do
    line="round $r (load $(cut -d' ' -f1 /proc/loadavg)):"
    for form in numeric list none; do
        a=$(cpu)
        pgbench -n -M prepared -c1 -t "$count" -f "$dir/$form.sql" "$dsn" >/dev/null 2>&1
        b=$(cpu)
        line="$line  $form $(((b - a) * 1000000 / tick / count)) us"
    done
    echo "$line  (PostgreSQL CPU per query)"
done
