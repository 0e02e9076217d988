/*
 * hl_api_data.c - the data side of the schema: sort streams, data units,
 * lineage, process statistics and transfer watermarks.
 *
 * Sort streams: PutSortStream validates the spec against the embedded
 * schema/sort-stream.schema.json (compiled once, on first use) and writes the
 * row, an audit record and a "stream.changed" event in one transaction. The
 * version grows by one with every change; a put identical to the stored
 * stream (same spec as jsonb, same active flag) changes nothing, so it bumps
 * no version and emits no event.
 *
 * Data units: ReportDataUnit is one upsert guarded by check_version (a report
 * older than the stored one is ignored and the stored unit returned); an
 * applied report with reconciled = true emits "data_unit.reconciled" in the
 * same transaction.
 *
 * Lineage: AddLineage inserts a batch in one statement (ON CONFLICT DO
 * NOTHING against lineage_edges_identity_idx, so an edge without a task is
 * unique too). ListLineage walks both directions with recursive CTEs whose
 * rows carry the hop count, so a cycle ends at the depth limit; the answer is
 * bounded by HL_LINEAGE_MAX_EDGES.
 *
 * Process statistics: RecordProcessStats upserts (instance, attempt, key)
 * rows and emits "instance.stats"; attempt 0 means the instance's current
 * attempt. Watermarks: PutWatermark is a compare-and-set in one statement.
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "hl_page.h"
#include "orr_name.h"
#include "hl_embed.h"
#include "orr_buf.h"
#include "orr_json.h"

#define HL_UNIT_NAME_MAX     128
#define HL_LINEAGE_MAX_BATCH 1000
#define HL_LINEAGE_NAME_MAX  512
#define HL_LINEAGE_MAX_EDGES 10000
#define HL_STATS_MAX_BATCH   1000
#define HL_UNIT_PAGE_DEFAULT 500
#define HL_UNIT_LIMIT_MAX    5000 /* of the deprecated ListDataUnitsRequest.limit */
#define HL_WATERMARK_NAME    256
#define HL_WATERMARK_VALUE   4096
#define HL_MAX_MS            253402300799999LL /* 9999-12-31T23:59:59.999Z */

typedef Orrery__Halley__V1__SortStream hl_pb_stream;
typedef Orrery__Halley__V1__DataUnit hl_pb_unit;
typedef Orrery__Halley__V1__LineageEdge hl_pb_edge;
typedef Orrery__Halley__V1__ProcessStat hl_pb_stat;
typedef Orrery__Halley__V1__Watermark hl_pb_watermark;

/* ------------------------------------------------------------ helpers */

/* Re-label an error with field (keeps its status and message). */
static orr_status hl__relabel(orr_err *err, orr_status s, const char *field, const char *what)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return orr_err_set(err, s, field, "%s%s%s", what, msg[0] ? ": " : "", msg);
}

/* 1 if s is 1..max bytes with no control characters. */
static int hl__is_text(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

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

/* Copy the buffer into the arena and free it. */
static const char *hl__take(orr_arena *a, orr_buf *b)
{
    const char *s = orr_arena_strdup(a, orr_buf_cstr(b));
    orr_buf_free(b);
    return s;
}

/* ------------------------------------------------------------ sort streams */

static pthread_once_t hl__stream_schema_once = PTHREAD_ONCE_INIT;
static orr_jschema *hl__stream_schema;
static orr_err hl__stream_schema_err;

static void hl__stream_schema_load(void)
{
    orr_err *err = &hl__stream_schema_err;
    const hl_embedded_file *f = hl_embed_find(hl_schema_files, "sort-stream.schema.json");
    if (!f) {
        orr_err_set(err, ORR_EINTERNAL, "sort-stream.schema.json", "not embedded in this build");
        return;
    }
    json_t *doc = NULL;
    if (orr_json_parse((const char *)f->data, f->len, &doc, err) != ORR_OK)
        return;
    orr_jschema *js = NULL;
    if (orr_jschema_load(doc, &js, err) == ORR_OK)
        hl__stream_schema = js;
    json_decref(doc);
}

/* The compiled sort-stream schema, or ORR_EINTERNAL (a build defect). */
static orr_status hl__stream_schema_get(const orr_jschema **out, orr_err *err)
{
    pthread_once(&hl__stream_schema_once, hl__stream_schema_load);
    if (!hl__stream_schema)
        return orr_err_set(err, ORR_EINTERNAL, "sort-stream.schema.json", "%s: %s",
                           hl__stream_schema_err.field, hl__stream_schema_err.msg);
    *out = hl__stream_schema;
    return ORR_OK;
}

#define HL_STREAM_COLS "s.name, s.spec::text, s.active, " HL_MS("s.updated_at") ", s.version"

/* Insert or replace; no row when the stored stream is already identical. */
static hl_stmt q_put_stream = HL_STMT(
    "INSERT INTO sort_streams AS s (name, spec, active) VALUES ($1, $2::jsonb, $3::bool)"
    " ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, active = excluded.active,"
    " version = s.version + 1, updated_at = now()"
    " WHERE s.spec IS DISTINCT FROM excluded.spec OR s.active IS DISTINCT FROM excluded.active"
    " RETURNING " HL_STREAM_COLS);
static hl_stmt q_get_stream =
    HL_STMT("SELECT " HL_STREAM_COLS " FROM sort_streams s WHERE s.name = $1");
static hl_stmt q_list_streams = HL_STMT(
    "SELECT " HL_STREAM_COLS " FROM sort_streams s WHERE NOT $1::bool OR s.active ORDER BY s.name");

static void hl__fill_stream(const PGresult *r, int row, hl_pb_stream *o)
{
    orrery__halley__v1__sort_stream__init(o);
    o->name = (char *)hl_val(r, row, 0);
    o->spec_json = (char *)hl_val(r, row, 1);
    o->active = hl_val_bool(r, row, 2);
    o->updated_at_ms = hl_val_i64(r, row, 3);
    o->version = hl_val_i64(r, row, 4);
}

/* Validate spec text against the stream schema; its "name" must be name. */
static orr_status hl__check_stream_spec(const char *name, const char *spec, orr_err *err)
{
    const orr_jschema *js = NULL;
    orr_status s = hl__stream_schema_get(&js, err);
    if (s != ORR_OK)
        return s;
    if (!spec || !*spec)
        return orr_err_set(err, ORR_EINVAL, "spec", "is required");
    json_t *doc = NULL;
    if (orr_json_parse(spec, strlen(spec), &doc, err) != ORR_OK)
        return hl__relabel(err, ORR_EINVAL, "spec", "not valid JSON");
    s = orr_jschema_validate(js, doc, "spec", err);
    if (s == ORR_OK) {
        const char *sn = NULL;
        s = orr_json_get_str(doc, "spec", "name", 1, &sn, err);
        if (s == ORR_OK && strcmp(sn, name) != 0)
            s = orr_err_set(err, ORR_EINVAL, "spec.name",
                            "the spec names stream \"%s\", the request \"%s\"", sn, name);
    }
    json_decref(doc);
    return s;
}

HL_UNARY(hl_api_put_sort_stream)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__PutSortStreamRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (!hl_is_name(rq->name, HL_UNIT_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    orr_status s = hl__check_stream_spec(rq->name, rq->spec_json, err);
    if (s != ORR_OK)
        return s;
    const char *p[3] = {rq->name, rq->spec_json, rq->active ? "true" : "false"};
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) != ORR_OK ||
        (s = hl_db_query(c, a, &q_put_stream, 3, p, &r, err)) != ORR_OK)
        goto out;
    if (PQntuples(r) == 0) { /* identical to the stored stream: nothing changed */
        if ((s = hl_db_query(c, a, &q_get_stream, 1, p, &r, err)) == ORR_OK)
            s = hl_db_commit(c, err);
        goto out;
    }
    int64_t version = hl_val_i64(r, 0, 4);
    const char *jname = hl_jstr(a, rq->name);
    if ((s = hl_audit(c, a, rq->actor, "stream.put", orr_arena_sprintf(a, "stream:%s", rq->name),
                      orr_arena_sprintf(a, "{\"version\":%s,\"active\":%s}", hl_i64s(a, version),
                                        rq->active ? "true" : "false"),
                      err)) != ORR_OK ||
        (s = hl_emit(
             c, a, "stream.changed", 0, 0, NULL,
             orr_arena_sprintf(a, "{\"name\":%s,\"version\":%s}", jname, hl_i64s(a, version)), NULL,
             err)) != ORR_OK)
        goto out;
    s = hl_db_commit(c, err);
out:
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    hl_pb_stream *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_stream(r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_get_sort_stream)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__GetSortStreamRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (!hl_is_name(rq->name, HL_UNIT_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    const char *p[1] = {rq->name};
    PGresult *r = NULL;
    orr_status s = hl_db_query_once(hc->db, a, &q_get_stream, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "name", "no such stream");
    hl_pb_stream *o = orr_arena_alloc(a, sizeof *o);
    hl__fill_stream(r, 0, o);
    *resp = &o->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_sort_streams)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ListSortStreamsRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    const char *p[1] = {rq->active_only ? "true" : "false"};
    PGresult *r = NULL;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_streams, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListSortStreamsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_sort_streams_response__init(o);
    size_t n = (size_t)PQntuples(r);
    o->n_streams = n;
    o->streams = orr_arena_alloc(a, sizeof *o->streams * (n ? n : 1));
    hl_pb_stream *ss = orr_arena_alloc(a, sizeof *ss * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        hl__fill_stream(r, (int)i, &ss[i]);
        o->streams[i] = &ss[i];
    }
    *resp = &o->base;
    return ORR_OK;
}

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
    if (!hl_is_name(u->stream, HL_UNIT_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "unit.stream", "a stream name");
    if (!hl_is_name(u->business, HL_UNIT_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "unit.business", "must be " ORR_NAME_RULE);
    if (!hl_is_name(u->interface, HL_UNIT_NAME_MAX))
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
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ReportDataUnitRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
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
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ListDataUnitsRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (!hl_is_name(rq->stream, HL_UNIT_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "stream", "a stream name is required");
    if (rq->business[0] && !hl_is_name(rq->business, HL_UNIT_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "business", "must be " ORR_NAME_RULE);
    if (rq->interface[0] && !hl_is_name(rq->interface, HL_UNIT_NAME_MAX))
        return orr_err_set(err, ORR_EINVAL, "interface", "must be " ORR_NAME_RULE);
    if (rq->from_ms < 0 || rq->from_ms > HL_MAX_MS)
        return orr_err_set(err, ORR_EINVAL, "from_ms", "milliseconds since 1970 (0 = no bound)");
    if (rq->to_ms < 0 || rq->to_ms > HL_MAX_MS)
        return orr_err_set(err, ORR_EINVAL, "to_ms", "milliseconds since 1970 (0 = no bound)");
    int size, have;
    const char *after[3]; /* bucket ms, business, interface of the last unit shown */
    /* limit is the deprecated name of page_size, with its old range */
    orr_status s = rq->page_size || !rq->limit
                       ? hl_page_size(rq->page_size, "page_size", HL_UNIT_PAGE_DEFAULT,
                                      HL_PAGE_MAX, &size, err)
                       : hl_page_size(rq->limit, "limit", HL_UNIT_PAGE_DEFAULT,
                                      HL_UNIT_LIMIT_MAX, &size, err);
    if (s != ORR_OK ||
        (s = hl_page_parse(a, "units", "iss", rq->page_token, after, &have, err)) != ORR_OK)
        return s;
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
        const char *k[3] = {hl_val(r, size - 1, 3), hl_val(r, size - 1, 1),
                            hl_val(r, size - 1, 2)};
        o->next_page_token = (char *)hl_page_make(a, "units", "iss", k);
    }
    o->n_units = n;
    o->units = orr_arena_alloc(a, sizeof *o->units * (n ? n : 1));
    hl_pb_unit *us = orr_arena_alloc(a, sizeof *us * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        hl__fill_unit(r, (int)i, &us[i]);
        o->units[i] = &us[i];
    }
    *resp = &o->base;
    return ORR_OK;
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
    else if (!hl__is_text(e->source_name, HL_LINEAGE_NAME_MAX))
        bad = "source_name", why = "1-512 bytes without control characters";
    else if (!hl__lineage_kind(e->target_kind))
        bad = "target_kind", why = "one of table, file, data_unit, task";
    else if (!hl__is_text(e->target_name, HL_LINEAGE_NAME_MAX))
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
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__AddLineageRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
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
        p[k] = hl__take(a, &b[k]);
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
        s = hl__relabel(err, s, "edges", "a task was removed meanwhile");
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
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ListLineageRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if (!hl__lineage_kind(rq->kind))
        return orr_err_set(err, ORR_EINVAL, "kind", "one of table, file, data_unit, task");
    if (!hl__is_text(rq->name, HL_LINEAGE_NAME_MAX))
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
    o->edges = orr_arena_alloc(a, sizeof *o->edges * (n ? n : 1));
    hl_pb_edge *es = orr_arena_alloc(a, sizeof *es * (n ? n : 1));
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
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__RecordProcessStatsRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
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
    const char *karr = hl__take(a, &keys), *varr = hl__take(a, &vals);
    orr_buf_append_str(&payload, "}}");
    const char *pstats = hl__take(a, &payload);
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
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__ListProcessStatsRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    if ((rq->instance_id != 0) == (rq->task_id != 0))
        return orr_err_set(err, ORR_EINVAL, "instance_id",
                           "give exactly one of instance_id, task_id");
    if (rq->instance_id < 0)
        return orr_err_set(err, ORR_EINVAL, "instance_id", "must be positive");
    if (rq->task_id < 0)
        return orr_err_set(err, ORR_EINVAL, "task_id", "must be positive");
    int limit;
    orr_status ls = hl_page_size(rq->limit, "limit", HL_PAGE_DEFAULT, HL_PAGE_MAX, &limit, err);
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
    o->stats = orr_arena_alloc(a, sizeof *o->stats * (n ? n : 1));
    hl_pb_stat *ss = orr_arena_alloc(a, sizeof *ss * (n ? n : 1));
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
    if (!hl__is_text(name, HL_WATERMARK_NAME))
        return orr_err_set(err, ORR_EINVAL, "name", "1-256 bytes without control characters");
    return ORR_OK;
}

HL_UNARY(hl_api_get_watermark)
{
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__GetWatermarkRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
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
    hl_ctx *hc = ctx;
    const Orrery__Halley__V1__PutWatermarkRequest *rq = (const void *)req;
    orr_arena *a = orr_rpc_call_arena(call);
    orr_status s = hl__check_watermark_key(rq->task_id, rq->name, err);
    if (s != ORR_OK)
        return s;
    if (!hl__is_text(rq->value, HL_WATERMARK_VALUE))
        return orr_err_set(err, ORR_EINVAL, "value", "1-4096 bytes without control characters");
    if (rq->expected[0] && !hl__is_text(rq->expected, HL_WATERMARK_VALUE))
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
