/*
 * hl_api_stats.c - InstanceStats: outcomes per time bucket and the current
 * queue, for the dashboard.
 *
 * An instance counts in the bucket holding its finished_at, under its
 * current final state: a rerun (back to waiting) clears finished_at, so an
 * instance is counted at most once, by its latest outcome. Both statements
 * are aggregates computed in PostgreSQL; the buckets are laid out here.
 */
#include <string.h>

#include "hl_api.h"

#define HL_STATS_MAX_BUCKETS 10000

/* $1 from ms, $2 to ms, $3 bucket ms, $4 team ("" = all). */
static hl_stmt q_finished =
    HL_STMT("SELECT floor((extract(epoch from i.finished_at) * 1000 - $1::int8) / $3::int8)::int8,"
            " i.state, count(*) FROM instances i JOIN tasks t ON t.id = i.task_id"
            " WHERE i.finished_at >= to_timestamp($1::int8 / 1000.0)"
            " AND i.finished_at < to_timestamp($2::int8 / 1000.0)"
            " AND i.state IN ('success', 'failed', 'killed', 'timed_out', 'marked_success')"
            " AND ($4 = '' OR t.team_id = (SELECT tm.id FROM teams tm WHERE tm.name = $4))"
            " GROUP BY 1, 2");

/* Current queue; running_slots sums the spec's slots (default 1) of the
 * version each running instance runs; then the count of active tasks. */
static hl_stmt q_queue = HL_STMT(
    "SELECT count(*) FILTER (WHERE i.state = 'waiting'), count(*) FILTER (WHERE i.state = 'ready'),"
    " count(*) FILTER (WHERE i.state = 'dispatched'), count(*) FILTER (WHERE i.state = 'running'),"
    " coalesce(sum(CASE WHEN jsonb_typeof(v.spec -> 'slots') = 'number'"
    "  THEN (v.spec ->> 'slots')::numeric::int8 ELSE 1 END) FILTER (WHERE i.state = 'running'), 0),"
    " (SELECT count(*) FROM tasks a WHERE a.active"
    "  AND ($1 = '' OR a.team_id = (SELECT tm.id FROM teams tm WHERE tm.name = $1)))"
    " FROM instances i JOIN tasks t ON t.id = i.task_id"
    " JOIN task_versions v ON v.task_id = i.task_id AND v.version = i.task_version"
    " WHERE i.state IN ('waiting', 'ready', 'dispatched', 'running')"
    " AND ($1 = '' OR t.team_id = (SELECT tm.id FROM teams tm WHERE tm.name = $1))");

HL_UNARY(hl_api_instance_stats)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__InstanceStatsRequest);
    if (rq->from_ms <= 0)
        return orr_err_set(err, ORR_EINVAL, "from_ms", "must be positive");
    if (rq->to_ms <= rq->from_ms)
        return orr_err_set(err, ORR_EINVAL, "to_ms", "must be after from_ms");
    if (rq->bucket_seconds < 60 || rq->bucket_seconds > 86400)
        return orr_err_set(err, ORR_EINVAL, "bucket_seconds", "must be between 60 and 86400");
    if (rq->team[0] && !hl_is_name(rq->team, 128))
        return orr_err_set(err, ORR_EINVAL, "team", "not a team name");
    int64_t bucket_ms = (int64_t)rq->bucket_seconds * 1000;
    int64_t span = rq->to_ms - rq->from_ms; /* > 0, no overflow: both positive */
    int64_t nb = span / bucket_ms + (span % bucket_ms != 0);
    if (nb > HL_STATS_MAX_BUCKETS)
        return orr_err_set(err, ORR_EINVAL, "to_ms", "at most %d buckets (got %lld)",
                           HL_STATS_MAX_BUCKETS, (long long)nb);
    Orrery__Halley__V1__InstanceStatsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__instance_stats_response__init(o);
    o->n_buckets = (size_t)nb;
    o->buckets = orr_arena_alloc(a, sizeof *o->buckets * (size_t)nb);
    Orrery__Halley__V1__StatsBucket *b = orr_arena_alloc(a, sizeof *b * (size_t)nb);
    for (int64_t i = 0; i < nb; i++) {
        orrery__halley__v1__stats_bucket__init(&b[i]);
        b[i].start_ms = rq->from_ms + i * bucket_ms;
        o->buckets[i] = &b[i];
    }
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    const char *p[4] = {hl_i64s(a, rq->from_ms), hl_i64s(a, rq->to_ms), hl_i64s(a, bucket_ms),
                        rq->team};
    const char *pq[1] = {rq->team};
    PGresult *r, *q;
    if ((s = hl_db_query(c, a, &q_finished, 4, p, &r, err)) == ORR_OK)
        s = hl_db_query(c, a, &q_queue, 1, pq, &q, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    for (int row = 0; row < PQntuples(r); row++) {
        long long k = hl_val_i64(r, row, 0);
        if (k < 0 || k >= nb)
            continue; /* rounding at the edges of the range */
        const char *st = hl_val(r, row, 1);
        int64_t n = hl_val_i64(r, row, 2);
        if (strcmp(st, "success") == 0)
            b[k].success += n;
        else if (strcmp(st, "failed") == 0)
            b[k].failed += n;
        else if (strcmp(st, "killed") == 0)
            b[k].killed += n;
        else if (strcmp(st, "timed_out") == 0)
            b[k].timed_out += n;
        else if (strcmp(st, "marked_success") == 0)
            b[k].marked_success += n;
    }
    o->waiting = hl_val_i64(q, 0, 0);
    o->ready = hl_val_i64(q, 0, 1);
    o->dispatched = hl_val_i64(q, 0, 2);
    o->running = hl_val_i64(q, 0, 3);
    o->running_slots = hl_val_i64(q, 0, 4);
    o->active_tasks = hl_val_i64(q, 0, 5);
    *resp = &o->base;
    return ORR_OK;
}
