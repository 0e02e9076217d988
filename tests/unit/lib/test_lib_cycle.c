/*
 * test_lib_cycle.c - the cycle mapping between dependent tasks: upstream
 * cycles across hourly/daily/weekly schedules and zones, "same" and manual
 * tasks, the previous fire time, and the inverse (downstream) mapping checked
 * against the forward one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "orr_cron.h"
#include "orr_cycle.h"
#include "orr_tz.h"

static int64_t iso(const char *s)
{
    int64_t t = 0;
    orr_err err;
    if (orr_tz_parse_iso8601(s, &t, &err) != ORR_OK)
        fail_msg("bad date in test: %s", s);
    return t;
}

static orr_cron cron(const char *expr)
{
    orr_cron c;
    orr_err err;
    if (orr_cron_parse_into(expr, &c, &err) != ORR_OK)
        fail_msg("bad cron in test: %s", expr);
    return c;
}

/* ------------------------------------------------------------ cycles */

static void test_cycles_hourly_on_hourly(void **state)
{
    (void)state;
    orr_cron h = cron("0 * * * *");
    int64_t out[ORR_CYCLE_MAX];
    size_t n;
    int64_t t = iso("2024-03-05T07:00:00Z");
    assert_int_equal(orr_cycle_upstream(&h, NULL, &h, NULL, 0, t, out, ORR_CYCLE_MAX, &n), ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], t);
}

static void test_cycles_hourly_on_daily(void **state)
{
    (void)state;
    orr_cron h = cron("0 * * * *"), d = cron("0 0 * * *");
    int64_t out[ORR_CYCLE_MAX];
    size_t n;
    /* 07:00 maps to that day's 00:00 run */
    assert_int_equal(orr_cycle_upstream(&h, NULL, &d, NULL, 0, iso("2024-03-05T07:00:00Z"), out,
                                        ORR_CYCLE_MAX, &n),
                     ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], iso("2024-03-05T00:00:00Z"));
    /* 00:00 maps to the same day's run, not the day before */
    assert_int_equal(orr_cycle_upstream(&h, NULL, &d, NULL, 0, iso("2024-03-05T00:00:00Z"), out,
                                        ORR_CYCLE_MAX, &n),
                     ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], iso("2024-03-05T00:00:00Z"));
}

static void test_cycles_daily_on_hourly(void **state)
{
    (void)state;
    orr_cron h = cron("0 * * * *"), d = cron("0 0 * * *");
    int64_t out[ORR_CYCLE_MAX];
    size_t n;
    assert_int_equal(orr_cycle_upstream(&d, NULL, &h, NULL, 0, iso("2024-03-05T00:00:00Z"), out,
                                        ORR_CYCLE_MAX, &n),
                     ORR_OK);
    assert_int_equal(n, 24);
    for (size_t i = 0; i < 24; i++)
        assert_int_equal(out[i], iso("2024-03-05T00:00:00Z") + (int64_t)i * 3600);
    /* a daily task at 02:00 in Berlin on an hourly UTC task, across the
     * spring-forward day (23 hours long) */
    const orr_tz *ber;
    orr_err err;
    assert_int_equal(orr_tz_load("Europe/Berlin", &ber, &err), ORR_OK);
    orr_cron d0 = cron("0 0 * * *");
    assert_int_equal(orr_cycle_upstream(&d0, ber, &h, NULL, 0, iso("2024-03-31T00:00:00+01:00"),
                                        out, ORR_CYCLE_MAX, &n),
                     ORR_OK);
    assert_int_equal(n, 23);
    /* too many cycles are refused, not truncated silently */
    orr_cron m = cron("* * * * *");
    orr_cron w = cron("0 0 * * 1");
    assert_int_equal(orr_cycle_upstream(&w, NULL, &m, NULL, 0, iso("2024-03-04T00:00:00Z"), out,
                                        ORR_CYCLE_MAX, &n),
                     ORR_ETOOBIG);
}

static void test_cycles_same_and_manual(void **state)
{
    (void)state;
    orr_cron h = cron("0 * * * *"), d = cron("0 0 * * *");
    int64_t out[4];
    size_t n;
    int64_t t = iso("2024-03-05T07:30:00Z");
    /* cycle "same": exactly t, whatever the schedules */
    assert_int_equal(orr_cycle_upstream(&h, NULL, &d, NULL, 1, t, out, 4, &n), ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], t);
    /* manual downstream: the upstream's latest fire <= t */
    assert_int_equal(orr_cycle_upstream(NULL, NULL, &h, NULL, 0, t, out, 4, &n), ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], iso("2024-03-05T07:00:00Z"));
    /* manual upstream: the same schedule time */
    assert_int_equal(orr_cycle_upstream(&h, NULL, NULL, NULL, 0, t, out, 4, &n), ORR_OK);
    assert_int_equal(out[0], t);
}

static void test_prev_fire(void **state)
{
    (void)state;
    orr_cron h = cron("0 * * * *"), d = cron("30 6 * * *");
    int64_t p;
    assert_int_equal(orr_cycle_prev_fire(&h, NULL, iso("2024-03-05T07:00:00Z"), &p), ORR_OK);
    assert_int_equal(p, iso("2024-03-05T06:00:00Z"));
    assert_int_equal(orr_cycle_prev_fire(&d, NULL, iso("2024-03-05T06:30:00Z"), &p), ORR_OK);
    assert_int_equal(p, iso("2024-03-04T06:30:00Z"));
    orr_cron never = cron("0 0 30 2 *");
    assert_int_equal(orr_cycle_prev_fire(&never, NULL, iso("2024-03-05T06:30:00Z"), &p),
                     ORR_ENOTFOUND);
}

/* ------------------------------------------------------------ downstream */

static int64_t down_out[ORR_CYCLE_MAX];

static void test_downstream_hourly_on_hourly(void **state)
{
    (void)state;
    orr_cron h = cron("0 * * * *");
    size_t n;
    int64_t end;
    /* the 13:00 upstream is waited for by the 13:00 downstream alone, not
     * the 14:00 one */
    int64_t s = iso("2024-03-05T13:00:00Z");
    assert_int_equal(
        orr_cycle_downstream(&h, NULL, &h, NULL, 0, s, down_out, ORR_CYCLE_MAX, &n, &end), ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(down_out[0], s);
    assert_int_equal(end, 0);
}

static void test_downstream_daily_and_hourly(void **state)
{
    (void)state;
    orr_cron h = cron("0 * * * *"), d = cron("0 0 * * *");
    size_t n;
    int64_t end;
    /* hourly on daily: the day's 24 hours wait for its run */
    assert_int_equal(orr_cycle_downstream(&h, NULL, &d, NULL, 0, iso("2024-03-05T00:00:00Z"),
                                          down_out, ORR_CYCLE_MAX, &n, &end),
                     ORR_OK);
    assert_int_equal(n, 24);
    for (size_t i = 0; i < 24; i++)
        assert_int_equal(down_out[i], iso("2024-03-05T00:00:00Z") + (int64_t)i * 3600);
    /* daily on hourly: each hour is waited for by its day's run */
    assert_int_equal(orr_cycle_downstream(&d, NULL, &h, NULL, 0, iso("2024-03-05T07:00:00Z"),
                                          down_out, ORR_CYCLE_MAX, &n, &end),
                     ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(down_out[0], iso("2024-03-05T00:00:00Z"));
    /* more than max: refused with the first max written */
    assert_int_equal(orr_cycle_downstream(&h, NULL, &d, NULL, 0, iso("2024-03-05T00:00:00Z"),
                                          down_out, 5, &n, &end),
                     ORR_ETOOBIG);
    assert_int_equal(n, 5);
}

static void test_downstream_same_and_manual(void **state)
{
    (void)state;
    orr_cron h = cron("0 * * * *");
    size_t n;
    int64_t end;
    int64_t s = iso("2024-03-05T07:00:00Z");
    assert_int_equal(orr_cycle_downstream(NULL, NULL, &h, NULL, 1, s, down_out, 4, &n, &end),
                     ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(down_out[0], s);
    /* a manual downstream: any schedule time before the next upstream fire */
    assert_int_equal(orr_cycle_downstream(NULL, NULL, &h, NULL, 0, s, down_out, 4, &n, &end),
                     ORR_OK);
    assert_int_equal(n, 0);
    assert_int_equal(end, iso("2024-03-05T08:00:00Z"));
}

/* For many pairs of schedules, t is in downstream(s) iff s is in
 * upstream(t). */
static void test_downstream_inverts_upstream(void **state)
{
    (void)state;
    const char *exprs[] = {"0 * * * *",    "0 0 * * *", "30 6 * * *",
                           "*/15 * * * *", "0 0 * * 1", "0 */6 * * *"};
    const size_t ne = sizeof exprs / sizeof exprs[0];
    static int64_t up[ORR_CYCLE_MAX];
    int64_t base = iso("2024-03-04T00:00:00Z");
    for (size_t i = 0; i < ne; i++) {
        for (size_t j = 0; j < ne; j++) {
            orr_cron dc = cron(exprs[i]), uc = cron(exprs[j]);
            int64_t s;
            assert_int_equal(orr_cron_next(&uc, NULL, base + 86400 * 2, &s), ORR_OK);
            size_t n, m;
            int64_t end;
            orr_status st =
                orr_cycle_downstream(&dc, NULL, &uc, NULL, 0, s, down_out, ORR_CYCLE_MAX, &n, &end);
            assert_true(st == ORR_OK);
            for (size_t k = 0; k < n; k++) {
                assert_int_equal(
                    orr_cycle_upstream(&dc, NULL, &uc, NULL, 0, down_out[k], up, ORR_CYCLE_MAX, &m),
                    ORR_OK);
                int found = 0;
                for (size_t q = 0; q < m; q++)
                    found |= up[q] == s;
                assert_true(found);
            }
            /* and every downstream cycle of the two weeks around s that maps
             * to s is listed */
            int64_t t = s - 8 * 86400;
            while (orr_cron_next(&dc, NULL, t, &t) == ORR_OK && t < s + 8 * 86400) {
                assert_int_equal(
                    orr_cycle_upstream(&dc, NULL, &uc, NULL, 0, t, up, ORR_CYCLE_MAX, &m), ORR_OK);
                int maps = 0, listed = 0;
                for (size_t q = 0; q < m; q++)
                    maps |= up[q] == s;
                for (size_t k = 0; k < n; k++)
                    listed |= down_out[k] == t;
                assert_int_equal(maps, listed);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cycles_hourly_on_hourly),
        cmocka_unit_test(test_cycles_hourly_on_daily),
        cmocka_unit_test(test_cycles_daily_on_hourly),
        cmocka_unit_test(test_cycles_same_and_manual),
        cmocka_unit_test(test_prev_fire),
        cmocka_unit_test(test_downstream_hourly_on_hourly),
        cmocka_unit_test(test_downstream_daily_and_hourly),
        cmocka_unit_test(test_downstream_same_and_manual),
        cmocka_unit_test(test_downstream_inverts_upstream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
