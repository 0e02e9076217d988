/*
 * it_history.c - halleyd's run history of a workflow end to end:
 * ListWorkflowRuns (cycles newest first from the workflow's tasks only, the
 * default of 30 and `more`, paging with before_ms, one cell per instance)
 * and GetWorkflowRun (each task's instance in the cycle with one span per
 * attempt: a failed first attempt and a successful rerun), and the bad
 * input of both (field named, nothing found for an unknown workflow).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlt.h"

#define FREE(m) protobuf_c_message_free_unpacked((ProtobufCMessage *)(m), NULL)
#define HOUR    3600000LL
#define T0      1767225600000LL /* 2026-01-01T00:00:00Z */

typedef Orrery__Halley__V1__ListWorkflowRunsResponse Runs;
typedef Orrery__Halley__V1__WorkflowRun Run;

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

static Runs *runs(const char *name, int limit, int64_t before, orr_status code, const char *field)
{
    Orrery__Halley__V1__ListWorkflowRunsRequest rq =
        ORRERY__HALLEY__V1__LIST_WORKFLOW_RUNS_REQUEST__INIT;
    rq.name = (char *)name;
    rq.limit = limit;
    rq.before_ms = before;
    Runs *r = NULL;
    want(hlt_call(cl, "ListWorkflowRuns", &rq, &r, &err), code, field, "ListWorkflowRuns");
    return r;
}

static Run *run(const char *name, int64_t cycle, orr_status code, const char *field)
{
    Orrery__Halley__V1__GetWorkflowRunRequest rq =
        ORRERY__HALLEY__V1__GET_WORKFLOW_RUN_REQUEST__INIT;
    rq.name = (char *)name;
    rq.cycle_ms = cycle;
    Run *r = NULL;
    want(hlt_call(cl, "GetWorkflowRun", &rq, &r, &err), code, field, "GetWorkflowRun");
    return r;
}

/* Instances of task at T0 + k hours for k in [from, to); ids into out. */
static void make(int64_t task, int from, int to, int64_t *out)
{
    for (int k = from; k < to; k++) {
        Orrery__Halley__V1__CreateInstance ci = ORRERY__HALLEY__V1__CREATE_INSTANCE__INIT;
        ci.task_id = task;
        ci.schedule_time_ms = T0 + k * HOUR;
        ci.actor = "test";
        Orrery__Halley__V1__CreateInstance *p = &ci;
        Orrery__Halley__V1__CreateInstancesRequest rq =
            ORRERY__HALLEY__V1__CREATE_INSTANCES_REQUEST__INIT;
        rq.instances = &p;
        rq.n_instances = 1;
        Orrery__Halley__V1__CreateInstancesResponse *r = NULL;
        want(hlt_call(cl, "CreateInstances", &rq, &r, &err), ORR_OK, NULL, "CreateInstances");
        if (out)
            out[k - from] =
                r && r->n_results && r->results[0]->instance ? r->results[0]->instance->id : 0;
        if (r)
            FREE(r);
    }
}

static void move(int64_t id, int from, int to)
{
    Orrery__Halley__V1__TransitionRequest rq = ORRERY__HALLEY__V1__TRANSITION_REQUEST__INIT;
    rq.instance_id = id;
    rq.expected_state = from;
    rq.new_state = to;
    rq.actor = "test";
    rq.executor = "ex-1";
    Orrery__Halley__V1__TransitionResult *r = NULL;
    want(hlt_call(cl, "TransitionInstance", &rq, &r, &err), ORR_OK, NULL, "TransitionInstance");
    if (r)
        FREE(r);
}

#define S(x) ORRERY__HALLEY__V1__INSTANCE_STATE__INSTANCE_STATE_##x

int main(void)
{
    hlt_db_create(&db);
    HLT_CHECK(hlt_migrate(db.dsn) == 0, "migrate");
    hlt_server s;
    if (hlt_start(&s, db.dsn, NULL, NULL) != 0) {
        HLT_CHECK(0, "halleyd started");
        hlt_db_drop(&db);
        return hlt_finish("halley_it_history");
    }
    cl = hlt_client(&s, NULL);
    hlt_team(cl, "ops");
    int64_t a = hlt_save_task(cl, 0, "hist_a", "ops", NULL, ORR_OK, NULL, &err);
    int64_t b = hlt_save_task(cl, 0, "hist_b", "ops", NULL, ORR_OK, NULL, &err);
    int64_t x = hlt_save_task(cl, 0, "hist_x", "ops", NULL, ORR_OK, NULL, &err);
    Orrery__Halley__V1__PutWorkflowRequest pw = ORRERY__HALLEY__V1__PUT_WORKFLOW_REQUEST__INIT;
    int64_t ids[2] = {a, b};
    pw.name = "hist";
    pw.team = "ops";
    pw.task_ids = ids;
    pw.n_task_ids = 2;
    pw.actor = "test";
    ProtobufCMessage *w = NULL;
    want(hlt_call(cl, "PutWorkflow", &pw, &w, &err), ORR_OK, NULL, "PutWorkflow");
    if (w)
        FREE(w);

    /* No instance yet: the tasks, no cycle. */
    Runs *r = runs("hist", 0, 0, ORR_OK, NULL);
    HLT_CHECK(r && r->n_tasks == 2 && r->n_cycles_ms == 0 && r->n_cells == 0 && !r->more,
              "a workflow without runs");
    if (r)
        FREE(r);

    /* a in 35 hours, b in the last 3; x (outside the workflow) at hour 40. */
    int64_t ia[35], ib[3];
    make(a, 0, 35, ia);
    make(b, 32, 35, ib);
    make(x, 40, 41, NULL);
    r = runs("hist", 0, 0, ORR_OK, NULL);
    HLT_CHECK(r && r->n_cycles_ms == 30 && r->more, "30 cycles by default, more behind");
    HLT_CHECK(r && r->n_cycles_ms && r->cycles_ms[0] == T0 + 34 * HOUR,
              "newest first, and hour 40 (a task outside the workflow) is not a cycle");
    HLT_CHECK(r && r->n_cells == 33, "30 cells of a, 3 of b (got %zu)", r ? r->n_cells : 0);
    int ok = r != NULL;
    for (size_t i = 0; r && i < r->n_cells; i++) {
        const Orrery__Halley__V1__RunCell *c = r->cells[i];
        int64_t t = r->tasks[c->task]->id, when = r->cycles_ms[c->cycle];
        int k = (int)((when - T0) / HOUR);
        ok &= (t == a && c->instance_id == ia[k]) ||
              (t == b && k >= 32 && c->instance_id == ib[k - 32]);
        ok &= c->state == S(WAITING) && c->attempt == 1;
    }
    HLT_CHECK(ok, "each cell is its task's instance of its cycle");
    int64_t oldest = r && r->n_cycles_ms ? r->cycles_ms[r->n_cycles_ms - 1] : 0;
    if (r)
        FREE(r);
    r = runs("hist", 0, oldest, ORR_OK, NULL);
    HLT_CHECK(r && r->n_cycles_ms == 5 && !r->more && r->cycles_ms[0] == T0 + 4 * HOUR &&
                  r->n_cells == 5,
              "the page before: the 5 oldest cycles, the last page");
    if (r)
        FREE(r);
    r = runs("hist", 3, 0, ORR_OK, NULL);
    HLT_CHECK(r && r->n_cycles_ms == 3 && r->more && r->n_cells == 6, "limit 3: 3 cycles, 6 cells");
    if (r)
        FREE(r);

    /* b's newest: failed, then a rerun that succeeded; a's newest never ran. */
    int64_t i = ib[2];
    move(i, S(WAITING), S(READY));
    move(i, S(READY), S(DISPATCHED));
    move(i, S(DISPATCHED), S(RUNNING));
    move(i, S(RUNNING), S(FAILED));
    move(i, S(FAILED), S(WAITING));
    move(i, S(WAITING), S(READY));
    move(i, S(READY), S(DISPATCHED));
    move(i, S(DISPATCHED), S(RUNNING));
    move(i, S(RUNNING), S(SUCCESS));
    Run *one = run("hist", T0 + 34 * HOUR, ORR_OK, NULL);
    HLT_CHECK(one && one->n_tasks == 2 && one->n_instances == 2 && one->n_edges == 0,
              "both tasks have an instance in the newest cycle");
    for (size_t k = 0; one && k < one->n_instances; k++) {
        const Orrery__Halley__V1__RunInstance *in = one->instances[k];
        if (in->task_id == a) {
            HLT_CHECK(in->instance_id == ia[34] && in->state == S(WAITING) && in->n_spans == 0,
                      "a waits: no span");
            continue;
        }
        HLT_CHECK(in->instance_id == i && in->state == S(SUCCESS) && in->attempt == 2 &&
                      in->n_spans == 2,
                  "b: two attempts (%zu spans)", in->n_spans);
        if (in->n_spans != 2)
            continue;
        const Orrery__Halley__V1__RunSpan *s1 = in->spans[0], *s2 = in->spans[1];
        HLT_CHECK(s1->attempt == 1 && s1->state == S(FAILED) && s1->queued_ms > 0 &&
                      s1->queued_ms <= s1->started_ms && s1->started_ms <= s1->ended_ms,
                  "attempt 1: queued, ran, failed (state %d)", s1->state);
        HLT_CHECK(s2->attempt == 2 && s2->state == S(SUCCESS) && s2->queued_ms >= s1->ended_ms &&
                      s2->queued_ms <= s2->started_ms && s2->started_ms <= s2->ended_ms,
                  "attempt 2: queued after attempt 1 ended, ran, succeeded");
    }
    if (one)
        FREE(one);
    one = run("hist", T0 + 100 * HOUR, ORR_OK, NULL);
    HLT_CHECK(one && one->n_tasks == 2 && one->n_instances == 0, "a cycle without instances");
    if (one)
        FREE(one);

    /* Bad input. */
    FREE(runs("nope", 0, 0, ORR_ENOTFOUND, "name"));
    FREE(runs("", 0, 0, ORR_EINVAL, "name"));
    FREE(runs("hist", 101, 0, ORR_EINVAL, "limit"));
    FREE(runs("hist", -1, 0, ORR_EINVAL, "limit"));
    FREE(runs("hist", 0, -5, ORR_EINVAL, "before_ms"));
    FREE(run("nope", T0, ORR_ENOTFOUND, "name"));
    FREE(run("bad name", T0, ORR_EINVAL, "name"));
    FREE(run("hist", 0, ORR_EINVAL, "cycle_ms"));

    orr_rpc_client_destroy(cl);
    HLT_CHECK(hlt_stop(&s) == 0, "halleyd exits 0 on SIGTERM");
    hlt_db_drop(&db);
    return hlt_finish("halley_it_history");
}
