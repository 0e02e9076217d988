/*
 * wh_quality.h - quality checks: the `quality` array of a transfer job and
 * the `checks` of `wormhole quality`. Each check has a name, a kind and a
 * threshold; the engine measures a value and compares it:
 *
 *   row_count   |rows the reader sent - rows the target confirmed|  <= max_diff
 *   null_ratio  NULLs in column / rows of the table                 <= max_ratio
 *   unique      rows beyond the first of each key (columns)         <= max_duplicates
 *   freshness   seconds since max(column)                           <= max_age_s
 *   sql         rows the query returns                              <= max_rows
 *
 * SQL stores run the checks through their wh_quality_ops (wh.h). A transfer
 * checks a writer's target in the writer's own load transaction, before the
 * commit, when the writer loads through one connection straight into its
 * table: a failed check rolls the load back. Otherwise (several channels, a
 * staging table) the checks run after the commit and a failure fails the
 * run with the target already changed (docs/wormhole.md "Quality checks").
 */
#ifndef WH_QUALITY_H
#define WH_QUALITY_H

#include <jansson.h>
#include <stdint.h>

#include "orr_status.h"
#include "wh.h"

typedef enum wh_qkind {
    WH_Q_ROW_COUNT = 0,
    WH_Q_NULL_RATIO,
    WH_Q_UNIQUE,
    WH_Q_FRESHNESS,
    WH_Q_SQL,
} wh_qkind;

/* "row_count", ...; parse returns -1 for an unknown name. */
const char *wh_qkind_name(wh_qkind k);
int wh_qkind_parse(const char *name);

#define WH_Q_KEEP 5 /* offending rows of a sql check kept for the log */

typedef struct wh_qcheck {
    char path[48];    /* "quality[2]" or "checks[0]", for errors */
    const char *name; /* [a-z0-9_]{1,40}: a process-statistics key part */
    wh_qkind kind;
    const char *writer;   /* transfer: the writer named (NULL: the first) */
    size_t writer_index;  /* resolved by wh_quality_bind */
    const char *table;    /* NULL: the writer's target table */
    const char *column;   /* null_ratio, freshness */
    const char **columns; /* unique (malloc'd array of borrowed strings) */
    size_t ncolumns;
    const char *query; /* sql */
    double threshold;
    /* outcome */
    int ran, ok;
    double value;
    char detail[512]; /* a failed check's explanation */
    json_t *rows;     /* sql: the first offending rows (arrays of text/null) */
} wh_qcheck;

typedef struct wh_qset {
    size_t n;
    wh_qcheck *v; /* malloc'd; wh_qset_free */
} wh_qset;

/* Parse an array of checks found at path ("quality", "checks"). in_transfer:
 * row_count is allowed and table may be omitted (the writer's target);
 * otherwise row_count is refused and table is required where a kind needs
 * one. Strings are borrowed from arr. ORR_EINVAL naming the JSON path of the
 * first bad field; out is empty then. */
orr_status wh_quality_parse(const json_t *arr, const char *path, int in_transfer, wh_qset *out,
                            orr_err *err);
void wh_qset_free(wh_qset *q);

/* Resolve each check's writer among the job's writers and refuse kinds the
 * writer's store cannot run (a store without quality ops runs row_count
 * only). ORR_EINVAL naming "<check path>.writer" or "<check path>.kind". */
orr_status wh_quality_bind(wh_qset *q, const wh_job *job, orr_err *err);

/* The job's "quality" key, parsed and bound into j->quality (absent: NULL);
 * freed by wh_quality_job_free (wh_job_free calls it). */
orr_status wh_quality_job_parse(wh_job *j, orr_err *err);
void wh_quality_job_free(wh_job *j);

/* Measure one check through a store's ops on an open connection. table_q is
 * the quoted table (NULL: quote c->table). Fills value, ok, detail, rows.
 * ORR_OK when it was measured (pass or fail); an error when the query
 * failed. */
orr_status wh_quality_measure(wh_qcheck *c, const wh_quality_ops *ops, void *conn,
                              const char *table_q, orr_err *err);

/* Judge row_count from the engine's own figures. */
void wh_quality_row_count(wh_qcheck *c, uint64_t expected, uint64_t confirmed);

/* The engine's phases for writer w. Before the commit (state: the writer's
 * only channel, or NULL when it has several): row_count from the figures,
 * and the other checks when the store hands out the load's connection.
 * After the commit: the checks not run yet, on a connection of their own.
 * ORR_OK when every check could be measured (passed or not). */
orr_status wh_quality_before(const wh_job *job, size_t w, void *state, uint64_t expected,
                             uint64_t confirmed, orr_err *err);
orr_status wh_quality_after(const wh_job *job, size_t w, orr_err *err);
/* Log the outcomes; ORR_EIO naming the first failed check's path. */
orr_status wh_quality_verdict(const wh_job *job, orr_err *err);
/* 1 when a check ran and failed. */
int wh_quality_failed(const wh_job *job);

/* The summary's "quality" array (new reference). */
json_t *wh_quality_json(const wh_qset *q);

/* Log each check's outcome (and a sql check's offending rows). Returns the
 * number of checks that ran and failed. */
size_t wh_quality_report(const wh_qset *q);

/* `wormhole quality JOB`: {"name", "target": {type, dsn|dsn_env}, "checks"}.
 * Runs every check on one connection, prints the summary on stdout.
 * Returns the exit status (0 passed, 3 a check failed, 1 error, 2 bad job). */
int wh_quality_main(const char *job_path);

#endif
