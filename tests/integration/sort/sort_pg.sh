#!/usr/bin/env bash
# sort_pg.sh SORTD SORT_GEN - the PostgreSQL record sink against a real
# PostgreSQL (ORRERY_PG_DSN; a fresh database per run, dropped at the end).
#
#  1. values: a jsonl stream (PostgreSQL only) with tabs, newlines,
#     backslashes, quotes, unicode (escaped and raw), empty strings and
#     missing/null fields lands row for row with exactly those values; a
#     second run over the same input adds nothing (offsets table).
#  2. refused rows: values PostgreSQL refuses (not an integer) become
#     db_refused rejects, every other row lands.
#  3. kill -9: a generated file source into files AND PostgreSQL, then into
#     PostgreSQL only. The input comes in parts: round r puts file r into
#     the source folder (the source tails it and never ends) and sortd is
#     killed once the table holds rows of that run past a random point of
#     what it was fed, while the later files are held back (kill_mid_run
#     checks it while the process is stopped). A last run gets the last
#     file and ends at the end of the input: the table holds exactly the
#     source's rows (count, distinct ids, id checksum) and so do the files.
set -euo pipefail
SORTD=$1
GEN=$2
. "$(dirname "$0")/sort_lib.sh"
[ -n "${ORRERY_PG_DSN:-}" ] || fail "ORRERY_PG_DSN is not set"

N=${SORT_PG_RECORDS:-100000}
ROUNDS=${SORT_PG_ROUNDS:-4}
T=$(mktemp -d /tmp/sort-pg.XXXXXX)
DB=sortpg_$$_$RANDOM
BASE=${ORRERY_PG_DSN%%\?*}
BASE=${BASE%/*}
export SORT_PG_TEST_DSN="$BASE/$DB"
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    psql -q "$ORRERY_PG_DSN" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT
psql -q -v ON_ERROR_STOP=1 "$ORRERY_PG_DSN" -c "CREATE DATABASE $DB" >/dev/null
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$SORT_PG_TEST_DSN" -c "$1"; }
q "CREATE SCHEMA it; CREATE TABLE it.vals (k text, v text, n bigint);
   CREATE TABLE it.nums (id text, n integer);
   CREATE TABLE it.gen (id bigint, ts bigint, iface text, path text, ua text)"
export ORRERY_LOG_LEVEL=warn ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_BLOB_ROOT=file://$T/blob ORRERY_SORT_PACKS=8 ORRERY_SORT_MAX_OPEN_UNITS=16

# ---- 1. values ---------------------------------------------------------
cat >"$T/vals.json" <<JSON
{"name": "pgvals", "business": "bk",
 "source": {"type": "file", "path": "$T/vin", "exit_at_eof": true},
 "format": {"type": "jsonl", "fields": ["k", "ts", "v", "n"]},
 "interface": {"const": "vals"},
 "time": {"field": "ts", "format": "epoch_s"},
 "bucket": "hour",
 "check": {"enabled": false},
 "sinks": {"files": false,
           "postgres": {"dsn_env": "SORT_PG_TEST_DSN", "table": "it.vals",
                        "columns": ["k", "v", "n"], "batch_rows": 3, "batch_ms": 50}}}
JSON
mkdir -p "$T/vin"
# Raw bytes in the file: a literal tab and raw UTF-8 are legal inside JSON strings
# only when escaped, so the raw ones use JSON escapes and the rest raw text.
printf '%s\n' \
    '{"k":"tab","ts":1700000000,"v":"a\tb","n":1}' \
    '{"k":"nl","ts":1700000000,"v":"line1\nline2\r\n","n":2}' \
    '{"k":"bs","ts":1700000000,"v":"back\\slash \\N and \\\\t","n":3}' \
    '{"k":"quote","ts":1700000000,"v":"say \"hi\" /\/","n":4}' \
    '{"k":"uni_esc","ts":1700000000,"v":"\u00e9\u4e2d\ud83d\ude00","n":5}' \
    '{"k":"uni_raw","ts":1700000000,"v":"é中😀","n":6}' \
    '{"k":"empty","ts":1700000000,"v":"","n":7}' \
    '{"k":"null","ts":1700000000,"v":null,"n":8}' \
    '{"k":"missing","ts":1700000000,"n":9}' \
    '{"k":"nulln","ts":1700000000,"v":"x","n":null}' \
    '{"k":"bad_time","ts":"soon","v":"x","n":10}' >"$T/vin/a.jsonl"
"$SORTD" run --stream "$T/vals.json" >"$T/vals.out" 2>"$T/vals.err" ||
    fail "values run failed: $(cat "$T/vals.err")"
grep -q '"pg_rows":10,' "$T/vals.out" || fail "values: expected 10 rows: $(cat "$T/vals.out")"
check_val() { # KEY EXPECTED_SQL_EXPR
    local ok
    ok=$(q "SELECT count(*) FROM it.vals WHERE k = '$1' AND v IS NOT DISTINCT FROM $2")
    [ "$ok" = 1 ] || fail "value of $1: got [$(q "SELECT coalesce(v, '<NULL>') FROM it.vals WHERE k='$1'")]"
}
check_val tab "E'a\\tb'"
check_val nl "E'line1\\nline2\\r\\n'"
check_val bs "E'back\\\\slash \\\\N and \\\\\\\\t'"
check_val quote "'say \"hi\" //'"
check_val uni_esc "U&'\\00E9\\4E2D\\+01F600'"
check_val uni_raw "U&'\\00E9\\4E2D\\+01F600'"
check_val empty "''"
check_val null "NULL"
check_val missing "NULL"
[ "$(q "SELECT count(*) FROM it.vals WHERE k='empty' AND v IS NOT NULL AND v = ''")" = 1 ] ||
    fail "empty string landed as NULL"
[ "$(q "SELECT count(*) FROM it.vals WHERE k='nulln' AND n IS NULL")" = 1 ] || fail "null number"
[ "$(q "SELECT sum(n) FROM it.vals")" = 45 ] || fail "numbers: sum $(q "SELECT sum(n) FROM it.vals")"
[ "$(q "SELECT count(*) FROM it.vals")" = 10 ] || fail "values: $(q "SELECT count(*) FROM it.vals") rows"
# Replay from the start: everything is below the offset stored in PostgreSQL.
"$SORTD" replay --stream "$T/vals.json" --from 0 >/dev/null || fail "replay failed"
"$SORTD" run --stream "$T/vals.json" >"$T/vals2.out" 2>"$T/vals2.err" ||
    fail "second values run failed: $(cat "$T/vals2.err")"
[ "$(q "SELECT count(*) FROM it.vals")" = 10 ] || fail "second run added rows"
grep -q '"replay_dropped":11,' "$T/vals2.out" || fail "second run: $(cat "$T/vals2.out")"
echo "values: ok"

# ---- 2. refused rows ---------------------------------------------------
cat >"$T/nums.json" <<JSON
{"name": "pgnums", "business": "bk",
 "source": {"type": "file", "path": "$T/nin", "exit_at_eof": true},
 "format": {"type": "delimited", "delimiter": "|", "fields": ["id", "ts", "n"]},
 "interface": {"const": "nums"},
 "time": {"field": "ts", "format": "epoch_s"},
 "bucket": "hour",
 "check": {"enabled": false},
 "sinks": {"files": false,
           "postgres": {"dsn": "$SORT_PG_TEST_DSN", "table": "it.nums",
                        "columns": ["id", "n"], "batch_rows": 50}}}
JSON
mkdir -p "$T/nin"
for i in $(seq 0 199); do
    case $i in
    17) echo "r$i|1700000000|seventeen" ;;
    120) echo "r$i|1700000000|99999999999" ;;
    *) echo "r$i|1700000000|$i" ;;
    esac
done >"$T/nin/a.txt"
"$SORTD" run --stream "$T/nums.json" >"$T/nums.out" 2>"$T/nums.err" ||
    fail "refused-rows run failed: $(cat "$T/nums.err")"
[ "$(q "SELECT count(*) FROM it.nums")" = 198 ] || fail "refused: $(q "SELECT count(*) FROM it.nums") rows landed"
[ "$(q "SELECT count(*) FROM it.nums WHERE id IN ('r17','r120')")" = 0 ] || fail "a refused row landed"
[ "$(q "SELECT sum(n) FROM it.nums")" = $((199 * 200 / 2 - 17 - 120)) ] || fail "refused: wrong sum"
grep -q '"db_refused":2' "$T/nums.out" || fail "rejects not counted: $(cat "$T/nums.out")"
[ "$(grep -c 'reason=db_refused' "$T/state/pgnums.rejects" || true)" = 2 ] ||
    fail "reject file lacks the refused rows"
grep -q 'record="r17|1700000000|seventeen"' "$T/state/pgnums.rejects" || fail "reject record"
echo "refused rows: ok"

# ---- 3. kill -9 --------------------------------------------------------
"$GEN" --out "$T/gin" --records "$N" --files $((ROUNDS + 1)) --ifaces 7 --span 7200 >/dev/null
parts=("$T"/gin/part-*.log)
[ "${#parts[@]}" = $((ROUNDS + 1)) ] || fail "sort_gen made ${#parts[@]} files, expected $((ROUNDS + 1))"
q "CREATE TABLE it.gen_pg (LIKE it.gen)"
kill_rounds() { # NAME TABLE FILES(true|false)
    local name=$1 table=$2 files=$3
    mkdir "$T/in.$name"
    cat >"$T/$name.json" <<JSON
{"name": "$name", "business": "bk",
 "source": {"type": "file", "path": "$T/in.$name", "exit_at_eof": false, "read_size": 16384},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s"},
 "bucket": "hour",
 "output": {"roll_size": 65536, "roll_age_ms": 200},
 "check": {"enabled": false},
 "sinks": {"files": $files,
           "postgres": {"dsn_env": "SORT_PG_TEST_DSN", "table": "$table",
                        "columns": ["id", "ts", "iface", "path", "ua"],
                        "batch_rows": 700, "batch_ms": 100}}}
JSON
    sed 's/"exit_at_eof": false/"exit_at_eof": true/' "$T/$name.json" >"$T/$name.final.json"
    local round start past fed=0
    for round in $(seq 1 "$ROUNDS"); do
        feed "${parts[$((round - 1))]}" "$T/in.$name"
        fed=$((fed + $(wc -l <"${parts[$((round - 1))]}")))
        start=$(q "SELECT count(*) FROM $table")
        past=$(pick_below "$start" "$fed")
        "$SORTD" run --stream "$T/$name.json" >"$T/$name.out.$round" 2>"$T/$name.err.$round" &
        pid=$!
        kill_mid_run "$pid" "$name round $round" "$start" "$past" "$N" q "SELECT count(*) FROM $table"
        pid=
        echo "$name round $round: killed with $KILLED_AT of $fed fed rows in the table ($start before it)"
    done
    feed "${parts[$ROUNDS]}" "$T/in.$name"
    "$SORTD" run --stream "$T/$name.final.json" >"$T/$name.out" 2>"$T/$name.err" ||
        fail "$name: final run failed: $(cat "$T/$name.err")"
    echo "$name final run: $(cat "$T/$name.out")"
    local cnt dist sum
    read -r cnt dist sum <<<"$(q "SELECT count(*), count(DISTINCT id), sum(id) FROM $table" | tr '|' ' ')"
    [ "$cnt" = "$N" ] || fail "$name: table holds $cnt rows, expected $N"
    [ "$dist" = "$N" ] || fail "$name: table holds $dist distinct ids, expected $N"
    [ "$sum" = $((N * (N - 1) / 2)) ] || fail "$name: id checksum $sum, expected $((N * (N - 1) / 2))"
    [ "$(q "SELECT count(*) FROM $table WHERE iface IS NULL OR ts IS NULL")" = 0 ] ||
        fail "$name: NULL columns"
}
kill_rounds pgboth it.gen true
verify_landed "$T/blob" "$N" nocheck
kill_rounds pgonly it.gen_pg false
[ -z "$(find "$T/blob" -path '*pgonly*' -name 'part-*' 2>/dev/null)" ] || fail "pgonly wrote files"
echo "PASS sort_pg"
