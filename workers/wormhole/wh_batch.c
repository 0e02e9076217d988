/*
 * wh_batch.c - record batches: rows of (offset, length) fields over one byte
 * buffer owned by the batch (see wh.h).
 *
 * Invariants: f[r * ncols + c] is filled for r < nrows and, for the row being
 * built (r == nrows), for c < cur. data.len only grows while a row is built;
 * wh_batch_row_abort cuts it back to where the row began.
 */
#include "orr_alloc.h"
#include "wh.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define WH_BATCH_MAX_BYTES 0xFFFFFFF0u

wh_batch *wh_batch_new(size_t cap_rows, size_t cap_bytes)
{
    wh_batch *b = orr_xcalloc(1, sizeof(*b));
    b->cap_rows = cap_rows ? cap_rows : 1;
    b->cap_bytes = cap_bytes ? cap_bytes : 1;
    b->rownum = orr_xmalloc(b->cap_rows * sizeof(*b->rownum));
    atomic_init(&b->refs, 0);
    return b;
}

void wh_batch_free(wh_batch *b)
{
    if (!b)
        return;
    free(b->f);
    free(b->rownum);
    orr_buf_free(&b->data);
    free(b);
}

void wh_batch_reset(wh_batch *b, size_t ncols)
{
    if (ncols != b->ncols || !b->f) {
        free(b->f);
        b->ncols = ncols;
        b->f = orr_xmalloc(b->cap_rows * (ncols ? ncols : 1) * sizeof(*b->f));
    }
    b->nrows = 0;
    b->cur = 0;
    b->src_bytes = 0;
    b->shard = 0;
    orr_buf_reset(&b->data);
}

int wh_batch_full(const wh_batch *b)
{
    return b->nrows >= b->cap_rows || b->data.len >= b->cap_bytes;
}

/* Where the row being built starts in data. */
static size_t wh_batch_row_start(const wh_batch *b)
{
    const wh_field *f = &b->f[b->nrows * b->ncols];
    for (size_t c = 0; c < b->cur; c++)
        if (f[c].len >= 0)
            return f[c].off;
    return b->data.len;
}

void wh_batch_row_begin(wh_batch *b, uint64_t rownum)
{
    assert(b->nrows < b->cap_rows);
    b->cur = 0;
    b->rownum[b->nrows] = rownum;
}

static wh_field *wh_batch_next_field(wh_batch *b)
{
    /* Extra fields are counted but not stored: row_end refuses the row. */
    static _Thread_local wh_field sink;
    if (b->cur >= b->ncols) {
        b->cur++;
        return &sink;
    }
    return &b->f[b->nrows * b->ncols + b->cur++];
}

void wh_batch_put(wh_batch *b, const void *p, size_t n)
{
    wh_field *f = wh_batch_next_field(b);
    f->off = (uint32_t)b->data.len;
    f->len = (int32_t)(n > INT32_MAX ? INT32_MAX : n);
    orr_buf_append(&b->data, p, n);
}

void wh_batch_put_null(wh_batch *b)
{
    wh_field *f = wh_batch_next_field(b);
    f->off = (uint32_t)b->data.len;
    f->len = -1;
}

char *wh_batch_reserve(wh_batch *b, size_t n)
{
    orr_buf_reserve(&b->data, n);
    return b->data.data + b->data.len;
}

void wh_batch_commit(wh_batch *b, size_t used)
{
    wh_field *f = wh_batch_next_field(b);
    f->off = (uint32_t)b->data.len;
    f->len = (int32_t)(used > INT32_MAX ? INT32_MAX : used);
    b->data.len += used;
    b->data.data[b->data.len] = 0;
}

void wh_batch_field_open(wh_batch *b)
{
    wh_field *f = wh_batch_next_field(b);
    f->off = (uint32_t)b->data.len;
    f->len = 0;
}

void wh_batch_field_extend(wh_batch *b, const void *p, size_t n)
{
    orr_buf_append(&b->data, p, n);
}

void wh_batch_field_close(wh_batch *b)
{
    if (b->cur == 0 || b->cur > b->ncols)
        return;
    wh_field *f = &b->f[b->nrows * b->ncols + b->cur - 1];
    size_t n = b->data.len - f->off;
    f->len = (int32_t)(n > INT32_MAX ? INT32_MAX : n);
}

void wh_batch_row_abort(wh_batch *b)
{
    if (b->cur > b->ncols)
        b->cur = b->ncols;
    b->data.len = wh_batch_row_start(b);
    if (b->data.data)
        b->data.data[b->data.len] = 0;
    b->cur = 0;
}

orr_status wh_batch_row_end(wh_batch *b)
{
    if (b->cur != b->ncols) {
        wh_batch_row_abort(b);
        return ORR_EINVAL;
    }
    if (b->data.len > WH_BATCH_MAX_BYTES) {
        wh_batch_row_abort(b);
        return ORR_ETOOBIG;
    }
    b->nrows++;
    b->cur = 0;
    return ORR_OK;
}

size_t wh_batch_raw(wh_batch *b, const void *p, size_t n)
{
    size_t off = b->data.len;
    orr_buf_append(&b->data, p, n);
    return off;
}

void wh_batch_put_ref(wh_batch *b, size_t off, int64_t len)
{
    wh_field *f = wh_batch_next_field(b);
    f->off = (uint32_t)off;
    f->len = len < 0 ? -1 : (int32_t)(len > INT32_MAX ? INT32_MAX : len);
}
