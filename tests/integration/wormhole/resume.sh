#!/usr/bin/env bash
# Integration tests of resuming a split job: `wormhole run --resume` after a
# run killed with SIGKILL in the middle, against real PostgreSQL and MariaDB.
#
#   resume.sh WORMHOLE_BINARY CASE
#
# CASE: pg (append, then truncate through the kept staging table), mysql
# (append and staging), multi (one source, a PostgreSQL and a MariaDB
# target), key (a changed job starts from scratch; --from-scratch drops the
# records), incremental (the resumed run keeps the failed run's range).
#
# The kill happens by construction: the run holds before its reader takes a
# split past the first K (WORMHOLE_TEST_HOLD_AFTER, a test-only knob: the
# reader waits for a file this script never creates), the script waits until
# the K splits are recorded in the target, then kills it with SIGKILL. So
# exactly K splits are committed, whatever the machine's speed.
#
# Needs ORRERY_PG_DSN and ORRERY_MYSQL_DSN (deploy/stack.sh env). Every table
# name ends with this shell's pid and is dropped at exit.
set -euo pipefail

WH=${1:?usage: resume.sh WORMHOLE_BINARY CASE}
CASE=${2:?usage: resume.sh WORMHOLE_BINARY CASE}
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
wh_it_setup resume

# MariaDB target against the PostgreSQL source: the target is copied back
# into PostgreSQL by a plain run, then compared with EXCEPT both ways
my_same() {
	local src=$1 dst=$2 back=wh_rback_$S
	pg -c "DROP TABLE IF EXISTS $back; CREATE TABLE $back (LIKE $src)"
	PG_TABLES+=("$back")
	cat >"$TMP/back.json" <<J
{"name":"back_$S","progress_interval_ms":0,"reader":{"type":"mysql","dsn_env":"ORRERY_MYSQL_DSN","table":"$dst"},"writers":[{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"$back"}]}
J
	must_run "$TMP/back.json"
	pg_same "$src" "$back"
}

PGW="\"type\":\"postgres\",\"dsn_env\":\"ORRERY_PG_DSN\""
MYW="\"type\":\"mysql\",\"dsn_env\":\"ORRERY_MYSQL_DSN\""

make_source() { # table rows
	PG_TABLES+=("$1")
	pg -c "CREATE TABLE $1 (id bigint PRIMARY KEY, n int, v text, ts timestamptz);
	       INSERT INTO $1 SELECT g, g % 1000, md5(g::text), '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
	         FROM generate_series(1, $2) g;
	       INSERT INTO $1 VALUES (0, NULL, NULL, NULL);
	       ANALYZE $1"
}

pg_records() { pg -c "SELECT count(*) FROM orr_wh_splits WHERE job = '$1'" 2>/dev/null || echo 0; }
my_records() { my -e "SELECT COUNT(*) FROM orr_wh_splits WHERE job = '$1'" 2>/dev/null || echo 0; }
# the fewer of both targets' records
both_records() {
	local a b
	a=$(pg_records "$1")
	b=$(my_records "$1")
	echo $((a < b ? a : b))
}

# killed_run JOB.json K COUNT_FN JOBNAME: run holding after K splits, wait
# until COUNT_FN says K splits are recorded, kill it with SIGKILL.
killed_run() {
	local job=$1 k=$2 count=$3 name=$4 n=0 deadline=$((SECONDS + 120))
	WORMHOLE_TEST_HOLD_AFTER=$k WORMHOLE_TEST_HOLD_FILE=$TMP/never \
		"$WH" run "$job" --from-scratch >"$TMP/killed.json" 2>"$TMP/killed.txt" &
	local pid=$!
	PIDS+=("$pid")
	while :; do
		kill -0 "$pid" 2>/dev/null || { cat "$TMP/killed.txt" "$TMP/killed.json" >&2; fail "the held run ended by itself"; }
		n=$($count "$name")
		[[ $n -ge $k ]] && break
		((SECONDS < deadline)) || fail "$k splits not recorded within 120 s (have $n)"
		sleep 0.05
	done
	grep -q "test hold after $k splits" "$TMP/killed.txt" || true
	kill -KILL "$pid"
	local rc=0
	wait "$pid" || rc=$?
	expect_eq "the held run died of SIGKILL" "$rc" 137
	expect_eq "splits recorded when killed" "$($count "$name")" "$k"
}

# check_resumed TOTAL_ROWS SHARDS K: the resumed run read only the splits
# that were missing
check_resumed() {
	local total=$1 shards=$2 k=$3
	expect_eq "resume state" "$(summary "['resume']['state']")" resumed
	expect_eq "resumed_splits" "$(summary "['resumed_splits']")" "$k"
	expect_eq "splits read and committed by the resumed run" "$(summary "['resume']['splits_committed']")" $((shards - k))
	local read skipped
	read=$(summary "['rows_read']")
	skipped=$(summary "['rows_skipped']")
	[[ $skipped -gt 0 && $read -lt $total ]] || fail "rows_read $read / rows_skipped $skipped: the resumed run read everything again"
	expect_eq "rows read + rows skipped" $((read + skipped)) "$total"
}

case_pg() {
	local src=wh_rsrc_$S dst=wh_rdst_$S name=rs_pg_$S
	JOBS+=("$name")
	make_source "$src" 40000
	PG_TABLES+=("$dst")
	pg -c "CREATE TABLE $dst (LIKE $src)"
	cat >"$TMP/a.json" <<J
{"name":"$name","channels":2,"batch_rows":2000,"progress_interval_ms":0,"reader":{$PGW,"table":"$src","split":{"key":"id","shards":8}},"writers":[{$PGW,"table":"$dst"}]}
J
	killed_run "$TMP/a.json" 3 pg_records "$name"
	local shards recorded
	shards=$(pg -c "SELECT plan::json->'shards' FROM orr_wh_runs WHERE job = '$name'" | /usr/bin/python3 -c "import json,sys; print(len(json.load(sys.stdin)))")
	recorded=$(pg -c "SELECT sum(rows) FROM orr_wh_splits WHERE job = '$name'")
	expect_eq "append: the target holds exactly the recorded splits" "$(pg -c "SELECT count(*) FROM $dst")" "$recorded"
	must_run "$TMP/a.json" --resume
	check_resumed 40001 "$shards" 3
	expect_eq "rows_skipped is what the records said" "$(summary "['rows_skipped']")" "$recorded"
	pg_same "$src" "$dst"
	expect_eq "records dropped after success" "$(pg_records "$name")" 0

	# truncate through the staging table: the target keeps its old rows
	# until the resumed run swaps the whole load in
	pg -c "TRUNCATE $dst; INSERT INTO $dst VALUES (-7, 7, 'old', NULL)"
	sed 's/"table":"'"$dst"'"}/"table":"'"$dst"'","mode":"truncate"}/' "$TMP/a.json" >"$TMP/t.json"
	killed_run "$TMP/t.json" 4 pg_records "$name"
	expect_eq "truncate: the target is untouched by the killed run" "$(pg -c "SELECT count(*) FROM $dst")" 1
	expect_eq "truncate: the staging table is logged" "$(pg -c "SELECT relpersistence FROM pg_class WHERE oid = to_regclass('${dst}__wh_stage')")" p
	must_run "$TMP/t.json" --resume
	check_resumed 40001 "$shards" 4
	pg_same "$src" "$dst"
	expect_eq "staging table gone" "$(pg -c "SELECT to_regclass('${dst}__wh_stage') IS NULL")" t
	expect_eq "records dropped after success" "$(pg_records "$name")" 0
}

case_mysql() {
	local src=wh_rsrc_$S dst=wh_rmy_$S name=rs_my_$S mode
	JOBS+=("$name")
	make_source "$src" 20000
	MY_TABLES+=("$dst")
	for mode in append staging; do
		my -e "DROP TABLE IF EXISTS $dst; CREATE TABLE $dst (id bigint PRIMARY KEY, n int, v varchar(64), ts datetime(6)) DEFAULT CHARSET=utf8mb4"
		cat >"$TMP/m.json" <<J
{"name":"$name","channels":2,"batch_rows":1000,"progress_interval_ms":0,"reader":{$PGW,"table":"$src","split":{"key":"id","shards":6}},"writers":[{$MYW,"table":"$dst","mode":"$mode"}]}
J
		killed_run "$TMP/m.json" 2 my_records "$name"
		if [[ $mode == append ]]; then
			expect_eq "mysql append: the target holds exactly the recorded splits" \
				"$(my -e "SELECT COUNT(*) FROM $dst")" "$(my -e "SELECT SUM(\`rows\`) FROM orr_wh_splits WHERE job = '$name'")"
		else
			expect_eq "mysql staging: the target is untouched by the killed run" "$(my -e "SELECT COUNT(*) FROM $dst")" 0
		fi
		must_run "$TMP/m.json" --resume
		check_resumed 20001 6 2
		my_same "$src" "$dst"
		expect_eq "mysql $mode: records dropped after success" "$(my_records "$name")" 0
	done
	# truncate cannot resume on MariaDB: the run goes without bookkeeping and says so
	sed 's/"mode":"staging"/"mode":"truncate"/' "$TMP/m.json" >"$TMP/mt.json"
	must_run "$TMP/mt.json" --resume
	expect_eq "mysql truncate: resume state" "$(summary "['resume']['state']")" unsupported
	my_same "$src" "$dst"
}

case_multi() {
	local src=wh_rsrc_$S dst=wh_rdst_$S mdst=wh_rmy_$S name=rs_multi_$S
	JOBS+=("$name")
	make_source "$src" 60000
	PG_TABLES+=("$dst")
	MY_TABLES+=("$mdst")
	pg -c "CREATE TABLE $dst (LIKE $src INCLUDING ALL)"
	my -e "CREATE TABLE $mdst (id bigint PRIMARY KEY, n int, v varchar(64), ts datetime(6)) DEFAULT CHARSET=utf8mb4"
	cat >"$TMP/x.json" <<J
{"name":"$name","channels":2,"batch_rows":1000,"progress_interval_ms":0,"reader":{$PGW,"table":"$src","split":{"key":"id","shards":6}},"writers":[{$PGW,"name":"pg","table":"$dst","mode":"upsert","key":["id"]},{$MYW,"name":"my","table":"$mdst"}]}
J
	killed_run "$TMP/x.json" 3 both_records "$name"
	# the MariaDB target may lag the PostgreSQL one: make it lag by
	# construction, forgetting one of its splits (rows and record)
	local lag
	lag=$(my -e "SELECT MIN(split) FROM orr_wh_splits WHERE job = '$name'")
	if [[ $lag != NULL ]]; then
		local pred
		pred=$(pg -c "SELECT plan::json->'shards'->$lag->>'pred' FROM orr_wh_runs WHERE job = '$name'")
		# the split's predicate is PostgreSQL text over "id": delete through the ids it selects
		pg -c "COPY (SELECT id FROM $src WHERE $pred) TO STDOUT" >"$TMP/ids.txt"
		# (the statement goes on stdin: a split's ids can be longer than
		# one command line may be)
		{
			printf 'DELETE FROM %s WHERE id IN (' "$mdst"
			paste -sd, "$TMP/ids.txt" | tr -d '\n'
			printf "); DELETE FROM orr_wh_splits WHERE job = '%s' AND split = %s;\n" "$name" "$lag"
		} | my
	fi
	must_run "$TMP/x.json" --resume
	expect_eq "multi: resume state" "$(summary "['resume']['state']")" resumed
	if [[ $lag != NULL ]]; then
		expect_eq "multi: splits committed by both targets are not read" "$(summary "['resumed_splits']")" 2
	fi
	pg_same "$src" "$dst"
	my_same "$src" "$mdst"
	expect_eq "multi: PostgreSQL records dropped" "$(pg_records "$name")" 0
	expect_eq "multi: MariaDB records dropped" "$(my_records "$name")" 0
}

case_key() {
	local src=wh_rsrc_$S dst=wh_rdst_$S name=rs_key_$S
	JOBS+=("$name")
	make_source "$src" 40000
	PG_TABLES+=("$dst")
	pg -c "CREATE TABLE $dst (LIKE $src)"
	cat >"$TMP/k.json" <<J
{"name":"$name","channels":2,"batch_rows":1000,"progress_interval_ms":0,"reader":{$PGW,"table":"$src","split":{"key":"id","shards":4}},"writers":[{$PGW,"table":"$dst","mode":"truncate"}]}
J
	killed_run "$TMP/k.json" 2 pg_records "$name"
	# a changed job (another filter) must not resume the records of the old one
	sed 's/"shards":4}/"shards":4},"filter":"id >= 0"/' "$TMP/k.json" >"$TMP/k2.json"
	must_run "$TMP/k2.json" --resume
	expect_eq "changed job: resume state" "$(summary "['resume']['state']")" changed
	expect_eq "changed job: nothing skipped" "$(summary "['rows_skipped']")" 0
	pg_same "$src" "$dst"
	# --from-scratch drops the records of a failed run and reads everything
	killed_run "$TMP/k.json" 2 pg_records "$name"
	must_run "$TMP/k.json" --from-scratch
	expect_eq "from scratch: resume state" "$(summary "['resume']['state']")" fresh
	expect_eq "from scratch: rows read" "$(summary "['rows_read']")" 40001
	pg_same "$src" "$dst"
	# the job key "resume": true resumes like --resume; the run key ignores
	# channel counts and connection strings
	killed_run "$TMP/k.json" 2 pg_records "$name"
	sed 's/"channels":2/"channels":3,"resume":true/' "$TMP/k.json" >"$TMP/k3.json"
	must_run "$TMP/k3.json"
	check_resumed 40001 4 2
	pg_same "$src" "$dst"
	# another run id (executord passes the instance) never resumes
	killed_run "$TMP/k.json" 2 pg_records "$name"
	must_run "$TMP/k.json" --resume --run-id "instance-$S"
	expect_eq "another run id: resume state" "$(summary "['resume']['state']")" changed
	pg_same "$src" "$dst"
	# without bookkeeping the summary says so
	must_run "$TMP/k2.json"
	expect_eq "no bookkeeping: resume state" "$(summary "['resume']['state']")" off
}

case_incremental() {
	# A resumed incremental run reads the failed run's range: its stored
	# high mark, not max(id) now; the rows that arrived meanwhile wait for
	# the next run.
	local src=wh_rsrc_$S dst=wh_rdst_$S name=rs_inc_$S
	JOBS+=("$name")
	make_source "$src" 40000
	PG_TABLES+=("$dst")
	pg -c "CREATE TABLE $dst (LIKE $src)"
	cat >"$TMP/i.json" <<J
{"name":"$name","channels":2,"batch_rows":1000,"progress_interval_ms":0,"state_file":"$TMP/i.state","reader":{$PGW,"table":"$src","split":{"key":"id","shards":4},"incremental":{"column":"id","kind":"integer"}},"writers":[{$PGW,"table":"$dst"}]}
J
	killed_run "$TMP/i.json" 2 pg_records "$name"
	pg -c "INSERT INTO $src SELECT g, 1, 'late', NULL FROM generate_series(40001, 40100) g"
	must_run "$TMP/i.json" --resume
	check_resumed 40001 4 2
	expect_eq "incremental: the resumed run keeps the failed run's high mark" "$(summary "['watermark']['to']")" 40000
	expect_eq "incremental: rows past it wait for the next run" "$(pg -c "SELECT count(*) FROM $dst WHERE id > 40000")" 0
	must_run "$TMP/i.json" --resume
	expect_eq "incremental: the next run reads the late rows only" "$(summary "['rows_read']")" 100
	pg_same "$src" "$dst"
}

case "$CASE" in
pg | mysql | multi | key | incremental) "case_$CASE" ;;
*) fail "unknown case $CASE" ;;
esac
echo "PASS [$CASE]"
