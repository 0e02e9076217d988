# waiter.sh - sourced by the sort benchmarks that watch Redis for the end
# of a run. pick_waiter XADD...: prints the first of these sort_xadd
# binaries that has --wait (an older build's answers "unknown option" with
# status 2), or fails saying so: an A/B run against a build older than
# --wait takes the waiter from the newer build.
pick_waiter() {
    local x rc
    for x in "$@"; do
        [ -x "$x" ] || continue
        rc=0
        "$x" --redis 127.0.0.1:1 --key none --wait none --seconds 0.01 >/dev/null 2>&1 || rc=$?
        [ "$rc" = 2 ] || { echo "$x"; return 0; }
    done
    echo "no sort_xadd with --wait among: $* (build sort_xadd from this tree)" >&2
    return 1
}
