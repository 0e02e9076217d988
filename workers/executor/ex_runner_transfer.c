/*
 * ex_runner_transfer.c - the `transfer` task type (contract in ex_runner.h):
 * the config is the transfer job; it is written to <run dir>/job.json and
 * run by the transfer engine, `wormhole run job.json`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ex_runner.h"
#include "orr_buf.h"
#include "orr_json.h"

static orr_status transfer_prepare(const ex_run_ctx *ctx, ex_run_plan *plan, orr_err *err)
{
    if (!json_is_object(ctx->config))
        return orr_err_set(err, ORR_EINVAL, "config", "must be an object (the transfer job)");
    char *bin = orr_arena_sprintf(ctx->arena, "%s/wormhole", ctx->bin_dir);
    if (access(bin, X_OK) != 0)
        return orr_err_set(err, ORR_ENOTFOUND, "type",
                           "the transfer engine is not installed on this executor (%.200s)", bin);
    orr_status s = ex_runner_env(ctx, NULL, &plan->envp, err);
    if (s != ORR_OK)
        return s;

    char *job = orr_arena_sprintf(ctx->arena, "%s/job.json", ctx->run_dir);
    orr_buf text = ORR_BUF_INIT;
    orr_json_dump_buf(ctx->config, &text);
    int fd = open(job, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ssize_t w = fd >= 0 ? write(fd, text.data, text.len) : -1;
    int e = errno;
    if (fd >= 0)
        close(fd);
    int ok = w == (ssize_t)text.len;
    orr_buf_free(&text);
    if (!ok)
        return orr_err_set(err, ORR_EIO, job, "cannot write the job: %s", strerror(e));

    plan->cwd = ctx->run_dir;
    plan->argv = orr_arena_calloc(ctx->arena, 4, sizeof *plan->argv);
    plan->argv[0] = bin;
    plan->argv[1] = "run";
    plan->argv[2] = job;
    return ORR_OK;
}

const ex_runner_ops ex_runner_transfer = {
    .name = "transfer",
    .prepare = transfer_prepare,
};
