/*
 * ex_runner_shell.c - the `shell` task type (contract in ex_runner.h).
 *
 * Rules worth repeating: with `args` the command is executed directly (no
 * shell, no word splitting); without `args` it is a one-line script for
 * /bin/sh -c. package and workdir may not climb out of the code folder
 * ("..", absolute paths and empty components are refused).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ex_runner.h"
#include "orr_json.h"

/* 1 if rel is a safe relative path: no leading '/', no "." or ".." parts. */
static int safe_rel(const char *rel, int allow_slash)
{
    if (!rel[0] || rel[0] == '/')
        return 0;
    if (!allow_slash && strchr(rel, '/'))
        return 0;
    const char *p = rel;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 0 || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        if (!e)
            break;
        p = e + 1;
    }
    return 1;
}

static orr_status shell_prepare(const ex_run_ctx *ctx, ex_run_plan *plan, orr_err *err)
{
    static const char *const keys[] = {"command", "args", "env", "package", "workdir", NULL};
    const json_t *cfg = ctx->config;
    if (!json_is_object(cfg))
        return orr_err_set(err, ORR_EINVAL, "config", "must be an object");
    orr_status s = orr_json_allow_keys(cfg, "config", keys, err);
    if (s != ORR_OK)
        return s;
    const char *command = NULL, *package = NULL, *workdir = NULL;
    json_t *args = NULL, *env = NULL;
    if ((s = orr_json_get_str(cfg, "config", "command", 1, &command, err)) != ORR_OK ||
        (s = orr_json_get_array(cfg, "config", "args", 0, &args, err)) != ORR_OK ||
        (s = orr_json_get_obj(cfg, "config", "env", 0, &env, err)) != ORR_OK ||
        (s = orr_json_get_str(cfg, "config", "package", 0, &package, err)) != ORR_OK ||
        (s = orr_json_get_str(cfg, "config", "workdir", 0, &workdir, err)) != ORR_OK)
        return s;
    if (!command[0])
        return orr_err_set(err, ORR_EINVAL, "config.command", "must not be empty");

    if ((s = ex_runner_env(ctx, env, &plan->envp, err)) != ORR_OK)
        return s;

    plan->cwd = ctx->run_dir;
    if (package) {
        if (!safe_rel(package, 0))
            return orr_err_set(err, ORR_EINVAL, "config.package", "must be a plain folder name");
        if (workdir && workdir[0] && !safe_rel(workdir, 1))
            return orr_err_set(err, ORR_EINVAL, "config.workdir",
                               "must be a relative path inside the package");
        char *dir = orr_arena_sprintf(ctx->arena, "%s/%s%s%s", ctx->code_dir, package,
                                      workdir && workdir[0] ? "/" : "", workdir ? workdir : "");
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return orr_err_set(err, ORR_ENOTFOUND, "config.package",
                               "package \"%.100s\" is not installed on this executor (no folder "
                               "%.200s)",
                               package, dir);
        plan->cwd = dir;
    } else if (workdir && workdir[0]) {
        return orr_err_set(err, ORR_EINVAL, "config.workdir", "needs config.package");
    }

    if (!args) {
        plan->argv = orr_arena_calloc(ctx->arena, 4, sizeof *plan->argv);
        plan->argv[0] = "/bin/sh";
        plan->argv[1] = "-c";
        plan->argv[2] = orr_arena_strdup(ctx->arena, command);
        return ORR_OK;
    }
    size_t n = json_array_size(args);
    plan->argv = orr_arena_calloc(ctx->arena, n + 2, sizeof *plan->argv);
    const char *path = ex_runner_getenv(plan->envp, "PATH");
    plan->argv[0] = ex_runner_which(ctx->arena, command, path);
    if (!plan->argv[0])
        return orr_err_set(err, ORR_ENOTFOUND, "config.command",
                           "program \"%.200s\" not found in PATH", command);
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(args, i);
        if (!json_is_string(a)) {
            char field[64];
            snprintf(field, sizeof field, "config.args[%zu]", i);
            return orr_err_set(err, ORR_EINVAL, field, "must be a string");
        }
        plan->argv[i + 1] = orr_arena_strdup(ctx->arena, json_string_value(a));
    }
    return ORR_OK;
}

const ex_runner_ops ex_runner_shell = {
    .name = "shell",
    .prepare = shell_prepare,
};
