/* mysql_common.c - MariaDB/MySQL plugin shared parts (see mysql_common.h). */
#include "mysql_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
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

MYSQL *wh_mysql_connect(const char *dsn, const char *path, orr_err *err)
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
    if (wh_mysql_exec(m,
                      "SET NAMES utf8mb4, time_zone = '+00:00', "
                      "sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
                      "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'",
                      path, err) != ORR_OK) {
        mysql_close(m);
        return NULL;
    }
    return m;
}

orr_status wh_mysql_exec(MYSQL *m, const char *sql, const char *path, orr_err *err)
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

void wh_mysql_quote_ident(orr_buf *out, const char *name)
{
    wh_quote_ident(out, name, '`');
}

void wh_mysql_quote_qualified(orr_buf *out, const char *name)
{
    wh_quote_qualified(out, name, '`');
}

void wh_mysql_quote_literal(MYSQL *m, orr_buf *out, const char *s, size_t n)
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
    if (!strcmp(dtype, "bit")) {
        /* BIT(n) travels as a bit string of n digits, like PostgreSQL's bit(n). */
        c->size = atoi(ctype + 4);
        return WH_K_OTHER;
    }
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

orr_status wh_mysql_describe(MYSQL *m, const char *table, const char **names, size_t nnames,
                             wh_schema *out, const char *path, orr_err *err)
{
    orr_buf q = ORR_BUF_INIT;
    const char *dot = strchr(table, '.');
    orr_buf_append_str(&q, "SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE, "
                           "COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), COALESCE(NUMERIC_PRECISION, "
                           "0), COALESCE(NUMERIC_SCALE, 0) FROM information_schema.COLUMNS "
                           "WHERE TABLE_SCHEMA = ");
    if (dot)
        wh_mysql_quote_literal(m, &q, table, (size_t)(dot - table));
    else
        orr_buf_append_str(&q, "DATABASE()");
    orr_buf_append_str(&q, " AND TABLE_NAME = ");
    const char *base = dot ? dot + 1 : table;
    wh_mysql_quote_literal(m, &q, base, strlen(base));
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
    MYSQL_ROW *rows = orr_xcalloc(n, sizeof(*rows));
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

orr_status wh_mysql_conf_parse(const json_t *spec, const char *path, int is_reader,
                               wh_mysql_conf **out, orr_err *err)
{
    static const char *const wkeys[] = {"insert_bytes", NULL};
    orr_status rc;
    *out = NULL;
    wh_mysql_conf *c = orr_xcalloc(1, sizeof(*c));
    c->insert_bytes = 1 << 20;
    if ((rc = wh_sqlopt_parse(spec, path, is_reader, is_reader ? NULL : wkeys, &c->o, err)))
        goto fail;
    if (!is_reader && (rc = orr_json_get_int(spec, path, "insert_bytes", 0, 4096, 64 << 20,
                                             &c->insert_bytes, err)))
        goto fail;
    *out = c;
    return ORR_OK;
fail:
    wh_mysql_conf_free(c);
    return rc;
}

void wh_mysql_conf_free(void *conf)
{
    wh_mysql_conf *c = conf;
    if (!c)
        return;
    wh_sqlopt_free(&c->o);
    free(c->check);
    wh_schema_free(&c->src);
    wh_schema_free(&c->target);
    orr_buf_free(&c->qtable);
    orr_buf_free(&c->qstage);
    orr_buf_free(&c->collist);
    orr_buf_free(&c->update);
    free(c);
}

/* The plugin: the one symbol the registry (wh_registry.c) knows. */
const wh_plugin wh_mysql_plugin = {
    .name = "mysql",
    .reader = &wh_mysql_reader,
    .writer = &wh_mysql_writer,
    .splitter = &wh_mysql_splitter,
    .reader_periphery = &wh_mysql_reader_periphery,
    .writer_periphery = &wh_mysql_writer_periphery,
    .quality = &wh_mysql_quality,
    .resume = &wh_mysql_resume,
    .meta = &wh_mysql_meta,
};
