/*
 * ex_runner.h - task types as an ops table.
 *
 * A runner turns a task's `config` (the type-specific part of its spec) into
 * what the sandbox runs: argv, a complete environment and a working
 * directory. It runs nothing itself, so it is easy to test and a new type is
 * one file plus one line in ex_runner_table (ex_runner.c).
 *
 *   shell     config {command, args[], env{}, package, workdir}
 *             - args present: `command` is the program (looked up in the
 *               task's PATH when it has no '/'), args its arguments; no shell.
 *             - args absent: `command` is a one-line script run by
 *               /bin/sh -c.
 *             - package: run inside <code dir>/<package>[/<workdir>] (the
 *               package must be installed on this executor); without a
 *               package the working directory is the attempt's private one
 *               and workdir is refused.
 *   transfer  config = the transfer job; written to <run dir>/job.json (mode
 *             0600, owned by the run_as user) and run as
 *             `<bin dir>/wormhole run job.json [--state job.json.state]`.
 *             The job file is removed after the run (plan->secret_path).
 *             - "datasource": "name" on the reader or a writer is resolved
 *               through hooks->datasource (Halley's GetDataSourceSecret) into
 *               a `dsn` holding the password. Such a job is written 0600
 *               owned by executord's user (not the task's) and handed to
 *               `wormhole run -` as stdin (plan->stdin_path), so the task
 *               user cannot open it; the password is never in argv or env.
 *             - reader.incremental: the watermark saved for the task
 *               (hooks->watermark, name plan->wm_name) is written to the
 *               state file before the run; after a successful run the new
 *               one is read back from it (ex_transfer_state_read).
 *
 *   quality   config {datasource, checks[]}: the data source resolved as a
 *             transfer's, the job {name, target{type, dsn}, checks} given
 *             as stdin to `<bin dir>/wormhole quality -` (ex_runner_quality.c).
 *             A failed check (exit 3) fails the attempt with reason
 *             "quality", for transfer tasks too.
 *
 * Environment of every type: PATH, HOME (the private run dir), LANG, then the
 * task's env, then ORRERY_INSTANCE_ID, ORRERY_TASK_ID, ORRERY_ATTEMPT and
 * ORRERY_SCHEDULE_TIME (ISO-8601 UTC), which the task cannot override.
 */
#ifndef EX_RUNNER_H
#define EX_RUNNER_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "orr_arena.h"
#include "orr_status.h"

/* A data source as Halley hands it to workers (arena memory). */
typedef struct ex_datasource {
    const char *kind;        /* postgresql, mysql, ... */
    const char *params_json; /* host, port, database, user, ... */
    const char *secret;      /* the password in clear; "" = none */
} ex_datasource;

/* What a runner may ask of the daemon while it prepares (all may block on
 * Halley). Strings are allocated in the arena given. */
typedef struct ex_run_hooks {
    void *arg;
    /* ORR_ENOTFOUND when no data source has that name; other errors as the
     * call failed. */
    orr_status (*datasource)(void *arg, orr_arena *a, const char *name, ex_datasource *out,
                             orr_err *err);
    /* The watermark saved for (this task, name); "" when none. */
    orr_status (*watermark)(void *arg, orr_arena *a, const char *name, const char **value,
                            orr_err *err);
} ex_run_hooks;

typedef struct ex_run_ctx {
    orr_arena *arena;     /* everything prepared lives here */
    const json_t *config; /* spec.config (borrowed) */
    int64_t instance_id;
    int64_t task_id;
    int attempt;
    int from_scratch; /* a rerun asked this attempt not to resume (transfer) */
    int64_t schedule_time_ms;
    const char *run_dir;  /* private per-attempt directory (exists) */
    const char *code_dir; /* where code packages are unpacked */
    const char *bin_dir;  /* where helper binaries (wormhole) live */
    int drop;             /* files the runner writes are given to uid/gid */
    uid_t uid;
    gid_t gid;
    const ex_run_hooks *hooks; /* NULL: references cannot be resolved */
} ex_run_ctx;

typedef struct ex_run_plan {
    char **argv; /* NULL-terminated; argv[0] is a path */
    char **envp; /* NULL-terminated */
    const char *cwd;
    const char *stdin_path;  /* given to the program as stdin (NULL: /dev/null) */
    const char *secret_path; /* a file holding credentials: remove after the run */
    const char *wm_name;     /* incremental transfer: the watermark's name, else NULL */
    const char *wm_column;   /* ... the reader's incremental column */
    const char *wm_value;    /* ... the value read before the run ("" = none) */
    const char *state_path;  /* ... wormhole's state file */
} ex_run_plan;

typedef struct ex_runner_ops {
    const char *name;
    /* Fill plan (arena memory). ORR_EINVAL naming "config.<key>" for a bad
     * config, ORR_ENOTFOUND for a missing package or program. */
    orr_status (*prepare)(const ex_run_ctx *ctx, ex_run_plan *plan, orr_err *err);
} ex_runner_ops;

extern const ex_runner_ops ex_runner_shell;
extern const ex_runner_ops ex_runner_transfer;
extern const ex_runner_ops ex_runner_quality;

/* One process statistic of a finished transfer. */
typedef struct ex_stat {
    const char *key; /* [a-z0-9_.]{1,64} */
    double value;
} ex_stat;

/* wormhole's final summary: the last line of the attempt's log that is a
 * JSON object with "status". Fills stats (rows_read, bytes_read,
 * dirty_rows, seconds, rows_per_sec, rows_written, rows_confirmed,
 * bytes_written summed over writers, and writers.<i>.* when there are
 * several) and *n (at most cap). *ok = 1 when its status is "ok".
 * ORR_ENOTFOUND when the log holds no summary. Arena memory. */
orr_status ex_transfer_summary(orr_arena *a, const char *log_path, ex_stat *stats, size_t cap,
                               size_t *n, int *ok, orr_err *err);

/* The watermark wormhole saved in the state file of plan (a successful
 * incremental run). ORR_ENOTFOUND when it saved none. Arena memory. */
orr_status ex_transfer_state_read(orr_arena *a, const ex_run_plan *plan, const char **value,
                                  orr_err *err);

/* Replace the "datasource" of a transfer endpoint object (a "type" beside
 * it) by a "dsn" (ex_runner_transfer.c); path names it in errors
 * ("config.reader"). *resolved counts the references replaced. */
orr_status ex_transfer_resolve(const ex_run_ctx *ctx, json_t *ep, const char *path, int *resolved,
                               orr_err *err);

/* Quality checks (ex_runner_quality.c): 1 when the attempt of a transfer or
 * quality task failed because a check did not pass (wormhole exit 3: the
 * reason is then "quality"); the summary's "quality" figures appended to
 * stats as quality.<name>.value, .threshold and .ok (1/0). */
int ex_quality_failed_exit(const char *type, int exited, int exit_code);
void ex_quality_stats(orr_arena *a, const json_t *summary, ex_stat *stats, size_t cap, size_t *n);

/* ex_transfer_resolve with a choice: with infer_type, an endpoint without
 * "type" gets the one of the data source's kind (postgresql: postgres;
 * mysql, mariadb: mysql; any other kind is ORR_EINVAL).
 * ORR_ENOTFOUND (field path.datasource) for an unknown data source,
 * ORR_EINVAL for a kind the type cannot use. Blocks on hooks. */
orr_status ex_transfer_resolve_typed(const ex_run_ctx *ctx, json_t *ep, const char *path,
                                     int infer_type, int *resolved, orr_err *err);

/* The runner of a task type; NULL if none. */
const ex_runner_ops *ex_runner_find(const char *type);

/* Shared by runners: the environment described above, with extra (an object
 * of strings, may be NULL; non-strings are ORR_EINVAL naming
 * "config.env.<key>"). */
orr_status ex_runner_env(const ex_run_ctx *ctx, const json_t *extra, char ***out, orr_err *err);

/* Value of name in a NULL-terminated environment, or NULL. */
const char *ex_runner_getenv(char *const *envp, const char *name);

/* prog as an executable path: itself when it holds a '/', else the first
 * PATH entry (path_var, ':'-separated) where it is executable. NULL if none. */
char *ex_runner_which(orr_arena *a, const char *prog, const char *path_var);

#endif
