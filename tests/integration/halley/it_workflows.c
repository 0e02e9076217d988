/*
 * it_workflows.c - halleyd's workflow objects and the admin lists end to
 * end: a workflow's description (kept by a put without one), pause and
 * resume (who and when, refused twice in a row, the audit record and the
 * event naming the tasks, the tasks ListPausedTasks answers), task name
 * completion (prefix matches first, LIKE wildcards as text, limits), teams
 * with their members, the instance list's text search, and the migration
 * that gives task graphs linked by upstreams a workflow row (its data step
 * run again on graphs made for it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_embed.h"
#include "hlt.h"

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)

typedef Orrery__Halley__V1__Workflow Workflow;

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

static long long sql_i64(const char *q)
{
    PGresult *r = hlt_sql(&db, q);
    long long v = PQntuples(r) > 0 ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return v;
}

static Workflow *put_wf(const char *name, const char *team, int64_t *ids, size_t n,
                        const char *desc, orr_status code, const char *field)
{
    Orrery__Halley__V1__PutWorkflowRequest rq = ORRERY__HALLEY__V1__PUT_WORKFLOW_REQUEST__INIT;
    rq.name = (char *)name;
    rq.team = (char *)team;
    rq.task_ids = ids;
    rq.n_task_ids = n;
    rq.actor = "user:ann";
    if (desc) {
        rq.set_description = 1;
        rq.description = (char *)desc;
    }
    Workflow *w = NULL;
    want(hlt_call(cl, "PutWorkflow", &rq, &w, &err), code, field, name);
    return w;
}

static Workflow *set_paused(const char *name, int paused, orr_status code, const char *field)
{
    Orrery__Halley__V1__SetWorkflowPausedRequest rq =
        ORRERY__HALLEY__V1__SET_WORKFLOW_PAUSED_REQUEST__INIT;
    rq.name = (char *)name;
    rq.paused = paused;
    rq.actor = "user:ann";
    Workflow *w = NULL;
    want(hlt_call(cl, "SetWorkflowPaused", &rq, &w, &err), code, field,
         paused ? "pause" : "resume");
    return w;
}

static Orrery__Halley__V1__ListPausedTasksResponse *paused_tasks(void)
{
    Orrery__Halley__V1__ListPausedTasksRequest rq =
        ORRERY__HALLEY__V1__LIST_PAUSED_TASKS_REQUEST__INIT;
    Orrery__Halley__V1__ListPausedTasksResponse *r = NULL;
    want(hlt_call(cl, "ListPausedTasks", &rq, &r, &err), ORR_OK, NULL, "ListPausedTasks");
    return r;
}

static void test_workflows(int64_t a, int64_t b, int64_t c)
{
    int64_t ab[2] = {a, b}, bc[2] = {b, c};
    char big[2100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    FREE(put_wf("wf1", "ops", ab, 2, big, ORR_EINVAL, "description"));
    HLT_CHECK(sql_i64("SELECT count(*) FROM workflows") == 0, "a refused put stores nothing");
    Workflow *w = put_wf("wf1", "ops", ab, 2, "Loads the day.", ORR_OK, NULL);
    HLT_CHECK(w && strcmp(w->description, "Loads the day.") == 0 && !w->paused &&
                  w->paused_at_ms == 0 && w->updated_at_ms > 0,
              "described, not paused");
    FREE(w);
    w = put_wf("wf1", "ops", ab, 2, NULL, ORR_OK, NULL);
    HLT_CHECK(w && strcmp(w->description, "Loads the day.") == 0, "a put without one keeps it");
    FREE(w);
    FREE(put_wf("wf2", "dev", bc, 2, NULL, ORR_OK, NULL));

    FREE(set_paused("nope", 1, ORR_ENOTFOUND, "name"));
    FREE(set_paused("bad name", 1, ORR_EINVAL, "name"));
    FREE(set_paused("wf1", 0, ORR_ESTATE, "paused"));
    Orrery__Halley__V1__ListPausedTasksResponse *pt = paused_tasks();
    HLT_CHECK(pt && pt->n_tasks == 0, "nothing paused yet");
    FREE(pt);
    long long ev0 = sql_i64("SELECT count(*) FROM events WHERE kind LIKE 'workflow.%'");
    int64_t before = hlt_now_ms();
    w = set_paused("wf1", 1, ORR_OK, NULL);
    HLT_CHECK(w && w->paused && strcmp(w->paused_by, "user:ann") == 0 &&
                  w->paused_at_ms >= before - 5000 && w->n_task_ids == 2,
              "paused by ann, now");
    FREE(w);
    FREE(set_paused("wf1", 1, ORR_ESTATE, "paused"));
    HLT_CHECK(sql_i64("SELECT count(*) FROM audit_log WHERE action = 'workflow.pause' AND "
                      "object = 'workflow:wf1' AND actor = 'user:ann'") == 1,
              "one audit record for the one pause");
    char q[256];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM events WHERE kind = 'workflow.paused' AND "
             "payload->'task_ids' = '[%lld,%lld]'::jsonb",
             (long long)a, (long long)b);
    HLT_CHECK(sql_i64(q) == 1, "the event names the tasks");
    HLT_CHECK(sql_i64("SELECT count(*) FROM events WHERE kind LIKE 'workflow.%'") == ev0 + 1,
              "refusals emit nothing");
    pt = paused_tasks();
    HLT_CHECK(pt && pt->n_tasks == 2 && pt->tasks[0]->task_id == a && pt->tasks[1]->task_id == b &&
                  strcmp(pt->tasks[0]->workflow, "wf1") == 0 &&
                  strcmp(pt->tasks[0]->paused_by, "user:ann") == 0,
              "the paused workflow's tasks, once each");
    FREE(pt);
    /* b is in wf1 (paused) and wf2; pausing wf2 too lists b once, c now too */
    FREE(set_paused("wf2", 1, ORR_OK, NULL));
    pt = paused_tasks();
    HLT_CHECK(pt && pt->n_tasks == 3 && strcmp(pt->tasks[1]->workflow, "wf1") == 0,
              "a task in two paused workflows is listed once (the first by name)");
    FREE(pt);
    /* a put keeps the pause and says so in its event */
    w = put_wf("wf2", "dev", bc, 1, NULL, ORR_OK, NULL);
    HLT_CHECK(w && w->paused && w->n_task_ids == 1, "a put keeps the pause");
    FREE(w);
    HLT_CHECK(sql_i64("SELECT count(*) FROM events WHERE kind = 'workflow.updated' AND "
                      "(payload->>'paused')::bool") == 1,
              "the put's event says the workflow is paused");
    w = set_paused("wf1", 0, ORR_OK, NULL);
    HLT_CHECK(w && !w->paused && w->paused_by[0] == 0 && w->paused_at_ms == 0, "resumed");
    FREE(w);
    FREE(set_paused("wf2", 0, ORR_OK, NULL));
    pt = paused_tasks();
    HLT_CHECK(pt && pt->n_tasks == 0, "nothing held after the resumes");
    FREE(pt);
    HLT_CHECK(sql_i64("SELECT count(*) FROM audit_log WHERE action = 'workflow.resume'") == 2,
              "resumes audited");
}

static Orrery__Halley__V1__SuggestTasksResponse *suggest(const char *query, int limit,
                                                         orr_status code, const char *field)
{
    Orrery__Halley__V1__SuggestTasksRequest rq = ORRERY__HALLEY__V1__SUGGEST_TASKS_REQUEST__INIT;
    rq.query = (char *)query;
    rq.limit = limit;
    Orrery__Halley__V1__SuggestTasksResponse *r = NULL;
    want(hlt_call(cl, "SuggestTasks", &rq, &r, &err), code, field, query);
    return r;
}

static void test_suggest(void)
{
    Orrery__Halley__V1__SuggestTasksResponse *r = suggest("WF_", 0, ORR_OK, NULL);
    HLT_CHECK(r && r->n_tasks == 3 && strcmp(r->tasks[0]->name, "wf_a") == 0 &&
                  strcmp(r->tasks[0]->team, "ops") == 0,
              "prefix matches, case-insensitive, \"_\" as text");
    FREE(r);
    r = suggest("b", 0, ORR_OK, NULL);
    HLT_CHECK(r && r->n_tasks == 2 && strcmp(r->tasks[0]->name, "big_b") == 0 &&
                  strcmp(r->tasks[1]->name, "wf_b") == 0,
              "the prefix match first, then the substring");
    FREE(r);
    r = suggest("", 2, ORR_OK, NULL);
    HLT_CHECK(r && r->n_tasks == 2, "the limit holds");
    FREE(r);
    r = suggest("%", 0, ORR_OK, NULL);
    HLT_CHECK(r && r->n_tasks == 0, "\"%%\" is text");
    FREE(r);
    FREE(suggest("x", 101, ORR_EINVAL, "limit"));
    FREE(suggest("x", -1, ORR_EINVAL, "limit"));
    char big[200];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    FREE(suggest(big, 0, ORR_EINVAL, "query"));
}

static void test_teams(void)
{
    Orrery__Halley__V1__ListTeamsRequest rq = ORRERY__HALLEY__V1__LIST_TEAMS_REQUEST__INIT;
    rq.with_members = 1;
    Orrery__Halley__V1__ListTeamsResponse *r = NULL;
    want(hlt_call(cl, "ListTeams", &rq, &r, &err), ORR_OK, NULL, "ListTeams");
    HLT_CHECK(r && r->n_teams == 2 && strcmp(r->teams[0]->name, "dev") == 0 &&
                  r->teams[0]->n_members == 1 && strcmp(r->teams[0]->members[0], "bot") == 0 &&
                  r->teams[1]->n_members == 2 && strcmp(r->teams[1]->members[0], "ann") == 0 &&
                  strcmp(r->teams[1]->members[1], "bot") == 0,
              "teams with their members, sorted");
    FREE(r);
    rq.with_members = 0;
    want(hlt_call(cl, "ListTeams", &rq, &r, &err), ORR_OK, NULL, "ListTeams");
    HLT_CHECK(r && r->n_teams == 2 && r->teams[1]->n_members == 0, "without members");
    FREE(r);
}

static size_t search(const char *query, int desc, orr_status code, const char *field)
{
    Orrery__Halley__V1__ListInstancesRequest rq = ORRERY__HALLEY__V1__LIST_INSTANCES_REQUEST__INIT;
    rq.query = (char *)query;
    rq.descending = desc;
    Orrery__Halley__V1__ListInstancesResponse *r = NULL;
    want(hlt_call(cl, "ListInstances", &rq, &r, &err), code, field, query);
    size_t n = r ? r->n_instances : 0;
    if (r)
        FREE(r);
    return n;
}

static void test_instance_search(int64_t a, int64_t b)
{
    Orrery__Halley__V1__CreateInstance ci[3], *cp[3];
    int64_t tasks[3] = {a, a, b};
    for (int i = 0; i < 3; i++) {
        orrery__halley__v1__create_instance__init(&ci[i]);
        ci[i].task_id = tasks[i];
        ci[i].schedule_time_ms = 1767225600000LL + i * 3600000LL;
        cp[i] = &ci[i];
    }
    Orrery__Halley__V1__CreateInstancesRequest rq =
        ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
    rq.instances = cp;
    rq.n_instances = 3;
    Orrery__Halley__V1__CreateInstancesResponse *r = NULL;
    want(hlt_call(cl, "CreateInstances", &rq, &r, &err), ORR_OK, NULL, "CreateInstances");
    int64_t first = r && r->n_results ? r->results[0]->instance->id : 0;
    if (r)
        FREE(r);
    for (int desc = 0; desc < 2; desc++) {
        HLT_CHECK(search("WF_A", desc, ORR_OK, NULL) == 2, "by task name (desc %d)", desc);
        HLT_CHECK(search("wf_", desc, ORR_OK, NULL) == 3, "\"_\" as text (desc %d)", desc);
        HLT_CHECK(search("%", desc, ORR_OK, NULL) == 0, "\"%%\" as text (desc %d)", desc);
        HLT_CHECK(search("", desc, ORR_OK, NULL) == 3, "no search (desc %d)", desc);
    }
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)first);
    HLT_CHECK(search(id, 0, ORR_OK, NULL) >= 1, "by id");
    char big[200];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    search(big, 0, ORR_EINVAL, "query");
}

/* The task graphs that were workflows only by their upstreams: 0006's data
 * step (from its temporary table on), run again on graphs made here. */
static void test_graph_migration(void)
{
    const orr_embedded_file *f = NULL;
    for (unsigned i = 0; i < hl_migration_files_count; i++)
        if (hl_migration_files[i].name &&
            strcmp(hl_migration_files[i].name, "0006_workflow_objects.sql") == 0)
            f = &hl_migration_files[i];
    HLT_CHECK(f != NULL, "0006 is embedded");
    if (!f)
        return;
    char *sql = strndup((const char *)f->data, f->len);
    const char *step = strstr(sql, "CREATE TEMP TABLE");
    HLT_CHECK(step != NULL, "0006 has its data step");
    hlt_save_task(cl, 0, "mg_a", "ops", NULL, ORR_OK, NULL, &err);
    hlt_save_task(cl, 0, "mg_b", "ops", "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"mg_a\"}]",
                  ORR_OK, NULL, &err);
    hlt_save_task(cl, 0, "mg_c", "dev", "\"upstreams\":[{\"kind\":\"weak\",\"task\":\"mg_b\"}]",
                  ORR_OK, NULL, &err);
    int64_t x = hlt_save_task(cl, 0, "mg_x", "dev", NULL, ORR_OK, NULL, &err);
    hlt_save_task(cl, 0, "mg_y", "dev", "\"upstreams\":[{\"kind\":\"strong\",\"task\":\"mg_x\"}]",
                  ORR_OK, NULL, &err);
    hlt_save_task(cl, 0, "mg_lone", "dev", NULL, ORR_OK, NULL, &err);
    PQclear(hlt_sql(&db, "DELETE FROM workflow_tasks"));
    PQclear(hlt_sql(&db, "DELETE FROM workflows"));
    FREE(put_wf("given", "dev", &x, 1, NULL, ORR_OK, NULL));
    if (step) {
        size_t n = strlen(step) + 32;
        char *tx = malloc(n);
        snprintf(tx, n, "BEGIN;\n%sCOMMIT;", step);
        PQclear(hlt_sql(&db, tx));
        free(tx);
    }
    free(sql);
    HLT_CHECK(sql_i64("SELECT count(*) FROM workflows") == 2,
              "one new workflow (mg_x's group is in one)");
    HLT_CHECK(sql_i64("SELECT count(*) FROM workflows w JOIN teams t ON t.id = w.team_id"
                      " WHERE w.name = 'mg_a' AND t.name = 'ops' AND w.description <> ''") == 1,
              "named after its first task, owned by that task's team, described");
    HLT_CHECK(sql_i64("SELECT count(*) FROM workflow_tasks wt JOIN workflows w ON w.id ="
                      " wt.workflow_id JOIN tasks t ON t.id = wt.task_id WHERE w.name = 'mg_a'"
                      " AND t.name IN ('mg_a', 'mg_b', 'mg_c')") == 3 &&
                  sql_i64("SELECT count(*) FROM workflow_tasks wt JOIN workflows w ON w.id ="
                          " wt.workflow_id WHERE w.name = 'mg_a'") == 3,
              "the whole group (strong and weak links), nothing else");
    HLT_CHECK(sql_i64("SELECT count(*) FROM workflow_tasks wt JOIN workflows w ON w.id ="
                      " wt.workflow_id WHERE w.name = 'given'") == 1,
              "a group with a task in a workflow already is left alone");
}

int main(void)
{
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    hlt_server s;
    if (hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_workflows");
    }
    cl = hlt_client(&s, NULL);
    hlt_team(cl, "ops");
    hlt_team(cl, "dev");
    char *ops[1] = {"ops"}, *both[2] = {"ops", "dev"};
    const char *names[2] = {"ann", "bot"};
    char **teams[2] = {ops, both};
    size_t nteams[2] = {1, 2};
    for (int i = 0; i < 2; i++) {
        Orrery__Halley__V1__CreateUserRequest rq = ORRERY__HALLEY__V1__CREATE_USER_REQUEST__INIT;
        rq.name = (char *)names[i];
        rq.password = "correct horse";
        rq.role = ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER;
        rq.teams = teams[i];
        rq.n_teams = nteams[i];
        ProtobufCMessage *u = NULL;
        want(hlt_call(cl, "CreateUser", &rq, &u, &err), ORR_OK, NULL, names[i]);
        if (u)
            FREE(u);
    }
    int64_t a = hlt_save_task(cl, 0, "wf_a", "ops", NULL, ORR_OK, NULL, &err);
    int64_t b = hlt_save_task(cl, 0, "wf_b", "ops", NULL, ORR_OK, NULL, &err);
    int64_t c = hlt_save_task(cl, 0, "wf_c", "dev", NULL, ORR_OK, NULL, &err);
    hlt_save_task(cl, 0, "big_b", "dev", NULL, ORR_OK, NULL, &err);

    test_workflows(a, b, c);
    test_suggest();
    test_teams();
    test_instance_search(a, b);
    test_graph_migration();

    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_workflows");
}
