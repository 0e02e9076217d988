/*
 * hl_api_lineage.c - lineage: AddLineage, ListLineage, SuggestLineageNodes,
 * ReportRunLineage, and the edges recorded when a task or a sort stream is
 * saved (hl_lineage_save_task, hl_lineage_save_stream).
 *
 * Every edge has an origin (migrations/0015): AddLineage's are 'api';
 * a task's save writes 'save' edges (its spec's, hl_lineage.h), replacing
 * that task's previous ones in the save's transaction; a successful
 * transfer run reports 'run' edges (the job it ran), replacing the task's
 * previous run edges; a sort stream's save writes 'stream' edges owned by
 * the stream. Inserts are one statement over arrays (ON CONFLICT DO NOTHING
 * against lineage_edges_identity_idx, so a repeated edge is kept once).
 *
 * An inactive task's edges are kept but not shown: ListLineage and
 * SuggestLineageNodes skip every edge whose task is inactive, so they come
 * back as they were when the task is reactivated. A stream saved inactive
 * has its edges removed.
 *
 * ListLineage walks both directions with recursive CTEs whose rows carry the
 * hop count, so a cycle ends at the depth limit; it adds the edges moved by
 * the tasks the walk reaches and the dependencies between the tasks whose
 * edges it shows, and folds one edge's origins into one row. The answer is
 * bounded by HL_LINEAGE_MAX_EDGES.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_lineage.h"
#include "hl_spec.h"
#include "orr_json.h"
#include "orr_log.h"
#include "orr_buf.h"

#define HL_LINEAGE_MAX_BATCH 1000
#define HL_LINEAGE_NAME_MAX  512
#define HL_LINEAGE_MAX_EDGES 10000

typedef Orrery__Halley__V1__LineageEdge hl_pb_edge;

/* Append s to a PostgreSQL array literal as a quoted element. */
static void hl__arr_text(orr_buf *b, const char *s, int first)
{
    if (!first)
        orr_buf_append_byte(b, ',');
    orr_buf_append_byte(b, '"');
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\')
            orr_buf_append_byte(b, '\\');
        orr_buf_append_byte(b, *p);
    }
    orr_buf_append_byte(b, '"');
}

/* ------------------------------------------------------------ lineage */

static const char *const hl__lineage_kinds[] = {"table",  "file",   "data_unit", "task",
                                                "column", "stream", NULL};
#define HL_LINEAGE_KINDS "one of table, file, data_unit, task, column, stream"

static int hl__lineage_kind(const char *k)
{
    for (size_t i = 0; hl__lineage_kinds[i]; i++)
        if (k && strcmp(k, hl__lineage_kinds[i]) == 0)
            return 1;
    return 0;
}

/* $1..$5: arrays of source kind, source name, target kind, target name,
 * task id (0 = none). */
static hl_stmt q_add_lineage = HL_STMT(
    "INSERT INTO lineage_edges (source_kind, source_name, target_kind, target_name, task_id)"
    " SELECT sk, sn, tk, tn, nullif(t, 0) FROM unnest($1::text[], $2::text[], $3::text[],"
    " $4::text[], $5::int8[]) AS e(sk, sn, tk, tn, t)"
    " ON CONFLICT DO NOTHING RETURNING id");
static hl_stmt q_missing_task =
    HL_STMT("SELECT x, n FROM unnest($1::int8[]) WITH ORDINALITY AS u(x, n) WHERE x <> 0"
            " AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = x) ORDER BY n LIMIT 1");

/* Edges within $3 hops of node ($1, $2): upstream (walking targets back to
 * sources) and downstream; with $5 (columns) the walk starts at every
 * column of table $2 instead. Rows of the walks are (node, hops),
 * deduplicated by UNION, so a cycle stops at the depth limit. Edges of an
 * inactive task are not walked. Added: the edges moved by a task node the
 * walk reaches, and the dependencies between tasks that move shown edges.
 * One row per edge (its origins folded; the save-time detail first). */
/* Edge e (joined to its task as lt) is shown: no task, or an active one.
 * Joins rather than per-row EXISTS keep the plans cheap enough that
 * PostgreSQL does not JIT-compile them. */
#define HL_LIVE_EDGE "(e.task_id IS NULL OR lt.active)"
/* clang-format off */
static hl_stmt q_list_lineage = HL_STMT(
    "WITH RECURSIVE seed(k, n) AS (SELECT $1::text, $2::text WHERE NOT $5::bool"
    "  UNION SELECT 'column', c.n FROM (SELECT source_name n FROM lineage_edges"
    "   WHERE $5::bool AND source_kind = 'column' AND starts_with(source_name, $2 || '.')"
    "   UNION SELECT target_name FROM lineage_edges WHERE $5::bool AND target_kind = 'column'"
    "   AND starts_with(target_name, $2 || '.')) c),"
    " up(k, n, d) AS (SELECT k, n, 0 FROM seed"
    "  UNION SELECT e.source_kind, e.source_name, up.d + 1 FROM up JOIN lineage_edges e"
    "  ON e.target_kind = up.k AND e.target_name = up.n LEFT JOIN tasks lt ON lt.id = e.task_id"
    "  WHERE up.d < $3::int AND " HL_LIVE_EDGE "),"
    " down(k, n, d) AS (SELECT k, n, 0 FROM seed"
    "  UNION SELECT e.target_kind, e.target_name, down.d + 1 FROM down JOIN lineage_edges e"
    "  ON e.source_kind = down.k AND e.source_name = down.n"
    "  LEFT JOIN tasks lt ON lt.id = e.task_id WHERE down.d < $3::int AND " HL_LIVE_EDGE "),"
    " walked AS (SELECT e.id, e.task_id, e.source_kind FROM up JOIN lineage_edges e"
    "  ON e.target_kind = up.k AND e.target_name = up.n LEFT JOIN tasks lt ON lt.id = e.task_id"
    "  WHERE up.d < $3::int AND " HL_LIVE_EDGE
    "  UNION SELECT e.id, e.task_id, e.source_kind FROM down JOIN lineage_edges e"
    "  ON e.source_kind = down.k AND e.source_name = down.n"
    "  LEFT JOIN tasks lt ON lt.id = e.task_id WHERE down.d < $3::int AND " HL_LIVE_EDGE "),"
    " moved AS (SELECT e.id FROM tasks t JOIN lineage_edges e ON e.task_id = t.id"
    "  WHERE NOT $5::bool AND t.active AND e.source_kind NOT IN ('column', 'task')"
    "  AND (t.name IN (SELECT n FROM up WHERE k = 'task')"
    "   OR t.name IN (SELECT n FROM down WHERE k = 'task'))),"
    " seen AS (SELECT t.name FROM tasks t WHERE t.id IN (SELECT task_id FROM walked"
    "  WHERE source_kind NOT IN ('column', 'task') UNION SELECT e.task_id FROM"
    "  lineage_edges e JOIN moved m ON m.id = e.id)),"
    " deps AS (SELECT e.id FROM seen s JOIN lineage_edges e ON e.source_kind = 'task'"
    "  AND e.source_name = s.name LEFT JOIN tasks lt ON lt.id = e.task_id"
    "  WHERE NOT $5::bool AND e.target_kind = 'task' AND " HL_LIVE_EDGE
    "  AND e.target_name IN (SELECT name FROM seen)),"
    " ids AS (SELECT id FROM walked UNION SELECT id FROM moved UNION SELECT id FROM deps)"
    " SELECT e.source_kind, e.source_name, e.target_kind, e.target_name,"
    " coalesce(e.task_id, 0), min(" HL_MS("e.created_at") "), coalesce(t.name, ''),"
    " string_agg(DISTINCT e.origin, ','),"
    " coalesce((array_agg(e.detail::text ORDER BY e.origin = 'save' DESC, e.id)"
    "  FILTER (WHERE e.detail IS NOT NULL))[1], '')"
    " FROM lineage_edges e JOIN ids USING (id) LEFT JOIN tasks t ON t.id = e.task_id"
    " GROUP BY e.source_kind, e.source_name, e.target_kind, e.target_name, e.task_id, t.name"
    " ORDER BY min(e.id) LIMIT $4::int");
/* clang-format on */

/* Node names holding $1 (case-insensitive), of kind $2 ('' = any); prefix
 * matches first, then shorter names. Matched before the union and joined to
 * tasks (not a per-row EXISTS), so the plan stays cheap enough that
 * PostgreSQL does not JIT-compile it. */
static hl_stmt q_suggest_nodes = HL_STMT(
    "SELECT x.k, x.n FROM (SELECT e.source_kind k, e.source_name n, e.task_id t"
    "  FROM lineage_edges e WHERE ($2 = '' OR e.source_kind = $2)"
    "  AND strpos(lower(e.source_name), lower($1)) > 0"
    " UNION ALL SELECT e.target_kind, e.target_name, e.task_id FROM lineage_edges e"
    "  WHERE ($2 = '' OR e.target_kind = $2) AND strpos(lower(e.target_name), lower($1)) > 0) x"
    " LEFT JOIN tasks lt ON lt.id = x.t WHERE x.t IS NULL OR lt.active"
    " GROUP BY x.k, x.n ORDER BY NOT starts_with(lower(x.n), lower($1)), length(x.n), x.n, x.k"
    " LIMIT $3::int");

/* Replace the edges of one origin of task $1 (0 = none) and owner $2. */
static hl_stmt q_delete_origin =
    HL_STMT("DELETE FROM lineage_edges WHERE origin = $3 AND coalesce(task_id, 0) = $1::int8"
            " AND owner = $2");
/* $1..$5 as q_add_lineage's, $6 origin, $7 owner, $8 details (text[],
 * NULL = none). */
static hl_stmt q_add_derived = HL_STMT(
    "INSERT INTO lineage_edges (source_kind, source_name, target_kind, target_name, task_id,"
    " origin, owner, detail)"
    " SELECT sk, sn, tk, tn, nullif(t, 0), $6, $7, d::jsonb FROM unnest($1::text[], $2::text[],"
    " $3::text[], $4::text[], $5::int8[], $8::text[]) AS e(sk, sn, tk, tn, t, d)"
    " ON CONFLICT DO NOTHING");
static hl_stmt q_instance_task = HL_STMT("SELECT task_id FROM instances WHERE id = $1::int8");
static hl_stmt q_ds_database =
    HL_STMT("SELECT coalesce(params->>'database', params->>'dbname', '') FROM data_sources"
            " WHERE name = $1");

static orr_status hl__check_edge(orr_arena *a, const hl_pb_edge *e, size_t i, orr_err *err)
{
    const char *bad = NULL, *why = NULL;
    if (!hl__lineage_kind(e->source_kind))
        bad = "source_kind", why = HL_LINEAGE_KINDS;
    else if (!hl_is_text(e->source_name, HL_LINEAGE_NAME_MAX))
        bad = "source_name", why = "1-512 bytes without control characters";
    else if (!hl__lineage_kind(e->target_kind))
        bad = "target_kind", why = HL_LINEAGE_KINDS;
    else if (!hl_is_text(e->target_name, HL_LINEAGE_NAME_MAX))
        bad = "target_name", why = "1-512 bytes without control characters";
    else if (e->task_id < 0)
        bad = "task_id", why = "must be >= 0 (0 = none)";
    else if (strcmp(e->source_kind, e->target_kind) == 0 &&
             strcmp(e->source_name, e->target_name) == 0)
        bad = "target_name", why = "an edge from a node to itself";
    if (!bad)
        return ORR_OK;
    return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "edges[%zu].%s", i, bad), "%s", why);
}

HL_UNARY(hl_api_add_lineage)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__AddLineageRequest);
    if (rq->n_edges == 0 || rq->n_edges > HL_LINEAGE_MAX_BATCH)
        return orr_err_set(err, ORR_EINVAL, "edges", "give 1 to %d edges", HL_LINEAGE_MAX_BATCH);
    orr_buf b[5] = {ORR_BUF_INIT, ORR_BUF_INIT, ORR_BUF_INIT, ORR_BUF_INIT, ORR_BUF_INIT};
    for (int k = 0; k < 5; k++)
        orr_buf_append_byte(&b[k], '{');
    orr_status s = ORR_OK;
    for (size_t i = 0; i < rq->n_edges && s == ORR_OK; i++) {
        const hl_pb_edge *e = rq->edges[i];
        if ((s = hl__check_edge(a, e, i, err)) != ORR_OK)
            break;
        hl__arr_text(&b[0], e->source_kind, i == 0);
        hl__arr_text(&b[1], e->source_name, i == 0);
        hl__arr_text(&b[2], e->target_kind, i == 0);
        hl__arr_text(&b[3], e->target_name, i == 0);
        orr_buf_appendf(&b[4], "%s%s", i ? "," : "", hl_i64s(a, e->task_id));
    }
    const char *p[5];
    for (int k = 0; k < 5; k++) {
        orr_buf_append_byte(&b[k], '}');
        p[k] = hl_take(a, &b[k]);
    }
    if (s != ORR_OK)
        return s;
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    PGresult *r = NULL;
    if ((s = hl_db_query(c, a, &q_missing_task, 1, &p[4], &r, err)) == ORR_OK && PQntuples(r) > 0) {
        int64_t n = hl_val_i64(r, 0, 1) - 1; /* ordinality is 1-based */
        s = orr_err_set(err, ORR_ENOTFOUND,
                        orr_arena_sprintf(a, "edges[%lld].task_id", (long long)n),
                        "no such task %s", hl_val(r, 0, 0));
    }
    if (s == ORR_OK && (s = hl_db_query(c, a, &q_add_lineage, 5, p, &r, err)) == ORR_ENOTFOUND)
        s = hl_relabel(err, s, "edges", "a task was removed meanwhile");
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__AddLineageResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__add_lineage_response__init(o);
    o->added = PQntuples(r);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_lineage)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListLineageRequest);
    if (!hl__lineage_kind(rq->kind))
        return orr_err_set(err, ORR_EINVAL, "kind", HL_LINEAGE_KINDS);
    if (!hl_is_text(rq->name, HL_LINEAGE_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "1-512 bytes without control characters");
    if (rq->depth < 0 || rq->depth > 10)
        return orr_err_set(err, ORR_EINVAL, "depth", "1..10 (0 = 1)");
    if (rq->columns && strcmp(rq->kind, "table") != 0 && strcmp(rq->kind, "file") != 0)
        return orr_err_set(err, ORR_EINVAL, "columns", "only for a table or a file");
    int depth = rq->depth ? rq->depth : 1;
    const char *p[5] = {rq->kind, rq->name, hl_i64s(a, depth), hl_i64s(a, HL_LINEAGE_MAX_EDGES + 1),
                        rq->columns ? "true" : "false"};
    PGresult *r = NULL;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_lineage, 5, p, &r, err);
    if (s != ORR_OK)
        return s;
    size_t n = (size_t)PQntuples(r);
    if (n > HL_LINEAGE_MAX_EDGES)
        return orr_err_set(err, ORR_ETOOBIG, "depth",
                           "more than %d edges within %d hops; ask for fewer hops",
                           HL_LINEAGE_MAX_EDGES, depth);
    Orrery__Halley__V1__ListLineageResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_lineage_response__init(o);
    o->n_edges = n;
    o->edges = hl_alloc_n(a, sizeof *o->edges, n);
    hl_pb_edge *es = hl_alloc_n(a, sizeof *es, n);
    for (size_t i = 0; i < n; i++) {
        hl_pb_edge *e = &es[i];
        orrery__halley__v1__lineage_edge__init(e);
        e->source_kind = (char *)hl_val(r, (int)i, 0);
        e->source_name = (char *)hl_val(r, (int)i, 1);
        e->target_kind = (char *)hl_val(r, (int)i, 2);
        e->target_name = (char *)hl_val(r, (int)i, 3);
        e->task_id = hl_val_i64(r, (int)i, 4);
        e->created_at_ms = hl_val_i64(r, (int)i, 5);
        e->task_name = (char *)hl_val(r, (int)i, 6);
        e->origins = hl_split_names(a, hl_val(r, (int)i, 7), &e->n_origins);
        e->detail_json = (char *)hl_val(r, (int)i, 8);
        o->edges[i] = e;
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_suggest_lineage_nodes)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__SuggestLineageNodesRequest);
    if (!hl_is_text(rq->q, HL_LINEAGE_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "q", "1-512 bytes without control characters");
    if (rq->kind[0] && !hl__lineage_kind(rq->kind))
        return orr_err_set(err, ORR_EINVAL, "kind", HL_LINEAGE_KINDS " (or empty)");
    if (rq->limit < 0 || rq->limit > 100)
        return orr_err_set(err, ORR_EINVAL, "limit", "1..100 (0 = 20)");
    const char *p[3] = {rq->q, rq->kind, hl_i64s(a, rq->limit ? rq->limit : 20)};
    PGresult *r = NULL;
    orr_status s = hl_db_query_once(hc->db, a, &q_suggest_nodes, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    size_t n = (size_t)PQntuples(r);
    Orrery__Halley__V1__SuggestLineageNodesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__suggest_lineage_nodes_response__init(o);
    o->n_nodes = n;
    o->nodes = hl_alloc_n(a, sizeof *o->nodes, n);
    Orrery__Halley__V1__LineageNode *ns = hl_alloc_n(a, sizeof *ns, n);
    for (size_t i = 0; i < n; i++) {
        orrery__halley__v1__lineage_node__init(&ns[i]);
        ns[i].kind = (char *)hl_val(r, (int)i, 0);
        ns[i].name = (char *)hl_val(r, (int)i, 1);
        o->nodes[i] = &ns[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

/* ------------------------------------------------------ derived edges */

/* Replace the edges of origin/task_id/owner by set, on c. */
static orr_status hl__lineage_replace(hl_conn *c, orr_arena *a, const char *origin, int64_t task_id,
                                      const char *owner, const hl_lin_set *set, orr_err *err)
{
    const char *tid = hl_i64s(a, task_id);
    const char *pd[3] = {tid, owner, origin};
    orr_status s = hl_db_query(c, a, &q_delete_origin, 3, pd, NULL, err);
    if (s != ORR_OK || set->n == 0)
        return s;
    orr_buf b[6] = {ORR_BUF_INIT, ORR_BUF_INIT, ORR_BUF_INIT,
                    ORR_BUF_INIT, ORR_BUF_INIT, ORR_BUF_INIT};
    for (int k = 0; k < 6; k++)
        orr_buf_append_byte(&b[k], '{');
    for (size_t i = 0; i < set->n; i++) {
        const hl_lin_edge *e = &set->e[i];
        hl__arr_text(&b[0], e->sk, i == 0);
        hl__arr_text(&b[1], e->sn, i == 0);
        hl__arr_text(&b[2], e->tk, i == 0);
        hl__arr_text(&b[3], e->tn, i == 0);
        orr_buf_appendf(&b[4], "%s%s", i ? "," : "", tid);
        if (e->detail)
            hl__arr_text(&b[5], e->detail, i == 0);
        else
            orr_buf_appendf(&b[5], "%sNULL", i ? "," : "");
    }
    const char *p[8];
    for (int k = 0; k < 6; k++) {
        orr_buf_append_byte(&b[k], '}');
        p[k < 5 ? k : 7] = hl_take(a, &b[k]);
    }
    p[5] = origin;
    p[6] = owner;
    return hl_db_query(c, a, &q_add_derived, 8, p, NULL, err);
}

typedef struct hl__lin_db {
    hl_conn *c;
    orr_arena *a;
} hl__lin_db;

/* hl_lin_db_fn over data_sources (NULL for an unknown data source or on a
 * database error, which the caller's next statement reports). */
static const char *hl__lin_database(void *arg, const char *datasource)
{
    hl__lin_db *d = arg;
    const char *p[1] = {datasource};
    PGresult *r;
    orr_err e;
    if (hl_db_query(d->c, d->a, &q_ds_database, 1, p, &r, &e) != ORR_OK || PQntuples(r) == 0)
        return NULL;
    return hl_val(r, 0, 0);
}

static void hl__lin_note_dropped(const hl_lin_set *set, const char *what, const char *name)
{
    if (set->dropped)
        ORR_WARN("lineage edges dropped", "what=%s name=%s kept=%zu dropped=%zu", what,
                 orr_log_q(name), set->n, set->dropped);
}

orr_status hl_lineage_save_task(hl_conn *c, orr_arena *a, int64_t task_id, const hl_spec *sp,
                                orr_err *err)
{
    hl_lin_set set;
    hl_lin_set_init(&set, a);
    if (strcmp(sp->type, "transfer") == 0) {
        hl__lin_db d = {c, a};
        hl_lineage_transfer(&set, json_object_get(sp->root, "config"), hl__lin_database, &d);
    }
    hl_lineage_deps(&set, sp);
    hl__lin_note_dropped(&set, "task", sp->name);
    return hl__lineage_replace(c, a, "save", task_id, "", &set, err);
}

orr_status hl_lineage_save_stream(hl_conn *c, orr_arena *a, const char *name, const char *spec,
                                  int active, orr_err *err)
{
    hl_lin_set set;
    hl_lin_set_init(&set, a);
    json_t *doc = NULL;
    if (active && orr_json_parse(spec, strlen(spec), &doc, err) == ORR_OK)
        hl_lineage_stream(&set, name, doc);
    json_decref(doc);
    hl__lin_note_dropped(&set, "stream", name);
    return hl__lineage_replace(c, a, "stream", 0, name, &set, err);
}

HL_UNARY(hl_api_report_run_lineage)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ReportRunLineageRequest);
    if (rq->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    json_t *job = NULL;
    if (orr_json_parse(rq->config_json, strlen(rq->config_json), &job, err) != ORR_OK ||
        !json_is_object(job)) {
        json_decref(job);
        return orr_err_set(err, ORR_EINVAL, "config_json", "must be a JSON object");
    }
    hl_conn *c = NULL;
    PGresult *r;
    const char *p[1] = {hl_i64s(a, rq->instance_id)};
    hl_lin_set set;
    hl_lin_set_init(&set, a);
    orr_status s;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK || (s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_instance_task, 1, p, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
        goto out;
    }
    int64_t task_id = hl_val_i64(r, 0, 0);
    hl__lin_db d = {c, a};
    hl_lineage_transfer(&set, job, hl__lin_database, &d);
    hl__lin_note_dropped(&set, "run", p[0]);
    if ((s = hl__lineage_replace(c, a, "run", task_id, "", &set, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    Orrery__Halley__V1__ReportRunLineageResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__report_run_lineage_response__init(o);
    o->edges = (int32_t)set.n;
    *resp = &o->base;
out:
    json_decref(job);
    if (c)
        hl_db_put(hc->db, c);
    return s;
}
