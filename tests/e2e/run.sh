#!/usr/bin/env bash
# tests/e2e/run.sh BUILD_DIR - Orrery's browser tests against a real platform.
#
# Builds the UI (web/ -> static/app; its API types generated first from
# static/openapi.json), creates a fresh database on the PostgreSQL of the
# test stack (ORRERY_PG_DSN, exported by deploy/test.sh; unset is a
# failure), runs `halleyd migrate`, starts `halleyd serve`,
# `galaxyd serve` (serving this checkout's static/), `keplerd run` and one
# `executord serve` on free loopback ports, creates the test users with
# `halleyd user-add`, then runs the Playwright tests in web/tests/ with node's
# test runner, driving Debian's Chromium. Screenshots go to
# tests/e2e/screenshots/ (one per page).
#
# keplerd, executord and galaxyd share a ZooKeeper chroot of their own
# (ORRERY_ZK + /orrery-e2e-<pid>, created here; unset ORRERY_ZK is a
# failure), so the scheduler sees only this run's executor and galaxyd lists
# only it. executord works in the run's temporary folder (work dir, blob
# root), picks its sandbox backend itself (cgroup v2/v1, else rlimits) and
# serves live logs with the token galaxyd is given (executor_log_token).
#
# Every daemon is stopped by its pid and the database is dropped on exit,
# whatever happened. Logs are kept in a temporary directory, printed on
# failure.
set -euo pipefail

BUILD=${1:?usage: tests/e2e/run.sh BUILD_DIR}
BUILD=$(cd -- "$BUILD" && pwd -P)
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
WEB=$ROOT/web
SHOTS=${ORRERY_E2E_SCREENSHOTS:-$ROOT/tests/e2e/screenshots}
CHROMIUM=${ORRERY_E2E_CHROMIUM:-/usr/bin/chromium}

say() { printf 'e2e: %s\n' "$*" >&2; }
die() {
	say "FAIL: $*"
	exit 1
}

[[ -n ${ORRERY_PG_DSN:-} ]] || die "ORRERY_PG_DSN is not set: run through deploy/test.sh, or start the stack with deploy/stack.sh start and eval \"\$(deploy/stack.sh env)\""
[[ -n ${ORRERY_ZK:-} ]] || die "ORRERY_ZK is not set: keplerd and executord need the stack's ZooKeeper"
for b in halleyd galaxyd keplerd executord; do
	[[ -x $BUILD/bin/$b ]] || die "$b missing in $BUILD/bin"
done
[[ -x $CHROMIUM ]] || die "$CHROMIUM not found (Debian package chromium)"
[[ -d $WEB/node_modules ]] || die "web/node_modules is missing: run deploy/install-deps.sh (npm ci in web/)"
command -v psql >/dev/null || die "psql not found"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/orr-e2e.XXXXXX")
DB="orr_e2e_$$_$RANDOM"
PIDS=()
CREATED_DB=0

dsn_with_db() { # DSN with its database replaced
	python3 -c 'import sys, urllib.parse as u
p = u.urlsplit(sys.argv[1]); print(u.urlunsplit((p.scheme, p.netloc, "/" + sys.argv[2], p.query, p.fragment)))' "$1" "$2"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Create the chroot node of a ZooKeeper connect string host:port/path (one
# level; an existing node is fine), speaking ZooKeeper's wire protocol: a
# session, one create request, a close.
zk_chroot() {
	python3 - "$1" <<'PY'
import socket, struct, sys
hosts, _, path = sys.argv[1].partition("/")
host, port = hosts.split(",")[0].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=10)
def send(body):
    s.sendall(struct.pack(">i", len(body)) + body)
def recv():
    n = b""
    while len(n) < 4:
        n += s.recv(4 - len(n)) or sys.exit("zookeeper closed the connection")
    (k,) = struct.unpack(">i", n)
    b = b""
    while len(b) < k:
        b += s.recv(k - len(b)) or sys.exit("zookeeper closed the connection")
    return b
def zstr(x):
    x = x.encode()
    return struct.pack(">i", len(x)) + x
send(struct.pack(">iqiq", 0, 0, 10000, 0) + struct.pack(">i", 16) + bytes(16))
recv()
acl = struct.pack(">i", 1) + struct.pack(">i", 31) + zstr("world") + zstr("anyone")
send(struct.pack(">ii", 1, 1) + zstr("/" + path) + struct.pack(">i", -1) + acl + struct.pack(">i", 0))
xid, zxid, err = struct.unpack(">iqi", recv()[:16])
send(struct.pack(">ii", 2, -11))
if err not in (0, -110):  # ZOK, ZNODEEXISTS
    sys.exit(f"zookeeper create /{path}: error {err}")
PY
}

wait_log() { # file pattern pid what: wait (<= 60 s) for a line of the daemon's log
	local i
	for ((i = 0; i < 600; i++)); do
		kill -0 "$3" 2>/dev/null || die "$4 exited at start (log: $TMP)"
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	die "$4 did not log \"$2\" within 60 s"
}

wait_port() { # port pid what
	local i
	for ((i = 0; i < 600; i++)); do
		kill -0 "$2" 2>/dev/null || die "$3 exited at start (log: $TMP)"
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	die "$3 did not listen on port $1 within 60 s"
}

stop_daemons() { # newest first (scheduler and executor before the servers
	# they report to): TERM each daemon we started, by pid; KILL after 10 s
	local i p
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		p=${PIDS[i]}
		kill -TERM "$p" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	PIDS=()
}

# executord leaves the (empty) parent of its attempt cgroups: remove this
# run's, in every hierarchy it used (v1 controllers or the v2 tree).
remove_cgroups() {
	local d
	for d in "/sys/fs/cgroup/orrery-e2e-$$" /sys/fs/cgroup/*/"orrery-e2e-$$"; do
		[[ -d $d ]] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || say "could not remove cgroup $d"
	done
}

cleanup() {
	local rc=$?
	stop_daemons
	remove_cgroups
	if ((CREATED_DB)); then
		psql "$ORRERY_PG_DSN" -qAtc "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" >/dev/null 2>&1 || true
	fi
	if ((rc != 0)); then
		for f in "$TMP"/*.log; do
			[[ -f $f ]] || continue
			say "---- $(basename "$f") (last 40 lines)"
			tail -n 40 "$f" >&2
		done
	fi
	rm -rf -- "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "building the UI"
(cd -- "$WEB" && node tools/api-types.mjs && npx --no-install tsc --noEmit && npx --no-install vite build --logLevel warn) >"$TMP/build.log" 2>&1 ||
	{
		cat "$TMP/build.log" >&2
		die "UI build failed"
	}

say "database $DB"
psql "$ORRERY_PG_DSN" -v ON_ERROR_STOP=1 -qAtc "CREATE DATABASE \"$DB\"" >/dev/null
CREATED_DB=1

HALLEY_PORT=$(free_port)
GALAXY_PORT=$(free_port)
export ORRERY_HALLEY_LISTEN=127.0.0.1:$HALLEY_PORT
ORRERY_HALLEY_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
export ORRERY_HALLEY_TOKEN
ORRERY_HALLEY_PG_DSN=$(dsn_with_db "$ORRERY_PG_DSN" "$DB")
export ORRERY_HALLEY_PG_DSN
export ORRERY_HALLEY_SECRET_KEY=${ORRERY_HALLEY_SECRET_KEY:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}
ORRERY_HALLEY_METRICS_LISTEN=127.0.0.1:$(free_port)
export ORRERY_HALLEY_METRICS_LISTEN
export ORRERY_HALLEY_POOL_SIZE=4
# The worker token lets galaxyd's data-source connection test read a secret.
ORRERY_HALLEY_WORKER_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
export ORRERY_HALLEY_WORKER_TOKEN
# The executor's log server token, known to galaxyd for the live log.
LOG_TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
ZK=${ORRERY_ZK%%/*}/orrery-e2e-$$
zk_chroot "$ZK" || die "cannot create the ZooKeeper chroot $ZK"

"$BUILD/bin/halleyd" migrate >"$TMP/migrate.log" 2>&1 || die "halleyd migrate failed: $(tail -n 5 "$TMP/migrate.log")"
"$BUILD/bin/halleyd" serve >"$TMP/halleyd.log" 2>&1 &
PIDS+=($!)
wait_port "$HALLEY_PORT" "${PIDS[-1]}" halleyd

ORRERY_GALAXY_LISTEN=127.0.0.1:$GALAXY_PORT \
	ORRERY_GALAXY_HALLEY=127.0.0.1:$HALLEY_PORT \
	ORRERY_GALAXY_HALLEY_TOKEN=$ORRERY_HALLEY_TOKEN \
	ORRERY_GALAXY_JWT_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') \
	ORRERY_GALAXY_STATIC_DIR=$ROOT/static \
	ORRERY_GALAXY_SCHEMA_DIR=$ROOT/schema \
	ORRERY_GALAXY_ZK=$ZK \
	ORRERY_GALAXY_EXECUTOR_LOG_TOKEN=$LOG_TOKEN \
	ORRERY_GALAXY_THREADS=4 \
	ORRERY_GALAXY_BLOB_ROOT=file://$TMP/blob \
	ORRERY_GALAXY_DATASOURCE_TEST_TOKEN=$ORRERY_HALLEY_WORKER_TOKEN \
	"$BUILD/bin/galaxyd" serve >"$TMP/galaxyd.log" 2>&1 &
PIDS+=($!)
wait_port "$GALAXY_PORT" "${PIDS[-1]}" galaxyd

# One executor. Tasks run as an unprivileged user when executord is root, so
# the folders it works in must be reachable (0755/0711) from the run's folder.
EXECUTOR_ID=e2e-ex-$$
EXECUTOR_PORT=$(free_port)
mkdir -p -- "$TMP/executor" "$TMP/blob" "$TMP/gates"
chmod 0755 "$TMP" "$TMP/blob" "$TMP/gates"
chmod 0711 "$TMP/executor"
ORRERY_EXECUTOR_ID=$EXECUTOR_ID \
	ORRERY_EXECUTOR_HOST=127.0.0.1 \
	ORRERY_EXECUTOR_HALLEY=127.0.0.1:$HALLEY_PORT \
	ORRERY_EXECUTOR_HALLEY_TOKEN=$ORRERY_HALLEY_TOKEN \
	ORRERY_EXECUTOR_HALLEY_WORKER_TOKEN=$ORRERY_HALLEY_WORKER_TOKEN \
	ORRERY_EXECUTOR_ZK=$ZK \
	ORRERY_EXECUTOR_ZK_SESSION=10s \
	ORRERY_EXECUTOR_SLOTS=4 \
	ORRERY_EXECUTOR_LABELS=zone=e2e \
	ORRERY_EXECUTOR_LISTEN=127.0.0.1:$EXECUTOR_PORT \
	ORRERY_EXECUTOR_LOG_TOKEN=$LOG_TOKEN \
	ORRERY_EXECUTOR_WORK_DIR=$TMP/executor \
	ORRERY_EXECUTOR_BLOB_ROOT=file://$TMP/blob \
	ORRERY_EXECUTOR_CGROUP_PARENT=orrery-e2e-$$ \
	ORRERY_EXECUTOR_BIN_DIR=$BUILD/bin \
	ORRERY_EXECUTOR_SWEEP_INTERVAL=2s \
	ORRERY_EXECUTOR_DEFAULT_TIMEOUT=5m \
	"$BUILD/bin/executord" serve >"$TMP/executord.log" 2>&1 </dev/null &
PIDS+=($!)
wait_port "$EXECUTOR_PORT" "${PIDS[-1]}" executord
wait_log "$TMP/executord.log" 'registered in zookeeper' "${PIDS[-1]}" executord

ORRERY_KEPLER_HALLEY=127.0.0.1:$HALLEY_PORT \
	ORRERY_KEPLER_HALLEY_TOKEN=$ORRERY_HALLEY_TOKEN \
	ORRERY_KEPLER_ZK=$ZK \
	ORRERY_KEPLER_ID=e2e-kepler-$$ \
	ORRERY_KEPLER_SWEEP_INTERVAL=5s \
	ORRERY_KEPLER_ZK_SESSION_TIMEOUT=10s \
	"$BUILD/bin/keplerd" run >"$TMP/keplerd.log" 2>&1 </dev/null &
PIDS+=($!)
wait_log "$TMP/keplerd.log" 'kepler leadership gained' "${PIDS[-1]}" keplerd

# Test users: an admin, a developer of team analytics, a developer of team
# finance (owner of the task the first developer must not edit), a viewer.
PW_ADMIN="admin-$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
PW_DEV="dev-$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
add_user() { # name password role [team]
	local args=("$1" --role "$3")
	[[ -n ${4:-} ]] && args+=(--team "$4")
	printf '%s\n' "$2" | "$BUILD/bin/halleyd" user-add "${args[@]}" >>"$TMP/users.log" 2>&1 ||
		die "halleyd user-add $1 failed: $(tail -n 3 "$TMP/users.log")"
}
add_user e2e_admin "$PW_ADMIN" admin
add_user e2e_dev "$PW_DEV" developer analytics
add_user e2e_fin "$PW_DEV" developer finance
add_user e2e_viewer "$PW_DEV" viewer

# ORRERY_E2E_ONLY=NAME[,NAME...] runs only web/tests/NAME.test.mjs (while
# working on one page); the default, and what deploy/test.sh runs, is all.
FILES=()
if [[ -n ${ORRERY_E2E_ONLY:-} ]]; then
	IFS=, read -r -a only <<<"$ORRERY_E2E_ONLY"
	for n in "${only[@]}"; do
		[[ -f $WEB/tests/$n.test.mjs ]] || die "ORRERY_E2E_ONLY: no web/tests/$n.test.mjs"
		FILES+=("$WEB/tests/$n.test.mjs")
	done
else
	FILES=("$WEB"/tests/*.test.mjs)
fi

mkdir -p -- "$SHOTS"
rm -f -- "$SHOTS"/*.png
say "galaxyd at http://127.0.0.1:$GALAXY_PORT; running the browser tests"
set +e # a failed test must reach the message below, not stop the script here
# --test-timeout bounds each file: the longest (a11y: 156 s on an idle
# machine, over 600 s at load 26) keeps room to run on a much slower one;
# ctest's TIMEOUT bounds the whole.
ORRERY_E2E_BASE_URL=http://127.0.0.1:$GALAXY_PORT \
	ORRERY_E2E_SCREENSHOTS=$SHOTS \
	ORRERY_E2E_CHROMIUM=$CHROMIUM \
	ORRERY_E2E_EXECUTOR=$EXECUTOR_ID \
	ORRERY_E2E_GATES=$TMP/gates \
	ORRERY_E2E_ADMIN=e2e_admin ORRERY_E2E_ADMIN_PASSWORD=$PW_ADMIN \
	ORRERY_E2E_DEV=e2e_dev ORRERY_E2E_FIN=e2e_fin ORRERY_E2E_VIEWER=e2e_viewer ORRERY_E2E_PASSWORD=$PW_DEV \
	node --test --test-concurrency=1 --test-timeout=1200000 "${FILES[@]}" 2>&1 | tee "$TMP/node-test.log"
rc=${PIPESTATUS[0]}
set -e
((rc == 0)) || die "browser tests failed"
# The daemons served the whole run: under ASan/UBSan (-DORR_SANITIZE=ON)
# any report they wrote, at run time or at exit, fails the test.
stop_daemons
if grep -l -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$TMP"/{halleyd,galaxyd,keplerd,executord}.log >&2; then
	die "a daemon reported a sanitizer error (log above)"
fi
n=$(find "$SHOTS" -name '*.png' | wc -l)
say "ok; $n screenshots in $SHOTS"
