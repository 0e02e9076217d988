/* test_lib_log.c - logfmt lines: fields, quoting, levels, long lines, bad file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "orr_log.h"

static char path[256];

static char *read_all(void)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof(path), "/tmp/orr-test-log-%d.log", (int)getpid());
    unlink(path);
    orr_err e;
    assert_int_equal(orr_log_open(ORR_LOG_INFO, path, &e), ORR_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    orr_log_close();
    unlink(path);
    return 0;
}

static void test_line_shape(void **state)
{
    (void)state;
    ORR_INFO("instance dispatched", "id=%d executor=%s", 42, "ex-1");
    char *s = read_all();
    assert_non_null(strstr(s, "ts="));
    assert_non_null(strstr(s, "Z level=info msg=\"instance dispatched\" id=42 executor=ex-1\n"));
    assert_int_equal(strncmp(s, "ts=20", 5), 0);
}

static void test_quoting_and_levels(void **state)
{
    (void)state;
    ORR_DEBUG("hidden", "%s", "x=1"); /* below the level */
    ORR_WARN("quote \"me\"", "reason=%s", orr_log_q("a b\nc\\d"));
    char *s = read_all();
    assert_null(strstr(s, "hidden"));
    assert_non_null(strstr(s, "level=warn msg=\"quote \\\"me\\\"\" reason=\"a b\\nc\\\\d\"\n"));
    /* Exactly one line: newlines inside values never split a record. */
    int lines = 0;
    for (char *p = s; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 1);
    orr_log_set_level(ORR_LOG_DEBUG);
    assert_true(orr_log_enabled(ORR_LOG_DEBUG));
    orr_log_set_level(ORR_LOG_INFO);
    assert_false(orr_log_enabled(ORR_LOG_DEBUG));
}

static void test_long_line_cut(void **state)
{
    (void)state;
    char *big = malloc(10000);
    memset(big, 'x', 9999);
    big[9999] = '\0';
    ORR_ERROR("big", "v=%s", big);
    free(big);
    char *s = read_all();
    size_t n = strlen(s);
    assert_true(n <= 4096);
    assert_int_equal(s[n - 1], '\n');
    assert_memory_equal(s + n - 4, "...", 3);
}

static void test_levels_parse_and_bad_file(void **state)
{
    (void)state;
    orr_log_level l;
    assert_int_equal(orr_log_level_parse("warn", &l), ORR_OK);
    assert_int_equal(l, ORR_LOG_WARN);
    assert_int_equal(orr_log_level_parse("verbose", &l), ORR_EINVAL);
    assert_int_equal(orr_log_level_parse(NULL, &l), ORR_EINVAL);
    orr_err e;
    orr_err_clear(&e);
    assert_int_equal(orr_log_open(ORR_LOG_INFO, "/nonexistent-dir/x.log", &e), ORR_EIO);
    assert_string_equal(e.field, "log.file");
    assert_non_null(strstr(e.msg, "/nonexistent-dir/x.log"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_line_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quoting_and_levels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_line_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_levels_parse_and_bad_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
