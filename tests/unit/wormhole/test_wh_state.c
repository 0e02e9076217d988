/* test_wh_state.c - the watermark state file and the overlap arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "wh_engine.h"
#include "wh_state.h"

static void test_save_load(void **state)
{
    (void)state;
    char path[] = "/tmp/wh_state_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    char out[64];
    orr_err e;
    assert_int_equal(wh_state_load(path, "id", out, sizeof(out), &e), ORR_ENOTFOUND);
    assert_int_equal(wh_state_save(path, "job", "id", "12345", &e), ORR_OK);
    assert_int_equal(wh_state_load(path, "id", out, sizeof(out), &e), ORR_OK);
    assert_string_equal(out, "12345");
    assert_int_equal(wh_state_save(path, "job", "id", "99", &e), ORR_OK);
    assert_int_equal(wh_state_load(path, "id", out, sizeof(out), &e), ORR_OK);
    assert_string_equal(out, "99");
    /* Another column's state is refused, not misread. */
    assert_int_equal(wh_state_load(path, "updated_at", out, sizeof(out), &e), ORR_EINVAL);
    assert_string_equal(e.field, "state_file");
    FILE *f = fopen(path, "w");
    fputs("{not json", f);
    fclose(f);
    assert_int_equal(wh_state_load(path, "id", out, sizeof(out), &e), ORR_EINVAL);
    unlink(path);
}

static void test_ts_sub(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(wh_ts_sub("2024-03-01 00:00:30.5+00", 60, out, sizeof(out)), ORR_OK);
    assert_string_equal(out, "2024-02-29 23:59:30.5+00");
    assert_int_equal(wh_ts_sub("2024-01-01 00:00:00", 0, out, sizeof(out)), ORR_OK);
    assert_string_equal(out, "2024-01-01 00:00:00");
    assert_int_equal(wh_ts_sub("not a time", 5, out, sizeof(out)), ORR_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_save_load),
        cmocka_unit_test(test_ts_sub),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
