#!/usr/bin/env bash
# tests/bench/sort/handoff.sh [BUILD_DIR] - the two-stage pipeline across
# processes: SORT_HANDOFF_RECORDS (default 1,000,000) raw delimited records
# of ~200 bytes over 1,000 units, one record per Redis entry, are read by a
# parse stage (sortd with sinks.handoff), handed off as packs per unit on
# SORT_HANDOFF_STREAMS (default 1) Redis streams, and landed by as many
# write stages (sortd --handoff-stream I) as lzop files (fsync on).
#
# The raw stream is filled first (pipelined XADD, not timed), the write
# stages are started (untimed: they wait for packs); the clock runs from
# the parse stage's start until every raw entry is acknowledged, every hand-
# off stream is empty (each pack landed and deleted) and every record has
# landed: records/s end to end across both stages. The same records are
# then run through a single sortd (raw source -> files, the one-process
# path) on the same machine, and the ratio is printed. Peak RSS of each
# process is read from /proc, and so is the CPU time each sortd used (user +
# system) and Redis's (INFO cpu, before and after): CPU seconds per million
# records do not depend on what else runs on the machine, the rates do.
# Needs ORRERY_REDIS=host:port
# (deploy/stack.sh env). Bounded: each wait gives up after
# SORT_HANDOFF_SECONDS (default 300). Units roll each second (roll_age_ms
# 1000), so the slower path lands more files: both counts are printed, and
# so are records that reached a write stage after their hour had closed
# there. The run-queue wait (schedstat, threads summed) is time a sortd was
# runnable but had no CPU: on a loaded machine most of the wall time.
# The forks Redis made in each path (its persistence: RDB saves and AOF
# rewrites under deploy/stack.sh's durable settings) are counted with their
# CPU, which Redis's own used_cpu_* does not include; each path starts once
# no such child runs (the fill's rewrite took a core from the first path,
# unseen). The end of each path is watched by one sort_xadd --wait on one
# connection (lag, pending, XLEN): BUILD's, or this tree's build/ when
# BUILD's is older than --wait.
# Last, the floor both paths share: the same raw entries read alone through
# a third consumer group (sort_xadd --read: XREADGROUP of 5,000 and XACK,
# or XREAD of 5,000 with SORT_BENCH_REDIS_COMMIT=position; nothing parsed
# or written), with the reader's and Redis's CPU per 1M.
# SORT_BENCH_KEEP_OUTPUT=1 moves the run's landed files under
# SORT_BENCH_OLD_DIR (default $T.old) at exit instead of deleting them, as
# handoff_ab.sh does between its runs: on ext4 without a journal every
# create skips the inodes freed in the last seconds to minutes, so deleting
# a run's ~8,000 files just before the next one made that run's file
# creation half its write stage's CPU. Run alone, delete that folder when
# done (about 0.2 GB per run).
# SORT_BENCH_REDIS_COMMIT=position (or ack) sets both paths' raw source's
# spec.source.commit (unset: the spec names none, so any build reads it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=${1:-$ROOT/build}
N=${SORT_HANDOFF_RECORDS:-1000000}
NS=${SORT_HANDOFF_STREAMS:-1}
LIMIT_S=${SORT_HANDOFF_SECONDS:-300}
# Flow control: the spec's defaults unless set (max_packs, max_bytes).
BOUNDS=${SORT_HANDOFF_MAX_PACKS:+, \"max_packs\": $SORT_HANDOFF_MAX_PACKS}${SORT_HANDOFF_MAX_BYTES:+, \"max_bytes\": $SORT_HANDOFF_MAX_BYTES}
COMMIT=${SORT_BENCH_REDIS_COMMIT:+, \"commit\": \"$SORT_BENCH_REDIS_COMMIT\"}
T=${SORT_BENCH_DIR:-/tmp/sort-handoff-bench}
SORTD=$BUILD/bin/sortd
GEN=$BUILD/bin/sort_gen
XADD=$BUILD/bin/sort_xadd
for b in "$SORTD" "$GEN" "$XADD"; do
    [ -x "$b" ] || { echo "build sortd, sort_gen and sort_xadd in $BUILD first" >&2; exit 2; }
done
. "$ROOT/tests/bench/sort/redis_lib.sh"
WAITER=$(pick_waiter "$XADD" "$ROOT/build/bin/sort_xadd") || exit 2
[ -n "${ORRERY_REDIS:-}" ] || { echo "ORRERY_REDIS is not set (deploy/stack.sh start redis)" >&2; exit 2; }
HOST=${ORRERY_REDIS%:*}
PORT=${ORRERY_REDIS##*:}
rcli() { redis-cli -h "$HOST" -p "$PORT" "$@"; }
RAW="orr-bench-ho-raw-$$"
HK="orr-bench-ho-$$"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    rcli DEL "$RAW" >/dev/null 2>&1 || true
    for i in $(seq 0 $((NS - 1))); do rcli DEL "$HK.$i" "$HK.$i.lz4" >/dev/null 2>&1 || true; done
    if [ "${SORT_BENCH_KEEP_OUTPUT:-0}" = 1 ] && [ -d "$T" ]; then
        rm -rf "$T/in" # ten inodes
        { mkdir -p "$OLD_DIR" && mv "$T" "$OLD_DIR/run-$$"; } || echo "warning: could not keep $T" >&2
    else
        rm -rf "$T"
    fi
}
OLD_DIR=${SORT_BENCH_OLD_DIR:-$T.old}
rm -rf "$T"
mkdir -p "$T"
trap cleanup EXIT

"$GEN" --out "$T/in" --records "$N" --files 10 --ifaces 250 --span 14400 >/dev/null
RAWB=$(cat "$T"/in/* | wc -c)
spec() { raw_spec "$1" "$RAW" "$2" "$COMMIT" "$3"; } # spec NAME GROUP SINKS
spec hob two ", \"sinks\": {\"files\": false, \"handoff\": {\"key\": \"$HK\", \"streams\": $NS$BOUNDS}}" >"$T/two.json"
spec hos one "" >"$T/one.json"
"$XADD" --redis "$ORRERY_REDIS" --key "$RAW" --in "$T/in" --records "$N" --seconds "$LIMIT_S" >/dev/null
rcli XGROUP CREATE "$RAW" two 0 >/dev/null
rcli XGROUP CREATE "$RAW" one 0 >/dev/null
rcli XGROUP CREATE "$RAW" bare 0 >/dev/null

landed() {
    find "$1" -name 'part-*.lzo' 2>/dev/null | sed 's/.*-n\([0-9]*\)\.lzo$/\1/' |
        awk '{ s += $1 } END { print s + 0 }'
}
run_sortd() { # run_sortd TAG SPEC [ARGS...]
    local tag=$1 spec=$2
    shift 2
    ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state ORRERY_SORT_BLOB_ROOT=file://$T/blob.${spec%%.*} \
        ORRERY_SORT_REDIS=$ORRERY_REDIS ORRERY_LOG_LEVEL=warn \
        "$SORTD" run --stream "$T/$spec" "$@" >"$T/$tag.out" 2>"$T/$tag.err" &
    pids+=($!)
}
# drained GROUP [--empty KEY]...: the raw stream's GROUP has read and
# acknowledged every entry and each KEY is empty. One process polls on one
# connection for up to a second (a redis-cli per check cost the run being
# timed about 20 ms of CPU each on a 2-core guest).
drained() {
    local group=$1 rc=0
    shift
    "$WAITER" --redis "$ORRERY_REDIS" --key "$RAW" --wait "$group" "$@" --seconds 1 || rc=$?
    case $rc in
    0) return 0 ;;
    3) return 1 ;; # not yet
    *) echo "FAIL: sort_xadd --wait: status $rc" >&2; exit 1 ;;
    esac
}
wait_until() { # wait_until CMD...: poll, bounded; a sortd that exits ends it
    local deadline=$(($(date +%s) + LIMIT_S)) p
    until "$@"; do
        [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: not drained in ${LIMIT_S}s" >&2; exit 1; }
        for p in "${pids[@]}"; do
            kill -0 "$p" 2>/dev/null || { echo "FAIL: a sortd exited: $(tail -n 3 "$T"/*.err)" >&2; exit 1; }
        done
        sleep 0.1
    done
}
rss_of() { awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
HZ=$(getconf CLK_TCK)
cpu_of() { # cpu_of PID: user + system seconds
    awk -v hz="$HZ" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}
rq_of() { # rq_of PID: seconds its threads waited for a CPU (run queue, schedstat)
    cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $2 } END { printf "%.2f", s / 1e9 }'
}
redis_cpu() {
    rcli INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.2f", s }'
}
# redis_kids: "FORKS CPU" - forks Redis made so far (RDB saves, AOF
# rewrites, as its persistence settings ask) and the CPU seconds of the
# children it has reaped: work the run caused that INFO's used_cpu_* misses.
redis_kids() {
    { rcli INFO stats; rcli INFO cpu; } | tr -d '\r' |
        awk -F: '/^total_forks:/ { f = $2 } /^used_cpu_(user|sys)_children:/ { s += $2 } END { printf "%d %.2f", f, s }'
}
# redis_settled: with the append-only file on, rewrite it now (the fill made
# it several times the data set: a rewrite was due in whichever path ran
# next, by where the fill's last one fell); with snapshots on (save rules),
# take one now (the next is due a minute later at the earliest, after
# either path has ended). Each is asked again until Redis starts it (it
# refuses a rewrite while one runs, and a snapshot while any child runs).
# Then wait (bounded) until Redis has had no persistence child running or
# scheduled at two looks half a second apart (its cron may start a rewrite
# just after a child ends), so that none started before takes a core from
# the path timed next. Forks in a path are still counted.
redis_settled() {
    local deadline=$(($(date +%s) + LIMIT_S))
    if persisting '^aof_enabled:1'; then
        ask_redis "$deadline" 'rewriting (started|scheduled)' BGREWRITEAOF
    fi
    if [ -n "$(rcli CONFIG GET save | sed -n 2p)" ]; then
        ask_redis "$deadline" 'saving started' BGSAVE
    fi
    settle_wait "$deadline"
    sleep 0.5
    settle_wait "$deadline"
}
ask_redis() { # ask_redis DEADLINE REGEX CMD...: CMD again, once no child runs, until its reply matches
    local deadline=$1 re=$2 reply
    shift 2
    while reply=$(rcli "$@"); ! [[ $reply =~ $re ]]; do
        [ "$(date +%s)" -lt "$deadline" ] || { echo "FAIL: Redis refused $*: $reply" >&2; exit 1; }
        settle_wait "$deadline"
        sleep 0.2
    done
}
persisting() { # persisting REGEX: a line of INFO persistence matches
    local info
    info=$(rcli INFO persistence | tr -d '\r')
    grep -Eq "$1" <<<"$info"
}
settle_wait() { # settle_wait DEADLINE
    while persisting '^(rdb_bgsave_in_progress|aof_rewrite_in_progress|aof_rewrite_scheduled):1'; do
        [ "$(date +%s)" -lt "$1" ] || { echo "FAIL: Redis still persisting after ${LIMIT_S}s" >&2; exit 1; }
        sleep 0.2
    done
}
stop_all() {
    for p in "${pids[@]}"; do kill -TERM "$p"; done
    for p in "${pids[@]}"; do wait "$p" || { echo "FAIL: a sortd exited with an error" >&2; exit 1; }; done
    pids=()
}

two_done() {
    local empties=() i
    for i in $(seq 0 $((NS - 1))); do empties+=(--empty "$HK.$i"); done
    drained two "${empties[@]}" || return 1
    [ "$(landed "$T/blob.two")" -ge "$N" ]
}
# The write stages first, and (at most 5 s, untimed) until each says it
# reads LZ4 packs ("<key>.<i>.lz4"), so the parse stage's "pack_codec":
# "auto" picks LZ4 from its start; a build older than LZ4 packs says
# nothing and its parse stage sends Snappy.
for i in $(seq 0 $((NS - 1))); do run_sortd "write$i" two.json --handoff-stream "$i"; done
said_lz4() { for i in $(seq 0 $((NS - 1))); do [ "$(rcli EXISTS "$HK.$i.lz4")" = 1 ] || return 1; done; }
for _ in $(seq 1 50); do said_lz4 && break; sleep 0.1; done
redis_settled
rc0=$(redis_cpu)
rk0=$(redis_kids)
t0=$(date +%s.%N)
run_sortd parse two.json
wait_until two_done
t1=$(date +%s.%N)
rc1=$(redis_cpu)
rk1=$(redis_kids)
rss2=""
cpu2=""
rq2=""
# the parse stage (started last) first, then the write stages
for p in "${pids[-1]}" "${pids[@]:0:${#pids[@]}-1}"; do
    rss2="$rss2 $(rss_of "$p")"
    cpu2="$cpu2 $(cpu_of "$p")"
    rq2="$rq2 $(rq_of "$p")"
done
stop_all
[ "$(landed "$T/blob.two")" = "$N" ] || { echo "FAIL: two stages landed $(landed "$T/blob.two") of $N" >&2; exit 1; }

one_done() { drained one; }
redis_settled
rc2=$(redis_cpu)
rk2=$(redis_kids)
t2=$(date +%s.%N)
run_sortd single one.json
wait_until one_done
t3=$(date +%s.%N)
rc3=$(redis_cpu)
rk3=$(redis_kids)
rss1=$(rss_of "${pids[0]}")
cpu1=$(cpu_of "${pids[0]}")
rq1=$(rq_of "${pids[0]}")
stop_all
[ "$(landed "$T/blob.one")" = "$N" ] || { echo "FAIL: one process landed $(landed "$T/blob.one") of $N" >&2; exit 1; }
# the floor: Redis delivering and acknowledging each entry (with commit
# "position": delivering it to XREAD), nothing else
redis_settled
rc4=$(redis_cpu)
READ_MODE=group
[ "${SORT_BENCH_REDIS_COMMIT:-}" = position ] && READ_MODE=xread
"$XADD" --redis "$ORRERY_REDIS" --key "$RAW" --read bare --read-mode "$READ_MODE" --records "$N" \
    --seconds "$LIMIT_S" >"$T/bare.out"
rc5=$(redis_cpu)
awk -v n="$N" -v ra="$rc4" -v rb="$rc5" '/^read/ {
    printf "reads alone          %s s  %9.0f records/s  CPU s per 1M records: reader %.2f, redis %.2f\n", $5, $2 / $5, $10 * 1e6 / n, (rb - ra) * 1e6 / n
}' "$T/bare.out" >"$T/bare.line"
awk -v n="$N" -v ns="$NS" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v r2="$rss2" -v r1="$rss1" \
    -v c2="$cpu2" -v c1="$cpu1" -v ra="$rc0" -v rb="$rc1" -v rc="$rc2" -v rd="$rc3" 'BEGIN {
    printf "records              %d, one per raw entry, 1,000 units\n", n
    printf "parse + %d write     %.2f s  %9.0f records/s  peak RSS (MB):%s\n", ns, b - a, n / (b - a), r2
    printf "one process          %.2f s  %9.0f records/s  peak RSS %d MB\n", d - c, n / (d - c), r1
    printf "ratio                %.2f (two stages / one process)\n", (d - c) / (b - a)
    k = split(c2, cs, " "); t = 0; l = ""
    for (i = 1; i <= k; i++) { t += cs[i]; l = l sprintf(" %.2f", cs[i] * 1e6 / n) }
    printf "CPU s per 1M records two stages: sortd%s, redis %.2f; one process: sortd %.2f, redis %.2f\n", l, (rb - ra) * 1e6 / n, c1 * 1e6 / n, (rd - rc) * 1e6 / n
}'
# Records that reached a write stage after their hour had closed there (they
# land in extra files) and the files landed, from each sortd's final stats.
stat_of() { # stat_of TAG FIELD
    grep -o "\"$2\": *[0-9]*" "$T/$1.out" | tail -1 | grep -o '[0-9]*$' || echo "?"
}
late2="" files2=""
for i in $(seq 0 $((NS - 1))); do
    late2="$late2 $(stat_of "write$i" late)"
    files2="$files2 $(stat_of "write$i" files)"
done
echo "late records         write stage(s):$late2; one process: $(stat_of single late)"
echo "parse stage paused   $(stat_of parse handoff_waits) times for room (a stream held max_packs packs or max_bytes not yet landed${BOUNDS:+; set:$BOUNDS})"
echo "run-queue wait (s)   two stages:$rq2; one process: $rq1 (threads summed: time runnable but not running)"
echo "files landed         write stage(s):$files2; one process: $(stat_of single files)"
kids() { # kids "F0 C0" "F1 C1": forks between, and their children's CPU reaped between
    awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); printf "%d (children CPU %.2f s)", y[1] - x[1], y[2] - x[2] }'
}
echo "redis forks          two stages: $(kids "$rk0" "$rk1"); one process: $(kids "$rk2" "$rk3") (persistence; a child still running at the end is counted later)"
rolls_of() { # rolls_of TAG: size/age/lru/close/room
    echo "$(stat_of "$1" rolls_size)/$(stat_of "$1" rolls_age)/$(stat_of "$1" rolls_lru)/$(stat_of "$1" rolls_close)/$(stat_of "$1" rolls_room)"
}
rolls2=""
for i in $(seq 0 $((NS - 1))); do rolls2="$rolls2 $(rolls_of "write$i")"; done
echo "rolls by size/age/lru/close/room  write stage(s):$rolls2; one process: $(rolls_of single)"
echo "packs handed off     $(stat_of parse handoff_packs), $(stat_of parse handoff_bytes) bytes (the records: $RAWB bytes raw)"
cat "$T/bare.line"
