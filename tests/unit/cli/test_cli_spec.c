/* test_cli_spec.c - the spec file loader names file:line and the field of
 * every problem, reads YAML and JSON alike, refuses what it cannot hold
 * (aliases, duplicate keys, credentials), and reads back what the YAML
 * writer wrote as the same JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "oc_spec.h"

static const char *TASK = "kind: task\n"
                          "spec:\n"
                          "  name: etl.orders\n"
                          "  team: etl\n"
                          "  type: shell\n"
                          "  schedule: \"0 0 2 * * ?\"\n"
                          "  retries:\n"
                          "    max: 3\n"
                          "    delay: 5m\n"
                          "  upstreams:\n"
                          "    - kind: strong\n"
                          "      task: etl.customers\n"
                          "  config:\n"
                          "    command: /opt/etl/orders.sh\n"
                          "    args: [\"--day\", yesterday]\n";

static int parse(const char *text, oc_docs *docs, oc_diags *d)
{
    return oc_spec_parse("f.yaml", text, strlen(text), docs, d) == ORR_OK;
}

static void test_task_loads_with_types_and_lines(void **state)
{
    (void)state;
    oc_docs docs = {NULL, 0};
    oc_diags d = {ORR_BUF_INIT, 0};
    assert_true(parse(TASK, &docs, &d));
    assert_int_equal(docs.n, 1);
    oc_doc *t = &docs.v[0];
    assert_string_equal(t->kind, "task");
    assert_string_equal(t->name, "etl.orders");
    assert_int_equal(t->line, 1);
    json_t *r = json_object_get(t->spec, "retries");
    assert_true(json_is_integer(json_object_get(r, "max")));
    assert_string_equal(json_string_value(json_object_get(r, "delay")), "5m");
    assert_int_equal(oc_doc_line(t, "spec.retries.max"), 8);
    assert_int_equal(oc_doc_line(t, "spec.upstreams[0].task"), 12);
    assert_int_equal(oc_doc_line(t, "spec.config.args[1]"), 15);
    /* a field that is not there points at its nearest ancestor */
    assert_int_equal(oc_doc_line(t, "spec.retries.backoff"), 7);
    oc_docs_free(&docs);
    oc_diags_free(&d);
}

static void test_schema_error_names_line_and_field(void **state)
{
    (void)state;
    oc_docs docs = {NULL, 0};
    oc_diags d = {ORR_BUF_INIT, 0};
    char *bad = strdup(TASK);
    char *p = strstr(bad, "max: 3");
    memcpy(p, "max: x", 6);
    assert_false(parse(bad, &docs, &d));
    assert_int_equal(d.n, 1);
    assert_non_null(strstr(d.text.data, "f.yaml:8: spec.retries.max: must be"));
    assert_int_equal(docs.n, 0);
    free(bad);
    oc_docs_free(&docs);
    oc_diags_free(&d);
}

static void test_several_documents_and_kinds(void **state)
{
    (void)state;
    const char *text = "kind: pool\nspec: {name: mysql-main, capacity: 20}\n"
                       "---\n"
                       "kind: workflow\nspec:\n  name: etl-daily\n  team: etl\n"
                       "  tasks: [etl.orders, etl.customers]\n"
                       "---\n"
                       "kind: datasource\nspec:\n  name: dw\n  kind: postgresql\n"
                       "  params: {host: db1, port: 5432}\n  password_env: DW_PASSWORD\n";
    oc_docs docs = {NULL, 0};
    oc_diags d = {ORR_BUF_INIT, 0};
    assert_true(parse(text, &docs, &d));
    assert_int_equal(docs.n, 3);
    assert_string_equal(docs.v[0].kind, "pool");
    assert_string_equal(docs.v[1].kind, "workflow");
    assert_int_equal(docs.v[1].line, 4);
    assert_string_equal(docs.v[2].name, "dw");
    oc_docs_free(&docs);
    oc_diags_free(&d);
}

static void test_json_array_file(void **state)
{
    (void)state;
    const char *text = "[\n"
                       "  {\"kind\": \"pool\", \"spec\": {\"name\": \"a\", \"capacity\": 1}},\n"
                       "  {\"kind\": \"pool\",\n"
                       "   \"spec\": {\"name\": \"b\", \"capacity\": -1}}\n"
                       "]\n";
    oc_docs docs = {NULL, 0};
    oc_diags d = {ORR_BUF_INIT, 0};
    assert_false(oc_spec_parse("p.json", text, strlen(text), &docs, &d) == ORR_OK);
    assert_int_equal(docs.n, 1);
    assert_non_null(strstr(d.text.data, "p.json:4: spec.capacity: must be"));
    oc_docs_free(&docs);
    oc_diags_free(&d);
}

static void expect_error(const char *text, const char *want)
{
    oc_docs docs = {NULL, 0};
    oc_diags d = {ORR_BUF_INIT, 0};
    assert_false(parse(text, &docs, &d));
    if (!strstr(d.text.data, want))
        fail_msg("want \"%s\" in \"%s\"", want, d.text.data);
    oc_docs_free(&docs);
    oc_diags_free(&d);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_error("kind: pool\nspec:\n  name: a\n  name: b\n  capacity: 1\n",
                 "f.yaml:4: spec.name: given twice");
    expect_error("kind: pool\nspec: &x {name: a, capacity: 1}\n", "anchors and aliases");
    expect_error("kind: pool\nspec:\n  name: a\n  capacity: [1\n", "not valid YAML");
    expect_error("kind: alert_rule\nspec: {}\n", "not supported yet");
    expect_error("kind: thing\nspec: {}\n", "f.yaml:1: kind: must be one of");
    expect_error("kind: pool\n", "spec: is required");
    expect_error("- 1\n- 2\n", "a document is a mapping");
    expect_error("kind: pool\nspec: {name: a, capacity: 1}\nextra: 1\n",
                 "f.yaml:3: extra: unknown field");
    expect_error("kind: datasource\nspec:\n  name: dw\n  kind: mysql\n  params:\n"
                 "    host: h\n    password: secret\n",
                 "f.yaml:7: spec.params.password: credentials never sit in a file");
    expect_error("", "holds no document");
    expect_error("kind: pool\nspec: {name: a, capacity: 99999999999999999999}\n", "out of range");
    expect_error("kind: pool\nspec: {name: a, capacity: !!int 1}\n", "tag");
}

static void test_yaml_core_schema(void **state)
{
    (void)state;
    const char *text = "kind: task\nspec:\n  name: a.b\n  team: t\n  type: shell\n"
                       "  labels: {on: yes, n: \"12\", z: 0x1F}\n"
                       "  config: {command: \"true\", env: {A: \"\"}}\n";
    oc_docs docs = {NULL, 0};
    oc_diags d = {ORR_BUF_INIT, 0};
    /* labels must be strings: 0x1F is an integer (YAML 1.2 core) */
    assert_false(parse(text, &docs, &d));
    assert_non_null(strstr(d.text.data, "spec.labels.z"));
    oc_diags_free(&d);
    oc_docs_free(&docs);
}

static void roundtrip(const char *kind, const char *json)
{
    json_t *spec = json_loads(json, 0, NULL);
    assert_non_null(spec);
    orr_buf y = ORR_BUF_INIT;
    oc_yaml_write(&y, kind, spec);
    oc_docs docs = {NULL, 0};
    oc_diags d = {ORR_BUF_INIT, 0};
    if (oc_spec_parse("rt.yaml", y.data, y.len, &docs, &d) != ORR_OK)
        fail_msg("%s\n---\n%s", d.text.data, y.data);
    assert_int_equal(docs.n, 1);
    if (!json_equal(docs.v[0].spec, spec))
        fail_msg("not the same after a round trip:\n%s", y.data);
    oc_docs_free(&docs);
    oc_diags_free(&d);
    orr_buf_free(&y);
    json_decref(spec);
}

static void test_yaml_writer_round_trips(void **state)
{
    (void)state;
    roundtrip("task", "{\"name\":\"etl.orders\",\"team\":\"etl\",\"type\":\"shell\","
                      "\"schedule\":\"0 0 2 * * ?\",\"timezone\":\"Europe/Berlin\","
                      "\"retries\":{\"max\":3,\"delay\":\"5m\",\"backoff\":\"exponential\"},"
                      "\"pools\":{\"mysql-main\":1},\"priority\":-5,"
                      "\"upstreams\":[{\"task\":\"etl.customers\",\"kind\":\"strong\"},"
                      "{\"kind\":\"self\"}],"
                      "\"labels\":{\"true\":\"null\",\"12\":\"0x1F\",\"a b\":\"#x: y\",\"\":\"-\"},"
                      "\"config\":{\"command\":\"echo \\\"hi\\\"\\n\\tdone\",\"args\":[],"
                      "\"env\":{}}}");
    roundtrip("pool", "{\"name\":\"p\",\"capacity\":0}");
    roundtrip("datasource",
              "{\"name\":\"dw\",\"kind\":\"postgresql\",\"params\":{\"port\":5432,\"ssl\":true,"
              "\"ratio\":0.5,\"opt\":null,\"nested\":[[1,2],[{\"a\":[]}]]}}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_loads_with_types_and_lines),
        cmocka_unit_test(test_schema_error_names_line_and_field),
        cmocka_unit_test(test_several_documents_and_kinds),
        cmocka_unit_test(test_json_array_file),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_yaml_core_schema),
        cmocka_unit_test(test_yaml_writer_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
