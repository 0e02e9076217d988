/*
 * hl_api_suggest.c - SuggestTasks: task name completion for the console's
 * type-ahead. Active tasks whose name contains the query (case-insensitive),
 * those that start with it first (an ordered index range scan on the
 * lower-cased name, stopped at the limit), then by name; one query.
 */
#include <stdio.h>
#include <string.h>

#include "hl_api.h"

#define HL_SUGGEST_DEFAULT 20
#define HL_SUGGEST_MAX     100

/* $1 the lowered query, $2 the limit, $3 the lowered query with LIKE's
 * wildcards escaped. The prefix branch is one range of tasks_name_lower_idx
 * (lower-cased names in byte order: those that start with $1 lie in
 * [$1, $1 || U+10FFFF)), read in order and stopped at the limit; the
 * substring branch scans only when the prefixes did not fill the page. */
#define HL_SUGGEST_KEY    "lower(t.name) COLLATE \"C\""
#define HL_SUGGEST_PREFIX HL_SUGGEST_KEY " >= $1 AND " HL_SUGGEST_KEY " < $1 || chr(1114111)"
static hl_stmt q_suggest = HL_STMT(
    "WITH p AS (SELECT t.id, t.name, t.team_id, 0 AS rank, " HL_SUGGEST_KEY " AS k FROM tasks t"
    " WHERE t.active AND " HL_SUGGEST_PREFIX " ORDER BY " HL_SUGGEST_KEY " LIMIT $2::int),"
    " s AS (SELECT t.id, t.name, t.team_id, 1 AS rank, " HL_SUGGEST_KEY " AS k FROM tasks t"
    " WHERE t.active AND (SELECT count(*) FROM p) < $2::int"
    " AND lower(t.name) LIKE '%' || $3 || '%' AND NOT (" HL_SUGGEST_PREFIX ")"
    " ORDER BY " HL_SUGGEST_KEY " LIMIT $2::int) "
    "SELECT x.id, x.name, tm.name FROM (SELECT * FROM p UNION ALL SELECT * FROM s) x"
    " JOIN teams tm ON tm.id = x.team_id ORDER BY x.rank, x.k LIMIT $2::int");

HL_UNARY(hl_api_suggest_tasks)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__SuggestTasksRequest);
    size_t n = strlen(rq->query);
    if (n > 128)
        return orr_err_set(err, ORR_EINVAL, "query", "at most 128 bytes");
    if (rq->limit < 0 || rq->limit > HL_SUGGEST_MAX)
        return orr_err_set(err, ORR_EINVAL, "limit", "must be 1 to %d (0 = %d)", HL_SUGGEST_MAX,
                           HL_SUGGEST_DEFAULT);
    int limit = rq->limit ? rq->limit : HL_SUGGEST_DEFAULT;
    /* lower-case ASCII (names are ASCII); the LIKE pattern escapes \, % and _ */
    char *low = orr_arena_alloc(a, n + 1), *pat = orr_arena_alloc(a, n * 2 + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = rq->query[i];
        low[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
        if (ch == '\\' || ch == '%' || ch == '_')
            pat[k++] = '\\';
        pat[k++] = low[i];
    }
    low[n] = 0;
    pat[k] = 0;
    const char *p[3] = {low, orr_arena_sprintf(a, "%d", limit), pat};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_suggest, 3, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__SuggestTasksResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__suggest_tasks_response__init(o);
    int rows = PQntuples(r);
    o->n_tasks = (size_t)rows;
    o->tasks = hl_alloc_n(a, sizeof *o->tasks, (size_t)rows);
    Orrery__Halley__V1__TaskSuggestion *ts = hl_alloc_n(a, sizeof *ts, (size_t)rows);
    for (int i = 0; i < rows; i++) {
        orrery__halley__v1__task_suggestion__init(&ts[i]);
        ts[i].id = hl_val_i64(r, i, 0);
        ts[i].name = (char *)hl_val(r, i, 1);
        ts[i].team = (char *)hl_val(r, i, 2);
        o->tasks[i] = &ts[i];
    }
    *resp = &o->base;
    return ORR_OK;
}
