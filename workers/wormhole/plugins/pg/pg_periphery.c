/*
 * pg_periphery.c - PostgreSQL prepare/finish for both sides.
 *
 * Reader: prepare opens one connection in a REPEATABLE READ transaction and
 * exports its snapshot, so every reader channel sees the same data; it also
 * reads max(column) for an incremental run in that snapshot (the watermark
 * saved on success). finish ends that transaction.
 *
 * Writer: prepare resolves the target columns (all, or "columns", matched to
 * the source by position), decides which columns need a value check (types
 * differ from the source's), and creates the staging table when the mode
 * loads through one (upsert, staging, and truncate/replace with several
 * channels). finish, on success, applies the staging table in one
 * transaction: truncate+insert, delete slice+insert, insert .. on conflict,
 * or a rename swap; on failure it drops the staging table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_json.h"
#include "pg_common.h"

static orr_status pg_reader_prepare(void *conf, wh_ctx *ctx, const wh_schema *src, orr_err *err)
{
    (void)src;
    wh_pg_conf *c = conf;
    orr_status rc;
    c->snap_conn = wh_pg_connect(c->o.dsn, c->o.path, err);
    if (!c->snap_conn)
        return ORR_EUNAVAIL;
    if ((rc = wh_pg_exec(c->snap_conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", c->o.path,
                         err)))
        return rc;
    PGresult *r = PQexec(c->snap_conn, "SELECT pg_export_snapshot()");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = orr_err_set(err, ORR_EIO, c->o.path, "PostgreSQL: %s", PQerrorMessage(c->snap_conn));
        PQclear(r);
        return rc;
    }
    snprintf(c->snapshot, sizeof(c->snapshot), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    if (!ctx->incr.on)
        return ORR_OK;
    orr_buf q = ORR_BUF_INIT;
    orr_buf_append_str(&q, "SELECT max(m)::text FROM (");
    size_t nt = c->o.tables ? c->o.ntables : 1;
    for (size_t i = 0; i < nt; i++) {
        if (i)
            orr_buf_append_str(&q, " UNION ALL ");
        orr_buf_append_str(&q, "SELECT max(");
        wh_pg_quote_ident(&q, ctx->incr.column);
        orr_buf_append_str(&q, ") AS m FROM ");
        wh_pg_quote_qualified(&q, c->o.tables ? c->o.tables[i] : c->o.table);
        if (c->o.filter)
            orr_buf_appendf(&q, " WHERE (%s)", c->o.filter);
    }
    orr_buf_append_str(&q, ") s");
    r = PQexec(c->snap_conn, q.data);
    orr_buf_free(&q);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        char p[96];
        rc = orr_err_set(err, ORR_EIO, orr_json_path(p, sizeof(p), c->o.path, "incremental.column"),
                         "PostgreSQL: %s", PQerrorMessage(c->snap_conn));
        PQclear(r);
        return rc;
    }
    if (!PQgetisnull(r, 0, 0)) {
        ctx->incr.has_high = 1;
        snprintf(ctx->incr.high, sizeof(ctx->incr.high), "%s", PQgetvalue(r, 0, 0));
    }
    PQclear(r);
    return ORR_OK;
}

static orr_status pg_reader_finish(void *conf, wh_ctx *ctx, int success, orr_err *err)
{
    (void)ctx;
    (void)success;
    (void)err;
    wh_pg_conf *c = conf;
    if (c->snap_conn) {
        PQclear(PQexec(c->snap_conn, "COMMIT"));
        PQfinish(c->snap_conn);
        c->snap_conn = NULL;
    }
    return ORR_OK;
}

const wh_periphery_ops wh_pg_reader_periphery = {
    .prepare = pg_reader_prepare,
    .finish = pg_reader_finish,
};

static int pg_is_bits_type(const char *type)
{
    return strcmp(type, "bit") == 0 || strncmp(type, "bit(", 4) == 0 ||
           strncmp(type, "bit varying", 11) == 0;
}

/* Bit strings: a bit(n)/bit varying(n) target is checked (PostgreSQL would
 * fail the whole COPY on a wrong length), and a bit string source (MariaDB
 * BIT(n), PostgreSQL bit) loads into bytea as its bytes and into an integer
 * as its value. Text-like columns without a value check are scanned for
 * what PostgreSQL refuses in any text (NUL), jsonb ones also for \u0000. */
static void pg_bits_plan(wh_pg_conf *c, const wh_schema *src)
{
    free(c->conv);
    c->conv = orr_xcalloc(src->ncols ? src->ncols : 1, 1);
    for (size_t i = 0; i < src->ncols; i++) {
        const wh_col *s = &src->cols[i], *t = &c->target.cols[i];
        int src_bits = s->kind == WH_K_OTHER && pg_is_bits_type(s->type);
        if (strncmp(t->type, "bit varying", 11) == 0)
            c->conv[i] = WH_PG_CONV_VARBIT;
        else if (pg_is_bits_type(t->type))
            c->conv[i] = WH_PG_CONV_BIT;
        else if (src_bits && t->kind == WH_K_BYTES)
            c->conv[i] = WH_PG_CONV_BITS_BYTES;
        else if (src_bits && t->kind == WH_K_INT)
            c->conv[i] = WH_PG_CONV_BITS_INT;
        if (c->conv[i] == WH_PG_CONV_BITS_BYTES || c->conv[i] == WH_PG_CONV_BITS_INT)
            c->check[i] = 0; /* the conversion checks the value itself */
        /* Text PostgreSQL cannot hold (a NUL byte; \u0000 in jsonb) may come
         * from a source whose type has the same name (MariaDB text). */
        if (c->conv[i] == WH_PG_CONV_NONE && strcmp(t->type, "jsonb") == 0)
            c->conv[i] = WH_PG_CONV_JSONB;
        else if (c->conv[i] == WH_PG_CONV_NONE && !c->check[i] &&
                 (t->kind == WH_K_TEXT || t->kind == WH_K_JSON || t->kind == WH_K_OTHER ||
                  t->kind == WH_K_ARRAY))
            c->conv[i] = WH_PG_CONV_NUL;
    }
}

static orr_status pg_writer_prepare(void *conf, wh_ctx *ctx, const wh_schema *src, orr_err *err)
{
    (void)ctx;
    wh_pg_conf *c = conf;
    orr_status rc;
    char p[96];
    c->per_conn = wh_pg_connect(c->o.dsn, c->o.path, err);
    if (!c->per_conn)
        return ORR_EUNAVAIL;
    wh_schema_free(&c->target);
    if ((rc = wh_pg_describe(c->per_conn, c->o.table, c->o.columns, c->o.ncolumns, &c->target,
                             c->o.path, err)))
        return rc;
    if (c->target.ncols != src->ncols)
        return orr_err_set(
            err, ORR_EINVAL,
            orr_json_path(p, sizeof(p), c->o.path, c->o.columns ? "columns" : "table"),
            "the source has %zu columns and the target %zu (columns are matched "
            "by position)",
            src->ncols, c->target.ncols);
    free(c->check);
    c->check = orr_xcalloc(src->ncols, 1);
    for (size_t i = 0; i < src->ncols; i++) {
        const wh_col *s = &src->cols[i], *t = &c->target.cols[i];
        c->check[i] = strcmp(s->type, t->type) != 0 || (t->not_null && !s->not_null);
    }
    pg_bits_plan(c, src);
    for (size_t k = 0; k < c->o.nkey; k++) {
        int found = 0;
        for (size_t i = 0; i < c->target.ncols; i++)
            found |= strcmp(c->o.key[k], c->target.cols[i].name) == 0;
        if (!found)
            return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), c->o.path, "key"),
                               "key column %s is not among the loaded columns", c->o.key[k]);
    }
    orr_buf_reset(&c->qtable);
    wh_pg_quote_qualified(&c->qtable, c->o.table);
    orr_buf_reset(&c->collist);
    orr_buf_append_byte(&c->collist, '(');
    for (size_t i = 0; i < c->target.ncols; i++) {
        if (i)
            orr_buf_append_str(&c->collist, ", ");
        wh_pg_quote_ident(&c->collist, c->target.cols[i].name);
    }
    orr_buf_append_byte(&c->collist, ')');
    c->use_stage =
        c->o.mode == WH_MODE_UPSERT || c->o.mode == WH_MODE_STAGING ||
        ((c->o.mode == WH_MODE_TRUNCATE || c->o.mode == WH_MODE_REPLACE) && c->channels > 1) ||
        (c->resume_on && c->o.mode != WH_MODE_APPEND);
    if (!c->use_stage)
        return ORR_OK;
    char stage[200];
    snprintf(stage, sizeof(stage), "%s__wh_stage", c->o.table);
    orr_buf_reset(&c->qstage);
    wh_pg_quote_qualified(&c->qstage, stage);
    orr_buf q = ORR_BUF_INIT;
    /* A stage left by a killed run is dropped first, unless the run resumes
     * it (pg_resume.c: then it is logged, and kept). */
    if (!c->resume_keep)
        orr_buf_appendf(&q, "DROP TABLE IF EXISTS %s; ", c->qstage.data);
    orr_buf_appendf(&q, "CREATE %sTABLE %s%s (LIKE %s INCLUDING %s)",
                    c->o.mode == WH_MODE_STAGING || c->resume_on ? "" : "UNLOGGED ",
                    c->resume_keep ? "IF NOT EXISTS " : "", c->qstage.data, c->qtable.data,
                    c->o.mode == WH_MODE_STAGING ? "ALL" : "DEFAULTS");
    rc = wh_pg_exec(c->per_conn, q.data, c->o.path, err);
    orr_buf_free(&q);
    return rc;
}

/* The statement that applies the staging table to the target. */
static void pg_apply_sql(wh_pg_conf *c, orr_buf *q)
{
    const char *t = c->qtable.data, *s = c->qstage.data, *cols = c->collist.data;
    orr_buf_append_str(q, "BEGIN; ");
    switch (c->o.mode) {
    case WH_MODE_TRUNCATE:
        orr_buf_appendf(q, "TRUNCATE %s; INSERT INTO %s %s SELECT %.*s FROM %s; ", t, t, cols,
                        (int)(strlen(cols) - 2), cols + 1, s);
        break;
    case WH_MODE_REPLACE:
        orr_buf_appendf(q, "DELETE FROM %s WHERE (%s); INSERT INTO %s %s SELECT %.*s FROM %s; ", t,
                        c->o.filter, t, cols, (int)(strlen(cols) - 2), cols + 1, s);
        break;
    case WH_MODE_UPSERT: {
        orr_buf keys = ORR_BUF_INIT, set = ORR_BUF_INIT;
        for (size_t k = 0; k < c->o.nkey; k++) {
            if (k)
                orr_buf_append_str(&keys, ", ");
            wh_pg_quote_ident(&keys, c->o.key[k]);
        }
        for (size_t i = 0; i < c->target.ncols; i++) {
            int is_key = 0;
            for (size_t k = 0; k < c->o.nkey; k++)
                is_key |= strcmp(c->o.key[k], c->target.cols[i].name) == 0;
            if (is_key)
                continue;
            if (set.len)
                orr_buf_append_str(&set, ", ");
            wh_pg_quote_ident(&set, c->target.cols[i].name);
            orr_buf_append_str(&set, " = EXCLUDED.");
            wh_pg_quote_ident(&set, c->target.cols[i].name);
        }
        /* DISTINCT ON: a key twice in one load would make ON CONFLICT fail. */
        orr_buf_appendf(q,
                        "INSERT INTO %s %s SELECT DISTINCT ON (%s) %.*s FROM %s "
                        "ON CONFLICT (%s) DO %s%s; ",
                        t, cols, keys.data, (int)(strlen(cols) - 2), cols + 1, s, keys.data,
                        set.len ? "UPDATE SET " : "NOTHING", set.len ? set.data : "");
        orr_buf_free(&keys);
        orr_buf_free(&set);
        break;
    }
    case WH_MODE_STAGING: {
        char old[200];
        snprintf(old, sizeof(old), "%s__wh_old", c->o.table);
        const char *dot = strrchr(c->o.table, '.');
        const char *base = dot ? dot + 1 : c->o.table;
        orr_buf qold = ORR_BUF_INIT, bt = ORR_BUF_INIT, bo = ORR_BUF_INIT;
        wh_pg_quote_qualified(&qold, old);
        wh_pg_quote_ident(&bt, base);
        const char *odot = strrchr(old, '.');
        wh_pg_quote_ident(&bo, odot ? odot + 1 : old);
        orr_buf_appendf(q,
                        "DROP TABLE IF EXISTS %s; ALTER TABLE %s RENAME TO %s; "
                        "ALTER TABLE %s RENAME TO %s; DROP TABLE %s; COMMIT",
                        qold.data, t, bo.data, s, bt.data, qold.data);
        orr_buf_free(&qold);
        orr_buf_free(&bt);
        orr_buf_free(&bo);
        return;
    }
    default:
        break;
    }
    orr_buf_appendf(q, "DROP TABLE %s; COMMIT", s);
}

static orr_status pg_writer_finish(void *conf, wh_ctx *ctx, int success, orr_err *err)
{
    (void)ctx;
    wh_pg_conf *c = conf;
    orr_status rc = ORR_OK;
    if (c->per_conn && c->use_stage) {
        orr_buf q = ORR_BUF_INIT;
        if (success) {
            pg_apply_sql(c, &q);
            /* The split records go with the swap or merge. */
            if (c->resume_on && q.len > 6 && strcmp(q.data + q.len - 6, "COMMIT") == 0) {
                q.len -= 6;
                q.data[q.len] = 0;
                wh_pg_resume_clear_sql(c, c->resume_job, &q);
                orr_buf_append_str(&q, "COMMIT");
            }
        } else if (c->resume_on) {
            /* kept for a resumed run (dropped by one from scratch) */
        } else {
            orr_buf_appendf(&q, "DROP TABLE IF EXISTS %s", c->qstage.data);
        }
        rc = q.len ? wh_pg_exec(c->per_conn, q.data, c->o.path, err) : ORR_OK;
        if (rc != ORR_OK) {
            PQclear(PQexec(c->per_conn, "ROLLBACK"));
            if (success) {
                orr_buf_reset(&q);
                orr_buf_appendf(&q, "DROP TABLE IF EXISTS %s", c->qstage.data);
                PQclear(PQexec(c->per_conn, q.data));
            }
        }
        orr_buf_free(&q);
    }
    if (c->per_conn) {
        PQfinish(c->per_conn);
        c->per_conn = NULL;
    }
    return rc;
}

const wh_periphery_ops wh_pg_writer_periphery = {
    .prepare = pg_writer_prepare,
    .finish = pg_writer_finish,
};
