/* wh_dirty.c - dirty-row counting and the reject file (see wh_dirty.h). */
#include "wh_dirty.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "orr_alloc.h"
#include "orr_buf.h"
#include "orr_json.h"

struct wh_dirty {
    pthread_mutex_t lock;
    FILE *f;
    char path[512];
    int64_t max;
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t raw_count; /* found by readers, before any batch */
    int write_failed;
};

orr_status wh_dirty_open(const char *path, int64_t max, wh_dirty **out, orr_err *err)
{
    *out = NULL;
    wh_dirty *d = orr_xcalloc(1, sizeof(*d));
    pthread_mutex_init(&d->lock, NULL);
    d->max = max;
    atomic_init(&d->count, 0);
    atomic_init(&d->raw_count, 0);
    if (path) {
        snprintf(d->path, sizeof(d->path), "%s", path);
        d->f = fopen(path, "w");
        if (!d->f) {
            pthread_mutex_destroy(&d->lock);
            free(d);
            return orr_err_set(err, ORR_EIO, "reject_file", "cannot create %s", path);
        }
    }
    *out = d;
    return ORR_OK;
}

orr_status wh_dirty_close(wh_dirty *d, orr_err *err)
{
    if (!d)
        return ORR_OK;
    orr_status rc = ORR_OK;
    if (d->f && fclose(d->f) != 0)
        d->write_failed = 1;
    if (d->write_failed)
        rc = orr_err_set(err, ORR_EIO, "reject_file", "cannot write %s", d->path);
    pthread_mutex_destroy(&d->lock);
    free(d);
    return rc;
}

uint64_t wh_dirty_count(const wh_dirty *d)
{
    return d ? atomic_load(&((wh_dirty *)d)->count) : 0;
}

uint64_t wh_dirty_raw_count(const wh_dirty *d)
{
    return d ? atomic_load(&((wh_dirty *)d)->raw_count) : 0;
}

int wh_dirty_over(const wh_dirty *d)
{
    return d && d->max >= 0 && wh_dirty_count(d) > (uint64_t)d->max;
}

static orr_status wh_dirty_emit(wh_ctx *ctx, json_t *line)
{
    wh_dirty *d = ctx->dirty;
    uint64_t n = atomic_fetch_add(&d->count, 1) + 1;
    if (d->f) {
        orr_buf b = ORR_BUF_INIT;
        orr_json_dump_buf(line, &b);
        orr_buf_append_byte(&b, '\n');
        pthread_mutex_lock(&d->lock);
        if (fwrite(b.data, 1, b.len, d->f) != b.len)
            d->write_failed = 1;
        pthread_mutex_unlock(&d->lock);
        orr_buf_free(&b);
    }
    json_decref(line);
    if (d->max >= 0 && n > (uint64_t)d->max) {
        atomic_store(&ctx->cancel, 1);
        return ORR_ETOOBIG;
    }
    return ORR_OK;
}

orr_status wh_ctx_dirty(wh_ctx *ctx, const char *side, const wh_batch *b, size_t row,
                        const char *reason)
{
    json_t *fields = json_array();
    for (size_t c = 0; c < b->ncols; c++) {
        int64_t len;
        const char *v = wh_batch_val(b, row, c, &len);
        json_array_append_new(fields, v ? json_stringn_nocheck(v, (size_t)len) : json_null());
    }
    json_t *line =
        json_pack("{s:s, s:I, s:I, s:s, s:o}", "side", side, "shard", (json_int_t)b->shard, "row",
                  (json_int_t)b->rownum[row], "reason", reason, "fields", fields);
    return wh_dirty_emit(ctx, line);
}

orr_status wh_ctx_dirty_raw(wh_ctx *ctx, size_t shard, uint64_t rownum, const char *raw, size_t n,
                            const char *reason)
{
    atomic_fetch_add(&ctx->dirty->raw_count, 1);
    json_t *line =
        json_pack("{s:s, s:I, s:I, s:s, s:o}", "side", "reader", "shard", (json_int_t)shard, "row",
                  (json_int_t)rownum, "reason", reason, "raw", json_stringn_nocheck(raw, n));
    return wh_dirty_emit(ctx, line);
}
