#!/usr/bin/env bash
# Integration test of the private server stack launcher, deploy/stack.sh.
#
#   stack_test.sh <repo root>
#
# Runs a stack of its own (a fresh temporary var dir and a free port base
# from 15900 up), so it never disturbs the stack in <repo>/var, and checks:
# start -> every server answers through the settings `env` prints
# (PostgreSQL query and CREATEDB, ZooKeeper ruok and srvr, Redis PING and a
# round trip, MariaDB query and LOAD DATA LOCAL) -> a second start keeps the
# same pids -> status says running -> a second stack on the same ports is
# refused -> every server runs with durable settings by default (PostgreSQL
# fsync, full_page_writes, synchronous_commit; Redis append-only file synced
# every second; InnoDB log flushed at commit; ZooKeeper forceSync) -> stop
# leaves no process behind -> status says stopped, exit != 0 -> a start with
# ORRERY_STACK_DURABLE=0 runs PostgreSQL and Redis with the fast settings.
# Whatever happens, the exit trap stops the stack and removes the var dir.
set -euo pipefail

ROOT=${1:?usage: stack_test.sh <repo root>}
STACK=$ROOT/deploy/stack.sh
SERVERS=(pg zk redis mysql)
PASSED=0
FAILED=0

VAR=$(mktemp -d "${TMPDIR:-/tmp}/orrery-stack-test.XXXXXX")
OTHER_VAR=$VAR.other
chmod 755 "$VAR" # the servers' user must be able to enter it
PIDS=()

log() { printf '%s\n' "$*"; }

pass() {
	log "ok   - $1"
	PASSED=$((PASSED + 1))
}

fail() {
	log "FAIL - $1"
	FAILED=$((FAILED + 1))
}

# check DESCRIPTION CMD...: passes when CMD succeeds.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}

# check_eq DESCRIPTION WANT GOT
check_eq() {
	if [[ $2 == "$3" ]]; then
		pass "$1"
	else
		fail "$1 (want '$2', got '$3')"
	fi
}

alive() {
	local stat=''
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	stat=${stat##*) }
	[[ ${stat:0:1} != [ZX] ]]
}

# procs_mentioning DIR: pids of live processes whose command line names DIR.
procs_mentioning() {
	local f pid argv
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		[[ $pid != "$$" ]] || continue
		argv=()
		{ mapfile -d '' -t argv <"$f"; } 2>/dev/null || continue
		if [[ " ${argv[*]-} " == *"$1"* ]] && alive "$pid"; then
			echo "$pid"
		fi
	done
}

# The launcher's default, whatever the caller (deploy/test.sh asks for the
# fast settings) has in its environment.
stack() {
	env -u ORRERY_STACK_DURABLE ORRERY_VAR_DIR="$VAR" ORRERY_PORT_BASE="$BASE" \
		ORRERY_STACK="${SERVERS[*]}" "$STACK" "$@"
}

cleanup() {
	local rc=$? pid
	set +e
	if [[ -n ${BASE-} ]]; then
		stack stop >/dev/null 2>&1
		ORRERY_VAR_DIR=$OTHER_VAR ORRERY_PORT_BASE=$BASE "$STACK" stop >/dev/null 2>&1
	fi
	# Anything still alive that this test's stacks started.
	for pid in "${PIDS[@]}" $(procs_mentioning "$VAR"); do
		if alive "$pid"; then
			log "cleanup: killing leftover pid $pid"
			kill -KILL "$pid" 2>/dev/null
		fi
	done
	rm -rf -- "$VAR" "$OTHER_VAR"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { [[ -z $(ss -Hltn "sport = :$1" 2>/dev/null) ]]; }

# A port base whose four ports are free.
for _ in $(seq 1 40); do
	candidate=$((15900 + 4 * (RANDOM % 100)))
	if port_free "$candidate" && port_free $((candidate + 1)) &&
		port_free $((candidate + 2)) && port_free $((candidate + 3)); then
		BASE=$candidate
		break
	fi
done
[[ -n ${BASE-} ]] || {
	log "FAIL - no free port base found from 15900 up"
	exit 1
}
log "var dir $VAR, port base $BASE"

# ------------------------------------------------------------------ start
t0=$SECONDS
if ! stack start; then
	fail "start exits 0"
	for s in "${SERVERS[@]}"; do
		log "--- $VAR/log/$s.log (tail)"
		tail -n 20 "$VAR/log/$s.log" 2>/dev/null || true
	done
	log "$PASSED passed, $FAILED failed"
	exit 1
fi
pass "start exits 0 ($((SECONDS - t0)) s from cold)"

for s in "${SERVERS[@]}"; do
	read -r pid <"$VAR/run/$s.pid"
	PIDS+=("$pid")
	check "$s has a pid file naming a live process ($pid)" alive "$pid"
done

# ------------------------------------------------------------------ env
env_out=$(stack env)
eval "$env_out"
check_eq "env: ORRERY_VAR_DIR" "$(realpath "$VAR")" "$ORRERY_VAR_DIR"
check_eq "env: ORRERY_PORT_BASE" "$BASE" "$ORRERY_PORT_BASE"
check_eq "env: ORRERY_ZK" "127.0.0.1:$((BASE + 1))" "$ORRERY_ZK"
check_eq "env: ORRERY_REDIS" "127.0.0.1:$((BASE + 2))" "$ORRERY_REDIS"

# ------------------------------------------------------------------ PostgreSQL
got=$(timeout 10 psql -XAt "$ORRERY_PG_DSN" -c 'select current_user || 6*7' 2>&1) || true
check_eq "pg: query through ORRERY_PG_DSN" "orrery42" "$got"
db=orrery_stack_test_$$
got=$(timeout 20 psql -XAt "$ORRERY_PG_DSN" -c "create database $db" \
	-c "select count(*) from pg_database where datname = '$db'" -c "drop database $db" 2>&1) || true
check_eq "pg: role orrery may create and drop a database" \
	"$(printf 'CREATE DATABASE\n1\nDROP DATABASE')" "$got"
got=$(PGCONNECT_TIMEOUT=5 timeout 10 psql -XAt "${ORRERY_PG_DSN/orrery:orrery@/orrery:wrong@}" \
	-c 'select 1' 2>&1) || true
check "pg: a wrong password is refused" grep -q 'password authentication failed' <<<"$got"

# ------------------------------------------------------------------ ZooKeeper
zk_word() {
	# shellcheck disable=SC2016 # $1 and $2 belong to the inner bash
	timeout 5 bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1##*:}" && printf %s "$2" >&3 && cat <&3' \
		_ "$ORRERY_ZK" "$1" 2>&1 || true
}
check_eq "zk: ruok answers imok" "imok" "$(zk_word ruok)"
check "zk: srvr says Mode: standalone" grep -q 'Mode: standalone' <<<"$(zk_word srvr)"

# ------------------------------------------------------------------ Redis
rport=${ORRERY_REDIS##*:}
check_eq "redis: PING answers PONG" "PONG" "$(timeout 5 redis-cli -h 127.0.0.1 -p "$rport" ping 2>&1)"
timeout 5 redis-cli -h 127.0.0.1 -p "$rport" set orrery:stack-test "v$$" >/dev/null 2>&1 || true
check_eq "redis: SET then GET" "v$$" \
	"$(timeout 5 redis-cli -h 127.0.0.1 -p "$rport" get orrery:stack-test 2>&1)"

# ------------------------------------------------------------------ MariaDB
if [[ $ORRERY_MYSQL_DSN =~ ^mysql://([^:]+):([^@]+)@([^:]+):([0-9]+)/(.+)$ ]]; then
	pass "mysql: ORRERY_MYSQL_DSN has the form mysql://user:password@host:port/db"
	my_user=${BASH_REMATCH[1]} my_pass=${BASH_REMATCH[2]} my_host=${BASH_REMATCH[3]}
	my_port=${BASH_REMATCH[4]} my_db=${BASH_REMATCH[5]}
	check_eq "mysql: port is base+3" "$((BASE + 3))" "$my_port"
	my() {
		MYSQL_PWD=$my_pass timeout 20 mariadb --no-defaults --local-infile=1 -h "$my_host" \
			-P "$my_port" -u "$my_user" -N -B "$my_db" "$@" 2>&1 || true
	}
	check_eq "mysql: query through the DSN's settings" "orrery@127.0.0.1 42" \
		"$(my -e 'select current_user(), 6*7' | tr '\t' ' ')"
	csv=$VAR/load.csv
	printf '1,a\n2,b\n3,c\n' >"$csv"
	check_eq "mysql: LOAD DATA LOCAL INFILE loads 3 rows" "3" "$(my -e "
		create table stack_test (i int, s varchar(8));
		load data local infile '$csv' into table stack_test fields terminated by ',';
		select count(*) from stack_test;
		drop table stack_test;")"
else
	fail "mysql: ORRERY_MYSQL_DSN has the form mysql://user:password@host:port/db (got '$ORRERY_MYSQL_DSN')"
fi

# ------------------------------------------------------------------ durable by default
pg_setting() { timeout 10 psql -XAt "$ORRERY_PG_DSN" -c "show $1" 2>&1 || true; }
for setting in fsync full_page_writes synchronous_commit; do
	check_eq "durable: pg $setting" on "$(pg_setting "$setting")"
done
redis_conf() {
	timeout 5 redis-cli -h 127.0.0.1 -p "$rport" config get "$1" 2>&1 | sed -n 2p || true
}
check_eq "durable: redis appendonly" yes "$(redis_conf appendonly)"
check_eq "durable: redis appendfsync" everysec "$(redis_conf appendfsync)"
if declare -F my >/dev/null; then
	check_eq "durable: mysql innodb_flush_log_at_trx_commit" 1 \
		"$(my -e 'select @@innodb_flush_log_at_trx_commit')"
fi
check "durable: zookeeper forceSync=yes" grep -qx 'forceSync=yes' "$VAR/zk/zoo.cfg"

# ------------------------------------------------------------------ idempotence
if stack start >/dev/null 2>&1; then
	pass "a second start exits 0"
else
	fail "a second start exits 0"
fi
i=0
for s in "${SERVERS[@]}"; do
	pid=$(cat "$VAR/run/$s.pid" 2>/dev/null || echo none)
	check_eq "$s: same pid after the second start" "${PIDS[$i]}" "$pid"
	i=$((i + 1))
done

status_out=$(stack status) && status_rc=0 || status_rc=$?
check_eq "status exits 0 while all run" 0 "$status_rc"
check_eq "status says running for all four" 4 "$(grep -c ' running ' <<<"$status_out" || true)"
check_eq "status says durable for all four" 4 "$(grep -c ' durable$' <<<"$status_out" || true)"

# ------------------------------------------------------------------ port taken
other_out=$(ORRERY_VAR_DIR=$OTHER_VAR ORRERY_PORT_BASE=$BASE "$STACK" start redis 2>&1) &&
	other_rc=0 || other_rc=$?
check "a second stack on the same ports is refused" test "$other_rc" -ne 0
check "its message names the port and ORRERY_PORT_BASE" \
	grep -q "port $((BASE + 2)).*ORRERY_PORT_BASE" <<<"$other_out"

# ------------------------------------------------------------------ stop
if stack stop; then pass "stop exits 0"; else fail "stop exits 0"; fi
i=0
for s in "${SERVERS[@]}"; do
	if alive "${PIDS[$i]}"; then
		fail "$s: pid ${PIDS[$i]} is gone after stop"
	else
		pass "$s: pid ${PIDS[$i]} is gone after stop"
	fi
	check "$s: pid file removed" test ! -e "$VAR/run/$s.pid"
	check "$s: port $((BASE + i)) no longer listens" port_free $((BASE + i))
	i=$((i + 1))
done
left=$(procs_mentioning "$VAR" | tr '\n' ' ')
check_eq "no process left whose command line names the var dir" "" "$left"

status_out=$(stack status) && status_rc=0 || status_rc=$?
check "status exits non-zero once stopped" test "$status_rc" -ne 0
check_eq "status says stopped for all four" 4 "$(grep -c ' stopped ' <<<"$status_out" || true)"

# ------------------------------------------------------------------ fast, when asked
if ORRERY_STACK_DURABLE=0 ORRERY_VAR_DIR=$VAR ORRERY_PORT_BASE=$BASE "$STACK" start pg redis; then
	pass "start pg redis with ORRERY_STACK_DURABLE=0 exits 0"
	check_eq "fast: pg fsync" off "$(pg_setting fsync)"
	check_eq "fast: pg synchronous_commit" off "$(pg_setting synchronous_commit)"
	check_eq "fast: redis appendonly" no "$(redis_conf appendonly)"
	status_out=$(stack status pg redis) || true
	check_eq "status says fast for both" 2 "$(grep -c ' fast$' <<<"$status_out" || true)"
	stack stop pg redis >/dev/null 2>&1 || fail "stop pg redis"
else
	fail "start pg redis with ORRERY_STACK_DURABLE=0 exits 0"
fi
bad_out=$(ORRERY_STACK_DURABLE=yes ORRERY_VAR_DIR=$VAR ORRERY_PORT_BASE=$BASE "$STACK" start pg 2>&1) &&
	bad_rc=0 || bad_rc=$?
check "an ORRERY_STACK_DURABLE other than 0 or 1 is refused" test "$bad_rc" -ne 0
check "its message names ORRERY_STACK_DURABLE" grep -q 'ORRERY_STACK_DURABLE' <<<"$bad_out"

log "$PASSED passed, $FAILED failed"
((FAILED == 0))
