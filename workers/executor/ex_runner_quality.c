/*
 * ex_runner_quality.c - the `quality` task type (contract in ex_runner.h):
 * config {"datasource": "name", "checks": [...]}. The data source is
 * resolved as a transfer's is (ex_transfer_resolve: kind postgresql ->
 * store postgres, mysql/mariadb -> mysql), the job
 * {"name", "target": {type, dsn}, "checks"} is written 0600 owned by
 * executord's user and handed to `wormhole quality -` as stdin, so the
 * password is in no argument, environment or file the task user can open.
 *
 * Also here, for both task types that run checks (transfer and quality):
 * the attempt's reason `quality` when wormhole exits 3, and the checks'
 * figures from the summary as process statistics.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ex_runner.h"
#include "orr_buf.h"
#include "orr_json.h"

int ex_quality_failed_exit(const char *type, int exited, int exit_code)
{
    return exited && exit_code == 3 && type &&
           (strcmp(type, "transfer") == 0 || strcmp(type, "quality") == 0);
}

void ex_quality_stats(orr_arena *a, const json_t *summary, ex_stat *stats, size_t cap, size_t *n)
{
    const json_t *qa = json_object_get(summary, "quality");
    for (size_t i = 0; json_is_array(qa) && i < json_array_size(qa); i++) {
        const json_t *c = json_array_get(qa, i);
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *outcome = json_string_value(json_object_get(c, "outcome"));
        const json_t *v = json_object_get(c, "value"), *t = json_object_get(c, "threshold");
        if (!name || !outcome || !json_is_number(v) || !json_is_number(t) ||
            strcmp(outcome, "not_run") == 0 || strlen(name) > 40 || *n + 3 > cap)
            continue;
        stats[(*n)++] =
            (ex_stat){orr_arena_sprintf(a, "quality.%s.value", name), json_number_value(v)};
        stats[(*n)++] =
            (ex_stat){orr_arena_sprintf(a, "quality.%s.threshold", name), json_number_value(t)};
        stats[(*n)++] =
            (ex_stat){orr_arena_sprintf(a, "quality.%s.ok", name), strcmp(outcome, "ok") == 0};
    }
}

/* The store a data source of this kind is checked with; NULL if none. */
static const char *store_of(const char *kind)
{
    if (strcmp(kind, "postgresql") == 0 || strcmp(kind, "postgres") == 0)
        return "postgres";
    if (strcmp(kind, "mysql") == 0 || strcmp(kind, "mariadb") == 0)
        return "mysql";
    return NULL;
}

static orr_status quality_prepare(const ex_run_ctx *ctx, ex_run_plan *plan, orr_err *err)
{
    if (!json_is_object(ctx->config))
        return orr_err_set(err, ORR_EINVAL, "config", "must be an object (datasource, checks)");
    const char *name = json_string_value(json_object_get(ctx->config, "datasource"));
    const json_t *checks = json_object_get(ctx->config, "checks");
    if (!name || !name[0])
        return orr_err_set(err, ORR_EINVAL, "config.datasource",
                           "must be the name of a data source");
    if (!json_is_array(checks))
        return orr_err_set(err, ORR_EINVAL, "config.checks", "must be an array of checks");
    char *bin = orr_arena_sprintf(ctx->arena, "%s/wormhole", ctx->bin_dir);
    if (access(bin, X_OK) != 0)
        return orr_err_set(err, ORR_ENOTFOUND, "type",
                           "the transfer engine is not installed on this executor (%.200s)", bin);
    if (!ctx->hooks || !ctx->hooks->datasource)
        return orr_err_set(err, ORR_EINVAL, "config.datasource",
                           "data-source references cannot be resolved here");
    /* The kind picks the store; the resolve below reads the source again
     * and builds its dsn exactly as a transfer's endpoint. */
    ex_datasource ds = {0};
    orr_status s = ctx->hooks->datasource(ctx->hooks->arg, ctx->arena, name, &ds, err);
    if (s == ORR_ENOTFOUND)
        return orr_err_set(err, ORR_ENOTFOUND, "config.datasource",
                           "no data source named \"%.128s\"", name);
    if (s != ORR_OK)
        return s;
    const char *store = store_of(ds.kind);
    if (ds.secret)
        explicit_bzero((char *)ds.secret, strlen(ds.secret));
    if (!store)
        return orr_err_set(err, ORR_EINVAL, "config.datasource",
                           "data source \"%.128s\" is of kind %.64s: quality checks run on "
                           "postgresql and mysql sources",
                           name, ds.kind);
    if ((s = ex_runner_env(ctx, NULL, &plan->envp, err)) != ORR_OK)
        return s;

    json_t *target = json_pack("{s:s, s:s}", "type", store, "datasource", name);
    int resolved = 0;
    orr_buf text = ORR_BUF_INIT;
    s = ex_transfer_resolve(ctx, target, "config", &resolved, err);
    if (s == ORR_OK) {
        json_t *job =
            json_pack("{s:s, s:O, s:O}", "name",
                      orr_arena_sprintf(ctx->arena, "quality-%lld", (long long)ctx->task_id),
                      "target", target, "checks", checks);
        orr_json_dump_buf(job, &text);
        json_decref(job);
        char *path = orr_arena_sprintf(ctx->arena, "%s/quality.json", ctx->run_dir);
        unlink(path);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        ssize_t w = fd >= 0 ? write(fd, text.data, text.len) : -1;
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (w != (ssize_t)text.len) {
            unlink(path);
            s = orr_err_set(err, ORR_EIO, path, "cannot write: %s", strerror(e));
        } else {
            plan->secret_path = path;
            plan->stdin_path = path;
            plan->cwd = ctx->run_dir;
            plan->argv = orr_arena_calloc(ctx->arena, 4, sizeof *plan->argv);
            plan->argv[0] = bin;
            plan->argv[1] = "quality";
            plan->argv[2] = "-";
        }
    }
    if (text.data)
        explicit_bzero(text.data, text.len);
    orr_buf_free(&text);
    json_decref(target);
    return s;
}

const ex_runner_ops ex_runner_quality = {
    .name = "quality",
    .prepare = quality_prepare,
};
