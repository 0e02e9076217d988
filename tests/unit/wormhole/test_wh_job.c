/* test_wh_job.c - the job spec is parsed strictly and errors name the JSON path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wh_job.h"

static const char *bad_field(const char *json)
{
    static orr_err e;
    wh_job *j = NULL;
    orr_err_clear(&e);
    orr_status rc = wh_job_parse(json, strlen(json), &j, &e);
    assert_int_equal(rc, ORR_EINVAL);
    assert_null(j);
    return e.field;
}

#define PG "\"type\":\"postgres\",\"dsn\":\"postgresql://x@127.0.0.1/db\""

static void test_good_job(void **state)
{
    (void)state;
    const char *s = "{\"name\":\"daily\",\"channels\":3,\"max_dirty_rows\":5,"
                    "\"limits\":{\"rows_per_sec\":1000},"
                    "\"reader\":{" PG ",\"table\":\"s\",\"split\":{\"key\":\"id\"},"
                    "\"incremental\":{\"column\":\"id\",\"kind\":\"integer\",\"overlap\":10}},"
                    "\"writers\":[{" PG ",\"table\":\"d\",\"mode\":\"upsert\",\"key\":[\"id\"]},"
                    "{\"type\":\"file\",\"path\":\"/tmp/x.csv.gz\",\"name\":\"archive\"}]}";
    wh_job *j = NULL;
    orr_err e;
    assert_int_equal(wh_job_parse(s, strlen(s), &j, &e), ORR_OK);
    assert_string_equal(j->name, "daily");
    assert_int_equal(j->reader.channels, 3);
    assert_int_equal(j->nwriters, 2);
    assert_int_equal(j->writers[0].channels, 3);
    assert_string_equal(j->writers[0].name, "postgres#0");
    assert_string_equal(j->writers[1].name, "archive");
    assert_int_equal(j->max_dirty_rows, 5);
    assert_int_equal(j->rows_per_sec, 1000);
    assert_true(j->incr_on);
    assert_string_equal(j->incr_column, "id");
    assert_int_equal(j->incr_overlap, 10);
    wh_job_free(j);
}

static void test_errors_name_the_path(void **state)
{
    (void)state;
    assert_string_equal(bad_field("{\"writers\":[]}"), "reader");
    assert_string_equal(bad_field("{\"reader\":{\"type\":\"nosuch\"},\"writers\":[]}"),
                        "reader.type");
    assert_string_equal(bad_field("{\"bogus\":1,\"reader\":{},\"writers\":[]}"), "bogus");
    assert_string_equal(bad_field("{\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[{" PG
                                  ",\"table\":\"d\",\"mode\":\"merge\"}]}"),
                        "writers[0].mode");
    assert_string_equal(bad_field("{\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[{" PG
                                  ",\"table\":\"d\",\"mode\":\"upsert\"}]}"),
                        "writers[0].key");
    assert_string_equal(bad_field("{\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[{" PG
                                  ",\"table\":\"d\"},{" PG ",\"table\":\"d\",\"tabel\":\"d\"}]}"),
                        "writers[1].tabel");
    assert_string_equal(bad_field("{\"reader\":{" PG ",\"table\":\"s\",\"split\":{\"key\":1}},"
                                  "\"writers\":[{" PG ",\"table\":\"d\"}]}"),
                        "reader.split.key");
    assert_string_equal(bad_field("{\"reader\":{" PG ",\"table\":\"s\",\"incremental\":"
                                  "{\"column\":\"id\",\"kind\":\"date\"}},"
                                  "\"writers\":[{" PG ",\"table\":\"d\"}]}"),
                        "reader.incremental.kind");
    assert_string_equal(bad_field("{\"channels\":0,\"reader\":{" PG ",\"table\":\"s\"},"
                                  "\"writers\":[{" PG ",\"table\":\"d\"}]}"),
                        "channels");
    assert_string_equal(bad_field("{\"max_dirty_ratio\":2,\"reader\":{" PG ",\"table\":\"s\"},"
                                  "\"writers\":[{" PG ",\"table\":\"d\"}]}"),
                        "max_dirty_ratio");
    assert_string_equal(bad_field("{\"reader\":{\"type\":\"file\",\"path\":\"x\"},"
                                  "\"writers\":[{" PG ",\"table\":\"d\"}]}"),
                        "reader.columns");
    assert_string_equal(bad_field("{\"reader\":{\"type\":\"file\",\"path\":\"x\",\"header\":true,"
                                  "\"delimiter\":\";;\"},\"writers\":[{" PG ",\"table\":\"d\"}]}"),
                        "reader.delimiter");
    assert_string_equal(bad_field("{\"reader\":{\"type\":\"file\",\"path\":\"x\",\"format\":"
                                  "\"fixed\",\"columns\":[{\"name\":\"a\"}]},\"writers\":[{" PG
                                  ",\"table\":\"d\"}]}"),
                        "reader.columns[0].width");
    assert_string_equal(bad_field("{\"reader\":{\"type\":\"postgres\",\"dsn_env\":"
                                  "\"WH_TEST_UNSET_VARIABLE\",\"table\":\"s\"},"
                                  "\"writers\":[{" PG ",\"table\":\"d\"}]}"),
                        "reader.dsn_env");
    assert_string_equal(bad_field("{\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[{" PG
                                  ",\"table\":\"d\",\"name\":\"a\"},{" PG
                                  ",\"table\":\"e\",\"name\":\"a\"}]}"),
                        "writers[1].name");
    /* Not JSON at all: no field, a position. */
    wh_job *j = NULL;
    orr_err e;
    assert_int_equal(wh_job_parse("{\"reader\":", 10, &j, &e), ORR_EINVAL);
    assert_non_null(strstr(e.msg, "line 1"));
}

int main(void)
{
    unsetenv("WH_TEST_UNSET_VARIABLE");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_job),
        cmocka_unit_test(test_errors_name_the_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
