/*
 * hl_api_workflows.c - workflows (named sets of tasks of one team):
 * PutWorkflow, GetWorkflow and ListWorkflows. A put writes the workflow, its
 * tasks, an audit record and a "workflow.updated" event in one transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "orr_name.h"
#include "orr_log.h"

#define HL_MAX_WORKFLOW_TASKS 10000

typedef Orrery__Halley__V1__Workflow hl_pb_workflow;

/* Columns: id, name, team, task ids (comma-joined, ascending), created_at. */
#define HL_WORKFLOW_COLS                                                                           \
    "w.id, w.name, tm.name, coalesce(array_to_string(array(SELECT wt.task_id"                      \
    " FROM workflow_tasks wt WHERE wt.workflow_id = w.id ORDER BY wt.task_id), ','), ''), " HL_MS( \
        "w.created_at")

static hl_stmt q_team_id = HL_STMT("SELECT id FROM teams WHERE name = $1");
static hl_stmt q_upsert_workflow =
    HL_STMT("INSERT INTO workflows (name, team_id) VALUES ($1, $2::int8)"
            " ON CONFLICT (name) DO UPDATE SET team_id = excluded.team_id RETURNING id");
/* First position (1-based) of $1 whose task does not exist. */
static hl_stmt q_missing_task =
    HL_STMT("SELECT x.ord FROM unnest($1::int8[]) WITH ORDINALITY AS x(id, ord)"
            " WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = x.id) ORDER BY x.ord LIMIT 1");
static hl_stmt q_clear_workflow =
    HL_STMT("DELETE FROM workflow_tasks WHERE workflow_id = $1::int8");
static hl_stmt q_fill_workflow = HL_STMT(
    "INSERT INTO workflow_tasks (workflow_id, task_id) SELECT $1::int8, unnest($2::int8[])");
/* $1 id (0 = any), $2 name ("" = any), $3 team ("" = any). */
static hl_stmt q_list_workflows =
    HL_STMT("SELECT " HL_WORKFLOW_COLS " FROM workflows w JOIN teams tm ON tm.id = w.team_id"
            " WHERE ($1::int8 = 0 OR w.id = $1::int8) AND ($2 = '' OR w.name = $2)"
            " AND ($3 = '' OR tm.name = $3) ORDER BY w.name");

#define HL_PACKAGE_COLS

/* Parse "1,2,3" into an int64 array in the arena. */
static int64_t *hl__split_ids(orr_arena *a, const char *joined, size_t *n_out)
{
    size_t n = joined[0] ? 1 : 0;
    for (const char *p = joined; *p; p++)
        n += *p == ',';
    int64_t *out = hl_alloc_n(a, sizeof *out, n);
    const char *p = joined;
    for (size_t i = 0; i < n; i++) {
        char *end;
        out[i] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    *n_out = n;
    return out;
}

/* ------------------------------------------------------------ workflows */

static void hl__fill_workflow(orr_arena *a, const PGresult *r, int row, hl_pb_workflow *w)
{
    orrery__halley__v1__workflow__init(w);
    w->id = hl_val_i64(r, row, 0);
    w->name = (char *)hl_val(r, row, 1);
    w->team = (char *)hl_val(r, row, 2);
    w->task_ids = hl__split_ids(a, hl_val(r, row, 3), &w->n_task_ids);
    w->created_at_ms = hl_val_i64(r, row, 4);
}

HL_UNARY(hl_api_put_workflow)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutWorkflowRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (!hl_is_name(rq->team, 128))
        return orr_err_set(err, ORR_EINVAL, "team", "a team name is required");
    if (rq->n_task_ids > HL_MAX_WORKFLOW_TASKS)
        return orr_err_set(err, ORR_EINVAL, "task_ids", "at most %d tasks", HL_MAX_WORKFLOW_TASKS);
    for (size_t i = 0; i < rq->n_task_ids; i++) {
        if (rq->task_ids[i] <= 0)
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "task_ids[%zu]", i),
                               "must be positive");
        for (size_t j = 0; j < i; j++) /* quadratic, bounded by HL_MAX_WORKFLOW_TASKS */
            if (rq->task_ids[j] == rq->task_ids[i])
                return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "task_ids[%zu]", i),
                                   "task %lld is listed twice", (long long)rq->task_ids[i]);
    }
    const char *ids = hl_id_array(a, rq->task_ids, rq->n_task_ids);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *pt[1] = {rq->team};
    const char *pm[1] = {ids};
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_team_id, 1, pt, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "team", "no such team \"%s\"", rq->team);
        goto out;
    }
    const char *pw[2] = {rq->name, hl_val(r, 0, 0)};
    if ((s = hl_db_query(c, a, &q_missing_task, 1, pm, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) > 0) {
        long long pos = hl_val_i64(r, 0, 0) - 1;
        s = orr_err_set(err, ORR_ENOTFOUND, orr_arena_sprintf(a, "task_ids[%lld]", pos),
                        "no such task %lld", (long long)rq->task_ids[pos]);
        goto out;
    }
    if ((s = hl_db_query(c, a, &q_upsert_workflow, 2, pw, &r, err)) != ORR_OK)
        goto out;
    const char *wid = hl_val(r, 0, 0);
    const char *pf[2] = {wid, ids};
    const char *pl[3] = {wid, "", ""};
    if ((s = hl_db_query(c, a, &q_clear_workflow, 1, pf, NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_fill_workflow, 2, pf, NULL, err)) != ORR_OK ||
        (s = hl_audit(c, a, rq->actor, "workflow.put",
                      orr_arena_sprintf(a, "workflow:%s", rq->name),
                      orr_arena_sprintf(a, "{\"team\":%s,\"tasks\":%zu}", hl_jstr(a, rq->team),
                                        rq->n_task_ids),
                      err)) != ORR_OK ||
        (s = hl_emit(c, a, "workflow.updated", 0, 0, NULL,
                     orr_arena_sprintf(a, "{\"id\":%s,\"name\":%s,\"team\":%s}", wid,
                                       hl_jstr(a, rq->name), hl_jstr(a, rq->team)),
                     NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_list_workflows, 3, pl, &r, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    hl_pb_workflow *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_workflow(a, r, 0, o);
    *resp = &o->base;
    ORR_INFO("workflow saved", "workflow_id=%lld name=%s team=%s tasks=%zu", (long long)o->id,
             orr_log_q(rq->name), orr_log_q(rq->team), rq->n_task_ids);
out:
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_get_workflow)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetWorkflowRequest);
    orr_status bad = hl_id_or_name(rq->id, rq->name, err);
    if (bad != ORR_OK)
        return bad;
    const char *p[3] = {hl_i64s(a, rq->id), rq->name, ""};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_workflows, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, rq->id ? "id" : "name", "no such workflow");
    hl_pb_workflow *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_workflow(a, r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_workflows)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListWorkflowsRequest);
    if (rq->team[0] && !hl_is_name(rq->team, 128))
        return orr_err_set(err, ORR_EINVAL, "team", "not a team name");
    const char *p[3] = {"0", "", rq->team};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_workflows, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListWorkflowsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_workflows_response__init(o);
    int n = PQntuples(r);
    o->n_workflows = (size_t)n;
    o->workflows = hl_alloc_n(a, sizeof *o->workflows, (size_t)n);
    hl_pb_workflow *ws = hl_alloc_n(a, sizeof *ws, (size_t)n);
    for (int i = 0; i < n; i++) {
        hl__fill_workflow(a, r, i, &ws[i]);
        o->workflows[i] = &ws[i];
    }
    *resp = &o->base;
    return ORR_OK;
}
