/* test_wh_dirty.c - reject lines: always one valid JSON object holding the
 * whole row, whatever its bytes (invalid UTF-8, NUL, quotes, line breaks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "orr_buf.h"
#include "orr_json.h"
#include "wh_dirty.h"

/* Rebuild the bytes of field i of a parsed line: fields_hex when present. */
static size_t field_bytes(json_t *line, size_t i, char *out)
{
    char key[24];
    snprintf(key, sizeof(key), "%zu", i);
    json_t *hex = json_object_get(json_object_get(line, "fields_hex"), key);
    if (hex) {
        const char *h = json_string_value(hex);
        size_t n = strlen(h) / 2;
        for (size_t k = 0; k < n; k++) {
            unsigned v;
            sscanf(h + 2 * k, "%2x", &v);
            out[k] = (char)v;
        }
        return n;
    }
    json_t *f = json_array_get(json_object_get(line, "fields"), i);
    size_t n = json_string_length(f);
    memcpy(out, json_string_value(f), n);
    return n;
}

static void test_invalid_utf8_line_is_whole(void **state)
{
    (void)state;
    const char *vals[4] = {"ok \"q\"\n", "bad \xff\xfe byte", NULL, "nul\0in"};
    int64_t lens[4] = {7, 11, -1, 6};
    json_t *line = wh_dirty_line("pg#0", 2, 17, "column x: bad \xc3", vals, lens, 4, NULL, 0);
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(line, &b);
    json_decref(line);
    assert_non_null(strstr(b.data, "}")); /* not cut at the first bad byte */
    assert_null(memchr(b.data, '\n', b.len));
    json_error_t je;
    json_t *back = json_loadb(b.data, b.len, JSON_ALLOW_NUL, &je);
    assert_non_null(back);
    assert_int_equal(json_integer_value(json_object_get(back, "row")), 17);
    assert_int_equal(json_array_size(json_object_get(back, "fields")), 4);
    assert_true(json_is_null(json_array_get(json_object_get(back, "fields"), 2)));
    /* Only the invalid field has hex; each field rebuilds byte for byte. */
    assert_int_equal(json_object_size(json_object_get(back, "fields_hex")), 1);
    char got[64];
    for (size_t i = 0; i < 4; i++) {
        if (lens[i] < 0)
            continue;
        size_t n = field_bytes(back, i, got);
        assert_int_equal(n, (size_t)lens[i]);
        assert_memory_equal(got, vals[i], n);
    }
    /* The readable text has U+FFFD for each invalid byte. */
    assert_string_equal(json_string_value(json_array_get(json_object_get(back, "fields"), 1)),
                        "bad \xef\xbf\xbd\xef\xbf\xbd byte");
    assert_string_equal(json_string_value(json_object_get(back, "reason")),
                        "column x: bad \xef\xbf\xbd");
    json_decref(back);
    orr_buf_free(&b);
}

static void test_raw_line(void **state)
{
    (void)state;
    const char raw[] = "1,\"broken \xe9t\xe9\n";
    json_t *line = wh_dirty_line("reader", 0, 3, "unterminated quoted field", NULL, NULL, 0, raw,
                                 sizeof(raw) - 1);
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(line, &b);
    json_decref(line);
    json_t *back = json_loadb(b.data, b.len, 0, NULL);
    assert_non_null(back);
    assert_string_equal(json_string_value(json_object_get(back, "raw_hex")),
                        "312c2262726f6b656e20e974e90a");
    assert_null(json_object_get(back, "fields"));
    json_decref(back);
    orr_buf_free(&b);
    /* Valid text has no hex beside it. */
    line = wh_dirty_line("reader", 0, 3, "x", NULL, NULL, 0, "plain", 5);
    assert_null(json_object_get(line, "raw_hex"));
    json_decref(line);
}

static void test_reject_file(void **state)
{
    (void)state;
    char path[] = "/tmp/test_wh_dirty_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    wh_dirty *d = NULL;
    orr_err err = {0};
    assert_int_equal(wh_dirty_open(path, -1, &d, &err), ORR_OK);
    wh_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.dirty = d;
    wh_batch *b = wh_batch_new(4, 4096);
    wh_batch_reset(b, 2);
    wh_batch_row_begin(b, 5);
    wh_batch_put(b, "\xff", 1);
    wh_batch_put(b, "x", 1);
    assert_int_equal(wh_batch_row_end(b), ORR_OK);
    assert_int_equal(wh_ctx_dirty(&ctx, "w", b, 0, "bad"), ORR_OK);
    const char *vals[2] = {"5", "0000-00-00"};
    int64_t lens[2] = {1, 10};
    assert_int_equal(wh_ctx_dirty_values(&ctx, 0, 5, vals, lens, 2, "zero date"), ORR_OK);
    assert_int_equal(wh_ctx_dirty_raw(&ctx, 0, 6, "a\x80", 2, "bad record"), ORR_OK);
    assert_int_equal(wh_dirty_count(d), 3);
    assert_int_equal(wh_dirty_raw_count(d), 2);
    assert_int_equal(wh_dirty_close(d, &err), ORR_OK);
    wh_batch_free(b);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char lbuf[1024];
    int lines = 0;
    while (fgets(lbuf, sizeof(lbuf), f)) {
        json_t *v = json_loads(lbuf, 0, NULL);
        assert_non_null(v);
        assert_true(json_is_object(v));
        if (lines == 1) {
            assert_string_equal(json_string_value(json_object_get(v, "side")), "reader");
            assert_string_equal(json_string_value(json_array_get(json_object_get(v, "fields"), 1)),
                                "0000-00-00");
        }
        json_decref(v);
        lines++;
    }
    fclose(f);
    unlink(path);
    assert_int_equal(lines, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_utf8_line_is_whole),
        cmocka_unit_test(test_raw_line),
        cmocka_unit_test(test_reject_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
