#!/usr/bin/env bash
# sort_kafka_group.sh SORTD SORT_GEN SORT_KAFKA_MOCK - several sortd share one
# topic through a Kafka consumer group (source.subscribe), into PostgreSQL
# only (ORRERY_PG_DSN; a fresh database per run, dropped at the end).
#
# librdkafka's mock cluster trickles N records into P partitions (in turn),
# and its hold file keeps back what the test has not let in yet: a quarter
# at first, the next once B holds every partition, the next once C shares
# the topic, the rest after C's stop. So every phase has records on every
# partition by construction, and the test waits until PostgreSQL's stored
# position of every partition has moved on (each owner read some) before
# the group changes again. Meanwhile:
#   1. sortd A and B join the group and share the partitions;
#   2. A is killed with SIGKILL once rows land, while records are held back
#      (checked while A is stopped): once its session times out, B takes
#      its partitions over, from PostgreSQL's positions (what A had
#      committed to the table is not read again; its uncommitted batch is);
#   3. sortd C joins: B drains every partition before giving it up, then B
#      and C share the topic;
#   4. C is stopped with SIGTERM: a clean revoke, so its partitions are
#      drained and committed, and B takes them back at exactly the Kafka
#      offsets C committed, which equal PostgreSQL's positions;
#   5. a last sortd with exit_at_eof joins alone and ends, reading nothing.
# At the end the table holds every record exactly once (count, distinct ids,
# id checksum) and no member read a record twice (replay_dropped 0). Also:
# subscribe with files on is refused naming spec.source.subscribe
# (check-spec exits 2). SORT_KG_KEEP=1 keeps the logs.
set -euo pipefail
SORTD=$1
GEN=$2
MOCK=$3
. "$(dirname "$0")/sort_lib.sh"
[ -n "${ORRERY_PG_DSN:-}" ] || fail "ORRERY_PG_DSN is not set"

N=${SORT_KG_RECORDS:-60000}
PARTS=6
RATE=${SORT_KG_RATE:-1500}
T=$(mktemp -d /tmp/sort-kg.XXXXXX)
DB=sortkg_$$_$RANDOM
BASE=${ORRERY_PG_DSN%%\?*}
BASE=${BASE%/*}
export SORT_KG_DSN="$BASE/$DB"
mpid= apid= bpid= cpid=
cleanup() {
    touch "$T/stop"
    for p in $apid $bpid $cpid; do kill -9 "$p" 2>/dev/null || true; done
    for p in $apid $bpid $cpid $mpid; do wait "$p" 2>/dev/null || true; done
    psql -q "$ORRERY_PG_DSN" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
    [ -n "${SORT_KG_KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
psql -q -v ON_ERROR_STOP=1 "$ORRERY_PG_DSN" -c "CREATE DATABASE $DB" >/dev/null
q() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$SORT_KG_DSN" -c "$1"; }
q "CREATE TABLE kg (id bigint, ts bigint, iface text, path text)"
rows() { q "SELECT count(*) FROM kg"; }

# Waits up to $1 seconds for the command in the rest of the arguments.
wait_for() {
    local secs=$1 i
    shift
    for i in $(seq 1 $((secs * 10))); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}
# Partition count of the latest group assignment logged in $1 (-1: none yet).
assigned() {
    local n
    n=$(grep 'kafka partitions assigned by the group' "$1" 2>/dev/null | tail -n 1 |
        sed -n 's/.*partitions=\([0-9]*\).*/\1/p')
    echo "${n:--1}"
}
holds() { [ "$(assigned "$1")" = "$2" ]; }
holds_some() { [ "$(assigned "$1")" -gt 0 ]; }
holds_less() { local n; n=$(assigned "$1"); [ "$n" -ge 0 ] && [ "$n" -lt "$2" ]; }
rows_over() { [ "$(rows)" -gt "$1" ]; }
rows_atleast() { [ "$(rows)" -ge "$1" ]; }
# positions: "partition:offset" lines, PostgreSQL's stored position of each partition.
positions() { q "SELECT part || ':' || off_lo FROM orrery_sort_offsets WHERE stream = 'kg' ORDER BY part"; }
# all_moved SNAPSHOT: every partition's position is past the one in SNAPSHOT
# (a positions output; a partition missing there counts as none).
all_moved() {
    awk -F: -v parts=$PARTS 'NR == FNR { was[$1] = $2; next }
        !($1 in was) || $2 > was[$1] { n++ } END { exit !(n == parts) }' \
        <(echo "-1:0"; echo "$1") <(positions)
}

cat >"$T/spec.json" <<JSON
{"name": "kg", "business": "bkg",
 "source": {"type": "kafka", "brokers": "BOOT", "topic": "clicks", "group": "sortd-kg",
            "batch": 500, "subscribe": true, "session_timeout_ms": 6000},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s"},
 "bucket": "hour",
 "check": {"enabled": false},
 "sinks": {"files": false,
           "postgres": {"dsn_env": "SORT_KG_DSN", "table": "kg",
                        "columns": ["id", "ts", "iface", "path"],
                        "batch_rows": 500, "batch_ms": 100}}}
JSON

# ---- the files rule ------------------------------------------------------
sed 's/"files": false/"files": true/' "$T/spec.json" >"$T/files.json"
set +e
"$SORTD" check-spec "$T/files.json" >/dev/null 2>"$T/files.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "subscribe with files on: check-spec exited $rc: $(cat "$T/files.err")"
grep -q 'spec.source.subscribe: needs sinks.files false' "$T/files.err" ||
    fail "subscribe with files on: $(cat "$T/files.err")"
"$SORTD" check-spec "$T/spec.json" >/dev/null || fail "the group spec is refused"
echo "files rule: ok"

# ---- the group -----------------------------------------------------------
"$GEN" --out "$T/in" --records "$N" --files 3 --ifaces 7 --span 7200 >/dev/null
# hold M: the mock lets the first M records into the topic.
hold() { echo "$1" >"$T/hold.tmp" && mv "$T/hold.tmp" "$T/hold"; }
hold $((N / 4))
"$MOCK" --topic clicks --in "$T/in" --partitions $PARTS --stop-file "$T/stop" --seconds 200 \
    --rate "$RATE" --hold-file "$T/hold" >"$T/mock.out" 2>"$T/mock.err" &
mpid=$!
wait_for 30 grep -q '^bootstrap=' "$T/mock.out" || fail "mock cluster did not start: $(cat "$T/mock.err")"
BOOT=$(sed -n 's/^bootstrap=\([^ ]*\) .*/\1/p' "$T/mock.out")
sed -i "s/\"BOOT\"/\"$BOOT\"/" "$T/spec.json"
export ORRERY_LOG_LEVEL=info ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state
export ORRERY_SORT_BLOB_ROOT=file://$T/blob ORRERY_SORT_PACKS=8
run() { # NAME: a sortd in the background, its own work and state folders
    ORRERY_SORT_WORK_DIR=$T/work.$1 ORRERY_SORT_STATE_DIR=$T/state.$1 \
        "$SORTD" run --stream "$T/spec.json" >"$T/$1.out" 2>"$T/$1.err" &
}
t0=$SECONDS
run a
apid=$!
run b
bpid=$!
wait_for 40 holds_some "$T/a.err" || fail "A got no partitions: $(tail -5 "$T/a.err")"
wait_for 40 holds_some "$T/b.err" || fail "B got no partitions: $(tail -5 "$T/b.err")"
wait_for 20 rows_over 2000 || fail "nothing lands: $(tail -5 "$T/b.err")"
echo "A holds $(assigned "$T/a.err"), B holds $(assigned "$T/b.err"); $(rows) rows after $((SECONDS - t0)) s"

kill_mid_run "$apid" "A" 0 0 "$N" rows
apid=
echo "A killed with $KILLED_AT rows in the table"
wait_for 40 holds "$T/b.err" $PARTS || fail "B did not take A's partitions: $(tail -5 "$T/b.err")"
echo "B holds all $PARTS partitions after $((SECONDS - t0)) s; $(rows) rows"
snap=$(positions)
hold $((N / 2))
wait_for 40 all_moved "$snap" || fail "B did not read every partition after A's: $(positions | tr '\n' ' ')"
mark=$(wc -l <"$T/b.err")

run c
cpid=$!
wait_for 40 holds_some "$T/c.err" || fail "C got no partitions: $(tail -5 "$T/c.err")"
wait_for 20 holds_less "$T/b.err" $PARTS || fail "B did not give partitions to C"
echo "C holds $(assigned "$T/c.err"), B holds $(assigned "$T/b.err") after $((SECONDS - t0)) s"
before=$(rows)
snap=$(positions)
hold $((3 * N / 4))
wait_for 40 rows_over $((before + 1000)) || fail "nothing lands while B and C share the topic"
wait_for 40 all_moved "$snap" || fail "B and C did not read every partition: $(positions | tr '\n' ' ')"

mark2=$(wc -l <"$T/b.err")
kill -TERM "$cpid"
crc=0
wait "$cpid" || crc=$?
cpid=
[ "$crc" = 0 ] || fail "C did not stop cleanly ($crc): $(tail -5 "$T/c.err")"
echo "C stopped: $(cat "$T/c.out")"
wait_for 40 holds "$T/b.err" $PARTS || fail "B did not take C's partitions back: $(tail -5 "$T/b.err")"
echo "B holds all $PARTS partitions again after $((SECONDS - t0)) s"
hold "$N"

wait_for 90 grep -q '^produced=' "$T/mock.out" || fail "the mock did not finish producing"
grep -q "^produced=$N\$" "$T/mock.out" || fail "the topic holds: $(cat "$T/mock.out")"
wait_for 60 rows_atleast "$N" || fail "only $(rows) of $N rows after $((SECONDS - t0)) s"
kill -TERM "$bpid"
brc=0
wait "$bpid" || brc=$?
bpid=
[ "$brc" = 0 ] || fail "B did not stop cleanly ($brc): $(tail -5 "$T/b.err")"
echo "B stopped: $(cat "$T/b.out")"
echo "done after $((SECONDS - t0)) s"

# ---- checks ----------------------------------------------------------------
read -r cnt dist sum <<<"$(q "SELECT count(*), count(DISTINCT id), sum(id) FROM kg" | tr '|' ' ')"
[ "$cnt" = "$N" ] || fail "table holds $cnt rows, expected $N"
[ "$dist" = "$N" ] || fail "table holds $dist distinct ids, expected $N"
[ "$sum" = $((N * (N - 1) / 2)) ] || fail "id checksum $sum, expected $((N * (N - 1) / 2))"
[ "$(q "SELECT count(*) FROM kg WHERE iface IS NULL OR ts IS NULL")" = 0 ] || fail "NULL columns"

# A partition resumes where PostgreSQL holds it (the sink's position), so no
# member reads a record again: not after A's kill, not after a hand-over.
for m in b c; do
    grep -q '"replay_dropped":0,' "$T/$m.out" || fail "$m replayed records: $(cat "$T/$m.out")"
done
echo "take-overs after A's kill: $(sed -n "1,${mark}p" "$T/b.err" | grep 'partition taken over' |
    sed 's/.*\(partition=[0-9]*\) \(committed=[0-9a-z]*\) \(sink_at=[0-9a-z]*\).*/\1 \2 \3;/' | tr '\n' ' ')"
# When C joined, B drained every partition before giving it up. (Its Kafka
# commits may fail there: the mock cluster refuses commits while the group
# rebalances; PostgreSQL's positions decide where the next owner starts.)
handed=$(sed -n "$((mark + 1)),${mark2}p" "$T/b.err" | grep 'partition handed over' || true)
[ "$(grep -c . <<<"$handed")" -ge $PARTS ] || fail "B logged no hand-over when C joined"
# C's SIGTERM was a clean revoke: B takes C's partitions back at exactly the
# offsets C committed to Kafka, which are PostgreSQL's positions. (B's own
# partitions are drained too, but the mock cluster refuses commits while the
# group rebalances, so their Kafka offsets may lag; B resumes them from
# PostgreSQL's positions.)
back=$(sed -n "$((mark2 + 1)),\$p" "$T/b.err" | grep 'partition taken over' || true)
[ "$(grep -c . <<<"$back")" = $PARTS ] || fail "B's last take-over: $back"
cparts=$(grep 'partition taken over' "$T/c.err" | sed -n 's/.* partition=\([0-9]*\) .*/\1/p' |
    sort -u)
[ -n "$cparts" ] || fail "C took no partition over"
back=$(grep -E " partition=($(tr '\n' '|' <<<"$cparts" | sed 's/|$//')) " <<<"$back")
[ "$(grep -c . <<<"$back")" = "$(grep -c . <<<"$cparts")" ] || fail "B did not take back C's: $back"
while read -r line; do
    c=$(sed -n 's/.* committed=\([0-9a-z]*\) .*/\1/p' <<<"$line")
    a=$(sed -n 's/.* sink_at=\([0-9a-z]*\) .*/\1/p' <<<"$line")
    [ -n "$c" ] && [ "$c" != none ] && [ "$c" = "$a" ] ||
        fail "a partition was not committed at the clean stop: $line"
done <<<"$back"
grep -Eq '"rebalances_assigned":[3-9]' "$T/b.out" || fail "B's rebalances: $(cat "$T/b.out")"

# exit_at_eof with subscribe: a member alone in the group ends once every
# partition it was given is at its end; everything was committed already.
sed 's/"subscribe": true/"subscribe": true, "exit_at_eof": true/' "$T/spec.json" >"$T/eof.json"
ORRERY_SORT_WORK_DIR=$T/work.d ORRERY_SORT_STATE_DIR=$T/state.d \
    timeout 60 "$SORTD" run --stream "$T/eof.json" >"$T/d.out" 2>"$T/d.err" ||
    fail "exit_at_eof run failed: $(tail -5 "$T/d.err")"
grep -q '"records_in":0,' "$T/d.out" || fail "exit_at_eof run read records: $(cat "$T/d.out")"
grep -q '"rebalances_assigned":1,' "$T/d.out" || fail "exit_at_eof run: $(cat "$T/d.out")"
holds "$T/d.err" $PARTS || fail "exit_at_eof run did not hold every partition"
[ "$(q "SELECT count(*) FROM kg")" = "$N" ] || fail "rows changed after the end"
echo "exit_at_eof: ok"
echo "PASS sort_kafka_group"
