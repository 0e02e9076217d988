/* test_sort_pgcopy.c - unit tests of the PostgreSQL sink's COPY text escaping, row building and its
 * spec keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "orr_buf.h"
#include "sort_sink_pg.h"
#include "sort_spec.h"

/* Escape len bytes and compare with want (a C string). */
static void esc_is(const char *in, size_t len, int json, const char *want)
{
    orr_buf b = {0};
    orr_buf_append_str(&b, "pre");
    assert_int_equal(sort_pg_copy_escape(&b, in, len, json), 0);
    assert_int_equal(b.len, 3 + strlen(want));
    assert_memory_equal(b.data + 3, want, strlen(want));
    orr_buf_free(&b);
}

static void esc_bad(const char *in, size_t len, int json)
{
    orr_buf b = {0};
    orr_buf_append_str(&b, "pre");
    assert_int_equal(sort_pg_copy_escape(&b, in, len, json), -1);
    assert_int_equal(b.len, 3); /* nothing left behind */
    orr_buf_free(&b);
}

static void test_copy_escape_raw(void **state)
{
    (void)state;
    esc_is("plain", 5, 0, "plain");
    esc_is("", 0, 0, "");
    esc_is("a\tb", 3, 0, "a\\tb");
    esc_is("l1\nl2\r\n", 7, 0, "l1\\nl2\\r\\n");
    esc_is("back\\slash", 10, 0, "back\\\\slash");
    esc_is("\\N", 2, 0, "\\\\N"); /* the two characters, not NULL */
    esc_is("\xc3\xa9\xf0\x9f\x98\x80", 6, 0, "\xc3\xa9\xf0\x9f\x98\x80");
    esc_is("q\"'", 3, 0, "q\"'");
    esc_bad("a\0b", 3, 0);
}

static void test_copy_escape_json(void **state)
{
    (void)state;
    esc_is("a\\tb", 4, 1, "a\\tb");
    esc_is("a\\nb\\r", 6, 1, "a\\nb\\r");
    esc_is("x\\\\y", 4, 1, "x\\\\y");
    esc_is("\\\"q\\\" \\/", 8, 1, "\"q\" /");
    esc_is("\\u00e9", 6, 1, "\xc3\xa9");
    esc_is("\\u4E2D", 6, 1, "\xe4\xb8\xad");
    esc_is("\\ud83d\\ude00", 12, 1, "\xf0\x9f\x98\x80");
    esc_is("\\u0009", 6, 1, "\\t"); /* a decoded tab is escaped for COPY */
    esc_is("\\u005c", 6, 1, "\\\\");
    esc_bad("\\u0000", 6, 1); /* text cannot hold NUL */
    esc_bad("\\ud83d", 6, 1); /* lone high surrogate */
    esc_bad("\\ude00", 6, 1); /* lone low surrogate */
    esc_bad("\\u12", 4, 1);
    esc_bad("\\uzzzz", 6, 1);
    esc_bad("\\x", 2, 1);
    esc_bad("end\\", 4, 1);
}

static const char *pg_spec =
    "{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/x\"},"
    "\"format\":{\"type\":\"jsonl\",\"fields\":[\"ts\",\"a\",\"b\",\"c\"]},"
    "\"interface\":{\"const\":\"i\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},"
    "\"bucket\":\"hour\",\"sinks\":%s}";

static orr_status spec_with(const char *sinks, sort_spec **out, orr_err *err)
{
    char text[2048];
    snprintf(text, sizeof text, pg_spec, sinks);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    orr_err_clear(err);
    orr_status rc = sort_spec_parse(doc, "spec", out, err);
    json_decref(doc);
    return rc;
}

static void test_copy_row(void **state)
{
    (void)state;
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(spec_with("{\"files\":false,\"postgres\":{\"dsn\":\"host=x\",\"table\":\"t\","
                               "\"columns\":[\"c\",\"a\",\"b\"]}}",
                               &s, &err),
                     ORR_OK);
    assert_int_equal(s->format.parse_upto, 4); /* a parse stores up to column c */
    sort_val v[4];
    memset(v, 0, sizeof v);
    v[1] = (sort_val){.p = "x\ty", .len = 3, .set = 1};
    v[2] = (sort_val){.p = "", .len = 0, .set = 1}; /* empty, not NULL */
    /* v[3] unset: NULL */
    orr_buf b = {0};
    assert_int_equal(sort_pg_copy_row(&b, s, v), 0);
    const char *want = "\\N\tx\\ty\t\n";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    v[3] = (sort_val){.is_num = 1, .set = 1, .num = -42};
    v[2] = (sort_val){.p = "\\u00e9", .len = 6, .set = 1, .escaped = 1};
    orr_buf_reset(&b);
    assert_int_equal(sort_pg_copy_row(&b, s, v), 0);
    want = "-42\tx\\ty\t\xc3\xa9\n";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    /* a bad value leaves nothing of the row behind */
    v[2] = (sort_val){.p = "\\u0000", .len = 6, .set = 1, .escaped = 1};
    assert_int_equal(sort_pg_copy_row(&b, s, v), -1);
    assert_int_equal(b.len, strlen(want));
    orr_buf_free(&b);
    assert_false(s->sinks.files);
    assert_true(s->sinks.pg);
    assert_int_equal(s->sinks.batch_rows, 1000);
    sort_spec_free(s);
}

static void spec_err(const char *sinks, const char *field)
{
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(spec_with(sinks, &s, &err), ORR_EINVAL);
    assert_null(s);
    assert_string_equal(err.field, field);
}

static void test_sink_spec(void **state)
{
    (void)state;
    sort_spec *s = NULL;
    orr_err err;
    /* no sinks key: files only (existing specs unchanged) */
    assert_int_equal(spec_with("{}", &s, &err), ORR_OK);
    assert_true(s->sinks.files);
    assert_false(s->sinks.pg);
    assert_int_equal(s->format.parse_upto, 1); /* the time alone: the interface is a constant */
    sort_spec_free(s);
    assert_int_equal(spec_with("{\"postgres\":{\"dsn_env\":\"E\",\"table\":\"sc.t\","
                               "\"columns\":[\"a\"],\"batch_rows\":5,\"batch_ms\":20}}",
                               &s, &err),
                     ORR_OK);
    assert_true(s->sinks.files && s->sinks.pg);
    assert_string_equal(s->sinks.dsn_env, "E");
    assert_int_equal(s->sinks.col_field[0], 1);
    assert_int_equal(s->format.parse_upto, 2);
    assert_int_equal(s->sinks.batch_rows, 5);
    sort_spec_free(s);
    spec_err("{\"files\":false}", "spec.sinks");
    spec_err("{\"bogus\":1}", "spec.sinks.bogus");
    spec_err("{\"postgres\":{\"table\":\"t\",\"columns\":[\"a\"]}}", "spec.sinks.postgres");
    spec_err("{\"postgres\":{\"dsn\":\"x\",\"dsn_env\":\"E\",\"table\":\"t\",\"columns\":[\"a\"]}}",
             "spec.sinks.postgres");
    spec_err("{\"postgres\":{\"dsn\":\"x\",\"columns\":[\"a\"]}}", "spec.sinks.postgres.table");
    spec_err("{\"postgres\":{\"dsn\":\"x\",\"table\":\"a.b.c\",\"columns\":[\"a\"]}}",
             "spec.sinks.postgres.table");
    spec_err("{\"postgres\":{\"dsn\":\"x\",\"table\":\"t\",\"columns\":[]}}",
             "spec.sinks.postgres.columns");
    spec_err("{\"postgres\":{\"dsn\":\"x\",\"table\":\"t\",\"columns\":[\"a\",\"nope\"]}}",
             "spec.sinks.postgres.columns[1]");
    spec_err("{\"postgres\":{\"dsn\":\"x\",\"table\":\"t\",\"columns\":[\"a\"],\"batch_rows\":0}}",
             "spec.sinks.postgres.batch_rows");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_escape_raw),
        cmocka_unit_test(test_copy_escape_json),
        cmocka_unit_test(test_copy_row),
        cmocka_unit_test(test_sink_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
