/* mysql_common.c - MariaDB/MySQL plugin shared parts (see mysql_common.h). */
#include "mysql_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_json.h"
#include "wh_text.h"

/* mysql://user[:password]@host[:port]/database */
static int my_dsn_parse(const char *dsn, char *user, char *pass, char *host, unsigned *port,
                        char *db)
{
    const char *p = dsn;
    if (strncmp(p, "mysql://", 8) == 0)
        p += 8;
    else if (strncmp(p, "mariadb://", 10) == 0)
        p += 10;
    else
        return -1;
    const char *at = strrchr(p, '@');
    const char *slash = strchr(at ? at : p, '/');
    if (!at || !slash)
        return -1;
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (colon) {
        snprintf(user, 128, "%.*s", (int)(colon - p), p);
        snprintf(pass, 128, "%.*s", (int)(at - colon - 1), colon + 1);
    } else {
        snprintf(user, 128, "%.*s", (int)(at - p), p);
        pass[0] = 0;
    }
    const char *h = at + 1;
    const char *pc = memchr(h, ':', (size_t)(slash - h));
    *port = 3306;
    if (pc) {
        snprintf(host, 256, "%.*s", (int)(pc - h), h);
        *port = (unsigned)atoi(pc + 1);
    } else {
        snprintf(host, 256, "%.*s", (int)(slash - h), h);
    }
    const char *q = strchr(slash + 1, '?');
    snprintf(db, 128, "%.*s", q ? (int)(q - slash - 1) : (int)strlen(slash + 1), slash + 1);
    return 0;
}

MYSQL *my_connect(const char *dsn, const char *path, orr_err *err)
{
    char user[128], pass[128], host[256], db[128];
    unsigned port;
    if (my_dsn_parse(dsn, user, pass, host, &port, db) != 0) {
        char p[96];
        orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "dsn"),
                    "must look like mysql://user:password@host:port/database");
        return NULL;
    }
    MYSQL *m = mysql_init(NULL);
    if (!m) {
        orr_err_set(err, ORR_ENOMEM, path, "mysql_init failed");
        return NULL;
    }
    unsigned int timeout = 10;
    my_bool on = 1;
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &on);
    mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (!mysql_real_connect(m, host, user, pass, db, port, NULL, 0)) {
        orr_err_set(err, ORR_EUNAVAIL, path, "cannot connect to MariaDB/MySQL at %s:%u: %s", host,
                    port, mysql_error(m));
        mysql_close(m);
        return NULL;
    }
    if (my_exec(m,
                "SET NAMES utf8mb4, time_zone = '+00:00', "
                "sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
                "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'",
                path, err) != ORR_OK) {
        mysql_close(m);
        return NULL;
    }
    return m;
}

orr_status my_exec(MYSQL *m, const char *sql, const char *path, orr_err *err)
{
    if (mysql_real_query(m, sql, strlen(sql)) != 0)
        return orr_err_set(err, ORR_EIO, path, "MariaDB: %s (in: %.60s)", mysql_error(m), sql);
    MYSQL_RES *r = mysql_store_result(m);
    if (r)
        mysql_free_result(r);
    while (mysql_next_result(m) == 0) {
        r = mysql_store_result(m);
        if (r)
            mysql_free_result(r);
    }
    return ORR_OK;
}

void my_quote_ident(orr_buf *out, const char *name)
{
    wh_quote_ident(out, name, '`');
}

void my_quote_qualified(orr_buf *out, const char *name)
{
    wh_quote_qualified(out, name, '`');
}

void my_quote_literal(MYSQL *m, orr_buf *out, const char *s, size_t n)
{
    orr_buf_reserve(out, 2 * n + 3);
    out->data[out->len++] = '\'';
    out->len += mysql_real_escape_string(m, out->data + out->len, s, (unsigned long)n);
    out->data[out->len++] = '\'';
    out->data[out->len] = 0;
}

static wh_kind my_kind(const char *dtype, const char *ctype, wh_col *c)
{
    c->is_unsigned = strstr(ctype, "unsigned") != NULL;
    if (!strncmp(ctype, "tinyint(1)", 10) && !c->is_unsigned)
        return WH_K_BOOL;
    if (!strcmp(dtype, "tinyint"))
        return c->size = 1, WH_K_INT;
    if (!strcmp(dtype, "smallint") || !strcmp(dtype, "year"))
        return c->size = 2, WH_K_INT;
    if (!strcmp(dtype, "mediumint") || !strcmp(dtype, "int"))
        return c->size = 4, WH_K_INT;
    if (!strcmp(dtype, "bigint"))
        return c->size = 8, WH_K_INT;
    if (!strcmp(dtype, "decimal"))
        return WH_K_NUMERIC;
    if (!strcmp(dtype, "float") || !strcmp(dtype, "double"))
        return WH_K_FLOAT;
    if (!strcmp(dtype, "date"))
        return WH_K_DATE;
    if (!strcmp(dtype, "time"))
        return WH_K_TIME;
    if (!strcmp(dtype, "datetime"))
        return WH_K_TIMESTAMP;
    if (!strcmp(dtype, "timestamp"))
        return WH_K_TIMESTAMPTZ;
    if (strstr(dtype, "blob") || strstr(dtype, "binary"))
        return WH_K_BYTES;
    if (!strcmp(dtype, "json"))
        return WH_K_JSON;
    if (strstr(dtype, "char") || strstr(dtype, "text") || !strcmp(dtype, "enum") ||
        !strcmp(dtype, "set"))
        return WH_K_TEXT;
    return WH_K_OTHER;
}

orr_status my_describe(MYSQL *m, const char *table, const char **names, size_t nnames,
                       wh_schema *out, const char *path, orr_err *err)
{
    orr_buf q = ORR_BUF_INIT;
    const char *dot = strchr(table, '.');
    orr_buf_append_str(&q, "SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE, "
                           "COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), COALESCE(NUMERIC_PRECISION, "
                           "0), COALESCE(NUMERIC_SCALE, 0) FROM information_schema.COLUMNS "
                           "WHERE TABLE_SCHEMA = ");
    if (dot)
        my_quote_literal(m, &q, table, (size_t)(dot - table));
    else
        orr_buf_append_str(&q, "DATABASE()");
    orr_buf_append_str(&q, " AND TABLE_NAME = ");
    const char *base = dot ? dot + 1 : table;
    my_quote_literal(m, &q, base, strlen(base));
    orr_buf_append_str(&q, " ORDER BY ORDINAL_POSITION");
    char p[96];
    orr_json_path(p, sizeof(p), path, "table");
    orr_status rc = ORR_OK;
    MYSQL_RES *res = NULL;
    if (mysql_real_query(m, q.data, q.len) != 0 || !(res = mysql_store_result(m))) {
        rc = orr_err_set(err, ORR_EIO, p, "MariaDB: %s", mysql_error(m));
        goto out;
    }
    size_t n = (size_t)mysql_num_rows(res);
    if (n == 0) {
        rc = orr_err_set(err, ORR_ENOTFOUND, p, "table %s does not exist", table);
        goto out;
    }
    MYSQL_ROW *rows = calloc(n, sizeof(*rows));
    if (!rows)
        abort();
    for (size_t i = 0; i < n; i++)
        rows[i] = mysql_fetch_row(res);
    size_t want = nnames ? nnames : n;
    for (size_t k = 0; k < want; k++) {
        size_t row = k;
        if (nnames) {
            row = n;
            for (size_t i = 0; i < n; i++)
                if (strcmp(rows[i][0], names[k]) == 0)
                    row = i;
            if (row == n) {
                char cp[128];
                snprintf(cp, sizeof(cp), "%s.columns[%zu]", path, k);
                rc = orr_err_set(err, ORR_ENOTFOUND, cp, "column %s is not in table %s", names[k],
                                 table);
                break;
            }
        }
        MYSQL_ROW r = rows[row];
        wh_col tmp = {0};
        wh_kind kind = my_kind(r[2], r[1], &tmp);
        wh_col *c = wh_schema_add(out, r[0], r[1], kind);
        c->size = tmp.size;
        c->is_unsigned = tmp.is_unsigned;
        c->not_null = strcmp(r[3], "NO") == 0;
        if (kind == WH_K_NUMERIC) {
            c->size = atoi(r[5]);
            c->scale = atoi(r[6]);
        } else if (kind == WH_K_TEXT && (strstr(r[2], "char") != NULL)) {
            c->size = atoi(r[4]);
        }
    }
    free(rows);
out:
    if (res)
        mysql_free_result(res);
    orr_buf_free(&q);
    return rc;
}

orr_status my_conf_parse(const json_t *spec, const char *path, int is_reader, my_conf **out,
                         orr_err *err)
{
    static const char *const rkeys[] = {"dsn",    "datasource", "dsn_env", "table", "columns",
                                        "filter", "split",      "tables",  NULL};
    static const char *const wkeys[] = {"dsn",  "datasource", "dsn_env", "table",        "columns",
                                        "mode", "filter",     "key",     "insert_bytes", NULL};
    orr_status rc;
    char p[128];
    *out = NULL;
    my_conf *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    snprintf(c->path, sizeof(c->path), "%s", path);
    c->insert_bytes = 1 << 20;
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
        }
    } else {
        if ((rc = wh_get_mode(spec, path, &c->mode, err)) ||
            (rc = wh_get_str_array(spec, path, "key", &c->key, &c->nkey, err)) ||
            (rc = orr_json_get_int(spec, path, "insert_bytes", 0, 4096, 64 << 20, &c->insert_bytes,
                                   err)))
            goto fail;
        if (c->mode == WH_MODE_REPLACE && !c->filter) {
            rc = orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), path, "filter"),
                             "is required with mode replace");
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
    my_conf_free(c);
    return rc;
}

void my_conf_free(void *conf)
{
    my_conf *c = conf;
    if (!c)
        return;
    free(c->columns);
    free(c->tables);
    free(c->key);
    free(c->check);
    wh_schema_free(&c->src);
    wh_schema_free(&c->target);
    orr_buf_free(&c->qtable);
    orr_buf_free(&c->qstage);
    orr_buf_free(&c->collist);
    orr_buf_free(&c->update);
    free(c);
}
