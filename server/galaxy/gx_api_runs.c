/* gx_api_runs.c - operators' runs over REST: run a task's slot now, rerun an
 * instance with its downstreams or upstreams (or the failed ones of a
 * workflow's cycle), and the options of backfill (downstream tasks, serial or
 * parallel pacing, dry run).
 *
 *   POST /api/v1/tasks/{id}/run              {"schedule_time", "ignore_upstreams", "reason",
 *                                             "params"}
 *   POST /api/v1/instances/{id}/rerun        {"scope", "dry_run", "reason", "from_scratch"}
 *   POST /api/v1/workflows/{name}/rerun-failed {"schedule_time", "dry_run", "reason"}
 *   POST /api/v1/tasks/{id}/backfill         {"from", "to", "priority", "include_downstream",
 *                                             "mode", "max_cycles", "dry_run"}
 *
 * Each is one halleyd call (RunNow, RerunInstances, Backfill), one
 * transaction there: a set reruns whole or not at all. Team rights are
 * passed along (a developer's teams) and checked by halleyd on every member
 * inside that transaction, so a refused set changes nothing. halleyd's field
 * names are turned into this API's (schedule_time_ms -> schedule_time). */
#include <stdio.h>
#include <string.h>

#include "gx_app.h"
#include "orr_json.h"
#include "orr_log.h"

/* halleyd field -> REST field. */
static const char *const gx_run_fields[][2] = {
    {"schedule_time_ms", "schedule_time"}, {"from_ms", "from"},    {"to_ms", "to"},
    {"max_cycles", "max_cycles"},          {"instance_ids", "id"}, {"task_id", "id"},
};

static void gx_run_free(void *p)
{
    protobuf_c_message_free_unpacked((ProtobufCMessage *)p, NULL);
}

/* gx_halley with this file's field names; the caller's teams (developers)
 * are set by the caller into the request. */
static orr_status gx_run_call(gx_req *req, gx_resp *resp, const char *method,
                              const ProtobufCMessage *in, ProtobufCMessage **out)
{
    gx_app *app = req->app;
    orr_err e;
    orr_err_clear(&e);
    *out = NULL;
    orr_status rc = orr_rpc_call_unary(app->halley, method, in, out, app->rpc_timeout_ms, &e);
    if (rc == ORR_OK) {
        orr_arena_on_cleanup(req->arena, gx_run_free, *out);
        return ORR_OK;
    }
    if (rc == ORR_EUNAVAIL || rc == ORR_ETIMEOUT || rc == ORR_EUNIMPL || rc == ORR_EAUTH)
        return gx_halley(req, resp, method, in, out); /* its answers for these */
    for (size_t i = 0; i < sizeof gx_run_fields / sizeof gx_run_fields[0]; i++)
        if (strcmp(e.field, gx_run_fields[i][0]) == 0) {
            snprintf(e.field, sizeof e.field, "%s", gx_run_fields[i][1]);
            break;
        }
    gx_resp_err(resp, &e);
    return rc;
}

/* A developer's teams as the request's restriction; admins have none. */
static void gx_run_teams(gx_req *req, protobuf_c_boolean *restrict_teams, size_t *n_teams,
                         char ***teams)
{
    *restrict_teams = req->who.role != GX_ROLE_ADMIN;
    size_t n = 0;
    for (const char *const *t = req->who.teams; t && *t; t++)
        n++;
    *n_teams = n;
    *teams = (char **)req->who.teams;
}

static json_t *gx_dep_json(const HL(DepState) * d)
{
    const char *st = gx_state_name(d->state);
    return json_pack("{s:I,s:s,s:s,s:o,s:o,s:o}", "task_id", (json_int_t)d->task_id, "task_name",
                     d->task_name ? d->task_name : "", "kind", d->kind ? d->kind : "",
                     "schedule_time", gx_json_time(d->schedule_time_ms), "instance_id",
                     d->instance_id ? json_integer(d->instance_id) : json_null(), "state",
                     st && d->instance_id ? json_string(st) : json_null());
}

/* ------------------------------------------------------------ run now */

/* The body of a run of one slot: only keys, "schedule_time" (required,
 * ISO-8601) as *ms, the boolean `flag` (optional) and "reason" (optional, at
 * most 4096 bytes). 0 when the 400 naming the field has been answered. */
static int gx_run_slot_body(gx_resp *resp, json_t *body, const char *const *keys, const char *flag,
                            int *flag_val, int64_t *ms, const char **reason)
{
    orr_err e;
    const char *when = NULL;
    *reason = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "schedule_time", 1, &when, &e) != ORR_OK ||
        orr_json_get_bool(body, "", flag, 0, flag_val, &e) != ORR_OK ||
        orr_json_get_str(body, "", "reason", 0, reason, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return 0;
    }
    if (gx_parse_time(when, ms) != ORR_OK || *ms <= 0) {
        gx_resp_fail(resp, ORR_EINVAL, "schedule_time", "must be an ISO-8601 time");
        return 0;
    }
    if (*reason && strlen(*reason) > 4096) {
        gx_resp_fail(resp, ORR_EINVAL, "reason", "at most 4096 bytes");
        return 0;
    }
    return 1;
}

void gx_h_task_run(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"schedule_time", "ignore_upstreams", "reason", "params",
                                       NULL};
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *reason;
    int ignore = 0;
    int64_t ms;
    if (!gx_run_slot_body(resp, body, keys, "ignore_upstreams", &ignore, &ms, &reason))
        return;
    const char *params = gx_params_text(req, body, "params", resp);
    if (!params)
        return;
    HL(RunNowRequest) rq = HL_INIT(RUN_NOW_REQUEST);
    rq.task_id = id;
    rq.params_json = (char *)params;
    rq.schedule_time_ms = ms;
    rq.ignore_upstreams = ignore;
    rq.actor = (char *)gx_actor(req);
    rq.reason = (char *)(reason ? reason : "");
    gx_run_teams(req, &rq.restrict_teams, &rq.n_teams, &rq.teams);
    HL(RunNowResponse) * rs;
    if (gx_run_call(req, resp, "RunNow", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    gx_resp_json(resp, rs->created ? 201 : 200,
                 json_pack("{s:o,s:b}", "instance", gx_instance_json(rs->instance), "created",
                           (int)rs->created));
}

/* ------------------------------------------------------------ reruns */

static void gx_rerun_answer(gx_resp *resp, const HL(RerunInstancesResponse) * rs, int dry)
{
    json_t *members = json_array(), *missing = json_array();
    for (size_t i = 0; i < rs->n_members; i++) {
        const HL(RerunMember) *m = rs->members[i];
        json_array_append_new(members, json_pack("{s:o,s:b,s:s,s:s}", "instance",
                                                 gx_instance_json(m->instance), "rerun",
                                                 (int)m->rerun, "why", m->why ? m->why : "", "team",
                                                 m->team ? m->team : ""));
    }
    for (size_t i = 0; i < rs->n_missing; i++)
        json_array_append_new(missing, gx_dep_json(rs->missing[i]));
    gx_resp_json(resp, 200,
                 json_pack("{s:b,s:i,s:o,s:o}", "dry_run", dry, "rerun", (int)rs->rerun, "members",
                           members, "missing", missing));
}

void gx_h_instance_rerun(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"scope", "dry_run", "reason", "from_scratch", NULL};
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    const char *scope = NULL, *reason = NULL;
    int dry = 0, scratch = 0;
    if (req->body_len) {
        orr_err e;
        json_t *body = gx_req_json(req, resp);
        if (!body)
            return;
        if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
            orr_json_get_str(body, "", "scope", 0, &scope, &e) != ORR_OK ||
            orr_json_get_bool(body, "", "dry_run", 0, &dry, &e) != ORR_OK ||
            orr_json_get_str(body, "", "reason", 0, &reason, &e) != ORR_OK ||
            orr_json_get_bool(body, "", "from_scratch", 0, &scratch, &e) != ORR_OK) {
            gx_resp_err(resp, &e);
            return;
        }
    }
    HL(RerunInstancesRequest) rq = HL_INIT(RERUN_INSTANCES_REQUEST);
    if (!scope || strcmp(scope, "instance") == 0)
        rq.scope = ORRERY__HALLEY__V1__RERUN_SCOPE__RERUN_SCOPE_INSTANCE;
    else if (strcmp(scope, "downstream") == 0)
        rq.scope = ORRERY__HALLEY__V1__RERUN_SCOPE__RERUN_SCOPE_DOWNSTREAM;
    else if (strcmp(scope, "upstream") == 0)
        rq.scope = ORRERY__HALLEY__V1__RERUN_SCOPE__RERUN_SCOPE_UPSTREAM;
    else {
        gx_resp_fail(resp, ORR_EINVAL, "scope", "must be instance, downstream or upstream");
        return;
    }
    if (reason && strlen(reason) > 4096) {
        gx_resp_fail(resp, ORR_EINVAL, "reason", "at most 4096 bytes");
        return;
    }
    int64_t ids[1] = {id};
    rq.n_instance_ids = 1;
    rq.instance_ids = ids;
    rq.dry_run = dry;
    rq.from_scratch = scratch;
    rq.actor = (char *)gx_actor(req);
    rq.reason = (char *)(reason ? reason : "");
    gx_run_teams(req, &rq.restrict_teams, &rq.n_teams, &rq.teams);
    HL(RerunInstancesResponse) * rs;
    if (gx_run_call(req, resp, "RerunInstances", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    gx_rerun_answer(resp, rs, dry);
}

void gx_h_workflow_rerun_failed(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"schedule_time", "dry_run", "reason", NULL};
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *reason;
    int dry = 0;
    int64_t ms;
    if (!gx_run_slot_body(resp, body, keys, "dry_run", &dry, &ms, &reason))
        return;
    HL(GetWorkflowRequest) wq = HL_INIT(GET_WORKFLOW_REQUEST);
    wq.name = (char *)name;
    HL(Workflow) * wf;
    if (gx_halley(req, resp, "GetWorkflow", &wq.base, (ProtobufCMessage **)&wf) != ORR_OK)
        return;
    if (!gx_require_team(req, resp, wf->team))
        return;
    HL(RerunInstancesRequest) rq = HL_INIT(RERUN_INSTANCES_REQUEST);
    rq.workflow_id = wf->id;
    rq.schedule_time_ms = ms;
    rq.dry_run = dry;
    rq.actor = (char *)gx_actor(req);
    rq.reason = (char *)(reason ? reason : "");
    gx_run_teams(req, &rq.restrict_teams, &rq.n_teams, &rq.teams);
    HL(RerunInstancesResponse) * rs;
    if (gx_run_call(req, resp, "RerunInstances", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    gx_rerun_answer(resp, rs, dry);
}

/* ------------------------------------------------------------ backfill */

void gx_h_task_backfill(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"from", "to",         "priority", "include_downstream",
                                       "mode", "max_cycles", "dry_run",  "params",
                                       NULL};
    orr_err e;
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *from_s = NULL, *to_s = NULL, *mode = NULL;
    int64_t priority = 0, max_cycles = 0, from_ms, to_ms;
    int down = 0, dry = 0;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "from", 1, &from_s, &e) != ORR_OK ||
        orr_json_get_str(body, "", "to", 1, &to_s, &e) != ORR_OK ||
        orr_json_get_int(body, "", "priority", 0, -1000, 1000, &priority, &e) != ORR_OK ||
        orr_json_get_bool(body, "", "include_downstream", 0, &down, &e) != ORR_OK ||
        orr_json_get_str(body, "", "mode", 0, &mode, &e) != ORR_OK ||
        orr_json_get_int(body, "", "max_cycles", 0, 1, 100, &max_cycles, &e) != ORR_OK ||
        orr_json_get_bool(body, "", "dry_run", 0, &dry, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    const char *params = gx_params_text(req, body, "params", resp);
    if (!params)
        return;
    if (gx_parse_time(from_s, &from_ms) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, "from", "must be an ISO-8601 time");
        return;
    }
    if (gx_parse_time(to_s, &to_ms) != ORR_OK || to_ms <= from_ms) {
        gx_resp_fail(resp, ORR_EINVAL, "to", "must be an ISO-8601 time after from");
        return;
    }
    int32_t cycles;
    if (!mode || strcmp(mode, "all") == 0) {
        cycles = 0;
    } else if (strcmp(mode, "serial") == 0) {
        cycles = 1;
    } else if (strcmp(mode, "parallel") == 0) {
        if (!max_cycles) {
            gx_resp_fail(resp, ORR_EINVAL, "max_cycles",
                         "is required with mode parallel (1 to 100 cycles at a time)");
            return;
        }
        cycles = (int32_t)max_cycles;
    } else {
        gx_resp_fail(resp, ORR_EINVAL, "mode", "must be all, serial or parallel");
        return;
    }
    if (max_cycles && (!mode || strcmp(mode, "parallel") != 0)) {
        gx_resp_fail(resp, ORR_EINVAL, "max_cycles", "only with mode parallel");
        return;
    }
    HL(BackfillRequest) rq = HL_INIT(BACKFILL_REQUEST);
    rq.task_id = id;
    rq.from_ms = from_ms;
    rq.to_ms = to_ms;
    rq.priority = (int32_t)priority;
    rq.include_downstream = down;
    rq.max_cycles = cycles;
    rq.dry_run = dry;
    rq.actor = (char *)gx_actor(req);
    rq.params_json = (char *)params;
    gx_run_teams(req, &rq.restrict_teams, &rq.n_teams, &rq.teams);
    HL(BackfillResponse) * rs;
    if (gx_run_call(req, resp, "Backfill", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *created = json_array(), *existing = json_array(), *planned = json_array();
    for (size_t i = 0; i < rs->n_created; i++)
        json_array_append_new(created, json_integer(rs->created[i]->id));
    for (size_t i = 0; i < rs->n_existing; i++)
        json_array_append_new(existing, json_integer(rs->existing[i]->id));
    for (size_t i = 0; i < rs->n_planned; i++) {
        json_t *d = gx_dep_json(rs->planned[i]);
        json_object_del(d, "kind");
        json_object_set_new(d, "downstream",
                            json_boolean(strcmp(rs->planned[i]->kind, "downstream") == 0));
        json_array_append_new(planned, d);
    }
    json_t *out =
        json_pack("{s:I,s:o,s:o,s:o,s:s,s:i,s:b,s:b}", "fire_times", (json_int_t)rs->fire_times,
                  "created", created, "existing", existing, "backfill_id",
                  rs->backfill_id ? json_integer(rs->backfill_id) : json_null(), "mode",
                  cycles == 0                                  ? "all"
                  : cycles == 1 && strcmp(mode, "serial") == 0 ? "serial"
                                                               : "parallel",
                  "max_cycles", (int)cycles, "include_downstream", down, "dry_run", dry);
    if (dry)
        json_object_set_new(out, "planned", planned);
    else
        json_decref(planned);
    gx_resp_json(resp, 200, out);
}
