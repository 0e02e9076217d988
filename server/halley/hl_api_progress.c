/*
 * hl_api_progress.c - live progress of running transfers:
 * RecordTransferProgress (a point of an attempt's series, from executord)
 * and GetTransferProgress (the series, oldest first).
 *
 * A series is bounded: after a record, an attempt holding more than
 * HL_PROGRESS_MAX points loses every second point of its older half, so the
 * rate chart of a long run keeps its whole span, the old part at a coarser
 * step. No event is emitted (a point a second per running transfer would
 * flood the event table); readers poll. The final figures of an attempt
 * are its process statistics (hl_api_process_stats.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "hl_api.h"

#define HL_PROGRESS_MAX 600

typedef Orrery__Halley__V1__TransferProgressPoint hl_pb_point;

static hl_stmt q_progress_instance = HL_STMT("SELECT attempt FROM instances WHERE id = $1::int8");
static hl_stmt q_progress_insert =
    HL_STMT("INSERT INTO transfer_progress (instance_id, attempt, rows_read, rows_written,"
            " dirty_rows, rows_per_sec, bytes_read, shards_done, shards_total, rows_estimate,"
            " elapsed_s, eta_s) VALUES ($1::int8, $2::int, $3::int8, $4::int8, $5::int8,"
            " $6::float8, $7::int8, $8::int8, $9::int8, $10::int8, $11::float8, $12::float8)");
/* Every second point of the older half, once there are more than $3. */
static hl_stmt q_progress_thin =
    HL_STMT("DELETE FROM transfer_progress t USING (SELECT seq,"
            " row_number() OVER (ORDER BY seq) AS rn, count(*) OVER () AS n"
            " FROM transfer_progress WHERE instance_id = $1::int8 AND attempt = $2::int) x"
            " WHERE t.instance_id = $1::int8 AND t.attempt = $2::int AND t.seq = x.seq"
            " AND x.n > $3::int AND x.rn <= x.n / 2 AND x.rn % 2 = 0");
static hl_stmt q_progress_count =
    HL_STMT("SELECT count(*) FROM transfer_progress WHERE instance_id = $1::int8"
            " AND attempt = $2::int");
static hl_stmt q_progress_list = HL_STMT("SELECT " HL_MS(
    "at") ", rows_read, rows_written, dirty_rows, rows_per_sec,"
          " bytes_read, shards_done, shards_total, rows_estimate, elapsed_s, eta_s"
          " FROM transfer_progress WHERE instance_id = $1::int8 AND attempt = $2::int"
          " ORDER BY seq");

static orr_status hl__check_point(orr_arena *a, const hl_pb_point *p, orr_err *err)
{
    if (!p)
        return orr_err_set(err, ORR_EINVAL, "point", "is required");
    const struct {
        const char *name;
        int64_t v;
    } counts[] = {{"rows_read", p->rows_read},        {"rows_written", p->rows_written},
                  {"dirty_rows", p->dirty_rows},      {"bytes_read", p->bytes_read},
                  {"shards_done", p->shards_done},    {"shards_total", p->shards_total},
                  {"rows_estimate", p->rows_estimate}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (counts[i].v < 0)
            return orr_err_set(err, ORR_EINVAL, orr_arena_sprintf(a, "point.%s", counts[i].name),
                               "must be >= 0");
    if (!isfinite(p->rows_per_sec) || p->rows_per_sec < 0)
        return orr_err_set(err, ORR_EINVAL, "point.rows_per_sec", "must be a finite number >= 0");
    if (!isfinite(p->elapsed_s) || p->elapsed_s < 0)
        return orr_err_set(err, ORR_EINVAL, "point.elapsed_s", "must be a finite number >= 0");
    if (!isfinite(p->eta_s) || p->eta_s < -1)
        return orr_err_set(err, ORR_EINVAL, "point.eta_s",
                           "must be a finite number >= 0, or -1 (unknown)");
    return ORR_OK;
}

/* The instance's current attempt, or ORR_ENOTFOUND naming instance_id. */
static orr_status hl__progress_attempt(hl_conn *c, orr_arena *a, int64_t id, int *current,
                                       orr_err *err)
{
    const char *p[1] = {hl_i64s(a, id)};
    PGresult *r = NULL;
    orr_status s = hl_db_query(c, a, &q_progress_instance, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "instance_id", "no such instance");
    *current = (int)hl_val_i64(r, 0, 0);
    return ORR_OK;
}

HL_UNARY(hl_api_record_transfer_progress)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__RecordTransferProgressRequest);
    if (rq->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    if (rq->attempt < 0)
        return orr_err_set(err, ORR_EINVAL, "attempt", "must be >= 0 (0 = the current attempt)");
    orr_status s = hl__check_point(a, rq->point, err);
    if (s != ORR_OK)
        return s;
    const hl_pb_point *pt = rq->point;
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    PGresult *r = NULL;
    int current = 0, kept = 0;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl__progress_attempt(c, a, rq->instance_id, &current, err)) != ORR_OK)
        goto out;
    int attempt = rq->attempt ? rq->attempt : current;
    if (attempt > current) {
        s = orr_err_set(err, ORR_EINVAL, "attempt", "the instance is at attempt %d", current);
        goto out;
    }
    const char *id = hl_i64s(a, rq->instance_id), *att = orr_arena_sprintf(a, "%d", attempt);
    const char *ins[12] = {id,
                           att,
                           hl_i64s(a, pt->rows_read),
                           hl_i64s(a, pt->rows_written),
                           hl_i64s(a, pt->dirty_rows),
                           orr_arena_sprintf(a, "%.17g", pt->rows_per_sec),
                           hl_i64s(a, pt->bytes_read),
                           hl_i64s(a, pt->shards_done),
                           hl_i64s(a, pt->shards_total),
                           hl_i64s(a, pt->rows_estimate),
                           orr_arena_sprintf(a, "%.17g", pt->elapsed_s),
                           orr_arena_sprintf(a, "%.17g", pt->eta_s)};
    const char *thin[3] = {id, att, orr_arena_sprintf(a, "%d", HL_PROGRESS_MAX)};
    if ((s = hl_db_query(c, a, &q_progress_insert, 12, ins, NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_progress_thin, 3, thin, NULL, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_progress_count, 2, thin, &r, err)) != ORR_OK)
        goto out;
    kept = (int)hl_val_i64(r, 0, 0);
    s = hl_db_commit(c, err);
out:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__RecordTransferProgressResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__record_transfer_progress_response__init(o);
    o->points = kept;
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_get_transfer_progress)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetTransferProgressRequest);
    if (rq->instance_id <= 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    if (rq->attempt < 0)
        return orr_err_set(err, ORR_EINVAL, "attempt", "must be >= 0 (0 = the current attempt)");
    hl_conn *c;
    orr_status s = hl_db_get(hc->db, &c, err);
    if (s != ORR_OK)
        return s;
    PGresult *r = NULL;
    int current = 0, attempt = 0;
    if ((s = hl__progress_attempt(c, a, rq->instance_id, &current, err)) != ORR_OK)
        goto out;
    attempt = rq->attempt ? rq->attempt : current;
    const char *p[2] = {hl_i64s(a, rq->instance_id), orr_arena_sprintf(a, "%d", attempt)};
    s = hl_db_query(c, a, &q_progress_list, 2, p, &r, err);
out:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__GetTransferProgressResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__get_transfer_progress_response__init(o);
    o->instance_id = rq->instance_id;
    o->attempt = attempt;
    size_t n = (size_t)PQntuples(r);
    o->n_points = n;
    o->points = hl_alloc_n(a, sizeof *o->points, n);
    hl_pb_point *pts = hl_alloc_n(a, sizeof *pts, n);
    for (size_t i = 0; i < n; i++) {
        hl_pb_point *pt = &pts[i];
        int row = (int)i;
        orrery__halley__v1__transfer_progress_point__init(pt);
        pt->at_ms = hl_val_i64(r, row, 0);
        pt->rows_read = hl_val_i64(r, row, 1);
        pt->rows_written = hl_val_i64(r, row, 2);
        pt->dirty_rows = hl_val_i64(r, row, 3);
        pt->rows_per_sec = strtod(hl_val(r, row, 4), NULL);
        pt->bytes_read = hl_val_i64(r, row, 5);
        pt->shards_done = hl_val_i64(r, row, 6);
        pt->shards_total = hl_val_i64(r, row, 7);
        pt->rows_estimate = hl_val_i64(r, row, 8);
        pt->elapsed_s = strtod(hl_val(r, row, 9), NULL);
        pt->eta_s = strtod(hl_val(r, row, 10), NULL);
        o->points[i] = pt;
    }
    *resp = &o->base;
    return ORR_OK;
}
