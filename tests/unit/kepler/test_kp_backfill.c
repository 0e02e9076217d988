/*
 * test_kp_backfill.c - the pacing gate of backfills: at most N open cycles
 * of one backfill move on, the earliest first; an ended cycle frees its
 * place; backfills do not count against each other; not paced means free.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kp_backfill.h"

static void serial_admits_the_earliest_open_cycle_only(void **state)
{
    (void)state;
    kp_bf *g = kp_bf_create();
    kp_bf_reset(g);
    /* cycle 300 noted first: order of notes must not matter */
    kp_bf_note(g, 7, 300, 1);
    kp_bf_note(g, 7, 100, 1);
    kp_bf_note(g, 7, 100, 1); /* two instances of cycle 100 */
    kp_bf_note(g, 7, 200, 1);
    kp_bf_seal(g);
    assert_true(kp_bf_admit(g, 7, 100));
    assert_false(kp_bf_admit(g, 7, 200));
    assert_false(kp_bf_admit(g, 7, 300));
    /* cycle 100 ended: its instances are no longer noted */
    kp_bf_reset(g);
    kp_bf_note(g, 7, 200, 1);
    kp_bf_note(g, 7, 300, 1);
    kp_bf_seal(g);
    assert_true(kp_bf_admit(g, 7, 200));
    assert_false(kp_bf_admit(g, 7, 300));
    kp_bf_destroy(g);
}

static void parallel_admits_n_cycles_per_backfill(void **state)
{
    (void)state;
    kp_bf *g = kp_bf_create();
    for (int round = 0; round < 2; round++) { /* reset keeps working */
        kp_bf_reset(g);
        for (int64_t c = 1; c <= 5; c++) {
            kp_bf_note(g, 1, c * 10, 2);
            kp_bf_note(g, 2, c * 10, 3);
        }
        kp_bf_note(g, 3, 10, 0); /* not paced: ignored */
        kp_bf_seal(g);
        assert_true(kp_bf_admit(g, 1, 10));
        assert_true(kp_bf_admit(g, 1, 20));
        assert_false(kp_bf_admit(g, 1, 30));
        assert_true(kp_bf_admit(g, 2, 30));
        assert_false(kp_bf_admit(g, 2, 40));
        assert_true(kp_bf_admit(g, 3, 50));
        assert_true(kp_bf_admit(g, 99, 1)); /* nothing open: free */
    }
    /* fewer open cycles than allowed: every one moves */
    kp_bf_reset(g);
    kp_bf_note(g, 4, 10, 4);
    kp_bf_note(g, 4, 20, 4);
    kp_bf_seal(g);
    assert_true(kp_bf_admit(g, 4, 20));
    kp_bf_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(serial_admits_the_earliest_open_cycle_only),
        cmocka_unit_test(parallel_admits_n_cycles_per_backfill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
