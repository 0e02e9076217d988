/*
 * mysql_splitter.c - MariaDB/MySQL shards: one per table of a table list, or
 * key ranges cut at boundaries sampled with RAND() (~200 keys per shard;
 * equal boundaries collapse). Text keys compare as BINARY, so the ranges are
 * exact whatever the collation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "mysql_common.h"

static orr_status my_split(void *conf, wh_ctx *ctx, int channels, wh_shards *out, orr_err *err)
{
    wh_mysql_conf *c = conf;
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
    MYSQL *m = wh_mysql_connect(c->o.dsn, c->o.path, err);
    if (!m)
        return err->code;
    orr_buf q = ORR_BUF_INIT, key = ORR_BUF_INIT;
    orr_status rc = ORR_OK;
    MYSQL_RES *res = NULL;
    const char **bounds = NULL;
    wh_mysql_quote_ident(&key, c->o.split_key);
    const char *bin = c->key_kind == WH_K_TEXT ? "BINARY " : "";
    orr_buf_append_str(&q, "SELECT COUNT(*) FROM ");
    wh_mysql_quote_qualified(&q, c->o.table);
    double rows = 0;
    if (mysql_real_query(m, q.data, q.len) == 0 && (res = mysql_store_result(m))) {
        MYSQL_ROW r = mysql_fetch_row(res);
        rows = r && r[0] ? atof(r[0]) : 0;
        mysql_free_result(res);
        res = NULL;
    }
    ctx->rows_estimate = rows > 0 ? (uint64_t)rows : 0; /* progress: the whole table */
    double frac = rows > 0 ? (double)want * 200.0 / rows : 1;
    if (frac > 1)
        frac = 1;
    orr_buf_reset(&q);
    orr_buf_appendf(&q, "SELECT %s FROM ", key.data);
    wh_mysql_quote_qualified(&q, c->o.table);
    orr_buf_appendf(&q, " WHERE %s IS NOT NULL", key.data);
    if (frac < 1)
        orr_buf_appendf(&q, " AND RAND() < %.8f", frac);
    if (c->o.filter)
        orr_buf_appendf(&q, " AND (%s)", c->o.filter);
    orr_buf_appendf(&q, " ORDER BY %s%s", bin, key.data);
    if (mysql_real_query(m, q.data, q.len) != 0 || !(res = mysql_store_result(m))) {
        rc = orr_err_set(err, ORR_EIO, c->o.path, "MariaDB (sampling split keys): %s",
                         mysql_error(m));
        goto out;
    }
    size_t n = (size_t)mysql_num_rows(res);
    MYSQL_ROW *vals = orr_xcalloc(n ? n : 1, sizeof(*vals));
    for (size_t i = 0; i < n; i++)
        vals[i] = mysql_fetch_row(res);
    bounds = orr_xcalloc((size_t)want, sizeof(*bounds));
    size_t nb = 0;
    /* A boundary equal to the smallest sampled key would leave the first
     * range all but empty: start from the smallest. */
    const char *prev = n > 0 ? vals[0][0] : NULL;
    for (int64_t i = 1; i < want && n > 0; i++) {
        size_t idx = (size_t)((int64_t)n * i / want);
        if (idx >= n)
            break;
        const char *v = vals[idx][0];
        if (prev && strcmp(prev, v) == 0)
            continue;
        bounds[nb++] = prev = v;
    }
    if (nb == 0)
        wh_shards_add(out, NULL, NULL, NULL);
    for (size_t i = 0; nb && i <= nb; i++) {
        orr_buf p = ORR_BUF_INIT;
        if (i == 0) {
            orr_buf_appendf(&p, "%s IS NULL OR %s%s < ", key.data, bin, key.data);
            wh_mysql_quote_literal(m, &p, bounds[0], strlen(bounds[0]));
        } else {
            orr_buf_appendf(&p, "%s%s >= ", bin, key.data);
            wh_mysql_quote_literal(m, &p, bounds[i - 1], strlen(bounds[i - 1]));
            if (i < nb) {
                orr_buf_appendf(&p, " AND %s%s < ", bin, key.data);
                wh_mysql_quote_literal(m, &p, bounds[i], strlen(bounds[i]));
            }
        }
        wh_shards_add(out, p.data, NULL, NULL);
        orr_buf_free(&p);
    }
    free(vals);
out:
    free(bounds);
    if (res)
        mysql_free_result(res);
    mysql_close(m);
    orr_buf_free(&q);
    orr_buf_free(&key);
    return rc;
}

const wh_splitter_ops wh_mysql_splitter = {
    .split = my_split,
};
