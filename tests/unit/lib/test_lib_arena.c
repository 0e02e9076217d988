/* test_lib_arena.c - the region allocator: alignment, growth, big blocks, cleanups, reset. */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orr_arena.h"

static void test_alignment_and_growth(void **state)
{
    (void)state;
    orr_arena *a = orr_arena_create(256);
    for (size_t i = 1; i < 2000; i++) {
        unsigned char *p = orr_arena_alloc(a, i % 37 + 1);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % alignof(max_align_t), 0);
        memset(p, 0xab, i % 37 + 1); /* ASan catches any overlap/overflow */
    }
    assert_true(orr_arena_used(a) >= 2000);
    orr_arena_destroy(a);
}

static void test_big_allocation_keeps_block(void **state)
{
    (void)state;
    orr_arena *a = orr_arena_create(1024);
    char *small1 = orr_arena_alloc(a, 16);
    char *big = orr_arena_alloc(a, 100000);
    char *small2 = orr_arena_alloc(a, 16);
    memset(big, 1, 100000);
    /* The small allocations come from the same first block. */
    assert_true(small2 > small1 && small2 - small1 < 1024);
    orr_arena_destroy(a);
}

static void test_strings(void **state)
{
    (void)state;
    orr_arena *a = orr_arena_create(0);
    assert_string_equal(orr_arena_strdup(a, "halley"), "halley");
    assert_null(orr_arena_strdup(a, NULL));
    assert_string_equal(orr_arena_strndup(a, "kepler-x", 6), "kepler");
    assert_string_equal(orr_arena_sprintf(a, "%s-%d", "task", 42), "task-42");
    char *long_s = orr_arena_sprintf(a, "%05000d", 7);
    assert_int_equal(strlen(long_s), 5000);
    int *zeros = orr_arena_calloc(a, 100, sizeof(int));
    for (int i = 0; i < 100; i++)
        assert_int_equal(zeros[i], 0);
    orr_arena_destroy(a);
}

static int order[8];
static int norder;
static void cleanup_cb(void *arg)
{
    order[norder++] = (int)(intptr_t)arg;
}

static void test_cleanups_lifo_and_reset(void **state)
{
    (void)state;
    norder = 0;
    orr_arena *a = orr_arena_create(128);
    orr_arena_on_cleanup(a, cleanup_cb, (void *)1);
    for (int i = 0; i < 50; i++)
        orr_arena_alloc(a, 100); /* force new blocks between registrations */
    orr_arena_on_cleanup(a, cleanup_cb, (void *)2);
    orr_arena_reset(a);
    assert_int_equal(norder, 2);
    assert_int_equal(order[0], 2);
    assert_int_equal(order[1], 1);
    assert_int_equal(orr_arena_used(a), 0);
    /* Usable after reset; cleanups registered after reset run on destroy. */
    orr_arena_on_cleanup(a, cleanup_cb, (void *)3);
    assert_string_equal(orr_arena_strdup(a, "again"), "again");
    orr_arena_destroy(a);
    assert_int_equal(norder, 3);
    assert_int_equal(order[2], 3);
    orr_arena_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alignment_and_growth),
        cmocka_unit_test(test_big_allocation_keeps_block),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_cleanups_lifo_and_reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
