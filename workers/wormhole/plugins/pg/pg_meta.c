/*
 * pg_meta.c - PostgreSQL catalog reads for `wormhole meta` (wh_meta.h):
 * tables and views from pg_class/pg_namespace outside the system schemas,
 * with reltuples as the row estimate (null until the table was analysed);
 * a table's columns through wh_pg_describe (so their value kinds are the
 * ones the reader and writer use) and its primary key from pg_index.
 */
#include <stdlib.h>
#include <string.h>

#include "orr_json.h"
#include "pg_common.h"
#include "wh_meta.h"

static PGconn *pg_meta_connect(const json_t *spec, const char *path, orr_err *err)
{
    const char *dsn = NULL;
    if (wh_get_dsn(spec, path, &dsn, err) != ORR_OK)
        return NULL;
    return wh_pg_connect(dsn, path, err);
}

static json_t *pg_meta_estimate(const char *reltuples)
{
    double v = atof(reltuples);
    return v < 0 ? json_null() : json_integer((json_int_t)v);
}

static orr_status pg_meta_tables(const json_t *spec, const char *path, json_t **out, orr_err *err)
{
    PGconn *c = pg_meta_connect(spec, path, err);
    if (!c)
        return err->code ? err->code : ORR_EUNAVAIL;
    PGresult *r =
        PQexec(c, "SELECT n.nspname, c.relname, c.relkind IN ('v', 'm'), c.reltuples::float8"
                  " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                  " WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition"
                  " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
                  " AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'"
                  " ORDER BY 1, 2");
    orr_status rc = ORR_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = orr_err_set(err, ORR_EIO, path, "PostgreSQL: %s", PQerrorMessage(c));
        goto out;
    }
    json_t *list = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        int view = PQgetvalue(r, i, 2)[0] == 't';
        json_array_append_new(
            list, json_pack("{s:s, s:s, s:s, s:o}", "schema", PQgetvalue(r, i, 0), "name",
                            PQgetvalue(r, i, 1), "kind", view ? "view" : "table", "row_estimate",
                            view ? json_null() : pg_meta_estimate(PQgetvalue(r, i, 3))));
    }
    *out = json_pack("{s:o}", "tables", list);
out:
    PQclear(r);
    PQfinish(c);
    return rc;
}

static orr_status pg_meta_table(const json_t *spec, const char *path, const char *table,
                                json_t **out, orr_err *err)
{
    PGconn *c = pg_meta_connect(spec, path, err);
    if (!c)
        return err->code ? err->code : ORR_EUNAVAIL;
    orr_buf lit = ORR_BUF_INIT;
    wh_pg_quote_qualified(&lit, table);
    const char *params[1] = {lit.data};
    wh_schema cols = {0, NULL};
    PGresult *pk = NULL;
    orr_status rc = ORR_OK;
    /* The relation itself (to_regclass: NULL for a name that is no table). */
    PGresult *r = PQexecParams(c,
                               "SELECT n.nspname, c.relname, c.relkind IN ('v', 'm'),"
                               " c.reltuples::float8 FROM pg_class c JOIN pg_namespace n"
                               " ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)",
                               1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) == 0) {
        rc = orr_err_set(err, ORR_ENOTFOUND, "table", "table %s does not exist", table);
        goto out;
    }
    if ((rc = wh_pg_describe(c, table, NULL, 0, &cols, path, err)) != ORR_OK)
        goto out;
    pk = PQexecParams(c,
                      "SELECT a.attname FROM pg_index i"
                      " CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, pos)"
                      " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum"
                      " WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY k.pos",
                      1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(pk) != PGRES_TUPLES_OK) {
        rc = orr_err_set(err, ORR_EIO, path, "PostgreSQL: %s", PQerrorMessage(c));
        goto out;
    }
    int view = PQgetvalue(r, 0, 2)[0] == 't';
    json_t *key = json_array(), *list = json_array();
    for (int i = 0; i < PQntuples(pk); i++)
        json_array_append_new(key, json_string(PQgetvalue(pk, i, 0)));
    for (size_t i = 0; i < cols.ncols; i++) {
        int pos = 0;
        for (int k = 0; k < PQntuples(pk) && !pos; k++)
            if (strcmp(PQgetvalue(pk, k, 0), cols.cols[i].name) == 0)
                pos = k + 1;
        json_array_append_new(list, wh_meta_column(&cols.cols[i], (int)i + 1, pos));
    }
    *out = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "schema", PQgetvalue(r, 0, 0), "name",
                     PQgetvalue(r, 0, 1), "kind", view ? "view" : "table", "row_estimate",
                     view ? json_null() : pg_meta_estimate(PQgetvalue(r, 0, 3)), "columns", list,
                     "primary_key", key);
out:
    PQclear(pk);
    PQclear(r);
    wh_schema_free(&cols);
    orr_buf_free(&lit);
    PQfinish(c);
    return rc;
}

const wh_meta_ops wh_pg_meta = {
    .tables = pg_meta_tables,
    .table = pg_meta_table,
};
