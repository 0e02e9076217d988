/* test_lib_buf.c - the growable byte buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orr_buf.h"

static void test_append_and_format(void **state)
{
    (void)state;
    orr_buf b = ORR_BUF_INIT;
    assert_string_equal(orr_buf_cstr(&b), "");
    orr_buf_append_str(&b, "rows=");
    orr_buf_appendf(&b, "%d", 10);
    orr_buf_append_byte(&b, ' ');
    orr_buf_append(&b, "abc\0def", 7);
    assert_int_equal(b.len, 15);
    assert_memory_equal(b.data, "rows=10 abc\0def", 15);
    assert_int_equal(b.data[b.len], '\0');
    orr_buf_free(&b);
    assert_null(b.data);
}

static void test_growth_large_format(void **state)
{
    (void)state;
    orr_buf b = ORR_BUF_INIT;
    for (int i = 0; i < 10000; i++)
        orr_buf_appendf(&b, "%d,", i % 10);
    assert_int_equal(b.len, 20000);
    orr_buf_reset(&b);
    assert_int_equal(b.len, 0);
    orr_buf_appendf(&b, "%0300d", 1); /* longer than the first guess of vappendf */
    assert_int_equal(b.len, 300);
    assert_int_equal(b.data[299], '1');
    orr_buf_free(&b);
}

static void test_consume_detach(void **state)
{
    (void)state;
    orr_buf b = ORR_BUF_INIT;
    orr_buf_append_str(&b, "hello world");
    orr_buf_consume(&b, 6);
    assert_string_equal(b.data, "world");
    orr_buf_consume(&b, 100);
    assert_int_equal(b.len, 0);
    orr_buf_append_str(&b, "x");
    size_t n;
    char *p = orr_buf_detach(&b, &n);
    assert_string_equal(p, "x");
    assert_int_equal(n, 1);
    assert_null(b.data);
    free(p);
    p = orr_buf_detach(&b, &n); /* empty buffer detaches to "" */
    assert_string_equal(p, "");
    assert_int_equal(n, 0);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_format),
        cmocka_unit_test(test_growth_large_format),
        cmocka_unit_test(test_consume_detach),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
