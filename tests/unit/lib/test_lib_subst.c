/*
 * test_lib_subst.c - the ${...} substitution language of task specs:
 * parameters, built-ins, schedule-time formats in a zone (with a DST
 * offset), the $${ escape, shell forms left alone, every refusal naming its
 * field, the JSON walk (paths of nested strings) and the save-time check of
 * a whole spec.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orr_buf.h"
#include "orr_subst.h"
#include "orr_tz.h"

/* 2026-07-01T22:30:05Z: 2026-07-02 00:30:05 in Paris (CEST, +02:00). */
#define T_SUMMER 1782945005

static const orr_subst_var VARS[] = {
    {"task", "daily_load"}, {"instance_id", "42"}, {"attempt", "3"},
    {"region", "eu-west"},  {"empty", ""},
};

static char out_text[4096];

/* Expand text in zone (NULL = UTC); returns the status, text in out_text. */
static orr_status expand(const char *text, const char *zone, orr_err *err)
{
    const orr_tz *tz = NULL;
    if (zone)
        assert_int_equal(orr_tz_load(zone, &tz, err), ORR_OK);
    orr_subst_env env = {VARS, sizeof VARS / sizeof VARS[0], T_SUMMER, tz};
    orr_buf b = ORR_BUF_INIT;
    orr_err_clear(err);
    orr_status s = orr_subst_expand(text, strlen(text), &env, &b, "config.command", err);
    snprintf(out_text, sizeof out_text, "%s", b.data ? orr_buf_cstr(&b) : "");
    orr_buf_free(&b);
    return s;
}

static void expands_to(const char *text, const char *zone, const char *want)
{
    orr_err err;
    orr_status s = expand(text, zone, &err);
    if (s != ORR_OK)
        fail_msg("%s: %s: %s", text, err.field, err.msg);
    assert_string_equal(out_text, want);
}

static void refused(const char *text, const char *says)
{
    orr_err err;
    assert_int_equal(expand(text, NULL, &err), ORR_EINVAL);
    assert_string_equal(err.field, "config.command");
    if (!strstr(err.msg, says))
        fail_msg("%s: message \"%s\" lacks \"%s\"", text, err.msg, says);
    /* the check refuses it the same way */
    const char *names[] = {"region", "empty"};
    orr_err ce;
    assert_int_equal(orr_subst_check(text, strlen(text), names, 2, "spec.config.command", &ce),
                     ORR_EINVAL);
    assert_string_equal(ce.field, "spec.config.command");
}

static void test_names_and_builtins(void **state)
{
    (void)state;
    expands_to("echo ${region}", NULL, "echo eu-west");
    expands_to("${task}/${instance_id}/${attempt}", NULL, "daily_load/42/3");
    expands_to("[${empty}]", NULL, "[]");
    expands_to("no substitutions at all", NULL, "no substitutions at all");
    expands_to("", NULL, "");
    expands_to("${region}${region}", NULL, "eu-westeu-west");
}

static void test_schedule_time(void **state)
{
    (void)state;
    expands_to("${schedule_time}", NULL, "2026-07-01T22:30:05+00:00");
    expands_to("${schedule_time}", "Europe/Paris", "2026-07-02T00:30:05+02:00");
    expands_to("${schedule_time:%Y%m%d}", NULL, "20260701");
    expands_to("${schedule_time:%Y%m%d}", "Europe/Paris", "20260702");
    expands_to("d=${schedule_time:%Y-%m-%d %H:%M:%S %z}", "America/New_York",
               "d=2026-07-01 18:30:05 -0400");
    expands_to("${schedule_time:%s}", "Europe/Paris", "1782945005");
    expands_to("${schedule_time:%j %a %b 100%%}", NULL, "182 Wed Jul 100%");
    expands_to("${schedule_time:%F %T}", NULL, "2026-07-01 22:30:05");
}

static void test_shell_forms_pass(void **state)
{
    (void)state;
    expands_to("echo ${HOME} $PATH ${#X} ${1} $ $", NULL, "echo ${HOME} $PATH ${#X} ${1} $ $");
    expands_to("for i in 1 2; do echo $${i}; done", NULL, "for i in 1 2; do echo ${i}; done");
    expands_to("cost: $5 and $$", NULL, "cost: $5 and $$");
    expands_to("trailing $", NULL, "trailing $");
    expands_to("trailing ${", NULL, "trailing ${");
    expands_to("$${region}", NULL, "${region}");
}

static void test_refusals(void **state)
{
    (void)state;
    refused("echo ${regoin}", "unknown parameter \"regoin\"");
    refused("echo ${region", "no closing }");
    refused("echo ${region-x}", "${name} or ${name:format}");
    refused("${region:%Y}", "only schedule_time takes a format");
    refused("${schedule_time:%Q}", "%Q is not a supported conversion");
    refused("${schedule_time:%Y%}", "lone %");
    refused("${schedule_time:}", "1 to 64 bytes");
    refused("${schedule_time:%Y", "no closing }");
    refused("${x:-default}", "only schedule_time takes a format");
    char longname[100];
    memset(longname, 'a', sizeof longname);
    memcpy(longname, "${", 2);
    longname[98] = '}';
    longname[99] = '\0';
    refused(longname, "longer than 64 bytes");
}

static void test_names(void **state)
{
    (void)state;
    assert_true(orr_subst_valid_name("region"));
    assert_true(orr_subst_valid_name("a_1"));
    assert_false(orr_subst_valid_name("Region"));
    assert_false(orr_subst_valid_name("1a"));
    assert_false(orr_subst_valid_name("_a"));
    assert_false(orr_subst_valid_name(""));
    assert_false(orr_subst_valid_name("a-b"));
    assert_true(orr_subst_is_builtin("schedule_time", 13));
    assert_true(orr_subst_is_builtin("task", 4));
    assert_false(orr_subst_is_builtin("tas", 3));
}

static void test_json_walk(void **state)
{
    (void)state;
    json_t *cfg = json_pack("{s:s,s:[s,s],s:{s:s},s:i}", "command", "run ${region}", "args", "x",
                            "${schedule_time:%Y}", "env", "DAY", "${schedule_time:%d}", "n", 3);
    orr_subst_env env = {VARS, sizeof VARS / sizeof VARS[0], T_SUMMER, NULL};
    orr_err err;
    assert_int_equal(orr_subst_expand_json(cfg, "config", &env, &err), ORR_OK);
    assert_string_equal(json_string_value(json_object_get(cfg, "command")), "run eu-west");
    assert_string_equal(json_string_value(json_array_get(json_object_get(cfg, "args"), 1)), "2026");
    assert_string_equal(json_string_value(json_object_get(json_object_get(cfg, "env"), "DAY")),
                        "01");
    json_decref(cfg);

    cfg = json_pack("{s:[s,s]}", "args", "ok", "${nope}");
    const char *names[] = {"region"};
    assert_int_equal(orr_subst_check_json(cfg, "spec.config", names, 1, &err), ORR_EINVAL);
    assert_string_equal(err.field, "spec.config.args[1]");
    json_decref(cfg);
}

static void test_check_spec(void **state)
{
    (void)state;
    orr_err err;
    json_t *spec = json_pack("{s:{s:{s:s}},s:{s:s}}", "parameters", "region", "default", "eu",
                             "config", "command", "echo ${region} ${schedule_time:%Y%m%d}");
    assert_int_equal(orr_subst_check_spec(spec, &err), ORR_OK);
    json_object_set_new(json_object_get(spec, "config"), "command", json_string("echo ${reg}"));
    assert_int_equal(orr_subst_check_spec(spec, &err), ORR_EINVAL);
    assert_string_equal(err.field, "spec.config.command");
    assert_non_null(strstr(err.msg, "\"reg\""));
    json_decref(spec);
    spec = json_pack("{s:{s:{}},s:{s:s}}", "parameters", "attempt", "config", "command", "x");
    assert_int_equal(orr_subst_check_spec(spec, &err), ORR_EINVAL);
    assert_string_equal(err.field, "spec.parameters.attempt");
    json_decref(spec);
}

static void test_output_limit(void **state)
{
    (void)state;
    static char big[5000];
    memset(big, 'v', sizeof big - 1);
    orr_subst_var v[] = {{"big", big}};
    orr_buf text = ORR_BUF_INIT;
    for (int i = 0; i < 300; i++)
        orr_buf_append_str(&text, "${big}");
    orr_subst_env env = {v, 1, 0, NULL};
    orr_buf out = ORR_BUF_INIT;
    orr_err err;
    assert_int_equal(orr_subst_expand(text.data, text.len, &env, &out, "config.command", &err),
                     ORR_ETOOBIG);
    assert_string_equal(err.field, "config.command");
    orr_buf_free(&out);
    orr_buf_free(&text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_builtins),
        cmocka_unit_test(test_schedule_time),
        cmocka_unit_test(test_shell_forms_pass),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_json_walk),
        cmocka_unit_test(test_check_spec),
        cmocka_unit_test(test_output_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
