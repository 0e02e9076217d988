/*
 * hl_api_dsmeta.c - the data-metadata cache: GetDataSourceMeta and
 * PutDataSourceMeta over table datasource_meta.
 *
 * An entry is what `wormhole meta` answered for a data source: its table
 * list (what "tables") or one table's columns (what "table", table
 * "schema.name"), as a JSON object, with the time it was fetched. galaxyd
 * reads it before asking an executor and writes what the executor answered.
 * PutDataSource deletes a data source's entries in its own transaction
 * (hl_api_datasources.c), so a changed connection never answers from the
 * old database.
 */
#include <string.h>

#include "hl_api.h"
#include "orr_json.h"
#include "orr_name.h"

#define HL_META_TABLE   512
#define HL_META_PAYLOAD (16u * 1024 * 1024)

/* One statement: the data source's row, and the entry when there is one. */
static hl_stmt q_get_meta = HL_STMT("SELECT m.payload::text, " HL_MS(
    "m.fetched_at") ", m.datasource IS NOT NULL"
                    " FROM data_sources d LEFT JOIN datasource_meta m ON m.datasource = d.name AND "
                    "m.what = $2"
                    " AND m.tbl = $3 WHERE d.name = $1");
static hl_stmt q_put_meta = HL_STMT(
    "INSERT INTO datasource_meta (datasource, what, tbl, payload) VALUES ($1, $2, $3, $4::jsonb)"
    " ON CONFLICT (datasource, what, tbl) DO UPDATE SET payload = excluded.payload,"
    " fetched_at = now() RETURNING " HL_MS("fetched_at"));

/* Checks the key of a request: ORR_EINVAL naming the bad field. */
static orr_status hl__meta_key(const char *ds, const char *what, const char *table, orr_err *err)
{
    if (!hl_is_name(ds, 128))
        return orr_err_set(err, ORR_EINVAL, "datasource", "must be " ORR_NAME_RULE);
    int is_table = strcmp(what, "table") == 0;
    if (!is_table && strcmp(what, "tables") != 0)
        return orr_err_set(err, ORR_EINVAL, "what", "must be \"tables\" or \"table\"");
    if (is_table && !hl_is_text(table, HL_META_TABLE))
        return orr_err_set(err, ORR_EINVAL, "table",
                           "is required with what \"table\": 1-512 bytes without control "
                           "characters");
    if (!is_table && table[0])
        return orr_err_set(err, ORR_EINVAL, "table", "must be empty with what \"tables\"");
    return ORR_OK;
}

static Orrery__Halley__V1__DataSourceMeta *hl__meta(orr_arena *a, const char *ds, const char *what,
                                                    const char *table, const char *payload,
                                                    int64_t fetched_at_ms)
{
    Orrery__Halley__V1__DataSourceMeta *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__data_source_meta__init(o);
    o->datasource = orr_arena_strdup(a, ds);
    o->what = orr_arena_strdup(a, what);
    o->table = orr_arena_strdup(a, table);
    o->payload_json = (char *)payload;
    o->fetched_at_ms = fetched_at_ms;
    return o;
}

HL_UNARY(hl_api_get_data_source_meta)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetDataSourceMetaRequest);
    orr_status s = hl__meta_key(rq->datasource, rq->what, rq->table, err);
    if (s != ORR_OK)
        return s;
    const char *p[3] = {rq->datasource, rq->what, rq->table};
    PGresult *r = NULL;
    if ((s = hl_db_query_once(hc->db, a, &q_get_meta, 3, p, &r, err)) != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "datasource", "no such data source");
    if (!hl_val_bool(r, 0, 2))
        return orr_err_set(err, ORR_ENOTFOUND, "what", "nothing cached");
    *resp = &hl__meta(a, rq->datasource, rq->what, rq->table, hl_val(r, 0, 0), hl_val_i64(r, 0, 1))
                 ->base;
    return ORR_OK;
}

HL_UNARY(hl_api_put_data_source_meta)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutDataSourceMetaRequest);
    orr_status s = hl__meta_key(rq->datasource, rq->what, rq->table, err);
    if (s != ORR_OK)
        return s;
    size_t n = strlen(rq->payload_json);
    if (n == 0 || n > HL_META_PAYLOAD)
        return orr_err_set(err, ORR_EINVAL, "payload_json", "a JSON object of at most 16 MiB");
    json_t *doc = NULL;
    if (orr_json_parse(rq->payload_json, n, &doc, err) != ORR_OK || !json_is_object(doc)) {
        json_decref(doc);
        return orr_err_set(err, ORR_EINVAL, "payload_json", "must be a JSON object");
    }
    json_decref(doc);
    const char *p[4] = {rq->datasource, rq->what, rq->table, rq->payload_json};
    PGresult *r = NULL;
    s = hl_db_query_once(hc->db, a, &q_put_meta, 4, p, &r, err);
    if (s == ORR_ENOTFOUND) /* the foreign key */
        return orr_err_set(err, ORR_ENOTFOUND, "datasource", "no such data source");
    if (s != ORR_OK)
        return s;
    *resp = &hl__meta(a, rq->datasource, rq->what, rq->table, rq->payload_json, hl_val_i64(r, 0, 0))
                 ->base;
    return ORR_OK;
}
