/*
 * it_data.c - halleyd's data RPCs end to end: sort streams (schema validation
 * naming the path, version per change, events, audit), data units
 * (check_version guard, reconciled event through WatchEvents, listing
 * filters), lineage (idempotent batches, depth of the walk over a cycle;
 * the edges a task's save records: a transfer's tables and its mapping's or
 * positional columns, dependencies, replaced at every save, hidden while the
 * task is inactive; a run's reported edges; a stream's; name completion),
 * process statistics (key and value checks, by instance and by task) and
 * transfer watermarks (compare-and-set, a race of writers).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

#define HOUR_MS 3600000LL
#define T0      1700000000000LL /* a whole hour */

typedef Orrery__Halley__V1__SortStream Stream;
typedef Orrery__Halley__V1__DataUnit Unit;
typedef Orrery__Halley__V1__LineageEdge Edge;
typedef Orrery__Halley__V1__Watermark Watermark;

static orr_rpc_client *cl;
static orr_err err;
static hlt_db db;
static hlt_server srv;

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

/* Count of rows of a one-value query. */
static long long sql_count(const char *sql)
{
    PGresult *r = hlt_sql(&db, sql);
    long long n = PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return n;
}

/* Payloads of the events of one kind, replayed from the start (fresh
 * database). Reads until max events or 1.5 s without one; returns how many. */
static int events_of(const char *kind, int max, char payloads[][512])
{
    Orrery__Halley__V1__WatchEventsRequest rq = ORRERY__HALLEY__V1__WATCH_EVENTS_REQUEST__INIT;
    char *kinds[1] = {(char *)kind};
    rq.n_kinds = 1;
    rq.kinds = kinds;
    orr_rpc_stream *st = NULL;
    orr_err e;
    if (orr_rpc_stream_open(cl, "WatchEvents", &rq.base, 0, &st, &e) != ORR_OK) {
        HLT_CHECK(0, "WatchEvents open: %s", e.msg);
        return 0;
    }
    int n = 0;
    while (n < max) {
        ProtobufCMessage *m = NULL;
        if (orr_rpc_stream_next(st, &m, 1500, &e) != ORR_OK)
            break;
        Orrery__Halley__V1__Event *ev = (Orrery__Halley__V1__Event *)m;
        if (strcmp(ev->kind, kind) == 0)
            snprintf(payloads[n++], 512, "%s", ev->payload_json);
        FREE(m);
    }
    orr_rpc_stream_close(st);
    return n;
}

/* ---------------------------------------------------------------- streams */

static const char *stream_spec(char *buf, size_t n, const char *name, const char *bucket)
{
    snprintf(buf, n,
             "{\"name\":\"%s\",\"business\":\"shop\",\"source\":{\"type\":\"file\","
             "\"path\":\"/data/in\"},\"format\":{\"type\":\"jsonl\"},"
             "\"interface\":{\"field\":\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_ms\"},"
             "\"bucket\":\"%s\"}",
             name, bucket);
    return buf;
}

static orr_status put_stream(const char *name, const char *spec, int active, Stream **out)
{
    Orrery__Halley__V1__PutSortStreamRequest rq = ORRERY__HALLEY__V1__PUT_SORT_STREAM_REQUEST__INIT;
    rq.name = (char *)name;
    rq.spec_json = (char *)spec;
    rq.active = active;
    rq.actor = "user:ann";
    *out = NULL;
    return hlt_call(cl, "PutSortStream", &rq, out, &err);
}

static void test_streams(void)
{
    char spec[1024];
    Stream *s = NULL;
    HLT_CHECK(put_stream("web", stream_spec(spec, sizeof spec, "web", "hour"), 1, &s) == ORR_OK &&
                  s->version == 1 && s->active && strcmp(s->name, "web") == 0 &&
                  strstr(s->spec_json, "\"bucket\": \"hour\"") && s->updated_at_ms > 0,
              "create stream web: %s", err.msg);
    if (s)
        FREE(s);
    HLT_CHECK(put_stream("web", stream_spec(spec, sizeof spec, "web", "day"), 1, &s) == ORR_OK &&
                  s->version == 2 && strstr(s->spec_json, "\"day\""),
              "changed spec is version 2: %s", err.msg);
    if (s)
        FREE(s);
    /* The same spec again (other whitespace) changes nothing. */
    char same[1100];
    snprintf(same, sizeof same, "  %s\n", stream_spec(spec, sizeof spec, "web", "day"));
    HLT_CHECK(put_stream("web", same, 1, &s) == ORR_OK && s->version == 2,
              "identical put keeps version 2 (%lld)", s ? (long long)s->version : -1LL);
    if (s)
        FREE(s);
    HLT_CHECK(put_stream("web", stream_spec(spec, sizeof spec, "web", "day"), 0, &s) == ORR_OK &&
                  s->version == 3 && !s->active,
              "deactivating is version 3");
    if (s)
        FREE(s);
    HLT_CHECK(put_stream("app", stream_spec(spec, sizeof spec, "app", "15m"), 1, &s) == ORR_OK &&
                  s->version == 1,
              "create stream app");
    if (s)
        FREE(s);

    /* Bad specs name the JSON path; nothing is written. */
    HLT_CHECK(put_stream("web", stream_spec(spec, sizeof spec, "web", "week"), 1, &s) ==
                      ORR_EINVAL &&
                  strcmp(err.field, "spec.bucket") == 0,
              "bad bucket names spec.bucket (%s: %s)", err.field, err.msg);
    HLT_CHECK(
        put_stream("web",
                   "{\"name\":\"web\",\"business\":\"shop\",\"source\":{\"type\":\"file\","
                   "\"path\":\"/d\"},\"format\":{\"type\":\"jsonl\"},\"interface\":{\"field\":"
                   "\"if\"},\"time\":{\"field\":\"ts\",\"format\":\"epoch_ms\","
                   "\"timezone\":\"Europe//Berlin\"},\"bucket\":\"hour\"}",
                   1, &s) == ORR_EINVAL &&
            strcmp(err.field, "spec.time.timezone") == 0,
        "bad timezone names spec.time.timezone (%s: %s)", err.field, err.msg);
    HLT_CHECK(put_stream("web", stream_spec(spec, sizeof spec, "other", "hour"), 1, &s) ==
                      ORR_EINVAL &&
                  strcmp(err.field, "spec.name") == 0,
              "spec naming another stream (%s)", err.field);
    HLT_CHECK(put_stream("web", "{not json", 1, &s) == ORR_EINVAL && strcmp(err.field, "spec") == 0,
              "text that is not JSON (%s)", err.field);
    HLT_CHECK(put_stream("bad name", stream_spec(spec, sizeof spec, "web", "hour"), 1, &s) ==
                      ORR_EINVAL &&
                  strcmp(err.field, "name") == 0,
              "bad stream name (%s)", err.field);

    Orrery__Halley__V1__GetSortStreamRequest g = ORRERY__HALLEY__V1__GET_SORT_STREAM_REQUEST__INIT;
    g.name = "web";
    s = NULL;
    HLT_CHECK(hlt_call(cl, "GetSortStream", &g, &s, &err) == ORR_OK && s->version == 3 &&
                  !s->active && strstr(s->spec_json, "\"day\""),
              "get web after refused puts: still version 3");
    if (s)
        FREE(s);
    g.name = "nope";
    HLT_CHECK(hlt_call(cl, "GetSortStream", &g, &s, &err) == ORR_ENOTFOUND &&
                  strcmp(err.field, "name") == 0,
              "get unknown stream");

    Orrery__Halley__V1__ListSortStreamsRequest l =
        ORRERY__HALLEY__V1__LIST_SORT_STREAMS_REQUEST__INIT;
    Orrery__Halley__V1__ListSortStreamsResponse *ls = NULL;
    HLT_CHECK(hlt_call(cl, "ListSortStreams", &l, &ls, &err) == ORR_OK && ls->n_streams == 2 &&
                  strcmp(ls->streams[0]->name, "app") == 0 &&
                  strcmp(ls->streams[1]->name, "web") == 0,
              "list all streams by name");
    if (ls)
        FREE(ls);
    l.active_only = 1;
    ls = NULL;
    HLT_CHECK(hlt_call(cl, "ListSortStreams", &l, &ls, &err) == ORR_OK && ls->n_streams == 1 &&
                  strcmp(ls->streams[0]->name, "app") == 0,
              "list active streams");
    if (ls)
        FREE(ls);

    char pl[8][512];
    int n = events_of("stream.changed", 8, pl);
    HLT_CHECK(n == 4, "4 stream.changed events (got %d)", n);
    if (n == 4)
        HLT_CHECK(strstr(pl[0], "\"web\"") && strstr(pl[0], "\"version\": 1") &&
                      strstr(pl[2], "\"version\": 3") && strstr(pl[3], "\"app\""),
                  "stream.changed payloads: %s | %s", pl[0], pl[2]);
    HLT_CHECK(sql_count("SELECT count(*) FROM audit_log WHERE action = 'stream.put'"
                        " AND object = 'stream:web' AND actor = 'user:ann'") == 3,
              "three audited changes of web");
}

/* ------------------------------------------------------------- data units */

static orr_status report(const char *stream, const char *iface, int64_t bucket, int64_t records,
                         int version, int reconciled, Unit **out)
{
    Unit u = ORRERY__HALLEY__V1__DATA_UNIT__INIT;
    u.stream = (char *)stream;
    u.business = "shop";
    u.interface = (char *)iface;
    u.bucket_ms = bucket;
    u.records = records;
    u.files = 2;
    u.bytes = records * 100;
    u.late_records = 1;
    u.check_version = version;
    u.reconciled = reconciled;
    Orrery__Halley__V1__ReportDataUnitRequest rq =
        ORRERY__HALLEY__V1__REPORT_DATA_UNIT_REQUEST__INIT;
    rq.unit = &u;
    *out = NULL;
    return hlt_call(cl, "ReportDataUnit", &rq, out, &err);
}

static void test_units(void)
{
    Unit *u = NULL;
    HLT_CHECK(report("web", "click", T0, 10, 1, 0, &u) == ORR_OK && u->records == 10 &&
                  u->check_version == 1 && u->bucket_ms == T0 && u->files == 2 &&
                  u->bytes == 1000 && u->late_records == 1 && !u->reconciled &&
                  u->updated_at_ms > 0,
              "first report: %s", err.msg);
    if (u)
        FREE(u);
    HLT_CHECK(report("web", "click", T0, 30, 3, 0, &u) == ORR_OK && u->records == 30 &&
                  u->check_version == 3,
              "newer check applied");
    if (u)
        FREE(u);
    HLT_CHECK(report("web", "click", T0, 20, 2, 1, &u) == ORR_OK && u->records == 30 &&
                  u->check_version == 3 && !u->reconciled,
              "stale check ignored, stored unit returned (%lld, v%d)",
              u ? (long long)u->records : -1LL, u ? u->check_version : -1);
    if (u)
        FREE(u);
    HLT_CHECK(report("web", "click", T0, 31, 4, 1, &u) == ORR_OK && u->records == 31 &&
                  u->check_version == 4 && u->reconciled,
              "reconciled report");
    if (u)
        FREE(u);
    /* More units: other interface, other hours. */
    for (int h = 1; h <= 3; h++) {
        if (report("web", "click", T0 + h * HOUR_MS, 100 + h, 1, h == 2, &u) == ORR_OK)
            FREE(u);
        else
            HLT_CHECK(0, "report hour %d: %s", h, err.msg);
    }
    if (report("web", "view", T0 + HOUR_MS, 7, 1, 0, &u) == ORR_OK)
        FREE(u);

    /* Refusals name their field. */
    HLT_CHECK(report("nosuch", "click", T0, 1, 1, 0, &u) == ORR_ENOTFOUND &&
                  strcmp(err.field, "unit.stream") == 0,
              "unknown stream (%s: %s)", err.field, err.msg);
    HLT_CHECK(report("web", "bad iface", T0, 1, 1, 0, &u) == ORR_EINVAL &&
                  strcmp(err.field, "unit.interface") == 0,
              "bad interface (%s)", err.field);
    HLT_CHECK(report("web", "click", T0, -5, 9, 0, &u) == ORR_EINVAL &&
                  strcmp(err.field, "unit.records") == 0,
              "negative records (%s)", err.field);
    HLT_CHECK(report("web", "click", INT64_MAX, 1, 1, 0, &u) == ORR_EINVAL &&
                  strcmp(err.field, "unit.bucket_ms") == 0,
              "bucket beyond the year 9999 (%s)", err.field);
    Orrery__Halley__V1__ReportDataUnitRequest empty =
        ORRERY__HALLEY__V1__REPORT_DATA_UNIT_REQUEST__INIT;
    HLT_CHECK(hlt_call(cl, "ReportDataUnit", &empty, &u, &err) == ORR_EINVAL &&
                  strcmp(err.field, "unit") == 0,
              "no unit (%s)", err.field);

    /* Listing: newest bucket first, filters, limit. */
    Orrery__Halley__V1__ListDataUnitsRequest l = ORRERY__HALLEY__V1__LIST_DATA_UNITS_REQUEST__INIT;
    Orrery__Halley__V1__ListDataUnitsResponse *r = NULL;
    l.stream = "web";
    HLT_CHECK(hlt_call(cl, "ListDataUnits", &l, &r, &err) == ORR_OK && r->n_units == 5 &&
                  r->units[0]->bucket_ms == T0 + 3 * HOUR_MS && r->units[4]->bucket_ms == T0 &&
                  r->units[4]->records == 31,
              "list all units newest first (%zu)", r ? r->n_units : 0);
    if (r)
        FREE(r);
    l.interface = "click";
    l.from_ms = T0 + HOUR_MS;
    l.to_ms = T0 + 3 * HOUR_MS;
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListDataUnits", &l, &r, &err) == ORR_OK && r->n_units == 2 &&
                  r->units[0]->bucket_ms == T0 + 2 * HOUR_MS &&
                  r->units[1]->bucket_ms == T0 + HOUR_MS,
              "interface and time range (%zu)", r ? r->n_units : 0);
    if (r)
        FREE(r);
    l.from_ms = l.to_ms = 0;
    l.reconciled_only = 1;
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListDataUnits", &l, &r, &err) == ORR_OK && r->n_units == 2 &&
                  r->units[0]->bucket_ms == T0 + 2 * HOUR_MS && r->units[1]->bucket_ms == T0,
              "reconciled only (%zu)", r ? r->n_units : 0);
    if (r)
        FREE(r);
    l.reconciled_only = 0;
    l.interface = "";
    l.limit = 2;
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListDataUnits", &l, &r, &err) == ORR_OK && r->n_units == 2 &&
                  r->units[0]->bucket_ms == T0 + 3 * HOUR_MS,
              "limit 2");
    if (r)
        FREE(r);
    l.limit = 5001; /* clamped, not refused */
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListDataUnits", &l, &r, &err) == ORR_OK, "limit too large");
    if (r)
        FREE(r);
    l.limit = -1;
    HLT_CHECK(hlt_call(cl, "ListDataUnits", &l, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "limit") == 0,
              "negative limit");
    l.limit = 0;
    l.stream = "";
    HLT_CHECK(hlt_call(cl, "ListDataUnits", &l, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "stream") == 0,
              "stream is required");

    /* Reconciled events: the applied ones only (not the stale report). */
    char pl[8][512];
    int n = events_of("data_unit.reconciled", 8, pl);
    HLT_CHECK(n == 2, "2 data_unit.reconciled events (got %d)", n);
    if (n >= 1)
        HLT_CHECK(strstr(pl[0], "\"stream\": \"web\"") && strstr(pl[0], "\"business\": \"shop\"") &&
                      strstr(pl[0], "\"interface\": \"click\"") &&
                      strstr(pl[0], "\"records\": 31") && strstr(pl[0], "\"check_version\": 4") &&
                      strstr(pl[0], "\"bucket_ms\": 1700000000000"),
                  "reconciled payload: %s", pl[0]);
}

/* ---------------------------------------------------------------- lineage */

static int64_t task_id, other_task, inst[3], other_inst;

static orr_status add_edges(const char *const (*e)[4], const int64_t *tasks, size_t n, int *added)
{
    Edge es[16], *ptr[16];
    for (size_t i = 0; i < n; i++) {
        orrery__halley__v1__lineage_edge__init(&es[i]);
        es[i].source_kind = (char *)e[i][0];
        es[i].source_name = (char *)e[i][1];
        es[i].target_kind = (char *)e[i][2];
        es[i].target_name = (char *)e[i][3];
        es[i].task_id = tasks ? tasks[i] : 0;
        ptr[i] = &es[i];
    }
    Orrery__Halley__V1__AddLineageRequest rq = ORRERY__HALLEY__V1__ADD_LINEAGE_REQUEST__INIT;
    rq.edges = ptr;
    rq.n_edges = n;
    Orrery__Halley__V1__AddLineageResponse *r = NULL;
    orr_status s = hlt_call(cl, "AddLineage", &rq, &r, &err);
    *added = r ? r->added : -1;
    if (r)
        FREE(r);
    return s;
}

/* Edges within depth of kind:name as "src>dst" joined by spaces, sorted as returned. */
static orr_status lineage(const char *kind, const char *name, int depth, char *out, size_t n)
{
    Orrery__Halley__V1__ListLineageRequest rq = ORRERY__HALLEY__V1__LIST_LINEAGE_REQUEST__INIT;
    rq.kind = (char *)kind;
    rq.name = (char *)name;
    rq.depth = depth;
    Orrery__Halley__V1__ListLineageResponse *r = NULL;
    out[0] = 0;
    orr_status s = hlt_call(cl, "ListLineage", &rq, &r, &err);
    for (size_t i = 0; r && i < r->n_edges; i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s>%s", i ? " " : "", r->edges[i]->source_name,
                 r->edges[i]->target_name);
    }
    if (r)
        FREE(r);
    return s;
}

static void test_lineage(void)
{
    /* f1 -> raw -> clean -> mart -> report, the middle hop moved by the task. */
    const char *const chain[4][4] = {{"file", "f1", "table", "raw"},
                                     {"table", "raw", "table", "clean"},
                                     {"table", "clean", "table", "mart"},
                                     {"table", "mart", "table", "report"}};
    int64_t tasks[4] = {0, task_id, 0, 0};
    int added = 0;
    HLT_CHECK(add_edges(chain, tasks, 4, &added) == ORR_OK && added == 4, "4 edges added: %s",
              err.msg);
    HLT_CHECK(add_edges(chain, tasks, 4, &added) == ORR_OK && added == 0, "again: none added (%d)",
              added);
    /* A batch with one new edge, given twice, and one known edge. */
    const char *const more[3][4] = {{"table", "report", "table", "raw"},
                                    {"table", "report", "table", "raw"},
                                    {"file", "f1", "table", "raw"}};
    HLT_CHECK(add_edges(more, NULL, 3, &added) == ORR_OK && added == 1,
              "one new edge (a cycle back to raw): %d", added);

    char got[1024];
    HLT_CHECK(lineage("table", "clean", 0, got, sizeof got) == ORR_OK &&
                  strcmp(got, "raw>clean clean>mart") == 0,
              "depth 0 = 1: %s", got);
    HLT_CHECK(lineage("table", "clean", 2, got, sizeof got) == ORR_OK &&
                  strcmp(got, "f1>raw raw>clean clean>mart mart>report report>raw") == 0,
              "depth 2: %s", got);
    HLT_CHECK(lineage("file", "f1", 1, got, sizeof got) == ORR_OK && strcmp(got, "f1>raw") == 0,
              "f1 depth 1: %s", got);
    HLT_CHECK(lineage("file", "f1", 2, got, sizeof got) == ORR_OK &&
                  strcmp(got, "f1>raw raw>clean") == 0,
              "f1 depth 2: %s", got);
    HLT_CHECK(lineage("file", "f1", 10, got, sizeof got) == ORR_OK &&
                  strcmp(got, "f1>raw raw>clean clean>mart mart>report report>raw") == 0,
              "depth 10 over the cycle ends: %s", got);
    HLT_CHECK(lineage("table", "nowhere", 3, got, sizeof got) == ORR_OK && got[0] == 0,
              "unknown node: no edges");
    HLT_CHECK(lineage("table", "clean", 11, got, sizeof got) == ORR_EINVAL &&
                  strcmp(err.field, "depth") == 0,
              "depth 11 refused");
    HLT_CHECK(lineage("view", "clean", 1, got, sizeof got) == ORR_EINVAL &&
                  strcmp(err.field, "kind") == 0,
              "bad kind refused");

    const char *const bad[2][4] = {{"table", "a", "table", "b"}, {"table", "b", "table", "c"}};
    int64_t bad_tasks[2] = {0, 987654};
    HLT_CHECK(add_edges(bad, bad_tasks, 2, &added) == ORR_ENOTFOUND &&
                  strcmp(err.field, "edges[1].task_id") == 0,
              "unknown task (%s: %s)", err.field, err.msg);
    const char *const badkind[1][4] = {{"view", "a", "table", "b"}};
    HLT_CHECK(add_edges(badkind, NULL, 1, &added) == ORR_EINVAL &&
                  strcmp(err.field, "edges[0].source_kind") == 0,
              "bad kind (%s)", err.field);
    const char *const loop[1][4] = {{"table", "a", "table", "a"}};
    HLT_CHECK(add_edges(loop, NULL, 1, &added) == ORR_EINVAL &&
                  strncmp(err.field, "edges[0].", 9) == 0,
              "self edge (%s)", err.field);
    HLT_CHECK(add_edges(loop, NULL, 0, &added) == ORR_EINVAL && strcmp(err.field, "edges") == 0,
              "no edges (%s)", err.field);
    HLT_CHECK(sql_count("SELECT count(*) FROM lineage_edges WHERE origin = 'api'") == 5,
              "5 edges stored");
}

/* ------------------------------------------------------------------ setup */

static int64_t make_task(const char *name)
{
    char spec[1024];
    hlt_shell_spec(spec, sizeof spec, name, "ops", NULL);
    Orrery__Halley__V1__CreateTaskRequest rq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
    rq.spec_json = spec;
    rq.actor = "user:ann";
    Orrery__Halley__V1__Task *t = NULL;
    HLT_CHECK(hlt_call(cl, "CreateTask", &rq, &t, &err) == ORR_OK, "task %s: %s", name, err.msg);
    int64_t id = t ? t->id : 0;
    if (t)
        FREE(t);
    return id;
}

static int64_t make_instance(int64_t task, int64_t at)
{
    Orrery__Halley__V1__CreateInstance ci = ORRERY__HALLEY__V1__CREATE_INSTANCE__INIT;
    Orrery__Halley__V1__CreateInstance *cis[1] = {&ci};
    ci.task_id = task;
    ci.schedule_time_ms = at;
    ci.actor = "test";
    Orrery__Halley__V1__CreateInstancesRequest rq =
        ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
    rq.instances = cis;
    rq.n_instances = 1;
    Orrery__Halley__V1__CreateInstancesResponse *r = NULL;
    int64_t id = 0;
    if (hlt_call(cl, "CreateInstances", &rq, &r, &err) == ORR_OK && r->results[0]->instance)
        id = r->results[0]->instance->id;
    HLT_CHECK(id > 0, "instance created: %s", err.msg);
    if (r)
        FREE(r);
    return id;
}

static void setup_tasks(void)
{
    Orrery__Halley__V1__CreateTeamRequest tr = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
    tr.name = "ops";
    Orrery__Halley__V1__Team *t = NULL;
    HLT_CHECK(hlt_call(cl, "CreateTeam", &tr, &t, &err) == ORR_OK, "team: %s", err.msg);
    if (t)
        FREE(t);
    task_id = make_task("load_orders");
    other_task = make_task("load_users");
    for (int i = 0; i < 3; i++)
        inst[i] = make_instance(task_id, T0 + i * HOUR_MS);
    other_inst = make_instance(other_task, T0);
}

/* ------------------------------------------------- lineage from specs */

static int64_t save_spec(int64_t id, const char *spec)
{
    Orrery__Halley__V1__Task *t = NULL;
    orr_status st;
    if (id) {
        Orrery__Halley__V1__UpdateTaskRequest rq = ORRERY__HALLEY__V1__UPDATE_TASK_REQUEST__INIT;
        rq.id = id;
        rq.spec_json = (char *)spec;
        rq.actor = "user:ann";
        st = hlt_call(cl, "UpdateTask", &rq, &t, &err);
    } else {
        Orrery__Halley__V1__CreateTaskRequest rq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
        rq.spec_json = (char *)spec;
        rq.actor = "user:ann";
        st = hlt_call(cl, "CreateTask", &rq, &t, &err);
    }
    HLT_CHECK(st == ORR_OK, "save %s: %s", spec, err.msg);
    int64_t out = t ? t->id : 0;
    if (t)
        FREE(t);
    return out;
}

static void put_ds(const char *name, const char *kind, const char *params)
{
    Orrery__Halley__V1__PutDataSourceRequest rq = ORRERY__HALLEY__V1__PUT_DATA_SOURCE_REQUEST__INIT;
    rq.name = (char *)name;
    rq.kind = (char *)kind;
    rq.params_json = (char *)params;
    rq.actor = "user:ann";
    ProtobufCMessage *r = NULL;
    HLT_CHECK(hlt_call(cl, "PutDataSource", &rq, &r, &err) == ORR_OK, "data source %s: %s", name,
              err.msg);
    if (r)
        FREE(r);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Like lineage() (with columns: around a table's columns), each edge as
 * "src>dst", with "[origins]detail" when verbose; sorted. */
static orr_status lineage2(const char *kind, const char *name, int depth, int columns, int verbose,
                           char *out, size_t n)
{
    Orrery__Halley__V1__ListLineageRequest rq = ORRERY__HALLEY__V1__LIST_LINEAGE_REQUEST__INIT;
    rq.kind = (char *)kind;
    rq.name = (char *)name;
    rq.depth = depth;
    rq.columns = columns;
    Orrery__Halley__V1__ListLineageResponse *r = NULL;
    out[0] = 0;
    orr_status s = hlt_call(cl, "ListLineage", &rq, &r, &err);
    size_t ne = r ? r->n_edges : 0;
    char **lines = calloc(ne ? ne : 1, sizeof *lines);
    for (size_t i = 0; i < ne; i++) {
        const Edge *e = r->edges[i];
        lines[i] = malloc(1024);
        if (verbose)
            snprintf(lines[i], 1024, "%s>%s[%s%s%s]%s", e->source_name, e->target_name,
                     e->n_origins ? e->origins[0] : "", e->n_origins > 1 ? "," : "",
                     e->n_origins > 1 ? e->origins[1] : "", e->detail_json);
        else
            snprintf(lines[i], 1024, "%s>%s", e->source_name, e->target_name);
    }
    qsort(lines, ne, sizeof *lines, cmp_str);
    for (size_t i = 0; i < ne; i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", i ? " " : "", lines[i]);
        free(lines[i]);
    }
    free(lines);
    if (r)
        FREE(r);
    return s;
}

static void set_active(int64_t id, int active)
{
    ProtobufCMessage *r = NULL;
    orr_status s;
    if (active) {
        Orrery__Halley__V1__ReactivateTaskRequest rq =
            ORRERY__HALLEY__V1__REACTIVATE_TASK_REQUEST__INIT;
        rq.id = id;
        rq.actor = "user:ann";
        s = hlt_call(cl, "ReactivateTask", &rq, &r, &err);
    } else {
        Orrery__Halley__V1__DeactivateTaskRequest rq =
            ORRERY__HALLEY__V1__DEACTIVATE_TASK_REQUEST__INIT;
        rq.id = id;
        rq.actor = "user:ann";
        s = hlt_call(cl, "DeactivateTask", &rq, &r, &err);
    }
    HLT_CHECK(s == ORR_OK, "task %lld active=%d: %s", (long long)id, active, err.msg);
    if (r)
        FREE(r);
}

#define LIN_A_CONFIG(table)                                                                        \
    "{\"reader\":{\"type\":\"postgres\",\"datasource\":\"pg1\",\"table\":\"t1\"},"                 \
    "\"writers\":[{\"type\":\"postgres\",\"datasource\":\"pg1\",\"table\":\"" table "\","          \
    "\"mapping\":[{\"target\":\"id\",\"source\":\"id\"},"                                          \
    "{\"target\":\"amt\",\"source\":\"amount\",\"cast\":\"numeric\"},"                             \
    "{\"target\":\"src\",\"constant\":\"shop\"}]}]}"

static void test_spec_lineage(void)
{
    put_ds("pg1", "postgresql", "{\"host\":\"h\",\"dbname\":\"wh\"}");
    put_ds("my1", "mysql", "{\"host\":\"h\",\"user\":\"u\",\"database\":\"shop\"}");
    int64_t a = save_spec(0, "{\"name\":\"lin_a\",\"team\":\"ops\",\"type\":\"transfer\","
                             "\"config\":" LIN_A_CONFIG("dw.t2") "}");
    int64_t b = save_spec(
        0, "{\"name\":\"lin_b\",\"team\":\"ops\",\"type\":\"transfer\","
           "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"lin_a\"}],"
           "\"config\":{\"reader\":{\"type\":\"postgres\",\"datasource\":\"pg1\",\"table\":"
           "\"dw.t2\",\"columns\":[\"id\",\"amt\"]},\"writers\":[{\"type\":\"mysql\","
           "\"datasource\":\"my1\",\"table\":\"t3\",\"columns\":[\"k\",\"v\"]}]}}");
    char got[4096];
    HLT_CHECK(lineage2("table", "pg1.dw.t2", 1, 0, 0, got, sizeof got) == ORR_OK &&
                  strcmp(got, "lin_a>lin_b pg1.dw.t2>my1.shop.t3 pg1.public.t1>pg1.dw.t2") == 0,
              "saved: table edges of both tasks and their dependency: %s", got);
    HLT_CHECK(lineage2("table", "pg1.dw.t2", 1, 1, 1, got, sizeof got) == ORR_OK &&
                  strcmp(got, "pg1.dw.t2.amt>my1.shop.t3.v[save] "
                              "pg1.dw.t2.id>my1.shop.t3.k[save] "
                              "pg1.public.t1.amount>pg1.dw.t2.amt[save]{\"cast\": \"numeric\"} "
                              "pg1.public.t1.id>pg1.dw.t2.id[save]") == 0,
              "column edges from the mapping (with its cast) and by position: %s", got);
    HLT_CHECK(lineage2("column", "my1.shop.t3.v", 2, 0, 0, got, sizeof got) == ORR_OK &&
                  strcmp(got, "pg1.dw.t2.amt>my1.shop.t3.v pg1.public.t1.amount>pg1.dw.t2.amt") ==
                      0,
              "a column's path over two hops: %s", got);
    HLT_CHECK(lineage2("table", "pg1.public.t1", 1, 0, 1, got, sizeof got) == ORR_OK &&
                  strstr(got, "\"constants\": [{\"target\": \"src\", \"constant\": \"shop\"}]"),
              "the constant noted on the table edge: %s", got);
    HLT_CHECK(lineage2("task", "lin_b", 1, 0, 0, got, sizeof got) == ORR_OK &&
                  strcmp(got, "lin_a>lin_b pg1.dw.t2>my1.shop.t3 pg1.public.t1>pg1.dw.t2") == 0,
              "from a task: its dependency and what the tasks reached move: %s", got);

    /* A resave replaces the task's save-time edges. */
    save_spec(a, "{\"name\":\"lin_a\",\"team\":\"ops\",\"type\":\"transfer\","
                 "\"config\":" LIN_A_CONFIG("dw.t9") "}");
    HLT_CHECK(lineage2("table", "pg1.public.t1", 1, 0, 0, got, sizeof got) == ORR_OK &&
                  strcmp(got, "pg1.public.t1>pg1.dw.t9") == 0,
              "resaved: t1 now goes to t9 only: %s", got);
    HLT_CHECK(sql_count("SELECT count(*) FROM lineage_edges l JOIN tasks t ON t.id = l.task_id"
                        " WHERE t.name = 'lin_a' AND l.origin = 'save'") == 3,
              "lin_a keeps 3 save edges (a table, two columns)");

    /* A run of the old version reports what it moved. */
    int64_t in = make_instance(a, T0);
    Orrery__Halley__V1__ReportRunLineageRequest rr =
        ORRERY__HALLEY__V1__REPORT_RUN_LINEAGE_REQUEST__INIT;
    rr.instance_id = in;
    rr.config_json = LIN_A_CONFIG("dw.t2");
    Orrery__Halley__V1__ReportRunLineageResponse *rs = NULL;
    HLT_CHECK(hlt_call(cl, "ReportRunLineage", &rr, &rs, &err) == ORR_OK && rs->edges == 3,
              "run lineage reported: %s (%d)", err.msg, rs ? rs->edges : -1);
    if (rs)
        FREE(rs);
    HLT_CHECK(lineage2("table", "pg1.public.t1", 1, 0, 1, got, sizeof got) == ORR_OK &&
                  strstr(got, "pg1.public.t1>pg1.dw.t9[save]") &&
                  strstr(got, "pg1.public.t1>pg1.dw.t2[run]"),
              "the run's edge shows beside the saved one: %s", got);
    save_spec(a, "{\"name\":\"lin_a\",\"team\":\"ops\",\"type\":\"transfer\","
                 "\"config\":" LIN_A_CONFIG("dw.t2") "}");
    HLT_CHECK(lineage2("table", "pg1.public.t1", 1, 0, 1, got, sizeof got) == ORR_OK &&
                  strstr(got, "pg1.public.t1>pg1.dw.t2[run,save]") && !strstr(got, "t9"),
              "one edge saved and run: origins folded: %s", got);
    rr.instance_id = 987654321;
    rs = NULL;
    HLT_CHECK(hlt_call(cl, "ReportRunLineage", &rr, &rs, &err) == ORR_ENOTFOUND &&
                  strcmp(err.field, "instance_id") == 0,
              "run lineage of an unknown instance: %s", err.field);
    rr.instance_id = in;
    rr.config_json = "[1]";
    HLT_CHECK(hlt_call(cl, "ReportRunLineage", &rr, &rs, &err) == ORR_EINVAL &&
                  strcmp(err.field, "config_json") == 0,
              "run lineage of a config that is no object: %s", err.field);

    /* An inactive task's edges are hidden, and come back. */
    set_active(b, 0);
    HLT_CHECK(lineage2("table", "pg1.dw.t2", 1, 0, 0, got, sizeof got) == ORR_OK &&
                  strcmp(got, "pg1.public.t1>pg1.dw.t2") == 0,
              "lin_b inactive: its edges hidden: %s", got);
    set_active(b, 1);
    HLT_CHECK(lineage2("table", "pg1.dw.t2", 1, 0, 0, got, sizeof got) == ORR_OK &&
                  strcmp(got, "lin_a>lin_b pg1.dw.t2>my1.shop.t3 pg1.public.t1>pg1.dw.t2") == 0,
              "lin_b reactivated: back: %s", got);
    HLT_CHECK(lineage2("task", "lin_b", 1, 1, 0, got, sizeof got) == ORR_EINVAL &&
                  strcmp(err.field, "columns") == 0,
              "columns of a task refused (%s)", err.field);

    /* A stream's edges: its folder, data units, sink table. */
    Stream *st = NULL;
    HLT_CHECK(put_stream("clicks",
                         "{\"name\":\"clicks\",\"business\":\"web\",\"source\":{\"type\":\"file\","
                         "\"path\":\"/in/clicks\"},\"format\":{\"type\":\"jsonl\"},"
                         "\"interface\":{\"const\":\"click\"},\"time\":{\"field\":\"ts\","
                         "\"format\":\"epoch_ms\"},\"bucket\":\"hour\",\"sinks\":{\"postgres\":"
                         "{\"dsn\":\"postgresql://u@h/ev\",\"table\":\"clicks\",\"columns\":"
                         "[\"ts\"]}}}",
                         1, &st) == ORR_OK,
              "stream clicks: %s", err.msg);
    if (st)
        FREE(st);
    HLT_CHECK(lineage2("stream", "clicks", 1, 0, 0, got, sizeof got) == ORR_OK &&
                  strcmp(got, "/in/clicks>clicks clicks>clicks/web/click "
                              "clicks>ev.public.clicks") == 0,
              "stream edges: %s", got);

    /* Completion. */
    Orrery__Halley__V1__SuggestLineageNodesRequest sq =
        ORRERY__HALLEY__V1__SUGGEST_LINEAGE_NODES_REQUEST__INIT;
    sq.q = "T3";
    sq.kind = "";
    Orrery__Halley__V1__SuggestLineageNodesResponse *sr = NULL;
    HLT_CHECK(hlt_call(cl, "SuggestLineageNodes", &sq, &sr, &err) == ORR_OK && sr->n_nodes == 3 &&
                  strcmp(sr->nodes[0]->kind, "table") == 0 &&
                  strcmp(sr->nodes[0]->name, "my1.shop.t3") == 0,
              "completion of t3: the table first, then its columns (%zu)", sr ? sr->n_nodes : 0);
    if (sr)
        FREE(sr);
    sq.q = "lin_";
    sq.kind = "task";
    sr = NULL;
    HLT_CHECK(hlt_call(cl, "SuggestLineageNodes", &sq, &sr, &err) == ORR_OK && sr->n_nodes == 2 &&
                  strcmp(sr->nodes[0]->name, "lin_a") == 0,
              "completion of tasks (%zu)", sr ? sr->n_nodes : 0);
    if (sr)
        FREE(sr);
    sq.kind = "view";
    HLT_CHECK(hlt_call(cl, "SuggestLineageNodes", &sq, &sr, &err) == ORR_EINVAL &&
                  strcmp(err.field, "kind") == 0,
              "completion of a bad kind (%s)", err.field);
    sq.kind = "";
    sq.q = "";
    HLT_CHECK(hlt_call(cl, "SuggestLineageNodes", &sq, &sr, &err) == ORR_EINVAL &&
                  strcmp(err.field, "q") == 0,
              "completion without text (%s)", err.field);
}

/* ---------------------------------------------------------- process stats */

static orr_status record(int64_t instance, int attempt, const char *const *keys, const double *vals,
                         size_t n)
{
    Orrery__Halley__V1__ProcessStat st[8], *ptr[8];
    for (size_t i = 0; i < n; i++) {
        orrery__halley__v1__process_stat__init(&st[i]);
        st[i].key = (char *)keys[i];
        st[i].value = vals[i];
        ptr[i] = &st[i];
    }
    Orrery__Halley__V1__RecordProcessStatsRequest rq =
        ORRERY__HALLEY__V1__RECORD_PROCESS_STATS_REQUEST__INIT;
    rq.instance_id = instance;
    rq.attempt = attempt;
    rq.stats = ptr;
    rq.n_stats = n;
    Orrery__Halley__V1__RecordProcessStatsResponse *r = NULL;
    orr_status s = hlt_call(cl, "RecordProcessStats", &rq, &r, &err);
    if (s == ORR_OK)
        HLT_CHECK(r->recorded == (int)n, "recorded %d of %zu", r->recorded, n);
    if (r)
        FREE(r);
    return s;
}

static void test_stats(void)
{
    const char *keys[3] = {"rows_read", "rows_written", "seconds"};
    double v1[3] = {1000, 990, 12.5};
    HLT_CHECK(record(inst[0], 0, keys, v1, 3) == ORR_OK, "record on current attempt: %s", err.msg);
    double v2[2] = {1001, 0.125};
    const char *k2[2] = {"rows_read", "dirty_rows"};
    HLT_CHECK(record(inst[0], 1, k2, v2, 2) == ORR_OK, "upsert attempt 1: %s", err.msg);
    double v3[1] = {5};
    HLT_CHECK(record(inst[1], 0, keys, v3, 1) == ORR_OK, "stats of inst 1");
    HLT_CHECK(record(inst[2], 0, keys, v3, 1) == ORR_OK, "stats of inst 2");

    Orrery__Halley__V1__ListProcessStatsRequest l =
        ORRERY__HALLEY__V1__LIST_PROCESS_STATS_REQUEST__INIT;
    Orrery__Halley__V1__ListProcessStatsResponse *r = NULL;
    l.instance_id = inst[0];
    HLT_CHECK(hlt_call(cl, "ListProcessStats", &l, &r, &err) == ORR_OK && r->n_stats == 4,
              "4 stats of inst 0 (%zu)", r ? r->n_stats : 0);
    if (r && r->n_stats == 4) {
        /* attempt, key order: dirty_rows, rows_read, rows_written, seconds */
        HLT_CHECK(strcmp(r->stats[0]->key, "dirty_rows") == 0 && r->stats[0]->value == 0.125 &&
                      strcmp(r->stats[1]->key, "rows_read") == 0 && r->stats[1]->value == 1001 &&
                      r->stats[3]->value == 12.5 && r->stats[0]->attempt == 1 &&
                      r->stats[0]->instance_id == inst[0] && r->stats[0]->recorded_at_ms > 0,
                  "values upserted exactly");
    }
    if (r)
        FREE(r);
    l.instance_id = 0;
    l.task_id = task_id;
    l.limit = 2;
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListProcessStats", &l, &r, &err) == ORR_OK && r->n_stats == 2 &&
                  r->stats[0]->instance_id == inst[2] && r->stats[1]->instance_id == inst[1],
              "by task: the 2 newest instances (%zu)", r ? r->n_stats : 0);
    if (r)
        FREE(r);
    l.limit = 0;
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListProcessStats", &l, &r, &err) == ORR_OK && r->n_stats == 6,
              "by task, default limit (%zu)", r ? r->n_stats : 0);
    if (r)
        FREE(r);
    l.task_id = other_task;
    r = NULL;
    HLT_CHECK(hlt_call(cl, "ListProcessStats", &l, &r, &err) == ORR_OK && r->n_stats == 0,
              "a task without stats");
    if (r)
        FREE(r);
    l.task_id = 999999;
    HLT_CHECK(hlt_call(cl, "ListProcessStats", &l, &r, &err) == ORR_ENOTFOUND &&
                  strcmp(err.field, "task_id") == 0,
              "unknown task");
    l.task_id = task_id;
    l.instance_id = inst[0];
    HLT_CHECK(hlt_call(cl, "ListProcessStats", &l, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "instance_id") == 0,
              "both instance and task");
    l.instance_id = 0;
    l.limit = -1;
    HLT_CHECK(hlt_call(cl, "ListProcessStats", &l, &r, &err) == ORR_EINVAL &&
                  strcmp(err.field, "limit") == 0,
              "negative limit");

    /* Refusals. */
    const char *nk[2] = {"rows_read", "seconds"};
    double nan_v[2] = {1, NAN};
    HLT_CHECK(record(inst[0], 0, nk, nan_v, 2) == ORR_EINVAL &&
                  strcmp(err.field, "stats[1].value") == 0,
              "NaN refused (%s)", err.field);
    double inf_v[1] = {INFINITY};
    HLT_CHECK(record(inst[0], 0, nk, inf_v, 1) == ORR_EINVAL &&
                  strcmp(err.field, "stats[0].value") == 0,
              "inf refused (%s)", err.field);
    const char *bk[1] = {"Rows-Read"};
    HLT_CHECK(record(inst[0], 0, bk, v3, 1) == ORR_EINVAL && strcmp(err.field, "stats[0].key") == 0,
              "bad key (%s)", err.field);
    const char *dup[2] = {"seconds", "seconds"};
    HLT_CHECK(record(inst[0], 0, dup, v1, 2) == ORR_EINVAL &&
                  strcmp(err.field, "stats[1].key") == 0,
              "duplicate key (%s)", err.field);
    HLT_CHECK(record(999999, 0, keys, v1, 1) == ORR_ENOTFOUND &&
                  strcmp(err.field, "instance_id") == 0,
              "unknown instance (%s)", err.field);
    HLT_CHECK(record(inst[0], 2, keys, v1, 1) == ORR_EINVAL && strcmp(err.field, "attempt") == 0,
              "attempt not reached yet (%s)", err.field);
    HLT_CHECK(record(inst[0], 0, keys, v1, 0) == ORR_EINVAL && strcmp(err.field, "stats") == 0,
              "no stats (%s)", err.field);
    HLT_CHECK(sql_count("SELECT count(*) FROM process_stats") == 6, "6 rows stored");

    char pl[8][512];
    int n = events_of("instance.stats", 8, pl);
    HLT_CHECK(n == 4, "4 instance.stats events (got %d)", n);
    if (n >= 1)
        HLT_CHECK(strstr(pl[0], "\"attempt\": 1") && strstr(pl[0], "\"seconds\": 12.5"),
                  "instance.stats payload: %s", pl[0]);
}

/* ------------------------------------------------------------- watermarks */

static orr_status put_wm(int64_t task, const char *expected, const char *value, int64_t instance,
                         Watermark **out)
{
    Orrery__Halley__V1__PutWatermarkRequest rq = ORRERY__HALLEY__V1__PUT_WATERMARK_REQUEST__INIT;
    rq.task_id = task;
    rq.name = "public.orders.updated_at";
    rq.expected = (char *)expected;
    rq.value = (char *)value;
    rq.instance_id = instance;
    *out = NULL;
    return hlt_call(cl, "PutWatermark", &rq, out, &err);
}

typedef struct race_arg {
    const hlt_server *srv;
    int n;
    orr_status got;
} race_arg;

static void *race(void *p)
{
    race_arg *ra = p;
    orr_rpc_client *c = hlt_client(ra->srv, NULL);
    Orrery__Halley__V1__PutWatermarkRequest rq = ORRERY__HALLEY__V1__PUT_WATERMARK_REQUEST__INIT;
    char value[32];
    snprintf(value, sizeof value, "race-%d", ra->n);
    rq.task_id = task_id;
    rq.name = "public.orders.updated_at";
    rq.expected = "2024-01-02";
    rq.value = value;
    Watermark *w = NULL;
    orr_err e;
    ra->got = hlt_call(c, "PutWatermark", &rq, &w, &e);
    if (w)
        FREE(w);
    orr_rpc_client_destroy(c);
    return NULL;
}

static void test_watermarks(void)
{
    Orrery__Halley__V1__GetWatermarkRequest g = ORRERY__HALLEY__V1__GET_WATERMARK_REQUEST__INIT;
    g.task_id = task_id;
    g.name = "public.orders.updated_at";
    Watermark *w = NULL;
    HLT_CHECK(hlt_call(cl, "GetWatermark", &g, &w, &err) == ORR_OK && w->value[0] == 0 &&
                  w->task_id == task_id && w->instance_id == 0,
              "none saved yet: %s", err.msg);
    if (w)
        FREE(w);
    HLT_CHECK(put_wm(task_id, "", "2024-01-01", inst[0], &w) == ORR_OK &&
                  strcmp(w->value, "2024-01-01") == 0 && w->instance_id == inst[0] &&
                  w->updated_at_ms > 0,
              "first save: %s", err.msg);
    if (w)
        FREE(w);
    HLT_CHECK(put_wm(task_id, "", "2023-12-31", 0, &w) == ORR_ECONFLICT &&
                  strcmp(err.field, "expected") == 0 && strstr(err.msg, "2024-01-01"),
              "second first-save is ABORTED (%s: %s)", err.field, err.msg);
    HLT_CHECK(put_wm(task_id, "2024-01-01", "2024-01-02", inst[1], &w) == ORR_OK &&
                  strcmp(w->value, "2024-01-02") == 0 && w->instance_id == inst[1],
              "moved from the expected value: %s", err.msg);
    if (w)
        FREE(w);
    HLT_CHECK(put_wm(task_id, "2024-01-01", "2024-01-03", 0, &w) == ORR_ECONFLICT &&
                  strcmp(err.field, "expected") == 0,
              "stale expected is ABORTED");
    HLT_CHECK(put_wm(other_task, "x", "y", 0, &w) == ORR_ECONFLICT,
              "expected a value where none is stored is ABORTED");
    HLT_CHECK(put_wm(987654, "", "1", 0, &w) == ORR_ENOTFOUND && strcmp(err.field, "task_id") == 0,
              "unknown task (%s)", err.field);
    HLT_CHECK(put_wm(task_id, "2024-01-02", "1", other_inst, &w) == ORR_EINVAL &&
                  strcmp(err.field, "instance_id") == 0,
              "instance of another task (%s)", err.field);
    HLT_CHECK(put_wm(task_id, "2024-01-02", "1", 999999, &w) == ORR_ENOTFOUND &&
                  strcmp(err.field, "instance_id") == 0,
              "unknown instance (%s)", err.field);
    HLT_CHECK(put_wm(task_id, "2024-01-02", "", 0, &w) == ORR_EINVAL &&
                  strcmp(err.field, "value") == 0,
              "empty value (%s)", err.field);
    g.task_id = 987654;
    HLT_CHECK(hlt_call(cl, "GetWatermark", &g, &w, &err) == ORR_ENOTFOUND &&
                  strcmp(err.field, "task_id") == 0,
              "get of unknown task");
    g.task_id = task_id;
    g.name = "";
    HLT_CHECK(hlt_call(cl, "GetWatermark", &g, &w, &err) == ORR_EINVAL &&
                  strcmp(err.field, "name") == 0,
              "get without name");

    /* Eight writers race from the same expected value: exactly one wins. */
    pthread_t th[8];
    race_arg ra[8];
    for (int i = 0; i < 8; i++) {
        ra[i] = (race_arg){&srv, i, ORR_EINTERNAL};
        pthread_create(&th[i], NULL, race, &ra[i]);
    }
    int won = 0, aborted = 0, winner = -1;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        if (ra[i].got == ORR_OK)
            won++, winner = i;
        else if (ra[i].got == ORR_ECONFLICT)
            aborted++;
    }
    HLT_CHECK(won == 1 && aborted == 7, "one CAS wins, 7 ABORTED (%d, %d)", won, aborted);
    g.name = "public.orders.updated_at";
    w = NULL;
    char want[32];
    snprintf(want, sizeof want, "race-%d", winner);
    HLT_CHECK(hlt_call(cl, "GetWatermark", &g, &w, &err) == ORR_OK && strcmp(w->value, want) == 0,
              "stored value is the winner's (%s)", w ? w->value : "?");
    if (w)
        FREE(w);
}

int main(void)
{
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    if (hlt_start(&srv, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_data");
    }
    cl = hlt_client(&srv, NULL);
    test_streams();
    test_units();
    setup_tasks();
    test_lineage();
    test_spec_lineage();
    test_stats();
    test_watermarks();
    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&srv) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_data");
}
