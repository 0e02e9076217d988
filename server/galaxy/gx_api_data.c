/* gx_api_data.c - what Halley knows about data and runs, read (and a little
 * written) over REST: sort streams and their data units, lineage, process
 * statistics of instances and tasks, workflows (the DAG view), the audit log.
 *
 * A stream change is saved in Halley first (PutSortStream, which validates
 * the spec and bumps the version) and then published to ZooKeeper at
 * /orrery/streams/<name> as {"name","version","active","spec"}, where sortd
 * watches it, through galaxyd's one ZooKeeper session (app->zk, lib/orr_zk).
 * galaxyd makes sure the session is connected before saving and refuses the
 * change (503) when it has no [galaxy] zk or cannot reach it within 3 s, so a
 * stream is not saved without a place to publish it; should the write itself
 * fail after the save, the answer is 503 naming the saved version, and
 * repeating the PUT publishes it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gx_app.h"
#include "orr_json.h"
#include "orr_log.h"
#include "orr_zk.h"

static char *gx_dump_arena(gx_req *req, const json_t *v)
{
    orr_buf b = ORR_BUF_INIT;
    orr_json_dump_buf(v, &b);
    char *s = orr_arena_strndup(req->arena, b.data, b.len);
    orr_buf_free(&b);
    return s;
}

static json_t *gx_parse_or_empty(const char *text)
{
    json_t *v = text && *text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_object();
}

/* Time query parameter into *ms (untouched when missing); 0 after a 400. */
static int gx_query_time(gx_req *req, gx_resp *resp, const char *name, int64_t *ms)
{
    const char *v = gx_req_query(req, name);
    if (v && gx_parse_time(v, ms) != ORR_OK) {
        gx_resp_fail(resp, ORR_EINVAL, name, "must be an ISO-8601 time");
        return 0;
    }
    return 1;
}

/* -------------------------------------------------------------- streams */

/* How long a stream change waits for a ZooKeeper session before it is
 * refused. */
#define GX_ZK_PUBLISH_WAIT_MS 3000

static json_t *gx_stream_json(const HL(SortStream) * s)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(s->name));
    json_object_set_new(o, "active", json_boolean(s->active));
    json_object_set_new(o, "version", json_integer(s->version));
    json_object_set_new(o, "updated_at", gx_json_time(s->updated_at_ms));
    json_object_set_new(o, "spec", gx_parse_or_empty(s->spec_json));
    return o;
}

void gx_h_streams_list(gx_req *req, gx_resp *resp)
{
    int active = gx_req_query_bool(req, resp, "active", 0);
    if (active < 0)
        return;
    HL(ListSortStreamsRequest) rq = HL_INIT(LIST_SORT_STREAMS_REQUEST);
    rq.active_only = active;
    HL(ListSortStreamsResponse) * rs;
    if (gx_halley(req, resp, "ListSortStreams", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_streams; i++)
        json_array_append_new(items, gx_stream_json(rs->streams[i]));
    gx_page_answer(req, resp, "streams", items, "name", 0);
}

void gx_h_stream_get(gx_req *req, gx_resp *resp)
{
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    HL(GetSortStreamRequest) rq = HL_INIT(GET_SORT_STREAM_REQUEST);
    rq.name = (char *)name;
    HL(SortStream) * s;
    if (gx_halley(req, resp, "GetSortStream", &rq.base, (ProtobufCMessage **)&s) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_stream_json(s));
}

void gx_h_stream_put(gx_req *req, gx_resp *resp)
{
    gx_app *app = req->app;
    static const char *const keys[] = {"spec", "active", NULL};
    orr_err e;
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    json_t *spec = NULL;
    int active = 1;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_obj(body, "", "spec", 1, &spec, &e) != ORR_OK ||
        orr_json_get_bool(body, "", "active", 0, &active, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (!json_is_object(spec)) {
        gx_resp_fail(resp, ORR_EINVAL, "spec", "must be an object");
        return;
    }
    if (!app->zk_hosts || !*app->zk_hosts || !app->zk) {
        gx_resp_fail(resp, ORR_EUNAVAIL, "zk",
                     "galaxyd has no [galaxy] zk configured, so it cannot publish streams");
        return;
    }
    /* Connect first: a ZooKeeper that cannot be reached saves nothing. */
    if (orr_zk_wait(app->zk, GX_ZK_PUBLISH_WAIT_MS, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    HL(PutSortStreamRequest) rq = HL_INIT(PUT_SORT_STREAM_REQUEST);
    rq.name = (char *)name;
    rq.spec_json = gx_dump_arena(req, spec);
    rq.active = active;
    rq.actor = (char *)gx_actor(req);
    HL(SortStream) * s;
    if (gx_halley(req, resp, "PutSortStream", &rq.base, (ProtobufCMessage **)&s) != ORR_OK)
        return;
    json_t *pub = json_pack("{s:s,s:I,s:b,s:o}", "name", s->name, "version", (json_int_t)s->version,
                            "active", (int)s->active, "spec", gx_parse_or_empty(s->spec_json));
    char *data = gx_dump_arena(req, pub);
    json_decref(pub);
    const char *path = orr_arena_sprintf(req->arena, "/orrery/streams/%s", s->name);
    orr_err_clear(&e);
    orr_status zrc = orr_zk_put(app->zk, path, data, strlen(data), &e);
    if (zrc != ORR_OK) {
        ORR_WARN("stream saved but not published", "stream=%s version=%lld err=%s",
                 orr_log_q(s->name), (long long)s->version, orr_log_q(e.msg));
        gx_resp_fail(resp, ORR_EUNAVAIL, "zk",
                     "saved as version %lld but not published (%s); repeat the PUT",
                     (long long)s->version, e.msg);
        return;
    }
    ORR_INFO("stream published", "stream=%s version=%lld by=%s", orr_log_q(s->name),
             (long long)s->version, orr_log_q(req->who.name));
    gx_resp_json(resp, 200, gx_stream_json(s));
}

void gx_h_stream_units(gx_req *req, gx_resp *resp)
{
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    int64_t limit, from_ms = 0, to_ms = 0;
    if (gx_req_query_int(req, resp, "limit", 500, 1, 1000, &limit) ||
        !gx_query_time(req, resp, "from", &from_ms) || !gx_query_time(req, resp, "to", &to_ms))
        return;
    if (to_ms && to_ms <= from_ms) {
        gx_resp_fail(resp, ORR_EINVAL, "to", "must be after from");
        return;
    }
    int reconciled = gx_req_query_bool(req, resp, "reconciled", 0);
    if (reconciled < 0)
        return;
    HL(ListDataUnitsRequest) rq = HL_INIT(LIST_DATA_UNITS_REQUEST);
    const char *v;
    rq.stream = (char *)name;
    if ((v = gx_req_query(req, "business")))
        rq.business = (char *)v;
    if ((v = gx_req_query(req, "interface")))
        rq.interface = (char *)v;
    rq.from_ms = from_ms;
    rq.to_ms = to_ms;
    rq.reconciled_only = reconciled;
    rq.page_size = (int32_t)limit;
    const char *token = gx_req_query(req, "page_token");
    rq.page_token = (char *)(token ? token : "");
    HL(ListDataUnitsResponse) * rs;
    if (gx_halley(req, resp, "ListDataUnits", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_units; i++) {
        const HL(DataUnit) *u = rs->units[i];
        json_t *o = json_object();
        json_object_set_new(o, "stream", json_string(u->stream));
        json_object_set_new(o, "business", json_string(u->business));
        json_object_set_new(o, "interface", json_string(u->interface));
        json_object_set_new(o, "bucket", gx_json_time(u->bucket_ms));
        json_object_set_new(o, "records", json_integer(u->records));
        json_object_set_new(o, "files", json_integer(u->files));
        json_object_set_new(o, "bytes", json_integer(u->bytes));
        json_object_set_new(o, "late_records", json_integer(u->late_records));
        json_object_set_new(o, "check_version", json_integer(u->check_version));
        json_object_set_new(o, "reconciled", json_boolean(u->reconciled));
        json_object_set_new(o, "updated_at", gx_json_time(u->updated_at_ms));
        json_array_append_new(items, o);
    }
    gx_resp_json(resp, 200,
                 json_pack("{s:o,s:o}", "items", items, "next_page_token",
                           rs->next_page_token && *rs->next_page_token
                               ? json_string(rs->next_page_token)
                               : json_null()));
}

/* -------------------------------------------------------------- lineage */

static const char *const gx__lineage_kinds[] = {"table",  "file",   "data_unit", "task",
                                                "column", "stream", NULL};
#define GX_LINEAGE_KINDS "table, file, data_unit, task, column or stream"

static int gx__lineage_kind(const char *kind)
{
    for (const char *const *k = gx__lineage_kinds; kind && *k; k++)
        if (strcmp(*k, kind) == 0)
            return 1;
    return 0;
}

/* GET /lineage?kind=&name=&depth=&columns=: the edges around a node (with
 * columns, around a table's columns). */
void gx_h_lineage(gx_req *req, gx_resp *resp)
{
    const char *kind = gx_req_query(req, "kind");
    const char *name = gx_req_query(req, "name");
    if (!gx__lineage_kind(kind)) {
        gx_resp_fail(resp, ORR_EINVAL, "kind", "must be " GX_LINEAGE_KINDS);
        return;
    }
    if (!name || !*name || strlen(name) > 512) {
        gx_resp_fail(resp, ORR_EINVAL, "name", "required, at most 512 bytes");
        return;
    }
    int64_t depth;
    if (gx_req_query_int(req, resp, "depth", 1, 1, 10, &depth))
        return;
    int columns = gx_req_query_bool(req, resp, "columns", 0);
    if (columns < 0)
        return;
    if (columns && strcmp(kind, "table") != 0 && strcmp(kind, "file") != 0) {
        gx_resp_fail(resp, ORR_EINVAL, "columns", "only with kind table or file");
        return;
    }
    HL(ListLineageRequest) rq = HL_INIT(LIST_LINEAGE_REQUEST);
    rq.kind = (char *)kind;
    rq.name = (char *)name;
    rq.depth = (int32_t)depth;
    rq.columns = columns;
    HL(ListLineageResponse) * rs;
    if (gx_halley(req, resp, "ListLineage", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *edges = json_array();
    for (size_t i = 0; i < rs->n_edges; i++) {
        const HL(LineageEdge) *l = rs->edges[i];
        json_t *detail = NULL;
        if (l->detail_json && l->detail_json[0])
            detail = json_loads(l->detail_json, 0, NULL);
        json_t *origins = json_array();
        for (size_t k = 0; k < l->n_origins; k++)
            json_array_append_new(origins, json_string(l->origins[k]));
        json_array_append_new(
            edges,
            json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o}", "source_kind", l->source_kind,
                      "source_name", l->source_name, "target_kind", l->target_kind, "target_name",
                      l->target_name, "task_id",
                      l->task_id ? json_integer(l->task_id) : json_null(), "task",
                      l->task_name && l->task_name[0] ? json_string(l->task_name) : json_null(),
                      "origins", origins, "detail", detail ? detail : json_object(), "created_at",
                      gx_json_time(l->created_at_ms)));
    }
    gx_resp_json(resp, 200, json_pack("{s:o}", "edges", edges));
}

/* GET /lineage/names?q=&kind=&limit=: node names holding q (the search
 * box's completion). */
void gx_h_lineage_names(gx_req *req, gx_resp *resp)
{
    const char *q = gx_req_query(req, "q");
    const char *kind = gx_req_query(req, "kind");
    if (!q || !*q || strlen(q) > 512) {
        gx_resp_fail(resp, ORR_EINVAL, "q", "required, at most 512 bytes");
        return;
    }
    if (kind && *kind && !gx__lineage_kind(kind)) {
        gx_resp_fail(resp, ORR_EINVAL, "kind", "must be " GX_LINEAGE_KINDS " (or absent)");
        return;
    }
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 20, 1, 100, &limit))
        return;
    HL(SuggestLineageNodesRequest) rq = HL_INIT(SUGGEST_LINEAGE_NODES_REQUEST);
    rq.q = (char *)q;
    rq.kind = (char *)(kind ? kind : "");
    rq.limit = (int32_t)limit;
    HL(SuggestLineageNodesResponse) * rs;
    if (gx_halley(req, resp, "SuggestLineageNodes", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_nodes; i++)
        json_array_append_new(
            items, json_pack("{s:s,s:s}", "kind", rs->nodes[i]->kind, "name", rs->nodes[i]->name));
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
}

/* ---------------------------------------------------- process statistics */

void gx_h_instance_stats(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    HL(ListProcessStatsRequest) rq = HL_INIT(LIST_PROCESS_STATS_REQUEST);
    rq.instance_id = id;
    HL(ListProcessStatsResponse) * rs;
    if (gx_halley(req, resp, "ListProcessStats", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_stats; i++) {
        const HL(ProcessStat) *s = rs->stats[i];
        json_array_append_new(items, json_pack("{s:i,s:s,s:f,s:o}", "attempt", s->attempt, "key",
                                               s->key, "value", s->value, "recorded_at",
                                               gx_json_time(s->recorded_at_ms)));
    }
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
}

/* One row of the task view: an instance's newest attempt and its stats. */
struct gx_stat_row {
    int64_t instance_id;
    int32_t attempt;
    int64_t schedule_ms;
    json_t *stats;
};

static int gx_stat_row_cmp(const void *a, const void *b)
{
    const struct gx_stat_row *x = a, *y = b;
    if (x->schedule_ms != y->schedule_ms)
        return x->schedule_ms < y->schedule_ms ? -1 : 1;
    return x->instance_id < y->instance_id ? -1 : x->instance_id > y->instance_id;
}

void gx_h_task_stats(gx_req *req, gx_resp *resp)
{
    int64_t id = gx_param_id(req, resp, 0, "id");
    if (!id)
        return;
    int64_t limit;
    if (gx_req_query_int(req, resp, "limit", 100, 1, 1000, &limit))
        return;
    HL(ListProcessStatsRequest) rq = HL_INIT(LIST_PROCESS_STATS_REQUEST);
    rq.task_id = id;
    rq.limit = (int32_t)limit;
    HL(ListProcessStatsResponse) * rs;
    if (gx_halley(req, resp, "ListProcessStats", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    /* The task's newest instances, for their schedule times. */
    HL(ListInstancesRequest) iq = HL_INIT(LIST_INSTANCES_REQUEST);
    iq.task_id = id;
    iq.descending = 1;
    iq.page_size = 1000;
    HL(ListInstancesResponse) * is;
    if (gx_halley(req, resp, "ListInstances", &iq.base, (ProtobufCMessage **)&is) != ORR_OK)
        return;
    struct gx_stat_row *rows =
        orr_arena_calloc(req->arena, rs->n_stats ? rs->n_stats : 1, sizeof(*rows));
    size_t nrows = 0;
    for (size_t i = 0; i < rs->n_stats; i++) {
        const HL(ProcessStat) *s = rs->stats[i];
        struct gx_stat_row *r = NULL;
        for (size_t j = 0; j < nrows && !r; j++)
            if (rows[j].instance_id == s->instance_id)
                r = &rows[j];
        if (!r) {
            r = &rows[nrows++];
            r->instance_id = s->instance_id;
            r->attempt = s->attempt;
            r->stats = json_object();
            for (size_t k = 0; k < is->n_instances; k++)
                if (is->instances[k]->id == s->instance_id)
                    r->schedule_ms = is->instances[k]->schedule_time_ms;
        }
        if (s->attempt > r->attempt) { /* only the newest attempt counts */
            r->attempt = s->attempt;
            json_object_clear(r->stats);
        }
        if (s->attempt == r->attempt)
            json_object_set_new(r->stats, s->key, json_real(s->value));
    }
    qsort(rows, nrows, sizeof(*rows), gx_stat_row_cmp);
    json_t *items = json_array();
    for (size_t i = 0; i < nrows; i++)
        json_array_append_new(items, json_pack("{s:I,s:o,s:i,s:o}", "instance_id",
                                               (json_int_t)rows[i].instance_id, "schedule_time",
                                               gx_json_time(rows[i].schedule_ms), "attempt",
                                               rows[i].attempt, "stats", rows[i].stats));
    gx_resp_json(resp, 200, json_pack("{s:o}", "items", items));
}

/* ------------------------------------------------------------ workflows */

void gx_h_workflows_list(gx_req *req, gx_resp *resp)
{
    HL(ListWorkflowsRequest) rq = HL_INIT(LIST_WORKFLOWS_REQUEST);
    const char *team = gx_req_query(req, "team");
    if (team)
        rq.team = (char *)team;
    HL(ListWorkflowsResponse) * rs;
    if (gx_halley(req, resp, "ListWorkflows", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_workflows; i++)
        json_array_append_new(items, gx_workflow_json(rs->workflows[i]));
    gx_page_answer(req, resp, "workflows", items, "name", 0);
}

/* The DAG view: every task of the workflow with its upstreams (from its
 * spec) and the state of its newest instance, plus the edges between them. */
void gx_h_workflow_get(gx_req *req, gx_resp *resp)
{
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    HL(GetWorkflowRequest) rq = HL_INIT(GET_WORKFLOW_REQUEST);
    rq.name = (char *)name;
    HL(Workflow) * w;
    if (gx_halley(req, resp, "GetWorkflow", &rq.base, (ProtobufCMessage **)&w) != ORR_OK)
        return;
    json_t *out = gx_workflow_json(w);
    json_t *paused = gx_paused_load(req, resp);
    if (!paused) {
        json_decref(out);
        return;
    }
    json_t *tasks = json_array(), *edges = json_array();
    for (size_t i = 0; i < w->n_task_ids && i < 1000; i++) {
        HL(GetTaskRequest) tq = HL_INIT(GET_TASK_REQUEST);
        tq.id = w->task_ids[i];
        HL(Task) * t;
        if (gx_halley(req, resp, "GetTask", &tq.base, (ProtobufCMessage **)&t) != ORR_OK) {
            if (resp->status != 404)
                goto fail;
            /* A task removed since: shown as missing, not an error. */
            orr_buf_reset(&resp->body);
            json_array_append_new(tasks,
                                  json_pack("{s:I,s:b}", "id", (json_int_t)tq.id, "missing", 1));
            continue;
        }
        json_t *tj = gx_task_json(t);
        gx_paused_mark(tj, paused, t->id);
        HL(ListInstancesRequest) iq = HL_INIT(LIST_INSTANCES_REQUEST);
        iq.task_id = t->id;
        iq.descending = 1;
        iq.page_size = 1;
        HL(ListInstancesResponse) * is;
        if (gx_halley(req, resp, "ListInstances", &iq.base, (ProtobufCMessage **)&is) != ORR_OK) {
            json_decref(tj);
            goto fail;
        }
        json_object_set_new(tj, "latest_instance",
                            is->n_instances ? gx_instance_json(is->instances[0]) : json_null());
        /* Upstreams by task name, as the spec writes them. */
        json_t *ups = json_object_get(json_object_get(tj, "spec"), "upstreams");
        json_t *up;
        size_t k;
        json_array_foreach(ups, k, up)
        {
            const char *from = json_string_value(json_object_get(up, "task"));
            const char *kind = json_string_value(json_object_get(up, "kind"));
            if (kind && strcmp(kind, "self") == 0)
                continue;
            if (from)
                json_array_append_new(edges, json_pack("{s:s,s:s,s:s}", "from", from, "to", t->name,
                                                       "kind", kind ? kind : "strong"));
        }
        json_array_append_new(tasks, tj);
    }
    json_object_set_new(out, "tasks", tasks);
    json_object_set_new(out, "edges", edges);
    json_decref(paused);
    gx_resp_json(resp, 200, out);
    return;
fail:
    json_decref(paused);
    json_decref(tasks);
    json_decref(edges);
    json_decref(out);
}

void gx_h_workflow_put(gx_req *req, gx_resp *resp)
{
    static const char *const keys[] = {"team", "task_ids", "description", NULL};
    orr_err e;
    const char *name = gx_req_param(req, 0);
    if (!gx_check_name(resp, name, "name"))
        return;
    json_t *body = gx_req_json(req, resp);
    if (!body)
        return;
    const char *team = NULL, *desc = NULL;
    json_t *ids = NULL;
    if (orr_json_allow_keys(body, "", keys, &e) != ORR_OK ||
        orr_json_get_str(body, "", "team", 1, &team, &e) != ORR_OK ||
        orr_json_get_array(body, "", "task_ids", 1, &ids, &e) != ORR_OK ||
        orr_json_get_str(body, "", "description", 0, &desc, &e) != ORR_OK) {
        gx_resp_err(resp, &e);
        return;
    }
    if (desc && strlen(desc) > 2000) {
        gx_resp_fail(resp, ORR_EINVAL, "description", "at most 2000 bytes");
        return;
    }
    size_t n = json_array_size(ids);
    if (n > 1000) {
        gx_resp_fail(resp, ORR_EINVAL, "task_ids", "at most 1000 tasks");
        return;
    }
    int64_t *list = orr_arena_calloc(req->arena, n ? n : 1, sizeof(*list));
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(ids, i);
        if (!json_is_integer(v) || json_integer_value(v) <= 0) {
            char p[40];
            gx_resp_fail(resp, ORR_EINVAL, orr_json_index_path(p, sizeof(p), "task_ids", i),
                         "must be a positive task id");
            return;
        }
        list[i] = json_integer_value(v);
    }
    if (!gx_require_team(req, resp, team))
        return;
    /* Taking a workflow away from a team needs that team too. */
    HL(GetWorkflowRequest) gq = HL_INIT(GET_WORKFLOW_REQUEST);
    gq.name = (char *)name;
    HL(Workflow) * cur;
    if (gx_halley(req, resp, "GetWorkflow", &gq.base, (ProtobufCMessage **)&cur) == ORR_OK) {
        if (!gx_require_team(req, resp, cur->team))
            return;
    } else if (resp->status != 404) {
        return;
    }
    /* A developer may only put tasks of their own teams in a workflow. */
    if (req->who.role != GX_ROLE_ADMIN) {
        for (size_t i = 0; i < n; i++) {
            HL(GetTaskRequest) tq = HL_INIT(GET_TASK_REQUEST);
            tq.id = list[i];
            HL(Task) * t;
            if (gx_halley(req, resp, "GetTask", &tq.base, (ProtobufCMessage **)&t) != ORR_OK) {
                if (resp->status == 404) {
                    char p[40];
                    gx_resp_fail(resp, ORR_EINVAL, orr_json_index_path(p, sizeof(p), "task_ids", i),
                                 "no task with id %lld", (long long)list[i]);
                }
                return;
            }
            if (!gx_require_team(req, resp, t->team))
                return;
        }
    }
    orr_buf_reset(&resp->body);
    HL(PutWorkflowRequest) rq = HL_INIT(PUT_WORKFLOW_REQUEST);
    rq.name = (char *)name;
    rq.team = (char *)team;
    rq.n_task_ids = n;
    rq.task_ids = list;
    rq.set_description = desc != NULL;
    rq.description = (char *)(desc ? desc : "");
    rq.actor = (char *)gx_actor(req);
    HL(Workflow) * w;
    if (gx_halley(req, resp, "PutWorkflow", &rq.base, (ProtobufCMessage **)&w) != ORR_OK)
        return;
    gx_resp_json(resp, 200, gx_workflow_json(w));
}

/* ---------------------------------------------------------------- audit */

void gx_h_audit(gx_req *req, gx_resp *resp)
{
    int64_t limit, before;
    if (gx_req_query_int(req, resp, "limit", 100, 1, 1000, &limit) ||
        gx_req_query_int(req, resp, "before", 0, 0, INT64_MAX, &before))
        return;
    const char *token = gx_req_query(req, "page_token");
    HL(ListAuditRequest) rq = HL_INIT(LIST_AUDIT_REQUEST);
    const char *v;
    if ((v = gx_req_query(req, "actor")))
        rq.actor = (char *)v;
    if ((v = gx_req_query(req, "object")))
        rq.object_prefix = (char *)v;
    rq.page_size = (int32_t)limit;
    rq.before_id = before; /* deprecated: page_token */
    rq.page_token = (char *)(token ? token : "");
    HL(ListAuditResponse) * rs;
    if (gx_halley(req, resp, "ListAudit", &rq.base, (ProtobufCMessage **)&rs) != ORR_OK)
        return;
    json_t *items = json_array();
    for (size_t i = 0; i < rs->n_entries; i++) {
        const HL(AuditEntry) *a = rs->entries[i];
        json_array_append_new(
            items, json_pack("{s:I,s:s,s:s,s:s,s:o,s:o}", "id", (json_int_t)a->id, "actor",
                             a->actor, "action", a->action, "object", a->object, "detail",
                             gx_parse_or_empty(a->detail_json), "at", gx_json_time(a->at_ms)));
    }
    json_t *out =
        json_pack("{s:o,s:o}", "items", items, "next_page_token",
                  rs->next_page_token && *rs->next_page_token ? json_string(rs->next_page_token)
                                                              : json_null());
    /* deprecated: the id to pass as ?before= */
    if (rs->next_page_token && *rs->next_page_token && rs->n_entries)
        json_object_set_new(
            out, "next",
            json_string(orr_arena_sprintf(req->arena, "%lld",
                                          (long long)rs->entries[rs->n_entries - 1]->id)));
    gx_resp_json(resp, 200, out);
}
