/* test_wh_text.c - CSV, escaped-text, COPY text and fixed-width codecs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wh_text.h"

static void assert_field(const wh_batch *b, size_t row, size_t col, const char *want)
{
    int64_t len;
    const char *v = wh_batch_val(b, row, col, &len);
    if (!want) {
        assert_null(v);
        return;
    }
    assert_non_null(v);
    assert_int_equal(len, (int64_t)strlen(want));
    assert_memory_equal(v, want, strlen(want));
}

/* Parse every record of s (all at once, eof set) into b; returns records. */
static size_t parse_all(const wh_textfmt *f, const char *s, wh_batch *b, size_t *bad)
{
    size_t pos = 0, n = strlen(s), rec = 0;
    *bad = 0;
    while (pos < n) {
        size_t used = 0;
        const char *why;
        wh_batch_row_begin(b, rec + 1);
        int rc = wh_text_record(f, s + pos, n - pos, 1, b, &used, &why);
        assert_true(rc != WH_REC_MORE);
        assert_true(used > 0);
        pos += used;
        if (rc == WH_REC_BAD) {
            (*bad)++;
            continue;
        }
        if (wh_batch_row_end(b) != ORR_OK)
            (*bad)++;
        rec++;
    }
    return rec;
}

static void test_csv_quotes_newlines_nulls(void **state)
{
    (void)state;
    wh_textfmt f;
    wh_textfmt_csv(&f, ',');
    wh_batch *b = wh_batch_new(16, 1 << 16);
    wh_batch_reset(b, 3);
    size_t bad;
    const char *in = "a,\"b,\"\"q\"\"\",c\r\n"
                     ",\"\",\"line1\nline2\"\n"
                     "x,y,z"; /* last record without a terminator */
    assert_int_equal(parse_all(&f, in, b, &bad), 3);
    assert_int_equal(bad, 0);
    assert_field(b, 0, 0, "a");
    assert_field(b, 0, 1, "b,\"q\"");
    assert_field(b, 0, 2, "c");
    assert_field(b, 1, 0, NULL); /* unquoted empty: NULL */
    assert_field(b, 1, 1, "");   /* quoted empty: empty string */
    assert_field(b, 1, 2, "line1\nline2");
    assert_field(b, 2, 2, "z");
    wh_batch_free(b);
}

static void test_csv_incomplete_and_bad(void **state)
{
    (void)state;
    wh_textfmt f;
    wh_textfmt_csv(&f, ',');
    wh_batch *b = wh_batch_new(4, 4096);
    wh_batch_reset(b, 2);
    size_t used = 0;
    const char *why;
    /* A quoted field still open is incomplete without eof... */
    wh_batch_row_begin(b, 1);
    assert_int_equal(wh_text_record(&f, "a,\"open\nmore", 12, 0, b, &used, &why), WH_REC_MORE);
    assert_int_equal(b->cur, 0);
    /* ...and malformed at eof. */
    wh_batch_row_begin(b, 1);
    assert_int_equal(wh_text_record(&f, "a,\"open\nmore", 12, 1, b, &used, &why), WH_REC_BAD);
    assert_int_equal(used, 12);
    assert_non_null(strstr(why, "unterminated"));
    /* Text after a closing quote: bad, skipped up to the end of the line. */
    wh_batch_row_begin(b, 1);
    assert_int_equal(wh_text_record(&f, "\"a\"x,b\nc,d\n", 11, 1, b, &used, &why), WH_REC_BAD);
    assert_int_equal(used, 7);
    /* A closing quote at the very end of the bytes so far: wait for more. */
    wh_batch_row_begin(b, 1);
    assert_int_equal(wh_text_record(&f, "\"a\"", 3, 0, b, &used, &why), WH_REC_MORE);
    /* Wrong field count is caught when the row ends. */
    wh_batch_row_begin(b, 1);
    assert_int_equal(wh_text_record(&f, "1,2,3\n", 6, 0, b, &used, &why), WH_REC_OK);
    assert_int_equal(wh_batch_row_end(b), ORR_EINVAL);
    assert_int_equal(b->nrows, 0);
    wh_batch_free(b);
}

static void test_escaped_text(void **state)
{
    (void)state;
    wh_textfmt f;
    wh_textfmt_escaped(&f, '|');
    wh_batch *b = wh_batch_new(4, 4096);
    wh_batch_reset(b, 3);
    size_t bad;
    assert_int_equal(parse_all(&f, "a\\|b|\\N|x\\ny\\\\\n", b, &bad), 1);
    assert_field(b, 0, 0, "a|b");
    assert_field(b, 0, 1, NULL);
    assert_field(b, 0, 2, "x\ny\\");
    wh_batch_free(b);
}

static void test_copy_roundtrip(void **state)
{
    (void)state;
    const char *vals[] = {"plain", "tab\there", "nl\nand\rcr", "back\\slash", "", "\\N"};
    orr_buf line = ORR_BUF_INIT;
    for (size_t i = 0; i < 6; i++) {
        if (i)
            orr_buf_append_byte(&line, '\t');
        wh_copy_encode(&line, vals[i], (int64_t)strlen(vals[i]));
    }
    orr_buf_append_byte(&line, '\t');
    wh_copy_encode(&line, NULL, -1);
    orr_buf_append_byte(&line, '\n');
    wh_batch *b = wh_batch_new(2, 4096);
    wh_batch_reset(b, 7);
    wh_batch_row_begin(b, 1);
    wh_copy_parse(line.data, line.len, b);
    assert_int_equal(wh_batch_row_end(b), ORR_OK);
    for (size_t i = 0; i < 6; i++)
        assert_field(b, 0, i, vals[i]);
    assert_field(b, 0, 6, NULL);
    /* Octal and hex escapes. */
    wh_batch_reset(b, 2);
    wh_batch_row_begin(b, 1);
    wh_copy_parse("\\101\\x42\\t\tz\n", 13, b);
    assert_int_equal(wh_batch_row_end(b), ORR_OK);
    assert_field(b, 0, 0, "AB\t");
    assert_field(b, 0, 1, "z");
    orr_buf_free(&line);
    wh_batch_free(b);
}

static void test_csv_encode(void **state)
{
    (void)state;
    wh_textfmt f;
    wh_textfmt_csv(&f, ',');
    orr_buf out = ORR_BUF_INIT;
    wh_text_encode(&f, &out, "a,b", 3);
    orr_buf_append_byte(&out, '|');
    wh_text_encode(&f, &out, "say \"hi\"", 8);
    orr_buf_append_byte(&out, '|');
    wh_text_encode(&f, &out, "", 0);
    orr_buf_append_byte(&out, '|');
    wh_text_encode(&f, &out, NULL, -1);
    orr_buf_append_byte(&out, '|');
    wh_text_encode(&f, &out, "plain", 5);
    assert_string_equal(out.data, "\"a,b\"|\"say \"\"hi\"\"\"|\"\"||plain");
    orr_buf_free(&out);
}

static void test_fixed(void **state)
{
    (void)state;
    int widths[] = {3, 5, 2};
    wh_batch *b = wh_batch_new(2, 4096);
    wh_batch_reset(b, 3);
    const char *why;
    wh_batch_row_begin(b, 1);
    assert_int_equal(wh_fixed_parse("ab hello  ", 10, widths, 3, b, &why), 0);
    assert_int_equal(wh_batch_row_end(b), ORR_OK);
    assert_field(b, 0, 0, "ab");
    assert_field(b, 0, 1, "hello");
    assert_field(b, 0, 2, NULL);
    wh_batch_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_quotes_newlines_nulls),
        cmocka_unit_test(test_csv_incomplete_and_bad),
        cmocka_unit_test(test_escaped_text),
        cmocka_unit_test(test_copy_roundtrip),
        cmocka_unit_test(test_csv_encode),
        cmocka_unit_test(test_fixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
