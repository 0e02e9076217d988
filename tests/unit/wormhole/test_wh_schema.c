/*
 * test_wh_schema.c - schema/transfer-job.schema.json, as embedded in every
 * binary (orr_schemas.h), compiles, accepts the jobs the engine accepts, and
 * refuses bad ones with the same field and message as the engine's parser
 * (which checks the job against it first).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orr_json.h"
#include "orr_schemas.h"
#include "wh_job.h"

static const orr_jschema *schema;

static int setup(void **state)
{
    (void)state;
    orr_err e;
    if (orr_schema_get("transfer-job.schema.json", &schema, &e) != ORR_OK) {
        fprintf(stderr, "schema: %s: %s\n", e.field, e.msg);
        return -1;
    }
    return 0;
}

#define PG "\"type\":\"postgres\",\"dsn\":\"postgresql://x@127.0.0.1/db\""

static orr_status check(const char *text, orr_err *e)
{
    json_t *v = NULL;
    assert_int_equal(orr_json_parse(text, strlen(text), &v, e), ORR_OK);
    orr_status rc = orr_jschema_validate(schema, v, "", e);
    json_decref(v);
    return rc;
}

static void test_good_jobs(void **state)
{
    (void)state;
    const char *jobs[] = {
        "{\"name\":\"a\",\"channels\":2,\"reader\":{" PG
        ",\"table\":\"s\",\"split\":{\"key\":\"id\"},"
        "\"incremental\":{\"column\":\"id\",\"kind\":\"integer\"}},\"writers\":[{" PG
        ",\"table\":\"d\",\"mode\":\"upsert\",\"key\":[\"id\"]}]}",
        "{\"reader\":{\"type\":\"file\",\"path\":\"in.csv.gz\",\"header\":true,\"delimiter\":\";\"}"
        ","
        "\"writers\":[{\"type\":\"mysql\",\"dsn\":\"mysql://u:p@127.0.0.1:3306/"
        "db\",\"table\":\"t\","
        "\"mode\":\"replace\",\"filter\":\"day = 1\"},{\"type\":\"file\",\"path\":\"o.lzo\","
        "\"format\":\"tsv\",\"lzo_index\":true}]}",
        "{\"reader\":{\"type\":\"file\",\"path\":\"f.txt\",\"format\":\"fixed\",\"columns\":"
        "[{\"name\":\"a\",\"type\":\"int\",\"width\":4}]},\"writers\":[{" PG ",\"table\":\"d\"}]}",
    };
    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
        orr_err e;
        orr_err_clear(&e);
        if (check(jobs[i], &e) != ORR_OK)
            fail_msg("job %zu refused by the schema: %s: %s", i, e.field, e.msg);
        wh_job *j = NULL;
        if (wh_job_parse(jobs[i], strlen(jobs[i]), &j, &e) != ORR_OK)
            fail_msg("job %zu refused by the parser: %s: %s", i, e.field, e.msg);
        wh_job_free(j);
    }
}

static void test_bad_jobs_both_refuse(void **state)
{
    (void)state;
    const char *jobs[] = {
        "{\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[{" PG
        ",\"table\":\"d\",\"mode\":\"merge\"}]}",
        "{\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[{" PG
        ",\"table\":\"d\",\"mode\":\"upsert\"}]}",
        "{\"reader\":{" PG ",\"table\":\"s\",\"bogus\":1},\"writers\":[{" PG ",\"table\":\"d\"}]}",
        "{\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[]}",
        "{\"channels\":0,\"reader\":{" PG ",\"table\":\"s\"},\"writers\":[{" PG
        ",\"table\":\"d\"}]}",
        "{\"reader\":{\"type\":\"file\",\"path\":\"f\",\"format\":\"fixed\",\"columns\":"
        "[{\"name\":\"a\"}]},\"writers\":[{" PG ",\"table\":\"d\"}]}",
    };
    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
        orr_err se, pe;
        orr_err_clear(&se);
        orr_err_clear(&pe);
        if (check(jobs[i], &se) == ORR_OK)
            fail_msg("job %zu accepted by the schema", i);
        wh_job *j = NULL;
        if (wh_job_parse(jobs[i], strlen(jobs[i]), &j, &pe) == ORR_OK)
            fail_msg("job %zu accepted by the parser", i);
        assert_string_equal(pe.field, se.field);
        assert_string_equal(pe.msg, se.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_jobs),
        cmocka_unit_test(test_bad_jobs_both_refuse),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
