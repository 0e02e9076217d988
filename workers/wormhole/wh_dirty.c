/*
 * wh_dirty.c - dirty-row counting and the reject file (see wh_dirty.h).
 *
 * A reject line is always one whole, valid JSON object: a value that is not
 * valid UTF-8 is written as text with each invalid byte replaced by U+FFFD,
 * and its exact bytes in hex beside it ("fields_hex" / "raw_hex"), so the
 * line stays readable and the row can still be rebuilt byte for byte.
 */
#include "wh_dirty.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 when the byte
 * at s starts none. NUL is valid (JSON writes it \u0000). */
static size_t wh_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t k;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
        k = 1;
        cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        k = 2;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 3;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (k >= n)
        return 0;
    for (size_t j = 1; j <= k; j++) {
        if ((s[j] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[j] & 0x3F);
    }
    if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k + 1;
}

int wh_utf8_valid(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = wh_utf8_seq(s + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

/* A JSON string of p[0..n): as is when valid UTF-8; else each invalid byte
 * replaced by U+FFFD and *exact cleared. */
static json_t *wh_dirty_text(const char *p, size_t n, int *exact)
{
    *exact = wh_utf8_valid(p, n);
    if (*exact)
        return json_stringn(p, n);
    orr_buf b = ORR_BUF_INIT;
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (i < n) {
        size_t k = s[i] < 0x80 ? 1 : wh_utf8_seq(s + i, n - i);
        if (k) {
            orr_buf_append(&b, p + i, k);
            i += k;
        } else {
            orr_buf_append(&b, "\xEF\xBF\xBD", 3);
            i++;
        }
    }
    json_t *v = json_stringn(b.data ? b.data : "", b.len);
    orr_buf_free(&b);
    return v;
}

static json_t *wh_dirty_hex(const char *p, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    orr_buf b = ORR_BUF_INIT;
    orr_buf_reserve(&b, 2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        b.data[b.len++] = hx[(unsigned char)p[i] >> 4];
        b.data[b.len++] = hx[(unsigned char)p[i] & 15];
    }
    json_t *v = json_stringn(b.data ? b.data : "", b.len);
    orr_buf_free(&b);
    return v;
}

json_t *wh_dirty_line(const char *side, size_t shard, uint64_t rownum, const char *reason,
                      const char *const *vals, const int64_t *lens, size_t n, const char *raw,
                      size_t rawlen)
{
    int exact;
    json_t *line = json_object();
    json_object_set_new(line, "side", wh_dirty_text(side, strlen(side), &exact));
    json_object_set_new(line, "shard", json_integer((json_int_t)shard));
    json_object_set_new(line, "row", json_integer((json_int_t)rownum));
    json_object_set_new(line, "reason", wh_dirty_text(reason, strlen(reason), &exact));
    if (raw) {
        json_object_set_new(line, "raw", wh_dirty_text(raw, rawlen, &exact));
        if (!exact)
            json_object_set_new(line, "raw_hex", wh_dirty_hex(raw, rawlen));
        return line;
    }
    json_t *fields = json_array(), *hex = NULL;
    for (size_t c = 0; c < n; c++) {
        if (lens[c] < 0) {
            json_array_append_new(fields, json_null());
            continue;
        }
        json_array_append_new(fields, wh_dirty_text(vals[c], (size_t)lens[c], &exact));
        if (exact)
            continue;
        if (!hex)
            hex = json_object();
        char key[24];
        snprintf(key, sizeof(key), "%zu", c);
        json_object_set_new(hex, key, wh_dirty_hex(vals[c], (size_t)lens[c]));
    }
    json_object_set_new(line, "fields", fields);
    if (hex)
        json_object_set_new(line, "fields_hex", hex);
    return line;
}

orr_status wh_ctx_dirty(wh_ctx *ctx, const char *side, const wh_batch *b, size_t row,
                        const char *reason)
{
    const char *vals[64] = {0};
    int64_t lens[64] = {0};
    const char **pv = vals;
    int64_t *pl = lens;
    if (b->ncols > 64) {
        pv = orr_xcalloc(b->ncols, sizeof(*pv));
        pl = orr_xcalloc(b->ncols, sizeof(*pl));
    }
    for (size_t c = 0; c < b->ncols; c++)
        pv[c] = wh_batch_val(b, row, c, &pl[c]);
    json_t *line = wh_dirty_line(side, b->shard, b->rownum[row], reason, pv, pl, b->ncols, NULL, 0);
    if (pv != vals) {
        free(pv);
        free(pl);
    }
    return wh_dirty_emit(ctx, line);
}

orr_status wh_ctx_dirty_raw(wh_ctx *ctx, size_t shard, uint64_t rownum, const char *raw, size_t n,
                            const char *reason)
{
    atomic_fetch_add(&ctx->dirty->raw_count, 1);
    return wh_dirty_emit(ctx, wh_dirty_line("reader", shard, rownum, reason, NULL, NULL, 0,
                                            raw ? raw : "", raw ? n : 0));
}

orr_status wh_ctx_dirty_values(wh_ctx *ctx, size_t shard, uint64_t rownum, const char *const *vals,
                               const int64_t *lens, size_t n, const char *reason)
{
    atomic_fetch_add(&ctx->dirty->raw_count, 1);
    return wh_dirty_emit(ctx,
                         wh_dirty_line("reader", shard, rownum, reason, vals, lens, n, NULL, 0));
}
