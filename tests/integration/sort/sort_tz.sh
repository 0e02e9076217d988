#!/usr/bin/env bash
# sort_tz.sh SORTD - buckets of a named time zone across daylight-saving changes.
#
# One record a minute through both 2024 DST changes of Europe/Berlin (the
# spring gap on March 31st, the autumn fold on October 27th), run through
# sortd three times: hour buckets from epoch times, day buckets from epoch
# times, and hour buckets from local wall-clock texts (plus three texts inside
# the spring gap, which no clock shows). The expected units
# and their record counts come from Python's zoneinfo (an independent reader
# of the same tz database): the landed unit folders must be exactly those
# labels, each _CHECK total must match, every file must pass `lzop -t` and
# hold each record once, and the _CHECK byte counts must be the file sizes
# (also for files read back after a restart, when late records amend a unit).
set -euo pipefail
SORTD=$1
. "$(dirname "$0")/sort_lib.sh"

T=$(mktemp -d /tmp/sort-tz.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/in_epoch" "$T/in_text"

# Input and expected counts per unit label, for each run.
/usr/bin/python3 - "$T" <<'PY'
import datetime as dt, sys, zoneinfo
root = sys.argv[1]
berlin = zoneinfo.ZoneInfo("Europe/Berlin")
utc = dt.timezone.utc
ranges = [(dt.datetime(2024, 3, 30, 20, tzinfo=utc), dt.datetime(2024, 3, 31, 4, tzinfo=utc)),
          (dt.datetime(2024, 10, 26, 20, tzinfo=utc), dt.datetime(2024, 10, 27, 4, tzinfo=utc))]
want = {"hour": {}, "day": {}, "text": {}}
def add(kind, label):
    want[kind][label] = want[kind].get(label, 0) + 1
def text_label(wall):
    # zoneinfo reads a wall time with fold=0: the earlier instant in a fold,
    # the offset before the change in a gap (PEP 495).
    t = dt.datetime.strptime(wall, "%Y-%m-%d %H:%M:%S").replace(tzinfo=berlin)
    return t.astimezone(utc).astimezone(berlin).strftime("%Y%m%d%H")
walls = []
n = 0
with open(f"{root}/in_epoch/part-0.log", "w") as fe:
    for lo, hi in ranges:
        t = lo
        while t < hi:
            local = t.astimezone(berlin)
            fe.write(f"{n}|{int(t.timestamp())}|web\n")
            add("hour", local.strftime("%Y%m%d%H"))
            add("day", local.strftime("%Y%m%d"))
            walls.append(local.strftime("%Y-%m-%d %H:%M:%S"))
            n += 1
            t += dt.timedelta(minutes=1)
# wall times inside the spring gap, which no instant shows
walls += ["2024-03-31 02:00:00", "2024-03-31 02:30:00", "2024-03-31 02:59:59"]
with open(f"{root}/in_text/part-0.log", "w") as ft:
    for i, wall in enumerate(walls):
        ft.write(f"{i}|{wall}|web\n")
        add("text", text_label(wall))
for kind, d in want.items():
    with open(f"{root}/want_{kind}", "w") as f:
        f.writelines(f"{k} {d[k]}\n" for k in sorted(d))
open(f"{root}/n_epoch", "w").write(str(n))
open(f"{root}/n_text", "w").write(str(len(walls)))
PY

export ORRERY_LOG_LEVEL=warn ORRERY_SORT_PACKS=8

# run NAME INPUT TIMEFORMAT BUCKET: sortd over INPUT into $T/blob_NAME.
run() {
    local name=$1 input=$2 tfmt=$3 bucket=$4
    cat >"$T/spec_$name.json" <<JSON
{"name": "tz$name", "business": "bz",
 "source": {"type": "file", "path": "$T/$input", "exit_at_eof": true},
 "format": {"type": "delimited", "delimiter": "|", "fields": ["id", "ts", "iface"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "$tfmt", "timezone": "Europe/Berlin"},
 "bucket": "$bucket",
 "output": {"roll_age_ms": 300},
 "check": {"clock": "data", "grace_ms": 0}}
JSON
    ORRERY_SORT_WORK_DIR=$T/work_$name ORRERY_SORT_STATE_DIR=$T/state_$name \
        ORRERY_SORT_BLOB_ROOT=file://$T/blob_$name \
        "$SORTD" run --stream "$T/spec_$name.json" >"$T/out_$name" 2>"$T/err_$name" ||
        fail "$name: sortd failed: $(cat "$T/err_$name")"
}

# check NAME N: landed units and _CHECK totals equal want_NAME.
check() {
    local name=$1 n=$2 got
    verify_landed "$T/blob_$name" "$n"
    got=$(cd "$T/blob_$name/bz/web" && for d in */; do
        d=${d%/}
        /usr/bin/python3 -c 'import sys, json
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(sys.argv[2], lines[-1]["total"])' "$d/_CHECK" "$d"
    done)
    if [ "$got" != "$(cat "$T/want_$name")" ]; then
        diff <(echo "$got") "$T/want_$name" >&2 || true
        fail "$name: units or _CHECK totals differ from zoneinfo's buckets"
    fi
    echo "$name: $(echo "$got" | wc -l) units match"
}

run hour in_epoch epoch_s hour
check hour "$(cat "$T/n_epoch")"
verify_check_bytes "$T/blob_hour"
# A restart reads the landed files back (their sizes from the store); two
# late records of a closed hour then give that unit a new _CHECK version
# listing the old files with the new one: every size must still be right.
late_label=$(head -n1 "$T/want_hour" | cut -d' ' -f1)
late_ts=$(/usr/bin/python3 -c 'import datetime as dt, sys, zoneinfo
t = dt.datetime.strptime(sys.argv[1], "%Y%m%d%H").replace(tzinfo=zoneinfo.ZoneInfo("Europe/Berlin"))
print(int(t.timestamp()) + 60)' "$late_label")
n_epoch=$(cat "$T/n_epoch")
printf '%d|%d|web\n%d|%d|web\n' "$n_epoch" "$late_ts" "$((n_epoch + 1))" "$late_ts" \
    >"$T/in_epoch/part-1.log"
nfiles_before=$(find "$T/blob_hour/bz/web/$late_label" -name 'part-*.lzo' | wc -l)
run hour in_epoch epoch_s hour
verify_landed "$T/blob_hour" "$((n_epoch + 2))" nocheck
doc=$(cat "$T/blob_hour/bz/web/$late_label/_CHECK")
/usr/bin/python3 -c 'import json, sys
d = json.loads(sys.argv[1]); n = int(sys.argv[2])
assert d["version"] == 2 and d["late_records"] == 2, d
assert len(d["files"]) == n + 1, (len(d["files"]), n)' "$doc" "$nfiles_before" ||
    fail "late records after a restart: unexpected _CHECK $doc"
verify_check_bytes "$T/blob_hour"
echo "restart: $nfiles_before read-back files + 1 late file, sizes match"
rm "$T/in_epoch/part-1.log" # the day run below reads the original input only
# The spring gap has no hour 02; the autumn fold's hour 02 holds two hours.
[ ! -e "$T/blob_hour/bz/web/2024033102" ] || fail "a unit for the missing hour"
grep -qx "2024102702 120" "$T/want_hour" || fail "expected a two-hour unit in the fold"

run day in_epoch epoch_s day
check day "$(cat "$T/n_epoch")"

run text in_text "%Y-%m-%d %H:%M:%S" hour
check text "$(cat "$T/n_text")"
echo "PASS sort_tz"
