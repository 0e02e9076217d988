/*
 * mysql_resume.c - MariaDB/MySQL resume bookkeeping (wh.h wh_resume_ops):
 * the commit records of a job's splits kept in the target database, in the
 * InnoDB tables
 *
 *   orr_wh_runs   (job, target, run_key, plan, started_at)   one row per job and target
 *   orr_wh_splits (job, target, run_key, split, rows, committed_at)
 *
 * A split's row is inserted by the writer channel in the transaction of the
 * split's INSERTs (mysql_writer.c, wh_mysql_writer_split_commit).
 *
 * Modes: append and upsert load the target split by split (an upsert of a
 * split twice is harmless anyway); staging loads `<table>__wh_stage`, kept
 * when a run fails, and the records are deleted just before the rename
 * (MariaDB's DDL commits by itself: a crash between the two leaves a staging
 * table without records, which a resumed run drops and loads afresh).
 * truncate and replace delete in the load's transaction and cannot resume:
 * such a run goes without bookkeeping and says so (use staging to resume).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mysql_common.h"
#include "orr_alloc.h"

static const char *const my_resume_ddl[] = {
    "CREATE TABLE IF NOT EXISTS orr_wh_runs (job varchar(191) NOT NULL, target varchar(191) NOT "
    "NULL, run_key char(64) NOT NULL, plan longtext NOT NULL, started_at timestamp(6) NOT NULL "
    "DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (job, target)) ENGINE=InnoDB DEFAULT "
    "CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    "CREATE TABLE IF NOT EXISTS orr_wh_splits (job varchar(191) NOT NULL, target varchar(191) NOT "
    "NULL, run_key char(64) NOT NULL, split int NOT NULL, `rows` bigint NOT NULL, committed_at "
    "timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (job, target, split)) "
    "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    NULL};

static int my_resume_supported(void *conf, const char **why)
{
    wh_mysql_conf *c = conf;
    if (c->o.mode == WH_MODE_TRUNCATE || c->o.mode == WH_MODE_REPLACE) {
        *why = "MariaDB truncate and replace delete in the load's transaction (mode staging "
               "resumes)";
        return 0;
    }
    return 1;
}

static void my_resume_lit(MYSQL *m, orr_buf *q, const char *s)
{
    wh_mysql_quote_literal(m, q, s, strlen(s));
}

static void my_resume_where(MYSQL *m, const wh_mysql_conf *c, const char *job, orr_buf *q)
{
    orr_buf_append_str(q, " WHERE job = ");
    my_resume_lit(m, q, job);
    orr_buf_append_str(q, " AND target = ");
    my_resume_lit(m, q, c->o.table);
}

static void my_resume_stage(const wh_mysql_conf *c, orr_buf *out)
{
    char stage[200];
    snprintf(stage, sizeof(stage), "%s__wh_stage", c->o.table);
    wh_mysql_quote_qualified(out, stage);
}

/* Connect, with the record tables there or created now. NULL with err set:
 * ORR_EPERM when they are missing and cannot be created (the run goes
 * without bookkeeping then: there can be no records to resume). */
static MYSQL *my_resume_connect(wh_mysql_conf *c, orr_err *err)
{
    MYSQL *m = wh_mysql_connect(c->o.dsn, c->o.path, err);
    if (!m)
        return NULL;
    for (const char *const *d = my_resume_ddl; *d; d++)
        if (wh_mysql_exec(m, *d, c->o.path, err) != ORR_OK) {
            /* without the right to create them, tables made by someone
             * else do */
            const char *q = "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                            "DATABASE() AND TABLE_NAME IN ('orr_wh_runs', 'orr_wh_splits')";
            MYSQL_RES *r = NULL;
            int have = mysql_real_query(m, q, strlen(q)) == 0 && (r = mysql_store_result(m)) &&
                       mysql_num_rows(r) == 1;
            if (have) {
                MYSQL_ROW row = mysql_fetch_row(r);
                have = row && row[0] && strcmp(row[0], "2") == 0;
            }
            if (r)
                mysql_free_result(r);
            if (have)
                break;
            err->code = ORR_EPERM;
            mysql_close(m);
            return NULL;
        }
    return m;
}

/* One statement's rows; NULL with err set on failure. */
static MYSQL_RES *my_resume_query(MYSQL *m, const wh_mysql_conf *c, const char *sql, orr_err *err)
{
    if (mysql_real_query(m, sql, strlen(sql)) != 0) {
        orr_err_set(err, ORR_EIO, c->o.path, "MariaDB (split records): %s", mysql_error(m));
        return NULL;
    }
    MYSQL_RES *r = mysql_store_result(m);
    if (!r)
        orr_err_set(err, ORR_EIO, c->o.path, "MariaDB (split records): %s", mysql_error(m));
    return r;
}

static orr_status my_resume_load(void *conf, const char *job, char **run_key, char **plan,
                                 wh_split_done **done, size_t *ndone, orr_err *err)
{
    wh_mysql_conf *c = conf;
    *run_key = *plan = NULL;
    *done = NULL;
    *ndone = 0;
    MYSQL *m = my_resume_connect(c, err);
    if (!m)
        return err->code ? err->code : ORR_EUNAVAIL;
    orr_status rc = ORR_OK;
    orr_buf q = ORR_BUF_INIT;
    char *key = NULL, *pl = NULL;
    MYSQL_RES *r = NULL;
    orr_buf_append_str(&q, "SELECT run_key, plan FROM orr_wh_runs");
    my_resume_where(m, c, job, &q);
    if (!(r = my_resume_query(m, c, q.data, err))) {
        rc = err->code;
        goto out;
    }
    MYSQL_ROW row = mysql_fetch_row(r);
    if (row && row[0] && row[1]) {
        key = orr_xstrdup(row[0]);
        pl = orr_xstrdup(row[1]);
    }
    mysql_free_result(r);
    r = NULL;
    if (!key)
        goto out;
    if (c->o.mode == WH_MODE_STAGING) {
        /* Records of a staging table that is gone are void. */
        char stage[200];
        snprintf(stage, sizeof(stage), "%s__wh_stage", c->o.table);
        const char *dot = strchr(stage, '.');
        orr_buf_reset(&q);
        orr_buf_append_str(&q,
                           "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ");
        if (dot) {
            wh_mysql_quote_literal(m, &q, stage, (size_t)(dot - stage));
            orr_buf_append_str(&q, " AND TABLE_NAME = ");
            my_resume_lit(m, &q, dot + 1);
        } else {
            orr_buf_append_str(&q, "DATABASE() AND TABLE_NAME = ");
            my_resume_lit(m, &q, stage);
        }
        if (!(r = my_resume_query(m, c, q.data, err))) {
            rc = err->code;
            goto out;
        }
        row = mysql_fetch_row(r);
        int have = row && row[0] && strcmp(row[0], "0") != 0;
        mysql_free_result(r);
        r = NULL;
        if (!have)
            goto out;
    }
    orr_buf_reset(&q);
    orr_buf_append_str(&q, "SELECT split, `rows` FROM orr_wh_splits");
    my_resume_where(m, c, job, &q);
    orr_buf_append_str(&q, " AND run_key = ");
    my_resume_lit(m, &q, key);
    if (!(r = my_resume_query(m, c, q.data, err))) {
        rc = err->code;
        goto out;
    }
    size_t n = (size_t)mysql_num_rows(r);
    *done = orr_xcalloc(n + 1, sizeof(**done));
    while ((row = mysql_fetch_row(r)) != NULL && *ndone < n) {
        (*done)[*ndone].split = (size_t)strtoull(row[0], NULL, 10);
        (*done)[*ndone].rows = strtoull(row[1], NULL, 10);
        (*ndone)++;
    }
    mysql_free_result(r);
    r = NULL;
    *run_key = key;
    *plan = pl;
    key = pl = NULL;
out:
    free(key);
    free(pl);
    orr_buf_free(&q);
    mysql_close(m);
    return rc;
}

/* DELETE statements of a job's records, each run alone. */
static orr_status my_resume_delete(MYSQL *m, wh_mysql_conf *c, const char *job, orr_err *err)
{
    orr_buf q = ORR_BUF_INIT;
    orr_buf_append_str(&q, "DELETE FROM orr_wh_splits");
    my_resume_where(m, c, job, &q);
    orr_status rc = wh_mysql_exec(m, q.data, c->o.path, err);
    orr_buf_reset(&q);
    orr_buf_append_str(&q, "DELETE FROM orr_wh_runs");
    my_resume_where(m, c, job, &q);
    if (!rc)
        rc = wh_mysql_exec(m, q.data, c->o.path, err);
    orr_buf_free(&q);
    return rc;
}

orr_status wh_mysql_resume_drop(MYSQL *m, wh_mysql_conf *c, orr_err *err)
{
    orr_status rc = wh_mysql_exec(m, "START TRANSACTION", c->o.path, err);
    if (!rc)
        rc = my_resume_delete(m, c, c->resume_job, err);
    if (!rc)
        rc = wh_mysql_exec(m, "COMMIT", c->o.path, err);
    return rc;
}

void wh_mysql_resume_record_sql(MYSQL *m, const wh_mysql_conf *c, const char *job,
                                const char *run_key, size_t split, uint64_t rows, orr_buf *q)
{
    orr_buf_append_str(q,
                       "INSERT INTO orr_wh_splits (job, target, run_key, split, `rows`) VALUES (");
    my_resume_lit(m, q, job);
    orr_buf_append_str(q, ", ");
    my_resume_lit(m, q, c->o.table);
    orr_buf_append_str(q, ", ");
    my_resume_lit(m, q, run_key);
    orr_buf_appendf(q, ", %zu, %llu)", split, (unsigned long long)rows);
}

static orr_status my_resume_begin(void *conf, const char *job, const char *run_key,
                                  const char *plan, int keep, orr_err *err)
{
    wh_mysql_conf *c = conf;
    c->resume_on = 1;
    c->resume_keep = keep;
    c->resume_job = job;
    if (keep)
        return ORR_OK;
    MYSQL *m = my_resume_connect(c, err);
    if (!m)
        return err->code ? err->code : ORR_EUNAVAIL;
    orr_buf q = ORR_BUF_INIT;
    orr_status rc = ORR_OK;
    if (c->o.mode == WH_MODE_STAGING) {
        /* the stage first: records never outlive the rows they speak of */
        orr_buf_append_str(&q, "DROP TABLE IF EXISTS ");
        my_resume_stage(c, &q);
        rc = wh_mysql_exec(m, q.data, c->o.path, err);
        orr_buf_reset(&q);
    }
    if (!rc)
        rc = wh_mysql_exec(m, "START TRANSACTION", c->o.path, err);
    if (!rc)
        rc = my_resume_delete(m, c, job, err);
    orr_buf_append_str(&q, "INSERT INTO orr_wh_runs (job, target, run_key, plan) VALUES (");
    my_resume_lit(m, &q, job);
    orr_buf_append_str(&q, ", ");
    my_resume_lit(m, &q, c->o.table);
    orr_buf_append_str(&q, ", ");
    my_resume_lit(m, &q, run_key);
    orr_buf_append_str(&q, ", ");
    my_resume_lit(m, &q, plan);
    orr_buf_append_str(&q, ")");
    if (!rc)
        rc = wh_mysql_exec(m, q.data, c->o.path, err);
    if (!rc)
        rc = wh_mysql_exec(m, "COMMIT", c->o.path, err);
    orr_buf_free(&q);
    mysql_close(m);
    return rc;
}

static orr_status my_resume_clear(void *conf, const char *job, orr_err *err)
{
    wh_mysql_conf *c = conf;
    MYSQL *m = my_resume_connect(c, err);
    if (!m)
        return err->code ? err->code : ORR_EUNAVAIL;
    c->resume_job = job;
    orr_status rc = wh_mysql_resume_drop(m, c, err);
    mysql_close(m);
    return rc;
}

const wh_resume_ops wh_mysql_resume = {
    .supported = my_resume_supported,
    .load = my_resume_load,
    .begin = my_resume_begin,
    .split_commit = wh_mysql_writer_split_commit,
    .clear = my_resume_clear,
};
