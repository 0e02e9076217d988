/*
 * orr_deadline.c - parsing and resolving task deadlines (orr_deadline.h).
 *
 * Resolving a clock time: the schedule time's local wall time gives the
 * local day; the clock time on that day, or on the next one when it is
 * earlier than the schedule's wall time, is mapped back to UTC through the
 * zone (orr_tz_local_to_utc), so "07:30" in Europe/Berlin is 05:30 UTC in
 * summer and 06:30 UTC in winter.
 */
#include "orr_deadline.h"

#include <stdlib.h>
#include <string.h>

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

orr_status orr_deadline_parse(const char *s, const char *field, orr_deadline *out, orr_err *err)
{
    out->kind = ORR_DL_NONE;
    out->ms = 0;
    if (!s || !*s)
        return orr_err_set(err, ORR_EINVAL, field,
                           "is empty: a duration (\"30m\") or a clock "
                           "time (\"06:00\")");
    size_t n = strlen(s);
    if (n == 5 && s[2] == ':') {
        int ok = 1;
        for (int i = 0; i < 5; i++)
            if (i != 2 && (s[i] < '0' || s[i] > '9'))
                ok = 0;
        int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');
        if (!ok || h > 23 || m > 59)
            return orr_err_set(err, ORR_EINVAL, field,
                               "\"%.16s\" is not a clock time (HH:MM, 00:00 to 23:59)", s);
        out->kind = ORR_DL_CLOCK;
        out->ms = ((int64_t)h * 60 + m) * 60000;
        return ORR_OK;
    }
    char *end;
    long long v = strtoll(s, &end, 10);
    int64_t mul = 0;
    if (end != s && s[0] >= '0' && s[0] <= '9' && v >= 0 && v <= 999999999) {
        if (strcmp(end, "ms") == 0)
            mul = 1;
        else if (strcmp(end, "s") == 0)
            mul = 1000;
        else if (strcmp(end, "m") == 0)
            mul = 60000;
        else if (strcmp(end, "h") == 0)
            mul = 3600000;
        else if (strcmp(end, "d") == 0)
            mul = 86400000;
    }
    if (!mul)
        return orr_err_set(err, ORR_EINVAL, field,
                           "\"%.16s\" is neither a duration (number + ms|s|m|h|d) nor a clock "
                           "time (HH:MM)",
                           s);
    int64_t ms = (int64_t)v * mul;
    if (ms <= 0)
        return orr_err_set(err, ORR_EINVAL, field, "must be after the schedule time (> 0)");
    if (ms > ORR_DEADLINE_MAX_MS)
        return orr_err_set(err, ORR_EINVAL, field, "at most 31d after the schedule time");
    out->kind = ORR_DL_AFTER;
    out->ms = ms;
    return ORR_OK;
}

int64_t orr_deadline_at(const orr_deadline *d, int64_t sched_ms, const orr_tz *tz)
{
    if (d->kind == ORR_DL_AFTER)
        return sched_ms + d->ms;
    if (d->kind != ORR_DL_CLOCK)
        return INT64_MAX;
    if (!tz)
        tz = orr_tz_utc();
    int64_t sched_s = floor_div(sched_ms, 1000);
    int64_t local = sched_s + orr_tz_offset(tz, sched_s);
    int64_t day = floor_div(local, 86400);
    int64_t want = day * 86400 + d->ms / 1000;
    for (int tries = 0; tries < 3; tries++, want += 86400) {
        if (want < local)
            continue;
        orr_tz_map m;
        orr_tz_local_to_utc(tz, want, &m);
        int64_t utc = m.n == 0 ? m.gap_end : m.utc[0];
        if (utc * 1000 >= sched_ms)
            return utc * 1000;
    }
    return sched_ms; /* unreachable for real zones */
}
