/*
 * hl_api_lineage.c - lineage: AddLineage and ListLineage.
 *
 * AddLineage inserts a batch in one statement (ON CONFLICT DO NOTHING against
 * lineage_edges_identity_idx, so an edge without a task is unique too).
 * ListLineage walks both directions with recursive CTEs whose rows carry the
 * hop count, so a cycle ends at the depth limit; the answer is bounded by
 * HL_LINEAGE_MAX_EDGES.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
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

static const char *const hl__lineage_kinds[] = {"table", "file", "data_unit", "task", NULL};

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
 * sources) and downstream. Rows of the walks are (node, hops), deduplicated
 * by UNION, so a cycle stops at the depth limit. */
static hl_stmt q_list_lineage = HL_STMT(
    "WITH RECURSIVE up(k, n, d) AS (SELECT $1::text, $2::text, 0"
    "  UNION SELECT e.source_kind, e.source_name, up.d + 1 FROM up JOIN lineage_edges e"
    "  ON e.target_kind = up.k AND e.target_name = up.n WHERE up.d < $3::int),"
    " down(k, n, d) AS (SELECT $1::text, $2::text, 0"
    "  UNION SELECT e.target_kind, e.target_name, down.d + 1 FROM down JOIN lineage_edges e"
    "  ON e.source_kind = down.k AND e.source_name = down.n WHERE down.d < $3::int)"
    " SELECT e.source_kind, e.source_name, e.target_kind, e.target_name,"
    " coalesce(e.task_id, 0), " HL_MS("e.created_at") " FROM lineage_edges e"
                                                      " WHERE EXISTS (SELECT 1 FROM up WHERE up.d "
                                                      "< $3::int AND e.target_kind = up.k"
                                                      "  AND e.target_name = up.n)"
                                                      " OR EXISTS (SELECT 1 FROM down WHERE down.d "
                                                      "< $3::int AND e.source_kind = down.k"
                                                      "  AND e.source_name = down.n)"
                                                      " ORDER BY e.id LIMIT $4::int");

static orr_status hl__check_edge(orr_arena *a, const hl_pb_edge *e, size_t i, orr_err *err)
{
    const char *bad = NULL, *why = NULL;
    if (!hl__lineage_kind(e->source_kind))
        bad = "source_kind", why = "one of table, file, data_unit, task";
    else if (!hl_is_text(e->source_name, HL_LINEAGE_NAME_MAX))
        bad = "source_name", why = "1-512 bytes without control characters";
    else if (!hl__lineage_kind(e->target_kind))
        bad = "target_kind", why = "one of table, file, data_unit, task";
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
        return orr_err_set(err, ORR_EINVAL, "kind", "one of table, file, data_unit, task");
    if (!hl_is_text(rq->name, HL_LINEAGE_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "1-512 bytes without control characters");
    if (rq->depth < 0 || rq->depth > 10)
        return orr_err_set(err, ORR_EINVAL, "depth", "1..10 (0 = 1)");
    int depth = rq->depth ? rq->depth : 1;
    const char *p[4] = {rq->kind, rq->name, hl_i64s(a, depth),
                        hl_i64s(a, HL_LINEAGE_MAX_EDGES + 1)};
    PGresult *r = NULL;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_lineage, 4, p, &r, err);
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
        o->edges[i] = e;
    }
    *resp = &o->base;
    return ORR_OK;
}
