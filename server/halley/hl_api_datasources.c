/*
 * hl_api_datasources.c - data sources (secretbox): PutDataSource,
 * GetDataSource, ListDataSources and GetDataSourceSecret.
 *
 * Stored secrets are read back in clear by one RPC only, GetDataSourceSecret,
 * which takes the worker token instead of the service token (the runtime lets
 * it through to the worker gate of hl_service.c, which checks the token);
 * GetDataSource only says whether one is set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hl_api.h"
#include "orr_name.h"
#include <sodium.h>

#include "orr_json.h"
#include "orr_log.h"

static hl_stmt q_put_ds =
    HL_STMT("INSERT INTO data_sources (name, kind, params, secret) VALUES ($1, $2, $3::jsonb,"
            " decode(nullif($4, ''), 'hex'))"
            " ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, params = excluded.params,"
            " secret = coalesce(excluded.secret, data_sources.secret), updated_at = now()");
/* A changed data source may point at another database: its cached metadata
 * (hl_api_dsmeta.c) goes with the change. */
static hl_stmt q_drop_ds_meta = HL_STMT("DELETE FROM datasource_meta WHERE datasource = $1");
static hl_stmt q_get_ds = HL_STMT("SELECT name, kind, params::text, secret IS NOT NULL, " HL_MS(
    "updated_at") " FROM data_sources WHERE name = $1");

static hl_stmt q_get_ds_secret =
    HL_STMT("SELECT name, kind, params::text, coalesce(encode(secret, 'hex'), '') FROM data_sources"
            " WHERE name = $1");
static hl_stmt q_list_ds = HL_STMT("SELECT name, kind, params::text, secret IS NOT NULL, " HL_MS(
    "updated_at") " FROM data_sources WHERE $1 = '' OR kind = $1 ORDER BY name");

/* The data source of row `row` of a q_get_ds / q_list_ds result, in the
 * arena (strings point into the result). */
static Orrery__Halley__V1__DataSource *hl__data_source(orr_arena *a, const PGresult *r, int row)
{
    Orrery__Halley__V1__DataSource *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__data_source__init(o);
    o->name = (char *)hl_val(r, row, 0);
    o->kind = (char *)hl_val(r, row, 1);
    o->params_json = (char *)hl_val(r, row, 2);
    o->has_secret = hl_val_bool(r, row, 3);
    o->updated_at_ms = hl_val_i64(r, row, 4);
    return o;
}

static const char *const hl__secret_keys[] = {"password", "secret", "passwd", "token", NULL};

HL_UNARY(hl_api_put_data_source)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__PutDataSourceRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    if (!hl_is_name(rq->kind, 64))
        return orr_err_set(err, ORR_EINVAL, "kind", "is required (postgresql, mysql, ...)");
    const char *params = rq->params_json[0] ? rq->params_json : "{}";
    json_t *doc = NULL;
    if (orr_json_parse(params, strlen(params), &doc, err) != ORR_OK) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        return orr_err_set(err, ORR_EINVAL, "params_json", "not valid JSON: %s", m);
    }
    orr_status s = ORR_OK;
    if (!json_is_object(doc))
        s = orr_err_set(err, ORR_EINVAL, "params_json", "must be a JSON object");
    for (int i = 0; s == ORR_OK && hl__secret_keys[i]; i++)
        if (json_object_get(doc, hl__secret_keys[i]))
            s = orr_err_set(err, ORR_EINVAL,
                            orr_arena_sprintf(a, "params_json.%s", hl__secret_keys[i]),
                            "credentials go in secret, which is stored encrypted");
    json_decref(doc);
    if (s != ORR_OK)
        return s;
    if (strlen(rq->secret) > 65536)
        return orr_err_set(err, ORR_EINVAL, "secret", "at most 64 KiB");
    const char *hex = "";
    if (rq->secret[0]) {
        orr_buf sealed = ORR_BUF_INIT;
        hl_secret_seal(hc->secret_key, rq->secret, strlen(rq->secret), &sealed);
        char *h = orr_arena_alloc(a, sealed.len * 2 + 1);
        static const char dig[] = "0123456789abcdef";
        for (size_t i = 0; i < sealed.len; i++) {
            h[2 * i] = dig[(unsigned char)sealed.data[i] >> 4];
            h[2 * i + 1] = dig[(unsigned char)sealed.data[i] & 15];
        }
        h[sealed.len * 2] = 0;
        hex = h;
        orr_buf_free(&sealed);
    }
    hl_conn *c;
    if ((s = hl_db_get(hc->db, &c, err)) != ORR_OK)
        return s;
    const char *p[4] = {rq->name, rq->kind, params, hex};
    const char *pg[1] = {rq->name};
    PGresult *r = NULL;
    if ((s = hl_db_begin(c, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_put_ds, 4, p, NULL, err)) == ORR_OK &&
        (s = hl_db_query(c, a, &q_drop_ds_meta, 1, pg, NULL, err)) == ORR_OK &&
        (s = hl_audit(c, a, rq->actor, "datasource.put",
                      orr_arena_sprintf(a, "datasource:%s", rq->name),
                      orr_arena_sprintf(a, "{\"secret_changed\":%s}", hex[0] ? "true" : "false"),
                      err)) == ORR_OK &&
        (s = hl_emit(c, a, "datasource.updated", 0, 0, NULL,
                     orr_arena_sprintf(a, "{\"name\":%s}", hl_jstr(a, rq->name)), NULL, err)) ==
            ORR_OK &&
        (s = hl_db_commit(c, err)) == ORR_OK)
        s = hl_db_query(c, a, &q_get_ds, 1, pg, &r, err);
    hl_db_put(hc->db, c);
    if (s != ORR_OK)
        return s;
    *resp = &hl__data_source(a, r, 0)->base;
    return ORR_OK;
}

HL_UNARY(hl_api_get_data_source)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetDataSourceRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    const char *p[1] = {rq->name};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_get_ds, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "name", "no such data source");
    *resp = &hl__data_source(a, r, 0)->base;
    return ORR_OK;
}

HL_UNARY(hl_api_list_data_sources)
{
    HL_HANDLER_BEGIN(Orrery__Halley__V1__ListDataSourcesRequest);
    if (rq->kind[0] && !hl_is_name(rq->kind, 64))
        return orr_err_set(err, ORR_EINVAL, "kind", "1-64 characters of [A-Za-z0-9_.-]");
    const char *p[1] = {rq->kind};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_list_ds, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    Orrery__Halley__V1__ListDataSourcesResponse *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__list_data_sources_response__init(o);
    size_t n = (size_t)PQntuples(r);
    o->n_data_sources = n;
    o->data_sources = hl_alloc_n(a, sizeof *o->data_sources, n);
    for (size_t i = 0; i < n; i++)
        o->data_sources[i] = hl__data_source(a, r, (int)i);
    *resp = &o->base;
    return ORR_OK;
}

/* Team names are [A-Za-z0-9_.-], so a comma-joined list splits safely. */

HL_UNARY(hl_api_get_data_source_secret)
{
    /* Reached through the worker gate (hl_service.c): hl_worker_auth has
     * settled that the caller holds the worker token. */
    HL_HANDLER_BEGIN(Orrery__Halley__V1__GetDataSourceSecretRequest);
    if (!hl_is_name(rq->name, 128))
        return orr_err_set(err, ORR_EINVAL, "name", "must be " ORR_NAME_RULE);
    const char *p[1] = {rq->name};
    PGresult *r;
    orr_status s = hl_db_query_once(hc->db, a, &q_get_ds_secret, 1, p, &r, err);
    if (s != ORR_OK)
        return s;
    if (PQntuples(r) == 0)
        return orr_err_set(err, ORR_ENOTFOUND, "name", "no such data source");
    Orrery__Halley__V1__DataSourceSecret *o = orr_arena_alloc(a, sizeof *o);
    orrery__halley__v1__data_source_secret__init(o);
    o->name = (char *)hl_val(r, 0, 0);
    o->kind = (char *)hl_val(r, 0, 1);
    o->params_json = (char *)hl_val(r, 0, 2);
    const char *hex = hl_val(r, 0, 3);
    size_t hlen = strlen(hex);
    if (hlen == 0) {
        *resp = &o->base;
        return ORR_OK;
    }
    unsigned char *sealed = orr_arena_alloc(a, hlen / 2 + 1);
    for (size_t i = 0; i + 1 < hlen; i += 2) {
        char byte[3] = {hex[i], hex[i + 1], 0};
        sealed[i / 2] = (unsigned char)strtoul(byte, NULL, 16);
    }
    orr_buf plain = ORR_BUF_INIT;
    s = hl_secret_open(hc->secret_key, sealed, hlen / 2, &plain, err);
    if (s == ORR_OK)
        o->secret = orr_arena_strdup(a, orr_buf_cstr(&plain));
    if (plain.data)
        sodium_memzero(plain.data, plain.cap);
    orr_buf_free(&plain);
    if (s != ORR_OK)
        return orr_err_set(err, ORR_EINTERNAL, "name",
                           "stored secret does not open with this secret_key");
    *resp = &o->base;
    return ORR_OK;
}
