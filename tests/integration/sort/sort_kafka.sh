#!/usr/bin/env bash
# sort_kafka.sh SORTD SORT_GEN SORT_KAFKA_MOCK - the Kafka source against
# librdkafka's mock cluster (a real broker protocol on loopback): N records
# over 8 partitions, let into the topic in parts (the mock's hold file).
# Round r lets the r-th part in and starts sortd (which waits for more at
# the end of the topic); it is killed with SIGKILL once it has landed
# records past a random point of what is in the topic, while the rest is
# still held back (kill_mid_run checks it while the process is stopped),
# SORT_KAFKA_ROUNDS times; then every record is let in and a last run reads
# to the end.
# Offsets are committed for the group only after landing, so every record
# must land exactly once (count, unique ids, checksum, lzop -t, _CHECK
# totals); a run after that reads nothing new (resumed from the committed
# offsets); after `sortd replay --from 0` every record is read again and
# recognised from the landed file names.
set -euo pipefail
SORTD=$1
GEN=$2
MOCK=$3
. "$(dirname "$0")/sort_lib.sh"

N=${SORT_KAFKA_RECORDS:-100000}
ROUNDS=${SORT_KAFKA_ROUNDS:-4}
T=$(mktemp -d /tmp/sort-kafka.XXXXXX)
mpid=
cleanup() {
    touch "$T/stop"
    [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    [ -n "$mpid" ] && wait "$mpid" 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT

"$GEN" --out "$T/in" --records "$N" --files 3 --ifaces 7 --span 7200
# hold M: the mock lets the first M records into the topic.
hold() { echo "$1" >"$T/hold.tmp" && mv "$T/hold.tmp" "$T/hold"; }
hold 0
"$MOCK" --topic clicks --in "$T/in" --partitions 8 --stop-file "$T/stop" --seconds 300 \
    --hold-file "$T/hold" >"$T/mock.out" 2>"$T/mock.err" &
mpid=$!
mock_up() {
    alive "$mpid" || fail "mock cluster exited: $(cat "$T/mock.err")"
    grep -q '^bootstrap=' "$T/mock.out" 2>/dev/null
}
wait_until "the mock cluster to start" mock_up
BOOT=$(sed -n 's/^bootstrap=\([^ ]*\) .*/\1/p' "$T/mock.out")
[ -n "$BOOT" ] || fail "mock cluster did not start"

cat >"$T/spec.json" <<JSON
{"name": "kf", "business": "bkf",
 "source": {"type": "kafka", "brokers": "$BOOT", "topic": "clicks", "group": "sortd-it",
            "batch": 2000, "exit_at_eof": false},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s"},
 "bucket": "hour",
 "output": {"roll_size": 131072, "roll_age_ms": 300},
 "check": {"clock": "data", "grace_ms": 600000}}
JSON
export ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_BLOB_ROOT=file://$T/blob ORRERY_SORT_PACKS=8 ORRERY_SORT_MAX_OPEN_UNITS=12
export ORRERY_LOG_LEVEL=warn
# spec.json: the rounds (at the end of the topic the source waits for more);
# final.json: the same stream, ending at the end of the topic.
sed 's/"exit_at_eof": false/"exit_at_eof": true/' "$T/spec.json" >"$T/final.json"

for round in $(seq 1 "$ROUNDS"); do
    let_in=$((N * round / (ROUNDS + 1)))
    hold "$let_in"
    start=$(landed_records "$T/blob")
    past=$(pick_below "$start" "$let_in")
    "$SORTD" run --stream "$T/spec.json" >"$T/out.$round" 2>"$T/err.$round" &
    pid=$!
    kill_mid_run "$pid" "round $round" "$start" "$past" "$N" landed_records "$T/blob"
    pid=
    echo "round $round: killed with $KILLED_AT of $let_in records landed ($start before it)"
done
hold "$N"
produced() {
    alive "$mpid" || fail "mock cluster exited: $(cat "$T/mock.err")"
    grep -q '^produced=' "$T/mock.out"
}
wait_until "the mock to produce every record" produced
grep -q "^produced=$N\$" "$T/mock.out" || fail "mock cluster holds: $(cat "$T/mock.out")"
"$SORTD" run --stream "$T/final.json" >"$T/out.final" 2>"$T/err.final" ||
    fail "final run failed: $(cat "$T/err.final")"
echo "final run: $(cat "$T/out.final")"
verify_landed "$T/blob" "$N"

# Resumes from the committed offsets: nothing is read again.
"$SORTD" run --stream "$T/final.json" >"$T/out.again" 2>"$T/err.again" ||
    fail "run after the end failed: $(cat "$T/err.again")"
grep -q '"records_in":0,' "$T/out.again" || fail "re-read committed records: $(cat "$T/out.again")"

# Replay from offset 0: every record comes back and is dropped as landed.
"$SORTD" replay --stream "$T/final.json" --from 0 >/dev/null || fail "replay failed"
"$SORTD" run --stream "$T/final.json" >"$T/out.replay" 2>"$T/err.replay" ||
    fail "run after replay failed: $(cat "$T/err.replay")"
grep -q "\"records_in\":$N," "$T/out.replay" || fail "replay did not re-read: $(cat "$T/out.replay")"
grep -q "\"replay_dropped\":$N," "$T/out.replay" ||
    fail "replay landed duplicates: $(cat "$T/out.replay")"
verify_landed "$T/blob" "$N"
echo "PASS sort_kafka"
