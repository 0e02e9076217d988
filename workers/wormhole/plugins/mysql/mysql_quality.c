/*
 * mysql_quality.c - MariaDB/MySQL's quality ops (wh_quality_ops in wh.h):
 * connections, quoting and queries for the checks of wh_quality.c. A writer
 * that loads straight into its table (every mode but staging) hands out its
 * channel's connection, so the checks see the load inside its transaction
 * before the commit.
 */
#include <stdlib.h>
#include <string.h>

#include "mysql_common.h"

static orr_status my_q_connect(const char *dsn, const char *path, void **conn, orr_err *err)
{
    MYSQL *m = wh_mysql_connect(dsn, path, err);
    *conn = m;
    return m ? ORR_OK : err->code;
}

static void my_q_disconnect(void *conn)
{
    mysql_close(conn);
}

static void *my_q_load_conn(void *writer_conf, void *writer_state)
{
    const wh_mysql_conf *c = writer_conf;
    return c->o.mode == WH_MODE_STAGING ? NULL : wh_mysql_writer_conn(writer_state);
}

static const wh_sqlopt *my_q_opts(void *writer_conf)
{
    return &((const wh_mysql_conf *)writer_conf)->o;
}

static orr_status my_q_query(void *conn, const char *sql, size_t keep, uint64_t *nrows,
                             json_t **rows, const char *path, orr_err *err)
{
    MYSQL *m = conn;
    *rows = NULL;
    *nrows = 0;
    if (mysql_real_query(m, sql, strlen(sql)) != 0)
        return orr_err_set(err, ORR_EIO, path, "MariaDB: %s", mysql_error(m));
    MYSQL_RES *r = mysql_store_result(m);
    if (!r && mysql_field_count(m) != 0)
        return orr_err_set(err, ORR_EIO, path, "MariaDB: %s", mysql_error(m));
    json_t *a = json_array();
    if (r) {
        unsigned nf = mysql_num_fields(r);
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(r)) != NULL) {
            unsigned long *len = mysql_fetch_lengths(r);
            if (*nrows < keep) {
                json_t *x = json_array();
                for (unsigned f = 0; f < nf; f++)
                    json_array_append_new(x, row[f] ? json_stringn(row[f], len[f]) : json_null());
                json_array_append_new(a, x);
            }
            (*nrows)++;
        }
        mysql_free_result(r);
    }
    while (mysql_next_result(m) == 0) {
        r = mysql_store_result(m);
        if (r)
            mysql_free_result(r);
    }
    *rows = a;
    return ORR_OK;
}

const wh_quality_ops wh_mysql_quality = {
    .dialect = WH_Q_MYSQL,
    .connect = my_q_connect,
    .disconnect = my_q_disconnect,
    .load_conn = my_q_load_conn,
    .opts = my_q_opts,
    .quote_table = wh_mysql_quote_qualified,
    .quote_ident = wh_mysql_quote_ident,
    .query = my_q_query,
};
