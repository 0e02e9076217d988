#!/usr/bin/env bash
# durable.sh BUILD [ROUNDS=2] [CLIENTS=16] [SECONDS=5] [THREADS=CLIENTS] - what
# durability costs
# halleyd: bench_halley against the same private PostgreSQL started with the
# quickstart's durable settings (fsync, full_page_writes, synchronous_commit
# on) and with the test stack's fast ones (all off), alternating ROUNDS times
# in one run, then the median of each and their ratio, for TransitionInstance
# and GetTask, with the CPU time per transition of halleyd, PostgreSQL and
# the client (bench_halley's "cpu per call" line: independent of the load).
# THREADS below CLIENTS: that many client threads keep the CLIENTS calls in
# flight through call sets (bench_halley's third argument).
#
# Starts a PostgreSQL of its own through deploy/stack.sh (a temporary var dir
# and port base 16900, or ORRERY_BENCH_PORT_BASE) and stops it at the end.
# Not a ctest test: figures go to docs/benchmarks.md.
set -euo pipefail
BUILD=$(cd "${1:?usage: durable.sh BUILD [ROUNDS] [CLIENTS] [SECONDS] [THREADS]}" && pwd)
ROUNDS=${2:-2}
CLIENTS=${3:-16}
SECS=${4:-5}
THREADS=${5:-$CLIENTS}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
STACK=$ROOT/deploy/stack.sh
VAR=$(mktemp -d "${TMPDIR:-/tmp}/orrery-bench-durable.XXXXXX")
chmod 755 "$VAR"
export ORRERY_VAR_DIR=$VAR ORRERY_PORT_BASE=${ORRERY_BENCH_PORT_BASE:-16900} ORRERY_STACK=pg
cleanup() {
	"$STACK" stop >/dev/null 2>&1 || true
	rm -rf -- "$VAR"
}
trap cleanup EXIT

declare -A RATE=() P99=() GET=() CPU=()
run_mode() { # durable|fast
	local mode=$1 flag=1 out
	[[ $mode == fast ]] && flag=0
	"$STACK" stop >/dev/null 2>&1 || true
	ORRERY_STACK_DURABLE=$flag "$STACK" start >/dev/null
	eval "$("$STACK" env)"
	[[ $(psql -XAt "$ORRERY_PG_DSN" -c 'show fsync') == "$([[ $flag == 1 ]] && echo on || echo off)" ]] ||
		{
			echo "durable.sh: PostgreSQL did not start with the $mode settings" >&2
			exit 1
		}
	out=$("$BUILD/bin/bench_halley" "$CLIENTS" "$SECS" "$THREADS")
	# The TransitionInstance line: "TransitionInstance clients=16 ... rate=4650/s p50=..ms p99=7.00ms"
	local line
	line=$(grep -i 'transition' <<<"$out" | grep 'rate=' | tail -n 1)
	[[ -n $line ]] || {
		echo "durable.sh: no TransitionInstance line in: $out" >&2
		exit 1
	}
	echo "$mode: $line"
	local get cpu
	get=$(grep '^GetTask ' <<<"$out" | grep rate= | head -n 1)
	cpu=$(grep -i 'transition.*cpu per call' <<<"$out" | tail -n 1)
	echo "$mode: $get"
	echo "$mode: $cpu"
	# halleyd's combined statements and their mean size, where it counts them
	grep -i 'transition.*mean batch' <<<"$out" | sed "s/^/$mode: /" || true
	grep -i 'transition.*ctxsw per call' <<<"$out" | sed "s/^/$mode: /" || true
	GET[$mode]+="$(grep -oE 'rate=[0-9.]+' <<<"$get" | cut -d= -f2) "
	CPU[$mode]+="$(grep -oE 'postgres=[0-9.]+' <<<"$cpu" | cut -d= -f2) "
	RATE[$mode]+="$(grep -oE 'rate=[0-9.]+' <<<"$line" | cut -d= -f2) "
	P99[$mode]+="$(grep -oE 'p99=[0-9.]+' <<<"$line" | cut -d= -f2) "
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

for ((r = 1; r <= ROUNDS; r++)); do
	run_mode durable
	run_mode fast
done
d=$(median <<<"${RATE[durable]}")
f=$(median <<<"${RATE[fast]}")
printf '\nTransitionInstance, %d clients on %d threads, %d rounds (median):\n' "$CLIENTS" "$THREADS" "$ROUNDS"
printf '  durable (fsync on):  %s transitions/s, p99 %s ms\n' "$d" "$(median <<<"${P99[durable]}")"
printf '  fast (fsync off):    %s transitions/s, p99 %s ms\n' "$f" "$(median <<<"${P99[fast]}")"
awk -v d="$d" -v f="$f" 'BEGIN { printf "  durable / fast:      %.2f\n", d / f }'
printf '  PostgreSQL CPU per transition: durable %s us, fast %s us\n' \
	"$(median <<<"${CPU[durable]}")" "$(median <<<"${CPU[fast]}")"
printf 'GetTask (median): durable %s/s, fast %s/s\n' "$(median <<<"${GET[durable]}")" \
	"$(median <<<"${GET[fast]}")"
