/*
 * pg_estimate.c - how many rows a PostgreSQL reader will read, as the
 * planner guesses it before the run: progress and its end estimate use it.
 *
 * One table: EXPLAIN of SELECT 1 over the rows the reader reads (its filter
 * and incremental bounds), the top node's "rows=N", in the run's snapshot
 * (a savepoint keeps a failed EXPLAIN from spoiling the snapshot's
 * transaction). A table list: the sum of pg_class.reltuples of the tables
 * (the catalog alone: no lock on the tables is taken). Anything that cannot
 * be estimated is 0, "unknown"; an estimate never fails a run.
 */
#include <stdlib.h>
#include <string.h>

#include "pg_common.h"

static uint64_t pg_reltuples(PGconn *conn, const char *table)
{
    orr_buf lit = ORR_BUF_INIT;
    wh_pg_quote_qualified(&lit, table);
    const char *params[1] = {lit.data};
    PGresult *r =
        PQexecParams(conn, "SELECT reltuples::float8 FROM pg_class WHERE oid = to_regclass($1)", 1,
                     NULL, params, NULL, NULL, 0);
    double rows =
        PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? atof(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    orr_buf_free(&lit);
    return rows > 0 ? (uint64_t)rows : 0;
}

static void pg_and(orr_buf *w)
{
    orr_buf_append_str(w, w->len ? " AND " : " WHERE ");
}

static uint64_t pg_explain_rows(PGconn *conn, const wh_pg_conf *c, const wh_ctx *ctx)
{
    orr_buf q = ORR_BUF_INIT, where = ORR_BUF_INIT;
    if (c->o.filter) {
        pg_and(&where);
        orr_buf_appendf(&where, "(%s)", c->o.filter);
    }
    const wh_incr *in = &ctx->incr;
    if (in->on && in->has_low) {
        pg_and(&where);
        wh_pg_quote_ident(&where, in->column);
        orr_buf_append_str(&where, " > ");
        wh_pg_quote_literal(&where, in->low);
    }
    if (in->on && in->has_high) {
        pg_and(&where);
        wh_pg_quote_ident(&where, in->column);
        orr_buf_append_str(&where, " <= ");
        wh_pg_quote_literal(&where, in->high);
    }
    orr_buf_append_str(&q, "EXPLAIN SELECT 1 FROM ");
    wh_pg_quote_qualified(&q, c->o.table);
    if (where.len)
        orr_buf_append_str(&q, where.data);
    uint64_t rows = 0;
    PQclear(PQexec(conn, "SAVEPOINT wh_estimate"));
    PGresult *r = PQexec(conn, q.data);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) {
        const char *at = strstr(PQgetvalue(r, 0, 0), " rows=");
        if (at) {
            double v = atof(at + 6);
            rows = v > 0 ? (uint64_t)v : 0;
        }
        PQclear(r);
        PQclear(PQexec(conn, "RELEASE SAVEPOINT wh_estimate"));
    } else {
        PQclear(r);
        PQclear(PQexec(conn, "ROLLBACK TO SAVEPOINT wh_estimate"));
    }
    orr_buf_free(&q);
    orr_buf_free(&where);
    return rows;
}

uint64_t wh_pg_estimate_rows(PGconn *conn, const wh_pg_conf *c, const wh_ctx *ctx)
{
    if (!conn)
        return 0;
    if (c->o.tables) {
        uint64_t sum = 0;
        for (size_t i = 0; i < c->o.ntables; i++)
            sum += pg_reltuples(conn, c->o.tables[i]);
        return sum;
    }
    if (!c->o.table)
        return 0;
    return pg_explain_rows(conn, c, ctx);
}
