/* test_wh_meta.c - the requests of `wormhole meta` and `wormhole preview`
 * are parsed strictly (errors name the field) before any connection, and
 * the answer's column objects carry the engine's value kinds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "wh_meta.h"
#include "wh_preview.h"

static orr_err E;

static orr_status meta(const char *json)
{
    json_t *out = NULL;
    orr_err_clear(&E);
    orr_status rc = wh_meta_run(json, strlen(json), &out, &E);
    if (rc != ORR_OK)
        assert_null(out);
    json_decref(out);
    return rc;
}

static orr_status preview(const char *json)
{
    json_t *out = NULL;
    orr_err_clear(&E);
    orr_status rc = wh_preview_run(json, strlen(json), &out, &E);
    if (rc != ORR_OK)
        assert_null(out);
    json_decref(out);
    return rc;
}

#define SRC "\"source\":{\"type\":\"postgres\",\"dsn\":\"host=127.0.0.1 port=1 dbname=x\"}"

static void test_meta_bad_requests(void **state)
{
    (void)state;
    static const struct {
        const char *json, *field;
    } cases[] = {
        {"[]", ""},
        {"{\"what\":\"tables\"}", "source"},
        {"{\"source\":3,\"what\":\"tables\"}", "source"},
        {"{" SRC "}", "what"},
        {"{" SRC ",\"what\":\"columns\"}", "what"},
        {"{" SRC ",\"what\":7}", "what"},
        {"{" SRC ",\"what\":\"table\"}", "table"},
        {"{" SRC ",\"what\":\"table\",\"table\":\"\"}", "table"},
        {"{" SRC ",\"what\":\"tables\",\"table\":\"a.b\"}", "table"},
        {"{\"source\":{\"type\":\"nosuch\"},\"what\":\"tables\"}", "source.type"},
        {"{\"source\":{\"type\":\"postgres\"},\"what\":\"tables\"}", "source.dsn"},
        {"{\"source\":{\"type\":\"postgres\",\"datasource\":\"dw\"},\"what\":\"tables\"}",
         "source.datasource"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        orr_status rc = meta(cases[i].json);
        if (rc != ORR_EINVAL)
            fail_msg("%s: status %d (%s)", cases[i].json, rc, E.msg);
        assert_string_equal(E.field, cases[i].field);
    }
    assert_int_not_equal(meta("{not json"), ORR_OK);
}

static void test_meta_unreachable_database(void **state)
{
    (void)state;
    /* Port 1: nothing listens; the request itself was good. */
    orr_status rc = meta("{" SRC ",\"what\":\"tables\"}");
    assert_int_equal(rc, ORR_EUNAVAIL);
}

static void test_meta_split_and_column(void **state)
{
    (void)state;
    char schema[16];
    assert_string_equal(wh_meta_split("shop.orders", schema, sizeof schema), "orders");
    assert_string_equal(schema, "shop");
    assert_string_equal(wh_meta_split("orders", schema, sizeof schema), "orders");
    assert_string_equal(schema, "");
    assert_string_equal(wh_meta_split("a.b.c", schema, sizeof schema), "b.c");
    assert_string_equal(schema, "a");
    assert_string_equal(wh_meta_split("averyveryverylongschema.t", schema, sizeof schema), "t");
    assert_int_equal(strlen(schema), sizeof schema - 1);

    wh_col c = {.kind = WH_K_NUMERIC, .size = 12, .scale = 2, .not_null = 1};
    strcpy(c.name, "amount");
    strcpy(c.type, "numeric(12,2)");
    json_t *o = wh_meta_column(&c, 3, 2);
    assert_string_equal(json_string_value(json_object_get(o, "kind")), "numeric");
    assert_string_equal(json_string_value(json_object_get(o, "type")), "numeric(12,2)");
    assert_true(json_is_false(json_object_get(o, "nullable")));
    assert_int_equal(json_integer_value(json_object_get(o, "primary_key")), 2);
    assert_int_equal(json_integer_value(json_object_get(o, "ordinal")), 3);
    assert_int_equal(json_integer_value(json_object_get(o, "size")), 12);
    assert_int_equal(json_integer_value(json_object_get(o, "scale")), 2);
    json_decref(o);
    wh_col t = {.kind = WH_K_TEXT};
    strcpy(t.name, "note");
    strcpy(t.type, "text");
    o = wh_meta_column(&t, 1, 0);
    assert_true(json_is_true(json_object_get(o, "nullable")));
    assert_null(json_object_get(o, "size")); /* no limit: no size */
    json_decref(o);
}

/* Files: the files a pattern names; a file's columns from its header. */
static void test_meta_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/wh-meta-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char a[64], b[64], req[512];
    snprintf(a, sizeof a, "%s/a.csv", dir);
    snprintf(b, sizeof b, "%s/b.csv", dir);
    FILE *f = fopen(a, "w");
    assert_non_null(f);
    fputs("id,name,amount\n1,x,2.5\n", f);
    fclose(f);
    f = fopen(b, "w");
    assert_non_null(f);
    fputs("id,name,amount\n", f);
    fclose(f);
    snprintf(req, sizeof req,
             "{\"source\":{\"type\":\"file\",\"path\":\"%s/*.csv\",\"format\":\"csv\","
             "\"header\":true},\"what\":\"tables\"}",
             dir);
    json_t *out = NULL;
    orr_err_clear(&E);
    assert_int_equal(wh_meta_run(req, strlen(req), &out, &E), ORR_OK);
    json_t *t = json_object_get(out, "tables");
    assert_int_equal(json_array_size(t), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(t, 0), "name")), a);
    assert_string_equal(json_string_value(json_object_get(json_array_get(t, 0), "kind")), "file");
    json_decref(out);
    snprintf(req, sizeof req,
             "{\"source\":{\"type\":\"file\",\"path\":\"%s/*.csv\",\"format\":\"csv\","
             "\"header\":true},\"what\":\"table\",\"table\":\"%s\"}",
             dir, a);
    assert_int_equal(wh_meta_run(req, strlen(req), &out, &E), ORR_OK);
    json_t *cols = json_object_get(out, "columns");
    assert_int_equal(json_array_size(cols), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cols, 1), "name")),
                        "name");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(cols, 2), "ordinal")), 3);
    json_decref(out);
    snprintf(req, sizeof req,
             "{\"source\":{\"type\":\"file\",\"path\":\"%s/*.csv\",\"format\":\"csv\","
             "\"header\":true},\"what\":\"table\",\"table\":\"%s/none.csv\"}",
             dir, dir);
    orr_status rc = wh_meta_run(req, strlen(req), &out, &E);
    assert_int_not_equal(rc, ORR_OK);
    assert_string_equal(E.field, "table");
    unlink(a);
    unlink(b);
    rmdir(dir);
}

#define PGR "{\"type\":\"postgres\",\"dsn\":\"host=127.0.0.1 port=1 dbname=x\",\"table\":\"s\"}"

static void test_preview_bad_requests(void **state)
{
    (void)state;
    static const struct {
        const char *json, *field;
    } cases[] = {
        {"[]", ""},
        {"{\"config\":[]}", "config"},
        {"{\"rows\":5}", "config"},
        {"{\"config\":{},\"rows\":0}", "rows"},
        {"{\"config\":{},\"rows\":21}", "rows"},
        {"{\"config\":{},\"rows\":\"3\"}", "rows"},
        {"{\"config\":{\"reader\":" PGR "}}", "config.writers"},
        {"{\"config\":{\"reader\":" PGR ",\"writers\":[{\"type\":\"postgres\",\"dsn\":\"x\","
         "\"table\":\"d\",\"mapping\":[{\"target\":\"a\",\"cast\":\"no-such-cast\","
         "\"source\":\"b\"}]}]}}",
         "config.writers[0].mapping[0].cast"},
        /* The job alone, without the wrapper: fields as the job names them. */
        {"{\"reader\":" PGR "}", "writers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        orr_status rc = preview(cases[i].json);
        if (rc != ORR_EINVAL)
            fail_msg("%s: status %d (%s)", cases[i].json, rc, E.msg);
        assert_string_equal(E.field, cases[i].field);
    }
}

static void test_preview_unreachable_source(void **state)
{
    (void)state;
    /* A good job whose source cannot be reached fails as a run would. */
    orr_status rc = preview("{\"config\":{\"reader\":" PGR ",\"writers\":[{\"type\":\"postgres\","
                            "\"dsn\":\"host=127.0.0.1 port=1\",\"table\":\"d\"}]},\"rows\":3}");
    assert_int_equal(rc, ORR_EUNAVAIL);
    assert_int_equal(strncmp(E.field, "config.reader", 13), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meta_bad_requests),
        cmocka_unit_test(test_meta_unreachable_database),
        cmocka_unit_test(test_meta_split_and_column),
        cmocka_unit_test(test_meta_files),
        cmocka_unit_test(test_preview_bad_requests),
        cmocka_unit_test(test_preview_unreachable_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
