#!/usr/bin/env bash
# run.sh - Orrery's lzop writer against the lzop tool on the same bytes.
#
#   tests/bench/lzop/run.sh [path/to/bench_lzop]     (default: build/bin/bench_lzop)
#   MB=200 RUNS=3 tests/bench/lzop/run.sh
#
# Generates ~MB megabytes of delimited text records (about 200 bytes, 10
# tab-separated fields each), then times, best of RUNS:
#   ours      bench_lzop in out            (LZO1X-1, 256 KiB blocks, Adler-32)
#   lzop -1   lzop -1 -c in > out          (LZO1X-1(15): lzop's -1 method)
#   lzop -3   lzop -3 -c in > out          (LZO1X-1: the method ours uses)
# and prints MB/s (10^6 input bytes per second), compressed/input ratio and
# peak RSS (from /usr/bin/time). Every output is checked with `lzop -t`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
bench="${1:-$repo/build/bin/bench_lzop}"
mb="${MB:-200}"
runs="${RUNS:-3}"
lzop_bin="$(command -v lzop || true)"
timebin=/usr/bin/time

[[ -x "$bench" ]] || { echo "bench_lzop not found at $bench (build it first)" >&2; exit 2; }
[[ -n "$lzop_bin" ]] || { echo "lzop is not installed (Debian package lzop)" >&2; exit 2; }
[[ -x "$timebin" ]] || { echo "$timebin is missing (Debian package time)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/orr_bench_lzop.XXXXXX")"
trap 'rm -rf "$work"' EXIT

records=$(( mb * 1000 * 1000 / 200 ))
echo "generating $records records (~${mb} MB) ..."
awk -v n="$records" 'BEGIN {
    srand(42)
    split("GET|POST|PUT|DELETE|HEAD", verb, "|")
    split("ok|retry|timeout|denied|moved", state, "|")
    split("Mozilla/5.0 (X11; Linux x86_64)|curl/7.88.1|okhttp/4.9.3|python-requests/2.28.1|Go-http-client/1.1", ua, "|")
    for (i = 0; i < n; i++) {
        printf "%d\t2026-11-30T%02d:%02d:%02d.%03dZ\tuser%06d\t10.%d.%d.%d\t%s\t/api/v2/catalog/items/%d/detail?ref=%d&campaign=sale-%d&src=web&lang=en-US\t%s\t%d\t%s\tsess-%08x%08x\n",
            1000000 + i, int(rand() * 24), int(rand() * 60), int(rand() * 60), int(rand() * 1000),
            int(rand() * 200000), int(rand() * 256), int(rand() * 256), int(rand() * 256),
            verb[1 + int(rand() * 5)], int(rand() * 1000000), int(rand() * 100), int(rand() * 50),
            state[1 + int(rand() * 5)], int(rand() * 65536), ua[1 + int(rand() * 5)],
            int(rand() * 4294967295), int(rand() * 4294967295)
    }
}' > "$work/in.txt"
in_bytes=$(stat -c %s "$work/in.txt")
lines=$(wc -l < "$work/in.txt")
echo "input: $in_bytes bytes, $lines records, $(( in_bytes / lines )) bytes/record, 10 fields"

names=(ours lzop-1 lzop-3)
declare -A cmd best_wall best_cpu rss
cmd[ours]="\"$bench\" \"$work/in.txt\" \"$work/ours.lzo\" > /dev/null"
cmd[lzop-1]="\"$lzop_bin\" -1 -c \"$work/in.txt\" > \"$work/lzop-1.lzo\""
cmd[lzop-3]="\"$lzop_bin\" -3 -c \"$work/in.txt\" > \"$work/lzop-3.lzo\""

# Rounds interleave the three so that a busy machine hurts each alike; the
# best wall time and the best CPU time (user + system) of each are kept.
for ((r = 0; r < runs; r++)); do
    for name in "${names[@]}"; do
        rm -f "$work/$name.lzo"
        t0=$(date +%s%N)
        "$timebin" -f '%U %S %M' -o "$work/time.txt" sh -c "${cmd[$name]}"
        t1=$(date +%s%N)
        read -r user sys maxrss < <(tail -n 1 "$work/time.txt")
        wall=$(( t1 - t0 ))
        cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%d", (u + s) * 1e9 }')
        if [[ -z "${best_wall[$name]:-}" ]] || (( wall < best_wall[$name] )); then
            best_wall[$name]=$wall
        fi
        if [[ -z "${best_cpu[$name]:-}" ]] || (( cpu < best_cpu[$name] )); then
            best_cpu[$name]=$cpu
        fi
        if [[ -z "${rss[$name]:-}" ]] || (( maxrss > rss[$name] )); then
            rss[$name]=$maxrss
        fi
    done
done

printf "%-8s %12s %12s %8s %14s\n" tool "wall MB/s" "CPU MB/s" ratio "peak RSS MB"
for name in "${names[@]}"; do
    "$lzop_bin" -t -q "$work/$name.lzo"
    out_bytes=$(stat -c %s "$work/$name.lzo")
    awk -v name="$name" -v w="${best_wall[$name]}" -v c="${best_cpu[$name]}" -v inb="$in_bytes" \
        -v outb="$out_bytes" -v rss="${rss[$name]}" \
        'BEGIN { printf "%-8s %12.1f %12.1f %8.4f %14.1f\n", name, inb / 1e6 / (w / 1e9),
                 (c > 0 ? inb / 1e6 / (c / 1e9) : 0), outb / inb, rss / 1024 }'
done

# the same bytes come back
"$lzop_bin" -dc "$work/ours.lzo" | cmp -s - "$work/in.txt" || { echo "ours: round trip differs" >&2; exit 1; }

awk -v a="${best_wall[ours]}" -v b="${best_wall[lzop-1]}" -v c="${best_wall[lzop-3]}" \
    -v ca="${best_cpu[ours]}" -v cb="${best_cpu[lzop-1]}" -v cc="${best_cpu[lzop-3]}" \
    'BEGIN { printf "speed of ours (wall): %.2fx lzop -1, %.2fx lzop -3\n", b / a, c / a
             if (ca > 0) printf "speed of ours (CPU):  %.2fx lzop -1, %.2fx lzop -3\n", cb / ca, cc / ca }'
