#!/usr/bin/env bash
# sort_catchup.sh SORTD - files of a stage that catches up fill for
# output.catchup_age_ms instead of rolling every roll_age_ms, against a real
# Redis (ORRERY_REDIS=host:port, from the test stack).
#
# The backlog is made by construction, never by timing: N records (a
# multiple of the read size) of U units in one hour are in the stream before
# sortd starts, so every read comes back full (the source is behind) until
# the one after the last record, which comes back empty. roll_age_ms is 100
# and catchup_age_ms an hour, nothing else can roll a file (roll_size,
# max_open and the data clock are out of reach), so:
#
#   1. one process: exactly U files land (one per unit), once it has caught
#      up; then U more records (one per unit) arrive while it is caught up
#      and must land by roll_age_ms (a second file per unit), not wait for
#      catchup_age_ms;
#   2. two stages: a parse stage turns a second backlog into many small
#      packs (pack_size 4096) on the hand-off stream and is stopped; only
#      then the write stage starts, so its reads of packs come back full:
#      again exactly U files land, and the stream ends empty;
#   3. two stages at once, the hand-off bounded by max_bytes (1 MiB) and
#      a backlog whose packs take several MiB, all in one hour, with
#      roll_age_ms an hour too: the parse stage must wait for room, and
#      only the write stage's rolls "for room" (landing its open files when
#      the producer waits, rolls_room) can give it room. The parse stage
#      handing off the whole backlog is the proof; without those rolls it
#      would wait for the hour. Case 2 must make no such roll;
#   4. the same with small packs over 2,000 units, where much of the
#      stream's memory is Redis's cost per entry, not the packs' bytes.
# Every record lands exactly once (count, unique ids, checksum, lzop -t).
set -euo pipefail
SORTD=$1
. "$(dirname "$0")/sort_lib.sh"

need_redis

U=6
READ=100
N=$((READ * 400)) # a multiple of the read size: the read after the last is empty
KEY="orr-it-cu-$$"
RAW="orr-it-cu-raw-$$"
HK="orr-it-cu-ho-$$"
T=$(mktemp -d /tmp/sort-catchup.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rcli DEL "$KEY" "$RAW" "$HK.0" "$RAW-3" "$HK-3.0" "$RAW-4" "$HK-4.0" >/dev/null 2>&1 || true
    [ -n "${SORT_KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT

# xadd KEY FROM TO: records FROM..TO-1 "id=i&if=if(i%U)&t=..." (one hour).
xadd() {
    awk -v key="$1" -v from="$2" -v to="$3" -v u="$U" 'BEGIN {
        for (i = from; i < to; i++) {
            rec = sprintf("id=%d&if=if%d&t=%d", i, i % u, 1714557600 + i % 3000)
            printf "*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n$1\r\nr\r\n$%d\r\n%s\r\n",
                   length(key), key, length(rec), rec
        }
    }' | rcli --pipe >/dev/null
}
spec() { # spec NAME KEY [SINKS]
    cat <<JSON
{"name": "$1", "business": "bc",
 "source": {"type": "redis", "address": "$ORRERY_REDIS", "key": "$2", "group": "g1",
            "consumer": "c1", "batch": $READ, "block_ms": 100},
 "format": {"type": "kv"},
 "interface": {"field": "if"},
 "time": {"field": "t", "format": "epoch_s"},
 "bucket": "hour",
 "output": {"roll_size": 67108864, "roll_age_ms": 100, "catchup_age_ms": 3600000},
 "check": {"clock": "data", "grace_ms": 0}${3:-}}
JSON
}
export ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_PACKS=8 ORRERY_LOG_LEVEL=warn ORRERY_SORT_REDIS=$ORRERY_REDIS

files_in() { find "$1" -name 'part-*.lzo' 2>/dev/null | wc -l; }
landed_ge() { [ "$(landed_records "$1")" -ge "$2" ]; }
stop_term() { # stop_term PID WHAT
    local st=0
    kill -TERM "$1"
    wait "$1" || st=$?
    [ "$st" = 0 ] || fail "$2 exited $st after SIGTERM"
}

# --- refusal -----------------------------------------------------------------
spec bad "$KEY" | sed 's/"catchup_age_ms": 3600000/"catchup_age_ms": 50/' >"$T/bad.json"
if "$SORTD" check-spec "$T/bad.json" >"$T/bad.out" 2>&1; then fail "catchup_age_ms 50 accepted"; fi
grep -q 'catchup_age_ms' "$T/bad.out" || fail "refusal does not name catchup_age_ms: $(cat "$T/bad.out")"
spec bad "$KEY" | sed 's/"roll_age_ms": 100/"roll_age_ms": 7200000/' >"$T/bad2.json"
if "$SORTD" check-spec "$T/bad2.json" >"$T/bad2.out" 2>&1; then
    fail "catchup_age_ms below roll_age_ms accepted"
fi
grep -q 'catchup_age_ms' "$T/bad2.out" || fail "refusal does not name catchup_age_ms: $(cat "$T/bad2.out")"

# --- 1. one process ------------------------------------------------------------
xadd "$KEY" 0 "$N"
[ "$(rcli XLEN "$KEY")" = "$N" ] || fail "could not add $N entries to $KEY"
spec one "$KEY" >"$T/one.json"
ORRERY_SORT_BLOB_ROOT=file://$T/blob1 "$SORTD" run --stream "$T/one.json" >"$T/one.out" 2>"$T/one.err" &
pid=$!
pids+=("$pid")
wait_until "the backlog of $N records to land" landed_ge "$T/blob1" "$N"
f1=$(files_in "$T/blob1")
[ "$f1" = "$U" ] || fail "a backlog of $N records over $U units landed in $f1 files, expected $U (one per unit)"
# Caught up now: one record per unit must land by roll_age_ms.
xadd "$KEY" "$N" $((N + U))
wait_until "$U records sent while caught up to land" landed_ge "$T/blob1" $((N + U))
f2=$(files_in "$T/blob1")
[ "$f2" = $((2 * U)) ] || fail "caught up: $f2 files in all, expected $((2 * U))"
stop_term "$pid" "sortd (one process)"
verify_landed "$T/blob1" $((N + U)) nocheck
echo "one process: backlog of $N records in $f1 files; then $U live records in $((f2 - f1)) more"

# --- 2. two stages ---------------------------------------------------------------
xadd "$RAW" 0 "$N"
spec two "$RAW" ", \"sinks\": {\"files\": false, \"handoff\": {\"key\": \"$HK\", \"streams\": 1,
           \"max_packs\": 100000, \"pack_size\": 4096, \"flush_ms\": 50}}" >"$T/two.json"
ginfo() { # ginfo KEY GROUP FIELD
    rcli XINFO GROUPS "$1" 2>/dev/null |
        awk -v g="$2" -v k="$3" '$0 == "name" { getline; cur = $0 } cur == g && prev == k { print; exit } { prev = $0 }'
}
parsed() { [ "$(ginfo "$RAW" g1 lag)" = 0 ] && [ "$(ginfo "$RAW" g1 pending)" = 0 ]; }
ORRERY_SORT_BLOB_ROOT=file://$T/blob2 "$SORTD" run --stream "$T/two.json" >"$T/p.out" 2>"$T/p.err" &
pid=$!
pids+=("$pid")
wait_until "the parse stage to hand off and acknowledge all $N records" parsed
stop_term "$pid" "the parse stage"
packs=$(rcli XLEN "$HK.0")
[ "$packs" -gt $((2 * 64)) ] || fail "only $packs packs on the hand-off stream: the write stage's reads would not come back full"
ORRERY_SORT_BLOB_ROOT=file://$T/blob2 "$SORTD" run --stream "$T/two.json" --handoff-stream 0 \
    >"$T/w.out" 2>"$T/w.err" &
pid=$!
pids+=("$pid")
wait_until "the $packs packs to land" landed_ge "$T/blob2" "$N"
hk_empty() { [ "$(rcli XLEN "$HK.0")" = 0 ]; }
wait_until "the hand-off stream to empty (landed packs deleted)" hk_empty
stop_term "$pid" "the write stage"
f3=$(files_in "$T/blob2")
[ "$f3" = "$U" ] || fail "a backlog of $packs packs over $U units landed in $f3 files, expected $U"
room2=$(grep -o '"rolls_room": *[0-9]*' "$T/w.out" | grep -o '[0-9]*$')
[ "$room2" = 0 ] || fail "the write stage rolled ${room2:-?} files for room with no producer waiting"
verify_landed "$T/blob2" "$N" nocheck
echo "two stages: $packs packs of a backlog landed in $f3 files"

# --- 3 and 4. two stages at once, bounded by max_bytes ---------------------------
# bounded CASE N UNITS PAD: N records of UNITS units in one hour, each with
# PAD 8-hex-digit groups of padding that does not compress, through a 1 MiB
# hand-off with hour-long ages: only rolls for room can let the parse stage
# hand everything off.
bounded() {
    local c=$1 n=$2 units=$3 pad=$4 raw="$RAW-$1" hk="$HK-$1"
    awk -v key="$raw" -v n="$n" -v u="$units" -v np="$pad" 'BEGIN {
        srand(7)
        for (i = 0; i < n; i++) {
            p = ""
            for (k = 0; k < np; k++) p = p sprintf("%08x", int(rand() * 4294967296))
            rec = sprintf("id=%d&if=if%d&t=%d&p=%s", i, i % u, 1714557600 + i % 3000, p)
            printf "*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n$1\r\nr\r\n$%d\r\n%s\r\n",
                   length(key), key, length(rec), rec
        }
    }' | rcli --pipe >/dev/null
    [ "$(rcli XLEN "$raw")" = "$n" ] || fail "could not add $n entries to $raw"
    spec "b$c" "$raw" ", \"sinks\": {\"files\": false, \"handoff\": {\"key\": \"$hk\", \"streams\": 1,
               \"max_bytes\": 1048576, \"pack_size\": 16384, \"flush_ms\": 50}}" |
        sed 's/"roll_age_ms": 100/"roll_age_ms": 3600000/' >"$T/b$c.json"
    grep -q '"roll_age_ms": 3600000' "$T/b$c.json" || fail "b$c.json not made"
    ORRERY_SORT_BLOB_ROOT=file://$T/blob$c "$SORTD" run --stream "$T/b$c.json" >"$T/p$c.out" 2>"$T/p$c.err" &
    local pp=$!
    pids+=("$pp")
    ORRERY_SORT_BLOB_ROOT=file://$T/blob$c "$SORTD" run --stream "$T/b$c.json" --handoff-stream 0 \
        >"$T/w$c.out" 2>"$T/w$c.err" &
    local ww=$!
    pids+=("$ww")
    parsed_all() { [ "$(ginfo "$raw" g1 lag)" = 0 ] && [ "$(ginfo "$raw" g1 pending)" = 0 ]; }
    wait_until "case $c: the parse stage to hand off all $n records through a 1 MiB hand-off" parsed_all
    stop_term "$pp" "the parse stage ($c)"
    stop_term "$ww" "the write stage ($c)"
    local waits room hbytes
    waits=$(grep -o '"handoff_waits": *[0-9]*' "$T/p$c.out" | grep -o '[0-9]*$')
    room=$(grep -o '"rolls_room": *[0-9]*' "$T/w$c.out" | grep -o '[0-9]*$')
    hbytes=$(grep -o '"handoff_bytes": *[0-9]*' "$T/p$c.out" | grep -o '[0-9]*$')
    [ "${waits:-0}" -gt 0 ] || fail "case $c: the parse stage never waited for room (handoff_waits ${waits:-?})"
    [ "${room:-0}" -gt 0 ] || fail "case $c: the write stage made no rolls for room (rolls_room ${room:-?})"
    [ "$(rcli XLEN "$hk.0")" = 0 ] || fail "case $c: packs left on the hand-off stream after the write stage stopped"
    verify_landed "$T/blob$c" "$n" nocheck
    rcli DEL "$raw" "$hk.0" >/dev/null
    echo "case $c: $hbytes bytes of packs through 1 MiB; the parse stage waited $waits times, $room rolls for room"
}
# 3: ~130-byte records in few units: ~4 MB of packs of ~13 KB
bounded 3 40000 "$U" 12
# 4: short records in 2,000 units: ~700-byte packs, where Redis's cost per
# entry is as large as their bytes, and a room roll lands 2,000 files
bounded 4 100000 2000 0
echo "PASS sort_catchup"
