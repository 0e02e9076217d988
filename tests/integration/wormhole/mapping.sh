#!/usr/bin/env bash
# Integration test of writers' column mappings (`writers[i].mapping`) against
# real PostgreSQL and MariaDB: pg -> pg and pg -> mysql with a rename, a
# skipped column, casts (one value that cannot convert: its row is dirty and
# named, the load goes on), text and NULL constants, and the reader reading
# only the columns the mappings name.
#
#   mapping.sh WORMHOLE_BINARY
#
# Needs ORRERY_PG_DSN and ORRERY_MYSQL_DSN (deploy/stack.sh env); fails when
# they are unset. Tables end with this shell's pid and are dropped at exit.
set -euo pipefail

WH=${1:?usage: mapping.sh WORMHOLE_BINARY}
CASE=mapping
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
wh_it_setup map

pgt whm_src_$S
pgt whm_dst_$S
myt whm_dst_$S

# The source: code is text holding numbers but one row holds "n/a"; secret is
# never mapped; created is a timestamptz loaded as a date.
pg <<SQL
CREATE TABLE whm_src_$S (id bigint PRIMARY KEY, name text, code text, secret text,
                         created timestamptz, ratio numeric(10,2));
INSERT INTO whm_src_$S SELECT g, 'name ' || g, (g * 10)::text, 'hidden',
       '2024-01-01 22:30:00+00'::timestamptz + g * interval '1 hour', g / 4.0
  FROM generate_series(1, 100) g;
UPDATE whm_src_$S SET code = 'n/a' WHERE id = 42;
UPDATE whm_src_$S SET code = NULL, ratio = NULL WHERE id = 7;
CREATE TABLE whm_dst_$S (ident bigint PRIMARY KEY, label varchar(40), num int, day date,
                         origin text NOT NULL, note text, ratio_txt text);
SQL
my -e "CREATE TABLE whm_dst_$S (ident bigint PRIMARY KEY, label varchar(40), num int, day date,
       origin varchar(20) NOT NULL, note text, ratio_txt text) DEFAULT CHARSET=utf8mb4"

MAPPING='[{"target":"ident","source":"id"},{"target":"label","source":"name"},
 {"target":"num","source":"code","cast":"int"},{"target":"day","source":"created","cast":"date"},
 {"target":"origin","constant":"crm"},{"target":"note","constant":null},
 {"target":"ratio_txt","source":"ratio","cast":"text"}]'

for dst in pg mysql; do
	if [[ $dst == pg ]]; then
		W="\"type\":\"postgres\",\"dsn_env\":\"ORRERY_PG_DSN\""
	else
		W="\"type\":\"mysql\",\"dsn_env\":\"ORRERY_MYSQL_DSN\""
	fi
	cat >"$TMP/$dst.json" <<J
{"name":"map-$dst","channels":2,"max_dirty_rows":5,"reject_file":"$TMP/$dst.rejects",
 "reader":{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"whm_src_$S","split":{"key":"id"}},
 "writers":[{$W,"table":"whm_dst_$S","mode":"truncate","mapping":$MAPPING}]}
J
	must_run "$TMP/$dst.json"
	expect_eq "$dst rows read" "$(summary "['rows_read']")" 100
	expect_eq "$dst dirty rows" "$(summary "['dirty_rows']")" 1
	expect_eq "$dst rows written" "$(summary "['writers'][0]['rows_written']")" 99
	grep -q 'writers\[0\].mapping\[2\] (column num, cast int): value is not an integer' "$TMP/$dst.rejects" ||
		fail "$dst: the reject does not name the mapping entry: $(cat "$TMP/$dst.rejects")"
	grep -q '"n/a"' "$TMP/$dst.rejects" || fail "$dst: the reject does not carry the row"
	# The reader read the mapped sources only (secret never left the source).
	grep -q hidden "$TMP/$dst.rejects" && fail "$dst: the unmapped column was read"
	if [[ $dst == pg ]]; then
		q() { pg -c "$1"; }
	else
		q() { my -e "$1"; }
	fi
	expect_eq "$dst row 3" "$(q "SELECT ident, label, num, day, origin, coalesce(note, 'NULL'), ratio_txt FROM whm_dst_$S WHERE ident = 3" | tr '\t|' '  ')" \
		"3 name 3 30 2024-01-02 crm NULL 0.75"
	expect_eq "$dst row 7 (NULLs stay NULL)" "$(q "SELECT coalesce(num, -1), coalesce(ratio_txt, 'NULL') FROM whm_dst_$S WHERE ident = 7" | tr '\t|' '  ')" "-1 NULL"
	expect_eq "$dst row 42 left out" "$(q "SELECT count(*) FROM whm_dst_$S WHERE ident = 42")" 0
	expect_eq "$dst sum of num" "$(q "SELECT sum(num) FROM whm_dst_$S")" $((50500 - 420 - 70))
done

# A mapping to a source column that does not exist fails before any row.
cat >"$TMP/bad.json" <<J
{"reader":{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"whm_src_$S","columns":["id","name"]},
 "writers":[{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"whm_dst_$S","mapping":[{"target":"ident","source":"code"}]}]}
J
set +e
"$WH" run "$TMP/bad.json" >"$TMP/out.json" 2>"$TMP/err.txt"
rc=$?
set -e
expect_eq "unknown source exit" "$rc" 1
expect_eq "unknown source field" "$(summary "['error']['field']")" "writers[0].mapping[0].source"
echo "PASS [mapping]"
