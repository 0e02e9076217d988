#!/usr/bin/env bash
# tests/bench/sort/floor.sh DIR - the floor under sortd's CPU on the input
# files in DIR (made as tests/bench/sort/run.sh makes them: build/bin/sort_gen
# --out DIR --records N --files 20 --ifaces 250 --span 14400): read + framing
# alone, read + framing + LZO1X-1(15) compression alone (and LZO1X-1, the
# method sortd used before), the files and folders of 1,000 landed units
# alone, and lzop -1 on the same bytes, ROUNDS times (default 3). CPU
# seconds from getrusage / time(1); see floor.c.
set -euo pipefail
DIR=${1:?input dir}
ROUNDS=${ROUNDS:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
cc -O2 -o "$BIN/floor" "$HERE/floor.c" -llzo2
cat "$DIR"/* >/dev/null
for i in $(seq 1 "$ROUNDS"); do
    echo "round $i (load $(cut -d' ' -f1 /proc/loadavg))"
    "$BIN/floor" read "$DIR"/*
    "$BIN/floor" lzo "$DIR"/*
    "$BIN/floor" lzo1 "$DIR"/*
    rm -rf "$BIN/tree"
    "$BIN/floor" tree "$BIN/tree"
    /usr/bin/time -f "lzop   -1: CPU %U + %S s" lzop -1 -c "$DIR"/* >/dev/null
done
