/*
 * it_resources.c - halleyd's "why is it waiting" and resource-limit RPCs
 * end to end: PutBlockers / GetBlockers (newest evaluation wins, unknown
 * instances skipped, the holders of a named pool), UpdateExecutor (drain,
 * slots and labels overrides, audit and event), PutTeamQuota /
 * ListTeamQuotas, PutTypeLimits / ListTypeLimits and their hold on task
 * specs (a value above the maximum refused naming the field, a missing one
 * set to the default). Every RPC goes through its success path and its
 * refusals, checking the status and the field named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

static orr_rpc_client *cl;
static hlt_db db;
static orr_err err;

static void want(orr_status st, orr_status code, const char *field, const char *what)
{
    HLT_CHECK(st == code, "%s: got %s, want %s (%s: %s)", what, orr_status_name(st),
              orr_status_name(code), err.field, err.msg);
    if (field && st == code && code != ORR_OK)
        HLT_CHECK(strcmp(err.field, field) == 0, "%s: field \"%s\", want \"%s\" (%s)", what,
                  err.field, field, err.msg);
}

static orr_status call(const char *method, const void *req)
{
    ProtobufCMessage *r = NULL;
    orr_status st = hlt_call(cl, method, req, &r, &err);
    if (r)
        FREE(r);
    return st;
}

static long long sql_i64(const char *q)
{
    PGresult *r = hlt_sql(&db, q);
    long long v = PQntuples(r) > 0 ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return v;
}

static int64_t make_instance(int64_t task, int64_t ms)
{
    Orrery__Halley__V1__CreateInstance ci = ORRERY__HALLEY__V1__CREATE_INSTANCE__INIT;
    ci.task_id = task;
    ci.schedule_time_ms = ms;
    ci.actor = "test";
    Orrery__Halley__V1__CreateInstance *p[1] = {&ci};
    Orrery__Halley__V1__CreateInstancesRequest rq =
        ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
    rq.n_instances = 1;
    rq.instances = p;
    Orrery__Halley__V1__CreateInstancesResponse *r = NULL;
    int64_t id = 0;
    if (hlt_call(cl, "CreateInstances", &rq, &r, &err) == ORR_OK && r->n_results == 1 &&
        r->results[0]->instance)
        id = r->results[0]->instance->id;
    HLT_CHECK(id > 0, "instance created (%s)", err.msg);
    if (r)
        FREE(r);
    return id;
}

static orr_status put_blockers(int64_t id, const char *json, int64_t at)
{
    Orrery__Halley__V1__InstanceBlockers b = ORRERY__HALLEY__V1__INSTANCE_BLOCKERS__INIT;
    b.instance_id = id;
    b.attempt = 1;
    b.blockers_json = (char *)json;
    b.evaluated_at_ms = at;
    Orrery__Halley__V1__InstanceBlockers *p[1] = {&b};
    Orrery__Halley__V1__PutBlockersRequest rq = ORRERY__HALLEY__V1__PUT_BLOCKERS_REQUEST__INIT;
    rq.n_items = 1;
    rq.items = p;
    return call("PutBlockers", &rq);
}

static void test_blockers(int64_t task)
{
    int64_t i1 = make_instance(task, 1700000000000);
    int64_t i2 = make_instance(task, 1700003600000);
    /* nothing written yet: found = false */
    Orrery__Halley__V1__GetBlockersRequest g = ORRERY__HALLEY__V1__GET_BLOCKERS_REQUEST__INIT;
    g.instance_id = i1;
    Orrery__Halley__V1__GetBlockersResponse *r = NULL;
    want(hlt_call(cl, "GetBlockers", &g, &r, &err), ORR_OK, NULL, "GetBlockers before any");
    if (r) {
        HLT_CHECK(!r->found && r->state == 1, "nothing recorded, state waiting");
        FREE(r);
        r = NULL;
    }
    int64_t now = hlt_now_ms();
    want(put_blockers(i1, "[{\"kind\":\"pool\",\"pool\":\"p1\",\"tokens\":1}]", now), ORR_OK, NULL,
         "PutBlockers");
    /* an older evaluation does not replace a newer one */
    want(put_blockers(i1, "[{\"kind\":\"not_due\"}]", now - 1000), ORR_OK, NULL,
         "PutBlockers older");
    /* i2 holds p1 */
    PQclear(hlt_sql(&db, "INSERT INTO resource_pools (name, capacity) VALUES ('p1', 1)"));
    char q[256];
    snprintf(q, sizeof q,
             "UPDATE instances SET state = 'running', executor = 'e1' WHERE id = %lld;"
             " INSERT INTO pool_leases (pool, instance_id, tokens) VALUES ('p1', %lld, 1)",
             (long long)i2, (long long)i2);
    PQclear(hlt_sql(&db, q));
    want(hlt_call(cl, "GetBlockers", &g, &r, &err), ORR_OK, NULL, "GetBlockers");
    if (r) {
        HLT_CHECK(r->found && r->blockers && strstr(r->blockers->blockers_json, "\"p1\"") &&
                      r->blockers->evaluated_at_ms / 1000 == now / 1000,
                  "the newest list is kept (%s)", r->blockers ? r->blockers->blockers_json : "");
        HLT_CHECK(r->n_holders == 1 && r->holders[0]->instance_id == i2 &&
                      strcmp(r->holders[0]->pool, "p1") == 0 && r->holders[0]->state == 4,
                  "the pool's holder is named (%zu)", r->n_holders);
        FREE(r);
        r = NULL;
    }
    /* unknown instances are skipped, not refused */
    want(put_blockers(999999, "[]", now), ORR_OK, NULL, "PutBlockers unknown instance");
    HLT_CHECK(sql_i64("SELECT count(*) FROM instance_blockers WHERE instance_id = 999999") == 0,
              "no row for an unknown instance");
    /* refusals */
    want(put_blockers(i1, "{\"kind\":1}", now), ORR_EINVAL, "items[0].blockers_json",
         "PutBlockers not an array");
    want(put_blockers(i1, "[", now), ORR_EINVAL, "items[0].blockers_json", "PutBlockers bad JSON");
    want(put_blockers(0, "[]", now), ORR_EINVAL, "items[0].instance_id", "PutBlockers id 0");
    want(put_blockers(i1, "[]", 0), ORR_EINVAL, "items[0].evaluated_at_ms", "PutBlockers at 0");
    g.instance_id = 0;
    want(call("GetBlockers", &g), ORR_EINVAL, "instance_id", "GetBlockers id 0");
    g.instance_id = 999999;
    want(call("GetBlockers", &g), ORR_ENOTFOUND, "instance_id", "GetBlockers unknown");
}

static void test_executors(void)
{
    Orrery__Halley__V1__UpdateExecutorRequest rq =
        ORRERY__HALLEY__V1__UPDATE_EXECUTOR_REQUEST__INIT;
    rq.id = "ex-1";
    rq.actor = "user:ann";
    want(call("UpdateExecutor", &rq), ORR_EINVAL, "set_drained", "UpdateExecutor nothing");
    rq.set_drained = 1;
    rq.drained = 1;
    rq.set_slots = 1;
    rq.slots = 3;
    rq.set_labels = 1;
    rq.labels_json = "{\"zone\":\"b\"}";
    Orrery__Halley__V1__Executor *x = NULL;
    want(hlt_call(cl, "UpdateExecutor", &rq, &x, &err), ORR_OK, NULL, "UpdateExecutor");
    if (x) {
        HLT_CHECK(x->drained && x->has_slots_override && x->slots_override == 3 &&
                      strstr(x->labels_override_json, "zone"),
                  "settings stored");
        FREE(x);
        x = NULL;
    }
    HLT_CHECK(sql_i64("SELECT count(*) FROM events WHERE kind = 'executor.changed'") == 1,
              "one executor.changed event");
    HLT_CHECK(sql_i64("SELECT count(*) FROM audit_log WHERE action = 'executor.update'") == 1,
              "audited");
    /* only what is set changes: resume, keep the overrides; then clear them */
    Orrery__Halley__V1__UpdateExecutorRequest r2 =
        ORRERY__HALLEY__V1__UPDATE_EXECUTOR_REQUEST__INIT;
    r2.id = "ex-1";
    r2.set_drained = 1;
    r2.drained = 0;
    want(hlt_call(cl, "UpdateExecutor", &r2, &x, &err), ORR_OK, NULL, "UpdateExecutor resume");
    if (x) {
        HLT_CHECK(!x->drained && x->has_slots_override && x->slots_override == 3,
                  "resumed, slots kept");
        FREE(x);
        x = NULL;
    }
    r2.set_drained = 0;
    r2.set_slots = 1;
    r2.slots = -1;
    r2.set_labels = 1;
    r2.labels_json = "";
    want(hlt_call(cl, "UpdateExecutor", &r2, &x, &err), ORR_OK, NULL, "UpdateExecutor clear");
    if (x) {
        HLT_CHECK(!x->has_slots_override && !x->labels_override_json[0], "overrides cleared");
        FREE(x);
    }
    rq.id = "bad id";
    want(call("UpdateExecutor", &rq), ORR_EINVAL, "id", "UpdateExecutor bad id");
    rq.id = "ex-1";
    rq.slots = 100001;
    want(call("UpdateExecutor", &rq), ORR_EINVAL, "slots", "UpdateExecutor slots too many");
    rq.slots = 1;
    rq.labels_json = "{\"zone\":1}";
    want(call("UpdateExecutor", &rq), ORR_EINVAL, "labels_json.zone", "UpdateExecutor label");
}

static void test_quotas(void)
{
    Orrery__Halley__V1__PutTeamQuotaRequest rq = ORRERY__HALLEY__V1__PUT_TEAM_QUOTA_REQUEST__INIT;
    rq.team = "ops";
    rq.max_running = 2;
    rq.max_slots = 8;
    rq.actor = "user:ann";
    want(call("PutTeamQuota", &rq), ORR_OK, NULL, "PutTeamQuota");
    rq.max_running = 3;
    want(call("PutTeamQuota", &rq), ORR_OK, NULL, "PutTeamQuota again");
    Orrery__Halley__V1__ListTeamQuotasRequest lq =
        ORRERY__HALLEY__V1__LIST_TEAM_QUOTAS_REQUEST__INIT;
    Orrery__Halley__V1__ListTeamQuotasResponse *l = NULL;
    want(hlt_call(cl, "ListTeamQuotas", &lq, &l, &err), ORR_OK, NULL, "ListTeamQuotas");
    if (l) {
        HLT_CHECK(l->n_quotas == 1 && strcmp(l->quotas[0]->team, "ops") == 0 &&
                      l->quotas[0]->max_running == 3 && l->quotas[0]->max_slots == 8,
                  "one quota, replaced");
        FREE(l);
    }
    HLT_CHECK(sql_i64("SELECT count(*) FROM events WHERE kind = 'quota.changed'") == 2,
              "quota.changed per change");
    rq.team = "nobody";
    want(call("PutTeamQuota", &rq), ORR_ENOTFOUND, "team", "PutTeamQuota unknown team");
    rq.team = "ops";
    rq.max_running = -1;
    want(call("PutTeamQuota", &rq), ORR_EINVAL, "max_running", "PutTeamQuota negative");
    rq.max_running = 1;
    rq.max_slots = 2000000;
    want(call("PutTeamQuota", &rq), ORR_EINVAL, "max_slots", "PutTeamQuota too big");
}

static void test_type_limits(void)
{
    Orrery__Halley__V1__PutTypeLimitsRequest rq = ORRERY__HALLEY__V1__PUT_TYPE_LIMITS_REQUEST__INIT;
    rq.type = "shell";
    rq.actor = "user:ann";
    struct {
        const char *json, *field;
    } bad[] = {
        {"[]", "limits"},
        {"{\"disk\":{}}", "limits.disk"},
        {"{\"memory\":1}", "limits.memory"},
        {"{\"memory\":{\"max\":\"lots\"}}", "limits.memory.max"},
        {"{\"cpu\":{\"max\":0}}", "limits.cpu.max"},
        {"{\"pids\":{\"default\":1.5}}", "limits.pids.default"},
        {"{\"run_time\":{\"max\":\"3x\"}}", "limits.run_time.max"},
        {"{\"memory\":{\"min\":\"1g\"}}", "limits.memory.min"},
        {"{\"memory\":{\"default\":\"2g\",\"max\":\"1g\"}}", "limits.memory.default"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rq.limits_json = (char *)bad[i].json;
        want(call("PutTypeLimits", &rq), ORR_EINVAL, bad[i].field, bad[i].json);
    }
    rq.limits_json = "{\"memory\":{\"default\":\"256m\",\"max\":\"1g\"},\"cpu\":{\"max\":2},"
                     "\"pids\":{\"default\":64},\"run_time\":{\"default\":\"30m\",\"max\":\"2h\"}}";
    want(call("PutTypeLimits", &rq), ORR_OK, NULL, "PutTypeLimits");
    Orrery__Halley__V1__ListTypeLimitsRequest lq =
        ORRERY__HALLEY__V1__LIST_TYPE_LIMITS_REQUEST__INIT;
    Orrery__Halley__V1__ListTypeLimitsResponse *l = NULL;
    want(hlt_call(cl, "ListTypeLimits", &lq, &l, &err), ORR_OK, NULL, "ListTypeLimits");
    if (l) {
        HLT_CHECK(l->n_items == 1 && strcmp(l->items[0]->type, "shell") == 0 &&
                      strstr(l->items[0]->limits_json, "256m"),
                  "limits listed");
        FREE(l);
    }
    /* specs above a maximum are refused naming the field; none is half saved */
    hlt_save_task(cl, 0, "lim-mem", "ops", "\"limits\":{\"memory\":\"2g\"}", ORR_EINVAL,
                  "spec.limits.memory", &err);
    hlt_save_task(cl, 0, "lim-cpu", "ops", "\"limits\":{\"cpu\":4}", ORR_EINVAL, "spec.limits.cpu",
                  &err);
    hlt_save_task(cl, 0, "lim-time", "ops", "\"timeout\":\"3h\"", ORR_EINVAL, "spec.timeout", &err);
    HLT_CHECK(sql_i64("SELECT count(*) FROM tasks WHERE name LIKE 'lim-%'") == 0,
              "no refused task was saved");
    /* within the limits: kept; missing ones: the defaults */
    int64_t id =
        hlt_save_task(cl, 0, "lim-ok", "ops", "\"limits\":{\"memory\":\"1g\"}", ORR_OK, NULL, &err);
    char q[256];
    snprintf(q, sizeof q,
             "SELECT (spec->'limits'->>'memory' = '1g' AND (spec->'limits'->>'pids')::int = 64"
             " AND spec->>'timeout' = '30m' AND spec->'limits'->'cpu' IS NULL)::int"
             " FROM task_versions WHERE task_id = %lld",
             (long long)id);
    HLT_CHECK(id > 0 && sql_i64(q) == 1, "the spec keeps its memory and takes the defaults");
    /* an update is held the same way */
    hlt_save_task(cl, id, "lim-ok", "ops", "\"limits\":{\"pids\":65536}", ORR_OK, NULL, &err);
    hlt_save_task(cl, id, "lim-ok", "ops", "\"timeout\":\"1d\"", ORR_EINVAL, "spec.timeout", &err);
    rq.type = "bad type";
    rq.limits_json = "{}";
    want(call("PutTypeLimits", &rq), ORR_EINVAL, "type", "PutTypeLimits bad type");
}

int main(void)
{
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    hlt_server s;
    if (hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_resources");
    }
    cl = hlt_client(&s, NULL);
    hlt_team(cl, "ops");
    int64_t task = hlt_save_task(cl, 0, "res-task", "ops", NULL, ORR_OK, NULL, &err);

    test_blockers(task);
    test_executors();
    test_quotas();
    test_type_limits();

    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_resources");
}
