/*
 * oc_cmds.h - the subcommands of `orrery` and the helpers they share
 * (printing tables and JSON, finding a task by name, reading ids and times).
 * Each oc_run_* is one line of the command table in oc_cmds.c.
 */
#ifndef OC_CMDS_H
#define OC_CMDS_H

#include <jansson.h>
#include <stdint.h>

#include "oc.h"

int oc_run_login(oc_ctx *ctx, const oc_args *a);
int oc_run_validate(oc_ctx *ctx, const oc_args *a);
int oc_run_apply(oc_ctx *ctx, const oc_args *a);
int oc_run_export(oc_ctx *ctx, const oc_args *a);
int oc_run_run(oc_ctx *ctx, const oc_args *a);
int oc_run_rerun(oc_ctx *ctx, const oc_args *a);
int oc_run_rerun_failed(oc_ctx *ctx, const oc_args *a);
int oc_run_kill(oc_ctx *ctx, const oc_args *a);
int oc_run_mark_success(oc_ctx *ctx, const oc_args *a);
int oc_run_suspend(oc_ctx *ctx, const oc_args *a);
int oc_run_resume(oc_ctx *ctx, const oc_args *a);
int oc_run_backfill(oc_ctx *ctx, const oc_args *a);
int oc_run_logs(oc_ctx *ctx, const oc_args *a);
int oc_run_ls(oc_ctx *ctx, const oc_args *a);
int oc_run_completion(oc_ctx *ctx, const oc_args *a);
int oc_run_man(oc_ctx *ctx, const oc_args *a);
int oc_run_help(oc_ctx *ctx, const oc_args *a);

/* Pretty JSON (2-space indent, keys in the API's order) and a newline. */
void oc_print_json(oc_ctx *ctx, const json_t *v);

/* A table: header row, then rows of cells, columns padded to the widest. */
typedef struct oc_table {
    int ncols;
    char **cells; /* row-major, header first */
    size_t nrows;
} oc_table;
void oc_table_init(oc_table *t, int ncols, const char *const *header);
/* Append one row; the ncols values are copied ("-" for NULL). */
void oc_table_row(oc_table *t, const char *const *cells);
void oc_table_print(oc_table *t, FILE *f);
void oc_table_free(oc_table *t);

/* A positive id ("1001"); usage error (exit 2, message printed) otherwise. */
int oc_parse_id(oc_ctx *ctx, const char *what, const char *s, int64_t *out);
/* A task by id or exact name (active or not): *task is a new reference.
 * Exit code: 0, 3 when there is none, or the API's. */
int oc_task_find(oc_ctx *ctx, const char *ref, json_t **task);
/* A time for the API: RFC 3339 as given, "YYYY-MM-DD" as midnight UTC,
 * "YYYY-MM-DDTHH:MM" in UTC (malloc'ed). */
char *oc_time_arg(const char *s);

#endif
