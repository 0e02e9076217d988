/*
 * pg_splitter.c - PostgreSQL shards: one per table of a table list, or
 * primary-key ranges cut at boundaries sampled from the table
 * (TABLESAMPLE SYSTEM, ~200 sampled keys per shard), so sparse or skewed
 * keys still give shards of similar size. Equal sampled boundaries collapse,
 * so a key with few distinct values gives fewer shards, never empty ones.
 * Text keys compare in the "C" collation: byte order, where every row falls
 * in exactly one range. NULL keys go to the first shard.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "pg_common.h"

static orr_status pg_split(void *conf, wh_ctx *ctx, int channels, wh_shards *out, orr_err *err)
{
    wh_pg_conf *c = conf;
    ctx->rows_estimate = wh_pg_estimate_rows(c->snap_conn, c, ctx);
    if (c->o.tables) {
        for (size_t i = 0; i < c->o.ntables; i++)
            wh_shards_add(out, NULL, c->o.tables[i], NULL);
        return ORR_OK;
    }
    int64_t want = c->o.shards ? c->o.shards : (channels > 1 ? 4 * channels : 1);
    if (!c->o.split_key || want <= 1) {
        wh_shards_add(out, NULL, NULL, NULL);
        return ORR_OK;
    }
    PGconn *conn = c->snap_conn;
    orr_buf q = ORR_BUF_INIT, lit = ORR_BUF_INIT, key = ORR_BUF_INIT;
    orr_status rc = ORR_OK;
    PGresult *r = NULL;
    wh_pg_quote_qualified(&lit, c->o.table);
    wh_pg_quote_ident(&key, c->o.split_key);
    const char *coll = c->key_kind == WH_K_TEXT ? " COLLATE \"C\"" : "";
    const char *params[1] = {lit.data};
    r = PQexecParams(conn, "SELECT reltuples::float8 FROM pg_class WHERE oid = to_regclass($1)", 1,
                     NULL, params, NULL, NULL, 0);
    double rows =
        PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? atof(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    r = NULL;
    double pct = 100;
    if (rows > 0) {
        pct = 100.0 * (double)want * 200.0 / rows;
        if (pct > 100)
            pct = 100;
        if (pct < 0.0001)
            pct = 0.0001;
    }
    orr_buf_appendf(&q, "SELECT s.k::text AS kt FROM (SELECT %s AS k FROM ", key.data);
    wh_pg_quote_qualified(&q, c->o.table);
    if (pct < 100)
        orr_buf_appendf(&q, " TABLESAMPLE SYSTEM (%.6f)", pct);
    orr_buf_appendf(&q, " WHERE %s IS NOT NULL", key.data);
    if (c->o.filter)
        orr_buf_appendf(&q, " AND (%s)", c->o.filter);
    orr_buf_appendf(&q, ") s ORDER BY s.k%s", coll);
    r = PQexec(conn, q.data);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = orr_err_set(err, ORR_EIO, c->o.path, "PostgreSQL (sampling split keys): %s",
                         PQerrorMessage(conn));
        goto out;
    }
    int m = PQntuples(r);
    /* Boundaries at sample quantiles, equal neighbours collapsed. */
    /* A boundary equal to the smallest sampled key would leave the first
     * range (keys below it) all but empty: start from the smallest. */
    const char *prev = m > 0 ? PQgetvalue(r, 0, 0) : NULL;
    size_t nb = 0;
    const char **bounds = orr_xcalloc((size_t)want, sizeof(*bounds));
    for (int64_t i = 1; i < want && m > 0; i++) {
        int idx = (int)((int64_t)m * i / want);
        if (idx >= m)
            break;
        const char *v = PQgetvalue(r, idx, 0);
        if (prev && strcmp(prev, v) == 0)
            continue;
        bounds[nb++] = prev = v;
    }
    if (nb == 0) {
        wh_shards_add(out, NULL, NULL, NULL);
        free(bounds);
        goto out;
    }
    for (size_t i = 0; i <= nb; i++) {
        orr_buf p = ORR_BUF_INIT;
        if (i == 0) {
            orr_buf_appendf(&p, "%s IS NULL OR %s%s < ", key.data, key.data, coll);
            wh_pg_quote_literal(&p, bounds[0]);
        } else {
            orr_buf_appendf(&p, "%s%s >= ", key.data, coll);
            wh_pg_quote_literal(&p, bounds[i - 1]);
            if (i < nb) {
                orr_buf_appendf(&p, " AND %s%s < ", key.data, coll);
                wh_pg_quote_literal(&p, bounds[i]);
            }
        }
        wh_shards_add(out, p.data, NULL, NULL);
        orr_buf_free(&p);
    }
    free(bounds);
out:
    (void)ctx;
    PQclear(r);
    orr_buf_free(&q);
    orr_buf_free(&lit);
    orr_buf_free(&key);
    return rc;
}

const wh_splitter_ops wh_pg_splitter = {
    .split = pg_split,
};
