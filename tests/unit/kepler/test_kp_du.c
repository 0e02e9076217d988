/*
 * test_kp_du.c - keplerd's data-unit dependencies: the bucket grid read from
 * a sort stream's spec, the buckets an instance's data period maps to, the
 * reconciled-unit cache, and the readiness rule (an instance may run only
 * when every bucket of its cycle is reconciled).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orr_cron.h"
#include "kp_du.h"
#include "kp_index.h"
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

static kp_du_grid grid(const char *spec)
{
    kp_du_grid g;
    orr_err err;
    if (kp_du_grid_parse(spec, &g, &err) != ORR_OK)
        fail_msg("bad stream spec in test: %s (%s: %s)", spec, err.field, err.msg);
    return g;
}

/* ------------------------------------------------------------ grid */

static void test_grid_parse(void **state)
{
    (void)state;
    kp_du_grid g = grid("{\"name\":\"s\",\"bucket\":\"hour\"}");
    assert_int_equal(g.size_s, 3600);
    assert_int_equal(g.tz_s, 0);
    g = grid("{\"bucket\":\"day\",\"time\":{\"format\":\"epoch_s\",\"timezone\":\"+08:00\"}}");
    assert_int_equal(g.size_s, 86400);
    assert_int_equal(g.tz_s, 8 * 3600);
    g = grid("{\"bucket\":\"15m\",\"time\":{\"timezone\":\"-0530\"}}");
    assert_int_equal(g.size_s, 900);
    assert_int_equal(g.tz_s, -(5 * 3600 + 30 * 60));
    g = grid("{\"bucket\":\"hour\",\"time\":{\"timezone\":\"UTC\"}}");
    assert_int_equal(g.tz_s, 0);
}

static void test_grid_errors_name_the_field(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *field;
    } bad[] = {
        {"{\"name\":\"s\"}", "stream.bucket"},
        {"{\"bucket\":\"week\"}", "stream.bucket"},
        {"{\"bucket\":3600}", "stream.bucket"},
        {"{\"bucket\":\"hour\",\"time\":{\"timezone\":\"Asia/Shanghai\"}}", "stream.time.timezone"},
        {"{\"bucket\":\"hour\",\"time\":{\"timezone\":\"+8\"}}", "stream.time.timezone"},
        {"{\"bucket\":\"hour\",\"time\":{\"timezone\":\"+08:75\"}}", "stream.time.timezone"},
        {"{\"bucket\":\"hour\",\"time\":\"UTC\"}", "stream.time"},
        {"[1]", "stream"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kp_du_grid g;
        orr_err err;
        orr_err_clear(&err);
        assert_int_equal(kp_du_grid_parse(bad[i].spec, &g, &err), ORR_EINVAL);
        assert_string_equal(err.field, bad[i].field);
        assert_true(err.msg[0] != '\0');
    }
    kp_du_grid g;
    orr_err err;
    assert_int_equal(kp_du_grid_parse("{\"bucket\":", &g, &err), ORR_EINVAL);
    assert_int_equal(kp_du_grid_parse(NULL, &g, &err), ORR_EINVAL);
}

static void test_bucket_start_in_zone(void **state)
{
    (void)state;
    kp_du_grid utc = {3600, 0}, cn = {86400, 8 * 3600}, ind = {900, 5 * 3600 + 1800};
    assert_int_equal(kp_du_bucket_start(&utc, iso("2024-03-05T07:42:10Z")),
                     iso("2024-03-05T07:00:00Z"));
    /* a +08:00 day starts at 16:00 UTC the day before */
    assert_int_equal(kp_du_bucket_start(&cn, iso("2024-03-05T07:42:10Z")),
                     iso("2024-03-04T16:00:00Z"));
    assert_int_equal(kp_du_bucket_start(&cn, iso("2024-03-05T16:00:00Z")),
                     iso("2024-03-05T16:00:00Z"));
    assert_int_equal(kp_du_bucket_start(&ind, iso("2024-03-05T07:42:10Z")),
                     iso("2024-03-05T07:30:00Z"));
    /* before the epoch the floor still goes down */
    assert_int_equal(kp_du_bucket_start(&utc, -1), -3600);
}

/* ------------------------------------------------------------ mapping */

static void test_daily_task_on_hourly_stream_needs_24(void **state)
{
    (void)state;
    orr_cron daily = cron("0 0 * * *");
    kp_du_grid g = {3600, 0};
    int64_t out[KP_DU_MAX_BUCKETS];
    size_t n = 0;
    int64_t t = iso("2024-03-05T00:00:00Z");
    assert_int_equal(kp_du_buckets(&daily, orr_tz_utc(), &g, t, out, KP_DU_MAX_BUCKETS, &n), ORR_OK);
    assert_int_equal(n, 24);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(out[i], t + (int64_t)i * 3600);
}

static void test_hourly_task_on_daily_stream_needs_its_day(void **state)
{
    (void)state;
    orr_cron hourly = cron("0 * * * *");
    kp_du_grid g = {86400, 0};
    int64_t out[KP_DU_MAX_BUCKETS];
    size_t n = 0;
    assert_int_equal(kp_du_buckets(&hourly, orr_tz_utc(), &g, iso("2024-03-05T13:00:00Z"), out,
                                   KP_DU_MAX_BUCKETS, &n),
                     ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], iso("2024-03-05T00:00:00Z"));
}

static void test_same_grain_maps_one_to_one(void **state)
{
    (void)state;
    orr_cron q = cron("*/15 * * * *");
    kp_du_grid g = {900, 0};
    int64_t out[KP_DU_MAX_BUCKETS];
    size_t n = 0;
    int64_t t = iso("2024-03-05T13:45:00Z");
    assert_int_equal(kp_du_buckets(&q, orr_tz_utc(), &g, t, out, KP_DU_MAX_BUCKETS, &n), ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], t);
}

static void test_manual_task_maps_bucket_of_t(void **state)
{
    (void)state;
    kp_du_grid g = {3600, 0};
    int64_t out[KP_DU_MAX_BUCKETS];
    size_t n = 0;
    assert_int_equal(
        kp_du_buckets(NULL, NULL, &g, iso("2024-03-05T13:20:00Z"), out, KP_DU_MAX_BUCKETS, &n),
        ORR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], iso("2024-03-05T13:00:00Z"));
}

static void test_cycle_overlapping_two_zone_days(void **state)
{
    (void)state;
    /* a UTC day overlaps two +08:00 days: both must be reconciled */
    orr_cron daily = cron("0 0 * * *");
    kp_du_grid g = {86400, 8 * 3600};
    int64_t out[KP_DU_MAX_BUCKETS];
    size_t n = 0;
    assert_int_equal(kp_du_buckets(&daily, orr_tz_utc(), &g, iso("2024-03-05T00:00:00Z"), out,
                                   KP_DU_MAX_BUCKETS, &n),
                     ORR_OK);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], iso("2024-03-04T16:00:00Z"));
    assert_int_equal(out[1], iso("2024-03-05T16:00:00Z"));
}

static void test_too_many_buckets(void **state)
{
    (void)state;
    orr_cron daily = cron("0 0 * * *");
    kp_du_grid g = {900, 0};
    int64_t out[10];
    size_t n = 0;
    assert_int_equal(
        kp_du_buckets(&daily, orr_tz_utc(), &g, iso("2024-03-05T00:00:00Z"), out, 10, &n),
        ORR_ETOOBIG);
    assert_int_equal(n, 10);
}

/* ------------------------------------------------------------ cache */

static void test_cache_states(void **state)
{
    (void)state;
    kp_du_cache *c = kp_du_cache_create();
    int64_t b = iso("2024-03-05T07:00:00Z") * 1000;
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b), KP_DU_UNKNOWN);
    kp_du_listed(c, "s", "biz", "login", b, b + 3600 * 1000);
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b), KP_DU_PENDING);
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b + 3600 * 1000), KP_DU_UNKNOWN);
    /* another interface or business is another unit */
    assert_int_equal(kp_du_get(c, "s", "biz", "logout", b), KP_DU_UNKNOWN);
    assert_int_equal(kp_du_get(c, "s", "biz2", "login", b), KP_DU_UNKNOWN);
    kp_du_mark(c, "s", "biz", "login", b);
    kp_du_mark(c, "s", "biz", "login", b); /* idempotent */
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b), KP_DU_RECONCILED);
    assert_int_equal(kp_du_get(c, "s", "biz", "logout", b), KP_DU_UNKNOWN);
    /* a touching span extends the listed one; a distant one replaces it */
    kp_du_listed(c, "s", "biz", "login", b + 3600 * 1000, b + 7200 * 1000);
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b + 3600 * 1000), KP_DU_PENDING);
    kp_du_listed(c, "s", "biz", "login", b + 86400 * 1000, b + 90000 * 1000);
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b + 3600 * 1000), KP_DU_UNKNOWN);
    /* reconciled marks outlive the spans; forget drops spans and old marks */
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b), KP_DU_RECONCILED);
    kp_du_mark(c, "s", "biz", "login", b - 3600 * 1000);
    kp_du_forget(c, b);
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b), KP_DU_RECONCILED);
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b - 3600 * 1000), KP_DU_UNKNOWN);
    assert_int_equal(kp_du_get(c, "s", "biz", "login", b + 86400 * 1000), KP_DU_UNKNOWN);
    kp_du_cache_destroy(c);
}

static void test_cache_marks_out_of_order(void **state)
{
    (void)state;
    kp_du_cache *c = kp_du_cache_create();
    int64_t order[] = {5, 1, 9, 3, 7, 2, 8, 0, 6, 4};
    for (size_t i = 0; i < 10; i++)
        kp_du_mark(c, "s", "b", "i", order[i] * 900000);
    kp_du_listed(c, "s", "b", "i", 0, 20 * 900000);
    for (int64_t k = 0; k < 20; k++)
        assert_int_equal(kp_du_get(c, "s", "b", "i", k * 900000),
                         k < 10 ? KP_DU_RECONCILED : KP_DU_PENDING);
    kp_du_cache_destroy(c);
}

/* ------------------------------------------------------------ readiness */

/* A daily task on an hourly stream: waiting until all 24 hours of its day
 * are reconciled, in any order; the unit of a neighbouring day or another
 * interface does not count. */
static void test_readiness_daily_on_hourly(void **state)
{
    (void)state;
    orr_cron daily = cron("0 0 * * *");
    kp_du_grid g = grid("{\"bucket\":\"hour\"}");
    int64_t buckets[KP_DU_MAX_BUCKETS];
    size_t n = 0;
    int64_t t = iso("2024-03-05T00:00:00Z");
    assert_int_equal(kp_du_buckets(&daily, orr_tz_utc(), &g, t, buckets, KP_DU_MAX_BUCKETS, &n),
                     ORR_OK);
    kp_du_cache *c = kp_du_cache_create();
    int unknown = 0;
    int64_t from = 0, to = 0;

    /* nothing listed yet: not met, and the span to read is the whole day */
    assert_false(kp_du_met(c, "s", "b", "i", buckets, n, g.size_s, &unknown, &from, &to));
    assert_true(unknown);
    assert_int_equal(from, t * 1000);
    assert_int_equal(to, (t + 86400) * 1000);

    /* listed: none reconciled -> pending, nothing left to read */
    kp_du_listed(c, "s", "b", "i", from, to);
    assert_false(kp_du_met(c, "s", "b", "i", buckets, n, g.size_s, &unknown, &from, &to));
    assert_false(unknown);

    /* 23 of 24 hours (odd ones first), plus noise that must not count */
    kp_du_mark(c, "s", "b", "i", (t - 3600) * 1000);
    kp_du_mark(c, "s", "b", "i", (t + 86400) * 1000);
    kp_du_mark(c, "s", "b", "other", (t + 5 * 3600) * 1000);
    kp_du_mark(c, "s", "x", "i", (t + 5 * 3600) * 1000);
    for (int h = 1; h < 24; h += 2)
        kp_du_mark(c, "s", "b", "i", (t + h * 3600) * 1000);
    for (int h = 0; h < 24; h += 2)
        if (h != 10)
            kp_du_mark(c, "s", "b", "i", (t + h * 3600) * 1000);
    assert_false(kp_du_met(c, "s", "b", "i", buckets, n, g.size_s, &unknown, &from, &to));
    assert_false(unknown);

    /* the last hour: met */
    kp_du_mark(c, "s", "b", "i", (t + 10 * 3600) * 1000);
    assert_true(kp_du_met(c, "s", "b", "i", buckets, n, g.size_s, &unknown, &from, &to));

    /* the next day's instance is not met by this day's units */
    assert_int_equal(
        kp_du_buckets(&daily, orr_tz_utc(), &g, t + 86400, buckets, KP_DU_MAX_BUCKETS, &n), ORR_OK);
    assert_false(kp_du_met(c, "s", "b", "i", buckets, n, g.size_s, &unknown, &from, &to));
    assert_true(unknown); /* its hours after the first were never listed */
    assert_int_equal(from, (t + 86400 + 3600) * 1000);
    assert_int_equal(to, (t + 2 * 86400) * 1000);
    kp_du_cache_destroy(c);
}

/* The task spec names the unit; bad data-unit upstreams name the field. */
static void test_task_spec_data_unit(void **state)
{
    (void)state;
    kp_task t;
    orr_err err;
    assert_int_equal(
        kp_task_parse(
            &t,
            "{\"name\":\"d\",\"team\":\"t\",\"type\":\"shell\",\"schedule\":\"0 0 * * *\","
            "\"config\":{\"command\":\"true\"},\"upstreams\":[{\"kind\":\"data_unit\","
            "\"stream\":\"clicks\",\"business\":\"b42\",\"interface\":\"login\"}]}",
            "UTC", 60000, &err),
        ORR_OK);
    assert_int_equal(t.n_deps, 1);
    assert_int_equal(t.deps[0].kind, KP_DEP_DATA_UNIT);
    assert_string_equal(t.deps[0].stream, "clicks");
    assert_string_equal(t.deps[0].business, "b42");
    assert_string_equal(t.deps[0].interface, "login");
    kp_task_clear(&t);

    assert_int_equal(
        kp_task_parse(&t,
                      "{\"name\":\"d\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":"
                      "\"true\"},\"upstreams\":[{\"kind\":\"strong\",\"task\":\"u\"},{\"kind\":"
                      "\"data_unit\",\"stream\":\"clicks\",\"business\":\"b42\"}]}",
                      "UTC", 60000, &err),
        ORR_EINVAL);
    assert_string_equal(err.field, "spec.upstreams[1].interface");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_parse),
        cmocka_unit_test(test_grid_errors_name_the_field),
        cmocka_unit_test(test_bucket_start_in_zone),
        cmocka_unit_test(test_daily_task_on_hourly_stream_needs_24),
        cmocka_unit_test(test_hourly_task_on_daily_stream_needs_its_day),
        cmocka_unit_test(test_same_grain_maps_one_to_one),
        cmocka_unit_test(test_manual_task_maps_bucket_of_t),
        cmocka_unit_test(test_cycle_overlapping_two_zone_days),
        cmocka_unit_test(test_too_many_buckets),
        cmocka_unit_test(test_cache_states),
        cmocka_unit_test(test_cache_marks_out_of_order),
        cmocka_unit_test(test_readiness_daily_on_hourly),
        cmocka_unit_test(test_task_spec_data_unit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
