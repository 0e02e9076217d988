/*
 * hl_api_history.c - the run history of a workflow: ListWorkflowRuns (the
 * grid: cycles x tasks, each cell the task's instance of that cycle) and
 * GetWorkflowRun (one cycle: every task's instance with the spans it spent
 * queued and running per attempt, and the dependencies between the tasks,
 * for the Gantt view and the graph of that cycle).
 *
 * A cycle is a schedule time at which at least one task of the workflow has
 * an instance. Each handler is ONE statement: the parts of the answer (the
 * workflow row, tasks, cycles, cells, edges, spans) come as rows of one
 * UNION ALL tagged by their first column, ordered by that tag. An unknown
 * workflow has no "w" row and answers NOT_FOUND.
 *
 * The newest cycles come from a LATERAL probe of each task's newest
 * instances on the (task_id, schedule_time) unique index, so the cost grows
 * with tasks x limit, not with the instances a workflow has ever had; the
 * cells are then one range scan of that index per task, from the oldest
 * cycle shown to the newest (every schedule time of the workflow in that
 * range is one of the cycles shown, by how they were chosen, so a task has
 * at most that many: the LIMIT, which also keeps the planner from scanning
 * the whole range across every task instead).
 */
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"

#define HL_RUNS_DEFAULT 30
#define HL_RUNS_MAX     100

typedef Orrery__Halley__V1__RunTask hl_pb_run_task;

/* The statements are kept as written (clang-format would break their
 * lines mid-word); a time column is epoch milliseconds, as HL_MS gives. */
/* clang-format off */
#define HL_WF_TASKS \
    "w AS (SELECT id FROM workflows WHERE name = $1)," \
    " wt AS (SELECT t.id, t.name, t.active FROM workflow_tasks x" \
    "  JOIN tasks t ON t.id = x.task_id WHERE x.workflow_id = (SELECT id FROM w))"

/* $1 workflow, $2 cycles wanted + 1, $3 before ms (0 = none). Rows: tag
 * (0 workflow, 1 task, 2 cycle, 3 cell), a, b, c, d, text:
 *   1: task id, active, -, -, name       2: cycle ms
 *   3: task id, cycle ms, instance id, attempt, state */
static hl_stmt q_runs = HL_STMT(
    "WITH " HL_WF_TASKS ","
    " cy AS (SELECT DISTINCT s.schedule_time FROM wt, LATERAL (SELECT i.schedule_time"
    "  FROM instances i WHERE i.task_id = wt.id"
    "  AND ($3::int8 = 0 OR i.schedule_time < to_timestamp($3::int8 / 1000.0))"
    "  ORDER BY i.schedule_time DESC LIMIT $2::int8) s ORDER BY 1 DESC LIMIT $2::int8)"
    " SELECT 0 AS k, 0::int8 AS a, 0::int8 AS b, 0::int8, 0::int8, ''::text FROM w"
    " UNION ALL SELECT 1, wt.id, wt.active::int::int8, 0, 0, wt.name FROM wt"
    " UNION ALL SELECT 2, (extract(epoch from cy.schedule_time) * 1000)::int8, 0, 0, 0, ''"
    "  FROM cy"
    " UNION ALL SELECT 3, i.task_id, (extract(epoch from i.schedule_time) * 1000)::int8,"
    "  i.id, i.attempt, i.state"
    "  FROM wt, LATERAL (SELECT * FROM instances i WHERE i.task_id = wt.id"
    "   AND i.schedule_time >= (SELECT min(schedule_time) FROM cy)"
    "   AND i.schedule_time <= (SELECT max(schedule_time) FROM cy)"
    "   ORDER BY i.schedule_time LIMIT $2::int8) i"
    " ORDER BY k, a, b");

/* $1 workflow, $2 cycle ms. Rows: tag (0 workflow, 1 task, 2 edge, 3
 * instance, 4 span), a, b, c, d, e, text:
 *   1: task id, active, -, -, -, name
 *   2: task id, upstream task id, -, -, -, kind
 *   3: task id, instance id, attempt, created ms, -, state
 *   4: task id, attempt, queued ms, started ms, ended ms, last state
 * (times 0 when the move did not happen). */
static hl_stmt q_run = HL_STMT(
    "WITH " HL_WF_TASKS ","
    " ins AS (SELECT i.* FROM wt JOIN instances i ON i.task_id = wt.id"
    "  AND i.schedule_time = to_timestamp($2::int8 / 1000.0))"
    " SELECT 0 AS k, 0::int8 AS a, 0::int8 AS b, 0::int8, 0::int8, 0::int8, ''::text FROM w"
    " UNION ALL SELECT 1, wt.id, wt.active::int::int8, 0, 0, 0, wt.name FROM wt"
    " UNION ALL SELECT 2, d.task_id, d.upstream_task_id, 0, 0, 0, d.kind"
    "  FROM task_dependencies d WHERE d.task_id IN (SELECT id FROM wt)"
    "  AND d.upstream_task_id IN (SELECT id FROM wt) AND d.kind IN ('strong', 'weak')"
    " UNION ALL SELECT 3, ins.task_id, ins.id, ins.attempt,"
    "  (extract(epoch from ins.created_at) * 1000)::int8, 0, ins.state FROM ins"
    " UNION ALL SELECT 4, ins.task_id, tr.attempt,"
    "  coalesce((extract(epoch from min(tr.at) FILTER (WHERE tr.to_state = 'ready'))"
    "   * 1000)::int8, 0),"
    "  coalesce((extract(epoch from min(tr.at) FILTER (WHERE tr.to_state = 'running'))"
    "   * 1000)::int8, 0),"
    "  coalesce((extract(epoch from min(tr.at) FILTER (WHERE tr.from_state = 'running'))"
    "   * 1000)::int8, 0),"
    "  (array_agg(tr.to_state ORDER BY tr.id DESC))[1]"
    "  FROM ins JOIN instance_transitions tr ON tr.instance_id = ins.id"
    "  GROUP BY ins.task_id, tr.attempt"
    " ORDER BY k, a, b");
/* clang-format on */

static orr_status hl__check_name(const char *name, orr_err *err)
{
    if (!hl_is_name(name, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "a workflow name is required");
    return ORR_OK;
}

/* Rows [*row, end) of tag k: the first row of the next tag is returned. */
static int hl__tag_end(const PGresult *r, int row, int k)
{
    int n = PQntuples(r);
    while (row < n && hl_val_i64(r, row, 0) == k)
        row++;
    return row;
}

/* The tasks (tag 1 rows [from, to)) into out->tasks; ids by index in *ids. */
static hl_pb_run_task **hl__tasks(orr_arena *a, const PGresult *r, int from, int to, int name_col,
                                  int64_t **ids)
{
    size_t n = (size_t)(to - from);
    hl_pb_run_task **ts = hl_alloc_n(a, sizeof *ts, n);
    hl_pb_run_task *t = hl_alloc_n(a, sizeof *t, n);
    *ids = hl_alloc_n(a, sizeof **ids, n);
    for (size_t i = 0; i < n; i++) {
        orrery__halley__v1__run_task__init(&t[i]);
        t[i].id = hl_val_i64(r, from + (int)i, 1);
        t[i].active = hl_val_i64(r, from + (int)i, 2) != 0;
        t[i].name = (char *)hl_val(r, from + (int)i, name_col);
        (*ids)[i] = t[i].id;
        ts[i] = &t[i];
    }
    return ts;
}

/* Index of v in the ascending ids[0..n), or -1. */
static int hl__find_asc(const int64_t *ids, size_t n, int64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ids[lo] == v ? (int)lo : -1;
}

/* Index of v in the descending ms[0..n), or -1. */
static int hl__find_desc(const int64_t *ms, size_t n, int64_t v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ms[mid] > v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ms[lo] == v ? (int)lo : -1;
}

HL_UNARY(hl_api_list_workflow_runs)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListWorkflowRunsRequest);
    orr_status s = hl__check_name(rq->name, err);
    if (s != ORR_OK)
        return s;
    if (rq->limit < 0 || rq->limit > HL_RUNS_MAX)
        return orr_err_set(err, ORR_EINVAL, "limit", "must be between 1 and %d", HL_RUNS_MAX);
    if (rq->before_ms < 0)
        return orr_err_set(err, ORR_EINVAL, "before_ms", "must not be negative");
    int limit = rq->limit ? rq->limit : HL_RUNS_DEFAULT;
    const char *p[3] = {rq->name, hl_i64s(a, limit + 1), hl_i64s(a, rq->before_ms)};
    PGresult *r;
    if ((s = hl_db_query_once(hc->db, a, &q_runs, 3, p, &r, err)) != ORR_OK)
        return s;
    int n = PQntuples(r);
    if (n == 0 || hl_val_i64(r, 0, 0) != 0)
        return orr_err_set(err, ORR_ENOTFOUND, "name", "no such workflow \"%s\"", rq->name);
    Orrery__Halley__V1__ListWorkflowRunsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_workflow_runs_response__init(o);
    o->name = (char *)rq->name;
    int t0 = 1, t1 = hl__tag_end(r, t0, 1), c1 = hl__tag_end(r, t1, 2);
    int64_t *ids;
    o->tasks = hl__tasks(a, r, t0, t1, 5, &ids);
    o->n_tasks = (size_t)(t1 - t0);
    size_t nc = (size_t)(c1 - t1);
    /* Ascending in the result (ORDER BY a); the answer is newest first. */
    if (nc > (size_t)limit) {
        o->more = 1;
        nc = (size_t)limit;
    }
    o->cycles_ms = hl_alloc_n(a, sizeof *o->cycles_ms, nc);
    o->n_cycles_ms = nc;
    for (size_t i = 0; i < nc; i++)
        o->cycles_ms[i] = hl_val_i64(r, c1 - 1 - (int)i, 1);
    o->cells = hl_alloc_n(a, sizeof *o->cells, (size_t)(n - c1));
    Orrery__Halley__V1__RunCell *cell = hl_alloc_n(a, sizeof *cell, (size_t)(n - c1));
    for (int row = c1; row < n; row++) {
        int ti = hl__find_asc(ids, o->n_tasks, hl_val_i64(r, row, 1));
        int ci = hl__find_desc(o->cycles_ms, nc, hl_val_i64(r, row, 2));
        if (ti < 0 || ci < 0)
            continue; /* the extra cycle that only tells there are more */
        Orrery__Halley__V1__RunCell *x = &cell[o->n_cells];
        orrery__halley__v1__run_cell__init(x);
        x->task = ti;
        x->cycle = ci;
        x->instance_id = hl_val_i64(r, row, 3);
        x->attempt = (int32_t)hl_val_i64(r, row, 4);
        x->state = hl_pb_state(hl_val(r, row, 5));
        o->cells[o->n_cells++] = x;
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_get_workflow_run)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetWorkflowRunRequest);
    orr_status s = hl__check_name(rq->name, err);
    if (s != ORR_OK)
        return s;
    if (rq->cycle_ms <= 0)
        return orr_err_set(err, ORR_EINVAL, "cycle_ms", "a schedule time is required");
    const char *p[2] = {rq->name, hl_i64s(a, rq->cycle_ms)};
    PGresult *r;
    if ((s = hl_db_query_once(hc->db, a, &q_run, 2, p, &r, err)) != ORR_OK)
        return s;
    int n = PQntuples(r);
    if (n == 0 || hl_val_i64(r, 0, 0) != 0)
        return orr_err_set(err, ORR_ENOTFOUND, "name", "no such workflow \"%s\"", rq->name);
    Orrery__Halley__V1__WorkflowRun *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__workflow_run__init(o);
    o->name = (char *)rq->name;
    o->cycle_ms = rq->cycle_ms;
    int t0 = 1, t1 = hl__tag_end(r, t0, 1), e1 = hl__tag_end(r, t1, 2);
    int i1 = hl__tag_end(r, e1, 3);
    int64_t *ids;
    o->tasks = hl__tasks(a, r, t0, t1, 6, &ids);
    o->n_tasks = (size_t)(t1 - t0);

    o->n_edges = (size_t)(e1 - t1);
    o->edges = hl_alloc_n(a, sizeof *o->edges, o->n_edges);
    Orrery__Halley__V1__RunEdge *e = hl_alloc_n(a, sizeof *e, o->n_edges);
    for (size_t i = 0; i < o->n_edges; i++) {
        int row = t1 + (int)i;
        orrery__halley__v1__run_edge__init(&e[i]);
        e[i].task_id = hl_val_i64(r, row, 1);
        e[i].upstream_task_id = hl_val_i64(r, row, 2);
        e[i].kind = (char *)hl_val(r, row, 6);
        o->edges[i] = &e[i];
    }

    /* Instances and spans both come ordered by task id (one instance per
     * task in a cycle): one merge pairs them. */
    size_t ni = (size_t)(i1 - e1), ns = (size_t)(n - i1);
    o->n_instances = ni;
    o->instances = hl_alloc_n(a, sizeof *o->instances, ni);
    Orrery__Halley__V1__RunInstance *in = hl_alloc_n(a, sizeof *in, ni);
    Orrery__Halley__V1__RunSpan *sp = hl_alloc_n(a, sizeof *sp, ns);
    size_t j = 0;
    for (size_t i = 0; i < ni; i++) {
        int row = e1 + (int)i;
        orrery__halley__v1__run_instance__init(&in[i]);
        in[i].task_id = hl_val_i64(r, row, 1);
        in[i].instance_id = hl_val_i64(r, row, 2);
        in[i].attempt = (int32_t)hl_val_i64(r, row, 3);
        in[i].created_at_ms = hl_val_i64(r, row, 4);
        in[i].state = hl_pb_state(hl_val(r, row, 6));
        while (j < ns && hl_val_i64(r, i1 + (int)j, 1) < in[i].task_id)
            j++;
        size_t k = j;
        while (k < ns && hl_val_i64(r, i1 + (int)k, 1) == in[i].task_id)
            k++;
        in[i].n_spans = k - j;
        in[i].spans = hl_alloc_n(a, sizeof *in[i].spans, k - j);
        for (size_t m = j; m < k; m++) {
            int rr = i1 + (int)m;
            Orrery__Halley__V1__RunSpan *x = &sp[m];
            orrery__halley__v1__run_span__init(x);
            x->attempt = (int32_t)hl_val_i64(r, rr, 2);
            x->queued_ms = hl_val_i64(r, rr, 3);
            x->started_ms = hl_val_i64(r, rr, 4);
            x->ended_ms = hl_val_i64(r, rr, 5);
            x->state = hl_pb_state(hl_val(r, rr, 6));
            in[i].spans[m - j] = x;
        }
        j = k;
        o->instances[i] = &in[i];
    }
    *resp = &o->base;
    return ORR_OK;
}
