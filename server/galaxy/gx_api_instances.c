/* gx_api_instances.c - /api/v1/instances: list with filters, one instance with
 * its upstream/downstream states and transitions, and people's actions.
 *
 * Actions map onto the state machine that halleyd enforces:
 *   rerun        success|failed|killed|timed_out|marked_success -> waiting (new attempt)
 *   suspend      waiting|ready -> suspended
 *   resume       suspended -> waiting
 *   mark-success any state halleyd allows -> marked_success
 *   kill         waiting|ready|dispatched|running|suspended -> killed
 * Each is a compare-and-set on the state just read; if the instance moved in
 * between (ABORTED) the action is retried on the new state, at most 3 times.
 * An action the current state does not allow is 409 with halleyd's message.
 * The bulk form checks the caller's right on every instance first (403 and
 * nothing applied if one is refused), then applies the action to each and
 * reports each result: a state that does not allow it fails that item only.
 *
 * The list and the single instance are GET answers that depend only on the
 * request (and the caller's role/teams): they go through galaxyd's response
 * cache (gx_http.h), so a busy instance page costs halleyd at most one call
 * per distinct query per cache TTL; the actions, being POSTs, invalidate it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gx_app.h"
#include "orr_json.h"

struct gx_action {
    const char *name;
    HL(InstanceState) to;
};

static const struct gx_action gx_actions[] = {
    {"rerun", HL_STATE(WAITING)},  {"suspend", HL_STATE(SUSPENDED)},
    {"resume", HL_STATE(WAITING)}, {"mark-success", HL_STATE(MARKED_SUCCESS)},
    {"kill", HL_STATE(KILLED)},
};

static const struct gx_action *gx_action_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(gx_actions) / sizeof(gx_actions[0]); i++)
        if (strcmp(gx_actions[i].name, name) == 0)
            return &gx_actions[i];
    return NULL;
}

/* rerun applies to finished instances, resume to suspended ones: refuse the
 * others here with a clear message (halleyd would allow e.g. suspended ->
 * waiting for "rerun", which is not what the person asked for). */
static int gx_action_applies(const struct gx_action *a, HL(InstanceState) s)
{
    if (strcmp(a->name, "rerun") == 0)
        return s == HL_STATE(SUCCESS) || s == HL_STATE(FAILED) || s == HL_STATE(KILLED) ||
               s == HL_STATE(TIMED_OUT) || s == HL_STATE(MARKED_SUCCESS);
    if (strcmp(a->name, "resume") == 0)
        return s == HL_STATE(SUSPENDED);
    return 1;
}

void gx_h_instances_list(gx_req *req, gx_resp *resp)
{
    int64_t limit, task_id;
    if (gx_cache_get(req, resp))
        return;
    if (gx_req_query_int(req, resp, "limit", 50, 1, 1000, &limit) ||
        gx_req_query_int(req, resp, "task_id", 0, 0, INT64_MAX, &task_id))
        return;
    HL(ListInstancesRequest) rq = HL_INIT(LIST_INSTANCES_REQUEST);
    rq.task_id = task_id;
    rq.page_size = (int32_t)limit;
    const char *v;
    if ((v = gx_req_query(req, "page_token")))
        rq.page_token = (char *)v;
    if ((v = gx_req_query(req, "executor")))
        rq.executor = (char *)v;
    if ((v = gx_req_query(req, "team")))
        rq.team = (char *)v;
    if ((v = gx_req_query(req, "q"))) {
        if (strlen(v) > 128) {
            gx_resp_fail(resp, ORR_EINVAL, "q", "at most 128 bytes");
            return;
        }
        rq.query = (char *)v;
    }
    if ((v = gx_req_query(req, "order"))) {
        if (strcmp(v, "desc") != 0 && strcmp(v, "asc") != 0) {
            gx_resp_fail(resp, ORR_EINVAL, "order", "must be asc or desc");
            return;
        }
        rq.descending = strcmp(v, "desc") == 0;
    }
    HL(InstanceState) states[16];
    size_t nstates = 0;
    if ((v = gx_req_query(req, "state"))) {
        char *list = orr_arena_strdup(req->arena, v), *save = NULL;
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            HL(InstanceState) s = gx_state_parse(tok);
            if (!s || nstates >= 16) {
                gx_resp_fail(resp, ORR_EINVAL, "state", "unknown state \"%s\"", tok);
                return;
            }
            states[nstates++] = s;
        }
    }
    rq.n_states = nstates;
    rq.states = states;
    int64_t ms;
    if ((v = gx_req_query(req, "from"))) {
        if (gx_parse_time(v, &ms) != ORR_OK) {
            gx_resp_fail(resp, ORR_EINVAL, "from", "must be an ISO-8601 time");
            return;
        }
        rq.from_schedule_ms = ms;
    }
    if ((v = gx_req_query(req, "to"))) {
        if (gx_parse_time(v, &ms) != ORR_OK) {
            gx_resp_fail(resp, ORR_EINVAL, "to", "must be an ISO-8601 time");
            return;
        }
        rq.to_schedule_ms = ms;
    }
    HL(ListInstancesResponse) * rs;
    if (gx_halley(req, resp, "ListInstances", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *paused = gx_paused_load(req, resp);
    if (!paused)
        return;
    /* Written straight from halleyd's answer: no tree of 50 rows to build,
     * dump and free (gx_instance_json.c). */
    resp->status = 200;
    resp->content_type = "application/json";
    orr_buf_reset(&resp->body);
    gx_instances_write(&resp->body, rs, paused);
    json_decref(paused);
    gx_cache_put(req, resp);
}

static HL(Instance) * gx_get_instance(gx_req *req, gx_resp *resp, int64_t id)
{
    HL(GetInstanceRequest) rq = HL_INIT(GET_INSTANCE_REQUEST);
    rq.id = id;
    HL(Instance) * in;
    if (gx_halley(req, resp, "GetInstance", &rq.base, (ProtobufCMessage **)&in) != ORR_OK)
        return NULL;
    return in;
}

void gx_h_instance_get(gx_req *req, gx_resp *resp)
{
    if (gx_cache_get(req, resp))
        return;
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    HL(Instance) *in = gx_get_instance(req, resp, id);
    if (!in)
        return;
    HL(ListTransitionsRequest) tq = HL_INIT(LIST_TRANSITIONS_REQUEST);
    tq.instance_id = id;
    HL(ListTransitionsResponse) * tr;
    if (gx_halley(req, resp, "ListTransitions", &tq.base, (ProtobufCMessage **)&tr) != ORR_OK)
        return;
    json_t *paused = gx_paused_load(req, resp);
    if (!paused)
        return;
    json_t *out = gx_instance_json(in);
    gx_paused_mark(out, paused, in->task_id);
    json_decref(paused);
    json_t *trs = json_array();
    for (size_t i = 0; i < tr->n_transitions; i++) {
        const HL(Transition) *t = tr->transitions[i];
        const char *from = gx_state_name(t->from_state), *to = gx_state_name(t->to_state);
        json_array_append_new(
            trs, json_pack("{s:I,s:i,s:o,s:o,s:s,s:s,s:o,s:o}", "id", (json_int_t)t->id, "attempt",
                           t->attempt, "from", from ? json_string(from) : json_null(), "to",
                           to ? json_string(to) : json_null(), "actor", t->actor, "reason",
                           t->reason, "executor",
                           t->executor && *t->executor ? json_string(t->executor) : json_null(),
                           "at", gx_json_time(t->at_ms)));
    }
    json_object_set_new(out, "transitions", trs);
    json_object_set_new(out, "from_scratch", json_boolean(in->from_scratch));
    /* Attempts with exit codes (older halleyd without ListAttempts: left out). */
    gx_app *app = req->app;
    HL(ListAttemptsRequest) aq = HL_INIT(LIST_ATTEMPTS_REQUEST);
    aq.instance_id = id;
    HL(ListAttemptsResponse) *ar = NULL;
    orr_err ae;
    if (orr_rpc_call_unary(app->halley, "ListAttempts", &aq.base, (ProtobufCMessage **)&ar,
                           app->rpc_timeout_ms, &ae) == ORR_OK) {
        json_t *atts = json_array();
        for (size_t i = 0; i < ar->n_attempts; i++) {
            const HL(Attempt) *a = ar->attempts[i];
            const char *st = gx_state_name(a->state);
            json_array_append_new(
                atts,
                json_pack("{s:i,s:o,s:o,s:o,s:o,s:o,s:s,s:o}", "attempt", a->attempt, "state",
                          st ? json_string(st) : json_null(), "executor",
                          a->executor && *a->executor ? json_string(a->executor) : json_null(),
                          "started_at", gx_json_time(a->started_at_ms), "finished_at",
                          gx_json_time(a->finished_at_ms), "exit_code",
                          a->has_exit_code ? json_integer(a->exit_code) : json_null(), "reason",
                          a->reason ? a->reason : "", "task_version",
                          a->task_version ? json_integer(a->task_version) : json_null()));
        }
        json_object_set_new(out, "attempts", atts);
        protobuf_c_message_free_unpacked(&ar->base, NULL);
    }
    if (!json_object_get(out, "upstreams")) {
        json_object_set_new(out, "upstreams", json_array());
        json_object_set_new(out, "downstreams", json_array());
    }
    gx_resp_json(resp, 200, out);
    gx_cache_put(req, resp);
}

/* May the caller act on instances of task task_id? ORR_OK, or EPERM naming
 * the team (or the Halley error) in err. */
static orr_status gx_check_team(gx_req *req, int64_t task_id, orr_err *err)
{
    gx_app *app = req->app;
    if (req->who.role == GX_ROLE_ADMIN)
        return ORR_OK;
    HL(GetTaskRequest) tq = HL_INIT(GET_TASK_REQUEST);
    tq.id = task_id;
    HL(Task) *t = NULL;
    orr_status rc = orr_rpc_call_unary(app->halley, "GetTask", &tq.base, (ProtobufCMessage **)&t,
                                       app->rpc_timeout_ms, err);
    if (rc != ORR_OK)
        return rc;
    int allowed = 0;
    for (const char *const *tm = req->who.teams;
         !allowed && req->who.role == GX_ROLE_DEVELOPER && tm && *tm; tm++)
        allowed = strcmp(*tm, t->team) == 0;
    if (!allowed)
        rc =
            orr_err_set(err, ORR_EPERM, "team",
                        "only developers of team %s (or admins) may act on this instance", t->team);
    protobuf_c_message_free_unpacked(&t->base, NULL);
    return rc;
}

/* Apply action to one instance. On success returns the new instance;
 * otherwise fills err and returns NULL. Never writes resp. */
static HL(Instance) *
    gx_apply(gx_req *req, int64_t id, const struct gx_action *a, const char *reason, orr_err *err)
{
    gx_app *app = req->app;
    for (int tries = 0; tries < 3; tries++) {
        HL(GetInstanceRequest) gq = HL_INIT(GET_INSTANCE_REQUEST);
        gq.id = id;
        HL(Instance) *in = NULL;
        if (orr_rpc_call_unary(app->halley, "GetInstance", &gq.base, (ProtobufCMessage **)&in,
                               app->rpc_timeout_ms, err) != ORR_OK)
            return NULL;
        HL(InstanceState) cur = in->state;
        int64_t task_id = in->task_id;
        protobuf_c_message_free_unpacked(&in->base, NULL);
        if (tries == 0 && gx_check_team(req, task_id, err) != ORR_OK)
            return NULL;
        if (!gx_action_applies(a, cur)) {
            orr_err_set(err, ORR_ESTATE, "action", "cannot %s an instance that is %s", a->name,
                        gx_state_name(cur) ? gx_state_name(cur) : "unknown");
            return NULL;
        }
        HL(TransitionRequest) rq = HL_INIT(TRANSITION_REQUEST);
        rq.instance_id = id;
        rq.expected_state = cur;
        rq.new_state = a->to;
        rq.actor = (char *)gx_actor(req);
        rq.reason = (char *)(reason && *reason ? reason : a->name);
        HL(TransitionResult) *tr = NULL;
        orr_status rc = orr_rpc_call_unary(app->halley, "TransitionInstance", &rq.base,
                                           (ProtobufCMessage **)&tr, app->rpc_timeout_ms, err);
        if (rc == ORR_ECONFLICT)
            continue; /* it moved: read again */
        if (rc != ORR_OK)
            return NULL;
        HL(Instance) *out = tr->instance;
        tr->instance = NULL;
        protobuf_c_message_free_unpacked(&tr->base, NULL);
        if (!out)
            orr_err_set(err, ORR_EINTERNAL, NULL, "halleyd returned no instance");
        return out;
    }
    orr_err_set(err, ORR_ECONFLICT, "id", "the instance kept changing; try again");
    return NULL;
}

static void gx_free_msg_cb(void *p)
{
    protobuf_c_message_free_unpacked((ProtobufCMessage *)p, NULL);
}

void gx_h_instance_action(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    const struct gx_action *a = gx_action_find(gx_req_param(req, 1));
    if (!a) {
        gx_resp_fail(resp, ORR_EINVAL, "action",
                     "must be rerun, suspend, resume, mark-success or kill");
        return;
    }
    const char *reason = NULL;
    if (req->body_len) {
        static const char *const keys[] = {"reason", NULL};
        orr_err e;
        json_t *body = gx_req_json(req, resp);
        if (!body)
            return;
        if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
            orr_json_get_str(body, "", "reason", 0, &reason, &e) != ORR_OK) {
            gx_resp_err(resp, &e);
            return;
        }
    }
    orr_err e;
    orr_err_clear(&e);
    HL(Instance) *in = gx_apply(req, id, a, reason, &e);
    if (!in) {
        gx_resp_err(resp, &e);
        return;
    }
    orr_arena_on_cleanup(req->arena, gx_free_msg_cb, in);
    gx_resp_json(resp, 200, gx_instance_json(in));
}

void gx_h_instances_bulk(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"ids", "action", "reason", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *action = NULL, *reason = NULL;
    json_t *ids = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_array(body, "", "ids", 1, &ids, &e) != ORR_OK ||
        orr_json_get_str(body, "", "action", 1, &action, &e) != ORR_OK ||
        orr_json_get_str(body, "", "reason", 0, &reason, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    const struct gx_action *a = gx_action_find(action);
    if (!a) {
        gx_resp_fail(resp, ORR_EINVAL, "action",
                     "must be rerun, suspend, resume, mark-success or kill");
        return;
    }
    size_t n = json_array_size(ids);
    if (n == 0 || n > 500) {
        gx_resp_fail(resp, ORR_EINVAL, "ids", "must hold 1 to 500 instance ids");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(ids, i);
        if (!json_is_integer(v) || json_integer_value(v) <= 0) {
            char p[32];
            gx_resp_fail(resp, ORR_EINVAL, orr_json_index_path(p, sizeof(p), "ids", i),
                         "must be a positive integer");
            return;
        }
    }
    /* Authorisation is all or nothing: check every instance's team first, so a
     * refused request changes nothing. */
    if (req->who.role != GX_ROLE_ADMIN) {
        for (size_t i = 0; i < n; i++) {
            char p[32];
            HL(GetInstanceRequest) gq = HL_INIT(GET_INSTANCE_REQUEST);
            gq.id = json_integer_value(json_array_get(ids, i));
            HL(Instance) * in;
            if (gx_halley(req, resp, "GetInstance", &gq.base, (ProtobufCMessage **)&in) != ORR_OK)
                return;
            orr_err_clear(&e);
            if (gx_check_team(req, in->task_id, &e) != ORR_OK) {
                if (e.code == ORR_EPERM)
                    snprintf(e.field, sizeof(e.field), "%s",
                             orr_json_index_path(p, sizeof(p), "ids", i));
                gx_resp_err(resp, &e);
                return;
            }
        }
    }
    json_t *results = json_array();
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t id = json_integer_value(json_array_get(ids, i));
        orr_err_clear(&e);
        HL(Instance) *in = gx_apply(req, id, a, reason, &e);
        json_t *r = json_pack("{s:I}", "id", (json_int_t)id);
        if (in) {
            ok++;
            json_object_set_new(r, "ok", json_true());
            json_object_set_new(r, "instance", gx_instance_json(in));
            protobuf_c_message_free_unpacked(&in->base, NULL);
        } else {
            json_object_set_new(r, "ok", json_false());
            json_t *eb = orr_json_error_body(&e);
            json_object_set(r, "error", json_object_get(eb, "error"));
            json_decref(eb);
        }
        json_array_append_new(results, r);
    }
    gx_resp_json(resp, 200,
                 json_pack("{s:I,s:I,s:o}", "succeeded", (json_int_t)ok, "failed",
                           (json_int_t)(n - ok), "results", results));
}
