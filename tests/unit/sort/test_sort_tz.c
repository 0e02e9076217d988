/*
 * test_sort_tz.c - named (IANA) stream time zones: wall-clock parsing and
 * bucket edges across daylight-saving changes.
 *
 * Europe/Berlin in 2024 springs forward on March 31st at 01:00 UTC (02:00 CET
 * becomes 03:00 CEST) and falls back on October 27th at 01:00 UTC (03:00 CEST
 * becomes 02:00 CET). Expected instants are written from those two facts with
 * utc() below, never read back from the code under test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sort_spec.h"
#include "sort_time.h"

/* Seconds since the epoch of a UTC civil time. */
static int64_t utc(int y, unsigned mo, unsigned d, int h, int mi)
{
    return sort_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

static sort_tz zone(const char *name)
{
    sort_tz tz;
    orr_err err = {0};
    assert_int_equal(sort_tz_parse(name, &tz, &err), ORR_OK);
    assert_non_null(tz.zone);
    return tz;
}

static void label_of(int64_t t_s, sort_bucket_kind k, sort_tz tz, char *buf)
{
    sort_bucket_label(sort_bucket_start(t_s * 1000, k, tz), k, tz, buf);
}

static void test_tz_parse(void **state)
{
    (void)state;
    sort_tz tz;
    orr_err err = {0};
    sort_tz berlin = zone("Europe/Berlin");
    assert_int_equal(sort_tz_offset_at(berlin, utc(2024, 1, 15, 12, 0)), 3600);
    assert_int_equal(sort_tz_offset_at(berlin, utc(2024, 7, 15, 12, 0)), 7200);
    assert_int_equal(sort_tz_offset_at(zone("Asia/Shanghai"), utc(2024, 7, 15, 12, 0)), 8 * 3600);
    assert_int_equal(sort_tz_parse("Mars/Olympus_Mons", &tz, &err), ORR_ENOTFOUND);
    assert_string_equal(err.field, "timezone");
    assert_non_null(strstr(err.msg, "Mars/Olympus_Mons"));
    assert_int_equal(sort_tz_parse("../../etc/passwd", &tz, &err), ORR_EINVAL);
    assert_string_equal(err.field, "timezone");
    assert_int_equal(sort_tz_parse("+25:00", &tz, &err), ORR_EINVAL);
    assert_string_equal(err.field, "timezone");
    assert_int_equal(sort_tz_parse("", &tz, &err) == ORR_OK, 0);
}

static void test_tz_wall_clock(void **state)
{
    (void)state;
    sort_tz berlin = zone("Europe/Berlin");
    int64_t ms;
    const char *t = "2024-07-01 12:00:00";
    assert_int_equal(sort_time_parse_text(t, strlen(t), SORT_TF_YMD_HMS, berlin, &ms), ORR_OK);
    assert_int_equal(ms, utc(2024, 7, 1, 10, 0) * 1000);
    t = "20240115120000";
    assert_int_equal(sort_time_parse_text(t, strlen(t), SORT_TF_COMPACT, berlin, &ms), ORR_OK);
    assert_int_equal(ms, utc(2024, 1, 15, 11, 0) * 1000);
    /* in the spring gap: read with the offset before it (CET) */
    t = "2024-03-31 02:30:00";
    assert_int_equal(sort_time_parse_text(t, strlen(t), SORT_TF_YMD_HMS, berlin, &ms), ORR_OK);
    assert_int_equal(ms, utc(2024, 3, 31, 1, 30) * 1000);
    /* in the autumn fold: the earlier instant (CEST) */
    t = "2024-10-27 02:30:00";
    assert_int_equal(sort_time_parse_text(t, strlen(t), SORT_TF_YMD_HMS, berlin, &ms), ORR_OK);
    assert_int_equal(ms, utc(2024, 10, 27, 0, 30) * 1000);
    /* an explicit offset wins over the stream's zone */
    t = "2024-07-01T12:00:00Z";
    assert_int_equal(sort_time_parse_text(t, strlen(t), SORT_TF_ISO8601, berlin, &ms), ORR_OK);
    assert_int_equal(ms, utc(2024, 7, 1, 12, 0) * 1000);
    t = "2024-07-01T12:00:00";
    assert_int_equal(sort_time_parse_text(t, strlen(t), SORT_TF_ISO8601, berlin, &ms), ORR_OK);
    assert_int_equal(ms, utc(2024, 7, 1, 10, 0) * 1000);
}

static void test_tz_day_buckets(void **state)
{
    (void)state;
    sort_tz berlin = zone("Europe/Berlin");
    char label[SORT_LABEL_MAX];
    /* the spring day lasts 23 hours: 2024-03-30T23:00Z .. 2024-03-31T22:00Z */
    int64_t d = sort_bucket_start(utc(2024, 3, 31, 12, 0) * 1000, SORT_BUCKET_DAY, berlin);
    assert_int_equal(d, utc(2024, 3, 30, 23, 0));
    assert_int_equal(sort_bucket_end(d, SORT_BUCKET_DAY, berlin), utc(2024, 3, 31, 22, 0));
    assert_int_equal(sort_bucket_next(d, SORT_BUCKET_DAY, berlin), utc(2024, 3, 31, 22, 0));
    label_of(utc(2024, 3, 30, 23, 0), SORT_BUCKET_DAY, berlin, label);
    assert_string_equal(label, "20240331");
    label_of(utc(2024, 3, 30, 23, 0) - 1, SORT_BUCKET_DAY, berlin, label);
    assert_string_equal(label, "20240330");
    label_of(utc(2024, 3, 31, 22, 0) - 1, SORT_BUCKET_DAY, berlin, label);
    assert_string_equal(label, "20240331");
    label_of(utc(2024, 3, 31, 22, 0), SORT_BUCKET_DAY, berlin, label);
    assert_string_equal(label, "20240401");
    /* the autumn day lasts 25 hours: 2024-10-26T22:00Z .. 2024-10-27T23:00Z */
    d = sort_bucket_start(utc(2024, 10, 27, 1, 30) * 1000, SORT_BUCKET_DAY, berlin);
    assert_int_equal(d, utc(2024, 10, 26, 22, 0));
    assert_int_equal(sort_bucket_end(d, SORT_BUCKET_DAY, berlin), utc(2024, 10, 27, 23, 0));
    label_of(utc(2024, 10, 27, 23, 0) - 1, SORT_BUCKET_DAY, berlin, label);
    assert_string_equal(label, "20241027");
    label_of(utc(2024, 10, 27, 23, 0), SORT_BUCKET_DAY, berlin, label);
    assert_string_equal(label, "20241028");
    int64_t back;
    assert_int_equal(sort_bucket_from_label("20241027", SORT_BUCKET_DAY, berlin, &back), 0);
    assert_int_equal(back, utc(2024, 10, 26, 22, 0));
    /* a zone without DST: Shanghai's day starts at 16:00Z all year */
    sort_tz sh = zone("Asia/Shanghai");
    d = sort_bucket_start(utc(2024, 7, 1, 15, 59) * 1000, SORT_BUCKET_DAY, sh);
    assert_int_equal(d, utc(2024, 6, 30, 16, 0));
    label_of(utc(2024, 7, 1, 16, 0), SORT_BUCKET_DAY, sh, label);
    assert_string_equal(label, "20240702");
}

static void test_tz_hour_buckets(void **state)
{
    (void)state;
    sort_tz berlin = zone("Europe/Berlin");
    char label[SORT_LABEL_MAX];
    int64_t back;
    /* spring: 01:59:59 CET is hour 01, the next second is 03:00 CEST, hour 03 */
    int64_t h = sort_bucket_start((utc(2024, 3, 31, 1, 0) - 1) * 1000, SORT_BUCKET_HOUR, berlin);
    assert_int_equal(h, utc(2024, 3, 31, 0, 0));
    sort_bucket_label(h, SORT_BUCKET_HOUR, berlin, label);
    assert_string_equal(label, "2024033101");
    assert_int_equal(sort_bucket_end(h, SORT_BUCKET_HOUR, berlin), utc(2024, 3, 31, 1, 0));
    assert_int_equal(sort_bucket_next(h, SORT_BUCKET_HOUR, berlin), utc(2024, 3, 31, 1, 0));
    label_of(utc(2024, 3, 31, 1, 0), SORT_BUCKET_HOUR, berlin, label);
    assert_string_equal(label, "2024033103");
    /* the missing hour 02 has no instants: its label maps to where 03 starts */
    assert_int_equal(sort_bucket_from_label("2024033102", SORT_BUCKET_HOUR, berlin, &back), 0);
    assert_int_equal(back, utc(2024, 3, 31, 1, 0));
    /* autumn: both passes of 02:xx are one two-hour bucket, 00:00Z .. 02:00Z */
    h = sort_bucket_start(utc(2024, 10, 27, 0, 10) * 1000, SORT_BUCKET_HOUR, berlin);
    assert_int_equal(h, utc(2024, 10, 27, 0, 0));
    assert_int_equal(sort_bucket_start(utc(2024, 10, 27, 1, 50) * 1000, SORT_BUCKET_HOUR, berlin),
                     h);
    sort_bucket_label(h, SORT_BUCKET_HOUR, berlin, label);
    assert_string_equal(label, "2024102702");
    assert_int_equal(sort_bucket_end(h, SORT_BUCKET_HOUR, berlin), utc(2024, 10, 27, 2, 0));
    assert_int_equal(sort_bucket_from_label("2024102702", SORT_BUCKET_HOUR, berlin, &back), 0);
    assert_int_equal(back, h);
    /* the hour before the fold ends where the fold starts */
    h = sort_bucket_start((utc(2024, 10, 27, 0, 0) - 1) * 1000, SORT_BUCKET_HOUR, berlin);
    sort_bucket_label(h, SORT_BUCKET_HOUR, berlin, label);
    assert_string_equal(label, "2024102701");
    assert_int_equal(sort_bucket_end(h, SORT_BUCKET_HOUR, berlin), utc(2024, 10, 27, 0, 0));
    label_of(utc(2024, 10, 27, 2, 0), SORT_BUCKET_HOUR, berlin, label);
    assert_string_equal(label, "2024102703");
}

static void test_tz_quarter_buckets_in_fold(void **state)
{
    (void)state;
    sort_tz berlin = zone("Europe/Berlin");
    char label[SORT_LABEL_MAX];
    /* 02:20 CEST (00:20Z) and 02:20 CET (01:20Z) share the 02:15 bucket, which
     * may close only after its second pass, at 01:30Z */
    int64_t q = sort_bucket_start(utc(2024, 10, 27, 0, 20) * 1000, SORT_BUCKET_15M, berlin);
    assert_int_equal(q, utc(2024, 10, 27, 0, 15));
    assert_int_equal(sort_bucket_start(utc(2024, 10, 27, 1, 20) * 1000, SORT_BUCKET_15M, berlin),
                     q);
    sort_bucket_label(q, SORT_BUCKET_15M, berlin, label);
    assert_string_equal(label, "202410270215");
    assert_int_equal(sort_bucket_end(q, SORT_BUCKET_15M, berlin), utc(2024, 10, 27, 1, 30));
    assert_int_equal(sort_bucket_next(q, SORT_BUCKET_15M, berlin), utc(2024, 10, 27, 0, 30));
    /* 01:45 CEST, just before the fold, closes at its own end */
    q = sort_bucket_start(utc(2024, 10, 26, 23, 50) * 1000, SORT_BUCKET_15M, berlin);
    assert_int_equal(sort_bucket_end(q, SORT_BUCKET_15M, berlin), utc(2024, 10, 27, 0, 0));
}

/* Every instant of both DST days lies in [start, end) of its bucket, its
 * bucket's label matches its wall clock, and walking with sort_bucket_next()
 * visits 23, 25 (24 labels, 02 holding two hours) and 24 hour buckets. */
static void test_tz_tiling(void **state)
{
    (void)state;
    sort_tz berlin = zone("Europe/Berlin");
    const sort_bucket_kind kinds[] = {SORT_BUCKET_15M, SORT_BUCKET_HOUR, SORT_BUCKET_DAY};
    const int64_t days[] = {utc(2024, 3, 30, 23, 0), utc(2024, 10, 26, 22, 0),
                            utc(2024, 6, 30, 22, 0)};
    const int want_hours[] = {23, 24, 24};
    for (size_t di = 0; di < 3; di++) {
        for (size_t ki = 0; ki < 3; ki++) {
            sort_bucket_kind k = kinds[ki];
            for (int64_t t = days[di] - 3600; t < days[di] + 27 * 3600; t += 300) {
                int64_t s = sort_bucket_start(t * 1000, k, berlin);
                assert_true(s <= t);
                assert_true(t < sort_bucket_end(s, k, berlin));
                char label[SORT_LABEL_MAX];
                sort_bucket_label(s, k, berlin, label);
                int64_t back;
                assert_int_equal(sort_bucket_from_label(label, k, berlin, &back), 0);
                assert_int_equal(back, s);
            }
        }
        int n = 0;
        char prev[SORT_LABEL_MAX] = "";
        int64_t end = sort_bucket_next(days[di], SORT_BUCKET_DAY, berlin);
        for (int64_t h = days[di]; h < end && n < 100;
             h = sort_bucket_next(h, SORT_BUCKET_HOUR, berlin)) {
            char label[SORT_LABEL_MAX];
            sort_bucket_label(h, SORT_BUCKET_HOUR, berlin, label);
            assert_true(strcmp(label, prev) > 0);
            snprintf(prev, sizeof prev, "%s", label);
            n++;
        }
        assert_int_equal(n, want_hours[di]);
    }
}

static void test_tz_spec(void **state)
{
    (void)state;
    const char *text =
        "{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"
        "\"format\":{\"type\":\"delimited\",\"fields\":[\"a\"]},\"time\":{\"field\":\"a\","
        "\"format\":\"%%Y-%%m-%%d %%H:%%M:%%S\",\"timezone\":\"%s\"},\"bucket\":\"hour\","
        "\"interface\":{\"const\":\"i\"}}";
    char doc_text[1024];
    snprintf(doc_text, sizeof doc_text, text, "Europe/Berlin");
    json_error_t je;
    json_t *doc = json_loads(doc_text, 0, &je);
    assert_non_null(doc);
    sort_spec *s = NULL;
    orr_err err = {0};
    assert_int_equal(sort_spec_parse(doc, "spec", &s, &err), ORR_OK);
    json_decref(doc);
    assert_non_null(s->tz.zone);
    assert_string_equal(orr_tz_name(s->tz.zone), "Europe/Berlin");
    sort_spec_free(s);
    snprintf(doc_text, sizeof doc_text, text, "Europe/Atlantis");
    doc = json_loads(doc_text, 0, &je);
    assert_non_null(doc);
    s = NULL;
    assert_int_equal(sort_spec_parse(doc, "spec", &s, &err), ORR_EINVAL);
    json_decref(doc);
    assert_null(s);
    assert_string_equal(err.field, "spec.time.timezone");
    assert_non_null(strstr(err.msg, "Europe/Atlantis"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tz_parse),
        cmocka_unit_test(test_tz_wall_clock),
        cmocka_unit_test(test_tz_day_buckets),
        cmocka_unit_test(test_tz_hour_buckets),
        cmocka_unit_test(test_tz_quarter_buckets_in_fold),
        cmocka_unit_test(test_tz_tiling),
        cmocka_unit_test(test_tz_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
