#!/usr/bin/env bash
# sort_kill9.sh SORTD SORT_GEN - exactly-once under kill -9.
#
# Generates N records (SORT_KILL_RECORDS, default 200000) in ROUNDS + 1
# files and kills sortd with SIGKILL mid-run SORT_KILL_ROUNDS times (default
# 6), restarting it each time, then lets a last run finish. The input comes
# in parts: round r puts file r into the source folder (the source tails it
# and never ends), and each kill lands once that run has landed records of
# its own, past a random point of what it was fed, while the later files
# are still held back (kill_mid_run checks this while the process is
# stopped). The last run gets the last file and
# ends at the end of the input. The landed files must hold every record
# exactly once (count, unique ids, id checksum), pass `lzop -t`, and the
# _CHECK totals must add up to N, their byte counts the file sizes. Small
# roll limits make files land all the time, so the kills hit landing,
# committing and checking.
set -euo pipefail
SORTD=$1
GEN=$2
. "$(dirname "$0")/sort_lib.sh"

N=${SORT_KILL_RECORDS:-200000}
ROUNDS=${SORT_KILL_ROUNDS:-6}
T=$(mktemp -d /tmp/sort-kill9.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT

"$GEN" --out "$T/stage" --records "$N" --files $((ROUNDS + 1)) --ifaces 13 --span 21600 --late 5
mkdir "$T/in"
# spec.json: the rounds (the source waits for more); final.json: the last
# run, the same stream ending at the end of its input.
cat >"$T/spec.json" <<JSON
{"name": "kill9", "business": "bk",
 "source": {"type": "file", "path": "$T/in", "exit_at_eof": false, "read_size": 65536},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s", "timezone": "+08:00"},
 "bucket": "hour",
 "split": {"if3": 3},
 "output": {"roll_size": 262144, "roll_age_ms": 300},
 "check": {"clock": "data", "grace_ms": 600000}}
JSON
sed 's/"exit_at_eof": false/"exit_at_eof": true/' "$T/spec.json" >"$T/final.json"
export ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_BLOB_ROOT=file://$T/blob ORRERY_SORT_PACKS=8 ORRERY_SORT_MAX_OPEN_UNITS=24
export ORRERY_LOG_LEVEL=warn

parts=("$T"/stage/part-*.log)
[ "${#parts[@]}" = $((ROUNDS + 1)) ] || fail "sort_gen made ${#parts[@]} files, expected $((ROUNDS + 1))"
fed=0
for round in $(seq 1 "$ROUNDS"); do
    feed "${parts[$((round - 1))]}" "$T/in"
    fed=$((fed + $(wc -l <"${parts[$((round - 1))]}")))
    start=$(landed_records "$T/blob")
    past=$(pick_below "$start" "$fed") # kill once the run has landed past this
    "$SORTD" run --stream "$T/spec.json" >"$T/out.$round" 2>"$T/err.$round" &
    pid=$!
    kill_mid_run "$pid" "round $round" "$start" "$past" "$N" landed_records "$T/blob"
    pid=
    echo "round $round: killed with $KILLED_AT of $fed fed records landed ($start before it)"
done

feed "${parts[$ROUNDS]}" "$T/in"
"$SORTD" run --stream "$T/final.json" >"$T/out.final" 2>"$T/err.final" ||
    fail "final run failed: $(cat "$T/err.final")"
echo "final run: $(cat "$T/out.final")"
verify_landed "$T/blob" "$N"
# Files of killed runs were read back at each restart: their sizes too.
verify_check_bytes "$T/blob"
grep -q '"replay_dropped"' "$T/out.final" || fail "no summary from the final run"

# Replay from the start: every record is read again and recognised as landed.
"$SORTD" replay --stream "$T/final.json" --from 0 >/dev/null || fail "replay failed"
"$SORTD" run --stream "$T/final.json" >"$T/out.replay" 2>"$T/err.replay" ||
    fail "run after replay failed: $(cat "$T/err.replay")"
grep -q "\"records_in\":$N," "$T/out.replay" || fail "replay did not re-read: $(cat "$T/out.replay")"
grep -q "\"replay_dropped\":$N," "$T/out.replay" ||
    fail "replay landed duplicates: $(cat "$T/out.replay")"
verify_landed "$T/blob" "$N"
echo "PASS sort_kill9"
