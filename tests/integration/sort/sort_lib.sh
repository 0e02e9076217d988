# sort_lib.sh - helpers shared by sortd's integration test scripts (sourced).
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
