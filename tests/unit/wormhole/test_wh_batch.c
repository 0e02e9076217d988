/* test_wh_batch.c - record batches: offsets survive growth, bad rows drop cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wh.h"

static void test_rows_and_growth(void **state)
{
    (void)state;
    wh_batch *b = wh_batch_new(1000, 1 << 30);
    wh_batch_reset(b, 2);
    char big[5000];
    memset(big, 'x', sizeof(big));
    for (int i = 0; i < 1000; i++) {
        wh_batch_row_begin(b, (uint64_t)i + 1);
        char num[16];
        int n = snprintf(num, sizeof(num), "%d", i);
        wh_batch_put(b, num, (size_t)n);
        if (i % 2)
            wh_batch_put_null(b);
        else
            wh_batch_put(b, big, sizeof(big));
        assert_int_equal(wh_batch_row_end(b), ORR_OK);
    }
    assert_int_equal(b->nrows, 1000);
    assert_true(wh_batch_full(b));
    int64_t len;
    const char *v = wh_batch_val(b, 999, 0, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(v, "999", 3);
    assert_null(wh_batch_val(b, 999, 1, &len));
    assert_int_equal(len, -1);
    v = wh_batch_val(b, 998, 1, &len);
    assert_int_equal(len, 5000);
    assert_int_equal(v[4999], 'x');
    assert_int_equal(b->rownum[500], 501);
    wh_batch_free(b);
}

static void test_wrong_count_drops_row(void **state)
{
    (void)state;
    wh_batch *b = wh_batch_new(4, 4096);
    wh_batch_reset(b, 2);
    wh_batch_row_begin(b, 1);
    wh_batch_put(b, "a", 1);
    wh_batch_put(b, "b", 1);
    assert_int_equal(wh_batch_row_end(b), ORR_OK);
    size_t used = b->data.len;
    wh_batch_row_begin(b, 2);
    wh_batch_put(b, "toolong", 7);
    wh_batch_put(b, "c", 1);
    wh_batch_put(b, "extra", 5);
    assert_int_equal(wh_batch_row_end(b), ORR_EINVAL);
    assert_int_equal(b->nrows, 1);
    assert_int_equal(b->data.len, used);
    wh_batch_row_begin(b, 3);
    wh_batch_put(b, "only", 4);
    assert_int_equal(wh_batch_row_end(b), ORR_EINVAL);
    assert_int_equal(b->data.len, used);
    wh_batch_free(b);
}

static void test_field_pieces(void **state)
{
    (void)state;
    wh_batch *b = wh_batch_new(2, 4096);
    wh_batch_reset(b, 1);
    wh_batch_row_begin(b, 1);
    wh_batch_field_open(b);
    wh_batch_field_extend(b, "ab", 2);
    wh_batch_field_extend(b, "cd", 2);
    wh_batch_field_close(b);
    assert_int_equal(wh_batch_row_end(b), ORR_OK);
    int64_t len;
    const char *v = wh_batch_val(b, 0, 0, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(v, "abcd", 4);
    wh_batch_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_and_growth),
        cmocka_unit_test(test_wrong_count_drops_row),
        cmocka_unit_test(test_field_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
