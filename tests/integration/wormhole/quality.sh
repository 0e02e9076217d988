#!/usr/bin/env bash
# Integration tests of quality checks: a transfer's `quality` key and
# `wormhole quality`, against real PostgreSQL and MariaDB.
#
#   quality.sh WORMHOLE_BINARY pg|mysql
#
# Every kind passes and fails; a failed check of a writer loading through
# one connection leaves the target as it was (the load is rolled back); a
# staging writer's checks run after the commit; exit status 3 and the
# summary's figures. Needs ORRERY_PG_DSN and ORRERY_MYSQL_DSN (the stack's
# env); tables end with this shell's pid and are dropped at exit.
set -euo pipefail

WH=${1:?usage: quality.sh WORMHOLE_BINARY pg|mysql}
DB=${2:?usage: quality.sh WORMHOLE_BINARY pg|mysql}
CASE="quality $DB"
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
wh_it_setup q

SRC=whq_src_$S
TGT=whq_tgt_$S
pgt "$SRC"
pgt "$TGT"
myt "$SRC"
myt "$TGT"
wh_it_cleanup_extra() { pg -c "DROP FUNCTION IF EXISTS whq_skip_$S() CASCADE" 2>/dev/null; }

fail() {
	echo "FAIL [quality $DB]: $*" >&2
	[[ -f $TMP/err.txt ]] && tail -20 "$TMP/err.txt" >&2
	[[ -f $TMP/out.json ]] && cat "$TMP/out.json" >&2
	exit 1
}
run() { # CMD JOB-TEXT
	printf '%s' "$2" >"$TMP/job.json"
	set +e
	"$WH" "$1" "$TMP/job.json" >"$TMP/out.json" 2>"$TMP/err.txt"
	RC=$?
	set -e
}

# The source: 100 rows; v NULL in 30 of them; grp repeats (10 groups); ts
# fresh; old a year ago; neg < 0 never.
if [[ $DB == pg ]]; then
	q() { pg -c "$1"; }
	DSN="\"dsn_env\":\"ORRERY_PG_DSN\""
	TYPE=postgres
	pg <<SQL
CREATE TABLE $SRC (id bigint PRIMARY KEY, v text, grp int, ts timestamptz, old timestamp);
INSERT INTO $SRC SELECT g, CASE WHEN g % 10 < 3 THEN NULL ELSE 'v' || g END, g % 10,
       now() - interval '1 minute', timestamp '2001-01-01 00:00:00' FROM generate_series(1, 100) g;
CREATE TABLE $TGT (LIKE $SRC);
INSERT INTO $TGT (id, v) VALUES (-1, 'kept'), (-2, 'kept');
SQL
else
	q() { my -e "$1"; }
	DSN="\"dsn_env\":\"ORRERY_MYSQL_DSN\""
	TYPE=mysql
	my <<SQL
CREATE TABLE $SRC (id bigint PRIMARY KEY, v varchar(20), grp int, ts datetime(6), old datetime(6));
INSERT INTO $SRC SELECT seq, CASE WHEN seq % 10 < 3 THEN NULL ELSE CONCAT('v', seq) END, seq % 10,
       UTC_TIMESTAMP(6) - INTERVAL 1 MINUTE, '2001-01-01 00:00:00' FROM seq_1_to_100;
CREATE TABLE $TGT LIKE $SRC;
INSERT INTO $TGT (id, v) VALUES (-1, 'kept'), (-2, 'kept');
SQL
fi
count() { q "SELECT count(*) FROM $TGT" | tail -1; }

job() { # MODE CHANNELS CHECKS-JSON
	cat <<JSON
{"name":"whq_$S","progress_interval_ms":0,
 "reader":{"type":"$TYPE",$DSN,"table":"$SRC"},
 "writers":[{"type":"$TYPE",$DSN,"table":"$TGT","mode":"$1","channels":$2}],
 "quality":$3}
JSON
}

# 1. Every kind passes (append, one channel: in the load transaction).
PASS='[{"name":"rows","kind":"row_count"},
 {"name":"v_nulls","kind":"null_ratio","column":"v","max_ratio":0.5},
 {"name":"id_unique","kind":"unique","columns":["id"]},
 {"name":"fresh","kind":"freshness","column":"ts","max_age_s":3600},
 {"name":"no_negative_grp","kind":"sql","query":"SELECT id FROM '$TGT' WHERE grp < 0"}]'
run run "$(job append 1 "$PASS")"
expect_eq "all pass: exit" "$RC" 0
expect_eq "all pass: outcomes" "$(summary "['quality']" | python3 -c "import sys,ast; print([c['outcome'] for c in ast.literal_eval(sys.stdin.read())])")" "['ok', 'ok', 'ok', 'ok', 'ok']"
expect_eq "row_count value" "$(summary "['quality'][0]['value']")" 0.0
# 30 NULLs among the 100 loaded and 2 kept rows with a value
expect_eq "null_ratio value" "$(summary "['quality'][1]['value']")" "$(python3 -c 'print(30/102)')"
expect_eq "null_ratio threshold" "$(summary "['quality'][1]['threshold']")" 0.5
expect_eq "rows loaded" "$(count)" 102

# 2. Each kind fails in truncate mode, one channel: exit 3, the load rolled
#    back (the target still holds its 102 rows), the failed check named.
fails() { # NAME CHECK-JSON
	run run "$(job truncate 1 "[$2]")"
	expect_eq "$1 fails: exit" "$RC" 3
	expect_eq "$1 fails: outcome" "$(summary "['quality'][0]['outcome']")" failed
	expect_eq "$1 fails: error field" "$(summary "['error']['field']")" "quality[0]"
	expect_eq "$1 fails: target unchanged" "$(count)" 102
}
fails null_ratio '{"name":"v_nulls","kind":"null_ratio","column":"v","max_ratio":0.1}'
expect_eq "null_ratio failed value" "$(summary "['quality'][0]['value']")" 0.3
fails unique '{"name":"grp_unique","kind":"unique","columns":["grp"],"max_duplicates":5}'
expect_eq "unique failed value" "$(summary "['quality'][0]['value']")" 90.0
fails freshness '{"name":"old_fresh","kind":"freshness","column":"old","max_age_s":3600}'
fails sql '{"name":"v_set","kind":"sql","query":"SELECT id, v FROM '$TGT' WHERE v IS NULL ORDER BY id","max_rows":2}'
expect_eq "sql failed value" "$(summary "['quality'][0]['value']")" 30.0
expect_eq "sql offending rows in the summary" "$(summary "['quality'][0]['rows'][0]")" "['1', None]"
grep -q 'quality check offending row' "$TMP/err.txt" || fail "the offending rows are not in the log"
echo "ok: offending rows logged"
if [[ $DB == pg ]]; then
	# row_count: a trigger drops every tenth row, so the target confirms 90
	# of 100 (max_row_diff lets the engine's own check pass).
	pg <<SQL
CREATE FUNCTION whq_skip_$S() RETURNS trigger AS \$\$
BEGIN IF NEW.id % 10 = 0 THEN RETURN NULL; END IF; RETURN NEW; END \$\$ LANGUAGE plpgsql;
CREATE TRIGGER whq_skip BEFORE INSERT ON $TGT FOR EACH ROW EXECUTE FUNCTION whq_skip_$S();
SQL
	run run "$(job truncate 1 '[{"name":"rows","kind":"row_count","max_diff":3}]' | sed 's/"progress_interval_ms":0,/"progress_interval_ms":0,"max_row_diff":100,/')"
	expect_eq "row_count fails: exit" "$RC" 3
	expect_eq "row_count fails: value" "$(summary "['quality'][0]['value']")" 10.0
	expect_eq "row_count fails: target unchanged" "$(count)" 102
	pg -c "DROP TRIGGER whq_skip ON $TGT"
fi

# 3. A staging writer: the checks run after the swap; a failed check fails
#    the run (exit 3) with the target already replaced, as documented.
run run "$(job staging 1 '[{"name":"v_nulls","kind":"null_ratio","column":"v","max_ratio":0.1}]')"
expect_eq "after commit: exit" "$RC" 3
expect_eq "after commit: target changed" "$(count)" 100

# 4. wormhole quality: checks on a data store of their own.
QJOB() { echo "{\"name\":\"q_$S\",\"target\":{\"type\":\"$TYPE\",$DSN},\"checks\":$1}"; }
run quality "$(QJOB '[{"name":"id_unique","kind":"unique","table":"'$TGT'","columns":["id"]},{"name":"fresh","kind":"freshness","table":"'$TGT'","column":"ts","max_age_s":3600}]')"
expect_eq "quality passes: exit" "$RC" 0
expect_eq "quality passes: status" "$(summary "['status']")" ok
run quality "$(QJOB '[{"name":"id_unique","kind":"unique","table":"'$TGT'","columns":["id"]},{"name":"nulls","kind":"null_ratio","table":"'$TGT'","column":"v"}]')"
expect_eq "quality fails: exit" "$RC" 3
expect_eq "quality fails: second check" "$(summary "['quality'][1]['outcome']")" failed
expect_eq "quality fails: error field" "$(summary "['error']['field']")" "checks[1]"
run quality "$(QJOB '[{"name":"rows","kind":"row_count"}]')"
expect_eq "row_count outside a transfer: exit" "$RC" 2
expect_eq "row_count outside a transfer: field" "$(summary "['error']['field']")" "checks[0].kind"
run quality "$(QJOB '[{"name":"bad","kind":"sql","query":"SELECT nope FROM '$TGT'"}]')"
expect_eq "a query that fails: exit" "$RC" 1
echo "PASS [quality $DB]"
