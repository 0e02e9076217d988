/*
 * sort_pg_cas_test.c - the PostgreSQL sink's position is a compare-and-set.
 *
 *   sort_pg_cas_test REJECT_FILE   (run by sort_pg_cas.sh)
 *
 * Two sinks A and B write the same stream into one table of a fresh
 * database (SORT_PG_TEST_DSN; the table it.cas(id bigint) exists), as two
 * consumer-group members would when A stalls past its session timeout and
 * its partitions go to B:
 *
 *   1. A commits offsets 0..9 of partition 0 (no row yet: inserted).
 *   2. B takes partition 0 over (reload), commits 10..14.
 *   3. A, still expecting 10, flushes 10..14 again: ORR_ECONFLICT naming
 *      the stream and partition 0; not one row added, B's position stays.
 *   4. partition 1 has no row for either: B inserts first, A's insert of
 *      the same partition conflicts (with a partition-0 batch in the same
 *      transaction that is rolled back too).
 *   5. a failed sink keeps its batch and refuses a reload of it; a fresh
 *      sink (a restart) loads the positions and adds only new rows.
 *
 * Every step checks the table: row count, distinct ids, stored positions.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_json.h"
#include "orr_status.h"
#include "sort_reject.h"
#include "sort_sink_pg.h"
#include "sort_spec.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static PGconn *g_db;

/* One integer from a query (-1 on error). */
static long long q_int(const char *sql)
{
    PGresult *r = PQexec(g_db, sql);
    long long v = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    else
        fprintf(stderr, "query failed: %s: %s\n", sql, PQerrorMessage(g_db));
    PQclear(r);
    return v;
}

/* Stored position (off_lo) of partition part of stream cas; -1 if none. */
static long long stored_lo(int part)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT coalesce((SELECT off_lo FROM orrery_sort_offsets WHERE stream = 'cas' AND "
             "part = %d), -1)",
             part);
    return q_int(sql);
}

/* Add records [from, to) of partition part (id = offset), then advance. */
static void add_range(sort_sink_pg *k, uint32_t part, uint64_t from, uint64_t to)
{
    for (uint64_t o = from; o < to; o++) {
        sort_val vals[2] = {{.set = 1, .is_num = 1, .num = (int64_t)(part * 1000 + o)}, {0}};
        char rec[32];
        int n = snprintf(rec, sizeof rec, "%" PRIu64, o);
        sort_off off = {.hi = 0, .lo = o};
        CHECK(sort_sink_pg_add(k, part, off, vals, rec, (size_t)n) == 0, "add %" PRIu64, o);
        sort_sink_pg_advance(k, part, (sort_off){.hi = 0, .lo = o + 1});
    }
}

static sort_sink_pg *open_sink(const sort_spec *spec, const char *who)
{
    sort_sink_pg *k = NULL;
    orr_err err;
    orr_status rc = sort_sink_pg_open(spec, &k, &err);
    CHECK(rc == ORR_OK, "open %s: %s", who, err.msg);
    if (rc != ORR_OK)
        exit(1);
    return k;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sort_pg_cas_test REJECT_FILE\n");
        return 2;
    }
    const char *dsn = getenv("SORT_PG_TEST_DSN");
    if (!dsn || !*dsn) {
        fprintf(stderr, "SORT_PG_TEST_DSN is not set\n");
        return 1;
    }
    g_db = PQconnectdb(dsn);
    if (PQstatus(g_db) != CONNECTION_OK) {
        fprintf(stderr, "connect: %s\n", PQerrorMessage(g_db));
        return 1;
    }
    const char *text =
        "{\"name\": \"cas\", \"business\": \"bc\","
        " \"source\": {\"type\": \"file\", \"path\": \"/nonexistent-cas-input\"},"
        " \"format\": {\"type\": \"delimited\", \"delimiter\": \"|\", \"fields\": [\"id\", "
        "\"ts\"]},"
        " \"interface\": {\"const\": \"cas\"},"
        " \"time\": {\"field\": \"ts\", \"format\": \"epoch_s\"}, \"bucket\": \"hour\","
        " \"check\": {\"enabled\": false},"
        " \"sinks\": {\"files\": false, \"postgres\": {\"dsn_env\": \"SORT_PG_TEST_DSN\","
        " \"table\": \"it.cas\", \"columns\": [\"id\"], \"batch_rows\": 100}}}";
    json_t *doc = NULL;
    orr_err err;
    if (orr_json_parse(text, strlen(text), &doc, &err) != ORR_OK) {
        fprintf(stderr, "spec json: %s\n", err.msg);
        return 1;
    }
    sort_spec *spec = NULL;
    if (sort_spec_parse(doc, "spec", &spec, &err) != ORR_OK) {
        fprintf(stderr, "spec: %s: %s\n", err.field, err.msg);
        return 1;
    }
    json_decref(doc);
    sort_reject rej;
    if (sort_reject_open(&rej, argv[1], &err) != ORR_OK) {
        fprintf(stderr, "rejects: %s\n", err.msg);
        return 1;
    }

    sort_sink_pg *a = open_sink(spec, "A"), *b = open_sink(spec, "B");
    sort_off pos;

    /* 1. A commits 0..9 of partition 0 (a new row). */
    add_range(a, 0, 0, 10);
    CHECK(sort_sink_pg_flush(a, &rej, &err) == ORR_OK, "A first flush: %s", err.msg);
    CHECK(q_int("SELECT count(*) FROM it.cas") == 10, "10 rows after A");
    CHECK(stored_lo(0) == 10, "position 10 after A, got %lld", stored_lo(0));

    /* 2. B takes partition 0 over and commits 10..14. */
    uint32_t p0 = 0;
    CHECK(sort_sink_pg_reload(b, &p0, 1, &err) == ORR_OK, "B reload: %s", err.msg);
    CHECK(sort_sink_pg_safe(b, 0, &pos) && pos.lo == 10, "B sees position 10");
    CHECK(sort_sink_pg_skip(b, 0, (sort_off){0, 9}) && !sort_sink_pg_skip(b, 0, (sort_off){0, 10}),
          "B skips below 10 only");
    add_range(b, 0, 10, 15);
    CHECK(sort_sink_pg_flush(b, &rej, &err) == ORR_OK, "B flush: %s", err.msg);
    CHECK(stored_lo(0) == 15, "position 15 after B, got %lld", stored_lo(0));
    CHECK(q_int("SELECT count(*) FROM it.cas") == 15, "15 rows after B");

    /* 3. A, stalled, flushes the same records: refused, nothing added. */
    add_range(a, 0, 10, 15);
    orr_err_clear(&err);
    orr_status rc = sort_sink_pg_flush(a, &rej, &err);
    CHECK(rc == ORR_ECONFLICT, "A's stale flush: want ECONFLICT, got %d (%s)", rc, err.msg);
    CHECK(strstr(err.msg, "stream cas") && strstr(err.msg, "partition 0"),
          "conflict message names stream and partition: %s", err.msg);
    CHECK(q_int("SELECT count(*) FROM it.cas") == 15, "no row added by the stale flush");
    CHECK(q_int("SELECT count(DISTINCT id) FROM it.cas") == 15, "no duplicate id");
    CHECK(stored_lo(0) == 15, "position stays 15, got %lld", stored_lo(0));
    CHECK(sort_sink_pg_safe(a, 0, &pos) && pos.lo == 10, "A's committed position unchanged");
    /* Its batch stays pending: a reload of that partition is refused. */
    rc = sort_sink_pg_reload(a, &p0, 1, &err);
    CHECK(rc == ORR_EINVAL, "reload with a pending batch: got %d", rc);
    sort_sink_pg_close(a);

    /* 4. Partition 1 without a row: the first insert wins, the second
     * conflicts, and takes its partition-0 rows down with it. */
    a = open_sink(spec, "A again"); /* loads 0 -> 15; partition 1 has no row */
    sort_sink_pg *c = open_sink(spec, "C");
    add_range(b, 1, 0, 5);
    CHECK(sort_sink_pg_flush(b, &rej, &err) == ORR_OK, "B inserts partition 1: %s", err.msg);
    CHECK(stored_lo(1) == 5, "partition 1 at 5, got %lld", stored_lo(1));
    add_range(c, 0, 15, 18); /* C's partition 0 expectation (15) still holds */
    add_range(c, 1, 0, 3);   /* but partition 1 got a row after C loaded */
    orr_err_clear(&err);
    rc = sort_sink_pg_flush(c, &rej, &err);
    CHECK(rc == ORR_ECONFLICT && strstr(err.msg, "partition 1"),
          "C's insert of partition 1: want ECONFLICT naming partition 1, got %d (%s)", rc, err.msg);
    CHECK(q_int("SELECT count(*) FROM it.cas") == 20, "the whole transaction rolled back");
    CHECK(stored_lo(0) == 15 && stored_lo(1) == 5, "positions unchanged");
    sort_sink_pg_close(c);

    /* 5. A freshly opened sink (a restart) continues where the table is. */
    add_range(a, 0, 15, 20);
    CHECK(sort_sink_pg_flush(a, &rej, &err) == ORR_OK, "A after reopening: %s", err.msg);
    CHECK(stored_lo(0) == 20, "position 20, got %lld", stored_lo(0));
    CHECK(q_int("SELECT count(*) FROM it.cas") == 25, "25 rows");
    CHECK(q_int("SELECT count(DISTINCT id) FROM it.cas") == 25, "25 distinct ids");
    /* And B, which did not reload partition 0 since A moved it, conflicts. */
    add_range(b, 0, 15, 16);
    CHECK(sort_sink_pg_flush(b, &rej, &err) == ORR_ECONFLICT, "B's stale partition 0");
    CHECK(q_int("SELECT count(*) FROM it.cas") == 25, "still 25 rows");

    sort_sink_pg_close(a);
    sort_sink_pg_close(b);
    sort_reject_close(&rej);
    sort_spec_free(spec);
    PQfinish(g_db);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("PASS sort_pg_cas\n");
    return 0;
}
