# common.sh - what every wormhole integration script shares, sourced after
# it has set WH (the wormhole binary) and CASE (the case name, for messages):
#
#   wh_it_setup NAME      checks the stack's env, makes $TMP, sets $S (this
#                         shell's pid, the suffix of every table name),
#                         parses ORRERY_MYSQL_DSN and arms the cleanup
#   pg ARGS / my ARGS     psql / mariadb on the stack's databases
#   pgt T / myt T         drop table T (and its staging table) at exit;
#                         PG_TYPES, PIDS and JOBS are cleaned up too, and a
#                         script may define wh_it_cleanup_extra for the rest
#   run JOB [ARGS]        wormhole run; stdout in $TMP/out.json, stderr in
#                         $TMP/err.txt, the exit status in $RC
#   must_run JOB [ARGS]   run, and fail unless it exited 0
#   summary FIELD         a field of the summary, e.g. "['rows_read']"
#   fail MSG / expect_eq WHAT GOT WANT
#   pg_same A B           PostgreSQL: rows of A not in B plus rows of B not in
#                         A must be 0 (EXCEPT ALL both ways)
# shellcheck shell=bash

wh_it_setup() {
	: "${ORRERY_PG_DSN:?ORRERY_PG_DSN is not set: start the stack (deploy/stack.sh start) and eval its env}"
	: "${ORRERY_MYSQL_DSN:?ORRERY_MYSQL_DSN is not set: start the stack (deploy/stack.sh start) and eval its env}"
	S=$$
	TMP=$(mktemp -d "/tmp/wh-$1-XXXXXX")
	PG_TABLES=()
	PG_TYPES=()
	MY_TABLES=()
	PIDS=() # processes a case started in the background
	JOBS=() # jobs whose split records are dropped at exit
	trap wh_it_cleanup EXIT
	# mysql://user:password@host:port/db
	if [[ ! $ORRERY_MYSQL_DSN =~ ^mysql://([^:]+):([^@]*)@([^:/]+):([0-9]+)/([^?]+) ]]; then
		echo "cannot parse ORRERY_MYSQL_DSN" >&2
		exit 1
	fi
	MY_USER=${BASH_REMATCH[1]} MY_PASS=${BASH_REMATCH[2]} MY_HOST=${BASH_REMATCH[3]}
	MY_PORT=${BASH_REMATCH[4]} MY_DB=${BASH_REMATCH[5]}
}

pg() { PGOPTIONS=--client-min-messages=warning psql "$ORRERY_PG_DSN" -X -q -v ON_ERROR_STOP=1 -At "$@"; }
# (MY_CHARSET, when a script sets it, is the client's character set)
my() { MYSQL_PWD=$MY_PASS mariadb --no-defaults ${MY_CHARSET:+--default-character-set=$MY_CHARSET} -h "$MY_HOST" -P "$MY_PORT" -u "$MY_USER" -N -B "$MY_DB" "$@"; }

pgt() { PG_TABLES+=("$1"); }
myt() { MY_TABLES+=("$1"); }

wh_it_cleanup() {
	local t p j
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done # none writes into $TMP now
	if declare -F wh_it_cleanup_extra >/dev/null; then wh_it_cleanup_extra || true; fi
	for t in "${PG_TABLES[@]}"; do pg -c "DROP TABLE IF EXISTS $t, ${t}__wh_stage CASCADE" 2>/dev/null || true; done
	for t in "${PG_TYPES[@]}"; do pg -c "DROP TYPE IF EXISTS $t CASCADE" 2>/dev/null || true; done
	for t in "${MY_TABLES[@]}"; do my -e "DROP TABLE IF EXISTS $t, ${t}__wh_stage" 2>/dev/null || true; done
	for j in "${JOBS[@]}"; do
		pg -c "DELETE FROM orr_wh_splits WHERE job = '$j'; DELETE FROM orr_wh_runs WHERE job = '$j'" 2>/dev/null || true
		my -e "DELETE FROM orr_wh_splits WHERE job = '$j'; DELETE FROM orr_wh_runs WHERE job = '$j'" 2>/dev/null || true
	done
	rm -rf "$TMP"
}

fail() {
	echo "FAIL [$CASE]: $*" >&2
	exit 1
}
expect_eq() { # what got want
	[[ "$2" == "$3" ]] || fail "$1: got '$2', want '$3'"
	echo "ok: $1 = $3"
}

run() {
	local job=$1
	shift
	set +e
	"$WH" run "$job" "$@" >"$TMP/out.json" 2>"$TMP/err.txt"
	RC=$?
	set -e
}
must_run() {
	run "$@"
	[[ $RC -eq 0 ]] || { cat "$TMP/err.txt" "$TMP/out.json" >&2; fail "wormhole run $1 exited $RC"; }
}
# summary FIELD (jq-less: python from Debian)
summary() { /usr/bin/python3 -c "import json,sys; d=json.load(open('$TMP/out.json')); print(eval('d' + sys.argv[1]))" "$1"; }

pg_same() {
	local d
	d=$(pg -c "SELECT (SELECT count(*) FROM (SELECT * FROM $1 EXCEPT ALL SELECT * FROM $2) x) + (SELECT count(*) FROM (SELECT * FROM $2 EXCEPT ALL SELECT * FROM $1) y)")
	expect_eq "rows differing between $1 and $2" "$d" 0
}
