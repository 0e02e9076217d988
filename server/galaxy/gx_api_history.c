/* gx_api_history.c - the run history of a workflow over REST: the grid of
 * its cycles x tasks (GET /api/v1/workflows/{name}/runs) and one cycle with
 * the queued and running spans of each task's instance and the dependencies
 * between the tasks (GET /api/v1/workflows/{name}/runs/{cycle}), each one
 * Halley call (ListWorkflowRuns, GetWorkflowRun).
 *
 * The grid is compact: a cell is [task index, cycle index, instance id,
 * state, attempt], and only cells with an instance are sent; cycles come
 * newest first, and next_before (the oldest cycle shown, while older ones
 * exist) is the `before` of the next page. */
#include <stdlib.h>
#include <string.h>

#include "gx_app.h"
#include "gx_input.h"

#define GX_RUNS_DEFAULT 30
#define GX_RUNS_MAX     100

static json_t *gx_run_tasks(HL(RunTask) * *ts, size_t n)
{
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, json_pack("{s:I,s:s,s:b}", "id", (json_int_t)ts[i]->id, "name",
                                             ts[i]->name, "active", ts[i]->active));
    return out;
}

void gx_h_workflow_runs(gx_req *req, gx_resp *resp)
{
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    int64_t limit, before = 0;
    if (gx_req_query_int(req, resp, "limit", GX_RUNS_DEFAULT, 1, GX_RUNS_MAX, &limit))
        return;
    const char *b = gx_req_query(req, "before");
    if (b && (gx_parse_time(b, &before) != ORR_OK || before <= 0)) {
        gx_resp_fail(resp, ORR_EINVAL, "before", "must be an ISO-8601 time");
        return;
    }
    HL(ListWorkflowRunsRequest) rq = HL_INIT(LIST_WORKFLOW_RUNS_REQUEST);
    rq.name = (char *)name;
    rq.limit = (int32_t)limit;
    rq.before_ms = before;
    HL(ListWorkflowRunsResponse) * rs;
    if (gx_halley(req, resp, "ListWorkflowRuns", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *cycles = json_array(), *cells = json_array();
    for (size_t i = 0; i < rs->n_cycles_ms; i++)
        json_array_append_new(cycles, gx_json_time(rs->cycles_ms[i]));
    for (size_t i = 0; i < rs->n_cells; i++) {
        const HL(RunCell) *c = rs->cells[i];
        const char *st = gx_state_name(c->state);
        json_array_append_new(cells, json_pack("[i,i,I,s,i]", c->task, c->cycle,
                                               (json_int_t)c->instance_id, st ? st : "unknown",
                                               c->attempt));
    }
    json_t *next = rs->more && rs->n_cycles_ms ? gx_json_time(rs->cycles_ms[rs->n_cycles_ms - 1])
                                               : json_null();
    gx_resp_json(resp, 200,
                 json_pack("{s:s,s:o,s:o,s:o,s:o}", "workflow", rs->name, "tasks",
                           gx_run_tasks(rs->tasks, rs->n_tasks), "cycles", cycles, "cells", cells,
                           "next_before", next));
}

void gx_h_workflow_run(gx_req *req, gx_resp *resp)
{
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    int64_t cycle = 0;
    const char *cs = gx_req_param(req, 1);
    if (!cs || gx_parse_time(cs, &cycle) != ORR_OK || cycle <= 0) {
        gx_resp_fail(resp, ORR_EINVAL, "cycle", "must be an ISO-8601 time");
        return;
    }
    HL(GetWorkflowRunRequest) rq = HL_INIT(GET_WORKFLOW_RUN_REQUEST);
    rq.name = (char *)name;
    rq.cycle_ms = cycle;
    HL(WorkflowRun) * w;
    if (gx_halley(req, resp, "GetWorkflowRun", &rq.base, (ProtobufCMessage **)&w) != ORR_OK)
        return;
    json_t *edges = json_array(), *ins = json_array();
    for (size_t i = 0; i < w->n_edges; i++)
        json_array_append_new(edges, json_pack("{s:I,s:I,s:s}", "task_id",
                                               (json_int_t)w->edges[i]->task_id, "upstream_task_id",
                                               (json_int_t)w->edges[i]->upstream_task_id, "kind",
                                               w->edges[i]->kind));
    for (size_t i = 0; i < w->n_instances; i++) {
        const HL(RunInstance) *x = w->instances[i];
        json_t *spans = json_array();
        for (size_t k = 0; k < x->n_spans; k++) {
            const HL(RunSpan) *s = x->spans[k];
            const char *st = gx_state_name(s->state);
            json_array_append_new(spans, json_pack("{s:i,s:o,s:o,s:o,s:s}", "attempt", s->attempt,
                                                   "queued_at", gx_json_time(s->queued_ms),
                                                   "started_at", gx_json_time(s->started_ms),
                                                   "ended_at", gx_json_time(s->ended_ms), "state",
                                                   st ? st : "unknown"));
        }
        const char *st = gx_state_name(x->state);
        json_array_append_new(
            ins,
            json_pack("{s:I,s:I,s:s,s:i,s:o,s:o}", "task_id", (json_int_t)x->task_id, "id",
                      (json_int_t)x->instance_id, "state", st ? st : "unknown", "attempt",
                      x->attempt, "created_at", gx_json_time(x->created_at_ms), "spans", spans));
    }
    gx_resp_json(resp, 200,
                 json_pack("{s:s,s:o,s:o,s:o,s:o}", "workflow", w->name, "cycle",
                           gx_json_time(w->cycle_ms), "tasks", gx_run_tasks(w->tasks, w->n_tasks),
                           "edges", edges, "instances", ins));
}
