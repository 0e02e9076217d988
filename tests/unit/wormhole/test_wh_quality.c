/* test_wh_quality.c - the quality-check parser: good checks, every error
 * naming its JSON path, binding to a transfer's writers, and the judging of
 * row_count and the summary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "orr_json.h"
#include "wh_job.h"
#include "wh_quality.h"

/* Parse text as a check list; the error's field when refused, "" when not. */
static const char *parse_field(const char *text, int in_transfer)
{
    static orr_err e;
    json_t *doc = NULL;
    orr_err_clear(&e);
    assert_int_equal(orr_json_parse(text, strlen(text), &doc, &e), ORR_OK);
    wh_qset q;
    orr_status rc = wh_quality_parse(doc, "checks", in_transfer, &q, &e);
    if (rc == ORR_OK) {
        wh_qset_free(&q);
        e.field[0] = 0;
    } else {
        assert_int_equal(rc, ORR_EINVAL);
        assert_int_equal(q.n, 0);
    }
    json_decref(doc);
    return e.field;
}

static void test_good_checks(void **state)
{
    (void)state;
    const char *s =
        "[{\"name\":\"rows\",\"kind\":\"row_count\",\"max_diff\":2},"
        "{\"name\":\"v_nulls\",\"kind\":\"null_ratio\",\"column\":\"v\",\"max_ratio\":0.25},"
        "{\"name\":\"key\",\"kind\":\"unique\",\"columns\":[\"a\",\"b\"]},"
        "{\"name\":\"fresh\",\"kind\":\"freshness\",\"column\":\"ts\",\"max_age_s\":600},"
        "{\"name\":\"neg\",\"kind\":\"sql\",\"query\":\"SELECT 1\",\"max_rows\":3}]";
    json_t *doc = NULL;
    orr_err e;
    assert_int_equal(orr_json_parse(s, strlen(s), &doc, &e), ORR_OK);
    wh_qset q;
    assert_int_equal(wh_quality_parse(doc, "quality", 1, &q, &e), ORR_OK);
    assert_int_equal(q.n, 5);
    assert_int_equal(q.v[0].kind, WH_Q_ROW_COUNT);
    assert_true(q.v[0].threshold == 2);
    assert_true(q.v[1].threshold == 0.25);
    assert_string_equal(q.v[1].column, "v");
    assert_int_equal(q.v[2].ncolumns, 2);
    assert_true(q.v[2].threshold == 0); /* max_duplicates defaults to 0 */
    assert_true(q.v[3].threshold == 600);
    assert_string_equal(q.v[4].query, "SELECT 1");
    assert_string_equal(q.v[4].path, "quality[4]");
    wh_qset_free(&q);
    json_decref(doc);
}

static void test_errors_name_the_path(void **state)
{
    (void)state;
    assert_string_equal(parse_field("{}", 1), "checks");
    assert_string_equal(parse_field("[1]", 1), "checks[0]");
    assert_string_equal(parse_field("[{\"kind\":\"sql\",\"query\":\"x\"}]", 1), "checks[0].name");
    assert_string_equal(
        parse_field("[{\"name\":\"Bad Name\",\"kind\":\"sql\",\"query\":\"x\"}]", 1),
        "checks[0].name");
    assert_string_equal(parse_field("[{\"name\":\"a\",\"kind\":\"median\"}]", 1), "checks[0].kind");
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"sql\",\"query\":\"x\",\"bogus\":1}]", 1),
        "checks[0].bogus");
    /* the threshold of another kind */
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"sql\",\"query\":\"x\",\"max_ratio\":0.5}]", 1),
        "checks[0].max_ratio");
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"null_ratio\",\"column\":\"c\",\"max_ratio\":1.5}]",
                    1),
        "checks[0].max_ratio");
    assert_string_equal(
        parse_field(
            "[{\"name\":\"a\",\"kind\":\"unique\",\"columns\":[\"c\"],\"max_duplicates\":-1}]", 1),
        "checks[0].max_duplicates");
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"freshness\",\"column\":\"c\"}]", 1),
        "checks[0].max_age_s");
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"freshness\",\"column\":\"c\",\"max_age_s\":0}]",
                    1),
        "checks[0].max_age_s");
    /* what each kind needs */
    assert_string_equal(parse_field("[{\"name\":\"a\",\"kind\":\"null_ratio\"}]", 1),
                        "checks[0].column");
    assert_string_equal(parse_field("[{\"name\":\"a\",\"kind\":\"unique\",\"column\":\"c\"}]", 1),
                        "checks[0].column");
    assert_string_equal(parse_field("[{\"name\":\"a\",\"kind\":\"unique\"}]", 1),
                        "checks[0].columns");
    assert_string_equal(parse_field("[{\"name\":\"a\",\"kind\":\"unique\",\"columns\":[]}]", 1),
                        "checks[0].columns");
    assert_string_equal(parse_field("[{\"name\":\"a\",\"kind\":\"sql\"}]", 1), "checks[0].query");
    assert_string_equal(parse_field("[{\"name\":\"a\",\"kind\":\"sql\",\"query\":\"  \"}]", 1),
                        "checks[0].query");
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"sql\",\"query\":\"x\",\"table\":\"t\"}]", 1),
        "checks[0].table");
    assert_string_equal(parse_field("[{\"name\":\"a\",\"kind\":\"sql\",\"query\":\"x\"},"
                                    "{\"name\":\"a\",\"kind\":\"sql\",\"query\":\"y\"}]",
                                    1),
                        "checks[1].name");
}

static void test_outside_a_transfer(void **state)
{
    (void)state;
    assert_string_equal(parse_field("[{\"name\":\"a\",\"kind\":\"row_count\"}]", 0),
                        "checks[0].kind");
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"unique\",\"columns\":[\"c\"]}]", 0),
        "checks[0].table");
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"sql\",\"query\":\"x\",\"writer\":\"w\"}]", 0),
        "checks[0].writer");
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"unique\",\"table\":\"t\",\"columns\":[\"c\"]}]",
                    0),
        "");
    assert_string_equal(
        parse_field("[{\"name\":\"a\",\"kind\":\"unique\",\"columns\":[\"c\"]}]", 1), "");
}

#define PG "\"type\":\"postgres\",\"dsn\":\"host=x\""
#define JOB(Q)                                                                                     \
    "{\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[{" PG                                       \
    ",\"table\":\"d\",\"name\":\"main\"},"                                                         \
    "{\"type\":\"file\",\"path\":\"/tmp/x.csv\",\"name\":\"copy\"}],\"quality\":" Q "}"

static const char *job_field(const char *text)
{
    static orr_err e;
    wh_job *j = NULL;
    orr_err_clear(&e);
    orr_status rc = wh_job_parse(text, strlen(text), &j, &e);
    wh_job_free(j);
    return rc == ORR_OK ? "" : e.field;
}

static void test_job_binds_writers(void **state)
{
    (void)state;
    const char *s = JOB("[{\"name\":\"rows\",\"kind\":\"row_count\",\"writer\":\"copy\"},"
                        "{\"name\":\"n\",\"kind\":\"null_ratio\",\"column\":\"v\"}]");
    wh_job *j = NULL;
    orr_err e;
    assert_int_equal(wh_job_parse(s, strlen(s), &j, &e), ORR_OK);
    assert_non_null(j->quality);
    assert_int_equal(j->quality->n, 2);
    assert_int_equal(j->quality->v[0].writer_index, 1);
    assert_int_equal(j->quality->v[1].writer_index, 0); /* the first by default */
    wh_job_free(j);
    assert_string_equal(
        job_field(JOB("[{\"name\":\"r\",\"kind\":\"row_count\",\"writer\":\"x\"}]")),
        "quality[0].writer");
    /* a file target runs row_count only, refused when the job is read */
    assert_string_equal(job_field(JOB("[{\"name\":\"r\",\"kind\":\"null_ratio\",\"column\":\"v\","
                                      "\"writer\":\"copy\"}]")),
                        "quality[0].kind");
    /* the schema refuses a bad name first, naming the same place */
    assert_string_equal(job_field(JOB("[{\"name\":\"A\",\"kind\":\"row_count\"}]")),
                        "quality[0].name");
}

static void test_row_count_and_summary(void **state)
{
    (void)state;
    const char *s = "[{\"name\":\"rows\",\"kind\":\"row_count\",\"max_diff\":2},"
                    "{\"name\":\"other\",\"kind\":\"row_count\"}]";
    json_t *doc = NULL;
    orr_err e;
    assert_int_equal(orr_json_parse(s, strlen(s), &doc, &e), ORR_OK);
    wh_qset q;
    assert_int_equal(wh_quality_parse(doc, "quality", 1, &q, &e), ORR_OK);
    wh_quality_row_count(&q.v[0], 100, 98);
    assert_true(q.v[0].ran && q.v[0].ok);
    assert_true(q.v[0].value == 2);
    wh_quality_row_count(&q.v[1], 100, 103);
    assert_true(q.v[1].ran && !q.v[1].ok);
    assert_true(q.v[1].value == 3);
    assert_non_null(strstr(q.v[1].detail, "3 apart"));
    json_t *a = wh_quality_json(&q);
    assert_int_equal(json_array_size(a), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "outcome")), "ok");
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "outcome")),
                        "failed");
    assert_true(json_real_value(json_object_get(json_array_get(a, 1), "threshold")) == 0);
    assert_non_null(json_object_get(json_array_get(a, 1), "detail"));
    assert_int_equal(wh_quality_report(&q), 1);
    json_decref(a);
    wh_qset_free(&q);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_checks),           cmocka_unit_test(test_errors_name_the_path),
        cmocka_unit_test(test_outside_a_transfer),    cmocka_unit_test(test_job_binds_writers),
        cmocka_unit_test(test_row_count_and_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
