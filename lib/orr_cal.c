/*
 * orr_cal.c - business calendars and calendar-adjusted fire times (see
 * orr_cal.h).
 *
 * orr_cal_next walks business days D from the local date of `after` on. The
 * adjusted fire times that land on D are D's own cron fire times plus, with
 * "next", the wall times of the fire times of the non-business days right
 * before D (back to the previous business day) and, with "previous", those
 * of the non-business days right after D. All of them are wall times of D,
 * so the first D with a candidate after `after` holds the answer: the
 * smallest candidate there.
 */
#include "orr_cal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"

struct orr_cal {
    const orr_tz *tz;
    unsigned weekdays;
    size_t n, cap;
    int64_t *day;  /* sorted ascending */
    uint8_t *kind; /* orr_cal_kind per day */
};

orr_status orr_cal_new(const char *zone, unsigned weekdays, orr_cal **out, orr_err *err)
{
    *out = NULL;
    if (weekdays & ~0xfeu)
        return orr_err_set(err, ORR_EINVAL, "weekdays", "ISO weekdays are 1 (Monday) to 7");
    const orr_tz *tz = orr_tz_utc();
    if (zone && zone[0]) {
        orr_status s = orr_tz_load(zone, &tz, err);
        if (s != ORR_OK)
            return s;
    }
    orr_cal *c = orr_xcalloc(1, sizeof *c);
    c->tz = tz;
    c->weekdays = weekdays;
    *out = c;
    return ORR_OK;
}

void orr_cal_free(orr_cal *c)
{
    if (!c)
        return;
    free(c->day);
    free(c->kind);
    free(c);
}

/* Index of the first entry >= day. */
static size_t cal_find(const orr_cal *c, int64_t day)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (c->day[m] < day)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

orr_status orr_cal_set_day(orr_cal *c, int64_t day, orr_cal_kind kind, orr_err *err)
{
    size_t i = cal_find(c, day);
    int found = i < c->n && c->day[i] == day;
    if (kind == ORR_CAL_NONE) {
        if (found) {
            memmove(c->day + i, c->day + i + 1, (c->n - i - 1) * sizeof *c->day);
            memmove(c->kind + i, c->kind + i + 1, (c->n - i - 1) * sizeof *c->kind);
            c->n--;
        }
        return ORR_OK;
    }
    if (found) {
        c->kind[i] = (uint8_t)kind;
        return ORR_OK;
    }
    if (c->n >= ORR_CAL_MAX_DAYS)
        return orr_err_set(err, ORR_EINVAL, "days", "at most %d dated days", ORR_CAL_MAX_DAYS);
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->day = orr_xrealloc(c->day, c->cap * sizeof *c->day);
        c->kind = orr_xrealloc(c->kind, c->cap * sizeof *c->kind);
    }
    memmove(c->day + i + 1, c->day + i, (c->n - i) * sizeof *c->day);
    memmove(c->kind + i + 1, c->kind + i, (c->n - i) * sizeof *c->kind);
    c->day[i] = day;
    c->kind[i] = (uint8_t)kind;
    c->n++;
    return ORR_OK;
}

orr_cal_kind orr_cal_day_kind(const orr_cal *c, int64_t day)
{
    size_t i = cal_find(c, day);
    return i < c->n && c->day[i] == day ? (orr_cal_kind)c->kind[i] : ORR_CAL_NONE;
}

int orr_cal_is_business_day(const orr_cal *c, int64_t day)
{
    orr_cal_kind k = orr_cal_day_kind(c, day);
    if (k != ORR_CAL_NONE)
        return k == ORR_CAL_INCLUDED;
    int wd = orr_tz_weekday(day); /* 0 = Sunday */
    int iso = wd == 0 ? 7 : wd;
    return (c->weekdays >> iso) & 1u;
}

const orr_tz *orr_cal_tz(const orr_cal *c)
{
    return c->tz;
}

unsigned orr_cal_weekdays(const orr_cal *c)
{
    return c->weekdays;
}

/* ------------------------------------------------------------ text forms */

orr_status orr_cal_parse_date(const char *s, int64_t *day, orr_err *err)
{
    int y, m, d;
    char tail;
    if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-' ||
        sscanf(s, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3 || y < 1 || m < 1 || m > 12 || d < 1 ||
        d > orr_tz_days_in_month(y, m))
        return orr_err_set(err, ORR_EINVAL, "day", "\"%.40s\" is not a date YYYY-MM-DD",
                           s ? s : "");
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
            return orr_err_set(err, ORR_EINVAL, "day", "\"%.40s\" is not a date YYYY-MM-DD", s);
    *day = orr_tz_days_from_civil(y, m, d);
    return ORR_OK;
}

char *orr_cal_format_date(int64_t day, char *buf, size_t n)
{
    int64_t y;
    int m, d;
    orr_tz_civil_from_days(day, &y, &m, &d);
    snprintf(buf, n, "%04lld-%02d-%02d", (long long)y, m, d);
    return buf;
}

orr_status orr_cal_policy_parse(const char *s, orr_cal_policy *p, orr_err *err)
{
    if (!s || !s[0] || strcmp(s, "skip") == 0)
        *p = ORR_CAL_SKIP;
    else if (strcmp(s, "next") == 0)
        *p = ORR_CAL_NEXT;
    else if (strcmp(s, "previous") == 0)
        *p = ORR_CAL_PREVIOUS;
    else
        return orr_err_set(err, ORR_EINVAL, "calendar_policy",
                           "\"%.40s\": must be skip, next or previous", s);
    return ORR_OK;
}

const char *orr_cal_policy_name(orr_cal_policy p)
{
    return p == ORR_CAL_NEXT ? "next" : p == ORR_CAL_PREVIOUS ? "previous" : "skip";
}

const char *orr_cal_outcome_name(orr_cal_outcome o)
{
    return o == ORR_CAL_MOVED ? "moved" : o == ORR_CAL_SKIPPED ? "skipped" : "kept";
}

orr_status orr_cal_from_json(const char *text, size_t len, orr_cal **out, orr_err *err)
{
    *out = NULL;
    json_error_t je;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc || !json_is_object(doc)) {
        json_decref(doc);
        return orr_err_set(err, ORR_EINVAL, "calendar", "not a JSON object (line %d: %s)",
                           doc ? 1 : je.line, doc ? "not an object" : je.text);
    }
    orr_status s = ORR_OK;
    orr_cal *c = NULL;
    const json_t *tz = json_object_get(doc, "timezone");
    const json_t *wd = json_object_get(doc, "weekdays");
    const json_t *days = json_object_get(doc, "days");
    unsigned mask = ORR_CAL_WEEKDAYS_DEFAULT;
    if (tz && !json_is_string(tz)) {
        s = orr_err_set(err, ORR_EINVAL, "timezone", "must be a string");
        goto done;
    }
    if (wd) {
        if (!json_is_array(wd)) {
            s = orr_err_set(err, ORR_EINVAL, "weekdays", "must be an array of 1-7");
            goto done;
        }
        mask = 0;
        size_t i;
        const json_t *v;
        json_array_foreach(wd, i, v)
        {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 7) {
                s = orr_err_set(err, ORR_EINVAL, "weekdays", "must be an array of 1-7");
                goto done;
            }
            mask |= 1u << json_integer_value(v);
        }
    }
    if ((s = orr_cal_new(tz ? json_string_value(tz) : NULL, mask, &c, err)) != ORR_OK)
        goto done;
    if (days && !json_is_array(days)) {
        s = orr_err_set(err, ORR_EINVAL, "days", "must be an array");
        goto done;
    }
    if (days) {
        size_t i;
        const json_t *v;
        json_array_foreach(days, i, v)
        {
            char f[48];
            const json_t *d = json_object_get(v, "day"), *k = json_object_get(v, "kind");
            int64_t day;
            if (!json_is_string(d) ||
                orr_cal_parse_date(json_string_value(d), &day, err) != ORR_OK) {
                snprintf(f, sizeof f, "days[%zu].day", i);
                s = orr_err_set(err, ORR_EINVAL, f, "must be a date YYYY-MM-DD");
                goto done;
            }
            orr_cal_kind kind = ORR_CAL_EXCLUDED;
            if (k && json_is_string(k) && strcmp(json_string_value(k), "included") == 0)
                kind = ORR_CAL_INCLUDED;
            else if (k && !(json_is_string(k) && strcmp(json_string_value(k), "excluded") == 0)) {
                snprintf(f, sizeof f, "days[%zu].kind", i);
                s = orr_err_set(err, ORR_EINVAL, f, "must be excluded or included");
                goto done;
            }
            if ((s = orr_cal_set_day(c, day, kind, err)) != ORR_OK)
                goto done;
        }
    }
done:
    json_decref(doc);
    if (s != ORR_OK) {
        orr_cal_free(c);
        return s;
    }
    *out = c;
    return ORR_OK;
}

/* ------------------------------------------------------------ fire times */

static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

int64_t orr_cal_local_day(const orr_cal *c, int64_t t)
{
    return floor_div(t + orr_tz_offset(c->tz, t), 86400);
}

static int64_t local_tod(const orr_cal *c, int64_t t)
{
    int64_t l = t + orr_tz_offset(c->tz, t);
    return l - floor_div(l, 86400) * 86400;
}

/* The UTC instant of wall time tod on local day: a gap's wall time is its
 * end, a fold's the first pass. */
static int64_t wall_utc(const orr_cal *c, int64_t day, int64_t tod)
{
    orr_tz_map m;
    orr_tz_local_to_utc(c->tz, day * 86400 + tod, &m);
    return m.n == 0 ? m.gap_end : m.utc[0];
}

orr_cal_outcome orr_cal_classify(const orr_cal *c, orr_cal_policy p, int64_t f, int64_t *to)
{
    int64_t day = orr_cal_local_day(c, f);
    if (orr_cal_is_business_day(c, day)) {
        *to = f;
        return ORR_CAL_KEPT;
    }
    *to = 0;
    if (p == ORR_CAL_SKIP)
        return ORR_CAL_SKIPPED;
    int step = p == ORR_CAL_NEXT ? 1 : -1;
    for (int i = 1; i <= ORR_CAL_SEARCH_DAYS; i++) {
        int64_t d = day + (int64_t)i * step;
        if (orr_cal_is_business_day(c, d)) {
            *to = wall_utc(c, d, local_tod(c, f));
            return ORR_CAL_MOVED;
        }
    }
    return ORR_CAL_SKIPPED;
}

/* The first cron fire time on local day e whose wall time on day d is after
 * `after` (min_utc: where to start the cron walk), as the instant on day d;
 * INT64_MAX when there is none. */
static int64_t moved_candidate(const orr_cron *cron, const orr_tz *ctz, const orr_cal *c, int64_t e,
                               int64_t d, int64_t after, int from_tod, int64_t tod_after)
{
    int64_t s = wall_utc(c, e, from_tod ? tod_after : 0) - 1;
    for (int tries = 0; tries < 4; tries++) {
        int64_t f;
        if (orr_cron_next(cron, ctz, s, &f) != ORR_OK || orr_cal_local_day(c, f) != e)
            return INT64_MAX;
        int64_t m = wall_utc(c, d, local_tod(c, f));
        if (m > after)
            return m;
        s = f; /* a zone shift made it land at or before after: try the next */
    }
    return INT64_MAX;
}

orr_status orr_cal_next(const orr_cron *cron, const orr_tz *cron_tz, const orr_cal *c,
                        orr_cal_policy p, int64_t after, int64_t *next_utc)
{
    if (!c)
        return orr_cron_next(cron, cron_tz, after, next_utc);
    if (p == ORR_CAL_SKIP) {
        /* follow the cron, jumping over each non-business day at once */
        int64_t t = after;
        for (int i = 0; i < ORR_CAL_SEARCH_DAYS * 4; i++) {
            int64_t f;
            orr_status s = orr_cron_next(cron, cron_tz, t, &f);
            if (s != ORR_OK)
                return s;
            int64_t d = orr_cal_local_day(c, f);
            if (orr_cal_is_business_day(c, d)) {
                *next_utc = f;
                return ORR_OK;
            }
            t = wall_utc(c, d + 1, 0) - 1;
            if (t < f)
                t = f;
        }
        return ORR_ENOTFOUND;
    }
    int64_t d0 = orr_cal_local_day(c, after);
    int64_t tod_after = local_tod(c, after);
    int step = p == ORR_CAL_NEXT ? -1 : 1; /* where the days feeding D lie */
    for (int64_t d = d0; d < d0 + ORR_CAL_SEARCH_DAYS; d++) {
        if (!orr_cal_is_business_day(c, d))
            continue;
        int64_t best = INT64_MAX, f;
        int64_t start = wall_utc(c, d, 0) - 1;
        orr_status s = orr_cron_next(cron, cron_tz, after > start ? after : start, &f);
        if (s == ORR_OK && orr_cal_local_day(c, f) == d)
            best = f;
        for (int i = 1; i <= ORR_CAL_SEARCH_DAYS; i++) {
            int64_t e = d + (int64_t)i * step;
            if (orr_cal_is_business_day(c, e))
                break;
            int64_t m = moved_candidate(cron, cron_tz, c, e, d, after, d == d0, tod_after);
            if (m < best)
                best = m;
        }
        if (best != INT64_MAX) {
            *next_utc = best;
            return ORR_OK;
        }
    }
    return ORR_ENOTFOUND;
}
