/*
 * pg_writer.c - PostgreSQL writer: COPY ... FROM STDIN in text format, fed
 * in chunks of ~256 KiB. Each channel has its own connection and
 * transaction, committed by close(commit=1) only after the engine checked
 * the whole run. Without a staging table (see pg_periphery.c), truncate and
 * replace run TRUNCATE / DELETE of the slice in the same transaction as the
 * load, so a killed run leaves the target as it was.
 *
 * Values are checked (wh_value_check) only for columns whose source type
 * differs from the target's; a row that does not fit is dirty and skipped,
 * so one bad value never aborts the COPY. Bit strings are checked against a
 * bit(n)/bit varying(n) target, and a bit string source loads into bytea as
 * its bytes and into an integer as its value (pg_periphery.c plans which).
 *
 * Pass-through (wh_ctx.raw, pg_raw.c): the COPY is binary and each batch's
 * bytes, the reader's tuples back to back, are sent as they are.
 */
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "pg_common.h"
#include "wh_text.h"

#define PG_CHUNK (256 * 1024)

static orr_status pg_writer_configure(const json_t *spec, const char *path, void **conf,
                                      orr_err *err)
{
    wh_pg_conf *c = NULL;
    orr_status rc = wh_pg_conf_parse(spec, path, 0, &c, err);
    *conf = c;
    return rc;
}

static int pg_writer_max_channels(void *conf, int wanted)
{
    wh_pg_conf *c = conf;
    c->channels = wanted;
    return wanted;
}

typedef struct pg_writer {
    wh_pg_conf *c;
    wh_ctx *ctx;
    const char *name;
    PGconn *conn;
    orr_buf buf;
    orr_buf tmp; /* a converted value */
    int in_copy;
    int raw; /* pass-through: binary COPY */
} pg_writer;

/* Begin the COPY of the current transaction (binary in a pass-through run:
 * the header goes out with the first rows). */
static orr_status pg_copy_begin(pg_writer *w, orr_err *err)
{
    const wh_pg_conf *c = w->c;
    orr_buf q = ORR_BUF_INIT;
    orr_buf_appendf(&q, "COPY %s %s FROM STDIN%s", c->use_stage ? c->qstage.data : c->qtable.data,
                    c->collist.data, w->raw ? " (FORMAT binary)" : "");
    PGresult *r = PQexec(w->conn, q.data);
    orr_buf_free(&q);
    orr_status rc = ORR_OK;
    if (PQresultStatus(r) != PGRES_COPY_IN) {
        rc = orr_err_set(err, ORR_EIO, c->o.path, "PostgreSQL: %s", PQerrorMessage(w->conn));
    } else {
        w->in_copy = 1;
        if (w->raw) {
            orr_buf_reserve(&w->buf, 32);
            w->buf.len += wh_pg_raw_header(w->buf.data + w->buf.len);
        }
    }
    PQclear(r);
    return rc;
}

static orr_status pg_writer_open(void *conf, wh_ctx *ctx, const wh_schema *src, const char *name,
                                 void **state, orr_err *err)
{
    (void)src;
    wh_pg_conf *c = conf;
    orr_status rc;
    pg_writer *w = orr_xcalloc(1, sizeof(*w));
    w->c = c;
    w->ctx = ctx;
    w->name = name;
    w->raw = ctx->raw;
    w->conn = wh_pg_connect(c->o.dsn, c->o.path, err);
    if (!w->conn) {
        free(w);
        return ORR_EUNAVAIL;
    }
    orr_buf q = ORR_BUF_INIT;
    orr_buf_append_str(&q, "BEGIN; ");
    if (!c->use_stage && c->o.mode == WH_MODE_TRUNCATE)
        orr_buf_appendf(&q, "TRUNCATE %s; ", c->qtable.data);
    else if (!c->use_stage && c->o.mode == WH_MODE_REPLACE)
        orr_buf_appendf(&q, "DELETE FROM %s WHERE (%s); ", c->qtable.data, c->o.filter);
    if ((rc = wh_pg_exec(w->conn, q.data, c->o.path, err)))
        goto fail;
    orr_buf_reserve(&w->buf, PG_CHUNK + 65536);
    if ((rc = pg_copy_begin(w, err)))
        goto fail;
    orr_buf_free(&q);
    *state = w;
    return ORR_OK;
fail:
    orr_buf_free(&q);
    PQfinish(w->conn);
    orr_buf_free(&w->buf);
    free(w);
    return rc;
}

static orr_status pg_send(pg_writer *w, orr_err *err)
{
    if (w->buf.len == 0)
        return ORR_OK;
    if (PQputCopyData(w->conn, w->buf.data, (int)w->buf.len) != 1)
        return orr_err_set(err, ORR_EIO, w->c->o.path, "PostgreSQL COPY: %s",
                           PQerrorMessage(w->conn));
    orr_buf_reset(&w->buf);
    return ORR_OK;
}

/* The JSON escape \u0000 (its backslash not itself escaped) in v[0..n). */
static int pg_has_u0000(const char *v, size_t n)
{
    for (size_t i = 0; i + 6 <= n; i++) {
        const char *q = memchr(v + i, '\\', n - i);
        if (!q || (size_t)(q - v) + 6 > n)
            return 0;
        i = (size_t)(q - v);
        size_t run = 0;
        while (i + run < n && v[i + run] == '\\')
            run++;
        /* In a run of backslashes, pairs are escaped backslashes; an odd
         * run ends with one that escapes what follows. */
        if (run % 2 == 1 && i + run + 5 <= n && memcmp(v + i + run, "u0000", 5) == 0)
            return 1;
        i += run - 1;
    }
    return 0;
}

/* A bit-string column's value (conv != NONE, v not NULL): 1 when it fits,
 * with a converted value in tmp for bytea and integer targets (*out, *outlen);
 * 0 with *why. */
static int pg_conv_value(const wh_col *t, int conv, const char *v, int64_t len, orr_buf *tmp,
                         const char **out, int64_t *outlen, const char **why)
{
    size_t n = (size_t)len;
    *out = v;
    *outlen = len;
    if (conv == WH_PG_CONV_NUL || conv == WH_PG_CONV_JSONB) {
        if (memchr(v, 0, n)) {
            *why = "a NUL byte, which PostgreSQL text cannot hold";
            return 0;
        }
        if (conv == WH_PG_CONV_JSONB && pg_has_u0000(v, n)) {
            *why = "\\u0000 in JSON, which jsonb cannot hold";
            return 0;
        }
        return 1;
    }
    if (!wh_bits_valid(v, n)) {
        *why = "not a bit string (only 0 and 1 digits)";
        return 0;
    }
    switch (conv) {
    case WH_PG_CONV_BIT:
        if (t->size > 0 && n != (size_t)t->size) {
            *why = "bit string of another length than the column's";
            return 0;
        }
        return 1;
    case WH_PG_CONV_VARBIT:
        if (t->size > 0 && n > (size_t)t->size) {
            *why = "bit string longer than the column allows";
            return 0;
        }
        return 1;
    case WH_PG_CONV_BITS_BYTES:
        orr_buf_reset(tmp);
        orr_buf_reserve(tmp, n + 8);
        tmp->len = wh_bits_to_hex(v, n, tmp->data);
        *out = tmp->data;
        *outlen = (int64_t)tmp->len;
        return 1;
    case WH_PG_CONV_BITS_INT: {
        orr_buf_reset(tmp);
        orr_buf_reserve(tmp, 32);
        size_t k = 0;
        if (!wh_bits_to_int(v, n, t->size ? t->size : 8, tmp->data, &k)) {
            *why = "bit string value too large for the integer column";
            return 0;
        }
        tmp->len = k;
        *out = tmp->data;
        *outlen = (int64_t)k;
        return 1;
    }
    default:
        return 1;
    }
}

/* Pass-through: the batch's bytes are the tuples in COPY's binary format. */
static orr_status pg_writer_write_raw(pg_writer *w, const wh_batch *b, wh_wstats *st, orr_err *err)
{
    orr_status rc = pg_send(w, err); /* the header, before the first rows */
    if (rc || b->data.len == 0)
        return rc;
    if (PQputCopyData(w->conn, b->data.data, (int)b->data.len) != 1)
        return orr_err_set(err, ORR_EIO, w->c->o.path, "PostgreSQL COPY: %s",
                           PQerrorMessage(w->conn));
    st->rows += b->nrows;
    st->bytes += b->data.len;
    return ORR_OK;
}

static orr_status pg_writer_write(void *state, const wh_batch *b, wh_wstats *st, orr_err *err)
{
    pg_writer *w = state;
    if (w->raw)
        return pg_writer_write_raw(w, b, st, err);
    const wh_pg_conf *c = w->c;
    size_t ncols = b->ncols;
    for (size_t r = 0; r < b->nrows; r++) {
        const char *why = NULL;
        size_t bad = 0;
        for (size_t col = 0; col < ncols && !why; col++) {
            int64_t len, ol;
            const char *v = wh_batch_val(b, r, col, &len), *o;
            bad = col;
            if (c->check[col] && !wh_value_check(&c->target.cols[col], v, len, &why))
                break;
            if (c->conv[col] && v &&
                !pg_conv_value(&c->target.cols[col], c->conv[col], v, len, &w->tmp, &o, &ol, &why))
                break;
        }
        if (why) {
            char reason[300];
            snprintf(reason, sizeof(reason), "column %s (%s): %s", c->target.cols[bad].name,
                     c->target.cols[bad].type, why);
            if (wh_ctx_dirty(w->ctx, w->name, b, r, reason) != ORR_OK)
                return orr_err_set(err, ORR_ETOOBIG, "max_dirty_rows", "too many dirty rows");
            continue;
        }
        size_t start = w->buf.len;
        for (size_t col = 0; col < ncols; col++) {
            int64_t len;
            const char *v = wh_batch_val(b, r, col, &len);
            if (col)
                orr_buf_append_byte(&w->buf, '\t');
            if (c->conv[col] >= WH_PG_CONV_BITS_BYTES && v)
                pg_conv_value(&c->target.cols[col], c->conv[col], v, len, &w->tmp, &v, &len, &why);
            wh_copy_encode(&w->buf, v, len);
        }
        orr_buf_append_byte(&w->buf, '\n');
        st->rows++;
        st->bytes += w->buf.len - start;
        if (w->buf.len >= PG_CHUNK) {
            orr_status rc = pg_send(w, err);
            if (rc)
                return rc;
        }
    }
    return ORR_OK;
}

static orr_status pg_writer_flush(void *state, uint64_t *confirmed, orr_err *err)
{
    pg_writer *w = state;
    if (w->raw) /* the binary trailer */
        orr_buf_append(&w->buf, "\377\377", 2);
    orr_status rc = pg_send(w, err);
    if (rc)
        return rc;
    w->in_copy = 0;
    if (PQputCopyEnd(w->conn, NULL) != 1)
        return orr_err_set(err, ORR_EIO, w->c->o.path, "PostgreSQL COPY end: %s",
                           PQerrorMessage(w->conn));
    PGresult *r = PQgetResult(w->conn);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        rc =
            orr_err_set(err, ORR_EIO, w->c->o.path, "PostgreSQL COPY: %s", PQerrorMessage(w->conn));
    } else {
        *confirmed = strtoull(PQcmdTuples(r), NULL, 10);
    }
    PQclear(r);
    while ((r = PQgetResult(w->conn)) != NULL)
        PQclear(r);
    return rc;
}

static orr_status pg_writer_close(void *state, int commit, orr_err *err)
{
    pg_writer *w = state;
    orr_status rc = ORR_OK;
    if (!w)
        return ORR_OK;
    if (w->in_copy) {
        PQputCopyEnd(w->conn, "transfer cancelled");
        PGresult *r;
        while ((r = PQgetResult(w->conn)) != NULL)
            PQclear(r);
        commit = 0;
    }
    rc = wh_pg_exec(w->conn, commit ? "COMMIT" : "ROLLBACK", w->c->o.path, err);
    PQfinish(w->conn);
    orr_buf_free(&w->buf);
    orr_buf_free(&w->tmp);
    free(w);
    return rc;
}

/* Resume bookkeeping: end the split's COPY, record the split in the same
 * transaction, commit, and begin the next split's transaction and COPY. */
orr_status wh_pg_writer_split_commit(void *state, const char *job, const char *run_key,
                                     size_t split, uint64_t rows, uint64_t *confirmed, orr_err *err)
{
    pg_writer *w = state;
    const wh_pg_conf *c = w->c;
    *confirmed = 0;
    orr_status rc = pg_writer_flush(state, confirmed, err);
    if (rc)
        return rc;
    orr_buf q = ORR_BUF_INIT;
    wh_pg_resume_record_sql(c, job, run_key, split, rows, &q);
    orr_buf_append_str(&q, "COMMIT; BEGIN");
    rc = wh_pg_exec(w->conn, q.data, c->o.path, err);
    orr_buf_free(&q);
    return rc ? rc : pg_copy_begin(w, err);
}

PGconn *wh_pg_writer_conn(void *state)
{
    return state ? ((pg_writer *)state)->conn : NULL;
}

const wh_writer_ops wh_pg_writer = {
    .configure = pg_writer_configure,
    .conf_free = wh_pg_conf_free,
    .max_channels = pg_writer_max_channels,
    .open = pg_writer_open,
    .write = pg_writer_write,
    .flush = pg_writer_flush,
    .close = pg_writer_close,
    .raw_from = wh_pg_raw_from,
};
