/* test_lib_json.c - strict JSON getters name the path of bad or missing fields. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orr_json.h"

static json_t *parse(const char *s)
{
    json_t *v = NULL;
    orr_err e;
    assert_int_equal(orr_json_parse(s, strlen(s), &v, &e), ORR_OK);
    return v;
}

static void test_parse_errors(void **state)
{
    (void)state;
    json_t *v = NULL;
    orr_err e;
    assert_int_equal(orr_json_parse("{\"a\": 1,", 8, &v, &e), ORR_EINVAL);
    assert_null(v);
    assert_non_null(strstr(e.msg, "line 1"));
    assert_int_equal(orr_json_parse("{\"a\":1,\"a\":2}", 13, &v, &e), ORR_EINVAL);
    assert_int_equal(orr_json_parse("", 0, &v, &e), ORR_EINVAL);
}

static void test_getters(void **state)
{
    (void)state;
    json_t *o = parse("{\"name\":\"daily\",\"retries\":{\"max\":3,\"delay\":\"5m\"},"
                      "\"on\":true,\"ratio\":0.5,\"tags\":[1]}");
    const char *name = NULL;
    int64_t max = -1;
    int on = 0;
    double ratio = 0;
    json_t *retries = NULL, *tags = NULL;
    orr_err e;
    assert_int_equal(orr_json_get_str(o, "spec", "name", 1, &name, &e), ORR_OK);
    assert_string_equal(name, "daily");
    assert_int_equal(orr_json_get_obj(o, "spec", "retries", 1, &retries, &e), ORR_OK);
    assert_int_equal(orr_json_get_int(retries, "spec.retries", "max", 1, 0, 10, &max, &e), ORR_OK);
    assert_int_equal(max, 3);
    assert_int_equal(orr_json_get_bool(o, "spec", "on", 1, &on, &e), ORR_OK);
    assert_true(on);
    assert_int_equal(orr_json_get_double(o, "spec", "ratio", 1, &ratio, &e), ORR_OK);
    assert_true(ratio == 0.5);
    assert_int_equal(orr_json_get_array(o, "spec", "tags", 1, &tags, &e), ORR_OK);
    /* Missing optional: untouched default. */
    int64_t timeout = 10800;
    assert_int_equal(orr_json_get_int(o, "spec", "timeout", 0, 0, 100000, &timeout, &e), ORR_OK);
    assert_int_equal(timeout, 10800);
    json_decref(o);
}

static void test_getter_failures_name_path(void **state)
{
    (void)state;
    json_t *o = parse("{\"retries\":{\"max\":\"3\",\"big\":99,\"f\":1.5},\"name\":5}");
    json_t *r = json_object_get(o, "retries");
    int64_t x;
    const char *s;
    orr_err e;
    assert_int_equal(orr_json_get_int(r, "spec.retries", "max", 1, 0, 10, &x, &e), ORR_EINVAL);
    assert_string_equal(e.field, "spec.retries.max");
    assert_string_equal(e.msg, "must be an integer");
    assert_int_equal(orr_json_get_int(r, "spec.retries", "big", 1, 0, 10, &x, &e), ORR_EINVAL);
    assert_string_equal(e.field, "spec.retries.big");
    assert_string_equal(e.msg, "must be between 0 and 10");
    assert_int_equal(orr_json_get_int(r, "spec.retries", "f", 1, 0, 10, &x, &e), ORR_EINVAL);
    assert_int_equal(orr_json_get_str(o, "", "name", 1, &s, &e), ORR_EINVAL);
    assert_string_equal(e.field, "name");
    assert_int_equal(orr_json_get_str(o, "spec", "missing", 1, &s, &e), ORR_EINVAL);
    assert_string_equal(e.field, "spec.missing");
    assert_string_equal(e.msg, "is required");
    /* Not an object at all. */
    json_t *arr = parse("[1,2]");
    assert_int_equal(orr_json_get_str(arr, "spec", "x", 0, &s, &e), ORR_EINVAL);
    assert_string_equal(e.field, "spec");
    json_decref(arr);
    json_decref(o);
}

static void test_allow_keys_and_error_body(void **state)
{
    (void)state;
    json_t *o = parse("{\"name\":\"a\",\"nmae\":\"b\"}");
    static const char *const allowed[] = {"name", "team", NULL};
    orr_err e;
    assert_int_equal(orr_json_allow_keys(o, "task", allowed, &e), ORR_EINVAL);
    assert_string_equal(e.field, "task.nmae");
    assert_string_equal(e.msg, "unknown field");
    json_t *body = orr_json_error_body(&e);
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(body, &b);
    assert_string_equal(b.data, "{\"error\":{\"code\":\"EINVAL\",\"message\":\"unknown field\","
                                "\"field\":\"task.nmae\"}}");
    orr_buf_free(&b);
    json_decref(body);
    json_decref(o);
    char p[64];
    assert_string_equal(orr_json_index_path(p, sizeof(p), "upstreams", 2), "upstreams[2]");
    assert_string_equal(orr_json_path(p, sizeof(p), "", "x"), "x");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_getters),
        cmocka_unit_test(test_getter_failures_name_path),
        cmocka_unit_test(test_allow_keys_and_error_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
