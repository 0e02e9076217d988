/* test_wh_types.c - value checks against target columns (what makes a row dirty). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "wh.h"

static int fits(wh_kind kind, int size, int scale, const char *v)
{
    wh_col c;
    memset(&c, 0, sizeof(c));
    c.kind = kind;
    c.size = size;
    c.scale = scale;
    const char *why = NULL;
    int ok = wh_value_check(&c, v, v ? (int64_t)strlen(v) : -1, &why);
    if (!ok)
        assert_non_null(why);
    return ok;
}

static void test_ints(void **state)
{
    (void)state;
    assert_true(fits(WH_K_INT, 4, 0, "-2147483648"));
    assert_false(fits(WH_K_INT, 4, 0, "2147483648"));
    assert_true(fits(WH_K_INT, 8, 0, "9223372036854775807"));
    assert_false(fits(WH_K_INT, 8, 0, "9223372036854775808"));
    assert_false(fits(WH_K_INT, 2, 0, "40000"));
    assert_false(fits(WH_K_INT, 8, 0, "12a"));
    assert_false(fits(WH_K_INT, 8, 0, ""));
    assert_false(fits(WH_K_INT, 8, 0, "-"));
}

static void test_numeric_and_float(void **state)
{
    (void)state;
    assert_true(fits(WH_K_NUMERIC, 12, 2, "1234567890.12"));
    assert_false(fits(WH_K_NUMERIC, 12, 2, "12345678901.12"));
    assert_true(fits(WH_K_NUMERIC, 12, 2, "-0.005"));
    assert_true(fits(WH_K_NUMERIC, 0, 0, "123456789012345678901234567890.5"));
    assert_false(fits(WH_K_NUMERIC, 0, 0, "1.2.3"));
    assert_false(fits(WH_K_NUMERIC, 0, 0, "."));
    assert_true(fits(WH_K_FLOAT, 0, 0, "1e-300"));
    assert_true(fits(WH_K_FLOAT, 0, 0, "-Infinity"));
    assert_false(fits(WH_K_FLOAT, 0, 0, "one"));
}

static void test_times_bools_bytes_text(void **state)
{
    (void)state;
    assert_true(fits(WH_K_DATE, 0, 0, "2024-02-29"));
    assert_false(fits(WH_K_DATE, 0, 0, "2023-02-29"));
    assert_false(fits(WH_K_DATE, 0, 0, "2024-13-01"));
    assert_true(fits(WH_K_TIMESTAMPTZ, 0, 0, "2024-01-01 10:00:00.123456+00"));
    assert_true(fits(WH_K_TIMESTAMPTZ, 0, 0, "2024-01-01T10:00:00+05:30"));
    assert_true(fits(WH_K_TIMESTAMP, 0, 0, "2024-01-01 10:00"));
    assert_false(fits(WH_K_TIMESTAMP, 0, 0, "2024-01-01 25:00:00"));
    assert_false(fits(WH_K_TIMESTAMP, 0, 0, "yesterday"));
    assert_true(fits(WH_K_BOOL, 0, 0, "TRUE"));
    assert_false(fits(WH_K_BOOL, 0, 0, "maybe"));
    assert_true(fits(WH_K_BYTES, 0, 0, "\\x00ff"));
    assert_false(fits(WH_K_BYTES, 0, 0, "\\x0"));
    assert_true(fits(WH_K_TEXT, 3, 0, "héé")); /* characters, not bytes */
    assert_false(fits(WH_K_TEXT, 3, 0, "four"));
    assert_false(fits(WH_K_TEXT, 0, 0, "\xff\xfe"));
    assert_true(fits(WH_K_TEXT, 0, 0, "日本語 😀"));
}

/* Every date form PostgreSQL prints (DateStyle ISO) loads back; what
 * PostgreSQL refuses is refused here (it would fail the whole COPY). */
static void test_pg_date_forms(void **state)
{
    (void)state;
    assert_true(fits(WH_K_DATE, 0, 0, "infinity"));
    assert_true(fits(WH_K_DATE, 0, 0, "-infinity"));
    assert_true(fits(WH_K_DATE, 0, 0, "0044-03-15 BC"));
    assert_true(fits(WH_K_DATE, 0, 0, "4714-11-24 BC"));
    assert_false(fits(WH_K_DATE, 0, 0, "4714-11-23 BC"));
    assert_true(fits(WH_K_DATE, 0, 0, "0001-02-29 BC")); /* 1 BC is a leap year */
    assert_false(fits(WH_K_DATE, 0, 0, "0002-02-29 BC"));
    assert_false(fits(WH_K_DATE, 0, 0, "0000-01-01"));
    assert_true(fits(WH_K_DATE, 0, 0, "5874897-12-31"));
    assert_true(fits(WH_K_TIMESTAMP, 0, 0, "-infinity"));
    assert_true(fits(WH_K_TIMESTAMP, 0, 0, "0044-03-15 12:00:00.5 BC"));
    assert_true(fits(WH_K_TIMESTAMP, 0, 0, "294276-12-31 23:59:59.999999"));
    assert_false(fits(WH_K_TIMESTAMP, 0, 0, "294277-01-01 00:00:00"));
    assert_true(fits(WH_K_TIMESTAMPTZ, 0, 0, "0044-03-15 12:00:00+00 BC"));
    assert_true(fits(WH_K_TIMESTAMPTZ, 0, 0, "1850-01-01 00:00:00+00:17:30"));
    assert_true(fits(WH_K_TIMESTAMPTZ, 0, 0, "infinity"));
    assert_true(fits(WH_K_TIME, 0, 0, "24:00:00"));
    assert_true(fits(WH_K_TIME, 0, 0, "12:00:00.123456+05:30"));
    assert_true(fits(WH_K_TIME, 0, 0, "12:00:00-03"));
    assert_false(fits(WH_K_TIME, 0, 0, "12:00:00 BC"));
    assert_true(fits(WH_K_NUMERIC, 10, 2, "NaN"));
    assert_true(fits(WH_K_NUMERIC, 0, 0, "-Infinity"));
    assert_false(fits(WH_K_NUMERIC, 10, 2, "Infinity"));
    assert_true(fits(WH_K_BYTES, 0, 0, "ab\\\\c\\001")); /* ab\\c\001 */
    assert_false(fits(WH_K_BYTES, 0, 0, "ab\\9"));
    assert_false(fits(WH_K_BYTES, 0, 0, "a\xff")); /* escape form must be UTF-8 */
}

/* A MariaDB TIME is a duration of up to 838 hours. */
static void test_mariadb_time(void **state)
{
    (void)state;
    wh_col c;
    memset(&c, 0, sizeof(c));
    c.kind = WH_K_TIME;
    snprintf(c.type, sizeof(c.type), "time(6)");
    const char *why = NULL;
    assert_true(wh_value_check(&c, "-838:59:59.000000", 17, &why));
    assert_true(wh_value_check(&c, "838:59:59", 9, &why));
    assert_false(wh_value_check(&c, "839:00:00", 9, &why));
    assert_false(wh_value_check(&c, "838:59:59.5", 11, &why));
    assert_true(wh_value_check(&c, "12:00:00+00", 11, &why));
    snprintf(c.type, sizeof(c.type), "time without time zone");
    assert_false(wh_value_check(&c, "838:59:59", 9, &why));
}

static void test_bits(void **state)
{
    (void)state;
    assert_true(wh_bits_valid("0101", 4));
    assert_false(wh_bits_valid("012", 3));
    assert_int_equal(wh_bits_significant("000101", 6), 3);
    char out[80];
    unsigned char v[2] = {0x01, 0x05};
    wh_bits_from_bytes(v, 2, 10, out);
    assert_memory_equal(out, "0100000101", 10);
    wh_bits_from_bytes(v + 1, 1, 3, out);
    assert_memory_equal(out, "101", 3);
    size_t n = wh_bits_to_hex("100000101", 9, out);
    assert_int_equal(n, 6);
    assert_memory_equal(out, "\\x0105", 6);
    n = wh_bits_to_hex("", 0, out);
    assert_int_equal(n, 2);
    assert_true(wh_bits_to_int("00000101", 8, 8, out, &n));
    assert_int_equal(n, 1);
    assert_memory_equal(out, "5", 1);
    const char *max63 = "0111111111111111111111111111111111111111111111111111111111111111";
    assert_true(wh_bits_to_int(max63, 64, 8, out, &n));
    assert_memory_equal(out, "9223372036854775807", 19);
    assert_false(wh_bits_to_int(max63 + 0, 64, 4, out, &n));
    assert_false(wh_bits_to_int("1111111111111111111111111111111111111111111111111111111111111111",
                                64, 8, out, &n));
}

static void test_nulls(void **state)
{
    (void)state;
    wh_col c;
    memset(&c, 0, sizeof(c));
    c.kind = WH_K_INT;
    const char *why = NULL;
    assert_true(wh_value_check(&c, NULL, -1, &why));
    c.not_null = 1;
    assert_false(wh_value_check(&c, NULL, -1, &why));
    assert_non_null(strstr(why, "NOT NULL"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ints),
        cmocka_unit_test(test_numeric_and_float),
        cmocka_unit_test(test_times_bools_bytes_text),
        cmocka_unit_test(test_pg_date_forms),
        cmocka_unit_test(test_mariadb_time),
        cmocka_unit_test(test_bits),
        cmocka_unit_test(test_nulls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
