#!/usr/bin/env bash
# redis_passes.sh - what Redis's one thread does per pass of its event loop,
# client by client, while a benchmark runs against it (perf trace of the
# redis-server process at ORRERY_REDIS for SECONDS; as root).
#
#   eval "$(deploy/stack.sh env)"
#   bash tests/bench/sort/handoff.sh build &    # or any run against that Redis
#   bash tests/bench/sort/redis_passes.sh 1     # while the stages run
#
# Prints the passes (epoll_wait calls) per second and the time spent
# waiting in them, then for each descriptor the reads and writes: calls,
# bytes a call, microseconds a call, and the client's last command from
# CLIENT LIST (the append-only file shows as a descriptor with no client).
# Redis writes a client at most 64 KiB (and the rest of one reply block)
# per pass and reads a large argument in one read per pass, so bytes per
# call is what one pass moves for that client.
set -euo pipefail
SECONDS_=${1:-1}
[ -n "${ORRERY_REDIS:-}" ] || { echo "ORRERY_REDIS is not set (deploy/stack.sh env)" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 2; }
HOST=${ORRERY_REDIS%:*}
PORT=${ORRERY_REDIS##*:}
PID=$(redis-cli -h "$HOST" -p "$PORT" INFO server | tr -d '\r' | awk -F: '/^process_id:/ { print $2 }')
[ -n "$PID" ] || { echo "no process_id from Redis at $ORRERY_REDIS" >&2; exit 1; }
OUT=$(mktemp)
CL=$(mktemp)
trap 'rm -f "$OUT" "$CL"' EXIT
timeout "$SECONDS_" perf trace -p "$PID" -e epoll_wait,read,write,writev -o "$OUT" >/dev/null 2>&1 || true
redis-cli -h "$HOST" -p "$PORT" CLIENT LIST | tr -d '\r' >"$CL"
awk -v clients="$CL" '
BEGIN {
    while ((getline line < clients) > 0) {
        fd = ""; cmd = ""
        n = split(line, kv, " ")
        for (i = 1; i <= n; i++) {
            if (kv[i] ~ /^fd=/) fd = substr(kv[i], 4)
            if (kv[i] ~ /^cmd=/) cmd = substr(kv[i], 5)
        }
        if (fd != "") who[fd] = cmd
    }
}
match($0, /^ *[0-9.]+ \( *[0-9.]+ ms\)/) {
    t = $1 + 0
    if (first == "") first = t
    last = t
    d = $0; sub(/^[^(]*\( */, "", d); sub(/ ms\).*/, "", d)
    call = $0; sub(/^[^:]*: [^ ]* /, "", call); sub(/\(.*/, "", call)
    if (call == "epoll_wait") { passes++; waited += d; next }
    if (!match($0, /fd: [0-9]+/)) next
    fd = substr($0, RSTART + 4, RLENGTH - 4)
    if (!match($0, /= [0-9]+$/)) next
    k = call " " fd
    calls[k]++; ms[k] += d; bytes[k] += substr($0, RSTART + 2) + 0
}
END {
    span = (last - first) / 1000
    if (span <= 0 || passes == 0) { print "no passes traced"; exit 1 }
    printf "passes %d in %.2f s: %.0f a second, %.0f us each; waiting in epoll_wait %.0f%% of the time\n",
        passes, span, passes / span, span * 1e6 / passes, 100 * waited / 1000 / span
    printf "%-7s %4s %-12s %7s %11s %9s\n", "call", "fd", "client cmd", "calls", "bytes/call", "us/call"
    for (k in calls) {
        split(k, p, " ")
        printf "%-7s %4s %-12s %7d %11.0f %9.1f\n", p[1], p[2], (p[2] in who ? who[p[2]] : "-"),
            calls[k], bytes[k] / calls[k], 1000 * ms[k] / calls[k] | "sort -k2n -k1"
    }
}' "$OUT"
