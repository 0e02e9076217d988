/* test_sort_kafka_spec.c - unit tests of the Kafka source's spec keys: subscribe (consumer-group
 * rebalancing) and its rule that a unit's files come from one process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "sort_spec.h"

static const char *kafka_spec =
    "{\"name\":\"s\",\"business\":\"b\","
    "\"source\":{\"type\":\"kafka\",\"brokers\":\"127.0.0.1:9092\",\"topic\":\"t\"%s},"
    "\"format\":{\"type\":\"delimited\",\"delimiter\":\",\",\"fields\":[\"id\",\"ts\",\"if\"]},"
    "\"interface\":{\"field\":\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},"
    "\"bucket\":\"hour\"%s}";

static const char *pg_only = ",\"sinks\":{\"files\":false,\"postgres\":{\"dsn\":\"host=x\","
                             "\"table\":\"t\",\"columns\":[\"id\"]}}";

/* Parse the spec with extra source keys and extra top-level keys. */
static orr_status spec_with(const char *source, const char *top, sort_spec **out, orr_err *err)
{
    char text[2048];
    snprintf(text, sizeof text, kafka_spec, source, top);
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    assert_non_null(doc);
    orr_err_clear(err);
    orr_status rc = sort_spec_parse(doc, "spec", out, err);
    json_decref(doc);
    return rc;
}

static void spec_err(const char *source, const char *top, const char *field, const char *words)
{
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(spec_with(source, top, &s, &err), ORR_EINVAL);
    assert_null(s);
    assert_string_equal(err.field, field);
    if (words)
        assert_non_null(strstr(err.msg, words));
}

static void test_subscribe_defaults(void **state)
{
    (void)state;
    sort_spec *s = NULL;
    orr_err err;
    /* Without the key: direct assignment, as before; files on is fine. */
    assert_int_equal(spec_with("", "", &s, &err), ORR_OK);
    assert_int_equal(s->source.subscribe, 0);
    assert_int_equal(s->source.session_timeout_ms, 45000);
    assert_true(s->sinks.files);
    sort_spec_free(s);
    assert_int_equal(spec_with(",\"subscribe\":false", "", &s, &err), ORR_OK);
    assert_int_equal(s->source.subscribe, 0);
    sort_spec_free(s);
}

static void test_subscribe_pg_only(void **state)
{
    (void)state;
    sort_spec *s = NULL;
    orr_err err;
    assert_int_equal(
        spec_with(",\"subscribe\":true,\"session_timeout_ms\":6000", pg_only, &s, &err), ORR_OK);
    assert_int_equal(s->source.subscribe, 1);
    assert_int_equal(s->source.session_timeout_ms, 6000);
    assert_false(s->sinks.files);
    assert_true(s->sinks.pg);
    sort_spec_free(s);
}

static void test_subscribe_refused_with_files(void **state)
{
    (void)state;
    /* Files by default, and files explicitly on next to PostgreSQL. */
    spec_err(",\"subscribe\":true", "", "spec.source.subscribe", "needs sinks.files false");
    spec_err(",\"subscribe\":true",
             ",\"sinks\":{\"files\":true,\"postgres\":{\"dsn\":\"host=x\","
             "\"table\":\"t\",\"columns\":[\"id\"]}}",
             "spec.source.subscribe", "one process");
    /* Bad values name their own key. */
    spec_err(",\"subscribe\":\"yes\"", pg_only, "spec.source.subscribe", NULL);
    spec_err(",\"subscribe\":true,\"session_timeout_ms\":1000", pg_only,
             "spec.source.session_timeout_ms", NULL);
    /* Only kafka sources know the key. */
    sort_spec *s = NULL;
    orr_err err;
    json_t *doc = json_loads(
        "{\"name\":\"s\",\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/in\","
        "\"subscribe\":true},\"format\":{\"type\":\"delimited\",\"fields\":[\"id\",\"ts\"]},"
        "\"interface\":{\"const\":\"x\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},"
        "\"bucket\":\"hour\"}",
        0, NULL);
    assert_non_null(doc);
    orr_err_clear(&err);
    assert_int_equal(sort_spec_parse(doc, "spec", &s, &err), ORR_EINVAL);
    assert_null(s);
    assert_string_equal(err.field, "spec.source.subscribe");
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_subscribe_defaults),
        cmocka_unit_test(test_subscribe_pg_only),
        cmocka_unit_test(test_subscribe_refused_with_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
