/*
 * pg_reader.c - PostgreSQL reader: COPY (SELECT ...) TO STDOUT in text
 * format, one shard at a time, every channel in the snapshot exported by the
 * reader periphery. Rows are parsed straight into the batch (wh_copy_parse).
 * In a pass-through run (wh_ctx.raw) the COPY is binary and its tuples go
 * into the batch as they are (pg_raw.c).
 */
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "pg_common.h"
#include "wh_text.h"

static orr_status pg_reader_configure(const json_t *spec, const char *path, void **conf,
                                      orr_err *err)
{
    wh_pg_conf *c = NULL;
    orr_status rc = wh_pg_conf_parse(spec, path, 1, &c, err);
    *conf = c;
    return rc;
}

static orr_status pg_reader_describe(void *conf, wh_ctx *ctx, wh_schema *out, orr_err *err)
{
    (void)ctx;
    wh_pg_conf *c = conf;
    orr_status rc =
        wh_pg_describe(c->snap_conn, c->o.table, c->o.columns, c->o.ncolumns, out, c->o.path, err);
    if (rc)
        return rc;
    wh_schema_free(&c->src);
    for (size_t i = 0; i < out->ncols; i++)
        *wh_schema_add(&c->src, "", "", WH_K_TEXT) = out->cols[i];
    if (c->o.split_key) {
        wh_schema k = {0, NULL};
        const char *names[1] = {c->o.split_key};
        rc = wh_pg_describe(c->snap_conn, c->o.table, names, 1, &k, c->o.path, err);
        if (rc) {
            snprintf(err->field, sizeof(err->field), "%s.split.key", c->o.path);
            return rc;
        }
        c->key_kind = k.cols[0].kind;
        wh_schema_free(&k);
    }
    return ORR_OK;
}

typedef struct pg_reader {
    wh_pg_conf *c;
    wh_ctx *ctx;
    PGconn *conn;
    uint64_t rownum;
    int in_copy;
    size_t shard;
    wh_pg_raw raw; /* pass-through: the binary COPY's parse state */
} pg_reader;

static orr_status pg_reader_open(void *conf, wh_ctx *ctx, void **state, orr_err *err)
{
    wh_pg_conf *c = conf;
    pg_reader *r = orr_xcalloc(1, sizeof(*r));
    r->c = c;
    r->ctx = ctx;
    r->conn = wh_pg_connect(c->o.dsn, c->o.path, err);
    if (!r->conn) {
        free(r);
        return ORR_EUNAVAIL;
    }
    orr_status rc =
        wh_pg_exec(r->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", c->o.path, err);
    if (!rc && c->snapshot[0]) {
        orr_buf q = ORR_BUF_INIT;
        orr_buf_append_str(&q, "SET TRANSACTION SNAPSHOT ");
        wh_pg_quote_literal(&q, c->snapshot);
        rc = wh_pg_exec(r->conn, q.data, c->o.path, err);
        orr_buf_free(&q);
    }
    if (rc) {
        PQfinish(r->conn);
        free(r);
        return rc;
    }
    *state = r;
    return ORR_OK;
}

static void pg_and(orr_buf *w)
{
    orr_buf_append_str(w, w->len ? " AND " : " WHERE ");
}

static orr_status pg_reader_start(void *state, const wh_shard *shard, orr_err *err)
{
    pg_reader *r = state;
    wh_pg_conf *c = r->c;
    orr_buf q = ORR_BUF_INIT, cols = ORR_BUF_INIT, where = ORR_BUF_INIT;
    for (size_t i = 0; i < c->src.ncols; i++) {
        if (i)
            orr_buf_append_str(&cols, ", ");
        wh_pg_quote_ident(&cols, c->src.cols[i].name);
    }
    if (shard->pred) {
        pg_and(&where);
        orr_buf_appendf(&where, "(%s)", shard->pred);
    }
    if (c->o.filter) {
        pg_and(&where);
        orr_buf_appendf(&where, "(%s)", c->o.filter);
    }
    const wh_incr *in = &r->ctx->incr;
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
    const char *table = shard->table ? shard->table : c->o.table;
    if (where.len) {
        orr_buf_appendf(&q, "COPY (SELECT %s FROM ", cols.data);
        wh_pg_quote_qualified(&q, table);
        orr_buf_appendf(&q, "%s) TO STDOUT%s", where.data, r->ctx->raw ? " (FORMAT binary)" : "");
    } else {
        orr_buf_append_str(&q, "COPY ");
        wh_pg_quote_qualified(&q, table);
        orr_buf_appendf(&q, " (%s) TO STDOUT%s", cols.data, r->ctx->raw ? " (FORMAT binary)" : "");
    }
    PGresult *res = PQexec(r->conn, q.data);
    orr_status rc = ORR_OK;
    if (PQresultStatus(res) != PGRES_COPY_OUT)
        rc = orr_err_set(err, ORR_EIO, c->o.path, "PostgreSQL: %s", PQerrorMessage(r->conn));
    else
        r->in_copy = 1;
    PQclear(res);
    r->rownum = 0;
    memset(&r->raw, 0, sizeof(r->raw));
    r->shard = shard->id;
    orr_buf_free(&q);
    orr_buf_free(&cols);
    orr_buf_free(&where);
    return rc;
}

static orr_status pg_reader_read(void *state, wh_batch *b, orr_err *err)
{
    pg_reader *r = state;
    while (!wh_batch_full(b)) {
        char *buf = NULL;
        int n = PQgetCopyData(r->conn, &buf, 0);
        if (n > 0 && r->ctx->raw) {
            const char *why = NULL;
            int rows = wh_pg_raw_parse(&r->raw, buf, (size_t)n, b, &why);
            PQfreemem(buf);
            if (rows < 0)
                return orr_err_set(err, ORR_EIO, r->c->o.path, "PostgreSQL COPY: %s", why);
            b->src_bytes += (uint64_t)n;
            continue;
        }
        if (n > 0) {
            r->rownum++;
            wh_batch_row_begin(b, r->rownum);
            wh_copy_parse(buf, (size_t)n, b);
            b->src_bytes += (uint64_t)n;
            if (wh_batch_row_end(b) != ORR_OK) {
                orr_status dr = wh_ctx_dirty_raw(r->ctx, r->shard, r->rownum, buf, (size_t)n,
                                                 "wrong number of fields");
                if (dr != ORR_OK) {
                    PQfreemem(buf);
                    return orr_err_set(err, dr, "max_dirty_rows", "too many dirty rows");
                }
            }
            PQfreemem(buf);
            continue;
        }
        if (n == -1) {
            r->in_copy = 0;
            PGresult *res = PQgetResult(r->conn);
            orr_status rc = ORR_EOF;
            if (PQresultStatus(res) != PGRES_COMMAND_OK)
                rc = orr_err_set(err, ORR_EIO, r->c->o.path, "PostgreSQL: %s",
                                 PQerrorMessage(r->conn));
            PQclear(res);
            while ((res = PQgetResult(r->conn)) != NULL)
                PQclear(res);
            return rc;
        }
        return orr_err_set(err, ORR_EIO, r->c->o.path, "PostgreSQL COPY: %s",
                           PQerrorMessage(r->conn));
    }
    return ORR_OK;
}

static void pg_reader_close(void *state)
{
    pg_reader *r = state;
    if (!r)
        return;
    if (!r->in_copy)
        PQclear(PQexec(r->conn, "COMMIT"));
    PQfinish(r->conn);
    free(r);
}

const wh_reader_ops wh_pg_reader = {
    .configure = pg_reader_configure,
    .conf_free = wh_pg_conf_free,
    .describe = pg_reader_describe,
    .open = pg_reader_open,
    .start = pg_reader_start,
    .read = pg_reader_read,
    .close = pg_reader_close,
};
