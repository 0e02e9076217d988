/*
 * gx_api_resources.c - "why is it waiting" and resource limits over REST.
 *
 *   GET   /api/v1/instances/{id}/blockers   what keplerd's last evaluation
 *         found holding the instance back (halleyd's GetBlockers), with the
 *         holders of the pools it names; a suspended instance says so
 *   PATCH /api/v1/executors/{name}          drain/resume, slots and labels
 *   GET   /api/v1/quotas, PUT /api/v1/quotas/{team}        team quotas
 *   GET   /api/v1/task-types/limits, PUT /api/v1/task-types/{type}/limits
 *                                           sandbox limits per task type
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "gx_app.h"
#include "orr_json.h"

/* ------------------------------------------------------------ blockers */

static json_t *gx_holders_of(const HL(GetBlockersResponse) * rs, const char *pool)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < rs->n_holders; i++) {
        const HL(PoolHolder) *h = rs->holders[i];
        if (strcmp(h->pool, pool) != 0)
            continue;
        const char *st = gx_state_name(h->state);
        json_array_append_new(
            arr, json_pack("{s:I,s:s,s:o,s:i,s:o}", "instance_id", (json_int_t)h->instance_id,
                           "task", h->task_name, "schedule_time", gx_json_time(h->schedule_time_ms),
                           "tokens", (int)h->tokens, "state", st ? json_string(st) : json_null()));
    }
    return arr;
}

void gx_h_instance_blockers(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    HL(GetBlockersRequest) rq = HL_INIT(GET_BLOCKERS_REQUEST);
    rq.instance_id = id;
    HL(GetBlockersResponse) * rs;
    if (gx_halley(req, resp, "GetBlockers", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    const char *state = gx_state_name(rs->state);
    int waits = rs->state == HL_STATE(WAITING) || rs->state == HL_STATE(READY);
    json_t *list = json_array();
    json_t *evaluated = json_null();
    int current = 0;
    if (rs->state == HL_STATE(SUSPENDED)) {
        json_array_append_new(list, json_pack("{s:s}", "kind", "suspended"));
        current = 1;
    } else if (waits && rs->found && rs->blockers) {
        json_decref(evaluated);
        evaluated = gx_json_time(rs->blockers->evaluated_at_ms);
        current = rs->blockers->attempt == rs->attempt;
        json_t *got = json_loads(rs->blockers->blockers_json, 0, NULL);
        size_t i;
        json_t *b;
        json_array_foreach(got, i, b)
        {
            if (!json_is_object(b))
                continue;
            const char *kind = json_string_value(json_object_get(b, "kind"));
            json_t *ms = json_object_get(b, "schedule_time_ms");
            if (json_is_integer(ms))
                json_object_set_new(b, "schedule_time", gx_json_time(json_integer_value(ms)));
            if (kind && strcmp(kind, "pool") == 0) {
                const char *pool = json_string_value(json_object_get(b, "pool"));
                json_object_set_new(b, "holders", gx_holders_of(rs, pool ? pool : ""));
            }
            json_array_append(list, b);
        }
        json_decref(got);
    }
    json_t *out = json_object();
    json_object_set_new(out, "instance_id", json_integer(id));
    json_object_set_new(out, "state", state ? json_string(state) : json_null());
    json_object_set_new(out, "attempt", json_integer(rs->attempt));
    json_object_set_new(out, "waiting", json_boolean(waits));
    json_object_set_new(out, "evaluated_at", evaluated);
    json_object_set_new(out, "current", json_boolean(current));
    json_object_set_new(out, "blockers", list);
    gx_resp_json(resp, 200, out);
}

/* ------------------------------------------------------------ executors */

void gx_h_executor_update(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"drained", "slots", "labels", NULL};
    orr_err e;
    const char *id = gx_req_param(req, 0);
    if (!gx_check_name(resp, id, "name"))
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    HL(UpdateExecutorRequest) rq = HL_INIT(UPDATE_EXECUTOR_REQUEST);
    rq.id = (char *)id;
    rq.actor = (char *)gx_actor(req);
    json_t *v;
    if ((v = json_object_get(body, "drained"))) {
        if (!json_is_boolean(v)) {
            gx_resp_fail(resp, ORR_EINVAL, "drained", "must be true or false");
            return;
        }
        rq.set_drained = 1;
        rq.drained = json_is_true(v);
    }
    if ((v = json_object_get(body, "slots"))) {
        if (!json_is_null(v) &&
            (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100000)) {
            gx_resp_fail(resp, ORR_EINVAL, "slots",
                         "must be an integer from 0 to 100000, or null for the executor's own");
            return;
        }
        rq.set_slots = 1;
        rq.slots = json_is_null(v) ? -1 : (int32_t)json_integer_value(v);
    }
    if ((v = json_object_get(body, "labels"))) {
        if (!json_is_null(v)) {
            if (!json_is_object(v)) {
                gx_resp_fail(resp, ORR_EINVAL, "labels",
                             "must be an object of strings, or null for the executor's own");
                return;
            }
            const char *k;
            json_t *lv;
            json_object_foreach(v, k, lv)
            {
                if (!json_is_string(lv) || !*k || strlen(k) > 128) {
                    char f[160];
                    gx_resp_fail(resp, ORR_EINVAL, orr_json_path(f, sizeof f, "labels", k),
                                 "labels are \"key\": \"value\" strings, keys of 1-128 bytes");
                    return;
                }
            }
            char *dump = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
            rq.labels_json = orr_arena_strdup(req->arena, dump ? dump : "{}");
            free(dump);
        }
        rq.set_labels = 1;
    }
    if (!rq.set_drained && !rq.set_slots && !rq.set_labels) {
        gx_resp_fail(resp, ORR_EINVAL, "drained",
                     "nothing to change: give drained, slots or labels");
        return;
    }
    HL(Executor) * x;
    if (gx_halley(req, resp, "UpdateExecutor", &rq.base, (ProtobufCMessage **)&x) != ORR_OK)
        return;
    json_t *labels =
        x->labels_override_json[0] ? json_loads(x->labels_override_json, 0, NULL) : NULL;
    gx_resp_json(resp, 200,
                 json_pack("{s:s,s:b,s:o,s:o}", "id", x->id, "drained", x->drained,
                           "slots_override",
                           x->has_slots_override ? json_integer(x->slots_override) : json_null(),
                           "labels_override", labels ? labels : json_null()));
}

/* ------------------------------------------------------------ team quotas */

static json_t *gx_quota_json(const HL(TeamQuota) * q)
{
    return json_pack("{s:s,s:i,s:i,s:o}", "team", q->team, "max_running", (int)q->max_running,
                     "max_slots", (int)q->max_slots, "updated_at", gx_json_time(q->updated_at_ms));
}

void gx_h_quotas_list(gx_req *req, gx_resp *resp)
{
    HL(ListTeamQuotasRequest) rq = HL_INIT(LIST_TEAM_QUOTAS_REQUEST);
    HL(ListTeamQuotasResponse) * rs;
    if (gx_halley(req, resp, "ListTeamQuotas", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_quotas; i++)
        json_array_append_new(items, gx_quota_json(rs->quotas[i]));
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
}

void gx_h_quota_put(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"max_running", "max_slots", NULL};
    orr_err e;
    const char *team = gx_req_param(req, 0);
    if (!gx_check_name(resp, team, "team"))
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    int64_t running = 0, slots = 0;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_int(body, "", "max_running", 1, 0, 1000000, &running, &e) != ORR_OK ||
        orr_json_get_int(body, "", "max_slots", 1, 0, 1000000, &slots, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    HL(PutTeamQuotaRequest) rq = HL_INIT(PUT_TEAM_QUOTA_REQUEST);
    rq.team = (char *)team;
    rq.max_running = (int32_t)running;
    rq.max_slots = (int32_t)slots;
    rq.actor = (char *)gx_actor(req);
    HL(TeamQuota) * q;
    if (gx_halley(req, resp, "PutTeamQuota", &rq.base, (ProtobufCMessage **)&q) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_quota_json(q));
}

/* ------------------------------------------------------------ task type limits */

static json_t *gx_limits_json(const HL(TypeLimits) * t)
{
    json_t *lim = json_loads(t->limits_json && *t->limits_json ? t->limits_json : "{}", 0, NULL);
    return json_pack("{s:s,s:o,s:o}", "type", t->type, "limits", lim ? lim : json_object(),
                     "updated_at", gx_json_time(t->updated_at_ms));
}

void gx_h_type_limits_list(gx_req *req, gx_resp *resp)
{
    HL(ListTypeLimitsRequest) rq = HL_INIT(LIST_TYPE_LIMITS_REQUEST);
    HL(ListTypeLimitsResponse) * rs;
    if (gx_halley(req, resp, "ListTypeLimits", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_items; i++)
        json_array_append_new(items, gx_limits_json(rs->items[i]));
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
}

void gx_h_type_limits_put(gx_req *req, gx_resp *resp)
{
    const char *type = gx_req_param(req, 0);
    if (!gx_check_name(resp, type, "type"))
        return;
    static const char *const keys[] = {"limits", NULL};
    orr_err e;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    json_t *limits = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_obj(body, "", "limits", 1, &limits, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    char *dump = json_dumps(limits, JSON_COMPACT | JSON_SORT_KEYS);
    HL(PutTypeLimitsRequest) rq = HL_INIT(PUT_TYPE_LIMITS_REQUEST);
    rq.type = (char *)type;
    rq.limits_json = orr_arena_strdup(req->arena, dump ? dump : "");
    rq.actor = (char *)gx_actor(req);
    free(dump);
    HL(TypeLimits) * t;
    if (gx_halley(req, resp, "PutTypeLimits", &rq.base, (ProtobufCMessage **)&t) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_limits_json(t));
}
