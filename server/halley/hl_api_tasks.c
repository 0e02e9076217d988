/*
 * hl_api_tasks.c - CreateTask, GetTask, ListTasks, UpdateTask, DeactivateTask,
 * ListTaskVersions, RollbackTask, ReactivateTask.
 *
 * A task is a row in tasks plus immutable rows in task_versions; every update
 * writes version current+1 and moves tasks.current_version, in one
 * transaction with the dependency rows, the lineage edges its spec implies
 * (hl_api_lineage.c), an audit record and an event.
 * Instances keep the version they were created with. GetTask of the current
 * version by id is served from hl_cache when possible. A version may carry
 * its author's comment; a rollback writes an old version's spec as a new
 * version that records which one it restores (restored_from), so history
 * only grows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_page.h"
#include "hl_limits.h"
#include "hl_spec.h"
#include "orr_buf.h"
#include "orr_log.h"

#define HL_TASK_COLS                                                                               \
    "t.id, t.name, tm.name, t.type, t.active, v.version, t.current_version, v.spec::text, "        \
    "v.schedule, v.timezone, v.created_by, " HL_MS("v.created_at")

static hl_stmt q_get_task =
    HL_STMT("SELECT " HL_TASK_COLS ", v.comment, coalesce(v.restored_from, 0)"
            " FROM tasks t JOIN teams tm ON tm.id = t.team_id "
            "JOIN task_versions v ON v.task_id = t.id "
            " AND v.version = CASE WHEN $3::int = 0 THEN t.current_version ELSE $3::int END "
            "WHERE ($1::int8 <> 0 AND t.id = $1::int8) OR ($1::int8 = 0 AND t.name = $2)");

/* $7: with the last run (the instance with the latest schedule time, and
 * when it last changed state; one index probe per task on instances
 * (task_id, schedule_time)). */
static hl_stmt q_list_tasks = HL_STMT(
    "SELECT " HL_TASK_COLS
    ", coalesce(lr.state, ''), coalesce(" HL_MS("lr.schedule_time") ", 0), coalesce(" HL_MS(
        "lr.updated_at") ", 0)"
                         " FROM tasks t JOIN teams tm ON tm.id = t.team_id "
                         "JOIN task_versions v ON v.task_id = t.id AND v.version = "
                         "t.current_version "
                         "LEFT JOIN LATERAL (SELECT li.state, li.schedule_time, li.updated_at FROM "
                         "instances "
                         "li WHERE $7::bool"
                         " AND li.task_id = t.id ORDER BY li.schedule_time DESC LIMIT 1) lr ON "
                         "true "
                         "WHERE t.id > $1::int8 AND ($2 = '' OR tm.name = $2) AND ($3 = '' OR "
                         "t.type = $3) "
                         " AND ($4::int = 0 OR t.active = ($4::int = 1)) AND ($5 = '' OR "
                         "starts_with(t.name, $5)) "
                         "ORDER BY t.id LIMIT $6::int");

static hl_stmt q_team_id = HL_STMT("SELECT id FROM teams WHERE name = $1");
static hl_stmt q_task_id = HL_STMT("SELECT id FROM tasks WHERE name = $1");
static hl_stmt q_insert_task =
    HL_STMT("INSERT INTO tasks (name, team_id, type) VALUES ($1, $2::int8, $3) RETURNING id");
static hl_stmt q_insert_version =
    HL_STMT("INSERT INTO task_versions (task_id, version, spec, schedule, timezone, created_by,"
            " comment, restored_from) "
            "VALUES ($1::int8, $2::int, $3::jsonb, $4, $5, $6, $7, nullif($8::int, 0))");
/* The versions of task $1, newest first, below version $2 (0 = from the
 * newest). */
static hl_stmt q_list_versions =
    HL_STMT("SELECT t.id, t.name, tm.name, t.type, t.active, v.version, t.current_version, '', "
            "v.schedule, v.timezone, v.created_by, " HL_MS(
                "v.created_at") ", v.comment,"
                                " coalesce(v.restored_from, 0)"
                                " FROM tasks t JOIN teams tm ON tm.id = t.team_id JOIN "
                                "task_versions v ON v.task_id = t.id"
                                " WHERE t.id = $1::int8 AND ($2::int = 0 OR v.version < $2::int)"
                                " ORDER BY v.version DESC LIMIT $3::int");
static hl_stmt q_task_ref = HL_STMT(
    "SELECT id FROM tasks WHERE ($1::int8 <> 0 AND id = $1::int8) OR ($1::int8 = 0 AND name = $2)");
static hl_stmt q_reactivate =
    HL_STMT("UPDATE tasks SET active = true, updated_at = now() WHERE id = $1::int8");
/* Is $3 the spec of version $2 of task $1 (as JSON values, so key order
 * and spacing do not count)? */
static hl_stmt q_same_spec = HL_STMT("SELECT spec = $3::jsonb FROM task_versions"
                                     " WHERE task_id = $1::int8 AND version = $2::int");
static hl_stmt q_delete_deps = HL_STMT("DELETE FROM task_dependencies WHERE task_id = $1::int8");
static hl_stmt q_insert_dep = HL_STMT(
    "INSERT INTO task_dependencies (task_id, upstream_task_id, kind, cycle, data_unit, position) "
    "VALUES ($1::int8, nullif($2::int8, 0), $3, $4, $5::jsonb, $6::int)");
static hl_stmt q_lock_task = HL_STMT(
    "SELECT t.id, t.name, t.current_version, t.active FROM tasks t "
    "WHERE ($1::int8 <> 0 AND t.id = $1::int8) OR ($1::int8 = 0 AND t.name = $2) FOR UPDATE");
static hl_stmt q_bump_task =
    HL_STMT("UPDATE tasks SET current_version = $2::int, team_id = $3::int8, type = $4, "
            "updated_at = now() WHERE id = $1::int8");
static hl_stmt q_deactivate =
    HL_STMT("UPDATE tasks SET active = false, updated_at = now() WHERE id = $1::int8");

static void hl__fill_task(const PGresult *r, int row, hl_pb_task *t)
{
    orrery__halley__v1__task__init(t);
    t->id = hl_val_i64(r, row, 0);
    t->name = (char *)hl_val(r, row, 1);
    t->team = (char *)hl_val(r, row, 2);
    t->type = (char *)hl_val(r, row, 3);
    t->active = hl_val_bool(r, row, 4);
    t->version = (int32_t)hl_val_i64(r, row, 5);
    t->current_version = (int32_t)hl_val_i64(r, row, 6);
    t->spec_json = (char *)hl_val(r, row, 7);
    t->schedule = (char *)hl_val(r, row, 8);
    t->timezone = (char *)hl_val(r, row, 9);
    t->created_by = (char *)hl_val(r, row, 10);
    t->created_at_ms = hl_val_i64(r, row, 11);
}

/* hl__fill_task, then the columns 12 and 13 of a single-version read
 * (comment, restored_from). */
static void hl__fill_version(const PGresult *r, int row, hl_pb_task *t)
{
    hl__fill_task(r, row, t);
    t->comment = (char *)hl_val(r, row, 12);
    t->restored_from = (int32_t)hl_val_i64(r, row, 13);
}

/* Read a task (version 0 = current) on c into a new message in a. */
static orr_status hl__read_task(hl_conn *c, orr_arena *a, int64_t id, const char *name,
                                int32_t version, hl_pb_task **out, orr_err *err)
{
    const char *p[3] = {hl_i64s(a, id), name ? name : "", orr_arena_sprintf(a, "%d", version)};
    PGresult *r;
    orr_status s = hl_db_query(c, a, &q_get_task, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, version ? "version" : (id ? "id" : "name"),
                           "no such task%s", version ? " version" : "");
    hl_pb_task *t = orr_arena_alloc(a, sizeof *t);
    hl__fill_version(r, 0, t);
    *out = t;
    return ORR_OK;
}

/* Tasks at given versions: pairs ($1[k], $2[k]), each once. */
static hl_stmt q_get_task_versions =
    HL_STMT("SELECT " HL_TASK_COLS ", v.comment, coalesce(v.restored_from, 0)"
            " FROM unnest($1::int8[], $2::int[]) w(id, version)"
            " JOIN tasks t ON t.id = w.id JOIN teams tm ON tm.id = t.team_id"
            " JOIN task_versions v ON v.task_id = t.id AND v.version = w.version");

orr_status hl_task_read_many(hl_conn *c, orr_arena *a, size_t n, const int64_t *ids,
                             const int32_t *versions, hl_pb_task **out, orr_err *err)
{
    int64_t *v64 = orr_arena_alloc(a, (n + 1) * sizeof *v64);
    for (size_t i = 0; i < n; i++) {
        out[i] = NULL;
        v64[i] = versions[i];
    }
    const char *p[2] = {hl_id_array(a, ids, n), hl_id_array(a, v64, n)};
    PGresult *r;
    orr_status s = hl_db_query(c, a, &q_get_task_versions, 2, p, &r, err);
    if (s != ORR_OK)
        return s;
    for (int row = 0; row < PQntuples(r); row++) {
        hl_pb_task *t = orr_arena_alloc(a, sizeof *t);
        hl__fill_version(r, row, t);
        for (size_t i = 0; i < n; i++)
            if (!out[i] && ids[i] == t->id && versions[i] == t->version)
                out[i] = t;
    }
    return ORR_OK;
}

/* Dependency changes that add task edges are serialized by this
 * transaction-level advisory lock, so two concurrent saves cannot each add
 * half of a cycle: the second one sees the first one's edges. */
static hl_stmt q_deps_lock = HL_STMT("SELECT pg_advisory_xact_lock(7425019361)");

/* Every strong/weak edge reachable upstream from $1 (the task being saved,
 * its new edges already written in this transaction), grouped by task. The
 * UNION makes the walk terminate even over a cycle. */
static hl_stmt q_reach_edges = HL_STMT(
    "WITH RECURSIVE r(node) AS (SELECT $1::int8 UNION SELECT d.upstream_task_id FROM r"
    " JOIN task_dependencies d ON d.task_id = r.node AND d.kind IN ('strong', 'weak')"
    " AND d.upstream_task_id IS NOT NULL) "
    "SELECT d.task_id, d.upstream_task_id, t.name FROM r JOIN task_dependencies d"
    " ON d.task_id = r.node AND d.kind IN ('strong', 'weak') AND d.upstream_task_id IS NOT NULL"
    " JOIN tasks t ON t.id = d.upstream_task_id ORDER BY d.task_id, d.position LIMIT 1000001");

#define HL_CYCLE_MAX_EDGES 1000000

typedef struct hl_gnode {
    int64_t id;
    const char *name;
    int first, last; /* its edges: rows [first, last) of the result */
    int parent;      /* BFS tree (-1 = none) */
    int seen;
} hl_gnode;

typedef struct hl_graph {
    hl_gnode *nodes;
    int n, cap;
    int *slots; /* open addressing: node index + 1, 0 = empty */
    size_t mask;
} hl_graph;

static int hl__gnode(hl_graph *g, int64_t id, const char *name)
{
    size_t h = (size_t)((uint64_t)id * 0x9E3779B97F4A7C15ull) & g->mask;
    while (g->slots[h]) {
        if (g->nodes[g->slots[h] - 1].id == id)
            return g->slots[h] - 1;
        h = (h + 1) & g->mask;
    }
    hl_gnode *nd = &g->nodes[g->n];
    *nd = (hl_gnode){id, name, 0, 0, -1, 0};
    g->slots[h] = ++g->n;
    return g->n - 1;
}

/* INVALID_ARGUMENT spec.upstreams naming the cycle when the saved task
 * (task_id, name) now reaches itself through strong/weak edges. */
static orr_status hl__check_cycle(hl_conn *c, orr_arena *a, int64_t task_id, const char *name,
                                  orr_err *err)
{
    const char *p[1] = {hl_i64s(a, task_id)};
    PGresult *r;
    orr_status s = hl_db_query(c, a, &q_reach_edges, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    int rows = PQntuples(r);
    if (rows > HL_CYCLE_MAX_EDGES)
        return orr_err_set(err, ORR_EINVAL, "spec.upstreams",
                           "dependency graph above this task is too large to check");
    hl_graph g = {0};
    g.cap = 2 * rows + 2;
    g.nodes = orr_arena_alloc(a, sizeof *g.nodes * (size_t)g.cap);
    size_t slots = 4;
    while (slots < (size_t)g.cap * 2)
        slots <<= 1;
    g.slots = orr_arena_calloc(a, slots, sizeof *g.slots);
    g.mask = slots - 1;
    int start = hl__gnode(&g, task_id, name);
    for (int i = 0; i < rows; i++) { /* rows are grouped by task_id */
        int u = hl__gnode(&g, hl_val_i64(r, i, 0), NULL);
        if (i == 0 || hl_val_i64(r, i - 1, 0) != g.nodes[u].id)
            g.nodes[u].first = i;
        g.nodes[u].last = i + 1;
        int v = hl__gnode(&g, hl_val_i64(r, i, 1), hl_val(r, i, 2));
        if (!g.nodes[v].name)
            g.nodes[v].name = hl_val(r, i, 2);
    }
    int *queue = orr_arena_alloc(a, sizeof *queue * (size_t)g.n);
    int head = 0, tail = 0, closer = -1;
    queue[tail++] = start;
    g.nodes[start].seen = 1;
    while (head < tail && closer < 0) {
        int u = queue[head++];
        for (int e = g.nodes[u].first; e < g.nodes[u].last; e++) {
            int v = hl__gnode(&g, hl_val_i64(r, e, 1), NULL);
            if (v == start) {
                closer = u;
                break;
            }
            if (!g.nodes[v].seen) {
                g.nodes[v].seen = 1;
                g.nodes[v].parent = u;
                queue[tail++] = v;
            }
        }
    }
    if (closer < 0)
        return ORR_OK;
    int len = 0;
    for (int u = closer; u >= 0; u = g.nodes[u].parent)
        len++;
    const char **chain = orr_arena_alloc(a, sizeof *chain * (size_t)len);
    int k = len;
    for (int u = closer; u >= 0; u = g.nodes[u].parent)
        chain[--k] = g.nodes[u].name ? g.nodes[u].name : "?";
    orr_buf b = ORR_BUF_INIT;
    for (int i = 0; i < len; i++)
        orr_buf_appendf(&b, "%s -> ", chain[i]);
    orr_buf_appendf(&b, "%s", name);
    s = orr_err_set(err, ORR_EINVAL, "spec.upstreams", "dependency cycle: %s", orr_buf_cstr(&b));
    orr_buf_free(&b);
    return s;
}

/* 1 when spec has an edge to a task (strong/weak): only those can close a cycle. */
static int hl__task_edges(const hl_spec *sp)
{
    for (size_t i = 0; i < sp->n_deps; i++)
        if (sp->deps[i].task && strcmp(sp->deps[i].kind, "self") != 0)
            return 1;
    return 0;
}

/* Take the dependency lock when spec adds task edges. Called right after
 * BEGIN, before any row lock: the foreign keys of the dependency rows take
 * KEY SHARE locks on the upstream tasks, so a save that held a task row
 * while waiting here could deadlock with the holder. */
static orr_status hl__deps_lock(hl_conn *c, orr_arena *a, const hl_spec *sp, orr_err *err)
{
    return hl__task_edges(sp) ? hl_db_query(c, a, &q_deps_lock, 0, NULL, NULL, err) : ORR_OK;
}

/* Write dependency rows for spec (after deleting the old ones); refuses a
 * dependency cycle (hl__check_cycle). The caller holds the dependency lock
 * (hl__deps_lock) when spec has task edges. */
static orr_status hl__write_deps(hl_conn *c, orr_arena *a, int64_t task_id, const char *name,
                                 const hl_spec *sp, orr_err *err)
{
    const char *tid = hl_i64s(a, task_id);
    const char *p0[1] = {tid};
    int edges = hl__task_edges(sp);
    orr_status s = hl_db_query(c, a, &q_delete_deps, 1, p0, NULL, err);
    for (size_t i = 0; s == ORR_OK && i < sp->n_deps; i++) {
        const hl_spec_dep *d = &sp->deps[i];
        int64_t up = 0;
        if (strcmp(d->kind, "self") == 0) {
            up = task_id;
        } else if (d->task) {
            const char *pn[1] = {d->task};
            PGresult *r;
            if ((s = hl_db_query(c, a, &q_task_id, 1, pn, &r, err)) != ORR_OK)
                return s;
            if (PQntuples(r) == 0)
                return orr_err_set(err, ORR_EINVAL,
                                   orr_arena_sprintf(a, "spec.upstreams[%zu].task", i),
                                   "unknown task \"%s\"", d->task);
            up = hl_val_i64(r, 0, 0);
        }
        char *unit = NULL;
        if (d->unit) {
            char *dump = json_dumps(d->unit, JSON_COMPACT);
            unit = orr_arena_strdup(a, dump);
            free(dump);
        }
        const char *p[6] = {tid,      hl_i64s(a, up), d->kind,
                            d->cycle, unit,           orr_arena_sprintf(a, "%zu", i)};
        s = hl_db_query(c, a, &q_insert_dep, 6, p, NULL, err);
    }
    if (s == ORR_OK && edges)
        s = hl__check_cycle(c, a, task_id, name, err);
    return s;
}

static orr_status hl__team_id(hl_conn *c, orr_arena *a, const char *team, int64_t *out,
                              orr_err *err)
{
    const char *p[1] = {team};
    PGresult *r;
    orr_status s = hl_db_query(c, a, &q_team_id, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_EINVAL, "spec.team", "unknown team \"%s\"", team);
    *out = hl_val_i64(r, 0, 0);
    return ORR_OK;
}

static const char *hl__canonical(orr_arena *a, const hl_spec *sp)
{
    char *dump = json_dumps(sp->root, JSON_COMPACT);
    const char *s = orr_arena_strdup(a, dump);
    free(dump);
    return s;
}

HL_UNARY(hl_api_create_task)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__CreateTaskRequest);
    hl_spec sp;
    orr_status s = hl_spec_parse(hc->task_schema, rq->spec_json, strlen(rq->spec_json), &sp, err);
    if (s != ORR_OK)
        return s;
    hl_conn *c = NULL;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        goto out;
    int64_t team_id = 0, task_id = 0;
    PGresult *r;
    if ((s = hl_db_begin(c, err)) != ORR_OK || (s = hl__deps_lock(c, a, &sp, err)) != ORR_OK ||
        (s = hl__team_id(c, a, sp.team, &team_id, err)) ||
        (s = hl_limits_apply_db(c, a, sp.type, sp.root, err)) != ORR_OK ||
        (s = hl_calendar_check_spec(c, a, sp.root, err)) != ORR_OK ||
        (s = hl_xfer_check_spec(c, a, sp.type, sp.root, err)) != ORR_OK)
        goto out;
    const char *p[3] = {sp.name, hl_i64s(a, team_id), sp.type};
    s = hl_db_query(c, a, &q_insert_task, 3, p, &r, err);
    if (s == ORR_EEXIST) {
        s = orr_err_set(err, ORR_EEXIST, "spec.name", "a task named \"%s\" exists", sp.name);
        goto out;
    }
    if (s != ORR_OK)
        goto out;
    task_id = hl_val_i64(r, 0, 0);
    const char *tid = hl_i64s(a, task_id);
    const char *pv[8] = {tid, "1", hl__canonical(a, &sp), sp.schedule, sp.timezone, rq->actor,
                         "",  "0"};
    if ((s = hl_db_query(c, a, &q_insert_version, 8, pv, NULL, err)) != ORR_OK ||
        (s = hl__write_deps(c, a, task_id, sp.name, &sp, err)) != ORR_OK ||
        (s = hl_lineage_save_task(c, a, task_id, &sp, err)) != ORR_OK ||
        (s = hl_audit(c, a, rq->actor, "task.create", orr_arena_sprintf(a, "task:%s", sp.name),
                      NULL, err)) != ORR_OK ||
        (s = hl_emit(c, a, "task.created", task_id, 0, NULL,
                     orr_arena_sprintf(a, "{\"name\":%s,\"version\":1}", hl_jstr(a, sp.name)), NULL,
                     err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    hl_cache_invalidate(hc->cache, task_id);
    hl_pb_task *t;
    if ((s = hl__read_task(c, a, task_id, NULL, 0, &t, err)) == ORR_OK)
        *resp = &t->base;
    ORR_INFO("task created", "task_id=%" PRId64 " name=%s", task_id, orr_log_q(sp.name));
out:
    if (c)
        hl_db_put(hc->db, c);
    hl_spec_clear(&sp);
    return s;
}

static void hl__task_from_cache(orr_arena *a, const hl_cached_task *ct, hl_pb_task **out)
{
    hl_pb_task *t = orr_arena_alloc(a, sizeof *t);
    orrery__halley__v1__task__init(t);
    t->id = ct->id;
    t->name = (char *)ct->name;
    t->team = (char *)ct->team;
    t->type = (char *)ct->type;
    t->active = ct->active;
    t->version = ct->version;
    t->current_version = ct->current_version;
    t->spec_json = (char *)ct->spec_json;
    t->schedule = (char *)ct->schedule;
    t->timezone = (char *)ct->timezone;
    t->created_by = (char *)ct->created_by;
    t->created_at_ms = ct->created_at_ms;
    t->comment = (char *)ct->comment;
    t->restored_from = ct->restored_from;
    *out = t;
}

HL_UNARY(hl_api_get_task)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetTaskRequest);
    if (rq->id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    if ((rq->id == 0) == (rq->name[0] == 0))
        return orr_err_set(err, ORR_EINVAL, rq->id ? "name" : "id",
                           "give exactly one of id and name");
    if (rq->version < 0)
        return orr_err_set(err, ORR_EINVAL, "version", "must be >= 0");
    int cacheable = rq->id > 0 && rq->version == 0;
    hl_cached_task ct;
    hl_pb_task *t;
    if (cacheable && hl_cache_get(hc->cache, rq->id, a, &ct)) {
        hl__task_from_cache(a, &ct, &t);
        *resp = &t->base;
        return ORR_OK;
    }
    uint64_t gen = hl_cache_gen(hc->cache);
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    s = hl__read_task(c, a, rq->id, rq->name, rq->version, &t, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    if (cacheable) {
        hl_cached_task put = {t->id,
                              t->name,
                              t->team,
                              t->type,
                              t->active,
                              t->version,
                              t->current_version,
                              t->spec_json,
                              t->schedule,
                              t->timezone,
                              t->created_by,
                              t->created_at_ms,
                              t->comment,
                              t->restored_from};
        hl_cache_put(hc->cache, &put, gen);
    }
    *resp = &t->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_tasks)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListTasksRequest);
    hl_page pg;
    orr_status ps =
        hl_page_begin(a, "tasks", "i", rq->page_size, rq->page_token, HL_PAGE_DEFAULT, &pg, err);
    if (ps != ORR_OK)
        return ps;
    int size = pg.size;
    const char *after = pg.keys[0];
    if (rq->active > 2 || rq->active < 0)
        return orr_err_set(err, ORR_EINVAL, "active", "unknown filter");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[7] = {after,
                        rq->team,
                        rq->type,
                        orr_arena_sprintf(a, "%d", (int)rq->active),
                        rq->name_prefix,
                        orr_arena_sprintf(a, "%d", size + 1),
                        rq->with_last_run ? "true" : "false"};
    PGresult *r;
    s = hl_db_query(c, a, &q_list_tasks, 7, p, &r, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListTasksResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_tasks_response__init(o);
    int n = PQntuples(r);
    int shown = n > size ? size : n;
    o->n_tasks = (size_t)shown;
    o->tasks = hl_alloc_n(a, sizeof *o->tasks, (size_t)shown);
    hl_pb_task *ts = hl_alloc_n(a, sizeof *ts, (size_t)shown);
    for (int i = 0; i < shown; i++) {
        hl__fill_task(r, i, &ts[i]);
        if (rq->with_last_run) {
            ts[i].last_state = hl_pb_state(hl_val(r, i, 12));
            ts[i].last_schedule_time_ms = hl_val_i64(r, i, 13);
            ts[i].last_updated_at_ms = hl_val_i64(r, i, 14);
        }
        o->tasks[i] = &ts[i];
    }
    if (n > size) {
        const char *k[1] = {hl_i64s(a, ts[shown - 1].id)};
        o->next_page_token = hl_page_next(a, &pg, k);
    }
    *resp = &o->base;
    return ORR_OK;
}

/* Lock the task named by id/name; fills id, name, current version, active. */
static orr_status hl__lock_task(hl_conn *c, orr_arena *a, int64_t id, const char *name,
                                int64_t *tid, const char **tname, int *cur, int *active,
                                orr_err *err)
{
    if (id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    if ((id == 0) == (name[0] == 0))
        return orr_err_set(err, ORR_EINVAL, id ? "name" : "id", "give exactly one of id and name");
    const char *p[2] = {hl_i64s(a, id), name};
    PGresult *r;
    orr_status s = hl_db_query(c, a, &q_lock_task, 2, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, id ? "id" : "name", "no such task");
    *tid = hl_val_i64(r, 0, 0);
    *tname = hl_val(r, 0, 1);
    *cur = (int)hl_val_i64(r, 0, 2);
    *active = hl_val_bool(r, 0, 3);
    return ORR_OK;
}

#define HL_COMMENT_MAX 1000

/* Save sp as the next version of the task id/name, in one transaction with
 * its dependencies, audit record (action, with restored_from when not 0)
 * and event; the spec of the current version again is no new version
 * (Task.unchanged). expected (0 = any) makes it a compare-and-set. On
 * success *out is the task as it now is. Takes and returns a connection. */
static orr_status hl__save_version(hl_ctx *hc, orr_arena *a, int64_t id, const char *name,
                                   int32_t expected, const hl_spec *sp, const char *actor,
                                   const char *comment, int restored_from, const char *action,
                                   hl_pb_task **out, orr_err *err)
{
    if (strlen(comment) > HL_COMMENT_MAX)
        return orr_err_set(err, ORR_EINVAL, "comment", "at most %d bytes", HL_COMMENT_MAX);
    hl_conn *c = NULL;
    orr_status s;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK || (s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl__deps_lock(c, a, sp, err)) != ORR_OK)
        goto out;
    int64_t tid = 0, team_id = 0;
    const char *tname;
    int cur, active;
    if ((s = hl__lock_task(c, a, id, name, &tid, &tname, &cur, &active, err)) != ORR_OK)
        goto out;
    if (strcmp(tname, sp->name) != 0) {
        s = orr_err_set(err, ORR_EINVAL, "spec.name", "a task cannot be renamed (is \"%s\")",
                        tname);
        goto out;
    }
    if (expected && expected != cur) {
        s = orr_err_set(err, ORR_ECONFLICT, "expected_version",
                        "task is at version %d, expected %d", cur, (int)expected);
        goto out;
    }
    if ((s = hl__team_id(c, a, sp->team, &team_id, err)) != ORR_OK ||
        (s = hl_limits_apply_db(c, a, sp->type, sp->root, err)) != ORR_OK ||
        (s = hl_calendar_check_spec(c, a, sp->root, err)) != ORR_OK ||
        (s = hl_xfer_check_spec(c, a, sp->type, sp->root, err)) != ORR_OK)
        goto out;
    const char *ts = hl_i64s(a, tid);
    const char *nv = orr_arena_sprintf(a, "%d", cur + 1);
    const char *canon = hl__canonical(a, sp);
    /* The same spec again: no new version, the task as it is. */
    const char *pq[3] = {ts, orr_arena_sprintf(a, "%d", cur), canon};
    PGresult *same;
    if ((s = hl_db_query(c, a, &q_same_spec, 3, pq, &same, err)) != ORR_OK)
        goto out;
    if (PQntuples(same) == 1 && strcmp(hl_val(same, 0, 0), "t") == 0) {
        hl_pb_task *t;
        if ((s = hl_db_commit(c, err)) == ORR_OK &&
            (s = hl__read_task(c, a, tid, NULL, 0, &t, err)) == ORR_OK) {
            t->unchanged = 1;
            *out = t;
        }
        goto out;
    }
    const char *from = orr_arena_sprintf(a, "%d", restored_from);
    const char *detail =
        restored_from
            ? orr_arena_sprintf(a, "{\"version\":%d,\"restored_from\":%d}", cur + 1, restored_from)
            : orr_arena_sprintf(a, "{\"version\":%d}", cur + 1);
    const char *pv[8] = {ts, nv, canon, sp->schedule, sp->timezone, actor, comment, from};
    const char *pb[4] = {ts, nv, hl_i64s(a, team_id), sp->type};
    if ((s = hl_db_query(c, a, &q_insert_version, 8, pv, NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_bump_task, 4, pb, NULL, err)) != ORR_OK ||
        (s = hl__write_deps(c, a, tid, tname, sp, err)) != ORR_OK ||
        (s = hl_lineage_save_task(c, a, tid, sp, err)) != ORR_OK ||
        (s = hl_audit(c, a, actor, action, orr_arena_sprintf(a, "task:%s", tname), detail, err)) !=
            ORR_OK ||
        (s = hl_emit(
             c, a, "task.updated", tid, 0, NULL,
             restored_from
                 ? orr_arena_sprintf(a, "{\"name\":%s,\"version\":%d,\"restored_from\":%d}",
                                     hl_jstr(a, tname), cur + 1, restored_from)
                 : orr_arena_sprintf(a, "{\"name\":%s,\"version\":%d}", hl_jstr(a, tname), cur + 1),
             NULL, err)) != ORR_OK ||
        (s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    hl_cache_invalidate(hc->cache, tid);
    s = hl__read_task(c, a, tid, NULL, 0, out, err);
out:
    if (c)
        hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_update_task)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__UpdateTaskRequest);
    if (rq->expected_version < 0)
        return orr_err_set(err, ORR_EINVAL, "expected_version", "must be >= 0");
    hl_spec sp;
    orr_status s = hl_spec_parse(hc->task_schema, rq->spec_json, strlen(rq->spec_json), &sp, err);
    if (s != ORR_OK)
        return s;
    hl_pb_task *t = NULL;
    s = hl__save_version(hc, a, rq->id, rq->name, rq->expected_version, &sp, rq->actor, rq->comment,
                         0, "task.update", &t, err);
    if (s == ORR_OK)
        *resp = &t->base;
    hl_spec_clear(&sp);
    return s;
}

HL_UNARY(hl_api_rollback_task)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__RollbackTaskRequest);
    if (rq->expected_version < 0)
        return orr_err_set(err, ORR_EINVAL, "expected_version", "must be >= 0");
    if (rq->version <= 0)
        return orr_err_set(err, ORR_EINVAL, "version", "must be a version number (>= 1)");
    if (rq->id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    if ((rq->id == 0) == (rq->name[0] == 0))
        return orr_err_set(err, ORR_EINVAL, rq->id ? "name" : "id",
                           "give exactly one of id and name");
    /* Versions never change, so the old spec is read before the
     * transaction: its dependencies decide whether the save takes the
     * dependency lock, which comes before any row lock. */
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    hl_pb_task *old = NULL;
    s = hl__read_task(c, a, rq->id, rq->name, rq->version, &old, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    hl_spec sp;
    if ((s = hl_spec_parse(hc->task_schema, old->spec_json, strlen(old->spec_json), &sp, err)) !=
        ORR_OK) {
        /* e.g. its schedule no longer fires, or its time zone went away */
        char msg[sizeof err->msg], field[sizeof err->field];
        snprintf(msg, sizeof msg, "%s", err->msg);
        snprintf(field, sizeof field, "%s", err->field);
        return orr_err_set(err, s, field, "version %d cannot be restored: %s", (int)rq->version,
                           msg);
    }
    hl_pb_task *t = NULL;
    const char *comment = rq->comment[0]
                              ? rq->comment
                              : orr_arena_sprintf(a, "rollback to version %d", (int)rq->version);
    s = hl__save_version(hc, a, old->id, "", rq->expected_version, &sp, rq->actor, comment,
                         rq->version, "task.rollback", &t, err);
    if (s == ORR_OK)
        *resp = &t->base;
    hl_spec_clear(&sp);
    return s;
}

HL_UNARY(hl_api_list_task_versions)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListTaskVersionsRequest);
    if (rq->id < 0)
        return orr_err_set(err, ORR_EINVAL, "id", "must be positive");
    if ((rq->id == 0) == (rq->name[0] == 0))
        return orr_err_set(err, ORR_EINVAL, rq->id ? "name" : "id",
                           "give exactly one of id and name");
    hl_page pg;
    orr_status s = hl_page_begin(a, "task_versions", "i", rq->page_size, rq->page_token,
                                 HL_PAGE_DEFAULT, &pg, err);
    if (s != ORR_OK)
        return s;
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *pr[2] = {hl_i64s(a, rq->id), rq->name};
    PGresult *ref, *r = NULL;
    s = hl_db_query(c, a, &q_task_ref, 2, pr, &ref, err);
    if (s == ORR_OK && PQntuples(ref) == 0)
        s = orr_err_set(err, ORR_ENOTFOUND, rq->id ? "id" : "name", "no such task");
    if (s == ORR_OK) {
        const char *p[3] = {hl_val(ref, 0, 0), pg.keys[0], orr_arena_sprintf(a, "%d", pg.size + 1)};
        s = hl_db_query(c, a, &q_list_versions, 3, p, &r, err);
    }
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListTaskVersionsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_task_versions_response__init(o);
    int n = PQntuples(r);
    int shown = n > pg.size ? pg.size : n;
    o->n_versions = (size_t)shown;
    o->versions = hl_alloc_n(a, sizeof *o->versions, (size_t)shown);
    hl_pb_task *ts = hl_alloc_n(a, sizeof *ts, (size_t)shown);
    for (int i = 0; i < shown; i++) {
        hl__fill_version(r, i, &ts[i]);
        o->versions[i] = &ts[i];
    }
    if (n > pg.size) {
        const char *k[1] = {orr_arena_sprintf(a, "%d", (int)ts[shown - 1].version)};
        o->next_page_token = hl_page_next(a, &pg, k);
    }
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_reactivate_task)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ReactivateTaskRequest);
    hl_conn *c = NULL;
    orr_status s;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK || (s = hl_db_begin(c, err)) != ORR_OK)
        goto out;
    int64_t tid;
    const char *tname;
    int cur, active;
    if ((s = hl__lock_task(c, a, rq->id, rq->name, &tid, &tname, &cur, &active, err)) != ORR_OK)
        goto out;
    if (!active) {
        const char *p[1] = {hl_i64s(a, tid)};
        if ((s = hl_db_query(c, a, &q_reactivate, 1, p, NULL, err)) != ORR_OK ||
            (s = hl_audit(
                 c, a, rq->actor, "task.reactivate", orr_arena_sprintf(a, "task:%s", tname),
                 orr_arena_sprintf(a, "{\"reason\":%s}", hl_jstr(a, rq->reason)), err)) != ORR_OK ||
            (s = hl_emit(c, a, "task.reactivated", tid, 0, NULL,
                         orr_arena_sprintf(a, "{\"name\":%s,\"reason\":%s}", hl_jstr(a, tname),
                                           hl_jstr(a, rq->reason)),
                         NULL, err)) != ORR_OK)
            goto out;
    }
    if ((s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    hl_cache_invalidate(hc->cache, tid);
    hl_pb_task *t;
    if ((s = hl__read_task(c, a, tid, NULL, 0, &t, err)) == ORR_OK)
        *resp = &t->base;
out:
    if (c)
        hl_db_put(hc->db, c);
    return s;
}

HL_UNARY(hl_api_deactivate_task)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__DeactivateTaskRequest);
    hl_conn *c = NULL;
    orr_status s;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK || (s = hl_db_begin(c, err)) != ORR_OK)
        goto out;
    int64_t tid;
    const char *tname;
    int cur, active;
    if ((s = hl__lock_task(c, a, rq->id, rq->name, &tid, &tname, &cur, &active, err)) != ORR_OK)
        goto out;
    if (active) {
        const char *p[1] = {hl_i64s(a, tid)};
        if ((s = hl_db_query(c, a, &q_deactivate, 1, p, NULL, err)) != ORR_OK ||
            (s = hl_audit(
                 c, a, rq->actor, "task.deactivate", orr_arena_sprintf(a, "task:%s", tname),
                 orr_arena_sprintf(a, "{\"reason\":%s}", hl_jstr(a, rq->reason)), err)) != ORR_OK ||
            (s = hl_emit(c, a, "task.deactivated", tid, 0, NULL,
                         orr_arena_sprintf(a, "{\"name\":%s,\"reason\":%s}", hl_jstr(a, tname),
                                           hl_jstr(a, rq->reason)),
                         NULL, err)) != ORR_OK)
            goto out;
    }
    if ((s = hl_db_commit(c, err)) != ORR_OK)
        goto out;
    hl_cache_invalidate(hc->cache, tid);
    hl_pb_task *t;
    if ((s = hl__read_task(c, a, tid, NULL, 0, &t, err)) == ORR_OK)
        *resp = &t->base;
out:
    if (c)
        hl_db_put(hc->db, c);
    return s;
}

orr_status hl_task_read(hl_conn *c, orr_arena *a, int64_t id, int32_t version, hl_pb_task **out,
                        orr_err *err)
{
    return hl__read_task(c, a, id, NULL, version, out, err);
}
