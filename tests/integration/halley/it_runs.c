/*
 * it_runs.c - operators' runs in halleyd: RunNow (created with its flags in
 * the instance.created event, a waiting one released with an instance.run
 * event, a timeline row and an audit record; refused while running),
 * RerunInstances (the downstream set of a cycle through the cycle mapping,
 * a dry run that changes nothing, one transaction: a running member or a
 * member of another team refuses the whole set), and Backfill (a daily
 * downstream of an hourly task belongs to the latest hourly cycle that
 * reaches it; too many instances are refused with nothing written).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

typedef Orrery__Halley__V1__Instance Instance;

static orr_rpc_client *cl;
static hlt_db db;
static orr_err err;

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)
#define HOUR    3600000LL
#define T0      1767225600000LL /* 2026-01-01T00:00:00Z */

/* The first value of a one-row query, as a string in buf. */
static const char *sql1(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const char *sql1(char *buf, size_t n, const char *fmt, ...)
{
    char q[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q, sizeof q, fmt, ap);
    va_end(ap);
    PGresult *r = hlt_sql(&db, q);
    snprintf(buf, n, "%s", PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return buf;
}

static int64_t task(const char *name, const char *team, const char *extra)
{
    return hlt_save_task(cl, 0, name, team, extra, ORR_OK, NULL, &err);
}

static Orrery__Halley__V1__RunNowResponse *run_now(int64_t tid, int64_t ms, int ignore,
                                                   orr_status want)
{
    Orrery__Halley__V1__RunNowRequest rq = ORRERY__HALLEY__V1__RUN_NOW_REQUEST__INIT;
    rq.task_id = tid;
    rq.schedule_time_ms = ms;
    rq.ignore_upstreams = ignore;
    rq.actor = "user:ann";
    Orrery__Halley__V1__RunNowResponse *r = NULL;
    orr_status s = hlt_call(cl, "RunNow", &rq, &r, &err);
    HLT_CHECK(s == want, "RunNow: %s (%s)", orr_status_name(s), err.msg);
    return r;
}

static void test_run_now(void)
{
    char b[256];
    int64_t tid = task("rn_a", "ops", NULL);
    Orrery__Halley__V1__RunNowResponse *r = run_now(tid, T0 + 5 * HOUR, 0, ORR_OK);
    if (!r)
        return;
    int64_t id = r->instance->id;
    HLT_CHECK(r->created && r->instance->run_now && !r->instance->ignore_upstreams,
              "created with run_now");
    FREE(r);
    HLT_CHECK(strcmp(sql1(b, sizeof b,
                          "SELECT payload->>'run_now' FROM events WHERE kind = 'instance.created'"
                          " AND instance_id = %" PRId64,
                          id),
                     "true") == 0,
              "instance.created carries run_now (%s)", b);
    r = run_now(tid, T0 + 5 * HOUR, 1, ORR_OK);
    if (r) {
        HLT_CHECK(!r->created && r->instance->id == id && r->instance->ignore_upstreams,
                  "released with ignore_upstreams");
        FREE(r);
    }
    HLT_CHECK(strcmp(sql1(b, sizeof b,
                          "SELECT payload->>'ignore_upstreams' FROM events WHERE"
                          " kind = 'instance.run' AND instance_id = %" PRId64,
                          id),
                     "true") == 0,
              "instance.run event (%s)", b);
    HLT_CHECK(strcmp(sql1(b, sizeof b,
                          "SELECT count(*) FROM instance_transitions WHERE instance_id = %" PRId64
                          " AND actor = 'user:ann' AND reason LIKE 'run now%%'",
                          id),
                     "2") == 0,
              "two run-now rows in the timeline (%s)", b);
    HLT_CHECK(strcmp(sql1(b, sizeof b,
                          "SELECT count(*) FROM audit_log WHERE action = 'instance.run_now'"
                          " AND object = 'instance:%" PRId64 "'",
                          id),
                     "2") == 0,
              "two audit records (%s)", b);
    /* not a fire time; running; unknown task */
    run_now(tid, T0 + 5 * HOUR + 60000, 0, ORR_EINVAL);
    HLT_CHECK(strcmp(err.field, "schedule_time_ms") == 0, "field %s", err.field);
    PQclear(hlt_sql(&db, "UPDATE instances SET state = 'running' WHERE task_id = (SELECT id FROM"
                         " tasks WHERE name = 'rn_a')"));
    run_now(tid, T0 + 5 * HOUR, 0, ORR_ESTATE);
    HLT_CHECK(strstr(err.msg, "running") != NULL, "running named: %s", err.msg);
    run_now(999999, T0, 0, ORR_ENOTFOUND);
}

static Orrery__Halley__V1__RerunInstancesResponse *rerun(int64_t id, int scope, int dry,
                                                         const char *team, orr_status want)
{
    Orrery__Halley__V1__RerunInstancesRequest rq =
        ORRERY__HALLEY__V1__RERUN_INSTANCES_REQUEST__INIT;
    int64_t ids[1] = {id};
    char *teams[1] = {(char *)team};
    rq.n_instance_ids = 1;
    rq.instance_ids = ids;
    rq.scope = (Orrery__Halley__V1__RerunScope)scope;
    rq.dry_run = dry;
    rq.actor = "user:ann";
    if (team) {
        rq.restrict_teams = 1;
        rq.n_teams = 1;
        rq.teams = teams;
    }
    Orrery__Halley__V1__RerunInstancesResponse *r = NULL;
    orr_status s = hlt_call(cl, "RerunInstances", &rq, &r, &err);
    HLT_CHECK(s == want, "RerunInstances: %s (%s)", orr_status_name(s), err.msg);
    return r;
}

static void test_rerun(void)
{
    char b[256], before[256];
    int64_t a = task("rr_a", "ops", NULL);
    task("rr_b", "ops", "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"rr_a\"}]");
    task("rr_c", "ads",
         "\"upstreams\":[{\"kind\":\"weak\",\"task\":\"rr_b\"},{\"kind\":\"self\"}]");
    Orrery__Halley__V1__BackfillRequest bq = ORRERY__HALLEY__V1__BACKFILL_REQUEST__INIT;
    bq.task_id = a;
    bq.from_ms = T0;
    bq.to_ms = T0 + 2 * HOUR;
    bq.include_downstream = 1;
    bq.actor = "user:ann";
    Orrery__Halley__V1__BackfillResponse *br = NULL;
    HLT_CHECK(hlt_call(cl, "Backfill", &bq, &br, &err) == ORR_OK && br->n_created == 6,
              "backfill a, b, c over 2 hours: %s", err.msg);
    if (!br)
        return;
    FREE(br);
    PQclear(hlt_sql(&db, "UPDATE instances SET state = 'success' WHERE task_id IN (SELECT id FROM"
                         " tasks WHERE name LIKE 'rr_%')"));
    int64_t a0 = atoll(sql1(b, sizeof b,
                            "SELECT id FROM instances WHERE task_id = %" PRId64
                            " AND schedule_time = to_timestamp(%lld / 1000.0)",
                            a, T0));
    const char *q = "SELECT string_agg(state || attempt, ',' ORDER BY id) FROM instances";
    sql1(before, sizeof before, "%s", q);
    /* dry run: a0, b0, c0 (c's self edge does not reach c1), nothing changes */
    Orrery__Halley__V1__RerunInstancesResponse *r = rerun(a0, 1, 1, NULL, ORR_OK);
    if (r) {
        HLT_CHECK(r->n_members == 3 && r->rerun == 3, "three members (%zu)", r->n_members);
        for (size_t i = 0; i < r->n_members; i++)
            HLT_CHECK(r->members[i]->instance->schedule_time_ms == T0, "member %zu in cycle 0", i);
        FREE(r);
    }
    HLT_CHECK(strcmp(sql1(b, sizeof b, "%s", q), before) == 0, "dry run changed nothing");
    /* another team's member: refused whole */
    rerun(a0, 1, 0, "ops", ORR_EPERM);
    HLT_CHECK(strstr(err.msg, "ads") != NULL, "team named: %s", err.msg);
    HLT_CHECK(strcmp(sql1(b, sizeof b, "%s", q), before) == 0, "a refused set changed nothing");
    /* a running member: refused whole, naming it */
    PQclear(hlt_sql(&db, "UPDATE instances SET state = 'running' WHERE task_id = (SELECT id FROM"
                         " tasks WHERE name = 'rr_c') AND schedule_time = '2026-01-01T00:00Z'"));
    sql1(before, sizeof before, "%s", q);
    rerun(a0, 1, 0, NULL, ORR_ESTATE);
    HLT_CHECK(strcmp(err.field, "instance_ids") == 0 && strstr(err.msg, "rr_c") &&
                  strstr(err.msg, "running"),
              "running member named: %s %s", err.field, err.msg);
    HLT_CHECK(strcmp(sql1(b, sizeof b, "%s", q), before) == 0, "nothing half applied");
    /* a alone is fine */
    r = rerun(a0, 0, 0, NULL, ORR_OK);
    if (r) {
        HLT_CHECK(r->rerun == 1 && r->members[0]->instance->attempt == 2, "a0 rerun alone");
        FREE(r);
    }
    rerun(99999999, 1, 1, NULL, ORR_ENOTFOUND);
}

static void test_backfill(void)
{
    char b[256];
    int64_t h = task("bf_hourly", "ops", NULL);
    /* a daily task (hlt_shell_spec's schedule is hourly) */
    Orrery__Halley__V1__CreateTaskRequest cq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
    cq.spec_json = "{\"name\":\"bf_daily\",\"team\":\"ops\",\"type\":\"shell\","
                   "\"schedule\":\"0 0 * * *\",\"config\":{\"command\":\"true\"},"
                   "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"bf_hourly\"}]}";
    cq.actor = "user:ann";
    Orrery__Halley__V1__Task *dt = NULL;
    HLT_CHECK(hlt_call(cl, "CreateTask", &cq, &dt, &err) == ORR_OK, "daily task: %s", err.msg);
    if (dt)
        FREE(dt);
    Orrery__Halley__V1__BackfillRequest bq = ORRERY__HALLEY__V1__BACKFILL_REQUEST__INIT;
    bq.task_id = h;
    bq.from_ms = T0;
    bq.to_ms = T0 + 24 * HOUR;
    bq.include_downstream = 1;
    bq.max_cycles = 1;
    bq.actor = "user:ann";
    Orrery__Halley__V1__BackfillResponse *br = NULL;
    HLT_CHECK(hlt_call(cl, "Backfill", &bq, &br, &err) == ORR_OK, "backfill: %s", err.msg);
    if (br) {
        HLT_CHECK(br->fire_times == 24 && br->n_created == 25, "24 hours and one day (%zu)",
                  br->n_created);
        FREE(br);
    }
    HLT_CHECK(strcmp(sql1(b, sizeof b,
                          "SELECT to_char(backfill_cycle AT TIME ZONE 'UTC', 'HH24') || '/' ||"
                          " backfill_cycles FROM instances i JOIN tasks t ON t.id = i.task_id"
                          " WHERE t.name = 'bf_daily'"),
                     "23/1") == 0,
              "the day belongs to the last hour's cycle (%s)", b);
    /* too many: refused, nothing written */
    const char *nb = "SELECT count(*) FROM backfills";
    char before[64];
    sql1(before, sizeof before, "%s", nb);
    bq.to_ms = T0 + 1100 * HOUR;
    br = NULL;
    HLT_CHECK(hlt_call(cl, "Backfill", &bq, &br, &err) == ORR_EINVAL &&
                  strcmp(err.field, "to_ms") == 0,
              "over 1000 refused: %s %s", err.field, err.msg);
    HLT_CHECK(strcmp(sql1(b, sizeof b, "%s", nb), before) == 0, "nothing written");
}

int main(void)
{
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    hlt_server s;
    if (hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_runs");
    }
    cl = hlt_client(&s, NULL);
    hlt_team(cl, "ops");
    hlt_team(cl, "ads");
    test_run_now();
    test_rerun();
    test_backfill();
    HLT_CHECK(hlt_exit_code_drift(&db) == 0, "each instance's exit code is its attempt's");
    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_runs");
}
