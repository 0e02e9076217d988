/* test_lib_logidx.c - the line index: records per line across reads, partial
 * and long lines, stamps that never go back, the search for a byte's line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orr_logidx.h"

static orr_logidx_rec rec_at(const orr_buf *b, size_t k)
{
    orr_logidx_rec r;
    orr_logidx_decode((const unsigned char *)b->data + k * ORR_LOGIDX_REC, &r);
    return r;
}

static void test_encode_round_trip(void **state)
{
    (void)state;
    unsigned char raw[ORR_LOGIDX_REC];
    orr_logidx_rec in = {0x0102030405060708ULL, 1764612000123LL}, out;
    orr_logidx_encode(&in, raw);
    assert_int_equal(raw[0], 0x08); /* little-endian */
    assert_int_equal(raw[7], 0x01);
    orr_logidx_decode(raw, &out);
    assert_true(out.offset == in.offset && out.ms == in.ms);
}

static void test_lines_across_reads(void **state)
{
    (void)state;
    orr_buf b = ORR_BUF_INIT;
    orr_logidx_scan s;
    orr_logidx_scan_init(&s, 0, 0, 0);
    /* "ab\ncd" then "e\n\nf" (a line split between reads, an empty line, a
     * last line without newline). */
    assert_int_equal(orr_logidx_feed(&s, "ab\ncd", 5, 100, &b), 2);
    assert_int_equal(orr_logidx_feed(&s, "e\n\nf", 4, 90, &b), 2); /* clock went back */
    assert_int_equal(orr_logidx_feed(&s, "", 0, 200, &b), 0);
    assert_int_equal(b.len, 4 * ORR_LOGIDX_REC);
    uint64_t want_off[] = {0, 3, 7, 8};
    int64_t want_ms[] = {100, 100, 100, 100};
    for (size_t k = 0; k < 4; k++) {
        assert_true(rec_at(&b, k).offset == want_off[k]);
        assert_true(rec_at(&b, k).ms == want_ms[k]);
    }
    assert_true(s.offset == 9 && !s.at_line_start);
    orr_buf_free(&b);
}

static void test_continue_and_long_line(void **state)
{
    (void)state;
    orr_buf b = ORR_BUF_INIT;
    orr_logidx_scan s;
    orr_logidx_scan_init(&s, 10, '\n', 50); /* a log that ended with a newline */
    static char big[200000];
    memset(big, 'x', sizeof big);
    big[sizeof big - 1] = '\n';
    assert_int_equal(orr_logidx_feed(&s, big, 70000, 60, &b), 1);
    assert_int_equal(orr_logidx_feed(&s, big + 70000, sizeof big - 70000, 70, &b), 0);
    assert_int_equal(orr_logidx_feed(&s, "z", 1, 80, &b), 1);
    assert_true(rec_at(&b, 0).offset == 10 && rec_at(&b, 0).ms == 60);
    assert_true(rec_at(&b, 1).offset == 10 + sizeof big && rec_at(&b, 1).ms == 80);
    orr_logidx_scan_init(&s, 4, 'q', 0); /* mid-line: no record for the next byte */
    orr_buf_reset(&b);
    assert_int_equal(orr_logidx_feed(&s, "r\n", 2, 1, &b), 0);
    orr_buf_free(&b);
}

static orr_status read_buf(void *ud, uint64_t first, size_t count, orr_logidx_rec *out,
                           orr_err *err)
{
    (void)err;
    const orr_buf *b = ud;
    if ((first + count) * ORR_LOGIDX_REC > b->len)
        return ORR_EIO;
    for (size_t i = 0; i < count; i++)
        out[i] = rec_at(b, first + i);
    return ORR_OK;
}

static void test_find(void **state)
{
    (void)state;
    orr_buf b = ORR_BUF_INIT;
    orr_logidx_scan s;
    orr_logidx_scan_init(&s, 0, 0, 0);
    orr_logidx_feed(&s, "a\nbb\nccc\n", 9, 1, &b); /* lines at 0, 2, 5 */
    uint64_t n = b.len / ORR_LOGIDX_REC, k = 99;
    orr_err e;
    assert_int_equal(n, 3);
    uint64_t want[] = {0, 0, 1, 1, 1, 2, 2, 2, 2, 2};
    for (uint64_t off = 0; off < 10; off++) {
        assert_int_equal(orr_logidx_find(read_buf, &b, n, off, &k, &e), ORR_OK);
        assert_int_equal(k, want[off]);
    }
    assert_int_equal(orr_logidx_find(read_buf, &b, 0, 0, &k, &e), ORR_ENOTFOUND);
    assert_int_equal(orr_logidx_find(read_buf, &b, 4, 9, &k, &e), ORR_EIO);
    char iso[32];
    assert_string_equal(orr_logidx_iso(1764612000123LL, iso), "2025-12-01T18:00:00.123Z");
    orr_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_round_trip),
        cmocka_unit_test(test_lines_across_reads),
        cmocka_unit_test(test_continue_and_long_line),
        cmocka_unit_test(test_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
