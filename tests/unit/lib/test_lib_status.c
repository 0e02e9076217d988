/* test_lib_status.c - names, messages and error details of orr_status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orr_status.h"

static void test_names_and_messages(void **state)
{
    (void)state;
    assert_string_equal(orr_status_name(ORR_OK), "OK");
    assert_string_equal(orr_status_name(ORR_EINVAL), "EINVAL");
    assert_string_equal(orr_status_msg(ORR_ECONFLICT), "lost a compare-and-set; retry");
    assert_string_equal(orr_status_name((orr_status)9999), "UNKNOWN");
    assert_string_equal(orr_status_name((orr_status)-1), "UNKNOWN");
    /* Every code has a distinct, non-empty name. */
    for (int i = 0; i < ORR__STATUS_COUNT; i++) {
        assert_true(strlen(orr_status_name((orr_status)i)) > 0);
        assert_true(strlen(orr_status_msg((orr_status)i)) > 0);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(orr_status_name((orr_status)i), orr_status_name((orr_status)j));
    }
}

static void test_err_set(void **state)
{
    (void)state;
    orr_err e;
    orr_err_clear(&e);
    assert_int_equal(e.code, ORR_OK);
    assert_int_equal(orr_err_set(&e, ORR_EINVAL, "spec.retries", "must be >= %d", 0), ORR_EINVAL);
    assert_string_equal(e.field, "spec.retries");
    assert_string_equal(e.msg, "must be >= 0");
    char buf[64];
    assert_string_equal(orr_err_str(&e, buf, sizeof(buf)), "spec.retries: must be >= 0");
    orr_err_set(&e, ORR_ENOTFOUND, NULL, NULL);
    assert_string_equal(e.field, "");
    assert_string_equal(orr_err_str(&e, buf, sizeof(buf)), "not found");
    /* NULL err is allowed and still returns the code. */
    assert_int_equal(orr_err_set(NULL, ORR_EIO, "x", "y"), ORR_EIO);
    /* Long messages are truncated, never overflow. */
    char big[2000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    orr_err_set(&e, ORR_EINVAL, big, "%s", big);
    assert_int_equal(strlen(e.field), sizeof(e.field) - 1);
    assert_int_equal(strlen(e.msg), sizeof(e.msg) - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_messages),
        cmocka_unit_test(test_err_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
