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
 *   transfer  config = the transfer job; written to <run dir>/job.json and
 *             run as `<bin dir>/wormhole run job.json`.
 *
 * Environment of every type: PATH, HOME (the private run dir), LANG, then the
 * task's env, then ORRERY_INSTANCE_ID, ORRERY_TASK_ID, ORRERY_ATTEMPT and
 * ORRERY_SCHEDULE_TIME (ISO-8601 UTC), which the task cannot override.
 */
#ifndef EX_RUNNER_H
#define EX_RUNNER_H

#include <jansson.h>
#include <stdint.h>

#include "orr_arena.h"
#include "orr_status.h"

typedef struct ex_run_ctx {
    orr_arena *arena;     /* everything prepared lives here */
    const json_t *config; /* spec.config (borrowed) */
    int64_t instance_id;
    int64_t task_id;
    int attempt;
    int64_t schedule_time_ms;
    const char *run_dir;  /* private per-attempt directory (exists) */
    const char *code_dir; /* where code packages are unpacked */
    const char *bin_dir;  /* where helper binaries (wormhole) live */
} ex_run_ctx;

typedef struct ex_run_plan {
    char **argv; /* NULL-terminated; argv[0] is a path */
    char **envp; /* NULL-terminated */
    const char *cwd;
} ex_run_plan;

typedef struct ex_runner_ops {
    const char *name;
    /* Fill plan (arena memory). ORR_EINVAL naming "config.<key>" for a bad
     * config, ORR_ENOTFOUND for a missing package or program. */
    orr_status (*prepare)(const ex_run_ctx *ctx, ex_run_plan *plan, orr_err *err);
} ex_runner_ops;

extern const ex_runner_ops ex_runner_shell;
extern const ex_runner_ops ex_runner_transfer;

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
