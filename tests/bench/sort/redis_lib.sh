# redis_lib.sh - sourced by the sort benchmarks that read raw records from
# Redis (handoff.sh, stage_cpu.sh, redis.sh).
#
# pick_waiter XADD...: prints the first of these sort_xadd binaries that
# has --wait (an older build's answers "unknown option" with status 2), or
# fails saying so: an A/B run against a build older than --wait takes the
# waiter from the newer build.
pick_waiter() {
    local x rc
    for x in "$@"; do
        [ -x "$x" ] || continue
        rc=0
        "$x" --redis 127.0.0.1:1 --key none --wait none --seconds 0.01 >/dev/null 2>&1 || rc=$?
        [ "$rc" = 2 ] || { echo "$x"; return 0; }
    done
    echo "no sort_xadd with --wait among: $* (build sort_xadd from this tree)" >&2
    return 1
}

# raw_spec NAME KEY GROUP SOURCE_EXTRA SINKS [BATCH] [ROLL_AGE_MS]: the
# stream spec of these benchmarks, sort_gen's records read from stream KEY
# through GROUP (batch BATCH, default 5,000), hourly units rolled every
# ROLL_AGE_MS (default 1,000), fsync on. SOURCE_EXTRA and SINKS are JSON
# members with a leading comma (or empty): ', "commit": "position"',
# ', "sinks": {...}'. Needs ORRERY_REDIS.
raw_spec() {
    cat <<JSON
{"name": "$1", "business": "$1",
 "source": {"type": "redis", "address": "$ORRERY_REDIS", "key": "$2", "group": "$3",
            "consumer": "c1", "batch": ${6:-5000}, "block_ms": 50$4},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s"},
 "bucket": "hour",
 "output": {"roll_size": 268435456, "roll_age_ms": ${7:-1000}, "fsync": true},
 "check": {"clock": "data", "grace_ms": 0}$5}
JSON
}
