/* gx_api_tasks.c - /api/v1/tasks: list, create, read (and old versions),
 * update (a new version each time, optionally as a compare-and-set with
 * If-Match: <version>), deactivate, and validate without saving.
 *
 * Authorisation: any logged-in user reads; a developer creates and changes
 * only tasks of their own teams (both the task's current team and the team
 * named in the new spec); admins change everything. Spec validation itself
 * is Halley's (schema/task.schema.json), so the answer names the bad field. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gx_app.h"
#include "gx_quality_check.h"
#include "gx_xfer_check.h"
#include "orr_json.h"

/* Parse a positive id path parameter; answers 400 and returns 0 on failure. */
static char *gx_dump(gx_req *req, json_t *v)
{
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(v, &b);
    char *s = orr_arena_strndup(req->arena, b.data, b.len);
    orr_buf_free(&b);
    return s;
}

void gx_h_tasks_list(gx_req *req, gx_resp *resp)
{
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 50, 1, 1000, &limit))
        return;
    HL(ListTasksRequest) rq = HL_INIT(LIST_TASKS_REQUEST);
    const char *v;
    if ((v = gx_req_query(req, "team")))
        rq.team = (char *)v;
    if ((v = gx_req_query(req, "type")))
        rq.type = (char *)v;
    if ((v = gx_req_query(req, "q")))
        rq.name_prefix = (char *)v;
    if ((v = gx_req_query(req, "page_token")))
        rq.page_token = (char *)v;
    v = gx_req_query(req, "active");
    if (!v || strcmp(v, "true") == 0)
        rq.active = ORRERY__HALLEY__V1__ACTIVE_FILTER__ACTIVE_FILTER_ACTIVE;
    else if (strcmp(v, "false") == 0)
        rq.active = ORRERY__HALLEY__V1__ACTIVE_FILTER__ACTIVE_FILTER_INACTIVE;
    else if (strcmp(v, "any") == 0)
        rq.active = ORRERY__HALLEY__V1__ACTIVE_FILTER__ACTIVE_FILTER_ANY;
    else {
        gx_resp_fail(resp, ORR_EINVAL, "active", "must be true, false or any");
        return;
    }
    rq.page_size = (int32_t)limit;
    int with_last_run = gx_req_query_bool(req, resp, "with_last_run", 0);
    if (with_last_run < 0)
        return;
    rq.with_last_run = with_last_run;
    HL(ListTasksResponse) * rs;
    if (gx_halley(req, resp, "ListTasks", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *paused = gx_paused_load(req, resp);
    if (!paused)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_tasks; i++)
        json_array_append_new(items, gx_task_json(rs->tasks[i]));
    gx_paused_mark_all(items, paused, "id");
    json_decref(paused);
    json_t *out = json_object();
    json_object_set_new(out, "items", items);
    json_object_set_new(out, "next_page_token",
                        rs->next_page_token && *rs->next_page_token
                            ? json_string(rs->next_page_token)
                            : json_null());
    gx_resp_json(resp, 200, out);
}

/* The spec's team, or answer 400 naming "team". */
static const char *gx_spec_team(json_t *spec, gx_resp *resp)
{
    const char *team = NULL;
    orr_err e;
    if (orr_json_get_str(spec, "", "team", 1, &team, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return NULL;
    }
    return team;
}

void gx_h_task_create(gx_req *req, gx_resp *resp)
{
    json_t *spec = gx_req_json(req, resp);
    if (!spec)
        return;
    const char *team = gx_spec_team(spec, resp);
    if (!team || !gx_require_team(req, resp, team))
        return;
    json_t *warnings = gx_xfer_warnings(req);
    if (gx_xfer_check(req, resp, spec, warnings) != 0 ||
        gx_quality_check(req, resp, spec, warnings) != 0)
        return;
    HL(CreateTaskRequest) rq = HL_INIT(CREATE_TASK_REQUEST);
    rq.spec_json = gx_dump(req, spec);
    rq.actor = (char *)gx_actor(req);
    HL(Task) * t;
    if (gx_halley(req, resp, "CreateTask", &rq.base, (ProtobufCMessage **)&t) != ORR_OK)
        return;
    gx_resp_json(resp, 201, gx_xfer_with_warnings(gx_task_json(t), warnings));
    gx_resp_header(resp, "Location",
                   orr_arena_sprintf(req->arena, "/api/v1/tasks/%lld", (long long)t->id));
}

/* GetTask by id (version 0 = current); answers the error itself. */
static HL(Task) * gx_get_task(gx_req *req, gx_resp *resp, int64_t id, int32_t version)
{
    HL(GetTaskRequest) rq = HL_INIT(GET_TASK_REQUEST);
    rq.id = id;
    rq.version = version;
    HL(Task) * t;
    if (gx_halley(req, resp, "GetTask", &rq.base, (ProtobufCMessage **)&t) != ORR_OK)
        return NULL;
    return t;
}

void gx_h_task_get(gx_req *req, gx_resp *resp)
{
    if (gx_cache_get(req, resp)) /* the task page's first call; bounded staleness */
        return;
    int64_t id = gx_param_id(req, resp, 0, "id");
    HL(Task) *t = id ? gx_get_task(req, resp, id, 0) : NULL;
    json_t *paused = t ? gx_paused_load(req, resp) : NULL;
    if (paused) {
        json_t *out = gx_task_json(t);
        gx_paused_mark(out, paused, t->id);
        json_decref(paused);
        gx_resp_json(resp, 200, out);
        gx_cache_put(req, resp);
    }
}

void gx_h_task_version(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    int64_t version = gx_param_id(req, resp, 1, "version");
    if (!version)
        return;
    if (version > INT32_MAX) {
        gx_resp_fail(resp, ORR_EINVAL, "version", "out of range");
        return;
    }
    HL(Task) *t = gx_get_task(req, resp, id, (int32_t)version);
    if (t)
        gx_resp_json(resp, 200, gx_task_json(t));
}

void gx_h_task_update(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    json_t *spec = gx_req_json(req, resp);
    if (!spec)
        return;
    int32_t expected = 0;
    const char *im = gx_req_header(req, "If-Match");
    if (im) {
        char *end;
        long v = strtol(im[0] == '"' ? im + 1 : im, &end, 10);
        if (v <= 0 || v > INT32_MAX || (*end && strcmp(end, "\"") != 0)) {
            gx_resp_fail(resp, ORR_EINVAL, "If-Match", "must be a task version number");
            return;
        }
        expected = (int32_t)v;
    }
    HL(Task) *cur = gx_get_task(req, resp, id, 0);
    if (!cur || !gx_require_team(req, resp, cur->team))
        return;
    const char *team = gx_spec_team(spec, resp);
    if (!team || !gx_require_team(req, resp, team))
        return;
    json_t *warnings = gx_xfer_warnings(req);
    if (gx_xfer_check(req, resp, spec, warnings) != 0 ||
        gx_quality_check(req, resp, spec, warnings) != 0)
        return;
    HL(UpdateTaskRequest) rq = HL_INIT(UPDATE_TASK_REQUEST);
    rq.id = id;
    rq.spec_json = gx_dump(req, spec);
    rq.actor = (char *)gx_actor(req);
    rq.expected_version = expected;
    const char *comment = gx_req_query(req, "comment"); /* kept with the new version */
    rq.comment = (char *)(comment ? comment : "");
    HL(Task) * t;
    if (gx_halley(req, resp, "UpdateTask", &rq.base, (ProtobufCMessage **)&t) != ORR_OK)
        return;
    /* changed false: the spec was the current version's, none was made */
    json_t *o = gx_task_json(t);
    json_object_set_new(o, "changed", json_boolean(!t->unchanged));
    gx_resp_json(resp, 200, gx_xfer_with_warnings(o, warnings));
}

void gx_h_task_delete(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    HL(Task) *cur = gx_get_task(req, resp, id, 0);
    if (!cur || !gx_require_team(req, resp, cur->team))
        return;
    HL(DeactivateTaskRequest) rq = HL_INIT(DEACTIVATE_TASK_REQUEST);
    rq.id = id;
    rq.actor = (char *)gx_actor(req);
    const char *reason = gx_req_query(req, "reason");
    rq.reason = (char *)(reason ? reason : "deactivated through the API");
    HL(Task) * t;
    if (gx_halley(req, resp, "DeactivateTask", &rq.base, (ProtobufCMessage **)&t) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_task_json(t));
}
