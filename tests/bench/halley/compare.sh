#!/usr/bin/env bash
# compare.sh BEFORE_BUILD AFTER_BUILD [PAIRS=3] [CLIENTS=16] [SECONDS=5] -
# bench_halley of two builds (each build's bench_halley starts its own
# halleyd) against the running stack's PostgreSQL, alternating before, after
# PAIRS times in one run, so both see the same load. Prints each run's
# GetTask and TransitionInstance lines (rate, p50, p99, and the CPU per call
# of halleyd, the client and PostgreSQL, and where the build's bench_halley
# prints them its context switches per call), then the medians.
#
# Needs a stack: ORRERY_STACK=pg ORRERY_STACK_DURABLE=1 deploy/stack.sh start;
# eval "$(deploy/stack.sh env)" (ORRERY_VAR_DIR names it, for PostgreSQL's
# CPU). Bounded: each run is 2 x SECONDS of load plus set-up. Not a ctest
# test: figures go to docs/benchmarks.md.
#
# BEFORE_ENV / AFTER_ENV (optional, "K=V K=V"): settings for that side's
# halleyd, e.g. AFTER_ENV="ORRERY_HALLEY_TRANSITION_MIN_BATCH=4"; the same
# build may then stand on both sides. The mean batch (calls per combined
# statement) is printed where the build's halleyd reports it.
set -euo pipefail
A=$(cd "${1:?usage: compare.sh BEFORE_BUILD AFTER_BUILD [PAIRS] [CLIENTS] [SECONDS]}" && pwd)
B=$(cd "${2:?usage: compare.sh BEFORE_BUILD AFTER_BUILD [PAIRS] [CLIENTS] [SECONDS]}" && pwd)
PAIRS=${3:-3}
CLIENTS=${4:-16}
SECS=${5:-5}
: "${ORRERY_PG_DSN:?run inside a stack: eval \"\$(deploy/stack.sh env)\"}"
declare -A TR=() P99=() GT=() PGC=() HLC=() CLC=() GHC=() GCC=() MB=() HLX=() CLX=() PGX=()
declare -A SENV=([before]=${BEFORE_ENV:-} [after]=${AFTER_ENV:-})
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { grep -oE "$1=[0-9.]+" | head -n 1 | cut -d= -f2; }
printf 'fsync=%s, %d clients, %d s per phase, load %s\n' "$(psql -XAt "$ORRERY_PG_DSN" -c 'show fsync')" \
	"$CLIENTS" "$SECS" "$(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= PAIRS; r++)); do
	for side in before after; do
		build=$A
		[[ $side == after ]] && build=$B
		# shellcheck disable=SC2086 # SENV holds K=V words
		out=$(env ${SENV[$side]} "$build/bin/bench_halley" "$CLIENTS" "$SECS" 2>/dev/null)
		tl=$(grep '^TransitionInstance' <<<"$out" | grep 'rate=')
		tc=$(grep '^TransitionInstance' <<<"$out" | grep 'cpu per call')
		gl=$(grep '^GetTask' <<<"$out" | grep 'rate=')
		gc=$(grep '^GetTask' <<<"$out" | grep 'cpu per call')
		tb=$(grep '^TransitionInstance' <<<"$out" | grep 'mean batch' || true)
		tx=$(grep '^TransitionInstance' <<<"$out" | grep 'ctxsw per call' || true)
		printf '%-6s %s\n%-6s %s\n%-6s %s\n%-6s %s\n' "$side" "$gl" "$side" "$gc" "$side" "$tl" "$side" "$tc"
		[[ -z $tb ]] || printf '%-6s %s\n' "$side" "$tb"
		[[ -z $tx ]] || printf '%-6s %s\n' "$side" "$tx"
		HLX[$side]+="$(field halleyd <<<"$tx" || true) "
		CLX[$side]+="$(field client <<<"$tx" || true) "
		PGX[$side]+="$(field postgres <<<"$tx" || true) "
		MB[$side]+="$(grep -oE 'batch=[0-9.]+' <<<"$tb" | cut -d= -f2 || true) "
		TR[$side]+="$(field rate <<<"$tl") "
		P99[$side]+="$(field p99 <<<"$tl") "
		PGC[$side]+="$(field postgres <<<"$tc") "
		HLC[$side]+="$(field halleyd <<<"$tc") "
		CLC[$side]+="$(field client <<<"$tc") "
		GT[$side]+="$(field rate <<<"$gl") "
		GHC[$side]+="$(field halleyd <<<"$gc") "
		GCC[$side]+="$(field client <<<"$gc") "
	done
done
printf '\nmedians of %d runs each (load now %s):\n' "$PAIRS" "$(cut -d' ' -f1-3 /proc/loadavg)"
for side in before after; do
	printf '%-6s TransitionInstance %s/s p99 %s ms, mean batch %s, cpu/call postgres %s us halleyd %s us client %s us; GetTask %s/s, cpu/call halleyd %s us client %s us\n' \
		"$side" "$(median <<<"${TR[$side]}")" "$(median <<<"${P99[$side]}")" "$(median <<<"${MB[$side]}")" \
		"$(median <<<"${PGC[$side]}")" "$(median <<<"${HLC[$side]}")" "$(median <<<"${CLC[$side]}")" \
		"$(median <<<"${GT[$side]}")" "$(median <<<"${GHC[$side]}")" "$(median <<<"${GCC[$side]}")"
	[[ -z ${HLX[$side]// /} ]] ||
		printf '%-6s TransitionInstance context switches per call: halleyd %s client %s postgres %s\n' "$side" \
			"$(median <<<"${HLX[$side]}")" "$(median <<<"${CLX[$side]}")" "$(median <<<"${PGX[$side]}")"
done
