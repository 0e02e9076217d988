/*
 * mysql_writer.c - MariaDB/MySQL writer: multi-row INSERT statements of up
 * to insert_bytes (default 1 MiB) inside one transaction per channel,
 * committed by close(commit=1). truncate and replace delete in the same
 * transaction (so they run on one channel); upsert appends ON DUPLICATE KEY
 * UPDATE; staging loads `<table>__wh_stage` (see mysql_periphery.c).
 *
 * Canonical values (wh.h) become MySQL literals: booleans 1/0, timestamps
 * without their UTC zone (a zone other than UTC is a dirty row), bytes as
 * X'hex' literals, bit strings into BIT(n) as b'...' literals, everything
 * else a quoted, escaped string.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "orr_alloc.h"
#include "mysql_common.h"

static orr_status my_writer_configure(const json_t *spec, const char *path, void **conf,
                                      orr_err *err)
{
    wh_mysql_conf *c = NULL;
    orr_status rc = wh_mysql_conf_parse(spec, path, 0, &c, err);
    *conf = c;
    return rc;
}

static int my_writer_max_channels(void *conf, int wanted)
{
    wh_mysql_conf *c = conf;
    c->channels = (c->o.mode == WH_MODE_TRUNCATE || c->o.mode == WH_MODE_REPLACE) ? 1 : wanted;
    return c->channels;
}

typedef struct my_writer {
    wh_mysql_conf *c;
    wh_ctx *ctx;
    const char *name;
    MYSQL *m;
    orr_buf sql;
    size_t prefix_len;
    size_t rows_in_sql;
    uint64_t confirmed;
} my_writer;

static orr_status my_writer_open(void *conf, wh_ctx *ctx, const wh_schema *src, const char *name,
                                 void **state, orr_err *err)
{
    (void)src;
    wh_mysql_conf *c = conf;
    my_writer *w = orr_xcalloc(1, sizeof(*w));
    w->c = c;
    w->ctx = ctx;
    w->name = name;
    w->m = wh_mysql_connect(c->o.dsn, c->o.path, err);
    if (!w->m) {
        free(w);
        return err->code;
    }
    orr_status rc = wh_mysql_exec(w->m, "START TRANSACTION", c->o.path, err);
    orr_buf q = ORR_BUF_INIT;
    if (!rc && c->o.mode == WH_MODE_TRUNCATE) {
        orr_buf_appendf(&q, "DELETE FROM %s", c->qtable.data);
        rc = wh_mysql_exec(w->m, q.data, c->o.path, err);
    } else if (!rc && c->o.mode == WH_MODE_REPLACE) {
        orr_buf_appendf(&q, "DELETE FROM %s WHERE (%s)", c->qtable.data, c->o.filter);
        rc = wh_mysql_exec(w->m, q.data, c->o.path, err);
    }
    orr_buf_free(&q);
    if (rc) {
        mysql_close(w->m);
        free(w);
        return rc;
    }
    orr_buf_appendf(&w->sql, "INSERT INTO %s %s VALUES ",
                    c->o.mode == WH_MODE_STAGING ? c->qstage.data : c->qtable.data,
                    c->collist.data);
    w->prefix_len = w->sql.len;
    orr_buf_reserve(&w->sql, (size_t)c->insert_bytes + 65536);
    *state = w;
    return ORR_OK;
}

static orr_status my_send(my_writer *w, orr_err *err)
{
    if (w->rows_in_sql == 0)
        return ORR_OK;
    orr_buf_append(&w->sql, w->c->update.data ? w->c->update.data : "", w->c->update.len);
    if (mysql_real_query(w->m, w->sql.data, w->sql.len) != 0)
        return orr_err_set(err, ORR_EIO, w->c->o.path, "MariaDB INSERT: %s", mysql_error(w->m));
    my_ulonglong n = mysql_affected_rows(w->m);
    w->confirmed += w->c->o.mode == WH_MODE_UPSERT ? w->rows_in_sql : (uint64_t)n;
    w->sql.len = w->prefix_len;
    w->sql.data[w->sql.len] = 0;
    w->rows_in_sql = 0;
    return ORR_OK;
}

static int my_ts_strip_zone(const char *v, size_t n, size_t *out)
{
    static const char *const utc[] = {"+00:00", "+00", "Z", NULL};
    for (const char *const *z = utc; *z; z++) {
        size_t k = strlen(*z);
        if (n > k && memcmp(v + n - k, *z, k) == 0) {
            *out = n - k;
            return 1;
        }
    }
    /* A zone other than UTC: "+05", "-03:30" after a time. */
    if (n > 19) {
        const char *s = v + 19;
        while (s < v + n && (*s == '.' || (*s >= '0' && *s <= '9')))
            s++;
        if (s < v + n && (*s == '+' || *s == '-'))
            return 0;
    }
    *out = n;
    return 1;
}

/* A date or date-time MariaDB can store: four-digit year from 0001, no
 * era, no infinity (a value it refuses would fail the whole INSERT). A
 * MariaDB TIMESTAMP column holds 1970-01-01 00:00:01 to 2038-01-19
 * 03:14:07.999999 only. v[0..n) has its zone stripped. */
static int my_date_ok(const wh_col *t, const char *v, size_t n, const char **why)
{
    if (n < 10 || v[4] != '-' || (n > 10 && v[10] != ' ' && v[10] != 'T') ||
        memcmp(v, "0000", 4) == 0 || memchr(v, 'B', n) || memchr(v, 'i', n)) {
        *why = "a date MariaDB cannot store (infinity, before year 1, BC or after 9999)";
        return 0;
    }
    if (strncmp(t->type, "timestamp", 9) == 0) {
        char lo[] = "1970-01-01 00:00:01", hi[] = "2038-01-19 03:14:07.999999";
        size_t k = n < sizeof(hi) - 1 ? n : sizeof(hi) - 1;
        if (memcmp(v, lo, n < sizeof(lo) - 1 ? n : sizeof(lo) - 1) < 0 || memcmp(v, hi, k) > 0) {
            *why = "outside the range of a MariaDB TIMESTAMP (1970-01-01 00:00:01 to 2038-01-19 "
                   "03:14:07 UTC)";
            return 0;
        }
    }
    return 1;
}

/* Append one value as a MySQL literal; 0 with *why when it cannot be one. */
static int my_literal(my_writer *w, const wh_col *t, const char *v, int64_t len, const char **why)
{
    orr_buf *s = &w->sql;
    if (!v) {
        orr_buf_append(s, "NULL", 4);
        return 1;
    }
    size_t n = (size_t)len;
    switch (t->kind) {
    case WH_K_BOOL: {
        int yes = n > 0 && strchr("tTyY1", v[0]) != NULL;
        if (n >= 2 && (strncasecmp(v, "on", 2) == 0))
            yes = 1;
        orr_buf_append_byte(s, yes ? '1' : '0');
        return 1;
    }
    case WH_K_NUMERIC: {
        size_t i0 = n > 1 && (v[0] == '-' || v[0] == '+') ? 1 : 0;
        char c0 = n > i0 ? v[i0] : '0';
        if (c0 == 'N' || c0 == 'n' || c0 == 'I' || c0 == 'i') {
            *why = "NaN or Infinity, which MariaDB cannot store";
            return 0;
        }
        orr_buf_append(s, v, n);
        return 1;
    }
    case WH_K_INT:
        orr_buf_append(s, v, n); /* checked digits, or digits from a typed source */
        return 1;
    case WH_K_FLOAT:
        if ((n >= 3 && strncasecmp(v, "NaN", 3) == 0) || memchr(v, 'I', n) || memchr(v, 'i', n)) {
            *why = "NaN or Infinity, which MariaDB cannot store";
            return 0;
        }
        if (strncmp(t->type, "float", 5) == 0) {
            /* The shortest text of a float may lie just past FLT_MAX as a
             * double ("3.4028235e+38"), which MariaDB refuses: write the
             * float's exact value instead. */
            char tmp[64], out[40];
            if (n >= sizeof(tmp)) {
                *why = "not a floating-point number";
                return 0;
            }
            memcpy(tmp, v, n);
            tmp[n] = 0;
            char *end;
            float f = strtof(tmp, &end);
            if (*end || f > FLT_MAX || f < -FLT_MAX) {
                *why = "outside the range of a MariaDB FLOAT";
                return 0;
            }
            int k = snprintf(out, sizeof(out), "%.17g", (double)f);
            orr_buf_append(s, out, (size_t)k);
            return 1;
        }
        orr_buf_append(s, v, n);
        return 1;
    case WH_K_TIMESTAMP:
    case WH_K_TIMESTAMPTZ: {
        size_t k;
        if (!my_ts_strip_zone(v, n, &k)) {
            *why = "timestamp with a zone other than UTC";
            return 0;
        }
        if (!my_date_ok(t, v, k, why))
            return 0;
        wh_mysql_quote_literal(w->m, s, v, k);
        return 1;
    }
    case WH_K_DATE:
        if (!my_date_ok(t, v, n, why))
            return 0;
        wh_mysql_quote_literal(w->m, s, v, n);
        return 1;
    case WH_K_TIME: {
        /* A PostgreSQL timetz: only a UTC zone can be dropped. */
        size_t k = n;
        while (k > 0 && ((v[k - 1] >= '0' && v[k - 1] <= '9') || v[k - 1] == ':'))
            k--;
        if (k > 0 && (v[k - 1] == '+' || v[k - 1] == '-') && k > 1 && v[k - 2] != ' ' &&
            memchr(v, ':', k)) {
            size_t z = k - 1;
            if (strspn(v + z + 1, "0:") != n - z - 1) {
                *why = "time with a zone other than UTC";
                return 0;
            }
            n = z;
        }
        wh_mysql_quote_literal(w->m, s, v, n);
        return 1;
    }
    case WH_K_BYTES:
        if (n >= 2 && v[0] == '\\' && v[1] == 'x') {
            orr_buf_append(s, "X'", 2);
            orr_buf_append(s, v + 2, n - 2);
            orr_buf_append_byte(s, '\'');
            return 1;
        }
        wh_mysql_quote_literal(w->m, s, v, n);
        return 1;
    case WH_K_OTHER:
        if (strncmp(t->type, "bit(", 4) == 0) {
            /* BIT(n) takes b'...' of at most n significant bits. */
            if (!wh_bits_valid(v, n) || wh_bits_significant(v, n) > (size_t)t->size) {
                *why = "not a bit string that fits the column";
                return 0;
            }
            orr_buf_append(s, "b'", 2);
            orr_buf_append(s, n ? v : "0", n ? n : 1);
            orr_buf_append_byte(s, '\'');
            return 1;
        }
        wh_mysql_quote_literal(w->m, s, v, n);
        return 1;
    default:
        wh_mysql_quote_literal(w->m, s, v, n);
        return 1;
    }
}

static orr_status my_writer_write(void *state, const wh_batch *b, wh_wstats *st, orr_err *err)
{
    my_writer *w = state;
    const wh_mysql_conf *c = w->c;
    for (size_t r = 0; r < b->nrows; r++) {
        size_t row_start = w->sql.len;
        if (w->rows_in_sql)
            orr_buf_append_byte(&w->sql, ',');
        orr_buf_append_byte(&w->sql, '(');
        const char *why = NULL;
        char reason[300];
        size_t col = 0;
        for (; col < b->ncols && !why; col++) {
            int64_t len;
            const char *v = wh_batch_val(b, r, col, &len);
            const wh_col *t = &c->target.cols[col];
            if (c->check[col] && !wh_value_check(t, v, len, &why))
                break;
            if (col)
                orr_buf_append_byte(&w->sql, ',');
            my_literal(w, t, v, len, &why);
            if (why)
                break;
        }
        if (why) {
            w->sql.len = row_start;
            w->sql.data[row_start] = 0;
            snprintf(reason, sizeof(reason), "column %s (%s): %s", c->target.cols[col].name,
                     c->target.cols[col].type, why);
            if (wh_ctx_dirty(w->ctx, w->name, b, r, reason) != ORR_OK)
                return orr_err_set(err, ORR_ETOOBIG, "max_dirty_rows", "too many dirty rows");
            continue;
        }
        orr_buf_append_byte(&w->sql, ')');
        w->rows_in_sql++;
        st->rows++;
        st->bytes += w->sql.len - row_start;
        if (w->sql.len >= (size_t)c->insert_bytes) {
            orr_status rc = my_send(w, err);
            if (rc)
                return rc;
        }
    }
    return ORR_OK;
}

static orr_status my_writer_flush(void *state, uint64_t *confirmed, orr_err *err)
{
    my_writer *w = state;
    orr_status rc = my_send(w, err);
    *confirmed = w->confirmed;
    return rc;
}

MYSQL *wh_mysql_writer_conn(void *state)
{
    return state ? ((my_writer *)state)->m : NULL;
}

static orr_status my_writer_close(void *state, int commit, orr_err *err)
{
    my_writer *w = state;
    if (!w)
        return ORR_OK;
    orr_status rc = wh_mysql_exec(w->m, commit ? "COMMIT" : "ROLLBACK", w->c->o.path, err);
    mysql_close(w->m);
    orr_buf_free(&w->sql);
    free(w);
    return rc;
}

/* Resume bookkeeping: send the split's last INSERT, record the split in the
 * same transaction, commit, and start the next split's transaction. */
orr_status wh_mysql_writer_split_commit(void *state, const char *job, const char *run_key,
                                        size_t split, uint64_t rows, uint64_t *confirmed,
                                        orr_err *err)
{
    my_writer *w = state;
    *confirmed = 0;
    orr_status rc = my_send(w, err);
    if (rc)
        return rc;
    orr_buf q = ORR_BUF_INIT;
    wh_mysql_resume_record_sql(w->m, w->c, job, run_key, split, rows, &q);
    rc = wh_mysql_exec(w->m, q.data, w->c->o.path, err);
    orr_buf_free(&q);
    if (!rc)
        rc = wh_mysql_exec(w->m, "COMMIT", w->c->o.path, err);
    if (!rc)
        rc = wh_mysql_exec(w->m, "START TRANSACTION", w->c->o.path, err);
    if (!rc) {
        *confirmed = w->confirmed;
        w->confirmed = 0;
    }
    return rc;
}

const wh_writer_ops wh_mysql_writer = {
    .configure = my_writer_configure,
    .conf_free = wh_mysql_conf_free,
    .max_channels = my_writer_max_channels,
    .open = my_writer_open,
    .write = my_writer_write,
    .flush = my_writer_flush,
    .close = my_writer_close,
};
