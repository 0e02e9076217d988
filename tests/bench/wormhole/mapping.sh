#!/usr/bin/env bash
# What a column mapping costs: PostgreSQL -> PostgreSQL on one generated
# table (bigint id, timestamptz, ~40-byte text, numeric(12,2), boolean),
# run without a mapping, with an identity mapping (copy every column), and
# with a mapping that casts (numeric -> text, timestamptz -> date) and adds a
# constant. With a second binary (a build without mappings), the run without
# a mapping is timed with both, alternating, to show a job without mapping
# is as fast as before. Prints the median rows/s of each.
#
#   eval "$(deploy/stack.sh env)"
#   tests/bench/wormhole/mapping.sh [WORMHOLE_BINARY [BASELINE_BINARY]]
#
# Settings: WH_BENCH_ROWS (default 2000000), WH_BENCH_REPEAT (default 3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
WH=${1:-$ROOT/build/bin/wormhole}
BASE=${2:-}
ROWS=${WH_BENCH_ROWS:-2000000}
REP=${WH_BENCH_REPEAT:-3}
: "${ORRERY_PG_DSN:?set ORRERY_PG_DSN (eval \"\$(deploy/stack.sh env)\")}"
TMP=$(mktemp -d /tmp/wh-map-bench-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pg() { psql "$ORRERY_PG_DSN" -X -q -v ON_ERROR_STOP=1 -At "$@"; }

SRC=wh_mapbench_src
if [[ $(pg -c "SELECT CASE WHEN to_regclass('$SRC') IS NULL THEN -1 ELSE (SELECT count(*) FROM $SRC) END" 2>/dev/null || echo -1) != "$ROWS" ]]; then
	pg -c "DROP TABLE IF EXISTS $SRC"
	pg -c "CREATE TABLE $SRC (id bigint PRIMARY KEY, ts timestamptz NOT NULL, t text, n numeric(12,2), b boolean)"
	pg -c "INSERT INTO $SRC SELECT g, '2024-01-01'::timestamptz + g * interval '1 second',
	              md5(g::text) || to_hex(g), (g % 10000000) / 100.0, g % 3 = 0
	         FROM generate_series(1, $ROWS) g"
fi
pg -c "DROP TABLE IF EXISTS wh_mapbench_dst; CREATE UNLOGGED TABLE wh_mapbench_dst (LIKE $SRC)"
pg -c "DROP TABLE IF EXISTS wh_mapbench_cast;
       CREATE UNLOGGED TABLE wh_mapbench_cast (id bigint, day date, t text, n text, b boolean, origin text)"

R="\"reader\":{\"type\":\"postgres\",\"dsn_env\":\"ORRERY_PG_DSN\",\"table\":\"$SRC\"}"
W="\"type\":\"postgres\",\"dsn_env\":\"ORRERY_PG_DSN\",\"mode\":\"truncate\""
echo "{\"progress_interval_ms\":0,$R,\"writers\":[{$W,\"table\":\"wh_mapbench_dst\"}]}" >"$TMP/plain.json"
echo "{\"progress_interval_ms\":0,$R,\"writers\":[{$W,\"table\":\"wh_mapbench_dst\",\"mapping\":[
 {\"target\":\"id\",\"source\":\"id\"},{\"target\":\"ts\",\"source\":\"ts\"},{\"target\":\"t\",\"source\":\"t\"},
 {\"target\":\"n\",\"source\":\"n\"},{\"target\":\"b\",\"source\":\"b\"}]}]}" >"$TMP/identity.json"
echo "{\"progress_interval_ms\":0,$R,\"writers\":[{$W,\"table\":\"wh_mapbench_cast\",\"mapping\":[
 {\"target\":\"id\",\"source\":\"id\"},{\"target\":\"day\",\"source\":\"ts\",\"cast\":\"date\"},{\"target\":\"t\",\"source\":\"t\"},
 {\"target\":\"n\",\"source\":\"n\",\"cast\":\"text\"},{\"target\":\"b\",\"source\":\"b\"},{\"target\":\"origin\",\"constant\":\"bench\"}]}]}" >"$TMP/cast.json"

rate() { # BINARY JOB -> rows/s
	"$1" run "$2" 2>/dev/null | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert d['status']=='ok', d; print(int(d['rows_per_sec']))"
}
median() { tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A got
for ((i = 0; i < REP; i++)); do
	[[ -n $BASE ]] && got[base]+="$(rate "$BASE" "$TMP/plain.json") "
	got[plain]+="$(rate "$WH" "$TMP/plain.json") "
	got[identity]+="$(rate "$WH" "$TMP/identity.json") "
	got[cast]+="$(rate "$WH" "$TMP/cast.json") "
done
echo "rows: $ROWS, runs each: $REP (median rows/s)"
for k in base plain identity cast; do
	[[ -n ${got[$k]:-} ]] || continue
	printf '%-9s %10s   (%s)\n' "$k" "$(echo "${got[$k]}" | xargs | median)" "$(echo "${got[$k]}" | xargs)"
done
pg -c "DROP TABLE IF EXISTS wh_mapbench_dst, wh_mapbench_cast"
