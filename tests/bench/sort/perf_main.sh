#!/usr/bin/env bash
# tests/bench/sort/perf_main.sh SORTD INPUT_DIR [OUT_DIR] - one sortd run over
# INPUT_DIR (files made by sort_gen, as for threads.sh) with run.sh's stream
# spec under `perf record -F 1999 -g`, printing the samples per thread and,
# of the pipeline thread (named sortd), the samples in each of the functions
# named in SORT_PERF_FUNCS (default: the unit lookup). Sample counts of one
# function compare two builds where wall and CPU seconds are too noisy (a
# loaded machine): run it for each build in turn, twice or more.
set -euo pipefail
SORTD=$1
IN=$2
T=${3:-/tmp/sort-perf}
FUNCS=${SORT_PERF_FUNCS:-sort_units_get sort_units_find sort_unit_hash __memcmp_evex_movbe}
rm -rf "$T/work" "$T/state" "$T/blob" "$T/perf.data"
mkdir -p "$T"
. "$(dirname "$0")/bench_spec.sh"
bench_spec "$IN" UTC true >"$T/spec.json"
ORRERY_SORT_WORK_DIR=$T/work ORRERY_SORT_STATE_DIR=$T/state ORRERY_SORT_BLOB_ROOT=file://$T/blob \
    ORRERY_LOG_LEVEL=warn timeout 600 perf record -q -F 1999 -g -o "$T/perf.data" \
    "$SORTD" run --stream "$T/spec.json" >"$T/sortd.out" 2>&1
echo "load $(cut -d' ' -f1 /proc/loadavg)"
perf report -i "$T/perf.data" --stdio -n --no-children --sort comm -g none 2>/dev/null |
    awk '/%/ { printf "  thread %-14s samples %7d\n", $3, $2 }'
perf report -i "$T/perf.data" --stdio -n --no-children --sort comm,sym -g none 2>/dev/null |
    awk -v funcs="$FUNCS" '
    BEGIN { n = split(funcs, f, " "); for (i = 1; i <= n; i++) want[f[i]] = 1 }
    /%/ && $3 == "sortd" && ($5 in want) { s[$5] += $2; tot += $2 }
    END { for (k in s) printf "  pipeline %-24s samples %7d\n", k, s[k];
          printf "  pipeline %-24s samples %7d\n", "(these together)", tot }'
