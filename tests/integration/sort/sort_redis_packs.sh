#!/usr/bin/env bash
# sort_redis_packs.sh SORTD SORT_GEN SORT_XADD - the broker hand-off in packs
# against a real Redis (ORRERY_REDIS=host:port, from the test stack).
#
# A producer (sort_xadd --pack --spread) adds the first 70% of N records as
# Snappy packs per unit (records dealt by interface), whose offsets are
# sparse and interleave, plus one entry that is not a pack: the first 35%
# before run 1, the next 35% before run 2. sortd (source "packs": true)
# consumes them and each of these two runs is killed with SIGKILL once it
# has landed records past a random point of what was added, while the rest
# is held back (kill_mid_run checks it while the process is stopped); a
# restart gets its unacknowledged packs back from the pending list. Run 3
# lands the first 70% (the test waits for that), then the producer "crashes
# and replays": it sends again everything from 40% of N, in packs cut
# differently, which overlaps what has landed. Every record must land
# exactly once (count, unique ids, id checksum, `lzop -t`), the replayed
# records must be dropped by the write stage (replay_dropped > 0), the bad
# entry must be one `frame` reject, and once landed every entry must be
# acknowledged (nothing pending).
set -euo pipefail
SORTD=$1
GEN=$2
XADD=$3
. "$(dirname "$0")/sort_lib.sh"

need_redis

N=${SORT_PACKS_RECORDS:-60000}
FIRST=$((N * 7 / 10))
PART1=$((N * 35 / 100))
REPLAY_FROM=$((N * 4 / 10))
KEY="orr-it-sortpk-$$"
T=$(mktemp -d /tmp/sort-packs.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rcli DEL "$KEY" >/dev/null 2>&1 || true
    [ -n "${SORT_KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT

"$GEN" --out "$T/in" --records "$N" --files 3 --ifaces 11 --span 10800 >/dev/null
cat >"$T/spec.json" <<JSON
{"name": "pk", "business": "bp",
 "source": {"type": "redis", "address": "$ORRERY_REDIS", "key": "$KEY", "group": "g1",
            "consumer": "c1", "batch": 4, "block_ms": 100, "packs": true},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s"},
 "bucket": "hour",
 "split": {"if2": 3},
 "output": {"roll_size": 131072, "roll_age_ms": 200},
 "check": {"clock": "data", "grace_ms": 0}}
JSON
export ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_BLOB_ROOT=file://$T/blob ORRERY_SORT_PACKS=8 ORRERY_LOG_LEVEL=info

landed() { landed_records "$T/blob"; }
group() { rcli XINFO GROUPS "$KEY" | awk -v k="$1" 'prev == k { print; exit } { prev = $0 }'; }
started() { # started N: run N logged "stream started" (its handlers are in place)
    alive "$pid" || fail "sortd run $1 died: $(cat "$T/err.$1")"
    grep -q 'msg="stream started"' "$T/err.$1" 2>/dev/null
}
start() {
    "$SORTD" run --stream "$T/spec.json" >"$T/out.$1" 2>"$T/err.$1" &
    pid=$!
    wait_until "sortd run $1 to start" started "$1"
}

rcli XGROUP CREATE "$KEY" g1 0 MKSTREAM >/dev/null
"$XADD" --redis "$ORRERY_REDIS" --key "$KEY" --in "$T/in" --records "$PART1" \
    --pack 400 --spread 7 --seconds 60 >/dev/null
rcli XADD "$KEY" '*' r 'this entry is not a pack: a producer bug or a stray client' >/dev/null

for round in 1 2; do
    if [ "$round" = 2 ]; then
        "$XADD" --redis "$ORRERY_REDIS" --key "$KEY" --in "$T/in" --skip "$PART1" \
            --records $((FIRST - PART1)) --pack 400 --spread 7 --seconds 60 >/dev/null
        added=$FIRST
    else
        added=$PART1
    fi
    before=$(landed)
    start "$round"
    kill_mid_run "$pid" "run $round" "$before" "$(pick_below "$before" "$added")" "$N" landed
    pid=
    echo "kill $round: $KILLED_AT of $added records landed, $(group pending) entries pending"
done

start 3
originals_landed() { [ "$(landed)" -ge "$FIRST" ]; }
wait_until "run 3 to land the first $FIRST records" originals_landed
# The producer sends again from REPLAY_FROM (a parse stage resuming from its
# last committed source offset), packed differently, up to the end.
"$XADD" --redis "$ORRERY_REDIS" --key "$KEY" --in "$T/in" --skip "$REPLAY_FROM" \
    --pack 300 --spread 3 --seconds 60 >/dev/null
all_done() { [ "$(landed)" -ge "$N" ] && [ "$(group lag)" = 0 ] && [ "$(group pending)" = 0 ]; }
wait_until "every record to land and every entry to be acknowledged" all_done
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" = 0 ] || fail "sortd exited with $status after SIGTERM: $(cat "$T/err.3")"
echo "last run: $(cat "$T/out.3")"
verify_landed "$T/blob" "$N" nocheck
pending=$(group pending)
[ "$pending" = 0 ] || fail "$pending entries still pending after the last commit"
dropped=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["replay_dropped"])' "$T/out.3")
[ "$dropped" -gt 0 ] || fail "the producer's replay was not dropped by the write stage (replay_dropped=0)"
frames=$(grep -c 'reason=frame' "$T/state/pk.rejects" || true)
[ "$frames" -ge 1 ] || fail "the entry that is not a pack was not rejected as frame"
grep -q 'field=magic\|error=".*magic' "$T"/err.* || fail "the bad pack's log line does not name the field"
find "$T/blob" -name _CHECK | grep -q . || fail "no unit was reconciled"
echo "PASS sort_redis_packs (replay_dropped=$dropped, frame rejects=$frames)"
