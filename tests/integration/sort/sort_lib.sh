# sort_lib.sh - helpers shared by sortd's integration test scripts (sourced).
#
# Waiting is polling a real condition with a deadline (SORT_IT_WAIT seconds,
# default 120): a test that cannot reach its condition fails saying what it
# waited for. A kill that must land mid-run goes through kill_mid_run.
#
# verify_landed ROOT N [nocheck]: every landed .lzo file passes `lzop -t`;
# together they hold exactly N records whose ids are 0..N-1, each once
# (count, uniqueness and sum); the record counts in the file names agree, and
# (unless nocheck) so do the totals of the _CHECK files. The id is the first
# field of a record: "ID|..." or "id=ID&...".

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# need_redis: HOST, PORT and rcli for the test stack's Redis (ORRERY_REDIS),
# or fail saying how to start it.
need_redis() {
    [ -n "${ORRERY_REDIS:-}" ] || fail "ORRERY_REDIS is not set (start the stack: deploy/stack.sh start redis)"
    HOST=${ORRERY_REDIS%:*}
    PORT=${ORRERY_REDIS##*:}
    rcli PING | grep -q PONG || fail "Redis at $ORRERY_REDIS does not answer"
}
rcli() { redis-cli -h "$HOST" -p "$PORT" "$@"; }

SORT_IT_WAIT=${SORT_IT_WAIT:-120}

# wait_until WHAT CMD...: runs CMD every 0.05 s until it succeeds; fails
# naming WHAT when it has not within SORT_IT_WAIT seconds.
wait_until() {
    local what=$1 deadline=$((SECONDS + SORT_IT_WAIT))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "waited $SORT_IT_WAIT s for $what"
        sleep 0.05
    done
}

# alive PID: the process exists and has not ended (a zombie has ended).
alive() {
    local st
    st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ]
}

# kill_mid_run PID WHAT START PAST TOTAL PROGRESS...: SIGKILL a running
# sortd in the middle of its input. PROGRESS... is a command printing a
# progress counter that a stopped process cannot move (rows in a table,
# records in landed files, entries a consumer group has read): START is its
# value when the run began, TOTAL its value once the whole input is done;
# the test holds part of the input back, so TOTAL cannot be reached before
# the kill. Waits until the counter passes PAST (>= START; where in the run
# to kill), failing if sortd ends or gets no further within SORT_IT_WAIT s;
# stops the process (SIGSTOP) so that nothing moves, reads the counter
# again, kills it, and fails unless it died of that SIGKILL (not of its own
# accord before) with START < counter < TOTAL. Sets KILLED_AT to the counter
# read while it was stopped.
kill_mid_run() {
    local pid=$1 what=$2 start=$3 past=$4 total=$5 deadline=$((SECONDS + SORT_IT_WAIT)) now st=0
    shift 5
    while alive "$pid"; do
        now=$("$@")
        [ "$now" -gt "$past" ] && break
        if [ "$SECONDS" -ge "$deadline" ]; then
            kill -9 "$pid" 2>/dev/null || true
            fail "$what: progress $now, not past $past after $SORT_IT_WAIT s: the kill cannot land mid-run"
        fi
        sleep 0.05
    done
    kill -STOP "$pid" 2>/dev/null || true
    KILLED_AT=$("$@")
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || st=$?
    [ "$st" = 137 ] || fail "$what: sortd ended by itself (status $st) before the kill could land"
    [ "$KILLED_AT" -gt "$start" ] && [ "$KILLED_AT" -lt "$total" ] ||
        fail "$what: progress $KILLED_AT at the kill is not strictly between $start and $total"
}

# pick_below LO HI: a random whole number in [LO, HI) (LO when HI <= LO):
# where in a round's input a kill goes.
pick_below() {
    if [ "$2" -le "$1" ]; then
        echo "$1"
    else
        echo $(($1 + (RANDOM * 32768 + RANDOM) % ($2 - $1)))
    fi
}

# landed_records ROOT: records in the landed files under ROOT, from the
# counts in their names (0 before anything landed).
landed_records() {
    { find "$1" -name 'part-*.lzo' 2>/dev/null || true; } | sed 's/.*-n\([0-9]*\)\.lzo$/\1/' |
        awk '{ s += $1 } END { print s + 0 }'
}

# feed FILE DIR: FILE appears in DIR whole, at once (copied beside it under
# a name the file source ignores, then renamed).
feed() {
    cp "$1" "$2/.feeding" && mv "$2/.feeding" "$2/${1##*/}" || fail "cannot feed $1 to $2"
}

verify_landed() {
    local root=$1 n=$2 nocheck=${3:-}
    local files
    files=$(find "$root" -name 'part-*.lzo' | sort)
    [ -n "$files" ] || fail "no landed files under $root"
    echo "$files" | xargs lzop -t >/dev/null 2>&1 || fail "lzop -t refused a landed file"
    local stats
    stats=$(echo "$files" | xargs lzop -dc | sed -e 's/^id=//' -e 's/[|&].*//' |
        awk -v n="$n" '{ if (seen[$1]++) dup++; c++; s += $1 }
                       END { printf "%d %d %.0f %.0f\n", c, dup, s, n * (n - 1) / 2 }')
    read -r count dups sum want_sum <<<"$stats"
    [ "$count" = "$n" ] || fail "landed $count records, expected $n"
    [ "$dups" = "0" ] || fail "$dups duplicate records landed"
    [ "$sum" = "$want_sum" ] || fail "checksum of ids $sum, expected $want_sum"
    local named=0 c
    for f in $files; do
        c=${f##*-n}
        named=$((named + ${c%.lzo}))
    done
    [ "$named" = "$n" ] || fail "record counts in file names sum to $named, expected $n"
    if [ "$nocheck" = nocheck ]; then
        echo "verified: $count records, $(echo "$files" | wc -l) files, no duplicates"
        return 0
    fi
    local checked
    checked=$(find "$root" -name _CHECK -exec cat {} + |
        /usr/bin/python3 -c 'import sys, json; print(sum(json.loads(l)["total"] for l in sys.stdin if l.strip()))')
    [ "$checked" = "$n" ] || fail "_CHECK totals sum to $checked, expected $n"
    echo "verified: $count records, $(echo "$files" | wc -l) files, no duplicates, _CHECK totals $checked"
}

# verify_check_bytes ROOT: in every _CHECK under ROOT each file's "bytes" is
# the size of that landed .lzo file and "total_bytes" is their sum (and at
# least one file is listed somewhere). Prints how many files were compared.
verify_check_bytes() {
    local root=$1 out
    out=$(/usr/bin/python3 - "$root" <<'PY'
import json, os, sys
files = 0
for d, _, names in os.walk(sys.argv[1]):
    if "_CHECK" not in names:
        continue
    doc = json.loads(open(os.path.join(d, "_CHECK")).read())
    total = 0
    for f in doc["files"]:
        real = os.path.getsize(os.path.join(d, f["name"]))
        if f.get("bytes") != real:
            sys.exit(f"{d}/{f['name']}: _CHECK bytes {f.get('bytes')}, file has {real}")
        total += real
        files += 1
    if doc.get("total_bytes") != total:
        sys.exit(f"{d}: _CHECK total_bytes {doc.get('total_bytes')}, files sum to {total}")
if files == 0:
    sys.exit("no file listed in any _CHECK")
print(files)
PY
) || fail "_CHECK bytes: $out"
    echo "_CHECK bytes match the file sizes ($out files)"
}
