#!/usr/bin/env bash
# sort_webhdfs.sh SORTD BLOB_TEST SORT_GEN - the webhdfs:// blob store against
# the WebHDFS protocol stand-in (../lib/webhdfs_standin.py: a loopback namenode +
# datanode speaking the REST subset; it is not HDFS).
#
# 1. webhdfs_blob_test: the orr_blob.h contract with injected failures.
# 2. sortd end to end: the file source lands into webhdfs://; every record
#    lands once in lzop files, the _CHECK totals add up and their byte
#    counts are the file sizes (also after a restart that reads the files
#    back and amends a unit with late records), no temporary stays, and every
#    request carried the configured user.name.
set -euo pipefail
SORTD=$1 BLOB_TEST=$2 SORT_GEN=$3
. "$(dirname "$0")/sort_lib.sh"

T=$(mktemp -d /tmp/sort-webhdfs.XXXXXX)
SPID=
cleanup() {
    [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/hdfs" "$T/work" "$T/in"
/usr/bin/python3 "$(dirname "$0")/../lib/webhdfs_standin.py" "$T/hdfs" "$T/ports" &
SPID=$!
standin_up() {
    alive "$SPID" || fail "the WebHDFS stand-in exited"
    [ -s "$T/ports" ]
}
wait_until "the WebHDFS stand-in to start" standin_up
read -r NN _ <"$T/ports"

"$BLOB_TEST" "$NN" "$T/hdfs" "$T/work" || fail "blob contract"

N=20000
"$SORT_GEN" --out "$T/in" --records "$N" --files 2 --ifaces 2 --span 10800 >/dev/null ||
    fail "sort_gen failed"
cat >"$T/spec.json" <<JSON
{"name": "wh", "business": "bz",
 "source": {"type": "file", "path": "$T/in", "exit_at_eof": true},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s"},
 "bucket": "hour",
 "output": {"roll_age_ms": 300},
 "check": {"clock": "data", "grace_ms": 0}}
JSON
ORRERY_LOG_LEVEL=warn ORRERY_SORT_WORK_DIR=$T/swork ORRERY_SORT_STATE_DIR=$T/sstate \
    ORRERY_SORT_BLOB_ROOT="webhdfs://orrsort@127.0.0.1:$NN/orrery/blob" \
    "$SORTD" run --stream "$T/spec.json" >"$T/out" 2>"$T/err" ||
    fail "sortd failed: $(cat "$T/err")"
verify_landed "$T/hdfs/orrery/blob" "$N"
[ -z "$(find "$T/hdfs" -name '.tmp-*')" ] || fail "temporaries left: $(find "$T/hdfs" -name '.tmp-*')"
[ -n "$(find "$T/hdfs/orrery/blob/bz" -name _CHECK)" ] || fail "no _CHECK landed"
verify_check_bytes "$T/hdfs/orrery/blob"
# Restart with two late records of the first closed hour: the landed files
# are read back (sizes from LISTSTATUS) and the unit's next _CHECK lists
# them with the new file, every size right.
label=$(cd "$T/hdfs/orrery/blob/bz" && find . -name _CHECK | sort | head -n1 | cut -d/ -f2-3)
late_ts=$(/usr/bin/python3 -c 'import calendar, sys, time
print(calendar.timegm(time.strptime(sys.argv[1], "%Y%m%d%H")) + 60)' "${label#*/}")
iface=${label%%/*}
printf '%d|%d|%s|u|h|GET|/p|200|1|ua\n%d|%d|%s|u|h|GET|/p|200|1|ua\n' \
    "$N" "$late_ts" "$iface" "$((N + 1))" "$late_ts" "$iface" >"$T/in/zz-late.log"
ORRERY_LOG_LEVEL=warn ORRERY_SORT_WORK_DIR=$T/swork ORRERY_SORT_STATE_DIR=$T/sstate \
    ORRERY_SORT_BLOB_ROOT="webhdfs://orrsort@127.0.0.1:$NN/orrery/blob" \
    "$SORTD" run --stream "$T/spec.json" >"$T/out2" 2>"$T/err2" ||
    fail "sortd restart failed: $(cat "$T/err2")"
verify_landed "$T/hdfs/orrery/blob" "$((N + 2))" nocheck
grep -q '"version":2,' "$T/hdfs/orrery/blob/bz/$label/_CHECK" ||
    fail "no amended _CHECK: $(cat "$T/hdfs/orrery/blob/bz/$label/_CHECK")"
verify_check_bytes "$T/hdfs/orrery/blob"
users=$(curl -s "http://127.0.0.1:$NN/ctl?stats=1")
echo "stand-in requests: $users"
echo "$users" | grep -q '"orrsort"' || fail "user.name orrsort never sent"
echo "PASS sort_webhdfs"
