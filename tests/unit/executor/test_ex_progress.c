/* test_ex_progress.c - wormhole's progress line read back by executord:
 * every key, an older line without the plan's keys, lines that are not
 * progress, the newest complete line of a log piece (a torn last line is
 * not read). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ex_progress.h"

static void test_parse_full_line(void **state)
{
    (void)state;
    const char *l = "wormhole progress: rows_read=250 rows_written=200 mb=1.0 rows_per_sec=25 "
                    "dirty=2 waiting=writer shards_done=1 shards_total=4 rows_estimate=1000 "
                    "elapsed_s=10.0 eta_s=30.0";
    ex_progress_pt p;
    assert_int_equal(ex_progress_parse(l, strlen(l), &p), 1);
    assert_int_equal(p.rows_read, 250);
    assert_int_equal(p.rows_written, 200);
    assert_int_equal(p.bytes_read, 1048576);
    assert_int_equal(p.dirty_rows, 2);
    assert_true(p.rows_per_sec == 25);
    assert_int_equal(p.shards_done, 1);
    assert_int_equal(p.shards_total, 4);
    assert_int_equal(p.rows_estimate, 1000);
    assert_true(p.elapsed_s == 10);
    assert_true(p.eta_s == 30);
}

static void test_parse_old_and_bad(void **state)
{
    (void)state;
    ex_progress_pt p;
    const char *old = "wormhole progress: rows_read=7 rows_written=5 mb=0.0 rows_per_sec=7 "
                      "dirty=0 waiting=none";
    assert_int_equal(ex_progress_parse(old, strlen(old), &p), 1);
    assert_int_equal(p.rows_read, 7);
    assert_int_equal(p.shards_total, 0);
    assert_true(p.eta_s == -1);
    const char *other = "{\"status\":\"ok\",\"rows_read\":7}";
    assert_int_equal(ex_progress_parse(other, strlen(other), &p), 0);
    const char *neg = "wormhole progress: rows_read=-3";
    assert_int_equal(ex_progress_parse(neg, strlen(neg), &p), 0);
    const char *none = "wormhole progress: waiting=reader";
    assert_int_equal(ex_progress_parse(none, strlen(none), &p), 0);
}

static void test_scan_newest_complete(void **state)
{
    (void)state;
    const char *log = "2026-01-01 INFO transfer starting\n"
                      "wormhole progress: rows_read=10 rows_written=5 eta_s=4\n"
                      "wormhole progress: rows_read=20 rows_written=15 eta_s=2\n"
                      "some other line\n"
                      "wormhole progress: rows_read=30 rows_wri"; /* still being written */
    ex_progress_pt p;
    assert_int_equal(ex_progress_scan(log, strlen(log), &p), 1);
    assert_int_equal(p.rows_read, 20);
    assert_true(p.eta_s == 2);
    const char *nothing = "hello\nworld\n";
    assert_int_equal(ex_progress_scan(nothing, strlen(nothing), &p), 0);
    assert_int_equal(ex_progress_scan("", 0, &p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_full_line),
        cmocka_unit_test(test_parse_old_and_bad),
        cmocka_unit_test(test_scan_newest_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
