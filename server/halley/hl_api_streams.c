/*
 * hl_api_streams.c - sort streams: PutSortStream, GetSortStream and
 * ListSortStreams.
 *
 * PutSortStream validates the spec against the embedded
 * schema/sort-stream.schema.json (compiled once, on first use) and writes the
 * row, its lineage edges (hl_api_lineage.c), an audit record and a
 * "stream.changed" event in one transaction. The
 * version grows by one with every change; a put identical to the stored
 * stream (same spec as jsonb, same active flag) changes nothing, so it bumps
 * no version and emits no event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "orr_name.h"
#include "orr_json.h"
#include "orr_schemas.h"

typedef Orrery__Halley__V1__SortStream hl_pb_stream;

/* ------------------------------------------------------------ sort streams */

/* The compiled sort-stream schema, or ORR_EINTERNAL (a build defect). */
static orr_status hl__stream_schema_get(const orr_jschema **out, orr_err *err)
{
    return orr_schema_get("sort-stream.schema.json", out, err);
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
        return hl_relabel(err, ORR_EINVAL, "spec", "not valid JSON");
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
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutSortStreamRequest);
    if (!hl_is_name(rq->name, HL_NAME_MAX))
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
    if ((s = hl_lineage_save_stream(c, a, rq->name, rq->spec_json, rq->active, err)) != ORR_OK ||
        (s = hl_audit(c, a, rq->actor, "stream.put", orr_arena_sprintf(a, "stream:%s", rq->name),
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
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetSortStreamRequest);
    if (!hl_is_name(rq->name, HL_NAME_MAX))
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
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListSortStreamsRequest);
    const char *p[1] = {rq->active_only ? "true" : "false"};
    PGresult *r = NULL;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_streams, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListSortStreamsResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_sort_streams_response__init(o);
    size_t n = (size_t)PQntuples(r);
    o->n_streams = n;
    o->streams = hl_alloc_n(a, sizeof *o->streams, n);
    hl_pb_stream *ss = hl_alloc_n(a, sizeof *ss, n);
    for (size_t i = 0; i < n; i++) {
        hl__fill_stream(r, (int)i, &ss[i]);
        o->streams[i] = &ss[i];
    }
    *resp = &o->base;
    return ORR_OK;
}
