/*
 * hl_api_watermarks.c - transfer watermarks: GetWatermark and PutWatermark
 * (a compare-and-set in one statement).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"

#define HL_WATERMARK_NAME  256
#define HL_WATERMARK_VALUE 4096

typedef Orrery__Halley__V1__Watermark hl_pb_watermark;

/* ------------------------------------------------------------ watermarks */

#define HL_WM_COLS "w.value, coalesce(w.instance_id, 0), " HL_MS("w.updated_at")

static hl_stmt q_get_watermark =
    HL_STMT("SELECT " HL_WM_COLS " FROM tasks t LEFT JOIN transfer_watermarks w"
            " ON w.task_id = t.id AND w.name = $2 WHERE t.id = $1::int8");
/* First save: only when none is stored. */
static hl_stmt q_insert_watermark =
    HL_STMT("INSERT INTO transfer_watermarks AS w (task_id, name, value, instance_id)"
            " VALUES ($1::int8, $2, $3, nullif($4::int8, 0))"
            " ON CONFLICT (task_id, name) DO NOTHING RETURNING " HL_WM_COLS);
/* Move: only from the expected value. */
static hl_stmt q_move_watermark =
    HL_STMT("UPDATE transfer_watermarks w SET value = $3, instance_id = nullif($4::int8, 0),"
            " updated_at = now() WHERE w.task_id = $1::int8 AND w.name = $2 AND w.value = $5"
            " RETURNING " HL_WM_COLS);
static hl_stmt q_instance_task = HL_STMT("SELECT task_id FROM instances WHERE id = $1::int8");

static hl_pb_watermark *hl__watermark(orr_arena *a, int64_t task_id, const char *name,
                                      const PGresult *r)
{
    hl_pb_watermark *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__watermark__init(o);
    o->task_id = task_id;
    o->name = orr_arena_strdup(a, name);
    o->value = (char *)hl_val(r, 0, 0);
    o->instance_id = hl_val_i64(r, 0, 1);
    o->updated_at_ms = hl_val_i64(r, 0, 2);
    return o;
}

static orr_status hl__check_watermark_key(int64_t task_id, const char *name, orr_err *err)
{
    if (task_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "task_id", "must be positive");
    if (!hl_is_text(name, HL_WATERMARK_NAME))
        return orr_err_set(err, ORR_EINVAL, "name", "1-256 bytes without control characters");
    return ORR_OK;
}

HL_UNARY(hl_api_get_watermark)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetWatermarkRequest);
    orr_status s = hl__check_watermark_key(rq->task_id, rq->name, err);
    if (s != ORR_OK)
        return s;
    const char *p[2] = {hl_i64s(a, rq->task_id), rq->name};
    PGresult *r = NULL;
    if ((s = hl_db_query_once(hc->db, a, &q_get_watermark, 2, p, &r, err)) != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "task_id", "no such task");
    *resp = &hl__watermark(a, rq->task_id, rq->name, r)->base;
    return ORR_OK;
}

HL_UNARY(hl_api_put_watermark)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutWatermarkRequest);
    orr_status s = hl__check_watermark_key(rq->task_id, rq->name, err);
    if (s != ORR_OK)
        return s;
    if (!hl_is_text(rq->value, HL_WATERMARK_VALUE))
        return orr_err_set(err, ORR_EINVAL, "value", "1-4096 bytes without control characters");
    if (rq->expected[0] && !hl_is_text(rq->expected, HL_WATERMARK_VALUE))
        return orr_err_set(err, ORR_EINVAL, "expected",
                           "\"\" or 1-4096 bytes without control characters");
    if (rq->instance_id < 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be >= 0 (0 = none)");
    const char *p[5] = {hl_i64s(a, rq->task_id), rq->name, rq->value, hl_i64s(a, rq->instance_id),
                        rq->expected};
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    PGresult *r = NULL;
    if (rq->instance_id) {
        if ((s = hl_db_query(c, a, &q_instance_task, 1, &p[3], &r, err)) != ORR_OK)
            goto out;
        if (PQntuples(r) == 0) {
            s = orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
            goto out;
        }
        if (hl_val_i64(r, 0, 0) != rq->task_id) {
            s = orr_err_set(err, ORR_EINVAL, "instance_id", "the instance belongs to task %s",
                            hl_val(r, 0, 0));
            goto out;
        }
    }
    s = hl_db_query(c, a, rq->expected[0] ? &q_move_watermark : &q_insert_watermark,
                    rq->expected[0] ? 5 : 4, p, &r, err);
    if (s == ORR_ENOTFOUND) { /* foreign key: the task (the instance was checked) */
        s = orr_err_set(err, ORR_ENOTFOUND, "task_id", "no such task");
        goto out;
    }
    if (s != ORR_OK || PQntuples(r) > 0)
        goto out;
    /* Nothing written: the task is missing or the stored value moved. */
    PGresult *cur = NULL;
    if ((s = hl_db_query(c, a, &q_get_watermark, 2, p, &cur, err)) != ORR_OK)
        goto out;
    if (PQntuples(cur) == 0)
        s = orr_err_set(err, ORR_ENOTFOUND, "task_id", "no such task");
    else if (hl_val_null(cur, 0, 0))
        s = orr_err_set(err, ORR_ECONFLICT, "expected", "no watermark is stored (expect \"\")");
    else
        s = orr_err_set(err, ORR_ECONFLICT, "expected", "the watermark moved to \"%.200s\"",
                        hl_val(cur, 0, 0));
out:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    *resp = &hl__watermark(a, rq->task_id, rq->name, r)->base;
    return ORR_OK;
}
