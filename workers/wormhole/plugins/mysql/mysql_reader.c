/*
 * mysql_reader.c - MariaDB/MySQL reader: SELECT with mysql_use_result, so
 * rows stream from the server one at a time and the result is never held in
 * memory. Values are converted to the canonical form (wh.h): tinyint(1) to
 * t/f, TIMESTAMP (read in UTC) gets "+00", binary strings become \x hex,
 * BIT(n) a string of n '0'/'1' digits, FLOAT (read as a double) the
 * shortest text of its exact single-precision value; zero dates, which PostgreSQL cannot
 * hold, make the row dirty (the reject carries the row's values).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "mysql_common.h"
#include "wh_dirty.h"

static orr_status my_reader_configure(const json_t *spec, const char *path, void **conf,
                                      orr_err *err)
{
    wh_mysql_conf *c = NULL;
    orr_status rc = wh_mysql_conf_parse(spec, path, 1, &c, err);
    *conf = c;
    return rc;
}

static orr_status my_reader_describe(void *conf, wh_ctx *ctx, wh_schema *out, orr_err *err)
{
    (void)ctx;
    wh_mysql_conf *c = conf;
    MYSQL *m = wh_mysql_connect(c->o.dsn, c->o.path, err);
    if (!m)
        return err->code;
    orr_status rc =
        wh_mysql_describe(m, c->o.table, c->o.columns, c->o.ncolumns, out, c->o.path, err);
    if (!rc) {
        wh_schema_free(&c->src);
        for (size_t i = 0; i < out->ncols; i++)
            *wh_schema_add(&c->src, "", "", WH_K_TEXT) = out->cols[i];
    }
    if (!rc && c->o.split_key) {
        wh_schema k = {0, NULL};
        const char *names[1] = {c->o.split_key};
        rc = wh_mysql_describe(m, c->o.table, names, 1, &k, c->o.path, err);
        if (rc)
            snprintf(err->field, sizeof(err->field), "%s.split.key", c->o.path);
        else
            c->key_kind = k.cols[0].kind;
        wh_schema_free(&k);
    }
    mysql_close(m);
    return rc;
}

typedef struct my_reader {
    wh_mysql_conf *c;
    wh_ctx *ctx;
    MYSQL *m;
    MYSQL_RES *res;
    uint64_t rownum;
    size_t shard;
} my_reader;

static orr_status my_reader_open(void *conf, wh_ctx *ctx, void **state, orr_err *err)
{
    wh_mysql_conf *c = conf;
    my_reader *r = orr_xcalloc(1, sizeof(*r));
    r->c = c;
    r->ctx = ctx;
    r->m = wh_mysql_connect(c->o.dsn, c->o.path, err);
    if (!r->m) {
        free(r);
        return err->code;
    }
    *state = r;
    return ORR_OK;
}

/* A single-precision FLOAT column (not DOUBLE). */
static int my_is_float(const wh_col *col)
{
    return col->kind == WH_K_FLOAT && strncmp(col->type, "float", 5) == 0;
}

/* The shortest text that reads back as the same single-precision value as
 * the double in v[0..n) (a FLOAT read as a double is exact). 0 when v is
 * not a number. */
static size_t my_float_text(const char *v, size_t n, char *out, size_t cap)
{
    char tmp[64];
    if (n == 0 || n >= sizeof(tmp))
        return 0;
    memcpy(tmp, v, n);
    tmp[n] = 0;
    char *end;
    float f = (float)strtod(tmp, &end);
    if (*end)
        return 0;
    for (int prec = 6; prec <= 9; prec++) {
        int k = snprintf(out, cap, "%.*g", prec, (double)f);
        if (k > 0 && (size_t)k < cap && strtof(out, NULL) == f)
            return (size_t)k;
    }
    return 0;
}

static void my_and(orr_buf *w)
{
    orr_buf_append_str(w, w->len ? " AND " : " WHERE ");
}

static orr_status my_reader_start(void *state, const wh_shard *shard, orr_err *err)
{
    my_reader *r = state;
    wh_mysql_conf *c = r->c;
    orr_buf q = ORR_BUF_INIT, where = ORR_BUF_INIT;
    orr_buf_append_str(&q, "SELECT ");
    for (size_t i = 0; i < c->src.ncols; i++) {
        if (i)
            orr_buf_append_str(&q, ", ");
        if (my_is_float(&c->src.cols[i])) {
            /* MariaDB prints a FLOAT with 6 digits (16777215 as 16777200):
             * read its exact value as a double (see my_put). */
            orr_buf_append_str(&q, "CAST(");
            wh_mysql_quote_ident(&q, c->src.cols[i].name);
            orr_buf_append_str(&q, " AS DOUBLE)");
            continue;
        }
        wh_mysql_quote_ident(&q, c->src.cols[i].name);
    }
    orr_buf_append_str(&q, " FROM ");
    wh_mysql_quote_qualified(&q, shard->table ? shard->table : c->o.table);
    if (shard->pred) {
        my_and(&where);
        orr_buf_appendf(&where, "(%s)", shard->pred);
    }
    if (c->o.filter) {
        my_and(&where);
        orr_buf_appendf(&where, "(%s)", c->o.filter);
    }
    const wh_incr *in = &r->ctx->incr;
    if (in->on && in->has_low) {
        my_and(&where);
        wh_mysql_quote_ident(&where, in->column);
        orr_buf_append_str(&where, " > ");
        wh_mysql_quote_literal(r->m, &where, in->low, strlen(in->low));
    }
    if (in->on && in->has_high) {
        my_and(&where);
        wh_mysql_quote_ident(&where, in->column);
        orr_buf_append_str(&where, " <= ");
        wh_mysql_quote_literal(r->m, &where, in->high, strlen(in->high));
    }
    orr_buf_append(&q, where.data ? where.data : "", where.len);
    orr_status rc = ORR_OK;
    if (mysql_real_query(r->m, q.data, q.len) != 0 || !(r->res = mysql_use_result(r->m)))
        rc = orr_err_set(err, ORR_EIO, c->o.path, "MariaDB: %s", mysql_error(r->m));
    r->rownum = 0;
    r->shard = shard->id;
    orr_buf_free(&q);
    orr_buf_free(&where);
    return rc;
}

static const char my_hex[] = "0123456789abcdef";

/* One value in canonical form; 0 with *why when it has none. */
static int my_put(wh_batch *b, const wh_col *col, const char *v, unsigned long n, const char **why)
{
    if (!v) {
        wh_batch_put_null(b);
        return 1;
    }
    switch (col->kind) {
    case WH_K_BOOL:
        wh_batch_put(b, (n == 1 && v[0] == '0') ? "f" : "t", 1);
        return 1;
    case WH_K_DATE:
    case WH_K_TIMESTAMP:
    case WH_K_TIMESTAMPTZ:
        if (n >= 10 && (memcmp(v, "0000-00-00", 10) == 0 || memcmp(v + 5, "00", 2) == 0 ||
                        memcmp(v + 8, "00", 2) == 0)) {
            *why = "zero date";
            return 0;
        }
        if (col->kind == WH_K_TIMESTAMPTZ) {
            char *o = wh_batch_reserve(b, n + 3);
            memcpy(o, v, n);
            memcpy(o + n, "+00", 3);
            wh_batch_commit(b, n + 3);
            return 1;
        }
        wh_batch_put(b, v, n);
        return 1;
    case WH_K_BYTES: {
        char *o = wh_batch_reserve(b, 2 + 2 * (size_t)n);
        o[0] = '\\';
        o[1] = 'x';
        for (unsigned long i = 0; i < n; i++) {
            o[2 + 2 * i] = my_hex[(unsigned char)v[i] >> 4];
            o[3 + 2 * i] = my_hex[(unsigned char)v[i] & 15];
        }
        wh_batch_commit(b, 2 + 2 * (size_t)n);
        return 1;
    }
    case WH_K_FLOAT:
        if (my_is_float(col)) {
            char buf[48];
            size_t k = my_float_text(v, n, buf, sizeof(buf));
            if (k) {
                wh_batch_put(b, buf, k);
                return 1;
            }
        }
        wh_batch_put(b, v, n);
        return 1;
    case WH_K_OTHER:
        if (strncmp(col->type, "bit(", 4) == 0 && col->size > 0) {
            /* BIT(n): MariaDB sends the value as big-endian bytes. */
            char *o = wh_batch_reserve(b, (size_t)col->size);
            wh_bits_from_bytes((const unsigned char *)v, n, (size_t)col->size, o);
            wh_batch_commit(b, (size_t)col->size);
            return 1;
        }
        wh_batch_put(b, v, n);
        return 1;
    default:
        wh_batch_put(b, v, n);
        return 1;
    }
}

static orr_status my_reader_read(void *state, wh_batch *b, orr_err *err)
{
    my_reader *r = state;
    const wh_mysql_conf *c = r->c;
    while (!wh_batch_full(b)) {
        MYSQL_ROW row = mysql_fetch_row(r->res);
        if (!row) {
            orr_status rc = ORR_EOF;
            if (mysql_errno(r->m))
                rc = orr_err_set(err, ORR_EIO, c->o.path, "MariaDB: %s", mysql_error(r->m));
            mysql_free_result(r->res);
            r->res = NULL;
            return rc;
        }
        unsigned long *lens = mysql_fetch_lengths(r->res);
        r->rownum++;
        wh_batch_row_begin(b, r->rownum);
        const char *why = NULL;
        size_t ncols = b->ncols;
        for (size_t i = 0; i < ncols; i++) {
            b->src_bytes += lens[i] + 1;
            if (!my_put(b, &c->src.cols[i], row[i], lens[i], &why))
                break;
        }
        if (!why && wh_batch_row_end(b) == ORR_OK)
            continue;
        wh_batch_row_abort(b);
        /* The reject carries the row's values as MariaDB sent them. */
        int64_t *vl = orr_xcalloc(ncols ? ncols : 1, sizeof(*vl));
        for (size_t i = 0; i < ncols; i++)
            vl[i] = row[i] ? (int64_t)lens[i] : -1;
        orr_status dr = wh_ctx_dirty_values(r->ctx, r->shard, r->rownum, (const char *const *)row,
                                            vl, ncols, why ? why : "wrong number of fields");
        free(vl);
        if (dr != ORR_OK)
            return orr_err_set(err, ORR_ETOOBIG, "max_dirty_rows", "too many dirty rows");
    }
    return ORR_OK;
}

static void my_reader_close(void *state)
{
    my_reader *r = state;
    if (!r)
        return;
    if (r->res)
        mysql_free_result(r->res);
    mysql_close(r->m);
    free(r);
}

const wh_reader_ops wh_mysql_reader = {
    .configure = my_reader_configure,
    .conf_free = wh_mysql_conf_free,
    .describe = my_reader_describe,
    .open = my_reader_open,
    .start = my_reader_start,
    .read = my_reader_read,
    .close = my_reader_close,
};
