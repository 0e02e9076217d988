# deploy/daemons.sh - start and stop Orrery's own daemons for the quickstart.
#
# Sourced by deploy/quickstart.sh (start) and deploy/stack.sh (stop). Each
# daemon runs in the background with its log in $ORRERY_VAR_DIR/log/NAME.log
# and its pid in $ORRERY_VAR_DIR/run/NAME.pid; a daemon whose pid file names
# a live process is left alone. Only daemons that are built are started.
# Needs ORRERY_VAR_DIR, ORRERY_PORT_BASE and the stack's env (ORRERY_PG_DSN...).

# Ports of the daemons, above the stack's (base+0..3).
orr_daemon_ports() {
    ORR_HALLEY_PORT=$((ORRERY_PORT_BASE + 10))
    ORR_HALLEY_METRICS_PORT=$((ORRERY_PORT_BASE + 11))
    ORR_KEPLER_METRICS_PORT=$((ORRERY_PORT_BASE + 12))
    ORR_GALAXY_PORT=$((ORRERY_PORT_BASE + 20))
    ORR_EXECUTOR_PORT=$((ORRERY_PORT_BASE + 30))
    ORR_EXECUTOR_METRICS_PORT=$((ORRERY_PORT_BASE + 31))
}

orr_random_hex() {
    od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'
}

# Write the platform's config once, with fresh secrets.
orr_write_config() {
    local conf=$ORRERY_VAR_DIR/orrery.conf
    [ -f "$conf" ] && return 0
    orr_daemon_ports
    local token log_token worker_token
    token=$(orr_random_hex 24)
    log_token=$(orr_random_hex 24)
    worker_token=$(orr_random_hex 24)
    umask 077
    cat >"$conf" <<CONF
# Orrery platform configuration, written by deploy/quickstart.sh.
# Every key can be overridden by ORRERY_<SECTION>_<KEY>; see docs/configuration.md.
[log]
level = info

[halley]
listen = 127.0.0.1:$ORR_HALLEY_PORT
metrics_listen = 127.0.0.1:$ORR_HALLEY_METRICS_PORT
pg_dsn = $ORRERY_PG_DSN
token = $token
worker_token = $worker_token
secret_key = $(orr_random_hex 32)

[galaxy]
listen = 127.0.0.1:$ORR_GALAXY_PORT
halley = 127.0.0.1:$ORR_HALLEY_PORT
halley_token = $token
jwt_secret = $(orr_random_hex 32)
static_dir = $ORR_ROOT/static
schema_dir = $ORR_ROOT/schema
zk = $ORRERY_ZK
executor_log_token = $log_token
datasource_test_token = $worker_token
blob_root = file://$ORRERY_VAR_DIR/blob

[executor]
id = local-1
halley = 127.0.0.1:$ORR_HALLEY_PORT
halley_token = $token
halley_worker_token = $worker_token
zk = $ORRERY_ZK
slots = 8
labels = host=local
listen = 127.0.0.1:$ORR_EXECUTOR_PORT
metrics_listen = 127.0.0.1:$ORR_EXECUTOR_METRICS_PORT
log_token = $log_token
work_dir = $ORRERY_VAR_DIR/executor
blob_root = file://$ORRERY_VAR_DIR/blob
bin_dir = $ORR_ROOT/build/bin

[kepler]
halley = 127.0.0.1:$ORR_HALLEY_PORT
halley_token = $token
zk = $ORRERY_ZK
metrics_listen = 127.0.0.1:$ORR_KEPLER_METRICS_PORT
CONF
    umask 022
}

orr_pid_alive() {
    local pidfile=$1
    [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

# orr_daemon_start NAME READY_CMD ARGS... : start build/bin/NAME ARGS in the
# background unless already running, then wait (<= 30 s) for READY_CMD.
orr_daemon_start() {
    local name=$1 ready=$2
    shift 2
    local bin=$ORR_ROOT/build/bin/$name
    local pidfile=$ORRERY_VAR_DIR/run/$name.pid
    local log=$ORRERY_VAR_DIR/log/$name.log
    mkdir -p "$ORRERY_VAR_DIR/run" "$ORRERY_VAR_DIR/log"
    if orr_pid_alive "$pidfile"; then
        echo "$name: already running (pid $(cat "$pidfile"))"
        return 0
    fi
    nohup "$bin" --config "$ORRERY_VAR_DIR/orrery.conf" "$@" >>"$log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    local i
    for i in $(seq 1 60); do
        if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
            echo "$name: exited at start; last lines of $log:" >&2
            tail -n 20 "$log" >&2
            rm -f "$pidfile"
            return 1
        fi
        if eval "$ready" >/dev/null 2>&1; then
            echo "$name: running (pid $(cat "$pidfile"))"
            return 0
        fi
        sleep 0.5
    done
    echo "$name: not ready after 30 s; see $log" >&2
    return 1
}

orr_daemons_start() {
    ORR_ROOT=$1
    orr_daemon_ports
    orr_write_config
    local conf=$ORRERY_VAR_DIR/orrery.conf
    "$ORR_ROOT/build/bin/halleyd" --config "$conf" migrate
    orr_daemon_start halleyd "bash -c 'exec 3<>/dev/tcp/127.0.0.1/$ORR_HALLEY_PORT'" serve
    orr_daemon_start galaxyd "curl -fsS http://127.0.0.1:$ORR_GALAXY_PORT/healthz" serve
    # executord needs root for its cgroup sandboxes and to run tasks as "orrery".
    if [ "$(id -u)" -eq 0 ]; then
        mkdir -p "$ORRERY_VAR_DIR/executor" "$ORRERY_VAR_DIR/blob"
        chmod 0755 "$ORRERY_VAR_DIR"
        chmod 0711 "$ORRERY_VAR_DIR/executor"
        orr_daemon_start executord "bash -c 'exec 3<>/dev/tcp/127.0.0.1/$ORR_EXECUTOR_PORT'" serve
    else
        echo "executord: not started (needs root for its sandboxes)"
    fi
    orr_daemon_start keplerd "bash -c 'exec 3<>/dev/tcp/127.0.0.1/$ORR_KEPLER_METRICS_PORT'" run
    orr_demo_data
}

# A demo admin (password in var/admin-password, mode 0600) and a demo
# workflow of three shell tasks, made once through the REST API: the
# workflow "demo" (its page, run history and pause), and a backfill of its
# last three hours with the downstream tasks, so the console has runs to
# show at once.
orr_demo_data() {
    local pwfile=$ORRERY_VAR_DIR/admin-password
    local api=http://127.0.0.1:$ORR_GALAXY_PORT/api/v1
    if [ ! -f "$pwfile" ]; then
        (umask 077 && orr_random_hex 12 >"$pwfile")
    fi
    "$ORR_ROOT/build/bin/halleyd" --config "$ORRERY_VAR_DIR/orrery.conf" user-add admin \
        --role admin --team demo <"$pwfile" >/dev/null
    local token
    token=$(curl -fsS -H 'Content-Type: application/json' \
        -d "{\"name\":\"admin\",\"password\":\"$(cat "$pwfile")\"}" "$api/auth/login" |
        sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
    local auth="Authorization: Bearer $token" json='Content-Type: application/json'
    local name up id ids=""
    up=""
    for name in demo.extract demo.transform demo.load; do
        id=$(curl -fsS -H "$auth" "$api/tasks?q=$name&active=any" | orr_json_id "$name")
        if [ -z "$id" ]; then
            local deps="[]"
            [ -n "$up" ] && deps="[{\"task\":\"$up\",\"kind\":\"strong\"}]"
            id=$(curl -fsS -H "$auth" -H "$json" \
                -d "{\"name\":\"$name\",\"team\":\"demo\",\"type\":\"shell\",\"schedule\":\"0 0 * * * ?\",
                     \"timezone\":\"UTC\",\"upstreams\":$deps,
                     \"config\":{\"command\":\"echo $name at \$ORRERY_SCHEDULE_TIME; sleep 2\"}}" \
                "$api/tasks" | orr_json_id "$name")
        fi
        ids="$ids${ids:+,}$id"
        up=$name
    done
    if ! curl -fsS -o /dev/null -H "$auth" "$api/workflows/demo" 2>/dev/null; then
        curl -fsS -o /dev/null -X PUT -H "$auth" -H "$json" \
            -d "{\"team\":\"demo\",\"task_ids\":[$ids],
                 \"description\":\"Extract, transform, load: three hourly shell tasks, each after the one before\"}" \
            "$api/workflows/demo"
        local to from
        to=$(date -u +%Y-%m-%dT%H:00:00Z)
        from=$(date -u -d '-3 hours' +%Y-%m-%dT%H:00:00Z)
        curl -fsS -o /dev/null -H "$auth" -H "$json" \
            -d "{\"from\":\"$from\",\"to\":\"$to\",\"include_downstream\":true}" \
            "$api/tasks/${ids%%,*}/backfill"
    fi
}

# The "id" of the task named $1 in a JSON answer on stdin (one task, or a
# list of them under "items"); nothing when there is none.
orr_json_id() {
    python3 -c 'import json, sys
d = json.load(sys.stdin)
for t in d.get("items", [d]):
    if t.get("name") == sys.argv[1]:
        print(t["id"])
        break' "$1"
}

orr_daemons_summary() {
    orr_daemon_ports
    echo
    echo "Orrery is running. Config: $ORRERY_VAR_DIR/orrery.conf, logs: $ORRERY_VAR_DIR/log/"
    echo "  halleyd  gRPC 127.0.0.1:$ORR_HALLEY_PORT, metrics http://127.0.0.1:$ORR_HALLEY_METRICS_PORT/metrics"
    echo "  keplerd  metrics and health http://127.0.0.1:$ORR_KEPLER_METRICS_PORT/{metrics,healthz}"
    echo "  executord  metrics and health http://127.0.0.1:$ORR_EXECUTOR_METRICS_PORT/{metrics,healthz}"
    echo "  galaxyd  metrics and health http://127.0.0.1:$ORR_GALAXY_PORT/{metrics,healthz}"
    echo
    echo "  Open http://127.0.0.1:$ORR_GALAXY_PORT/ and log in as admin / $(cat "$ORRERY_VAR_DIR/admin-password")"
    echo
    echo "  stack    $(./deploy/stack.sh env | tr '\n' ' ')"
    echo "Stop everything with: ./deploy/stack.sh stop"
}

# Stop every daemon with a pid file (SIGTERM, then SIGKILL after 10 s).
orr_daemons_stop() {
    local pidfile pid i
    for pidfile in "$ORRERY_VAR_DIR"/run/*d.pid; do
        [ -f "$pidfile" ] || continue
        case "$(basename "$pidfile")" in
        halleyd.pid | galaxyd.pid | keplerd*.pid | executord*.pid | sortd*.pid) ;;
        *) continue ;;
        esac
        pid=$(cat "$pidfile")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            for i in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
        fi
        rm -f "$pidfile"
    done
}
