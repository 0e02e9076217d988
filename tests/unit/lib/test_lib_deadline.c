/*
 * test_lib_deadline.c - task deadlines: both forms parsed, bad ones refused
 * naming the field, and resolution against a schedule time: a duration
 * after it, a clock time on the same local day or the next one, in a zone
 * with summer time and across its DST gap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orr_deadline.h"
#include "orr_tz.h"

/* 2026-07-01T04:00:00Z = 06:00 in Berlin (CEST, +02:00) */
#define T_SUMMER_MS 1782878400000LL
/* 2026-01-15T05:00:00Z = 06:00 in Berlin (CET, +01:00) */
#define T_WINTER_MS 1768453200000LL

static void test_parse_forms(void **state)
{
    (void)state;
    orr_deadline d;
    orr_err err;
    assert_int_equal(orr_deadline_parse("30m", "f", &d, &err), ORR_OK);
    assert_int_equal(d.kind, ORR_DL_AFTER);
    assert_int_equal(d.ms, 30 * 60000);
    assert_int_equal(orr_deadline_parse("2h", "f", &d, &err), ORR_OK);
    assert_int_equal(d.ms, 2 * 3600000);
    assert_int_equal(orr_deadline_parse("07:30", "f", &d, &err), ORR_OK);
    assert_int_equal(d.kind, ORR_DL_CLOCK);
    assert_int_equal(d.ms, (7 * 60 + 30) * 60000);
    assert_int_equal(orr_deadline_parse("00:00", "f", &d, &err), ORR_OK);
    assert_int_equal(d.ms, 0);
}

static void test_parse_refusals(void **state)
{
    (void)state;
    static const char *const bad[] = {"",    "24:00", "07:60", "7:30",  "0m", "-5m",
                                      "5 m", "5w",    "32d",   "ab:cd", "5",  "m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        orr_deadline d = {ORR_DL_AFTER, 1};
        orr_err err;
        memset(&err, 0, sizeof err);
        assert_int_equal(orr_deadline_parse(bad[i], "spec.deadlines.start_by", &d, &err),
                         ORR_EINVAL);
        assert_string_equal(err.field, "spec.deadlines.start_by");
        assert_true(err.msg[0] != '\0');
        assert_int_equal(d.kind, ORR_DL_NONE);
    }
}

static void test_resolve_after(void **state)
{
    (void)state;
    orr_deadline d = {ORR_DL_AFTER, 90 * 60000};
    assert_int_equal(orr_deadline_at(&d, T_SUMMER_MS, NULL), T_SUMMER_MS + 90 * 60000);
    orr_deadline none = {ORR_DL_NONE, 0};
    assert_int_equal(orr_deadline_at(&none, T_SUMMER_MS, NULL), INT64_MAX);
}

static void test_resolve_clock(void **state)
{
    (void)state;
    const orr_tz *berlin;
    orr_err err;
    assert_int_equal(orr_tz_load("Europe/Berlin", &berlin, &err), ORR_OK);
    orr_deadline d = {ORR_DL_CLOCK, (7 * 60 + 30) * 60000};
    /* 07:30 Berlin, summer = 05:30Z the same day */
    assert_int_equal(orr_deadline_at(&d, T_SUMMER_MS, berlin), T_SUMMER_MS + 90 * 60000);
    /* winter: 07:30 CET = 06:30Z */
    assert_int_equal(orr_deadline_at(&d, T_WINTER_MS, berlin), T_WINTER_MS + 90 * 60000);
    /* a clock time before the schedule's wall time: the next day */
    orr_deadline early = {ORR_DL_CLOCK, 5 * 3600000};
    assert_int_equal(orr_deadline_at(&early, T_SUMMER_MS, berlin), T_SUMMER_MS + 23 * 3600000LL);
    /* at the schedule time exactly: that instant */
    orr_deadline same = {ORR_DL_CLOCK, 6 * 3600000};
    assert_int_equal(orr_deadline_at(&same, T_SUMMER_MS, berlin), T_SUMMER_MS);
    /* UTC when no zone is given */
    assert_int_equal(orr_deadline_at(&d, T_SUMMER_MS, NULL), T_SUMMER_MS + 3 * 3600000 + 1800000);
}

static void test_resolve_dst_gap(void **state)
{
    (void)state;
    const orr_tz *berlin;
    orr_err err;
    assert_int_equal(orr_tz_load("Europe/Berlin", &berlin, &err), ORR_OK);
    /* 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00Z). Scheduled at
     * 00:30 CET (2026-03-28T23:30Z), "02:30" does not exist that day: the
     * end of the gap, 01:00Z. */
    int64_t sched = 1774740600000LL;
    orr_deadline d = {ORR_DL_CLOCK, (2 * 60 + 30) * 60000};
    assert_int_equal(orr_deadline_at(&d, sched, berlin), 1774746000000LL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_forms),     cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_resolve_after),   cmocka_unit_test(test_resolve_clock),
        cmocka_unit_test(test_resolve_dst_gap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
