/*
 * test_ex_runner.c - task runners: how a `shell` config becomes argv, env
 * and a working directory, and how bad configs are refused (naming the
 * field, never crashing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ex_runner.h"
#include "orr_json.h"

static char g_dir[128];
static char g_code[200];

typedef struct fx {
    orr_arena *a;
    json_t *cfg;
    ex_run_ctx ctx;
    ex_run_plan plan;
    orr_err err;
} fx;

static orr_status prepare(fx *f, const ex_runner_ops *r, const char *json)
{
    memset(f, 0, sizeof *f);
    f->a = orr_arena_create(0);
    orr_err e;
    if (orr_json_parse(json, strlen(json), &f->cfg, &e) != ORR_OK)
        fail_msg("bad test json: %s", e.msg);
    f->ctx = (ex_run_ctx){.arena = f->a,
                          .config = f->cfg,
                          .instance_id = 42,
                          .task_id = 7,
                          .attempt = 2,
                          .schedule_time_ms = 1767225600000LL, /* 2026-01-01T00:00:00Z */
                          .run_dir = g_dir,
                          .code_dir = g_code,
                          .bin_dir = g_dir};
    orr_err_clear(&f->err);
    return r->prepare(&f->ctx, &f->plan, &f->err);
}

static void done(fx *f)
{
    json_decref(f->cfg);
    orr_arena_destroy(f->a);
}

static void test_table_finds_types(void **state)
{
    (void)state;
    assert_ptr_equal(ex_runner_find("shell"), &ex_runner_shell);
    assert_ptr_equal(ex_runner_find("transfer"), &ex_runner_transfer);
    assert_ptr_equal(ex_runner_find("quality"), &ex_runner_quality);
    assert_null(ex_runner_find("python"));
    assert_null(ex_runner_find(NULL));
}

/* Quality: exit 3 of a checking type is the reason "quality"; the summary's
 * figures become statistics, a check that did not run none. */
static void test_quality_reason_and_stats(void **state)
{
    (void)state;
    assert_true(ex_quality_failed_exit("quality", 1, 3));
    assert_true(ex_quality_failed_exit("transfer", 1, 3));
    assert_false(ex_quality_failed_exit("transfer", 1, 1));
    assert_false(ex_quality_failed_exit("shell", 1, 3));
    assert_false(ex_quality_failed_exit("quality", 0, 3));
    const char *text = "{\"status\":\"failed\",\"quality\":["
                       "{\"name\":\"a\",\"value\":0.5,\"threshold\":0.25,\"outcome\":\"failed\"},"
                       "{\"name\":\"b\",\"value\":null,\"threshold\":1,\"outcome\":\"not_run\"},"
                       "{\"name\":\"c\",\"value\":3,\"threshold\":4,\"outcome\":\"ok\"}]}";
    json_t *sum = json_loads(text, 0, NULL);
    assert_non_null(sum);
    orr_arena *a = orr_arena_create(0);
    ex_stat st[8];
    size_t n = 0;
    ex_quality_stats(a, sum, st, 8, &n);
    assert_int_equal(n, 6);
    assert_string_equal(st[0].key, "quality.a.value");
    assert_true(st[0].value == 0.5);
    assert_string_equal(st[1].key, "quality.a.threshold");
    assert_true(st[1].value == 0.25);
    assert_string_equal(st[2].key, "quality.a.ok");
    assert_true(st[2].value == 0);
    assert_string_equal(st[5].key, "quality.c.ok");
    assert_true(st[5].value == 1);
    n = 0;
    ex_quality_stats(a, sum, st, 4, &n); /* room for one check only */
    assert_int_equal(n, 3);
    orr_arena_destroy(a);
    json_decref(sum);
}

static void test_shell_without_args_is_a_script(void **state)
{
    (void)state;
    fx f;
    assert_int_equal(prepare(&f, &ex_runner_shell, "{\"command\":\"echo a b | wc -w\"}"), ORR_OK);
    assert_string_equal(f.plan.argv[0], "/bin/sh");
    assert_string_equal(f.plan.argv[1], "-c");
    assert_string_equal(f.plan.argv[2], "echo a b | wc -w");
    assert_null(f.plan.argv[3]);
    assert_string_equal(f.plan.cwd, g_dir);
    done(&f);
}

static void test_shell_with_args_runs_program_directly(void **state)
{
    (void)state;
    fx f;
    assert_int_equal(
        prepare(&f, &ex_runner_shell, "{\"command\":\"echo\",\"args\":[\"a b\",\"$HOME\"]}"),
        ORR_OK);
    /* Found in the task's PATH; arguments are passed verbatim. */
    assert_true(strcmp(f.plan.argv[0], "/usr/bin/echo") == 0 ||
                strcmp(f.plan.argv[0], "/bin/echo") == 0);
    assert_string_equal(f.plan.argv[1], "a b");
    assert_string_equal(f.plan.argv[2], "$HOME");
    assert_null(f.plan.argv[3]);
    done(&f);

    assert_int_equal(prepare(&f, &ex_runner_shell, "{\"command\":\"no-such-prog\",\"args\":[]}"),
                     ORR_ENOTFOUND);
    assert_string_equal(f.err.field, "config.command");
    done(&f);
}

static void test_env_is_clean_and_orrery_vars_win(void **state)
{
    (void)state;
    fx f;
    setenv("ORR_LEAK_CHECK", "1", 1);
    assert_int_equal(prepare(&f, &ex_runner_shell,
                             "{\"command\":\"env\",\"env\":{\"A\":\"1\",\"PATH\":\"/opt/x:/bin\","
                             "\"ORRERY_ATTEMPT\":\"99\"}}"),
                     ORR_OK);
    char *const *env = f.plan.envp;
    assert_string_equal(ex_runner_getenv(env, "A"), "1");
    assert_string_equal(ex_runner_getenv(env, "PATH"), "/opt/x:/bin");
    assert_string_equal(ex_runner_getenv(env, "HOME"), g_dir);
    assert_string_equal(ex_runner_getenv(env, "ORRERY_INSTANCE_ID"), "42");
    assert_string_equal(ex_runner_getenv(env, "ORRERY_TASK_ID"), "7");
    assert_string_equal(ex_runner_getenv(env, "ORRERY_ATTEMPT"), "2");
    assert_string_equal(ex_runner_getenv(env, "ORRERY_SCHEDULE_TIME"), "2026-01-01T00:00:00Z");
    assert_null(ex_runner_getenv(env, "ORR_LEAK_CHECK"));
    int n = 0, attempts = 0;
    for (; env[n]; n++)
        attempts += strncmp(env[n], "ORRERY_ATTEMPT=", 15) == 0;
    assert_int_equal(attempts, 1);
    assert_int_equal(n, 8); /* PATH HOME LANG A + 4 ORRERY_* */
    done(&f);
}

static void expect_bad(const char *json, orr_status code, const char *field)
{
    fx f;
    assert_int_equal(prepare(&f, &ex_runner_shell, json), code);
    assert_string_equal(f.err.field, field);
    assert_true(f.err.msg[0] != 0);
    done(&f);
}

static void test_bad_configs_name_the_field(void **state)
{
    (void)state;
    expect_bad("{}", ORR_EINVAL, "config.command");
    expect_bad("{\"command\":\"\"}", ORR_EINVAL, "config.command");
    expect_bad("{\"command\":5}", ORR_EINVAL, "config.command");
    expect_bad("{\"command\":\"x\",\"bogus\":1}", ORR_EINVAL, "config.bogus");
    expect_bad("{\"command\":\"echo\",\"args\":[\"a\",3]}", ORR_EINVAL, "config.args[1]");
    expect_bad("{\"command\":\"echo\",\"args\":\"a\"}", ORR_EINVAL, "config.args");
    expect_bad("{\"command\":\"x\",\"env\":{\"A\":1}}", ORR_EINVAL, "config.env.A");
    expect_bad("{\"command\":\"x\",\"env\":{\"A=B\":\"1\"}}", ORR_EINVAL, "config.env.A=B");
    expect_bad("{\"command\":\"x\",\"workdir\":\"sub\"}", ORR_EINVAL, "config.workdir");
    expect_bad("{\"command\":\"x\",\"package\":\"../etc\"}", ORR_EINVAL, "config.package");
    expect_bad("{\"command\":\"x\",\"package\":\"a/b\"}", ORR_EINVAL, "config.package");
    expect_bad("{\"command\":\"x\",\"package\":\"pkg\",\"workdir\":\"../../etc\"}", ORR_EINVAL,
               "config.workdir");
    expect_bad("{\"command\":\"x\",\"package\":\"pkg\",\"workdir\":\"/etc\"}", ORR_EINVAL,
               "config.workdir");
    expect_bad("{\"command\":\"x\",\"package\":\"missing\"}", ORR_ENOTFOUND, "config.package");
    expect_bad("[1]", ORR_EINVAL, "config");
}

static void test_package_folder_is_the_cwd(void **state)
{
    (void)state;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/pkg", g_code);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof sub, "%s/pkg/bin", g_code);
    assert_int_equal(mkdir(sub, 0755), 0);
    fx f;
    assert_int_equal(
        prepare(&f, &ex_runner_shell, "{\"command\":\"./run.sh\",\"package\":\"pkg\"}"), ORR_OK);
    char want[300];
    snprintf(want, sizeof want, "%s/pkg", g_code);
    assert_string_equal(f.plan.cwd, want);
    done(&f);
    assert_int_equal(prepare(&f, &ex_runner_shell,
                             "{\"command\":\"./x\",\"package\":\"pkg\",\"workdir\":\"bin\"}"),
                     ORR_OK);
    assert_string_equal(f.plan.cwd, sub);
    done(&f);
}

static void test_transfer_writes_the_job(void **state)
{
    (void)state;
    fx f;
    /* No wormhole in bin_dir: a clear error naming the type. */
    assert_int_equal(prepare(&f, &ex_runner_transfer, "{\"reader\":{}}"), ORR_ENOTFOUND);
    assert_string_equal(f.err.field, "type");
    done(&f);
    char bin[200];
    snprintf(bin, sizeof bin, "%s/wormhole", g_dir);
    FILE *w = fopen(bin, "w");
    assert_non_null(w);
    fputs("#!/bin/sh\n", w);
    fclose(w);
    chmod(bin, 0755);
    assert_int_equal(prepare(&f, &ex_runner_transfer, "{\"reader\":{\"kind\":\"pg\"}}"), ORR_OK);
    assert_string_equal(f.plan.argv[0], bin);
    assert_string_equal(f.plan.argv[1], "run");
    char job[200], text[200] = "";
    snprintf(job, sizeof job, "%s/job.json", g_dir);
    assert_string_equal(f.plan.argv[2], job);
    FILE *r = fopen(job, "r");
    assert_non_null(r);
    assert_non_null(fgets(text, sizeof text, r));
    fclose(r);
    assert_string_equal(text, "{\"reader\":{\"kind\":\"pg\"}}");
    done(&f);
}

/* Every attempt keeps split records under the instance's run id and resumes
 * them; a rerun asked from scratch drops them; "resume": false goes
 * without. */
static void test_transfer_resume_args(void **state)
{
    (void)state;
    fx f;
    assert_int_equal(prepare(&f, &ex_runner_transfer, "{\"reader\":{\"kind\":\"pg\"}}"), ORR_OK);
    assert_string_equal(f.plan.argv[3], "--resume");
    assert_string_equal(f.plan.argv[4], "--run-id");
    assert_string_equal(f.plan.argv[5], "instance-42");
    assert_null(f.plan.argv[6]);
    done(&f);

    memset(&f, 0, sizeof f);
    f.a = orr_arena_create(0);
    orr_err e;
    const char *cfg = "{\"reader\":{\"kind\":\"pg\"}}";
    assert_int_equal(orr_json_parse(cfg, strlen(cfg), &f.cfg, &e), ORR_OK);
    f.ctx = (ex_run_ctx){.arena = f.a,
                         .config = f.cfg,
                         .instance_id = 43,
                         .attempt = 3,
                         .from_scratch = 1,
                         .run_dir = g_dir,
                         .code_dir = g_code,
                         .bin_dir = g_dir};
    assert_int_equal(ex_runner_transfer.prepare(&f.ctx, &f.plan, &f.err), ORR_OK);
    assert_string_equal(f.plan.argv[3], "--from-scratch");
    assert_string_equal(f.plan.argv[5], "instance-43");
    done(&f);

    assert_int_equal(
        prepare(&f, &ex_runner_transfer, "{\"resume\":false,\"reader\":{\"kind\":\"pg\"}}"),
        ORR_OK);
    assert_null(f.plan.argv[3]);
    done(&f);
    /* quality checks keep the load in one transaction */
    assert_int_equal(prepare(&f, &ex_runner_transfer,
                             "{\"quality\":[{\"name\":\"n\",\"kind\":\"row_count\"}],"
                             "\"reader\":{\"kind\":\"pg\"}}"),
                     ORR_OK);
    assert_null(f.plan.argv[3]);
    done(&f);
}

static int setup_all(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/orr-ex-run-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_code, sizeof g_code, "%s/code", g_dir);
    return mkdir(g_code, 0755);
}

static int teardown_all(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_finds_types),
        cmocka_unit_test(test_shell_without_args_is_a_script),
        cmocka_unit_test(test_shell_with_args_runs_program_directly),
        cmocka_unit_test(test_env_is_clean_and_orrery_vars_win),
        cmocka_unit_test(test_bad_configs_name_the_field),
        cmocka_unit_test(test_package_folder_is_the_cwd),
        cmocka_unit_test(test_transfer_writes_the_job),
        cmocka_unit_test(test_transfer_resume_args),
        cmocka_unit_test(test_quality_reason_and_stats),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
