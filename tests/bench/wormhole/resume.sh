#!/usr/bin/env bash
# What resume bookkeeping costs, and what a resume saves, on one generated
# PostgreSQL table (the one run.sh makes: bigint id, timestamptz, ~40-byte
# text, numeric(12,2), boolean; 10 million rows by default) moved to
# PostgreSQL as a split job (append mode):
#
#   1. the same job without and with bookkeeping (--from-scratch: one commit
#      and one record per split), alternating, ROUNDS times each; prints the
#      seconds of every run, the medians and the ratio with/without;
#   2. a run killed with SIGKILL once half the splits are committed (the
#      test-only hold knob stops the readers after SHARDS/2 splits, so the
#      kill lands at 50 % by construction), then the resumed run: its
#      seconds and rows read against the full run's.
#
#   eval "$(deploy/stack.sh env)"     # ORRERY_PG_DSN
#   tests/bench/wormhole/resume.sh [WORMHOLE_BINARY]
#
# Settings: WH_BENCH_ROWS (default 10000000), WH_BENCH_CHANNELS (default 2),
# WH_BENCH_SHARDS (default 32), WH_BENCH_ROUNDS (default 3), WH_BENCH_DIR
# (default /tmp/wh-bench), WH_BENCH_TIMEOUT (seconds per step, default 3600).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
WH=${1:-$ROOT/build/bin/wormhole}
ROWS=${WH_BENCH_ROWS:-10000000}
CH=${WH_BENCH_CHANNELS:-2}
SHARDS=${WH_BENCH_SHARDS:-32}
ROUNDS=${WH_BENCH_ROUNDS:-3}
DIR=${WH_BENCH_DIR:-/tmp/wh-bench}
TMO=${WH_BENCH_TIMEOUT:-3600}
: "${ORRERY_PG_DSN:?set ORRERY_PG_DSN (eval \"\$(deploy/stack.sh env)\")}"
[[ -x $WH ]] || { echo "no wormhole binary at $WH" >&2; exit 1; }
[[ $ROWS =~ ^[0-9]+$ && $ROWS -ge 1000 && $ROWS -le 100000000 ]] || { echo "WH_BENCH_ROWS must be 1000..100000000" >&2; exit 1; }
[[ $SHARDS =~ ^[0-9]+$ && $SHARDS -ge 4 ]] || { echo "WH_BENCH_SHARDS must be at least 4" >&2; exit 1; }
mkdir -p "$DIR"

pg() { PGOPTIONS=--client-min-messages=warning timeout "$TMO" psql "$ORRERY_PG_DSN" -X -q -v ON_ERROR_STOP=1 -At "$@"; }
say() { printf '== %s\n' "$*" >&2; }
field() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval('d' + sys.argv[2]))" "$@"; }
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

SRC=wh_bench_src DST=wh_bench_resume NAME=wh_bench_resume
have=-1
if [[ $(pg -c "SELECT to_regclass('$SRC') IS NOT NULL") == t ]]; then
	have=$(pg -c "SELECT count(*) FROM $SRC")
fi
if [[ $have != "$ROWS" ]]; then
	say "generating $ROWS rows in PostgreSQL"
	pg -c "DROP TABLE IF EXISTS $SRC"
	pg -c "CREATE TABLE $SRC (id bigint PRIMARY KEY, ts timestamptz NOT NULL, t text, n numeric(12,2), b boolean)"
	pg -c "INSERT INTO $SRC SELECT g, '2024-01-01'::timestamptz + g * interval '1 second',
	              md5(g::text) || to_hex(g), (g % 10000000) / 100.0, g % 3 = 0
	         FROM generate_series(1, $ROWS) g"
	pg -c "ANALYZE $SRC"
	rm -f "$DIR/src.csv" "$DIR/my.tsv"
fi
pg -c "DROP TABLE IF EXISTS $DST; CREATE TABLE $DST (LIKE $SRC)"
cat >"$DIR/resume.json" <<J
{"name":"$NAME","channels":$CH,"progress_interval_ms":0,
 "reader":{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"$SRC","split":{"key":"id","shards":$SHARDS}},
 "writers":[{"type":"postgres","dsn_env":"ORRERY_PG_DSN","table":"$DST"}]}
J

# one run into an emptied target; prints its seconds
timed() {
	pg -c "TRUNCATE $DST"
	timeout "$TMO" "$WH" run "$DIR/resume.json" "$@" >"$DIR/resume.out" 2>"$DIR/resume.err" ||
		{ cat "$DIR/resume.err" "$DIR/resume.out" >&2; exit 1; }
	[[ $(field "$DIR/resume.out" "['rows_read']") == "$ROWS" ]] || { echo "a run read $(field "$DIR/resume.out" "['rows_read']") rows, not $ROWS" >&2; exit 1; }
	field "$DIR/resume.out" "['seconds']"
}

say "bookkeeping cost: $ROUNDS rounds of (without, with), $ROWS rows, $SHARDS splits, $CH channels"
off=() on=()
for ((i = 1; i <= ROUNDS; i++)); do
	s=$(timed)
	off+=("$s")
	printf 'round %d without bookkeeping: %.2f s\n' "$i" "$s"
	s=$(timed --from-scratch)
	on+=("$s")
	printf 'round %d with bookkeeping:    %.2f s\n' "$i" "$s"
done
moff=$(median "${off[@]}")
mon=$(median "${on[@]}")
awk -v a="$moff" -v b="$mon" -v r="$ROWS" 'BEGIN {
	printf "median without: %.2f s (%.0f rows/s)\nmedian with:    %.2f s (%.0f rows/s)\nratio with/without: %.3f (cost %+.1f %%)\n",
		a, r / a, b, r / b, b / a, (b / a - 1) * 100 }'

say "kill -9 at 50 %, then --resume"
half=$((SHARDS / 2))
pg -c "TRUNCATE $DST"
WORMHOLE_TEST_HOLD_AFTER=$half WORMHOLE_TEST_HOLD_FILE=$DIR/never-created \
	"$WH" run "$DIR/resume.json" --from-scratch >/dev/null 2>"$DIR/killed.err" &
pid=$!
t0=$(date +%s.%N)
while :; do
	kill -0 "$pid" 2>/dev/null || { cat "$DIR/killed.err" >&2; echo "the held run ended by itself" >&2; exit 1; }
	n=$(pg -c "SELECT count(*) FROM orr_wh_splits WHERE job = '$NAME'")
	[[ $n -ge $half ]] && break
	sleep 0.2
done
t1=$(date +%s.%N)
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
committed=$(pg -c "SELECT sum(rows) FROM orr_wh_splits WHERE job = '$NAME'")
timeout "$TMO" "$WH" run "$DIR/resume.json" --resume >"$DIR/resume.out" 2>"$DIR/resume.err" ||
	{ cat "$DIR/resume.err" "$DIR/resume.out" >&2; exit 1; }
rs=$(field "$DIR/resume.out" "['seconds']")
rr=$(field "$DIR/resume.out" "['rows_read']")
sk=$(field "$DIR/resume.out" "['rows_skipped']")
same=$(pg -c "SELECT (SELECT count(*) FROM (SELECT * FROM $SRC EXCEPT ALL SELECT * FROM $DST) x) + (SELECT count(*) FROM (SELECT * FROM $DST EXCEPT ALL SELECT * FROM $SRC) y)")
awk -v t0="$t0" -v t1="$t1" -v c="$committed" -v rs="$rs" -v rr="$rr" -v sk="$sk" -v full="$mon" -v r="$ROWS" -v d="$same" 'BEGIN {
	printf "killed after %.1f s with %d rows committed (%.1f %%)\n", t1 - t0, c, 100 * c / r
	printf "resumed run: %.2f s, read %d rows, skipped %d (%.2f of a full run with bookkeeping)\n", rs, rr, sk, rs / full
	printf "rows differing between source and target after the resume: %d\n", d }'
pg -c "DROP TABLE $DST"
