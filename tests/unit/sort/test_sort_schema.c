/*
 * test_sort_schema.c - sortd and halleyd judge a stream spec by the same
 * text: schema/sort-stream.schema.json as embedded in every binary
 * (orr_schemas.h). Good specs pass both the schema and sortd's parser; a
 * spec the schema refuses is refused by sortd with the same field and
 * message halleyd gives (root "spec", as halleyd validates it); checks the
 * schema cannot make (separators, time zones) stay sortd's own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "orr_json.h"
#include "orr_schemas.h"
#include "sort_spec.h"

#define HEAD "{\"name\":\"clicks\",\"business\":\"b\","
#define REST                                                                                       \
    "\"format\":{\"type\":\"delimited\",\"fields\":[\"id\",\"ts\",\"if\"]},"                       \
    "\"interface\":{\"field\":\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},"         \
    "\"bucket\":\"hour\""
#define FILESRC "\"source\":{\"type\":\"file\",\"path\":\"/data/in\"},"

static const orr_jschema *schema;

static int setup(void **state)
{
    (void)state;
    orr_err e;
    if (orr_schema_get("sort-stream.schema.json", &schema, &e) != ORR_OK) {
        fprintf(stderr, "schema: %s: %s\n", e.field, e.msg);
        return -1;
    }
    return 0;
}

static json_t *doc_of(const char *text)
{
    json_t *doc = NULL;
    orr_err e;
    assert_int_equal(orr_json_parse(text, strlen(text), &doc, &e), ORR_OK);
    return doc;
}

static void test_good_specs(void **state)
{
    (void)state;
    const char *specs[] = {
        HEAD FILESRC REST "}",
        HEAD FILESRC REST ",\"split\":{\"hot\":4},\"check\":{\"late\":\"drop\"}}",
        HEAD "\"source\":{\"type\":\"redis\",\"key\":\"k\"}," REST
             ",\"sinks\":{\"files\":false,\"handoff\":{\"streams\":2}}}",
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        json_t *doc = doc_of(specs[i]);
        orr_err e;
        orr_err_clear(&e);
        if (orr_jschema_validate(schema, doc, "spec", &e) != ORR_OK)
            fail_msg("spec %zu refused by the schema: %s: %s", i, e.field, e.msg);
        sort_spec *s = NULL;
        if (sort_spec_parse(doc, "spec", &s, &e) != ORR_OK)
            fail_msg("spec %zu refused by sortd: %s: %s", i, e.field, e.msg);
        sort_spec_free(s);
        json_decref(doc);
    }
}

static void test_schema_refusals_are_sortds(void **state)
{
    (void)state;
    const char *specs[] = {
        HEAD FILESRC REST ",\"bogus\":1}",
        "{\"name\":\"a b\",\"business\":\"b\"," FILESRC REST "}",
        HEAD "\"source\":{\"type\":\"ftp\"}," REST "}",
        HEAD "\"source\":{\"type\":\"redis\"}," REST "}",
        HEAD FILESRC REST ",\"check\":{\"clock\":\"moon\"}}",
        HEAD FILESRC REST ",\"split\":{\"hot\":0}}",
        HEAD FILESRC "\"format\":{\"type\":\"delimited\"},\"interface\":{\"field\":\"if\"},"
                     "\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},\"bucket\":\"hour\"}",
        "{\"business\":\"b\"," FILESRC REST "}",
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        json_t *doc = doc_of(specs[i]);
        orr_err se, pe;
        orr_err_clear(&se);
        orr_err_clear(&pe);
        if (orr_jschema_validate(schema, doc, "spec", &se) == ORR_OK)
            fail_msg("spec %zu accepted by the schema", i);
        sort_spec *s = NULL;
        if (sort_spec_parse(doc, "spec", &s, &pe) == ORR_OK)
            fail_msg("spec %zu accepted by sortd", i);
        assert_int_equal(pe.code, se.code);
        assert_string_equal(pe.field, se.field);
        assert_string_equal(pe.msg, se.msg);
        json_decref(doc);
    }
}

static void test_sortd_keeps_its_own_checks(void **state)
{
    (void)state;
    const struct {
        const char *text, *field;
    } specs[] = {
        {HEAD FILESRC
         "\"format\":{\"type\":\"kv\",\"pair_separator\":\"&\",\"kv_separator\":\"&\"},"
         "\"interface\":{\"const\":\"i\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\"},"
         "\"bucket\":\"hour\"}",
         "spec.format.kv_separator"},
        {HEAD FILESRC
         "\"format\":{\"type\":\"delimited\",\"fields\":[\"id\",\"ts\",\"if\"]},"
         "\"interface\":{\"field\":\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_s\","
         "\"timezone\":\"Mars/Olympus_Mons\"},\"bucket\":\"hour\"}",
         "spec.time.timezone"},
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        json_t *doc = doc_of(specs[i].text);
        orr_err e;
        orr_err_clear(&e);
        if (orr_jschema_validate(schema, doc, "spec", &e) != ORR_OK)
            fail_msg("spec %zu refused by the schema: %s: %s", i, e.field, e.msg);
        sort_spec *s = NULL;
        assert_int_equal(sort_spec_parse(doc, "spec", &s, &e), ORR_EINVAL);
        assert_string_equal(e.field, specs[i].field);
        json_decref(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_specs),
        cmocka_unit_test(test_schema_refusals_are_sortds),
        cmocka_unit_test(test_sortd_keeps_its_own_checks),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
