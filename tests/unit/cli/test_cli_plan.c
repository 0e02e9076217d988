/* test_cli_plan.c - the field diff of `orrery apply` names each changed,
 * added and removed field and nothing else; the plan prints and serialises
 * with stable counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "oc_plan.h"

static json_t *J(const char *s)
{
    json_t *v = json_loads(s, 0, NULL);
    assert_non_null(v);
    return v;
}

static void test_equal_specs_have_no_diff(void **state)
{
    (void)state;
    json_t *a = J("{\"name\":\"x\",\"retries\":{\"max\":3,\"delay\":\"5m\"},\"args\":[1,2]}");
    json_t *b = J("{\"args\":[1,2],\"retries\":{\"delay\":\"5m\",\"max\":3},\"name\":\"x\"}");
    oc_changes c = {NULL, 0};
    oc_diff(a, b, "spec", &c);
    assert_int_equal(c.n, 0);
    json_decref(a);
    json_decref(b);
}

static void test_diff_names_fields(void **state)
{
    (void)state;
    json_t *a = J("{\"name\":\"x\",\"schedule\":\"0 0 * * * ?\",\"retries\":{\"max\":3},"
                  "\"timeout\":\"1h\",\"args\":[1,2]}");
    json_t *b = J("{\"name\":\"x\",\"schedule\":\"0 30 * * * ?\",\"retries\":{\"max\":3,"
                  "\"delay\":\"1m\"},\"args\":[2,1],\"priority\":5}");
    oc_changes c = {NULL, 0};
    oc_diff(a, b, "spec", &c);
    assert_int_equal(c.n, 5);
    /* sorted by key at each level */
    assert_string_equal(c.v[0].field, "spec.args");
    assert_string_equal(c.v[1].field, "spec.priority");
    assert_null(c.v[1].old);
    assert_int_equal(json_integer_value(c.v[1].new_), 5);
    assert_string_equal(c.v[2].field, "spec.retries.delay");
    assert_string_equal(c.v[3].field, "spec.schedule");
    assert_string_equal(json_string_value(c.v[3].old), "0 0 * * * ?");
    assert_string_equal(c.v[4].field, "spec.timeout");
    assert_null(c.v[4].new_);
    oc_changes_free(&c);
    json_decref(a);
    json_decref(b);
}

static void test_type_change_is_one_change(void **state)
{
    (void)state;
    json_t *a = J("{\"x\":{\"a\":1}}"), *b = J("{\"x\":[1]}");
    oc_changes c = {NULL, 0};
    oc_diff(a, b, "", &c);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.v[0].field, "x");
    oc_changes_free(&c);
    json_decref(a);
    json_decref(b);
}

static void test_plan_print_and_json(void **state)
{
    (void)state;
    oc_plan p = {NULL, 0};
    oc_plan_add(&p, OC_CREATE, "task", "a", NULL);
    oc_step *s = oc_plan_add(&p, OC_UPDATE, "task", "b", NULL);
    json_t *o = J("{\"schedule\":\"x\"}"), *n = J("{\"schedule\":\"y\"}");
    oc_diff(o, n, "spec", &s->diff);
    oc_plan_add(&p, OC_UNCHANGED, "pool", "c", NULL);
    oc_plan_add(&p, OC_DEACTIVATE, "task", "d", NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    oc_plan_print(&p, f);
    fclose(f);
    assert_non_null(strstr(buf, "+ create task a\n"));
    assert_non_null(strstr(buf, "~ update task b\n    spec.schedule: \"x\" -> \"y\"\n"));
    assert_non_null(strstr(buf, "= unchanged pool c\n"));
    assert_non_null(strstr(buf, "- deactivate task d\n"));
    assert_non_null(strstr(buf, "plan: 1 to create, 1 to update, 1 unchanged, 1 to deactivate\n"));
    free(buf);
    json_t *j = oc_plan_json(&p, 0);
    char *dump = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(strstr(dump, "\"summary\":{\"create\":1,\"deactivate\":1,\"unchanged\":1,"
                                 "\"update\":1}"));
    assert_non_null(strstr(dump, "{\"field\":\"spec.schedule\",\"new\":\"y\",\"old\":\"x\"}"));
    free(dump);
    json_decref(j);
    json_decref(o);
    json_decref(n);
    oc_plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_specs_have_no_diff),
        cmocka_unit_test(test_diff_names_fields),
        cmocka_unit_test(test_type_change_is_one_change),
        cmocka_unit_test(test_plan_print_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
