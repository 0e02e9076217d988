#!/usr/bin/env bash
# sort_kill9.sh SORTD SORT_GEN - exactly-once under kill -9.
#
# Generates N records (SORT_KILL_RECORDS, default 200000) in several files,
# runs sortd on them and kills it with SIGKILL at random moments
# (SORT_KILL_ROUNDS times, default 6), restarting it each time, then lets a
# last run finish. The landed files must hold every record exactly once
# (count, unique ids, id checksum), pass `lzop -t`, and the _CHECK totals
# must add up to N, their byte counts the file sizes. Small roll limits make files land all the time, so the
# kills hit landing, committing and checking.
set -euo pipefail
SORTD=$1
GEN=$2
. "$(dirname "$0")/sort_lib.sh"

N=${SORT_KILL_RECORDS:-200000}
ROUNDS=${SORT_KILL_ROUNDS:-6}
T=$(mktemp -d /tmp/sort-kill9.XXXXXX)
trap 'rm -rf "$T"' EXIT

"$GEN" --out "$T/in" --records "$N" --files 7 --ifaces 13 --span 21600 --late 5
cat >"$T/spec.json" <<JSON
{"name": "kill9", "business": "bk",
 "source": {"type": "file", "path": "$T/in", "exit_at_eof": true, "read_size": 65536},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s", "timezone": "+08:00"},
 "bucket": "hour",
 "split": {"if3": 3},
 "output": {"roll_size": 262144, "roll_age_ms": 300},
 "check": {"clock": "data", "grace_ms": 600000}}
JSON
export ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_BLOB_ROOT=file://$T/blob ORRERY_SORT_PACKS=8 ORRERY_SORT_MAX_OPEN_UNITS=24
export ORRERY_LOG_LEVEL=warn

for round in $(seq 1 "$ROUNDS"); do
    "$SORTD" run --stream "$T/spec.json" >"$T/out.$round" 2>"$T/err.$round" &
    pid=$!
    # 0.2 .. 1.4 s, then SIGKILL (if it already finished, that is fine too)
    sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.2 + (r % 120) / 100 }')"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    # (a kill before sortd created the blob root leaves no folder to search)
    landed=0
    [ -d "$T/blob" ] && landed=$(find "$T/blob" -name 'part-*.lzo' | wc -l)
    echo "round $round: killed; $landed files landed so far"
done

"$SORTD" run --stream "$T/spec.json" >"$T/out.final" 2>"$T/err.final" ||
    fail "final run failed: $(cat "$T/err.final")"
echo "final run: $(cat "$T/out.final")"
verify_landed "$T/blob" "$N"
# Files of killed runs were read back at each restart: their sizes too.
verify_check_bytes "$T/blob"
grep -q '"replay_dropped"' "$T/out.final" || fail "no summary from the final run"

# Replay from the start: every record is read again and recognised as landed.
"$SORTD" replay --stream "$T/spec.json" --from 0 >/dev/null || fail "replay failed"
"$SORTD" run --stream "$T/spec.json" >"$T/out.replay" 2>"$T/err.replay" ||
    fail "run after replay failed: $(cat "$T/err.replay")"
grep -q "\"records_in\":$N," "$T/out.replay" || fail "replay did not re-read: $(cat "$T/out.replay")"
grep -q "\"replay_dropped\":$N," "$T/out.replay" ||
    fail "replay landed duplicates: $(cat "$T/out.replay")"
verify_landed "$T/blob" "$N"
echo "PASS sort_kill9"
