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
