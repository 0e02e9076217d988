/*
 * pg_quality.c - PostgreSQL's quality ops (wh_quality_ops in wh.h): its
 * connections, quoting and queries for the checks of wh_quality.c. A writer
 * that loads straight into its table (no staging table) hands out its
 * channel's connection, so the checks see the load inside its transaction
 * before the commit.
 */
#include <stdlib.h>

#include "pg_common.h"

static orr_status pg_q_connect(const char *dsn, const char *path, void **conn, orr_err *err)
{
    PGconn *c = wh_pg_connect(dsn, path, err);
    *conn = c;
    return c ? ORR_OK : ORR_EUNAVAIL;
}

static void pg_q_disconnect(void *conn)
{
    PQfinish(conn);
}

static void *pg_q_load_conn(void *writer_conf, void *writer_state)
{
    const wh_pg_conf *c = writer_conf;
    return c->use_stage ? NULL : wh_pg_writer_conn(writer_state);
}

static const wh_sqlopt *pg_q_opts(void *writer_conf)
{
    return &((const wh_pg_conf *)writer_conf)->o;
}

static orr_status pg_q_query(void *conn, const char *sql, size_t keep, uint64_t *nrows,
                             json_t **rows, const char *path, orr_err *err)
{
    *rows = NULL;
    *nrows = 0;
    PGresult *r = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        orr_status rc = orr_err_set(err, ORR_EIO, path, "PostgreSQL: %s", PQerrorMessage(conn));
        PQclear(r);
        return rc;
    }
    int n = st == PGRES_TUPLES_OK ? PQntuples(r) : 0, nf = PQnfields(r);
    json_t *a = json_array();
    for (int i = 0; i < n && (size_t)i < keep; i++) {
        json_t *row = json_array();
        for (int f = 0; f < nf; f++)
            json_array_append_new(
                row, PQgetisnull(r, i, f)
                         ? json_null()
                         : json_stringn(PQgetvalue(r, i, f), (size_t)PQgetlength(r, i, f)));
        json_array_append_new(a, row);
    }
    PQclear(r);
    *nrows = (uint64_t)n;
    *rows = a;
    return ORR_OK;
}

const wh_quality_ops wh_pg_quality = {
    .dialect = WH_Q_PG,
    .connect = pg_q_connect,
    .disconnect = pg_q_disconnect,
    .load_conn = pg_q_load_conn,
    .opts = pg_q_opts,
    .quote_table = wh_pg_quote_qualified,
    .quote_ident = wh_pg_quote_ident,
    .query = pg_q_query,
};
