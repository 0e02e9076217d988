/*
 * mysql_periphery.c - MariaDB/MySQL prepare/finish.
 *
 * Reader: max(column) for an incremental run (the watermark saved on
 * success). Writer: resolve the target columns (matched by position), mark
 * the columns whose values need a check, build the upsert clause, and for
 * mode staging create `<table>__wh_stage` LIKE the target; finish swaps it in
 * with one atomic RENAME TABLE on success, or drops it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mysql_common.h"
#include "orr_alloc.h"
#include "orr_json.h"

static orr_status my_reader_prepare(void *conf, wh_ctx *ctx, const wh_schema *src, orr_err *err)
{
    (void)src;
    wh_mysql_conf *c = conf;
    if (!ctx->incr.on)
        return ORR_OK;
    MYSQL *m = wh_mysql_connect(c->o.dsn, c->o.path, err);
    if (!m)
        return err->code;
    orr_buf q = ORR_BUF_INIT;
    orr_buf_append_str(&q, "SELECT CAST(MAX(m) AS CHAR) FROM (");
    size_t nt = c->o.tables ? c->o.ntables : 1;
    for (size_t i = 0; i < nt; i++) {
        if (i)
            orr_buf_append_str(&q, " UNION ALL ");
        orr_buf_append_str(&q, "SELECT MAX(");
        wh_mysql_quote_ident(&q, ctx->incr.column);
        orr_buf_append_str(&q, ") AS m FROM ");
        wh_mysql_quote_qualified(&q, c->o.tables ? c->o.tables[i] : c->o.table);
        if (c->o.filter)
            orr_buf_appendf(&q, " WHERE (%s)", c->o.filter);
    }
    orr_buf_append_str(&q, ") s");
    orr_status rc = ORR_OK;
    MYSQL_RES *res = NULL;
    if (mysql_real_query(m, q.data, q.len) != 0 || !(res = mysql_store_result(m))) {
        char p[96];
        rc = orr_err_set(err, ORR_EIO, orr_json_path(p, sizeof(p), c->o.path, "incremental.column"),
                         "MariaDB: %s", mysql_error(m));
    } else {
        MYSQL_ROW r = mysql_fetch_row(res);
        if (r && r[0]) {
            ctx->incr.has_high = 1;
            snprintf(ctx->incr.high, sizeof(ctx->incr.high), "%s", r[0]);
        }
        mysql_free_result(res);
    }
    orr_buf_free(&q);
    mysql_close(m);
    return rc;
}

static orr_status my_reader_finish(void *conf, wh_ctx *ctx, int success, orr_err *err)
{
    (void)conf;
    (void)ctx;
    (void)success;
    (void)err;
    return ORR_OK;
}

const wh_periphery_ops wh_mysql_reader_periphery = {
    .prepare = my_reader_prepare,
    .finish = my_reader_finish,
};

static orr_status my_writer_prepare(void *conf, wh_ctx *ctx, const wh_schema *src, orr_err *err)
{
    (void)ctx;
    wh_mysql_conf *c = conf;
    char p[96];
    MYSQL *m = wh_mysql_connect(c->o.dsn, c->o.path, err);
    if (!m)
        return err->code;
    wh_schema_free(&c->target);
    orr_status rc =
        wh_mysql_describe(m, c->o.table, c->o.columns, c->o.ncolumns, &c->target, c->o.path, err);
    if (rc)
        goto out;
    if (c->target.ncols != src->ncols) {
        rc = orr_err_set(err, ORR_EINVAL,
                         orr_json_path(p, sizeof(p), c->o.path, c->o.columns ? "columns" : "table"),
                         "the source has %zu columns and the target %zu (columns are matched by "
                         "position)",
                         src->ncols, c->target.ncols);
        goto out;
    }
    free(c->check);
    c->check = orr_xcalloc(src->ncols, 1);
    for (size_t i = 0; i < src->ncols; i++)
        c->check[i] = strcmp(src->cols[i].type, c->target.cols[i].type) != 0 ||
                      (c->target.cols[i].not_null && !src->cols[i].not_null);
    orr_buf_reset(&c->qtable);
    wh_mysql_quote_qualified(&c->qtable, c->o.table);
    orr_buf_reset(&c->collist);
    orr_buf_reset(&c->update);
    orr_buf_append_byte(&c->collist, '(');
    for (size_t i = 0; i < c->target.ncols; i++) {
        const char *name = c->target.cols[i].name;
        if (i)
            orr_buf_append_str(&c->collist, ", ");
        wh_mysql_quote_ident(&c->collist, name);
        int is_key = 0;
        for (size_t k = 0; k < c->o.nkey; k++)
            is_key |= strcmp(c->o.key[k], name) == 0;
        if (is_key)
            continue;
        orr_buf_append_str(&c->update, c->update.len ? ", " : " ON DUPLICATE KEY UPDATE ");
        wh_mysql_quote_ident(&c->update, name);
        orr_buf_append_str(&c->update, " = VALUES(");
        wh_mysql_quote_ident(&c->update, name);
        orr_buf_append_byte(&c->update, ')');
    }
    orr_buf_append_byte(&c->collist, ')');
    if (c->o.mode == WH_MODE_STAGING) {
        char stage[200];
        snprintf(stage, sizeof(stage), "%s__wh_stage", c->o.table);
        orr_buf_reset(&c->qstage);
        wh_mysql_quote_qualified(&c->qstage, stage);
        orr_buf q = ORR_BUF_INIT;
        /* kept when the run resumes it (mysql_resume.c) */
        if (!c->resume_keep) {
            orr_buf_appendf(&q, "DROP TABLE IF EXISTS %s", c->qstage.data);
            rc = wh_mysql_exec(m, q.data, c->o.path, err);
            orr_buf_reset(&q);
        }
        orr_buf_appendf(&q, "CREATE TABLE %s%s LIKE %s", c->resume_keep ? "IF NOT EXISTS " : "",
                        c->qstage.data, c->qtable.data);
        if (!rc)
            rc = wh_mysql_exec(m, q.data, c->o.path, err);
        orr_buf_free(&q);
    }
out:
    mysql_close(m);
    return rc;
}

static orr_status my_writer_finish(void *conf, wh_ctx *ctx, int success, orr_err *err)
{
    (void)ctx;
    wh_mysql_conf *c = conf;
    if (c->o.mode != WH_MODE_STAGING || !c->qstage.len)
        return ORR_OK;
    MYSQL *m = wh_mysql_connect(c->o.dsn, c->o.path, err);
    if (!m)
        return err->code;
    orr_buf q = ORR_BUF_INIT, old = ORR_BUF_INIT;
    orr_status rc = ORR_OK;
    if (success && c->resume_on)
        rc = wh_mysql_resume_drop(m, c, err);
    if (rc) {
        /* the records stay, and so does the staging table they speak of */
    } else if (success) {
        char o[200];
        snprintf(o, sizeof(o), "%s__wh_old", c->o.table);
        wh_mysql_quote_qualified(&old, o);
        orr_buf_appendf(&q, "DROP TABLE IF EXISTS %s", old.data);
        rc = wh_mysql_exec(m, q.data, c->o.path, err);
        orr_buf_reset(&q);
        orr_buf_appendf(&q, "RENAME TABLE %s TO %s, %s TO %s", c->qtable.data, old.data,
                        c->qstage.data, c->qtable.data);
        if (!rc)
            rc = wh_mysql_exec(m, q.data, c->o.path, err);
        orr_buf_reset(&q);
        orr_buf_appendf(&q, "DROP TABLE IF EXISTS %s", rc ? c->qstage.data : old.data);
        orr_err e2;
        wh_mysql_exec(m, q.data, c->o.path, &e2);
    } else if (!c->resume_on) {
        orr_buf_appendf(&q, "DROP TABLE IF EXISTS %s", c->qstage.data);
        rc = wh_mysql_exec(m, q.data, c->o.path, err);
    }
    orr_buf_free(&q);
    orr_buf_free(&old);
    mysql_close(m);
    return rc;
}

const wh_periphery_ops wh_mysql_writer_periphery = {
    .prepare = my_writer_prepare,
    .finish = my_writer_finish,
};
