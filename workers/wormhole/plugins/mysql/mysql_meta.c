/*
 * mysql_meta.c - MariaDB/MySQL catalog reads for `wormhole meta`
 * (wh_meta.h) from information_schema: tables and views of every database
 * but the system ones, TABLE_ROWS as the row estimate (InnoDB's guess);
 * a table's columns through wh_mysql_describe (the engine's own mapping to
 * value kinds) and its primary key from STATISTICS. A table without a
 * database ("name") is looked up in the DSN's database.
 */
#include <stdlib.h>
#include <string.h>

#include "mysql_common.h"
#include "orr_json.h"
#include "wh_meta.h"

static MYSQL *my_meta_connect(const json_t *spec, const char *path, orr_err *err)
{
    const char *dsn = NULL;
    if (wh_get_dsn(spec, path, &dsn, err) != ORR_OK)
        return NULL;
    return wh_mysql_connect(dsn, path, err);
}

static MYSQL_RES *my_meta_query(MYSQL *m, const orr_buf *q, const char *path, orr_status *rc,
                                orr_err *err)
{
    MYSQL_RES *res = NULL;
    if (mysql_real_query(m, q->data, q->len) != 0 || !(res = mysql_store_result(m)))
        *rc = orr_err_set(err, ORR_EIO, path, "MariaDB: %s", mysql_error(m));
    return res;
}

static json_t *my_meta_estimate(const char *v)
{
    return v ? json_integer((json_int_t)strtoll(v, NULL, 10)) : json_null();
}

static orr_status my_meta_tables(const json_t *spec, const char *path, json_t **out, orr_err *err)
{
    MYSQL *m = my_meta_connect(spec, path, err);
    if (!m)
        return err->code ? err->code : ORR_EUNAVAIL;
    orr_buf q = ORR_BUF_INIT;
    orr_buf_append_str(&q, "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE = 'VIEW', TABLE_ROWS"
                           " FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN"
                           " ('information_schema', 'mysql', 'performance_schema', 'sys')"
                           " ORDER BY 1, 2");
    orr_status rc = ORR_OK;
    MYSQL_RES *res = my_meta_query(m, &q, path, &rc, err);
    if (res) {
        json_t *list = json_array();
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res))) {
            int view = row[2] && strcmp(row[2], "1") == 0;
            json_array_append_new(list,
                                  json_pack("{s:s, s:s, s:s, s:o}", "schema", row[0], "name",
                                            row[1], "kind", view ? "view" : "table", "row_estimate",
                                            view ? json_null() : my_meta_estimate(row[3])));
        }
        *out = json_pack("{s:o}", "tables", list);
        mysql_free_result(res);
    }
    orr_buf_free(&q);
    mysql_close(m);
    return rc;
}

static orr_status my_meta_table(const json_t *spec, const char *path, const char *table,
                                json_t **out, orr_err *err)
{
    MYSQL *m = my_meta_connect(spec, path, err);
    if (!m)
        return err->code ? err->code : ORR_EUNAVAIL;
    char schema[256];
    const char *name = wh_meta_split(table, schema, sizeof schema);
    orr_buf q = ORR_BUF_INIT;
    wh_schema cols = {0, NULL};
    MYSQL_RES *res = NULL, *pk = NULL;
    orr_status rc = ORR_OK;
    /* The where clause both queries share. */
    orr_buf where = ORR_BUF_INIT;
    orr_buf_append_str(&where, " WHERE TABLE_SCHEMA = ");
    if (schema[0])
        wh_mysql_quote_literal(m, &where, schema, strlen(schema));
    else
        orr_buf_append_str(&where, "DATABASE()");
    orr_buf_append_str(&where, " AND TABLE_NAME = ");
    wh_mysql_quote_literal(m, &where, name, strlen(name));

    orr_buf_appendf(&q,
                    "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE = 'VIEW', TABLE_ROWS"
                    " FROM information_schema.TABLES%s",
                    orr_buf_cstr(&where));
    if (!(res = my_meta_query(m, &q, path, &rc, err)))
        goto out;
    MYSQL_ROW t = mysql_fetch_row(res);
    if (!t) {
        rc = orr_err_set(err, ORR_ENOTFOUND, "table", "table %s does not exist", table);
        goto out;
    }
    if ((rc = wh_mysql_describe(m, table, NULL, 0, &cols, path, err)) != ORR_OK)
        goto out;
    orr_buf_reset(&q);
    orr_buf_appendf(&q,
                    "SELECT COLUMN_NAME FROM information_schema.STATISTICS%s"
                    " AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
                    orr_buf_cstr(&where));
    if (!(pk = my_meta_query(m, &q, path, &rc, err)))
        goto out;
    size_t npk = (size_t)mysql_num_rows(pk);
    json_t *key = json_array(), *list = json_array();
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(pk)))
        json_array_append_new(key, json_string(row[0]));
    for (size_t i = 0; i < cols.ncols; i++) {
        int pos = 0;
        for (size_t k = 0; k < npk && !pos; k++)
            if (strcmp(json_string_value(json_array_get(key, k)), cols.cols[i].name) == 0)
                pos = (int)k + 1;
        json_array_append_new(list, wh_meta_column(&cols.cols[i], (int)i + 1, pos));
    }
    int view = t[2] && strcmp(t[2], "1") == 0;
    *out =
        json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "schema", t[0], "name", t[1], "kind",
                  view ? "view" : "table", "row_estimate",
                  view ? json_null() : my_meta_estimate(t[3]), "columns", list, "primary_key", key);
out:
    if (pk)
        mysql_free_result(pk);
    if (res)
        mysql_free_result(res);
    wh_schema_free(&cols);
    orr_buf_free(&where);
    orr_buf_free(&q);
    mysql_close(m);
    return rc;
}

const wh_meta_ops wh_mysql_meta = {
    .tables = my_meta_tables,
    .table = my_meta_table,
};
