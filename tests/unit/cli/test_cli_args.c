/* test_cli_args.c - the command line of `orrery`: options parsed against a
 * command's table entry, exit codes per status, the Server-Sent Events
 * reader over split input, the profiles file (written 0600, read back),
 * and completion and man text generated from the same table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "oc.h"
#include "oc_config.h"
#include "oc_http.h"

static void test_parse_options(void **state)
{
    (void)state;
    const oc_cmd *c = oc_cmd_find("backfill");
    assert_non_null(c);
    char *argv[] = {"etl.orders", "--from", "2026-11-01", "--to=2026-11-02", "--downstream",
                    "-o",         "json",   "--",         "--literal"};
    oc_args a;
    assert_int_equal(oc_args_parse(c, 9, argv, &a, stderr), OC_EXIT_OK);
    assert_int_equal(a.npos, 2);
    assert_string_equal(a.pos[0], "etl.orders");
    assert_string_equal(a.pos[1], "--literal");
    assert_string_equal(oc_arg(&a, "from"), "2026-11-01");
    assert_string_equal(oc_arg(&a, "to"), "2026-11-02");
    assert_true(oc_flag(&a, "downstream"));
    assert_string_equal(oc_arg(&a, "output"), "json");
    assert_null(oc_arg(&a, "priority"));
    oc_args_free(&a);
}

static void test_repeat_and_errors(void **state)
{
    (void)state;
    const oc_cmd *c = oc_cmd_find("run");
    char *argv[] = {"t", "--param", "a=1", "--param", "b=2"};
    oc_args a;
    assert_int_equal(oc_args_parse(c, 5, argv, &a, stderr), OC_EXIT_OK);
    assert_string_equal(oc_arg_nth(&a, "param", 0), "a=1");
    assert_string_equal(oc_arg_nth(&a, "param", 1), "b=2");
    assert_null(oc_arg_nth(&a, "param", 2));
    oc_args_free(&a);
    FILE *devnull = fopen("/dev/null", "w");
    char *bad1[] = {"t", "--nope"};
    assert_int_equal(oc_args_parse(c, 2, bad1, &a, devnull), OC_EXIT_USAGE);
    char *bad2[] = {"t", "--at"};
    assert_int_equal(oc_args_parse(c, 2, bad2, &a, devnull), OC_EXIT_USAGE);
    char *bad3[] = {"t", "--at", "x", "--at", "y"};
    assert_int_equal(oc_args_parse(c, 5, bad3, &a, devnull), OC_EXIT_USAGE);
    const oc_cmd *ap = oc_cmd_find("apply");
    char *bad4[] = {"--yes=1"};
    assert_int_equal(oc_args_parse(ap, 1, bad4, &a, devnull), OC_EXIT_USAGE);
    fclose(devnull);
}

static void test_exit_codes(void **state)
{
    (void)state;
    assert_int_equal(oc_exit_for(ORR_OK), 0);
    assert_int_equal(oc_exit_for(ORR_EINVAL), 2);
    assert_int_equal(oc_exit_for(ORR_ENOTFOUND), 3);
    assert_int_equal(oc_exit_for(ORR_EEXIST), 4);
    assert_int_equal(oc_exit_for(ORR_ESTATE), 4);
    assert_int_equal(oc_exit_for(ORR_ECONFLICT), 4);
    assert_int_equal(oc_exit_for(ORR_EUNAVAIL), 1);
    assert_int_equal(oc_exit_for(ORR_EPERM), 1);
}

struct got {
    char names[8][16];
    char data[8][64];
    int n;
};

static int on_event(void *cls, const char *event, json_t *data)
{
    struct got *g = cls;
    snprintf(g->names[g->n], sizeof(g->names[0]), "%s", event);
    snprintf(g->data[g->n], sizeof(g->data[0]), "%s",
             data ? json_string_value(json_object_get(data, "data")) : "(none)");
    g->n++;
    return strcmp(event, "end") == 0;
}

static void test_sse_parser(void **state)
{
    (void)state;
    const char *stream = ": keepalive\n\n"
                         "event: log\ndata: {\"data\":\"line-1\\n\",\"next_offset\":7}\n\n"
                         "event: log\r\ndata: {\"data\":\"line-2\\n\"}\r\n\r\n"
                         "event: end\ndata: {\"next_offset\":14}\n\n"
                         "event: log\ndata: {\"data\":\"after the end\"}\n\n";
    struct got g;
    memset(&g, 0, sizeof(g));
    oc_sse_parser p;
    memset(&p, 0, sizeof(p));
    p.fn = on_event;
    p.cls = &g;
    /* one byte at a time: events cut anywhere still arrive whole */
    for (size_t i = 0; stream[i]; i++)
        oc_sse_feed(&p, stream + i, 1);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.names[0], "log");
    assert_string_equal(g.data[0], "line-1\n");
    assert_string_equal(g.data[1], "line-2\n");
    assert_string_equal(g.names[2], "end");
    assert_true(p.stop);
    oc_sse_free(&p);
}

static void test_profiles_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/oc-unit-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/sub/orrery/config", dir);
    oc_profiles p;
    orr_err e;
    assert_int_equal(oc_profiles_load(path, &p, &e), ORR_OK); /* missing = empty */
    assert_int_equal(p.n, 0);
    oc_profile *pr = oc_profile_get(&p, "prod", 1);
    pr->url = strdup("https://o.example");
    pr->token = strdup("orr_secret");
    p.current = strdup("prod");
    assert_int_equal(oc_profiles_save(path, &p, &e), ORR_OK);
    oc_profiles_free(&p);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(oc_profiles_load(path, &p, &e), ORR_OK);
    assert_string_equal(p.current, "prod");
    pr = oc_profile_get(&p, "prod", 0);
    assert_non_null(pr);
    assert_string_equal(pr->token, "orr_secret");
    assert_null(oc_profile_get(&p, "other", 0));
    oc_profiles_free(&p);
    FILE *f = fopen(path, "w");
    fputs("[a]\nurl = x\nbogus line\n", f);
    fclose(f);
    assert_int_equal(oc_profiles_load(path, &p, &e), ORR_EINVAL);
    assert_non_null(strstr(e.msg, "line 3"));
    oc_profiles_free(&p);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static char *capture(void (*fn)(FILE *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f);
    fclose(f);
    return buf;
}

static void test_generated_texts_cover_every_command(void **state)
{
    (void)state;
    char *bash = capture(oc_completion_bash), *zsh = capture(oc_completion_zsh),
         *man = capture(oc_man_page);
    for (size_t i = 0; i < oc_ncommands; i++) {
        char want[64];
        snprintf(want, sizeof(want), "    %s)\n", oc_commands[i].name);
        assert_non_null(strstr(bash, want));
        assert_non_null(strstr(zsh, want));
        snprintf(want, sizeof(want), ".SS \"orrery %s", oc_commands[i].name);
        /* roff escapes hyphens */
        if (!strchr(oc_commands[i].name, '-'))
            assert_non_null(strstr(man, want));
    }
    assert_non_null(strstr(bash, "--downstream"));
    assert_non_null(strstr(bash, "complete -o default -F _orrery orrery"));
    assert_non_null(strstr(zsh, "#compdef orrery"));
    assert_non_null(strstr(man, ".SS \"orrery mark\\-success"));
    assert_non_null(strstr(man, "\\fB\\-\\-downstream\\fR"));
    free(bash);
    free(zsh);
    free(man);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_options),
        cmocka_unit_test(test_repeat_and_errors),
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_sse_parser),
        cmocka_unit_test(test_profiles_file),
        cmocka_unit_test(test_generated_texts_cover_every_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
