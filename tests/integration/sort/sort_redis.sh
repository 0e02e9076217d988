#!/usr/bin/env bash
# sort_redis.sh SORTD - the Redis Streams source against a real Redis
# (ORRERY_REDIS=host:port, from the test stack): the first half of N
# key-value records is added to a stream, sortd consumes them through a
# consumer group and is killed with SIGKILL once it has landed records past
# a random point of that half, while the second half is still held back
# (kill_mid_run checks it while the process is stopped). A second run
# (whose unacknowledged entries come back from the pending list) gets the
# second half while it runs and is stopped with SIGTERM once every record
# has landed. Every record must be landed exactly once, and the group's
# pending list must be empty (acknowledged after landing).
# SORT_REDIS_COMMIT=position runs the same with spec.source.commit
# "position": the first run is killed once the group's last-delivered id
# (which its commits move) is past a random point of the first half, the
# second must read exactly the entries after it, and at the end that id
# must be the stream's last entry, with nothing pending.
set -euo pipefail
SORTD=$1
. "$(dirname "$0")/sort_lib.sh"

need_redis

N=${SORT_REDIS_RECORDS:-30000}
COMMIT=${SORT_REDIS_COMMIT:-ack}
KEY="orr-it-sort-$$"
T=$(mktemp -d /tmp/sort-redis.XXXXXX)
cleanup() {
    [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rcli DEL "$KEY" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT

# xadd FROM TO: records FROM..TO-1, "id=i&if=ifK&t=EPOCH", in RESP through
# redis-cli --pipe.
xadd() {
    awk -v from="$1" -v to="$2" -v n="$N" -v key="$KEY" 'BEGIN {
        for (i = from; i < to; i++) {
            rec = sprintf("id=%d&if=if%d&t=%d", i, i % 5, 1714557600 + int(i * 7200 / n))
            printf "*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n$1\r\nr\r\n$%d\r\n%s\r\n",
                   length(key), key, length(rec), rec
        }
    }' | rcli --pipe >/dev/null
}
HALF=$((N / 2))
xadd 0 "$HALF"
[ "$(rcli XLEN "$KEY")" = "$HALF" ] || fail "could not add $HALF entries to $KEY"

cat >"$T/spec.json" <<JSON
{"name": "rs", "business": "br",
 "source": {"type": "redis", "address": "$ORRERY_REDIS", "key": "$KEY", "group": "g1",
            "consumer": "c1", "batch": 500, "block_ms": 100, "commit": "$COMMIT"},
 "format": {"type": "kv"},
 "interface": {"field": "if"},
 "time": {"field": "t", "format": "epoch_s"},
 "bucket": "hour",
 "output": {"roll_size": 65536, "roll_age_ms": 200},
 "check": {"clock": "data", "grace_ms": 0}}
JSON
export ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_BLOB_ROOT=file://$T/blob ORRERY_SORT_PACKS=8 ORRERY_LOG_LEVEL=warn

landed() { landed_records "$T/blob"; }
started() { grep -q 'msg="stream started"' "$T/err.2" 2>/dev/null; }
all_landed() { [ "$(landed)" -ge "$((N + 1))" ]; }

group_last() { rcli XINFO GROUPS "$KEY" | awk '$0 == "last-delivered-id" { getline; print; exit }'; }
# committed: the entries up to the group's position (commit "position").
committed() {
    local at
    at=$(group_last)
    if [ -z "$at" ] || [ "$at" = 0-0 ]; then
        echo 0
    else
        # (a position before the first entry counts none: grep -c then fails)
        rcli --raw XRANGE "$KEY" - "$at" | grep -cE '^[0-9]+-[0-9]+$' || true
    fi
}
"$SORTD" run --stream "$T/spec.json" >"$T/out.1" 2>"$T/err.1" &
pid=$!
if [ "$COMMIT" = position ]; then
    # Killed once its position is past a random point of the first half:
    # the second run must read exactly what lies after it.
    kill_mid_run "$pid" "first run" 0 "$(pick_below 0 "$HALF")" "$N" committed
    echo "first run killed with $KILLED_AT entries committed (position $(group_last))"
else
    kill_mid_run "$pid" "first run" 0 "$(pick_below 0 "$HALF")" "$N" landed
    echo "first run killed with $KILLED_AT of $HALF records landed, $(rcli XPENDING "$KEY" g1 | head -1) entries pending"
fi
pid=

ORRERY_LOG_LEVEL=info "$SORTD" run --stream "$T/spec.json" >"$T/out.2" 2>"$T/err.2" &
pid=$!
# The second half arrives while it runs; stop it only once it runs (its
# signal handlers are in place by then; the "stream started" line needs log
# level info).
wait_until "the second run to start" started
xadd "$HALF" "$N"
# One record two hours on: the data clock closes the earlier buckets.
rcli XADD "$KEY" '*' r "id=$N&if=if0&t=$((1714557600 + 3 * 3600))" >/dev/null
wait_until "all $((N + 1)) records to land" all_landed
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" = 0 ] || fail "sortd exited with $status after SIGTERM: $(cat "$T/err.2")"
echo "second run: $(cat "$T/out.2")"
verify_landed "$T/blob" "$((N + 1))" nocheck
pending=$(rcli XPENDING "$KEY" g1 | head -1)
[ "$pending" = "0" ] || fail "$pending entries still pending after the last commit"
if [ "$COMMIT" = position ]; then
    read_in=$(sed -n 's/.*"records_in":\([0-9]*\).*/\1/p' "$T/out.2")
    [ "$read_in" = "$((N + 1 - KILLED_AT))" ] ||
        fail "the second run read $read_in records, not the $((N + 1 - KILLED_AT)) after the group's position"
    stream_last=$(rcli XINFO STREAM "$KEY" | awk '$0 == "last-generated-id" { getline; print; exit }')
    [ "$(group_last)" = "$stream_last" ] ||
        fail "the group's position $(group_last) is not the last entry $stream_last"
fi
find "$T/blob" -name _CHECK | grep -q . || fail "no unit was reconciled"
echo "PASS sort_redis (commit $COMMIT)"
