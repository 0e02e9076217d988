/* test_lib_clock.c - absolute deadlines: the carry into seconds (in ms and µs), zero and
 * negative waits, long waits, and "after" against the clock itself; now in
 * milliseconds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "orr_clock.h"

static int64_t ns_of(struct timespec t)
{
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

typedef struct timespec (*add_fn)(struct timespec t, int64_t n);

/* What both sums promise, for units of unit_ns: 0 and a negative n (neg)
 * leave t, and every n in [0, below) by step gives a sum that stays
 * normalised and exact. */
static void check_sums(add_fn add, int64_t unit_ns, struct timespec t, int64_t neg, int64_t below,
                       int64_t step)
{
    assert_true(ns_of(add(t, 0)) == ns_of(t));
    assert_true(ns_of(add(t, neg)) == ns_of(t));
    for (int64_t n = 0; n < below; n += step) {
        struct timespec r = add(t, n);
        assert_true(r.tv_nsec >= 0 && r.tv_nsec < 1000000000L);
        assert_true(ns_of(r) == ns_of(t) + n * unit_ns);
    }
}

static void test_add(void **state)
{
    (void)state;
    struct timespec t = {100, 999000000L}, r;
    r = orr_clock_add(t, 1); /* the carry */
    assert_int_equal(r.tv_sec, 101);
    assert_int_equal(r.tv_nsec, 0);
    r = orr_clock_add(t, 2500);
    assert_int_equal(r.tv_sec, 103);
    assert_int_equal(r.tv_nsec, 499000000L);
    r = orr_clock_add((struct timespec){7, 0}, 999);
    assert_int_equal(r.tv_sec, 7);
    assert_int_equal(r.tv_nsec, 999000000L);
    r = orr_clock_add((struct timespec){0, 0}, 86400LL * 1000 * 365 * 100); /* a century */
    assert_true(r.tv_sec == (time_t)86400 * 365 * 100 && r.tv_nsec == 0);
    check_sums(orr_clock_add, 1000000LL, t, -5000, 3000, 7);
}

static void test_add_us(void **state)
{
    (void)state;
    struct timespec t = {100, 999999000L}, r;
    r = orr_clock_add_us(t, 1); /* the carry */
    assert_int_equal(r.tv_sec, 101);
    assert_int_equal(r.tv_nsec, 0);
    check_sums(orr_clock_add_us, 1000LL, t, -300, 3000000, 7919);
}

static void test_after(void **state)
{
    (void)state;
    clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    for (size_t i = 0; i < 2; i++) {
        struct timespec before, after;
        clock_gettime(clocks[i], &before);
        struct timespec d = orr_clock_after(clocks[i], 1500);
        clock_gettime(clocks[i], &after);
        assert_true(ns_of(d) >= ns_of(before) + 1500000000LL);
        assert_true(ns_of(d) <= ns_of(after) + 1500000000LL);
        assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
    }
}

/* orr_clock_ms lies between two readings of the clock, in whole ms. */
static void test_ms(void **state)
{
    (void)state;
    clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    for (size_t i = 0; i < 2; i++) {
        struct timespec before, after;
        clock_gettime(clocks[i], &before);
        int64_t ms = orr_clock_ms(clocks[i]);
        clock_gettime(clocks[i], &after);
        assert_true(ms >= ns_of(before) / 1000000LL);
        assert_true(ms <= ns_of(after) / 1000000LL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_add_us),
        cmocka_unit_test(test_after),
        cmocka_unit_test(test_ms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
