#!/bin/sh
# keplerd_cron_next.sh KEPLERD - runs the real `keplerd cron-next` binary:
# fire times on stdout (one ISO-8601 UTC line each), exit 2 with the bad
# field named on stderr, exit 1 when an expression runs out of fire times,
# and the common --print-config / usage behaviour.
set -u
K=${1:?usage: keplerd_cron_next.sh path/to/keplerd}
failures=0
errfile=$(mktemp) || exit 1
trap 'rm -f "$errfile"' EXIT

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect_out WANT ARGS... : exit 0 and stdout exactly WANT (lines joined by \n)
expect_out() {
    want=$1
    shift
    got=$("$K" "$@" 2>"$errfile")
    rc=$?
    if [ $rc -ne 0 ]; then
        fail "keplerd $*: exit $rc: $(cat "$errfile")"
    elif [ "$got" != "$(printf '%b' "$want")" ]; then
        fail "keplerd $*: got [$got] want [$(printf '%b' "$want")]"
    fi
}

# expect_err RC SUBSTRING ARGS... : exit RC and stderr containing SUBSTRING
expect_err() {
    want_rc=$1
    want_msg=$2
    shift 2
    err=$("$K" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne "$want_rc" ]; then
        fail "keplerd $*: exit $rc, want $want_rc ($err)"
    fi
    case $err in
    *"$want_msg"*) ;;
    *) fail "keplerd $*: stderr [$err] lacks [$want_msg]" ;;
    esac
}

expect_out '2026-03-29T01:00:00Z\n2026-03-30T00:30:00Z\n2026-03-31T00:30:00Z' \
    cron-next '0 30 2 * * ?' --tz Europe/Berlin --from 2026-03-28T12:00:00Z --count 3
expect_out '2026-10-25T00:30:00Z\n2026-10-26T01:30:00Z' \
    cron-next '0 30 2 * * ?' --tz=Europe/Berlin --from=2026-10-24T12:00:00Z --count=2
# the start with an offset, and without a zone (UTC)
expect_out '2026-03-29T01:00:00Z' \
    cron-next '0 0 * * * ?' --tz Europe/Berlin --from 2026-03-29T02:30:00+02:00
expect_out '2026-03-29T01:00:00Z' \
    cron-next '0 0 * * * ?' --tz Europe/Berlin --from 2026-03-29T00:30:00
expect_out '2026-03-08T07:00:00Z\n2026-03-09T06:30:00Z' \
    cron-next '30 2 * * *' --tz America/New_York --from 2026-03-07T12:00:00Z --count 2
# default zone UTC, default count 1, options before the expression
expect_out '2028-02-29T00:00:00Z' cron-next --from 2026-01-01T00:00:00Z '0 0 0 29 2 ?'
# the default zone comes from the configuration ([kepler] timezone)
got=$(env ORRERY_KEPLER_TIMEZONE=Europe/Berlin "$K" cron-next '0 0 12 * * ?' \
    --from 2026-01-01T00:00:00Z)
[ "$got" = "2026-01-01T11:00:00Z" ] || fail "[kepler] timezone ignored: [$got]"
# 10000 lines, all increasing
n=$("$K" cron-next '*/7 * * * * ?' --from 2026-01-01T00:00:00Z --count 10000 | sort -u | wc -l)
[ "$n" -eq 10000 ] || fail "count 10000 gave $n distinct lines"


# --calendar: an .ics file (its days excluded, Monday to Friday) or JSON
caldir=$(mktemp -d) || exit 1
trap 'rm -f "$errfile"; rm -rf "$caldir"' EXIT
printf 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20261225\r\nSUMMARY:Christmas\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n' >"$caldir/h.ics"
printf '{"timezone":"Europe/Berlin","weekdays":[1,2,3,4,5],"days":[{"day":"2026-12-25","kind":"excluded"},{"day":"2026-12-27","kind":"included"}]}' >"$caldir/c.json"
printf 'BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:2026-12-25\nEND:VEVENT\nEND:VCALENDAR\n' >"$caldir/bad.ics"
expect_out '2026-12-24T06:00:00Z\n2026-12-28T06:00:00Z' \
    cron-next '0 6 * * *' --from 2026-12-23T12:00:00Z --count 2 --calendar "$caldir/h.ics"
expect_out '2026-12-24T06:00:00Z\n2026-12-28T06:00:00Z\n2026-12-29T06:00:00Z' \
    cron-next '0 6 * * *' --from 2026-12-23T12:00:00Z --count 3 --calendar "$caldir/h.ics" \
    --policy next
# previous: Friday 25th to Sunday 27th all move onto Thursday's own fire time
expect_out '2026-12-24T06:00:00Z\n2026-12-28T06:00:00Z' \
    cron-next '0 6 * * *' --from 2026-12-23T12:00:00Z --count 2 --calendar "$caldir/h.ics" \
    --policy=previous
# JSON in Berlin: Saturday's weekly run moves to Monday, or to Sunday the
# 27th, included
expect_out '2026-12-21T08:00:00Z\n2026-12-27T08:00:00Z\n2027-01-04T08:00:00Z' \
    cron-next '0 9 * * SAT' --tz Europe/Berlin --from 2026-12-20T00:00:00Z --count 3 \
    --calendar "$caldir/c.json" --policy next
expect_err 2 'keplerd: cron-next: body: line 3: DTSTART' \
    cron-next '0 6 * * *' --calendar "$caldir/bad.ics"
expect_err 2 'keplerd: cron-next: policy: "later": must be skip, next or previous' \
    cron-next '0 6 * * *' --calendar "$caldir/h.ics" --policy later
expect_err 2 'keplerd: cron-next: calendar:' cron-next '0 6 * * *' --calendar "$caldir/none"

expect_err 2 'keplerd: cron-next: day-of-month: "32" out of range 1-31' \
    cron-next '0 0 0 32 * ?'
expect_err 2 'keplerd: cron-next: minute: step "0" in "*/0" out of range 1-60' \
    cron-next '0 */0 * * * ?'
expect_err 2 'keplerd: cron-next: day-of-week: "5#6"' cron-next '0 0 0 ? * 5#6'
expect_err 2 'keplerd: cron-next: expression: expected 5 fields' cron-next '* * *'
expect_err 2 'keplerd: cron-next: timezone: unknown time zone "Mars/Olympus"' \
    cron-next '0 0 * * *' --tz Mars/Olympus
expect_err 2 'keplerd: cron-next: timezone: invalid time zone name "../../etc/passwd"' \
    cron-next '0 0 * * *' --tz ../../etc/passwd
expect_err 2 'keplerd: cron-next: from: "yesterday" is not an ISO-8601' \
    cron-next '0 0 * * *' --from yesterday
expect_err 2 'keplerd: cron-next: count: must be an integer 1-10000' \
    cron-next '0 0 * * *' --count 0
expect_err 2 'keplerd: cron-next: count: must be an integer 1-10000' \
    cron-next '0 0 * * *' --count 10001
expect_err 2 'keplerd: cron-next: --tz needs a value' cron-next '0 0 * * *' --tz
expect_err 2 'keplerd: cron-next: unknown option "--bogus"' cron-next '0 0 * * *' --bogus
expect_err 2 'keplerd: cron-next: missing cron expression' cron-next
expect_err 2 'unexpected argument "0"' cron-next 0 0 12 '*' '*' '?'
# valid but never (or no longer) firing: what exists is printed, then exit 1
expect_err 1 'no fire time before the end of 2199' cron-next '0 0 0 30 2 ?'
got=$("$K" cron-next '0 0 0 1 1 ? 2030,2031' --from 2026-01-01T00:00:00Z --count 3 2>/dev/null)
[ "$got" = "$(printf '2030-01-01T00:00:00Z\n2031-01-01T00:00:00Z')" ] || fail "partial list: [$got]"
# no command / unknown command: usage, exit 2; --print-config works
expect_err 2 'usage: keplerd'
expect_err 2 'unknown command "orbit"' orbit
out=$("$K" --print-config) || fail "--print-config exit $?"
case $out in *'[kepler]'*'timezone = UTC'*) ;; *) fail "--print-config: [$out]" ;; esac
"$K" --help | grep -q 'cron-next EXPR' || fail "--help lacks cron-next"

if [ $failures -ne 0 ]; then
    echo "$failures failure(s)" >&2
    exit 1
fi
echo "keplerd cron-next: all checks passed"
