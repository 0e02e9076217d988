/*
 * test_lib_cron.c - the cron engine: parse every syntax element, then check
 * next-fire sequences against vectors worked out on the calendar (leap
 * years, month ends, L/W/#, Unix OR rule, years, DST gaps and folds in
 * Europe, America and Lord Howe's 30-minute shift), and bad input naming
 * its field.
 *
 * A vector is an expression, a zone, a start instant and the fire times that
 * must follow it in order; NOTFOUND after the list means the search must end
 * there with ORR_ENOTFOUND.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "orr_cron.h"
#include "orr_tz.h"

#define NOTFOUND "NOTFOUND"

struct vec {
    const char *expr;
    const char *tz;
    const char *from;
    const char *want[10]; /* NULL-terminated; a final NOTFOUND ends the search */
};

static int64_t iso(const char *s)
{
    int64_t t = 0;
    orr_err err;
    if (orr_tz_parse_iso8601(s, &t, &err) != ORR_OK)
        fail_msg("bad date in test: %s (%s)", s, err.msg);
    return t;
}

static void run_vectors(const struct vec *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        orr_err err;
        orr_cron *c = NULL;
        const orr_tz *tz = NULL;
        if (orr_cron_parse(v[i].expr, &c, &err) != ORR_OK)
            fail_msg("parse \"%s\": %s: %s", v[i].expr, err.field, err.msg);
        if (orr_tz_load(v[i].tz, &tz, &err) != ORR_OK)
            fail_msg("zone %s: %s", v[i].tz, err.msg);
        int64_t t = iso(v[i].from);
        for (size_t k = 0; k < 10 && v[i].want[k]; k++) {
            int64_t next = 0;
            orr_status rc = orr_cron_next(c, tz, t, &next);
            if (strcmp(v[i].want[k], NOTFOUND) == 0) {
                if (rc != ORR_ENOTFOUND) {
                    char got[32];
                    fail_msg("\"%s\" in %s from %s: step %zu: want NOTFOUND, got %s (%s)",
                             v[i].expr, v[i].tz, v[i].from, k, orr_status_name(rc),
                             orr_tz_format_utc(next, got, sizeof(got)));
                }
                break;
            }
            char got[32];
            if (rc != ORR_OK)
                fail_msg("\"%s\" in %s from %s: step %zu: want %s, got %s", v[i].expr, v[i].tz,
                         v[i].from, k, v[i].want[k], orr_status_name(rc));
            orr_tz_format_utc(next, got, sizeof(got));
            if (strcmp(got, v[i].want[k]) != 0)
                fail_msg("\"%s\" in %s from %s: step %zu: want %s, got %s", v[i].expr, v[i].tz,
                         v[i].from, k, v[i].want[k], got);
            assert_true(next > t);
            t = next;
        }
        orr_cron_free(c);
    }
}

#define RUN(vs) run_vectors(vs, sizeof(vs) / sizeof(vs[0]))

/* ------------------------------------------------------------ syntax */

static void test_basic_syntax(void **state)
{
    (void)state;
    static const struct vec v[] = {
        {"0 0 12 * * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-01T12:00:00Z", "2026-01-02T12:00:00Z"}},
        /* strictly after */
        {"0 0 12 * * ?", "UTC", "2026-01-01T12:00:00Z", {"2026-01-02T12:00:00Z"}},
        {"*/15 * * * * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-01T00:00:15Z", "2026-01-01T00:00:30Z", "2026-01-01T00:00:45Z",
          "2026-01-01T00:01:00Z"}},
        {"10-50/20 * * * * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-01T00:00:10Z", "2026-01-01T00:00:30Z", "2026-01-01T00:00:50Z",
          "2026-01-01T00:01:10Z"}},
        {"5/20 * * * * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-01T00:00:05Z", "2026-01-01T00:00:25Z", "2026-01-01T00:00:45Z",
          "2026-01-01T00:01:05Z"}},
        {"0 0 8,12,18 * * ?",
         "UTC",
         "2026-01-01T10:00:00Z",
         {"2026-01-01T12:00:00Z", "2026-01-01T18:00:00Z", "2026-01-02T08:00:00Z"}},
        /* a list mixing values, ranges and steps */
        {"0 1,20-22,50/5 3 * * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-01T03:01:00Z", "2026-01-01T03:20:00Z", "2026-01-01T03:21:00Z",
          "2026-01-01T03:22:00Z", "2026-01-01T03:50:00Z", "2026-01-01T03:55:00Z",
          "2026-01-02T03:01:00Z"}},
        /* a range that wraps past midnight */
        {"0 0 22-2 * * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T22:00:00Z",
          "2026-01-01T23:00:00Z", "2026-01-02T00:00:00Z"}},
        /* names, month and weekday; 2026-07-01 is a Wednesday, 2027-01-01 a Friday */
        {"0 0 9 ? JAN,JUL MON-FRI",
         "UTC",
         "2026-06-30T10:00:00Z",
         {"2026-07-01T09:00:00Z", "2026-07-02T09:00:00Z", "2026-07-03T09:00:00Z",
          "2026-07-06T09:00:00Z"}},
        {"0 0 9 ? JAN,JUL MON-FRI", "UTC", "2026-07-31T10:00:00Z", {"2027-01-01T09:00:00Z"}},
        /* names are case-insensitive */
        {"0 0 0 ? jan mon",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-19T00:00:00Z",
          "2026-01-26T00:00:00Z", "2027-01-04T00:00:00Z"}},
        /* Quartz weekdays: 1 = SUN; a wrapping name range; L alone = Saturday */
        {"0 0 0 ? * 1",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
        {"0 0 0 ? * FRI-MON",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z",
          "2026-01-05T00:00:00Z", "2026-01-09T00:00:00Z"}},
        {"0 0 0 ? * L",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z"}},
        /* 3 fields of steps on one line */
        {"30 */20 9-17/4 * * ?",
         "UTC",
         "2026-01-01T12:00:00Z",
         {"2026-01-01T13:00:30Z", "2026-01-01T13:20:30Z", "2026-01-01T13:40:30Z",
          "2026-01-01T17:00:30Z", "2026-01-01T17:20:30Z", "2026-01-01T17:40:30Z",
          "2026-01-02T09:00:30Z"}},
        /* tabs and extra spaces separate fields */
        {"  0\t0   12 * *\t? ", "UTC", "2026-01-01T00:00:00Z", {"2026-01-01T12:00:00Z"}},
    };
    RUN(v);
}

static void test_leap_years_and_month_ends(void **state)
{
    (void)state;
    static const struct vec v[] = {
        {"0 0 0 29 2 ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z"}},
        /* 2100 is not a leap year; 2000-style 400-year rule is exercised by 2400 (out of range) */
        {"0 0 0 29 2 ?", "UTC", "2096-03-01T00:00:00Z", {"2104-02-29T00:00:00Z"}},
        {"0 0 0 L * ?",
         "UTC",
         "2026-01-15T00:00:00Z",
         {"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z",
          "2026-04-30T00:00:00Z", "2026-05-31T00:00:00Z", "2026-06-30T00:00:00Z"}},
        {"0 0 0 L * ?", "UTC", "2028-02-01T00:00:00Z", {"2028-02-29T00:00:00Z"}},
        {"0 0 0 L * ?", "UTC", "2100-02-01T00:00:00Z", {"2100-02-28T00:00:00Z"}},
        {"0 0 0 L-3 * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-28T00:00:00Z", "2026-02-25T00:00:00Z", "2026-03-28T00:00:00Z",
          "2026-04-27T00:00:00Z"}},
        {"0 0 0 L-3 * ?", "UTC", "2028-02-01T00:00:00Z", {"2028-02-26T00:00:00Z"}},
        /* L-30 exists only in 31-day months (the 1st) */
        {"0 0 0 L-30 * ?",
         "UTC",
         "2026-01-15T00:00:00Z",
         {"2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"}},
        /* day 31 skips short months */
        {"0 0 0 31 * ?",
         "UTC",
         "2026-01-31T00:00:00Z",
         {"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z",
          "2026-08-31T00:00:00Z"}},
        /* L as a list item */
        {"0 0 0 1,L * ?",
         "UTC",
         "2026-01-15T00:00:00Z",
         {"2026-01-31T00:00:00Z", "2026-02-01T00:00:00Z", "2026-02-28T00:00:00Z",
          "2026-03-01T00:00:00Z"}},
    };
    RUN(v);
}

static void test_nearest_weekday(void **state)
{
    (void)state;
    static const struct vec v[] = {
        /* 2026: Feb 15 and Mar 15 are Sundays -> Monday 16; Aug 15 a Saturday -> Friday 14 */
        {"0 0 0 15W * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-15T00:00:00Z", "2026-02-16T00:00:00Z", "2026-03-16T00:00:00Z",
          "2026-04-15T00:00:00Z"}},
        {"0 0 0 15W * ?",
         "UTC",
         "2026-08-01T00:00:00Z",
         {"2026-08-14T00:00:00Z", "2026-09-15T00:00:00Z", "2026-10-15T00:00:00Z",
          "2026-11-16T00:00:00Z"}},
        /* 2026-08-01 is a Saturday: Monday the 3rd, never July 31; Feb 1 a Sunday -> 2nd */
        {"0 0 0 1W * ?",
         "UTC",
         "2026-07-30T00:00:00Z",
         {"2026-08-03T00:00:00Z", "2026-09-01T00:00:00Z"}},
        {"0 0 0 1W * ?", "UTC", "2026-01-15T00:00:00Z", {"2026-02-02T00:00:00Z"}},
        /* LW: Jan 31 Sat -> 30, Feb 28 Sat -> 27, Mar 31 Tue, Apr 30 Thu, May 31 Sun -> 29 */
        {"0 0 0 LW * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-31T00:00:00Z",
          "2026-04-30T00:00:00Z", "2026-05-29T00:00:00Z"}},
        /* 31W: only 31-day months; Jan 31 Sat -> 30, May 31 Sun -> 29 (not June 1) */
        {"0 0 0 31W * ?",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-30T00:00:00Z", "2026-03-31T00:00:00Z", "2026-05-29T00:00:00Z",
          "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}},
        /* 30W in February never fires in it */
        {"0 0 0 30W 2 ?", "UTC", "2026-01-01T00:00:00Z", {NOTFOUND}},
    };
    RUN(v);
}

static void test_weekday_of_month(void **state)
{
    (void)state;
    static const struct vec v[] = {
        /* fifth Thursday: only Jan, Apr, Jul, Oct, Dec have one in 2026 */
        {"0 0 0 ? * 5#5",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-29T00:00:00Z", "2026-04-30T00:00:00Z", "2026-07-30T00:00:00Z",
          "2026-10-29T00:00:00Z", "2026-12-31T00:00:00Z"}},
        /* second Monday, by name */
        {"0 0 0 ? * MON#2",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-12T00:00:00Z", "2026-02-09T00:00:00Z"}},
        /* last Friday: 6L and FRIL */
        {"0 0 0 ? * 6L",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-27T00:00:00Z",
          "2026-04-24T00:00:00Z"}},
        {"0 0 0 ? * FRIL", "UTC", "2026-01-01T00:00:00Z", {"2026-01-30T00:00:00Z"}},
        /* last Saturday, 7L: Jan 31 and Feb 28 are Saturdays */
        {"0 0 0 ? * 7L",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-28T00:00:00Z"}},
        /* a fifth Thursday in a non-leap February cannot exist */
        {"0 0 0 ? 2 5#5 2027", "UTC", "2026-01-01T00:00:00Z", {NOTFOUND}},
    };
    RUN(v);
}

static void test_unix_dialect(void **state)
{
    (void)state;
    static const struct vec v[] = {
        /* both restricted: the 1st, the 15th OR any Monday (2026-01-01 is a Thursday) */
        {"0 0 1,15 * 1",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-15T00:00:00Z",
          "2026-01-19T00:00:00Z", "2026-01-26T00:00:00Z", "2026-02-01T00:00:00Z",
          "2026-02-02T00:00:00Z"}},
        /* Vixie: a field starting with "*" makes it AND: days 1/11/21/31 that are Mondays */
        {"0 0 */10 * 1",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-05-11T00:00:00Z", "2026-06-01T00:00:00Z", "2026-08-31T00:00:00Z"}},
        /* 0 and 7 are both Sunday */
        {"0 0 * * 0",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
        {"0 0 * * 7", "UTC", "2026-01-01T00:00:00Z", {"2026-01-04T00:00:00Z"}},
        {"0 0 * * 5-7",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z",
          "2026-01-09T00:00:00Z"}},
        {"30 6 * * MON-FRI",
         "UTC",
         "2026-01-02T07:00:00Z",
         {"2026-01-05T06:30:00Z", "2026-01-06T06:30:00Z"}},
        {"*/20 9-10 * * *",
         "UTC",
         "2026-01-01T10:30:00Z",
         {"2026-01-01T10:40:00Z", "2026-01-02T09:00:00Z", "2026-01-02T09:20:00Z"}},
        /* "?" is accepted as "*" */
        {"0 0 ? * 1", "UTC", "2026-01-01T00:00:00Z", {"2026-01-05T00:00:00Z"}},
        {"@daily", "UTC", "2026-01-01T00:00:00Z", {"2026-01-02T00:00:00Z"}},
        {"@midnight", "UTC", "2026-01-01T00:00:00Z", {"2026-01-02T00:00:00Z"}},
        {"@hourly", "UTC", "2026-01-01T00:00:00Z", {"2026-01-01T01:00:00Z"}},
        {"@weekly", "UTC", "2026-01-01T00:00:00Z", {"2026-01-04T00:00:00Z"}},
        {"@monthly", "UTC", "2026-01-01T00:00:00Z", {"2026-02-01T00:00:00Z"}},
        {"@yearly", "UTC", "2026-01-01T00:00:00Z", {"2027-01-01T00:00:00Z"}},
        {"@annually", "UTC", "2026-06-01T00:00:00Z", {"2027-01-01T00:00:00Z"}},
        {"0 0 30 2 *", "UTC", "2026-01-01T00:00:00Z", {NOTFOUND}},
    };
    RUN(v);
}

static void test_years_and_never(void **state)
{
    (void)state;
    static const struct vec v[] = {
        {"0 0 0 1 1 ? 2030,2035-2036",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2030-01-01T00:00:00Z", "2035-01-01T00:00:00Z", "2036-01-01T00:00:00Z", NOTFOUND}},
        {"0 0 0 1 1 ? 2100/50",
         "UTC",
         "2026-01-01T00:00:00Z",
         {"2100-01-01T00:00:00Z", "2150-01-01T00:00:00Z", NOTFOUND}},
        {"0 0 0 * * ? 1999", "UTC", "2026-01-01T00:00:00Z", {NOTFOUND}},
        {"0 0 0 30 2 ?", "UTC", "2026-01-01T00:00:00Z", {NOTFOUND}},
        {"0 0 0 31 4,6,9,11 ?", "Europe/Berlin", "2026-01-01T00:00:00Z", {NOTFOUND}},
        /* the last fire time of the searchable range, then nothing */
        {"0 0 0 1 1 ?", "UTC", "2199-06-01T00:00:00Z", {NOTFOUND}},
        {"59 59 23 31 12 ?", "UTC", "2199-12-31T00:00:00Z", {"2199-12-31T23:59:59Z", NOTFOUND}},
        {"0 0 0 1 1 ?", "UTC", "2400-01-01T00:00:00Z", {NOTFOUND}},
        /* before 1970, the search starts at 1970 */
        {"0 0 0 1 1 ?", "UTC", "1950-06-01T00:00:00Z", {"1970-01-01T00:00:00Z"}},
    };
    RUN(v);
}

static void test_never_is_fast(void **state)
{
    (void)state;
    orr_cron c;
    orr_err err;
    assert_int_equal(orr_cron_parse_into("0 0 0 30 2 ?", &c, &err), ORR_OK);
    const orr_tz *tz;
    assert_int_equal(orr_tz_load("Europe/Berlin", &tz, &err), ORR_OK);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int64_t next;
    for (int i = 0; i < 100; i++)
        assert_int_equal(orr_cron_next(&c, tz, 0, &next), ORR_ENOTFOUND);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    /* 230 years are skipped month by month: well under 10 ms each, even with sanitizers */
    assert_true(ms < 1000.0);
}

/* -------------------------------------------------------------- DST */

static void test_dst_europe(void **state)
{
    (void)state;
    static const struct vec v[] = {
        /* 2026-03-29: 02:00 CET -> 03:00 CEST at 01:00Z; 02:30 does not exist */
        {"0 30 2 * * ?",
         "Europe/Berlin",
         "2026-03-28T12:00:00Z",
         {"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
        /* 2026-10-25: 03:00 CEST -> 02:00 CET at 01:00Z; 02:30 is shown twice, fires once */
        {"0 30 2 * * ?",
         "Europe/Berlin",
         "2026-10-24T12:00:00Z",
         {"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
        /* asked during the second pass: the repeated 02:30 (01:30Z) must not fire */
        {"0 30 2 * * ?", "Europe/Berlin", "2026-10-25T01:15:00Z", {"2026-10-26T01:30:00Z"}},
        {"0 30 2 * * ?", "Europe/Berlin", "2026-10-25T00:45:00Z", {"2026-10-26T01:30:00Z"}},
        /* hourly across the gap: 02:00 and 03:00 local both land on 01:00Z, once */
        {"0 0 * * * ?",
         "Europe/Berlin",
         "2026-03-28T22:30:00Z",
         {"2026-03-28T23:00:00Z", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z",
          "2026-03-29T02:00:00Z", "2026-03-29T03:00:00Z"}},
        /* hourly across the fold: 02:00 fires at its first occurrence only */
        {"0 0 * * * ?",
         "Europe/Berlin",
         "2026-10-24T22:30:00Z",
         {"2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z",
          "2026-10-25T03:00:00Z"}},
        /* four scheduled times inside one gap fire once */
        {"0 0,15,30,45 2 * * ?",
         "Europe/Berlin",
         "2026-03-29T00:00:00Z",
         {"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T00:15:00Z"}},
        {"0 0/30 * * * ?",
         "Europe/Berlin",
         "2026-03-29T00:15:00Z",
         {"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"}},
        /* every minute through the fold: the second pass is skipped */
        {"0 * * * * ?",
         "Europe/Berlin",
         "2026-10-25T00:58:00Z",
         {"2026-10-25T00:59:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:01:00Z"}},
        {"0 * * * * ?", "Europe/Berlin", "2026-10-25T01:30:00Z", {"2026-10-25T02:00:00Z"}},
        /* winter and summer offsets */
        {"0 0 12 * * ?", "Europe/Berlin", "2026-01-01T00:00:00Z", {"2026-01-01T11:00:00Z"}},
        {"0 0 12 * * ?", "Europe/Berlin", "2026-07-01T00:00:00Z", {"2026-07-01T10:00:00Z"}},
        /* far past the file's table: the footer rule (last Sunday of March) */
        {"0 30 2 * * ?",
         "Europe/Berlin",
         "2100-03-27T12:00:00Z",
         {"2100-03-28T01:00:00Z", "2100-03-29T00:30:00Z"}},
        {"0 30 2 * * ?",
         "Europe/Berlin",
         "2199-03-30T12:00:00Z",
         {"2199-03-31T01:00:00Z", "2199-04-01T00:30:00Z"}},
        /* a Unix expression in a zone */
        {"30 2 * * *",
         "Europe/Berlin",
         "2026-03-28T12:00:00Z",
         {"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
    };
    RUN(v);
}

static void test_dst_america(void **state)
{
    (void)state;
    static const struct vec v[] = {
        /* 2026-03-08: 02:00 EST -> 03:00 EDT at 07:00Z */
        {"0 30 2 * * ?",
         "America/New_York",
         "2026-03-07T12:00:00Z",
         {"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
        /* 2026-11-01: 02:00 EDT -> 01:00 EST at 06:00Z; 01:30 fires at 05:30Z only */
        {"0 30 1 * * ?",
         "America/New_York",
         "2026-10-31T12:00:00Z",
         {"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
        {"0 0 * * * ?",
         "America/New_York",
         "2026-03-08T05:30:00Z",
         {"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
        {"0 0 * * * ?",
         "America/New_York",
         "2026-11-01T03:30:00Z",
         {"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z"}},
    };
    RUN(v);
}

static void test_dst_lord_howe(void **state)
{
    (void)state;
    static const struct vec v[] = {
        /* 2026-10-04 02:00 +10:30 -> 02:30 +11 at 2026-10-03T15:30Z */
        {"0 15 2 * * ?",
         "Australia/Lord_Howe",
         "2026-10-02T12:00:00Z",
         {"2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}},
        /* 2026-04-05 02:00 +11 -> 01:30 +10:30 at 2026-04-04T15:00Z; 01:45 repeats */
        {"0 45 1 * * ?",
         "Australia/Lord_Howe",
         "2026-04-04T00:00:00Z",
         {"2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},
        /* every 15 min: 01:30 and 01:45 of the second pass are skipped, 02:00 is 15:30Z */
        {"0 0/15 * * * ?",
         "Australia/Lord_Howe",
         "2026-04-04T14:40:00Z",
         {"2026-04-04T14:45:00Z", "2026-04-04T15:30:00Z", "2026-04-04T15:45:00Z"}},
    };
    RUN(v);
}

/* ----------------------------------------------------------- errors */

struct bad {
    const char *expr;
    const char *field;
    const char *msg; /* a substring of err.msg */
};

static void test_errors_name_the_field(void **state)
{
    (void)state;
    char longexpr[ORR_CRON_MAX_LEN + 20];
    memset(longexpr, '1', sizeof(longexpr) - 1);
    longexpr[sizeof(longexpr) - 1] = '\0';
    const struct bad v[] = {
        {"", "expression", "got 0"},
        {"* * * *", "expression", "got 4"},
        {"0 0 0 1 1 ? 2030 x", "expression", "more than 7"},
        {longexpr, "expression", "longer than"},
        {"@reboot", "expression", "unknown macro \"@reboot\""},
        {"60 * * * * ?", "second", "\"60\" out of range 0-59"},
        {"0 60 * * * ?", "minute", "\"60\" out of range 0-59"},
        {"0 0 24 * * ?", "hour", "\"24\" out of range 0-23"},
        {"0 0 0 32 * ?", "day-of-month", "\"32\" out of range 1-31"},
        {"0 0 0 0 * ?", "day-of-month", "\"0\" out of range 1-31"},
        {"0 0 0 * 13 ?", "month", "\"13\" out of range 1-12"},
        {"0 0 0 ? * 8", "day-of-week", "\"8\" out of range 1-7"},
        {"0 0 0 ? * 0", "day-of-week", "\"0\" out of range 1-7"},
        {"0 0 0 1 1 ? 1969", "year", "\"1969\" out of range 1970-2199"},
        {"0 0 0 1 1 ? 2200", "year", "\"2200\" out of range 1970-2199"},
        {"0 */0 * * * ?", "minute", "step \"0\" in \"*/0\" out of range 1-60"},
        {"0 0 */25 * * ?", "hour", "step \"25\""},
        {"0 0 0 1/ * ?", "day-of-month", "missing step"},
        {"0 0 0 ? * ?", "day-of-week", "both"},
        {"0 0 0 * * *", "day-of-week", "must be \"?\""},
        {"0 0 0 1 * MON", "day-of-week", "must be \"?\""},
        {"0 0 0 ? * 5#6", "day-of-week", "\"5#6\": occurrence after # must be 1-5"},
        {"0 0 0 ? * 5#0", "day-of-week", "occurrence"},
        {"0 0 0 ? * FOO", "day-of-week", "unknown day name \"FOO\""},
        {"0 0 0 ? FOO *", "month", "unknown month name \"FOO\""},
        {"0 0 0 ? JANUARY *", "month", "unexpected \"UARY\""},
        {"0 0 MON * * ?", "hour", "\"MON\" is not a number"},
        {"0 0 0 L-31 * ?", "day-of-month", "0-30"},
        {"0 0 0 LX * ?", "day-of-month", "after L"},
        {"0 0 0 32W * ?", "day-of-month", "\"32\" out of range"},
        {"0 0 0 5X * ?", "day-of-month", "unexpected \"X\" in \"5X\""},
        {"0 0 0 ? * 1-", "day-of-week", "missing value in \"1-\""},
        {"0 0 0 1,,2 * ?", "day-of-month", "empty item in list \"1,,2\""},
        {"0 0 0 1, * ?", "day-of-month", "empty item"},
        {"0 0 ? * * ?", "hour", "only allowed in day-of-month and day-of-week"},
        {"0 0 0 1? * ?", "day-of-month", "whole field"},
        {"0 0 0 1 1 ? ?", "year", "only allowed"},
        {"0 0 0 ? * 6W", "day-of-week", "unexpected \"W\""},
        {"0 0 0 15L * ?", "day-of-month", "unexpected \"L\""},
        {"0 0 0 ? * 1#", "day-of-week", "occurrence"},
        {"0 0 0 99999999999 * ?", "day-of-month", "out of range"},
        {"0 0 0 ? * -1", "day-of-week", "unexpected \"-\""},
        {"0 0 0 ? * 1-2-3", "day-of-week", "unexpected \"-3\""},
        /* Unix dialect */
        {"60 * * * *", "minute", "\"60\" out of range 0-59"},
        {"* * * * 8", "day-of-week", "\"8\" out of range 0-7"},
        {"* * 0 * *", "day-of-month", "out of range 1-31"},
        {"* * * * MON#9", "day-of-week", "occurrence"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        orr_err err;
        orr_err_clear(&err);
        orr_cron *c = (orr_cron *)&err; /* must be reset to NULL */
        orr_status rc = orr_cron_parse(v[i].expr, &c, &err);
        if (rc != ORR_EINVAL)
            fail_msg("\"%.40s\": want EINVAL, got %s", v[i].expr, orr_status_name(rc));
        assert_null(c);
        assert_int_equal(err.code, ORR_EINVAL);
        if (strcmp(err.field, v[i].field) != 0 || !strstr(err.msg, v[i].msg))
            fail_msg("\"%.40s\": want %s: ...%s..., got %s: %s", v[i].expr, v[i].field, v[i].msg,
                     err.field, err.msg);
    }
    orr_err err;
    orr_cron *c;
    assert_int_equal(orr_cron_parse(NULL, &c, &err), ORR_EINVAL);
    assert_string_equal(err.field, "expression");
}

static void test_parse_representation(void **state)
{
    (void)state;
    orr_cron c;
    orr_err err;
    assert_int_equal(orr_cron_parse_into("0 0 0 ? * 2-6", &c, &err), ORR_OK);
    assert_int_equal(c.dow, 0x3e); /* MON-FRI as bits 1-5 */
    assert_false(orr_cron_is_unix(&c));
    assert_int_equal(orr_cron_parse_into("0 0 * * 1-5", &c, &err), ORR_OK);
    assert_int_equal(c.dow, 0x3e); /* the same days in the Unix numbering */
    assert_true(orr_cron_is_unix(&c));
    assert_int_equal(c.sec, 1);
    assert_int_equal(orr_cron_parse_into("0 0 0 ? * 0-7", &c, &err), ORR_EINVAL);
    assert_int_equal(orr_cron_parse_into("0 0 * * 0-7", &c, &err), ORR_OK);
    assert_int_equal(c.dow, 0x7f);
    assert_int_equal(orr_cron_parse_into("0 0 0 L,L-3,LW,15W * ?", &c, &err), ORR_OK);
    assert_int_equal(c.dom_last, (1u << 0) | (1u << 3));
    assert_int_equal(c.dom_w, 1u << 15);
    assert_true(c.flags & ORR_CRON_F_DOM_LW);
    assert_int_equal(orr_cron_parse_into("0 0 0 ? * 2#1,SUN#5,6L", &c, &err), ORR_OK);
    assert_int_equal(c.dow_nth[1], 1u << 1);
    assert_int_equal(c.dow_nth[0], 1u << 5);
    assert_int_equal(c.dow_last, 1u << 5);
    assert_int_equal(orr_cron_parse_into("*/7 * * * * ?", &c, &err), ORR_OK);
    assert_int_equal(c.sec, (1ull << 0) | (1ull << 7) | (1ull << 14) | (1ull << 21) | (1ull << 28) |
                                (1ull << 35) | (1ull << 42) | (1ull << 49) | (1ull << 56));
}

/* orr_cron_check: what a service refuses at save, naming "schedule" or
 * "timezone"; a schedule must fire again after the given instant. */
static void test_check_for_save(void **state)
{
    (void)state;
    orr_err e;
    int64_t now = iso("2026-12-01T00:00:00Z");
    const struct {
        const char *expr, *zone, *field, *msg;
    } bad[] = {
        {"61 * * * *", NULL, "schedule", "minute: \"61\" out of range 0-59"},
        {"0 0 0 1 1 ? 1800-2030", "UTC", "schedule", "year: \"1800\" out of range"},
        {"   ", NULL, "schedule", "expression: expected 5 fields"},
        {"0 0 0 30 2 ?", "Europe/Berlin", "schedule",
         "never fires after 2026-12-01T00:00:00Z (searched through 2199 in Europe/Berlin)"},
        {"0 0 0 1 1 ? 2020-2026", NULL, "schedule", "never fires"},
        {"0 * * * *", "Mars/Olympus_Mons", "timezone", "unknown time zone \"Mars/Olympus_Mons\""},
        {"0 * * * *", "../../etc/passwd", "timezone", "invalid time zone name"},
        {"", "/etc/passwd", "timezone", "invalid time zone name"},
        {"", "", "timezone", "invalid time zone name"},
        {"61 * * * *", "Mars/Olympus_Mons", "schedule", "minute"}, /* the schedule first */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        orr_err_clear(&e);
        assert_int_equal(orr_cron_check(bad[i].expr, bad[i].zone, now, &e), ORR_EINVAL);
        assert_int_equal(e.code, ORR_EINVAL);
        assert_string_equal(e.field, bad[i].field);
        if (!strstr(e.msg, bad[i].msg))
            fail_msg("%s / %s: message \"%s\" lacks \"%s\"", bad[i].expr,
                     bad[i].zone ? bad[i].zone : "(null)", e.msg, bad[i].msg);
    }
    const struct {
        const char *expr, *zone;
    } good[] = {
        {"", NULL},                        /* no schedule */
        {"", "Europe/Berlin"},             /* no schedule, a real zone */
        {"0 30 2 * * ?", "Europe/Berlin"}, /* in the spring-forward gap */
        {"@hourly", "Australia/Lord_Howe"},
        {"0 0 0 1 1 ? 2199", "UTC"}, /* the last searchable year */
        {"0 0 29 2 *", "America/New_York"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        orr_err_clear(&e);
        if (orr_cron_check(good[i].expr, good[i].zone, now, &e) != ORR_OK)
            fail_msg("%s / %s refused: %s: %s", good[i].expr,
                     good[i].zone ? good[i].zone : "(null)", e.field, e.msg);
    }
    /* The same schedule stops passing once its last fire time is behind. */
    assert_int_equal(orr_cron_check("0 0 0 1 1 ? 2027", NULL, now, &e), ORR_OK);
    assert_int_equal(orr_cron_check("0 0 0 1 1 ? 2027", NULL, iso("2027-01-01T00:00:00Z"), &e),
                     ORR_EINVAL);
    /* A NULL err is allowed. */
    assert_int_equal(orr_cron_check("61 * * * *", NULL, now, NULL), ORR_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_syntax),
        cmocka_unit_test(test_leap_years_and_month_ends),
        cmocka_unit_test(test_nearest_weekday),
        cmocka_unit_test(test_weekday_of_month),
        cmocka_unit_test(test_unix_dialect),
        cmocka_unit_test(test_years_and_never),
        cmocka_unit_test(test_never_is_fast),
        cmocka_unit_test(test_dst_europe),
        cmocka_unit_test(test_dst_america),
        cmocka_unit_test(test_dst_lord_howe),
        cmocka_unit_test(test_errors_name_the_field),
        cmocka_unit_test(test_parse_representation),
        cmocka_unit_test(test_check_for_save),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    orr_tz_cache_clear();
    return rc;
}
