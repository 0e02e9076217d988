/* test_wh_resume.c - the resume run key, the "resume" job key, and what a
 * run without resumable writers does (no store needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wh_resume.h"

#define PG  "\"type\":\"postgres\",\"dsn\":\"postgresql://x@127.0.0.1/db\""
#define PG2 "\"type\":\"postgres\",\"dsn_env\":\"OTHER_DSN\""

static wh_job *parse(const char *json)
{
    wh_job *j = NULL;
    orr_err e;
    orr_err_clear(&e);
    if (wh_job_parse(json, strlen(json), &j, &e) != ORR_OK)
        fail_msg("bad job (%s: %s): %s", e.field, e.msg, json);
    return j;
}

static void key_of(const char *json, const char *low, const char *run_id, char out[65])
{
    wh_job *j = parse(json);
    j->run_id = run_id;
    wh_resume_key(j, low, out);
    wh_job_free(j);
}

static void test_key_ignores_what_moves_no_row(void **state)
{
    (void)state;
    char a[65], b[65];
    setenv("OTHER_DSN", "postgresql://y@127.0.0.2/other", 1);
    key_of("{\"name\":\"k\",\"reader\":{" PG ",\"table\":\"s\",\"split\":{\"key\":\"id\"}},"
           "\"writers\":[{" PG ",\"table\":\"d\"}]}",
           "", NULL, a);
    assert_int_equal(strlen(a), 64);
    /* other connection strings, channel counts, progress and resume settings */
    key_of("{\"name\":\"k\",\"channels\":4,\"progress_interval_ms\":0,\"resume\":true,"
           "\"reader\":{" PG2 ",\"channels\":2,\"table\":\"s\",\"split\":{\"key\":\"id\"}},"
           "\"writers\":[{" PG2 ",\"channels\":3,\"table\":\"d\"}]}",
           "", NULL, b);
    assert_string_equal(a, b);
}

static void test_key_changes_with_the_job_and_the_range(void **state)
{
    (void)state;
    const char *base =
        "{\"name\":\"k\",\"reader\":{" PG ",\"table\":\"s\",\"split\":{\"key\":\"id\"}},"
        "\"writers\":[{" PG ",\"table\":\"d\"}]}";
    char a[65], b[65];
    key_of(base, "", NULL, a);
    key_of("{\"name\":\"k\",\"reader\":{" PG ",\"table\":\"s\",\"split\":{\"key\":\"id\"},"
           "\"filter\":\"id > 0\"},\"writers\":[{" PG ",\"table\":\"d\"}]}",
           "", NULL, b);
    assert_string_not_equal(a, b);
    key_of("{\"name\":\"k\",\"reader\":{" PG ",\"table\":\"s\",\"split\":{\"key\":\"id\"}},"
           "\"writers\":[{" PG ",\"table\":\"d\",\"mode\":\"truncate\"}]}",
           "", NULL, b);
    assert_string_not_equal(a, b);
    /* the source range of an incremental run */
    key_of(base, "1000", NULL, b);
    assert_string_not_equal(a, b);
    /* the run id executord passes (the instance) */
    key_of(base, "", "instance-7", b);
    assert_string_not_equal(a, b);
    char c[65];
    key_of(base, "", "instance-7", c);
    assert_string_equal(b, c);
}

static void test_resume_key_of_the_job(void **state)
{
    (void)state;
    wh_job *j = parse("{\"resume\":true,\"reader\":{" PG ",\"table\":\"s\"},"
                      "\"writers\":[{" PG ",\"table\":\"d\"}]}");
    assert_int_equal(j->resume, WH_RESUME_ON);
    wh_job_free(j);
    j = parse("{\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[{" PG ",\"table\":\"d\"}]}");
    assert_int_equal(j->resume, WH_RESUME_OFF);
    wh_job_free(j);
    const char *bad = "{\"resume\":\"yes\",\"reader\":{" PG ",\"table\":\"s\"},"
                      "\"writers\":[{" PG ",\"table\":\"d\"}]}";
    orr_err e;
    orr_err_clear(&e);
    j = NULL;
    assert_int_equal(wh_job_parse(bad, strlen(bad), &j, &e), ORR_EINVAL);
    assert_null(j);
    assert_string_equal(e.field, "resume");
}

/* A file writer keeps no records: the run goes without bookkeeping, says
 * why, and reads no store to find that out. */
static void test_a_writer_that_cannot_resume(void **state)
{
    (void)state;
    wh_job *j = parse("{\"resume\":true,\"reader\":{" PG ",\"table\":\"s\"},"
                      "\"writers\":[{" PG ",\"table\":\"d\"},"
                      "{\"type\":\"file\",\"path\":\"/tmp/never.csv\",\"name\":\"f\"}]}");
    wh_resume rs;
    wh_resume_init(&rs, j);
    wh_incr incr;
    memset(&incr, 0, sizeof incr);
    wh_shards sh = {0, NULL};
    int restored = 1;
    orr_err e;
    orr_err_clear(&e);
    assert_int_equal(wh_resume_setup(&rs, j, &incr, &sh, &restored, &e), ORR_OK);
    assert_int_equal(restored, 0);
    assert_int_equal(rs.on, 0);
    assert_string_equal(rs.state, "unsupported");
    assert_non_null(strstr(rs.note, "writer f"));
    assert_int_equal(sh.n, 0);
    /* off: nothing is skipped, every shard pending */
    assert_false(wh_resume_skip(&rs, 0));
    assert_false(wh_resume_done(&rs, 0, 0));
    assert_int_equal(wh_resume_pending(&rs, 5), 5);
    json_t *o = json_object();
    wh_resume_json(&rs, o);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "resume"), "state")),
                        "unsupported");
    assert_int_equal(json_integer_value(json_object_get(o, "resumed_splits")), 0);
    assert_int_equal(json_integer_value(json_object_get(o, "rows_skipped")), 0);
    json_decref(o);
    wh_resume_free(&rs);
    wh_job_free(j);
}

/* What a resumed run skips: a shard every writer committed is not read; a
 * shard only one writer committed is read, and that writer skips it. */
static void test_skip_and_done(void **state)
{
    (void)state;
    wh_job *j = parse("{\"reader\":{" PG ",\"table\":\"s\"},"
                      "\"writers\":[{" PG ",\"table\":\"d\"},{" PG ",\"table\":\"e\"}]}");
    wh_resume rs;
    wh_resume_init(&rs, j);
    rs.on = 1;
    rs.nshards = 3;
    unsigned char done[6] = {1, 1, 0, /* writer 0 */ 1, 0, 0 /* writer 1 */};
    unsigned char all[3] = {1, 0, 0};
    rs.done = done;
    rs.skip_all = all;
    assert_true(wh_resume_skip(&rs, 0));
    assert_false(wh_resume_skip(&rs, 1));
    assert_false(wh_resume_skip(&rs, 7)); /* out of the plan: read */
    assert_true(wh_resume_done(&rs, 0, 1));
    assert_false(wh_resume_done(&rs, 1, 1));
    assert_int_equal(wh_resume_pending(&rs, 3), 2);
    rs.done = rs.skip_all = NULL;
    wh_resume_free(&rs);
    wh_job_free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_ignores_what_moves_no_row),
        cmocka_unit_test(test_key_changes_with_the_job_and_the_range),
        cmocka_unit_test(test_resume_key_of_the_job),
        cmocka_unit_test(test_a_writer_that_cannot_resume),
        cmocka_unit_test(test_skip_and_done),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
