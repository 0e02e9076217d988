/*
 * it_events_gap.c - WatchEvents and a gap in the event ids, made by
 * construction: a transaction of this test takes an id and holds it open
 * while halleyd commits a later one.
 *
 *   1. While the earlier id is open, the later event is not sent: the stream
 *      reads again and again (its gap-read counter moves) and sends nothing.
 *      Once the holder commits, both come, in id order.
 *   2. A holder that rolls back: the later event comes as soon as the stream
 *      sees no open writer older than it, long before the grace period
 *      (two minutes here), which alone would never pass it in this test.
 *   3. Events written one after another leave no gap: the stream reads them
 *      without reading the oldest writer (pg_stat_activity) at all, before
 *      any gap and again after the gaps above.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hlt.h"

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

static hlt_server srv;

static void team(orr_rpc_client *c, const char *name)
{
    Orrery__Halley__V1__CreateTeamRequest tq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
    tq.name = (char *)name;
    Orrery__Halley__V1__Team *t = NULL;
    orr_err err;
    HLT_CHECK(hlt_call(c, "CreateTeam", &tq, &t, &err) == ORR_OK, "team %s: %s", name, err.msg);
    if (t)
        FREE(t);
}

/* The next event within wait_ms: 1 with its id and kind, 0 if none came. */
static int next_event(orr_rpc_stream *st, int wait_ms, int64_t *id, char *kind, size_t kind_size)
{
    ProtobufCMessage *m = NULL;
    orr_err err;
    orr_status s = orr_rpc_stream_next(st, &m, wait_ms, &err);
    if (s != ORR_OK) {
        if (s != ORR_ETIMEOUT)
            fprintf(stderr, "stream: %s %s\n", orr_status_name(s), err.msg);
        return 0;
    }
    const Orrery__Halley__V1__Event *e = (const void *)m;
    *id = e->id;
    snprintf(kind, kind_size, "%s", e->kind);
    FREE(m);
    return 1;
}

/* Five events one after another, each streamed before the next is made:
 * no gap, so the stream reads them without reading the oldest writer. */
static void five_in_a_row(orr_rpc_client *c, orr_rpc_stream *st, const char *prefix)
{
    double gaps0 = hlt_metric(&srv, "halley_watch_gap_reads_total");
    int got = 0;
    int64_t id;
    char kind[64];
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s%d", prefix, i);
        team(c, name);
        got += next_event(st, 10000, &id, kind, sizeof kind);
    }
    HLT_CHECK(got == 5, "%s: five events streamed (%d)", prefix, got);
    double gaps1 = hlt_metric(&srv, "halley_watch_gap_reads_total");
    HLT_CHECK(gaps1 == gaps0, "%s: no gap, no read of the oldest writer (%.0f -> %.0f)", prefix,
              gaps0, gaps1);
}

/* Wait (at most 60 s) until the stream has read at least `more` more times
 * while judging a gap than `from`; returns whether it did. */
static int gap_reads_reach(double from, int more)
{
    int64_t end = hlt_now_ms() + 60000;
    while (hlt_now_ms() < end) {
        if (hlt_metric(&srv, "halley_watch_gap_reads_total") >= from + more)
            return 1;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* BEGIN and an event of this test's own, left open; returns its id. */
static int64_t hold_id(PGconn *pg)
{
    PQclear(PQexec(pg, "BEGIN"));
    PGresult *r = PQexec(pg, "INSERT INTO events (kind) VALUES ('it.held') RETURNING id");
    int64_t id = PQresultStatus(r) == PGRES_TUPLES_OK ? atoll(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    HLT_CHECK(id > 0, "the held event: %s", PQerrorMessage(pg));
    return id;
}

int main(void)
{
    hlt_db db;
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    const char *const env[] = {"ORRERY_HALLEY_EVENT_GRACE=120s", NULL};
    if (hlt_start(&srv, db.dsn, env, NULL) != 0) {
        HLT_CHECK(0, "halleyd starts");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_events_gap");
    }
    orr_rpc_client *c = hlt_client(&srv, NULL);
    PGconn *holder = PQconnectdb(db.dsn);
    HLT_CHECK(PQstatus(holder) == CONNECTION_OK, "holder connection");
    orr_err err;
    team(c, "first");

    /* From the newest id: the stream's first read may come after it. */
    Orrery__Halley__V1__WatchEventsRequest wr = ORRERY__HALLEY__V1__WATCH_EVENTS_REQUEST__INIT;
    PGresult *mx = hlt_sql(&db, "SELECT max(id) FROM events");
    wr.from_id = atoll(PQgetvalue(mx, 0, 0));
    PQclear(mx);
    orr_rpc_stream *st = NULL;
    HLT_CHECK(orr_rpc_stream_open(c, "WatchEvents", &wr.base, 0, &st, &err) == ORR_OK, "watch: %s",
              err.msg);
    if (!st)
        goto out;
    int64_t id;
    char kind[64];

    /* 3 first, on a quiet stream. */
    double reads0 = hlt_metric(&srv, "halley_watch_reads_total");
    five_in_a_row(c, st, "seq");
    HLT_CHECK(hlt_metric(&srv, "halley_watch_reads_total") > reads0, "the stream read the events");

    /* 1: a held id, committed later. */
    int64_t held = hold_id(holder);
    team(c, "after_held");
    double g = hlt_metric(&srv, "halley_watch_gap_reads_total");
    HLT_CHECK(gap_reads_reach(g, 2), "the stream judges the gap, again and again");
    HLT_CHECK(!next_event(st, 500, &id, kind, sizeof kind),
              "nothing passes the open id %lld (got %lld %s)", (long long)held, (long long)id,
              kind);
    PQclear(PQexec(holder, "COMMIT"));
    int a = next_event(st, 10000, &id, kind, sizeof kind);
    HLT_CHECK(a && id == held && strcmp(kind, "it.held") == 0,
              "the held event first once committed (%lld %s)", a ? (long long)id : 0LL,
              a ? kind : "-");
    a = next_event(st, 10000, &id, kind, sizeof kind);
    HLT_CHECK(a && id > held && strcmp(kind, "team.created") == 0, "then the later one");

    /* 2: a held id, rolled back. */
    held = hold_id(holder);
    team(c, "after_rollback");
    g = hlt_metric(&srv, "halley_watch_gap_reads_total");
    HLT_CHECK(gap_reads_reach(g, 2), "the stream judges the second gap");
    HLT_CHECK(!next_event(st, 500, &id, kind, sizeof kind), "nothing passes the second open id");
    PQclear(PQexec(holder, "ROLLBACK"));
    a = next_event(st, 30000, &id, kind, sizeof kind);
    HLT_CHECK(a && id > held && strcmp(kind, "team.created") == 0,
              "the later event passes the rolled-back id (%lld %s)", a ? (long long)id : 0LL,
              a ? kind : "-");

    /* 3 again, after the gaps: the stream went back to reading the events
     * alone (it does not judge every read once it has met a gap). */
    five_in_a_row(c, st, "again");
    orr_rpc_stream_close(st);
out:
    PQfinish(holder);
    orr_rpc_client_destroy(c);
    HLT_CHECK(hlt_stop(&srv) == 0, "halleyd exits cleanly");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_events_gap");
}
