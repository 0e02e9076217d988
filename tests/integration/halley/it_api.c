/*
 * it_api.c - halleyd end to end: migrations from empty, authentication,
 * tasks, instances, the state machine, users, teams and data sources,
 * against the real PostgreSQL through the real gRPC service.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../server/halley/hl_sm.h"
#include "hlt.h"

typedef Orrery__Halley__V1__Task Task;
typedef Orrery__Halley__V1__Instance Instance;

static orr_rpc_client *cl;
static orr_err err;

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

static void test_migrations(hlt_db *db)
{
    HLT_CHECK(hlt_migrate(db->dsn) == 0, "first migrate");
    PGresult *r = hlt_sql(db, "SELECT max(version), count(*) FROM schema_migrations");
    HLT_CHECK(atoi(PQgetvalue(r, 0, 0)) >= 1, "schema version %s", PQgetvalue(r, 0, 0));
    int applied = atoi(PQgetvalue(r, 0, 1));
    PQclear(r);
    HLT_CHECK(hlt_migrate(db->dsn) == 0, "second migrate is a no-op");
    r = hlt_sql(db, "SELECT count(*) FROM schema_migrations");
    HLT_CHECK(atoi(PQgetvalue(r, 0, 0)) == applied, "no migration applied twice");
    PQclear(r);
    r = hlt_sql(db, "SELECT count(*) FROM information_schema.tables WHERE table_name IN "
                    "('tasks','task_versions','task_dependencies','workflows','instances',"
                    "'attempts','instance_transitions','resource_pools','pool_leases',"
                    "'executors','data_sources','code_packages','package_deployments',"
                    "'sort_streams','data_units','lineage_edges','process_stats','audit_log',"
                    "'events','users','teams','user_teams','api_tokens')");
    HLT_CHECK(atoi(PQgetvalue(r, 0, 0)) == 23, "all tables exist (%s)", PQgetvalue(r, 0, 0));
    PQclear(r);
}

/* 0021 makes each instance's copy of its current attempt's exit code agree
 * with attempts: rows as a halleyd before it left them (no copy), and
 * copies gone wrong (an older halleyd moved the instance after the
 * migration), are put right by the migration's own file run again, as
 * docs/deploy.md says to; a second run changes nothing. */
static void test_exit_code_migration(void)
{
    char *sql = NULL;
    size_t len = 0;
    FILE *f = fopen(HLT_MIGRATIONS_DIR "/0021_instance_exit_code.sql", "r");
    HLT_CHECK(f != NULL, "the migration's file is there");
    if (!f)
        return;
    FILE *m = open_memstream(&sql, &len);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, m);
    fclose(f);
    fclose(m);

    hlt_db old;
    hlt_db_create(&old);
    HLT_CHECK(hlt_migrate(old.dsn) == 0, "migrate");
    PQclear(hlt_sql(&old,
                    "INSERT INTO teams (id, name) VALUES (1, 'm');"
                    "INSERT INTO tasks (id, name, team_id, type) VALUES (1, 'm.t', 1, 'shell');"
                    "INSERT INTO task_versions (task_id, version, spec) VALUES (1, 1, '{}');"
                    /* 1: attempt 2 ended with 7, no copy; 2: running, a stale
                     * copy; 3: never ran, a stale copy; 4: right already */
                    "INSERT INTO instances (id, task_id, task_version, schedule_time, state,"
                    " attempt, exit_code) VALUES (1, 1, 1, now(), 'success', 2, NULL),"
                    " (2, 1, 1, now() - interval '1 hour', 'running', 1, 9),"
                    " (3, 1, 1, now() - interval '2 hours', 'waiting', 1, 5),"
                    " (4, 1, 1, now() - interval '3 hours', 'failed', 1, 1);"
                    "INSERT INTO attempts (instance_id, attempt, state, exit_code, task_version)"
                    " VALUES (1, 1, 'failed', 3, 1), (1, 2, 'success', 7, 1),"
                    " (2, 1, 'running', NULL, 1), (4, 1, 'failed', 1, 1)"));
    HLT_CHECK(hlt_exit_code_drift(&old) == 3, "three copies disagree before");
    for (int run = 0; run < 2; run++) {
        PQclear(hlt_sql(&old, sql));
        PGresult *r = hlt_sql(&old, "SELECT string_agg(id || '=' || coalesce(exit_code::text,"
                                    " '-'), ',' ORDER BY id) FROM instances");
        HLT_CHECK(strcmp(PQgetvalue(r, 0, 0), "1=7,2=-,3=-,4=1") == 0,
                  "run %d: each copy is the current attempt's exit code (%s)", run + 1,
                  PQgetvalue(r, 0, 0));
        PQclear(r);
    }
    HLT_CHECK(hlt_exit_code_drift(&old) == 0, "every copy agrees after it");
    hlt_db_drop(&old);
    free(sql);
}

static void test_schema_guard(void)
{
    hlt_db other;
    hlt_db_create(&other);
    int code = 0;
    hlt_server s;
    /* An empty database: serve refuses (migrate first). */
    HLT_CHECK(hlt_start(&s, other.dsn, NULL, &code) == -1 && code == 2,
              "serve refuses an unmigrated database (code %d)", code);
    HLT_CHECK(hlt_migrate(other.dsn) == 0, "migrate");
    PQclear(hlt_sql(&other, "INSERT INTO schema_migrations VALUES (9999, '9999_future.sql')"));
    code = 0;
    HLT_CHECK(hlt_start(&s, other.dsn, NULL, &code) == -1 && code == 2,
              "serve refuses a newer schema (code %d)", code);
    HLT_CHECK(hlt_migrate(other.dsn) == 2, "migrate refuses a newer schema");
    hlt_db_drop(&other);
}

static void test_auth_health(const hlt_server *s)
{
    Orrery__Halley__V1__HealthRequest hr = ORRERY__HALLEY__V1__HEALTH_REQUEST__INIT;
    Orrery__Halley__V1__HealthResponse *h = NULL;
    orr_status st = hlt_call(cl, "Health", &hr, &h, &err);
    HLT_CHECK(st == ORR_OK && h->db_ok && h->schema_version == h->known_schema_version &&
                  h->schema_version >= 1,
              "health %s", err.msg);
    if (h)
        FREE(h);
    orr_rpc_client *bad = hlt_client(s, "wrong-token");
    h = NULL;
    st = hlt_call(bad, "Health", &hr, &h, &err);
    HLT_CHECK(st == ORR_EAUTH, "wrong token refused: %s", orr_status_name(st));
    orr_rpc_client_destroy(bad);
    bad = hlt_client(s, "");
    st = hlt_call(bad, "Health", &hr, &h, &err);
    HLT_CHECK(st == ORR_EAUTH, "missing token refused: %s", orr_status_name(st));
    orr_rpc_client_destroy(bad);
}

static Task *create_task(const char *spec, orr_status want, const char *field)
{
    Orrery__Halley__V1__CreateTaskRequest rq = ORRERY__HALLEY__V1__CREATE_TASK_REQUEST__INIT;
    rq.spec_json = (char *)spec;
    rq.actor = "user:ann";
    Task *t = NULL;
    orr_status st = hlt_call(cl, "CreateTask", &rq, &t, &err);
    HLT_CHECK(st == want, "CreateTask %s: got %s (%s: %s)", spec, orr_status_name(st), err.field,
              err.msg);
    if (field)
        HLT_CHECK(strcmp(err.field, field) == 0, "field %s, want %s (%s)", err.field, field,
                  err.msg);
    return st == ORR_OK ? t : NULL;
}

static void create_team(const char *name, orr_status want)
{
    Orrery__Halley__V1__CreateTeamRequest rq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
    rq.name = (char *)name;
    rq.actor = "admin";
    Orrery__Halley__V1__Team *t = NULL;
    orr_status st = hlt_call(cl, "CreateTeam", &rq, &t, &err);
    HLT_CHECK(st == want, "CreateTeam %s: %s %s", name, orr_status_name(st), err.msg);
    if (t)
        FREE(t);
}

static int64_t t_up, t_down;

static void test_tasks(void)
{
    char spec[1024];
    create_team("data", ORR_OK);
    create_team("data", ORR_EEXIST);
    create_team("bad name!", ORR_EINVAL);
    Task *t = create_task(hlt_shell_spec(spec, sizeof spec, "orders_hourly", "data",
                                         "\"retries\":{\"max\":3,\"delay\":\"5m\"}"),
                          ORR_OK, NULL);
    HLT_CHECK(t && t->id > 0 && t->version == 1 && t->current_version == 1 && t->active &&
                  strcmp(t->team, "data") == 0 && strcmp(t->schedule, "0 * * * *") == 0,
              "created task fields");
    t_up = t ? t->id : 0;
    if (t)
        FREE(t);
    /* Failure paths, each naming its field. */
    create_task(hlt_shell_spec(spec, sizeof spec, "orders_hourly", "data", NULL), ORR_EEXIST,
                "spec.name");
    create_task(hlt_shell_spec(spec, sizeof spec, "x1", "data", "\"retries\":{\"max\":-1}"),
                ORR_EINVAL, "spec.retries.max");
    create_task(hlt_shell_spec(spec, sizeof spec, "x2", "nope", NULL), ORR_EINVAL, "spec.team");
    create_task(hlt_shell_spec(spec, sizeof spec, "x3", "data", "\"colour\":1"), ORR_EINVAL,
                "spec.colour");
    create_task("{\"name\":\"x4\",\"team\":\"data\",\"type\":\"shell\",\"config\":{}}", ORR_EINVAL,
                "spec.config.command");
    create_task("{not json", ORR_EINVAL, "spec");
    create_task(hlt_shell_spec(spec, sizeof spec, "x5", "data",
                               "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"ghost\"}]"),
                ORR_EINVAL, "spec.upstreams[0].task");
    t = create_task(hlt_shell_spec(spec, sizeof spec, "orders_daily", "data",
                                   "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"orders_hourly\","
                                   "\"cycle\":\"latest\"},{\"kind\":\"self\"}]"),
                    ORR_OK, NULL);
    t_down = t ? t->id : 0;
    if (t)
        FREE(t);

    /* Get by id and by name; missing. */
    Orrery__Halley__V1__GetTaskRequest g = ORRERY__HALLEY__V1__GET_TASK_REQUEST__INIT;
    g.id = t_up;
    for (int i = 0; i < 2; i++) { /* the second read is served by the cache */
        t = NULL;
        orr_status st = hlt_call(cl, "GetTask", &g, &t, &err);
        HLT_CHECK(st == ORR_OK && t->id == t_up && strstr(t->spec_json, "\"retries\""),
                  "GetTask by id: %s", err.msg);
        if (t)
            FREE(t);
    }
    g.id = 0;
    g.name = "orders_daily";
    t = NULL;
    HLT_CHECK(hlt_call(cl, "GetTask", &g, &t, &err) == ORR_OK && t->id == t_down, "by name");
    if (t)
        FREE(t);
    g.name = "ghost";
    HLT_CHECK(hlt_call(cl, "GetTask", &g, &t, &err) == ORR_ENOTFOUND, "missing task");
    g.name = "";
    HLT_CHECK(hlt_call(cl, "GetTask", &g, &t, &err) == ORR_EINVAL, "neither id nor name");

    /* Update: new version; CAS on expected_version; renaming refused. */
    Orrery__Halley__V1__UpdateTaskRequest u = ORRERY__HALLEY__V1__UPDATE_TASK_REQUEST__INIT;
    u.id = t_up;
    u.actor = "user:bob";
    u.spec_json =
        (char *)hlt_shell_spec(spec, sizeof spec, "orders_hourly", "data", "\"priority\":5");
    u.expected_version = 1;
    t = NULL;
    HLT_CHECK(hlt_call(cl, "UpdateTask", &u, &t, &err) == ORR_OK && t->version == 2 &&
                  t->current_version == 2 && strcmp(t->created_by, "user:bob") == 0,
              "update: %s", err.msg);
    if (t)
        FREE(t);
    HLT_CHECK(hlt_call(cl, "UpdateTask", &u, &t, &err) == ORR_ECONFLICT &&
                  strcmp(err.field, "expected_version") == 0,
              "stale expected_version is ABORTED");
    u.expected_version = 0;
    u.spec_json = (char *)hlt_shell_spec(spec, sizeof spec, "renamed", "data", NULL);
    HLT_CHECK(hlt_call(cl, "UpdateTask", &u, &t, &err) == ORR_EINVAL &&
                  strcmp(err.field, "spec.name") == 0,
              "rename refused");
    g.id = t_up;
    g.version = 1;
    t = NULL;
    HLT_CHECK(hlt_call(cl, "GetTask", &g, &t, &err) == ORR_OK && t->version == 1 &&
                  t->current_version == 2 && !strstr(t->spec_json, "priority"),
              "version 1 is kept");
    if (t)
        FREE(t);
    g.version = 0;
    t = NULL;
    HLT_CHECK(hlt_call(cl, "GetTask", &g, &t, &err) == ORR_OK && t->version == 2,
              "cache invalidated by update (version %d)", t ? t->version : -1);
    if (t)
        FREE(t);

    /* List with filters and keyset pagination. */
    for (int i = 0; i < 5; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "page_%d", i);
        t = create_task(hlt_shell_spec(spec, sizeof spec, nm, "data", NULL), ORR_OK, NULL);
        if (t)
            FREE(t);
    }
    Orrery__Halley__V1__ListTasksRequest l = ORRERY__HALLEY__V1__LIST_TASKS_REQUEST__INIT;
    l.name_prefix = "page_";
    l.page_size = 2;
    int seen = 0, pages = 0;
    char token[32] = "";
    do {
        l.page_token = token;
        Orrery__Halley__V1__ListTasksResponse *lr = NULL;
        if (hlt_call(cl, "ListTasks", &l, &lr, &err) != ORR_OK) {
            HLT_CHECK(0, "ListTasks: %s", err.msg);
            break;
        }
        seen += (int)lr->n_tasks;
        pages++;
        snprintf(token, sizeof token, "%s", lr->next_page_token);
        FREE(lr);
    } while (token[0] && pages < 10);
    HLT_CHECK(seen == 5 && pages == 3, "paged 5 tasks in 3 pages (%d in %d)", seen, pages);
    l.page_token = "abc";
    Orrery__Halley__V1__ListTasksResponse *lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListTasks", &l, &lr, &err) == ORR_EINVAL &&
                  strcmp(err.field, "page_token") == 0,
              "bad page token");

    /* Deactivate: listed as inactive; no new instances. */
    Orrery__Halley__V1__DeactivateTaskRequest d = ORRERY__HALLEY__V1__DEACTIVATE_TASK_REQUEST__INIT;
    d.name = "page_0";
    d.actor = "user:ann";
    t = NULL;
    HLT_CHECK(hlt_call(cl, "DeactivateTask", &d, &t, &err) == ORR_OK && !t->active, "deactivate");
    if (t)
        FREE(t);
    l.page_token = "";
    l.page_size = 0;
    l.active = ORRERY__HALLEY__V1__ACTIVE_FILTER__ACTIVE_FILTER_INACTIVE;
    lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListTasks", &l, &lr, &err) == ORR_OK && lr->n_tasks == 1 &&
                  strcmp(lr->tasks[0]->name, "page_0") == 0,
              "inactive filter");
    if (lr)
        FREE(lr);
}

/* One TransitionInstances call of n items (the answer in *out). */
static orr_status transition_batch(Orrery__Halley__V1__TransitionRequest **items, size_t n,
                                   Orrery__Halley__V1__TransitionBatchResponse **out)
{
    Orrery__Halley__V1__TransitionBatchRequest br =
        ORRERY__HALLEY__V1__TRANSITION_BATCH_REQUEST__INIT;
    br.n_items = n;
    br.items = items;
    return hlt_call(cl, "TransitionInstances", &br, out, &err);
}

static Instance *create_instance(int64_t task, int64_t sched, int *created, int *code)
{
    Orrery__Halley__V1__CreateInstance ci = ORRERY__HALLEY__V1__CREATE_INSTANCE__INIT;
    ci.task_id = task;
    ci.schedule_time_ms = sched;
    ci.actor = "kepler";
    Orrery__Halley__V1__CreateInstance *items[1] = {&ci};
    Orrery__Halley__V1__CreateInstancesRequest rq =
        ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
    rq.n_instances = 1;
    rq.instances = items;
    Orrery__Halley__V1__CreateInstancesResponse *r = NULL;
    if (hlt_call(cl, "CreateInstances", &rq, &r, &err) != ORR_OK) {
        HLT_CHECK(0, "CreateInstances: %s", err.msg);
        return NULL;
    }
    *created = r->results[0]->created;
    *code = r->results[0]->code;
    Instance *in = NULL;
    if (r->results[0]->instance) {
        in = r->results[0]->instance;
        r->results[0]->instance = NULL;
    }
    FREE(r);
    return in;
}

static orr_status transition(int64_t id, hl_state from, hl_state to, const char *executor,
                             Orrery__Halley__V1__TransitionResult **out)
{
    Orrery__Halley__V1__TransitionRequest rq = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
    rq.instance_id = id;
    rq.expected_state = (Orrery__Halley__V1__InstanceState)from;
    rq.new_state = (Orrery__Halley__V1__InstanceState)to;
    rq.actor = "kepler";
    rq.reason = "test";
    rq.executor = (char *)(executor ? executor : "");
    Orrery__Halley__V1__TransitionResult *r = NULL;
    orr_status st = hlt_call(cl, "TransitionInstance", &rq, &r, &err);
    if (out)
        *out = r;
    else if (r)
        FREE(r);
    return st;
}

static void test_instances(const hlt_db *db)
{
    const int64_t base = 1767225600000LL; /* 2026-01-01T00:00Z */
    int created = 0, code = -1;
    Instance *in = create_instance(t_up, base, &created, &code);
    HLT_CHECK(in && created && code == 0 && in->state == 1 && in->attempt == 1 &&
                  in->task_version == 2 && in->schedule_time_ms == base,
              "instance created waiting with the current version");
    int64_t id = in ? in->id : 0;
    if (in)
        FREE(in);
    in = create_instance(t_up, base, &created, &code);
    HLT_CHECK(in && !created && in->id == id, "creation is idempotent on task+time");
    if (in)
        FREE(in);
    in = create_instance(999999, base, &created, &code);
    HLT_CHECK(!in && code == 5, "unknown task is NOT_FOUND per item (%d)", code);

    /* The instance keeps its version when the task is updated. */
    char spec[512];
    Orrery__Halley__V1__UpdateTaskRequest u = ORRERY__HALLEY__V1__UPDATE_TASK_REQUEST__INIT;
    u.id = t_up;
    u.spec_json =
        (char *)hlt_shell_spec(spec, sizeof spec, "orders_hourly", "data", "\"priority\":7");
    Task *t = NULL;
    HLT_CHECK(hlt_call(cl, "UpdateTask", &u, &t, &err) == ORR_OK && t->version == 3, "update 3");
    if (t)
        FREE(t);
    Orrery__Halley__V1__GetInstanceRequest gi = ORRERY__HALLEY__V1__GET_INSTANCE_REQUEST__INIT;
    gi.id = id;
    in = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstance", &gi, &in, &err) == ORR_OK && in->task_version == 2,
              "instance keeps version 2");
    if (in)
        FREE(in);

    /* The happy path through the machine, recorded. */
    HLT_CHECK(transition(id, HL_ST_WAITING, HL_ST_READY, NULL, NULL) == ORR_OK, "->ready %s",
              err.msg);
    HLT_CHECK(transition(id, HL_ST_READY, HL_ST_DISPATCHED, NULL, NULL) == ORR_EINVAL &&
                  strcmp(err.field, "executor") == 0,
              "dispatched needs an executor");
    HLT_CHECK(transition(id, HL_ST_READY, HL_ST_DISPATCHED, "ex-1", NULL) == ORR_OK,
              "->dispatched");
    HLT_CHECK(transition(id, HL_ST_READY, HL_ST_DISPATCHED, "ex-2", NULL) == ORR_ECONFLICT,
              "a second dispatcher loses the CAS: %s", orr_status_name(err.code));
    HLT_CHECK(transition(id, HL_ST_DISPATCHED, HL_ST_RUNNING, NULL, NULL) == ORR_OK, "->running");
    Orrery__Halley__V1__TransitionResult *tr = NULL;
    HLT_CHECK(transition(id, HL_ST_RUNNING, HL_ST_FAILED, NULL, &tr) == ORR_OK && tr &&
                  tr->instance->state == (int)HL_ST_FAILED && tr->event_id > 0 &&
                  strcmp(tr->instance->executor, "ex-1") == 0,
              "->failed");
    if (tr)
        FREE(tr);
    tr = NULL;
    HLT_CHECK(transition(id, HL_ST_FAILED, HL_ST_WAITING, NULL, &tr) == ORR_OK && tr &&
                  tr->instance->attempt == 2,
              "retry starts attempt 2");
    if (tr)
        FREE(tr);
    HLT_CHECK(transition(424242, HL_ST_WAITING, HL_ST_READY, NULL, NULL) == ORR_ENOTFOUND,
              "missing instance");
    HLT_CHECK(transition(id, HL_ST_WAITING, HL_ST_WAITING, NULL, NULL) == ORR_ESTATE,
              "self transition refused");

    Orrery__Halley__V1__ListTransitionsRequest lt =
        ORRERY__HALLEY__V1__LIST_TRANSITIONS_REQUEST__INIT;
    lt.instance_id = id;
    Orrery__Halley__V1__ListTransitionsResponse *lr = NULL;
    HLT_CHECK(hlt_call(cl, "ListTransitions", &lt, &lr, &err) == ORR_OK && lr->n_transitions == 5 &&
                  lr->transitions[1]->to_state == (int)HL_ST_DISPATCHED &&
                  strcmp(lr->transitions[1]->executor, "ex-1") == 0 &&
                  strcmp(lr->transitions[0]->actor, "kepler") == 0 && lr->transitions[0]->at_ms > 0,
              "5 transitions recorded with actor, executor, time");
    if (lr)
        FREE(lr);
    PGresult *r = hlt_sql(db, "SELECT count(*) FROM attempts WHERE state = 'failed'");
    HLT_CHECK(atoi(PQgetvalue(r, 0, 0)) == 1, "attempt 1 recorded failed");
    PQclear(r);

    /* Every pair: legal ones exactly as the table says, the rest refused
     * before touching the row (FAILED_PRECONDITION). */
    int illegal = 0, refused = 0;
    for (int f = HL_ST_WAITING; f < HL_ST__COUNT; f++)
        for (int to = HL_ST_WAITING; to < HL_ST__COUNT; to++) {
            if (hl_sm_legal((hl_state)f, (hl_state)to))
                continue;
            illegal++;
            const char *ex = to == HL_ST_DISPATCHED ? "ex-1" : NULL;
            if (transition(id, (hl_state)f, (hl_state)to, ex, NULL) == ORR_ESTATE &&
                strcmp(err.field, "new_state") == 0)
                refused++;
        }
    HLT_CHECK(illegal > 50 && refused == illegal, "%d of %d illegal pairs refused", refused,
              illegal);
    HLT_CHECK(transition(id, 0, HL_ST_READY, NULL, NULL) == ORR_EINVAL &&
                  strcmp(err.field, "expected_state") == 0,
              "unspecified state");
    /* Every legal edge from a real instance in its from-state succeeds. */
    int legal = 0, ok = 0;
    int64_t sched = base + 3600000LL * 100;
    for (int f = HL_ST_WAITING; f < HL_ST__COUNT; f++)
        for (int to = HL_ST_WAITING; to < HL_ST__COUNT; to++) {
            if (!hl_sm_legal((hl_state)f, (hl_state)to))
                continue;
            legal++;
            sched += 3600000LL;
            Instance *x = create_instance(t_up, sched, &created, &code);
            if (!x)
                continue;
            char sql[160];
            snprintf(sql, sizeof sql, "UPDATE instances SET state = '%s' WHERE id = %lld",
                     hl_state_name((hl_state)f), (long long)x->id);
            PQclear(hlt_sql(db, sql));
            if (transition(x->id, (hl_state)f, (hl_state)to, "ex-1", NULL) == ORR_OK)
                ok++;
            else
                fprintf(stderr, "edge %s->%s: %s\n", hl_state_name((hl_state)f),
                        hl_state_name((hl_state)to), err.msg);
            FREE(x);
        }
    HLT_CHECK(legal > 20 && ok == legal, "%d of %d legal edges", ok, legal);

    /* Batch: mixed outcomes, each with its own code. */
    Instance *a = create_instance(t_up, base + 3600000LL, &created, &code);
    Instance *b = create_instance(t_up, base + 7200000LL, &created, &code);
    Orrery__Halley__V1__TransitionRequest i1 = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT,
                                          i2 = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT,
                                          i3 = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
    i1.instance_id = a ? a->id : 0;
    i1.expected_state = 1;
    i1.new_state = 2;
    i1.actor = "kepler";
    i2 = i1;
    i2.instance_id = b ? b->id : 0;
    i2.expected_state = 2; /* wrong: it is waiting */
    i2.new_state = 3;
    i2.executor = "ex-1";
    i3 = i1;
    i3.new_state = 5; /* waiting -> success: illegal */
    Orrery__Halley__V1__TransitionRequest *items[3] = {&i1, &i2, &i3};
    Orrery__Halley__V1__TransitionBatchResponse *bres = NULL;
    HLT_CHECK(transition_batch(items, 3, &bres) == ORR_OK && bres->n_results == 3 &&
                  bres->results[0]->code == 0 && bres->results[1]->code == 10 &&
                  bres->results[2]->code == 9,
              "batch results OK, ABORTED, FAILED_PRECONDITION");
    if (bres)
        FREE(bres);
    Orrery__Halley__V1__ListReadyInstancesRequest rr =
        ORRERY__HALLEY__V1__LIST_READY_INSTANCES_REQUEST__INIT;
    Orrery__Halley__V1__ListInstancesResponse *li = NULL;
    HLT_CHECK(hlt_call(cl, "ListReadyInstances", &rr, &li, &err) == ORR_OK && li->n_instances >= 1,
              "ready instances listed");
    int found = 0;
    for (size_t i = 0; li && i < li->n_instances; i++)
        found |= a && li->instances[i]->id == a->id;
    HLT_CHECK(found, "the ready one is there");
    if (li)
        FREE(li);

    /* Upstream / downstream states. */
    Instance *dn = create_instance(t_down, base + 7200000LL, &created, &code);
    gi.id = dn ? dn->id : 0;
    in = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstance", &gi, &in, &err) == ORR_OK && in->n_upstreams == 2 && b &&
                  in->upstreams[0]->instance_id == b->id &&
                  in->upstreams[0]->state == (int)HL_ST_WAITING &&
                  strcmp(in->upstreams[1]->kind, "self") == 0 && in->upstreams[1]->instance_id == 0,
              "upstreams: latest hourly and no previous self (%s)", err.msg);
    if (in)
        FREE(in);
    gi.id = b ? b->id : 0;
    in = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstance", &gi, &in, &err) == ORR_OK && in->n_downstreams == 1 &&
                  dn && in->downstreams[0]->instance_id == dn->id,
              "downstream of the hourly instance");
    if (in)
        FREE(in);
    /* without_deps: the row alone (what an executor reads once per run). */
    gi.id = dn ? dn->id : 0;
    gi.without_deps = 1;
    in = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstance", &gi, &in, &err) == ORR_OK && dn && in->id == dn->id &&
                  in->task_id == dn->task_id && in->state == dn->state && in->n_upstreams == 0 &&
                  in->n_downstreams == 0,
              "without_deps: the instance without its dependency states (%s)", err.msg);
    HLT_CHECK(in && !in->task, "no task unless with_task");
    if (in)
        FREE(in);
    /* with_task: and the task at the instance's version, in the same answer
     * (an executor's one read at the start of a run). */
    gi.with_task = 1;
    in = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstance", &gi, &in, &err) == ORR_OK && dn && in->id == dn->id &&
                  in->task && in->task->id == dn->task_id &&
                  in->task->version == in->task_version && in->task->spec_json &&
                  strstr(in->task->spec_json, in->task->name) && in->n_upstreams == 0,
              "with_task: the task at the instance's version (%s)", err.msg);
    if (in)
        FREE(in);
    gi.with_task = 0;
    gi.without_deps = 0;
    /* GetInstances: the rows in the order asked, each with its task at its
     * version; an unknown id left out; bad id lists refused whole. */
    Orrery__Halley__V1__GetInstancesRequest gm = ORRERY__HALLEY__V1__GET_INSTANCES_REQUEST__INIT;
    int64_t many[3] = {dn ? dn->id : 0, INT64_C(999999999), b ? b->id : 0};
    gm.ids = many;
    gm.n_ids = 3;
    gm.with_task = 1;
    Orrery__Halley__V1__GetInstancesResponse *gr = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstances", &gm, &gr, &err) == ORR_OK && gr->n_instances == 2 &&
                  dn && b && gr->instances[0]->id == dn->id && gr->instances[1]->id == b->id &&
                  gr->instances[0]->task_id == dn->task_id &&
                  gr->instances[1]->task_id == b->task_id,
              "GetInstances: two of three, in the order asked (%s)", err.msg);
    for (size_t i = 0; gr && i < gr->n_instances; i++) {
        const Instance *x = gr->instances[i];
        HLT_CHECK(x->task && x->task->id == x->task_id && x->task->version == x->task_version &&
                      x->task->spec_json && strstr(x->task->spec_json, x->task->name) &&
                      x->params_json && x->params_json[0] == '{' && x->n_upstreams == 0 &&
                      x->state == (i == 0 ? dn->state : (int)HL_ST_WAITING),
                  "GetInstances: row %zu with its task, params, no dependencies", i);
    }
    if (gr)
        FREE(gr);
    /* An instance at an older version of its task gets that version, not
     * the current one; a repeated id gets its row again. */
    char vsql[512];
    long long vt = dn ? (long long)dn->task_id : 0;
    int vv = dn ? dn->task_version : 0;
    snprintf(vsql, sizeof vsql,
             "INSERT INTO task_versions (task_id, version, spec, schedule, timezone, created_by)"
             " SELECT task_id, 99, spec, schedule, timezone, created_by FROM task_versions"
             " WHERE task_id = %lld AND version = %d; UPDATE tasks SET current_version = 99"
             " WHERE id = %lld",
             vt, vv, vt);
    PQclear(hlt_sql(db, vsql));
    int64_t twice[2] = {dn ? dn->id : 0, dn ? dn->id : 0};
    gm.ids = twice;
    gm.n_ids = 2;
    gr = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstances", &gm, &gr, &err) == ORR_OK && gr->n_instances == 2 &&
                  gr->instances[1]->id == twice[0] && gr->instances[0]->task &&
                  gr->instances[1]->task && gr->instances[0]->task->version == vv &&
                  gr->instances[1]->task->version == vv &&
                  gr->instances[0]->task->current_version == 99,
              "GetInstances: the task at the instance's version %d, not the current one (%s)", vv,
              err.msg);
    if (gr)
        FREE(gr);
    snprintf(vsql, sizeof vsql,
             "UPDATE tasks SET current_version = %d WHERE id = %lld;"
             " DELETE FROM task_versions WHERE task_id = %lld AND version = 99",
             vv, vt, vt);
    PQclear(hlt_sql(db, vsql));
    gm.ids = many;
    gm.with_task = 0;
    gm.n_ids = 1;
    gr = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstances", &gm, &gr, &err) == ORR_OK && gr->n_instances == 1 &&
                  !gr->instances[0]->task,
              "GetInstances: no task unless with_task (%s)", err.msg);
    if (gr)
        FREE(gr);
    int64_t bad[2] = {dn ? dn->id : 0, 0};
    gm.ids = bad;
    gm.n_ids = 2;
    gr = NULL;
    HLT_CHECK(hlt_call(cl, "GetInstances", &gm, &gr, &err) == ORR_EINVAL &&
                  strcmp(err.field, "ids") == 0,
              "GetInstances: an id of 0 refused, naming ids (%s)", err.msg);
    gm.n_ids = 0;
    HLT_CHECK(hlt_call(cl, "GetInstances", &gm, &gr, &err) == ORR_EINVAL, "GetInstances: no ids");
    int64_t *lots = calloc(1001, sizeof *lots);
    for (int i = 0; lots && i < 1001; i++)
        lots[i] = i + 1;
    gm.ids = lots;
    gm.n_ids = lots ? 1001 : 0;
    HLT_CHECK(hlt_call(cl, "GetInstances", &gm, &gr, &err) == ORR_EINVAL,
              "GetInstances: more than 1000 ids");
    free(lots);
    Orrery__Halley__V1__ListInstancesRequest lq = ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
    lq.task_id = t_up;
    Orrery__Halley__V1__InstanceState states[1] = {
        ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_READY};
    lq.n_states = 1;
    lq.states = states;
    li = NULL;
    HLT_CHECK(hlt_call(cl, "ListInstances", &lq, &li, &err) == ORR_OK, "list by state %s", err.msg);
    int all_ready = li != NULL;
    for (size_t i = 0; li && i < li->n_instances; i++)
        all_ready &=
            li->instances[i]->state == (int)HL_ST_READY && li->instances[i]->task_id == t_up;
    HLT_CHECK(all_ready && li && li->n_instances >= 1, "state filter");
    if (li)
        FREE(li);
    if (a)
        FREE(a);
    if (b)
        FREE(b);
    if (dn)
        FREE(dn);
}

static void test_users(const hlt_db *db)
{
    Orrery__Halley__V1__CreateUserRequest u = ORRERY__HALLEY__V1__CREATE_USER_REQUEST__INIT;
    char *teams[1] = {"data"};
    u.name = "ann";
    u.password = "correct horse";
    u.role = ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER;
    u.n_teams = 1;
    u.teams = teams;
    Orrery__Halley__V1__User *usr = NULL;
    HLT_CHECK(hlt_call(cl, "CreateUser", &u, &usr, &err) == ORR_OK && usr->role == 2 &&
                  usr->n_teams == 1,
              "create user %s", err.msg);
    if (usr)
        FREE(usr);
    HLT_CHECK(hlt_call(cl, "CreateUser", &u, &usr, &err) == ORR_EEXIST, "duplicate user");
    u.name = "bob";
    u.password = "short";
    HLT_CHECK(hlt_call(cl, "CreateUser", &u, &usr, &err) == ORR_EINVAL &&
                  strcmp(err.field, "password") == 0,
              "short password");
    u.password = "long enough";
    teams[0] = "ghosts";
    HLT_CHECK(hlt_call(cl, "CreateUser", &u, &usr, &err) == ORR_EINVAL &&
                  strcmp(err.field, "teams[0]") == 0,
              "unknown team");
    PGresult *r = hlt_sql(db, "SELECT password_hash FROM users WHERE name = 'ann'");
    HLT_CHECK(strncmp(PQgetvalue(r, 0, 0), "$argon2id$", 10) == 0, "argon2id hash stored");
    PQclear(r);
    Orrery__Halley__V1__AuthenticateRequest a = ORRERY__HALLEY__V1__AUTHENTICATE_REQUEST__INIT;
    a.name = "ann";
    a.password = "correct horse";
    Orrery__Halley__V1__AuthenticateResponse *ar = NULL;
    HLT_CHECK(hlt_call(cl, "Authenticate", &a, &ar, &err) == ORR_OK && ar->ok && ar->user &&
                  strcmp(ar->user->name, "ann") == 0,
              "right password");
    if (ar)
        FREE(ar);
    a.password = "wrong horse";
    ar = NULL;
    HLT_CHECK(hlt_call(cl, "Authenticate", &a, &ar, &err) == ORR_OK && !ar->ok, "wrong password");
    if (ar)
        FREE(ar);

    Orrery__Halley__V1__PutDataSourceRequest ds = ORRERY__HALLEY__V1__PUT_DATA_SOURCE_REQUEST__INIT;
    ds.name = "warehouse";
    ds.kind = "postgresql";
    ds.params_json = "{\"host\":\"db1\",\"user\":\"etl\"}";
    ds.secret = "s3cr3t-passw0rd";
    Orrery__Halley__V1__DataSource *d = NULL;
    HLT_CHECK(hlt_call(cl, "PutDataSource", &ds, &d, &err) == ORR_OK && d->has_secret &&
                  !strstr(d->params_json, "s3cr3t"),
              "put data source %s", err.msg);
    if (d)
        FREE(d);
    r = hlt_sql(db, "SELECT position('s3cr3t'::bytea in secret), "
                    "length(secret) FROM data_sources");
    HLT_CHECK(atoi(PQgetvalue(r, 0, 0)) == 0 && atoi(PQgetvalue(r, 0, 1)) == 24 + 16 + 15,
              "stored encrypted (nonce + mac + text)");
    PQclear(r);
    ds.params_json = "{\"password\":\"x\"}";
    HLT_CHECK(hlt_call(cl, "PutDataSource", &ds, &d, &err) == ORR_EINVAL &&
                  strcmp(err.field, "params_json.password") == 0,
              "clear password in params refused");
    Orrery__Halley__V1__GetDataSourceRequest gd = ORRERY__HALLEY__V1__GET_DATA_SOURCE_REQUEST__INIT;
    gd.name = "warehouse";
    d = NULL;
    HLT_CHECK(hlt_call(cl, "GetDataSource", &gd, &d, &err) == ORR_OK && d->has_secret,
              "get data source");
    if (d)
        FREE(d);
    r = hlt_sql(db, "SELECT count(*) FROM audit_log WHERE action IN ('user.create',"
                    "'datasource.put','task.create','task.update')");
    HLT_CHECK(atoi(PQgetvalue(r, 0, 0)) >= 4, "audit records written");
    PQclear(r);
}

/* A dispatched instance whose run ended before it was reported running:
 * dispatched -> running -> end in one step (started_at_ms), alone (the
 * single statement) and in a batch (the combined one). The history shows
 * both steps, the first at the run's start; without a start time, or from
 * another state, the step stays illegal. */
static void test_through_running(const hlt_db *db)
{
    const int64_t base = 1767225600000LL + 3600000LL * 20000;
    int created = 0, code = -1;
    int64_t ids[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 8; i++) {
        Instance *x = create_instance(t_up, base + 3600000LL * i, &created, &code);
        ids[i] = x ? x->id : 0;
        if (x)
            FREE(x);
        if (i != 3) {
            transition(ids[i], HL_ST_WAITING, HL_ST_READY, NULL, NULL);
            transition(ids[i], HL_ST_READY, HL_ST_DISPATCHED, "ex-1", NULL);
        }
    }
    /* Dispatched a minute ago (set, not waited for): the start times below
     * lie between the dispatch and now, except where a bound is tested. */
    char sql[300];
    snprintf(sql, sizeof sql,
             "UPDATE instances SET updated_at = now() - interval '60 s' WHERE id IN"
             " (%lld, %lld, %lld, %lld, %lld, %lld, %lld)"
             " RETURNING (extract(epoch FROM updated_at) * 1000)::int8",
             (long long)ids[0], (long long)ids[1], (long long)ids[2], (long long)ids[4],
             (long long)ids[5], (long long)ids[6], (long long)ids[7]);
    PGresult *r = hlt_sql(db, sql);
    const int64_t dispatched = PQntuples(r) == 7 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    HLT_CHECK(dispatched > 0, "dispatch times set");
    PQclear(r);
    int64_t start = hlt_now_ms() - 5000;
    Orrery__Halley__V1__TransitionRequest rq = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
    rq.instance_id = ids[0];
    rq.expected_state = (Orrery__Halley__V1__InstanceState)HL_ST_DISPATCHED;
    rq.new_state = (Orrery__Halley__V1__InstanceState)HL_ST_SUCCESS;
    rq.actor = "executor:ex-1";
    rq.reason = "";
    rq.expected_attempt = 1;
    rq.has_exit_code = 1;
    rq.exit_code = 0;
    Orrery__Halley__V1__TransitionResult *tr = NULL;
    HLT_CHECK(hlt_call(cl, "TransitionInstance", &rq, &tr, &err) == ORR_ESTATE,
              "dispatched -> success without a start time is refused");
    if (tr)
        FREE(tr);
    tr = NULL;
    rq.started_at_ms = start;
    HLT_CHECK(hlt_call(cl, "TransitionInstance", &rq, &tr, &err) == ORR_OK && tr &&
                  tr->instance->state == (int)HL_ST_SUCCESS &&
                  tr->instance->started_at_ms == start && tr->instance->finished_at_ms >= start,
              "dispatched -> running -> success with its start time (%s)", err.msg);
    if (tr)
        FREE(tr);
    tr = NULL;
    rq.instance_id = ids[3]; /* waiting: running is not next */
    rq.expected_state = (Orrery__Halley__V1__InstanceState)HL_ST_WAITING;
    HLT_CHECK(hlt_call(cl, "TransitionInstance", &rq, &tr, &err) == ORR_ESTATE &&
                  strcmp(err.field, "new_state") == 0,
              "through running only from dispatched");
    if (tr)
        FREE(tr);
    /* A batch: two runs that ended (success, failed), run as one combined
     * statement, and the repeat of the first, which lost its CAS. */
    Orrery__Halley__V1__TransitionRequest i1 = rq, i2 = rq, i3 = rq;
    i1.instance_id = ids[1];
    i1.expected_state = (Orrery__Halley__V1__InstanceState)HL_ST_DISPATCHED;
    i1.started_at_ms = start + 1000;
    i2 = i1;
    i2.instance_id = ids[2];
    i2.new_state = (Orrery__Halley__V1__InstanceState)HL_ST_FAILED;
    i2.reason = "exit code 3";
    i2.exit_code = 3;
    i2.started_at_ms = start + 2000;
    i3 = i1;
    i3.instance_id = ids[0];
    Orrery__Halley__V1__TransitionRequest *items[3] = {&i1, &i2, &i3};
    Orrery__Halley__V1__TransitionBatchResponse *bres = NULL;
    HLT_CHECK(transition_batch(items, 3, &bres) == ORR_OK && bres->n_results == 3 &&
                  bres->results[0]->code == 0 && bres->results[1]->code == 0 &&
                  bres->results[2]->code == 10 &&
                  bres->results[0]->instance->started_at_ms == start + 1000 &&
                  bres->results[1]->instance->state == (int)HL_ST_FAILED,
              "batch: two through running, a repeat ABORTED");
    if (bres)
        FREE(bres);
    const int want_to[3] = {HL_ST_SUCCESS, HL_ST_SUCCESS, HL_ST_FAILED};
    for (int i = 0; i < 3; i++) {
        Orrery__Halley__V1__ListTransitionsRequest lt =
            ORRERY__HALLEY__V1__LIST_TRANSITIONS_REQUEST__INIT;
        lt.instance_id = ids[i];
        Orrery__Halley__V1__ListTransitionsResponse *lr = NULL;
        HLT_CHECK(hlt_call(cl, "ListTransitions", &lt, &lr, &err) == ORR_OK &&
                      lr->n_transitions == 4 &&
                      lr->transitions[2]->from_state == (int)HL_ST_DISPATCHED &&
                      lr->transitions[2]->to_state == (int)HL_ST_RUNNING &&
                      lr->transitions[2]->at_ms == start + 1000 * i &&
                      strcmp(lr->transitions[2]->actor, "executor:ex-1") == 0 &&
                      strcmp(lr->transitions[2]->executor, "ex-1") == 0 &&
                      lr->transitions[3]->from_state == (int)HL_ST_RUNNING &&
                      (int)lr->transitions[3]->to_state == want_to[i] &&
                      lr->transitions[3]->at_ms >= lr->transitions[2]->at_ms,
                  "instance %d: history dispatched -> running at its start -> %s", i,
                  hl_state_name((hl_state)want_to[i]));
        if (lr)
            FREE(lr);
    }
    /* The start an executor reports is bounded by the dispatch and by now,
     * whatever its clock says: alone (ids 4, 5), and in a batch (6, 7: the
     * combined statement). */
    const int64_t wrong[2] = {dispatched - 30000, hlt_now_ms() + 3600000};
    Orrery__Halley__V1__TransitionRequest w[2];
    Orrery__Halley__V1__TransitionRequest *witems[2] = {&w[0], &w[1]};
    for (int k = 0; k < 2; k++) {
        rq = i1;
        rq.instance_id = ids[4 + k];
        rq.started_at_ms = wrong[k];
        tr = NULL;
        HLT_CHECK(hlt_call(cl, "TransitionInstance", &rq, &tr, &err) == ORR_OK && tr &&
                      (k == 0 ? tr->instance->started_at_ms == dispatched
                              : tr->instance->started_at_ms > dispatched &&
                                    tr->instance->started_at_ms <= tr->instance->finished_at_ms),
                  "a start %s is recorded as %s", k == 0 ? "before the dispatch" : "in the future",
                  k == 0 ? "the dispatch" : "at most the end");
        if (tr)
            FREE(tr);
        w[k] = i1;
        w[k].instance_id = ids[6 + k];
        w[k].started_at_ms = wrong[k];
    }
    bres = NULL;
    HLT_CHECK(transition_batch(witems, 2, &bres) == ORR_OK && bres->n_results == 2 &&
                  bres->results[0]->code == 0 && bres->results[1]->code == 0 &&
                  bres->results[0]->instance->started_at_ms == dispatched &&
                  bres->results[1]->instance->started_at_ms > dispatched &&
                  bres->results[1]->instance->started_at_ms <=
                      bres->results[1]->instance->finished_at_ms,
              "batch: the starts bounded by the dispatch and by now");
    if (bres)
        FREE(bres);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM events WHERE instance_id IN (%lld, %lld, %lld)"
             " AND payload->>'from' = 'dispatched' AND payload->>'to' IN ('success', 'failed')",
             (long long)ids[0], (long long)ids[1], (long long)ids[2]);
    r = hlt_sql(db, sql);
    HLT_CHECK(atoi(PQgetvalue(r, 0, 0)) == 3, "one event per run: dispatched -> its end");
    PQclear(r);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM attempts WHERE instance_id = %lld AND state = 'failed'"
             " AND exit_code = 3",
             (long long)ids[2]);
    r = hlt_sql(db, sql);
    HLT_CHECK(atoi(PQgetvalue(r, 0, 0)) == 1, "the attempt records the end and exit code");
    PQclear(r);
}

int main(void)
{
    hlt_db db;
    hlt_db_create(&db);
    test_migrations(&db);
    test_exit_code_migration();
    test_schema_guard();
    hlt_server s;
    if (hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_api");
    }
    cl = hlt_client(&s, NULL);
    test_auth_health(&s);
    test_tasks();
    test_instances(&db);
    test_through_running(&db);
    test_users(&db);
    HLT_CHECK(hlt_exit_code_drift(&db) == 0, "each instance's exit code is its attempt's");
    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_api");
}
