#!/usr/bin/env bash
# Orrery's private server stack: PostgreSQL 15, ZooKeeper 3.8, Redis 7 and
# MariaDB, each a private instance on a loopback port, for development and
# for the integration tests (which use the same launcher as the quickstart).
#
#   deploy/stack.sh start [server...]   start (idempotent); waits until each answers
#   deploy/stack.sh stop [server...]    stop what this launcher started (a stop
#                                       of all four first stops the daemons of
#                                       deploy/daemons.sh, when that file exists)
#   deploy/stack.sh status [server...]  running/stopped; exit 0 only if all run
#   deploy/stack.sh env                 shell exports: eval "$(deploy/stack.sh env)"
#
# Servers: pg, zk, redis, mysql (alias mariadb). Default: all four, or the
# space-separated list in ORRERY_STACK; names given as arguments win.
#
# Settings (environment):
#   ORRERY_VAR_DIR        data, logs, pid files (default: <repo>/var)
#   ORRERY_PORT_BASE      pg = base+0, zk = base+1, redis = base+2,
#                         mysql = base+3 (default 15400)
#   ORRERY_STACK          servers to act on (default "pg zk redis mysql")
#   ORRERY_STACK_TIMEOUT  seconds to wait for each server to answer (default 60)
#   ORRERY_STACK_ADDR     the IPv4 address PostgreSQL, ZooKeeper and Redis
#                         listen on and clients dial (default 127.0.0.1); any
#                         other address also lets PostgreSQL take password
#                         logins from its subnet (pg_hba "samenet"). MariaDB
#                         stays on 127.0.0.1. For a private network of its
#                         own, such as the cluster test's namespaces.
#   ORRERY_STACK_DURABLE  1 (default): every server keeps what it acknowledged
#                         across a crash of the machine (PostgreSQL fsync,
#                         full_page_writes and synchronous_commit on; Redis
#                         with an append-only file synced every second;
#                         MariaDB's InnoDB log flushed at each commit;
#                         ZooKeeper's forceSync). 0: the fast settings for
#                         throw-away test data (all of that off); only
#                         deploy/test.sh asks for them.
#
# Layout under the var dir: pg/ zk/ redis/ mysql/ (data and generated
# configs), log/<server>.log, run/<server>.pid (written by this script from
# the pid it launched), run/sock/ (unix sockets), run/stack.lock.
#
# Invariants:
#   - A pid file names the server process itself (servers are launched through
#     exec-only wrappers: setsid, setpriv, env), so stop signals exactly it.
#   - A pid file is trusted only if its process is alive and looks like that
#     server of this var dir ("of the right kind"); otherwise it is stale.
#   - start and stop hold run/stack.lock, so concurrent callers serialise.
#   - As root, servers run as the unprivileged system user "orrery" (initdb
#     refuses root); as another user, they run as that user.
#
# Durable by default: the quickstart's platform keeps its data. The test
# command alone asks for the fast settings (ORRERY_STACK_DURABLE=0). The
# setting is read at every start, so a restart switches an existing stack.
set -euo pipefail
umask 022

ROOT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
readonly ROOT_DIR
readonly PG_BIN=/usr/lib/postgresql/15/bin
readonly ZK_JAR=/usr/share/java/zookeeper.jar
readonly SLF4J_SIMPLE_JAR=/usr/share/java/slf4j-simple.jar
readonly ALL_SERVERS=(pg zk redis mysql)
readonly STOP_TIMEOUT=30
readonly DB_NAME=orrery DB_USER=orrery DB_PASSWORD=orrery

say() { printf 'stack: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

usage() {
	cat >&2 <<'EOF'
usage: deploy/stack.sh start|stop|status|env [pg] [zk] [redis] [mysql]
  settings: ORRERY_VAR_DIR, ORRERY_PORT_BASE, ORRERY_STACK, ORRERY_STACK_TIMEOUT,
            ORRERY_STACK_DURABLE (1 = durable, the default; 0 = fast, for tests)
EOF
	exit 2
}

# ---------------------------------------------------------------- settings

VAR_DIR=$(realpath -m -- "${ORRERY_VAR_DIR:-$ROOT_DIR/var}")
PORT_BASE=${ORRERY_PORT_BASE:-15400}
TIMEOUT=${ORRERY_STACK_TIMEOUT:-60}
DURABLE=${ORRERY_STACK_DURABLE:-1}
ADDR=${ORRERY_STACK_ADDR:-127.0.0.1}
if ! [[ $ADDR =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]]; then
	die "ORRERY_STACK_ADDR must be an IPv4 address (got '$ADDR')"
fi
if ! [[ $PORT_BASE =~ ^[1-9][0-9]{3,4}$ ]] || ((PORT_BASE < 1024 || PORT_BASE > 65532)); then
	die "ORRERY_PORT_BASE must be a number from 1024 to 65532 (got '$PORT_BASE')"
fi
if ! [[ $TIMEOUT =~ ^[1-9][0-9]{0,3}$ ]]; then
	die "ORRERY_STACK_TIMEOUT must be a whole number of seconds from 1 to 9999 (got '$TIMEOUT')"
fi
if [[ $DURABLE != 0 && $DURABLE != 1 ]]; then
	die "ORRERY_STACK_DURABLE must be 1 (durable, the default) or 0 (fast, for tests) (got '$DURABLE')"
fi
readonly VAR_DIR PORT_BASE TIMEOUT DURABLE ADDR
readonly SOCK_DIR=$VAR_DIR/run/sock
readonly PG_DSN="postgresql://$DB_USER:$DB_PASSWORD@$ADDR:$PORT_BASE/$DB_NAME"
readonly MYSQL_DSN="mysql://$DB_USER:$DB_PASSWORD@127.0.0.1:$((PORT_BASE + 3))/$DB_NAME"

# Ports, pid files and logs by server name. The helpers below avoid
# subshells: on a loaded machine every fork costs tens of milliseconds.
declare -A PORT=([pg]=$PORT_BASE [zk]=$((PORT_BASE + 1)) [redis]=$((PORT_BASE + 2))
	[mysql]=$((PORT_BASE + 3)))
readonly PORT

# select_servers NAME...: sets SERVERS from the arguments, else ORRERY_STACK,
# else all; fails on an unknown name.
SERVERS=()
select_servers() {
	local names=("$@") n
	if ((${#names[@]} == 0)); then
		read -r -a names <<<"${ORRERY_STACK:-${ALL_SERVERS[*]}}"
	fi
	SERVERS=()
	for n in "${names[@]}"; do
		case $n in
		pg | postgres | postgresql) n=pg ;;
		zk | zookeeper) n=zk ;;
		redis) ;;
		mysql | mariadb) n=mysql ;;
		*) die "unknown server '$n' (in arguments or ORRERY_STACK); known: ${ALL_SERVERS[*]}" ;;
		esac
		[[ " ${SERVERS[*]} " == *" $n "* ]] || SERVERS+=("$n")
	done
	((${#SERVERS[@]} > 0)) || die "no server selected (ORRERY_STACK is empty)"
}

# ---------------------------------------------------------------- processes

# alive PID: the process exists and is not a zombie.
alive() {
	local stat=''
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	stat=${stat##*) }
	[[ -n $stat && ${stat:0:1} != [ZX] ]]
}

# is_ours NAME PID: PID is alive and is server NAME of this var dir.
is_ours() {
	local name=$1 pid=$2 cmd argv=()
	alive "$pid" || return 1
	{ mapfile -d '' -t argv <"/proc/$pid/cmdline"; } 2>/dev/null || return 1
	cmd="${argv[*]-} "
	case $name in
	pg) [[ $cmd == "$PG_BIN/postgres -D $VAR_DIR/pg "* ]] ;;
	zk) [[ $cmd == *java* && $cmd == *" org.apache.zookeeper.server.quorum.QuorumPeerMain $VAR_DIR/zk/zoo.cfg "* ]] ;;
	redis)
		# redis-server rewrites its title; it runs in its data dir.
		[[ $cmd == redis-server* && /proc/$pid/cwd -ef $VAR_DIR/redis ]]
		;;
	mysql) [[ $cmd == *mariadbd" "*" --datadir=$VAR_DIR/mysql "* ]] ;;
	*) return 1 ;;
	esac
}

# read_pid NAME: sets PID from NAME's pid file; fails if there is none.
PID=
read_pid() {
	PID=
	[[ -r $VAR_DIR/run/$1.pid ]] || return 1
	{ read -r PID <"$VAR_DIR/run/$1.pid"; } 2>/dev/null || true
	[[ $PID =~ ^[1-9][0-9]*$ ]]
}

# running_pid NAME: sets PID to our live server NAME's pid; fails otherwise.
running_pid() {
	read_pid "$1" && is_ours "$1" "$PID"
}

# descendants PID: prints every live descendant of PID, one a line.
descendants() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null || true); do
		echo "$c"
		descendants "$c"
	done
}

# port_owner PORT: prints who listens on PORT (empty if nobody).
port_owner() {
	local out
	if command -v ss >/dev/null 2>&1; then
		out=$(ss -Hltn "sport = :$1" 2>/dev/null || true)
		[[ -z $out ]] && return 0
		out=$(ss -Hltnp "sport = :$1" 2>/dev/null || true)
		printf '%s' "${out%%$'\n'*}" | tr -s ' '
	elif (exec 3<>"/dev/tcp/$ADDR/$1") 2>/dev/null; then
		printf 'something'
	fi
	return 0
}

# ---------------------------------------------------------------- identity

# As root, servers run as the system user "orrery"; otherwise as the caller.
# Tasks of executord run as "orrery-task", made here too.
readonly TASK_USER=orrery-task
if ((EUID == 0)); then
	readonly SERVICE_USER=orrery
	readonly ADMIN_MYSQL_USER=root
else
	SERVICE_USER=$(id -un)
	readonly SERVICE_USER
	readonly ADMIN_MYSQL_USER=$SERVICE_USER
fi
AS_SERVICE=()

ensure_service_user() {
	if ((EUID != 0)); then
		return 0
	fi
	if ! id -u "$SERVICE_USER" >/dev/null 2>&1; then
		say "creating system user $SERVICE_USER"
		useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "$SERVICE_USER" ||
			id -u "$SERVICE_USER" >/dev/null 2>&1 ||
			die "could not create the system user $SERVICE_USER (useradd failed)"
	fi
	AS_SERVICE=(setpriv "--reuid=$SERVICE_USER" "--regid=$SERVICE_USER" --clear-groups)
	# executord runs tasks as a user of their own (its default [executor]
	# run_as): never the servers' user, which owns their data.
	if ! id -u "$TASK_USER" >/dev/null 2>&1; then
		say "creating system user $TASK_USER"
		useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "$TASK_USER" ||
			id -u "$TASK_USER" >/dev/null 2>&1 ||
			die "could not create the system user $TASK_USER (useradd failed)"
	fi
}

# run_as_service CMD...: runs CMD as the service user in a clean environment.
run_as_service() {
	"${AS_SERVICE[@]}" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
		HOME="$VAR_DIR" "$@"
}

# own PATH...: gives PATHs to the service user (no-op when not root).
own() {
	if ((EUID == 0)); then
		chown "$SERVICE_USER:$SERVICE_USER" "$@"
	fi
}

# own_tree DIR: makes sure DIR and all below it belong to the service user.
own_tree() {
	if ((EUID == 0)) && [[ $(stat -c %U "$1") != "$SERVICE_USER" ]]; then
		chown -R "$SERVICE_USER:$SERVICE_USER" "$1"
	fi
}

# The service user must reach the var dir through every parent folder.
check_traversable() {
	local d='' part parts=()
	((EUID == 0)) || return 0
	run_as_service test -x "$VAR_DIR" -a -r "$VAR_DIR" && return 0
	# Name the topmost folder that blocks the way.
	IFS=/ read -r -a parts <<<"${VAR_DIR#/}"
	for part in "${parts[@]}"; do
		d=$d/$part
		run_as_service test -x "$d" ||
			die "user $SERVICE_USER cannot enter $d (a parent of the var dir $VAR_DIR):" \
				"run 'chmod o+x $d', or set ORRERY_VAR_DIR to a folder whose parents are traversable"
	done
	die "user $SERVICE_USER cannot read the var dir $VAR_DIR: run 'chmod 755 $VAR_DIR'"
}

prepare_var_dir() {
	mkdir -p -- "$VAR_DIR" "$VAR_DIR/run" "$VAR_DIR/log" || die "cannot create the var dir $VAR_DIR"
	ensure_service_user
	check_traversable
	mkdir -p -- "$SOCK_DIR"
	own "$SOCK_DIR"
	# Unix socket paths are limited to 107 bytes.
	local longest="$SOCK_DIR/.s.PGSQL.$PORT_BASE.lock"
	((${#longest} <= 107)) ||
		die "the var dir path is too long for unix sockets ($longest): set ORRERY_VAR_DIR to a shorter path"
}

# take_lock: serialises start/stop on this var dir (fd 9, closed in servers).
take_lock() {
	local lock=$VAR_DIR/run/stack.lock name
	exec 9>>"$lock"
	flock -n 9 && return 0
	# A server launched by an older version of this script may hold the lock
	# through an inherited descriptor; it must not block its own stop.
	for name in "${ALL_SERVERS[@]}"; do
		if running_pid "$name" &&
			[[ -n $(find "/proc/$PID/fd" -lname "$lock*" 2>/dev/null) ]]; then
			say "warning: $name (pid $PID) holds $lock; going on without the lock"
			return 0
		fi
	done
	say "waiting for another deploy/stack.sh (lock $lock)"
	flock -w $((TIMEOUT * 4)) 9 || die "another deploy/stack.sh holds $lock"
}

# launch NAME CMD...: starts CMD as the service user in the background, in
# its own session, output appended to NAME's log; records its pid.
launch() {
	local name=$1 log pid
	shift
	log=$VAR_DIR/log/$name.log
	printf '==== %(%Y-%m-%dT%H:%M:%S%z)T stack.sh: starting %s on port %s\n' -1 "$name" \
		"${PORT[$name]}" >>"$log"
	setsid "${AS_SERVICE[@]}" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
		HOME="$VAR_DIR/$name" "$@" </dev/null >>"$log" 2>&1 9>&- &
	pid=$!
	echo "$pid" >"$VAR_DIR/run/$name.pid"
}

# ---------------------------------------------------------------- PostgreSQL

pg_prepare() {
	local data=$VAR_DIR/pg log
	log=$VAR_DIR/log/pg.log
	if [[ ! -s $data/PG_VERSION ]]; then
		if [[ -d $data && -n $(ls -A -- "$data") ]]; then
			die "pg: $data is not empty but holds no PostgreSQL cluster; remove it"
		fi
		[[ -x $PG_BIN/initdb ]] || die "pg: $PG_BIN/initdb not found (install postgresql: deploy/install-deps.sh)"
		mkdir -p -- "$data"
		own "$data"
		chmod 700 "$data"
		say "pg: initdb $data"
		local sync_opt=()
		((DURABLE)) || sync_opt=(--no-sync)
		# Superuser "postgres" over the unix socket (trust: the socket lives in
		# the private var dir); passwords (scram) over TCP.
		run_as_service "$PG_BIN/initdb" -D "$data" -U postgres -E UTF8 --locale=C.UTF-8 \
			--auth-local=trust --auth-host=scram-sha-256 "${sync_opt[@]}" >>"$log" 2>&1 ||
			{
				tail -n 20 "$log" >&2
				die "pg: initdb failed; see $log"
			}
	fi
	# Another listen address: password logins from its subnet as well.
	if [[ $ADDR != 127.0.0.1 ]] && ! grep -q '^host all all samenet' "$data/pg_hba.conf"; then
		printf 'host all all samenet scram-sha-256\n' >>"$data/pg_hba.conf"
	fi
	own_tree "$data"
}

pg_launch() {
	# Durable: PostgreSQL's own defaults (fsync, full_page_writes and
	# synchronous_commit on). Fast (tests only): all three off, so the data
	# may be lost on a machine crash.
	local sync_opts=()
	((DURABLE)) || sync_opts=(-c fsync=off -c full_page_writes=off -c synchronous_commit=off)
	launch pg "$PG_BIN/postgres" -D "$VAR_DIR/pg" \
		-c listen_addresses="$ADDR" -c port="$PORT_BASE" \
		-c unix_socket_directories="$SOCK_DIR" \
		"${sync_opts[@]}" \
		-c max_connections=200 -c logging_collector=off \
		-c log_line_prefix='%m [%p] %q%u@%d '
}

# pg_ready: 0 when the server accepts queries, after creating role and db.
pg_ready() {
	"$PG_BIN/pg_isready" -q -h "$SOCK_DIR" -p "$PORT_BASE" -t 2 || return 1
	# As the superuser over the socket: the role and database, idempotently.
	PGCONNECT_TIMEOUT=5 psql -X -q -v ON_ERROR_STOP=1 -h "$SOCK_DIR" -p "$PORT_BASE" \
		-U postgres -d postgres >/dev/null 2>&1 <<EOF || return 1
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$DB_USER') THEN
    CREATE ROLE $DB_USER LOGIN CREATEDB PASSWORD '$DB_PASSWORD';
  ELSE
    ALTER ROLE $DB_USER LOGIN CREATEDB PASSWORD '$DB_PASSWORD';
  END IF;
END
\$\$;
SELECT 'CREATE DATABASE $DB_NAME OWNER $DB_USER'
 WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$DB_NAME') \gexec
EOF
	[[ $(PGCONNECT_TIMEOUT=5 psql -X -At "$PG_DSN" -c 'select 1' 2>/dev/null) == 1 ]]
}

# ---------------------------------------------------------------- ZooKeeper

zk_prepare() {
	local dir=$VAR_DIR/zk
	[[ -r $ZK_JAR ]] || die "zk: $ZK_JAR not found (install zookeeper: deploy/install-deps.sh)"
	command -v java >/dev/null || die "zk: java not found (install default-jre-headless)"
	mkdir -p -- "$dir/data"
	own "$dir" "$dir/data"
	own_tree "$dir/data"
	local ZK_FORCE_SYNC=yes
	((DURABLE)) || ZK_FORCE_SYNC=no
	cat >"$dir/zoo.cfg" <<EOF
# Written by deploy/stack.sh on every start: change the script, not this file.
tickTime=2000
dataDir=$dir/data
clientPort=${PORT[zk]}
clientPortAddress=$ADDR
maxClientCnxns=0
minSessionTimeout=4000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
forceSync=$ZK_FORCE_SYNC
EOF
}

zk_launch() {
	# zookeeper.jar's manifest names its dependency jars; slf4j-simple (when
	# present) sends ZooKeeper's log to stderr, i.e. to log/zk.log.
	local cp=$ZK_JAR
	[[ -r $SLF4J_SIMPLE_JAR ]] && cp=$cp:$SLF4J_SIMPLE_JAR
	launch zk java -Xmx256m -XX:-UsePerfData \
		-Dorg.slf4j.simpleLogger.showDateTime=true \
		-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd\'T\'HH:mm:ss.SSSZ \
		-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$VAR_DIR/zk/zoo.cfg"
}

# zk_cmd WORD: sends a four-letter word to our ZooKeeper, prints the answer.
zk_cmd() {
	# shellcheck disable=SC2016 # $1 and $2 belong to the inner bash
	timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2" && printf %s "$3" >&3 && cat <&3' \
		_ "$ADDR" "${PORT[zk]}" "$1" 2>/dev/null
}

zk_ready() {
	[[ $(zk_cmd ruok) == imok ]] || return 1
	[[ $(zk_cmd srvr) == *"Mode: standalone"* ]]
}

# ---------------------------------------------------------------- Redis

redis_prepare() {
	local dir=$VAR_DIR/redis
	command -v redis-server >/dev/null || die "redis: redis-server not found (install redis-server)"
	mkdir -p -- "$dir"
	own_tree "$dir"
	cat >"$dir/redis.conf" <<EOF
# Written by deploy/stack.sh on every start: change the script, not this file.
bind $ADDR
port ${PORT[redis]}
protected-mode yes
daemonize no
dir $dir
logfile ""
EOF
	if ((DURABLE)); then
		# Every write goes to the append-only file, synced once a second: a
		# crash loses at most the last second.
		printf '%s\n' 'appendonly yes' 'appendfsync everysec' >>"$dir/redis.conf"
	else
		printf '%s\n' 'save ""' 'appendonly no' >>"$dir/redis.conf"
	fi
}

redis_launch() { launch redis redis-server "$VAR_DIR/redis/redis.conf"; }

redis_ready() {
	[[ $(timeout 3 redis-cli -h "$ADDR" -p "${PORT[redis]}" ping 2>/dev/null) == PONG ]]
}

# ---------------------------------------------------------------- MariaDB

mysql_prepare() {
	local data=$VAR_DIR/mysql log user_opt=()
	log=$VAR_DIR/log/mysql.log
	command -v mariadbd >/dev/null || [[ -x /usr/sbin/mariadbd ]] ||
		die "mysql: mariadbd not found (install mariadb-server)"
	# mariadbd opens its error log itself, as the service user.
	touch "$log"
	own "$log"
	if [[ ! -d $data/mysql ]]; then
		if [[ -d $data && -n $(ls -A -- "$data") ]]; then
			die "mysql: $data is not empty but holds no MariaDB data dir; remove it"
		fi
		mkdir -p -- "$data"
		own "$data"
		((EUID == 0)) && user_opt=("--user=$SERVICE_USER")
		say "mysql: mariadb-install-db $data"
		# Only the administrator (root, or the calling user) over the socket.
		mariadb-install-db --no-defaults --datadir="$data" "${user_opt[@]}" \
			--auth-root-authentication-method=socket --auth-root-socket-user="$ADMIN_MYSQL_USER" \
			--skip-test-db --skip-name-resolve >>"$log" 2>&1 ||
			{
				tail -n 20 "$log" >&2
				die "mysql: mariadb-install-db failed; see $log"
			}
	fi
	own_tree "$data"
}

mysql_launch() {
	# Durable: InnoDB's log is flushed at every commit (MariaDB's default, 1).
	# Fast (tests only): 2, written at commit and flushed once a second.
	local flush=1
	((DURABLE)) || flush=2
	launch mysql mariadbd --no-defaults --datadir="$VAR_DIR/mysql" \
		--port="${PORT[mysql]}" --bind-address=127.0.0.1 --skip-networking=0 \
		--socket="$SOCK_DIR/mysql.sock" --pid-file="$VAR_DIR/mysql/mariadbd.pid" \
		--log-error="$VAR_DIR/log/mysql.log" --skip-name-resolve --local-infile=1 \
		--skip-log-bin --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit="$flush" \
		--max-connections=200 --character-set-server=utf8mb4
}

mysql_ready() {
	local u
	timeout 5 mariadb --no-defaults --socket="$SOCK_DIR/mysql.sock" -u "$ADMIN_MYSQL_USER" \
		-N -e 'select 1' >/dev/null 2>&1 || return 1
	{
		echo "CREATE DATABASE IF NOT EXISTS \`$DB_NAME\` CHARACTER SET utf8mb4;"
		for u in "'$DB_USER'@'127.0.0.1'" "'$DB_USER'@'localhost'"; do
			echo "CREATE USER IF NOT EXISTS $u IDENTIFIED BY '$DB_PASSWORD';"
			echo "ALTER USER $u IDENTIFIED BY '$DB_PASSWORD';"
			echo "GRANT ALL PRIVILEGES ON \`$DB_NAME\`.* TO $u;"
			# Tests may create and drop their own databases named orrery_*.
			echo "GRANT ALL PRIVILEGES ON \`${DB_NAME}\\_%\`.* TO $u;"
			echo "GRANT FILE ON *.* TO $u;"
		done
	} | timeout 10 mariadb --no-defaults --socket="$SOCK_DIR/mysql.sock" \
		-u "$ADMIN_MYSQL_USER" >/dev/null 2>&1 || return 1
	[[ $(MYSQL_PWD=$DB_PASSWORD timeout 5 mariadb --no-defaults -h 127.0.0.1 \
		-P "${PORT[mysql]}" -u "$DB_USER" -N -e 'select 1' "$DB_NAME" 2>/dev/null) == 1 ]]
}

# ---------------------------------------------------------------- stopping

# The signal for a quick clean shutdown: for PostgreSQL SIGINT is the "fast"
# shutdown (SIGTERM would wait for every client to leave).
declare -A STOP_SIGNAL=([pg]=INT [zk]=TERM [redis]=TERM [mysql]=TERM)
readonly STOP_SIGNAL

# finish_stop NAME PID DEADLINE CHILDREN: waits for PID (already signalled)
# until DEADLINE (in $SECONDS), then kills it and CHILDREN; removes the pid file.
finish_stop() {
	local name=$1 pid=$2 deadline=$3 children=$4 c
	while alive "$pid" && ((SECONDS < deadline)); do
		sleep 0.1
	done
	if alive "$pid"; then
		say "$name: pid $pid still alive after ${STOP_TIMEOUT}s: SIGKILL"
		children="$children $(descendants "$pid" | tr '\n' ' ')"
		kill -KILL "$pid" 2>/dev/null || true
		deadline=$((SECONDS + 10))
		while alive "$pid" && ((SECONDS < deadline)); do
			sleep 0.1
		done
	fi
	for c in $children; do
		if alive "$c"; then
			kill -KILL "$c" 2>/dev/null || true
		fi
	done
	rm -f -- "$VAR_DIR/run/$name.pid"
	alive "$pid" && die "$name: pid $pid survived SIGKILL"
	say "$name: stopped (pid $pid)"
}

# stop_servers NAME...: stops those of NAMEs that run, all at once.
stop_servers() {
	local name deadline pids=() names=() kids=() i
	for name in "$@"; do
		if ! read_pid "$name"; then
			[[ ! -e $VAR_DIR/run/$name.pid ]] || rm -f -- "$VAR_DIR/run/$name.pid"
			continue
		fi
		if ! is_ours "$name" "$PID"; then
			say "$name: pid file names pid $PID, which is not our $name: removing the stale pid file"
			rm -f -- "$VAR_DIR/run/$name.pid"
			continue
		fi
		# PostgreSQL's children, to be sure none outlives a SIGKILLed postmaster.
		if [[ $name == pg ]]; then
			kids+=("$(descendants "$PID" | tr '\n' ' ')")
		else
			kids+=("")
		fi
		kill -"${STOP_SIGNAL[$name]}" "$PID" 2>/dev/null || true
		names+=("$name")
		pids+=("$PID")
	done
	deadline=$((SECONDS + STOP_TIMEOUT))
	for i in "${!names[@]}"; do
		finish_stop "${names[$i]}" "${pids[$i]}" "$deadline" "${kids[$i]}"
	done
}

# ---------------------------------------------------------------- commands

LAUNCHED=()

# start_failed NAME WHY: reports, stops what this run launched, exits 1.
start_failed() {
	local name=$1 why=$2 log
	log=$VAR_DIR/log/$name.log
	say "error: $name (port ${PORT[$name]}) $why; its log is $log; last lines:"
	tail -n 25 -- "$log" 2>/dev/null | sed 's/^/    /' >&2 || true
	stop_servers "${LAUNCHED[@]}" || true
	exit 1
}

wait_ready() {
	local name=$1 pid deadline
	read_pid "$name" || start_failed "$name" "has no pid file"
	pid=$PID
	deadline=$((SECONDS + TIMEOUT))
	while :; do
		alive "$pid" || start_failed "$name" "exited during start-up"
		if "${name}_ready"; then
			is_ours "$name" "$pid" ||
				start_failed "$name" "answers, but pid $pid is not the server launched"
			return 0
		fi
		((SECONDS < deadline)) || start_failed "$name" "did not answer within ${TIMEOUT}s"
		sleep 0.2
	done
}

cmd_start() {
	local name port owner i todo=() jobs=() failed=()
	prepare_var_dir
	take_lock
	for name in "${SERVERS[@]}"; do
		port=${PORT[$name]}
		if running_pid "$name"; then
			say "$name: already running (pid $PID, port $port, $(mode_of "$name"))"
			[[ $(mode_of "$name") == "$(mode_name)" ]] ||
				say "$name: asked for $(mode_name) settings; they apply at its next start" \
					"(deploy/stack.sh stop $name; deploy/stack.sh start $name)"
			continue
		fi
		rm -f -- "$VAR_DIR/run/$name.pid"
		owner=$(port_owner "$port")
		[[ -z $owner ]] ||
			die "$name: port $port is already taken by a process that is not this stack's ($owner);" \
				"stop it or choose other ports with ORRERY_PORT_BASE (now $PORT_BASE)"
		todo+=("$name")
	done
	# Prepare (initdb, mariadb-install-db) and launch every server at once,
	# each in a subshell; then wait for each to answer.
	LAUNCHED=("${todo[@]}")
	for name in "${todo[@]}"; do
		("${name}_prepare" && "${name}_launch" &&
			printf '%s\n' "$(mode_name)" >"$VAR_DIR/run/$name.mode") &
		jobs+=($!)
	done
	for i in "${!todo[@]}"; do
		wait "${jobs[$i]}" || failed+=("${todo[$i]}")
	done
	if ((${#failed[@]} > 0)); then
		stop_servers "${todo[@]}" || true
		die "could not start: ${failed[*]} (see the messages above)"
	fi
	for name in "${todo[@]}"; do
		wait_ready "$name"
		read_pid "$name" || true
		say "$name: ready (pid $PID, port ${PORT[$name]})"
	done
}

cmd_stop() {
	if [[ ! -d $VAR_DIR/run ]]; then
		say "nothing to stop: $VAR_DIR/run does not exist"
		return 0
	fi
	take_lock
	local order=() i
	# A full stop first stops Orrery's own daemons (deploy/daemons.sh, started
	# by deploy/quickstart.sh), which depend on these servers.
	if ((${#SERVERS[@]} == ${#ALL_SERVERS[@]})) && [[ -r $ROOT_DIR/deploy/daemons.sh ]]; then
		export ORRERY_VAR_DIR=$VAR_DIR ORRERY_PORT_BASE=$PORT_BASE
		# shellcheck source=deploy/daemons.sh disable=SC1091
		. "$ROOT_DIR/deploy/daemons.sh"
		if declare -F orr_daemons_stop >/dev/null; then
			orr_daemons_stop
		fi
	fi
	for ((i = ${#SERVERS[@]} - 1; i >= 0; i--)); do
		order+=("${SERVERS[$i]}")
	done
	stop_servers "${order[@]}"
}

# mode_name: the settings this call asks for, "durable" or "fast".
mode_name() { ((DURABLE)) && echo durable || echo fast; }

# mode_of NAME: the settings server NAME was last started with.
mode_of() {
	local m=unknown
	[[ -r $VAR_DIR/run/$1.mode ]] && read -r m <"$VAR_DIR/run/$1.mode"
	printf '%s\n' "$m"
}

cmd_status() {
	local name rc=0
	for name in "${SERVERS[@]}"; do
		if running_pid "$name"; then
			printf '%-6s running  pid=%s port=%s %s\n' "$name" "$PID" "${PORT[$name]}" \
				"$(mode_of "$name")"
		else
			printf '%-6s stopped  port=%s\n' "$name" "${PORT[$name]}"
			rc=1
		fi
	done
	return "$rc"
}

cmd_env() {
	printf 'export ORRERY_VAR_DIR=%q\n' "$VAR_DIR"
	printf 'export ORRERY_PORT_BASE=%q\n' "$PORT_BASE"
	printf 'export ORRERY_PG_DSN=%q\n' "$PG_DSN"
	printf 'export ORRERY_ZK=%q\n' "$ADDR:${PORT[zk]}"
	printf 'export ORRERY_REDIS=%q\n' "$ADDR:${PORT[redis]}"
	printf 'export ORRERY_MYSQL_DSN=%q\n' "$MYSQL_DSN"
}

main() {
	(($# > 0)) || usage
	local cmd=$1
	shift
	case $cmd in
	start | stop | status) ;;
	env) (($# == 0)) || usage ;;
	-h | --help | help) usage ;;
	*)
		say "unknown command '$cmd'"
		usage
		;;
	esac
	select_servers "$@"
	"cmd_$cmd"
}

main "$@"
