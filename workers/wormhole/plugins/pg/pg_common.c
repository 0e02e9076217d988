/* pg_common.c - PostgreSQL plugin shared parts (see pg_common.h). */
#include "pg_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_json.h"
#include "wh_text.h"

static void pg_quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

PGconn *wh_pg_connect(const char *dsn, const char *path, orr_err *err)
{
    PGconn *c = PQconnectdb(dsn);
    if (PQstatus(c) != CONNECTION_OK) {
        orr_err_set(err, ORR_EUNAVAIL, path, "cannot connect to PostgreSQL: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    /* NOTICEs ("does not exist, skipping") are not the user's business. */
    PQsetNoticeProcessor(c, pg_quiet, NULL);
    if (wh_pg_exec(c,
                   "SET client_encoding = 'UTF8'; SET DateStyle = 'ISO, YMD'; "
                   "SET TimeZone = 'UTC'; SET IntervalStyle = 'postgres'; "
                   "SET bytea_output = 'hex'; SET extra_float_digits = 3",
                   path, err) != ORR_OK) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

orr_status wh_pg_exec(PGconn *c, const char *sql, const char *path, orr_err *err)
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

void wh_pg_quote_ident(orr_buf *out, const char *name)
{
    wh_quote_ident(out, name, '"');
}

void wh_pg_quote_qualified(orr_buf *out, const char *name)
{
    wh_quote_qualified(out, name, '"');
}

void wh_pg_quote_literal(orr_buf *out, const char *s)
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
    if (!strcmp(typname, "bit") || !strcmp(typname, "varbit")) {
        c->size = typmod > 0 ? typmod : 0; /* bits; 0: any length */
        return WH_K_OTHER;
    }
    if (!strcmp(typname, "json") || !strcmp(typname, "jsonb"))
        return WH_K_JSON;
    return WH_K_OTHER;
}

orr_status wh_pg_describe(PGconn *c, const char *table, const char **names, size_t nnames,
                          wh_schema *out, const char *path, orr_err *err)
{
    orr_buf q = ORR_BUF_INIT, lit = ORR_BUF_INIT;
    wh_pg_quote_qualified(&lit, table);
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

orr_status wh_pg_conf_parse(const json_t *spec, const char *path, int is_reader, wh_pg_conf **out,
                            orr_err *err)
{
    orr_status rc;
    char p[128];
    *out = NULL;
    wh_pg_conf *c = orr_xcalloc(1, sizeof(*c));
    if ((rc = wh_sqlopt_parse(spec, path, is_reader, NULL, &c->o, err)))
        goto fail;
    if (is_reader && c->o.split_key && c->o.tables) {
        rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "split"),
                         "split by key and a table list exclude each other");
        goto fail;
    }
    if (!is_reader && c->o.mode == WH_MODE_UPSERT && !c->o.key) {
        rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "key"),
                         "is required with mode upsert");
        goto fail;
    }
    *out = c;
    return ORR_OK;
fail:
    wh_pg_conf_free(c);
    return rc;
}

void wh_pg_conf_free(void *conf)
{
    wh_pg_conf *c = conf;
    if (!c)
        return;
    if (c->snap_conn)
        PQfinish(c->snap_conn);
    if (c->per_conn)
        PQfinish(c->per_conn);
    wh_sqlopt_free(&c->o);
    free(c->check);
    free(c->conv);
    wh_schema_free(&c->src);
    wh_schema_free(&c->target);
    orr_buf_free(&c->qtable);
    orr_buf_free(&c->qstage);
    orr_buf_free(&c->collist);
    free(c);
}

/* The plugin: the one symbol the registry (wh_registry.c) knows. */
const wh_plugin wh_pg_plugin = {
    .name = "postgres",
    .reader = &wh_pg_reader,
    .writer = &wh_pg_writer,
    .splitter = &wh_pg_splitter,
    .reader_periphery = &wh_pg_reader_periphery,
    .writer_periphery = &wh_pg_writer_periphery,
    .resume = &wh_pg_resume,
    .quality = &wh_pg_quality,
    .meta = &wh_pg_meta,
};
