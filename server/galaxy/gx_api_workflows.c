/* gx_api_workflows.c - workflows as objects over REST: change a workflow's
 * description or team (PATCH), pause and resume it, and what a pause holds
 * (the "paused" member of tasks and instances); task name completion for
 * the console's type-ahead filters.
 *
 * Only the owning team's developers (or an admin) change, pause or resume a
 * workflow (gx_require_team); a PATCH that moves it to another team needs
 * that team too. A pause is stored in halleyd (SetWorkflowPaused: who,
 * when, audited), which keplerd follows; the lists read the held tasks with
 * one ListPausedTasks call per request (a short list: only paused
 * workflows' tasks). */
#include <stdlib.h>
#include <string.h>

#include "gx_app.h"
#include "gx_paused.h"
#include "orr_json.h"
#include "orr_log.h"

json_t *gx_workflow_json(const HL(Workflow) * w)
{
    json_t *ids = json_array();
    for (size_t i = 0; i < w->n_task_ids; i++)
        json_array_append_new(ids, json_integer(w->task_ids[i]));
    json_t *o =
        json_pack("{s:I,s:s,s:s,s:s,s:o,s:o,s:o,s:b}", "id", (json_int_t)w->id, "name", w->name,
                  "team", w->team, "description", w->description ? w->description : "", "task_ids",
                  ids, "created_at", gx_json_time(w->created_at_ms), "updated_at",
                  gx_json_time(w->updated_at_ms), "paused", w->paused);
    json_object_set_new(o, "paused_by",
                        w->paused && w->paused_by ? json_string(w->paused_by) : json_null());
    json_object_set_new(o, "paused_at", gx_json_time(w->paused ? w->paused_at_ms : 0));
    return o;
}

json_t *gx_paused_load(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    uint64_t gen;
    json_t *kept = gx_paused_get(app->paused, &gen);
    if (kept)
        return kept;
    HL(ListPausedTasksRequest) rq = HL_INIT(LIST_PAUSED_TASKS_REQUEST);
    HL(ListPausedTasksResponse) * rs;
    if (gx_halley(req, resp, "ListPausedTasks", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return NULL;
    json_t *map = json_object();
    for (size_t i = 0; i < rs->n_tasks; i++) {
        const HL(PausedTask) *p = rs->tasks[i];
        char key[24];
        snprintf(key, sizeof key, "%lld", (long long)p->task_id);
        json_object_set_new(map, key,
                            json_pack("{s:s,s:s,s:o}", "workflow", p->workflow, "by", p->paused_by,
                                      "at", gx_json_time(p->paused_at_ms)));
    }
    gx_paused_keep(app->paused, gen, map);
    return map;
}

/* The workflow named by path parameter 0, or NULL after an answer (400,
 * 404, 503). */
static HL(Workflow) * gx_workflow_read(gx_req *req, gx_resp *resp)
{
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return NULL;
    HL(GetWorkflowRequest) gq = HL_INIT(GET_WORKFLOW_REQUEST);
    gq.name = (char *)name;
    HL(Workflow) * w;
    if (gx_halley(req, resp, "GetWorkflow", &gq.base, (ProtobufCMessage **)&w) != ORR_OK)
        return NULL;
    return w;
}

/* PATCH /workflows/{name}: description and/or team; the tasks stay. */
void gx_h_workflow_patch(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"description", "team", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *desc = NULL, *team = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "description", 0, &desc, &e) != ORR_OK ||
        orr_json_get_str(body, "", "team", 0, &team, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (!desc && !team) {
        gx_resp_fail(resp, ORR_EINVAL, "description", "give a description or a team to change");
        return;
    }
    if (desc && strlen(desc) > 2000) {
        gx_resp_fail(resp, ORR_EINVAL, "description", "at most 2000 bytes");
        return;
    }
    if (team && !gx_check_name(resp, team, "team"))
        return;
    HL(Workflow) *cur = gx_workflow_read(req, resp);
    if (!cur || !gx_require_team(req, resp, cur->team) ||
        (team && !gx_require_team(req, resp, team)))
        return;
    HL(PutWorkflowRequest) rq = HL_INIT(PUT_WORKFLOW_REQUEST);
    rq.name = cur->name;
    rq.team = (char *)(team ? team : cur->team);
    rq.n_task_ids = cur->n_task_ids;
    rq.task_ids = cur->task_ids;
    rq.set_description = desc != NULL;
    rq.description = (char *)(desc ? desc : "");
    rq.actor = (char *)gx_actor(req);
    HL(Workflow) * w;
    if (gx_halley(req, resp, "PutWorkflow", &rq.base, (ProtobufCMessage **)&w) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_workflow_json(w));
}

static void gx_workflow_set_paused(gx_req *req, gx_resp *resp, int paused)
{
    HL(Workflow) *cur = gx_workflow_read(req, resp);
    if (!cur || !gx_require_team(req, resp, cur->team))
        return;
    HL(SetWorkflowPausedRequest) rq = HL_INIT(SET_WORKFLOW_PAUSED_REQUEST);
    rq.name = cur->name;
    rq.paused = paused;
    rq.actor = (char *)gx_actor(req);
    HL(Workflow) * w;
    if (gx_halley(req, resp, "SetWorkflowPaused", &rq.base, (ProtobufCMessage **)&w) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_workflow_json(w));
}

void gx_h_workflow_pause(gx_req *req, gx_resp *resp)
{
    gx_workflow_set_paused(req, resp, 1);
}

void gx_h_workflow_resume(gx_req *req, gx_resp *resp)
{
    gx_workflow_set_paused(req, resp, 0);
}

/* GET /tasks/suggest?q=&limit=: active tasks whose name contains q. */
void gx_h_tasks_suggest(gx_req *req, gx_resp *resp)
{
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 20, 1, 100, &limit))
        return;
    const char *q = gx_req_query(req, "q");
    if (q && strlen(q) > 128) {
        gx_resp_fail(resp, ORR_EINVAL, "q", "at most 128 bytes");
        return;
    }
    HL(SuggestTasksRequest) rq = HL_INIT(SUGGEST_TASKS_REQUEST);
    rq.query = (char *)(q ? q : "");
    rq.limit = (int32_t)limit;
    HL(SuggestTasksResponse) * rs;
    if (gx_halley(req, resp, "SuggestTasks", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_tasks; i++)
        json_array_append_new(items,
                              json_pack("{s:I,s:s,s:s}", "id", (json_int_t)rs->tasks[i]->id, "name",
                                        rs->tasks[i]->name, "team", rs->tasks[i]->team));
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
}
