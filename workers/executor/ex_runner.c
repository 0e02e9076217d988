/*
 * ex_runner.c - the table of task types and what runners share: the clean
 * environment and the PATH search (see ex_runner.h).
 */
#include "ex_runner.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orr_buf.h"

#define EX_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

static const ex_runner_ops *const ex_runner_table[] = {
    &ex_runner_shell,
    &ex_runner_transfer,
    &ex_runner_quality,
};

const ex_runner_ops *ex_runner_find(const char *type)
{
    if (!type)
        return NULL;
    for (size_t i = 0; i < sizeof ex_runner_table / sizeof ex_runner_table[0]; i++)
        if (strcmp(ex_runner_table[i]->name, type) == 0)
            return ex_runner_table[i];
    return NULL;
}

const char *ex_runner_getenv(char *const *envp, const char *name)
{
    size_t l = strlen(name);
    for (size_t i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], name, l) == 0 && envp[i][l] == '=')
            return envp[i] + l + 1;
    return NULL;
}

/* Put NAME=value into env (replacing an earlier NAME). */
static void env_put(orr_arena *a, char **env, size_t *n, const char *name, const char *value)
{
    size_t l = strlen(name);
    char *kv = orr_arena_sprintf(a, "%s=%s", name, value);
    for (size_t i = 0; i < *n; i++)
        if (strncmp(env[i], name, l) == 0 && env[i][l] == '=') {
            env[i] = kv;
            return;
        }
    env[(*n)++] = kv;
}

orr_status ex_runner_env(const ex_run_ctx *ctx, const json_t *extra, char ***out, orr_err *err)
{
    size_t cap = 8 + (extra && json_is_object(extra) ? json_object_size(extra) : 0);
    char **env = orr_arena_calloc(ctx->arena, cap + 1, sizeof *env);
    size_t n = 0;
    env_put(ctx->arena, env, &n, "PATH", EX_DEFAULT_PATH);
    env_put(ctx->arena, env, &n, "HOME", ctx->run_dir);
    env_put(ctx->arena, env, &n, "LANG", "C.UTF-8");
    if (extra) {
        if (!json_is_object(extra))
            return orr_err_set(err, ORR_EINVAL, "config.env", "must be an object of strings");
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)extra, k, v)
        {
            char field[160];
            snprintf(field, sizeof field, "config.env.%.100s", k);
            if (!json_is_string(v))
                return orr_err_set(err, ORR_EINVAL, field, "must be a string");
            if (!k[0] || strchr(k, '=') || (k[0] >= '0' && k[0] <= '9'))
                return orr_err_set(err, ORR_EINVAL, field, "is not a valid variable name");
            env_put(ctx->arena, env, &n, k, json_string_value(v));
        }
    }
    char tbuf[32] = "";
    time_t secs = (time_t)(ctx->schedule_time_ms / 1000);
    struct tm tm;
    if (gmtime_r(&secs, &tm))
        strftime(tbuf, sizeof tbuf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    env_put(ctx->arena, env, &n, "ORRERY_INSTANCE_ID",
            orr_arena_sprintf(ctx->arena, "%lld", (long long)ctx->instance_id));
    env_put(ctx->arena, env, &n, "ORRERY_TASK_ID",
            orr_arena_sprintf(ctx->arena, "%lld", (long long)ctx->task_id));
    env_put(ctx->arena, env, &n, "ORRERY_ATTEMPT",
            orr_arena_sprintf(ctx->arena, "%d", ctx->attempt));
    env_put(ctx->arena, env, &n, "ORRERY_SCHEDULE_TIME", tbuf);
    env[n] = NULL;
    *out = env;
    return ORR_OK;
}

char *ex_runner_which(orr_arena *a, const char *prog, const char *path_var)
{
    if (!prog || !*prog)
        return NULL;
    if (strchr(prog, '/'))
        return orr_arena_strdup(a, prog);
    const char *p = path_var ? path_var : EX_DEFAULT_PATH;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t l = colon ? (size_t)(colon - p) : strlen(p);
        if (l > 0) {
            char *cand = orr_arena_sprintf(a, "%.*s/%s", (int)l, p, prog);
            if (access(cand, X_OK) == 0)
                return cand;
        }
        if (!colon)
            break;
        p = colon + 1;
    }
    return NULL;
}
