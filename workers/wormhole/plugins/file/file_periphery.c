/*
 * file_periphery.c - file writer prepare/finish: prepare checks the declared
 * columns against the source and removes a temporary file a killed run may
 * have left; the commit itself is the writer's rename.
 */
#include <stdio.h>
#include <unistd.h>

#include "file_common.h"
#include "orr_json.h"

static orr_status file_writer_prepare(void *conf, wh_ctx *ctx, const wh_schema *src, orr_err *err)
{
    (void)ctx;
    wh_file_conf *c = conf;
    char p[96];
    if (c->cols.ncols && c->cols.ncols != src->ncols)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), c->path_json, "columns"),
                           "the source has %zu columns, this writer declares %zu", src->ncols,
                           c->cols.ncols);
    if (c->format == WH_FILE_FIXED && !c->cols.ncols)
        return orr_err_set(err, ORR_EINVAL, orr_json_path(p, sizeof(p), c->path_json, "columns"),
                           "is required for fixed-width files");
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s.wh-tmp", c->path);
    unlink(tmp);
    snprintf(tmp, sizeof(tmp), "%s.wh-tmp.index", c->path);
    unlink(tmp);
    return ORR_OK;
}

static orr_status file_writer_finish(void *conf, wh_ctx *ctx, int success, orr_err *err)
{
    (void)conf;
    (void)ctx;
    (void)success;
    (void)err;
    return ORR_OK;
}

const wh_periphery_ops wh_file_writer_periphery = {
    .prepare = file_writer_prepare,
    .finish = file_writer_finish,
};
