/*
 * hl_api_workflows.c - workflows (named sets of tasks of one team, with a
 * description): PutWorkflow, GetWorkflow, ListWorkflows, SetWorkflowPaused
 * and ListPausedTasks. A put writes the workflow, its tasks, an audit record
 * and a "workflow.updated" event in one transaction; a pause or resume
 * writes the flag (who, when), an audit record and a "workflow.paused" /
 * "workflow.resumed" event naming the tasks, on which keplerd re-reads the
 * paused tasks (ListPausedTasks) and holds or releases their instances.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "orr_name.h"
#include "orr_log.h"

#define HL_MAX_WORKFLOW_TASKS 10000

typedef Orrery__Halley__V1__Workflow hl_pb_workflow;

/* Columns: id, name, team, task ids (comma-joined, ascending), created_at,
 * description, paused, paused_by, paused_at, updated_at. */
#define HL_WORKFLOW_COLS                                                                           \
    "w.id, w.name, tm.name, coalesce(array_to_string(array(SELECT wt.task_id"                      \
    " FROM workflow_tasks wt WHERE wt.workflow_id = w.id ORDER BY wt.task_id), ','), ''), " HL_MS( \
        "w.created_at") ", w.description, w.paused, w.paused_by, coalesce(" HL_MS("w.paused_at") ", 0), " HL_MS("w.updated_at")

#define HL_MAX_DESCRIPTION 2000

static hl_stmt q_team_id = HL_STMT("SELECT id FROM teams WHERE name = $1");
/* $3: set the description to $4. */
static hl_stmt q_upsert_workflow =
    HL_STMT("INSERT INTO workflows (name, team_id, description)"
            " VALUES ($1, $2::int8, CASE WHEN $3::bool THEN $4 ELSE '' END)"
            " ON CONFLICT (name) DO UPDATE SET team_id = excluded.team_id, updated_at = now(),"
            " description = CASE WHEN $3::bool THEN $4 ELSE workflows.description END"
            " RETURNING id, paused");
/* $1 name, $2 paused: the row moves only if it is not in that state yet. */
static hl_stmt q_set_paused = HL_STMT(
    "UPDATE workflows SET paused = $2::bool, paused_by = CASE WHEN $2::bool THEN $3 ELSE '' END,"
    " paused_at = CASE WHEN $2::bool THEN now() END, updated_at = now()"
    " WHERE name = $1 AND paused <> $2::bool RETURNING id");
static hl_stmt q_workflow_state = HL_STMT("SELECT paused FROM workflows WHERE name = $1");
/* Every task held by a paused workflow, once (the first such workflow by name). */
static hl_stmt q_paused_tasks =
    HL_STMT("SELECT DISTINCT ON (wt.task_id) wt.task_id, w.name, w.paused_by, " HL_MS(
        "w.paused_at") " FROM workflows w JOIN workflow_tasks wt ON wt.workflow_id = w.id WHERE "
                       "w.paused"
                       " ORDER BY wt.task_id, w.name");
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
    w->description = (char *)hl_val(r, row, 5);
    w->paused = hl_val_bool(r, row, 6);
    w->paused_by = (char *)hl_val(r, row, 7);
    w->paused_at_ms = hl_val_i64(r, row, 8);
    w->updated_at_ms = hl_val_i64(r, row, 9);
}

HL_UNARY(hl_api_put_workflow)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutWorkflowRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (!hl_is_name(rq->team, 128))
        return orr_err_set(err, ORR_EINVAL, "team", "a team name is required");
    if (strlen(rq->description) > HL_MAX_DESCRIPTION)
        return orr_err_set(err, ORR_EINVAL, "description", "at most %d bytes", HL_MAX_DESCRIPTION);
    if (!rq->set_description && rq->description[0])
        return orr_err_set(err, ORR_EINVAL, "description",
                           "set set_description to replace the description");
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
    const char *pw[4] = {rq->name, hl_val(r, 0, 0), rq->set_description ? "true" : "false",
                         rq->description};
    if ((s = hl_db_query(c, a, &q_missing_task, 1, pm, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) > 0) {
        long long pos = hl_val_i64(r, 0, 0) - 1;
        s = orr_err_set(err, ORR_ENOTFOUND, orr_arena_sprintf(a, "task_ids[%lld]", pos),
                        "no such task %lld", (long long)rq->task_ids[pos]);
        goto out;
    }
    if ((s = hl_db_query(c, a, &q_upsert_workflow, 4, pw, &r, err)) != ORR_OK)
        goto out;
    const char *wid = hl_val(r, 0, 0);
    int paused = hl_val_bool(r, 0, 1);
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
                     orr_arena_sprintf(a, "{\"id\":%s,\"name\":%s,\"team\":%s,\"paused\":%s}", wid,
                                       hl_jstr(a, rq->name), hl_jstr(a, rq->team),
                                       paused ? "true" : "false"),
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

HL_UNARY(hl_api_set_workflow_paused)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__SetWorkflowPausedRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *verb = rq->paused ? "paused" : "resumed";
    const char *pp[3] = {rq->name, rq->paused ? "true" : "false", rq->actor};
    const char *pl[3] = {"0", rq->name, ""};
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_set_paused, 3, pp, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        if ((s = hl_db_query(c, a, &q_workflow_state, 1, pp, &r, err)) != ORR_OK)
            goto out;
        s = PQntuples(r) == 0
                ? orr_err_set(err, ORR_ENOTFOUND, "name", "no such workflow")
                : orr_err_set(err, ORR_ESTATE, "paused", "the workflow is %s already", verb);
        goto out;
    }
    if ((s = hl_db_query(c, a, &q_list_workflows, 3, pl, &r, err)) != ORR_OK)
        goto out;
    hl_pb_workflow *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_workflow(a, r, 0, o);
    const char *ids = hl_val(r, 0, 3);
    if ((s = hl_audit(c, a, rq->actor, rq->paused ? "workflow.pause" : "workflow.resume",
                      orr_arena_sprintf(a, "workflow:%s", rq->name),
                      orr_arena_sprintf(a, "{\"tasks\":%zu}", o->n_task_ids), err)) != ORR_OK ||
        (s = hl_emit(
             c, a, rq->paused ? "workflow.paused" : "workflow.resumed", 0, 0, NULL,
             orr_arena_sprintf(a, "{\"id\":%lld,\"name\":%s,\"actor\":%s,\"task_ids\":[%s]}",
                               (long long)o->id, hl_jstr(a, rq->name), hl_jstr(a, rq->actor), ids),
             NULL, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    *resp = &o->base;
    ORR_INFO(rq->paused ? "workflow paused" : "workflow resumed",
             "workflow_id=%lld name=%s tasks=%zu actor=%s", (long long)o->id, orr_log_q(rq->name),
             o->n_task_ids, orr_log_q(rq->actor));
out:
    hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_list_paused_tasks)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListPausedTasksRequest);
    (void)rq;
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_paused_tasks, 0, NULL, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListPausedTasksResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_paused_tasks_response__init(o);
    int n = PQntuples(r);
    o->n_tasks = (size_t)n;
    o->tasks = hl_alloc_n(a, sizeof *o->tasks, (size_t)n);
    Orrery__Halley__V1__PausedTask *ts = hl_alloc_n(a, sizeof *ts, (size_t)n);
    for (int i = 0; i < n; i++) {
        orrery__halley__v1__paused_task__init(&ts[i]);
        ts[i].task_id = hl_val_i64(r, i, 0);
        ts[i].workflow = (char *)hl_val(r, i, 1);
        ts[i].paused_by = (char *)hl_val(r, i, 2);
        ts[i].paused_at_ms = hl_val_i64(r, i, 3);
        o->tasks[i] = &ts[i];
    }
    *resp = &o->base;
    return ORR_OK;
}
