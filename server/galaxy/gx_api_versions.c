/* gx_api_versions.c - a task's versions and an instance's parameters:
 * the version list, a field-by-field diff of two versions' specs, rollback
 * (an old spec saved as a new version), reactivation of a deactivated task,
 * and the parameter values one instance overrides.
 *
 * Authorisation as for task changes (gx_api_tasks.c): anyone logged in
 * reads; a developer of the task's team (and, for a rollback, of the old
 * spec's team) changes; admins change everything. The work is Halley's
 * (ListTaskVersions, RollbackTask, ReactivateTask, SetInstanceParams), so
 * errors name the field it names. */
#include <stdlib.h>
#include <string.h>

#include "gx_app.h"
#include "orr_json.h"

#define GX_DIFF_MAX 2000 /* changes listed at most */

static HL(Task) * gx_version(gx_req *req, gx_resp *resp, int64_t id, int32_t version)
{
    HL(GetTaskRequest) rq = HL_INIT(GET_TASK_REQUEST);
    rq.id = id;
    rq.version = version;
    HL(Task) * t;
    if (gx_halley(req, resp, "GetTask", &rq.base, (ProtobufCMessage **)&t) != ORR_OK)
        return NULL;
    return t;
}

/* A version's summary as the list and the diff show it (no spec). */
static json_t *gx_version_json(const HL(Task) * t)
{
    return json_pack("{s:i,s:s,s:o,s:s,s:o,s:b}", "version", t->version, "created_by",
                     t->created_by, "created_at", gx_json_time(t->created_at_ms), "comment",
                     t->comment ? t->comment : "", "restored_from",
                     t->restored_from ? json_integer(t->restored_from) : json_null(), "current",
                     t->version == t->current_version);
}

void gx_h_task_versions(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 50, 1, 1000, &limit))
        return;
    HL(ListTaskVersionsRequest) rq = HL_INIT(LIST_TASK_VERSIONS_REQUEST);
    rq.id = id;
    rq.page_size = (int32_t)limit;
    const char *tok = gx_req_query(req, "page_token");
    if (tok)
        rq.page_token = (char *)tok;
    HL(ListTaskVersionsResponse) * rs;
    if (gx_halley(req, resp, "ListTaskVersions", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_versions; i++)
        json_array_append_new(items, gx_version_json(rs->versions[i]));
    const HL(Task) *first = rs->n_versions ? rs->versions[0] : NULL;
    json_t *out = json_pack(
        "{s:I,s:o,s:o,s:o,s:o}", "task_id", (json_int_t)id, "current_version",
        first ? json_integer(first->current_version) : json_null(), "active",
        first ? json_boolean(first->active) : json_null(), "items", items, "next_page_token",
        rs->next_page_token && *rs->next_page_token ? json_string(rs->next_page_token)
                                                    : json_null());
    gx_resp_json(resp, 200, out);
}

/* Flatten v into leaves: path -> value (objects by key, arrays by index;
 * an empty object or array and every scalar is a leaf). */
static void gx_flatten(json_t *v, const char *path, json_t *into)
{
    char sub[512];
    if (json_is_object(v) && json_object_size(v) > 0) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
            gx_flatten(x, sub, into);
        }
    } else if (json_is_array(v) && json_array_size(v) > 0) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            gx_flatten(x, sub, into);
        }
    } else {
        json_object_set(into, path, v);
    }
}

/* The changes from spec a to spec b, field by field, in path order:
 * [{field, change: added|removed|changed, from, to}]. */
static json_t *gx_diff(json_t *a, json_t *b)
{
    json_t *fa = json_object(), *fb = json_object();
    gx_flatten(a, "", fa);
    gx_flatten(b, "", fb);
    json_t *keys = json_array();
    const char *k;
    json_t *x;
    json_object_foreach(fa, k, x) json_array_append_new(keys, json_string(k));
    json_object_foreach(fb, k, x) if (!json_object_get(fa, k))
        json_array_append_new(keys, json_string(k));
    size_t n = json_array_size(keys);
    const char **ks = malloc(sizeof *ks * (n ? n : 1));
    if (!ks)
        abort();
    for (size_t i = 0; i < n; i++)
        ks[i] = json_string_value(json_array_get(keys, i));
    /* insertion sort is enough for a spec's few hundred leaves */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(ks[j - 1], ks[j]) > 0; j--) {
            const char *t = ks[j];
            ks[j] = ks[j - 1];
            ks[j - 1] = t;
        }
    json_t *out = json_array();
    for (size_t i = 0; i < n && json_array_size(out) < GX_DIFF_MAX; i++) {
        json_t *va = json_object_get(fa, ks[i]), *vb = json_object_get(fb, ks[i]);
        if (va && vb && json_equal(va, vb))
            continue;
        json_array_append_new(out, json_pack("{s:s,s:s,s:O?,s:O?}", "field", ks[i], "change",
                                             !va   ? "added"
                                             : !vb ? "removed"
                                                   : "changed",
                                             "from", va, "to", vb));
    }
    free(ks);
    json_decref(keys);
    json_decref(fa);
    json_decref(fb);
    return out;
}

/* A version number from the query (field), or answer 400. */
static int32_t gx_query_version(gx_req *req, gx_resp *resp, const char *field)
{
    int64_t v;
    if (gx_req_query_int(req, resp, field, 0, 1, INT32_MAX, &v))
        return -1;
    if (v == 0) {
        gx_resp_fail(resp, ORR_EINVAL, field, "a version number is required");
        return -1;
    }
    return (int32_t)v;
}

void gx_h_task_diff(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    int32_t from = gx_query_version(req, resp, "from");
    if (from < 0)
        return;
    int32_t to = gx_query_version(req, resp, "to");
    if (to < 0)
        return;
    HL(Task) *a = gx_version(req, resp, id, from);
    if (!a)
        return;
    HL(Task) *b = gx_version(req, resp, id, to);
    if (!b)
        return;
    json_t *sa = json_loads(a->spec_json ? a->spec_json : "{}", 0, NULL);
    json_t *sb = json_loads(b->spec_json ? b->spec_json : "{}", 0, NULL);
    if (!sa)
        sa = json_object();
    if (!sb)
        sb = json_object();
    json_t *changes = gx_diff(sa, sb);
    json_t *va = gx_version_json(a), *vb = gx_version_json(b);
    json_object_set_new(va, "spec", sa);
    json_object_set_new(vb, "spec", sb);
    gx_resp_json(resp, 200,
                 json_pack("{s:I,s:o,s:o,s:o}", "task_id", (json_int_t)id, "from", va, "to", vb,
                           "changes", changes));
}

void gx_h_task_rollback(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"version", "comment", NULL};
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    orr_err e;
    int64_t version = 0;
    const char *comment = "";
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_int(body, "", "version", 1, 1, INT32_MAX, &version, &e) != ORR_OK ||
        orr_json_get_str(body, "", "comment", 0, &comment, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
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
    HL(Task) *cur = gx_version(req, resp, id, 0);
    if (!cur || !gx_require_team(req, resp, cur->team))
        return;
    HL(Task) *old = gx_version(req, resp, id, (int32_t)version);
    if (!old || !gx_require_team(req, resp, old->team))
        return;
    HL(RollbackTaskRequest) rq = HL_INIT(ROLLBACK_TASK_REQUEST);
    rq.id = id;
    rq.version = (int32_t)version;
    rq.actor = (char *)gx_actor(req);
    rq.comment = (char *)comment;
    rq.expected_version = expected;
    HL(Task) * t;
    if (gx_halley(req, resp, "RollbackTask", &rq.base, (ProtobufCMessage **)&t) != ORR_OK)
        return;
    json_t *o = gx_task_json(t);
    json_object_set_new(o, "changed", json_boolean(!t->unchanged));
    gx_resp_json(resp, 200, o);
}

void gx_h_task_reactivate(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    HL(Task) *cur = gx_version(req, resp, id, 0);
    if (!cur || !gx_require_team(req, resp, cur->team))
        return;
    HL(ReactivateTaskRequest) rq = HL_INIT(REACTIVATE_TASK_REQUEST);
    rq.id = id;
    rq.actor = (char *)gx_actor(req);
    const char *reason = gx_req_query(req, "reason");
    rq.reason = (char *)(reason ? reason : "reactivated through the API");
    HL(Task) * t;
    if (gx_halley(req, resp, "ReactivateTask", &rq.base, (ProtobufCMessage **)&t) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_task_json(t));
}

const char *gx_params_text(gx_req *req, json_t *body, const char *key, gx_resp *resp)
{
    json_t *p = json_object_get(body, key);
    if (!p || json_is_null(p))
        return "";
    if (!json_is_object(p)) {
        gx_resp_fail(resp, ORR_EINVAL, key, "must be an object of parameter names to strings");
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(p, k, v) if (!json_is_string(v))
    {
        gx_resp_fail(resp, ORR_EINVAL, orr_arena_sprintf(req->arena, "%s.%s", key, k),
                     "must be a string");
        return NULL;
    }
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(p, &b);
    const char *s = orr_arena_strndup(req->arena, b.data, b.len);
    orr_buf_free(&b);
    return s;
}

void gx_h_instance_params(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"params", NULL};
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    orr_err e;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (!json_object_get(body, "params")) {
        gx_resp_fail(resp, ORR_EINVAL, "params", "is required");
        return;
    }
    const char *params = gx_params_text(req, body, "params", resp);
    if (!params)
        return;
    HL(GetInstanceRequest) gq = HL_INIT(GET_INSTANCE_REQUEST);
    gq.id = id;
    HL(Instance) * in;
    if (gx_halley(req, resp, "GetInstance", &gq.base, (ProtobufCMessage **)&in) != ORR_OK)
        return;
    HL(Task) *t = gx_version(req, resp, in->task_id, 0);
    if (!t || !gx_require_team(req, resp, t->team))
        return;
    HL(SetInstanceParamsRequest) rq = HL_INIT(SET_INSTANCE_PARAMS_REQUEST);
    rq.id = id;
    rq.params_json = (char *)(*params ? params : "{}");
    rq.actor = (char *)gx_actor(req);
    HL(Instance) * out;
    if (gx_halley(req, resp, "SetInstanceParams", &rq.base, (ProtobufCMessage **)&out) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_instance_json(out));
}
