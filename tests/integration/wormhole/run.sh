#!/usr/bin/env bash
# Integration tests of `wormhole run` against real PostgreSQL and MariaDB.
#
#   run.sh WORMHOLE_BINARY CASE
#
# CASE: pairs types files dirty kill incremental modes spec multi split.
# Needs ORRERY_PG_DSN and ORRERY_MYSQL_DSN (deploy/stack.sh env); fails when
# they are unset. Every table name ends with this shell's pid and is dropped
# at exit, with the temporary folder.
set -euo pipefail

WH=${1:?usage: run.sh WORMHOLE_BINARY CASE}
CASE=${2:?usage: run.sh WORMHOLE_BINARY CASE}

# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
wh_it_setup it

PGSRC="\"type\":\"postgres\",\"dsn_env\":\"ORRERY_PG_DSN\""
MYSRC="\"type\":\"mysql\",\"dsn_env\":\"ORRERY_MYSQL_DSN\""

# A source table of exchangeable types with the hard values: NULL vs empty,
# unicode, a 3 MB text, numeric precision, bytes with NUL, time zones.
make_pg_source() {
	local t=$1 n=${2:-2000}
	pgt "$t"
	pg <<SQL
CREATE TABLE $t (id bigint PRIMARY KEY, i int, n numeric(30,10), f double precision,
                 t text, b boolean, ts timestamptz, d date, by bytea);
INSERT INTO $t SELECT g, g * 7 - 1000, (g * 12345.6789012345)::numeric(30,10), g / 3.0,
       'row ' || g || ' ' || repeat('x', g % 50), g % 2 = 0,
       '2024-03-10 12:00:00+00'::timestamptz + g * interval '37 minutes 11.123456 seconds',
       date '2000-01-01' + g, decode(md5(g::text), 'hex')
  FROM generate_series(1, $n) g;
INSERT INTO $t VALUES
 (-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (-2, 0, 0, 0, '', false, '1970-01-01 00:00:00+00', '1970-01-01', '\\x'),
 (-3, 2147483647, 99999999999999999999.9999999999, 1e300, E'日本語 😀 é \\\\ "q" ''s'' \\t tab\\nnewline\\r, comma',
     true, '2024-06-30 23:59:59.999999+05:30', '2024-02-29', '\\x00ff00'),
 (-4, -2147483648, -0.0000000001, -1e-300, repeat('long text ', 300000), true,
     '2038-01-19 03:14:07+00', '9999-12-31', '\\x0a0d09');
SQL
}

case_pairs() {
	# Every plugin pair, in chains that come back to PostgreSQL for an exact check:
	#   pg -> mysql -> mysql -> file -> mysql -> pg         (5 pairs)
	#   pg -> file(gz) -> file(lzo) -> pg, pg -> pg         (4 pairs)
	local src=wh_src_$S
	make_pg_source "$src"
	local m
	for m in m1 m2 m3; do
		myt "wh_${m}_$S"
		my -e "CREATE TABLE wh_${m}_$S (id bigint PRIMARY KEY, i int, n decimal(30,10), f double,
		       t longtext, b tinyint(1), ts datetime(6), d date, \`by\` longblob) DEFAULT CHARSET=utf8mb4"
	done
	pgt "wh_back1_$S"
	pgt "wh_back2_$S"
	pgt "wh_pp_$S"
	pg -c "CREATE TABLE wh_back1_$S (LIKE $src); CREATE TABLE wh_back2_$S (LIKE $src); CREATE TABLE wh_pp_$S (LIKE $src)"
	local out=$TMP/p.csv
	cat >"$TMP/1.json" <<J
{"name":"pg-my","reader":{$PGSRC,"table":"$src"},"writers":[{$MYSRC,"table":"wh_m1_$S","mode":"truncate"}]}
J
	cat >"$TMP/2.json" <<J
{"name":"my-my","channels":2,"reader":{$MYSRC,"table":"wh_m1_$S","split":{"key":"id"}},"writers":[{$MYSRC,"table":"wh_m2_$S","mode":"append"}]}
J
	cat >"$TMP/3.json" <<J
{"name":"my-file","reader":{$MYSRC,"table":"wh_m2_$S"},"writers":[{"type":"file","path":"$out","header":true}]}
J
	cat >"$TMP/4.json" <<J
{"name":"file-my","reader":{"type":"file","path":"$out","header":true},"writers":[{$MYSRC,"table":"wh_m3_$S","mode":"staging"}]}
J
	cat >"$TMP/5.json" <<J
{"name":"my-pg","reader":{$MYSRC,"table":"wh_m3_$S"},"writers":[{$PGSRC,"table":"wh_back1_$S","mode":"truncate"}]}
J
	local j
	for j in 1 2 3 4 5; do
		must_run "$TMP/$j.json"
		expect_eq "job $j rows read" "$(summary "['rows_read']")" 2004
		expect_eq "job $j dirty rows" "$(summary "['dirty_rows']")" 0
	done
	pg_same "$src" "wh_back1_$S"

	cat >"$TMP/6.json" <<J
{"name":"pg-file","reader":{$PGSRC,"table":"$src"},"writers":[{"type":"file","path":"$TMP/p.csv.gz","header":true}]}
J
	cat >"$TMP/7.json" <<J
{"name":"file-file","reader":{"type":"file","path":"$TMP/p.csv.gz","header":true},"writers":[{"type":"file","path":"$TMP/p.tsv.lzo","format":"tsv","lzo_index":true}]}
J
	cat >"$TMP/8.json" <<J
{"name":"file-pg","reader":{"type":"file","path":"$TMP/p.tsv.lzo","format":"tsv","columns":[{"name":"id"},{"name":"i"},{"name":"n"},{"name":"f"},{"name":"t"},{"name":"b"},{"name":"ts"},{"name":"d"},{"name":"by"}]},"writers":[{$PGSRC,"table":"wh_back2_$S","mode":"truncate"}]}
J
	cat >"$TMP/9.json" <<J
{"name":"pg-pg","channels":3,"reader":{$PGSRC,"table":"$src","split":{"key":"id"}},"writers":[{$PGSRC,"table":"wh_pp_$S","mode":"truncate"}]}
J
	for j in 6 7 8 9; do
		must_run "$TMP/$j.json"
		expect_eq "job $j rows read" "$(summary "['rows_read']")" 2004
	done
	gzip -t "$TMP/p.csv.gz" || fail "gzip -t refuses the gzip output"
	lzop -t "$TMP/p.tsv.lzo" || fail "lzop -t refuses the lzo output"
	[[ -s "$TMP/p.tsv.lzo.index" ]] || fail "no hadoop-lzo index next to the lzo output"
	expect_eq "lzop -dc lines" "$(lzop -dc "$TMP/p.tsv.lzo" | wc -l)" 2004
	pg_same "$src" "wh_back2_$S"
	pg_same "$src" "wh_pp_$S"
	expect_eq "pg->pg shards > 1" "$([[ $(summary "['shards']") -gt 1 ]] && echo yes)" yes
}

case_types() {
	# PostgreSQL to PostgreSQL keeps every type exactly, arrays and json included.
	local src=wh_ty_$S dst=wh_ty_d_$S
	pgt "$src"
	pgt "$dst"
	pg <<SQL
CREATE TABLE $src (id int PRIMARY KEY, a int[], ta text[], j jsonb, u uuid, tz timestamptz, tm time,
                   iv interval, n numeric, x varchar(5), s smallint);
INSERT INTO $src VALUES
 (1, '{1,NULL,3}', '{"a b","c\\"d",NULL,""}', '{"k": [1, "é", null]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
  '2024-01-01 00:00:00-08', '23:59:59.999999', '1 day 02:03:04', 123456789012345678901234567890.123456789, 'héllo', -32768),
 (2, '{}', '{}', 'null', NULL, 'infinity', '00:00', '-1 mon', 'NaN', '', 32767),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE TABLE $dst (LIKE $src);
SQL
	cat >"$TMP/t.json" <<J
{"name":"types","reader":{$PGSRC,"table":"$src"},"writers":[{$PGSRC,"table":"$dst","mode":"truncate"}]}
J
	must_run "$TMP/t.json"
	pg_same "$src" "$dst"
	expect_eq "time zone kept as an instant" "$(pg -c "SELECT tz = '2024-01-01 08:00:00+00' FROM $dst WHERE id = 1")" t
	expect_eq "empty string is not NULL" "$(pg -c "SELECT x IS NOT NULL AND x = '' FROM $dst WHERE id = 2")" t
}

case_files() {
	# CSV with quotes, embedded newlines, CRLF, another delimiter, NULL vs
	# empty; fixed-width; gzip; into PostgreSQL and back.
	local dst=wh_f_$S
	pgt "$dst"
	pg -c "CREATE TABLE $dst (id int, name text, note text)"
	printf 'id;name;note\r\n1;"Smith; John";"said ""hi""\nthen left"\r\n2;;""\r\n3;日本;plain\r\n' >"$TMP/in.csv"
	gzip -c "$TMP/in.csv" >"$TMP/in.csv.gz"
	cat >"$TMP/f.json" <<J
{"name":"csv","reader":{"type":"file","path":"$TMP/in.csv.gz","header":true,"delimiter":";"},"writers":[{$PGSRC,"table":"$dst","mode":"truncate"}]}
J
	must_run "$TMP/f.json"
	expect_eq "rows" "$(pg -c "SELECT count(*) FROM $dst")" 3
	expect_eq "quoted delimiter" "$(pg -c "SELECT name FROM $dst WHERE id = 1")" "Smith; John"
	expect_eq "embedded newline and quotes" "$(pg -c "SELECT note = E'said \"hi\"\\nthen left' FROM $dst WHERE id = 1")" t
	expect_eq "unquoted empty is NULL, quoted empty is empty" "$(pg -c "SELECT name IS NULL AND note = '' FROM $dst WHERE id = 2")" t
	expect_eq "unicode" "$(pg -c "SELECT name FROM $dst WHERE id = 3")" "日本"
	# invalid UTF-8 in a text column is a dirty row, not a failed COPY
	printf 'id,name,note\n4,ok,fine\n5,bad \xff byte,x\n' >"$TMP/utf.csv"
	cat >"$TMP/u.json" <<J
{"name":"utf8","max_dirty_rows":1,"reader":{"type":"file","path":"$TMP/utf.csv","header":true},"writers":[{$PGSRC,"table":"$dst","mode":"append"}]}
J
	must_run "$TMP/u.json"
	expect_eq "invalid UTF-8 rows are dirty" "$(summary "['dirty_rows']")" 1
	expect_eq "valid row loaded" "$(pg -c "SELECT count(*) FROM $dst WHERE id IN (4, 5)")" 1
	pg -c "DELETE FROM $dst WHERE id = 4"
	# fixed width out and back
	cat >"$TMP/fx.json" <<J
{"name":"fixed-out","reader":{$PGSRC,"table":"$dst","filter":"id <> 1"},"writers":[{"type":"file","path":"$TMP/out.txt","format":"fixed","columns":[{"name":"id","width":4},{"name":"name","width":10},{"name":"note","width":6}]}]}
J
	must_run "$TMP/fx.json"
	expect_eq "fixed-width line" "$(sed -n 2p "$TMP/out.txt")" "3   日本    plain "
	printf '7   seven     x     \n8   eight\n' >"$TMP/fx.txt"
	cat >"$TMP/fi.json" <<J
{"name":"fixed-in","reader":{"type":"file","path":"$TMP/fx.txt","format":"fixed","columns":[{"name":"id","type":"int","width":4},{"name":"name","width":10},{"name":"note","width":6}]},"writers":[{$PGSRC,"table":"$dst","mode":"append"}]}
J
	must_run "$TMP/fi.json"
	expect_eq "fixed-width rows" "$(pg -c "SELECT string_agg(id || ':' || name || ':' || coalesce(note, 'NULL'), ',' ORDER BY id) FROM $dst WHERE id >= 7")" "7:seven:x,8:eight:NULL"
}

case_dirty() {
	# Bad values and malformed records are dirty: counted, rejected with row
	# number and reason; past the limit the run fails and the target is untouched.
	local dst=wh_dirty_$S
	pgt "$dst"
	pg -c "CREATE TABLE $dst (id int NOT NULL, amount numeric(5,2), code varchar(3)); INSERT INTO $dst VALUES (100, 1, 'old')"
	{
		echo 'id,amount,code'
		echo '1,10.50,abc'
		echo 'x2,1.00,abc'
		echo '3,123456.00,abc'
		echo '4,1.00,abcd'
		echo '5,1.00'
		echo ',1.00,abc'
		echo '7,2.00,ok'
		echo '8,3.00,"unterminated'
	} >"$TMP/d.csv"
	cat >"$TMP/d1.json" <<J
{"name":"dirty","max_dirty_rows":10,"reject_file":"$TMP/rej.jsonl","reader":{"type":"file","path":"$TMP/d.csv","header":true},"writers":[{$PGSRC,"table":"$dst","mode":"truncate"}]}
J
	must_run "$TMP/d1.json"
	expect_eq "dirty rows" "$(summary "['dirty_rows']")" 6
	expect_eq "loaded rows" "$(pg -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM $dst")" "1,7"
	expect_eq "reject lines" "$(wc -l <"$TMP/rej.jsonl")" 6
	/usr/bin/python3 - "$TMP/rej.jsonl" <<'PY' || fail "reject file content"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by_row = {r["row"]: r for r in rows}
assert sorted(by_row) == [3, 4, 5, 6, 7, 9], sorted(by_row)
assert "integer" in by_row[3]["reason"], by_row[3]
assert "precision" in by_row[4]["reason"], by_row[4]
assert "longer" in by_row[5]["reason"], by_row[5]
assert by_row[6]["reason"] == "wrong number of fields", by_row[6]
assert "NOT NULL" in by_row[7]["reason"], by_row[7]
assert "unterminated" in by_row[9]["reason"], by_row[9]
PY
	echo "ok: reject file names row numbers and reasons"
	pg -c "TRUNCATE $dst; INSERT INTO $dst VALUES (100, 1, 'old')"
	cat >"$TMP/d2.json" <<J
{"name":"dirty-limit","max_dirty_rows":2,"reader":{"type":"file","path":"$TMP/d.csv","header":true},"writers":[{$PGSRC,"table":"$dst","mode":"truncate"}]}
J
	run "$TMP/d2.json"
	expect_eq "exit status past max_dirty_rows" "$RC" 1
	expect_eq "failure names the limit" "$(summary "['error']['field']")" max_dirty_rows
	expect_eq "target untouched" "$(pg -c "SELECT string_agg(id::text, ',') FROM $dst")" 100
	cat >"$TMP/d3.json" <<J
{"name":"dirty-ratio","max_dirty_rows":-1,"max_dirty_ratio":0.5,"reader":{"type":"file","path":"$TMP/d.csv","header":true},"writers":[{$PGSRC,"table":"$dst","mode":"truncate"}]}
J
	run "$TMP/d3.json"
	expect_eq "exit status past max_dirty_ratio" "$RC" 1
	expect_eq "failure names the ratio" "$(summary "['error']['field']")" max_dirty_ratio
	expect_eq "target untouched" "$(pg -c "SELECT string_agg(id::text, ',') FROM $dst")" 100
}

case_kill() {
	# A run killed with SIGKILL mid-load leaves the target as it was; a rerun in
	# replace mode leaves exactly the source rows. Once on one channel (load
	# in the delete's transaction), once on three (staging table).
	#
	# The killed run reads a FIFO that this shell holds open: the source does
	# not end until the test says so, so the run cannot finish (and commit)
	# before the kill, whatever the machine's speed. The kill comes once
	# PostgreSQL's own COPY progress shows rows of this run arriving, and the
	# run must die of the signal (not exit by itself).
	local src=wh_ksrc_$S dst=wh_kdst_$S ch
	pgt "$src"
	pgt "$dst"
	pg -c "CREATE TABLE $src (id bigint PRIMARY KEY, day int, v text);
	       INSERT INTO $src SELECT g, g % 3, md5(g::text) FROM generate_series(1, 300000) g;
	       CREATE TABLE $dst (LIKE $src);
	       INSERT INTO $dst SELECT g, 1, 'stale' FROM generate_series(1, 1000) g;
	       INSERT INTO $dst VALUES (-5, 7, 'other slice')"
	# rows copied by PostgreSQL so far into the target (or its staging table) by COPYs
	# of this run; "-" when no such COPY is running
	copy_progress() {
		pg -c "SELECT CASE WHEN count(*) = 0 THEN '-' ELSE sum(p.tuples_processed)::text END
		         FROM pg_stat_progress_copy p JOIN pg_stat_activity a USING (pid)
		        WHERE p.command = 'COPY FROM' AND a.query LIKE '%wh\\_kdst\\_${S}%'"
	}
	for ch in 1 3; do
		local fifo=$TMP/k$ch.fifo
		mkfifo "$fifo"
		# read-write open: does not wait for a reader, and keeps the FIFO's
		# write side open, so the reader never sees its end
		exec 7<>"$fifo"
		# 60000 rows (~2.6 MB, several COPY chunks per channel); the feeder
		# blocks while the pipe is full and ends when every row is in the FIFO
		awk 'BEGIN { for (i = 1; i <= 60000; i++) printf "%d,1,fed-%d\n", 1000000 + i, i }' >&7 &
		local feeder=$!
		PIDS+=("$feeder")
		cat >"$TMP/k.json" <<J
{"name":"kill","channels":$ch,"batch_rows":500,"progress_interval_ms":100,"reader":{"type":"file","path":"$fifo","columns":[{"name":"id"},{"name":"day"},{"name":"v"}]},"writers":[{$PGSRC,"table":"$dst","mode":"replace","filter":"day = 1"}]}
J
		"$WH" run "$TMP/k.json" >/dev/null 2>"$TMP/kill-err.txt" 7>&- &
		local pid=$!
		PIDS+=("$pid")
		# wait (generous deadline: a hang, not a slow machine, trips it) until
		# PostgreSQL has taken rows of this run into the target's transaction
		local copied=- deadline=$((SECONDS + 120))
		while :; do
			kill -0 "$pid" 2>/dev/null || { cat "$TMP/kill-err.txt" >&2; fail "the run ended before the kill ($ch channels): its source never ended, so it must not"; }
			copied=$(copy_progress)
			[[ $copied != - && $copied -gt 0 ]] && break
			((SECONDS < deadline)) || fail "no rows reached PostgreSQL's COPY within 120 s ($ch channels; progress: $(tail -n 1 "$TMP/kill-err.txt"))"
			sleep 0.1
		done
		local progress
		progress=$(grep "wormhole progress" "$TMP/kill-err.txt" | tail -n 1 || true)
		echo "ok: killing mid-load ($ch channels): PostgreSQL COPY rows=$copied; last progress: ${progress:-none yet}"
		kill -KILL "$pid"
		local rc=0
		wait "$pid" || rc=$?
		expect_eq "the run died of SIGKILL ($ch channels), it did not end by itself" "$rc" 137
		kill "$feeder" 2>/dev/null || true
		wait "$feeder" 2>/dev/null || true
		exec 7>&-
		expect_eq "after SIGKILL ($ch channels): target unchanged" \
			"$(pg -c "SELECT count(*) || '/' || count(*) FILTER (WHERE v = 'stale') FROM $dst")" "1001/1000"
	done
	cat >"$TMP/k2.json" <<J
{"name":"kill-rerun","channels":3,"reader":{$PGSRC,"table":"$src","filter":"day = 1","split":{"key":"id"}},"writers":[{$PGSRC,"table":"$dst","mode":"replace","filter":"day = 1"}]}
J
	must_run "$TMP/k2.json"
	must_run "$TMP/k2.json" # idempotent: a second rerun changes nothing
	pg_same "(SELECT * FROM $src WHERE day = 1 UNION ALL SELECT -5, 7, 'other slice') s1" "$dst"
	expect_eq "no staging table left" "$(pg -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'wh_kdst_${S}__wh%'")" 0
}

case_incremental() {
	# Incremental runs read only rows past the saved watermark, which moves
	# only when a run succeeds.
	local src=wh_isrc_$S dst=wh_idst_$S
	pgt "$src"
	pgt "$dst"
	pg -c "CREATE TABLE $src (id bigint PRIMARY KEY, updated timestamptz, v text);
	       INSERT INTO $src SELECT g, '2024-01-01'::timestamptz + g * interval '1 hour', 'v' || g FROM generate_series(1, 500) g;
	       CREATE TABLE $dst (LIKE $src INCLUDING ALL)"
	cat >"$TMP/i.json" <<J
{"name":"incr","reader":{$PGSRC,"table":"$src","incremental":{"column":"id","kind":"integer"}},"writers":[{$PGSRC,"table":"$dst","mode":"append"}]}
J
	must_run "$TMP/i.json" --state "$TMP/i.state"
	expect_eq "first run rows" "$(summary "['rows_read']")" 500
	expect_eq "watermark saved" "$(summary "['watermark']['to']")" 500
	must_run "$TMP/i.json" --state "$TMP/i.state"
	expect_eq "second run, nothing new" "$(summary "['rows_read']")" 0
	pg -c "INSERT INTO $src SELECT g, now(), 'new' FROM generate_series(501, 540) g"
	must_run "$TMP/i.json" --state "$TMP/i.state"
	expect_eq "third run reads only new rows" "$(summary "['rows_read']")" 40
	pg_same "$src" "$dst"
	# A failed run does not move the watermark.
	pg -c "INSERT INTO $src VALUES (541, now(), 'x'); ALTER TABLE $dst ADD CONSTRAINT no_x CHECK (v <> 'x')"
	run "$TMP/i.json" --state "$TMP/i.state"
	expect_eq "failing run exit" "$RC" 1
	grep -q '"watermark": *"540"' "$TMP/i.state" || fail "watermark moved on a failed run: $(cat "$TMP/i.state")"
	echo "ok: watermark kept at 540 after a failed run"
	# Rows deleted at the source never move the watermark back.
	pg -c "DELETE FROM $src WHERE id > 520"
	must_run "$TMP/i.json" --state "$TMP/i.state"
	grep -q '"watermark": *"540"' "$TMP/i.state" || fail "watermark moved back: $(cat "$TMP/i.state")"
	pg -c "INSERT INTO $src SELECT g, now(), 'v' || g FROM generate_series(521, 541) g"
	echo "ok: watermark kept at 540 after rows were deleted at the source"
	# Timestamp watermark with an overlap window, upserting (overlap re-reads).
	pg -c "ALTER TABLE $dst DROP CONSTRAINT no_x"
	pgt "wh_idst2_$S"
	pg -c "CREATE TABLE wh_idst2_$S (LIKE $src INCLUDING ALL)"
	cat >"$TMP/i2.json" <<J
{"name":"incr-ts","reader":{$PGSRC,"table":"$src","incremental":{"column":"updated","kind":"timestamp","overlap":3600}},"writers":[{$PGSRC,"table":"wh_idst2_$S","mode":"upsert","key":["id"]}]}
J
	must_run "$TMP/i2.json" --state "$TMP/i2.state"
	expect_eq "timestamp run rows" "$(summary "['rows_read']")" 541
	pg -c "UPDATE $src SET updated = clock_timestamp() + interval '1 second', v = 'changed' WHERE id = 10"
	must_run "$TMP/i2.json" --state "$TMP/i2.state"
	pg_same "$src" "wh_idst2_$S"
	# read: the changed row and the recent rows inside the overlap window, not all
	local want
	want=$(pg -c "SELECT count(*) FROM $src WHERE updated > '$(summary "['watermark']['from']")'::timestamptz - interval '1 hour'")
	expect_eq "overlap run rows" "$(summary "['rows_read']")" "$want"
	[[ $want -lt 541 ]] || fail "the overlap window covered every row"
	echo "ok: timestamp watermark with overlap picks up the changed row"
}

case_modes() {
	local src=wh_msrc_$S dst=wh_mdst_$S
	pgt "$src"
	pgt "$dst"
	pg -c "CREATE TABLE $src (id int PRIMARY KEY, v text);
	       INSERT INTO $src SELECT g, 'new' || g FROM generate_series(1, 1000) g;
	       CREATE TABLE $dst (id int PRIMARY KEY, v text);
	       INSERT INTO $dst SELECT g, 'old' FROM generate_series(900, 1100) g"
	cat >"$TMP/u.json" <<J
{"name":"upsert","channels":2,"reader":{$PGSRC,"table":"$src","split":{"key":"id"}},"writers":[{$PGSRC,"table":"$dst","mode":"upsert","key":["id"]}]}
J
	must_run "$TMP/u.json"
	expect_eq "upsert result" "$(pg -c "SELECT count(*) || '/' || count(*) FILTER (WHERE v = 'old') || '/' || min(v) FILTER (WHERE id = 950) FROM $dst")" "1100/100/new950"
	cat >"$TMP/s.json" <<J
{"name":"staging","reader":{$PGSRC,"table":"$src"},"writers":[{$PGSRC,"table":"$dst","mode":"staging"}]}
J
	must_run "$TMP/s.json"
	pg_same "$src" "$dst"
	expect_eq "primary key kept by the swap" "$(pg -c "SELECT count(*) FROM pg_index WHERE indrelid = '$dst'::regclass AND indisprimary")" 1
	pg -c "INSERT INTO $dst VALUES (5000, 'extra')"
	cat >"$TMP/t.json" <<J
{"name":"truncate","channels":2,"reader":{$PGSRC,"table":"$src","split":{"key":"id"}},"writers":[{$PGSRC,"table":"$dst","mode":"truncate"}]}
J
	must_run "$TMP/t.json"
	pg_same "$src" "$dst"
	# MariaDB upsert and replace
	myt "wh_mm_$S"
	my -e "CREATE TABLE wh_mm_$S (id int PRIMARY KEY, v text); INSERT INTO wh_mm_$S VALUES (1, 'old'), (2000, 'keep')"
	cat >"$TMP/mu.json" <<J
{"name":"my-upsert","reader":{$PGSRC,"table":"$src"},"writers":[{$MYSRC,"table":"wh_mm_$S","mode":"upsert"}]}
J
	must_run "$TMP/mu.json"
	expect_eq "mysql upsert" "$(my -e "SELECT CONCAT(COUNT(*), '/', MAX(CASE WHEN id = 1 THEN v END)) FROM wh_mm_$S")" "1001/new1"
	cat >"$TMP/mr.json" <<J
{"name":"my-replace","reader":{$PGSRC,"table":"$src","filter":"id <= 10"},"writers":[{$MYSRC,"table":"wh_mm_$S","mode":"replace","filter":"id <= 1000"}]}
J
	must_run "$TMP/mr.json"
	expect_eq "mysql replace" "$(my -e "SELECT COUNT(*) FROM wh_mm_$S")" 11
}

case_spec() {
	# Bad specs exit 2 and name the JSON path.
	echo '{"reader":{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"x"},"writers":[{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"y","mode":"merge"}]}' >"$TMP/b1.json"
	run "$TMP/b1.json"
	expect_eq "bad mode exit" "$RC" 2
	grep -q "writers\[0\].mode" "$TMP/err.txt" || fail "message does not name writers[0].mode: $(cat "$TMP/err.txt")"
	echo '{"reader":{"type":"file","path":"x","header":true,"limit":3},"writers":[]}' >"$TMP/b2.json"
	run "$TMP/b2.json"
	expect_eq "unknown key exit" "$RC" 2
	grep -q "reader.limit" "$TMP/err.txt" || fail "message does not name reader.limit"
	echo '{"reader":' >"$TMP/b3.json"
	run "$TMP/b3.json"
	expect_eq "broken JSON exit" "$RC" 2
	run "$TMP/missing.json"
	expect_eq "missing file exit" "$RC" 2
	# A run-time failure (missing table) exits 1 with a JSON summary.
	echo "{\"reader\":{$PGSRC,\"table\":\"wh_no_such_table_$S\"},\"writers\":[{\"type\":\"file\",\"path\":\"$TMP/o.csv\"}]}" >"$TMP/b4.json"
	run "$TMP/b4.json"
	expect_eq "missing table exit" "$RC" 1
	expect_eq "missing table status" "$(summary "['status']")" failed
	[[ ! -e "$TMP/o.csv" ]] || fail "a failed run left its output file"
	echo "ok: no output file after a failed run"
}

case_multi() {
	# One reader feeding two writers of different kinds.
	local src=wh_xsrc_$S
	make_pg_source "$src" 20000
	pgt "wh_xd_$S"
	pg -c "CREATE TABLE wh_xd_$S (LIKE $src)"
	myt "wh_xm_$S"
	my -e "CREATE TABLE wh_xm_$S (id bigint PRIMARY KEY, i int, n decimal(30,10), f double,
	       t longtext, b tinyint(1), ts datetime(6), d date, \`by\` longblob) DEFAULT CHARSET=utf8mb4"
	cat >"$TMP/x.json" <<J
{"name":"fanout","channels":2,"batch_rows":1000,"progress_interval_ms":100,"reader":{$PGSRC,"table":"$src","split":{"key":"id","shards":5}},
 "writers":[{$PGSRC,"table":"wh_xd_$S","mode":"truncate","name":"copy"},
            {$MYSRC,"table":"wh_xm_$S","mode":"append","name":"mirror"},
            {"type":"file","path":"$TMP/x.csv","name":"archive"}]}
J
	must_run "$TMP/x.json"
	expect_eq "rows read" "$(summary "['rows_read']")" 20004
	expect_eq "shards" "$(summary "['shards']")" 5
	expect_eq "pg writer rows" "$(summary "['writers'][0]['rows_confirmed']")" 20004
	expect_eq "mysql writer rows" "$(my -e "SELECT COUNT(*) FROM wh_xm_$S")" 20004
	expect_eq "file writer records" "$(/usr/bin/python3 -c "import csv,sys; csv.field_size_limit(1 << 30); print(sum(1 for _ in csv.reader(open(sys.argv[1], newline=''))))" "$TMP/x.csv")" 20004
	pg_same "$src" "wh_xd_$S"
	grep -q "wormhole progress: rows_read=" "$TMP/err.txt" || fail "no progress line on stderr"
}

case_split() {
	# Sampled boundaries: sparse and skewed keys still give the shards asked
	# for (no empty ranges between far-apart keys, no single giant shard), and
	# every row lands in exactly one shard, text keys included.
	local src=wh_ssrc_$S dst=wh_sdst_$S
	pgt "$src"
	pgt "$dst"
	pg -c "CREATE TABLE $src (id bigint PRIMARY KEY, name text);
	       INSERT INTO $src SELECT g, 'n' || g FROM generate_series(1, 20000) g;
	       INSERT INTO $src SELECT 1000000000000 + g, 'Ä' || g FROM generate_series(1, 20000) g;
	       INSERT INTO $src SELECT 9000000000000000 + g * 7919, lower('Z' || g) FROM generate_series(1, 5000) g;
	       INSERT INTO $src VALUES (-1, NULL);
	       ANALYZE $src;
	       CREATE TABLE $dst (LIKE $src INCLUDING ALL)"
	local key
	for key in id name; do
		cat >"$TMP/sp.json" <<J
{"name":"split","channels":2,"reader":{$PGSRC,"table":"$src","split":{"key":"$key","shards":8}},"writers":[{$PGSRC,"table":"$dst","mode":"truncate"}]}
J
		must_run "$TMP/sp.json"
		expect_eq "shards on $key" "$(summary "['shards']")" 8
		expect_eq "rows read splitting on $key" "$(summary "['rows_read']")" 45001
		pg_same "$src" "$dst"
	done
	# A key with two values cannot make eight shards: fewer, never empty ones.
	pg -c "ALTER TABLE $src ADD COLUMN flag int; UPDATE $src SET flag = abs(id % 2)::int; ANALYZE $src"
	pg -c "ALTER TABLE $dst ADD COLUMN flag int"
	cat >"$TMP/sp2.json" <<J
{"name":"split-flag","channels":2,"reader":{$PGSRC,"table":"$src","split":{"key":"flag","shards":8}},"writers":[{$PGSRC,"table":"$dst","mode":"truncate"}]}
J
	must_run "$TMP/sp2.json"
	expect_eq "shards on a two-valued key" "$(summary "['shards']")" 2
	expect_eq "rows read on a two-valued key" "$(summary "['rows_read']")" 45001
}

"case_$CASE"
echo "PASS [$CASE]"
