/*
 * test_wh_map.c - writers' column mappings: every cast on values it takes
 * and values it refuses, the mapping's spec errors (each naming its field),
 * the reader columns a mapping implies, and whole file-to-file runs that
 * rename, skip, cast and add constants, with a value a cast refuses making
 * its row dirty (not failing the load).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "wh_engine.h"
#include "wh_map.h"

static char dir[] = "/tmp/wh_map_test_XXXXXX";

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

/* Cast v (from kind from) to the cast named to; returns the result or NULL
 * (the reason in *why). The result lives until the next call. */
static const char *cast(const char *to, wh_kind from, const char *v, const char **why)
{
    static orr_buf out = ORR_BUF_INIT;
    wh_cast_to c;
    assert_int_equal(wh_cast_parse(to, &c), 0);
    orr_buf_reset(&out);
    *why = NULL;
    if (!wh_cast_value(&c, from, v, strlen(v), &out, why)) {
        assert_non_null(*why);
        return NULL;
    }
    return orr_buf_cstr(&out);
}

#define CAST_OK(to, from, v, want)                                                                 \
    do {                                                                                           \
        const char *why_;                                                                          \
        const char *got_ = cast(to, from, v, &why_);                                               \
        if (!got_)                                                                                 \
            fail_msg("cast %s of '%s' refused: %s", to, v, why_);                                  \
        assert_string_equal(got_, want);                                                           \
    } while (0)
#define CAST_BAD(to, from, v)                                                                      \
    do {                                                                                           \
        const char *why_;                                                                          \
        const char *got_ = cast(to, from, v, &why_);                                               \
        if (got_)                                                                                  \
            fail_msg("cast %s of '%s' took it as '%s'", to, v, got_);                              \
    } while (0)

static void test_cast_numbers(void **state)
{
    (void)state;
    assert_int_equal(wh_cast_parse("money", &(wh_cast_to){0}), -1);
    CAST_OK("int", WH_K_TEXT, " 42 ", "42");
    CAST_OK("int", WH_K_TEXT, "-2147483648", "-2147483648");
    CAST_OK("int", WH_K_NUMERIC, "12.000", "12");
    CAST_OK("int", WH_K_BOOL, "t", "1");
    CAST_OK("bigint", WH_K_TEXT, "9223372036854775807", "9223372036854775807");
    CAST_OK("bigint", WH_K_FLOAT, "1e3", "1000");
    CAST_BAD("int", WH_K_TEXT, "2147483648");
    CAST_BAD("int", WH_K_NUMERIC, "12.5");
    CAST_BAD("int", WH_K_TEXT, "abc");
    CAST_BAD("int", WH_K_TEXT, "");
    CAST_BAD("bigint", WH_K_TEXT, "9223372036854775808");
    CAST_OK("numeric", WH_K_TEXT, "+1.50", "1.50");
    CAST_OK("numeric", WH_K_TEXT, "NaN", "NaN");
    CAST_BAD("numeric", WH_K_TEXT, "Infinity");
    CAST_BAD("numeric", WH_K_TEXT, "1.2.3");
    CAST_OK("float", WH_K_TEXT, "-infinity", "-Infinity");
    CAST_OK("float", WH_K_INT, "7", "7");
    CAST_BAD("float", WH_K_TEXT, "1e999");
    CAST_OK("bool", WH_K_TEXT, "Yes", "t");
    CAST_OK("bool", WH_K_INT, "0", "f");
    CAST_OK("bool", WH_K_INT, "5", "t");
    CAST_BAD("bool", WH_K_TEXT, "maybe");
}

static void test_cast_times(void **state)
{
    (void)state;
    CAST_OK("date", WH_K_TEXT, "2024-02-29", "2024-02-29");
    CAST_OK("date", WH_K_TIMESTAMP, "2024-03-01 10:11:12.5", "2024-03-01");
    CAST_OK("date", WH_K_TEXT, "infinity", "infinity");
    CAST_BAD("date", WH_K_TEXT, "2023-02-29");
    CAST_BAD("date", WH_K_TEXT, "01/02/2024");
    CAST_OK("timestamp", WH_K_DATE, "2024-01-02", "2024-01-02 00:00:00");
    CAST_OK("timestamp", WH_K_TEXT, "2024-01-02T03:04:05.123456Z", "2024-01-02 03:04:05.123456");
    CAST_OK("timestamp", WH_K_TEXT, "2024-01-01 01:30:00+02", "2023-12-31 23:30:00");
    CAST_OK("timestamp", WH_K_TIMESTAMPTZ, "2024-01-02 03:04:05+00", "2024-01-02 03:04:05");
    CAST_OK("timestamptz", WH_K_TIMESTAMP, "2024-01-02 03:04:05", "2024-01-02 03:04:05+00");
    CAST_OK("timestamptz", WH_K_TEXT, "2024-06-30 22:00:00-05:30", "2024-07-01 03:30:00+00");
    CAST_OK("timestamptz", WH_K_TEXT, "0044-03-15 12:00:00 BC", "0044-03-15 12:00:00+00 BC");
    CAST_BAD("timestamp", WH_K_TEXT, "2024-01-02 25:00:00");
    CAST_OK("time", WH_K_TEXT, "7:05", "07:05:00");
    CAST_OK("time", WH_K_TIMESTAMP, "2024-01-02 03:04:05.25", "03:04:05.25");
    CAST_BAD("time", WH_K_TEXT, "noon");
}

static void test_cast_other(void **state)
{
    (void)state;
    CAST_OK("text", WH_K_INT, "12", "12");
    CAST_OK("bytes", WH_K_TEXT, "AB", "\\x4142");
    CAST_OK("bytes", WH_K_TEXT, "\\x00ff", "\\x00ff");
    CAST_OK("json", WH_K_TEXT, "{\"a\": [1, 2]}", "{\"a\": [1, 2]}");
    CAST_OK("json", WH_K_INT, "12", "12");
    CAST_OK("json", WH_K_BOOL, "f", "false");
    CAST_BAD("json", WH_K_TEXT, "{not json");
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

/* The field a refused job names. */
static const char *refused(const char *text)
{
    static orr_err e;
    wh_job *j = NULL;
    assert_int_equal(wh_job_parse(text, strlen(text), &j, &e), ORR_EINVAL);
    assert_null(j);
    return e.field;
}

#define PG_R "\"reader\":{\"type\":\"postgres\",\"dsn\":\"x\",\"table\":\"s\"}"
#define PG_W "\"type\":\"postgres\",\"dsn\":\"x\",\"table\":\"t\""

static void test_spec_errors(void **state)
{
    (void)state;
    assert_string_equal(refused("{" PG_R ",\"writers\":[{" PG_W
                                ",\"columns\":[\"a\"],\"mapping\":[{\"target\":"
                                "\"a\",\"source\":\"a\"}]}]}"),
                        "writers[0].columns");
    assert_string_equal(refused("{" PG_R ",\"writers\":[{" PG_W ",\"mapping\":[{\"target\":\"a\","
                                "\"source\":\"a\"},{\"target\":\"a\",\"source\":\"b\"}]}]}"),
                        "writers[0].mapping[1].target");
    assert_string_equal(refused("{" PG_R ",\"writers\":[{" PG_W ",\"mapping\":[{\"target\":\"a\","
                                "\"constant\":\"1\",\"cast\":\"int\"}]}]}"),
                        "writers[0].mapping[0].cast");
    /* Refused by the job schema, which names the entry. */
    const char *f = refused("{" PG_R ",\"writers\":[{" PG_W ",\"mapping\":[{\"target\":\"a\","
                            "\"source\":\"a\",\"cast\":\"money\"}]}]}");
    assert_non_null(strstr(f, "writers[0].mapping[0]"));
    f = refused("{" PG_R ",\"writers\":[{" PG_W ",\"mapping\":[]}]}");
    assert_non_null(strstr(f, "writers[0].mapping"));
}

static void test_reader_columns_follow_mappings(void **state)
{
    (void)state;
    wh_job *j = job("{" PG_R ",\"writers\":[{" PG_W ",\"mapping\":[{\"target\":\"x\",\"source\":"
                    "\"b\"},{\"target\":\"y\",\"constant\":null},{\"target\":\"z\",\"source\":"
                    "\"a\",\"cast\":\"int\"}]},{" PG_W ",\"name\":\"two\",\"mapping\":[{"
                    "\"target\":\"q\",\"source\":\"c\"},{\"target\":\"r\",\"source\":\"b\"}]}]}");
    json_t *cols = json_object_get(j->reader.spec, "columns");
    assert_int_equal(json_array_size(cols), 3);
    assert_string_equal(json_string_value(json_array_get(cols, 0)), "b");
    assert_string_equal(json_string_value(json_array_get(cols, 1)), "a");
    assert_string_equal(json_string_value(json_array_get(cols, 2)), "c");
    json_t *wcols = json_object_get(j->writers[0].spec, "columns");
    assert_int_equal(json_array_size(wcols), 3);
    assert_string_equal(json_string_value(json_array_get(wcols, 2)), "z");
    assert_null(json_object_get(j->writers[0].spec, "mapping"));
    assert_int_equal(wh_map_count(j->writers[1].map), 2);
    wh_job_free(j);
    /* A reader naming its columns keeps them. */
    j = job("{\"reader\":{\"type\":\"postgres\",\"dsn\":\"x\",\"table\":\"s\",\"columns\":[\"a\","
            "\"b\"]},\"writers\":[{" PG_W ",\"mapping\":[{\"target\":\"x\",\"source\":\"b\"}]}]}");
    assert_null(j->reader.spec);
    wh_job_free(j);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_run_maps_columns(void **state)
{
    (void)state;
    char p[256];
    snprintf(p, sizeof(p), "%s/in.csv", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "id,name,amount,secret\n1,ann,10,x\n2,bob,oops,y\n3,cy,,z\n4,dee,7.0,w\n");
    fclose(f);
    wh_job *j = job("{\"progress_interval_ms\":0,\"max_dirty_rows\":1,"
                    "\"reject_file\":\"%s/rejects.jsonl\","
                    "\"reader\":{\"type\":\"file\",\"path\":\"%s/in.csv\",\"header\":true},"
                    "\"writers\":[{\"type\":\"file\",\"path\":\"%s/out.csv\",\"header\":true,"
                    "\"mapping\":[{\"target\":\"who\",\"source\":\"name\"},"
                    "{\"target\":\"n\",\"source\":\"amount\",\"cast\":\"int\"},"
                    "{\"target\":\"origin\",\"constant\":\"crm\"},"
                    "{\"target\":\"note\",\"constant\":null},"
                    "{\"target\":\"key\",\"source\":\"id\"}]},"
                    "{\"type\":\"file\",\"name\":\"all\",\"path\":\"%s/all.csv\"}]}",
                    dir, dir, dir, dir);
    wh_result res;
    assert_int_equal(wh_run(j, NULL, &res), ORR_OK);
    assert_int_equal(res.rows_read, 4);
    assert_int_equal(res.dirty_rows, 1);
    assert_int_equal(res.writers[0].rows_written, 3);
    assert_int_equal(res.writers[0].dirty_rows, 1);
    assert_int_equal(res.writers[1].rows_written, 4); /* unmapped: every column */
    snprintf(p, sizeof(p), "%s/out.csv", dir);
    assert_string_equal(slurp(p), "who,n,origin,note,key\nann,10,crm,,1\ncy,,crm,,3\n"
                                  "dee,7,crm,,4\n");
    snprintf(p, sizeof(p), "%s/rejects.jsonl", dir);
    const char *rej = slurp(p);
    assert_non_null(strstr(rej, "writers[0].mapping[1] (column n, cast int)"));
    assert_non_null(strstr(rej, "\"bob\""));
    wh_result_free(&res);
    wh_job_free(j);

    /* A source column the reader does not have: refused before any row. */
    j = job("{\"progress_interval_ms\":0,"
            "\"reader\":{\"type\":\"file\",\"path\":\"%s/in.csv\",\"header\":true},"
            "\"writers\":[{\"type\":\"file\",\"path\":\"%s/bad.csv\","
            "\"mapping\":[{\"target\":\"a\",\"source\":\"nope\"}]}]}",
            dir, dir);
    assert_int_equal(wh_run(j, NULL, &res), ORR_EINVAL);
    assert_string_equal(res.err.field, "writers[0].mapping[0].source");
    wh_result_free(&res);
    wh_job_free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cast_numbers),
        cmocka_unit_test(test_cast_times),
        cmocka_unit_test(test_cast_other),
        cmocka_unit_test(test_spec_errors),
        cmocka_unit_test(test_reader_columns_follow_mappings),
        cmocka_unit_test(test_run_maps_columns),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
