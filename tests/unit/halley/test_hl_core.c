/*
 * test_hl_core.c - unit tests of halleyd's pure parts: the state machine
 * table, migration names, notification payloads, the task cache, secrets,
 * task spec validation against the embedded schema, and paging (sizes,
 * the deprecated limit, page tokens), lineage edges derived from specs,
 * binary timestamps made epoch milliseconds, and the shared window of
 * passed events.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hl_cache.h"
#include "hl_db.h"
#include "hl_embed.h"
#include "hl_events.h"
#include "hl_evwin.h"
#include "hl_lineage.h"
#include "hl_migrate.h"
#include "hl_page.h"
#include "hl_secret.h"
#include "hl_sm.h"
#include "hl_spec.h"

static void test_sm_names(void **state)
{
    (void)state;
    for (int s = HL_ST_WAITING; s < HL_ST__COUNT; s++)
        assert_int_equal(hl_state_parse(hl_state_name((hl_state)s)), s);
    assert_null(hl_state_name(HL_ST_NONE));
    assert_null(hl_state_name((hl_state)99));
    assert_int_equal(hl_state_parse("bogus"), HL_ST_NONE);
    assert_int_equal(hl_state_parse(NULL), HL_ST_NONE);
}

static void test_sm_table(void **state)
{
    (void)state;
    /* The documented happy path and a few people's actions. */
    assert_true(hl_sm_legal(HL_ST_WAITING, HL_ST_READY));
    assert_true(hl_sm_legal(HL_ST_READY, HL_ST_DISPATCHED));
    assert_true(hl_sm_legal(HL_ST_DISPATCHED, HL_ST_RUNNING));
    assert_true(hl_sm_legal(HL_ST_RUNNING, HL_ST_SUCCESS));
    assert_true(hl_sm_legal(HL_ST_DISPATCHED, HL_ST_FAILED));
    assert_true(hl_sm_legal(HL_ST_SUSPENDED, HL_ST_WAITING));
    /* Refused. */
    assert_false(hl_sm_legal(HL_ST_WAITING, HL_ST_SUCCESS));
    assert_false(hl_sm_legal(HL_ST_RUNNING, HL_ST_SUSPENDED));
    assert_false(hl_sm_legal(HL_ST_RUNNING, HL_ST_MARKED_SUCCESS));
    assert_false(hl_sm_legal(HL_ST_SUCCESS, HL_ST_FAILED));
    assert_false(hl_sm_legal(HL_ST_NONE, HL_ST_READY));
    assert_false(hl_sm_legal(HL_ST_READY, (hl_state)42));
    int legal = 0;
    for (int f = 0; f < HL_ST__COUNT; f++)
        for (int t = 0; t < HL_ST__COUNT; t++) {
            if (f == t)
                assert_false(hl_sm_legal((hl_state)f, (hl_state)t));
            legal += hl_sm_legal((hl_state)f, (hl_state)t);
            /* New attempts only when leaving a finished state for waiting. */
            if (hl_sm_edge((hl_state)f, (hl_state)t) & HL_EDGE_NEW_ATTEMPT) {
                assert_int_equal(t, HL_ST_WAITING);
                assert_true(hl_sm_finished((hl_state)f));
            }
        }
    assert_int_equal(legal, 29); /* the count of the table in hl_sm.c */
    /* Every state can be left, and every finished state can be rerun. */
    for (int f = HL_ST_WAITING; f < HL_ST__COUNT; f++) {
        int out = 0;
        for (int t = HL_ST_WAITING; t < HL_ST__COUNT; t++)
            out += hl_sm_legal((hl_state)f, (hl_state)t);
        assert_true(out > 0);
        if (hl_sm_finished((hl_state)f))
            assert_true(hl_sm_edge((hl_state)f, HL_ST_WAITING) & HL_EDGE_NEW_ATTEMPT);
    }
    assert_true(hl_sm_holds_tokens(HL_ST_RUNNING));
    assert_false(hl_sm_holds_tokens(HL_ST_WAITING));
}

static void test_migration_names(void **state)
{
    (void)state;
    orr_err err;
    int v = 0;
    assert_int_equal(hl_migrate_parse_name("0007_add_x.sql", &v, &err), ORR_OK);
    assert_int_equal(v, 7);
    assert_int_equal(hl_migrate_parse_name("7_add.sql", &v, &err), ORR_EINVAL);
    assert_int_equal(hl_migrate_parse_name("00a1_x.sql", &v, &err), ORR_EINVAL);
    assert_int_equal(hl_migrate_parse_name("0001_x.txt", &v, &err), ORR_EINVAL);
    orr_embedded_file gap[] = {{"0001_a.sql", NULL, 0}, {"0003_c.sql", NULL, 0}};
    assert_int_equal(hl_migrate_check(gap, 2, &v, &err), ORR_EINVAL);
    assert_string_equal(err.field, "0003_c.sql");
    /* The embedded list itself is valid and starts at 1. */
    assert_int_equal(hl_migrate_check(hl_migration_files, hl_migration_files_count, &v, &err),
                     ORR_OK);
    assert_true(v >= 1);
    assert_int_equal(hl_migrate_known_version(), v);
    assert_non_null(orr_embed_find(hl_migration_files, "0001_init.sql"));
    assert_non_null(strstr((const char *)hl_migration_files[0].data, "CREATE TABLE instances"));
}

static void test_payload(void **state)
{
    (void)state;
    int64_t id, task;
    char kind[32];
    assert_int_equal(hl_events_parse_payload("12 task.updated 7", &id, kind, sizeof kind, &task),
                     0);
    assert_int_equal(id, 12);
    assert_string_equal(kind, "task.updated");
    assert_int_equal(task, 7);
    assert_int_equal(hl_events_parse_payload("3 pool.updated ", &id, kind, sizeof kind, &task), 0);
    assert_int_equal(task, 0);
    assert_int_equal(hl_events_parse_payload("x task.updated 7", &id, kind, sizeof kind, &task),
                     -1);
    assert_int_equal(hl_events_parse_payload("5", &id, kind, sizeof kind, &task), -1);
    assert_int_equal(hl_events_parse_payload("5 k 9z", &id, kind, sizeof kind, &task), -1);
    assert_int_equal(hl_events_parse_payload(NULL, &id, kind, sizeof kind, &task), -1);
}

static hl_cached_task mk(int64_t id, int32_t version)
{
    hl_cached_task t = {id,   "t", "team", "shell", 1, version, version,
                        "{}", "",  "UTC",  "ann",   5, "",      0};
    return t;
}

static void test_cache(void **state)
{
    (void)state;
    hl_cache *c = hl_cache_create(2);
    orr_arena *a = orr_arena_create(0);
    hl_cached_task out;
    hl_cached_task t1 = mk(1, 1);
    hl_cache_put(c, &t1, hl_cache_gen(c));
    assert_int_equal(hl_cache_get(c, 1, a, &out), 1);
    assert_int_equal(out.version, 1);
    assert_string_equal(out.team, "team");
    /* A put with a stale generation is dropped. */
    uint64_t g = hl_cache_gen(c);
    hl_cache_invalidate(c, 1);
    hl_cached_task t1b = mk(1, 2);
    hl_cache_put(c, &t1b, g);
    assert_int_equal(hl_cache_get(c, 1, a, &out), 0);
    /* Disabled: nothing is kept. */
    hl_cache_set_enabled(c, 0);
    hl_cache_put(c, &t1b, hl_cache_gen(c));
    assert_int_equal(hl_cache_get(c, 1, a, &out), 0);
    hl_cache_set_enabled(c, 1);
    /* Bounded: a third entry empties the table first. */
    for (int64_t i = 1; i <= 3; i++) {
        hl_cached_task t = mk(i, 1);
        hl_cache_put(c, &t, hl_cache_gen(c));
    }
    hl_cache_stats st;
    hl_cache_get_stats(c, &st);
    assert_true(st.entries <= 2);
    assert_int_equal(hl_cache_get(c, 3, a, &out), 1);
    orr_arena_destroy(a);
    hl_cache_destroy(c);
}

static void test_secrets(void **state)
{
    (void)state;
    orr_err err;
    assert_int_equal(hl_secret_init(&err), ORR_OK);
    unsigned char key[HL_SECRET_KEY_BYTES], key2[HL_SECRET_KEY_BYTES];
    assert_int_equal(
        hl_secret_parse_key("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", key,
                            &err),
        ORR_OK);
    assert_int_equal(key[31], 0x1f);
    assert_int_equal(
        hl_secret_parse_key("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", key2, &err), ORR_OK);
    assert_memory_equal(key, key2, sizeof key);
    assert_int_equal(hl_secret_parse_key("short", key2, &err), ORR_EINVAL);
    assert_string_equal(err.field, "halley.secret_key");
    assert_int_equal(hl_secret_parse_key("", key2, &err), ORR_EINVAL);

    orr_buf sealed = ORR_BUF_INIT, plain = ORR_BUF_INIT;
    hl_secret_seal(key, "hunter2", 7, &sealed);
    assert_int_equal(sealed.len, 24 + 16 + 7);
    assert_null(memmem(sealed.data, sealed.len, "hunter2", 7));
    assert_int_equal(hl_secret_open(key, sealed.data, sealed.len, &plain, &err), ORR_OK);
    assert_string_equal(plain.data, "hunter2");
    sealed.data[30] ^= 1;
    orr_buf_reset(&plain);
    assert_int_equal(hl_secret_open(key, sealed.data, sealed.len, &plain, &err), ORR_EINVAL);
    assert_int_equal(hl_secret_open(key, sealed.data, 10, &plain, &err), ORR_EINVAL);
    orr_buf_free(&sealed);
    orr_buf_free(&plain);

    char hash[128];
    assert_int_equal(hl_secret_hash_password("correct horse", hash, &err), ORR_OK);
    assert_memory_equal(hash, "$argon2id$", 10);
    assert_true(hl_secret_check_password(hash, "correct horse"));
    assert_false(hl_secret_check_password(hash, "correct horsE"));
    assert_false(hl_secret_check_password("$2y$plainbcrypt", "x"));
}

static orr_jschema *schema;

static int setup_schema(void **state)
{
    (void)state;
    orr_err err;
    return hl_spec_schema_load(&schema, &err) == ORR_OK ? 0 : -1;
}

static int teardown_schema(void **state)
{
    (void)state;
    orr_jschema_free(schema);
    return 0;
}

static orr_status parse(const char *json, hl_spec *sp, orr_err *err)
{
    return hl_spec_parse(schema, json, strlen(json), sp, err);
}

static void test_spec(void **state)
{
    (void)state;
    hl_spec sp;
    orr_err err;
    assert_int_equal(
        parse("{\"name\":\"a.b\",\"team\":\"t\",\"type\":\"shell\",\"schedule\":\"0 2 * * *\","
              "\"timezone\":\"Asia/Shanghai\",\"priority\":3,\"pools\":{\"db\":2},"
              "\"retries\":{\"max\":2,\"delay\":\"30s\",\"backoff\":\"exponential\"},"
              "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"up\"},{\"kind\":\"self\"},"
              "{\"kind\":\"data_unit\",\"stream\":\"s\",\"business\":\"b\",\"interface\":\"i\"}],"
              "\"config\":{\"command\":\"run.sh\",\"env\":{\"A\":\"1\"}}}",
              &sp, &err),
        ORR_OK);
    assert_string_equal(sp.name, "a.b");
    assert_string_equal(sp.timezone, "Asia/Shanghai");
    assert_int_equal(sp.priority, 3);
    assert_int_equal(sp.n_deps, 3);
    assert_string_equal(sp.deps[0].task, "up");
    assert_null(sp.deps[1].task);
    assert_non_null(sp.deps[2].unit);
    hl_spec_clear(&sp);

    struct {
        const char *json, *field;
    } bad[] = {
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"retries\":{\"max\":-1}}",
         "spec.retries.max"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{}}", "spec.config.command"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"cobol\",\"config\":{}}", "spec.type"},
        {"{\"name\":\"A B\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"}}",
         "spec.name"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"timeout\":\"10 minutes\"}",
         "spec.timeout"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"upstreams\":[{\"kind\":\"strong\"}]}",
         "spec.upstreams[0].task"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"upstreams\":[{\"kind\":\"weak\",\"task\":\"a\"}]}",
         "spec.upstreams[0].task"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"pools\":{\"db\":0}}",
         "spec.pools.db"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"deadlines\":{\"start_by\":\"soon\"}}",
         "spec.deadlines.start_by"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"deadlines\":{\"finish_by\":\"24:00\"}}",
         "spec.deadlines.finish_by"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"deadlines\":{\"finish_by\":\"40d\"}}",
         "spec.deadlines.finish_by"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"deadlines\":{\"start_by\":\"2h\",\"finish_by\":\"1h\"}}",
         "spec.deadlines.start_by"},
        {"{\"name\":\"a\",\"team\":\"t\",\"type\":\"shell\",\"config\":{\"command\":\"x\"},"
         "\"deadlines\":{\"by\":\"1h\"}}",
         "spec.deadlines.by"},
        {"[1,2]", "spec"},
        {"{\"name\":", "spec"},
        {"", "spec"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        orr_err_clear(&err);
        assert_int_equal(parse(bad[i].json, &sp, &err), ORR_EINVAL);
        if (strcmp(err.field, bad[i].field) != 0)
            fail_msg("case %zu: field %s, want %s (%s)", i, err.field, bad[i].field, err.msg);
        assert_null(sp.root);
    }
    /* deadlines: a duration and a clock time */
    assert_int_equal(parse("{\"name\":\"dl\",\"team\":\"t\",\"type\":\"shell\","
                           "\"config\":{\"command\":\"x\"},"
                           "\"deadlines\":{\"start_by\":\"30m\",\"finish_by\":\"07:30\"}}",
                           &sp, &err),
                     ORR_OK);
    hl_spec_clear(&sp);
    /* transfer's config is a permissive object for now. */
    assert_int_equal(parse("{\"name\":\"tr\",\"team\":\"t\",\"type\":\"transfer\","
                           "\"config\":{\"anything\":[1]}}",
                           &sp, &err),
                     ORR_OK);
    hl_spec_clear(&sp);
}

static void test_page(void **state)
{
    (void)state;
    orr_arena *a = orr_arena_create(0);
    orr_err e;
    hl_page pg;
    /* First page, default size; the keys of a first page. */
    assert_int_equal(hl_page_begin(a, "units", "iss", 0, "", 500, &pg, &e), ORR_OK);
    assert_int_equal(pg.size, 500);
    assert_int_equal(pg.have, 0);
    assert_string_equal(pg.keys[0], "0");
    assert_string_equal(pg.keys[1], "");
    /* Above the maximum: clamped; negative: refused naming the field. */
    assert_int_equal(hl_page_begin(a, "tasks", "i", 5000, "", 100, &pg, &e), ORR_OK);
    assert_int_equal(pg.size, HL_PAGE_MAX);
    assert_int_equal(hl_page_begin(a, "tasks", "i", -1, "", 100, &pg, &e), ORR_EINVAL);
    assert_string_equal(e.field, "page_size");
    /* A token round trip, and a token of another list refused. */
    const char *k[3] = {"1700000000000", "biz", "if_click"};
    const char *tok = hl_page_make(a, "units", "iss", k);
    assert_int_equal(hl_page_begin(a, "units", "iss", 2, tok, 500, &pg, &e), ORR_OK);
    assert_int_equal(pg.have, 1);
    assert_int_equal(pg.size, 2);
    assert_string_equal(pg.keys[0], k[0]);
    assert_string_equal(pg.keys[2], k[2]);
    assert_string_equal(hl_page_next(a, &pg, k), tok); /* the list and kinds given once */
    assert_int_equal(hl_page_begin(a, "tasks", "i", 2, tok, 100, &pg, &e), ORR_EINVAL);
    assert_string_equal(e.field, "page_token");
    /* The deprecated limit: used only when page_size is 0, with its own
     * maximum and field name. */
    assert_int_equal(hl_page_begin_limit(a, "units", "iss", 0, 3000, 5000, "", 500, &pg, &e),
                     ORR_OK);
    assert_int_equal(pg.size, 3000);
    assert_int_equal(hl_page_begin_limit(a, "units", "iss", 7, 3000, 5000, "", 500, &pg, &e),
                     ORR_OK);
    assert_int_equal(pg.size, 7);
    assert_int_equal(hl_page_begin_limit(a, "units", "iss", 0, -3, 5000, "", 500, &pg, &e),
                     ORR_EINVAL);
    assert_string_equal(e.field, "limit");
    /* The limit of a bounded list that is not paged. */
    int limit = 0;
    assert_int_equal(hl_page_limit(0, &limit, &e), ORR_OK);
    assert_int_equal(limit, HL_PAGE_DEFAULT);
    assert_int_equal(hl_page_limit(20000, &limit, &e), ORR_OK);
    assert_int_equal(limit, HL_PAGE_MAX);
    assert_int_equal(hl_page_limit(-1, &limit, &e), ORR_EINVAL);
    assert_string_equal(e.field, "limit");
    orr_arena_destroy(a);
}

static const char *lin_db(void *arg, const char *ds)
{
    (void)arg;
    return strcmp(ds, "my") == 0 ? "shop" : NULL;
}

/* The set's edges as "sk:sn>tk:tn" joined by spaces. */
static const char *lin_text(const hl_lin_set *set, char *buf, size_t n)
{
    buf[0] = 0;
    for (size_t i = 0; i < set->n; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, n - len, "%s%s:%s>%s:%s", i ? " " : "", set->e[i].sk, set->e[i].sn,
                 set->e[i].tk, set->e[i].tn);
    }
    return buf;
}

static void test_lineage_derive(void **state)
{
    (void)state;
    orr_arena *a = orr_arena_create(0);
    char buf[2048];
    hl_lin_set set;
    /* Table names: data source, dsn (URI and keywords), mysql database. */
    json_t *job = json_loads(
        "{\"reader\":{\"type\":\"mysql\",\"datasource\":\"my\",\"tables\":[\"a\",\"x.b\"],"
        "\"columns\":[\"c1\",\"c2\"]},\"writers\":["
        "{\"type\":\"postgres\",\"dsn\":\"host=h dbname='wh' user=u\",\"table\":\"t\","
        "\"columns\":[\"d1\",\"d2\",\"d3\"]},"
        "{\"type\":\"postgres\",\"dsn\":\"postgresql://u:p@h:5/"
        "db2?sslmode=off\",\"table\":\"s.t\"},"
        "{\"type\":\"file\",\"path\":\"/out.csv\",\"columns\":[{\"name\":\"only\"}]},"
        "{\"type\":\"mysql\",\"datasource\":\"unknown\",\"table\":\"u\"}, 7]}",
        0, NULL);
    assert_non_null(job);
    hl_lin_set_init(&set, a);
    hl_lineage_transfer(&set, job, lin_db, NULL);
    assert_string_equal(
        lin_text(&set, buf, sizeof buf),
        "table:my.shop.a>table:wh.public.t table:my.x.b>table:wh.public.t "
        "column:my.shop.a.c1>column:wh.public.t.d1 column:my.shop.a.c2>column:wh.public.t.d2 "
        "column:my.x.b.c1>column:wh.public.t.d1 column:my.x.b.c2>column:wh.public.t.d2 "
        "table:my.shop.a>table:db2.s.t table:my.x.b>table:db2.s.t "
        "column:my.shop.a.c1>column:db2.s.t.c1 column:my.shop.a.c2>column:db2.s.t.c2 "
        "column:my.x.b.c1>column:db2.s.t.c1 column:my.x.b.c2>column:db2.s.t.c2 "
        "table:my.shop.a>file:/out.csv table:my.x.b>file:/out.csv "
        "column:my.shop.a.c1>column:/out.csv.only column:my.x.b.c1>column:/out.csv.only "
        "table:my.shop.a>table:unknown.u table:my.x.b>table:unknown.u "
        "column:my.shop.a.c1>column:unknown.u.c1 column:my.shop.a.c2>column:unknown.u.c2 "
        "column:my.x.b.c1>column:unknown.u.c1 column:my.x.b.c2>column:unknown.u.c2");
    assert_string_equal(set.e[0].detail, "{\"writer\":0}");
    assert_string_equal(set.e[6].detail, "{\"writer\":1}");
    assert_string_equal(set.e[8].detail, "{\"match\":\"name\"}");
    json_decref(job);

    /* A mapping: casts on column edges, constants on the table edge, a
     * file reader, and nothing from what cannot be read. */
    job = json_loads("{\"reader\":{\"type\":\"file\",\"path\":\"/in.csv\"},\"writers\":[{"
                     "\"type\":\"postgres\",\"datasource\":\"pg\",\"table\":\"t\",\"mapping\":["
                     "{\"target\":\"a\",\"source\":\"x\",\"cast\":\"int\"},"
                     "{\"target\":\"b\",\"constant\":null},{\"source\":\"y\"},{\"target\":\"c\","
                     "\"source\":\"z\"}]}]}",
                     0, NULL);
    hl_lin_set_init(&set, a);
    hl_lineage_transfer(&set, job, lin_db, NULL);
    assert_string_equal(lin_text(&set, buf, sizeof buf),
                        "file:/in.csv>table:pg.public.t column:/in.csv.x>column:pg.public.t.a "
                        "column:/in.csv.z>column:pg.public.t.c");
    assert_string_equal(set.e[0].detail,
                        "{\"constants\":[{\"constant\":null,\"target\":\"b\"}],\"writer\":0}");
    assert_string_equal(set.e[1].detail, "{\"cast\":\"int\"}");
    assert_null(set.e[2].detail);
    json_decref(job);
    hl_lin_set_init(&set, a);
    hl_lineage_transfer(&set, NULL, lin_db, NULL);
    job = json_loads("{\"reader\":{\"type\":\"postgres\"},\"writers\":{}}", 0, NULL);
    hl_lineage_transfer(&set, job, lin_db, NULL);
    assert_int_equal(set.n, 0);
    json_decref(job);

    /* A stream's edges. */
    job = json_loads("{\"business\":\"b\",\"source\":{\"type\":\"file\",\"path\":\"/in\"},"
                     "\"interface\":{\"field\":\"f\"},\"interfaces\":[\"i1\",\"i2\"],"
                     "\"sinks\":{\"postgres\":{\"table\":\"ev.t\",\"columns\":[\"c\"]}}}",
                     0, NULL);
    hl_lin_set_init(&set, a);
    hl_lineage_stream(&set, "st", job);
    assert_string_equal(
        lin_text(&set, buf, sizeof buf),
        "file:/in>stream:st stream:st>data_unit:st/b/i1 stream:st>data_unit:st/b/i2 "
        "stream:st>table:dsn.ev.t");
    json_decref(job);

    /* Limits: a self edge and an over-long name are skipped; the cap. */
    hl_lin_set_init(&set, a);
    hl_lin_add(&set, "table", "x", "table", "x", NULL);
    char long_name[HL_LIN_NAME_MAX + 2];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    hl_lin_add(&set, "table", long_name, "table", "x", NULL);
    assert_int_equal(set.n, 0);
    for (int i = 0; i < HL_LIN_MAX_EDGES + 3; i++)
        hl_lin_add(&set, "table", "a", "table", "b", NULL);
    assert_int_equal(set.n, HL_LIN_MAX_EDGES);
    assert_int_equal(set.dropped, 3);
    orr_arena_destroy(a);
}

/* hl_pg_us_to_ms against the exact value of (extract(epoch) * 1000)::int8:
 * the microseconds since 1970 divided by 1000, rounded half away from zero,
 * computed here in 128 bits. */
static long long ms_exact(int64_t pg_us)
{
    __int128 us = (__int128)pg_us + (__int128)946684800LL * 1000000;
    __int128 ms = us >= 0 ? (us + 500) / 1000 : -((-us + 500) / 1000);
    return (long long)ms;
}

static void test_pg_us_to_ms(void **state)
{
    (void)state;
    const int64_t epoch = -946684800LL * 1000000; /* 1970-01-01 in PostgreSQL's clock */
    const int64_t cases[] = {
        0,
        499,
        500,
        501,
        999,
        1000,
        -1,
        -499,
        -500,
        -501,
        epoch,
        epoch + 499,
        epoch + 500,
        epoch - 499,
        epoch - 500,
        epoch - 1500,
        epoch - 1499,
        -211813488000000000LL, /* 4714-11-24 BC, PostgreSQL's first day */
        9223371331199999999LL, /* the last microsecond of 294276 AD */
        9222425352054775807LL, /* where adding 30 years of microseconds would overflow */
        9222425352054775808LL,
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (hl_pg_us_to_ms(cases[i]) != ms_exact(cases[i]))
            fail_msg("case %zu (%lld us): %lld, want %lld", i, (long long)cases[i],
                     hl_pg_us_to_ms(cases[i]), ms_exact(cases[i]));
    }
    assert_int_equal(hl_pg_us_to_ms(epoch - 1500), -2); /* -1.5 ms: away from zero */
    assert_int_equal(hl_pg_us_to_ms(epoch + 1500), 2);
    assert_true(hl_pg_us_to_ms(INT64_MAX) == INT64_MAX); /* 'infinity' */
    assert_true(hl_pg_us_to_ms(INT64_MIN) == INT64_MIN);
}

static hl_evwin_ev evw(int64_t id, const char *kind)
{
    return (hl_evwin_ev){.id = id, .kind = kind, .executor = "", .payload_json = "{}"};
}

/* The events window: who fetches, what a stream takes, how it joins, moves
 * and starts anew. */
static void test_evwin(void **state)
{
    (void)state;
    hl_evwin *w = hl_evwin_create(4);
    orr_arena *a = orr_arena_create(0);
    hl_evwin_fetch f, done = {.seq = 7, .gap = 0, .more = 0, .judge = 0};
    hl_evwin_ev out[8];
    int64_t to;
    /* Empty: the first stream fetches; a second, while it does, waits and
     * then hears there is nothing (the fetch passed nothing). */
    assert_int_equal(hl_evwin_next(w, 10, 10, &f), HL_EVWIN_FETCH);
    assert_int_equal(hl_evwin_next(w, 10, 10, &f), HL_EVWIN_NONE); /* timed out waiting */
    hl_evwin_put(w, 1, 10, 10, NULL, 0, &done);
    assert_int_equal(hl_evwin_next(w, 10, 10, &f), HL_EVWIN_FETCH);
    /* A fetch passed (10, 14]: 11, 12 and 14 (13 a gap passed for good). */
    hl_evwin_ev got[3] = {evw(11, "a"), evw(12, "b"), evw(14, "c")};
    done.gap = 1;
    done.judge = 1;
    hl_evwin_put(w, 1, 10, 14, got, 3, &done);
    assert_int_equal(hl_evwin_next(w, 10, 10, &f), HL_EVWIN_HAVE);
    assert_int_equal(f.seq, 7);
    assert_int_equal(f.gap, 1);
    assert_int_equal(hl_evwin_copy(w, a, 10, 2, out, &to), 2); /* at most max */
    assert_int_equal(out[0].id, 11);
    assert_string_equal(out[1].kind, "b");
    assert_int_equal(to, 12);
    assert_int_equal(hl_evwin_copy(w, a, 12, 8, out, &to), 1);
    assert_int_equal(out[0].id, 14);
    assert_int_equal(to, 14);
    assert_int_equal(hl_evwin_taken(w), 3);
    /* At the end: the next fetch judges the gap where the last one stopped. */
    assert_int_equal(hl_evwin_next(w, 14, 10, &f), HL_EVWIN_FETCH);
    assert_int_equal(f.judge, 1);
    done.gap = 0;
    /* It passes (14, 17]: the window holds 4, so 11 and 12 leave. */
    hl_evwin_ev more[3] = {evw(15, "d"), evw(16, "e"), evw(17, "f")};
    hl_evwin_put(w, 1, 14, 17, more, 3, &done);
    assert_int_equal(hl_evwin_next(w, 10, 10, &f), HL_EVWIN_ALONE); /* behind: 11 is gone */
    assert_int_equal(hl_evwin_copy(w, a, 10, 8, out, &to), 0);
    assert_int_equal(to, 10);
    assert_int_equal(hl_evwin_next(w, 11, 10, &f), HL_EVWIN_ALONE); /* and 12 */
    assert_int_equal(hl_evwin_next(w, 12, 10, &f), HL_EVWIN_HAVE);
    assert_int_equal(hl_evwin_copy(w, a, 12, 8, out, &to), 4);
    assert_int_equal(out[0].id, 14);
    assert_int_equal(to, 17);
    /* A stream alone offers rows: those past the end join it, older ones
     * change nothing. */
    hl_evwin_ev late[2] = {evw(17, "f"), evw(18, "g")};
    hl_evwin_put(w, 0, 16, 18, late, 2, NULL);
    assert_int_equal(hl_evwin_copy(w, a, 17, 8, out, &to), 1);
    assert_int_equal(out[0].id, 18);
    hl_evwin_put(w, 0, 12, 15, more, 1, NULL);
    assert_int_equal(hl_evwin_copy(w, a, 14, 8, out, &to), 4);
    assert_int_equal(to, 18);
    /* A stream ahead of the window fetches, and its rows start it anew. */
    assert_int_equal(hl_evwin_next(w, 30, 10, &f), HL_EVWIN_FETCH);
    assert_int_equal(f.judge, 0); /* the last gap was not where it stands */
    hl_evwin_ev ahead[1] = {evw(31, "h")};
    hl_evwin_put(w, 1, 30, 31, ahead, 1, &done);
    assert_int_equal(hl_evwin_next(w, 18, 10, &f), HL_EVWIN_ALONE);
    assert_int_equal(hl_evwin_next(w, 30, 10, &f), HL_EVWIN_HAVE);
    assert_int_equal(hl_evwin_copy(w, a, 30, 8, out, &to), 1);
    assert_string_equal(out[0].kind, "h");
    orr_arena_destroy(a);
    hl_evwin_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sm_names),
        cmocka_unit_test(test_sm_table),
        cmocka_unit_test(test_migration_names),
        cmocka_unit_test(test_payload),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_secrets),
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_lineage_derive),
        cmocka_unit_test(test_pg_us_to_ms),
        cmocka_unit_test(test_evwin),
        cmocka_unit_test_setup_teardown(test_spec, setup_schema, teardown_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
