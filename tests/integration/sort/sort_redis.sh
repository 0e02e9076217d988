#!/usr/bin/env bash
# sort_redis.sh SORTD - the Redis Streams source against a real Redis
# (ORRERY_REDIS=host:port, from the test stack): N key-value records are
# added to a stream, sortd consumes them through a consumer group, is killed
# with SIGKILL once mid-run and restarted (its unacknowledged entries come
# back from the pending list), and is stopped with SIGTERM once every record
# has landed. Every record must be landed exactly once, and the group's
# pending list must be empty (acknowledged after landing).
set -euo pipefail
SORTD=$1
. "$(dirname "$0")/sort_lib.sh"

need_redis

N=${SORT_REDIS_RECORDS:-30000}
KEY="orr-it-sort-$$"
T=$(mktemp -d /tmp/sort-redis.XXXXXX)
cleanup() {
    [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null || true
    rcli DEL "$KEY" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT

# XADD in RESP through redis-cli --pipe: record i = "id=i&if=ifK&t=EPOCH"
awk -v n="$N" -v key="$KEY" 'BEGIN {
    for (i = 0; i < n; i++) {
        rec = sprintf("id=%d&if=if%d&t=%d", i, i % 5, 1714557600 + int(i * 7200 / n))
        printf "*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n$1\r\nr\r\n$%d\r\n%s\r\n",
               length(key), key, length(rec), rec
    }
}' | rcli --pipe >/dev/null
[ "$(rcli XLEN "$KEY")" = "$N" ] || fail "could not add $N entries to $KEY"

cat >"$T/spec.json" <<JSON
{"name": "rs", "business": "br",
 "source": {"type": "redis", "address": "$ORRERY_REDIS", "key": "$KEY", "group": "g1",
            "consumer": "c1", "batch": 500, "block_ms": 100},
 "format": {"type": "kv"},
 "interface": {"field": "if"},
 "time": {"field": "t", "format": "epoch_s"},
 "bucket": "hour",
 "output": {"roll_size": 65536, "roll_age_ms": 200},
 "check": {"clock": "data", "grace_ms": 0}}
JSON
export ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_BLOB_ROOT=file://$T/blob ORRERY_SORT_PACKS=8 ORRERY_LOG_LEVEL=warn

landed() {
    find "$T/blob" -name 'part-*.lzo' 2>/dev/null | sed 's/.*-n\([0-9]*\)\.lzo$/\1/' |
        awk '{ s += $1 } END { print s + 0 }'
}

"$SORTD" run --stream "$T/spec.json" >"$T/out.1" 2>"$T/err.1" &
pid=$!
sleep 0.5
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
echo "killed after $(landed) records landed"

ORRERY_LOG_LEVEL=info "$SORTD" run --stream "$T/spec.json" >"$T/out.2" 2>"$T/err.2" &
pid=$!
# Stop it only once it runs (its signal handlers are in place by then; the
# "stream started" line needs log level info): a
# sanitizer build starts slowly, and the first run may have landed it all.
for _ in $(seq 1 300); do
    grep -q 'msg="stream started"' "$T/err.2" 2>/dev/null && break
    sleep 0.1
done
# One record two hours on: the data clock closes the earlier buckets even
# when the first run landed and acknowledged everything before the kill.
rcli XADD "$KEY" '*' r "id=$N&if=if0&t=$((1714557600 + 3 * 3600))" >/dev/null
for _ in $(seq 1 300); do
    [ "$(landed)" -ge "$((N + 1))" ] && break
    sleep 0.2
done
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" = 0 ] || fail "sortd exited with $status after SIGTERM: $(cat "$T/err.2")"
echo "second run: $(cat "$T/out.2")"
verify_landed "$T/blob" "$((N + 1))" nocheck
pending=$(rcli XPENDING "$KEY" g1 | head -1)
[ "$pending" = "0" ] || fail "$pending entries still pending after the last commit"
find "$T/blob" -name _CHECK | grep -q . || fail "no unit was reconciled"
echo "PASS sort_redis"
