#!/usr/bin/env bash
# redis_passes.sh - what Redis's one thread does per pass of its event loop,
# client by client, while a benchmark runs against it (perf trace of the
# redis-server process at ORRERY_REDIS for SECONDS; as root, so under sudo
# pass ORRERY_REDIS along).
#
#   eval "$(deploy/stack.sh env)"
#   bash tests/bench/sort/handoff.sh build &    # or any run against that Redis
#   bash tests/bench/sort/redis_passes.sh 1     # once the stages have started
#
# Prints the passes (epoll_wait calls) per second and the time spent
# waiting in them, then for each descriptor the reads and writes of Redis's
# main thread: calls, bytes a call, microseconds a call, and the client's
# last command as CLIENT LIST shows it just before (or, for a client that
# connected meanwhile, just after; "-" for the append-only file, and for a
# client that came and went within the trace).
# Redis writes a client at most 64 KiB (and the rest of one reply block)
# per pass and reads a large argument in one read per pass, so bytes per
# call is what one pass moves for that client.
set -euo pipefail
SECONDS_=${1:-1}
[ -n "${ORRERY_REDIS:-}" ] || { echo "ORRERY_REDIS is not set (deploy/stack.sh env)" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run as root (perf trace of another process)" >&2; exit 2; }
HOST=${ORRERY_REDIS%:*}
PORT=${ORRERY_REDIS##*:}
PID=$(redis-cli -h "$HOST" -p "$PORT" INFO server | tr -d '\r' | awk -F: '/^process_id:/ { print $2 }')
[ -n "$PID" ] || { echo "no process_id from Redis at $ORRERY_REDIS" >&2; exit 1; }
OUT=$(mktemp)
CL=$(mktemp)
CL0=$(mktemp)
ERR=$(mktemp)
trap 'rm -f "$OUT" "$CL" "$CL0" "$ERR"' EXIT
redis-cli -h "$HOST" -p "$PORT" CLIENT LIST | tr -d '\r' >"$CL0"
# SIGINT: perf trace writes out what it holds; SIGTERM would cut the file.
timeout -s INT "$SECONDS_" perf trace -p "$PID" -e epoll_wait,epoll_pwait,read,write,writev \
    -o "$OUT" >/dev/null 2>"$ERR" || true
[ -s "$OUT" ] || { echo "perf trace wrote nothing:" >&2; cat "$ERR" >&2; exit 1; }
redis-cli -h "$HOST" -p "$PORT" CLIENT LIST | tr -d '\r' >"$CL"
awk -v after="$CL" -v before="$CL0" -v tid="$PID" '
function clients(file, line, n, i, kv, fd, cmd) {
    while ((getline line < file) > 0) {
        fd = ""; cmd = ""
        n = split(line, kv, " ")
        for (i = 1; i <= n; i++) {
            if (kv[i] ~ /^fd=/) fd = substr(kv[i], 4)
            if (kv[i] ~ /^cmd=/) cmd = substr(kv[i], 5)
        }
        if (fd != "" && cmd != "client|list") who[fd] = cmd # not the listing itself
    }
}
BEGIN { clients(after); clients(before) } # the list before wins
# The main thread of Redis only (its tid is the pid): not its I/O threads nor a
# persistence child forked meanwhile.
match($0, /^ *[0-9.]+ \( *[0-9.]+ ms\)/) && index($0, "/" tid " ") {
    t = $1 + 0
    if (first == "") first = t
    last = t
    d = $0; sub(/^[^(]*\( */, "", d); sub(/ ms\).*/, "", d)
    if (!match($0, /[a-z_0-9]+\(/)) next
    call = substr($0, RSTART, RLENGTH - 1)
    if (call ~ /^epoll_p?wait$/) { passes++; waited += d; next }
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
    fflush()
    for (k in calls) {
        split(k, p, " ")
        printf "%-7s %4s %-12s %7d %11.0f %9.1f\n", p[1], p[2], (p[2] in who ? who[p[2]] : "-"),
            calls[k], bytes[k] / calls[k], 1000 * ms[k] / calls[k] | "sort -k2n -k1"
    }
}' "$OUT"
