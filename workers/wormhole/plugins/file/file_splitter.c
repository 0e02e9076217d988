/*
 * file_splitter.c - file shards: one per file of "path"/"paths", with glob
 * patterns expanded (in sorted order). A pattern that matches nothing is an
 * error naming it.
 */
#include <glob.h>
#include <stdio.h>
#include <string.h>

#include "file_common.h"

static orr_status file_split(void *conf, wh_ctx *ctx, int channels, wh_shards *out, orr_err *err)
{
    (void)ctx;
    (void)channels;
    wh_file_conf *c = conf;
    for (size_t i = 0; i < c->npaths; i++) {
        const char *p = c->paths[i];
        if (!strpbrk(p, "*?[")) {
            wh_shards_add(out, NULL, NULL, p);
            continue;
        }
        glob_t g;
        int rc = glob(p, 0, NULL, &g);
        if (rc != 0 || g.gl_pathc == 0) {
            if (rc == 0)
                globfree(&g);
            return orr_err_set(err, ORR_ENOTFOUND, c->path_json, "no file matches %s", p);
        }
        for (size_t k = 0; k < g.gl_pathc; k++)
            wh_shards_add(out, NULL, NULL, g.gl_pathv[k]);
        globfree(&g);
    }
    return ORR_OK;
}

const wh_splitter_ops wh_file_splitter = {
    .split = file_split,
};
