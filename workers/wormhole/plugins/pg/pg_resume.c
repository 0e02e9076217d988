/*
 * pg_resume.c - PostgreSQL resume bookkeeping (wh.h wh_resume_ops): the
 * commit records of a job's splits kept in the target database.
 *
 *   orr_wh_runs   (job, target, run_key, plan, started_at)   one row per job and target
 *   orr_wh_splits (job, target, run_key, split, rows, committed_at)
 *
 * A split's row is inserted by the writer channel in the transaction that
 * loaded the split (pg_writer.c, wh_pg_writer_split_commit). Every mode
 * resumes: append loads the target directly, split by split; truncate,
 * replace, upsert and staging load a staging table that survives a failed
 * run (a logged table then: an unlogged one would be emptied by a server
 * crash while its records stay), and the swap or merge at the end deletes
 * the records in its own transaction. A run that starts afresh drops the
 * records and the staging table in one transaction, so a record never
 * speaks of rows that are gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "pg_common.h"

#define PG_RESUME_DDL                                                                              \
    "CREATE TABLE IF NOT EXISTS orr_wh_runs (job text NOT NULL, target text NOT NULL, "            \
    "run_key text NOT NULL, plan text NOT NULL, started_at timestamptz NOT NULL DEFAULT now(), "   \
    "PRIMARY KEY (job, target)); "                                                                 \
    "CREATE TABLE IF NOT EXISTS orr_wh_splits (job text NOT NULL, target text NOT NULL, "          \
    "run_key text NOT NULL, split integer NOT NULL, rows bigint NOT NULL, "                        \
    "committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (job, target, split))"

/* The record tables exist, or are created now: serialized by an advisory
 * lock, since concurrent CREATE TABLE IF NOT EXISTS of one name can fail.
 * ORR_EPERM when they are missing and cannot be created (the run goes
 * without bookkeeping then: there can be no records to resume). */
static orr_status pg_resume_tables(PGconn *conn, const wh_pg_conf *c, orr_err *err)
{
    PGresult *r = PQexec(conn, "SELECT to_regclass('orr_wh_runs') IS NOT NULL AND "
                               "to_regclass('orr_wh_splits') IS NOT NULL");
    int have = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
               strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (have)
        return ORR_OK;
    if (wh_pg_exec(conn,
                   "BEGIN; SELECT pg_advisory_xact_lock(7306357351468396833); " PG_RESUME_DDL
                   "; COMMIT",
                   c->o.path, err) != ORR_OK) {
        PQclear(PQexec(conn, "ROLLBACK"));
        err->code = ORR_EPERM;
        return ORR_EPERM;
    }
    return ORR_OK;
}

static int pg_resume_supported(void *conf, const char **why)
{
    (void)conf;
    (void)why;
    return 1;
}

/* The quoted staging table of the target (as pg_periphery.c names it). */
static void pg_resume_stage(const wh_pg_conf *c, orr_buf *out)
{
    char stage[200];
    snprintf(stage, sizeof(stage), "%s__wh_stage", c->o.table);
    wh_pg_quote_qualified(out, stage);
}

/* WHERE job = .. AND target = .. */
static void pg_resume_where(const wh_pg_conf *c, const char *job, orr_buf *q)
{
    orr_buf_append_str(q, " WHERE job = ");
    wh_pg_quote_literal(q, job);
    orr_buf_append_str(q, " AND target = ");
    wh_pg_quote_literal(q, c->o.table);
}

void wh_pg_resume_clear_sql(const wh_pg_conf *c, const char *job, orr_buf *q)
{
    orr_buf_append_str(q, "DELETE FROM orr_wh_splits");
    pg_resume_where(c, job, q);
    orr_buf_append_str(q, "; DELETE FROM orr_wh_runs");
    pg_resume_where(c, job, q);
    orr_buf_append_str(q, "; ");
}

void wh_pg_resume_record_sql(const wh_pg_conf *c, const char *job, const char *run_key,
                             size_t split, uint64_t rows, orr_buf *q)
{
    orr_buf_append_str(q, "INSERT INTO orr_wh_splits (job, target, run_key, split, rows) VALUES (");
    wh_pg_quote_literal(q, job);
    orr_buf_append_str(q, ", ");
    wh_pg_quote_literal(q, c->o.table);
    orr_buf_append_str(q, ", ");
    wh_pg_quote_literal(q, run_key);
    orr_buf_appendf(q, ", %zu, %llu); ", split, (unsigned long long)rows);
}

static orr_status pg_resume_load(void *conf, const char *job, char **run_key, char **plan,
                                 wh_split_done **done, size_t *ndone, orr_err *err)
{
    wh_pg_conf *c = conf;
    *run_key = *plan = NULL;
    *done = NULL;
    *ndone = 0;
    PGconn *conn = wh_pg_connect(c->o.dsn, c->o.path, err);
    if (!conn)
        return ORR_EUNAVAIL;
    orr_buf q = ORR_BUF_INIT;
    PGresult *r = NULL;
    orr_status rc = pg_resume_tables(conn, c, err);
    if (rc)
        goto out;
    orr_buf_append_str(&q, "SELECT run_key, plan FROM orr_wh_runs");
    pg_resume_where(c, job, &q);
    r = PQexec(conn, q.data);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        /* tables of another user, not readable: no records of ours there */
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        rc = orr_err_set(err, state && strcmp(state, "42501") == 0 ? ORR_EPERM : ORR_EIO, c->o.path,
                         "PostgreSQL (split records): %s", PQerrorMessage(conn));
        goto out;
    }
    if (PQntuples(r) != 1)
        goto out;
    char *key = orr_xstrdup(PQgetvalue(r, 0, 0));
    char *pl = orr_xstrdup(PQgetvalue(r, 0, 1));
    PQclear(r);
    r = NULL;
    if (c->o.mode != WH_MODE_APPEND) {
        /* The records speak of rows in the staging table: without it they
         * are void. */
        orr_buf st = ORR_BUF_INIT;
        pg_resume_stage(c, &st);
        const char *params[1] = {st.data};
        r = PQexecParams(conn, "SELECT to_regclass($1) IS NOT NULL", 1, NULL, params, NULL, NULL,
                         0);
        orr_buf_free(&st);
        int have = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                   strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        PQclear(r);
        r = NULL;
        if (!have) {
            free(key);
            free(pl);
            goto out;
        }
    }
    orr_buf_reset(&q);
    orr_buf_append_str(&q, "SELECT split, rows FROM orr_wh_splits");
    pg_resume_where(c, job, &q);
    orr_buf_append_str(&q, " AND run_key = ");
    wh_pg_quote_literal(&q, key);
    r = PQexec(conn, q.data);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = orr_err_set(err, ORR_EIO, c->o.path, "PostgreSQL (split records): %s",
                         PQerrorMessage(conn));
        free(key);
        free(pl);
        goto out;
    }
    int n = PQntuples(r);
    *done = orr_xcalloc((size_t)n + 1, sizeof(**done));
    for (int i = 0; i < n; i++) {
        (*done)[i].split = (size_t)strtoull(PQgetvalue(r, i, 0), NULL, 10);
        (*done)[i].rows = strtoull(PQgetvalue(r, i, 1), NULL, 10);
    }
    *ndone = (size_t)n;
    *run_key = key;
    *plan = pl;
out:
    PQclear(r);
    orr_buf_free(&q);
    PQfinish(conn);
    return rc;
}

static orr_status pg_resume_begin(void *conf, const char *job, const char *run_key,
                                  const char *plan, int keep, orr_err *err)
{
    wh_pg_conf *c = conf;
    c->resume_on = 1;
    c->resume_keep = keep;
    c->resume_job = job;
    if (keep)
        return ORR_OK;
    PGconn *conn = wh_pg_connect(c->o.dsn, c->o.path, err);
    if (!conn)
        return ORR_EUNAVAIL;
    orr_buf q = ORR_BUF_INIT;
    orr_buf_append_str(&q, "BEGIN; ");
    if (c->o.mode != WH_MODE_APPEND) {
        orr_buf_append_str(&q, "DROP TABLE IF EXISTS ");
        pg_resume_stage(c, &q);
        orr_buf_append_str(&q, "; ");
    }
    wh_pg_resume_clear_sql(c, job, &q);
    orr_buf_append_str(&q, "INSERT INTO orr_wh_runs (job, target, run_key, plan) VALUES (");
    wh_pg_quote_literal(&q, job);
    orr_buf_append_str(&q, ", ");
    wh_pg_quote_literal(&q, c->o.table);
    orr_buf_append_str(&q, ", ");
    wh_pg_quote_literal(&q, run_key);
    orr_buf_append_str(&q, ", ");
    wh_pg_quote_literal(&q, plan);
    orr_buf_append_str(&q, "); COMMIT");
    orr_status rc = wh_pg_exec(conn, q.data, c->o.path, err);
    orr_buf_free(&q);
    PQfinish(conn);
    return rc;
}

static orr_status pg_resume_clear(void *conf, const char *job, orr_err *err)
{
    wh_pg_conf *c = conf;
    PGconn *conn = wh_pg_connect(c->o.dsn, c->o.path, err);
    if (!conn)
        return ORR_EUNAVAIL;
    orr_buf q = ORR_BUF_INIT;
    orr_buf_append_str(&q, "BEGIN; ");
    wh_pg_resume_clear_sql(c, job, &q);
    orr_buf_append_str(&q, "COMMIT");
    orr_status rc = wh_pg_exec(conn, q.data, c->o.path, err);
    orr_buf_free(&q);
    PQfinish(conn);
    return rc;
}

const wh_resume_ops wh_pg_resume = {
    .supported = pg_resume_supported,
    .load = pg_resume_load,
    .begin = pg_resume_begin,
    .split_commit = wh_pg_writer_split_commit,
    .clear = pg_resume_clear,
};
