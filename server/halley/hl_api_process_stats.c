/*
 * hl_api_process_stats.c - process statistics: RecordProcessStats and
 * ListProcessStats. RecordProcessStats upserts (instance, attempt, key) rows
 * and emits "instance.stats"; attempt 0 means the instance's current
 * attempt.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_page.h"
#include "orr_buf.h"

#define HL_STATS_MAX_BATCH 1000

typedef Orrery__Halley__V1__ProcessStat hl_pb_stat;

/* ------------------------------------------------------------ process statistics */

static hl_stmt q_stat_instance =
    HL_STMT("SELECT task_id, attempt FROM instances WHERE id = $1::int8");
/* $1 instance, $2 attempt, $3 keys, $4 values. */
static hl_stmt q_record_stats =
    HL_STMT("INSERT INTO process_stats AS s (instance_id, attempt, key, value)"
            " SELECT $1::int8, $2::int, k, v FROM unnest($3::text[], $4::float8[]) AS x(k, v)"
            " ON CONFLICT (instance_id, attempt, key) DO UPDATE SET value = excluded.value,"
            " recorded_at = now()");
#define HL_STAT_COLS "s.instance_id, s.attempt, s.key, s.value, " HL_MS("s.recorded_at")
static hl_stmt q_stats_by_instance =
    HL_STMT("SELECT " HL_STAT_COLS " FROM process_stats s WHERE s.instance_id = $1::int8"
            " ORDER BY s.attempt, s.key");
static hl_stmt q_stats_by_task =
    HL_STMT("SELECT " HL_STAT_COLS " FROM (SELECT id, schedule_time FROM instances"
            " WHERE task_id = $1::int8 ORDER BY schedule_time DESC, id DESC LIMIT $2::int) i"
            " JOIN process_stats s ON s.instance_id = i.id"
            " ORDER BY i.schedule_time DESC, s.instance_id DESC, s.attempt, s.key");
static hl_stmt q_task_exists = HL_STMT("SELECT 1 FROM tasks WHERE id = $1::int8");

/* 1 if k matches [a-z0-9_.]{1,64}. */
static int hl__is_stat_key(const char *k)
{
    size_t n = k ? strlen(k) : 0;
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)k[i]) || isdigit((unsigned char)k[i]) || k[i] == '_' ||
              k[i] == '.'))
            return 0;
    return 1;
}

HL_UNARY(hl_api_record_process_stats)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__RecordProcessStatsRequest);
    if (rq->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    if (rq->attempt < 0)
        return orr_err_set(err, ORR_EINVAL, "attempt", "must be >= 0 (0 = the current attempt)");
    if (rq->n_stats == 0 || rq->n_stats > HL_STATS_MAX_BATCH)
        return orr_err_set(err, ORR_EINVAL, "stats", "give 1 to %d statistics", HL_STATS_MAX_BATCH);
    orr_buf keys = ORR_BUF_INIT, vals = ORR_BUF_INIT, payload = ORR_BUF_INIT;
    orr_buf_append_byte(&keys, '{');
    orr_buf_append_byte(&vals, '{');
    orr_buf_append_str(&payload, "{\"stats\":{");
    orr_status s = ORR_OK;
    for (size_t i = 0; i < rq->n_stats; i++) {
        const hl_pb_stat *st = rq->stats[i];
        if (!hl__is_stat_key(st->key)) {
            s = orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "stats[%zu].key", i),
                            "1-64 characters of [a-z0-9_.]");
            break;
        }
        for (size_t j = 0; j < i && s == ORR_OK; j++)
            if (strcmp(rq->stats[j]->key, st->key) == 0)
                s = orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "stats[%zu].key", i),
                                "\"%s\" is given twice", st->key);
        if (s != ORR_OK)
            break;
        if (!isfinite(st->value)) {
            s = orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "stats[%zu].value", i),
                            "must be a finite number");
            break;
        }
        orr_buf_appendf(&keys, "%s%s", i ? "," : "", st->key);
        orr_buf_appendf(&vals, "%s%.17g", i ? "," : "", st->value);
        orr_buf_appendf(&payload, "%s\"%s\":%.17g", i ? "," : "", st->key, st->value);
    }
    orr_buf_append_byte(&keys, '}');
    orr_buf_append_byte(&vals, '}');
    const char *karr = hl_take(a, &keys), *varr = hl_take(a, &vals);
    orr_buf_append_str(&payload, "}}");
    const char *pstats = hl_take(a, &payload);
    if (s != ORR_OK)
        return s;

    const char *id = hl_i64s(a, rq->instance_id);
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_stat_instance, 1, &id, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) {
        s = orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
        goto out;
    }
    int64_t task_id = hl_val_i64(r, 0, 0);
    int current = (int)hl_val_i64(r, 0, 1);
    int attempt = rq->attempt ? rq->attempt : current;
    if (attempt > current) {
        s = orr_err_set(err, ORR_EINVAL, "attempt", "the instance is at attempt %d", current);
        goto out;
    }
    const char *p[4] = {id, orr_arena_sprintf(a, "%d", attempt), karr, varr};
    if ((s = hl_db_query(c, a, &q_record_stats, 4, p, NULL, err)) != ORR_OK ||
        (s = hl_emit(c, a, "instance.stats", task_id, rq->instance_id, NULL,
                     orr_arena_sprintf(a, "{\"attempt\":%d,%s", attempt, pstats + 1), NULL, err)) !=
            ORR_OK)
        goto out;
    s = hl_db_commit(c, err);
out:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__RecordProcessStatsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__record_process_stats_response__init(o);
    o->recorded = (int32_t)rq->n_stats;
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_process_stats)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListProcessStatsRequest);
    if ((rq->instance_id != 0) == (rq->task_id != 0))
        return orr_err_set(err, ORR_EINVAL, "instance_id",
                           "give exactly one of instance_id, task_id");
    if (rq->instance_id < 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    if (rq->task_id < 0)
        return orr_err_set(err, ORR_EINVAL, "task_id", "must be positive");
    int limit;
    orr_status ls = hl_page_limit(rq->limit, &limit, err);
    if (ls != ORR_OK)
        return ls;
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    PGresult *r = NULL, *x = NULL;
    if (rq->instance_id) {
        const char *p[1] = {hl_i64s(a, rq->instance_id)};
        if ((s = hl_db_query(c, a, &q_stats_by_instance, 1, p, &r, err)) == ORR_OK &&
            PQntuples(r) == 0 &&
            (s = hl_db_query(c, a, &q_stat_instance, 1, p, &x, err)) == ORR_OK && PQntuples(x) == 0)
            s = orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
    } else {
        const char *p[2] = {hl_i64s(a, rq->task_id), hl_i64s(a, limit)};
        if ((s = hl_db_query(c, a, &q_stats_by_task, 2, p, &r, err)) == ORR_OK &&
            PQntuples(r) == 0 && (s = hl_db_query(c, a, &q_task_exists, 1, p, &x, err)) == ORR_OK &&
            PQntuples(x) == 0)
            s = orr_err_set(err, ORR_ENOTFOUND, "task_id", "no such task");
    }
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListProcessStatsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_process_stats_response__init(o);
    size_t n = (size_t)PQntuples(r);
    o->n_stats = n;
    o->stats = hl_alloc_n(a, sizeof *o->stats, n);
    hl_pb_stat *ss = hl_alloc_n(a, sizeof *ss, n);
    for (size_t i = 0; i < n; i++) {
        hl_pb_stat *st = &ss[i];
        orrery__halley__v1__process_stat__init(st);
        st->instance_id = hl_val_i64(r, (int)i, 0);
        st->attempt = (int32_t)hl_val_i64(r, (int)i, 1);
        st->key = (char *)hl_val(r, (int)i, 2);
        st->value = strtod(hl_val(r, (int)i, 3), NULL);
        st->recorded_at_ms = hl_val_i64(r, (int)i, 4);
        o->stats[i] = st;
    }
    *resp = &o->base;
    return ORR_OK;
}
