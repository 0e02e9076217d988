/*
 * test_wh_engine.c - whole runs through the engine with file readers and
 * writers (no servers): fan-out to several writers, shards over several
 * files and channels, dirty-row limits that commit nothing, the rate limit,
 * and the summary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "wh_engine.h"
#include "wh_queue.h"

static char dir[] = "/tmp/wh_engine_test_XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_csv(const char *name, int first, int n, int bad_every)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "id,name\n");
    for (int i = first; i < first + n; i++) {
        if (bad_every && i % bad_every == 0)
            fprintf(f, "%d,extra,field\n", i); /* wrong field count */
        else
            fprintf(f, "%d,\"name %d, \"\"quoted\"\"\"\n", i, i);
    }
    fclose(f);
}

static wh_job *job(const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    wh_job *j = NULL;
    orr_err e;
    if (wh_job_parse(text, strlen(text), &j, &e) != ORR_OK)
        fail_msg("job refused: %s: %s", e.field, e.msg);
    return j;
}

static long count_lines(const char *path, int gz)
{
    long n = 0;
    char buf[65536];
    if (gz) {
        gzFile g = gzopen(path, "rb");
        assert_non_null(g);
        int r;
        while ((r = gzread(g, buf, sizeof(buf))) > 0)
            for (int i = 0; i < r; i++)
                n += buf[i] == '\n';
        gzclose(g);
        return n;
    }
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t r;
    while ((r = fread(buf, 1, sizeof(buf), f)) > 0)
        for (size_t i = 0; i < r; i++)
            n += buf[i] == '\n';
    fclose(f);
    return n;
}

static void test_fanout_over_shards(void **state)
{
    (void)state;
    write_csv("a.csv", 0, 30000, 0);
    write_csv("b.csv", 30000, 20000, 0);
    write_csv("c.csv", 50000, 1, 0);
    wh_job *j = job("{\"channels\":3,\"batch_rows\":1000,\"progress_interval_ms\":0,"
                    "\"reader\":{\"type\":\"file\",\"path\":\"%s/*.csv\",\"header\":true},"
                    "\"writers\":[{\"type\":\"file\",\"path\":\"%s/out.tsv\",\"format\":\"tsv\"},"
                    "{\"type\":\"file\",\"path\":\"%s/out.csv.gz\",\"header\":true}]}",
                    dir, dir, dir);
    wh_result res;
    assert_int_equal(wh_run(j, NULL, &res), ORR_OK);
    assert_true(res.ok);
    assert_int_equal(res.rows_read, 50001);
    assert_int_equal(res.shards, 3);
    assert_int_equal(res.reader_channels, 3);
    assert_int_equal(res.nwriters, 2);
    assert_int_equal(res.writers[0].rows_confirmed, 50001);
    assert_int_equal(res.writers[1].rows_written, 50001);
    assert_int_equal(res.writers[0].channels, 1); /* a file is one stream */
    char p[256];
    snprintf(p, sizeof(p), "%s/out.tsv", dir);
    assert_int_equal(count_lines(p, 0), 50001);
    snprintf(p, sizeof(p), "%s/out.csv.gz", dir);
    assert_int_equal(count_lines(p, 1), 50002);
    json_t *sum = wh_result_json(j, &res);
    assert_string_equal(json_string_value(json_object_get(sum, "status")), "ok");
    assert_int_equal(json_integer_value(json_object_get(sum, "rows_read")), 50001);
    json_decref(sum);
    wh_result_free(&res);
    wh_job_free(j);
}

static void test_dirty_limit_commits_nothing(void **state)
{
    (void)state;
    write_csv("dirty.csv", 1, 1000, 100); /* 10 bad records */
    char out[256];
    snprintf(out, sizeof(out), "%s/dirty-out.csv", dir);
    wh_job *j = job("{\"max_dirty_rows\":5,\"progress_interval_ms\":0,\"reject_file\":\"%s/rej\","
                    "\"reader\":{\"type\":\"file\",\"path\":\"%s/dirty.csv\",\"header\":true},"
                    "\"writers\":[{\"type\":\"file\",\"path\":\"%s\"}]}",
                    dir, dir, out);
    wh_result res;
    assert_int_not_equal(wh_run(j, NULL, &res), ORR_OK);
    assert_false(res.ok);
    assert_string_equal(res.err.field, "max_dirty_rows");
    assert_int_equal(access(out, F_OK), -1); /* no output under the final name */
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s.wh-tmp", out);
    assert_int_equal(access(tmp, F_OK), -1);
    wh_result_free(&res);
    wh_job_free(j);

    /* Within the limit: the good rows land, the bad ones are rejected. */
    j = job("{\"max_dirty_rows\":10,\"progress_interval_ms\":0,\"reject_file\":\"%s/rej\","
            "\"reader\":{\"type\":\"file\",\"path\":\"%s/dirty.csv\",\"header\":true},"
            "\"writers\":[{\"type\":\"file\",\"path\":\"%s\"}]}",
            dir, dir, out);
    assert_int_equal(wh_run(j, NULL, &res), ORR_OK);
    assert_int_equal(res.dirty_rows, 10);
    assert_int_equal(res.rows_read, 990);
    assert_int_equal(count_lines(out, 0), 990);
    char rej[256];
    snprintf(rej, sizeof(rej), "%s/rej", dir);
    assert_int_equal(count_lines(rej, 0), 10);
    wh_result_free(&res);
    wh_job_free(j);
}

static void test_rate_limit(void **state)
{
    (void)state;
    write_csv("rate.csv", 0, 3000, 0);
    wh_job *j = job("{\"batch_rows\":100,\"progress_interval_ms\":0,"
                    "\"limits\":{\"rows_per_sec\":2000},"
                    "\"reader\":{\"type\":\"file\",\"path\":\"%s/rate.csv\",\"header\":true},"
                    "\"writers\":[{\"type\":\"file\",\"path\":\"%s/rate-out.csv\"}]}",
                    dir, dir);
    wh_result res;
    uint64_t t0 = wh_now_ns();
    assert_int_equal(wh_run(j, NULL, &res), ORR_OK);
    double secs = (double)(wh_now_ns() - t0) / 1e9;
    assert_true(secs >= 1.3); /* 3000 rows at 2000 rows/s */
    assert_int_equal(res.rows_read, 3000);
    wh_result_free(&res);
    wh_job_free(j);
}

static void test_missing_file_fails_cleanly(void **state)
{
    (void)state;
    wh_job *j = job("{\"progress_interval_ms\":0,"
                    "\"reader\":{\"type\":\"file\",\"path\":\"%s/none.csv\",\"columns\":"
                    "[{\"name\":\"a\"}]},"
                    "\"writers\":[{\"type\":\"file\",\"path\":\"%s/none-out.csv\"}]}",
                    dir, dir);
    wh_result res;
    assert_int_equal(wh_run(j, NULL, &res), ORR_EIO);
    assert_false(res.ok);
    assert_non_null(strstr(res.err.msg, "none.csv"));
    wh_result_free(&res);
    wh_job_free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fanout_over_shards),
        cmocka_unit_test(test_dirty_limit_commits_nothing),
        cmocka_unit_test(test_rate_limit),
        cmocka_unit_test(test_missing_file_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
