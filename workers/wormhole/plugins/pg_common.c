/* pg_common.c - PostgreSQL plugin shared parts (see pg_common.h). */
#include "pg_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_json.h"
#include "wh_text.h"

static void pg_quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

PGconn *pg_connect(const char *dsn, const char *path, orr_err *err)
{
    PGconn *c = PQconnectdb(dsn);
    if (PQstatus(c) != CONNECTION_OK) {
        orr_err_set(err, ORR_EUNAVAIL, path, "cannot connect to PostgreSQL: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    /* NOTICEs ("does not exist, skipping") are not the user's business. */
    PQsetNoticeProcessor(c, pg_quiet, NULL);
    if (pg_exec(c,
                "SET client_encoding = 'UTF8'; SET DateStyle = 'ISO, YMD'; "
                "SET TimeZone = 'UTC'; SET IntervalStyle = 'postgres'; "
                "SET bytea_output = 'hex'; SET extra_float_digits = 3",
                path, err) != ORR_OK) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

orr_status pg_exec(PGconn *c, const char *sql, const char *path, orr_err *err)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    orr_status rc = ORR_OK;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        char msg[300];
        snprintf(msg, sizeof(msg), "%s", PQerrorMessage(c));
        size_t n = strlen(msg);
        while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
            msg[--n] = 0;
        rc = orr_err_set(err, ORR_EIO, path, "PostgreSQL: %s (in: %.60s)", msg, sql);
    }
    PQclear(r);
    return rc;
}

void pg_quote_ident(orr_buf *out, const char *name)
{
    wh_quote_ident(out, name, '"');
}

void pg_quote_qualified(orr_buf *out, const char *name)
{
    wh_quote_qualified(out, name, '"');
}

void pg_quote_literal(orr_buf *out, const char *s)
{
    orr_buf_append_byte(out, '\'');
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            orr_buf_append_byte(out, '\'');
        orr_buf_append_byte(out, *p);
    }
    orr_buf_append_byte(out, '\'');
}

static wh_kind pg_kind(const char *typname, char category, int32_t typmod, wh_col *c)
{
    if (category == 'A')
        return WH_K_ARRAY;
    if (!strcmp(typname, "int2") || !strcmp(typname, "int4") || !strcmp(typname, "int8")) {
        c->size = typname[3] - '0';
        return WH_K_INT;
    }
    if (!strcmp(typname, "numeric")) {
        if (typmod >= 4) {
            c->size = ((typmod - 4) >> 16) & 0xFFFF;
            c->scale = (typmod - 4) & 0xFFFF;
        }
        return WH_K_NUMERIC;
    }
    if (!strcmp(typname, "float4") || !strcmp(typname, "float8"))
        return WH_K_FLOAT;
    if (!strcmp(typname, "bool"))
        return WH_K_BOOL;
    if (!strcmp(typname, "varchar") || !strcmp(typname, "bpchar")) {
        if (typmod >= 4)
            c->size = typmod - 4;
        return WH_K_TEXT;
    }
    if (!strcmp(typname, "text") || !strcmp(typname, "name") || !strcmp(typname, "citext"))
        return WH_K_TEXT;
    if (!strcmp(typname, "bytea"))
        return WH_K_BYTES;
    if (!strcmp(typname, "date"))
        return WH_K_DATE;
    if (!strcmp(typname, "time") || !strcmp(typname, "timetz"))
        return WH_K_TIME;
    if (!strcmp(typname, "timestamp"))
        return WH_K_TIMESTAMP;
    if (!strcmp(typname, "timestamptz"))
        return WH_K_TIMESTAMPTZ;
    if (!strcmp(typname, "json") || !strcmp(typname, "jsonb"))
        return WH_K_JSON;
    return WH_K_OTHER;
}

orr_status pg_describe(PGconn *c, const char *table, const char **names, size_t nnames,
                       wh_schema *out, const char *path, orr_err *err)
{
    orr_buf q = ORR_BUF_INIT, lit = ORR_BUF_INIT;
    pg_quote_qualified(&lit, table);
    const char *params[1] = {lit.data};
    PGresult *r = PQexecParams(
        c,
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typname, t.typcategory, "
        "a.attnotnull, a.atttypmod FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped "
        "ORDER BY a.attnum",
        1, NULL, params, NULL, NULL, 0);
    orr_status rc = ORR_OK;
    char p[96];
    orr_json_path(p, sizeof(p), path, "table");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = orr_err_set(err, ORR_EIO, p, "PostgreSQL: %s", PQerrorMessage(c));
        goto out;
    }
    int n = PQntuples(r);
    if (n == 0) {
        rc = orr_err_set(err, ORR_ENOTFOUND, p, "table %s does not exist", table);
        goto out;
    }
    size_t want = nnames ? nnames : (size_t)n;
    for (size_t k = 0; k < want; k++) {
        int row = (int)k;
        if (nnames) {
            row = -1;
            for (int i = 0; i < n; i++)
                if (strcmp(PQgetvalue(r, i, 0), names[k]) == 0)
                    row = i;
            if (row < 0) {
                char cp[128];
                snprintf(cp, sizeof(cp), "%s.columns[%zu]", path, k);
                rc = orr_err_set(err, ORR_ENOTFOUND, cp, "column %s is not in table %s", names[k],
                                 table);
                goto out;
            }
        }
        wh_col tmp = {0};
        wh_kind kind = pg_kind(PQgetvalue(r, row, 2), PQgetvalue(r, row, 3)[0],
                               (int32_t)atoi(PQgetvalue(r, row, 5)), &tmp);
        wh_col *col = wh_schema_add(out, PQgetvalue(r, row, 0), PQgetvalue(r, row, 1), kind);
        col->size = tmp.size;
        col->scale = tmp.scale;
        col->not_null = PQgetvalue(r, row, 4)[0] == 't';
    }
out:
    PQclear(r);
    orr_buf_free(&q);
    orr_buf_free(&lit);
    return rc;
}

orr_status pg_conf_parse(const json_t *spec, const char *path, int is_reader, pg_conf **out,
                         orr_err *err)
{
    static const char *const rkeys[] = {"dsn",    "datasource", "dsn_env", "table", "columns",
                                        "filter", "split",      "tables",  NULL};
    static const char *const wkeys[] = {"dsn",  "datasource", "dsn_env", "table", "columns",
                                        "mode", "filter",     "key",     NULL};
    orr_status rc;
    char p[128];
    *out = NULL;
    pg_conf *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    snprintf(c->path, sizeof(c->path), "%s", path);
    if ((rc = wh_allow_keys(spec, path, is_reader ? rkeys : wkeys, is_reader, err)) ||
        (rc = wh_get_dsn(spec, path, &c->dsn, err)) ||
        (rc = orr_json_get_str(spec, path, "table", 0, &c->table, err)) ||
        (rc = wh_get_str_array(spec, path, "columns", &c->columns, &c->ncolumns, err)) ||
        (rc = orr_json_get_str(spec, path, "filter", 0, &c->filter, err)))
        goto fail;
    if (is_reader) {
        json_t *split = NULL;
        if ((rc = wh_get_str_array(spec, path, "tables", &c->tables, &c->ntables, err)) ||
            (rc = orr_json_get_obj(spec, path, "split", 0, &split, err)))
            goto fail;
        if (c->tables && !c->table)
            c->table = c->tables[0];
        if (split) {
            static const char *const skeys[] = {"key", "shards", NULL};
            orr_json_path(p, sizeof(p), path, "split");
            if ((rc = orr_json_allow_keys(split, p, skeys, err)) ||
                (rc = orr_json_get_str(split, p, "key", 1, &c->split_key, err)) ||
                (rc = orr_json_get_int(split, p, "shards", 0, 1, 100000, &c->shards, err)))
                goto fail;
            if (c->tables) {
                rc = orr_err_set(err, ORR_EINVAL, p,
                                 "split by key and a table list exclude "
                                 "each other");
                goto fail;
            }
        }
    } else {
        if ((rc = wh_get_mode(spec, path, &c->mode, err)) ||
            (rc = wh_get_str_array(spec, path, "key", &c->key, &c->nkey, err)))
            goto fail;
        if (c->mode == WH_MODE_UPSERT && !c->key) {
            rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "key"),
                             "is required with mode upsert");
            goto fail;
        }
        if (c->mode == WH_MODE_REPLACE && !c->filter) {
            rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "filter"),
                             "is required with mode replace (the slice to replace; use "
                             "truncate for the whole table)");
            goto fail;
        }
    }
    if (!c->table) {
        rc =
            orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "table"), "is required");
        goto fail;
    }
    *out = c;
    return ORR_OK;
fail:
    pg_conf_free(c);
    return rc;
}

void pg_conf_free(void *conf)
{
    pg_conf *c = conf;
    if (!c)
        return;
    if (c->snap_conn)
        PQfinish(c->snap_conn);
    if (c->per_conn)
        PQfinish(c->per_conn);
    free(c->columns);
    free(c->tables);
    free(c->key);
    free(c->check);
    wh_schema_free(&c->src);
    wh_schema_free(&c->target);
    orr_buf_free(&c->qtable);
    orr_buf_free(&c->qstage);
    orr_buf_free(&c->collist);
    free(c);
}
