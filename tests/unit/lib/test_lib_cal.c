/*
 * test_lib_cal.c - business calendars: business days (weekdays, excluded and
 * included dates), the three policies on single fire times, the adjusted
 * fire-time walk checked against the policy applied to every cron fire time
 * (daily, hourly, weekly crons; UTC and a DST zone), the JSON form and its
 * errors, and the .ics import.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orr_cal.h"
#include "orr_cal_ics.h"
#include "orr_cron.h"
#include "orr_tz.h"

static int64_t iso(const char *s)
{
    int64_t t = 0;
    orr_err err;
    if (orr_tz_parse_iso8601(s, &t, &err) != ORR_OK)
        fail_msg("bad date in test: %s", s);
    return t;
}

static int64_t day(const char *s)
{
    int64_t d = 0;
    orr_err err;
    if (orr_cal_parse_date(s, &d, &err) != ORR_OK)
        fail_msg("bad day in test: %s", s);
    return d;
}

static orr_cron cron(const char *expr)
{
    orr_cron c;
    orr_err err;
    if (orr_cron_parse_into(expr, &c, &err) != ORR_OK)
        fail_msg("bad cron in test: %s", expr);
    return c;
}

/* Mon-Fri in zone, with 2026-12-25 (Fri) excluded and 2026-12-26 (Sat) included. */
static orr_cal *xmas(const char *zone)
{
    orr_cal *c;
    orr_err err;
    assert_int_equal(orr_cal_new(zone, ORR_CAL_WEEKDAYS_DEFAULT, &c, &err), ORR_OK);
    assert_int_equal(orr_cal_set_day(c, day("2026-12-25"), ORR_CAL_EXCLUDED, &err), ORR_OK);
    assert_int_equal(orr_cal_set_day(c, day("2026-12-26"), ORR_CAL_INCLUDED, &err), ORR_OK);
    assert_int_equal(orr_cal_set_day(c, day("2027-01-01"), ORR_CAL_EXCLUDED, &err), ORR_OK);
    return c;
}

static void test_business_days(void **state)
{
    (void)state;
    orr_cal *c = xmas("UTC");
    assert_true(orr_cal_is_business_day(c, day("2026-12-24")));  /* Thu */
    assert_false(orr_cal_is_business_day(c, day("2026-12-25"))); /* excluded Fri */
    assert_true(orr_cal_is_business_day(c, day("2026-12-26")));  /* included Sat */
    assert_false(orr_cal_is_business_day(c, day("2026-12-27"))); /* Sun */
    assert_true(orr_cal_is_business_day(c, day("2026-12-28")));  /* Mon */
    assert_int_equal(orr_cal_day_kind(c, day("2026-12-25")), ORR_CAL_EXCLUDED);
    orr_err err;
    assert_int_equal(orr_cal_set_day(c, day("2026-12-25"), ORR_CAL_NONE, &err), ORR_OK);
    assert_true(orr_cal_is_business_day(c, day("2026-12-25")));
    assert_int_equal(orr_cal_day_kind(c, day("2026-12-25")), ORR_CAL_NONE);
    orr_cal_free(c);

    /* weekdays Sunday only */
    assert_int_equal(orr_cal_new(NULL, 1u << 7, &c, &err), ORR_OK);
    assert_true(orr_cal_is_business_day(c, day("2026-12-27")));
    assert_false(orr_cal_is_business_day(c, day("2026-12-28")));
    orr_cal_free(c);
    assert_int_equal(orr_cal_new(NULL, 1u, &c, &err), ORR_EINVAL);
    assert_string_equal(err.field, "weekdays");
    assert_int_not_equal(orr_cal_new("No/Such_Zone", 0x3e, &c, &err), ORR_OK);
    assert_string_equal(err.field, "timezone");
}

static void test_classify(void **state)
{
    (void)state;
    orr_cal *c = xmas("UTC");
    int64_t to;
    int64_t fri = iso("2026-12-25T06:00:00Z");
    assert_int_equal(orr_cal_classify(c, ORR_CAL_SKIP, fri, &to), ORR_CAL_SKIPPED);
    assert_int_equal(orr_cal_classify(c, ORR_CAL_NEXT, fri, &to), ORR_CAL_MOVED);
    assert_int_equal(to, iso("2026-12-26T06:00:00Z")); /* the included Saturday */
    assert_int_equal(orr_cal_classify(c, ORR_CAL_PREVIOUS, fri, &to), ORR_CAL_MOVED);
    assert_int_equal(to, iso("2026-12-24T06:00:00Z"));
    int64_t sun = iso("2026-12-27T06:00:00Z");
    assert_int_equal(orr_cal_classify(c, ORR_CAL_NEXT, sun, &to), ORR_CAL_MOVED);
    assert_int_equal(to, iso("2026-12-28T06:00:00Z"));
    assert_int_equal(orr_cal_classify(c, ORR_CAL_PREVIOUS, sun, &to), ORR_CAL_MOVED);
    assert_int_equal(to, iso("2026-12-26T06:00:00Z"));
    int64_t thu = iso("2026-12-24T06:00:00Z");
    assert_int_equal(orr_cal_classify(c, ORR_CAL_NEXT, thu, &to), ORR_CAL_KEPT);
    assert_int_equal(to, thu);
    orr_cal_free(c);
}

static void test_zone_decides_the_date(void **state)
{
    (void)state;
    orr_cal *c = xmas("America/New_York");
    /* 2026-12-25T03:00Z is still the 24th in New York: a business day */
    int64_t to;
    assert_int_equal(orr_cal_classify(c, ORR_CAL_SKIP, iso("2026-12-25T03:00:00Z"), &to),
                     ORR_CAL_KEPT);
    assert_int_equal(orr_cal_classify(c, ORR_CAL_SKIP, iso("2026-12-25T06:00:00Z"), &to),
                     ORR_CAL_SKIPPED);
    orr_cal_free(c);
}

/* Apply the policy to every cron fire time in [from - 40 days, to + 40 days],
 * and compare the sorted distinct results in (from, to] with orr_cal_next's walk. */
static void check_walk(const char *expr, const char *zone, orr_cal *c, orr_cal_policy p,
                       const char *from, const char *to)
{
    orr_cron cr = cron(expr);
    const orr_tz *tz = orr_tz_utc();
    orr_err err;
    if (zone)
        assert_int_equal(orr_tz_load(zone, &tz, &err), ORR_OK);
    int64_t a = iso(from), b = iso(to);
    size_t cap = 20000, n = 0;
    int64_t *want = malloc(cap * sizeof *want);
    int64_t t = a - 40 * 86400;
    while (orr_cron_next(&cr, tz, t, &t) == ORR_OK && t <= b + 40 * 86400) {
        int64_t adj;
        if (orr_cal_classify(c, p, t, &adj) == ORR_CAL_SKIPPED || adj <= a || adj > b)
            continue;
        assert_true(n < cap);
        want[n++] = adj;
    }
    /* sort and dedupe */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && want[j - 1] > want[j]; j--) {
            int64_t x = want[j];
            want[j] = want[j - 1];
            want[j - 1] = x;
        }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || want[m - 1] != want[i])
            want[m++] = want[i];
    size_t k = 0;
    t = a;
    int64_t f;
    while (orr_cal_next(&cr, tz, c, p, t, &f) == ORR_OK && f <= b) {
        if (k >= m || want[k] != f) {
            char x[32], y[32];
            fail_msg("%s %s policy %s: walk #%zu gave %s, want %s", expr, zone ? zone : "UTC",
                     orr_cal_policy_name(p), k, orr_tz_format_utc(f, x, sizeof x),
                     k < m ? orr_tz_format_utc(want[k], y, sizeof y) : "nothing");
        }
        assert_true(f > t);
        k++;
        t = f;
    }
    assert_int_equal(k, m);
    assert_true(m > 0);
    free(want);
}

static void test_walk_matches_classify(void **state)
{
    (void)state;
    static const char *const exprs[] = {"0 6 * * *", "30 * * * *", "0 9 * * SAT", "0 23 * * 1-5",
                                        "0 0 1 * *"};
    static const char *const zones[] = {NULL, "Europe/Berlin"};
    for (size_t z = 0; z < 2; z++) {
        orr_cal *c = xmas(zones[z]);
        for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
            for (int p = 0; p < 3; p++)
                check_walk(exprs[e], zones[z], c, (orr_cal_policy)p, "2026-11-20T00:00:00Z",
                           "2027-01-20T00:00:00Z");
        /* across the spring-forward of 2027-03-28 */
        for (int p = 0; p < 3; p++)
            check_walk("30 2 * * *", zones[z], c, (orr_cal_policy)p, "2027-03-15T00:00:00Z",
                       "2027-04-10T00:00:00Z");
        orr_cal_free(c);
    }
}

static void test_next_daily(void **state)
{
    (void)state;
    orr_cal *c = xmas(NULL);
    orr_cron d = cron("0 6 * * *");
    int64_t f;
    /* skip: from the 24th 06:00 the next is the 26th (the 25th excluded) */
    assert_int_equal(orr_cal_next(&d, NULL, c, ORR_CAL_SKIP, iso("2026-12-24T06:00:00Z"), &f),
                     ORR_OK);
    assert_int_equal(f, iso("2026-12-26T06:00:00Z"));
    /* next: Sunday's fire moves onto Monday's; one fire time */
    assert_int_equal(orr_cal_next(&d, NULL, c, ORR_CAL_NEXT, iso("2026-12-26T06:00:00Z"), &f),
                     ORR_OK);
    assert_int_equal(f, iso("2026-12-28T06:00:00Z"));
    assert_int_equal(orr_cal_next(&d, NULL, c, ORR_CAL_NEXT, f, &f), ORR_OK);
    assert_int_equal(f, iso("2026-12-29T06:00:00Z"));
    /* no calendar: the cron itself */
    assert_int_equal(orr_cal_next(&d, NULL, NULL, ORR_CAL_NEXT, iso("2026-12-24T06:00:00Z"), &f),
                     ORR_OK);
    assert_int_equal(f, iso("2026-12-25T06:00:00Z"));
    orr_cal_free(c);

    /* no business day at all: not found, quickly */
    orr_err err;
    assert_int_equal(orr_cal_new(NULL, 0, &c, &err), ORR_OK);
    for (int p = 0; p < 3; p++)
        assert_int_equal(orr_cal_next(&d, NULL, c, (orr_cal_policy)p, 0, &f), ORR_ENOTFOUND);
    orr_cal_free(c);
}

static void test_json(void **state)
{
    (void)state;
    const char *doc = "{\"timezone\":\"Europe/Berlin\",\"weekdays\":[1,2,3,4,5,6],"
                      "\"days\":[{\"day\":\"2026-12-25\",\"kind\":\"excluded\"},"
                      "{\"day\":\"2026-12-27\",\"kind\":\"included\",\"note\":\"stock take\"}]}";
    orr_cal *c;
    orr_err err;
    assert_int_equal(orr_cal_from_json(doc, strlen(doc), &c, &err), ORR_OK);
    assert_string_equal(orr_tz_name(orr_cal_tz(c)), "Europe/Berlin");
    assert_true(orr_cal_is_business_day(c, day("2026-12-26"))); /* Sat in weekdays */
    assert_false(orr_cal_is_business_day(c, day("2026-12-25")));
    assert_true(orr_cal_is_business_day(c, day("2026-12-27")));
    orr_cal_free(c);

    static const struct {
        const char *doc, *field;
    } bad[] = {
        {"[]", "calendar"},
        {"{\"timezone\":3}", "timezone"},
        {"{\"weekdays\":[0]}", "weekdays"},
        {"{\"days\":[{\"day\":\"2026-02-30\"}]}", "days[0].day"},
        {"{\"days\":[{\"day\":\"2026-02-03\"},{\"day\":\"2026-02-04\",\"kind\":\"x\"}]}",
         "days[1].kind"},
        {"{\"timezone\":\"Nowhere/Land\"}", "timezone"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = (orr_cal *)1;
        assert_int_not_equal(orr_cal_from_json(bad[i].doc, strlen(bad[i].doc), &c, &err), ORR_OK);
        assert_null(c);
        assert_string_equal(err.field, bad[i].field);
    }
}

static void test_dates_and_policies(void **state)
{
    (void)state;
    int64_t d;
    orr_err err;
    char buf[16];
    assert_int_equal(orr_cal_parse_date("2024-02-29", &d, &err), ORR_OK);
    assert_string_equal(orr_cal_format_date(d, buf, sizeof buf), "2024-02-29");
    assert_int_equal(orr_cal_parse_date("2023-02-29", &d, &err), ORR_EINVAL);
    assert_int_equal(orr_cal_parse_date("2023-2-9", &d, &err), ORR_EINVAL);
    assert_int_equal(orr_cal_parse_date("2023-02-0x", &d, &err), ORR_EINVAL);
    assert_int_equal(orr_cal_parse_date("2023-02-01 ", &d, &err), ORR_EINVAL);
    orr_cal_policy p;
    assert_int_equal(orr_cal_policy_parse(NULL, &p, &err), ORR_OK);
    assert_int_equal(p, ORR_CAL_SKIP);
    assert_int_equal(orr_cal_policy_parse("previous", &p, &err), ORR_OK);
    assert_int_equal(p, ORR_CAL_PREVIOUS);
    assert_int_equal(orr_cal_policy_parse("later", &p, &err), ORR_EINVAL);
    assert_string_equal(err.field, "calendar_policy");
}

/* ------------------------------------------------------------ .ics */

typedef struct {
    int64_t days[64];
    char notes[64][32];
    size_t n;
} collected;

static int collect(void *ctx, int64_t d, const char *summary, orr_err *err)
{
    (void)err;
    collected *c = ctx;
    if (c->n < 64) {
        snprintf(c->notes[c->n], sizeof c->notes[0], "%s", summary);
        c->days[c->n++] = d;
    }
    return 0;
}

static void ics_ok(const char *text, const char *from, const char *to, const char *want)
{
    collected c = {{0}, {{0}}, 0};
    orr_err err;
    orr_err_clear(&err);
    if (orr_ics_days(text, strlen(text), day(from), day(to), collect, &c, &err) != ORR_OK)
        fail_msg("ics refused: %s: %s", err.field, err.msg);
    char got[1024] = "";
    for (size_t i = 0; i < c.n; i++) {
        char b[16];
        if (i)
            strcat(got, " ");
        strcat(got, orr_cal_format_date(c.days[i], b, sizeof b));
    }
    assert_string_equal(got, want);
}

static void ics_bad(const char *text, const char *msg_prefix)
{
    collected c = {{0}, {{0}}, 0};
    orr_err err;
    assert_int_equal(orr_ics_days(text, strlen(text), 0, 30000, collect, &c, &err), ORR_EINVAL);
    assert_string_equal(err.field, "body");
    if (strncmp(err.msg, msg_prefix, strlen(msg_prefix)) != 0)
        fail_msg("error \"%s\" does not start with \"%s\"", err.msg, msg_prefix);
}

#define CAL(body)                                                                                  \
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\n" body "END:VCALENDAR\r\n"

static void test_ics_events(void **state)
{
    (void)state;
    /* all-day, folded summary, two days long */
    ics_ok(CAL("BEGIN:VEVENT\r\nUID:1\r\nDTSTART;VALUE=DATE:20261224\r\n"
               "DTEND;VALUE=DATE:20261226\r\nSUMMARY:Christ\r\n mas\r\nEND:VEVENT\r\n"),
           "2026-01-01", "2026-12-31", "2026-12-24 2026-12-25");
    /* timed: the date as written; one across midnight covers two days */
    ics_ok(CAL("BEGIN:VEVENT\nDTSTART;TZID=Europe/Berlin:20260501T090000\n"
               "DTEND;TZID=Europe/Berlin:20260501T100000\nEND:VEVENT\n"
               "BEGIN:VEVENT\nDTSTART:20260601T220000Z\nDURATION:PT4H\nEND:VEVENT\n"),
           "2026-01-01", "2026-12-31", "2026-05-01 2026-06-01 2026-06-02");
    /* yearly rule expanded over the range only, with an EXDATE */
    ics_ok(CAL("BEGIN:VEVENT\nDTSTART;VALUE=DATE:20200101\nRRULE:FREQ=YEARLY\n"
               "EXDATE;VALUE=DATE:20270101\nEND:VEVENT\n"),
           "2025-06-01", "2028-06-01", "2026-01-01 2028-01-01");
    /* last Monday of May (US Memorial Day), first Monday of September */
    ics_ok(CAL("BEGIN:VEVENT\nDTSTART;VALUE=DATE:20200525\n"
               "RRULE:FREQ=YEARLY;BYMONTH=5;BYDAY=-1MO\nEND:VEVENT\n"
               "BEGIN:VEVENT\nDTSTART;VALUE=DATE:20200907\n"
               "RRULE:FREQ=YEARLY;BYMONTH=9;BYDAY=1MO\nEND:VEVENT\n"),
           "2026-01-01", "2027-12-31", "2026-05-25 2027-05-31 2026-09-07 2027-09-06");
    /* weekly with COUNT (counted from DTSTART), interval 2 */
    ics_ok(CAL("BEGIN:VEVENT\nDTSTART;VALUE=DATE:20261201\n"
               "RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,FR;COUNT=3\nEND:VEVENT\n"),
           "2026-12-02", "2027-12-31", "2026-12-04 2026-12-15");
    /* monthly last day, UNTIL */
    ics_ok(CAL("BEGIN:VEVENT\nDTSTART;VALUE=DATE:20260131\n"
               "RRULE:FREQ=MONTHLY;BYMONTHDAY=-1;UNTIL=20260430\nEND:VEVENT\n"),
           "2026-01-01", "2026-12-31", "2026-01-31 2026-02-28 2026-03-31 2026-04-30");
    /* other components are passed over */
    ics_ok(CAL("BEGIN:VTIMEZONE\nTZID:X\nBEGIN:STANDARD\nDTSTART:19700101T000000\n"
               "END:STANDARD\nEND:VTIMEZONE\nBEGIN:VTODO\nDTSTART:20260101\nEND:VTODO\n"),
           "2026-01-01", "2026-12-31", "");
}

static void test_ics_errors_name_the_line(void **state)
{
    (void)state;
    ics_bad(CAL("BEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20261324\r\nEND:VEVENT\r\n"),
            "line 5: DTSTART");
    ics_bad(CAL("BEGIN:VEVENT\nSUMMARY:x\nEND:VEVENT\n"), "line 4: VEVENT without DTSTART");
    ics_bad(CAL("BEGIN:VEVENT\nDTSTART:20260101\nRRULE:FREQ=HOURLY\nEND:VEVENT\n"),
            "line 6: RRULE: FREQ");
    ics_bad(CAL("BEGIN:VEVENT\nDTSTART:20260101\nRRULE:FREQ=DAILY;BYSETPOS=1\nEND:VEVENT\n"),
            "line 6: RRULE: part not supported");
    ics_bad(CAL("BEGIN:VEVENT\nDTSTART:20260101\njunk line\nEND:VEVENT\n"),
            "line 6: not a property");
    ics_bad("hello\n", "line 1:");
    ics_bad("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20260101\n", "line 4: END:VCALENDAR missing");
    ics_bad(CAL("BEGIN:VEVENT\nDTSTART;VALUE=DATE:20260105\nDTEND;VALUE=DATE:20260101\n"
                "END:VEVENT\n"),
            "line 5: DTEND is before DTSTART");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_business_days),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_zone_decides_the_date),
        cmocka_unit_test(test_walk_matches_classify),
        cmocka_unit_test(test_next_daily),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_dates_and_policies),
        cmocka_unit_test(test_ics_events),
        cmocka_unit_test(test_ics_errors_name_the_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
