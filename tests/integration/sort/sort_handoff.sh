#!/usr/bin/env bash
# sort_handoff.sh SORTD SORT_GEN SORT_XADD - the two-stage pipeline across
# processes against a real Redis (ORRERY_REDIS=host:port, from the test
# stack):
#
#   raw records (Redis stream A) -> sortd (parse stage, partition 0) \
#   raw records (Redis stream B) -> sortd (parse stage, partition 1) -+->
#       packs on "<key>.0", "<key>.1" -> sortd --handoff-stream 0 | 1
#
# Half the records go to each raw stream, so every unit gets records from
# both parse stages with unrelated offsets (their own partitions keep them
# apart). A write stage is paused (SIGSTOP) first: the parse stage must stop
# adding once its stream holds max_packs, or with SORT_HANDOFF_BOUND=bytes
# max_bytes of Redis's memory (flow control) - so it sends
# nothing to the other stream either, which its write stage drains while
# raw records wait unread - and go on when it resumes; stopped with SIGTERM
# then, it counts its waits for room in its summary. Then, round by
# round, a slice of the records still held back is added to both raw
# streams and one of the four processes, picked at random, is killed with
# SIGKILL once it has made progress of its own in that round (raw entries
# read by a parse stage, packs read by a write stage) while the last slice
# is still held back (kill_mid_run checks it while the process is
# stopped), and restarted.
# The two parse stages send their packs in different codecs (LZ4 and
# Snappy), so each write stage reads both from one stream.
# At the end every record must have landed exactly once (count, unique ids,
# id checksum, `lzop -t`), nothing may be pending on any stream, each
# stream must be empty (landed packs are deleted), and every _CHECK must
# list exactly the files of its folder with their sum (one owner per unit).
# A spec with a hand-off and files on, and a bad --handoff-stream, are
# refused naming the field.
set -euo pipefail
SORTD=$1
GEN=$2
XADD=$3
. "$(dirname "$0")/sort_lib.sh"

need_redis

ROUNDS=${SORT_HANDOFF_ROUNDS:-6}
BOUND=${SORT_HANDOFF_BOUND:-packs}
case $BOUND in
packs) MAXP=20 MAXB=$((1 << 40)) N=${SORT_HANDOFF_RECORDS:-60000} ;;
# the smallest max_bytes, ~150 packs: a write stage's share of the records
# sent first must take well over it (60,000 records took ~1 MB)
bytes) MAXP=100000 MAXB=$((1 << 20)) N=${SORT_HANDOFF_RECORDS:-200000} ;;
*) fail "SORT_HANDOFF_BOUND must be packs or bytes" ;;
esac
HALF=$((N / 2))
FIRST=$((HALF * 6 / 10)) # of each half, sent before the stages start; the
# rest comes in ROUNDS + 1 slices, the last one after the last kill
RAW="orr-it-ho-raw-$$"
RAW2="orr-it-ho-raw2-$$"
HK="orr-it-ho-$$"
T=$(mktemp -d /tmp/sort-handoff.XXXXXX)
declare -A pid=()
cleanup() {
    for k in "${!pid[@]}"; do
        kill -CONT "${pid[$k]}" 2>/dev/null || true
        kill -9 "${pid[$k]}" 2>/dev/null || true
        wait "${pid[$k]}" 2>/dev/null || true
    done
    rcli DEL "$RAW" "$RAW2" "$HK.0" "$HK.1" "$HK.0.lz4" "$HK.1.lz4" >/dev/null 2>&1 || true
    [ -n "${SORT_KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT

# Two halves over the same three hours (so every unit gets records of both):
# ids 0..HALF-1 for stream A, HALF..N-1 for stream B.
"$GEN" --out "$T/in" --records "$HALF" --files 3 --ifaces 11 --span 10800 >/dev/null
mkdir "$T/in2"
for f in "$T"/in/*; do
    awk -F'|' -v OFS='|' -v h="$HALF" '{ $1 += h; print }' "$f" >"$T/in2/${f##*/}"
done
cat >"$T/spec.json" <<JSON
{"name": "ho", "business": "bh",
 "source": {"type": "redis", "address": "$ORRERY_REDIS", "key": "$RAW", "group": "parse",
            "consumer": "p1", "batch": 500, "block_ms": 100},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s"},
 "bucket": "hour",
 "split": {"if2": 3},
 "output": {"roll_size": 131072, "roll_age_ms": 300},
 "check": {"clock": "data", "grace_ms": 0},
 "sinks": {"files": false,
           "handoff": {"key": "$HK", "streams": 2, "max_packs": $MAXP, "max_bytes": $MAXB,
                       "flush_ms": 50,
                       "pack_size": 16384}}}
JSON
# The second parse stage sends Snappy packs, the first LZ4 (the default):
# each write stage reads both codecs from one stream, as while parse stages
# are upgraded one by one.
sed -e "s/\"key\": \"$RAW\"/\"key\": \"$RAW2\"/" \
    -e 's/"streams": 2,/"streams": 2, "partition": 1, "pack_codec": "snappy",/' \
    "$T/spec.json" >"$T/spec2.json"
grep -q "$RAW2" "$T/spec2.json" && grep -q '"partition": 1, "pack_codec": "snappy"' "$T/spec2.json" ||
    fail "spec2 not made"
export ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_BLOB_ROOT=file://$T/blob ORRERY_SORT_PACKS=8 ORRERY_LOG_LEVEL=info
export ORRERY_SORT_REDIS=$ORRERY_REDIS # the hand-off streams (the spec names no address)

# --- refusals --------------------------------------------------------------
sed 's/"files": false/"files": true/' "$T/spec.json" >"$T/bad.json"
if "$SORTD" check-spec "$T/bad.json" >"$T/bad.out" 2>&1; then fail "files + handoff accepted"; fi
grep -q 'sinks.handoff' "$T/bad.out" || fail "files + handoff refusal does not name the field: $(cat "$T/bad.out")"
st=0
"$SORTD" run --stream "$T/spec.json" --handoff-stream 2 >/dev/null 2>"$T/bad.err" || st=$?
[ "$st" = 2 ] || fail "--handoff-stream 2 of 2 streams: exit $st, expected 2"
grep -q -- '--handoff-stream' "$T/bad.err" || fail "bad stream index not named: $(cat "$T/bad.err")"

# --- the run ---------------------------------------------------------------
landed() { landed_records "$T/blob"; }
ginfo() { # ginfo KEY GROUP FIELD
    rcli XINFO GROUPS "$1" 2>/dev/null |
        awk -v g="$2" -v k="$3" '$0 == "name" { getline; cur = $0 } cur == g && prev == k { print; exit } { prev = $0 }'
}
declare -A runs=()
start() { # start p|p2|w0|w1
    local who=$1 args=() spec=$T/spec.json
    runs[$who]=$((${runs[$who]:-0} + 1))
    case $who in
    p) ;;
    p2) spec=$T/spec2.json ;;
    *) args=(--handoff-stream "${who#w}") ;;
    esac
    local log="$T/err.$who.${runs[$who]}"
    "$SORTD" run --stream "$spec" "${args[@]}" >"$T/out.$who.${runs[$who]}" 2>"$log" &
    pid[$who]=$!
    wait_until "sortd $who to start" started "$who" "$log"
}
started() { # started WHO LOG: it logged "stream started" (its handlers are in place)
    alive "${pid[$1]}" || fail "sortd $1 died: $(cat "$2")"
    grep -q 'msg="stream started"' "$2" 2>/dev/null
}
stop_term() { # stop_term WHO: SIGTERM, must exit 0
    local who=$1 st=0
    kill -TERM "${pid[$who]}"
    wait "${pid[$who]}" || st=$?
    unset "pid[$who]"
    [ "$st" = 0 ] || fail "sortd $who exited $st after SIGTERM: $(cat "$T/err.$who.${runs[$who]}")"
}

# B's records get the lower entry ids, and its parse stage starts last: the
# write stages see A's records of a unit first. Only the partitions keep B's
# from looking like replays of A's (with one shared partition they would be
# dropped).
"$XADD" --redis "$ORRERY_REDIS" --key "$RAW2" --in "$T/in2" --records "$FIRST" \
    --seconds 60 >/dev/null
"$XADD" --redis "$ORRERY_REDIS" --key "$RAW" --in "$T/in" --records "$FIRST" --seconds 60 >/dev/null
# slice J (1 .. ROUNDS + 1): the J-th part of what each half holds after FIRST.
slice_start() { echo $((FIRST + (HALF - FIRST) * ($1 - 1) / (ROUNDS + 1))); }
add_slice() {
    local from to
    from=$(slice_start "$1")
    to=$(slice_start $(($1 + 1)))
    "$XADD" --redis "$ORRERY_REDIS" --key "$RAW" --in "$T/in" --skip "$from" \
        --records $((to - from)) --seconds 60 >/dev/null
    "$XADD" --redis "$ORRERY_REDIS" --key "$RAW2" --in "$T/in2" --skip "$from" \
        --records $((to - from)) --seconds 60 >/dev/null
    ADDED=$to # records of each half in its raw stream
}
# The write stages first: each says it reads LZ4 packs (its stream's
# "<key>.lz4") as it opens, so parse stage p ("pack_codec": "auto") sends
# both streams LZ4 from its start; p2 sends Snappy.
start w0
start w1
for k in "$HK.0" "$HK.1"; do
    [ "$(rcli EXISTS "$k.lz4")" = 1 ] || fail "the write stage of $k does not say it reads LZ4"
done

# Flow control: with write stage 1 paused, stream 1 fills up to about
# max_packs (one flush may add a pack per unit it holds: 2 hours x 11
# interfaces at most), or to max_bytes of Redis's memory (each pack is
# checked: at most one pack over), and the parse stage waits for room. While it waits it
# sends nothing, so write stage 0 drains stream 0 although the raw stream
# still holds records the parse stage has not read; stream 1 stays put.
kill -STOP "${pid[w1]}"
start p
grep 'msg="hand-off pack codec"' "$T/err.p.1" | grep -q "key=$HK.0 codec=lz4" ||
    fail "parse stage p does not send LZ4 to a write stage that reads it: $(cat "$T/err.p.1")"
# held KEY: what the bound counts on a hand-off stream (packs, or bytes of
# Redis's memory; nil when the key is gone).
held() {
    local n
    if [ "$BOUND" = packs ]; then n=$(rcli XLEN "$1"); else n=$(rcli MEMORY USAGE "$1" SAMPLES 0); fi
    echo "${n:-0}"
}
# full at the bound; bytes: within a pack of it (the next pack may not fit)
if [ "$BOUND" = packs ]; then MAXH=$MAXP SLACK=40 FULL=$MAXP; else MAXH=$MAXB SLACK=65536 FULL=$((MAXB - 65536)); fi
hk1_full() { [ "$(held "$HK.1")" -ge "$FULL" ]; }
wait_until "stream 1 to fill up to its bound ($MAXH $BOUND) while its write stage is paused" hk1_full
peak=$(held "$HK.1")
hk0_empty() { [ "$(rcli XLEN "$HK.0")" = 0 ]; }
wait_until "stream 0 to drain while the parse stage waits for room on stream 1" hk0_empty
unread=$(ginfo "$RAW" parse lag)
peak2=$(held "$HK.1")
kill -CONT "${pid[w1]}"
echo "stream 1 held $peak then $peak2 $BOUND while its write stage was paused (bound $MAXH); stream 0 drained with $unread raw records unread"
[ "$unread" -gt 0 ] || fail "the parse stage had read all its input: the pause shows no flow control"
[ "$peak2" -le $((MAXH + SLACK)) ] || fail "stream 1 grew to $peak2 $BOUND: flow control did not pause the parse stage"
[ "$BOUND" = bytes ] || [ "$peak2" -le $((peak + 1)) ] || fail "stream 1 kept growing ($peak -> $peak2) while full"
half_first() { [ "$(landed)" -ge $((FIRST / 2)) ]; }
wait_until "$((FIRST / 2)) records to land" half_first
# The parse stage that waited for room counts its waits in the summary it
# prints at a graceful stop (a SIGKILL in the rounds below would lose it):
# stop it now, check the count, and start it again from its position.
stop_term p
waits=$(/usr/bin/python3 -c 'import sys, json; print(sum(json.loads(l).get("handoff_waits", 0) for l in sys.stdin if l.strip()))' <"$T/out.p.1")
[ "$waits" -gt 0 ] || fail "the parse stage never waited for room (handoff_waits=0): $(cat "$T/out.p.1")"
start p
start p2
grep -q 'pack_codec=snappy' "$T/err.p2.1" || fail "p2 does not say it sends Snappy"

# progress WHO: raw entries its group has read (parse stages), packs its
# group has read (write stages); a stopped process cannot move it.
progress() {
    local n
    case $1 in
    p) n=$(ginfo "$RAW" parse entries-read) ;;
    p2) n=$(ginfo "$RAW2" parse entries-read) ;;
    *) n=$(ginfo "$HK.${1#w}" sortd-write entries-read) ;;
    esac
    echo "${n:-0}"
}
for round in $(seq 1 "$ROUNDS"); do
    who=$(echo p p2 w0 w1 | tr ' ' '\n' | shuf -n 1)
    before=$(progress "$who")
    add_slice "$round"
    case $who in
    p | p2) past=$(pick_below "$before" "$ADDED") total=$HALF ;; # the last slice is held back
    *) past=$before total=$((1 << 62)) ;; # packs to come are not counted ahead; see below
    esac
    kill_mid_run "${pid[$who]}" "round $round ($who)" "$before" "$past" "$total" progress "$who"
    unset "pid[$who]"
    [ "$(landed)" -lt "$N" ] || fail "round $round: every record had landed before the kill"
    echo "round $round: killed $who at progress $KILLED_AT ($before before); $(landed) records landed"
    start "$who"
done
add_slice $((ROUNDS + 1))
[ "$ADDED" = "$HALF" ] || fail "slices add up to $ADDED records of each half, expected $HALF"

# The benchmarks' wait (sort_xadd --wait: lag, pending and XLEN on one
# connection); the checks after it ask Redis again, through redis-cli.
done_all() {
    [ "$(landed)" -ge "$N" ] || return 1
    for k in "$RAW" "$RAW2"; do
        "$XADD" --redis "$ORRERY_REDIS" --key "$k" --wait parse --empty "$HK.0" --empty "$HK.1" \
            --seconds 0.5 || return 1
    done
}
wait_until "every record to land, be acknowledged and leave the hand-off streams" done_all
stop_term p
stop_term p2
stop_term w0
stop_term w1
echo "parse stage: $(cat "$T/out.p.${runs[p]}")"
verify_landed "$T/blob" "$N" nocheck
for k in "$HK.0" "$HK.1"; do
    [ "$(rcli XLEN "$k")" = 0 ] || fail "$k still holds $(rcli XLEN "$k") packs"
    [ "$(ginfo "$k" sortd-write pending)" = 0 ] || fail "$k has packs pending"
done
for k in "$RAW" "$RAW2"; do
    [ "$(ginfo "$k" parse pending)" = 0 ] || fail "raw entries of $k still pending after the last commit"
    [ "$(ginfo "$k" parse lag)" = 0 ] || fail "raw entries of $k never read"
done

# One owner per unit: each _CHECK lists exactly its folder's files and their sum.
/usr/bin/python3 - "$T/blob" <<'PY' || fail "a _CHECK does not match its folder"
import json, os, re, sys
root, bad, units = sys.argv[1], 0, 0
for d, _, files in os.walk(root):
    if "_CHECK" not in files:
        continue
    units += 1
    c = json.load(open(os.path.join(d, "_CHECK")))
    parts = sorted(f for f in files if f.startswith("part-") and f.endswith(".lzo"))
    listed = sorted(f["name"] for f in c["files"])
    total = sum(int(re.search(r"-n(\d+)\.lzo$", f).group(1)) for f in parts)
    if listed != parts or c["total"] != total:
        print(f"{d}: _CHECK lists {len(listed)} files / {c['total']} records, "
              f"folder has {len(parts)} / {total}", file=sys.stderr)
        bad += 1
print(f"{units} units reconciled, {bad} mismatched")
sys.exit(1 if bad or units == 0 else 0)
PY
echo "PASS sort_handoff (kills: $ROUNDS, the first parse stage's waits for room: $waits)"
