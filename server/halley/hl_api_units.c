/*
 * hl_api_units.c - data units: ReportDataUnit and ListDataUnits (paged).
 *
 * ReportDataUnit is one upsert guarded by check_version (a report older than
 * the stored one is ignored and the stored unit returned); an applied report
 * with reconciled = true emits "data_unit.reconciled" in the same
 * transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_page.h"
#include "orr_name.h"

#define HL_UNIT_PAGE_DEFAULT 500
#define HL_UNIT_LIMIT_MAX    5000 /* of the deprecated ListDataUnitsRequest.limit */

#define HL_MAX_MS 253402300799999LL /* 9999-12-31T23:59:59.999Z */

typedef Orrery__Halley__V1__DataUnit hl_pb_unit;

/* ------------------------------------------------------------ data units */

#define HL_UNIT_COLS                                                                               \
    "u.stream, u.business, u.interface, " HL_MS("u.bucket") ", u.records, u.files, u.bytes, "      \
                                                            "u.late_records, u.check_version, "    \
                                                            "u.reconciled, " HL_MS("u.updated_at")

/* No row when the stored unit has a higher check_version. */
static hl_stmt q_report_unit = HL_STMT(
    "INSERT INTO data_units AS u (stream, business, interface, bucket, records, files, bytes,"
    " late_records, check_version, reconciled) VALUES ($1, $2, $3, to_timestamp($4::int8 / "
    "1000.0),"
    " $5::int8, $6::int, $7::int8, $8::int8, $9::int, $10::bool)"
    " ON CONFLICT (stream, business, interface, bucket) DO UPDATE SET records = excluded.records,"
    " files = excluded.files, bytes = excluded.bytes, late_records = excluded.late_records,"
    " check_version = excluded.check_version, reconciled = excluded.reconciled, updated_at = now()"
    " WHERE u.check_version <= excluded.check_version RETURNING " HL_UNIT_COLS);
static hl_stmt q_get_unit =
    HL_STMT("SELECT " HL_UNIT_COLS " FROM data_units u WHERE u.stream = $1 AND u.business = $2"
            " AND u.interface = $3 AND u.bucket = to_timestamp($4::int8 / 1000.0)");
static hl_stmt q_list_units =
    HL_STMT("SELECT " HL_UNIT_COLS " FROM data_units u WHERE u.stream = $1"
            " AND ($2 = '' OR u.business = $2) AND ($3 = '' OR u.interface = $3)"
            " AND u.bucket >= to_timestamp($4::int8 / 1000.0)"
            " AND ($5::int8 = 0 OR u.bucket < to_timestamp($5::int8 / 1000.0))"
            " AND (NOT $6::bool OR u.reconciled)"
            " AND (NOT $8::bool OR u.bucket < to_timestamp($9::int8 / 1000.0)"
            "  OR (u.bucket = to_timestamp($9::int8 / 1000.0)"
            "   AND (u.business, u.interface) > ($10::text, $11::text)))"
            " ORDER BY u.bucket DESC, u.business, u.interface LIMIT $7::int");

static void hl__fill_unit(const PGresult *r, int row, hl_pb_unit *o)
{
    orrery__halley__v1__data_unit__init(o);
    o->stream = (char *)hl_val(r, row, 0);
    o->business = (char *)hl_val(r, row, 1);
    o->interface = (char *)hl_val(r, row, 2);
    o->bucket_ms = hl_val_i64(r, row, 3);
    o->records = hl_val_i64(r, row, 4);
    o->files = (int32_t)hl_val_i64(r, row, 5);
    o->bytes = hl_val_i64(r, row, 6);
    o->late_records = hl_val_i64(r, row, 7);
    o->check_version = (int32_t)hl_val_i64(r, row, 8);
    o->reconciled = hl_val_bool(r, row, 9);
    o->updated_at_ms = hl_val_i64(r, row, 10);
}

static orr_status hl__check_unit(const hl_pb_unit *u, orr_err *err)
{
    if (!u)
        return orr_err_set(err, ORR_EINVAL, "unit", "is required");
    if (!hl_is_name(u->stream, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "unit.stream", "a stream name");
    if (!hl_is_name(u->business, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "unit.business", "must be " ORR_NAME_RULE);
    if (!hl_is_name(u->interface, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "unit.interface", "must be " ORR_NAME_RULE);
    if (u->bucket_ms < 0 || u->bucket_ms > HL_MAX_MS)
        return orr_err_set(err, ORR_EINVAL, "unit.bucket_ms",
                           "milliseconds since 1970 before the year 10000");
    if (u->records < 0)
        return orr_err_set(err, ORR_EINVAL, "unit.records", "must be >= 0");
    if (u->files < 0)
        return orr_err_set(err, ORR_EINVAL, "unit.files", "must be >= 0");
    if (u->bytes < 0)
        return orr_err_set(err, ORR_EINVAL, "unit.bytes", "must be >= 0");
    if (u->late_records < 0)
        return orr_err_set(err, ORR_EINVAL, "unit.late_records", "must be >= 0");
    if (u->check_version < 0)
        return orr_err_set(err, ORR_EINVAL, "unit.check_version", "must be >= 0");
    return ORR_OK;
}

HL_UNARY(hl_api_report_data_unit)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ReportDataUnitRequest);
    const hl_pb_unit *u = rq->unit;
    orr_status s = hl__check_unit(u, err);
    if (s != ORR_OK)
        return s;
    const char *p[10] = {u->stream,
                         u->business,
                         u->interface,
                         hl_i64s(a, u->bucket_ms),
                         hl_i64s(a, u->records),
                         hl_i64s(a, u->files),
                         hl_i64s(a, u->bytes),
                         hl_i64s(a, u->late_records),
                         hl_i64s(a, u->check_version),
                         u->reconciled ? "true" : "false"};
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) != ORR_OK)
        goto out;
    if ((s = hl_db_query(c, a, &q_report_unit, 10, p, &r, err)) != ORR_OK) {
        if (s == ORR_ENOTFOUND) /* the only foreign key: the stream */
            s = orr_err_set(err, ORR_ENOTFOUND, "unit.stream", "no such stream \"%s\"", u->stream);
        goto out;
    }
    if (PQntuples(r) == 0) { /* older than the stored check: keep the stored unit */
        if ((s = hl_db_query(c, a, &q_get_unit, 4, p, &r, err)) == ORR_OK)
            s = hl_db_commit(c, err);
        goto out;
    }
    if (u->reconciled &&
        (s = hl_emit(c, a, "data_unit.reconciled", 0, 0, NULL,
                     orr_arena_sprintf(a,
                                       "{\"stream\":%s,\"business\":%s,\"interface\":%s,"
                                       "\"bucket_ms\":%s,\"records\":%s,\"check_version\":%d}",
                                       hl_jstr(a, u->stream), hl_jstr(a, u->business),
                                       hl_jstr(a, u->interface), hl_i64s(a, u->bucket_ms),
                                       hl_i64s(a, u->records), (int)u->check_version),
                     NULL, err)) != ORR_OK)
        goto out;
    s = hl_db_commit(c, err);
out:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0) /* removed between the two statements: cannot happen today */
        return orr_err_set(err, ORR_ECONFLICT, "unit", "the unit changed meanwhile; retry");
    hl_pb_unit *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_unit(r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_data_units)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListDataUnitsRequest);
    if (!hl_is_name(rq->stream, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "stream", "a stream name is required");
    if (rq->business[0] && !hl_is_name(rq->business, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "business", "must be " ORR_NAME_RULE);
    if (rq->interface[0] && !hl_is_name(rq->interface, HL_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "interface", "must be " ORR_NAME_RULE);
    if (rq->from_ms < 0 || rq->from_ms > HL_MAX_MS)
        return orr_err_set(err, ORR_EINVAL, "from_ms", "milliseconds since 1970 (0 = no bound)");
    if (rq->to_ms < 0 || rq->to_ms > HL_MAX_MS)
        return orr_err_set(err, ORR_EINVAL, "to_ms", "milliseconds since 1970 (0 = no bound)");
    /* limit is the deprecated name of page_size, with its old range */
    hl_page pg;
    orr_status s =
        hl_page_begin_limit(a, "units", "iss", rq->page_size, rq->limit, HL_UNIT_LIMIT_MAX,
                            rq->page_token, HL_UNIT_PAGE_DEFAULT, &pg, err);
    if (s != ORR_OK)
        return s;
    int size = pg.size, have = pg.have;
    const char *const *after = pg.keys; /* bucket ms, business, interface of the last unit shown */
    const char *p[11] = {rq->stream,
                         rq->business,
                         rq->interface,
                         hl_i64s(a, rq->from_ms),
                         hl_i64s(a, rq->to_ms),
                         rq->reconciled_only ? "true" : "false",
                         hl_i64s(a, size + 1),
                         have ? "true" : "false",
                         after[0],
                         after[1],
                         after[2]};
    PGresult *r = NULL;
    if ((s = hl_db_query_once(hc->db, a, &q_list_units, 11, p, &r, err)) != ORR_OK)
        return s;
    Orrery__Halley__V1__ListDataUnitsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_data_units_response__init(o);
    size_t n = (size_t)PQntuples(r);
    if (n > (size_t)size) {
        n = (size_t)size;
        const char *k[3] = {hl_val(r, size - 1, 3), hl_val(r, size - 1, 1), hl_val(r, size - 1, 2)};
        o->next_page_token = hl_page_next(a, &pg, k);
    }
    o->n_units = n;
    o->units = hl_alloc_n(a, sizeof *o->units, n);
    hl_pb_unit *us = hl_alloc_n(a, sizeof *us, n);
    for (size_t i = 0; i < n; i++) {
        hl__fill_unit(r, (int)i, &us[i]);
        o->units[i] = &us[i];
    }
    *resp = &o->base;
    return ORR_OK;
}
