/* test_wh_progress.c - the progress line and the end estimate: from the
 * row estimate, from the split plan, neither, a stale estimate, and the
 * line executord parses back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wh_progress.h"

static void test_eta_from_rows(void **state)
{
    (void)state;
    /* 250 of 1000 rows in 10 s: 750 more at 25 rows/s. */
    wh_progress p = {.rows_read = 250,
                     .rows_estimate = 1000,
                     .shards_done = 3,
                     .shards_total = 4,
                     .elapsed_s = 10};
    assert_true(wh_progress_eta(&p) > 29.999 && wh_progress_eta(&p) < 30.001);
}

static void test_eta_from_shards(void **state)
{
    (void)state;
    /* No row estimate: 1 of 4 shards in 6 s leaves 3 more shards, 18 s. */
    wh_progress p = {.rows_read = 10, .shards_done = 1, .shards_total = 4, .elapsed_s = 6};
    assert_true(wh_progress_eta(&p) > 17.999 && wh_progress_eta(&p) < 18.001);
    /* An estimate the run already passed falls back to the shards. */
    p.rows_estimate = 5;
    assert_true(wh_progress_eta(&p) > 17.999 && wh_progress_eta(&p) < 18.001);
}

static void test_eta_unknown_and_done(void **state)
{
    (void)state;
    wh_progress p = {.rows_read = 0, .rows_estimate = 100, .shards_total = 1, .elapsed_s = 3};
    assert_true(wh_progress_eta(&p) == -1); /* nothing read yet */
    p.rows_read = 500;
    p.rows_estimate = 0;
    assert_true(wh_progress_eta(&p) == -1); /* no estimate, one shard not done */
    p.shards_done = 1;
    assert_true(wh_progress_eta(&p) == 0); /* every shard read */
}

static void test_line(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wh_progress p = {.rows_read = 250,
                     .rows_written = 200,
                     .bytes_read = 1048576,
                     .dirty = 2,
                     .rows_per_sec = 25,
                     .waiting = "writer",
                     .shards_done = 1,
                     .shards_total = 4,
                     .rows_estimate = 1000,
                     .elapsed_s = 10};
    wh_progress_print(f, &p);
    fclose(f);
    assert_string_equal(text, "wormhole progress: rows_read=250 rows_written=200 mb=1.0 "
                              "rows_per_sec=25 dirty=2 waiting=writer shards_done=1 "
                              "shards_total=4 rows_estimate=1000 elapsed_s=10.0 eta_s=30.0\n");
    free(text);
    f = open_memstream(&text, &len);
    p.rows_estimate = 0;
    p.shards_done = 0;
    wh_progress_print(f, &p);
    fclose(f);
    assert_non_null(strstr(text, " eta_s=-1\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eta_from_rows),
        cmocka_unit_test(test_eta_from_shards),
        cmocka_unit_test(test_eta_unknown_and_done),
        cmocka_unit_test(test_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
