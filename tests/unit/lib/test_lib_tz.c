/*
 * test_lib_tz.c - the time-zone layer: calendar arithmetic, ISO-8601, zone
 * names, offsets and local->UTC maps of real zones (gap, fold, footer rules
 * far past the file's table), TZif files built by hand (version 1, footer
 * only, J and zero-based day rules), malformed files, and the shared cache
 * under several threads.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orr_tz.h"

static int64_t iso(const char *s)
{
    int64_t t = 0;
    orr_err err;
    if (orr_tz_parse_iso8601(s, &t, &err) != ORR_OK)
        fail_msg("bad date in test: %s (%s)", s, err.msg);
    return t;
}

static const orr_tz *zone(const char *name)
{
    const orr_tz *tz = NULL;
    orr_err err;
    if (orr_tz_load(name, &tz, &err) != ORR_OK)
        fail_msg("zone %s: %s", name, err.msg);
    return tz;
}

/* ------------------------------------------------------------ calendar */

static void test_calendar(void **state)
{
    (void)state;
    assert_int_equal(orr_tz_days_from_civil(1970, 1, 1), 0);
    assert_int_equal(orr_tz_days_from_civil(2000, 3, 1), 11017);
    assert_int_equal(orr_tz_days_from_civil(1969, 12, 31), -1);
    assert_int_equal(orr_tz_weekday(0), 4);                                   /* Thursday */
    assert_int_equal(orr_tz_weekday(-1), 3);                                  /* Wednesday */
    assert_int_equal(orr_tz_weekday(orr_tz_days_from_civil(2026, 3, 29)), 0); /* Sunday */
    assert_int_equal(orr_tz_weekday(orr_tz_days_from_civil(2100, 3, 1)), 1);  /* Monday */
    assert_true(orr_tz_is_leap(2000));
    assert_true(orr_tz_is_leap(2028));
    assert_false(orr_tz_is_leap(2100));
    assert_false(orr_tz_is_leap(2026));
    assert_int_equal(orr_tz_days_in_month(2028, 2), 29);
    assert_int_equal(orr_tz_days_in_month(2100, 2), 28);
    assert_int_equal(orr_tz_days_in_month(2026, 4), 30);
    assert_int_equal(orr_tz_days_in_month(2026, 12), 31);
    /* every day of 1600..2400 round-trips, and consecutive days are consecutive dates */
    int64_t first = orr_tz_days_from_civil(1600, 1, 1), last = orr_tz_days_from_civil(2400, 12, 31);
    int64_t py = 1599;
    int pm = 12, pd = 31;
    for (int64_t z = first; z <= last; z++) {
        int64_t y;
        int m, d;
        orr_tz_civil_from_days(z, &y, &m, &d);
        if (orr_tz_days_from_civil(y, m, d) != z)
            fail_msg("day %lld does not round-trip", (long long)z);
        int next_ok = (y == py && m == pm && d == pd + 1) ||
                      (y == py && m == pm + 1 && d == 1 && pd == orr_tz_days_in_month(py, pm)) ||
                      (y == py + 1 && m == 1 && d == 1 && pm == 12 && pd == 31);
        if (!next_ok)
            fail_msg("day %lld: %lld-%d-%d does not follow %lld-%d-%d", (long long)z, (long long)y,
                     m, d, (long long)py, pm, pd);
        py = y;
        pm = m;
        pd = d;
    }
}

static void test_iso8601(void **state)
{
    (void)state;
    char buf[32];
    int64_t t;
    orr_err err;
    assert_int_equal(iso("1970-01-01T00:00:00Z"), 0);
    assert_int_equal(iso("2026-03-29T00:30:00Z"), 1774744200);
    assert_int_equal(iso("2026-03-29T02:30:00+02:00"), 1774744200);
    assert_int_equal(iso("2026-03-28T19:30:00-05:00"), 1774744200);
    assert_int_equal(iso("2026-03-29T06:00:00+0530"), 1774744200);
    assert_int_equal(iso("2026-03-29T00:30:00"), 1774744200); /* no zone: UTC */
    assert_int_equal(iso("2026-03-29 00:30"), 1774744200);
    assert_int_equal(iso("2026-03-29T00:30:00.999Z"), 1774744200);
    assert_int_equal(iso("2026-03-29"), 1774742400);
    assert_int_equal(iso("2028-02-29T00:00:00Z"), 1835395200);
    const char *bad[] = {"",
                         "garbage",
                         "2026-02-29T00:00:00Z",
                         "2100-02-29T00:00:00Z",
                         "2026-13-01T00:00:00Z",
                         "2026-03-29T24:00:00Z",
                         "2026-03-29T23:60:00Z",
                         "2026-03-29T00:30:00ZZ",
                         "2026-03-29T00:30:00+2",
                         "2026-03-29T00:30:00+02:",
                         "2026-03-29T00:30:00+02:00x",
                         "2026-3-29T00:30:00Z",
                         "2026-03-29T00:30:00.Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (orr_tz_parse_iso8601(bad[i], &t, &err) != ORR_EINVAL)
            fail_msg("\"%s\" should be refused", bad[i]);
    assert_string_equal(orr_tz_format_utc(0, buf, sizeof(buf)), "1970-01-01T00:00:00Z");
    assert_string_equal(orr_tz_format_utc(-1, buf, sizeof(buf)), "1969-12-31T23:59:59Z");
    assert_string_equal(orr_tz_format_utc(1774744200, buf, sizeof(buf)), "2026-03-29T00:30:00Z");
    assert_string_equal(orr_tz_format_utc(7289654399, buf, sizeof(buf)), "2200-12-31T23:59:59Z");
}

/* ------------------------------------------------------------- names */

static void test_names(void **state)
{
    (void)state;
    const orr_tz *tz;
    orr_err err;
    assert_int_equal(orr_tz_load("UTC", &tz, &err), ORR_OK);
    assert_ptr_equal(tz, orr_tz_utc());
    assert_int_equal(orr_tz_offset(tz, 1774744200), 0);
    assert_string_equal(orr_tz_name(tz), "UTC");
    assert_int_equal(orr_tz_load("Etc/UTC", &tz, &err), ORR_OK);
    assert_ptr_equal(tz, orr_tz_utc());

    const orr_tz *a = zone("Europe/Berlin"), *b = zone("Europe/Berlin");
    assert_ptr_equal(a, b); /* cached */
    assert_string_equal(orr_tz_name(a), "Europe/Berlin");

    const char *invalid[] = {
        "",        "../etc/passwd",  "/etc/localtime",  "Europe/../../etc/passwd", "Europe//Berlin",
        "Europe/", "Europe/Ber lin", "Europe/Berlin\n", "Europe/Berlin;rm"};
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        orr_err_clear(&err);
        tz = (const orr_tz *)&err;
        if (orr_tz_load(invalid[i], &tz, &err) != ORR_EINVAL)
            fail_msg("\"%s\" should be an invalid name", invalid[i]);
        assert_null(tz);
        assert_string_equal(err.field, "timezone");
        assert_non_null(strstr(err.msg, "invalid time zone name"));
    }
    assert_int_equal(orr_tz_load(NULL, &tz, &err), ORR_EINVAL);
    assert_int_equal(orr_tz_load("No/Such_Zone", &tz, &err), ORR_ENOTFOUND);
    assert_string_equal(err.field, "timezone");
    assert_non_null(strstr(err.msg, "unknown time zone \"No/Such_Zone\""));
    assert_int_equal(orr_tz_load("Europe", &tz, &err), ORR_ENOTFOUND); /* a folder */
}

/* ------------------------------------------------------------ real zones */

static void test_offsets(void **state)
{
    (void)state;
    const orr_tz *be = zone("Europe/Berlin"), *ny = zone("America/New_York");
    const orr_tz *lh = zone("Australia/Lord_Howe"), *kol = zone("Asia/Kolkata");
    assert_int_equal(orr_tz_offset(be, iso("2026-01-15T12:00:00Z")), 3600);
    assert_int_equal(orr_tz_offset(be, iso("2026-07-15T12:00:00Z")), 7200);
    assert_int_equal(orr_tz_offset(be, iso("2026-03-29T00:59:59Z")), 3600);
    assert_int_equal(orr_tz_offset(be, iso("2026-03-29T01:00:00Z")), 7200);
    assert_int_equal(orr_tz_offset(be, iso("2026-10-25T00:59:59Z")), 7200);
    assert_int_equal(orr_tz_offset(be, iso("2026-10-25T01:00:00Z")), 3600);
    /* past 2037 the file's table ends; the footer rule takes over */
    assert_int_equal(orr_tz_offset(be, iso("2100-03-28T00:59:59Z")), 3600);
    assert_int_equal(orr_tz_offset(be, iso("2100-03-28T01:00:00Z")), 7200);
    assert_int_equal(orr_tz_offset(be, iso("2199-10-27T00:59:59Z")), 7200);
    assert_int_equal(orr_tz_offset(be, iso("2199-10-27T01:00:00Z")), 3600);
    /* history from the table: mid-1945 Berlin kept "midsummer time", UTC+3 */
    assert_int_equal(orr_tz_offset(be, iso("1945-07-01T00:00:00Z")), 10800);
    assert_int_equal(orr_tz_offset(ny, iso("2026-03-08T06:59:59Z")), -18000);
    assert_int_equal(orr_tz_offset(ny, iso("2026-03-08T07:00:00Z")), -14400);
    assert_int_equal(orr_tz_offset(ny, iso("2026-11-01T06:00:00Z")), -18000);
    assert_int_equal(orr_tz_offset(lh, iso("2026-10-03T15:29:59Z")), 37800);
    assert_int_equal(orr_tz_offset(lh, iso("2026-10-03T15:30:00Z")), 39600);
    assert_int_equal(orr_tz_offset(kol, iso("2026-06-01T00:00:00Z")), 19800);
    assert_int_equal(orr_tz_offset(kol, iso("2150-06-01T00:00:00Z")), 19800);
}

static void test_local_to_utc(void **state)
{
    (void)state;
    const orr_tz *be = zone("Europe/Berlin"), *ny = zone("America/New_York");
    const orr_tz *lh = zone("Australia/Lord_Howe");
    orr_tz_map m;
    /* wall times are written as if UTC */
    orr_tz_local_to_utc(be, iso("2026-06-01T12:00:00"), &m);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.utc[0], iso("2026-06-01T10:00:00Z"));
    orr_tz_local_to_utc(be, iso("2026-03-29T02:30:00"), &m);
    assert_int_equal(m.n, 0);
    assert_int_equal(m.gap_end, iso("2026-03-29T01:00:00Z"));
    orr_tz_local_to_utc(be, iso("2026-03-29T02:00:00"), &m);
    assert_int_equal(m.n, 0);
    orr_tz_local_to_utc(be, iso("2026-03-29T01:59:59"), &m);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.utc[0], iso("2026-03-29T00:59:59Z"));
    orr_tz_local_to_utc(be, iso("2026-03-29T03:00:00"), &m);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.utc[0], iso("2026-03-29T01:00:00Z"));
    orr_tz_local_to_utc(be, iso("2026-10-25T02:30:00"), &m);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.utc[0], iso("2026-10-25T00:30:00Z"));
    assert_int_equal(m.utc[1], iso("2026-10-25T01:30:00Z"));
    assert_int_equal(m.fold_end, iso("2026-10-25T03:00:00"));
    orr_tz_local_to_utc(be, iso("2026-10-25T03:00:00"), &m);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.utc[0], iso("2026-10-25T02:00:00Z"));
    orr_tz_local_to_utc(be, iso("2150-03-29T02:30:00"), &m); /* footer-generated gap */
    assert_int_equal(m.n, 0);
    assert_int_equal(m.gap_end, iso("2150-03-29T01:00:00Z"));

    orr_tz_local_to_utc(ny, iso("2026-03-08T02:15:00"), &m);
    assert_int_equal(m.n, 0);
    assert_int_equal(m.gap_end, iso("2026-03-08T07:00:00Z"));
    orr_tz_local_to_utc(ny, iso("2026-11-01T01:15:00"), &m);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.utc[0], iso("2026-11-01T05:15:00Z"));
    assert_int_equal(m.utc[1], iso("2026-11-01T06:15:00Z"));
    assert_int_equal(m.fold_end, iso("2026-11-01T02:00:00"));

    orr_tz_local_to_utc(lh, iso("2026-10-04T02:10:00"), &m);
    assert_int_equal(m.n, 0);
    assert_int_equal(m.gap_end, iso("2026-10-03T15:30:00Z"));
    orr_tz_local_to_utc(lh, iso("2026-04-05T01:40:00"), &m);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.utc[0], iso("2026-04-04T14:40:00Z"));
    assert_int_equal(m.utc[1], iso("2026-04-04T15:10:00Z"));
    orr_tz_local_to_utc(orr_tz_utc(), 12345, &m);
    assert_int_equal(m.n, 1);
    assert_int_equal(m.utc[0], 12345);
}

/* Every UTC instant's wall time must map back to a set holding that instant. */
static void test_round_trip(void **state)
{
    (void)state;
    const char *zones[] = {"Europe/Berlin",     "America/New_York", "Australia/Lord_Howe",
                           "America/Sao_Paulo", "Pacific/Apia",     "Asia/Tehran"};
    for (size_t z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
        const orr_tz *tz = zone(zones[z]);
        for (int64_t t = iso("2010-01-01T00:00:00Z"); t < iso("2045-01-01T00:00:00Z"); t += 1799) {
            orr_tz_map m;
            orr_tz_local_to_utc(tz, t + orr_tz_offset(tz, t), &m);
            if (!((m.n >= 1 && m.utc[0] == t) || (m.n == 2 && m.utc[1] == t)))
                fail_msg("%s: %lld does not round-trip (n=%d)", zones[z], (long long)t, m.n);
        }
    }
}

/* ------------------------------------------------------ hand-made TZif */

struct tzbuf {
    uint8_t b[4096];
    size_t n;
};

static void put32(struct tzbuf *t, uint32_t v)
{
    t->b[t->n++] = (uint8_t)(v >> 24);
    t->b[t->n++] = (uint8_t)(v >> 16);
    t->b[t->n++] = (uint8_t)(v >> 8);
    t->b[t->n++] = (uint8_t)v;
}

static void put_block(struct tzbuf *t, char version, int tsz, const int64_t *at, const uint8_t *idx,
                      int nt, const int32_t *offs, int ntypes, uint32_t leapcnt)
{
    memcpy(t->b + t->n, "TZif", 4);
    t->n += 4;
    t->b[t->n++] = (uint8_t)version;
    memset(t->b + t->n, 0, 15);
    t->n += 15;
    put32(t, 0);            /* isutcnt */
    put32(t, 0);            /* isstdcnt */
    put32(t, leapcnt);      /* leapcnt */
    put32(t, (uint32_t)nt); /* timecnt */
    put32(t, (uint32_t)ntypes);
    put32(t, 4); /* charcnt */
    for (int i = 0; i < nt; i++) {
        if (tsz == 8)
            put32(t, (uint32_t)((uint64_t)at[i] >> 32));
        put32(t, (uint32_t)at[i]);
    }
    for (int i = 0; i < nt; i++)
        t->b[t->n++] = idx[i];
    for (int i = 0; i < ntypes; i++) {
        put32(t, (uint32_t)offs[i]);
        t->b[t->n++] = offs[i] != offs[0];
        t->b[t->n++] = 0;
    }
    memcpy(t->b + t->n, "XXX", 4);
    t->n += 4;
    for (uint32_t i = 0; i < leapcnt; i++) {
        if (tsz == 8)
            put32(t, 0);
        put32(t, 78796800u + i);
        put32(t, i + 1);
    }
}

static void mk_tzif(struct tzbuf *t, int version, const int64_t *at, const uint8_t *idx, int nt,
                    const int32_t *offs, int ntypes, const char *footer, uint32_t leapcnt)
{
    t->n = 0;
    put_block(t, version == 1 ? 0 : (char)('0' + version), 4, at, idx, nt, offs, ntypes, leapcnt);
    if (version == 1)
        return;
    put_block(t, (char)('0' + version), 8, at, idx, nt, offs, ntypes, leapcnt);
    size_t fl = strlen(footer);
    t->b[t->n++] = '\n';
    memcpy(t->b + t->n, footer, fl);
    t->n += fl;
    t->b[t->n++] = '\n';
}

static void test_tzif_version1(void **state)
{
    (void)state;
    struct tzbuf t;
    const int64_t at[] = {1000000, 2000000};
    const uint8_t idx[] = {1, 0};
    const int32_t offs[] = {3600, -7200};
    mk_tzif(&t, 1, at, idx, 2, offs, 2, "", 0);
    orr_tz *tz;
    orr_err err;
    assert_int_equal(orr_tz_parse("Test/V1", t.b, t.n, &tz, &err), ORR_OK);
    assert_int_equal(orr_tz_offset(tz, 0), 3600); /* type 0 before the first transition */
    assert_int_equal(orr_tz_offset(tz, 999999), 3600);
    assert_int_equal(orr_tz_offset(tz, 1000000), -7200);
    assert_int_equal(orr_tz_offset(tz, 2000000), 3600);
    assert_int_equal(orr_tz_offset(tz, INT64_C(5000000000)), 3600); /* last offset holds */
    orr_tz_map m;
    /* 1000000 - 7200 .. 1000000 + 3600: the clock went back 3 h, a fold */
    orr_tz_local_to_utc(tz, 1000000, &m);
    assert_int_equal(m.n, 2);
    assert_int_equal(m.utc[0], 1000000 - 3600);
    assert_int_equal(m.utc[1], 1000000 + 7200);
    assert_int_equal(m.fold_end, 1000000 + 3600);
    orr_tz_local_to_utc(tz, 2000000 - 3600, &m); /* the clock jumped forward 3 h: a gap */
    assert_int_equal(m.n, 0);
    assert_int_equal(m.gap_end, 2000000);
    orr_tz_free(tz);
}

static void test_tzif_footer_only(void **state)
{
    (void)state;
    struct tzbuf t;
    const int32_t offs[] = {3600};
    mk_tzif(&t, 2, NULL, NULL, 0, offs, 1, "CET-1CEST,M3.5.0,M10.5.0/3", 0);
    orr_tz *tz;
    orr_err err;
    assert_int_equal(orr_tz_parse("Test/Rule", t.b, t.n, &tz, &err), ORR_OK);
    const orr_tz *be = zone("Europe/Berlin");
    for (int64_t x = iso("2020-01-01T00:00:00Z"); x < iso("2040-01-01T00:00:00Z"); x += 3541)
        if (orr_tz_offset(tz, x) != orr_tz_offset(be, x))
            fail_msg("rule zone differs from Europe/Berlin at %lld", (long long)x);
    orr_tz_free(tz);

    /* Jn ignores Feb 29 (J60 is always March 1); n counts it (59 is Feb 29 in a leap year) */
    mk_tzif(&t, 3, NULL, NULL, 0, offs, 1, "AAA-1BBB,J60/2,J300/3", 0);
    assert_int_equal(orr_tz_parse("Test/J", t.b, t.n, &tz, &err), ORR_OK);
    assert_int_equal(orr_tz_offset(tz, iso("2028-03-01T00:59:59Z")), 3600);
    assert_int_equal(orr_tz_offset(tz, iso("2028-03-01T01:00:00Z")), 7200);
    orr_tz_free(tz);
    mk_tzif(&t, 3, NULL, NULL, 0, offs, 1, "AAA-1BBB,59/2,299/3", 0);
    assert_int_equal(orr_tz_parse("Test/N", t.b, t.n, &tz, &err), ORR_OK);
    assert_int_equal(orr_tz_offset(tz, iso("2028-02-29T00:59:59Z")), 3600);
    assert_int_equal(orr_tz_offset(tz, iso("2028-02-29T01:00:00Z")), 7200);
    assert_int_equal(orr_tz_offset(tz, iso("2027-03-01T01:00:00Z")), 7200);
    orr_tz_free(tz);

    /* southern hemisphere, negative rule times, <quoted> names, a 30-minute DST */
    mk_tzif(&t, 2, NULL, NULL, 0, offs, 1, "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", 0);
    assert_int_equal(orr_tz_parse("Test/LH", t.b, t.n, &tz, &err), ORR_OK);
    assert_int_equal(orr_tz_offset(tz, iso("2026-01-01T00:00:00Z")), 39600);
    assert_int_equal(orr_tz_offset(tz, iso("2026-07-01T00:00:00Z")), 37800);
    orr_tz_free(tz);
    mk_tzif(&t, 3, NULL, NULL, 0, offs, 1, "<-01>1<+00>0,M3.5.0/-1,M10.5.0/0", 0);
    assert_int_equal(orr_tz_parse("Test/Neg", t.b, t.n, &tz, &err), ORR_OK);
    assert_int_equal(orr_tz_offset(tz, iso("2026-01-01T00:00:00Z")), -3600);
    assert_int_equal(orr_tz_offset(tz, iso("2026-07-01T00:00:00Z")), 0);
    orr_tz_free(tz);
    /* no DST: fixed offset */
    mk_tzif(&t, 2, NULL, NULL, 0, offs, 1, "<+0530>-5:30", 0);
    assert_int_equal(orr_tz_parse("Test/Fixed", t.b, t.n, &tz, &err), ORR_OK);
    assert_int_equal(orr_tz_offset(tz, iso("2026-07-01T00:00:00Z")), 19800);
    orr_tz_free(tz);
}

static void test_tzif_malformed(void **state)
{
    (void)state;
    struct tzbuf t;
    orr_tz *tz;
    orr_err err;
    const int64_t at[] = {1000, 2000};
    const int64_t backwards[] = {2000, 1000};
    const uint8_t idx[] = {1, 0};
    const uint8_t bad_idx[] = {1, 7};
    const int32_t offs[] = {3600, 7200};
    const int32_t huge[] = {3600, 200000};

    mk_tzif(&t, 2, at, idx, 2, offs, 2, "CET-1", 0);
    assert_int_equal(orr_tz_parse("ok", t.b, t.n, &tz, &err), ORR_OK);
    orr_tz_free(tz);
    for (size_t cut = 0; cut < t.n - 1; cut += 3) { /* every truncation is refused */
        tz = (orr_tz *)&err;
        if (orr_tz_parse("cut", t.b, cut, &tz, &err) != ORR_EINVAL)
            fail_msg("truncated at %zu accepted", cut);
        assert_null(tz);
        assert_string_equal(err.field, "timezone");
    }
    t.b[0] = 'X';
    assert_int_equal(orr_tz_parse("magic", t.b, t.n, &tz, &err), ORR_EINVAL);
    assert_non_null(strstr(err.msg, "magic"));

    const char *bad_footers[] = {"CET",
                                 "CET-1CEST",
                                 "CET-1CEST,M3.5.0",
                                 "CET-1CEST,M13.5.0,M10.5.0",
                                 "CET-1CEST,M3.6.0,M10.5.0",
                                 "CET-1CEST,J0,J10",
                                 "C-1",
                                 "CET-1CEST,M3.5.0,M10.5.0x",
                                 "CET-25"};
    for (size_t i = 0; i < sizeof(bad_footers) / sizeof(bad_footers[0]); i++) {
        mk_tzif(&t, 2, at, idx, 2, offs, 2, bad_footers[i], 0);
        if (orr_tz_parse("footer", t.b, t.n, &tz, &err) != ORR_EINVAL)
            fail_msg("footer \"%s\" accepted", bad_footers[i]);
        assert_non_null(strstr(err.msg, "footer"));
    }
    mk_tzif(&t, 2, backwards, idx, 2, offs, 2, "", 0);
    assert_int_equal(orr_tz_parse("order", t.b, t.n, &tz, &err), ORR_EINVAL);
    mk_tzif(&t, 2, at, bad_idx, 2, offs, 2, "", 0);
    assert_int_equal(orr_tz_parse("index", t.b, t.n, &tz, &err), ORR_EINVAL);
    mk_tzif(&t, 2, at, idx, 2, huge, 2, "", 0);
    assert_int_equal(orr_tz_parse("offset", t.b, t.n, &tz, &err), ORR_EINVAL);
    mk_tzif(&t, 2, at, idx, 2, offs, 2, "", 2);
    assert_int_equal(orr_tz_parse("leaps", t.b, t.n, &tz, &err), ORR_EINVAL);
    assert_non_null(strstr(err.msg, "leap seconds"));
    mk_tzif(&t, 2, at, idx, 2, offs, 0, "", 0);
    assert_int_equal(orr_tz_parse("notypes", t.b, t.n, &tz, &err), ORR_EINVAL);
}

/* ------------------------------------------------------------ threads */

struct thread_arg {
    const orr_tz *got[3];
    int64_t sum;
};

static void *load_many(void *p)
{
    struct thread_arg *a = p;
    const char *names[3] = {"Asia/Tokyo", "America/Chicago", "Europe/Paris"};
    for (int round = 0; round < 200; round++) {
        for (int i = 0; i < 3; i++) {
            orr_err err;
            const orr_tz *tz;
            if (orr_tz_load(names[i], &tz, &err) != ORR_OK)
                return NULL;
            a->got[i] = tz;
            a->sum += orr_tz_offset(tz, 1774744200 + round * 86400);
        }
    }
    return NULL;
}

static void test_threads_share_zones(void **state)
{
    (void)state;
    orr_tz_cache_clear();
    pthread_t th[8];
    struct thread_arg args[8];
    memset(args, 0, sizeof(args));
    for (int i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&th[i], NULL, load_many, &args[i]), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 8; i++) {
        for (int z = 0; z < 3; z++) {
            assert_non_null(args[i].got[z]);
            assert_ptr_equal(args[i].got[z], args[0].got[z]); /* loaded once, shared */
        }
        assert_int_equal(args[i].sum, args[0].sum);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calendar),       cmocka_unit_test(test_iso8601),
        cmocka_unit_test(test_names),          cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_local_to_utc),   cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_tzif_version1),  cmocka_unit_test(test_tzif_footer_only),
        cmocka_unit_test(test_tzif_malformed), cmocka_unit_test(test_threads_share_zones),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    orr_tz_cache_clear();
    return rc;
}
