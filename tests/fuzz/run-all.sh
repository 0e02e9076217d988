#!/usr/bin/env bash
# tests/fuzz/run-all.sh - fuzz every libFuzzer target of Orrery for a while.
#
#   tests/fuzz/run-all.sh SECONDS [TARGET...]
#
# Configures the fuzz build (clang, -DORR_FUZZ=ON: libFuzzer with
# AddressSanitizer and UndefinedBehaviorSanitizer) if it is missing, builds
# the targets asked for (default: every target the build lists), then runs
# them one after another, one worker each, for SECONDS each. The checked-in
# seed corpus of a target is read, never written: new corpus entries go to
# the work folder, crash / leak / timeout / out-of-memory inputs to the
# findings folder. Ends with a summary table; exits 1 if anything was found
# (or a target did not build: the others still run).
# Not part of CI: a tool for a person, on an otherwise quiet machine.
#
# Environment:
#   ORR_FUZZ_BUILD     build folder (default <repo>/build-fuzz)
#   ORR_FUZZ_WORK      work folder (default <build>/fuzz-work): <target>/ holds
#                      the new corpus entries, <target>.log libFuzzer's output
#   ORR_FUZZ_FINDINGS  findings folder (default <build>/fuzz-findings):
#                      <target>/crash-*, leak-*, timeout-*, oom-*
#   ORR_FUZZ_TIMEOUT   seconds one input may take before it is a finding (10)
#   ORR_FUZZ_JOBS      parallel compile jobs for the build (2)
#
# To keep what a run found, merge it into the seed corpus (only inputs that
# reach new edges are copied), e.g.:
#   build-fuzz/bin/fuzz_cron -merge=1 -use_counters=0 tests/fuzz/lib/corpus_cron \
#       build-fuzz/fuzz-work/fuzz_cron
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

usage() {
    echo "usage: $0 SECONDS [TARGET...]" >&2
    exit 2
}

[ $# -ge 1 ] || usage
SECS=$1
shift
case $SECS in
'' | *[!0-9]*) usage ;;
esac
[ "$SECS" -gt 0 ] || usage

BUILD=${ORR_FUZZ_BUILD:-$ROOT/build-fuzz}
WORK=${ORR_FUZZ_WORK:-$BUILD/fuzz-work}
FINDINGS=${ORR_FUZZ_FINDINGS:-$BUILD/fuzz-findings}
TIMEOUT=${ORR_FUZZ_TIMEOUT:-10}
JOBS=${ORR_FUZZ_JOBS:-2}
MANIFEST=$BUILD/fuzz-targets.txt

# Configure when the build is missing or predates the target list.
if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q '^ORR_FUZZ:BOOL=ON$' "$BUILD/CMakeCache.txt"; then
    echo "$BUILD is not a fuzz build (ORR_FUZZ is not ON); set ORR_FUZZ_BUILD" >&2
    exit 2
fi
# A fuzz build made before Orrery had a C++ file may name g++: start it anew.
if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++' "$BUILD/CMakeCache.txt"; then
    echo "$BUILD has no clang++ as its C++ compiler: remove it and run again" >&2
    exit 2
fi
if [ ! -f "$BUILD/CMakeCache.txt" ] || [ ! -f "$MANIFEST" ]; then
    echo "== configuring $BUILD (clang, ORR_FUZZ=ON)"
    CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S "$ROOT" -B "$BUILD" -DORR_FUZZ=ON >"$BUILD.configure.log" 2>&1 || {
        cat "$BUILD.configure.log" >&2
        exit 1
    }
    rm -f "$BUILD.configure.log"
fi

declare -A SEEDS=()
ALL=()
while IFS=$'\t' read -r name corpus; do
    [ -n "$name" ] || continue
    SEEDS[$name]=$corpus
    ALL+=("$name")
done <"$MANIFEST"

if [ $# -gt 0 ]; then
    TARGETS=("$@")
else
    TARGETS=("${ALL[@]}")
fi
for t in "${TARGETS[@]}"; do
    if [ -z "${SEEDS[$t]:-}" ]; then
        echo "unknown fuzz target: $t (known: ${ALL[*]})" >&2
        exit 2
    fi
done

mkdir -p "$WORK" "$FINDINGS"
ROWS=()
FOUND=0
FORMAT='%-22s %6s %12s %9s %8s %9s %4s'
for t in "${TARGETS[@]}"; do
    # One target at a time, so a library that does not build only costs
    # the targets that link it.
    echo "== building $t"
    if ! cmake --build "$BUILD" -j "$JOBS" --target "$t" >"$WORK/$t.build.log" 2>&1; then
        grep -m3 -E 'error|Error' "$WORK/$t.build.log" >&2 || true
        echo "   build failed, see $WORK/$t.build.log" >&2
        FOUND=1
        ROWS+=("$(printf "$FORMAT" "$t" - - - - 'no build' -)")
        continue
    fi
    mkdir -p "$WORK/$t" "$FINDINGS/$t"
    log=$WORK/$t.log
    had=$(find "$FINDINGS/$t" -type f | wc -l)
    echo "== $t: ${SECS}s"
    start=$SECONDS
    rc=0
    "$BUILD/bin/$t" -max_total_time="$SECS" -timeout="$TIMEOUT" -print_final_stats=1 \
        -artifact_prefix="$FINDINGS/$t/" "$WORK/$t" "${SEEDS[$t]}" >"$log" 2>&1 || rc=$?
    took=$((SECONDS - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
    units=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
    corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' "$log" | tail -1)
    found=$(($(find "$FINDINGS/$t" -type f | wc -l) - had))
    if [ "$found" -gt 0 ] || { [ "$rc" -ne 0 ] && ! grep -q '^Done ' "$log"; }; then
        FOUND=1
        grep -m1 -E '^==[0-9]+== ?ERROR|runtime error|^INFO: Deadly|ALARM|out-of-memory' "$log" >&2 || true
        echo "   see $log" >&2
    fi
    ROWS+=("$(printf "$FORMAT" "$t" "$took" "${execs:-?}" "${units:-?}" "${corp:-?}" "$found" \
        "$rc")")
done

echo
printf "$FORMAT\n" target secs execs new_units corpus findings rc
printf '%s\n' "${ROWS[@]}"
echo "new corpus entries: $WORK/<target>/   findings: $FINDINGS/<target>/"
exit $FOUND
